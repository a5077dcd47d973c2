/* test_hotpath_cost.c — the worker routes cost the same whatever the sweep's size (issue #39). Each route's request
 * is sent through the real API (an http_session on a real SQLite file, as test_http.c) on a sweep of 1,000 jobs and
 * on one of 100,000, and its cost is read from the store's accounting (store.h: store_cost_now, the SQLite VM steps of
 * every statement the request ran, triggers included, and the rows it wrote): a count a fast machine cannot hide.
 * Both sides are printed; the big sweep may cost at most a few percent (and a small constant) more. The sweep's
 * per-state counters (sql/010_sweep_counts.sql) are checked against count(*) after every scenario.
 * timeout: 120
 */
#define _GNU_SOURCE   /* asprintf */
#include "api.h"
#include "auth.h"
#include "harness.h"
#include "http.h"
#include "store.h"
#include "sweeps.h"
#include "store_test_lib.h"

#define SPEC_HEAD "{ \"name\": \"big\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, " \
                  "\"padded_vocab_size\": 256, \"seq_len\": 64}, \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, " \
                  "\"min_block\": 1, \"max_block\": 2}, \"seeds\": [1, 2], \"train\": {\"batch_size\": 2, \"seq_len\": 32, " \
                  "\"steps\": 90, \"lr\": 0.001}, \"eval\": {\"every\": 10, \"batches\": 2}, " \
                  "\"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"}"
#define SPEC_PLAIN SPEC_HEAD " }"
#define SPEC_HALVING SPEC_HEAD ", \"halving\": {\"eta\": 3, \"rungs\": [0.111, 0.333]} }"

#define SMALL 1000
#define BIG 100000

static api A;
static store *ST;

/* A fresh database in its own folder holding one sweep (halving or not) of exactly njobs jobs: the spec's, and
 * filler schedules with two seeds each like them, inserted in one transaction. */
