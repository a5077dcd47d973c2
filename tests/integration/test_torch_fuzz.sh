#!/usr/bin/env bash
# test_torch_fuzz.sh — the reference trainer's parsers under fuzz/fuzz_trainer.py (job JSON, token shards, model
# files, fd-3 protocol lines): the committed corpora (fuzz/corpus/{job,shard,checkpoint,extrun} and py-*) replay
# without a crash, a short fixed-seed fuzz run (deterministic: the same counts twice) finds none, and the oracle
# catches what it claims to: a seeded parser bug (the check the protocol's array-line reproducer needs, removed),
# an allocation sized by a shard header, a hang; train.py exits 2 on a fuzzed job; and the trainer's job checks
# (prism_data.SPEC, copied from common/job.c) give job.c's verdict on the job corpora and 300 JSON mutants of the
# valid seeds (prism-worker train --print-job is the C side), so the two cannot drift. Needs /usr/bin/python3 with
# numpy (and torch for the train.py case); skips without.
# timeout: 120
source "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
ROOT=${PRISM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
FUZZ="$ROOT/fuzz/fuzz_trainer.py"
need_numpy() { "$PY" -c 'import numpy' 2>/dev/null || skip "/usr/bin/python3 has no numpy (apt-get install python3-numpy)"; }
# seeded COPY SEDEXPR FILE: the trainer's modules copied to COPY with SEDEXPR applied to FILE (asserts it changed it)
seeded() {
  mkdir -p "$1"
  cp "$ROOT"/trainers/torch/prism_data.py "$ROOT"/trainers/torch/prism_protocol.py "$1/"
  sed -i "$2" "$1/$3"
  ! cmp -s "$1/$3" "$ROOT/trainers/torch/$3" || fail "the seeded bug did not change $3 (sed: $2)"
}

t_committed_corpora_replay_without_a_crash() {
  need_numpy
  local d out; d=$(tmpdir)
  out=$("$PY" "$FUZZ" --replay --crash-dir "$d/crash" 2>&1) || fail "replay of the committed corpora failed: $out"
  echo "$out"
  local t
  for t in job model protocol shard; do
    assert_contains "$out" "replay $t: "
    echo "$out" | grep -q "replay $t: .* 0 crashes" || fail "replay $t: crashes: $out"
  done
  # the reproducers of the crashes fixed are in the corpus (one each: job, protocol)
  [ -f "$ROOT/fuzz/corpus/py-job/heads_an_integer.json" ] || fail "py-job reproducer missing"
  [ -f "$ROOT/fuzz/corpus/py-protocol/line_an_array.json" ] || fail "py-protocol reproducer missing"
}

t_short_fixed_seed_fuzz_run_finds_no_crash_and_repeats_exactly() {
  need_numpy
  local d out again; d=$(tmpdir)
  out=$("$PY" "$FUZZ" --iterations 300 --seed 1 --crash-dir "$d/crash" 2>&1) || fail "fuzz run found a crash: $out"
  echo "$out"
  local t
  for t in job model protocol shard; do
    echo "$out" | grep -q "fuzz $t: 300 inputs (seed 1, .*), [0-9]* parsed, 0 crashes" || fail "fuzz $t: not 300 clean inputs: $out"
  done
  [ ! -e "$d/crash" ] || fail "a clean run wrote reproducers: $(ls "$d/crash")"
  # deterministic: the same seed parses the same number of inputs again
  again=$("$PY" "$FUZZ" --target protocol --iterations 300 --seed 1 --crash-dir "$d/crash" 2>&1) || fail "second run: $again"
  assert_eq "$(echo "$out" | grep -o 'fuzz protocol: 300 inputs.*' | sed 's/(seed 1, [0-9.]*s)//')" \
    "$(echo "$again" | grep -o 'fuzz protocol: 300 inputs.*' | sed 's/(seed 1, [0-9.]*s)//')" "the same seed's run"
}

# the seeded bug: Run._check without its "a line must be an object" check (the fix for line_an_array.json)
t_a_seeded_parser_bug_is_a_crash_with_a_reproducer() {
  need_numpy
  local d out rc; d=$(tmpdir)
  seeded "$d/bug" '/if not isinstance(obj, dict):/,+1d' prism_protocol.py
  out=$("$PY" "$FUZZ" --target protocol --iterations 3000 --seed 1 --trainer-dir "$d/bug" --crash-dir "$d/crash" 2>&1); rc=$?
  echo "$out"
  assert_eq 1 "$rc" "fuzz run exit status with the seeded bug"
  assert_contains "$out" "CRASH target=protocol AttributeError: "
  assert_contains "$out" "reproducer: $d/crash/protocol-crash-"
  local f; f=$(ls "$d"/crash/protocol-crash-* | head -n1)
  [ -s "$f" ] || fail "no reproducer written"
  # the reproducer crashes the seeded copy again and is refused (no crash) by the real trainer
  "$PY" "$FUZZ" --target protocol --replay "$f" --trainer-dir "$d/bug" >/dev/null 2>&1 && fail "replay of $f passed on the seeded bug"
  "$PY" "$FUZZ" --target protocol --replay "$f" >/dev/null || fail "the real trainer crashes on $f"
  # and the committed corpus alone catches it, naming the file
  out=$("$PY" "$FUZZ" --replay "$ROOT/fuzz/corpus/py-protocol" --trainer-dir "$d/bug" 2>&1) && fail "corpus replay passed on the seeded bug"
  assert_contains "$out" "input: $ROOT/fuzz/corpus/py-protocol/line_an_array.json"
}

# a shard reader that allocates what the header claims (2^31 uint32s = 8 GiB) before checking the file size
t_an_allocation_sized_by_a_header_is_a_crash() {
  need_numpy
  local d out; d=$(tmpdir)
  seeded "$d/bug" '/    n = int(hdr\[2\])/a\    np.ones(n, "<u4")' prism_data.py
  out=$("$PY" "$FUZZ" --target shard --replay "$ROOT/fuzz/corpus/py-shard/count_2p31_in_1k.bin" --trainer-dir "$d/bug" 2>&1) \
    && fail "the 8 GiB allocation passed: $out"
  echo "$out"
  assert_contains "$out" "CRASH target=shard MemoryError"
  "$PY" "$FUZZ" --target shard --replay "$ROOT/fuzz/corpus/py-shard/count_2p31_in_1k.bin" >/dev/null || fail "the real reader crashes"
}

t_a_hang_is_a_crash() {
  need_numpy
  local d out; d=$(tmpdir)
  seeded "$d/bug" '/    hdr = np.fromfile(path, dtype="<i4", count=256)/a\    while hdr[0] != SHARD_MAGIC: pass' prism_data.py
  out=$("$PY" "$FUZZ" --target shard --timeout 1 --replay "$ROOT/fuzz/corpus/shard/bad_magic.bin" --trainer-dir "$d/bug" 2>&1) \
    && fail "the endless loop passed: $out"
  echo "$out"
  assert_contains "$out" "CRASH target=shard hang: no answer within 1s"
}

# the trainer itself (train.py, as prism-worker runs it) on two of the job reproducers: exit 2 naming the key or
# the file, no traceback (before the fixes: TypeError and UnicodeDecodeError tracebacks, exit 1)
t_the_trainer_exits_2_naming_the_problem_on_a_fuzzed_job() {
  "$PY" -c 'import torch' 2>/dev/null || skip "python3-torch is not installed (make deps installs it)"
  local d out rc f; d=$(tmpdir)
  for f in heads_an_integer.json:"model.heads: expected an array of head counts, got an integer" \
           not_utf8.json:"py-job/not_utf8.json: not a JSON job ("; do
    out=$(PRISM_JOB="$ROOT/fuzz/corpus/py-job/${f%%:*}" PRISM_OUT="$d/o" OMP_NUM_THREADS=1 \
          "$PY" "$ROOT/trainers/torch/train.py" --threads 1 3>/dev/null 2>&1); rc=$?
    echo "$out"
    assert_eq 2 "$rc" "exit status for ${f%%:*}"
    assert_contains "$out" "torch trainer: "
    assert_contains "$out" "${f#*:}"
    case "$out" in *Traceback*) fail "a traceback for ${f%%:*}" ;; esac
  done
}

