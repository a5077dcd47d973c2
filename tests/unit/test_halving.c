/* test_halving.c — successive halving (orchestrator/halving.c): the spec key's checks and rung steps, the
 * schema migration from version 1, the rung report, sync and async promotion (one decision per schedule,
 * idempotent), failed jobs at a rung, and the leaderboard ranked by the highest rung reached.
 * timeout: 60
 */
#include "harness.h"
#include "halving.h"
#include "leaderboard.h"
#include "queue.h"
#include "spec.h"
#include "store.h"
#include "sweeps.h"
#define PRISM_TEST_CHECK_COUNTERS   /* every store_close checks the per-sweep counters */
#include "store_test_lib.h"

#define TINY_MODEL "\"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, \"padded_vocab_size\": 256, " \
                   "\"seq_len\": 64}"
#define TINY_DATA "\"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"}"

static char spec_buf[8192];
/* A tiny spec (6 schedules: ord 0 = the baseline 4,4,4,4) with train.steps and the "halving" value given */
static const char *tiny(int steps, const char *seeds, const char *halving) {
    snprintf(spec_buf, sizeof spec_buf, "{ \"name\": \"h\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, "
             "\"min_block\": 1, \"max_block\": 2}, \"seeds\": %s, \"train\": {\"batch_size\": 2, \"seq_len\": 32, "
             "\"steps\": %d, \"lr\": 0.001}, \"eval\": {\"every\": 5, \"batches\": 2}, " TINY_DATA "%s%s }",
             seeds, steps, halving ? ", \"halving\": " : "", halving ? halving : "");
    return spec_buf;
}

/* tiny() with train.warmup_steps */
static const char *tiny_warmup(int steps, int warmup, const char *halving) {
    snprintf(spec_buf, sizeof spec_buf, "{ \"name\": \"h\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, "
             "\"min_block\": 1, \"max_block\": 2}, \"seeds\": [1], \"train\": {\"batch_size\": 2, \"seq_len\": 32, "
             "\"steps\": %d, \"warmup_steps\": %d, \"lr\": 0.001}, \"eval\": {\"every\": 5, \"batches\": 2}, " TINY_DATA
             ", \"halving\": %s }", steps, warmup, halving);
    return spec_buf;
}

static void expect_error(const char *text, const char *needle) {
    sweep_spec sp;
    char err[1024];
    if (spec_parse(text, strlen(text), &sp, err, sizeof err) == 0) HFAIL("spec accepted, expected \"%s\": %s", needle, text);
    ASSERT_CONTAINS(err, needle);
}

TEST(spec_errors_name_the_key) {
    expect_error(tiny(90, "[1]", "3"), "halving: must be an object");
    expect_error(tiny(90, "[1]", "{\"eta\": 1, \"rungs\": [0.1]}"), "halving.eta: required, an integer >= 2");
    expect_error(tiny(90, "[1]", "{\"rungs\": [0.1]}"), "halving.eta");
    expect_error(tiny(90, "[1]", "{\"eta\": 3}"), "halving.rungs: required");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": []}"), "halving.rungs: required");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [0.3, 0.2]}"), "halving.rungs[1]: 0.2 is not above halving.rungs[0]");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [0.3, 0.3]}"), "halving.rungs[1]");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [0]}"), "halving.rungs[0]: must be a number in (0, 1)");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [1]}"), "halving.rungs[0]: must be a number in (0, 1)");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [\"a\"]}"), "halving.rungs[0]");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [0.1], \"mode\": \"fast\"}"), "halving.mode: must be \"sync\"");
    expect_error(tiny(90, "[1]", "{\"eta\": 3, \"rungs\": [0.1], \"rung\": 1}"), "halving.rung: unknown key");
    /* two rungs that round to the same step, a rung that rounds to 0 or to the full run */
    expect_error(tiny(10, "[1]", "{\"eta\": 3, \"rungs\": [0.11, 0.14]}"), "halving.rungs[1]: 0.14 x train.steps 10 rounds to "
                 "step 1, the same as halving.rungs[0]");
    expect_error(tiny(10, "[1]", "{\"eta\": 3, \"rungs\": [0.01]}"), "rounds to step 0");
    expect_error(tiny(10, "[1]", "{\"eta\": 3, \"rungs\": [0.98]}"), "rounds to step 10, the full run");
}

/* A rung inside the warmup, or just after it early in the run, is refused at create; a first rung below 20% of the
 * run is a warning that names the key */
