/* kernels/cuda/adamw.cu — AdamW on float32 master weights, and the global gradient norm (twins: adamw and
 * the grad-norm helper in kernels/cpu_kernels.h).
 *
 * AdamW (decoupled weight decay, as llm.c / PyTorch): with g = grad * grad_scale (the clipping factor),
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
 *   p -= lr (mhat / (sqrt(vhat) + eps) + wd p)
 * on the float32 master copy, then the floatX working copy is rounded from it (round to nearest).
 * Bias corrections are computed on the host in double. The norm is a two-pass deterministic reduction:
 * a fixed grid of blocks each sums squares over a grid-stride range into its slot (16-byte loads, four in
 * flight a thread, when the gradients are 16-byte aligned), then one block adds the slots in index order, so
 * the same gradients always give the same bits.
 *
 * The model's optimizer step uses the other pair, which needs no host synchronisation and two passes over the
 * gradients in all: prism_cuda_grad_norm_device leaves the norm on the device, and prism_cuda_adamw_tensors
 * updates every tensor of the parameter group in one launch (a table of tensor bounds and a weight-decay bit
 * per tensor), reads the clipping factor from that norm on the device, and zeroes each gradient once it has
 * read it, so that the next step needs no separate zeroing pass. With n, the bounds and every pointer
 * multiples of 4 floats / 16 bytes, each thread does 4 elements with 16-byte loads and stores.
 */
#include "cuda_common.cuh"
#include <math.h>
#include <string.h>

__global__ void k_adamw(float *master, floatX *px, const float *grads, float *m, float *v, size_t n, float lr,
                        float b1, float b2, float eps, float wd, float c1, float c2, float gs) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = grads[i] * gs;
    float mi = b1 * m[i] + (1.0f - b1) * g;
    float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = master[i];
    float mh = mi / c1, vh = vi / c2;
    p -= lr * (mh / (sqrtf(vh) + eps) + wd * p);
    master[i] = p;
    if (px) px[i] = fx(p);
}

/* part[block] = this block's sum of squares. VEC (g 16-byte aligned): the n/4 float4s grid-stride, four 16-byte
 * loads issued before they are added, and the n % 4 last elements by the first threads of the grid; else one
 * float a thread at a time. Fixed grid and order: fixed bits. */
