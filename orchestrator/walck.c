/* walck.c — PASSIVE WAL checkpoints on a libuv pool thread, and the durability step of the loop's commits
 * (see walck.h).
 *
 * Checkpoints: sqlite3_wal_hook on the loop's connection is called after every COMMIT with the WAL's size in
 * pages; past WALCK_PAGES, and with no checkpoint in flight, it queues one uv_work_t. The pool thread runs
 * sqlite3_wal_checkpoint_v2(PASSIVE) on walck's own connection (synchronous=FULL: it syncs the WAL before
 * copying and the database file before it records the copy) and times it; the after-work callback (loop
 * thread) records how far it got. That alone never lets the WAL start over under steady writes: SQLite
 * restarts the WAL only at the first frame written by a transaction that began after every frame was copied,
 * and the loop commits new frames while the pool thread copies (measured: 2.4 GiB of WAL after 3 minutes of a
 * 1,000-box fleet). So once a pool checkpoint has copied all but at most WALCK_TAIL frames, the loop copies
 * that tail itself right after a COMMIT (walck_after_commit); the next write transaction then starts the WAL
 * over. If the WAL still reaches WALCK_HARD pages (checkpoints slower than the writes), the loop checkpoints
 * in full the same way.
 *
 * Durability, and why nothing acknowledged can be lost or corrupted (power loss included). The loop's
 * connection runs synchronous=NORMAL: a COMMIT writes its frames into the WAL without syncing; SQLite still
 * syncs the WAL header when the WAL starts over (synchronous=OFF would not, and an out-of-order write after a
 * restart can corrupt the file: SQLite ticket ff5be73dee). cache_spill=OFF keeps a transaction's frames in
 * memory until its COMMIT, so frames reach the WAL only inside a COMMIT. The server (http.c) runs walck_sync
 * on a pool thread after each COMMIT k and writes the answers of batch k only when it returned 0; it starts
 * no COMMIT k+1 before that (one sync in flight). walck_sync fdatasyncs the WAL through descriptors of our
 * own (on Linux fsync/fdatasync flush the file, whatever descriptor wrote it; the inode is checked so a
 * replaced WAL is reopened).
 *  1. An answer leaves only after its COMMIT's frames are on disk: COMMIT k precedes sync k, and the answers
 *     of batch k (everything answered before COMMIT k, reads included) wait for sync k.
 *  2. The database file never holds a page from a frame that is not yet on disk: the pool checkpoint syncs
 *     the WAL itself first; the loop's tail checkpoint runs right after COMMIT k, with k's frames not yet
 *     synced, so walck_after_commit fdatasyncs the WAL on the loop first (the loop's only sync, once per WAL
 *     cycle) and then copies with synchronous=OFF (write()s only).
 *  3. The WAL is not overwritten before the copy is on disk: after the tail copy nBackfill equals mxFrame,
 *     and the overwrite happens at the first frame write of the next write transaction — COMMIT k+1 (no
 *     spill), which waits for sync k, which fsyncs the database file (sync_db). Another process's writer
 *     (prism-sweep create) could take the write lock between COMMIT k and COMMIT k+1 and restart the WAL
 *     first; a restart needs every reader slot 1..N free, so walck's "hold" connection opens a read
 *     transaction before the tail copy (its slot marks the current end of the WAL, so the copy still goes
 *     to the end) and ends it in walck_before_commit, i.e. after sync k: until then nobody restarts.
 *  4. A WAL restarted by the pool checkpoint's own full copy is safe too: that connection fsyncs the database
 *     file before it records the copy.
 * A failed fdatasync/fsync is final (walck_sync returns -1): the server drops the batch's answers and exits,
 * see serve.c.
 */
#include "walck.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void walck_run(uv_work_t *req) {   /* pool thread */
    walck *w = req->data;
    double t0 = util_now_s();
    w->log_frames = w->done_frames = 0;
    w->rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &w->log_frames, &w->done_frames);
    w->run_s = util_now_s() - t0;
}

