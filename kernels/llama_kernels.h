/* llama_kernels.h — the CPU reference kernels the Llama-style model adds to cpu_kernels.h: token embedding
 * without positions, RMSNorm, rotary position embedding (RoPE) and the SwiGLU gate.
 *
 * Same conventions as cpu_kernels.h: row-major (B,T,C) activations, forward overwrites, backward
 * ACCUMULATES into d-parameters and d-inputs (RoPE's backward is the exception: it rotates dq/dk in place),
 * fixed reduction order independent of the thread count. These are the CPU twins of kernels/cuda/llama.cu.
 * With PRISM_REAL_DOUBLE (real.h) the same functions exist in double precision as NAME_f64.
 */
#ifndef PRISM_LLAMA_KERNELS_H
#define PRISM_LLAMA_KERNELS_H
#include "real.h"
#include <stddef.h>

#define LLAMA_RMS_EPS 1e-5

/* out[b,t,:] = wte[inp[b,t],:].  out (B,T,C), wte (Vp,C). */
void RN(cpu_embedding_forward)(real *out, const int *inp, const real *wte, int B, int T, int C);
/* dwte[inp[b,t]] += dout[b,t] (split by channel, positions summed in (b,t) order). */
void RN(cpu_embedding_backward)(real *dwte, const real *dout, const int *inp, int B, int T, int C);

/* out = x / sqrt(mean(x²) + 1e-5) · w over C; rstd (B*T) saved for backward. */
void RN(cpu_rmsnorm_forward)(real *out, real *rstd, const real *inp, const real *weight, int B, int T, int C);
/* dinp += ...; dweight += Σ_bt dout·x·rstd. */
void RN(cpu_rmsnorm_backward)(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight,
                              const real *rstd, int B, int T, int C);

/* RoPE in place on the Q and K thirds of qkv (B,T,3C) for NH heads of size d = C/NH (d even): in each head,
 * for i < d/2 the pair (x_i, x_{i+d/2}) at position t rotates by angle t·θ^(−2i/d). */
void RN(cpu_rope_forward)(real *qkv, int B, int T, int C, int NH, double theta);
/* The transpose (rotation by −angle), in place on the Q and K thirds of dqkv (B,T,3C). */
void RN(cpu_rope_backward)(real *dqkv, int B, int T, int C, int NH, double theta);

/* out = up ⊙ silu(gate), silu(g) = g·σ(g).  (N) each. */
void RN(cpu_swiglu_forward)(real *out, const real *up, const real *gate, size_t N);
/* dup += dout·silu(gate); dgate += dout·up·silu'(gate). */
void RN(cpu_swiglu_backward)(real *dup, real *dgate, const real *dout, const real *up, const real *gate, size_t N);
#endif
