#!/usr/bin/env bash
# test_slurm.sh — workers under a real SLURM: `prism-sweep launch slurm` and deploy/slurm/prism-worker.sbatch.
# The SLURM cases start a single-node cluster on this machine (Debian's slurm-wlm and munge, installed by
# tools/deps.sh): a munged with its own key and socket, slurmctld and slurmd on free loopback ports with a
# generated slurm.conf (no GPUs: the tasks run `--devices cpu`), all under one /tmp/prism-slurm-* folder.
# Everything they start (daemons, slurmstepd, workers, the orchestrator) is killed by pid on exit, pass or fail.
# Figures (seconds) are printed as "figure: ..." lines (V=1 shows them).
# timeout: 200
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

SBATCH_SCRIPT=$PRISM_ROOT/deploy/slurm/prism-worker.sbatch
SL=

# ---- the cluster ----------------------------------------------------------------------------------------
# sl_start: munged, slurmctld, slurmd; waits until the node is idle. Sets $SL (the folder) and SLURM_CONF.
sl_start() {
  [ "$(id -u)" = 0 ] || skip "a SLURM cluster needs root here (slurmd runs jobs as their user); run as root"
  local b
  for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd sbatch scancel squeue scontrol sinfo; do
    command -v "$b" >/dev/null || fail "$b not found: run tools/deps.sh as root (it installs slurm-wlm and munge)"
  done
  SL=$(mktemp -d /tmp/prism-slurm-XXXXXX)
  chmod 711 "$SL"                                  # munged wants every folder above its socket searchable
  mkdir -m 700 "$SL/key" && mkdir -m 711 "$SL/munge" && mkdir -p "$SL/state" "$SL/spool" "$SL/log"
  head -c 128 /dev/urandom > "$SL/key/munge.key" && chmod 600 "$SL/key/munge.key"
  /usr/sbin/munged -F --key-file="$SL/key/munge.key" --socket="$SL/munge/socket" --pid-file="$SL/munge/pid" \
    --seed-file="$SL/key/seed" --log-file="$SL/log/munged.log" > "$SL/log/munged.out" 2>&1 &
  MUNGE_PID=$!
  local i
  for i in $(seq 1 50); do [ -S "$SL/munge/socket" ] && break; sleep 0.1; done
  [ -S "$SL/munge/socket" ] || fail "munged did not start: $(cat "$SL/log/munged.out")"
  local host; host=$(hostname -s)
  cat > "$SL/slurm.conf" <<EOF
ClusterName=prismtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SL/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd.pid
SlurmctldLogFile=$SL/log/slurmctld.log
SlurmdLogFile=$SL/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=600
InactiveLimit=0
NodeName=prismnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=prismnode Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$SL/slurm.conf
  /usr/sbin/slurmctld -D -i > "$SL/log/slurmctld.out" 2>&1 &
  CTLD_PID=$!
  /usr/sbin/slurmd -D -N prismnode > "$SL/log/slurmd.out" 2>&1 &
  SLURMD_PID=$!
  for i in $(seq 1 100); do
    [ "$(sinfo -h -n prismnode -o %t 2>/dev/null)" = idle ] && return 0
    kill -0 "$CTLD_PID" 2>/dev/null || { sl_dump; fail "slurmctld exited"; }
    kill -0 "$SLURMD_PID" 2>/dev/null || { sl_dump; fail "slurmd exited"; }
    sleep 0.2
  done
  sl_dump; fail "the SLURM node is not idle after 20 s: $(sinfo 2>&1)"
}

