/* kernels/cuda/cuda_kernels.h — the C-callable contract of the CUDA kernels (libprism_cuda).
 *
 * Every entry point is extern "C" so the C tests, the CUDA model and the worker can call it. Conventions:
 *   - "x" pointers (void *) are device arrays of the build's element type floatX: bf16 by default,
 *     float32 when built with PRECISION=fp32 (-DENABLE_FP32). prism_cuda_precision() names it and
 *     prism_cuda_x_size() gives its size in bytes. Use prism_cuda_upload_x/download_x to convert.
 *   - float * pointers are float32 device arrays (statistics, parameter gradients, optimizer state, losses);
 *     int * pointers are int32 device arrays (tokens).
 *   - All accumulation is in float32. Parameter gradients are float32 and are ACCUMULATED (+=), so the caller
 *     zeroes them once per optimizer step; activation gradients are overwritten unless a function says +=.
 *   - Runtime state is per host thread: call prism_cuda_init in each thread that uses the GPU (one device per
 *     thread; several threads may use different devices at once), and use a device buffer from the thread
 *     whose device it lives on.
 *   - Every function returns 0 or a negative code; on failure prism_cuda_last_error() names the call that
 *     failed and why, and the outputs are unspecified. Everything runs on the default stream, in order;
 *     functions that hand values to the host synchronize.
 *   - Shapes: B batch, T time, C channels, NH heads of this layer (C % NH == 0, head size hs = C/NH, any hs
 *     from 1 up; 32..256 is what the model uses), V real vocab, Vp padded vocab, N = B*T rows.
 */
#ifndef PRISM_CUDA_KERNELS_H
#define PRISM_CUDA_KERNELS_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- runtime (cuda_common.cu) ---------------------------------------------------------------- */
/* Number of usable CUDA devices; 0 when there is none or no driver (never fails, never aborts). */
int prism_cuda_device_count(void);
/* Like prism_cuda_device_count, but tells "no device here" from a broken CUDA: the device count; 0 when there is
 * no device or no NVIDIA driver at all; -1 when the runtime failed otherwise (a driver/runtime mismatch, an
 * initialisation error...), with the CUDA error in prism_cuda_last_error(). Tests and the GPU check call this,
 * so that a broken GPU machine is a failure and never "skipped: no device". */
int prism_cuda_device_probe(void);
/* Select `device`, create the cuBLAS/cuBLASLt handles and workspaces. Idempotent for the same device;
 * 0 or -1 with a message in err (a clear one when there is no device) and in prism_cuda_last_error(). */
int prism_cuda_init(int device, char *err, size_t errlen);
/* Frees the handles and workspaces made by prism_cuda_init (safe to call when not initialised); runs by itself
 * when the thread exits. */
void prism_cuda_shutdown(void);
const char *prism_cuda_last_error(void);
const char *prism_cuda_precision(void);          /* "bf16" or "fp32" */
size_t prism_cuda_x_size(void);                  /* sizeof(floatX) */
const char *prism_cuda_device_name(void);        /* after init; "" before */
void *prism_cuda_malloc(size_t bytes);           /* NULL on failure (message set) */
void prism_cuda_free(void *p);                   /* NULL is fine */
int prism_cuda_memset0(void *p, size_t bytes);
int prism_cuda_upload(void *dst, const void *src, size_t bytes);
int prism_cuda_download(void *dst, const void *src, size_t bytes);
int prism_cuda_copy_d2d(void *dst, const void *src, size_t bytes);
/* float32 host <-> floatX device, with round-to-nearest-even on the way in. */
int prism_cuda_upload_x(void *dst_x, const float *src, size_t n);
int prism_cuda_download_x(float *dst, const void *src_x, size_t n);
/* Device-side conversions (f32 -> floatX and back). */
int prism_cuda_f32_to_x(void *dst_x, const float *src, size_t n);
int prism_cuda_x_to_f32(float *dst, const void *src_x, size_t n);
/* Fill n floatX (or float32) elements with value: the tests poison outputs with NaN this way. */
int prism_cuda_fill_x(void *dst_x, float value, size_t n);
int prism_cuda_fill_f32(float *dst, float value, size_t n);
/* Round a host float32 array to floatX precision in place (identity in the fp32 build). */
void prism_cuda_round_host(float *a, size_t n);
int prism_cuda_sync(void);
/* Peak device memory in use (bytes) since init or the last reset, sampled at prism_cuda_mem_sample(). */
void prism_cuda_mem_reset_peak(void);
void prism_cuda_mem_sample(void);
size_t prism_cuda_mem_peak(void);
/* Wall-clock timer on the device: start/stop with events; returns ms between them (syncs). */
int prism_cuda_timer_start(void);
int prism_cuda_timer_stop_ms(float *ms);

