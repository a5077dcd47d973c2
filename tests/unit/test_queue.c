/* test_queue.c — the job life cycle in orchestrator/queue.c on a real SQLite file, without HTTP: lease order,
 * lease tokens (stale ones refused, repeated complete/fail recognised), metrics validated as a batch and stored
 * once, retries up to max_attempts, expiry and the start-up grace, and the admin operations. Each call runs in
 * its own transaction, as the API runs each request in a savepoint. */
#include "harness.h"
#include "queue.h"
#include "store.h"
#include "sweeps.h"
#define PRISM_TEST_CHECK_COUNTERS   /* every store_close checks the per-sweep counters */
#include "store_test_lib.h"

#include <math.h>

#define SPEC "{ \"name\": \"q\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, " \
             "\"padded_vocab_size\": 256, \"seq_len\": 64}, \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, " \
             "\"min_block\": 1, \"max_block\": 2}, \"seeds\": [1, 2], \"train\": {\"batch_size\": 2, \"seq_len\": 32, " \
             "\"steps\": 50, \"lr\": 0.001}, \"eval\": {\"every\": 10, \"batches\": 2}, " \
             "\"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"} }"

typedef struct fixture { store *st; queue q; long long wid; long long njobs; } fixture;

static void setup(fixture *f, double ttl, int max_attempts) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/q.db", harness_tmpdir());
    if (store_open(path, &f->st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    if (sweeps_create_json(f->st, SPEC, strlen(SPEC), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    queue_init(&f->q, f->st, ttl, max_attempts);
    ASSERT_EQ_INT(0, store_begin(f->st));
    if (queue_register(&f->q, "w1", "host", "[\"cpu\"]", &f->wid) != 0) HFAIL("register: %s", f->q.err);
    ASSERT_EQ_INT(0, store_commit(f->st));
    f->njobs = qv(f->st, "SELECT count(*) FROM jobs");
    printf("sweep: %lld jobs\n", f->njobs);
    ASSERT_TRUE(f->njobs >= 4);
}

static void teardown(fixture *f) { queue_release(&f->q); store_close(f->st); }

/* One call in its own transaction: COMMIT when it returns >= 0, ROLLBACK otherwise (as the API's savepoint). */
#define TX(f, call) ({ ASSERT_EQ_INT(0, store_begin((f)->st)); int rc_ = (call); \
                       if (rc_ >= 0) ASSERT_EQ_INT(0, store_commit((f)->st)); else store_rollback((f)->st); rc_; })

typedef struct lease { long long job, attempt, seed_index; char token[128]; int has_resume; } lease;

static int take(fixture *f, lease *l) {
    json_t *o = NULL;
    int rc = TX(f, queue_lease(&f->q, f->wid, "cpu", &o));
    if (rc == QUEUE_EMPTY) return 0;
    if (rc != QUEUE_OK) HFAIL("lease: %d %s", rc, f->q.err);
    memset(l, 0, sizeof *l);
    l->job = json_integer_value(json_object_get(o, "job_id"));
    l->attempt = json_integer_value(json_object_get(o, "attempt"));
    l->has_resume = json_object_get(o, "resume") != NULL;
    snprintf(l->token, sizeof l->token, "%s", json_string_value(json_object_get(o, "lease_token")));
    ASSERT_TRUE(json_is_object(json_object_get(o, "job")));
    ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(json_object_get(o, "job"), "train"), "steps")) == 50);
    char q[256];   /* the sweep's progress as of this lease (the worker's display shows it before any heartbeat) */
    snprintf(q, sizeof q, "SELECT count(*) FROM jobs WHERE sweep_id = (SELECT sweep_id FROM jobs WHERE id = %lld)", l->job);
    ASSERT_EQ_INT(qv(f->st, q), json_integer_value(json_object_get(o, "sweep_jobs")));
    snprintf(q, sizeof q, "SELECT count(*) FROM jobs WHERE state = 'done' AND sweep_id = (SELECT sweep_id FROM jobs WHERE "
             "id = %lld)", l->job);
    ASSERT_EQ_INT(qv(f->st, q), json_integer_value(json_object_get(o, "sweep_done")));
    json_decref(o);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT seed_index FROM jobs WHERE id = %lld", l->job);
    l->seed_index = qv(f->st, sql);
    return 1;
}

