/* api.h — the orchestrator's HTTP/JSON API (docs/API.md): routing, auth, JSON handlers, group commit
 * (read views in views.h, static files in static.h, /healthz and /metrics in metrics.h).
 *
 * api_handle() is an http_handler_fn: it routes one request, checks its token, parses its JSON (size and
 * depth capped), calls the queue/sweeps/leaderboard modules and fills the response. Every write runs in a
 * SAVEPOINT inside one open transaction shared by all requests handled since the last api_flush(); the
 * server calls api_flush() (COMMIT) before it writes any answer, so a 2xx is only ever sent for committed
 * work. A failed request rolls back to its savepoint and leaves the others' work intact.
 *
 * Ownership: the api borrows the store (the caller closes it after api_release) and owns its queue.
 */
#ifndef PRISM_API_H
#define PRISM_API_H
#include "auth.h"
#include "http.h"
#include "metrics.h"
#include "queue.h"
#include "store.h"
#include "views.h"

#define API_MAX_JSON_DEPTH 32
#define API_MAX_SPEC_BODY (1 << 20)   /* POST /api/v1/sweeps: bytes of spec (larger: 413) */
#define API_MAX_CREATE_JOBS 5000      /* POST /api/v1/sweeps: jobs one request may create (the loop waits for it) */
#define API_MAX_DEVICES 256            /* POST /api/v1/workers/register: devices entries (stored per worker, served by GET /workers) */
#define API_MAX_DEVICE_NAME 128        /* ... and characters of each device name */

typedef struct api_config {
    double lease_ttl;          /* seconds (--lease-ttl) */
    int max_attempts;          /* --max-attempts */
    int max_preemptions;       /* --max-preemptions: preempted attempts a job may have (not counted in max_attempts);
                                * 0 (a zeroed config's): queue.h's default; < 0: none (--max-preemptions 0) */
    int worker_fail_limit;     /* --worker-fail-limit: no leases to a worker after this many failures in a row; 0 = off */
    int public_read;           /* 1: GET /api/v1/... needs no token (loopback or --public-read) */
    const char *web_dir;       /* static files root (--web), may be NULL */
    const char *vendor_dir;    /* Chart.js folder, default /usr/share/javascript/chart.js */
} api_config;

typedef struct api {
    store *st;                 /* borrowed */
    queue q;                   /* owned */
    auth_tokens tokens;
    api_config cfg;
    char web_real[4096];       /* realpath of web_dir, "" when none */
    int txn_open;              /* BEGIN IMMEDIATE issued, COMMIT pending */
    int txn_wrote;             /* a request's savepoint in the open transaction kept changed rows */
    long long sp_changes0;     /* sqlite3_total_changes64 when the current savepoint began */
    int stopping;
    unsigned long long commits, commit_failures;
    metrics_state metrics;     /* metrics.c's: request counters, latency histogram, last write error */
    views_state views;         /* views.c's: the ETA's rate samples */
    /* Appended to GET /metrics when set (the program's own gauges: connections, checkpoints). */
    void (*metrics_extra)(void *ud, buf *out);
    void *metrics_extra_ud;
    sqlite3_stmt *sp_stmt[3];  /* SAVEPOINT req, RELEASE req, ROLLBACK TO req: prepared once, owned */
    int route;                 /* the index of the route being handled in api.c's table, -1 none (metrics_route_cost) */
    store_cost last_cost;      /* what the last request handled cost (VM steps, rows written), its COMMIT aside */
} api;

/* One routed request as the router hands it to a handler: api.c's write handlers, views.c, static.c and
 * metrics.c. Valid only during the call; the handler answers res and keeps nothing. */
typedef struct api_ctx {
    api *a;
    http_request *req;
    http_response *res;
    long long id;              /* the "#" segment, when the route's pattern has one */
    const char *seg[8];
    int nseg;
    json_t *body;              /* parsed body of POST routes (owned, freed by the router) */
} api_ctx;

/* Answers status with o compact JSON (steals o; 500 "out of memory" when it cannot be dumped), not cached. */
void api_reply_json(http_response *res, int status, json_t *o);
/* Answers a negative STORE_E* code: ENOTFOUND 404, ECONFLICT 409 ({error, state} when state is non-empty),
 * EINVAL 400, else 500; msg (or "database error") is the error. A STORE_EIO on a POST is remembered for
 * /healthz as a failed write. */
void api_reply_store_error(api_ctx *c, int rc, const char *msg, const char *state);

/* Returns 0, or -1 with a message in err. */
int api_init(api *a, store *st, const auth_tokens *tokens, const api_config *cfg, char *err, size_t errlen);
void api_release(api *a);        /* commits nothing: call api_flush first */

void api_handle(void *ud, http_request *req, http_response *res);   /* ud = api* */
int api_flush(void *ud);         /* COMMIT the open transaction; 0 or < 0 (rolled back) */
/* Expires stale leases inside the shared transaction. Returns how many expired, or < 0. */
int api_expire(api *a);
/* Whether the database takes a write now: BEGIN IMMEDIATE, a write, COMMIT (a real fsync). Returns 0, or
 * -1 with the database's error in err (read-only file, full disk, I/O error). */
int api_probe_write(store *st, char *err, size_t errlen);
#endif
