#!/usr/bin/env bash
# test_realsweep.sh — the real sweep in tests/fixtures/realsweep/ (12 schedules x 8 seeds trained by the CPU engine
# on man pages, tools/realsweep.sh) and its diagnostics (tools/realsweep_diag.py): every figure matches
# diagnostics.json, the tables in docs/STATISTICS.md ("Real runs") are the script's output on the fixture, the
# fixture is the spec's sweep and its leaderboard's deltas are the blocked fit's, the committed leaderboard is the
# current build's (tools/realsweep_replay.py replays the 96 results through serve: a few seconds), a perturbed
# fixture fails, and tools/bpe_train.py (how the fixture's text was tokenized) writes a vocabulary prism-data
# tokenize loads.
# timeout: 120 (per case; the slowest, the replay, takes well under 30 s on a shared 2-core machine)
. "$(dirname "$0")/../lib.sh"
FIX=$PRISM_ROOT/tests/fixtures/realsweep
DIAG=$PRISM_ROOT/tools/realsweep_diag.py

t_diagnostics_match_the_fixture() {
  /usr/bin/python3 "$DIAG" "$FIX" --check "$FIX/diagnostics.json" || fail "the diagnostics differ from diagnostics.json"
}

t_docs_tables_are_the_fixtures() {
  local md; md=$(/usr/bin/python3 "$DIAG" "$FIX" --format markdown) || fail "realsweep_diag --format markdown failed"
  local missing=0
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qxF -- "$line" "$PRISM_ROOT/docs/STATISTICS.md" || { echo "not in docs/STATISTICS.md: $line"; missing=1; }
  done <<< "$md"
  [ $missing = 0 ] || fail "docs/STATISTICS.md's 'Real runs' tables are not the fixture's (tools/realsweep_diag.py --format markdown)"
}

