/* queue.h — the job queue on the SQLite store: leases, heartbeats, metrics, checkpoints, results, expiry,
 * and the admin operations (cancel, requeue, priority, pause/resume).
 *
 * Transactions: no function here opens one. The caller wraps each call in a transaction or a savepoint
 * (the API does SAVEPOINT per request inside its group-commit transaction) and rolls back to it when the
 * call returns < 0, so a failed call leaves nothing behind. Every statement is prepared once and cached.
 *
 * Lease tokens: jobs.lease_token keeps the token of the job's latest lease even after it ended, so that a
 * repeated complete/fail with that token is recognised (idempotent). A lease is live only while
 * state = 'leased' and the token matches.
 *
 * Returns: QUEUE_OK (0), QUEUE_EMPTY (1, lease only) or a negative STORE_E* code with q->err set:
 * STORE_ENOTFOUND (no such job/worker/sweep), STORE_ECONFLICT (stale token, wrong state; q->state holds the
 * job's state), STORE_EINVAL (bad argument; q->err names it), STORE_EIO (SQLite).
 */
#ifndef PRISM_QUEUE_H
#define PRISM_QUEUE_H
#include <jansson.h>
#include <sqlite3.h>

#include "jobstate.h"
#include "store.h"

struct lease_filter;   /* common/lease.h */

enum { QUEUE_OK = 0, QUEUE_EMPTY = 1 };

#define QUEUE_NSTMT 57
#define QUEUE_DEFAULT_MAX_PREEMPTIONS 100   /* serve --max-preemptions' default */
#define QUEUE_DEFAULT_REV_EVERY_S 10.0      /* queue_init's rev_every_s (sql/021_rev_coalesce.sql) */
#define QUEUE_METRIC_ROWS 16                /* rows of one metrics INSERT at most (queue_metrics) */
#define QUEUE_REV_SLOTS 65536               /* queue.rev_moved's slots, by job id mod: a collision moves a cursor sooner */

typedef struct queue {
    store *st;                          /* not owned */
    sqlite3_stmt *stmt[QUEUE_NSTMT];    /* owned, finalized by queue_release */
    double lease_ttl;                   /* seconds */
    double clock_wall0, clock_mono0;    /* the lease clock's origin (queue_clock) */
    int max_attempts;
    int max_preemptions;                /* a job's preempted attempts tolerated (queue_init: QUEUE_DEFAULT_MAX_PREEMPTIONS) */
    int worker_fail_limit;              /* a worker that fails this many jobs in a row without retry gets no more
                                         * leases until it registers again; 0 (queue_init's) = never */
    double rev_every_s;                 /* a leased job's progress (step, last loss) moves its change cursor (jobs.rev)
                                         * at most once per this many seconds (sql/021_rev_coalesce.sql); 0 = always */
    sqlite3_stmt *metric_rows[QUEUE_METRIC_ROWS + 1];   /* owned: [n] inserts n metrics rows at once (2..), prepared on use */
    struct queue_rev_slot { long long job; double at; } *rev_moved;   /* owned, QUEUE_REV_SLOTS: when a job's cursor last moved */
    char err[512];
    char state[16];                     /* job state on STORE_ECONFLICT */
    /* counters for /metrics (since start) */
    unsigned long long leases_granted, leases_expired, points_stored, jobs_completed, jobs_failed;
} queue;

void queue_init(queue *q, store *st, double lease_ttl, int max_attempts);

/* The lease clock: lease_expires_at is written and expiry compared on it. The wall clock read once at
 * queue_init plus the monotonic time since, so a step of the wall clock (NTP, an admin, a VM resumed) neither
 * expires a job that heartbeats nor keeps a dead lease alive while the process runs. Across a restart the
 * stored expiries are not trusted either: queue_grace gives every live lease exactly one TTL from the start. */
double queue_clock(const queue *q);
void queue_release(queue *q);

/* Registers a worker (same name+host → same id, devices and last_seen updated; its failure streak and a stop
 * for it are cleared). devices: JSON text. */
int queue_register(queue *q, const char *name, const char *host, const char *devices, long long *worker_id);

/* Leases the next job to worker_id. On QUEUE_OK *out is a new object {job_id, attempt, lease_token,
 * lease_expires_at, lease_ttl_s, sweep_id, schedule_id, seed, heads, job, resume?, stop_at_step?} the caller decrefs.
 * stop_at_step (halving sweeps): stop at this step and report the rung (orchestrator/halving.h). */
