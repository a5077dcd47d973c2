#!/usr/bin/env bash
# test_torch_zeroshot.sh — eval.tasks (zero-shot multiple choice) in the reference PyTorch trainer
# (trainers/torch/prism_eval.py) against the built-in engine (worker/zeroshot.c) on the same weights: a model file
# the built-in trained, loaded by both with train.lr 1e-30 (one step that changes no weight: the job needs lr > 0),
# scored on an eval file whose examples come from the val split (the label's ending is the text's continuation,
# the others are text from elsewhere) and whose lengths sit around the window T = 32: context + ending = T, T + 1
# (fits exactly), T + 2 (one context token cut), longer, and a 32-token ending (keeps one context token). acc,
# acc_norm, n and truncated must be equal, both in result.json and on the final val line. Bad eval files (cut short,
# a token shard given instead, an ending longer than the window, missing) exit 2 before step 0 naming the file and
# the problem. Under two CPU ranks each scores half the examples and the counts are summed: the same numbers.
# Through a server and a worker (--trainer torch) the result reaches the leaderboard's zero-shot column.
# timeout: 300
source "$(dirname "$0")/torch_lib.sh"
source "$(dirname "$0")/worker_lib.sh"

# write_evalfile DIR OUT [MODE]: 48 examples from DIR/data's val split (MODE long: one ending of 33 tokens; MODE
# chars: with character counts, header[4] = 1 and one uint32 per completion after the examples, 0..40, some 0)
write_evalfile() {
  "$PY" - "$1" "$2" "${3:-}" <<'PY'
import glob, os, random, struct, sys
import numpy as np
val = np.concatenate([np.fromfile(p, dtype="<u2", offset=1024) for p in sorted(glob.glob(sys.argv[1] + "/data/synth_val_*.bin"))])
rnd = random.Random(11)
stream, longest = [], 0
def text(n):
    o = rnd.randrange(len(val) - n)
    return [int(t) for t in val[o:o + n]]
T = int(os.environ.get("ZS_T", "32"))
for i in range(48):
    nc = rnd.randint(2, 4)
    clen = rnd.randint(1, 4) if i % 8 else T - 1           # every 8th: a (T-1)-token ending
    ctxlen = [T - clen, T + 1 - clen, T + 2 - clen, rnd.randint(1, 20), rnd.randint(T, T + 20), 1][i % 6]
    ctxlen = max(1, ctxlen)
    seq = text(ctxlen + clen)
    ctx, ends = seq[:ctxlen], []
    label = rnd.randrange(nc)
    for c in range(nc):
        ends.append(seq[ctxlen:] if c == label else text(min(T, max(1, clen + rnd.randint(-1, 2)))))
    if sys.argv[3] == "long" and i == 30:
        ends[0] = text(T + 1)
    if i == 47:
        ends = [text(T), text(3)]                           # a T-token ending: one context token kept
        label = 0
    ex = [65535, 0, i, label, len(ends), len(ctx)] + ctx
    for e in ends:
        ex += [len(e)] + e
    ex[1] = 2 * len(ex); longest = max(longest, ex[1]); stream += ex
hdr = [20240522, 1, 48, longest] + [0] * 252
tail = b""
if sys.argv[3] == "chars":
    ncomp, p = 0, 0
    for i in range(48):
        ncomp += stream[p + 4]; p += stream[p + 1] // 2
    hdr[4] = 1
    tail = struct.pack("<%dI" % ncomp, *[rnd.choice([0, 1, 2, 3, 5, 8, 13, 21, 40]) for _ in range(ncomp)])
open(sys.argv[2], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % len(stream), *stream) + tail)
PY
}

# zs_dir EVALFILE: a case directory $d with the tiny dataset and the eval file $d/EVALFILE
zs_dir() {
  need_torch
  d=$(tmpdir)
  make_data "$d"
  write_evalfile "$d" "$d/$1"
}

# zs_job FILE ARCH_JSON INIT_JSON LR TASKS_JSON
zs_job() {
  cat > "$1" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 32, "heads": [2, 4] $2 $3},
 "train": {"batch_size": 4, "steps": ${STEPS:-1}, "lr": $4, "warmup_steps": 0},
 "eval": {"every": 0, "batches": 2, "tasks": $5},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}

