/* test_lease.c — the lease wrapper (common/lease.h): what the orchestrator builds reads back the same on the
 * worker's side, every missing or ill-typed key is an error that names it, unknown keys are ignored, and the
 * references to the job JSON are owned as the header says. */
#include "harness.h"
#include "lease.h"

#include <limits.h>

/* A lease as queue_lease answers it, with resume and stop_at_step. */
#define FULL_LEASE \
    "{\"job_id\":7,\"attempt\":2,\"lease_token\":\"abc123\",\"lease_expires_at\":1700000060.5,\"lease_ttl_s\":60," \
    "\"sweep_id\":1,\"schedule_id\":3,\"seed\":1337,\"heads\":[2,4]," \
    "\"job\":{\"model\":{\"n_layer\":2},\"train\":{\"steps\":10}}," \
    "\"resume\":{\"checkpoint\":\"/ck/job-7-a1/resume-5.bin\",\"step\":5},\"stop_at_step\":8}"

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *o = json_loads(text, JSON_DECODE_ANY, &je);
    if (!o) HFAIL("test JSON does not parse: %s: %s", je.text, text);
    return o;
}

/* FULL_LEASE with key `key` set to the JSON value `value` (NULL: removed). */
static json_t *full_with(const char *key, const char *value) {
    json_t *o = parse(FULL_LEASE);
    if (value) json_object_set_new(o, key, parse(value));
    else json_object_del(o, key);
    return o;
}

static void expect_error(json_t *obj, const char *needle) {
    lease l;
    lease_init(&l);
    char err[512] = "";
    int rc = lease_from_json(obj, &l, err, sizeof err);
    if (rc == LEASE_OK) HFAIL("expected an error containing \"%s\", the lease was accepted", needle);
    ASSERT_EQ_INT(LEASE_EINVAL, rc);
    ASSERT_CONTAINS(err, needle);
    ASSERT_TRUE(l.job == NULL && l.heads == NULL);   /* no reference left behind */
    json_decref(obj);
}

TEST(full_lease_parses_every_key) {
    json_t *o = parse(FULL_LEASE);
    lease l;
    lease_init(&l);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_OK, lease_from_json(o, &l, err, sizeof err));
    ASSERT_EQ_INT(7, l.job_id);
    ASSERT_EQ_INT(2, l.attempt);
    ASSERT_STREQ("abc123", l.token);
    ASSERT_NEAR(1700000060.5, l.expires_at, 0);
    ASSERT_NEAR(60, l.ttl_s, 0);
    ASSERT_EQ_INT(1, l.sweep_id);
    ASSERT_EQ_INT(3, l.schedule_id);
    ASSERT_EQ_INT(1337, l.seed);
    ASSERT_EQ_INT(2, json_array_size(l.heads));
    ASSERT_EQ_INT(10, json_integer_value(json_object_get(json_object_get(l.job, "train"), "steps")));
    ASSERT_EQ_INT(1, l.has_resume);
    ASSERT_STREQ("/ck/job-7-a1/resume-5.bin", l.resume_checkpoint);
    ASSERT_EQ_INT(5, l.resume_step);
    ASSERT_EQ_INT(8, l.stop_at_step);
    /* the lease holds its own reference: the job outlives the wrapper */
    ASSERT_TRUE(l.job == json_object_get(o, "job"));
    json_decref(o);
    ASSERT_EQ_INT(1, l.job->refcount);
    ASSERT_EQ_INT(2, json_integer_value(json_object_get(json_object_get(l.job, "model"), "n_layer")));
    lease_release(&l);
    ASSERT_TRUE(l.job == NULL && l.heads == NULL && l.job_id == 0);
    lease_release(&l);   /* twice is fine */
}

