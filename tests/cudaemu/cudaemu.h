/* tests/cudaemu/cudaemu.h — a CPU emulation of the slice of CUDA, cuBLAS and cuBLASLt that kernels/cuda uses,
 * so that the real kernel sources run (and are checked against their CPU twins) on machines without a GPU.
 *
 * What it is: each kernels/cuda/NAME.cu rewritten by tests/cudaemu/cu2cpp.sh (only `k<<<g, b, s>>>(args)` and
 * the `__shared__` declarations change; the line count is kept) and compiled as C++ against these headers, which
 * stand in for cuda_runtime.h, cuda_bf16.h, cublas_v2.h and cublasLt.h (they are found first on -I).
 *
 * Execution model (cudaemu.cpp): a launch runs its blocks one after another on the calling host thread; inside
 * a block every CUDA thread is a fiber with its own stack, switched cooperatively. __syncthreads() parks a fiber
 * until every live thread of the block reaches it; __shfl_xor_sync parks it until its whole warp (32
 * consecutive linear thread ids) has posted a value, reads the partner's, and syncs the warp again. So warp
 * reductions, block reductions, shared memory and atomics behave as on the GPU as far as the CUDA memory model
 * promises, and the emulator reports (as a launch failure, with a message on stderr) what it can see going
 * wrong: a shuffle that reads a lane that has already exited, lanes of one warp in different shuffles, a warp
 * split between a shuffle and a __syncthreads (divergent barrier), a __syncthreads after some threads of the
 * block returned, an illegal launch configuration, a 16-byte vector access (cuda_common.cuh) at an address not a
 * multiple of 16, and — in cuBLAS — a matrix whose extent runs past the device
 * allocation it lives in, or layouts that do not agree with the transposes.
 * CUDAEMU_ORDER=forward|reverse|random picks the order in which fibers run between barriers; a kernel whose
 * result depends on it has a race. CUDAEMU_ORDER=warps runs one warp at a time, through all its warp-level
 * barriers (shuffles, __syncwarp, wmma) up to a __syncthreads, before the next warp starts: a legal GPU schedule
 * that shows a missing __syncthreads between one warp's shared-memory writes and another warp's reads.
 * Device memory is host memory from aligned_alloc, registered so that cudaMemcpy/cuBLAS can check ranges and
 * filled with 0xFF bytes (NaN in float32 and bf16) when allocated, like the garbage in fresh device memory;
 * guard zones before each allocation and after its last byte are checked after every launch, so a kernel that
 * writes out of bounds fails its launch (under `make sanitize` they are ASan-poisoned, so reads are caught too).
 * Each fiber stack has a guard page below it.
 * Shared memory, static and dynamic, is NaN at the start of every block; dynamic shared memory above 48 KiB needs
 * cudaFuncSetAttribute(MaxDynamicSharedMemorySize) first, up to 227 KiB static + dynamic, as on sm_90.
 * mma.h models the nvcuda::wmma fragment API (m16n16k16, bf16 in, float accumulate) as warp-collective calls with
 * the same checks as shuffles (divergent warps, lanes disagreeing on pointer/ldm/layout; see mma.h); __syncwarp
 * is a warp barrier. ptx.h models the PTX-level instructions behind kernels/cuda/mma_sync.cuh (mma.sync m16n8k16
 * bf16, ldmatrix x1/x2/x4 [.trans], cp.async with commit/wait groups) with the ISA's exact per-lane fragment
 * layouts: registers carry the lane that wrote them, so reading another lane's (or nobody's) register, an
 * ldmatrix row not 16-byte aligned or not in shared memory, and an ldmatrix of a cp.async destination whose
 * group no wait_group completed are faults naming file:line.
 * cuBLAS/cuBLASLt GEMMs are done by converting to float32 and calling OpenBLAS's cblas_sgemm (float32
 * accumulation, like CUBLAS_COMPUTE_32F), then applying the epilogue and rounding to the output type.
 *
 * What it is not: a timing model, or a check that the real cuBLASLt implements GELU_AUX the way the docs
 * (and this file) say; tests/gpu/run.sh on a real GPU remains the proof. x86-64 only (the fiber switch is
 * six pushes and pops in cudaemu_switch.S). Per host thread: two threads may run kernels at once.
 */
#ifndef PRISM_CUDAEMU_H
#define PRISM_CUDAEMU_H
#ifndef __cplusplus
#error "cudaemu.h is C++ (the .cu files are compiled as C++)"
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <functional>

#define PRISM_CUDAEMU 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* cu2cpp.sh turns every __shared__ declaration into a cudaemu_*_shared() call; one it missed fails to compile. */
#define __shared__ __shared___not_converted_by_cu2cpp

