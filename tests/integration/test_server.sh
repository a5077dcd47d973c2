#!/usr/bin/env bash
# test_server.sh — the orchestrator daemon against real clients (curl) on loopback: leases, expiry, tokens,
# idempotency, cancel, auth, caps, malformed input, static files, durability across kill -9.
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# Baseline first at each seed, every schedule's first seed before any second seed; priority wins; paused
# sweeps lease nothing; 204 when the queue is empty.
t_lease_order_priority_pause() {
  s_setup
  s_spec "$D/s.json" order '["1,1,4,4", "2,2,4,4"]' '[7, 8]'
  local sid; sid=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  local got=()
  for i in 1 2 3; do s_lease "$w"; got+=("$(s_json '.heads|map(tostring)|join(",")')@$(s_json .seed)"); done
  assert_eq "4,4,4,4@7 1,1,4,4@7 2,2,4,4@7" "${got[*]}" "first seed of every schedule, baseline first"
  # raise the priority of the last queued job (2,2,4,4 seed 8): it comes next
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?state=queued"
  local last; last=$(s_json '.jobs[-1].id')
  assert_eq "2,2,4,4@8" "$(s_json '.jobs[-1]|(.heads|map(tostring)|join(","))+"@"+(.seed|tostring)')" "queued order"
  s_expect 200 POST "/api/v1/jobs/$last/priority" '{"priority": 5}' "$AT"
  s_lease "$w"; assert_eq "$last" "$JOB" "priority job leased first"
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?limit=1"
  assert_eq "1 $JOB" "$(s_json '"\(.jobs|length) \(.jobs[0].id)"')" "limit: the priority job lists first"
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?limit=2&offset=1"
  assert_eq "2 4,4,4,4@7" "$(s_json '"\(.jobs|length) \(.jobs[0]|(.heads|map(tostring)|join(","))+"@"+(.seed|tostring))"')" "offset"
  # pages: "more" and "after" (the last job's id) go on where a page stopped, in the same order as one larger page
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?limit=3"
  local three; three=$(s_json '[.jobs[].id]|map(tostring)|join(",")')
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?limit=2"
  assert_eq "true" "$(s_json .more)" "a page with jobs after it says more"
  local two after; two=$(s_json '[.jobs[].id]|map(tostring)|join(",")'); after=$(s_json .after)
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs?limit=1&after=$after"
  assert_eq "$three" "$two,$(s_json '.jobs[0].id')" "after= goes on in the lease order"
  s_expect 200 GET "/api/v1/sweeps/$sid/jobs"
  assert_eq "false null" "$(s_json '"\(.more) \(.after)"')" "the whole list in one page: no more, no after"
  s_expect 200 POST "/api/v1/sweeps/$sid/pause" '{}' "$AT"
  s_lease "$w"; assert_eq "" "$JOB" "paused sweep leases nothing (204)"
  s_expect 200 POST "/api/v1/sweeps/$sid/resume" '{}' "$AT"
  s_lease "$w"; assert_eq "4,4,4,4@8" "$(s_json '.heads|map(tostring)|join(",")')@$(s_json .seed)" "baseline first at seed 2"
  s_lease "$w"; [ -n "$JOB" ] || fail "one job left"
  s_lease "$w"; assert_eq 204 "$CODE" "empty queue"
  s_expect 404 POST /api/v1/lease '{"worker_id": 999}'
  assert_contains "$BODY" "register first"
}

# 8 concurrent leasers drain 28 jobs: every job leased exactly once.
t_lease_exclusive_concurrent() {
  s_setup
  s_spec "$D/s.json" many '["1,1,4,4", "2,2,4,4", "1,2,4,4", "1,4,4,4", "2,4,4,4", "1,1,1,4"]' '[1, 2, 3, 4]'
  s_create "$D/s.json" >/dev/null
  s_server
  local pids=() k
  for k in $(seq 1 8); do
    local w; w=$(s_register "w$k")
    ( for i in $(seq 1 30); do
        c=$(curl -s -o "$D/l.$k.$i" -w '%{http_code}' -X POST -H "Authorization: Bearer $WT" \
            --data-binary "{\"worker_id\": $w}" "$URL/api/v1/lease")
        [ "$c" = 204 ] && break
        [ "$c" = 200 ] || { echo "HTTP $c" >"$D/err.$k"; break; }
      done ) &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k"; done
  ls "$D"/err.* >/dev/null 2>&1 && fail "a lease failed: $(cat "$D"/err.*)"
  local ids; ids=$(cat "$D"/l.* | jq -r '.job_id // empty' | sort -n)
  assert_eq 28 "$(echo "$ids" | wc -l)" "leases granted (7 schedules with the baseline × 4 seeds)"
  assert_eq 28 "$(echo "$ids" | sort -u | wc -l)" "distinct jobs: $ids"
  s_expect 200 GET /api/v1/sweeps
  assert_eq 28 "$(s_json ".sweeps[0].counts.leased")" "jobs leased"
}

# An unrenewed lease expires by the timer: the job is re-leased with attempt+1 and its checkpoint as resume;
# the old token gets 409; after --max-attempts it fails with the reason.
t_expiry_requeue_and_max_attempts() {
  s_setup
  s_spec "$D/s.json" exp '["4,4,4,4"]' '[1]'
  local sid; sid=$(s_create "$D/s.json")
  s_server --lease-ttl 1 --max-attempts 2
  local w; w=$(s_register w1)
  s_lease "$w"; local job=$JOB old=$TOKEN
  assert_eq 1 "$ATTEMPT" "first attempt"
  s_expect 200 POST "/api/v1/jobs/$job/checkpoint" "{\"lease_token\": \"$old\", \"path\": \"/ck/job-$job-a1/resume-5.bin\", \"step\": 5}"
  # nobody asks: the timer alone must expire it
  local i st=leased
  for i in $(seq 1 40); do
    s_expect 200 GET "/api/v1/jobs/$job"; st=$(s_json .state)
    [ "$st" = queued ] && break; sleep 0.1
  done
  assert_eq queued "$st" "state after the TTL"
  assert_contains "$(s_json .last_error)" "expired"
  s_lease "$w"
  assert_eq "$job" "$JOB" "same job re-leased"
  assert_eq 2 "$ATTEMPT" "attempt+1"
  assert_eq "/ck/job-$job-a1/resume-5.bin" "$(s_json .resume.checkpoint)" "resume checkpoint"
  assert_eq 5 "$(s_json .resume.step)" "resume step"
  s_expect 409 POST "/api/v1/jobs/$job/heartbeat" "{\"lease_token\": \"$old\"}"
  assert_eq leased "$(s_json .state)" "409 says the job's state"
  s_expect 409 POST "/api/v1/jobs/$job/complete" "{\"lease_token\": \"$old\", \"result\": {\"val_loss\": 1}}"
  # let attempt 2 expire too: --max-attempts 2 is used up
  for i in $(seq 1 40); do
    s_expect 200 GET "/api/v1/jobs/$job"; st=$(s_json .state)
    [ "$st" = failed ] && break; sleep 0.1
  done
  assert_eq failed "$st" "state after max attempts"
  assert_contains "$(s_json .last_error)" "max-attempts"
  s_expect 200 GET /metrics
  assert_contains "$BODY" "prism_leases_expired_total 2"
  # an admin requeue counts attempts afresh
  s_expect 200 POST "/api/v1/jobs/$job/requeue" '{}' "$AT"
  s_lease "$w"; assert_eq 3 "$ATTEMPT" "attempt after requeue"
}

