#!/usr/bin/env bash
# test_screened.sh — the outlier screen's jobs named on every surface and trained again (issue #37), through the
# real server: a 6-schedule × 4-seed (3 seeds: too few cells for the screen to judge) sweep with small noise where one job is +1.0 nats. The leaderboard JSON
# (top-level "screened" and each row's count), its CSV (last column), the table, `prism-sweep status` (text and
# JSON) name it; a done job the screen keeps is refused (409 naming the fix); `requeue SWEEP --state screened`
# queues exactly that job, keeps its old result (requeued_results), and the job trained again with a normal value
# leaves the screened list empty. Also the job route for a screened job.
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

SCHEDS='["1,1,4,4", "2,2,4,4", "1,4,4,4", "2,4,4,4", "1,2,4,4"]'
OUT_HEADS="2,2,4,4" OUT_SEED=22

# the val loss of (heads, seed): a schedule effect, a seed effect, a small deterministic noise; +1.0 on the outlier
loss_of() { # HEADS SEED [NORMAL]
  /usr/bin/python3 -c '
import sys, zlib
h, s = sys.argv[1], int(sys.argv[2])
import random
v = 3.3 + (zlib.crc32(h.encode()) % 100) * 1e-4 + s * 1e-3 + random.Random(zlib.crc32((h + "/" + str(s)).encode())).gauss(0, 0.002)
if h == sys.argv[3] and s == int(sys.argv[4]) and sys.argv[5] != "normal": v += 1.0
print("%.6f" % v)' "$1" "$2" "$OUT_HEADS" "$OUT_SEED" "${3:-}"
}

sc_fill() { # the sweep, every job leased and completed; OUTJ = the outlier's job id
  s_setup
  s_spec "$D/s.json" scr "$SCHEDS" '[11, 22, 33, 44]'
  SID=$(s_create "$D/s.json")
  s_server
  W=$(s_register w1)
  OUTJ=
  while :; do
    s_lease "$W"; [ -z "$JOB" ] && break
    local heads seed
    heads=$(s_json '.heads|map(tostring)|join(",")'); seed=$(s_json .seed)
    [ "$heads" = "$OUT_HEADS" ] && [ "$seed" = "$OUT_SEED" ] && OUTJ=$JOB
    s_complete "$JOB" "$TOKEN" "$(loss_of "$heads" "$seed")"
  done
  [ -n "$OUTJ" ] || fail "the outlier's job was never leased"
}

t_leaderboard_names_the_screened_job() {
  sc_fill
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  echo "$BODY" | jq -c .screened
  assert_eq 1 "$(s_json '.screened|length')" "one job screened"
  assert_eq "$OUTJ $OUT_SEED [2,2,4,4]" "$(s_json '.screened[0]|"\(.job_id) \(.seed) \(.heads|tojson)"')" "the outlier named"
  assert_eq true "$(s_json '.screened[0]|(.residual|fabs) > .threshold and (.val_loss > 4.2) and (.reason|length > 0)')" \
    "its residual beyond its threshold, its value, a reason"
  assert_eq "$(s_json '.screened[0].schedule_id')" "$(s_json '.rows[]|select(.heads==[2,2,4,4])|.schedule_id')" "its schedule"
  assert_eq "1 0" "$(s_json '"\(.rows[]|select(.heads==[2,2,4,4])|.screened) \([.rows[]|select(.heads!=[2,2,4,4])|.screened]|add)"')" \
    "per-row counts: 1 on its schedule, 0 elsewhere"
  assert_eq 1 "$(s_json .analysis.screened)" "analysis count unchanged"
  curl -s -o "$D/lb.csv" "$URL/api/v1/sweeps/$SID/leaderboard?format=csv"
  assert_eq screened "$(head -n1 "$D/lb.csv" | awk -F, '{print $NF}')" "csv: the last column"
  assert_eq 1 "$(grep -F '"2,2,4,4"' "$D/lb.csv" | awk -F, '{print $NF}')" "csv: its schedule's count"
  assert_eq "0 0 0 0 0" "$(grep -vF '"2,2,4,4"' "$D/lb.csv" | tail -n +2 | awk -F, '{print $NF}' | xargs)" "csv: the others"
  local t; t=$("$(bin prism-sweep)" leaderboard --db "$DB" scr) || fail "cli table"
  echo "$t" | sed -n '/^screened/,$p'
  assert_contains "$t" "screened: 1 job left out of the fit"
  echo "$t" | grep -Eq "^  $OUTJ +2×2 4×2 +$OUT_SEED +4\.[0-9]{4} +[+-][0-9]" || fail "the table's screened line names job $OUTJ"
  assert_contains "$t" "prism-sweep requeue scr --state screened"
}

