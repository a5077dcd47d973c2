#!/usr/bin/env bash
# test_datain.sh — `prism-data tokenize` on the inputs users have: parquet files written by independent writers
# (hyparquet-writer, parquetjs-lite, parquet-wasm (arrow-rs's writer) and DuckDB from the npm registry, installed
# into a cache directory on first use; DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY values, LZ4 / LZ4_RAW / BROTLI),
# gzip and zstd streams, each tokenized to exactly the shards of the same rows given as plain JSONL / text;
# binary inputs refused by their magic, naming the format; the default shard names matching the shipped specs.
# The npm install must succeed: a failure fails the case (PRISM_NPM_OFFLINE=1 turns an unreachable registry into
# a skip, for machines with no network at all). timeout: 300
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/data_lib.sh"

NPM_DIR=${PRISM_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prism-sweep/npm}
WRITE=$PRISM_ROOT/tests/integration/parquet_write.mjs

# The writers, pinned, in $NPM_DIR/node_modules (installed once; later runs reuse them).
npm_setup() {
  command -v node >/dev/null || fail "node not found (Debian's nodejs package; tools/deps.sh installs it)"
  command -v npm >/dev/null || fail "npm not found (Debian's npm package; tools/deps.sh installs it)"
  mkdir -p "$NPM_DIR"
  (
    flock 9
    local m ok=1
    for m in hyparquet-writer parquetjs-lite parquet-wasm apache-arrow @duckdb/node-api; do [ -f "$NPM_DIR/node_modules/$m/package.json" ] || ok=0; done
    [ $ok = 1 ] && exit 0
    cd "$NPM_DIR" || exit 1
    [ -f package.json ] || echo '{"name": "prism-sweep-test-writers", "private": true}' > package.json
    npm install --no-audit --no-fund --loglevel=error hyparquet-writer@0.17.0 parquetjs-lite@0.8.7 parquet-wasm@0.8.0 \
        apache-arrow@21.2.0 @duckdb/node-api@1.5.6-r.1 > npm.log 2>&1
  ) 9>"$NPM_DIR/.lock"
  local rc=$?
  if [ $rc -ne 0 ]; then
    if [ "${PRISM_NPM_OFFLINE:-}" = 1 ] && ! npm ping >/dev/null 2>&1; then skip "the npm registry is unreachable and PRISM_NPM_OFFLINE=1"; fi
    fail "npm install of the parquet writers failed (rc $rc): $(tail -5 "$NPM_DIR/npm.log" 2>/dev/null)"
  fi
}

# rows.json in $1 (a JSON array: strings, a few nulls) and rows.jsonl (the same rows, nulls left out).
# $2 = dup: 60 distinct documents drawn 2000 times (a dictionary pays); uniq: 1500 distinct ones.
make_rows() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, random, sys
d, mode = sys.argv[1], sys.argv[2]
r = random.Random(7)
words = "the cat sat on a mat and then in the sun it saw ünïcödé ☃ café 12 345 don't it's we've — “quotes”\ttab".split(" ")
def doc(k): return " ".join(r.choice(words) for _ in range(k)) + ("\n\nsecond paragraph" if r.random() < 0.3 else "")
if mode == "dup":
    pool = [doc(r.randint(5, 60)) for _ in range(60)]
    rows = [r.choice(pool) for _ in range(2000)]
else:
    rows = [doc(r.randint(5, 120)) + f" #{i}" for i in range(1500)]
rows.append("")                      # an empty document is still a document
for i in (3, 500, 1200): rows[i] = None
json.dump(rows, open(d + "/rows.json", "w"))
with open(d + "/rows.jsonl", "w") as f:
    for x in rows:
        if x is not None: f.write(json.dumps({"text": x, "id": 1}) + "\n")
PY
}

tok() { # tok DIR OUT INPUT... (extra flags after --)
  local d=$1 out=$2; shift 2
  (cd "$d" && "$(bin prism-data)" tokenize "$@" --out "$out" --encoder encoder.json --bpe vocab.bpe \
      --val-tokens 3000 --shard-tokens 20000 --threads 2 --quiet) > "$d/$out.log" 2>&1 || fail "tokenize $* failed: $(cat "$d/$out.log")"
}

