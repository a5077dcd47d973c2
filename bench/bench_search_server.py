#!/usr/bin/python3
"""bench/bench_search_server.py — issue #38's "Must show" bench through the real server and API (no training): the
surrogate search, uniform random search and Optuna's TPE, side by side, at equal budgets, on simulated landscapes.

Each repetition starts `prism-sweep serve` on a fresh database (on /dev/shm when it exists) and acts as one fake
worker over the worker HTTP API (docs/API.md: register, lease, complete; tools/realsweep_replay.py's client). Every
job is answered with val_loss = 3.36 + truth(schedule) + β_seed + ε(schedule, seed): β ~ N(0, 0.02²) shared by all
schedules, ε ~ N(0, 0.002²) drawn from the cell's own stream, so every method sees the same value for the same cell
(common random numbers). The landscapes, the seed effects and the cell noise are tests/search_sim.h's (SS_SMOOTH,
SS_ROUGH, ss_sweep_init, ss_cell), ported bit for bit (the same SplitMix64 + Box–Muller generator, the same seeds
as bench/bench_search_sim.c: 1000003·(scenario + 1) + rep), scaled so the valid set spans 0.03.

The arms, all with 3 seeds a schedule and the budget counting every schedule trained (the uniform baseline too):
  surrogate  one sweep with "search": {"strategy": "surrogate", "budget": N, "batch": K, "init": M, "seed": S}; the
             server proposes the batches. At n trained the choice is read from the sweep's "search" object, the
             "batches" row whose "trained" = n: "recommended" (the lowest posterior mean among the trained:
             surrogate·pm) and "best_estimate" (the lowest blocked estimate: surrogate·est).
  random     at each checkpoint budget n a sweep of the default rules with "sample": {"n": .., "seed": ..}: the
             baseline + a uniform sample of n − 1 of the other schedules (the seed is stepped until the sampler's
             draw, plus the baseline the spec always adds, is exactly n schedules). Choice: leaderboard rank 1.
  tpe        optuna.samplers.TPESampler (seeded, multivariate, constant liar for the batches, n_startup_trials = M).
             A schedule is encoded by its transition depths: for each head count a below h_base allowed in the valid
             set, t_a = the number of layers with at most a heads (integers in [0, L − baseline run]); a point is
             projected to the valid schedule nearest in L1 over those depths (ties: enumeration order). The first
             trial is the uniform baseline (enqueued), then M − 1 startup trials, then batches of K; a point that
             projects onto a schedule already trained is told its value at once and asked again (no budget spent;
             one onto a schedule of the batch waits for its value), and after 20 such points in a row the nearest
             schedule not yet taken is used.
             Each batch is trained by re-POSTing the sweep spec with the grown explicit "schedules" list (the same
             name adds only the new ones), and each trial is told its schedule's blocked-model Δ from the
             leaderboard JSON. Choice: leaderboard rank 1.
Shapes: L=12, d=768, the default rules (53 schedules), budgets 5/11/16 (10/20/30%), init 3, batch 2; L=36, d=1280,
"max_block": 0 (3,610 schedules), budgets 50/100/150, init 10, batch 10 (bench/bench_search_sim.c's).

Output: one markdown table, a row per (landscape, L, budget, method): mean and p90 regret (true effect of the
chosen − best true effect), P(top 1%) ± its Monte Carlo SE (at L=12 the best schedule itself), and the arm's mean
wall time per repetition (all budgets of the arm together: one search for surrogate and tpe, one sweep per budget
for random). Then the issue's L=36 goal per method (top 1% in ≥ 80% with ≤ 150 schedules, ahead of tpe and random
at every budget).

  SEARCH_REPS=30           repetitions per landscape (the issue wants ≥ 30)
  SEARCH_SCEN=0,1,2,3      which of (L12 smooth, L12 rough, L36 smooth, L36 rough)
  SEARCH_ARMS=surrogate,random,tpe
  SEARCH_DBDIR=/dev/shm    where the temporary databases go
  SEARCH_TPE_ENCODING=depth  TPE's encoding: depth (transition depths) or blocks (each head count's run length)
  SEARCH_TPE_MULTIVARIATE=1  0: TPE's independent (per-parameter) Parzen estimators
  (the defaults were chosen by measurement at L=36: docs/SEARCH.md, "Through the server")
  BUILD=build              the build with prism-sweep (or PRISM_BUILD, as bench/run.sh sets)
Exit 0 whether or not the goal is met (the figures are the result); 1 when something failed (the server's log
tail on stderr).
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from realsweep_replay import Api, start_server  # noqa: E402  (the worker API client and the server's start)

SEEDS = [1000, 1001, 1002]
RUN_SD, SEED_SD, RANGE = 0.002, 0.02, 0.03
M64 = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15
SHAPES = {  # big: (L, d_model, extra rules, budgets, init, batch)
    False: (12, 768, {}, None, 3, 2),
    True: (36, 1280, {"max_block": 0}, [50, 100, 150], 10, 10),
}
TPE_ENCODING = os.environ.get("SEARCH_TPE_ENCODING", "depth")          # depth | blocks
TPE_MULTIVARIATE = os.environ.get("SEARCH_TPE_MULTIVARIATE", "1") != "0"
TPE_RETRIES = 20   # asks in a row that land on schedules already taken before the nearest untaken one is used
HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg):
    print("bench_search_server: " + msg, file=sys.stderr)
    sys.exit(1)


# ---- tests/ranking_sim.h's generator (SplitMix64 + Box–Muller), bit for bit ------------------------------------
class SimRng:
    def __init__(self, seed):
        self.s, self.have, self.next = seed & M64, False, 0.0

    def unif(self):
        self.s = (self.s + GOLDEN) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        z ^= z >> 31
        return ((z >> 11) + 0.5) / 9007199254740992.0

    def gauss(self):
        if self.have:
            self.have = False
            return self.next
        u1, u2 = self.unif(), self.unif()
        r = math.sqrt(-2 * math.log(u1))
        self.next, self.have = r * math.sin(2 * math.pi * u2), True
        return r * math.cos(2 * math.pi * u2)

    def below(self, n):
        return min(int(self.unif() * n), n - 1)


# ---- tests/search_sim.h: the space, the landscapes, the sweep's noise --------------------------------------------
def normalise(v):
    lo, hi = v.min(), v.max()
    return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)


def landscape(heads, d_model, rough, seed):
    """ss_landscape: truth[n] for the (n × L) head matrix in enumeration order."""
    g = SimRng(seed * GOLDEN + 17)
    n, L = heads.shape
    u = np.log2(d_model / heads)
    umin, umax = u.min(), u.max()
    c0 = umin + (umax - umin) * (0.3 + 0.7 * g.unif())
    c1 = -(umax - umin) * 1.2 * g.unif()
    w, a, pi = np.zeros(L), np.zeros(L), np.zeros(L, dtype=int)
    for l in range(L):
        w[l] = 0.5 + g.unif()
        a[l] = g.gauss()
        pi[l] = g.below(L)
    c = c0 + c1 * (np.arange(L) + 0.5) / L
    truth = normalise(((u - c) ** 2 * w).sum(axis=1))
    if rough:
        ub = u.mean(axis=1, keepdims=True)
        inter = normalise((a * (u - ub) * (u[:, pi] - ub)).sum(axis=1))
        idio = np.array([g.gauss() for _ in range(n)])
        truth = normalise(truth + 0.5 * inter + 0.08 * idio)
    return truth * RANGE


class Sweep:
    """ss_sweep: the seed effects and the per-cell run noise of one repetition."""

    def __init__(self, truth, seed):
        self.truth, self.seed = truth, seed
        g = SimRng(seed ^ 0xbe7a5eed)
        self.beta = [SEED_SD * g.gauss() for _ in SEEDS]
        self.cells = {}

    def y(self, idx, j):
        key = (idx, j)
        if key not in self.cells:
            g = SimRng(self.seed * 0x2545f4914f6cdd1d + idx * len(SEEDS) + j + 1)
            g.unif()
            self.cells[key] = 3.36 + float(self.truth[idx]) + self.beta[j] + RUN_SD * g.gauss()
        return self.cells[key]


class Space:
    def __init__(self, cli, L, d_model, extra):
        self.L, self.d_model = L, d_model
        args = [cli, "enumerate", "--L", str(L), "--dmodel", str(d_model)]
        if "max_block" in extra:
            args += ["--max-block", str(extra["max_block"])]
        self.enum_args = args
        out = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout.split()
        self.heads = np.array([[int(x) for x in s.split(",")] for s in out])
        self.n = len(self.heads)
        self.index = {tuple(h): i for i, h in enumerate(self.heads.tolist())}
        self.h_base = int(self.heads[0, -1])
        assert (self.heads[0] == self.h_base).all(), "the baseline is not the first schedule"
        self.allowed = sorted({int(x) for x in self.heads.ravel() if x < self.h_base})
        self.depth = np.stack([(self.heads <= a).sum(axis=1) for a in self.allowed], axis=1)  # (n × A)
        self.tmax = int(self.depth.max())

    def text(self, idx):
        return ",".join(str(x) for x in self.heads[idx])

    def sample(self, m, seed):
        out = subprocess.run(self.enum_args + ["--sample", str(m), "--seed", str(seed)], check=True,
                             stdout=subprocess.PIPE, text=True).stdout.split()
        return [self.index[tuple(int(x) for x in s.split(","))] for s in out]


# ---- the server and the fake worker ------------------------------------------------------------------------------
class Server:
    def __init__(self, cli, dbdir):
        self.work = tempfile.mkdtemp(prefix="bench-search-", dir=dbdir)
        self.db = os.path.join(self.work, "prism.db")
        self.log_path = os.path.join(self.work, "server.log")
        self.log, self.proc = open(self.log_path, "w"), None
        self.proc, self.port = start_server(cli, self.db, self.log)
        tokens = dict(line.strip().split("=", 1) for line in open(self.db + ".tokens")
                      if "=" in line and not line.startswith("#"))
        self.admin = Api(self.port, tokens["admin_token"])
        self.worker = Api(self.port, tokens["worker_token"])
        self.wid = self.worker.ok("POST", "/api/v1/workers/register",
                                  {"name": "bench-search", "host": "bench", "devices": ["cpu"]})["worker_id"]

    def drain(self, sweep):
        """Leases and completes every queued job (the fake worker); returns how many."""
        n = 0
        while True:
            code, lease = self.worker.call("POST", "/api/v1/lease", {"worker_id": self.wid})
            if code == 204:
                return n
            if code != 200:
                raise RuntimeError("lease: HTTP %d: %s" % (code, lease))
            y = sweep.value(lease["heads"], lease["seed"])
            self.worker.ok("POST", "/api/v1/jobs/%d/complete" % lease["job_id"],
                           {"lease_token": lease["lease_token"], "result": {"val_loss": y}})
            n += 1

    def create(self, spec):
        return self.admin.ok("POST", "/api/v1/sweeps", spec, want=(200, 201))

    def leaderboard(self, sweep_id):
        return self.admin.ok("GET", "/api/v1/sweeps/%d/leaderboard?format=json" % sweep_id)

    def log_tail(self):
        try:
            return open(self.log_path).read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


class Cells:
    """Answers a job of the repetition: the simulated sweep's value of its (schedule, seed) cell."""

    def __init__(self, space, sweep):
        self.space, self.sweep = space, sweep

    def value(self, heads, seed):
        return self.sweep.y(self.space.index[tuple(heads)], SEEDS.index(seed))


