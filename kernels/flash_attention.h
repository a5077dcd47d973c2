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
/* The same two with RoPE on q and k as they are read (the twin of prism_cuda_flash_attention_forward_rope and
 * _backward_rope): attention over cpu_rope_forward(qkv) (llama_kernels.h: head size hs = C/NH, even; pair
 * (i, i+hs/2) at position t rotated by t·theta^(−2i/hs)), qkv itself left un-rotated; the backward adds to dqkv the
 * gradient w.r.t. the un-rotated qkv (dq, dk rotated back by cpu_rope_backward). The rotation is the engine's own
 * code, so the values match the CPU model exactly. theta 0: exactly the functions above. Abort when out of memory
 * (a temporary copy of qkv, and of dqkv for the backward). */
void RN(cpu_flash_attention_forward_rope)(real *out, real *lse, const real *qkv, int B, int T, int C, int NH,
                                          double theta);
void RN(cpu_flash_attention_backward_rope)(real *dqkv, const real *dout, const real *qkv, const real *out,
                                           const real *lse, int B, int T, int C, int NH, double theta);
#endif
