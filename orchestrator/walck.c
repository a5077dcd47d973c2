/* walck.c — PASSIVE WAL checkpoints on a libuv pool thread (see walck.h).
 *
 * Design: sqlite3_wal_hook on the loop's connection is called after every COMMIT with the WAL's size in
 * pages; past WALCK_PAGES, and with no checkpoint in flight, it queues one uv_work_t. The pool thread runs
 * sqlite3_wal_checkpoint_v2(PASSIVE) on walck's own connection and times it; the after-work callback (loop
 * thread) records how far it got. That alone never lets the WAL start over under steady writes: SQLite
 * restarts the WAL only when every frame has been copied, and the loop commits new frames while the pool
 * thread copies (measured: 2.4 GiB of WAL after 3 minutes of a 1,000-box fleet). So once a pool checkpoint
 * has copied all but at most WALCK_TAIL frames, the hook copies that tail itself, right after the COMMIT (a
 * PASSIVE checkpoint on the loop's connection: a few hundred pages and the syncs, timed as the loop's only
 * checkpoint stall); the next write transaction then starts the WAL over. If the WAL still reaches
 * WALCK_HARD pages (checkpoints slower than the writes), the hook checkpoints in full on the loop.
 */
#include "walck.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Checkpoints on the loop's connection, inside the hook (as SQLite's own auto-checkpoint does), timed. */
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

static int walck_hook(void *ud, sqlite3 *db, const char *name, int pages) {   /* loop thread, after COMMIT */
    walck *w = ud;
    if (pages > w->wal_pages_max) w->wal_pages_max = pages;
    if (w->on_loop_only) {   /* SQLite's own behaviour, timed: every checkpoint inside the COMMIT */
        if (pages >= 1000) walck_on_loop(w, db, name);
        return SQLITE_OK;
    }
    if (pages < WALCK_PAGES || w->busy || !w->db) return SQLITE_OK;
    if (pages >= WALCK_HARD || (w->copied_upto > 0 && pages - w->copied_upto <= WALCK_TAIL)) {
        walck_on_loop(w, db, name);
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
    sqlite3_wal_autocheckpoint(w->db, 0);
    const char *mode = getenv("PRISM_WAL_CHECKPOINTS");   /* "loop": for comparison in benchmarks */
    w->on_loop_only = mode && strcmp(mode, "loop") == 0;
    sqlite3_wal_hook(st->db, walck_hook, w);         /* replaces the auto-checkpoint hook on the loop's connection */
    return 0;
}

void walck_release(walck *w) {
    if (!w->st) return;
    sqlite3_wal_autocheckpoint(w->st->db, 1000);     /* SQLite's default again (and its own hook) */
    sqlite3_close(w->db);
    w->db = NULL;
    w->st = NULL;
}
