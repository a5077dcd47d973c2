/* kernels/cuda/attention_cudnn.h — causal attention through cuDNN's graph API, and the per-layer choice between it
 * and the fused kernel (flash_attention.cu). C-callable; part of libprism_cuda / prism-cuda.so.
 *
 * Same tensors as prism_cuda_flash_attention_forward/_backward (cuda_kernels.h): qkv (B,T,3C) with rows [Q|K|V],
 * head h of NH at columns h*hs..(h+1)*hs of each, out/dout (B,T,C), lse (B,NH,T) float32 = log-sum-exp of each
 * query row's scaled scores over keys s <= t (cuDNN's softmax "stats" are exactly that), dqkv (B,T,3C) overwritten.
 * cuDNN reads Q, K, V in place through strides (no permute) and writes O, dQ, dK, dV the same way.
 *
 * Availability: built only where cudnn.h was found (PRISM_HAVE_CUDNN; the emulator always has its shim,
 * tests/cudaemu/cudnn.h). libcudnn.so.9 is opened at run time (dlopen), so prism-cuda.so loads on machines without
 * it. cuDNN runs only in the bf16 build, with cuDNN >= 9.0, on sm_80+, head sizes hs % 8 == 0 up to 256 (backward
 * up to 128 below sm_90). One execution plan per (direction, B, T, C, NH) is built on first use and cached per
 * thread with its workspace; prism_cuda_cudnn_shutdown frees them (and runs by itself at thread exit).
 *
 * Errors: every cuDNN function returns 0 or -1 with prism_cuda_last_error() set ("cuDNN <call>: <status>: <why>").
 */
#ifndef PRISM_ATTENTION_CUDNN_H
#define PRISM_ATTENTION_CUDNN_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
struct model_config;

/* 1 when cuDNN can run a head of size hs in this build, on this thread's device (after prism_cuda_init), with the
 * cuDNN library found at run time; else 0 with the reason in why (e.g. "cuDNN not built in", "libcudnn.so.9 not
 * found", "head size 100 is not a multiple of 8"). Never fails otherwise. */
int prism_cuda_cudnn_supports(int hs, char *why, size_t whylen);
/* The two passes (bf16 only). 0, or -1 with nothing written that matters (prism_cuda_last_error says why). */
int prism_cuda_cudnn_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int NH);
int prism_cuda_cudnn_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                        const float *lse, int B, int T, int C, int NH);
/* Frees this thread's cuDNN handle, plans and workspace (safe to call any time; the next call rebuilds). */
void prism_cuda_cudnn_shutdown(void);
/* Diagnostics: cuDNN forward/backward executions this thread; plans built (cache misses). */
int prism_cuda_cudnn_calls(void);
int prism_cuda_cudnn_plans_built(void);

/* ---- the per-layer choice ------------------------------------------------------------------------------- */
enum { PRISM_ATTN_AUTO = 0, PRISM_ATTN_FUSED = 1, PRISM_ATTN_CUDNN = 2 };
/* PRISM_ATTENTION's value: NULL or "" -> auto; "auto", "fused", "cudnn" (exact, lower case). 0, or -1 with err
 * naming the bad value and the three good ones. */
int prism_attention_mode_parse(const char *value, int *mode, char *err, size_t errlen);
/* Decides backend[l] (PRISM_ATTN_FUSED or PRISM_ATTN_CUDNN) for every layer with fused[l] set (layers the fused
 * kernel takes; others stay materialised and get PRISM_ATTN_FUSED), from PRISM_ATTENTION: fused -> fused kernel;
 * cudnn -> cuDNN wherever prism_cuda_cudnn_supports(hs) and its plans for (B, T, C, h_l) build, else the fused kernel;
 * auto -> as cudnn, and also only where the start-up self-check passes (cuDNN forward+backward against the fused
 * kernel on random data at this head size, relative error <= 2e-2; cached per head size per thread). Every fallback
 * is ONE line on stderr ("attention: layer L (hs N): cuDNN unavailable (why); fused kernel"), never a failure; a
 * summary line names the choice ("attention: PRISM_ATTENTION=auto: cudnn layers 1-8, fused layers 9-12").
 * summary (may be NULL) gets that summary too. Returns 0, or -1 only for a bad PRISM_ATTENTION (err says so). */
int prism_attention_choose(const struct model_config *cfg, const int *fused, int *backend, char *summary,
                           size_t summarylen, char *err, size_t errlen);
/* Layer l's attention through the chosen backend: cuDNN when backend == PRISM_ATTN_CUDNN, else the fused kernel
 * (prism_cuda_flash_attention_forward/_backward; qkv already rotated where RoPE applies). A cuDNN failure at run time
 * logs one line, turns cuDNN off for this thread, and runs the fused kernel instead (same lse, so a forward and
 * backward from different backends agree). delta: the fused backward's scratch (B*NH*T floats). */
int prism_attention_forward(int backend, void *out, float *lse, const void *qkv, int B, int T, int C, int NH);
int prism_attention_backward(int backend, void *dqkv, float *delta, const void *dout, const void *qkv, const void *out,
                             const float *lse, int B, int T, int C, int NH);
#ifdef __cplusplus
}
#endif
#endif
