#!/usr/bin/env bash
# test_cli.sh — the `prism-sweep` command line: enumerate (text/json/csv, --count, --sample),
# validate, create, status, --help, and every error path (exit 2 naming the flag and the valid range).
# timeout: 120
. "$(dirname "$0")/../lib.sh"
PS=$(bin prism-sweep)
PY=/usr/bin/python3
ROOT=${PRISM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}

# run CMD...: sets OUT (stdout), ERR (stderr), RC
run() {
  local d; d=$(mktemp -d "${PRISM_TEST_TMP:-/tmp}/run-XXXXXX")
  "$@" >"$d/out" 2>"$d/err"; RC=$?
  OUT=$(cat "$d/out"); ERR=$(cat "$d/err")
}
# expect_usage_error NEEDLE CMD...: exit 2, the message on stderr, nothing on stdout
expect_usage_error() {
  local needle=$1; shift
  run "$@"
  assert_eq 2 "$RC" "exit status of: $*  (stderr: $ERR)"
  assert_contains "$ERR" "$needle"
  assert_eq "" "$OUT" "stdout of a usage error"
}

t_defaults_give_53_and_pow2_13() {
  run "$PS" enumerate --L 12 --dmodel 768
  assert_eq 0 "$RC" "exit"
  assert_eq 53 "$(printf '%s\n' "$OUT" | wc -l)" "listed schedules"
  assert_eq "12,12,12,12,12,12,12,12,12,12,12,12" "$(printf '%s\n' "$OUT" | head -n1)" "baseline first"
  printf '%s\n' "$OUT" | grep -qx '3,3,6,6,8,8,12,12,12,12,12,12' || fail "the paper's Prism schedule is missing"
  assert_eq 53 "$(printf '%s\n' "$OUT" | sort -u | wc -l)" "distinct"
  run "$PS" enumerate --count; assert_eq 53 "$OUT" "--count"
  run "$PS" enumerate --count --pow2; assert_eq 13 "$OUT" "--count --pow2"
  run "$PS" enumerate --pow2; assert_eq 13 "$(printf '%s\n' "$OUT" | wc -l)" "listed with --pow2"
}

t_count_equals_listed_count() {
  local shape
  for shape in "--L 12 --dmodel 768" "--L 13 --dmodel 768 --min-block 1 --max-block 3" "--L 9 --dmodel 1024 --pow2" \
               "--L 24 --dmodel 1536 --hbase 16" "--L 11 --dmodel 768 --heads 3,6,8 --min-baseline 0.3" \
               "--L 16 --dmodel 768 --max-head-dim 0 --max-block 0" "--L 7 --dmodel 384 --min-baseline 1" \
               "--L 48 --dmodel 1600 --max-head-dim 0"; do
    # shellcheck disable=SC2086
    local listed counted
    listed=$("$PS" enumerate $shape | wc -l)
    counted=$("$PS" enumerate $shape --count)
    assert_eq "$listed" "$counted" "--count vs listed for: $shape"
  done
  assert_eq 61905 "$("$PS" enumerate --L 48 --dmodel 1600 --max-head-dim 0 --count)" "L=48 d=1600"
}

t_every_listed_schedule_validates() {
  local bad
  bad=$("$PS" enumerate --L 10 --dmodel 1024 --min-block 1 | while read -r s; do
          "$PS" validate --dmodel 1024 --min-block 1 "$s" >/dev/null || echo "$s"; done)
  assert_eq "" "$bad" "schedules that validate refused"
}

