#!/usr/bin/env bash
# test_sweep_summary.sh — `prism-sweep status` and GET /api/v1/sweeps[/{id}] print and serve one sweep summary
# (sweeps_summary): the same counts per state and total, each in its own JSON shape, while a server runs.
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

t_status_and_api_agree() {
  s_setup
  s_spec "$D/s.json" agree '["1,1,4,4", "2,2,4,4"]' '[1, 2]' 10
  local sid; sid=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"; s_complete "$JOB" "$TOKEN" 3.5     # one done
  s_lease "$w"                                      # one leased
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\", \"step\": 4}"
  s_lease "$w"; s_expect 200 POST "/api/v1/jobs/$JOB/cancel" '{}' "$AT"   # one cancelled
  s_expect 200 GET "/api/v1/sweeps/$sid"
  local api cli
  api=$(s_json '"\(.counts.queued) \(.counts.leased) \(.counts.done) \(.counts.failed) \(.counts.cancelled) \(.counts.paused) \(.counts.pruned) \(.total)"')
  cli=$("$(bin prism-sweep)" status --db "$DB" --format json "$sid" |
        jq -r '"\(.jobs.queued) \(.jobs.leased) \(.jobs.done) \(.jobs.failed) \(.jobs.cancelled) \(.jobs.paused) \(.jobs.pruned) \(.jobs.total)"')
  assert_eq "3 1 1 0 1 0 0 6" "$api" "API counts"
  assert_eq "$api" "$cli" "status --format json counts"
  assert_eq "14 50" "$(s_json '"\(.steps_done) \(.steps_total)"')" "API steps done (10 + 4) and in total (5 x 10)"
  s_expect 200 GET /api/v1/sweeps
  assert_eq "$api" "$(s_json '.sweeps[0]|"\(.counts.queued) \(.counts.leased) \(.counts.done) \(.counts.failed) \(.counts.cancelled) \(.counts.paused) \(.counts.pruned) \(.total)"')" "list counts"
  local text; text=$("$(bin prism-sweep)" status --db "$DB" agree)
  assert_contains "$text" "6 jobs"
  assert_contains "$text" "cancelled         1"
}

# The ETA comes from the server's rate since the sweep's last resume, and is null ("no progress") when nothing runs.
t_eta_since_resume() {
  s_setup
  s_spec "$D/s.json" eta '["1,1,4,4", "2,2,4,4"]' '[1]' 100
  local sid; sid=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"; local j1=$JOB t1=$TOKEN
  s_expect 200 GET "/api/v1/sweeps/$sid"                      # first sample: 0 steps
  sleep 2.2
  s_expect 200 POST "/api/v1/jobs/$j1/heartbeat" "{\"lease_token\": \"$t1\", \"step\": 40}"
  s_expect 200 GET "/api/v1/sweeps/$sid"
  local r; r=$(s_json .throughput.steps_per_s)
  /usr/bin/python3 -c "import sys; r=float(sys.argv[1]); sys.exit(0 if 40/2.8 < r <= 40/2.2 else 1)" "$r" || fail "rate $r not 40 steps over ~2.2 s"
  [ "$(s_json .eta_s)" != null ] || fail "no ETA while a job runs: $BODY"
  # pause; the running job ends; nothing runs: no ETA, however fresh the rate
  s_expect 200 POST "/api/v1/sweeps/$sid/pause" '{}' "$AT"
  s_complete "$j1" "$t1" 3.5
  s_expect 200 GET "/api/v1/sweeps/$sid"
  assert_eq "null 0" "$(s_json '"\(.eta_s) \(.counts.leased)"')" "no ETA when nothing runs"
  sleep 2.2                                                    # idle while paused: must not slow the rate after resume
  s_expect 200 GET "/api/v1/sweeps/$sid"
  s_expect 200 POST "/api/v1/sweeps/$sid/resume" '{}' "$AT"
  s_lease "$w"
  s_expect 200 GET "/api/v1/sweeps/$sid"
  [ "$(s_json .throughput.resumed_at)" != null ] || fail "resumed_at not reported: $BODY"
  assert_eq 0 "$(s_json .throughput.window_s)" "the rate's window restarts at the resume"
  sleep 2.2
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\", \"step\": 20}"
  s_expect 200 GET "/api/v1/sweeps/$sid"
  r=$(s_json .throughput.steps_per_s)
  /usr/bin/python3 -c "import sys; r=float(sys.argv[1]); sys.exit(0 if 20/2.8 < r <= 20/2.2 else 1)" "$r" ||
    fail "rate after the resume $r: not 20 steps over ~2.2 s (the pause's idle time or earlier steps counted)"
  local eta; eta=$(s_json .eta_s)
  /usr/bin/python3 -c "import sys; e=float(sys.argv[1]); r=float(sys.argv[2]); sys.exit(0 if abs(e - 180 / r) < 1e-6 else 1)" "$eta" "$r" ||
    fail "ETA $eta is not the 180 remaining steps (3 jobs of 100, 120 done) / $r: $BODY"
}

harness_main "$@"
