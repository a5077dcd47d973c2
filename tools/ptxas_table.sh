#!/usr/bin/env bash
# tools/ptxas_table.sh [LOG] — the resource table of every CUDA kernel (docs/PERF.md), from ptxas itself: compiles
# each kernels/cuda/*.cu for sm_90 with the Makefile's nvcc flags plus -Xptxas -v (the same code: the report is
# the only difference), into the build's object files so a following `make` finds them up to date, keeps the
# compiler's report in LOG (default build/ptxas.log), and prints the markdown table tools/ptxas_table.py makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)}
BUILD=${BUILD:-build}
LOG=${1:-$BUILD/ptxas.log}
mkdir -p "$BUILD/obj/kernels/cuda" "$(dirname "$LOG")"
: > "$LOG"
for f in kernels/cuda/*.cu; do
  echo "== $(basename "$f")" >> "$LOG"
  "$NVCC" -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 --use_fast_math --default-stream per-thread \
    -Xcompiler -fPIC -Ikernels -Icommon -MMD -MP -Xptxas -v -c "$f" -o "$BUILD/obj/kernels/cuda/$(basename "$f").o" 2>> "$LOG"
done
"$NVCC" --version | tail -n 1 >&2
python3 tools/ptxas_table.py "$LOG"
