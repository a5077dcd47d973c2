/* test_zeroshot.c — zero-shot evaluation: llm.c eval files (round trip, and every bad-file error names the file,
 * the example and the problem), the job key eval.tasks, and prism-worker's acc / acc_norm in result.json against
 * an independent scorer: a plain double-precision GPT-2 forward written here, run on the model.bin the worker wrote,
 * one completion at a time with its own left cut of the context.
 * timeout: 300
 */
#include "harness.h"
#include "checkpoint.h"
#include "evalfile.h"
#include "evaltasks.h"
#include "job.h"
#include "model.h"
#include "shard.h"
#include "zeroshot.h"
#include <jansson.h>
#include <math.h>
#include <stdint.h>

/* ---- eval files ------------------------------------------------------------------------------------ */

static uint32_t rng = 2024;
static int rnd(int n) { rng = rng * 1103515245u + 12345u; return (int)((rng >> 8) % (uint32_t)n); }

/* n examples with contexts of 1..maxctx tokens and 2..4 endings of 1..4 tokens, tokens < V; with_chars: each
 * ending also gets a character count of 0..30 (header[4] = 1) */
static void write_examples(const char *path, int n, int V, int maxctx, int with_chars) {
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    char err[512];
    for (int i = 0; i < n; i++) {
        uint16_t ctx[256], comp[4][4];
        const uint16_t *cp[4];
        int cl[4], ch[4], nc = 2 + rnd(3), nctx = 1 + rnd(maxctx);
        for (int t = 0; t < nctx; t++) ctx[t] = (uint16_t)rnd(V);
        for (int c = 0; c < nc; c++) {
            cl[c] = 1 + rnd(4);
            for (int t = 0; t < cl[c]; t++) comp[c][t] = (uint16_t)rnd(V);
            cp[c] = comp[c];
            ch[c] = rnd(31);
        }
        if (evalfile_writer_add_chars(&w, rnd(nc), ctx, nctx, nc, cp, cl, with_chars ? ch : NULL, err, sizeof err))
            HFAIL("add: %s", err);
    }
    if (evalfile_writer_finish(&w, path, err, sizeof err)) HFAIL("finish: %s", err);
    evalfile_writer_release(&w);
}

TEST(eval_file_round_trip_matches_llmc_layout) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/t.bin", harness_tmpdir());
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    uint16_t ctx[3] = {5, 6, 7}, a[1] = {8}, b[2] = {9, 10};
    const uint16_t *cp[2] = {a, b};
    int cl[2] = {1, 2};
    ASSERT_EQ_INT(0, evalfile_writer_add(&w, 1, ctx, 3, 2, cp, cl, err, sizeof err));
    ASSERT_EQ_INT(0, evalfile_writer_finish(&w, path, err, sizeof err));
    evalfile_writer_release(&w);
    /* the bytes, as llm.c's write_evalfile lays them out */
    FILE *f = fopen(path, "rb");
    int32_t hdr[256];
    uint16_t body[64];
    ASSERT_EQ_INT(1, fread(hdr, sizeof hdr, 1, f));
    size_t nb = fread(body, 2, 64, f);
    fclose(f);
    ASSERT_EQ_INT(20240522, hdr[0]);
    ASSERT_EQ_INT(1, hdr[1]);
    ASSERT_EQ_INT(1, hdr[2]);
    uint16_t want[] = {65535, 28, 0, 1, 2, 3, 5, 6, 7, 1, 8, 2, 9, 10};
    ASSERT_EQ_INT(14, nb);
    ASSERT_EQ_INT(28, hdr[3]);   /* longest example in bytes */
    for (int i = 0; i < 14; i++) ASSERT_EQ_INT(want[i], body[i]);
    struct evalfile ef;
    ASSERT_EQ_INT(0, evalfile_open(path, 11, &ef, err, sizeof err));
    ASSERT_EQ_INT(1, ef.n);
    struct evalfile_example ex;
    evalfile_example(&ef, 0, &ex);
    ASSERT_EQ_INT(1, ex.label);
    ASSERT_EQ_INT(2, ex.ncomp);
    ASSERT_EQ_INT(3, ex.ctx_len);
    ASSERT_EQ_INT(7, ex.ctx[2]);
    ASSERT_EQ_INT(2, ex.comp_len[1]);
    ASSERT_EQ_INT(10, ex.comp[1][1]);
    evalfile_close(&ef);
    /* token 10 is outside a vocabulary of 10 */
    ASSERT_EQ_INT(EVALFILE_EFORMAT, evalfile_open(path, 10, &ef, err, sizeof err));
    ASSERT_CONTAINS(err, path);
    ASSERT_CONTAINS(err, "example 0: completion 1 token 1 is 10, outside the vocabulary");
}

