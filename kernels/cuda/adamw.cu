/* kernels/cuda/adamw.cu — AdamW on float32 master weights, and the global gradient norm (twins: adamw and
 * the grad-norm helper in kernels/cpu_kernels.h).
 *
 * AdamW (decoupled weight decay, as llm.c / PyTorch): with g = grad * grad_scale (the clipping factor),
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  mhat = m/(1-b1^t);  vhat = v/(1-b2^t)
 *   p -= lr (mhat / (sqrt(vhat) + eps) + wd p)
 * on the float32 master copy, then the floatX working copy is rounded from it (round to nearest).
 * Bias corrections are computed on the host in double. The norm is a two-pass deterministic reduction:
 * a fixed grid of blocks each sums squares over a grid-stride range into its slot, then one block adds
 * the slots in index order, so the same gradients always give the same bits.
 */
#include "cuda_common.cuh"
#include <math.h>

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

__global__ void k_sumsq_partial(float *part, const float *g, size_t n) {
    __shared__ float sh[32];
    float s = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += g[i] * g[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
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
        unsigned blocks = pcu_blocks(n, 512);
        if (blocks > PCU_RED_BLOCKS) blocks = PCU_RED_BLOCKS;
        k_sumsq_partial<<<blocks, 512>>>(g_pcu.red, grads, n);
        PCU_CHECK_LAUNCH("grad_norm(partial)");
        k_sum_final<<<1, 1024>>>(g_pcu.red + PCU_RED_BLOCKS, g_pcu.red, (int)blocks);
        PCU_CHECK_LAUNCH("grad_norm(final)");
        PCU_CHECK(cudaMemcpy(&sq, g_pcu.red + PCU_RED_BLOCKS, sizeof(float), cudaMemcpyDeviceToHost));
    }
    *norm_host = sqrtf(sq);
    return 0;
}
