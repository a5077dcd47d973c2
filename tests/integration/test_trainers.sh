#!/usr/bin/env bash
# test_trainers.sh — external trainers through the queue (docs/TRAINERS.md): a sweep of "trainer": "fake" jobs
# trained by workers with --trainer fake=COMMAND to a leaderboard; leases only to workers that have the trainer;
# kill -9 of the worker and SIGTERM resume from the trainer's checkpoint; rung stops; cancel; --devices-per-job.
# Real `prism-sweep serve`, real `prism-worker` agents, the fake trainer (tests/integration/fake_trainer.py).
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

# 3 schedules x 2 seeds through two workers with the fake trainer: every job done once, every train step stored
# once, val points with their standard error, the leaderboard ranks the 3 schedules with both seeds.
t_sweep_to_leaderboard() {
  w_setup
  tr_spec "$D/spec.json" ext '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[11, 22]' 30
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE" --idle-exit 1; local pa=$LAST_PID
  w_worker wb --trainer "fake=$FAKE" --idle-exit 1; local pb=$LAST_PID
  w_wait 60 "all 6 jobs done" w_all_done "$sid" 6
  w_exit "$pa" 30; assert_eq 0 "$W_RC" "worker wa exit status"
  w_exit "$pb" 30; assert_eq 0 "$W_RC" "worker wb exit status"
  local jobs; jobs=$(w_get "/api/v1/sweeps/$sid/jobs")
  assert_eq '[1, 1, 1, 1, 1, 1]' "$(echo "$jobs" | w_json 'sorted(j["attempt"] for j in d["jobs"])')" "attempts"
  local j
  for j in $(echo "$jobs" | w_json '" ".join(str(j["id"]) for j in d["jobs"])'); do
    assert_eq "0-29/30/30" "$(w_get "/api/v1/jobs/$j/metrics?kind=train" | w_steps)" "train steps of job $j"
    assert_eq "30-30/1/1" "$(w_get "/api/v1/jobs/$j/metrics?kind=val" | w_steps)" "val steps of job $j"
  done
  grep -q 'trainer=fake: fake trainer: devices=cpu resume= stop_at=0 data_root='"$D" "$D/wa.log" "$D/wb.log" \
    || { w_dump; fail "the trainer's log line (prefixed) with its environment is not in the worker logs"; }
  local lb; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  assert_eq '[[1, 1, 4, 4], [2, 2, 4, 4], [4, 4, 4, 4]]' "$(echo "$lb" | w_json 'sorted(r["heads"] for r in d["rows"])')" "schedules"
  assert_eq '[2, 2, 2]' "$(echo "$lb" | w_json '[r["seeds_done"] for r in d["rows"]]')" "seeds done"
  # the fake's loss grows with the first layer's heads: 1,1,4,4 ranks first
  assert_eq '[1, 1, 4, 4]' "$(echo "$lb" | w_json 'd["rows"][0]["heads"]')" "rank 1"
  assert_eq '[0.01, 0.01]' "$(echo "$lb" | w_json '[round(v["val_loss_se"], 6) for v in d["rows"][0]["val_losses"]]')" \
    "val_loss_se of rank 1's results"
}

