#!/usr/bin/env bash
# test_worker.sh — the prism-worker agent's edges: SIGTERM (checkpoint, report, exit), a resume checkpoint
# this box cannot read, NaN loss, a refused token (at registration and mid-job), a job the server no longer
# has, bad flags, and the live TTY display.
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

# sigterm_then_resume NAME CHECKPOINT_EVERY: a worker trains job 1 past step 50 and gets SIGTERM; it must exit 0
# and hand the job back at once (lease TTL 30 s) with a readable reported checkpoint at step $K; a second
# worker then finishes the job, resuming from $K. Leaves $K, $SID and $PREEMPTED_LOG for the caller.
sigterm_then_resume() {
  w_setup
  w_server --lease-ttl 30
  w_spec "$D/spec.json" "$1" '["4,4,4,4"]' '[3]' 1200 "$2"
  SID=$(w_create "$D/spec.json")
  w_worker wa; local pa=$LAST_PID
  w_wait 30 "job 1 trains" w_job_step_at_least 1 50
  kill -TERM "$pa"
  local rc=0; wait "$pa" || rc=$?
  assert_eq 0 "$rc" "agent exit status after SIGTERM"
  local j; j=$(w_get /api/v1/jobs/1)
  assert_eq queued "$(echo "$j" | w_json 'd["state"]')" "job handed back at once (lease TTL is 30 s)"
  K=$(echo "$j" | w_json 'd["checkpoint_step"]')
  [ -r "$(echo "$j" | w_json 'd["checkpoint_path"]')" ] || { w_dump; fail "reported checkpoint (step $K) is not a readable file"; }
  w_worker wb
  w_wait 60 "job done" w_all_done "$SID" 1
  grep -q "job=1 attempt=2 resuming from step $K " "$D/wb.log" || { w_dump; fail "wb did not resume from $K"; }
}

# SIGTERM mid-job: the step finishes, a checkpoint is written and reported, the job is handed back
# (fail, retryable) and the agent exits 0; the next worker resumes from that checkpoint.
t_sigterm_checkpoints_reports_and_exits() {
  sigterm_then_resume term 0
  grep -q 'event=preempted device=cpu job=1 attempt=1 retryable=1 preempted: worker wa got a stop signal at step' "$D/wa.log" \
    || { w_dump; fail "no preempted event"; }
  [ "$K" -ge 50 ] || fail "checkpoint step $K < 50"
  assert_eq "0-1199/1200/1200" "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_steps)" "train steps"
  [ -z "$(ls "$D/ckpt" 2>/dev/null)" ] || fail "checkpoints left after completion: $(ls -R "$D/ckpt")"
}

# The same with a checkpoint after every step: the stop checkpoint repeats the step of the periodic one
# just written, often while the reporter is still posting an older one; the path the server ends up
# offering must still be a readable file, and the next worker resumes from it.
t_sigterm_with_checkpoint_every_step_reports_a_readable_file() {
  sigterm_then_resume term1 1
}

w_job_step_at_least() { # JOB STEP (leased)
  local j; j=$(w_get "/api/v1/jobs/$1")
  [ "$(echo "$j" | w_json 'd["state"] == "leased" and d["step"] >= '"$2"'')" = true ]
}

# The lease offers a checkpoint this box cannot read: the job restarts from step 0 and says so.
t_unreadable_resume_restarts_from_zero() {
  w_setup
  w_server --lease-ttl 3
  w_spec "$D/spec.json" unr '["4,4,4,4"]' '[3]' 600 50
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --checkpoint-dir "$D/private-a"; local pa=$LAST_PID
  w_wait 30 "a checkpoint reported" w_ckpt_at_least 1 50
  kill -KILL "$pa"
  rm -rf "$D/private-a"      # the first box's disk is gone
  w_worker wb
  w_wait 60 "job done" w_all_done "$sid" 1
  grep -q 'event=resume-unreadable device=cpu job=1 attempt=2 checkpoint .* is not readable here .*restarting from step 0' "$D/wb.log" \
    || { w_dump; fail "wb did not say it restarts from 0"; }
  assert_eq 0 "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_json 'min(p["step"] for p in d["points"] if p["attempt"] == 2)')" "attempt 2 starts at 0"
}

