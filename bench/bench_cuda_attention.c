/* bench/bench_cuda_attention.c — one layer's causal attention, forward + backward, through both backends: the fused
 * kernel (flash_attention.cu) and cuDNN (attention_cudnn.cu), per head size at one width (default the 124M's C=768:
 * head sizes 64, 96, 128, 192, 256 are 12, 8, 6, 4, 3 heads).
 *
 * Random bf16 inputs (never zeros); each backend warmed up (cuDNN's plans are built then), then timed with CUDA
 * events per repetition, median reported. FLOPs counted for causal attention: forward 2·B·NH·T²·hs (QKᵀ and PV,
 * half the score matrix), backward 2.5x that (five products), so fwd+bwd = 7·B·NH·T²·hs = 7·B·C·T². cuDNN's
 * output is compared with the fused kernel's on the same inputs (relative error, printed).
 * One machine-readable line per backend and head size for tests/gpu/run.sh:
 *   RESULT attn hs=64 nh=12 backend=fused ms=1.23 tflops=456.7
 *   RESULT attn hs=64 nh=12 backend=cudnn ms=0.98 tflops=573.0 rel_out=3.1e-03     (or unavailable="why")
 * Without a CUDA build or device it says so and exits 0; a CUDA runtime error is exit 1.
 *
 *   bench_cuda_attention [--B 16] [--T 1024] [--C 768] [--reps 10] [--hs 64,96,128,192,256]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef PRISM_HAVE_CUDA
#include "cuda/cuda_kernels.h"
#include "cuda/attention_cudnn.h"
#endif

static __attribute__((unused)) int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

#ifdef PRISM_HAVE_CUDA
/* median ms of reps fwd+bwd runs through backend (PRISM_ATTN_FUSED / _CUDNN); -1 on error */
static double time_backend(int backend, int reps, void *out, float *lse, const void *qkv, void *dqkv, float *delta,
                           const void *dout, int B, int T, int C, int NH) {
    float *ms = calloc(reps, sizeof(float));
    double med = -1;
    for (int r = -2; r < reps; r++) {    /* two warm-ups */
        float t = 0;
        int rc = prism_cuda_timer_start();
        if (backend == PRISM_ATTN_CUDNN)
            rc = rc || prism_cuda_cudnn_attention_forward(out, lse, qkv, B, T, C, NH) ||
                 prism_cuda_cudnn_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH);
        else
            rc = rc || prism_cuda_flash_attention_forward(out, lse, qkv, B, T, C, NH) ||
                 prism_cuda_flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH);
        if (rc || prism_cuda_timer_stop_ms(&t)) goto out;
        if (r >= 0) ms[r] = t;
    }
    qsort(ms, reps, sizeof(float), cmp_float);
    med = ms[reps / 2];
out:
    free(ms);
    return med;
}
#endif

int main(int argc, char **argv) {
    int B = 16, T = 1024, C = 768, reps = 10;
    const char *hslist = "64,96,128,192,256";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "%s needs a value\nusage: %s [--B N] [--T N] [--C N] [--reps N] [--hs LIST]\n", a, argv[0]); return 2; }
        if (!strcmp(a, "--B")) B = atoi(v);
        else if (!strcmp(a, "--T")) T = atoi(v);
        else if (!strcmp(a, "--C")) C = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--hs")) hslist = v;
        else { fprintf(stderr, "unknown option %s\nusage: %s [--B N] [--T N] [--C N] [--reps N] [--hs LIST]\n", a, argv[0]); return 2; }
        i++;
    }
    if (B < 1 || T < 1 || C < 1 || reps < 1) { fprintf(stderr, "--B, --T, --C and --reps must be positive\n"); return 2; }
#ifndef PRISM_HAVE_CUDA
    (void)hslist;
    printf("bench_cuda_attention: skipped: this build has no CUDA (nvcc not found)\n");
    return 0;
