#!/usr/bin/env bash
# test_funclen.sh — tools/funclen.sh, which feeds docs/CONTRIBUTING.md's size table, measures functions with
# universal-ctags: a fixture C file (tests/fixtures/funclen/sample.c) holds a wrapped signature, a macro-heavy body
# (braces in macro arguments, strings and characters, an #ifdef that opens a block in each arm), a one-liner, a
# K&R-style definition and one named through RN() (kernels/real.h), and every length is asserted; on the tree, the
# wrapped signatures the old brace scan missed are found and the CUDA kernels are measured.
# timeout: 60
. "$(dirname "$0")/../lib.sh"

FL="$PRISM_ROOT/tools/funclen.sh"
FIX="$PRISM_ROOT/tests/fixtures/funclen/sample.c"

t_fixture_lengths() {
  local out
  out=$(sh "$FL" 10 "$FIX" 2>&1) || fail "funclen.sh failed on the fixture: $out"
  assert_contains "$out" "    18 $FIX:20 macro_heavy"
  assert_contains "$out" "     7 $FIX:11 wrapped_signature"
  assert_contains "$out" "     4 $FIX:40 return_type_on_its_own_line"
  assert_contains "$out" "     1 $FIX:8 one_liner"
  assert_contains "$out" "     3 $FIX:47 by_name_macro"
  # exactly the five functions, longest first (the macros are not functions)
  assert_eq "macro_heavy wrapped_signature return_type_on_its_own_line by_name_macro one_liner" \
    "$(printf '%s\n' "$out" | sed -n '2,/^# longest files/p' | grep -v '^#' | awk '{print $3}' | tr '\n' ' ' | sed 's/ $//')" \
    "the fixture's functions, longest first"
  assert_contains "$out" "$(wc -l < "$FIX") $FIX"
}

t_tree_sees_wrapped_signatures_and_kernels() {
  local out
  out=$(sh "$FL" 100000 2>&1) || fail "funclen.sh failed on the tree: $out"
  # search.c's decide_batch has its signature wrapped over two lines: the brace scan never saw it
  printf '%s\n' "$out" | grep -qE '^ +[0-9]+ orchestrator/search\.c:[0-9]+ decide_batch$' ||
    fail "decide_batch (a wrapped signature) not measured"
  printf '%s\n' "$out" | grep -qE '^ +[0-9]+ kernels/cuda/[a-z_]+\.cu:[0-9]+ k_fa_fwd$' ||
    fail "the CUDA kernel k_fa_fwd not measured"
}

t_refuses_without_universal_ctags() {
  local D; D=$(tmpdir)
  printf '#!/bin/sh\necho "Exuberant Ctags 5.9~svn20110310"\n' > "$D/ctags"; chmod +x "$D/ctags"
  local out rc
  out=$(PATH="$D:$PATH" sh "$FL" 5 "$FIX" 2>&1); rc=$?
  assert_eq 2 "$rc" "funclen.sh exit without universal-ctags"
  assert_contains "$out" "apt-get install universal-ctags"
}

harness_main "$@"
