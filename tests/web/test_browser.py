#!/usr/bin/python3
# test_browser.py — the page as an experiment browser (web/forest.js, heatmap.js, curves.js, spec.js, actions.js)
# in Debian's headless Chromium against a real `prism-sweep serve` on loopback. timeout: 120
#
# The server, the worker play and the browser are test_leaderboard.py's (imported). Every expected number is
# read from the server's own API (leaderboard, metrics) or computed here from the values posted, and compared
# with what the page drew (SVG data-* attributes and geometry, Chart.js datasets and their pixel positions).
# Screenshots go to $PRISM_BUILD/artifacts/web/; with PRISM_UPDATE_SCREENSHOTS=1 also to docs/img/.
# Protocol: `--list` prints the cases; `CASE` runs one (exit 0 pass, 77 skip, 1 fail).
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_leaderboard as tl  # noqa: E402
from test_leaderboard import ADMIN_TOKEN, P_S, U_S, W_S, WIDE, check, check_eq, fail, wait_for  # noqa: E402


def session(fn):
    """Runs fn(srv, drv, sid, feeder) on the main sweep (3 schedules x 3 seeds, one seed of WIDE still running)."""
    srv = tl.Server()
    drv = None
    try:
        sid, f = tl.main_sweep(srv)
        drv = tl.browser()
        tl.open_page(drv, srv, sid)
        wait_for(drv, "document.querySelectorAll('#leaderboard tbody tr').length === 3", "3 leaderboard rows")
        fn(srv, drv, sid, f)
        tl.assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def board(srv, sid):
    return {",".join(map(str, r["heads"])): r for r in srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid, token=None)["rows"]}


def js(drv, expr):
    return drv.execute_script("return " + expr + ";")


# ---------------------------------------------------------------------------------------------- cases

def t_forest_intervals_equal_api():
    """Every forest-plot row's Δ and interval are the API's delta.mean / ci_low / ci_high, drawn where the axis says."""
    def run(srv, drv, sid, f):
        api = board(srv, sid)
        wait_for(drv, "document.querySelectorAll('#forest .forest-row').length === 2", "2 forest rows (the baseline has none)")
        g = js(drv, """Array.from(document.querySelectorAll('#forest .forest-row')).map(function (r) {
            var l = r.querySelector('line.ci'), c = r.querySelector('circle.pt');
            return { heads: r.dataset.heads, mean: r.dataset.mean, lo: r.dataset.lo, hi: r.dataset.hi, tied: r.dataset.tied,
                     x1: l ? +l.getAttribute('x1') : null, x2: l ? +l.getAttribute('x2') : null, cx: +c.getAttribute('cx') }; })""")
        svg = js(drv, "(function (s) { return { dmin: +s.dataset.dmin, dmax: +s.dataset.dmax, x0: +s.dataset.x0, x1: +s.dataset.x1 }; })(document.getElementById('forest'))")
        sx = lambda v: svg["x0"] + (v - svg["dmin"]) / (svg["dmax"] - svg["dmin"]) * (svg["x1"] - svg["x0"])
        ranked = sorted((r for r in api.values() if not r["is_baseline"] and r["rank"] is not None), key=lambda r: r["rank"])
        check_eq([",".join(map(str, r["heads"])) for r in ranked], [x["heads"] for x in g], "forest rows in the API's rank order")
        for r, x in zip(ranked, g):
            d = r["delta"]
            check_eq(d["mean"], float(x["mean"]), "Δ of %s" % x["heads"])
            check_eq(d["ci_low"], float(x["lo"]), "interval low of %s" % x["heads"])
            check_eq(d["ci_high"], float(x["hi"]), "interval high of %s" % x["heads"])
            check_eq("1" if r.get("tied_best") else "0", x["tied"], "best-group mark of %s" % x["heads"])
            for want, got, what in ((sx(d["ci_low"]), x["x1"], "left end"), (sx(d["ci_high"]), x["x2"], "right end"), (sx(d["mean"]), x["cx"], "dot")):
                check(abs(want - got) < 0.01, "%s of %s drawn at x=%r, the axis puts it at %r" % (what, x["heads"], got, want))
        check(any(x["tied"] == "1" for x in g), "the best group is marked: %r" % g)
        drv.execute_script("document.getElementById('all-section').scrollIntoView()")
        tl.screenshot(drv, "browser-all-schedules.png", readme=True)
    session(run)


def t_heatmap_values_equal_api():
    """The heatmap's cells are the rows' attn_distance, and after the toggle their delta_attn_distance."""
    def run(srv, drv, sid, f):
        api = board(srv, sid)
        cells = "Object.fromEntries(Array.from(document.querySelectorAll('#heatmap .hm-row')).map(r => [r.dataset.heads, " \
                "Array.from(r.querySelectorAll('.hm-cell')).map(c => c.dataset.value === '' ? null : +c.dataset.value)]))"
        wait_for(drv, "document.querySelectorAll('#heatmap .hm-row').length === 3", "3 heatmap rows")
        got = js(drv, cells)
        for h, r in api.items():
            check_eq(r["attn_distance"], got[h], "D_l cells of %s" % h)
        drv.find_element("id", "hm-dd").click()
        wait_for(drv, "document.getElementById('heatmap').dataset.mode === 'dd'", "the ΔD_l heatmap")
        got = js(drv, cells)
        check(U_S not in got, "no ΔD row for the baseline itself: %r" % list(got))
        for h in (P_S, W_S):
            check_eq(api[h]["delta_attn_distance"], got[h], "ΔD_l cells of %s" % h)
        check(js(drv, "document.querySelector('#heatmap .hm-cell').getAttribute('fill') !== 'transparent'"), "cells are coloured")
        # the colour bar: from -max to +max |ΔD|, its ends the colours of the cells at those values
        bar = js(drv, "(() => { const b = document.getElementById('hm-bar'); const st = Array.from(document.querySelectorAll("
                      "'#hm-grad stop')); return [+b.dataset.min, +b.dataset.max, st.map(x => x.getAttribute('stop-color'))]; })()")
        dmax = max(abs(x) for h in (P_S, W_S) for x in api[h]["delta_attn_distance"] if x is not None)
        check_eq([-dmax, dmax], [bar[0], bar[1]], "the ΔD colour bar's ends")
        check_eq(11, len(bar[2]), "colour bar stops")
        top = js(drv, "Array.from(document.querySelectorAll('#heatmap .hm-cell')).filter(c => c.dataset.value !== '' && "
                      "Math.abs(+c.dataset.value) === %r).map(c => [+c.dataset.value, c.getAttribute('fill')])" % dmax)
        check(top, "a cell holds the largest |ΔD|")
        check_eq(bar[2][10] if top[0][0] > 0 else bar[2][0], top[0][1], "the extreme cell's colour is the bar's end")
        drv.find_element("id", "hm-d").click()
        wait_for(drv, "document.getElementById('heatmap').dataset.mode === 'd'", "the D_l heatmap again")
        bar = js(drv, "[+document.getElementById('hm-bar').dataset.min, +document.getElementById('hm-bar').dataset.max]")
        dm = max(x for r in api.values() for x in r["attn_distance"] if x is not None)
        check_eq([0, dm], bar, "the D colour bar's ends")
    session(run)


