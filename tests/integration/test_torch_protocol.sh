#!/usr/bin/env bash
# test_torch_protocol.sh — the reference trainer run directly with the protocol's environment (no worker), as
# prism-worker --trainer runs it: its fd-3 lines are valid (protocol_check.py, independent of prism_protocol.py),
# resuming from its own checkpoint reproduces the uninterrupted run's losses exactly, SIGTERM ends in checkpoint +
# preempted with exit 0, PRISM_STOP_AT_STEP in val + checkpoint + paused; bad input exits 2 naming the problem.
# timeout: 300
source "$(dirname "$0")/torch_lib.sh"
check() { "$PY" "$(dirname "$0")/protocol_check.py" "$@" || fail "protocol violation in $1 (above)"; }
losses() { "$PY" -c 'import json,sys; print(" ".join("%d:%r" % (r["step"], r["train_loss"]) for r in map(json.loads, open(sys.argv[1])) if r["event"] == "train" and r["step"] >= int(sys.argv[2])))' "$1" "${2:-0}"; }

t_lines_are_valid_and_end_in_one_result() {
  need_torch
  local d; d=$(tmpdir)
  make_data "$d"
  CKPT=4 write_job "$d/job.json" '' ', "seed": 5'
  torch_run "$d" job.json o || fail "trainer exited $?"
  check "$d/o/lines.jsonl" "$d/o" 10 result
  [ -s "$d/o/model.bin" ] || fail "no model.bin"
  # the model file is the project's format: the built-in engine starts from it (model.init)
  write_job "$d/job2.json" ', "init": "o/model.bin"'
  sed -i 's/"steps": 10/"steps": 1/' "$d/job2.json"
  builtin "$d" job2.json b
}

t_resume_from_its_checkpoint_reproduces_the_uninterrupted_run() {
  need_torch
  local d full resumed; d=$(tmpdir)
  make_data "$d"
  CKPT=3 write_job "$d/job.json"
  torch_run "$d" job.json full || fail "uninterrupted run failed"
  # checkpoints after 3, 6 and 9 steps; only the newest stays in PRISM_OUT (the worker keeps links to the others)
  assert_eq "step_000009.pt" "$(ls "$d/full/ckpt")" "checkpoint files left"
  cp "$d/full/ckpt/step_000009.pt" "$d/resume-9.bin"   # the worker hands it back under its own name
  RESUME="$d/resume-9.bin" torch_run "$d" job.json res || fail "resumed run failed"
  check "$d/res/lines.jsonl" "$d/res" 10 result
  full=$(losses "$d/full/lines.jsonl" 9); resumed=$(losses "$d/res/lines.jsonl")
  echo "uninterrupted from step 9: $full"; echo "resumed:                   $resumed"
  assert_eq "$full" "$resumed" "resumed losses"
  "$PY" - "$d" <<'PY' || fail "final val loss differs"
import json, sys
f = [json.loads(l) for l in open(sys.argv[1] + "/full/lines.jsonl")][-1]["result"]
r = [json.loads(l) for l in open(sys.argv[1] + "/res/lines.jsonl")][-1]["result"]
print("val_loss", f["val_loss"], r["val_loss"]); assert f["val_loss"] == r["val_loss"]
PY
}

