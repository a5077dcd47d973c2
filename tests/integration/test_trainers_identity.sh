#!/usr/bin/env bash
# test_trainers_identity.sh — an external trainer's per-sweep options, identity and start-up (docs/TRAINERS.md,
# issue #40): the spec's trainer.args reach the trainer (job JSON trainer_args, PRISM_TRAINER_ARGS) beside the
# effective job (PRISM_JOB_EFFECTIVE, what `prism-worker train --print-job` prints); the worker records the
# trainer's COMMAND and its start line's version with the result, and its start-up before the first step
# (setup_s), which the sweep's device_hours counts; a sweep whose results come from two trainer identities says so
# on the leaderboard, in `prism-sweep status` and on the page. Real serve, real agents, tests/integration/probe_trainer.py.
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

PROBE="/usr/bin/python3 ${PRISM_ROOT:-$(pwd)}/tests/integration/probe_trainer.py"

# The args and the effective job as the trainer sees them; its version, command and setup_s on the job's result
# and in the sweep's cost.
t_args_effective_job_identity_and_setup_s() {
  w_setup
  mkdir -p "$D/seen"
  tr_spec "$D/spec.json" targs '["4,4,4,4"]' '[1]' 6 0 "" \
    '{"trainer": {"name": "probe", "args": {"dropout": 0.1, "tag": "exp-7", "fused": true}}, "eval": {"batches": "all"}}'
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "probe=$PROBE $D/seen probe-1.2.3 1" --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "worker exit"
  assert_eq done "$(tr_job 1 'd["state"]')" "state of the probe's job"
  local seen; seen=$(ls "$D"/seen/*.json | head -1)
  [ -n "$seen" ] || { w_dump; fail "the probe trainer recorded nothing"; }
  local want='{"dropout": 0.1, "fused": true, "tag": "exp-7"}'
  assert_eq "$want" "$(w_json 'json.dumps(d["args_env"], sort_keys=True)' < "$seen")" "PRISM_TRAINER_ARGS"
  assert_eq "$want" "$(w_json 'json.dumps(d["raw"]["trainer_args"], sort_keys=True)' < "$seen")" "the job's trainer_args"
  assert_eq probe "$(w_json 'd["raw"]["trainer"]' < "$seen")" "the job's trainer"
  # the effective job: every default written out, the same as the C normalisation (--print-job) of the raw job
  w_json 'json.dumps(d["raw"])' < "$seen" > "$D/raw.json"
  "$(bin prism-worker)" train "$D/raw.json" --out "$D/o" --print-job > "$D/printed.json" || fail "--print-job refused the raw job"
  assert_eq "$(w_json 'json.dumps(d, sort_keys=True)' < "$D/printed.json")" \
    "$(w_json 'json.dumps(d["effective"], sort_keys=True)' < "$seen")" "PRISM_JOB_EFFECTIVE = --print-job of PRISM_JOB"
  assert_eq '[false, 0.1, "all", 1]' "$(w_json 'json.dumps(["weight_decay" in d["raw"]["train"], d["effective"]["train"]["weight_decay"], d["effective"]["eval"]["batches"], d["effective"]["train"]["seed"]])' < "$seen")" \
    "a default the raw job lacks is in the effective one"
  case "$(w_json 'd["effective_path"]' < "$seen")" in */job-effective.json) ;; *) fail "PRISM_JOB_EFFECTIVE: $(cat "$seen")" ;; esac
  local r; r=$(w_get /api/v1/jobs/1)
  assert_eq "probe-1.2.3" "$(echo "$r" | w_json 'd["result"]["trainer_version"]')" "result.trainer_version"
  assert_eq "$PROBE $D/seen probe-1.2.3 1" "$(echo "$r" | w_json 'd["result"]["trainer_command"]')" "result.trainer_command"
  local setup; setup=$(echo "$r" | w_json 'd["result"]["setup_s"]')
  echo "setup_s $setup (the probe sleeps 1 s before its first step)"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$setup') >= 1.0 else 1)" || fail "setup_s $setup < 1 s"
  local hours; hours=$(w_get "/api/v1/sweeps/$sid" | w_json 'd["cost"]["device_hours"] * 3600')
  echo "device seconds $hours = wall_s 0.5 + setup_s $setup"
  /usr/bin/python3 -c "import sys; sys.exit(0 if abs($hours - 0.5 - $setup) < 1e-6 else 1)" \
    || fail "device_hours x 3600 = $hours, expected wall_s 0.5 + setup_s $setup"
}