TEST(early_rungs_are_refused_or_warned) {
    expect_error(tiny_warmup(600, 50, "{\"eta\": 3, \"rungs\": [0.05, 0.5]}"),
                 "halving.rungs[0]: 0.05 x train.steps 600 is step 30, at or before train.warmup_steps (50)");
    /* the review's case: step 67 of 600 after a warmup of 50 */
    expect_error(tiny_warmup(600, 50, "{\"eta\": 3, \"rungs\": [0.111, 0.333]}"),
                 "halving.rungs[0]: 0.111 x train.steps 600 is step 67, below 20% of the run and within twice");
    expect_error(tiny_warmup(600, 50, "{\"eta\": 3, \"rungs\": [0.111, 0.333]}"), "e.g. halving.rungs[0] = 0.20");
    expect_error(tiny_warmup(90, 60, "{\"eta\": 3, \"rungs\": [0.5]}"), "at or before train.warmup_steps (60)");
    sweep_spec sp;
    char err[1024];
    const char *t = tiny_warmup(2000, 50, "{\"eta\": 3, \"rungs\": [0.111, 0.333]}");
    ASSERT_EQ_INT(0, spec_parse(t, strlen(t), &sp, err, sizeof err));
    ASSERT_CONTAINS(sp.warn, "halving.rungs[0]: 0.111 of train.steps (step 222) is below 20% of the run");
    spec_release(&sp);
    t = tiny_warmup(600, 50, "{\"eta\": 3, \"rungs\": [0.25, 0.5]}");
    ASSERT_EQ_INT(0, spec_parse(t, strlen(t), &sp, err, sizeof err));
    ASSERT_STREQ("", sp.warn);
    spec_release(&sp);
}

TEST(rung_steps_round_half_up_and_single_seed_is_allowed) {
    sweep_spec sp;
    char err[1024];
    const char *t = tiny(2000, "[7]", "{\"eta\": 3, \"rungs\": [0.111, 0.333]}");
    if (spec_parse(t, strlen(t), &sp, err, sizeof err) != 0) HFAIL("refused: %s", err);
    halving_cfg c;
    ASSERT_EQ_INT(0, halving_parse(json_object_get(sp.root, "halving"), sp.steps, &c, err, sizeof err));
    ASSERT_EQ_INT(1, c.enabled);
    ASSERT_EQ_INT(3, c.eta);
    ASSERT_EQ_INT(0, c.async);
    ASSERT_EQ_INT(2, c.nrungs);
    ASSERT_EQ_INT(222, (int)c.step[0]);    /* 0.111 x 2000 = 222 */
    ASSERT_EQ_INT(666, (int)c.step[1]);    /* 0.333 x 2000 = 666 */
    ASSERT_EQ_INT(2000, (int)c.step[2]);   /* the full run */
    spec_release(&sp);
    json_t *v = json_loads("{\"eta\": 2, \"rungs\": [0.25, 0.5], \"mode\": \"async\"}", 0, NULL);
    ASSERT_EQ_INT(0, halving_parse(v, 90, &c, err, sizeof err));
    ASSERT_EQ_INT(23, (int)c.step[0]);     /* 22.5 rounds half up */
    ASSERT_EQ_INT(45, (int)c.step[1]);
    ASSERT_EQ_INT(1, c.async);
    json_decref(v);
}

/* ---- the store ------------------------------------------------------------------------------------ */

