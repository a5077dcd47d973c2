/* test_jobmodel.c — the one job model (common/jobmodel.h): steps, tokens per step and total tokens with the job
 * format's defaults; the jobs.steps / jobs.tokens_per_step columns a sweep fills at create; the migration that
 * fills them for the rows of an older database by the same C code; and the metrics route's tokens, which come
 * from the column. */
#include "harness.h"
#include "jobmodel.h"
#include "queue.h"
#include "store.h"
#include "sweeps.h"
#include "store_test_lib.h"

#define MODEL "\"model\": {\"n_layer\": 2, \"d_model\": 64, \"vocab_size\": 256, \"seq_len\": 48, \"heads\": [2, 4]}"
#define DATA "\"data\": {\"train\": \"t*.bin\", \"val\": \"v*.bin\"}"

TEST(defaults_are_the_job_formats) {
    /* no train section at all: steps 100, batch 8, seq_len = model.seq_len, grad_accum 1 (common/job.c) */
    job_sizes z;
    char err[256] = "";
    if (jobmodel_sizes_text("{" MODEL ", " DATA "}", &z, err, sizeof err) != 0) HFAIL("sizes: %s", err);
    ASSERT_EQ_INT(100, z.steps);
    ASSERT_EQ_INT(8 * 48 * 1, z.tokens_per_step);
    ASSERT_EQ_INT(100LL * 8 * 48, z.tokens_total);
}

TEST(explicit_values_multiply) {
    job_sizes z;
    char err[256] = "";
    const char *t = "{" MODEL ", \"train\": {\"batch_size\": 3, \"seq_len\": 16, \"grad_accum\": 5, \"steps\": 7}, " DATA "}";
    if (jobmodel_sizes_text(t, &z, err, sizeof err) != 0) HFAIL("sizes: %s", err);
    ASSERT_EQ_INT(7, z.steps);
    ASSERT_EQ_INT(3 * 16 * 5, z.tokens_per_step);
    ASSERT_EQ_INT(7 * 3 * 16 * 5, z.tokens_total);
    json_t *o = json_loads(t, 0, NULL);
    job_sizes y;
    ASSERT_EQ_INT(0, jobmodel_sizes_json(o, &y, err, sizeof err));
    json_decref(o);
    ASSERT_EQ_INT(z.tokens_total, y.tokens_total);
}

TEST(an_invalid_job_is_an_error_naming_the_key) {
    job_sizes z;
    char err[256] = "";
    ASSERT_EQ_INT(JOB_EINVAL, jobmodel_sizes_text("{" MODEL ", \"train\": {\"batch_size\": 0}, " DATA "}", &z, err,
                                                  sizeof err));
    ASSERT_CONTAINS(err, "train.batch_size");
    ASSERT_EQ_INT(0, z.tokens_per_step);
    ASSERT_EQ_INT(JOB_EINVAL, jobmodel_sizes_text("{}", &z, err, sizeof err));
    ASSERT_CONTAINS(err, "required");
}

/* A sweep whose train section leaves batch_size and seq_len to the defaults. */
#define SPEC "{ \"name\": \"m\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, \"seq_len\": 40}, " \
             "\"rules\": {\"h_base\": 4, \"max_head_dim\": 0, \"min_block\": 1, \"max_block\": 2}, \"seeds\": [1, 2], " \
             "\"train\": {\"grad_accum\": 3, \"steps\": 30, \"lr\": 0.001}, " DATA " }"

