/* flash_attention.h — the CPU twin of the fused causal attention in kernels/cuda/flash_attention.cu.
 *
 * Same interface semantics as the GPU kernels: the forward keeps only the per-row log-sum-exp, the backward
 * recomputes the probabilities from it. Layouts as cpu_kernels.h: qkv (B,T,3C) with rows [Q | K | V], head h of
 * NH using columns [h*hs, (h+1)*hs) of each, hs = C/NH; out, dout (B,T,C); lse (B,NH,T).
 * Plain loops (no BLAS): it is the reference for the fused kernels' tests, not a fast path; the CPU engine keeps
 * cpu_attention_forward/backward. With PRISM_REAL_DOUBLE (real.h) the names get the _f64 suffix.
 */
#ifndef PRISM_FLASH_ATTENTION_H
#define PRISM_FLASH_ATTENTION_H
#include "real.h"

/* out = softmax(q k^T / sqrt(hs), causal) v per head; lse[b,h,t] = log sum_{s<=t} exp(q_t.k_s / sqrt(hs)). */
void RN(cpu_flash_attention_forward)(real *out, real *lse, const real *qkv, int B, int T, int C, int NH);
/* dqkv += the gradient through attention, from dout, the forward's qkv, out and lse (P = exp(S - lse) and
 * delta = rowsum(dout * out) are recomputed; nothing else is kept from the forward). */
void RN(cpu_flash_attention_backward)(real *dqkv, const real *dout, const real *qkv, const real *out, const real *lse,
                                      int B, int T, int C, int NH);
#endif
