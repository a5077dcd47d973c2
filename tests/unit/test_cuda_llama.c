/* tests/unit/test_cuda_llama.c — the Llama-style model's CUDA kernels (kernels/cuda/llama.cu) against their CPU
 * twins (kernels/llama_kernels.h).   timeout: 300
 *
 * Same method and helpers as test_cuda_kernels.c (tests/cuda_test_lib.h): random inputs rounded to the build's
 * element type, outputs poisoned with NaN, += outputs prefilled identically on both sides, error
 * rel = max|gpu − cpu| / max|cpu|. Tolerances: fp32 1e-5 (5e-5 for RoPE, whose angles the GPU takes in double
 * and rounds to float); bf16 1e-2 (2e-2 for RoPE and SwiGLU backward, two bf16 roundings in a row).
 * The whole CUDA Llama model (model_cuda_llama_ops, picked by model_ops_for_arch) against the CPU engine, heads
 * 1,4,8 at C=128 (head sizes 128, 32, 16), every layer's attention fused (flash_attention.cu calls counted): loss relative 1e-5 (fp32) / 1e-2 (bf16); each of the 9 gradient
 * tensors relative L2 error <= 1e-4 / 5e-2; attention distance per layer; 10 AdamW steps within 2e-3 / 5e-2
 * relative of the CPU's losses, and the loss falls by >= 10%.
 * RoPE fused into the flash attention kernels (prism_cuda_flash_attention_forward_rope/_backward_rope) against
 * their CPU twin (cpu_flash_attention_*_rope) and against the unfused GPU path (the separate rope kernel, then flash
 * attention without RoPE, then the rope kernel's backward on dqkv), head sizes 16..128 including padded ones (24,
 * 48, 80), 1-4 heads. Vs the twin: out, dq, dk, dv 5e-5 (fp32) / 2e-2 (bf16), lse 1e-5 / 2e-3 (the kernel rounds
 * rope(q), rope(k) to bf16 as the separate rope kernel stores them; the twin keeps them in float). Vs unfused:
 * out, dv 1e-5 / 1e-2, lse 1e-5 / 1e-4, dq, dk 5e-5 / 2e-2 (one more rounding on the unfused side). The qkv
 * buffer is left un-rotated (bit-equal). The model's counters (prism_cuda_flash_attention_rope_calls, prism_cuda_rope_calls)
 * show training takes the fused path and the separate rope kernel runs only for eval's D_l and a materialised layer.
 * Run in make check on the CUDA emulator in both precisions (test_cuda_llama.emu-bf16, .emu-fp32); on a machine
 * with neither a device nor the emulator every case but the last skips.
 */
#include "harness.h"
#include "model.h"
#include "cpu_kernels.h"
#include "llama_kernels.h"
#include "flash_attention.h"
#include <stdint.h>
#ifdef PRISM_HAVE_CUDA
#include "cuda/cuda_kernels.h"
#include "cuda/llama_kernels_cuda.h"
#endif

#ifdef PRISM_HAVE_CUDA
#include "cuda_test_lib.h"

/* ---- kernels ------------------------------------------------------------------------------------ */
TEST(embedding_forward_backward) {
    need_device();
    int B = 3, T = 40, C = 64, V = 37;
    size_t BTC = (size_t)B * T * C;
    int *inp = irand((size_t)B * T, V);
    float *wte = hrand((size_t)V * C, 1), *dout = hrand(BTC, 1), *out_c = hzero(BTC);
    cpu_embedding_forward(out_c, inp, wte, B, T, C);
    void *out = dpoison_x(BTC);
    int *d_inp = di(inp, (size_t)B * T);
    CK(prism_cuda_embedding_forward(out, d_inp, dx(wte, (size_t)V * C), B, T, C));
    close_to("embedding out", get_x(out, BTC), out_c, BTC, 0);
    float *dwte_c = hrand((size_t)V * C, 1), *dwte = df(dwte_c, (size_t)V * C);
    cpu_embedding_backward(dwte_c, dout, inp, B, T, C);
    CK(prism_cuda_encoder_backward(dwte, NULL, dx(dout, BTC), d_inp, B, T, C));
    close_to("embedding dwte (+=)", get_f(dwte, (size_t)V * C), dwte_c, (size_t)V * C, 1e-5);
}

static void rmsnorm_case(int B, int T, int C) {
    size_t N = (size_t)B * T, n = N * C;
    printf("rmsnorm B=%d T=%d C=%d\n", B, T, C);
    float *inp = hrand(n, 2), *w = hrand(C, 1), *dout = hrand(n, 1);
    float *out_c = hzero(n), *rstd_c = hzero(N);
    cpu_rmsnorm_forward(out_c, rstd_c, inp, w, B, T, C);
    void *out = dpoison_x(n), *d_inp = dx(inp, n), *d_w = dx(w, C);
    float *rstd = dpoison_f(N);
    CK(prism_cuda_rmsnorm_forward(out, rstd, d_inp, d_w, (int)N, C));
    close_to("rmsnorm out", get_x(out, n), out_c, n, tol(1e-5, 1e-2));
    close_to("rmsnorm rstd", get_f(rstd, N), rstd_c, N, 1e-5);
    float *dinp_c = hrand(n, 1), *dw_c = hrand(C, 1);
    void *dinp = dx(dinp_c, n);
    float *dw = df(dw_c, C);
    cpu_rmsnorm_backward(dinp_c, dw_c, dout, inp, w, rstd_c, B, T, C);
    CK(prism_cuda_rmsnorm_backward(dinp, dw, dx(dout, n), d_inp, d_w, rstd, (int)N, C));
    close_to("rmsnorm dinp (+=)", get_x(dinp, n), dinp_c, n, tol(1e-5, 1e-2));
    close_to("rmsnorm dweight (+=)", get_f(dw, C), dw_c, C, tol(1e-5, 1e-2));
}
TEST(rmsnorm_forward_backward) {
    need_device();
    rmsnorm_case(2, 33, 96);
    rmsnorm_case(2, 64, 768);
    rmsnorm_case(1, 5, 1536);
}