static void walck_done(uv_work_t *req, int status) {   /* loop thread */
    walck *w = req->data;
    w->busy = 0;
    if (status < 0) return;   /* cancelled at shutdown */
    if ((w->rc != SQLITE_OK && w->rc != SQLITE_BUSY) || w->log_frames < 0) {
        w->failures++;
        snprintf(w->err, sizeof w->err, "WAL checkpoint: %s", sqlite3_errstr(w->rc));
        fprintf(stderr, "prism-sweep serve: %s (the WAL keeps growing until one succeeds)\n", w->err);
        return;
    }
    w->checkpoints++;
    if (w->run_s > w->max_s) w->max_s = w->run_s;
    w->copied_upto = w->done_frames == w->log_frames ? w->done_frames : 0;   /* the hook finishes from there */
}

/* Checkpoints on the loop's connection (outside any transaction), timed. */
static void walck_on_loop(walck *w, sqlite3 *db, const char *name) {
    int log = 0, done = 0;
    double t0 = util_now_s();
    int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    double dt = util_now_s() - t0;
    w->copied_upto = 0;
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) { w->failures++; snprintf(w->err, sizeof w->err, "WAL checkpoint: %s", sqlite3_errstr(rc)); return; }
    w->loop_checkpoints++;
    w->loop_sum_s += dt;
    if (dt > w->loop_max_s) w->loop_max_s = dt;
}