def main_heads(drv):
    return js(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).map(d => d.heads)")


def t_overlay_shows_chosen_schedules():
    """The compare chart and the staircase overlay show exactly the ticked schedules (best + uniform at first)."""
    def run(srv, drv, sid, f):
        wait_for(drv, "Chart.getChart('chart-overlay') && Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).length === 2",
                 "the default overlay (best and uniform)")
        check_eq(sorted([P_S, U_S]), sorted(main_heads(drv)), "default overlay")
        check_eq(sorted([P_S, U_S]), sorted(js(drv, "Array.from(document.querySelectorAll('#stairs .stair-line.picked')).map(p => p.dataset.heads)")),
                 "picked staircases")
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s'] input.pick" % W_S).click()
        wait_for(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).length === 3", "3 overlaid schedules")
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s'] input.pick" % P_S).click()
        wait_for(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).length === 2", "2 overlaid schedules")
        check_eq(sorted([U_S, W_S]), sorted(main_heads(drv)), "overlay after ticking 6,6,6,6,.. and unticking prism")
        check(sorted(js(drv, "document.getElementById('chart-overlay').dataset.schedules").split(";")) == sorted([U_S, W_S]),
              "the canvas names the ticked schedules")
        check(js(drv, "document.getElementById('detail-section').hidden"), "ticking a box does not open the detail view")
        # bands: 3 seeds of uniform and 2-3 of WIDE: each schedule has its -1 sd / +1 sd pair
        check_eq(4, js(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.band).length"), "two band datasets per schedule")
        # x in steps, log y
        drv.execute_script("var s = document.getElementById('ov-x'); s.value = 'steps'; s.dispatchEvent(new Event('change'));")
        wait_for(drv, "Chart.getChart('chart-overlay').options.scales.x.title.text === 'step'", "the steps axis")
        xs = js(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.main)[0].data.map(p => p.x)")
        check_eq(list(range(0, tl.STEPS + 1, tl.VAL_EVERY)), xs, "val points at steps 0..STEPS on the steps axis")
        drv.find_element("id", "ov-logy").click()
        wait_for(drv, "Chart.getChart('chart-overlay').scales.y.type === 'logarithmic'", "the log y axis")
        # the tooltip between two points lists every visible series at full precision
        drv.execute_script("""var ch = Chart.getChart('chart-overlay'), a = ch.chartArea, r = ch.canvas.getBoundingClientRect();
          var x = (ch.scales.x.getPixelForValue(13)), y = (a.top + a.bottom) / 2;
          ch.canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + x, clientY: r.top + y, bubbles: true }));""")
        wait_for(drv, "Chart.getChart('chart-overlay').tooltip.dataPoints && Chart.getChart('chart-overlay').tooltip.dataPoints.length === 2",
                 "a tooltip with both series between points")
        body = js(drv, "Chart.getChart('chart-overlay').tooltip.body.map(b => b.lines.join(' '))")
        # step 13 lies between the val points at 10 and 20: each series lists its point at 10, the nearer one
        want = js(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).map(d => d.label + ': ' + String(d.data.find(p => p.x === 10).y))")
        for w in want:
            check(any(b.startswith(w) for b in body), "tooltip line %r (every digit) in %r" % (w, body))
        check(all(len(w.split(": ")[1]) > 8 for w in want), "values at full precision: %r" % want)
        drv.execute_script("document.getElementById('overlay-section').scrollIntoView()")
        tl.screenshot(drv, "browser-compare.png", readme=True)
    session(run)


def t_smoothing_changes_drawing_not_data():
    """The EMA slider changes the drawn line, not the data: the raw mean equals the API's points, before and after."""
    def run(srv, drv, sid, f):
        wait_for(drv, "Chart.getChart('chart-overlay') && Chart.getChart('chart-overlay').data.datasets.filter(d => d.main).length === 2", "overlay")
        drv.execute_script("var s = document.getElementById('ov-kind'); s.value = 'train'; s.dispatchEvent(new Event('change'));")
        pid = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]').dataset.schedule" % P_S)
        main = "Chart.getChart('chart-overlay').data.datasets.find(d => d.main && d.schedule === '%s')" % pid
        wait_for(drv, main + ".data.length === %d" % tl.STEPS, "prism's train mean over %d steps" % tl.STEPS)
        # the expected mean over seeds, from the server's own points
        jobs = [j for j in srv.ok("GET", "/api/v1/sweeps/%d/jobs" % sid, token=None)["jobs"] if str(j["schedule_id"]) == pid]
        per = {}
        for j in jobs:
            for p in srv.ok("GET", "/api/v1/jobs/%d/metrics?kind=train" % j["id"], token=None)["points"]:
                per.setdefault(p["step"], []).append(p["value"])
        want = [sum(v) / len(v) for _, v in sorted(per.items())]
        before = js(drv, main + ".data.map(p => p.y)")
        px_before = js(drv, "(function () { var ch = Chart.getChart('chart-overlay'); var i = ch.data.datasets.indexOf(%s); return ch.getDatasetMeta(i).data.map(e => e.y); })()" % main)
        for a, b in zip(want, before):
            check(abs(a - b) < 1e-12, "unsmoothed line = the API's seed mean: %r vs %r" % (a, b))
        drv.execute_script("var s = document.getElementById('ov-ema'); s.value = '0.9'; s.dispatchEvent(new Event('input'));")
        wait_for(drv, "document.getElementById('chart-overlay').dataset.ema === '0.9'", "smoothing 0.9 applied")
        after = js(drv, main + ".data.map(p => p.y)")
        raw = js(drv, main + ".data.map(p => p.raw)")
        faint = js(drv, "Chart.getChart('chart-overlay').data.datasets.find(d => d.raw && d.schedule === '%s').data.map(p => p.y)" % pid)
        px_after = js(drv, "(function () { var ch = Chart.getChart('chart-overlay'); var i = ch.data.datasets.indexOf(%s); return ch.getDatasetMeta(i).data.map(e => e.y); })()" % main)
        check_eq(before, raw, "each smoothed point keeps the raw mean")
        check_eq(before, faint, "the faint raw line is the unsmoothed mean")
        diff = sum(1 for a, b in zip(before, after) if abs(a - b) > 1e-9)
        check(diff > tl.STEPS // 2, "smoothing changed the drawn values (%d of %d points differ)" % (diff, len(after)))
        check(sum(1 for a, b in zip(px_before, px_after) if abs(a - b) > 0.5) > 5, "smoothing moved the drawn line's pixels")
        # EMA, debiased, recomputed here
        s, exp = 0.0, []
        for k, v in enumerate(before, 1):
            s = 0.9 * s + 0.1 * v
            exp.append(s / (1 - 0.9 ** k))
        check(all(abs(a - b) < 1e-9 for a, b in zip(exp, after)), "the EMA: %r... vs %r..." % (exp[:3], after[:3]))
        # the held data did not change: back to 0 gives the very same line
        drv.execute_script("var s = document.getElementById('ov-ema'); s.value = '0'; s.dispatchEvent(new Event('input'));")
        wait_for(drv, "document.getElementById('chart-overlay').dataset.ema === '0'", "smoothing off")
        check_eq(before, js(drv, main + ".data.map(p => p.y)"), "smoothing off again: the same values as before")
    session(run)


def t_actions_call_api_and_need_token():
    """Pause, resume, priority, requeue failed and cancel go through the admin API, confirmed, only with the token."""
    srv = tl.Server()
    drv = None
    try:
        out = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-actions", [tl.UNIFORM, tl.PRISM], seeds=[0, 1]))
        sid = out["sweep_id"]
        f = tl.Feeder(srv)
        f.lease_all()
        keys = sorted(f.leases)
        for k in keys[:2]:
            f.complete(k)
        f.fail_job(keys[2], "out of memory")
        f.fail_job(keys[3], "nan loss")
        drv = tl.browser()
        tl.open_page(drv, srv, sid)
        state = lambda: srv.ok("GET", "/api/v1/sweeps/%d" % sid, token=None)
        drv.execute_script("window.__confirms = []; window.confirm = function (m) { window.__confirms.push(m); return true; };"
                           "window.__posts = []; var of = window.fetch; window.fetch = function (u, o) { if (o && o.method === 'POST') "
                           "window.__posts.push([String(u), (o.headers || {}).Authorization || '']); return of.apply(this, arguments); };")
        drv.find_element("css selector", "#actions summary").click()
        wait_for(drv, "document.getElementById('act-pause')", "the pause button")
        # no token: refused here, nothing sent
        drv.find_element("id", "act-pause").click()
        msg = wait_for(drv, "document.getElementById('actions-msg').textContent", "the refusal")
        check("Refused" in msg and "admin token" in msg, "refusal text: %r" % msg)
        check_eq([], js(drv, "window.__posts"), "no request without the token")
        check_eq([], js(drv, "window.__confirms"), "not even a confirmation without the token")
        check_eq("active", state()["state"], "sweep still active")
        # a wrong token: the server's 401 is shown
        drv.find_element("id", "admin-token").send_keys("b" * 32)
        drv.find_element("id", "admin-token-save").click()
        drv.find_element("id", "act-pause").click()
        wait_for(drv, "document.getElementById('actions-msg').dataset.kind === 'error' && /failed/.test(document.getElementById('actions-msg').textContent)", "the 401")
        check("token" in js(drv, "document.getElementById('actions-msg').textContent"), "401 explained")
        check_eq("active", state()["state"], "a refused token changed nothing")
        drv.find_element("id", "admin-token-forget").click()
        drv.find_element("id", "admin-token").send_keys(ADMIN_TOKEN)
        drv.find_element("id", "admin-token-save").click()
        check_eq(ADMIN_TOKEN, js(drv, "sessionStorage.getItem('prism-admin-token')"), "token kept in sessionStorage")
        check_eq(None, js(drv, "localStorage.getItem('prism-admin-token')"), "never in localStorage")
        # declined confirmation: nothing sent
        drv.execute_script("window.confirm = function (m) { window.__confirms.push(m); return false; };")
        n0 = len(js(drv, "window.__posts"))
        drv.find_element("id", "act-pause").click()
        wait_for(drv, "/not confirmed/.test(document.getElementById('actions-msg').textContent)", "'not confirmed'")
        check_eq(n0, len(js(drv, "window.__posts")), "declined: no request")
        drv.execute_script("window.confirm = function (m) { window.__confirms.push(m); return true; };")
        drv.find_element("id", "act-pause").click()
        wait_for(drv, "document.getElementById('act-resume')", "the resume button after pausing")
        check_eq("paused", state()["state"], "paused through the API")
        drv.find_element("id", "act-resume").click()
        wait_for(drv, "document.getElementById('act-pause')", "the pause button after resuming")
        check_eq("active", state()["state"], "resumed through the API")
        drv.execute_script("window.prompt = function () { return '7'; };")
        drv.find_element("id", "act-priority").click()
        wait_for(drv, "/priority: done/.test(document.getElementById('actions-msg').textContent)", "priority set")
        check_eq(7, state()["priority"], "priority through the API")
        wait_for(drv, "/requeue 2 failed/.test(document.getElementById('act-requeue-failed').textContent)", "requeue 2 failed")
        drv.find_element("id", "act-requeue-failed").click()
        wait_for(drv, "/requeue failed: done \\(2 requests\\)/.test(document.getElementById('actions-msg').textContent)", "requeued")
        check_eq(2, state()["counts"]["queued"], "both failed jobs queued again")
        wait_for(drv, "!document.getElementById('act-cancel-all').disabled", "cancel enabled")
        drv.find_element("id", "act-cancel-all").click()
        wait_for(drv, "/cancel: done/.test(document.getElementById('actions-msg').textContent)", "cancelled")
        check_eq(2, state()["counts"]["cancelled"], "the queued jobs cancelled")
        # per job: requeue one cancelled job from the jobs table (its row is redrawn after the cancel's refresh, which
        # can land after the message: wait for the button, as a user would)
        wait_for(drv, "document.querySelector(\"#jobs button[data-job-act='requeue']\")", "a requeue button in the jobs table")
        drv.find_element("css selector", "#jobs button[data-job-act='requeue']").click()
        wait_for(drv, "/requeue job [0-9]+: done/.test(document.getElementById('actions-msg').textContent)", "a job requeued")
        check_eq(1, state()["counts"]["queued"], "one job queued again")
        posts = js(drv, "window.__posts")
        check(all(a == "Bearer " + ADMIN_TOKEN for u, a in posts[-6:]), "the token in the Authorization header: %r" % posts[-6:])
        check(all(ADMIN_TOKEN not in u for u, a in posts), "never in a URL: %r" % posts)
        check(ADMIN_TOKEN not in drv.current_url, "not in the page URL")
        check(len(js(drv, "window.__confirms")) >= 7, "every action asked first: %r" % js(drv, "window.__confirms"))
        tl.screenshot(drv, "browser-actions.png")
        other = [e for e in tl.console_errors(drv) if "status of 401" not in e["message"]]   # the wrong token's answer
        check(not other, "browser console errors: %r" % other)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_screened_panel_requeues_with_the_token():
    """The jobs the outlier screen left out are listed (schedule, seed, val loss, residual, reason); the Requeue
    button asks first, needs the admin token, and queues the job again (the API says so)."""
    import random
    srv = tl.Server()
    try:
        scheds = [tl.UNIFORM, tl.PRISM, tl.WIDE, [3, 3] + [12] * 10, [4, 4] + [12] * 10, [6, 6] + [12] * 10]
        sid = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-screened", scheds, seeds=[0, 1, 2, 3]))["sweep_id"]
        wid = srv.ok("POST", "/api/v1/workers/register", {"name": "web-test", "host": "localhost", "devices": ["cpu"]},
                     tl.WORKER_TOKEN)["worker_id"]
        rng, out_job = random.Random(37), None
        while True:
            code, ls = srv.call("POST", "/api/v1/lease", {"worker_id": wid}, tl.WORKER_TOKEN)
            if code == 204:
                break
            h = list(ls["heads"])
            v = 3.37 - 0.001 * scheds.index(h) + 0.003 * ls["seed"] + rng.gauss(0, 0.002)
            if h == tl.PRISM and ls["seed"] == 1:   # a diverged run: +1.0 nats
                v += 1.0
                out_job = ls["job_id"]
            srv.ok("POST", "/api/v1/jobs/%d/complete" % ls["job_id"], {"lease_token": ls["lease_token"],
                   "result": {"val_loss": v, "tok_per_s": 1000.0}}, tl.WORKER_TOKEN)
        scr = srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid, token=None)["screened"]
        check_eq([out_job], [x["job_id"] for x in scr], "the API screens the diverged job")
        drv = tl.browser()
        try:
            screened_panel(srv, drv, sid, out_job, scr[0])
        finally:
            drv.quit()
    finally:
        srv.stop()


