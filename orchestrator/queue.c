/* queue.c — leases and job state transitions as prepared SQL on the store.
 *
 * Design: every transition is one guarded UPDATE (WHERE state = ... AND lease_token = ...) preceded by a
 * read of the row, so the answer (ok / 409 / 404) comes from the same transaction that changes it. The
 * server is single-threaded and serialises requests, and the caller's transaction makes each call atomic.
 * Statements are prepared once (SQLITE_PREPARE_PERSISTENT) into q->stmt[] by index and reset on each use.
 *
 * Lease order: ORDER BY priority DESC, seed_index, is_baseline DESC, schedule ord, id over queued jobs of
 * active sweeps: every schedule's first seed before any second seed, the uniform baseline first at each seed.
 * The jobs_queue index is that order (jobs.lease_ord stands for the schedule's is_baseline and ord): the pick reads
 * from the first queued job on and stops at the first one a worker can take, whatever the sweep's size. The
 * sweep's progress (the heartbeat's answer) is read from sweep_counts, kept by triggers (sql/010_sweep_counts.sql).
 * Steps and tokens per step are the jobs' columns (the job model's, common/jobmodel.h, filled at create).
 * A metrics batch's rows go in as one multi-row INSERT (up to QUEUE_METRIC_ROWS), and a leased job's progress moves
 * its change cursor (jobs.rev) at most once per rev_every_s (sql/021_rev_coalesce.sql): both per-request costs of the
 * fleet's most frequent route (issue #39, docs/PERF.md).
 *
 * The statements themselves, by S_* index, are queue_sql.c's table (queue_sql.h). Every transition shares the
 * statement cache S(), the lease check (lease_read, renew_row) and the error helpers, which stay here.
 */
#include "queue.h"
#include "job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "jsonout.h"
#include "lease.h"
#include "jobresult.h"
#include "point.h"
#include "result_check.h"
#include "schedule.h"
#include "util.h"
#include "jobstate.h"

#include "queue_sql.h"

_Static_assert(S_COUNT <= QUEUE_NSTMT, "QUEUE_NSTMT too small");


/* 1 when a jobs.state value read from the table is state (jobstate.h's name for it). */
int queue_is_state(const char *value, job_state state) {
    return value && strcmp(value, jobstate_name(state)) == 0;
}



void queue_init(queue *q, store *st, double lease_ttl, int max_attempts) {
    memset(q, 0, sizeof *q);
    q->max_preemptions = QUEUE_DEFAULT_MAX_PREEMPTIONS;
    q->clock_wall0 = store_now();
    q->clock_mono0 = util_now_s();
    q->st = st;
    q->lease_ttl = lease_ttl;
    q->max_attempts = max_attempts;
    q->rev_every_s = QUEUE_DEFAULT_REV_EVERY_S;
}

void queue_release(queue *q) {
    for (int i = 0; i < QUEUE_NSTMT; i++) {
        sqlite3_finalize(q->stmt[i]);
        q->stmt[i] = NULL;
    }
    for (int i = 0; i <= QUEUE_METRIC_ROWS; i++) {
        sqlite3_finalize(q->metric_rows[i]);
        q->metric_rows[i] = NULL;
    }
    free(q->rev_moved);
    q->rev_moved = NULL;
}

double queue_clock(const queue *q) {
    return q->clock_wall0 + (util_now_s() - q->clock_mono0);
}