#else
    int nd = prism_cuda_device_probe();
    if (nd < 0) { fprintf(stderr, "bench_cuda_attention: CUDA runtime error: %s\n", prism_cuda_last_error()); return 1; }
    if (nd == 0) { printf("bench_cuda_attention: skipped: no CUDA device\n"); return 0; }
    char err[512];
    if (prism_cuda_init(0, err, sizeof err)) { fprintf(stderr, "bench_cuda_attention: %s\n", err); return 1; }
    printf("device %s, precision %s, B=%d T=%d C=%d, fwd+bwd of one layer, median of %d\n", prism_cuda_device_name(),
           prism_cuda_precision(), B, T, C, reps);
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C;
    float *h = malloc((n3 + 2 * n) * sizeof(float));
    uint64_t s = 0x2545F4914F6CDD1DULL;
    for (size_t i = 0; i < n3 + n; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; h[i] = (float)((s >> 40) * (2.0 / 16777216.0)) - 1.0f; }
    size_t xs = prism_cuda_x_size();
    void *qkv = prism_cuda_malloc(n3 * xs), *dqkv = prism_cuda_malloc(n3 * xs), *out = prism_cuda_malloc(n * xs);
    void *dout = prism_cuda_malloc(n * xs);
    float *lse = prism_cuda_malloc((size_t)B * C * T * sizeof(float)), *delta = prism_cuda_malloc((size_t)B * C * T * sizeof(float));
    if (!h || !qkv || !dqkv || !out || !dout || !lse || !delta || prism_cuda_upload_x(qkv, h, n3) ||
        prism_cuda_upload_x(dout, h + n3, n)) {
        fprintf(stderr, "bench_cuda_attention: %s\n", prism_cuda_last_error());
        return 1;
    }
    printf("| head size | heads | fused ms | fused TFLOP/s | cuDNN ms | cuDNN TFLOP/s | cuDNN/fused time | cuDNN vs fused out |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    char list[256];
    snprintf(list, sizeof list, "%s", hslist);
    int rc = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int hs = atoi(tok);
        if (hs < 1 || C % hs) { fprintf(stderr, "--hs %d does not divide C=%d\n", hs, C); rc = 2; continue; }
        int NH = C / hs;
        double flops = 7.0 * B * NH * (double)T * T * hs;
        double fm = time_backend(PRISM_ATTN_FUSED, reps, out, lse, qkv, dqkv, delta, dout, B, T, C, NH);
        if (fm < 0) { fprintf(stderr, "fused hs=%d: %s\n", hs, prism_cuda_last_error()); rc = 1; continue; }
        float *o_f = malloc(n * sizeof(float)), *o_c = malloc(n * sizeof(float));
        prism_cuda_download_x(o_f, out, n);
        printf("RESULT attn hs=%d nh=%d backend=fused ms=%.3f tflops=%.1f\n", hs, NH, fm, flops / fm / 1e9);
        char why[300] = "";
        double cm = -1, rel = -1;
        if (prism_cuda_cudnn_supports(hs, why, sizeof why)) {
            cm = time_backend(PRISM_ATTN_CUDNN, reps, out, lse, qkv, dqkv, delta, dout, B, T, C, NH);
            if (cm < 0) snprintf(why, sizeof why, "%s", prism_cuda_last_error());
            else {
                double m = 0, r = 0;
                prism_cuda_download_x(o_c, out, n);
                for (size_t i = 0; i < n; i++) { double d = fabs((double)o_c[i] - o_f[i]); if (!(d <= m)) m = d; if (fabs(o_f[i]) > r) r = fabs(o_f[i]); }
                rel = r > 0 ? m / r : m;
            }
        }
        for (char *p = why; *p; p++) if (*p == '"' || *p == '|') *p = '\'';
        if (cm >= 0) printf("RESULT attn hs=%d nh=%d backend=cudnn ms=%.3f tflops=%.1f rel_out=%.2e\n", hs, NH, cm, flops / cm / 1e9, rel);
        else printf("RESULT attn hs=%d nh=%d backend=cudnn unavailable=\"%s\"\n", hs, NH, why);
        if (cm >= 0) printf("| %d | %d | %.3f | %.1f | %.3f | %.1f | %.2f | %.1e |\n", hs, NH, fm, flops / fm / 1e9, cm, flops / cm / 1e9, cm / fm, rel);
        else printf("| %d | %d | %.3f | %.1f | - | - | - | unavailable: %s |\n", hs, NH, fm, flops / fm / 1e9, why);
        free(o_f); free(o_c);
    }
    return rc;
#endif
}
