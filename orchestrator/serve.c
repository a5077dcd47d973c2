/* serve.c — `prism-sweep serve`: the orchestrator daemon's program edge.
 *
 * Design: open the store, load or create the tokens, then run one libuv loop that holds the HTTP server
 * (http.c), a repeating timer that expires stale leases (so expiry never waits for a request), and the
 * SIGINT/SIGTERM handles. A signal starts a graceful stop: the listener closes, answers already read are
 * committed, synced and written, connections close, the timer and signal handles close, the loop runs dry
 * and the database is closed cleanly (WAL checkpointed by SQLite on close).
 *
 * Durability: the server's flush is the API's COMMIT followed by walck_after_commit (a due WAL tail copy);
 * its durable step is walck_sync on a pool thread (walck.c says why that is enough). A failed fdatasync or
 * fsync ends the process with status 1 before anything more is answered: after such a failure Linux may
 * have dropped the unwritten pages while the page cache still shows them, so what SQLite reads back can
 * differ from the disk, and going on could acknowledge work built on data the disk does not hold. Restarted,
 * SQLite recovers from what is on the disk and the workers resend what was not acknowledged.
 *
 * Start-up limits: every connection is a file descriptor, so the soft open-file limit is raised (up to the
 * hard limit) to --max-conns plus SERVE_SPARE_FDS for the database, the listener and connections being
 * refused. When the hard limit is too low, an explicit --max-conns is an error naming both fixes; the
 * default cap is lowered to fit, with a warning.
 */
#define _GNU_SOURCE   /* F_OFD_SETLK */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <uv.h>

#include "api.h"
#include "cli.h"
#include "commands.h"
#include "http_server.h"
#include "store.h"
#include "walck.h"
#include "walscan.h"
#include "halving.h"
#include "racing.h"
#include "search.h"
#include "logesc.h"
#include "util.h"

typedef struct serve_state {
    uv_loop_t loop;
    http_server srv;
    uv_timer_t expiry;
    uv_signal_t sigint, sigterm;
    api a;
    walck wal;
    int stopping;
} serve_state;

static void expiry_tick(uv_timer_t *t) {
    serve_state *s = t->data;
    int batch_open = s->a.txn_open;   /* answered requests' work: only the server's check may commit it */
    api_expire(&s->a);
    /* Commit now (through the server: after the sync in flight, if any, and synced itself): left to the check
     * phase, BEGIN IMMEDIATE would hold the write lock through the poll that follows (up to the next tick),
     * i.e. almost always, and `prism-sweep create` would get "database is locked". */
    if (!batch_open) http_server_commit(&s->srv);
}

static serve_state *serve_of(void *api_ud) { return (serve_state *)((char *)api_ud - offsetof(serve_state, a)); }

static void serve_sync_failed(serve_state *s, const char *why) {
    char e[700];
    fprintf(stderr, "prism-sweep serve: %s: the answers of the last batch were not sent and the server stops (after a "
                    "failed sync the disk may not hold what the page cache shows). Check the disk and its free space, "
                    "then start the server again: SQLite recovers from the disk and workers resend what was not "
                    "acknowledged\n", log_escape(e, sizeof e, why));
    fflush(stderr);
    _exit(1);   /* no exit handlers, no SQLite close (its checkpoint would write from the page cache) */
}

/* http_server_opts.flush: the COMMIT (write()s), then the WAL tail copy if one is due. 1 when the COMMIT
 * wrote frames (there is something to sync), 0 when it wrote none (an empty transaction: the lease-expiry
 * tick's, or requests that changed nothing) or there was none. */
static int serve_flush(void *ud) {
    serve_state *s = serve_of(ud);
    int open = s->a.txn_open;
    if (open) walck_before_commit(&s->wal);   /* the previous sync is done: a restart may happen now */
    unsigned long long before = s->wal.frame_commits;
    if (api_flush(&s->a) < 0) return -1;
    if (!open || (s->wal.durable && s->wal.frame_commits == before)) return 0;
    if (walck_after_commit(&s->wal) < 0) serve_sync_failed(s, s->wal.sync_err);
    return 1;
}

/* http_server_opts.durable (pool thread). */
static int serve_durable(void *ud) { return walck_sync(&serve_of(ud)->wal); }

static void serve_durable_failed(void *ud) {
    serve_state *s = serve_of(ud);
    serve_sync_failed(s, s->wal.sync_err);
}

