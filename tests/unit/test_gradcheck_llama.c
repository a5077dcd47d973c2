/* test_gradcheck_llama.c — finite-difference check of every gradient of the Llama-style model, and of each
 * of its new kernels (RMSNorm, RoPE, SwiGLU, embedding) alone.
 * timeout: 240
 *
 * The CPU kernels and llama.c are compiled a second time into this test with a double element type
 * (PRISM_REAL_DOUBLE, names suffixed _f64). On a tiny model with a non-uniform schedule (heads 1,2,4,4 at
 * C=32 so head sizes 32,16,8,8; L=4, H=40, V=13 padded to 16, maxT=8, B=2, T=6, θ=100 so every rotation
 * angle matters) every element of every one of the 9 tensors gets a fourth-order central difference
 * (h = 1e-4, (8·(f(h)−f(−h)) − (f(2h)−f(−2h)))/12h: SwiGLU's curvature makes the plain h² one too coarse):
 *     |g_bp − g_fd| <= 1e-9 + 1e-7·|g_fd|        (the worst case is printed)
 * Kernel checks use inputs N(0,1) and the same rule at 1e-8 + 1e-6·|fd|; among them the CPU twin of the fused
 * attention with RoPE inside (flash_attention.c, cpu_flash_attention_*_rope) at head sizes 6 and 4.
 */
#define PRISM_REAL_DOUBLE 1
#include "harness.h"
#include <omp.h>
#include "cpu_kernels.c"
#include "llama_kernels.c"
#include "llama.c"
#include "flash_attention.c"

static const char *tensor_names[MODEL_LLAMA_NUM_TENSORS] = {
    "wte", "attnormw", "qkvw", "attprojw", "mlpnormw", "fcw", "fcgw", "fcprojw", "normfw"};

#define GRADCHECK_SEED 4242
#include "gradcheck_lib.h"

static void setup(struct llama *g, int *in, int *tg) {
    struct model_config cfg = {.L = 4, .C = 32, .V = 13, .Vp = 16, .maxT = 8, .B = 2, .T = 6,
                               .arch = MODEL_ARCH_LLAMA, .H = 40, .rope_theta = 100.0f};
    int heads[4] = {1, 2, 4, 4};
    memcpy(cfg.heads, heads, sizeof heads);
    ASSERT_EQ_INT(0, llama_init_f64(g, &cfg));
    size_t off = 0;
    for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
        for (size_t k = 0; k < g->param_sizes[i]; k++)
            g->params_mem[off + k] = (i == 1 || i == 4 || i == 8 ? 1.0 : 0.0) + 0.3 * nrand();
        off += g->param_sizes[i];
    }
    for (int i = 0; i < 12; i++) { in[i] = (int)(urand() * 13); tg[i] = (int)(urand() * 13); }
}

TEST(every_tensor_matches_finite_differences) {
    omp_set_num_threads(1);
    int in[12], tg[12], B = 2, T = 6;
    struct llama g;
    setup(&g, in, tg);
    llama_zero_grad_f64(&g);
    llama_forward_f64(&g, in, tg, B, T, 1.0 / (B * T), NULL);
    llama_backward_f64(&g);
    double h = 1e-4;
    size_t off = 0, checked = 0;
    for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
        double worst = 0, gnorm = 0;
        for (size_t k = 0; k < g.param_sizes[i]; k++) {
            double *p = &g.params_mem[off + k], save = *p;
            *p = save + h;
            double lp = llama_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save - h;
            double lm = llama_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save + 2 * h;
            double lp2 = llama_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save - 2 * h;
            double lm2 = llama_forward_f64(&g, in, tg, B, T, 0, NULL);
            *p = save;
            double fd = (8 * (lp - lm) - (lp2 - lm2)) / (12 * h), bp = g.grads_mem[off + k];
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
        ASSERT_TRUE(gnorm > 1e-12);
        off += g.param_sizes[i];
    }
    ASSERT_EQ_INT(g.num_params, checked);
    llama_release_f64(&g);
}

/* Checks dx of loss = Σ w·f(x) for one kernel, by central differences on every input. */
typedef void (*fwd_fn)(double *out, double *x, void *ctx);
static void fd_check(const char *name, fwd_fn f, void *ctx, double *x, size_t nx, size_t nout, const double *dx) {
    double *out = malloc(nout * 8), *w = malloc(nout * 8);
    uint64_t save_rng = rng_state;
    rng_state = 99;
    for (size_t i = 0; i < nout; i++) w[i] = nrand();
    rng_state = save_rng;
    double worst = 0;
    for (size_t i = 0; i < nx; i++) {
        double s = x[i], lp = 0, lm = 0;
        x[i] = s + 1e-5; f(out, x, ctx); for (size_t k = 0; k < nout; k++) lp += w[k] * out[k];
        x[i] = s - 1e-5; f(out, x, ctx); for (size_t k = 0; k < nout; k++) lm += w[k] * out[k];
        x[i] = s;
        double fd = (lp - lm) / 2e-5, e = fabs(fd - dx[i]) / (1e-8 + 1e-6 * fabs(fd));
        if (e > worst) worst = e;
        if (e > 1) HFAIL("%s d[%zu]: backprop %.12g vs fd %.12g", name, i, dx[i], fd);
    }
    printf("%-10s %5zu inputs  worst |diff|/tol %.3g\n", name, nx, worst);
    free(out); free(w);
}
static double *weights_for(size_t n) {   /* the w of fd_check */
    double *w = malloc(n * 8);
    uint64_t save_rng = rng_state;
    rng_state = 99;
    for (size_t i = 0; i < n; i++) w[i] = nrand();
    rng_state = save_rng;
    return w;
}