int queue_lease(queue *q, long long worker_id, const char *device, json_t **out);
/* queue_lease for a worker with the engines of f (common/lease.h: the built-in one or not, its external trainers):
 * only a job it can train is leased (a job's "trainer" must be one of f's names; a job without one needs
 * f->builtin). f NULL = the built-in engine only (what queue_lease leases). */
int queue_lease_for(queue *q, long long worker_id, const char *device, const struct lease_filter *f, json_t **out);
/* A worker stopped for its failures (worker_fail_limit) is not leased to: STORE_ECONFLICT, q->state "stopped",
 * q->err says why and how to lift it. */

/* The job's sweep: its jobs done and in all (what a worker shows as the sweep's progress). */
int queue_sweep_progress(queue *q, long long job, long long *done, long long *total);

/* Renews the lease; *expires = new expiry. step/loss < 0 / NAN are ignored. */
int queue_heartbeat(queue *q, long long job, const char *token, long long step, double loss, double *expires);

/* Stores points (array of metrics.jsonl rows), renewing the lease. The whole batch is validated first: on
 * STORE_EINVAL nothing is stored and q->err names the row (points[3].step: ...). */
int queue_metrics(queue *q, long long job, const char *token, json_t *points, int *accepted, int *duplicates,
                  double *expires);

int queue_checkpoint(queue *q, long long job, const char *token, const char *path, long long step, double *expires);

/* result: result.json (needs a numeric val_loss or final_val_loss; its steps, when given, must be the job's
 * train.steps). Idempotent for the same token. A lease that carries stop_at_step (a halving rung) is not
 * completed: STORE_ECONFLICT naming the rung route (only queue_rung_report ends such a lease). */
int queue_complete(queue *q, long long job, const char *token, json_t *result);

/* flags: QUEUE_FAIL_RETRYABLE (1, so a plain 0/1 "retryable" works), QUEUE_FAIL_PREEMPTED (with RETRYABLE; an
 * error starting "preempted:" counts as one too). *new_state: "queued" (retryable, attempts left) or "failed"
 * (static string). Idempotent for the token. error is stored cut to under 2 KiB on a UTF-8 character boundary.
 * A preempted attempt does not count against max_attempts: it adds one to jobs.preemptions and the job fails
 * (error naming --max-preemptions) when that passes max_preemptions. A fail without retry adds one to the
 * leasing worker's failure streak (workers.fail_streak); queue_complete and queue_worker_succeeded clear it. */
enum { QUEUE_FAIL_RETRYABLE = 1, QUEUE_FAIL_PREEMPTED = 2 };
int queue_fail(queue *q, long long job, const char *token, const char *error, int flags, const char **new_state);

/* Returns every lease expired at now (queue_clock) to queued (or failed after max_attempts). *n = how many. */
int queue_expire(queue *q, double now, int *n);

/* At server start (now: queue_clock): every live lease gets exactly one TTL from now. Workers that could not
 * reach a stopped server are not punished for its downtime, and an expiry stored before a wall-clock step
 * (either way) is not trusted: a lease an hour "in the future" after a -1 h step is cut to one TTL. *n = leases
 * whose expiry changed. */
int queue_grace(queue *q, double now, int *n);

/* ---- halving's transitions: orchestrator/halving.c decides when, these make them (halving.h has the life of a
 * halving job). Same transaction contract and codes as above. */

/* The sweep's jobs never leased (queued, attempt 0, no rung) go on rung 0, stopping at stop_at_step. */
int queue_rung_setup(queue *q, long long sweep, long long stop_at_step);

/* The worker's report at its rung (POST /api/v1/jobs/{id}/rung): the lease must be live (token), step the job's
 * stop_at_step, val_loss finite and within the job's result bounds, and the rung checkpoint at that step reported
 * first. Stores the rung result (rung_results) and pauses the job; *sweep = the job's sweep. The same report of
 * the same attempt again, once the lease ended: QUEUE_OK with *repeated = 1, changing nothing.
 * STORE_ENOTFOUND no job; STORE_ECONFLICT the lease is not live (q->state: the job's state; the message is the one
 * every report route gives); STORE_EINVAL (q->err names step, val_loss or checkpoint and the fix). */
int queue_rung_report(queue *q, long long job, const char *token, long long step, double val_loss, long long *sweep,
                      int *repeated);