/* writes a two-example file, then lets fix() corrupt it (body = uint16 after the header) */
static void bad_file(const char *path, void (*fix)(int32_t *hdr, uint16_t *body, size_t *n)) {
    char err[512];
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    uint16_t ctx[2] = {1, 2}, a[1] = {3}, b[1] = {4};
    const uint16_t *cp[2] = {a, b};
    int cl[2] = {1, 1};
    for (int i = 0; i < 2; i++)
        if (evalfile_writer_add(&w, 0, ctx, 2, 2, cp, cl, err, sizeof err)) HFAIL("%s", err);
    int32_t hdr[256] = {EVALFILE_MAGIC, 1, 2, 22};
    uint16_t body[64];
    size_t n = w.len;
    memcpy(body, w.buf, n * 2);
    evalfile_writer_release(&w);
    fix(hdr, body, &n);
    FILE *f = fopen(path, "wb");
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(body, 2, n, f);
    fclose(f);
}
static void fix_magic(int32_t *h, uint16_t *b, size_t *n) { h[0] = 20240520; }
static void fix_trunc(int32_t *h, uint16_t *b, size_t *n) { *n -= 1; }
static void fix_label(int32_t *h, uint16_t *b, size_t *n) { b[12 + 3] = 2; }          /* example 1's label = 2 of 2 */
static void fix_token(int32_t *h, uint16_t *b, size_t *n) { b[12 + 6] = 500; }        /* example 1's first context token */
static void fix_delim(int32_t *h, uint16_t *b, size_t *n) { b[12] = 7; }
static void fix_count(int32_t *h, uint16_t *b, size_t *n) { h[2] = 3; }

