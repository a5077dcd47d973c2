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

harness_main "$@"
