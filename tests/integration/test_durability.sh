#!/usr/bin/env bash
# test_durability.sh — the server's answers wait for the fdatasync that makes their COMMIT durable (the sync
# runs off the event loop). An LD_PRELOAD shim (tests/shim/fsync_delay.c) makes every fsync/fdatasync slow
# and logs when each one started and ended; the cases check answers against that log, kill -9 the server
# while a sync is in flight, and make a sync fail.
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

SHIM="$(bin tests/libfsync_delay.so)"

# s_server, with the shim preloaded: once the server is up, every sync sleeps $1 ms; each is logged in
# $D/sync.log.
d_server_slow() {
  local ms=$1; shift
  [ -f "$SHIM" ] || fail "$SHIM not built (make tests)"
  PORT=$(free_port)
  URL="http://127.0.0.1:$PORT"
  rm -f "$D/slow-syncs"
  LD_PRELOAD="$SHIM" PRISM_SHIM_SYNC_DELAY_MS=$ms PRISM_SHIM_SYNC_LOG="$D/sync.log" \
    PRISM_SHIM_FAIL_IF_EXISTS="$D/fail-syncs" PRISM_SHIM_DELAY_IF_EXISTS="$D/slow-syncs" \
    "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$PORT" "$@" 2>>"$D/server.log" &
  SPID=$!
  S_PIDS+=("$SPID")
  s_wait_up
  touch "$D/slow-syncs"
  WT=$(sed -n 's/^worker_token=//p' "$DB.tokens")
  AT=$(sed -n 's/^admin_token=//p' "$DB.tokens")
}

# d_timed NAME METHOD PATH BODY: the request with the worker token; writes "SENT RECEIVED CODE" (wall clock,
# as the shim logs it) to $D/NAME.t and the body to $D/NAME.body.
d_timed() {
  local name=$1 m=$2 p=$3 body=$4 t0 t1 code
  t0=$(date +%s.%N)
  code=$(curl -s -m 20 -o "$D/$name.body" -w '%{http_code}' -X "$m" -H "Authorization: Bearer $WT" \
         -H 'Content-Type: application/json' --data-binary "$body" "$URL$p")
  t1=$(date +%s.%N)
  echo "$t0 $t1 $code" >"$D/$name.t"
}

# d_covered NAME: some fdatasync/fsync of the WAL started after the request was sent and ended before its
# answer arrived (the sync of its COMMIT).
d_covered() {
  local t0 t1 code
  read -r t0 t1 code <"$D/$1.t"
  awk -v a="$t0" -v b="$t1" '$3 ~ /-wal$/ && $1 >= a && $2 <= b { ok = 1 } END { exit !ok }' "$D/sync.log" \
    || fail "answer to $1 (sent $t0, received $t1, HTTP $code) left before any sync of the WAL that began after it was sent; WAL syncs: $(grep -- '-wal ' "$D/sync.log" | tail -n 8 | tr '\n' ';')"
}

