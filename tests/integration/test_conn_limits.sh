#!/usr/bin/env bash
# test_conn_limits.sh — connections that never send a request cannot starve the server: they are cut after
# --anon-timeout, one client address holds at most --max-conns-per-addr of them (a new one replaces its oldest), and at --max-conns a new
# connection takes the place of the oldest one that has shown no token, so workers (token in their
# requests) always get in. Attackers and workers use distinct loopback addresses (127.0.0.2, ...), as
# distinct hosts would.
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# More silent sockets than --max-conns, from three addresses: /healthz and a worker still get 200 at once;
# every silent socket is closed within a few seconds; a worker's keep-alive connection, idle as long, stays.
t_idle_sockets_do_not_starve_workers() {
  s_setup
  s_server --max-conns 40
  local out; out=$(timeout 30 /usr/bin/python3 -u -c '
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
def conn(src):
    s = socket.socket(); s.bind((src, 0)); s.connect(("127.0.0.1", port)); return s
def ask(s, req):
    s.sendall(req); d = b""
    while b"\r\n\r\n" not in d or not d.rstrip().endswith(b"}"):
        k = s.recv(65536)
        if not k: break
        d += k
    return d.decode(errors="replace").split("\r\n")[0]
silent = [conn("127.0.0.%d" % (2 + i % 3)) for i in range(60)]
t0 = time.time()
time.sleep(0.3)
w = conn("127.0.0.9")
body = b"{\"name\": \"w1\"}"
reg = b"POST /api/v1/workers/register HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (tok.encode(), len(body), body)
print("worker:", ask(w, reg))
h = conn("127.0.0.10")
print("healthz:", ask(h, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
h.close()
for s in silent: s.settimeout(max(0.1, t0 + 8 - time.time()))
closed = 0
for s in silent:
    try:
        while True:
            d = s.recv(4096)
            if not d: closed += 1; break
    except socket.timeout: pass
    except OSError: closed += 1
print("silent closed within 8 s: %d of %d" % (closed, len(silent)))
time.sleep(max(0, t0 + 8 - time.time()))
print("worker after idle:", ask(w, reg))' "$PORT" "$WT")
  echo "$out"
  assert_contains "$out" "worker: HTTP/1.1 200"
  assert_contains "$out" "healthz: HTTP/1.1 200"
  assert_contains "$out" "silent closed within 8 s: 60 of 60"
  assert_contains "$out" "worker after idle: HTTP/1.1 200"
}

# One address holds at most --max-conns-per-addr connections without a token: at the cap a new one is
# admitted and the address's oldest silent one is closed, so a worker with a token and /healthz from the same
# address (a NAT, a tunnel, a TLS proxy) still get in while one client holds idle sockets; connections that
# sent a token do not count and are never closed for it; another address is not affected.
t_per_address_cap() {
  s_setup
  s_server --max-conns-per-addr 8
  local out; out=$(timeout 30 /usr/bin/python3 -u -c '
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
def conn(src):
    s = socket.socket(); s.bind((src, 0)); s.connect(("127.0.0.1", port)); return s
def ask(s, req):
    s.sendall(req); d = b""
    while b"\r\n\r\n" not in d or not d.rstrip().endswith(b"}"):
        k = s.recv(65536)
        if not k: break
        d += k
    return d.decode(errors="replace")
def is_closed(s):
    s.settimeout(2)
    try: return s.recv(4096) == b""
    except socket.timeout: return False
    except OSError: return True
get = b"GET /api/v1/sweeps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % tok.encode()
workers, ok = [], 0
for i in range(12):
    workers.append(conn("127.0.0.3"))
    ok += ask(workers[-1], get).startswith("HTTP/1.1 200")
print("workers ok:", ok)
silent = [conn("127.0.0.3") for i in range(8)]
time.sleep(0.3)
w = conn("127.0.0.3")
print("tokened ninth:", ask(w, get).split("\r\n")[0])
h = conn("127.0.0.3")
print("healthz tenth:", ask(h, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").split("\r\n")[0])
print("oldest closed:", is_closed(silent[0]))
silent[1].settimeout(0.5)
try: d = silent[1].recv(1); print("second open:", d != b"")
except socket.timeout: print("second open: True")
other = conn("127.0.0.4")
print("other address:", ask(other, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").split("\r\n")[0])
print("workers still ok:", sum(ask(x, get).startswith("HTTP/1.1 200") for x in workers + [w]))' "$PORT" "$WT")
  echo "$out"
  assert_contains "$out" "workers ok: 12"
  assert_contains "$out" "tokened ninth: HTTP/1.1 200"
  assert_contains "$out" "healthz tenth: HTTP/1.1 200"
  assert_contains "$out" "oldest closed: True"
  assert_contains "$out" "second open: True"   # the worker showed its token: /healthz found room without a close
  assert_contains "$out" "other address: HTTP/1.1 200"
  assert_contains "$out" "workers still ok: 13"
}

# The soft open-file limit is raised to fit --max-conns; a hard limit too low for an explicit --max-conns is
# exit 2 naming both fixes; the default cap is lowered to fit, with a warning.
# An anonymous reader of a large answer that reads it slowly gets all of it: the answer outlasts --anon-timeout but
# the client takes some of it every second, so the connection is not idle (an anonymous reader got 200 with
# Content-Length 308,846,054 and only 4,014,977 bytes, cut by --anon-timeout). A reader that stops reading is still
# cut, a timeout or two later.
t_slow_anonymous_reader_gets_the_whole_answer() {
  s_setup
  s_spec "$D/spec.json" big '["4,4,4,4", "1,1,4,4"]' '[1]'
  s_create "$D/spec.json" >/dev/null
  # 20,000 more schedules, one job each: a leaderboard of ~10 MB, more than the sockets' buffers hold
  /usr/bin/python3 - "$DB" <<'EOF_FILL'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 20000) INSERT INTO schedules "
           "(sweep_id, heads, is_baseline, ord) SELECT 1, '4,4,4,' || (4 + i), 0, 1000000 + i FROM k")
db.execute("INSERT INTO jobs (sweep_id, schedule_id, seed, seed_index, priority, state, job, steps, tokens_per_step, "
           "created_at, updated_at, rung, stop_at_step) SELECT t.sweep_id, sc.id, t.seed, 0, t.priority, 'queued', t.job, "
           "t.steps, t.tokens_per_step, t.created_at, t.updated_at, t.rung, t.stop_at_step FROM schedules sc, "
           "(SELECT * FROM jobs ORDER BY id LIMIT 1) t WHERE sc.ord >= 1000000")
db.commit()
EOF_FILL
  s_server --public-read --anon-timeout 1
  local out; out=$(timeout 90 /usr/bin/python3 -u -c '
import socket, sys, time
port = int(sys.argv[1])
def fetch(pause, stop_after):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /api/v1/sweeps/1/leaderboard HTTP/1.1\r\nHost: x\r\n\r\n")
    d, t0, cl = b"", time.time(), None
    while True:
        if stop_after and len(d) > stop_after: time.sleep(6); stop_after = 0
        try: k = s.recv(65536)
        except OSError: break
        if not k: break
        d += k
        head, sep, body = d.partition(b"\r\n\r\n")
        if sep and cl is None:
            cl = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0]
        if cl is not None and len(body) >= cl: break
        time.sleep(pause)
    return cl or -1, len(d.partition(b"\r\n\r\n")[2]), time.time() - t0
fetch(0, 0)   # the first answer ranks the sweep: not what is measured
cl, got, dt = fetch(0.02, 0)
print("slow reader: %d of %d bytes in %.1f s" % (got, cl, dt))
print("slow reader complete:", cl > 4000000 and got == cl and dt > 2)
cl, got, dt = fetch(0.0, 1000000)
print("stalled reader: %d of %d bytes" % (got, cl))
print("stalled reader cut:", 0 < got < cl)' "$PORT")
  echo "$out"
  assert_contains "$out" "slow reader complete: True"
  assert_contains "$out" "stalled reader cut: True"
}

# A flood of connections from one address does not cost a tokened worker behind the same address its registration,
# nor /healthz its answer: at the per-address cap the connection closed to make room is the oldest that has shown
# nothing, never one whose request is waiting unread (issue #44: 57 of 60 registrations, 56 of 60 healthz under a
# reopen flood). Made exact with the server stopped (SIGSTOP) while the connections queue: 8 silent ones, the
# worker's with its request sent, 8 silent, /healthz's, 8 silent; resumed, the server accepts all 26 in one burst
# and each accept past the cap of 8 closes one — the worker's and healthz's were the oldest by then.
t_flood_spares_connections_with_a_request() {
  s_setup
  s_server --max-conns-per-addr 8
  local out; out=$(timeout 60 /usr/bin/python3 -u -c '
import os, signal, socket, sys, time
port, tok, spid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def conn():
    s = socket.socket(); s.bind(("127.0.0.5", 0)); s.connect(("127.0.0.1", port)); return s
def answer(s):
    s.settimeout(10); d = b""
    try:
        while b"\r\n\r\n" not in d or not d.rstrip().endswith(b"}"):
            k = s.recv(65536)
            if not k: break
            d += k
    except OSError: pass
    return d.split(b"\r\n")[0].decode(errors="replace")
body = b"{\"name\": \"w1\"}"
reg = b"POST /api/v1/workers/register HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (tok.encode(), len(body), body)
ok_reg = ok_hz = 0
for _ in range(10):
    os.kill(spid, signal.SIGSTOP)
    try:
        silent = [conn() for _ in range(8)]
        w = conn(); w.sendall(reg)
        silent += [conn() for _ in range(8)]
        h = conn(); h.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        silent += [conn() for _ in range(8)]
        time.sleep(0.1)
    finally:
        os.kill(spid, signal.SIGCONT)
    ok_reg += answer(w).startswith("HTTP/1.1 200")
    ok_hz += answer(h).startswith("HTTP/1.1 200")
    for s in silent + [w, h]: s.close()
print("registrations: %d of 10" % ok_reg)
print("healthz: %d of 10" % ok_hz)' "$PORT" "$WT" "$SPID")
  echo "$out"
  assert_contains "$out" "registrations: 10 of 10"
  assert_contains "$out" "healthz: 10 of 10"
}

t_open_file_limit() {
  s_setup
  local hard; hard=$(ulimit -Hn)
  [ "$hard" = unlimited ] || [ "$hard" -ge 16640 ] || skip "hard open-file limit $hard is below the default's 16640"
  ( ulimit -Sn 256; s_server; grep 'Max open files' /proc/$SPID/limits >"$D/limits"; kill $SPID )
  assert_eq 16640 "$(awk '{print $4}' "$D/limits")" "soft limit raised to --max-conns 16384 + 256"
  local out rc
  out=$(ulimit -Sn 256; ulimit -Hn 1000; timeout 5 "$(bin prism-sweep)" serve --db "$D/q.db" --listen 127.0.0.1:0 --max-conns 5000 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "--max-conns 5000 needs 5256 open files, but the hard limit is 1000"
  assert_contains "$out" "lower --max-conns to 744 or less"
  assert_contains "$out" "LimitNOFILE="
  ( ulimit -Sn 256; ulimit -Hn 1000; s_server; grep 'Max open files' /proc/$SPID/limits >"$D/limits2"; kill $SPID )
  assert_contains "$(cat "$D/server.log")" "--max-conns lowered from 16384 to 744"
  assert_eq 1000 "$(awk '{print $4}' "$D/limits2")" "soft limit"
}

harness_main "$@"
