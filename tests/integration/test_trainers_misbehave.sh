#!/usr/bin/env bash
# test_trainers_misbehave.sh — an external trainer that misbehaves fails its job with an error naming the
# cause, and nothing else: the sweep's other job is trained, the failed job's points before the bad line are
# kept, the worker goes on leasing, and no process of the trainer's group (it starts a child) is left.
# Cases: crash, hang (--trainer-timeout), garbage, a huge line, NaN, a checkpoint outside PRISM_OUT, exit 0
# without a result, steps going backwards, a step past the job's, an unknown key, a result naming the job or the
# backend or with a 60 KB key; a COMMAND that does not exist. And (issue #40): a result the server's rules refuse
# (the zombie repro: failed at once, not left leased until the TTL; the server's own 400 likewise), a diverged
# result, "failed" lines (oom retried, diverged not), divergences that trip neither fail limit; and what is not a
# failure: a line or a slow exit after a valid result (a warning, the job done), heartbeat lines (keep-alive).
# Real `prism-sweep serve`, a real `prism-worker`, the fake trainer (tests/integration/fake_trainer.py).
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

assert_not_contains() { case "$1" in *"$2"*) fail "${3:-text}: did not expect [$2] in: $1";; esac; }

# misbehave MODE EXPECTED_ERROR [worker flags]: the job of seed 1 misbehaves after 2 steps, the job of seed 2 is fine.
misbehave() {
  local mode=$1 want=$2; shift 2
  w_setup
  w_server
  tr_spec "$D/spec.json" mb '["4,4,4,4"]' '[1, 2]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad $mode --spawn" --idle-exit 1 "$@"
  w_exit "$LAST_PID" 60
  assert_eq 0 "$W_RC" "worker exit status (it went on after the failure)"
  local jobs; jobs=$(w_get "/api/v1/sweeps/$sid/jobs")
  local bad good
  bad=$(echo "$jobs" | w_json '[j["id"] for j in d["jobs"] if j["seed"] == 1][0]')
  good=$(echo "$jobs" | w_json '[j["id"] for j in d["jobs"] if j["seed"] == 2][0]')
  assert_eq failed "$(tr_job "$bad" 'd["state"]')" "state of the misbehaving job"
  local e; e=$(tr_job "$bad" 'd["last_error"]')
  echo "error: $e"
  assert_contains "$e" "$want"
  assert_eq done "$(tr_job "$good" 'd["state"]')" "state of the other job"
  assert_eq "0-11/12/12" "$(w_get "/api/v1/jobs/$good/metrics?kind=train" | w_steps)" "train steps of the other job"
  assert_eq "0-1/2/2" "$(w_get "/api/v1/jobs/$bad/metrics?kind=train" | w_steps)" "points the bad job sent before its bad line"
  local pids; pids=$(cat "$D/work-wa/job-$bad-a1/pids") || fail "no pids file of the misbehaving trainer"
  w_wait 5 "the misbehaving trainer and its child gone" tr_gone $pids
}

t_crash() { misbehave crash "trainer failed: trainer fake: exited with status 3 (crashed); its last log lines: "; \
            assert_contains "$(tr_job 1 'd["last_error"]')" "Traceback: boom at step 2"; }
t_hang_times_out() { misbehave hang "no line on fd 3 for 2 s (--trainer-timeout 2)" --trainer-timeout 2; }
t_garbage_line() { misbehave garbage "trainer fake: line 3: not a JSON object"; }
t_huge_line() { misbehave huge "trainer fake: line 3: longer than 65536 bytes"; }
t_nan_loss() { misbehave nan "loss is not finite: trainer fake: line 3: a number is not finite (NaN or Infinity)"; }
t_checkpoint_outside_its_dir() { misbehave escape "line 3: checkpoint: path \"../outside-"; \
                                 assert_contains "$(tr_job 1 'd["last_error"]')" "is outside the job's directory PRISM_OUT"; }
t_exit0_without_result() { misbehave noresult "trainer fake: exited 0 without a result line (after 2 lines on fd 3)"; }
t_steps_backwards() { misbehave backwards "line 3: train: step 0 does not come after step 1"; }
t_step_past_the_job() { misbehave over "line 3: train: step: 17 is outside 0..11 (the job's train.steps is 12"; }
# A result may not name the job (another one's id), the backend (a spoofed CUDA library) or carry a 60 KB key: the
# job fails naming it, and nothing of that result is stored.
t_result_names_a_job() { misbehave resultjob "line 3: result: result.job_id: a trainer may not set it"; \
                         assert_eq None "$(tr_job 1 'd.get("result")')" "the refused result stored"; }
t_result_spoofs_the_backend() { misbehave resultbackend "line 3: result: result.backend: a trainer may not set it"; }
t_result_key_too_long() { misbehave resultlongkey "line 3: result: a key of 60000 bytes (\"kkkk"; \
                          assert_contains "$(tr_job 1 'd["last_error"]')" "keys are at most 64 bytes"; }