static const char *state_of(fixture *f, long long job) {
    static char buf[32];
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT state FROM jobs WHERE id = %lld", job);
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(f->st->db, sql, -1, &s, NULL);
    buf[0] = 0;
    if (sqlite3_step(s) == SQLITE_ROW) snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return buf;
}

TEST(every_first_seed_leases_before_any_second_seed_and_each_job_once) {
    fixture f;
    setup(&f, 60, 3);
    lease l;
    long long seen_second = 0, n = 0, last_si = 0;
    while (take(&f, &l)) {
        n++;
        ASSERT_GE_INT(l.seed_index, last_si);               /* seed_index never goes back */
        last_si = l.seed_index;
        if (l.seed_index == 1) seen_second++;
        ASSERT_EQ_INT(1, l.attempt);
        ASSERT_STREQ("leased", state_of(&f, l.job));
    }
    ASSERT_EQ_INT(f.njobs, n);
    ASSERT_EQ_INT(f.njobs / 2, seen_second);
    ASSERT_EQ_INT(f.njobs, qv(f.st, "SELECT count(DISTINCT lease_token) FROM jobs WHERE state = 'leased'"));
    teardown(&f);
}

TEST(a_stale_token_is_a_conflict_and_changes_nothing) {
    fixture f;
    setup(&f, 60, 3);
    lease l;
    ASSERT_TRUE(take(&f, &l));
    double exp = 0;
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_heartbeat(&f.q, l.job, "not-the-token", 5, 3.0, &exp)));
    ASSERT_EQ_INT(STORE_ENOTFOUND, TX(&f, queue_heartbeat(&f.q, 999999, l.token, 5, 3.0, &exp)));
    ASSERT_EQ_INT(0, TX(&f, queue_heartbeat(&f.q, l.job, l.token, 7, 2.5, &exp)));
    ASSERT_TRUE(exp > store_now() + 50);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT step FROM jobs WHERE id = %lld", l.job);
    ASSERT_EQ_INT(7, qv(f.st, sql));
    teardown(&f);
}

TEST(metrics_batch_is_checked_whole_and_stored_once) {
    fixture f;
    setup(&f, 60, 3);
    lease l;
    ASSERT_TRUE(take(&f, &l));
    double exp;
    int acc = -1, dup = -1;
    json_t *bad = json_loads("[{\"step\": 1, \"train_loss\": 3.1}, {\"step\": -4, \"train_loss\": 3.0}]", 0, NULL);
    ASSERT_EQ_INT(STORE_EINVAL, TX(&f, queue_metrics(&f.q, l.job, l.token, bad, &acc, &dup, &exp)));
    printf("refused: %s\n", f.q.err);
    ASSERT_CONTAINS(f.q.err, "points[1]");
    ASSERT_EQ_INT(0, qv(f.st, "SELECT count(*) FROM metrics"));  /* the good first row was not kept either */
    json_decref(bad);
    json_t *pts = json_loads("[{\"step\": 1, \"train_loss\": 3.1}, {\"step\": 2, \"train_loss\": 3.0}, "
                             "{\"step\": 2, \"val_loss\": 3.2}]", 0, NULL);
    ASSERT_EQ_INT(0, TX(&f, queue_metrics(&f.q, l.job, l.token, pts, &acc, &dup, &exp)));
    ASSERT_EQ_INT(3, acc);
    ASSERT_EQ_INT(0, dup);
    ASSERT_EQ_INT(0, TX(&f, queue_metrics(&f.q, l.job, l.token, pts, &acc, &dup, &exp)));   /* a resent batch */
    ASSERT_EQ_INT(0, acc);
    ASSERT_EQ_INT(3, dup);
    ASSERT_EQ_INT(3, qv(f.st, "SELECT count(*) FROM metrics"));
    json_decref(pts);
    teardown(&f);
}

/* A batch of more rows than one INSERT takes (QUEUE_METRIC_ROWS), with val rows, a point with an extra (inserted alone,
 * between the others) and a step sent twice: every row stored once, in arrival order, with its own values; the
 * counts of accepted and duplicate rows add up, and a half-resent batch is counted row by row. */