static char db_path[4200];
static store *fresh_store(void) {
    char err[512];
    snprintf(db_path, sizeof db_path, "%s/h.db", harness_tmpdir());
    store *st = NULL;
    if (store_open(db_path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    return st;
}

extern const char prism_sql_schema[];

TEST(migration_from_version_1_keeps_every_row) {
    snprintf(db_path, sizeof db_path, "%s/old.db", harness_tmpdir());
    sqlite3 *db = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(db_path, &db));
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_exec(db, prism_sql_schema, NULL, NULL, NULL));
    const char *rows =
        "PRAGMA user_version = 1; PRAGMA foreign_keys = ON;"
        "INSERT INTO sweeps (id, name, spec, created_at) VALUES (1, 's', '{}', 1);"
        "INSERT INTO schedules (id, sweep_id, heads, is_baseline, ord) VALUES (1, 1, '4,4', 1, 0);"
        "INSERT INTO jobs (id, sweep_id, schedule_id, seed, seed_index, state, job, attempt, step, steps, created_at, updated_at) "
        "  VALUES (7, 1, 1, 1, 0, 'done', '{}', 2, 10, 10, 1, 1);"
        "INSERT INTO metrics (job_id, attempt, step, kind, value) VALUES (7, 2, 0, 'train', 5.5), (7, 2, 10, 'val', 4.5);"
        "INSERT INTO results (job_id, attempt, val_loss, result, completed_at) VALUES (7, 2, 4.5, '{}', 2);";
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_exec(db, rows, NULL, NULL, NULL));
    sqlite3_close(db);
    char err[512];
    store *st = NULL;
    if (store_open(db_path, &st, err, sizeof err) != 0) HFAIL("store_open (migrating): %s", err);
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, (int)qv(st, "PRAGMA user_version"));
    ASSERT_EQ_INT(1, (int)qv(st, "PRAGMA foreign_keys"));
    /* the rebuild of jobs cascaded nothing: metrics and results are all there */
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT count(*) FROM metrics WHERE job_id = 7"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM results WHERE job_id = 7"));
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT attempt FROM jobs WHERE id = 7 AND state = 'done' AND steps = 10"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM pragma_foreign_key_check"));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('jobs_queue', 'jobs_sweep', 'jobs_lease')"));
    /* the new states are accepted, others still refused; foreign keys still point at jobs */
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'paused' WHERE id = 7"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'pruned' WHERE id = 7"));
    ASSERT_TRUE(store_exec(st, "UPDATE jobs SET state = 'sleeping' WHERE id = 7") < 0);
    ASSERT_TRUE(store_exec(st, "INSERT INTO metrics (job_id, attempt, step, kind, value) VALUES (99, 1, 0, 'train', 1)") < 0);
    ASSERT_EQ_INT(0, store_exec(st, "DELETE FROM jobs WHERE id = 7"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM metrics"));   /* ON DELETE CASCADE still works */
    store_close(st);
}

/* ---- a sweep driven through the queue ------------------------------------------------------------ */

/* Δ of each schedule (by ord) against the baseline (ord 0): ranked ord 2, 5, 4, baseline, 3, 1 */
static const double BIAS[6] = { 0, 0.02, -0.03, 0.01, -0.01, -0.02 };

typedef struct lease_t { long long job, attempt, stop, ord, seed; int has_stop, has_resume; long long resume_step; char token[128]; } lease_t;

static int lease_one(queue *qu, long long wid, lease_t *l) {
    json_t *o = NULL;
    int rc = queue_lease(qu, wid, "cpu", &o);
    if (rc == QUEUE_EMPTY) return 0;
    if (rc != QUEUE_OK) HFAIL("lease: %d %s", rc, qu->err);
    memset(l, 0, sizeof *l);
    l->job = json_integer_value(json_object_get(o, "job_id"));
    l->attempt = json_integer_value(json_object_get(o, "attempt"));
    l->seed = json_integer_value(json_object_get(o, "seed"));
    snprintf(l->token, sizeof l->token, "%s", json_string_value(json_object_get(o, "lease_token")));
    json_t *s = json_object_get(o, "stop_at_step");
    l->has_stop = json_is_integer(s);
    l->stop = json_integer_value(s);
    json_t *r = json_object_get(o, "resume");
    l->has_resume = r != NULL;
    l->resume_step = json_integer_value(json_object_get(r, "step"));
    json_decref(o);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT sc.ord FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE j.id = %lld", l->job);
    l->ord = qv(qu->st, sql);
    return 1;
}

static double loss_of(const lease_t *l, long long step) { return 3.0 + BIAS[l->ord] + 0.1 * (double)l->seed - 1e-4 * (double)step; }

/* Checkpoint at the rung step, then the rung report; returns the state afterwards. */
static const char *report_rung(store *st, queue *qu, const lease_t *l) {
    char path[256], err[512], sb[16];
    double exp;
    snprintf(path, sizeof path, "/ck/job-%lld-a%lld/ckpt_%lld.bin", l->job, l->attempt, l->stop);
    if (queue_checkpoint(qu, l->job, l->token, path, l->stop, &exp) != 0) HFAIL("checkpoint: %s", qu->err);
    const char *state = NULL;
    int rc = halving_report(qu, l->job, l->token, l->stop, loss_of(l, l->stop), &state, sb, err, sizeof err);
    if (rc != 0) HFAIL("rung report of job %lld: %d %s", l->job, rc, err);
    return state;
}

static void complete(queue *qu, const lease_t *l) {
    json_t *r = json_pack("{s:f}", "val_loss", loss_of(l, 90));
    if (queue_complete(qu, l->job, l->token, r) != 0) HFAIL("complete: %s", qu->err);
    json_decref(r);
}

static store *halving_sweep(const char *seeds, const char *halving, queue *qu, long long *wid) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny(90, seeds, halving);
    if (sweeps_create_json(st, t, strlen(t), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    queue_init(qu, st, 60, 3);
    if (queue_register(qu, "w", "h", "[]", wid) != 0) HFAIL("register: %s", qu->err);
    return st;
}

static long long ord_state_count(store *st, int ord, const char *state) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE sc.ord = %d "
             "AND j.state = '%s'", ord, state);
    return qv(st, sql);
}

