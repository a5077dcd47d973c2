/* llama_kernels.c — RMSNorm, RoPE, SwiGLU and the position-free embedding on the CPU (see llama_kernels.h).
 *
 * Design: the same shape as cpu_kernels.c — flat loops, OpenMP split by output element, per-row sums in
 * double, weight gradients reduced in fixed channel chunks so results never depend on the thread count.
 * RoPE computes each (position, pair) angle once in double and applies it to every batch row and head, so
 * the trigonometry costs T·d/2 per layer, not B·T·C. The double build (real.h) serves the gradient check.
 */
#include "llama_kernels.h"
#include "cpu_kernels.h"
#include <math.h>
#include <string.h>

#define LK_PAR_MIN 32768

void RN(cpu_embedding_forward)(real *out, const int *inp, const real *wte, int B, int T, int C) {
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > LK_PAR_MIN)
    for (size_t bt = 0; bt < (size_t)B * T; bt++)
        memcpy(out + bt * C, wte + (size_t)inp[bt] * C, C * sizeof(real));
}

void RN(cpu_embedding_backward)(real *dwte, const real *dout, const int *inp, int B, int T, int C) {
    RN(cpu_wte_backward)(dwte, dout, inp, B, T, C);
}

void RN(cpu_rmsnorm_forward)(real *out, real *rstd, const real *inp, const real *weight, int B, int T, int C) {
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > LK_PAR_MIN)
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
        const real *x = inp + bt * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        real s = (real)(1.0 / sqrt(ss / C + LLAMA_RMS_EPS));
        real *o = out + bt * C;
        for (int c = 0; c < C; c++) o[c] = x[c] * s * weight[c];
        rstd[bt] = s;
    }
}

void RN(cpu_rmsnorm_backward)(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight,
                              const real *rstd, int B, int T, int C) {
    size_t BT = (size_t)B * T;
    /* y = x·s·w, s = (mean x² + eps)^(-1/2):  dx = s·(w⊙dy) − x·s³·mean(x ⊙ w⊙dy) */
    #pragma omp parallel for schedule(static) if (BT * C > LK_PAR_MIN)
    for (size_t bt = 0; bt < BT; bt++) {
        const real *d = dout + bt * C, *x = inp + bt * C;
        real s = rstd[bt];
        double dot = 0;
        for (int c = 0; c < C; c++) dot += (double)weight[c] * d[c] * x[c];
        real k = (real)(dot / C) * s * s * s;
        real *di = dinp + bt * C;
        for (int c = 0; c < C; c++) di[c] += s * weight[c] * d[c] - x[c] * k;
    }
    int nchunk = (C + 15) / 16;
    #pragma omp parallel for schedule(static) if (BT * C > LK_PAR_MIN)
    for (int k = 0; k < nchunk; k++) {
        int c0 = k * 16, c1 = c0 + 16 < C ? c0 + 16 : C;
        real dw[16] = {0};
        for (size_t bt = 0; bt < BT; bt++) {
            const real *d = dout + bt * C, *x = inp + bt * C;
            real s = rstd[bt];
            for (int c = c0; c < c1; c++) dw[c - c0] += x[c] * s * d[c];
        }
        for (int c = c0; c < c1; c++) dweight[c] += dw[c - c0];
    }
}

/* Rotates the Q and K pairs of every head by sign·angle. */
static void rope_apply(real *qkv, int B, int T, int C, int NH, double theta, double sign) {
    int d = C / NH, half = d / 2;
    size_t C3 = 3 * (size_t)C;
    #pragma omp parallel for schedule(static) if ((size_t)B * T * C > LK_PAR_MIN)
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            double ang = sign * t * pow(theta, -2.0 * i / d);
            real cs = (real)cos(ang), sn = (real)sin(ang);
            for (int b = 0; b < B; b++) {
                real *row = qkv + ((size_t)b * T + t) * C3;
                for (int part = 0; part < 2; part++)         /* Q then K */
                    for (int h = 0; h < NH; h++) {
                        real *x = row + (size_t)part * C + (size_t)h * d;
                        real a = x[i], bb = x[i + half];
                        x[i] = a * cs - bb * sn;
                        x[i + half] = a * sn + bb * cs;
                    }
            }
        }
}

void RN(cpu_rope_forward)(real *qkv, int B, int T, int C, int NH, double theta) {
    rope_apply(qkv, B, T, C, NH, theta, 1.0);
}

void RN(cpu_rope_backward)(real *dqkv, int B, int T, int C, int NH, double theta) {
    rope_apply(dqkv, B, T, C, NH, theta, -1.0);
}

static inline real sigm(real g) { return 1 / (1 + REAL_EXP(-g)); }

void RN(cpu_swiglu_forward)(real *out, const real *up, const real *gate, size_t N) {
    #pragma omp parallel for schedule(static) if (N > LK_PAR_MIN)
    for (size_t i = 0; i < N; i++) {
        real g = gate[i];
        out[i] = up[i] * g * sigm(g);
    }
}

void RN(cpu_swiglu_backward)(real *dup, real *dgate, const real *dout, const real *up, const real *gate, size_t N) {
    #pragma omp parallel for schedule(static) if (N > LK_PAR_MIN)
    for (size_t i = 0; i < N; i++) {
        real g = gate[i], s = sigm(g), silu = g * s;
        dup[i] += dout[i] * silu;
        dgate[i] += dout[i] * up[i] * (s + silu * (1 - s));
    }
}
