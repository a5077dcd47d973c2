/* test_hotpath_cost.c — the worker routes, and the routes the page polls (the sweeps, the sweep with its cost, the jobs
 * changed since a cursor), cost the same whatever the sweep's size (issue #39). Each route's request
 * is sent through the real API (an http_session on a real SQLite file, as test_http.c) on a sweep of 1,000 jobs and
 * on one of 100,000, and its cost is read from the store's accounting (store.h: store_cost_now, the SQLite VM steps of
 * every statement the request ran, triggers included, and the rows it wrote): a count a fast machine cannot hide.
 * Both sides are printed; the big sweep may cost at most a few percent (and a small constant) more. The sweep's
 * per-state counters (sql/010_sweep_counts.sql, sql/014_job_changes.sql) are checked against count(*) and the sums
 * after every scenario; the jobs route's ?since= answers exactly the jobs changed after the cursor.
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
#include "leaderboard.h"
#include "jsonout.h"
#include "lbcache.h"

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

/* One request through the API: its HTTP status in *status, its JSON answer (NULL for none, e.g. 204), its cost
 * in *cost. */
static json_t *request(const char *method, const char *path, const char *body, store_cost *cost, int *status) {
    char *in = NULL;
    size_t n = body ? strlen(body) : 0;
    if (asprintf(&in, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer worker-token-0123456789\r\n"
                 "Content-Length: %zu\r\n\r\n%s", method, path, n, body ? body : "") < 0) HFAIL("out of memory");
    http_session s;
    http_session_init(&s, api_handle, &A);
    if (http_session_feed(&s, in, strlen(in)) < 0) HFAIL("feed %s", path);
    ASSERT_EQ_INT(0, api_flush(&A));
    if (cost) *cost = A.last_cost;
    buf wire = {0};   /* the answer as written: out with any shared body (the leaderboard's) in its place */
    if (http_session_output(&s, &wire) < 0) HFAIL("out of memory");
    const char *out = wire.data ? wire.data : "";
    *status = 0;
    sscanf(out, "HTTP/1.1 %d", status);
    const char *b = strstr(out, "\r\n\r\n");
    json_t *o = b && b[4] ? json_loads(b + 4, 0, NULL) : NULL;
    if (*status != 200 && *status != 201 && *status != 204) fprintf(stderr, "%s %s: %s\n", method, path, out);
    buf_free(&wire);
    http_session_release(&s);
    free(in);
    return o;
}