def screened_panel(srv, drv, sid, out_job, x):
    """t_screened_panel_requeues_with_the_token's page: the panel's row is x (the API's), and its button requeues."""
    tl.open_page(drv, srv, sid)
    wait_for(drv, "document.querySelectorAll('#screened tbody tr').length === 1", "the screened panel's one row")
    cells = js(drv, "Array.from(document.querySelectorAll('#screened tbody tr td')).map(function (c) { return c.textContent; })")
    check_eq(str(out_job), cells[0], "the job")
    tl.page_modules(drv, "util.js")
    check_eq(js(drv, "__m.util.rle(%s)" % json.dumps(tl.PRISM)), cells[1], "its schedule")
    check_eq("1", cells[2], "its seed")
    check_eq(tl.f4(x["val_loss"]), cells[3], "its val loss")
    check(cells[4].startswith("+%.2f" % x["residual"]), "its residual: %r vs %r" % (cells[4], x["residual"]))
    check_eq(x["reason"], cells[5], "its reason")
    check_eq("Requeue", cells[6], "the Requeue button")
    js(drv, "document.getElementById('screened-panel').scrollIntoView()")
    tl.screenshot(drv, "browser-screened.png")
    drv.execute_script("window.__confirms = []; window.confirm = function (m) { window.__confirms.push(m); return true; };")
    job_state = lambda: srv.ok("GET", "/api/v1/jobs/%d" % out_job, token=None)["state"]
    drv.find_element("id", "requeue-screened-%d" % out_job).click()   # no token yet: refused here
    msg = wait_for(drv, "document.getElementById('actions-msg').textContent", "the refusal")
    check("Refused" in msg and "admin token" in msg, "refusal text: %r" % msg)
    check_eq("done", job_state(), "nothing sent without the token")
    drv.find_element("css selector", "#actions summary").click()
    wait_for(drv, "document.getElementById('admin-token')", "the token field")
    drv.find_element("id", "admin-token").send_keys(ADMIN_TOKEN)
    drv.find_element("id", "admin-token-save").click()
    wait_for(drv, "document.getElementById('requeue-screened-%d')" % out_job, "the Requeue button again")
    drv.find_element("id", "requeue-screened-%d" % out_job).click()
    wait_for(drv, "/requeue screened job %d: done/.test(document.getElementById('actions-msg').textContent)" % out_job, "requeued")
    check_eq("queued", job_state(), "the screened job is queued again (API)")
    check(any("Requeue screened job %d" % out_job in m for m in js(drv, "window.__confirms")), "asked first")
    wait_for(drv, "document.getElementById('screened-panel').hidden", "the panel gone: nothing screened while it runs again")
    tl.assert_no_console_errors(drv)


