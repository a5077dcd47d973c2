#!/usr/bin/env bash
# test_cuda_backend.sh — the CUDA backend is a shared object that prism-worker loads only for a CUDA device
# (kernels/model.h, kernels/model_backend.c): no program links a CUDA library; a CUDA device without a usable
# backend (no file, not a regular file, not a backend, another ABI, a short symbol, NULL tables, no device) is
# one message naming the file and the fix, exit 2,
# and CPU runs of the same binary are untouched; the emulator's worker runs on the emulated backend object.
# timeout: 180
source "$(dirname "$0")/../lib.sh"

job() { # job DIR: synthetic data and a tiny job (B=2, T=16, 2 layers)
  "$(bin prism-data)" synth --out "$1/data" --tokens 20k --vocab 64 --seed 5 >/dev/null || fail "prism-data synth failed"
  cat > "$1/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 32, "vocab_size": 64, "seq_len": 16, "heads": [2, 4]},
 "train": {"batch_size": 2, "steps": ${STEPS:-2}, "lr": 0.004, "warmup_steps": 1},
 "eval": {"every": 0, "batches": 1},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
# expect_exit2 OUTDIR CMD...: CMD must exit 2 and create nothing at OUTDIR; its stderr is left in $ERR
expect_exit2() {
  local out=$1; shift
  ERR=$("$@" 2>&1 >/dev/null); local rc=$?
  echo "exit $rc: $ERR"
  assert_eq 2 "$rc" "exit status of $*"
  [ ! -e "$out" ] || fail "$out was created by a run that could not have its device"
}

t_programs_link_no_cuda_library() {
  local b libs n=0 linked
  # only the programs that call CUDA kernels directly, and the backend objects, may link CUDA
  for b in "$(bin prism-worker)" "$(bin prism-sweep)" "$(bin prism-data)" "$PRISM_BUILD"/tests/test_* "$PRISM_BUILD"/bench/bench_*; do
    case $(basename "$b") in test_cuda_kernels|test_cuda_llama|test_cuda_cudnn|bench_cuda_gpt2|bench_cuda_attention|*.emu-*|*.so|*.d) continue;; esac
    [ -x "$b" ] && [ -f "$b" ] && head -c 4 "$b" | grep -q ELF || continue
    libs=$(ldd "$b" 2>&1) || fail "ldd $b: $libs"
    linked=$(echo "$libs" | grep -oE 'lib(cudart|cublasLt|cublas|cuda)\.so[^ ]*' | sort -u | tr '\n' ' ')
    [ -z "$linked" ] || fail "$b links $linked"
    n=$((n + 1))
  done
  echo "$n programs checked; none links libcudart, libcublas, libcublasLt or libcuda"
  [ "$n" -ge 5 ] || fail "only $n programs found under $PRISM_BUILD"
  if [ -f "$(bin prism-cuda.so)" ]; then   # built with nvcc: the backend object is where CUDA is linked
    assert_contains "$(ldd "$(bin prism-cuda.so)")" "libcudart"
    assert_eq "prism_model_backend" "$(nm -D --defined-only "$(bin prism-cuda.so)" | awk '{print $3}' | tr '\n' ' ' | xargs)" \
      "the symbols prism-cuda.so exports"
  fi
}

# A CUDA device asked of a prism-worker with no prism-cuda.so beside it: one message naming the file it looked
# for and the fixes, exit 2, nothing written; the same binary trains on the CPU as ever.
t_cuda_device_with_the_backend_file_removed_fails_with_exit_2() {
  local d; d=$(tmpdir); job "$d"; mkdir "$d/bin"; cp "$(bin prism-worker)" "$d/bin/"; cd "$d"
  unset PRISM_CUDA_BACKEND
  expect_exit2 "$d/o" "$d/bin/prism-worker" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "CUDA backend $d/bin/prism-cuda.so (looked for next to this binary): no such file"
  assert_contains "$ERR" "PRISM_CUDA_BACKEND=/path/to/prism-cuda.so"
  assert_contains "$ERR" "--device cpu"
  [ "$(echo "$ERR" | grep -c .)" = 1 ] || fail "expected one line of error, got: $ERR"
  # named by the environment variable: that path is the one reported
  PRISM_CUDA_BACKEND="$d/nowhere/prism-cuda.so" expect_exit2 "$d/o" "$d/bin/prism-worker" train job.json --out "$d/o" --device cuda:0
  assert_contains "$ERR" "CUDA backend $d/nowhere/prism-cuda.so (named by PRISM_CUDA_BACKEND): no such file"
  # the agent says so before it registers (the server address is never contacted)
  echo tok > "$d/token"; chmod 600 "$d/token"
  expect_exit2 "$d/wk" "$d/bin/prism-worker" --server http://127.0.0.1:9 --token-file "$d/token" --devices cpu,0 --work-dir "$d/wk"
  assert_contains "$ERR" "--devices 0: CUDA backend $d/bin/prism-cuda.so (looked for next to this binary): no such file"
  # CPU runs pay nothing for it and work as before
  "$d/bin/prism-worker" train job.json --out "$d/cpu" --quiet || fail "CPU run of the same binary failed"
  [ -s "$d/cpu/result.json" ] || fail "no result.json from the CPU run"
  assert_contains "$(cat "$d/cpu/result.json")" '"device": "cpu"'
  case $(cat "$d/cpu/result.json") in *'"backend"'*) fail "a CPU run names a CUDA backend";; esac
}