/* Records one schedule's decision at rung (halving_decisions). A decision that exists is kept, so deciding twice
 * changes nothing. position: the schedule's 1-based place in the rung's ranking, 0 unranked; delta NAN unknown. */
int queue_rung_decide(queue *q, long long sweep, int rung, long long schedule, int promoted, int position, double delta);

/* The paused jobs at rung of the schedules promoted there go back to queued on rung + 1, stopping at next_stop
 * (< 0: the full run, no stop). *n = jobs moved. */
int queue_rung_promote(queue *q, long long sweep, int rung, long long next_stop, int *n);
/* The paused jobs at rung of the schedules not promoted there are pruned (terminal). *n = jobs moved. */
int queue_rung_prune(queue *q, long long sweep, int rung, int *n);

/* The job's state. STORE_ENOTFOUND no job. */
int queue_job_state(queue *q, long long job, job_state *state);

/* Admin. */
int queue_cancel(queue *q, long long job);
int queue_requeue(queue *q, long long job);
/* Requeues every job of `sweep` in `state` ("failed" or "cancelled") whose last_error contains error_like
 * (NULL or "": any), as queue_requeue does one; appends their ids to the array ids. One statement: the
 * caller's transaction makes it all or nothing. STORE_EINVAL for another state, STORE_ENOTFOUND no sweep. */
int queue_requeue_sweep(queue *q, long long sweep, const char *state, const char *error_like, json_t *ids);
/* The job's sweep. STORE_ENOTFOUND no job. */
int queue_job_sweep(queue *q, long long job, long long *sweep);
/* queue_requeue that also takes a done job the leaderboard's outlier screen leaves out (issue #37). screened: the
 * caller's verdict from the current ranking (ranking_build: ranking.screened), the screen's reason for this job, or
 * NULL when it is not screened. A done job with a reason: its results row moves to requeued_results (the old value,
 * attempt and time kept with the reason; the ranking reads results only, so nothing of it counts in the new run's
 * ranking), and the job is queued to train again from the start (no checkpoint, step 0; a halving job keeps its
 * rung, so halving's decisions stand). A done job without one: STORE_ECONFLICT, q->err names the rule and the fix.
 * Another state: as queue_requeue. Three statements: the caller's transaction makes them one. */
int queue_requeue_screened(queue *q, long long job, const char *screened);
/* The job's worker succeeded (a rung reached): its failure streak is cleared. */
int queue_worker_succeeded(queue *q, long long job);
int queue_set_priority(queue *q, long long job, long long priority);
int queue_sweep_set_state(queue *q, long long sweep, const char *state);   /* "active" | "paused" */
int queue_sweep_set_priority(queue *q, long long sweep, long long priority);

/* A new job row: the one INSERT INTO jobs of the tree (create's rows, sweeps.c; a racing round's, racing.c). */
typedef struct queue_new_job {
    long long sweep, schedule, seed;
    int seed_index, priority;
    const char *job;                      /* the job's JSON text (copied) */
    long long steps, tokens_per_step;     /* the job model's numbers (common/jobmodel.h) */
    int rung;                             /* halving's first rung; < 0: none (NULL) */
    double now;                           /* created_at = updated_at */
} queue_new_job;
/* Inserts j on st with *stmt (prepared on the first call when NULL; the caller finalizes it after its last row, so
 * a loop prepares once). A schedule's seed that already has a job adds nothing: *added = the rows added (1 or 0). Works
 * on the store, not a queue: create runs before any queue exists. STORE_EIO with st->err set. */
int queue_job_add(store *st, sqlite3_stmt **stmt, const queue_new_job *j, int *added);
/* Internal: queue.c's statement cache, for queue.c and queue_admin.c only (the statements are queue_sql.h's S_*).
 * queue_stmt(q, i): statement i, prepared once, reset and unbound; NULL with q->err on a prepare error.
 * queue_run(q, s, what): steps s (no rows expected): STORE_OK, or STORE_EIO with q->err "WHAT: ..." (s NULL: EIO).
 * queue_fail_db(q, what): q->err "WHAT: the database's message", returns STORE_EIO.
 * queue_is_state(value, state): 1 when a jobs.state value read from the table is state (jobstate.h's name). */
sqlite3_stmt *queue_stmt(queue *q, int i);
int queue_run(queue *q, sqlite3_stmt *s, const char *what);
int queue_fail_db(queue *q, const char *what);
int queue_is_state(const char *value, job_state state);
#endif