/* api.metrics_extra: the server's connection figures and the longest COMMIT on the loop. */
static void serve_metrics(void *ud, buf *out) {
    serve_state *s = ud;
    http_server *h = &s->srv;
    char t[3072];
    int n = snprintf(t, sizeof t,
        "# HELP prism_connections Open connections, and those that have shown no token.\n# TYPE prism_connections gauge\n"
        "prism_connections %d\nprism_connections_anonymous %d\n"
        "# HELP prism_connections_total Connections accepted, refused (503), replaced to make room, and cut after "
        "--anon-timeout.\n# TYPE prism_connections_total counter\n"
        "prism_connections_total{outcome=\"accepted\"} %lu\nprism_connections_total{outcome=\"refused\"} %lu\n"
        "prism_connections_total{outcome=\"replaced\"} %lu\nprism_connections_total{outcome=\"anon_timeout\"} %lu\n"
        "# HELP prism_commit_seconds_max Longest group COMMIT (the event loop waits for it).\n"
        "# TYPE prism_commit_seconds_max gauge\nprism_commit_seconds_max %.6f\n"
        "# HELP prism_commits_over_10ms_total Group COMMITs that took more than 10 ms.\n"
        "# TYPE prism_commits_over_10ms_total counter\nprism_commits_over_10ms_total %lu\n"
        "# HELP prism_wal_checkpoints_total WAL checkpoints run off the event loop (PASSIVE), and failed ones.\n"
        "# TYPE prism_wal_checkpoints_total counter\nprism_wal_checkpoints_total %llu\nprism_wal_checkpoint_failures_total %llu\n"
        "# HELP prism_wal_checkpoint_seconds_max Longest WAL checkpoint (on its own thread).\n"
        "# TYPE prism_wal_checkpoint_seconds_max gauge\nprism_wal_checkpoint_seconds_max %.6f\n"
        "# HELP prism_wal_pages_max Largest WAL after a COMMIT, in pages.\n# TYPE prism_wal_pages_max gauge\n"
        "prism_wal_pages_max %d\n"
        "# HELP prism_wal_loop_checkpoints_total Checkpoints of the last frames run on the event loop (a stall).\n"
        "# TYPE prism_wal_loop_checkpoints_total counter\nprism_wal_loop_checkpoints_total %llu\n"
        "# HELP prism_wal_loop_checkpoint_seconds_max The longest of them.\n"
        "# TYPE prism_wal_loop_checkpoint_seconds_max gauge\nprism_wal_loop_checkpoint_seconds_max %.6f\n"
        "prism_wal_loop_checkpoint_seconds_sum %.6f\n",
        h->nconns, h->nanon, h->accepted, h->rejected, h->evicted, h->anon_timeouts, h->flush_max_s, h->flush_over_10ms,
        s->wal.checkpoints, s->wal.failures, s->wal.max_s, s->wal.wal_pages_max, s->wal.loop_checkpoints, s->wal.loop_max_s, s->wal.loop_sum_s);
    if (n > 0) buf_append(out, t, (size_t)(n < (int)sizeof t ? n : (int)sizeof t - 1), BUF_MAX);
    n = snprintf(t, sizeof t, "# HELP prism_commit_seconds Time the event loop spent in group COMMITs (and the WAL "
                 "checkpoints run inside them).\n# TYPE prism_commit_seconds summary\nprism_commit_seconds_sum %.6f\n"
                 "prism_commit_seconds_count %lu\n"
                 "# HELP prism_sync_seconds Syncs making each group COMMIT durable (fdatasync of the WAL, fsync of the "
                 "database after a checkpoint on the loop), run off the event loop; answers wait for them.\n"
                 "# TYPE prism_sync_seconds summary\nprism_sync_seconds_sum %.6f\nprism_sync_seconds_count %lu\n"
                 "# HELP prism_sync_seconds_max The longest of them.\n# TYPE prism_sync_seconds_max gauge\n"
                 "prism_sync_seconds_max %.6f\n"
                 "# HELP prism_sync_off_loop Whether COMMITs are synced off the event loop (0: synchronous=FULL inside "
                 "each COMMIT).\n# TYPE prism_sync_off_loop gauge\nprism_sync_off_loop %d\n",
                 h->flush_sum_s, h->flushes, h->sync_sum_s, h->syncs, h->sync_max_s, s->wal.durable);
    if (n > 0) buf_append(out, t, (size_t)(n < (int)sizeof t ? n : (int)sizeof t - 1), BUF_MAX);
    static const double bounds[HTTP_TURN_BUCKETS] = HTTP_TURN_BOUNDS;
    buf_printf(out, BUF_MAX, "# HELP prism_loop_turn_seconds The event loop's turns by the time it was busy in each (every "
               "client waits for the turn in progress).\n# TYPE prism_loop_turn_seconds histogram\n");
    unsigned long long cum = 0;
    for (int i = 0; i <= HTTP_TURN_BUCKETS; i++) {
        cum += h->turn_bucket[i];
        if (i < HTTP_TURN_BUCKETS) buf_printf(out, BUF_MAX, "prism_loop_turn_seconds_bucket{le=\"%g\"} %llu\n", bounds[i], cum);
        else buf_printf(out, BUF_MAX, "prism_loop_turn_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    buf_printf(out, BUF_MAX, "prism_loop_turn_seconds_sum %.6f\nprism_loop_turn_seconds_count %llu\n"
               "# HELP prism_loop_turn_seconds_max The longest turn.\n# TYPE prism_loop_turn_seconds_max gauge\n"
               "prism_loop_turn_seconds_max %.6f\n"
               "# HELP prism_loop_turn_cpu_seconds_max The most CPU time the loop's thread used in one turn (a turn longer "
               "than this waited for the machine).\n# TYPE prism_loop_turn_cpu_seconds_max gauge\n"
               "prism_loop_turn_cpu_seconds_max %.6f\n", h->turn_busy_sum_s, cum, h->turn_busy_max_s, h->turn_cpu_max_s);
}

static void on_stopped(void *ud) {   /* ud is the api handed to the server: find its serve_state */
    serve_state *s = (serve_state *)((char *)ud - offsetof(serve_state, a));
    uv_close((uv_handle_t *)&s->expiry, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
}

static void on_signal(uv_signal_t *h, int signum) {
    serve_state *s = h->data;
    if (s->stopping) return;
    s->stopping = 1;
    s->a.stopping = 1;
    fprintf(stderr, "prism-sweep serve: %s: finishing in-flight requests and closing the database\n",
            signum == SIGINT ? "SIGINT" : "SIGTERM");
    uv_timer_stop(&s->expiry);
    http_server_stop(&s->srv);
}

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (host 127.0.0.1). Returns 0 or -1. */
static int parse_listen(const char *spec, char *host, size_t hn, int *port) {
    const char *colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') return -1;
        size_t n = (size_t)(close - spec - 1);
        if (n == 0 || n >= hn) return -1;
        memcpy(host, spec + 1, n);
        host[n] = 0;
        colon = close + 1;
    } else {
        colon = strrchr(spec, ':');
        if (!colon) return -1;
        size_t n = (size_t)(colon - spec);
        if (n >= hn) return -1;
        if (n == 0) snprintf(host, hn, "127.0.0.1");
        else { memcpy(host, spec, n); host[n] = 0; }
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535) return -1;
    *port = (int)p;
    return 0;
}

#define SERVE_SPARE_FDS 256
#define SERVE_DEFAULT_MAX_CONNS 16384   /* one connection per GPU of a 2,000-box × 8-GPU fleet, and room */

/* Raises RLIMIT_NOFILE for *max_conns connections (explicit: --max-conns was given). Returns 0 (maybe
 * lowering *max_conns when not explicit, with a warning) or -1 after printing why (exit 2). */
static int serve_raise_nofile(int *max_conns, int explicit) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;   /* nothing to go on: accept() will say EMFILE */
    rlim_t need = (rlim_t)*max_conns + SERVE_SPARE_FDS;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need) return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        long fit = (long)rl.rlim_max - SERVE_SPARE_FDS;
        if (explicit || fit < 16) {
            fprintf(stderr, "prism-sweep serve: --max-conns %d needs %llu open files, but the hard limit is %llu: lower "
                            "--max-conns to %ld or less, or raise the hard limit (as root: ulimit -Hn %llu; in a systemd "
                            "unit: LimitNOFILE=%llu)\n", *max_conns, (unsigned long long)need,
                    (unsigned long long)rl.rlim_max, fit > 0 ? fit : 0, (unsigned long long)need, (unsigned long long)need);
            return -1;
        }
        fprintf(stderr, "prism-sweep serve: the open-file hard limit is %llu: --max-conns lowered from %d to %ld "
                        "(raise the hard limit, e.g. LimitNOFILE=%llu in a systemd unit, for the default)\n",
                (unsigned long long)rl.rlim_max, *max_conns, fit, (unsigned long long)need);
        *max_conns = (int)fit;
        need = (rlim_t)fit + SERVE_SPARE_FDS;
    }
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, "prism-sweep serve: cannot raise the open-file limit from %llu to %llu: %s\n",
                (unsigned long long)old, (unsigned long long)need, strerror(errno));
        return -1;
    }
    return 0;
}

