#!/usr/bin/env bash
# test_failure_storm.sh — a broken worker fails a few jobs, not the queue; the admin commands bring them back;
# a worker pointed at something that is not a prism-sweep server stops at once.
# Real `prism-sweep serve`, real `prism-worker` agents, the real CLI over loopback.
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

ADMIN() { "$(bin prism-sweep)" "$@" --server "$URL" --token-file "$D/tokens"; }

# A worker whose --data-root holds no data: it fails 3 jobs (the default --fail-limit), stops leasing, says why and
# exits 1; the other jobs of the sweep are untouched (queued, never leased); one `prism-sweep requeue` puts the 3
# failed jobs back, and a worker with the right root then trains the whole sweep.
t_broken_data_root_stops_and_requeue_brings_back() {
  w_setup
  w_spec "$D/spec.json" storm '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1, 2]' 6
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  mkdir -p "$D/empty"
  w_worker bad --data-root "$D/empty"
  local bad=$LAST_PID
  w_exit "$bad" 60
  assert_eq 1 "$W_RC" "exit status of the worker stopped by its failures"
  local log; log=$(cat "$D/bad.log")
  assert_contains "$log" "3 jobs in a row failed on this worker with the same error (--fail-limit 3)"
  assert_contains "$log" "bad data"
  assert_contains "$log" "prism-sweep requeue SWEEP --state failed --error-like 'bad data'"
  assert_eq 3 "$(w_count "$sid" failed)" "failed jobs after the storm"
  assert_eq 3 "$(w_count "$sid" queued)" "queued jobs after the storm"
  # untouched: never leased (attempt 0), no error
  local touched; touched=$(w_get "/api/v1/sweeps/$sid/jobs?state=queued" | w_json 'sum(1 for j in d["jobs"] if j["attempt"] != 0 or j.get("last_error"))')
  assert_eq 0 "$touched" "queued jobs that were leased or carry an error"
  # the server saw the streak too
  assert_eq 3 "$(w_get /api/v1/workers | w_json 'd["workers"][0]["fail_streak"]')" "the worker's fail_streak on the server"
  # a filter that matches nothing requeues nothing
  local out; out=$(ADMIN requeue storm --state failed --error-like 'no such error text' 2>&1) || fail "requeue (no match): $out"
  assert_contains "$out" "requeued 0 failed jobs of sweep storm"
  out=$(ADMIN requeue storm --state failed --error-like 'bad data' 2>&1) || fail "requeue: $out"
  assert_contains "$out" "requeued 3 failed jobs of sweep storm"
  assert_eq 0 "$(w_count "$sid" failed)" "failed jobs after requeue"
  assert_eq 6 "$(w_count "$sid" queued)" "queued jobs after requeue"
  w_worker good --idle-exit 1
  w_exit "$LAST_PID" 90
  assert_eq 0 "$W_RC" "exit status of the good worker"
  assert_eq 6 "$(w_count "$sid" done)" "done jobs after the good worker"
}

# The server's side: a worker that does not stop itself (--fail-limit 0) gets no lease after
# --worker-fail-limit failures in a row (409, state "stopped", the reason in GET /api/v1/workers); it exits 1
# naming the server's reason; registering again lifts the stop.
t_server_stops_leasing_to_failing_worker() {
  w_setup
  w_spec "$D/spec.json" storm2 '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1, 2]' 6
  w_server --worker-fail-limit 2
  local sid; sid=$(w_create "$D/spec.json")
  mkdir -p "$D/empty"
  w_worker bad --data-root "$D/empty" --fail-limit 0
  w_exit "$LAST_PID" 60
  assert_eq 1 "$W_RC" "exit status of the worker the server stopped"
  assert_contains "$(cat "$D/bad.log")" "the server leases nothing more to this worker"
  assert_contains "$(cat "$D/bad.log")" "failed 2 jobs in a row without retry (--worker-fail-limit 2)"
  assert_eq 2 "$(w_count "$sid" failed)" "failed jobs"
  local w; w=$(w_get /api/v1/workers)
  assert_eq 2 "$(echo "$w" | w_json 'd["workers"][0]["fail_streak"]')" "fail_streak"
  assert_contains "$(echo "$w" | w_json 'd["workers"][0]["stopped_reason"]')" "bad data"
  local wid; wid=$(echo "$w" | w_json 'd["workers"][0]["id"]')
  local code; code=$(curl -s -o "$D/lease.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid}" "$URL/api/v1/lease")
  assert_eq 409 "$code" "lease for the stopped worker"
  assert_eq stopped "$(w_json 'd["state"]' < "$D/lease.json")" "state of the 409"
  local host; host=$(echo "$w" | w_json 'd["workers"][0]["host"]')
  curl -s -X POST -H "Authorization: Bearer $WTOK" -d "{\"name\": \"bad\", \"host\": \"$host\"}" \
    "$URL/api/v1/workers/register" > "$D/reg.json"
  assert_eq "$wid" "$(w_json 'd["worker_id"]' < "$D/reg.json")" "the same worker registered again"
  code=$(curl -s -o "$D/lease.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid}" "$URL/api/v1/lease")
  assert_eq 200 "$code" "lease after registering again: $(cat "$D/lease.json")"
  assert_eq None "$(w_get /api/v1/workers | w_json 'd["workers"][0]["stopped_reason"]')" "stopped_reason after register"
}

