/* lbcache.c — the last leaderboard per sweep, answered again while sweep_ranking.rev stands still.
 *
 * The ranking is a fit over every result of the sweep; nothing of it can be updated in place cheaply, but most
 * polls come while nothing changed (a page left open on a finished or slow sweep, several pages on one sweep),
 * and the rest can wait for a rebuild that the duty rule spaces out. The rule and the bound on how stale an
 * answer can be are in lbcache.h; the rev and the triggers that move it in sql/015_ranking_rev.sql.
 *
 * An entry holds the JSON object itself: a hit is one indexed read and a reference count, and the JSON or CSV
 * rendering is the route's (views.c), O(schedules) not O(jobs).
 */
#include "lbcache.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonout.h"

#include "leaderboard.h"
#include "util.h"

/* The key of sweep_id now: 1 found (rev -1 when the sweep has no sweep_ranking row: not cacheable), 0 no such
 * sweep, STORE_EIO. */
static int key_read(store *st, long long sweep_id, double *created_at, long long *rev, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT s.created_at, coalesce(r.rev, -1) FROM sweeps s LEFT JOIN sweep_ranking r "
                           "ON r.sweep_id = s.id WHERE s.id = ?1", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "leaderboard revision: %s", sqlite3_errmsg(st->db));
        return STORE_EIO;
    }
    sqlite3_bind_int64(s, 1, sweep_id);
    int rc = sqlite3_step(s), found = 0;
    if (rc == SQLITE_ROW) {
        *created_at = sqlite3_column_double(s, 0);
        *rev = sqlite3_column_int64(s, 1);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "leaderboard revision: %s", sqlite3_errmsg(st->db));
        found = STORE_EIO;
    }
    sqlite3_finalize(s);
    return found;
}

static lbcache_entry *entry_of(lbcache *c, long long sweep_id) {
    for (int i = 0; i < LBCACHE_SLOTS; i++)
        if (c->e[i].sweep_id == sweep_id) return &c->e[i];
    return NULL;
}

static lbcache_entry *entry_free_or_lru(lbcache *c) {
    lbcache_entry *v = &c->e[0];
    for (int i = 0; i < LBCACHE_SLOTS; i++) {
        if (c->e[i].sweep_id == 0) return &c->e[i];
        if (c->e[i].used_at < v->used_at) v = &c->e[i];
    }
    return v;
}

static double clock_now(const lbcache *c) { return c->clock ? c->clock() : util_now_s(); }

/* 1 when e, built for this key, may be answered now instead of a new build. */
static int entry_usable(const lbcache *c, const lbcache_entry *e, double created_at, long long rev, double now) {
    if (e->created_at != created_at) return 0;   /* another sweep with the id */
    double age = now - e->built_at;
    if (age >= LBCACHE_MAX_AGE_S && age >= LBCACHE_DUTY * e->build_s) return 0;   /* unchanged, but old */
    if (e->rev == rev) return 1;
    return e->build_s >= (c->cheap_s > 0 ? c->cheap_s : LBCACHE_CHEAP_S) && age < LBCACHE_DUTY * e->build_s;   /* changed: rebuilt when due */
}

/* The JSON text of lb as a blob (NULL when either is missing: the route renders lb itself); text is the blob's or
 * freed. */
static blob *text_blob(char *text) {
    blob *b = text ? blob_wrap(text, strlen(text)) : NULL;
    if (!b) free(text);
    return b;
}

/* Fills e with a new build (the object and its text: both owned now), freeing what it held. */
static void entry_set(lbcache_entry *e, long long sweep_id, double created_at, long long rev, double built_at,
                      double build_s, json_t *lb, blob *text) {
    json_decref(e->lb);
    blob_unref(e->text);
    *e = (lbcache_entry){ .sweep_id = sweep_id, .created_at = created_at, .rev = rev, .built_at = built_at,
                          .build_s = build_s, .used_at = built_at, .lb = lb, .text = text };
}

/* ---- a rebuild on the thread pool ---- */

typedef struct lb_job {
    uv_work_t w;
    lbcache *c;
    long long sweep_id;
    double created_at;           /* the key the loop read: a build of another sweep with this id is dropped */
    char path[4096];
    /* filled on the pool thread */
    int rc;
    long long rev;               /* sweep_ranking.rev in the build's read transaction */
    double build_s;
    json_t *lb;
    blob *text;                  /* its only reference until the loop installs it */
    char err[256];
} lb_job;

