/* test_result.c — results are bounded by what a model of the job can produce (common/result_check.c, checked
 * by queue_complete and the rung report): absurd finite numbers (±1e308), a diverged val loss, an attention
 * distance array of the wrong length, zero-shot task names the job does not have; and the leaderboard never
 * drops an array element (an overflowed average is null in its place). Real SQLite file, the real queue.
 */
#include "harness.h"
#include "leaderboard.h"
#include "queue.h"
#include "store.h"
#include "sweeps.h"
#include "store_test_lib.h"

/* 4 layers, vocab 256 (diverged above 1.1 x ln 256 = 6.0997), seq_len 32, 50 steps, one zero-shot task */
#define SPEC "{ \"name\": \"r\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, " \
             "\"padded_vocab_size\": 256, \"seq_len\": 64}, \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, " \
             "\"min_block\": 1, \"max_block\": 2}, \"seeds\": [1, 2], \"train\": {\"batch_size\": 2, \"seq_len\": 32, " \
             "\"steps\": 50, \"lr\": 0.001}, \"eval\": {\"every\": 10, \"batches\": 2, \"tasks\": [{\"name\": \"piqa\", " \
             "\"path\": \"piqa_val.bin\"}]}, \"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"} }"

static store *st;
static queue q;
static long long wid;

static void setup(void) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/r.db", harness_tmpdir());
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    if (sweeps_create_json(st, SPEC, strlen(SPEC), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    queue_init(&q, st, 60, 3);
    if (queue_register(&q, "w1", "host", "[\"cpu\"]", &wid) != 0) HFAIL("register: %s", q.err);
}

static void teardown(void) { queue_release(&q); store_close(st); }

/* Results written straight into the file, as a server before these checks stored them: the first two
 * schedules' jobs done, each with this attn_distance (SQL text) and result.json (SQL text). */
static void store_done_results(const char *attn_sql, const char *result_sql) {
    char sql[2048];
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'done' WHERE schedule_id IN (SELECT id FROM schedules ORDER BY id LIMIT 2)"));
    snprintf(sql, sizeof sql, "INSERT INTO results (job_id, attempt, val_loss, attn_distance, result, completed_at) SELECT id, 1, "
             "3.0 + id / 100.0, %s, %s, 0 FROM jobs WHERE state = 'done'", attn_sql, result_sql);
    ASSERT_EQ_INT(0, store_exec(st, sql));
}

static long long lease(char *token, size_t n) {
    json_t *o = NULL;
    if (queue_lease(&q, wid, "cpu", &o) != QUEUE_OK) HFAIL("lease: %s", q.err);
    long long job = json_integer_value(json_object_get(o, "job_id"));
    snprintf(token, n, "%s", json_string_value(json_object_get(o, "lease_token")));
    json_decref(o);
    return job;
}

/* complete with this result JSON; expects rc and, when refused, err to contain needle */
static void expect(long long job, const char *tok, const char *result, int rc, const char *needle) {
    json_error_t je;
    json_t *r = json_loads(result, 0, &je);
    if (!r) HFAIL("bad test JSON %s: %s", result, je.text);
    int got = queue_complete(&q, job, tok, r);
    json_decref(r);
    if (got != rc) HFAIL("complete %s: expected %d, got %d (%s)", result, rc, got, q.err);
    if (needle) ASSERT_CONTAINS(q.err, needle);
}

TEST(absurd_results_are_refused_naming_the_bound) {
    setup();
    char tok[128];
    long long j = lease(tok, sizeof tok);
    expect(j, tok, "{\"val_loss\": 1e308}", STORE_EINVAL, "result.val_loss: 1e+308 is above 6.0997 (1.1 x ln 256, guessing uniformly)");
    expect(j, tok, "{\"val_loss\": -1e308}", STORE_EINVAL, "result.val_loss: -1e+308 is not a loss a model can produce");
    expect(j, tok, "{\"val_loss\": 2863}", STORE_EINVAL, "the run diverged");
    expect(j, tok, "{\"tok_per_s\": 1000}", STORE_EINVAL, "result.val_loss: required");
    expect(j, tok, "{\"val_loss\": 3.5, \"tok_per_s\": 1e300}", STORE_EINVAL, "result.tok_per_s: 1e+300 is outside [0, 1e+12]");
    expect(j, tok, "{\"val_loss\": 3.5, \"params\": -5}", STORE_EINVAL, "result.params: -5 is outside");
    expect(j, tok, "{\"val_loss\": 3.5, \"attn_distance\": [1, 2, 3]}", STORE_EINVAL,
           "result.attn_distance: 3 elements, the job's model.n_layer is 4");
    expect(j, tok, "{\"val_loss\": 3.5, \"attn_distance\": [1, 2, 1e308, 3]}", STORE_EINVAL,
           "result.attn_distance[2]: 1e+308 is outside [0, 32]");
    expect(j, tok, "{\"val_loss\": 3.5, \"attn_distance\": [1, 2, \"x\", 3]}", STORE_EINVAL, "result.attn_distance[2]: must be a number");
    expect(j, tok, "{\"val_loss\": 3.5, \"zero_shot\": {\"=HYPERLINK(\\\"http://x\\\")\\n\\u001b[31m\": {\"acc\": 0.5, \"acc_norm\": 0.5}}}",
           STORE_EINVAL, "result.zero_shot.\"=HYPERLINK(\\x22http://x\\x22)\\x0a\\x1b[31m\": not one of the job's eval.tasks names");
    expect(j, tok, "{\"val_loss\": 3.5, \"zero_shot\": {\"piqa\": {\"acc\": 7, \"acc_norm\": 0.5}}}", STORE_EINVAL,
           "result.zero_shot.piqa.acc: must be a number in [0, 1]");
    expect(j, tok, "{\"val_loss\": 3.5, \"zero_shot\": {\"piqa\": {\"acc\": 0.5, \"acc_norm\": 0.5, \"n\": -5}}}", STORE_EINVAL,
           "result.zero_shot.piqa.n: must be an integer in [0, 1e9]");
    expect(j, tok, "{\"val_loss\": 3.5, \"zero_shot\": {\"piqa\": {\"acc\": 0.5, \"acc_norm\": 0.5, \"job_id\": 999}}}", STORE_EINVAL,
           "result.zero_shot.piqa: unknown key (expected acc, acc_norm, acc_norm_char, n, truncated)");
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM results"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'leased'"));
    expect(j, tok, "{\"val_loss\": 3.5, \"train_loss\": 3.4, \"tok_per_s\": 1000, \"steps\": 50, \"attn_distance\": [1, 2, 3, 31.5], "
           "\"zero_shot\": {\"piqa\": {\"acc\": 0.5, \"acc_norm\": 0.55}}}", STORE_OK, NULL);
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM results"));
    teardown();
}