/* The cached statement i, reset and unbound; NULL on a prepare error (q->err set). */
sqlite3_stmt *queue_stmt(queue *q, int i) {
    sqlite3_stmt *s = q->stmt[i];
    if (s) {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        return s;
    }
    if (sqlite3_prepare_v3(q->st->db, queue_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
        snprintf(q->err, sizeof q->err, "prepare: %s", sqlite3_errmsg(q->st->db));
        return NULL;
    }
    q->stmt[i] = s;
    return s;
}

int queue_fail_db(queue *q, const char *what) {
    snprintf(q->err, sizeof q->err, "%s: %s", what, sqlite3_errmsg(q->st->db));
    return STORE_EIO;
}

/* Steps a statement that returns no rows. */
int queue_run(queue *q, sqlite3_stmt *s, const char *what) {
    if (!s) return STORE_EIO;
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return queue_fail_db(q, what);
    return STORE_OK;
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v) {
    if (v) sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(s, i);
}

static void utf8_cut_tail(char *s);

/* ---- leases -------------------------------------------------------------------------------------- */

int queue_lease(queue *q, long long worker_id, const char *device, json_t **out) {
    return queue_lease_for(q, worker_id, device, NULL, out);
}

/* The trainer names of f as the JSON array text ?2 of S_LEASE_PICK binds ("[]" for none). NULL on OOM. */
static char *lease_names_text(const lease_filter *f) {
    json_t *a = json_array();
    for (int i = 0; a && f && i < f->ntrainers; i++) json_array_append_new(a, json_string(f->names[i]));
    char *t = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return t;
}

int queue_lease_for(queue *q, long long worker_id, const char *device, const lease_filter *f, json_t **out) {
    *out = NULL;
    double now = store_now();
    sqlite3_stmt *s = queue_stmt(q, S_WORKER_EXISTS);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, worker_id);
    sqlite3_bind_double(s, 2, now);
    int rc = queue_run(q, s, "worker seen");
    if (rc < 0) return rc;
    if (sqlite3_changes(q->st->db) == 0) {
        snprintf(q->err, sizeof q->err, "no worker %lld: register first (POST /api/v1/workers/register)", worker_id);
        return STORE_ENOTFOUND;
    }
    if (!(s = queue_stmt(q, S_WORKER_STOPPED))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, worker_id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        snprintf(q->err, sizeof q->err, "worker %lld gets no more leases: %.400s; fix the worker, then start it again "
                 "(registering again lifts this)", worker_id, (const char *)sqlite3_column_text(s, 0));
        snprintf(q->state, sizeof q->state, "stopped");
        sqlite3_reset(s);
        return STORE_ECONFLICT;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return queue_fail_db(q, "worker stopped");
    if (!(s = queue_stmt(q, S_LEASE_PICK))) return STORE_EIO;
    char *names = lease_names_text(f);
    if (!names) { snprintf(q->err, sizeof q->err, "out of memory"); return STORE_EIO; }
    sqlite3_bind_int(s, 1, f ? f->builtin != 0 : 1);
    sqlite3_bind_text(s, 2, names, -1, free);
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) { sqlite3_reset(s); return QUEUE_EMPTY; }
    if (rc != SQLITE_ROW) { sqlite3_reset(s); return queue_fail_db(q, "lease pick"); }
    long long job = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);

    char token[65];
    if (auth_random_hex(token, 24) < 0) { snprintf(q->err, sizeof q->err, "getrandom failed"); return STORE_EIO; }
    double expires = queue_clock(q) + q->lease_ttl;
    if (!(s = queue_stmt(q, S_LEASE_TAKE))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_text(s, 2, token, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 3, expires);
    sqlite3_bind_int64(s, 4, worker_id);
    bind_text_or_null(s, 5, device);
    sqlite3_bind_double(s, 6, now);
    if ((rc = queue_run(q, s, "lease")) < 0) return rc;

    if (!(s = queue_stmt(q, S_LEASE_ROW))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    if (sqlite3_step(s) != SQLITE_ROW) { sqlite3_reset(s); return queue_fail_db(q, "lease row"); }
    json_error_t jerr;
    json_t *jobj = json_loads((const char *)sqlite3_column_text(s, 5), 0, &jerr);
    if (!jobj) {
        snprintf(q->err, sizeof q->err, "job %lld has invalid job JSON in the database: %s", job, jerr.text);
        sqlite3_reset(s);
        return STORE_EIO;
    }
    lease l;
    lease_init(&l);
    l.job_id = job;
    l.attempt = (int)sqlite3_column_int64(s, 0);
    snprintf(l.token, sizeof l.token, "%s", token);
    l.expires_at = expires;
    l.ttl_s = q->lease_ttl;
    l.sweep_id = sqlite3_column_int64(s, 1);
    l.schedule_id = sqlite3_column_int64(s, 2);
    l.seed = sqlite3_column_int64(s, 3);
    l.heads = schedule_heads_json((const char *)sqlite3_column_text(s, 4));
    l.job = jobj;                   /* the lease owns it now */
    if (sqlite3_column_type(s, 6) != SQLITE_NULL) {
        l.has_resume = 1;
        snprintf(l.resume_checkpoint, sizeof l.resume_checkpoint, "%s", (const char *)sqlite3_column_text(s, 6));
        l.resume_step = sqlite3_column_int64(s, 7);
    }
    if (sqlite3_column_type(s, 8) != SQLITE_NULL)   /* successive halving: train to this rung's step, then report it */
        l.stop_at_step = (int)sqlite3_column_int64(s, 8);
    sqlite3_reset(s);
    /* the sweep's progress for the worker's display, current at the lease (its counters: O(1)) */
    if (queue_sweep_progress(q, job, &l.sweep_done, &l.sweep_jobs) < 0) { lease_release(&l); return STORE_EIO; }
    json_t *o = lease_to_json(&l);
    if (!o) { lease_release(&l); snprintf(q->err, sizeof q->err, "out of memory"); return STORE_EIO; }
    lease_release(&l);              /* o holds its own reference to the job JSON */
    if ((s = queue_stmt(q, S_WORKER_SEEN))) {
        sqlite3_bind_int64(s, 1, job);
        sqlite3_bind_double(s, 2, now);
        if ((rc = queue_run(q, s, "worker seen")) < 0) { json_decref(o); return rc; }
    }
    q->leases_granted++;
    *out = o;
    return QUEUE_OK;
}

typedef struct lease_row {
    char state[16];
    int token_ok;
    long long attempt, attempt_base;
    long long worker_id;            /* 0 when NULL */
    long long steps;                /* the job's train.steps (jobs.steps, the job model's; 0 when unknown) */
    long long tokens_per_step;      /* B x T x grad_accum (jobs.tokens_per_step, the job model's; 0 when unknown) */
    double expires;                 /* lease_expires_at (0 when NULL) */
    long long stop_at_step;         /* halving: the lease trains to this rung's step; -1 when NULL (the full run) */
    long long preemptions;          /* jobs.preemptions: its attempts that ended preempted */
} lease_row;

/* Reads the job's lease state and whether token is its latest lease's. */
static int lease_read(queue *q, long long job, const char *token, lease_row *r) {
    sqlite3_stmt *s = queue_stmt(q, S_JOB_LEASE);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(s);
        snprintf(q->err, sizeof q->err, "no job %lld", job);
        return STORE_ENOTFOUND;
    }
    if (rc != SQLITE_ROW) { sqlite3_reset(s); return queue_fail_db(q, "read job"); }
    snprintf(r->state, sizeof r->state, "%s", (const char *)sqlite3_column_text(s, 0));
    const char *t = (const char *)sqlite3_column_text(s, 1);
    r->token_ok = t && token && auth_equal(t, token);
    r->attempt = sqlite3_column_int64(s, 2);
    r->attempt_base = sqlite3_column_int64(s, 3);
    r->worker_id = sqlite3_column_int64(s, 4);
    r->expires = sqlite3_column_double(s, 5);
    r->steps = sqlite3_column_int64(s, 6);
    r->tokens_per_step = sqlite3_column_int64(s, 7);
    r->stop_at_step = sqlite3_column_type(s, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 8);
    r->preemptions = sqlite3_column_int64(s, 9);
    sqlite3_reset(s);
    return STORE_OK;
}

