/* bench/bench_cuda_gpt2.c — GPT-2 124M training throughput on one CUDA device: uniform 12 heads vs the
 * Prism schedule 3,3,6,6,8,8,12x6 (the paper's best at 124M). Prints tokens/s, ms/step, MFU and peak device memory per
 * schedule, and Prism's throughput as a fraction of uniform.
 *
 * Both models live on the device at once and are timed in alternating rounds (uniform, prism, uniform, ...)
 * so clock or thermal drift hits both alike; each schedule's figure is the median round. A step is
 * zero_grad + forward_backward (B x T tokens) + update (AdamW, clip 1.0), exactly what the trainer runs;
 * the loss comes back to the host each step, so wall-clock time per step is honest.
 * MFU = model_flops_per_token(T) x tokens/s / peak, with peak = 989 TFLOP/s (H100/H200 SXM dense bf16)
 * unless --peak-tflops says otherwise. Then a table of one layer's attention cost (forward + backward) at
 * 3, 6, 8 and 12 heads (head sizes 256, 128, 96, 64), next to the layer's QKV matmul, from CUDA events; and
 * before it each schedule's step split into forward, forward+backward and update (CUDA events); then the fused
 * attention alone at the same head counts (forward, forward + backward, TFLOP/s).
 * Without a CUDA build or device it says so and exits 0; a CUDA runtime error (a broken driver, say) is an error
 * (exit 1), never "skipped".
 *
 *   bench_cuda_gpt2 [--B 16] [--T 1024] [--steps 10] [--rounds 3] [--warmup 3] [--peak-tflops 989]
 *                   [--ceiling-tflops X] [--C 768] [--quick] [--heads LIST]...
 *                   (LIST like 3,3,6,6,8,8,12x6; default: uniform 12 and Prism; every LIST has the same length L)
 *   bench_cuda_gpt2 --find-max-B 192,128,96,64,48,32,16 [--T 1024] [--C 768] [--heads LIST]
 *   bench_cuda_gpt2 --mem-fit [--B 16] [--C 768] [--heads LIST]
 *   bench_cuda_gpt2 --alone ...  |  --flash-only [--flash-heads N] [--B 16] [--T 1024]
 * For tests/gpu/run.sh every figure is also printed as one machine-readable line starting "RESULT ":
 *   --C sets the width (the paper's Medium is --C 1024 with 24-layer schedules, Large --C 1536); --quick skips the
 *   phase and per-layer tables; --ceiling-tflops adds MFU against a measured matmul rate (tests/gpu/matmul_peak);
 *   --find-max-B creates the first schedule's model at each B in turn (largest first) and runs one step: the
 *   first that fits is the largest B ("RESULT maxB B=N"); --mem-fit creates it at T = 256, 512 and 1024 and
 *   fits peak device memory = a + b T + c T^2, so c T^2 at T = 1024 is the memory that grows with T^2 (kept or
 *   scratch attention scores) next to one layer's B*h*T*T bf16 tensor ("RESULT memfit ...").
 *   --alone times each schedule in its own model, one resident at a time (create, warm up, its rounds, free), so a
 *   B sized for one model (--find-max-B) fits; drift between schedules is then not cancelled by alternation.
 *   --flash-only runs only the fused-attention table (for a profiler: tests/gpu/run.sh's ncu row), --flash-heads N
 *   only at N heads.
 * At the end, "RESULT fallbacks n=N": matmuls that fell back from cuBLASLt to cublasGemmEx in this process.
 *   --arch llama: the Llama-style model instead (RoPE, SwiGLU hidden 8C/3 rounded to 64, RMSNorm), same widths.
 */
#include "model.h"
#include "bench_util.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef PRISM_HAVE_CUDA
#include "cuda/cuda_kernels.h"
#include "util.h"
#endif

#define MAX_SCHED 8

static __attribute__((unused)) int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}


#ifdef PRISM_HAVE_CUDA
/* Per-layer attention cost by head count at the 124M width (C=768): forward + backward of one layer, the
 * part of a step a schedule changes. Also the layer's QKV matmul forward + backward for scale. */
