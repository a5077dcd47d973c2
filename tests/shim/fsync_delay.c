/* fsync_delay.c — an LD_PRELOAD shim for the durability tests: fsync and fdatasync sleep first, then run,
 * and each call is logged, so a test can check that the server's answers leave only after the sync that
 * covers them.
 *
 * Environment (all optional):
 *   PRISM_SHIM_SYNC_DELAY_MS  milliseconds each call sleeps before syncing (default 300)
 *   PRISM_SHIM_DELAY_IF_EXISTS FILE: sleep only while FILE exists (a server starts at full speed)
 *   PRISM_SHIM_SYNC_LOG       file that gets one line per call: "START END PATH RESULT" (CLOCK_REALTIME
 *                             seconds, the file's path from /proc/self/fd, 0 or the errno)
 *   PRISM_SHIM_FAIL_IF_EXISTS FILE: while FILE exists, calls on a file whose name ends in "-wal" fail with EIO
 * Built by the Makefile as $(BUILD)/tests/libfsync_delay.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int shim_sync(int fd, const char *name) {
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
    char link[64], path[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    path[n > 0 ? n : 0] = 0;
    size_t len = strlen(path);
    int is_wal = len > 4 && strcmp(path + len - 4, "-wal") == 0;
    double t0 = now_s();
    const char *d = getenv("PRISM_SHIM_SYNC_DELAY_MS");
    long ms = d ? atol(d) : 300;
    const char *gate = getenv("PRISM_SHIM_DELAY_IF_EXISTS");
    if (gate && access(gate, F_OK) != 0) ms = 0;
    if (ms > 0) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    int rc, err = 0;
    const char *f = getenv("PRISM_SHIM_FAIL_IF_EXISTS");
    if (f && is_wal && access(f, F_OK) == 0) { rc = -1; err = EIO; }
    else { rc = real ? real(fd) : 0; if (rc != 0) err = errno; }
    const char *log = getenv("PRISM_SHIM_SYNC_LOG");
    if (log) {
        char line[1200];
        int k = snprintf(line, sizeof line, "%.6f %.6f %s %d\n", t0, now_s(), path[0] ? path : "?", err);
        int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (lfd >= 0) { if (write(lfd, line, (size_t)k) < 0) {} close(lfd); }
    }
    if (rc != 0) errno = err;
    return rc;
}

int fsync(int fd) { return shim_sync(fd, "fsync"); }
int fdatasync(int fd) { return shim_sync(fd, "fdatasync"); }
