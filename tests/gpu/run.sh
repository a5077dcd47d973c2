#!/usr/bin/env bash
# tests/gpu/run.sh — the one GPU check, and the judge of the CUDA backend: correctness against the CPU twins, then
# speed against the aims, a measured matmul ceiling and a PyTorch anchor, all in one call of the device tool
# (600 s a command) on an H100/H200 (sm_90). Run it from any directory on a machine with an NVIDIA GPU; it needs
# nvcc and a C compiler with OpenMP (python3 with PyTorch for the anchor row, optional).
#
# One total budget, ${GPU_BUDGET_S:-540} s from the script's start, bounds EVERYTHING, the builds included: each
# step's timeout is the smaller of its own and the time left (less ${GPU_RESERVE_S:-5} s kept for the summary); a
# step the budget cut is a CUT row, a step with no time left a "not run: time budget" row, neither a FAIL. The
# summary ($OUT/gpu_summary.md) is rewritten after every row, so a run killed from outside still returns every
# figure measured up to then (its first line then says "PARTIAL"). The work runs in the order of what matters most:
#
#   0. link    where cuBLAS/cuBLASLt/cudart come from (tests/gpu/find_cuda_libs.sh): $CUDA_HOME/lib64, else the
#              pip layout (nvidia/*/lib under site-packages); the summary says which was used.
#   1. build   the CUDA kernels and the CPU reference, PRECISION=bf16 (fp32 comes in part 5), straight with nvcc/cc
#              (only kernels/ and the tests: the GPU image may lack sqlite/libuv/jansson/curl; when it lacks
#              OpenBLAS too, tests/gpu/compat supplies a reference cblas_sgemm for the CPU twins), and
#              tests/gpu/matmul_peak.cu.
#   2. quick correctness (bf16), under CUDA_LAUNCH_BLOCKING=1, each case in its own process with a
#              ${GPU_CASE_TIMEOUT:-90} s timeout: the cases of ${GPU_QUICK} (one per kernel family, the whole model
#              vs the CPU engine, 20 training steps, and gelu_epilogue_exactness: whether the cuBLASLt GELU epilogue and
#              the backward's DGELU epilogue are exactly GPT-2's GELU and GELU' — the evidence for turning
#              PRISM_CUDA_GELU_FUSION on by default). A CUDA driver/runtime error is a FAIL, never "skipped: no device"; so is a
#              machine where nvidia-smi lists a GPU but every case found none. Then the cases of GRAPHC, without
#              CUDA_LAUNCH_BLOCKING: the graph API, graph-launched steps against eager ones, the chunked LM head
#              against the unchunked one (rows graph-bf16 ...; graph-fp32 ... in part 5).
#   3. speed   GPT-2 124M, T=1024, bf16, B=16: uniform 12 heads vs Prism 3,3,6,6,8,8,12x6 (bench/bench_cuda_gpt2.c:
#              both resident, alternating rounds, median), with its step phases and attention tables. The models
#              take the default PRISM_ATTENTION=auto: the row "attention: auto's choice" says which layers it gave
#              cuDNN (kernels/cuda/attention_cudnn.h) and which the fused kernel.
#   4. anchors the bf16 matmul rate, 8192^3 through cuBLAS (tests/gpu/matmul_peak.cu) — the MFU ceiling, printed
#              next to the datasheet's 989 TFLOP/s (MFU against it is computed from part 3's figures); the PyTorch
#              anchor at the same B and T (tests/gpu/torch_gpt2.py: nanoGPT-style, SDPA, bf16 autocast, fused AdamW,
#              eager) and ours / PyTorch; the reference trainer (trainers/torch/train.py through its own protocol,
#              tests/gpu/torch_reftrainer.py: bf16 autocast, SDPA, fused AdamW) at the same shape, and built-in / it.
#   4b. attention backends: one layer's forward + backward through the fused kernel and through cuDNN at head sizes
#              64, 96, 128, 192, 256 (C=768, B and T of part 3; bench/bench_cuda_attention.c), a row per head size.
#   5. the rest, each only if the time left allows: the cuDNN backend's cases (tests/unit/test_cuda_cudnn.c:
#              against the CPU twin, the fallbacks, whole models on cuDNN); the 124M pair timed with
#              PRISM_ATTENTION=cudnn and =fused (whole models per backend); cuobjdump -sass of the fused attention kernels (LDSM, LDS,
#              generic LD, HMMA, local memory per kernel: are the fragment loads LDSM?); the paper's Medium (C=1024,
#              4,4,4,8,8,8,16x18) and Large (C=1536, 6,6,6,12,12,12,16x18) Prism/uniform ratios; the other bf16
#              cases; the Llama-style model's cases (tests/unit/test_cuda_llama.c); the model cases with GELU in the
#              cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1); one ncu profile of the attention kernels (occupancy,
#              shared-memory bank conflicts; --clock-control none) where ncu works; the fp32 build and its cases;
#              memory that grows with T^2 (fit over T=256/512/1024); the largest B that fits and its tokens/s, each
#              schedule timed in its own model (--alone: one model resident at a time, so the B sized for one model
#              fits); tokens/s with the GELU epilogue; a Llama-style 124M speed row; torch.compile.
#   6. summary every check as PASS/FAIL/SKIP/CUT/INFO, then every aim of the GPU-speed issue, measured vs aim:
#              >= 650K tokens/s (124M, B=16); MFU >= 60% of the measured matmul rate; Prism >= 0.98x uniform
#              (124M, Medium, Large: below 0.98 is a FAIL); no B*h*T*T tensor kept (T^2 memory); and how many
#              matmuls fell back from cuBLASLt. The other aims are MET/MISSED (a miss is not a failed check).
# Everything printed is also written to $OUT/gpu_check.log when OUT is set (else /tmp/prism-gpu-check.log), the
# summary to $OUT/gpu_summary.md, the SASS counts to $OUT/attention_sass.txt and the ncu report to
# $OUT/attention_ncu.txt. Exit status: 0 when every check passed, 1 when one failed, 3 when none failed but some
# were skipped (no device visible: they verified nothing), 4 when none failed or was skipped but the time budget
# cut a step or left one unrun (the summary names them).
# Knobs: GPU_B (16), GPU_T (1024), GPU_STEPS (10) for the speed part; GPU_BUDGET_S (540); GPU_RESERVE_S (5);
# GPU_CASE_TIMEOUT (90); GPU_QUICK (regex of the quick cases); GPU_MM_N (8192); GPU_MAXB_LIST
# (192,128,96,64,48,32,16); SKIP_SPEED=1 (parts 3, 4, 4b and the speed rows of 5), SKIP_BENCH=1 (our model
# timings), SKIP_ATTN=1 (part 4b), GPU_ATTN_B / GPU_ATTN_T (part 4b's B and T; default part 3's, 1 and 64 on the emulator),
# SKIP_TORCH=1 (the PyTorch rows), SKIP_REFTRAINER=1 (the reference trainer's row), TORCH_COMPILE=0,
# SKIP_SCALES=1 (Medium/Large); SKIP_FP32=1; SKIP_NCU=1; SKIP_SASS=1; SKIP_MAKE=1
# (accepted; the full product build is no longer part of this check); GPU_BUILD=dir (default
# /tmp/prism-gpu-build); GPU_CASES=regex (only those test cases, quick and rest); LLAMA=1 (the Llama cases even
# with GPU_CASES); PYTHON (python3).
# CUDAEMU=1 is a dry run of this script on any x86-64 machine: the same steps with the kernels compiled for the
# CUDA emulator (tests/cudaemu) by the C++ compiler instead of nvcc — it proves the script, not the GPU
# (tests/integration/test_gpu_script.sh runs it that way in make check, the budget logic included; its speed
# figures mean nothing).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
LOGDIR=${OUT:-/tmp}
mkdir -p "$LOGDIR"
LOG=$LOGDIR/$([ -n "${OUT:-}" ] && echo gpu_check.log || echo prism-gpu-check.log)
SUMMARY=$LOGDIR/gpu_summary.md
exec > >(tee "$LOG") 2>&1
T0=$(date +%s)
BUDGET=${GPU_BUDGET_S:-540}
RESERVE=${GPU_RESERVE_S:-5}
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
section() { echo; echo "=== $* [$(elapsed)s of ${BUDGET}s]"; }
# tlimit WANT: the timeout a step that wants WANT seconds gets: min(WANT, time left - RESERVE), 0 when none is left
tlimit() { local l=$(( $(left) - RESERVE )); [ "$1" -lt "$l" ] && l=$1; [ "$l" -gt 0 ] && echo "$l" || echo 0; }
# lim WANT CMD...: CMD under tlimit WANT; 124 when it timed out or no time was left. LIM_CUT=1 when the budget
# (not the step's own timeout) is what stopped it.
LIM_CUT=0
lim() {
  local want=$1 t rc; shift
  t=$(tlimit "$want"); LIM_CUT=0
  if [ "$t" -le 0 ]; then LIM_CUT=1; return 124; fi
  timeout -k 5 "$t" "$@"; rc=$?
  [ $rc -eq 137 ] && rc=124
  [ $rc -eq 124 ] && [ "$t" -lt "$want" ] && LIM_CUT=1
  return $rc
}
# lim_fn WANT FUNCTION ARGS...: a shell function (a build: many processes) under the same rule; its whole process
# group is stopped when the time is up
lim_fn() {
  local want=$1 t rc pid wd; shift
  t=$(tlimit "$want"); LIM_CUT=0
  if [ "$t" -le 0 ]; then LIM_CUT=1; return 124; fi
  local s0; s0=$(date +%s)
  set -m
  ( "$@" ) & pid=$!
  ( sleep "$t"; kill -TERM -- "-$pid" 2>/dev/null; sleep 5; kill -KILL -- "-$pid" 2>/dev/null ) >/dev/null 2>&1 & wd=$!
  set +m
  wait "$pid"; rc=$?
  kill -TERM -- "-$wd" 2>/dev/null; wait "$wd" 2>/dev/null
  if [ $rc -ne 0 ] && [ $(( $(date +%s) - s0 )) -ge "$t" ]; then rc=124; [ "$t" -lt "$want" ] && LIM_CUT=1; fi
  return $rc
}
results=()
record() { results+=("| $1 | $2 | $(echo "$3" | sed 's/|/\//g') |"); write_summary; }
aims=()
aim() { aims+=("| $1 | $2 | $3 | $4 |"); }   # aim WHAT MEASURED AIM VERDICT
failures=0
fail_row() { record "$1" FAIL "$2"; failures=$((failures+1)); }
not_run() { record "$1" INFO "not run: ${2:-time budget} ($(left) s of ${BUDGET} s left)"; }
cut_row() { record "$1" CUT "cut by the time budget (${BUDGET} s) after $(elapsed) s${2:+: $2}"; }
# want SECONDS LABEL: 0 when at least SECONDS (plus the reserve) are left, else a not-run row for LABEL
want() { [ $(( $(left) - RESERVE )) -ge "$1" ] && return 0; not_run "$2"; return 1; }
PY=${PYTHON:-python3}
B=${GPU_B:-16} T=${GPU_T:-1024} STEPS=${GPU_STEPS:-10}
CASE_TIMEOUT=${GPU_CASE_TIMEOUT:-90}
QUICK=${GPU_QUICK:-'^(encoder_forward_backward|layernorm_forward_backward|matmul_forward_backward|gelu_forward_backward|flash_attention_head_dim_64|flash_attention_head_dim_256|fused_classifier|adamw_and_grad_norm|gelu_epilogue_exactness|model_loss_and_every_gradient_match_cpu|model_trains_20_steps_like_cpu)$'}
# the graph-captured training step and the chunked LM head (model_cuda_base.cu): run without CUDA_LAUNCH_BLOCKING (a
# launch-blocking runtime need not allow stream capture), each a verdict row of its own right after the quick subset
GRAPHC='^(graph_capture_replays_and_refuses_host_syncs|model_graph_steps_equal_eager_bitwise|model_head_chunked_matches_unchunked)$'
# field VALUE_NAME FILE [MATCH]: the value of NAME=... on the last RESULT line of FILE containing MATCH
field() { grep '^RESULT' "$2" 2>/dev/null | grep -F -- "${3:-RESULT}" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a >= b)}'; }
REF_TPS="" CEIL="" U_TPS="" P_TPS="" RATIO="" MFU_C="" MFU_P="" MAXB="" MAXB_TPS="" T2="" ONE_LAYER="" TORCH_E="" TORCH_C=""
GELU_VERDICT="" DGELU_VERDICT="" FALLBACKS=0 SPEED_RAN=0 FINAL=0 CUDA_LIB_SOURCE=""
declare -A SCALE_RATIO=()
BDIR=${GPU_BUILD:-/tmp/prism-gpu-build}