# Every write answer (register, lease, metrics, heartbeat, complete; serial and 4 at once) arrives only after
# a sync of the WAL that began after the request was sent — with syncs slowed to 300 ms.
t_answers_leave_after_their_sync() {
  s_setup
  s_spec "$D/s.json" dur '["4,4,4,4", "2,2,4,4"]' '[1, 2]' 50
  s_create "$D/s.json" >/dev/null
  d_server_slow 300 --lease-ttl 60
  d_timed reg POST /api/v1/workers/register '{"name": "w1", "host": "h", "devices": ["cpu"]}'
  d_covered reg
  local w; w=$(jq -r .worker_id <"$D/reg.body")
  local i pids=()
  for i in 1 2 3 4; do
    d_timed "reg$i" POST /api/v1/workers/register "{\"name\": \"c$i\", \"host\": \"h\", \"devices\": [\"cpu\"]}" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for i in 1 2 3 4; do d_covered "reg$i"; done
  d_timed lease POST /api/v1/lease "{\"worker_id\": $w}"
  d_covered lease
  local job tok; job=$(jq -r .job_id <"$D/lease.body"); tok=$(jq -r .lease_token <"$D/lease.body")
  [ -n "$job" ] && [ "$job" != null ] || fail "no job leased: $(cat "$D/lease.body")"
  d_timed m1 POST "/api/v1/jobs/$job/metrics" "{\"lease_token\": \"$tok\", \"points\": [{\"step\": 0, \"train_loss\": 5}]}" &
  pids=($!)
  d_timed hb POST "/api/v1/jobs/$job/heartbeat" "{\"lease_token\": \"$tok\", \"step\": 1}" &
  pids+=($!)
  wait "${pids[@]}"
  d_covered m1; d_covered hb
  d_timed done POST "/api/v1/jobs/$job/complete" "{\"lease_token\": \"$tok\", \"result\": {\"val_loss\": 4.5, \"tok_per_s\": 1}}"
  d_covered done
  local f code
  for f in reg reg1 reg2 reg3 reg4 lease m1 hb done; do
    read -r _ _ code <"$D/$f.t"
    assert_eq 200 "$code" "HTTP status of $f ($(cat "$D/$f.body"))"
  done
  curl -s "$URL/metrics" >"$D/metrics.txt"
  grep -q '^prism_sync_off_loop 1$' "$D/metrics.txt" || fail "syncs not off the loop: $(grep prism_sync "$D/metrics.txt")"
  local n; n=$(sed -n 's/^prism_sync_seconds_count //p' "$D/metrics.txt")
  [ "${n:-0}" -ge 5 ] || fail "expected at least 5 sync jobs, /metrics says ${n:-none}"
}

# kill -9 while the sync of a batch is in flight: that batch was not answered; everything answered before
# is there after a restart, and the database is intact.
t_kill9_during_sync_loses_nothing_acknowledged() {
  s_setup
  s_spec "$D/s.json" dur '["4,4,4,4", "2,2,4,4"]' '[1]' 50
  s_create "$D/s.json" >/dev/null
  d_server_slow 1500 --lease-ttl 60
  d_timed reg POST /api/v1/workers/register '{"name": "w1", "host": "h", "devices": ["cpu"]}'
  local w; w=$(jq -r .worker_id <"$D/reg.body")
  d_timed lease POST /api/v1/lease "{\"worker_id\": $w}"
  local job tok; job=$(jq -r .job_id <"$D/lease.body"); tok=$(jq -r .lease_token <"$D/lease.body")
  d_timed a POST "/api/v1/jobs/$job/metrics" "{\"lease_token\": \"$tok\", \"points\": [{\"step\": 0, \"train_loss\": 5}, {\"step\": 1, \"train_loss\": 4.9}]}"
  local code; read -r _ _ code <"$D/a.t"; assert_eq 200 "$code" "batch a: $(cat "$D/a.body")"
  sleep 1.7                                   # no sync in flight any more (were a answered early, its own)
  d_timed b POST "/api/v1/jobs/$job/metrics" "{\"lease_token\": \"$tok\", \"points\": [{\"step\": 2, \"train_loss\": 4.8}]}" &
  local bpid=$!
  sleep 0.5                                   # b is committed; its 1.5 s sync is in flight
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  wait "$bpid"
  read -r _ _ code <"$D/b.t"
  assert_eq 000 "$code" "batch b was answered before its sync completed ($(cat "$D/b.body" 2>/dev/null))"
  s_server --lease-ttl 60
  s_expect 200 GET "/api/v1/jobs/$job/metrics?kind=train"
  assert_eq "true" "$(s_json '[.points[].step] | contains([0, 1])')" "acknowledged steps 0 and 1 after restart: $BODY"
  assert_eq "ok" "$(sqlite3 "$DB" 'PRAGMA integrity_check')" "integrity_check"
}