# Heartbeats renew; a wrong token is 409 on every worker route.
t_stale_token_409() {
  s_setup
  s_spec "$D/s.json" stale '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server --lease-ttl 30
  local w; w=$(s_register w1)
  s_lease "$w"; local exp0; exp0=$(s_json .lease_expires_at)
  sleep 0.05
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\", \"step\": 3, \"loss\": 4.5}"
  awk -v a="$(s_json .lease_expires_at)" -v b="$exp0" 'BEGIN{exit !(a > b)}' || fail "heartbeat did not extend the lease"
  local r
  for r in heartbeat metrics checkpoint complete fail; do
    s_expect 409 POST "/api/v1/jobs/$JOB/$r" '{"lease_token": "0000000000000000", "points": [], "path": "x", "step": 1, "result": {"val_loss": 1}, "error": "e"}'
    assert_contains "$BODY" "not the job's current lease"
  done
  s_expect 404 POST "/api/v1/jobs/9999/heartbeat" "{\"lease_token\": \"$TOKEN\"}"
  s_expect 400 POST "/api/v1/jobs/$JOB/heartbeat" '{}'
  assert_contains "$BODY" "lease_token"
  s_expect 200 GET "/api/v1/jobs/$JOB"
  assert_eq 3 "$(s_json .step)" "progress from heartbeat"
}

# A resent metrics batch changes nothing; complete and fail are idempotent for the same token.
t_idempotent_metrics_and_complete() {
  s_setup
  s_spec "$D/s.json" idem '["4,4,4,4", "2,2,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"
  local pts='[{"step": 0, "val_loss": 5.5}, {"step": 0, "train_loss": 5.6, "lr": 0.001, "tokens": 64, "tok_per_s": 100},
              {"step": 1, "train_loss": 5.2, "lr": 0.001, "tokens": 128, "tok_per_s": 110}, {"step": 5, "val_loss": 4.9}]'
  s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $pts}"
  assert_eq "4 0" "$(s_json '"\(.accepted) \(.duplicates)"')" "first batch"
  s_expect 200 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $pts}"
  assert_eq "0 4" "$(s_json '"\(.accepted) \(.duplicates)"')" "resent batch"
  s_expect 400 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 2, \"train_loss\": 1}, {\"step\": -1, \"val_loss\": 2}]}"
  assert_contains "$BODY" "points[1].step"
  s_expect 400 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": [{\"step\": 4611686018427387904, \"train_loss\": 1}]}"
  assert_contains "$BODY" "points[0].step: must be at most 2^40"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=val"
  assert_eq "0:5.5:0 5:4.9:320" "$(s_json '[.points[]|"\(.step):\(.value):\(.tokens)"]|join(" ")')" "val curve with tokens"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=train&since=0"
  assert_eq "1" "$(s_json '[.points[].step]|join(" ")')" "incremental since=0"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=train&format=csv"
  assert_contains "$BODY" "step,value,tokens,lr,tok_per_s,attempt"
  assert_eq 3 "$(echo "$BODY" | wc -l)" "csv lines"
  # a page of the curve: JSON "more", the CSV's X-Prism-More header; since= the last step goes on
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=val&limit=1"
  assert_eq "1 true 0" "$(s_json '"\(.points|length) \(.more) \(.last_step)"')" "a curve's first page of 1"
  s_expect 200 GET "/api/v1/jobs/$JOB/metrics?kind=val&limit=1&since=0"
  assert_eq "1 false 5" "$(s_json '"\(.points|length) \(.more) \(.last_step)"')" "its last page"
  local hdr; hdr=$(curl -s -D - -o /dev/null "$URL/api/v1/jobs/$JOB/metrics?kind=val&limit=1&format=csv" -H "Authorization: Bearer $AT")
  assert_contains "$hdr" "X-Prism-More: true"
  hdr=$(curl -s -D - -o /dev/null "$URL/api/v1/jobs/$JOB/metrics?kind=val&format=csv" -H "Authorization: Bearer $AT")
  case "$hdr" in *X-Prism-More*) fail "the whole curve in one page says more: $hdr";; esac
  s_expect 200 GET "/api/v1/jobs/$JOB"
  assert_eq "1 5.2" "$(s_json '"\(.step) \(.last_loss)"')" "progress from metrics"
  s_complete "$JOB" "$TOKEN" 4.25 '[1.5, 2.5, 3.5, 4.5]'
  s_complete "$JOB" "$TOKEN" 4.25 '[1.5, 2.5, 3.5, 4.5]'
  assert_eq done "$(s_json .state)" "second complete is a 200"
  s_expect 409 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"late\", \"retryable\": true}"
  s_expect 409 POST "/api/v1/jobs/$JOB/metrics" "{\"lease_token\": \"$TOKEN\", \"points\": $pts}"
  assert_eq 1 "$(sqlite3 "$DB" "SELECT count(*) FROM results WHERE job_id = $JOB")" "one result row"
  assert_eq 4 "$(sqlite3 "$DB" "SELECT count(*) FROM metrics WHERE job_id = $JOB")" "metric rows"
  # fail: retryable goes back to queued, repeated fail is idempotent, not retryable fails
  s_lease "$w"; local j2=$JOB t2=$TOKEN
  s_expect 200 POST "/api/v1/jobs/$j2/fail" "{\"lease_token\": \"$t2\", \"error\": \"CUDA OOM\", \"retryable\": true}"
  assert_eq queued "$(s_json .state)" "retryable fail"
  s_expect 200 POST "/api/v1/jobs/$j2/fail" "{\"lease_token\": \"$t2\", \"error\": \"CUDA OOM\", \"retryable\": true}"
  assert_eq queued "$(s_json .state)" "repeated fail"
  s_lease "$w"; assert_eq "$j2 2" "$JOB $ATTEMPT" "re-leased with attempt 2"
  s_expect 200 POST "/api/v1/jobs/$j2/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"loss is NaN at step 3\", \"retryable\": false}"
  assert_eq failed "$(s_json .state)" "not retryable"
  s_expect 200 GET "/api/v1/jobs/$j2"
  assert_eq "loss is NaN at step 3" "$(s_json .last_error)" "error kept"
}

