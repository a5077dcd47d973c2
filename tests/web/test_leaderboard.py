#!/usr/bin/python3
# test_leaderboard.py — the leaderboard page (web/) in Debian's headless Chromium through WebDriver, against a
# real `prism-sweep serve` on loopback. timeout: 90
#
# Each case starts its own orchestrator on a free port with a fresh database and token file, creates a sweep
# through the admin API and feeds it like a worker would (register, lease every job, post train/val metrics,
# complete with a result.json that carries attn_distance, or fail), then drives the page. Expected numbers
# (means, sample stds, paired deltas and their Student-t 95% CIs) are computed here from the values posted,
# independently of the server. Screenshots go to $PRISM_BUILD/artifacts/web/ (every run; kept); with
# PRISM_UPDATE_SCREENSHOTS=1 also to docs/img/ (the README's: leaderboard.png, leaderboard-detail.png).
# Protocol: `--list` prints the cases; `CASE` runs one (exit 0 pass, 77 skip, 1 fail).
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.environ.get("PRISM_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("PRISM_BUILD") or os.path.join(ROOT, "build")
TMP = os.environ.get("PRISM_TEST_TMP") or tempfile.gettempdir()
ART = os.environ.get("PRISM_ARTIFACTS") or os.path.join(BUILD, "artifacts", "web")   # kept after the run

WORKER_TOKEN = "w" * 32
ADMIN_TOKEN = "a" * 32
STEPS = 40
VAL_EVERY = 10
B, T, A = 16, 1024, 16                 # the paper's Small setting: 2^18 tokens per step
TOK_PER_STEP = B * T * A

# The paper's Small shape (L=12, d=768): uniform 12 heads, the Prism schedule and one more from its grid.
# Nothing trains here: the test plays the worker and posts the numbers below.
UNIFORM = [12] * 12
PRISM = [3, 3, 6, 6, 8, 8] + [12] * 6
WIDE = [6, 6, 6, 6] + [12] * 8
U_S, P_S, W_S = (",".join(map(str, h)) for h in (UNIFORM, PRISM, WIDE))
SEEDS = [0, 1, 2]
# Final val loss per (schedule, seed), near the paper's figures. PRISM beats uniform on every seed (its CI
# excludes zero); WIDE's CI over its 2 finished seeds includes zero. Values avoid 4-decimal rounding ties.
VAL = {
    (tuple(UNIFORM), 0): 3.3720, (tuple(UNIFORM), 1): 3.3776, (tuple(UNIFORM), 2): 3.3749,
    (tuple(PRISM), 0): 3.3595, (tuple(PRISM), 1): 3.3614, (tuple(PRISM), 2): 3.3603,
    (tuple(WIDE), 0): 3.3690, (tuple(WIDE), 1): 3.3622, (tuple(WIDE), 2): 3.3660,
}
TOKS = {tuple(UNIFORM): 2870000.0, tuple(PRISM): 2868000.0, tuple(WIDE): 2861000.0}
T975 = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305}   # Student t, two-sided 95%
# D_l as the paper describes it: the prism schedule more local in its early wide-head layers (ΔD < 0), a
# positive bump where it reaches the baseline, ~0 late.
_DU = [30.0, 45.0, 60.0, 75.0, 85.0, 95.0, 100.0, 105.0, 108.0, 110.0, 111.0, 112.0]
ATTN = {tuple(UNIFORM): _DU,
        tuple(PRISM): [u + d for u, d in zip(_DU, [-12, -10, -8, -6, -3, 2, 6, 5, 2, 1, 0, 0])],
        tuple(WIDE): [u + d for u, d in zip(_DU, [-8, -7, -6, -5, 1, 3, 2, 1, 0, 0, 0, 0])]}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def skip(msg):
    print("skipped: " + msg)
    sys.exit(77)


def check(cond, msg):
    if not cond:
        fail(msg)


def check_eq(exp, act, msg):
    if exp != act:
        fail("%s: expected [%r], got [%r]" % (msg, exp, act))


# ----------------------------------------------------------------------------------------- statistics

def mean(xs):
    return sum(xs) / len(xs)


def sstd(xs):
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def p_two_sided(d):
    """paired t-test p in closed form for df 1 (1 - (2/pi) atan|t|) and df 2 (1 - |t|/sqrt(2 + t^2))"""
    t = abs(mean(d) / (sstd(d) / math.sqrt(len(d))))
    return {1: 1 - 2 / math.pi * math.atan(t), 2: 1 - t / math.sqrt(2 + t * t)}[len(d) - 1]


def holm(ps):
    """Holm step-down adjustment of {name: p} over a family of len(ps)"""
    out, run, m = {}, 0.0, len(ps)
    for j, (k, p) in enumerate(sorted(ps.items(), key=lambda kv: kv[1])):
        run = max(run, min(1.0, (m - j) * p))
        out[k] = run
    return out


def fmt_p(p):
    return "%.1e" % p if p < 0.001 else "%.3f" % p


def paired(sched, seeds):
    d = [VAL[(tuple(sched), s)] - VAL[(tuple(UNIFORM), s)] for s in seeds]
    m = mean(d)
    if len(d) < 2:
        return m, None, None
    h = T975[len(d) - 1] * sstd(d) / math.sqrt(len(d))
    return m, m - h, m + h


def f4(x):
    return ("%.4f" % x).replace("-", "\u2212")


def s4(x):
    return ("+" if x > 0 else "") + f4(x)


# ------------------------------------------------------------------------------------------- server