# The C parser (prism-worker train JOB --print-job: exit 0 parsed, 2 refused) and the trainer's (load_job +
# job_normalize: JobError/ProtocolError is a refusal) agree on every job of the corpora and on fixed-seed mutants.
t_trainer_job_checks_agree_with_job_c() {
  need_numpy
  local d; d=$(tmpdir)
  mkdir -p "$d/m"
  cp "$ROOT"/fuzz/corpus/job/*.json "$ROOT"/fuzz/corpus/py-job/*.json "$d/m/"
  ( cd "$ROOT" && "$PY" - "$d/m" > "$d/py.txt" ) <<'PYEOF' || fail "the verdict script failed: $(cat "$d/py.txt")"
import glob, json, os, random, sys
sys.path[:0] = ["fuzz", "trainers/torch"]
import fuzz_trainer, prism_data, prism_protocol
out = sys.argv[1]
valid = [json.dumps(json.loads(open(p, "rb").read())).encode() for p in
         ("fuzz/corpus/job/full.json", "fuzz/corpus/job/gpt2.json", "fuzz/corpus/job/llama.json",
          "fuzz/corpus/job/minimal.json", "fuzz/corpus/job/tiny_real.json", "fuzz/corpus/py-job/llama_valid.json")]
rng = random.Random(1)
for i in range(300):
    m = None
    for _ in range(50):
        m = fuzz_trainer.mutate_json(rng, rng.choice(valid), valid)
        if m is not None:
            break
    if m is not None:
        open(os.path.join(out, "mutant%03d.json" % i), "wb").write(m)
for p in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        prism_data.job_normalize(prism_protocol.load_job(p))
        v = 0
    except (prism_data.JobError, prism_protocol.ProtocolError):
        v = 2
    print(v, p)
PYEOF
  local v p c n=0 acc=0 bad=""
  while read -r v p; do
    "$(bin prism-worker)" train "$p" --out "$d/o" --print-job >/dev/null 2>"$d/err"; c=$?
    n=$((n + 1)); [ "$c" = 0 ] && acc=$((acc + 1))
    [ "$c" = "$v" ] || bad="$bad
  $(basename "$p"): job.c exit $c, the trainer's $v ($(head -c 200 "$d/err"))"
  done < "$d/py.txt"
  echo "$n jobs, $acc accepted by job.c"
  [ -z "$bad" ] || fail "the trainer's job checks and common/job.c disagree on:$bad"
  [ "$n" -ge 300 ] || fail "only $n jobs compared"
  [ "$acc" -ge 10 ] || fail "only $acc jobs accepted: the mutants no longer reach the key checks"
}

harness_main "$@"
