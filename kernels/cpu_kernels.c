/* cpu_kernels.c — the GPT-2 layer kernels on the CPU, the reference every other backend is checked against.
 *
 * Design (after llm.c's train_gpt2.c, written anew): plain functions over flat row-major arrays, forward
 * overwrites, backward accumulates. Every matmul — the linear layers and the per-(batch, head) products
 * inside attention — goes through cblas_sgemm, so the heavy work runs at BLAS speed whatever the head size.
 * Attention runs its (b, h) pairs in parallel with OpenMP, each pair's GEMMs single-threaded (see
 * "threads" below), and each pair writes only its own columns of
 * out/dqkv, so there are no races. Reductions (bias and LayerNorm gradients, the loss, the gradient norm)
 * are split by output element or into fixed-size chunks summed in order, never by thread: the result does
 * not depend on OMP_NUM_THREADS and the same inputs give the same bits.
 *
 * The element type is `real` (real.h): float normally; the gradient-check test compiles this file again with
 * double (names suffixed _f64, cblas_dgemm).
 */
#include "cpu_kernels.h"
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LN_EPS 1e-5
#define SUMSQ_MAX_CHUNKS 4096

/* --- threads -------------------------------------------------------------------------------------
 * All parallelism is OpenMP's: OpenBLAS is kept at one thread (its own pool would spin against ours on
 * a small machine) and every GEMM is cut into fixed 128-row chunks that OpenMP threads take in turn.
 * Each output element is computed by the same GEMM call shape whatever the thread count, so results do
 * not depend on OMP_NUM_THREADS. Loops over little work run on one thread (PAR_MIN). */
#define MM_CHUNK 128
#define PAR_MIN 32768
static void blas_single(void) {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

/* --- encoder -------------------------------------------------------------------------------------- */
void RN(cpu_encoder_forward)(real *out, const int *inp, const real *wte, const real *wpe, int B, int T, int C) {
    #pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * T * C > PAR_MIN)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            real *o = out + ((size_t)b * T + t) * C;
            const real *we = wte + (size_t)inp[b * T + t] * C, *pe = wpe + (size_t)t * C;
            for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
        }
}

void RN(cpu_encoder_backward)(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T, int C) {
    /* dwpe: each t owned by one iteration; dwte: split by channel so rows hit by the same token never race,
     * and each channel sums positions in (b, t) order. */
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > PAR_MIN)
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            const real *d = dout + ((size_t)b * T + t) * C;
            real *p = dwpe + (size_t)t * C;
            for (int c = 0; c < C; c++) p[c] += d[c];
        }
    RN(cpu_wte_backward)(dwte, dout, inp, B, T, C);
}

void RN(cpu_wte_backward)(real *dwte, const real *dout, const int *inp, int B, int T, int C) {
    /* columns in chunks of 32, one chunk per thread, rows in order: a token's sum has a fixed order */
    int nchunk = (C + 31) / 32;
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > PAR_MIN)
    for (int k = 0; k < nchunk; k++) {
        int c0 = k * 32, c1 = c0 + 32 < C ? c0 + 32 : C;
        for (size_t bt = 0; bt < (size_t)B * T; bt++) {
            const real *d = dout + bt * C;
            real *w = dwte + (size_t)inp[bt] * C;
            for (int c = c0; c < c1; c++) w[c] += d[c];
        }
    }
}

/* --- layernorm ------------------------------------------------------------------------------------ */
void RN(cpu_layernorm_forward)(real *out, real *mean, real *rstd, const real *inp, const real *weight,
                               const real *bias, int B, int T, int C) {
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > PAR_MIN)
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
        const real *x = inp + bt * C;
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        for (int c = 0; c < C; c++) { double d = x[c] - m; v += d * d; }
        v /= C;
        real s = (real)(1.0 / sqrt(v + LN_EPS)), mr = (real)m;
        real *o = out + bt * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mr) * s * weight[c] + bias[c];
        mean[bt] = mr;
        rstd[bt] = s;
    }
}