# The pids of processes this cluster runs for jobs (slurmstepd and what it started): they carry our SLURM_CONF.
sl_job_pids() {
  local f p
  for f in $(env -u SLURM_CONF grep -lzx "SLURM_CONF=$SL/slurm.conf" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [ "$p" != $$ ] && [ "$p" != "$BASHPID" ] && echo "$p"
  done
}

# sl_stop: kills the daemons, every job process of this cluster, munged; removes the folder.
sl_stop() {
  [ -n "$SL" ] || return 0
  local p
  for p in ${SLURMD_PID:-} ${CTLD_PID:-}; do kill -KILL "$p" 2>/dev/null; done
  local round
  for round in 1 2 3 4 5; do               # a process forked while the previous round ran is caught by the next
    p=$(sl_job_pids)
    [ -z "$p" ] && break
    kill -KILL $p 2>/dev/null
    sleep 0.1
  done
  [ -n "${MUNGE_PID:-}" ] && kill -KILL "$MUNGE_PID" 2>/dev/null
  for p in ${SLURMD_PID:-} ${CTLD_PID:-} ${MUNGE_PID:-}; do wait "$p" 2>/dev/null; done
  rm -rf "$SL"
  SL=
}
trap 'sl_stop 2>/dev/null; w_cleanup' EXIT
trap 'exit 143' TERM INT

sl_dump() {
  local f
  [ -n "$SL" ] && for f in "$SL"/log/*; do echo "---- $f"; tail -n 15 "$f"; done >&2
  w_dump
  for f in "$D"/logs/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done >&2
}

# sl_state JOBID_TASK: SLURM's state of one array task (RUNNING, COMPLETED, FAILED, CANCELLED, ...).
sl_state() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n1 | cut -d= -f2; }
sl_gone() { [ -z "$(squeue -h -j "$1" -t PD,R,CG,CF,S 2>/dev/null)" ]; }

# sl_launch ARGS...: `prism-sweep launch slurm --submit` for CPU workers against $URL; sets $ARRAY (the job id).
sl_launch() {
  mkdir -p "$D/logs"
  ARRAY=$(OMP_NUM_THREADS=1 PRISM_WORKER_ARGS="--data-root $D --poll 0.2 --heartbeat 0.5 --flush 0.3" \
          "$(bin prism-sweep)" launch slurm --server "$URL" --token-file "$D/worker-token" --gpus-per-node 0 \
          --work-dir "$D/work" --log-dir "$D/logs" --submit "$@" 2> "$D/launch.err") \
    || { cat "$D/launch.err"; sl_dump; fail "launch slurm --submit failed"; }
  [[ $ARRAY =~ ^[0-9]+$ ]] || fail "launch slurm --submit printed \"$ARRAY\", not a job id"
}

job_field() { w_get "/api/v1/jobs/$1" | w_json "d[\"$2\"]"; }
ckpt_at_least() { [ "$(w_get "/api/v1/jobs/$1" | w_json 'd["checkpoint_step"] or 0')" -ge "$2" ]; }
leased_by_task() { # JOB TASK: leased by the worker of array task TASK
  local w; w=$(w_get "/api/v1/jobs/$1" | w_json 'd["worker"] if d["state"] == "leased" else ""')
  [[ $w == slurm-${ARRAY}_$2@* ]]
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# sl_check_stopped: after sl_stop, nothing of the cluster is left.
sl_check_stopped() {
  local conf=$SLURM_CONF left p
  sl_stop 2>/dev/null
  for p in $CTLD_PID $SLURMD_PID $MUNGE_PID; do kill -0 "$p" 2>/dev/null && fail "daemon $p still runs after cleanup"; done
  left=$(env -u SLURM_CONF grep -lzx "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null)   # (no pipe: its
  left=${left//\/proc\/$$\/environ/}                                  # other end would carry SLURM_CONF too)
  left=$(echo $left)
  [ -z "$left" ] || fail "job processes left after cleanup: $(for p in $left; do p=${p#/proc/}; p=${p%/environ}; ps -o pid=,ppid=,stat=,args= -p "$p"; done)"
}

# ---- cases ------------------------------------------------------------------------------------------------

# The printed script: the #SBATCH lines the flags ask for, the settings as flags, the template's body; bash
# parses it. Bad input: exit 2 and a message naming the flag.
t_launch_prints_the_array_script() {
  D=$(tmpdir)
  echo tok > "$D/wt"
  local s rc
  s=$(cd "$D" && "$(bin prism-sweep)" launch slurm --server http://head:8080 --token-file wt --nodes 3 \
        --gpus-per-node 4 --partition gpu --time 2:00:00 --account proj 2>/dev/null) || fail "launch slurm failed"
  local l
  for l in '#SBATCH --array=0-2' '#SBATCH --nodes=1' '#SBATCH --ntasks=1' '#SBATCH --gres=gpu:4' \
           '#SBATCH --partition=gpu' '#SBATCH --time=2:00:00' '#SBATCH --account=proj' '#SBATCH --signal=B:TERM@120' \
           '#SBATCH --requeue' "#SBATCH --output=$D/prism-worker-%A_%a.log" \
           "set -- --server 'http://head:8080' --token-file '$D/wt' --worker '$PRISM_BUILD/prism-worker' --idle-exit 300 \"\$@\"" \
           'exec "${cmd[@]}"'; do
    echo "$s" | grep -qxF -- "$l" || fail "line [$l] not in the script:"$'\n'"$s"
  done
  assert_eq 1 "$(echo "$s" | grep -c '^#SBATCH --signal')" "one --signal line"
  echo "$s" | bash -n || fail "the script does not parse"
  # every #SBATCH line comes before the first command (sbatch reads no directive after it)
  local first_cmd last_sb
  first_cmd=$(echo "$s" | grep -nv '^#\|^$' | head -n1 | cut -d: -f1)
  last_sb=$(echo "$s" | grep -n '^#SBATCH' | tail -n1 | cut -d: -f1)
  [ "$last_sb" -lt "$first_cmd" ] || fail "#SBATCH line $last_sb after the first command (line $first_cmd)"
  # CPU workers: no --gres, --devices cpu
  s=$("$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --nodes 1 --gpus-per-node 0 2>/dev/null)
  echo "$s" | grep -q -- '^#SBATCH --gres' && fail "--gpus-per-node 0 still asks for GPUs"
  assert_contains "$s" "--idle-exit 300 --devices cpu \"\$@\""
  # flags after -- reach every task's prism-worker as given (README §4 and DEPLOY write `-- --data-root /shared/prism`)
  s=$("$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --gpus-per-node 0 -- --data-root "/shared/my prism" \
        --fail-limit 5 2>/dev/null) || fail "launch slurm -- --data-root ... refused"
  assert_contains "$s" "--devices cpu \"\$@\" -- '--data-root' '/shared/my prism' '--fail-limit' '5'"
  echo "$s" | bash -n || fail "the script with worker flags does not parse"
  local wcmd; wcmd=$(echo "$s" | PRISM_SBATCH_DRY_RUN=1 bash 2>/dev/null | tail -n1)
  assert_contains "$wcmd" "--progress log --data-root /shared/my\\ prism --fail-limit 5"
  # bad input
  expect_exit2() { local want=$1; shift; local out rc=0; out=$("$(bin prism-sweep)" "$@" 2>&1 >/dev/null) || rc=$?
    assert_eq 2 "$rc" "exit status of: $*"; assert_contains "$out" "$want"; }
  expect_exit2 "--server URL is required" launch slurm --token-file "$D/wt"
  expect_exit2 "--server ftp://x: must start with http://" launch slurm --server ftp://x --token-file "$D/wt"
  expect_exit2 "--token-file F is required" launch slurm --server http://h:1
  expect_exit2 "--token-file $D/nope: No such file" launch slurm --server http://h:1 --token-file "$D/nope"
  expect_exit2 "--time \"2h\": not a SLURM time limit" launch slurm --server http://h:1 --token-file "$D/wt" --time 2h
  expect_exit2 "--time \"1:2:3:4\": not a SLURM time limit" launch slurm --server http://h:1 --token-file "$D/wt" --time 1:2:3:4
  local tl
  for tl in 90 90:30 12:00:00 2-12 2-12:30 2-12:30:00 UNLIMITED; do
    "$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --time "$tl" 2>&1 | grep -qx "#SBATCH --time=$tl" \
      || fail "--time $tl refused or not written"
  done
  expect_exit2 "--nodes must be an integer in 1..100000" launch slurm --server http://h:1 --token-file "$D/wt" --nodes 0
  expect_exit2 "--partition \"a b\"" launch slurm --server http://h:1 --token-file "$D/wt" --partition "a b"
  expect_exit2 "--log-dir $D/none: not a directory" launch slurm --server http://h:1 --token-file "$D/wt" --log-dir "$D/none"
  expect_exit2 'unknown target "pbs"' launch pbs
  # resources, extra directives and the setup line
  s=$("$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --cpus-per-task 16 --mem 64G \
        --sbatch-arg=--qos=high --sbatch-arg --constraint='a100|h100' --setup "module load cuda/12.4 && echo 'it''s' \$HOME" \
        2>/dev/null) || fail "launch slurm with resources failed"
  for l in '#SBATCH --cpus-per-task=16' '#SBATCH --mem=64G' '#SBATCH --qos=high' '#SBATCH --constraint=a100|h100'; do
    echo "$s" | grep -qxF -- "$l" || fail "line [$l] not in the script:"$'\n'"$s"
  done
  [ "$(echo "$s" | grep -n '^#SBATCH --qos' | cut -d: -f1)" -lt "$(echo "$s" | grep -n '^#SBATCH --constraint' | cut -d: -f1)" ] \
    || fail "--sbatch-arg lines out of order"
  echo "$s" | bash -n || fail "the script with --setup does not parse"
  # the setup line reaches the script as one argument, verbatim, and runs before the worker
  local setup_out; setup_out=$(echo "$s" | PRISM_SBATCH_DRY_RUN=1 HOME=/home/x bash 2>/dev/null | grep '^setup: ')
  assert_eq "setup: module load cuda/12.4 && echo 'it''s' \$HOME" "$setup_out" "the setup line as the script got it"
  s=$("$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --setup "echo ran-setup > $D/setup.out" 2>/dev/null)
  local ran; ran=$(echo "$s" | sed 's|^exec .*|exit 0|' | bash 2>/dev/null; cat "$D/setup.out" 2>/dev/null)
  assert_eq ran-setup "$ran" "the setup line ran"
  s=$("$(bin prism-sweep)" launch slurm --server http://h:1 --token-file "$D/wt" --setup "false" 2>/dev/null)
  local src=0 sout; sout=$(echo "$s" | sed 's|^exec .*|exit 0|' | bash 2>&1) || src=$?
  assert_eq 2 "$src" "exit status of a task whose --setup fails"; assert_contains "$sout" "--setup failed (exit 1): false"
  expect_exit2 "--mem \"lots\"" launch slurm --server http://h:1 --token-file "$D/wt" --mem lots
  expect_exit2 "--setup: one line" launch slurm --server http://h:1 --token-file "$D/wt" --setup $'a\nb'
  expect_exit2 '--sbatch-arg "--qos high"' launch slurm --server http://h:1 --token-file "$D/wt" --sbatch-arg "--qos high"
  expect_exit2 '--sbatch-arg "qos=high"' launch slurm --server http://h:1 --token-file "$D/wt" --sbatch-arg qos=high
  expect_exit2 '--sbatch-arg "--x=$(id)"' launch slurm --server http://h:1 --token-file "$D/wt" --sbatch-arg '--x=$(id)'
  expect_exit2 "writes that directive itself" launch slurm --server http://h:1 --token-file "$D/wt" --sbatch-arg --array=0-99
  expect_exit2 "--cpus-per-task must be an integer" launch slurm --server http://h:1 --token-file "$D/wt" --cpus-per-task 0
  expect_exit2 "--worker $D/none: No such file" launch slurm --server http://h:1 --token-file "$D/wt" --worker "$D/none"
  # a prism-sweep with no prism-worker beside it: the tasks take prism-worker from their PATH
  cp "$(bin prism-sweep)" "$D/prism-sweep"
  s=$("$D/prism-sweep" launch slurm --server http://h:1 --token-file "$D/wt" 2>"$D/err") || fail "launch without a worker beside it"
  assert_contains "$s" "--worker 'prism-worker' --idle-exit"
  assert_contains "$(cat "$D/err")" "the tasks run prism-worker from their PATH"
  out=$("$(bin prism-sweep)" launch slurm --server http://127.0.0.1:1 --token-file "$D/wt" 2>&1 >/dev/null)
  assert_contains "$out" "warning: --server http://127.0.0.1:1 is a loopback address"
}

# The script's GPU mapping and its own flags, run outside SLURM (PRISM_SBATCH_DRY_RUN=1 prints the command).
t_sbatch_script_maps_gpus_to_devices() {
  D=$(tmpdir)
  dry() { env -u CUDA_VISIBLE_DEVICES -u SLURM_JOB_GPUS -u SLURM_GPUS_ON_NODE -u PRISM_DEVICES \
            PRISM_SBATCH_DRY_RUN=1 SLURM_ARRAY_JOB_ID=7 SLURM_ARRAY_TASK_ID=3 "$@" \
            bash "$SBATCH_SCRIPT" --server http://h:1 --token-file /t 2>/dev/null; }
  devices_of() { dry "$@" | grep -o -- '--devices [^ ]*' | cut -d' ' -f2; }
  assert_eq 0,1 "$(devices_of CUDA_VISIBLE_DEVICES=2,3 SLURM_JOB_GPUS=2,3)" "CUDA_VISIBLE_DEVICES=2,3 (seen as 0,1)"
  assert_eq 0,1,2 "$(devices_of CUDA_VISIBLE_DEVICES=GPU-a,GPU-b,GPU-c)" "three GPUs by UUID"
  assert_eq 1,3 "$(devices_of SLURM_JOB_GPUS=1,3)" "SLURM_JOB_GPUS without CUDA_VISIBLE_DEVICES"
  assert_eq 0,1,2,3 "$(devices_of SLURM_GPUS_ON_NODE=4)" "SLURM_GPUS_ON_NODE=4"
  assert_eq cpu "$(devices_of)" "no GPU"
  assert_eq cpu "$(devices_of CUDA_VISIBLE_DEVICES=NoDevFiles)" "NoDevFiles"
  assert_eq cpu,cpu "$(devices_of PRISM_DEVICES=cpu,cpu CUDA_VISIBLE_DEVICES=0)" "PRISM_DEVICES wins"
  local c; c=$(dry SLURM_SUBMIT_DIR=/sub PRISM_WORKER=/opt/prism-worker PRISM_WORKER_ARGS="--poll 2 --data-root /d")
  assert_contains "$c" "/opt/prism-worker --server http://h:1 --token-file /t --devices cpu --name slurm-7_3@"
  assert_contains "$c" "--work-dir /sub/prism-work --idle-exit 300 --progress log --poll 2 --data-root /d"
  # flags after the script win over the environment
  c=$(PRISM_SERVER=http://env:1 PRISM_SBATCH_DRY_RUN=1 bash "$SBATCH_SCRIPT" --token-file /t --server http://flag:2 \
        --devices 5 --idle-exit 9 -- --max-jobs 1 2>/dev/null)
  assert_contains "$c" "--server http://flag:2 --token-file /t --devices 5"
  assert_contains "$c" "--idle-exit 9 --progress log --max-jobs 1"
  local out rc=0
  out=$(env -u PRISM_SERVER bash "$SBATCH_SCRIPT" --token-file /t 2>&1) || rc=$?
  assert_eq 2 "$rc" "exit status without a server"; assert_contains "$out" "no server: give --server URL or set PRISM_SERVER"
  rc=0; out=$(bash "$SBATCH_SCRIPT" --server http://h:1 --token-file /t --bogus 2>&1) || rc=$?
  assert_eq 2 "$rc" "exit status for an unknown flag"; assert_contains "$out" 'unknown argument "--bogus"'
}

# sl_worker_pid TASK: the pid of the prism-worker that array task TASK runs (the batch shell execs it).
sl_worker_pid() {
  local f p
  for f in $(env -u SLURM_CONF grep -lzx "SLURM_ARRAY_TASK_ID=$1" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [[ $(readlink "/proc/$p/exe" 2>/dev/null) == */prism-worker ]] || continue
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_ARRAY_JOB_ID=$ARRAY" && echo "$p"
  done
}
leased_task() { # JOB: the array task whose worker holds JOB's lease (empty if none)
  local t
  for t in $(seq 0 $((NTASKS - 1))); do leased_by_task "$1" "$t" && { echo "$t"; return 0; }; done
  return 1
}
resumed_from() { # JOB ATTEMPT: the step attempt ATTEMPT of JOB resumed from (per the task logs), or nothing
  grep -h "job=$1 attempt=$2 resuming from step" "$D"/logs/*.log 2>/dev/null | head -n1 | sed 's/.*resuming from step \([0-9]*\).*/\1/'
}