TEST(sync_promotes_the_best_third_and_the_baseline_exactly_once) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1, 2]", "{\"eta\": 3, \"rungs\": [0.111, 0.333]}", &qu, &wid);
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs WHERE rung = 0 AND stop_at_step = 10"));
    lease_t L[12];
    for (int i = 0; i < 12; i++) {
        if (!lease_one(&qu, wid, &L[i])) HFAIL("only %d leases", i);
        ASSERT_TRUE(L[i].has_stop);
        ASSERT_EQ_INT(10, (int)L[i].stop);   /* round(0.111 x 90) */
    }
    for (int i = 0; i < 11; i++) ASSERT_STREQ("paused", report_rung(st, &qu, &L[i]));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM halving_decisions"));   /* sync: waits for the whole rung */
    report_rung(st, &qu, &L[11]);
    /* n = 6, k = ⌈6/3⌉ = 2: ord 2 and 5, plus the baseline */
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM halving_decisions WHERE rung = 0"));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM halving_decisions WHERE rung = 0 AND promoted = 1"));
    for (int o = 0; o < 6; o++) {
        int promoted = o == 0 || o == 2 || o == 5;
        ASSERT_EQ_INT(promoted ? 2 : 0, (int)ord_state_count(st, o, "queued"));
        ASSERT_EQ_INT(promoted ? 0 : 2, (int)ord_state_count(st, o, "pruned"));
    }
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM rung_results WHERE rung = 0 AND step = 10"));
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM jobs WHERE rung = 1 AND stop_at_step = 30 AND state = 'queued'"));
    /* idempotent: another tick and a repeated report change nothing */
    int decided = 0;
    char err[512], sb[16];
    ASSERT_EQ_INT(0, halving_tick(&qu, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, decided);
    const char *state = NULL;
    ASSERT_EQ_INT(0, halving_report(&qu, L[0].job, L[0].token, 10, 1.0, &state, sb, err, sizeof err));
    ASSERT_STREQ("queued", state);
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM halving_decisions"));
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs"));
    /* rung 1: the promoted jobs resume from their rung checkpoint and stop at 30 */
    lease_t M[6];
    for (int i = 0; i < 6; i++) {
        if (!lease_one(&qu, wid, &M[i])) HFAIL("only %d leases at rung 1", i);
        ASSERT_TRUE(M[i].has_resume);
        ASSERT_EQ_INT(10, (int)M[i].resume_step);
        ASSERT_EQ_INT(30, (int)M[i].stop);
    }
    lease_t none;
    ASSERT_EQ_INT(0, lease_one(&qu, wid, &none));
    for (int i = 0; i < 6; i++) report_rung(st, &qu, &M[i]);
    /* n = 3, k = 1: ord 2 and the baseline */
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT count(*) FROM halving_decisions WHERE rung = 1 AND promoted = 1"));
    ASSERT_EQ_INT(2, (int)ord_state_count(st, 5, "pruned"));
    lease_t F[4];
    for (int i = 0; i < 4; i++) {
        if (!lease_one(&qu, wid, &F[i])) HFAIL("only %d leases at the last rung", i);
        ASSERT_TRUE(!F[i].has_stop);   /* the full run */
        ASSERT_EQ_INT(30, (int)F[i].resume_step);
        ASSERT_TRUE(F[i].ord == 0 || F[i].ord == 2);
        complete(&qu, &F[i]);
    }
    /* steps: 12 x 10 + 6 x 20 + 4 x 60 = 480 of 12 x 90 = 1080 */
    long long trained, full;
    ASSERT_EQ_INT(0, halving_steps(st, 1, &trained, &full, err, sizeof err));
    ASSERT_EQ_INT(12 * 10 + 6 * 30 - 6 * 10 + 4 * 90 - 4 * 30, (int)trained);
    ASSERT_EQ_INT(1080, (int)full);
    /* the leaderboard: the full run first (ord 2, then the baseline), then ord 5 at rung 1, then rung 0 by Δ */
    json_t *lb = NULL;
    ASSERT_EQ_INT(0, leaderboard_build(st, 1, &lb, err, sizeof err));
    json_t *rows = json_object_get(lb, "rows");
    static const char *const want_heads[6] = { "[1, 2, 4, 4]", "[4, 4, 4, 4]", "[1, 1, 4, 4]", "[2, 2, 4, 4]", "[1, 4, 4, 4]", "[2, 4, 4, 4]" };
    static const int want_rung[6] = { 2, 2, 1, 0, 0, 0 };
    for (int i = 0; i < 6; i++) {
        json_t *r = json_array_get(rows, (size_t)i);
        char *h = json_dumps(json_object_get(r, "heads"), JSON_COMPACT);
        (void)want_heads;
        ASSERT_EQ_INT(want_rung[i], (int)json_integer_value(json_object_get(r, "rung")));
        ASSERT_EQ_INT(i + 1, (int)json_integer_value(json_object_get(r, "rank")));
        ASSERT_EQ_INT(want_rung[i] < 2, json_is_true(json_object_get(r, "pruned")));
        free(h);
    }
    ASSERT_NEAR(-0.03, json_number_value(json_object_get(json_object_get(json_array_get(rows, 0), "delta"), "mean")), 1e-9);
    ASSERT_NEAR(-0.02, json_number_value(json_object_get(json_object_get(json_array_get(rows, 2), "delta"), "mean")), 1e-9);
    json_t *hv = json_object_get(lb, "halving");
    ASSERT_EQ_INT(480, (int)json_integer_value(json_object_get(hv, "steps_trained")));
    ASSERT_EQ_INT(1080, (int)json_integer_value(json_object_get(hv, "full_grid_steps")));
    ASSERT_EQ_INT(480 * 64, (int)json_integer_value(json_object_get(hv, "tokens_spent")));
    /* pruned schedules are not compared with the survivors (null), survivors are; Δ carries its step */
    for (int i = 0; i < 6; i++) {
        json_t *r = json_array_get(rows, (size_t)i);
        ASSERT_EQ_INT(want_rung[i] < 2, json_is_null(json_object_get(r, "tied_best")));
    }
    ASSERT_EQ_INT(30, (int)json_integer_value(json_object_get(json_object_get(json_array_get(rows, 2), "delta"), "step")));
    char *csv = leaderboard_csv(lb);
    ASSERT_CONTAINS(csv, ",rung,pruned");
    free(csv);
    char *tbl = leaderboard_table(lb);
    ASSERT_CONTAINS(tbl, "tokens spent: 30720 of the full grid's 69120");
    ASSERT_CONTAINS(tbl, "pruned (not compared with the survivors");
    ASSERT_CONTAINS(tbl, " @30");
    /* the survivors' section comes first */
    ASSERT_TRUE(strstr(tbl, "pruned (not compared") > strstr(tbl, "(uniform baseline)"));
    free(tbl);
    json_decref(lb);
    queue_release(&qu);
    store_close(st);
}