class Server:
    """A real `prism-sweep serve` on 127.0.0.1:<free port> with its own database and token file."""

    def __init__(self):
        exe = os.path.join(BUILD, "prism-sweep")
        if not os.access(exe, os.X_OK):
            fail("%s not built: run `make BUILD=%s all` first" % (exe, BUILD))
        self.dir = tempfile.mkdtemp(prefix="web-", dir=TMP)
        self.db = os.path.join(self.dir, "prism.db")
        self.tokfile = os.path.join(self.dir, "tokens")
        with open(self.tokfile, "w") as f:
            f.write("worker_token=%s\nadmin_token=%s\n" % (WORKER_TOKEN, ADMIN_TOKEN))
        os.chmod(self.tokfile, 0o600)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.base = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        self.proc = subprocess.Popen(
            [exe, "serve", "--db", self.db, "--listen", "127.0.0.1:%d" % self.port, "--token-file", self.tokfile,
             "--web", os.path.join(ROOT, "web"), "--lease-ttl", "60"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while True:
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.log.flush()
                fail("orchestrator did not come up on %s:\n%s" % (self.base, open(self.log.name).read()[-2000:]))
            time.sleep(0.05)

    def call(self, method, path, body=None, token=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw and r.headers.get_content_type() == "application/json" else raw)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw

    def ok(self, method, path, body=None, token=ADMIN_TOKEN):
        code, out = self.call(method, path, body, token)
        if code // 100 != 2:
            fail("%s %s -> %d %r" % (method, path, code, out))
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def spec(name, schedules, seeds=SEEDS, data="data/none_*.bin"):
    return {
        "name": name,
        "model": {"n_layer": 12, "d_model": 768, "vocab_size": 50257, "padded_vocab_size": 50304, "seq_len": T},
        "schedules": [",".join(map(str, s)) for s in schedules],
        "seeds": seeds,
        "train": {"batch_size": B, "seq_len": T, "grad_accum": A, "steps": STEPS, "lr": 6e-4,
                  "lr_schedule": "cosine", "warmup_steps": 2, "min_lr_frac": 0.1, "beta1": 0.9, "beta2": 0.95,
                  "eps": 1e-8, "weight_decay": 0.1, "grad_clip": 1.0, "shuffle": False},
        "eval": {"every": VAL_EVERY, "batches": 2, "attn_distance": True},
        "data": {"train": data, "val": data},
    }


def curve(final, step, seed):
    """A plausible loss curve that ends at `final`: decays from ~5.5 toward it."""
    return final + (5.5 - final) * math.exp(-step / 8.0) + 0.004 * ((step * 7 + seed * 3) % 5) / 5.0


class Feeder:
    """Plays the worker: leases every job of the server's queue and reports for it."""

    def __init__(self, srv):
        self.srv = srv
        self.wid = srv.ok("POST", "/api/v1/workers/register",
                          {"name": "web-test", "host": "localhost", "devices": ["cpu"]}, WORKER_TOKEN)["worker_id"]
        self.leases = {}  # (heads tuple, seed) -> lease answer

    def lease_all(self):
        while True:
            code, out = self.srv.call("POST", "/api/v1/lease", {"worker_id": self.wid}, WORKER_TOKEN)
            if code == 204:
                return
            check_eq(200, code, "lease answer %r" % (out,))
            self.leases[(tuple(out["heads"]), out["seed"])] = out

    def metrics(self, key, upto, start=0):
        ls = self.leases[key]
        final = VAL[key]
        pts = []
        for s in range(start, upto + 1):
            if s < STEPS:
                pts.append({"step": s, "train_loss": curve(final, s, key[1]) + 0.05, "lr": 6e-4,
                            "tokens": (s + 1) * TOK_PER_STEP, "tok_per_s": TOKS[key[0]]})
            if s % VAL_EVERY == 0 or s == STEPS:
                pts.append({"step": s, "val_loss": curve(final, s, key[1]) if s < STEPS else final})
        self.srv.ok("POST", "/api/v1/jobs/%d/metrics" % ls["job_id"], {"lease_token": ls["lease_token"], "points": pts},
                    WORKER_TOKEN)

    def complete(self, key, extra=None):
        ls = self.leases[key]
        self.metrics(key, STEPS)
        result = {"val_loss": VAL[key], "tok_per_s": TOKS[key[0]], "wall_s": 12.5, "params": 3200000,
                  "flops_per_token": 1.9e7, "attn_distance": ATTN[key[0]]}
        result.update(extra or {})
        self.srv.ok("POST", "/api/v1/jobs/%d/complete" % ls["job_id"], {"lease_token": ls["lease_token"], "result": result},
                    WORKER_TOKEN)

    def fail_job(self, key, error):
        ls = self.leases[key]
        self.srv.ok("POST", "/api/v1/jobs/%d/fail" % ls["job_id"],
                    {"lease_token": ls["lease_token"], "error": error, "retryable": False}, WORKER_TOKEN)


def main_sweep(srv, leave_running=((tuple(WIDE), 2),)):
    """The main sweep: 3 schedules x 3 seeds, every job done except `leave_running` (leased, half-way)."""
    out = srv.ok("POST", "/api/v1/sweeps", spec("web-main", [UNIFORM, PRISM, WIDE]))
    f = Feeder(srv)
    f.lease_all()
    check_eq(9, len(f.leases), "jobs leased")
    for key in sorted(f.leases):
        if key in leave_running:
            f.metrics(key, STEPS // 2)
        else:
            f.complete(key)
    return out["sweep_id"], f


# ------------------------------------------------------------------------------------------- browser

def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        fail("python3-selenium missing: run `make deps`")
    for p in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.access(p, os.X_OK):
            fail("%s missing: run `make deps` (Debian chromium, chromium-driver)" % p)
    o = Options()
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--window-size=1440,1000", "--force-color-profile=srgb"):
        o.add_argument(a)
    o.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=TMP))
    o.binary_location = "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=o, service=Service("/usr/bin/chromedriver"))


def wait_for(drv, js, what, timeout=10.0):
    """Polls a JS expression until it is truthy; returns its value."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = drv.execute_script("return (function(){ try { return " + js + "; } catch (e) { return null; } })();")
        if last:
            return last
        time.sleep(0.1)
    fail("timed out after %.0fs waiting for %s (last value %r)" % (timeout, what, last))


def console_errors(drv):
    return [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]


def assert_no_console_errors(drv):
    errs = console_errors(drv)
    check(not errs, "browser console errors: %r" % errs)


def screenshot(drv, name, readme=False):
    os.makedirs(ART, exist_ok=True)
    p = os.path.join(ART, name)
    drv.save_screenshot(p)
    print("screenshot: " + p)
    if readme and os.environ.get("PRISM_UPDATE_SCREENSHOTS"):   # refresh the README's images on request only
        os.makedirs(os.path.join(ROOT, "docs", "img"), exist_ok=True)
        shutil.copyfile(p, os.path.join(ROOT, "docs", "img", name))


ROWS_JS = """Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(function (tr) {
  return { heads: tr.dataset.heads, rank: tr.querySelector('.rank').textContent.trim(),
           rle: tr.querySelector('.rle').textContent.trim(), val: tr.querySelector('.val').textContent.trim(),
           seeds: tr.querySelector('.seeds').textContent.trim(), delta: tr.querySelector('.delta').textContent.trim(),
           excl: tr.querySelector('.delta').dataset.excludesZero || '', tps: tr.querySelector('.tps').textContent.trim(),
           state: tr.querySelector('.state').textContent.trim(), baseline: tr.classList.contains('baseline'),
           svg: !!tr.querySelector('svg.stair path') };
})"""


def rows(drv):
    return drv.execute_script("return " + ROWS_JS + ";")


def page_modules(drv, *files):
    """Puts the page's own modules (web/FILE: the instances the page runs, as the same URL imports the same module)
    on window.__m.NAME (util, state, app, ...) for the test's scripts: the page itself shares nothing through globals
    (tests/web/test_modules.py)."""
    names = files or ("util.js", "state.js", "app.js")
    got = drv.execute_async_script("""const done = arguments[arguments.length - 1], names = arguments[0];
      Promise.all(names.map((f) => import('/' + f))).then((ms) => {
        window.__m = {}; names.forEach((f, i) => { window.__m[f.replace(/\\.js$/, '')] = ms[i]; }); done(true);
      }, (e) => done(String(e)));""", list(names))
    check(got is True, "the page's modules %s imported into the test's script: %r" % (", ".join(names), got))
    return names


def open_page(drv, srv, sweep_id, extra=""):
    drv.get("%s/#sweep=%s%s" % (srv.base, sweep_id, extra))
    wait_for(drv, "document.getElementById('conn').dataset.state === 'live'", "the page to reach the server")


# ---------------------------------------------------------------------------------------------- cases

def t_leaderboard_rows():
    """The table shows the right rows in the right order with the right numbers."""
    srv = Server()
    drv = None
    try:
        sid, _ = main_sweep(srv)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "3 leaderboard rows")
        r = rows(drv)
        # Order by the model: best group first, then the seed-adjusted delta vs uniform: PRISM, WIDE (provisional:
        # seeds 0 and 1 done of 3; a column, not a sort key), UNIFORM.
        exp_wide_seeds = [0, 1]
        order = [tuple(PRISM), tuple(WIDE), tuple(UNIFORM)]
        check(paired(PRISM, SEEDS)[0] < 0, "test data: prism beats uniform on average")
        check_eq([",".join(map(str, k)) for k in order], [x["heads"] for x in r], "row order (best group, then seed-adjusted delta)")
        dP = [VAL[(tuple(PRISM), s)] - VAL[(tuple(UNIFORM), s)] for s in SEEDS]
        dW = [VAL[(tuple(WIDE), s)] - VAL[(tuple(UNIFORM), s)] for s in exp_wide_seeds]
        ph = holm({"P": p_two_sided(dP), "W": p_two_sided(dW)})
        # tied for best: uniform and wide against prism, Holm over those two
        tb = holm({"U": p_two_sided([-x for x in dP]),
                   "W": p_two_sided([VAL[(tuple(WIDE), s)] - VAL[(tuple(PRISM), s)] for s in exp_wide_seeds])})
        # the best group is the API's (tests/integration/test_leaderboard.sh checks it independently)
        _, lbj0 = srv.call("GET", "/api/v1/sweeps/%s/leaderboard" % sid)
        tbj = {",".join(map(str, x["heads"])): x["tied_best"] for x in lbj0["rows"]}
        exp_ranks = ["1" + ("=" if tbj[P_S] else ""), "2" + ("=" if tbj[W_S] else ""), "3" + ("=" if tbj[U_S] else "")]
        check_eq(exp_ranks, [x["rank"] for x in r], "ranks with the best-group mark")
        hdr = drv.execute_script("return document.getElementById('stats-header').textContent;")
        check("2 comparisons against uniform" in hdr, "the header counts the comparisons: %r" % hdr)
        # ▲/▼ and = reconciled in one sentence exactly when they seem to disagree: a schedule significantly better than
        # uniform while uniform is in the best group, or one significantly worse than uniform in the best group itself
        bt = any(x["is_baseline"] and x["tied_best"] for x in lbj0["rows"])
        sig = [x for x in lbj0["rows"] if not x["is_baseline"] and isinstance(x["delta"], dict) and x["delta"].get("significant")]
        nb = sum(1 for x in sig if x["delta"]["mean"] < 0)
        clash = sum(1 for x in sig if (x["delta"]["mean"] < 0 and bt) or (x["delta"]["mean"] > 0 and x["tied_best"]))
        sent = drv.execute_script("var e = document.getElementById('sig-vs-best'); return e ? e.textContent : null;")
        if clash:
            check(sent is not None and ("%d schedule(s) marked ▲/▼ against uniform share the best group" % clash) in sent,
                  "the reconciling sentence: %r" % sent)
        else:
            check_eq(None, sent, "no reconciling sentence when ▲/▼ and = agree (%d marked, uniform tied %s)" % (len(sig), bt))
        print("sig-vs-best:", clash, bt, sent)
        # the disagreeing case, made here from this sweep's own board (the page's state, re-rendered; the next poll
        # restores it): uniform in the best group too
        page_modules(drv)
        sent = drv.execute_script("var S = __m.state.S; S.board.rows.forEach(function (r) { if (r.is_baseline) r.tied_best = true; }); __m.app.render(); "
                                  "var e = document.getElementById('sig-vs-best'); return e ? e.textContent : null;")
        check(sent is not None and ("%d schedule(s) marked ▲/▼ against uniform share the best group with the worse of the two (uniform =)" % nb) in sent
              and "both hold" in sent and "a higher bar" in sent, "the reconciling sentence when uniform is tied too: %r" % sent)
        # and a schedule ▼ worse than uniform that is in the best group itself (the real sweep's 4,8,8,8: docs/STATISTICS.md)
        sent = drv.execute_script("var S = __m.state.S; S.board.rows.forEach(function (r) { if (r.is_baseline) r.tied_best = false; else if (r.delta.significant) "
                                  "{ r.delta.mean = Math.abs(r.delta.mean); r.tied_best = true; } }); __m.app.render(); "
                                  "var e = document.getElementById('sig-vs-best'); return e ? e.textContent : null;")
        check(sent is not None and "(a ▼ schedule =): both hold" in sent, "the reconciling sentence for a ▼ schedule in the best group: %r" % sent)
        drv.execute_script("__m.app.poll()")
        wait_for(drv, "!__m.state.S.polling && __m.state.S.board.rows.filter(r => r.delta.significant && r.delta.mean < 0).length === %d && "
                      "(document.getElementById('sig-vs-best') !== null) === %s" % (nb, "true" if clash else "false"), "the page's own board again")
        by = {x["heads"]: x for x in r}
        p, u, w = by[P_S], by[U_S], by[W_S]
        check_eq("3×2 6×2 8×2 12×6", p["rle"], "run-length text of the prism schedule")
        check_eq("12×12", u["rle"], "run-length text of the uniform schedule")
        check_eq("6×4 12×8", w["rle"], "run-length text of 6,6,6,6,12x8")
        check(all(x["svg"] for x in r), "every row draws its staircase SVG")
        for k, x, seeds in ((PRISM, p, SEEDS), (UNIFORM, u, SEEDS), (WIDE, w, exp_wide_seeds)):
            vals = [VAL[(tuple(k), s)] for s in seeds]
            check_eq("%s ± %s" % (f4(mean(vals)), f4(sstd(vals))), x["val"], "mean ± std of %s" % x["heads"])
        check_eq("3/3", p["seeds"], "seeds of the prism schedule")
        check_eq("2/3prov", w["seeds"].replace(" ", ""), "seeds of 6,6,6,6,12x8 (one still running: provisional)")
        check(u["baseline"] and not p["baseline"], "the uniform row is marked as the baseline: %r" % r)
        check_eq("baseline", u["delta"], "the baseline's delta cell")
        # the numbers are the API's (the blocked model, checked independently in tests/integration/test_leaderboard.sh);
        # the page must show exactly them
        _, lbj = srv.call("GET", "/api/v1/sweeps/%s/leaderboard" % sid)
        api = {",".join(map(str, x["heads"])): x["delta"] for x in lbj["rows"]}
        dm, lo, hi = api[P_S]["mean"], api[P_S]["ci_low"], api[P_S]["ci_high"]
        check(abs(dm - paired(PRISM, SEEDS)[0]) < 1e-12, "complete seeds: the blocked delta is the mean paired delta")
        ph = {"P": api[P_S]["p_holm"], "W": api[W_S]["p_holm"]}
        check(lo < hi < 0, "test data: the prism CI should exclude zero")
        check_eq("%s[%s,%s]pHolm%s%s" % (s4(dm), s4(lo), s4(hi), fmt_p(ph["P"]), "▲" if ph["P"] < 0.05 else ""),
                 p["delta"].replace(" ", ""), "paired delta of the prism schedule with its 95% CI, p_holm and the mark "
                 "only when p_holm < 0.05")
        check_eq("1", p["excl"], "prism CI excludes zero")
        dm, lo, hi = api[W_S]["mean"], api[W_S]["ci_low"], api[W_S]["ci_high"]
        check(lo < 0 < hi, "test data: the wide CI should include zero")
        check_eq("%s[%s,%s]pHolm%s" % (s4(dm), s4(lo), s4(hi), fmt_p(ph["W"])), w["delta"].replace(" ", ""),
                 "paired delta of 6,6,6,6,12x8 (no mark: not significant)")
        check_eq("0", w["excl"], "6,6,6,6,12x8 CI includes zero")
        check_eq("2.87M±0", u["tps"].replace(" ", ""), "tokens/s of the baseline, mean ± std over seeds")
        check_eq("2.86M±0", w["tps"].replace(" ", ""), "tokens/s of 6,6,6,6,12x8, mean ± std over seeds")
        check_eq("done", p["state"], "state of the prism schedule")
        check_eq("running", w["state"], "state of 6,6,6,6,12x8")
        # Sorting: tokens/s descending puts the uniform first; the baseline row stays in the table.
        drv.find_element("css selector", "#leaderboard th[data-key=tps]").click()
        r2 = rows(drv)
        check_eq([U_S, P_S, W_S], [x["heads"] for x in r2], "rows sorted by tokens/s")
        drv.find_element("css selector", "#leaderboard th[data-key=rank]").click()
        check_eq([x["heads"] for x in r], [x["heads"] for x in rows(drv)], "back to rank order")
        # Sweeps list: progress counts; jobs view: 9 jobs with the running one's step.
        sw = drv.find_element("css selector", "#sweeps tr[data-sweep='%s']" % sid).text
        check("8 done" in sw and "1 leased" in sw, "sweep progress shows 8 done, 1 leased: %r" % sw)
        jobs = drv.execute_script("return Array.from(document.querySelectorAll('#jobs tbody tr')).map(t => t.dataset.state + '|' + t.children[6].textContent.trim());")
        check_eq(9, len(jobs), "jobs in the jobs view")
        check("leased|%d / %d" % (STEPS // 2, STEPS) in jobs, "the running job shows step/steps: %r" % jobs)
        from selenium.webdriver.support.ui import Select
        Select(drv.find_element("id", "jobs-filter")).select_by_visible_text("leased")
        shown = drv.execute_script("return Array.from(document.querySelectorAll('#jobs tbody tr')).map(t => t.dataset.state);")
        check_eq(["leased"], shown, "jobs filtered by state")
        Select(drv.find_element("id", "jobs-filter")).select_by_visible_text("all")
        # Export links answer with CSV and JSON.
        csv_href = drv.find_element("css selector", "#export-csv").get_attribute("href")
        code, body = srv.call("GET", csv_href[len(srv.base):])
        check_eq(200, code, "CSV export link status")
        check(b"rank,heads" in body and P_S.encode() in body, "CSV export content: %r" % body[:200])
        screenshot(drv, "leaderboard.png", readme=True)
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def canvas_colour_pixels(drv, cid):
    """Pixels of a canvas that are clearly coloured (not grey axes/grid/text): curves and bars."""
    return drv.execute_script("""
      var c = document.getElementById(arguments[0]); if (!c || !c.width) return -1;
      var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;
      for (var i = 0; i < d.length; i += 4) {
        var mx = Math.max(d[i], d[i+1], d[i+2]), mn = Math.min(d[i], d[i+1], d[i+2]);
        if (d[i+3] > 100 && mx - mn > 60) n++;
      }
      return n;""", cid)


def t_detail_curves():
    """Clicking a row draws its loss curves over the baseline and its attention-distance profile."""
    srv = Server()
    drv = None
    try:
        sid, _ = main_sweep(srv)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelector(\"#leaderboard tr[data-heads='%s']\")" % P_S, "the prism row")
        check(drv.find_element("id", "detail-section").get_attribute("hidden") is not None, "detail hidden before a click")
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s']" % P_S).click()
        wait_for(drv, "Chart.getChart('chart-val') && Chart.getChart('chart-val').data.datasets.length === 8",
                 "val chart with 3+3 seeds and 2 means")
        ds = drv.execute_script("""return Chart.getChart('chart-val').data.datasets.map(
            d => ({label: d.label, n: d.data.length, faint: !!d.faint, last: d.data.length ? d.data[d.data.length-1] : null}));""")
        means = [d for d in ds if not d["faint"]]
        check_eq(2, len(means), "two mean curves (schedule, uniform): %r" % ds)
        n_val = len([s for s in range(STEPS + 1) if s % VAL_EVERY == 0 or s == STEPS])
        check(all(d["n"] == n_val for d in ds), "every val curve has %d points: %r" % (n_val, ds))
        mine = [d for d in means if "this schedule" in d["label"]][0]
        check_eq(STEPS * TOK_PER_STEP, mine["last"]["x"], "x axis is tokens (last val point)")
        check(abs(mine["last"]["y"] - mean([VAL[(tuple(PRISM), s)] for s in SEEDS])) < 1e-9,
              "mean curve ends at the mean final val loss: %r" % mine)
        tr = drv.execute_script("return Chart.getChart('chart-train').data.datasets.map(d => d.data.length);")
        check_eq([STEPS] * 8, tr, "train curves: %d points for each of 8 datasets" % STEPS)
        dd = drv.execute_script("return Chart.getChart('chart-ddist').data.datasets[0].data;")
        exp = [a - b for a, b in zip(ATTN[tuple(PRISM)], ATTN[tuple(UNIFORM)])]
        check(len(dd) == 12 and all(abs(a - b) < 1e-9 for a, b in zip(dd, exp)), "ΔD_l: expected %r, got %r" % (exp, dd))
        # its error bars are the API's paired CI per layer
        ci = drv.execute_script("return Chart.getChart('chart-ddist').$ci;")
        _, lbd = srv.call("GET", "/api/v1/sweeps/%s/leaderboard" % sid)
        api_ci = [x for x in lbd["rows"] if x["heads"] == list(PRISM)][0]["delta_attn_distance_ci"]
        check_eq(api_ci, ci, "ΔD_l error bars = the API's delta_attn_distance_ci")
        dist = drv.execute_script("return Chart.getChart('chart-dist').data.datasets.map(d => d.data.map(p => p.y));")
        check_eq(sorted([ATTN[tuple(UNIFORM)], ATTN[tuple(PRISM)]]), sorted(dist), "D_l of the schedule and the baseline")
        notes = drv.execute_script("return Array.from(document.querySelectorAll('.chart-note')).filter(n => !n.hidden).map(n => n.textContent);")
        check_eq([], notes, "no 'nothing to draw' note over a chart that has data")
        time.sleep(0.3)  # let the canvases paint
        for cid in ("chart-val", "chart-train", "chart-dist", "chart-ddist"):
            n = canvas_colour_pixels(drv, cid)
            check(n > 150, "canvas %s draws coloured curves/bars (coloured pixels: %d)" % (cid, n))
        # "zoom tail" on the val chart: x from half the tokens, y fitted to that window.
        drv.find_element("css selector", "button.zoom[data-kind=val]").click()
        wait_for(drv, "Chart.getChart('chart-val').scales.x.min === %d" % (STEPS * TOK_PER_STEP // 2), "the val chart zoomed to the tail")
        ymax = drv.execute_script("return Chart.getChart('chart-val').scales.y.max")
        check(ymax < 3.6, "zoomed y range fits the tail (y max %r)" % ymax)
        drv.execute_script("document.getElementById('detail-section').scrollIntoView()")
        time.sleep(0.3)
        screenshot(drv, "leaderboard-detail.png", readme=True)
        # Dark theme: the toggle flips the page and redraws the charts with the dark palette.
        bg0 = drv.execute_script("return getComputedStyle(document.body).backgroundColor")
        drv.find_element("id", "theme-toggle").click()
        wait_for(drv, "getComputedStyle(document.body).backgroundColor !== '%s'" % bg0, "the theme toggle to change the background")
        wait_for(drv, "Chart.getChart('chart-val') && Chart.getChart('chart-val').data.datasets.length === 8", "charts redrawn after the toggle")
        time.sleep(0.3)
        check(canvas_colour_pixels(drv, "chart-val") > 150, "val chart redrawn in the other theme")
        screenshot(drv, "leaderboard-detail-%s.png" % drv.execute_script("return document.documentElement.dataset.theme"))
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_live_update():
    """A result posted through the API appears without a reload; open curves grow through since= requests."""
    srv = Server()
    drv = None
    try:
        sid, feeder = main_sweep(srv)
        key = (tuple(WIDE), 2)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelector(\"#leaderboard tr[data-heads='%s'] .seeds\")" % W_S, "the 6,6,6,6,12x8 row")
        drv.execute_script("window.__noReload = 'still here';")
        check_eq("2/3 prov", drv.find_element("css selector", "#leaderboard tr[data-heads='%s'] .seeds" % W_S).text, "seeds before (provisional)")
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s']" % W_S).click()
        wait_for(drv, "Chart.getChart('chart-train') && Chart.getChart('chart-train').data.datasets.length === 8", "train chart")
        def running_points():
            return drv.execute_script("""return Chart.getChart('chart-train').data.datasets
               .filter(d => d.faint && d.label.indexOf('this schedule seed 2') === 0).map(d => d.data.length)[0] || 0;""")
        check_eq(STEPS // 2 + 1, running_points(), "train points of the running seed before")
        feeder.complete(key)
        vals = [VAL[(tuple(WIDE), s)] for s in SEEDS]
        want = "%s ± %s" % (f4(mean(vals)), f4(sstd(vals)))
        wait_for(drv, "document.querySelector(\"#leaderboard tr[data-heads='%s'] .val\").textContent.trim() === '%s'" % (W_S, want),
                 "the new mean %s without reload" % want)
        check_eq("3/3", drv.find_element("css selector", "#leaderboard tr[data-heads='%s'] .seeds" % W_S).text, "seeds after (complete: no longer provisional)")
        wait_for(drv, "Chart.getChart('chart-train').data.datasets.filter(d => d.faint && d.label.indexOf('this schedule seed 2') === 0)"
                 ".map(d => d.data.length)[0] === %d" % STEPS, "the running seed's curve to grow to %d points" % STEPS)
        check_eq("still here", drv.execute_script("return window.__noReload"), "the page was not reloaded")
        # Curves were extended, not refetched: later metrics requests carry since=<last step held>.
        urls = drv.execute_script("return performance.getEntriesByType('resource').map(e => e.name).filter(u => u.indexOf('/metrics?') >= 0);")
        job = feeder.leases[key]["job_id"]
        mine = [u for u in urls if "/jobs/%d/metrics?kind=train" % job in u]
        check(len(mine) >= 2, "several polls of the running job's train metrics: %r" % mine)
        check("since=-1" in mine[0], "first request fetches everything: %r" % mine[0])
        check(any("since=%d" % (STEPS // 2) in u for u in mine[1:]),
              "later requests ask only for steps after %d: %r" % (STEPS // 2, mine))
        # The jobs list too: fetched whole once, then only the jobs changed since the last answer's cursor, merged in
        # the server's order (the completed job shows done; the table equals the whole list).
        wait_for(drv, "(document.querySelector('#jobs tbody tr[data-job=\"%d\"]') || {dataset: {}}).dataset.state === 'done'" % job,
                 "job %d done in the jobs table" % job)
        jurls = drv.execute_script("return performance.getEntriesByType('resource').map(e => e.name)"
                                   ".filter(u => u.indexOf('/sweeps/%s/jobs') >= 0);" % sid)
        check(len(jurls) >= 2 and "since=" not in jurls[0], "the first jobs request fetches the whole list: %r" % jurls[:3])
        check(all("since=" in u for u in jurls[1:]), "later jobs requests ask only for changes: %r" % jurls)
        full = srv.ok("GET", "/api/v1/sweeps/%s/jobs" % sid)["jobs"]
        shown = drv.execute_script("return Array.from(document.querySelectorAll('#jobs tbody tr')).map(t => t.dataset.job + '|' + t.dataset.state);")
        check_eq(["%d|%s" % (j["id"], j["state"]) for j in full], shown, "the jobs table against the whole list")
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_empty_and_failed_sweeps():
    """No sweep, an empty-result sweep and an only-failures sweep each show a clear state."""
    srv = Server()
    drv = None
    try:
        drv = browser()
        drv.get(srv.base + "/")
        wait_for(drv, "document.getElementById('no-sweeps')", "the 'no sweeps yet' state")
        # A sweep whose jobs were all leased and failed.
        out = srv.ok("POST", "/api/v1/sweeps", spec("web-failing", [UNIFORM, PRISM], seeds=[0]))
        f = Feeder(srv)
        f.lease_all()
        for key in f.leases:
            f.fail_job(key, "data.train: no file matches data/none_*.bin (job %s seed %d)" % (",".join(map(str, key[0])), key[1]))
        # A sweep nothing has run yet.
        out2 = srv.ok("POST", "/api/v1/sweeps", spec("web-waiting", [UNIFORM, WIDE], seeds=[0]))
        drv.get("%s/#sweep=%s" % (srv.base, out["sweep_id"]))
        wait_for(drv, "document.getElementById('all-failed')", "the 'every job failed' state")
        errs = drv.execute_script("return Array.from(document.querySelectorAll('#jobs tbody tr[data-state=failed] td.err')).map(t => t.textContent);")
        check_eq(2, len(errs), "two failed jobs listed")
        check(all("no file matches data/none_*.bin" in e for e in errs), "failure text shown: %r" % errs)
        # Its schedules' detail says why the charts are empty instead of showing blank axes.
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s']" % P_S).click()
        wait_for(drv, "!document.getElementById('chart-val-note').hidden", "the 'no points' note on the val chart")
        note = drv.find_element("id", "chart-val-note").text
        check("the jobs ended before reporting" in note, "val chart note: %r" % note)
        check("No D" in drv.find_element("id", "chart-dist-note").text, "D_l chart note")
        screenshot(drv, "leaderboard-failed.png")
        drv.execute_script("window.scrollTo(0, 0)")
        drv.find_element("css selector", "#sweeps tr[data-sweep='%s']" % out2["sweep_id"]).click()
        wait_for(drv, "document.getElementById('no-results')", "the 'no results yet' state")
        check_eq(2, len(rows(drv)), "queued schedules are listed without numbers")
        check(all(x["state"] == "queued" and x["val"] == "—" for x in rows(drv)), "queued rows: %r" % rows(drv))
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_mixed_trainer_identities_warned():
    """Results from two trainer identities (another --trainer COMMAND and version) in one sweep: the summary says so."""
    srv = Server()
    drv = None
    try:
        out = srv.ok("POST", "/api/v1/sweeps", spec("web-mixed", [UNIFORM, PRISM], seeds=[0]))
        f = Feeder(srv)
        f.lease_all()
        for i, key in enumerate(sorted(f.leases)):
            f.complete(key, {"trainer_command": "python3 /opt/t%d/train.py" % i, "trainer_version": "v%d" % i})
        drv = browser()
        drv.get("%s/#sweep=%s" % (srv.base, out["sweep_id"]))
        wait_for(drv, "document.getElementById('trainer-note')", "the mixed trainer identities warning")
        note = drv.find_element("id", "trainer-note").text
        print("trainer note: %r" % note)
        check("results from 2 trainer identities" in note, "note: %r" % note)
        check("/opt/t1/train.py" in note and "version v0" in note, "both identities named: %r" % note)
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_server_down():
    """When the orchestrator stops answering, the page says so and keeps the last data."""
    srv = Server()
    drv = None
    try:
        sid, _ = main_sweep(srv)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "rows")
        assert_no_console_errors(drv)
        srv.stop()
        wait_for(drv, "!document.getElementById('banner').hidden && document.getElementById('conn').dataset.state === 'down'",
                 "the server-down banner")
        text = drv.find_element("id", "banner").text
        check("not answering" in text and "prism-sweep serve" in text, "banner text: %r" % text)
        check_eq(3, len(rows(drv)), "the last leaderboard stays on screen")
        screenshot(drv, "leaderboard-server-down.png")
        # Only connection failures may reach the console now (the page logs nothing itself).
        other = [e for e in console_errors(drv) if "ERR_CONNECTION_REFUSED" not in e["message"]]
        check(not other, "unexpected console errors: %r" % other)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_theme_follows_system():
    """Dark when the system prefers it; the toggle overrides it and the choice survives a reload."""
    srv = Server()
    drv = None
    try:
        drv = browser()
        drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        drv.get(srv.base + "/")
        wait_for(drv, "document.getElementById('no-sweeps')", "the page")
        bg = lambda: drv.execute_script("return getComputedStyle(document.body).backgroundColor")
        check_eq("rgb(15, 18, 23)", bg(), "dark background when the system prefers dark")
        check_eq(None, drv.execute_script("return document.documentElement.dataset.theme || null"), "no theme pinned yet")
        drv.find_element("id", "theme-toggle").click()
        check_eq("rgb(246, 247, 249)", bg(), "light background after the toggle")
        drv.refresh()
        wait_for(drv, "document.getElementById('no-sweeps')", "the page after a reload")
        check_eq("light", drv.execute_script("return document.documentElement.dataset.theme"), "the choice survives a reload")
        check_eq("rgb(246, 247, 249)", bg(), "still light after the reload")
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


# Zero-shot acc_norm per (schedule, seed) for the hellaswag column: PRISM above uniform on every seed (the blocked
# model's CI above zero, pooled over the task's 3 residual df), WIDE's CI includes zero; WIDE's seed 2 never finishes.
HS = {
    (tuple(UNIFORM), 0): 0.2950, (tuple(UNIFORM), 1): 0.2990, (tuple(UNIFORM), 2): 0.2970,
    (tuple(PRISM), 0): 0.3060, (tuple(PRISM), 1): 0.3080, (tuple(PRISM), 2): 0.3075,
    (tuple(WIDE), 0): 0.2963, (tuple(WIDE), 1): 0.2981, (tuple(WIDE), 2): 0.3000,
}


def blocked_deltas(values, base, seeds_of):
    """Δ vs base by an independent dense least-squares fit of y = schedule + seed (NumPy; SciPy's t): {sched: (Δ,
    lo, hi, p, df)} over the cells given (values[(sched, seed)], seeds_of[sched] the seeds each has)"""
    import numpy as np
    from scipy import stats
    scheds = [base] + [k for k in seeds_of if k != base]
    seeds = sorted({s for k in scheds for s in seeds_of[k]})
    X, y = [], []
    for i, k in enumerate(scheds):
        for s in seeds_of[k]:
            row = [0.0] * (len(scheds) + len(seeds) - 1)
            row[i] = 1.0
            if seeds.index(s) > 0:
                row[len(scheds) + seeds.index(s) - 1] = 1.0
            X.append(row)
            y.append(values[(k, s)])
    X, y = np.array(X), np.array(y)
    inv = np.linalg.pinv(X.T @ X)
    b = inv @ X.T @ y
    df = len(y) - np.linalg.matrix_rank(X)
    s2 = float(((y - X @ b) ** 2).sum()) / df
    out = {}
    for i, k in enumerate(scheds[1:], 1):
        c = np.zeros(X.shape[1]); c[i], c[0] = 1, -1
        d, se = float(c @ b), math.sqrt(s2 * float(c @ inv @ c))
        h = stats.t.ppf(0.975, df) * se
        out[k] = (d, d - h, d + h, 2 * stats.t.sf(abs(d / se), df), df)
    return out


def t_zero_shot_columns():
    """One column per zero-shot task: acc_norm mean ± std and Δ vs uniform from the blocked model (schedule + seed
    over the task, WIDE's third seed missing) with its 95% CI, the item count × seeds, Holm's mark."""
    srv = Server()
    drv = None
    try:
        zsp = spec("web-zs", [UNIFORM, PRISM, WIDE])   # a result may name only its job's eval.tasks
        zsp["eval"] = dict(zsp.get("eval") or {}, tasks=[{"name": "hellaswag", "path": "hellaswag_val.bin"}])
        out = srv.ok("POST", "/api/v1/sweeps", zsp)
        f = Feeder(srv)
        f.lease_all()
        for key in sorted(f.leases):
            if key == (tuple(WIDE), 2):
                continue
            sc = {"acc": HS[key] - 0.02, "acc_norm": HS[key], "n": 10042, "truncated": 0}
            if key[0] == tuple(PRISM):   # lm-eval's per-character acc_norm: only PRISM's results carry it
                sc["acc_norm_char"] = HS[key] + 0.01
            f.complete(key, {"zero_shot": {"hellaswag": sc}})
        drv = browser()
        open_page(drv, srv, out["sweep_id"])
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody td.zs').length === 3", "3 zero-shot cells")
        tips = drv.execute_script("return Object.fromEntries(Array.from(document.querySelectorAll('#leaderboard tbody tr')).map("
                                  "t => [t.dataset.heads, [t.querySelector('td.zs').title, t.querySelector('td.zs').dataset.accNormChar || null]]));")
        pv = [HS[(tuple(PRISM), s)] + 0.01 for s in SEEDS]
        check("acc_norm_char %s ± %s (lm-evaluation-harness's acc_norm" % (f4(mean(pv)), f4(sstd(pv))) in tips[P_S][0],
              "PRISM's tooltip names lm-eval's acc_norm_char: %r" % tips[P_S][0])
        check_eq(f4(mean(pv)), tips[P_S][1], "PRISM's cell carries acc_norm_char")
        check("acc_norm_char" not in tips[U_S][0] and tips[U_S][1] is None, "uniform reported none: %r" % (tips[U_S],))
        head = drv.execute_script("return Array.from(document.querySelectorAll('#leaderboard thead th')).map(t => t.textContent.trim());")
        check_eq("hellaswag acc_norm (Δ [95% CI])", head[5], "the task's column header, after Δ vs uniform")
        cells = drv.execute_script("return Object.fromEntries(Array.from(document.querySelectorAll('#leaderboard tbody tr')).map("
                                   "t => [t.dataset.heads, [t.querySelector('td.zs').textContent.trim(), t.querySelector('td.zs').dataset.excludesZero]]));")
        _, zlb = srv.call("GET", "/api/v1/sweeps/%d/leaderboard" % out["sweep_id"])
        zd = {",".join(map(str, x["heads"])): (x["zero_shot"].get("hellaswag") or {}).get("delta") for x in zlb["rows"]}
        have = {tuple(UNIFORM): SEEDS, tuple(PRISM): SEEDS, tuple(WIDE): [0, 1]}
        exp = blocked_deltas(HS, tuple(UNIFORM), have)
        ph = holm({k: v[3] for k, v in exp.items()})   # the family: 2 schedules × 1 task
        check_eq(2, zlb["zero_shot_comparisons"], "the Holm family")
        for sched in (PRISM, UNIFORM, WIDE):
            seeds = have[tuple(sched)]
            v = [HS[(tuple(sched), s)] for s in seeds]
            want = "%s ± %s" % (f4(mean(v)), f4(sstd(v)))
            if sched != UNIFORM:
                m, lo, hi, p, df = exp[tuple(sched)]
                api = zd[",".join(map(str, sched))]
                check(abs(api["mean"] - m) < 1e-12 and abs(api["ci_low"] - lo) < 1e-9 and abs(api["p"] - p) < 1e-9 and
                      api["df"] == df == 3, "the API's Δ of %s: %r, expected %r" % (sched, api, exp[tuple(sched)]))
                sig = ph[tuple(sched)] < 0.05
                check_eq(sig, api["significant"], "%s marked" % sched)
                want += "Δ %s [%s, %s] n=10042×%d" % (s4(m), s4(lo), s4(hi), len(seeds)) + \
                    " pHolm %s" % fmt_p(ph[tuple(sched)]).replace("e-0", "e-") + \
                    (" ▲" if sig and m > 0 else " ▼" if sig else "")
            check_eq(want.replace(" ", ""), cells[",".join(map(str, sched))][0].replace(" ", "").replace("\n", ""),
                     "zero-shot cell of %s" % sched)
        check_eq("1", cells[P_S][1], "prism's hellaswag CI excludes zero")
        check_eq("0", cells[W_S][1], "6,6,6,6,12x8's hellaswag CI includes zero")
        # sorting by the column: highest acc_norm first
        drv.find_element("css selector", "#leaderboard th[data-key='zs:hellaswag']").click()
        order = drv.execute_script("return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(t => t.dataset.heads);")
        check_eq([P_S, W_S, U_S], order, "rows sorted by hellaswag acc_norm, highest first")
        code, body = srv.call("GET", "/api/v1/sweeps/%d/leaderboard?format=csv" % out["sweep_id"])
        check(b"hellaswag_acc_norm_mean" in body.split(b"\n")[0], "CSV header has the task's columns: %r" % body[:400])
        screenshot(drv, "leaderboard-zero-shot.png")
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_zero_shot_one_seed_is_no_test():
    """One seed per schedule: the zero-shot Δ has no residual df, so the cell shows Δ, the item count × 1 and
    "(no test)" (the reason on hover), never an interval or a mark."""
    srv = Server()
    drv = None
    try:
        zsp = spec("web-zs1", [UNIFORM, PRISM], seeds=[0])
        zsp["eval"] = dict(zsp.get("eval") or {}, tasks=[{"name": "hellaswag", "path": "hellaswag_val.bin"}])
        out = srv.ok("POST", "/api/v1/sweeps", zsp)
        f = Feeder(srv)
        f.lease_all()
        for key in sorted(f.leases):
            f.complete(key, {"zero_shot": {"hellaswag": {"acc": HS[key] - 0.02, "acc_norm": HS[key], "n": 10042, "truncated": 0}}})
        drv = browser()
        open_page(drv, srv, out["sweep_id"])
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody td.zs').length === 2", "2 zero-shot cells")
        cell = drv.execute_script("const td = document.querySelector('#leaderboard tbody tr[data-heads=\"%s\"] td.zs');"
                                  "return [td.textContent.trim(), td.querySelector('.ci').title];" % P_S)
        d = HS[(tuple(PRISM), 0)] - HS[(tuple(UNIFORM), 0)]
        check_eq(("%s Δ %s n=10042×1 (no test)" % (f4(HS[(tuple(PRISM), 0)]), s4(d))).replace(" ", ""),
                 cell[0].replace(" ", "").replace("\n", ""), "the one-seed zero-shot cell")
        check("no residual df" in cell[1], "the reason on hover: %r" % cell[1])
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_halving_pruned_rows_and_tokens():
    """A sweep with halving: pruned schedules are greyed, the tokens line, rung markers on the loss curves."""
    srv = Server()
    drv = None
    try:
        sp = spec("web-halving", [UNIFORM, PRISM, WIDE], seeds=[0, 1])
        sp["halving"] = {"eta": 3, "rungs": [0.25]}          # rung 0 at step 10 of 40
        sid = srv.ok("POST", "/api/v1/sweeps", sp)["sweep_id"]
        f = Feeder(srv)
        f.lease_all()
        check_eq(6, len(f.leases), "jobs leased at rung 0")
        for key, ls in sorted(f.leases.items()):
            check_eq(10, ls.get("stop_at_step"), "stop_at_step in the lease of %r" % (key,))
            f.metrics(key, 9)
            tok = {"lease_token": ls["lease_token"]}
            srv.ok("POST", "/api/v1/jobs/%d/metrics" % ls["job_id"], dict(tok, points=[{"step": 10, "val_loss": curve(VAL[key], 10, key[1])}]), WORKER_TOKEN)
            srv.ok("POST", "/api/v1/jobs/%d/checkpoint" % ls["job_id"],
                   dict(tok, path="/ck/job-%d-a%d/ckpt_10.bin" % (ls["job_id"], ls["attempt"]), step=10), WORKER_TOKEN)
            srv.ok("POST", "/api/v1/jobs/%d/rung" % ls["job_id"], dict(tok, step=10, val_loss=curve(VAL[key], 10, key[1])), WORKER_TOKEN)
        # n = 3, k = 1: the prism schedule (lowest Δ) and the baseline go on; WIDE is pruned
        f.leases = {}
        f.lease_all()
        check_eq(sorted([(tuple(UNIFORM), 0), (tuple(UNIFORM), 1), (tuple(PRISM), 0), (tuple(PRISM), 1)]), sorted(f.leases),
                 "promoted jobs")
        for key, ls in sorted(f.leases.items()):
            check_eq(10, ls["resume"]["step"], "resume step of a promoted job")
            f.metrics(key, STEPS, start=10)
            srv.ok("POST", "/api/v1/jobs/%d/complete" % ls["job_id"], {"lease_token": ls["lease_token"], "result": {
                "val_loss": VAL[key], "tok_per_s": TOKS[key[0]], "attn_distance": ATTN[key[0]]}}, WORKER_TOKEN)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "3 leaderboard rows")
        r = drv.execute_script("""return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(function (tr) {
          return { heads: tr.dataset.heads, pruned: tr.classList.contains('pruned'), seeds: tr.querySelector('.seeds').textContent.trim(),
                   opacity: parseFloat(getComputedStyle(tr.querySelector('td')).opacity), state: tr.querySelector('.state').textContent.trim() }; });""")
        check_eq([P_S, U_S, W_S], [x["heads"] for x in r], "order: the full run first (by delta), then the pruned schedule")
        check_eq([False, False, True], [x["pruned"] for x in r], "only 6,6,6,6,12x8 is marked pruned")
        check(r[2]["opacity"] < 0.9 and r[0]["opacity"] == 1.0, "the pruned row is greyed: %r" % r)
        check("r0 pruned" in r[2]["seeds"] and "r1" in r[0]["seeds"], "rung tags: %r" % r)
        check_eq("pruned", r[2]["state"], "state of the pruned schedule")
        # the pruned schedules are a section of their own, not compared (no best-group mark), Δ labelled with its step
        firsts = drv.execute_script("return Array.from(document.querySelectorAll('#leaderboard tbody tr.first-pruned')).map(t => t.dataset.heads);")
        check_eq([W_S], firsts, "the pruned section starts at the pruned schedule")
        check("not compared with the survivors" in drv.find_element("id", "pruned-note").text, "the pruned section's note")
        wrank = drv.execute_script("return document.querySelector('#leaderboard tbody tr[data-heads=\"%s\"] .rank').textContent;" % W_S)
        check("=" not in wrank, "a pruned schedule carries no best-group mark: %r" % wrank)
        wd = drv.execute_script("return document.querySelector('#leaderboard tbody tr[data-heads=\"%s\"] .delta').textContent;" % W_S)
        check("@10" in wd, "the pruned schedule's delta is labelled with its step: %r" % wd)
        line = wait_for(drv, "document.getElementById('halving-tokens') && document.getElementById('halving-tokens').textContent",
                        "the tokens line")
        spent, full = (6 * 10 + 4 * 30) * TOK_PER_STEP, 6 * STEPS * TOK_PER_STEP
        check_eq("tokens spent: {:,} of the full grid's {:,}".format(spent, full), line, "the tokens line")
        # the loss curves of a schedule carry a marker at the rung (in tokens, as the x axis)
        open_page(drv, srv, sid, "&schedule=%s" % drv.execute_script(
            "return document.querySelector('#leaderboard tbody tr[data-heads=\"%s\"]').dataset.schedule;" % W_S))
        marks = wait_for(drv, "document.getElementById('chart-val').dataset.rungs", "rung markers on the val curve")
        check_eq(str(10 * TOK_PER_STEP), marks, "rung marker position (tokens)")
        check_eq(marks, drv.execute_script("return document.getElementById('chart-train').dataset.rungs;"), "train curve markers")
        # the sweep is over (every job done or pruned): its state reads finished, not the admin state "active"
        st = drv.execute_script("return document.querySelector('#sweeps tr[data-sweep=\"%d\"] .sweep-state').textContent;" % sid)
        check_eq("finished", st, "the finished sweep's state cell")
        # a pruned job is over: its curves are fetched once (val, train), not again on every 2 s refresh
        jobs = srv.ok("GET", "/api/v1/sweeps/%d/jobs" % sid)["jobs"]
        pruned = [str(j["id"]) for j in jobs if j["state"] == "pruned"]
        check_eq(2, len(pruned), "pruned jobs")
        time.sleep(5)   # two more refreshes
        n = drv.execute_script("return performance.getEntriesByType('resource').filter(function (e) { "
                               "return /\\/jobs\\/(%s)\\/metrics/.test(e.name); }).length;" % "|".join(pruned))
        check(n == 2 * len(pruned), "the pruned jobs' curves were fetched %d times (expected %d: once each kind)" % (n, 2 * len(pruned)))
        screenshot(drv, "leaderboard-halving.png")
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_racing_rounds_and_eliminated_rows():
    """A racing sweep played round by round: eliminated schedules marked (out@R), survivors tagged, the seeds spent
    against the fixed design, and each survivor's Δ CI per round drawn narrowing; all as the leaderboard JSON says."""
    srv = Server()
    drv = None
    try:
        sp = spec("web-racing", [UNIFORM, PRISM, WIDE], seeds=[0, 1])
        sp["racing"] = {"max_seeds": 4, "alpha": 0.5}
        sp["eval"]["batches"] = "all"
        for k, v in {(tuple(UNIFORM), 3): 3.3741, (tuple(PRISM), 3): 3.3601, (tuple(WIDE), 3): 3.3657}.items():
            VAL[k] = v
        sid = srv.ok("POST", "/api/v1/sweeps", sp)["sweep_id"]
        f = Feeder(srv)
        rounds = 0
        while True:   # each round: lease what is queued (the server created it when the last round ended), finish it
            f.leases = {}
            f.lease_all()
            if not f.leases:
                break
            rounds += 1
            if rounds > 1:   # round r trains seed max(seeds) + r - 1 = r
                check(all(k[1] == rounds for k in f.leases), "round %d leases seed %d only: %r" % (rounds, rounds, sorted(f.leases)))
            for key in sorted(f.leases):
                f.complete(key)
        lb = srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid)
        rc = lb["racing"]
        check(rc["rounds_decided"] >= 2 and rc["finished"], "the race went past round 1 and ended: %r" % rc)
        check(rc["eliminated"] >= 1, "someone was eliminated: %r" % rc)
        by = {",".join(map(str, r["heads"])): r["racing"] for r in lb["rows"]}
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "3 leaderboard rows")
        r = drv.execute_script("""return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(function (tr) {
          var o = tr.querySelector('.race.out'), s = tr.querySelector('.race.survivor');
          return { heads: tr.dataset.heads, out: tr.classList.contains('eliminated'), tag: o ? o.textContent : s ? s.textContent : '',
                   opacity: parseFloat(getComputedStyle(tr.querySelector('td')).opacity) }; });""")
        for x in r:
            want = by[x["heads"]]
            if want["eliminated_round"] is not None:
                check(x["out"] and x["tag"] == "out@%d" % want["eliminated_round"], "eliminated row %r vs %r" % (x, want))
                check(x["opacity"] < 0.9, "the eliminated row is greyed: %r" % x)
            else:
                check(not x["out"] and x["tag"] == "survivor", "survivor row %r vs %r" % (x, want))
        line = wait_for(drv, "document.getElementById('racing-spent') && document.getElementById('racing-spent').textContent",
                        "the racing line")
        check("seeds spent {:,} of the fixed design's {:,}".format(rc["seeds_spent"], rc["fixed_design_seeds"]) in line, line)
        check_eq(12, rc["fixed_design_seeds"], "max_seeds x schedules")
        # the survivors' CIs round by round, as the JSON has them, narrower at the last round than at the first
        cis = drv.execute_script("""return Array.from(document.querySelectorAll('#race-rounds svg.race-ci')).map(function (g) {
          return { id: g.dataset.schedule, lines: Array.from(g.querySelectorAll('line.ci')).map(function (l) {
            return [parseInt(l.dataset.round), parseFloat(l.dataset.lo), parseFloat(l.dataset.hi),
                    parseFloat(l.getAttribute('x2')) - parseFloat(l.getAttribute('x1'))]; }) }; });""")
        surv = [x for x in lb["rows"] if x["racing"]["status"] == "survivor" and not x["is_baseline"]]
        check_eq(len(surv), len(cis), "one CI strip per survivor (the baseline excepted)")
        for g in cis:
            row = next(x for x in surv if str(x["schedule_id"]) == g["id"])
            want = [(e["round"], e["ci_low"], e["ci_high"]) for e in row["racing"]["rounds"]]
            check_eq([w[0] for w in want], [l[0] for l in g["lines"]], "rounds drawn for %s" % g["id"])
            for w, l in zip(want, g["lines"]):
                check(abs(w[1] - l[1]) < 1e-12 and abs(w[2] - l[2]) < 1e-12, "CI of round %d: %r vs %r" % (w[0], w, l))
            check(g["lines"][-1][3] < g["lines"][0][3], "the CI narrows from round 1 to the last: %r" % g["lines"])
        screenshot(drv, "leaderboard-racing.png")
        assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def search_spec(name, search, seeds=(1, 2)):
    """tests/integration/test_search.sh's s_spec: L=12, d=768 under the default rules (53 valid schedules)."""
    return {"name": name, "seeds": list(seeds), "search": search,
            "model": {"n_layer": 12, "d_model": 768, "vocab_size": 50257, "padded_vocab_size": 50304, "seq_len": 1024},
            "train": {"batch_size": 8, "seq_len": 1024, "steps": 100, "lr": 0.0006},
            "eval": {"every": 100}, "data": {"train": "data/t_*.bin", "val": "data/v_*.bin"}}