t_status_counts_the_screened_job() {
  sc_fill
  local out; out=$("$(bin prism-sweep)" status --db "$DB" scr) || fail "status"
  echo "$out"
  assert_contains "$out" "screened: 1 job left out of the ranking as outliers (job $OUTJ seed $OUT_SEED val_loss 4."
  assert_contains "$out" "prism-sweep requeue scr --state screened"
  out=$("$(bin prism-sweep)" status --db "$DB" scr --format json) || fail "status json"
  assert_eq 1 "$(echo "$out" | jq .screened)" "status json: screened"
  out=$("$(bin prism-sweep)" status --db "$DB") || fail "status (all)"
  assert_contains "$out" "sweep $SID scr: screened: 1 job"
  out=$("$(bin prism-sweep)" status --db "$DB" --format json) || fail "status json (all)"
  assert_eq 1 "$(echo "$out" | jq '.sweeps[0].screened')" "status json (all): screened"
}

t_requeue_screened_trains_it_again() {
  sc_fill
  local other; other=$(( OUTJ == 1 ? 2 : 1 ))
  s_expect 409 POST "/api/v1/jobs/$other/requeue" "" "$AT"
  echo "$BODY"
  assert_contains "$(s_json .error)" "job $other is done and the leaderboard's outlier screen does not leave it out"
  assert_contains "$(s_json .error)" "can be requeued"
  assert_eq done "$(s_json .state)" "409 names the state"
  local old; old=$(loss_of "$OUT_HEADS" "$OUT_SEED")
  local out; out=$("$(bin prism-sweep)" requeue scr --state screened --server "$URL" --db "$DB") || fail "requeue --state screened: $out"
  echo "$out"
  assert_contains "$out" "requeued 1 screened job of sweep scr"
  assert_eq "[$OUTJ]" "$(echo "$out" | tail -n1 | jq -c .job_ids)" "exactly the outlier requeued"
  s_expect 200 GET "/api/v1/jobs/$OUTJ"
  assert_eq "queued null" "$(s_json '"\(.state) \(.val_loss)"')" "queued, its result out of the results"
  assert_eq "$old screened" "$(/usr/bin/python3 -c '
import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT val_loss, reason FROM requeued_results WHERE job_id = ?", (int(sys.argv[2]),)).fetchall()
print("%.6f %s" % (r[0][0], "screened" if len(r) == 1 and r[0][1] else "no reason"))' "$DB" "$OUTJ")" "the old value kept durably"
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  assert_eq "0 3" "$(s_json '"\(.screened|length) \(.rows[]|select(.heads==[2,2,4,4])|.seeds_done)"')" "out of the ranking while it runs"
  s_lease "$W"
  assert_eq "$OUTJ null" "$JOB $(s_json .resume)" "leased again, from the start"
  s_complete "$JOB" "$TOKEN" "$(loss_of "$OUT_HEADS" "$OUT_SEED" normal)"
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  assert_eq "0 4 0" "$(s_json '"\(.screened|length) \(.rows[]|select(.heads==[2,2,4,4])|"\(.seeds_done) \(.screened)")"')" \
    "trained again with a normal value: nothing screened"
  out=$("$(bin prism-sweep)" requeue scr --state screened --server "$URL" --db "$DB") || fail "requeue again: $out"
  assert_contains "$out" "requeued 0 screened jobs"
}

t_job_route_requeues_a_screened_job() {
  sc_fill
  s_expect 200 POST "/api/v1/jobs/$OUTJ/requeue" "" "$AT"
  assert_eq "$OUTJ queued" "$(s_json '"\(.job_id) \(.state)"')" "the screened job requeued by id"
  s_expect 200 POST "/api/v1/jobs/$OUTJ/requeue" "" "$AT"   # already queued: nothing to do
  s_expect 400 POST "/api/v1/sweeps/$SID/requeue" '{"state": "screened", "error_like": "x"}' "$AT"
  local rc=0 out; out=$("$(bin prism-sweep)" requeue scr --state bogus --server "$URL" --db "$DB" 2>&1) || rc=$?
  assert_eq 2 "$rc" "bad --state exit"
}
harness_main "$@"
