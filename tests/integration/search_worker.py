#!/usr/bin/env python3
"""tests/integration/search_worker.py — a worker over the real worker HTTP API (docs/API.md: register, lease,
complete, fail) that trains nothing: each leased job's val loss comes from a synthetic landscape over the schedule,
so a surrogate search (orchestrator/search.h) can be driven through the real server in seconds.

    search_worker.py PORT TOKEN_FILE [--idle-exit S] [--max-jobs N] [--fail-every N] [--job-delay S] [--rough]
                     [--lr-opt LR] [--quiet]

val_loss = 3.36 + truth(heads) + seed effect (sd 0.02, shared by every schedule) + run noise (sd 0.002, a hash of
heads and seed: the same cell always gives the same value, in every run). truth: additive over layers,
Σ_l (log2(d/h_l) − c(p_l))² with c(p) = 8 − 3p (wide heads early), scaled so its range over the layers' choices
is about 0.03 (the paper's gaps); --rough adds a hashed per-schedule term (sd 0.003). d_model comes from the
job's model. --fail-every N reports every Nth leased job as failed (retryable false): a failed job must not stop
or corrupt the search. It exits 0 after --idle-exit seconds (default 3) of empty leases, or after --max-jobs
jobs; 1 on a protocol error. --lr-opt LR adds 0.05 (log10(lr / LR))² for the job's train.lr (a search over
"search.dims" train.lr: the best schedule at the best learning rate). Prints one line per job unless --quiet; at the end `jobs=N failed=M`.
"""
import argparse
import hashlib
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from realsweep_replay import Api  # noqa: E402  (the project's worker-API client)


def unit(*key):
    """A deterministic N(0, 1) from the key (Box-Muller on two hashed uniforms)."""
    h = hashlib.sha256(repr(key).encode()).digest()
    u1 = (int.from_bytes(h[:8], "little") + 1) / 2.0 ** 64
    u2 = int.from_bytes(h[8:16], "little") / 2.0 ** 64
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def truth(heads, d_model, rough):
    L = len(heads)
    s = 0.0
    for l, h in enumerate(heads):
        p = (l + 0.5) / L
        s += (math.log2(d_model / h) - (8 - 3 * p)) ** 2
    t = 0.03 * s / (L * 9.0)
    if rough:
        t += 0.003 * unit("rough", tuple(heads))
    return t


def val_loss(heads, seed, d_model, rough):
    return 3.36 + truth(heads, d_model, rough) + 0.02 * unit("seed", seed) + 0.002 * unit("cell", tuple(heads), seed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("token_file")
    ap.add_argument("--idle-exit", type=float, default=3.0)
    ap.add_argument("--max-jobs", type=int, default=0)
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--rough", action="store_true")
    ap.add_argument("--job-delay", type=float, default=0.0, help="seconds between a lease and its answer")
    ap.add_argument("--lr-opt", type=float, default=0.0)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    with open(a.token_file) as f:
        api = Api(a.port, f.read().strip())
    wid = api.ok("POST", "/api/v1/workers/register", {"name": "search-worker", "host": "sim", "devices": ["cpu"]})["worker_id"]
    jobs = failed = 0
    idle_since = None
    while not (a.max_jobs and jobs >= a.max_jobs):
        code, lease = api.call("POST", "/api/v1/lease", {"worker_id": wid})
        if code == 204:
            idle_since = idle_since or time.time()
            if time.time() - idle_since >= a.idle_exit:
                break
            time.sleep(0.05)
            continue
        if code != 200:
            print("search_worker: lease: HTTP %d: %s" % (code, lease), file=sys.stderr)
            return 1
        idle_since = None
        jobs += 1
        jid, tok, heads, seed = lease["job_id"], lease["lease_token"], lease["heads"], lease["seed"]
        if a.fail_every and jobs % a.fail_every == 0:
            api.ok("POST", "/api/v1/jobs/%d/fail" % jid, {"lease_token": tok, "error": "simulated failure", "retryable": False})
            failed += 1
            continue
        if a.job_delay:
            time.sleep(a.job_delay)
        d_model = lease["job"]["model"]["d_model"] if "job" in lease else int(os.environ.get("SEARCH_DMODEL", "768"))
        v = val_loss(heads, seed, d_model, a.rough)
        if a.lr_opt:
            v += 0.05 * math.log10(lease["job"]["train"]["lr"] / a.lr_opt) ** 2
        api.ok("POST", "/api/v1/jobs/%d/complete" % jid, {"lease_token": tok, "result": {"val_loss": v}})
        if not a.quiet:
            print("job %d heads %s seed %d val_loss %.6f" % (jid, ",".join(map(str, heads)), seed, v), flush=True)
    print("jobs=%d failed=%d" % (jobs, failed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
