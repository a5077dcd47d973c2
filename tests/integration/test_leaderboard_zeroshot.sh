#!/usr/bin/env bash
# test_leaderboard_zeroshot.sh — the zero-shot columns of the leaderboard: per task mean ± std of acc and acc_norm
# over seeds and the paired difference of acc_norm against uniform with its 95% CI, in the API's JSON and CSV and
# in `prism-sweep leaderboard` (table, CSV, JSON). Results go in through the real API; the expected numbers are
# computed independently in Python.
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

# acc_norm per schedule and seed for two tasks (acc = acc_norm - 0.01); seed index 2 of 2,2,4,4 never finishes
ZS='{"4,4,4,4": [0.30, 0.31, 0.29], "1,1,4,4": [0.33, 0.335, 0.331], "2,2,4,4": [0.29, 0.32, 0.5]}'

zs_fill() {
  s_setup
  s_spec "$D/s.json" zs '["1,1,4,4", "2,2,4,4"]' '[11, 22, 33]'
  # the tasks the results name (the server takes zero-shot results only for the job's eval.tasks)
  sed -i 's|"attn_distance": true}|"attn_distance": true, "tasks": [{"name": "hellaswag", "path": "hellaswag_val.bin"}, {"name": "piqa", "path": "piqa_val.bin"}]}|' "$D/s.json"
  SID=$(s_create "$D/s.json")
  s_server
  local w; w=$(s_register w1)
  while :; do
    s_lease "$w"; [ -z "$JOB" ] && break
    local heads seedi a
    heads=$(s_json '.heads|map(tostring)|join(",")'); seedi=$(( $(s_json .seed) / 11 - 1 ))
    if [ "$heads" = "2,2,4,4" ] && [ $seedi = 2 ]; then continue; fi
    a=$(echo "$ZS" | jq ".[\"$heads\"][$seedi]")
    local zs="{\"hellaswag\": {\"acc\": $(jq -n "$a - 0.01"), \"acc_norm\": $a, \"n\": 100, \"truncated\": 0},
               \"piqa\": {\"acc\": $(jq -n "1 - $a"), \"acc_norm\": $(jq -n "1 - $a"), \"n\": 50, \"truncated\": 0}}"
    s_expect 200 POST "/api/v1/jobs/$JOB/complete" "{\"lease_token\": \"$TOKEN\", \"result\": {\"val_loss\": 3.3, \"tok_per_s\": 1000, \"zero_shot\": $zs}}"
  done
}

t_zero_shot_columns_json() {
  zs_fill
  s_expect 200 GET "/api/v1/sweeps/$SID/leaderboard"
  echo "$BODY" >"$D/lb.json"
  assert_eq '["hellaswag","piqa"]' "$(jq -c .zero_shot_tasks "$D/lb.json")" "tasks"
  /usr/bin/python3 - "$D/lb.json" "$ZS" <<'EOF' || fail "zero-shot numbers differ (see above)"
import json, math, sys
lb = json.load(open(sys.argv[1])); Z = json.loads(sys.argv[2])
done = {"4,4,4,4": [0, 1, 2], "1,1,4,4": [0, 1, 2], "2,2,4,4": [0, 1]}
t = {1: 12.706205, 2: 4.302653}
def mean(v): return sum(v) / len(v)
def sd(v): m = mean(v); return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))
bad = []
def check(what, exp, got, tol=1e-9):
    if got is None or abs(exp - got) > tol: bad.append(f"{what}: expected {exp}, got {got}")