TEST(round_trip_builder_to_parser_keeps_every_field) {
    lease a;
    lease_init(&a);
    a.job_id = 42;
    a.attempt = 3;
    snprintf(a.token, sizeof a.token, "%s", "0123456789abcdef0123456789abcdef0123456789abcdef");
    a.expires_at = 1800000000.25;
    a.ttl_s = 90;
    a.sweep_id = 5;
    a.schedule_id = 11;
    a.seed = 9;
    a.heads = parse("[3,3,6,12]");
    a.job = parse("{\"model\":{\"n_layer\":4},\"data\":{\"train\":\"t\",\"val\":\"v\"}}");
    a.has_resume = 1;
    snprintf(a.resume_checkpoint, sizeof a.resume_checkpoint, "%s", "/x/job-42-a2/ckpt_100.bin");
    a.resume_step = 100;
    a.stop_at_step = 250;
    a.sweep_done = 17;
    a.sweep_jobs = 168;
    json_t *o = lease_to_json(&a);
    ASSERT_TRUE(o != NULL);
    ASSERT_EQ_INT(2, a.job->refcount);            /* the builder took its own reference; a keeps its one */
    char *text = json_dumps(o, JSON_SORT_KEYS);
    printf("%s\n", text);
    json_t *o2 = parse(text);
    free(text);
    json_decref(o);

    lease b;
    lease_init(&b);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_OK, lease_from_json(o2, &b, err, sizeof err));
    json_decref(o2);
    ASSERT_EQ_INT(a.job_id, b.job_id);
    ASSERT_EQ_INT(a.attempt, b.attempt);
    ASSERT_STREQ(a.token, b.token);
    ASSERT_NEAR(a.expires_at, b.expires_at, 0);
    ASSERT_NEAR(a.ttl_s, b.ttl_s, 0);
    ASSERT_EQ_INT(a.sweep_id, b.sweep_id);
    ASSERT_EQ_INT(a.schedule_id, b.schedule_id);
    ASSERT_EQ_INT(a.seed, b.seed);
    ASSERT_TRUE(json_equal(a.heads, b.heads));
    ASSERT_TRUE(json_equal(a.job, b.job));
    ASSERT_EQ_INT(1, b.has_resume);
    ASSERT_STREQ(a.resume_checkpoint, b.resume_checkpoint);
    ASSERT_EQ_INT(a.resume_step, b.resume_step);
    ASSERT_EQ_INT(a.stop_at_step, b.stop_at_step);
    ASSERT_EQ_INT(a.sweep_done, b.sweep_done);   /* the sweep's progress for the worker's display */
    ASSERT_EQ_INT(a.sweep_jobs, b.sweep_jobs);
    lease_release(&a);
    lease_release(&b);
}

TEST(builder_leaves_out_resume_and_stop_when_unset) {
    lease a;
    lease_init(&a);
    a.job_id = 1;
    a.attempt = 1;
    snprintf(a.token, sizeof a.token, "t");
    a.job = json_object();
    json_t *o = lease_to_json(&a);
    ASSERT_TRUE(o != NULL);
    ASSERT_TRUE(json_object_get(o, "resume") == NULL);
    ASSERT_TRUE(json_object_get(o, "stop_at_step") == NULL);
    ASSERT_TRUE(json_object_get(o, "heads") == NULL);
    ASSERT_TRUE(json_is_real(json_object_get(o, "lease_ttl_s")));
    lease b;
    lease_init(&b);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_OK, lease_from_json(o, &b, err, sizeof err));
    ASSERT_EQ_INT(0, b.has_resume);
    ASSERT_EQ_INT(0, b.stop_at_step);
    json_decref(o);
    lease_release(&a);
    lease_release(&b);
    lease_init(&a);                                   /* no job: nothing to build */
    ASSERT_TRUE(lease_to_json(&a) == NULL);
}

TEST(minimal_lease_needs_only_the_four_required_keys) {
    json_t *o = parse("{\"job_id\":1,\"attempt\":0,\"lease_token\":\"t\",\"job\":{}}");
    lease l;
    lease_init(&l);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_OK, lease_from_json(o, &l, err, sizeof err));
    ASSERT_EQ_INT(0, l.has_resume);
    ASSERT_TRUE(l.heads == NULL);
    json_decref(o);
    lease_release(&l);
}

TEST(unknown_keys_are_ignored) {
    json_t *o = full_with("from_a_newer_server", "{\"anything\":[1,2]}");
    lease l;
    lease_init(&l);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_OK, lease_from_json(o, &l, err, sizeof err));
    ASSERT_EQ_INT(7, l.job_id);
    json_decref(o);
    lease_release(&l);
}

TEST(missing_required_keys_are_named) {
    expect_error(full_with("job_id", NULL), "job_id: missing");
    expect_error(full_with("attempt", NULL), "attempt: missing");
    expect_error(full_with("lease_token", NULL), "lease_token: missing");
    expect_error(full_with("job", NULL), "job: missing");
}