TEST(bad_eval_files_are_refused_naming_file_example_and_problem) {
    const char *dir = harness_tmpdir();
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/bad.bin", dir);
    struct { void (*fix)(int32_t *, uint16_t *, size_t *); const char *want; } cases[] = {
        {fix_magic, "magic 20240520, expected 20240522"},
        {fix_trunc, "example 1: truncated"},
        {fix_label, "example 1: label 2 >= completion count 2"},
        {fix_token, "example 1: context token 0 is 500, outside the vocabulary (model.vocab_size 100)"},
        {fix_delim, "example 1: starts with 7"},
        {fix_count, "example 2: missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad_file(path, cases[i].fix);
        struct evalfile ef;
        ASSERT_EQ_INT(EVALFILE_EFORMAT, evalfile_open(path, 100, &ef, err, sizeof err));
        ASSERT_CONTAINS(err, path);
        ASSERT_CONTAINS(err, cases[i].want);
        ASSERT_TRUE(ef.data == NULL);
    }
}

/* Character counts (header[4] = 1): written after the examples, one uint32 per completion, read back per example;
 * a file without them reads -1; mixing, a wrong count of them and a bad flag are refused naming the problem. */
TEST(eval_file_character_counts_round_trip_and_are_checked) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/c.bin", harness_tmpdir());
    struct evalfile_writer w;
    evalfile_writer_init(&w);
    uint16_t ctx[2] = {5, 6}, a[1] = {8}, b[2] = {9, 10}, c3[1] = {4};
    const uint16_t *cp[3] = {a, b, c3};
    int cl[3] = {1, 2, 1}, ch0[2] = {3, 70000}, ch1[3] = {0, 1, 2};
    ASSERT_EQ_INT(0, evalfile_writer_add_chars(&w, 1, ctx, 2, 2, cp, cl, ch0, err, sizeof err));
    ASSERT_EQ_INT(0, evalfile_writer_add_chars(&w, 2, ctx, 2, 3, cp, cl, ch1, err, sizeof err));
    ASSERT_EQ_INT(EVALFILE_EINVAL, evalfile_writer_add(&w, 0, ctx, 2, 2, cp, cl, err, sizeof err));
    ASSERT_CONTAINS(err, "example 2: has no character counts, unlike the examples before it");
    ASSERT_EQ_INT(0, evalfile_writer_finish(&w, path, err, sizeof err));
    evalfile_writer_release(&w);
    struct evalfile ef;
    ASSERT_EQ_INT(0, evalfile_open(path, 11, &ef, err, sizeof err));
    struct evalfile_example ex;
    evalfile_example(&ef, 0, &ex);
    ASSERT_EQ_INT(3, ex.comp_chars[0]);
    ASSERT_EQ_INT(70000, ex.comp_chars[1]);   /* over 16 bits: both halves */
    evalfile_example(&ef, 1, &ex);
    ASSERT_EQ_INT(0, ex.comp_chars[0]);
    ASSERT_EQ_INT(2, ex.comp_chars[2]);
    evalfile_close(&ef);
    /* the same examples without counts: -1, and the file is llm.c's own layout (no bytes after the examples) */
    evalfile_writer_init(&w);
    ASSERT_EQ_INT(0, evalfile_writer_add(&w, 1, ctx, 2, 2, cp, cl, err, sizeof err));
    char plain[4300];
    snprintf(plain, sizeof plain, "%s.plain", path);
    ASSERT_EQ_INT(0, evalfile_writer_finish(&w, plain, err, sizeof err));
    evalfile_writer_release(&w);
    ASSERT_EQ_INT(0, evalfile_open(plain, 11, &ef, err, sizeof err));
    evalfile_example(&ef, 0, &ex);
    ASSERT_EQ_INT(-1, ex.comp_chars[0]);
    ASSERT_TRUE(ef.chars == NULL);
    evalfile_close(&ef);
    /* cut one count off: refused naming what header[4] promises */
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    ASSERT_EQ_INT(0, truncate(path, sz - 4));
    ASSERT_EQ_INT(EVALFILE_EFORMAT, evalfile_open(path, 11, &ef, err, sizeof err));
    ASSERT_CONTAINS(err, path);
    ASSERT_CONTAINS(err, "header[4] = 1 promises 5 character counts (one per completion, 20 bytes) after the examples, but 16 bytes follow them");
    /* a flag other than 0 or 1 */
    f = fopen(plain, "r+b");
    int32_t seven = 7;
    fseek(f, 4 * 4, SEEK_SET);
    fwrite(&seven, 4, 1, f);
    fclose(f);
    ASSERT_EQ_INT(EVALFILE_EFORMAT, evalfile_open(plain, 11, &ef, err, sizeof err));
    ASSERT_CONTAINS(err, "header[4] is 7, expected 0 (no character counts) or 1");
}

/* lm-evaluation-harness's definitions, restated here from lm_eval/api/task.py (ConfigurableTask.process_results,
 * output_type multiple_choice): lls[c] = the summed log-likelihood of continuation " " + choice[c];
 * completion_len[c] = len(choice[c]) (Python: code points, the delimiter not counted); acc: argmax(lls) == gold,
 * acc_norm: argmax(lls / completion_len) == gold (numpy argmax: the first maximum). llm.c's acc_norm (its
 * hellaswag.py): argmin of the mean loss per completion token. Fixture items with hand-picked log-likelihoods,
 * character and token lengths. */
static int argmax_first(const double *x, int n) { int b = 0; for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i; return b; }