TEST(fused_residual_rmsnorm) {
    need_device();
    int B = 2, T = 30, C = 256;
    size_t N = (size_t)B * T, n = N * C;
    float *a = hrand(n, 1), *bb = hrand(n, 1), *w = hrand(C, 1);
    float *res_c = hzero(n), *out_c = hzero(n), *rstd_c = hzero(N);
    cpu_residual_forward(res_c, a, bb, n);
    prism_cuda_round_host(res_c, n);
    cpu_rmsnorm_forward(out_c, rstd_c, res_c, w, B, T, C);
    void *res = dpoison_x(n), *out = dpoison_x(n);
    float *rstd = dpoison_f(N);
    CK(prism_cuda_residual_rmsnorm_forward(res, out, rstd, dx(a, n), dx(bb, n), dx(w, C), (int)N, C));
    close_to("fused residual", get_x(res, n), res_c, n, 0);
    close_to("fused rmsnorm out", get_x(out, n), out_c, n, tol(1e-5, 1e-2));
    close_to("fused rmsnorm rstd", get_f(rstd, N), rstd_c, N, 1e-5);
}

static void rope_case(int B, int T, int C, int NH, double theta) {
    size_t n = (size_t)B * T * 3 * C;
    printf("rope B=%d T=%d C=%d NH=%d (head size %d) theta=%g\n", B, T, C, NH, C / NH, theta);
    float *qkv = hrand(n, 1), *c = hcopy(qkv, n);
    cpu_rope_forward(c, B, T, C, NH, theta);
    void *d = dx(qkv, n);
    CK(prism_cuda_rope_forward(d, B, T, C, NH, theta));
    close_to("rope forward", get_x(d, n), c, n, tol(5e-5, 2e-2));
    float *g = hrand(n, 1), *gc = hcopy(g, n);
    cpu_rope_backward(gc, B, T, C, NH, theta);
    void *dg = dx(g, n);
    CK(prism_cuda_rope_backward(dg, B, T, C, NH, theta));
    close_to("rope backward", get_x(dg, n), gc, n, tol(5e-5, 2e-2));
}
TEST(rope_forward_backward_at_each_head_size) {
    need_device();
    rope_case(2, 40, 768, 3, 10000);    /* head size 256 */
    rope_case(2, 40, 768, 8, 10000);    /* 96 */
    rope_case(1, 300, 768, 12, 10000);  /* 64, angles up to 299 rad */
    rope_case(2, 17, 64, 16, 500);      /* 4 */
    /* an odd head size is refused, naming the rule */
    void *d = dpoison_x(3 * 60);
    ASSERT_TRUE(prism_cuda_rope_forward(d, 1, 1, 60, 4, 10000) != 0);
    ASSERT_CONTAINS(prism_cuda_last_error(), "even");
}

TEST(swiglu_forward_backward) {
    need_device();
    size_t n = 3 * 1000 + 7;
    float *up = hrand(n, 2), *gate = hrand(n, 4), *dout = hrand(n, 1);
    float *out_c = hzero(n), *du_c = hzero(n), *dg_c = hzero(n);
    cpu_swiglu_forward(out_c, up, gate, n);
    cpu_swiglu_backward(du_c, dg_c, dout, up, gate, n);
    void *d_up = dx(up, n), *d_gate = dx(gate, n), *out = dpoison_x(n), *du = dpoison_x(n), *dg = dpoison_x(n);
    CK(prism_cuda_swiglu_forward(out, d_up, d_gate, n));
    close_to("swiglu out", get_x(out, n), out_c, n, tol(1e-5, 1e-2));
    CK(prism_cuda_swiglu_backward(du, dg, dx(dout, n), d_up, d_gate, n));
    close_to("swiglu dup", get_x(du, n), du_c, n, tol(1e-5, 2e-2));
    close_to("swiglu dgate", get_x(dg, n), dg_c, n, tol(1e-5, 2e-2));
}

