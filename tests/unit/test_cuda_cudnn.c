/* tests/unit/test_cuda_cudnn.c — the cuDNN attention backend (kernels/cuda/attention_cudnn.cu) and the per-layer
 * choice PRISM_ATTENTION=cudnn|fused|auto.   timeout: 300
 *
 * On the CUDA emulator (test_cuda_cudnn.emu-bf16 / .emu-fp32) the backend's own code builds its graphs against the
 * cuDNN shim (tests/cudaemu/cudnnemu.cpp), which checks every descriptor against cuDNN's rules and runs the graph
 * on the CPU; on a GPU with libcudnn.so.9 the same cases run against the real library.
 * - forward out/lse and backward dqkv against the CPU twin (kernels/flash_attention.c) at head sizes 16..256
 *   including the fused kernel's padded ones (24, 40, 80, 136), T not a multiple of any tile (37, 70), 1-3 heads,
 *   B 1-2; outputs poisoned with NaN first. bf16 tolerances: out, dqkv 2e-2, lse 2e-3 (relative to max |ref|).
 * - the seeded bug (PRISM_CUDNN_SEED_BUG=stride: K described with row stride C instead of 3C) makes the forward's
 *   error vs the twin exceed the tolerance, and auto's self-check turns it down (one line, fused kernel).
 * - unsupported configurations fall back with ONE line each: a head size of 100 (not a multiple of 8), an old
 *   library (CUDNNEMU_VERSION=8907), an Ampere (CUDNNEMU_SM=80) refusing the head-192 backward graph.
 * - PRISM_ATTENTION parsing: the three values and the default; a bad value is a clear error at model creation.
 * - whole models with PRISM_ATTENTION=cudnn: GPT-2 and Llama (RoPE as its own pass) loss and every gradient
 *   against the CPU engine (every gradient's relative L2 error <= 1.5e-2, which the seeded stride bug also fails);
 *   the cuDNN calls are counted and the fused kernel is not called.
 * The fp32 build has no cuDNN path: its cases check that every layer falls back (with the reason) instead.
 */
#include "harness.h"
#include "model.h"
#include "flash_attention.h"
#include <stdint.h>
#include <fcntl.h>
#ifdef PRISM_HAVE_CUDA
#include "cuda/cuda_kernels.h"
#include "cuda/attention_cudnn.h"
#include "cuda/llama_kernels_cuda.h"
#pragma GCC diagnostic ignored "-Wunused-function"   /* the shared helpers this file does not use */
#include "cuda_test_lib.h"
/* the emulator's cuDNN shim counts the rule violations it reported; NULL against the real library */
extern int cudnnemu_violations(void) __attribute__((weak));

static void need_cudnn(void) {
    need_device();
    char why[300];
    if (fp32()) return;
    if (!prism_cuda_cudnn_supports(64, why, sizeof why)) {
        if (cudaemu_faults) HFAIL("the emulator's cuDNN shim should be available: %s", why);
        SKIP("cuDNN: %s", why);
    }
}

static double rel_err(const float *a, const float *b, size_t n) {
    double m = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;
        if (fabs(b[i]) > r) r = fabs(b[i]);
    }
    return r > 0 ? m / r : m;
}

/* one shape: cuDNN forward + backward against the twin; returns the forward out error (the caller decides) */
static double twin_case(int B, int T, int NH, int hs, int check) {
    int C = NH * hs;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
    printf("cuDNN vs twin: B=%d T=%d NH=%d hs=%d\n", B, T, NH, hs);
    float *qkv = hrand(nq, 1.5f), *dout = hrand(no, 1), *out_c = hzero(no), *lse_c = hzero(nl), *dq_c = hzero(nq);
    cpu_flash_attention_forward(out_c, lse_c, qkv, B, T, C, NH);
    cpu_flash_attention_backward(dq_c, dout, qkv, out_c, lse_c, B, T, C, NH);
    void *d_qkv = dx(qkv, nq), *d_out = dpoison_x(no), *d_dout = dx(dout, no), *d_dq = dpoison_x(nq);
    float *d_lse = dpoison_f(nl);
    int c0 = prism_cuda_cudnn_calls();
    CK(prism_cuda_cudnn_attention_forward(d_out, d_lse, d_qkv, B, T, C, NH));
    float *out = get_x(d_out, no), *lse = get_f(d_lse, nl);
    if (!check) return rel_err(out, out_c, no);
    close_to("cudnn out", out, out_c, no, 2e-2);
    close_to("cudnn lse", lse, lse_c, nl, 2e-3);
    CK(prism_cuda_cudnn_attention_backward(d_dq, d_dout, d_qkv, d_out, d_lse, B, T, C, NH));
    close_to("cudnn dqkv", get_x(d_dq, nq), dq_c, nq, 2e-2);
    ASSERT_EQ_INT(2, prism_cuda_cudnn_calls() - c0);
    return 0;
}

