#!/usr/bin/env bash
# test_gpu_script.sh — tests/gpu/run.sh, the one-call GPU check, run here as a dry run on the CUDA emulator
# (CUDAEMU=1): the script builds, runs and classifies exactly as it will on a lent GPU, so a broken script is
# found now and not in a session's few minutes of device time. Speed (SKIP_SPEED) is left out; GPU_CASES picks
# a few test cases to keep it short. The time budget is shown enforced (a build it cuts, every later part a
# not-run row, within the budget) and a run killed from outside keeps the partial summary it had written. The
# library search (tests/gpu/find_cuda_libs.sh) is run against fake directory trees.
# timeout: 420
source "$(dirname "$0")/../lib.sh"

ROOT=$(pwd)
CASES='^(encoder_forward_backward|attention_head_dim_64|model_loss_and_every_gradient_match_cpu|graph_capture_replays_and_refuses_host_syncs)$'
need_x86() { [ "$(uname -m)" = x86_64 ] || skip "the CUDA emulator is x86-64 only"; }
# dry TREE DIR [VAR=VALUE...]: runs TREE/tests/gpu/run.sh (the VARs override the defaults here) with the
# summary in DIR/out; prints the exit status
dry() {
  local tree=$1 d=$2; shift 2
  env CUDAEMU=1 SKIP_MAKE=1 SKIP_SPEED=1 GPU_CASES="$CASES" OUT="$d/out" GPU_BUILD="$d/build" "$@" \
    bash "$tree/tests/gpu/run.sh" >"$d/log" 2>&1
  echo $?
}
row() { grep -F "| $1 |" "$2/out/gpu_summary.md" | head -n1; }
# rows of the checks table (not the aims table) in DIR's summary
check_rows() { sed -n '/^| check |/,/^$/p' "$1/out/gpu_summary.md" | grep '^| ' | grep -vc '^| check |'; }

t_dry_run_passes_each_selected_check() {
  need_x86
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d")
  [ "$rc" = 0 ] || { tail -n 30 "$d/log" >&2; fail "exit $rc, expected 0"; }
  local s; s=$(cat "$d/out/gpu_summary.md")
  assert_contains "$s" "DRY RUN ON THE CUDA EMULATOR"
  assert_contains "$(row build-bf16 "$d")" "| PASS |"
  assert_contains "$(row build-fp32 "$d")" "| PASS |"
  for p in fp32 bf16; do
    for c in encoder_forward_backward attention_head_dim_64 model_loss_and_every_gradient_match_cpu; do
      assert_contains "$(row "$p $c" "$d")" "| PASS |"
    done
  done
  assert_contains "$(row "bf16 model_loss_and_every_gradient_match_cpu" "$d")" "worst gradient relative L2 error"
  # the graph cases run in a section of their own (no CUDA_LAUNCH_BLOCKING), in both precisions
  assert_contains "$(row "graph-bf16 graph_capture_replays_and_refuses_host_syncs" "$d")" "| PASS |"
  assert_contains "$(row "graph-fp32 graph_capture_replays_and_refuses_host_syncs" "$d")" "| PASS |"
  assert_contains "$(row "bf16-gelu-fusion model_loss_and_every_gradient_match_cpu" "$d")" "| PASS |"
  assert_contains "$(row "attention SASS" "$d")" "| INFO | not run: the dry run has no sm_90 code"
  assert_contains "$(row "attention ncu" "$d")" "| INFO | not run: no hardware counters"
  assert_contains "$(row "loaded backend" "$d")" "| INFO | not run:"
  assert_eq 16 "$(check_rows "$d")" "check rows (link, cudnn, 2 builds, 3+3 cases, 1+1 graph, 1 fused, SASS, ncu, loaded backend)"
  # the order: the quick subset (encoder, model) before the rest (attention_head_dim_64), bf16 before fp32
  local order; order=$(sed -n '/^| check |/,/^$/p' "$d/out/gpu_summary.md" | cut -d'|' -f2 | sed 's/^ *//; s/ *$//' | grep -v -e '^check$' -e '^---$' -e '^$' | paste -sd, -)
  assert_eq "link,cudnn,build-bf16,bf16 encoder_forward_backward,bf16 model_loss_and_every_gradient_match_cpu,graph-bf16 graph_capture_replays_and_refuses_host_syncs,attention SASS,bf16 attention_head_dim_64,bf16-gelu-fusion model_loss_and_every_gradient_match_cpu,attention ncu,build-fp32,fp32 encoder_forward_backward,fp32 attention_head_dim_64,fp32 model_loss_and_every_gradient_match_cpu,graph-fp32 graph_capture_replays_and_refuses_host_syncs,loaded backend" "$order" "the order of the checks"
  if head -n1 "$d/out/gpu_summary.md" | grep -q PARTIAL; then fail "the finished run's summary says PARTIAL"; fi
  assert_contains "$(row link "$d")" "| INFO | dry run links the emulator"
  assert_contains "$s" "linked against: "
  assert_contains "$s" "## Aims (measured vs aim)"
  assert_contains "$(row "Prism 3,3,6,6,8,8,12x6 / uniform, 124M" "$d")" "| not measured |"
  assert_contains "$s" "failures: 0"
  [ -s "$d/out/gpu_check.log" ] || fail "no gpu_check.log"
}