/* ---- RoPE inside the fused attention kernels ------------------------------------------------------------- */
static float *third_of(const float *qkv3, int B, int T, int C, int w) {   /* columns [w*C, (w+1)*C) of (B,T,3C) */
    size_t n = (size_t)B * T;
    float *o = hzero(n * C);
    for (size_t r = 0; r < n; r++) memcpy(o + r * C, qkv3 + r * 3 * C + (size_t)w * C, C * sizeof(float));
    return o;
}
static void flash_rope_case(int B, int T, int C, int NH, double theta) {
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, nl = (size_t)B * NH * T;
    printf("flash attention + RoPE B=%d T=%d C=%d NH=%d (head size %d) theta=%g\n", B, T, C, NH, C / NH, theta);
    float *qkv = hrand(n3, 1.5f), *dout = hrand(n, 1);
    /* the CPU twin; the backward runs from its out (rounded to floatX) and lse, so it is checked apart */
    float *out_c = hzero(n), *lse_c = hzero(nl), *dqkv_c = hzero(n3), *out_plain = hzero(n), *lse_plain = hzero(nl);
    cpu_flash_attention_forward_rope(out_c, lse_c, qkv, B, T, C, NH, theta);
    cpu_flash_attention_forward(out_plain, lse_plain, qkv, B, T, C, NH);
    double moved = 0, big = 0;
    for (size_t i = 0; i < n; i++) { moved = fmax(moved, fabs(out_c[i] - out_plain[i])); big = fmax(big, fabs(out_c[i])); }
    printf("  RoPE moves out by max %.3e (max|out| %.3e)\n", moved, big);
    if (!(moved > 0.05 * big)) HFAIL("RoPE barely changes the output (%.3e): the case would not test the rotation", moved);
    float *out_r = hcopy(out_c, n);
    prism_cuda_round_host(out_r, n);
    cpu_flash_attention_backward_rope(dqkv_c, dout, qkv, out_r, lse_c, B, T, C, NH, theta);
    void *d_qkv = dx(qkv, n3), *d_dout = dx(dout, n), *d_out_r = dx(out_r, n);
    float *d_lse_c = df(lse_c, nl);
    /* the unfused GPU path: the separate rope kernel on a copy, flash without RoPE, the rope kernel's backward */
    void *rq = dx(qkv, n3), *out_u = dpoison_x(n), *dqkv_u = dpoison_x(n3);
    float *lse_u = dpoison_f(nl), *delta_u = dpoison_f(nl);
    CK(prism_cuda_rope_forward(rq, B, T, C, NH, theta));
    CK(prism_cuda_flash_attention_forward(out_u, lse_u, rq, B, T, C, NH));
    CK(prism_cuda_flash_attention_backward(dqkv_u, delta_u, d_dout, rq, d_out_r, d_lse_c, B, T, C, NH));
    CK(prism_cuda_rope_backward(dqkv_u, B, T, C, NH, theta));
    float *out_ug = get_x(out_u, n), *lse_ug = get_f(lse_u, nl), *dqkv_ug = get_x(dqkv_u, n3);
    /* the fused kernels in the binary's thread order, then one warp at a time (a missing __syncthreads shows) */
    const char *orders[2] = { getenv("CUDAEMU_ORDER"), "warps" };
    for (int o = 0; o < (cudaemu_faults ? 2 : 1); o++) {
        if (o) { setenv("CUDAEMU_ORDER", orders[1], 1); printf(" CUDAEMU_ORDER=warps:\n"); }
        void *out = dpoison_x(n), *dqkv = dpoison_x(n3);
        float *lse = dpoison_f(nl), *delta = dpoison_f(nl);
        int r0 = prism_cuda_flash_attention_rope_calls();
        CK(prism_cuda_flash_attention_forward_rope(out, lse, d_qkv, B, T, C, NH, theta));
        float *out_g = get_x(out, n), *lse_g = get_f(lse, nl);
        close_to("rope out vs twin", out_g, out_c, n, tol(5e-5, 2e-2));
        close_to("rope lse vs twin", lse_g, lse_c, nl, tol(1e-5, 2e-3));   /* bf16: rope(q), rope(k) rounded */
        close_to("rope out vs unfused", out_g, out_ug, n, tol(1e-5, 1e-2));
        close_to("rope lse vs unfused", lse_g, lse_ug, nl, tol(1e-5, 1e-4));
        CK(prism_cuda_flash_attention_backward_rope(dqkv, delta, d_dout, d_qkv, d_out_r, d_lse_c, B, T, C, NH, theta));
        ASSERT_EQ_INT(2, prism_cuda_flash_attention_rope_calls() - r0);
        float *dqkv_g = get_x(dqkv, n3);
        const char *names[3][2] = { { "rope dq vs twin", "rope dq vs unfused" },
                                    { "rope dk vs twin", "rope dk vs unfused" },
                                    { "rope dv vs twin", "rope dv vs unfused" } };
        for (int w = 0; w < 3; w++) {
            float *g = third_of(dqkv_g, B, T, C, w);
            close_to(names[w][0], g, third_of(dqkv_c, B, T, C, w), n, tol(5e-5, 2e-2));
            /* dq, dk: the unfused path rounds them to floatX before rotating them back, the fused one after */
            close_to(names[w][1], g, third_of(dqkv_ug, B, T, C, w), n, w < 2 ? tol(5e-5, 2e-2) : tol(1e-5, 1e-2));
        }
        /* qkv stays as it was given (pre-RoPE): the rotation happens in shared memory only */
        float *after = get_x(d_qkv, n3);
        for (size_t i = 0; i < n3; i++)
            if (after[i] != qkv[i]) HFAIL("qkv[%zu] changed by the fused RoPE kernels: %g, was %g", i, after[i], qkv[i]);
    }
    if (orders[0]) setenv("CUDAEMU_ORDER", orders[0], 1); else unsetenv("CUDAEMU_ORDER");
}
TEST(flash_rope_head_sizes_16_64_128) {
    need_device();
    flash_rope_case(1, 130, 64, 4, 500);      /* 16, four heads */
    flash_rope_case(2, 70, 256, 4, 10000);    /* 64, four heads */
    flash_rope_case(1, 100, 256, 2, 10000);   /* 128 */
}
TEST(flash_rope_head_size_96) { need_device(); flash_rope_case(1, 100, 288, 3, 10000); }
TEST(flash_rope_padded_head_sizes_24_48_80) {
    need_device();
    flash_rope_case(1, 90, 96, 4, 10000);     /* 24 in the 32 kernels */
    flash_rope_case(2, 70, 96, 2, 10000);     /* 48 in the 64 kernels */
    flash_rope_case(1, 77, 240, 3, 10000);    /* 80 in the 96 kernels */
}
TEST(flash_rope_refuses_odd_head_size_and_bad_theta) {
    need_device();
    void *o = dpoison_x(2 * 60), *q = dpoison_x(2 * 180), *g = dpoison_x(2 * 180);
    float *l = dpoison_f(8), *dl = dpoison_f(8);
    ASSERT_TRUE(prism_cuda_flash_attention_forward_rope(o, l, q, 1, 2, 60, 4, 10000) != 0);   /* head size 15 */
    printf("head size 15: %s\n", prism_cuda_last_error());
    ASSERT_CONTAINS(prism_cuda_last_error(), "even head size");
    ASSERT_TRUE(prism_cuda_flash_attention_backward_rope(g, dl, o, q, o, l, 1, 2, 60, 4, 10000) != 0);
    ASSERT_CONTAINS(prism_cuda_last_error(), "even head size");
    ASSERT_TRUE(prism_cuda_flash_attention_forward_rope(o, l, q, 1, 2, 60, 2, -1) != 0);
    printf("theta -1: %s\n", prism_cuda_last_error());
    ASSERT_CONTAINS(prism_cuda_last_error(), "theta");
    ASSERT_TRUE(prism_cuda_flash_attention_forward_rope(o, l, q, 1, 2, 60, 2, NAN) != 0);
    ASSERT_CONTAINS(prism_cuda_last_error(), "theta");
    /* theta 0 is the plain kernel: an odd head size is fine there */
    float *h = hrand(2 * 180, 1);
    CK(prism_cuda_upload_x(q, h, 2 * 180));
    CK(prism_cuda_flash_attention_forward_rope(o, l, q, 1, 2, 60, 4, 0));
}

