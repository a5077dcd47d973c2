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

# make install PREFIX=P: the programs in P/bin and the page in P/share/prism-sweep/web, where the installed
# prism-sweep serve finds it without --web (DEPLOY's multi-box install served a 404 "no web root configured").
t_installed_serve_finds_the_page() {
  local P; P=$(tmpdir)/prefix
  make -s -C "$PRISM_ROOT" BUILD="$PRISM_BUILD" NVCC= install PREFIX="$P" >/dev/null || fail "make install PREFIX=$P"
  local p
  for p in prism-sweep prism-worker prism-data; do [ -x "$P/bin/$p" ] || fail "$P/bin/$p not installed"; done
  [ -f "$P/share/prism-sweep/web/index.html" ] && [ -f "$P/share/prism-sweep/web/app.js" ] || fail "the page not installed"
  local D; D=$(tmpdir); local port; port=$(free_port)
  (cd "$D" && exec "$P/bin/prism-sweep" serve --db "$D/p.db" --listen "127.0.0.1:$port" > "$D/server.log" 2>&1) &
  local pid=$!
  local i code=000
  for i in $(seq 1 50); do code=$(curl -s -o "$D/index.html" -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null) && [ "$code" = 200 ] && break; sleep 0.1; done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  assert_eq 200 "$code" "GET / from the installed server (log: $(cat "$D/server.log"))"
  cmp -s "$D/index.html" "$PRISM_ROOT/web/index.html" || fail "GET / is not web/index.html"
  assert_contains "$(cat "$D/server.log")" "web $P/bin/../share/prism-sweep/web"
}

harness_main "$@"