/* request(), failing the case on a status other than 200/201/204. */
static json_t *call(const char *method, const char *path, const char *body, store_cost *cost) {
    int status;
    json_t *o = request(method, path, body, cost, &status);
    if (status != 200 && status != 201 && status != 204) HFAIL("%s %s: status %d", method, path, status);
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
    if (!strcmp(route, "metrics_extra")) {   /* an external trainer's batch: the same point with 4 extra metrics */
        const char *pts = "\"points\": [{\"step\": 2, \"train_loss\": 3.5, \"extra\": {\"tokens_per_s\": 51234.5, "
                          "\"lr_scale\": 0.93, \"mfu\": 0.41, \"loss/aux\": 0.0125}}]";
        job_op(&a, "metrics", pts, &warm);
        job_op(&b, "metrics", pts, &c);
        goto out;
    }
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

/* The route's cost at SMALL (s) and BIG (b) jobs, printed; BIG within 5% + 40 VM steps of SMALL, the same rows
 * written. known_open: the route is known to grow (an open part of issue #39): the case is skipped with both sides
 * printed once it does, and fails once it no longer does (take the mark off then). */
static void judge(const char *route, store_cost s, store_cost b, const char *known_open) {
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

static void flat_or_known(const char *route, const char *known_open) {
    judge(route, route_cost(route, SMALL), route_cost(route, BIG), known_open);
}

static void flat(const char *route) { flat_or_known(route, NULL); }

TEST(register_cost_is_flat) { flat("register"); }
TEST(lease_cost_is_flat) { flat("lease"); }
TEST(heartbeat_cost_is_flat) { flat("heartbeat"); }
TEST(metrics_cost_is_flat) { flat("metrics"); }
/* A point with extras (sql/016_metric_extras.sql) is the same row with one more column: flat in the sweep's size,
 * the same rows written, and a few VM steps more than the point without (which runs the unchanged statement). */
TEST(metrics_with_extras_cost_is_flat) {
    store_cost plain = route_cost("metrics", SMALL), s = route_cost("metrics_extra", SMALL), b = route_cost("metrics_extra", BIG);
    judge("metrics+x", s, b, NULL);
    printf("a point with 4 extras: %llu VM steps, without: %llu (+%lld)\n", s.vm_steps, plain.vm_steps,
           (long long)s.vm_steps - (long long)plain.vm_steps);
    ASSERT_EQ_INT(plain.rows, s.rows);
    ASSERT_TRUE(s.vm_steps <= plain.vm_steps + 10);
}
TEST(checkpoint_cost_is_flat) { flat("checkpoint"); }
TEST(complete_cost_is_flat) { flat("complete"); }
TEST(fail_cost_is_flat) { flat("fail"); }
/* The rung report runs the sweep's halving decision (halving_tick), which reads each rung's counters first
 * (migration 12) and aggregates the rung's jobs only when something can be decided or applied (sync: once the rung
 * is complete). */
TEST(rung_cost_is_flat) { flat("rung"); }



/* ---- the page's polling routes (web/app.js: every 2 s, the sweeps, the selected sweep, its leaderboard and the
 * jobs changed since its cursor) ---- */

/* The jobs route's change cursor now (its answer's "cursor"; 0 when it has none). */
static long long cursor_now(void) {
    json_t *o = call("GET", "/api/v1/sweeps/1/jobs?limit=0", NULL, NULL);
    long long c = json_integer_value(json_object_get(o, "cursor"));
    json_decref(o);
    return c;
}

/* A sweep in flight: two jobs leased, one of them completed (with a device time) and one heartbeat; then the cursor
 * is taken (*cur) and a third job leased and the first one's heartbeat arrive: what changed since the cursor. Every
 * progress moves the cursor here (rev_every_s = 0): jobs_since_coalesces_a_running_jobs_progress has the default. */
static void in_flight(leased *a, leased *b, leased *x, long long *cur) {
    A.q.rev_every_s = 0;
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", NULL);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    lease(wid, a, NULL);
    lease(wid, b, NULL);
    job_op(a, "heartbeat", "\"step\": 1, \"loss\": 4.5", NULL);
    job_op(b, "complete", "\"result\": {\"val_loss\": 2.5, \"steps\": 90, \"wall_s\": 12.5}", NULL);
    *cur = cursor_now();
    lease(wid, x, NULL);
    job_op(a, "heartbeat", "\"step\": 7, \"loss\": 4.25", NULL);
}

/* The cost of GET path (its second request: the first one warms the statements) on the sweep in flight of njobs
 * jobs; "%lld" in path is the cursor taken before the last changes. */
static store_cost page_cost(const char *path, long long njobs) {
    build(njobs, 0);
    leased a, b, x;
    long long cur;
    in_flight(&a, &b, &x, &cur);
    char p[256];
    snprintf(p, sizeof p, path, cur);
    store_cost c;
    json_decref(call("GET", p, NULL, &c));
    json_decref(call("GET", p, NULL, &c));
    teardown();
    return c;
}

static void page_flat_or_known(const char *route, const char *path, const char *known_open) {
    judge(route, page_cost(path, SMALL), page_cost(path, BIG), known_open);
}

TEST(sweeps_cost_is_flat) { page_flat_or_known("sweeps", "/api/v1/sweeps", NULL); }
TEST(sweep_cost_is_flat) { page_flat_or_known("sweep", "/api/v1/sweeps/1", NULL); }
TEST(jobs_since_cost_is_flat) { page_flat_or_known("jobs?since", "/api/v1/sweeps/1/jobs?since=%lld", NULL); }
/* the leaderboard ranks every result of the sweep (ranking.c); a poll while nothing it shows changed is answered
 * from the server's last build (lbcache.h), keyed by sweep_ranking.rev (sql/015_ranking_rev.sql) */
TEST(leaderboard_cost_is_flat) { page_flat_or_known("leaderboard", "/api/v1/sweeps/1/leaderboard", NULL); }

/* Each GET bad[i][0] answers 400 with an error containing bad[i][1]. */
static void expect_400s(const char *const bad[][2], size_t n) {
    for (size_t i = 0; i < n; i++) {
        int status;
        json_t *o = request("GET", bad[i][0], NULL, NULL, &status);
        ASSERT_EQ_INT(400, status);
        ASSERT_CONTAINS(json_string_value(json_object_get(o, "error")), bad[i][1]);
        json_decref(o);
    }
}

/* The list's pages (issue #44: 100,000 jobs were one 46.7 MB answer, sorted at each request): a page of the lease order
 * is a range of jobs_list / jobs_list_state (sql/020_jobs_list.sql), the same cost at 1,000 and 100,000 jobs, from
 * the start, after= a job, and with a state. */
TEST(jobs_page_cost_is_flat) { page_flat_or_known("jobs", "/api/v1/sweeps/1/jobs?limit=100", NULL); }
TEST(jobs_page_after_cost_is_flat) { page_flat_or_known("jobs?after", "/api/v1/sweeps/1/jobs?limit=100&after=500", NULL); }
TEST(jobs_page_state_cost_is_flat) {
    page_flat_or_known("jobs?state", "/api/v1/sweeps/1/jobs?state=queued&limit=100&after=500", NULL);
}

/* Walks the list a page of `limit` at a time (after= each answer's "after") with the query's extra parameters and
 * returns the ids in the order answered as "1,5,7"; every page holds at most limit jobs, "more" is false on the last
 * one only, and every page has the first page's cursor. */
static char *walk_pages(long long limit, const char *extra, int *pages) {
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap), p[256];
    long long after = -1, cursor = -1;
    *pages = 0;
    for (;;) {
        if (after < 0) snprintf(p, sizeof p, "/api/v1/sweeps/1/jobs?limit=%lld%s", limit, extra);
        else snprintf(p, sizeof p, "/api/v1/sweeps/1/jobs?limit=%lld%s&after=%lld", limit, extra, after);
        json_t *o = call("GET", p, NULL, NULL), *jobs = json_object_get(o, "jobs");
        ASSERT_TRUE((long long)json_array_size(jobs) <= limit);
        long long cur = json_integer_value(json_object_get(o, "cursor"));
        if (cursor < 0) cursor = cur;
        ASSERT_EQ_INT(cursor, cur);
        for (size_t i = 0; i < json_array_size(jobs); i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%lld", len ? "," : "",
                                    (long long)json_integer_value(json_object_get(json_array_get(jobs, i), "id")));
        ASSERT_TRUE(len < cap - 32);
        (*pages)++;
        int more = json_is_true(json_object_get(o, "more"));
        if (more) after = json_integer_value(json_object_get(o, "after"));
        else ASSERT_TRUE(json_object_get(o, "after") == NULL);
        json_decref(o);
        if (!more) break;
        ASSERT_TRUE(*pages < 10000);
    }
    return out;
}

/* The ids of the sweep's jobs (with a state: of that state) in the lease order, by the query the list had before it
 * was paged (a sort of the sweep's rows on the schedule's is_baseline and ord). */
static char *lease_order(const char *state) {
    sqlite3_stmt *q = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(ST->db, "SELECT group_concat(id, ',') FROM (SELECT j.id FROM jobs j JOIN schedules "
                  "sc ON sc.id = j.schedule_id WHERE j.sweep_id = 1 AND (?1 IS NULL OR j.state = ?1) ORDER BY j.priority DESC, "
                  "j.seed_index, sc.is_baseline DESC, sc.ord, j.id)", -1, &q, NULL));
    if (state) sqlite3_bind_text(q, 1, state, -1, SQLITE_STATIC);
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(q));
    char *s = strdup(sqlite3_column_text(q, 0) ? (const char *)sqlite3_column_text(q, 0) : "");
    sqlite3_finalize(q);
    return s;
}

