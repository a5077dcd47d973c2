/* kernels/cuda/cuda_common.cu — the CUDA runtime side of libprism_cuda: device selection, handles,
 * memory helpers, conversions between float32 and floatX, errors, timing and peak-memory sampling.
 *
 * State is per host thread (thread_local): the worker agent trains one job per device, each in its own thread
 * (prism-worker agent --devices 0,1), so each thread selects its device and owns its handles; a model must
 * be used by the thread that created it, and the thread's state is released when the thread exits.
 * prism_cuda_init creates a cuBLAS handle (for strided-batched attention GEMMs and the fallback matmul), a
 * cuBLASLt handle with a 32 MiB workspace (Hopper wants >= 32 MiB for its best kernels), two events for
 * timing and a small scratch for deterministic reductions. Without
 * a device (or a driver) prism_cuda_device_count() is 0 and prism_cuda_init fails with a message that
 * says so; nothing aborts.
 */
#include "cuda_common.cuh"
#include "attention_cudnn.h"
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

thread_local pcu_state g_pcu;
static thread_local char pcu_err[512];

/* A host thread's handles and workspaces die with the thread: prism_cuda_init touches this thread_local,
 * whose destructor (run at thread exit, and for the main thread at exit() before atexit handlers, so
 * before the CUDA runtime tears down) calls prism_cuda_shutdown. Without it every worker thread that
 * trained on a GPU and ended left its cuBLAS handles and 32 MiB workspace behind. */
namespace {
struct pcu_reaper { ~pcu_reaper() { prism_cuda_shutdown(); } };
thread_local pcu_reaper pcu_reaper_instance;
}

int pcu_fail_msg(const char *where, const char *what) {
    snprintf(pcu_err, sizeof pcu_err, "%s: %s", where, what);
    return -1;
}
int pcu_fail(const char *where, cudaError_t e) {
    snprintf(pcu_err, sizeof pcu_err, "%s: %s (%s)", where, cudaGetErrorString(e), cudaGetErrorName(e));
    return -1;
}
int pcu_fail_blas(const char *where, cublasStatus_t s) {
    snprintf(pcu_err, sizeof pcu_err, "%s: cuBLAS status %d (%s)", where, (int)s, cublasGetStatusString(s));
    return -1;
}

extern "C" const char *prism_cuda_last_error(void) { return pcu_err; }
extern "C" const char *prism_cuda_precision(void) {
#ifdef ENABLE_FP32
    return "fp32";
#else
    return "bf16";
#endif
}
extern "C" size_t prism_cuda_x_size(void) { return sizeof(floatX); }
extern "C" const char *prism_cuda_device_name(void) { return g_pcu.ready ? g_pcu.name : ""; }

extern "C" int prism_cuda_device_count(void) {
    int n = prism_cuda_device_probe();
    return n > 0 ? n : 0;
}

/* "No device" is cudaErrorNoDevice, or cudaErrorInsufficientDriver on a machine with no NVIDIA kernel driver
 * loaded at all (the runtime's answer where libcuda is missing). Every other failure, including an
 * insufficient driver on a machine that has one, is an error of a machine that is meant to have a GPU. */
extern "C" int prism_cuda_device_probe(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess) return n;
    cudaGetLastError();   /* clear the sticky error */
    pcu_fail("cudaGetDeviceCount", e);
    if (e == cudaErrorNoDevice) return 0;
    if (e == cudaErrorInsufficientDriver && access("/proc/driver/nvidia/version", F_OK) != 0) return 0;
    return -1;
}

extern "C" void prism_cuda_shutdown(void) {
    if (!g_pcu.ready) return;
    pcu_matmul_forget();
    prism_cuda_cudnn_shutdown();   /* this thread's cuDNN handle, plans and workspace (attention_cudnn.h) */
    if (g_pcu.blas) cublasDestroy(g_pcu.blas);
    if (g_pcu.lt) cublasLtDestroy(g_pcu.lt);
    cudaFree(g_pcu.lt_ws);
    cudaFree(g_pcu.red);
    cudaFree(g_pcu.scratch);
    cudaEventDestroy(g_pcu.ev0);
    cudaEventDestroy(g_pcu.ev1);
    memset(&g_pcu, 0, sizeof g_pcu);
}

