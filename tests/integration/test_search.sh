#!/usr/bin/env bash
# test_search.sh — a surrogate search (spec key "search", orchestrator/search.h) through the real server: the sweep
# starts with its initial design, each batch is proposed when the previous one is over and inserted once, until the
# budget; status, GET /api/v1/sweeps/{id} and the leaderboard (JSON and table) show its progress and the model's
# estimates; the same results give the same proposals; a server killed inside a decision (PRISM_FAULT_SEARCH=abort)
# or by SIGKILL at random moments proposes no batch twice and loses none; failed jobs do not stop it; a bad "search"
# is refused naming the key. The jobs are answered by tests/integration/search_worker.py (a synthetic landscape over
# the worker API: nothing is trained).
# timeout: 300
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/worker_lib.sh"

SW="$(dirname "$0")/search_worker.py"

# s_setup: a case directory with tokens, no data (nothing is trained).
s_setup() { w_tokens; }

# s_spec FILE NAME SEARCH_JSON [SEEDS_JSON] [EXTRA top-level JSON members]: L=12, d=768, the default rules (53
# schedules).
s_spec() {
  cat > "$1" <<EOF
{ "name": "$2",
  "model": {"n_layer": 12, "d_model": 768, "vocab_size": 50257, "padded_vocab_size": 50304, "seq_len": 1024},
  "seeds": ${4:-[1, 2]}, ${5:-}
  "search": $3,
  "train": {"batch_size": 8, "seq_len": 1024, "steps": 100, "lr": 0.0006},
  "eval": {"every": 100}, "data": {"train": "data/t_*.bin", "val": "data/v_*.bin"} }
EOF
}
STD='{"strategy": "surrogate", "budget": 20, "batch": 4, "init": 6}'

sql() { sqlite3 -cmd '.timeout 5000' "$D/prism.db" "$1"; }
search_over() {
  [ "$(sql "SELECT count(*) FROM search_batches WHERE stop_reason IS NOT NULL")" = "${1:-1}" ] &&
  [ "$(sql "SELECT count(*) FROM jobs WHERE state IN ('queued', 'leased')")" = 0 ]
}
# s_worker [flags]: the synthetic worker in the background until idle (its log $D/sw.log).
s_worker() {
  /usr/bin/python3 "$SW" "$PORT" "$D/worker-token" --quiet --idle-exit "${IDLE:-4}" "$@" >> "$D/sw.log" 2>&1 &
  LAST_PID=$!
  W_PIDS+=("$LAST_PID")
}

# The end state of a finished search of sweep NAME (budget, init, batch, seeds): batches 1..B decided once each, the
# last proposes nothing and says why; the schedules are the initial design plus every batch's proposals, each with
# every seed's job; batch b's jobs were created after every job of the earlier schedules was over; the proposals'
# count is each batch row's; no schedule twice, every schedule valid.
check_search() {
  /usr/bin/python3 - "$D/prism.db" "$@" <<'PY' || fail "the search's end state"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); name = sys.argv[2]; budget, init, batch, nseeds = map(int, sys.argv[3:7])
want_stop = sys.argv[7] if len(sys.argv) > 7 else "budget"
q = lambda s, *a: db.execute(s, a).fetchall()
sw = q("SELECT id FROM sweeps WHERE name = ?", name)[0][0]
rows = q("SELECT batch, schedules, trained, proposed, jobs_created, stop_reason FROM search_batches WHERE sweep_id = ? "
         "ORDER BY batch", sw)
B = len(rows)
assert [r[0] for r in rows] == list(range(1, B + 1)), rows
assert all(r[5] is None for r in rows[:-1]) and rows[-1][5] == want_stop and rows[-1][3] == 0, rows
scheds = q("SELECT id, heads FROM schedules WHERE sweep_id = ? ORDER BY id", sw)
assert len({h for _, h in scheds}) == len(scheds)
props = q("SELECT schedule_id, batch FROM search_proposals WHERE sweep_id = ?", sw)
assert len(scheds) == init + len(props), (len(scheds), init, len(props))
if want_stop == "budget":
    assert len(scheds) == budget, (len(scheds), budget)