/* Page by page (after= the last job of each) the list is the lease order exactly, each job once, across three
 * priority levels and with a state filter; a limit above the page is cut to it; bad paging parameters are 400s naming
 * them and the fix. */
TEST(jobs_pages_walk_the_lease_order) {
    build(SMALL, 0);
    ASSERT_EQ_INT(0, store_begin(ST));   /* three priority levels, and some jobs out of the queued state */
    for (long long id = 1; id <= SMALL; id += 7) ASSERT_EQ_INT(0, queue_set_priority(&A.q, id, 5));
    for (long long id = 3; id <= SMALL; id += 11) ASSERT_EQ_INT(0, queue_set_priority(&A.q, id, -2));
    for (long long id = 2; id <= SMALL; id += 13) ASSERT_EQ_INT(0, queue_cancel(&A.q, id));
    ASSERT_EQ_INT(0, store_commit(ST));
    int pages;
    char *got = walk_pages(37, "", &pages), *want = lease_order(NULL);
    printf("all jobs: %d pages of 37\n", pages);
    ASSERT_STREQ(want, got);
    ASSERT_EQ_INT((SMALL + 36) / 37, pages);
    free(got);
    free(want);
    got = walk_pages(23, "&state=queued", &pages);
    want = lease_order("queued");
    printf("queued jobs: %d pages of 23\n", pages);
    ASSERT_STREQ(want, got);
    free(got);
    free(want);
    json_t *o = call("GET", "/api/v1/sweeps/1/jobs?limit=5000", NULL, NULL);   /* at most a page */
    ASSERT_EQ_INT(VIEWS_JOBS_PAGE, json_array_size(json_object_get(o, "jobs")));
    json_decref(o);
    static const char *const bad[][2] = {
        { "/api/v1/sweeps/1/jobs?after=abc", "after" }, { "/api/v1/sweeps/1/jobs?after=999999", "not a job of sweep 1" },
        { "/api/v1/sweeps/1/jobs?offset=5001", "after=" }, { "/api/v1/sweeps/1/jobs?since=1&after=5", "after with since" },
        { "/api/v1/sweeps/1/jobs?after=5&offset=1", "after with offset" },
    };
    expect_400s(bad, sizeof bad / sizeof bad[0]);
    teardown();
}

/* npoints train points of job 1 (attempt 0, steps 1..npoints), inserted in one transaction. */
static void curve_points(long long npoints) {
    char sql[512];
    snprintf(sql, sizeof sql, "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %lld) INSERT INTO "
             "metrics (job_id, attempt, step, kind, value, lr, tokens, tok_per_s) SELECT 1, 0, i, 'train', 3.5, 0.001, "
             "i * 1024, 1000.0 FROM k", npoints);
    ASSERT_EQ_INT(0, store_begin(ST));
    if (store_exec(ST, sql) < 0) HFAIL("points: %s", ST->err);
    ASSERT_EQ_INT(0, store_commit(ST));
}

/* A curve's page costs its points, not the curve's (a 3M-point curve held the loop 23 s): the first page of a curve of
 * 6,000 points and of one of 100,000 the same VM steps (within 5% + 40); walked since= each page's last_step, the
 * pages give every point once, in step order, "more" false on the last. */