/* ---- encoder.cu: token + position embedding ---------------------------------------------------- */
/* out[B,T,C] = wte[inp[b,t],:] + wpe[t,:]. Tokens must be in [0, Vp). */
int prism_cuda_encoder_forward(void *out, const int *inp, const void *wte, const void *wpe, int B, int T, int C);
/* dwte[inp[b,t],:] += dout[b,t,:]; dwpe[t,:] += sum_b dout[b,t,:]. float32 grads. */
int prism_cuda_encoder_backward(float *dwte, float *dwpe, const void *dout, const int *inp, int B, int T, int C);

/* ---- layernorm.cu: LayerNorm (eps 1e-5), residual add, the fused pair --------------------------- */
/* out[N,C] = (inp - mean) * rstd * w + b; mean[N], rstd[N] float32 (may be NULL). */
int prism_cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp, const void *w, const void *b,
                                 int N, int C);
/* res[N,C] = a + b (rounded to floatX), then ln = LayerNorm(res) as above. */
int prism_cuda_residual_layernorm_forward(void *res, void *ln, float *mean, float *rstd, const void *a, const void *b,
                                          const void *w, const void *bias, int N, int C);
/* dinp += dLN/dinp; dw += sum_rows dout*norm; db += sum_rows dout. */
int prism_cuda_layernorm_backward(void *dinp, float *dw, float *db, const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int N, int C);
/* out[n] = a[n] + b[n]. */
int prism_cuda_residual_forward(void *out, const void *a, const void *b, size_t n);
/* dst[n] += src[n] (activation-gradient accumulation). */
int prism_cuda_add_inplace(void *dst, const void *src, size_t n);

/* ---- matmul.cu: cuBLASLt with bias / GELU epilogues ------------------------------------------- */
/* out[N,OC] = inp[N,C] @ w[OC,C]^T + bias[OC] (bias may be NULL). When pre_gelu != NULL, out gets
 * GELU(tanh)(...) and pre_gelu[N,OC] the value before GELU (cuBLASLt GELU_AUX_BIAS epilogue; needs OC % 8 == 0). */
int prism_cuda_matmul_forward(void *out, void *pre_gelu, const void *inp, const void *w, const void *bias,
                              int N, int C, int OC);
/* dinp[N,C] = dout @ w (or += when accumulate_dinp), dw[OC,C] += dout^T @ inp, dbias[OC] += colsum(dout).
 * dinp, dw, dbias may each be NULL to skip. */
int prism_cuda_matmul_backward(void *dinp, float *dw, float *dbias, const void *dout, const void *inp, const void *w,
                               int N, int C, int OC, int accumulate_dinp);
/* The backward of out = GELU(pre) @ w^T + bias in one go: dinp[N,C] = (dout @ w) * GELU'(pre_gelu) (overwritten;
 * cuBLASLt's DGELU epilogue applies GELU' to the float32 product before rounding; fallback: the product, then
 * prism_cuda_gelu_backward), dw[OC,C] += dout^T @ inp (inp = GELU(pre)), dbias[OC] += colsum(dout). pre_gelu is
 * [N,C] (the forward's pre-activations); dw, dbias may be NULL. */
int prism_cuda_matmul_backward_dgelu(void *dinp, float *dw, float *dbias, const void *dout, const void *inp,
                                     const void *w, const void *pre_gelu, int N, int C, int OC);
/* How many matmul calls in this thread fell back from cuBLASLt to cublasGemmEx (diagnostic). */
int prism_cuda_matmul_fallbacks(void);