n = init
for b, s, t, p, jc, stop in rows:
    assert s == n, ("batch %d saw %d schedules, expected %d" % (b, s, n))
    assert p == sum(1 for _, pb in props if pb == b) and p <= batch, (b, p)
    assert jc == p * nseeds, (b, jc, p)
    n += p
    mine = [sid for sid, pb in props if pb == b]
    if mine:
        first = min(x for (x,) in q("SELECT created_at FROM jobs WHERE schedule_id IN (%s)" % ",".join(map(str, mine))))
        before = q("SELECT max(finished_at) FROM jobs WHERE sweep_id = ? AND schedule_id NOT IN (SELECT schedule_id FROM "
                   "search_proposals WHERE sweep_id = ? AND batch >= ?)", sw, sw, b)[0][0]
        assert before is None or first >= before - 1e-6, ("batch %d created before the earlier jobs were over" % b)
for sid, _ in scheds:
    assert q("SELECT count(*) FROM jobs WHERE schedule_id = ?", sid)[0][0] == nseeds, sid
assert q("SELECT count(*) FROM results r JOIN jobs j ON j.id = r.job_id WHERE j.sweep_id = ?", sw)[0][0] == \
       q("SELECT count(*) FROM jobs WHERE sweep_id = ? AND state = 'done'", sw)[0][0]
print("batches %d, schedules %d, proposals %s" % (B, len(scheds), [r[3] for r in rows]))
PY
}

t_search_runs_to_its_budget_through_the_server() {
  s_setup
  w_server
  s_spec "$D/spec.json" srch "$STD"
  local id; id=$(w_create "$D/spec.json")
  [ -n "$id" ] || fail "no sweep id"
  assert_eq 6 "$(sql "SELECT count(*) FROM schedules")" "schedules at create (the initial design)"
  assert_eq 1 "$(sql "SELECT count(*) FROM schedules WHERE is_baseline = 1 AND ord = 0")" "the baseline first"
  s_worker
  w_wait 120 "the search ends" search_over
  check_search srch 20 6 4 2
  # status (text and JSON) and the sweep's route carry the same progress
  local out; out=$("$(bin prism-sweep)" status --db "$D/prism.db" srch); echo "$out"
  assert_contains "$out" "search (surrogate; budget 20 schedules, init 6, batch 4; 53 valid schedules): 5 batch(es) decided, 20 schedules in the sweep, 20 with a value; finished (the budget is spent)"
  assert_contains "$out" "recommended (lowest model mean among the trained, as of batch 5)"
  "$(bin prism-sweep)" status --db "$D/prism.db" srch --format json > "$D/st.json"
  w_get "/api/v1/sweeps/$id" > "$D/sw.json"
  w_get "/api/v1/sweeps/$id/leaderboard" > "$D/lb.json"
  "$(bin prism-sweep)" leaderboard --db "$D/prism.db" srch > "$D/lb.txt"
  cat "$D/lb.txt"
  /usr/bin/python3 - "$D/st.json" "$D/sw.json" "$D/lb.json" "$D/prism.db" <<'PY' || fail "search outputs"
import json, sqlite3, sys
st, sw, lb = (json.load(open(p))["search"] for p in sys.argv[1:4])
rows = json.load(open(sys.argv[3]))["rows"]
db = sqlite3.connect(sys.argv[4])
def same(a, b):   # the CLI prints doubles at 17 digits, the HTTP routes at 15
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a))
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
assert same(st, sw), "status --format json and GET /api/v1/sweeps/{id} differ"
assert same(lb, st), ("the leaderboard's search object differs", sorted(set(lb) ^ set(st)))
assert st["strategy"] == "surrogate" and st["budget"] == 20 and st["space"] == 53 and st["finished"] is True
assert st["schedules"] == 20 and st["trained"] == 20 and st["batches_decided"] == 5 and st["stop_reason"] == "budget"
assert [b["trained"] for b in st["batches"]] == [6, 10, 14, 18, 20], st["batches"]
rec = st["recommended"]; bu = st["predicted_best_untrained"]
assert rec["heads"] in {r[0] for r in db.execute("SELECT heads FROM schedules")}, rec
assert bu["heads"] not in {r[0] for r in db.execute("SELECT heads FROM schedules")}, bu
assert 0 <= st["p_beat"] <= 1 and st["fit"]["n"] == 20 and st["fit"]["loo_rmse"] > 0, st
# every trained row has the model's estimate; the recommended one has the lowest mean
with_s = [r for r in rows if r["surrogate"] is not None]
assert len(with_s) == 20, len(with_s)
for r in with_s:
    s = r["surrogate"]
    assert s["lo"] < s["mean"] < s["hi"] and s["sd"] > 0 and s["batch"] == 5, s
