#!/usr/bin/env bash
# test_halving.sh — successive halving with a real orchestrator and real workers: jobs pause at each rung,
# the best third and the baseline are promoted and resume from their rung checkpoint (metrics bit-identical to an
# uninterrupted run), the rest end pruned; status and the leaderboard show it; a server killed inside a
# promotion (PRISM_FAULT_PROMOTION=abort) or a worker killed at a rung boundary (PRISM_FAULT_AT_RUNG=exit) neither
# loses nor duplicates a job, and the promotion happens exactly once.
# timeout: 300
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/worker_lib.sh"

SIX='["4,4,4,4", "2,4,4,4", "1,4,4,4", "2,2,4,4", "1,2,4,4", "1,1,4,4"]'

# h_spec FILE NAME SCHEDULES SEEDS [MODE]: 45 steps, rungs [1/9, 1/3] -> steps 5 and 15, eta 3
h_spec() {
  w_spec "$1" "$2" "$3" "$4" 45
  /usr/bin/python3 - "$1" "${5:-sync}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["halving"] = {"eta": 3, "rungs": [0.111, 0.333], "mode": sys.argv[2]}
json.dump(s, open(sys.argv[1], "w"))
PY
}

sql() { sqlite3 -cmd '.timeout 5000' "$D/prism.db" "$1"; }
terminal() { [ "$(sql "SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'pruned', 'failed')")" = 0 ]; }

# The end state of a finished 6 x 2 sync sweep: every job done or pruned, one decision per schedule per rung, no
# result twice, each job's rung results from one attempt.
check_finished_sweep() {
  assert_eq 12 "$(sql "SELECT count(*) FROM jobs")" "jobs"
  assert_eq 0 "$(sql "SELECT count(*) FROM jobs WHERE state = 'failed'")" "failed jobs"
  assert_eq 6 "$(sql "SELECT count(*) FROM halving_decisions WHERE rung = 0")" "decisions at rung 0"
  local p0; p0=$(sql "SELECT count(*) FROM halving_decisions WHERE rung = 0 AND promoted = 1")
  [ "$p0" = 2 ] || [ "$p0" = 3 ] || fail "promoted at rung 0: expected the best 2 plus the baseline (2 or 3), got $p0"
  assert_eq "1|1" "$(sql "SELECT group_concat(promoted, '|') FROM halving_decisions d JOIN schedules s ON s.id = d.schedule_id WHERE s.is_baseline = 1")" "the baseline promoted at both rungs"
  local n1; n1=$(sql "SELECT count(*) FROM halving_decisions WHERE rung = 1")
  assert_eq "$(sql "SELECT count(*) FROM halving_decisions WHERE rung = 0 AND promoted = 1")" "$n1" "decisions at rung 1 = promoted at rung 0"
  assert_eq "$(sql "SELECT count(*) FROM jobs WHERE state = 'done'")" "$(sql "SELECT count(*) FROM results")" "one result per done job"
  assert_eq "$(( $(sql "SELECT count(*) FROM halving_decisions WHERE rung = 1 AND promoted = 1") * 2 ))" \
    "$(sql "SELECT count(*) FROM jobs WHERE state = 'done'")" "done jobs = 2 seeds x promoted at rung 1"
  assert_eq 12 "$(sql "SELECT count(*) FROM rung_results WHERE rung = 0 AND step = 5")" "rung 0 results"
  assert_eq "$(( n1 * 2 ))" "$(sql "SELECT count(*) FROM rung_results WHERE rung = 1 AND step = 15")" "rung 1 results"
  assert_eq 0 "$(sql "SELECT count(*) FROM (SELECT job_id, step, kind, count(DISTINCT value) c FROM metrics GROUP BY job_id, step, kind HAVING c > 1)")" \
    "a step with two different values (a rung trained twice differently)"
}

