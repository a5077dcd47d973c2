#!/usr/bin/env bash
# test_trainers_hostile.sh — an external trainer that attacks the worker rather than misbehaving by mistake
# (issue #44): it sees only the descriptors the protocol gives it (0-3), not the worker's sockets to the server;
# a flood of fd-3 lines does not starve the worker's control (a cancel seen by the heartbeat, a SIGTERM), and a
# job the worker stopped itself does not end FAILED for the line its SIGTERM cut short.
# Real `prism-sweep serve`, a real `prism-worker` agent, small Python trainers written by each case.
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

# The trainer lists its open descriptors (fstat of 0..4095, so the listing opens none itself) into
# PRISM_OUT/fds with what each one is, then trains: it has exactly 0, 1, 2 and 3 while the worker holds its
# connection to the server (libcurl's TCP socket, its unix socketpair) and its own files.
t_trainer_sees_only_fds_0_to_3() {
  w_setup
  w_server
  cat > "$D/fds.py" <<'PY'
import json, os
out = os.environ["PRISM_OUT"]
fds = []
for fd in range(4096):
    try:
        os.fstat(fd)
    except OSError:
        continue
    try:
        what = os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        what = "?"
    fds.append("%d:%s" % (fd, what))
with open(os.path.join(out, "fds"), "w") as f:
    f.write(" ".join(fds) + "\n")
job = json.load(open(os.environ["PRISM_JOB"]))
steps = job["train"]["steps"]
o = os.fdopen(3, "w", buffering=1)
for s in range(steps):
    o.write(json.dumps({"event": "train", "step": s, "train_loss": 2.0}) + "\n")
o.write(json.dumps({"event": "val", "step": steps, "val_loss": 2.0}) + "\n")
o.write(json.dumps({"event": "result", "result": {"val_loss": 2.0, "steps": steps}}) + "\n")
PY
  tr_spec "$D/spec.json" fds '["4,4,4,4"]' '[1]' 5 0 fds
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa --trainer "fds=/usr/bin/python3 $D/fds.py" --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "worker exit"
  assert_eq done "$(tr_job 1 'd["state"]')" "state of the job"
  local fds; fds=$(cat "$D/work-wa/job-1-a1/fds") || fail "the trainer wrote no fd list"
  echo "the trainer's descriptors: $fds"
  assert_eq "0 1 2 3" "$(echo "$fds" | tr ' ' '\n' | cut -d: -f1 | tr '\n' ' ' | sed 's/ $//')" "the trainer's open descriptors ($fds)"
  assert_contains "$fds" "0:/dev/null"
}

# The flooding trainer (hs_flood FILE): after one train line it writes MODE lines as fast as the pipe takes them,
# N at most, in blocks of 1000: "ckpt", the same checkpoint of step 1 again and again; "train", train lines of
# increasing steps. PRISM_OUT/flooding appears after 20,000 lines; on SIGTERM it writes how many lines it had
# written to PRISM_OUT/term, then half a line, and exits 143 (a trainer killed mid-write).
hs_flood() {
  cat > "$1" <<'PY'
import json, os, signal, sys
mode, n = sys.argv[1], int(sys.argv[2])
out = os.environ["PRISM_OUT"]
written = [0]
def on_term(sig, frame):
    with open(os.path.join(out, "term"), "w") as f:
        f.write("%d\n" % written[0])
    os.write(3, b'{"event":"tra')
    os._exit(143)
signal.signal(signal.SIGTERM, on_term)
def put(b):
    while b:
        b = b[os.write(3, b):]
os.makedirs(os.path.join(out, "ckpt"), exist_ok=True)
with open(os.path.join(out, "ckpt", "c1"), "w") as f:
    f.write("state of step 1\n")
put(b'{"event":"train","step":0,"train_loss":2.0}\n')
same = b'{"event":"checkpoint","step":1,"path":"ckpt/c1"}\n' * 1000
step = 1
while written[0] < n:
    if mode == "ckpt":
        put(same)
    else:
        put("".join('{"event":"train","step":%d,"train_loss":2.0}\n' % s for s in range(step, step + 1000)).encode())
        step += 1000
    written[0] += 1000
    if written[0] == 20000:
        open(os.path.join(out, "flooding"), "w").close()
signal.pause()   # flooded: waits for the stop
PY
}

