#!/usr/bin/env bash
# test_readonly_db.sh — `prism-sweep status` and `leaderboard` read a results database on read-only media (a
# read-only bind mount in a private mount namespace, else a folder the `nobody` user cannot write), and both
# commands give the same exit status for the same kind of error (commands.h: 1 run time, 2 bad input).
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

# A finished 2-job sweep in $D/prism.db, the server stopped cleanly (WAL checkpointed).
finished_sweep() {
  w_setup
  w_spec "$D/spec.json" ro '["4,4,4,4", "2,2,4,4"]' '[1]' 6
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker w1 --idle-exit 1
  w_exit "$LAST_PID" 60
  assert_eq 2 "$(w_count "$sid" done)" "done jobs"
  kill -TERM "$SERVER_PID"; w_exit "$SERVER_PID" 20
}

# ro_run CMD...: runs CMD where $D/ro (a copy of the database's folder) is read-only; sets RO_OUT and RO_RC.
ro_run() {
  RO_RC=0
  if unshare -m true 2>/dev/null; then
    RO_OUT=$(unshare -m bash -c 'mount --bind -o ro "$1" "$1" && touch "$1/probe" 2>/dev/null && exit 99; shift; "$@"' \
               _ "$D/ro" "$@" 2>&1) || RO_RC=$?
    [ "$RO_RC" != 99 ] || fail "the bind mount is not read-only"
  elif command -v setpriv >/dev/null; then
    chmod 555 "$D/ro"; chmod 644 "$D/ro"/*
    RO_OUT=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$@" 2>&1) || RO_RC=$?
  else
    skip "neither unshare -m nor setpriv: no way to make read-only media here"
  fi
}

t_status_and_leaderboard_on_readonly_media() {
  finished_sweep
  local want_status want_lb
  want_status=$("$(bin prism-sweep)" status --db "$D/prism.db" ro) || fail "status on the writable copy"
  want_lb=$("$(bin prism-sweep)" leaderboard --db "$D/prism.db" ro --format csv) || fail "leaderboard on the writable copy"
  mkdir "$D/ro"
  cp "$D/prism.db" "$D/ro/"
  [ -e "$D/ro/prism.db-wal" ] && fail "the copy has a -wal file: the server did not checkpoint at exit"
  ro_run "$(bin prism-sweep)" status --db "$D/ro/prism.db" ro
  assert_eq 0 "$RO_RC" "status on read-only media: $RO_OUT"
  assert_eq "$want_status" "$RO_OUT" "status on read-only media"
  ro_run "$(bin prism-sweep)" leaderboard --db "$D/ro/prism.db" ro --format csv
  assert_eq 0 "$RO_RC" "leaderboard on read-only media: $RO_OUT"
  assert_eq "$want_lb" "$RO_OUT" "leaderboard on read-only media"
  ls "$D/ro" | grep -q -- '-shm$' && fail "a -shm file appeared on the read-only media"
  # a -wal file beside it (writes not checkpointed) is named: those writes are not seen
  head -c 4096 /dev/zero > "$D/ro/prism.db-wal"
  ro_run "$(bin prism-sweep)" status --db "$D/ro/prism.db" ro
  assert_eq 0 "$RO_RC" "status with a -wal on read-only media: $RO_OUT"
  assert_contains "$RO_OUT" "4096 bytes of $D/ro/prism.db-wal are not seen"
}

# The same error, the same exit status from both read commands (and from the admin commands for their own).
t_exit_status_per_kind_of_error() {
  D=$(tmpdir)
  local cmd rc out
  same() { # EXPECTED_RC NEEDLE ARGS...: both commands, same status, the message names the problem
    local want=$1 needle=$2; shift 2
    for cmd in status leaderboard; do
      rc=0; out=$("$(bin prism-sweep)" "$cmd" "$@" 2>&1 >/dev/null) || rc=$?
      assert_eq "$want" "$rc" "prism-sweep $cmd $*: $out"
      assert_contains "$out" "$needle"
    done
  }
  same 2 "no such file" --db "$D/none.db"
  same 2 "not a file" --db "$D"
  echo "not a database" > "$D/text.db"
  same 2 "$D/text.db" --db "$D/text.db"
  sqlite3 "$D/empty.db" "CREATE TABLE t(x)"
  same 2 "is not a prism-sweep database" --db "$D/empty.db"
  "$(bin prism-sweep)" create "$PRISM_ROOT/sweeps/tiny-cpu.json" --db "$D/new.db" > /dev/null 2>&1 || fail "create"
  local v; v=$(sqlite3 "$D/new.db" "PRAGMA user_version")
  sqlite3 "$D/new.db" "PRAGMA user_version = 99"
  same 2 "schema version 99" --db "$D/new.db"
  sqlite3 "$D/new.db" "PRAGMA user_version = $v"
  same 2 '"nosuch"' --db "$D/new.db" nosuch
}

# --version: the version the build embedded (git describe at build time, $(BUILD)/gen/version_gen.h), the same in
# all three programs; from a tarball without .git (git archive: VERSION via export-subst) the Makefile still knows it.
t_version_of_all_three_programs() {
  local gen; gen=$(sed -n 's/^#define PRISM_VERSION_STRING "\(.*\)"$/\1/p' "$PRISM_BUILD/gen/version_gen.h")
  [ -n "$gen" ] || fail "no version in $PRISM_BUILD/gen/version_gen.h"
  local p
  for p in prism-sweep prism-worker prism-data; do
    assert_eq "$p $gen" "$("$(bin "$p")" --version)" "$p --version"
  done
  command -v git >/dev/null && git -C "$PRISM_ROOT" rev-parse HEAD >/dev/null 2>&1 || skip "no git checkout here"
  [ "$gen" != unknown ] || fail "a build in a git checkout says version unknown"
  local d; d=$(tmpdir)
  git -C "$PRISM_ROOT" archive HEAD | tar -x -C "$d" || fail "git archive"
  [ ! -e "$d/.git" ] || fail "the tarball has a .git"
  local want; want=$(git -C "$PRISM_ROOT" describe --always --tags HEAD)
  local got; got=$(make -s -C "$d" version)
  case "$want" in *"$got"*|"$got"*) ;; *) fail "the tarball's version: expected a part of [$want], got [$got]";; esac
  [ "$got" != unknown ] && [ -n "$got" ] || fail "the tarball's version is [$got]"
}

harness_main "$@"
