#!/usr/bin/env bash
# test_fleet_bench.sh — bench/bench_fleet itself runs: a small fleet (6 boxes × 2 devices, fast clocks) against
# a real server joins, heartbeats, sends metrics, completes and leases again, with 0 errors, and the report has
# every figure (per-route latency, server CPU and RSS, WAL and checkpoints, database growth).
# timeout: 90
. "$(dirname "$0")/../lib.sh"

t_small_fleet_runs_clean() {
  local b; b=$(bin bench/bench_fleet)
  [ -x "$b" ] || fail "$b not built (make tests builds it)"
  local out; out=$("$b" --boxes 6 --devices 2 --seconds 4 --metrics-every 0.5 --points 4 --job-seconds 1.5 --lease-ttl 2 2>&1)
  local rc=$?
  echo "$out" | grep -v 'event='
  assert_eq 0 "$rc" "bench_fleet exit status"
  assert_contains "$out" "6 boxes x 2 devices (12 devices)"
  local r
  for r in lease heartbeat metrics complete all; do
    echo "$out" | grep -Eq "^ +$r +[0-9]+ " || fail "no latency line for $r"
  done
  assert_contains "$out" "errors                0 "
  assert_contains "$out" "server CPU"
  assert_contains "$out" "server RSS"
  assert_contains "$out" "database growth"
  echo "$out" | grep -Eq "^WAL .*longest group COMMIT on the loop [0-9.]+ ms" || fail "no WAL line"
  echo "$out" | grep -Eq "metric points/s +[1-9]" || fail "no points stored"
}

# Bad sizes are refused with the usage line and exit 2.
t_bad_size_refused() {
  local b; b=$(bin bench/bench_fleet)
  local out; out=$("$b" --boxes 0 2>&1); local rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "usage: bench_fleet"
}

harness_main "$@"
