#!/usr/bin/env bash
# test_leaderboard_zeroshot.sh — the zero-shot columns of the leaderboard: per task mean ± std of acc and acc_norm
# over seeds, and against uniform Δ acc_norm and Δ acc from the blocked model (schedule + seed per task and metric,
# pooled residual df) with Holm over the whole table, in the API's JSON and CSV and in `prism-sweep leaderboard`
# (table, CSV, JSON). Results go in through the real API; the expected numbers come from an independent dense
# least-squares solution in NumPy with SciPy's t, and Holm written out here. One cell is missing (the fit handles
# it); one seed (no residual df) and an exact fit (SE 0) must give Δ without a test, never a bare [0, 0].
# timeout: 90
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# per schedule, task, metric: the value at seed 11, 22, 33; seed 33 of 2,2,4,4 never finishes (the missing cell).
# 1,1,4,4 is ~0.03 better on hellaswag acc_norm with little noise (significant after Holm); 2,2,4,4 is noise.
# hellaswag also reports lm-eval's per-character acc_norm (acc_norm_char); piqa does not (a file without counts)
ZS='{"4,4,4,4": {"hellaswag": {"acc_norm": [0.300, 0.310, 0.290], "acc": [0.280, 0.295, 0.277], "acc_norm_char": [0.310, 0.322, 0.305]},
               "piqa":      {"acc_norm": [0.600, 0.620, 0.610], "acc": [0.590, 0.602, 0.611]}},
     "1,1,4,4": {"hellaswag": {"acc_norm": [0.330, 0.341, 0.321], "acc": [0.300, 0.322, 0.296], "acc_norm_char": [0.351, 0.349, 0.340]},
               "piqa":      {"acc_norm": [0.604, 0.618, 0.616], "acc": [0.580, 0.611, 0.604]}},
     "2,2,4,4": {"hellaswag": {"acc_norm": [0.290, 0.320, 0.500], "acc": [0.284, 0.301, 0.400], "acc_norm_char": [0.300, 0.330, 0.450]},
               "piqa":      {"acc_norm": [0.612, 0.616, 0.100], "acc": [0.598, 0.597, 0.100]}}}'
ITEMS='{"hellaswag": 100, "piqa": 50}'

# zs_fill SEEDS_JSON [DATA_JSON]: a sweep whose every job reports DATA (ZS by default), 2,2,4,4's third seed left out
zs_fill() {
  local data=${2:-$ZS}
  s_setup
  s_spec "$D/s.json" zs '["1,1,4,4", "2,2,4,4"]' "$1"
  # the tasks the results name (the server takes zero-shot results only for the job's eval.tasks)
  sed -i 's|"attn_distance": true}|"attn_distance": true, "tasks": [{"name": "hellaswag", "path": "hellaswag_val.bin"}, {"name": "piqa", "path": "piqa_val.bin"}]}|' "$D/s.json"
  SID=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  while :; do
    s_lease "$w"; [ -z "$JOB" ] && break
    local heads seedi zs
    heads=$(s_json '.heads|map(tostring)|join(",")'); seedi=$(( $(s_json .seed) / 11 - 1 ))
    if [ "$heads" = "2,2,4,4" ] && [ $seedi = 2 ]; then continue; fi
    zs=$(jq -nc --argjson d "$data" --argjson n "$ITEMS" --arg h "$heads" --argjson i $seedi \
      '$d[$h] | with_entries(.value = ({acc: .value.acc[$i], acc_norm: .value.acc_norm[$i], n: $n[.key], truncated: 0}
        + (if .value.acc_norm_char then {acc_norm_char: .value.acc_norm_char[$i]} else {} end)))')
    s_expect 200 POST "/api/v1/jobs/$JOB/complete" "{\"lease_token\": \"$TOKEN\", \"result\": {\"val_loss\": 3.3, \"tok_per_s\": 1000, \"zero_shot\": $zs}}"
  done
}