# The lease offers a checkpoint that is readable but does not load (truncated): the job restarts from step 0
# and says so, rather than failing for good.
t_corrupt_resume_restarts_from_zero() {
  w_setup
  w_server --lease-ttl 3
  w_spec "$D/spec.json" cor '["4,4,4,4"]' '[3]' 600 50
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa; local pa=$LAST_PID
  w_wait 30 "a checkpoint reported" w_ckpt_at_least 1 50
  kill -KILL "$pa"
  local ck; ck=$(w_get /api/v1/jobs/1 | w_json 'd["checkpoint_path"]')
  [ -r "$ck" ] || fail "reported checkpoint $ck is not readable"
  truncate -s 2000 "$ck"
  w_worker wb
  w_wait 60 "job done" w_all_done "$sid" 1
  grep -q 'event=resume-unreadable device=cpu job=1 attempt=2 checkpoint .* does not load .*restarting from step 0' "$D/wb.log" \
    || { w_dump; fail "wb did not say it restarts from 0"; }
  assert_eq 0 "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_json 'min(p["step"] for p in d["points"] if p["attempt"] == 2)')" "attempt 2 starts at 0"
}

# A checkpoint with one flipped byte in its weights (it silently changed results, or made a NaN and a permanent
# failure) is refused by its checksum: the job restarts from step 0, saying so, and completes.
t_flipped_byte_resume_restarts_from_zero() {
  w_setup
  w_server --lease-ttl 3
  w_spec "$D/spec.json" flip '["4,4,4,4"]' '[3]' 600 50
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa; local pa=$LAST_PID
  w_wait 30 "a checkpoint reported" w_ckpt_at_least 1 50
  kill -KILL "$pa"
  local ck; ck=$(w_get /api/v1/jobs/1 | w_json 'd["checkpoint_path"]')
  [ -r "$ck" ] || fail "reported checkpoint $ck is not readable"
  /usr/bin/python3 - "$ck" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[1024 + 4 * 1000 + 2] ^= 0x40   # one byte of the 1,001st parameter
open(p, "wb").write(b)
PY
  w_worker wb
  w_wait 60 "job done" w_all_done "$sid" 1
  grep -q 'event=resume-unreadable device=cpu job=1 attempt=2 checkpoint .* does not load .*checksum mismatch.*restarting from step 0' "$D/wb.log" \
    || { w_dump; fail "wb did not refuse the flipped checkpoint and say it restarts from 0"; }
  assert_eq 0 "$(w_get "/api/v1/jobs/1/metrics?kind=train" | w_json 'min(p["step"] for p in d["points"] if p["attempt"] == 2)')" "attempt 2 starts at 0"
}

w_ckpt_at_least() { # JOB STEP
  local s; s=$(w_get "/api/v1/jobs/$1" | w_json 'd["checkpoint_step"] or 0')
  [ "$s" -ge "$2" ]
}

# A loss that becomes NaN/inf fails the job as not retryable, with the step and the value. The job starts
# from an llm.c checkpoint (model.init, relative to --data-root) whose weights hold a NaN.
t_nan_loss_fails_not_retryable() {
  w_setup
  w_server --lease-ttl 5
  w_spec "$D/spec.json" nan '["4,4,4,4"]' '[3]' 50 0
  /usr/bin/python3 - "$D" <<'EOF'
import json, struct, sys
d = sys.argv[1]
L, C, V, Vp, T = 4, 32, 64, 64, 16
n = Vp*C + T*C + L*(C + C + 3*C*C + 3*C + C*C + C + C + C + 4*C*C + 4*C + 4*C*C + C) + C + C
hdr = [20240326, 3, T, V, L, 4, C, Vp] + [0] * 248
w = [0.02] * n
w[Vp*C + 5] = float("nan")          # one position-embedding weight
open(d + "/nan-init.bin", "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%df" % n, *w))
s = json.load(open(d + "/spec.json")); s["model"]["init"] = "nan-init.bin"
json.dump(s, open(d + "/spec.json", "w"))
EOF
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa
  w_wait 30 "job failed" w_failed "$sid"
  local j; j=$(w_get /api/v1/jobs/1)
  assert_eq 1 "$(echo "$j" | w_json 'd["attempt"]')" "not retried"
  local e; e=$(echo "$j" | w_json 'd["last_error"]')
  echo "error: $e"
  assert_contains "$e" "step 0"
  echo "$e" | grep -qiE 'nan|inf' || fail "error does not name the value: $e"
  grep -q 'event=failed device=cpu job=1 attempt=1 retryable=0 ' "$D/wa.log" || { w_dump; fail "no failure event"; }
}

