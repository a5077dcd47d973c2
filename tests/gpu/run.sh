#!/usr/bin/env bash
# tests/gpu/run.sh — the one GPU check, and the judge of the CUDA backend: correctness against the CPU twins, then
# speed against the aims, a measured matmul ceiling and a PyTorch anchor, all in one call under 8 minutes on an
# H100/H200 (sm_90). Run it from any directory on a machine with an NVIDIA GPU; it needs nvcc and a C compiler with
# OpenMP (python3 with PyTorch for the anchor row, optional).
#
#   0. link    where cuBLAS/cuBLASLt/cudart come from (tests/gpu/find_cuda_libs.sh): $CUDA_HOME/lib64, else the
#              pip layout (nvidia/*/lib under site-packages); the summary says which was used.
#   1. build   the CUDA kernels and the CPU reference twice — PRECISION=fp32 and bf16 — straight with nvcc/cc
#              (only kernels/ and the tests: the GPU image may lack sqlite/libuv/jansson/curl; when it lacks
#              OpenBLAS too, tests/gpu/compat supplies a reference cblas_sgemm for the CPU twins), and
#              tests/gpu/matmul_peak.cu. If every package the product needs is present, `make all tests` too.
#   2. correctness, under CUDA_LAUNCH_BLOCKING=1 (an asynchronous fault is reported at the launch that made it),
#              each case in its own process with a ${GPU_CASE_TIMEOUT:-90} s timeout: every CUDA kernel vs its CPU
#              twin (tests/unit/test_cuda_kernels.c: tolerances at its top), the whole model vs the CPU engine and
#              20 training steps — fp32 build then bf16 build; the model cases again with GELU in the cuBLASLt
#              epilogue (PRISM_CUDA_GELU_FUSION=1); and the verdict of gelu_epilogue_exactness: whether that
#              epilogue is exactly GPT-2's GELU (the evidence for making it the default; the default is unchanged
#              until a GPU run says "exact"). A CUDA driver/runtime error is a FAIL, never "skipped: no device";
#              so is a machine where nvidia-smi lists a GPU but every case found none.
#   3. speed   (CUDA events / wall clock around whole steps, after warmup, median of rounds; see bench/):
#              the bf16 matmul rate, 8192^3 through cuBLAS (tests/gpu/matmul_peak.cu) — the MFU ceiling, printed
#              next to the datasheet's 989 TFLOP/s; GPT-2 124M, T=1024, bf16, B=16: uniform 12 heads vs Prism
#              3,3,6,6,8,8,12x6 (bench/bench_cuda_gpt2.c); the PyTorch anchor at the same B and T
#              (tests/gpu/torch_gpt2.py: nanoGPT-style, SDPA, bf16 autocast, fused AdamW; eager, then torch.compile
#              if the time left allows) and ours / PyTorch; memory that grows with T^2 (fit over T=256/512/1024);
#              the largest B that fits and its tokens/s; the paper's Medium (C=1024, 4,4,4,8,8,8,16x18) and Large
#              (C=1536, 6,6,6,12,12,12,16x18) Prism/uniform ratios; tokens/s with the GELU epilogue. Each part
#              after the first two runs only if the time left (budget ${GPU_BUDGET_S:-450} s) allows; a part left
#              out says so.
#   4. summary every check as PASS/FAIL/SKIP/INFO, then every aim of the GPU-speed issue, measured vs aim:
#              >= 650K tokens/s (124M, B=16); MFU >= 60% of the measured matmul rate; Prism >= 0.98x uniform
#              (124M, Medium, Large: below 0.98 is a FAIL); no B*h*T*T tensor kept (T^2 memory); and how many
#              matmuls fell back from cuBLASLt. The other aims are MET/MISSED (a miss is not a failed check).
#   2b. llama the Llama-style model's kernels and whole model vs CPU (tests/unit/test_cuda_llama.c), both builds
#              (in a full run, or with LLAMA=1 alongside GPU_CASES); a Llama-style 124M speed row in part 3.
# Everything printed is also written to $OUT/gpu_check.log when OUT is set (else /tmp/prism-gpu-check.log),
# and the closing summary to $OUT/gpu_summary.md. Exit status: 0 when every check passed, 1 when one failed,
# 3 when none failed but some were skipped (no device visible: they verified nothing).
# Knobs: GPU_B (16), GPU_T (1024), GPU_STEPS (10) for the speed part; GPU_BUDGET_S (450); GPU_CASE_TIMEOUT (90);
# GPU_MM_N (8192); GPU_MAXB_LIST (192,128,96,64,48,32,16); SKIP_SPEED=1 (all of 3), SKIP_BENCH=1 (our timings),
# SKIP_TORCH=1, TORCH_COMPILE=0, SKIP_SCALES=1 (Medium/Large); SKIP_FP32=1; SKIP_MAKE=1; GPU_BUILD=dir (default
# /tmp/prism-gpu-build); GPU_CASES=regex (only those test cases); PYTHON (python3).
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
BUDGET=${GPU_BUDGET_S:-450}
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
section() { echo; echo "=== $* [$(elapsed)s]"; }
results=()
record() { results+=("| $1 | $2 | $(echo "$3" | sed 's/|/\//g') |"); }
aims=()
aim() { aims+=("| $1 | $2 | $3 | $4 |"); }   # aim WHAT MEASURED AIM VERDICT
failures=0
fail_row() { record "$1" FAIL "$2"; failures=$((failures+1)); }
PY=${PYTHON:-python3}
B=${GPU_B:-16} T=${GPU_T:-1024} STEPS=${GPU_STEPS:-10}
CASE_TIMEOUT=${GPU_CASE_TIMEOUT:-90}
# field VALUE_NAME FILE [MATCH]: the value of NAME=... on the last RESULT line of FILE containing MATCH
field() { grep '^RESULT' "$2" 2>/dev/null | grep -F -- "${3:-RESULT}" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }

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
BDIR=${GPU_BUILD:-/tmp/prism-gpu-build}
rm -rf "$BDIR"; mkdir -p "$BDIR"

