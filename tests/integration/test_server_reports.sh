#!/usr/bin/env bash
# test_server_reports.sh — what the server keeps of a worker's reports (issue #40): the fail route's "preempted"
# (and the "preempted:" text of a worker before it) counted apart from the attempts; a val point's val_loss_se
# stored (NULL on a train point) and served by the curve route, JSON and CSV; every JSON answer at 17
# significant digits (a result's val_loss reads back exactly through the job and the leaderboard, API and CLI).
# A real server on loopback fed like a worker (curl).
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# sr_leased NAME [SERVE_FLAGS...]: a one-job sweep NAME ($SID), a server with the flags, worker w1 ($W) holding
# the job's lease ($JOB, $TOKEN).
sr_leased() {
  local name=$1; shift
  s_setup
  s_spec "$D/s.json" "$name" '["4,4,4,4"]' '[0]' 10
  SID=$(s_create "$D/s.json")
  s_server "$@"
  W=$(s_register w1)
  s_lease "$W"
}

# --max-attempts 1 --max-preemptions 1: a "preempted:" text (retryable) requeues without using the attempt;
# "preempted": true without retryable is refused (400); a plain retryable failure then fails the job (attempts
# used up); the job says 1 preemption over 2 attempts.
t_fail_route_counts_preemptions_apart() {
  sr_leased fr --max-attempts 1 --max-preemptions 1
  s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"preempted: worker w1 got a stop signal at step 3\", \"retryable\": true}"
  echo "preempted (a worker before the flag): $BODY"
  assert_eq queued "$(s_json .state)" "state after a preemption at --max-attempts 1"
  s_lease "$W"
  assert_eq 2 "$ATTEMPT" "the second lease"
  s_expect 400 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"spot instance gone\", \"preempted\": true}"
  echo "preempted without retryable: $BODY"
  assert_contains "$BODY" "preempted: true needs retryable: true"
  s_expect 400 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"x\", \"retryable\": true, \"preempted\": 1}"
  assert_contains "$BODY" "preempted: must be true or false"
  s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"out of memory\", \"retryable\": true}"
  echo "a retryable failure: $BODY"
  assert_eq failed "$(s_json .state)" "state after a retryable failure at --max-attempts 1"
  s_expect 200 GET "/api/v1/jobs/$JOB" "" "$AT"
  assert_eq "1 2" "$(s_json '"\(.preemptions) \(.attempt)"')" "preemptions and attempts of the job"
}

# --max-preemptions 0: the first preemption fails the job, the error names the flag.
t_max_preemptions_0_fails_at_the_first() {
  sr_leased f0 --max-preemptions 0
  s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"spot instance gone\", \"retryable\": true, \"preempted\": true}"
  assert_eq failed "$(s_json .state)" "state"
  s_expect 200 GET "/api/v1/jobs/$JOB" "" "$AT"
  echo "last_error: $(s_json .last_error)"
  assert_eq "preempted 1 times and --max-preemptions 0 is used up; last: spot instance gone" "$(s_json .last_error)" "last_error"
  assert_eq 1 "$(s_json .preemptions)" "preemptions"
}

# A val point's val_loss_se: stored with the val point (NULL on a train point that sends one), served by the
# curve route (JSON and CSV, appended as the last column), bounds-checked like the loss.
t_val_loss_se_stored_and_served() {
  sr_leased se
  s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 0, \"train_loss\": 5.5, \"val_loss_se\": 7}, {\"step\": 5, \"val_loss\": 5.25, \"val_loss_se\": 0.0123456789012345}, {\"step\": 10, \"val_loss\": 5.0}]}"
  assert_eq "0|train| 10|val| 5|val|0.0123456789012345" \
    "$(sqlite3 "$DB" "SELECT step || '|' || kind || '|' || coalesce(val_loss_se, '') FROM metrics ORDER BY step, kind" | sort | tr '\n' ' ' | sed 's/ $//')" \
    "val_loss_se stored with the val point only"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=val" "" "$AT"
  echo "val points: $BODY"
  assert_eq "0.0123456789012345 null" "$(s_json '[.points[].val_loss_se|tostring]|join(" ")')" "val_loss_se in the API's points"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=val&format=csv" "" "$AT"
  assert_eq "step,value,tokens,lr,tok_per_s,attempt,grad_norm,val_loss_se" "$(echo "$BODY" | head -n1)" "CSV header"
  assert_eq "5,5.25,320,,,1,,0.0123456789012345" "$(echo "$BODY" | sed -n 2p)" "CSV row"
  s_expect 400 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 6, \"val_loss\": 5, \"val_loss_se\": -1}]}"
  echo "a negative val_loss_se: $BODY"
  assert_contains "$BODY" "points[0].val_loss_se: -1 is outside"
}

# 17 significant digits: a val_loss of 3.3604123456789012 (15 digits print 3.3604123456789) reads back as the
# same double from the job route, the leaderboard route and `prism-sweep leaderboard --format json`.
t_json_answers_at_17_digits() {
  sr_leased dg
  s_expect 200 POST "/api/v1/jobs/$JOB/complete" "{\"lease_token\": \"$TOKEN\", \"result\": {\"val_loss\": 3.3604123456789012, \"tok_per_s\": 1000, \"attn_distance\": null}}"
  s_expect 200 GET "/api/v1/jobs/$JOB" "" "$AT"
  local raw; raw=$(echo "$BODY" | grep -o '"val_loss": *[0-9.e+-]*' | head -n1)
  echo "job route: $raw"
  assert_eq '"val_loss":3.3604123456789012' "$(echo "$raw" | tr -d ' ')" "the job route's val_loss, as printed"
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard" "" "$AT"
  echo "leaderboard route: $(echo "$BODY" | grep -o '"val_loss_mean": *[0-9.e+-]*' | head -n1)"
  assert_eq 3.3604123456789012 "$(echo "$BODY" | /usr/bin/python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["rows"][0]["val_loss_mean"]))')" \
    "the leaderboard route's mean val loss"
  local cli; cli=$("$(bin prism-sweep)" leaderboard "$SID" --db "$DB" --format json 2>&1) || fail "leaderboard --format json: $cli"
  assert_eq 3.3604123456789012 "$(echo "$cli" | /usr/bin/python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["rows"][0]["val_loss_mean"]))')" \
    "prism-sweep leaderboard --format json's mean val loss"
}

harness_main "$@"
