/* kernels/cuda/llama_kernels_cuda.h — the C-callable contract of the Llama-style model's CUDA kernels
 * (kernels/cuda/llama.cu; CPU twins in kernels/llama_kernels.h). Conventions as cuda_kernels.h: void * are
 * floatX device arrays, float * float32 ones; parameter gradients ACCUMULATE; 0 or -1 with
 * prism_cuda_last_error() set.
 */
#ifndef PRISM_LLAMA_KERNELS_CUDA_H
#define PRISM_LLAMA_KERNELS_CUDA_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* out[B,T,C] = wte[inp[b,t],:]. (Backward: prism_cuda_encoder_backward with dwpe NULL.) */
int prism_cuda_embedding_forward(void *out, const int *inp, const void *wte, int B, int T, int C);
/* out[N,C] = x / sqrt(mean(x²) + 1e-5) · w; rstd[N] float32 (may be NULL). */
int prism_cuda_rmsnorm_forward(void *out, float *rstd, const void *inp, const void *w, int N, int C);
/* res = a + b (rounded to floatX), then out = RMSNorm(res). */
int prism_cuda_residual_rmsnorm_forward(void *res, void *out, float *rstd, const void *a, const void *b,
                                        const void *w, int N, int C);
/* dinp += dRMSNorm/dinp; dw += Σ_rows dout·x·rstd. */
int prism_cuda_rmsnorm_backward(void *dinp, float *dw, const void *dout, const void *inp, const void *w,
                                const float *rstd, int N, int C);
/* RoPE in place on the Q and K thirds of qkv[B,T,3C], NH heads of size d = C/NH (even): pair (i, i+d/2) at
 * position t rotates by t·θ^(−2i/d). Backward: the inverse rotation of dqkv's Q and K thirds, in place. */
int prism_cuda_rope_forward(void *qkv, int B, int T, int C, int NH, double theta);
int prism_cuda_rope_backward(void *dqkv, int B, int T, int C, int NH, double theta);
/* How many rope_forward/rope_backward calls launched in this thread (diagnostic: the model tests check that
 * training's fused layers never take the separate kernel; prism_cuda_flash_attention_forward_rope applies RoPE). */
int prism_cuda_rope_calls(void);
/* out[n] = up·silu(gate). Backward overwrites dup = dout·silu(gate), dgate = dout·up·silu'(gate). */
int prism_cuda_swiglu_forward(void *out, const void *up, const void *gate, size_t n);
int prism_cuda_swiglu_backward(void *dup, void *dgate, const void *dout, const void *up, const void *gate, size_t n);
#ifdef __cplusplus
}
#endif
#endif