t_json_and_csv_formats() {
  run "$PS" enumerate --format json
  assert_eq 0 "$RC" "exit"
  local summary
  summary=$(printf '%s' "$OUT" | $PY -c '
import json, sys
a = json.load(sys.stdin)
p = [o for o in a if o["heads"] == [3,3,6,6,8,8] + [12]*6][0]
print(len(a), a[0]["is_baseline"], sum(o["is_baseline"] for o in a), p["head_dims"][:6], p["blocks"])')
  assert_eq "53 True 1 [256, 256, 128, 128, 96, 96] [[3, 2], [6, 2], [8, 2], [12, 6]]" "$summary" "json content"
  run "$PS" enumerate --format csv --pow2
  assert_eq 14 "$(printf '%s\n' "$OUT" | wc -l)" "csv header + 13 rows"
  assert_eq "heads,head_dims,blocks,is_baseline" "$(printf '%s\n' "$OUT" | head -n1)" "csv header"
  assert_eq 13 "$(printf '%s\n' "$OUT" | $PY -c 'import csv,sys; print(sum(1 for r in csv.DictReader(sys.stdin) if len(r["heads"].split(","))==12))')" "csv rows parse"
  run "$PS" enumerate --format json --count; assert_eq 53 "$OUT" "--count ignores the list format"
}

t_sample_distinct_valid_reproducible() {
  local a b c
  a=$("$PS" enumerate --sample 20 --seed 3)
  b=$("$PS" enumerate --sample 20 --seed 3)
  c=$("$PS" enumerate --sample 20 --seed 4)
  assert_eq 20 "$(printf '%s\n' "$a" | wc -l)" "sample size"
  assert_eq 20 "$(printf '%s\n' "$a" | sort -u | wc -l)" "distinct"
  assert_eq "$a" "$b" "same seed, same sample"
  [ "$a" != "$c" ] || fail "another seed gave the same sample"
  local all; all=$("$PS" enumerate)
  local s; while read -r s; do
    printf '%s\n' "$all" | grep -qx "$s" || fail "sampled $s is not in the valid set"
  done <<<"$a"
  assert_eq 53 "$("$PS" enumerate --sample 53 --seed 9 | sort -u | wc -l)" "sample of all"
  # a sample of a huge set is drawn without listing it
  run "$PS" enumerate --L 200 --dmodel 1600 --hbase 1600 --max-head-dim 0 --min-block 1 --max-block 0 --sample 5 --seed 1
  assert_eq 0 "$RC" "huge sample: $ERR"
  assert_eq 5 "$(printf '%s\n' "$OUT" | sort -u | wc -l)" "huge sample size"
}

t_count_is_exact_for_huge_sets() {
  run "$PS" enumerate --L 200 --dmodel 1600 --hbase 1600 --max-head-dim 0 --min-block 1 --max-block 0 --count
  assert_eq 0 "$RC" "exit"
  [ "${#OUT}" -ge 20 ] || fail "expected a count of 20+ digits, got $OUT"
  run "$PS" enumerate --L 4096 --dmodel 720720 --hbase 720720 --max-head-dim 0 --min-block 1 --max-block 0 \
      --min-baseline 0 --count
  assert_eq 1 "$RC" "overflow exit"
  assert_contains "$ERR" "exceeds 2^128-1"
}

t_validate_valid_and_invalid() {
  run "$PS" validate --dmodel 768 3,3,6,6,8,8,12,12,12,12,12,12
  assert_eq 0 "$RC" "valid exit"
  assert_contains "$OUT" "valid: 3,3,6,6,8,8,12,12,12,12,12,12"
  run "$PS" validate --dmodel 768 3,6,8,12,12,12,12,12,12,12,12,12
  assert_eq 1 "$RC" "invalid exit"
  assert_contains "$OUT" "breaks 3 rules"
  assert_contains "$OUT" "block: block 1 (layer 1): 1 layer of 3 heads"
  assert_contains "$OUT" "block 3 (layer 3)"
  run "$PS" validate --dmodel 768 2,2,4,4,5,12,12,12,12,12,12,8
  assert_eq 1 "$RC" "invalid exit"
  assert_contains "$OUT" "max_head_dim: layers 1-2 (block 1): head dim 384"
  assert_contains "$OUT" "divides: layer 5 (block 3): 5 heads do not divide d_model 768"
  assert_contains "$OUT" "non_decreasing: layer 12"
  assert_contains "$OUT" "last_is_base: layer 12"
  run "$PS" validate --dmodel 768 --pow2 3,3,6,6,8,8,12x6
  assert_eq 1 "$RC" "pow2 exit"
  assert_contains "$OUT" "pow2: layers 5-6 (block 3): head dim 96"
  run "$PS" validate --L 12 --dmodel 768 3,3,12x8
  assert_eq 1 "$RC" "length exit"
  assert_contains "$OUT" "length: the schedule has 10 layers, the model has 12"
  run "$PS" validate --format json --dmodel 768 3,3,3,3,3,12x7
  assert_eq 1 "$RC" "json exit"
  assert_eq "False block 1 5" "$(printf '%s' "$OUT" | $PY -c 'import json,sys; d=json.load(sys.stdin); v=d["violations"][0]; print(d["valid"], v["rule"], v["block"], v["layer_end"])')" "json violation"
}

t_help_lists_every_flag_with_default() {
  run "$PS" --help
  assert_eq 0 "$RC" "--help exit"
  local c; for c in enumerate validate create status; do assert_contains "$OUT" "$c"; done
  run "$PS" enumerate --help
  assert_eq 0 "$RC" "enumerate --help exit"
  local f
  for f in "--L N" "[12]" "--dmodel N" "[768]" "--hbase N" "[d_model/64]" "--max-head-dim N" "[256]" "--pow2" "[off]" \
           "--heads S" "--min-block N" "[2]" "--max-block N" "[4]" "--min-baseline X" "[0.5]" "--format text|json|csv" \
           "--count" "--sample N" "--seed N" "[0]"; do
    assert_contains "$OUT" "$f"
  done
  for c in validate create status; do
    run "$PS" $c --help; assert_eq 0 "$RC" "$c --help"; assert_contains "$OUT" "usage: prism-sweep $c"
  done
  run "$PS" create --help; assert_contains "$OUT" "--db S"; assert_contains "$OUT" "[prism.db]"
  assert_contains "$OUT" "--dry-run"
}

# Every program's and command's --help fits 100 columns (flag texts and summaries wrapped by cli.c; serve's summary
# was one 297-column line).
t_every_help_fits_100_columns() {
  local PW PD; PW="$(dirname "$PS")/prism-worker"; PD="$(dirname "$PS")/prism-data"
  local c n=0 out
  for c in "" enumerate validate create status serve leaderboard power export launch "launch slurm" requeue cancel pause \
           resume priority; do
    out=$($PS $c --help 2>&1); n=$((n + 1))
    echo "$out" | $PY -c 'import sys; bad = [l for l in sys.stdin.read().split("\n") if len(l) > 100]; sys.exit("%d line(s) over 100 columns: %r" % (len(bad), bad[:2]) if bad else 0)' \
      || fail "prism-sweep $c --help"
  done
  for c in "" synth bytes tokenize evalfile; do
    out=$("$PD" $c --help 2>&1); n=$((n + 1))
    echo "$out" | $PY -c 'import sys; bad = [l for l in sys.stdin.read().split("\n") if len(l) > 100]; sys.exit("%r" % bad[:2] if bad else 0)' || fail "prism-data $c --help"
  done
  for c in "" train; do
    out=$("$PW" $c --help 2>&1); n=$((n + 1))
    echo "$out" | $PY -c 'import sys; bad = [l for l in sys.stdin.read().split("\n") if len(l) > 100]; sys.exit("%r" % bad[:2] if bad else 0)' || fail "prism-worker $c --help"
  done
  echo "$n help texts, every line within 100 columns"
}

t_enumerate_error_paths() {
  expect_usage_error "--L must be an integer in 1..4096 (got \"0\")" "$PS" enumerate --L 0
  expect_usage_error "--L must be an integer in 1..4096 (got \"abc\")" "$PS" enumerate --L abc
  expect_usage_error "--L needs a value" "$PS" enumerate --L
  expect_usage_error "--dmodel must be an integer in 1..1048576" "$PS" enumerate --dmodel -5
  expect_usage_error "--hbase defaults to d_model/64, but 770/64 is not an integer" "$PS" enumerate --dmodel 770
  expect_usage_error "--hbase must be a divisor of d_model 768" "$PS" enumerate --hbase 5
  expect_usage_error "--max-head-dim 32 is below the baseline head dim 64" "$PS" enumerate --max-head-dim 32
  expect_usage_error "--heads 5 does not divide d_model 768" "$PS" enumerate --heads 3,5
  expect_usage_error "--heads 2 heads give head dim 384, above max_head_dim 256" "$PS" enumerate --heads 2
  expect_usage_error "--heads 8 heads give head dim 96, not a power of two" "$PS" enumerate --pow2 --heads 8
  expect_usage_error "--heads: item 2" "$PS" enumerate --heads 3,x
  expect_usage_error "--max-block must be 0 (no bound) or in 3..4096" "$PS" enumerate --min-block 3 --max-block 2
  expect_usage_error "--min-block must be an integer in 1..4096" "$PS" enumerate --min-block 0
  expect_usage_error "--min-baseline must be a number in 0..1 (got \"1.5\")" "$PS" enumerate --min-baseline 1.5
  expect_usage_error "--format must be one of text|json|csv (got \"xml\")" "$PS" enumerate --format xml
  expect_usage_error "--sample 54 is more than the 53 valid schedules: must be in 1..53" "$PS" enumerate --sample 54
  expect_usage_error "--sample must be an integer in 1..10000000" "$PS" enumerate --sample 0
  expect_usage_error "--seed only applies to --sample N" "$PS" enumerate --seed 3
  expect_usage_error "--count and --sample cannot be combined" "$PS" enumerate --count --sample 3
  expect_usage_error "unknown flag --foo" "$PS" enumerate --foo 1
  expect_usage_error "unexpected argument" "$PS" enumerate 12
  expect_usage_error "--pow2 takes no value" "$PS" enumerate --pow2=maybe
  expect_usage_error "unknown command \"enumarate\"" "$PS" enumarate
  run "$PS"; assert_eq 2 "$RC" "no command"; assert_contains "$ERR" "usage: prism-sweep COMMAND"
}

t_validate_error_paths() {
  expect_usage_error "give one SCHEDULE" "$PS" validate --dmodel 768
  expect_usage_error "SCHEDULE \"3,,4\": item 2" "$PS" validate 3,,4
  expect_usage_error "unexpected extra argument" "$PS" validate 12x12 12x12
  expect_usage_error "--hbase must be a divisor of d_model 768" "$PS" validate --hbase 7 12x12
}

t_create_and_status() {
  local d; d=$(tmpdir)
  run "$PS" create "$ROOT/sweeps/tiny-cpu.json" --db "$d/p.db"
  assert_eq 0 "$RC" "create: $ERR"
  assert_contains "$OUT" "created sweep 1 \"tiny-cpu\": 6 schedules x 2 seeds = 12 jobs queued"
  run "$PS" create "$ROOT/sweeps/tiny-cpu.json" --db "$d/p.db"
  assert_eq 0 "$RC" "second create"
  assert_contains "$OUT" "already exists: nothing new created (6 schedules, 12 jobs)"
  assert_eq 12 "$(sqlite3 "$d/p.db" 'SELECT count(*) FROM jobs')" "jobs in the file"
  run "$PS" create "$ROOT/sweeps/gpt2-124m.json" --db "$d/p.db" --format json
  assert_eq '2 1 56 168' "$(printf '%s' "$OUT" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(d["sweep_id"], int(d["created"]), d["schedules"], d["jobs"])')" "json create"
  sqlite3 "$d/p.db" "UPDATE jobs SET state='done' WHERE id IN (1,2); UPDATE jobs SET state='leased' WHERE id=3"
  run "$PS" status --db "$d/p.db" tiny-cpu
  assert_eq 0 "$RC" "status"
  assert_contains "$OUT" "sweep 1 \"tiny-cpu\" (active, priority 0): 6 schedules, 12 jobs"
  assert_eq "9 1 2 0 0" "$(printf '%s\n' "$OUT" | awk '$1~/^(queued|leased|done|failed|cancelled)$/{printf "%s%s", s, $2; s=" "}')" "counts"
  assert_contains "$OUT" "steps: 4000 of 24000 trained, 20000 left (16.7%)"   # README §5: the steps done and left
  run "$PS" status --db "$d/p.db" --format json 1
  assert_eq "9 1 2 0 0 12" "$(printf '%s' "$OUT" | $PY -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(j["queued"], j["leased"], j["done"], j["failed"], j["cancelled"], j["total"])')" "json counts"
  run "$PS" status --db "$d/p.db"
  assert_eq 0 "$RC" "status all"
  assert_contains "$OUT" "gpt2-124m"
  assert_eq 180 "$(printf '%s\n' "$OUT" | awk '$1=="total"{print $2}')" "total jobs"
  run "$PS" create "$ROOT/sweeps/gpt2-354m.json" --dry-run
  assert_contains "$OUT" "nothing created"
}

t_create_and_status_error_paths() {
  local d; d=$(tmpdir)
  expect_usage_error "$d/missing.json: No such file" "$PS" create "$d/missing.json" --db "$d/p.db"
  [ ! -e "$d/p.db" ] || fail "a refused spec created the database"
  sed 's/"lr": [0-9.e-]*/"lr": -1/' "$ROOT/sweeps/tiny-cpu.json" > "$d/bad.json"
  expect_usage_error "bad.json: train.lr: must be" "$PS" create "$d/bad.json" --db "$d/p.db"
  sed 's/"seeds": \[1, 2\]/"seeds": [1, 1]/' "$ROOT/sweeps/tiny-cpu.json" > "$d/bad2.json"
  expect_usage_error "seeds[1]: 1 repeats seeds[0]" "$PS" create "$d/bad2.json" --db "$d/p.db"
  printf '{"name": "x",' > "$d/bad3.json"
  expect_usage_error "not valid JSON at line 1" "$PS" create "$d/bad3.json"
  expect_usage_error "give one sweep spec" "$PS" create --db "$d/p.db"
  "$PS" create "$ROOT/sweeps/tiny-cpu.json" --db "$d/p.db" >/dev/null || fail "create"
  sed 's/"steps": [0-9]*/"steps": 12345/' "$ROOT/sweeps/tiny-cpu.json" > "$d/other.json"
  expect_usage_error "already exists with a different train" "$PS" create "$d/other.json" --db "$d/p.db"
  expect_usage_error "--db $d/nope.db: no such file" "$PS" status --db "$d/nope.db"
  expect_usage_error "no sweep with id or name \"zzz\"" "$PS" status --db "$d/p.db" zzz
  # a --db in a folder that is not there: said so, with the fix (not SQLite's "unable to open database file")
  run "$PS" create "$ROOT/sweeps/tiny-cpu.json" --db "$d/no/such/dir/p.db"
  [ "$RC" != 0 ] || fail "create into a missing folder succeeded"
  assert_contains "$ERR" "cannot open $d/no/such/dir/p.db: its folder $d/no/such/dir does not exist (create it first: mkdir -p $d/no/such/dir)"
}

# --min-block above the default --max-block (4), with no --max-block given: the default is raised to it, not an
# error about a flag the user did not give; an explicit --max-block below --min-block stays an error.
t_min_block_alone_raises_the_default_max_block() {
  run "$PS" enumerate --min-block 5 --count
  assert_eq 0 "$RC" "enumerate --min-block 5 exit status ($ERR)"
  assert_eq "$("$PS" enumerate --min-block 5 --max-block 5 --count)" "$OUT" "--min-block 5 alone = --min-block 5 --max-block 5"
  [ "$OUT" -gt 0 ] || fail "no schedule"
  expect_usage_error "--max-block must be 0 (no bound) or in 5..4096" "$PS" enumerate --min-block 5 --max-block 4
}

harness_main "$@"