/* ---- whole model vs the CPU engine --------------------------------------------------------------- */
static const char *ll_names[MODEL_LLAMA_NUM_TENSORS] = { "wte", "attnormw", "qkvw", "attprojw", "mlpnormw", "fcw",
    "fcgw", "fcprojw", "normfw" };

static void llama_config(struct model_config *c) {
    memset(c, 0, sizeof *c);
    c->L = 3; c->C = 128; c->V = 300; c->Vp = 320; c->maxT = 32; c->B = 2; c->T = 32;
    c->arch = MODEL_ARCH_LLAMA; c->H = model_llama_default_ffn(128); c->rope_theta = 10000;
    int h[3] = { 1, 4, 8 };        /* head sizes 128, 32, 16: non-uniform */
    memcpy(c->heads, h, sizeof h);
}
static void ll_pair(const struct model_config *c, model **cpu, model **gpu, const model_ops **gops) {
    char err[512];
    int idx = 0;
    const model_ops *dev = model_ops_for_device("0", &idx, err, sizeof err);
    if (!dev) HFAIL("%s", err);
    *gops = model_ops_for_arch(dev, c->arch);
    if (*gops != &model_cuda_llama_ops) HFAIL("model_ops_for_arch did not pick the CUDA llama table");
    if (model_cpu_ops.create(c, -1, cpu, err, sizeof err)) HFAIL("cpu create: %s", err);
    if ((*gops)->create(c, 0, gpu, err, sizeof err)) HFAIL("cuda create: %s", err);
    size_t np = model_num_params(c);
    float *params = tmalloc(np * sizeof(float));
    model_init_params(c, 4321, params);
    prism_cuda_round_host(params, np);
    if (model_cpu_ops.set_params(*cpu, params)) HFAIL("cpu set_params");
    if ((*gops)->set_params(*gpu, params)) HFAIL("cuda set_params: %s", (*gops)->error(*gpu));
}
static void ll_batch(int *in, int *tg, int n, int step) {
    int x = (step * 13 + 7) % 37;
    for (int i = 0; i <= n; i++) {
        int nx = (frand() > 0.8f) ? (int)((frand() + 1.0f) * 0.5f * 36.999f) : (7 * x + 3) % 37;
        if (i < n) in[i] = x;
        if (i > 0) tg[i - 1] = x;
        x = nx;
    }
}