# hs_flood_job MODE STEPS: a server, a one-job sweep of STEPS steps for the flooding trainer, a worker (wa,
# $LAST_PID) running it with 3M lines of MODE; returns once the trainer floods.
hs_flood_job() {
  w_setup
  w_server --lease-ttl 60
  hs_flood "$D/flood.py"
  tr_spec "$D/spec.json" fl '["4,4,4,4"]' '[1]' "$2" 0 flood
  w_create "$D/spec.json" > /dev/null
  w_worker wa --trainer "flood=/usr/bin/python3 $D/flood.py $1 3000000" --trainer-kill-grace 5
  w_wait 60 "the trainer flooding" test -f "$D/work-wa/job-1-a1/flooding"
}

# The requests the server answered on a route (its /metrics) (its /metrics, by route).
hs_route_count() { w_get /metrics | sed -n 's/^prism_route_requests_total{route="'"$1"'"} //p'; }

# 3M same-step checkpoint lines as fast as the pipe takes them: a cancel is honoured while they come (the
# trainer gets SIGTERM long before it has written them all), the job ends cancelled, the worker leases on, and
# the checkpoint of step 1 is reported once however often it is repeated (was 3,568 POSTs for 641k lines, and
# the cancel ignored until the flood ended).
t_cancel_during_a_checkpoint_flood() {
  hs_flood_job ckpt 10
  local pa=$LAST_PID out="$D/work-wa/job-1-a1"
  w_post /api/v1/jobs/1/cancel '{}' > /dev/null
  w_wait 60 "the trainer stopped by the cancel" test -f "$out/term"
  w_wait 30 "the job's end reported" grep -q 'event=stopped device=cpu job=1 attempt=1' "$D/wa.log"
  local at; at=$(cat "$out/term")
  echo "the trainer had written $at of 3000000 lines at SIGTERM"
  [ "$at" -lt 3000000 ] || fail "the cancel reached the trainer only after its whole flood ($at lines)"
  assert_eq cancelled "$(tr_job 1 'd["state"]')" "state"
  kill -0 "$pa" || fail "the worker exited after the cancel"
  local n; n=$(hs_route_count checkpoint)
  echo "checkpoint POSTs: $n"
  [ -n "$n" ] && [ "$n" -le 2 ] || { w_dump; fail "checkpoint POSTs for one step repeated: $n (expected 1, at most 2)"; }
  assert_eq 1 "$(tr_job 1 'd["checkpoint_step"]')" "the reported checkpoint's step"
}

# A flood of train lines, and the worker's own SIGTERM: the trainer gets SIGTERM while it floods (long before
# its 3M lines), dies mid-line, and the job goes back queued as preempted, not FAILED for the line the stop cut
# short (was: 232 s to stop, then FAILED "ends without a newline"); the worker exits 0.
t_sigterm_during_a_train_flood() {
  hs_flood_job train 5000000
  local pa=$LAST_PID out="$D/work-wa/job-1-a1"
  kill -TERM "$pa"
  w_wait 60 "the trainer stopped by the worker's SIGTERM" test -f "$out/term"
  w_exit "$pa" 90; assert_eq 0 "$W_RC" "worker exit status after SIGTERM"
  local at; at=$(cat "$out/term")
  echo "the trainer had written $at of 3000000 lines at SIGTERM"
  [ "$at" -lt 3000000 ] || fail "the SIGTERM reached the trainer only after its whole flood ($at lines)"
  assert_eq queued "$(tr_job 1 'd["state"]')" "state after SIGTERM (preempted, not failed)"
  assert_contains "$(tr_job 1 'd["last_error"]')" "preempted"
  grep -q 'ends without a newline after the stop (SIGTERM): dropped' "$D/wa.log" \
    || { w_dump; fail "the cut line was not logged as dropped"; }
}

harness_main "$@"
