#!/usr/bin/env bash
# test_leaderboard_arch.sh — the leaderboard says which architecture the sweep trains: "arch" in the API's JSON
# ("gpt2" when the spec has no model.arch), in `prism-sweep leaderboard`'s title, and the job a worker leases
# carries the llama keys.
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/server_lib.sh"

t_leaderboard_and_leased_job_carry_the_arch() {
  s_setup
  s_spec "$D/g.json" lbg '["1,1,4,4"]' '[1]'
  s_spec "$D/l.json" lbl '["1,1,4,4"]' '[1]'
  sed -i 's/"seq_len": 32},/"seq_len": 32, "arch": "llama", "rope_theta": 500},/' "$D/l.json"
  grep -q '"arch": "llama"' "$D/l.json" || fail "could not add model.arch to the spec"
  local g l
  g=$(s_create "$D/g.json"); l=$(s_create "$D/l.json")
  s_server
  s_expect 200 GET "/api/v1/sweeps/$g/leaderboard"; assert_eq gpt2 "$(s_json .arch)" "gpt2 sweep arch"
  s_expect 200 GET "/api/v1/sweeps/$l/leaderboard"; assert_eq llama "$(s_json .arch)" "llama sweep arch"
  local out
  out=$("$(bin prism-sweep)" leaderboard --db "$DB" lbl 2>&1) || fail "leaderboard CLI failed: $out"
  assert_contains "$out" "(lbl, llama)"
  # the leased jobs of the llama sweep are llama jobs (the worker fills in ffn_hidden's default)
  local w n=0; w=$(s_register w1)
  while :; do
    s_lease "$w"; [ -z "$JOB" ] && break
    if [ "$(s_json .job.model.arch)" = llama ]; then
      n=$((n+1))
      assert_eq 500 "$(s_json .job.model.rope_theta)" "leased rope_theta"
    fi
  done
  [ $n -ge 1 ] || fail "no llama job was leased"
}

harness_main "$@"