TEST(decisions_match_lm_evals_and_llmcs_definitions_on_fixture_items) {
    struct item {
        const char *choice[3];   /* the completions as evaltasks.c builds them: " " + choice */
        int py_len[3];           /* len(choice) in Python, counted by hand */
        int toks[3];             /* GPT-2-like token counts */
        double ll[3];            /* loglikelihoods */
        int want_acc, want_tok, want_char;
    } items[] = {
        /* summed: 0 (ll -1.0); per token: 1 (-2.0 / 4 = -0.5); per character: 2 (-4.0 / 19 = -0.21) */
        {{" ab", " c\xc3\xa9" "d", " twenty characters!!"}, {2, 3, 19}, {1, 4, 5}, {-1.0, -2.0, -4.0}, 0, 1, 2},
        /* characters, not bytes: "\xc3\xa9\xc3\xa9\xc3\xa9" is 3 characters (6 bytes): -1.2 / 3 = -0.4 loses to
         * -1.0 / 4 = -0.25, where per byte (-0.2) it would win */
        {{" \xc3\xa9\xc3\xa9\xc3\xa9", " abcd", " x"}, {3, 4, 1}, {3, 1, 1}, {-1.2, -1.0, -0.9}, 2, 0, 1},
        /* ties go to the lowest index in all three (numpy's argmax, llm.c's argmin) */
        {{" aa", " bb", " cccc"}, {2, 2, 4}, {2, 2, 4}, {-3.0, -3.0, -6.0}, 0, 0, 0},
        /* an empty choice (0 characters): lm-eval's ll / 0 = -inf never wins */
        {{" ", " abc", " abcdef"}, {0, 3, 6}, {1, 1, 2}, {-0.5, -3.0, -5.0}, 0, 0, 2},
    };
    int differ = 0;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        const struct item *it = &items[i];
        double sum[3], lm_norm[3], tok_norm[3];
        int chars[3], byte_pick = 0;
        for (int c = 0; c < 3; c++) {
            chars[c] = evaltask_choice_chars(it->choice[c]);
            ASSERT_EQ_INT(it->py_len[c], chars[c]);   /* the stored count is Python's len(choice) */
            sum[c] = -it->ll[c];
            lm_norm[c] = it->py_len[c] ? it->ll[c] / it->py_len[c] : -INFINITY;
            tok_norm[c] = it->ll[c] / it->toks[c];
            double pb = it->ll[c] / (double)(strlen(it->choice[c]) - 1), best = it->ll[byte_pick] / (double)(strlen(it->choice[byte_pick]) - 1);
            if (strlen(it->choice[c]) > 1 && pb > best) byte_pick = c;
        }
        int ref_acc = argmax_first(it->ll, 3), ref_char = argmax_first(lm_norm, 3), ref_tok = argmax_first(tok_norm, 3);
        ASSERT_EQ_INT(it->want_acc, ref_acc);
        ASSERT_EQ_INT(it->want_tok, ref_tok);
        ASSERT_EQ_INT(it->want_char, ref_char);
        int best, best_norm, best_char;
        zeroshot_decide(sum, it->toks, chars, 3, &best, &best_norm, &best_char);
        printf("item %zu: acc %d acc_norm (per token) %d acc_norm_char %d (lm-eval: %d %d)\n", i, best, best_norm,
               best_char, ref_acc, ref_char);
        ASSERT_EQ_INT(ref_acc, best);
        ASSERT_EQ_INT(ref_tok, best_norm);
        ASSERT_EQ_INT(ref_char, best_char);
        if (i == 1) ASSERT_NE_INT(byte_pick, best_char);   /* bytes would pick another choice */
        differ += best != best_norm && best_norm != best_char && best != best_char;
        zeroshot_decide(sum, it->toks, NULL, 3, &best, &best_norm, &best_char);
        ASSERT_EQ_INT(-1, best_char);                      /* no counts: no decision */
    }
    ASSERT_EQ_INT(2, differ);   /* items 0 and 1: the three rules pick three different choices */
}