# ---- 0. link ----------------------------------------------------------------------------------------
section "cuBLAS / cuBLASLt / cudart"
source tests/gpu/find_cuda_libs.sh
CUDA_LIBS="" CUDA_INCS="" CUDA_LIB_SOURCE=""
if find_cuda_libs "$BDIR/cudalibs"; then
  echo "linking against: $CUDA_LIB_SOURCE"
  if [ -n "${CUDAEMU:-}" ]; then record link INFO "dry run links the emulator; this machine's search found: $CUDA_LIB_SOURCE"
  else record link PASS "$CUDA_LIB_SOURCE"; fi
else
  echo "cuBLAS/cudart $CUDA_LIB_SOURCE"
  if [ -n "${CUDAEMU:-}" ]; then record link INFO "dry run links the emulator; this machine's search: $CUDA_LIB_SOURCE"
  else fail_row link "$CUDA_LIB_SOURCE"; fi
fi
[ -n "${CUDAEMU:-}" ] && CUDA_LIBS="-lstdc++"

# ---- 1. build ---------------------------------------------------------------------------------------
BLAS_CFLAGS="" BLAS_LIBS="" BLAS_SRC=""
if [ -z "${COMPAT_BLAS:-}" ] && pkg-config --exists openblas 2>/dev/null; then
  BLAS_CFLAGS=$(pkg-config --cflags openblas); BLAS_LIBS=$(pkg-config --libs openblas)
  echo "CPU twins use OpenBLAS"
else
  BLAS_CFLAGS="-I$ROOT/tests/gpu/compat"; BLAS_SRC="$ROOT/tests/gpu/compat/cblas_ref.c"
  echo "CPU twins use tests/gpu/compat/cblas_ref.c (no OpenBLAS on this machine)"
fi
NVFLAGS="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 --use_fast_math -Xcompiler -fPIC -Ikernels -Icommon $CUDA_INCS"
CFLAGS="-O2 -g -std=gnu11 -fopenmp -DPRISM_HAVE_CUDA -Ikernels -Icommon -Itests $BLAS_CFLAGS"
EMUFLAGS="-O2 -g -std=c++17 -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $BLAS_CFLAGS"