def open_at_420(drv, srv, sid):
    """The page at a 420 px viewport with the prism schedule's detail view open and drawn."""
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    pid = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]').dataset.schedule" % P_S)
    tl.open_page(drv, srv, sid, "&schedule=%s" % pid)
    wait_for(drv, "Chart.getChart('chart-val') && Chart.getChart('chart-val').data.datasets.length > 0", "the detail charts")
    wait_for(drv, "window.innerWidth === 420", "a 420 px viewport")


def t_narrow_420_no_horizontal_scroll():
    """At 420 px the page does not scroll sideways; the wide table scrolls inside its box; charts fit."""
    def run(srv, drv, sid, f):
        open_at_420(drv, srv, sid)
        w = js(drv, "[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
        check(w[0] <= 420 and w[1] <= 420, "page width at 420 px: %r" % w)
        wide = js(drv, """Array.from(document.querySelectorAll('main *')).filter(e => e.offsetParent !== null &&
               e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap, #sweeps, .svg-box')).map(e => e.tagName + '#' + e.id + '.' + e.className).slice(0, 8)""")
        check_eq([], wide, "elements reaching past the right edge outside a scrolling box")
        wrap = js(drv, "(function (w) { var r = w.getBoundingClientRect(); return [r.left, r.right, w.scrollWidth, w.clientWidth]; })(document.getElementById('leaderboard-wrap'))")
        check(wrap[1] <= 420, "the leaderboard's box fits; a wider table scrolls inside it: %r" % wrap)
        charts = js(drv, "['chart-val', 'chart-overlay'].map(id => document.getElementById(id).getBoundingClientRect().right)")
        check(all(c <= 420 for c in charts), "charts fit: %r" % charts)
        drv.execute_script("document.getElementById('leaderboard-wrap').scrollLeft = 10000")
        delta_right = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"] td.delta').getBoundingClientRect().right" % P_S)
        check(delta_right <= 420, "the Δ column reachable by scrolling the table: right edge %r" % delta_right)
        drv.execute_script("document.getElementById('leaderboard-wrap').scrollLeft = 0; window.scrollTo(0, 0)")
        tl.screenshot(drv, "browser-420px.png", readme=True)
    session(run)


