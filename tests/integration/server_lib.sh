# server_lib.sh — helpers for the orchestrator's integration tests (sourced after lib.sh).
# s_setup: a fresh dir $D. s_server [flags]: starts `prism-sweep serve` on a free loopback port ($URL, $SPID,
# worker token $WT, admin token $AT), waiting until /healthz answers. s_req METHOD PATH [BODY] [TOKEN]: sets
# $CODE (HTTP status) and $BODY. s_spec FILE NAME SCHEDULES SEEDS: a tiny sweep spec. s_create FILE: creates it
# with `prism-sweep create` and prints the sweep id. Everything started is killed on exit.

S_PIDS=()
s_cleanup() { local p; for p in "${S_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap s_cleanup EXIT

s_setup() { D=$(tmpdir); DB="$D/p.db"; }

s_server() {
  PORT=$(free_port)
  URL="http://127.0.0.1:$PORT"
  "$(bin prism-sweep)" serve --db "$DB" --listen "127.0.0.1:$PORT" "$@" 2>>"$D/server.log" &
  SPID=$!
  S_PIDS+=("$SPID")
  s_wait_up
  WT=$(sed -n 's/^worker_token=//p' "$DB.tokens")
  AT=$(sed -n 's/^admin_token=//p' "$DB.tokens")
}

s_wait_up() {
  local i
  for i in $(seq 1 100); do
    curl -s -o /dev/null "$URL/healthz" && return 0
    kill -0 "$SPID" 2>/dev/null || fail "server exited: $(cat "$D/server.log")"
    sleep 0.05
  done
  fail "server not up after 5 s: $(cat "$D/server.log")"
}

# s_req METHOD PATH [BODY] [TOKEN]  (TOKEN defaults to the worker token; "-" sends none)
s_req() {
  local m=$1 p=$2 body=${3:-} tok=${4:-$WT}
  local args=(-s -o "$D/resp" -w '%{http_code}' -X "$m")
  [ "$tok" != "-" ] && args+=(-H "Authorization: Bearer $tok")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  CODE=$(curl "${args[@]}" "$URL$p")
  BODY=$(cat "$D/resp")
}

# s_expect CODE METHOD PATH [BODY] [TOKEN]
s_expect() {
  local want=$1; shift
  s_req "$@"
  [ "$CODE" = "$want" ] || fail "$1 $2: expected HTTP $want, got $CODE: $BODY"
}

s_json() { echo "$BODY" | jq -r "$1"; }

# s_spec FILE NAME SCHEDULES_JSON SEEDS_JSON [STEPS]
s_spec() {
  cat >"$1" <<EOF
{"name": "$2", "model": {"n_layer": 4, "d_model": 64, "vocab_size": 256, "padded_vocab_size": 256, "seq_len": 32},
 "rules": {"h_base": 4}, "schedules": $3, "seeds": $4,
 "train": {"batch_size": 2, "seq_len": 32, "grad_accum": 1, "steps": ${5:-10}, "lr": 0.001, "lr_schedule": "constant",
           "warmup_steps": 0, "min_lr_frac": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
           "grad_clip": 1.0, "shuffle": false},
 "eval": {"every": 5, "batches": 1, "attn_distance": true}, "data": {"train": "d/train_*.bin", "val": "d/val_*.bin"}}
EOF
}

s_create() {
  local out
  out=$("$(bin prism-sweep)" create "$1" --db "$DB" 2>&1) || fail "create failed: $out"
  echo "$out" | sed -n 's/^created sweep \([0-9]*\).*/\1/p; s/^sweep \([0-9]*\).*/\1/p' | head -n1
}

s_register() { s_expect 200 POST /api/v1/workers/register "{\"name\": \"$1\", \"host\": \"h\", \"devices\": [\"cpu\"]}"; s_json .worker_id; }

# s_lease WORKER_ID: leases; sets JOB, TOKEN, ATTEMPT (JOB empty on 204)
s_lease() {
  s_req POST /api/v1/lease "{\"worker_id\": $1}"
  JOB=; TOKEN=; ATTEMPT=
  [ "$CODE" = 204 ] && return 0
  [ "$CODE" = 200 ] || fail "lease: HTTP $CODE: $BODY"
  JOB=$(s_json .job_id); TOKEN=$(s_json .lease_token); ATTEMPT=$(s_json .attempt)
}

s_complete() { # JOB TOKEN LOSS [ATTN]
  s_expect 200 POST "/api/v1/jobs/$1/complete" "{\"lease_token\": \"$2\", \"result\": {\"val_loss\": $3, \"tok_per_s\": 1000, \"attn_distance\": ${4:-null}}}"
}