for r in lb["rows"]:
    h = ",".join(map(str, r["heads"]))
    for task, f in (("hellaswag", lambda x: x), ("piqa", lambda x: 1 - x)):
        c = r["zero_shot"][task]; v = [f(Z[h][i]) for i in done[h]]
        check(f"{h} {task} acc_norm_mean", mean(v), c["acc_norm_mean"]); check(f"{h} {task} acc_norm_std", sd(v), c["acc_norm_std"])
        check(f"{h} {task} acc_mean", mean(v) - (0.01 if task == "hellaswag" else 0), c["acc_mean"])
        if c["n"] != len(v): bad.append(f"{h} {task} n {c['n']}")
        if h == "4,4,4,4":
            if c["delta"] is not None: bad.append("baseline has a delta")
            continue
        d = [f(Z[h][i]) - f(Z["4,4,4,4"][i]) for i in done[h]]
        n = len(d); half = t[n - 1] * sd(d) / math.sqrt(n)
        check(f"{h} {task} delta", mean(d), c["delta"]["mean"])
        check(f"{h} {task} ci_low", mean(d) - half, c["delta"]["ci_low"], 1e-4)
        check(f"{h} {task} ci_high", mean(d) + half, c["delta"]["ci_high"], 1e-4)
        check(f"{h} {task} delta_acc", mean(d), c["delta_acc"]["mean"])
        if c["delta"]["n"] != n: bad.append(f"{h} {task} delta n")
        if c["delta"]["excludes_zero"] != (mean(d) - half > 0 or mean(d) + half < 0): bad.append(f"{h} {task} excludes_zero")
print("\n".join(bad)); sys.exit(1 if bad else 0)
EOF
  # 1,1,4,4 is better on hellaswag on every seed (CI above zero)
  assert_eq "true" "$(jq -r '.rows[]|select(.heads==[1,1,4,4])|.zero_shot.hellaswag.delta.excludes_zero' "$D/lb.json")" "excludes_zero"
}

t_zero_shot_columns_csv_and_cli() {
  zs_fill
  curl -s -o "$D/lb.csv" "$URL/api/v1/sweeps/$SID/leaderboard?format=csv"
  assert_contains "$(head -n1 "$D/lb.csv")" "tok_per_s_std,hellaswag_acc_mean,hellaswag_acc_norm_mean,hellaswag_acc_norm_std,hellaswag_delta_mean,hellaswag_delta_ci_low,hellaswag_delta_ci_high,hellaswag_delta_p,hellaswag_delta_p_holm,hellaswag_delta_significant,piqa_acc_mean"
  local row; row=$(grep '"1,1,4,4"' "$D/lb.csv")
  assert_contains "$row" ",0.322000,0.332000,0.002646,0.032000,"
  assert_eq 40 "$(head -n1 "$D/lb.csv" | tr "," "\n" | wc -l)" "csv columns"
  assert_eq 40 "$(echo "$row" | sed 's/"[^"]*"/H/' | tr ',' '\n' | wc -l)" "csv cells in a row"
  local cli; cli=$("$(bin prism-sweep)" leaderboard --db "$DB" "$SID" --format csv) || fail "cli csv"
  assert_eq "$(cat "$D/lb.csv")" "$cli" "CLI csv = API csv"
  cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs --format json) || fail "cli json"
  assert_eq '["hellaswag","piqa"]' "$(echo "$cli" | jq -c .zero_shot_tasks)" "CLI json tasks"
  cli=$("$(bin prism-sweep)" leaderboard --db "$DB" zs) || fail "cli table"
  assert_contains "$cli" "zero-shot hellaswag: acc_norm"
  assert_contains "$cli" "0.3320 ± 0.0026"
  assert_contains "$cli" "+0.0320 ["
}

# A sweep without eval.tasks: the columns are absent from the CSV and empty in the JSON.
t_no_tasks_no_columns() {
  s_setup
  s_spec "$D/s.json" plain '["1,1,4,4"]' '[1]'
  local sid; sid=$(s_create "$D/s.json")
  s_server
  s_expect 200 GET "/api/v1/sweeps/$sid/leaderboard"
  assert_eq "[] {}" "$(s_json '"\(.zero_shot_tasks|tojson) \(.rows[0].zero_shot|tojson)"')" "no tasks"
  assert_eq "rank,heads,is_baseline,seeds_done,seeds_total,val_loss_mean,val_loss_std,tok_per_s_mean,delta_n,delta_mean,delta_ci_low,delta_ci_high,excludes_zero,p,p_holm,significant,provisional,tied_best,tok_per_s_std,delta_se,delta_df,method" \
    "$(curl -s "$URL/api/v1/sweeps/$sid/leaderboard?format=csv" | head -n1)" "csv header"
}
harness_main "$@"