# zs_parity ARCH_JSON: the built-in trains a model file; both engines score it
zs_parity() {
  local d; zs_dir mc.bin
  write_evalfile "$d" "$d/mcc.bin" chars
  STEPS=40 zs_job "$d/seed.json" "$1" '' 0.01 '[]'
  builtin "$d" seed.json seedout
  zs_job "$d/job.json" "$1" ', "init": "seedout/model.bin"' 1e-30 '[{"name": "mc", "path": "mc.bin"}, {"name": "mc2", "path": "'"$d"'/mc.bin"}, {"name": "mcc", "path": "mcc.bin"}]'
  builtin "$d" job.json c
  torch_run "$d" job.json t 2> "$d/t.err" || { cat "$d/t.err"; fail "torch trainer failed"; }
  "$PY" - "$d" <<'PY' || fail "the two engines' zero-shot numbers differ (above)"
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/c/result.json"))["zero_shot"]
lines = [json.loads(l) for l in open(d + "/t/lines.jsonl")]
t = lines[-1]["result"]["zero_shot"]
print("built-in:", json.dumps(c, sort_keys=True)); print("torch:   ", json.dumps(t, sort_keys=True))
assert c == t, "result.json zero_shot differs"
cm = [json.loads(l) for l in open(d + "/c/metrics.jsonl")][-1]
tv = [l for l in lines if l["event"] == "val"][-1]
print("built-in last metrics row:", cm.get("zero_shot")); print("torch final val line:", tv.get("zero_shot"))
assert cm["zero_shot"] == c and tv["zero_shot"] == t and tv["step"] == 1, "the final val point's zero_shot"
assert t["mc"]["n"] == 48 and 0 < t["mc"]["truncated"] < 48, t["mc"]
assert 0 < t["mc"]["acc"] < 1 and 0 < t["mc"]["acc_norm"] < 1, t["mc"]
# lm-eval's per-character acc_norm only where the file has the counts, equal in both engines (c == t above)
assert "acc_norm_char" not in t["mc"] and 0 < t["mcc"]["acc_norm_char"] < 1, t
assert t["mcc"]["acc_norm_char"] != t["mcc"]["acc_norm"], t["mcc"]
PY
}

t_gpt2_scores_match_the_builtin() { zs_parity ''; }
t_llama_scores_match_the_builtin() { zs_parity ', "arch": "llama"'; }

# bad_file DIR NAME EXPECT...: the torch trainer exits 2 before step 0, stderr names eval.tasks[0] and each EXPECT
bad_file() {
  local d=$1 f=$2 rc=0; shift 2
  zs_job "$d/bad.json" '' '' 0.01 '[{"name": "hs", "path": "'"$f"'"}]'
  rm -rf "$d/b"
  torch_run "$d" bad.json b 2> "$d/b.err" || rc=$?
  assert_eq 2 "$rc" "exit status for $f ($(tail -n 3 "$d/b.err"))"
  local e; e=$(cat "$d/b.err")
  assert_contains "$e" "eval.tasks[0] (hs): $d/$f"
  for x in "$@"; do assert_contains "$e" "$x"; done
  assert_eq 0 "$(grep -c '"event"' "$d/b/lines.jsonl")" "protocol lines before the refusal"
  echo "refused: $(grep 'eval.tasks' "$d/b.err")"
}

t_bad_eval_files_exit_2_naming_the_file() {
  local d; zs_dir good.bin
  head -c $(( $(stat -c %s "$d/good.bin") - 10 )) "$d/good.bin" > "$d/cut.bin"
  bad_file "$d" cut.bin "example 47: truncated: it says"
  head -c 1000 "$d/good.bin" > "$d/hdr.bin"
  bad_file "$d" hdr.bin "1000 bytes, shorter than the 1024-byte eval file header"
  cp "$d"/data/synth_val_000000.bin "$d/shard.bin"
  bad_file "$d" shard.bin "magic 20240520, expected 20240522" "this is a token shard"
  write_evalfile "$d" "$d/long.bin" long
  bad_file "$d" long.bin "example 30: completion 0 has 33 tokens, more than the model's window train.seq_len 32"
  bad_file "$d" nosuch.bin "cannot open eval file"
  "$PY" - "$d/good.bin" "$d/label.bin" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[1024 + 6:1024 + 8] = (9).to_bytes(2, "little")   # example 0's label
open(sys.argv[2], "wb").write(b)
PY
  bad_file "$d" label.bin "example 0: label 9 >= completion count"
}