static int attention_table(int B, int T) {
    const int C = 768, heads[] = { 3, 6, 8, 12 }, reps = 5;
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, xs = prism_cuda_x_size();
    void *qkv = prism_cuda_malloc(n3 * xs), *dqkv = prism_cuda_malloc(n3 * xs), *out = prism_cuda_malloc(n * xs);
    void *dout = prism_cuda_malloc(n * xs), *att = prism_cuda_malloc((size_t)B * 12 * T * T * xs);
    void *scratch = prism_cuda_malloc(prism_cuda_attention_scratch_bytes(B, T, C, 12));
    void *w = prism_cuda_malloc((size_t)3 * C * C * xs), *ln = prism_cuda_malloc(n * xs);
    float *dw = prism_cuda_malloc((size_t)3 * C * C * sizeof(float)), *db = prism_cuda_malloc(3 * C * sizeof(float));
    int rc = -1;
    if (!qkv || !dqkv || !out || !dout || !att || !scratch || !w || !ln || !dw || !db) goto done;
    if (prism_cuda_fill_x(qkv, 0.5f, n3) || prism_cuda_fill_x(dout, 0.01f, n) || prism_cuda_fill_x(w, 0.01f, (size_t)3 * C * C) ||
        prism_cuda_fill_x(ln, 0.3f, n) || prism_cuda_memset0(dw, (size_t)3 * C * C * sizeof(float)) ||
        prism_cuda_memset0(db, 3 * C * sizeof(float))) goto done;
    printf("\nper-layer cost at C=768, B=%d, T=%d (forward + backward, median of %d):\n", B, T, reps);
    printf("| heads | head size | attention ms | qkv matmul ms |\n|---|---|---|---|\n");
    for (int i = 0; i < 4; i++) {
        int NH = heads[i];
        float ms[5], mm[5];
        for (int r = 0; r < reps; r++) {
            if (prism_cuda_timer_start() || prism_cuda_attention_forward(out, att, qkv, scratch, B, T, C, NH) ||
                prism_cuda_attention_backward(dqkv, dout, qkv, att, scratch, B, T, C, NH) || prism_cuda_timer_stop_ms(&ms[r]))
                goto done;
            if (prism_cuda_timer_start() || prism_cuda_matmul_forward(qkv, NULL, ln, w, NULL, B * T, C, 3 * C) ||
                prism_cuda_matmul_backward(ln, dw, db, qkv, ln, w, B * T, C, 3 * C, 0) || prism_cuda_timer_stop_ms(&mm[r]))
                goto done;
            if (prism_cuda_fill_x(qkv, 0.5f, n3)) goto done;   /* the matmul overwrote it */
        }
        for (int a = 0; a < reps; a++)
            for (int b = a + 1; b < reps; b++) {
                if (ms[b] < ms[a]) { float t = ms[a]; ms[a] = ms[b]; ms[b] = t; }
                if (mm[b] < mm[a]) { float t = mm[a]; mm[a] = mm[b]; mm[b] = t; }
            }
        printf("| %d | %d | %.3f | %.3f |\n", NH, C / NH, ms[reps / 2], mm[reps / 2]);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "attention table: %s\n", prism_cuda_last_error());
    prism_cuda_free(qkv); prism_cuda_free(dqkv); prism_cuda_free(out); prism_cuda_free(dout); prism_cuda_free(att);
    prism_cuda_free(scratch); prism_cuda_free(w); prism_cuda_free(ln); prism_cuda_free(dw); prism_cuda_free(db);
    return rc;
}

/* The fused attention (flash_attention.cu) at the same shapes: forward alone and forward + backward, on random
 * inputs, with its rate counted the usual FlashAttention way (causal: forward 2*B*T*T*C FLOPs, backward 2.5x). */
