/* views.h — the API's read views: the GET routes under /api/v1/ (docs/API.md), each answering from SQL.
 *
 *   GET sweeps                 views_sweeps_list   {sweeps: [summary..], workers_alive, now}
 *   GET sweeps/{id}            views_sweep_get     one summary with its spec
 *   GET sweeps/{id}/jobs       views_sweep_jobs    a page: ?state= &limit= &after=ID (&offset=), or ?since=CURSOR &limit=
 *   GET sweeps/{id}/leaderboard views_leaderboard  ?format=json|csv
 *   GET jobs/{id}              views_job_get       the job row with its job JSON, checkpoint and result
 *   GET jobs/{id}/metrics      views_job_metrics   ?kind=val|train &since=STEP &limit=N &format=json|csv (a page)
 *   GET workers                views_workers       every worker with its live leases
 * A sweep summary is sweeps_summary()'s (orchestrator/sweeps.h), the one `prism-sweep status` prints.
 *
 * Contract: a view answers c->res completely — 200 with JSON (or CSV), 400 naming a bad query parameter, 404
 * for an unknown id, 500 naming the database error when a read fails (never fewer rows). Views only read
 * (the ETA's rate samples aside); they own nothing after returning.
 *
 * State: views_state is this module's own: per sweep (VIEWS_RATE_SLOTS sweeps at a time, a slot reused by
 * sweep id modulo), up to VIEWS_RATE_SAMPLES samples of (time, steps done) since its last resume, for the
 * steps/s and ETA of the summaries, and the last leaderboard of up to LBCACHE_SLOTS sweeps (lbcache.h: answered
 * again while the sweep's sweep_ranking.rev has not moved). The router's struct api holds one; only this module reads or writes it.
 * This header does not include api.h: no include circle.
 */
#ifndef PRISM_VIEWS_H
#define PRISM_VIEWS_H
#include <sqlite3.h>

#include "lbcache.h"

#define VIEWS_RATE_SLOTS 16     /* sweeps whose ETA samples are kept at once */
#define VIEWS_RATE_SAMPLES 128  /* samples per sweep */
/* The most a list route answers at once (issue #44: no request holds the event loop for the sweep's size): a jobs
 * page (?limit= above it is cut to it; "more" says there are others), the deepest ?offset= (past it, ?after=), and
 * a curve's page of points (?since= the answer's last_step goes on). */
#define VIEWS_JOBS_PAGE 1000
#define VIEWS_JOBS_OFFSET_MAX 5000
#define VIEWS_POINTS_PAGE 5000

typedef struct views_rate {     /* per-sweep progress samples for the ETA, since the sweep's last resume */
    long long sweep;
    int n, head;
    double resumed_at;          /* the last resume this server saw (0: none); samples start there */
    struct { double t; long long steps; } s[VIEWS_RATE_SAMPLES];
} views_rate;

typedef struct views_state {
    views_rate rates[VIEWS_RATE_SLOTS];
    lbcache lb;                 /* the last leaderboard per sweep (lbcache.h) */
} views_state;

typedef struct api api;           /* api.h */
typedef struct api_ctx api_ctx;

void views_sweeps_list(api_ctx *c);
void views_sweep_get(api_ctx *c);
void views_sweep_jobs(api_ctx *c);
void views_leaderboard(api_ctx *c);
void views_job_get(api_ctx *c);
void views_job_metrics(api_ctx *c);
void views_workers(api_ctx *c);

/* The sweep was resumed now: its ETA's rate restarts from here (samples before the resume, a pause's idle
 * time among them, no longer count). */
void views_rate_restart(views_state *v, long long sweep, double now);

/* Frees what views_state holds (the leaderboard cache); v is empty and usable after. */
void views_release(views_state *v);
/* Workers seen within two lease TTLs (0 when the read fails). */
int views_workers_alive(api *a);
/* sql prepared on the server's connection; NULL after answering c->res 500 naming the error. The caller
 * finalizes the statement. */
sqlite3_stmt *views_prepare(api_ctx *c, const char *sql);
#endif
