#!/usr/bin/env bash
# bench/bench_engine_ab.sh — the CPU engine of two prism-worker builds on the same job, alternated in pairs (A then B,
# B then A in the next pair, so drift and the second-run advantage hit both alike), tokens/s read from each run's
# result.json, the ratio B/A per pair. Issue #39's job: L=4, d=128, T=128, B=8, 60 steps, OMP_NUM_THREADS=2.
#   [PAIRS=6] bash bench/bench_engine_ab.sh OLD=PATH/TO/prism-worker NEW=PATH/TO/prism-worker
# Prints a row per pair and the median ratio; also whether the two final val losses are bit-identical.
set -euo pipefail
PAIRS=${PAIRS:-6}
[ $# -eq 2 ] || { echo "usage: [PAIRS=N] $0 LABEL_A=PATH/prism-worker LABEL_B=PATH/prism-worker" >&2; exit 2; }
for spec in "$@"; do
  case $spec in *=*) [ -x "${spec#*=}" ] || { echo "$0: ${spec#*=}: not an executable prism-worker" >&2; exit 2; };;
  *) echo "$0: $spec: expected LABEL=PATH" >&2; exit 2;; esac
done
LA=${1%%=*} A=${1#*=} LB=${2%%=*} B=${2#*=}
PD=$(dirname "$B")/prism-data
W=$(mktemp -d /tmp/prism-bench-engine-XXXXXX); trap 'rm -rf "$W"' EXIT
"$PD" synth --out "$W/data" --tokens 400k --vocab 256 --seed 1 >/dev/null
cat > "$W/job.json" <<JSON
{"model": {"n_layer": 4, "d_model": 128, "vocab_size": 256, "seq_len": 128, "heads": [2, 4, 8, 8]},
 "train": {"batch_size": 8, "steps": 60, "lr": 0.003, "warmup_steps": 5},
 "eval": {"every": 30, "batches": 2},
 "data": {"train": "$W/data/synth_train_*.bin", "val": "$W/data/synth_val_*.bin"}}
JSON
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
one() { # one BIN -> "tok_per_s val_loss"
  rm -rf "$W/out"
  "$1" train "$W/job.json" --out "$W/out" --quiet >/dev/null 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(repr(float(r['tok_per_s'])), repr(float(r['val_loss'])))" "$W/out/result.json"
}
echo "| pair | order | $LA tok/s | $LB tok/s | $LB / $LA |"
echo "|---|---|---|---|---|"
ratios=() same=1
for p in $(seq "$PAIRS"); do
  if [ $((p % 2)) -eq 1 ]; then read -r ta va < <(one "$A"); read -r tb vb < <(one "$B"); order="$LA, $LB"
  else read -r tb vb < <(one "$B"); read -r ta va < <(one "$A"); order="$LB, $LA"; fi
  [ "$va" = "$vb" ] || same=0
  r=$(python3 -c "print('%.3f' % ($tb / $ta))")
  ratios+=("$r")
  printf '| %d | %s | %.0f | %.0f | %s |\n' "$p" "$order" "$ta" "$tb" "$r"
done
python3 -c "import statistics,sys; v=list(map(float,sys.argv[1:])); print('median %s/%s: %.3f (min %.3f, max %.3f, %d pairs)' % ('$LB','$LA',statistics.median(v),min(v),max(v),len(v)))" "${ratios[@]}"
[ "$same" = 1 ] && echo "final val loss bit-identical in every run: $va" || echo "final val losses differ between the builds ($LA $va, $LB $vb)"