# A job of trainer "fake" goes only to a worker that has it: a worker without --trainer and one with another
# trainer get nothing (the job stays queued, never leased), a worker with it trains it. The lease request's
# "trainers" is validated (400 naming the key).
t_lease_only_to_workers_with_the_trainer() {
  w_setup
  tr_spec "$D/spec.json" flt '["4,4,4,4"]' '[1]' 10
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker plain --idle-exit 1; local p1=$LAST_PID
  w_worker other --trainer "other=$FAKE" --idle-exit 1; local p2=$LAST_PID
  w_exit "$p1" 30; assert_eq 0 "$W_RC" "exit of the worker without trainers"
  w_exit "$p2" 30; assert_eq 0 "$W_RC" "exit of the worker with another trainer"
  assert_eq queued "$(tr_job 1 'd["state"]')" "state after workers without the trainer"
  assert_eq 0 "$(tr_job 1 'd["attempt"]')" "attempts after workers without the trainer"
  # the API: the request names what the worker has
  local wid; wid=$(curl -s -X POST -H "Authorization: Bearer $WTOK" -d '{"name":"probe","host":"h","devices":["cpu"]}' \
    "$URL/api/v1/workers/register" | w_json 'd["worker_id"]')
  local code
  code=$(curl -s -o "$D/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid, \"trainers\": [\"ok\", \"../x\"]}" "$URL/api/v1/lease")
  assert_eq 400 "$code" "a bad trainer name in the lease request"
  assert_contains "$(cat "$D/r")" 'trainers[1]: must be a trainer name'
  code=$(curl -s -o "$D/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid, \"trainers\": \"fake\"}" "$URL/api/v1/lease")
  assert_eq 400 "$code" "trainers that is not an array"
  code=$(curl -s -o "$D/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid, \"trainers\": [\"other\"]}" "$URL/api/v1/lease")
  assert_eq 204 "$code" "lease for a worker with another trainer"
  w_worker good --trainer "fake=$FAKE" --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "exit of the worker with the trainer"
  assert_eq done "$(tr_job 1 'd["state"]')" "state after the worker with the trainer"
  assert_eq 1 "$(tr_job 1 'd["attempt"]')" "attempts"
  grep -q 'event=done device=cpu job=1 ' "$D/good.log" || { w_dump; fail "the worker with the trainer did not train job 1"; }
}

# A built-in sweep and a trainer sweep: a worker with --devices-per-job 2 (external trainers only) leases the
# trainer's job with PRISM_DEVICES "cpu,cpu" and never the built-in one; without --trainer the flag is refused
# (exit 2, naming the fix) before registering, as is N not dividing the devices.
t_devices_per_job() {
  w_setup
  w_server
  "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --devices cpu,cpu --devices-per-job 2 \
    > "$D/o" 2>&1
  assert_eq 2 "$?" "exit of --devices-per-job 2 without --trainer"
  assert_contains "$(cat "$D/o")" "--devices-per-job 2: the built-in engine trains one job on one device"
  "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --devices cpu,cpu,cpu --devices-per-job 2 \
    --trainer "fake=$FAKE" > "$D/o" 2>&1
  assert_eq 2 "$?" "exit of --devices-per-job 2 with 3 devices"
  assert_contains "$(cat "$D/o")" "--devices-per-job 2 does not divide the 3 devices"
  "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --trainer "fake='unclosed" > "$D/o" 2>&1
  assert_eq 2 "$?" "exit of a --trainer with an unclosed quote"
  assert_contains "$(cat "$D/o")" "--trainer fake: unclosed ' in the command"
  "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --trainer "=x" > "$D/o" 2>&1
  assert_eq 2 "$?" "exit of a --trainer without a name"
  assert_contains "$(cat "$D/o")" "expected NAME=COMMAND"
  w_spec "$D/builtin.json" bi '["4,4,4,4"]' '[1]' 10
  tr_spec "$D/ext.json" ex '["4,4,4,4"]' '[1]' 10
  local s1 s2; s1=$(w_create "$D/builtin.json"); s2=$(w_create "$D/ext.json")
  w_worker multi --devices cpu,cpu --devices-per-job 2 --trainer "fake=$FAKE" --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "exit of the 2-device worker"
  assert_eq 1 "$(w_count "$s2" done)" "trainer jobs done"
  assert_eq 1 "$(w_count "$s1" queued)" "built-in jobs still queued"
  assert_eq 0 "$(tr_job 1 'd["attempt"]')" "attempts of the built-in job"
  grep -q 'fake trainer: devices=cpu,cpu ' "$D/multi.log" || { w_dump; fail "PRISM_DEVICES was not cpu,cpu"; }
}