# The reader on 400 mutated files (fixed seed: bytes flipped, header fields and lengths set to edge values, cut
# or grown): each is an EvalFile that scores without an exception, or a JobError naming the file; never another
# exception, never an allocation of what a header claims (a 65536-example count in a short file is one check).
t_mutated_eval_files_are_refused_or_scored() {
  local d; zs_dir good.bin
  PYTHONPATH="$PRISM_ROOT/trainers/torch" "$PY" - "$d/good.bin" "$d/m.bin" <<'PY' || fail "the reader failed on a mutated file (above)"
import random, struct, sys, traceback
import numpy as np
import prism_eval as pe
from prism_data import JobError
good, path = open(sys.argv[1], "rb").read(), sys.argv[2]
rnd = random.Random(1)
stub = lambda inp, tgt: (inp * 7 + tgt * 3) % 11 / 10.0   # any per-position losses
ok = refused = 0
for it in range(400):
    b = bytearray(good)
    for _ in range(rnd.randint(1, 4)):
        k = rnd.randrange(5)
        if k == 0 and b:
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        elif k == 1 and len(b) > 1026:   # a uint16 field of the example stream set to an edge value
            o = 1024 + 2 * rnd.randrange((len(b) - 1024) // 2)
            b[o:o + 2] = struct.pack("<H", rnd.choice([0, 1, 2, 6, 7, 64, 65, 32767, 65534, 65535]))
        elif k == 2 and len(b) >= 16:   # a header int
            o = 4 * rnd.randrange(4)
            b[o:o + 4] = struct.pack("<i", rnd.choice([0, 1, -1, 47, 48, 49, 65536, 65537, 2 ** 31 - 1]))
        elif k == 3:
            b = b[:rnd.randrange(len(b) + 1)]
        elif k == 4:
            b += bytes(rnd.randrange(4) * 2)
    open(path, "wb").write(b)
    try:
        ef = pe.open_evalfile(path, 128)
        pe.check_window(ef, 32)
        c = pe.score(ef, 32, 4, stub)
        assert c["n"] == ef.n, (c, ef.n)
        ok += 1
    except JobError as e:
        assert str(e).startswith(path + ":"), "message does not start with the file: %s" % e
        refused += 1
    except Exception:
        traceback.print_exc()
        open(path + ".crash", "wb").write(b)
        sys.exit("mutation %d: not a JobError (input kept in %s.crash)" % (it, path))
print("400 mutated files: %d scored, %d refused with a JobError naming the file" % (ok, refused))
assert refused > 300 and ok > 0, (ok, refused)
PY
}

# Two CPU ranks (torchrun, gloo): each scores examples i % 2 == rank; the summed counts are one process's.
t_two_ranks_give_the_same_scores() {
  local d; zs_dir mc.bin
  STEPS=3 zs_job "$d/job.json" '' '' 0.004 '[{"name": "mc", "path": "mc.bin"}]'
  torch_run "$d" job.json one 2>/dev/null || fail "one process failed"
  DEVICES=cpu,cpu torch_run "$d" job.json two 2> "$d/two.err" || { tail "$d/two.err"; fail "two ranks failed"; }
  local a b; a=$(tail -n1 "$d/one/lines.jsonl" | jq -c .result.zero_shot); b=$(tail -n1 "$d/two/lines.jsonl" | jq -c .result.zero_shot)
  echo "one process: $a"; echo "two ranks:   $b"
  assert_eq "$a" "$b" "zero_shot of 1 vs 2 ranks"
  assert_eq 2 "$(grep -c '"zero_shot"' "$d/two/lines.jsonl")" "lines carrying zero_shot from two ranks (the final val and the result, once each)"
}
# A sweep with "trainer": "torch" and eval.tasks through a real server and worker (worker/extrun.c reads the
# lines): the job's result.json has the trainer's zero_shot, and the leaderboard's column has its acc_norm.
t_sweep_with_tasks_reaches_the_leaderboard() {
  need_torch
  w_setup
  ZS_T=16 write_evalfile "$D" "$D/data/mc.bin"
  w_spec "$D/spec.json" tzs '["1,1,4,4"]' '[3]' 12
  "$PY" - "$D/spec.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["trainer"] = "torch"; d["eval"]["tasks"] = [{"name": "mc", "path": "data/mc.bin"}]
json.dump(d, open(sys.argv[1], "w"))
PY
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wt --trainer "torch=$PY $TRAINER --threads 1" --idle-exit 1; local pw=$LAST_PID
  # the schedule and the baseline (h_base 4): both finish, done or failed
  w_wait 200 "both jobs finished" eval '[ $(( $(w_count '"$sid"' done) + $(w_count '"$sid"' failed) )) = 2 ]'
  w_exit "$pw" 30; assert_eq 0 "$W_RC" "worker exit status"
  assert_eq 0 "$(w_count "$sid" failed)" "failed jobs ($(w_get "/api/v1/sweeps/$sid/jobs" | jq -c '[.jobs[].last_error]'))"
  local lb f n=0; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  echo "leaderboard: $(echo "$lb" | jq -c '[.rows[] | {heads, mc: .zero_shot.mc}]')"
  assert_eq '["mc"]' "$(echo "$lb" | jq -c .zero_shot_tasks)" "tasks on the leaderboard"
  for f in "$D"/work-wt/*/result.json "$D"/work-wt/*/*/result.json; do
    [ -f "$f" ] || continue
    local zs heads k job board; zs=$(jq -c .zero_shot.mc "$f"); heads=$(jq -c .heads "$f")
    echo "result.json of $heads: $zs"
    assert_eq 48 "$(echo "$zs" | jq .n)" "examples scored"
    for k in acc acc_norm; do   # the leaderboard's means go through SQLite's JSON (15 significant digits)
      job=$(echo "$zs" | jq ".$k"); board=$(echo "$lb" | jq ".rows[] | select(.heads == $heads) | .zero_shot.mc.${k}_mean")
      assert_eq true "$(jq -n "($job - ${board:-9}) | fabs < 1e-12")" "$k of $heads: the job's $job vs the leaderboard's $board"
    done
    n=$((n + 1))
  done
  assert_eq 2 "$n" "result.json files under $D/work-wt"
}
harness_main "$@"