# Cancel a leased job: the worker's next heartbeat gets 409 "cancelled"; done jobs cannot be cancelled;
# a cancelled job can be requeued. Admin routes refuse the worker token.
t_cancel_and_requeue() {
  s_setup
  s_spec "$D/s.json" cancel '["4,4,4,4"]' '[1, 2]'
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"; local j=$JOB t=$TOKEN
  s_expect 401 POST "/api/v1/jobs/$j/cancel" '{}' "$WT"
  s_expect 200 POST "/api/v1/jobs/$j/cancel" '{}' "$AT"
  assert_eq cancelled "$(s_json .state)" "cancel"
  s_expect 200 POST "/api/v1/jobs/$j/cancel" '{}' "$AT"
  s_expect 409 POST "/api/v1/jobs/$j/heartbeat" "{\"lease_token\": \"$t\"}"
  assert_eq cancelled "$(s_json .state)" "heartbeat after cancel"
  s_expect 409 POST "/api/v1/jobs/$j/complete" "{\"lease_token\": \"$t\", \"result\": {\"val_loss\": 1}}"
  s_lease "$w"; local j2=$JOB
  s_complete "$j2" "$TOKEN" 3.0
  s_expect 409 POST "/api/v1/jobs/$j2/cancel" '{}' "$AT"
  assert_contains "$BODY" "done"
  s_expect 200 POST "/api/v1/jobs/$j/requeue" '{}' "$AT"
  s_lease "$w"; assert_eq "$j 2" "$JOB $ATTEMPT" "requeued job leased again"
  s_expect 409 POST "/api/v1/jobs/$j2/requeue" '{}' "$AT"
  s_expect 404 POST "/api/v1/jobs/424242/cancel" '{}' "$AT"
}

# Tokens: missing or wrong → 401 on worker and admin routes; read routes public on loopback only.
t_auth_401() {
  s_setup
  s_server
  s_expect 401 POST /api/v1/workers/register '{"name": "x"}' -
  assert_contains "$BODY" "Bearer"
  assert_contains "$(curl -s -o /dev/null -D - -X POST "$URL/api/v1/lease")" "WWW-Authenticate: Bearer"
  assert_contains "$BODY" "token required"
  s_expect 401 POST /api/v1/workers/register '{"name": "x"}' "wrongwrongwrongwrong"
  assert_contains "$BODY" "token refused"          # a wrong token is not reported as a missing one
  assert_contains "$BODY" "worker-token"
  s_expect 401 POST /api/v1/lease '{"worker_id": 1}' "$WT$WT"
  s_expect 401 POST /api/v1/sweeps '{}' "$WT"
  assert_contains "$BODY" "the worker token is not enough"
  s_expect 401 POST /api/v1/sweeps '{}' "wrongwrongwrongwrong"
  assert_contains "$BODY" "admin token refused"
  s_expect 200 POST /api/v1/workers/register '{"name": "x"}' "$AT"
  s_expect 200 GET /api/v1/sweeps "" -
  [ "$(stat -c %a "$DB.tokens")" = 600 ] || fail "token file mode $(stat -c %a "$DB.tokens")"
  [ "$(stat -c %a "$DB.worker-token")" = 600 ] || fail "worker token file mode"
  assert_eq "$WT" "$(cat "$DB.worker-token")" "bare worker token file"
  kill "$SPID"; wait "$SPID" 2>/dev/null
  # not on loopback: read routes need a token; a --token-file is used as given
  printf 'worker_token=%s\nadmin_token=%s\n' 0123456789abcdef0123 fedcba9876543210fedc >"$D/tok"
  PORT=$(free_port); URL="http://127.0.0.1:$PORT"
  "$(bin prism-sweep)" serve --db "$DB" --listen "0.0.0.0:$PORT" --token-file "$D/tok" 2>>"$D/server.log" &
  SPID=$!; S_PIDS+=("$SPID"); s_wait_up
  s_expect 401 GET /api/v1/sweeps "" -
  s_expect 200 GET /api/v1/sweeps "" 0123456789abcdef0123
  s_expect 401 POST /api/v1/sweeps '{}' 0123456789abcdef0123
  s_expect 200 GET /healthz "" -
}

# Caps: body, headers, URL, JSON depth → 413; malformed JSON, bad HTTP, unknown routes → 4xx; the server
# keeps serving throughout.
t_caps_malformed_unknown() {
  s_setup
  s_server
  head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$D/big"
  CODE=$(curl -s -o "$D/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $WT" --data-binary @"$D/big" "$URL/api/v1/lease")
  assert_eq 413 "$CODE" "9 MiB body"
  assert_contains "$(cat "$D/resp")" '"error"'
  CODE=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "$URL/healthz")
  assert_eq 413 "$CODE" "20 KB header"
  CODE=$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/sweeps?x=$(head -c 5000 /dev/zero | tr '\0' a)")
  assert_eq 413 "$CODE" "5 KB URL"
  s_expect 413 POST /api/v1/lease "{\"a\": $(printf '[%.0s' $(seq 40))1$(printf ']%.0s' $(seq 40))}"
  s_expect 400 POST /api/v1/workers/register '{"name": "x",'
  assert_contains "$BODY" "malformed JSON"
  s_expect 400 POST /api/v1/workers/register '[1, 2]'
  s_expect 400 POST /api/v1/workers/register '{"name": 5}'
  assert_contains "$BODY" "name: must be a string"
  s_expect 400 POST /api/v1/lease '{"worker_id": "one"}'
  s_expect 404 GET /api/v1/nope
  s_expect 404 GET /api/v2/sweeps
  s_expect 405 GET /api/v1/lease
  s_expect 405 DELETE /api/v1/sweeps
  assert_contains "$(curl -s -o /dev/null -D - -X DELETE "$URL/api/v1/sweeps")" "Allow: GET, HEAD, POST"
  assert_contains "$(curl -s -o /dev/null -D - "$URL/api/v1/lease")" "Allow: POST"
  s_expect 404 GET /api/v1/jobs/77
  s_expect 404 GET /api/v1/sweeps/77/leaderboard
  s_expect 400 GET "/api/v1/jobs/1/metrics?since=abc"
  # garbage on the socket: 400 and the connection closes; the server is fine
  local raw; raw=$(printf 'GARBAGE \x01\x02 HTTP/9\r\n\r\n' | timeout 5 /usr/bin/python3 -c '
import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read())
print(s.recv(4096).decode(errors="replace").split("\r\n")[0])' "$PORT")
  assert_contains "$raw" "400"
  s_expect 200 GET /healthz
  s_expect 200 GET /metrics
  assert_contains "$BODY" 'prism_http_requests_total{code="413"}'
  assert_contains "$BODY" 'prism_jobs{state="queued"} 0'
}

