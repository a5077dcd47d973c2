#!/usr/bin/env bash
# test_power.sh — `prism-sweep power SPEC`: the detectable-effect figures of a spec before it runs, checked against
# SciPy (Holm's first-step critical t over K − 1 comparisons at (K−1)(n−1) df; 80% power by SciPy's noncentral t),
# and its errors.
# timeout: 60
. "$(dirname "$0")/../lib.sh"

t_power_of_paper_small_matches_scipy() {
  local out; out=$("$(bin prism-sweep)" power "$PRISM_ROOT/sweeps/paper-small.json" --sd 0.002 --format json) || fail "power failed"
  echo "$out"
  /usr/bin/python3 - "$out" <<'PY' || fail "power figures differ from SciPy"
import json, math, sys
from scipy import stats
o = json.loads(sys.argv[1])
K, n, sd = 56, 3, 0.002
df = (K - 1) * (n - 1); c = stats.t.ppf(1 - 0.05 / (2 * (K - 1)), df); se = sd * math.sqrt(2 / n)
bad = []
if (o["schedules"], o["seeds"], o["comparisons"], o["df"]) != (K, n, K - 1, df): bad.append(("design", o))
if abs(o["critical"] - c) > 1e-8 * c: bad.append(("critical", o["critical"], c))
if abs(o["min_significant_delta"] - c * se) > 1e-8 * c * se: bad.append(("min significant", o["min_significant_delta"], c * se))
# the stated delta_80 gives 80% power by the exact noncentral t (within the approximation's 1%)
ncp = o["delta_80"] / se
power = stats.nct.sf(c, df, ncp) + stats.nct.cdf(-c, df, ncp)
print("critical", o["critical"], c, "delta_80", o["delta_80"], "exact power there", power)
if abs(power - 0.8) > 0.01: bad.append(("power at delta_80", power))
if not o["effect_detectable"] or o["seeds_for_effect"] != 2: bad.append(("paper effect", o["effect_detectable"], o["seeds_for_effect"]))
print(bad); sys.exit(1 if bad else 0)
PY
  out=$("$(bin prism-sweep)" power "$PRISM_ROOT/sweeps/paper-small.json" --sd 0.008) || fail "power text failed"
  echo "$out"
  assert_contains "$out" "56 schedules x 3 seeds, 55 comparisons against uniform"
  assert_contains "$out" "an effect of 0.0144 is below what 3 seeds can detect: about 11 seeds per schedule would reach it"
}

t_power_errors() {
  local rc=0 out; out=$("$(bin prism-sweep)" power /nonexistent.json 2>&1) || rc=$?
  assert_eq 2 "$rc" "missing spec exit"
  assert_contains "$out" "/nonexistent.json"
  rc=0; out=$("$(bin prism-sweep)" power "$PRISM_ROOT/sweeps/paper-small.json" --sd -1 2>&1) || rc=$?
  assert_eq 2 "$rc" "bad --sd exit"
  assert_contains "$out" "--sd"
  rc=0; out=$("$(bin prism-sweep)" power 2>&1) || rc=$?
  assert_eq 2 "$rc" "no spec exit"
}
harness_main "$@"