TEST(curve_page_cost_is_flat) {
    store_cost c[2];
    const long long n[2] = { 6000, BIG };
    for (int k = 0; k < 2; k++) {
        build(SMALL, 0);
        curve_points(n[k]);
        json_decref(call("GET", "/api/v1/jobs/1/metrics?kind=train", NULL, &c[k]));
        json_decref(call("GET", "/api/v1/jobs/1/metrics?kind=train", NULL, &c[k]));
        if (k == 1) break;
        teardown();
    }
    printf("curve page: %lld points: %llu VM steps; %lld points: %llu VM steps\n", n[0], c[0].vm_steps, n[1], c[1].vm_steps);
    ASSERT_TRUE(c[0].vm_steps > 0);
    if ((double)c[1].vm_steps > (double)c[0].vm_steps * 1.05 + 40)
        HFAIL("a curve's page: %llu VM steps for a curve of %lld points, %llu for one of %lld: it grows with the curve",
              c[1].vm_steps, n[1], c[0].vm_steps, n[0]);
    long long since = -1, total = 0, pages = 0;
    for (;;) {   /* the 100,000-point curve, page by page */
        char p[128];
        snprintf(p, sizeof p, "/api/v1/jobs/1/metrics?kind=train&since=%lld", since);
        json_t *o = call("GET", p, NULL, NULL), *pts = json_object_get(o, "points");
        ASSERT_TRUE(json_array_size(pts) <= VIEWS_POINTS_PAGE);
        for (size_t i = 0; i < json_array_size(pts); i++) {
            long long step = json_integer_value(json_object_get(json_array_get(pts, i), "step"));
            ASSERT_EQ_INT(since + (since < 0 ? 2 : 1), step);   /* steps 1, 2, ...: each once, in order */
            since = step;
        }
        total += (long long)json_array_size(pts);
        pages++;
        int more = json_is_true(json_object_get(o, "more"));
        json_decref(o);
        if (!more) break;
        ASSERT_TRUE(pages < 1000);
    }
    printf("walked: %lld points in %lld pages\n", total, pages);
    ASSERT_EQ_INT(BIG, total);
    ASSERT_EQ_INT((BIG + VIEWS_POINTS_PAGE - 1) / VIEWS_POINTS_PAGE, pages);
    int status;
    json_decref(request("GET", "/api/v1/jobs/1/metrics?kind=train&limit=0", NULL, NULL, &status));
    ASSERT_EQ_INT(400, status);
    teardown();
}

/* The ids of an answer's jobs, ascending, as "1,5,7". */
static void ids_of(json_t *o, char *out, size_t n) {
    json_t *jobs = json_object_get(o, "jobs");
    long long v[64];
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(jobs) && k < 64; i++)
        v[k++] = json_integer_value(json_object_get(json_array_get(jobs, i), "id"));
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) { long long t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < k && len < n; i++) len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? "," : "", v[i]);
}

static json_t *jobs_since(long long cur, const char *extra) {
    char p[256];
    snprintf(p, sizeof p, "/api/v1/sweeps/1/jobs?since=%lld%s", cur, extra ? extra : "");
    return call("GET", p, NULL, NULL);
}

static json_t *job_of(json_t *o, long long id) {
    json_t *jobs = json_object_get(o, "jobs");
    for (size_t i = 0; i < json_array_size(jobs); i++)
        if (json_integer_value(json_object_get(json_array_get(jobs, i), "id")) == id) return json_array_get(jobs, i);
    return NULL;
}

/* ?since=CURSOR answers exactly the jobs changed after the cursor (leased, heartbeat, completed, cancelled, a
 * priority), each as the full list shows it, and a cursor that reports nothing more; ?limit= pages through them;
 * a cursor ahead of the server's answers the whole list (full); bad parameters are 400s naming them. */
