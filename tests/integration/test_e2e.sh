#!/usr/bin/env bash
# test_e2e.sh — a whole sweep end to end: a real orchestrator on loopback, real prism-worker agents
# training tiny models on the CPU, and the failures the agent must survive.
# timeout: 150
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

# Two CPU workers finish a 3-schedule × 2-seed sweep: every job done exactly once (attempt 1, one "done"
# event in the logs), every schedule on the leaderboard with both seeds and the paired comparison.
t_two_workers_finish_sweep() {
  w_setup
  w_server --lease-ttl 5
  w_spec "$D/spec.json" e2e '["1,1,4,4", "2,2,4,4"]' '[11, 22]' 60
  local sid; sid=$(w_create "$D/spec.json")
  assert_eq 6 "$(w_get "/api/v1/sweeps/$sid" | w_json 'd["total"]')" "jobs created"
  w_worker wa; local pa=$LAST_PID
  w_worker wb; local pb=$LAST_PID
  w_wait 100 "all 6 jobs done" w_all_done "$sid" 6

  local jobs; jobs=$(w_get "/api/v1/sweeps/$sid/jobs")
  assert_eq '[1, 1, 1, 1, 1, 1]' "$(echo "$jobs" | w_json 'sorted(j["attempt"] for j in d["jobs"])')" "attempts"
  assert_eq 6 "$(echo "$jobs" | w_json 'len({j["id"] for j in d["jobs"] if j["state"] == "done"})')" "done jobs"
  # each job reported done by exactly one worker, once
  local done_ids; done_ids=$(cat "$D/wa.log" "$D/wb.log" | grep -o 'event=done device=cpu job=[0-9]*' | sort)
  assert_eq 6 "$(echo "$done_ids" | wc -l)" "done events: $done_ids"
  assert_eq 6 "$(echo "$done_ids" | sort -u | wc -l)" "distinct jobs done: $done_ids"
  grep -q 'event=done' "$D/wa.log" || fail "worker wa trained nothing"
  grep -q 'event=done' "$D/wb.log" || fail "worker wb trained nothing"
  grep -q 'event=progress device=cpu job=[0-9]* attempt=1 schedule=[0-9,]* step=[0-9]*/60 loss=' "$D/wa.log" \
    || fail "no structured progress line in wa.log: $(head -n 5 "$D/wa.log")"
  # every train step of every job stored once
  local j
  for j in $(echo "$jobs" | w_json '" ".join(str(j["id"]) for j in d["jobs"])'); do
    assert_eq "0-59/60/60" "$(w_get "/api/v1/jobs/$j/metrics?kind=train" | w_steps)" "train steps of job $j"
  done

  local lb; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  assert_eq 3 "$(echo "$lb" | w_json 'len(d["rows"])')" "leaderboard rows"
  assert_eq '[[1, 1, 4, 4], [2, 2, 4, 4], [4, 4, 4, 4]]' "$(echo "$lb" | w_json 'sorted(r["heads"] for r in d["rows"])')" "schedules"
  assert_eq '[2, 2, 2]' "$(echo "$lb" | w_json '[r["seeds_done"] for r in d["rows"]]')" "seeds done"
  assert_eq '[[11, 22], [11, 22], [11, 22]]' "$(echo "$lb" | w_json '[sorted(v["seed"] for v in r["val_losses"]) for r in d["rows"]]')" "seeds"
  # the paired comparison against uniform: n = 2 seeds, a CI, for both non-baseline rows
  assert_eq '[2, 2]' "$(echo "$lb" | w_json '[r["delta"]["n"] for r in d["rows"] if not r["is_baseline"]]')" "paired n"
  assert_eq 'true' "$(echo "$lb" | w_json 'all(r["delta"]["ci_low"] <= r["delta"]["mean"] <= r["delta"]["ci_high"] for r in d["rows"] if not r["is_baseline"])')" "CI around the mean"
  assert_eq 'true' "$(echo "$lb" | w_json 'all(len(r["attn_distance"]) == 4 for r in d["rows"])')" "attention distance per layer"

  kill -TERM "$pa" "$pb" "$SERVER_PID"
  wait "$pa" || fail "worker wa exit status $? after SIGTERM"
  wait "$pb" || fail "worker wb exit status $? after SIGTERM"
  wait "$SERVER_PID"
  local table; table=$("$(bin prism-sweep)" leaderboard --db "$D/prism.db" e2e)
  echo "$table"
  echo "$table" | grep -q '4×4 .* 2/2 .*(uniform baseline)' || fail "baseline row missing"
  echo "$table" | grep -q '2×2 4×2 .* 2/2 .* n=2' || fail "2,2,4,4 row missing"
  echo "$table" | grep -q '1×2 4×2 .* 2/2 .* n=2' || fail "1,1,4,4 row missing"
}

