#!/usr/bin/env bash
# test_gpu_script.sh — tests/gpu/run.sh, the one-call GPU check, run here as a dry run on the CUDA emulator
# (CUDAEMU=1): the script builds, runs and classifies exactly as it will on a lent GPU, so a broken script is
# found now and not in a session's few minutes of device time. Speed (SKIP_SPEED) and the full product
# build (SKIP_MAKE) are left out; GPU_CASES picks a few test cases to keep it short.
# timeout: 240
source "$(dirname "$0")/../lib.sh"

ROOT=$(pwd)
CASES='^(encoder_forward_backward|attention_head_dim_64|model_loss_and_every_gradient_match_cpu)$'
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
  assert_contains "$(row "bf16-gelu-fusion model_loss_and_every_gradient_match_cpu" "$d")" "| PASS |"
  assert_eq 9 "$(grep -c '^| ' "$d/out/gpu_summary.md" | awk '{print $1 - 1}')" "rows (2 builds, 3+3 cases, 1 fused; header excluded)"
  assert_contains "$s" "failures: 0"
  [ -s "$d/out/gpu_check.log" ] || fail "no gpu_check.log"
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
  mkdir -p "$d/tree/tests/unit" && cp -r "$ROOT/tests/gpu" "$ROOT/tests/cudaemu" "$ROOT/tests/harness.h" "$d/tree/tests/"
  cp "$ROOT/tests/unit/test_cuda_kernels.c" "$d/tree/tests/unit/"
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

harness_main "$@"