TEXT_PX_JS = """(function () {
  // every SVG text of the views as drawn: its computed font size times the SVG's scale on screen
  var svg = Array.from(document.querySelectorAll('#all-section svg text')).filter(function (t) { return t.getClientRects().length; })
    .map(function (t) { var m = t.getScreenCTM(); return [t.textContent.slice(0, 24), parseFloat(getComputedStyle(t).fontSize) * (m ? m.a : 0)]; });
  // every Chart.js chart's text, as the chart resolves its options (Chart.js draws it at that CSS size)
  var charts = Object.values(Chart.instances).map(function (ch) {
    var f = function (o) { return Chart.helpers.toFont(o).size; }, out = [];
    Object.values(ch.scales).forEach(function (sc) { out.push([ch.canvas.id + ' ' + sc.id + ' ticks', f(sc.options.ticks.font)]);
      if (sc.options.title && sc.options.title.display) out.push([ch.canvas.id + ' ' + sc.id + ' title', f(sc.options.title.font)]); });
    if (ch.legend && ch.legend.options.display) out.push([ch.canvas.id + ' legend', f(ch.legend.options.labels.font)]);
    if (ch.tooltip) out.push([ch.canvas.id + ' tooltip', f(ch.tooltip.options.bodyFont)]);
    return out; });
  return { svg: svg, charts: [].concat.apply([], charts) };
})()"""


def t_narrow_420_delta_and_text_sizes():
    """At 420 px every row's Δ cell lies inside the viewport with the table and page unscrolled, and every chart
    text — the SVG views' labels and ticks as rendered, each Chart.js chart's ticks, titles, legend and tooltip — is
    at least 11 px (issue #41: the Δ column was off-screen and the forest/heatmap text ~6 px)."""
    def run(srv, drv, sid, f):
        open_at_420(drv, srv, sid)
        wait_for(drv, "!!Chart.getChart('chart-overlay')", "the compare chart")
        wait_for(drv, "document.querySelectorAll('#forest .forest-row').length === 2", "the forest plot")
        drv.execute_script("document.getElementById('leaderboard-wrap').scrollLeft = 0; window.scrollTo(0, 0)")
        cells = js(drv, """Array.from(document.querySelectorAll('#leaderboard tbody td.delta')).map(function (c) {
               var r = c.getBoundingClientRect(); return [c.parentNode.dataset.heads, r.left, r.right, r.width]; })""")
        print("Δ cells at 420 px (heads, left, right, width):", cells)
        px = js(drv, TEXT_PX_JS)
        svg_small = [x for x in px["svg"] if x[1] < 11 - 1e-6]
        print("SVG texts: %d, smallest %.2f px; chart texts: %d, smallest %r" % (len(px["svg"]), min(x[1] for x in px["svg"]),
              len(px["charts"]), min(x[1] for x in px["charts"])))
        check_eq(3, len(cells), "a Δ cell per row")
        for h, left, right, width in cells:
            check(width > 0 and left >= 0 and right <= 420, "the Δ cell of %s inside the 420 px viewport unscrolled: %.1f..%.1f" % (h, left, right))
        w = js(drv, "[document.documentElement.scrollWidth, window.innerWidth]")
        check(w[0] <= 420, "no horizontal page scroll at 420 px: %r" % w)
        check(len(px["svg"]) > 10, "the SVG views have text: %r" % px["svg"][:5])
        check_eq([], svg_small[:8], "SVG text below 11 px at 420 px")
        check(len(px["charts"]) >= 8, "the charts' texts found: %r" % px["charts"])
        check_eq([], [x for x in px["charts"] if not x[1] or x[1] < 11][:8], "Chart.js text below 11 px")
        tl.screenshot(drv, "browser-420px-delta.png")
    session(run)


