/* test_model.c — the float32 CPU backend through model.h: heads really are per layer, the init does not
 * depend on the schedule, AdamW decays only matrices, clipping uses the true global norm, the attention
 * distance is the paper's, and runs are bitwise reproducible. */
#include "harness.h"
#include "cpu_kernels.h"
#include "model.h"
#include <math.h>

static struct model_config cfg_with(const int *heads) {
    struct model_config c = {.L = 4, .C = 32, .V = 40, .Vp = 48, .maxT = 16, .B = 2, .T = 16};
    for (int l = 0; l < 4; l++) c.heads[l] = heads[l];
    return c;
}

static void batch(int *in, int *tg, int n) {
    uint32_t s = 12345;
    for (int i = 0; i < n; i++) { s = s * 1103515245u + 12345u; in[i] = (s >> 16) % 40; s = s * 1103515245u + 12345u; tg[i] = (s >> 16) % 40; }
}

static model *make(const struct model_config *c, uint64_t seed) {
    model *m = NULL;
    char err[512];
    if (model_cpu_ops.create(c, -1, &m, err, sizeof err)) HFAIL("create: %s", err);
    float *p = malloc(model_num_params(c) * 4);
    model_init_params(c, seed, p);
    model_cpu_ops.set_params(m, p);
    free(p);
    return m;
}

TEST(uniform_and_prism_schedules_give_different_losses_from_the_same_init) {
    int uni[4] = {4, 4, 4, 4}, prism[4] = {1, 2, 4, 4};
    struct model_config cu = cfg_with(uni), cp = cfg_with(prism);
    ASSERT_EQ_INT(model_num_params(&cu), model_num_params(&cp));   /* parameters do not depend on heads */
    size_t n = model_num_params(&cu);
    float *pu = malloc(n * 4), *pp = malloc(n * 4);
    model_init_params(&cu, 5, pu);
    model_init_params(&cp, 5, pp);
    ASSERT_EQ_INT(0, memcmp(pu, pp, n * 4));                       /* same seed, same weights */
    model *mu = make(&cu, 5), *mp = make(&cp, 5);
    int in[32], tg[32];
    batch(in, tg, 32);
    float lu, lp;
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(mu, in, tg, 2, 16, &lu, NULL));
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(mp, in, tg, 2, 16, &lp, NULL));
    printf("loss uniform %.9g, prism %.9g\n", lu, lp);
    ASSERT_TRUE(fabsf(lu - lp) > 1e-7f);
    /* a larger init shows a large difference: heads change the function, not only rounding */
    for (size_t i = 0; i < n; i++) pu[i] *= 20;
    model_cpu_ops.set_params(mu, pu);
    model_cpu_ops.set_params(mp, pu);
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(mu, in, tg, 2, 16, &lu, NULL));
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(mp, in, tg, 2, 16, &lp, NULL));
    printf("scaled init: loss uniform %.6f, prism %.6f\n", lu, lp);
    ASSERT_TRUE(fabsf(lu - lp) > 1e-2f);
    /* changing only the LAST layer's heads changes the loss too (every layer's count is used) */
    int last[4] = {1, 2, 4, 8};
    struct model_config cl = cfg_with(last);
    model *ml = make(&cl, 5);
    model_cpu_ops.set_params(ml, pu);
    float ll;
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(ml, in, tg, 2, 16, &ll, NULL));
    ASSERT_TRUE(fabsf(ll - lp) > 1e-4f);
    model_cpu_ops.free(mu); model_cpu_ops.free(mp); model_cpu_ops.free(ml);
    free(pu); free(pp);
}

TEST(initial_loss_is_near_log_vocab) {
    int h[4] = {1, 2, 4, 4};
    struct model_config c = cfg_with(h);
    model *m = make(&c, 1);
    int in[32], tg[32];
    batch(in, tg, 32);
    float l;
    ASSERT_EQ_INT(0, model_cpu_ops.forward_loss(m, in, tg, 2, 16, &l, NULL));
    ASSERT_NEAR(log(40.0), l, 0.1);          /* padded rows never count: ln(V), not ln(Vp) */
    model_cpu_ops.free(m);
}