/* ---- gelu.cu: GELU, tanh approximation -------------------------------------------------------- */
int prism_cuda_gelu_forward(void *out, const void *inp, size_t n);
/* dinp[n] = gelu'(inp[n]) * dout[n] (overwrite). */
int prism_cuda_gelu_backward(void *dinp, const void *inp, const void *dout, size_t n);

/* ---- attention.cu: causal self-attention with NH heads of size C/NH --------------------------- */
/* Scratch (device bytes) that attention forward/backward need for shapes up to (B, T, C, NHmax). */
size_t prism_cuda_attention_scratch_bytes(int B, int T, int C, int NHmax);
/* qkv[B,T,3C] (rows [Q|K|V], head h uses columns h*hs..(h+1)*hs of each) -> out[B,T,C];
 * att[B,NH,T,T] keeps the softmax (zeros above the diagonal) for the backward pass. */
int prism_cuda_attention_forward(void *out, void *att, const void *qkv, void *scratch, int B, int T, int C, int NH);
/* dqkv[B,T,3C] = gradient (overwrite), from dout[B,T,C], the forward's qkv and att. */
int prism_cuda_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *att, void *scratch,
                                  int B, int T, int C, int NH);

/* The paper's attention distance of one layer from its att[B,NH,T,T]: returns in *out the sum over the B
 * sequences of mean over heads and query positions t in [T/2, T) of sum_{s<=t} att[t,s]*(t-s) (the same
 * definition and summation order over rows as cpu_attention_distance). rows_dev (device) and rows_host
 * (host) hold prism_cuda_attention_distance_rows(B,T,NH) floats each. Syncs. */
size_t prism_cuda_attention_distance_rows(int B, int T, int NH);
int prism_cuda_attention_distance(const void *att, int B, int T, int NH, float *rows_dev, float *rows_host,
                                  double *out);

/* ---- flash_attention.cu: fused causal attention (FlashAttention-2 style), no T*T tensor ------------ */
/* 1 when a head of size hs runs fused (1 <= hs <= 256; 16/32/64/96/128/192/256 are the fast sizes, others are
 * zero-padded to the next of them). Above 256 the fused functions fail: use the materialised ones above. */
int prism_cuda_flash_attention_supports(int hs);
/* qkv[B,T,3C] (as prism_cuda_attention_forward) -> out[B,T,C] and lse[B,NH,T] (float32): the log-sum-exp of each
 * query row's scaled scores q.k/sqrt(hs) over keys s <= t; all that backward needs besides qkv and out. */
int prism_cuda_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int NH);
/* dqkv[B,T,3C] = gradient (overwrite) from dout[B,T,C], the forward's qkv, out and lse; P is recomputed.
 * delta is scratch of B*NH*T float32 (rowsum(dout*out)). */
int prism_cuda_flash_attention_backward(void *dqkv, float *delta, const void *dout, const void *qkv, const void *out,
                                        const float *lse, int B, int T, int C, int NH);
/* How many fused forward/backward calls this thread has made (diagnostic: the model tests check they ran). */
int prism_cuda_flash_attention_calls(void);
/* The same two with RoPE applied where q and k are read (the Llama-style model; theta 0: exactly the two above).
 * qkv is the QKV matmul's output, NOT rotated, and is left as it is: the kernels rotate each Q and K tile as they
 * load it — for head size d = C/NH (even), the pair (x_i, x_{i+d/2}), i < d/2, of q and k at position t rotates by
 * t·theta^(−2i/d) (angle in double, cos/sin rounded to float: the same numbers as prism_cuda_rope_forward in
 * llama_kernels_cuda.h and cpu_rope_forward) — so out and lse are those of attention over rope(q), rope(k), v.
 * The backward's dqkv (overwrite) is the gradient w.r.t. the un-rotated qkv: dq and dk are rotated back before they
 * are written (flash backward + prism_cuda_rope_backward in one). They use this thread's internal scratch for a
 * T·d float32 cos/sin table (grown on demand, freed by prism_cuda_shutdown). Fail (nothing launched) on an odd
 * head size or a theta that is negative, NaN or infinite; otherwise as the two above. */
