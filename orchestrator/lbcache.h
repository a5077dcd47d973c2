/* lbcache.h — the server's last leaderboard per sweep, answered again while nothing it shows has changed.
 *
 * GET /api/v1/sweeps/{id}/leaderboard ranks every job and result of the sweep (leaderboard_build: O(sweep), 4.6M
 * VM steps at 100,000 jobs); the page polls it every 2 s. sql/015_ranking_rev.sql keeps sweep_ranking.rev, which
 * moves in the same statement as any change the leaderboard shows. lbcache_get reads the rev (one indexed read)
 * and answers the entry built at that rev; it builds again when:
 *   - the rev moved, and the entry is fresh enough to replace: its build took under LBCACHE_CHEAP_S, or it is at
 *     least LBCACHE_DUTY times its build time old (a sweep whose ranking takes 0.4 s is ranked at most every 4 s,
 *     so a fleet's completions cannot keep the event loop in the ranking more than 1/LBCACHE_DUTY of the time);
 *   - or the entry is LBCACHE_MAX_AGE_S old and LBCACHE_DUTY times its build time (the halving total of steps trained counts running jobs' steps, which
 *     heartbeats move without moving the rev).
 * The answer may thus lag the database by at most max(LBCACHE_MAX_AGE_S, LBCACHE_DUTY x build time) — never for
 * a sweep that ranks in under LBCACHE_CHEAP_S, which is always current (docs/API.md).
 *
 * Keyed by (sweep id, sweep created_at, rev): a deleted sweep's id given to a new sweep is another key.
 * Entries: LBCACHE_SLOTS sweeps, the least recently used replaced. Each holds the object and its JSON text
 * (JSON_COMPACT | JSONOUT_FLAGS), rendered once per build: a hit answers the bytes, not a json_dumps of every row.
 *
 * Off the loop (issue #44: a 100,000-job sweep ranks in ~2 s, and a rebuild on the event loop held every worker's
 * heartbeat that long): with `loop` set, an entry whose build took LBCACHE_ASYNC_S or more is rebuilt, when due, on
 * libuv's thread pool with a read-only connection of its own (db_path, one per build: a committed snapshot, its rev
 * read inside the same read transaction), and the loop answers the entry it has meanwhile. The new entry is
 * installed by the loop when the build ends (the poll after it answers it: an answer may lag one poll more). A
 * sweep ranked faster, or one with no entry yet, is built on the caller's thread as before. Without `loop` (the CLI, the unit tests) every build is the caller's. Otherwise single-threaded:
 * only the loop touches the entries.
 */
#ifndef PRISM_LBCACHE_H
#define PRISM_LBCACHE_H
#include <jansson.h>
#include <uv.h>

#include "blob.h"
#include "store.h"

#define LBCACHE_SLOTS 8
#define LBCACHE_CHEAP_S 0.05
#define LBCACHE_DUTY 10.0
#define LBCACHE_MAX_AGE_S 10.0
#define LBCACHE_ASYNC_S 0.2      /* a ranking at least this long is rebuilt off the loop (with `loop` set) */
#define LBCACHE_WARM_JOBS 5000   /* serve ranks the sweeps this large before it listens (lbcache_warm) */

typedef struct lbcache_entry {
    long long sweep_id;          /* 0: empty slot */
    double created_at;           /* the sweep's, part of the key */
    long long rev;               /* sweep_ranking.rev the answer was built at */
    double built_at, build_s;    /* util_now_s() at the build, and how long it took */
    double used_at;              /* last answered (LRU) */
    json_t *lb;                  /* owned: leaderboard_build's object */
    blob *text;                  /* a reference (the entry's): lb as the route's JSON body (NULL: render it); the
                                  * connections writing it hold theirs (http_response_set_shared) */
    int building;                /* a rebuild of this sweep is on the thread pool */
    unsigned long long gen;      /* the cache's build number that made it (its ETag's; 0: none) */
} lbcache_entry;

typedef struct lbcache {
    lbcache_entry e[LBCACHE_SLOTS];
    unsigned long long hits, builds;   /* answers from an entry / built (for /metrics and the tests) */
    double (*clock)(void);             /* NULL: util_now_s; the tests' own clock otherwise */
    double cheap_s;                    /* 0: LBCACHE_CHEAP_S */
    double async_s;                    /* 0: LBCACHE_ASYNC_S */
    uv_loop_t *loop;                   /* set: costly rebuilds on its thread pool; NULL: all on the caller's thread */
    char db_path[4096];                /* the database the pool's builds open (read-only): the served path */
    int inflight;                      /* builds on the pool not yet installed */
    unsigned long long async_builds, stale_hits;   /* built off the loop / answered while such a build ran */
    unsigned long long not_modified;   /* answers of 304: the client's If-None-Match named the entry (views.c) */
    unsigned long long nonce;          /* this process's part of every ETag (0 until the first): a restarted server's
                                        * build numbers start again, its tags do not match the old ones */
} lbcache;

/* The leaderboard of sweep_id, as leaderboard_build makes it: *out a NEW reference (the caller decrefs it and must
 * not change it: the cache keeps the same object). Returns 0; STORE_NOTFOUND for an unknown sweep, STORE_EIO on a
 * failed read or no memory (err says which); *out is NULL then and the cache is as it was. */
int lbcache_get(lbcache *c, store *st, long long sweep_id, json_t **out, char *err, size_t errlen);

/* Ranks, on the caller's thread, the LBCACHE_SLOTS most recent sweeps of at least min_jobs jobs (their counters:
 * sweep_counts) into the cache, so that their first poll finds an entry and every rebuild after it can run off the
 * loop: `prism-sweep serve` calls it before it listens (a 100,000-job sweep ranks in ~2 s, which the first poll
 * otherwise spent on the event loop). Returns how many were ranked, or a negative STORE_ code (err says which). */
int lbcache_warm(lbcache *c, store *st, long long min_jobs, char *err, size_t errlen);

/* The JSON text of the entry whose object is lb (what lbcache_get just gave); NULL when lb is no entry's (a sweep
 * that is not cached): the caller renders lb itself. Borrowed: valid until the next lbcache call; blob_ref it (as
 * http_response_set_shared does) to keep it longer. */
blob *lbcache_text(const lbcache *c, const json_t *lb);

/* The entity tag of the entry whose object is lb, quotes included ("lb-SWEEP-BUILD-NONCE"), into out: a new build
 * (a change, or an unchanged entry rebuilt for its age) is a new tag, so a client holding the tag holds these bytes.
 * Returns 0, or -1 when lb is no entry's or out is too small (the answer then goes without a tag). */
int lbcache_etag(lbcache *c, const json_t *lb, char *out, size_t n);

/* Frees every entry; c is usable after, its counters, clock, cheap_s, loop and db_path kept (a failed COMMIT drops
 * the entries built in its transaction: api_flush). A build still on the pool installs its entry when it ends (it
 * read committed data). */
void lbcache_release(lbcache *c);

#endif
