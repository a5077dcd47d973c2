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

#include <stdio.h>
#include <string.h>

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
    if (age >= LBCACHE_MAX_AGE_S) return 0;
    if (e->rev == rev) return 1;
    return e->build_s >= (c->cheap_s > 0 ? c->cheap_s : LBCACHE_CHEAP_S) && age < LBCACHE_DUTY * e->build_s;   /* changed: rebuilt when due */
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
    json_t *lb = NULL;
    int rc = leaderboard_build(st, sweep_id, &lb, err, errlen);   /* an unknown sweep: its STORE_ENOTFOUND */
    if (rc < 0) return rc;
    double t1 = clock_now(c);
    c->builds++;
    if (found && rev >= 0) {
        if (!e) e = entry_free_or_lru(c);
        json_decref(e->lb);
        *e = (lbcache_entry){ .sweep_id = sweep_id, .created_at = created_at, .rev = rev, .built_at = t1,
                              .build_s = t1 - now, .used_at = t1, .lb = json_incref(lb) };
    }
    *out = lb;
    return STORE_OK;
}

void lbcache_release(lbcache *c) {
    for (int i = 0; i < LBCACHE_SLOTS; i++) {
        json_decref(c->e[i].lb);
        c->e[i] = (lbcache_entry){0};
    }
}