# The budget bounds everything, the builds included: a budget of 4 s stops the emulator build mid-way (CUT, not
# FAIL), every later part is a not-run row, the script ends within the budget (plus the kill grace) and exits 4.
t_budget_cuts_the_build_and_everything_after() {
  need_x86
  local d; d=$(tmpdir)
  local t0; t0=$(date +%s)
  local rc; rc=$(dry "$ROOT" "$d" GPU_BUDGET_S=4 GPU_RESERVE_S=0 SKIP_SPEED= SKIP_TORCH=1)
  local took=$(( $(date +%s) - t0 ))
  assert_eq 4 "$rc" "exit status of a run the budget cut"
  assert_contains "$(cat "$d/log")" "=== build bf16"
  assert_contains "$(row build-bf16 "$d")" "| CUT | cut by the time budget (4 s)"
  [ "$took" -le 14 ] || fail "the run took $took s with a budget of 4 s (+5 s kill grace, +5 s start)"
  local s; s=$(cat "$d/out/gpu_summary.md")
  if grep -q '| FAIL |' <<<"$s"; then fail "a cut build was reported as FAIL: $(grep '| FAIL |' <<<"$s")"; fi
  assert_contains "$(row "build-fp32" "$d")" "| INFO | not run: time budget"
  assert_contains "$s" "cut or not run for the time budget: 2"
  assert_contains "$s" "failures: 0"
  if head -n1 "$d/out/gpu_summary.md" | grep -q PARTIAL; then fail "the finished run's summary says PARTIAL"; fi
}

# The summary is rewritten after every row: a run killed (SIGKILL, as the device tool does at its limit) right
# after its first case passed still leaves a summary with that case, marked PARTIAL.
t_killed_run_keeps_the_partial_summary() {
  need_x86
  local d; d=$(tmpdir)
  setsid env CUDAEMU=1 SKIP_SPEED=1 SKIP_FP32=1 GPU_CASES="$CASES" OUT="$d/out" GPU_BUILD="$d/build" \
    bash "$ROOT/tests/gpu/run.sh" >"$d/log" 2>&1 &
  local pid=$! i
  for i in $(seq 1 400); do
    grep -q '| bf16 encoder_forward_backward | PASS |' "$d/out/gpu_summary.md" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  [ -f "$d/out/gpu_summary.md" ] || { tail -n 20 "$d/log" >&2; fail "no summary after the kill"; }
  local s; s=$(cat "$d/out/gpu_summary.md")
  assert_contains "$(row "bf16 encoder_forward_backward" "$d")" "| PASS |"
  assert_contains "$(row build-bf16 "$d")" "| PASS |"
  assert_contains "$(head -n1 "$d/out/gpu_summary.md")" "# PARTIAL (written at "
  assert_contains "$s" "## Aims (measured vs aim)"
  if grep -q 'bf16-gelu-fusion' <<<"$s"; then fail "the kill came after the run's end: nothing shown (summary: $s)"; fi
}