/* http_server_opts.trusted: the Authorization value is one of this server's tokens. */
static int serve_trusted(void *ud, const char *authorization) {
    api *a = ud;
    return auth_check(&a->tokens, authorization) != AUTH_NONE;
}

static int is_loopback(const char *host) {
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
}

/* One server per database file, whatever path names it: an open-file-description lock (F_OFD_SETLK) on one
 * byte of the database file far past SQLite's own lock bytes (they start at 1 GiB, PENDING_BYTE, and span
 * 512 bytes), so it never meets SQLite's locks. It follows the inode, not the path (a hard link or a symlink
 * is the same file), is released by the kernel when the process dies (kill -9 too), is not dropped when
 * SQLite closes another descriptor of the file (as a POSIX record lock would be), and reaches the file server
 * on NFS. Creates the file when absent (SQLite takes an empty file as a new database). Returns the descriptor
 * to keep open while serving, or -1 after printing why (exit 2). */
static int serve_lock_db(const char *db) {
    int fd = open(db, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return cli_error("serve", "cannot open %s: %s", db, strerror(errno)), -1;
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = STORE_SERVE_LOCK_BYTE, .l_len = 1 };
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0) return fd;
    int e = errno;
    close(fd);
    if (e == EAGAIN || e == EACCES)
        cli_error("serve", "%s is already served by another prism-sweep serve under another name (a hard link or a "
                  "symlink to the same file): one server per database; stop it or serve that path", db);
    else
        cli_error("serve", "cannot lock %s: %s (a filesystem without file locks cannot hold a served database)", db,
                  strerror(e));
    return -1;
}