# zs_check LB_JSON SEEDS: every zero-shot number of the leaderboard against the independent computation
zs_check() {
  /usr/bin/python3 - "$1" "$ZS" "$ITEMS" "$2" <<'PY' || fail "zero-shot numbers differ (see above)"
import json, math, sys
import numpy as np
from scipy import stats
lb = json.load(open(sys.argv[1])); Z = json.loads(sys.argv[2]); ITEMS = json.loads(sys.argv[3]); nseed = int(sys.argv[4])
names = ["4,4,4,4", "1,1,4,4", "2,2,4,4"]
done = {h: [i for i in range(nseed) if not (h == "2,2,4,4" and i == 2)] for h in names}
bad = []
def check(what, exp, got, tol=1e-9):
    if exp is None or got is None:
        if exp is not got: bad.append(f"{what}: expected {exp}, got {got}")
    elif abs(exp - got) > tol: bad.append(f"{what}: expected {exp!r}, got {got!r}")
def fit(task, metric):
    """dense least squares y = tau_schedule + beta_seed (beta_0 = 0) over the done cells"""
    X, y = [], []
    for si, h in enumerate(names):
        for j in done[h]:
            row = [0.0] * (len(names) + nseed - 1); row[si] = 1.0
            if j > 0: row[len(names) + j - 1] = 1.0
            X.append(row); y.append(Z[h][task][metric][j])
    X, y = np.array(X), np.array(y)
    XtXi = np.linalg.pinv(X.T @ X); b = XtXi @ X.T @ y
    df = len(y) - np.linalg.matrix_rank(X); rss = float(((y - X @ b) ** 2).sum())
    out = {}
    for si, h in enumerate(names[1:], 1):
        c = np.zeros(X.shape[1]); c[si] = 1; c[0] = -1
        d = float(c @ b)
        if df == 0: out[h] = dict(mean=d, df=0, se=None, t=None, p=None, lo=None, hi=None); continue
        se = math.sqrt(rss / df * float(c @ XtXi @ c)); t = d / se; h95 = stats.t.ppf(0.975, df) * se
        out[h] = dict(mean=d, df=df, se=se, t=t, p=2 * stats.t.sf(abs(t), df), lo=d - h95, hi=d + h95)
    return out
def holm(ps, m):
    order = sorted(range(len(ps)), key=lambda i: ps[i]); adj = [None] * len(ps); run = 0
    for k, i in enumerate(order):
        run = max(run, min(1.0, (m - k) * ps[i])); adj[i] = run
    return adj
rows = {",".join(map(str, r["heads"])): r for r in lb["rows"]}
m = (len(names) - 1) * 2
check("zero_shot_comparisons", m, lb["zero_shot_comparisons"], 0)
nsig = 0
for key, metric in (("delta", "acc_norm"), ("delta_acc", "acc")):
    exp = {(task, h): e for task in ("hellaswag", "piqa") for h, e in fit(task, metric).items()}
    cells = [k for k in exp if exp[k]["p"] is not None]
    adj = dict(zip(cells, holm([exp[k]["p"] for k in cells], m)))
    for (task, h), e in exp.items():
        d = rows[h]["zero_shot"][task][key]; w = f"{h} {task} {key}"
        check(w + " mean", e["mean"], d["mean"], 1e-12)
        check(w + " df", e["df"], d["df"], 0)
        check(w + " se", e["se"], d["se"], 1e-12)
        check(w + " t", e["t"], d["t"], 1e-8)
        check(w + " p", e["p"], d["p"], 1e-9)
        check(w + " ci_low", e["lo"], d["ci_low"], 1e-9)
        check(w + " ci_high", e["hi"], d["ci_high"], 1e-9)
        check(w + " p_holm", adj.get((task, h)), d["p_holm"], 1e-9)
        sig = (task, h) in adj and adj[(task, h)] < 0.05; nsig += sig
        if d["significant"] != sig: bad.append(f"{w} significant: expected {sig}, got {d['significant']}")
        ez = e["lo"] is not None and (e["lo"] > 0 or e["hi"] < 0)
        if d["excludes_zero"] != ez: bad.append(f"{w} excludes_zero: expected {ez}, got {d['excludes_zero']}")
        if d["method"] != ("blocked" if e["p"] is not None else "none"): bad.append(f"{w} method {d['method']}")
        if (d["reason"] is None) != (e["p"] is not None): bad.append(f"{w} reason {d['reason']}")
        if d["seeds"] != len(done[h]) or d["n"] != len(done[h]) or d["items"] != ITEMS[task]:
            bad.append(f"{w} seeds/n/items: {d['seeds']} {d['n']} {d['items']}, expected {len(done[h])} {len(done[h])} {ITEMS[task]}")
for h in names:
    for task in ("hellaswag", "piqa"):
        c = rows[h]["zero_shot"][task]; v = [Z[h][task]["acc_norm"][i] for i in done[h]]; a = [Z[h][task]["acc"][i] for i in done[h]]
        check(f"{h} {task} acc_norm_mean", float(np.mean(v)), c["acc_norm_mean"], 1e-12)
        check(f"{h} {task} acc_mean", float(np.mean(a)), c["acc_mean"], 1e-12)
        check(f"{h} {task} acc_norm_std", float(np.std(v, ddof=1)) if len(v) > 1 else None, c["acc_norm_std"], 1e-12)
        ch = [Z[h][task]["acc_norm_char"][i] for i in done[h]] if "acc_norm_char" in Z[h][task] else []
        check(f"{h} {task} acc_norm_char_mean", float(np.mean(ch)) if ch else None, c["acc_norm_char_mean"], 1e-12)
        check(f"{h} {task} acc_norm_char_std", float(np.std(ch, ddof=1)) if len(ch) > 1 else None, c["acc_norm_char_std"], 1e-12)
        if c["acc_norm_char_n"] != len(ch): bad.append(f"{h} {task} acc_norm_char_n {c['acc_norm_char_n']}, expected {len(ch)}")
        if c["n"] != len(v) or c["items"] != ITEMS[task] or c["items_max"] != ITEMS[task]: bad.append(f"{h} {task} n/items {c['n']} {c['items']}")
        if h == "4,4,4,4" and (c["delta"] is not None or c["delta_acc"] is not None): bad.append("the baseline has a delta")
print("significant cells:", nsig)
if nseed == 3 and not (0 < nsig < 2 * m): bad.append(f"{nsig} significant cells: the data are meant to give some and not all")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
}