low = min(with_s, key=lambda r: r["surrogate"]["mean"])
assert ",".join(map(str, low["heads"])) == rec["heads"], (low["heads"], rec)
print("recommended", rec, "p_beat", st["p_beat"], "loo", st["fit"])
PY
  assert_contains "$(cat "$D/lb.txt")" "search (surrogate; budget 20 schedules"
  assert_contains "$(cat "$D/lb.txt")" "predicted best untrained:"
}

# "search.dims": the learning rate searched with the schedule. The worker's landscape adds 0.05 (log10(lr / 0.002))²
# to the schedule's truth, so the best lies at lr 0.002 while the spec's own lr (the uniform baseline's) is 0.0006.
# A candidate is a schedule at a learning rate: its schedules row holds the value, its jobs train at it, the same
# schedule can come back at another value; the search moves its proposals towards 0.002 and recommends near it; the
# leaderboard, its table and CSV, status and the sweep's route name each candidate's learning rate.
t_search_over_the_learning_rate() {
  s_setup
  w_server
  s_spec "$D/spec.json" lr '{"strategy": "surrogate", "budget": 24, "batch": 4, "init": 8, "dims": {"train.lr": {"min": 0.0001, "max": 0.01, "scale": "log"}}}'
  local id; id=$(w_create "$D/spec.json")
  assert_eq 8 "$(sql "SELECT count(*) FROM schedules")" "the initial design's candidates"
  assert_eq '{"lr":0.0006}' "$(sql "SELECT train FROM schedules WHERE is_baseline = 1")" "the baseline at the spec's lr"
  s_worker --lr-opt 0.002
  w_wait 120 "the search ends" search_over
  "$(bin prism-sweep)" status --db "$D/prism.db" lr > "$D/st.txt"; cat "$D/st.txt"
  "$(bin prism-sweep)" leaderboard --db "$D/prism.db" lr > "$D/lb.txt"
  "$(bin prism-sweep)" leaderboard --db "$D/prism.db" lr --format csv > "$D/lb.csv"
  w_get "/api/v1/sweeps/$id" > "$D/sw.json"
  w_get "/api/v1/sweeps/$id/leaderboard" > "$D/lb.json"
  /usr/bin/python3 - "$D/prism.db" "$D/sw.json" "$D/lb.json" "$D/lb.csv" <<'PY' || fail "a search over the learning rate"
import csv, json, math, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
sw = json.load(open(sys.argv[2]))["search"]; lb = json.load(open(sys.argv[3]))
q = lambda s, *a: db.execute(s, a).fetchall()
sc = q("SELECT id, heads, is_baseline, train FROM schedules ORDER BY id")
assert len(sc) == 24, len(sc)
assert len({(h, t) for _, h, _, t in sc}) == 24, "a candidate twice"
assert [b for _, _, b, _ in sc].count(1) == 1 and sc[0][2] == 1, "one baseline, the first"
lr = {i: json.loads(t)["lr"] for i, _, _, t in sc}
for i, h, b, t in sc[1:]:
    v = lr[i]
    assert 1e-4 <= v <= 1e-2 and float("%.3g" % v) == v, ("lr not a 3-digit value in the range", t)
for sid, job in q("SELECT schedule_id, job FROM jobs"):
    assert json.loads(job)["train"]["lr"] == lr[sid], ("a job trains at another lr than its candidate's", sid)
    assert json.loads(job)["train"]["steps"] == 100
assert q("SELECT count(*) FROM jobs")[0][0] == 48
dist = lambda ids: sum(abs(math.log10(lr[i] / 0.002)) for i in ids) / len(ids)
init = [i for i, _, b, _ in sc[:8] if not b]
late = [i for (i,) in q("SELECT schedule_id FROM search_proposals WHERE batch >= (SELECT max(batch) - 2 FROM search_proposals)")]
print("mean |log10(lr/0.002)|: initial design %.3f, the last batches' proposals %.3f" % (dist(init), dist(late)))
assert dist(late) < 0.5 * dist(init), "the proposals did not move towards the best learning rate"
d = sw["dims"]["lr"]
assert d["min"] == 1e-4 and d["max"] == 1e-2 and d["scale"] == "log" and d["baseline"] == 0.0006 and not d["integer"], d
rec = sw["recommended"]
assert 0.001 <= rec["train"]["lr"] <= 0.004, ("recommended far from the best lr", rec)
assert "lr" in sw["predicted_best_untrained"]["train"], sw["predicted_best_untrained"]
assert all("recommended_train" in b for b in sw["batches"])
rows = lb["rows"]
assert len(rows) == 24 and all(r["train"]["lr"] == lr[r["schedule_id"]] for r in rows), "leaderboard rows' train"
cr = list(csv.DictReader(open(sys.argv[4])))
assert len(cr) == 24 and all(json.loads(r["train"])["lr"] > 0 for r in cr), "CSV train column"
print("recommended", rec)
PY
  assert_contains "$(cat "$D/st.txt")" "searched with the schedule: train.lr in [0.0001, 0.01] (log scale; the baseline at 0.0006)"
  assert_contains "$(cat "$D/st.txt")" "(trained at lr="
  assert_contains "$(cat "$D/lb.txt")" "lr=0.0006"
}