void RN(cpu_layernorm_backward)(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                                const real *weight, const real *mean, const real *rstd, int B, int T, int C) {
    size_t BT = (size_t)B * T;
    #pragma omp parallel for schedule(static) if (BT * C > PAR_MIN)
    for (size_t bt = 0; bt < BT; bt++) {
        const real *d = dout + bt * C, *x = inp + bt * C;
        real m = mean[bt], s = rstd[bt];
        double dn_mean = 0, dn_norm = 0;
        for (int c = 0; c < C; c++) {
            real n = (x[c] - m) * s, dn = weight[c] * d[c];
            dn_mean += dn;
            dn_norm += dn * n;
        }
        real a = (real)(dn_mean / C), bb = (real)(dn_norm / C);
        real *di = dinp + bt * C;
        for (int c = 0; c < C; c++) {
            real n = (x[c] - m) * s, dn = weight[c] * d[c];
            di[c] += (dn - a - n * bb) * s;
        }
    }
    int nchunk = (C + 15) / 16;
    #pragma omp parallel for schedule(static) if (BT * C > PAR_MIN)
    for (int k = 0; k < nchunk; k++) {
        int c0 = k * 16, c1 = c0 + 16 < C ? c0 + 16 : C;
        real dw[16] = {0}, db[16] = {0};
        for (size_t bt = 0; bt < BT; bt++) {
            const real *d = dout + bt * C, *x = inp + bt * C;
            real m = mean[bt], s = rstd[bt];
            for (int c = c0; c < c1; c++) { dw[c - c0] += (x[c] - m) * s * d[c]; db[c - c0] += d[c]; }
        }
        for (int c = c0; c < c1; c++) { dweight[c] += dw[c - c0]; dbias[c] += db[c - c0]; }
    }
}

/* --- matmul --------------------------------------------------------------------------------------- */
void RN(cpu_matmul_forward)(real *out, const real *inp, const real *weight, const real *bias,
                            int B, int T, int C, int OC) {
    int BT = B * T, nchunk = (BT + MM_CHUNK - 1) / MM_CHUNK;
    blas_single();
    #pragma omp parallel for schedule(dynamic, 1) if (nchunk > 1)
    for (int k = 0; k < nchunk; k++) {
        int r0 = k * MM_CHUNK, rows = BT - r0 < MM_CHUNK ? BT - r0 : MM_CHUNK;
        real *o = out + (size_t)r0 * OC;
        REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, rows, OC, C, 1, inp + (size_t)r0 * C, C, weight, C, 0, o, OC);
        if (bias)
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < OC; j++) o[(size_t)r * OC + j] += bias[j];
    }
}

void RN(cpu_matmul_backward)(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                             const real *weight, int B, int T, int C, int OC) {
    int BT = B * T, nrow = (BT + MM_CHUNK - 1) / MM_CHUNK, ncol = (OC + MM_CHUNK - 1) / MM_CHUNK;
    blas_single();
    #pragma omp parallel if (nrow + ncol > 2)
    {
        /* dinp (BT,C) += dout (BT,OC) · W (OC,C), by row chunks */
        #pragma omp for schedule(dynamic, 1) nowait
        for (int k = 0; k < nrow; k++) {
            int r0 = k * MM_CHUNK, rows = BT - r0 < MM_CHUNK ? BT - r0 : MM_CHUNK;
            REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, C, OC, 1, dout + (size_t)r0 * OC, OC, weight, C,
                      1, dinp + (size_t)r0 * C, C);
        }
        /* dW (OC,C) += doutᵀ (OC,BT) · inp (BT,C), by chunks of output rows; dbias for the same rows */
        #pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < ncol; k++) {
            int o0 = k * MM_CHUNK, n = OC - o0 < MM_CHUNK ? OC - o0 : MM_CHUNK;
            REAL_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, n, C, BT, 1, dout + o0, OC, inp, C, 1,
                      dweight + (size_t)o0 * C, C);
            if (dbias) {
                real acc[MM_CHUNK] = {0};
                for (int bt = 0; bt < BT; bt++) {
                    const real *d = dout + (size_t)bt * OC + o0;
                    for (int j = 0; j < n; j++) acc[j] += d[j];
                }
                for (int j = 0; j < n; j++) dbias[o0 + j] += acc[j];
            }
        }
    }
}