# kill -9 of the worker mid-job: its trainer goes too (no process left), the lease expires, a new worker resumes
# from the last checkpoint the trainer reported (PRISM_RESUME), attempt 2 trains each step from there once.
t_kill9_resumes_from_trainer_checkpoint() {
  w_setup
  w_server --lease-ttl 3
  tr_spec "$D/spec.json" k9 '["4,4,4,4"]' '[5]' 200 20
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --step-s 0.03 --spawn --ledger $D/ledger"; local pa=$LAST_PID
  w_wait 30 "a checkpoint reported" w_ckpt_at_least 1 40
  local pids; pids=$(cat "$D"/work-wa/job-1-a1/pids)
  kill -KILL "$pa"
  w_wait 10 "the trainer and its child gone after kill -9 of the worker" tr_gone $(echo "$pids" | cut -d' ' -f1)
  local ck; ck=$(tr_job 1 'd["checkpoint_step"]')
  w_worker wb --trainer "fake=$FAKE --ledger $D/ledger"
  w_wait 60 "job done" w_all_done "$sid" 1
  local first; first=$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_json 'min(p["step"] for p in d["points"] if p["attempt"] == 2)')
  assert_eq "$ck" "$first" "attempt 2 starts at the reported checkpoint's step"
  grep -q "fake trainer: devices=cpu resume=$D/ckpt/job-1-a1/resume-$ck.bin " "$D/wb.log" \
    || { w_dump; fail "PRISM_RESUME was not the reported checkpoint resume-$ck.bin"; }
  # attempt 2 trained each step from the checkpoint to the end once
  assert_eq "$((200 - ck))" "$(grep -c '^job-1-a2 ' "$D/ledger")" "steps attempt 2 trained"
  assert_eq "$((200 - ck))" "$(grep '^job-1-a2 ' "$D/ledger" | sort -u | wc -l)" "distinct steps of attempt 2"
  assert_eq "$ck-199" "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_json '"%d-%d" % (min(p["step"] for p in d["points"] if p["attempt"] == 2), max(p["step"] for p in d["points"] if p["attempt"] == 2))')" "attempt 2's steps"
  assert_eq done "$(tr_job 1 'd["state"]')" "state"
}

# SIGTERM of the worker: the trainer finishes its step, checkpoints, says "preempted"; the job goes back queued
# with that checkpoint at once (no lease expiry), the worker exits 0, and the next worker resumes there: every
# step trained exactly once over both attempts.
t_sigterm_checkpoints_and_requeues() {
  w_setup
  w_server --lease-ttl 60
  tr_spec "$D/spec.json" st '["4,4,4,4"]' '[5]' 150 0
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --step-s 0.03 --ledger $D/ledger"; local pa=$LAST_PID
  w_wait 30 "training" w_job_step_at_least 1 20
  kill -TERM "$pa"
  w_exit "$pa" 30; assert_eq 0 "$W_RC" "worker exit status after SIGTERM"
  assert_eq queued "$(tr_job 1 'd["state"]')" "state after SIGTERM"
  local ck; ck=$(tr_job 1 'd["checkpoint_step"]')
  [ "$ck" -ge 20 ] || fail "checkpoint step after SIGTERM: $ck"
  assert_contains "$(tr_job 1 'd["last_error"]')" "preempted"
  w_worker wb --trainer "fake=$FAKE --ledger $D/ledger" --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "exit of the second worker"
  assert_eq done "$(tr_job 1 'd["state"]')" "state"
  assert_eq 150 "$(wc -l < "$D/ledger")" "steps trained over both attempts"
  assert_eq 150 "$(cut -d' ' -f2 "$D/ledger" | sort -u | wc -l)" "distinct steps over both attempts"
  assert_eq "$ck" "$(grep -c '^job-1-a1 ' "$D/ledger")" "steps of attempt 1 = the checkpoint's step"
}

w_ckpt_at_least() { # JOB STEP
  local s; s=$(tr_job "$1" 'd["checkpoint_step"] or 0')
  [ "$s" -ge "$2" ]
}