t_unknown_key() { misbehave unknown "line 3: train: unknown key \"losss\" (known: step train_loss lr grad_norm tokens tok_per_s extra)"; }

# A "failed" line: the trainer names the cause and says whether a retry may help. oom, retryable: the job goes back
# to the queue and fails for good once --max-attempts (2) is used up, with the trainer's message; diverged: failed
# at once, "diverged: MESSAGE" as the built-in engine's divergence reads.
t_failed_event_oom_is_retried() {
  w_setup
  w_server --max-attempts 2
  tr_spec "$D/spec.json" oom '["4,4,4,4"]' '[1, 2]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad failoom --spawn" --idle-exit 1
  w_exit "$LAST_PID" 60
  local e a; e=$(tr_job 1 'd["last_error"]'); a=$(tr_job 1 'd["attempt"]')
  echo "error: $e; attempts $a (--max-attempts 2)"
  assert_contains "$e" "trainer failed: trainer fake: failed (oom, retryable): CUDA out of memory (tried to allocate 2.00 GiB)"
  assert_eq 2 "$a" "leases of a retryable failure"
  assert_eq failed "$(tr_job 1 'd["state"]')" "state once its attempts are used up"
  assert_eq done "$(tr_job 2 'd["state"]')" "the other job"
  assert_eq 2 "$(grep -c 'retryable=1 trainer failed: trainer fake: failed (oom' "$D/wa.log")" "retryable failures logged"
  local p; for p in 1 2; do w_wait 5 "trainer of attempt $p gone" tr_gone $(cat "$D/work-wa/job-1-a$p/pids"); done
}
t_failed_event_diverged() {
  misbehave faildiverged "diverged: step 2: validation loss 9.1 is above 4.57 (the trainer's own check)"
  assert_eq 1 "$(tr_job 1 'd["attempt"]')" "leases of a divergence (never retried)"
}
# A result whose val_loss is worse than guessing is a divergence too, found before complete.
t_result_diverged() { misbehave resultdiverged "diverged: result.val_loss: 9 is above 4.57"; }

# A rung (halving) whose val loss is worse than guessing: the worker checks it with the server's bound and fails
# the job "diverged: ..." at once. Before: the server's 400 on the rung report was a report-error, and the job
# stayed leased until its TTL.
t_rung_diverged() {
  w_setup
  w_server
  tr_spec "$D/spec.json" rd '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1]' 40 0 fake '{"halving": {"eta": 3, "rungs": [0.5]}}'
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad pauseddiverged" --idle-exit 2 --fail-limit 0
  w_exit "$LAST_PID" 60
  echo "failed $(w_count "$sid" failed); job 1: $(tr_job 1 'd["state"]') $(tr_job 1 'd.get("last_error")')"
  assert_eq 3 "$(w_count "$sid" failed)" "failed jobs"
  assert_contains "$(tr_job 1 'd["last_error"]')" "diverged: paused.val_loss: 9 is above 4.57477"
  assert_not_contains "$(cat "$D/wa.log")" "report-error" "worker log"
}

# Neither fail limit counts a divergence: 3 jobs in a row diverge on one worker (--fail-limit 2, the server's
# --worker-fail-limit 2) and it leases all three and the fourth, which trains. Before: the server refused its
# lease after two ("stopped"), and the worker's own limit counted them as trainer failures.
t_divergences_do_not_trip_the_fail_limits() {
  w_setup
  w_server --worker-fail-limit 2
  tr_spec "$D/spec.json" dv '["4,4,4,4"]' '[1, 2, 3, 4]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad faildiverged --bad-seed 1,2,3" --idle-exit 1 --fail-limit 2
  w_exit "$LAST_PID" 60
  echo "worker exit $W_RC; failed $(w_count "$sid" failed), done $(w_count "$sid" done)"
  assert_eq 0 "$W_RC" "worker exit status (no fail-limit stop)"
  assert_eq 3 "$(w_count "$sid" failed)" "diverged jobs"
  assert_eq 1 "$(w_count "$sid" done)" "the job that trains"
  assert_not_contains "$(cat "$D/wa.log")" "fail-limit" "worker log"
  assert_not_contains "$(cat "$D/wa.log")" "lease-refused" "worker log"
}

