#!/usr/bin/env bash
# test_fuzz_build.sh — `make fuzz` from a clean tree: every libFuzzer target builds with clang and runs (1 s each),
# with nothing of `make`'s build folder (version_gen.h, the embedded SQL) to lean on. Issue #44: fuzz_request and
# fuzz_spec did not build on a clean clone. The Python trainer target is left to `make fuzz` itself.
# timeout: 900
source "$(dirname "$0")/../lib.sh"

t_every_fuzz_target_builds_and_runs_from_a_clean_build_folder() {
  command -v clang >/dev/null || fail "clang missing: run make deps (tools/deps.sh --fuzz installs it)"
  local d; d=$(tmpdir)
  local targets="request job spec schedule shard checkpoint lease parquet walscan extrun point"
  local rc=0
  (cd "$PRISM_ROOT" && BUILD="$d/b" FUZZ_SECONDS=1 FUZZ_TARGETS="$targets" nice bash fuzz/run.sh) >"$d/log" 2>&1 || rc=$?
  tail -n 40 "$d/log"
  assert_eq 0 "$rc" "fuzz/run.sh exit status"
  local t
  for t in $targets; do
    [ -x "$d/b/fuzz/fuzz_$t" ] || fail "fuzz_$t was not built"
    grep -q "fuzz: fuzz_$t ran 1s without a crash" "$d/log" || fail "fuzz_$t did not run"
  done
}

harness_main "$@"