# With no device visible every case says "skipped": the script must not call that a pass.
t_no_device_is_skip_and_exit_3() {
  need_x86
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d" CUDAEMU_DEVICES=0 SKIP_FP32=1)
  assert_eq 3 "$rc" "exit status with everything skipped"
  assert_contains "$(row "bf16 attention_head_dim_64" "$d")" "| SKIP | skipped: no CUDA device"
  grep -E '^\| bf16 (encoder|attention|model)' "$d/out/gpu_summary.md" | grep -q '| PASS |' && fail "a skipped case was reported as PASS"
  assert_contains "$(cat "$d/out/gpu_summary.md")" "verified nothing"
}

# A real kernel bug (the causal softmax skips the diagonal) must fail the check, in both precisions.
t_broken_kernel_fails_the_check() {
  need_x86
  local d; d=$(tmpdir)
  mkdir -p "$d/tree"
  cp -r "$ROOT/kernels" "$ROOT/common" "$ROOT/bench" "$d/tree/"
  mkdir -p "$d/tree/tests/unit" && cp -r "$ROOT/tests/gpu" "$ROOT/tests/cudaemu" "$ROOT/tests/harness.h" \
    "$ROOT/tests/cuda_test_lib.h" "$d/tree/tests/"
  cp "$ROOT/tests/unit/test_cuda_kernels.c" "$ROOT/tests/unit/test_cuda_llama.c" "$ROOT/tests/unit/test_cuda_cudnn.c" \
    "$d/tree/tests/unit/"
  sed -i 's/for (int j = lane; j <= t; j += 32) {       \/\* online/for (int j = lane; j < t; j += 32) {  \/* online/' \
    "$d/tree/kernels/cuda/attention.cu"
  cmp -s "$ROOT/kernels/cuda/attention.cu" "$d/tree/kernels/cuda/attention.cu" && fail "the mutation did not apply"
  local rc; rc=$(dry "$d/tree" "$d")
  assert_eq 1 "$rc" "exit status with a broken kernel"
  assert_contains "$(row "fp32 attention_head_dim_64" "$d")" "| FAIL |"
  assert_contains "$(row "bf16 attention_head_dim_64" "$d")" "| FAIL |"
  assert_contains "$(row "fp32 encoder_forward_backward" "$d")" "| PASS |"
  grep -qE '^failures: [1-9]' "$d/out/gpu_summary.md" || fail "the summary does not count the failures"
}

# A section in which no case ran (a GPU_CASES that matches nothing; likewise a binary that cannot even list
# its cases) is a failure, not a silently empty section.
t_no_case_run_is_a_failure() {
  need_x86
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d" SKIP_FP32=1 GPU_CASES='^no_such_case$')
  assert_eq 1 "$rc" "exit status when no case matched"
  assert_contains "$(row bf16 "$d")" "| FAIL | no test case matched"
}

# A CUDA runtime that fails (here a driver/runtime mismatch, as the emulator's CUDAEMU_DEVICE_ERROR makes it) is a
# FAIL of every case, never "skipped: no CUDA device" (before, prism_cuda_device_count turned any error into 0).
t_cuda_runtime_error_is_fail() {
  need_x86
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d" CUDAEMU_DEVICE_ERROR=803 SKIP_FP32=1 GPU_CASES='^(encoder_forward_backward|model_loss_and_every_gradient_match_cpu)$')
  assert_eq 1 "$rc" "exit status with a broken CUDA runtime"
  assert_contains "$(row "bf16 encoder_forward_backward" "$d")" "| FAIL | "
  assert_contains "$(row "bf16 encoder_forward_backward" "$d")" "CUDA runtime error (not a missing device)"
  assert_contains "$(row "bf16 encoder_forward_backward" "$d")" "cudaGetDeviceCount"
  grep -q '| SKIP |' "$d/out/gpu_summary.md" && fail "a CUDA error was reported as a skip"
  grep -qE '^failures: [1-9]' "$d/out/gpu_summary.md" || fail "the summary does not count the failures"
}

