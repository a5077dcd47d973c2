/* test_job.c — the job JSON: defaults, validation errors that name the key, round trip, head lists. */
#include "harness.h"
#include "job.h"

#define MIN_JOB(extra_model, extra) \
    "{\"model\":{\"n_layer\":4,\"d_model\":32,\"vocab_size\":100,\"seq_len\":64,\"heads\":[1,2,4,4]" extra_model "}," \
    "\"data\":{\"train\":\"d/train_*.bin\",\"val\":\"d/val_*.bin\"}" extra "}"

static void expect_error(const char *text, const char *needle) {
    struct job_config j;
    char err[512] = "";
    int rc = job_parse_json(text, &j, err, sizeof err);
    if (rc == 0) HFAIL("expected an error containing \"%s\" for %s", needle, text);
    ASSERT_EQ_INT(JOB_EINVAL, rc);
    ASSERT_CONTAINS(err, needle);
    ASSERT_TRUE(j.data.train == NULL && j.model.init == NULL);   /* nothing left to free */
}

TEST(minimal_job_gets_defaults) {
    struct job_config j;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(MIN_JOB("", ""), &j, err, sizeof err));
    ASSERT_EQ_INT(4, j.model.n_layer);
    ASSERT_EQ_INT(128, j.model.padded_vocab_size);     /* 100 rounded up to a multiple of 128 */
    ASSERT_EQ_INT(64, j.train.seq_len);                /* defaults to model.seq_len */
    ASSERT_EQ_INT(8, j.train.batch_size);
    ASSERT_EQ_INT(1, j.train.grad_accum);
    ASSERT_STREQ("cosine", j.train.lr_schedule);
    ASSERT_NEAR(6e-4, j.train.lr, 0);
    ASSERT_NEAR(0.95, j.train.beta2, 0);
    ASSERT_NEAR(1.0, j.train.grad_clip, 0);
    ASSERT_EQ_INT(1337, j.train.seed);
    ASSERT_EQ_INT(1, j.train.shuffle);
    ASSERT_EQ_INT(0, j.train.checkpoint_every);
    ASSERT_EQ_INT(4, j.eval.batches);
    ASSERT_EQ_INT(0, j.eval.attn_distance);
    ASSERT_STREQ("d/train_*.bin", j.data.train);
    ASSERT_TRUE(j.model.init == NULL);
    int want[4] = {1, 2, 4, 4};
    for (int l = 0; l < 4; l++) ASSERT_EQ_INT(want[l], j.model.heads[l]);
    job_release(&j);
}

TEST(every_field_is_read) {
    struct job_config j;
    char err[512];
    const char *text = MIN_JOB(",\"padded_vocab_size\":104,\"init\":\"w.bin\"",
        ",\"train\":{\"batch_size\":3,\"seq_len\":32,\"grad_accum\":2,\"steps\":7,\"lr\":0.01,\"lr_schedule\":\"constant\","
        "\"warmup_steps\":2,\"min_lr_frac\":0.2,\"beta1\":0.8,\"beta2\":0.9,\"eps\":1e-6,\"weight_decay\":0.05,"
        "\"grad_clip\":0,\"seed\":99,\"shuffle\":false,\"checkpoint_every\":3},"
        "\"eval\":{\"every\":5,\"batches\":2,\"attn_distance\":true}");
    ASSERT_EQ_INT(0, job_parse_json(text, &j, err, sizeof err));
    ASSERT_EQ_INT(104, j.model.padded_vocab_size);
    ASSERT_STREQ("w.bin", j.model.init);
    ASSERT_EQ_INT(3, j.train.batch_size); ASSERT_EQ_INT(32, j.train.seq_len); ASSERT_EQ_INT(2, j.train.grad_accum);
    ASSERT_EQ_INT(7, j.train.steps); ASSERT_NEAR(0.01, j.train.lr, 0); ASSERT_STREQ("constant", j.train.lr_schedule);
    ASSERT_EQ_INT(2, j.train.warmup_steps); ASSERT_NEAR(0.2, j.train.min_lr_frac, 0); ASSERT_NEAR(0.8, j.train.beta1, 0);
    ASSERT_NEAR(0.9, j.train.beta2, 0); ASSERT_NEAR(1e-6, j.train.eps, 0); ASSERT_NEAR(0.05, j.train.weight_decay, 0);
    ASSERT_NEAR(0, j.train.grad_clip, 0); ASSERT_EQ_INT(99, j.train.seed); ASSERT_EQ_INT(0, j.train.shuffle);
    ASSERT_EQ_INT(3, j.train.checkpoint_every);
    ASSERT_EQ_INT(5, j.eval.every); ASSERT_EQ_INT(2, j.eval.batches); ASSERT_EQ_INT(1, j.eval.attn_distance);
    /* to_json and back gives the same config */
    json_t *o = job_to_json(&j);
    ASSERT_TRUE(o != NULL);
    char *s = json_dumps(o, 0);
    struct job_config k;
    ASSERT_EQ_INT(0, job_parse_json(s, &k, err, sizeof err));
    json_t *o2 = job_to_json(&k);
    char *s2 = json_dumps(o2, 0);
    ASSERT_STREQ(s, s2);
    free(s); free(s2); json_decref(o); json_decref(o2);
    job_release(&j); job_release(&k);
}