# A bad "dims" is refused naming the key; nothing is created.
t_bad_dims_are_refused_naming_the_key() {
  s_setup
  local bad want rc
  while IFS='|' read -r bad want; do
    s_spec "$D/b.json" b "{\"strategy\": \"surrogate\", \"budget\": 10, \"dims\": $bad}"
    rc=0; "$(bin prism-sweep)" create "$D/b.json" --db "$D/prism.db" >"$D/out" 2>"$D/err" || rc=$?
    assert_eq 2 "$rc" "exit status for dims $bad ($(cat "$D/err"))"
    assert_contains "$(cat "$D/err")" "$want"
  done <<'CASES'
{"train.steps": [10, 100]}|search.dims.train.steps: not a searchable key
{"train.lr": [0.001, 0.01]}|search.dims.train.lr: the spec's train.lr (0.0006) is outside [0.001, 0.01]
{"train.lr": {"min": 0.0001, "max": 0.01, "scale": "cubic"}}|search.dims.train.lr.scale: must be "log" or "linear"
{"train.lr": [0.01, 0.0001]}|search.dims.train.lr: must be
{"train.warmup_steps": [0.5, 20]}|search.dims.train.warmup_steps: an integer key
{"train.weight_decay": {"min": 0, "max": 1, "scale": "log"}}|search.dims.train.weight_decay: a log scale needs min > 0
{"train.lr": [0.0001, 0.01], "train.beta2": [0.9, 1.5]}|search.dims: a job at the ranges' maxima is not valid
[1, 2]|search.dims: must be an object
CASES
  [ ! -f "$D/prism.db" ] || assert_eq 0 "$(sql "SELECT count(*) FROM sweeps")" "nothing created"
}

# The proposals are a function of the results and the spec (seeded draws): two sweeps of the same spec whose jobs
# get the same values propose the same schedules, batch by batch.
t_same_results_give_the_same_proposals() {
  s_setup
  w_server
  s_spec "$D/a.json" srch-a "$STD"
  s_spec "$D/b.json" srch-b "$STD"
  w_create "$D/a.json" >/dev/null
  w_create "$D/b.json" >/dev/null
  s_worker
  w_wait 120 "both searches end" search_over 2
  check_search srch-a 20 6 4 2
  check_search srch-b 20 6 4 2
  local a b
  a=$(sql "SELECT group_concat(p.batch || ':' || s.heads, ' ') FROM (SELECT * FROM search_proposals ORDER BY batch, pos) p JOIN schedules s ON s.id = p.schedule_id JOIN sweeps w ON w.id = p.sweep_id WHERE w.name = 'srch-a'")
  b=$(sql "SELECT group_concat(p.batch || ':' || s.heads, ' ') FROM (SELECT * FROM search_proposals ORDER BY batch, pos) p JOIN schedules s ON s.id = p.schedule_id JOIN sweeps w ON w.id = p.sweep_id WHERE w.name = 'srch-b'")
  [ -n "$a" ] || fail "no proposals"
  assert_eq "$a" "$b" "the two searches' proposals"
}