/* The lease check every worker report makes (this file's routes and the rung report): STORE_OK when token_ok
 * (the request's token is the job's) and state is "leased"; else STORE_ECONFLICT with err naming the job, its
 * state and that the worker should stop working on it. Writes err only on a conflict. */
static int check_lease(long long job, const char *state, int token_ok, char *err, size_t errlen) {
    if (token_ok && queue_is_state(state, JOB_LEASED)) return STORE_OK;
    if (!token_ok)
        snprintf(err, errlen, "job %lld: this lease token is not the job's current lease (state %s): "
                 "the lease expired or the job was re-leased; stop working on it", job, state);
    else
        snprintf(err, errlen, "job %lld is %s: the lease is over; stop working on it", job, state);
    return STORE_ECONFLICT;
}

/* check_lease on a lease_row, the job's state kept in q->state on a conflict. */
static int lease_check(queue *q, long long job, const lease_row *r) {
    int rc = check_lease(job, r->state, r->token_ok, q->err, sizeof q->err);
    if (rc < 0) snprintf(q->state, sizeof q->state, "%s", r->state);
    return rc;
}

/* Requires a live lease (r, read by lease_read for the request's token); renews it. With lazy (metrics,
 * checkpoint), a lease with at least half its TTL left is left as it is: rewriting the job's row and its
 * jobs_lease index entry on every metrics batch was a third of the bytes each COMMIT wrote to the WAL under a
 * fleet (bench_fleet, docs/PERF.md), and heartbeats (every TTL/4) renew anyway. A heartbeat always renews.
 * The worker's last_seen_at is rewritten only when it is older than TTL/8 (the workers view counts a worker
 * alive for two TTLs), so a box's eight devices do not rewrite its row on every heartbeat. */
static int renew_row(queue *q, long long job, const lease_row *r, double *expires, int lazy) {
    int rc = lease_check(q, job, r);
    if (rc < 0) return rc;
    double now = store_now(), lnow = queue_clock(q);
    if (lazy && r->expires >= lnow + q->lease_ttl / 2 && r->expires <= lnow + q->lease_ttl) {
        *expires = r->expires;
        return STORE_OK;
    }
    *expires = lnow + q->lease_ttl;
    sqlite3_stmt *s = queue_stmt(q, S_RENEW);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_double(s, 2, *expires);
    sqlite3_bind_double(s, 3, now);
    if ((rc = queue_run(q, s, "renew")) < 0) return rc;
    if (!r->worker_id) return STORE_OK;
    if (!(s = queue_stmt(q, S_WORKER_SEEN_LAZY))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, r->worker_id);
    sqlite3_bind_double(s, 2, now);
    sqlite3_bind_double(s, 3, now - q->lease_ttl / 8);
    return queue_run(q, s, "worker seen");
}

/* 1 when a leased job's progress may move its change cursor now (sql/021_rev_coalesce.sql): the first time, or
 * rev_every_s after the last time; the slot is then taken. Without memory for the slots: always. */
static int rev_may_move(queue *q, long long job) {
    if (q->rev_every_s <= 0) return 1;
    if (!q->rev_moved && !(q->rev_moved = calloc(QUEUE_REV_SLOTS, sizeof *q->rev_moved))) return 1;
    struct queue_rev_slot *slot = &q->rev_moved[(unsigned long long)job % QUEUE_REV_SLOTS];
    double now = queue_clock(q);
    if (slot->job == job && now - slot->at < q->rev_every_s) return 0;
    slot->job = job;
    slot->at = now;
    return 1;
}

static int progress(queue *q, long long job, long long step, double loss) {
    sqlite3_stmt *s = queue_stmt(q, rev_may_move(q, job) ? S_PROGRESS : S_PROGRESS_QUIET);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int64(s, 2, step);
    if (isfinite(loss)) sqlite3_bind_double(s, 3, loss); else sqlite3_bind_null(s, 3);
    return queue_run(q, s, "progress");
}

int queue_heartbeat(queue *q, long long job, const char *token, long long step, double loss, double *expires) {
    lease_row r;
    int rc = lease_read(q, job, token, &r);
    if (rc < 0) return rc;
    if (step >= 0 && r.steps > 0 && step > r.steps) {
        snprintf(q->err, sizeof q->err, "step: %lld is past the job's train.steps %lld", step, r.steps);
        return STORE_EINVAL;
    }
    rc = renew_row(q, job, &r, expires, 0);
    if (rc < 0 || step < 0) return rc;
    return progress(q, job, step, loss);
}


static void bind_opt(sqlite3_stmt *s, int i, int has, double v) {
    if (has) sqlite3_bind_double(s, i, v);
    else sqlite3_bind_null(s, i);
}

/* Binds p's optional numbers (point.h's POINT_OPT_NUMS) to ?first onwards, in S_METRIC_INS's column order; a
 * train-only one is NULL on a val point, a val-only one on a train point. */