def s5(x):
    return ("+" if x > 0 else "") + ("%.5f" % x).replace("-", "\u2212")


def stop_search_case(wk, drv, srv):
    """The end of a search case: the synthetic worker, the browser and the server, whichever started."""
    if wk and wk.poll() is None:
        wk.kill()
        wk.wait()
    if drv:
        drv.quit()
    srv.stop()


def t_search_panel_and_progress():
    """A real surrogate search (test_search.sh's synthetic worker over the worker API, run until the search is over):
    the Search panel says what the leaderboard JSON's `search` says (settings, batches decided, trained, why it
    finished, the recommended schedule and its model mean ± sd, the predicted best untrained with P(beat), the fit),
    the chart has one point per batch (x = schedules trained, y = the recommendation's mean), every trained row shows
    its surrogate mean ± sd and the recommended row is marked; nothing past 420 px; a sweep without search shows none."""
    srv = Server()
    drv = wk = None
    try:
        sid = srv.ok("POST", "/api/v1/sweeps", search_spec("web-search", {"strategy": "surrogate", "budget": 16, "batch": 4,
                                                                         "init": 6}))["sweep_id"]
        tok = os.path.join(srv.dir, "worker-token")
        with open(tok, "w") as f:
            f.write(WORKER_TOKEN + "\n")
        wk = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests", "integration", "search_worker.py"), str(srv.port), tok,
                               "--quiet", "--idle-exit", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            g = srv.ok("GET", "/api/v1/sweeps/%d" % sid, token=None)
            if g.get("search", {}).get("finished") and not any(g["counts"].get(k) for k in ("queued", "leased")):
                break
            check(time.time() < deadline and wk.poll() is None, "the search did not finish (worker rc %r): %r" % (wk.poll(), g.get("search")))
            time.sleep(0.2)
        wk.terminate()
        wk.wait(5)
        plain = srv.ok("POST", "/api/v1/sweeps", spec("web-plain", [UNIFORM, PRISM], seeds=[0]))["sweep_id"]
        lb = srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid, token=None)
        se = lb["search"]
        check_eq(16, se["schedules"], "the search's schedules (its budget)")
        check(se["batches_decided"] >= 3 and se["finished"], "several batches, finished: %r" % se)
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "!document.getElementById('search-panel').hidden && document.getElementById('search-finished')", "the search panel")
        txt = lambda i: drv.execute_script("var e = document.getElementById('%s'); return e ? e.textContent : null;" % i)
        for k, i in (("budget", "budget"), ("init", "init"), ("batch", "batch"), ("space", "space"), ("batches_decided", "decided"),
                     ("schedules", "schedules"), ("trained", "trained")):
            check_eq(str(se[k]), txt("search-" + i), "the panel's " + k)
        check_eq(se["stop_reason"], drv.execute_script("return document.getElementById('search-finished').dataset.reason;"), "why it finished")
        check("finished (the budget is spent)" in txt("search-line"), txt("search-line"))
        heads = lambda h: ",".join(str(int(x)) for x in h.replace(" ", ",").split(",") if x)
        rec = se["recommended"]
        check_eq(heads(rec["heads"]), drv.execute_script("return document.getElementById('search-rec-heads').dataset.heads;"), "recommended heads")
        check_eq(s5(rec["mean"]), txt("search-rec-mean"), "recommended model mean")
        check_eq("%.5f" % rec["sd"], txt("search-rec-sd"), "recommended model sd")
        check("as of batch %d" % se["as_of_batch"] in txt("search-rec"), txt("search-rec"))
        bu = se["predicted_best_untrained"]
        if bu:
            check_eq(heads(bu["heads"]), drv.execute_script("return document.getElementById('search-untrained-heads').dataset.heads;"), "best untrained")
            check_eq(s5(bu["mean"]), txt("search-untrained-mean"), "best untrained mean")
            check_eq("%.2f" % se["p_beat"], txt("search-pbeat"), "P(beat)")
        else:
            check(txt("search-untrained") is None, "no best-untrained line without one")
        fit = se["fit"]
        check_eq("%.5f" % fit["loo_rmse"], txt("search-loo"), "leave-one-out RMSE")
        check_eq("%.2f" % fit["loo_z_rms"], txt("search-z"), "leave-one-out z rms")
        check_eq(fit["heldout_n"] > 0, txt("search-heldout") is not None, "the held-out part iff heldout_n > 0")
        if fit["heldout_n"] > 0:
            check("RMSE %.5f" % fit["heldout_rmse"] in txt("search-heldout"), txt("search-heldout"))
        # the chart: one point per batch, x = schedules trained, y = the recommendation's model mean
        pts = wait_for(drv, """(function () { var c = Chart.getChart('chart-search'); if (!c) return null;
            var d = c.data.datasets.filter(function (x) { return x.main; })[0]; return d && d.data.map(function (p) { return [p.x, p.y]; }); })()""",
                       "the search chart")
        check_eq(len(se["batches"]), len(pts), "one chart point per batch")
        for b, p in zip(se["batches"], pts):
            check(b["trained"] == p[0] and abs(b["recommended_mean"] - p[1]) < 1e-12, "batch %d point %r vs %r" % (b["batch"], p, b))
        check(drv.execute_script("return Chart.getChart('chart-search').data.datasets.some(function (d) { return d.band; });"), "a ± sd band")
        # the table: the model Δ column, each trained row's surrogate mean ± sd, the recommended row marked
        check(drv.execute_script("return !!document.querySelector('#leaderboard th.surrogate');"), "the model Δ column")
        want = {",".join(map(str, r["heads"])): r.get("surrogate") for r in lb["rows"]}
        got = drv.execute_script("""return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(function (tr) {
          return [tr.dataset.heads, tr.querySelector('td.surrogate').textContent.trim(), tr.classList.contains('recommended'),
                  !!tr.querySelector('.tag.rec')]; });""")
        check_eq(len(lb["rows"]), len(got), "one table row per leaderboard row")
        check(sum(1 for w in want.values() if w) >= 10, "most rows carry a surrogate: %r" % want)
        for h, cell, is_rec, tag in got:
            sg = want[h]
            check_eq(s5(sg["mean"]) + " ± " + "%.5f" % sg["sd"] if sg else "—", cell, "model Δ of " + h)
            check_eq(h == heads(rec["heads"]), is_rec, "the recommended mark on " + h)
            check_eq(is_rec, tag, "the recommended tag on " + h)
        screenshot(drv, "leaderboard-search.png")
        # 420 px: the panel wraps, nothing past the right edge outside a scrolling box
        drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        wait_for(drv, "window.innerWidth === 420", "a 420 px viewport")
        w = drv.execute_script("return [document.documentElement.scrollWidth, document.body.scrollWidth];")
        check(w[0] <= 420 and w[1] <= 420, "page width at 420 px: %r" % w)
        wide = drv.execute_script("""return Array.from(document.querySelectorAll('#search-panel *')).filter(e => e.offsetParent !== null &&
               e.getBoundingClientRect().right > window.innerWidth + 0.5).map(e => e.tagName + '#' + e.id).slice(0, 8);""")
        check_eq([], wide, "search panel elements past the right edge")
        drv.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        # a sweep without search: no panel, no column
        open_page(drv, srv, plain)
        wait_for(drv, "document.getElementById('sweep-title').textContent.indexOf('web-plain') >= 0 && "
                 "document.querySelectorAll('#leaderboard tbody tr').length === 2", "the plain sweep")
        check(drv.execute_script("return document.getElementById('search-panel').hidden;"), "no Search panel on a sweep without search")
        check(not drv.execute_script("return !!document.querySelector('#leaderboard .surrogate, #leaderboard tr.recommended');"),
              "no model Δ column on a sweep without search")
        assert_no_console_errors(drv)
    finally:
        stop_search_case(wk, drv, srv)


