/* test_checkpoint_llama.c — the Llama-style model file (pinned format, kernels/checkpoint.h) and the
 * training-state checkpoint's arch: exact header slots and tensor order, refusal of malformed files with a
 * message naming the field, and resume refusing an arch mismatch.
 * timeout: 60
 */
#include "harness.h"
#include "checkpoint.h"
#include "model.h"
#include <stdint.h>
#include <sys/stat.h>

static struct model_config llama_cfg(void) {
    struct model_config c = {.L = 3, .C = 16, .V = 50, .Vp = 64, .maxT = 12, .heads = {2, 4, 8}, .B = 1, .T = 12,
                             .arch = MODEL_ARCH_LLAMA, .H = 48, .rope_theta = 10000};
    return c;
}

static void tmp_path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", harness_tmpdir(), name); }

TEST(model_file_has_the_pinned_header_and_tensor_order) {
    char path[4200], err[512];
    tmp_path(path, sizeof path, "llama.bin");
    struct model_config c = llama_cfg();
    size_t n = model_num_params(&c);
    /* 64·16 + 3·(16 + 768 + 256 + 16 + 768 + 768 + 768) + 16 */
    ASSERT_EQ_INT(64 * 16 + 3 * (16 + 3 * 256 + 256 + 16 + 3 * 48 * 16) + 16, n);
    float *p = malloc(n * 4), *q = malloc(n * 4);
    model_init_params(&c, 3, p);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    ASSERT_EQ_INT(256, fread(h, 4, 256, f));
    ASSERT_EQ_INT(n, fread(q, 4, n, f));
    fclose(f);
    int32_t want[] = {20260629, 1, 12, 50, 3, 8, 16, 64, 48, 10000};
    for (int i = 0; i < 10; i++) ASSERT_EQ_INT(want[i], h[i]);
    for (int i = 10; i < 16; i++) ASSERT_EQ_INT(0, h[i]);
    ASSERT_EQ_INT(2, h[16]); ASSERT_EQ_INT(4, h[17]); ASSERT_EQ_INT(8, h[18]); ASSERT_EQ_INT(0, h[19]);
    ASSERT_TRUE(memcmp(p, q, n * 4) == 0);
    /* file order: wte, attnormw (ones), qkvw, attprojw, mlpnormw (ones), fcw, fcgw, fcprojw, normfw (ones) */
    size_t o_an = 64 * 16, o_qkv = o_an + 48, o_ap = o_qkv + 3 * 768, o_mn = o_ap + 3 * 256, o_fc = o_mn + 48;
    size_t o_fcg = o_fc + 3 * 768, o_dn = o_fcg + 3 * 768, o_nf = o_dn + 3 * 768;
    ASSERT_EQ_INT(n, o_nf + 16);
    for (size_t i = 0; i < 48; i++) { ASSERT_NEAR(1, q[o_an + i], 0); ASSERT_NEAR(1, q[o_mn + i], 0); }
    for (size_t i = 0; i < 16; i++) ASSERT_NEAR(1, q[o_nf + i], 0);
    for (size_t i = 50 * 16; i < 64 * 16; i++) ASSERT_NEAR(0, q[i], 0);          /* padded vocab rows */
    double s_ap = 0, s_qkv = 0;                                                   /* W_O at 0.02/√6, qkv at 0.02 */
    for (size_t i = 0; i < 768; i++) { s_ap += (double)q[o_ap + i] * q[o_ap + i]; s_qkv += (double)q[o_qkv + i] * q[o_qkv + i]; }
    ASSERT_NEAR(0.02 / sqrt(6.0), sqrt(s_ap / 768), 0.0015);
    ASSERT_NEAR(0.02, sqrt(s_qkv / 768), 0.0015);
    /* reading back: header and params */
    struct model_config r;
    int has = 0;
    ASSERT_EQ_INT(0, ckpt_read_model_header(path, &r, &has, err, sizeof err));
    ASSERT_EQ_INT(MODEL_ARCH_LLAMA, r.arch); ASSERT_EQ_INT(48, r.H); ASSERT_NEAR(10000, r.rope_theta, 0);
    ASSERT_EQ_INT(1, has); ASSERT_EQ_INT(4, r.heads[1]);
    memset(q, 0, n * 4);
    ASSERT_EQ_INT(0, ckpt_read_model(path, &c, q, err, sizeof err));
    ASSERT_TRUE(memcmp(p, q, n * 4) == 0);
    free(p); free(q);
}

/* Writes a valid file, patches header slot `slot` to `val` (and truncates by `cut` bytes), expects rc and
 * a message containing `needle`. */