TEST(job_key_eval_tasks_parses_checks_and_round_trips) {
    const char *base = "{\"model\":{\"n_layer\":1,\"d_model\":8,\"vocab_size\":16,\"seq_len\":8,\"heads\":[2]},"
                       "\"data\":{\"train\":\"a\",\"val\":\"b\"},\"eval\":{\"tasks\":%s}}";
    char text[1024], err[512];
    struct job_config j;
    snprintf(text, sizeof text, base, "[{\"name\":\"hellaswag\",\"path\":\"hellaswag_val.bin\"},{\"name\":\"piqa\",\"path\":\"/x/piqa.bin\"}]");
    ASSERT_EQ_INT(0, job_parse_json(text, &j, err, sizeof err));
    ASSERT_EQ_INT(2, j.eval.ntasks);
    ASSERT_STREQ("piqa", j.eval.tasks[1].name);
    ASSERT_STREQ("/x/piqa.bin", j.eval.tasks[1].path);
    struct job_config c;
    ASSERT_EQ_INT(0, job_copy(&c, &j));
    json_t *o = job_to_json(&c);
    char *dump = json_dumps(json_object_get(json_object_get(o, "eval"), "tasks"), JSON_COMPACT);
    ASSERT_STREQ("[{\"name\":\"hellaswag\",\"path\":\"hellaswag_val.bin\"},{\"name\":\"piqa\",\"path\":\"/x/piqa.bin\"}]", dump);
    free(dump);
    json_decref(o);
    job_release(&c);
    job_release(&j);
    struct { const char *tasks, *want; } bad[] = {
        {"{}", "eval.tasks: expected an array"},
        {"[{\"name\":\"a\"}]", "eval.tasks[0].path: required"},
        {"[{\"path\":\"x\"}]", "eval.tasks[0].name: required"},
        {"[{\"name\":\"a b\",\"path\":\"x\"}]", "eval.tasks[0].name: \"a b\" must be 1-63 of [A-Za-z0-9._-]"},
        {"[{\"name\":\"a\",\"path\":\"x\"},{\"name\":\"a\",\"path\":\"y\"}]", "eval.tasks[1].name: \"a\" repeats eval.tasks[0]"},
        {"[{\"name\":\"a\",\"path\":\"x\",\"n\":3}]", "eval.tasks[0].n: unknown key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, base, bad[i].tasks);
        ASSERT_EQ_INT(JOB_EINVAL, job_parse_json(text, &j, err, sizeof err));
        ASSERT_CONTAINS(err, bad[i].want);
    }
}

/* ---- the independent scorer ------------------------------------------------------------------------- */

enum { L_ = 2, C_ = 16, V_ = 50, VP_ = 64, T_ = 12, B_ = 3 };
static const int HEADS[L_] = {2, 4};

struct params { const float *t[MODEL_NUM_TENSORS]; };

static void layernorm(const double *x, const float *w, const float *b, double *out) {
    double m = 0, v = 0;
    for (int i = 0; i < C_; i++) m += x[i];
    m /= C_;
    for (int i = 0; i < C_; i++) v += (x[i] - m) * (x[i] - m);
    v /= C_;
    double rs = 1.0 / sqrt(v + 1e-5);
    for (int i = 0; i < C_; i++) out[i] = (x[i] - m) * rs * w[i] + b[i];
}

/* out (nout) = W (nout, nin) · in + bias */
static void linear(const double *in, const float *W, const float *bias, int nin, int nout, double *out) {
    for (int o = 0; o < nout; o++) {
        double s = bias ? bias[o] : 0;
        for (int i = 0; i < nin; i++) s += W[(size_t)o * nin + i] * in[i];
        out[o] = s;
    }
}

/* Σ over positions p in [first, first+count) of −log p(seq[p+1] | seq[..p]) for the n-token sequence seq */
static double seq_loss(const struct params *P, const int *seq, int n, int first, int count) {
    static double x[T_][C_], h[T_][C_], qkv[T_][3 * C_], y[T_][C_], tmp[T_][4 * C_], o[4 * C_];
    int N = n - 1;   /* inputs */
    for (int t = 0; t < N; t++)
        for (int c = 0; c < C_; c++) x[t][c] = (double)P->t[0][seq[t] * C_ + c] + P->t[1][t * C_ + c];
    for (int l = 0; l < L_; l++) {
        int NH = HEADS[l], hs = C_ / NH;
        for (int t = 0; t < N; t++) {
            layernorm(x[t], P->t[2] + l * C_, P->t[3] + l * C_, h[t]);
            linear(h[t], P->t[4] + (size_t)l * 3 * C_ * C_, P->t[5] + l * 3 * C_, C_, 3 * C_, qkv[t]);
        }
        for (int t = 0; t < N; t++)
            for (int hd = 0; hd < NH; hd++) {
                double sc[T_], mx = -1e300, z = 0;
                for (int u = 0; u <= t; u++) {
                    double d = 0;
                    for (int i = 0; i < hs; i++) d += qkv[t][hd * hs + i] * qkv[u][C_ + hd * hs + i];
                    sc[u] = d / sqrt((double)hs);
                    if (sc[u] > mx) mx = sc[u];
                }
                for (int u = 0; u <= t; u++) { sc[u] = exp(sc[u] - mx); z += sc[u]; }
                for (int i = 0; i < hs; i++) {
                    double s = 0;
                    for (int u = 0; u <= t; u++) s += sc[u] / z * qkv[u][2 * C_ + hd * hs + i];
                    y[t][hd * hs + i] = s;
                }
            }
        for (int t = 0; t < N; t++) {
            linear(y[t], P->t[6] + (size_t)l * C_ * C_, P->t[7] + l * C_, C_, C_, o);
            for (int c = 0; c < C_; c++) x[t][c] += o[c];
            layernorm(x[t], P->t[8] + l * C_, P->t[9] + l * C_, h[t]);
            linear(h[t], P->t[10] + (size_t)l * 4 * C_ * C_, P->t[11] + l * 4 * C_, C_, 4 * C_, tmp[t]);
            for (int c = 0; c < 4 * C_; c++) {
                double u = tmp[t][c];
                tmp[t][c] = 0.5 * u * (1 + tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)));
            }
            linear(tmp[t], P->t[12] + (size_t)l * C_ * 4 * C_, P->t[13] + l * C_, 4 * C_, C_, o);
            for (int c = 0; c < C_; c++) x[t][c] += o[c];
        }
    }
    double total = 0;
    for (int p = first; p < first + count; p++) {
        layernorm(x[p], P->t[14], P->t[15], h[p]);
        double logit[V_], mx = -1e300, z = 0;
        for (int v = 0; v < V_; v++) {
            double s = 0;
            for (int c = 0; c < C_; c++) s += (double)P->t[0][v * C_ + c] * h[p][c];
            logit[v] = s;
            if (s > mx) mx = s;
        }
        for (int v = 0; v < V_; v++) z += exp(logit[v] - mx);
        total += mx + log(z) - logit[seq[p + 1]];
    }
    return total;
}

