#!/usr/bin/env bash
# tools/realsweep.sh — makes tests/fixtures/realsweep/ again: a real sweep, trained by the CPU engine through the
# orchestrator and a worker (the product path, as tools/demo.sh), on real text, and its results exported.
#
#   1. text: the installed man pages of section 5 (/usr/share/man/man5/*.gz), each rendered to plain text by
#      `man -l` (MANWIDTH=80, col -bx), ordered by the SHA-1 of their file names, exact duplicates and empty pages
#      left out (tools/realsweep_corpus.py), one JSONL document each
#   2. the vocabulary: a 1024-token byte-level BPE learned from those documents but the first 30 (tools/bpe_train.py;
#      the val split lies in the first 30), written as GPT-2's encoder.json + vocab.bpe
#   3. shards: prism-data tokenize (dataprep/bpe.c, the project's BPE) with --val-tokens 16384: the val split is the
#      stream's first 16,384 tokens, the rest the train split
#   4. the sweep tests/fixtures/realsweep/spec.json (prism-sweep create), prism-sweep serve, one prism-worker slot
#      with one thread under nice -n 10, until nothing is left
#   5. the fixture: prism-sweep export --format jsonl (results.jsonl, metrics.jsonl filtered to the val points),
#      the leaderboard JSON and text (prism-sweep leaderboard), data/meta.json
# Everything else lives in $REALSWEEP_DIR (default /tmp/realsweep; git-ignored when inside the tree). The text only
# has to exist where this runs: the committed fixture is the results, read by tools/realsweep_diag.py and
# tests/integration/test_realsweep.sh. REALSWEEP_STAGE=data makes only the shards (steps 1-3), =train reuses the
# shards of an earlier run (steps 4-5), =export only exports a finished run's database (step 5),
# =leaderboard trains nothing: after a ranking change it re-derives leaderboard.json/txt from the committed results
# (tools/realsweep_replay.py FIXTURE BUILD $REALSWEEP_DIR/replay, then copied into the fixture; a few seconds). About 35 minutes of one core on a shared 2-core machine (the training: 33 minutes for this fixture).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
W=${REALSWEEP_DIR:-/tmp/realsweep}
FIX=tests/fixtures/realsweep
PY=/usr/bin/python3
mkdir -p "$W"

STAGE=${REALSWEEP_STAGE:-all}
if [ "$STAGE" = leaderboard ]; then
  $PY tools/realsweep_replay.py "$FIX" "$BUILD" "$W/replay"
  cp "$W/replay/leaderboard.json" "$W/replay/leaderboard.txt" "$FIX/"
  exit 0
fi
if [ "$STAGE" = all ] || [ "$STAGE" = data ]; then
  rm -rf "$W/man" "$W/data" "$W/vocab"; mkdir -p "$W/man"
  for f in /usr/share/man/man5/*.gz; do
    MANWIDTH=80 man -l "$f" 2>/dev/null | col -bx > "$W/man/$(basename "$f" .gz).txt"
  done
  $PY tools/realsweep_corpus.py "$W/man" "$W/corpus.jsonl"
  $PY tools/bpe_train.py "$W/corpus.jsonl" --vocab 1024 --skip-docs 30 --out "$W/vocab"
  "$BUILD/prism-data" tokenize "$W/corpus.jsonl" --out "$W/data" --name man --encoder "$W/vocab/encoder.json" \
    --bpe "$W/vocab/vocab.bpe" --val-tokens 16384 --threads 1 --quiet
  sha256sum "$W"/data/*.bin
  [ "$STAGE" = data ] && exit 0
fi

if [ "$STAGE" != export ]; then
rm -f "$W"/prism.db*
"$BUILD/prism-sweep" create "$FIX/spec.json" --db "$W/prism.db"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
setsid "$BUILD/prism-sweep" serve --db "$W/prism.db" --listen "127.0.0.1:$PORT" > "$W/server.log" 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
echo "realsweep: orchestrator on $URL (log $W/server.log)"
OMP_NUM_THREADS=1 nice -n 10 "$BUILD/prism-worker" --server "$URL" --token-file "$W/prism.db.worker-token" \
  --devices cpu --name realsweep-cpu --work-dir "$W/work" --data-root "$W" --poll 0.5 --idle-exit 2
kill -TERM "$SERVER"; wait "$SERVER" 2>/dev/null || true; trap - EXIT
fi

SWEEP=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$FIX/spec.json")
"$BUILD/prism-sweep" status --db "$W/prism.db" "$SWEEP"
rm -rf "$W/export"
"$BUILD/prism-sweep" export "$SWEEP" --db "$W/prism.db" --format jsonl --out "$W/export"
"$BUILD/prism-sweep" leaderboard --db "$W/prism.db" "$SWEEP" --format json > "$FIX/leaderboard.json"
"$BUILD/prism-sweep" leaderboard --db "$W/prism.db" "$SWEEP" > "$FIX/leaderboard.txt"
cp "$W/export/results.jsonl" "$FIX/results.jsonl"
grep '"kind":"val"' "$W/export/metrics.jsonl" > "$FIX/val_metrics.jsonl"
cp "$W/data/meta.json" "$FIX/data_meta.json"
$PY tools/realsweep_diag.py "$FIX" --write-expected "$FIX/diagnostics.json"
du -sh "$FIX"
