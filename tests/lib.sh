# tests/lib.sh — sourced by tests/integration/test_*.sh. A file defines functions named t_CASE and ends
# with `harness_main "$@"`: `--list` prints the cases, `CASE` runs one (exit 0 pass, 77 skip, else fail).
# Helpers: bin NAME (path of a built program), tmpdir, fail MSG, assert_eq EXP ACT MSG,
# assert_contains HAYSTACK NEEDLE, free_port, strip_timing FILE.
set -u
PRISM_BUILD=${PRISM_BUILD:-build}
# a program the tests run: the shipped one, or, while a test hook's variable (PRISM_FAULT_*) is set, its test-hook
# build (common/testhook.h: make tests builds $PRISM_BUILD/hooks/prism-{sweep,worker}; the shipped ones have none)
bin() {
  if [ -n "${!PRISM_FAULT_*}" ] && [ -x "$PRISM_BUILD/hooks/$1" ]; then echo "$PRISM_BUILD/hooks/$1"; else echo "$PRISM_BUILD/$1"; fi
}
tmpdir() { mktemp -d "${PRISM_TEST_TMP:-/tmp}/prism-XXXXXX"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }
assert_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: expected [$1], got [$2]"; }
assert_contains() { case "$1" in *"$2"*) ;; *) fail "expected [$2] in: $1";; esac; }
# A TCP port nobody listens on right now (the kernel picks it).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A metrics.jsonl without its timing field, which legitimately differs between runs.
strip_timing() { sed 's/,"tok_per_s":[^,}]*//' "$1"; }
harness_main() {
  if [ "${1:-}" = "--list" ]; then declare -F | awk '{print $3}' | grep '^t_' | sed 's/^t_//'; exit 0; fi
  [ $# -eq 1 ] || { echo "usage: $0 --list | CASE" >&2; exit 2; }
  declare -F "t_$1" >/dev/null || { echo "no such case: $1" >&2; exit 2; }
  "t_$1"
}