def t_search_with_dims_names_each_candidates_lr():
    """A search over the learning rate too ("search.dims"): the panel says what is searched and at which lr the
    recommended and the predicted best untrained are; each table row tags its candidate's lr (the same schedule may
    appear at two), as the leaderboard JSON's `train`; only the recommended candidate (schedule and lr) is marked."""
    srv = Server()
    drv = wk = None
    try:
        sid = srv.ok("POST", "/api/v1/sweeps", search_spec("web-dims", {"strategy": "surrogate", "budget": 12, "batch": 3, "init": 6,
                                                                       "dims": {"train.lr": [0.0001, 0.01]}}))["sweep_id"]
        tok = os.path.join(srv.dir, "worker-token")
        with open(tok, "w") as f:
            f.write(WORKER_TOKEN + "\n")
        wk = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests", "integration", "search_worker.py"), str(srv.port), tok,
                               "--quiet", "--idle-exit", "60", "--lr-opt", "0.002"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            g = srv.ok("GET", "/api/v1/sweeps/%d" % sid, token=None)
            if g.get("search", {}).get("finished") and not any(g["counts"].get(k) for k in ("queued", "leased")):
                break
            check(time.time() < deadline and wk.poll() is None, "the search did not finish: %r" % g.get("search"))
            time.sleep(0.2)
        wk.terminate()
        wk.wait(5)
        lb = srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid, token=None)
        se = lb["search"]
        words = lambda t: " ".join("%s=%s" % (k, ("%.3g" % v)) for k, v in t.items())
        drv = browser()
        open_page(drv, srv, sid)
        wait_for(drv, "!document.getElementById('search-panel').hidden && document.getElementById('search-finished')", "the search panel")
        txt = lambda i: drv.execute_script("var e = document.getElementById('%s'); return e ? e.textContent : null;" % i)
        check_eq("searched with the schedule: train.lr in [0.0001, 0.01] (log scale; the baseline at 0.0006)", txt("search-dims"), "the dims line")
        check_eq(words(se["recommended"]["train"]), txt("search-rec-train"), "the recommended candidate's lr")
        if se["predicted_best_untrained"]:
            check_eq(words(se["predicted_best_untrained"]["train"]), txt("search-untrained-train"), "the best untrained candidate's lr")
        want = {str(r["schedule_id"]): r for r in lb["rows"]}
        got = drv.execute_script("""return Array.from(document.querySelectorAll('#leaderboard tbody tr')).map(function (tr) {
          var t = tr.querySelector('.tag.train'); return [tr.dataset.schedule, t ? t.textContent : null, tr.classList.contains('recommended')]; });""")
        check_eq(len(lb["rows"]), len(got), "one table row per candidate")
        rec = se["recommended"]
        for sid_, tag, is_rec in got:
            r = want[sid_]
            check_eq(words(r["train"]), tag, "the lr tag of candidate " + sid_)
            check_eq(",".join(map(str, r["heads"])) == rec["heads"] and r["train"] == rec["train"], is_rec, "the recommended mark on " + sid_)
        check_eq(1, sum(1 for _, _, x in got if x), "exactly one recommended row")
        assert_no_console_errors(drv)
    finally:
        stop_search_case(wk, drv, srv)


def run_cases(namespace):
    """The files' protocol: `--list` prints the t_* functions of namespace (a module's globals()), `CASE` runs one."""
    cases = {name[2:]: fn for name, fn in sorted(namespace.items()) if name.startswith("t_") and callable(fn)}
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(cases))
        sys.exit(0)
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print("usage: %s --list | CASE (one of: %s)" % (sys.argv[0], ", ".join(cases)), file=sys.stderr)
        sys.exit(2)
    cases[sys.argv[1]]()
    print("ok")


if __name__ == "__main__":
    run_cases(globals())
