#!/usr/bin/env bash
# test_export.sh — `prism-sweep export SWEEP --format csv|jsonl|tensorboard --out DIR` and the worker's grad_norm
# stored with each train point: a real server on loopback is fed like a worker (curl), one job over two attempts
# (a retryable failure, then overlapping steps again), then the export is read back by export_check.py, a reader
# of its own (TFRecord framing with masked CRC-32C, Events decoded with python3-protobuf), against the database,
# the HParams plugin's summaries included (every run's hparams equal its job's; the experiment lists them).
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

CHECK="$(dirname "$0")/export_check.py"

# pts FROM TO SEED: train points with grad_norm for steps FROM..TO, and a val point (with val_loss_se) at multiples of 5
pts() {
  /usr/bin/python3 -c 'import json,sys
a, b, s = map(int, sys.argv[1:])
p = []
for i in range(a, b + 1):
    p.append({"step": i, "train_loss": 5.0 - 0.1 * i + 0.01 * s + 1e-9 * i, "lr": 1e-3 * (1 - i / 20), "tok_per_s": 1000.5 + i,
              "grad_norm": 0.75 + 0.031 * i + 0.1 * s})
    if i % 5 == 0:
        p.append({"step": i, "val_loss": 4.9 - 0.09 * i + 0.01 * s, "val_loss_se": 0.0123456789012345 + 1e-3 * i})
print(json.dumps(p))' "$@"
}

# fed: a sweep of 2 schedules x 2 seeds: 3 jobs done, one of them over two attempts and one without any point;
# the fourth left failed
fed() {
  s_setup
  s_spec "$D/s.json" exp '["1,1,4,4", "4,4,4,4"]' '[0, 1]' 10
  SID=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"; local j1=$JOB t1=$TOKEN
  s_expect 200 POST "/api/v1/jobs/$j1/metrics" "{\"lease_token\": \"$t1\", \"points\": $(pts 0 6 0)}"
  s_expect 200 POST "/api/v1/jobs/$j1/fail" "{\"lease_token\": \"$t1\", \"error\": \"worker lost its device\", \"retryable\": true}"
  local n=0
  while :; do
    s_lease "$w"; [ -n "$JOB" ] || break
    n=$((n + 1))
    local seed=$(( JOB % 2 ))
    if [ "$JOB" = "$j1" ]; then
      assert_eq 2 "$ATTEMPT" "the failed job's second attempt"
      s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $(pts 4 10 7)}"
    elif [ "$n" = 2 ]; then
      :   # done without a single point: its run still carries its result
    else
      s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $(pts 0 10 $seed)}"
    fi
    if [ "$n" = 4 ]; then
      s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"nan loss\", \"retryable\": false}"
    else
      s_complete "$JOB" "$TOKEN" "3.2$JOB" "[1.5, 2.25, 3.125, 4.0625]"
    fi
  done
  assert_eq 3 "$(sqlite3 "$DB" "SELECT count(*) FROM jobs WHERE state = 'done'")" "jobs done"
}

t_grad_norm_stored() {
  s_setup
  s_spec "$D/s.json" gn '["4,4,4,4"]' '[0]' 10
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"
  s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 0, \"train_loss\": 5.5, \"grad_norm\": 1.875}, {\"step\": 1, \"train_loss\": 5.25}, {\"step\": 0, \"val_loss\": 5.6, \"grad_norm\": 9}]}"
  assert_eq "0|train|1.875 0|val| 1|train|" "$(sqlite3 "$DB" "SELECT step || '|' || kind || '|' || coalesce(grad_norm, '') FROM metrics ORDER BY step, kind" | tr '\n' ' ' | sed 's/ $//')" "grad_norm stored with the train point only"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=train"
  assert_eq "1.875 null" "$(s_json '[.points[].grad_norm|tostring]|join(" ")')" "grad_norm in the API's points"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=train&format=csv"
  assert_eq "step,value,tokens,lr,tok_per_s,attempt,grad_norm,val_loss_se" "$(echo "$BODY" | head -n1)" "CSV header"
  assert_eq "0,5.5,64,,,1,1.875," "$(echo "$BODY" | sed -n 2p)" "CSV row"
  s_expect 400 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 2, \"train_loss\": 5, \"grad_norm\": \"big\"}]}"
  assert_contains "$BODY" "points[0]: grad_norm must be a number"
  assert_eq 3 "$(sqlite3 "$DB" "SELECT count(*) FROM metrics")" "the refused batch stored nothing"
}