TEST(weight_decay_only_on_matrices_and_clip_uses_global_norm) {
    int h[4] = {1, 2, 4, 4};
    struct model_config c = cfg_with(h);
    model *m = make(&c, 3);
    size_t n = model_num_params(&c), sz[MODEL_NUM_TENSORS];
    model_param_sizes(&c, sz);
    float *p0 = malloc(n * 4), *p1 = malloc(n * 4), *g = malloc(n * 4);
    model_cpu_ops.get_params(m, p0);
    /* zero gradient: AdamW's step is pure decay */
    model_cpu_ops.zero_grad(m);
    struct adamw_params hp = {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.5f};
    float norm = -1;
    ASSERT_EQ_INT(0, model_cpu_ops.update(m, &hp, 1, &norm));
    ASSERT_NEAR(0, norm, 0);
    model_cpu_ops.get_params(m, p1);
    size_t off = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        for (size_t k = 0; k < sz[i]; k += 7) {
            float want = model_tensor_decays(i) ? p0[off + k] - 0.1f * 0.5f * p0[off + k] : p0[off + k];
            ASSERT_NEAR(want, p1[off + k], 1e-7);
        }
        off += sz[i];
    }
    /* the norm update() reports is the true global norm of the accumulated gradient */
    int in[32], tg[32];
    batch(in, tg, 32);
    float loss;
    model_cpu_ops.zero_grad(m);
    ASSERT_EQ_INT(0, model_cpu_ops.forward_backward(m, in, tg, 2, 16, 0.5f, &loss));
    ASSERT_EQ_INT(0, model_cpu_ops.forward_backward(m, in, tg, 2, 16, 0.5f, &loss));
    model_cpu_ops.get_grads(m, g);
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    hp.grad_clip = 1e-3f;
    ASSERT_EQ_INT(0, model_cpu_ops.update(m, &hp, 2, &norm));
    ASSERT_NEAR(sqrt(ss), norm, 1e-5 * sqrt(ss));
    ASSERT_TRUE(norm > 1e-3f);
    free(p0); free(p1); free(g);
    model_cpu_ops.free(m);
}

TEST(grad_accumulation_of_two_halves_equals_one_scaled_pass) {
    int h[4] = {1, 2, 4, 4};
    struct model_config c = cfg_with(h);
    model *a = make(&c, 4), *b = make(&c, 4);
    size_t n = model_num_params(&c);
    int in[32], tg[32];
    batch(in, tg, 32);
    float l;
    model_cpu_ops.zero_grad(a);
    model_cpu_ops.forward_backward(a, in, tg, 2, 16, 1.0f, &l);
    model_cpu_ops.zero_grad(b);
    model_cpu_ops.forward_backward(b, in, tg, 2, 16, 0.25f, &l);
    model_cpu_ops.forward_backward(b, in, tg, 2, 16, 0.75f, &l);
    float *ga = malloc(n * 4), *gb = malloc(n * 4);
    model_cpu_ops.get_grads(a, ga);
    model_cpu_ops.get_grads(b, gb);
    double worst = 0, gmax = 0;
    for (size_t i = 0; i < n; i++) { double d = fabs(ga[i] - gb[i]); if (d > worst) worst = d; if (fabs(ga[i]) > gmax) gmax = fabs(ga[i]); }
    printf("worst |difference| %.3g, largest gradient %.3g\n", worst, gmax);
    ASSERT_TRUE(gmax > 1e-3);
    ASSERT_TRUE(worst < 1e-5 * gmax);
    free(ga); free(gb);
    model_cpu_ops.free(a); model_cpu_ops.free(b);
}

TEST(attention_distance_is_the_papers_definition) {
    /* q = k = 0 gives uniform causal attention: row t spreads 1/(t+1) over s <= t, so
     * Σ_s A[t,s]|t−s| = t/2; D = mean over t in [T/2, T) of t/2. T=8: mean(2, 2.5, 3, 3.5) = 2.75 per sequence. */
    int B = 3, T = 8, C = 8, NH = 2;
    float *qkv = calloc((size_t)B * T * 3 * C, 4), *out = malloc((size_t)B * T * C * 4), *att = malloc((size_t)B * NH * T * T * 4);
    for (int i = 0; i < B * T; i++) for (int c = 0; c < C; c++) qkv[(size_t)i * 3 * C + 2 * C + c] = 1;
    cpu_attention_forward(out, att, qkv, B, T, C, NH);
    ASSERT_NEAR(B * 2.75, cpu_attention_distance(att, B, T, NH), 1e-5);
    /* sharp attention on the diagonal gives 0: with T = head size 4, q_t = k_t = 40·e_t in every head */
    int T2 = 4, hs = C / NH;
    memset(qkv, 0, (size_t)B * T * 3 * C * 4);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T2; t++)
            for (int h = 0; h < NH; h++) {
                float *row = qkv + ((size_t)b * T2 + t) * 3 * C;
                row[h * hs + t] = 40;                       /* Q */
                row[C + h * hs + t] = 40;                   /* K */
            }
    cpu_attention_forward(out, att, qkv, B, T2, C, NH);
    ASSERT_NEAR(0, cpu_attention_distance(att, B, T2, NH), 1e-3);
    free(qkv); free(out); free(att);
}

