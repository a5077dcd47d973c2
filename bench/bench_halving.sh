#!/usr/bin/env bash
# bench/bench_halving.sh — successive halving against the full grid on the tiny CPU sweep (sweeps/tiny-cpu.json:
# 6 schedules x 2 seeds, the `make demo` data). Two sweeps with the same seeds and training run on one real
# orchestrator with one CPU worker: the full grid, and the same grid with "halving": {"eta": 3, "rungs":
# [0.111, 0.333]}. Prints the steps trained by the halving sweep against the full grid's, their ratio, the
# schedule ranked first by the full grid, the set promoted to the last rung, and two checks: ratio <= 0.45 and the
# full grid's winner among the promoted. Exit 1 when a check fails.
#   STEPS=N       train.steps (default: the spec's 2000)     TOKENS=N  prism-data synth tokens (default 2M)
#   THREADS=N     the worker's OpenMP threads (default 2)     OUT=DIR   keep the run there (default: a temp dir)
#   EVAL_BATCHES=N  val batches per evaluation (default: the spec's "all", the whole val split)
#   RUNGS=a,b     the halving rungs as fractions (default 0.111,0.333); a rung at or before the warmup is refused
#                 by create, so with STEPS set the warmup shrinks to STEPS/20
# The full grid also evaluates at every rung step (eval.every = their gcd), so the report gives, for each rung, the
# Spearman rank correlation of the full grid's Δ there with its final Δ: how well a rung predicts the end.
#   CHECK_WINNER=0  report the winner check without failing on it (tests/integration/test_halving_bench.sh at a
#                   few dozen steps, where the ranking is noise)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PS=$BUILD/prism-sweep PW=$BUILD/prism-worker PD=$BUILD/prism-data
for b in "$PS" "$PW" "$PD"; do [ -x "$b" ] || { echo "bench_halving: $b not built (make all)" >&2; exit 2; }; done
D=${OUT:-$(mktemp -d /tmp/prism-bench-halving-XXXXXX)}
mkdir -p "$D"
[ -n "${OUT:-}" ] || trap 'rm -rf "$D"' EXIT
PIDS=()
cleanup_pids() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap 'cleanup_pids; [ -n "${OUT:-}" ] || rm -rf "$D"' EXIT