w_failed() { [ "$(w_count "$1" failed)" = 1 ]; }

# A CUDA device that cannot train (here: index 0 with no CUDA backend file, or, where nvcc built one, no GPU) is
# refused before the agent registers: exit 2 with the reason and the fix, nothing leased, the job stays queued.
# (A device that fails during a job is still handed back as retryable and taken out of service: agent.c.)
t_unusable_device_is_refused_before_registering() {
  command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && skip "a CUDA device is present"
  w_setup
  w_server --lease-ttl 5
  w_spec "$D/spec.json" dev '["4,4,4,4"]' '[3]' 20 0
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --devices 0; local pa=$LAST_PID
  local rc=0; wait "$pa" || rc=$?
  assert_eq 2 "$rc" "exit status with no usable device"
  cat "$D/wa.log"
  grep -qE 'prism-worker: --devices 0: .*(prism-cuda.so .*no such file|no CUDA device is visible).*--device cpu' "$D/wa.log" \
    || { w_dump; fail "no clear reason for the unusable device"; }
  assert_eq queued "$(w_get /api/v1/jobs/1 | w_json 'd["state"]')" "job left queued"
}

# A wrong token: registration is refused, the agent exits 1 and says what to fix.
t_wrong_token_exits_1() {
  w_setup
  w_server --lease-ttl 5
  echo "not-the-token" > "$D/bad-token"
  local out rc=0
  out=$("$(bin prism-worker)" --server "$URL" --token-file "$D/bad-token" --work-dir "$D/w" 2>&1) || rc=$?
  assert_eq 1 "$rc" "exit status"
  assert_contains "$out" "HTTP 401"
  assert_contains "$out" "--token-file"
}