# A request trickling in is cut at --request-timeout with 408; keep-alive serves several requests on one
# connection; "Expect: 100-continue" is answered before the body.
t_slow_request_timeout_and_keepalive() {
  s_setup
  s_server --request-timeout 0.5
  local out; out=$(timeout 10 /usr/bin/python3 -c '
import socket,sys,time
s=socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
time.sleep(1.0)
print(s.recv(4096).decode().split("\r\n")[0])
k=socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n=0
for i in range(3):
    k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    d=b""
    while b"}" not in d: d+=k.recv(4096)
    n+=d.startswith(b"HTTP/1.1 200")
print("keepalive", n)
e=socket.create_connection(("127.0.0.1", int(sys.argv[1])))
e.sendall(b"POST /api/v1/lease HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
print("expect:", e.recv(4096).decode().split("\r\n")[0])' "$PORT")
  assert_contains "$out" "408"
  assert_contains "$out" "keepalive 3"
  assert_contains "$out" "expect: HTTP/1.1 100 Continue"
}

# Static files only from web/, right types; traversal refused; Chart.js from Debian at a fixed URL.
t_static_files_and_traversal() {
  s_setup
  mkdir -p "$D/web/js" "$D/secret"
  echo '<!doctype html><title>t</title>' >"$D/web/index.html"
  echo 'console.log(1)' >"$D/web/js/app.js"
  echo 'TOPSECRET' >"$D/secret/s.txt"
  ln -s "$D/secret/s.txt" "$D/web/link.txt"
  s_server --web "$D/web"
  CODE=$(curl -s -o "$D/r" -w '%{http_code} %{content_type}' "$URL/")
  assert_eq "200 text/html; charset=utf-8" "$CODE" "index"
  CODE=$(curl -s -o "$D/r" -w '%{http_code} %{content_type}' "$URL/js/app.js")
  assert_eq "200 text/javascript; charset=utf-8" "$CODE" "js"
  local p
  for p in "/../secret/s.txt" "/%2e%2e/secret/s.txt" "/js/%2e%2e/%2e%2e/secret/s.txt" "/link.txt" "/..%2fsecret%2fs.txt" \
           "/vendor/chart.js/..%2f..%2f..%2fetc%2fpasswd" "/%2fetc%2fpasswd"; do
    CODE=$(curl -s --path-as-is -o "$D/r" -w '%{http_code}' "$URL$p")
    case "$CODE" in 4*) ;; *) fail "$p: HTTP $CODE";; esac
    grep -q TOPSECRET "$D/r" && fail "$p leaked the file"
    grep -q 'root:' "$D/r" && fail "$p leaked /etc/passwd"
  done
  s_expect 404 GET /nope.html
  if [ -f /usr/share/javascript/chart.js/chart.min.js ]; then
    CODE=$(curl -s -o "$D/r" -w '%{http_code} %{content_type}' "$URL/vendor/chart.js/chart.umd.js")
    assert_eq "200 text/javascript; charset=utf-8" "$CODE" "chart.js"
    grep -q 'Chart.js v' "$D/r" || fail "not Chart.js"
  fi
  s_expect 200 GET /healthz
}

# kill -9 right after acknowledged writes, restart: every acknowledged write is there.
t_kill9_after_ack_then_restart() {
  s_setup
  s_spec "$D/s.json" dur '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1, 2]' 200
  s_create "$D/s.json" >/dev/null
  s_server --lease-ttl 60
  local w; w=$(s_register w1)
  s_lease "$w"; local j1=$JOB t1=$TOKEN
  local pts; pts=$(seq 0 199 | awk 'BEGIN{printf "["} {printf "%s{\"step\": %d, \"train_loss\": %.3f}", (NR>1?",":""), $1, 6-$1/100} END{printf "]"}')
  s_expect 200 POST "/api/v1/jobs/$j1/metrics" "{\"lease_token\": \"$t1\", \"points\": $pts}"
  s_expect 200 POST "/api/v1/jobs/$j1/checkpoint" "{\"lease_token\": \"$t1\", \"path\": \"/ck/job-$j1-a1/ckpt_150.bin\", \"step\": 150}"
  s_complete "$j1" "$t1" 3.75
  s_lease "$w"; local j2=$JOB t2=$TOKEN
  s_expect 200 POST "/api/v1/jobs/$j2/cancel" '{}' "$AT"
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  s_server --lease-ttl 60
  s_expect 200 GET "/api/v1/jobs/$j1"
  assert_eq "done 3.75 150 200" "$(s_json '"\(.state) \(.val_loss) \(.checkpoint_step) \(.step)"')" "job 1 after restart"
  s_expect 200 GET "/api/v1/jobs/$j1/metrics?kind=train"
  assert_eq 200 "$(s_json '.points|length')" "metric points after restart"
  s_expect 200 GET "/api/v1/jobs/$j2"
  assert_eq cancelled "$(s_json .state)" "cancel after restart"
  s_expect 200 GET /api/v1/workers
  assert_eq w1 "$(s_json '.workers[0].name')" "worker after restart"
  s_complete "$j1" "$t1" 3.75   # idempotent across the restart too
  assert_eq ok "$(sqlite3 "$DB" 'PRAGMA integrity_check')" "integrity"
}