# The zombie repro (issue #40): a result the server's rules refuse (params: 0). Before: the worker logged
# report-error and leased the next job, each job stayed leased until its TTL, was retrained, and 6 jobs made 12
# leases and failed as "lease expired". Now the worker checks the result with the server's table
# (common/result_check.c) and fails the job at once, not retryable, naming the rule: 6 leases, 6 failures.
t_refused_result_fails_its_job_at_once() {
  w_setup
  w_server --lease-ttl 4 --max-attempts 2 --worker-fail-limit 0
  tr_spec "$D/spec.json" zb '["4,4,4,4"]' '[1, 2, 3, 4, 5, 6]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad resultparams --bad-seed 0" --idle-exit 6 --fail-limit 0
  w_exit "$LAST_PID" 90
  local leases; leases=$(grep -c "event=leased" "$D/wa.log")
  echo "leases: $leases (12 before: every job leased again after its lease expired)"
  assert_eq 6 "$leases" "leases of 6 jobs"
  assert_eq 6 "$(w_count "$sid" failed)" "failed jobs"
  local j e
  for j in 1 2 3 4 5 6; do
    e=$(tr_job "$j" 'd["last_error"]')
    echo "job $j: $e"
    assert_contains "$e" "trainer failed: trainer fake: invalid result: result.params: 0 is outside [1, 1e+13]"
    assert_not_contains "$e" "lease expired" "job $j"
  done
  assert_not_contains "$(cat "$D/wa.log")" "report-error" "worker log"
}

# Only the server refuses (the worker's own check skipped by a test hook): its 400 on complete becomes a
# non-retryable fail carrying the server's message, at once, not a report-error and an expired lease.
t_complete_refused_by_the_server() {
  w_setup
  w_server --lease-ttl 4 --max-attempts 2
  tr_spec "$D/spec.json" zs '["4,4,4,4"]' '[1, 2]' 12
  local sid; sid=$(w_create "$D/spec.json")
  PRISM_FAULT_SKIP_RESULT_CHECK=1 w_worker wa --trainer "fake=$FAKE --bad resultparams" --idle-exit 6
  w_exit "$LAST_PID" 60
  local e; e=$(tr_job 1 'd["last_error"]')
  echo "error: $e; attempts $(tr_job 1 'd["attempt"]')"
  assert_contains "$e" "trainer failed: trainer fake: the server refused the result: POST /api/v1/jobs/1/complete: HTTP 400: result.params: 0 is outside"
  assert_eq 1 "$(tr_job 1 'd["attempt"]')" "leases of the refused job"
  assert_eq failed "$(tr_job 1 'd["state"]')" "state"
  assert_eq done "$(tr_job 2 'd["state"]')" "the other job"
  assert_eq 2 "$(grep -c "event=leased" "$D/wa.log")" "leases"
}

# A valid result stands whatever follows it: a line after it, or no exit within --trainer-kill-grace. A warning
# is logged, the group (a child included) is killed, the job is done. Before: failed, not retryable.
kept_result() {
  local mode=$1 want=$2
  w_setup
  w_server
  tr_spec "$D/spec.json" kr '["4,4,4,4"]' '[1, 2]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad $mode --spawn" --idle-exit 1 --trainer-kill-grace 1
  w_exit "$LAST_PID" 60
  assert_eq 0 "$W_RC" "worker exit status"
  echo "state of job 1: $(tr_job 1 'd["state"]') $(tr_job 1 'd.get("last_error")')"
  assert_eq done "$(tr_job 1 'd["state"]')" "state of the job whose trainer misbehaved after its result"
  assert_eq done "$(tr_job 2 'd["state"]')" "state of the other job"
  local w; w=$(grep "warning" "$D/wa.log" || true)
  echo "warning: $w"
  assert_contains "$w" "$want"
  local pids; pids=$(cat "$D/work-wa/job-1-a1/pids") || fail "no pids file"
  w_wait 5 "the trainer and its child gone" tr_gone $pids
}
t_line_after_the_result_is_a_warning() { kept_result lineafter ": a line after the terminal \"result\" line (it must be the last): ignored, after its result line (which stands); its process group is killed"; }
t_slow_exit_after_the_result_is_a_warning() { kept_result slowexit "the trainer did not exit within 1 s of its terminal line (--trainer-kill-grace): ignored, after its result line (which stands)"; }

# A heartbeat line is a keep-alive: 3 s of them between two steps, with --trainer-timeout 2, and the job trains.
t_heartbeat_keeps_the_trainer_alive() {
  w_setup
  w_server
  tr_spec "$D/spec.json" hb '["4,4,4,4"]' '[1]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=$FAKE --bad heartbeat" --idle-exit 1 --trainer-timeout 2
  w_exit "$LAST_PID" 60
  echo "state: $(tr_job 1 'd["state"]') $(tr_job 1 'd.get("last_error")')"
  assert_eq done "$(tr_job 1 'd["state"]')" "state of the job that sent heartbeats"
}

# A COMMAND that cannot be started: both jobs fail naming the program and the flag to fix.
t_command_not_found() {
  w_setup
  w_server
  tr_spec "$D/spec.json" nf '["4,4,4,4"]' '[1, 2]' 12
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fake=/nonexistent/trainer --x" --idle-exit 1
  w_exit "$LAST_PID" 30
  assert_eq 0 "$W_RC" "worker exit status"
  assert_eq 2 "$(w_count "$sid" failed)" "failed jobs"
  assert_contains "$(tr_job 1 'd["last_error"]')" "trainer fake: cannot run /nonexistent/trainer: No such file or directory (check --trainer fake=COMMAND"
}

harness_main "$@"