/* Before SQLite recovers the WAL: committed transactions after a frame that breaks its checksum chain would be
 * dropped without a word (walscan.h). Refuses to start (exit 1) saying what would be lost, unless accepted:
 * then the WAL is first copied to DB-wal.corrupt-TIME, so the lost frames stay on the disk. Returns 0 or -1. */
static int serve_check_wal(const char *db, int accept) {
    walscan_result w;
    char err[512];
    if (walscan_check(db, &w, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep serve: cannot read the WAL: %s\n", err);
        return -1;
    }
    if (w.lost_commits == 0) return 0;
    char msg[1024];
    if (w.header_damaged)
        snprintf(msg, sizeof msg, "%s-wal is damaged: its header's checksum does not match, so SQLite's recovery would "
                 "ignore the whole WAL and drop %lld committed transaction(s) in its %lld frame(s)", db, w.lost_commits,
                 w.lost_frames);
    else
        snprintf(msg, sizeof msg, "%s-wal is damaged: frame %lld of %lld breaks its checksum chain, and %lld committed "
                 "transaction(s) in the %lld frame(s) from there on would be dropped by SQLite's recovery (the %lld "
                 "transaction(s) before it are kept)", db, w.first_bad, w.frames, w.lost_commits, w.lost_frames,
                 w.valid_commits);
    if (!accept) {
        fprintf(stderr, "prism-sweep serve: %s. Nothing was changed. Restore the database from a backup, or start "
                        "with --accept-wal-loss to serve what is left (a copy of the WAL is kept first)\n", msg);
        return -1;
    }
    char src[4200], dst[4300], real[4096];
    const char *at = realpath(db, real) ? real : db;   /* the WAL SQLite uses: beside the resolved file */
    snprintf(src, sizeof src, "%s-wal", at);
    snprintf(dst, sizeof dst, "%s-wal.corrupt-%lld", at, (long long)time(NULL));
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wbx") : NULL;
    int ok = in && out;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in) && fflush(out) == 0 && fsync(fileno(out)) == 0;
    if (out && fclose(out) != 0) ok = 0;
    if (in) fclose(in);
    if (!ok) {
        fprintf(stderr, "prism-sweep serve: %s; the copy %s could not be written (%s): not started\n", msg, dst, strerror(errno));
        return -1;
    }
    fprintf(stderr, "prism-sweep serve: event=wal-loss %s; --accept-wal-loss: they are lost, the WAL as it was is "
                    "kept in %s\n", msg, dst);
    return 0;
}

/* ---- cmd_serve's sections ----------------------------------------------------------------------- */

/* Whether host:port can be bound now, before anything is created: a port in use ends the start with nothing written
 * (no database, no token files). A probe (bind, then close): the real listen comes later and reports its own error.
 * Returns 0, or -1 with the message printed. Port 0 (any) is not probed. */
static int serve_probe_port(const char *host, int port) {
    if (port == 0) return 0;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) != 0 || !ai) return 0;   /* a name, not an address: the listen resolves it */
    int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1, rc = 0, e = 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);   /* as libuv's listen: only a live listener blocks */
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) { e = errno; rc = e == EADDRINUSE ? -1 : 0; }
        close(fd);
    }
    freeaddrinfo(ai);
    if (rc < 0)
        fprintf(stderr, "prism-sweep serve: --listen %s%s%s:%d: %s (is another server running? pick another --listen); "
                "nothing was created\n", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port, strerror(e));
    return rc;
}

/* DB.lock's text, "PID HOST BOOT" of the server that last took it (an older version wrote "PID" alone: host and boot
 * are then ""). */
static void lock_text_read(int fd, long *pid, char *host, size_t hl, char *boot, size_t bl) {
    char t[512] = "";
    ssize_t n = pread(fd, t, sizeof t - 1, 0);
    t[n > 0 ? n : 0] = 0;
    *pid = 0;
    host[0] = boot[0] = 0;
    char h[256] = "", b[128] = "";
    if (sscanf(t, "%ld %255s %127s", pid, h, b) >= 1) {
        snprintf(host, hl, "%s", h);
        snprintf(boot, bl, "%s", b);
    }
}

/* Whether pid (a process of this host) has the file db open: one of its /proc/PID/fd is db's inode. */
static int pid_has_open(long pid, const char *db) {
    struct stat want, sb;
    if (stat(db, &want) != 0) return 0;
    char dir[64], p[384];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        found = stat(p, &sb) == 0 && sb.st_dev == want.st_dev && sb.st_ino == want.st_ino;
    }
    closedir(d);
    return found;
}

