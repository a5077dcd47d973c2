/* lbcache.h — the server's last leaderboard per sweep, answered again while nothing it shows has changed.
 *
 * GET /api/v1/sweeps/{id}/leaderboard ranks every job and result of the sweep (leaderboard_build: O(sweep), 4.6M
 * VM steps at 100,000 jobs); the page polls it every 2 s. sql/015_ranking_rev.sql keeps sweep_ranking.rev, which
 * moves in the same statement as any change the leaderboard shows. lbcache_get reads the rev (one indexed read)
 * and answers the entry built at that rev; it builds again when:
 *   - the rev moved, and the entry is fresh enough to replace: its build took under LBCACHE_CHEAP_S, or it is at
 *     least LBCACHE_DUTY times its build time old (a sweep whose ranking takes 0.4 s is ranked at most every 4 s,
 *     so a fleet's completions cannot keep the event loop in the ranking more than 1/LBCACHE_DUTY of the time);
 *   - or the entry is LBCACHE_MAX_AGE_S old (the halving total of steps trained counts running jobs' steps, which
 *     heartbeats move without moving the rev).
 * The answer may thus lag the database by at most max(LBCACHE_MAX_AGE_S, LBCACHE_DUTY x build time) — never for
 * a sweep that ranks in under LBCACHE_CHEAP_S, which is always current (docs/API.md).
 *
 * Keyed by (sweep id, sweep created_at, rev): a deleted sweep's id given to a new sweep is another key.
 * Entries: LBCACHE_SLOTS sweeps, the least recently used replaced. Single-threaded (the event loop's).
 */
#ifndef PRISM_LBCACHE_H
#define PRISM_LBCACHE_H
#include <jansson.h>

#include "store.h"

#define LBCACHE_SLOTS 8
#define LBCACHE_CHEAP_S 0.05
#define LBCACHE_DUTY 10.0
#define LBCACHE_MAX_AGE_S 10.0

typedef struct lbcache_entry {
    long long sweep_id;          /* 0: empty slot */
    double created_at;           /* the sweep's, part of the key */
    long long rev;               /* sweep_ranking.rev the answer was built at */
    double built_at, build_s;    /* util_now_s() at the build, and how long it took */
    double used_at;              /* last answered (LRU) */
    json_t *lb;                  /* owned: leaderboard_build's object */
} lbcache_entry;

typedef struct lbcache {
    lbcache_entry e[LBCACHE_SLOTS];
    unsigned long long hits, builds;   /* answers from an entry / built (for /metrics and the tests) */
    double (*clock)(void);             /* NULL: util_now_s; the tests' own clock otherwise */
    double cheap_s;                    /* 0: LBCACHE_CHEAP_S */
} lbcache;

/* The leaderboard of sweep_id, as leaderboard_build makes it: *out a NEW reference (the caller decrefs it and must
 * not change it: the cache keeps the same object). Returns 0; STORE_NOTFOUND for an unknown sweep, STORE_EIO on a
 * failed read or no memory (err says which); *out is NULL then and the cache is as it was. */
int lbcache_get(lbcache *c, store *st, long long sweep_id, json_t **out, char *err, size_t errlen);

/* Frees every entry; c is usable after, its counters, clock and cheap_s kept (a failed COMMIT drops the entries
 * built in its transaction: api_flush). */
void lbcache_release(lbcache *c);

#endif