static void expect_refused(int slot, int32_t val, long cut, int want_rc, const char *needle) {
    char path[4200], err[512];
    tmp_path(path, sizeof path, "bad.bin");
    struct model_config c = llama_cfg();
    size_t n = model_num_params(&c);
    float *p = calloc(n, 4);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    FILE *f = fopen(path, "r+b");
    if (slot >= 0) { fseek(f, slot * 4, SEEK_SET); fwrite(&val, 4, 1, f); }
    fclose(f);
    if (cut) ASSERT_EQ_INT(0, truncate(path, 1024 + (long)n * 4 - cut));
    err[0] = 0;
    int rc = ckpt_read_model(path, &c, p, err, sizeof err);
    printf("slot %d = %d, cut %ld: %s\n", slot, val, cut, err);
    ASSERT_EQ_INT(want_rc, rc);
    ASSERT_CONTAINS(err, needle);
    ASSERT_CONTAINS(err, path);
    free(p);
}

TEST(malformed_files_are_refused_naming_the_field) {
    expect_refused(0, 20260630, 0, CKPT_EFORMAT, "bad magic: header slot 0 is neither");
    expect_refused(1, 2, 0, CKPT_EFORMAT, "slot 1 (version)");
    expect_refused(-1, 0, 4, CKPT_EFORMAT, "expected");                    /* one float short */
    expect_refused(8, 40, 0, CKPT_EFORMAT, "implies");                      /* wrong H: sizes disagree */
    expect_refused(8, 0, 0, CKPT_EFORMAT, "slot 8 (H");
    expect_refused(9, 0, 0, CKPT_EFORMAT, "slot 9 (rope_theta)");
    /* above 2^24 a float cannot hold it: it was read back rounded (961357584 → 961357568) */
    expect_refused(9, 961357584, 0, CKPT_EFORMAT, "slot 9 (rope_theta) is 961357584, expected 1..16777216");
    expect_refused(4, 0, 0, CKPT_EFORMAT, "slot 4 (L)");
    expect_refused(17, 16, 0, CKPT_EFORMAT, "slot 17 (heads of layer 1) is 16, giving an odd head size 1");
    expect_refused(16, 3, 0, CKPT_EFORMAT, "slot 16 (heads of layer 0) is 3, which does not divide C=16");
    expect_refused(5, 4, 0, CKPT_EFORMAT, "slot 5 (h_L)");
}

TEST(a_file_of_the_other_arch_or_other_shapes_is_a_mismatch) {
    char path[4200], err[512];
    tmp_path(path, sizeof path, "llama.bin");
    struct model_config c = llama_cfg();
    size_t n = model_num_params(&c);
    float *p = calloc(n * 2, 4);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    struct model_config g = c;
    g.arch = MODEL_ARCH_GPT2;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_model(path, &g, p, err, sizeof err));
    ASSERT_CONTAINS(err, "llama model file but the job has model.arch \"gpt2\"");
    struct model_config h = c;
    h.rope_theta = 500;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_model(path, &h, p, err, sizeof err));
    ASSERT_CONTAINS(err, "model.rope_theta=500");
    /* a GPT-2 file given to a llama job */
    ASSERT_EQ_INT(0, ckpt_write_model(path, &g, p, err, sizeof err));
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_model(path, &c, p, err, sizeof err));
    ASSERT_CONTAINS(err, "gpt2 model file but the job has model.arch \"llama\"");
    free(p);
}

TEST(training_state_carries_the_arch_and_resume_refuses_a_mismatch) {
    char path[4200], err[512];
    tmp_path(path, sizeof path, "state.bin");
    struct model_config c = llama_cfg();
    size_t n = model_num_params(&c);
    float *p = calloc(n, 4), *m = calloc(n, 4), *v = calloc(n, 4);
    model_init_params(&c, 9, p);
    struct ckpt_state st = {.step = 4, .data_pos = 4, .rng = 1, .seed = 9, .B = 1, .T = 12, .grad_accum = 1}, got;
    ASSERT_EQ_INT(0, ckpt_write_state(path, &c, &st, p, m, v, err, sizeof err));
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    ASSERT_EQ_INT(256, fread(h, 4, 256, f));
    fclose(f);
    ASSERT_EQ_INT(1, h[19]); ASSERT_EQ_INT(48, h[20]); ASSERT_EQ_INT(10000, h[21]);
    ASSERT_EQ_INT(0, ckpt_read_state(path, &c, &st, &got, p, m, v, err, sizeof err));
    ASSERT_EQ_INT(4, got.step);
    struct model_config g = c;
    g.arch = MODEL_ARCH_GPT2;
    float *big = calloc(model_num_params(&g), 4);
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_state(path, &g, &st, &got, big, big, big, err, sizeof err));
    ASSERT_CONTAINS(err, "arch is llama but the job has model.arch \"gpt2\"");
    struct model_config h2 = c;
    h2.H = 64;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_state(path, &h2, &st, &got, p, m, v, err, sizeof err));
    ASSERT_CONTAINS(err, "model.ffn_hidden=64");
    free(p); free(m); free(v); free(big);
}