"$PD" synth --out "$D/data" --tokens "${TOKENS:-2M}" --vocab 256 --seed 1 > "$D/synth.log" 2>&1 || { cat "$D/synth.log"; exit 2; }
/usr/bin/python3 - sweeps/tiny-cpu.json "$D" "${STEPS:-}" "${EVAL_BATCHES:-}" "${RUNGS:-0.111,0.333}" <<'PY' || exit 2
import json, math, sys
base = json.load(open(sys.argv[1]))
if sys.argv[3]:
    base["train"]["steps"] = int(sys.argv[3])
    base["train"]["warmup_steps"] = min(base["train"]["warmup_steps"], int(sys.argv[3]) // 20)
# Rank on the whole val split (the spec's "all"): 8 batches moved a schedule's Δ by up to 0.012, more than the gaps
# being ranked (docs/PERF.md).
rungs = [float(x) for x in sys.argv[5].split(",")]
steps = base["train"]["steps"]
rung_steps = [int(math.floor(f * steps + 0.5)) for f in rungs]
every = 0
for s_ in rung_steps: every = math.gcd(every, s_)
base["eval"] = dict(base["eval"], batches=int(sys.argv[4]) if sys.argv[4] else "all", every=0)
for name, halving in (("full", None), ("halving", {"eta": 3, "rungs": rungs, "mode": "sync"})):
    s = dict(base, name="tiny-cpu-" + name)
    if halving: s["halving"] = halving
    else: s["eval"] = dict(base["eval"], every=every)   # the full grid's val loss at every rung step
    json.dump(s, open("%s/%s.json" % (sys.argv[2], name), "w"), indent=1)
PY
DB=$D/prism.db
"$PS" create "$D/halving.json" --db "$DB" > /dev/null || exit 2
"$PS" create "$D/full.json" --db "$DB" > /dev/null || exit 2
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PS" serve --db "$DB" --listen "127.0.0.1:$PORT" > "$D/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null && break; sleep 0.1; done
OMP_NUM_THREADS=${THREADS:-2} "$PW" --server "http://127.0.0.1:$PORT" --token-file "$DB.worker-token" --devices cpu \
  --name bench --work-dir "$D/work" --checkpoint-dir "$D/ckpt" --data-root "$D" --poll 0.2 --idle-exit 3 \
  --progress log > "$D/worker.log" 2>&1
t_end=$(date +%s)
left=$(sqlite3 "$DB" "SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'pruned')")
[ "$left" = 0 ] || { echo "bench_halving: $left jobs not finished; see $D/worker.log"; tail -5 "$D/worker.log"; exit 1; }
"$PS" leaderboard --db "$DB" tiny-cpu-halving --format json > "$D/halving_lb.json"
"$PS" leaderboard --db "$DB" tiny-cpu-full --format json > "$D/full_lb.json"
/usr/bin/python3 - "$D/full_lb.json" "$D/halving_lb.json" "${CHECK_WINNER:-1}" "$D/full.json" "$DB" <<'PY'
import json, sqlite3, sys
full, hv = (json.load(open(p)) for p in sys.argv[1:3])
h = hv["halving"]
heads = lambda r: ",".join(map(str, r["heads"]))
last = len(h["rungs"])
promoted = [heads(r) for r in hv["rows"] if r["rung"] == last]
winner = heads(full["rows"][0])
ratio = h["steps_trained"] / h["full_grid_steps"]
print("rung steps           %s (eta %d, %s)" % (h["rung_steps"], h["eta"], h["mode"]))
print("val batches          %s per evaluation" % json.load(open(sys.argv[4]))["eval"]["batches"])
print("steps trained        %d (halving sweep)" % h["steps_trained"])
print("full-grid steps      %d (12 jobs x %d)" % (h["full_grid_steps"], h["rung_steps"][-1]))
print("ratio                %.4f" % ratio)
print("tokens spent         %d of the full grid's %d" % (h["tokens_spent"], h["full_grid_tokens"]))
print("full-grid ranking    %s" % " > ".join("%s (%+.4f)" % (heads(r), r["delta"]["mean"] if r["delta"] else 0.0) for r in full["rows"]))
print("full-grid winner     %s" % winner)
print("promoted to the last rung  %s" % " ".join(promoted))
print("halving ranking      %s" % " > ".join("%s@r%d" % (heads(r), r["rung"]) for r in hv["rows"]))
# how well each rung predicts the end, on the full grid: Spearman's rho of the schedules' Δ at the rung step (mean
# paired difference to uniform over seeds, from the stored val points) with their final Δ
db = sqlite3.connect(sys.argv[5])
q = ("SELECT sc.heads, sc.is_baseline, j.seed, m.value FROM metrics m JOIN jobs j ON j.id = m.job_id JOIN schedules sc "
     "ON sc.id = j.schedule_id JOIN sweeps s ON s.id = j.sweep_id WHERE s.name = 'tiny-cpu-full' AND m.kind = 'val' "
     "AND m.step = ? AND m.attempt = j.attempt")
def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i]); r = [0.0] * len(v); i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r
def spearman(a, b):
    ra, rb = ranks(a), ranks(b); n = len(a); ma, mb = sum(ra) / n, sum(rb) / n
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")
final = {heads(r): r["delta"]["mean"] for r in full["rows"] if r["delta"]}
for g, step in enumerate(h["rung_steps"][:-1]):
    val, base = {}, {}
    for hd, isb, seed, v in db.execute(q, (step,)):
        if isb: base[seed] = v
        else: val.setdefault(hd, {})[seed] = v
    d = {hd: sum(v[s] - base[s] for s in v if s in base) / max(1, len([s for s in v if s in base]))
         for hd, v in val.items() if any(s in base for s in v)}
    common = [hd for hd in d if hd in final]
    rho = spearman([d[x] for x in common], [final[x] for x in common]) if len(common) > 2 else float("nan")
    print("rung %d (step %d)     Spearman rho of its delta with the final delta: %+.3f over %d schedules" % (g, step, rho, len(common)))
ok_ratio, ok_winner = ratio <= 0.45, winner in promoted
print("check ratio <= 0.45: %s; check winner promoted: %s" % ("ok" if ok_ratio else "FAIL", "ok" if ok_winner else "FAIL"))
sys.exit(0 if ok_ratio and (ok_winner or sys.argv[3] == "0") else 1)
PY