t_zero_shot_blocked_model_json() {
  zs_fill '[11, 22, 33]'
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  echo "$BODY" >"$D/lb.json"
  assert_eq '["hellaswag","piqa"]' "$(jq -c .zero_shot_tasks "$D/lb.json")" "tasks"
  zs_check "$D/lb.json" 3
  # 8 cells − 3 schedules − 3 seeds + 1 component: 3 residual df, pooled over the task (the missing cell included)
  assert_eq "3 2 blocked" "$(jq -r '.rows[]|select(.heads==[2,2,4,4])|.zero_shot.hellaswag.delta|"\(.df) \(.seeds) \(.method)"' "$D/lb.json")" "2,2,4,4's df, seeds, method"
  assert_eq "true" "$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag.delta.significant' "$D/lb.json")" "1,1,4,4 marked on hellaswag"
}

t_zero_shot_columns_csv_and_cli() {
  zs_fill '[11, 22, 33]'
  curl -s -o "$D/lb.csv" "$URL/api/v1/sweeps/$SID/leaderboard?format=csv"
  curl -s -o "$D/lb.json" "$URL/api/v1/sweeps/$SID/leaderboard"
  assert_contains "$(head -n1 "$D/lb.csv")" "tok_per_s_std,hellaswag_acc_mean,hellaswag_acc_norm_mean,hellaswag_acc_norm_std,hellaswag_delta_mean,hellaswag_delta_ci_low,hellaswag_delta_ci_high,hellaswag_delta_p,hellaswag_delta_p_holm,hellaswag_delta_significant,hellaswag_delta_items,hellaswag_delta_seeds,hellaswag_delta_df,hellaswag_delta_method,hellaswag_acc_norm_char_mean,hellaswag_acc_norm_char_std,piqa_acc_mean"
  local row want; row=$(grep '"1,1,4,4"' "$D/lb.csv")
  want=$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag|[.acc_mean,.acc_norm_mean,.acc_norm_std,.delta.mean,.delta.ci_low,.delta.ci_high,.acc_norm_char_mean,.acc_norm_char_std]|map(.*1e6|round/1e6|tostring)|join(" ")' "$D/lb.json")
  echo "json: $want"
  /usr/bin/python3 - "$row" "$want" <<'PY' || fail "the CSV's hellaswag cells differ from the JSON's"
import csv, sys
r = next(csv.reader([sys.argv[1]])); w = [float(x) for x in sys.argv[2].split()]
got = [float(x) for x in r[19:25] + r[32:34]]
print("csv:", r[19:34], "piqa acc_norm_char:", r[47:49])
assert len(w) == len(got) == 8 and all(abs(a - b) < 1.5e-6 for a, b in zip(w, got)), (w, got)
assert r[28:32] == ["100", "3", "3", "blocked"], r[28:32]
assert r[47:49] == ["", ""], r[47:49]   # piqa reported no acc_norm_char: empty cells
PY
  assert_eq 53 "$(head -n1 "$D/lb.csv" | tr "," "\n" | wc -l)" "csv columns (the last: screened)"
  assert_eq 53 "$(echo "$row" | sed 's/"[^"]*"/H/' | tr ',' '\n' | wc -l)" "csv cells in a row"
  local cli; cli=$("$(bin prism-sweep)" leaderboard --db "$DB" "$SID" --format csv) || fail "cli csv"
  assert_eq "$(cat "$D/lb.csv")" "$cli" "CLI csv = API csv"
  cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs --format json) || fail "cli json"
  assert_eq '["hellaswag","piqa"]' "$(echo "$cli" | jq -c .zero_shot_tasks)" "CLI json tasks"
  assert_eq "$(jq -c '[.rows[].zero_shot]' "$D/lb.json")" "$(echo "$cli" | jq -c '[.rows[].zero_shot]')" "CLI json zero-shot = API's"
  cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs) || fail "cli table"
  echo "$cli" | sed -n '/zero-shot hellaswag/,$p'
  assert_contains "$cli" "zero-shot hellaswag: acc_norm"
  assert_contains "$cli" "(4 comparisons)"
  local d; d=$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag.delta|"\(.mean) \(.ci_low) \(.ci_high) \(.p_holm)"' "$D/lb.json")
  read -r m lo hi ph <<<"$d"
  assert_contains "$cli" "$(printf '%+.4f [%+.4f, %+.4f] n=100×3 df=3 p_holm=%.3g ▲' "$m" "$lo" "$hi" "$ph")"
  assert_contains "$(echo "$cli" | grep -A4 'zero-shot hellaswag' | grep ' 2,2,4,4 ')" "n=100×2 df=3"
}

