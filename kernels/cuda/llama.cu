/* kernels/cuda/llama.cu — the Llama-style model's kernels: position-free embedding, RMSNorm (alone and fused
 * with the residual add, as LayerNorm is), RoPE on q and k inside the (B,T,3C) qkv buffer, the SwiGLU gate;
 * forward and backward of each (twins: kernels/llama_kernels.h).
 *
 * RMSNorm: one warp per row, sums in float32; the fused version writes res = a + b rounded to floatX and
 * normalises those rounded values (bit-equal to the two separate kernels). Backward: one warp per row for dinp
 * (+=), dweight summed per block in shared memory then one global atomic per column per block.
 * RoPE: one thread per (row, head, pair) of Q and of K, rotating in place; the angle t·θ^(−2i/d) and its sine
 * and cosine are computed in double (t·freq reaches ~1e3 rad, beyond fast single-precision sin/cos), so the
 * kernel composes with whichever attention kernel reads qkv next. Backward rotates dq, dk by −angle in place.
 * Training's fused attention applies RoPE itself (flash_attention.cu, the _rope entry points, same angles);
 * this kernel serves the materialised attention.cu paths (a head above 256, eval's D_l) and the tests.
 * SwiGLU: pointwise, float32 arithmetic, sigmoid through expf.
 */
#include "cuda_common.cuh"
#include "llama_kernels_cuda.h"

#define RMS_EPS 1e-5f

__global__ void k_embed_fwd(floatX *out, const int *inp, const floatX *wte, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * T * C) return;
    size_t bt = i / C;
    out[i] = wte[(size_t)inp[bt] * C + (i % C)];
}

template <bool FUSED>
__global__ void k_rmsnorm_fwd(floatX *res, floatX *out, float *rstd, const floatX *a, const floatX *b,
                              const floatX *w, int N, int C) {
    int warps = blockDim.x >> 5;
    int row = blockIdx.x * warps + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    size_t off = (size_t)row * C;
    const floatX *x = FUSED ? res + off : a + off;
    float q = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float v = norm_input<FUSED>(res, a, b, off + c);
        q += v * v;
    }
    float rs = rsqrtf(warp_sum(q) / C + RMS_EPS);
    for (int c = lane; c < C; c += 32) out[off + c] = fx(xf(x[c]) * rs * xf(w[c]));
    if (lane == 0 && rstd) rstd[row] = rs;
}

__global__ void k_rmsnorm_bwd(floatX *dinp, float *dw, const floatX *dout, const floatX *inp, const floatX *w,
                              const float *rstd, int N, int C) {
    extern __shared__ float sdw[];   /* [C] */
    for (int c = threadIdx.x; c < C; c += blockDim.x) sdw[c] = 0.0f;
    __syncthreads();
    int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < N; row += gridDim.x * warps) {
        size_t off = (size_t)row * C;
        float rs = rstd[row], dot = 0.0f;
        for (int c = lane; c < C; c += 32) dot += xf(w[c]) * xf(dout[off + c]) * xf(inp[off + c]);
        float k = warp_sum(dot) / C * rs * rs * rs;
        for (int c = lane; c < C; c += 32) {
            float g = xf(dout[off + c]), x = xf(inp[off + c]);
            atomicAdd(&sdw[c], g * x * rs);
            dinp[off + c] = fx(xf(dinp[off + c]) + rs * xf(w[c]) * g - x * k);
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&dw[c], sdw[c]);
}

/* one thread per (b, t, part in {Q, K}, head, pair i < d/2) */
__global__ void k_rope(floatX *qkv, int B, int T, int C, int NH, double theta, double sign) {
    int d = C / NH, half = d / 2;
    size_t per_row = (size_t)2 * NH * half;   /* = C */
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * T * per_row) return;
    size_t bt = i / per_row;
    int r = (int)(i % per_row);
    int part = r / (NH * half), h = (r / half) % NH, p = r % half;
    int t = (int)(bt % T);
    double ang = sign * (double)t * pow(theta, -2.0 * p / d);
    float cs = (float)cos(ang), sn = (float)sin(ang);
    floatX *x = qkv + bt * 3 * (size_t)C + (size_t)part * C + (size_t)h * d;
    float a = xf(x[p]), b = xf(x[p + half]);
    x[p] = fx(a * cs - b * sn);
    x[p + half] = fx(a * sn + b * cs);
}

__global__ void k_swiglu_fwd(floatX *out, const floatX *up, const floatX *gate, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = xf(gate[i]);
    out[i] = fx(xf(up[i]) * g / (1.0f + expf(-g)));
}

