#!/usr/bin/env bash
# test_trainers_extras.sh — an external trainer's own metrics ("extra": {name: number} on train and val lines and
# in the result; docs/TRAINERS.md): a third-party-style numpy trainer (tests/integration/numpy_trainer.py, not
# the shipped torch one) through a real `prism-sweep serve` and `prism-worker`; its extras reach the job's curve
# route, the result, and the CSV / JSONL / TensorBoard exports (read back by export_check.py); an extra that breaks
# the bounds fails the job naming it, and the metrics route refuses it with the same words.
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

NUMPY="/usr/bin/python3 ${PRISM_ROOT:-$(pwd)}/tests/integration/numpy_trainer.py"
CHECK="$(dirname "$0")/export_check.py"

# numpy_sweep: 2 schedules x 1 seed, 30 steps, trained by the numpy trainer through one worker.
numpy_sweep() {
  w_setup
  tr_spec "$D/spec.json" npx '["4,4,4,4", "2,2,4,4"]' '[3]' 30 0 numpy
  w_server
  SID=$(w_create "$D/spec.json")
  w_worker wa --trainer "numpy=$NUMPY" --idle-exit 1
  w_exit "$LAST_PID" 60; assert_eq 0 "$W_RC" "worker exit status"
  assert_eq 2 "$(w_count "$SID" done)" "jobs done" || { w_dump; fail "the numpy trainer's jobs did not finish"; }
}

t_numpy_trainer_extras_reach_the_curve_route() {
  numpy_sweep
  local j
  for j in 1 2; do
    local tr va
    tr=$(w_get "/api/v1/jobs/$j/metrics?kind=train")
    va=$(w_get "/api/v1/jobs/$j/metrics?kind=val")
    # every train point carries both names; lr_scale is the trainer's schedule (recomputed here), tokens_per_s > 0
    assert_eq "30 points, names lr_scale,tokens_per_s, lr_scale ok, tokens_per_s > 0" "$(echo "$tr" | w_json '
"%d points, names %s, lr_scale %s, tokens_per_s %s" % (len(d["points"]),
  ",".join(sorted({k for p in d["points"] for k in p.get("extra", {})})),
  "ok" if all(abs(p["extra"]["lr_scale"] - (0.1 + 0.9 * 0.5 * (1 + __import__("math").cos(__import__("math").pi * p["step"] / 30)))) < 1e-12 for p in d["points"]) else [(p["step"], p.get("extra")) for p in d["points"]][:3],
  "> 0" if all(p["extra"]["tokens_per_s"] > 0 for p in d["points"]) else "not positive")')" "job $j train extras"
    # val points: ppl = exp(val_loss), as the trainer computed it
    assert_eq "steps [0, 10, 20, 30], ppl = exp(val_loss)" "$(echo "$va" | w_json '
"steps %s, ppl %s" % ([p["step"] for p in d["points"]],
  "= exp(val_loss)" if all(abs(p["extra"]["ppl"] / __import__("math").exp(p["value"]) - 1) < 1e-12 for p in d["points"]) else [(p["value"], p.get("extra")) for p in d["points"]])')" "job $j val extras"
    # the result's extra: lr_scale at the last step, 29 of 30
    assert_eq "0.102465" "$(tr_job "$j" 'round(d["result"]["extra"]["final_lr_scale"], 6)')" "job $j result's extra"
  done
}

t_numpy_trainer_extras_exported() {
  /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || fail "python3-protobuf missing: run make deps"
  numpy_sweep
  local f
  for f in csv jsonl tensorboard; do
    "$(bin prism-sweep)" export "$SID" --db "$D/prism.db" --format "$f" --out "$D/x-$f" > "$D/x-$f.log" 2>&1 || fail "export $f: $(cat "$D/x-$f.log")"
    /usr/bin/python3 "$CHECK" "$D/prism.db" "$D/x-$f" "$f" "$SID" || fail "the $f export differs from the database"
  done
  # long format: 30 train points x 2 names + 4 val points x 1 name, per job
  assert_eq 128 "$(($(wc -l < "$D/x-csv/extras.csv") - 1))" "extras.csv rows"
  grep -q '^1,"4,4,4,4",3,train,0,lr_scale,1$' "$D/x-csv/extras.csv" || fail "extras.csv: no row for job 1's lr_scale at step 0: $(head -3 "$D/x-csv/extras.csv")"
  local tags; tags=$(/usr/bin/python3 - "$D/x-tensorboard" <<'PY'
import glob, sys
raw = b"".join(open(p, "rb").read() for p in glob.glob(sys.argv[1] + "/*/events.out.tfevents.*"))
print(" ".join(t for t in ("extra/lr_scale", "extra/tokens_per_s", "val/extra/ppl") if t.encode() in raw))
PY
)
  assert_eq "extra/lr_scale extra/tokens_per_s val/extra/ppl" "$tags" "TensorBoard tags of the extras"
}