def base_spec(space, name, extra_rules):
    rules = {"h_base": space.h_base, "max_head_dim": 256, "pow2": False, "min_block": 2, "max_block": 4,
             "min_baseline": 0.5}
    rules.update(extra_rules)
    return {"name": name, "model": {"n_layer": space.L, "d_model": space.d_model, "vocab_size": 50257,
                                    "padded_vocab_size": 50304, "seq_len": 1024, "arch": "llama"},
            "rules": rules, "seeds": SEEDS,
            "train": {"batch_size": 32, "seq_len": 1024, "grad_accum": 8, "steps": 11000, "lr": 0.0006,
                      "lr_schedule": "cosine", "warmup_steps": 275},
            "eval": {"every": 250, "batches": 40},
            "data": {"train": "data/text_train_*.bin", "val": "data/text_val_*.bin"}}


def rank1(space, board):
    """The leaderboard's rank 1 as a grid index; {index: Δ} of every ranked row."""
    est, best = {}, None
    for row in board["rows"]:
        idx = space.index[tuple(row["heads"])]
        if row["is_baseline"]:
            est[idx] = 0.0
        elif row.get("delta") and row["delta"].get("mean") is not None:
            est[idx] = row["delta"]["mean"]
        if row.get("rank") == 1:
            best = idx
    if best is None:
        raise RuntimeError("the leaderboard has no rank 1")
    return best, est


