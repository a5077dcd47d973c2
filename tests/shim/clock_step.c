/* clock_step.c — an LD_PRELOAD shim that steps the wall clock of one process, for the lease-clock tests: the
 * offset in seconds is read from a file, so a test can move the clock forward or back while the process runs
 * (as NTP, an admin or a resumed VM does). CLOCK_MONOTONIC is left alone.
 *
 * Environment:
 *   PRISM_SHIM_CLOCK_OFFSET_FILE  file holding the offset in seconds (e.g. "3600" or "-3600"; absent or empty
 *                                 = 0), re-read at most every 20 ms of monotonic time
 * Intercepts clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE), gettimeofday and time.
 * Built by the Makefile as $(BUILD)/tests/libclock_step.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double offset_s, read_at = -1;

static double mono(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double offset(void) {
    double m = mono();
    if (read_at >= 0 && m - read_at < 0.02) return offset_s;
    read_at = m;
    const char *f = getenv("PRISM_SHIM_CLOCK_OFFSET_FILE");
    double v = 0;
    if (f) {
        int fd = open(f, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            char b[64];
            ssize_t n = read(fd, b, sizeof b - 1);
            close(fd);
            if (n > 0) { b[n] = 0; v = strtod(b, NULL); }
        }
    }
    offset_s = v;
    return v;
}

static void shift(struct timespec *ts) {
    double o = offset();
    long long whole = (long long)o;
    long ns = ts->tv_nsec + (long)((o - (double)whole) * 1e9);
    ts->tv_sec += whole;
    while (ns < 0) { ns += 1000000000L; ts->tv_sec--; }
    while (ns >= 1000000000L) { ns -= 1000000000L; ts->tv_sec++; }
    ts->tv_nsec = ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int rc = (int)syscall(SYS_clock_gettime, id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    (void)tz;
    return rc;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