# One server per database; SIGTERM: the server stops cleanly (exit 0) and the database is consistent.
t_sigterm_graceful() {
  s_setup
  s_spec "$D/s.json" term '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"
  local rc2=0 out2; out2=$("$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$(free_port)" 2>&1) || rc2=$?
  assert_eq 2 "$rc2" "a second server on the same database"
  assert_contains "$out2" "already served by another prism-sweep serve (pid $SPID)"
  kill -TERM "$SPID"
  local rc=0; wait "$SPID" || rc=$?
  assert_eq 0 "$rc" "exit status after SIGTERM: $(tail -n 3 "$D/server.log")"
  assert_contains "$(cat "$D/server.log")" "stopped cleanly"
  assert_eq leased "$(sqlite3 "$DB" "SELECT state FROM jobs WHERE id = $JOB")" "lease kept"
}

# Locks that do not work are named, not mistaken for a live server (issue #44): with ENOLCK (an NFS mount without
# its lock daemon) serve exits 2 saying the filesystem gives no locks (it said "already served by pid X", a dead pid);
# with no-op locks (every lock "succeeds") a second server on a served database is refused, naming the first and why,
# before it writes anything; a lock held by a process the text does not name says so; the text names host and boot.
t_locks_that_do_not_work_are_named() {
  s_setup
  s_spec "$D/s.json" locks '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  local shim; shim="$(cd "$PRISM_BUILD" && pwd)/tests/liblocks.so"
  [ -f "$shim" ] || fail "no $shim (make tests builds it)"
  echo "999999" > "$DB.lock"   # a dead pid, as an earlier server's kill -9 leaves it
  local rc=0 out; out=$(PRISM_SHIM_LOCKS=enolck LD_PRELOAD="$shim" timeout 10 "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$(free_port)" 2>&1) || rc=$?
  assert_eq 2 "$rc" "serve with ENOLCK ($out)"
  assert_contains "$out" "No locks available: this filesystem gives no file locks"
  case "$out" in *"already served"*) fail "ENOLCK reported as a live server: $out";; esac
  s_server
  assert_eq "$SPID $(hostname | tr ' ' _) $(cat /proc/sys/kernel/random/boot_id)" "$(cat "$DB.lock")" "the lock's text"
  local before; before=$(sqlite3 "$DB" 'SELECT count(*) FROM workers')
  rc=0; out=$(PRISM_SHIM_LOCKS=noop LD_PRELOAD="$shim" timeout 10 "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$(free_port)" 2>&1) || rc=$?
  assert_eq 2 "$rc" "a second server where locks do nothing ($out)"
  assert_contains "$out" "was locked at once, yet the server that last locked it (pid $SPID) still runs on this host"
  assert_contains "$out" "exclude nothing"
  assert_eq "$SPID $(hostname | tr ' ' _) $(cat /proc/sys/kernel/random/boot_id)" "$(cat "$DB.lock")" "the first server's text kept"
  s_expect 200 GET /healthz
  assert_eq "$before" "$(sqlite3 "$DB" 'SELECT count(*) FROM workers')" "nothing written by the refused server"
  # the lock held by a process that is not the one its text names (here: the text rewritten)
  echo "999999 $(hostname | tr ' ' _) $(cat /proc/sys/kernel/random/boot_id)" > "$DB.lock"
  rc=0; out=$(timeout 10 "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$(free_port)" 2>&1) || rc=$?
  assert_eq 2 "$rc" "a held lock whose text names a dead pid ($out)"
  assert_contains "$out" "the server it names (pid 999999) no longer runs here"
  echo "4242 otherhost 0000" > "$DB.lock"
  rc=0; out=$(timeout 10 "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$(free_port)" 2>&1) || rc=$?
  assert_contains "$out" "pid 4242 on host otherhost"
}

# create through another name of a served database (a hard link: its own WAL, which the server never reads and a
# later open would replay over newer data) is refused before anything is written; through the server's own path,
# or a symlink to it (SQLite resolves it: the same WAL), it works (issue #44, "a stale replay").
t_create_through_another_name_of_a_served_database_is_refused() {
  s_setup
  s_spec "$D/s.json" first '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  ln "$DB" "$D/hard.db"
  ln -s "$DB" "$D/sym.db"
  s_spec "$D/t.json" second '["4,4,4,4"]' '[1]'
  local rc=0 out; out=$("$(bin prism-sweep)" create "$D/t.json" --db "$D/hard.db" 2>&1) || rc=$?
  assert_eq 2 "$rc" "create through a hard link of the served database ($out)"
  assert_contains "$out" "is being served by prism-sweep serve under another name"
  [ ! -e "$D/hard.db-wal" ] || fail "create wrote a WAL of its own beside the hard link"
  "$(bin prism-sweep)" create "$D/t.json" --db "$D/sym.db" >/dev/null || fail "create through a symlink to the served path"
  s_spec "$D/u.json" third '["4,4,4,4"]' '[1]'
  "$(bin prism-sweep)" create "$D/u.json" --db "$DB" >/dev/null || fail "create through the served path"
  s_expect 200 GET /api/v1/sweeps
  assert_eq "first second third" "$(echo "$BODY" | jq -r '[.sweeps[].name] | sort | join(" ")')" "the server sees every sweep"
}

# One server per database file, whatever path names it: a second serve through a hard link or a symlink to
# the database exits 2 naming the cause (two writers corrupted it); the first keeps serving and the file is
# intact; once the first stops, the link path can be served.
t_one_server_per_database_file() {
  s_setup
  s_spec "$D/s.json" link '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  mkdir -p "$D/other"
  ln "$DB" "$D/other/hard.db"
  ln -s "$DB" "$D/other/sym.db"
  local p rc2 out2
  for p in "$D/other/hard.db" "$D/other/sym.db"; do
    rc2=0; out2=$(timeout 10 "$(bin prism-sweep)" serve --db "$p" --listen "127.0.0.1:$(free_port)" --token-file "$DB.tokens" 2>&1) || rc2=$?
    assert_eq 2 "$rc2" "a second server through $p ($out2)"
    assert_contains "$out2" "already served by another prism-sweep serve"
  done
  assert_contains "$out2" "hard link or a symlink"
  local w; w=$(s_register w1)
  s_lease "$w"
  assert_eq 1 "$JOB" "the first server still serves"
  kill -TERM "$SPID"; wait "$SPID" 2>/dev/null
  assert_eq ok "$(sqlite3 "$DB" 'PRAGMA integrity_check')" "integrity"
  local tokens="$DB.tokens"
  DB="$D/other/hard.db"
  s_server --token-file "$tokens"
  WT=$(sed -n 's/^worker_token=//p' "$tokens")
  s_expect 200 GET /api/v1/jobs/1
}