static json_t *run_worker(const char *worker, const char *device, const char *dir, char **log) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s train job.json --out out --device %s --quiet --threads 1", dir, worker, device);
    int st = harness_run(cmd, log);
    if (st != 0) HFAIL("prism-worker exited %d:\n%s", st, *log);
    char rp[4200];
    snprintf(rp, sizeof rp, "%s/out/result.json", dir);
    json_error_t je;
    json_t *res = json_load_file(rp, 0, &je);
    if (!res) HFAIL("%s: %s", rp, je.text);
    return res;
}

/* shards, an eval file of 60 examples (contexts up to 20 tokens: some longer than T = 12 and cut) and the job */
static const char *setup(char *evalpath, size_t n) {
    const char *dir = harness_tmpdir();
    static char d[4096];
    snprintf(d, sizeof d, "%s", dir);
    char p[4200], err[512];
    uint16_t tok[4000];
    for (int i = 0; i < 4000; i++) tok[i] = (uint16_t)((i * 7 + i / 13) % V_);
    snprintf(p, sizeof p, "%s/train.bin", d);
    if (shard_write(p, tok, 4000, err, sizeof err)) HFAIL("%s", err);
    snprintf(p, sizeof p, "%s/val.bin", d);
    if (shard_write(p, tok, 1000, err, sizeof err)) HFAIL("%s", err);
    snprintf(evalpath, n, "%s/tasks.bin", d);
    rng = 77;
    write_examples(evalpath, 60, V_, 20, 1);
    snprintf(p, sizeof p, "%s/job.json", d);
    FILE *f = fopen(p, "w");
    fprintf(f, "{\"model\":{\"n_layer\":%d,\"d_model\":%d,\"vocab_size\":%d,\"padded_vocab_size\":%d,\"seq_len\":%d,"
               "\"heads\":[%d,%d]},\"train\":{\"batch_size\":%d,\"steps\":4,\"lr\":0.01,\"seed\":3},"
               "\"eval\":{\"batches\":1,\"tasks\":[{\"name\":\"mc\",\"path\":\"tasks.bin\"}]},"
               "\"data\":{\"train\":\"train.bin\",\"val\":\"val.bin\"}}\n",
            L_, C_, V_, VP_, T_, HEADS[0], HEADS[1], B_);
    fclose(f);
    return d;
}

