#!/usr/bin/env bash
# layers.sh ROOT — fails (exit 1) on an include that points up the layers, naming file:line and the rule.
# Design: the layers are common → kernels / orchestrator / dataprep → worker (docs/CONTRIBUTING.md): a folder's
# sources include their own folder, common/ and the folders below them. Each `#include "H"` of a source under
# one of those folders is resolved as the compiler would (next to the file first, then the folders of the
# tree); an include that resolves into a folder the source's layer may not use is a back-arrow. System and
# generated headers (found in none of the folders) are not ours to judge. The Makefile runs it on every `make`
# (all); tests/integration/test_layers.sh seeds a back-arrow and sees it fail.
# One more rule of the same kind: a job's row changes only through orchestrator/queue.c's statement table (every
# state transition, halving's included; store.c's migration fills excepted), so an `UPDATE jobs` in a string literal of any
# other source of the tree is refused too, naming file:line. So is an `INSERT [OR ...] INTO jobs` outside queue.c: a
# new job row is queue.c's S_JOB_ADD (queue_job_add: create's rows, sweeps.c, and a racing round's, racing.c).
set -u
root=${1:-.}
cd "$root" || { echo "layers.sh: no folder $root" >&2; exit 2; }
folders="common kernels orchestrator dataprep worker"
allowed() {   # allowed FROM TO: 0 when folder FROM may include from folder TO
  [ "$1" = "$2" ] && return 0
  case "$1:$2" in
    *:common) return 0 ;;
    worker:kernels|worker:orchestrator|worker:dataprep) return 0 ;;
  esac
  return 1
}
bad=0
for from in $folders; do
  [ -d "$from" ] || continue
  files=$(find "$from" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)
  [ -n "$files" ] || continue
  # FILE:LINE:#include "H" for every quoted include of the folder, one grep for all its files
  while IFS= read -r hit; do
    f=${hit%%:*}; rest=${hit#*:}; n=${rest%%:*}; line=${rest#*:}
    [[ $line =~ \"([^\"]+)\" ]] || continue
    h=${BASH_REMATCH[1]}
    to=""
    if [ -f "${f%/*}/$h" ]; then   # next to the file; with a path (../worker/x.h) wherever that leads
      if [[ $h == */* ]]; then p=$(realpath -m --relative-to=. "${f%/*}/$h"); to=${p%%/*}; else to=${f%%/*}; fi
    else
      for d in $from common $folders kernels/cuda; do
        if [ -f "$d/$h" ]; then to=${d%%/*}; break; fi
      done
    fi
    [ -n "$to" ] || continue
    case " $folders " in *" $to "*) ;; *) continue ;; esac
    if ! allowed "$from" "$to"; then
      echo "layers: $f:$n: $from/ includes \"$h\" from $to/: a back-arrow (the layers are common -> kernels / orchestrator / dataprep -> worker; $from/ may include only $from/, common/ and the folders below it). Move the shared part down into common/ (docs/CONTRIBUTING.md)" >&2
      bad=1
    fi
  done < <(grep -nH -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files /dev/null)
done
# job transitions: queue.c's SQL[] only
while IFS= read -r hit; do
  f=${hit%%:*}; rest=${hit#*:}; n=${rest%%:*}
  case "$f" in orchestrator/queue.c|orchestrator/queue_sql.c|orchestrator/store.c) continue ;; esac
  echo "layers: $f:$n: an UPDATE of jobs outside orchestrator/queue.c: every job transition is a statement of queue.c's SQL[] table and the function that runs it (docs/CONTRIBUTING.md, \"a job state\")" >&2
  bad=1
done < <(for d in $folders; do [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \); done | sort |
         xargs -r grep -nHE '"[^"]*UPDATE[[:space:]]+jobs([^_[:alnum:]]|$)' /dev/null)   # in a string literal
# inside orchestrator/: its floors, bottom first (docs/CONTRIBUTING.md, "the orchestrator's floors"). A module
# (X.c with X.h) may include the headers of the floors below its own, never one of its floor or above: so no include
# circle can form inside the folder. {a b c}: modules still in one circle, which include each other (the API's
# request state and its views: not the decision core's). A new module takes the floor above the highest one it
# includes.
ORCH_FLOORS='
auth http rules_cli stats store tfevents walscan queue_sql
commands http_server queue ranking_fit surrogate walck
cmd_admin cmd_enumerate cmd_launch cmd_validate main plan queue_admin search_spec
ranking spec
cmd_power leaderboard_zeroshot ranking_read sweeps
cmd_export racing search
ranking_build
halving leaderboard
cmd_create cmd_leaderboard cmd_status lbcache
{api metrics static views}
serve
'
declare -A floor group
n=0
while IFS= read -r row; do
  [ -n "$row" ] || continue
  inside=0
  for w in $row; do
    m=${w//[\{\}]/}
    [[ $w == '{'* ]] && inside=1
    floor[$m]=$n
    [ $inside = 1 ] && group[$m]=$n
    [[ $w == *'}' ]] && inside=0
  done
  n=$((n + 1))
done <<< "$ORCH_FLOORS"
if [ -d orchestrator ]; then
  for f in $(find orchestrator -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) | sort); do
    b=${f#orchestrator/}; m=${b%.*}
    if [ -z "${floor[$m]+x}" ]; then
      echo "layers: $f: orchestrator/$m is on no floor of tools/layers.sh's ORCH_FLOORS: add it to the floor above the highest one it includes (docs/CONTRIBUTING.md)" >&2
      bad=1; continue
    fi
    while IFS= read -r hit; do
      k=${hit%%:*}; line=${hit#*:}
      [[ $line =~ \"([^\"/]+)\.h\" ]] || continue
      t=${BASH_REMATCH[1]}
      [ "$t" != "$m" ] && [ -f "orchestrator/$t.h" ] && [ -n "${floor[$t]+x}" ] || continue
      [ "${floor[$t]}" -lt "${floor[$m]}" ] && continue
      [ -n "${group[$m]:-}" ] && [ "${group[$m]}" = "${group[$t]:-}" ] && continue
      echo "layers: $f:$k: orchestrator/$m (floor ${floor[$m]}) includes \"$t.h\" (floor ${floor[$t]}): an arrow up or sideways inside orchestrator/ (tools/layers.sh's ORCH_FLOORS, bottom first); move what $m needs down, or feed it from the caller, as ranking_build feeds the ranking racing's and search's inputs" >&2
      bad=1
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
  done
fi
# new job rows: queue.c's S_JOB_ADD only
while IFS= read -r hit; do
  f=${hit%%:*}; rest=${hit#*:}; n=${rest%%:*}
  case "$f" in orchestrator/queue.c|orchestrator/queue_sql.c) continue ;; esac
  echo "layers: $f:$n: an INSERT INTO jobs outside orchestrator/queue.c: a new job row is queue.c's S_JOB_ADD statement; call queue_job_add (docs/CONTRIBUTING.md, \"a job state\")" >&2
  bad=1
done < <(for d in $folders; do [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \); done | sort |
         xargs -r grep -nHE '"[^"]*INSERT[[:space:]]+(OR[[:space:]]+[[:alpha:]]+[[:space:]]+)?INTO[[:space:]]+jobs([^_[:alnum:]]|$)' /dev/null)
[ $bad = 0 ] || exit 1