__global__ void k_swiglu_bwd(floatX *dup, floatX *dgate, const floatX *dout, const floatX *up, const floatX *gate, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = xf(gate[i]), s = 1.0f / (1.0f + expf(-g)), silu = g * s, d = xf(dout[i]);
    dup[i] = fx(d * silu);
    dgate[i] = fx(d * xf(up[i]) * (s + silu * (1.0f - s)));
}

extern "C" int prism_cuda_embedding_forward(void *out, const int *inp, const void *wte, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (!n) return 0;
    k_embed_fwd<<<pcu_blocks(n, 256), 256>>>((floatX *)out, inp, (const floatX *)wte, B, T, C);
    PCU_CHECK_LAUNCH("embedding_forward");
    return 0;
}

extern "C" int prism_cuda_rmsnorm_forward(void *out, float *rstd, const void *inp, const void *w, int N, int C) {
    if (N <= 0) return 0;
    const int threads = 256, rows = threads / 32;
    k_rmsnorm_fwd<false><<<pcu_blocks((size_t)N, rows), threads>>>(NULL, (floatX *)out, rstd, (const floatX *)inp,
                                                                    NULL, (const floatX *)w, N, C);
    PCU_CHECK_LAUNCH("rmsnorm_forward");
    return 0;
}

extern "C" int prism_cuda_residual_rmsnorm_forward(void *res, void *out, float *rstd, const void *a, const void *b,
                                                   const void *w, int N, int C) {
    if (N <= 0) return 0;
    const int threads = 256, rows = threads / 32;
    k_rmsnorm_fwd<true><<<pcu_blocks((size_t)N, rows), threads>>>((floatX *)res, (floatX *)out, rstd, (const floatX *)a,
                                                                   (const floatX *)b, (const floatX *)w, N, C);
    PCU_CHECK_LAUNCH("residual_rmsnorm_forward");
    return 0;
}

extern "C" int prism_cuda_rmsnorm_backward(void *dinp, float *dw, const void *dout, const void *inp, const void *w,
                                           const float *rstd, int N, int C) {
    if (N <= 0) return 0;
    size_t shmem = (size_t)C * sizeof(float);
    if (shmem > 48 * 1024) return pcu_fail_msg("rmsnorm_backward", "C too large (max 12288)");
    const int threads = 256, rows = threads / 32;
    unsigned grid = pcu_blocks((size_t)N, rows);
    unsigned cap = (unsigned)(g_pcu.sms > 0 ? 2 * g_pcu.sms : 264);
    if (grid > cap) grid = cap;
    k_rmsnorm_bwd<<<grid, threads, shmem>>>((floatX *)dinp, dw, (const floatX *)dout, (const floatX *)inp,
                                            (const floatX *)w, rstd, N, C);
    PCU_CHECK_LAUNCH("rmsnorm_backward");
    return 0;
}

static thread_local int rope_calls;   /* rope_forward + rope_backward calls that launched, this thread */
extern "C" int prism_cuda_rope_calls(void) { return rope_calls; }

static int rope_launch(void *qkv, int B, int T, int C, int NH, double theta, double sign, const char *where) {
    if (NH < 1 || C % NH || (C / NH) % 2) return pcu_fail_msg(where, "head size C/NH must be a whole even number");
    size_t n = (size_t)B * T * C;
    if (!n) return 0;
    k_rope<<<pcu_blocks(n, 256), 256>>>((floatX *)qkv, B, T, C, NH, theta, sign);
    PCU_CHECK_LAUNCH(where);
    rope_calls++;
    return 0;
}

extern "C" int prism_cuda_rope_forward(void *qkv, int B, int T, int C, int NH, double theta) {
    return rope_launch(qkv, B, T, C, NH, theta, 1.0, "rope_forward");
}

extern "C" int prism_cuda_rope_backward(void *dqkv, int B, int T, int C, int NH, double theta) {
    return rope_launch(dqkv, B, T, C, NH, theta, -1.0, "rope_backward");
}

extern "C" int prism_cuda_swiglu_forward(void *out, const void *up, const void *gate, size_t n) {
    if (!n) return 0;
    k_swiglu_fwd<<<pcu_blocks(n, 256), 256>>>((floatX *)out, (const floatX *)up, (const floatX *)gate, n);
    PCU_CHECK_LAUNCH("swiglu_forward");
    return 0;
}

extern "C" int prism_cuda_swiglu_backward(void *dup, void *dgate, const void *dout, const void *up, const void *gate,
                                          size_t n) {
    if (!n) return 0;
    k_swiglu_bwd<<<pcu_blocks(n, 256), 256>>>((floatX *)dup, (floatX *)dgate, (const floatX *)dout, (const floatX *)up,
                                              (const floatX *)gate, n);
    PCU_CHECK_LAUNCH("swiglu_backward");
    return 0;
}