/* One server per database path: an flock on DB.lock (released by the kernel even after kill -9), holding
 * "PID HOST BOOT" of its holder as text. A held lock is reported with its holder: a live pid of this host, a pid of
 * another host (a database on a shared filesystem), or a pid that no longer runs here. A filesystem without locks
 * (ENOLCK) is named as such. A lock that excludes nothing (a no-op lock: NFS mounted with nolock, some FUSE
 * filesystems) is caught by its last holder: when the lock was taken at once but the server the text names still
 * runs on this boot of this host with the database open, two servers would share it: refused. Returns the lock's
 * descriptor, or -1 after printing why (usage-style, exit 2). */
static int serve_lock_path(const char *db) {
    char lockp[1100];
    snprintf(lockp, sizeof lockp, "%s.lock", db);
    int lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lockfd < 0) { cli_error("serve", "cannot create %s: %s", lockp, strerror(errno)); return -1; }
    long pid = 0;
    char host[256], boot[128], myhost[256], myboot[128];
    lock_text_read(lockfd, &pid, host, sizeof host, boot, sizeof boot);
    util_machine(myboot, sizeof myboot, myhost, sizeof myhost);
    int here = !host[0] || (!strcmp(host, myhost) && !strcmp(boot, myboot));   /* "PID" alone: an older server here */
    int alive = here && pid > 0 && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
    if (flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(lockfd);
        if ((e == EWOULDBLOCK || e == EAGAIN) && pid <= 0)
            cli_error("serve", "%s is already served by another prism-sweep serve: one server per database", db);
        else if ((e == EWOULDBLOCK || e == EAGAIN) && alive)
            cli_error("serve", "%s is already served by another prism-sweep serve (pid %ld): one server per database",
                      db, pid);
        else if (e == EWOULDBLOCK || e == EAGAIN) {
            if (!here)
                cli_error("serve", "%s is already served by another prism-sweep serve (pid %ld on host %s, by %s): one "
                          "server per database; stop it there", db, pid, host, lockp);
            else
                cli_error("serve", "%s is locked, but the server it names (pid %ld) no longer runs here: another process "
                          "holds the lock (one that inherited it from that server, or a server on another host sharing "
                          "this filesystem); find it with `fuser %s`", lockp, pid, lockp);
        } else if (e == ENOLCK)
            cli_error("serve", "cannot lock %s: %s: this filesystem gives no file locks (an NFS mount without its lock "
                      "daemon, for one), so one server per database cannot be kept; serve a database on a local disk or "
                      "a filesystem with working locks", lockp, strerror(e));
        else
            cli_error("serve", "cannot lock %s: %s", lockp, strerror(e));
        return -1;
    }
    if (alive && pid_has_open(pid, db)) {
        close(lockfd);
        cli_error("serve", "%s was locked at once, yet the server that last locked it (pid %ld) still runs on this host "
                  "with %s open: file locks on this filesystem exclude nothing (a no-op lock: NFS mounted with nolock, "
                  "some FUSE filesystems), and two servers would write one database; stop pid %ld, and serve a database "
                  "on a filesystem with working locks", lockp, pid, db, pid);
        return -1;
    }
    char txt[512];
    int pn = snprintf(txt, sizeof txt, "%d %s %s\n", (int)getpid(), myhost, myboot);
    if (ftruncate(lockfd, 0) != 0 || pwrite(lockfd, txt, (size_t)pn, 0) != pn) { /* advisory text only */ }
    return lockfd;
}

/* Where the tokens are; the tokens themselves are never printed (stderr ends up in logs). */
static void serve_say_tokens(const auth_tokens *tok, const char *db) {
    if (tok->generated)
        fprintf(stderr, "prism-sweep serve: generated tokens, kept in %s (mode 0600): worker_token= and admin_token=\n"
                        "  the worker token is also in %s.worker-token: give that file to prism-worker --token-file\n",
                tok->path, db);
    else
        fprintf(stderr, "prism-sweep serve: tokens from %s\n", tok->path);
    if (tok->open_mode)
        fprintf(stderr, "prism-sweep serve: warning: token file %s is readable by other users (mode 0%03o): "
                        "chmod 600 %s\n", tok->path, tok->open_mode, tok->path);
    if (tok->admin_generated)   /* otherwise nobody could ever use the admin routes */
        fprintf(stderr, "prism-sweep serve: %s has no admin_token= line; the admin token for this run only is in %s "
                        "(mode 0600)\n  (add admin_token=... to %s to keep one)\n", tok->path, tok->admin_path, tok->path);
}

/* One deciding pass of `what` (halving_tick_all, serve_racing_tick_all: the same contract) in its own transaction
 * at start; a failure is logged and rolled back, the server starts anyway (the next tick retries). */
static void serve_decide_at_start(queue *q, const char *what, int (*tick)(queue *, int *, char *, size_t),
                                  const char *done) {
    store *st = q->st;
    int n = 0;
    char err[512] = "";
    if (store_begin(st) != 0) return;
    if (tick(q, &n, err, sizeof err) == 0 && store_commit(st) == 0) {
        if (n) fprintf(stderr, "prism-sweep serve: %s: %d %s at start\n", what, n, done);
    } else {
        fprintf(stderr, "prism-sweep serve: %s at start: %s\n", what, err[0] ? err : st->err);
        store_rollback(st);
    }
}