TEST(jobs_since_answers_the_changed_jobs) {
    build(SMALL, 0);
    json_t *o = call("GET", "/api/v1/sweeps/1/jobs", NULL, NULL);
    ASSERT_EQ_INT(SMALL, json_array_size(json_object_get(o, "jobs")));
    ASSERT_TRUE(json_is_true(json_object_get(o, "full")));
    long long c0 = json_integer_value(json_object_get(o, "cursor"));
    ASSERT_TRUE(c0 > 0);
    json_decref(o);
    o = jobs_since(c0, NULL);   /* nothing changed */
    ASSERT_EQ_INT(0, json_array_size(json_object_get(o, "jobs")));
    ASSERT_EQ_INT(c0, json_integer_value(json_object_get(o, "cursor")));
    ASSERT_TRUE(json_is_false(json_object_get(o, "full")));
    json_decref(o);
    leased a, b, x;
    long long cur;
    in_flight(&a, &b, &x, &cur);
    char ids[512], want[128];
    o = jobs_since(c0, NULL);   /* everything in flight */
    ids_of(o, ids, sizeof ids);
    snprintf(want, sizeof want, "%lld,%lld,%lld", a.job, b.job, x.job);
    ASSERT_STREQ(want, ids);
    json_t *jb = job_of(o, b.job);
    ASSERT_STREQ("done", json_string_value(json_object_get(jb, "state")));
    ASSERT_NEAR(2.5, json_real_value(json_object_get(jb, "val_loss")), 1e-12);
    long long c1 = json_integer_value(json_object_get(o, "cursor"));
    json_decref(o);
    o = jobs_since(cur, NULL);   /* after the cursor in_flight took: the third lease and a's heartbeat, not b */
    ids_of(o, ids, sizeof ids);
    snprintf(want, sizeof want, "%lld,%lld", a.job, x.job);
    ASSERT_STREQ(want, ids);
    ASSERT_EQ_INT(7, json_integer_value(json_object_get(job_of(o, a.job), "step")));
    ASSERT_STREQ("leased", json_string_value(json_object_get(job_of(o, x.job), "state")));
    ASSERT_EQ_INT(c1, json_integer_value(json_object_get(o, "cursor")));
    json_decref(o);
    o = jobs_since(cur, "&limit=1");   /* paged: the older change first, then from its cursor the other */
    ASSERT_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
    ASSERT_TRUE(json_is_true(json_object_get(o, "more")));
    long long first = json_integer_value(json_object_get(json_array_get(json_object_get(o, "jobs"), 0), "id"));
    long long cp = json_integer_value(json_object_get(o, "cursor"));
    ASSERT_TRUE(cp > cur && cp < c1);
    json_decref(o);
    o = jobs_since(cp, "&limit=1");
    ASSERT_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
    ASSERT_TRUE(json_is_false(json_object_get(o, "more")));
    ASSERT_NE_INT(first, json_integer_value(json_object_get(json_array_get(json_object_get(o, "jobs"), 0), "id")));
    ASSERT_EQ_INT(c1, json_integer_value(json_object_get(o, "cursor")));
    json_decref(o);
    o = jobs_since(c1, NULL);   /* an idle poll */
    ASSERT_EQ_INT(0, json_array_size(json_object_get(o, "jobs")));
    json_decref(o);
    /* the admin's changes of jobs no worker holds: a cancel and a job's priority */
    long long q1 = qv(ST, "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1");
    long long q2 = qv(ST, "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1 OFFSET 1");
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_cancel(&A.q, q1));
    ASSERT_EQ_INT(0, queue_set_priority(&A.q, q2, 5));
    ASSERT_EQ_INT(0, store_commit(ST));
    o = jobs_since(c1, NULL);
    ids_of(o, ids, sizeof ids);
    snprintf(want, sizeof want, "%lld,%lld", q1, q2);
    ASSERT_STREQ(want, ids);
    json_decref(o);
    o = jobs_since(c1 + 1000000, NULL);   /* a cursor of another database (or one restored from a backup) */
    ASSERT_EQ_INT(SMALL, json_array_size(json_object_get(o, "jobs")));
    ASSERT_TRUE(json_is_true(json_object_get(o, "full")));
    json_decref(o);
    static const char *const bad[][2] = {
        { "/api/v1/sweeps/1/jobs?since=abc", "since" }, { "/api/v1/sweeps/1/jobs?since=-1", "since" },
        { "/api/v1/sweeps/1/jobs?since=1&state=done", "state" }, { "/api/v1/sweeps/1/jobs?since=1&offset=5", "offset" },
    };
    expect_400s(bad, sizeof bad / sizeof bad[0]);
    teardown();
}

/* With the default rev_every_s (sql/021_rev_coalesce.sql), a leased job's progress moves its change cursor once per
 * that window: a job's first heartbeat shows in ?since=, a second one at once does not (its row has the step), one
 * after the window does, and a state change (complete) always does, at once. */
TEST(jobs_since_coalesces_a_running_jobs_progress) {
    build(SMALL, 0);
    ASSERT_NEAR(QUEUE_DEFAULT_REV_EVERY_S, A.q.rev_every_s, 0);
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", NULL);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    leased a;
    lease(wid, &a, NULL);
    long long c0 = cursor_now();
    job_op(&a, "heartbeat", "\"step\": 3, \"loss\": 4.5", NULL);
    o = jobs_since(c0, NULL);   /* the first progress: shown */
    ASSERT_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
    ASSERT_EQ_INT(3, json_integer_value(json_object_get(job_of(o, a.job), "step")));
    json_decref(o);
    long long c1 = cursor_now();
    job_op(&a, "metrics", "\"points\": [{\"step\": 5, \"train_loss\": 4.25}]", NULL);
    job_op(&a, "heartbeat", "\"step\": 6, \"loss\": 4.0", NULL);
    o = jobs_since(c1, NULL);   /* within the window: the cursor stays */
    ASSERT_EQ_INT(0, json_array_size(json_object_get(o, "jobs")));
    ASSERT_EQ_INT(c1, json_integer_value(json_object_get(o, "cursor")));
    json_decref(o);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT step FROM jobs WHERE id = %lld", a.job);
    ASSERT_EQ_INT(6, qv(ST, sql));   /* the row itself follows every report */
    A.q.rev_moved[a.job % QUEUE_REV_SLOTS].at -= QUEUE_DEFAULT_REV_EVERY_S;   /* the window has passed */
    job_op(&a, "heartbeat", "\"step\": 7, \"loss\": 3.5", NULL);
    o = jobs_since(c1, NULL);
    ASSERT_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
    ASSERT_EQ_INT(7, json_integer_value(json_object_get(job_of(o, a.job), "step")));
    json_decref(o);
    long long c2 = cursor_now();
    job_op(&a, "heartbeat", "\"step\": 8, \"loss\": 3.25", NULL);   /* coalesced again, then completed: shown */
    job_op(&a, "complete", "\"result\": {\"val_loss\": 2.5, \"steps\": 90}", NULL);
    o = jobs_since(c2, NULL);
    ASSERT_EQ_INT(1, json_array_size(json_object_get(o, "jobs")));
    ASSERT_STREQ("done", json_string_value(json_object_get(job_of(o, a.job), "state")));
    json_decref(o);
    teardown();
}