TEST(llama_model_loss_and_every_gradient_match_cpu) {
    need_device();
    struct model_config c;
    llama_config(&c);
    model *cpu, *gpu;
    const model_ops *g;
    ll_pair(&c, &cpu, &gpu, &g);
    int n = c.B * c.T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    ll_batch(in, tg, n, 0);
    float lc = 0, lg = 0;
    if (model_cpu_ops.zero_grad(cpu) || model_cpu_ops.forward_backward(cpu, in, tg, c.B, c.T, 1.0f, &lc)) HFAIL("cpu fb");
    int fused0 = prism_cuda_flash_attention_calls(), rope0 = prism_cuda_flash_attention_rope_calls();
    int sep0 = prism_cuda_rope_calls();
    if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c.B, c.T, 1.0f, &lg)) HFAIL("cuda fb: %s", g->error(gpu));
    printf("llama heads 1,4,8 (head sizes 128,32,16) C=128 L=3 H=%d: loss cpu %.7f gpu %.7f; fused attention calls %d\n",
           c.H, lc, lg, prism_cuda_flash_attention_calls() - fused0);
    ASSERT_EQ_INT(2 * c.L, prism_cuda_flash_attention_calls() - fused0);   /* every layer, forward and backward */
    ASSERT_EQ_INT(2 * c.L, prism_cuda_flash_attention_rope_calls() - rope0);   /* ... with RoPE inside */
    ASSERT_EQ_INT(0, prism_cuda_rope_calls() - sep0);                        /* never the separate kernel */
    ASSERT_NEAR(lc, lg, lc * tol(1e-5, 1e-2));
    size_t np = model_num_params(&c), sz[MODEL_NUM_TENSORS];
    model_param_sizes(&c, sz);
    float *gc = tmalloc(np * sizeof(float)), *gg = tmalloc(np * sizeof(float));
    if (model_cpu_ops.get_grads(cpu, gc) || g->get_grads(gpu, gg)) HFAIL("get_grads");
    size_t off = 0;
    for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
        double e2 = 0, r2 = 0;
        for (size_t k = 0; k < sz[i]; k++) {
            double a = gg[off + k], b = gc[off + k];
            if (!isfinite(a)) HFAIL("%s grad[%zu] is %g", ll_names[i], k, a);
            e2 += (a - b) * (a - b);
            r2 += b * b;
        }
        double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
        printf("  grad %-9s n=%-8zu |cpu|=%.4e rel L2 err=%.3e\n", ll_names[i], sz[i], sqrt(r2), rel);
        if (!(r2 > 0)) HFAIL("%s: CPU gradient is all zeros", ll_names[i]);
        if (!(rel <= tol(1e-4, 5e-2))) HFAIL("gradient of %s: relative L2 error %.3e > %.0e", ll_names[i], rel, tol(1e-4, 5e-2));
        off += sz[i];
    }
    float le = 0, lce = 0;
    double dg[3] = { 0 }, dc[3] = { 0 };
    if (g->forward_loss(gpu, in, tg, c.B, c.T, &le, dg)) HFAIL("cuda forward_loss: %s", g->error(gpu));
    if (model_cpu_ops.forward_loss(cpu, in, tg, c.B, c.T, &lce, dc)) HFAIL("cpu forward_loss");
    ASSERT_NEAR(lg, le, 1e-6 * lg);
    for (int l = 0; l < 3; l++) {
        printf("  attention distance layer %d: cpu %.4f gpu %.4f\n", l + 1, dc[l], dg[l]);
        ASSERT_NEAR(dc[l], dg[l], dc[l] * tol(1e-4, 2e-2) + 1e-4);
    }
    model_cpu_ops.free(cpu);
    g->free(gpu);
}

/* One forward+backward on both engines from the same parameters: the loss, every gradient tensor (relative L2
 * error), the calls the CUDA model made (fused with RoPE inside, and of the separate rope kernel), then eval's
 * attention distance per layer and the calls that made. */