static void bind_opt_nums(sqlite3_stmt *s, int first, const metric_point *p, int val) {
#define METRIC_BIND(K, f, only) \
    bind_opt(s, first++, p->has_##f && (only) != (val ? POINT_TRAIN_ONLY : POINT_VAL_ONLY), p->f);
    POINT_OPT_NUMS(METRIC_BIND)
#undef METRIC_BIND
}

/* The metrics rows of a batch waiting for one multi-row INSERT (mrow_flush): a batch's rows cost one statement's
 * overhead (its cursors, its halt and reset: ~5,000 instructions a row as one INSERT each), not one each. */
typedef struct mrow_batch {
    long long job, attempt, tps, t;   /* every row's job, attempt, tokens per step, time (metrics.t) */
    struct { const metric_point *p; int val; } rows[QUEUE_METRIC_ROWS];
    int n;
} mrow_batch;

/* Binds one row (p's train row, or its val row when val) to ?first .. ?first + METRIC_ROW_ARGS - 1, in METRIC_COLS'
 * order. */
static void bind_metric_row(sqlite3_stmt *s, int first, const mrow_batch *b, const metric_point *p, int val) {
    sqlite3_bind_int64(s, first, b->job);
    sqlite3_bind_int64(s, first + 1, b->attempt);
    sqlite3_bind_int64(s, first + 2, p->step);
    sqlite3_bind_text(s, first + 3, val ? "val" : "train", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, first + 4, val ? p->val_loss : p->train_loss);
    if (b->tps > 0) sqlite3_bind_int64(s, first + 5, (p->step + (val ? 0 : 1)) * b->tps);
    else if (p->has_tokens) sqlite3_bind_int64(s, first + 5, p->tokens);
    else sqlite3_bind_null(s, first + 5);
    sqlite3_bind_int64(s, first + 6, b->t);
    bind_opt_nums(s, first + 7, p, val);
}

/* The INSERT of n rows (1: S_METRIC_INS), prepared once per n; NULL on a prepare error (q->err set). */
static sqlite3_stmt *mrow_stmt(queue *q, int n) {
    if (n == 1) return queue_stmt(q, S_METRIC_INS);
    sqlite3_stmt **s = &q->metric_rows[n];
    if (*s) {
        sqlite3_reset(*s);
        return *s;
    }
    char sql[64 * QUEUE_METRIC_ROWS + 256];
    int len = snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO metrics (" METRIC_COLS ") VALUES " METRIC_ROW);
    for (int i = 1; i < n; i++) len += snprintf(sql + len, sizeof sql - (size_t)len, ", " METRIC_ROW);
    if (sqlite3_prepare_v3(q->st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, s, NULL) != SQLITE_OK) {
        queue_fail_db(q, "prepare metrics insert");
        sqlite3_finalize(*s);
        *s = NULL;
    }
    return *s;
}

/* Inserts the waiting rows of b (INSERT OR IGNORE: a row already stored is a duplicate) and empties it. */
static int mrow_flush(queue *q, mrow_batch *b, int *accepted, int *duplicates) {
    if (!b->n) return STORE_OK;
    sqlite3_stmt *s = mrow_stmt(q, b->n);
    if (!s) return STORE_EIO;
    for (int i = 0; i < b->n; i++) bind_metric_row(s, 1 + i * METRIC_ROW_ARGS, b, b->rows[i].p, b->rows[i].val);
    int rc = queue_run(q, s, "insert metric");
    if (rc < 0) return rc;
    int stored = sqlite3_changes(q->st->db);
    *accepted += stored;
    *duplicates += b->n - stored;
    b->n = 0;
    return STORE_OK;
}

/* Inserts p's row that carries its extra (sql/016_metric_extras.sql), alone. */
static int mrow_insert_extra(queue *q, const mrow_batch *b, const metric_point *p, int val, int *accepted, int *duplicates) {
    sqlite3_stmt *s = queue_stmt(q, S_METRIC_INS_X);
    if (!s) return STORE_EIO;
    bind_metric_row(s, 1, b, p, val);
    char *ex = json_dumps(p->extra, JSON_COMPACT | JSONOUT_FLAGS);
    if (!ex) { snprintf(q->err, sizeof q->err, "out of memory"); return STORE_EIO; }
    sqlite3_bind_text(s, METRIC_ROW_ARGS + 1, ex, -1, free);
    int rc = queue_run(q, s, "insert metric");
    if (rc < 0) return rc;
    if (sqlite3_changes(q->st->db) > 0) (*accepted)++; else (*duplicates)++;
    return STORE_OK;
}

int queue_metrics(queue *q, long long job, const char *token, json_t *points, int *accepted, int *duplicates,
                  double *expires) {
    *accepted = *duplicates = 0;
    if (!json_is_array(points)) { snprintf(q->err, sizeof q->err, "points: must be an array"); return STORE_EINVAL; }
    size_t n = json_array_size(points);
    if (n > 10000) { snprintf(q->err, sizeof q->err, "points: at most 10000 per request (got %zu): send smaller batches", n); return STORE_EINVAL; }
    metric_point *pt = malloc((n ? n : 1) * sizeof *pt);   /* common/point.h parses each, naming points[i] */
    if (!pt) { snprintf(q->err, sizeof q->err, "out of memory"); return STORE_EIO; }
    int rc = STORE_OK;
    for (size_t i = 0; i < n; i++) {
        char where[32];
        snprintf(where, sizeof where, "points[%zu]", i);
        if (point_from_json(json_array_get(points, i), &pt[i], where, q->err, sizeof q->err) < 0) { rc = STORE_EINVAL; goto out; }
    }
    lease_row r;
    if ((rc = lease_read(q, job, token, &r)) < 0) goto out;
    for (size_t i = 0; r.steps > 0 && i < n; i++)
        if (pt[i].step > r.steps) {
            snprintf(q->err, sizeof q->err, "points[%zu].step: %lld is past the job's train.steps %lld", i, pt[i].step, r.steps);
            rc = STORE_EINVAL;
            goto out;
        }
    if ((rc = renew_row(q, job, &r, expires, 1)) < 0) goto out;
    mrow_batch b = { .job = job, .attempt = r.attempt, .tps = r.tokens_per_step, .t = (long long)store_now() };
    long long max_step = -1;
    double max_loss = NAN;
    for (size_t i = 0; i < n; i++) {
        const metric_point *p = &pt[i];
        for (int k = 0; k < 2; k++) {
            if (!(k ? p->has_val_loss : p->has_train_loss)) continue;
            /* a point's extra goes on its train row, or its val row when it has no train loss (sql/016) */
            if (p->extra && (k == 0 || !p->has_train_loss)) {
                if ((rc = mrow_flush(q, &b, accepted, duplicates)) < 0 || (rc = mrow_insert_extra(q, &b, p, k, accepted, duplicates)) < 0)
                    goto out;
            } else {
                b.rows[b.n].p = p;
                b.rows[b.n++].val = k;
                if (b.n == QUEUE_METRIC_ROWS && (rc = mrow_flush(q, &b, accepted, duplicates)) < 0) goto out;
            }
            if (!k && p->step >= max_step) { max_step = p->step; max_loss = p->train_loss; }
        }
    }
    if ((rc = mrow_flush(q, &b, accepted, duplicates)) < 0) goto out;
    q->points_stored += (unsigned long long)*accepted;
    rc = max_step >= 0 ? progress(q, job, max_step, max_loss) : STORE_OK;
out:
    free(pt);
    return rc;
}

/* A checkpoint path is only ever one a worker of this lease wrote: absolute and normalised (no ".", ".."
 * or empty component, no control character), in the attempt's own folder job-ID-aATTEMPT/, named
 * resume-STEP.bin or ckpt_STEP.bin for the reported step. Anything else would make the next worker read
 * (and, once superseded, remove) a file the job never wrote. Returns 0, or -1 with why set. */
static int checkpoint_path_ok(const char *path, long long job, long long attempt, long long step, char *why, size_t n) {
    if (path[0] != '/') { snprintf(why, n, "must be an absolute path"); return -1; }
    for (const char *p = path; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) { snprintf(why, n, "must not contain control characters"); return -1; }
    for (const char *p = path; *p;) {   /* every component after a '/' */
        const char *c = p + 1, *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) {
            snprintf(why, n, "must be normalised (no empty, \".\" or \"..\" component)");
            return -1;
        }
        if (!e) break;
        p = e;
    }
    const char *base = strrchr(path, '/') + 1;
    const char *dir_end = base - 1, *dir = dir_end;
    while (dir > path && dir[-1] != '/') dir--;
    char want_dir[64], want1[48], want2[48];
    snprintf(want_dir, sizeof want_dir, "job-%lld-a%lld", job, attempt);
    snprintf(want1, sizeof want1, "resume-%lld.bin", step);
    snprintf(want2, sizeof want2, "ckpt_%lld.bin", step);
    if ((size_t)(dir_end - dir) != strlen(want_dir) || strncmp(dir, want_dir, strlen(want_dir)) != 0 ||
        (strcmp(base, want1) != 0 && strcmp(base, want2) != 0)) {
        snprintf(why, n, "must be the worker's own checkpoint of this lease at this step, .../%s/%s (or %s)",
                 want_dir, want1, want2);
        return -1;
    }
    return 0;
}