# the shards of DIR/A and DIR/B are the same files, byte for byte, and there are several
same_shards() {
  local d=$1 a=$2 b=$3 n=0 f
  for f in "$d/$a"/text_*.bin; do
    n=$((n + 1))
    cmp -s "$f" "$d/$b/$(basename "$f")" || fail "$b/$(basename "$f") differs from $a/$(basename "$f")"
  done
  assert_eq "$(ls "$d/$a" | grep -c '\.bin$')" "$(ls "$d/$b" | grep -c '\.bin$')" "shard count $a vs $b"
  [ "$n" -ge 3 ] || fail "only $n shards in $a: the case should span several"
  assert_eq "$(jq -c '[.documents, .train_tokens, .val_tokens]' "$d/$a/meta.json")" \
            "$(jq -c '[.documents, .train_tokens, .val_tokens]' "$d/$b/meta.json")" "meta.json documents/tokens $a vs $b"
}

inspect() { node "$WRITE" "$NPM_DIR" inspect "$1"; }

t_parquet_from_hyparquet_writer_equals_jsonl() {
  npm_setup
  local d; d=$(tmpdir); make_vocab "$d"
  for mode in dup uniq; do
    make_rows "$d" $mode
    tok "$d" "jsonl-$mode" rows.jsonl
    # snappy (the default) in several row groups and pages; zstd; gzip; uncompressed; PLAIN forced
    local spec
    for spec in 'snappy:{"codec":"SNAPPY","rowGroupSize":700,"pageSize":4000}' 'zstd:{"codec":"ZSTD","rowGroupSize":[300,900],"pageSize":20000}' \
                'gzip:{"codec":"GZIP","rowGroupSize":1000}' 'none:{"codec":"UNCOMPRESSED","pageSize":2500}' \
                'plain:{"codec":"SNAPPY","encoding":"PLAIN","rowGroupSize":800,"pageSize":5000}'; do
      local name=${spec%%:*} opts=${spec#*:}
      node "$WRITE" "$NPM_DIR" hyparquet "$d/$mode-$name.parquet" "$d/rows.json" "$opts" || fail "hyparquet-writer $name"
      local info; info=$(inspect "$d/$mode-$name.parquet") || fail "inspect $name"
      echo "$mode-$name: $info"
      [ "$(echo "$info" | jq '.row_groups')" -ge 2 ] || [ "$name" = gzip ] || [ "$name" = none ] || fail "$name: one row group: $info"
      [ "$(echo "$info" | jq '.pages.DATA_PAGE_V2')" -ge 2 ] || fail "$name: fewer than 2 data pages: $info"
      if [ $mode = dup ] && [ $name != plain ]; then
        [ "$(echo "$info" | jq '.pages.DICTIONARY_PAGE')" -ge 1 ] || fail "$name: no dictionary page in the dup rows: $info"
        echo "$info" | jq -e '.encodings | index("RLE_DICTIONARY")' >/dev/null || fail "$name: no RLE_DICTIONARY pages: $info"
      fi
      [ $name = plain ] && { echo "$info" | jq -e '.pages.DICTIONARY_PAGE == null' >/dev/null || fail "plain: has a dictionary: $info"; }
      tok "$d" "pq-$mode-$name" "$mode-$name.parquet"
      same_shards "$d" "jsonl-$mode" "pq-$mode-$name"
    done
  done
  # the codecs were really used
  assert_contains "$(inspect "$d/dup-zstd.parquet")" '"codecs":["ZSTD"]'
  assert_contains "$(inspect "$d/dup-snappy.parquet")" '"codecs":["SNAPPY"]'
}

t_parquet_from_parquetjs_v1_pages_equals_jsonl() {
  npm_setup
  local d; d=$(tmpdir); make_vocab "$d"; make_rows "$d" uniq
  tok "$d" jsonl rows.jsonl
  local spec
  for spec in 'v1snappy:{"codec":"SNAPPY","pageSize":200,"rowGroupSize":600}' 'v1gzip:{"codec":"GZIP","pageSize":300,"rowGroupSize":1000}' \
              'v1none:{"codec":"UNCOMPRESSED","pageSize":400}' 'v2snappy:{"codec":"SNAPPY","v2":true,"pageSize":250,"rowGroupSize":700}'; do
    local name=${spec%%:*} opts=${spec#*:}
    node "$WRITE" "$NPM_DIR" parquetjs "$d/$name.parquet" "$d/rows.json" "$opts" || fail "parquetjs-lite $name"
    local info; info=$(inspect "$d/$name.parquet") || fail "inspect $name"
    echo "$name: $info"
    local kind=DATA_PAGE; [ "${name:0:2}" = v2 ] && kind=DATA_PAGE_V2
    [ "$(echo "$info" | jq ".pages.$kind")" -ge 3 ] || fail "$name: fewer than 3 $kind pages: $info"
    tok "$d" "pq-$name" "$name.parquet"
    same_shards "$d" jsonl "pq-$name"
  done
  [ "$(inspect "$d/v1snappy.parquet" | jq .row_groups)" -ge 2 ] || fail "v1snappy: one row group"
}

# has INFO KEY VALUE: inspect's JSON lists VALUE under KEY (codecs / encodings), or has more than VALUE pages of
# page type KEY
has() { echo "$1" | jq -e --arg k "$2" --arg v "$3" 'if $k == "codecs" or $k == "encodings" then .[$k] | index($v) != null
                                                    else (.pages[$k] // 0) > ($v | tonumber) end' >/dev/null; }

# The DELTA byte-array encodings (v1 and v2 pages) and the LZ4 / LZ4_RAW / BROTLI codecs, from three independent
# writers: hyparquet-writer (its own DELTA encoders; pages compressed here by node's zlib and the lz4 CLI, LZ4 in
# Hadoop frames, in the LZ4 frame format and bare), arrow-rs (parquet-wasm) and DuckDB (its PARQUET_VERSION V2
# files: DELTA_LENGTH_BYTE_ARRAY strings in v1 pages). Each file is checked by inspect (hyparquet's reader) to
# hold the codec, encoding and pages its spec says, and tokenizes to the shards of the same rows as JSONL.
t_parquet_delta_encodings_and_lz4_brotli_equal_jsonl() {
  npm_setup
  local d; d=$(tmpdir); make_vocab "$d"
  local mode spec files=0
  for mode in uniq dup; do
    make_rows "$d" $mode
    tok "$d" "jsonl-$mode" rows.jsonl
    # writer:name:encoding:codec:page type:pages at least:options
    for spec in \
      'hyparquet:dba-lz4raw:DELTA_BYTE_ARRAY:LZ4_RAW:DATA_PAGE_V2:2:{"codec":"LZ4_RAW","encoding":"DELTA_BYTE_ARRAY","rowGroupSize":700,"pageSize":6000}' \
      'hyparquet:dlba-brotli:DELTA_LENGTH_BYTE_ARRAY:BROTLI:DATA_PAGE_V2:2:{"codec":"BROTLI","encoding":"DELTA_LENGTH_BYTE_ARRAY","rowGroupSize":[400,900],"pageSize":9000}' \
      'hyparquet:dba-lz4hadoop:DELTA_BYTE_ARRAY:LZ4:DATA_PAGE_V2:2:{"codec":"LZ4","encoding":"DELTA_BYTE_ARRAY","pageSize":7000}' \
      'hyparquet:dlba-lz4frame:DELTA_LENGTH_BYTE_ARRAY:LZ4:DATA_PAGE_V2:2:{"codec":"LZ4","lz4":"frame","encoding":"DELTA_LENGTH_BYTE_ARRAY","pageSize":7000}' \
      'hyparquet:dict-lz4bare:RLE_DICTIONARY:LZ4:DATA_PAGE_V2:2:{"codec":"LZ4","lz4":"raw","pageSize":5000}' \
      'hyparquet:dba-none:DELTA_BYTE_ARRAY:UNCOMPRESSED:DATA_PAGE_V2:2:{"codec":"UNCOMPRESSED","encoding":"DELTA_BYTE_ARRAY","pageSize":5000}' \
      'arrowrs:v2-dba-lz4:DELTA_BYTE_ARRAY:LZ4:DATA_PAGE_V2:2:{"codec":"LZ4","encoding":"DELTA_BYTE_ARRAY","dictionary":false,"v2":true,"rowGroupSize":700,"pageSize":6000}' \
      'arrowrs:v2-dlba-lz4raw:DELTA_LENGTH_BYTE_ARRAY:LZ4_RAW:DATA_PAGE_V2:2:{"codec":"LZ4_RAW","encoding":"DELTA_LENGTH_BYTE_ARRAY","dictionary":false,"v2":true,"pageSize":8000}' \
      'arrowrs:v1-dba-brotli:DELTA_BYTE_ARRAY:BROTLI:DATA_PAGE:2:{"codec":"BROTLI","encoding":"DELTA_BYTE_ARRAY","dictionary":false,"rowGroupSize":600,"pageSize":6000}' \
      'arrowrs:v1-dlba-lz4:DELTA_LENGTH_BYTE_ARRAY:LZ4:DATA_PAGE:2:{"codec":"LZ4","encoding":"DELTA_LENGTH_BYTE_ARRAY","dictionary":false,"pageSize":9000}' \
      'arrowrs:v2-dict-brotli:RLE_DICTIONARY:BROTLI:DATA_PAGE_V2:2:{"codec":"BROTLI","v2":true,"pageSize":6000}' \
      'duckdb:v2-dlba-lz4raw:DELTA_LENGTH_BYTE_ARRAY:LZ4_RAW:DATA_PAGE:1:{"codec":"lz4_raw","version":"V2"}' \
      'duckdb:v2-dlba-brotli:DELTA_LENGTH_BYTE_ARRAY:BROTLI:DATA_PAGE:1:{"codec":"brotli","version":"V2"}' \
      'duckdb:v1-plain-lz4:PLAIN:LZ4_RAW:DATA_PAGE:1:{"codec":"lz4","version":"V1"}' \
      'duckdb:v2-dict-brotli:RLE_DICTIONARY:BROTLI:DATA_PAGE:1:{"codec":"brotli","version":"V2"}'; do
      local writer name enc codec kind min opts
      IFS=: read -r writer name enc codec kind min opts <<< "$spec"
      [ "$enc" != RLE_DICTIONARY ] || [ $mode = dup ] || continue   # the dup rows: where a dictionary pays
      [ "$writer" != duckdb ] || [ "$enc" = RLE_DICTIONARY ] || [ $mode = uniq ] || continue   # DuckDB chooses
      local f="$mode-$writer-$name.parquet"
      node "$WRITE" "$NPM_DIR" "$writer" "$d/$f" "$d/rows.json" "$opts" || fail "$writer $name"
      local info; info=$(inspect "$d/$f") || fail "inspect $f"
      echo "$f ($(stat -c %s "$d/$f") bytes): $info"
      has "$info" codecs "$codec" || fail "$f: not $codec pages: $info"
      has "$info" encodings "$enc" || fail "$f: no $enc pages: $info"
      has "$info" "$kind" $((min - 1)) || fail "$f: fewer than $min $kind pages: $info"
      tok "$d" "pq-$f" "$f"
      same_shards "$d" "jsonl-$mode" "pq-$f"
      files=$((files + 1))
    done
    echo "$mode: $(jq -c '{documents, train_tokens, val_tokens}' "$d/jsonl-$mode/meta.json") in JSONL and in each parquet file"
  done
  echo "$files parquet files, each the JSONL's shards"
}

t_gzip_and_zstd_equal_their_plain_files() {
  local d; d=$(tmpdir); make_vocab "$d"; make_rows "$d" uniq
  /usr/bin/python3 -c "import json,sys; open(sys.argv[1]+'/a.txt','w').write('\n'.join(x for x in json.load(open(sys.argv[1]+'/rows.json')) if x))" "$d"
  tok "$d" plain rows.jsonl a.txt
  # two gzip members back to back (as `cat a.gz b.gz` makes), and two zstd frames
  head -c 40000 "$d/rows.jsonl" > "$d/h1"; tail -c +40001 "$d/rows.jsonl" > "$d/h2"
  { gzip -c "$d/h1"; gzip -9 -c "$d/h2"; } > "$d/rows.jsonl.gz"
  { zstd -q -c "$d/h1"; zstd -q -19 -c "$d/h2"; } > "$d/rows.jsonl.zst"
  gzip -c "$d/a.txt" > "$d/a.txt.gz"; zstd -q -c "$d/a.txt" > "$d/a.txt.zst"
  tok "$d" gz rows.jsonl.gz a.txt.gz
  tok "$d" zst rows.jsonl.zst a.txt.zst
  same_shards "$d" plain gz
  same_shards "$d" plain zst
  # a compressed file without the suffix is still decompressed (by its magic), as text
  cp "$d/a.txt.zst" "$d/noext"; cp "$d/a.txt" "$d/noext.txt"
  tok "$d" n1 noext; tok "$d" n2 noext.txt
  cmp -s "$d/n1/text_train_000000.bin" "$d/n2/text_train_000000.bin" || fail "a zstd file without .zst was not decompressed"
  # a corrupt or truncated stream is an input error naming the file
  head -c 30000 "$d/rows.jsonl.gz" > "$d/cut.jsonl.gz"
  local out rc
  out=$(cd "$d" && "$(bin prism-data)" tokenize cut.jsonl.gz --out cut --encoder encoder.json --bpe vocab.bpe --val-tokens 100 --quiet 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status for a truncated .gz: $out"
  assert_contains "$out" "cut.jsonl.gz"
  assert_contains "$out" "truncated gzip"
}

# refuse D FILE FLAGS EXPECTED: tokenize exits 2, names the file and EXPECTED, writes no shard
refuse() {
  local d=$1 f=$2 flags=$3 want=$4 out rc
  out=$(cd "$d" && "$(bin prism-data)" tokenize "$f" $flags --out "r-$f" --encoder encoder.json --bpe vocab.bpe --val-tokens 10 --quiet 2>&1); rc=$?
  echo "$f $flags -> $rc: $out"
  assert_eq 2 "$rc" "exit status for $f $flags"
  assert_contains "$out" "$f"
  assert_contains "$out" "$want"
  ! ls "$d/r-$f"/*.bin >/dev/null 2>&1 || fail "shards were written for $f"
}

t_binary_inputs_are_refused_naming_the_format() {
  npm_setup
  local d; d=$(tmpdir); make_vocab "$d"; make_rows "$d" dup
  node "$WRITE" "$NPM_DIR" hyparquet "$d/x.parquet" "$d/rows.json" '{}' || fail "hyparquet-writer"
  cp "$d/x.parquet" "$d/x.txt"
  cp "$(bin prism-data)" "$d/prog"
  printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR' > "$d/img.png"
  printf 'PK\x03\x04\x14\0\0\0' > "$d/a.zip"
  gzip -c "$d/rows.jsonl" > "$d/r.gz"
  gzip -c "$d/x.parquet" > "$d/x.parquet.gz"
  zstd -q -c "$d/r.gz" > "$d/r.gz.zst"
  zstd -q -c "$d/rows.jsonl" | gzip -c > "$d/r.zst.gz"
  gzip -c "$d/prog" > "$d/prog.gz"
  printf 'text\0with a NUL' > "$d/nul.txt"
  refuse "$d" x.txt "--format text" "is a parquet file, not text"
  refuse "$d" x.parquet "--format jsonl" "is a parquet file, not text"
  refuse "$d" rows.jsonl "--format parquet" "is not a parquet file"
  refuse "$d" r.gz "--format parquet" "it is gzip"
  refuse "$d" prog "" "is an ELF executable, not text"
  refuse "$d" prog "--format text" "is an ELF executable"
  refuse "$d" img.png "" "is a PNG image"
  refuse "$d" a.zip "" "is a zip archive"
  refuse "$d" x.parquet.gz "" "gzip holding a parquet file"
  refuse "$d" r.gz.zst "" "zstd holding gzip: not supported"
  refuse "$d" r.zst.gz "--format jsonl" "gzip holding zstd: not supported"
  refuse "$d" prog.gz "" "gzip holding an ELF executable, not text"
  refuse "$d" nul.txt "" "binary data (a NUL byte at offset 4)"
  # a broken parquet file and an unsupported one name the problem
  head -c 3000 "$d/x.parquet" > "$d/cut.parquet"
  refuse "$d" cut.parquet "" "no PAR1 at the end"
  refuse "$d" x.parquet "--column body" 'no top-level column "body"'
  refuse "$d" x.parquet "--column id" 'column "id" is INT64, not BYTE_ARRAY'
}

# Tokenizing again into the same folder: an earlier run's shards would stay beside the new ones and the specs' glob
# would read both (a silent mix of two datasets). Refused (exit 2, naming the shards and the fix) unless --force,
# which deletes them and meta.json first; another --name in the same folder is not affected.
t_earlier_shards_are_refused_or_replaced_with_force() {
  local d; d=$(tmpdir); make_vocab "$d"; make_rows "$d" uniq
  tok "$d" data rows.jsonl
  local n1; n1=$(ls "$d/data" | grep -c '^text_.*\.bin$')
  [ "$n1" -ge 3 ] || fail "only $n1 shards"
  head -n 300 "$d/rows.jsonl" > "$d/small.jsonl"
  local out rc=0
  out=$(cd "$d" && "$(bin prism-data)" tokenize small.jsonl --out data --encoder encoder.json --bpe vocab.bpe \
        --val-tokens 3000 --shard-tokens 20000 --quiet 2>&1) || rc=$?
  assert_eq 2 "$rc" "exit status over an earlier run's shards"
  assert_contains "$out" "data already holds $n1 shard(s) of an earlier run"
  assert_contains "$out" "or --force to delete them first"
  assert_eq "$n1" "$(ls "$d/data" | grep -c '^text_.*\.bin$')" "shards left after the refusal"
  tok "$d" data small.jsonl --force
  local n2; n2=$(ls "$d/data" | grep -c '^text_.*\.bin$')
  tok "$d" once small.jsonl
  same_shards_any "$d" once data
  assert_eq "$(jq -c '[.documents, .train_tokens, .val_tokens]' "$d/once/meta.json")" \
            "$(jq -c '[.documents, .train_tokens, .val_tokens]' "$d/data/meta.json")" "meta.json after --force"
  tok "$d" data small.jsonl --name other   # another prefix beside them: no conflict
  echo "first run $n1 shards; after --force $n2, the same files as a fresh folder's"
}
# the same shard files in DIR/A and DIR/B (any number of them)
same_shards_any() {
  local d=$1 a=$2 b=$3 f
  assert_eq "$(ls "$d/$a" | grep -c '^text_.*\.bin$')" "$(ls "$d/$b" | grep -c '^text_.*\.bin$')" "shard count $a vs $b"
  for f in "$d/$a"/text_*.bin; do cmp -s "$f" "$d/$b/$(basename "$f")" || fail "$b/$(basename "$f") differs"; done
}

t_name_column_and_spec_globs() {
  npm_setup
  local d; d=$(tmpdir); make_vocab "$d"; make_rows "$d" uniq
  node "$WRITE" "$NPM_DIR" hyparquet "$d/x.parquet" "$d/rows.json" '{}' || fail "hyparquet-writer"
  # the default names are what every shipped spec's data.train / data.val globs find (worker data root = $d)
  (cd "$d" && "$(bin prism-data)" tokenize x.parquet --out data --encoder encoder.json --bpe vocab.bpe --val-tokens 3000 --quiet) >/dev/null || fail "tokenize x.parquet --out data"
  local spec n=0
  for spec in "$PRISM_ROOT"/sweeps/*.json; do
    n=$((n + 1))
    /usr/bin/python3 - "$spec" "$d" <<'PY' || fail "$(basename "$spec"): its data globs find none of the shards tokenize wrote by default"
import glob, json, os, sys
s = json.load(open(sys.argv[1])); d = sys.argv[2]
for k in ("train", "val"):
    hits = glob.glob(os.path.join(d, s["data"][k]))
    if not any(os.path.basename(h).startswith("text_" + k + "_") for h in hits): sys.exit(1)
PY
  done
  [ $n -ge 5 ] || fail "only $n specs in sweeps/"
  assert_eq '"text_train_*.bin"' "$(jq '.train_glob' "$d/data/meta.json")" "meta.json train_glob"
  # --name sets the prefix (files and meta.json); --column reads another column
  (cd "$d" && "$(bin prism-data)" tokenize x.parquet --name fineweb --out named --encoder encoder.json --bpe vocab.bpe --val-tokens 3000 --quiet) >/dev/null || fail "--name fineweb"
  [ -f "$d/named/fineweb_val_000000.bin" ] && [ -f "$d/named/fineweb_train_000000.bin" ] || fail "no fineweb_* shards: $(ls "$d/named")"
  cmp -s "$d/data/text_train_000000.bin" "$d/named/fineweb_train_000000.bin" || fail "--name changed the tokens"
  assert_eq '"fineweb_val_*.bin"' "$(jq '.val_glob' "$d/named/meta.json")" "meta.json val_glob with --name"
  (cd "$d" && "$(bin prism-data)" tokenize x.parquet --column url --out urls --encoder encoder.json --bpe vocab.bpe --val-tokens 100 --quiet) >/dev/null || fail "--column url"
  assert_eq 1501 "$(jq .documents "$d/urls/meta.json")" "documents of the url column (no nulls there)"
  local out rc
  out=$("$(bin prism-data)" tokenize x.parquet --name 'a/b' --out z --encoder "$d/encoder.json" --bpe "$d/vocab.bpe" 2>&1); rc=$?
  assert_eq 2 "$rc" "exit for --name a/b"
  assert_contains "$out" "--name"
}

harness_main "$@"