/* The sweep's cost (GET sweeps/{id}) from the counters equals the sum over its jobs and results, with a job leased
 * (read live), one done and one requeued after it was screened (its result moved away). */
TEST(sweep_cost_matches_the_jobs) {
    build(SMALL, 0);
    leased a, b, x;
    long long cur;
    in_flight(&a, &b, &x, &cur);
    json_t *o = call("GET", "/api/v1/sweeps/1", NULL, NULL);
    json_t *cost = json_object_get(o, "cost");
    long long tokens = qv(ST, "SELECT CAST(total(min(step, CASE WHEN steps > 0 THEN steps ELSE step END) * tokens_per_step) "
                              "AS INTEGER) FROM jobs WHERE sweep_id = 1");
    ASSERT_TRUE(tokens > 0);
    ASSERT_EQ_INT(tokens, json_integer_value(json_object_get(cost, "tokens_trained")));
    ASSERT_EQ_INT(1, json_integer_value(json_object_get(cost, "jobs_timed")));
    ASSERT_NEAR(12.5 / 3600.0, json_real_value(json_object_get(cost, "device_hours")), 1e-12);
    json_decref(o);
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_requeue_screened(&A.q, b.job, "an outlier"));
    ASSERT_EQ_INT(0, store_commit(ST));
    o = call("GET", "/api/v1/sweeps/1", NULL, NULL);
    cost = json_object_get(o, "cost");
    ASSERT_EQ_INT(0, json_integer_value(json_object_get(cost, "jobs_timed")));
    ASSERT_NEAR(0, json_real_value(json_object_get(cost, "device_hours")), 1e-12);
    json_decref(o);
    teardown();
}

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


/* ---- the leaderboard cache (orchestrator/lbcache.h) ---- */

static long long rank_rev(void) { return qv(ST, "SELECT rev FROM sweep_ranking WHERE sweep_id = 1"); }

/* GET leaderboard and a fresh leaderboard_build of the same state, both as sorted JSON text: equal, printed when not. */
static void leaderboard_is_fresh(const char *after) {
    json_t *got = call("GET", "/api/v1/sweeps/1/leaderboard", NULL, NULL), *want = NULL;
    char err[512];
    ASSERT_EQ_INT(0, leaderboard_build(ST, 1, &want, err, sizeof err));
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT), *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
    if (!g || !w || strcmp(g, w)) HFAIL("after %s the route answered\n  %.400s\nbut the database ranks\n  %.400s", after, g, w);
    free(g);
    free(w);
    json_decref(got);
    json_decref(want);
}

/* With every build cheap (always rebuilt once the rev moves), the route answers exactly what a build of the
 * database gives after each change a worker or an admin path makes; what the leaderboard does not show (a
 * heartbeat, a metrics batch, a checkpoint, a priority) leaves the rev, and the cached answer, where they were;
 * a repeated poll is a hit. */
TEST(leaderboard_cache_answers_every_change) {
    build(SMALL, 0);
    A.views.lb.cheap_s = 1e9;
    leaderboard_is_fresh("the start");
    unsigned long long b0 = A.views.lb.builds;
    leaderboard_is_fresh("nothing");
    ASSERT_EQ_INT(b0, A.views.lb.builds);   /* the second poll: no build */
    ASSERT_TRUE(A.views.lb.hits >= 1);
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", NULL);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    leased a, b, d;
    long long r0 = rank_rev();
    lease(wid, &a, NULL);
    ASSERT_TRUE(rank_rev() > r0);
    leaderboard_is_fresh("a lease");
    r0 = rank_rev();
    job_op(&a, "heartbeat", "\"step\": 5, \"loss\": 4.5", NULL);
    job_op(&a, "metrics", "\"points\": [{\"step\": 6, \"train_loss\": 3.5}]", NULL);
    checkpoint(&a, 6, NULL);
    printf("rev after lease %lld, after heartbeat + metrics + checkpoint %lld\n", r0, rank_rev());
    ASSERT_EQ_INT(r0, rank_rev());
    b0 = A.views.lb.builds;
    leaderboard_is_fresh("a heartbeat, metrics and a checkpoint");
    ASSERT_EQ_INT(b0, A.views.lb.builds);
    lease(wid, &b, NULL);
    job_op(&b, "complete", "\"result\": {\"val_loss\": 2.5, \"steps\": 90, \"wall_s\": 12.5}", NULL);
    leaderboard_is_fresh("a complete");
    job_op(&a, "complete", "\"result\": {\"val_loss\": 2.75, \"steps\": 90}", NULL);
    leaderboard_is_fresh("the baseline's complete");
    lease(wid, &d, NULL);
    job_op(&d, "fail", "\"error\": \"boom\", \"retryable\": false", NULL);
    leaderboard_is_fresh("a fail");
    queue *q = &A.q;
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_requeue(q, d.job));
    ASSERT_EQ_INT(0, store_commit(ST));
    leaderboard_is_fresh("a requeue");
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_requeue_screened(q, b.job, "an outlier"));
    ASSERT_EQ_INT(0, store_commit(ST));
    leaderboard_is_fresh("a result requeued as an outlier");
    r0 = rank_rev();
    ASSERT_EQ_INT(0, store_begin(ST));
    ASSERT_EQ_INT(0, queue_sweep_set_priority(q, 1, 3));
    ASSERT_EQ_INT(0, store_commit(ST));
    ASSERT_EQ_INT(r0, rank_rev());
    ASSERT_EQ_INT(0, store_exec(ST, "UPDATE results SET val_loss = 2.0 WHERE job_id = (SELECT min(job_id) FROM results)"));
    leaderboard_is_fresh("a result changed by another writer");
    ASSERT_EQ_INT(0, store_exec(ST, "UPDATE sweeps SET name = 'renamed' WHERE id = 1"));
    leaderboard_is_fresh("a rename");
    /* the sweep deleted and a new one given its id: another key */
    ASSERT_EQ_INT(0, store_exec(ST, "DELETE FROM sweeps WHERE id = 1"));
    ASSERT_EQ_INT(0, qv(ST, "SELECT count(*) FROM sweep_ranking"));
    int st;
    json_decref(request("GET", "/api/v1/sweeps/1/leaderboard", NULL, NULL, &st));
    ASSERT_EQ_INT(404, st);
    sweeps_created cr;
    char err[512];
    const char *spec = SPEC_PLAIN;
    if (sweeps_create_json(ST, spec, strlen(spec), &cr, err, sizeof err) != 0) HFAIL("create: %s", err);
    ASSERT_EQ_INT(1, cr.sweep_id);
    leaderboard_is_fresh("a new sweep with the old one's id");
    teardown();
}