TEST(worker_acc_and_acc_norm_match_an_independent_scorer_exactly) {
    char evalpath[4200], err[512];
    const char *dir = setup(evalpath, sizeof evalpath);
    char *log = NULL;
    json_t *res = run_worker(harness_bin("prism-worker"), "cpu", dir, &log);
    json_t *zs = json_object_get(json_object_get(res, "zero_shot"), "mc");
    if (!json_is_object(zs)) HFAIL("result.json has no zero_shot.mc:\n%s", json_dumps(res, 0));

    /* the model the worker ended with */
    struct model_config cfg = {.L = L_, .C = C_, .V = V_, .Vp = VP_, .maxT = T_, .B = B_, .T = T_};
    for (int l = 0; l < L_; l++) cfg.heads[l] = HEADS[l];
    size_t sizes[MODEL_NUM_TENSORS], np = model_num_params(&cfg);
    model_param_sizes(&cfg, sizes);
    float *params = malloc(np * sizeof(float));
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/out/model.bin", dir);
    if (ckpt_read_model(mp, &cfg, params, err, sizeof err)) HFAIL("%s", err);
    struct params P;
    size_t off = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) { P.t[i] = params + off; off += sizes[i]; }

    struct evalfile ef;
    if (evalfile_open(evalpath, V_, &ef, err, sizeof err)) HFAIL("%s", err);
    int correct = 0, correct_norm = 0, correct_char = 0, truncated = 0, differ = 0, differ_char = 0;
    double min_gap = 1e300;
    for (int i = 0; i < ef.n; i++) {
        struct evalfile_example ex;
        evalfile_example(&ef, i, &ex);
        double sum[EVALFILE_MAX_COMPLETIONS], mean[EVALFILE_MAX_COMPLETIONS];
        int cut = 0;
        for (int c = 0; c < ex.ncomp; c++) {
            /* the left cut by hand: at most T inputs, so at most T + 1 − len context tokens */
            int keep = ex.ctx_len, len = ex.comp_len[c];
            if (keep + len - 1 > T_) { keep = T_ + 1 - len; cut = 1; }
            int seq[64], n = 0;
            for (int t = ex.ctx_len - keep; t < ex.ctx_len; t++) seq[n++] = ex.ctx[t];
            for (int t = 0; t < len; t++) seq[n++] = ex.comp[c][t];
            sum[c] = seq_loss(&P, seq, n, keep - 1, len);
            mean[c] = sum[c] / len;
        }
        truncated += cut;
        /* lm-eval's acc_norm: the summed loss per character of the choice (0 characters: never chosen) */
        double pc[EVALFILE_MAX_COMPLETIONS];
        for (int c = 0; c < ex.ncomp; c++) pc[c] = ex.comp_chars[c] > 0 ? sum[c] / ex.comp_chars[c] : INFINITY;
        int b = 0, bn = 0, bc = 0;
        for (int c = 1; c < ex.ncomp; c++) { if (sum[c] < sum[b]) b = c; if (mean[c] < mean[bn]) bn = c; if (pc[c] < pc[bc]) bc = c; }
        for (int c = 0; c < ex.ncomp; c++) {   /* float vs double must not be able to flip a decision */
            if (c != b) min_gap = fmin(min_gap, sum[c] - sum[b]);
            if (c != bn) min_gap = fmin(min_gap, mean[c] - mean[bn]);
            if (c != bc && isfinite(pc[bc])) min_gap = fmin(min_gap, pc[c] - pc[bc]);
        }
        correct += b == ex.label;
        correct_norm += bn == ex.label;
        correct_char += bc == ex.label;
        differ += b != bn;
        differ_char += bc != bn;
    }
    ASSERT_LT(1e-4, min_gap);
    ASSERT_LT(0, differ);          /* the data tells acc from acc_norm */
    ASSERT_LT(0, truncated);       /* and exercises the left cut */
    ASSERT_EQ_INT(ef.n, json_integer_value(json_object_get(zs, "n")));
    ASSERT_EQ_INT(truncated, json_integer_value(json_object_get(zs, "truncated")));
    double acc = (double)correct / ef.n, acc_norm = (double)correct_norm / ef.n;
    printf("independent: acc %d/%d acc_norm %d/%d truncated %d; worker: acc %.17g acc_norm %.17g\n", correct, ef.n,
           correct_norm, ef.n, truncated, json_number_value(json_object_get(zs, "acc")),
           json_number_value(json_object_get(zs, "acc_norm")));
    ASSERT_TRUE(acc == json_number_value(json_object_get(zs, "acc")));
    ASSERT_TRUE(acc_norm == json_number_value(json_object_get(zs, "acc_norm")));
    ASSERT_TRUE(acc != acc_norm);
    ASSERT_LT(0, differ_char);     /* and per character from per token */
    printf("independent acc_norm_char %d/%d; worker %.17g\n", correct_char, ef.n,
           json_number_value(json_object_get(zs, "acc_norm_char")));
    ASSERT_TRUE(json_is_real(json_object_get(zs, "acc_norm_char")));
    ASSERT_TRUE((double)correct_char / ef.n == json_number_value(json_object_get(zs, "acc_norm_char")));
    /* the last metrics row carries it too */
    char path[4200];
    snprintf(path, sizeof path, "%s/out/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof line, f)) snprintf(last, sizeof last, "%s", line);
    fclose(f);
    json_t *row = json_loads(last, 0, NULL);
    ASSERT_TRUE(json_equal(zs, json_object_get(json_object_get(row, "zero_shot"), "mc")));
    json_decref(row);
    evalfile_close(&ef);
    free(params);
    json_decref(res);
    free(log);
}

