# torch_lib.sh — sourced by the reference trainer's tests (test_torch_*.sh): tiny data, jobs, and the two trainers
# run the way a user runs them. The trainer runs on one thread (--threads 1, OMP_NUM_THREADS=1): the machine is small.
source "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
TRAINER="$PRISM_ROOT/trainers/torch/train.py"
[ -n "${PRISM_ROOT:-}" ] || TRAINER="$(cd "$(dirname "$0")/../.." && pwd)/trainers/torch/train.py"
# Torch is a dependency (tools/deps.sh installs python3-torch); only where it is missing do these tests skip.
need_torch() { "$PY" -c 'import torch' 2>/dev/null || skip "python3-torch is not installed (make deps installs it)"; }
make_data() { "$(bin prism-data)" synth --out "$1/data" --tokens ${TOKENS:-60k} --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"; }
# write_job FILE [extra model JSON] [extra train JSON]; STEPS, BATCH, ACCUM, HEADS, EVERY, CKPT override
write_job() {
  cat > "$1" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 32, "heads": [${HEADS:-2, 4}] ${2:-}},
 "train": {"batch_size": ${BATCH:-4}, "grad_accum": ${ACCUM:-1}, "steps": ${STEPS:-10}, "lr": 0.004, "warmup_steps": 3,
           "checkpoint_every": ${CKPT:-0} ${3:-}},
 "eval": {"every": ${EVERY:-5}, "batches": 3},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
# builtin DIR JOB OUT: prism-worker train (the built-in CPU engine) from DIR
builtin() { (cd "$1" && OMP_NUM_THREADS=1 "$(bin prism-worker)" train "$2" --out "$3" --quiet) || fail "prism-worker train $2 failed"; }
# torch_run DIR JOB OUT [trainer args...]: the reference trainer with the protocol's environment, lines in OUT/lines.jsonl
# (EXEC=1: exec it, so `(EXEC=1 torch_run ...) & pid=$!` is the trainer's own pid)
torch_run() {
  local d=$1 job=$2 out=$3 ex=; shift 3
  mkdir -p "$d/$out"
  [ -n "${EXEC:-}" ] && ex=exec
  $ex env PRISM_JOB="$d/$job" PRISM_OUT="$d/$out" PRISM_DATA_ROOT="$d" PRISM_DEVICES=cpu PRISM_RESUME="${RESUME:-}" \
    PRISM_STOP_AT_STEP="${STOP:-0}" OMP_NUM_THREADS=1 "$PY" "$TRAINER" --threads 1 "$@" 3>>"$d/$out/lines.jsonl"
}