TEST(unknown_keys_are_errors_naming_the_key) {
    expect_error(MIN_JOB("", ",\"train\":{\"lrr\":0.1}"), "train.lrr: unknown key");
    expect_error(MIN_JOB(",\"dropout\":0.1", ""), "model.dropout: unknown key");
    expect_error(MIN_JOB("", ",\"optimizer\":{}"), "optimizer: unknown key");
}

/* eval.batches "all": the whole val split, kept as JOB_EVAL_ALL and written back as "all" */
TEST(eval_batches_all) {
    struct job_config j;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(MIN_JOB("", ",\"eval\":{\"batches\":\"all\"}"), &j, err, sizeof err));
    ASSERT_EQ_INT(JOB_EVAL_ALL, j.eval.batches);
    json_t *o = job_to_json(&j);
    ASSERT_STREQ("all", json_string_value(json_object_get(json_object_get(o, "eval"), "batches")));
    json_decref(o);
    job_release(&j);
    expect_error(MIN_JOB("", ",\"eval\":{\"batches\":\"some\"}"), "eval.batches: expected an integer or \"all\"");
}

TEST(bad_values_name_the_key) {
    expect_error(MIN_JOB("", ",\"train\":{\"lr\":-1}"), "train.lr");
    expect_error(MIN_JOB("", ",\"train\":{\"batch_size\":\"8\"}"), "train.batch_size: expected an integer, got a string");
    expect_error(MIN_JOB("", ",\"train\":{\"lr_schedule\":\"linear\"}"), "train.lr_schedule: expected \"cosine\" or \"constant\"");
    expect_error(MIN_JOB("", ",\"train\":{\"seq_len\":65}"), "train.seq_len: must be between 1 and model.seq_len (64)");
    expect_error(MIN_JOB("", ",\"train\":{\"shuffle\":1}"), "train.shuffle: expected true or false");
    expect_error(MIN_JOB("", ",\"eval\":{\"batches\":0}"), "eval.batches");
    expect_error(MIN_JOB("", ",\"train\":{\"seed\":-3}"), "train.seed");
    expect_error(MIN_JOB(",\"padded_vocab_size\":50", ""), "model.padded_vocab_size: must be >= model.vocab_size");
}

/* Values set after parsing (prism-worker train --weight-decay, --grad-clip, --lr) are checked by job_validate too. */
TEST(validate_checks_numbers_set_after_parsing) {
    struct job_config j;
    char err[512];
    if (job_parse_json(MIN_JOB("", ""), &j, err, sizeof err)) HFAIL("%s", err);
    ASSERT_EQ_INT(0, job_validate(&j, err, sizeof err));
    j.train.weight_decay = -1;
    ASSERT_EQ_INT(JOB_EINVAL, job_validate(&j, err, sizeof err));
    ASSERT_CONTAINS(err, "train.weight_decay: must be between 0 and 10, got -1");
    j.train.weight_decay = 0.1;
    j.train.grad_clip = -2;
    ASSERT_EQ_INT(JOB_EINVAL, job_validate(&j, err, sizeof err));
    ASSERT_CONTAINS(err, "train.grad_clip");
    j.train.grad_clip = 1;
    j.train.lr = 1e6;
    ASSERT_EQ_INT(JOB_EINVAL, job_validate(&j, err, sizeof err));
    ASSERT_CONTAINS(err, "train.lr");
    job_release(&j);
}

