#!/usr/bin/env bash
# tests/run.sh — runs every test case in its own process (own session) with a timeout and prints
# "N passed, N failed[, N skipped]" last. Exit 1 when anything failed.
#   unit:        $BUILD/tests/test_*          (from tests/unit/test_*.c; test_*.emu-* and test_cudaemu run the
#                                              CUDA kernels in the CPU emulator, tests/cudaemu)
#   integration: tests/integration/test_*.sh  (real processes on loopback)
#   web:         tests/web/test_*.py          (headless Chromium through WebDriver)
# A test source may say "timeout: SECONDS" in its first 15 lines (default 120). TIMEOUT_SCALE=N multiplies
# every timeout (make sanitize sets it: ASan/UBSan run the emulated kernels several times slower).
# T=REGEX runs only the cases whose "file:case" matches; V=1 prints every case's output.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export PRISM_BUILD=$(cd "$BUILD" && pwd)
export PRISM_ROOT=$(pwd)
export PRISM_TEST_TMP=$(mktemp -d /tmp/prism-tests-XXXXXX)
trap 'rm -rf "$PRISM_TEST_TMP"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
unset COLUMNS LINES   # the programs fit their text to COLUMNS: a case that wants a width sets it itself
pass=0; failn=0; skipn=0; failed=()

file_timeout() { local t; t=$(head -n 15 "$1" 2>/dev/null | grep -o 'timeout: *[0-9]*' | head -n1 | grep -o '[0-9]*'); echo $(( ${t:-120} * ${TIMEOUT_SCALE:-1} )); }

run_case() { # run_case LABEL TIMEOUT CMD...
  local label=$1 to=$2; shift 2
  if [ -n "${T:-}" ] && ! [[ $label =~ $T ]]; then return; fi
  local log="$PRISM_TEST_TMP/case.log" start end rc
  start=$(date +%s.%N)
  setsid timeout -k 5 "$to" "$@" >"$log" 2>&1 </dev/null &
  local pid=$!
  wait $pid; rc=$?
  kill -KILL -- -$pid 2>/dev/null
  end=$(date +%s.%N)
  local dt; dt=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
  if [ $rc -eq 0 ]; then pass=$((pass+1)); printf 'ok      %s (%ss)\n' "$label" "$dt"; [ -n "${V:-}" ] && sed 's/^/        /' "$log"
  elif [ $rc -eq 77 ]; then skipn=$((skipn+1)); printf 'skip    %s: %s\n' "$label" "$(grep -m1 'skipped' "$log" | cut -c1-160)"
  else
    failn=$((failn+1)); failed+=("$label")
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && printf 'FAIL    %s (timed out after %ss)\n' "$label" "$to" || printf 'FAIL    %s (exit %d, %ss)\n' "$label" "$rc" "$dt"
    tail -n 40 "$log" | sed 's/^/        | /'
  fi
}

for b in "$BUILD"/tests/test_*; do
  [ -x "$b" ] || continue
  name=$(basename "$b"); src=tests/unit/${name%%.*}.c   # test_x.emu-fp32 is test_x.c built for the CUDA emulator
  [ -f "$src" ] || src=tests/cudaemu/$name.cu
  to=$(file_timeout "$src")
  for c in $("$b" --list); do run_case "unit/$name:$c" "$to" "$b" "$c"; done
done
for f in tests/integration/test_*.sh; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .sh); to=$(file_timeout "$f")
  for c in $(bash "$f" --list); do run_case "integration/$name:$c" "$to" bash "$f" "$c"; done
done
for f in tests/web/test_*.py; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .py); to=$(file_timeout "$f")
  for c in $(/usr/bin/python3 "$f" --list); do run_case "web/$name:$c" "$to" /usr/bin/python3 "$f" "$c"; done
done

if [ $failn -gt 0 ]; then echo; echo "failed:"; printf '  %s\n' "${failed[@]}"; fi
echo
if [ $skipn -gt 0 ]; then echo "$pass passed, $failn failed, $skipn skipped"; else echo "$pass passed, $failn failed"; fi
[ $failn -eq 0 ]