# A divergence or a non-finite loss is the job's outcome, not the worker's (common/result_check.h): the server's
# --worker-fail-limit does not count it. A worker (plain curl) fails 3 jobs in a row "diverged: ..." and one
# "loss is not finite: ..." with --worker-fail-limit 2 and still gets its next lease. Before: 409 "stopped" after 2.
t_server_does_not_count_divergences() {
  w_setup
  w_spec "$D/spec.json" dv '["4,4,4,4"]' '[1, 2, 3, 4, 5]' 6
  w_server --worker-fail-limit 2
  w_create "$D/spec.json" > /dev/null
  curl -s -X POST -H "Authorization: Bearer $WTOK" -d '{"name": "w", "host": "h", "devices": ["cpu"]}' \
    "$URL/api/v1/workers/register" > "$D/reg.json"
  local wid; wid=$(w_json 'd["worker_id"]' < "$D/reg.json")
  local i code job tok err
  for i in 1 2 3 4; do
    code=$(curl -s -o "$D/lease.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
      -d "{\"worker_id\": $wid}" "$URL/api/v1/lease")
    echo "lease $i: HTTP $code"
    assert_eq 200 "$code" "lease $i after $((i - 1)) divergences: $(cat "$D/lease.json")"
    job=$(w_json 'd["job_id"]' < "$D/lease.json"); tok=$(w_json 'd["lease_token"]' < "$D/lease.json")
    err="diverged: step 4: validation loss 9 is above 4.57"
    [ "$i" = 4 ] && err="loss is not finite: step 3: train loss nan"
    code=$(curl -s -o "$D/fail.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
      -d "{\"lease_token\": \"$tok\", \"error\": \"$err\", \"retryable\": false}" "$URL/api/v1/jobs/$job/fail")
    assert_eq 200 "$code" "fail of job $job: $(cat "$D/fail.json")"
  done
  local w; w=$(w_get /api/v1/workers)
  echo "fail_streak $(echo "$w" | w_json 'd["workers"][0]["fail_streak"]'), stopped_reason $(echo "$w" | w_json 'd["workers"][0]["stopped_reason"]')"
  assert_eq 0 "$(echo "$w" | w_json 'd["workers"][0]["fail_streak"]')" "fail_streak after divergences"
  code=$(curl -s -o "$D/lease.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $WTOK" \
    -d "{\"worker_id\": $wid}" "$URL/api/v1/lease")
  assert_eq 200 "$code" "the fifth lease: $(cat "$D/lease.json")"
}