# A file that is not a prism backend, or one of another ABI version, is refused with the same kind of message.
t_backend_of_another_abi_or_not_a_backend_is_refused() {
  local d; d=$(tmpdir); job "$d"; cd "$d"
  local bad; bad=$(bin tests/libbackend_badabi.so); [ -f "$bad" ] || fail "no $bad (make tests builds it)"
  PRISM_CUDA_BACKEND=$bad expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "CUDA backend $bad (named by PRISM_CUDA_BACKEND) has backend ABI version 1001"
  assert_contains "$ERR" "this prism-worker needs version 1"
  assert_contains "$ERR" "rebuild both with one \`make\`"
  local shim; shim=$(bin tests/libfsync_delay.so); [ -f "$shim" ] || fail "no $shim"
  PRISM_CUDA_BACKEND=$shim expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "$shim (named by PRISM_CUDA_BACKEND) is not a prism CUDA backend (it has no symbol prism_model_backend)"
  # not a shared object at all: dlopen's own reason, and the fix
  echo "not an ELF file" > "$d/prism-cuda.so"
  PRISM_CUDA_BACKEND=$d/prism-cuda.so expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "CUDA backend $d/prism-cuda.so (named by PRISM_CUDA_BACKEND) cannot be loaded"
  assert_contains "$ERR" "ldd $d/prism-cuda.so"
}