int prism_cuda_flash_attention_forward_rope(void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                                            double theta);
int prism_cuda_flash_attention_backward_rope(void *dqkv, float *delta, const void *dout, const void *qkv,
                                             const void *out, const float *lse, int B, int T, int C, int NH,
                                             double theta);
/* How many of the fused calls counted by prism_cuda_flash_attention_calls had theta != 0, this thread. */
int prism_cuda_flash_attention_rope_calls(void);

/* ---- cuda_common.cu: CUDA graphs of this thread's stream -------------------------------------- */
/* begin: start capturing this thread's stream (thread-local mode: a host-synchronous call or an allocation from this
 * thread until end fails and invalidates the capture). end: stop, and instantiate what was queued into *exec (NULL
 * and -1 with the reason when the capture was invalidated or instantiation failed; the thread is then not
 * capturing either way). launch: run an instantiated graph on the stream (asynchronous; 0 or -1). free: NULL is
 * fine. scratch_generation: changes whenever the thread's internal scratch (LayerNorm partial sums, the RoPE
 * table) moves, which a graph captured before holds the old address of. graph_launches: successful launches in
 * this thread (diagnostic: tests check that the graph path ran). */
int prism_cuda_graph_begin(void);
int prism_cuda_graph_end(void **exec);
int prism_cuda_graph_launch(void *exec);
void prism_cuda_graph_free(void *exec);
unsigned prism_cuda_scratch_generation(void);
int prism_cuda_graph_launches(void);

/* ---- classifier.cu: fused softmax + cross-entropy (+ dlogits) --------------------------------- */
/* Row n of logits[N,Vp]: losses[n] = logsumexp(logits[n,:V]) - logits[n, targets[n]]. When write_dlogits,
 * logits is overwritten with dloss * (softmax - onehot) for v < V and 0 for V <= v < Vp; probabilities
 * are never stored. */
int prism_cuda_fused_classifier(void *logits, float *losses, const int *targets, int N, int V, int Vp, float dloss,
                                int write_dlogits);

/* ---- adamw.cu: AdamW on float32 master weights, global gradient norm -------------------------- */
/* For i < n: g = grads[i]*grad_scale; m,v updated; master[i] -= lr*(mhat/(sqrt(vhat)+eps) + wd*master[i]);
 * params_x[i] = floatX(master[i]) (params_x may be NULL). t is the 1-based step used for bias correction. */
int prism_cuda_adamw(float *master, void *params_x, const float *grads, float *m, float *v, size_t n, float lr,
                     float beta1, float beta2, float eps, float wd, int t, float grad_scale);
/* *norm_host = sqrt(sum grads[i]^2), summed in a fixed order (deterministic). Syncs. */
int prism_cuda_grad_norm(const float *grads, size_t n, float *norm_host);
/* The same norm left in device memory: norm_dev[0] = sqrt(sum grads[i]^2), same order and bits as above; no sync. */
int prism_cuda_grad_norm_device(const float *grads, size_t n, float *norm_dev);
/* One AdamW launch over a parameter group of ntensors (1..PRISM_CUDA_MAX_TENSORS) tensors laid end to end:
 * tensor i is elements [bounds[i], bounds[i+1]) (bounds[0] = 0, non-decreasing), with weight decay wd when bit i
 * of decay_mask is set and 0 otherwise. The gradient scale is read on the device: grad_clip / *norm_dev when
 * grad_clip > 0 and *norm_dev > grad_clip, else 1 (a NaN norm clips nothing). Same arithmetic as
 * prism_cuda_adamw per element. With zero_grads, grads[i] = 0 afterwards (the next step's zeroing done here). No sync. */
#define PRISM_CUDA_MAX_TENSORS 16
int prism_cuda_adamw_tensors(float *master, void *params_x, float *grads, float *m, float *v, const size_t *bounds,
                             int ntensors, unsigned decay_mask, float lr, float beta1, float beta2, float eps, float wd,
                             int t, const float *norm_dev, float grad_clip, int zero_grads);

#ifdef __cplusplus
}
#endif
#endif
