/* kernels/cuda/encoder.cu — token + position embedding, forward and backward (twin: encoder_* in
 * kernels/cpu_kernels.h).
 *
 * Forward: one thread per output element, out[b,t,c] = wte[tok,c] + wpe[t,c] in float32, rounded once.
 * Backward into float32 gradients: dwpe is a plain deterministic column sum over the batch (one thread
 * per (t,c), looping b in order); dwte scatters by token with float atomics, so its summation order
 * (and last bits) can differ between runs when a token repeats within a batch.
 */
#include "cuda_common.cuh"

__global__ void k_encoder_fwd(floatX *out, const int *inp, const floatX *wte, const floatX *wpe, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n = (size_t)B * T * C;
    if (i >= n) return;
    size_t bt = i / C;
    int c = (int)(i % C);
    int t = (int)(bt % T);
    int tok = inp[bt];
    out[i] = fx(xf(wte[(size_t)tok * C + c]) + xf(wpe[(size_t)t * C + c]));
}

__global__ void k_encoder_bwd_wpe(float *dwpe, const floatX *dout, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;   /* over (t, c) */
    if (i >= (size_t)T * C) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += xf(dout[(size_t)b * T * C + i]);
    dwpe[i] += s;
}

__global__ void k_encoder_bwd_wte(float *dwte, const floatX *dout, const int *inp, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * T * C) return;
    size_t bt = i / C;
    int c = (int)(i % C);
    atomicAdd(&dwte[(size_t)inp[bt] * C + c], xf(dout[i]));
}

extern "C" int prism_cuda_encoder_forward(void *out, const int *inp, const void *wte, const void *wpe, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (!n) return 0;
    k_encoder_fwd<<<pcu_blocks(n, 256), 256>>>((floatX *)out, inp, (const floatX *)wte, (const floatX *)wpe, B, T, C);
    PCU_CHECK_LAUNCH("encoder_forward");
    return 0;
}

extern "C" int prism_cuda_encoder_backward(float *dwte, float *dwpe, const void *dout, const int *inp, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (!n) return 0;
    if (dwpe) {
        k_encoder_bwd_wpe<<<pcu_blocks((size_t)T * C, 256), 256>>>(dwpe, (const floatX *)dout, B, T, C);
        PCU_CHECK_LAUNCH("encoder_backward(wpe)");
    }
    if (dwte) {
        k_encoder_bwd_wte<<<pcu_blocks(n, 256), 256>>>(dwte, (const floatX *)dout, inp, B, T, C);
        PCU_CHECK_LAUNCH("encoder_backward(wte)");
    }
    return 0;
}