TEST(metrics_batch_larger_than_one_insert_is_stored_row_by_row) {
    fixture f;
    setup(&f, 60, 3);
    lease l;
    ASSERT_TRUE(take(&f, &l));
    double exp;
    int acc = -1, dup = -1;
    json_t *pts = json_array();
    for (int i = 1; i <= 40; i++) {
        json_t *p = json_pack("{s:i, s:f, s:f}", "step", i, "train_loss", 5.0 - i / 100.0, "lr", 0.001 * i);
        if (i % 4 == 0) json_object_set_new(p, "val_loss", json_real(6.0 - i / 100.0));
        if (i == 10) json_object_set_new(p, "extra", json_pack("{s:f}", "acc", 0.5));
        json_array_append_new(pts, p);
    }
    json_array_append_new(pts, json_pack("{s:i, s:f}", "step", 7, "train_loss", 9.0));   /* step 7 again: a duplicate */
    ASSERT_EQ_INT(0, TX(&f, queue_metrics(&f.q, l.job, l.token, pts, &acc, &dup, &exp)));
    ASSERT_EQ_INT(50, acc);   /* 40 train rows, 10 val rows */
    ASSERT_EQ_INT(1, dup);
    ASSERT_EQ_INT(50, qv(f.st, "SELECT count(*) FROM metrics"));
    ASSERT_EQ_INT(40, qv(f.st, "SELECT count(*) FROM metrics WHERE kind = 'train' AND value = 5.0 - step / 100.0 "
                               "AND abs(lr - 0.001 * step) < 1e-12"));
    ASSERT_EQ_INT(10, qv(f.st, "SELECT count(*) FROM metrics WHERE kind = 'val' AND value = 6.0 - step / 100.0 AND step % 4 = 0"));
    ASSERT_EQ_INT(1, qv(f.st, "SELECT count(*) FROM metrics WHERE extra IS NOT NULL AND step = 10 AND kind = 'train'"));
    /* arrival order: rowids follow the points (step 4's val row right after its train row) */
    ASSERT_EQ_INT(0, qv(f.st, "SELECT count(*) FROM metrics a JOIN metrics b ON b.rowid = a.rowid + 1 "
                              "WHERE b.step < a.step OR (b.step = a.step AND NOT (a.kind = 'train' AND b.kind = 'val'))"));
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT step FROM jobs WHERE id = %lld", l.job);
    ASSERT_EQ_INT(40, qv(f.st, sql));
    json_t *half = json_array();   /* steps 31..40 again and 41..45 new */
    for (int i = 31; i <= 45; i++) json_array_append_new(half, json_pack("{s:i, s:f}", "step", i, "train_loss", 5.0 - i / 100.0));
    ASSERT_EQ_INT(0, TX(&f, queue_metrics(&f.q, l.job, l.token, half, &acc, &dup, &exp)));
    ASSERT_EQ_INT(5, acc);
    ASSERT_EQ_INT(10, dup);
    ASSERT_EQ_INT(55, qv(f.st, "SELECT count(*) FROM metrics"));
    json_decref(pts);
    json_decref(half);
    teardown(&f);
}

TEST(complete_is_idempotent_for_its_token_only) {
    fixture f;
    setup(&f, 60, 3);
    lease l;
    ASSERT_TRUE(take(&f, &l));
    json_t *r = json_pack("{s:f, s:i}", "val_loss", 2.75, "steps", 50);
    ASSERT_EQ_INT(0, TX(&f, queue_complete(&f.q, l.job, l.token, r)));
    ASSERT_STREQ("done", state_of(&f, l.job));
    ASSERT_EQ_INT(0, TX(&f, queue_complete(&f.q, l.job, l.token, r)));          /* the same answer again */
    ASSERT_EQ_INT(1, qv(f.st, "SELECT count(*) FROM results"));
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_complete(&f.q, l.job, "other-token", r)));
    ASSERT_STREQ("done", f.q.state);
    json_t *nov = json_pack("{s:i}", "steps", 50);
    lease l2;
    ASSERT_TRUE(take(&f, &l2));
    ASSERT_EQ_INT(STORE_EINVAL, TX(&f, queue_complete(&f.q, l2.job, l2.token, nov)));   /* no val_loss */
    ASSERT_STREQ("leased", state_of(&f, l2.job));
    json_decref(r);
    json_decref(nov);
    teardown(&f);
}

