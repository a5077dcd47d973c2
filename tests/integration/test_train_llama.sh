#!/usr/bin/env bash
# test_train_llama.sh — `prism-worker train` with model.arch "llama": real processes, real files. It trains
# and learns, writes the pinned Llama-style model file, starts from it as model.init, and refuses what does not
# fit (an arch mismatch on resume or init, a GPT-2 job naming llama-only keys, an odd head size).
# timeout: 240
source "$(dirname "$0")/../lib.sh"

# $1 = dir holding data/; ARCH_KEYS = extra model keys; HEADS; STEPS; extra "train" JSON in $2
write_job() {
  cat > "$1/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 64, "heads": [${HEADS:-2, 4}] ${ARCH_KEYS-, \"arch\": \"llama\"}},
 "train": {"batch_size": 8, "steps": ${STEPS:-20}, "lr": 0.004, "warmup_steps": 5 ${2:-}},
 "eval": {"every": 10, "batches": 2, "attn_distance": true},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
make_data() { "$(bin prism-data)" synth --out "$1/data" --tokens 200k --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"; }
py() { /usr/bin/python3 "$@"; }

t_llama_job_trains_learns_and_writes_the_pinned_model_file() {
  local d; d=$(tmpdir)
  make_data "$d"; STEPS=60 write_job "$d"
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  py - "$d/out" <<'PY' || fail "result.json / model.bin not as expected"
import json, math, struct, sys
r = json.load(open(sys.argv[1] + "/result.json"))
print("arch", r["arch"], "val loss", r["val_loss"], "params", r["params"], "D_l", r["attn_distance"])
assert r["arch"] == "llama"
# C=64: H = 8*64/3 -> 171 -> 192; params = Vp*C + L*(2C + 4C^2 + 3HC) + C
assert r["params"] == 128*64 + 2*(2*64 + 4*64*64 + 3*192*64) + 64, r["params"]
assert r["flops_per_token"] == 6*(2*(4*64*64 + 3*192*64) + 128*64) + 6*2*64*64, r["flops_per_token"]
assert r["val_loss"] < math.log(128) - 0.5, r["val_loss"]
assert len(r["attn_distance"]) == 2 and all(x > 0 for x in r["attn_distance"])
h = struct.unpack("<256i", open(sys.argv[1] + "/model.bin", "rb").read(1024))
assert h[:10] == (20260629, 1, 64, 128, 2, 4, 64, 128, 192, 10000), h[:10]
assert h[16:19] == (2, 4, 0), h[16:19]
PY
  # model.init from it (a different schedule: the file's head slots do not bind the job)
  HEADS="4, 4" STEPS=5 write_job "$d"
  (cd "$d" && "$(bin prism-worker)" train job.json --init out/model.bin --out out2 --quiet) || fail "init from the llama file failed"
}

t_resume_refuses_an_arch_mismatch() {
  local d out; d=$(tmpdir)
  make_data "$d"; STEPS=10 write_job "$d" ', "checkpoint_every": 5'
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  ARCH_KEYS="" STEPS=10 write_job "$d" ', "checkpoint_every": 5'
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --resume out/ckpt_5.bin --out out3 --quiet 2>&1); local rc=$?
  echo "$out"
  [ "$rc" -ne 0 ] || fail "resume of a llama checkpoint with a gpt2 job succeeded"
  assert_contains "$out" 'arch is llama but the job has model.arch "gpt2"'
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --init out/model.bin --out out4 --quiet 2>&1)
  [ $? -ne 0 ] || fail "a gpt2 job started from a llama model file"
  assert_contains "$out" 'llama model file but the job has model.arch "gpt2"'
}

t_arch_keys_are_checked_naming_the_key() {
  local d out; d=$(tmpdir)
  make_data "$d"
  ARCH_KEYS=', "rope_theta": 500' write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" 2>&1); assert_eq 2 $? "rope_theta with gpt2"
  assert_contains "$out" 'model.rope_theta: only for model.arch "llama"'
  ARCH_KEYS=', "arch": "gpt2", "ffn_hidden": 100' write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" 2>&1); assert_eq 2 $? "ffn_hidden with gpt2"
  assert_contains "$out" 'model.ffn_hidden: only for model.arch "llama"'
  ARCH_KEYS=', "arch": "mamba"' write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" 2>&1); assert_eq 2 $? "unknown arch"
  assert_contains "$out" 'model.arch: expected "gpt2" or "llama"'
  HEADS="2, 64" write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" 2>&1); assert_eq 2 $? "odd head size"
  assert_contains "$out" 'model.heads[1]: 64 heads give head size 1, which is odd'
  ARCH_KEYS=', "arch": "llama", "ffn_hidden": 96, "rope_theta": 500' write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --print-job 2>&1); assert_eq 0 $? "--print-job"
  assert_contains "$out" '"ffn_hidden": 96'
  assert_contains "$out" '"rope_theta": 500'
  assert_contains "$out" '"arch": "llama"'
}

# The trainer on the CUDA backend (prism-worker built against the CUDA emulator, fp32) with a llama job: the
# worker picks the CUDA llama table, and its metrics follow the CPU run's.
t_llama_job_on_the_cuda_backend_follows_the_cpu() {
  local d emu; d=$(tmpdir)
  emu=$(bin prism-worker.emu-fp32); [ -x "$emu" ] || skip "no $emu (the CUDA emulator is built on x86-64 only)"
  make_data "$d"; STEPS=6 write_job "$d"
  sed -i 's/"seq_len": 64/"seq_len": 32/' "$d/job.json"
  (cd "$d" && "$(bin prism-worker)" train job.json --out cpu --quiet) || fail "cpu train failed"
  (cd "$d" && "$emu" train job.json --device 0 --out gpu --quiet) || fail "cuda (emulator) train failed"
  py - "$d/cpu" "$d/gpu" <<'PY' || fail "the CUDA llama run differs from the CPU run"
import json, sys
a, b = (json.load(open(p + "/result.json")) for p in sys.argv[1:3])
print("cpu", a["device"], a["arch"], a["val_loss"], "gpu", b["device"], b["arch"], b["val_loss"])
assert a["arch"] == b["arch"] == "llama" and b["device"] == "cuda"
assert abs(a["val_loss"] - b["val_loss"]) <= 1e-3 * a["val_loss"], (a["val_loss"], b["val_loss"])
PY
}

harness_main "$@"
