#!/usr/bin/env python3
"""bench_page_poll.py — workers' heartbeat latency while the page polls a sweep of 100,000 jobs (issue #44).

Builds (once, into --work) a database holding one sweep of --jobs jobs: sweeps/llama-tiny-cpu.json created with
the given build's prism-sweep, then filler schedules x 2 seeds inserted with SQL as tests/unit/test_hotpath_cost.c
does. For each build given (NAME=BUILD_DIR, alternated --rounds times) it serves a fresh copy of that database
(`prism-sweep serve`, which migrates it), leases --workers jobs to as many registered workers, and for --seconds
runs, at once:
  - the workers: each sends a heartbeat every --every seconds on its own keep-alive connection (latency timed);
  - the page: every 2 s what web/app.js asks (GET sweeps, the sweep, its leaderboard, its jobs — the whole list
    page by page the first time, then ?since=cursor — and the leased jobs' curves), timed per route.
Prints per build and round: heartbeats sent, p50/p99/max latency, and each polled route's count and max time.

  bench/bench_page_poll.py --work /tmp/pp old=/path/to/old/build new=build [--rounds 2] [--seconds 60]
"""
import argparse, http.client, json, multiprocessing, os, re, shutil, sqlite3, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_template(build, work, jobs):
    path = os.path.join(work, "template.db")
    if os.path.exists(path):
        return path
    tmp = path + ".tmp"
    for p in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    subprocess.run([os.path.join(build, "prism-sweep"), "create", os.path.join(ROOT, "sweeps/llama-tiny-cpu.json"),
                    "--db", tmp], check=True, stdout=subprocess.DEVNULL)
    db = sqlite3.connect(tmp)
    base = db.execute("SELECT count(*) FROM jobs").fetchone()[0]
    extra = (jobs - base) // 2
    db.execute("WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?) INSERT INTO schedules "
               "(sweep_id, heads, is_baseline, ord) SELECT 1, '4,4,4,' || (4 + i), 0, 1000000 + i FROM k", (extra,))
    db.execute("INSERT INTO jobs (sweep_id, schedule_id, seed, seed_index, priority, state, job, steps, tokens_per_step, "
               "created_at, updated_at, rung, stop_at_step) SELECT t.sweep_id, sc.id, s.seed, s.si, t.priority, 'queued', "
               "t.job, t.steps, t.tokens_per_step, t.created_at, t.updated_at, t.rung, t.stop_at_step FROM schedules sc, "
               "(SELECT 1 AS seed, 0 AS si UNION ALL SELECT 2, 1) s, (SELECT * FROM jobs ORDER BY id LIMIT 1) t "
               "WHERE sc.ord >= 1000000")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    os.rename(tmp, path)
    return path