t_server_killed_inside_a_search_decision_loses_and_repeats_nothing() {
  s_setup
  export PRISM_FAULT_SEARCH=abort
  w_server
  unset PRISM_FAULT_SEARCH
  local first=$SERVER_PID
  s_spec "$D/spec.json" srch "$STD"
  w_create "$D/spec.json" >/dev/null
  IDLE=2 s_worker
  w_exit "$first" 60
  grep -q "aborting inside a search decision" "$D/server.log" || { w_dump; fail "the server did not stop inside a decision (rc $W_RC)"; }
  # nothing of the interrupted transaction: no batch, no proposal, no new schedule or job
  assert_eq 0 "$(sql "SELECT count(*) FROM search_batches")" "batches after the abort"
  assert_eq 0 "$(sql "SELECT count(*) FROM search_proposals")" "proposals after the abort"
  assert_eq 6 "$(sql "SELECT count(*) FROM schedules")" "schedules after the abort"
  assert_eq 12 "$(sql "SELECT count(*) FROM jobs")" "jobs after the abort"
  assert_eq 11 "$(sql "SELECT count(*) FROM jobs WHERE state = 'done'")" "done before the last completion"
  w_exit "$LAST_PID" 20
  w_server --lease-ttl 1   # the same database and port, without the fault
  s_worker
  w_wait 120 "the search ends after the restart" search_over
  check_search srch 20 6 4 2
  assert_eq 1 "$(sql "SELECT count(*) FROM search_batches WHERE batch = 1")" "batch 1 decided once"
}

# The same kill inside a decision with "dims" (a candidate is a schedule at a learning rate): the aborted batch left
# nothing; after the restart every batch is decided once and no candidate (heads and train values) is twice.
t_search_over_train_keys_survives_a_kill_inside_a_decision() {
  s_setup
  export PRISM_FAULT_SEARCH=abort
  w_server
  unset PRISM_FAULT_SEARCH
  local first=$SERVER_PID
  s_spec "$D/spec.json" lrk '{"strategy": "surrogate", "budget": 16, "batch": 4, "init": 8, "dims": {"train.lr": [0.0001, 0.01]}}'
  w_create "$D/spec.json" >/dev/null
  IDLE=2 s_worker --lr-opt 0.002
  w_exit "$first" 60
  grep -q "aborting inside a search decision" "$D/server.log" || { w_dump; fail "the server did not stop inside a decision (rc $W_RC)"; }
  assert_eq "0 0 8 16" "$(sql "SELECT (SELECT count(*) FROM search_batches) || ' ' || (SELECT count(*) FROM search_proposals) || ' ' || (SELECT count(*) FROM schedules) || ' ' || (SELECT count(*) FROM jobs)")" "batches, proposals, candidates, jobs after the abort"
  w_exit "$LAST_PID" 20
  w_server --lease-ttl 1
  s_worker --lr-opt 0.002
  w_wait 120 "the search ends after the restart" search_over
  assert_eq "1 2 3" "$(sql "SELECT group_concat(batch, ' ') FROM (SELECT batch FROM search_batches ORDER BY batch)")" "batches, each once"
  assert_eq "16 16 32" "$(sql "SELECT count(*) || ' ' || count(DISTINCT heads || '|' || train) || ' ' || (SELECT count(*) FROM jobs) FROM schedules")" "candidates, distinct, jobs"
  assert_eq 0 "$(sql "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE json_extract(j.job, '\$.train.lr') != json_extract(s.train, '\$.lr')")" "jobs at their candidate's lr"
}

# SIGKILL at random moments of a running search (during decisions, leases, completions), then a restart, until it
# ends: every batch once, none lost (check_search), and the proposals are those of an uninterrupted run of the same
# results (the decision is a function of the committed results).
t_server_killed_at_random_moments_proposes_no_batch_twice() {
  s_setup
  s_spec "$D/spec.json" srch "$STD"
  "$(bin prism-sweep)" create "$D/spec.json" --db "$D/prism.db" >/dev/null || fail "create"
  local i kills=0
  for i in $(seq 1 12); do
    w_server --lease-ttl 1
    IDLE=2 s_worker --job-delay 0.15
    sleep "0.$(( RANDOM % 8 + 2 ))"
    search_over && break
    kill -KILL "$SERVER_PID"; w_exit "$SERVER_PID" 5
    kill -KILL "$LAST_PID" 2>/dev/null; w_exit "$LAST_PID" 5
    kills=$((kills + 1))
  done
  search_over || { w_server --lease-ttl 1; s_worker; }   # the rest, uninterrupted (a killed worker's leases expire)
  w_wait 120 "the search ends" search_over
  echo "kills: $kills"
  [ "$kills" -ge 3 ] || fail "only $kills kill(s): the search ended before the test could interrupt it"
  check_search srch 20 6 4 2
  # the same spec in a fresh database, never interrupted, with the same values: the same proposals
  local got; got=$(sql "SELECT group_concat(p.batch || ':' || s.heads, ' ') FROM (SELECT * FROM search_proposals ORDER BY batch, pos) p JOIN schedules s ON s.id = p.schedule_id")
  kill -KILL "$SERVER_PID"; w_exit "$SERVER_PID" 5
  mv "$D/prism.db" "$D/killed.db"; rm -f "$D/prism.db-wal" "$D/prism.db-shm"
  w_server
  w_create "$D/spec.json" >/dev/null
  s_worker
  w_wait 120 "the uninterrupted search ends" search_over
  assert_eq "$(sql "SELECT group_concat(p.batch || ':' || s.heads, ' ') FROM (SELECT * FROM search_proposals ORDER BY batch, pos) p JOIN schedules s ON s.id = p.schedule_id")" "$got" "proposals with and without kills"
}

