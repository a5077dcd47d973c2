#!/usr/bin/env bash
# tests/gpu/run.sh — the one GPU check of issue 6. Run it from any directory on a machine with an NVIDIA GPU
# (H100/H200 expected: sm_90); it needs nvcc, a C compiler with OpenMP and ~3 minutes (limit: 8).
#
#   1. build   the CUDA kernels and the CPU reference twice — PRECISION=fp32 and bf16 — straight with nvcc/cc
#              (only kernels/ and the tests: the GPU image may lack sqlite/libuv/jansson/curl; when it lacks
#              OpenBLAS too, tests/gpu/compat supplies a reference cblas_sgemm for the CPU twins). If every
#              package the product needs is present, the full `make all tests` is built as well.
#   2. kernels every CUDA kernel vs its CPU twin on random inputs, outputs poisoned with NaN first, head dims
#              32/64/96/128/256 (tests/unit/test_cuda_kernels.c: tolerances are stated at its top) — fp32
#              build (tight) then bf16 build (the product's).
#   3. model   loss + all 16 gradient tensors vs the CPU engine, schedule 1,2,4,8 (head sizes 256..32);
#              then 20 AdamW steps on both, loss curves compared step by step (same test binary); the two
#              model cases again with PRISM_CUDA_GELU_FUSION=1 (GELU in the cuBLASLt epilogue).
#   3b. llama  the Llama-style model's kernels and whole model vs CPU (tests/unit/test_cuda_llama.c), both builds
#              (in a full run, or with LLAMA=1 alongside GPU_CASES).
#   4. speed   GPT-2 124M, T=1024: uniform 12 heads vs Prism 3,3,6,6,8,8,12x6 — tokens/s, ms/step, MFU
#              (989 TFLOP/s dense bf16 peak), peak device memory; Prism/uniform ratio (aim >= 0.98); then the
#              same with PRISM_CUDA_GELU_FUSION=1 (informational row); then the Llama-style 124M (--arch llama).
# Everything printed is also written to $OUT/gpu_check.log when OUT is set (else /tmp/prism-gpu-check.log),
# and the closing summary to $OUT/gpu_summary.md. Exit status: 0 when every check passed, 1 when one failed,
# 3 when none failed but some were skipped (no device visible: they verified nothing).
# Knobs: GPU_B (default 16), GPU_T (1024) and GPU_STEPS (10) for the speed part; SKIP_SPEED=1; SKIP_FP32=1;
# SKIP_MAKE=1; GPU_BUILD=dir (default /tmp/prism-gpu-build); GPU_CASES=regex (only those test cases).
# CUDAEMU=1 is a dry run of this script on any x86-64 machine: the same steps with the kernels compiled for the
# CUDA emulator (tests/cudaemu) by the C++ compiler instead of nvcc — it proves the script, not the GPU
# (tests/integration/test_gpu_script.sh runs it that way in make check; its speed figures mean nothing).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
LOGDIR=${OUT:-/tmp}
mkdir -p "$LOGDIR"
LOG=$LOGDIR/$([ -n "${OUT:-}" ] && echo gpu_check.log || echo prism-gpu-check.log)
SUMMARY=$LOGDIR/gpu_summary.md
exec > >(tee "$LOG") 2>&1
T0=$(date +%s)
section() { echo; echo "=== $* [$(( $(date +%s) - T0 ))s]"; }
results=()
record() { results+=("| $1 | $2 | $3 |"); }
failures=0

section "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: not available"
if [ -n "${CUDAEMU:-}" ]; then
  echo "CUDAEMU=1: dry run with the CUDA emulator (tests/cudaemu), no GPU involved"
  CXX=${CXX:-g++}
else
  NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}
  if [ -z "$NVCC" ]; then echo "FAIL: nvcc not found (set NVCC=/path/to/nvcc)"; exit 1; fi
  CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
  "$NVCC" --version | tail -n 2
fi
CC=${CC:-cc}
JOBS=$(nproc 2>/dev/null || echo 4)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$JOBS}
git log -1 --format='commit %h %s' 2>/dev/null || true

