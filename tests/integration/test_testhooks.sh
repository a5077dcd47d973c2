#!/usr/bin/env bash
# test_testhooks.sh — the test hooks are in test builds only (common/testhook.h, like SQLite's SQLITE_TEST):
# `strings` on the shipped programs (build/prism-sweep, prism-worker, prism-data) finds no hook's variable or
# message, and the hooked builds the integration tests run while they set a hook (build/hooks/, tests/lib.sh's bin)
# carry every hook a test sets. The nvcc-built CUDA backend (build/prism-cuda.so, where nvcc built it) is checked too:
# the cuDNN backend's PRISM_CUDNN_SEED_BUG (kernels/cuda/attention_cudnn.cu) is in the emulator's objects alone.
# timeout: 30
. "$(dirname "$0")/../lib.sh"

HOOKS='PRISM_FAULT_[A-Z_]+|PRISM_CUDNN_SEED_BUG|\(test hook\)'

t_shipped_programs_carry_no_test_hook() {
  local p found
  for p in prism-sweep prism-worker prism-data prism-cuda.so; do   # prism-cuda.so where nvcc built it
    case $p in
      *.so) [ -f "$PRISM_BUILD/$p" ] || continue ;;
      *) [ -x "$PRISM_BUILD/$p" ] || fail "no $PRISM_BUILD/$p: run make" ;;
    esac
    found=$(strings "$PRISM_BUILD/$p" | grep -oE "$HOOKS" | sort -u | tr '\n' ' ')
    [ -z "$found" ] || fail "$PRISM_BUILD/$p carries test hooks: ${found}(a hook is testhook_fault, common/testhook.h)"
  done
  for p in prism-cuda.emu-bf16.so prism-cuda.emu-fp32.so; do
    [ ! -f "$PRISM_BUILD/$p" ] || strings "$PRISM_BUILD/$p" | grep -qw PRISM_CUDNN_SEED_BUG ||
      fail "$PRISM_BUILD/$p lacks the hook PRISM_CUDNN_SEED_BUG"
  done
}

t_test_builds_carry_every_hook_the_tests_set() {
  local v
  for v in PRISM_FAULT_PROMOTION PRISM_FAULT_RACING PRISM_FAULT_SEARCH; do
    strings "$PRISM_BUILD/hooks/prism-sweep" | grep -qw "$v" || fail "$PRISM_BUILD/hooks/prism-sweep lacks the hook $v"
  done
  for v in PRISM_FAULT_AT_RUNG PRISM_FAULT_SKIP_RESULT_CHECK; do
    strings "$PRISM_BUILD/hooks/prism-worker" | grep -qw "$v" || fail "$PRISM_BUILD/hooks/prism-worker lacks the hook $v"
  done
  # the integration tests run the hooked program while they set a hook, the shipped one otherwise
  assert_eq "$PRISM_BUILD/hooks/prism-sweep" "$(PRISM_FAULT_RACING=abort; bin prism-sweep)" "the program run with a hook set"
  assert_eq "$PRISM_BUILD/prism-worker" "$(bin prism-worker)" "the program run without one"
}

harness_main "$@"