# one_line_trainer FILE EXTRA_JSON: a trainer whose first train line carries EXTRA_JSON as its extra.
one_line_trainer() {
  cat > "$1" <<EOF
import json, os
out = os.fdopen(3, "w", buffering=1)
out.write(json.dumps({"event": "train", "step": 0, "train_loss": 3.0, "extra": $2}) + "\n")
out.write(json.dumps({"event": "result", "result": {"val_loss": 3.0, "steps": 30}}) + "\n")
EOF
}

# An extra out of bounds fails the job (not retryable) naming the problem, as the other protocol checks do.
t_bad_extra_fails_the_job_naming_it() {
  w_setup
  w_server
  local i=0 bad want
  while IFS='|' read -r bad want; do
    i=$((i + 1))
    one_line_trainer "$D/bad$i.py" "$bad"
    tr_spec "$D/spec$i.json" "bad$i" '["4,4,4,4"]' '[1]' 30 0 "bad$i"
    local sid; sid=$(w_create "$D/spec$i.json")
    w_worker "w$i" --trainer "bad$i=/usr/bin/python3 $D/bad$i.py" --idle-exit 1
    w_exit "$LAST_PID" 30
    local job; job=$(w_get "/api/v1/sweeps/$sid/jobs" | w_json 'd["jobs"][0]["id"]')
    assert_eq failed "$(tr_job "$job" 'd["state"]')" "state with extra $bad"
    assert_contains "$(tr_job "$job" 'd["last_error"]')" "$want"
  done <<'EOF'
{"bad name": 1}|train.extra: name "bad name": names are 1 to 64 characters of A-Z a-z 0-9 _ . / -
{"x": "fast"}|train.extra.x: must be a finite number
[1, 2]|train.extra: must be an object {name: number}
{"a0": 0, "a1": 1, "a2": 2, "a3": 3, "a4": 4, "a5": 5, "a6": 6, "a7": 7, "a8": 8, "a9": 9, "b0": 0, "b1": 1, "b2": 2, "b3": 3, "b4": 4, "b5": 5, "b6": 6}|train.extra: 17 names: at most 16
EOF
}

# The server checks with the same rule (common/point.h point_extra_check): a metrics batch with a bad extra is a
# 400 naming the point, and stores nothing; a good one is stored and served.
t_metrics_route_checks_extras() {
  w_setup
  w_spec "$D/spec.json" rt '["4,4,4,4"]' '[1]' 30
  w_server
  w_create "$D/spec.json" > /dev/null
  local wid; wid=$(curl -s -X POST -H "Authorization: Bearer $WTOK" -d '{"name":"probe","host":"h","devices":["cpu"]}' \
    "$URL/api/v1/workers/register" | w_json 'd["worker_id"]')
  local ls; ls=$(curl -s -X POST -H "Authorization: Bearer $WTOK" -d "{\"worker_id\": $wid}" "$URL/api/v1/lease")
  local job tok; job=$(echo "$ls" | w_json 'd["job_id"]'); tok=$(echo "$ls" | w_json 'd["lease_token"]')
  local code
  code=$(curl -s -o "$D/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"lease_token\": \"$tok\", \"points\": [{\"step\": 0, \"train_loss\": 3, \"extra\": {\"ok\": 1}}, {\"step\": 1, \"train_loss\": 3, \"extra\": {\"no way\": 1}}]}" \
    "$URL/api/v1/jobs/$job/metrics")
  assert_eq 400 "$code" "metrics with a bad extra name"
  assert_contains "$(cat "$D/r")" 'points[1].extra: name \"no way\"'
  assert_eq 0 "$(sqlite3 "$D/prism.db" "SELECT count(*) FROM metrics")" "nothing of the refused batch stored"
  code=$(curl -s -o "$D/r" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"lease_token\": \"$tok\", \"points\": [{\"step\": 0, \"train_loss\": 3, \"val_loss\": 3.5, \"extra\": {\"mfu\": 0.4125}}, {\"step\": 1, \"train_loss\": 2.5}]}" \
    "$URL/api/v1/jobs/$job/metrics")
  assert_eq 200 "$code" "metrics with a good extra: $(cat "$D/r")"
  assert_eq '0.4125|train 3.5|val' "$(sqlite3 "$D/prism.db" "SELECT coalesce(json_extract(extra, '$.mfu'), value) || '|' || kind FROM metrics WHERE step = 0 ORDER BY kind" | tr '\n' ' ' | sed 's/ $//')" \
    "the extra stored once, on the train row of a point with both losses"
  assert_eq '[{"mfu": 0.4125}, "absent"]' "$(w_get "/api/v1/jobs/$job/metrics?kind=train" | w_json '[p.get("extra", "absent") for p in d["points"]]')" \
    "served (a point without extras has no extra key)"
}

harness_main "$@"
