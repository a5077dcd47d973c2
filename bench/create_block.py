#!/usr/bin/env python3
# bench/create_block.py — how long one POST /api/v1/sweeps holds the orchestrator's event loop.
# Starts `prism-sweep serve` (BINARY) on a fresh database in a temporary folder; a thread GETs /healthz back
# to back on a keep-alive connection; the longest single /healthz round trip while the POST runs is the time
# the loop was blocked. Cases (the spec posted):
#   jobs41k    41 schedules (sample 40 of L=12) x 1000 seeds = 41,000 jobs, a 5 KB spec
#   jobs5k     50 schedules x 100 seeds = 5,000 jobs (the most one request may create)
#   wide100k   sample 100,000 schedules of L=200 (n_layer 200, d_model 3072), 1 seed
#   wide5k     sample 4,999 schedules of L=200, 1 seed (5,000 jobs with the baseline)
# Usage: python3 bench/create_block.py build/prism-sweep CASE...
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

BASE = {"model": {"n_layer": 12, "d_model": 768, "vocab_size": 256, "padded_vocab_size": 256, "seq_len": 32},
        "rules": {"h_base": 12}, "train": {"batch_size": 2, "seq_len": 32, "grad_accum": 1, "steps": 10, "lr": 0.001},
        "eval": {"every": 5, "batches": 1}, "data": {"train": "d/train_*.bin", "val": "d/val_*.bin"}}
WIDE_MODEL = dict(BASE["model"], n_layer=200, d_model=3072)
WIDE_RULES = {"h_base": 48, "max_head_dim": 0, "min_baseline": 0, "max_block": 0, "min_block": 1}
CASES = {
    "jobs41k": dict(BASE, name="jobs41k", sample={"n": 40, "seed": 1}, seeds=list(range(1, 1001))),
    "jobs5k": dict(BASE, name="jobs5k", sample={"n": 49, "seed": 1}, seeds=list(range(100))),
    "wide100k": dict(BASE, name="wide100k", model=WIDE_MODEL, rules=WIDE_RULES, sample={"n": 100000, "seed": 1}, seeds=[1]),
    "wide5k": dict(BASE, name="wide5k", model=WIDE_MODEL, rules=WIDE_RULES, sample={"n": 4999, "seed": 1}, seeds=[1]),
}

def run(binary, case, d):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    db = os.path.join(d, case + ".db")
    p = subprocess.Popen([binary, "serve", "--db", db, "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/healthz")
                c.getresponse().read(); break
            except OSError:
                time.sleep(0.05)
        at = [l.split("=", 1)[1].strip() for l in open(db + ".tokens") if l.startswith("admin_token=")][0]
        stop, worst = [False], [0.0]
        def poll():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
            while not stop[0]:
                t = time.monotonic(); c.request("GET", "/healthz"); c.getresponse().read()
                worst[0] = max(worst[0], time.monotonic() - t)
        th = threading.Thread(target=poll); th.start()
        time.sleep(0.3); worst[0] = 0.0
        body = json.dumps(CASES[case]).encode()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        t = time.monotonic()
        c.request("POST", "/api/v1/sweeps", body=body, headers={"Authorization": "Bearer " + at})
        r = c.getresponse(); out = r.read()
        dt = time.monotonic() - t
        time.sleep(0.2); stop[0] = True; th.join()
        print(f"{case}: POST {len(body)} bytes -> HTTP {r.status} in {dt:.3f} s; longest /healthz wait "
              f"{worst[0] * 1000:.0f} ms; {out[:100].decode(errors='replace')}")
    finally:
        p.terminate(); p.wait()

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        for case in sys.argv[2:]:
            run(sys.argv[1], case, d)