static void ll_check_step(const struct model_config *c, int fused_layers, int mat_layers) {
    model *cpu, *gpu;
    const model_ops *g;
    ll_pair(c, &cpu, &gpu, &g);
    int n = c->B * c->T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    ll_batch(in, tg, n, 1);
    float lc = 0, lg = 0;
    if (model_cpu_ops.zero_grad(cpu) || model_cpu_ops.forward_backward(cpu, in, tg, c->B, c->T, 1.0f, &lc)) HFAIL("cpu fb");
    int f0 = prism_cuda_flash_attention_calls(), r0 = prism_cuda_flash_attention_rope_calls(), s0 = prism_cuda_rope_calls();
    if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c->B, c->T, 1.0f, &lg)) HFAIL("cuda fb: %s", g->error(gpu));
    int f = prism_cuda_flash_attention_calls() - f0, r = prism_cuda_flash_attention_rope_calls() - r0;
    int sep = prism_cuda_rope_calls() - s0;
    printf("C=%d L=%d heads", c->C, c->L);
    for (int l = 0; l < c->L; l++) printf(" %d (head size %d)", c->heads[l], c->C / c->heads[l]);
    printf(": loss cpu %.7f gpu %.7f; training step: %d fused calls, %d with RoPE inside, %d separate rope calls\n",
           lc, lg, f, r, sep);
    ASSERT_EQ_INT(2 * fused_layers, f);
    ASSERT_EQ_INT(2 * fused_layers, r);
    ASSERT_EQ_INT(2 * mat_layers, sep);   /* forward and backward of each materialised layer only */
    ASSERT_NEAR(lc, lg, lc * tol(1e-5, 1e-2));
    size_t np = model_num_params(c), sz[MODEL_NUM_TENSORS];
    model_param_sizes(c, sz);
    float *gc = tmalloc(np * sizeof(float)), *gg = tmalloc(np * sizeof(float));
    if (model_cpu_ops.get_grads(cpu, gc) || g->get_grads(gpu, gg)) HFAIL("get_grads");
    size_t off = 0;
    for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
        double e2 = 0, r2 = 0;
        for (size_t k = 0; k < sz[i]; k++) {
            double a = gg[off + k], b = gc[off + k];
            if (!isfinite(a)) HFAIL("%s grad[%zu] is %g", ll_names[i], k, a);
            e2 += (a - b) * (a - b);
            r2 += b * b;
        }
        double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
        printf("  grad %-9s n=%-8zu |cpu|=%.4e rel L2 err=%.3e\n", ll_names[i], sz[i], sqrt(r2), rel);
        if (!(r2 > 0)) HFAIL("%s: CPU gradient is all zeros", ll_names[i]);
        if (!(rel <= tol(1e-4, 5e-2))) HFAIL("gradient of %s: relative L2 error %.3e > %.0e", ll_names[i], rel, tol(1e-4, 5e-2));
        off += sz[i];
    }
    float le = 0, lce = 0;
    double dg[MODEL_MAX_LAYERS] = { 0 }, dc[MODEL_MAX_LAYERS] = { 0 };
    s0 = prism_cuda_rope_calls();
    if (g->forward_loss(gpu, in, tg, c->B, c->T, &le, dg)) HFAIL("cuda forward_loss: %s", g->error(gpu));
    if (model_cpu_ops.forward_loss(cpu, in, tg, c->B, c->T, &lce, dc)) HFAIL("cpu forward_loss");
    printf("  eval with D_l: %d separate rope calls (one per layer: a rotated copy for attention.cu, or the "
           "materialised layer's own)\n", prism_cuda_rope_calls() - s0);
    ASSERT_EQ_INT(c->L, prism_cuda_rope_calls() - s0);
    ASSERT_NEAR(lg, le, 1e-6 * lg);
    for (int l = 0; l < c->L; l++) {
        printf("  attention distance layer %d: cpu %.4f gpu %.4f\n", l + 1, dc[l], dg[l]);
        ASSERT_NEAR(dc[l], dg[l], dc[l] * tol(1e-4, 2e-2) + 1e-4);
    }
    model_cpu_ops.free(cpu);
    g->free(gpu);
}

/* head sizes 48, 96, 24: two of them run in a larger compiled kernel, zero-padded, and rotate at their own size */
TEST(llama_model_fused_rope_padded_head_sizes_match_cpu) {
    need_device();
    struct model_config c;
    llama_config(&c);
    c.C = 96; c.H = model_llama_default_ffn(96);
    c.heads[0] = 2; c.heads[1] = 1; c.heads[2] = 4;
    ll_check_step(&c, 3, 0);
}

/* a 512-wide head (attention.cu, the separate rope kernel on its qkv) next to a fused layer of head size 64 */
TEST(llama_model_materialised_layer_uses_the_separate_rope_kernel) {
    need_device();
    struct model_config c;
    llama_config(&c);
    c.L = 2; c.C = 512; c.H = model_llama_default_ffn(512); c.T = 16; c.maxT = 16;
    c.heads[0] = 1; c.heads[1] = 8; c.heads[2] = 0;
    ll_check_step(&c, 1, 1);
}

TEST(llama_model_trains_10_steps_like_cpu) {
    need_device();
    struct model_config c;
    llama_config(&c);
    model *cpu, *gpu;
    const model_ops *g;
    ll_pair(&c, &cpu, &gpu, &g);
    int n = c.B * c.T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    struct adamw_params hp = { .lr = 2e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f };
    float first = 0, lc = 0, lg = 0;
    int fused0 = prism_cuda_flash_attention_calls(), graphs0 = prism_cuda_graph_launches();
    for (int s = 0; s < 10; s++) {
        ll_batch(in, tg, n, s);
        float nc = 0, ng = 0;
        if (model_cpu_ops.zero_grad(cpu) || model_cpu_ops.forward_backward(cpu, in, tg, c.B, c.T, 1.0f, &lc) ||
            model_cpu_ops.update(cpu, &hp, s + 1, &nc)) HFAIL("cpu step %d", s);
        if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c.B, c.T, 1.0f, &lg) || g->update(gpu, &hp, s + 1, &ng))
            HFAIL("cuda step %d: %s", s, g->error(gpu));
        if (s == 0) first = lg;
        printf("%4d  cpu %.6f  gpu %.6f  |diff| %.2e  norms %.4f %.4f\n", s, lc, lg, fabsf(lc - lg), nc, ng);
        if (!(fabsf(lc - lg) <= lc * tol(2e-3, 5e-2))) HFAIL("step %d: loss cpu %.6f gpu %.6f", s, lc, lg);
    }
    ASSERT_LT(lg, 0.9f * first);
    /* the step runs as a CUDA graph from the second one on (model_cuda_base.cu): step 1 eager, step 2 captured
     * (counted once as queued) then launched, steps 3..10 launched; the fused calls are counted where queued */
    int launches = prism_cuda_graph_launches() - graphs0;
    printf("graph launches %d, fused attention calls queued %d\n", launches, prism_cuda_flash_attention_calls() - fused0);
    ASSERT_EQ_INT(9, launches);
    ASSERT_EQ_INT(2 * 2 * c.L, prism_cuda_flash_attention_calls() - fused0);
    model_cpu_ops.free(cpu);
    g->free(gpu);
}