class Client:
    def __init__(self, port, token):
        self.port, self.token, self.c = port, token, None
        self.cache = {}   # GET path -> (ETag, parsed body): revalidated as a browser does (Cache-Control: no-cache)

    def req(self, method, path, body=None):
        for attempt in range(2):
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                hdr = {"Authorization": "Bearer " + self.token}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdr["Content-Type"] = "application/json"
                held = self.cache.get(path) if method == "GET" else None
                if held:
                    hdr["If-None-Match"] = held[0]
                self.c.request(method, path, body=data, headers=hdr)
                r = self.c.getresponse()
                out = r.read()
                if r.status == 304 and held:
                    return 200, held[1]
                doc = json.loads(out) if out else None
                tag = r.getheader("ETag")
                if method == "GET" and tag and r.status == 200:
                    self.cache[path] = (tag, doc)
                return r.status, doc
            except (OSError, http.client.HTTPException):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        return 0, None


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def one_run(name, build, template, work, args):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    db = os.path.join(d, "p.db")
    shutil.copy(template, db)
    port = 20000 + os.getpid() % 20000
    log = open(os.path.join(d, "server.log"), "w")
    srv = subprocess.Popen([os.path.join(build, "prism-sweep"), "serve", "--db", db, "--listen", "127.0.0.1:%d" % port,
                            "--lease-ttl", "600"], stdout=log, stderr=log)
    try:
        for _ in range(600):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        tok = open(db + ".worker-token").read().strip()
        leases = []
        for i in range(args.workers):
            c = Client(port, tok)
            _, w = c.req("POST", "/api/v1/workers/register", {"name": "w%d" % i})
            _, l = c.req("POST", "/api/v1/lease", {"worker_id": w["worker_id"], "device": "cpu"})
            leases.append((c, l))
        stop = time.time() + args.seconds
        lat, routes, errors = [], {}, [0]

        def worker(c, l):
            step = 0
            nxt = time.time()
            while time.time() < stop:
                step += 1
                t0 = time.time()
                st, _ = c.req("POST", "/api/v1/jobs/%d/heartbeat" % l["job_id"],
                              {"lease_token": l["lease_token"], "step": step, "loss": 4.0})
                lat.append(time.time() - t0)
                if st != 200:
                    errors[0] += 1
                nxt += args.every
                time.sleep(max(0, nxt - time.time()))

        def timed(c, key, path):
            if key in args.skip:
                return {}
            t0 = time.time()
            st, body = c.req("GET", path)
            routes.setdefault(key, []).append(time.time() - t0)
            return body

        def page(q):   # its own process: parsing a 25 MB leaderboard must not hold the workers' GIL (their latency)
            c = Client(port, tok)
            cursor = None
            while time.time() < stop:
                t0 = time.time()
                timed(c, "sweeps", "/api/v1/sweeps")
                timed(c, "leaderboard", "/api/v1/sweeps/1/leaderboard")
                timed(c, "sweep", "/api/v1/sweeps/1")
                if cursor is None and "jobs (whole)" in args.skip:
                    cursor = 0
                if cursor is None:   # the whole list, page by page where the server pages
                    b = timed(c, "jobs (whole)", "/api/v1/sweeps/1/jobs")
                    cursor = b.get("cursor")
                    while b.get("more"):
                        b = timed(c, "jobs (whole)", "/api/v1/sweeps/1/jobs?after=%d" % b["after"])
                else:
                    b = timed(c, "jobs?since", "/api/v1/sweeps/1/jobs?since=%d" % cursor)
                    cursor = b.get("cursor", cursor)
                for _, l in leases[:8]:
                    timed(c, "curve", "/api/v1/jobs/%d/metrics?kind=val&since=-1" % l["job_id"])
                time.sleep(max(0, t0 + 2 - time.time()))
            q.put(routes)

        q = multiprocessing.Queue()
        pp = multiprocessing.Process(target=page, args=(q,))
        pp.start()
        ts = [threading.Thread(target=worker, args=l) for l in leases]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        routes = q.get()
        pp.join()
        print("%-6s heartbeats %6d  p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  errors %d" % (
            name, len(lat), 1e3 * pct(lat, 0.5), 1e3 * pct(lat, 0.99), 1e3 * max(lat), errors[0]))
        for k, v in routes.items():
            print("       %-14s %4d polls, max %8.1f ms" % (k, len(v), 1e3 * max(v)))
        # the server's own account: how long its loop's turns and each route's handler held every client
        mc = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mc.request("GET", "/metrics", headers={"Authorization": "Bearer " + tok})
        m = mc.getresponse().read().decode()
        b = dict(re.findall(r'^prism_loop_turn_seconds_bucket\{le="([^"]+)"\} (\d+)$', m, re.M))
        tmax = re.search(r"^prism_loop_turn_seconds_max (\S+)$", m, re.M)
        if b and tmax:
            print("       server loop: %s turns, %d over 50 ms, longest %.1f ms" % (
                b["+Inf"], int(b["+Inf"]) - int(b["0.05"]), 1e3 * float(tmax.group(1))))
            g = lambda k: float((re.search(r"^%s (\S+)$" % k, m, re.M) or re.search("(0)", "0")).group(1))
            print("       server commit max %.1f ms, sync max %.1f ms, checkpoint on the loop max %.1f ms" % (
                1e3 * g("prism_commit_seconds_max"), 1e3 * g("prism_sync_seconds_max"),
                1e3 * g("prism_wal_loop_checkpoint_seconds_max")))
            for r, v in sorted(re.findall(r'^prism_route_loop_seconds_max\{route="([^"]+)"\} (\S+)$', m, re.M),
                               key=lambda x: -float(x[1]))[:4]:
                print("       server route %-14s longest %7.1f ms" % (r, 1e3 * float(v)))
        sys.stdout.flush()
    finally:
        srv.terminate()
        srv.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME=BUILD_DIR (the first one makes the template database)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--jobs", type=int, default=100012)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--every", type=float, default=0.5, help="seconds between a worker's heartbeats")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip", action="append", default=[], help="a polled route not to ask (sweeps, leaderboard, ...)")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    os.makedirs(args.work, exist_ok=True)
    template = make_template(builds[0][1], args.work, args.jobs)
    for r in range(args.rounds):
        for name, build in (builds if r % 2 == 0 else builds[::-1]):
            one_run(name, os.path.abspath(build), template, args.work, args)


if __name__ == "__main__":
    main()