struct rms_ctx { double *w, *rstd; int B, T, C; };
static void rms_f(double *out, double *x, void *c) {
    struct rms_ctx *r = c; cpu_rmsnorm_forward_f64(out, r->rstd, x, r->w, r->B, r->T, r->C);
}
static void rmsw_f(double *out, double *w, void *c) {
    struct rms_ctx *r = c; cpu_rmsnorm_forward_f64(out, r->rstd, r->w /* holds x here */, w, r->B, r->T, r->C);
}

TEST(rmsnorm_kernel_matches_finite_differences) {
    int B = 2, T = 3, C = 24;
    size_t n = (size_t)B * T * C;
    double *x = malloc(n * 8), *w = malloc(C * 8), *rstd = malloc(B * T * 8), *out = malloc(n * 8);
    double *dx = calloc(n, 8), *dw = calloc(C, 8);
    for (size_t i = 0; i < n; i++) x[i] = nrand();
    for (int c = 0; c < C; c++) w[c] = 1 + 0.5 * nrand();
    double *dy = weights_for(n);
    cpu_rmsnorm_forward_f64(out, rstd, x, w, B, T, C);
    cpu_rmsnorm_backward_f64(dx, dw, dy, x, w, rstd, B, T, C);
    struct rms_ctx r = {w, rstd, B, T, C};
    fd_check("rmsnorm dx", rms_f, &r, x, n, n, dx);
    struct rms_ctx r2 = {x, rstd, B, T, C};
    fd_check("rmsnorm dw", rmsw_f, &r2, w, C, n, dw);
    free(x); free(w); free(rstd); free(out); free(dx); free(dw); free(dy);
}

struct rope_ctx { int B, T, C, NH; double theta; size_t n; };
static void rope_f(double *out, double *x, void *c) {
    struct rope_ctx *r = c;
    memcpy(out, x, r->n * 8);
    cpu_rope_forward_f64(out, r->B, r->T, r->C, r->NH, r->theta);
}

TEST(rope_kernel_matches_finite_differences_at_each_even_head_size) {
    int C = 24, nhs[] = {1, 2, 3, 4, 6, 12};
    for (size_t k = 0; k < sizeof nhs / sizeof nhs[0]; k++) {
        struct rope_ctx r = {2, 5, C, nhs[k], 10000.0, (size_t)2 * 5 * 3 * C};
        double *x = malloc(r.n * 8), *dx = weights_for(r.n);   /* dx starts as dy: rope's backward is in place */
        for (size_t i = 0; i < r.n; i++) x[i] = nrand();
        cpu_rope_backward_f64(dx, r.B, r.T, r.C, r.NH, r.theta);
        char name[32];
        snprintf(name, sizeof name, "rope NH=%d", nhs[k]);
        fd_check(name, rope_f, &r, x, r.n, r.n, dx);
        /* V is untouched and position 0 is the identity */
        double *y = malloc(r.n * 8);
        rope_f(y, x, &r);
        for (int c = 0; c < 3 * C; c++) ASSERT_NEAR(x[c], y[c], 0);
        for (size_t bt = 0; bt < 10; bt++)
            for (int c = 2 * C; c < 3 * C; c++) ASSERT_NEAR(x[bt * 3 * C + c], y[bt * 3 * C + c], 0);
        free(x); free(dx); free(y);
    }
}

/* The twin of the fused attention with RoPE inside: out as a function of the un-rotated qkv, its backward's dqkv
 * (from dout = w, the forward's out and lse) against finite differences. */