# ---- the arms: each returns {budget: chosen grid index} (surrogate: {"pm": .., "est": ..}) ----------------------
def arm_surrogate(srv, space, cells, extra, ck, M, K, seed):
    spec = base_spec(space, "surrogate", extra)
    spec["search"] = {"strategy": "surrogate", "budget": ck[-1], "batch": K, "init": M, "seed": seed}
    sid = srv.create(spec)["sweep_id"]
    t_end = time.time() + 3600
    while True:
        srv.drain(cells)
        search = srv.admin.ok("GET", "/api/v1/sweeps/%d" % sid).get("search")
        if search is None:
            raise RuntimeError("GET /api/v1/sweeps/%d has no \"search\" object (a build without the search?)" % sid)
        if search.get("finished"):
            break
        if time.time() > t_end:
            raise RuntimeError("the search did not finish within an hour: %s" % json.dumps(search)[:2000])
        time.sleep(0.01)  # the next batch is decided once no job is queued or leased
    rows = {}
    for b in search["batches"]:
        rows[b["trained"]] = b
    out = {"pm": {}, "est": {}}
    for n in ck:
        if n not in rows:
            raise RuntimeError("the search has no batch row at %d trained: %s" % (
                n, [b["trained"] for b in search["batches"]]))
        out["pm"][n] = space.index[heads_of(rows[n]["recommended"])]
        out["est"][n] = space.index[heads_of(rows[n]["best_estimate"])]
    return out