# ---- 1. build ---------------------------------------------------------------------------------------
BLAS_CFLAGS="" BLAS_LIBS="" BLAS_SRC=""
if [ -z "${COMPAT_BLAS:-}" ] && pkg-config --exists openblas 2>/dev/null; then
  BLAS_CFLAGS=$(pkg-config --cflags openblas); BLAS_LIBS=$(pkg-config --libs openblas)
  echo "CPU twins use OpenBLAS"
else
  BLAS_CFLAGS="-I$ROOT/tests/gpu/compat"; BLAS_SRC="$ROOT/tests/gpu/compat/cblas_ref.c"
  echo "CPU twins use tests/gpu/compat/cblas_ref.c (no OpenBLAS on this machine)"
fi
NVFLAGS="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 --use_fast_math -Xcompiler -fPIC -Ikernels -Icommon"
CFLAGS="-O2 -g -std=gnu11 -fopenmp -DPRISM_HAVE_CUDA -Ikernels -Icommon -Itests $BLAS_CFLAGS"
CUDA_LIBS="-L${CUDA_HOME:-}/lib64 -L${CUDA_HOME:-}/targets/x86_64-linux/lib -lcublasLt -lcublas -lcudart -lstdc++ -Wl,-rpath,${CUDA_HOME:-}/lib64"
EMUFLAGS="-O2 -g -std=c++17 -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $BLAS_CFLAGS"
[ -n "${CUDAEMU:-}" ] && CUDA_LIBS="-lstdc++"

compile_cu() { # compile_cu FILE.cu OUT.o EXTRA — nvcc, or the emulator's C++ build under CUDAEMU=1
  if [ -n "${CUDAEMU:-}" ]; then
    bash tests/cudaemu/cu2cpp.sh "$1" > "${2%.o}.cpp" && $CXX $EMUFLAGS $3 -c "${2%.o}.cpp" -o "$2"
  else
    "$NVCC" $NVFLAGS $3 -c "$1" -o "$2"
  fi
}