static int pcu_init_err(char *err, size_t errlen, int rc) {
    if (err && errlen) snprintf(err, errlen, "%s", pcu_err);
    return rc;
}

extern "C" int prism_cuda_init(int device, char *err, size_t errlen) {
    if (g_pcu.ready && g_pcu.device == device) return 0;
    int n = prism_cuda_device_probe();
    if (n < 0) {   /* keep the runtime's own error: a GPU machine whose CUDA is broken must say why */
        char m[600];
        snprintf(m, sizeof m, "the CUDA runtime failed (%s); is the driver installed and as new as the runtime?", pcu_err);
        pcu_fail_msg("CUDA", m);
        return pcu_init_err(err, errlen, -1);
    }
    if (n == 0) {
        pcu_fail_msg("CUDA", "no CUDA device is visible on this machine (use --device cpu / --devices cpu)");
        return pcu_init_err(err, errlen, -1);
    }
    if (device < 0 || device >= n) {
        char m[160];
        snprintf(m, sizeof m, "device %d does not exist: this machine has %d CUDA device(s), 0..%d", device, n, n - 1);
        pcu_fail_msg("CUDA", m);
        return pcu_init_err(err, errlen, -1);
    }
    if (g_pcu.ready) prism_cuda_shutdown();   /* this thread moves to another device */
    (void)&pcu_reaper_instance;               /* arms the thread-exit shutdown */
    pcu_state s;
    memset(&s, 0, sizeof s);
    cudaError_t e;
    cudaDeviceProp prop;
    cublasStatus_t bs;
    size_t fr = 0, tot = 0;
    if ((e = cudaSetDevice(device)) != cudaSuccess) { pcu_fail("cudaSetDevice", e); goto fail; }
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) { pcu_fail("cudaGetDeviceProperties", e); goto fail; }
    s.device = device;
    s.sms = prop.multiProcessorCount;
    snprintf(s.name, sizeof s.name, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
    if (prop.major < 8) {   /* bf16 tensor cores and the sm_90 build both need a recent chip */
        char m[300];
        snprintf(m, sizeof m, "device %d is %s, compute capability %d.%d; this build needs 9.0 (sm_90, or 8.x via PTX)",
                 device, prop.name, prop.major, prop.minor);
        pcu_fail_msg("CUDA", m);
        goto fail;
    }
    if ((bs = cublasCreate(&s.blas)) != CUBLAS_STATUS_SUCCESS) { pcu_fail_blas("cublasCreate", bs); goto fail; }
    /* pedantic math: no TF32 down-conversion behind our back in the fp32 build */
    if ((bs = cublasSetMathMode(s.blas, CUBLAS_DEFAULT_MATH)) != CUBLAS_STATUS_SUCCESS) { pcu_fail_blas("cublasSetMathMode", bs); goto fail; }
    if ((bs = cublasSetStream(s.blas, PCU_STREAM)) != CUBLAS_STATUS_SUCCESS) { pcu_fail_blas("cublasSetStream", bs); goto fail; }
    if ((bs = cublasLtCreate(&s.lt)) != CUBLAS_STATUS_SUCCESS) { pcu_fail_blas("cublasLtCreate", bs); goto fail; }
    s.lt_ws_bytes = (size_t)32 << 20;
    if ((e = cudaMalloc(&s.lt_ws, s.lt_ws_bytes)) != cudaSuccess) { pcu_fail("cudaMalloc(cuBLASLt workspace)", e); goto fail; }
    if ((bs = cublasSetWorkspace(s.blas, s.lt_ws, s.lt_ws_bytes)) != CUBLAS_STATUS_SUCCESS) { pcu_fail_blas("cublasSetWorkspace", bs); goto fail; }
    if ((e = cudaMalloc(&s.red, (PCU_RED_BLOCKS + 1) * sizeof(float))) != cudaSuccess) { pcu_fail("cudaMalloc(reduction scratch)", e); goto fail; }
    if ((e = cudaEventCreate(&s.ev0)) != cudaSuccess) { pcu_fail("cudaEventCreate", e); goto fail; }
    if ((e = cudaEventCreate(&s.ev1)) != cudaSuccess) { pcu_fail("cudaEventCreate", e); goto fail; }
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) s.base_used = tot - fr;
    s.ready = 1;
    g_pcu = s;
    return 0;