__device__ __forceinline__ float sq4(const f32x4 &x) { return x.v[0] * x.v[0] + x.v[1] * x.v[1] + x.v[2] * x.v[2] + x.v[3] * x.v[3]; }
template <bool VEC>
__global__ void k_sumsq_partial(float *part, const float *g, size_t n) {
    __shared__ float sh[32];
    float s = 0.0f;
    const size_t stride = (size_t)gridDim.x * blockDim.x, i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (VEC) {
        const size_t n4 = n / 4;
        float a = 0.0f, b = 0.0f;
        size_t i = i0;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            f32x4 x0 = ld_f4(g + 4 * i), x1 = ld_f4(g + 4 * (i + stride)), x2 = ld_f4(g + 4 * (i + 2 * stride)),
                  x3 = ld_f4(g + 4 * (i + 3 * stride));
            a += sq4(x0) + sq4(x1);
            b += sq4(x2) + sq4(x3);
        }
        for (; i < n4; i += stride) a += sq4(ld_f4(g + 4 * i));
        if (i0 < n - 4 * n4) { float t = g[4 * n4 + i0]; b += t * t; }
        s = a + b;
    } else {
        for (size_t i = i0; i < n; i += stride) s += g[i] * g[i];
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

/* the partial sums of grad_norm and grad_norm_device: blocks of 512 threads, at most PCU_RED_BLOCKS */
static unsigned sumsq_partial(const float *grads, size_t n) {
    bool vec = pcu_aligned16(grads);
    unsigned blocks = pcu_blocks(vec ? (n + 3) / 4 : n, 512);
    if (blocks > PCU_RED_BLOCKS) blocks = PCU_RED_BLOCKS;
    if (vec) k_sumsq_partial<true><<<blocks, 512>>>(g_pcu.red, grads, n);
    else k_sumsq_partial<false><<<blocks, 512>>>(g_pcu.red, grads, n);
    return blocks;
}

__global__ void k_sum_final(float *out, const float *part, int nparts) {
    __shared__ float sh[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

extern "C" int prism_cuda_adamw(float *master, void *params_x, const float *grads, float *m, float *v, size_t n,
                                float lr, float beta1, float beta2, float eps, float wd, int t, float grad_scale) {
    if (!n) return 0;
    if (t < 1) return pcu_fail_msg("adamw", "step t must be >= 1 (bias correction)");
    float c1 = (float)(1.0 - pow((double)beta1, (double)t));
    float c2 = (float)(1.0 - pow((double)beta2, (double)t));
    k_adamw<<<pcu_blocks(n, 256), 256>>>(master, (floatX *)params_x, grads, m, v, n, lr, beta1, beta2, eps, wd, c1, c2,
                                         grad_scale);
    PCU_CHECK_LAUNCH("adamw");
    return 0;
}

extern "C" int prism_cuda_grad_norm(const float *grads, size_t n, float *norm_host) {
    PCU_NEED_INIT("grad_norm");
    float sq = 0.0f;
    if (n) {
        unsigned blocks = sumsq_partial(grads, n);
        PCU_CHECK_LAUNCH("grad_norm(partial)");
        k_sum_final<<<1, 1024>>>(g_pcu.red + PCU_RED_BLOCKS, g_pcu.red, (int)blocks);
        PCU_CHECK_LAUNCH("grad_norm(final)");
        PCU_CHECK(cudaMemcpy(&sq, g_pcu.red + PCU_RED_BLOCKS, sizeof(float), cudaMemcpyDeviceToHost));
    }
    *norm_host = sqrtf(sq);
    return 0;
}

__global__ void k_sqrt_final(float *out, const float *part, int nparts) {
    __shared__ float sh[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = sqrtf(s);
}

extern "C" int prism_cuda_grad_norm_device(const float *grads, size_t n, float *norm_dev) {
    PCU_NEED_INIT("grad_norm_device");
    unsigned blocks = 1;
    if (n) {
        blocks = sumsq_partial(grads, n);
        PCU_CHECK_LAUNCH("grad_norm_device(partial)");
    } else {
        PCU_CHECK(cudaMemset(g_pcu.red, 0, sizeof(float)));
    }
    k_sqrt_final<<<1, 1024>>>(norm_dev, g_pcu.red, (int)blocks);
    PCU_CHECK_LAUNCH("grad_norm_device(final)");
    return 0;
}

struct adamw_table {
    unsigned long long bound[PRISM_CUDA_MAX_TENSORS + 1];   /* tensor i is [bound[i], bound[i+1]) */
    unsigned decay;                                         /* bit i: tensor i takes weight decay */
    int nt;
};

__device__ __forceinline__ float adamw_one(float g, float *mi, float *vi, float p, float lr, float b1, float b2,
                                           float eps, float wd, float c1, float c2) {
    float m = b1 * *mi + (1.0f - b1) * g;
    float v = b2 * *vi + (1.0f - b2) * g * g;
    *mi = m;
    *vi = v;
    return p - lr * ((m / c1) / (sqrtf(v / c2) + eps) + wd * p);
}

/* VEC: thread i does elements 4i..4i+3 (all bounds are multiples of 4); else element i. */
template <bool VEC>
__global__ void k_adamw_tensors(float *master, floatX *px, float *grads, float *m, float *v, adamw_table tab,
                                float lr, float b1, float b2, float eps, float wd, float c1, float c2,
                                const float *norm, float clip, int zero) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * (VEC ? 4 : 1);
    if (i >= tab.bound[tab.nt]) return;
    int k = 0;
    while (k + 1 < tab.nt && i >= tab.bound[k + 1]) k++;
    float wdk = (tab.decay >> k) & 1u ? wd : 0.0f;
    float nr = *norm, gs = (clip > 0.0f && nr > clip) ? clip / nr : 1.0f;   /* NaN norm: no clipping, as the host path */
    if (VEC) {
        f32x4 g = ld_f4(grads + i), mm = ld_f4(m + i), vv = ld_f4(v + i), p = ld_f4(master + i);
#pragma unroll
        for (int j = 0; j < 4; j++) p.v[j] = adamw_one(g.v[j] * gs, &mm.v[j], &vv.v[j], p.v[j], lr, b1, b2, eps, wdk, c1, c2);
        st_f4(m + i, mm);
        st_f4(v + i, vv);
        st_f4(master + i, p);
        if (px)
#pragma unroll
            for (int j = 0; j < 4; j++) px[i + j] = fx(p.v[j]);
        if (zero) { f32x4 z = { { 0.0f, 0.0f, 0.0f, 0.0f } }; st_f4(grads + i, z); }
    } else {
        float p = adamw_one(grads[i] * gs, &m[i], &v[i], master[i], lr, b1, b2, eps, wdk, c1, c2);
        master[i] = p;
        if (px) px[i] = fx(p);
        if (zero) grads[i] = 0.0f;
    }
}

extern "C" int prism_cuda_adamw_tensors(float *master, void *params_x, float *grads, float *m, float *v,
                                        const size_t *bounds, int ntensors, unsigned decay_mask, float lr, float beta1,
                                        float beta2, float eps, float wd, int t, const float *norm_dev, float grad_clip,
                                        int zero_grads) {
    if (ntensors < 1 || ntensors > PRISM_CUDA_MAX_TENSORS) return pcu_fail_msg("adamw_tensors", "need 1..16 tensors");
    if (t < 1) return pcu_fail_msg("adamw_tensors", "step t must be >= 1 (bias correction)");
    adamw_table tab;
    memset(&tab, 0, sizeof tab);
    bool vec = pcu_aligned16(master) && pcu_aligned16(grads) && pcu_aligned16(m) && pcu_aligned16(v);
    for (int i = 0; i <= ntensors; i++) {
        if (i > 0 && bounds[i] < bounds[i - 1]) return pcu_fail_msg("adamw_tensors", "tensor bounds must not decrease");
        tab.bound[i] = bounds[i];
        vec = vec && bounds[i] % 4 == 0;
    }
    tab.decay = decay_mask;
    tab.nt = ntensors;
    size_t n = bounds[ntensors];
    if (bounds[0] != 0) return pcu_fail_msg("adamw_tensors", "the first tensor must start at 0");
    if (!n) return 0;
    float c1 = (float)(1.0 - pow((double)beta1, (double)t));
    float c2 = (float)(1.0 - pow((double)beta2, (double)t));
    if (vec)
        k_adamw_tensors<true><<<pcu_blocks(n / 4, 256), 256>>>(master, (floatX *)params_x, grads, m, v, tab, lr, beta1, beta2, eps, wd, c1, c2, norm_dev, grad_clip, zero_grads);
    else
        k_adamw_tensors<false><<<pcu_blocks(n, 256), 256>>>(master, (floatX *)params_x, grads, m, v, tab, lr, beta1, beta2, eps, wd, c1, c2, norm_dev, grad_clip, zero_grads);
    PCU_CHECK_LAUNCH("adamw_tensors");
    return 0;
}