static void build(long long njobs, int halving) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/c%lld-%d.db", harness_tmpdir(), njobs, halving);
    if (store_open(path, &ST, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    const char *spec = halving ? SPEC_HALVING : SPEC_PLAIN;
    sweeps_created cr;
    if (sweeps_create_json(ST, spec, strlen(spec), &cr, err, sizeof err) != 0) HFAIL("create: %s", err);
    long long base = qv(ST, "SELECT count(*) FROM jobs");
    long long extra = (njobs - base) / 2;
    ASSERT_TRUE(extra > 0 && base + 2 * extra == njobs);
    char sql[2048];
    ASSERT_EQ_INT(0, store_begin(ST));
    snprintf(sql, sizeof sql, "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %lld) "
             "INSERT INTO schedules (sweep_id, heads, is_baseline, ord) SELECT %lld, '4,4,4,' || (4 + i), 0, 1000000 + i FROM k",
             extra, (long long)cr.sweep_id);
    if (store_exec(ST, sql) < 0) HFAIL("filler schedules: %s", ST->err);
    snprintf(sql, sizeof sql, "INSERT INTO jobs (sweep_id, schedule_id, seed, seed_index, priority, state, job, steps, "
             "tokens_per_step, created_at, updated_at, rung, stop_at_step) SELECT t.sweep_id, sc.id, s.seed, s.si, t.priority, "
             "'queued', t.job, t.steps, t.tokens_per_step, t.created_at, t.updated_at, t.rung, t.stop_at_step "
             "FROM schedules sc, (SELECT 1 AS seed, 0 AS si UNION ALL SELECT 2, 1) s, "
             "(SELECT * FROM jobs WHERE sweep_id = %lld ORDER BY id LIMIT 1) t WHERE sc.sweep_id = %lld AND sc.ord >= 1000000",
             (long long)cr.sweep_id, (long long)cr.sweep_id);
    if (store_exec(ST, sql) < 0) HFAIL("filler jobs: %s", ST->err);
    ASSERT_EQ_INT(0, store_commit(ST));
    ASSERT_EQ_INT(njobs, qv(ST, "SELECT count(*) FROM jobs"));
    auth_tokens t;
    memset(&t, 0, sizeof t);
    snprintf(t.worker, sizeof t.worker, "worker-token-0123456789");
    snprintf(t.admin, sizeof t.admin, "admin-token-0123456789");
    api_config cfg = { .lease_ttl = 60, .max_attempts = 3, .public_read = 1 };
    if (api_init(&A, ST, &t, &cfg, err, sizeof err) < 0) HFAIL("api_init: %s", err);
}

static void teardown(void) {
    char err[512];
    if (sweeps_counts_verify(ST, err, sizeof err) != 0) HFAIL("sweep counters: %s", err);
    api_release(&A);
    store_close(ST);
    ST = NULL;
}

/* One request through the API; its JSON answer (NULL for none, e.g. 204), its cost in *cost. Fails the case on a
 * status other than 200/201/204. */
static json_t *call(const char *method, const char *path, const char *body, store_cost *cost) {
    char *in = NULL;
    size_t n = body ? strlen(body) : 0;
    if (asprintf(&in, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer worker-token-0123456789\r\n"
                 "Content-Length: %zu\r\n\r\n%s", method, path, n, body ? body : "") < 0) HFAIL("out of memory");
    http_session s;
    http_session_init(&s, api_handle, &A);
    if (http_session_feed(&s, in, strlen(in)) < 0) HFAIL("feed %s", path);
    ASSERT_EQ_INT(0, api_flush(&A));
    if (cost) *cost = A.last_cost;
    const char *out = s.out.data ? s.out.data : "";
    int status = 0;
    sscanf(out, "HTTP/1.1 %d", &status);
    if (status != 200 && status != 201 && status != 204) HFAIL("%s %s: %s", method, path, out);
    const char *b = strstr(out, "\r\n\r\n");
    json_t *o = b && b[4] ? json_loads(b + 4, 0, NULL) : NULL;
    http_session_release(&s);
    free(in);
    return o;
}

typedef struct leased { long long job, attempt, stop; char token[128]; } leased;

static void lease(long long wid, leased *l, store_cost *cost) {
    char body[128];
    snprintf(body, sizeof body, "{\"worker_id\": %lld, \"device\": \"cpu\"}", wid);
    json_t *o = call("POST", "/api/v1/lease", body, cost);
    if (!o) HFAIL("no job to lease");
    l->job = json_integer_value(json_object_get(o, "job_id"));
    l->attempt = json_integer_value(json_object_get(o, "attempt"));
    l->stop = json_integer_value(json_object_get(o, "stop_at_step"));
    snprintf(l->token, sizeof l->token, "%s", json_string_value(json_object_get(o, "lease_token")));
    json_decref(o);
}

/* POST /api/v1/jobs/{l}/{op} with the lease's token and the rest of the body (fields after it). */
static void job_op(const leased *l, const char *op, const char *fields, store_cost *cost) {
    char path[128], body[1024];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/%s", l->job, op);
    snprintf(body, sizeof body, "{\"lease_token\": \"%s\"%s%s}", l->token, fields ? ", " : "", fields ? fields : "");
    json_decref(call("POST", path, body, cost));
}

static void checkpoint(const leased *l, long long step, store_cost *cost) {
    char f[256];
    snprintf(f, sizeof f, "\"path\": \"/ck/job-%lld-a%lld/ckpt_%lld.bin\", \"step\": %lld", l->job, l->attempt, step, step);
    job_op(l, "checkpoint", f, cost);
}

/* The cost of the route's second request (the first one warms its statements) on a sweep of njobs jobs. */
static store_cost route_cost(const char *route, long long njobs) {
    int halving = strcmp(route, "rung") == 0;
    build(njobs, halving);
    store_cost c = {0, 0}, warm;
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", &warm);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    json_decref(call("POST", "/api/v1/workers/register", "{\"name\": \"w2\"}", &c));
    if (!strcmp(route, "register")) goto out;
    leased a, b;
    lease(wid, &a, &warm);
    lease(wid, &b, &c);
    if (!strcmp(route, "lease")) goto out;
    job_op(&a, "heartbeat", "\"step\": 1", &warm);
    job_op(&b, "heartbeat", "\"step\": 1", &c);
    if (!strcmp(route, "heartbeat")) goto out;
    job_op(&a, "metrics", "\"points\": [{\"step\": 2, \"train_loss\": 3.5}]", &warm);
    job_op(&b, "metrics", "\"points\": [{\"step\": 2, \"train_loss\": 3.5}]", &c);
    if (!strcmp(route, "metrics")) goto out;
    if (halving) {   /* the rung report: checkpoint at the rung's step first */
        ASSERT_TRUE(a.stop > 0 && b.stop == a.stop);
        checkpoint(&a, a.stop, &warm);
        checkpoint(&b, b.stop, &warm);
        char f[128];
        snprintf(f, sizeof f, "\"step\": %lld, \"val_loss\": 3.25", a.stop);
        job_op(&a, "rung", f, &warm);
        job_op(&b, "rung", f, &c);
        goto out;
    }
    checkpoint(&a, 3, &warm);
    checkpoint(&b, 3, &c);
    if (!strcmp(route, "checkpoint")) goto out;
    job_op(&a, "complete", "\"result\": {\"val_loss\": 2.75, \"steps\": 90}", &warm);
    job_op(&b, "complete", "\"result\": {\"val_loss\": 2.5, \"steps\": 90}", &c);
    if (!strcmp(route, "complete")) goto out;
    leased x, y;
    lease(wid, &x, &warm);
    lease(wid, &y, &warm);
    job_op(&x, "fail", "\"error\": \"boom\", \"retryable\": false", &warm);
    job_op(&y, "fail", "\"error\": \"boom\", \"retryable\": false", &c);
out:
    teardown();
    return c;
}

