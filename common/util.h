/* util.h — the small pieces every program here needs once: a monotonic clock, a 64-bit mixer, a
 * recursive mkdir and durable whole-file writes.
 *
 * Contract:
 * - util_now_s() returns CLOCK_MONOTONIC in seconds: for intervals and timers, never for timestamps.
 * - util_mix64(z) is SplitMix64's output function applied to z + 0x9E3779B97F4A7C15 (a bijection of the
 *   64-bit integers); util_splitmix64(&s) advances s by that constant and returns util_mix64 of the old s.
 *   Both are fixed integer arithmetic: identical results on every machine (seeds, shuffles and inits depend
 *   on it, so neither may ever change).
 * - util_mkdir_p(path, mode) creates path and its missing parents (existing ones are fine). Returns 0, or
 *   -1 with errno set; directories made before a failure are left.
 * - util_write_atomic(path, parts, nparts, mode, err, errlen) writes the concatenation of parts to
 *   "<path>.tmp.<pid>" (created afresh with O_EXCL and mode, before umask), fsyncs it, renames it over path and fsyncs the directory, so path holds either its
 *   old contents or all of the new ones, after a crash too. Returns 0, or -1 with err set to
 *   "<file>: <what> failed: <reason>" (what: create, write, fsync, close, rename) and the temporary file
 *   removed; path is untouched then.
 * - util_commit_file(f, tmp, path, err, errlen) finishes a temporary file written through stdio the same
 *   way: fflush, fsync, fclose (always: f is closed on every path), rename tmp over path, fsync the
 *   directory. Returns 0, or -1 with err set as above and tmp removed.
 * - util_proc_stat(pid, field, n, out) reads the numbers of fields field..field+n-1 of /proc/PID/stat (numbered
 *   from 1 as proc(5) does; field >= 4, the ones after the command name and the state: 14/15 utime/stime, 22
 *   starttime) into out. Returns 0, or -1 when PID does not run or its line cannot be read.
 * - util_machine(boot, blen, host, hlen): this boot of this machine, for records on a filesystem other machines may
 *   share: the kernel's random boot id ("unknown" when /proc cannot say) and the host name (spaces and newlines
 *   made '_'; "unknown" when there is none). A pid in such a record means something only on that boot of that host.
 * - util_malloc_eager(): turns glibc's fastbins off for the process (mallopt M_MXFAST 0) so a freed small chunk is
 *   merged when freed, not on a later large malloc of whichever thread asks next. A server that builds a
 *   100,000-job answer on one thread and frees it on another otherwise leaves ~10^6 chunks in the first thread's
 *   fastbins, and that thread's next large malloc (in a heartbeat, on the event loop) walks them all in
 *   malloc_consolidate: 55-147 ms on the loop (docs/PERF.md, the page's polling). Small frees still go to each
 *   thread's tcache first. Returns 0, or -1 when the allocator refused (not glibc: nothing to do). Call it once,
 *   early, before other threads start.
 * Thread-safe (util_malloc_eager aside); no allocation.
 */
#ifndef PRISM_UTIL_H
#define PRISM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct util_part { const void *data; size_t len; } util_part;

double util_now_s(void);
int util_malloc_eager(void);
uint64_t util_mix64(uint64_t z);
uint64_t util_splitmix64(uint64_t *state);
int util_mkdir_p(const char *path, mode_t mode);
int util_write_atomic(const char *path, const util_part *parts, int nparts, mode_t mode, char *err, size_t errlen);
int util_commit_file(FILE *f, const char *tmp, const char *path, char *err, size_t errlen);
int util_proc_stat(pid_t pid, int field, int n, unsigned long long *out);
void util_machine(char *boot, size_t blen, char *host, size_t hlen);

#endif
