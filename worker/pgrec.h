/* pgrec.h — records of the trainer process groups a worker started, so that a worker killed with SIGKILL (no
 * chance to signal them) has its stale groups killed at its next start (docs/WORKER.md).
 *
 * A record is one small file DIR/W<worker pid>-<device>.pgid (the device's characters outside [A-Za-z0-9._-] as
 * '_'), one line "pgid P leader_start S worker W worker_start T": the group's id (its leader's pid), the leader's
 * and the worker's start times (field 22 of /proc/PID/stat, clock ticks since boot), so a pid the kernel gave to
 * another process since is not taken for ours. extrun.c writes it right after the fork (before the trainer has
 * run a step) and removes it once the group is killed and its leader reaped.
 *
 * Contract.
 * - pgrec_write(dir, device, pgid, path, pathlen): creates dir (0755) when missing and writes the record (temp
 *   file + rename); path gets its name. Returns 0, or -1 with errno (the caller logs and runs the trainer anyway).
 * - pgrec_remove(path): unlinks it; path "" is a no-op.
 * - pgrec_reap_stale(dir, grace_s): for each record in dir whose worker is gone (its pid no longer runs, or runs
 *   with another start time): when the group still exists, is not the caller's own group, and its leader is
 *   either gone or the same process (same start time), SIGTERM to the group, up to grace_s for it to end, then
 *   SIGKILL; one line on stderr per record acted on. The record is removed. A record of a live worker (another
 *   worker sharing the folder) is left alone. Returns the number of groups signalled. dir missing: 0.
 * Not thread-safe against itself (called once at start, before any device thread).
 */
#ifndef PRISM_PGREC_H
#define PRISM_PGREC_H
#include <stddef.h>
#include <sys/types.h>

int pgrec_write(const char *dir, const char *device, pid_t pgid, char *path, size_t pathlen);
void pgrec_remove(const char *path);
int pgrec_reap_stale(const char *dir, double grace_s);
#endif
