#!/usr/bin/env bash
# test_zeroshot_e2e.sh — zero-shot tasks through the whole system: a sweep whose spec has eval.tasks (an llm.c eval
# file written here by Python straight from llm.c's layout), a real orchestrator and a CPU worker agent; each job's
# result carries zero_shot, the final metrics row carries it, and the leaderboard gets the task's column. A missing
# task file fails the job with a message naming the task and the file.
# timeout: 150
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

# 30 examples: context 3..20 tokens, 2..4 endings of 1..3 tokens, tokens < 64 (the sweep's vocabulary); a second
# argument "chars" adds a character count per ending (header[4] = 1, one uint32 each after the examples)
write_evalfile() {
  /usr/bin/python3 - "$1" "${2:-}" <<'PY'
import random, struct, sys
random.seed(5)
stream, longest = [], 0
for i in range(30):
    nc = random.randint(2, 4)
    ctx = [random.randrange(64) for _ in range(random.randint(3, 20))]
    ends = [[random.randrange(64) for _ in range(random.randint(1, 3))] for _ in range(nc)]
    ex = [65535, 0, i, random.randrange(nc), nc, len(ctx)] + ctx
    for e in ends: ex += [len(e)] + e
    ex[1] = 2 * len(ex); longest = max(longest, ex[1]); stream += ex
hdr = [20240522, 1, 30, longest] + [0] * 252
tail = b""
if sys.argv[2] == "chars":
    hdr[4], p, counts = 1, 0, []
    while p < len(stream):
        counts += [random.randint(1, 30) for _ in range(stream[p + 4])]; p += stream[p + 1] // 2
    tail = struct.pack("<%dI" % len(counts), *counts)
open(sys.argv[1], "wb").write(struct.pack("<256i", *hdr) + struct.pack("<%dH" % len(stream), *stream) + tail)
PY
}

add_tasks() { # SPEC TASKS_JSON
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); s['eval']['tasks']=json.loads(sys.argv[2]); json.dump(s, open(sys.argv[1], 'w'))" "$1" "$2"
}

t_sweep_with_tasks_reaches_the_leaderboard() {
  w_setup
  write_evalfile "$D/data/mc.bin"
  write_evalfile "$D/data/mcc.bin" chars
  w_server
  w_spec "$D/spec.json" zs '["1,1,4,4"]' '[11, 22]' 20
  add_tasks "$D/spec.json" '[{"name": "mc", "path": "data/mc.bin"}, {"name": "mcc", "path": "data/mcc.bin"}]'
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa
  w_wait 100 "all 4 jobs done" w_all_done "$sid" 4
  local lb; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  assert_eq '["mc", "mcc"]' "$(echo "$lb" | w_json 'd["zero_shot_tasks"]')" "tasks on the leaderboard"
  # lm-eval's per-character acc_norm: over both seeds where the file has character counts, null where it has none
  assert_eq '[[2, true], [2, true]]' "$(echo "$lb" | w_json '[[r["zero_shot"]["mcc"]["acc_norm_char_n"], 0 <= r["zero_shot"]["mcc"]["acc_norm_char_mean"] <= 1] for r in d["rows"]]')" "acc_norm_char of mcc"
  assert_eq '[[0, null], [0, null]]' "$(echo "$lb" | w_json '[[r["zero_shot"]["mc"]["acc_norm_char_n"], r["zero_shot"]["mc"]["acc_norm_char_mean"]] for r in d["rows"]]')" "acc_norm_char of mc (no counts)"
  assert_eq '[2, 2]' "$(echo "$lb" | w_json '[r["zero_shot"]["mc"]["n"] for r in d["rows"]]')" "seeds per row"
  assert_eq 'true' "$(echo "$lb" | w_json 'all(0 <= r["zero_shot"]["mc"]["acc_norm_mean"] <= 1 for r in d["rows"])')" "acc_norm in [0, 1]"
  assert_eq '[2, 2, 30, 1]' "$(echo "$lb" | w_json '[[x["n"], x["seeds"], x["items"], x["df"]] for r in d["rows"] if not r["is_baseline"] for x in [r["zero_shot"]["mc"]["delta"]]][0]')" "common seeds, seeds in the fit, items, the task's df (2 × 2: 1)"
  # complete 2 × 2: the blocked Δ is the difference of the means; a test exactly when the fit has noise
  assert_eq 'true' "$(echo "$lb" | w_json 'all(abs(x["mean"] - (r["zero_shot"]["mc"]["acc_norm_mean"] - b["zero_shot"]["mc"]["acc_norm_mean"])) < 1e-12 and (x["method"] == "blocked") == (x["reason"] is None) == (x["ci_low"] is not None) for b in [r for r in d["rows"] if r["is_baseline"]] for r in d["rows"] if not r["is_baseline"] for x in [r["zero_shot"]["mc"]["delta"]])')" "Δ and its test"
  # each job's own result.json and last metrics row
  local f n=0
  for f in "$D"/work-wa/*/result.json "$D"/work-wa/*/*/result.json; do
    [ -f "$f" ] || continue
    assert_eq 30 "$(w_json 'd["zero_shot"]["mc"]["n"]' < "$f")" "examples scored in $f"
    assert_eq '[false, true]' "$(w_json '["acc_norm_char" in d["zero_shot"][t] for t in ("mc", "mcc")]' < "$f")" "acc_norm_char only for the task with counts, $f"
    local m; m=$(dirname "$f")/metrics.jsonl
    assert_eq 30 "$(tail -n1 "$m" | w_json 'd["zero_shot"]["mc"]["n"]')" "last metrics row of $m"
    n=$((n + 1))
  done
  [ $n -ge 1 ] || fail "no result.json under $D/work-wa: $(find "$D/work-wa" | head)"
  local csv; csv=$(w_get "/api/v1/sweeps/$sid/leaderboard?format=csv")
  assert_contains "$(echo "$csv" | head -n1)" ",mc_acc_mean,mc_acc_norm_mean,mc_acc_norm_std,mc_delta_mean,mc_delta_ci_low,mc_delta_ci_high"
  # the TensorBoard export carries each job's task scores (result/zero_shot/mc/acc, acc_norm; mcc also
  # acc_norm_char), equal to the database's: 4 jobs x (2 + 3)
  "$(bin prism-sweep)" export "$sid" --db "$D/prism.db" --format tensorboard --out "$D/tb" >/dev/null || fail "export"
  local chk; chk=$(/usr/bin/python3 "$(dirname "$0")/export_check.py" "$D/prism.db" "$D/tb" tensorboard "$sid") \
    || fail "tensorboard export differs from the database: $chk"
  echo "$chk"
  assert_contains "$chk" "20 zero_shot"
}

t_missing_task_file_fails_the_job_naming_it() {
  w_setup
  w_server
  w_spec "$D/spec.json" zsbad '[]' '[1]' 5
  add_tasks "$D/spec.json" '[{"name": "hellaswag", "path": "data/nosuch_val.bin"}]'
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wa
  w_wait 60 "the job to fail" eval '[ "$(w_count '"$sid"' failed)" = 1 ]'
  local err; err=$(w_get "/api/v1/sweeps/$sid/jobs" | w_json 'd["jobs"][0]["last_error"]')
  assert_contains "$err" "eval.tasks[0] (hellaswag)"
  assert_contains "$err" "data/nosuch_val.bin: cannot open eval file"
}
harness_main "$@"