fail:
    if (s.blas) cublasDestroy(s.blas);
    if (s.lt) cublasLtDestroy(s.lt);
    cudaFree(s.lt_ws);
    cudaFree(s.red);
    if (s.ev0) cudaEventDestroy(s.ev0);
    if (s.ev1) cudaEventDestroy(s.ev1);
    return pcu_init_err(err, errlen, -1);
}

extern "C" void *prism_cuda_malloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();   /* an allocation that failed must not fail the next launch check (PCU_CHECK_LAUNCH) */
        char m[128];
        snprintf(m, sizeof m, "cudaMalloc(%zu bytes)", bytes);
        pcu_fail(m, e);
        return NULL;
    }
    return p;
}
extern "C" void prism_cuda_free(void *p) { if (p) cudaFree(p); }
/* queued on the thread's stream (so it can be part of a captured graph), ordered with the launches around it */
extern "C" int prism_cuda_memset0(void *p, size_t bytes) { PCU_CHECK(cudaMemsetAsync(p, 0, bytes, PCU_STREAM)); return 0; }
extern "C" int prism_cuda_upload(void *dst, const void *src, size_t bytes) {
    PCU_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice)); return 0;
}
extern "C" int prism_cuda_download(void *dst, const void *src, size_t bytes) {
    PCU_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost)); return 0;
}
extern "C" int prism_cuda_copy_d2d(void *dst, const void *src, size_t bytes) {
    PCU_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); return 0;
}
extern "C" int prism_cuda_sync(void) { PCU_CHECK(cudaDeviceSynchronize()); return 0; }

__global__ void k_f32_to_x(floatX *dst, const float *src, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = fx(src[i]);
}
__global__ void k_x_to_f32(float *dst, const floatX *src, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = xf(src[i]);
}
__global__ void k_fill_x(floatX *dst, float v, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = fx(v);
}
__global__ void k_fill_f32(float *dst, float v, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = v;
}

extern "C" int prism_cuda_f32_to_x(void *dst_x, const float *src, size_t n) {
    if (!n) return 0;
    k_f32_to_x<<<pcu_blocks(n, 256), 256>>>((floatX *)dst_x, src, n);
    PCU_CHECK_LAUNCH("k_f32_to_x");
    return 0;
}
extern "C" int prism_cuda_x_to_f32(float *dst, const void *src_x, size_t n) {
    if (!n) return 0;
    k_x_to_f32<<<pcu_blocks(n, 256), 256>>>(dst, (const floatX *)src_x, n);
    PCU_CHECK_LAUNCH("k_x_to_f32");
    return 0;
}
extern "C" int prism_cuda_fill_x(void *dst_x, float value, size_t n) {
    if (!n) return 0;
    k_fill_x<<<pcu_blocks(n, 256), 256>>>((floatX *)dst_x, value, n);
    PCU_CHECK_LAUNCH("k_fill_x");
    return 0;
}
extern "C" int prism_cuda_fill_f32(float *dst, float value, size_t n) {
    if (!n) return 0;
    k_fill_f32<<<pcu_blocks(n, 256), 256>>>(dst, value, n);
    PCU_CHECK_LAUNCH("k_fill_f32");
    return 0;
}

