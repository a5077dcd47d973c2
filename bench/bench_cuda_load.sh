#!/usr/bin/env bash
# bench/bench_cuda_load.sh — what a CPU run pays for the CUDA backend: whole-process peak memory (max RSS) and
# wall time of `prism-worker help` and of a tiny 40-step CPU `prism-worker train`, for each worker binary given,
# alternated A/B/... in every round (so load drift hits each alike), measured by /usr/bin/time -v.
#   [ROUNDS=7] bash bench/bench_cuda_load.sh [LABEL=PATH/TO/prism-worker ...]
# e.g. cpu=build-cpu/prism-worker (`make BUILD=build-cpu NVCC=`, no CUDA at all) against new=build/prism-worker
# (links no CUDA; loads prism-cuda.so only for --device N). With no binaries named (as `make bench` runs it):
# $BUILD/prism-worker, after $BUILD-cpu/prism-worker when that exists. Prints one row per binary and command:
# median and min of wall s and max RSS MiB, and the ratio of medians to the first binary's.
set -euo pipefail
ROUNDS=${ROUNDS:-7}
if [ $# -eq 0 ]; then
  B=${BUILD:-build}
  [ -x "$B-cpu/prism-worker" ] && set -- "cpu=$B-cpu/prism-worker"
  set -- "$@" "worker=$B/prism-worker"
fi
for spec in "$@"; do
  case $spec in *=*) [ -x "${spec#*=}" ] || { echo "$0: ${spec#*=}: not an executable prism-worker" >&2; exit 2; };;
  *) echo "usage: [ROUNDS=N] $0 [LABEL=PATH/TO/prism-worker ...]" >&2; exit 2;; esac
done
PD=$(dirname "${1#*=}")/prism-data
W=$(mktemp -d /tmp/prism-bench-cudaload-XXXXXX); trap 'rm -rf "$W"' EXIT
"$PD" synth --out "$W/data" --tokens 200k --vocab 256 --seed 1 >/dev/null
cat > "$W/job.json" <<JSON
{"model": {"n_layer": 4, "d_model": 64, "vocab_size": 256, "seq_len": 64, "heads": [4, 4, 4, 4]},
 "train": {"batch_size": 8, "steps": 40, "lr": 0.005, "warmup_steps": 5},
 "eval": {"every": 20, "batches": 2},
 "data": {"train": "$W/data/synth_train_*.bin", "val": "$W/data/synth_val_*.bin"}}
JSON
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
one() { # one CMDNAME BIN -> "wall_s maxrss_kib"
  local t=$W/time.txt
  if [ "$1" = help ]; then /usr/bin/time -v "$2" help >/dev/null 2>"$t" || true
  else rm -rf "$W/out"; /usr/bin/time -v "$2" train "$W/job.json" --out "$W/out" --quiet 2>"$t" >/dev/null; fi
  awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=a[n]+(n>1?a[n-1]*60:0)} /Maximum resident/{m=$2} END{print s, m}' "$t"
}
echo "| command | binary | wall s, median (min) | peak RSS MiB, median (min) | wall vs first | RSS vs first | runs |"
echo "|---|---|---|---|---|---|---|"
for cmd in help train; do
  declare -A WALL=() RSS=()
  for r in $(seq "$ROUNDS"); do
    for spec in "$@"; do
      read -r w m < <(one "$cmd" "${spec#*=}")
      WALL[${spec%%=*}]+="$w "; RSS[${spec%%=*}]+="$m "
    done
  done
  first=""
  for spec in "$@"; do
    l=${spec%%=*}
    python3 - "$cmd" "$l" "${WALL[$l]}" "${RSS[$l]}" "${first}" <<'PY'
import statistics as st, sys
cmd, label, w, m, first = sys.argv[1], sys.argv[2], list(map(float, sys.argv[3].split())), list(map(float, sys.argv[4].split())), sys.argv[5]
mw, mm = st.median(w), st.median(m) / 1024
ref = ""
if first:
    fw, fm = map(float, first.split(","))
    ref = " | x%.2f | x%.2f" % (mw / fw, mm / fm)
else:
    ref = " | 1 | 1"
print("| %s | %s | %.3f (min %.3f) | %.1f (min %.1f)%s | %d |" % (cmd, label, mw, min(w), mm, min(m) / 1024, ref, len(w)))
PY
    [ -n "$first" ] || first=$(python3 -c "import statistics as st,sys; print('%s,%s' % (st.median(map(float,'${WALL[$l]}'.split())), st.median(map(float,'${RSS[$l]}'.split()))/1024))")
  done
  unset WALL RSS
done