# The speed part without our GPT-2 timings (too slow on the emulator): the matmul ceiling runs and is printed next
# to the datasheet's 989 TFLOP/s; PyTorch, hidden here behind a torch module that cannot be imported, gives an
# ABSENT row and the aims table says so; the GELU epilogue verdict is reported.
t_speed_rows_matmul_ceiling_and_absent_pytorch() {
  need_x86
  local d; d=$(tmpdir)
  mkdir -p "$d/notorch/torch"
  echo 'raise ImportError("torch hidden by test_gpu_script.sh")' > "$d/notorch/torch/__init__.py"
  local rc; rc=$(dry "$ROOT" "$d" SKIP_SPEED= SKIP_BENCH=1 SKIP_FP32=1 GPU_MM_N=64 PYTHONPATH="$d/notorch" \
    GPU_CASES='^(gelu_epilogue_exactness|model_loss_and_every_gradient_match_cpu)$')
  [ "$rc" = 0 ] || { tail -n 30 "$d/log" >&2; fail "exit $rc, expected 0"; }
  assert_contains "$(row "bf16 matmul rate" "$d")" "| INFO | "
  assert_contains "$(row "bf16 matmul rate" "$d")" "vs datasheet 989 TFLOP/s"
  assert_contains "$(row "PyTorch anchor" "$d")" "| ABSENT | PyTorch cannot be imported here"
  assert_contains "$(row "reference trainer" "$d")" "| ABSENT | PyTorch cannot be imported here"
  assert_contains "$(row "ours / PyTorch" "$d")" "| PyTorch absent |"
  assert_contains "$(row "GELU epilogue exact (bf16)" "$d")" "| INFO | yes"
  assert_contains "$(cat "$d/out/gpu_summary.md")" "GELU epilogue exact (bf16): yes"
  assert_contains "$(row "DGELU epilogue exact (bf16)" "$d")" "| INFO | yes"
}

# The reference trainer's row (trainers/torch through its protocol, beside the built-in engine): on the dry run a tiny
# job on the CPU goes through tests/gpu/torch_reftrainer.py and the row reports its rate as meaning nothing; the aims
# table has the built-in / reference line, not measured here.
t_reference_trainer_row_runs_the_trainer() {
  need_x86
  /usr/bin/python3 -c 'import torch' 2>/dev/null || skip "python3-torch is not installed (make deps installs it)"
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d" SKIP_SPEED= SKIP_BENCH=1 SKIP_FP32=1 SKIP_SASS=1 SKIP_NCU=1 GPU_MM_N=64 PYTHON=/usr/bin/python3 \
    GPU_CASES='^(model_loss_and_every_gradient_match_cpu)$')
  [ "$rc" = 0 ] || { tail -n 30 "$d/log" >&2; fail "exit $rc, expected 0"; }
  grep -A12 '=== reference trainer' "$d/log"
  assert_contains "$(row "reference trainer" "$d")" "| INFO | dry run: a tiny job on the CPU ran through the protocol ("
  assert_contains "$(cat "$d/log")" "RESULT reftrainer mode=eager B=4 T=64 tok_s="
  assert_contains "$(row "built-in / reference trainer" "$d")" "| not measured |"
}

# The cuDNN attention backend's part (#27): the emulator's shim stands in for libcudnn (a "cudnn" row), one
# layer's attention is timed through both backends at head sizes 64..256 (a row each, naming both figures), and
# test_cuda_cudnn's cases run as their own section (here: auto's pick and a one-line fallback).
t_dry_run_times_both_attention_backends_and_runs_the_cudnn_cases() {
  need_x86
  local d; d=$(tmpdir)
  local rc; rc=$(dry "$ROOT" "$d" SKIP_SPEED= SKIP_BENCH=1 SKIP_TORCH=1 SKIP_FP32=1 GPU_MM_N=64 \
    GPU_CASES='^(model_loss_and_every_gradient_match_cpu|auto_picks_cudnn_where_the_self_check_passes|unsupported_head_size_falls_back_with_one_line)$')
  [ "$rc" = 0 ] || { tail -n 30 "$d/log" >&2; fail "exit $rc, expected 0"; }
  assert_contains "$(row cudnn "$d")" "| INFO | dry run: the emulator's cuDNN shim"
  local hs
  for hs in 64 96 128 192 256; do
    assert_contains "$(row "attention hs=$hs" "$d")" "| INFO | emulator, figures meaningless: fused "
    assert_contains "$(row "attention hs=$hs" "$d")" "cuDNN/fused "
  done
  assert_contains "$(row "cudnn-bf16 auto_picks_cudnn_where_the_self_check_passes" "$d")" "| PASS |"
  assert_contains "$(row "cudnn-bf16 unsupported_head_size_falls_back_with_one_line" "$d")" "| PASS |"
  assert_contains "$(cat "$d/out/gpu_summary.md")" "failures: 0"
}

