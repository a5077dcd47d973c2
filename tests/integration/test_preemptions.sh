#!/usr/bin/env bash
# test_preemptions.sh — preempted attempts counted apart from failures (issue #40): a trainer that checkpoints and
# says "preempted" every 2 steps completes a 12-step job under `serve --max-attempts 2` (each preemption used an
# attempt before: the job failed for good at step 4); the job shows its preemptions; `--max-preemptions N` fails
# the job at the preemption past N, naming the flag; bad values of the flag exit 2.
# Real `prism-sweep serve`, a real `prism-worker` agent, the fake trainer (tests/integration/fake_trainer.py).
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

# pe_run SERVE_FLAGS...: one 12-step job trained by a worker whose trainer checkpoints and says "preempted" every
# 2 steps (each step it trains appended to $D/ledger), until the worker is idle; $JOB_JSON is the job's answer
# (GET /api/v1/jobs/1), $SID the sweep.
pe_run() {
  w_setup
  w_server --lease-ttl 30 "$@"
  tr_spec "$D/spec.json" pe '["4,4,4,4"]' '[5]' 12 0
  SID=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --preempt-every 2 --ledger $D/ledger" --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "worker exit"
  JOB_JSON=$(w_get "/api/v1/jobs/1")
  echo "job: $(echo "$JOB_JSON" | w_json '{k: d.get(k) for k in ("state", "attempt", "preemptions", "last_error")}')"
}

# The issue's repro: preempt every 2 steps, 12 steps, --max-attempts 2: 5 preemptions, then the 6th lease completes
# from the step-10 checkpoint; the job (its own route and the sweep's list) says 5 preemptions over 6 attempts.
t_preempt_every_2_steps_completes_under_max_attempts_2() {
  pe_run --max-attempts 2
  assert_eq done "$(echo "$JOB_JSON" | w_json 'd["state"]')" "state (before: failed, --max-attempts 2 used up by 2 preemptions)"
  assert_eq 5 "$(echo "$JOB_JSON" | w_json 'd["preemptions"]')" "preemptions of the job"
  assert_eq 6 "$(echo "$JOB_JSON" | w_json 'd["attempt"]')" "attempts (leases) of the job"
  assert_eq 5 "$(w_get "/api/v1/sweeps/$SID/jobs" | w_json 'd["jobs"][0]["preemptions"]')" "preemptions in the sweep's jobs list"
  assert_eq 12 "$(cut -d' ' -f2 "$D/ledger" | sort -u | wc -l)" "distinct steps trained over the 6 attempts"
  assert_eq 12 "$(wc -l < "$D/ledger")" "steps trained (each once: every attempt resumed from the last checkpoint)"
  assert_eq 5 "$(grep -c 'event=preempted device=cpu job=1 ' "$D/wa.log")" "preempted events in the worker's log"
  local st; st=$("$(bin prism-sweep)" status --db "$D/prism.db" "$SID" 2>&1) || fail "status: $st"
  echo "$st" | grep preemptions
  assert_contains "$st" "preemptions: 5 over 1 job(s)"
  st=$("$(bin prism-sweep)" status --db "$D/prism.db" "$SID" --format json 2>&1) || fail "status --format json: $st"
  assert_eq '{"total": 5, "jobs": 1}' "$(echo "$st" | w_json 'd["preemptions"]')" "status --format json's preemptions"
}

# --max-preemptions 2: the third preemption fails the job for good, the error names the flag; the worker's
# failure streak is not touched (a preemption is no failure of the worker).
t_max_preemptions_fails_the_job_naming_the_flag() {
  pe_run --max-attempts 2 --max-preemptions 2
  assert_eq failed "$(echo "$JOB_JSON" | w_json 'd["state"]')" "state after the third preemption"
  assert_eq 3 "$(echo "$JOB_JSON" | w_json 'd["preemptions"]')" "preemptions"
  assert_eq 3 "$(echo "$JOB_JSON" | w_json 'd["attempt"]')" "attempts"
  assert_contains "$(echo "$JOB_JSON" | w_json 'd["last_error"]')" "preempted 3 times and --max-preemptions 2 is used up; last: preempted: the trainer on worker wa said preempted at step 6"
  assert_eq 0 "$(w_get /api/v1/workers | w_json 'd["workers"][0]["fail_streak"]')" "the worker's failure streak"
}

# Bad --max-preemptions values: exit 2 with a message naming the flag, as every serve flag.
t_max_preemptions_bad_values() {
  w_tokens
  local v out rc
  for v in -1 100001 x ""; do
    out=$("$(bin prism-sweep)" serve --db "$D/p.db" --listen 127.0.0.1:0 --token-file "$D/tokens" --max-preemptions "$v" 2>&1)
    rc=$?
    echo "--max-preemptions '$v': exit $rc: $out" | head -n 2
    assert_eq 2 "$rc" "exit status of --max-preemptions '$v'"
    assert_contains "$out" "--max-preemptions"
  done
}

harness_main "$@"
