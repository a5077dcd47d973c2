#!/usr/bin/env bash
# tools/demo.sh — `make demo`: a whole tiny sweep on this machine, end to end.
#
#   1. a synthetic dataset (prism-data synth) in demo/data: 2M tokens, a 20,000-token val split
#   2. the sweep: sweeps/tiny-cpu.json's model, schedules and seeds made quick (demo/spec.json: 400 steps instead of
#      2000, every evaluation on the whole val split: the spec's "eval.batches": "all"), in demo/prism.db (prism-sweep create)
#   3. the orchestrator (prism-sweep serve) on 127.0.0.1:$DEMO_PORT (8080, or a free port if taken)
#   4. one CPU worker (prism-worker) in the foreground with one slot per core, one thread each (faster than one
#      slot on every core: docs/PERF.md), with live progress; it exits once nothing is left
#   5. the leaderboard table (prism-sweep leaderboard)
# Everything lives in demo/ (git-ignored); each run starts it afresh, so it runs again without cleanup.
# The figure: `make demo` on a fresh clone, in docs/PERF.md ("make demo").
# Environment: BUILD (build dir, default build), DEMO_DIR (default demo), DEMO_PORT, DEMO_SPEC
# (default sweeps/tiny-cpu.json), DEMO_STEPS (default 400; 0 = the spec's own), DEMO_SLOTS (default: the cores,
# at most 8), DEMO_KEEP=1 keeps the orchestrator running at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DEMO=${DEMO_DIR:-demo}
SPEC=${DEMO_SPEC:-sweeps/tiny-cpu.json}
STEPS=${DEMO_STEPS:-400}
SWEEP=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$SPEC")
SWEEPBIN=$BUILD/prism-sweep
WORKERBIN=$BUILD/prism-worker
DATABIN=$BUILD/prism-data
for b in "$SWEEPBIN" "$WORKERBIN" "$DATABIN"; do
  [ -x "$b" ] || { echo "demo: $b is missing: run 'make demo' (it builds first)" >&2; exit 2; }
done

if [ -t 1 ]; then say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }; else say() { printf '\n== %s\n' "$*"; }; fi
start=$(date +%s)

# A previous run's orchestrator, if one is still up (DEMO_KEEP=1, or an interrupted run), goes first.
if [ -f "$DEMO/server.pid" ]; then
  old=$(cat "$DEMO/server.pid")
  if kill -0 "$old" 2>/dev/null && grep -q prism-sweep "/proc/$old/cmdline" 2>/dev/null; then
    kill -TERM "$old"; for _ in $(seq 1 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
  fi
fi
rm -rf "$DEMO"
mkdir -p "$DEMO"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=${DEMO_PORT:-8080}
if ! port_free "$PORT"; then
  PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
URL="http://127.0.0.1:$PORT"

say "1/5 synthetic dataset (prism-data synth)"
"$DATABIN" synth --out "$DEMO/data" --tokens 2M --vocab 256 --seed 1 --val-frac 0.01

say "2/5 sweep $SPEC ($STEPS steps, every evaluation on the whole val split)"
# the spec made quick: fewer steps (the LR schedule, warm-up and evaluations scaled to them); every evaluation on
# the whole val split ("eval.batches": "all": the worker counts the split's whole batches itself)
/usr/bin/python3 - "$SPEC" "$DEMO/data/meta.json" "$STEPS" > "$DEMO/spec.json" <<'PY'
import json, sys
spec, meta, steps = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
tr, ev = spec["train"], spec["eval"]
if 0 < steps < tr["steps"]:
    scale = steps / tr["steps"]
    tr["warmup_steps"] = max(1, round(tr.get("warmup_steps", 0) * scale))
    ev["every"] = max(1, steps // 3)
    tr["steps"] = steps
ev["batches"] = "all"
json.dump(spec, sys.stdout, indent=1)
PY
"$SWEEPBIN" create "$DEMO/spec.json" --db "$DEMO/prism.db"

say "3/5 orchestrator on $URL"
# its own session: a Ctrl-C reaches the worker (which then checkpoints and reports to a live server);
# the orchestrator is stopped afterwards by the cleanup below
setsid "$SWEEPBIN" serve --db "$DEMO/prism.db" --listen "127.0.0.1:$PORT" --web web > "$DEMO/server.log" 2>&1 &
SERVER=$!
echo "$SERVER" > "$DEMO/server.pid"
WORKER=
cleanup() {
  [ -n "$WORKER" ] && kill -TERM "$WORKER" 2>/dev/null && wait "$WORKER" 2>/dev/null
  if [ "${DEMO_KEEP:-0}" != 1 ]; then kill -TERM "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null; rm -f "$DEMO/server.pid"; fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf "$URL/healthz" >/dev/null || { cat "$DEMO/server.log"; echo "demo: the orchestrator did not start" >&2; exit 1; }
echo "leaderboard (live): $URL/"
echo "API:                $URL/api/v1/sweeps"
echo "orchestrator log:   $DEMO/server.log"

SLOTS=${DEMO_SLOTS:-$(nproc 2>/dev/null || echo 1)}
[ "$SLOTS" -ge 1 ] 2>/dev/null || SLOTS=1
[ "$SLOTS" -le 8 ] || SLOTS=8
DEVICES=$(printf 'cpu%.0s,' $(seq 1 "$SLOTS")); DEVICES=${DEVICES%,}
say "4/5 worker (prism-worker --devices $DEVICES, one thread each); live progress below"
OMP_NUM_THREADS=1 "$WORKERBIN" --server "$URL" --token-file "$DEMO/prism.db.worker-token" --devices "$DEVICES" \
  --name demo-cpu --work-dir "$DEMO/work" --data-root "$DEMO" --poll 0.5 --idle-exit 2 &
WORKER=$!
wait "$WORKER" || { echo "demo: the worker failed (exit $?)" >&2; exit 1; }
WORKER=

say "5/5 leaderboard: $SWEEP ($(( $(date +%s) - start )) s)"
# the orchestrator owns the database while it runs: stop it, then read the file
if [ "${DEMO_KEEP:-0}" = 1 ]; then
  curl -s "$URL/api/v1/sweeps/1/leaderboard?format=csv"
  echo "the orchestrator keeps running on $URL (pid $SERVER); stop it with: kill $SERVER"
else
  kill -TERM "$SERVER"; wait "$SERVER" 2>/dev/null || true; rm -f "$DEMO/server.pid"
  "$SWEEPBIN" status --db "$DEMO/prism.db" "$SWEEP" || true
  echo
  "$SWEEPBIN" leaderboard --db "$DEMO/prism.db" "$SWEEP"
  # what the losses mean (the data's entropy floors) and where each layer looks (attention distance D_l)
  "$SWEEPBIN" leaderboard --db "$DEMO/prism.db" "$SWEEP" --format json | /usr/bin/python3 -c '
import json, sys
m, lb = json.load(open(sys.argv[1])), json.load(sys.stdin)
print("\ndata: unigram entropy %.3f nats, bigram entropy %.3f (no model using only the previous token gets below it)"
      % (m["unigram_entropy"], m.get("bigram_entropy", float("nan"))))
print("attention distance D_l per layer (mean over seeds; uniform attention would give %.1f):" % (3 * float(sys.argv[2]) / 8 - 0.25))
for r in lb["rows"]:
    d = r.get("attn_distance")
    if d: print("  %-12s %s" % (",".join(map(str, r["heads"])), "  ".join("%5.1f" % x for x in d)))
' "$DEMO/data/meta.json" "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["train"]["seq_len"])' "$SPEC")" || true
fi