/* racing_tick_all on the queue's store (racing writes no job transition: it adds jobs, as create does). */
static int serve_racing_tick_all(queue *q, int *decided, char *err, size_t errlen) {
    return racing_tick_all(q->st, decided, err, errlen);
}

/* search_tick_all on the queue's store (a search adds schedules and jobs, as create does). */
static int serve_search_tick_all(queue *q, int *decided, char *err, size_t errlen) {
    return search_tick_all(q->st, decided, err, errlen);
}

/* What a restart owes: the live leases' grace, and the halving and racing decisions that were due. */
static void serve_recover(serve_state *s, store *st) {
    {   /* every live lease gets one TTL from now: leases that ran out while the server was down (their workers
         * could not reach us), and expiries written before a wall-clock step, are not trusted */
        int n = 0;
        if (store_begin(st) == 0) {
            if (queue_grace(&s->a.q, queue_clock(&s->a.q), &n) == 0 && store_commit(st) == 0) {
                if (n) fprintf(stderr, "prism-sweep serve: %d live lease(s) extended by one TTL after the restart (each expires one TTL from now)\n", n);
            } else {
                store_rollback(st);
            }
        }
    }
    /* a halving promotion or a racing round that was due when the server stopped is decided now (idempotent) */
    serve_decide_at_start(&s->a.q, "halving", halving_tick_all, "schedule decision(s) taken");
    serve_decide_at_start(&s->a.q, "racing", serve_racing_tick_all, "round(s) decided");
    serve_decide_at_start(&s->a.q, "search", serve_search_tick_all, "batch(es) decided");
}

/* The listening line, and the warning for an address off this machine. */
static void serve_say_listening(serve_state *s, const char *host, const char *db, double ttl, int max_attempts,
                                int public_read, const char *web) {
    fprintf(stderr, "prism-sweep serve: listening on http://%s%s%s:%d (db %s, lease TTL %g s, max attempts %d, "
                    "read routes %s, web %s)\n", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
            http_server_port(&s->srv), db, ttl, max_attempts, public_read ? "public" : "need a token",
            web ? web : "(none: no web/ here, beside the build or in PREFIX/share/prism-sweep; give --web DIR or make install)");
    if (!is_loopback(host))
        fprintf(stderr, "prism-sweep serve: warning: listening on %s, off this machine, over plain HTTP: tokens and "
                        "results cross the network unencrypted. Put TLS in front (a reverse proxy such as nginx or "
                        "caddy terminating https:// and forwarding to a loopback --listen), or an SSH tunnel / VPN\n",
                host);
}

/* serve's flags, as parsed */
typedef struct serve_opts {
    const char *db, *listen, *token_file, *web;
    double ttl, idle, req_to, anon_to;
    int accept_wal_loss, max_attempts, max_preempt, fail_limit, public_read, max_conns, per_addr;
} serve_opts;

/* The page's folder: --web when it is one; when the default web/ is not here, the checkout the binary was built in
 * (BUILD/prism-sweep → web/), else where `make install` puts it (PREFIX/bin/prism-sweep → PREFIX/share/prism-sweep/web),
 * else none (NULL: API only, the listening line says so). Returns 0, or CLI_ERR when --web names no folder. */
static int serve_pick_web(serve_opts *op, int web_given) {
    static char beside_exe[PATH_MAX];
    struct stat sb;
    if (stat(op->web, &sb) == 0 && S_ISDIR(sb.st_mode)) return 0;
    if (web_given) return cli_error("serve", "--web %s: not a folder (give the folder holding index.html)", op->web);
    ssize_t n = readlink("/proc/self/exe", beside_exe, sizeof beside_exe - 40);
    char *slash = n > 0 ? (beside_exe[n] = 0, strrchr(beside_exe, '/')) : NULL;
    op->web = NULL;
    if (slash) {
        strcpy(slash, "/../web");
        if (stat(beside_exe, &sb) == 0 && S_ISDIR(sb.st_mode)) op->web = beside_exe;
        else {
            strcpy(slash, "/../share/prism-sweep/web");
            if (stat(beside_exe, &sb) == 0 && S_ISDIR(sb.st_mode)) op->web = beside_exe;
        }
    }
    return 0;
}

/* The database taken for this server: the path's flock, the file's own lock, the WAL checked, opened, a write
 * probed. Returns 0 with *lockfd, *dbfd and *st set (the caller closes them), or the exit status (1 or 2) with
 * what was taken already closed and the reason on stderr. */
