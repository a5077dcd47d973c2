/* queue_sql.h — queue.c's statement table: the S_* index of each prepared statement and its SQL text (queue_sql.c).
 *
 * Internal to the queue (orchestrator/queue.c prepares queue_sql[i] once into q->stmt[i]); no other module includes
 * it. Every job-row write is here: tools/layers.sh refuses an `UPDATE jobs` or `INSERT INTO jobs` elsewhere
 * (store.c's migration fills excepted). The metrics insert's columns come from common/point.h's rows
 * (POINT_OPT_NUMS): METRIC_COLS / METRIC_ROW here, bound in that order by queue.c.
 */
#ifndef PRISM_QUEUE_SQL_H
#define PRISM_QUEUE_SQL_H

#include "point.h"

enum {
    S_WORKER_FIND, S_WORKER_UPD, S_WORKER_INS, S_WORKER_EXISTS, S_WORKER_SEEN,
    S_LEASE_PICK, S_LEASE_TAKE, S_LEASE_ROW, S_JOB_LEASE, S_RENEW, S_PROGRESS, S_PROGRESS_QUIET,
    S_METRIC_INS, S_METRIC_INS_X, S_CKPT, S_RESULT_INS, S_DONE, S_FAIL, S_REQUEUE_FAIL,
    S_EXPIRED, S_EXPIRE_Q, S_EXPIRE_F, S_JOB_STATE, S_CANCEL, S_REQUEUE, S_PRIO, S_SWEEP_STATE,
    S_SWEEP_PRIO, S_SWEEP_JOBS_PRIO, S_SWEEP_EXISTS, S_GRACE,
    S_WORKER_SEEN_LAZY, S_WORKER_STOPPED, S_WORKER_FAILED, S_WORKER_OK, S_REQUEUE_SWEEP, S_SWEEP_PROGRESS, S_JOB_TEXT,
    /* a screened job requeued (queue_requeue_screened) */
    S_JOB_SWEEP, S_RESULT_KEEP, S_RESULT_DEL, S_REQUEUE_DONE,
    /* halving's (orchestrator/halving.h) */
    S_RUNG_SETUP, S_RUNG_ROW, S_RUNG_RESULT, S_PAUSE, S_RUNG_DECIDE, S_RUNG_PROMOTE, S_RUNG_PRUNE,
    /* a preempted attempt (queue_fail with QUEUE_FAIL_PREEMPTED) */
    S_PREEMPT_Q, S_PREEMPT_F,
    /* a new job row: create's and racing's next round (queue_job_add, on the store: not cached here) */
    S_JOB_ADD,
    S_COUNT
};

/* The job's next change cursor (sql/014_job_changes.sql: its sweep's largest rev + 1, a seek on jobs_rev), set by the
 * worker routes' UPDATEs themselves: the trigger that catches every other change would write the row a second time. */
#define NEXT_REV_VALUE "(SELECT max(j2.rev) + 1 FROM jobs j2 WHERE j2.sweep_id = jobs.sweep_id)"
#define NEXT_REV "rev = " NEXT_REV_VALUE

/* The metrics insert's optional columns, ?8 onwards in order: common/point.h's POINT_OPT_NUMS (bind_opt_nums). */
#define METRIC_COL(K, f, only) ", " POINT_KEY_##K
#define METRIC_ARG(K, f, only) ", ?"
#define METRIC_ONE(K, f, only) + 1
#define METRIC_COLS "job_id, attempt, step, kind, value, tokens, t" POINT_OPT_NUMS(METRIC_COL)
#define METRIC_ROW "(?, ?, ?, ?, ?, ?, ?" POINT_OPT_NUMS(METRIC_ARG) ")"
enum { METRIC_ROW_ARGS = 7 POINT_OPT_NUMS(METRIC_ONE) };   /* parameters of one metrics row (bind_metric_row) */

/* The SQL of statement S_*: every entry set (a static string). */
extern const char *const queue_sql[S_COUNT];

#endif