# A failed sync: the batch's answers are not sent, the server says why on stderr and exits with status 1;
# restarted, it serves the database (what was answered before is there).
t_failed_sync_answers_nothing_and_exits() {
  s_setup
  s_spec "$D/s.json" dur '["4,4,4,4"]' '[1]' 50
  s_create "$D/s.json" >/dev/null
  d_server_slow 0
  d_timed reg POST /api/v1/workers/register '{"name": "w1", "host": "h", "devices": ["cpu"]}'
  local code; read -r _ _ code <"$D/reg.t"; assert_eq 200 "$code" "register before the failure"
  touch "$D/fail-syncs"
  d_timed reg2 POST /api/v1/workers/register '{"name": "w2", "host": "h", "devices": ["cpu"]}'
  read -r _ _ code <"$D/reg2.t"
  assert_eq 000 "$code" "answer to a write whose sync failed ($(cat "$D/reg2.body" 2>/dev/null))"
  local rc=0
  wait "$SPID" || rc=$?
  assert_eq 1 "$rc" "server exit status after a failed sync"
  grep -q "fdatasync of .*-wal failed: Input/output error" "$D/server.log" || fail "no reason on stderr: $(tail -n 3 "$D/server.log")"
  rm -f "$D/fail-syncs"
  s_server
  s_expect 200 GET /api/v1/workers "" "$AT"
  assert_contains "$BODY" '"w1"'
}