# Cancel while the trainer runs: SIGTERM to its group, SIGKILL after --trainer-kill-grace when it ignores
# SIGTERM; the job stays cancelled, no process of the group is left, the worker leases again.
t_cancel_kills_the_group() {
  w_setup
  w_server
  tr_spec "$D/spec.json" cn '["4,4,4,4"]' '[5]' 2000 0
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --step-s 0.02 --spawn --ignore-term" --trainer-kill-grace 1; local pa=$LAST_PID
  w_wait 30 "training" w_job_step_at_least 1 5
  local pids; pids=$(cat "$D"/work-wa/job-1-a1/pids)
  w_post /api/v1/jobs/1/cancel '{}' > /dev/null
  w_wait 20 "the trainer's group gone after cancel" tr_gone $pids
  grep -q 'event=stopped device=cpu job=1 attempt=1' "$D/wa.log" || { w_dump; fail "no stopped event"; }
  grep -q 'did not stop within 1 s of SIGTERM' "$D/wa.log" || { w_dump; fail "no SIGKILL after the grace"; }
  assert_eq cancelled "$(tr_job 1 'd["state"]')" "state"
  kill -0 "$pa" || fail "the worker exited after the cancel"
}

# A halving rung (stop_at_step): the trainer gets PRISM_STOP_AT_STEP, says "paused" after its checkpoint, the
# rung is reported; the promoted job resumes from the rung's checkpoint and completes.
t_rung_stop_and_resume() {
  w_setup
  w_server
  tr_spec "$D/spec.json" hv '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1]' 40 0 fake '{"halving": {"eta": 3, "rungs": [0.5]}}'
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE" --idle-exit 2
  w_exit "$LAST_PID" 90; assert_eq 0 "$W_RC" "worker exit"
  grep -q 'fake trainer: devices=cpu resume= stop_at=20 ' "$D/wa.log" || { w_dump; fail "no PRISM_STOP_AT_STEP=20"; }
  grep -q 'event=rung device=cpu job=' "$D/wa.log" || { w_dump; fail "no rung reported"; }
  grep -q "fake trainer: devices=cpu resume=$D/ckpt/job-[0-9]*-a1/resume-20.bin stop_at=0" "$D/wa.log" \
    || { w_dump; fail "the promoted job did not resume from its rung checkpoint"; }
  local done; done=$(w_count "$sid" done)
  [ "$done" -ge 1 ] && [ "$done" -lt 3 ] || fail "jobs done after the rung: $done (expected the promoted ones, 1 or 2 of 3)"
  grep -c 'event=rung device=cpu job=' "$D/wa.log" | grep -qx 3 || { w_dump; fail "not 3 rungs reported"; }
}

# docs/TRAINERS.md's minimal trainer, as the document prints it, trains a job through a real worker.
t_docs_minimal_trainer() {
  w_setup
  w_server
  /usr/bin/python3 - "$PRISM_ROOT/docs/TRAINERS.md" "$D/mini.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"## A minimal trainer.*?```python\n(.*?)```", text, re.S).group(1)
open(sys.argv[2], "w").write(block)
PY
  [ -s "$D/mini.py" ] || fail "no python block under 'A minimal trainer' in docs/TRAINERS.md"
  local n; n=$(grep -cv '^$' "$D/mini.py")
  echo "the minimal trainer: $n lines"
  [ "$n" -le 25 ] || fail "the minimal trainer has grown to $n lines (the doc promises about 20)"
  tr_spec "$D/spec.json" mini '["4,4,4,4"]' '[1]' 30 0 "" '{"trainer": {"name": "mini", "args": {"scale": 3.0}}}'
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "mini=/usr/bin/python3 $D/mini.py" --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "worker exit"
  assert_eq done "$(tr_job 1 'd["state"]')" "state of the minimal trainer's job"
  assert_eq "0-29/30/30" "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_steps)" "train steps"
  # its own option (trainer.args.scale 3 instead of 4): val_loss 3 / (1 + 30/10); its start line's version
  assert_eq "0.75 mini 1" "$(tr_job 1 '"%g %s" % (d["result"]["val_loss"], d["result"]["trainer_version"])')" \
    "val_loss under trainer.args and the declared version"
}

harness_main "$@"