struct farope_ctx { int B, T, C, NH; double theta; double *lse; };
static void farope_f(double *out, double *x, void *c) {
    struct farope_ctx *r = c;
    cpu_flash_attention_forward_rope_f64(out, r->lse, x, r->B, r->T, r->C, r->NH, r->theta);
}
TEST(flash_attention_rope_twin_matches_finite_differences) {
    int nhs[] = {2, 3};   /* C = 12: head sizes 6 and 4 */
    for (size_t k = 0; k < sizeof nhs / sizeof nhs[0]; k++) {
        struct farope_ctx r = {2, 5, 12, nhs[k], 100.0, NULL};
        size_t n3 = (size_t)r.B * r.T * 3 * r.C, n = (size_t)r.B * r.T * r.C;
        double *x = malloc(n3 * 8), *out = malloc(n * 8), *dx = calloc(n3, 8), *dy = weights_for(n);
        r.lse = malloc((size_t)r.B * r.NH * r.T * 8);
        for (size_t i = 0; i < n3; i++) x[i] = nrand();
        farope_f(out, x, &r);
        cpu_flash_attention_backward_rope_f64(dx, dy, x, out, r.lse, r.B, r.T, r.C, r.NH, r.theta);
        char name[40];
        snprintf(name, sizeof name, "fa+rope NH=%d", nhs[k]);
        fd_check(name, farope_f, &r, x, n3, n, dx);
        free(x); free(out); free(dx); free(dy); free(r.lse);
    }
}

TEST(rope_rotates_the_rotate_half_pairs_by_the_stated_angle) {
    /* one head of size 4 at position 3, θ = 10000: pair (0,2) turns by 3 rad, pair (1,3) by 3·10000^(−1/2) */
    int C = 4, T = 4;
    double qkv[4 * 12] = {0};
    for (int t = 0; t < T; t++) for (int c = 0; c < 12; c++) qkv[t * 12 + c] = c + 1;
    cpu_rope_forward_f64(qkv, 1, T, C, 1, 10000.0);
    double *r = qkv + 3 * 12, a0 = 3.0, a1 = 3.0 * pow(10000.0, -0.5);
    ASSERT_NEAR(1 * cos(a0) - 3 * sin(a0), r[0], 1e-12);
    ASSERT_NEAR(1 * sin(a0) + 3 * cos(a0), r[2], 1e-12);
    ASSERT_NEAR(2 * cos(a1) - 4 * sin(a1), r[1], 1e-12);
    ASSERT_NEAR(6 * sin(a1) + 8 * cos(a1), r[7], 1e-12);   /* K's pair (1,3): 6, 8 */
    ASSERT_NEAR(9, r[8], 0);                               /* V unchanged */
}

struct sw_ctx { double *other; size_t n; int which; };
static void sw_f(double *out, double *x, void *c) {
    struct sw_ctx *s = c;
    if (s->which == 0) cpu_swiglu_forward_f64(out, x, s->other, s->n);
    else cpu_swiglu_forward_f64(out, s->other, x, s->n);
}

TEST(swiglu_kernel_matches_finite_differences) {
    size_t n = 200;
    double *up = malloc(n * 8), *gate = malloc(n * 8), *du = calloc(n, 8), *dg = calloc(n, 8);
    for (size_t i = 0; i < n; i++) { up[i] = nrand(); gate[i] = 3 * nrand(); }
    double *dy = weights_for(n);
    cpu_swiglu_backward_f64(du, dg, dy, up, gate, n);
    struct sw_ctx a = {gate, n, 0}, b = {up, n, 1};
    fd_check("swiglu dup", sw_f, &a, up, n, n, du);
    fd_check("swiglu dgate", sw_f, &b, gate, n, n, dg);
    free(up); free(gate); free(du); free(dg); free(dy);
}

TEST(float_backend_matches_the_double_reference) {
    int in[12], tg[12];
    struct llama g;
    setup(&g, in, tg);
    for (size_t i = 0; i < g.num_params; i++) g.params_mem[i] = (float)(g.params_mem[i] * 0.3);   /* float-exact */
    llama_zero_grad_f64(&g);
    double ld = llama_forward_f64(&g, in, tg, 2, 6, 1.0 / 12, NULL);
    llama_backward_f64(&g);
    gradcheck_float_backend(&g.cfg, g.params_mem, g.grads_mem, g.num_params, in, tg, ld, MODEL_LLAMA_NUM_TENSORS, g.param_sizes,
                            tensor_names);
    llama_release_f64(&g);
}

TEST(odd_head_size_and_non_dividing_heads_are_refused) {
    struct model_config cfg = {.L = 1, .C = 30, .V = 13, .Vp = 16, .maxT = 8, .B = 1, .T = 4, .arch = MODEL_ARCH_LLAMA};
    struct llama g;
    cfg.heads[0] = 2;                      /* head size 15: odd */
    ASSERT_EQ_INT(MODEL_EINVAL, llama_init_f64(&g, &cfg));
    cfg.heads[0] = 4;                      /* does not divide 30 */
    ASSERT_EQ_INT(MODEL_EINVAL, llama_init_f64(&g, &cfg));
    cfg.heads[0] = 3;                      /* head size 10: fine; H defaults to 8·30/3 = 80 → 128 */
    ASSERT_EQ_INT(0, llama_init_f64(&g, &cfg));
    ASSERT_EQ_INT(128, g.cfg.H);
    llama_release_f64(&g);
}
