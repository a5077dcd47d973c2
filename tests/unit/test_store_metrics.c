/* test_store_metrics.c — the metrics table after sql/003_metrics_append.sql: a version-1 database (metrics WITHOUT
 * ROWID) migrates with every point kept, points take rowids in arrival order, the UNIQUE index keeps a resent
 * point out, and deleting a job still deletes its points. */
#include "harness.h"
#include "store.h"

extern const char prism_sql_schema[];

static long long q1(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) HFAIL("prepare %s: %s", sql, sqlite3_errmsg(db));
    long long v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

static void exec_ok(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) HFAIL("%s: %s", sql, msg ? msg : "?");
}

/* A sweep with one schedule and two jobs, in the tables every version has. */
static void add_jobs(sqlite3 *db) {
    exec_ok(db, "INSERT INTO sweeps (id, name, spec, created_at) VALUES (1, 's', '{}', 1)");
    exec_ok(db, "INSERT INTO schedules (id, sweep_id, heads, ord) VALUES (1, 1, '12,12', 0)");
    exec_ok(db, "INSERT INTO jobs (id, sweep_id, schedule_id, seed, seed_index, job, created_at, updated_at) "
                "VALUES (1, 1, 1, 1, 0, '{}', 1, 1), (2, 1, 1, 2, 1, '{}', 1, 1)");
}

TEST(version_1_database_migrates_with_its_points) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/v1.db", harness_tmpdir());
    sqlite3 *db = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    exec_ok(db, "PRAGMA journal_mode=WAL");
    exec_ok(db, prism_sql_schema);
    exec_ok(db, "PRAGMA user_version = 1");
    add_jobs(db);
    exec_ok(db, "INSERT INTO metrics (job_id, attempt, step, kind, value, lr, tokens, tok_per_s) VALUES "
                "(2, 1, 10, 'train', 2.5, 0.001, 100, 5.5), (1, 1, 20, 'val', 3.25, NULL, NULL, NULL), "
                "(1, 2, 20, 'val', 3.0, NULL, 200, NULL), (1, 1, 10, 'train', 4.0, 0.002, 100, 6.0)");
    sqlite3_close(db);

    /* a read command does not migrate: it says how to, and changes nothing */
    store *st = NULL;
    ASSERT_EQ_INT(STORE_EINVAL, store_open_readonly(path, &st, err, sizeof err));
    ASSERT_CONTAINS(err, "has schema version 1, older than this binary's");
    ASSERT_CONTAINS(err, "open it once with prism-sweep serve or create");
    ASSERT_TRUE(st == NULL);
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    ASSERT_EQ_INT(1, (int)q1(db, "PRAGMA user_version"));
    sqlite3_close(db);

    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, (int)q1(st->db, "PRAGMA user_version"));
    ASSERT_EQ_INT(4, (int)q1(st->db, "SELECT count(*) FROM metrics"));
    /* every column of every point, as it was */
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 2 AND attempt = 1 AND step = 10 AND "
                                     "kind = 'train' AND value = 2.5 AND lr = 0.001 AND tokens = 100 AND tok_per_s = 5.5"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 1 AND attempt = 1 AND step = 20 AND "
                                     "kind = 'val' AND value = 3.25 AND lr IS NULL AND tokens IS NULL AND tok_per_s IS NULL"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 1 AND attempt = 2 AND step = 20 AND "
                                     "kind = 'val' AND value = 3.0 AND tokens = 200"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 1 AND attempt = 1 AND step = 10 AND "
                                     "kind = 'train' AND value = 4.0 AND lr = 0.002 AND tok_per_s = 6.0"));
    /* copied in the old key order: job 1's points first */
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT job_id FROM metrics ORDER BY id LIMIT 1"));
    /* a rowid table now, and the idempotency key is a UNIQUE index */
    ASSERT_EQ_INT(0, (int)q1(st->db, "SELECT count(*) FROM sqlite_master WHERE name = 'metrics' AND sql LIKE '%WITHOUT ROWID%'"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT \"unique\" FROM pragma_index_list('metrics') WHERE name = 'metrics_key'"));
    ASSERT_EQ_INT(0, (int)q1(st->db, "SELECT count(*) FROM pragma_foreign_key_check"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "PRAGMA foreign_keys"));
    store_close(st);

    /* reopening migrates nothing twice */
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    ASSERT_EQ_INT(4, (int)q1(st->db, "SELECT count(*) FROM metrics"));
    store_close(st);
}

TEST(points_append_in_arrival_order_and_a_resent_point_is_ignored) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    store *st = NULL;
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    add_jobs(st->db);
    exec_ok(st->db, "INSERT INTO metrics (job_id, attempt, step, kind, value) VALUES (2, 1, 5, 'train', 1.0)");
    exec_ok(st->db, "INSERT INTO metrics (job_id, attempt, step, kind, value) VALUES (1, 1, 5, 'train', 1.5)");
    exec_ok(st->db, "INSERT INTO metrics (job_id, attempt, step, kind, value) VALUES (2, 1, 6, 'train', 0.9)");
    ASSERT_EQ_INT(2, (int)q1(st->db, "SELECT job_id FROM metrics ORDER BY id LIMIT 1"));
    ASSERT_EQ_INT(6, (int)q1(st->db, "SELECT step FROM metrics ORDER BY id DESC LIMIT 1"));
    /* the same (job, attempt, step, kind) again, with another value: ignored, the first value stays */
    exec_ok(st->db, "INSERT OR IGNORE INTO metrics (job_id, attempt, step, kind, value) VALUES (1, 1, 5, 'train', 9.0)");
    ASSERT_EQ_INT(0, sqlite3_changes(st->db));
    ASSERT_EQ_INT(3, (int)q1(st->db, "SELECT count(*) FROM metrics"));
    ASSERT_EQ_INT(1, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 1 AND value = 1.5"));
    /* another kind or attempt at the same step is a new point */
    exec_ok(st->db, "INSERT OR IGNORE INTO metrics (job_id, attempt, step, kind, value) VALUES (1, 1, 5, 'val', 2.0)");
    ASSERT_EQ_INT(1, sqlite3_changes(st->db));
    exec_ok(st->db, "INSERT OR IGNORE INTO metrics (job_id, attempt, step, kind, value) VALUES (1, 2, 5, 'train', 1.4)");
    ASSERT_EQ_INT(1, sqlite3_changes(st->db));
    /* a job's curve is read through the index, not by scanning the table */
    sqlite3_stmt *s = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(st->db, "EXPLAIN QUERY PLAN SELECT step, value FROM metrics "
                                                "WHERE job_id = 1 AND kind = 'train' AND step > 0 ORDER BY step", -1, &s, NULL));
    char plan[512] = "";
    while (sqlite3_step(s) == SQLITE_ROW)
        snprintf(plan + strlen(plan), sizeof plan - strlen(plan), "%s; ", (const char *)sqlite3_column_text(s, 3));
    sqlite3_finalize(s);
    ASSERT_CONTAINS(plan, "USING INDEX metrics_key");
    /* deleting a job deletes its points (the foreign key's cascade) */
    exec_ok(st->db, "DELETE FROM jobs WHERE id = 1");
    ASSERT_EQ_INT(0, (int)q1(st->db, "SELECT count(*) FROM metrics WHERE job_id = 1"));
    ASSERT_EQ_INT(2, (int)q1(st->db, "SELECT count(*) FROM metrics"));
    store_close(st);
}