int queue_checkpoint(queue *q, long long job, const char *token, const char *path, long long step, double *expires) {
    if (!path || !*path) { snprintf(q->err, sizeof q->err, "path: must be a non-empty string"); return STORE_EINVAL; }
    if (step < 0) { snprintf(q->err, sizeof q->err, "step: must be an integer >= 0"); return STORE_EINVAL; }
    lease_row r;
    int rc = lease_read(q, job, token, &r);
    if (rc < 0) return rc;
    if ((rc = lease_check(q, job, &r)) < 0) return rc;
    long long steps = r.steps;
    if (steps > 0 && step > steps) {
        snprintf(q->err, sizeof q->err, "step: %lld is past the job's train.steps %lld", step, steps);
        return STORE_EINVAL;
    }
    char why[256];
    if (checkpoint_path_ok(path, job, r.attempt, step, why, sizeof why) < 0) {
        snprintf(q->err, sizeof q->err, "path: %s", why);
        return STORE_EINVAL;
    }
    rc = renew_row(q, job, &r, expires, 1);
    if (rc < 0) return rc;
    sqlite3_stmt *s = queue_stmt(q, S_CKPT);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_text(s, 2, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, step);
    sqlite3_bind_double(s, 4, *expires);
    sqlite3_bind_double(s, 5, store_now());
    return queue_run(q, s, "checkpoint");
}

/* The result against its job's bounds (common/result_check.h): STORE_OK, or STORE_EINVAL with q->err. */
static int result_check_for_job(queue *q, long long job, const json_t *result) {
    sqlite3_stmt *s = queue_stmt(q, S_JOB_TEXT);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    if (sqlite3_step(s) != SQLITE_ROW) { sqlite3_reset(s); return queue_fail_db(q, "read job"); }
    result_limits lim;
    char e[400];
    int rc = result_load_limits((const char *)sqlite3_column_text(s, 0), &lim, e, sizeof e);
    sqlite3_reset(s);
    if (rc < 0) { snprintf(q->err, sizeof q->err, "job %lld: its job JSON does not parse: %s", job, e); return STORE_EIO; }
    if (result_check(result, &lim, q->err, sizeof q->err) < 0) return STORE_EINVAL;
    return STORE_OK;
}