/* Host->device via a float32 staging buffer on the device, converted there. */
extern "C" int prism_cuda_upload_x(void *dst_x, const float *src, size_t n) {
    if (!n) return 0;
#ifdef ENABLE_FP32
    return prism_cuda_upload(dst_x, src, n * sizeof(float));
#else
    float *tmp = (float *)prism_cuda_malloc(n * sizeof(float));
    if (!tmp) return -1;
    int rc = prism_cuda_upload(tmp, src, n * sizeof(float));
    if (rc == 0) rc = prism_cuda_f32_to_x(dst_x, tmp, n);
    if (rc == 0) rc = prism_cuda_sync();
    cudaFree(tmp);
    return rc;
#endif
}
extern "C" int prism_cuda_download_x(float *dst, const void *src_x, size_t n) {
    if (!n) return 0;
#ifdef ENABLE_FP32
    return prism_cuda_download(dst, src_x, n * sizeof(float));
#else
    float *tmp = (float *)prism_cuda_malloc(n * sizeof(float));
    if (!tmp) return -1;
    int rc = prism_cuda_x_to_f32(tmp, src_x, n);
    if (rc == 0) rc = prism_cuda_download(dst, tmp, n * sizeof(float));
    cudaFree(tmp);
    return rc;
#endif
}

extern "C" void prism_cuda_round_host(float *a, size_t n) {
#ifndef ENABLE_FP32
    for (size_t i = 0; i < n; i++) a[i] = __bfloat162float(__float2bfloat16_rn(a[i]));
#else
    (void)a; (void)n;
#endif
}

float *pcu_scratch(size_t bytes) {
    if (bytes <= g_pcu.scratch_bytes) return g_pcu.scratch;
    cudaFree(g_pcu.scratch);   /* synchronises: earlier launches may still use the old buffer */
    g_pcu.scratch = NULL;
    g_pcu.scratch_bytes = 0;
    float *p = (float *)prism_cuda_malloc(bytes);
    if (!p) return NULL;
    g_pcu.scratch = p;
    g_pcu.scratch_bytes = bytes;
    g_pcu.scratch_gen++;
    prism_cuda_mem_sample();
    return p;
}

/* ---- CUDA graphs (the model's training step) ---------------------------------------------------------- */
extern "C" int prism_cuda_graph_begin(void) {
    PCU_NEED_INIT("prism_cuda_graph_begin");
    PCU_CHECK(cudaStreamBeginCapture(PCU_STREAM, cudaStreamCaptureModeThreadLocal));
    return 0;
}

extern "C" int prism_cuda_graph_end(void **exec) {
    *exec = NULL;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(PCU_STREAM, &g);
    if (e != cudaSuccess) { cudaGetLastError(); return pcu_fail("cudaStreamEndCapture", e); }
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) { cudaGetLastError(); return pcu_fail("cudaGraphInstantiate", e); }
    *exec = (void *)x;
    return 0;
}

extern "C" int prism_cuda_graph_launch(void *exec) {
    PCU_CHECK(cudaGraphLaunch((cudaGraphExec_t)exec, PCU_STREAM));
    g_pcu.graph_launches++;
    return 0;
}

extern "C" void prism_cuda_graph_free(void *exec) { if (exec) cudaGraphExecDestroy((cudaGraphExec_t)exec); }
extern "C" unsigned prism_cuda_scratch_generation(void) { return g_pcu.scratch_gen; }
extern "C" int prism_cuda_graph_launches(void) { return g_pcu.graph_launches; }

extern "C" void prism_cuda_mem_reset_peak(void) { g_pcu.peak = 0; prism_cuda_mem_sample(); }
extern "C" void prism_cuda_mem_sample(void) {
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return;
    size_t used = tot - fr;
    used = used > g_pcu.base_used ? used - g_pcu.base_used : 0;
    if (used > g_pcu.peak) g_pcu.peak = used;
}
extern "C" size_t prism_cuda_mem_peak(void) { return g_pcu.peak; }

extern "C" int prism_cuda_timer_start(void) {
    PCU_NEED_INIT("prism_cuda_timer_start");
    PCU_CHECK(cudaEventRecord(g_pcu.ev0, 0));
    return 0;
}
extern "C" int prism_cuda_timer_stop_ms(float *ms) {
    PCU_NEED_INIT("prism_cuda_timer_stop_ms");
    PCU_CHECK(cudaEventRecord(g_pcu.ev1, 0));
    PCU_CHECK(cudaEventSynchronize(g_pcu.ev1));
    PCU_CHECK(cudaEventElapsedTime(ms, g_pcu.ev0, g_pcu.ev1));
    return 0;
}
