#!/usr/bin/env bash
# fuzz/run.sh — `make fuzz`: builds every libFuzzer target with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for a bounded time (FUZZ_SECONDS per target, default 20: the twelve targets ≈ 5 min with the builds). New corpus
# entries go to $BUILD/fuzz/corpus-NAME (the committed seeds in fuzz/corpus/NAME are only read). Crashes are
# written to $BUILD/fuzz/NAME-crash-* and make the script fail (copy a reproducer to fuzz/corpus/NAME/ once
# fixed: tests/unit/test_fuzz_corpus.c replays every file there in `make check`).
#   BUILD=build FUZZ_SECONDS=60 FUZZ_TARGETS="job spec" bash fuzz/run.sh
# Targets (fuzz/fuzz_NAME.c): request (HTTP request path), job (job JSON), spec (sweep spec), schedule
# (schedule text + validation), shard (llm.c token shards), checkpoint (llm.c model / training-state files),
# lease (the lease wrapper a worker reads), parquet (prism-data's parquet text-column reader and input sniffer),
# walscan (the WAL serve reads before opening its database), extrun (an external trainer's fd-3 protocol lines
# and the --trainer COMMAND splitter, worker/extrun.c), point (the worker's metrics point, heartbeat and result).
# Each target file defines fuzz_NAME_one(); -DPRISM_LIBFUZZER adds LLVMFuzzerTestOneInput around it.
# Target trainer (Python, no clang): fuzz/fuzz_trainer.py, the reference PyTorch trainer's parsers (job JSON, token
# shards, model files, fd-3 protocol lines; trainers/torch/), run when /usr/bin/python3 has numpy (skipped with a
# note otherwise) for FUZZ_SECONDS split over its four parsers, seed FUZZ_SEED (default: the time, printed, so a
# crash's run repeats with FUZZ_SEED=N). Reproducers go to $BUILD/fuzz/trainer-crash/; once fixed, copy one to
# fuzz/corpus/py-NAME/ (tests/integration/test_torch_fuzz.sh replays those in `make check`).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${FUZZ_SECONDS:-20}
CC_FUZZ=${CC_FUZZ:-clang}
TARGETS=${FUZZ_TARGETS:-request job spec schedule shard checkpoint lease parquet walscan extrun point trainer}
PY=/usr/bin/python3
need_cc=0; for t in $TARGETS; do [ "$t" = trainer ] || need_cc=1; done
[ "$need_cc" = 0 ] || command -v "$CC_FUZZ" >/dev/null || { echo "fuzz: $CC_FUZZ not found (apt-get install clang)" >&2; exit 2; }
OUT=$BUILD/fuzz
mkdir -p "$OUT/gen"
bash tools/embed_sql.sh sql/*.sql >"$OUT/gen/sql_embed.c"
bash tools/embed_text.sh deploy/slurm/prism-worker.sbatch >"$OUT/gen/deploy_embed.c"   # `launch slurm` prints it
# common/version.c's header, which the Makefile writes into $BUILD/gen: a clean clone has none before `make`
printf '#define PRISM_VERSION_STRING "%s"\n' "$(git describe --always --dirty --tags 2>/dev/null || echo fuzz)" >"$OUT/gen/version_gen.h"
FLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=gnu11 -DPRISM_LIBFUZZER
       -Icommon -Iorchestrator -Iworker -Ikernels -Idataprep -I"$OUT/gen")

# sources and libraries per target (only what the parser needs, so each build stays small)
srcs() {
  case $1 in
    request)    ls orchestrator/*.c common/*.c | grep -v -e '^orchestrator/main.c$'; echo "$OUT/gen/sql_embed.c" "$OUT/gen/deploy_embed.c" ;;
    job)        echo common/job.c common/schedule.c common/util.c ;;
    spec)       srcs request ;;   # spec.c checks halving (halving.c: the store) and sizes jobs (common/jobmodel.c)
    schedule)   echo common/schedule.c common/util.c ;;
    shard)      echo common/shard.c common/util.c ;;
    checkpoint) ls kernels/*.c; echo common/util.c ;;
    lease)      echo common/lease.c common/job.c common/schedule.c common/util.c ;;   # trainer names: job.c
    extrun)     echo worker/extrun.c worker/extrun_line.c worker/pgrec.c common/job.c common/schedule.c common/util.c common/logesc.c common/point.c common/result_check.c ;;
    point)      echo common/point.c common/heartbeat.c common/jobresult.c ;;
    parquet)    echo dataprep/parquet.c dataprep/input.c ;;
    walscan)    echo orchestrator/walscan.c ;;
  esac
}
libs() {
  case $1 in
    request|spec) echo "$(pkg-config --cflags --libs sqlite3 libuv jansson libcurl) -lhttp_parser -lm -lpthread" ;;
    job|lease|extrun|point|schedule) echo "$(pkg-config --cflags --libs jansson) -lm" ;;
    checkpoint) echo "-fopenmp $(pkg-config --cflags --libs openblas) -lm -lpthread" ;;
    parquet)    echo "-lz -lzstd -lsnappy -llz4 -lbrotlidec" ;;
    *)          echo "-lm" ;;
  esac
}
# per-target libFuzzer options: inputs that fit the format (headers are 1 KiB)
opts() {
  case $1 in
    shard|checkpoint|walscan) echo "-max_len=8192" ;;
    spec)             echo "-max_len=4096" ;;
    parquet)          echo "-max_len=16384" ;;
    *)                echo "" ;;
  esac
}

failed=()
# the Python target: the trainer's parsers, FUZZ_SECONDS in all
fuzz_trainer() {
  if ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "fuzz: trainer skipped: $PY has no numpy (apt-get install python3-numpy)"; return 0
  fi
  local seed=${FUZZ_SEED:-$(date +%s)}
  echo "fuzz: running fuzz/fuzz_trainer.py for ${SECS}s (four parsers, seed $seed)"
  if "$PY" fuzz/fuzz_trainer.py --seconds "$(awk -v s="$SECS" 'BEGIN { print s / 4 }')" --seed "$seed" \
      --crash-dir "$OUT/trainer-crash"; then
    echo "fuzz: trainer ran ${SECS}s without a crash"
  else
    echo "fuzz: trainer FAILED (seed $seed), reproducers in $OUT/trainer-crash/" >&2; failed+=(trainer)
  fi
}
for t in $TARGETS; do
  [ "$t" = trainer ] && { fuzz_trainer; continue; }
  [ -f "fuzz/fuzz_$t.c" ] || { echo "fuzz: no target fuzz/fuzz_$t.c" >&2; failed+=("$t"); continue; }
  echo "fuzz: building $OUT/fuzz_$t"
  # shellcheck disable=SC2046
  if ! $CC_FUZZ "${FLAGS[@]}" -o "$OUT/fuzz_$t" "fuzz/fuzz_$t.c" $(srcs "$t") $(libs "$t"); then
    echo "fuzz: fuzz_$t FAILED to build" >&2; failed+=("$t"); continue
  fi
  mkdir -p "$OUT/corpus-$t"
  dict=(); [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  echo "fuzz: running fuzz_$t for ${SECS}s"
  # shellcheck disable=SC2046
  "$OUT/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 "${dict[@]}" $(opts "$t") \
    -artifact_prefix="$OUT/$t-" -print_final_stats=1 "$OUT/corpus-$t" "fuzz/corpus/$t" 2>&1 | tail -n 25
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then echo "fuzz: fuzz_$t ran ${SECS}s without a crash"
  else echo "fuzz: fuzz_$t FAILED (exit $rc), artifacts in $OUT/$t-*" >&2; failed+=("$t"); fi
done
if [ ${#failed[@]} -gt 0 ]; then echo "fuzz: FAILED: ${failed[*]}" >&2; exit 1; fi
echo "fuzz: all targets ran ${SECS}s each without a crash: $TARGETS"