int queue_complete(queue *q, long long job, const char *token, json_t *result) {
    if (!json_is_object(result)) { snprintf(q->err, sizeof q->err, "result: must be an object (result.json)"); return STORE_EINVAL; }
    lease_row r;
    int rc = lease_read(q, job, token, &r);
    if (rc < 0) return rc;
    if (r.token_ok && queue_is_state(r.state, JOB_DONE)) return STORE_OK;   /* same token again: idempotent */
    if ((rc = lease_check(q, job, &r)) < 0) return rc;
    if (r.stop_at_step >= 0) {   /* a lease to a halving rung ends only in the rung report */
        snprintf(q->state, sizeof q->state, "%s", r.state);
        snprintf(q->err, sizeof q->err, "job %lld is leased to stop at step %lld (a halving rung), not to run to train.steps "
                 "%lld: report the rung with POST /api/v1/jobs/%lld/rung {lease_token, step: %lld, val_loss}",
                 job, r.stop_at_step, r.steps, job, r.stop_at_step);
        return STORE_ECONFLICT;
    }
    if ((rc = result_check_for_job(q, job, result)) < 0) return rc;
    jobresult_cols col;   /* common/jobresult.h: the stored columns (checked above, so val_loss is there) */
    if (jobresult_columns(result, &col) < 0) { snprintf(q->err, sizeof q->err, "result.val_loss: required, a number"); return STORE_EINVAL; }
    double now = store_now();
    char *text = json_dumps(result, JSON_COMPACT);
    char *adtext = col.attn_distance ? json_dumps(col.attn_distance, JSON_COMPACT) : NULL;
    sqlite3_stmt *s = queue_stmt(q, S_RESULT_INS);
    if (!s || !text) { free(text); free(adtext); return STORE_EIO; }
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int64(s, 2, r.attempt);
    sqlite3_bind_double(s, 3, col.val_loss);
    bind_opt(s, 4, col.has_tok_per_s, col.tok_per_s);
    bind_opt(s, 5, col.has_wall_s, col.wall_s);
    if (col.has_params) sqlite3_bind_int64(s, 6, col.params); else sqlite3_bind_null(s, 6);
    bind_opt(s, 7, col.has_flops_per_token, col.flops_per_token);
    bind_text_or_null(s, 8, adtext);
    sqlite3_bind_text(s, 9, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 10, now);
    bind_opt(s, 11, col.has_setup_s, col.setup_s);
    bind_text_or_null(s, 12, col.trainer_command);
    bind_text_or_null(s, 13, col.trainer_version);
    rc = queue_run(q, s, "insert result");
    free(text);
    free(adtext);
    if (rc < 0) return rc;
    if (!(s = queue_stmt(q, S_DONE))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_double(s, 2, now);
    if ((rc = queue_run(q, s, "complete")) < 0) return rc;
    q->jobs_completed++;
    return queue_worker_succeeded(q, job);
}

int queue_sweep_progress(queue *q, long long job, long long *done, long long *total) {
    *done = *total = 0;
    sqlite3_stmt *s = queue_stmt(q, S_SWEEP_PROGRESS);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) { *done = sqlite3_column_int64(s, 0); *total = sqlite3_column_int64(s, 1); }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? STORE_OK : queue_fail_db(q, "sweep progress");
}

int queue_worker_succeeded(queue *q, long long job) {
    sqlite3_stmt *s = queue_stmt(q, S_WORKER_OK);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    return queue_run(q, s, "worker streak");
}

/* A job of worker `worker` failed without retry: one more in its streak; at the limit the worker is stopped. */
static int worker_failed(queue *q, long long worker, const char *error) {
    if (worker <= 0) return STORE_OK;
    sqlite3_stmt *s = queue_stmt(q, S_WORKER_FAILED);
    if (!s) return STORE_EIO;
    char why[700];   /* a printf() format for SQLite: %d is the streak, any other % of the error is doubled */
    size_t k = (size_t)snprintf(why, sizeof why, "it failed %%d jobs in a row without retry (--worker-fail-limit %d); "
                                "the last: ", q->worker_fail_limit);
    for (const char *e = error ? error : ""; *e && k + 3 < sizeof why && k < 560; e++) {
        if (*e == '%') why[k++] = '%';
        why[k++] = *e;
    }
    why[k] = 0;
    utf8_cut_tail(why);
    sqlite3_bind_int64(s, 1, worker);
    sqlite3_bind_int(s, 2, q->worker_fail_limit);
    sqlite3_bind_text(s, 3, why, -1, SQLITE_TRANSIENT);
    return queue_run(q, s, "worker streak");
}

/* Drops a UTF-8 sequence left incomplete at the end of s by a truncating snprintf (jansson refuses
 * invalid UTF-8, so the text would vanish from every JSON view). */
static void utf8_cut_tail(char *s) {
    size_t n = strlen(s), i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    if (i == 0) return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (i - 1) < need) s[i - 1] = 0;
}

/* A preempted attempt: queued again without using an attempt, or failed once --max-preemptions is used up. */
static int fail_preempted(queue *q, long long job, const lease_row *r, const char *msg, const char **new_state) {
    int again = r->preemptions + 1 <= q->max_preemptions;
    char text[2048];
    if (again) snprintf(text, sizeof text, "%s", msg);
    else snprintf(text, sizeof text, "preempted %lld times and --max-preemptions %d is used up; last: %s",
                  r->preemptions + 1, q->max_preemptions, msg);
    utf8_cut_tail(text);
    sqlite3_stmt *s = queue_stmt(q, again ? S_PREEMPT_Q : S_PREEMPT_F);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_text(s, 2, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 3, store_now());
    int rc = queue_run(q, s, "preempted");
    if (rc < 0) return rc;
    *new_state = jobstate_name(again ? JOB_QUEUED : JOB_FAILED);
    if (!again) q->jobs_failed++;
    return STORE_OK;
}

