/* kernels/cuda/cuda_common.cuh — what every CUDA kernel file shares (internal, C++ only).
 *
 * floatX is the element type of activations and weights: __nv_bfloat16 by default, float with
 * -DENABLE_FP32 (make PRECISION=fp32). Arithmetic is always float32: load with xf(), store with fx().
 * The runtime state (device, cuBLAS/cuBLASLt handles, workspace, reduction scratch) is one thread-local
 * struct, g_pcu, set up by prism_cuda_init in cuda_common.cu. Errors are recorded with pcu_fail* and returned as -1;
 * PCU_CHECK_LAUNCH turns a failed kernel launch into that. Nothing here exits the process.
 */
#ifndef PRISM_CUDA_COMMON_CUH
#define PRISM_CUDA_COMMON_CUH
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <stddef.h>
#include <stdint.h>
#include "cuda_kernels.h"

#ifdef ENABLE_FP32
typedef float floatX;
#define PCU_R_X CUDA_R_32F
#else
typedef __nv_bfloat16 floatX;
#define PCU_R_X CUDA_R_16BF
#endif

__device__ __forceinline__ float xf(float v) { return v; }
__device__ __forceinline__ float xf(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ floatX fx(float v) {
#ifdef ENABLE_FP32
    return v;
#else
    return __float2bfloat16_rn(v);
#endif
}

/* Element i of a norm kernel's input (LayerNorm, RMSNorm). FUSED: the residual add comes first, so
 * res[i] = a[i] + b[i] rounded to floatX is written and that rounded value returned (the norm then equals the
 * two separate kernels bit for bit); otherwise a[i]. Only the calling lane reads back what it wrote. */
template <bool FUSED>
__device__ __forceinline__ float norm_input(floatX *res, const floatX *a, const floatX *b, size_t i) {
    if (FUSED) {
        floatX r = fx(xf(a[i]) + xf(b[i]));
        res[i] = r;
        return xf(r);
    }
    return xf(a[i]);
}

struct pcu_state {
    int ready;                 /* prism_cuda_init succeeded */
    int device;
    int sms;                   /* multiprocessor count */
    char name[256];
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    void *lt_ws;               /* cuBLASLt workspace */
    size_t lt_ws_bytes;
    float *red;                /* [PCU_RED_BLOCKS + 1] partial sums for deterministic reductions */
    cudaEvent_t ev0, ev1;
    size_t peak;               /* peak used bytes sampled */
    size_t base_used;          /* bytes in use on the device before init (other processes, context) */
    float *scratch;            /* pcu_scratch: grows on demand, freed at shutdown */
    size_t scratch_bytes;
    unsigned scratch_gen;      /* bumped each time pcu_scratch moves (a captured graph holds its old address) */
    int graph_launches;        /* prism_cuda_graph_launch calls that succeeded, this thread (diagnostic) */
};
/* The stream every launch, copy and GEMM goes to: the per-thread default stream (nvcc --default-stream per-thread
 * makes `k<<<g, b>>>` use it too). Unlike the legacy stream 0 it can be captured into a CUDA graph. */
#define PCU_STREAM cudaStreamPerThread
#define PCU_RED_BLOCKS 1024
extern thread_local pcu_state g_pcu;   /* per host thread: see cuda_common.cu */

/* Record "where: what" as the last error; return -1. */
int pcu_fail(const char *where, cudaError_t e);
int pcu_fail_blas(const char *where, cublasStatus_t s);
int pcu_fail_msg(const char *where, const char *what);
/* A device buffer of at least `bytes` for one launch's partial results (LayerNorm backward's per-block dweight
 * and dbias sums); NULL on failure (message set). Grows by reallocation, so a pointer is valid until the next call. */
float *pcu_scratch(size_t bytes);
/* Drops this thread's cached cuBLASLt algorithms (matmul.cu); prism_cuda_shutdown calls it. */
void pcu_matmul_forget(void);

#define PCU_CHECK_LAUNCH(where) do { cudaError_t e_ = cudaGetLastError(); \
    if (e_ != cudaSuccess) return pcu_fail(where, e_); } while (0)
#define PCU_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return pcu_fail(#call, e_); } while (0)
#define PCU_NEED_INIT(where) do { if (!g_pcu.ready) return pcu_fail_msg(where, "prism_cuda_init was not called"); } while (0)

/* 16-byte vectors of floatX (8 bf16 or 4 float32) for memory-bound kernels: one 128-bit load or store per
 * thread. The address must be 16-byte aligned (a misaligned vector access is a launch error on the GPU and a
 * fault on the emulator); host code checks pcu_aligned16() on every pointer and row pitch before choosing a
 * vector kernel, and takes the scalar one otherwise. */
#define XPACK ((int)(16 / sizeof(floatX)))
struct alignas(16) xpack { floatX v[16 / sizeof(floatX)]; };
struct alignas(16) f32x4 { float v[4]; };
#ifdef PRISM_CUDAEMU   /* the emulator faults a misaligned access, then does it bytewise (no crash on the host) */
template <class V, class T> static inline V pcu_ld(const T *p) { cudaemu_check_vector(p, 16); V v; memcpy(&v, p, 16); return v; }
template <class V, class T> static inline void pcu_st(T *p, const V &v) { cudaemu_check_vector(p, 16); memcpy(p, &v, 16); }
#else
template <class V, class T> __device__ __forceinline__ V pcu_ld(const T *p) { return *reinterpret_cast<const V *>(p); }
template <class V, class T> __device__ __forceinline__ void pcu_st(T *p, const V &v) { *reinterpret_cast<V *>(p) = v; }
#endif
__device__ __forceinline__ xpack ld_xpack(const floatX *p) { return pcu_ld<xpack>(p); }
__device__ __forceinline__ void st_xpack(floatX *p, const xpack &v) { pcu_st(p, v); }
__device__ __forceinline__ f32x4 ld_f4(const float *p) { return pcu_ld<f32x4>(p); }
__device__ __forceinline__ void st_f4(float *p, const f32x4 &v) { pcu_st(p, v); }
static inline bool pcu_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static inline unsigned pcu_blocks(size_t n, int threads) {
    size_t b = (n + (size_t)threads - 1) / (size_t)threads;
    return (unsigned)(b ? b : 1);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
 * `sh` is 32 floats of shared memory; the function syncs, so call it from all threads. */
__device__ __forceinline__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : 0.0f;
    return warp_sum(r);
}
__device__ __forceinline__ float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(r);
}
#endif