TEST(ill_typed_keys_are_named) {
    expect_error(full_with("job_id", "\"7\""), "job_id: must be an integer, got a string");
    expect_error(full_with("job_id", "0"), "job_id: must be in 1..");
    expect_error(full_with("attempt", "1.5"), "attempt: must be an integer");
    expect_error(full_with("attempt", "-1"), "attempt: must be in 0..");
    expect_error(full_with("attempt", "4294967296"), "attempt: must be in 0..");
    expect_error(full_with("lease_token", "7"), "lease_token: must be a string, got an integer");
    expect_error(full_with("lease_token", "\"\""), "lease_token: must not be empty");
    expect_error(full_with("job", "[]"), "job: must be an object, got an array");
    expect_error(full_with("job", "null"), "job: must be an object, got null");
    expect_error(full_with("lease_expires_at", "\"soon\""), "lease_expires_at: must be a number");
    expect_error(full_with("lease_ttl_s", "true"), "lease_ttl_s: must be a number, got a boolean");
    expect_error(full_with("sweep_id", "1.0"), "sweep_id: must be an integer");
    expect_error(full_with("schedule_id", "{}"), "schedule_id: must be an integer, got an object");
    expect_error(full_with("seed", "\"1\""), "seed: must be an integer");
    expect_error(full_with("heads", "\"3,3,6\""), "heads: must be an array, got a string");
    expect_error(full_with("resume", "\"/ck.bin\""), "resume: must be an object");
    expect_error(full_with("resume", "{\"step\":5}"), "resume.checkpoint: missing");
    expect_error(full_with("resume", "{\"checkpoint\":\"/a.bin\"}"), "resume.step: missing");
    expect_error(full_with("resume", "{\"checkpoint\":\"/a.bin\",\"step\":-1}"), "resume.step: must be in 0..");
    expect_error(full_with("resume", "{\"checkpoint\":5,\"step\":1}"), "resume.checkpoint: must be a string");
    expect_error(full_with("stop_at_step", "\"8\""), "stop_at_step: must be an integer");
    expect_error(full_with("stop_at_step", "-3"), "stop_at_step: must be in 0..");
    expect_error(parse("[1,2]"), "lease: must be a JSON object, got an array");
}

TEST(overlong_strings_are_refused_not_truncated) {
    char big[LEASE_PATH_MAX + 16];
    memset(big, 'a', sizeof big);
    big[0] = '"';
    big[LEASE_TOKEN_MAX + 1] = '"';
    big[LEASE_TOKEN_MAX + 2] = 0;                       /* a token of LEASE_TOKEN_MAX bytes: one too many */
    expect_error(full_with("lease_token", big), "lease_token: must be at most 255 bytes");
    json_t *o = parse(FULL_LEASE);
    json_t *r = json_object_get(o, "resume");
    memset(big, 'a', sizeof big);
    big[LEASE_PATH_MAX] = 0;                            /* LEASE_PATH_MAX bytes: one too many */
    json_object_set_new(r, "checkpoint", json_string(big));
    expect_error(o, "resume.checkpoint: must be at most 4095 bytes");
    o = parse(FULL_LEASE);
    json_object_set_new(o, "lease_token", json_stringn("ab\0cd", 5));   /* an embedded NUL would cut the token */
    expect_error(o, "lease_token: must be at most");
}

/* after a failure, the keys that name the job stay (so its failure can still be reported) */
TEST(failure_keeps_the_keys_that_name_the_job) {
    json_t *o = full_with("job", "\"not an object\"");
    lease l;
    lease_init(&l);
    char err[512] = "";
    ASSERT_EQ_INT(LEASE_EINVAL, lease_from_json(o, &l, err, sizeof err));
    ASSERT_EQ_INT(7, l.job_id);
    ASSERT_EQ_INT(2, l.attempt);
    ASSERT_STREQ("abc123", l.token);
    ASSERT_EQ_INT(0, l.has_resume);
    ASSERT_TRUE(l.job == NULL);
    json_decref(o);
    o = full_with("lease_token", NULL);
    lease_init(&l);
    ASSERT_EQ_INT(LEASE_EINVAL, lease_from_json(o, &l, err, sizeof err));
    ASSERT_EQ_INT(7, l.job_id);
    ASSERT_STREQ("", l.token);
    json_decref(o);
}