int queue_fail(queue *q, long long job, const char *token, const char *error, int flags, const char **new_state) {
    lease_row r;
    int rc = lease_read(q, job, token, &r);
    if (rc < 0) return rc;
    if (r.token_ok && (queue_is_state(r.state, JOB_FAILED) || queue_is_state(r.state, JOB_QUEUED))) {
        *new_state = jobstate_name(queue_is_state(r.state, JOB_FAILED) ? JOB_FAILED : JOB_QUEUED);   /* repeated: idempotent */
        return STORE_OK;
    }
    if ((rc = lease_check(q, job, &r)) < 0) return rc;
    int retryable = (flags & QUEUE_FAIL_RETRYABLE) != 0;
    char msg[2048];                     /* the stored error is capped, cut on a character boundary */
    snprintf(msg, sizeof msg, "%s", error ? error : "");
    utf8_cut_tail(msg);
    /* a worker before the flag says so in its text only (worker/agent.c: "preempted: worker ... got a stop signal") */
    if (retryable && ((flags & QUEUE_FAIL_PREEMPTED) || !strncmp(msg, "preempted:", 10)))
        return fail_preempted(q, job, &r, msg, new_state);
    int again = retryable && (r.attempt - r.attempt_base) < q->max_attempts;
    sqlite3_stmt *s = queue_stmt(q, again ? S_REQUEUE_FAIL : S_FAIL);
    if (!s) return STORE_EIO;
    double now = store_now();
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_text(s, 2, msg, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 3, retryable ? 1 : 0);
    sqlite3_bind_double(s, 4, now);
    if ((rc = queue_run(q, s, "fail")) < 0) return rc;
    /* a divergence or a non-finite loss is the job's outcome, not the worker's fault (common/result_check.h): the
     * job trained, which clears the worker's streak as a completed one does; any other failure without retry counts */
    if (!retryable && result_error_is_outcome(msg)) { if ((rc = queue_worker_succeeded(q, job)) < 0) return rc; }
    else if (!retryable && (rc = worker_failed(q, r.worker_id, msg)) < 0) return rc;
    *new_state = jobstate_name(again ? JOB_QUEUED : JOB_FAILED);
    if (!again) q->jobs_failed++;
    return STORE_OK;
}

