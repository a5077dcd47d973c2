/* queue_admin.c — the queue's rows that are not a lease's transitions (queue.h): a worker registering, the
 * operator's changes (cancel, requeue, priority, a sweep's state) and new job rows (create's and racing's).
 *
 * Design: each is a read of the row and one statement of queue_sql.c's table, run through queue.c's statement
 * cache (queue_stmt, queue_run, queue_fail_db: queue.h's internal part), in the caller's transaction. Split from
 * queue.c along that seam: nothing here touches a lease, so the lease check and the metrics insert stay there.
 */
#include "queue.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jobstate.h"
#include "queue_sql.h"

/* ---- workers ------------------------------------------------------------------------------------- */

int queue_register(queue *q, const char *name, const char *host, const char *devices, long long *worker_id) {
    double now = store_now();
    sqlite3_stmt *s = queue_stmt(q, S_WORKER_FIND);
    if (!s) return STORE_EIO;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, host, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *worker_id = sqlite3_column_int64(s, 0);
        sqlite3_reset(s);
        sqlite3_stmt *u = queue_stmt(q, S_WORKER_UPD);
        if (!u) return STORE_EIO;
        sqlite3_bind_int64(u, 1, *worker_id);
        sqlite3_bind_text(u, 2, devices, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(u, 3, now);
        return queue_run(q, u, "update worker");
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return queue_fail_db(q, "find worker");
    sqlite3_stmt *in = queue_stmt(q, S_WORKER_INS);
    if (!in) return STORE_EIO;
    sqlite3_bind_text(in, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(in, 2, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(in, 3, devices, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(in, 4, now);
    if ((rc = queue_run(q, in, "insert worker")) < 0) return rc;
    *worker_id = sqlite3_last_insert_rowid(q->st->db);
    return STORE_OK;
}

static int sweep_exists(queue *q, long long sweep);

/* ---- admin --------------------------------------------------------------------------------------- */

static int read_job_state(queue *q, long long job, char state[16]) {
    sqlite3_stmt *s = queue_stmt(q, S_JOB_STATE);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) snprintf(state, 16, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) { snprintf(q->err, sizeof q->err, "no job %lld", job); return STORE_ENOTFOUND; }
    if (rc != SQLITE_ROW) return queue_fail_db(q, "job state");
    return STORE_OK;
}

int queue_job_state(queue *q, long long job, job_state *state) {
    char st[16];
    int rc = read_job_state(q, job, st);
    if (rc < 0) return rc;
    if (jobstate_parse(st, state) < 0) {
        snprintf(q->err, sizeof q->err, "job %lld: unknown state \"%s\" in the store", job, st);
        return STORE_EIO;
    }
    return STORE_OK;
}

int queue_cancel(queue *q, long long job) {
    char st[16];
    int rc = read_job_state(q, job, st);
    if (rc < 0) return rc;
    if (queue_is_state(st, JOB_CANCELLED)) return STORE_OK;
    if (!queue_is_state(st, JOB_QUEUED) && !queue_is_state(st, JOB_LEASED) && !queue_is_state(st, JOB_PAUSED)) {
        snprintf(q->state, sizeof q->state, "%s", st);
        snprintf(q->err, sizeof q->err, "job %lld is %s: only queued, leased or paused jobs can be cancelled", job, st);
        return STORE_ECONFLICT;
    }
    sqlite3_stmt *s = queue_stmt(q, S_CANCEL);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_double(s, 2, store_now());
    return queue_run(q, s, "cancel");
}

int queue_requeue(queue *q, long long job) {
    char st[16];
    int rc = read_job_state(q, job, st);
    if (rc < 0) return rc;
    if (queue_is_state(st, JOB_QUEUED)) return STORE_OK;
    if (!queue_is_state(st, JOB_FAILED) && !queue_is_state(st, JOB_CANCELLED)) {
        snprintf(q->state, sizeof q->state, "%s", st);
        snprintf(q->err, sizeof q->err, "job %lld is %s: only failed or cancelled jobs can be requeued", job, st);
        return STORE_ECONFLICT;
    }
    sqlite3_stmt *s = queue_stmt(q, S_REQUEUE);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_double(s, 2, store_now());
    return queue_run(q, s, "requeue");
}

int queue_job_sweep(queue *q, long long job, long long *sweep) {
    sqlite3_stmt *s = queue_stmt(q, S_JOB_SWEEP);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) *sweep = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) { snprintf(q->err, sizeof q->err, "no job %lld", job); return STORE_ENOTFOUND; }
    return rc == SQLITE_ROW ? STORE_OK : queue_fail_db(q, "job sweep");
}

/* Runs statement i on ?1 = job and, when now is not NAN, ?2 = now. */
static int run_job(queue *q, int i, long long job, double now, const char *what) {
    sqlite3_stmt *s = queue_stmt(q, i);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    if (!isnan(now)) sqlite3_bind_double(s, 2, now);
    return queue_run(q, s, what);
}

int queue_requeue_screened(queue *q, long long job, const char *screened) {
    char st[16];
    int rc = read_job_state(q, job, st);
    if (rc < 0) return rc;
    if (!queue_is_state(st, JOB_DONE)) return queue_requeue(q, job);
    if (!screened) {
        snprintf(q->state, sizeof q->state, "%s", st);
        snprintf(q->err, sizeof q->err, "job %lld is done and the leaderboard's outlier screen does not leave it out: its "
                 "result counts as it is. Only failed or cancelled jobs, or a done job the leaderboard lists under "
                 "\"screened\", can be requeued (more seeds: add them to the spec and create it again)", job);
        return STORE_ECONFLICT;
    }
    double now = store_now();
    sqlite3_stmt *s = queue_stmt(q, S_RESULT_KEEP);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_double(s, 2, now);
    sqlite3_bind_text(s, 3, screened, -1, SQLITE_TRANSIENT);
    if ((rc = queue_run(q, s, "keep the old result")) < 0 || (rc = run_job(q, S_RESULT_DEL, job, NAN, "old result")) < 0) return rc;
    return run_job(q, S_REQUEUE_DONE, job, now, "requeue screened");
}

int queue_requeue_sweep(queue *q, long long sweep, const char *state, const char *error_like, json_t *ids) {
    if (!queue_is_state(state, JOB_FAILED) && !queue_is_state(state, JOB_CANCELLED)) {
        snprintf(q->err, sizeof q->err, "state: \"failed\", \"cancelled\" or \"screened\" (the jobs to requeue), not \"%.40s\"",
                 state ? state : "");
        return STORE_EINVAL;
    }
    int rc = sweep_exists(q, sweep);
    if (rc < 0) return rc;
    sqlite3_stmt *s = queue_stmt(q, S_REQUEUE_SWEEP);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_double(s, 2, store_now());
    sqlite3_bind_text(s, 3, state, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, error_like && *error_like ? error_like : NULL, -1, SQLITE_TRANSIENT);   /* NULL: binds NULL */
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (json_array_append_new(ids, json_integer(sqlite3_column_int64(s, 0))) < 0) {
            sqlite3_reset(s);
            snprintf(q->err, sizeof q->err, "out of memory");
            return STORE_EIO;
        }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? STORE_OK : queue_fail_db(q, "requeue sweep");
}

int queue_set_priority(queue *q, long long job, long long priority) {
    char st[16];
    int rc = read_job_state(q, job, st);
    if (rc < 0) return rc;
    sqlite3_stmt *s = queue_stmt(q, S_PRIO);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, job);
    sqlite3_bind_int64(s, 2, priority);
    sqlite3_bind_double(s, 3, store_now());
    return queue_run(q, s, "priority");
}

