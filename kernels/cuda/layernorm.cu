/* kernels/cuda/layernorm.cu — LayerNorm forward/backward, residual add, and the fused residual+LayerNorm
 * forward (twins: layernorm_*, residual_forward in kernels/cpu_kernels.h). eps = 1e-5, as GPT-2.
 *
 * Forward: one warp per row; lane j owns columns j, j+32, ...; two passes over the row (mean, then the
 * centred variance, which is more accurate than E[x^2]-mean^2), all in float32. The fused version first
 * writes res = a + b rounded to floatX and normalises those rounded values, so it equals the two separate
 * kernels bit for bit; each lane only re-reads what it wrote itself.
 * Backward: one warp per row for dinp (+=); dweight/dbias are summed per block in shared memory
 * (float atomics on shared memory, then one global float atomic per column per block).
 */
#include "cuda_common.cuh"

#define LN_EPS 1e-5f

template <bool FUSED>
__global__ void k_layernorm_fwd(floatX *res, floatX *out, float *mean, float *rstd, const floatX *a, const floatX *b,
                                const floatX *w, const floatX *bias, int N, int C) {
    int warps = blockDim.x >> 5;
    int row = blockIdx.x * warps + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    size_t off = (size_t)row * C;
    const floatX *x = FUSED ? res + off : a + off;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float v;
        if (FUSED) {
            floatX r = fx(xf(a[off + c]) + xf(b[off + c]));
            res[off + c] = r;
            v = xf(r);
        } else {
            v = xf(x[c]);
        }
        s += v;
    }
    float m = warp_sum(s) / C;
    float q = 0.0f;
    for (int c = lane; c < C; c += 32) { float d = xf(x[c]) - m; q += d * d; }
    float rs = rsqrtf(warp_sum(q) / C + LN_EPS);
    for (int c = lane; c < C; c += 32) {
        float n = (xf(x[c]) - m) * rs;
        out[off + c] = fx(n * xf(w[c]) + xf(bias[c]));
    }
    if (lane == 0) {
        if (mean) mean[row] = m;
        if (rstd) rstd[row] = rs;
    }
}

__global__ void k_layernorm_bwd(floatX *dinp, float *dw, float *db, const floatX *dout, const floatX *inp,
                                const floatX *w, const float *mean, const float *rstd, int N, int C) {
    extern __shared__ float sh[];   /* [2*C]: dw partials then db partials */
    float *sdw = sh, *sdb = sh + C;
    for (int c = threadIdx.x; c < 2 * C; c += blockDim.x) sh[c] = 0.0f;
    __syncthreads();
    int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < N; row += gridDim.x * warps) {
        size_t off = (size_t)row * C;
        float m = mean[row], rs = rstd[row];
        float s1 = 0.0f, s2 = 0.0f;   /* sum dnorm, sum dnorm*norm */
        for (int c = lane; c < C; c += 32) {
            float n = (xf(inp[off + c]) - m) * rs;
            float d = xf(w[c]) * xf(dout[off + c]);
            s1 += d;
            s2 += d * n;
        }
        s1 = warp_sum(s1) / C;
        s2 = warp_sum(s2) / C;
        for (int c = lane; c < C; c += 32) {
            float g = xf(dout[off + c]);
            float n = (xf(inp[off + c]) - m) * rs;
            float d = xf(w[c]) * g;
            atomicAdd(&sdw[c], g * n);
            atomicAdd(&sdb[c], g);
            float di = (d - s1 - n * s2) * rs;
            dinp[off + c] = fx(xf(dinp[off + c]) + di);
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        atomicAdd(&dw[c], sdw[c]);
        atomicAdd(&db[c], sdb[c]);
    }
}

__global__ void k_residual(floatX *out, const floatX *a, const floatX *b, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fx(xf(a[i]) + xf(b[i]));
}

extern "C" int prism_cuda_layernorm_forward(void *out, float *mean, float *rstd, const void *inp, const void *w,
                                            const void *b, int N, int C) {
    if (N <= 0) return 0;
    const int threads = 256, rows = threads / 32;
    k_layernorm_fwd<false><<<pcu_blocks((size_t)N, rows), threads>>>(NULL, (floatX *)out, mean, rstd,
        (const floatX *)inp, NULL, (const floatX *)w, (const floatX *)b, N, C);
    PCU_CHECK_LAUNCH("layernorm_forward");
    return 0;
}

extern "C" int prism_cuda_residual_layernorm_forward(void *res, void *ln, float *mean, float *rstd, const void *a,
                                                     const void *b, const void *w, const void *bias, int N, int C) {
    if (N <= 0) return 0;
    const int threads = 256, rows = threads / 32;
    k_layernorm_fwd<true><<<pcu_blocks((size_t)N, rows), threads>>>((floatX *)res, (floatX *)ln, mean, rstd,
        (const floatX *)a, (const floatX *)b, (const floatX *)w, (const floatX *)bias, N, C);
    PCU_CHECK_LAUNCH("residual_layernorm_forward");
    return 0;
}

extern "C" int prism_cuda_layernorm_backward(void *dinp, float *dw, float *db, const void *dout, const void *inp,
                                             const void *w, const float *mean, const float *rstd, int N, int C) {
    if (N <= 0) return 0;
    size_t shmem = 2 * (size_t)C * sizeof(float);
    if (shmem > 48 * 1024) return pcu_fail_msg("layernorm_backward", "C too large (max 6144)");
    const int threads = 256, rows = threads / 32;
    unsigned grid = pcu_blocks((size_t)N, rows);
    unsigned cap = (unsigned)(g_pcu.sms > 0 ? 2 * g_pcu.sms : 264);
    if (grid > cap) grid = cap;
    k_layernorm_bwd<<<grid, threads, shmem>>>((floatX *)dinp, dw, db, (const floatX *)dout, (const floatX *)inp,
                                              (const floatX *)w, mean, rstd, N, C);
    PCU_CHECK_LAUNCH("layernorm_backward");
    return 0;
}

extern "C" int prism_cuda_residual_forward(void *out, const void *a, const void *b, size_t n) {
    if (!n) return 0;
    k_residual<<<pcu_blocks(n, 256), 256>>>((floatX *)out, (const floatX *)a, (const floatX *)b, n);
    PCU_CHECK_LAUNCH("residual_forward");
    return 0;
}

extern "C" int prism_cuda_add_inplace(void *dst, const void *src, size_t n) {
    if (!n) return 0;
    k_residual<<<pcu_blocks(n, 256), 256>>>((floatX *)dst, (const floatX *)dst, (const floatX *)src, n);
    PCU_CHECK_LAUNCH("add_inplace");
    return 0;
}
