# shellcheck shell=bash
# tools/cpusweep_lib.sh — the stages that tools/realsweep.sh and tools/searchsweep.sh share (sourced, not run): a
# committed fixture's sweep trained by the CPU engine through the product path (prism-sweep create, prism-sweep
# serve, one prism-worker slot with one thread), its export into the fixture, and the re-derivation of the
# fixture's leaderboard from its committed results. Each expects the caller's BUILD, W (the work dir), FIX (the
# fixture dir, holding spec.json) and PY to be set, and the working directory to be the repository root.

# cpusweep_leaderboard: leaderboard.json/txt of $FIX re-derived by the current build from the committed results
# (tools/realsweep_replay.py FIXTURE BUILD $W/replay), nothing trained.
cpusweep_leaderboard() {
  $PY tools/realsweep_replay.py "$FIX" "$BUILD" "$W/replay"
  cp "$W/replay/leaderboard.json" "$W/replay/leaderboard.txt" "$FIX/"
}

# cpusweep_train DATA_ROOT NICE NAME: a fresh $W/prism.db from $FIX/spec.json, prism-sweep serve on a free loopback
# port, one worker slot (OMP_NUM_THREADS=1, nice -n NICE, worker name NAME, data globs against DATA_ROOT) until no
# job is left, then the server stopped. Prints the training's wall time.
cpusweep_train() {
  local root=$1 niceness=$2 name=$3 port url server start
  rm -f "$W"/prism.db*
  "$BUILD/prism-sweep" create "$FIX/spec.json" --db "$W/prism.db"
  port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url="http://127.0.0.1:$port"
  setsid "$BUILD/prism-sweep" serve --db "$W/prism.db" --listen "127.0.0.1:$port" > "$W/server.log" 2>&1 &
  server=$!
  # shellcheck disable=SC2064  # the local pid, expanded now on purpose
  trap "kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true" EXIT
  for _ in $(seq 1 100); do curl -sf "$url/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  echo "$name: orchestrator on $url (log $W/server.log)"
  start=$(date +%s)
  OMP_NUM_THREADS=1 nice -n "$niceness" "$BUILD/prism-worker" --server "$url" --token-file "$W/prism.db.worker-token" \
    --devices cpu --name "$name" --work-dir "$W/work" --data-root "$root" --poll 0.5 --idle-exit 2
  echo "$name: trained in $(( $(date +%s) - start )) s"
  kill -TERM "$server"; wait "$server" 2>/dev/null || true; trap - EXIT
}

# cpusweep_export DATA_DIR: $W/prism.db's sweep (named by $FIX/spec.json) into $FIX: results.jsonl (the export's),
# val_metrics.jsonl (the export's metrics.jsonl, its "kind":"val" points), leaderboard.json and leaderboard.txt
# (prism-sweep leaderboard), data_meta.json (DATA_DIR/meta.json, the shards').
cpusweep_export() {
  local sweep
  sweep=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$FIX/spec.json")
  "$BUILD/prism-sweep" status --db "$W/prism.db" "$sweep"
  rm -rf "$W/export"
  "$BUILD/prism-sweep" export "$sweep" --db "$W/prism.db" --format jsonl --out "$W/export"
  "$BUILD/prism-sweep" leaderboard --db "$W/prism.db" "$sweep" --format json > "$FIX/leaderboard.json"
  "$BUILD/prism-sweep" leaderboard --db "$W/prism.db" "$sweep" > "$FIX/leaderboard.txt"
  cp "$W/export/results.jsonl" "$FIX/results.jsonl"
  grep '"kind":"val"' "$W/export/metrics.jsonl" > "$FIX/val_metrics.jsonl"
  cp "$1/meta.json" "$FIX/data_meta.json"
}