# TensorBoard run names sort as the job ids: zero-padded to the largest id's digits (job01 .. job12, not job1,
# job10, job11, job12, job2, ...); 12 jobs with a result each.
t_export_tensorboard_runs_sort_by_job_id() {
  /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf missing: run make deps"
  s_setup
  s_spec "$D/s.json" many '["4,4,4,4", "2,4,4,4", "1,4,4,4", "2,2,4,4", "1,2,4,4", "1,1,4,4"]' '[0, 1]' 10
  s_create "$D/s.json" >/dev/null
  sqlite3 "$DB" "UPDATE jobs SET state = 'done', finished_at = 1e9; INSERT INTO results (job_id, attempt, val_loss, result, completed_at) SELECT id, 1, 3.0 + id / 100.0, json_object('val_loss', 3.0 + id / 100.0), 1e9 FROM jobs"
  "$(bin prism-sweep)" export many --db "$DB" --format tensorboard --out "$D/tb" >/dev/null || fail "export tensorboard"
  local names; names=$(ls "$D/tb" | grep '^job' | cut -d_ -f1 | tr '\n' ' ')
  assert_eq "job01 job02 job03 job04 job05 job06 job07 job08 job09 job10 job11 job12 " "$names" "run names in ls order"
}

t_export_csv() {
  fed
  local out; out=$("$(bin prism-sweep)" export "$SID" --db "$DB" --format csv --out "$D/csv") || fail "export: $out"
  assert_contains "$out" "4 jobs"
  /usr/bin/python3 "$CHECK" "$DB" "$D/csv" csv "$SID" || fail "csv export differs from the database"
  [ -z "$(ls "$D/csv" | grep tmp)" ] || fail "temporary files left: $(ls "$D/csv")"
  # a done job shows no old error; a failed one shows its own
  assert_eq "," "$(awk -F, -v j=1 'NR > 1 && $1 == j { print substr($0, length($0)) }' "$D/csv/results.csv")" "done job 1: empty last_error"
  grep -q 'nan loss' "$D/csv/results.csv" || fail "the failed job's error is in results.csv"
  grep -q 'worker lost its device' "$D/csv/results.csv" && fail "a done job's earlier error is in results.csv"
  return 0
}

t_export_jsonl() {
  fed
  "$(bin prism-sweep)" export exp --db "$DB" --format jsonl --out "$D/j" >/dev/null || fail "export by name"
  /usr/bin/python3 "$CHECK" "$DB" "$D/j" jsonl "$SID" || fail "jsonl export differs from the database"
}

t_export_tensorboard() {
  /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf missing: run make deps"
  fed
  "$(bin prism-sweep)" export "$SID" --db "$DB" --format tensorboard --out "$D/tb" >/dev/null || fail "export tensorboard"
  assert_eq 4 "$(ls -d "$D"/tb/job* | wc -l)" "one run per job (the failed one has points too)"
  /usr/bin/python3 "$CHECK" "$DB" "$D/tb" tensorboard "$SID" || fail "tensorboard export differs from the database"
}

# The HParams dashboard's data: an external trainer's llama sweep (trainer and trainer_args of a string, a number
# and a boolean; train fields left to job.h's defaults) whose jobs end done, failed, still leased and still queued
# (no run: nothing to show). export_check.py decodes the hparams summaries with python3-protobuf and compares every
# run's session_start_info with its job, the session_end_info with its state, and the experiment with all jobs.
t_export_tensorboard_hparams() {
  /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf missing: run make deps"
  s_setup
  cat >"$D/s.json" <<'EOF2'
{"name": "hp", "model": {"n_layer": 4, "d_model": 64, "vocab_size": 256, "seq_len": 32, "arch": "llama"},
 "rules": {"h_base": 4}, "schedules": ["2,2,4,4", "4,4,4,4"], "seeds": [3, 7],
 "train": {"batch_size": 2, "steps": 10, "lr": 0.002},
 "trainer": {"name": "probe", "args": {"dropout": 0.25, "tag": "exp-7", "fused": true}},
 "eval": {"every": 5}, "data": {"train": "d/train_*.bin", "val": "d/val_*.bin"}}
EOF2
  SID=$(s_create "$D/s.json")
  s_server
  local w n; w=$(s_register w1)
  for n in 1 2 3; do
    s_expect 200 POST /api/v1/lease "{\"worker_id\": $w, \"trainers\": [\"probe\"]}"
    JOB=$(s_json .job_id); TOKEN=$(s_json .lease_token)
    s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $(pts 0 $((n + 4)) $n)}"
    case $n in
      1) s_complete "$JOB" "$TOKEN" 3.5 ;;
      2) s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"nan loss\", \"retryable\": false}" ;;
    esac
  done
  assert_eq "done failed leased queued" "$(sqlite3 "$DB" "SELECT state FROM jobs ORDER BY id" | tr '\n' ' ' | sed 's/ $//')" "job states"
  "$(bin prism-sweep)" export hp --db "$DB" --format tensorboard --out "$D/tb" >/dev/null || fail "export tensorboard"
  assert_eq 3 "$(ls -d "$D"/tb/job* | wc -l)" "a run per job with points"
  /usr/bin/python3 "$CHECK" "$DB" "$D/tb" tensorboard "$SID" >"$D/check" || fail "tensorboard export differs from the database"
  assert_contains "$(cat "$D/check")" "3 sessions' hparams and the experiment's 24 hparams"
}