# A FIFO, a backend whose model tables are all NULLs and a 1-byte symbol are refused at load, each with one
# message and exit 2, promptly (the FIFO hung the worker 20 s; the NULL tables crashed the first job after its
# lease, rc 139; the 1-byte symbol was read past): by `prism-worker train`, and by the agent before it registers.
t_fifo_null_tables_and_short_symbol_are_refused() {
  local d; d=$(tmpdir); job "$d"; cd "$d"
  mkfifo "$d/fifo.so"
  PRISM_CUDA_BACKEND=$d/fifo.so expect_exit2 "$d/o" timeout 10 "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "CUDA backend $d/fifo.so (named by PRISM_CUDA_BACKEND) is not a regular file (a FIFO)"
  mkdir "$d/dir.so"
  PRISM_CUDA_BACKEND=$d/dir.so expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "is not a regular file (a directory)"
  # the right version and sizes, device_check fine, but every model_ops entry NULL (or one of them)
  cat > "$d/nullops.c" <<'C'
#include "model.h"
static int ok(int device, char *err, size_t errlen) { (void)device; (void)err; (void)errlen; return 0; }
static int create(const struct model_config *c, int d, model **out, char *e, size_t n) { (void)c; (void)d; (void)e; (void)n; *out = 0; return -1; }
static const model_ops none = {0};
#ifdef ONE_NULL
static const model_ops one = { "cuda", create, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
#define TABLE &one
#else
#define TABLE &none
#endif
__attribute__((visibility("default"))) const struct model_backend prism_model_backend = {
    MODEL_BACKEND_ABI, sizeof(struct model_backend), sizeof(model_ops), sizeof(struct model_config), "cuda", "bf16",
    TABLE, TABLE, ok,
};
C
  cc -shared -fPIC -I"$PRISM_ROOT/kernels" -o "$d/nullops.so" "$d/nullops.c" || fail "cc nullops.so"
  cc -shared -fPIC -DONE_NULL -I"$PRISM_ROOT/kernels" -o "$d/onenull.so" "$d/nullops.c" || fail "cc onenull.so"
  local so
  for so in nullops onenull; do
    PRISM_CUDA_BACKEND=$d/$so.so expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
    assert_contains "$ERR" "CUDA backend $d/$so.so (named by PRISM_CUDA_BACKEND) has an incomplete table (a model table with a NULL function)"
  done
  echo tok > "$d/token"; chmod 600 "$d/token"
  PRISM_CUDA_BACKEND=$d/nullops.so expect_exit2 "$d/wk" "$(bin prism-worker)" --server http://127.0.0.1:9 \
    --token-file "$d/token" --devices 0 --work-dir "$d/wk"
  assert_contains "$ERR" "--devices 0: CUDA backend $d/nullops.so (named by PRISM_CUDA_BACKEND) has an incomplete table"
  # the symbol is one byte (and, with the name right, a function is no table either)
  printf '__attribute__((visibility("default"))) const char prism_model_backend = 1;\n' > "$d/short.c"
  printf '__attribute__((visibility("default"))) int prism_model_backend(void) { return 1; }\n' > "$d/func.c"
  cc -shared -fPIC -o "$d/short.so" "$d/short.c" || fail "cc short.so"
  cc -shared -fPIC -o "$d/func.so" "$d/func.c" || fail "cc func.so"
  PRISM_CUDA_BACKEND=$d/short.so expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "$d/short.so (named by PRISM_CUDA_BACKEND) is not a prism CUDA backend: its symbol prism_model_backend is 1 byte(s)"
  PRISM_CUDA_BACKEND=$d/func.so expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "its symbol prism_model_backend is no data object of 0 byte(s)"
  [ "$(echo "$ERR" | grep -c .)" = 1 ] || fail "expected one line of error, got: $ERR"
}

# prism-worker.emu-* is the ordinary prism-worker loading the emulator's backend object: result.json names the
# object that trained it; the emulator's "no device" and a missing index are exit 2 like a real machine's.
t_the_emulator_worker_loads_the_emulated_backend() {
  local emu; emu=$(bin prism-worker.emu-fp32); [ -x "$emu" ] || skip "no $emu (the CUDA emulator is built on x86-64 only)"
  local d; d=$(tmpdir); job "$d"; cd "$d"
  local so; so=$(cd "$PRISM_BUILD" && pwd)/prism-cuda.emu-fp32.so
  "$emu" train job.json --out "$d/g" --device 0 2>"$d/err.txt" || fail "emulated run failed: $(cat "$d/err.txt")"
  assert_contains "$(cat "$d/err.txt")" "device 0: CUDA backend cuda-emulator (fp32) from $so"
  /usr/bin/python3 - "$d/g/result.json" "$so" <<'PY' || fail "result.json does not name the emulated backend"
import json, sys
r = json.load(open(sys.argv[1]))
print("device", r["device"], "backend", r.get("backend"))
b = r["backend"]
assert r["device"] == "cuda", r["device"]
assert (b["name"], b["precision"], b["abi"], b["file"]) == ("cuda-emulator", "fp32", 1, sys.argv[2]), b
PY
  CUDAEMU_DEVICES=0 expect_exit2 "$d/o" "$emu" train job.json --out "$d/o" --device 0
  assert_contains "$ERR" "device 0: no CUDA device is visible here: no NVIDIA driver or no GPU"
  assert_contains "$ERR" "(CUDA backend $so, cuda-emulator fp32)"
  expect_exit2 "$d/o" "$emu" train job.json --out "$d/o" --device 3
  assert_contains "$ERR" "device 3: this machine has 1 CUDA device(s), 0..0. Fix: pick one of those"
}

# The nvcc-built backend on this machine: on one without a GPU (CI, this VM) --device 0 is exit 2 saying there
# is no device; on a GPU machine the tiny job trains on it.
t_the_real_backend_says_when_there_is_no_device() {
  local so; so=$(bin prism-cuda.so); [ -f "$so" ] || skip "no $so (built only where nvcc is found)"
  local d; d=$(tmpdir); job "$d"; cd "$d"
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    "$(bin prism-worker)" train job.json --out "$d/g" --device 0 --quiet || fail "training on GPU 0 failed"
    assert_contains "$(cat "$d/g/result.json")" '"name": "cuda"'
  else
    expect_exit2 "$d/o" "$(bin prism-worker)" train job.json --out "$d/o" --device 0
    assert_contains "$ERR" "device 0: no CUDA device is visible here"
    assert_contains "$ERR" "(CUDA backend $(cd "$PRISM_BUILD" && pwd)/prism-cuda.so, cuda "
  fi
}

harness_main "$@"