/* --- attention ------------------------------------------------------------------------------------ */
/* Causal attention works in blocks of ATT_BLOCK query rows: rows [r0, r1) only need keys [0, r1), so
 * each GEMM stops at the diagonal block and about half of the masked upper triangle is never computed. */
#define ATT_BLOCK 64

void RN(cpu_attention_forward)(real *out, real *att, const real *qkv, int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    real scale = (real)(1.0 / sqrt((double)hs));
    blas_single();
    #pragma omp parallel for schedule(dynamic, 1) if ((size_t)B * T * T * C > PAR_MIN)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        const real *q = qkv + (size_t)b * T * C3 + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
        real *a = att + (size_t)bh * T * T, *o = out + (size_t)b * T * C + (size_t)h * hs;
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
            /* scores rows [r0,r1) x keys [0,r1) = scale · Q Kᵀ */
            REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, nr, r1, hs, scale, q + (size_t)r0 * C3, C3, k, C3, 0,
                      a + (size_t)r0 * T, T);
            for (int t = r0; t < r1; t++) {
                real *row = a + (size_t)t * T, mx = row[0];
                for (int s = 1; s <= t; s++) if (row[s] > mx) mx = row[s];
                real sum = 0;
                for (int s = 0; s <= t; s++) { row[s] = REAL_EXP(row[s] - mx); sum += row[s]; }
                real inv = 1 / sum;
                for (int s = 0; s <= t; s++) row[s] *= inv;
                for (int s = t + 1; s < T; s++) row[s] = 0;
            }
            /* out rows [r0,r1) (this head's columns) = A[r0:r1, 0:r1] · V[0:r1] */
            REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, hs, r1, 1, a + (size_t)r0 * T, T, v, C3, 0,
                      o + (size_t)r0 * C, C);
        }
    }
}

void RN(cpu_attention_backward)(real *dqkv, real *datt, const real *dout, const real *qkv, const real *att,
                                int B, int T, int C, int NH) {
    int hs = C / NH, C3 = 3 * C;
    real scale = (real)(1.0 / sqrt((double)hs));
    blas_single();
    #pragma omp parallel for schedule(dynamic, 1) if ((size_t)B * T * T * C > PAR_MIN)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        size_t qo = (size_t)b * T * C3 + (size_t)h * hs;
        const real *q = qkv + qo, *k = q + C, *v = q + 2 * C;
        real *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
        const real *a = att + (size_t)bh * T * T;
        real *da = datt + (size_t)bh * T * T;
        const real *dy = dout + (size_t)b * T * C + (size_t)h * hs;
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, nr = r1 - r0;
            const real *ab = a + (size_t)r0 * T;
            real *db = da + (size_t)r0 * T;
            /* dA[r0:r1, 0:r1] = dY[r0:r1] · V[0:r1]ᵀ ;  dV[0:r1] += A[r0:r1, 0:r1]ᵀ · dY[r0:r1] */
            REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, nr, r1, hs, 1, dy + (size_t)r0 * C, C, v, C3, 0, db, T);
            REAL_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hs, nr, 1, ab, T, dy + (size_t)r0 * C, C, 1, dv, C3);
            /* softmax backward, times the score scale; masked entries become 0 */
            for (int t = r0; t < r1; t++) {
                const real *ar = a + (size_t)t * T;
                real *dr = da + (size_t)t * T, dot = 0;
                for (int s = 0; s <= t; s++) dot += ar[s] * dr[s];
                for (int s = 0; s <= t; s++) dr[s] = ar[s] * (dr[s] - dot) * scale;
                for (int s = t + 1; s < r1; s++) dr[s] = 0;
            }
            /* dQ[r0:r1] += dS · K[0:r1] ;  dK[0:r1] += dSᵀ · Q[r0:r1] */
            REAL_GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, hs, r1, 1, db, T, k, C3, 1, dq + (size_t)r0 * C3, C3);
            REAL_GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, r1, hs, nr, 1, db, T, q + (size_t)r0 * C3, C3, 1, dk, C3);
        }
    }
}