t_sweep_pauses_promotes_prunes_and_resumes_bit_identical() {
  w_setup
  w_server
  h_spec "$D/spec.json" hv "$SIX" "[1, 2]"
  local id; id=$(w_create "$D/spec.json")
  [ -n "$id" ] || fail "no sweep id"
  w_worker w1
  w_wait 240 "the sweep finishes (done or pruned)" terminal
  check_finished_sweep
  # status counts paused and pruned
  local out; out=$("$(bin prism-sweep)" status --db "$D/prism.db" hv)
  echo "$out"
  local pruned; pruned=$(sql "SELECT count(*) FROM jobs WHERE state = 'pruned'")
  [ "$pruned" -gt 0 ] || fail "nothing pruned"
  assert_contains "$out" "pruned     $(printf '%8d' "$pruned")"
  assert_contains "$out" "paused            0"
  assert_eq "$pruned" "$("$(bin prism-sweep)" status --db "$D/prism.db" hv --format json | w_json 'd["jobs"]["pruned"]')" "status json pruned"
  assert_eq "$pruned" "$(w_get "/api/v1/sweeps/$id" | w_json 'd["counts"]["pruned"]')" "API counts pruned"
  # the leaderboard: rows by rung (highest first), the same on the API and the CSV; tokens below the full grid's
  w_get "/api/v1/sweeps/$id/leaderboard" > "$D/lb.json"
  "$(bin prism-sweep)" leaderboard --db "$D/prism.db" hv --format csv > "$D/lb.csv"
  /usr/bin/python3 - "$D/lb.json" "$D/lb.csv" <<'PY' || fail "leaderboard by rung"
import csv, json, sys
lb = json.load(open(sys.argv[1])); rows = lb["rows"]
rungs = [r["rung"] for r in rows]
assert rungs == sorted(rungs, reverse=True), rungs
assert rungs[0] == 2 and all(r["pruned"] == (r["rung"] < 2) for r in rows), rows
assert [r["rank"] for r in rows] == list(range(1, 7)), [r["rank"] for r in rows]
h = lb["halving"]
assert h["rung_steps"] == [5, 15, 45] and h["steps_trained"] < h["full_grid_steps"] == 12 * 45, h
c = list(csv.DictReader(open(sys.argv[2])))
assert [int(x["rung"]) for x in c] == rungs and [x["pruned"] == "true" for x in c] == [r["pruned"] for r in rows]
print("rungs", rungs, "steps", h["steps_trained"], "of", h["full_grid_steps"])
PY
  # a promoted job (paused twice, resumed twice) against the same job trained straight through
  local job; job=$(sql "SELECT id FROM jobs WHERE state = 'done' ORDER BY id DESC LIMIT 1")
  assert_eq 3 "$(sql "SELECT attempt FROM jobs WHERE id = $job")" "attempts of a job promoted twice"
  w_get "/api/v1/jobs/$job" | w_json 'd["job"] if isinstance(d["job"], dict) else json.loads(d["job"])' > "$D/job.json"
  (cd "$D" && OMP_NUM_THREADS=1 "$(bin prism-worker)" train job.json --out straight --quiet) || fail "straight run"
  # the stored points (the latest attempt at each step), read exactly from the database
  /usr/bin/python3 - "$D/straight/metrics.jsonl" "$D/prism.db" "$job" <<'PY' || fail "promoted job differs from a straight run"
import json, sqlite3, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tr = {r["step"]: r["train_loss"] for r in rows if "train_loss" in r}
va = {r["step"]: r["val_loss"] for r in rows if "val_loss" in r}
db = sqlite3.connect(sys.argv[2])
def pts(kind):
    q = ("SELECT step, value FROM metrics m WHERE job_id = ? AND kind = ? AND attempt = (SELECT max(attempt) FROM metrics m2 "
         "WHERE m2.job_id = m.job_id AND m2.step = m.step AND m2.kind = m.kind)")
    return dict(db.execute(q, (int(sys.argv[3]), kind)).fetchall())
got_tr, got_va = pts("train"), pts("val")
attempts = [a for (a,) in db.execute("SELECT DISTINCT attempt FROM metrics WHERE job_id = ? AND kind = 'train' ORDER BY 1", (int(sys.argv[3]),))]
assert attempts == [1, 2, 3], attempts
assert got_tr == tr, [(s, tr.get(s), got_tr.get(s)) for s in sorted(set(tr) | set(got_tr)) if tr.get(s) != got_tr.get(s)][:5]
for s, v in va.items(): assert got_va[s] == v, (s, v, got_va[s])
assert set(got_va) - set(va) == {5, 15}, sorted(got_va)   # the rung evaluations
print("train rows %d (attempts %s), val rows %d identical to the straight run (exact)" % (len(tr), attempts, len(va)))
PY
}

