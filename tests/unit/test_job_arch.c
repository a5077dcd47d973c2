/* test_job_arch.c — the job keys of the architecture: model.arch, model.ffn_hidden, model.rope_theta — defaults,
 * errors that name the key, the arch-only rule both ways, the even head size for llama, and the round trip. */
#include "harness.h"
#include "job.h"
#include "model.h"

#define JOB(dmodel, heads, extra_model) \
    "{\"model\":{\"n_layer\":2,\"d_model\":" dmodel ",\"vocab_size\":100,\"seq_len\":64,\"heads\":[" heads "]" extra_model "}," \
    "\"data\":{\"train\":\"d/train_*.bin\",\"val\":\"d/val_*.bin\"}}"

static void expect_error(const char *text, const char *needle) {
    struct job_config j;
    char err[512] = "";
    int rc = job_parse_json(text, &j, err, sizeof err);
    if (rc == 0) HFAIL("expected an error containing \"%s\" for %s", needle, text);
    printf("%s\n", err);
    ASSERT_EQ_INT(JOB_EINVAL, rc);
    ASSERT_CONTAINS(err, needle);
}

TEST(gpt2_is_the_default_and_llama_gets_its_defaults) {
    struct job_config j;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(JOB("768", "12,12", ""), &j, err, sizeof err));
    ASSERT_STREQ("gpt2", j.model.arch);
    ASSERT_EQ_INT(0, j.model.ffn_hidden);
    job_release(&j);
    const char *dm[] = {"768", "1024", "1536"};
    int want[] = {2048, 2752, 4096};
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof text, JOB("%s", "16,16", ",\"arch\":\"llama\""), dm[i]);
        ASSERT_EQ_INT(0, job_parse_json(text, &j, err, sizeof err));
        ASSERT_STREQ("llama", j.model.arch);
        ASSERT_EQ_INT(want[i], j.model.ffn_hidden);
        ASSERT_EQ_INT(want[i], model_llama_default_ffn(atoi(dm[i])));
        ASSERT_EQ_INT(10000, j.model.rope_theta);
        job_release(&j);
    }
}

TEST(arch_only_keys_and_bad_values_name_the_key) {
    expect_error(JOB("64", "2,4", ",\"ffn_hidden\":128"), "model.ffn_hidden: only for model.arch \"llama\"");
    expect_error(JOB("64", "2,4", ",\"arch\":\"gpt2\",\"rope_theta\":500"), "model.rope_theta: only for model.arch \"llama\"");
    expect_error(JOB("64", "2,4", ",\"arch\":\"GPT2\""), "model.arch: expected \"gpt2\" or \"llama\", got \"GPT2\"");
    expect_error(JOB("64", "2,4", ",\"arch\":7"), "model.arch: expected \"gpt2\" or \"llama\", got an integer");
    expect_error(JOB("64", "2,4", ",\"arch\":\"llama\",\"ffn_hidden\":0"), "model.ffn_hidden: must be between");
    expect_error(JOB("64", "2,4", ",\"arch\":\"llama\",\"rope_theta\":1.5"), "model.rope_theta: expected an integer");
    expect_error(JOB("60", "2,4", ",\"arch\":\"llama\""), "model.heads[1]: 4 heads give head size 15, which is odd");
    /* the same odd head size is fine for GPT-2 */
    struct job_config j;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(JOB("60", "2,4", ""), &j, err, sizeof err));
    job_release(&j);
}

TEST(llama_keys_round_trip_and_gpt2_jobs_print_as_before) {
    struct job_config j, k;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(JOB("64", "2,4", ",\"arch\":\"llama\",\"ffn_hidden\":96,\"rope_theta\":500"), &j, err, sizeof err));
    json_t *o = job_to_json(&j);
    char *text = json_dumps(o, JSON_SORT_KEYS);
    printf("%s\n", text);
    ASSERT_CONTAINS(text, "\"arch\": \"llama\"");
    ASSERT_EQ_INT(0, job_parse_json(text, &k, err, sizeof err));
    ASSERT_STREQ("llama", k.model.arch);
    ASSERT_EQ_INT(96, k.model.ffn_hidden);
    ASSERT_EQ_INT(500, k.model.rope_theta);
    free(text); json_decref(o); job_release(&j); job_release(&k);
    ASSERT_EQ_INT(0, job_parse_json(JOB("64", "2,4", ""), &j, err, sizeof err));
    o = job_to_json(&j);
    text = json_dumps(o, JSON_SORT_KEYS);
    ASSERT_TRUE(strstr(text, "arch") == NULL && strstr(text, "rope_theta") == NULL);   /* unchanged GPT-2 job text */
    free(text); json_decref(o); job_release(&j);
}
