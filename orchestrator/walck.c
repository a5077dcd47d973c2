/* walck.c — PASSIVE WAL checkpoints on a libuv pool thread (see walck.h).
 *
 * Design: sqlite3_wal_hook on the loop's connection is called after every COMMIT with the WAL's size in
 * pages; past WALCK_PAGES, and with no checkpoint in flight, it queues one uv_work_t. The pool thread runs
 * sqlite3_wal_checkpoint_v2(PASSIVE) on walck's own connection and times it; the after-work callback (loop
 * thread) records the figures. The hook does nothing else, so a COMMIT on the loop never copies pages into
 * the database file itself.
 */
#include "walck.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static double walck_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void walck_run(uv_work_t *req) {   /* pool thread */
    walck *w = req->data;
    double t0 = walck_now();
    w->log_frames = w->done_frames = 0;
    w->rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &w->log_frames, &w->done_frames);
    w->run_s = walck_now() - t0;
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
}

static int walck_hook(void *ud, sqlite3 *db, const char *name, int pages) {   /* loop thread, after COMMIT */
    walck *w = ud;
    if (pages > w->wal_pages_max) w->wal_pages_max = pages;
    if (pages < WALCK_PAGES || w->busy || !w->db) return SQLITE_OK;
    w->work.data = w;
    w->t_queued = walck_now();
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