/* The update is GPT-2's (mc_update): the norm matches the CPU's, the parameters after one AdamW step match, every
 * gradient is zero after it (the fused AdamW zeroes what it read), and a zero_grad after a backward really clears
 * (the skip of known-zero gradients must not skip that). */
TEST(llama_model_update_is_the_shared_fused_path) {
    need_device();
    struct model_config c;
    llama_config(&c);
    model *cpu, *gpu;
    const model_ops *g;
    ll_pair(&c, &cpu, &gpu, &g);
    int n = c.B * c.T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    size_t np = model_num_params(&c);
    float *pc = tmalloc(np * sizeof(float)), *pg = tmalloc(np * sizeof(float)), *gg = tmalloc(np * sizeof(float));
    struct adamw_params hp = { .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 0.5f };
    float lc = 0, lg = 0, nc = 0, ng = 0;
    ll_batch(in, tg, n, 3);
    if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c.B, c.T, 1.0f, &lg) || g->zero_grad(gpu) ||
        g->get_grads(gpu, gg)) HFAIL("cuda: %s", g->error(gpu));
    size_t nz = 0;
    for (size_t i = 0; i < np; i++) nz += gg[i] != 0.0f;
    printf("nonzero gradients after forward_backward + zero_grad: %zu (want 0)\n", nz);
    ASSERT_EQ_INT(0, (int)nz);
    if (model_cpu_ops.zero_grad(cpu) || model_cpu_ops.forward_backward(cpu, in, tg, c.B, c.T, 1.0f, &lc) ||
        model_cpu_ops.update(cpu, &hp, 1, &nc) || model_cpu_ops.get_params(cpu, pc)) HFAIL("cpu step");
    if (g->forward_backward(gpu, in, tg, c.B, c.T, 1.0f, &lg) || g->update(gpu, &hp, 1, &ng) ||
        g->get_params(gpu, pg) || g->get_grads(gpu, gg)) HFAIL("cuda step: %s", g->error(gpu));
    printf("grad norm cpu %.6f gpu %.6f (clip %.1f)\n", nc, ng, hp.grad_clip);
    ASSERT_TRUE(nc > hp.grad_clip);   /* the clipping factor is in play */
    if (!(fabsf(nc - ng) <= nc * tol(1e-4, 3e-2))) HFAIL("grad norm: cpu %.6f gpu %.6f", nc, ng);
    close_to("params after one update", pg, pc, np, tol(1e-4, 1e-2));
    nz = 0;
    for (size_t i = 0; i < np; i++) nz += gg[i] != 0.0f;
    printf("nonzero gradients after update: %zu (want 0)\n", nz);
    ASSERT_EQ_INT(0, (int)nz);
    model_cpu_ops.free(cpu);
    g->free(gpu);
}

/* The chunked LM head (model_cuda_base.cu, shared with GPT-2): PRISM_CUDA_HEAD_CHUNK=5 (64 rows: 12 chunks and one
 * of 4) against the whole head (=0) on the Llama model: loss within 1e-6 relative, the gradient within rel L2 1e-5
 * (fp32) / 1e-2 (bf16), eval losses per position too. */
TEST(llama_model_head_chunked_matches_unchunked) {
    need_device();
    struct model_config c;
    llama_config(&c);
    size_t np = model_num_params(&c);
    float *params = tmalloc(np * sizeof(float));
    model_init_params(&c, 77, params);
    prism_cuda_round_host(params, np);
    int n = c.B * c.T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    ll_batch(in, tg, n, 5);
    const char *rows[2] = { "0", "5" };
    float loss[2], *grads[2], *pos[2];
    for (int k = 0; k < 2; k++) {
        char err[512];
        model *m = NULL;
        setenv("PRISM_CUDA_HEAD_CHUNK", rows[k], 1);
        int rc = model_cuda_llama_ops.create(&c, 0, &m, err, sizeof err);
        unsetenv("PRISM_CUDA_HEAD_CHUNK");
        if (rc) HFAIL("create: %s", err);
        grads[k] = tmalloc(np * sizeof(float));
        pos[k] = tmalloc(n * sizeof(float));
        if (model_cuda_llama_ops.set_params(m, params) || model_cuda_llama_ops.zero_grad(m) ||
            model_cuda_llama_ops.forward_backward(m, in, tg, c.B, c.T, 1.0f, &loss[k]) ||
            model_cuda_llama_ops.get_grads(m, grads[k]) || model_cuda_llama_ops.forward_losses(m, in, tg, c.B, c.T, pos[k]))
            HFAIL("chunk %s: %s", rows[k], model_cuda_llama_ops.error(m));
        model_cuda_llama_ops.free(m);
        printf("head chunk %s rows: loss %.7f\n", rows[k], loss[k]);
    }
    ASSERT_NEAR(loss[0], loss[1], 1e-6 * loss[0]);
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < np; i++) {
        if (!isfinite(grads[1][i])) HFAIL("gradient %zu is %g", i, grads[1][i]);
        e2 += ((double)grads[1][i] - grads[0][i]) * ((double)grads[1][i] - grads[0][i]);
        r2 += (double)grads[0][i] * grads[0][i];
    }
    printf("gradient chunked vs whole: rel L2 %.3e\n", sqrt(e2 / r2));
    ASSERT_LT(sqrt(e2 / r2), tol(1e-5, 1e-2));
    for (int i = 0; i < n; i++) ASSERT_NEAR(pos[0][i], pos[1][i], 1e-5 * (1 + pos[0][i]));
}

