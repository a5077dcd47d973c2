#!/usr/bin/env bash
# test_searchsweep.sh — the surrogate search on a real CPU sweep (issue #38): tests/fixtures/searchsweep is the full
# grid of its rules (35 schedules × 3 seeds, trained by the CPU engine on real text: tools/searchsweep.sh); a search
# with a budget of 30% of the grid (11 schedules: init 5, batches of 3) is replayed through the real server against
# it (tests/integration/search_replay.py: each leased job answered with the engine's recorded result for that
# schedule and seed) and must recommend a schedule inside the full grid's best group, having trained 11 schedules,
# every one of the grid.
# timeout: 180
source "$(dirname "$0")/../lib.sh"

t_search_at_30_percent_of_the_grid_picks_inside_its_best_group() {
  local D; D=$(tmpdir)
  /usr/bin/python3 "$PRISM_ROOT/tests/integration/search_replay.py" "$PRISM_ROOT/tests/fixtures/searchsweep" "$PRISM_BUILD" \
    --budget 11 --init 5 --batch 3 --out "$D/out.json" || fail "search_replay.py failed"
  /usr/bin/python3 - "$D/out.json" "$PRISM_ROOT/tests/fixtures/searchsweep/results.jsonl" <<'PY' || fail "the search's pick"
import json, sys
d = json.load(open(sys.argv[1])); s = d["search"]
grid = {(tuple(r["heads"]), r["seed"]) for r in map(json.loads, open(sys.argv[2]))}
assert d["grid_schedules"] == 35 and len(grid) == 105, (d["grid_schedules"], len(grid))
assert s["finished"] and s["stop_reason"] == "budget" and s["schedules"] == 11 and s["trained"] == 11, s
assert len(d["trained"]) == 11 and d["jobs_replayed"] == 33, (d["trained"], d["jobs_replayed"])
assert [b["trained"] for b in s["batches"]] == [5, 8, 11], s["batches"]
print("recommended %s: rank %d of the grid's %d, best group %d schedules: %s; P(beat) %.3f; trained %s" % (
    d["recommended"], d["recommended_grid_rank"], d["grid_schedules"], len(d["grid_best_group"]),
    d["recommended_in_best_group"], s["p_beat"], d["trained"]))
assert d["recommended_in_best_group"], (d["recommended"], d["grid_best_group"])
PY
}

harness_main "$@"