TEST(rung_report_is_checked) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1]", "{\"eta\": 2, \"rungs\": [0.5]}", &qu, &wid);
    lease_t l;
    ASSERT_EQ_INT(1, lease_one(&qu, wid, &l));
    char err[512], sb[16] = "";
    const char *state;
    ASSERT_EQ_INT(STORE_EINVAL, halving_report(&qu, l.job, l.token, 44, 1.0, &state, sb, err, sizeof err));
    ASSERT_CONTAINS(err, "step: 44 is not the job's stop_at_step 45");
    ASSERT_EQ_INT(STORE_EINVAL, halving_report(&qu, l.job, l.token, 45, 1.0, &state, sb, err, sizeof err));
    ASSERT_CONTAINS(err, "report the rung's checkpoint first");
    ASSERT_EQ_INT(STORE_ECONFLICT, halving_report(&qu, l.job, "nope", 45, 1.0, &state, sb, err, sizeof err));
    ASSERT_STREQ("leased", sb);
    ASSERT_EQ_INT(STORE_ENOTFOUND, halving_report(&qu, 999, l.token, 45, 1.0, &state, sb, err, sizeof err));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM rung_results"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'leased'"));
    queue_release(&qu);
    store_close(st);
}

/* A job that fails for good at a rung counts as reported without a value: the rung is decided without it */
TEST(a_failed_job_does_not_block_the_rung) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1, 2]", "{\"eta\": 3, \"rungs\": [0.111, 0.333]}", &qu, &wid);
    lease_t L[12];
    for (int i = 0; i < 12; i++) ASSERT_EQ_INT(1, lease_one(&qu, wid, &L[i]));
    int failed = -1;
    for (int i = 0; i < 12; i++) {
        if (L[i].ord == 5 && L[i].seed == 2) {   /* ord 5, second seed */
            const char *ns;
            ASSERT_EQ_INT(0, queue_fail(&qu, L[i].job, L[i].token, "boom", 0, &ns));
            ASSERT_STREQ("failed", ns);
            failed = i;
            continue;
        }
        report_rung(st, &qu, &L[i]);
    }
    ASSERT_TRUE(failed >= 0);
    /* the failure came last: the rung is complete with it (the API ticks after a final fail) */
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM halving_decisions"));
    int decided = 0;
    char err[512];
    ASSERT_EQ_INT(0, halving_tick(&qu, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(6, decided);
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM halving_decisions WHERE rung = 0"));
    /* ord 5 has one seed at the rung: provisional, ranked by its seed-adjusted Δ (−0.02, second after ord 2's
     * −0.03; provisional is not a sort key), so ord 2 and ord 5 are promoted and ord 4 pruned */
    ASSERT_EQ_INT(2, (int)ord_state_count(st, 4, "pruned"));
    ASSERT_EQ_INT(1, (int)ord_state_count(st, 5, "queued"));
    ASSERT_EQ_INT(1, (int)ord_state_count(st, 5, "failed"));
    queue_release(&qu);
    store_close(st);
}

/* The baseline fails at a rung: no Δ exists there, so nothing is promoted or pruned; the status says why */
TEST(a_rung_without_a_baseline_value_is_held) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1, 2]", "{\"eta\": 3, \"rungs\": [0.111, 0.333]}", &qu, &wid);
    lease_t L[12];
    for (int i = 0; i < 12; i++) ASSERT_EQ_INT(1, lease_one(&qu, wid, &L[i]));
    for (int i = 0; i < 12; i++) {
        if (L[i].ord == 0) {   /* the uniform baseline: both seeds fail for good */
            const char *ns;
            ASSERT_EQ_INT(0, queue_fail(&qu, L[i].job, L[i].token, "out of memory", 0, &ns));
            continue;
        }
        report_rung(st, &qu, &L[i]);
    }
    int decided = 0;
    char err[512], why[512] = "";
    ASSERT_EQ_INT(0, halving_tick(&qu, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, decided);
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM halving_decisions"));
    ASSERT_EQ_INT(10, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'paused'"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'pruned'"));
    ASSERT_EQ_INT(1, halving_held(st, 1, why, sizeof why, err, sizeof err));
    printf("held: %s\n", why);
    ASSERT_CONTAINS(why, "halving rung 0 (step 10) is held: the uniform baseline has no val loss there");
    ASSERT_CONTAINS(why, "requeue");
    queue_release(&qu);
    store_close(st);
}

