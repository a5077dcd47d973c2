#!/usr/bin/env bash
# bench/run.sh — `make bench`: runs every benchmark program $BUILD/bench/bench_* (from bench/bench_*.c), every
# script bench/bench_*.sh and every bench/bench_*.py (with Debian's /usr/bin/python3) in turn and prints their output
# under a header. Figures go to docs/PERF.md by hand.
# BENCH=REGEX runs only the benchmarks whose name matches. Exit 1 if any benchmark failed.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD PRISM_BUILD=$(cd "$BUILD" && pwd) PRISM_ROOT=$(pwd)
failed=()
echo "bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -m)"
for b in "$BUILD"/bench/bench_* bench/bench_*.sh bench/bench_*.py; do
  [ -f "$b" ] || continue
  case $b in *.d|*.o) continue;; esac
  name=$(basename "${b%.py}" .sh)
  if [ -n "${BENCH:-}" ] && ! [[ $name =~ $BENCH ]]; then continue; fi
  echo
  echo "== $name"
  if [[ $b == *.sh ]]; then bash "$b"; elif [[ $b == *.py ]]; then /usr/bin/python3 "$b"; else [ -x "$b" ] || continue; "$b"; fi
  rc=$?
  [ $rc -eq 0 ] || { echo "!! $name exited $rc"; failed+=("$name"); }
done
echo
if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]}"; exit 1; fi
echo "bench: all done"
