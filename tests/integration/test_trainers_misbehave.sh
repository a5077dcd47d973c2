#!/usr/bin/env bash
# test_trainers_misbehave.sh — an external trainer that misbehaves fails its job with an error naming the
# cause, and nothing else: the sweep's other job is trained, the failed job's points before the bad line are
# kept, the worker goes on leasing, and no process of the trainer's group (it starts a child) is left.
# Cases: crash, hang (--trainer-timeout), garbage, a huge line, NaN, a checkpoint outside PRISM_OUT, exit 0
# without a result, steps going backwards, a step past the job's, an unknown key, a result naming the job or the
# backend or with a 60 KB key; a COMMAND that does not exist.
# Real `prism-sweep serve`, a real `prism-worker`, the fake trainer (tests/integration/fake_trainer.py).
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

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
