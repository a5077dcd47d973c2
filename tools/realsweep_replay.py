#!/usr/bin/env python3
"""tools/realsweep_replay.py — the leaderboard of tests/fixtures/realsweep/ re-derived from its results by the
current build, without training anything.

    tools/realsweep_replay.py FIXTURE_DIR BUILD_DIR OUT_DIR [--keep-db] [--quiet]

FIXTURE_DIR holds spec.json, results.jsonl and val_metrics.jsonl (tools/realsweep.sh exports them). This makes a
fresh database (BUILD_DIR/prism-sweep create spec.json), starts BUILD_DIR/prism-sweep serve on a free loopback port
and, acting as one worker over the worker HTTP API (docs/API.md: register, lease, metrics, complete), leases every
job and posts, for each, the val points and the result object that the fixture recorded for its schedule's heads
and seed (matched by heads + seed, not by job id; floats sent at full precision) — so the server stores them as if
it had trained them. It writes OUT_DIR/leaderboard.json (prism-sweep leaderboard --format json) and
OUT_DIR/leaderboard.txt (the table), stops the server (SIGTERM, exit 0 expected), and exports the database again
(prism-sweep export --format jsonl, the command that wrote the fixture): every results.jsonl row and val point must
equal the fixture's, every key and every double exactly.

To refresh the committed leaderboard after a ranking change:
    tools/realsweep_replay.py tests/fixtures/realsweep build /tmp/replay && cp /tmp/replay/leaderboard.* tests/fixtures/realsweep/
(tests/integration/test_realsweep.sh, t_leaderboard_is_the_replays, fails until they are refreshed).

--keep-db keeps the database as OUT_DIR/prism.db (default: a temporary folder, removed). Exit 0 done, 1 any
failure (named on stderr, with the server's log). python3 standard library only.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def die(msg):
    print("realsweep_replay: " + msg, file=sys.stderr)
    sys.exit(1)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Api:
    """One keep-alive connection to the server; reconnects once on a dropped connection."""

    def __init__(self, port, token):
        self.port, self.token, self.conn = port, token, None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def ok(self, method, path, body=None, want=200):
        """the reply of a request answered with want (a status, or a tuple of them); else RuntimeError"""
        code, reply = self.call(method, path, body)
        if code not in (want if isinstance(want, tuple) else (want,)):
            raise RuntimeError("%s %s: HTTP %d, expected %s: %s" % (method, path, code, want, reply))
        return reply


def start_server(sweep_cli, db, log):
    """prism-sweep serve on db at a free loopback port, its output to the open file log, once /healthz answers:
    (the Popen, the port). RuntimeError when it exits or does not answer within 10 s (the process is then killed)."""
    port = free_port()
    server = subprocess.Popen([sweep_cli, "serve", "--db", db, "--listen", "127.0.0.1:%d" % port],
                              stdout=log, stderr=log, start_new_session=True)
    for _ in range(200):
        if server.poll() is not None:
            raise RuntimeError("the server exited with status %d" % server.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/healthz")
            up = c.getresponse().status == 200
            c.close()
            if up:
                return server, port
        except OSError:
            pass
        time.sleep(0.05)
    server.kill()
    server.wait()
    raise RuntimeError("the server did not answer /healthz within 10 s")


def fixture_jobs(fix):
    """{(heads tuple, seed): (result, [val points sorted by step])} from results.jsonl and val_metrics.jsonl."""
    jobs = {}
    for j in read_jsonl(os.path.join(fix, "results.jsonl")):
        key = (tuple(j["heads"]), j["seed"])
        if key in jobs:
            die("results.jsonl: two jobs for heads %s seed %d" % key)
        if j.get("state") != "done" or not isinstance(j.get("result"), dict):
            die("results.jsonl: heads %s seed %d is not a finished job with a result" % key)
        jobs[key] = (j["result"], [])
    for p in read_jsonl(os.path.join(fix, "val_metrics.jsonl")):
        key = (tuple(p["heads"]), p["seed"])
        if key not in jobs:
            die("val_metrics.jsonl: a point of heads %s seed %d, which results.jsonl lacks" % key)
        jobs[key][1].append(p)
    for key, (_, pts) in jobs.items():
        pts.sort(key=lambda p: p["step"])
        if len({p["step"] for p in pts}) != len(pts):
            die("val_metrics.jsonl: heads %s seed %d has a step twice" % key)
    return jobs


def replay(api, jobs):
    """Leases until nothing is left, posting each job's recorded val points and result; returns {job_id: key}."""
    wid = api.ok("POST", "/api/v1/workers/register",
                 {"name": "realsweep-replay", "host": "replay", "devices": ["cpu"]})["worker_id"]
    done = {}
    while True:
        code, lease = api.call("POST", "/api/v1/lease", {"worker_id": wid})
        if code == 204:
            break
        if code != 200:
            raise RuntimeError("lease: HTTP %d: %s" % (code, lease))
        key = (tuple(lease["heads"]), lease["seed"])
        if key not in jobs:
            raise RuntimeError("leased job %d (heads %s seed %d) is not in the fixture" % ((lease["job_id"],) + key))
        if key in done.values():
            raise RuntimeError("leased heads %s seed %d twice" % key)
        result, pts = jobs[key]
        jid, tok = lease["job_id"], lease["lease_token"]
        points = [{"step": p["step"], "val_loss": p["value"]} for p in pts]
        reply = api.ok("POST", "/api/v1/jobs/%d/metrics" % jid, {"lease_token": tok, "points": points})
        if reply["accepted"] != len(points):
            raise RuntimeError("job %d: %d of %d val points accepted" % (jid, reply["accepted"], len(points)))
        api.ok("POST", "/api/v1/jobs/%d/complete" % jid, {"lease_token": tok, "result": result})
        done[jid] = key
    if len(done) != len(jobs):
        raise RuntimeError("leased %d jobs, the fixture has %d" % (len(done), len(jobs)))
    return done


