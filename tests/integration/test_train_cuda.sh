#!/usr/bin/env bash
# test_train_cuda.sh — `prism-worker train --device 0`, the trainer on its CUDA backend, end to end: the
# worker built against the CUDA emulator (prism-worker.emu-fp32 / .emu-bf16, tests/cudaemu) runs the real
# kernels/cuda code on the CPU, so the trainer's use of the backend (parameters, eval, attention distance,
# training-state checkpoints and resume) is checked here, not first on a lent GPU.
# timeout: 240
source "$(dirname "$0")/../lib.sh"

emu() { local b; b=$(bin "prism-worker.emu-$1"); [ -x "$b" ] || skip "no $b (the CUDA emulator is built on x86-64 only)"; echo "$b"; }
setup() { # setup DIR [extra train JSON]: data + a small job (B=4, T=32, heads 2,4)
  "$(bin prism-data)" synth --out "$1/data" --tokens 100k --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"
  cat > "$1/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 32, "heads": [2, 4]},
 "train": {"batch_size": 4, "steps": ${STEPS:-12}, "lr": 0.004, "warmup_steps": 2 ${2:-}},
 "eval": {"every": 6, "batches": 1, "attn_distance": true},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
# worst relative difference of FIELD between two metrics files, rows matched by step
worst_rel() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import json, sys
f = sys.argv[3]
a = {r["step"]: r[f] for r in map(json.loads, open(sys.argv[1])) if f in r}
b = {r["step"]: r[f] for r in map(json.loads, open(sys.argv[2])) if f in r}
common = sorted(set(a) & set(b))
assert common and set(b) <= set(a), "steps with %s: %d vs %d in common %d" % (f, len(a), len(b), len(common))
print("%.3g" % max(abs(a[s] - b[s]) / abs(a[s]) for s in common))
PY
}
# worst relative difference between the attn_distance arrays of two result.json files
worst_rel_dist() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p))["attn_distance"] for p in sys.argv[1:3])
assert len(a) == len(b) == 2, (a, b)
print("%.3g" % max(abs(x - y) / abs(x) for x, y in zip(a, b)))
PY
}
below() { /usr/bin/python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

t_cuda_backend_trains_like_the_cpu_engine() {
  local fp32 bf16; fp32=$(emu fp32) || exit $?; bf16=$(emu bf16) || exit $?
  local d; d=$(tmpdir); setup "$d"; cd "$d"
  "$(bin prism-worker)" train job.json --out cpu --quiet || fail "cpu run failed"
  "$fp32" train job.json --out f32 --device 0 --quiet 2>err32.txt || fail "fp32 CUDA run failed: $(cat err32.txt)"
  "$bf16" train job.json --out b16 --device 0 --quiet 2>err16.txt || fail "bf16 CUDA run failed: $(cat err16.txt)"
  assert_contains "$(cat f32/result.json)" '"device": "cuda"'
  local a32 a16; a32=$(worst_rel_dist cpu/result.json f32/result.json) || fail "attn_distance"
  a16=$(worst_rel_dist cpu/result.json b16/result.json) || fail "attn_distance"
  echo "attn_distance: worst relative difference to the CPU engine: fp32 $a32, bf16 $a16"
  below "$a32" 1e-4 || fail "attn_distance: fp32 CUDA backend differs by $a32"
  below "$a16" 2e-2 || fail "attn_distance: bf16 CUDA backend differs by $a16"
  for f in train_loss val_loss; do
    local w32 w16; w32=$(worst_rel cpu/metrics.jsonl f32/metrics.jsonl $f) || fail "$f rows"
    w16=$(worst_rel cpu/metrics.jsonl b16/metrics.jsonl $f) || fail "$f rows"
    echo "$f: worst relative difference to the CPU engine: fp32 $w32, bf16 $w16"
    below "$w32" 1e-4 || fail "$f: fp32 CUDA backend differs from the CPU engine by $w32 (> 1e-4)"
    below "$w16" 5e-2 || fail "$f: bf16 CUDA backend differs from the CPU engine by $w16 (> 5e-2)"
  done
  [ -s f32/model.bin ] && [ "$(stat -c %s f32/model.bin)" = "$(stat -c %s cpu/model.bin)" ] || fail "model.bin sizes differ"
}

# SIGTERM → checkpoint → resume gives the metrics of an unbroken run: exactly, because the emulator runs
# threads in a fixed order (on a GPU, float atomics make the last bits vary run to run).
t_cuda_sigterm_checkpoint_and_resume_continue_exactly() {
  local fp32; fp32=$(emu fp32) || exit $?
  local d; d=$(tmpdir); STEPS=100000 setup "$d" ', "lr_schedule": "constant", "checkpoint_every": 1000'; cd "$d"
  "$fp32" train job.json --out run --device 0 --quiet 2>err.txt & local pid=$!
  for _ in $(seq 600); do
    local n0; n0=$(grep -c train_loss run/metrics.jsonl 2>/dev/null); [ "${n0:-0}" -ge 4 ] && break; sleep 0.05
  done
  kill -TERM $pid; wait $pid; local rc=$?
  assert_eq 3 "$rc" "exit status after SIGTERM ($(cat err.txt))"
  local ck; ck=$(ls run/ckpt_*.bin 2>/dev/null | head -1)
  [ -n "$ck" ] || fail "no checkpoint after SIGTERM: $(cat err.txt)"
  local k; k=$(basename "$ck" .bin); k=${k#ckpt_}
  local n=$((k + 3))
  "$fp32" train job.json --out run --device 0 --resume "$ck" --steps $n --quiet || fail "resume failed"
  "$fp32" train job.json --out straight --device 0 --steps $n --quiet || fail "straight run failed"
  [ "$(strip_timing run/metrics.jsonl)" = "$(strip_timing straight/metrics.jsonl)" ] \
    || { diff <(strip_timing run/metrics.jsonl) <(strip_timing straight/metrics.jsonl) | head; fail "resumed metrics differ (stopped at $k)"; }
  echo "CUDA backend stopped at step $k, resumed to $n: identical"
  # the same training-state file resumes on the CPU engine too (weights and AdamW moments in float32)
  "$(bin prism-worker)" train job.json --out oncpu --resume "$ck" --steps $n --quiet || fail "resume on the CPU failed"
  local w; w=$(worst_rel straight/metrics.jsonl oncpu/metrics.jsonl train_loss) || fail "rows"
  echo "resumed on the CPU engine: worst relative train_loss difference $w"
  below "$w" 1e-4 || fail "CUDA checkpoint resumed on the CPU drifts by $w"
}

harness_main "$@"