TEST(retryable_failures_requeue_until_max_attempts) {
    fixture f;
    setup(&f, 60, 2);
    lease l;
    ASSERT_TRUE(take(&f, &l));
    long long job = l.job;
    const char *ns = NULL;
    ASSERT_EQ_INT(0, TX(&f, queue_fail(&f.q, job, l.token, "device lost", 1, &ns)));
    ASSERT_STREQ("queued", ns);
    ASSERT_EQ_INT(0, TX(&f, queue_fail(&f.q, job, l.token, "device lost", 1, &ns)));   /* repeated: recognised */
    ASSERT_STREQ("queued", ns);
    /* the same job comes back first (it leads the order) as attempt 2 */
    ASSERT_TRUE(take(&f, &l));
    ASSERT_EQ_INT(job, l.job);
    ASSERT_EQ_INT(2, l.attempt);
    ASSERT_EQ_INT(0, TX(&f, queue_fail(&f.q, job, l.token, "device lost again", 1, &ns)));
    ASSERT_STREQ("failed", ns);                                                     /* 2 attempts used */
    ASSERT_STREQ("failed", state_of(&f, job));
    lease l3;
    ASSERT_TRUE(take(&f, &l3));
    ASSERT_NE_INT(job, l3.job);
    ASSERT_EQ_INT(0, TX(&f, queue_fail(&f.q, l3.job, l3.token, "bad job", 0, &ns)));   /* not retryable */
    ASSERT_STREQ("failed", ns);
    teardown(&f);
}

TEST(expired_leases_return_to_the_queue_and_grace_extends_live_ones) {
    fixture f;
    setup(&f, 30, 3);
    lease a, b;
    ASSERT_TRUE(take(&f, &a));
    ASSERT_TRUE(take(&f, &b));
    int n = -1;
    ASSERT_EQ_INT(0, TX(&f, queue_expire(&f.q, store_now() + 10, &n)));   /* not yet */
    ASSERT_EQ_INT(0, n);
    ASSERT_EQ_INT(0, TX(&f, queue_grace(&f.q, store_now() + 100, &n)));   /* a restart 100 s later */
    ASSERT_EQ_INT(2, n);
    ASSERT_EQ_INT(0, TX(&f, queue_expire(&f.q, store_now() + 110, &n)));  /* inside the new TTL */
    ASSERT_EQ_INT(0, n);
    ASSERT_EQ_INT(0, TX(&f, queue_expire(&f.q, store_now() + 200, &n)));
    ASSERT_EQ_INT(2, n);
    ASSERT_STREQ("queued", state_of(&f, a.job));
    double exp;
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_heartbeat(&f.q, a.job, a.token, 3, 3.0, &exp)));   /* lease gone */
    ASSERT_STREQ("queued", f.q.state);
    teardown(&f);
}

TEST(admin_cancel_requeue_priority_and_paused_sweeps) {
    fixture f;
    setup(&f, 60, 3);
    long long last = qv(f.st, "SELECT max(id) FROM jobs");
    ASSERT_EQ_INT(0, TX(&f, queue_set_priority(&f.q, last, 10)));
    lease l;
    ASSERT_TRUE(take(&f, &l));
    ASSERT_EQ_INT(last, l.job);                             /* priority beats seed order */
    ASSERT_EQ_INT(0, TX(&f, queue_cancel(&f.q, l.job)));
    ASSERT_STREQ("cancelled", state_of(&f, l.job));
    double exp;
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_heartbeat(&f.q, l.job, l.token, 1, 3.0, &exp)));
    ASSERT_EQ_INT(0, TX(&f, queue_requeue(&f.q, l.job)));
    ASSERT_STREQ("queued", state_of(&f, l.job));
    ASSERT_EQ_INT(STORE_ENOTFOUND, TX(&f, queue_cancel(&f.q, 999999)));
    ASSERT_EQ_INT(0, TX(&f, queue_sweep_set_state(&f.q, 1, "paused")));
    json_t *o = NULL;
    ASSERT_EQ_INT(QUEUE_EMPTY, TX(&f, queue_lease(&f.q, f.wid, "cpu", &o)));    /* nothing from a paused sweep */
    ASSERT_EQ_INT(STORE_EINVAL, TX(&f, queue_sweep_set_state(&f.q, 1, "sleeping")));
    ASSERT_EQ_INT(0, TX(&f, queue_sweep_set_state(&f.q, 1, "active")));
    ASSERT_TRUE(take(&f, &l));
    ASSERT_EQ_INT(last, l.job);                              /* requeued, still first by priority */
    ASSERT_EQ_INT(2, l.attempt);
    teardown(&f);
}