TEST(same_inputs_give_identical_bits) {
    int h[4] = {1, 2, 4, 4};
    struct model_config c = cfg_with(h);
    size_t n = model_num_params(&c);
    float *r[2];
    int in[32], tg[32];
    batch(in, tg, 32);
    for (int k = 0; k < 2; k++) {
        model *m = make(&c, 8);
        struct adamw_params hp = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1};
        for (int s = 0; s < 3; s++) {
            float l, gn;
            model_cpu_ops.zero_grad(m);
            model_cpu_ops.forward_backward(m, in, tg, 2, 16, 1.0f, &l);
            model_cpu_ops.update(m, &hp, s + 1, &gn);
        }
        r[k] = malloc(n * 4);
        model_cpu_ops.get_params(m, r[k]);
        model_cpu_ops.free(m);
    }
    ASSERT_EQ_INT(0, memcmp(r[0], r[1], n * 4));
    free(r[0]); free(r[1]);
}

TEST(attention_matches_a_naive_loop_across_blocks) {
    /* the kernel works in 64-row blocks; a plain triple loop at T=150 (three blocks, the last partial) and
     * head sizes 96, 48, 24, 8 is the independent reference for the forward */
    int B = 2, T = 150, C = 96, nhs[4] = {1, 2, 4, 12};
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    float *qkv = malloc(nq * 4), *out = malloc(no * 4), *att = malloc((size_t)B * 12 * T * T * 4);
    double *ref = malloc(no * 8), *w = malloc((size_t)T * 8);
    uint32_t s = 7;
    for (size_t i = 0; i < nq; i++) { s = s * 1664525u + 1013904223u; qkv[i] = ((s >> 8) / 16777216.0f - 0.5f) * 2; }
    for (int ni = 0; ni < 4; ni++) {
        int NH = nhs[ni], hs = C / NH;
        cpu_attention_forward(out, att, qkv, B, T, C, NH);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < T; t++) {
                    const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                    double mx = -1e300, sum = 0;
                    for (int u = 0; u <= t; u++) {
                        const float *k = qkv + ((size_t)b * T + u) * 3 * C + C + h * hs;
                        double d = 0;
                        for (int i = 0; i < hs; i++) d += (double)q[i] * k[i];
                        w[u] = d / sqrt((double)hs);
                        if (w[u] > mx) mx = w[u];
                    }
                    for (int u = 0; u <= t; u++) { w[u] = exp(w[u] - mx); sum += w[u]; }
                    for (int i = 0; i < hs; i++) {
                        double acc = 0;
                        for (int u = 0; u <= t; u++) acc += w[u] / sum * qkv[((size_t)b * T + u) * 3 * C + 2 * C + h * hs + i];
                        ref[((size_t)b * T + t) * C + h * hs + i] = acc;
                    }
                    /* the saved probabilities: row sums to 1, zero above the diagonal */
                    const float *ar = att + (((size_t)b * NH + h) * T + t) * T;
                    double rs = 0;
                    for (int u = 0; u < T; u++) { if (u > t && ar[u] != 0) HFAIL("att[%d][%d] above the diagonal is %g", t, u, ar[u]); rs += ar[u]; }
                    ASSERT_NEAR(1.0, rs, 1e-5);
                }
        double worst = 0;
        for (size_t i = 0; i < no; i++) { double d = fabs(out[i] - ref[i]); if (d > worst) worst = d; }
        printf("NH=%d (head size %d): max |kernel - naive| %.3g\n", NH, hs, worst);
        ASSERT_TRUE(worst < 2e-6);
    }
    free(qkv); free(out); free(att); free(ref); free(w);
}
