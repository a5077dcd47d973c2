/* util.c — see util.h. The durable write is the usual four steps: write a temporary file in the same
 * directory, fsync it, rename it over the target (atomic within one filesystem), fsync the directory so the
 * rename itself survives a power cut. The temporary name carries the pid, so two processes writing the same
 * path never share a temporary file; the last rename wins whole. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double util_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int util_malloc_eager(void) {
#ifdef M_MXFAST
    return mallopt(M_MXFAST, 0) == 1 ? 0 : -1;
#else
    return -1;
#endif
}

uint64_t util_mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t util_splitmix64(uint64_t *state) {
    uint64_t z = util_mix64(*state);
    *state += 0x9E3779B97F4A7C15ULL;
    return z;
}

int util_mkdir_p(const char *path, mode_t mode) {
    char buf[4096];
    if (!path || !*path) { errno = EINVAL; return -1; }
    if (strlen(path) >= sizeof buf) { errno = ENAMETOOLONG; return -1; }
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, mode) && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, mode) && errno != EEXIST ? -1 : 0;
}

/* fsync the directory holding path; filesystems that cannot (EINVAL) are not an error. */
static int sync_dir(const char *path) {
    char d[4096];
    snprintf(d, sizeof d, "%s", path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    if (rc && (errno == EINVAL || errno == EROFS)) rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

#define FAILED(file, what) do { \
        snprintf(err, errlen, "%s: %s failed: %s", (file), (what), strerror(errno)); goto out; } while (0)

int util_write_atomic(const char *path, const util_part *parts, int nparts, mode_t mode, char *err, size_t errlen) {
    char tmp[4200];
    int fd = -1, rc = -1, made = 0;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        FAILED(path, "create");
    }
    unlink(tmp);   /* a stale one from a crashed process with this pid: O_EXCL then makes a fresh file with mode */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0) FAILED(tmp, "create");
    made = 1;
    for (int k = 0; k < nparts; k++) {
        const char *p = parts[k].data;
        for (size_t done = 0; done < parts[k].len;) {
            size_t want = parts[k].len - done;
            ssize_t w = write(fd, p + done, want > (1u << 30) ? (1u << 30) : want);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { if (w == 0) errno = EIO; FAILED(tmp, "write"); }
            done += (size_t)w;
        }
    }
    if (fsync(fd)) FAILED(tmp, "fsync");
    int cr = close(fd);
    fd = -1;
    if (cr) FAILED(tmp, "close");
    if (rename(tmp, path)) FAILED(path, "rename");
    made = 0;
    if (sync_dir(path)) FAILED(path, "directory fsync");
    rc = 0;
out:
    if (fd >= 0) close(fd);
    if (made) unlink(tmp);
    return rc;
}

int util_commit_file(FILE *f, const char *tmp, const char *path, char *err, size_t errlen) {
    int rc = -1, made = 1;
    if (fflush(f) || fsync(fileno(f))) {
        int e = errno;
        fclose(f);
        errno = e;
        FAILED(tmp, "write");
    }
    if (fclose(f)) FAILED(tmp, "close");
    if (rename(tmp, path)) FAILED(path, "rename");
    made = 0;
    if (sync_dir(path)) FAILED(path, "directory fsync");
    rc = 0;
out:
    if (made) unlink(tmp);
    return rc;
}

int util_proc_stat(pid_t pid, int field, int n, unsigned long long *out) {
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t len = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[len] = 0;
    char *p = strrchr(line, ')');   /* the command name (field 2) may hold spaces and ")" */
    if (!p || field < 4) return -1;
    p += 2;                          /* field 3, the state */
    for (int k = 3; k < field; k++) {
        p = strchr(p, ' ');
        if (!p) return -1;
        p++;
    }
    for (int i = 0; i < n; i++) {
        char *end;
        out[i] = strtoull(p, &end, 10);
        if (end == p) return -1;
        p = end;
    }
    return 0;
}

void util_machine(char *boot, size_t blen, char *host, size_t hlen) {
    snprintf(boot, blen, "unknown");
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        char b[64];
        if (fgets(b, sizeof b, f)) {
            b[strcspn(b, "\n")] = 0;
            if (b[0]) snprintf(boot, blen, "%s", b);
        }
        fclose(f);
    }
    if (gethostname(host, hlen) != 0 || !host[0]) snprintf(host, hlen, "unknown");
    host[hlen - 1] = 0;
    for (char *c = host; *c; c++) if (*c == ' ' || *c == '\n') *c = '_';
}