# The worker token changes on the server while a job trains (the orchestrator restarts with a new token
# file: how a token is revoked), so every call of the worker gets 401. The agent must neither drop the
# job's metric points nor complete the job: it stops it as SIGTERM would (the step, then a checkpoint),
# reports nothing, leases nothing more and exits 2 naming the refused request and --token-file. The lease
# then expires and a worker with the new token resumes the job from its last reported checkpoint; the
# finished job's train curve has every step.
t_token_refused_mid_job_checkpoints_and_exits_2() {
  w_setup
  w_server --lease-ttl 3
  w_spec "$D/spec.json" tok '["4,4,4,4"]' '[3]' 6000 200
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa; local pa=$LAST_PID
  w_wait 30 "a checkpoint reported" w_ckpt_at_least 1 200
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
  WTOK=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')        # the new worker token; the admin token stays
  printf 'worker_token=%s\nadmin_token=%s\n' "$WTOK" "$ATOK" > "$D/tokens"
  w_server --lease-ttl 3
  w_exit "$pa" 20
  [ "$W_RC" != 137 ] || { w_dump; fail "the agent still runs 20 s after its token was refused"; }
  assert_eq 2 "$W_RC" "agent exit status after its token was refused"
  grep -q "prism-worker: the server refused this worker's token (HTTP 401 on POST /api/v1/jobs/1/[a-z]*: .*check --token-file $D/worker-token" "$D/wa.log" \
    || { w_dump; fail "no message naming the refused request and --token-file"; }
  ! grep -q 'dropped' "$D/wa.log" || { w_dump; fail "metric points were dropped: $(grep dropped "$D/wa.log")"; }
  grep -q 'event=exit device=- worker wa stopped (token refused)' "$D/wa.log" || { w_dump; fail "no exit event"; }
  local j; j=$(w_get /api/v1/jobs/1)
  assert_eq "1 None None" "$(echo "$j" | w_json '"%s %s %s" % (d["attempt"], d["result"], d["finished_at"])')" "job 1 not completed (GET /api/v1/jobs/1: $j)"
  [ "$(echo "$j" | w_json 'd["state"]')" != done ] || fail "job 1 completed"
  local k; k=$(echo "$j" | w_json 'd["checkpoint_step"]')
  [ "$k" -ge 200 ] && [ -r "$(echo "$j" | w_json 'd["checkpoint_path"]')" ] || fail "no readable reported checkpoint (step $k)"
  # the stop checkpoint (as SIGTERM writes it) is on disk, at or past the reported one
  local line; line=$(grep 'event=token-refused device=cpu job=1 attempt=1 stopped at step' "$D/wa.log") || { w_dump; fail "no token-refused event"; }
  echo "$line"
  local ck cs
  ck=$(echo "$line" | sed -n 's/.*; checkpoint \(.*\) (step \([0-9]*\)) written;.*/\1/p')
  cs=$(echo "$line" | sed -n 's/.*; checkpoint \(.*\) (step \([0-9]*\)) written;.*/\2/p')
  [ -n "$ck" ] && [ -s "$ck" ] || fail "stop checkpoint [$ck] not written"
  [ "$cs" -ge "$k" ] || fail "stop checkpoint step $cs < reported $k"
  assert_contains "$line" "metric points unsent (past the last reported checkpoint"
  # a worker with the new token resumes the job from its last reported checkpoint once the lease expires
  printf '%s\n' "$WTOK" > "$D/worker-token"
  w_worker wb
  w_wait 60 "job done" w_all_done "$sid" 1
  grep -q "job=1 attempt=2 resuming from step $k " "$D/wb.log" || { w_dump; fail "wb did not resume from $k"; }
  assert_eq "0-5999/6000/6000" "$(w_curve 1 train | w_steps)" "train steps"
}

# The job a worker trains disappears from the server (here: the orchestrator comes back on a new database
# that never had it), so its job-scoped calls get 404. As with a 409 the job is no longer ours: the agent
# stops it at once, drops its unsent points without calling them malformed, and goes back to leasing —
# it registers again and trains the new database's job — instead of training the lost job to the end.
t_gone_job_is_stopped_and_the_agent_leases_again() {
  w_setup
  w_server --lease-ttl 30
  w_spec "$D/old.json" old '["4,4,4,4"]' '[1,2,3]' 500000 0
  w_create "$D/old.json" >/dev/null
  w_post /api/v1/jobs/1/cancel '{}' >/dev/null
  w_post /api/v1/jobs/2/cancel '{}' >/dev/null   # job 3 is leased: the new database has no job 3
  w_worker wa; local pa=$LAST_PID
  w_wait 30 "job 3 trains" w_job_step_at_least 3 20
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
  rm -f "$D"/prism.db*
  w_server --lease-ttl 30
  w_spec "$D/new.json" new '["4,4,4,4"]' '[3]' 300 0
  local sid; sid=$(w_create "$D/new.json")
  w_wait 30 "wa trains the new database's job" w_all_done "$sid" 1
  grep -qE 'event=stopped device=cpu job=3 attempt=1 stopped at step [0-9]+: the job is gone from the server: POST /api/v1/jobs/3/(metrics|heartbeat|checkpoint): HTTP 404: no job 3 \([0-9]+ unsent metric points dropped\)' "$D/wa.log" \
    || { w_dump; fail "no stopped event for the gone job 3"; }
  ! grep -q 'refused and dropped' "$D/wa.log" || { w_dump; fail "points of the gone job reported as malformed"; }
  assert_eq wa "$(w_get /api/v1/jobs/1 | w_json 'd["worker"]')" "the new job's worker"
  kill -0 "$pa" 2>/dev/null && ! grep -q 'event=exit' "$D/wa.log" || { w_dump; fail "the agent exited"; }
}