# Where cuBLAS comes from: a toolkit under $CUDA_HOME first, else the pip layout (nvidia/*/lib under site-packages,
# versioned names only, linked through unversioned symlinks), else a clear "not found" — on fake trees.
t_library_search_cuda_home_pip_layout_or_not_found() {
  local d; d=$(tmpdir)
  local sp=$d/site-packages
  mkdir -p "$sp/nvidia/cublas/lib" "$sp/nvidia/cuda_runtime/lib" "$sp/nvidia/cublas/include" "$d/cuda/lib64" "$d/cuda/include"
  touch "$sp/nvidia/cublas/lib/libcublasLt.so.13" "$sp/nvidia/cublas/lib/libcublasLt.so.12" "$sp/nvidia/cublas/lib/libcublas.so.13"         "$sp/nvidia/cuda_runtime/lib/libcudart.so.13" "$sp/nvidia/cublas/include/cublasLt.h"
  local out
  out=$(CUDA_HOME=$d/none PIP_SITE_DIRS=$sp bash "$ROOT/tests/gpu/find_cuda_libs.sh" "$d/link1") || fail "pip layout not found: $out"
  eval "$out"
  assert_contains "$CUDA_LIB_SOURCE" "libcublasLt from pip layout ($sp/nvidia/cublas/lib/libcublasLt.so.13)"
  assert_contains "$CUDA_LIB_SOURCE" "libcudart from pip layout ($sp/nvidia/cuda_runtime/lib/libcudart.so.13)"
  assert_eq "$sp/nvidia/cublas/lib/libcublasLt.so.13" "$(readlink "$d/link1/libcublasLt.so")" "symlink to the highest version"
  assert_contains "$CUDA_LIBS" "-L$d/link1 -lcublasLt -lcublas -lcudart"
  assert_contains "$CUDA_LIBS" "-Wl,-rpath,$sp/nvidia/cublas/lib:$sp/nvidia/cuda_runtime/lib"
  assert_contains "$CUDA_INCS" "-I$sp/nvidia/cublas/include"
  # a toolkit with all three wins over the pip layout
  touch "$d/cuda/lib64/libcublasLt.so" "$d/cuda/lib64/libcublas.so" "$d/cuda/lib64/libcudart.so" "$d/cuda/include/cublasLt.h"
  out=$(CUDA_HOME=$d/cuda PIP_SITE_DIRS=$sp bash "$ROOT/tests/gpu/find_cuda_libs.sh" "$d/link2") || fail "toolkit not found: $out"
  eval "$out"
  assert_contains "$CUDA_LIB_SOURCE" "libcublasLt from CUDA_HOME ($d/cuda/lib64/libcublasLt.so)"
  assert_eq "" "$CUDA_INCS" "no extra -I with the toolkit's headers"
  # neither: not found, naming what is missing
  local rc=0
  out=$(CUDA_HOME=$d/none PIP_SITE_DIRS=$d/empty bash "$ROOT/tests/gpu/find_cuda_libs.sh" "$d/link3") || rc=$?
  assert_eq 1 "$rc" "exit status with no cuBLAS anywhere"
  eval "$out"
  assert_contains "$CUDA_LIB_SOURCE" "not found: libcublasLt libcublas libcudart"
}

harness_main "$@"
