#!/usr/bin/env bash
# test_torch_sweep.sh — a whole tiny sweep with "trainer": "torch" through a real server and a real worker given
# the reference trainer (`prism-worker --trainer torch='/usr/bin/python3 trainers/torch/train.py --threads 1'`,
# docs/TRAINERS.md) to a leaderboard: every job trains each step once, its val points carry val_loss_se, its result
# has the built-in's keys (attn_distance included). The worker side is branch `trainers` (worker/extrun.c): a
# worker built without --trainer skips this, naming why.
# timeout: 300
source "$(dirname "$0")/torch_lib.sh"
source "$(dirname "$0")/worker_lib.sh"

t_sweep_with_the_torch_trainer_to_a_leaderboard() {
  need_torch
  "$(bin prism-worker)" agent --help 2>&1 | grep -q -- '--trainer ' || skip "this prism-worker has no --trainer (the external-trainer worker side, issue 25)"
  w_setup
  w_spec "$D/spec.json" tsweep '["4,4,4,4", "1,1,4,4"]' '[3]' 12
  "$PY" - "$D/spec.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["trainer"] = "torch"; json.dump(d, open(sys.argv[1], "w"))
PY
  w_server
  local sid; sid=$(w_create "$D/spec.json")
  w_worker wt --trainer "torch=$PY $TRAINER --threads 1" --idle-exit 1; local pw=$LAST_PID
  w_wait 240 "both jobs done" w_all_done "$sid" 2
  w_exit "$pw" 30; assert_eq 0 "$W_RC" "worker exit status"
  local jobs j; jobs=$(w_get "/api/v1/sweeps/$sid/jobs")
  for j in $(echo "$jobs" | w_json '" ".join(str(j["id"]) for j in d["jobs"])'); do
    assert_eq "0-11/12/12" "$(w_get "/api/v1/jobs/$j/metrics?kind=train" | w_steps)" "train steps of job $j"
    assert_eq "0-12/3/3" "$(w_get "/api/v1/jobs/$j/metrics?kind=val" | w_steps)" "val steps of job $j (0, 10, 12)"
  done
  grep -q 'trainer=torch' "$D/wt.log" || { w_dump; fail "no prefixed trainer log line in the worker's log"; }
  local lb; lb=$(w_get "/api/v1/sweeps/$sid/leaderboard")
  echo "$lb" | w_json '[(r["heads"], r["val_losses"]) for r in d["rows"]]'
  assert_eq '[[1, 1, 4, 4], [4, 4, 4, 4]]' "$(echo "$lb" | w_json 'sorted(r["heads"] for r in d["rows"])')" "schedules"
  assert_eq 'true' "$(echo "$lb" | w_json 'all(v["val_loss_se"] > 0 for r in d["rows"] for v in r["val_losses"])')" "val_loss_se on the leaderboard"
}
harness_main "$@"