# kill -9 of a worker mid-job: the lease expires, the other worker re-leases the job, resumes from the
# last reported checkpoint (its first metric is that step), completes; no step counted twice.
t_worker_kill9_resumes_elsewhere() {
  w_setup
  w_server --lease-ttl 3
  w_spec "$D/spec.json" k9 '["4,4,4,4"]' '[5]' 5000 250
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa; local pa=$LAST_PID
  w_wait 60 "a checkpoint reported" w_ckpt_at_least 1 250
  kill -KILL "$pa"
  local k; k=$(w_get /api/v1/jobs/1 | w_json 'd["checkpoint_step"]')
  w_worker wb
  w_wait 100 "job done" w_all_done "$sid" 1
  local job; job=$(w_get /api/v1/jobs/1)
  assert_eq 2 "$(echo "$job" | w_json 'd["attempt"]')" "attempt after the re-lease"
  grep -q "job=1 attempt=2 resuming from step $k " "$D/wb.log" || { w_dump; fail "wb did not resume from step $k"; }
  local m; m=$(w_get "/api/v1/jobs/1/metrics?kind=train")
  assert_eq "0-4999/5000/5000" "$(echo "$m" | w_steps)" "train curve steps"
  assert_eq "$k" "$(echo "$m" | w_json 'min(p["step"] for p in d["points"] if p["attempt"] == 2)')" "first step of attempt 2"
  # what attempt 2 stored: exactly the steps from the checkpoint on, each once
  local rows; rows=$(sqlite3 "file:$D/prism.db?mode=ro" "SELECT count(*), count(DISTINCT step), min(step), max(step) FROM metrics WHERE job_id=1 AND attempt=2 AND kind='train'")
  assert_eq "$((5000 - k))|$((5000 - k))|$k|4999" "$rows" "attempt 2 train rows"
}

w_ckpt_at_least() { # JOB STEP
  local s; s=$(w_get "/api/v1/jobs/$1" | w_json 'd["checkpoint_step"] or 0')
  [ "$s" -ge "$2" ]
}

# kill -9 of the orchestrator while workers train: restart it; the workers carry on, re-send what was
# not acknowledged, and every point acknowledged before the kill is still there.
t_orchestrator_kill9_nothing_acknowledged_lost() {
  w_setup
  w_server --lease-ttl 8
  # long enough that training outlasts the outage and the workers' backoff even on an idle machine
  w_spec "$D/spec.json" ok9 '["4,4,4,4"]' '[1, 2]' 8000 500
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa; w_worker wb
  w_wait 60 "both jobs past step 400" w_both_past 400
  # what the server acknowledged so far (a 2xx means committed)
  w_curve 1 train > "$D/before1.json"
  w_curve 2 train > "$D/before2.json"
  local n1; n1=$(w_json 'len(d["points"])' < "$D/before1.json")
  kill -KILL "$SERVER_PID"
  sleep 1.5
  w_server --lease-ttl 8
  w_wait 100 "both jobs done" w_all_done "$sid" 2
  local j
  for j in 1 2; do
    w_curve "$j" train > "$D/after$j.json"
    assert_eq "0-7999/8000/8000" "$(w_steps < "$D/after$j.json")" "job $j train steps after the restart"
    # every point acknowledged before the kill is still there, unchanged
    /usr/bin/python3 - "$D/before$j.json" "$D/after$j.json" <<'EOF2' || fail "acknowledged points of job $j lost or changed"
import json, sys
b = {p["step"]: p["value"] for p in json.load(open(sys.argv[1]))["points"]}
a = {p["step"]: p["value"] for p in json.load(open(sys.argv[2]))["points"]}
bad = [s for s in b if a.get(s) != b[s]]
print(len(b), "points acknowledged before the kill;", len(bad), "lost or changed", bad[:5])
sys.exit(1 if bad or not b else 0)
EOF2
  done
  [ "$n1" -ge 300 ] || fail "only $n1 points were acknowledged before the kill"
  assert_eq '[1, 1]' "$(w_get "/api/v1/sweeps/$sid/jobs" | w_json 'sorted(j["attempt"] for j in d["jobs"])')" "no lease lost"
  grep -q 'retrying with backoff' "$D/wa.log" "$D/wb.log" || { w_dump; fail "no worker saw the outage"; }
  grep -q 'server reachable again' "$D/wa.log" "$D/wb.log" || { w_dump; fail "no worker saw the recovery"; }
}

w_both_past() {
  local js; js=$(w_get "/api/v1/sweeps/1/jobs")
  [ "$(echo "$js" | w_json 'sum(1 for j in d["jobs"] if j["state"] == "leased" and j["step"] >= '"$1"')')" = 2 ]
}