def heads_of(v):
    """A schedule as the search object writes it ("3,3,6,..."; also a list, or an object with "heads"): a tuple"""
    if isinstance(v, dict):
        v = v["heads"]
    if isinstance(v, str):  # "12x6" is six layers of 12 (the schedule text's run form)
        v = [int(h) for tok in v.split(",") for h in
             ([tok.split("x")[0]] * int(tok.split("x")[1]) if "x" in tok else [tok])]
    return tuple(int(x) for x in v)


def arm_random(srv, space, cells, extra, ck, seed):
    out = {}
    for c, n in enumerate(ck):
        s = seed * 7 + c
        while True:  # exactly n schedules: the baseline + n − 1 others drawn uniformly
            got = space.sample(n, s)
            if 0 in got:
                m = n
                break
            if 0 not in space.sample(n - 1, s):
                m = n - 1
                break
            s += 1000
        spec = base_spec(space, "random-%d" % n, extra)
        spec["sample"] = {"n": m, "seed": s}
        r = srv.create(spec)
        if r["schedules"] != n:
            raise RuntimeError("the random sweep of budget %d has %d schedules" % (n, r["schedules"]))
        srv.drain(cells)
        out[n] = rank1(space, srv.leaderboard(r["sweep_id"]))[0]
    return out


