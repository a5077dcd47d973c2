/* test_gradcheck.c — finite-difference check of every gradient of the whole model, per-layer heads.
 * timeout: 240
 *
 * The CPU kernels and model are compiled a second time into this test with a double element type
 * (PRISM_REAL_DOUBLE, names suffixed _f64). On a tiny GPT-2 with a non-uniform schedule (heads 1,2,4,4 at
 * C=32, L=4, V=13 padded to 16, maxT=8, B=2, T=6) every element of every one of the 16 parameter tensors
 * gets a central difference (h = 1e-5) compared with backprop:
 *     |g_bp − g_fd| <= 1e-9 + 1e-7·|g_fd|        (measured worst case is printed)
 * Parameters are drawn N(0, 0.3) (LayerNorm weights around 1) so every path carries real gradient.
 */
#define PRISM_REAL_DOUBLE 1
#include "harness.h"
#include <omp.h>
#include "cpu_kernels.c"
#include "gpt2.c"

static const char *tensor_names[MODEL_NUM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

#define GRADCHECK_SEED 42
#include "gradcheck_lib.h"

static void setup(struct gpt2 *g, const int *heads, int *in, int *tg) {
    struct model_config cfg = {.L = 4, .C = 32, .V = 13, .Vp = 16, .maxT = 8, .B = 2, .T = 6};
    memcpy(cfg.heads, heads, 4 * sizeof(int));
    ASSERT_EQ_INT(0, gpt2_init_f64(g, &cfg));
    size_t off = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        for (size_t k = 0; k < g->param_sizes[i]; k++)
            g->params_mem[off + k] = (i == 2 || i == 8 || i == 14 ? 1.0 : 0.0) + 0.3 * nrand();
        off += g->param_sizes[i];
    }
    for (int i = 0; i < 12; i++) { in[i] = (int)(urand() * 13); tg[i] = (int)(urand() * 13); }
}

TEST(every_tensor_matches_finite_differences) {
    omp_set_num_threads(1);
    int heads[4] = {1, 2, 4, 4}, in[12], tg[12];
    struct gpt2 g;
    setup(&g, heads, in, tg);
    int B = 2, T = 6;
    gpt2_zero_grad_f64(&g);
    gpt2_forward_f64(&g, in, tg, B, T, 1.0 / (B * T), NULL);
    gpt2_backward_f64(&g);
    double h = 1e-5;
    size_t off = 0, checked = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        double worst = 0, gnorm = 0;
        for (size_t k = 0; k < g.param_sizes[i]; k++) {
            double *p = &g.params_mem[off + k], save = *p;
            *p = save + h;
            double lp = gpt2_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save - h;
            double lm = gpt2_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save;
            double fd = (lp - lm) / (2 * h), bp = g.grads_mem[off + k];
            double excess = fabs(bp - fd) / (1e-9 + 1e-7 * fabs(fd));
            if (excess > worst) worst = excess;
            gnorm += bp * bp;
            if (excess > 1.0)
                HFAIL("%s[%zu]: backprop %.12g vs finite difference %.12g (|diff| %.3g > 1e-9 + 1e-7·|fd|)",
                      tensor_names[i], k, bp, fd, fabs(bp - fd));
            checked++;
        }
        printf("%-9s %6zu elements  |grad| %.4g  worst |diff|/tol %.3g\n", tensor_names[i], g.param_sizes[i],
               sqrt(gnorm), worst);
        /* a vacuous pass is impossible: every tensor carries gradient */
        ASSERT_TRUE(gnorm > 1e-12);
        off += g.param_sizes[i];
    }
    ASSERT_EQ_INT(g.num_params, checked);
    gpt2_release_f64(&g);
}

TEST(padded_vocab_rows_and_unused_positions_get_zero_gradient) {
    int heads[4] = {1, 2, 4, 4}, in[12], tg[12];
    struct gpt2 g;
    setup(&g, heads, in, tg);
    gpt2_zero_grad_f64(&g);
    gpt2_forward_f64(&g, in, tg, 2, 6, 1.0 / 12, NULL);
    gpt2_backward_f64(&g);
    for (int r = 13; r < 16; r++)
        for (int c = 0; c < 32; c++) ASSERT_TRUE(g.grads.wte[r * 32 + c] == 0.0);
    for (int t = 6; t < 8; t++)
        for (int c = 0; c < 32; c++) ASSERT_TRUE(g.grads.wpe[t * 32 + c] == 0.0);
    gpt2_release_f64(&g);
}

TEST(attention_kernel_matches_finite_differences_at_each_head_count) {
    /* kernel-level check of attention alone, for every head count dividing C=24, and at T=150 (three
     * 64-row blocks, the last partial) for two of them */
    int C = 24;
    int nhs[] = {1, 2, 3, 4, 6, 8, 12, 24, 2, 8}, Ts[] = {5, 5, 5, 5, 5, 5, 5, 5, 150, 150};
    for (size_t ni = 0; ni < sizeof nhs / sizeof nhs[0]; ni++) {
        int NH = nhs[ni], T = Ts[ni], B = T > 64 ? 1 : 2;
        size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
        double *qkv = malloc(nq * 8), *dqkv = calloc(nq, 8), *out = malloc(no * 8), *w = malloc(no * 8);
        double *att = malloc(na * 8), *datt = malloc(na * 8);
        for (size_t i = 0; i < nq; i++) qkv[i] = nrand();
        for (size_t i = 0; i < no; i++) w[i] = nrand();
        /* loss = Σ w·out */
        cpu_attention_forward_f64(out, att, qkv, B, T, C, NH);
        cpu_attention_backward_f64(dqkv, datt, w, qkv, att, B, T, C, NH);
        size_t stride = T > 64 ? 31 : 1;                 /* T=150: every 31st input (349 of them) */
        for (size_t i = 0; i < nq; i += stride) {
            double save = qkv[i], lp = 0, lm = 0;
            qkv[i] = save + 1e-5; cpu_attention_forward_f64(out, att, qkv, B, T, C, NH);
            for (size_t k = 0; k < no; k++) lp += w[k] * out[k];
            qkv[i] = save - 1e-5; cpu_attention_forward_f64(out, att, qkv, B, T, C, NH);
            for (size_t k = 0; k < no; k++) lm += w[k] * out[k];
            qkv[i] = save;
            double fd = (lp - lm) / 2e-5;
            if (fabs(fd - dqkv[i]) > 1e-8 + 1e-6 * fabs(fd))   /* inputs N(0,1): larger curvature */
                HFAIL("NH=%d dqkv[%zu]: backprop %.12g vs fd %.12g", NH, i, dqkv[i], fd);
        }
        free(qkv); free(dqkv); free(out); free(w); free(att); free(datt);
    }
}

TEST(float_backend_matches_the_double_reference) {
    /* the product's float32 model (model_cpu_ops) against this file's double build, same weights */
    int heads[4] = {1, 2, 4, 4}, in[12], tg[12];
    struct gpt2 g;
    setup(&g, heads, in, tg);
    for (size_t i = 0; i < g.num_params; i++) g.params_mem[i] = (float)(g.params_mem[i] * 0.3);   /* float-exact */
    gpt2_zero_grad_f64(&g);
    double ld = gpt2_forward_f64(&g, in, tg, 2, 6, 1.0 / 12, NULL);
    gpt2_backward_f64(&g);
    gradcheck_float_backend(&g.cfg, g.params_mem, g.grads_mem, g.num_params, in, tg, ld, MODEL_NUM_TENSORS, g.param_sizes,
                            tensor_names);
    gpt2_release_f64(&g);
}