# A --server that is not a prism-sweep server, or another scheme, is exit 2 at once; a refused connection is
# retried (it can get better).
t_not_a_prism_server_exits_2() {
  w_setup
  local port2; port2=$(free_port)
  /usr/bin/python3 -m http.server "$port2" --bind 127.0.0.1 --directory "$D" > "$D/http.log" 2>&1 &
  W_PIDS+=("$!")
  w_wait 10 "python http.server up" curl -s -o /dev/null "http://127.0.0.1:$port2/"
  local start=$SECONDS rc=0
  "$(bin prism-worker)" --server "http://127.0.0.1:$port2" --token-file "$D/worker-token" --work-dir "$D/w1" \
    > "$D/w1.log" 2>&1 || rc=$?
  assert_eq 2 "$rc" "exit status against a plain web server: $(cat "$D/w1.log")"
  assert_contains "$(cat "$D/w1.log")" "is not a prism-sweep server"
  [ $((SECONDS - start)) -lt 20 ] || fail "took $((SECONDS - start)) s: it should not retry"
  # https:// to a plain-HTTP prism-sweep server
  w_server
  local tls=${URL/http:/https:}
  rc=0   # (`prism-worker agent ...` is the same command as `prism-worker --server ...`)
  "$(bin prism-worker)" agent --server "$tls" --token-file "$D/worker-token" --work-dir "$D/w2" > "$D/w2.log" 2>&1 || rc=$?
  assert_eq 2 "$rc" "exit status for https:// to a plain-HTTP server: $(cat "$D/w2.log")"
  assert_contains "$(cat "$D/w2.log")" "does not speak TLS here"
  # http:// to a TLS port (openssl s_server with a throw-away certificate): closed without an answer, exit 2
  if command -v openssl >/dev/null; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/k.pem" -out "$D/c.pem" -days 1 -subj /CN=t > /dev/null 2>&1 \
      || fail "openssl req"
    local port4; port4=$(free_port)
    openssl s_server -accept "$port4" -cert "$D/c.pem" -key "$D/k.pem" -www -quiet > /dev/null 2>&1 &
    W_PIDS+=("$!")
    w_wait 10 "openssl s_server up" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port4"
    rc=0
    "$(bin prism-worker)" --server "http://127.0.0.1:$port4" --token-file "$D/worker-token" --work-dir "$D/w4" \
      > "$D/w4.log" 2>&1 || rc=$?
    assert_eq 2 "$rc" "exit status for http:// to a TLS port: $(cat "$D/w4.log")"
    assert_contains "$(cat "$D/w4.log")" "as a TLS port does to plain HTTP"
  fi
  "$(bin prism-worker)" agent --help > "$D/help" 2>&1 || fail "prism-worker agent --help: $(cat "$D/help")"
  assert_contains "$(cat "$D/help")" "--fail-limit N"
  # a refused connection: still retrying after 2 s
  local port3; port3=$(free_port)
  "$(bin prism-worker)" --server "http://127.0.0.1:$port3" --token-file "$D/worker-token" --work-dir "$D/w3" \
    > "$D/w3.log" 2>&1 &
  local p3=$!
  W_PIDS+=("$p3")
  sleep 2
  kill -0 "$p3" 2>/dev/null || fail "the worker gave up on a refused connection: $(cat "$D/w3.log")"
  assert_contains "$(cat "$D/w3.log")" "retrying with backoff"
}

# One rule for SWEEP in every command (sweeps_find): a name that is a number is refused at create, and where an
# older database holds one ("1" naming sweep 2 while sweep 1 exists) status, export, leaderboard and the admin
# commands all refuse "1" naming both sweeps, and all take 2 for the renamed one.
t_a_sweep_named_like_an_id_is_refused_everywhere() {
  w_setup
  w_spec "$D/a.json" a '["4,4,4,4"]' '[1]' 6
  w_spec "$D/b.json" b '["4,4,4,4"]' '[1]' 6
  w_spec "$D/n.json" 42 '["4,4,4,4"]' '[1]' 6
  local x; x=$(bin prism-sweep)
  local rc=0; "$x" create "$D/n.json" --db "$D/prism.db" 2>"$D/err" >/dev/null || rc=$?
  assert_eq 2 "$rc" "create of a sweep named 42"
  assert_contains "$(cat "$D/err")" 'name: "42" is a number, which every command would read as a sweep id'
  "$x" create "$D/a.json" --db "$D/prism.db" >/dev/null && "$x" create "$D/b.json" --db "$D/prism.db" >/dev/null || fail "create a, b"
  sqlite3 "$D/prism.db" "UPDATE sweeps SET name = '1' WHERE name = 'b'"
  local want='"1" is the id of sweep 1 and the name of sweep 2: give 2 for sweep 2, or sweep 1'"'"'s name for sweep 1'
  for c in "status 1" "leaderboard 1" "export 1 --out $D/o"; do
    rc=0; $x $c --db "$D/prism.db" >/dev/null 2>"$D/err" || rc=$?
    assert_eq 2 "$rc" "$c: exit"
    assert_contains "$(cat "$D/err")" "$want"
  done
  assert_contains "$("$x" status 2 --db "$D/prism.db")" 'sweep 2 "1"'
  "$x" leaderboard 2 --db "$D/prism.db" >/dev/null || fail "leaderboard 2"
  w_server
  rc=0; ADMIN pause 1 >/dev/null 2>"$D/err" || rc=$?
  assert_eq 2 "$rc" "pause 1: exit"
  assert_contains "$(cat "$D/err")" "$want"
  ADMIN pause 2 >/dev/null 2>&1 || fail "pause 2"
  assert_eq "active paused" "$(sqlite3 "$D/prism.db" "SELECT group_concat(state, ' ') FROM (SELECT state FROM sweeps ORDER BY id)")" "only sweep 2 paused"
}