def arm_tpe(srv, space, cells, extra, ck, M, K, seed):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = optuna.samplers.TPESampler(seed=seed % (1 << 32), n_startup_trials=M, multivariate=TPE_MULTIVARIATE,
                                             constant_liar=True)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    names = ["t%d" % a for a in space.allowed]
    code = space.depth if TPE_ENCODING == "depth" else np.diff(space.depth, axis=1, prepend=0)  # blocks: run lengths
    study.enqueue_trial({nm: int(v) for nm, v in zip(names, code[0])})
    spec = base_spec(space, "tpe", extra)
    order, known, out, sid = [], {}, {}, None   # order: grid indices in the sweep, known: index -> Δ

    def ask():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = study.ask()
            x = np.array([t.suggest_int(nm, 0, space.tmax) for nm in names])
        return t, x

    for n in ck:
        while len(order) < n:
            k = min(M if not order else K, n - len(order))
            batch, waiting, taken = [], [], set(order)
            while len(batch) < k:
                for _ in range(TPE_RETRIES):
                    t, x = ask()
                    dist = np.abs(code - x).sum(axis=1)
                    idx = int(np.argmin(dist))
                    if idx in known:
                        study.tell(t, known[idx])
                    elif idx in taken:
                        waiting.append((t, idx))
                    else:
                        break
                else:  # TPE_RETRIES points in a row on schedules already taken: the one nearest a new point
                    t, x = ask()
                    dist = np.abs(code - x).sum(axis=1).astype(float)
                    dist[list(taken)] = np.inf
                    idx = int(np.argmin(dist))
                batch.append((t, idx))
                taken.add(idx)
            order += [idx for _, idx in batch]
            spec["schedules"] = [space.text(i) for i in order]
            r = srv.create(spec)
            sid = r["sweep_id"]
            if r["schedules"] != len(order):
                raise RuntimeError("the tpe sweep has %d schedules, %d asked" % (r["schedules"], len(order)))
            srv.drain(cells)
            best, est = rank1(space, srv.leaderboard(sid))
            known = {i: est[i] for i in order}
            for t, idx in batch + waiting:
                study.tell(t, known[idx])
        out[n] = best
    return out


