/* queue_sql.c — queue.c's statement table (queue_sql.h): one SQL text per S_* index, in the order of the enum.
 *
 * Design: a table of string constants and nothing else, so queue.c keeps the transitions and this file keeps what
 * they say to SQLite; a statement and the function that runs it are found by the same S_* name.
 */
#include "queue_sql.h"

const char *const queue_sql[S_COUNT] = {
    [S_WORKER_FIND] = "SELECT id FROM workers WHERE name = ?1 AND host = ?2 ORDER BY id LIMIT 1",
    [S_WORKER_UPD] = "UPDATE workers SET devices = ?2, last_seen_at = ?3, fail_streak = 0, stopped_reason = NULL WHERE id = ?1",
    [S_WORKER_INS] = "INSERT INTO workers (name, host, devices, registered_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?4)",
    [S_WORKER_EXISTS] = "UPDATE workers SET last_seen_at = ?2 WHERE id = ?1",
    [S_WORKER_SEEN] = "UPDATE workers SET last_seen_at = ?2 WHERE id = (SELECT worker_id FROM jobs WHERE id = ?1)",
    [S_LEASE_PICK] =
        "SELECT j.id FROM jobs j INDEXED BY jobs_queue JOIN sweeps s ON s.id = j.sweep_id "
        "WHERE j.state = 'queued' AND s.state = 'active' "
        /* the worker's engines (lease.h): ?1 = it has the built-in engine, ?2 = its trainers as a JSON array */
        "AND CASE WHEN json_extract(j.job, '$.trainer') IS NULL THEN ?1 "
        "ELSE json_extract(j.job, '$.trainer') IN (SELECT value FROM json_each(?2)) END "
        /* = priority DESC, seed_index, is_baseline DESC, schedule ord, id (lease_ord: sql/010_sweep_counts.sql) */
        "ORDER BY j.priority DESC, j.seed_index, j.lease_ord, j.id LIMIT 1",
    [S_LEASE_TAKE] =
        "UPDATE jobs SET state = 'leased', attempt = attempt + 1, lease_token = ?2, lease_expires_at = ?3, "
        "worker_id = ?4, device = ?5, updated_at = ?6, finished_at = NULL, " NEXT_REV " WHERE id = ?1 AND state = 'queued'",
    [S_LEASE_ROW] =
        "SELECT j.attempt, j.sweep_id, j.schedule_id, j.seed, sc.heads, j.job, j.checkpoint_path, j.checkpoint_step, j.stop_at_step "
        "FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE j.id = ?1",
    [S_JOB_LEASE] = "SELECT state, lease_token, attempt, attempt_base, worker_id, lease_expires_at, steps, tokens_per_step, "
                    "stop_at_step, preemptions FROM jobs WHERE id = ?1",
    [S_RENEW] = "UPDATE jobs SET lease_expires_at = ?2, updated_at = ?3 WHERE id = ?1",
    [S_PROGRESS] = "UPDATE jobs SET step = max(step, ?2), last_loss = CASE WHEN ?2 >= step THEN coalesce(?3, last_loss) "
                   "ELSE last_loss END, rev = CASE WHEN ?2 > step OR (?2 = step AND ?3 IS NOT NULL AND ?3 IS NOT last_loss) "
                   "THEN " NEXT_REV_VALUE " ELSE rev END WHERE id = ?1",
    /* the same leaving the change cursor (sql/021_rev_coalesce.sql): rev not SET, so its index entry is not rewritten */
    [S_PROGRESS_QUIET] = "UPDATE jobs SET step = max(step, ?2), last_loss = CASE WHEN ?2 >= step THEN coalesce(?3, last_loss) "
                         "ELSE last_loss END WHERE id = ?1",
    /* ?7 = the batch's time (Unix seconds, sql/019_metrics_time.sql) */
    [S_METRIC_INS] = "INSERT OR IGNORE INTO metrics (" METRIC_COLS ") VALUES " METRIC_ROW,
    /* the same with the point's extra (sql/016_metric_extras.sql) as the last parameter: only a point that has one */
    [S_METRIC_INS_X] = "INSERT OR IGNORE INTO metrics (" METRIC_COLS ", extra) VALUES (?, ?, ?, ?, ?, ?, ?"
                       POINT_OPT_NUMS(METRIC_ARG) ", ?)",
    [S_CKPT] = "UPDATE jobs SET checkpoint_path = ?2, checkpoint_step = ?3, lease_expires_at = ?4, updated_at = ?5, "
               "rev = CASE WHEN ?3 IS NOT checkpoint_step THEN " NEXT_REV_VALUE " ELSE rev END WHERE id = ?1",
    /* an UPSERT, not a REPLACE: a result reported again fires the update trigger that keeps the sweep's device
     * time (sql/014_job_changes.sql), where a REPLACE would delete the old row without firing any */
    [S_RESULT_INS] = "INSERT INTO results (job_id, attempt, val_loss, tok_per_s, wall_s, params, flops_per_token, "
                     "attn_distance, result, completed_at, setup_s, trainer_command, trainer_version) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
                     "ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, val_loss = excluded.val_loss, "
                     "tok_per_s = excluded.tok_per_s, wall_s = excluded.wall_s, params = excluded.params, "
                     "flops_per_token = excluded.flops_per_token, attn_distance = excluded.attn_distance, "
                     "result = excluded.result, completed_at = excluded.completed_at, setup_s = excluded.setup_s, "
                     "trainer_command = excluded.trainer_command, trainer_version = excluded.trainer_version",
    [S_DONE] = "UPDATE jobs SET state = 'done', step = max(step, steps), finished_at = ?2, updated_at = ?2, "
               "lease_expires_at = NULL, " NEXT_REV " WHERE id = ?1",
    [S_FAIL] = "UPDATE jobs SET state = 'failed', last_error = ?2, retryable = ?3, finished_at = ?4, updated_at = ?4, "
               "lease_expires_at = NULL, " NEXT_REV " WHERE id = ?1",
    [S_REQUEUE_FAIL] = "UPDATE jobs SET state = 'queued', last_error = ?2, retryable = ?3, updated_at = ?4, "
                       "lease_expires_at = NULL, " NEXT_REV " WHERE id = ?1",
    /* preempted (sql/018_preemptions.sql): counted in preemptions, not in the attempts (attempt_base moves past it) */
    [S_PREEMPT_Q] = "UPDATE jobs SET state = 'queued', last_error = ?2, retryable = 1, updated_at = ?3, lease_expires_at = NULL, "
                    "preemptions = preemptions + 1, attempt_base = attempt_base + 1, " NEXT_REV " WHERE id = ?1",
    [S_PREEMPT_F] = "UPDATE jobs SET state = 'failed', last_error = ?2, retryable = 1, updated_at = ?3, finished_at = ?3, "
                    "lease_expires_at = NULL, preemptions = preemptions + 1, " NEXT_REV " WHERE id = ?1",
    [S_EXPIRED] = "SELECT id, attempt, attempt_base, last_error FROM jobs WHERE state = 'leased' AND lease_expires_at < ?1",
    [S_EXPIRE_Q] = "UPDATE jobs SET state = 'queued', last_error = ?2, lease_expires_at = NULL, updated_at = ?3 "
                   "WHERE id = ?1 AND state = 'leased'",
    [S_EXPIRE_F] = "UPDATE jobs SET state = 'failed', last_error = ?2, lease_expires_at = NULL, updated_at = ?3, "
                   "finished_at = ?3 WHERE id = ?1 AND state = 'leased'",
    [S_JOB_STATE] = "SELECT state FROM jobs WHERE id = ?1",
    [S_CANCEL] = "UPDATE jobs SET state = 'cancelled', lease_expires_at = NULL, updated_at = ?2, finished_at = ?2 WHERE id = ?1",
    [S_REQUEUE] = "UPDATE jobs SET state = 'queued', attempt_base = attempt, finished_at = NULL, lease_expires_at = NULL, "
                  "updated_at = ?2 WHERE id = ?1",
    [S_PRIO] = "UPDATE jobs SET priority = ?2, updated_at = ?3 WHERE id = ?1",
    [S_SWEEP_STATE] = "UPDATE sweeps SET state = ?2 WHERE id = ?1",
    [S_SWEEP_PRIO] = "UPDATE sweeps SET priority = ?2 WHERE id = ?1",
    [S_SWEEP_JOBS_PRIO] = "UPDATE jobs SET priority = ?2 WHERE sweep_id = ?1 AND state = 'queued'",
    [S_SWEEP_EXISTS] = "SELECT 1 FROM sweeps WHERE id = ?1",
    [S_GRACE] = "UPDATE jobs SET lease_expires_at = ?1 WHERE state = 'leased' AND lease_expires_at IS NOT ?1",
    [S_JOB_TEXT] = "SELECT job FROM jobs WHERE id = ?1",
    [S_WORKER_SEEN_LAZY] = "UPDATE workers SET last_seen_at = ?2 WHERE id = ?1 AND last_seen_at < ?3",
    [S_WORKER_STOPPED] = "SELECT stopped_reason FROM workers WHERE id = ?1 AND stopped_reason IS NOT NULL",
    /* ?2 = the limit (0: never stop), ?3 = the reason recorded when the streak reaches it */
    [S_WORKER_FAILED] = "UPDATE workers SET fail_streak = fail_streak + 1, stopped_reason = CASE WHEN ?2 > 0 AND "
                        "fail_streak + 1 >= ?2 THEN printf(?3, fail_streak + 1) ELSE stopped_reason END WHERE id = ?1",
    [S_WORKER_OK] = "UPDATE workers SET fail_streak = 0 WHERE id = (SELECT worker_id FROM jobs WHERE id = ?1) AND fail_streak > 0",
    /* ?3 = the state (failed | cancelled), ?4 = a text the last error must contain (NULL: any) */
    [S_REQUEUE_SWEEP] = "UPDATE jobs SET state = 'queued', attempt_base = attempt, finished_at = NULL, lease_expires_at = NULL, "
                        "updated_at = ?2 WHERE sweep_id = ?1 AND state = ?3 AND (?4 IS NULL OR instr(coalesce(last_error, ''), ?4) > 0) "
                        "RETURNING id",
    /* the per-sweep counters (sql/010_sweep_counts.sql): a few rows, not a count of every job */
    [S_SWEEP_PROGRESS] = "SELECT coalesce(sum(n) FILTER (WHERE state = 'done'), 0), coalesce(sum(n), 0) FROM sweep_counts "
                         "WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = ?1)",
    [S_JOB_SWEEP] = "SELECT sweep_id FROM jobs WHERE id = ?1",
    /* the old result, kept (sql/009_requeued_results.sql); ?3 = the screen's reason */
    [S_RESULT_KEEP] = "INSERT OR REPLACE INTO requeued_results (job_id, attempt, val_loss, tok_per_s, result, completed_at, "
                      "requeued_at, reason) SELECT job_id, attempt, val_loss, tok_per_s, result, completed_at, ?2, ?3 "
                      "FROM results WHERE job_id = ?1",
    [S_RESULT_DEL] = "DELETE FROM results WHERE job_id = ?1",
    /* trained again from the start: no checkpoint of the old run to resume from, no progress */
    [S_REQUEUE_DONE] = "UPDATE jobs SET state = 'queued', attempt_base = attempt, finished_at = NULL, lease_expires_at = NULL, "
                       "checkpoint_path = NULL, checkpoint_step = NULL, step = 0, last_loss = NULL, updated_at = ?2 "
                       "WHERE id = ?1 AND state = 'done'",
    /* halving: rung 0 for the sweep's jobs never leased (?2 = rung 0's step) */
    [S_RUNG_SETUP] = "UPDATE jobs SET rung = 0, stop_at_step = ?2 WHERE sweep_id = ?1 AND rung IS NULL AND attempt = 0 "
                     "AND state = 'queued'",
    /* the rung report's row: ?2 = the reported step (the attempt that already reported it, if one did) */
    [S_RUNG_ROW] = "SELECT state, lease_token, attempt, stop_at_step, checkpoint_step, rung, sweep_id, "
                   "(SELECT attempt FROM rung_results rr WHERE rr.job_id = jobs.id AND rr.step = ?2), job "
                   "FROM jobs WHERE id = ?1",
    [S_RUNG_RESULT] = "INSERT OR REPLACE INTO rung_results (job_id, rung, step, attempt, val_loss, reported_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_PAUSE] = "UPDATE jobs SET state = 'paused', step = max(step, ?2), lease_expires_at = NULL, updated_at = ?3, " NEXT_REV " "
                "WHERE id = ?1 AND state = 'leased'",
    /* a decision that exists is kept (a promotion taken twice changes nothing) */
    [S_RUNG_DECIDE] = "INSERT OR IGNORE INTO halving_decisions (sweep_id, rung, schedule_id, promoted, position, delta, "
                      "decided_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    /* ?3 = the next rung's step, NULL for the full run */
    [S_RUNG_PROMOTE] = "UPDATE jobs SET state = 'queued', rung = ?2 + 1, stop_at_step = ?3, lease_expires_at = NULL, "
                       "updated_at = ?4 WHERE sweep_id = ?1 AND rung = ?2 AND state = 'paused' AND schedule_id IN "
                       "(SELECT schedule_id FROM halving_decisions WHERE sweep_id = ?1 AND rung = ?2 AND promoted = 1)",
    [S_RUNG_PRUNE] = "UPDATE jobs SET state = 'pruned', lease_expires_at = NULL, updated_at = ?3, finished_at = ?3 "
                     "WHERE sweep_id = ?1 AND rung = ?2 AND state = 'paused' AND schedule_id IN "
                     "(SELECT schedule_id FROM halving_decisions WHERE sweep_id = ?1 AND rung = ?2 AND promoted = 0)",
    /* ?10 = the rung (NULL without halving); a schedule's seed added twice is one job */
    [S_JOB_ADD] = "INSERT INTO jobs (sweep_id, schedule_id, seed, seed_index, priority, job, steps, created_at, updated_at, "
                  "tokens_per_step, rung) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10) "
                  "ON CONFLICT (schedule_id, seed) DO NOTHING",
};