TEST(schedule_must_fit_the_model) {
    expect_error("{\"model\":{\"n_layer\":3,\"d_model\":32,\"vocab_size\":100,\"seq_len\":64,\"heads\":[1,2,4,4]},"
                 "\"data\":{\"train\":\"a\",\"val\":\"b\"}}", "model.heads: has 4 entries but model.n_layer is 3");
    expect_error("{\"model\":{\"n_layer\":2,\"d_model\":32,\"vocab_size\":100,\"seq_len\":64,\"heads\":[3,4]},"
                 "\"data\":{\"train\":\"a\",\"val\":\"b\"}}", "model.heads[0]: 3 does not divide model.d_model 32");
    expect_error("{\"model\":{\"n_layer\":2,\"d_model\":32,\"vocab_size\":100,\"seq_len\":64,\"heads\":[0,4]},"
                 "\"data\":{\"train\":\"a\",\"val\":\"b\"}}", "model.heads[0]");
}

TEST(required_keys_and_bad_json) {
    expect_error("{\"model\":{\"n_layer\":1,\"d_model\":32,\"vocab_size\":100,\"seq_len\":64,\"heads\":[4]},"
                 "\"data\":{\"train\":\"a\"}}", "data.val: required");
    expect_error("{\"model\":{\"n_layer\":1,\"d_model\":32,\"vocab_size\":100,\"heads\":[4]},"
                 "\"data\":{\"train\":\"a\",\"val\":\"b\"}}", "model.seq_len: required");
    expect_error("{\"model\": [", "not valid JSON at line 1");
    expect_error("[1,2]", "expected a JSON object");
}

TEST(head_lists_parse) {
    int h[16];
    char err[256];
    ASSERT_EQ_INT(4, job_parse_heads("3,3,6,6", h, 16, err, sizeof err));
    ASSERT_EQ_INT(6, h[2]);
    ASSERT_EQ_INT(12, job_parse_heads("3x2,6x2,8x2,12x6", h, 16, err, sizeof err));
    ASSERT_EQ_INT(3, h[1]); ASSERT_EQ_INT(8, h[4]); ASSERT_EQ_INT(12, h[11]);
    ASSERT_TRUE(job_parse_heads("3,a", h, 16, err, sizeof err) < 0);
    ASSERT_CONTAINS(err, "3,a");
    ASSERT_TRUE(job_parse_heads("4x20", h, 16, err, sizeof err) < 0);
    struct job_config j;
    job_init(&j);
    j.model.n_layer = 3; j.model.heads[0] = 2; j.model.heads[1] = 4; j.model.heads[2] = 8;
    char buf[64];
    job_format_heads(&j, buf, sizeof buf);
    ASSERT_STREQ("2,4,8", buf);
}

/* The worker's --heads and `prism-sweep validate` read schedules through the same parser: every spelling
 * one accepts, the other does, and a bad one is named with its text and item. */
TEST(head_lists_take_every_schedule_spelling) {
    int h[16];
    char err[256];
    ASSERT_EQ_INT(12, job_parse_heads("3,3,6,6,8,8,12\xc3\x97" "6", h, 16, err, sizeof err));
    ASSERT_EQ_INT(12, h[11]); ASSERT_EQ_INT(8, h[5]);
    ASSERT_EQ_INT(12, job_parse_heads("3, 3, 6*2, 8x2, 12 x 6", h, 16, err, sizeof err));
    ASSERT_EQ_INT(6, h[3]); ASSERT_EQ_INT(12, h[6]);
    ASSERT_TRUE(job_parse_heads("3,,6", h, 16, err, sizeof err) < 0);
    ASSERT_CONTAINS(err, "heads \"3,,6\": item 2");
    ASSERT_TRUE(job_parse_heads("", h, 16, err, sizeof err) < 0);
    ASSERT_CONTAINS(err, "heads \"\"");
}