TEST(cudnn_matches_cpu_twin_at_head_sizes_16_to_256) {
    need_cudnn();
    if (fp32()) {
        char why[300] = "";
        ASSERT_EQ_INT(0, prism_cuda_cudnn_supports(64, why, sizeof why));
        ASSERT_CONTAINS(why, "fp32");
        SKIP("fp32 build: no cuDNN path (%s)", why);
    }
    static const int hs[] = { 16, 24, 32, 40, 64, 80, 96, 128, 136, 192, 256 };
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        int big = hs[i] > 128;
        twin_case(big ? 1 : 2, (i & 1) ? 37 : 70, big ? 1 + (int)(i & 1) : 1 + (int)(i % 3), hs[i], 1);
    }
    ASSERT_GE_INT(prism_cuda_cudnn_plans_built(), 22);   /* a forward and a backward plan per shape */
    int before = prism_cuda_cudnn_plans_built();
    twin_case(2, 70, 1, 16, 1);                          /* the same shape again: the cached plans */
    ASSERT_EQ_INT(before, prism_cuda_cudnn_plans_built());
    if (cudnnemu_violations) ASSERT_EQ_INT(0, cudnnemu_violations());
}

/* Capture stderr of fn() into buf (the one-line fallback messages). */
static void capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t n) {
    char path[] = "/tmp/prism-cudnn-stderr-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) HFAIL("mkstemp");
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t k = read(fd, buf, n - 1);
    buf[k > 0 ? k : 0] = 0;
    close(fd);
    unlink(path);
    fprintf(stderr, "%s", buf);
}
static int count_lines(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

struct choose_arg { struct model_config c; int fused[MODEL_MAX_LAYERS], backend[MODEL_MAX_LAYERS], rc; char err[300], sum[300]; };
static void run_choose(void *p) {
    struct choose_arg *a = p;
    a->rc = prism_attention_choose(&a->c, a->fused, a->backend, a->sum, sizeof a->sum, a->err, sizeof a->err);
}
static void choose_cfg(struct choose_arg *a, int C, int L, const int *heads) {
    memset(a, 0, sizeof *a);
    a->c.L = L; a->c.C = C; a->c.V = 64; a->c.Vp = 64; a->c.maxT = 40; a->c.B = 1; a->c.T = 40;
    for (int l = 0; l < L; l++) { a->c.heads[l] = heads[l]; a->fused[l] = 1; }
}

/* The seeded bug: a wrong K stride in the descriptor. The twin comparison fails it; auto's self-check refuses it. */
TEST(seeded_wrong_stride_fails_the_twin_check_and_the_self_check) {
    setenv("PRISM_CUDNN_SEED_BUG", "stride", 1);
    need_cudnn();
    if (fp32()) SKIP("fp32 build: no cuDNN path");
    double e = twin_case(1, 37, 2, 32, 0);
    printf("seeded stride bug: forward relative error %.3g (tolerance 2e-2)\n", e);
    ASSERT_TRUE(e > 2e-2);
    setenv("PRISM_ATTENTION", "auto", 1);
    struct choose_arg a;
    int heads[2] = { 2, 2 };
    choose_cfg(&a, 64, 2, heads);
    char log[4096];
    capture_stderr(run_choose, &a, log, sizeof log);
    ASSERT_EQ_INT(0, a.rc);
    ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[0]);
    ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[1]);
    ASSERT_EQ_INT(1, count_lines(log, "cuDNN unavailable"));
    ASSERT_CONTAINS(log, "self-check against the fused kernel failed");
}