compile_cu() { # compile_cu FILE.cu OUT.o EXTRA — nvcc, or the emulator's C++ build under CUDAEMU=1
  if [ -n "${CUDAEMU:-}" ]; then
    bash tests/cudaemu/cu2cpp.sh "$1" > "${2%.o}.cpp" && $CXX $EMUFLAGS $3 -c "${2%.o}.cpp" -o "$2"
  else
    "$NVCC" $NVFLAGS $3 -c "$1" -o "$2"
  fi
}

build() { # build DIR EXTRA_NVFLAGS -> DIR/test_cuda_kernels DIR/bench_cuda_gpt2 DIR/matmul_peak
  local dir=$1 extra=$2 pids=() f rc=0
  mkdir -p "$dir/obj" "$dir/peak"
  for f in kernels/cuda/*.cu; do
    compile_cu "$f" "$dir/obj/$(basename "$f").o" "$extra" & pids+=($!)
  done
  compile_cu tests/gpu/matmul_peak.cu "$dir/peak/matmul_peak.o" "" & pids+=($!)
  if [ -n "${CUDAEMU:-}" ]; then   # the emulator's runtime stands in for libcudart/libcublas
    for f in cudaemu cublasemu; do $CXX $EMUFLAGS -c "tests/cudaemu/$f.cpp" -o "$dir/obj/rt_$f.o" & pids+=($!); done
    $CC -c tests/cudaemu/cudaemu_switch.S -o "$dir/obj/rt_switch.o" & pids+=($!)
  fi
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || return 1
  # the CPU engine (kernels/*.c, and common/util.c which they use) as an archive, so only what the tests use
  # is linked; a file that does not compile without the product's packages is left out with a note (the
  # link then says if it was needed)
  mkdir -p "$dir/cpu"
  for f in kernels/*.c common/util.c $BLAS_SRC; do
    $CC $CFLAGS -c "$f" -o "$dir/cpu/$(basename "$f" .c).o" 2>"$dir/cpu/$(basename "$f" .c).err" ||
      echo "note: $f did not compile here (left out): $(head -n 1 "$dir/cpu/$(basename "$f" .c).err")"
  done
  rm -f "$dir/libcpu.a"; ar rcs "$dir/libcpu.a" "$dir"/cpu/*.o || return 1
  $CC $CFLAGS -o "$dir/test_cuda_kernels" tests/unit/test_cuda_kernels.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
  $CC $CFLAGS -o "$dir/bench_cuda_gpt2" bench/bench_cuda_gpt2.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
  if [ -n "${CUDAEMU:-}" ]; then
    $CXX -o "$dir/matmul_peak" "$dir/peak/matmul_peak.o" "$dir"/obj/rt_*.o "$dir/libcpu.a" $BLAS_LIBS -fopenmp -lpthread || return 1
  else
    $CC -o "$dir/matmul_peak" "$dir/peak/matmul_peak.o" $CUDA_LIBS -lm -lpthread || return 1
  fi
  $CC $CFLAGS -o "$dir/test_cuda_llama" tests/unit/test_cuda_llama.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread || return 1
}

section "build (bf16 and fp32)"
if build "$BDIR/bf16" "" ; then record build-bf16 PASS "${CUDAEMU:+CUDA emulator, not }nvcc sm_90 + PTX"; else fail_row build-bf16 "compile error above"; fi
if [ -z "${SKIP_FP32:-}" ]; then
  if build "$BDIR/fp32" "-DENABLE_FP32"; then record build-fp32 PASS "PRECISION=fp32"; else fail_row build-fp32 "compile error above"; fi
fi
if [ -n "${SKIP_MAKE:-}" ]; then
  echo "full 'make all tests' skipped (SKIP_MAKE set)"
elif pkg-config --exists sqlite3 libuv jansson libcurl openblas 2>/dev/null && [ -f /usr/include/http_parser.h ]; then
  if make -j"$JOBS" BUILD="$BDIR/make" all tests >"$BDIR/make.log" 2>&1; then record "make all tests" PASS "full product build"
    source tests/gpu/loaded_backend.sh; loaded_backend_check "$BDIR/make"   # prism-worker on the prism-cuda.so it loads
  else tail -n 30 "$BDIR/make.log"; fail_row "make all tests" "see log"; fi
else
  echo "full 'make all tests' not attempted: the product's packages (sqlite3 libuv jansson libcurl openblas http-parser) are not all installed here"
fi

# ---- 2. correctness ---------------------------------------------------------------------------------
mkdir -p "$BDIR/cases"
run_cases() { # run_cases LABEL BINARY [CASE_REGEX]
  local label=$1 bin=$2 only=${3:-.} c rc out log
  [ -x "$bin" ] || { fail_row "$label" "not built"; return; }
  local list n=0
  if ! list=$("$bin" --list 2>&1); then   # e.g. libcublasLt not found at run time
    fail_row "$label" "$bin --list: $(echo "$list" | head -n1 | cut -c1-140)"; return
  fi
  for c in $(echo "$list" | grep -E "$only" | grep -E "${GPU_CASES:-.}"); do
    n=$((n+1))
    log="$BDIR/cases/$label-$c.log"
    CUDA_LAUNCH_BLOCKING=1 timeout "$CASE_TIMEOUT" "$bin" "$c" >"$log" 2>&1; rc=$?
    out=$(cat "$log")
    echo "--- $label $c (exit $rc)"; echo "$out"
    case $rc in
      0) record "$label $c" PASS "$(echo "$out" | grep -m1 -E 'worst|rel=|exact:' | cut -c1-110)";;
      77) record "$label $c" SKIP "$(echo "$out" | grep -m1 skipped)";;
      124) fail_row "$label $c" "timed out after ${CASE_TIMEOUT} s";;
      *) fail_row "$label $c" "$(echo "$out" | grep -m1 -E 'error|:[0-9]+:|FAIL' | cut -c1-140)";;
    esac
  done
  [ $n -gt 0 ] || fail_row "$label" "no test case matched (GPU_CASES=${GPU_CASES:-})"
}
if [ -z "${SKIP_FP32:-}" ]; then section "kernels + model vs CPU, fp32 build (CUDA_LAUNCH_BLOCKING=1)"; run_cases fp32 "$BDIR/fp32/test_cuda_kernels"; fi
section "kernels + model vs CPU, bf16 build (CUDA_LAUNCH_BLOCKING=1)"
run_cases bf16 "$BDIR/bf16/test_cuda_kernels"
# the Llama-style model's kernels and whole model (tests/unit/test_cuda_llama.c), in a full run or with LLAMA=1
if [ -z "${GPU_CASES:-}" ] || [ -n "${LLAMA:-}" ]; then
  if [ -z "${SKIP_FP32:-}" ]; then section "llama kernels + model vs CPU, fp32 build"; run_cases llama-fp32 "$BDIR/fp32/test_cuda_llama"; fi
  section "llama kernels + model vs CPU, bf16 build"
  run_cases llama-bf16 "$BDIR/bf16/test_cuda_llama"
fi
section "model vs CPU, bf16 build, GELU in the cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1)"
PRISM_CUDA_GELU_FUSION=1 run_cases bf16-gelu-fusion "$BDIR/bf16/test_cuda_kernels" '^model_'
GELU_VERDICT=""
if [ -f "$BDIR/cases/bf16-gelu_epilogue_exactness.log" ]; then
  GELU_VERDICT=$(sed -n 's/^GELU epilogue exact: //p' "$BDIR/cases/bf16-gelu_epilogue_exactness.log" | head -n1)
  detail=$(grep -m1 '^GELU epilogue (' "$BDIR/cases/bf16-gelu_epilogue_exactness.log" | cut -c1-200)
  case $GELU_VERDICT in
    yes) record "GELU epilogue exact (bf16)" INFO "yes: PRISM_CUDA_GELU_FUSION can become the default. $detail";;
    no) record "GELU epilogue exact (bf16)" INFO "no: keep GELU as its own kernel by default. $detail";;
  esac
fi
nskip_now=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
if [ -z "${CUDAEMU:-}" ] && [ "$nskip_now" -gt 0 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  fail_row "device visible" "nvidia-smi lists a GPU but $nskip_now case(s) found no CUDA device: the CUDA runtime cannot use it"
fi

# ---- 3. speed ---------------------------------------------------------------------------------------
BENCH="$BDIR/bf16/bench_cuda_gpt2"
CEIL="" U_TPS="" P_TPS="" RATIO="" MFU_C="" MFU_P="" MAXB="" MAXB_TPS="" T2="" ONE_LAYER="" TORCH_E="" TORCH_C=""
FALLBACKS=0
declare -A SCALE_RATIO=()
not_run() { record "$1" INFO "not run: ${2:-time budget} ($(left) s of ${BUDGET} s left)"; }
bench_run() { # bench_run LABEL TIMEOUT OUTFILE ARGS... -> 0 when it ran; counts fallbacks
  local label=$1 to=$2 outf=$3 rc; shift 3
  timeout "$to" "$BENCH" "$@" >"$outf" 2>&1; rc=$?
  cat "$outf"
  FALLBACKS=$((FALLBACKS + $(field n "$outf" 'RESULT fallbacks' | head -n1 || echo 0) + 0))
  if grep -q 'skipped' "$outf"; then record "$label" SKIP "$(grep -m1 skipped "$outf")"; return 1; fi
  if [ $rc -ne 0 ]; then fail_row "$label" "exit $rc: $(grep -m1 -iE 'error|fail|not fit' "$outf" | cut -c1-140)"; return 1; fi
  return 0
}
if [ -z "${SKIP_SPEED:-}" ]; then
  section "bf16 matmul rate through cuBLAS (the MFU ceiling)"
  MM_N=${GPU_MM_N:-$([ -n "${CUDAEMU:-}" ] && echo 128 || echo 8192)}
  timeout 120 "$BDIR/bf16/matmul_peak" "$MM_N" 20 >"$BDIR/matmul.txt" 2>&1; rc=$?
  cat "$BDIR/matmul.txt"
  case $rc in
    0) CEIL=$(field tflops "$BDIR/matmul.txt")
       record "bf16 matmul rate" INFO "$CEIL TFLOP/s (${MM_N}^3, cuBLAS, median of 20) vs datasheet 989 TFLOP/s: $(awk -v c="$CEIL" 'BEGIN{printf "%.0f%%", 100*c/989}')";;
    77) record "bf16 matmul rate" SKIP "$(grep -m1 skipped "$BDIR/matmul.txt")";;
    *) fail_row "bf16 matmul rate" "exit $rc: $(head -n1 "$BDIR/matmul.txt")";;
  esac
  CEIL_ARG=()
  [ -n "$CEIL" ] && CEIL_ARG=(--ceiling-tflops "$CEIL")

  if [ -z "${SKIP_BENCH:-}" ]; then
    section "speed: GPT-2 124M, T=$T, B=$B, uniform 12 heads vs Prism 3,3,6,6,8,8,12x6 (bf16)"
    if bench_run "speed 124M B=$B" 300 "$BDIR/speed.txt" --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 2 "${CEIL_ARG[@]}"; then
      U_TPS=$(field tok_s "$BDIR/speed.txt" 'schedule=12x12 ')
      P_TPS=$(field tok_s "$BDIR/speed.txt" 'schedule=3,3,6,6,8,8,12x6 ')
      RATIO=$(field vs_first "$BDIR/speed.txt" 'schedule=3,3,6,6,8,8,12x6 ')
      MFU_C=$(field mfu_ceiling "$BDIR/speed.txt" 'schedule=12x12 ')
      MFU_P=$(field mfu_peak "$BDIR/speed.txt" 'schedule=12x12 ')
      if [ -n "${CUDAEMU:-}" ]; then record "speed 124M B=$B" INFO "ran on the emulator (figures meaningless)"
      elif awk -v r="$RATIO" 'BEGIN{exit !(r >= 0.98)}'; then record "speed 124M B=$B" PASS "uniform $U_TPS tok/s, Prism $P_TPS tok/s, Prism/uniform $RATIO"
      else fail_row "speed 124M B=$B" "Prism/uniform $RATIO < 0.98 (uniform $U_TPS tok/s, Prism $P_TPS tok/s)"; fi
    fi
  fi

  if [ -z "${SKIP_TORCH:-}" ]; then
    section "PyTorch anchor: GPT-2 124M nanoGPT-style, B=$B T=$T, eager"
    timeout 200 "$PY" tests/gpu/torch_gpt2.py --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 3 >"$BDIR/torch.txt" 2>&1; rc=$?
    cat "$BDIR/torch.txt"
    if grep -q '^RESULT torch absent' "$BDIR/torch.txt"; then
      record "PyTorch anchor" ABSENT "$(sed -n 's/^RESULT torch absent: //p' "$BDIR/torch.txt" | head -n1)"
    elif [ $rc -eq 0 ]; then
      TORCH_E=$(field tok_s "$BDIR/torch.txt" 'mode=eager')
      record "PyTorch anchor (eager)" INFO "$TORCH_E tok/s$([ -n "$U_TPS" ] && awk -v a="$U_TPS" -v b="$TORCH_E" 'BEGIN{printf "; ours/PyTorch %.3f", a/b}')"
    else
      record "PyTorch anchor (eager)" INFO "did not finish (exit $rc): $(grep -m1 -iE 'error' "$BDIR/torch.txt" | cut -c1-140)"
    fi
  fi

  if [ -z "${SKIP_BENCH:-}" ]; then
    section "memory that grows with T^2 (uniform, B=$B, T = 256, 512, 1024)"
    if [ "$(left)" -lt 60 ]; then not_run "T^2 memory"
    elif bench_run "T^2 memory" 120 "$BDIR/memfit.txt" --mem-fit --B "$B"; then
      T2=$(field t2_gib "$BDIR/memfit.txt"); ONE_LAYER=$(field one_layer_gib "$BDIR/memfit.txt")
      record "T^2 memory" INFO "$T2 GiB grows with T^2 at T=1024; one layer's B*h*T*T bf16 tensor is $ONE_LAYER GiB"
    fi

    section "largest B that fits (uniform, T=$T), and its tokens/s"
    if [ "$(left)" -lt 90 ]; then not_run "largest B"
    elif bench_run "largest B" 180 "$BDIR/maxb.txt" --find-max-B "${GPU_MAXB_LIST:-192,128,96,64,48,32,16}" --T "$T"; then
      MAXB=$(field B "$BDIR/maxb.txt" 'RESULT maxB')
      if [ -n "$MAXB" ] && [ "$MAXB" -gt 0 ] &&
         bench_run "speed 124M B=$MAXB (largest)" 200 "$BDIR/speed_maxb.txt" --B "$MAXB" --T "$T" --steps 5 --rounds 3 --warmup 1 --quick "${CEIL_ARG[@]}"; then
        MAXB_TPS=$(field tok_s "$BDIR/speed_maxb.txt" 'schedule=12x12 ')
        r=$(field vs_first "$BDIR/speed_maxb.txt" 'schedule=3,3,6,6,8,8,12x6 ')
        record "speed 124M B=$MAXB (largest)" INFO "uniform $MAXB_TPS tok/s, Prism/uniform $r"
      fi
    fi

    for scale in Medium Large; do
      if [ $scale = Medium ]; then SC=1024 PR=4,4,4,8,8,8,16x18; else SC=1536 PR=6,6,6,12,12,12,16x18; fi
      section "Prism/uniform at the paper's $scale width (C=$SC, 24 layers, B=$B, T=$T)"
      if [ -n "${SKIP_SCALES:-}" ]; then not_run "speed $scale" "SKIP_SCALES set"; continue; fi
      if [ "$(left)" -lt 100 ]; then not_run "speed $scale"; continue; fi
      if bench_run "speed $scale" 200 "$BDIR/speed_$scale.txt" --C $SC --heads 16x24 --heads $PR --B "$B" --T "$T" --steps 5 --rounds 3 --warmup 1 --quick "${CEIL_ARG[@]}"; then
        r=$(field vs_first "$BDIR/speed_$scale.txt" "schedule=$PR ")
        SCALE_RATIO[$scale]=$r
        if [ -n "${CUDAEMU:-}" ]; then record "speed $scale" INFO "ran on the emulator (figures meaningless)"
        elif awk -v r="$r" 'BEGIN{exit !(r >= 0.98)}'; then record "speed $scale" PASS "Prism $PR / uniform 16x24: $r"
        else fail_row "speed $scale" "Prism $PR / uniform 16x24: $r < 0.98"; fi
      fi
    done

    section "speed with GELU in the cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1, informational)"
    if [ "$(left)" -lt 60 ]; then not_run "speed, GELU epilogue"
    elif PRISM_CUDA_GELU_FUSION=1 bench_run "speed, GELU epilogue" 150 "$BDIR/speed_gelu.txt" --B "$B" --T "$T" --steps 5 --rounds 2 --warmup 1 --quick "${CEIL_ARG[@]}"; then
      record "speed, GELU epilogue" INFO "uniform $(field tok_s "$BDIR/speed_gelu.txt" 'schedule=12x12 ') tok/s (without: ${U_TPS:-?})"
    fi
  fi

  if [ -z "${SKIP_TORCH:-}" ] && [ -n "$TORCH_E" ] && [ "${TORCH_COMPILE:-1}" != 0 ]; then
    section "PyTorch anchor with torch.compile (if it finishes in the time left)"
    tl=$(( $(left) - 20 )); [ $tl -gt 240 ] && tl=240
    if [ $tl -lt 60 ]; then not_run "PyTorch anchor (compile)"
    else
      timeout "$tl" "$PY" tests/gpu/torch_gpt2.py --compile --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 3 >"$BDIR/torch_compile.txt" 2>&1; rc=$?
      cat "$BDIR/torch_compile.txt"
      if [ $rc -eq 0 ]; then TORCH_C=$(field tok_s "$BDIR/torch_compile.txt" 'mode=compile'); record "PyTorch anchor (compile)" INFO "$TORCH_C tok/s"
      elif [ $rc -eq 124 ]; then record "PyTorch anchor (compile)" INFO "torch.compile did not finish within $tl s"
      else record "PyTorch anchor (compile)" INFO "failed (exit $rc): $(grep -m1 -iE 'error' "$BDIR/torch_compile.txt" | cut -c1-140)"; fi
    fi
  fi
fi

if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_BENCH:-}" ]; then
  section "speed: Llama-style 124M (RoPE, SwiGLU 2048, RMSNorm), T=$T, B=$B, uniform 12 heads vs Prism (bf16)"
  if [ "$(left)" -lt 60 ]; then not_run "speed llama"
  elif bench_run "speed llama" 200 "$BDIR/speed_llama.txt" --arch llama --B "$B" --T "$T" --steps 5 --rounds 3 --warmup 1 --quick "${CEIL_ARG[@]}"; then
    r=$(field vs_first "$BDIR/speed_llama.txt" 'schedule=3,3,6,6,8,8,12x6 ')
    if [ -n "${CUDAEMU:-}" ]; then record "speed llama" INFO "ran on the emulator (figures meaningless)"
    else record "speed llama" INFO "uniform $(field tok_s "$BDIR/speed_llama.txt" 'schedule=12x12 ') tok/s, Prism/uniform $r"; fi
  fi
fi

# ---- 4. summary -------------------------------------------------------------------------------------
section "summary"
ge() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a >= b)}'; }
met() { if [ -z "$1" ]; then echo "not measured"; elif ge "$1" "$2"; then echo MET; else echo MISSED; fi; }
if [ -n "$U_TPS" ]; then aim "GPT-2 124M tokens/s, T=$T, B=$B (uniform)" "$U_TPS" ">= 650000" "$(met "$U_TPS" 650000)"
else aim "GPT-2 124M tokens/s, T=$T, B=$B (uniform)" "-" ">= 650000" "not measured"; fi
aim "tokens/s at the largest B that fits" "${MAXB_TPS:-"-"}${MAXB:+ (B=$MAXB)}" "(printed)" "INFO"
if [ -n "$MFU_C" ]; then
  aim "MFU vs the measured bf16 matmul rate (${CEIL} TFLOP/s)" "$(awk -v m="$MFU_C" 'BEGIN{printf "%.1f%%", 100*m}') (vs datasheet 989: $(awk -v m="$MFU_P" 'BEGIN{printf "%.1f%%", 100*m}'))" ">= 60%" "$(met "$MFU_C" 0.60)"
else aim "MFU vs the measured bf16 matmul rate" "-" ">= 60%" "not measured"; fi
verdict_ratio() { if [ -z "$1" ]; then echo "not measured"; elif ge "$1" 0.98; then echo PASS; else echo FAIL; fi; }
aim "Prism 3,3,6,6,8,8,12x6 / uniform, 124M" "${RATIO:-"-"}" ">= 0.98" "$(verdict_ratio "$RATIO")"
aim "Prism 4,4,4,8,8,8,16x18 / uniform, Medium (C=1024)" "${SCALE_RATIO[Medium]:-"-"}" ">= 0.98" "$(verdict_ratio "${SCALE_RATIO[Medium]:-}")"
aim "Prism 6,6,6,12,12,12,16x18 / uniform, Large (C=1536)" "${SCALE_RATIO[Large]:-"-"}" ">= 0.98" "$(verdict_ratio "${SCALE_RATIO[Large]:-}")"
if [ -n "$T2" ]; then
  aim "no B*h*T*T tensor kept: memory growing with T^2 at T=1024" "$T2 GiB" "< half of one layer's B*h*T*T ($ONE_LAYER GiB)" "$(awk -v a="$T2" -v b="$ONE_LAYER" 'BEGIN{print (a < 0.5*b) ? "MET" : "MISSED"}')"
else aim "no B*h*T*T tensor kept: memory growing with T^2" "-" "< half of one layer's B*h*T*T" "not measured"; fi
best_torch=$(printf '%s\n%s\n' "$TORCH_E" "$TORCH_C" | grep -E '^[0-9]' | sort -n | tail -n1)
if [ -n "$best_torch" ] && [ -n "$U_TPS" ]; then
  aim "ours / PyTorch (same B, T; PyTorch eager ${TORCH_E:-"-"}, compile ${TORCH_C:-"-"} tok/s)" "$(awk -v a="$U_TPS" -v b="$best_torch" 'BEGIN{printf "%.3f", a/b}')" "(anchor)" INFO
elif printf '%s\n' "${results[@]}" | grep -q '| PyTorch anchor | ABSENT |'; then
  aim "ours / PyTorch" "-" "(anchor)" "PyTorch absent"
else aim "ours / PyTorch" "-" "(anchor)" "not measured"; fi
if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_BENCH:-}" ]; then
  aim "matmuls that fell back from cuBLASLt (all timing runs)" "$FALLBACKS" "0" "$([ "$FALLBACKS" = 0 ] && echo MET || echo MISSED)"
else aim "matmuls that fell back from cuBLASLt" "-" "0" "not measured"; fi
nskip=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
{
  echo "# GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ) — ${CUDAEMU:+DRY RUN ON THE CUDA EMULATOR (no GPU) }$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)"
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${results[@]}"
  echo
  echo "## Aims (measured vs aim)"
  echo
  echo "| aim | measured | aim | verdict |"
  echo "|---|---|---|---|"
  printf '%s\n' "${aims[@]}"
  for f in speed speed_maxb speed_Medium speed_Large speed_gelu speed_llama; do
    [ -f "$BDIR/$f.txt" ] && { echo; echo "$f:"; grep -E '^\| ' "$BDIR/$f.txt" | grep -v '^| heads'; }
  done
  echo
  echo "linked against: ${CUDA_LIB_SOURCE:-?}${CUDAEMU:+ (not used: the dry run links the emulator)}"
  echo "GELU epilogue exact (bf16): ${GELU_VERDICT:-not checked}"
  [ "$nskip" -gt 0 ] && echo "skipped: $nskip (a skipped check verified nothing: no CUDA device was visible)"
  echo "failures: $failures; wall time $(elapsed)s (budget ${BUDGET}s)"
} | tee "$SUMMARY"
[ $failures -eq 0 ] || exit 1
[ "$nskip" -eq 0 ] || exit 3   # nothing failed, but not everything was checked