/* zero-shot scoring's per-position losses: the CUDA llama table has forward_losses, and its losses match the
 * CPU engine's position by position, their mean being forward_loss's loss */
TEST(llama_model_forward_losses_match_cpu_per_position) {
    need_device();
    struct model_config c;
    llama_config(&c);
    model *cpu, *gpu;
    const model_ops *g;
    ll_pair(&c, &cpu, &gpu, &g);
    if (!g->forward_losses) HFAIL("model_cuda_llama_ops.forward_losses is NULL");
    int n = c.B * c.T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    ll_batch(in, tg, n, 3);
    float *lc = tmalloc(n * sizeof(float)), *lgp = tmalloc(n * sizeof(float)), mean = 0;
    if (model_cpu_ops.forward_losses(cpu, in, tg, c.B, c.T, lc)) HFAIL("cpu forward_losses");
    if (g->forward_losses(gpu, in, tg, c.B, c.T, lgp)) HFAIL("cuda forward_losses: %s", g->error(gpu));
    if (g->forward_loss(gpu, in, tg, c.B, c.T, &mean, NULL)) HFAIL("cuda forward_loss: %s", g->error(gpu));
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (!(fabsf(lc[i] - lgp[i]) <= lc[i] * tol(1e-5, 2e-2) + tol(1e-6, 1e-2)))
            HFAIL("position %d: loss cpu %.7f gpu %.7f", i, lc[i], lgp[i]);
        sum += lgp[i];
    }
    printf("forward_losses: position 0 cpu %.6f gpu %.6f; mean gpu %.6f forward_loss %.6f\n", lc[0], lgp[0],
           sum / n, mean);
    ASSERT_NEAR(mean, sum / n, 1e-5 * mean);
    model_cpu_ops.free(cpu);
    g->free(gpu);
}

TEST(gpt2_cuda_table_refuses_a_llama_config) {
    need_device();
    struct model_config c;
    llama_config(&c);
    model *m = (model *)0x1;
    char err[512] = "";
    ASSERT_EQ_INT(MODEL_EINVAL, model_cuda_ops.create(&c, 0, &m, err, sizeof err));
    ASSERT_TRUE(m == NULL);
    ASSERT_CONTAINS(err, "model_cuda_llama_ops");
}
#endif /* PRISM_HAVE_CUDA */

/* Runs everywhere: the CPU twins exist and agree with themselves (so the file always has a case that runs). */
TEST(cpu_rope_forward_then_backward_is_the_identity) {
    int B = 2, T = 9, C = 24, NH = 3;
    size_t n = (size_t)B * T * 3 * C;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = y[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    cpu_rope_forward(y, B, T, C, NH, 10000);
    double moved = 0;
    for (size_t i = 0; i < n; i++) moved += fabs(y[i] - x[i]);
    ASSERT_TRUE(moved > 1);
    cpu_rope_backward(y, B, T, C, NH, 10000);
    for (size_t i = 0; i < n; i++) ASSERT_NEAR(x[i], y[i], 1e-5);
    free(x); free(y);
}

/* Runs everywhere: the CPU engine scores a llama model's positions with the llama forward (zero-shot scoring's
 * forward_losses), so the per-position losses average to forward_loss's loss and vary with the position. */
TEST(cpu_llama_forward_losses_average_to_forward_loss) {
    struct model_config c;
    memset(&c, 0, sizeof c);
    c.L = 2; c.C = 32; c.V = 50; c.Vp = 64; c.maxT = 8; c.B = 2; c.T = 8;
    c.arch = MODEL_ARCH_LLAMA; c.H = model_llama_default_ffn(32); c.rope_theta = 10000;
    c.heads[0] = 2; c.heads[1] = 4;
    char err[512];
    model *m = NULL;
    if (model_cpu_ops.create(&c, -1, &m, err, sizeof err)) HFAIL("cpu create: %s", err);
    size_t np = model_num_params(&c);
    float *params = malloc(np * sizeof(float));
    model_init_params(&c, 99, params);
    if (model_cpu_ops.set_params(m, params)) HFAIL("set_params");
    int n = c.B * c.T, in[16], tg[16];
    for (int i = 0; i < n; i++) { in[i] = (i * 7 + 3) % c.V; tg[i] = (i * 11 + 5) % c.V; }
    float losses[16], loss = 0;
    for (int i = 0; i < n; i++) losses[i] = NAN;
    if (model_cpu_ops.forward_losses(m, in, tg, c.B, c.T, losses)) HFAIL("forward_losses: %s", model_cpu_ops.error(m));
    if (model_cpu_ops.forward_loss(m, in, tg, c.B, c.T, &loss, NULL)) HFAIL("forward_loss");
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(losses[i])) HFAIL("position %d: loss %g", i, losses[i]);
        sum += losses[i];
        lo = fmin(lo, losses[i]);
        hi = fmax(hi, losses[i]);
    }
    printf("forward_losses mean %.7f forward_loss %.7f (min %.4f max %.4f)\n", sum / n, loss, lo, hi);
    ASSERT_NEAR(loss, sum / n, 1e-5 * loss);
    ASSERT_TRUE(hi - lo > 1e-3);
    model_cpu_ops.free(m);
    free(params);
}