TEST(unsupported_head_size_falls_back_with_one_line) {
    need_cudnn();
    setenv("PRISM_ATTENTION", "cudnn", 1);
    struct choose_arg a;
    int heads[3] = { 2, 2, 4 };   /* head sizes 100, 100, 50 at C=200 */
    choose_cfg(&a, 200, 3, heads);
    a.fused[2] = 1;
    char log[4096];
    capture_stderr(run_choose, &a, log, sizeof log);
    ASSERT_EQ_INT(0, a.rc);
    for (int l = 0; l < 3; l++) ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[l]);
    /* one line per head size turned down (100 and 50), then the summary */
    ASSERT_EQ_INT(2, count_lines(log, "cuDNN unavailable"));
    ASSERT_CONTAINS(log, fp32() ? "fp32" : "head size 100 is not a multiple of 8");
    ASSERT_CONTAINS(a.sum, "PRISM_ATTENTION=cudnn: cudnn layers none, fused layers 1-3");
}

TEST(old_cudnn_library_falls_back_with_one_line) {
    setenv("CUDNNEMU_VERSION", "8907", 1);
    need_device();
    if (!cudaemu_faults) SKIP("the library version is the emulator's to fake");
    setenv("PRISM_ATTENTION", "auto", 1);
    struct choose_arg a;
    int heads[4] = { 1, 1, 1, 1 };
    choose_cfg(&a, 64, 4, heads);
    char log[4096];
    capture_stderr(run_choose, &a, log, sizeof log);
    ASSERT_EQ_INT(0, a.rc);
    for (int l = 0; l < 4; l++) ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[l]);
    ASSERT_EQ_INT(1, count_lines(log, "cuDNN unavailable"));
    ASSERT_CONTAINS(log, fp32() ? "fp32" : "cuDNN 8.9.7 is older than 9.0");
}

/* An Ampere's cuDNN has no head-192 backward: the plan fails to build at model creation; one line, fused kernel. */
TEST(unsupported_graph_on_ampere_falls_back_with_one_line) {
    setenv("CUDNNEMU_SM", "80", 1);
    need_cudnn();
    if (!cudaemu_faults) SKIP("the GPU generation is the emulator's to fake");
    if (fp32()) SKIP("fp32 build: no cuDNN path");
    setenv("PRISM_ATTENTION", "cudnn", 1);
    struct choose_arg a;
    int heads[2] = { 1, 3 };   /* head sizes 192 and 64 at C=192 */
    choose_cfg(&a, 192, 2, heads);
    char log[4096];
    capture_stderr(run_choose, &a, log, sizeof log);
    ASSERT_EQ_INT(0, a.rc);
    ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[0]);
    ASSERT_EQ_INT(PRISM_ATTN_CUDNN, a.backend[1]);
    ASSERT_EQ_INT(1, count_lines(log, "cuDNN unavailable"));
    ASSERT_CONTAINS(log, "backward graph");
    ASSERT_CONTAINS(a.sum, "cudnn layers 2, fused layers 1");
}

TEST(prism_attention_values_parse_and_a_bad_one_is_a_clear_error) {
    int m = -1;
    char err[300] = "";
    ASSERT_EQ_INT(0, prism_attention_mode_parse(NULL, &m, err, sizeof err)); ASSERT_EQ_INT(PRISM_ATTN_AUTO, m);
    ASSERT_EQ_INT(0, prism_attention_mode_parse("", &m, err, sizeof err)); ASSERT_EQ_INT(PRISM_ATTN_AUTO, m);
    ASSERT_EQ_INT(0, prism_attention_mode_parse("auto", &m, err, sizeof err)); ASSERT_EQ_INT(PRISM_ATTN_AUTO, m);
    ASSERT_EQ_INT(0, prism_attention_mode_parse("fused", &m, err, sizeof err)); ASSERT_EQ_INT(PRISM_ATTN_FUSED, m);
    ASSERT_EQ_INT(0, prism_attention_mode_parse("cudnn", &m, err, sizeof err)); ASSERT_EQ_INT(PRISM_ATTN_CUDNN, m);
    const char *bad[] = { "CUDNN", "flash", "cudnn ", "1" };
    for (int i = 0; i < 4; i++) {
        err[0] = 0;
        ASSERT_EQ_INT(-1, prism_attention_mode_parse(bad[i], &m, err, sizeof err));
        ASSERT_CONTAINS(err, "PRISM_ATTENTION=");
        ASSERT_CONTAINS(err, bad[i]);
        ASSERT_CONTAINS(err, "use cudnn, fused or auto");
    }
}
/* at model creation: the model is refused with that message */
TEST(a_bad_prism_attention_fails_model_creation_clearly) {
    setenv("PRISM_ATTENTION", "flash", 1);
    need_device();
    char err[300] = "";
    struct model_config c;
    memset(&c, 0, sizeof c);
    c.L = 1; c.C = 64; c.V = 64; c.Vp = 64; c.maxT = 16; c.B = 1; c.T = 16; c.heads[0] = 2;
    model *mp = NULL;
    ASSERT_EQ_INT(MODEL_EINVAL, model_cuda_ops.create(&c, 0, &mp, err, sizeof err));
    ASSERT_CONTAINS(err, "PRISM_ATTENTION=flash is not an attention backend");
}

