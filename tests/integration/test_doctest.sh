#!/usr/bin/env bash
# test_doctest.sh — the shell commands of README.md, docs/DEPLOY.md, docs/PERF.md, docs/TRAINERS.md and
# trainers/torch/README.md, as written, against the built programs (tools/doctest.py; issue #41):
#  - every command is classified in tools/doctest.py's RULES, and parses: its program, subcommand and every flag
#    exist (the programs' --help), its make targets pass make -n, the repo paths it names exist;
#  - the ones that can run on a CPU run (tokenize, evalfile, create, serve + a worker on a tiny sweep, status,
#    leaderboard, requeue, export, launch slurm, enumerate, ...) and show what the doc says;
#  - the check fails on a doc copy seeded with a misspelt flag, an unknown subcommand or target, a missing repo
#    path, an unclassified command, a runnable command that exits non-zero, a file the doc says is written;
#  - docs/CONTRIBUTING.md's list of the commands is the one `tools/doctest.py --list` generates.
# timeout: 240
. "$(dirname "$0")/../lib.sh"

PRISM_ROOT=${PRISM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
DT=$PRISM_ROOT/tools/doctest.py

t_docs_commands_parse() {
  local out rc=0
  out=$(/usr/bin/python3 "$DT" parse --build "$PRISM_BUILD" 2>&1) || rc=$?
  assert_eq 0 "$rc" "tools/doctest.py parse exit status (output: $out)"
  assert_contains "$out" "doctest: 0 failed"
  # every doc has commands, and most of them run
  local n; n=$(echo "$out" | sed -n 's/^doctest: \([0-9]*\) commands in 5 docs: \([0-9]*\) run.*/\2/p')
  [ "${n:-0}" -ge 25 ] || fail "only ${n:-0} commands classified run: $out"
}

t_runnable_commands_run() {
  local out rc=0
  out=$(/usr/bin/python3 "$DT" run --build "$PRISM_BUILD" 2>&1) || rc=$?
  assert_eq 0 "$rc" "tools/doctest.py run exit status (output: $(echo "$out" | tail -n 30))"
  assert_contains "$out" "doctest: 0 failed"
  local d
  for d in README.md docs/DEPLOY.md; do
    assert_contains "$out" "run  $d:"
  done
  assert_contains "$out" "prism-worker --server http://127.0.0.1:"
  assert_contains "$out" "prism-sweep leaderboard --db prism.db gpt2-124m"
}

# seeded DOC FROM TO: a copy of DOC with the first line holding FROM changed to TO, in $S; prints its path
seeded() {
  local doc=$1 from=$2 to=$3 f
  f=$S/$(basename "$doc").$RANDOM
  /usr/bin/python3 - "$PRISM_ROOT/$doc" "$f" "$from" "$to" <<'PY' || fail "no [$from] in $doc to seed"
import sys
src, dst, a, b = sys.argv[1:]
t = open(src, encoding="utf-8").read()
if a not in t: sys.exit(1)
open(dst, "w", encoding="utf-8").write(t.replace(a, b, 1))
PY
  echo "$f"
}

# expect_fail WHAT NEEDLE ARGS...: tools/doctest.py ARGS exits 1 and its output has NEEDLE
expect_fail() {
  local what=$1 needle=$2 out rc=0; shift 2
  out=$(/usr/bin/python3 "$DT" "$@" --build "$PRISM_BUILD" 2>&1) || rc=$?
  assert_eq 1 "$rc" "doctest on $what (output: $out)"
  assert_contains "$out" "$needle"
}

t_seeded_breakage_fails() {
  S=$(tmpdir)
  local r
  r=$(seeded README.md "--pow2 --count" "--pow3 --count")
  expect_fail "a misspelt flag" "README.md:157: \`prism-sweep enumerate --L 12 --dmodel 768 --pow3 --count\`: prism-sweep enumerate has no flag --pow3" parse --doc README.md="$r"
  r=$(seeded README.md "--encoder encoder.json --bpe vocab.bpe  #" "--encoder encoder.json --bpe-file vocab.bpe  #")
  expect_fail "a misspelt prism-data flag" "prism-data tokenize has no flag --bpe-file" parse --doc README.md="$r"
  r=$(seeded docs/DEPLOY.md "prism-sweep launch slurm --server" "prism-sweep launch slurmm --server")
  expect_fail "an unknown launch target" "prism-sweep launch has no target slurmm" parse --doc docs/DEPLOY.md="$r"
  r=$(seeded docs/DEPLOY.md "prism-sweep status --db" "prism-sweep stats --db")
  expect_fail "an unknown command" "prism-sweep has no command stats" parse --doc docs/DEPLOY.md="$r"
  r=$(seeded docs/DEPLOY.md "-- --data-root /shared/prism      # prints" "-- --data-dir /shared/prism      # prints")
  expect_fail "a worker flag after launch's --" "prism-worker (after --) has no flag --data-dir" parse --doc docs/DEPLOY.md="$r"
  r=$(seeded trainers/torch/README.md "--devices 0,1,2,3 --data-root" "--device 0,1,2,3 --data-root")
  expect_fail "a misspelt worker flag" "prism-worker agent has no flag --device" parse --doc trainers/torch/README.md="$r"
  r=$(seeded docs/DEPLOY.md "kubectl apply -k deploy/k8s" "kubectl apply -k deploy/k9s")
  expect_fail "a missing repo path" "names deploy/k9s, which is not in the repository" parse --doc docs/DEPLOY.md="$r"
  r=$(seeded docs/PERF.md "bash tests/gpu/run.sh" "bash tests/gpu/runs.sh")
  expect_fail "a missing script" "tests/gpu/runs.sh: no such file" parse --doc docs/PERF.md="$r"
  r=$(seeded README.md "make demo" "make demos")
  expect_fail "a missing make target" "make -n demos fails" parse --doc README.md="$r"
  r=$(seeded README.md "prism-sweep power sweeps/gpt2-124m.json" "prism-sweep power sweeps/gpt2-125m.json")
  expect_fail "a missing spec" "names sweeps/gpt2-125m.json, which is not in the repository" parse --doc README.md="$r"
  r=$(seeded docs/TRAINERS.md "# each worker:" "prism-worker agent --poll 2
# each worker:")
  expect_fail "an unclassified command" "matches no rule of tools/doctest.py's RULES" parse --doc docs/TRAINERS.md="$r"
  # a runnable command that exits non-zero (an invalid schedule), and a file the doc says it writes
  r=$(seeded README.md "3,3,6,6,8,8,12,12,12,12,12,12" "3,3,6,6,8,8,12,12,12,12,12,13")
  expect_fail "a failing command" "README.md:158: \`prism-sweep validate --dmodel 768 3,3,6,6,8,8,12,12,12,12,12,13\` exited" run --only "validate" --doc README.md="$r"
  r=$(seeded README.md "text_train_000000.bin, ..." "text_train_000001.bin, ...")
  expect_fail "a file not written" "writes text_train_000001.bin; it did not" run --only "tokenize fineweb/sample" --doc README.md="$r"
  # the unseeded docs pass the same checks
  local out
  out=$(/usr/bin/python3 "$DT" run --only "validate|tokenize fineweb/sample" --build "$PRISM_BUILD" 2>&1) || fail "unseeded: $out"
}

t_contributing_lists_the_commands() {
  local want have
  want=$(/usr/bin/python3 "$DT" --list) || fail "tools/doctest.py --list failed"
  have=$(sed -n '/^<!-- doctest list: generated/,/^<!-- doctest list end -->/p' "$PRISM_ROOT/docs/CONTRIBUTING.md" | sed '1d;$d')
  [ "$want" = "$have" ] || fail "docs/CONTRIBUTING.md's list of the docs' commands is stale: run tools/doctest.py --list --write (diff: $(diff <(echo "$have") <(echo "$want") | head -n 20))"
  assert_contains "$want" "| README.md | \`prism-sweep enumerate --L 12 --dmodel 768\` | runs |"
}

harness_main "$@"