# One seed: no residual df, so Δ with no test, said in every surface — never an interval.
t_one_seed_delta_without_a_test() {
  zs_fill '[11]'
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  echo "$BODY" >"$D/lb.json"
  zs_check "$D/lb.json" 1
  assert_eq "none 0 null null false 1" "$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag.delta|"\(.method) \(.df) \(.ci_low) \(.p_holm) \(.significant) \(.seeds)"' "$D/lb.json")" "one seed: no test"
  assert_contains "$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag.delta.reason' "$D/lb.json")" "no residual df"
  local cli; cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs) || fail "cli table"
  echo "$cli" | sed -n '/zero-shot hellaswag/,$p'
  assert_contains "$cli" "+0.0300 n=100×1 (no test: no residual df"
  assert_eq "1 0 none" "$(curl -s "$URL/api/v1/sweeps/$SID/leaderboard?format=csv" | /usr/bin/python3 -c '
import csv, sys
r = [x for x in csv.reader(sys.stdin) if x[1] == "1,1,4,4"][0]
print(" ".join(r[29:32] + (["lo=" + r[23]] if r[23] else [])))')" "csv: seeds, df, method; no interval"
}

# Every cell at the same accuracy (a model at chance answers every item alike): SE 0 is no test, and the interval
# is not printed as [+0.0000, +0.0000]; the item count is.
t_exact_fit_is_no_test() {
  local flat; flat=$(echo "$ZS" | jq -c 'map_values(map_values(map_values(map(0.25))))')
  zs_fill '[11, 22, 33]' "$flat"
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  echo "$BODY" >"$D/lb.json"
  assert_eq "none 3 0 null null null false false" "$(jq -r '.rows[]|select(.heads==[2,2,4,4])|.zero_shot.piqa.delta_acc|"\(.method) \(.df) \(.mean) \(.ci_low) \(.p) \(.p_holm) \(.significant) \(.excludes_zero)"' "$D/lb.json")" "SE 0: no test"
  assert_contains "$(jq -r '.rows[]|select(.heads==[2,2,4,4])|.zero_shot.piqa.delta.reason' "$D/lb.json")" "no residual variation"
  local cli; cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs) || fail "cli table"
  echo "$cli" | sed -n '/zero-shot hellaswag/,$p'
  assert_contains "$cli" "+0.0000 n=50×2 (no test: no residual variation"
  if echo "$cli" | grep -q '\[+0.0000, +0.0000\]'; then fail "a bare [+0.0000, +0.0000] interval in the table"; fi
}

# A sweep without eval.tasks: the columns are absent from the CSV and empty in the JSON.
t_no_tasks_no_columns() {
  s_setup
  s_spec "$D/s.json" plain '["1,1,4,4"]' '[1]'
  local sid; sid=$(s_create "$D/s.json")
  s_server
  s_expect 200 GET "/api/v1/sweeps/$sid/leaderboard"
  assert_eq "[] {} 0" "$(s_json '"\(.zero_shot_tasks|tojson) \(.rows[0].zero_shot|tojson) \(.zero_shot_comparisons)"')" "no tasks"
  assert_eq "rank,heads,is_baseline,seeds_done,seeds_total,val_loss_mean,val_loss_std,tok_per_s_mean,delta_n,delta_mean,delta_ci_low,delta_ci_high,excludes_zero,p,p_holm,significant,provisional,tied_best,tok_per_s_std,delta_se,delta_df,method,screened" \
    "$(curl -s "$URL/api/v1/sweeps/$sid/leaderboard?format=csv" | head -n1)" "csv header"
}
harness_main "$@"