/* ---- whole models on cuDNN ------------------------------------------------------------------------------ */
/* rope1: the separate RoPE kernel's calls in the first (eager) step */
static void model_case(struct model_config *c, const model_ops *g, const char *label, int *rope1) {
    char err[512];
    model *cpu, *gpu;
    if (model_cpu_ops.create(c, -1, &cpu, err, sizeof err)) HFAIL("cpu create: %s", err);
    if (g->create(c, 0, &gpu, err, sizeof err)) HFAIL("cuda create: %s", err);
    size_t np = model_num_params(c);
    float *params = tmalloc(np * sizeof(float));
    model_init_params(c, 99, params);
    prism_cuda_round_host(params, np);
    if (model_cpu_ops.set_params(cpu, params) || g->set_params(gpu, params)) HFAIL("set_params");
    int n = c->B * c->T, *in = tmalloc(n * sizeof(int)), *tg = tmalloc(n * sizeof(int));
    for (int i = 0; i < n; i++) { in[i] = (i * 7 + 3) % 37; tg[i] = (i * 11 + 5) % 37; }
    float lc = 0, lg = 0;
    if (model_cpu_ops.zero_grad(cpu) || model_cpu_ops.forward_backward(cpu, in, tg, c->B, c->T, 1.0f, &lc)) HFAIL("cpu fb");
    int k0 = prism_cuda_cudnn_calls(), f0 = prism_cuda_flash_attention_calls(), r0 = prism_cuda_rope_calls();
    if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c->B, c->T, 1.0f, &lg)) HFAIL("cuda fb: %s", g->error(gpu));
    *rope1 = prism_cuda_rope_calls() - r0;
    int kc = prism_cuda_cudnn_calls() - k0, fc = prism_cuda_flash_attention_calls() - f0;
    printf("%s: loss cpu %.7f gpu %.7f; cuDNN calls %d, fused calls %d\n", label, lc, lg, kc, fc);
    ASSERT_EQ_INT(2 * c->L, kc);
    ASSERT_EQ_INT(0, fc);
    ASSERT_NEAR(lc, lg, lc * 1e-2);
    float *gc = tmalloc(np * sizeof(float)), *gg = tmalloc(np * sizeof(float));
    if (model_cpu_ops.get_grads(cpu, gc) || g->get_grads(gpu, gg)) HFAIL("get_grads");
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < np; i++) { e2 += (gg[i] - gc[i]) * (double)(gg[i] - gc[i]); r2 += (double)gc[i] * gc[i]; }
    /* 1.5e-2: bf16 lands near 6e-3 here; the seeded K-stride bug (PRISM_CUDNN_SEED_BUG=stride) gives 2.7e-2 */
    printf("  every gradient: relative L2 error %.3e (tolerance 1.5e-2)\n", sqrt(e2 / r2));
    ASSERT_TRUE(sqrt(e2 / r2) <= 1.5e-2);
    /* the next steps of the same shape are captured as a CUDA graph and replayed (model_cuda_base.cuh): cuDNN's
     * executions must be captured too, giving the same loss and gradients as the eager first step */
    int g0 = prism_cuda_graph_launches();
    for (int rep = 0; rep < 2; rep++) {
        float l2 = 0;
        if (g->zero_grad(gpu) || g->forward_backward(gpu, in, tg, c->B, c->T, 1.0f, &l2)) HFAIL("cuda fb %d: %s", rep + 2, g->error(gpu));
        float *g2 = tmalloc(np * sizeof(float));
        if (g->get_grads(gpu, g2)) HFAIL("get_grads");
        double d2 = 0;
        for (size_t i = 0; i < np; i++) d2 += (g2[i] - gg[i]) * (double)(g2[i] - gg[i]);
        printf("  step %d: loss %.7f (first %.7f), gradients vs the first step: relative L2 %.3e\n", rep + 2, l2, lg, sqrt(d2 / r2));
        ASSERT_NEAR(lg, l2, fabs(lg) * 1e-6);
        ASSERT_TRUE(sqrt(d2 / r2) <= 1e-6);
    }
    printf("  graph launches: %d\n", prism_cuda_graph_launches() - g0);
    ASSERT_GE_INT(prism_cuda_graph_launches() - g0, 1);
    g->free(gpu);
    model_cpu_ops.free(cpu);
}

