#!/usr/bin/env bash
# test_schema.sh — `prism-worker schema --json` prints the rows every wire contract is built from (the job's keys,
# the metrics point's, the result's, the trainer protocol's events), and the copies outside C follow them:
# trainers/torch/prism_data.py (SPEC, DEFAULTS, REQUIRED), trainers/torch/prism_protocol.py (EVENTS,
# RESULT_RESERVED, INT_KEYS), docs/TRAINERS.md's protocol table and docs/FORMATS.md's job and metrics sections
# (tests/integration/schema_check.py). A key the rows gain and a copy lacks fails naming the file and the key.
# timeout: 60
. "$(dirname "$0")/../lib.sh"

dump() { "$(bin prism-worker)" schema --json > "$PRISM_TEST_TMP/schema.json" || fail "prism-worker schema --json: exit $?"; }
check() { /usr/bin/python3 "$PRISM_ROOT/tests/integration/schema_check.py" "$1" "$2" 2>&1; }

t_schema_prints_every_contract() {
  dump
  /usr/bin/python3 - "$PRISM_TEST_TMP/schema.json" <<'EOF' || fail "schema --json is not the rows"
import json, sys
s = json.load(open(sys.argv[1]))
job = {(r["section"], r["key"]): r for r in s["job"]}
assert job[("train", "lr")]["default"] == 6e-4 and job[("train", "lr")]["max"] == 10, job[("train", "lr")]
assert job[("model", "heads")]["required"] and job[("train", "seq_len")]["derived"] == "model.seq_len"
assert job[("model", "rope_theta")]["arch"] == "llama" and job[("model", "arch")]["choices"] == ["gpt2", "llama"]
assert [p["key"] for p in s["point"]][:3] == ["step", "train_loss", "val_loss"], s["point"]
assert s["events"]["train"]["required"] == ["step", "train_loss"], s["events"]["train"]
assert {"lr", "grad_norm", "tokens", "tok_per_s", "extra"} <= set(s["events"]["train"]["optional"]), s["events"]["train"]
assert {"extra", "val_loss_se", "zero_shot"} <= set(s["events"]["val"]["optional"]), s["events"]["val"]
assert "backend" in s["result_reserved"] and any(r["key"] == "val_loss" and r["required"] for r in s["result"])
EOF
  local out rc
  out=$("$(bin prism-worker)" schema 2>&1); rc=$?
  assert_eq 2 "$rc" "schema without --json"
  assert_contains "$out" "--json is required"
  out=$("$(bin prism-worker)" schema --jsn 2>&1); rc=$?
  assert_eq 2 "$rc" "schema with a bad flag"
  assert_contains "$out" "--jsn"
  out=$("$(bin prism-worker)" schema --help); rc=$?
  assert_eq 0 "$rc" "schema --help"
  assert_contains "$out" "--json"
  assert_contains "$("$(bin prism-worker)" help)" "schema"
}

t_trainer_and_docs_follow_the_rows() {
  dump
  local out
  out=$(check "$PRISM_TEST_TMP/schema.json" "$PRISM_ROOT") || fail "the copies differ from the rows: $out"
}

# the rows gain a metric field and a job key (as a C change would): every copy that lacks them is named
t_a_new_row_fails_naming_each_copy() {
  dump
  /usr/bin/python3 - "$PRISM_TEST_TMP/schema.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["point"].append({"key": "seeded_norm", "kind": "number", "required": "no", "lines": ["train"], "stored_on": "train",
                   "min": 0, "max": 1e30})
s["events"]["train"]["optional"].append("seeded_norm")
s["job"].append({"section": "train", "key": "seeded_smoothing", "kind": "num", "min": 0, "max": 1, "default": 0,
                 "required": False})
json.dump(s, open(sys.argv[1], "w"))
EOF
  local out rc
  out=$(check "$PRISM_TEST_TMP/schema.json" "$PRISM_ROOT"); rc=$?
  assert_eq 1 "$rc" "schema_check with rows the copies lack"
  assert_contains "$out" "trainers/torch/prism_protocol.py: EVENTS['train'] lacks the optional key 'seeded_norm'"
  assert_contains "$out" "docs/TRAINERS.md: the \`train\` row of the protocol table lacks the key \`seeded_norm\`"
  assert_contains "$out" "docs/FORMATS.md: the \"metrics.jsonl and result.json\" section does not name the point key seeded_norm"
  assert_contains "$out" "trainers/torch/prism_data.py: SPEC['train'] lacks 'seeded_smoothing'"
  assert_contains "$out" "trainers/torch/prism_data.py: DEFAULTS['train'] lacks 'seeded_smoothing'"
  assert_contains "$out" "docs/FORMATS.md: the \"Job\" section does not name the job key train.seeded_smoothing"
}

# a copy that drifts from unchanged rows: a bound, a default, a dropped event key, a doc row
t_a_drifted_copy_is_named() {
  dump
  local R; R=$(tmpdir)
  mkdir -p "$R/trainers" "$R/docs"
  cp -r "$PRISM_ROOT/trainers/torch" "$R/trainers/"
  cp "$PRISM_ROOT/docs/TRAINERS.md" "$PRISM_ROOT/docs/FORMATS.md" "$R/docs/"
  sed -i 's/"steps": (INT, 1, 10 \*\* 9)/"steps": (INT, 1, 10 ** 8)/; s/"beta2": 0.95/"beta2": 0.96/' "$R/trainers/torch/prism_data.py"
  sed -i '/^    "train": /s/"grad_norm", //' "$R/trainers/torch/prism_protocol.py"
  sed -i 's/^| `preempted` | `step` |/| `preempted` | step |/' "$R/docs/TRAINERS.md"
  local out rc
  out=$(check "$PRISM_TEST_TMP/schema.json" "$R"); rc=$?
  assert_eq 1 "$rc" "schema_check on drifted copies"
  assert_contains "$out" "prism_data.py: SPEC['train']['steps'] bounds (1, 100000000), the job key train.steps is 1..1e+09"
  assert_contains "$out" "prism_data.py: DEFAULTS['train']['beta2'] is 0.96, the job key train.beta2 defaults to 0.95"
  assert_contains "$out" "prism_protocol.py: EVENTS['train'] lacks the optional key 'grad_norm'"
  assert_contains "$out" "docs/TRAINERS.md: the \`preempted\` row of the protocol table lacks the key \`step\`"
}

harness_main "$@"