static int sweep_exists(queue *q, long long sweep) {
    sqlite3_stmt *s = queue_stmt(q, S_SWEEP_EXISTS);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) { snprintf(q->err, sizeof q->err, "no sweep %lld", sweep); return STORE_ENOTFOUND; }
    return rc == SQLITE_ROW ? STORE_OK : queue_fail_db(q, "sweep");
}

int queue_sweep_set_state(queue *q, long long sweep, const char *state) {
    if (!state || (strcmp(state, "active") != 0 && strcmp(state, "paused") != 0)) {
        snprintf(q->err, sizeof q->err, "sweep state: \"active\" or \"paused\", not \"%.40s\"", state ? state : "");
        return STORE_EINVAL;
    }
    int rc = sweep_exists(q, sweep);
    if (rc < 0) return rc;
    sqlite3_stmt *s = queue_stmt(q, S_SWEEP_STATE);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
    return queue_run(q, s, "sweep state");
}

int queue_sweep_set_priority(queue *q, long long sweep, long long priority) {
    int rc = sweep_exists(q, sweep);
    if (rc < 0) return rc;
    sqlite3_stmt *s = queue_stmt(q, S_SWEEP_PRIO);
    if (!s) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int64(s, 2, priority);
    if ((rc = queue_run(q, s, "sweep priority")) < 0) return rc;
    if (!(s = queue_stmt(q, S_SWEEP_JOBS_PRIO))) return STORE_EIO;
    sqlite3_bind_int64(s, 1, sweep);
    sqlite3_bind_int64(s, 2, priority);
    return queue_run(q, s, "sweep jobs priority");
}

/* ---- new job rows (sweeps.c's create, racing.c's next round) ------------------------------------------ */

int queue_job_add(store *st, sqlite3_stmt **stmt, const queue_new_job *j, int *added) {
    sqlite3_stmt *s = *stmt;
    if (!s && sqlite3_prepare_v2(st->db, queue_sql[S_JOB_ADD], -1, stmt, NULL) != SQLITE_OK) return store_fail(st, "insert job");
    s = *stmt;
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, j->sweep);
    sqlite3_bind_int64(s, 2, j->schedule);
    sqlite3_bind_int64(s, 3, j->seed);
    sqlite3_bind_int(s, 4, j->seed_index);
    sqlite3_bind_int(s, 5, j->priority);
    sqlite3_bind_text(s, 6, j->job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 7, j->steps);
    sqlite3_bind_double(s, 8, j->now);
    sqlite3_bind_int64(s, 9, j->tokens_per_step);
    if (j->rung >= 0) sqlite3_bind_int(s, 10, j->rung); else sqlite3_bind_null(s, 10);
    if (sqlite3_step(s) != SQLITE_DONE) return store_fail(st, "insert job");
    *added = sqlite3_changes(st->db);
    return STORE_OK;
}
