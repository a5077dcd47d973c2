# tests/integration/worker_lib.sh — helpers for the worker-agent integration tests (test_e2e.sh,
# test_worker*.sh): a synthetic dataset, a real `prism-sweep serve` on a random loopback port, real
# `prism-worker` agents, and small JSON queries against the API. Sourced after tests/lib.sh.
# Every process started here is recorded and killed (by pid) when the case exits.

W_PIDS=()
w_cleanup() { local p; for p in "${W_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
trap w_cleanup EXIT

# w_tokens: a fresh case directory $D, a free port ($PORT, $URL) and tokens ($D/tokens, $D/worker-token).
w_tokens() {
  D=$(tmpdir)
  PORT=$(free_port)
  URL="http://127.0.0.1:$PORT"
  WTOK=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  ATOK=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  printf 'worker_token=%s\nadmin_token=%s\n' "$WTOK" "$ATOK" > "$D/tokens"
  printf '%s\n' "$WTOK" > "$D/worker-token"
  chmod 600 "$D/tokens" "$D/worker-token"
}

# w_setup: w_tokens and a synthetic dataset in $D/data.
w_setup() {
  w_tokens
  "$(bin prism-data)" synth --out "$D/data" --tokens 60000 --vocab 64 --seed 7 > "$D/synth.log" 2>&1 \
    || { cat "$D/synth.log"; fail "prism-data synth failed"; }
  TRAIN_GLOB=$(w_shard_glob train)
  VAL_GLOB=$(w_shard_glob val)
}

# The relative glob (against $D) of the train or val shards prism-data wrote.
w_shard_glob() {
  local f; f=$(cd "$D" && ls data/*"$1"*.bin 2>/dev/null | head -n1)
  [ -n "$f" ] || fail "prism-data synth wrote no $1 shard in $D/data: $(ls "$D/data")"
  echo "data/*$1*.bin"
}

# w_spec FILE NAME SCHEDULES_JSON SEEDS_JSON STEPS [CKPT_EVERY] [DATA_TRAIN] [PRIORITY]: a tiny sweep spec
# (L=4, d_model=32, h_base=4, T=16, B=2) whose data paths are relative (resolved by --data-root).
w_spec() {
  local file=$1 name=$2 scheds=$3 seeds=$4 steps=$5 ck=${6:-0} train=${7:-$TRAIN_GLOB} prio=${8:-0}
  cat > "$file" <<EOF
{ "name": "$name", "priority": $prio,
  "model": {"n_layer": 4, "d_model": 32, "vocab_size": 64, "padded_vocab_size": 64, "seq_len": 16},
  "rules": {"h_base": 4},
  "schedules": $scheds,
  "seeds": $seeds,
  "train": {"batch_size": 2, "seq_len": 16, "grad_accum": 1, "steps": $steps, "lr": 0.003,
            "lr_schedule": "cosine", "warmup_steps": 2, "checkpoint_every": $ck},
  "eval": {"every": 10, "batches": 2, "attn_distance": true},
  "data": {"train": "$train", "val": "$VAL_GLOB"} }
EOF
}

# w_server [extra flags]: starts the orchestrator on $PORT over $D/prism.db; waits for /healthz.
w_server() {
  "$(bin prism-sweep)" serve --db "$D/prism.db" --listen "127.0.0.1:$PORT" --token-file "$D/tokens" \
    --web "$PRISM_ROOT/web" "$@" >> "$D/server.log" 2>&1 &
  SERVER_PID=$!
  W_PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 1 100); do
    curl -sf "$URL/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$D/server.log"; fail "prism-sweep serve exited"; }
    sleep 0.1
  done
  cat "$D/server.log"; fail "server not healthy after 10 s"
}

# w_worker NAME [extra flags]: starts an agent with fast test timings; its log is $D/NAME.log.
w_worker() {
  local name=$1; shift
  OMP_NUM_THREADS=1 "$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --devices cpu \
    --name "$name" --work-dir "$D/work-$name" --checkpoint-dir "$D/ckpt" --data-root "$D" \
    --poll 0.2 --heartbeat 0.5 --flush 0.3 --progress log "$@" >> "$D/$name.log" 2>&1 &
  LAST_PID=$!
  W_PIDS+=("$LAST_PID")
}

# w_create SPEC: POST /api/v1/sweeps with the admin token; prints the sweep id.
w_create() {
  local out; out=$(curl -s -X POST -H "Authorization: Bearer $ATOK" -H 'Content-Type: application/json' \
    --data-binary @"$1" "$URL/api/v1/sweeps")
  echo "$out" | w_json 'd["sweep_id"]' || fail "POST /api/v1/sweeps: $out"
}

# w_get PATH: GET with the admin token (stdout: body).
w_get() { curl -s -H "Authorization: Bearer $ATOK" "$URL$1"; }
# w_post PATH JSON: POST with the admin token.
w_post() { curl -s -X POST -H "Authorization: Bearer $ATOK" -H 'Content-Type: application/json' -d "$2" "$URL$1"; }

# w_curve JOB KIND: every point of the job's curve of KIND as one {"points": [...]}, read page by page (the metrics route
# answers a page at a time: "more", since= its last_step; docs/API.md).
w_curve() {
  /usr/bin/python3 - "$URL" "$ATOK" "$1" "$2" <<'EOF_CURVE'
import json, sys, urllib.request
url, tok, job, kind = sys.argv[1:5]
pts, since = [], -1
for _ in range(100000):
    req = urllib.request.Request("%s/api/v1/jobs/%s/metrics?kind=%s&since=%d" % (url, job, kind, since),
                                 headers={"Authorization": "Bearer " + tok})
    d = json.load(urllib.request.urlopen(req))
    pts += d["points"]
    if not d.get("more"): break
    since = d["last_step"]
print(json.dumps({"points": pts}))
EOF_CURVE
}

# w_json EXPR: evaluates a Python expression over the JSON on stdin (bound to d); prints the result.
w_json() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); r=($1); print(r if not isinstance(r,(dict,list,bool)) else json.dumps(r))"; }

# w_wait SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.2 s until it succeeds. SECONDS is multiplied by
# TIMEOUT_SCALE (tests/run.sh; `make sanitize` sets 4), as are w_exit's.
w_wait() {
  local t=$(( $1 * ${TIMEOUT_SCALE:-1} )) what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  while ! "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { w_dump; fail "timed out after ${t}s waiting for: $what"; }
    sleep 0.2
  done
}

# w_exit PID SECONDS: waits for a process started here to exit, killing it after SECONDS; sets W_RC to its
# exit status (137 when it had to be killed). `kill -0` cannot tell (an exited child stays a zombie until
# waited), so this reads the state in /proc/PID/stat; no watchdog subshell (it would inherit the EXIT trap).
w_exit() {
  local pid=$1 end=$(( $(date +%s) + $2 * ${TIMEOUT_SCALE:-1} )) st
  while [ "$(date +%s)" -lt "$end" ]; do
    st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$st" ] || [ "$st" = Z ] && break
    sleep 0.1
  done
  [ -z "$st" ] || [ "$st" = Z ] || kill -KILL "$pid" 2>/dev/null
  W_RC=0; wait "$pid" || W_RC=$?
}

# A metrics answer summarised as FIRST-LAST/COUNT/DISTINCT steps.
w_steps() { w_json '"%d-%d/%d/%d" % (min(p["step"] for p in d["points"]), max(p["step"] for p in d["points"]), len(d["points"]), len({p["step"] for p in d["points"]})) if d["points"] else "none"'; }

# Counts of the sweep's jobs in a state.
w_count() { w_get "/api/v1/sweeps/$1" | w_json "d['counts']['$2']"; }
w_all_done() { [ "$(w_count "$1" done)" = "$2" ]; }

# Prints the logs (on failure).
w_dump() {
  local f
  for f in "$D"/*.log; do echo "---- $f"; tail -n 30 "$f"; done >&2
}
