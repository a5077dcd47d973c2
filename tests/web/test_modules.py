#!/usr/bin/python3
# test_modules.py — the page's scripts are ES modules that share nothing through globals, and the page's job-state
# sets are the API's (web/*.js, web/index.html, GET /api/v1/sweeps' job_states/terminal_states/active_states). timeout: 120
#
# Statically: tests/web/modules_check.cjs parses every web/*.js as a module (Debian's acorn, eslint-scope and globals
# under node) and fails on a free name that is not imported, a builtin or Chart, on a write to window/globalThis,
# on a classic script or a second module entry in index.html, on an import of a name not exported; a copy of web/
# with each of those mistakes made is refused, naming it. In the browser: the page, live against a real
# `prism-sweep serve`, adds no property to window but Chart.js's `Chart`, and its terminal/active sets follow what
# the API sends. The server, the worker play and the browser are test_leaderboard.py's (imported).
# Protocol: `--list` prints the cases; `CASE` runs one (exit 0 pass, 77 skip, 1 fail).
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_leaderboard as tl  # noqa: E402
from test_leaderboard import ROOT, TMP, check, check_eq, fail, wait_for  # noqa: E402

WEB = os.path.join(ROOT, "web")
CHECKER = os.path.join(ROOT, "tests", "web", "modules_check.cjs")


def run_check(web):
    """modules_check.cjs on a folder: (exit code, stdout, stderr)."""
    if not shutil.which("node"):
        fail("node missing: run `make deps` (nodejs)")
    env = dict(os.environ, NODE_PATH="/usr/share/nodejs:/usr/lib/nodejs")
    p = subprocess.run(["node", CHECKER, web], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode == 2:
        fail("modules_check could not run: %s" % p.stderr.strip())
    return p.returncode, p.stdout, p.stderr


def js(drv, expr):
    return drv.execute_script("return " + expr + ";")


# ---------------------------------------------------------------------------------------------- cases

def t_modules_share_no_globals():
    """Every web/*.js is a module reached from the one entry; each free name is imported, a builtin or Chart."""
    rc, out, err = run_check(WEB)
    check_eq(0, rc, "modules_check on web/: %s" % err)
    n = len([f for f in os.listdir(WEB) if f.endswith(".js")])
    check("ok: %d modules, entry app.js" % n in out, "the checker saw every file: %r" % out)


# each mistake: (file, text to find, its replacement, what the checker must say; None: the next one adds to this one)
MISTAKES = [
    ("curves.js", "import { S } from './state.js';\n", "", r"curves\.js:\d+: `S` is not declared or imported here: import it from \./state\.js"),
    ("app.js", "const POLL_MS = 2000;", "const POLL_MS = 2000;\nwindow.prismState = S;", r"app\.js:\d+: assigns window\.prismState"),
    ("spec.js", "export function renderSpec(d) {", "Object.assign(globalThis, { specRow });\nexport function renderSpec(d) {",
     r"spec\.js:\d+: Object\.assign on globalThis"),
    ("heatmap.js", "export function heatmapSVG(rows, mode, Wu) {", "export function heatmapSVG(rows, mode, Wu) {\n  lastMode = mode;",
     r"heatmap\.js:\d+: assigns to `lastMode`, which no scope of the module declares"),
    ("forest.js", "export function svgWidth(box) {", "export function svgWidth(box) {\n  if (name) return 640;",
     r"forest\.js:\d+: `name` is not declared or imported here \(a browser global that is easy to use by mistake"),
    ("actions.js", "import { S, isActive } from './state.js';", "import { S, isActive, isPaused } from './state.js';",
     r"actions\.js:\d+: imports `isPaused` from \./state\.js, which does not export it"),
    ("app.js", "const POLL_MS = 2000;", "export const POLL_MS = 2000;", None),
    ("actions.js", "import { poll, renderSweep } from './app.js';", "import { POLL_MS, poll, renderSweep } from './app.js';\nconst pollEvery = () => POLL_MS;",
     r"actions\.js:\d+: imports `POLL_MS` from \./app\.js, which imports this file back \(a cycle\), and it is not a function declaration"),
    ("index.html", '<script type="module" src="app.js"></script>', '<script src="util.js"></script>\n<script type="module" src="app.js"></script>',
     r"index\.html:\d+: classic script util\.js: load it as an ES module"),
    ("index.html", '<script type="module" src="app.js"></script>', '<script type="module" src="app.js"></script>\n<script type="module" src="spec.js"></script>',
     r"index\.html:\d+: 2 module scripts"),
]


def t_checker_refuses_each_mistake():
    """A copy of web/ with one mistake at a time (a lost import, window.x = ..., Object.assign(globalThis, ...), an
    implicit global, a confusing browser global, a name the module does not export, a const across an import cycle,
    a classic script, two entries):
    the checker fails and names the file, the line and the fix."""
    base = tempfile.mkdtemp(prefix="web-mistakes-", dir=TMP)
    try:
        d = None
        for i, (f, old, new, want) in enumerate(MISTAKES):
            if d is None:   # a step without `want` is a first edit that the next one builds on
                d = os.path.join(base, str(i))
                shutil.copytree(WEB, d)
            p = os.path.join(d, f)
            src = open(p, encoding="utf-8").read()
            check(old in src, "test data: %r is in web/%s" % (old, f))
            open(p, "w", encoding="utf-8").write(src.replace(old, new, 1))
            if want is None:
                continue
            rc, out, err = run_check(d)
            d = None
            check_eq(1, rc, "the checker refuses mistake %d (%s): %s" % (i, f, err or out))
            check(re.search(want, err) is not None, "mistake %d named (%s): %s" % (i, want, err))
    finally:
        shutil.rmtree(base, ignore_errors=True)


# the window's own properties that a fresh window (an about:blank iframe) lacks
OWN_GLOBALS_JS = """(function () {
  const f = document.createElement('iframe'); f.src = 'about:blank'; document.body.appendChild(f);
  const fresh = new Set(Object.getOwnPropertyNames(f.contentWindow)); f.remove();
  return Object.getOwnPropertyNames(window).filter((k) => !fresh.has(k)).sort(); })()"""


def t_page_adds_no_window_globals():
    """Live against the server, the page's window has no own property that a fresh window lacks but Chart."""
    srv = tl.Server()
    drv = None
    try:
        sid, _ = tl.main_sweep(srv)
        drv = tl.browser()
        # what WebDriver itself leaves on a window (chromedriver's result serialiser: ret_nodes), on a blank page
        drv.get("about:blank")
        js(drv, "document.title")
        harness = set(js(drv, OWN_GLOBALS_JS))
        print("left by the harness on about:blank:", sorted(harness))
        tl.open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "3 leaderboard rows")
        extra = [k for k in js(drv, OWN_GLOBALS_JS) if k not in harness]
        check_eq(["Chart"], extra, "the page's own globals (window properties a fresh window lacks)")
        scripts = js(drv, "Array.from(document.scripts).map((s) => [s.type || 'classic', s.getAttribute('src') || 'inline'])")
        check_eq([["module", "app.js"]], [s for s in scripts if s[0] == "module"], "one module entry")
        check(all(s[0] == "module" or s[1] in ("inline", "/vendor/chart.js/chart.umd.js") for s in scripts),
              "no classic script but Chart.js and the inline theme: %r" % scripts)
        tl.assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