/* ---- runtime types ------------------------------------------------------------------------------------- */
struct uint3 { unsigned x, y, z; };
/* 16 bytes, 16-aligned, as in CUDA; may_alias: kernels copy bf16/float rows through it (16-byte loads). */
struct __attribute__((aligned(16), may_alias)) uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { uint4 r = { x, y, z, w }; return r; }
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;

enum cudaError {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17, cudaErrorInvalidMemcpyDirection = 21, cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101, cudaErrorMisalignedAddress = 716, cudaErrorLaunchFailure = 719,
    cudaErrorSystemDriverMismatch = 803, cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901, cudaErrorStreamCaptureUnmatched = 903, cudaErrorStreamCaptureWrongThread = 908,
    cudaErrorCapturedEvent = 907
};
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef struct cudaemu_event *cudaEvent_t;
typedef struct cudaemu_stream *cudaStream_t;
/* the two named default streams, as in driver_types.h; only the per-thread one can be captured */
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount, maxThreadsPerBlock, warpSize;
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin;
};
/* Shared memory per block: 48 KiB unless the kernel's cudaFuncAttributeMaxDynamicSharedMemorySize is raised
 * (cudaFuncSetAttribute), up to 227 KiB static + dynamic, as on sm_90. */
#define CUDAEMU_SMEM_DEFAULT (48 * 1024)
#define CUDAEMU_SMEM_OPTIN (227 * 1024)
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
cudaError_t cudaemu_func_set_attribute(const void *fn, cudaFuncAttribute attr, int value);
template <class... P> static inline cudaError_t cudaFuncSetAttribute(void (*fn)(P...), cudaFuncAttribute a, int v) {
    return cudaemu_func_set_attribute((const void *)fn, a, v);
}
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
typedef enum cudaDataType_t cudaDataType;

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaMalloc(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) { return cudaMalloc((void **)p, bytes); }
cudaError_t cudaFree(void *p);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaEventCreate(cudaEvent_t *ev);
cudaError_t cudaEventDestroy(cudaEvent_t ev);
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t ev);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream = 0);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

/* ---- CUDA graphs: stream capture records what the thread queues; a launch replays it -------------------- */
/* Between cudaStreamBeginCapture(cudaStreamPerThread, ...) and cudaStreamEndCapture, kernel launches, cuBLAS /
 * cuBLASLt GEMMs and cudaMemsetAsync are recorded (arguments by value, alpha/beta and the matmul descriptors read
 * at the call, as the real libraries do) instead of run; cudaGraphLaunch runs them in order. A call that the
 * runtime refuses during a capture — cudaMalloc, cudaFree, cudaMemcpy, cudaMemset, cudaDeviceSynchronize,
 * cudaStreamSynchronize, cudaEventSynchronize, a launch of a graph — is a fault: it fails with
 * cudaErrorStreamCaptureUnsupported, does nothing, and invalidates the capture (cudaStreamEndCapture then fails
 * with cudaErrorStreamCaptureInvalidated and returns no graph). Capturing the legacy stream (0) is refused. */
typedef struct cudaemu_graph *cudaGraph_t;
typedef struct cudaemu_graph_exec *cudaGraphExec_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1,
                             cudaStreamCaptureModeRelaxed = 2 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1,
                               cudaStreamCaptureStatusInvalidated = 2 };
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
/* For the launch wrappers and the cuBLAS emulation: true while this thread captures; record one node. */
bool cudaemu_capturing(void);
void cudaemu_record(const char *what, std::function<void()> node);

/* ---- device functions ---------------------------------------------------------------------------------- */
void cudaemu_syncthreads(void);
void cudaemu_syncwarp(unsigned mask);
float cudaemu_shfl_xor(unsigned mask, float v, int lane_mask, int width);
void *cudaemu_dyn_shared(void);   /* the launch's dynamic shared memory (poisoned with NaN per block) */
/* The block's `__shared__ T name[...]` declared at file:line: the same address for every thread
 * of the block, 0xFF bytes (NaN) at the start of each block, so a read before a write is visible. */
void *cudaemu_static_shared(size_t bytes, const char *file, int line);

static inline void __syncthreads(void) { cudaemu_syncthreads(); }
/* A warp barrier (full mask only): every lane of the warp must reach one; a lane that exited is a fault. It also
 * orders the warp's shared-memory accesses, which the wmma calls (mma.h) do not do by themselves. */