static int flash_table(int B, int T, int only_nh) {
    const int C = 768, heads[] = { 3, 6, 8, 12 }, reps = 5;
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, xs = prism_cuda_x_size();
    void *qkv = prism_cuda_malloc(n3 * xs), *dqkv = prism_cuda_malloc(n3 * xs), *out = prism_cuda_malloc(n * xs);
    void *dout = prism_cuda_malloc(n * xs);
    float *lse = prism_cuda_malloc((size_t)B * 12 * T * sizeof(float)), *delta = prism_cuda_malloc((size_t)B * 12 * T * sizeof(float));
    float *h = malloc(n3 * sizeof(float));
    int rc = -1;
    if (!qkv || !dqkv || !out || !dout || !lse || !delta || !h) goto done;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n3; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; h[i] = (float)((x >> 40) % 2001) / 1000.0f - 1.0f; }
    if (prism_cuda_upload_x(qkv, h, n3) || prism_cuda_upload_x(dout, h, n)) goto done;
    printf("\nfused attention at C=%d, B=%d, T=%d (median of %d):\n", C, B, T, reps);
    printf("| heads | head size | forward ms | forward TFLOP/s | forward + backward ms | fwd+bwd TFLOP/s |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < 4; i++) {
        int NH = heads[i];
        float f[5], fb[5];
        if (only_nh && NH != only_nh) continue;
        for (int r = 0; r < reps; r++) {
            if (prism_cuda_timer_start() || prism_cuda_flash_attention_forward(out, lse, qkv, B, T, C, NH) ||
                prism_cuda_timer_stop_ms(&f[r]))
                goto done;
            if (prism_cuda_timer_start() || prism_cuda_flash_attention_forward(out, lse, qkv, B, T, C, NH) ||
                prism_cuda_flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH) ||
                prism_cuda_timer_stop_ms(&fb[r]))
                goto done;
        }
        for (int a = 0; a < reps; a++)
            for (int b = a + 1; b < reps; b++) {
                if (f[b] < f[a]) { float t = f[a]; f[a] = f[b]; f[b] = t; }
                if (fb[b] < fb[a]) { float t = fb[a]; fb[a] = fb[b]; fb[b] = t; }
            }
        double flops = 2.0 * B * (double)T * T * C;
        printf("| %d | %d | %.3f | %.1f | %.3f | %.1f |\n", NH, C / NH, f[reps / 2], flops / (f[reps / 2] * 1e9),
               fb[reps / 2], 3.5 * flops / (fb[reps / 2] * 1e9));
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "flash table: %s\n", prism_cuda_last_error());
    prism_cuda_free(qkv); prism_cuda_free(dqkv); prism_cuda_free(out); prism_cuda_free(dout); prism_cuda_free(lse);
    prism_cuda_free(delta); free(h);
    return rc;
}
#endif

#ifdef PRISM_HAVE_CUDA
static const model_ops *OPS = &model_cuda_ops;   /* --arch llama: model_cuda_llama_ops */

/* One model of cfg (with its B and T) created and stepped once (zero_grad, forward_backward, update): 0 when it
 * fits; *peak = peak device memory in use meanwhile. err gets the reason when it does not. */
static int try_one(const struct model_config *cfg, size_t *peak, char *err, size_t errlen) {
    model *m = NULL;
    size_t np = model_num_params(cfg), n = (size_t)cfg->B * cfg->T;
    float *params = malloc(np * sizeof(float));
    int *in = malloc(n * sizeof(int)), *tg = malloc(n * sizeof(int)), rc = -1;
    if (!params || !in || !tg) { snprintf(err, errlen, "out of host memory"); goto done; }
    model_init_params(cfg, 42, params);
    for (size_t i = 0; i < n; i++) { in[i] = (int)((i * 7919) % 50257); tg[i] = (int)((i * 104729 + 1) % 50257); }
    prism_cuda_mem_reset_peak();
    if (OPS->create(cfg, 0, &m, err, errlen)) goto done;
    struct adamw_params hp = { .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f };
    float loss = 0, norm = 0;
    if (OPS->set_params(m, params) || OPS->zero_grad(m) ||
        OPS->forward_backward(m, in, tg, cfg->B, cfg->T, 1.0f, &loss) || OPS->update(m, &hp, 1, &norm)) {
        snprintf(err, errlen, "%s", OPS->error(m));
        goto done;
    }
    prism_cuda_mem_sample();
    *peak = prism_cuda_mem_peak();
    rc = 0;
done:
    OPS->free(m);
    free(params); free(in); free(tg);
    return rc;
}