# A 4-task array (CPU workers) trains a 2-job sweep; two tasks are spares. The job is stopped twice:
#  1. `scancel` of the task training it: SLURM sends SIGTERM, the worker finishes its step, reports a checkpoint
#     and hands the job back at once; a spare resumes it from that step;
#  2. SIGKILL of the worker now training it (a lost node: nothing is reported): its lease expires after the
#     TTL (4 s) and another task resumes it from its last periodic checkpoint (checkpoint_every 200).
# The sweep finishes, the tasks exit on their own (--idle-exit), and nothing is left running.
t_array_sweep_survives_scancel_and_a_killed_task() {
  local t0; t0=$(now)
  w_setup
  w_server --lease-ttl 4 --max-attempts 5
  w_spec "$D/spec.json" slurm '["4,4,4,4", "2,2,4,4"]' '[1]' 4000 200
  local sid; sid=$(w_create "$D/spec.json")
  sl_start
  local t_up; t_up=$(now)
  NTASKS=4
  sl_launch --nodes $NTASKS --idle-exit 20
  # 1. scancel
  w_wait 60 "job 1 leased by a SLURM task, with a checkpoint" ckpt_at_least 1 200
  local ta; ta=$(leased_task 1) || { sl_dump; fail "job 1 is not leased by a task of array $ARRAY: $(w_get /api/v1/jobs/1)"; }
  local k1; k1=$(job_field 1 checkpoint_step)
  local t_cancel; t_cancel=$(now)
  scancel "${ARRAY}_$ta" || fail "scancel failed"
  w_wait 30 "job 1 resumed after scancel" eval '[ -n "$(resumed_from 1 2)" ]'
  local t_resume2; t_resume2=$(now)
  local k2; k2=$(resumed_from 1 2)
  grep -q "event=preempted device=cpu job=1 attempt=1 retryable=1 .*got a stop signal at step" \
    "$D/logs/prism-worker-${ARRAY}_$ta.log" || { sl_dump; fail "task $ta did not checkpoint and hand job 1 back"; }
  [ "$k2" -gt 0 ] && [ "$k2" -ge "$k1" ] || fail "attempt 2 resumed from step $k2 (checkpoint before scancel: $k1)"
  # 2. SIGKILL
  w_wait 60 "job 1, attempt 2, checkpointed after resuming" eval '[ "$(job_field 1 attempt)" = 2 ] && ckpt_at_least 1 $((k2 + 1))'
  local tb; tb=$(leased_task 1) || { sl_dump; fail "job 1 (attempt 2) is not leased by a task: $(w_get /api/v1/jobs/1)"; }
  [ "$tb" != "$ta" ] || fail "job 1 went back to the cancelled task $ta"
  local pid; pid=$(sl_worker_pid "$tb")
  [ -n "$pid" ] || { sl_dump; fail "no prism-worker process for task $tb"; }
  local k3c; k3c=$(job_field 1 checkpoint_step)
  local t_kill; t_kill=$(now)
  kill -KILL $pid
  w_wait 30 "job 1's lease expired" eval '[ "$(job_field 1 state)" != leased ] || [ "$(job_field 1 attempt)" -ge 3 ]'
  local t_expired; t_expired=$(now)
  w_wait 30 "job 1 resumed after the lease expired" eval '[ -n "$(resumed_from 1 3)" ]'
  local t_resume3; t_resume3=$(now)
  local k3; k3=$(resumed_from 1 3)
  [ "$k3" -gt 0 ] && [ "$k3" -ge "$k3c" ] || fail "attempt 3 resumed from step $k3 (checkpoint before the kill: $k3c)"
  grep -q "job=1 attempt=2 .*preempted" "$D/logs/prism-worker-${ARRAY}_$tb.log" && fail "the killed worker reported?"
  w_wait 90 "the sweep done" w_all_done "$sid" 2
  local t_done; t_done=$(now)
  local t ts
  for t in $(seq 0 $((NTASKS - 1))); do w_wait 40 "array task $t ended" sl_gone "${ARRAY}_$t"; done
  for t in $(seq 0 $((NTASKS - 1))); do
    ts=$(sl_state "${ARRAY}_$t")
    if [ "$t" = "$ta" ]; then assert_eq CANCELLED "$ts" "SLURM state of the cancelled task $t"
    elif [ "$t" = "$tb" ]; then [ "$ts" != COMPLETED ] || fail "task $t, whose worker was killed, ended COMPLETED"
    else assert_eq COMPLETED "$ts" "SLURM state of task $t (its worker exits 0 after --idle-exit)"; fi
  done
  assert_eq 3 "$(job_field 1 attempt)" "job 1 attempts"
  sl_check_stopped
  echo "figure: scancel -> job resumed from step $k2 (stop checkpoint) in $(elapsed "$t_cancel" "$t_resume2") s"
  echo "figure: SIGKILL -> lease expired in $(elapsed "$t_kill" "$t_expired") s (--lease-ttl 4) -> job resumed from step" \
       "$k3 (periodic checkpoint) $(elapsed "$t_kill" "$t_resume3") s after the kill"
  echo "figure: cluster up in $(elapsed "$t0" "$t_up") s (with data and server), sweep done $(elapsed "$t_up" "$t_done") s" \
       "after it, case $(elapsed "$t0" "$(now)") s"
}