static store *created(const char *name) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), name);
    store *st = NULL;
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    if (sweeps_create_json(st, SPEC, strlen(SPEC), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    return st;
}

TEST(create_fills_the_columns) {
    store *st = created("c.db");
    long long n = qv(st, "SELECT count(*) FROM jobs");
    printf("%lld jobs\n", n);
    ASSERT_TRUE(n >= 2);
    ASSERT_EQ_INT(n, qv(st, "SELECT count(*) FROM jobs WHERE steps = 30 AND tokens_per_step = 8 * 40 * 3"));
    store_close(st);
}

/* Migration 17: sweep_results.setup_s follows its results' setup_s through insert, update and delete, and
 * sweeps_counts_verify catches a counter that does not. */
TEST(setup_s_counted_per_sweep) {
    store *st = created("setup.db");
    char err[1024];
    static const struct { const char *sql; long long setup_x10, wall_s; } steps[] = {   /* each change, the counters after */
        { "INSERT INTO results (job_id, attempt, val_loss, wall_s, setup_s, result, completed_at) "
          "VALUES (1, 1, 3.0, 10, 2.5, '{}', 0), (2, 1, 3.1, 20, NULL, '{}', 0)", 25, 30 },
        { "UPDATE results SET setup_s = 4 WHERE job_id = 2", 65, 30 },
        { "DELETE FROM results WHERE job_id = 1", 40, 20 },
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        ASSERT_EQ_INT(0, store_exec(st, steps[i].sql));
        long long su = qv(st, "SELECT CAST(setup_s * 10 AS INTEGER) FROM sweep_results");
        long long wa = qv(st, "SELECT CAST(wall_s AS INTEGER) FROM sweep_results");
        printf("after \"%.40s...\": setup_s x10 %lld (want %lld), wall_s %lld (want %lld)\n", steps[i].sql, su,
               steps[i].setup_x10, wa, steps[i].wall_s);
        ASSERT_EQ_INT(steps[i].setup_x10, su);
        ASSERT_EQ_INT(steps[i].wall_s, wa);
    }
    if (sweeps_counts_verify(st, err, sizeof err) != 0) HFAIL("counters: %s", err);
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE sweep_results SET setup_s = 99"));
    ASSERT_TRUE(sweeps_counts_verify(st, err, sizeof err) != 0);
    printf("a wrong setup_s counter: %s\n", err);
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE sweep_results SET setup_s = 4"));
    store_close(st);
}

TEST(migration_fills_older_rows_by_the_c_model) {
    store *st = created("old.db");
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s", st->path);
    long long n = qv(st, "SELECT count(*) FROM jobs");
    /* back to schema version 3: no tokens_per_step column, steps as a version that filled them at lease left them,
     * and one row whose JSON is not a job */
    ASSERT_EQ_INT(0, store_exec(st, "DROP INDEX jobs_list; DROP INDEX jobs_list_state"));   /* migration 20 */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE metrics DROP COLUMN t"));   /* migration 19 */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE jobs DROP COLUMN preemptions; "
                                "ALTER TABLE metrics DROP COLUMN val_loss_se"));   /* migration 18 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TRIGGER results_cost_ins; DROP TRIGGER results_cost_del; "
                                "DROP TRIGGER results_cost_upd; ALTER TABLE sweep_results DROP COLUMN setup_s; "
                                "ALTER TABLE results DROP COLUMN setup_s; ALTER TABLE results DROP COLUMN trainer_command; "
                                "ALTER TABLE results DROP COLUMN trainer_version"));   /* migration 17 */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE metrics DROP COLUMN extra"));   /* migration 16 */
    /* migration 15: its table and every trigger that writes it (they are on many tables) */
    sqlite3_stmt *q = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(st->db, "SELECT group_concat('DROP TRIGGER ' || name, '; ') FROM sqlite_master "
                                                "WHERE type = 'trigger' AND sql LIKE '%sweep_ranking%'", -1, &q, NULL));
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(q));
    char *drops = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    ASSERT_EQ_INT(0, store_exec(st, drops));
    free(drops);
    ASSERT_EQ_INT(0, store_exec(st, "DROP TABLE sweep_ranking"));
    ASSERT_EQ_INT(0, store_exec(st, "DROP TRIGGER jobs_rev_upd; "
                                "DROP TABLE sweep_results; DROP TRIGGER jobs_count_ins; "
                                "DROP TRIGGER jobs_count_del; DROP TRIGGER jobs_count_upd; DROP TRIGGER jobs_lease_ord_ins; "
                                "DROP INDEX jobs_rev; ALTER TABLE jobs DROP COLUMN rev"));   /* migration 14 (and 10's triggers) */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE jobs DROP COLUMN tokens_per_step"));
    /* migration 13: schedules without `train`, unique on (sweep_id, heads) as before; the triggers on it migration 10 made
     * (jobs_lease_ord_ins, which reads it, is gone with migration 14's undo above) */
    ASSERT_EQ_INT(0, store_exec(st, "PRAGMA foreign_keys=OFF; ALTER TABLE search_batches DROP COLUMN best_untrained_train; "
                                "CREATE TABLE schedules_old (id INTEGER PRIMARY KEY, "
                                "sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE, heads TEXT NOT NULL, "
                                "is_baseline INTEGER NOT NULL DEFAULT 0, ord INTEGER NOT NULL, UNIQUE (sweep_id, heads)); "
                                "INSERT INTO schedules_old SELECT id, sweep_id, heads, is_baseline, ord FROM schedules; "
                                "DROP TABLE schedules; ALTER TABLE schedules_old RENAME TO schedules; "
                                "CREATE TRIGGER schedules_count_ins AFTER INSERT ON schedules BEGIN UPDATE sweeps SET "
                                "schedules = schedules + 1 WHERE id = new.sweep_id; END; "
                                "CREATE TRIGGER schedules_count_del AFTER DELETE ON schedules BEGIN UPDATE sweeps SET "
                                "schedules = schedules - 1 WHERE id = old.sweep_id; END; PRAGMA foreign_keys=ON"));
    long long nsched = qv(st, "SELECT count(*) FROM schedules");
    ASSERT_EQ_INT(0, store_exec(st, "DROP TRIGGER jobs_rung_ins; DROP TRIGGER jobs_rung_del; DROP TRIGGER jobs_rung_upd; "
                                "DROP TABLE halving_rung_counts"));   /* migration 12 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TABLE search_predictions; DROP TABLE search_proposals; "
                                "DROP TABLE search_batches"));   /* migration 11 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TRIGGER schedules_count_ins; "
                                "DROP TRIGGER schedules_count_del; DROP TABLE sweep_counts; "
                                "ALTER TABLE sweeps DROP COLUMN schedules; DROP INDEX jobs_queue; "
                                "ALTER TABLE jobs DROP COLUMN lease_ord; "
                                "CREATE INDEX jobs_queue ON jobs (state, priority DESC, seed_index, id); DROP INDEX jobs_sweep; "
                                "CREATE INDEX jobs_sweep ON jobs (sweep_id, state)"));   /* migration 10 */
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'done', step = 30 WHERE id = 2; "
                                "UPDATE jobs SET state = 'leased', step = 7 WHERE id = 3"));   /* counted by migration 10 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TABLE requeued_results"));                            /* migration 9 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TABLE racing_screened; DROP TABLE racing_config"));     /* migration 8 */
    ASSERT_EQ_INT(0, store_exec(st, "DROP TABLE racing_decisions; DROP TABLE racing_rounds"));   /* migration 7 */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE metrics DROP COLUMN grad_norm"));   /* migration 6 */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE workers DROP COLUMN fail_streak"));     /* migration 5's */
    ASSERT_EQ_INT(0, store_exec(st, "ALTER TABLE workers DROP COLUMN stopped_reason"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET steps = 0 WHERE id % 2 = 0"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET job = '{}', steps = 0 WHERE id = 1"));
    ASSERT_EQ_INT(0, store_exec(st, "PRAGMA user_version = 3"));
    store_close(st);
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open (migrating): %s", err);
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, qv(st, "PRAGMA user_version"));
    ASSERT_EQ_INT(n - 1, qv(st, "SELECT count(*) FROM jobs WHERE steps = 30 AND tokens_per_step = 8 * 40 * 3"));
    ASSERT_EQ_INT(1, qv(st, "SELECT count(*) FROM jobs WHERE id = 1 AND steps = 0 AND tokens_per_step = 0"));
    /* migration 10: the counters of the rows there were, the lease order and the schedules of every sweep */
    if (sweeps_counts_verify(st, err, sizeof err) != 0) HFAIL("counters after the migration: %s", err);
    ASSERT_EQ_INT(n, qv(st, "SELECT sum(n) FROM sweep_counts"));
    ASSERT_EQ_INT(1, qv(st, "SELECT n FROM sweep_counts WHERE state = 'done'"));
    ASSERT_EQ_INT(30, qv(st, "SELECT steps_done FROM sweep_counts WHERE state = 'done'"));
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE "
                            "j.lease_ord != (1 - sc.is_baseline) * 4294967296 + sc.ord"));
    ASSERT_EQ_INT(qv(st, "SELECT count(*) FROM schedules"), qv(st, "SELECT sum(schedules) FROM sweeps"));
    /* migration 15: one leaderboard revision per sweep, moved by the triggers */
    ASSERT_EQ_INT(qv(st, "SELECT count(*) FROM sweeps"), qv(st, "SELECT count(*) FROM sweep_ranking WHERE rev = 1"));
    /* migration 18: no preemption counted yet, the val points' standard error column there (empty) */
    ASSERT_EQ_INT(n, qv(st, "SELECT count(*) FROM jobs WHERE preemptions = 0"));
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM metrics WHERE val_loss_se IS NOT NULL"));
    /* migration 14: each job's change cursor its id (distinct within its sweep: checked above), the done job's
     * tokens counted (sweeps_counts_verify above checks every state's) */
    ASSERT_EQ_INT(n, qv(st, "SELECT count(*) FROM jobs WHERE rev = id"));
    ASSERT_EQ_INT(30 * 8 * 40 * 3, qv(st, "SELECT tokens FROM sweep_counts WHERE state = 'done'"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'failed' WHERE id = 3"));
    ASSERT_EQ_INT(2, qv(st, "SELECT rev FROM sweep_ranking WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = 3)"));
    /* migration 13: every schedule kept, with its jobs, train '' ; the same heads at other train values is a new row */
    ASSERT_EQ_INT(nsched, qv(st, "SELECT count(*) FROM schedules WHERE train = ''"));
    ASSERT_EQ_INT(n, qv(st, "SELECT count(*) FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id"));
    ASSERT_EQ_INT(0, store_exec(st, "INSERT INTO schedules (sweep_id, heads, ord, train) SELECT sweep_id, heads, 99, "
                                "'{\"lr\":0.001}' FROM schedules WHERE id = (SELECT min(id) FROM schedules)"));
    ASSERT_EQ_INT(nsched + 1, qv(st, "SELECT sum(schedules) FROM sweeps"));
    ASSERT_TRUE(store_exec(st, "INSERT INTO schedules (sweep_id, heads, ord, train) SELECT sweep_id, heads, 98, "
                           "'' FROM schedules WHERE id = (SELECT min(id) FROM schedules)") != 0);   /* still unique */
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM search_batches WHERE best_untrained_train IS NOT NULL"));
    /* migration 12: no halving job in this store, so no rung counter */
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM halving_rung_counts"));
    /* migration 11: the search's tables, empty */
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM search_batches") + qv(st, "SELECT count(*) FROM search_proposals") +
                     qv(st, "SELECT count(*) FROM search_predictions"));
    store_close(st);
}