# A failed job's error comes from a worker or a trainer: in results.csv a cell that a spreadsheet would run as a
# formula (=HYPERLINK(...)) starts with ' and no control byte but LF (an ESC sequence) is written; the text is kept.
t_export_csv_neutralises_formulas_and_control_bytes() {
  s_setup
  s_spec "$D/s.json" inj '["4,4,4,4"]' '[0, 1]' 10
  s_create "$D/s.json" >/dev/null
  sqlite3 "$DB" "UPDATE jobs SET state = 'failed', last_error = '=HYPERLINK(\"http://evil.example\",\"ok\")' || char(27) || '[31m red' || char(10) || 'line 2' WHERE id = 1; UPDATE jobs SET state = 'failed', last_error = '-2+3' WHERE id = 2"
  "$(bin prism-sweep)" export inj --db "$DB" --format csv --out "$D/csv" >/dev/null || fail "export csv"
  ! grep -q $'\x1b' "$D/csv/results.csv" || fail "an ESC byte reached results.csv"
  /usr/bin/python3 - "$D/csv/results.csv" <<'PY' || fail "the neutralised cells"
import csv, sys
rows = {r["job_id"]: r["last_error"] for r in csv.DictReader(open(sys.argv[1], newline=""))}
assert rows["1"] == "'=HYPERLINK(\"http://evil.example\",\"ok\") [31m red\nline 2", repr(rows["1"])
assert rows["2"] == "'-2+3", repr(rows["2"])
PY
}

# A run folder planted under --out as a symlink (to a folder elsewhere) is refused, not followed: nothing is
# written through it.
t_export_tensorboard_does_not_follow_a_planted_symlink() {
  /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf missing: run make deps"
  s_setup
  s_spec "$D/s.json" sym '["4,4,4,4"]' '[0]' 10
  s_create "$D/s.json" >/dev/null
  sqlite3 "$DB" "UPDATE jobs SET state = 'done', finished_at = 1e9; INSERT INTO results (job_id, attempt, val_loss, result, completed_at) SELECT id, 1, 3.0, json_object('val_loss', 3.0), 1e9 FROM jobs"
  mkdir -p "$D/tb" "$D/elsewhere"
  ln -s "$D/elsewhere" "$D/tb/job1_4x4_seed0"
  local rc=0; "$(bin prism-sweep)" export sym --db "$DB" --format tensorboard --out "$D/tb" >"$D/out" 2>"$D/err" || rc=$?
  [ "$rc" != 0 ] || fail "export followed the planted symlink (exit 0)"
  assert_contains "$(cat "$D/err")" "job1_4x4_seed0: is a symlink or not a folder (export did not make it)"
  assert_eq "" "$(ls -A "$D/elsewhere")" "nothing written through the symlink"
}

t_export_bad_input() {
  fed
  local x; x=$(bin prism-sweep)
  "$x" export --db "$DB" --out "$D/o" 2>"$D/err"; assert_eq 2 $? "no SWEEP: exit"
  assert_contains "$(cat "$D/err")" "name the sweep to export"
  "$x" export "$SID" --db "$DB" 2>"$D/err"; assert_eq 2 $? "no --out: exit"
  assert_contains "$(cat "$D/err")" "--out DIR is required"
  "$x" export nosuch --db "$DB" --out "$D/o" 2>"$D/err"; assert_eq 2 $? "unknown sweep: exit"
  assert_contains "$(cat "$D/err")" "nosuch"
  "$x" export "$SID" --db "$DB" --format parquet --out "$D/o" 2>"$D/err"; assert_eq 2 $? "bad format: exit"
  assert_contains "$(cat "$D/err")" "csv|jsonl|tensorboard"
  "$x" export "$SID" --db "$D/none.db" --out "$D/o" 2>"$D/err"; assert_eq 2 $? "missing db: exit"
  [ ! -e "$D/none.db" ] || fail "a missing --db was created"
}

harness_main "$@"