/* The route's cost at SMALL and BIG jobs, printed; BIG within 5% + 40 VM steps of SMALL, the same rows written.
 * known_open: the route is known to grow (an open part of issue #39): the case is skipped with both sides printed
 * once it does, and fails once it no longer does (take the mark off then). */
static void flat_or_known(const char *route, const char *known_open) {
    store_cost s = route_cost(route, SMALL), b = route_cost(route, BIG);
    printf("%-10s  %6d jobs: %8llu VM steps, %3llu rows written\n", route, SMALL, s.vm_steps, s.rows);
    printf("%-10s  %6d jobs: %8llu VM steps, %3llu rows written\n", route, BIG, b.vm_steps, b.rows);
    fflush(stdout);
    ASSERT_TRUE(s.vm_steps > 0);
    int grows = (double)b.vm_steps > (double)s.vm_steps * 1.05 + 40;
    if (known_open && grows) SKIP("%s: %llu VM steps at %d jobs, %llu at %d: known to grow (%s)", route, s.vm_steps, SMALL,
                                  b.vm_steps, BIG, known_open);
    if (known_open) HFAIL("%s no longer grows with the sweep's size: take its known_open mark off", route);
    if (grows)
        HFAIL("%s: %llu VM steps on a sweep of %d jobs, %llu on one of %d: the route's cost grows with the sweep's size",
              route, b.vm_steps, BIG, s.vm_steps, SMALL);
    ASSERT_EQ_INT(s.rows, b.rows);
}

static void flat(const char *route) { flat_or_known(route, NULL); }

TEST(register_cost_is_flat) { flat("register"); }
TEST(lease_cost_is_flat) { flat("lease"); }
TEST(heartbeat_cost_is_flat) { flat("heartbeat"); }
TEST(metrics_cost_is_flat) { flat("metrics"); }
TEST(checkpoint_cost_is_flat) { flat("checkpoint"); }
TEST(complete_cost_is_flat) { flat("complete"); }
TEST(fail_cost_is_flat) { flat("fail"); }
/* The rung report runs the sweep's halving decision (halving_tick), which reads each rung's counters first
 * (migration 12) and aggregates the rung's jobs only when something can be decided or applied (sync: once the rung
 * is complete). */
TEST(rung_cost_is_flat) { flat("rung"); }



/* The counters stay exact through the paths no worker route takes: cancel, requeue (a job, a sweep's failed jobs),
 * expiry, priority, and a sweep deleted (its jobs cascade). */
TEST(counters_follow_every_change) {
    build(SMALL, 0);
    char err[512];
    store_cost c;
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", &c);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    leased a, b, d;
    lease(wid, &a, &c);
    lease(wid, &b, &c);
    lease(wid, &d, &c);
    job_op(&a, "heartbeat", "\"step\": 5", &c);
    job_op(&b, "fail", "\"error\": \"boom\", \"retryable\": false", &c);
    queue *q = &A.q;
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_cancel(q, a.job));
    ASSERT_EQ_INT(0, queue_requeue(q, a.job));
    json_t *ids = json_array();
    ASSERT_EQ_INT(0, queue_requeue_sweep(q, 1, "failed", NULL, ids));
    json_decref(ids);
    ASSERT_EQ_INT(0, queue_sweep_set_priority(q, 1, 3));
    int n = 0;
    ASSERT_EQ_INT(0, queue_expire(q, queue_clock(q) + 3600, &n));
    ASSERT_EQ_INT(1, n);   /* d's lease */
    ASSERT_EQ_INT(0, store_commit(ST));
    if (sweeps_counts_verify(ST, err, sizeof err) != 0) HFAIL("after the admin changes: %s", err);
    ASSERT_EQ_INT(SMALL, qv(ST, "SELECT n FROM sweep_counts WHERE state = 'queued'"));
    ASSERT_EQ_INT(0, store_exec(ST, "DELETE FROM sweeps WHERE id = 1"));
    ASSERT_EQ_INT(0, qv(ST, "SELECT count(*) FROM jobs"));
    ASSERT_EQ_INT(0, qv(ST, "SELECT count(*) FROM sweep_counts"));
    teardown();
}