TEST(gpt2_model_on_cudnn_matches_cpu) {
    need_cudnn();
    if (fp32()) SKIP("fp32 build: no cuDNN path");
    setenv("PRISM_ATTENTION", "cudnn", 1);
    struct model_config c;
    memset(&c, 0, sizeof c);
    c.L = 3; c.C = 128; c.V = 100; c.Vp = 128; c.maxT = 24; c.B = 2; c.T = 24;
    c.heads[0] = 1; c.heads[1] = 2; c.heads[2] = 8;   /* head sizes 128, 64, 16 */
    int rope1;
    model_case(&c, &model_cuda_ops, "GPT-2 heads 1,2,8 C=128 L=3 on cuDNN", &rope1);
}

TEST(llama_model_on_cudnn_matches_cpu_with_rope_as_its_own_pass) {
    need_cudnn();
    if (fp32()) SKIP("fp32 build: no cuDNN path");
    setenv("PRISM_ATTENTION", "cudnn", 1);
    struct model_config c;
    memset(&c, 0, sizeof c);
    c.L = 2; c.C = 128; c.V = 100; c.Vp = 128; c.maxT = 24; c.B = 2; c.T = 24;
    c.arch = MODEL_ARCH_LLAMA; c.H = model_llama_default_ffn(128); c.rope_theta = 10000;
    c.heads[0] = 2; c.heads[1] = 4;   /* head sizes 64, 32 */
    int fr0 = prism_cuda_flash_attention_rope_calls(), rope1;
    model_case(&c, &model_cuda_llama_ops, "Llama heads 2,4 C=128 L=2 on cuDNN", &rope1);
    ASSERT_EQ_INT(2 * c.L, rope1);   /* the separate RoPE kernel: forward + backward per layer */
    ASSERT_EQ_INT(0, prism_cuda_flash_attention_rope_calls() - fr0);
}

TEST(auto_picks_cudnn_where_the_self_check_passes) {
    need_cudnn();
    setenv("PRISM_ATTENTION", "auto", 1);
    struct choose_arg a;
    int heads[3] = { 1, 2, 4 };   /* head sizes 64, 32, 16 */
    choose_cfg(&a, 64, 3, heads);
    a.fused[2] = 0;               /* a materialised layer is never handed to cuDNN */
    char log[4096];
    capture_stderr(run_choose, &a, log, sizeof log);
    ASSERT_EQ_INT(0, a.rc);
    if (fp32()) {
        ASSERT_CONTAINS(a.sum, "cudnn layers none, fused layers 1-2");
        return;
    }
    ASSERT_EQ_INT(PRISM_ATTN_CUDNN, a.backend[0]);
    ASSERT_EQ_INT(PRISM_ATTN_CUDNN, a.backend[1]);
    ASSERT_EQ_INT(PRISM_ATTN_FUSED, a.backend[2]);
    ASSERT_EQ_INT(0, count_lines(log, "cuDNN unavailable"));
    ASSERT_CONTAINS(a.sum, "PRISM_ATTENTION=auto: cudnn layers 1-2, fused layers none");
}
#else
TEST(cudnn_needs_a_cuda_build) { SKIP("built without CUDA (no nvcc and not the emulator)"); }
#endif
