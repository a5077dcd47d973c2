#!/usr/bin/env bash
# test_build.sh — the Makefile's default goal: `make` with no target (as README, DEPLOY and PERF write it, also with
# their variables) builds the three programs into a fresh BUILD folder. Checked with `make -n` (what make would run,
# nothing built): before the fix the default goal was the version header's rule and bare `make` built nothing.
# timeout: 120
source "$(dirname "$0")/../lib.sh"

t_bare_make_builds_the_programs() {
  local B; B=$(tmpdir)/b
  local args
  for args in "" "NVCC=" "PRECISION=fp32 NVCC="; do
    local out; out=$(make -n -C "$PRISM_ROOT" BUILD="$B" $args 2>&1) || fail "make -n $args: $out"
    local p
    for p in prism-sweep prism-worker prism-data; do
      case "$out" in *"-o $B/$p "*) ;; *) echo "$out" | tail -5; fail "bare \`make $args\` would not link $B/$p";; esac
    done
    echo "make $args: links prism-sweep, prism-worker, prism-data"
  done
  [ ! -e "$B/prism-sweep" ] || fail "make -n built something"
}

harness_main "$@"