TEST(async_promotes_before_the_rung_is_complete) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1]", "{\"eta\": 2, \"rungs\": [0.5], \"mode\": \"async\"}", &qu, &wid);
    lease_t L[6];
    for (int i = 0; i < 6; i++) ASSERT_EQ_INT(1, lease_one(&qu, wid, &L[i]));
    /* lease order: the baseline first, then ord 1..5 */
    ASSERT_EQ_INT(0, (int)L[0].ord);
    ASSERT_STREQ("queued", report_rung(st, &qu, &L[0]));   /* the baseline: always promoted, at once */
    /* ord 2 (Δ -0.03) completes second: top ⌊2/2⌋ = 1 of {baseline, ord 2} is ord 2: promoted at once */
    int i2 = -1;
    for (int i = 0; i < 6; i++) if (L[i].ord == 2) i2 = i;
    ASSERT_STREQ("queued", report_rung(st, &qu, &L[i2]));
    /* ord 1 (Δ +0.02): ⌊3/2⌋ = 1 and it is third of three: waits */
    int i1 = -1;
    for (int i = 0; i < 6; i++) if (L[i].ord == 1) i1 = i;
    ASSERT_STREQ("paused", report_rung(st, &qu, &L[i1]));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'leased'"));
    for (int i = 0; i < 6; i++) if (i != 0 && i != i1 && i != i2) report_rung(st, &qu, &L[i]);
    /* the rung complete: every schedule decided once, the rest pruned (ord 1 among them) */
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM halving_decisions"));
    ASSERT_EQ_INT(1, (int)ord_state_count(st, 1, "pruned"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM jobs WHERE state IN ('paused', 'leased')"));
    ASSERT_EQ_INT(1, (int)ord_state_count(st, 5, "queued"));   /* ord 5 (Δ -0.02) promoted when it completed */
    queue_release(&qu);
    store_close(st);
}


/* A lease to a rung ends only in the rung report: complete (the worker's result at 100/100 with a partial or
 * invented loss) is refused and changes nothing; a result whose steps is not the job's is refused too. */
TEST(complete_refused_for_a_rung_lease) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1]", "{\"eta\": 2, \"rungs\": [0.5]}", &qu, &wid);
    lease_t l;
    ASSERT_EQ_INT(1, lease_one(&qu, wid, &l));
    ASSERT_TRUE(l.has_stop);
    json_t *r = json_pack("{s:f, s:i}", "val_loss", 2.5, "steps", 90);
    ASSERT_EQ_INT(STORE_ECONFLICT, queue_complete(&qu, l.job, l.token, r));
    ASSERT_CONTAINS(qu.err, "leased to stop at step 45 (a halving rung)");
    ASSERT_CONTAINS(qu.err, "/rung");
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM results"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'leased'"));
    json_decref(r);
    /* the rung goes through, the job is promoted (eta 2 of 6: the baseline or the best), and the full-run lease
     * accepts only a result of all 90 steps */
    report_rung(st, &qu, &l);
    lease_t f;
    int found = 0;
    for (int i = 0; i < 6 && !found; i++) {
        if (!lease_one(&qu, wid, &f)) break;
        if (!f.has_stop) found = 1; else report_rung(st, &qu, &f);
    }
    ASSERT_TRUE(found);
    r = json_pack("{s:f, s:i}", "val_loss", 2.5, "steps", 45);
    ASSERT_EQ_INT(STORE_EINVAL, queue_complete(&qu, f.job, f.token, r));
    ASSERT_CONTAINS(qu.err, "result.steps: 45 is not the job's train.steps 90");
    json_decref(r);
    r = json_pack("{s:f, s:i}", "val_loss", 2.5, "steps", 90);
    ASSERT_EQ_INT(0, queue_complete(&qu, f.job, f.token, r));
    json_decref(r);
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM results"));
    queue_release(&qu);
    store_close(st);
}

/* A paused job (stopped at its rung, waiting for the decision) can be cancelled like a queued or leased one;
 * the rung is then decided without it. */
