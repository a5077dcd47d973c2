/* locks.c — an LD_PRELOAD shim that gives one process the file locks of a filesystem without working ones, for the
 * one-server-per-database tests (test_durability.sh): flock() and the OFD record lock prism-sweep serve takes on its
 * database (F_OFD_SETLK at STORE_SERVE_LOCK_BYTE) either succeed without locking anything (a no-op lock: NFS mounted
 * with nolock, some FUSE filesystems) or fail with ENOLCK (an NFS mount whose lock daemon is gone). SQLite's own
 * locks (F_SETLK) are left alone.
 *
 * Environment:
 *   PRISM_SHIM_LOCKS  noop | enolck (anything else: the real calls)
 * Built by the Makefile as $(BUILD)/tests/liblocks.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#define SERVE_LOCK_BYTE 0x50000000LL   /* orchestrator/store.h: STORE_SERVE_LOCK_BYTE */

/* 0: real, 1: no-op, 2: ENOLCK */
static int mode(void) {
    const char *m = getenv("PRISM_SHIM_LOCKS");
    return !m ? 0 : !strcmp(m, "noop") ? 1 : !strcmp(m, "enolck") ? 2 : 0;
}

int flock(int fd, int op) {
    int m = mode();
    if (m == 1) return 0;
    if (m == 2) { errno = ENOLCK; return -1; }
    int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    return real(fd, op);
}

static int shim_fcntl(const char *name, int fd, int cmd, void *arg) {
    int m = mode();
    if (m && (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW) && arg && ((struct flock *)arg)->l_start == SERVE_LOCK_BYTE) {
        if (m == 1) return 0;
        errno = ENOLCK;
        return -1;
    }
    int (*real)(int, int, ...) = (int (*)(int, int, ...))dlsym(RTLD_NEXT, name);
    return real(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return shim_fcntl("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return shim_fcntl("fcntl64", fd, cmd, arg);
}