static int serve_take_db(const serve_opts *op, int *lockfd, int *dbfd, store **st) {
    char err[1024];
    *lockfd = serve_lock_path(op->db);
    if (*lockfd < 0) return 2;
    /* DB.lock is keyed on the path: a hard link or a symlink to the database has another one. The lock that
     * counts is on the database file itself (serve_lock_db) */
    *dbfd = serve_lock_db(op->db);
    int status = 0;
    if (*dbfd < 0) { status = 2; goto fail; }
    if (serve_check_wal(op->db, op->accept_wal_loss) < 0) { status = 1; goto fail; }
    if (store_open(op->db, st, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep serve: %s\n", err);
        status = 2;
        goto fail;
    }
    if (api_probe_write(*st, err, sizeof err) < 0) {   /* reads alone would pass: answering 500 to every write is worse */
        fprintf(stderr, "prism-sweep serve: cannot write %s: %s (a read-only file or folder, a full disk or an I/O "
                        "error: fix it and start again)\n", op->db, err);
        store_close(*st);
        *st = NULL;
        status = 1;
        goto fail;
    }
    return 0;
fail:
    if (*dbfd >= 0) close(*dbfd);
    close(*lockfd);
    *dbfd = *lockfd = -1;
    return status;
}

/* The loop's companions before listening: the large sweeps' leaderboards warmed, the page cache, the checkpointer. */
static void serve_prepare_loop(serve_state *s, store *st) {
    char err[1024];
    util_malloc_eager();   /* a leaderboard freed on the pool is merged there, not by the loop's next malloc (util.h) */
    uv_loop_init(&s->loop);
    s->a.views.lb.loop = &s->loop;   /* a costly leaderboard is ranked again off the loop (lbcache.h) */
    snprintf(s->a.views.lb.db_path, sizeof s->a.views.lb.db_path, "%s", st->path);
    {   /* the large sweeps ranked before listening: their first poll would hold the loop (lbcache_warm) */
        double t0 = util_now_s();
        int nw = lbcache_warm(&s->a.views.lb, st, LBCACHE_WARM_JOBS, err, sizeof err);
        if (nw < 0) fprintf(stderr, "prism-sweep serve: %s (their first poll ranks them)\n", err);
        else if (nw > 0) fprintf(stderr, "prism-sweep serve: event=leaderboard-warm sweeps=%d s=%.1f\n", nw, util_now_s() - t0);
    }
    /* the loop's connection: a page cache for a fleet's working set (jobs, index pages), checkpoints elsewhere */
    store_exec(st, "PRAGMA cache_size=-65536");
    if (walck_init(&s->wal, &s->loop, st, err, sizeof err) < 0)
        fprintf(stderr, "prism-sweep serve: %s (checkpoints stay inside COMMITs)\n", err);
    s->a.metrics_extra = serve_metrics;
    s->a.metrics_extra_ud = s;
}

/* Listens and runs the loop until a signal stops it. Returns the exit status: 0 stopped cleanly, 2 could not listen
 * (the API released, the loop closed). */
static int serve_run(serve_state *s, store *st, const serve_opts *op, const char *host, int port, int public_read) {
    char err[1024];
    serve_prepare_loop(s, st);
    http_server_opts o = { .max_conns = op->max_conns, .idle_timeout_s = op->idle, .request_timeout_s = op->req_to,
                           .anon_timeout_s = op->anon_to, .max_conns_per_addr = op->per_addr, .trusted = serve_trusted,
                           .flush = serve_flush, .stopped = on_stopped,
                           .durable = s->wal.durable ? serve_durable : NULL, .durable_failed = serve_durable_failed };
    if (http_server_start(&s->srv, &s->loop, host, port, api_handle, &s->a, &o, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep serve: %s (is another server running? pick another --listen)\n", err);
        api_release(&s->a);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        walck_release(&s->wal);
        uv_loop_close(&s->loop);
        return 2;
    }
    uv_timer_init(&s->loop, &s->expiry);
    s->expiry.data = s;
    uint64_t every = (uint64_t)(op->ttl * 1000 / 4);
    if (every > 500) every = 500;
    if (every < 50) every = 50;
    uv_timer_start(&s->expiry, expiry_tick, every, every);
    uv_signal_init(&s->loop, &s->sigint);
    uv_signal_init(&s->loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    serve_recover(s, st);
    serve_say_listening(s, host, op->db, op->ttl, op->max_attempts, public_read, op->web);
    fflush(stderr);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    api_flush(&s->a);
    api_release(&s->a);
    walck_release(&s->wal);
    uv_loop_close(&s->loop);
    fprintf(stderr, "prism-sweep serve: stopped cleanly\n");
    return 0;
}

int cmd_serve(int argc, char **argv) {
    serve_opts op = { .db = "prism.db", .listen = "127.0.0.1:8080", .token_file = NULL, .web = "web/", .ttl = 120,
                      .idle = 60, .req_to = 30, .anon_to = 5, .accept_wal_loss = 0, .max_attempts = 3,
                      .max_preempt = QUEUE_DEFAULT_MAX_PREEMPTIONS, .fail_limit = 3, .public_read = 0,
                      .max_conns = SERVE_DEFAULT_MAX_CONNS, .per_addr = 64 };
    cli_flag flags[] = {
        { "--db", CLI_STR, &op.db, "prism.db", "the SQLite database (created if missing)", 0, 0, NULL, 0 },
        { "--listen", CLI_STR, &op.listen, "127.0.0.1:8080", "HOST:PORT to listen on ([::1]:PORT for IPv6; port 0 = any free)", 0, 0, NULL, 0 },
        { "--token-file", CLI_STR, &op.token_file, "(DB.tokens, generated)", "file with worker_token=... and admin_token=... lines", 0, 0, NULL, 0 },
        { "--lease-ttl", CLI_DOUBLE, &op.ttl, "120", "seconds a lease lives without a heartbeat", 0.2, 86400, NULL, 0 },
        { "--max-attempts", CLI_INT, &op.max_attempts, "3", "leases per job before it fails", 1, 1000, NULL, 0 },
        { "--max-preemptions", CLI_INT, &op.max_preempt, "100", "preempted attempts a job may have (they do not count in "
          "--max-attempts); the next one fails it", 0, 100000, NULL, 0 },
        { "--worker-fail-limit", CLI_INT, &op.fail_limit, "3", "a worker that fails N jobs in a row without retry gets no "
          "more leases until it registers again (0 = never stop one)", 0, 1000000, NULL, 0 },
        { "--web", CLI_STR, &op.web, "web/", "folder of the leaderboard page (static files); when web/ is not here, the one beside the binary's build folder", 0, 0, NULL, 0 },
        { "--public-read", CLI_BOOL, &op.public_read, "off", "read routes need no token even off loopback", 0, 0, NULL, 0 },
        { "--idle-timeout", CLI_DOUBLE, &op.idle, "60", "seconds an idle keep-alive connection stays open", 0.1, 86400, NULL, 0 },
        { "--request-timeout", CLI_DOUBLE, &op.req_to, "30", "seconds a client has to send a whole request", 0.1, 3600, NULL, 0 },
        { "--max-conns", CLI_INT, &op.max_conns, "16384", "open connections at most; at the cap a new connection replaces the oldest one that has shown no token, else gets 503 (the open-file limit is raised to fit)", 1, 1000000, NULL, 0 },
        { "--max-conns-per-addr", CLI_INT, &op.per_addr, "64", "connections without a token from one client address (a new one closes its oldest; connections that sent a token are not counted)", 1, 1000000, NULL, 0 },
        { "--accept-wal-loss", CLI_BOOL, &op.accept_wal_loss, "off", "start although the WAL ends in committed transactions SQLite would drop (a copy of the WAL is kept beside it)", 0, 0, NULL, 0 },
        { "--anon-timeout", CLI_DOUBLE, &op.anon_to, "5", "seconds a connection without a token may stay without a complete request", 0.1, 3600, NULL, 0 },
        { 0 },
    };
    cli_cmd cmd = { "serve", "[--db FILE] [--listen HOST:PORT] [flags]",
                    "Run the orchestrator: the HTTP/JSON API for workers (leases, metrics, results), the admin and read "
                    "routes, and the leaderboard page. It is the only process that writes the database. API: docs/API.md.",
                    flags, NULL };
    char *pos[1];
    int npos = 0;
    int rc = cli_parse(&cmd, argc, argv, pos, 0, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    char host[256];
    int port = 0;
    if (parse_listen(op.listen, host, sizeof host, &port) < 0)
        return cli_error("serve", "--listen must be HOST:PORT, [IPV6]:PORT or :PORT with a port in 0..65535 (got \"%s\")", op.listen);
    cli_flag *wf = cli_find(&cmd, "--web");
    if ((rc = serve_pick_web(&op, wf && wf->seen)) != 0) return rc;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);   /* a file-size limit fails the write (EFBIG, an error we report) instead of killing us */
    cli_flag *mcf = cli_find(&cmd, "--max-conns");
    if (serve_raise_nofile(&op.max_conns, mcf && mcf->seen) < 0) return 2;
    if (serve_probe_port(host, port) < 0) return 2;
    int lockfd, dbfd;
    store *st = NULL;
    if ((rc = serve_take_db(&op, &lockfd, &dbfd, &st)) != 0) return rc;

    char err[1024];
    serve_state *s = calloc(1, sizeof *s);
    auth_tokens tok;
    int status = 1;
    if (!s) { fprintf(stderr, "prism-sweep serve: out of memory\n"); goto out; }
    if (auth_load(&tok, op.token_file, op.db, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep serve: %s\n", err);
        status = 2;
        goto out;
    }
    serve_say_tokens(&tok, op.db);
    api_config cfg = { .lease_ttl = op.ttl, .max_attempts = op.max_attempts, .worker_fail_limit = op.fail_limit,
                       .max_preemptions = op.max_preempt ? op.max_preempt : -1,
                       .public_read = op.public_read || is_loopback(host), .web_dir = op.web };
    if (api_init(&s->a, st, &tok, &cfg, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep serve: %s\n", err);
        status = 2;
        goto out;
    }
    status = serve_run(s, st, &op, host, port, cfg.public_read);
out:
    free(s);
    store_close(st);
    close(dbfd);     /* releases the database's own lock */
    close(lockfd);   /* releases the flock */
    return status;
}