# A --listen port another process listens on: exit 2 before anything is created (no database, no token files).
t_port_in_use_creates_nothing() {
  s_setup
  local port; port=$(free_port)
  /usr/bin/python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(30)' "$port" &
  local holder=$!; S_PIDS+=("$holder")
  local i; for i in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  mkdir -p "$D/new"
  local rc=0 out; out=$(timeout 10 "$(bin prism-sweep)" serve --db "$D/new/p.db" --listen "127.0.0.1:$port" 2>&1) || rc=$?
  kill "$holder" 2>/dev/null
  assert_eq 2 "$rc" "serve on a port in use ($out)"
  assert_contains "$out" "--listen 127.0.0.1:$port: Address already in use (is another server running? pick another --listen); nothing was created"
  assert_eq "" "$(ls "$D/new")" "files created before the refusal"
}

# POST /api/v1/sweeps creates a sweep from a spec (admin), idempotently; bad specs are 400 naming the path.
t_post_sweep() {
  s_setup
  s_server
  s_spec "$D/s.json" posted '["4,4,4,4", "2,2,4,4"]' '[1, 2, 3]'
  s_expect 201 POST /api/v1/sweeps "$(cat "$D/s.json")" "$AT"
  assert_eq "6 true" "$(s_json '"\(.jobs) \(.created)"')" "created"
  local sid; sid=$(s_json .sweep_id)
  s_expect 200 POST /api/v1/sweeps "$(cat "$D/s.json")" "$AT"
  assert_eq "6 false" "$(s_json '"\(.jobs) \(.created)"')" "same spec again"
  s_expect 400 POST /api/v1/sweeps "$(sed 's/"lr": 0.001/"lr": -1/' "$D/s.json")" "$AT"
  assert_contains "$BODY" "train.lr"
  s_expect 200 GET "/api/v1/sweeps/$sid"
  assert_eq "6 6 posted" "$(s_json '"\(.counts.queued) \(.total) \(.spec.name)"')" "sweep view"
}
# More connections than --max-conns, all of which have shown a token: the extra one gets 503 and closes; the
# others keep working. (A connection without a token would be replaced instead: test_conn_limits.sh.)
t_connection_cap() {
  s_setup
  s_server --max-conns 2
  local out; out=$(timeout 10 /usr/bin/python3 -c '
import socket,sys,time
port=int(sys.argv[1])
get=b"GET /api/v1/sweeps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % sys.argv[2].encode()
a=socket.create_connection(("127.0.0.1", port)); a.sendall(get); a.recv(4096)
b=socket.create_connection(("127.0.0.1", port)); b.sendall(get); b.recv(4096)
time.sleep(0.2)
c=socket.create_connection(("127.0.0.1", port))
print("third:", c.recv(4096).decode().split("\r\n")[0])
a.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
print("first:", a.recv(4096).decode().split("\r\n")[0])' "$PORT" "$WT")
  assert_contains "$out" "third: HTTP/1.1 503"
  assert_contains "$out" "first: HTTP/1.1 200"
}
# kill -9 in the middle of a stream of writes from 4 clients: every point whose batch got a 2xx is in the
# database after the restart.
t_kill9_mid_stream_loses_nothing_acknowledged() {
  s_setup
  s_spec "$D/s.json" stream '["4,4,4,4", "2,2,4,4", "1,1,4,4", "1,2,4,4"]' '[1]' 100000000
  s_create "$D/s.json" >/dev/null
  s_server --lease-ttl 60
  local w k; w=$(s_register w1)
  for k in 1 2 3 4; do s_lease "$w"; echo "$JOB $TOKEN" >>"$D/leases"; done
  /usr/bin/python3 - "$PORT" "$WT" "$D/leases" "$D/acked" <<'EOF2' &
import http.client, json, sys, threading
port, tok, leases, acked = int(sys.argv[1]), sys.argv[2], open(sys.argv[3]).read().split("\n"), sys.argv[4]
lock = threading.Lock(); out = open(acked, "a")
def run(job, token):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); step = 0
    while True:
        pts = [{"step": step + i, "train_loss": 1.0} for i in range(10)]
        try:
            c.request("POST", f"/api/v1/jobs/{job}/metrics", json.dumps({"lease_token": token, "points": pts}),
                      {"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
            r = c.getresponse(); r.read()
        except Exception:
            return
        if r.status == 200:
            with lock: out.write(f"{job} {step + 9}\n"); out.flush()
        step += 10
ts = [threading.Thread(target=run, args=l.split()) for l in leases if l.strip()]
[t.start() for t in ts]; [t.join() for t in ts]
EOF2
  local cpid=$!
  sleep 0.8
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  wait "$cpid" 2>/dev/null
  local n; n=$(wc -l <"$D/acked")
  [ "$n" -gt 4 ] || fail "too few acknowledged batches before the kill: $n"
  local missing; missing=$(/usr/bin/python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); miss = 0
for line in open(sys.argv[2]):
    job, last = map(int, line.split())
    miss += db.execute("SELECT count(*) FROM metrics WHERE job_id = ? AND step BETWEEN ? AND ? AND kind = ?",
                       (job, last - 9, last, "train")).fetchone()[0] != 10
print(miss)' "$DB" "$D/acked")
  assert_eq 0 "$missing" "acknowledged batches missing after kill -9 (of $n)"
}
# A restart after a downtime longer than the TTL does not expire running leases: they get one more TTL.
t_restart_grace_for_live_leases() {
  s_setup
  s_spec "$D/s.json" grace '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server --lease-ttl 1
  local w; w=$(s_register w1)
  s_lease "$w"
  kill -9 "$SPID"; wait "$SPID" 2>/dev/null
  sleep 1.5
  s_server --lease-ttl 1
  sleep 0.4   # the expiry timer (every 0.25 s here) has run
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\": \"$TOKEN\"}"
  assert_contains "$(cat "$D/server.log")" "extended by one TTL"
}
# Across sweeps: the sweep given a higher priority (admin) leases first; its queued jobs carry it.
t_sweep_priority_across_sweeps() {
  s_setup
  s_spec "$D/a.json" first '["1,1,4,4"]' '[1]'
  s_spec "$D/b.json" second '["2,2,4,4"]' '[1]'
  local a b; a=$(s_create "$D/a.json"); b=$(s_create "$D/b.json")
  s_server
  local w; w=$(s_register w1)
  s_expect 200 POST "/api/v1/sweeps/$b/priority" '{"priority": 3}' "$AT"
  s_lease "$w"; assert_eq "$b" "$(s_json .sweep_id)" "higher-priority sweep first"
  s_lease "$w"; assert_eq "$b" "$(s_json .sweep_id)" "and all its jobs"
  s_lease "$w"; assert_eq "$a" "$(s_json .sweep_id)" "then the other sweep"
  s_expect 404 POST /api/v1/sweeps/99/pause '{}' "$AT"
  s_expect 400 POST "/api/v1/sweeps/$a/priority" '{"priority": "high"}' "$AT"
}
# A client that pipelines requests and never reads cannot make the server buffer unbounded answers: reading
# pauses at HTTP_MAX_OUT and resumes as the client drains; every request is still answered, in order.
t_unread_pipelined_answers_are_capped() {
  s_setup
  mkdir -p "$D/web"
  head -c 1000000 /dev/urandom | base64 -w 100 >"$D/web/big.txt"
  s_server --web "$D/web"
  local out; out=$(timeout 60 /usr/bin/python3 -c '
import socket, sys, time
port, pid, n = int(sys.argv[1]), sys.argv[2], 200
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /big.txt HTTP/1.1\r\nHost: x\r\n\r\n" * n)
time.sleep(1.5)
hwm = [int(l.split()[1]) for l in open("/proc/%s/status" % pid) if l.startswith("VmHWM")][0]
tag = b"HTTP/1.1 200 OK\r\n"; cnt = 0; tail = b""
while cnt < n:
    d = s.recv(1 << 20)
    if not d: break
    buf = tail + d; cnt += buf.count(tag); tail = buf[-(len(tag) - 1):]
print("hwm_mb", hwm // 1024, "answers", cnt)' "$PORT" "$SPID")
  assert_contains "$out" "answers 200"
  local mb; mb=$(echo "$out" | sed -n 's/.*hwm_mb \([0-9]*\).*/\1/p')
  [ -n "$mb" ] && [ "$mb" -lt 100 ] || fail "server peak RSS ${mb} MB while 270 MB of answers were unread: $out"
  s_expect 200 GET /healthz
}
# A --token-file holding only a bare worker token: the admin token made for the run is written to a private
# file (never printed), and works.
t_bare_token_file_admin_token_shown() {
  s_setup
  echo 0123456789abcdef0123 >"$D/tok"
  PORT=$(free_port); URL="http://127.0.0.1:$PORT"
  "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$PORT" --token-file "$D/tok" 2>>"$D/server.log" &
  SPID=$!; S_PIDS+=("$SPID"); s_wait_up
  assert_contains "$(cat "$D/server.log")" "the admin token for this run only is in $DB.admin-token (mode 0600)"
  local at; at=$(cat "$DB.admin-token")
  [ ${#at} = 64 ] || fail "admin token not in $DB.admin-token: $(cat "$D/server.log")"
  assert_eq 600 "$(stat -c %a "$DB.admin-token")" "admin token file mode"
  case "$(cat "$D/server.log")" in *"$at"*) fail "the admin token was printed: $(cat "$D/server.log")";; esac
  s_expect 401 POST /api/v1/sweeps/1/pause '{}' 0123456789abcdef0123
  s_expect 404 POST /api/v1/sweeps/1/pause '{}' "$at"
  s_expect 200 POST /api/v1/workers/register '{"name": "w"}' 0123456789abcdef0123
}
# A running, idle server does not hold SQLite's write lock: `prism-sweep create` on its database succeeds
# (no "database is locked") and the server leases the new jobs.
t_create_while_serving() {
  s_setup
  s_server --lease-ttl 2
  sleep 1.2   # several expiry ticks
  s_spec "$D/s.json" live '["1,1,4,4"]' '[1]'
  local out rc=0; out=$("$(bin prism-sweep)" create "$D/s.json" --db "$DB" 2>&1) || rc=$?
  assert_eq 0 "$rc" "create while serving: $out"
  local w; w=$(s_register w1)
  s_lease "$w"; assert_eq 1 "$ATTEMPT" "job created by the CLI leased"
}
# A long non-ASCII error is cut at a character boundary: the job view still shows it.
t_long_utf8_error_kept() {
  s_setup
  s_spec "$D/s.json" utf '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"
  local e; e=$(printf 'é%.0s' $(seq 1 1500))
  s_expect 200 POST "/api/v1/jobs/$JOB/fail" "{\"lease_token\": \"$TOKEN\", \"error\": \"$e\", \"retryable\": false}"
  s_expect 200 GET "/api/v1/jobs/$JOB"
  local n; n=$(s_json '.last_error | length')
  [ "$n" -gt 900 ] && [ "$n" -lt 1500 ] || fail "last_error after a long UTF-8 error: $(s_json .last_error | head -c 80) (length $n)"
}
# /metrics reports every job state (paused and pruned too), and GET /api/v1/sweeps hands the page the same
# vocabulary (job_states in common/jobstate.h's order, halving_states, terminal_states, active_states), so the page
# spells no state itself.
t_every_job_state_in_metrics_and_api() {
  s_setup; s_server
  s_expect 200 GET /metrics
  local st
  for st in queued leased done failed cancelled paused pruned; do
    assert_contains "$BODY" "prism_jobs{state=\"$st\"} 0"
  done
  s_expect 200 GET /api/v1/sweeps
  assert_eq "queued leased done failed cancelled paused pruned" "$(s_json '.job_states | join(" ")')" "job_states"
  assert_eq "paused pruned" "$(s_json '.halving_states | join(" ")')" "halving_states"
  assert_eq "done failed cancelled pruned" "$(s_json '.terminal_states | join(" ")')" "terminal_states"
  assert_eq "queued leased paused" "$(s_json '.active_states | join(" ")')" "active_states"
}
# The loop's own instruments: turns by busy time (a Prometheus histogram: cumulative buckets, +Inf = count), the
# most CPU one turn used, and each route's time on the loop (total and longest) — what shows a request holding it.
t_loop_turns_and_route_time_in_metrics() {
  s_setup
  s_spec "$D/s.json" turns '["4,4,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  local w; w=$(s_register w1)
  s_lease "$w"
  s_expect 200 POST "/api/v1/jobs/$JOB/heartbeat" "{\"lease_token\":\"$TOKEN\",\"step\":1,\"loss\":4.0}"
  s_expect 200 GET /metrics
  echo "$BODY" | grep -E '^prism_(loop_turn|route_loop)' | head -n 20
  local prev=0 n c
  for le in 0.001 0.005 0.01 0.025 0.05 0.1 0.25 1 5 +Inf; do
    n=$(echo "$BODY" | sed -n "s/^prism_loop_turn_seconds_bucket{le=\"$le\"} //p")
    [ -n "$n" ] || fail "no bucket le=$le"
    [ "$n" -ge "$prev" ] || fail "bucket le=$le ($n) below the one before ($prev): not cumulative"
    prev=$n
  done
  c=$(echo "$BODY" | sed -n 's/^prism_loop_turn_seconds_count //p')
  assert_eq "$prev" "$c" "the +Inf bucket is the count"
  [ "$c" -ge 3 ] || fail "only $c turns counted after four requests"
  assert_contains "$BODY" "prism_loop_turn_seconds_max "
  assert_contains "$BODY" "prism_loop_turn_cpu_seconds_max "
  local t m
  t=$(echo "$BODY" | sed -n 's/^prism_route_loop_seconds_total{route="heartbeat"} //p')
  m=$(echo "$BODY" | sed -n 's/^prism_route_loop_seconds_max{route="heartbeat"} //p')
  [ -n "$t" ] && [ -n "$m" ] || fail "no loop time for the heartbeat route"
  awk -v t="$t" -v m="$m" 'BEGIN { exit !(m > 0 && m <= t && t < 5) }' || fail "heartbeat loop time: total $t, max $m"
}
# Without --web, the page comes from ./web, else from the checkout the binary was built in; a binary with
# neither serves the API alone (404 for /).
t_default_web_folder_beside_the_binary() {
  s_setup
  cd "$D" && s_server && cd "$PRISM_ROOT"
  grep -q "web /.*/\.\./web)" "$D/server.log" || fail "web folder not found beside the binary: $(cat "$D/server.log")"
  s_expect 200 GET / "" -
  assert_contains "$BODY" "prism-sweep leaderboard page"
  mkdir -p "$D/other/bin" && cp "$(bin prism-sweep)" "$D/other/bin/"
  PORT=$(free_port)
  (cd "$D" && exec "$D/other/bin/prism-sweep" serve --db "$D/q.db" --listen "127.0.0.1:$PORT" 2>>"$D/server2.log") &
  SPID=$!; S_PIDS+=("$SPID")
  URL="http://127.0.0.1:$PORT"
  s_wait_up
  grep -q "web (none: no web/ here" "$D/server2.log" || fail "expected API only: $(cat "$D/server2.log")"
  s_expect 404 GET / "" -
}

# The leaderboard carries its build's ETag: a poll naming it gets 304 with no body (the page's browser revalidates:
# Cache-Control no-cache), until a completion changes the ranking (a new build, a new tag, 200 and the new counts);
# a restarted server's tags are not the old one's; a tag list, W/ and * match; /metrics counts the 304s.
t_leaderboard_etag_answers_304_until_it_changes() {
  s_setup
  s_spec "$D/s.json" etag '["4,4,4,4", "2,2,4,4"]' '[1]'
  s_create "$D/s.json" >/dev/null
  s_server
  local lb="$URL/api/v1/sweeps/1/leaderboard" h t1 t2 code
  h=$(curl -s -D - -o "$D/lb1" "$lb" -H "Authorization: Bearer $AT" | tr -d '\r')
  t1=$(echo "$h" | sed -n 's/^ETag: //p')
  [ -n "$t1" ] || fail "no ETag on the leaderboard: $h"
  assert_contains "$h" "Cache-Control: no-cache"
  local got; got=$(curl -s -D "$D/h2" -o /dev/null -w '%{size_download}' "$lb" -H "Authorization: Bearer $AT" -H "If-None-Match: $t1")
  h=$(tr -d '\r' <"$D/h2")
  assert_contains "$h" "HTTP/1.1 304 Not Modified"
  assert_contains "$h" "ETag: $t1"
  assert_eq 0 "$got" "a 304 has no body"
  case "$h" in *Content-Length*) fail "a 304 claims a length: $h";; esac
  for inm in "W/$t1" "\"x\", $t1" "*"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$lb" -H "Authorization: Bearer $AT" -H "If-None-Match: $inm")
    assert_eq 304 "$code" "If-None-Match: $inm"
  done
  code=$(curl -s -o /dev/null -w '%{http_code}' "$lb" -H "Authorization: Bearer $AT" -H "If-None-Match: \"lb-1-1\"")
  assert_eq 200 "$code" "a prefix of the tag is another tag"
  local w; w=$(s_register w1)
  s_lease "$w"
  s_complete "$JOB" "$TOKEN" 4.25
  h=$(curl -s -D - -o "$D/lb3" "$lb" -H "Authorization: Bearer $AT" -H "If-None-Match: $t1" | tr -d '\r')
  assert_contains "$h" "HTTP/1.1 200 OK"
  t2=$(echo "$h" | sed -n 's/^ETag: //p')
  [ -n "$t2" ] && [ "$t2" != "$t1" ] || fail "a changed ranking kept its tag: '$t1' -> '$t2'"
  assert_eq 1 "$(jq '[.rows[].counts.done] | add' "$D/lb3")" "the new answer shows the completion"
  s_expect 200 GET /metrics "" "$AT"
  assert_contains "$BODY" "prism_leaderboard_not_modified_total 4"
  kill "$SPID"; wait "$SPID" 2>/dev/null
  sleep 1   # the tag's nonce has one-second resolution
  s_server
  lb="$URL/api/v1/sweeps/1/leaderboard"
  code=$(curl -s -o /dev/null -w '%{http_code}' "$lb" -H "Authorization: Bearer $AT" -H "If-None-Match: $t2")
  assert_eq 200 "$code" "a restarted server's first build is not the old one's"
}

harness_main "$@"
