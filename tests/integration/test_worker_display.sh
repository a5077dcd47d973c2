#!/usr/bin/env bash
# test_worker_display.sh — the worker's live display on a real terminal: tmux (installed by tools/deps.sh) runs
# `prism-worker --progress tty` against a real server in panes of 80 and 160 columns; the whole pane history,
# wrapped lines joined (capture-pane -J), must have no line wider than the pane and exactly one progress line
# per device (redrawn in place: nothing scrolled), with the bar, the ETA, and at 160 columns elapsed time, the
# sweep's progress and the val loss at its step.
# timeout: 120
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/worker_lib.sh"

TM=
tm_cleanup() { [ -n "$TM" ] && tmux -S "$TM" kill-server 2>/dev/null; w_cleanup; }
trap tm_cleanup EXIT

# display_at WIDTH: runs a worker in a WIDTH-column pane until its line shows a val loss; leaves the pane's
# history (joined) in $D/pane-WIDTH.txt.
display_at() {
  local width=$1
  command -v tmux >/dev/null || fail "tmux not found: run tools/deps.sh as root (it installs tmux)"
  TM=$D/tmux.sock
  w_worker_cmd=("$(bin prism-worker)" --server "$URL" --token-file "$D/worker-token" --devices cpu --name "tty$width"
                --work-dir "$D/work-$width" --data-root "$D" --poll 0.2 --heartbeat 0.3 --flush 0.2 --progress tty)
  printf '%q ' env -u COLUMNS OMP_NUM_THREADS=1 "${w_worker_cmd[@]}" > "$D/cmd-$width"
  tmux -S "$TM" -f /dev/null new-session -d -s "w$width" -x "$width" -y 20 "bash $D/cmd-$width; sleep 60"
  local end=$(( $(date +%s) + 60 )) pane=
  while [ "$(date +%s)" -lt "$end" ]; do
    pane=$(tmux -S "$TM" capture-pane -p -J -S - -t "w$width")
    if [ "$width" -ge 160 ]; then echo "$pane" | grep -q 'val [0-9.]*@[0-9]* .*sweep [0-9]*/6' && break
    else echo "$pane" | grep -q 'val [0-9.]*@[0-9]*' && break; fi
    sleep 0.3
  done
  # let it redraw (and print events) for a while more
  sleep 2
  tmux -S "$TM" capture-pane -p -J -S - -t "w$width" > "$D/pane-$width.txt"
  tmux -S "$TM" kill-session -t "w$width"
}

check_pane() {
  local width=$1; local f=$D/pane-$width.txt
  local long; long=$(awk -v w="$width" 'length($0) > w { printf "%d: [%s]\n", length($0), $0 }' "$f")
  [ -z "$long" ] || fail "lines wider than $width columns:"$'\n'"$long"$'\n'"---- pane:"$'\n'"$(cat "$f")"
  local rows; rows=$(grep -c '^\[cpu \]' "$f")
  assert_eq 1 "$rows" "progress lines of the one device in the whole history (pane: $(cat "$f"))"
  local line; line=$(grep '^\[cpu \]' "$f")
  assert_contains "$line" "] job "
  echo "$line" | grep -q '\[#*-*\] *[0-9]*%' || fail "no bar in: $line"
  echo "$line" | grep -q 'val [0-9.]*@[0-9]*' || fail "no val loss at a step in: $line"
  echo "figure: $width columns: $line"
}

t_display_fits_80_and_160_columns() {
  # 9,000 steps (~6 s a job here; 4 digits, so the 80-column line keeps its val loss): the capture comes 2 s
  # after the first val loss, and a 3,000-step job could finish inside those 2 s on an idle machine, leaving the
  # pane on the idle line (CI 2026-12-03, twice)
  w_setup
  w_spec "$D/spec.json" tty '["4,4,4,4", "2,2,4,4", "1,1,4,4"]' '[1, 2]' 9000
  w_server
  w_create "$D/spec.json" > /dev/null
  display_at 80
  check_pane 80
  local l80; l80=$(grep '^\[cpu \]' "$D/pane-80.txt")
  assert_contains "$l80" "ETA "
  display_at 160
  check_pane 160
  local l160; l160=$(grep '^\[cpu \]' "$D/pane-160.txt")
  assert_contains "$l160" "elapsed "
  assert_contains "$l160" " tok/s"
  echo "$l160" | grep -q 'sweep [0-9]*/6' || fail "no sweep progress at 160 columns: $l160"
  # the events above the block are cut to the width too (checked by check_pane): there were some
  grep -q 'event=leased' "$D/pane-160.txt" || fail "no event line in the pane: $(cat "$D/pane-160.txt")"
}

harness_main "$@"