# Bad flags: exit 2 with a message naming the flag.
t_bad_flags_exit_2() {
  local out rc
  rc=0; out=$("$(bin prism-worker)" --server http://127.0.0.1:1 --token-file /nonexistent 2>&1) || rc=$?
  assert_eq 2 "$rc" "missing token file"; assert_contains "$out" "--token-file /nonexistent"
  rc=0; out=$("$(bin prism-worker)" --server 127.0.0.1:8080 --token-file /dev/null 2>&1) || rc=$?
  assert_eq 2 "$rc" "server without scheme"; assert_contains "$out" "http://"
  # the API's URL instead of the server's: said so with the base URL to give (it was a 404 on every route)
  rc=0; out=$("$(bin prism-worker)" --server http://127.0.0.1:8080/api/v1/ --token-file /dev/null 2>&1) || rc=$?
  assert_eq 2 "$rc" "--server .../api/v1"
  assert_contains "$out" "give the server's base URL, without /api/v1 (--server http://127.0.0.1:8080)"
  local d; d=$(tmpdir); echo tok > "$d/t"
  rc=0; out=$("$(bin prism-worker)" --server http://127.0.0.1:1 --token-file "$d/t" --devices gpu0 2>&1) || rc=$?
  assert_eq 2 "$rc" "bad device"; assert_contains "$out" "'gpu0'"
  rc=0; out=$("$(bin prism-worker)" --server http://127.0.0.1:1 --token-file "$d/t" --heartbeat -1 2>&1) || rc=$?
  assert_eq 2 "$rc" "bad heartbeat"; assert_contains "$out" "--heartbeat"
  out=$("$(bin prism-worker)" --server x --help 2>&1)
  assert_contains "$out" "--checkpoint-dir"
  assert_contains "$out" "--data-root"
}

# A server that stays unreachable is said at once and again every CLIENT_REMIND_S (30 s) while it lasts, not
# only once (a worker looked dead for over a minute while its server was down).
t_unreachable_server_is_said_again() {
  local d; d=$(tmpdir); echo tok > "$d/t"; chmod 600 "$d/t"
  local port; port=$(free_port)
  local out; out=$(timeout 40 "$(bin prism-worker)" --server "http://127.0.0.1:$port" --token-file "$d/t" --devices cpu \
    --work-dir "$d/w" 2>&1)
  echo "$out"
  assert_contains "$out" "Couldn't connect to server; retrying with backoff"
  assert_contains "$out" "still cannot reach the server after 3"
}

# On a TTY the agent draws one live line per device (redrawn in place) with job, schedule, step/steps,
# loss, tok/s and ETA.
t_tty_shows_live_line_per_device() {
  command -v script >/dev/null || skip "no script(1) to fake a TTY"
  w_setup
  w_server --lease-ttl 5
  w_spec "$D/spec.json" tty '["2,2,4,4"]' '[3]' 400 0
  local sid; sid=$(w_create "$D/spec.json")
  OMP_NUM_THREADS=1 script -qfec "$(bin prism-worker) --server $URL --token-file $D/worker-token --devices cpu,cpu \
    --work-dir $D/w --data-root $D --poll 0.2 --idle-exit 1" "$D/tty.out" > /dev/null 2>&1 &
  W_PIDS+=($!)
  w_wait 60 "sweep done" w_all_done "$sid" 2
  w_wait 10 "agent exits" grep -q 'event=exit' "$D/tty.out"
  grep -q $'\033\\[2A' "$D/tty.out" || fail "no in-place redraw of the 2-line block"
  grep -aqE '\[cpu#1\] job [0-9]+/a1 ' "$D/tty.out" || fail "the second slot (cpu#1) never showed a job"
  grep -aqE '\[cpu \] job [0-9]+/a1 ' "$D/tty.out" || fail "the first slot (cpu) never showed a job"
  grep -aqE '\[cpu(#1)? *\] job [0-9]+/a1 \[[#-]+\] +[0-9]+% [0-9]+/400 loss [0-9.]+ ETA [0-9]+m[0-9]+s val ([0-9.]+@[0-9]+|-)' "$D/tty.out" \
    || { tail -c 2000 "$D/tty.out" | cat -v; fail "no live progress line"; }
}

harness_main "$@"