# ---- the table ------------------------------------------------------------------------------------------------------
def summarise(space, truths, chosen, reps):
    """chosen[rep] = grid index; returns (mean regret, p90 regret, P(top 1%), SE)"""
    top = math.ceil(0.01 * space.n)
    reg, hit = [], 0
    for rep in range(reps):
        tr = truths[rep]
        reg.append(tr[chosen[rep]] - tr.min())
        hit += int((tr < tr[chosen[rep]]).sum() < top)
    reg.sort()
    p = hit / reps
    return sum(reg) / reps, reg[int(0.9 * (reps - 1))], p, math.sqrt(p * (1 - p) / reps)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds through the finally that stops the server
    reps = int(os.environ.get("SEARCH_REPS", "30"))
    scen = [int(c) for c in os.environ.get("SEARCH_SCEN", "0,1,2,3").replace(",", "") if c in "0123"]
    arms = [a for a in os.environ.get("SEARCH_ARMS", "surrogate,random,tpe").split(",") if a]
    for a in arms:
        if a not in ("surrogate", "random", "tpe"):
            die("SEARCH_ARMS: unknown arm %s (surrogate, random, tpe)" % a)
    if reps < 1:
        die("SEARCH_REPS must be >= 1")
    build = os.environ.get("PRISM_BUILD") or os.path.join(HERE, "..", os.environ.get("BUILD", "build"))
    cli = os.path.join(os.path.abspath(build), "prism-sweep")
    if not os.access(cli, os.X_OK):
        die("%s: not an executable (build first: make all)" % cli)
    dbdir = os.environ.get("SEARCH_DBDIR") or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    if "tpe" in arms:
        try:
            import optuna  # noqa: F401
        except ImportError:
            die("Optuna is missing: apt-get install python3-optuna (make deps)")
    methods = [m for a in arms for m in (["surrogate·pm", "surrogate·est"] if a == "surrogate" else [a])]
    print("search through the server: %d repetitions per landscape, arms %s, run sd %g, seed sd %g, %d seeds, "
          "range %g\n" % (reps, ",".join(arms), RUN_SD, SEED_SD, len(SEEDS), RANGE))
    print("| landscape | L (grid) | budget | method | regret mean | regret p90 | P(top 1%) | arm s/rep |")
    print("|---|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    goal = {}
    t_all = time.time()
    for sc in scen:
        big, rough = sc >= 2, sc % 2 == 1
        L, d, extra, ck, M, K = SHAPES[big]
        space = Space(cli, L, d, extra)
        if ck is None:
            ck = [round(space.n * 0.1 * (c + 1)) for c in range(3)]
        truths, chosen = [], {m: [] for m in methods}
        secs = {a: 0.0 for a in arms}
        for rep in range(reps):
            seed = 1000003 * (sc + 1) + rep
            truth = landscape(space.heads, d, rough, seed)
            truths.append(truth)
            cells = Cells(space, Sweep(truth, seed))
            srv = None
            try:
                srv = Server(cli, dbdir)
                for a in arms:
                    t0 = time.time()
                    if a == "surrogate":
                        got = arm_surrogate(srv, space, cells, extra, ck, M, K, seed)
                        chosen["surrogate·pm"].append(got["pm"])
                        chosen["surrogate·est"].append(got["est"])
                    elif a == "random":
                        chosen["random"].append(arm_random(srv, space, cells, extra, ck, seed))
                    else:
                        chosen["tpe"].append(arm_tpe(srv, space, cells, extra, ck, M, K, seed))
                    secs[a] += time.time() - t0
            except (RuntimeError, OSError, KeyError, ValueError, subprocess.CalledProcessError) as e:
                if srv is not None:
                    sys.stderr.write(srv.log_tail())
                die("scenario %d rep %d: %s" % (sc, rep, e))
            finally:  # on SIGTERM / Ctrl-C too: no server outlives the bench
                if srv is not None:
                    srv.stop()
        for n_i, n in enumerate(ck):
            bud = str(n) if big else "%d (%d%%)" % (n, 10 * (n_i + 1))
            res = {}
            for m in methods:
                mr, p90, p, se = summarise(space, truths, [c[n] for c in chosen[m]], reps)
                res[m] = (mr, p)
                arm = m.split("·")[0]
                print("| %s | %d (%d) | %s | %s | %.4f | %.4f | %.2f ± %.2f | %.1f |" % (
                    "rough" if rough else "smooth", L, space.n, bud, m, mr, p90, p, se, secs[arm] / reps))
                sys.stdout.flush()
            if big:
                for m in methods:
                    ok = all(res[m][1] >= res[o][1] for o in methods if o.split("·")[0] != m.split("·")[0])
                    if n_i == len(ck) - 1:
                        ok = ok and res[m][1] >= 0.8
                    goal[m] = goal.get(m, True) and ok
    if goal:
        print("\nL=36 goal (top 1%% in >= 80%% with <= 150 schedules, P(top 1%%) ahead of the other arms at every "
              "budget): %s" % ", ".join("%s %s" % (m, "✓" if goal[m] else "✗") for m in methods))
    print("\ntotal %.0f s" % (time.time() - t_all))


if __name__ == "__main__":
    main()