/* Results stored before these bounds (written straight into the file): averages that overflow are null in
 * their place, so the D_l array keeps one element per layer and none shifts. */
TEST(leaderboard_never_drops_an_array_element) {
    setup();
    store_done_results("'[1.5, 1e308, 2.5, 3.5]'", "'{}'");
    json_t *lb = NULL;
    char err[512];
    ASSERT_EQ_INT(0, leaderboard_build(st, 1, &lb, err, sizeof err));
    json_t *rows = json_object_get(lb, "rows");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i), *a = json_object_get(row, "attn_distance");
        if (!json_is_array(a)) continue;
        seen++;
        char *t = json_dumps(row, JSON_COMPACT);
        printf("row: %.400s\n", t);
        free(t);
        ASSERT_EQ_INT(4, (int)json_array_size(a));
        ASSERT_NEAR(1.5, json_number_value(json_array_get(a, 0)), 1e-12);
        ASSERT_TRUE(json_is_null(json_array_get(a, 1)));   /* (1e308 + 1e308) / 2 overflowed */
        ASSERT_NEAR(3.5, json_number_value(json_array_get(a, 3)), 1e-12);
        json_t *sd = json_object_get(row, "attn_distance_std");
        if (json_is_array(sd)) ASSERT_EQ_INT(4, (int)json_array_size(sd));
        json_t *dd = json_object_get(row, "delta_attn_distance");
        if (json_is_array(dd)) ASSERT_EQ_INT(4, (int)json_array_size(dd));
    }
    ASSERT_TRUE(seen >= 1);
    json_decref(lb);
    teardown();
}


/* Zero-shot task names stored before the server checked them (newlines, =HYPERLINK(...), ANSI escapes) reach
 * neither the CSV header, the terminal table nor the JSON: only names the job format allows are shown. */
TEST(stored_zero_shot_names_are_checked_on_every_surface) {
    setup();
    store_done_results("NULL", "'{\"val_loss\": 3.0, \"zero_shot\": {\"piqa\": {\"acc\": 0.5, \"acc_norm\": 0.5}, "
                       "\"=HYPERLINK(\\\"http://x\\\")\\n\\u001b[31mx\": {\"acc\": 0.5, \"acc_norm\": 0.5}}}'");
    json_t *lb = NULL;
    char err[512];
    ASSERT_EQ_INT(0, leaderboard_build(st, 1, &lb, err, sizeof err));
    char *js = json_dumps(json_object_get(lb, "zero_shot_tasks"), JSON_COMPACT);
    printf("tasks: %s\n", js);
    ASSERT_STREQ("[\"piqa\"]", js);
    free(js);
    char *csv = leaderboard_csv(lb), *tbl = leaderboard_table(lb);
    ASSERT_CONTAINS(csv, "piqa_acc_mean");
    ASSERT_CONTAINS(tbl, "zero-shot piqa");
    ASSERT_TRUE(!strstr(csv, "HYPERLINK") && !strstr(tbl, "HYPERLINK") && !strchr(tbl, '\x1b') && !strchr(csv, '\x1b'));
    free(csv);
    free(tbl);
    json_decref(lb);
    teardown();
}
