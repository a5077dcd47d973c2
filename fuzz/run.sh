#!/usr/bin/env bash
# fuzz/run.sh — `make fuzz`: builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for a bounded time (FUZZ_SECONDS, default 60). New corpus entries go to
# $BUILD/fuzz/corpus-NAME (the committed seeds in fuzz/corpus/NAME are only read). Crashes are written to
# $BUILD/fuzz/ and make the script fail.
#   BUILD=build FUZZ_SECONDS=60 bash fuzz/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${FUZZ_SECONDS:-60}
CC_FUZZ=${CC_FUZZ:-clang}
command -v "$CC_FUZZ" >/dev/null || { echo "fuzz: $CC_FUZZ not found (apt-get install clang)" >&2; exit 2; }
OUT=$BUILD/fuzz
mkdir -p "$OUT/gen"
bash tools/embed_sql.sh sql/*.sql >"$OUT/gen/sql_embed.c"
PKG_CFLAGS=$(pkg-config --cflags sqlite3 libuv jansson)
PKG_LIBS=$(pkg-config --libs sqlite3 libuv jansson)
SRC=$(ls orchestrator/*.c common/*.c | grep -v -e '^orchestrator/main.c$')
echo "fuzz: building $OUT/fuzz_request"
# shellcheck disable=SC2086
$CC_FUZZ -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=gnu11 \
  -Icommon -Iorchestrator -I"$OUT/gen" $PKG_CFLAGS -o "$OUT/fuzz_request" fuzz/fuzz_request.c $SRC "$OUT/gen/sql_embed.c" \
  $PKG_LIBS -lhttp_parser -lm -lpthread
mkdir -p "$OUT/corpus-request"
echo "fuzz: running fuzz_request for ${SECS}s"
"$OUT/fuzz_request" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -dict=fuzz/request.dict \
  -artifact_prefix="$OUT/" -print_final_stats=1 "$OUT/corpus-request" fuzz/corpus/request 2>&1 | tail -n 25
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && echo "fuzz: fuzz_request ran ${SECS}s without a crash" || echo "fuzz: fuzz_request FAILED (exit $rc), artifacts in $OUT/" >&2
exit "$rc"
