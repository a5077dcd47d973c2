/* kernels/cuda/gelu.cu — GELU with the tanh approximation GPT-2 uses, forward and backward (twin:
 * gelu_forward/gelu_backward in kernels/cpu_kernels.h). One thread per element, float32 math.
 *   gelu(x)  = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
 *   gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) k (1 + 3*0.044715 x^2)
 */
#include "cuda_common.cuh"

#define GELU_K 0.7978845608028654f

/* tanh through one exp, accurate to ~1e-7 absolute whatever --use_fast_math does to tanhf */
__device__ __forceinline__ float pcu_tanh(float u) { return 1.0f - 2.0f / (__expf(2.0f * u) + 1.0f); }

__global__ void k_gelu_fwd(floatX *out, const floatX *inp, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = xf(inp[i]);
    out[i] = fx(0.5f * x * (1.0f + pcu_tanh(GELU_K * (x + 0.044715f * x * x * x))));
}

__global__ void k_gelu_bwd(floatX *dinp, const floatX *inp, const floatX *dout, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = xf(inp[i]);
    float u = GELU_K * (x + 0.044715f * x * x * x);
    float th = pcu_tanh(u);
    float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] = fx(g * xf(dout[i]));
}

extern "C" int prism_cuda_gelu_forward(void *out, const void *inp, size_t n) {
    if (!n) return 0;
    k_gelu_fwd<<<pcu_blocks(n, 256), 256>>>((floatX *)out, (const floatX *)inp, n);
    PCU_CHECK_LAUNCH("gelu_forward");
    return 0;
}

extern "C" int prism_cuda_gelu_backward(void *dinp, const void *inp, const void *dout, size_t n) {
    if (!n) return 0;
    k_gelu_bwd<<<pcu_blocks(n, 256), 256>>>((floatX *)dinp, (const floatX *)inp, (const floatX *)dout, n);
    PCU_CHECK_LAUNCH("gelu_backward");
    return 0;
}