# Two workers with the same trainer NAME but another COMMAND and version: the leaderboard lists both identities
# and says the ranking mixes them; `prism-sweep status` prints the warning; one identity says nothing.
t_mixed_trainer_identities_are_said() {
  w_setup
  mkdir -p "$D/seen"
  tr_spec "$D/spec.json" mixed '["4,4,4,4", "2,2,4,4"]' '[1, 2]' 5 0 probe
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "probe=$PROBE $D/seen v1" --max-jobs 2 --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "worker wa exit"
  local lb; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  assert_eq 1 "$(echo "$lb" | w_json 'len(d["trainer_identities"])')" "identities after the first worker"
  assert_eq false "$(echo "$lb" | w_json '"trainer_note" in d')" "no note for one identity"
  w_worker wb --trainer "probe=$PROBE $D/seen v2" --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "worker wb exit"
  w_all_done "$sid" 4 || { w_dump; fail "not all 4 jobs done"; }
  lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  echo "$lb" | w_json 'd["trainer_identities"]'
  assert_eq '[["v1", 2], ["v2", 2]]' "$(echo "$lb" | w_json 'sorted([i["version"], i["jobs"]] for i in d["trainer_identities"])')" \
    "identities (version, jobs)"
  local note; note=$(echo "$lb" | w_json 'd["trainer_note"]')
  echo "note: $note"
  assert_contains "$note" "results from 2 trainer identities"
  assert_contains "$note" "$D/seen v2"
  local st; st=$("$(bin prism-sweep)" status "$sid" --db "$D/prism.db" 2>&1)
  assert_contains "$st" "WARNING: results from 2 trainer identities"
  local tb; tb=$("$(bin prism-sweep)" leaderboard "$sid" --db "$D/prism.db" 2>&1)
  assert_contains "$tb" "WARNING: results from 2 trainer identities"
  assert_eq '"results from 2' "$("$(bin prism-sweep)" status "$sid" --db "$D/prism.db" --format json | w_json 'json.dumps(d["trainer_note"])' | cut -c1-15)" \
    "status --json trainer_note"
  # the page shows trainer_note: tests/web/test_leaderboard.py mixed_trainer_identities_warned
}

# A spec's trainer.args are checked at create: exit 2 naming the key and the fix.
t_bad_trainer_args_exit_2() {
  w_setup
  tr_spec "$D/spec.json" bad '["4,4,4,4"]' '[1]' 5 0 "" '{"trainer": {"name": "probe", "args": {"layers": [1, 2]}}}'
  local out rc=0
  out=$("$(bin prism-sweep)" create "$D/spec.json" --db "$D/x.db" 2>&1) || rc=$?
  echo "$out"
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "trainer.args.layers: must be a string, a number or a boolean, got an array"
}

# The reference torch trainer takes the args it knows (its command-line options) and refuses any other, exit 2
# naming it before any line; it declares its version in a start line and reports its own setup_s.
t_torch_trainer_args_version_and_setup_s() {
  "/usr/bin/python3" -c 'import torch' 2>/dev/null || skip "python3-torch is not installed (make deps installs it)"
  local d; d=$(tmpdir)
  "$(bin prism-data)" synth --out "$d/data" --tokens 60k --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"
  local job='{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 32, "heads": [2, 4]},
 "train": {"batch_size": 4, "steps": 3, "lr": 0.004}, "eval": {"batches": 2},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}, "trainer": "torch"'
  echo "$job, \"trainer_args\": {\"dropout\": 0.1}}" > "$d/bad.json"
  echo "$job, \"trainer_args\": {\"precision\": \"fp32\", \"attention\": \"math\"}}" > "$d/ok.json"
  local out rc=0
  mkdir -p "$d/b" "$d/o"
  out=$(cd "$d" && PRISM_JOB="$d/bad.json" PRISM_OUT="$d/b" PRISM_DATA_ROOT="$d" PRISM_DEVICES=cpu PRISM_RESUME= \
        PRISM_STOP_AT_STEP=0 OMP_NUM_THREADS=1 /usr/bin/python3 "$PRISM_ROOT/trainers/torch/train.py" --threads 1 \
        3>"$d/b/lines.jsonl" 2>&1) || rc=$?
  echo "$out" | tail -2
  assert_eq 2 "$rc" "exit for an unknown trainer arg"
  assert_contains "$out" "trainer_args.dropout: not an option of the torch trainer (known: attention, compile, precision)"
  [ ! -s "$d/b/lines.jsonl" ] || fail "lines were written before the refusal: $(cat "$d/b/lines.jsonl")"
  (cd "$d" && PRISM_JOB="$d/ok.json" PRISM_OUT="$d/o" PRISM_DATA_ROOT="$d" PRISM_DEVICES=cpu PRISM_RESUME= \
        PRISM_STOP_AT_STEP=0 OMP_NUM_THREADS=1 /usr/bin/python3 "$PRISM_ROOT/trainers/torch/train.py" --threads 1 \
        3>"$d/o/lines.jsonl") || fail "the torch trainer with known args exited $?"
  /usr/bin/python3 "$PRISM_ROOT/tests/integration/protocol_check.py" "$d/o/lines.jsonl" "$d/o" 3 result || fail "protocol"
  local first; first=$(head -1 "$d/o/lines.jsonl")
  echo "first line: $first"
  assert_contains "$first" '"event":"start","version":"prism-torch-trainer/1 torch/'
  local setup; setup=$(tail -1 "$d/o/lines.jsonl" | w_json 'd["result"]["setup_s"]')
  echo "setup_s $setup"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$setup') > 0 else 1)" || fail "setup_s $setup is not > 0"
}

harness_main "$@"