/* The tests' clock: each call moves it by clock_step; clock_jump moves it at once. */
static double clock_t0, clock_step;
static double test_clock(void) { return clock_t0 += clock_step; }

static long long done_count(json_t *lb) {
    long long n = 0;
    json_t *rows = json_object_get(lb, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++)
        n += json_integer_value(json_object_get(json_object_get(json_array_get(rows, i), "counts"), "done"));
    return n;
}

static long long polled_done(void) {
    json_t *o = call("GET", "/api/v1/sweeps/1/leaderboard", NULL, NULL);
    long long n = done_count(o);
    json_decref(o);
    return n;
}

/* A worker registers, leases the next job and completes it (val_loss 2.5): a change the leaderboard shows. */
static void complete_one(void) {
    json_t *o = call("POST", "/api/v1/workers/register", "{\"name\": \"w1\"}", NULL);
    long long wid = json_integer_value(json_object_get(o, "worker_id"));
    json_decref(o);
    leased a;
    lease(wid, &a, NULL);
    job_op(&a, "complete", "\"result\": {\"val_loss\": 2.5, \"steps\": 90}", NULL);
}

/* A ranking that costs (here: every build takes 0.2 s of the tests' clock) is built again after a change only once
 * LBCACHE_DUTY build times have passed, and an unchanged one after LBCACHE_MAX_AGE_S. */
TEST(leaderboard_rebuild_waits_for_its_duty) {
    build(SMALL, 0);
    clock_t0 = 1000;
    clock_step = 0.2;
    A.views.lb.clock = test_clock;
    ASSERT_EQ_INT(0, polled_done());
    ASSERT_EQ_INT(1, A.views.lb.builds);
    complete_one();
    long long stale = polled_done();   /* 0.2 s after a build of 0.2 s: not due (2 s) */
    printf("done right after the change: %lld (builds %llu)\n", stale, A.views.lb.builds);
    ASSERT_EQ_INT(0, stale);
    ASSERT_EQ_INT(1, A.views.lb.builds);
    clock_t0 += LBCACHE_DUTY * 0.2;
    ASSERT_EQ_INT(1, polled_done());
    ASSERT_EQ_INT(2, A.views.lb.builds);
    ASSERT_EQ_INT(1, polled_done());   /* unchanged: a hit */
    ASSERT_EQ_INT(2, A.views.lb.builds);
    clock_t0 += LBCACHE_MAX_AGE_S;
    ASSERT_EQ_INT(1, polled_done());
    ASSERT_EQ_INT(3, A.views.lb.builds);
    teardown();
}

/* An unchanged entry is rebuilt for its age (the halving total of steps trained moves without the rev) after
 * LBCACHE_MAX_AGE_S, but a costly one not before LBCACHE_DUTY build times either: a 100,000-job sweep that ranks in
 * 2 s is ranked every 20 s, not every 10 s, when nothing it shows has changed (issue #44). */
