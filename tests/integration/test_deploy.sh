#!/usr/bin/env bash
# test_deploy.sh — deploy/systemd and deploy/k8s, checked offline:
#  - systemd: `systemd-analyze verify` of both units in a scratch root (--root) that holds the system's unit
#    tree and the built binaries at their /usr/local/bin paths (verify needs no systemd running: it loads the
#    units itself); any message it prints fails the case. Then the values that matter, and the units' command
#    lines run for real (a server answering /healthz and stopping on SIGTERM; a worker registering with it).
#  - Kubernetes: kubectl's --dry-run=client needs an API server for discovery, so the manifests are checked by
#    tests/integration/k8s_check.py (PyYAML): known kinds and field names, and the values that matter — ports,
#    paths, probes, signals/grace period, volumes, the token Secret, the GPU limit.
#  - the Dockerfile's stages and COPY sources (it is not built here).
# timeout: 60
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

UNITS=$PRISM_ROOT/deploy/systemd
K8S=$PRISM_ROOT/deploy/k8s

# verify_root DIR: a scratch root with the system's units, the binaries, and our units in etc/systemd/system.
verify_root() {
  local r=$1
  mkdir -p "$r/usr/local/bin" "$r/etc/systemd/system" "$r/usr/lib/systemd"
  cp -r /usr/lib/systemd/system "$r/usr/lib/systemd/" || fail "no /usr/lib/systemd/system: install systemd (tools/deps.sh)"
  cp "$(bin prism-sweep)" "$(bin prism-worker)" "$r/usr/local/bin/"
  cp "$UNITS"/*.service "$r/etc/systemd/system/"
}

t_systemd_units_pass_systemd_analyze_verify() {
  command -v systemd-analyze >/dev/null || fail "systemd-analyze not found: run tools/deps.sh (package systemd)"
  local r; r=$(tmpdir)/root
  verify_root "$r"
  local out rc=0
  out=$(systemd-analyze verify --root="$r" prism-sweep.service prism-worker@0.service prism-worker@cpu.service 2>&1) || rc=$?
  assert_eq 0 "$rc" "systemd-analyze verify exit status (output: $out)"
  assert_eq "" "$out" "systemd-analyze verify output"
  # the same check catches a misspelt directive and a missing binary
  sed 's/^PrivateTmp=yes/PrivateTmpp=yes/' "$UNITS/prism-sweep.service" > "$r/etc/systemd/system/typo.service"
  out=$(systemd-analyze verify --root="$r" typo.service 2>&1)
  assert_contains "$out" "Unknown key 'PrivateTmpp'"
  rm "$r/usr/local/bin/prism-worker"
  out=$(systemd-analyze verify --root="$r" prism-worker@1.service 2>&1) && fail "verify passed without the binary"
  assert_contains "$out" "/usr/local/bin/prism-worker is not executable"
}

# key UNIT KEY: the values of KEY= in a unit file (one per line)
key() { sed -n "s/^$2=//p" "$UNITS/$1"; }

t_systemd_units_have_the_settings_that_matter() {
  local s=prism-sweep.service w=prism-worker@.service
  assert_eq yes "$(key $s NoNewPrivileges)" "$s NoNewPrivileges"
  assert_eq strict "$(key $s ProtectSystem)" "$s ProtectSystem"
  assert_eq /var/lib/prism-sweep "$(key $s ReadWritePaths)" "$s ReadWritePaths (only the state directory)"
  assert_eq prism-sweep "$(key $s StateDirectory)" "$s StateDirectory"
  assert_eq yes "$(key $s PrivateTmp)" "$s PrivateTmp"
  assert_eq on-failure "$(key $s Restart)" "$s Restart"
  assert_contains "$(key $s Environment)" "PRISM_LISTEN=127.0.0.1:8080"
  assert_contains "$(key $s ExecStart)" "serve --db /var/lib/prism-sweep/prism.db --listen \${PRISM_LISTEN}"
  assert_eq SIGTERM "$(key $w KillSignal)" "$w KillSignal"
  [ "$(key $w TimeoutStopSec)" -ge 120 ] || fail "$w TimeoutStopSec $(key $w TimeoutStopSec) leaves too little time to checkpoint"
  assert_contains "$(key $w ExecStart)" "--devices %i "
  assert_eq yes "$(key $w NoNewPrivileges)" "$w NoNewPrivileges"
  assert_eq strict "$(key $w ProtectSystem)" "$w ProtectSystem"
  assert_eq /var/lib/prism-worker "$(key $w ReadWritePaths)" "$w ReadWritePaths"
  assert_eq yes "$(key $w PrivateTmp)" "$w PrivateTmp"
  grep -q '^PrivateDevices=yes' "$UNITS/$w" && fail "$w hides /dev (PrivateDevices): no GPU"
  return 0
}

# expand UNIT INSTANCE: the unit's ExecStart with %i, %H and ${VAR}/$VAR from its Environment= lines (and any
# override in the environment of this function, e.g. PRISM_SERVER), paths moved under $ROOT.
expand() {
  local line; line=$(key "$1" ExecStart)
  local envs; envs=$(key "$1" Environment | tr ' ' '\n' | grep =)
  local v name val
  while IFS= read -r v; do
    name=${v%%=*}; val=${v#*=}
    [ -n "${!name:-}" ] && val=${!name}
    line=${line//\$\{$name\}/$val}; line=${line//\$$name/$val}
  done <<< "$envs"
  line=${line//%i/$2}; line=${line//%H/$(hostname -s)}
  line=${line//\/usr\/local\/bin\//$PRISM_BUILD/}; line=${line//\/var\/lib\//$ROOT/var/lib/}
  echo "$line"
}

# The units' command lines run: the orchestrator answers /healthz on the configured address and stops on
# SIGTERM with exit 0; a worker instance (%i = cpu) registers with it and exits 0 on SIGTERM.
t_systemd_command_lines_run() {
  w_setup
  ROOT=$D/root
  mkdir -p "$ROOT/var/lib/prism-sweep" "$ROOT/var/lib/prism-worker/cpu" "$ROOT/var/lib/prism-worker/checkpoints"
  local cmd; cmd=$(PRISM_LISTEN=127.0.0.1:$PORT PRISM_WEB=$PRISM_ROOT/web expand prism-sweep.service x)
  $cmd > "$D/server.log" 2>&1 &
  local sp=$!; W_PIDS+=("$sp")
  w_wait 10 "the unit's server answers /healthz" curl -sf "$URL/healthz"
  [ -s "$ROOT/var/lib/prism-sweep/prism.db.worker-token" ] || fail "no worker token in the state directory"
  # (the token file as /etc/default/prism-worker would name it; expand moves /var/lib under $ROOT)
  cmd=$(PRISM_SERVER=$URL PRISM_TOKEN_FILE=/var/lib/prism-sweep/prism.db.worker-token PRISM_DATA_ROOT=$D \
        expand prism-worker@.service cpu)
  assert_contains "$cmd" "--devices cpu --name $(hostname -s)-cpu --work-dir $ROOT/var/lib/prism-worker/cpu"
  $cmd --poll 0.2 > "$D/worker.log" 2>&1 &
  local wp=$!; W_PIDS+=("$wp")
  ATOK=$(sed -n 's/^admin_token=//p' "$ROOT/var/lib/prism-sweep/prism.db.tokens")
  w_wait 10 "the unit's worker registers" eval '[ "$(w_get /api/v1/workers | w_json "len(d[\"workers\"])")" = 1 ]'
  kill -TERM "$wp"; w_exit "$wp" 10; assert_eq 0 "$W_RC" "worker exit status on SIGTERM"
  kill -TERM "$sp"; w_exit "$sp" 10; assert_eq 0 "$W_RC" "server exit status on SIGTERM"
}

t_k8s_manifests_validate_offline() {
  /usr/bin/python3 -c 'import yaml' 2>/dev/null || fail "PyYAML missing: run tools/deps.sh (python3-yaml)"
  local out
  out=$(/usr/bin/python3 "$PRISM_ROOT/tests/integration/k8s_check.py" "$K8S" 2>&1) || fail "$out"
  echo "$out"
  # and the checker can fail: a misspelt field, a wrong port, a missing grace period
  local d; d=$(tmpdir)
  cp "$K8S"/*.yaml "$d/"
  sed -i 's/terminationGracePeriodSeconds: 600/terminationGracePeriodSecond: 600/' "$d/workers.yaml"
  out=$(/usr/bin/python3 "$PRISM_ROOT/tests/integration/k8s_check.py" "$d" 2>&1) && fail "checker passed a misspelt field"
  assert_contains "$out" "unknown field 'terminationGracePeriodSecond'"
  cp "$K8S"/workers.yaml "$d/"
  sed -i 's#http://prism-sweep:8080#http://prism-sweep:8081#' "$d/workers.yaml"
  out=$(/usr/bin/python3 "$PRISM_ROOT/tests/integration/k8s_check.py" "$d" 2>&1) && fail "checker passed a wrong port"
  assert_contains "$out" "--server http://prism-sweep:8081"
}

t_dockerfile_stages_and_sources() {
  local f=$PRISM_ROOT/deploy/docker/Dockerfile
  local st; st=$(sed -n 's/^FROM .* AS \([a-z0-9-]*\)$/\1/p' "$f" | tr '\n' ' ')
  assert_eq "cuda13-devel cuda13-runtime cuda12-devel cuda12-runtime cuda-devel cuda-runtime build runtime-base orchestrator worker " "$st" "stages"
  # CUDA_MAJOR picks one pair of the per-major stages
  local m
  for m in $(sed -n 's/^FROM .* AS cuda\([0-9]*\)-devel$/\1/p' "$f"); do
    grep -q "^FROM .* AS cuda$m-runtime\$" "$f" || fail "CUDA $m has a devel stage but no runtime stage"
    grep -q "CUDA_MAJOR=$m" "$f" || fail "CUDA $m is not documented as a --build-arg CUDA_MAJOR=$m"
  done
  grep -q '^FROM cuda${CUDA_MAJOR}-devel AS cuda-devel$' "$f" || fail "cuda-devel does not follow CUDA_MAJOR"
  local src
  for src in $(sed -n 's/^COPY \([^-][^ ]*\) .*/\1/p' "$f"); do
    [ "$src" = . ] || [ -e "$PRISM_ROOT/$src" ] || fail "COPY source $src is not in the repository"
  done
  grep -q '^ENTRYPOINT \["/usr/local/bin/prism-worker"\]' "$f" || fail "worker entrypoint is not prism-worker in exec form"
  grep -q '^ENTRYPOINT \["/usr/local/bin/prism-sweep"\]' "$f" || fail "orchestrator entrypoint is not prism-sweep in exec form"
  # the images the manifests name are the ones the Dockerfile documents
  local img
  for img in $(grep -ho 'image: [^ ]*' "$K8S"/*.yaml | cut -d' ' -f2); do
    grep -q -- "-t $img " "$f" || fail "deploy/k8s uses image $img, which the Dockerfile's build lines do not make"
  done
}

harness_main "$@"
