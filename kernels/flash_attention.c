/* flash_attention.c — the CPU twin of the fused causal attention (kernels/cuda/flash_attention.cu).
 *
 * Design: per (batch, head), in parallel with OpenMP (each pair writes only its own columns of out, lse and
 * dqkv, so there are no races), query rows one at a time: the row's scaled scores over keys s <= t, their max
 * m and sum l of exp(score - m) give lse = m + log(l) and out = sum p v; the backward takes P = exp(score - lse)
 * and delta = dout.out as the GPU kernels do, so the two sides compute the same function from the same saved
 * values. Sums run in a fixed order: results do not depend on the thread count.
 * The RoPE variants rotate a copy of qkv with the engine's cpu_rope_forward (llama_kernels.c), run the plain
 * functions on it, and (backward) rotate the gradient of q and k back with cpu_rope_backward before adding it.
 */
#include "flash_attention.h"
#include "llama_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void RN(cpu_flash_attention_forward)(real *out, real *lse, const real *qkv, int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    real scale = (real)(1.0 / sqrt((double)hs));
    #pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const real *q = qkv + (size_t)b * T * C3 + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
        real *s = malloc((size_t)T * sizeof(real));
        if (!s) abort();
        for (int t = 0; t < T; t++) {
            const real *qt = q + (size_t)t * C3;
            real m = -INFINITY;
            for (int j = 0; j <= t; j++) {
                real dot = 0;
                for (int c = 0; c < hs; c++) dot += qt[c] * k[(size_t)j * C3 + c];
                s[j] = dot * scale;
                if (s[j] > m) m = s[j];
            }
            real l = 0;
            for (int j = 0; j <= t; j++) { s[j] = REAL_EXP(s[j] - m); l += s[j]; }
            real *o = out + ((size_t)b * T + t) * C + (size_t)h * hs, inv = 1 / l;
            for (int c = 0; c < hs; c++) o[c] = 0;
            for (int j = 0; j <= t; j++)
                for (int c = 0; c < hs; c++) o[c] += s[j] * v[(size_t)j * C3 + c];
            for (int c = 0; c < hs; c++) o[c] *= inv;
            lse[(size_t)bh * T + t] = m + REAL_LOG(l);
        }
        free(s);
    }
}

void RN(cpu_flash_attention_backward)(real *dqkv, const real *dout, const real *qkv, const real *out, const real *lse,
                                      int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    real scale = (real)(1.0 / sqrt((double)hs));
    #pragma omp parallel for schedule(dynamic, 1)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        size_t qo = (size_t)b * T * C3 + (size_t)h * hs;
        const real *q = qkv + qo, *k = q + C, *v = q + 2 * C;
        real *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
        for (int t = 0; t < T; t++) {
            const real *qt = q + (size_t)t * C3, *g = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
            const real *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
            real delta = 0, L = lse[(size_t)bh * T + t];
            for (int c = 0; c < hs; c++) delta += g[c] * o[c];
            for (int j = 0; j <= t; j++) {
                const real *kj = k + (size_t)j * C3, *vj = v + (size_t)j * C3;
                real dot = 0, dp = 0;
                for (int c = 0; c < hs; c++) { dot += qt[c] * kj[c]; dp += g[c] * vj[c]; }
                real p = REAL_EXP(dot * scale - L), ds = p * (dp - delta) * scale;
                real *dqt = dq + (size_t)t * C3, *dkj = dk + (size_t)j * C3, *dvj = dv + (size_t)j * C3;
                for (int c = 0; c < hs; c++) {
                    dvj[c] += p * g[c];
                    dqt[c] += ds * kj[c];
                    dkj[c] += ds * qt[c];
                }
            }
        }
    }
}

static real *fa_copy(const real *src, size_t n) {
    real *p = malloc(n * sizeof(real));
    if (!p) abort();
    if (src) memcpy(p, src, n * sizeof(real));
    else memset(p, 0, n * sizeof(real));
    return p;
}

void RN(cpu_flash_attention_forward_rope)(real *out, real *lse, const real *qkv, int B, int T, int C, int NH,
                                          double theta) {
    if (theta == 0) { RN(cpu_flash_attention_forward)(out, lse, qkv, B, T, C, NH); return; }
    size_t n3 = (size_t)B * T * 3 * C;
    real *rot = fa_copy(qkv, n3);
    RN(cpu_rope_forward)(rot, B, T, C, NH, theta);
    RN(cpu_flash_attention_forward)(out, lse, rot, B, T, C, NH);
    free(rot);
}

void RN(cpu_flash_attention_backward_rope)(real *dqkv, const real *dout, const real *qkv, const real *out,
                                           const real *lse, int B, int T, int C, int NH, double theta) {
    if (theta == 0) { RN(cpu_flash_attention_backward)(dqkv, dout, qkv, out, lse, B, T, C, NH); return; }
    size_t n3 = (size_t)B * T * 3 * C;
    real *rot = fa_copy(qkv, n3), *g = fa_copy(NULL, n3);
    RN(cpu_rope_forward)(rot, B, T, C, NH, theta);
    RN(cpu_flash_attention_backward)(g, dout, rot, out, lse, B, T, C, NH);   /* w.r.t. rope(q), rope(k), v */
    RN(cpu_rope_backward)(g, B, T, C, NH, theta);                            /* w.r.t. q, k */
    for (size_t i = 0; i < n3; i++) dqkv[i] += g[i];
    free(rot);
    free(g);
}