# ---- the summary, rewritten after every row ----------------------------------------------------------
compute_aims() {
  aims=()
  local met_u
  met() { if [ -z "$1" ]; then echo "not measured"; elif ge "$1" "$2"; then echo MET; else echo MISSED; fi; }
  verdict_ratio() { if [ -z "$1" ]; then echo "not measured"; elif ge "$1" 0.98; then echo PASS; else echo FAIL; fi; }
  if [ -n "$U_TPS" ]; then aim "GPT-2 124M tokens/s, T=$T, B=$B (uniform)" "$U_TPS" ">= 650000" "$(met "$U_TPS" 650000)"
  else aim "GPT-2 124M tokens/s, T=$T, B=$B (uniform)" "-" ">= 650000" "not measured"; fi
  aim "tokens/s at the largest B that fits" "${MAXB_TPS:-"-"}${MAXB:+ (B=$MAXB)}" "(printed)" "INFO"
  if [ -n "$MFU_C" ]; then
    aim "MFU vs the measured bf16 matmul rate (${CEIL} TFLOP/s)" "$(awk -v m="$MFU_C" 'BEGIN{printf "%.1f%%", 100*m}') (vs datasheet 989: $(awk -v m="$MFU_P" 'BEGIN{printf "%.1f%%", 100*m}'))" ">= 60%" "$(met "$MFU_C" 0.60)"
  elif [ -n "$MFU_P" ]; then
    aim "MFU vs the measured bf16 matmul rate" "- (vs datasheet 989: $(awk -v m="$MFU_P" 'BEGIN{printf "%.1f%%", 100*m}'))" ">= 60%" "not measured"
  else aim "MFU vs the measured bf16 matmul rate" "-" ">= 60%" "not measured"; fi
  aim "Prism 3,3,6,6,8,8,12x6 / uniform, 124M" "${RATIO:-"-"}" ">= 0.98" "$(verdict_ratio "$RATIO")"
  aim "Prism 4,4,4,8,8,8,16x18 / uniform, Medium (C=1024)" "${SCALE_RATIO[Medium]:-"-"}" ">= 0.98" "$(verdict_ratio "${SCALE_RATIO[Medium]:-}")"
  aim "Prism 6,6,6,12,12,12,16x18 / uniform, Large (C=1536)" "${SCALE_RATIO[Large]:-"-"}" ">= 0.98" "$(verdict_ratio "${SCALE_RATIO[Large]:-}")"
  if [ -n "$T2" ]; then
    aim "no B*h*T*T tensor kept: memory growing with T^2 at T=1024" "$T2 GiB" "< half of one layer's B*h*T*T ($ONE_LAYER GiB)" "$(awk -v a="$T2" -v b="$ONE_LAYER" 'BEGIN{print (a < 0.5*b) ? "MET" : "MISSED"}')"
  else aim "no B*h*T*T tensor kept: memory growing with T^2" "-" "< half of one layer's B*h*T*T" "not measured"; fi
  local best_torch
  best_torch=$(printf '%s\n%s\n' "$TORCH_E" "$TORCH_C" | grep -E '^[0-9]' | sort -n | tail -n1)
  if [ -n "$best_torch" ] && [ -n "$U_TPS" ]; then
    aim "ours / PyTorch (same B, T; PyTorch eager ${TORCH_E:-"-"}, compile ${TORCH_C:-"-"} tok/s)" "$(awk -v a="$U_TPS" -v b="$best_torch" 'BEGIN{printf "%.3f", a/b}')" "(anchor)" INFO
  elif printf '%s\n' "${results[@]}" | grep -q '| PyTorch anchor | ABSENT |'; then
    aim "ours / PyTorch" "-" "(anchor)" "PyTorch absent"
  else aim "ours / PyTorch" "-" "(anchor)" "not measured"; fi
  if [ -n "$REF_TPS" ] && [ -n "$U_TPS" ] && [ -z "${CUDAEMU:-}" ]; then
    aim "built-in / reference trainer (trainers/torch, $REF_TPS tok/s)" "$(awk -v a="$U_TPS" -v b="$REF_TPS" 'BEGIN{printf "%.3f", a/b}')" "(reference)" INFO
  else aim "built-in / reference trainer" "-" "(reference)" "not measured"; fi
  if [ "$SPEED_RAN" = 1 ]; then
    aim "matmuls that fell back from cuBLASLt (all timing runs)" "$FALLBACKS" "0" "$([ "$FALLBACKS" = 0 ] && echo MET || echo MISSED)"
  else aim "matmuls that fell back from cuBLASLt" "-" "0" "not measured"; fi
}
write_summary() {
  local nskip ncut f state
  compute_aims
  nskip=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
  ncut=$(printf '%s\n' "${results[@]}" | grep -c -E '\| CUT \||not run: time budget')
  if [ "$FINAL" = 1 ]; then state=""; else state="PARTIAL (written at $(elapsed) s; the run had not finished) — "; fi
  {
    echo "# ${state}GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ) — ${CUDAEMU:+DRY RUN ON THE CUDA EMULATOR (no GPU) }${GPU_NAME:-}"
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
    [ -s "$LOGDIR/attention_sass.txt" ] && { echo; echo "fused attention SASS (cuobjdump -sass, per kernel):"; echo; cat "$LOGDIR/attention_sass.txt"; }
    echo
    echo "linked against: ${CUDA_LIB_SOURCE:-?}${CUDAEMU:+ (not used: the dry run links the emulator)}"
    echo "GELU epilogue exact (bf16): ${GELU_VERDICT:-not checked}; DGELU: ${DGELU_VERDICT:-not checked}"
    [ "$nskip" -gt 0 ] && echo "skipped: $nskip (a skipped check verified nothing: no CUDA device was visible)"
    [ "$ncut" -gt 0 ] && echo "cut or not run for the time budget: $ncut"
    echo "failures: $failures; wall time $(elapsed)s (budget ${BUDGET}s)"
  } > "$SUMMARY.tmp" && mv "$SUMMARY.tmp" "$SUMMARY"
}
on_signal() { record "run" CUT "stopped by a signal after $(elapsed) s"; FINAL=1; write_summary; exit 1; }
trap on_signal TERM INT HUP