# Cancel from the admin API stops the job on the worker within one heartbeat period; the worker then
# takes the next job.
t_cancel_stops_job_within_heartbeat() {
  w_setup
  w_server --lease-ttl 10
  w_spec "$D/spec.json" cx '["2,2,4,4"]' '[1, 2]' 100000
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --heartbeat 1 --flush 5
  w_wait 30 "job 1 leased" grep -q 'event=leased device=cpu job=1 ' "$D/wa.log"
  sleep 1.2
  local t0; t0=$(date +%s.%N)
  assert_contains "$(w_post /api/v1/jobs/1/cancel '{}')" '"cancelled"'
  local i
  for i in $(seq 1 100); do   # 50 ms polls: the measurement is the point here
    grep -q 'event=stopped device=cpu job=1 ' "$D/wa.log" && break
    sleep 0.05
  done
  local t1; t1=$(date +%s.%N)
  grep -q 'event=stopped device=cpu job=1 ' "$D/wa.log" || { w_dump; fail "job 1 not stopped 5 s after the cancel"; }
  local dt; dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
  echo "stopped ${dt}s after the cancel (heartbeat 1 s)"
  awk -v d="$dt" 'BEGIN{exit !(d <= 1.5)}' || fail "job stopped ${dt}s after the cancel; heartbeat period is 1 s"
  w_wait 20 "the worker leases the next job" grep -qE 'event=leased device=cpu job=[2-9] ' "$D/wa.log"
  assert_eq cancelled "$(w_get /api/v1/jobs/1 | w_json 'd["state"]')" "job 1 state"
}

# A job whose data path does not exist fails (not retryable) naming the path; the worker goes on.
t_missing_data_fails_with_path_then_next_job() {
  w_setup
  w_server --lease-ttl 5
  w_spec "$D/bad.json" bad '["4,4,4,4"]' '[1]' 20 0 "nope/missing_train_*.bin" 5
  w_spec "$D/good.json" good '["4,4,4,4"]' '[1]' 20
  local sbad sgood; sbad=$(w_create "$D/bad.json"); sgood=$(w_create "$D/good.json")
  w_worker wa
  w_wait 60 "the good job done" w_all_done "$sgood" 1
  local j; j=$(w_get "/api/v1/sweeps/$sbad/jobs" | w_json 'd["jobs"][0]')
  assert_eq failed "$(echo "$j" | w_json 'd["state"]')" "bad job state"
  assert_eq 1 "$(echo "$j" | w_json 'd["attempt"]')" "bad data is not retried"
  assert_contains "$(echo "$j" | w_json 'd["last_error"]')" "nope/missing_train_"
  grep -q 'event=failed device=cpu job=1 attempt=1 retryable=0 .*nope/missing_train_' "$D/wa.log" || { w_dump; fail "no failure line naming the path"; }
}

# `make demo`'s driver (tools/demo.sh) on a small spec: dataset, sweep, orchestrator, worker, leaderboard;
# and it runs again in the same directory without any cleanup.
t_demo_script_runs_twice() {
  local d; d=$(tmpdir)
  cat > "$d/spec.json" <<'EOF'
{ "name": "demo-smoke",
  "model": {"n_layer": 4, "d_model": 32, "vocab_size": 256, "padded_vocab_size": 256, "seq_len": 16},
  "rules": {"h_base": 4}, "schedules": ["2,2,4,4"], "seeds": [1, 2],
  "train": {"batch_size": 2, "seq_len": 16, "steps": 20, "lr": 0.003},
  "eval": {"every": 10, "batches": 2, "attn_distance": true},
  "data": {"train": "data/*train*.bin", "val": "data/*val*.bin"} }
EOF
  local run out
  for run in 1 2; do
    out=$(cd "$PRISM_ROOT" && BUILD="$PRISM_BUILD" DEMO_DIR="$d/demo" DEMO_SPEC="$d/spec.json" DEMO_PORT=$(free_port) \
          OMP_NUM_THREADS=1 bash tools/demo.sh 2>&1) || { echo "$out" | tail -n 30; fail "demo run $run failed"; }
    assert_contains "$out" "leaderboard (live): http://127.0.0.1:"
    assert_contains "$out" "event=done"
    echo "$out" | grep -q '4×4 .* 2/2 .*(uniform baseline)' || { echo "$out" | tail -n 12; fail "run $run: no baseline row"; }
    echo "$out" | grep -q '2×2 4×2 .* 2/2 .* n=2' || { echo "$out" | tail -n 12; fail "run $run: no 2,2,4,4 row"; }
  done
  [ ! -e "$d/demo/server.pid" ] || fail "the demo left its orchestrator running"
}

harness_main "$@"