double RN(cpu_attention_distance)(const real *att, int B, int T, int NH) {
    int t0 = T / 2, nq = T - t0;
    double total = 0;
    for (int b = 0; b < B; b++) {
        double seq = 0;
        for (int h = 0; h < NH; h++) {
            const real *a = att + ((size_t)b * NH + h) * T * T;
            for (int t = t0; t < T; t++) {
                const real *row = a + (size_t)t * T;
                double d = 0;
                for (int s = 0; s <= t; s++) d += (double)row[s] * (t - s);
                seq += d;
            }
        }
        total += seq / ((double)NH * nq);
    }
    return total;
}

/* --- gelu, residual ------------------------------------------------------------------------------- */
#define GELU_K 0.7978845608028654   /* sqrt(2/pi) */
/* tanh through one exp: libm's tanhf (via expm1f) was a quarter of a training step. In float the exp is
 * our own branch-free one (Cody–Waite reduction, degree-7 Taylor on |r| <= ln2/2: relative error ~1e-7,
 * like expf) so the GELU loops vectorise; tanh's absolute error is ~1e-7, which is what GELU needs
 * (0.5·x·(1 + tanh)). The double build keeps libm's tanh. */
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")   /* lets the loops below vectorise; results are unchanged */
#ifndef PRISM_REAL_DOUBLE
static inline float exp_vec(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504088896341f;
    float n = (t + 12582912.0f) - 12582912.0f;   /* round to nearest integer (|t| < 2^22) */
    float r = x - n * 0.693145751953125f - n * 1.42860676533018708e-06f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666666666666667e-1f + r * (4.16666666666666667e-2f +
              r * (8.33333333333333333e-3f + r * (1.38888888888888889e-3f + r * 1.98412698412698413e-4f))))));
    uint32_t bits = ((uint32_t)(int)n + 127u) << 23;   /* 2^n (unsigned: a NaN x gives NaN via p, no UB) */
    float sc;
    memcpy(&sc, &bits, sizeof sc);
    return p * sc;
}
#endif
#ifdef PRISM_REAL_DOUBLE
#define REAL_EXPV exp
#else
#define REAL_EXPV exp_vec
#endif
static inline real gelu_tanh(real u) {
#ifdef PRISM_REAL_DOUBLE
    return tanh(u);
#else
    u = u > 10.0f ? 10.0f : u;
    u = u < -10.0f ? -10.0f : u;
    return 1.0f - 2.0f / (exp_vec(2.0f * u) + 1.0f);
#endif
}
void RN(cpu_gelu_forward)(real *out, const real *inp, size_t N) {
    #pragma omp parallel for schedule(static) if (N > PAR_MIN)
    for (size_t i = 0; i < N; i++) {
        real x = inp[i];
        out[i] = (real)0.5 * x * (1 + gelu_tanh((real)GELU_K * (x + (real)0.044715 * x * x * x)));
    }
}

void RN(cpu_gelu_backward)(real *dinp, const real *inp, const real *dout, size_t N) {
    #pragma omp parallel for schedule(static) if (N > PAR_MIN)
    for (size_t i = 0; i < N; i++) {
        real x = inp[i];
        real u = (real)GELU_K * (x + (real)0.044715 * x * x * x);
        real th = gelu_tanh(u), sech2 = 1 - th * th;
        real du = (real)GELU_K * (1 + (real)(3 * 0.044715) * x * x);
        dinp[i] += ((real)0.5 * (1 + th) + (real)0.5 * x * sech2 * du) * dout[i];
    }
}