section "machine"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: not available"
if [ -n "${CUDAEMU:-}" ]; then
  echo "CUDAEMU=1: dry run with the CUDA emulator (tests/cudaemu), no GPU involved"
  CXX=${CXX:-g++}
else
  NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}
  if [ -z "$NVCC" ]; then echo "FAIL: nvcc not found (set NVCC=/path/to/nvcc)"; fail_row nvcc "not found (set NVCC=/path/to/nvcc)"; FINAL=1; write_summary; exit 1; fi
  CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
  "$NVCC" --version | tail -n 2
fi
CC=${CC:-cc}
JOBS=$(nproc 2>/dev/null || echo 4)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$JOBS}
git log -1 --format='commit %h %s' 2>/dev/null || true
rm -rf "$BDIR"; mkdir -p "$BDIR"
rm -f "$LOGDIR/attention_sass.txt" "$LOGDIR/attention_ncu.txt"
write_summary

# ---- 0. link ----------------------------------------------------------------------------------------
section "cuBLAS / cuBLASLt / cudart"
source tests/gpu/find_cuda_libs.sh
CUDA_LIBS="" CUDA_INCS=""
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
# cuDNN: the header decides whether the backend is compiled in; libcudnn.so.9 is opened at run time (dlopen), from
# PRISM_CUDNN_LIBRARY, which points at the first toolkit or pip copy found (its sub-libraries load from the same
# directory, so that goes on LD_LIBRARY_PATH too). The emulator's build always has its shim.
CUDNN_FLAGS=""
if [ -n "${CUDAEMU:-}" ]; then record cudnn INFO "dry run: the emulator's cuDNN shim (tests/cudaemu/cudnnemu.cpp)"
else
  CUDNN_INC="" CUDNN_LIB=""
  for d in "$CUDA_HOME/include" /usr/include $(pip_site_dirs 2>/dev/null | sed 's|$|/nvidia/cudnn/include|'); do
    [ -f "$d/cudnn.h" ] && { CUDNN_INC=$d; break; }
  done
  for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" /usr/lib/x86_64-linux-gnu $(pip_site_dirs 2>/dev/null | sed 's|$|/nvidia/cudnn/lib|'); do
    [ -e "$d/libcudnn.so.9" ] && { CUDNN_LIB=$d/libcudnn.so.9; break; }
  done
  if [ -n "$CUDNN_INC" ]; then
    CUDNN_FLAGS="-DPRISM_HAVE_CUDNN -I$CUDNN_INC"
    if [ -n "$CUDNN_LIB" ]; then
      export PRISM_CUDNN_LIBRARY=$CUDNN_LIB LD_LIBRARY_PATH="$(dirname "$CUDNN_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      record cudnn INFO "cudnn.h in $CUDNN_INC, $CUDNN_LIB (opened at run time)"
    else record cudnn INFO "cudnn.h in $CUDNN_INC but no libcudnn.so.9 found: every layer will fall back to the fused kernel"; fi
  else record cudnn INFO "no cudnn.h: the backend is built without cuDNN (every layer runs the fused kernel)"; fi