/* On a pool thread: a read-only connection of its own, one read transaction for the rev and the ranking. */
static void job_work(uv_work_t *w) {
    lb_job *j = w->data;
    store *st = NULL;
    double t0 = util_now_s(), created_at = 0;
    j->rc = store_open_readonly(j->path, &st, j->err, sizeof j->err);
    if (j->rc == STORE_OK) j->rc = store_exec(st, "BEGIN");
    if (j->rc == STORE_OK) {
        int found = key_read(st, j->sweep_id, &created_at, &j->rev, j->err, sizeof j->err);
        j->rc = found < 0 ? found : (!found || created_at != j->created_at || j->rev < 0) ? STORE_ENOTFOUND : STORE_OK;
    }
    if (j->rc == STORE_OK) j->rc = leaderboard_build(st, j->sweep_id, &j->lb, j->err, sizeof j->err);
    if (j->rc == STORE_OK && !(j->text = text_blob(json_dumps(j->lb, JSON_COMPACT | JSONOUT_FLAGS)))) j->rc = STORE_EIO;
    if (st) {
        store_rollback(st);   /* the read transaction */
        store_close(st);
    }
    j->build_s = util_now_s() - t0;
}

/* The replaced build's object and text, freed on the pool: a 50,000-row leaderboard is ~1.5M jansson values, tens
 * of ms of free() that the loop need not spend (nothing else holds them: a route's reference ends with its request). */
typedef struct lb_free { uv_work_t w; json_t *lb; blob *text; } lb_free;
static void free_work(uv_work_t *w) {
    lb_free *f = w->data;
    json_decref(f->lb);
    blob_unref(f->text);   /* the only reference (entry_drop_off_loop) */
}
static void free_done(uv_work_t *w, int status) { free(w->data); }

/* Hands e's object and text to the pool to free (on this thread when that cannot start); e no longer holds them.
 * A text that connections are still writing is theirs to free: the last write's end drops it, on the loop. */
static void entry_drop_off_loop(lbcache *c, lbcache_entry *e) {
    if (e->text && e->text->refs > 1) {
        blob_unref(e->text);
        e->text = NULL;
    }
    lb_free *f = calloc(1, sizeof *f);
    if (f) {
        f->lb = e->lb;
        f->text = e->text;
        f->w.data = f;
        if (uv_queue_work(c->loop, &f->w, free_work, free_done) == 0) { e->lb = NULL; e->text = NULL; return; }
        free(f);
    }
    json_decref(e->lb);
    blob_unref(e->text);
    e->lb = NULL;
    e->text = NULL;
}

/* Back on the loop: installs the build unless the entry holds a newer one (a build of the loop's meanwhile). */
static void job_done(uv_work_t *w, int status) {
    lb_job *j = w->data;
    lbcache *c = j->c;
    c->inflight--;
    lbcache_entry *e = entry_of(c, j->sweep_id);
    if (e) e->building = 0;
    if (status == 0 && j->rc == STORE_OK && (!e || e->created_at != j->created_at || e->rev <= j->rev)) {
        if (!e) e = entry_free_or_lru(c);
        entry_drop_off_loop(c, e);
        entry_set(e, j->sweep_id, j->created_at, j->rev, clock_now(c), j->build_s, j->lb, j->text);
        c->async_builds++;
        e->gen = ++c->builds;
    } else {
        if (status == 0 && j->rc != STORE_OK && j->rc != STORE_ENOTFOUND)
            fprintf(stderr, "prism-sweep serve: event=leaderboard-build-failed sweep=%lld: %s (the last answer stays)\n",
                    j->sweep_id, j->err);
        json_decref(j->lb);
        blob_unref(j->text);
    }
    free(j);
}

/* Starts e's rebuild on the pool; 0, or -1 when it could not start (the caller builds it itself). */
static int job_start(lbcache *c, lbcache_entry *e) {
    lb_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->c = c;
    j->sweep_id = e->sweep_id;
    j->created_at = e->created_at;
    snprintf(j->path, sizeof j->path, "%s", c->db_path);
    j->w.data = j;
    if (uv_queue_work(c->loop, &j->w, job_work, job_done) != 0) { free(j); return -1; }
    c->inflight++;
    e->building = 1;
    return 0;
}

