#!/usr/bin/env bash
# test_torch_ddp.sh — the reference trainer as DDP under torchrun (gloo, CPU): `--nproc 2` re-execs it under
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
  torch_run "$d" job.json two --nproc 2 || fail "2-process run failed (exit $?)"
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