void RN(cpu_residual_forward)(real *out, const real *a, const real *b, size_t N) {
    #pragma omp parallel for schedule(static) if (N > PAR_MIN)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

void RN(cpu_residual_backward)(real *da, real *db, const real *dout, size_t N) {
    #pragma omp parallel for schedule(static) if (N > PAR_MIN)
    for (size_t i = 0; i < N; i++) { da[i] += dout[i]; db[i] += dout[i]; }
}

/* --- classifier ----------------------------------------------------------------------------------- */
double RN(cpu_crossentropy_softmax)(real *logits, real *losses, const int *targets, int B, int T, int V, int Vp,
                                    real dloss) {
    int BT = B * T;
    #pragma omp parallel for schedule(static) if ((size_t)BT * Vp > PAR_MIN)
    for (int bt = 0; bt < BT; bt++) {
        real *l = logits + (size_t)bt * Vp;
        real mx = l[0];
        for (int i = 1; i < V; i++) if (l[i] > mx) mx = l[i];
        int tg = targets[bt];
        real ltg = l[tg] - mx;
        double sum = 0;
        if (dloss != 0) {
            /* training: exponentiate in place once (a vectorised loop), sum in order, then dlogits */
            for (int i = 0; i < V; i++) l[i] = REAL_EXPV(l[i] - mx);
            for (int i = 0; i < V; i++) sum += l[i];
            real inv = (real)(1.0 / sum);
            for (int i = 0; i < V; i++) l[i] = (l[i] * inv - (i == tg)) * dloss;
            for (int i = V; i < Vp; i++) l[i] = 0;
        } else {
            for (int i = 0; i < V; i++) sum += REAL_EXPV(l[i] - mx);
        }
        losses[bt] = (real)(log(sum) - (double)ltg);
    }
    double total = 0;
    for (int bt = 0; bt < BT; bt++) total += losses[bt];
    return total / BT;
}
#pragma GCC pop_options

/* --- optimizer ------------------------------------------------------------------------------------ */
double RN(cpu_sumsq)(const real *g, size_t n) {
    size_t chunk = 65536;
    if ((n + chunk - 1) / chunk > SUMSQ_MAX_CHUNKS) chunk = (n + SUMSQ_MAX_CHUNKS - 1) / SUMSQ_MAX_CHUNKS;
    int nchunk = (int)((n + chunk - 1) / chunk);
    double part[SUMSQ_MAX_CHUNKS];
    #pragma omp parallel for schedule(static) if (nchunk > 1)
    for (int k = 0; k < nchunk; k++) {
        size_t i0 = (size_t)k * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
        double s = 0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        part[k] = s;
    }
    double total = 0;
    for (int k = 0; k < nchunk; k++) total += part[k];
    return total;
}

void RN(cpu_adamw)(real *p, const real *g, real *m, real *v, size_t n, float lr, float beta1, float beta2,
                   float eps, float weight_decay, float grad_scale, int t) {
    double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
    real b1 = beta1, b2 = beta2, ib1 = (real)(1.0 / bc1), ib2 = (real)(1.0 / bc2);
    #pragma omp parallel for schedule(static) if (n > PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        real gi = g[i] * grad_scale;
        real mi = b1 * m[i] + (1 - b1) * gi;
        real vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        real mh = mi * ib1, vh = vi * ib2;
        p[i] -= lr * (mh / (REAL_SQRT(vh) + eps) + weight_decay * p[i]);
    }
}

int RN(cpu_model_alloc)(size_t np, size_t nacts, size_t ngacts, real **params, real **grads, real **m, real **v,
                        real **acts, real **dacts) {
    if (!(*params = calloc(np, sizeof(real))) || !(*grads = calloc(np, sizeof(real))) ||
        !(*m = calloc(np, sizeof(real))) || !(*v = calloc(np, sizeof(real))) ||
        !(*acts = calloc(nacts, sizeof(real))) || !(*dacts = calloc(ngacts, sizeof(real))))
        return -1;
    return 0;
}

void RN(cpu_point_tensors)(real *mem, const size_t *sizes, real **ptrs, int n) {
    for (int i = 0; i < n; i++) { ptrs[i] = sizes[i] ? mem : NULL; mem += sizes[i]; }
}