def check_export(sweep_cli, db, sweep, fix, work):
    """prism-sweep export --format jsonl (doubles at 17 digits, as the fixture was written; the HTTP read routes
    print 15) of the replayed database: every results.jsonl row and every val point of metrics.jsonl must equal the
    fixture's row of the same heads + seed and step, every key and exact double. Returns how many doubles compared."""
    out = os.path.join(work, "export")
    subprocess.run([sweep_cli, "export", sweep, "--db", db, "--format", "jsonl", "--out", out], check=True,
                   stdout=subprocess.DEVNULL)
    key = lambda r: (tuple(r["heads"]), r["seed"]) + ((r["step"],) if "step" in r else ())
    n = 0
    for name, mine, kind in (("results.jsonl", "results.jsonl", None), ("val_metrics.jsonl", "metrics.jsonl", "val")):
        # a key whose value is null says "none" as its absence does: columns added after the fixture was exported
        # (val_loss_se, migration 18) are null in the replay and absent from the fixture
        def known(r):
            return {c: v for c, v in r.items() if v is not None}
        want = {key(r): known(r) for r in read_jsonl(os.path.join(fix, name))}
        have = {key(r): known(r) for r in read_jsonl(os.path.join(out, mine)) if kind is None or r["kind"] == kind}
        if set(want) != set(have):
            raise RuntimeError("export's %s: %d rows, the fixture's %s %d (%d not in both)" % (
                mine, len(have), name, len(want), len(set(want) ^ set(have))))
        for k in sorted(want):
            if have[k] != want[k]:
                diff = sorted(c for c in set(want[k]) | set(have[k]) if want[k].get(c) != have[k].get(c))
                raise RuntimeError("heads %s seed %d%s: export's %s differs from the fixture's %s in %s: %s vs %s" % (
                    k[0], k[1], " step %d" % k[2] if len(k) > 2 else "", mine, name, diff,
                    json.dumps({c: have[k].get(c) for c in diff})[:600], json.dumps({c: want[k].get(c) for c in diff})[:600]))
            n += floats(want[k])
    return n


def floats(v):
    """How many doubles a JSON value holds."""
    if isinstance(v, dict):
        return sum(floats(x) for x in v.values())
    if isinstance(v, list):
        return sum(floats(x) for x in v)
    return isinstance(v, float)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixture")
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--keep-db", action="store_true", help="keep the database as OUT/prism.db")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    sweep_cli = os.path.join(os.path.abspath(a.build), "prism-sweep")
    if not os.access(sweep_cli, os.X_OK):
        die("%s: not an executable (build first: make all)" % sweep_cli)
    spec_path = os.path.join(a.fixture, "spec.json")
    with open(spec_path) as f:
        sweep = json.load(f)["name"]
    jobs = fixture_jobs(a.fixture)
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="realsweep-replay-")
    db = os.path.join(work, "prism.db")
    log_path = os.path.join(work, "server.log")
    server = None
    t0 = time.time()
    try:
        subprocess.run([sweep_cli, "create", spec_path, "--db", db], check=True, stdout=subprocess.DEVNULL)
        log = open(log_path, "w")
        server, port = start_server(sweep_cli, db, log)
        with open(db + ".worker-token") as f:
            api = Api(port, f.read().strip())
        done = replay(api, jobs)
        for name, fmt in (("leaderboard.json", ["--format", "json"]), ("leaderboard.txt", [])):
            out = subprocess.run([sweep_cli, "leaderboard", "--db", db, sweep] + fmt, check=True,
                                 stdout=subprocess.PIPE).stdout
            with open(os.path.join(a.out, name), "wb") as f:
                f.write(out)
        server.send_signal(signal.SIGTERM)
        rc = server.wait(timeout=30)
        server = None
        if rc != 0:
            raise RuntimeError("the server exited with status %d after SIGTERM" % rc)
        compared = check_export(sweep_cli, db, sweep, a.fixture, work)
        if a.keep_db:
            for suffix in ("", ".tokens", ".worker-token"):
                shutil.copy2(db + suffix, os.path.join(a.out, "prism.db" + suffix))
        if not a.quiet:
            print("realsweep_replay: %d jobs replayed, %d doubles read back exactly, %s/leaderboard.json and "
                  "leaderboard.txt written (%.1f s)" % (len(done), compared, a.out, time.time() - t0))
    except (RuntimeError, OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired, KeyError) as e:
        if server is not None:
            server.kill()
            server.wait()
            server = None
        try:
            sys.stderr.write(open(log_path).read()[-4000:])
        except OSError:
            pass
        die(str(e))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