TEST(cuda_backend_scores_the_same_tasks_on_the_emulator) {
    char evalpath[4200];
    char worker[4096];
    snprintf(worker, sizeof worker, "%s", harness_bin("prism-worker.emu-fp32"));
    if (access(worker, X_OK)) SKIP("no %s (the CUDA emulator builds on x86-64 only)", worker);
    const char *dir = setup(evalpath, sizeof evalpath);
    char *log = NULL;
    json_t *cpu = run_worker(harness_bin("prism-worker"), "cpu", dir, &log);
    free(log);
    json_t *cu = run_worker(worker, "0", dir, &log);
    json_t *a = json_object_get(json_object_get(cpu, "zero_shot"), "mc"), *b = json_object_get(json_object_get(cu, "zero_shot"), "mc");
    ASSERT_STREQ("cuda", json_string_value(json_object_get(cu, "device")));
    ASSERT_TRUE(json_is_object(b));
    ASSERT_EQ_INT(json_integer_value(json_object_get(a, "n")), json_integer_value(json_object_get(b, "n")));
    ASSERT_EQ_INT(json_integer_value(json_object_get(a, "truncated")), json_integer_value(json_object_get(b, "truncated")));
    /* fp32 on the emulator: the same decisions up to a few float-order flips */
    ASSERT_NEAR(json_number_value(json_object_get(a, "acc")), json_number_value(json_object_get(b, "acc")), 0.05);
    ASSERT_NEAR(json_number_value(json_object_get(a, "acc_norm")), json_number_value(json_object_get(b, "acc_norm")), 0.05);
    json_decref(cpu);
    json_decref(cu);
    free(log);
}

TEST(a_bad_task_file_fails_the_job_before_training_naming_it) {
    char evalpath[4200];
    const char *dir = setup(evalpath, sizeof evalpath);
    FILE *f = fopen(evalpath, "r+b");
    fseek(f, 1024 + 2 * 3, SEEK_SET);             /* example 0's label */
    uint16_t lab = 9;
    fwrite(&lab, 2, 1, f);
    fclose(f);
    char cmd[4200], *log = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && %s train job.json --out out --quiet", dir, harness_bin("prism-worker"));
    int st = harness_run(cmd, &log);
    ASSERT_NE_INT(0, st);
    ASSERT_CONTAINS(log, "eval.tasks[0] (mc)");
    ASSERT_CONTAINS(log, "tasks.bin: example 0: label 9 >= completion count");
    char p[4200];
    snprintf(p, sizeof p, "%s/out/metrics.jsonl", dir);
    ASSERT_TRUE(access(p, F_OK) != 0);            /* nothing trained */
    free(log);
}
