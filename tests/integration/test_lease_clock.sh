#!/usr/bin/env bash
# test_lease_clock.sh — lease expiry does not trust the wall clock: a server whose wall clock is stepped (an
# LD_PRELOAD shim, tests/shim/clock_step.c, moves CLOCK_REALTIME while it runs) neither expires a job that
# heartbeats nor keeps a dead lease alive, and a restart after a step gives every live lease one TTL.
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# c_server [flags]: s_server with the clock shim; the offset (seconds) is in $D/offset
c_server() {
  [ -f "$PRISM_BUILD/tests/libclock_step.so" ] || fail "missing $PRISM_BUILD/tests/libclock_step.so (make tests)"
  # (verify_asan_link_order=0: under make sanitize the shim comes before the ASan runtime)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" LD_PRELOAD="$PRISM_BUILD/tests/libclock_step.so" \
    PRISM_SHIM_CLOCK_OFFSET_FILE="$D/offset" s_server "$@"
}
state() { sqlite3 "$DB" "SELECT state FROM jobs WHERE id = $1"; }

# +1 h while a job heartbeats every 0.3 s (TTL 2 s): the lease holds; a second step (+2 h) too. Then the
# heartbeats stop and the clock steps back to -1 h: the lease expires one TTL after the last heartbeat, not
# three hours later.
t_clock_steps_do_not_expire_or_prolong_leases() {
  s_setup
  echo 0 >"$D/offset"
  s_spec "$D/s.json" clk '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  c_server --lease-ttl 2
  local w; w=$(s_register w1)
  s_lease "$w"
  local i
  for i in $(seq 1 16); do
    # each step lands between two heartbeats, with more than one expiry tick (TTL/4 = 0.5 s) before the next
    [ "$i" = 3 ] && { echo 3600 >"$D/offset"; sleep 0.8; }
    [ "$i" = 9 ] && { echo 7200 >"$D/offset"; sleep 0.8; }
    s_req POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\", \"step\": $((i % 10))}"
    assert_eq 200 "$CODE" "heartbeat $i after the clock stepped forward ($BODY; $(grep -c expired "$D/server.log") expiry lines)"
    sleep 0.3
  done
  assert_eq leased "$(state "$JOB")" "job state after +1 h and +2 h"
  # the last heartbeat was at +2 h; the clock steps back to -1 h: the lease must still end one TTL after it
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\", \"step\": 7}"
  local t0; t0=$(date +%s.%N)
  echo -3600 >"$D/offset"
  for i in $(seq 1 60); do [ "$(state "$JOB")" = queued ] && break; sleep 0.1; done
  local dt; dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  assert_eq queued "$(state "$JOB")" "a dead lease after -1 h, ${dt} s after its last heartbeat"
  awk -v d="$dt" 'BEGIN{exit !(d >= 1.5)}' || fail "expired after ${dt} s, before its TTL of 2 s"
  assert_contains "$(cat "$D/server.log")" "1 lease(s) expired"
}

# A restart after the clock stepped back 1 h: the lease stored before the step looks an hour "in the future"
# and is cut to one TTL from the restart; after a forward step, a live lease is not expired at start.
t_restart_after_a_clock_step_gives_one_ttl() {
  s_setup
  echo 0 >"$D/offset"
  s_spec "$D/s.json" clk2 '["4,4,4,4"]' '[1, 2]'
  s_create "$D/s.json" >/dev/null
  c_server --lease-ttl 2
  local w; w=$(s_register w1)
  s_lease "$w"; local j1=$JOB
  s_lease "$w"; local j2=$JOB t2=$TOKEN
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  echo -3600 >"$D/offset"
  c_server --lease-ttl 2
  local i
  for i in $(seq 1 25); do
    s_expect 200 POST "/api/v1/jobs/$j2/heartbeat" "{\"lease_token\": \"$t2\", \"step\": 1}"
    [ "$(state "$j1")" = queued ] && break
    sleep 0.2
  done
  assert_eq queued "$(state "$j1")" "a lease written before a -1 h step, 5 s after the restart"
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  echo 3600 >"$D/offset"
  c_server --lease-ttl 2
  s_expect 200 POST "/api/v1/jobs/$j2/heartbeat" "{\"lease_token\": \"$t2\", \"step\": 1}"
  assert_eq leased "$(state "$j2")" "a live lease after a +1 h step and a restart"
}

harness_main "$@"