/* The WAL's descriptor, reopened when DB-wal is not the file it points to. Returns 0 or -errno. */
static int walck_wal_fd(walck *w) {
    struct stat a, b;
    if (w->wal_fd >= 0 && fstat(w->wal_fd, &a) == 0 && stat(w->wal_path, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
        return 0;
    if (w->wal_fd >= 0) close(w->wal_fd);
    w->wal_fd = open(w->wal_path, O_RDONLY | O_CLOEXEC);
    return w->wal_fd < 0 ? -errno : 0;
}

static int walck_fsync(walck *w, int fd, int data_only, const char *what) {
    if ((data_only ? fdatasync(fd) : fsync(fd)) == 0) return 0;
    int e = errno;
    snprintf(w->sync_err, sizeof w->sync_err, "%s of %.200s failed: %s", data_only ? "fdatasync" : "fsync", what, strerror(e));
    return -1;
}

int walck_sync(walck *w) {   /* pool thread (the loop neither commits nor touches these fields meanwhile) */
    int rc = walck_wal_fd(w);
    if (rc < 0) {
        snprintf(w->sync_err, sizeof w->sync_err, "cannot open %.200s to sync it: %s", w->wal_path, strerror(-rc));
        return -1;
    }
    if (walck_fsync(w, w->wal_fd, 1, w->wal_path) < 0) return -1;
    if (w->sync_db && walck_fsync(w, w->db_fd, 0, w->st->path) < 0) return -1;
    return 0;
}

void walck_before_commit(walck *w) {
    if (!w->holding) return;
    sqlite3_exec(w->hold, "ROLLBACK", NULL, NULL, NULL);
    w->holding = 0;
}

int walck_after_commit(walck *w) {   /* loop thread, no transaction open */
    w->sync_db = 0;
    if (!w->durable) return 0;
    if (w->tail_due) {
        w->tail_due = 0;
        double t0 = util_now_s();
        int rc = walck_wal_fd(w);   /* the frames about to be copied must be on disk first */
        if (rc < 0) {
            snprintf(w->sync_err, sizeof w->sync_err, "cannot open %.200s to sync it: %s", w->wal_path, strerror(-rc));
            return -1;
        }
        if (walck_fsync(w, w->wal_fd, 1, w->wal_path) < 0) return -1;
        double t_sync = util_now_s() - t0;
        if (w->hold && !w->holding && sqlite3_exec(w->hold, "BEGIN; SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) == SQLITE_OK)
            w->holding = 1;
        sqlite3_exec(w->st->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
        walck_on_loop(w, w->st->db, "main");
        sqlite3_exec(w->st->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
        double dt = util_now_s() - t0;   /* the stall, its fdatasync included */
        if (dt > w->loop_max_s) w->loop_max_s = dt;
        w->loop_sum_s += t_sync;         /* walck_on_loop counted the copy */
        w->db_dirty = 1;
    }
    w->sync_db = w->db_dirty;
    w->db_dirty = 0;
    return 0;
}

static int walck_hook(void *ud, sqlite3 *db, const char *name, int pages) {   /* loop thread, after COMMIT */
    walck *w = ud;
    w->frame_commits++;   /* SQLite calls the hook only after a COMMIT that wrote frames */
    if (pages > w->wal_pages_max) w->wal_pages_max = pages;
    if (w->on_loop_only) {   /* SQLite's own behaviour, timed: every checkpoint inside the COMMIT */
        if (pages >= 1000) walck_on_loop(w, db, name);
        return SQLITE_OK;
    }
    if (pages < WALCK_PAGES || w->busy || !w->db) return SQLITE_OK;
    if (pages >= WALCK_HARD || (w->copied_upto > 0 && pages - w->copied_upto <= WALCK_TAIL)) {
        if (w->durable) w->tail_due = 1;      /* after the COMMIT returns: walck_after_commit */
        else walck_on_loop(w, db, name);      /* synchronous=FULL: the checkpoint syncs for itself */
        return SQLITE_OK;
    }
    w->work.data = w;
    w->t_queued = util_now_s();
    if (uv_queue_work(w->loop, &w->work, walck_run, walck_done) == 0) w->busy = 1;
    return SQLITE_OK;
}

int walck_init(walck *w, uv_loop_t *loop, store *st, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    w->loop = loop;
    w->st = st;
    w->wal_fd = w->db_fd = -1;
    if (sqlite3_open_v2(st->path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s for WAL checkpoints: %s", st->path, w->db ? sqlite3_errmsg(w->db) : "no memory");
        sqlite3_close(w->db);
        w->db = NULL;
        return -1;
    }
    /* reading the schema opens the file in WAL mode on this connection; until then a checkpoint is a no-op */
    if (sqlite3_exec(w->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot read %s for WAL checkpoints: %s", st->path, sqlite3_errmsg(w->db));
        sqlite3_close(w->db);
        w->db = NULL;
        return -1;
    }
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit=%lld", WALCK_SIZE_LIMIT);
    sqlite3_exec(st->db, sql, NULL, NULL, NULL);     /* both connections: whichever resets the WAL trims it */
    sqlite3_exec(w->db, sql, NULL, NULL, NULL);
    sqlite3_exec(w->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);   /* its checkpoints sync for themselves */
    sqlite3_wal_autocheckpoint(w->db, 0);
    const char *mode = getenv("PRISM_WAL_CHECKPOINTS");   /* "loop": for comparison in benchmarks */
    w->on_loop_only = mode && strcmp(mode, "loop") == 0;
    sqlite3_wal_hook(st->db, walck_hook, w);         /* replaces the auto-checkpoint hook on the loop's connection */
    const char *sync = getenv("PRISM_SYNC");         /* "commit": synchronous=FULL on the loop, for comparison */
    if (sync && strcmp(sync, "commit") == 0) return 0;
    snprintf(w->wal_path, sizeof w->wal_path, "%s-wal", st->path);
    w->db_fd = open(st->path, O_RDONLY | O_CLOEXEC);
    if (w->db_fd < 0 || walck_wal_fd(w) < 0) {
        fprintf(stderr, "prism-sweep serve: cannot open %s or its -wal to sync them (%s): every COMMIT syncs on the "
                        "event loop instead\n", st->path, strerror(errno));
        return 0;
    }
    /* the directory entry of the WAL, once (SQLite syncs the WAL's contents, not where it is listed) */
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", st->path);
    char *slash = strrchr(dir, '/');
    if (slash) { if (slash == dir) slash[1] = 0; else *slash = 0; } else snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    if (sqlite3_exec(st->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(st->db, "PRAGMA cache_spill=OFF", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(st->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
        return 0;
    }
    if (sqlite3_open_v2(st->path, &w->hold, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(w->hold);   /* without it, only the narrow case in point 3 of the note is unguarded */
        w->hold = NULL;
    }
    w->durable = 1;
    return 0;
}

void walck_release(walck *w) {
    if (!w->st) return;
    sqlite3_wal_autocheckpoint(w->st->db, 1000);     /* SQLite's default again (and its own hook) */
    if (w->durable) {
        sqlite3_exec(w->st->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
        sqlite3_exec(w->st->db, "PRAGMA cache_spill=ON", NULL, NULL, NULL);
        w->durable = 0;
    }
    walck_before_commit(w);
    sqlite3_close(w->hold);
    w->hold = NULL;
    if (w->wal_fd >= 0) close(w->wal_fd);
    if (w->db_fd >= 0) close(w->db_fd);
    w->wal_fd = w->db_fd = -1;
    sqlite3_close(w->db);
    w->db = NULL;
    w->st = NULL;
}
