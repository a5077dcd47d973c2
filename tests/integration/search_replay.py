#!/usr/bin/env python3
"""tests/integration/search_replay.py — a surrogate search over a real CPU sweep's full grid, replayed through the
real server: the fixture (tests/fixtures/searchsweep: every schedule of its rules trained by the CPU engine on every
seed) answers each job the search leases with the result the engine gave that schedule and seed (the engine is
deterministic per schedule and seed, so a replayed job is the job trained again).

    search_replay.py FIXTURE_DIR BUILD_DIR --budget N [--init M] [--batch K] [--out FILE]

It creates the fixture's spec with "search": {"strategy": "surrogate", "budget": N, "init": M, "batch": K} in a
fresh database, starts prism-sweep serve, replays leased jobs (val points, then the result: the worker API) until
the search is over, and prints (or writes to FILE) one JSON object: the search object of the server's leaderboard,
the recommended schedule's rank, delta and best-group membership in the fixture's full-grid leaderboard, the
schedules trained, and the full grid's best group. Exit 0 done, 1 on any failure (the server's log on stderr).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from realsweep_replay import Api, fixture_jobs, start_server  # noqa: E402


def replay_search(api, jobs, deadline):
    """Leases until the search is over (a 204 with nothing left to lease twice in a row, 1 s apart)."""
    wid = api.ok("POST", "/api/v1/workers/register", {"name": "search-replay", "host": "replay", "devices": ["cpu"]})["worker_id"]
    done, idle = 0, 0
    while time.time() < deadline:
        code, lease = api.call("POST", "/api/v1/lease", {"worker_id": wid})
        if code == 204:
            idle += 1
            if idle >= 3:
                return done
            time.sleep(0.5)
            continue
        if code != 200:
            raise RuntimeError("lease: HTTP %d: %s" % (code, lease))
        idle = 0
        key = (tuple(lease["heads"]), lease["seed"])
        if key not in jobs:
            raise RuntimeError("leased heads %s seed %d: not in the fixture's grid" % key)
        result, pts = jobs[key]
        jid, tok = lease["job_id"], lease["lease_token"]
        points = [{"step": p["step"], "val_loss": p["value"]} for p in pts]
        api.ok("POST", "/api/v1/jobs/%d/metrics" % jid, {"lease_token": tok, "points": points})
        api.ok("POST", "/api/v1/jobs/%d/complete" % jid, {"lease_token": tok, "result": result})
        done += 1
    raise RuntimeError("the search did not end within the deadline")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("build")
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--init", type=int, default=5)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    cli = os.path.join(os.path.abspath(a.build), "prism-sweep")
    with open(os.path.join(a.fixture, "spec.json")) as f:
        spec = json.load(f)
    with open(os.path.join(a.fixture, "leaderboard.json")) as f:
        grid = json.load(f)
    spec["name"] = spec["name"] + "-search"
    spec["search"] = {"strategy": "surrogate", "budget": a.budget, "init": a.init, "batch": a.batch}
    jobs = fixture_jobs(a.fixture)
    work = tempfile.mkdtemp(prefix="search-replay-")
    db, log_path = os.path.join(work, "prism.db"), os.path.join(work, "server.log")
    server = None
    try:
        with open(os.path.join(work, "spec.json"), "w") as f:
            json.dump(spec, f)
        subprocess.run([cli, "create", os.path.join(work, "spec.json"), "--db", db], check=True, stdout=subprocess.DEVNULL)
        log = open(log_path, "w")
        server, port = start_server(cli, db, log)
        with open(db + ".worker-token") as f:
            api = Api(port, f.read().strip())
        n = replay_search(api, jobs, time.time() + 120)
        lb = json.loads(subprocess.run([cli, "leaderboard", "--db", db, spec["name"], "--format", "json"], check=True,
                                       stdout=subprocess.PIPE).stdout)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        server = None
        s = lb["search"]
        rows = {",".join(map(str, r["heads"])): r for r in grid["rows"]}
        rec = s["recommended"]["heads"]
        best = sorted(h for h, r in rows.items() if r.get("tied_best"))
        out = {"jobs_replayed": n, "search": s, "grid_schedules": len(rows), "grid_best_group": best,
               "recommended": rec, "recommended_grid_rank": rows[rec]["rank"],
               "recommended_grid_delta": (rows[rec]["delta"] or {}).get("mean") if isinstance(rows[rec]["delta"], dict) else None,
               "recommended_in_best_group": rec in best,
               "trained": sorted(",".join(map(str, r["heads"])) for r in lb["rows"] if r["seeds_done"] > 0)}
        text = json.dumps(out, indent=1)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text + "\n")
        else:
            print(text)
    except (RuntimeError, OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired, KeyError) as e:
        try:
            sys.stderr.write(open(log_path).read()[-4000:])
        except OSError:
            pass
        print("search_replay: %s" % e, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
