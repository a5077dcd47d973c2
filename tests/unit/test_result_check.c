/* test_result_check.c — the one table of result rules (common/result_check.h) that both the server's complete
 * route and the worker apply: the same limits from the job's text (the server) and from the parsed job (the
 * worker), each rule's message naming the key, a divergence told apart, and the error prefixes that neither
 * fail limit counts. */
#include "harness.h"

#include "job.h"
#include "result_check.h"

#include <jansson.h>

#define JOB_TEXT \
    "{\"model\":{\"n_layer\":4,\"d_model\":32,\"vocab_size\":64,\"seq_len\":16,\"heads\":[1,2,4,4]}," \
    "\"train\":{\"steps\":12,\"seq_len\":16}," \
    "\"eval\":{\"tasks\":[{\"name\":\"hellaswag\",\"path\":\"e/h.bin\"}]}," \
    "\"data\":{\"train\":\"d/train_*.bin\",\"val\":\"d/val_*.bin\"}}"

/* The limits both ways; they must be the same. */
static void limits(result_limits *lim) {
    char err[512] = "";
    result_limits from_text;
    if (result_load_limits(JOB_TEXT, &from_text, err, sizeof err) != 0) HFAIL("job text: %s", err);
    struct job_config j;
    if (job_parse_json(JOB_TEXT, &j, err, sizeof err) != 0) HFAIL("job: %s", err);
    result_limits_from_job(&j, lim);
    job_release(&j);
    printf("limits: n_layer %d / %d, vocab %d / %d, steps %lld / %lld, val_loss_max %g / %g, tasks %d / %d\n",
           from_text.n_layer, lim->n_layer, from_text.vocab_size, lim->vocab_size, from_text.steps, lim->steps,
           from_text.val_loss_max, lim->val_loss_max, from_text.ntasks, lim->ntasks);
    ASSERT_TRUE(memcmp(&from_text, lim, sizeof *lim) == 0);
}

/* result (JSON text) checked: the rc, and err when refused. */
static int check(const char *text, char *err, size_t errlen) {
    result_limits lim;
    limits(&lim);
    json_error_t je;
    json_t *r = json_loads(text, 0, &je);
    if (!r) HFAIL("bad test JSON %s: %s", text, je.text);
    err[0] = 0;
    int rc = result_check(r, &lim, err, errlen);
    printf("%s -> %d %s\n", text, rc, err);
    json_decref(r);
    return rc;
}

static void refused(const char *text, const char *needle) {
    char err[1024];
    ASSERT_EQ_INT(-1, check(text, err, sizeof err));
    ASSERT_CONTAINS(err, needle);
}

TEST(a_valid_result_passes) {
    char err[1024];
    ASSERT_EQ_INT(0, check("{\"val_loss\": 3.0, \"steps\": 12, \"params\": 1000, \"train_loss\": 3.1, "
                           "\"attn_distance\": [1, 2, 3, 4], \"zero_shot\": {\"hellaswag\": {\"acc\": 0.3, "
                           "\"acc_norm\": 0.31, \"n\": 10, \"truncated\": 0}}, \"mine\": \"kept\"}", err, sizeof err));
    /* lm-eval's per-character acc_norm beside llm.c's: optional, a number in [0, 1] (null as absent) */
    ASSERT_EQ_INT(0, check("{\"val_loss\": 3.0, \"zero_shot\": {\"hellaswag\": {\"acc\": 0.3, \"acc_norm\": 0.31, "
                           "\"acc_norm_char\": 0.33, \"n\": 10}}}", err, sizeof err));
    ASSERT_EQ_INT(0, check("{\"val_loss\": 3.0, \"zero_shot\": {\"hellaswag\": {\"acc\": 0.3, \"acc_norm\": 0.31, "
                           "\"acc_norm_char\": null}}}", err, sizeof err));
}

TEST(acc_norm_char_out_of_range_is_refused) {
    refused("{\"val_loss\": 3.0, \"zero_shot\": {\"hellaswag\": {\"acc\": 0.3, \"acc_norm\": 0.3, \"acc_norm_char\": 1.5}}}",
            "result.zero_shot.hellaswag.acc_norm_char: must be a number in [0, 1] (or absent)");
    refused("{\"val_loss\": 3.0, \"zero_shot\": {\"hellaswag\": {\"acc\": 0.3, \"acc_norm\": 0.3, \"acc_norm_char\": \"x\"}}}",
            "result.zero_shot.hellaswag.acc_norm_char: must be a number in [0, 1] (or absent)");
}

/* The refusals of issue #40's zombie jobs, each naming its key. */
TEST(each_rule_names_its_key) {
    refused("{\"val_loss\": 3.0, \"steps\": 12, \"params\": 0}", "result.params: 0 is outside [1, 1e+13]");
    refused("{\"val_loss\": 3.0, \"train_loss\": 2e4}", "result.train_loss: 20000 is outside [0, 10000]");
    refused("{\"val_loss\": 3.0, \"attn_distance\": [1, 2]}", "result.attn_distance: 2 elements, the job's model.n_layer is 4");
    refused("{\"val_loss\": 3.0, \"zero_shot\": {\"piqa\": {\"acc\": 0.5, \"acc_norm\": 0.5}}}",
            "result.zero_shot.\"piqa\": not one of the job's eval.tasks names");
    refused("{\"val_loss\": 3.0, \"steps\": 11}", "result.steps: 11 is not the job's train.steps 12");
    refused("{\"steps\": 12}", "result.val_loss: required");
    refused("{\"val_loss\": 9.0}", "result.val_loss: 9 is above 4.57477 (1.1 x ln 64");
}

TEST(a_divergence_is_told_apart) {
    result_limits lim;
    limits(&lim);
    json_t *d = json_pack("{s:f}", "val_loss", 9.0), *ok = json_pack("{s:f, s:i}", "val_loss", 3.0, "params", 0);
    printf("diverged: %d (val_loss 9), %d (val_loss 3, params 0)\n", result_diverged(d, &lim), result_diverged(ok, &lim));
    ASSERT_EQ_INT(1, result_diverged(d, &lim));
    ASSERT_EQ_INT(0, result_diverged(ok, &lim));
    json_decref(d);
    json_decref(ok);
}

/* What neither fail limit counts: the prefixes train_strerror gives a divergence and a non-finite loss. */
TEST(outcomes_of_the_job_are_not_the_workers) {
    static const struct { const char *e; int want; } cases[] = {
        {"diverged: step 4: validation loss 9 is above 4.57", 1},
        {"diverged: result.val_loss: 9 is above 4.57477", 1},
        {"loss is not finite: trainer fake: line 3: a number is not finite (NaN or Infinity)", 1},
        {"trainer failed: trainer fake: failed (oom, retryable): CUDA out of memory", 0},
        {"trainer failed: trainer fake: failed (diverged) ...", 0},
        {"bad data: data/x.bin: no such file", 0},
        {"diverged", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = result_error_is_outcome(cases[i].e);
        printf("%-90s -> %d (expected %d)\n", cases[i].e, got, cases[i].want);
        ASSERT_EQ_INT(cases[i].want, got);
    }
    ASSERT_EQ_INT(0, result_error_is_outcome(NULL));
}