fi

# ---- 1. build ---------------------------------------------------------------------------------------
BLAS_CFLAGS="" BLAS_LIBS="" BLAS_SRC=""
if [ -z "${COMPAT_BLAS:-}" ] && pkg-config --exists openblas 2>/dev/null; then
  BLAS_CFLAGS=$(pkg-config --cflags openblas); BLAS_LIBS=$(pkg-config --libs openblas)
  echo "CPU twins use OpenBLAS"
else
  BLAS_CFLAGS="-I$ROOT/tests/gpu/compat"; BLAS_SRC="$ROOT/tests/gpu/compat/cblas_ref.c"
  echo "CPU twins use tests/gpu/compat/cblas_ref.c (no OpenBLAS on this machine)"
fi
NVFLAGS="-O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 --use_fast_math --default-stream per-thread -Xcompiler -fPIC -Ikernels -Icommon $CUDA_INCS"
CFLAGS="-O2 -g -std=gnu11 -fopenmp -DPRISM_HAVE_CUDA -Ikernels -Icommon -Itests $BLAS_CFLAGS"
EMUFLAGS="-O2 -g -std=c++17 -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $BLAS_CFLAGS"

compile_cu() { # compile_cu FILE.cu OUT.o EXTRA — nvcc, or the emulator's C++ build under CUDAEMU=1
  if [ -n "${CUDAEMU:-}" ]; then
    bash tests/cudaemu/cu2cpp.sh "$1" > "${2%.o}.cpp" && $CXX $EMUFLAGS $3 -c "${2%.o}.cpp" -o "$2"
  else
    "$NVCC" $NVFLAGS $CUDNN_FLAGS $3 -c "$1" -o "$2"
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
    for f in cudaemu cublasemu cudnnemu; do $CXX $EMUFLAGS -c "tests/cudaemu/$f.cpp" -o "$dir/obj/rt_$f.o" & pids+=($!); done
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
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread -ldl || return 1
  $CC $CFLAGS -o "$dir/bench_cuda_gpt2" bench/bench_cuda_gpt2.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread -ldl || return 1
  if [ -n "${CUDAEMU:-}" ]; then
    $CXX -o "$dir/matmul_peak" "$dir/peak/matmul_peak.o" "$dir"/obj/rt_*.o "$dir/libcpu.a" $BLAS_LIBS -fopenmp -lpthread || return 1
  else
    $CC -o "$dir/matmul_peak" "$dir/peak/matmul_peak.o" $CUDA_LIBS -lm -lpthread || return 1
  fi
  $CC $CFLAGS -o "$dir/test_cuda_llama" tests/unit/test_cuda_llama.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread -ldl || return 1
  $CC $CFLAGS -o "$dir/test_cuda_cudnn" tests/unit/test_cuda_cudnn.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread -ldl || return 1
  $CC $CFLAGS -o "$dir/bench_cuda_attention" bench/bench_cuda_attention.c "$dir"/obj/*.o "$dir/libcpu.a" \
      $BLAS_LIBS $CUDA_LIBS -lm -lpthread -ldl || return 1
}

# build_step PREC EXTRA: builds $BDIR/PREC under the budget; 0 when built
build_step() {
  local prec=$1 extra=$2 rc
  lim_fn 400 build "$BDIR/$prec" "$extra"; rc=$?
  if [ $rc -eq 0 ]; then
    if [ "$prec" = bf16 ]; then record build-bf16 PASS "${CUDAEMU:+CUDA emulator, not }nvcc sm_90 + PTX"
    else record build-fp32 PASS "PRECISION=fp32"; fi
    return 0
  fi
  if [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "build-$prec"
  elif [ $rc -eq 124 ]; then fail_row "build-$prec" "took over 400 s"
  else fail_row "build-$prec" "compile error above"; fi
  return 1
}

# ---- correctness: each case in its own process ------------------------------------------------------
mkdir -p "$BDIR/cases"
CASES_MATCHED=0
run_cases() { # run_cases LABEL BINARY [CASE_REGEX [EXCLUDE_REGEX [ALLOW_EMPTY]]]; CASES_MATCHED = cases selected
  local label=$1 bin=$2 only=${3:-.} skip=${4:-} allow_empty=${5:-} c rc out log list n=0 t todo=()
  CASES_MATCHED=1   # until the list is known: a row below already speaks for this call
  [ -x "$bin" ] || { fail_row "$label" "not built"; return; }
  [ "$(tlimit 10)" -ge 10 ] || { not_run "$label"; return; }
  if ! list=$(lim 60 "$bin" --list 2>&1); then   # e.g. libcublasLt not found at run time
    fail_row "$label" "$bin --list: $(echo "$list" | head -n1 | cut -c1-140)"; return
  fi
  for c in $(echo "$list" | grep -E "$only" | grep -E "${GPU_CASES:-.}"); do
    if [ -n "$skip" ] && echo "$c" | grep -qE "$skip"; then continue; fi
    todo+=("$c")
  done
  CASES_MATCHED=${#todo[@]}
  [ ${#todo[@]} -gt 0 ] || { [ -n "$allow_empty" ] || fail_row "$label" "no test case matched (GPU_CASES=${GPU_CASES:-})"; return; }
  for c in "${todo[@]}"; do
    n=$((n+1))
    if [ "$(tlimit 10)" -lt 10 ]; then
      not_run "$label: $(( ${#todo[@]} - n + 1 )) case(s) from $c on"; return
    fi
    log="$BDIR/cases/$label-$c.log"
    CUDA_LAUNCH_BLOCKING=${RUN_BLOCKING:-1} lim "$CASE_TIMEOUT" "$bin" "$c" >"$log" 2>&1; rc=$?
    out=$(cat "$log")
    echo "--- $label $c (exit $rc)"; echo "$out"
    case $rc in
      0) record "$label $c" PASS "$(echo "$out" | grep -m1 -E 'worst|rel=|exact:' | cut -c1-110)";;
      77) record "$label $c" SKIP "$(echo "$out" | grep -m1 skipped)";;
      124) if [ "$LIM_CUT" = 1 ]; then cut_row "$label $c"; else fail_row "$label $c" "timed out after ${CASE_TIMEOUT} s"; fi;;
      *) fail_row "$label $c" "$(echo "$out" | grep -m1 -E 'error|:[0-9]+:|FAIL' | cut -c1-140)";;
    esac
  done
}
gelu_verdict() {   # the rows "GELU epilogue exact (bf16)" and "DGELU epilogue exact (bf16)" from gelu_epilogue_exactness
  local f="$BDIR/cases/bf16-gelu_epilogue_exactness.log" k v detail
  [ -f "$f" ] || return 0
  for k in GELU DGELU; do
    v=$(sed -n "s/^$k epilogue exact: //p" "$f" | head -n1)
    detail=$(grep -m1 "^$k epilogue (" "$f" | cut -c1-200)
    if [ $k = GELU ]; then GELU_VERDICT=$v; else DGELU_VERDICT=$v; fi
    case $v in
      yes) record "$k epilogue exact (bf16)" INFO "yes: the $k epilogue may be the default. $detail";;
      no) record "$k epilogue exact (bf16)" INFO "no: keep it a kernel of its own by default. $detail";;
    esac
  done
}
device_visible_check() {
  local nskip_now
  nskip_now=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
  if [ -z "${CUDAEMU:-}" ] && [ "$nskip_now" -gt 0 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    fail_row "device visible" "nvidia-smi lists a GPU but $nskip_now case(s) found no CUDA device: the CUDA runtime cannot use it"
  fi
}

# ---- speed helpers ----------------------------------------------------------------------------------
BENCH="$BDIR/bf16/bench_cuda_gpt2"
bench_run() { # bench_run LABEL TIMEOUT OUTFILE ARGS... -> 0 when it ran; counts fallbacks
  local label=$1 to=$2 outf=$3 rc; shift 3
  SPEED_RAN=1
  lim "$to" "$BENCH" "$@" >"$outf" 2>&1; rc=$?
  cat "$outf"
  FALLBACKS=$((FALLBACKS + $(field n "$outf" 'RESULT fallbacks' | head -n1 || echo 0) + 0))
  if grep -q 'skipped' "$outf"; then record "$label" SKIP "$(grep -m1 skipped "$outf")"; return 1; fi
  if [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "$label"; return 1; fi
  if [ $rc -ne 0 ]; then fail_row "$label" "exit $rc: $(grep -m1 -iE 'error|fail|not fit' "$outf" | cut -c1-140)"; return 1; fi
  return 0
}
emu_info() { [ -n "${CUDAEMU:-}" ] && record "$1" INFO "ran on the emulator (figures meaningless)"; }
# auto_choice FILE: the row naming what PRISM_ATTENTION=auto gave each model of a bench run (its model-creation lines)
auto_choice() {
  local lines
  lines=$(grep -h '^attention: ' "$1" 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd';' - | cut -c1-400)
  [ -n "$lines" ] && record "attention: auto's choice" INFO "$lines"
}
# attn_val FILE HS BACKEND KEY: KEY=... of bench_cuda_attention's RESULT line for that head size and backend
attn_val() { grep "^RESULT attn hs=$2 " "$1" 2>/dev/null | grep -F "backend=$3 " | tail -n1 | tr ' ' '\n' | sed -n "s/^$4=//p"; }

# ============================== the run, most important first ==============================
section "build bf16"
BUILT_BF16=0 QUICK_MATCHED=0
build_step bf16 "" && BUILT_BF16=1

section "quick correctness: bf16, ${GPU_CASES:+GPU_CASES=$GPU_CASES, }the cases of GPU_QUICK (CUDA_LAUNCH_BLOCKING=1)"
if [ $BUILT_BF16 = 1 ]; then
  run_cases bf16 "$BDIR/bf16/test_cuda_kernels" "$QUICK" "" allow-empty   # GPU_CASES may pick only later cases
  QUICK_MATCHED=$CASES_MATCHED
  gelu_verdict
  device_visible_check
  section "the training step as a CUDA graph, and the chunked LM head (bf16, no CUDA_LAUNCH_BLOCKING)"
  RUN_BLOCKING=0 run_cases graph-bf16 "$BDIR/bf16/test_cuda_kernels" "$GRAPHC" "" allow-empty
else
  not_run "correctness, speed, anchors" "no bf16 build"
fi

if [ -z "${SKIP_SPEED:-}" ] && [ $BUILT_BF16 = 1 ]; then
  if [ -z "${SKIP_BENCH:-}" ]; then
    section "speed: GPT-2 124M, T=$T, B=$B, uniform 12 heads vs Prism 3,3,6,6,8,8,12x6 (bf16)"
    if want 30 "speed 124M B=$B" && bench_run "speed 124M B=$B" 240 "$BDIR/speed.txt" --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 2; then
      U_TPS=$(field tok_s "$BDIR/speed.txt" 'schedule=12x12 ')
      P_TPS=$(field tok_s "$BDIR/speed.txt" 'schedule=3,3,6,6,8,8,12x6 ')
      RATIO=$(field vs_first "$BDIR/speed.txt" 'schedule=3,3,6,6,8,8,12x6 ')
      MFU_P=$(field mfu_peak "$BDIR/speed.txt" 'schedule=12x12 ')
      auto_choice "$BDIR/speed.txt"
      if [ -n "${CUDAEMU:-}" ]; then emu_info "speed 124M B=$B"
      elif ge "$RATIO" 0.98; then record "speed 124M B=$B" PASS "uniform $U_TPS tok/s, Prism $P_TPS tok/s, Prism/uniform $RATIO"
      else fail_row "speed 124M B=$B" "Prism/uniform $RATIO < 0.98 (uniform $U_TPS tok/s, Prism $P_TPS tok/s)"; fi
    fi
  fi

  section "anchor: the bf16 matmul rate through cuBLAS (the MFU ceiling)"
  MM_N=${GPU_MM_N:-$([ -n "${CUDAEMU:-}" ] && echo 128 || echo 8192)}
  if want 10 "bf16 matmul rate"; then
    lim 90 "$BDIR/bf16/matmul_peak" "$MM_N" 20 >"$BDIR/matmul.txt" 2>&1; rc=$?
    cat "$BDIR/matmul.txt"
    case $rc in
      0) CEIL=$(field tflops "$BDIR/matmul.txt")
         record "bf16 matmul rate" INFO "$CEIL TFLOP/s (${MM_N}^3, cuBLAS, median of 20) vs datasheet 989 TFLOP/s: $(awk -v c="$CEIL" 'BEGIN{printf "%.0f%%", 100*c/989}')"
         [ -n "$MFU_P" ] && MFU_C=$(awk -v m="$MFU_P" -v c="$CEIL" 'BEGIN{printf "%.4f", m * 989 / c}');;
      77) record "bf16 matmul rate" SKIP "$(grep -m1 skipped "$BDIR/matmul.txt")";;
      124) cut_row "bf16 matmul rate";;
      *) fail_row "bf16 matmul rate" "exit $rc: $(head -n1 "$BDIR/matmul.txt")";;
    esac
  fi

  if [ -z "${SKIP_TORCH:-}" ]; then
    section "anchor: PyTorch GPT-2 124M nanoGPT-style, B=$B T=$T, eager"
    if want 30 "PyTorch anchor (eager)"; then
      lim 150 "$PY" tests/gpu/torch_gpt2.py --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 3 >"$BDIR/torch.txt" 2>&1; rc=$?
      cat "$BDIR/torch.txt"
      if grep -q '^RESULT torch absent' "$BDIR/torch.txt"; then
        record "PyTorch anchor" ABSENT "$(sed -n 's/^RESULT torch absent: //p' "$BDIR/torch.txt" | head -n1)"
      elif [ $rc -eq 0 ]; then
        TORCH_E=$(field tok_s "$BDIR/torch.txt" 'mode=eager')
        record "PyTorch anchor (eager)" INFO "$TORCH_E tok/s$([ -n "$U_TPS" ] && awk -v a="$U_TPS" -v b="$TORCH_E" 'BEGIN{printf "; ours/PyTorch %.3f", a/b}')"
      elif [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "PyTorch anchor (eager)"
      else
        record "PyTorch anchor (eager)" INFO "did not finish (exit $rc): $(grep -m1 -iE 'error' "$BDIR/torch.txt" | cut -c1-140)"
      fi
    fi
    # the reference trainer (trainers/torch, issue 25) at the same shape, through its own protocol; on the emulator
    # dry run a tiny CPU job, so the row is exercised (its figure means nothing)
    if [ -z "${SKIP_REFTRAINER:-}" ]; then
      section "reference trainer: trainers/torch/train.py, GPT-2 124M, B=$B T=$T (bf16, SDPA, fused AdamW)"
      if want 40 "reference trainer"; then
        lim 200 "$PY" tests/gpu/torch_reftrainer.py --B "$B" --T "$T" --steps "$STEPS" --warmup 3 ${CUDAEMU:+--tiny} >"$BDIR/reftrainer.txt" 2>&1; rc=$?
        cat "$BDIR/reftrainer.txt"
        REF_TPS=$(field tok_s "$BDIR/reftrainer.txt" 'RESULT reftrainer')
        if grep -q '^RESULT reftrainer absent' "$BDIR/reftrainer.txt"; then
          record "reference trainer" ABSENT "$(sed -n 's/^RESULT reftrainer absent: //p' "$BDIR/reftrainer.txt" | head -n1)"
        elif [ $rc -eq 0 ] && [ -n "${CUDAEMU:-}" ]; then
          record "reference trainer" INFO "dry run: a tiny job on the CPU ran through the protocol ($REF_TPS tok/s, means nothing)"
        elif [ $rc -eq 0 ]; then
          record "reference trainer" INFO "$REF_TPS tok/s (trainers/torch, GPT-2 124M B=$B T=$T)$([ -n "$U_TPS" ] && awk -v a="$U_TPS" -v b="$REF_TPS" 'BEGIN{printf "; built-in %s tok/s, built-in/reference %.3f", a, a/b}')"
        elif [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "reference trainer"
        else fail_row "reference trainer" "exit $rc: $(grep -m1 -iE 'error' "$BDIR/reftrainer.txt" | cut -c1-140)"; fi
      fi
    fi
  fi
fi

# ---- 4b. attention backends per head size ------------------------------------------------------------
if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_ATTN:-}" ] && [ $BUILT_BF16 = 1 ]; then
  AB=${GPU_ATTN_B:-$([ -n "${CUDAEMU:-}" ] && echo 1 || echo "$B")} AT=${GPU_ATTN_T:-$([ -n "${CUDAEMU:-}" ] && echo 64 || echo "$T")}
  section "attention per head size: the fused kernel vs cuDNN, one layer forward + backward (C=768, B=$AB, T=$AT)"
  if want 30 "attention backends"; then
    lim 150 "$BDIR/bf16/bench_cuda_attention" --B "$AB" --T "$AT" --reps "$([ -n "${CUDAEMU:-}" ] && echo 1 || echo 10)" \
      >"$BDIR/attn.txt" 2>&1; rc=$?
    cat "$BDIR/attn.txt"
    if grep -q 'skipped' "$BDIR/attn.txt"; then record "attention backends" SKIP "$(grep -m1 skipped "$BDIR/attn.txt")"
    elif [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "attention backends"
    elif [ $rc -ne 0 ]; then fail_row "attention backends" "exit $rc: $(grep -m1 -iE 'error|fail' "$BDIR/attn.txt" | cut -c1-140)"
    else
      for hs in 64 96 128 192 256; do
        fm=$(attn_val "$BDIR/attn.txt" $hs fused ms) ft=$(attn_val "$BDIR/attn.txt" $hs fused tflops)
        cm=$(attn_val "$BDIR/attn.txt" $hs cudnn ms) ct=$(attn_val "$BDIR/attn.txt" $hs cudnn tflops)
        why=$(grep "^RESULT attn hs=$hs " "$BDIR/attn.txt" | grep -F 'backend=cudnn ' | sed -n 's/.*unavailable="\(.*\)"$/\1/p')
        if [ -z "$fm" ]; then fail_row "attention hs=$hs" "no fused timing"; continue; fi
        if [ -n "$cm" ]; then
          record "attention hs=$hs" INFO "${CUDAEMU:+emulator, figures meaningless: }fused $fm ms ($ft TFLOP/s), cuDNN $cm ms ($ct TFLOP/s): cuDNN/fused $(awk -v a="$cm" -v b="$fm" 'BEGIN{printf "%.2f", a/b}'), out vs fused $(attn_val "$BDIR/attn.txt" $hs cudnn rel_out)"
        else record "attention hs=$hs" INFO "fused $fm ms ($ft TFLOP/s); cuDNN unavailable: ${why:-?}"; fi
      done
    fi
  fi
fi

# ---- 5. the rest, while the time lasts ----------------------------------------------------------------
if [ -z "${SKIP_SASS:-}" ] && [ $BUILT_BF16 = 1 ]; then
  section "SASS of the fused attention kernels (cuobjdump -sass): are the fragment loads LDSM?"
  CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || ls "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" 2>/dev/null || true)}
  if [ -n "${CUDAEMU:-}" ]; then record "attention SASS" INFO "not run: the dry run has no sm_90 code"
  elif [ -z "$CUOBJDUMP" ]; then record "attention SASS" INFO "not run: cuobjdump not found"
  elif want 10 "attention SASS"; then
    if lim 60 "$CUOBJDUMP" -sass "$BDIR/bf16/obj/flash_attention_mma.cu.o" >"$BDIR/fa.sass" 2>&1; then
      awk -f tests/gpu/sass_counts.awk "$BDIR/fa.sass" > "$LOGDIR/attention_sass.txt"
      cat "$LOGDIR/attention_sass.txt"
      record "attention SASS" INFO "$(tail -n 1 "$LOGDIR/attention_sass.txt")"
    else record "attention SASS" INFO "cuobjdump failed: $(head -n1 "$BDIR/fa.sass" | cut -c1-140)"; fi
  fi
fi

if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_BENCH:-}" ] && [ $BUILT_BF16 = 1 ]; then
  for scale in Medium Large; do
    if [ $scale = Medium ]; then SC=1024 PR=4,4,4,8,8,8,16x18; else SC=1536 PR=6,6,6,12,12,12,16x18; fi
    section "Prism/uniform at the paper's $scale width (C=$SC, 24 layers, B=$B, T=$T)"
    if [ -n "${SKIP_SCALES:-}" ]; then not_run "speed $scale" "SKIP_SCALES set"; continue; fi
    want 60 "speed $scale" || continue
    if bench_run "speed $scale" 150 "$BDIR/speed_$scale.txt" --C $SC --heads 16x24 --heads $PR --B "$B" --T "$T" --steps 5 --rounds 3 --warmup 1 --quick; then
      r=$(field vs_first "$BDIR/speed_$scale.txt" "schedule=$PR ")
      SCALE_RATIO[$scale]=$r
      if [ -n "${CUDAEMU:-}" ]; then emu_info "speed $scale"
      elif ge "$r" 0.98; then record "speed $scale" PASS "Prism $PR / uniform 16x24: $r"
      else fail_row "speed $scale" "Prism $PR / uniform 16x24: $r < 0.98"; fi
    fi
  done
fi

if [ $BUILT_BF16 = 1 ]; then
  section "cuDNN attention backend vs the CPU twin, its fallbacks, whole models on cuDNN (bf16)"
  run_cases cudnn-bf16 "$BDIR/bf16/test_cuda_cudnn" . "" allow-empty
fi

if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_BENCH:-}" ] && [ $BUILT_BF16 = 1 ]; then
  for ab in cudnn fused; do
    section "speed: GPT-2 124M uniform vs Prism with PRISM_ATTENTION=$ab (B=$B, T=$T)"
    want 40 "speed 124M attention=$ab" || continue
    if PRISM_ATTENTION=$ab bench_run "speed 124M attention=$ab" 150 "$BDIR/speed_attn_$ab.txt" --B "$B" --T "$T" --steps 5 --rounds 2 --warmup 1 --quick; then
      record "speed 124M attention=$ab" INFO "${CUDAEMU:+emulator, figures meaningless: }uniform $(field tok_s "$BDIR/speed_attn_$ab.txt" 'schedule=12x12 ') tok/s, Prism $(field tok_s "$BDIR/speed_attn_$ab.txt" 'schedule=3,3,6,6,8,8,12x6 ') tok/s, Prism/uniform $(field vs_first "$BDIR/speed_attn_$ab.txt" 'schedule=3,3,6,6,8,8,12x6 ')"
    fi
  done
fi

if [ $BUILT_BF16 = 1 ]; then
  section "the other bf16 cases"
  run_cases bf16 "$BDIR/bf16/test_cuda_kernels" . "$QUICK|$GRAPHC" allow-empty
  [ $(( QUICK_MATCHED + CASES_MATCHED )) -gt 0 ] || fail_row bf16 "no test case matched (GPU_CASES=${GPU_CASES:-})"
  # the Llama-style model's kernels and whole model (tests/unit/test_cuda_llama.c), in a full run or with LLAMA=1
  if [ -z "${GPU_CASES:-}" ] || [ -n "${LLAMA:-}" ]; then
    section "llama kernels + model vs CPU, bf16 build"
    run_cases llama-bf16 "$BDIR/bf16/test_cuda_llama"
  fi
  section "model vs CPU, bf16 build, GELU in the cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1)"
  PRISM_CUDA_GELU_FUSION=1 run_cases bf16-gelu-fusion "$BDIR/bf16/test_cuda_kernels" '^model_' "$GRAPHC"
fi

if [ -z "${SKIP_NCU:-}" ] && [ $BUILT_BF16 = 1 ]; then
  section "ncu: one profile of the fused attention kernels (occupancy, shared-memory bank conflicts)"
  NCU=${NCU:-$(command -v ncu || ls "${CUDA_HOME:-/usr/local/cuda}/bin/ncu" 2>/dev/null || true)}
  if [ -n "${CUDAEMU:-}" ]; then record "attention ncu" INFO "not run: no hardware counters in the dry run"
  elif [ -z "$NCU" ]; then record "attention ncu" INFO "not run: ncu not found"
  elif want 40 "attention ncu"; then
    lim 120 "$NCU" --clock-control none --target-processes all --kernel-name regex:'k_f[am]_(fwd|dkv|dq)' --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_ldsm.sum \
      "$BENCH" --flash-only --flash-heads 12 --B 8 --T "$T" >"$LOGDIR/attention_ncu.txt" 2>&1; rc=$?
    tail -n 80 "$LOGDIR/attention_ncu.txt"
    occ=$(grep -E 'Achieved Occupancy' "$LOGDIR/attention_ncu.txt" | awk '{print $NF}' | paste -sd/ -)
    bc=$(grep -E 'bank_conflicts_pipe_lsu_mem_shared_op_ld.sum' "$LOGDIR/attention_ncu.txt" | awk '{print $NF}' | paste -sd/ -)
    if [ $rc -eq 0 ] && [ -n "$occ$bc" ]; then record "attention ncu" INFO "fwd/dkv/dq achieved occupancy % $occ; shared-load bank conflicts $bc (report: attention_ncu.txt)"
    elif [ $rc -eq 124 ] && [ "$LIM_CUT" = 1 ]; then cut_row "attention ncu"
    else record "attention ncu" INFO "ncu gave no profile (exit $rc): $(grep -m1 -iE 'error|ERR' "$LOGDIR/attention_ncu.txt" | cut -c1-140)"; fi
  fi
fi

if [ -z "${SKIP_FP32:-}" ]; then
  section "build fp32, then its kernels + model vs CPU"
  if want 60 "build-fp32" && build_step fp32 "-DENABLE_FP32"; then
    run_cases fp32 "$BDIR/fp32/test_cuda_kernels" . "$GRAPHC"
    RUN_BLOCKING=0 run_cases graph-fp32 "$BDIR/fp32/test_cuda_kernels" "$GRAPHC" "" allow-empty
    if [ -z "${GPU_CASES:-}" ] || [ -n "${LLAMA:-}" ]; then run_cases llama-fp32 "$BDIR/fp32/test_cuda_llama"; fi
  fi
fi

if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_BENCH:-}" ] && [ $BUILT_BF16 = 1 ]; then
  section "memory that grows with T^2 (uniform, B=$B, T = 256, 512, 1024)"
  if want 30 "T^2 memory" && bench_run "T^2 memory" 90 "$BDIR/memfit.txt" --mem-fit --B "$B"; then
    T2=$(field t2_gib "$BDIR/memfit.txt"); ONE_LAYER=$(field one_layer_gib "$BDIR/memfit.txt")
    record "T^2 memory" INFO "$T2 GiB grows with T^2 at T=1024; one layer's B*h*T*T bf16 tensor is $ONE_LAYER GiB"
  fi

  section "largest B that fits (uniform, T=$T), and its tokens/s, each schedule in its own model"
  if want 60 "largest B" && bench_run "largest B" 120 "$BDIR/maxb.txt" --find-max-B "${GPU_MAXB_LIST:-192,128,96,64,48,32,16}" --T "$T"; then
    MAXB=$(field B "$BDIR/maxb.txt" 'RESULT maxB')
    if [ -n "$MAXB" ] && [ "$MAXB" -gt 0 ] && want 40 "speed 124M B=$MAXB (largest)" &&
       bench_run "speed 124M B=$MAXB (largest)" 150 "$BDIR/speed_maxb.txt" --alone --B "$MAXB" --T "$T" --steps 3 --rounds 3 --warmup 1 --quick; then
      MAXB_TPS=$(field tok_s "$BDIR/speed_maxb.txt" 'schedule=12x12 ')
      r=$(field vs_first "$BDIR/speed_maxb.txt" 'schedule=3,3,6,6,8,8,12x6 ')
      record "speed 124M B=$MAXB (largest)" INFO "uniform $MAXB_TPS tok/s, Prism/uniform $r (each schedule alone on the device)"
    fi
  fi

  section "speed with GELU in the cuBLASLt epilogue (PRISM_CUDA_GELU_FUSION=1, informational)"
  if want 40 "speed, GELU epilogue" && PRISM_CUDA_GELU_FUSION=1 bench_run "speed, GELU epilogue" 100 "$BDIR/speed_gelu.txt" --B "$B" --T "$T" --steps 5 --rounds 2 --warmup 1 --quick; then
    record "speed, GELU epilogue" INFO "uniform $(field tok_s "$BDIR/speed_gelu.txt" 'schedule=12x12 ') tok/s (without: ${U_TPS:-?})"
  fi

  section "speed: Llama-style 124M (RoPE, SwiGLU 2048, RMSNorm), T=$T, B=$B, uniform 12 heads vs Prism (bf16)"
  if want 40 "speed llama" && bench_run "speed llama" 120 "$BDIR/speed_llama.txt" --arch llama --B "$B" --T "$T" --steps 5 --rounds 3 --warmup 1 --quick; then
    r=$(field vs_first "$BDIR/speed_llama.txt" 'schedule=3,3,6,6,8,8,12x6 ')
    if [ -n "${CUDAEMU:-}" ]; then emu_info "speed llama"
    else record "speed llama" INFO "uniform $(field tok_s "$BDIR/speed_llama.txt" 'schedule=12x12 ') tok/s, Prism/uniform $r"; fi
  fi
fi

if [ -z "${SKIP_SPEED:-}" ] && [ -z "${SKIP_TORCH:-}" ] && [ -n "$TORCH_E" ] && [ "${TORCH_COMPILE:-1}" != 0 ]; then
  section "PyTorch anchor with torch.compile (if it finishes in the time left)"
  if want 60 "PyTorch anchor (compile)"; then
    lim 240 "$PY" tests/gpu/torch_gpt2.py --compile --B "$B" --T "$T" --steps "$STEPS" --rounds 3 --warmup 3 >"$BDIR/torch_compile.txt" 2>&1; rc=$?
    cat "$BDIR/torch_compile.txt"
    if [ $rc -eq 0 ]; then TORCH_C=$(field tok_s "$BDIR/torch_compile.txt" 'mode=compile'); record "PyTorch anchor (compile)" INFO "$TORCH_C tok/s"
    elif [ $rc -eq 124 ]; then record "PyTorch anchor (compile)" INFO "torch.compile did not finish within the $(tlimit 240) s it had"
    else record "PyTorch anchor (compile)" INFO "failed (exit $rc): $(grep -m1 -iE 'error' "$BDIR/torch_compile.txt" | cut -c1-140)"; fi
  fi
fi

# ---- 6. summary -------------------------------------------------------------------------------------
# Last, while time lasts: the product's own prism-worker (no CUDA library linked) on the prism-cuda.so it loads
# (tests/gpu/loaded_backend.sh), against the same job on the CPU. A build of three targets, not the whole tree.
if [ -n "${SKIP_MAKE:-}" ]; then
  not_run "loaded backend" "SKIP_MAKE set"
elif [ -n "${CUDAEMU:-}" ]; then
  not_run "loaded backend" "a GPU check (on the emulator, tests/integration/test_cuda_backend.sh covers the loader)"
elif ! { pkg-config --exists sqlite3 libuv jansson libcurl openblas 2>/dev/null && [ -f /usr/include/http_parser.h ]; }; then
  not_run "loaded backend" "the product's packages (sqlite3 libuv jansson libcurl openblas http-parser) are not all installed"
elif want 120 "loaded backend"; then
  section "loaded backend: prism-worker + prism-cuda.so"
  make_product() { make -j"$JOBS" BUILD="$BDIR/make" "$BDIR/make/prism-worker" "$BDIR/make/prism-data" "$BDIR/make/prism-cuda.so" >"$BDIR/make.log" 2>&1; }
  lim_fn 300 make_product; mrc=$?
  if [ $mrc -eq 0 ]; then source tests/gpu/loaded_backend.sh; loaded_backend_check "$BDIR/make"
  elif [ $mrc -eq 124 ]; then cut_row "loaded backend" "building prism-worker and prism-cuda.so"
  else tail -n 30 "$BDIR/make.log"; fail_row "loaded backend" "build failed (see log)"; fi
fi

section "summary"
FINAL=1
write_summary
cat "$SUMMARY"
nskip=$(printf '%s\n' "${results[@]}" | grep -c '| SKIP |')
[ $failures -eq 0 ] || exit 1
[ "$nskip" -eq 0 ] || exit 3   # nothing failed, but not everything was checked
ncut=$(printf '%s\n' "${results[@]}" | grep -c -E '\| CUT \||not run: time budget')
[ "$ncut" -eq 0 ] || exit 4    # nothing failed, but the budget left parts out
