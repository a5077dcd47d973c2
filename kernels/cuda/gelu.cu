/* kernels/cuda/gelu.cu — GELU with the tanh approximation GPT-2 uses, forward and backward (twin:
 * gelu_forward/gelu_backward in kernels/cpu_kernels.h). One thread per element, float32 math.
 *   gelu(x)  = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
 *   gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) k (1 + 3*0.044715 x^2)
 * With every pointer 16-byte aligned (the model's are), k_gelu_vec does the same with one 16-byte vector
 * (8 bf16 / 4 float32) per thread, and one element per thread for the n % 8 (or 4) left at the end.
 */
#include "cuda_common.cuh"

#define GELU_K 0.7978845608028654f

/* tanh through one exp, accurate to ~1e-7 absolute whatever --use_fast_math does to tanhf */
__device__ __forceinline__ float pcu_tanh(float u) { return 1.0f - 2.0f / (__expf(2.0f * u) + 1.0f); }

__device__ __forceinline__ float gelu_f(float x) {
    return 0.5f * x * (1.0f + pcu_tanh(GELU_K * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_grad(float x) {
    float u = GELU_K * (x + 0.044715f * x * x * x);
    float th = pcu_tanh(u);
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
}

__global__ void k_gelu_fwd(floatX *out, const floatX *inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = fx(gelu_f(xf(inp[i])));
}

__global__ void k_gelu_bwd(floatX *dinp, const floatX *inp, const floatX *dout, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dinp[i] = fx(gelu_grad(xf(inp[i])) * xf(dout[i]));
}

/* Thread p < n/XPACK: vector p; thread n/XPACK + r: element (n/XPACK)*XPACK + r of the tail. BWD: dst = gelu'(inp)
 * * dout, else dst = gelu(inp) (dout unused). dst may be dout or inp (each element is read before it is written). */
template <bool BWD>
__global__ void k_gelu_vec(floatX *dst, const floatX *inp, const floatX *dout, size_t n) {
    size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x, npk = n / XPACK;
    if (p < npk) {
        xpack vi = ld_xpack(inp + p * XPACK), vd, o;
        if (BWD) vd = ld_xpack(dout + p * XPACK);
#pragma unroll
        for (int j = 0; j < XPACK; j++) o.v[j] = fx(BWD ? gelu_grad(xf(vi.v[j])) * xf(vd.v[j]) : gelu_f(xf(vi.v[j])));
        st_xpack(dst + p * XPACK, o);
    } else {
        size_t i = npk * XPACK + (p - npk);
        if (i < n) dst[i] = fx(BWD ? gelu_grad(xf(inp[i])) * xf(dout[i]) : gelu_f(xf(inp[i])));
    }
}

extern "C" int prism_cuda_gelu_forward(void *out, const void *inp, size_t n) {
    if (!n) return 0;
    if (pcu_aligned16(out) && pcu_aligned16(inp)) {
        size_t threads = n / XPACK + n % XPACK;
        k_gelu_vec<false><<<pcu_blocks(threads, 256), 256>>>((floatX *)out, (const floatX *)inp, NULL, n);
        PCU_CHECK_LAUNCH("gelu_forward(vector)");
        return 0;
    }
    k_gelu_fwd<<<pcu_blocks(n, 256), 256>>>((floatX *)out, (const floatX *)inp, n);
    PCU_CHECK_LAUNCH("gelu_forward");
    return 0;
}

extern "C" int prism_cuda_gelu_backward(void *dinp, const void *inp, const void *dout, size_t n) {
    if (!n) return 0;
    if (pcu_aligned16(dinp) && pcu_aligned16(inp) && pcu_aligned16(dout)) {
        size_t threads = n / XPACK + n % XPACK;
        k_gelu_vec<true><<<pcu_blocks(threads, 256), 256>>>((floatX *)dinp, (const floatX *)inp, (const floatX *)dout, n);
        PCU_CHECK_LAUNCH("gelu_backward(vector)");
        return 0;
    }
    k_gelu_bwd<<<pcu_blocks(n, 256), 256>>>((floatX *)dinp, (const floatX *)inp, (const floatX *)dout, n);
    PCU_CHECK_LAUNCH("gelu_backward");
    return 0;
}
