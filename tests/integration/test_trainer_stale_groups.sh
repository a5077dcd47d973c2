#!/usr/bin/env bash
# test_trainer_stale_groups.sh — a trainer group a worker killed with SIGKILL left running (issue #40): the
# trainer's leader dies with the worker (PR_SET_PDEATHSIG), but a child of its group that never writes (a
# dataloader, a torchrun rank) kept running and holding its device. Each spawned trainer's process group is
# recorded in WORK/trainer-groups/ (worker/pgrec.h) while it runs; the next start of a worker on that --work-dir
# kills the stale groups (SIGTERM, grace, SIGKILL) and logs a line for each; a live worker's records are left.
# Real `prism-sweep serve`, real `prism-worker` agents, the fake trainer (tests/integration/fake_trainer.py).
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"
. "$(dirname "$0")/trainer_lib.sh"

tr_alive() { ! tr_gone "$1"; }

# sg_training: worker wa trains a long job with the fake trainer and its `sleep 300` child (--spawn); $PA the
# worker, $LEADER the trainer (its group's id), $CHILD the child, once the job has reported step 5.
sg_training() {
  w_setup
  w_server --lease-ttl 60
  tr_spec "$D/spec.json" sg '["4,4,4,4"]' '[5]' 2000 0
  w_create "$D/spec.json" > /dev/null
  w_worker wa --trainer "fake=$FAKE --step-s 0.02 --spawn"; PA=$LAST_PID
  w_wait 30 "training" w_job_step_at_least 1 5
  local pids; pids=$(cat "$D"/work-wa/job-1-a1/pids)
  LEADER=${pids% *}; CHILD=${pids#* }
}

# kill -9 of the worker while its trainer has a silent child (`sleep 300` in its group): the child survives the
# worker and stays alive until a worker starts again on the same --work-dir, which kills it and logs the group.
t_restart_kills_the_stale_group_of_a_killed_worker() {
  sg_training; local pa=$PA leader=$LEADER child=$CHILD
  local rec; rec=$(ls "$D"/work-wa/trainer-groups/*.pgid 2>/dev/null)
  echo "record: $rec: $(cat $rec 2>/dev/null)"
  assert_contains "$(cat $rec 2>/dev/null)" "pgid $leader "
  kill -KILL "$pa"
  w_wait 10 "the trainer's leader gone with the worker" tr_gone "$leader"
  sleep 1   # nothing kills the child but a worker's start: it is still there a while after
  tr_alive "$child" || fail "the silent child $child ended before any worker started again"
  echo "child $child alive after kill -9 of the worker: $(cat /proc/$child/cmdline | tr '\0' ' ')"
  w_post "/api/v1/jobs/1/cancel" '{}' > /dev/null   # the restarted worker has nothing to train
  w_worker wa --trainer "fake=$FAKE" --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "exit of the restarted worker"
  tr_gone "$child" || { w_dump; kill -KILL "$child"; fail "the stale group's child $child still runs after the restart"; }
  local line; line=$(grep 'event=stale-trainer-group' "$D/wa.log")
  echo "log: $line"
  assert_contains "$line" "event=stale-trainer-group pgid=$leader of worker pid $pa (no longer running;"
  assert_contains "$line" "ended on SIGTERM"
  assert_eq 0 "$(ls "$D"/work-wa/trainer-groups/ | wc -l)" "records left"
}

# A record of a live worker (a second worker sharing the --work-dir) is left alone, and so is its group; a
# finished trainer leaves no record.
t_live_workers_groups_are_left_alone() {
  sg_training; local pa=$PA child=$CHILD
  OMP_NUM_THREADS=1 "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --devices cpu \
    --name wb --work-dir "$D/work-wa" --checkpoint-dir "$D/ckpt" --data-root "$D" --poll 0.2 --heartbeat 0.5 \
    --trainer "fake=$FAKE" --idle-exit 1 >> "$D/wb.log" 2>&1 &
  local pb=$!; W_PIDS+=("$pb")
  w_exit "$pb" 30; assert_eq 0 "$W_RC" "exit of the second worker"
  tr_alive "$child" || { w_dump; fail "the live worker's trainer child was killed by the second worker's start"; }
  grep -q 'stale-trainer-group' "$D/wb.log" && { w_dump; fail "the second worker took a live worker's group for stale"; }
  assert_eq 1 "$(ls "$D"/work-wa/trainer-groups/ | wc -l)" "the live worker's record"
  w_post "/api/v1/jobs/1/cancel" '{}' > /dev/null
  w_wait 20 "the cancelled trainer's group gone" tr_gone "$child"
  w_wait 10 "its record removed" eval '[ "$(ls "$D"/work-wa/trainer-groups/ | wc -l)" = 0 ]'
  kill -0 "$pa" || fail "worker wa exited"
}

# A --work-dir on a shared filesystem holds other boxes' records: pids that mean nothing here. A record of another
# host is left alone (the group with its id here is not signalled, the record stays for its own box); one of this
# host before a reboot is removed without signalling anything. A group of this box stands in for both: a live
# `sleep 300` leading its own group, recorded as another host's and as this host's previous boot.
t_other_hosts_and_boots_records_are_left_alone() {
  w_setup
  w_server --lease-ttl 60
  setsid sleep 300 & local g=$!; W_PIDS+=("$g")
  sleep 0.2
  local st; st=$(awk '{print $22}' /proc/$g/stat)
  local boot; boot=$(cat /proc/sys/kernel/random/boot_id)
  local dead=4194000; while kill -0 $dead 2>/dev/null; do dead=$((dead + 1)); done   # a worker pid that runs nowhere
  mkdir -p "$D/work-wa/trainer-groups"
  echo "pgid $g leader_start $st worker $dead worker_start 1 boot $boot host another-box-$$" > "$D/work-wa/trainer-groups/W$dead-cpu.pgid"
  echo "pgid $g leader_start $st worker $dead worker_start 1 boot 00000000-0000-0000-0000-000000000000 host $(hostname)" \
    > "$D/work-wa/trainer-groups/W$((dead + 1))-cpu.pgid"
  w_worker wa --idle-exit 1
  w_exit "$LAST_PID" 30; assert_eq 0 "$W_RC" "exit of the worker"
  tr_alive "$g" || { w_dump; fail "a group of this box recorded as another host's or boot's was signalled"; }
  assert_eq "W$dead-cpu.pgid" "$(ls "$D"/work-wa/trainer-groups/)" "the records left: the other host's only"
  local line; line=$(grep 'event=stale-trainer-group' "$D/wa.log")
  echo "log: $line"
  assert_contains "$line" "from before this machine's boot: record removed, nothing signalled"
  kill "$g"
}

harness_main "$@"
