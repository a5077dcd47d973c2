/* kernels/cuda/classifier.cu — fused softmax + cross-entropy + dlogits (twin: the classifier/crossentropy
 * kernels in kernels/cpu_kernels.h).
 *
 * One block per row of logits[N,Vp]. Pass 1: each thread keeps an online (max, sum of exp) over its
 * strided share of the real vocabulary V, then the block combines them; the loss is
 * log(sum) + max - logit[target]. Pass 2 (training): each thread overwrites the elements it owns with
 * dloss * (exp(logit - max)/sum - [v == target]), and zero for the padded columns V..Vp-1, so the
 * probabilities never exist in memory and the logits buffer becomes dlogits in place.
 * When Vp is a multiple of the 16-byte vector (8 bf16 / 4 float32: the padded vocabulary 50304 is) and the
 * logits are 16-byte aligned, k_classifier_vec does the same with 16-byte loads and stores, each thread issuing
 * CLS_UNROLL of them before using the first, and keeping one online (max, sum) per vector rather than per
 * element; vectors wholly inside the padding are written as zeros without being read.
 */
#include "cuda_common.cuh"

__global__ void k_classifier(floatX *logits, float *losses, const int *targets, int V, int Vp, float dloss, int write) {
    __shared__ float sh[32];
    size_t row = blockIdx.x;
    floatX *x = logits + row * (size_t)Vp;
    float m = -INFINITY, s = 0.0f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float z = xf(x[v]);
        if (z > m) { s = s * __expf(m - z) + 1.0f; m = z; }
        else s += __expf(z - m);
    }
    float M = block_max(m, sh);
    s = (m == -INFINITY) ? 0.0f : s * __expf(m - M);
    float S = block_sum(s, sh);
    int tgt = targets[row];
    if (threadIdx.x == 0) {
        float zt = xf(x[tgt]);
        losses[row] = logf(S) + M - zt;
    }
    if (!write) return;
    __syncthreads();   /* thread 0 read x[tgt] above; it may be overwritten below by another thread */
    float inv = 1.0f / S;
    for (int v = threadIdx.x; v < Vp; v += blockDim.x) {
        float g = 0.0f;
        if (v < V) g = (__expf(xf(x[v]) - M) * inv - (v == tgt ? 1.0f : 0.0f)) * dloss;
        x[v] = fx(g);
    }
}


#define CLS_UNROLL 4
#define CLS_THREADS 512

__global__ void k_classifier_vec(floatX *logits, float *losses, const int *targets, int V, int Vp, float dloss,
                                 int write) {
    __shared__ float sh[32];
    size_t row = blockIdx.x;
    floatX *x = logits + row * (size_t)Vp;
    const int npk = Vp / XPACK, nreal = (V + XPACK - 1) / XPACK;   /* vectors in the row; those with a real column */
    const int step = CLS_UNROLL * blockDim.x;
    float m = -INFINITY, s = 0.0f;
    for (int p0 = threadIdx.x; p0 < nreal; p0 += step) {
        xpack buf[CLS_UNROLL];
#pragma unroll
        for (int u = 0; u < CLS_UNROLL; u++) {
            int p = p0 + u * blockDim.x;
            if (p < nreal) buf[u] = ld_xpack(x + (size_t)p * XPACK);
        }
#pragma unroll
        for (int u = 0; u < CLS_UNROLL; u++) {
            int p = p0 + u * blockDim.x;
            if (p < nreal) {
                float z[XPACK], pm = -INFINITY;
#pragma unroll
                for (int j = 0; j < XPACK; j++) {
                    z[j] = p * XPACK + j < V ? xf(buf[u].v[j]) : -INFINITY;
                    pm = fmaxf(pm, z[j]);
                }
                if (pm > m) { s *= __expf(m - pm); m = pm; }
#pragma unroll
                for (int j = 0; j < XPACK; j++) s += __expf(z[j] - m);
            }
        }
    }
    float M = block_max(m, sh);
    s = (m == -INFINITY) ? 0.0f : s * __expf(m - M);
    float S = block_sum(s, sh);
    int tgt = targets[row];
    if (threadIdx.x == 0) losses[row] = logf(S) + M - xf(x[tgt]);
    if (!write) return;
    __syncthreads();   /* thread 0 read x[tgt] above; it may be overwritten below by another thread */
    float inv = 1.0f / S;
    for (int p0 = threadIdx.x; p0 < npk; p0 += step) {
        xpack buf[CLS_UNROLL];
#pragma unroll
        for (int u = 0; u < CLS_UNROLL; u++) {
            int p = p0 + u * blockDim.x;
            if (p < nreal) buf[u] = ld_xpack(x + (size_t)p * XPACK);
        }
#pragma unroll
        for (int u = 0; u < CLS_UNROLL; u++) {
            int p = p0 + u * blockDim.x;
            if (p < npk) {
                xpack o;
#pragma unroll
                for (int j = 0; j < XPACK; j++) {
                    int v = p * XPACK + j;
                    float g = 0.0f;
                    if (v < V) g = (__expf(xf(buf[u].v[j]) - M) * inv - (v == tgt ? 1.0f : 0.0f)) * dloss;
                    o.v[j] = fx(g);
                }
                st_xpack(x + (size_t)p * XPACK, o);
            }
        }
    }
}

extern "C" int prism_cuda_fused_classifier(void *logits, float *losses, const int *targets, int N, int V, int Vp,
                                           float dloss, int write_dlogits) {
    if (N <= 0) return 0;
    if (V <= 0 || V > Vp) return pcu_fail_msg("fused_classifier", "need 0 < V <= Vp");
    if (Vp % XPACK == 0 && pcu_aligned16(logits)) {
        k_classifier_vec<<<(unsigned)N, CLS_THREADS>>>((floatX *)logits, losses, targets, V, Vp, dloss, write_dlogits);
        PCU_CHECK_LAUNCH("fused_classifier(vector)");
        return 0;
    }
    k_classifier<<<(unsigned)N, 1024>>>((floatX *)logits, losses, targets, V, Vp, dloss, write_dlogits);
    PCU_CHECK_LAUNCH("fused_classifier");
    return 0;
}
