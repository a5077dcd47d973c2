#!/usr/bin/python3
"""tools/leaderboard_screenshots.py — docs/WEB.md's leaderboard screenshots, made again from a real sweep.

    tools/leaderboard_screenshots.py [--build build] [--fixture tests/fixtures/realsweep] [--out docs/img]

Replays the real sweep of tests/fixtures/realsweep (tools/realsweep_replay.py --keep-db: the results and val points
as that sweep's worker reported them, nothing trained), serves the database with BUILD/prism-sweep serve on a free
loopback port with this checkout's web/, and photographs the leaderboard card (#sweep-section, whole) in Debian's
headless Chromium at 1400 px and 420 px wide, each in the light and the dark scheme (prefers-color-scheme emulated,
as a reader's system would set it): OUT/leaderboard-{1400,420}-{light,dark}.png. Each PNG is then shrunk losslessly
with optipng (tools/deps.sh installs it) and its size printed; over 300 KB is reported.

Needs: a build (make all), python3-selenium, chromium, chromium-driver, optipng. Exit 0 done, 1 a failure (named).
"""
import argparse
import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
WIDTHS = ((1400, 1000), (420, 900))
THEMES = ("light", "dark")
LIMIT = 300 * 1024


def die(msg):
    print("leaderboard_screenshots: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(cli, db, log):
    """prism-sweep serve on db with this checkout's web/, once /healthz answers: (process, base URL)."""
    port = free_port()
    proc = subprocess.Popen([cli, "serve", "--db", db, "--listen", "127.0.0.1:%d" % port, "--web", os.path.join(ROOT, "web")],
                            stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d" % port
    for _ in range(100):
        if proc.poll() is not None:
            die("prism-sweep serve exited with status %d (its log: %s)" % (proc.returncode, log.name))
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read()
            return proc, base
        except OSError:
            time.sleep(0.1)
    proc.kill()
    die("prism-sweep serve did not answer /healthz within 10 s")


def browser(tmp):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        die("python3-selenium missing: run `make deps`")
    o = Options()
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--force-color-profile=srgb",
              "--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=tmp)):
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(options=o, service=Service("/usr/bin/chromedriver"))


def wait_for(drv, expr, what, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if drv.execute_script("try { return !!(" + expr + "); } catch (e) { return false; }"):
            return
        time.sleep(0.1)
    die("the page did not show %s within %.0f s" % (what, timeout))


def shoot(drv, base, sweep_id, width, height, theme, path):
    """The leaderboard card at WIDTH px in THEME, whole (beyond the viewport), as a PNG at path."""
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": theme}]})
    drv.get("%s/#sweep=%s" % (base, sweep_id))
    drv.execute_script("localStorage.removeItem('prism-theme')")   # follow the emulated system scheme
    drv.refresh()
    wait_for(drv, "document.getElementById('conn').dataset.state === 'live' && document.querySelectorAll('#leaderboard tbody tr').length > 1 "
                  "&& document.getElementById('stats-header')", "the ranked leaderboard")
    wait_for(drv, "getComputedStyle(document.body).backgroundColor === (%r === 'dark' ? 'rgb(15, 18, 23)' : 'rgb(246, 247, 249)')" % theme,
             "the %s scheme" % theme)
    time.sleep(0.5)   # a poll's re-render settles
    r = drv.execute_script("var b = document.getElementById('sweep-section').getBoundingClientRect();"
                           "return [b.left + window.scrollX, b.top + window.scrollY, b.width, b.height];")
    pad = 8
    clip = {"x": max(0, r[0] - pad), "y": max(0, r[1] - pad), "width": r[2] + 2 * pad, "height": r[3] + 2 * pad, "scale": 1}
    shot = drv.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--fixture", default=os.path.join(ROOT, "tests", "fixtures", "realsweep"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "img"))
    a = ap.parse_args()
    cli = os.path.join(os.path.abspath(a.build), "prism-sweep")
    if not os.access(cli, os.X_OK):
        die("%s: not an executable (build first: make all)" % cli)
    optipng = shutil.which("optipng")
    if not optipng:
        die("optipng missing: run `make deps` (Debian optipng)")
    tmp = tempfile.mkdtemp(prefix="lb-shots-")
    proc = drv = None
    try:
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "realsweep_replay.py"), a.fixture, a.build, tmp, "--keep-db", "--quiet"],
                       check=True)
        log = open(os.path.join(tmp, "server.log"), "w")
        proc, base = serve(cli, os.path.join(tmp, "prism.db"), log)
        sweeps = __import__("json").loads(urllib.request.urlopen(base + "/api/v1/sweeps", timeout=5).read())["sweeps"]
        if len(sweeps) != 1:
            die("expected the replay's one sweep, the server has %d" % len(sweeps))
        drv = browser(tmp)
        os.makedirs(a.out, exist_ok=True)
        over = []
        for width, height in WIDTHS:
            for theme in THEMES:
                path = os.path.join(a.out, "leaderboard-%d-%s.png" % (width, theme))
                shoot(drv, base, sweeps[0]["id"], width, height, theme, path)
                before = os.path.getsize(path)
                subprocess.run([optipng, "-quiet", "-o2", "-strip", "all", path], check=True)
                size = os.path.getsize(path)
                print("%s: %d bytes (%d before optipng)" % (os.path.relpath(path, ROOT), size, before))
                if size > LIMIT:
                    over.append(path)
        if over:
            print("leaderboard_screenshots: over 300 KB: " + ", ".join(over), file=sys.stderr)
    except subprocess.CalledProcessError as e:
        die("%s failed with status %d" % (" ".join(e.cmd[:2]), e.returncode))
    finally:
        if drv:
            drv.quit()
        if proc:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