static inline void __syncwarp(unsigned mask = 0xffffffffu) { cudaemu_syncwarp(mask); }
static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32) {
    return cudaemu_shfl_xor(mask, v, lane_mask, width);
}
/* Fibers switch only at barriers, so a read-modify-write is atomic. */
static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
#define __expf(x) expf(x)   /* glibc declares its own __expf: a macro avoids the clash */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* A `width`-byte vector load or store at p: a fault unless p is a multiple of width (the GPU's "misaligned
 * address"). kernels/cuda/cuda_common.cuh calls it from its 16-byte vector helpers. */
void cudaemu_check_vector(const void *p, size_t width);

/* ---- bf16: storage type and round-to-nearest-even conversion, as cuda_bf16.h -------------------------- */
struct __nv_bfloat16 { uint16_t x; };
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    __nv_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) r.x = (uint16_t)((u >> 16) | 0x40u);   /* NaN stays a (quiet) NaN */
    else r.x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return r;
}
static inline float __bfloat162float(__nv_bfloat16 b) {
    uint32_t u = (uint32_t)b.x << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- launches: `k<<<g, b, s>>>(args)` becomes `cudaemu_cfg(g, b, s).run(k, "k")(args)` ---------------------- */
/* Runs fn(ctx) as every thread of every block; the launch's errors go to cudaGetLastError(). */
void cudaemu_launch(dim3 grid, dim3 block, size_t dyn_shared, const char *name, const void *kernel, void (*fn)(void *),
                    void *ctx);
struct cudaemu_cfg {
    dim3 g, b;
    size_t shm;
    cudaemu_cfg(dim3 g_, dim3 b_, size_t s = 0, cudaStream_t st = 0) : g(g_), b(b_), shm(s) { (void)st; }
    template <class... P> struct bound {
        dim3 g, b;
        size_t shm;
        void (*k)(P...);
        const char *name;
        /* Arguments convert to the kernel's parameter types here, as in a real launch (NULL -> T *). */
        void operator()(P... a) const {
            if (cudaemu_capturing()) {   /* recorded with its arguments by value; runs at cudaGraphLaunch */
                dim3 g_ = g, b_ = b;
                size_t s_ = shm;
                void (*k_)(P...) = k;
                const char *n_ = name;
                cudaemu_record(name, [=]() {
                    auto call = [&]() { k_(a...); };
                    cudaemu_launch(g_, b_, s_, n_, (const void *)k_, [](void *c) { (*(decltype(call) *)c)(); }, &call);
                });
                return;
            }
            auto call = [&]() { k(a...); };
            cudaemu_launch(g, b, shm, name, (const void *)k, [](void *c) { (*(decltype(call) *)c)(); }, &call);
        }
    };
    template <class... P> bound<P...> run(void (*k)(P...), const char *name) const {
        return bound<P...>{ g, b, shm, k, name };
    }
};

/* ---- cuBLAS ---------------------------------------------------------------------------------------------- */
typedef enum {
    CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_INTERNAL_ERROR = 14, CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef struct cudaemu_blas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t stream);
const char *cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType_t tA, int lda, const void *B,
                            cudaDataType_t tB, int ldb, const void *beta, void *C, cudaDataType_t tC, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType_t tA, int lda,
                                          long long sA, const void *B, cudaDataType_t tB, int ldb, long long sB,
                                          const void *beta, void *C, cudaDataType_t tC, int ldc, long long sC,
                                          int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo);

/* ---- cuBLASLt -------------------------------------------------------------------------------------------- */
typedef struct cudaemu_lt *cublasLtHandle_t;
typedef struct cudaemu_lt_desc *cublasLtMatmulDesc_t;
typedef struct cudaemu_lt_layout *cublasLtMatrixLayout_t;
typedef struct cudaemu_lt_pref *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;
typedef enum {
    CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12
} cublasLtMatmulDescAttributes_t;
typedef enum {
    CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
} cublasLtMatmulPreferenceAttributes_t;
typedef enum {
    CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_GELU = 32, CUBLASLT_EPILOGUE_GELU_BIAS = 36, CUBLASLT_EPILOGUE_GELU_AUX = 160,
    CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164, CUBLASLT_EPILOGUE_DGELU = 192
} cublasLtEpilogue_t;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t bytes);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows,
                                          uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a, const void *buf,
                                                    size_t bytes);
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t dl, cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *returned);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                              const void *C, cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, cudaStream_t stream);

/* ---- for tests of the emulator itself ------------------------------------------------------------------- */
/* The message of the last emulator fault in this thread ("" when none); cudaemu_faults() counts them. */
extern "C" const char *cudaemu_last_fault(void);
extern "C" int cudaemu_faults(void);   /* C callers: tests/unit/test_cuda_kernels.c declares these weak */
#endif
