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

harness_main "$@"