t_sigterm_checkpoints_then_preempted_and_resumes_each_step_once() {
  need_torch
  local d pid rc s; d=$(tmpdir)
  make_data "$d"
  STEPS=100000 EVERY=0 write_job "$d/job.json"
  (EXEC=1 torch_run "$d" job.json o) & pid=$!
  for _ in $(seq 600); do [ "$(grep -c '"event":"train"' "$d/o/lines.jsonl" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
  kill -TERM $pid; wait $pid; rc=$?
  assert_eq 0 $rc "exit status after SIGTERM"
  check "$d/o/lines.jsonl" "$d/o" 100000 preempted
  s=$("$PY" -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; c,p=l[-2],l[-1]; t=[x["step"] for x in l if x["event"]=="train"]; assert c["event"]=="checkpoint" and c["step"]==p["step"]==t[-1]+1 and t==list(range(len(t))), (c,p,t[-3:]); print(p["step"])' "$d/o/lines.jsonl") || fail "not checkpoint then preempted at the next step: $(tail -3 "$d/o/lines.jsonl")"
  echo "preempted at step $s"
  RESUME="$d/o/ckpt/step_$(printf %06d "$s").pt" STOP=$((s + 3)) torch_run "$d" job.json o || fail "resume failed"
  "$PY" - "$d/o/lines.jsonl" "$s" <<'PY' || fail "resumed run did not continue at the step after the last one"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]; s = int(sys.argv[2])
t = [x["step"] for x in l if x["event"] == "train"]
print("train steps", t[:3], "...", t[-4:], "then", [x["event"] for x in l[-3:]])
assert t == list(range(s + 3)), "each step once"
assert [x["event"] for x in l[-3:]] == ["val", "checkpoint", "paused"] and l[-1]["step"] == s + 3
PY
}

t_stop_at_step_pauses_and_the_rung_resumes_to_the_same_result() {
  need_torch
  local d; d=$(tmpdir)
  make_data "$d"
  EVERY=0 write_job "$d/job.json"
  STOP=6 torch_run "$d" job.json p || fail "rung run failed"
  check "$d/p/lines.jsonl" "$d/p" 10 paused
  "$PY" - "$d/p/lines.jsonl" <<'PY' || fail "not val, checkpoint, paused at step 6"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
print([(x["event"], x.get("step")) for x in l[-3:]])
v, c, p = l[-3:]
assert (v["event"], c["event"], p["event"]) == ("val", "checkpoint", "paused") and v["step"] == c["step"] == p["step"] == 6
assert p["val_loss"] == v["val_loss"]
assert max(x["step"] for x in l if x["event"] == "train") == 5
PY
  RESUME="$d/p/ckpt/step_000006.pt" torch_run "$d" job.json r || fail "resume after the rung failed"
  torch_run "$d" job.json full || fail "uninterrupted run failed"
  assert_eq "$(losses "$d/full/lines.jsonl" 6)" "$(losses "$d/r/lines.jsonl")" "losses after the rung"
}

# Bad input: exit 2 and a message naming the problem, no line written.
t_bad_input_exits_2_naming_it() {
  need_torch
  local d out rc; d=$(tmpdir)
  make_data "$d"
  write_job "$d/job.json" ', "rope_theta": 5'
  out=$(torch_run "$d" job.json o 2>&1); rc=$?
  assert_eq 2 $rc "exit for a gpt2 job with rope_theta"; assert_contains "$out" 'model.rope_theta: only for model.arch "llama"'
  write_job "$d/job.json"; sed -i 's/synth_train_/nothing_/' "$d/job.json"
  out=$(torch_run "$d" job.json o 2>&1); rc=$?
  assert_eq 2 $rc "exit for missing data"; assert_contains "$out" "data.train: $d/data/nothing_*.bin: no token shards match"
  write_job "$d/job.json"
  out=$(STOP=10 torch_run "$d" job.json o 2>&1); rc=$?
  assert_eq 2 $rc "exit for PRISM_STOP_AT_STEP = steps"; assert_contains "$out" "PRISM_STOP_AT_STEP: 10 must be 0 or in 1..train.steps-1 (9)"
  echo "x" > "$d/bad.pt"
  out=$(RESUME="$d/bad.pt" torch_run "$d" job.json o 2>&1); rc=$?
  assert_eq 2 $rc "exit for a bad checkpoint"; assert_contains "$out" "PRISM_RESUME: $d/bad.pt: not a readable checkpoint"
  [ ! -s "$d/o/lines.jsonl" ] || fail "lines were written: $(cat "$d/o/lines.jsonl")"
}

# pp_run DIR: the Python on stdin after a prelude (r: a Run of a 5-step job, its fd 3 DIR/lines; refused(f, what):
# f raises a ProtocolError naming what), with the module's directory as argv[1].
pp_run() {
  local d=$1
  echo '{"train": {"steps": 5}}' > "$d/job.json"
  { cat <<'PY'
import sys; sys.path.insert(0, sys.argv[1])
import prism_protocol as pp
r = pp.Run()
def refused(f, what):
    try: f()
    except pp.ProtocolError as e: print("refused:", e); assert what in str(e), (what, str(e)); return
    raise AssertionError("accepted: " + what)
PY
    cat; } > "$d/module_case.py"
  PRISM_JOB="$d/job.json" PRISM_OUT="$d" "$PY" "$d/module_case.py" "$PRISM_ROOT/trainers/torch" 3>"$d/lines"
}

# The helper module refuses what the worker would refuse, naming the key, before anything is written.
t_protocol_module_refuses_bad_lines() {
  need_torch
  local d; d=$(tmpdir)
  pp_run "$d" <<'PY' || fail "the module accepted a bad line (above)"
refused(lambda: r.train(0, float("nan")), "train.train_loss: must be a finite number")
refused(lambda: r.emit({"event": "train", "step": 0, "train_loss": 1.0, "loss": 2}), "train.loss: unknown key")
refused(lambda: r.emit({"event": "hello"}), "unknown")
refused(lambda: r.train(5, 1.0), "past the last step 4")
refused(lambda: r.checkpoint(1, "/etc/passwd"), "not inside PRISM_OUT")
refused(lambda: r.checkpoint(1, "ckpt/missing.pt"), "does not exist")
r.train(0, 2.0); refused(lambda: r.train(0, 1.0), "does not increase")
r.preempted(1); refused(lambda: r.val(1, 1.0), "after the terminal one")
PY
  assert_eq '{"event":"train","step":0,"train_loss":2.0}
{"event":"preempted","step":1}' "$(cat "$d/lines")" "the lines written"
}
# Its own divergence check ends in a "failed" line (reason diverged, not retryable: the worker reports
# "diverged: MESSAGE" as the built-in's), after the val point that diverged, and exit 1. Before: a bare exit 1,
# which the worker could only read as a crash.
t_divergence_ends_in_a_failed_line() {
  need_torch
  local d rc; d=$(tmpdir)
  make_data "$d"
  write_job "$d/job.json"; sed -i 's/"lr": 0.004/"lr": 10/' "$d/job.json"
  torch_run "$d" job.json o; rc=$?
  assert_eq 1 $rc "exit status of a diverged run"
  check "$d/o/lines.jsonl" "$d/o" 10 failed
  "$PY" - "$d/o/lines.jsonl" <<'PY2' || fail "not a val point then a failed line of reason diverged: $(tail -2 "$d/o/lines.jsonl")"
import json, sys
l = [json.loads(x) for x in open(sys.argv[1])]
print(l[-2]); print(l[-1])
assert l[-2]["event"] == "val" and l[-1]["event"] == "failed" and l[-1]["reason"] == "diverged" and l[-1]["retryable"] is False
assert "the run diverged" in l[-1]["message"] and ("step %d:" % l[-2]["step"]) in l[-1]["message"]
PY2
}

# A CUDA out-of-memory error (simulated: train_step raises torch's message) ends in a "failed" line of reason
# oom, retryable, so the worker requeues the job rather than failing it for good.
t_out_of_memory_is_a_retryable_failed_line() {
  need_torch
  local d rc; d=$(tmpdir)
  make_data "$d"
  write_job "$d/job.json"
  cat > "$d/oom.py" <<PY2
import sys; sys.path.insert(0, "$PRISM_ROOT/trainers/torch")
import train
def oom(self, step):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)")
train.Trainer.train_step = oom
sys.exit(train.main(sys.argv[1:]))
PY2
  TRAINER="$d/oom.py" torch_run "$d" job.json o; rc=$?
  assert_eq 1 $rc "exit status after an OOM"
  check "$d/o/lines.jsonl" "$d/o" 10 failed
  local last; last=$(tail -n1 "$d/o/lines.jsonl"); echo "last line: $last"
  assert_contains "$last" '"event":"failed","reason":"oom","retryable":true,"message":"CUDA out of memory. Tried to allocate 2.00 GiB'
}