def t_marks_and_intervals_say_what_they_mean():
    """Every place that states significance says the same one sentence (the test, the comparison against uniform
    alone, p < 0.05, Holm over the API's comparisons), every place that states the best group the same other one (the
    studentized range over the API's family, 95%), the intervals theirs; the compare chart's bands are labelled as
    each schedule's own seed spread and beside them stand the paired Δ intervals the ranking decides by (the API's)."""
    import re

    def one_sentence(t, what):
        check(t.endswith(".") and not re.search(r"[.;:!?]\s+[A-Z]", t[:-1].replace("e.g. ", "")), "%s is one sentence: %r" % (what, t))

    def run(srv, drv, sid, f):
        lb = srv.ok("GET", "/api/v1/sweeps/%d/leaderboard" % sid, token=None)
        a = lb["analysis"]
        wait_for(drv, "document.querySelector('#stats-header .st-sig') && document.querySelectorAll('#forest .forest-row').length === 2", "the header and forest")
        sig = js(drv, "document.querySelector('#stats-header .st-sig').textContent")
        best = js(drv, "document.querySelector('#stats-header .st-best').textContent")
        ci = js(drv, "document.querySelector('#stats-header .st-ci').textContent")
        print("SIG:", sig, "\nBEST:", best, "\nCI:", ci)
        for t, what in ((sig, "significance"), (best, "best group"), (ci, "interval")):
            one_sentence(t, what)
        test = "moderated t-test" if "moderated" in a.get("comparison", "") else "paired t-test" if a["method"] == "paired" else "pooled t-test"
        check(test in sig and "uniform alone" in sig and "p < 0.05" in sig and "Holm-adjusted over the %d comparisons against uniform" % lb["comparisons"] in sig,
              "the significance sentence names the test (%s), the comparison, the level and the correction: %r" % (test, sig))
        k = lb["tied_best_comparisons"] + 1
        check("every pair of the %d schedules" % k in best and "studentized range" in best and "95%" in best and "not shown worse" in best,
              "the best-group sentence names its test, family (%d), level and meaning: %r" % (k, best))
        check("95%" in ci and "paired by seed" in ci and ("blocked model" in ci or a["method"] == "paired"), "the interval sentence: %r" % ci)
        places = js(drv, """(function () {
          var t = function (sel) { return Array.from(document.querySelectorAll(sel)).map(function (e) { return e.getAttribute('title') || e.textContent; }); };
          return { marks: t('#leaderboard td.delta .sig'), ph: t('#leaderboard td.delta .ph'), rank_head: t('#leaderboard th[data-key=rank]'),
                   delta_head: t('#leaderboard th[data-key=delta]'), tied: t('#leaderboard td.rank[title]'),
                   ntied: document.querySelectorAll('#leaderboard td.rank .tied').length,
                   forest: t('#forest-legend span'), paired_head: t('#overlay-paired th[title]'), val_head: t('#leaderboard th[data-key=val]') }; })()""")
        print("places:", json.dumps(places, ensure_ascii=False)[:1500])
        check(places["marks"], "a ▲/▼ mark on the page (the prism schedule)")
        check_eq([sig] * len(places["marks"]), places["marks"], "every ▲/▼ mark's tooltip is the significance sentence")
        check(places["ph"] and all(x.endswith(" " + sig) for x in places["ph"]), "every p_Holm tooltip ends with it: %r" % places["ph"])
        check_eq([best], places["rank_head"], "the # column's header says what = means")
        check(places["ntied"] >= 1, "a best-group mark")
        check_eq([best] * places["ntied"], places["tied"], "every = mark's tooltip is the best-group sentence")
        check_eq([ci + " " + sig], places["delta_head"], "the Δ column's header: the interval and the significance sentences")
        check_eq([ci, sig, best], places["forest"], "the forest plot's legend: the same three sentences")
        check_eq([ci, sig], places["paired_head"], "the compare chart's paired intervals: the same sentences")
        check(places["val_head"] and "not the comparison" in places["val_head"][0], "val ± std labelled as the seeds' spread: %r" % places["val_head"])
        nsig = sum(1 for r in lb["rows"] if not r["is_baseline"] and r["delta"] and r["delta"].get("significant"))
        check_eq(nsig, js(drv, "document.querySelectorAll('#forest .forest-row .sig').length"), "the forest marks ▲/▼ as the table does")
        # the compare chart: bands named for what they are, the paired Δ intervals of the ticked schedules = the API's
        wait_for(drv, "document.querySelectorAll('#overlay-paired tr[data-heads]').length === 1", "the paired interval of the ticked schedule")
        bands = js(drv, "Chart.getChart('chart-overlay').data.datasets.filter(d => d.band).map(d => d.label)")
        check(bands and all("sd of its seeds" in b for b in bands), "band labels: %r" % bands)
        note = js(drv, "document.getElementById('overlay-band-note').textContent")
        check("own" in note and "overlap" in note and "paired" in note, "the band note: %r" % note)
        api = board(srv, sid)
        drv.find_element("css selector", "#leaderboard tr[data-heads='%s'] input.pick" % W_S).click()
        wait_for(drv, "document.querySelectorAll('#overlay-paired tr[data-heads]').length === 2", "two paired intervals")
        got = js(drv, "Array.from(document.querySelectorAll('#overlay-paired tr[data-heads]')).map(t => [t.dataset.heads, +t.dataset.mean, +t.dataset.lo, +t.dataset.hi])")
        for h, m, lo, hi in got:
            d = api[h]["delta"]
            check_eq([d["mean"], d["ci_low"], d["ci_high"]], [m, lo, hi], "the paired Δ and 95%% CI of %s beside the curves" % h)
        check_eq(sorted([P_S, W_S]), sorted(x[0] for x in got), "one paired interval per ticked non-baseline schedule")
    session(run)