build() { # build DIR EXTRA_NVFLAGS -> DIR/test_cuda_kernels DIR/bench_cuda_gpt2
  local dir=$1 extra=$2 pids=() f rc=0
  mkdir -p "$dir/obj"
  for f in kernels/cuda/*.cu; do
    compile_cu "$f" "$dir/obj/$(basename "$f").o" "$extra" & pids+=($!)
  done
  if [ -n "${CUDAEMU:-}" ]; then   # the emulator's runtime stands in for libcudart/libcublas
    for f in cudaemu cublasemu; do $CXX $EMUFLAGS -c "tests/cudaemu/$f.cpp" -o "$dir/obj/rt_$f.o" & pids+=($!); done
    $CC -c tests/cudaemu/cudaemu_switch.S -o "$dir/obj/rt_switch.o" & pids+=($!)
  fi
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || return 1
  # the CPU engine (kernels/*.c) as an archive, so only what the tests use is linked; a file that does not
  # compile without the product's packages is left out with a note (the link then says if it was needed)
  mkdir -p "$dir/cpu"
  for f in kernels/*.c $BLAS_SRC; do
    $CC $CFLAGS -c "$f" -o "$dir/cpu/$(basename "$f" .c).o" 2>"$dir/cpu/$(basename "$f" .c).err" ||
      echo "note: $f did not compile here (left out): $(head -n 1 "$dir/cpu/$(basename "$f" .c).err")"
  done
  rm -f "$dir/libcpu.a"; ar rcs "$dir/libcpu.a" "$dir"/cpu/*.o || return 1
  $CC $CFLAGS -o "$dir/test_cuda_kernels" tests/unit/test_cuda_kernels.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
  $CC $CFLAGS -o "$dir/bench_cuda_gpt2" bench/bench_cuda_gpt2.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
  $CC $CFLAGS -o "$dir/test_cuda_llama" tests/unit/test_cuda_llama.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
}

section "build (bf16 and fp32)"
BDIR=${GPU_BUILD:-/tmp/prism-gpu-build}
rm -rf "$BDIR"; mkdir -p "$BDIR"
if build "$BDIR/bf16" "" ; then record build-bf16 PASS "${CUDAEMU:+CUDA emulator, not }nvcc sm_90 + PTX"; else record build-bf16 FAIL "compile error above"; failures=$((failures+1)); fi
if [ -z "${SKIP_FP32:-}" ]; then
  if build "$BDIR/fp32" "-DENABLE_FP32"; then record build-fp32 PASS "PRECISION=fp32"; else record build-fp32 FAIL "compile error above"; failures=$((failures+1)); fi
fi
if [ -n "${SKIP_MAKE:-}" ]; then
  echo "full 'make all tests' skipped (SKIP_MAKE set)"
elif pkg-config --exists sqlite3 libuv jansson libcurl openblas 2>/dev/null && [ -f /usr/include/http_parser.h ]; then
  if make -j"$JOBS" BUILD="$BDIR/make" all tests >"$BDIR/make.log" 2>&1; then record "make all tests" PASS "full product build";
  else tail -n 30 "$BDIR/make.log"; record "make all tests" FAIL "see log"; failures=$((failures+1)); fi
else
  echo "full 'make all tests' not attempted: the product's packages (sqlite3 libuv jansson libcurl openblas http-parser) are not all installed here"
fi

# ---- 2 + 3. kernels and model vs CPU ------------------------------------------------------------------
run_cases() { # run_cases LABEL BINARY [CASE_REGEX]
  local label=$1 bin=$2 only=${3:-.} c rc out
  [ -x "$bin" ] || { record "$label" FAIL "not built"; failures=$((failures+1)); return; }
  local list n=0
  if ! list=$("$bin" --list 2>&1); then   # e.g. libcublasLt not found at run time
    record "$label" FAIL "$bin --list: $(echo "$list" | head -n1 | sed 's/|/\//g' | cut -c1-140)"; failures=$((failures+1)); return
  fi
  for c in $(echo "$list" | grep -E "$only" | grep -E "${GPU_CASES:-.}"); do
    n=$((n+1))
    out=$(timeout 300 "$bin" "$c" 2>&1); rc=$?
    echo "--- $label $c (exit $rc)"; echo "$out"
    case $rc in
      0) record "$label $c" PASS "$(echo "$out" | grep -m1 -E 'worst|rel=' | sed 's/|/\//g' | cut -c1-110)";;
      77) record "$label $c" SKIP "$(echo "$out" | grep -m1 skipped)";;
      *) record "$label $c" FAIL "$(echo "$out" | grep -m1 -E 'error|:[0-9]+:' | sed 's/|/\//g' | cut -c1-140)"; failures=$((failures+1));;
    esac
  done
  [ $n -gt 0 ] || { record "$label" FAIL "no test case matched (GPU_CASES=${GPU_CASES:-})"; failures=$((failures+1)); }
}
if [ -z "${SKIP_FP32:-}" ]; then section "kernels + model vs CPU, fp32 build"; run_cases fp32 "$BDIR/fp32/test_cuda_kernels"; fi
section "kernels + model vs CPU, bf16 build"
run_cases bf16 "$BDIR/bf16/test_cuda_kernels"
# the Llama-style model's kernels and whole model (tests/unit/test_cuda_llama.c), in a full run or with LLAMA=1
if [ -z "${GPU_CASES:-}" ] || [ -n "${LLAMA:-}" ]; then
  if [ -z "${SKIP_FP32:-}" ]; then section "llama kernels + model vs CPU, fp32 build"; run_cases llama-fp32 "$BDIR/fp32/test_cuda_llama"; fi
  section "llama kernels + model vs CPU, bf16 build"
  run_cases llama-bf16 "$BDIR/bf16/test_cuda_llama"
fi
section "model vs CPU, bf16 build, GELU in the cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1)"
PRISM_CUDA_GELU_FUSION=1 run_cases bf16-gelu-fusion "$BDIR/bf16/test_cuda_kernels" '^model_'

# ---- 4. speed ---------------------------------------------------------------------------------------
if [ -z "${SKIP_SPEED:-}" ]; then
  section "speed: GPT-2 124M, T=${GPU_T:-1024}, uniform 12 heads vs Prism 3,3,6,6,8,8,12x6 (bf16)"
  if [ -x "$BDIR/bf16/bench_cuda_gpt2" ] && timeout 300 "$BDIR/bf16/bench_cuda_gpt2" --B "${GPU_B:-16}" --T "${GPU_T:-1024}" \
       --steps "${GPU_STEPS:-10}" --rounds 3 --warmup 2 | tee "$BDIR/speed.txt"; then
    if grep -q skipped "$BDIR/speed.txt"; then record speed SKIP "$(grep -m1 skipped "$BDIR/speed.txt")"
    elif [ -n "${CUDAEMU:-}" ]; then record speed INFO "ran on the emulator (figures meaningless)"
    else record speed PASS "$(grep -E '^\| 3,3' "$BDIR/speed.txt" | sed 's/|/\//g')"; fi
  else
    record speed FAIL "bench_cuda_gpt2 failed"; failures=$((failures+1))
  fi
  section "speed with PRISM_CUDA_GELU_FUSION=1 (informational)"
  if PRISM_CUDA_GELU_FUSION=1 timeout 200 "$BDIR/bf16/bench_cuda_gpt2" --B "${GPU_B:-16}" --T "${GPU_T:-1024}" \
       --steps "${GPU_STEPS:-10}" --rounds 2 --warmup 1 | tee "$BDIR/speed_gelu.txt"; then
    if grep -q skipped "$BDIR/speed_gelu.txt"; then record "speed, GELU epilogue" SKIP "no CUDA device"
    else record "speed, GELU epilogue" INFO "$(grep -E '^\| 3,3' "$BDIR/speed_gelu.txt" | sed 's/|/\//g')"; fi
  else
    record "speed, GELU epilogue" INFO "failed (not counted)"
  fi
fi

if [ -z "${SKIP_SPEED:-}" ]; then
  section "speed: Llama-style 124M (RoPE, SwiGLU 2048, RMSNorm), T=${GPU_T:-1024}, uniform 12 heads vs Prism (bf16)"
  if timeout 300 "$BDIR/bf16/bench_cuda_gpt2" --arch llama --B "${GPU_B:-16}" --T "${GPU_T:-1024}" \
       --steps "${GPU_STEPS:-10}" --rounds 3 --warmup 2 | tee "$BDIR/speed_llama.txt"; then
    if grep -q skipped "$BDIR/speed_llama.txt"; then record "speed llama" SKIP "$(grep -m1 skipped "$BDIR/speed_llama.txt")"
    elif [ -n "${CUDAEMU:-}" ]; then record "speed llama" INFO "ran on the emulator (figures meaningless)"
    else record "speed llama" PASS "$(grep -E '^\| 3,3' "$BDIR/speed_llama.txt" | sed 's/|/\//g')"; fi
  else
    record "speed llama" FAIL "bench_cuda_gpt2 --arch llama failed"; failures=$((failures+1))
  fi
fi

# ---- summary ----------------------------------------------------------------------------------------
section "summary"
nskip=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
{
  echo "# GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ) — ${CUDAEMU:+DRY RUN ON THE CUDA EMULATOR (no GPU) }$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)"
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${results[@]}"
  if [ -f "$BDIR/speed.txt" ]; then echo; grep -E '^\|' "$BDIR/speed.txt"; fi
  if [ -f "$BDIR/speed_gelu.txt" ]; then echo; echo "with PRISM_CUDA_GELU_FUSION=1:"; grep -E '^\|' "$BDIR/speed_gelu.txt"; fi
  if [ -f "$BDIR/speed_llama.txt" ]; then echo; echo "Llama-style 124M:"; grep -E '^\|' "$BDIR/speed_llama.txt"; fi
  echo
  [ "$nskip" -gt 0 ] && echo "skipped: $nskip (a skipped check verified nothing: no CUDA device was visible)"
  echo "failures: $failures; wall time $(( $(date +%s) - T0 ))s"
} | tee "$SUMMARY"
[ $failures -eq 0 ] || exit 1
[ "$nskip" -eq 0 ] || exit 3   # nothing failed, but not everything was checked