# Steady writes: the WAL starts over again and again (the pool checkpoints, the loop's tail copy, the restart
# after the database file's fsync); every acknowledged point is in the database afterwards, which is intact.
t_wal_starts_over_under_steady_writes() {
  s_setup
  s_spec "$D/s.json" dur '["4,4,4,4"]' '[1]' 100000000
  s_create "$D/s.json" >/dev/null
  s_server --lease-ttl 600
  local w; w=$(s_register w1)
  s_lease "$w"
  python3 - "$URL" "$WT" "$JOB" "$TOKEN" "$DB-wal" >"$D/writer.out" <<'PY' || fail "writer: $(cat "$D/writer.out")"
import http.client, json, struct, sys, time, urllib.parse
url, tok, job, lease, wal = sys.argv[1:6]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
def seq():
    with open(wal, "rb") as f:
        h = f.read(16)
    return struct.unpack(">I", h[12:16])[0] if len(h) == 16 else None
seen, acked, step, t0 = set(), 0, 0, time.time()
while len(seen) < 4 and time.time() - t0 < 60:
    pts = [{"step": step + i, "train_loss": 5.0 - (step + i) * 1e-7} for i in range(400)]
    c.request("POST", "/api/v1/jobs/%s/metrics" % job, json.dumps({"lease_token": lease, "points": pts}),
              {"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    r = c.getresponse(); body = r.read()
    if r.status != 200:
        sys.exit("HTTP %d: %s" % (r.status, body[:200]))
    acked += 400; step += 400
    s = seq()
    if s is not None: seen.add(s)
print(acked, len(seen))
PY
  local acked starts; read -r acked starts <"$D/writer.out"
  [ "$starts" -ge 4 ] || fail "the WAL started over only $((starts - 1)) times in 60 s ($acked points written)"
  curl -s "$URL/metrics" >"$D/metrics.txt"
  local tails; tails=$(sed -n 's/^prism_wal_loop_checkpoints_total //p' "$D/metrics.txt")
  [ "${tails:-0}" -ge 1 ] || fail "no tail copy on the loop: $(grep prism_wal "$D/metrics.txt")"
  kill -TERM "$SPID"; wait "$SPID" || fail "server exit status $? after SIGTERM"
  assert_eq "$acked" "$(sqlite3 "$DB" 'SELECT count(*) FROM metrics')" "points in the database"
  assert_eq "ok" "$(sqlite3 "$DB" 'PRAGMA integrity_check')" "integrity_check"
}

# A WAL whose early frame has one flipped byte: SQLite's recovery would drop every committed transaction after it
# (7,100 acknowledged points, and the server started healthy). serve refuses to start, saying what would be lost
# and changing nothing; with --accept-wal-loss it keeps a copy of the WAL and serves what is left.
t_damaged_wal_is_detected_at_start() {
  wal_fixture walflip
  wal_flip frame 4 124   # a byte in the 4th frame's page
  serve_refuses "$DB" "-wal is damaged: frame 4 of"
  assert_contains "$out" "committed transaction(s)"
  assert_contains "$out" "--accept-wal-loss"
  s_server --accept-wal-loss
  assert_contains "$(cat "$D/server.log")" "event=wal-loss"
  local copy; copy=$(ls "$DB"-wal.corrupt-* 2>/dev/null | head -n1)
  [ -n "$copy" ] || fail "no copy of the damaged WAL: $(ls "$D")"
  cmp -s "$copy" "$D/wal.before" || fail "the copy differs from the damaged WAL"
  s_expect 200 GET /healthz
}

# wal_fixture NAME: a created sweep and 40 committed transactions left in DB-wal (not checkpointed); the WAL copied
# to $D/wal.clean.
wal_fixture() {
  s_setup
  s_spec "$D/s.json" "$1" '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  /usr/bin/python3 - "$DB" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA wal_autocheckpoint=0")
for i in range(40):   # 40 committed transactions, each its own frames
    c.execute("INSERT INTO workers (name, host, devices, registered_at, last_seen_at) VALUES (?, 'h', '[]', 0, 0)", ("w%d" % i,))
os._exit(0)   # no close: the WAL stays as it is, not checkpointed
PY
  [ -s "$DB-wal" ] || fail "no WAL left to damage"
  cp "$DB-wal" "$D/wal.clean"
}
# wal_flip WHERE: flips one bit of $DB-wal from the clean copy; WHERE is "header OFFSET" or "frame K OFFSET" (K 1-based,
# OFFSET into the frame, its 24-byte header first).
wal_flip() {
  /usr/bin/python3 - "$D/wal.clean" "$DB-wal" "$@" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
page = struct.unpack(">I", b[8:12])[0]
off = int(sys.argv[4]) if sys.argv[3] == "header" else 32 + (int(sys.argv[4]) - 1) * (24 + page) + int(sys.argv[5])
b[off] ^= 0x01
open(sys.argv[2], "wb").write(b)
PY
}
# serve_refuses DBPATH WANT: serve over DBPATH exits 1 naming the damage; the WAL is left as it was ($out: what it said).
serve_refuses() {
  cp "$DB-wal" "$D/wal.before"
  PORT=$(free_port)
  local rc=0; out=$(timeout 20 "$(bin prism-sweep)" serve --db "$1" --listen "127.0.0.1:$PORT" 2>&1) || rc=$?
  echo "$out"
  assert_eq 1 "$rc" "serve over a damaged WAL ($2)"
  assert_contains "$out" "$2"
  assert_contains "$out" "Nothing was changed"
  cmp -s "$DB-wal" "$D/wal.before" || fail "the WAL was changed by a refused start"
}

# The damage SQLite's recovery would drop without a word, each refused at start (issue #44): a frame's salt (the
# chain ends there but this generation's frames follow), the header's checkpoint sequence, salt or checksum (SQLite
# ignores the whole WAL), and a flipped page byte with the database served through a symlink (the WAL is beside the
# resolved file).
t_salt_header_and_symlink_damage_is_detected_at_start() {
  wal_fixture walsalt
  wal_flip frame 4 8
  serve_refuses "$DB" "-wal is damaged: frame 4 of"
  local off
  for off in 12 16 24; do
    wal_flip header "$off"
    serve_refuses "$DB" "its header's checksum does not match, so SQLite's recovery would ignore the whole WAL and drop"
  done
  cp "$D/wal.clean" "$DB-wal"
  wal_flip frame 4 100
  ln -s "$DB" "$D/link.db"
  serve_refuses "$D/link.db" "-wal is damaged: frame 4 of"
  cp "$D/wal.clean" "$DB-wal"
  s_server
  s_expect 200 GET /healthz
  assert_eq 40 "$(sqlite3 "$DB" "SELECT count(*) FROM workers")" "every transaction of the undamaged WAL"
}

harness_main "$@"