int lbcache_get(lbcache *c, store *st, long long sweep_id, json_t **out, char *err, size_t errlen) {
    *out = NULL;
    double created_at = 0;
    long long rev = -1;
    int found = key_read(st, sweep_id, &created_at, &rev, err, errlen);
    if (found < 0) return found;
    double now = clock_now(c);
    lbcache_entry *e = found ? entry_of(c, sweep_id) : NULL;
    if (e && rev >= 0 && entry_usable(c, e, created_at, rev, now)) {
        e->used_at = now;
        c->hits++;
        *out = json_incref(e->lb);
        return STORE_OK;
    }
    /* due, and costly: rebuilt on the pool while this entry answers (lbcache.h) */
    if (e && rev >= 0 && c->loop && c->db_path[0] && e->created_at == created_at &&
        e->build_s >= (c->async_s > 0 ? c->async_s : LBCACHE_ASYNC_S) && (e->building || job_start(c, e) == 0)) {
        e->used_at = now;
        c->hits++;
        c->stale_hits++;
        *out = json_incref(e->lb);
        return STORE_OK;
    }
    json_t *lb = NULL;
    int rc = leaderboard_build(st, sweep_id, &lb, err, errlen);   /* an unknown sweep: its STORE_ENOTFOUND */
    if (rc < 0) return rc;
    double t1 = clock_now(c);
    c->builds++;
    if (found && rev >= 0) {
        if (!e) e = entry_free_or_lru(c);
        int building = e->sweep_id == sweep_id && e->building;
        entry_set(e, sweep_id, created_at, rev, t1, t1 - now, json_incref(lb),
                  text_blob(json_dumps(lb, JSON_COMPACT | JSONOUT_FLAGS)));
        e->building = building;
        e->gen = c->builds;
    }
    *out = lb;
    return STORE_OK;
}

int lbcache_warm(lbcache *c, store *st, long long min_jobs, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT sweep_id FROM sweep_counts GROUP BY sweep_id HAVING sum(n) >= ?1 "
                           "ORDER BY sweep_id DESC LIMIT ?2", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "leaderboard warm-up: %s", sqlite3_errmsg(st->db));
        return STORE_EIO;
    }
    sqlite3_bind_int64(s, 1, min_jobs);
    sqlite3_bind_int(s, 2, LBCACHE_SLOTS);
    long long ids[LBCACHE_SLOTS];
    int n = 0, rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < LBCACHE_SLOTS) ids[n++] = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        snprintf(err, errlen, "leaderboard warm-up: %s", sqlite3_errstr(rc));
        return STORE_EIO;
    }
    for (int i = 0; i < n; i++) {
        json_t *lb = NULL;
        int r = lbcache_get(c, st, ids[i], &lb, err, errlen);
        json_decref(lb);
        if (r < 0 && r != STORE_ENOTFOUND) return r;
    }
    return n;
}

blob *lbcache_text(const lbcache *c, const json_t *lb) {
    for (int i = 0; i < LBCACHE_SLOTS; i++)
        if (c->e[i].sweep_id && c->e[i].lb == lb && c->e[i].text) return c->e[i].text;
    return NULL;
}

int lbcache_etag(lbcache *c, const json_t *lb, char *out, size_t n) {
    if (!c->nonce) c->nonce = ((unsigned long long)time(NULL) << 22) ^ (unsigned long long)getpid();
    for (int i = 0; i < LBCACHE_SLOTS; i++)
        if (c->e[i].sweep_id && c->e[i].lb == lb && c->e[i].gen) {
            int k = snprintf(out, n, "\"lb-%lld-%llu-%llx\"", c->e[i].sweep_id, c->e[i].gen, c->nonce);
            return k > 0 && (size_t)k < n ? 0 : -1;
        }
    return -1;
}

void lbcache_release(lbcache *c) {
    for (int i = 0; i < LBCACHE_SLOTS; i++) {
        json_decref(c->e[i].lb);
        blob_unref(c->e[i].text);
        c->e[i] = (lbcache_entry){0};
    }
}