/* --find-max-B: candidates in the order given (largest first); prints and returns at the first that fits. */
static int find_max_b(const struct model_config *cfg0, const char *sched, const char *list) {
    char err[512];
    if (prism_cuda_init(0, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    for (const char *p = list; *p;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1) { fprintf(stderr, "--find-max-B %s: need a list of batch sizes like 128,64,32\n", list); return 2; }
        struct model_config c = *cfg0;
        c.B = (int)b;
        size_t peak = 0;
        if (try_one(&c, &peak, err, sizeof err) == 0) {
            printf("largest B that fits (of %s): %ld, peak %.2f GiB (%s)\n", list, b, peak / 1073741824.0, sched);
            printf("RESULT maxB B=%ld peak_gib=%.3f\n", b, peak / 1073741824.0);
            return 0;
        }
        printf("B=%ld does not fit: %s\n", b, err);
        p = *end == ',' ? end + 1 : end;
    }
    printf("RESULT maxB B=0\n");
    return 1;
}

/* --mem-fit: peak memory at T = 256, 512, 1024 (same B), quadratic through the three points. */
static int mem_fit(const struct model_config *cfg0, const char *sched) {
    char err[512];
    if (prism_cuda_init(0, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    const int Ts[3] = { 256, 512, 1024 };
    double pk[3];
    for (int i = 0; i < 3; i++) {
        struct model_config c = *cfg0;
        c.T = Ts[i];
        size_t peak = 0;
        if (try_one(&c, &peak, err, sizeof err)) { fprintf(stderr, "mem-fit at T=%d: %s\n", Ts[i], err); return 1; }
        pk[i] = (double)peak;
        printf("peak device memory, %s B=%d T=%d: %.3f GiB\n", sched, c.B, Ts[i], peak / 1073741824.0);
    }
    double s1 = (pk[1] - pk[0]) / (Ts[1] - Ts[0]), s2 = (pk[2] - pk[1]) / (Ts[2] - Ts[1]);
    double c2 = (s2 - s1) / (Ts[2] - Ts[0]);
    double t2 = c2 * 1024.0 * 1024.0, one_layer = 0;
    for (int l = 0; l < cfg0->L; l++) {
        double b = (double)cfg0->B * cfg0->heads[l] * 1024.0 * 1024.0 * 2.0;
        if (b > one_layer) one_layer = b;
    }
    printf("memory growing with T^2 at T=1024: %.3f GiB; one layer's B*h*T*T bf16 tensor: %.3f GiB\n", t2 / 1073741824.0,
           one_layer / 1073741824.0);
    printf("RESULT memfit t2_gib=%.4f one_layer_gib=%.4f peak1024_gib=%.3f\n", t2 / 1073741824.0, one_layer / 1073741824.0,
           pk[2] / 1073741824.0);
    return 0;
}
#endif

int main(int argc, char **argv) {
    int B = 16, T = 1024, steps = 10, rounds = 3, warmup = 3, C = 768, quick = 0, memfit = 0, arch = MODEL_ARCH_GPT2;
    int alone = 0, flash_only = 0, flash_nh = 0;
    double peak = 989.0, ceiling = 0;
    const char *find_b = NULL;
    const char *sched[MAX_SCHED];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            printf("usage: %s [--B N] [--T N] [--steps N] [--rounds N] [--warmup N] [--peak-tflops X] [--ceiling-tflops X]\n"
                   "       [--C N] [--quick] [--alone] [--find-max-B LIST] [--mem-fit] [--flash-only [--flash-heads N]] [--heads LIST]...\n", argv[0]);
            return 0;
        }
        if (!strcmp(a, "--quick")) { quick = 1; continue; }
        if (!strcmp(a, "--mem-fit")) { memfit = 1; continue; }
        if (!strcmp(a, "--alone")) { alone = 1; continue; }
        if (!strcmp(a, "--flash-only")) { flash_only = 1; continue; }
        if (!v) { fprintf(stderr, "%s needs a value (see --help)\n", a); return 2; }
        if (!strcmp(a, "--B")) B = atoi(v);
        else if (!strcmp(a, "--T")) T = atoi(v);
        else if (!strcmp(a, "--steps")) steps = atoi(v);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atoi(v);
        else if (!strcmp(a, "--peak-tflops")) peak = atof(v);
        else if (!strcmp(a, "--ceiling-tflops")) ceiling = atof(v);
        else if (!strcmp(a, "--C")) C = atoi(v);
        else if (!strcmp(a, "--find-max-B")) find_b = v;
        else if (!strcmp(a, "--flash-heads")) flash_nh = atoi(v);
        else if (!strcmp(a, "--heads")) { if (ns < MAX_SCHED) sched[ns++] = v; }
        else if (!strcmp(a, "--arch") && (!strcmp(v, "gpt2") || !strcmp(v, "llama"))) arch = !strcmp(v, "llama");
        else { fprintf(stderr, "unknown option %s (see --help)\n", a); return 2; }
        i++;
    }
    if (B < 1 || T < 1 || T > 1024 || steps < 1 || rounds < 1 || warmup < 0 || C < 1) {
        fprintf(stderr, "bad sizes: need B >= 1, 1 <= T <= 1024, steps >= 1, rounds >= 1, C >= 1\n");
        return 2;
    }
    if (ns == 0 && C != 768) { fprintf(stderr, "--C %d: give the schedules with --heads\n", C); return 2; }
    if (ns == 0) { sched[ns++] = "12x12"; sched[ns++] = "3,3,6,6,8,8,12x6"; }
    struct model_config cfg[MAX_SCHED];
    double *tps[MAX_SCHED];
    for (int s = 0; s < ns; s++) {
        memset(&cfg[s], 0, sizeof cfg[s]);
        cfg[s].C = C; cfg[s].V = 50257; cfg[s].Vp = 50304; cfg[s].maxT = 1024; cfg[s].B = B; cfg[s].T = T;
        cfg[s].L = bench_parse_heads(sched[s], cfg[s].heads, MODEL_MAX_LAYERS);
        if (arch == MODEL_ARCH_LLAMA) { cfg[s].arch = arch; cfg[s].H = model_llama_default_ffn(C); cfg[s].rope_theta = 10000; }
        if (cfg[s].L < 1 || cfg[s].L != cfg[0].L) {
            fprintf(stderr, "--heads %s: need %d head counts like the first schedule, e.g. 3,3,6,6,8,8,12x6\n", sched[s],
                    cfg[0].L > 0 ? cfg[0].L : 12);
            return 2;
        }
        for (int l = 0; l < cfg[s].L; l++)
            if (C % cfg[s].heads[l]) { fprintf(stderr, "--heads %s: %d does not divide C=%d\n", sched[s], cfg[s].heads[l], C); return 2; }
        tps[s] = calloc(rounds, sizeof(double));
    }
#ifndef PRISM_HAVE_CUDA
    (void)find_b; (void)ceiling; (void)quick; (void)memfit; (void)tps; (void)peak; (void)alone; (void)flash_only; (void)flash_nh;
    printf("bench_cuda_gpt2: skipped: this build has no CUDA (nvcc not found)\n");
    return 0;
#else
    {
        int nd = prism_cuda_device_probe();
        if (nd < 0) { fprintf(stderr, "bench_cuda_gpt2: CUDA runtime error: %s\n", prism_cuda_last_error()); return 1; }
        if (nd == 0) { printf("bench_cuda_gpt2: skipped: no CUDA device\n"); return 0; }
    }
    OPS = model_ops_for_arch(&model_cuda_ops, arch);
    printf("arch: %s\n", model_arch_name(arch));
    if (find_b) return find_max_b(&cfg[0], sched[0], find_b);
    if (memfit) return mem_fit(&cfg[0], sched[0]);
    if (flash_only) {
        char e[512];
        if (prism_cuda_init(0, e, sizeof e)) { fprintf(stderr, "%s\n", e); return 1; }
        if (flash_nh && (flash_nh < 1 || 768 % flash_nh)) { fprintf(stderr, "--flash-heads %d: need one of 3, 6, 8, 12\n", flash_nh); return 2; }
        return flash_table(B, T, flash_nh) ? 1 : 0;
    }
    model *m[MAX_SCHED] = { 0 };
    size_t peak_mem[MAX_SCHED] = { 0 };
    char err[512];
    int rc = 1;
    size_t np = model_num_params(&cfg[0]);
    float *params = malloc(np * sizeof(float));
    int *in = malloc((size_t)B * T * sizeof(int)), *tg = malloc((size_t)B * T * sizeof(int));
    if (!params || !in || !tg) { fprintf(stderr, "out of host memory\n"); return 1; }
    model_init_params(&cfg[0], 42, params);
    uint64_t r = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < B * T; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        in[i] = (int)(r % 50257);
        tg[i] = (int)((r >> 20) % 50257);
    }
    struct adamw_params hp = { .lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f };
    float loss = 0, norm = 0;
    int t = 1;
#define STEP(s) do { \
        if (OPS->zero_grad(m[s]) || OPS->forward_backward(m[s], in, tg, B, T, 1.0f, &loss) || \
            OPS->update(m[s], &hp, t++, &norm)) { fprintf(stderr, "%s: %s\n", sched[s], OPS->error(m[s])); goto out; } \
    } while (0)
    /* phase 1: each schedule alone — peak device memory (parameters, optimizer, activations, scratch); with
     * --alone also its timed rounds, then it is freed before the next schedule is created */
    printf("device %s, precision %s, GPT-2 L=%d C=%d (%zu params), B=%d T=%d, %d rounds x %d steps, peak %.0f TFLOP/s%s\n",
           prism_cuda_device_name(), prism_cuda_precision(), cfg[0].L, C, np, B, T, rounds, steps, peak,
           alone ? ", each schedule alone on the device" : "");
    for (int s = 0; s < ns; s++) {
        if (prism_cuda_init(0, err, sizeof err)) { fprintf(stderr, "%s\n", err); goto out; }
        prism_cuda_mem_reset_peak();
        if (OPS->create(&cfg[s], 0, &m[s], err, sizeof err)) { fprintf(stderr, "create %s: %s\n", sched[s], err); goto out; }
        if (OPS->set_params(m[s], params)) { fprintf(stderr, "set_params: %s\n", OPS->error(m[s])); goto out; }
        for (int w = 0; w < (warmup > 0 ? warmup : 1); w++) STEP(s);
        prism_cuda_mem_sample();
        peak_mem[s] = prism_cuda_mem_peak();
        for (int k = 0; alone && k < rounds; k++) {
            double t0 = util_now_s();
            for (int i = 0; i < steps; i++) STEP(s);
            tps[s][k] = (double)B * T * steps / (util_now_s() - t0);
            printf("  round %d %-22s %10.0f tok/s  loss %.4f  grad norm %.3f\n", k + 1, sched[s], tps[s][k], loss, norm);
            fflush(stdout);
        }
        OPS->free(m[s]);
        m[s] = NULL;
    }
    /* phase 2: all schedules resident, timed in alternating rounds */
    for (int s = 0; !alone && s < ns; s++) {
        if (OPS->create(&cfg[s], 0, &m[s], err, sizeof err)) { fprintf(stderr, "create %s: %s\n", sched[s], err); goto out; }
        if (OPS->set_params(m[s], params)) { fprintf(stderr, "set_params: %s\n", OPS->error(m[s])); goto out; }
        for (int w = 0; w < warmup; w++) STEP(s);
    }
    for (int k = 0; !alone && k < rounds; k++)
        for (int s = 0; s < ns; s++) {
            double t0 = util_now_s();
            for (int i = 0; i < steps; i++) STEP(s);
            double dt = util_now_s() - t0;
            tps[s][k] = (double)B * T * steps / dt;
            printf("  round %d %-22s %10.0f tok/s  loss %.4f  grad norm %.3f\n", k + 1, sched[s], tps[s][k], loss, norm);
            fflush(stdout);
        }
    printf("\n| schedule | tokens/s | ms/step | MFU | MFU vs measured matmul | peak GiB | tokens/s vs first |\n"
           "|---|---|---|---|---|---|---|\n");
    double base = 0;
    for (int s = 0; s < ns; s++) {
        qsort(tps[s], rounds, sizeof(double), bench_cmp_double);
        double med = tps[s][rounds / 2];
        if (s == 0) base = med;
        double mfu = model_flops_per_token(&cfg[s], T) * med / (peak * 1e12);
        double mfc = ceiling > 0 ? model_flops_per_token(&cfg[s], T) * med / (ceiling * 1e12) : 0;
        char mc[32] = "-";
        if (ceiling > 0) snprintf(mc, sizeof mc, "%.1f%%", 100 * mfc);
        printf("| %s | %.0f | %.1f | %.1f%% | %s | %.2f | %.3f |\n", sched[s], med, 1e3 * B * T / med, 100 * mfu, mc,
               peak_mem[s] / (1024.0 * 1024 * 1024), med / base);
    }
    for (int s = 0; s < ns; s++) {
        double med = tps[s][rounds / 2];
        printf("RESULT speed schedule=%s L=%d C=%d B=%d T=%d tok_s=%.0f ms_step=%.2f mfu_peak=%.4f mfu_ceiling=%.4f "
               "peak_gib=%.3f vs_first=%.4f\n", sched[s], cfg[s].L, C, B, T, med, 1e3 * B * T / med,
               model_flops_per_token(&cfg[s], T) * med / (peak * 1e12),
               ceiling > 0 ? model_flops_per_token(&cfg[s], T) * med / (ceiling * 1e12) : 0.0,
               peak_mem[s] / (1024.0 * 1024 * 1024), med / base);
    }
    fflush(stdout);
    if (quick || alone) {   /* --alone: no model is left resident for the phase tables */
        for (int s = 0; s < ns; s++) { OPS->free(m[s]); m[s] = NULL; }
        rc = 0;
        goto out;
    }
    /* where a step's time goes, per schedule: forward alone (the eval path: forward_loss, which also
     * computes attention distance when asked, here not), forward+backward, update; medians of `steps` */
    printf("\nstep phases (ms, median of %d, CUDA events):\n| schedule | forward | forward+backward | update (AdamW) |\n"
           "|---|---|---|---|\n", steps);
    for (int s = 0; s < ns; s++) {
        float fwd[64], fb[64], up[64];
        int reps = steps < 64 ? steps : 64;
        for (int i = 0; i < reps; i++) {
            float l = 0;
            if (prism_cuda_timer_start() || OPS->forward_loss(m[s], in, tg, B, T, &l, NULL) ||
                prism_cuda_timer_stop_ms(&fwd[i])) { fprintf(stderr, "%s: %s\n", sched[s], OPS->error(m[s])); goto out; }
            if (OPS->zero_grad(m[s]) || prism_cuda_timer_start() ||
                OPS->forward_backward(m[s], in, tg, B, T, 1.0f, &l) || prism_cuda_timer_stop_ms(&fb[i]) ||
                prism_cuda_timer_start() || OPS->update(m[s], &hp, t++, &norm) || prism_cuda_timer_stop_ms(&up[i])) {
                fprintf(stderr, "%s: %s\n", sched[s], OPS->error(m[s]));
                goto out;
            }
        }
        qsort(fwd, reps, sizeof(float), cmp_float);
        qsort(fb, reps, sizeof(float), cmp_float);
        qsort(up, reps, sizeof(float), cmp_float);
        printf("| %s | %.2f | %.2f | %.2f |\n", sched[s], fwd[reps / 2], fb[reps / 2], up[reps / 2]);
    }
    for (int s = 0; s < ns; s++) { OPS->free(m[s]); m[s] = NULL; }
    if (C == 768 && attention_table(B, T) != 0) goto out;
    if (C == 768 && flash_table(B, T, 0) != 0) goto out;
    rc = 0;
out:
    for (int s = 0; s < ns; s++) OPS->free(m[s]);
    printf("RESULT fallbacks n=%d\n", prism_cuda_matmul_fallbacks());
    return rc;
#endif
}
