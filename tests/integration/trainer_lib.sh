# tests/integration/trainer_lib.sh — helpers for the external-trainer tests (test_trainers*.sh): a sweep spec
# whose jobs name a trainer, a worker given the fake trainer (tests/integration/fake_trainer.py), and the checks
# that no process of a trainer is left. Sourced after tests/lib.sh and worker_lib.sh.

FAKE="/usr/bin/python3 ${PRISM_ROOT:-$(pwd)}/tests/integration/fake_trainer.py"

# tr_spec FILE NAME SCHEDULES SEEDS STEPS [CKPT_EVERY] [TRAINER] [EXTRA_TOP_LEVEL_JSON]: w_spec with "trainer".
tr_spec() {
  local file=$1 name=$2 scheds=$3 seeds=$4 steps=$5 ck=${6:-0} trainer=${7:-fake} extra=${8:-}
  w_spec "$file" "$name" "$scheds" "$seeds" "$steps" "$ck"
  /usr/bin/python3 - "$file" "$trainer" "$extra" <<'PY'
import json, sys
p, t, extra = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(p))
if t: d["trainer"] = t
if extra: d.update(json.loads(extra))
json.dump(d, open(p, "w"))
PY
}

# tr_gone PID...: each pid has exited (no such process, or a zombie nobody reaped yet).
tr_gone() {
  local p st
  for p in "$@"; do
    st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$st" ] || [ "$st" = Z ] || return 1
  done
}

# tr_job JOB EXPR: a Python expression over GET /api/v1/jobs/JOB.
tr_job() { w_get "/api/v1/jobs/$1" | w_json "$2"; }

# w_job_step_at_least JOB STEP: the job is leased and has reported STEP or later.
w_job_step_at_least() {
  [ "$(tr_job "$1" 'd["state"] == "leased" and d["step"] >= '"$2"'')" = true ]
}