def t_truthful_text():
    """A done job shows no old error; the ETA says 'ended: N failed' / 'no progress' truthfully; one legend."""
    srv = tl.Server()
    drv = None
    try:
        # sweep A: uniform fails (retryable), is leased again and completes; prism fails for good
        a = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-truth", [tl.UNIFORM, tl.PRISM], seeds=[0]))["sweep_id"]
        f = tl.Feeder(srv)
        f.lease_all()
        ku, kp = (tuple(tl.UNIFORM), 0), (tuple(tl.PRISM), 0)
        ls = f.leases[ku]
        srv.ok("POST", "/api/v1/jobs/%d/fail" % ls["job_id"], {"lease_token": ls["lease_token"], "error": "CUDA error: device lost",
                                                              "retryable": True}, tl.WORKER_TOKEN)
        first = dict(f.leases)
        f.leases = {}
        f.lease_all()
        check_eq([ku], list(f.leases), "the retried job leased again")
        f.complete(ku)
        f.leases[kp] = first[kp]
        f.fail_job(kp, "nan loss")
        # sweep B: every job failed; sweep C: nothing leased
        b = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-all-failed", [tl.UNIFORM, tl.WIDE], seeds=[0]))["sweep_id"]
        g = tl.Feeder(srv)
        g.lease_all()
        check_eq(2, len(g.leases), "sweep B's jobs leased")
        for k in list(g.leases):
            g.fail_job(k, "no data")
        c = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-idle", [tl.UNIFORM], seeds=[0]))["sweep_id"]
        drv = tl.browser()
        tl.open_page(drv, srv, a)
        wait_for(drv, "document.querySelector('#jobs tbody tr[data-state=done]')", "the done job")
        done_err = js(drv, "document.querySelector('#jobs tbody tr[data-state=done] td.err').textContent")
        check("CUDA error" not in done_err, "a done job shows no old error in its row: %r" % done_err)
        check(js(drv, "document.querySelector('#jobs tbody tr[data-state=done] td.err a.earlier') !== null"),
              "the earlier attempt's error is one click away (the job's detail)")
        failed_err = js(drv, "document.querySelector('#jobs tbody tr[data-state=failed] td.err').textContent")
        check_eq("nan loss", failed_err, "a failed job shows its own error")
        # one legend: the hint under the table no longer restates the markers
        hint = js(drv, "document.querySelector('#sweep-section .hint').textContent")
        check("excludes zero" not in hint and "▼" not in hint, "the hint restates no marker legend: %r" % hint)
        etas = js(drv, "Object.fromEntries(Array.from(document.querySelectorAll('#sweeps tr[data-sweep]')).map(t => [t.dataset.sweep, t.querySelector('td.eta').textContent]))")
        check_eq({str(a): "ended: 1 failed", str(b): "ended: 2 failed", str(c): "no progress"}, etas, "ETA cells")
        tl.screenshot(drv, "browser-truthful.png")
        tl.assert_no_console_errors(drv)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_preempted_job_shows_its_preemptions():
    """A job preempted twice (the worker's /fail with "preempted": true) is queued again and its row says +2 preempted
    beside its attempt; a job never preempted says nothing more."""
    srv = tl.Server()
    drv = None
    try:
        sid = srv.ok("POST", "/api/v1/sweeps", tl.spec("web-preempt", [tl.UNIFORM, tl.PRISM], seeds=[0]))["sweep_id"]
        f = tl.Feeder(srv)
        ku = (tuple(tl.UNIFORM), 0)
        for _ in range(2):
            f.leases = {}
            f.lease_all()
            ls = f.leases[ku]
            srv.ok("POST", "/api/v1/jobs/%d/fail" % ls["job_id"], {"lease_token": ls["lease_token"], "retryable": True,
                   "preempted": True, "error": "preempted: spot instance reclaimed"}, tl.WORKER_TOKEN)
        job = srv.ok("GET", "/api/v1/jobs/%d" % ls["job_id"])
        check_eq((2, "queued"), (job["preemptions"], job["state"]), "the job's preemptions and state (API)")
        drv = tl.browser()
        tl.open_page(drv, srv, sid)
        wait_for(drv, "document.querySelector('#jobs tbody tr[data-job=\"%d\"] td.attempt')" % ls["job_id"], "the job's row")
        cells = js(drv, "Array.from(document.querySelectorAll('#jobs tbody tr')).map(t => [t.dataset.job, "
                        "t.querySelector('td.attempt').textContent])")
        got = dict(cells)
        check("+2 preempted" in got[str(ls["job_id"])], "the preempted job's attempt cell: %r" % got[str(ls["job_id"])])
        others = [v for k, v in got.items() if k != str(ls["job_id"])]
        check(others and all("preempted" not in v for v in others), "the other jobs' attempt cells: %r" % others)
    finally:
        if drv:
            drv.quit()
        srv.stop()


def t_spec_and_cost():
    """The sweep's spec and its cost so far: tokens trained as the server counts them, device-hours from wall_s."""
    def run(srv, drv, sid, f):
        d = srv.ok("GET", "/api/v1/sweeps/%d" % sid, token=None)
        # 8 jobs done (STEPS each), one at step STEPS//2 - 1 (its train points reach step STEPS//2)
        done = 8 * tl.STEPS * tl.TOK_PER_STEP
        check_eq(done + (tl.STEPS // 2) * tl.TOK_PER_STEP, d["cost"]["tokens_trained"], "server's tokens trained")
        check(abs(d["cost"]["device_hours"] - 8 * 12.5 / 3600) < 1e-9, "device-hours from 8 x wall_s 12.5: %r" % d["cost"])
        drv.find_element("css selector", "#spec-box summary").click()
        wait_for(drv, "document.getElementById('cost-tokens')", "the cost line")
        check_eq("{:,}".format(d["cost"]["tokens_trained"]), js(drv, "document.getElementById('cost-tokens').textContent"), "tokens trained shown")
        check_eq("%.3f" % d["cost"]["device_hours"], js(drv, "document.getElementById('cost-hours').textContent"), "device-hours shown")
        check_eq("{:,}".format(tl.STEPS * tl.TOK_PER_STEP), js(drv, "document.getElementById('spec-job-tokens').textContent"), "tokens per job")
        text = js(drv, "document.getElementById('spec').textContent")
        for want in ("12 layers", "d_model 768", "data/none_*.bin", "3 schedules × 3 seeds"):
            check(want in text, "spec shows %r: %r" % (want, text))
    session(run)


def t_extra_metric_selector_plots_the_trainer_metrics():
    """A trainer's own metrics (a point's "extra") get a selector of the names present in the detail view; the chosen
    one's curve is the API's points: x the tokens, y the extra's value."""
    def run(srv, drv, sid, f):
        ls = f.leases[(tuple(WIDE), 2)]   # the job left running: its later points carry extras
        tok = {"lease_token": ls["lease_token"]}
        first = tl.STEPS // 2 + 1
        pts = [{"step": s, "train_loss": 3.5 - 0.01 * s, "extra": {"lr_scale": 1.0 - s / 100.0, "tokens_per_s": 1000.0 + s}}
               for s in range(first, first + 4)]
        pts.append({"step": first + 1, "val_loss": 3.4, "extra": {"ppl": 29.96}})
        srv.ok("POST", "/api/v1/jobs/%d/metrics" % ls["job_id"], dict(tok, points=pts), tl.WORKER_TOKEN)
        api = {k: srv.ok("GET", "/api/v1/jobs/%d/metrics?kind=%s" % (ls["job_id"], k), token=None)["points"] for k in ("train", "val")}
        want = {k: [{"x": p["tokens"], "y": p["extra"][n]} for p in api[k] if "extra" in p and n in p["extra"]]
                for k, n in (("train", "lr_scale"), ("val", "ppl"))}
        print("API extras: %r" % want)
        check_eq(4, len(want["train"]), "train points with lr_scale in the API")
        wid = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]').dataset.schedule" % W_S)
        tl.open_page(drv, srv, sid, "&schedule=%s" % wid)
        wait_for(drv, "Chart.getChart('chart-extra') && !document.getElementById('extra-figure').hidden", "the extra metric chart")
        opts = js(drv, "Array.from(document.querySelectorAll('#extra-pick option')).map(o => [o.value, o.textContent])")
        check_eq([["train:lr_scale", "lr_scale (train)"], ["train:tokens_per_s", "tokens_per_s (train)"], ["val:ppl", "ppl (val)"]],
                 opts, "the selector lists the names present")
        got = js(drv, "Chart.getChart('chart-extra').data.datasets.map(d => ({label: d.label, faint: !!d.faint, data: d.data}))")
        print("page datasets: %r" % got)
        seeds = [d for d in got if d["faint"]]
        check_eq(1, len(seeds), "one seed has the metric")
        check_eq(want["train"], seeds[0]["data"], "the lr_scale curve drawn = the API's points")
        drv.execute_script("var s = document.getElementById('extra-pick'); s.value = 'val:ppl'; s.dispatchEvent(new Event('change'));")
        wait_for(drv, "Chart.getChart('chart-extra').$metric === 'val:ppl'", "the chart switched to ppl")
        got = js(drv, "Chart.getChart('chart-extra').data.datasets.filter(d => d.faint).map(d => d.data)")
        check_eq([want["val"]], got, "the ppl curve drawn = the API's points")
        check_eq("ppl (val)", js(drv, "Chart.getChart('chart-extra').options.scales.y.title.text"), "the y axis names the metric")
        # a schedule whose points carry no extras shows no selector
        pid = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]').dataset.schedule" % P_S)
        tl.open_page(drv, srv, sid, "&schedule=%s" % pid)
        wait_for(drv, "Chart.getChart('chart-val') && Chart.getChart('chart-val').data.datasets.length > 0", "the prism detail charts")
        check(js(drv, "document.getElementById('extra-figure').hidden"), "no extra chart for a schedule without extras")
    session(run)


