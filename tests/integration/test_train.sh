#!/usr/bin/env bash
# test_train.sh — prism-data and `prism-worker train` as a user runs them: real processes, real files.
# timeout: 240
source "$(dirname "$0")/../lib.sh"

# A tiny job on a small synthetic corpus; $1 = dir holding data/, extra JSON for "train" in $2
# (STEPS, BATCH, LR, WARMUP override the fields written here).
write_job() {
  cat > "$1/job.json" <<JSON
{"model": {"n_layer": 2, "d_model": 64, "vocab_size": 128, "seq_len": 64, "heads": [2, 4]},
 "train": {"batch_size": ${BATCH:-8}, "steps": ${STEPS:-20}, "lr": ${LR:-0.004}, "warmup_steps": ${WARMUP:-5} ${2:-}},
 "eval": {"every": 10, "batches": 2, "attn_distance": true},
 "data": {"train": "data/synth_train_*.bin", "val": "data/synth_val_*.bin"}}
JSON
}
make_data() { "$(bin prism-data)" synth --out "$1/data" --tokens ${TOKENS:-200k} --vocab 128 --seed 3 >/dev/null || fail "prism-data synth failed"; }

t_synth_is_deterministic_llmc_shards() {
  local d; d=$(tmpdir)
  "$(bin prism-data)" synth --out "$d/a" --tokens 50k --vocab 256 --seed 7 >/dev/null || fail "synth a"
  "$(bin prism-data)" synth --out "$d/b" --tokens 50k --vocab 256 --seed 7 >/dev/null || fail "synth b"
  "$(bin prism-data)" synth --out "$d/c" --tokens 50k --vocab 256 --seed 8 >/dev/null || fail "synth c"
  cmp -s "$d/a/synth_train_000000.bin" "$d/b/synth_train_000000.bin" || fail "same seed gave different shards"
  cmp -s "$d/a/synth_train_000000.bin" "$d/c/synth_train_000000.bin" && fail "different seeds gave the same shard"
  # llm.c header: magic 20240520, version 1, count 45000 (90% of 50k)
  local hdr; hdr=$(od -An -t d4 -N 12 "$d/a/synth_train_000000.bin" | tr -s ' ')
  assert_eq " 20240520 1 45000" "$hdr" "shard header"
  assert_eq $((1024 + 2 * 45000)) "$(stat -c %s "$d/a/synth_train_000000.bin")" "shard size"
  # meta.json's entropies match an independent count of the train shard
  /usr/bin/python3 - "$d/a" <<'PY' || fail "meta.json entropies differ from a recount of the train shard"
import json, math, struct, sys
from collections import Counter
m = json.load(open(sys.argv[1] + "/meta.json"))
b = open(sys.argv[1] + "/synth_train_000000.bin", "rb").read()[1024:]
t = struct.unpack("<%dH" % (len(b) // 2), b)
def H(c):
    n = sum(c.values()); return -sum(x / n * math.log(x / n) for x in c.values())
h1, h2 = H(Counter(t)), H(Counter(zip(t, t[1:]))) - H(Counter(t[:-1]))
print("unigram %.4f (meta %.4f), bigram %.4f (meta %.4f)" % (h1, m["unigram_entropy"], h2, m["bigram_entropy"]))
assert abs(h1 - m["unigram_entropy"]) < 1e-4 and abs(h2 - m["bigram_entropy"]) < 1e-4
PY
}

# The synthetic language's structure: the token before explains much (bigram entropy well below unigram), and
# a short training run gets well below what any bigram model can: the model must use attention (t-2, t-3,
# copies, references). A bigram-only language fails the second check.
t_synth_loss_falls_below_bigram_entropy() {
  local d; d=$(tmpdir)
  TOKENS=1M make_data "$d"
  STEPS=300 BATCH=16 LR=0.01 WARMUP=20 write_job "$d"
  local H H2
  H=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unigram_entropy"])' "$d/data/meta.json")
  H2=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bigram_entropy"])' "$d/data/meta.json")
  /usr/bin/python3 -c "import sys; h,h2=map(float,sys.argv[1:]); sys.exit(0 if 0 < h2 < h - 1.0 else 1)" "$H" "$H2" \
    || fail "bigram entropy $H2 is not well below the unigram entropy $H"
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  local last; last=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_loss"])' "$d/out/result.json")
  echo "unigram entropy $H, bigram entropy $H2, val loss $last"
  /usr/bin/python3 -c "import sys; h2,l=map(float,sys.argv[1:]); sys.exit(0 if l < h2 - 0.3 else 1)" "$H2" "$last" \
    || fail "val loss $last is not well below the bigram entropy $H2 of the train split"
}

t_bytes_makes_byte_shards() {
  local d; d=$(tmpdir)
  for i in $(seq 200); do echo "line $i of some text for the byte tokenizer"; done > "$d/in.txt"
  "$(bin prism-data)" bytes "$d/in.txt" --out "$d/out" >/dev/null || fail "bytes failed"
  local n; n=$(stat -c %s "$d/in.txt")
  local tr va; tr=$(od -An -t d4 -j 8 -N 4 "$d/out/bytes_train_000000.bin" | tr -d ' '); va=$(od -An -t d4 -j 8 -N 4 "$d/out/bytes_val_000000.bin" | tr -d ' ')
  assert_eq "$n" "$((tr + va))" "train + val tokens = input bytes"
  # first token is the first byte ('l' = 108)
  assert_eq "108" "$(od -An -t u2 -j 1024 -N 2 "$d/out/bytes_train_000000.bin" | tr -d ' ')" "first token"
}

t_loss_falls_well_below_unigram_entropy() {
  local d; d=$(tmpdir)
  TOKENS=600k make_data "$d"
  STEPS=150 BATCH=16 LR=0.01 write_job "$d"
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  local H last first
  H=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unigram_entropy"])' "$d/data/meta.json")
  first=$(grep '"val_loss"' "$d/out/metrics.jsonl" | head -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
  last=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_loss"])' "$d/out/result.json")
  echo "unigram entropy $H, val loss $first -> $last"
  /usr/bin/python3 -c "import sys; H,f,l=map(float,sys.argv[1:]); sys.exit(0 if l < H - 1.5 and l < f - 1.5 else 1)" "$H" "$first" "$last" \
    || fail "val loss $last is not well below the unigram entropy $H (start $first)"
}

# eval.batches "all": every whole batch of the val split, each batch's loss in result.json with their standard error
t_eval_all_reports_every_val_batch() {
  local d; d=$(tmpdir)
  make_data "$d"; write_job "$d"
  sed -i 's/"batches": 2/"batches": "all"/' "$d/job.json"
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  /usr/bin/python3 - "$d/out/result.json" "$d/data/meta.json" <<'PY' || fail "val batches"
import json, math, sys
r = json.load(open(sys.argv[1])); meta = json.load(open(sys.argv[2]))
B, T = 8, 64
windows = (meta["val_tokens"] - 1) // T          # windows of T+1 tokens at offsets k*T (one val shard)
want = windows // B
b = r["val_loss_batches"]; n = len(b); m = sum(b) / n
se = math.sqrt(sum((x - m) ** 2 for x in b) / (n - 1) / n)
print("val batches", n, "expected", want, "val_loss", r["val_loss"], "mean of batches", m, "se", r["val_loss_se"], se)
assert n == want == r["val_batches"], (n, want, r["val_batches"])
assert abs(m - r["val_loss"]) < 1e-6 and abs(se - r["val_loss_se"]) < 1e-9
PY
}

t_outputs_are_complete() {
  local d; d=$(tmpdir)
  make_data "$d"; write_job "$d"
  (cd "$d" && "$(bin prism-worker)" train job.json --out out --quiet) || fail "train failed"
  local m="$d/out/metrics.jsonl"
  assert_eq 20 "$(grep -c '"train_loss"' "$m")" "one train row per update"
  assert_eq "0 10 20" "$(grep '"val_loss"' "$m" | sed 's/.*"step":\([0-9]*\).*/\1/' | tr '\n' ' ' | sed 's/ $//')" "val rows at 0, every 10, end"
  assert_contains "$(head -2 "$m" | tail -1)" '"lr":'
  assert_contains "$(head -2 "$m" | tail -1)" '"tokens":512'
  /usr/bin/python3 - "$d/out/result.json" <<'PY' || fail "result.json incomplete"
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("val_loss", "tok_per_s", "wall_s", "params", "flops_per_token", "attn_distance", "heads"):
    assert k in r, k
assert r["heads"] == [2, 4] and len(r["attn_distance"]) == 2 and all(x > 0 for x in r["attn_distance"])
assert r["params"] == 128*64 + 64*64 + 2*(12*64*64 + 13*64) + 2*64, r["params"]
PY
  # model.bin: llm.c header, heads in slots 8.., exact size
  assert_eq " 20240326 3 64 128 2 4 64 128 2 4 0" "$(od -An -t d4 -N 44 "$d/out/model.bin" | tr -s ' ' | tr -d '\n')" "model.bin header"
}

t_same_job_twice_gives_identical_metrics() {
  local d; d=$(tmpdir)
  make_data "$d"; write_job "$d" ', "grad_accum": 2'
  (cd "$d" && "$(bin prism-worker)" train job.json --out a --quiet) || fail "run a"
  (cd "$d" && OMP_NUM_THREADS=1 "$(bin prism-worker)" train job.json --out b --quiet) || fail "run b"
  [ "$(strip_timing "$d/a/metrics.jsonl")" = "$(strip_timing "$d/b/metrics.jsonl")" ] \
    || { diff <(strip_timing "$d/a/metrics.jsonl") <(strip_timing "$d/b/metrics.jsonl") | head; fail "metrics differ"; }
  cmp -s "$d/a/model.bin" "$d/b/model.bin" || fail "model.bin differs"
  # a different schedule from the same seed trains differently
  (cd "$d" && "$(bin prism-worker)" train job.json --heads 4,4 --out c --quiet) || fail "run c"
  [ "$(strip_timing "$d/a/metrics.jsonl")" != "$(strip_timing "$d/c/metrics.jsonl")" ] || fail "heads 4,4 gave the same metrics as 2,4"
}

t_sigterm_checkpoints_and_resume_continues_exactly() {
  local d; d=$(tmpdir)
  make_data "$d"
  STEPS=100000 WARMUP=0 write_job "$d" ', "lr_schedule": "constant", "checkpoint_every": 1000'
  cd "$d"
  "$(bin prism-worker)" train job.json --out run --quiet 2>err.txt & local pid=$!
  for _ in $(seq 200); do [ "$(grep -c train_loss run/metrics.jsonl 2>/dev/null)" -ge 8 ] && break; sleep 0.05; done
  kill -TERM $pid; wait $pid; local rc=$?
  assert_eq 3 "$rc" "exit status after SIGTERM"
  local ck; ck=$(ls run/ckpt_*.bin 2>/dev/null | head -1)
  [ -n "$ck" ] || fail "no checkpoint after SIGTERM: $(cat err.txt)"
  local k; k=$(basename "$ck" .bin); k=${k#ckpt_}
  local n=$((k + 5))
  "$(bin prism-worker)" train job.json --out run --resume "$ck" --steps $n --quiet || fail "resume failed"
  "$(bin prism-worker)" train job.json --out straight --steps $n --quiet || fail "straight run failed"
  [ "$(strip_timing run/metrics.jsonl)" = "$(strip_timing straight/metrics.jsonl)" ] \
    || { diff <(strip_timing run/metrics.jsonl) <(strip_timing straight/metrics.jsonl) | head; fail "resumed metrics differ (stopped at $k)"; }
  echo "stopped at step $k, resumed to $n: identical"
}

t_bad_data_names_the_path() {
  local d out; d=$(tmpdir)
  make_data "$d"; write_job "$d"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o --train "nowhere/x_*.bin" 2>&1); local rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "nowhere/x_*.bin: no token shards match"
  # a truncated shard: the message names the file and the size it should have
  head -c 5000 "$d/data/synth_val_000000.bin" > "$d/data/synth_val_000001.bin"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "synth_val_000001.bin: file is 5000 bytes but the header says"
  rm "$d/data/synth_val_000001.bin"
  # tokens outside the model's vocabulary: the file and the position (never the value: no file contents in errors)
  "$(bin prism-data)" synth --out "$d/wide" --tokens 50k --vocab 1024 --seed 1 >/dev/null || fail "synth wide"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o --train "wide/synth_train_*.bin" 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status"
  assert_contains "$out" "wide/synth_train_000000.bin: the token at position "
  assert_contains "$out" "is outside the vocabulary (model.vocab_size 128)"
  # --data-root resolves relative globs
  "$(bin prism-worker)" train "$d/job.json" --data-root "$d" --out "$d/o2" --steps 2 --quiet || fail "--data-root run failed"
}

# eval.batches beyond the val split fails at job start (before step 0), naming the split's size and the largest
# eval.batches that fits; exactly that many passes (no batch wraps around to count twice)
t_eval_batches_beyond_the_val_split_fail_at_start() {
  local d out rc; d=$(tmpdir)
  make_data "$d"        # 200k tokens, 10% val: 20000 tokens = 312 windows of 65 = 39 batches of 8
  write_job "$d"
  sed -i 's/"batches": 2/"batches": 40/' "$d/job.json"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o --quiet 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status for eval.batches 40 > 39: $out"
  assert_contains "$out" "eval.batches 40 exceeds the val split: data.val (data/synth_val_*.bin) holds 20000 tokens = 312 windows"
  assert_contains "$out" "= 39 batches of batch_size 8: set eval.batches to at most 39"
  [ ! -s "$d/o/metrics.jsonl" ] || fail "a metrics row was written before the check: $(head -2 "$d/o/metrics.jsonl")"
  sed -i 's/"batches": 40/"batches": 39/' "$d/job.json"
  (cd "$d" && "$(bin prism-worker)" train job.json --out o2 --steps 2 --quiet) || fail "eval.batches 39 (the whole split) failed"
  # a val split smaller than one batch fails whatever eval.batches is
  BATCH=400 write_job "$d"
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --out o3 --quiet 2>&1); rc=$?
  assert_eq 2 "$rc" "exit status for batch_size 400 > 312 windows: $out"
  assert_contains "$out" "less than one batch of batch_size 400"
}

t_bad_job_and_flags_exit_2() {
  local d out; d=$(tmpdir)
  make_data "$d"; write_job "$d" ', "dropout": 0.1'
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" 2>&1); assert_eq 2 $? "unknown key"
  assert_contains "$out" "train.dropout: unknown key"
  write_job "$d"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" --heads 3,4 2>&1); assert_eq 2 $? "bad heads"
  assert_contains "$out" "model.heads[0]: 3 does not divide model.d_model 64"
  out=$("$(bin prism-worker)" train "$d/job.json" --out "$d/o" --stepz 3 2>&1); assert_eq 2 $? "bad flag"
  assert_contains "$out" "--stepz"
  out=$("$(bin prism-worker)" train "$d/job.json" --data-root "$d" --out "$d/o" --resume "$d/job.json" 2>&1); assert_eq 2 $? "bad resume"
  assert_contains "$out" "job.json"
  out=$("$(bin prism-worker)" train --help); assert_eq 0 $? "--help"
  assert_contains "$out" "--checkpoint-every"
  out=$("$(bin prism-worker)" train "$d/job.json" --print-job --steps 7 --heads 4x2); assert_eq 0 $? "--print-job"
  assert_contains "$out" '"steps": 7'
}

t_nan_loss_fails_with_step_and_value() {
  local d out; d=$(tmpdir)
  make_data "$d"; write_job "$d"
  # start from an llm.c checkpoint whose weights hold a NaN: the first loss is NaN
  /usr/bin/python3 - "$d/nan.bin" <<'PY'
import struct, sys
L, C, V, Vp, T = 2, 64, 128, 128, 64
n = Vp*C + T*C + L*(12*C*C + 13*C) + 2*C
hdr = [20240326, 3, T, V, L, 4, C, Vp] + [0] * 248
w = [0.0] * n
w[5] = float("nan")
open(sys.argv[1], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%df" % n, *w))
PY
  out=$(cd "$d" && "$(bin prism-worker)" train job.json --init nan.bin --out o --quiet 2>&1); local rc=$?
  assert_eq 1 "$rc" "exit status"
  assert_contains "$out" "step 0"
  assert_contains "$out" "is nan (not finite)"
}

harness_main "$@"