# The admin commands: pause, resume, priority (sweep and job), cancel and requeue one job; errors: no --state,
# an unknown sweep, a wrong token (2), no server (1).
t_admin_commands() {
  w_setup
  w_spec "$D/spec.json" adm '["4,4,4,4", "2,2,4,4"]' '[1]' 6
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  ADMIN pause adm > "$D/o" 2>&1 || fail "pause: $(cat "$D/o")"
  assert_eq paused "$(w_get "/api/v1/sweeps/$sid" | w_json 'd["state"]')" "state after pause"
  ADMIN resume "$sid" > "$D/o" 2>&1 || fail "resume by id: $(cat "$D/o")"
  assert_eq active "$(w_get "/api/v1/sweeps/$sid" | w_json 'd["state"]')" "state after resume"
  ADMIN priority adm 7 > "$D/o" 2>&1 || fail "priority: $(cat "$D/o")"
  assert_eq 7 "$(w_get "/api/v1/sweeps/$sid" | w_json 'd["priority"]')" "sweep priority"
  local job; job=$(w_get "/api/v1/sweeps/$sid/jobs" | w_json 'd["jobs"][0]["id"]')
  ADMIN priority --job "$job" 9 > "$D/o" 2>&1 || fail "priority --job: $(cat "$D/o")"
  assert_eq 9 "$(w_get "/api/v1/jobs/$job" | w_json 'd["priority"]')" "job priority"
  ADMIN cancel --job "$job" > "$D/o" 2>&1 || fail "cancel: $(cat "$D/o")"
  assert_eq cancelled "$(w_get "/api/v1/jobs/$job" | w_json 'd["state"]')" "state after cancel"
  ADMIN requeue --job "$job" > "$D/o" 2>&1 || fail "requeue --job: $(cat "$D/o")"
  assert_eq queued "$(w_get "/api/v1/jobs/$job" | w_json 'd["state"]')" "state after requeue --job"
  ADMIN requeue adm > "$D/o" 2>&1; assert_eq 2 "$?" "requeue SWEEP without --state"
  assert_contains "$(cat "$D/o")" "--state failed (or cancelled) is required"
  ADMIN pause nosuch > "$D/o" 2>&1; assert_eq 2 "$?" "pause of an unknown sweep"
  assert_contains "$(cat "$D/o")" 'no sweep "nosuch"'
  ADMIN requeue adm --state done > "$D/o" 2>&1; assert_eq 2 "$?" "requeue --state done"
  printf 'admin_token=%s\n' 0123456789abcdef0123 > "$D/wrong"
  "$(bin prism-sweep)" pause adm --server "$URL" --token-file "$D/wrong" > "$D/o" 2>&1; assert_eq 2 "$?" "a wrong token"
  assert_contains "$(cat "$D/o")" "HTTP 401"
  "$(bin prism-sweep)" pause adm --server "http://127.0.0.1:$(free_port)" --token-file "$D/tokens" --retry-for 0.3 \
    > "$D/o" 2>&1; assert_eq 1 "$?" "no server"
  assert_contains "$(cat "$D/o")" "is prism-sweep serve running"
}

harness_main "$@"