def t_numpy_trainer_extras_on_the_page():
    """A third-party-style numpy trainer (tests/integration/numpy_trainer.py) trained a sweep through a real
    prism-worker: the page's extra-metric chart draws its lr_scale, and then its val ppl, exactly as the API serves them."""
    import subprocess
    srv = tl.Server()
    drv = wk = None
    try:
        sp = tl.spec("web-numpy", [tl.UNIFORM, tl.PRISM], seeds=[0])
        sp["trainer"] = "numpy"
        sid = srv.ok("POST", "/api/v1/sweeps", sp)["sweep_id"]
        tokf = os.path.join(srv.dir, "worker-token")
        with open(tokf, "w") as fh:
            fh.write(tl.WORKER_TOKEN + "\n")
        os.chmod(tokf, 0o600)
        trainer = "numpy=/usr/bin/python3 " + os.path.join(tl.ROOT, "tests", "integration", "numpy_trainer.py")
        log = open(os.path.join(srv.dir, "worker.log"), "w")
        wk = subprocess.Popen([os.path.join(tl.BUILD, "prism-worker"), "--server", srv.base, "--token-file", tokf,
                               "--devices", "cpu", "--name", "numpy", "--work-dir", os.path.join(srv.dir, "work"),
                               "--data-root", srv.dir, "--poll", "0.2", "--heartbeat", "0.5", "--flush", "0.3",
                               "--progress", "log", "--idle-exit", "1", "--trainer", trainer], stdout=log, stderr=subprocess.STDOUT)
        rc = wk.wait(90)
        jobs = srv.ok("GET", "/api/v1/sweeps/%d/jobs" % sid, token=None)["jobs"]
        if rc != 0 or any(j["state"] != "done" for j in jobs):
            fail("the numpy trainer's sweep: worker exit %r, jobs %r\n%s" % (rc, [(j["id"], j["state"], j["last_error"]) for j in jobs],
                                                                          open(log.name).read()[-3000:]))
        mine = [j for j in jobs if j["heads"] == tl.PRISM][0]
        api = {k: srv.ok("GET", "/api/v1/jobs/%d/metrics?kind=%s" % (mine["id"], k), token=None)["points"] for k in ("train", "val")}
        want = {"train:lr_scale": [{"x": p["tokens"], "y": p["extra"]["lr_scale"]} for p in api["train"]],
                "val:ppl": [{"x": p["tokens"], "y": p["extra"]["ppl"]} for p in api["val"]]}
        check_eq(tl.STEPS, len(want["train:lr_scale"]), "train points with lr_scale")
        drv = tl.browser()
        tl.open_page(drv, srv, sid)
        wait_for(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]')" % P_S, "the prism row")
        pid = js(drv, "document.querySelector('#leaderboard tr[data-heads=\"%s\"]').dataset.schedule" % P_S)
        tl.open_page(drv, srv, sid, "&schedule=%s" % pid)
        wait_for(drv, "Chart.getChart('chart-extra') && !document.getElementById('extra-figure').hidden", "the extra metric chart")
        check_eq(["train:lr_scale", "train:tokens_per_s", "val:ppl"],
                 js(drv, "Array.from(document.querySelectorAll('#extra-pick option')).map(o => o.value)"), "the names the trainer logged")
        for metric in ("train:lr_scale", "val:ppl"):
            drv.execute_script("var s = document.getElementById('extra-pick'); s.value = '%s'; s.dispatchEvent(new Event('change'));" % metric)
            wait_for(drv, "Chart.getChart('chart-extra').$metric === '%s'" % metric, "the chart showing " + metric)
            got = js(drv, "Chart.getChart('chart-extra').data.datasets.filter(d => d.faint && d.label.indexOf('this schedule') === 0).map(d => d.data)")
            print("%s: page %d points, API %d" % (metric, len(got[0]) if got else 0, len(want[metric])))
            check_eq(4, len(js(drv, "Chart.getChart('chart-extra').data.datasets")), "this schedule's and the baseline's seed and mean")
            check_eq([want[metric]], got, "the %s curve on the page = the API's points" % metric)
        tl.assert_no_console_errors(drv)
    finally:
        tl.stop_search_case(wk, drv, srv)   # the worker, the browser and the server, whichever started


CASES = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("t_") and callable(fn)}

if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        sys.exit(0)
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: %s --list | CASE (one of: %s)" % (sys.argv[0], ", ".join(CASES)), file=sys.stderr)
        sys.exit(2)
    CASES[sys.argv[1]]()
    print("ok")
