#!/usr/bin/env bash
# test_torch_ddp.sh — the reference trainer as DDP under torchrun (gloo, CPU): PRISM_DEVICES=cpu,cpu (or --nproc 2)
# re-execs it under
# trainers/torch/torchrun.py with --nproc_per_node 2; each rank takes half the rows of every micro-batch, so the
# global batch (tokens per step) is the job's. Against a 1-process run of the same job: the same train and val losses
# within TOL = 1e-5 (the two halves' gradients are averaged by an all-reduce instead of summed in one kernel: float32
# summation order only, measured 9.5e-7 over 10 steps), one line stream (rank 0 only) ending in one result.
# timeout: 300
source "$(dirname "$0")/torch_lib.sh"

t_two_gloo_processes_match_one_with_the_same_global_batch() {
  need_torch
  local d; d=$(tmpdir)
  make_data "$d"
  ACCUM=2 write_job "$d/job.json"
  torch_run "$d" job.json one || fail "1-process run failed"
  # two CPU ranks the way a worker asks for them (--devices cpu,cpu --devices-per-job 2)
  DEVICES=cpu,cpu torch_run "$d" job.json two || fail "2-process run failed (exit $?)"
  "$PY" - "$d" <<'PY' || fail "the 2-process run differs from the 1-process one (above)"
import json, sys
one = [json.loads(l) for l in open(sys.argv[1] + "/one/lines.jsonl")]
two = [json.loads(l) for l in open(sys.argv[1] + "/two/lines.jsonl")]
for name, ls in (("1 process", one), ("2 processes", two)):
    print(name, [(r["event"], r.get("step"), r.get("train_loss", r.get("val_loss"))) for r in ls if r["event"] != "result"])
assert [r["event"] for r in one] == [r["event"] for r in two], "different line streams"
assert sum(r["event"] == "result" for r in two) == 1 and two[-1]["event"] == "result"
for a, b in zip(one, two):
    assert a.get("step") == b.get("step")
    if a["event"] == "train":
        assert a["tokens"] == b["tokens"], ("tokens per step differ", a["tokens"], b["tokens"])
        assert abs(a["train_loss"] - b["train_loss"]) <= 1e-5, (a, b)
    if a["event"] == "val":
        assert abs(a["val_loss"] - b["val_loss"]) <= 1e-5, (a, b)
print("tokens per step", two[0 if two[0]["event"] == "train" else 1].get("tokens"), "both")
PY
}

# SIGTERM to the launcher's process group (what a worker's cancel or stop sends): every rank finishes its step,
# rank 0 checkpoints, the launcher relays checkpoint + preempted and exits 0, no process is left; the checkpoint
# resumes on one process at the next step.
t_sigterm_to_the_group_checkpoints_and_preempts() {
  need_torch
  local d pid rc s; d=$(tmpdir)
  make_data "$d"
  STEPS=100000 EVERY=0 write_job "$d/job.json"
  mkdir -p "$d/o"
  setsid env PRISM_JOB="$d/job.json" PRISM_OUT="$d/o" PRISM_DATA_ROOT="$d" PRISM_DEVICES=cpu,cpu PRISM_RESUME= \
    PRISM_STOP_AT_STEP=0 OMP_NUM_THREADS=1 "$PY" "$TRAINER" --threads 1 3>"$d/o/lines.jsonl" & pid=$!
  for _ in $(seq 1200); do [ "$(grep -c '"event":"train"' "$d/o/lines.jsonl" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
  kill -TERM -- -$pid; wait $pid; rc=$?
  tail -3 "$d/o/lines.jsonl"
  assert_eq 0 $rc "the launcher's exit status after SIGTERM to its group"
  "$PY" "$(dirname "$0")/protocol_check.py" "$d/o/lines.jsonl" "$d/o" 100000 preempted || fail "protocol violation (above)"
  s=$("$PY" -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert l[-2]["event"] == "checkpoint" and l[-2]["step"] == l[-1]["step"]; print(l[-1]["step"])' "$d/o/lines.jsonl") || fail "no checkpoint line before preempted"
  sleep 1
  pgrep -g $pid >/dev/null && fail "processes of the group are left: $(pgrep -a -g $pid)"
  RESUME="$d/o/ckpt/step_$(printf %06d "$s").pt" STOP=$((s + 2)) torch_run "$d" job.json r || fail "resume on one process failed"
  assert_eq "$s $((s + 1))" "$("$PY" -c 'import json,sys; print(" ".join(str(r["step"]) for r in map(json.loads, open(sys.argv[1])) if r["event"] == "train"))' "$d/r/lines.jsonl")" "steps of the resumed run"
}

# A batch that does not split over the processes is refused before training, naming the key.
t_batch_not_divisible_by_the_processes_is_refused() {
  need_torch
  local d out rc; d=$(tmpdir)
  make_data "$d"
  BATCH=3 write_job "$d/job.json"
  out=$(torch_run "$d" job.json o --nproc 2 2>&1); rc=$?
  echo "$out" | tail -5
  [ $rc -ne 0 ] || fail "a batch of 3 over 2 processes ran"
  assert_contains "$out" "train.batch_size 3 does not split over 2 processes"
  [ ! -s "$d/o/lines.jsonl" ] || fail "lines were written: $(cat "$d/o/lines.jsonl")"
}
harness_main "$@"
