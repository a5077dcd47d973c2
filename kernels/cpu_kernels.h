/* cpu_kernels.h — the CPU reference kernels of the GPT-2 layers (llm.c train_gpt2.c conventions).
 *
 * These are the "CPU twins" every CUDA kernel is checked against (float32). Layout conventions:
 *   activations are row-major (B,T,C); weights are (OC,IC) row-major so out = inp · Wᵀ + b;
 *   qkv is (B,T,3C) with rows [Q | K | V]; head h of a layer with NH heads uses columns
 *   [h·hs, (h+1)·hs) of each of Q, K, V where hs = C/NH.
 * Backward functions ACCUMULATE (+=) into every d-parameter and d-input they are given, like llm.c,
 * so callers zero gradients once per update. Forward functions overwrite their outputs.
 * Every reduction has a fixed order independent of the thread count, so results are bitwise
 * reproducible run to run (the same job twice gives identical metrics).
 * Matmuls go through cblas_sgemm (OpenBLAS); attention and pointwise loops use OpenMP.
 *
 * With PRISM_REAL_DOUBLE (see real.h) the same functions exist in double precision as NAME_f64.
 */
#ifndef PRISM_CPU_KERNELS_H
#define PRISM_CPU_KERNELS_H
#include "real.h"
#include <stddef.h>

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:].  out (B,T,C), inp (B,T), wte (Vp,C), wpe (maxT,C). */
void RN(cpu_encoder_forward)(real *out, const int *inp, const real *wte, const real *wpe, int B, int T, int C);
/* dwte[inp[b,t]] += dout[b,t]; dwpe[t] += dout[b,t]. */
void RN(cpu_encoder_backward)(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T, int C);
/* dwte[inp[b,t]] += dout[b,t] alone (the token-embedding half of the above; the Llama-style embedding's backward). */
void RN(cpu_wte_backward)(real *dwte, const real *dout, const int *inp, int B, int T, int C);

/* out = (inp - mean) * rstd * w + b over C; mean, rstd (B*T) saved for backward. eps 1e-5. */
void RN(cpu_layernorm_forward)(real *out, real *mean, real *rstd, const real *inp, const real *weight,
                               const real *bias, int B, int T, int C);
void RN(cpu_layernorm_backward)(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                                const real *weight, const real *mean, const real *rstd, int B, int T, int C);

/* out (B,T,OC) = inp (B,T,C) · weight (OC,C)ᵀ + bias (OC, may be NULL). */
void RN(cpu_matmul_forward)(real *out, const real *inp, const real *weight, const real *bias,
                            int B, int T, int C, int OC);
/* dinp += dout · weight; dweight += doutᵀ · inp; dbias += Σ_bt dout (dbias may be NULL). */
void RN(cpu_matmul_backward)(real *dinp, real *dweight, real *dbias, const real *dout, const real *inp,
                             const real *weight, int B, int T, int C, int OC);

/* Causal self-attention with NH heads of size C/NH (NH divides C; different per layer is fine).
 *   out (B,T,C): heads concatenated; att (B,NH,T,T): softmax probabilities, row t zero for s > t
 *   (saved for backward); qkv (B,T,3C). Scale 1/sqrt(hs). */
void RN(cpu_attention_forward)(real *out, real *att, const real *qkv, int B, int T, int C, int NH);
/* dqkv += ...; datt (B,NH,T,T) is scratch (overwritten). */
void RN(cpu_attention_backward)(real *dqkv, real *datt, const real *dout, const real *qkv, const real *att,
                                int B, int T, int C, int NH);
/* Paper's attention distance for one layer: returns Σ over the B sequences of
 * mean over heads and query positions t in [T/2, T) of Σ_{s<=t} att[t,s]·|t−s|. Fixed-order sum. */
double RN(cpu_attention_distance)(const real *att, int B, int T, int NH);

/* GELU, tanh approximation. out, inp (N). */
void RN(cpu_gelu_forward)(real *out, const real *inp, size_t N);
void RN(cpu_gelu_backward)(real *dinp, const real *inp, const real *dout, size_t N);

/* out = a + b (N). */
void RN(cpu_residual_forward)(real *out, const real *a, const real *b, size_t N);
/* da += dout; db += dout. */
void RN(cpu_residual_backward)(real *da, real *db, const real *dout, size_t N);

/* Fused classifier: from logits (B,T,Vp) computes per-position losses (B*T) = −log softmax(logits[:V])[target]
 * and, when dloss != 0, overwrites logits in place with dlogits = (softmax − onehot)·dloss (padded columns
 * V..Vp set to 0). Probabilities are never kept. Returns the fixed-order mean of losses. */
double RN(cpu_crossentropy_softmax)(real *logits, real *losses, const int *targets, int B, int T, int V, int Vp,
                                    real dloss);

/* Sum of squares of g (n), as a fixed-order sum of fixed-size chunks (deterministic). */
double RN(cpu_sumsq)(const real *g, size_t n);

/* AdamW on one tensor: bias-corrected with t (>= 1); grad multiplied by grad_scale first (clipping).
 * weight_decay applied decoupled (p -= lr·wd·p) — pass 0 for biases and LayerNorm. */
void RN(cpu_adamw)(real *p, const real *g, real *m, real *v, size_t n, float lr, float beta1, float beta2,
                   float eps, float weight_decay, float grad_scale, int t);

/* The memory of one CPU model (gpt2.c, llama.c): parameters, their gradients and the AdamW moments (np each),
 * activations (nacts) and activation gradients (ngacts), one zeroed allocation per group. Returns 0, or -1
 * when an allocation failed; the groups allocated before it stay set (the model's release frees them). */
int RN(cpu_model_alloc)(size_t np, size_t nacts, size_t ngacts, real **params, real **grads, real **m, real **v,
                        real **acts, real **dacts);
/* The pointer table over one group: ptrs[i] = mem + sizes[0] + ... + sizes[i-1], NULL where sizes[i] is 0. */
void RN(cpu_point_tensors)(real *mem, const size_t *sizes, real **ptrs, int n);
#endif