# the answer of GET /api/v1/sweeps rewritten in the page's fetch: `leased` said to be terminal
REWRITE_JS = """window.__rewrites = 0; const of = window.fetch;
window.fetch = function (u, o) {
  return of.apply(this, arguments).then((r) => {
    if (!/\\/api\\/v1\\/sweeps$/.test(String(u))) return r;
    return r.json().then((b) => {
      b.terminal_states = b.terminal_states.concat(['leased']);
      b.active_states = b.active_states.filter((s) => s !== 'leased');
      window.__rewrites++;
      return new Response(JSON.stringify(b), { status: r.status, headers: r.headers });
    });
  });
};"""


def t_state_sets_come_from_the_api():
    """The API names its terminal and active states; the page's 'finished', its ETA and its cancel button follow
    them: with every job leased the sweep is running (the API's sets), and it reads as finished with nothing to
    cancel once the API's answer (rewritten in the page) calls `leased` terminal."""
    srv = tl.Server()
    drv = None
    try:
        sw = srv.ok("GET", "/api/v1/sweeps", token=None)
        check_eq(["done", "failed", "cancelled", "pruned"], sw["terminal_states"], "terminal_states (common/jobstate.h)")
        check_eq(["queued", "leased", "paused"], sw["active_states"], "active_states (common/jobstate.h)")
        check_eq(sw["job_states"], [s for s in sw["job_states"] if s in sw["terminal_states"] + sw["active_states"]],
                 "every state is terminal or active")
        sid = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-states", [tl.UNIFORM, tl.PRISM], seeds=[0]))["sweep_id"]
        f = tl.Feeder(srv)
        f.lease_all()
        check_eq(2, len(f.leases), "both jobs leased")
        drv = tl.browser()
        tl.open_page(drv, srv, sid)
        row = "#sweeps tr[data-sweep='%d']" % sid
        wait_for(drv, "document.querySelector(\"%s td.sweep-state\")" % row, "the sweep's row")
        check_eq("active", js(drv, "document.querySelector(\"%s td.sweep-state\").textContent" % row), "running: its admin state")
        drv.find_element("css selector", "#actions summary").click()
        wait_for(drv, "/cancel 2 unfinished/.test(document.getElementById('act-cancel-all').textContent)", "2 jobs to cancel")
        drv.execute_script(REWRITE_JS)
        wait_for(drv, "window.__rewrites > 0 && document.querySelector(\"%s td.sweep-state\").textContent === 'finished'" % row,
                 "the sweep finished by the rewritten sets")
        check_eq("ended", js(drv, "document.querySelector(\"%s td.eta\").textContent" % row), "the ETA: nothing left to run (none done)")
        wait_for(drv, "/cancel 0 unfinished/.test(document.getElementById('act-cancel-all').textContent) && "
                      "document.getElementById('act-cancel-all').disabled", "nothing left to cancel")
        tl.assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


if __name__ == "__main__":
    tl.run_cases(globals())