TEST(requeue_screened_keeps_the_old_result_and_trains_again_from_the_start) {
    fixture f;
    double exp;
    char ck[128];
    lease l;
    setup(&f, 60, 3);
    ASSERT_TRUE(take(&f, &l));
    snprintf(ck, sizeof ck, "/ck/job-%lld-a1/resume-40.bin", l.job);
    if (TX(&f, queue_checkpoint(&f.q, l.job, l.token, ck, 40, &exp)) != 0) HFAIL("checkpoint: %s", f.q.err);
    json_t *r = json_pack("{s:f, s:i}", "val_loss", 4.25, "steps", 50);
    ASSERT_EQ_INT(0, TX(&f, queue_complete(&f.q, l.job, l.token, r)));
    json_decref(r);
    /* done and not screened: refused, naming the rule and the fix; nothing changed */
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_requeue_screened(&f.q, l.job, NULL)));
    ASSERT_STREQ("done", f.q.state);
    ASSERT_TRUE(strstr(f.q.err, "outlier screen does not leave it out") != NULL);
    ASSERT_EQ_INT(STORE_ECONFLICT, TX(&f, queue_requeue(&f.q, l.job)));   /* the plain requeue refuses done jobs */
    ASSERT_EQ_INT(1, qv(f.st, "SELECT count(*) FROM results"));
    ASSERT_EQ_INT(0, qv(f.st, "SELECT count(*) FROM requeued_results"));
    /* screened: the result moves to requeued_results with the reason, the job is queued without its checkpoint */
    ASSERT_EQ_INT(0, TX(&f, queue_requeue_screened(&f.q, l.job, "val loss 4.25 is 60 residual SDs from the fit")));
    ASSERT_STREQ("queued", state_of(&f, l.job));
    ASSERT_EQ_INT(0, qv(f.st, "SELECT count(*) FROM results"));
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM requeued_results WHERE job_id = %lld AND attempt = 1 AND val_loss = 4.25 "
             "AND reason LIKE 'val loss 4.25%%' AND completed_at > 0 AND requeued_at >= completed_at", l.job);
    ASSERT_EQ_INT(1, qv(f.st, sql));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE id = %lld AND checkpoint_path IS NULL AND step = 0 "
             "AND finished_at IS NULL AND attempt_base = 1", l.job);
    ASSERT_EQ_INT(1, qv(f.st, sql));
    ASSERT_EQ_INT(0, TX(&f, queue_requeue_screened(&f.q, l.job, "again")));   /* queued already: nothing to do */
    ASSERT_EQ_INT(1, qv(f.st, "SELECT count(*) FROM requeued_results"));
    lease l2;
    ASSERT_TRUE(take(&f, &l2));
    ASSERT_EQ_INT(l.job, l2.job);                            /* first again (same seed order), from the start */
    ASSERT_EQ_INT(2, l2.attempt);
    ASSERT_EQ_INT(0, l2.has_resume);
    r = json_pack("{s:f, s:i}", "val_loss", 3.25, "steps", 50);
    ASSERT_EQ_INT(0, TX(&f, queue_complete(&f.q, l2.job, l2.token, r)));
    json_decref(r);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM results WHERE job_id = %lld AND attempt = 2 AND val_loss = 3.25", l.job);
    ASSERT_EQ_INT(1, qv(f.st, sql));
    ASSERT_EQ_INT(1, qv(f.st, "SELECT count(*) FROM requeued_results WHERE val_loss = 4.25"));   /* the old one stays */
    ASSERT_EQ_INT(STORE_ENOTFOUND, TX(&f, queue_requeue_screened(&f.q, 999999, "x")));
    teardown(&f);
}