TEST(leaderboard_costly_unchanged_entry_ages_by_its_duty) {
    build(SMALL, 0);
    clock_t0 = 1000;
    clock_step = 2.0;   /* every build takes 2 s of the tests' clock; each poll moves it 2 s too */
    A.views.lb.clock = test_clock;
    ASSERT_EQ_INT(0, polled_done());
    ASSERT_EQ_INT(1, A.views.lb.builds);
    clock_t0 += LBCACHE_MAX_AGE_S;   /* 12 s old: past the max age, not past 10 x 2 s */
    polled_done();
    printf("builds after %.0f s unchanged: %llu (max age %.0f s, duty x build %.0f s)\n", LBCACHE_MAX_AGE_S + 2,
           A.views.lb.builds, LBCACHE_MAX_AGE_S, LBCACHE_DUTY * 2.0);
    ASSERT_EQ_INT(1, A.views.lb.builds);
    clock_t0 += LBCACHE_DUTY * 2.0;
    polled_done();
    ASSERT_EQ_INT(2, A.views.lb.builds);
    teardown();
}

/* With a loop (the server's), a costly sweep's due rebuild runs on the thread pool: the poll that finds it due is
 * answered from the entry it has, at the cost of a hit (no ranking on the loop's connection), the build runs on a
 * read-only connection of its own, and once the loop installs it the route answers exactly what the database ranks;
 * the answer's text is the entry's (rendered once per build). */
TEST(leaderboard_costly_rebuild_runs_off_the_loop) {
    build(SMALL, 0);
    uv_loop_t loop;
    ASSERT_EQ_INT(0, uv_loop_init(&loop));
    A.views.lb.loop = &loop;
    snprintf(A.views.lb.db_path, sizeof A.views.lb.db_path, "%s", ST->path);
    A.views.lb.cheap_s = 1e-9;   /* every build costs, and is rebuilt off the loop */
    A.views.lb.async_s = 1e-9;
    clock_t0 = 1000;
    clock_step = 0.2;
    A.views.lb.clock = test_clock;
    store_cost first, stale;
    json_decref(call("GET", "/api/v1/sweeps/1/leaderboard", NULL, &first));   /* no entry yet: built here */
    ASSERT_EQ_INT(1, A.views.lb.builds);
    complete_one();
    clock_t0 += LBCACHE_DUTY * 0.2;   /* due */
    json_t *o = call("GET", "/api/v1/sweeps/1/leaderboard", NULL, &stale);
    printf("first build on the loop: %llu VM steps; the due poll: %llu VM steps, done %lld, %d build(s) on the pool\n",
           first.vm_steps, stale.vm_steps, done_count(o), A.views.lb.inflight);
    ASSERT_EQ_INT(0, done_count(o));          /* the entry it had */
    json_decref(o);
    ASSERT_EQ_INT(1, A.views.lb.inflight);
    ASSERT_EQ_INT(1, A.views.lb.builds);
    ASSERT_TRUE(stale.vm_steps < 100 && first.vm_steps > 10 * stale.vm_steps);
    json_decref(call("GET", "/api/v1/sweeps/1/leaderboard", NULL, NULL));   /* while it runs: no second build */
    ASSERT_EQ_INT(1, A.views.lb.inflight);
    ASSERT_EQ_INT(0, uv_run(&loop, UV_RUN_DEFAULT));   /* the build ends and is installed */
    ASSERT_EQ_INT(0, A.views.lb.inflight);
    ASSERT_EQ_INT(1, A.views.lb.async_builds);
    ASSERT_EQ_INT(2, A.views.lb.builds);
    unsigned long long b = A.views.lb.builds;
    leaderboard_is_fresh("the build off the loop");
    ASSERT_EQ_INT(b, A.views.lb.builds);      /* answered from the installed entry */
    json_t *lb = NULL;
    char err[512];
    ASSERT_EQ_INT(0, lbcache_get(&A.views.lb, ST, 1, &lb, err, sizeof err));
    blob *text = lbcache_text(&A.views.lb, lb);
    char *want = json_dumps(lb, JSON_COMPACT | JSONOUT_FLAGS);
    ASSERT_TRUE(text != NULL && want != NULL);
    ASSERT_EQ_INT(strlen(want), text->len);
    ASSERT_TRUE(memcmp(text->data, want, text->len) == 0);
    free(want);
    json_decref(lb);
    A.views.lb.loop = NULL;
    ASSERT_EQ_INT(0, uv_loop_close(&loop));
    teardown();
}

/* The server's start ranks the large sweeps (lbcache_warm: at least min_jobs jobs by their counters) so their first
 * poll is a hit; a smaller threshold than the sweep's size is skipped. */
TEST(leaderboard_warm_ranks_the_large_sweeps_first) {
    build(SMALL, 0);
    char err[512];
    ASSERT_EQ_INT(0, lbcache_warm(&A.views.lb, ST, SMALL + 1, err, sizeof err));   /* none that large */
    ASSERT_EQ_INT(0, A.views.lb.builds);
    ASSERT_EQ_INT(1, lbcache_warm(&A.views.lb, ST, SMALL, err, sizeof err));
    ASSERT_EQ_INT(1, A.views.lb.builds);
    store_cost c;
    json_decref(call("GET", "/api/v1/sweeps/1/leaderboard", NULL, &c));
    printf("first poll after the warm-up: %llu VM steps, %llu build(s), %llu hit(s)\n", c.vm_steps, A.views.lb.builds,
           A.views.lb.hits);
    ASSERT_EQ_INT(1, A.views.lb.builds);
    ASSERT_EQ_INT(1, A.views.lb.hits);
    teardown();
}