# A task with a 1-minute time limit gets SIGTERM 50 s before it (--signal=B:TERM@50; slurmctld checks time
# limits every 30 s, so it comes 10-40 s after the start): the worker finishes its step, writes and reports a
# checkpoint, hands the job back and exits 0 before the limit. A second task resumes the job from that step
# (then the job, far too long to finish here, is cancelled and the task ends by --idle-exit).
t_time_limit_signal_checkpoints_first() {
  w_setup
  w_server --lease-ttl 30
  w_spec "$D/spec.json" tl '["4,4,4,4"]' '[1]' 1000000 0
  local sid; sid=$(w_create "$D/spec.json")
  sl_start
  sl_launch --nodes 1 --time 1 --signal-lead 50 --idle-exit 5
  local first=$ARRAY
  w_wait 30 "job 1 leased" eval '[ "$(job_field 1 state)" = leased ]'
  local t_start; t_start=$(now)
  w_wait 70 "job 1 handed back after the time-limit signal" eval '[ "$(job_field 1 state)" = queued ]'
  local t_back; t_back=$(now)
  local log="$D/logs/prism-worker-${first}_0.log" k
  grep -q 'event=preempted device=cpu job=1 attempt=1 retryable=1 preempted: worker slurm-'"${first}"'_0@.* got a stop signal at step' "$log" \
    || { sl_dump; fail "no preempted event in $log"; }
  k=$(job_field 1 checkpoint_step)
  [ "$k" -gt 0 ] || fail "no checkpoint reported before the task stopped (checkpoint_step $k)"
  [ -r "$(job_field 1 checkpoint_path)" ] || fail "the reported checkpoint is not a readable file"
  w_wait 20 "the task ended" sl_gone "${first}_0"
  assert_eq COMPLETED "$(sl_state "${first}_0")" "the task ended on its own (worker exit 0) before the time limit"
  scontrol -o show job "${first}_0" | grep -q 'ExitCode=0:0' || fail "exit code: $(scontrol -o show job "${first}_0")"
  # any worker resumes it: a second task without a time limit
  sl_launch --nodes 1 --idle-exit 2
  w_wait 30 "the second task resumes job 1" grep -q "job=1 attempt=2 resuming from step $k " "$D/logs/prism-worker-${ARRAY}_0.log"
  w_wait 30 "job 1 trains past its checkpoint" eval '[ "$(job_field 1 step)" -gt '"$k"' ]'
  w_post /api/v1/jobs/1/cancel '{}' > /dev/null
  w_wait 30 "the second task ended" sl_gone "${ARRAY}_0"
  assert_eq cancelled "$(job_field 1 state)" "job 1 state"
  assert_eq COMPLETED "$(sl_state "${ARRAY}_0")" "the second task ended on its own"
  sl_check_stopped
  echo "figure: SIGTERM arrived $(elapsed "$t_start" "$t_back") s after the lease (limit 60 s, signal 50 s before);" \
       "checkpoint at step $k"
}

harness_main "$@"