# The module refuses the result keys the worker refuses (worker/extrun.c: the job's, the worker's, "backend";
# keys over 64 bytes at any depth) and checks the failed line; heartbeat and failed are lines it writes.
t_protocol_module_refuses_what_the_worker_refuses() {
  need_torch
  local d; d=$(tmpdir)
  pp_run "$d" <<'PY2' || fail "the module accepted a bad line (above)"
for k in ("job", "job_id", "sweep_id", "schedule_id", "attempt", "lease_token", "worker", "worker_id", "backend",
          "trainer_command", "trainer_version"):
    refused(lambda: r.result({"val_loss": 1.0, k: 1}), "result.result.%s: a trainer may not set it" % k)
refused(lambda: r.result({"val_loss": 1.0, "k" * 65: 1}), "a key of 65 bytes")
refused(lambda: r.result({"val_loss": 1.0, "deep": [{"k" * 70: 1}]}), "a key of 70 bytes")
refused(lambda: r.failed("out of memory"), "failed.reason: must be a word")
refused(lambda: r.emit({"event": "failed", "reason": "oom", "retryable": 1}), "failed.retryable: must be true or false")
refused(lambda: r.emit({"event": "heartbeat", "step": 1}), "heartbeat.step: unknown key")
refused(lambda: r.train(0, 2.0, extra={"bad name": 1.0}), "train.extra: name 'bad name'")
refused(lambda: r.train(0, 2.0, extra={"x": float("inf")}), "train.extra.x: must be a finite number")
refused(lambda: r.train(0, 2.0, extra={"x": 1e301}), "train.extra.x: must be a finite number")
refused(lambda: r.train(0, 2.0, extra={"n%d" % i: 1 for i in range(17)}), "train.extra: 17 names: at most 16")
refused(lambda: r.val(0, 2.0, extra=[1]), "val.extra: must be an object")
refused(lambda: r.result({"val_loss": 1.0, "extra": {"a b": 1}}), "result.result.extra: name")
import re   # the lists are the worker's: read from worker/extrun*.[ch], so neither side drifts
root = sys.argv[1] + "/../../"
src = "".join(open(root + "worker/" + f).read() for f in ("extrun.c", "extrun.h", "extrun_line.c", "extrun_line.h"))
macros = dict(re.findall(r'#define (JOBRESULT_KEY_[A-Z_]+) "([a-z_]+)"', open(root + "common/jobresult.h").read()))
c = [m.group(1) or macros[m.group(2)] for m in re.finditer(r'"([a-z_]+)"|\b(JOBRESULT_KEY_[A-Z_]+)\b',
     re.search(r"EXTRUN_RESULT_RESERVED\[\] = \{(.*?)\};", src, re.S).group(1))]
ph = open(root + "common/point.h").read()
assert int(re.search(r"#define POINT_EXTRA_MAX (\d+)", ph).group(1)) == pp.EXTRA_MAX
assert int(re.search(r"#define POINT_EXTRA_NAME_MAX (\d+)", ph).group(1)) == 64 and pp.EXTRA_NAME.match("k" * 64) \
    and not pp.EXTRA_NAME.match("k" * 65)
assert float(re.search(r"#define POINT_EXTRA_ABS_MAX (\S+)", ph).group(1)) == pp.EXTRA_ABS_MAX
print("reserved in worker/extrun.c:", c, "in prism_protocol:", list(pp.RESULT_RESERVED))
assert tuple(c) == pp.RESULT_RESERVED
assert int(re.search(r"#define EXTRUN_KEY_MAX (\d+)", src).group(1)) == pp.MAX_KEY
r.heartbeat()
r.train(0, 2.0, extra={"mfu": 0.5})
r.failed("nccl", "rank 1 timed out", retryable=True)
refused(lambda: r.heartbeat(), "after the terminal one")
PY2
  assert_eq '{"event":"heartbeat"}
{"event":"train","step":0,"train_loss":2.0,"extra":{"mfu":0.5}}
{"event":"failed","reason":"nccl","retryable":true,"message":"rank 1 timed out"}' "$(cat "$d/lines")" "the lines written"
}
harness_main "$@"
