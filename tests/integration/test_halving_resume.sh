#!/usr/bin/env bash
# test_halving_resume.sh — a halving rung on the worker side: `prism-worker train --stop-at-step N` stops at
# the rung (val loss at exactly N, checkpoint ckpt_N.bin) with the full run's learning-rate schedule, and a
# run resumed from that checkpoint is bit-identical to an uninterrupted one (CPU engine).
# timeout: 240
source "$(dirname "$0")/../lib.sh"

# $1 = dir; EVERY = eval.every
write_job() {
  cat > "$1/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 64, "heads": [2, 4]},
 "train": {"batch_size": 8, "steps": 60, "lr": 0.004, "warmup_steps": 10, "lr_schedule": "cosine", "min_lr_frac": 0.1},
 "eval": {"every": ${EVERY:-10}, "batches": 2},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
make_data() { "$(bin prism-data)" synth --out "$1/data" --tokens 200k --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"; }

# stop at STOP, resume from its checkpoint to the end: same metrics rows as a straight run, row for row
halt_resume_vs_straight() { # $1 dir, $2 stop step
  local d=$1 k=$2
  cd "$d"
  "$(bin prism-worker)" train job.json --out halted --stop-at-step "$k" --quiet 2>err.txt || fail "halted run: $(cat err.txt)"
  [ -f "halted/ckpt_$k.bin" ] || fail "no halted/ckpt_$k.bin after --stop-at-step $k: $(ls halted)"
  [ -f halted/result.json ] && fail "a paused run wrote result.json"
  assert_eq "$k" "$(grep -c train_loss halted/metrics.jsonl)" "train rows before the rung"
  grep -q "^{\"step\": *$k, *\"val_loss\"" halted/metrics.jsonl || grep -q "\"step\":$k,\"val_loss\"" halted/metrics.jsonl \
    || fail "no val_loss row at step $k: $(tail -2 halted/metrics.jsonl)"
  cp halted/metrics.jsonl rung_rows.jsonl
  "$(bin prism-worker)" train job.json --out halted --resume "halted/ckpt_$k.bin" --quiet 2>>err.txt || fail "resume: $(cat err.txt)"
  "$(bin prism-worker)" train job.json --out straight --quiet 2>>err.txt || fail "straight run: $(cat err.txt)"
}

t_rung_on_an_eval_step_resumes_bit_identical() {
  local d; d=$(tmpdir); make_data "$d"; EVERY=10 write_job "$d"
  halt_resume_vs_straight "$d" 20
  # every row (train losses, lr, grad norms, val losses) equal, and the final result's val loss too
  [ "$(strip_timing halted/metrics.jsonl)" = "$(strip_timing straight/metrics.jsonl)" ] \
    || { diff <(strip_timing halted/metrics.jsonl) <(strip_timing straight/metrics.jsonl) | head; fail "halted+resumed metrics differ from the straight run"; }
  /usr/bin/python3 - halted/result.json straight/result.json <<'PY' || fail "result val_loss differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print("val_loss halted+resumed %r straight %r" % (a["val_loss"], b["val_loss"]))
assert a["val_loss"] == b["val_loss"] and a["train_loss"] == b["train_loss"]
PY
  cmp -s halted/model.bin straight/model.bin || fail "model.bin differs"
}

# a rung that is no eval step: the extra val row at the rung is the only difference; every loss, lr and val
# row of the straight run is in the resumed one, equal; the learning rate at the rung is the full run's
t_rung_off_eval_steps_keeps_the_full_lr_schedule() {
  local d; d=$(tmpdir); make_data "$d"; EVERY=25 write_job "$d"
  halt_resume_vs_straight "$d" 7
  /usr/bin/python3 - rung_rows.jsonl halted/metrics.jsonl straight/metrics.jsonl <<'PY' || fail "sequences differ"
import json, sys
def rows(p):
    out = []
    for line in open(p):
        r = json.loads(line); r.pop("tok_per_s", None); out.append(r)
    return out
rung, resumed, straight = (rows(p) for p in sys.argv[1:])
vr = [r for r in rung if "val_loss" in r]
assert vr[-1]["step"] == 7, vr
tr = lambda rs: [(r["step"], r["train_loss"], r["lr"], r["grad_norm"]) for r in rs if "train_loss" in r]
va = lambda rs: [(r["step"], r["val_loss"]) for r in rs if "val_loss" in r]
assert tr(resumed) == tr(straight), "train rows differ"
assert va(resumed) == va(straight), (va(resumed), va(straight))
assert tr(rung) == tr(straight)[:7], "rows before the rung differ (lr schedule of the full run?)"
print("train rows %d, val rows %d identical; rung val at 7 = %r" % (len(tr(straight)), len(va(straight)), vr[-1]["val_loss"]))
PY
}

t_stop_at_step_out_of_range_is_refused() {
  local d out; d=$(tmpdir); make_data "$d"; write_job "$d"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o --stop-at-step 60 2>&1); local rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "stop_at_step: 60 must be in 1..train.steps-1"
}

harness_main "$@"
