#!/usr/bin/env bash
# bench/bench_halving_stall.sh — how long a rung report holds the server's event loop in a halving sweep of
# 3,000 schedules (issue 31 item 4: each report held it 1.1-1.3 s and grew as reports accumulated).
# A sweep of SCHEDULES schedules x 1 seed (L=16, d_model=64, h_base=16, permissive rules, `sample`), halving
# {"eta": 3, "rungs": [0.5]} in MODE (sync or async), is created with `prism-sweep create`; all but REPORTS of
# its jobs are put at the rung directly in the file (paused, with a rung result), as if reported earlier, and the
# other REPORTS leased. A real `prism-sweep serve` then takes their rung reports over HTTP (checkpoint, rung),
# while a
# second client asks GET /healthz every 2 ms: the longest /healthz wait is the loop's longest stall. Prints the
# median and largest time of a rung report, the longest stall, and the time of the report that completes the
# rung (sync: the one that ranks and promotes).
#   SCHEDULES=N (3000)  REPORTS=N (60)  MODE=sync|async|both (both)  OUT=DIR keep the run
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PS=$BUILD/prism-sweep
[ -x "$PS" ] || { echo "bench_halving_stall: $PS not built (make all)" >&2; exit 2; }
D=${OUT:-$(mktemp -d /tmp/prism-bench-stall-XXXXXX)}
mkdir -p "$D"
SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null; [ -n "${OUT:-}" ] || rm -rf "$D"' EXIT
N=${SCHEDULES:-3000} R=${REPORTS:-60}
modes=${MODE:-both}; [ "$modes" = both ] && modes="sync async"
echo "bench_halving_stall: $N schedules x 1 seed, the last $R rung reports over HTTP, $(nproc) cores"
for mode in $modes; do
  rm -f "$D/$mode.db"*
  cat >"$D/$mode.json" <<EOF
{"name": "stall-$mode", "model": {"n_layer": 16, "d_model": 64, "vocab_size": 256, "padded_vocab_size": 256, "seq_len": 32},
 "rules": {"h_base": 16, "max_head_dim": 0, "min_block": 1, "max_block": 0, "min_baseline": 0},
 "sample": {"n": $N, "seed": 1}, "seeds": [1],
 "train": {"batch_size": 2, "seq_len": 32, "steps": 90, "lr": 0.001}, "eval": {"every": 0, "batches": 1},
 "data": {"train": "d/train_*.bin", "val": "d/val_*.bin"}, "halving": {"eta": 3, "rungs": [0.5], "mode": "$mode"}}
EOF
  "$PS" create "$D/$mode.json" --db "$D/$mode.db" >"$D/$mode.create.log" 2>&1 || { cat "$D/$mode.create.log"; exit 2; }
  /usr/bin/python3 - "$D/$mode.db" "$R" <<'PY' || exit 2
import sqlite3, sys
db, keep = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db, timeout=30)
ids = [r[0] for r in c.execute("SELECT id FROM jobs ORDER BY id")]
pre = ids[:len(ids) - keep]   # at the rung already: paused, with a result at step 45 (loss differs per job)
c.executemany("UPDATE jobs SET state = 'paused', attempt = 1, step = 45, checkpoint_step = 45, checkpoint_path = "
              "'/ck/job-' || id || '-a1/ckpt_45.bin' WHERE id = ?", [(i,) for i in pre])
c.executemany("INSERT INTO rung_results (job_id, rung, step, attempt, val_loss, reported_at) VALUES (?, 0, 45, 1, ?, 0)",
              [(i, 3.0 + (i * 7919 % 1000) / 1e4) for i in pre])
# the last ones are leased (token "bench-ID"), so that the server's start-up tick (async: it promotes at once)
# cannot hand out other jobs in their place; serve gives each live lease one TTL from its start
c.executemany("UPDATE jobs SET state = 'leased', attempt = 1, lease_token = 'bench-' || id, lease_expires_at = 0 "
              "WHERE id = ?", [(i,) for i in ids[len(ids) - keep:]])
c.commit()
print(",".join(str(i) for i in ids[len(ids) - keep:]), file=open(db + ".leased", "w"))
PY
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$PS" serve --db "$D/$mode.db" --listen "127.0.0.1:$port" 2>"$D/$mode.serve.log" &
  SPID=$!
  for i in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.05; done
  /usr/bin/python3 - "$port" "$(sed -n 's/^worker_token=//p' "$D/$mode.db.tokens")" "$(cat "$D/$mode.db.leased")" "$mode" <<'PY' || exit 1
import http.client, json, statistics, sys, threading, time
port, tok, leased, mode = int(sys.argv[1]), sys.argv[2], [int(x) for x in sys.argv[3].split(",")], sys.argv[4]
H = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
def post(path, body):
    conn.request("POST", path, json.dumps(body), H)
    r = conn.getresponse(); d = r.read()
    if r.status != 200: raise SystemExit("%s: HTTP %d %s" % (path, r.status, d[:300]))
    return json.loads(d) if d else None
stop, stalls = False, []
def pinger():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    while not stop:
        t0 = time.perf_counter(); c.request("GET", "/healthz"); c.getresponse().read()
        stalls.append(time.perf_counter() - t0); time.sleep(0.002)
th = threading.Thread(target=pinger, daemon=True); th.start(); time.sleep(0.2)
times = []
for j in leased:
    t = "bench-%d" % j
    post("/api/v1/jobs/%d/checkpoint" % j, {"lease_token": t, "path": "/ck/job-%d-a1/ckpt_45.bin" % j, "step": 45})
    t0 = time.perf_counter()
    post("/api/v1/jobs/%d/rung" % j, {"lease_token": t, "step": 45, "val_loss": 3.0 + (j * 7919 % 1000) / 1e4})
    times.append(time.perf_counter() - t0)
time.sleep(0.2); stop = True; th.join()
ts = sorted(times)
print("  %-5s rung report: median %.1f ms, largest %.1f ms (the rung-completing one %.1f ms); loop's longest stall "
      "(/healthz, %d asks): %.1f ms" % (mode, 1e3 * statistics.median(ts), 1e3 * ts[-1], 1e3 * times[-1], len(stalls),
                                       1e3 * max(stalls)))
PY
  kill "$SPID"; wait "$SPID" 2>/dev/null; SPID=
done