TEST(metrics_tokens_come_from_the_column) {
    store *st = created("t.db");
    queue q;
    queue_init(&q, st, 60, 3);
    long long wid = 0;
    json_t *lease = NULL;
    ASSERT_EQ_INT(0, store_begin(st));
    ASSERT_EQ_INT(0, queue_register(&q, "w", "h", "[]", &wid));
    ASSERT_EQ_INT(QUEUE_OK, queue_lease(&q, wid, "cpu", &lease));
    long long job = json_integer_value(json_object_get(lease, "job_id"));
    char tok[128];
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(lease, "lease_token")));
    json_decref(lease);
    /* a client's own "tokens" loses to the job model's: (step + 1) x tokens_per_step for a train point */
    json_t *pts = json_loads("[{\"step\": 4, \"train_loss\": 3.5, \"tokens\": 1}, {\"step\": 5, \"val_loss\": 3.4}]", 0, NULL);
    int acc = 0, dup = 0;
    double exp = 0;
    if (queue_metrics(&q, job, tok, pts, &acc, &dup, &exp) != 0) HFAIL("metrics: %s", q.err);
    json_decref(pts);
    ASSERT_EQ_INT(0, store_commit(st));
    ASSERT_EQ_INT(2, acc);
    ASSERT_EQ_INT(5LL * 8 * 40 * 3, qv(st, "SELECT tokens FROM metrics WHERE kind = 'train' AND step = 4"));
    ASSERT_EQ_INT(5LL * 8 * 40 * 3, qv(st, "SELECT tokens FROM metrics WHERE kind = 'val' AND step = 5"));
    queue_release(&q);
    store_close(st);
}
