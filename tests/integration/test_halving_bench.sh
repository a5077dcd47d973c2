#!/usr/bin/env bash
# test_halving_bench.sh — bench/bench_halving.sh itself runs, small (45 steps, 100k tokens): both sweeps finish on a
# real server and worker, and the report has every figure; halving trains at most 45% of the full grid's steps
# (at 45 steps the ranking itself is noise: the winner check is reported, not enforced: CHECK_WINNER=0).
# timeout: 400
. "$(dirname "$0")/../lib.sh"

t_small_bench_reports_every_figure() {
  local d; d=$(tmpdir)
  local out; out=$(cd "$PRISM_ROOT" && BUILD=$PRISM_BUILD OUT="$d/run" STEPS=45 TOKENS=100k THREADS=1 CHECK_WINNER=0 \
    bash bench/bench_halving.sh 2>&1)
  local rc=$?
  echo "$out"
  assert_eq 0 "$rc" "bench_halving exit status"
  assert_contains "$out" "rung steps           [5, 15, 45] (eta 3, sync)"
  assert_contains "$out" "full-grid steps      540 (12 jobs x 45)"
  assert_contains "$out" "check ratio <= 0.45: ok"
  echo "$out" | grep -Eq "^rung 0 \(step 5\) +Spearman rho of its delta with the final delta: [+-][0-9.]+ over 5 schedules$" || fail "no rank correlation for rung 0"
  echo "$out" | grep -Eq "^rung 1 \(step 15\) +Spearman rho" || fail "no rank correlation for rung 1"
  echo "$out" | grep -Eq "^full-grid winner     [0-9,]+$" || fail "no winner line"
  echo "$out" | grep -Eq "^promoted to the last rung  .*4,4,4,4" || fail "the baseline is not among the promoted"
  local trained; trained=$(echo "$out" | sed -n 's/^steps trained *\([0-9]*\).*/\1/p')
  # 12 x 5 + (2 or 3 schedules x 2 seeds) x 10 + (2 x 2) x 30
  [ "$trained" = 220 ] || [ "$trained" = 240 ] || fail "steps trained $trained, expected 220 or 240"
}

harness_main "$@"