t_server_killed_inside_a_promotion_loses_and_duplicates_nothing() {
  w_setup
  export PRISM_FAULT_PROMOTION=abort
  w_server
  unset PRISM_FAULT_PROMOTION
  local first=$SERVER_PID
  h_spec "$D/spec.json" hv "$SIX" "[1, 2]"
  w_create "$D/spec.json" >/dev/null
  w_worker w1
  w_exit "$first" 120
  grep -q "aborting inside a promotion" "$D/server.log" || { w_dump; fail "the server did not stop inside a promotion (rc $W_RC)"; }
  # nothing of the interrupted transaction is there: no decision, no job moved, all 12 jobs
  assert_eq 0 "$(sql "SELECT count(*) FROM halving_decisions")" "decisions after the abort"
  assert_eq 12 "$(sql "SELECT count(*) FROM jobs")" "jobs after the abort"
  assert_eq 0 "$(sql "SELECT count(*) FROM jobs WHERE state IN ('pruned') OR rung > 0")" "jobs moved by the aborted promotion"
  assert_eq 11 "$(sql "SELECT count(*) FROM jobs WHERE state = 'paused'")" "paused before the last report"
  w_server   # the same database and port, without the fault
  w_wait 240 "the sweep finishes after the restart" terminal
  check_finished_sweep
}

t_worker_killed_at_a_rung_boundary_loses_and_duplicates_nothing() {
  w_setup
  w_server --lease-ttl 2
  h_spec "$D/spec.json" hv '["4,4,4,4", "2,4,4,4", "1,4,4,4"]' "[1]"
  w_create "$D/spec.json" >/dev/null
  export PRISM_FAULT_AT_RUNG=exit
  w_worker dying
  unset PRISM_FAULT_AT_RUNG
  w_exit "$LAST_PID" 60
  assert_eq 137 "$W_RC" "exit status of the worker killed at the rung"
  grep -q "PRISM_FAULT_AT_RUNG=exit: exiting before the rung report" "$D/dying.log" || { w_dump; fail "the worker did not stop at the rung"; }
  # its job: still leased, its rung checkpoint reported, no rung result
  local job; job=$(sql "SELECT id FROM jobs WHERE checkpoint_step = 5")
  [ -n "$job" ] || { w_dump; fail "no job with its rung checkpoint reported"; }
  assert_eq "leased|1" "$(sql "SELECT state, attempt FROM jobs WHERE id = $job")" "job at the rung"
  assert_eq 0 "$(sql "SELECT count(*) FROM rung_results")" "rung results"
  w_worker w2
  w_wait 120 "the sweep finishes" terminal
  assert_eq "2" "$(sql "SELECT attempt FROM rung_results WHERE job_id = $job AND rung = 0")" "the rung reported once, by attempt 2"
  assert_eq 3 "$(sql "SELECT count(*) FROM rung_results WHERE rung = 0")" "one rung-0 result per job"
  assert_eq 3 "$(sql "SELECT count(*) FROM jobs")" "jobs"
  assert_eq 3 "$(sql "SELECT count(*) FROM halving_decisions WHERE rung = 0")" "decisions at rung 0"
  assert_eq 0 "$(sql "SELECT count(*) FROM jobs WHERE state = 'failed'")" "failed"
  grep -q "job=$job attempt=2 resuming from step 5" "$D/w2.log" || { w_dump; fail "attempt 2 did not resume from the rung checkpoint"; }
  assert_eq 0 "$(sql "SELECT count(*) FROM (SELECT job_id, step, kind, count(DISTINCT value) c FROM metrics GROUP BY job_id, step, kind HAVING c > 1)")" \
    "a step with two different values"
}

# A bad "halving" is refused by the CLI (stderr, exit 2) and the API (400, JSON error) naming the key; nothing is
# created. --dry-run shows the rung steps.
t_bad_halving_is_refused_naming_the_key() {
  w_setup
  h_spec "$D/good.json" hv "$SIX" "[1]"
  local out; out=$("$(bin prism-sweep)" create "$D/good.json" --db "$D/x.db" --dry-run 2>&1) || fail "dry run: $out"
  assert_contains "$out" "halving: eta 3, sync; rungs at steps 5, 15, 45 (the full run)"
  /usr/bin/python3 - "$D/good.json" "$D/bad.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["halving"]["rungs"] = [0.5, 0.4]
json.dump(s, open(sys.argv[2], "w"))
PY
  local err; err=$("$(bin prism-sweep)" create "$D/bad.json" --db "$D/x.db" 2>&1 >/dev/null); local rc=$?
  assert_eq 2 "$rc" "exit status of create with a bad halving"
  assert_contains "$err" "halving.rungs[1]: 0.4 is not above halving.rungs[0]"
  w_server
  local body; body=$(curl -s -o "$D/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $ATOK" \
    -H 'Content-Type: application/json' --data-binary @"$D/bad.json" "$URL/api/v1/sweeps")
  assert_eq 400 "$body" "HTTP status"
  assert_contains "$(cat "$D/resp")" '"error": "halving.rungs[1]'
  assert_eq "0" "$(w_get /api/v1/sweeps | w_json 'len(d["sweeps"])')" "sweeps created"
}

harness_main "$@"
