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
# Steps 4 and 5 are tools/cpusweep_lib.sh's (shared with tools/searchsweep.sh). Everything else lives in $REALSWEEP_DIR (default /tmp/realsweep; git-ignored when inside the tree). The text only
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
. tools/cpusweep_lib.sh
mkdir -p "$W"

STAGE=${REALSWEEP_STAGE:-all}
if [ "$STAGE" = leaderboard ]; then
  cpusweep_leaderboard
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

if [ "$STAGE" != export ]; then cpusweep_train "$W" 10 realsweep-cpu; fi
cpusweep_export "$W/data"
$PY tools/realsweep_diag.py "$FIX" --write-expected "$FIX/diagnostics.json"
du -sh "$FIX"