t_fixture_is_the_specs_sweep() {
  "$(bin prism-sweep)" create "$FIX/spec.json" --db "$(tmpdir)/x.db" --dry-run | grep -q '12 schedules x 8 seeds = 96 jobs of 300 steps' \
    || fail "spec.json is not the 12 x 8 sweep of 300 steps"
  /usr/bin/python3 - "$FIX" <<'PY' || fail "the fixture does not match its spec or its leaderboard"
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["PRISM_ROOT"], "tools"))
import realsweep_diag as rd
fix = sys.argv[1]
spec = json.load(open(os.path.join(fix, "spec.json")))
jobs = [json.loads(l) for l in open(os.path.join(fix, "results.jsonl"))]
bad = []
if sorted({j["seed"] for j in jobs}) != spec["seeds"]: bad.append("seeds")
if any(j["state"] != "done" or j["result"]["steps"] != spec["train"]["steps"] for j in jobs): bad.append("states/steps")
every, steps = spec["eval"]["every"], spec["train"]["steps"]
pts = [json.loads(l) for l in open(os.path.join(fix, "val_metrics.jsonl"))]
if sorted({p["step"] for p in pts}) != list(range(0, steps + 1, every)): bad.append("evaluation steps")
if len(pts) != len(jobs) * (steps // every + 1): bad.append("evaluations per job")
meta = json.load(open(os.path.join(fix, "data_meta.json")))
if any(j["result"]["val_batches"] != meta["val_tokens"] // (spec["train"]["batch_size"] * spec["train"]["seq_len"] + 1) for j in jobs):
    bad.append("val_batches is not the whole val split")
# the leaderboard (prism-sweep leaderboard on the sweep's DB) against the blocked fit recomputed here
o = rd.analyse(fix)
lb = {tuple(r["heads"]): r for r in o["leaderboard"]["rows"]}
for r in o["ranking"]["rows"]:
    l = lb[tuple(r["heads"])]
    d = l["delta"]["mean"] if l["delta"] else 0.0
    if abs(d - r["delta"]) > 1e-9: bad.append(("delta", r["heads"], d, r["delta"]))
    if l["delta"] and abs(l["delta"]["p_holm"] - r["p_holm"]) > 1e-6 * max(1e-3, r["p_holm"]): bad.append(("p_holm", r["heads"], l["delta"]["p_holm"], r["p_holm"]))
    if bool(l["tied_best"]) != r["best_group"]: bad.append(("best group", r["heads"]))
an = o["leaderboard"]["analysis"]
if abs(an["pooled_sd"] - o["blocked"]["pooled_sd"]) > 1e-9: bad.append("pooled sd")
if abs(an["val_noise"]["sd"] - o["val_sample"]["rms_se_paired_delta"]) > 1e-9: bad.append(("val noise", an["val_noise"]["sd"], o["val_sample"]["rms_se_paired_delta"]))
print(bad or "ok")
sys.exit(1 if bad else 0)
PY
}

# tools/bpe_train.py's vocabulary is one prism-data tokenize (dataprep/bpe.c) loads: learned from the repository's
# docs, it has exactly --vocab tokens, <|endoftext|> last, and tokenizes text it has not seen.
t_bpe_train_vocab_tokenizes() {
  local d; d=$(tmpdir)
  /usr/bin/python3 -c 'import json,sys; [print(json.dumps({"text": open(f, encoding="utf-8").read()})) for f in sys.argv[1:]]' \
    "$PRISM_ROOT"/docs/*.md > "$d/corpus.jsonl"
  /usr/bin/python3 "$PRISM_ROOT/tools/bpe_train.py" "$d/corpus.jsonl" --vocab 320 --skip-docs 1 --out "$d/vocab" || fail "bpe_train.py failed"
  "$(bin prism-data)" tokenize "$d/corpus.jsonl" "$PRISM_ROOT/README.md" --out "$d/data" --encoder "$d/vocab/encoder.json" \
    --bpe "$d/vocab/vocab.bpe" --val-tokens 1000 --quiet || fail "prism-data tokenize refused bpe_train.py's vocabulary"
  /usr/bin/python3 - "$d" <<'PY' || fail "the shards are not in bpe_train.py's vocabulary"
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/data/meta.json"))
enc = json.load(open(d + "/vocab/encoder.json"))
assert m["vocab_size"] == 320 and m["eot"] == 319 and enc["<|endoftext|>"] == 319 and len(enc) == 320, (m, len(enc))
raw = open(d + "/data/text_train_000000.bin", "rb").read()
import struct
toks = struct.unpack("<%dH" % ((len(raw) - 1024) // 2), raw[1024:])
merged = {t for t in toks if 256 <= t < 319}
assert max(toks) < 320 and len(merged) > 40, (max(toks), len(merged))
print("ok", m["train_tokens"], "train tokens,", len(merged), "of the 63 merged tokens used")
PY
}

# The check can fail: one job's final val loss 0.01 higher (its batches and its last evaluation alike) moves
# the figures outside diagnostics.json's tolerances.
t_a_perturbed_fixture_fails() {
  local d; d=$(tmpdir)
  cp "$FIX"/* "$d/"
  /usr/bin/python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
jobs = [json.loads(l) for l in open(d + "/results.jsonl")]
j = jobs[17]; r = j["result"]
r["val_loss_batches"] = [x + 0.01 for x in r["val_loss_batches"]]
r["val_loss"] += 0.01; j["val_loss"] = r["val_loss"]
open(d + "/results.jsonl", "w").write("".join(json.dumps(x) + "\n" for x in jobs))
pts = [json.loads(l) for l in open(d + "/val_metrics.jsonl")]
last = max(p["step"] for p in pts)
for p in pts:
    if p["job_id"] == j["job_id"] and p["step"] == last: p["value"] = r["val_loss"]
open(d + "/val_metrics.jsonl", "w").write("".join(json.dumps(x) + "\n" for x in pts))
PY
  local rc=0 out; out=$(/usr/bin/python3 "$DIAG" "$d" --check "$FIX/diagnostics.json" 2>&1) || rc=$?
  echo "$out" | head -5
  assert_eq 1 "$rc" "a perturbed fixture's exit"
  assert_contains "$out" "differ from"
}
# The committed leaderboard.json / leaderboard.txt are the current build's: tools/realsweep_replay.py replays the
# fixture's results through prism-sweep serve (a fresh database, one worker posting each job's recorded val points
# and result) and prints the leaderboard again. They must be equal, but for the fields listed in IGNORED (none
# differ between runs today: the leaderboard holds no time, host or wall time; tok_per_s is the recorded result's).
# After a ranking change: tools/realsweep_replay.py tests/fixtures/realsweep build /tmp/replay and copy
# /tmp/replay/leaderboard.* into the fixture (tests/fixtures/realsweep/README.md).
t_leaderboard_is_the_replays() {
  local d; d=$(tmpdir)
  /usr/bin/python3 "$PRISM_ROOT/tools/realsweep_replay.py" "$FIX" "$PRISM_BUILD" "$d/out" \
    || fail "tools/realsweep_replay.py failed"
  /usr/bin/python3 - "$FIX/leaderboard.json" "$d/out/leaderboard.json" <<'PY' || fail "the committed leaderboard.json is not the replay's (refresh it: tests/fixtures/realsweep/README.md)"
import json, sys
IGNORED = set()   # key names that legitimately differ between runs: none (see above)
def walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED: continue
            if k not in a or k not in b: out.append((path + "." + k, a.get(k, "<absent>"), b.get(k, "<absent>")))
            else: walk(a[k], b[k], path + "." + k, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)): walk(x, y, "%s[%d]" % (path, i), out)
    elif a != b or type(a) != type(b):
        out.append((path, a, b))
committed, replay = (json.load(open(f)) for f in sys.argv[1:3])
out = []
walk(committed, replay, "", out)
for p, a, b in out[:40]: print("%s: committed %s, replay %s" % (p or ".", json.dumps(a)[:200], json.dumps(b)[:200]))
print("%d differences%s" % (len(out), " (first 40 shown)" if len(out) > 40 else ""))
sys.exit(1 if out else 0)
PY
  # the table holds no time either: every line must be equal
  diff -u "$FIX/leaderboard.txt" "$d/out/leaderboard.txt" \
    || fail "the committed leaderboard.txt (-) is not the replay's (+) (refresh it: tests/fixtures/realsweep/README.md)"
  echo "leaderboard.json and leaderboard.txt are the replay's"
}
harness_main "$@"