int queue_expire(queue *q, double now, int *n) {
    *n = 0;
    sqlite3_stmt *s = queue_stmt(q, S_EXPIRED);
    if (!s) return STORE_EIO;
    sqlite3_bind_double(s, 1, now);
    /* collect first: the updates below must not run under an open cursor on the same rows */
    struct { long long id, attempt, base; char err[400]; } ex[256];
    int k = 0, rc;
    while (k < 256 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        ex[k].id = sqlite3_column_int64(s, 0);
        ex[k].attempt = sqlite3_column_int64(s, 1);
        ex[k].base = sqlite3_column_int64(s, 2);
        const char *e = (const char *)sqlite3_column_text(s, 3);
        snprintf(ex[k].err, sizeof ex[k].err, "%s", e ? e : "");
        utf8_cut_tail(ex[k].err);
        k++;
    }
    sqlite3_reset(s);
    for (int i = 0; i < k; i++) {
        int give_up = ex[i].attempt - ex[i].base >= q->max_attempts;
        char msg[600];
        if (give_up)
            snprintf(msg, sizeof msg, "lease of attempt %lld expired (no heartbeat within %.0f s) and --max-attempts %d is "
                     "used up%s%s", ex[i].attempt, q->lease_ttl, q->max_attempts, ex[i].err[0] ? "; last error: " : "", ex[i].err);
        else
            snprintf(msg, sizeof msg, "lease of attempt %lld expired (no heartbeat within %.0f s)%s%s", ex[i].attempt,
                     q->lease_ttl, ex[i].err[0] ? "; last error: " : "", ex[i].err);
        utf8_cut_tail(msg);
        if (!(s = queue_stmt(q, give_up ? S_EXPIRE_F : S_EXPIRE_Q))) return STORE_EIO;
        sqlite3_bind_int64(s, 1, ex[i].id);
        sqlite3_bind_text(s, 2, msg, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(s, 3, now);
        if ((rc = queue_run(q, s, "expire")) < 0) return rc;
        if (give_up) q->jobs_failed++;
    }
    q->leases_expired += (unsigned long long)k;
    *n = k;
    return STORE_OK;
}

int queue_grace(queue *q, double now, int *n) {
    *n = 0;
    sqlite3_stmt *s = queue_stmt(q, S_GRACE);
    if (!s) return STORE_EIO;
    sqlite3_bind_double(s, 1, now + q->lease_ttl);
    int rc = queue_run(q, s, "grace");
    if (rc == STORE_OK) *n = sqlite3_changes(q->st->db);
    return rc;
}

/* ---- halving's transitions (orchestrator/halving.h decides when) ----------------------------------- */

int queue_rung_setup(queue *q, long long sweep, long long stop_at_step) {
    sqlite3_stmt *s = queue_stmt(q, S_RUNG_SETUP);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int64(s, 2, stop_at_step);
    return queue_run(q, s, "halving init");
}

/* The rung report's checks, in the order the worker can act on: the lease, then the step, the value, the
 * checkpoint. r is the S_RUNG_ROW row. */
static int rung_check(queue *q, long long job, sqlite3_stmt *r, int token_ok, long long step, double val_loss) {
    const char *state = (const char *)sqlite3_column_text(r, 0);
    if (check_lease(job, state, token_ok, q->err, sizeof q->err) < 0) {
        snprintf(q->state, sizeof q->state, "%s", state);
        return STORE_ECONFLICT;
    }
    if (sqlite3_column_type(r, 3) == SQLITE_NULL) {
        snprintf(q->err, sizeof q->err, "job %lld has no rung to stop at (its lease had no stop_at_step): report "
                 "complete instead", job);
        return STORE_EINVAL;
    }
    long long stop = sqlite3_column_int64(r, 3);
    if (step != stop) {
        snprintf(q->err, sizeof q->err, "step: %lld is not the job's stop_at_step %lld", step, stop);
        return STORE_EINVAL;
    }
    if (!isfinite(val_loss)) { snprintf(q->err, sizeof q->err, "val_loss: must be a finite number"); return STORE_EINVAL; }
    result_limits lim;
    char lerr[256];
    if (result_load_limits((const char *)sqlite3_column_text(r, 8), &lim, lerr, sizeof lerr) == 0 &&
        result_check_val_loss(&lim, "val_loss", val_loss, q->err, sizeof q->err) < 0)
        return STORE_EINVAL;
    if (sqlite3_column_type(r, 4) == SQLITE_NULL || sqlite3_column_int64(r, 4) != step) {
        snprintf(q->err, sizeof q->err, "checkpoint: report the rung's checkpoint first (POST /api/v1/jobs/%lld/checkpoint "
                 "with step %lld): a promoted job resumes from it", job, step);
        return STORE_EINVAL;
    }
    return STORE_OK;
}

int queue_rung_report(queue *q, long long job, const char *token, long long step, double val_loss, long long *sweep,
                      int *repeated) {
    *sweep = 0;
    *repeated = 0;
    sqlite3_stmt *r = queue_stmt(q, S_RUNG_ROW);
    if (!r) return STORE_EIO;
    sqlite3_bind_int64(r, 1, job);
    sqlite3_bind_int64(r, 2, step);
    int rc = sqlite3_step(r);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(r);
        snprintf(q->err, sizeof q->err, "no job %lld", job);
        return STORE_ENOTFOUND;
    }
    if (rc != SQLITE_ROW) { sqlite3_reset(r); return queue_fail_db(q, "rung report"); }
    const char *t = (const char *)sqlite3_column_text(r, 1);
    int token_ok = t && token && auth_equal(t, token);
    long long attempt = sqlite3_column_int64(r, 2);
    int rung = sqlite3_column_int(r, 5);
    *sweep = sqlite3_column_int64(r, 6);
    int reported = sqlite3_column_type(r, 7) != SQLITE_NULL && sqlite3_column_int64(r, 7) == attempt;
    int leased = queue_is_state((const char *)sqlite3_column_text(r, 0), JOB_LEASED);
    if (token_ok && !leased && reported) { sqlite3_reset(r); *repeated = 1; return STORE_OK; }   /* the same report again */
    rc = rung_check(q, job, r, token_ok, step, val_loss);
    sqlite3_reset(r);
    if (rc < 0) return rc;
    double now = store_now();
    sqlite3_stmt *s = queue_stmt(q, S_RUNG_RESULT);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int(s, 2, rung);
    sqlite3_bind_int64(s, 3, step);
    sqlite3_bind_int64(s, 4, attempt);
    sqlite3_bind_double(s, 5, val_loss);
    sqlite3_bind_double(s, 6, now);
    if ((rc = queue_run(q, s, "rung result")) < 0) return rc;
    if (!(s = queue_stmt(q, S_PAUSE))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int64(s, 2, step);
    sqlite3_bind_double(s, 3, now);
    return queue_run(q, s, "pause");
}

int queue_rung_decide(queue *q, long long sweep, int rung, long long schedule, int promoted, int position, double delta) {
    sqlite3_stmt *s = queue_stmt(q, S_RUNG_DECIDE);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, rung);
    sqlite3_bind_int64(s, 3, schedule);
    sqlite3_bind_int(s, 4, promoted != 0);
    if (position > 0) sqlite3_bind_int(s, 5, position); else sqlite3_bind_null(s, 5);
    bind_opt(s, 6, isfinite(delta), delta);
    sqlite3_bind_double(s, 7, store_now());
    return queue_run(q, s, "halving decision");
}

/* Runs promote (S_RUNG_PROMOTE) or prune (S_RUNG_PRUNE) over the rung; *n = jobs moved. */
static int rung_move(queue *q, int which, long long sweep, int rung, long long next_stop, int *n) {
    *n = 0;
    sqlite3_stmt *s = queue_stmt(q, which);
    if (!s) return STORE_EIO;
    double now = store_now();
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int(s, 2, rung);
    if (which == S_RUNG_PROMOTE) {
        if (next_stop >= 0) sqlite3_bind_int64(s, 3, next_stop); else sqlite3_bind_null(s, 3);
        sqlite3_bind_double(s, 4, now);
    } else {
        sqlite3_bind_double(s, 3, now);
    }
    int rc = queue_run(q, s, which == S_RUNG_PROMOTE ? "halving promote" : "halving prune");
    if (rc == STORE_OK) *n = sqlite3_changes(q->st->db);
    return rc;
}

int queue_rung_promote(queue *q, long long sweep, int rung, long long next_stop, int *n) {
    return rung_move(q, S_RUNG_PROMOTE, sweep, rung, next_stop, n);
}

int queue_rung_prune(queue *q, long long sweep, int rung, int *n) {
    return rung_move(q, S_RUNG_PRUNE, sweep, rung, -1, n);
}
