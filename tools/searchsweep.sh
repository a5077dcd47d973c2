#!/usr/bin/env bash
# tools/searchsweep.sh — makes tests/fixtures/searchsweep/ again: the full grid of a real CPU sweep, against which
# the adaptive search (issue #38: the surrogate on a budget of a fraction of the grid) is replayed. The CPU engine is
# deterministic per job (schedule + seed), so replaying these recorded results through the server is the same as
# training the schedules the search asks for.
#
#   1. the shards: tools/realsweep.sh's data stage (man pages of section 5, a 1024-token BPE learned from them,
#      the val split the stream's first 16,384 tokens) into $REALSWEEP_DIR/data (default /tmp/realsweep/data),
#      run only when those shards are missing
#   2. the sweep tests/fixtures/searchsweep/spec.json (every one of the 35 schedules of L=8, d_model=64, h_base=8 ×
#      seeds 1-3 = 105 jobs; evaluation at step 0 and the end, on the whole val split): prism-sweep create,
#      prism-sweep serve, one prism-worker slot with one thread under nice -n 19, until nothing is left
#   3. the fixture: prism-sweep export --format jsonl (results.jsonl, metrics.jsonl filtered to the val points),
#      the leaderboard JSON and text (prism-sweep leaderboard), data/meta.json
# Steps 2 and 3 are tools/cpusweep_lib.sh's, as tools/realsweep.sh's are.
# Everything else lives in $SEARCHSWEEP_DIR (default /tmp/searchsweep). SEARCHSWEEP_STAGE=export only exports a
# finished run's database (step 3); =leaderboard trains nothing: it re-derives leaderboard.json/txt from the
# committed results (tools/realsweep_replay.py FIXTURE BUILD $SEARCHSWEEP_DIR/replay). About 41 minutes of one core
# on a shared 2-core machine for this fixture (16 s a job on an idle core, up to 52 s under load).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
W=${SEARCHSWEEP_DIR:-/tmp/searchsweep}
D=${REALSWEEP_DIR:-/tmp/realsweep}
FIX=tests/fixtures/searchsweep
PY=/usr/bin/python3
. tools/cpusweep_lib.sh
mkdir -p "$W"

STAGE=${SEARCHSWEEP_STAGE:-all}
if [ "$STAGE" = leaderboard ]; then
  cpusweep_leaderboard
  exit 0
fi
if ! ls "$D"/data/man_train_*.bin "$D"/data/man_val_*.bin >/dev/null 2>&1; then
  BUILD=$BUILD REALSWEEP_DIR=$D REALSWEEP_STAGE=data tools/realsweep.sh
fi
if [ "$STAGE" != export ]; then cpusweep_train "$D" 19 searchsweep-cpu; fi
cpusweep_export "$D/data"
du -sh "$FIX"
