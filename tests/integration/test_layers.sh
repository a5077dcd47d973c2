#!/usr/bin/env bash
# test_layers.sh — the build's order checks. The include layers (tools/layers.sh, run by `make`; the Makefile's
# INC_<folder>): the tree as committed has no back-arrow; a seeded one — by name or by path — fails naming
# file:line, and so does the compile of a folder's source with its layer's include flags; a job UPDATE or INSERT
# outside queue.c's table fails too, and so does an include up orchestrator/'s floors (ORCH_FLOORS: no circle
# inside the folder). The migrations' order (tools/embed_sql.sh, run by `make` on sql/NNN_NAME.sql): a gap or a
# repeated number fails naming the file.
# timeout: 60
. "$(dirname "$0")/../lib.sh"

# a copy of the tree's C folders (sources only) to seed
copy_tree() {
  D=$(tmpdir)
  local d
  for d in common kernels orchestrator dataprep worker; do
    mkdir -p "$D/$d"
    cp "$PRISM_ROOT"/$d/*.[ch] "$D/$d/"
  done
}

t_committed_tree_has_no_back_arrow() {
  bash "$PRISM_ROOT/tools/layers.sh" "$PRISM_ROOT" 2>"$PRISM_TEST_TMP/err" || fail "layers.sh refused the tree: $(cat "$PRISM_TEST_TMP/err")"
}

t_seeded_back_arrow_by_name_fails() {
  copy_tree
  printf '#include "agent.h"\n' >> "$D/orchestrator/queue.c"   # orchestrator/ reaching up into worker/
  local out rc
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1); rc=$?
  assert_eq 1 "$rc" "layers.sh exit on a seeded back-arrow"
  assert_contains "$out" "orchestrator/queue.c:$(wc -l < "$D/orchestrator/queue.c"): orchestrator/ includes \"agent.h\" from worker/"
  # and the compiler refuses it too: orchestrator/ sources see only orchestrator/ and common/
  out=$(cd "$D" && cc -fsyntax-only -Iorchestrator -Icommon $(pkg-config --cflags sqlite3 jansson) orchestrator/queue.c 2>&1) &&
    fail "queue.c with its layer's include flags compiled despite the back-arrow"
  assert_contains "$out" "agent.h"
}

t_seeded_back_arrow_by_path_and_from_common_fails() {
  copy_tree
  printf '#include "../kernels/model.h"\n' >> "$D/common/util.h"   # common/ is the bottom: it includes nothing above
  printf '#include "../worker/train.h"\n' >> "$D/dataprep/tokenize.c"
  local out rc
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1); rc=$?
  assert_eq 1 "$rc" "layers.sh exit on seeded back-arrows"
  assert_contains "$out" "common/util.h:"
  assert_contains "$out" "from kernels/"
  assert_contains "$out" "dataprep/tokenize.c:"
  assert_contains "$out" "from worker/"
  # worker/ may include the folders below it: not an error
  printf '#include "queue.h"\n' >> "$D/worker/slot.c"
  sed -i '$d' "$D/common/util.h"; sed -i '$d' "$D/dataprep/tokenize.c"
  bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>"$PRISM_TEST_TMP/err" || fail "worker -> orchestrator refused: $(cat "$PRISM_TEST_TMP/err")"
}

t_seeded_job_update_outside_queue_fails() {
  copy_tree
  # halving.c pruning jobs itself, as it did before its transitions moved into queue.c's table
  printf 'static const char *prune = "UPDATE jobs SET state = '"'"'pruned'"'"' WHERE id = ?1";\n' >> "$D/orchestrator/halving.c"
  local out rc
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1); rc=$?
  assert_eq 1 "$rc" "layers.sh exit on a job UPDATE outside queue.c"
  assert_contains "$out" "orchestrator/halving.c:$(wc -l < "$D/orchestrator/halving.c"): an UPDATE of jobs outside orchestrator/queue.c"
  # queue.c's own table is where it belongs
  sed -i '$d' "$D/orchestrator/halving.c"
  printf 'static const char *prune2 = "UPDATE jobs SET state = '"'"'pruned'"'"' WHERE id = ?1";\n' >> "$D/orchestrator/queue.c"
  bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>"$PRISM_TEST_TMP/err" || fail "an UPDATE in queue.c refused: $(cat "$PRISM_TEST_TMP/err")"
}

t_seeded_job_insert_outside_queue_fails() {
  copy_tree
  # racing.c adding a round's jobs itself, as it did before its insert moved into queue.c's table (queue_job_add)
  printf 'static const char *add = "INSERT INTO jobs (sweep_id, schedule_id, seed) VALUES (?1, ?2, ?3)";\n' >> "$D/orchestrator/racing.c"
  printf 'static const char *add2 = "INSERT OR IGNORE INTO jobs (sweep_id) VALUES (?1)";\n' >> "$D/orchestrator/sweeps.c"
  local out rc
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1); rc=$?
  assert_eq 1 "$rc" "layers.sh exit on a job INSERT outside queue.c"
  assert_contains "$out" "orchestrator/racing.c:$(wc -l < "$D/orchestrator/racing.c"): an INSERT INTO jobs outside orchestrator/queue.c"
  assert_contains "$out" "orchestrator/sweeps.c:$(wc -l < "$D/orchestrator/sweeps.c"): an INSERT INTO jobs outside orchestrator/queue.c"
  # another table whose name starts with jobs is not the jobs table; queue.c's own table is where it belongs
  sed -i '$d' "$D/orchestrator/racing.c"; sed -i '$d' "$D/orchestrator/sweeps.c"
  printf 'static const char *other = "INSERT INTO jobs_new (id) VALUES (?1)";\n' >> "$D/orchestrator/racing.c"
  printf 'static const char *add3 = "INSERT INTO jobs (sweep_id) VALUES (?1)";\n' >> "$D/orchestrator/queue.c"
  bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>"$PRISM_TEST_TMP/err" || fail "jobs_new, or an INSERT in queue.c, refused: $(cat "$PRISM_TEST_TMP/err")"
}

t_seeded_circle_inside_orchestrator_fails() {
  copy_tree
  # the ranking calling back into halving for its config, as it did before plan.h (issue #42)
  printf '#include "halving.h"\n' >> "$D/orchestrator/ranking.c"
  # racing reaching the ranking_build that is fed racing's own input
  printf '#include "ranking_build.h"\n' >> "$D/orchestrator/racing.h"
  # the spec reaching up into the search that runs on it (its key is search_spec.h's)
  printf '#include "search.h"\n' >> "$D/orchestrator/spec.c"
  local out rc
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1); rc=$?
  assert_eq 1 "$rc" "layers.sh exit on include circles inside orchestrator/"
  assert_contains "$out" "orchestrator/ranking.c:$(wc -l < "$D/orchestrator/ranking.c"): orchestrator/ranking (floor"
  assert_contains "$out" "includes \"halving.h\""
  assert_contains "$out" "orchestrator/racing.h:$(wc -l < "$D/orchestrator/racing.h"): orchestrator/racing (floor"
  assert_contains "$out" "orchestrator/spec.c:$(wc -l < "$D/orchestrator/spec.c"): orchestrator/spec (floor"
  # a module on no floor is named, with the fix
  printf '#include "queue.h"\n' > "$D/orchestrator/scratch.c"
  out=$(bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>&1)
  assert_contains "$out" "orchestrator/scratch is on no floor of tools/layers.sh's ORCH_FLOORS"
  # down the floors, and inside the circle that is left, is allowed
  rm "$D/orchestrator/scratch.c"; sed -i '$d' "$D/orchestrator/ranking.c" "$D/orchestrator/racing.h" "$D/orchestrator/spec.c"
  printf '#include "plan.h"\n' >> "$D/orchestrator/leaderboard.c"
  printf '#include "views.h"\n' >> "$D/orchestrator/static.c"
  bash "$PRISM_ROOT/tools/layers.sh" "$D" 2>"$PRISM_TEST_TMP/err" || fail "an include down the floors refused: $(cat "$PRISM_TEST_TMP/err")"
}

t_migration_gap_or_repeat_fails_embed_sql() {
  local D out rc; D=$(tmpdir)
  cp "$PRISM_ROOT"/sql/*.sql "$D/"
  local n; n=$(ls "$D"/*.sql | wc -l)
  out=$(bash "$PRISM_ROOT/tools/embed_sql.sh" "$D"/*.sql 2>&1) || fail "embed_sql.sh refused the committed migrations: $out"
  assert_contains "$out" "const int prism_sql_migration_count = $n;"
  assert_contains "$out" '{ "schema", prism_sql_schema },'
  local gap; gap=$(ls "$D"/002_*.sql)
  mv "$gap" "$PRISM_TEST_TMP/"   # 002 missing: 003 comes second
  out=$(bash "$PRISM_ROOT/tools/embed_sql.sh" "$D"/*.sql 2>&1); rc=$?
  assert_eq 2 "$rc" "embed_sql.sh exit on a gap"
  assert_contains "$out" "$(ls "$D"/003_*.sql): expected number 002 here (no gaps)"
  cp "$PRISM_TEST_TMP/$(basename "$gap")" "$D/"
  cp "$D"/003_*.sql "$D/003_again.sql"   # two 003s
  out=$(bash "$PRISM_ROOT/tools/embed_sql.sh" "$D"/*.sql 2>&1); rc=$?
  assert_eq 2 "$rc" "embed_sql.sh exit on a repeated number"
  assert_contains "$out" "$(ls "$D"/003_[!a]*.sql): number 003 is also $D/003_again.sql's"
}

harness_main "$@"
