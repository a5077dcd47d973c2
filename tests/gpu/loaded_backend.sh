# tests/gpu/loaded_backend.sh — sourced by tests/gpu/run.sh after its full `make all tests`: the product's
# prism-worker, which links no CUDA library, trains a tiny job on GPU 0 through the prism-cuda.so it loads
# (kernels/model.h), and its losses follow the same job on the CPU. Uses run.sh's record / fail_row.
#   loaded_backend_check MAKE_BUILD_DIR
loaded_backend_check() {
  local b=$1 d=$1/loaded-backend linked out
  mkdir -p "$d"
  linked=$(ldd "$b/prism-worker" | grep -oE 'lib(cudart|cublasLt|cublas)\.so[^ ]*' | tr '\n' ' ')
  if [ -n "$linked" ]; then fail_row "loaded backend" "prism-worker links $linked"; return; fi
  "$b/prism-data" synth --out "$d/data" --tokens 200k --vocab 256 --seed 7 >/dev/null || { fail_row "loaded backend" "prism-data synth failed"; return; }
  cat > "$d/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 128, "vocab_size": 256, "seq_len": 64, "heads": [2, 4]},
 "train": {"batch_size": 8, "steps": 20, "lr": 0.003, "warmup_steps": 2},
 "eval": {"every": 10, "batches": 2},
 "data": {"train": "$d/data/synth_train_*.bin", "val": "$d/data/synth_val_*.bin"}}
JSON
  if ! out=$("$b/prism-worker" train "$d/job.json" --out "$d/cpu" --quiet 2>&1); then fail_row "loaded backend" "CPU run: $out"; return; fi
  if ! out=$(timeout 120 "$b/prism-worker" train "$d/job.json" --out "$d/gpu" --device 0 2>&1); then
    fail_row "loaded backend" "$(echo "$out" | grep -m1 -E 'prism-worker|error' | cut -c1-200)"; return
  fi
  echo "$out" | grep -m1 'CUDA backend'
  out=$(python3 - "$d/cpu/result.json" "$d/gpu/result.json" "$b/prism-cuda.so" <<'PY' 2>&1
import json, os, sys
a, g = (json.load(open(p)) for p in sys.argv[1:3])
bk = g.get("backend") or {}
assert bk.get("name") == "cuda" and os.path.realpath(bk.get("file", "")) == os.path.realpath(sys.argv[3]), bk
rel = abs(a["val_loss"] - g["val_loss"]) / a["val_loss"]
assert rel < 5e-2, "val_loss cpu %.5f gpu %.5f" % (a["val_loss"], g["val_loss"])
print("loaded %s (%s, ABI %d): val_loss %.5f vs CPU %.5f (rel %.2g), %.0f tok/s" % (bk["file"], bk["precision"], bk["abi"], g["val_loss"], a["val_loss"], rel, g["tok_per_s"]))
PY
  ) && record "loaded backend" PASS "$out" || fail_row "loaded backend" "$(echo "$out" | tail -n 1 | cut -c1-200)"
}