TEST(a_paused_job_can_be_cancelled) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1]", "{\"eta\": 2, \"rungs\": [0.5]}", &qu, &wid);
    lease_t l;
    ASSERT_EQ_INT(1, lease_one(&qu, wid, &l));
    ASSERT_STREQ("paused", report_rung(st, &qu, &l));
    ASSERT_EQ_INT(0, queue_cancel(&qu, l.job));
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT state = 'cancelled' FROM jobs WHERE id = %lld", l.job);
    ASSERT_EQ_INT(1, (int)qv(st, sql));
    ASSERT_EQ_INT(0, queue_cancel(&qu, l.job));   /* again: idempotent */
    queue_release(&qu);
    store_close(st);
}

/* Promotions due at start (or after an expiry or a cancel) are taken for every halving sweep, not only the
 * first 1,024: here the 1,030th sweep's rung is complete (its last job failed outside a report). */
TEST(promotions_reach_every_sweep) {
    store *st = fresh_store();
    char err[1024], spec[8192];
    sweeps_created c;
    ASSERT_EQ_INT(0, store_begin(st));
    for (int i = 0; i < 1030; i++) {
        const char *t = tiny(90, "[1]", "{\"eta\": 2, \"rungs\": [0.5]}");
        snprintf(spec, sizeof spec, "%s", t);
        char *name = strstr(spec, "\"name\": \"h\"");
        ASSERT_TRUE(name != NULL);
        char nm[32];
        snprintf(nm, sizeof nm, "\"name\": \"h%04d\"", i);
        size_t rest = strlen(name + 11);
        memmove(name + strlen(nm), name + 11, rest + 1);
        memcpy(name, nm, strlen(nm));
        if (sweeps_create_json(st, spec, strlen(spec), &c, err, sizeof err) != 0) HFAIL("create %d: %s", i, err);
    }
    ASSERT_EQ_INT(0, store_commit(st));
    ASSERT_EQ_INT(1030, (int)qv(st, "SELECT count(*) FROM sweeps"));
    long long last = qv(st, "SELECT max(id) FROM sweeps");
    char sql[512];
    snprintf(sql, sizeof sql, "UPDATE jobs SET state = 'paused' WHERE sweep_id = %lld", last);
    ASSERT_EQ_INT(0, store_exec(st, sql));
    snprintf(sql, sizeof sql, "INSERT INTO rung_results (job_id, rung, step, attempt, val_loss, reported_at) "
             "SELECT id, 0, 45, 1, 3.0 + id / 1000.0, 0 FROM jobs WHERE sweep_id = %lld", last);
    ASSERT_EQ_INT(0, store_exec(st, sql));
    snprintf(sql, sizeof sql, "UPDATE jobs SET state = 'failed' WHERE id = (SELECT max(id) FROM jobs WHERE sweep_id = %lld)", last);
    ASSERT_EQ_INT(0, store_exec(st, sql));
    int decided = 0;
    queue q;
    queue_init(&q, st, 60, 3);
    ASSERT_EQ_INT(0, store_begin(st));
    ASSERT_EQ_INT(0, halving_tick_all(&q, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, store_commit(st));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM halving_decisions WHERE sweep_id = %lld", last);
    ASSERT_EQ_INT(6, (int)qv(st, sql));
    ASSERT_EQ_INT(6, decided);
    queue_release(&q);
    store_close(st);
}

static long long vm_ops;
static int count_ops(void *u) { (void)u; vm_ops += 100; return 0; }

/* A rung report reads each schedule's jobs once, not every paused job once per schedule: the SQLite work of a
 * report that does not complete the rung (no ranking) grows with the schedules, not with schedules × reports
 * (at 3,000 schedules it held the event loop 17 s; bench/bench_halving_stall.sh, docs/PERF.md). The work is
 * counted in SQLite virtual-machine steps (a progress handler), not timed. */
TEST(a_rung_report_reads_each_schedule_once) {
    store *st = fresh_store();
    char err[1024];
    const char *spec = "{ \"name\": \"big\", \"model\": {\"n_layer\": 16, \"d_model\": 64, \"vocab_size\": 256, "
        "\"padded_vocab_size\": 256, \"seq_len\": 32}, \"rules\": {\"h_base\": 16, \"max_head_dim\": 0, \"min_block\": 1, "
        "\"max_block\": 0, \"min_baseline\": 0}, \"sample\": {\"n\": 600, \"seed\": 1}, \"seeds\": [1], \"train\": "
        "{\"batch_size\": 2, \"seq_len\": 32, \"steps\": 90, \"lr\": 0.001}, \"eval\": {\"every\": 0, \"batches\": 1}, "
        TINY_DATA ", \"halving\": {\"eta\": 3, \"rungs\": [0.5]} }";
    sweeps_created c;
    if (sweeps_create_json(st, spec, strlen(spec), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    ASSERT_GE_INT(qv(st, "SELECT count(*) FROM schedules"), 600);   /* the sample and the baseline */
    /* all but the last 2 jobs are at the rung already */
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'paused', attempt = 1, step = 45, checkpoint_step = 45 "
                                    "WHERE id <= (SELECT max(id) - 2 FROM jobs)"));
    ASSERT_EQ_INT(0, store_exec(st, "INSERT INTO rung_results (job_id, rung, step, attempt, val_loss, reported_at) "
                                    "SELECT id, 0, 45, 1, 3.0 + (id % 97) / 1e3, 0 FROM jobs WHERE state = 'paused'"));
    queue qu;
    long long wid;
    queue_init(&qu, st, 60, 3);
    if (queue_register(&qu, "w", "h", "[]", &wid) != 0) HFAIL("register: %s", qu.err);
    lease_t l;
    ASSERT_EQ_INT(1, lease_one(&qu, wid, &l));
    char path[256], sb[16];
    double exp;
    snprintf(path, sizeof path, "/ck/job-%lld-a%lld/ckpt_45.bin", l.job, l.attempt);
    if (queue_checkpoint(&qu, l.job, l.token, path, 45, &exp) != 0) HFAIL("checkpoint: %s", qu.err);
    const char *state = NULL;
    vm_ops = 0;
    sqlite3_progress_handler(st->db, 100, count_ops, NULL);
    ASSERT_EQ_INT(0, halving_report(&qu, l.job, l.token, 45, 3.1, &state, sb, err, sizeof err));
    sqlite3_progress_handler(st->db, 0, NULL, NULL);
    ASSERT_STREQ("paused", state);
    printf("a rung report at 600 schedules: %lld SQLite VM steps (%lld per schedule)\n", vm_ops, vm_ops / 600);
    ASSERT_LT(vm_ops, 600 * 300);
    queue_release(&qu);
    store_close(st);
}

/* A done job of the full run that the outlier screen names, requeued (queue_requeue_screened, issue #37): it trains
 * the full run again from the start, halving's decisions stand, a tick decides nothing new, and the sweep finishes. */
TEST(a_requeued_screened_job_runs_the_full_run_again) {
    queue qu;
    long long wid;
    store *st = halving_sweep("[1, 2]", "{\"eta\": 3, \"rungs\": [0.111, 0.333]}", &qu, &wid);
    lease_t l;
    long long last_done = 0;
    while (lease_one(&qu, wid, &l)) {
        if (l.has_stop) report_rung(st, &qu, &l);
        else { complete(&qu, &l); last_done = l.job; }
    }
    ASSERT_EQ_INT(4, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'done'"));
    long long decisions = qv(st, "SELECT count(*) FROM halving_decisions"), rungs = qv(st, "SELECT count(*) FROM rung_results");
    char sql[256], err[512];
    snprintf(sql, sizeof sql, "SELECT rung FROM jobs WHERE id = %lld", last_done);
    long long rung = qv(st, sql);
    ASSERT_EQ_INT(2, (int)rung);   /* the full run's rung */
    ASSERT_EQ_INT(0, queue_requeue_screened(&qu, last_done, "val loss 9.9 is 80 residual SDs from the fit"));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE id = %lld AND state = 'queued' AND rung = 2 AND "
             "stop_at_step IS NULL AND checkpoint_path IS NULL", last_done);
    ASSERT_EQ_INT(1, (int)qv(st, sql));
    int n = 0;   /* promotions made by the tick (it adds to it) */
    ASSERT_EQ_INT(0, halving_tick_all(&qu, &n, err, sizeof err));
    ASSERT_EQ_INT(0, n);
    ASSERT_EQ_INT(decisions, qv(st, "SELECT count(*) FROM halving_decisions"));
    ASSERT_EQ_INT(rungs, qv(st, "SELECT count(*) FROM rung_results"));   /* the rungs it reported stand */
    ASSERT_TRUE(lease_one(&qu, wid, &l));
    ASSERT_EQ_INT(last_done, l.job);
    ASSERT_TRUE(!l.has_stop);     /* the full run */
    ASSERT_TRUE(!l.has_resume);   /* from the start */
    complete(&qu, &l);
    ASSERT_EQ_INT(0, lease_one(&qu, wid, &l));
    ASSERT_EQ_INT(4, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'done'"));
    ASSERT_EQ_INT(0, halving_tick_all(&qu, &n, err, sizeof err));
    json_t *lb = NULL;
    ASSERT_EQ_INT(0, leaderboard_build(st, 1, &lb, err, sizeof err));
    json_t *top = json_array_get(json_object_get(lb, "rows"), 0);
    ASSERT_EQ_INT(2, (int)json_integer_value(json_object_get(top, "rung")));
    ASSERT_EQ_INT(2, (int)json_integer_value(json_object_get(top, "seeds_done")));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM requeued_results"));
    json_decref(lb);
    queue_release(&qu);
    store_close(st);
}