# Failed jobs (every 5th leased job fails for good): the schedules keep the seeds that finished, the search still
# spends its budget, and a schedule is never proposed again.
t_failed_jobs_do_not_stop_the_search() {
  s_setup
  w_server
  s_spec "$D/spec.json" srch "$STD" "[1, 2, 3]"
  w_create "$D/spec.json" >/dev/null
  s_worker --fail-every 5
  w_wait 120 "the search ends" search_over
  check_search srch 20 6 4 3
  local nf; nf=$(sql "SELECT count(*) FROM jobs WHERE state = 'failed'")
  [ "$nf" -ge 10 ] || fail "only $nf failed jobs"
  "$(bin prism-sweep)" status --db "$D/prism.db" srch | grep -q "finished (the budget is spent)" || fail "status"
}

# A bad "search" is refused by the CLI (stderr, exit 2) and the API (400, JSON error) naming the key; nothing is
# created.
t_bad_search_is_refused_naming_the_key() {
  s_setup
  local cases=(
    '{"strategy": "surrogate", "budget": 53}|search.budget: 53 is not below the rules'"'"' 53 valid schedules: train the grid'
    '{"strategy": "surrogate", "budget": 20, "init": 1}|search.init: must be an integer in 2..20'
    '{"strategy": "surrogate", "budget": 20, "bach": 4}|search.bach: unknown key'
    '{"strategy": "bayes", "budget": 20}|search.strategy: must be "grid"'
    '{"strategy": "grid", "budget": 20}|search.budget: only with "strategy": "surrogate"'
    '{"strategy": "surrogate", "budget": 20, "stop_p": 1.5}|search.stop_p: must be a number in (0, 1)'
  )
  local c spec want out rc
  for c in "${cases[@]}"; do
    spec=${c%%|*}; want=${c#*|}
    s_spec "$D/bad.json" bad "$spec"
    out=$("$(bin prism-sweep)" create "$D/bad.json" --db "$D/c.db" 2>&1); rc=$?
    assert_eq 2 "$rc" "create exit status for $spec"
    assert_contains "$out" "$want"
  done
  s_spec "$D/bad.json" bad "$STD" "[1]"
  out=$("$(bin prism-sweep)" create "$D/bad.json" --db "$D/c.db" 2>&1); rc=$?
  assert_eq 2 "$rc" "create exit status with one seed"
  assert_contains "$out" "search: a surrogate search needs at least 2 seeds"
  s_spec "$D/bad.json" bad "$STD" "[1, 2]" '"racing": {"max_seeds": 4},'
  out=$("$(bin prism-sweep)" create "$D/bad.json" --db "$D/c.db" 2>&1); rc=$?
  assert_eq 2 "$rc" "create exit status with racing"
  assert_contains "$out" "is not combined with \"racing\""
  w_server
  s_spec "$D/bad.json" bad '{"strategy": "surrogate", "budget": 99}'
  out=$(curl -s -o "$D/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $ATOK" --data-binary @"$D/bad.json" "$URL/api/v1/sweeps")
  assert_eq 400 "$out" "HTTP status"
  assert_contains "$(cat "$D/body")" "search.budget"
  assert_eq 0 "$(sql "SELECT count(*) FROM sweeps")" "sweeps created"
  # re-creating a search with another initial design is refused: its batches choose the schedules
  s_spec "$D/spec.json" srch "$STD"
  "$(bin prism-sweep)" create "$D/spec.json" --db "$D/c.db" >/dev/null || fail "create"
  s_spec "$D/spec.json" srch '{"strategy": "surrogate", "budget": 20, "batch": 4, "init": 8}'
  out=$("$(bin prism-sweep)" create "$D/spec.json" --db "$D/c.db" 2>&1); rc=$?
  [ "$rc" != 0 ] || fail "a re-created search with another initial design was accepted"
  assert_contains "$out" "is a surrogate search"
}

harness_main "$@"
