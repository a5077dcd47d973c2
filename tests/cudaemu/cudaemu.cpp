/* tests/cudaemu/cudaemu.cpp — the CUDA emulator's runtime: device memory, errors, events, and the block
 * scheduler that runs every CUDA thread of a block as a fiber (design notes in cudaemu.h).
 *
 * Scheduler. A launch walks its blocks in order. For a block of n threads it prepares n fibers on n stacks
 * (mapped once per host thread, 1024 stacks), then repeats: resume every runnable fiber (in CUDAEMU_ORDER)
 * until it finishes or parks at a barrier; then release a warp whose live lanes are all parked at a warp
 * barrier, or else the whole block when every live thread is parked at __syncthreads. Anything else is a
 * deadlock (a divergent barrier): the block is abandoned and the launch fails. Only here, at barriers, does
 * control move between threads, which is what makes shared-memory read-modify-writes atomic.
 * State is thread_local: the model tests train in two host threads at once.
 * Graphs. While a thread captures (cudaStreamBeginCapture on cudaStreamPerThread), launches, GEMMs and
 * cudaMemsetAsync go into the capture's node list as closures holding their arguments by value; the calls the
 * runtime refuses during a capture fault through capture_refuses() and invalidate it; cudaGraphLaunch runs the
 * instantiated copy of the list in order, stopping at the first node that sets an error.
 * Under AddressSanitizer every switch is announced (__sanitizer_start/finish_switch_fiber) and a stack is
 * unpoisoned before reuse, so ASan checks kernels' loads and stores against the heap "device" buffers.
 */
#include "cudaemu.h"
#include "mma.h"
#include "ptx.h"
#include <vector>
#include <algorithm>
#include <atomic>
#include <errno.h>
#include <map>
#include <thread>
#include <mutex>
#include <vector>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" void cudaemu_switch(void **save_sp, void *to_sp);

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

/* ---- errors ---------------------------------------------------------------------------------------------- */
static thread_local cudaError_t last_error = cudaSuccess;
static thread_local char fault_msg[512];
static std::atomic<int> fault_count;   /* all threads: a test checks them at exit */

static void set_error(cudaError_t e) { if (last_error == cudaSuccess) last_error = e; }

/* An emulator-detected bug in a kernel or a call: counted, printed once per launch site, and the launch fails. */
static void fault(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault_msg, sizeof fault_msg, fmt, ap);
    va_end(ap);
    fault_count++;
    fprintf(stderr, "cudaemu: %s\n", fault_msg);
    set_error(cudaErrorLaunchFailure);
}
/* ---- stream capture (CUDA graphs) --------------------------------------------------------------------- */
struct cudaemu_graph { std::vector<std::function<void()>> nodes; std::vector<const char *> names; };
struct cudaemu_graph_exec { std::vector<std::function<void()>> nodes; std::vector<const char *> names; };
static thread_local cudaemu_graph *capture;      /* the graph being captured by this thread, or NULL */
static thread_local int capture_invalidated;     /* a refused call happened during it */
bool cudaemu_capturing(void) { return capture != nullptr; }
void cudaemu_graph_node_failed(void) { set_error(cudaErrorLaunchFailure); }
void cudaemu_record(const char *what, std::function<void()> node) {
    capture->nodes.push_back(std::move(node));
    capture->names.push_back(what);
}
/* During a capture, `what` is refused as the runtime refuses it: a fault (counted, printed), the capture
 * invalidated, and cudaErrorStreamCaptureUnsupported for the caller to return. 0 when not capturing. */
static int capture_refuses(const char *what) {
    if (!capture) return 0;
    if (!capture_invalidated) {
        snprintf(fault_msg, sizeof fault_msg, "%s during a CUDA graph capture: a host-synchronous call or an "
                 "allocation inside the captured region (do it before cudaStreamBeginCapture or after "
                 "cudaStreamEndCapture)", what);
        fault_count++;
        fprintf(stderr, "cudaemu: %s\n", fault_msg);
    }
    capture_invalidated = 1;
    set_error(cudaErrorStreamCaptureUnsupported);
    return 1;
}

extern "C" const char *cudaemu_last_fault(void) { return fault_msg; }
extern "C" int cudaemu_faults(void) { return fault_count; }

cudaError_t cudaGetLastError(void) { cudaError_t e = last_error; last_error = cudaSuccess; return e; }

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorSystemDriverMismatch: return "cudaErrorSystemDriverMismatch";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    }
    return "cudaErrorUnknown";
}
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorSystemDriverMismatch: return "system has unsupported display driver / cuda driver combination";
    case cudaErrorLaunchFailure: return fault_msg[0] ? fault_msg : "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    }
    return "unknown error";
}

/* ---- device and memory ----------------------------------------------------------------------------------- */
static const size_t EMU_TOTAL_MEM = (size_t)80 << 30;
struct alloc_info { size_t bytes; std::thread::id owner; };
static std::mutex mem_lock;
static std::map<uintptr_t, alloc_info> allocs;   /* base -> size and allocating thread, every live cudaMalloc */
static size_t allocated;

static int device_count(void) {
    const char *e = getenv("CUDAEMU_DEVICES");
    return e && *e ? atoi(e) : 1;
}
/* CUDAEMU_DEVICE_ERROR=803 makes the runtime fail as a broken driver install does (cudaErrorSystemDriverMismatch;
 * any code the emulator names): tests check that such an error is reported as an error, not as "no device". */
static cudaError_t device_error(void) {
    const char *e = getenv("CUDAEMU_DEVICE_ERROR");
    return e && *e ? (cudaError_t)atoi(e) : cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int *n) {
    cudaError_t de = device_error();
    if (de != cudaSuccess) { *n = 0; set_error(de); return de; }
    *n = device_count();
    if (*n <= 0) { *n = 0; set_error(cudaErrorNoDevice); return cudaErrorNoDevice; }
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= device_count()) { set_error(cudaErrorInvalidDevice); return cudaErrorInvalidDevice; }
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d < 0 || d >= device_count()) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "cudaemu CPU emulator");
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 4;
    p->maxThreadsPerBlock = 1024;
    p->warpSize = 32;
    p->totalGlobalMem = EMU_TOTAL_MEM;
    p->sharedMemPerBlock = CUDAEMU_SMEM_DEFAULT;
    p->sharedMemPerBlockOptin = CUDAEMU_SMEM_OPTIN;
    return cudaSuccess;
}

/* cudaFuncAttributeMaxDynamicSharedMemorySize per kernel (all threads: the attribute belongs to the function). */
static std::mutex attr_lock;
static std::map<const void *, int> max_dyn_smem;
cudaError_t cudaemu_func_set_attribute(const void *fn, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > CUDAEMU_SMEM_OPTIN) {
        fprintf(stderr, "cudaemu: cudaFuncSetAttribute(%d, %d): the attribute or value is invalid (dynamic shared "
                "memory may be raised to %d bytes at most)\n", (int)attr, value, CUDAEMU_SMEM_OPTIN);
        set_error(cudaErrorInvalidValue);
        return cudaErrorInvalidValue;
    }
    std::lock_guard<std::mutex> g(attr_lock);
    max_dyn_smem[fn] = value;
    return cudaSuccess;
}
static size_t dyn_smem_limit(const void *fn) {
    std::lock_guard<std::mutex> g(attr_lock);
    auto it = max_dyn_smem.find(fn);
    return it == max_dyn_smem.end() ? CUDAEMU_SMEM_DEFAULT : (size_t)it->second;
}

/* Each allocation [base, base+bytes) sits between two guard zones of GUARD_BYTE: GUARD bytes before it, and
 * after it the rest of its 256-byte rounding plus GUARD bytes. They are checked after every launch of the thread
 * that allocated it (another thread's kernel may be writing its own buffers right then); under ASan they are
 * poisoned instead, so a stray read or write is reported at the instruction. */
static const size_t GUARD = 512;
static const unsigned char GUARD_BYTE = 0xA5;
static size_t padded(size_t bytes) { return ((bytes ? bytes : 1) + 255) & ~(size_t)255; }
static size_t tail(size_t bytes) { return padded(bytes) - bytes + GUARD; }

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = NULL;
    if (capture_refuses("cudaMalloc")) return cudaErrorStreamCaptureUnsupported;
    size_t n = padded(bytes);
    if (!bytes) bytes = 1;
    std::lock_guard<std::mutex> g(mem_lock);
    /* like the runtime, a failed allocation is also the thread's last error (cudaGetLastError) */
    if (allocated + n > EMU_TOTAL_MEM) { set_error(cudaErrorMemoryAllocation); return cudaErrorMemoryAllocation; }
    unsigned char *q = (unsigned char *)aligned_alloc(256, n + 2 * GUARD);
    if (!q) { set_error(cudaErrorMemoryAllocation); return cudaErrorMemoryAllocation; }
    unsigned char *base = q + GUARD;
    memset(q, GUARD_BYTE, GUARD);
    memset(base, 0xFF, bytes);   /* fresh device memory is garbage: NaN in float32 and in bf16 */
    memset(base + bytes, GUARD_BYTE, tail(bytes));
#ifdef EMU_ASAN
    __asan_poison_memory_region(q, GUARD);
    __asan_poison_memory_region(base + bytes, tail(bytes));
#endif
    allocs[(uintptr_t)base] = alloc_info{ bytes, std::this_thread::get_id() };
    allocated += n;
    *p = base;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    if (capture_refuses("cudaFree")) return cudaErrorStreamCaptureUnsupported;
    std::lock_guard<std::mutex> g(mem_lock);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) { set_error(cudaErrorInvalidDevicePointer); return cudaErrorInvalidDevicePointer; }
    size_t bytes = it->second.bytes;
    allocated -= padded(bytes);
    allocs.erase(it);
#ifdef EMU_ASAN
    __asan_unpoison_memory_region((unsigned char *)p - GUARD, padded(bytes) + 2 * GUARD);
#endif
    free((unsigned char *)p - GUARD);
    return cudaSuccess;
}

/* After a launch: the calling thread's guard zones intact? A damaged one is a fault naming the kernel, and is
 * repaired. (Under ASan the zones are poisoned and ASan has already reported any access.) */
static void check_guards(const char *kernel) {
#ifndef EMU_ASAN
    std::lock_guard<std::mutex> g(mem_lock);
    std::thread::id me = std::this_thread::get_id();
    for (auto &a : allocs) {
        if (a.second.owner != me) continue;
        unsigned char *base = (unsigned char *)a.first;
        size_t bytes = a.second.bytes;
        for (int side = 0; side < 2; side++) {
            unsigned char *z = side ? base + bytes : base - GUARD;
            size_t len = side ? tail(bytes) : GUARD, bad = 0, first = len;
            for (size_t i = 0; i < len; i++)
                if (z[i] != GUARD_BYTE) { bad++; if (first == len) first = i; }
            if (bad) {
                fault("%s wrote %s the device allocation at %p (%zu bytes): %zu guard bytes changed, the first %zu bytes %s",
                      kernel, side ? "past the end of" : "before the start of", (void *)base, bytes, bad,
                      side ? first : GUARD - first, side ? "past its end" : "before it");
                memset(z, GUARD_BYTE, len);
            }
        }
    }
#else
    (void)kernel;
#endif
}

/* The live allocation holding address a, or allocs.end(). Call with mem_lock held. */
static std::map<uintptr_t, alloc_info>::iterator alloc_at(uintptr_t a) {
    auto it = allocs.upper_bound(a);
    if (it == allocs.begin()) return allocs.end();
    --it;
    return a < it->first + it->second.bytes ? it : allocs.end();
}

/* 0 when [p, p+bytes) lies inside one live allocation. Used by cuBLAS (cublasemu.cpp) too. */
int cudaemu_check_range(const void *p, size_t bytes, const char *what) {
    if (bytes == 0) return 0;
    std::lock_guard<std::mutex> g(mem_lock);
    uintptr_t a = (uintptr_t)p;
    auto it = alloc_at(a);
    if (it != allocs.end() && a + bytes <= it->first + it->second.bytes) return 0;
    fault("%s: %zu bytes at %p are not inside one device allocation%s", what, bytes, p,
          it != allocs.end() ? " (they run past its end)" : "");
    return -1;
}
static int is_device(const void *p) {
    std::lock_guard<std::mutex> g(mem_lock);
    return alloc_at((uintptr_t)p) != allocs.end();
}

cudaError_t cudaMemset(void *p, int v, size_t bytes) {
    if (capture_refuses("cudaMemset")) return cudaErrorStreamCaptureUnsupported;
    if (cudaemu_check_range(p, bytes, "cudaMemset")) return cudaErrorInvalidValue;
    memset(p, v, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t) {
    if (cudaemu_check_range(p, bytes, "cudaMemsetAsync")) return cudaErrorInvalidValue;
    if (capture) { cudaemu_record("cudaMemsetAsync", [=]() { memset(p, v, bytes); }); return cudaSuccess; }
    memset(p, v, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (capture_refuses("cudaMemcpy")) return cudaErrorStreamCaptureUnsupported;
    if (!bytes) return cudaSuccess;
    int dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault) { dd = is_device(dst); sd = is_device(src); }
    if (kind == cudaMemcpyHostToHost) dd = sd = 0;
    if ((dd && cudaemu_check_range(dst, bytes, "cudaMemcpy destination")) ||
        (sd && cudaemu_check_range(src, bytes, "cudaMemcpy source")))
        return cudaErrorInvalidValue;
    if ((!dd && is_device(dst)) || (!sd && is_device(src))) {
        fault("cudaMemcpy: kind %d says host memory but the pointer is device memory", (int)kind);
        return cudaErrorInvalidMemcpyDirection;
    }
    memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) {
    std::lock_guard<std::mutex> g(mem_lock);
    *tot = EMU_TOTAL_MEM;
    *fr = EMU_TOTAL_MEM - allocated;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    if (capture_refuses("cudaDeviceSynchronize")) return cudaErrorStreamCaptureUnsupported;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    if (capture_refuses("cudaStreamSynchronize")) return cudaErrorStreamCaptureUnsupported;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
    if (stream == 0 || stream == cudaStreamLegacy) {   /* the legacy stream cannot be captured */
        set_error(cudaErrorStreamCaptureUnsupported);
        return cudaErrorStreamCaptureUnsupported;
    }
    if (capture) { capture_refuses("cudaStreamBeginCapture (a capture is already running)"); return cudaErrorStreamCaptureUnsupported; }
    capture = new cudaemu_graph;
    capture_invalidated = 0;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph) {
    *graph = NULL;
    if (!capture) { set_error(cudaErrorStreamCaptureUnmatched); return cudaErrorStreamCaptureUnmatched; }
    cudaemu_graph *g = capture;
    capture = NULL;
    if (capture_invalidated) {
        delete g;
        capture_invalidated = 0;
        set_error(cudaErrorStreamCaptureInvalidated);
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = g;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *status) {
    *status = !capture ? cudaStreamCaptureStatusNone
                       : capture_invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
    *exec = NULL;
    if (!graph) { set_error(cudaErrorInvalidValue); return cudaErrorInvalidValue; }
    *exec = new cudaemu_graph_exec{ graph->nodes, graph->names };
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
    if (!exec) { set_error(cudaErrorInvalidValue); return cudaErrorInvalidValue; }
    if (capture_refuses("cudaGraphLaunch")) return cudaErrorStreamCaptureUnsupported;
    for (size_t i = 0; i < exec->nodes.size(); i++) {
        exec->nodes[i]();
        if (last_error != cudaSuccess) {
            fprintf(stderr, "cudaemu: cudaGraphLaunch: node %zu (%s) failed\n", i, exec->names[i]);
            return last_error;
        }
    }
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { delete exec; return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { delete graph; return cudaSuccess; }

struct cudaemu_event { double t; };
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
cudaError_t cudaEventCreate(cudaEvent_t *ev) { *ev = new cudaemu_event{ 0 }; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t ev) { delete ev; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t) { ev->t = now_ms(); return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    if (capture_refuses("cudaEventSynchronize")) return cudaErrorStreamCaptureUnsupported;
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { *ms = (float)(b->t - a->t); return cudaSuccess; }

/* ---- the block scheduler --------------------------------------------------------------------------------- */
enum { F_RUN, F_BAR_BLOCK, F_BAR_WARP, F_DONE };
struct fiber {
    void *sp;
    int state;
    uint3 idx;
    void *asan_fake;
};
#ifdef EMU_ASAN
static const size_t STACK = 256 * 1024;
#else
static const size_t STACK = 64 * 1024;
#endif
static const int MAX_THREADS = 1024;

/* the warp-collective calls, for the checks that a warp is in one and the same */
enum { W_SHFL = 0, W_SYNCWARP, W_LOAD, W_STORE, W_MMA, W_LDMATRIX, W_MMA_SYNC };
namespace {
struct sched {
    char *stacks = nullptr;          /* MAX_THREADS * STACK, mapped on first launch */
    fiber f[MAX_THREADS];
    int n = 0, cur = -1;
    void *sp = nullptr;              /* the scheduler's own stack pointer while a fiber runs */
    void (*fn)(void *) = nullptr;
    void *ctx = nullptr;
    float xchg[MAX_THREADS];         /* shuffle exchange, one slot per thread */
    struct wpost {                   /* what each lane posted at its current warp-collective call */
        int kind;                    /* W_SHFL, W_SYNCWARP, W_LOAD, W_STORE, W_MMA */
        const char *file;
        int line, layout;
        const void *ptr;
        unsigned ldm;
        float *d;
        const void *a, *b, *c;
        void *r[4];                  /* ldmatrix: the lane's destination registers; addr its row address */
        const void *addr;
    } wp[MAX_THREADS];
    struct pending {                 /* a cp.async not yet completed by a wait_group (ptx.h) */
        unsigned char *dst;
        unsigned char data[16];
        int bytes, group, line;
        const char *file;
    };
    std::vector<pending> pend[MAX_THREADS];
    int cp_group[MAX_THREADS];       /* per thread: the number of the open (uncommitted) group */
    std::vector<uint16_t> pend_dyn, pend_stat;   /* pending copies per 4 bytes of shared memory */
    unsigned wgen[MAX_THREADS / 32];   /* per warp: bumped by the first lane to run after a release */
    void *site[MAX_THREADS];         /* where each lane's current shuffle was called from, and its lane mask: */
    int lmask[MAX_THREADS];          /* a warp whose lanes are in different shuffles is divergent */
    unsigned char *dyn = nullptr;    /* dynamic shared memory */
    alignas(128) unsigned char stat[CUDAEMU_SMEM_DEFAULT];   /* static shared memory of the running launch */
    const char *stat_file[16];       /* declaration (file, line) -> offset and size in stat, per launch */
    int stat_line[16];
    size_t stat_off[16], stat_size[16], stat_used = 0;
    int stat_n = 0;
    size_t dyn_size = 0, dyn_cap = 0;
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
    void *sched_fake = nullptr;
    int faulted = 0;
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    ~sched() {
        if (stacks) munmap(stacks, (size_t)MAX_THREADS * STACK);
        free(dyn);
    }
};
thread_local sched S;
}

static inline void asan_start(void **fake, const void *bottom, size_t size) {
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake; (void)bottom; (void)size;
#endif
}
static inline void asan_finish(void *fake, const void **bottom, size_t *size) {
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
    (void)fake; (void)bottom; (void)size;
#endif
}

static void pend_exit(int t);
extern "C" void cudaemu_fiber_entry(void) {
    asan_finish(nullptr, &S.sched_bottom, &S.sched_size);
    S.fn(S.ctx);
    pend_exit(S.cur);
    fiber &f = S.f[S.cur];
    f.state = F_DONE;
    asan_start(nullptr, S.sched_bottom, S.sched_size);   /* this fiber's stack dies here */
    cudaemu_switch(&f.sp, S.sp);
    abort();   /* a finished fiber is never resumed */
}

static void prepare(int i) {
    char *base = S.stacks + (size_t)i * STACK;
#ifdef EMU_ASAN
    __asan_unpoison_memory_region(base, STACK);
#endif
    void **sp = (void **)(base + STACK);   /* 16-byte aligned top */
    *--sp = nullptr;                        /* "return address" of the entry: keeps the call alignment */
    *--sp = (void *)cudaemu_fiber_entry;    /* popped by the switch's ret */
    for (int r = 0; r < 6; r++) *--sp = nullptr;   /* rbp rbx r12 r13 r14 r15 */
    S.f[i].sp = sp;
    S.f[i].state = F_RUN;
    S.f[i].asan_fake = nullptr;
    unsigned bx = blockDim.x, by = blockDim.y;
    S.f[i].idx.x = i % bx;
    S.f[i].idx.y = (i / bx) % by;
    S.f[i].idx.z = i / (bx * by);
}

static void resume(int i) {
    S.cur = i;
    threadIdx = S.f[i].idx;
    asan_start(&S.sched_fake, S.stacks + (size_t)i * STACK, STACK);
    cudaemu_switch(&S.sp, S.f[i].sp);
    asan_finish(S.sched_fake, nullptr, nullptr);
    S.cur = -1;
}

static void park(int state) {
    fiber &f = S.f[S.cur];
    f.state = state;
    asan_start(&f.asan_fake, S.sched_bottom, S.sched_size);
    cudaemu_switch(&f.sp, S.sp);
    asan_finish(f.asan_fake, nullptr, nullptr);
}

static thread_local const char *kernel_name;

void cudaemu_syncthreads(void) {
    if (S.cur < 0) { fault("__syncthreads called outside a kernel"); return; }
    park(F_BAR_BLOCK);
}

float cudaemu_shfl_xor(unsigned mask, float v, int lane_mask, int width) {
    if (S.cur < 0) { fault("__shfl_xor_sync called outside a kernel"); return v; }
    int t = S.cur, lane = t & 31, base = t & ~31;
    if (mask != 0xffffffffu || width != 32) {
        fault("%s: __shfl_xor_sync with mask %#x width %d: the emulator supports full warps only", kernel_name, mask, width);
        return v;
    }
    if (base + 32 > S.n) {
        fault("%s: full-mask shuffle in a partial warp (block of %d threads is not a multiple of 32)", kernel_name, S.n);
        return v;
    }
    S.xchg[t] = v;
    S.wp[t].kind = W_SHFL;
    S.wp[t].file = nullptr;
    S.wp[t].line = 0;
    S.site[t] = __builtin_return_address(0);
    S.lmask[t] = lane_mask;
    park(F_BAR_WARP);                      /* every live lane has posted its value */
    int first = base;
    while (S.f[first].state == F_DONE) first++;
    if (t == first)                        /* one lane checks that the warp is in one and the same shuffle */
        for (int i = base; i < base + 32; i++)
            if (S.f[i].state != F_DONE && (S.site[i] != S.site[t] || S.lmask[i] != S.lmask[t])) {
                fault("%s: warp %d is divergent: lane %d is in a shuffle (lane mask %d) other than lane %d's "
                      "(lane mask %d) (block %u,%u,%u)", kernel_name, t >> 5, i & 31, S.lmask[i], lane, S.lmask[t],
                      blockIdx.x, blockIdx.y, blockIdx.z);
                break;
            }
    int src = base + ((lane ^ lane_mask) & 31);
    float r = S.xchg[src];
    if (S.f[src].state == F_DONE)
        fault("%s: lane %d of warp %d shuffles with lane %d, which has already exited (block %u,%u,%u)", kernel_name,
              lane, t >> 5, src & 31, blockIdx.x, blockIdx.y, blockIdx.z);
    park(F_BAR_WARP);                      /* every lane has read before anyone posts again */
    return r;
}

/* ---- warp-collective calls other than shuffles: __syncwarp and the wmma API (mma.h) ------------------------ */
static const char *wname(int kind) {
    switch (kind) {
    case W_SHFL: return "__shfl_xor_sync";
    case W_SYNCWARP: return "__syncwarp";
    case W_LOAD: return "wmma::load_matrix_sync";
    case W_STORE: return "wmma::store_matrix_sync";
    case W_MMA: return "wmma::mma_sync";
    case W_LDMATRIX: return "ldmatrix";
    case W_MMA_SYNC: return "mma.sync.m16n8k16";
    }
    return "?";
}

/* Posts the calling lane's call, parks until the warp's live lanes have all arrived at a warp barrier, and
 * returns 1 in the first lane to run after the release (it checks the warp and does any warp-wide work while
 * the others wait to be resumed), 0 in the other lanes, -1 on a fault (the work is then skipped). */
static int warp_enter(int kind, const char *file, int line, const void *ptr, unsigned ldm, int layout) {
    if (S.cur < 0) { fault("%s called outside a kernel", wname(kind)); return -1; }
    int t = S.cur, base = t & ~31, w = t >> 5;
    if (base + 32 > S.n) {
        fault("%s: %s at %s:%d in a partial warp (block of %d threads is not a multiple of 32)", kernel_name,
              wname(kind), file, line, S.n);
        return -1;
    }
    S.wp[t].kind = kind;
    S.wp[t].file = file;
    S.wp[t].line = line;
    S.wp[t].ptr = ptr;
    S.wp[t].ldm = ldm;
    S.wp[t].layout = layout;
    S.site[t] = (void *)file;   /* a lane in a shuffle meanwhile sees a different site: divergent */
    S.lmask[t] = -line;
    unsigned gen = S.wgen[w];
    park(F_BAR_WARP);
    if (S.wgen[w] != gen) return S.wgen[w] == gen + 2 ? -1 : 0;   /* +2: the first lane found a fault */
    int bad = 0;
    for (int i = base; i < base + 32 && !bad; i++) {
        const auto &o = S.wp[i], &m = S.wp[t];
        if (S.f[i].state == F_DONE) {
            fault("%s: warp %d is divergent: lane %d has exited while lane %d is in %s at %s:%d (block %u,%u,%u)",
                  kernel_name, w, i & 31, t & 31, wname(kind), file, line, blockIdx.x, blockIdx.y, blockIdx.z);
            bad = 1;
        } else if (o.kind != m.kind || (kind != W_SYNCWARP && (o.file != m.file || o.line != m.line))) {
            fault("%s: warp %d is divergent: lane %d is in %s at %s:%d, lane %d in %s at %s:%d (block %u,%u,%u)",
                  kernel_name, w, i & 31, wname(o.kind), o.file ? o.file : "?", o.line, t & 31, wname(kind), file, line,
                  blockIdx.x, blockIdx.y, blockIdx.z);
            bad = 1;
        } else if (o.ptr != m.ptr || o.ldm != m.ldm || o.layout != m.layout) {
            fault("%s: %s at %s:%d: the lanes of warp %d disagree: lane %d passes pointer %p, ldm %u, layout %d; lane "
                  "%d passes %p, ldm %u, layout %d (block %u,%u,%u)", kernel_name, wname(kind), file, line, w, i & 31,
                  o.ptr, o.ldm, o.layout, t & 31, m.ptr, m.ldm, m.layout, blockIdx.x, blockIdx.y, blockIdx.z);
            bad = 1;
        }
    }
    S.wgen[w] = gen + (bad ? 2 : 1);
    return bad ? -1 : 1;
}

void cudaemu_syncwarp(unsigned mask) {
    if (mask != 0xffffffffu) { fault("%s: __syncwarp with mask %#x: the emulator supports full warps only", kernel_name, mask); return; }
    warp_enter(W_SYNCWARP, "__syncwarp", 0, nullptr, 0, 0);
}

/* Tile element of lane l's element e (the emulator's fragment order: deliberately not the hardware's). */
static inline int frag_index(int lane, int e) { return ((lane * 8 + e) * 97) & 255; }

/* Alignment and ldm rules of load/store_matrix_sync; the layout must be 0 (row-major) or 1 (col-major). */
static int wmma_args_ok(int kind, const char *file, int line, const void *p, unsigned ldm, int esize, int layout) {
    if (S.cur < 0) return 0;
    int report = (S.cur & 31) == 0;   /* lane 0 speaks for the warp; lanes that differ from it are caught apart */
    if (!report) return (layout == 0 || layout == 1) && (uintptr_t)p % 32 == 0 && ldm && !(ldm % (esize == 2 ? 8u : 4u));
    if (layout != 0 && layout != 1) {
        fault("%s: %s at %s:%d: layout %d is neither mem_row_major nor mem_col_major", kernel_name, wname(kind), file,
              line, layout);
        return 0;
    }
    if ((uintptr_t)p % 32) {
        fault("%s: %s at %s:%d: pointer %p is not 32-byte aligned", kernel_name, wname(kind), file, line, p);
        return 0;
    }
    if (ldm % (esize == 2 ? 8u : 4u) || ldm == 0) {
        fault("%s: %s at %s:%d: ldm %u is not a positive multiple of %d elements", kernel_name, wname(kind), file, line,
              ldm, esize == 2 ? 8 : 4);
        return 0;
    }
    return 1;
}

void cudaemu_wmma_load(const char *file, int line, void *x, int role, const void *p, unsigned ldm, int col) {
    int esize = role == 2 ? 4 : 2;
    int ok = wmma_args_ok(W_LOAD, file, line, p, ldm, esize, col);
    if (ok) {   /* the lane reads its own elements now: nothing orders this against the other lanes' stores */
        int lane = S.cur & 31;
        for (int e = 0; e < 8; e++) {
            int i = frag_index(lane, e), r = i >> 4, c = i & 15;
            size_t off = col ? (size_t)c * ldm + r : (size_t)r * ldm + c;
            if (esize == 2) ((__nv_bfloat16 *)x)[e] = ((const __nv_bfloat16 *)p)[off];
            else ((float *)x)[e] = ((const float *)p)[off];
        }
    }
    warp_enter(W_LOAD, file, line, p, ldm, col);
}

void cudaemu_wmma_store(const char *file, int line, void *p, const float *x, unsigned ldm, int layout) {
    int ok = wmma_args_ok(W_STORE, file, line, p, ldm, 4, layout);
    if (warp_enter(W_STORE, file, line, p, ldm, layout) < 0 || !ok) return;
    int lane = S.cur & 31;   /* the lane writes its own elements as it leaves the call */
    for (int e = 0; e < 8; e++) {
        int i = frag_index(lane, e), r = i >> 4, c = i & 15;
        ((float *)p)[layout ? (size_t)c * ldm + r : (size_t)r * ldm + c] = x[e];
    }
}

void cudaemu_wmma_mma(const char *file, int line, float *d, const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                      const float *c) {
    int t = S.cur;
    if (t >= 0) { S.wp[t].d = d; S.wp[t].a = a; S.wp[t].b = b; S.wp[t].c = c; }
    if (warp_enter(W_MMA, file, line, nullptr, 0, 0) != 1) return;
    /* first lane after the release: gather the warp's A, B, C tiles, write every lane's D */
    int base = t & ~31;
    float A[256], Bm[256], Cm[256];
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 8; e++) {
            int i = frag_index(l, e);
            A[i] = __bfloat162float(((const __nv_bfloat16 *)S.wp[base + l].a)[e]);
            Bm[i] = __bfloat162float(((const __nv_bfloat16 *)S.wp[base + l].b)[e]);
            Cm[i] = ((const float *)S.wp[base + l].c)[e];
        }
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 8; e++) {
            int i = frag_index(l, e), r = i >> 4, cc = i & 15;
            float acc = Cm[i];
            for (int k = 0; k < 16; k++) acc += A[r * 16 + k] * Bm[k * 16 + cc];
            S.wp[base + l].d[e] = acc;
        }
}

/* ---- PTX-level instructions (ptx.h): ldmatrix, mma.sync m16n8k16, cp.async ------------------------------- */
int cudaemu_lane(void) { return S.cur < 0 ? -1 : S.cur & 31; }

void cudaemu_reg_fault(const char *file, int line, const char *what, int owner) {
    static thread_local const char *reported;   /* one report per failing launch */
    if (last_error == cudaErrorLaunchFailure && reported == kernel_name) return;
    reported = kernel_name;
    if (!strcmp(what, "a fragment index outside the lane's registers"))
        fault("%s: %s:%d: lane %d reads %s (index %d) (block %u,%u,%u)", kernel_name, file ? file : "?", line,
              cudaemu_lane(), what, owner, blockIdx.x, blockIdx.y, blockIdx.z);
    else
        fault("%s: %s:%d: lane %d reads %s (written by %s%d) (block %u,%u,%u)", kernel_name, file ? file : "?", line,
              cudaemu_lane(), what, owner < 0 ? "no lane" : "lane ", owner < 0 ? 0 : owner, blockIdx.x, blockIdx.y,
              blockIdx.z);
}

/* The per-4-byte pending counter of shared address p, or NULL when p is not in the block's shared memory. */
static uint16_t *pend_slot(const void *p) {
    uintptr_t a = (uintptr_t)p;
    if (S.dyn && a >= (uintptr_t)S.dyn && a < (uintptr_t)S.dyn + S.dyn_size) {
        size_t i = (a - (uintptr_t)S.dyn) / 4;
        if (S.pend_dyn.size() <= i) S.pend_dyn.resize(S.dyn_size / 4 + 1, 0);
        return &S.pend_dyn[i];
    }
    if (a >= (uintptr_t)S.stat && a < (uintptr_t)S.stat + S.stat_used) {
        size_t i = (a - (uintptr_t)S.stat) / 4;
        if (S.pend_stat.size() <= i) S.pend_stat.resize(sizeof S.stat / 4, 0);
        return &S.pend_stat[i];
    }
    return nullptr;
}
static int in_shared(const void *p, size_t bytes) {
    return bytes && pend_slot(p) && pend_slot((const char *)p + bytes - 1);
}
static void pend_mark(unsigned char *dst, int bytes, int d) {
    for (int o = 0; o < bytes; o += 4) *pend_slot(dst + o) += d;
}
/* The pending copy (any thread of the block) that covers byte p, for a fault message. */
static const sched::pending *pend_find(const void *p) {
    for (int t = 0; t < S.n; t++)
        for (auto &q : S.pend[t])
            if ((const unsigned char *)p >= q.dst && (const unsigned char *)p < q.dst + q.bytes) return &q;
    return nullptr;
}
/* Completes thread t's copies of groups < g (all when g is INT_MAX): the destination changes now. */
static void pend_complete(int t, int g) {
    auto &v = S.pend[t];
    size_t k = 0;
    for (size_t i = 0; i < v.size(); i++) {
        if (v[i].group < g) {
            memcpy(v[i].dst, v[i].data, v[i].bytes);
            pend_mark(v[i].dst, v[i].bytes, -1);
        } else v[k++] = v[i];
    }
    v.resize(k);
}
static void pend_reset(int n) {
    for (int t = 0; t < n; t++) { S.pend[t].clear(); S.cp_group[t] = 0; }
    std::fill(S.pend_dyn.begin(), S.pend_dyn.end(), 0);
    std::fill(S.pend_stat.begin(), S.pend_stat.end(), 0);
}

void cudaemu_cp_async(const char *file, int line, void *dst, const void *src, int bytes, int src_bytes, int cg) {
    if (S.cur < 0) { fault("cp.async called outside a kernel"); return; }
    int t = S.cur;
    const char *bad = nullptr;
    if (cg ? bytes != 16 : (bytes != 4 && bytes != 8 && bytes != 16)) bad = cg ? "cp.async.cg copies 16 bytes only" : "the size is not 4, 8 or 16";
    else if (src_bytes < 0 || src_bytes > bytes) bad = "the source size is not in 0..cp-size";
    else if (!in_shared(dst, bytes)) bad = "the destination is not in the block's shared memory";
    else if ((uintptr_t)dst % bytes) bad = "the destination is not aligned to the copy size";
    else if (src_bytes && (uintptr_t)src % bytes) bad = "the source is not aligned to the copy size";
    if (bad) {
        fault("%s: cp.async at %s:%d: %s (dst %p, src %p, %d bytes; thread %d of block %u,%u,%u)", kernel_name, file,
              line, bad, dst, src, bytes, t, blockIdx.x, blockIdx.y, blockIdx.z);
        return;
    }
    if (src_bytes && cudaemu_check_range(src, (size_t)src_bytes, "cp.async source")) return;
    sched::pending q;
    q.dst = (unsigned char *)dst;
    memset(q.data, 0, sizeof q.data);
    if (src_bytes) memcpy(q.data, src, (size_t)src_bytes);   /* the source is read at issue */
    q.bytes = bytes;
    q.group = S.cp_group[t];
    q.file = file;
    q.line = line;
    S.pend[t].push_back(q);
    pend_mark(q.dst, bytes, +1);
}
void cudaemu_cp_async_commit(void) {
    if (S.cur >= 0) S.cp_group[S.cur]++;
}
void cudaemu_cp_async_wait(const char *file, int line, int n) {
    if (S.cur < 0) { fault("cp.async.wait_group called outside a kernel"); return; }
    if (n < 0) { fault("%s: cp.async.wait_group %d at %s:%d: N must be >= 0", kernel_name, n, file, line); return; }
    pend_complete(S.cur, S.cp_group[S.cur] - n);   /* committed groups but the newest n */
}

/* A thread's copies still pending when it exits: a fault (their data would never be waited for). */
static void pend_exit(int t) {
    static thread_local const char *reported;   /* one report per failing launch, not one per thread */
    if (S.pend[t].empty()) return;
    const auto &q = S.pend[t][0];
    if (!(last_error == cudaErrorLaunchFailure && reported == kernel_name))
    fault("%s: thread %d of block %u,%u,%u exited with %zu cp.async copies never completed by a wait_group (the "
          "first issued at %s:%d)", kernel_name, t, blockIdx.x, blockIdx.y, blockIdx.z, S.pend[t].size(), q.file, q.line);
    reported = kernel_name;
    for (auto &p : S.pend[t]) pend_mark(p.dst, p.bytes, -1);
    S.pend[t].clear();
}

void cudaemu_ldmatrix(const char *file, int line, int num, int trans, cudaemu_reg<uint32_t> *const *d, const void *p) {
    int t = S.cur;
    if (t >= 0) {
        for (int i = 0; i < num; i++) S.wp[t].r[i] = d[i];
        S.wp[t].addr = p;
    }
    if (warp_enter(W_LDMATRIX, file, line, nullptr, (unsigned)num, trans) != 1) return;
    int base = t & ~31;
    uint16_t M[4][8][8];
    for (int i = 0; i < num; i++)
        for (int j = 0; j < 8; j++) {
            const void *a = S.wp[base + 8 * i + j].addr;
            const char *bad = nullptr;
            if ((uintptr_t)a % 16) bad = "is not 16-byte aligned";
            else if (!in_shared(a, 16)) bad = "is not in the block's shared memory";
            if (bad) {
                fault("%s: ldmatrix.x%d at %s:%d: lane %d's row address %p %s (block %u,%u,%u)", kernel_name, num,
                      file, line, 8 * i + j, a, bad, blockIdx.x, blockIdx.y, blockIdx.z);
                return;
            }
            for (int o = 0; o < 16; o += 4)
                if (*pend_slot((const char *)a + o)) {
                    const sched::pending *q = pend_find((const char *)a + o);
                    fault("%s: ldmatrix at %s:%d (lane %d's row %p) reads shared memory that a cp.async issued at %s:%d "
                          "has not completed: cp.async wait missing (block %u,%u,%u)", kernel_name, file, line,
                          8 * i + j, a, q ? q->file : "?", q ? q->line : 0, blockIdx.x, blockIdx.y, blockIdx.z);
                    return;
                }
            memcpy(M[i][j], a, 16);
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < num; i++) {
            int g = l >> 2, c = 2 * (l & 3);
            uint32_t lo = trans ? M[i][c][g] : M[i][g][c], hi = trans ? M[i][c + 1][g] : M[i][g][c + 1];
            cudaemu_reg<uint32_t> *r = (cudaemu_reg<uint32_t> *)S.wp[base + l].r[i];
            r->v = lo | (hi << 16);
            r->owner = l;
        }
}

static inline float bf_lo(uint32_t v) { __nv_bfloat16 b; b.x = (uint16_t)(v & 0xffff); return __bfloat162float(b); }
static inline float bf_hi(uint32_t v) { __nv_bfloat16 b; b.x = (uint16_t)(v >> 16); return __bfloat162float(b); }

void cudaemu_mma_bf16(const char *file, int line, cudaemu_reg<float> *d, const cudaemu_reg<uint32_t> *a,
                      const cudaemu_reg<uint32_t> *b, const cudaemu_reg<float> *c) {
    int t = S.cur;
    if (t >= 0) { S.wp[t].d = (float *)d; S.wp[t].a = a; S.wp[t].b = b; S.wp[t].c = c; }
    if (warp_enter(W_MMA_SYNC, file, line, nullptr, 0, 0) != 1) return;
    int base = t & ~31;
    float A[16][16], B[16][8], Cm[16][8];
    for (int l = 0; l < 32; l++) {
        const auto *la = (const cudaemu_reg<uint32_t> *)S.wp[base + l].a, *lb = (const cudaemu_reg<uint32_t> *)S.wp[base + l].b;
        const auto *lc = (const cudaemu_reg<float> *)S.wp[base + l].c;
        const char *which = nullptr;
        int idx = 0, owner = 0;
        for (int i = 0; i < 4 && !which; i++) if (la[i].owner != l) { which = "A"; idx = i; owner = la[i].owner; }
        for (int i = 0; i < 2 && !which; i++) if (lb[i].owner != l) { which = "B"; idx = i; owner = lb[i].owner; }
        for (int i = 0; i < 4 && !which; i++) if (lc[i].owner != l) { which = "C"; idx = i; owner = lc[i].owner; }
        if (which) {
            char who[32];
            if (owner < 0) snprintf(who, sizeof who, "never written");
            else snprintf(who, sizeof who, "written by lane %d", owner);
            fault("%s: mma.sync at %s:%d: lane %d's %s fragment register %d is not the lane's own (%s: not produced "
                  "by ldmatrix, mma or the lane) (block %u,%u,%u)", kernel_name, file, line, l, which, idx, who,
                  blockIdx.x, blockIdx.y, blockIdx.z);
            return;
        }
        int g = l >> 2, c2 = 2 * (l & 3);
        A[g][c2] = bf_lo(la[0].v);      A[g][c2 + 1] = bf_hi(la[0].v);
        A[g + 8][c2] = bf_lo(la[1].v);  A[g + 8][c2 + 1] = bf_hi(la[1].v);
        A[g][c2 + 8] = bf_lo(la[2].v);  A[g][c2 + 9] = bf_hi(la[2].v);
        A[g + 8][c2 + 8] = bf_lo(la[3].v); A[g + 8][c2 + 9] = bf_hi(la[3].v);
        B[c2][g] = bf_lo(lb[0].v);      B[c2 + 1][g] = bf_hi(lb[0].v);
        B[c2 + 8][g] = bf_lo(lb[1].v);  B[c2 + 9][g] = bf_hi(lb[1].v);
        Cm[g][c2] = lc[0].v;     Cm[g][c2 + 1] = lc[1].v;
        Cm[g + 8][c2] = lc[2].v; Cm[g + 8][c2 + 1] = lc[3].v;
    }
    for (int l = 0; l < 32; l++) {
        cudaemu_reg<float> *ld = (cudaemu_reg<float> *)S.wp[base + l].d;
        int g = l >> 2, c2 = 2 * (l & 3);
        for (int e = 0; e < 4; e++) {
            int r = g + (e >= 2 ? 8 : 0), n = c2 + (e & 1);
            float acc = Cm[r][n];
            for (int k = 0; k < 16; k++) acc += A[r][k] * B[k][n];   /* bf16 products are exact in float */
            ld[e].v = acc;
            ld[e].owner = l;
        }
    }
}

void cudaemu_check_vector(const void *p, size_t width) {
    static thread_local const char *reported;   /* one report per failing launch, not one per thread */
    if ((uintptr_t)p % width == 0) return;
    if (last_error == cudaErrorLaunchFailure && reported == kernel_name) return;
    reported = kernel_name;
    fault("%s: misaligned address: a %zu-byte vector access at %p (block %u,%u,%u thread %u,%u,%u)", kernel_name,
              width, p, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
}

void *cudaemu_dyn_shared(void) {
    if (!S.dyn_size) fault("%s: uses extern __shared__ memory but was launched with 0 bytes of it", kernel_name);
    return S.dyn;
}

void *cudaemu_static_shared(size_t bytes, const char *file, int line) {
    for (int i = 0; i < S.stat_n; i++)
        if (S.stat_line[i] == line && strcmp(S.stat_file[i], file) == 0) {
            if (S.stat_size[i] != bytes)
                fault("%s: __shared__ array at %s:%d asked for %zu bytes, then %zu", kernel_name, file, line,
                      S.stat_size[i], bytes);
            return S.stat + S.stat_off[i];
        }
    size_t off = (S.stat_used + 127) & ~(size_t)127;   /* 128-aligned: wmma wants 32 */
    if (S.stat_n == 16 || off + bytes > CUDAEMU_SMEM_DEFAULT || off + bytes + S.dyn_size > CUDAEMU_SMEM_OPTIN) {
        fault("%s: more than 48 KiB of static shared memory, more than %d KiB static + dynamic (static %zu + dynamic "
              "%zu), or more than 16 arrays", kernel_name, CUDAEMU_SMEM_OPTIN / 1024, off + bytes, S.dyn_size);
        abort();
    }
    memset(S.stat + off, 0xFF, bytes);   /* NaN: read-before-write shows */
    S.stat_file[S.stat_n] = file;
    S.stat_line[S.stat_n] = line;
    S.stat_size[S.stat_n] = bytes;
    S.stat_off[S.stat_n++] = off;
    S.stat_used = off + bytes;
    return S.stat + off;
}

#ifndef CUDAEMU_DEFAULT_ORDER
#define CUDAEMU_DEFAULT_ORDER 0   /* the fp32 test build compiles this file with 1 (reverse) */
#endif
static int order_mode(void) {
    const char *e = getenv("CUDAEMU_ORDER");
    if (!e || !*e) return CUDAEMU_DEFAULT_ORDER;
    if (!strcmp(e, "forward")) return 0;
    if (!strcmp(e, "reverse")) return 1;
    if (!strcmp(e, "warps")) return 3;
    return 2;   /* random */
}

/* Runs one block to completion; 0, or -1 after a deadlock (fault recorded). */
static int run_block(int n, int mode) {
    int perm[MAX_THREADS];
    for (int i = 0; i < n; i++) { prepare(i); perm[i] = mode == 1 ? n - 1 - i : i; }
    S.n = n;
    pend_reset(n);
    if (S.dyn_size) memset(S.dyn, 0xFF, S.dyn_size);   /* uninitialised shared memory reads as NaN */
    if (S.stat_used) memset(S.stat, 0xFF, S.stat_used);
    for (;;) {
        if (mode == 2)
            for (int i = n - 1; i > 0; i--) {
                S.rng ^= S.rng << 13; S.rng ^= S.rng >> 7; S.rng ^= S.rng << 17;
                int j = (int)(S.rng % (uint64_t)(i + 1)), tmp = perm[i];
                perm[i] = perm[j]; perm[j] = tmp;
            }
        if (mode == 3) {   /* one warp at a time, as far as it can go: the others have not started yet */
            int w = 0;
            while (w * 32 < n) {
                int any = 0;
                for (int i = w * 32; i < n && i < w * 32 + 32; i++) any |= S.f[i].state == F_RUN;
                if (any) break;
                w++;
            }
            for (int i = w * 32; i < n && i < w * 32 + 32; i++)
                if (S.f[i].state == F_RUN) resume(i);
        } else
            for (int k = 0; k < n; k++)
                if (S.f[perm[k]].state == F_RUN) resume(perm[k]);
        int done = 0, at_block = 0, released = 0, runnable = 0;
        for (int i = 0; i < n; i++) {
            runnable += S.f[i].state == F_RUN;   /* only in mode 3: warps that have not run yet */
            done += S.f[i].state == F_DONE;
            at_block += S.f[i].state == F_BAR_BLOCK;
        }
        if (done == n) return 0;
        for (int w = 0; w * 32 < n; w++) {
            int lo = w * 32, hi = lo + 32 < n ? lo + 32 : n, live = 0, wb = 0, bb = 0;
            for (int i = lo; i < hi; i++) {
                live += S.f[i].state != F_DONE;
                wb += S.f[i].state == F_BAR_WARP;
                bb += S.f[i].state == F_BAR_BLOCK;
            }
            if (wb && wb == live) {
                for (int i = lo; i < hi; i++) if (S.f[i].state == F_BAR_WARP) S.f[i].state = F_RUN;
                released++;
            } else if (wb && bb) {
                fault("%s: warp %d is split: %d lanes wait in a shuffle, __syncwarp or wmma call, %d in __syncthreads "
                      "(block %u,%u,%u)",
                      kernel_name, w, wb, bb, blockIdx.x, blockIdx.y, blockIdx.z);
                return -1;
            }
        }
        if (released || runnable) continue;
        if (at_block == n - done) {
            if (done)   /* undefined in the CUDA guide, even if recent GPUs let it pass */
                fault("%s: __syncthreads reached by %d threads after %d threads of the block returned (block %u,%u,%u)",
                      kernel_name, at_block, done, blockIdx.x, blockIdx.y, blockIdx.z);
            for (int i = 0; i < n; i++) if (S.f[i].state == F_BAR_BLOCK) S.f[i].state = F_RUN;
            continue;
        }
        fault("%s: deadlock in block %u,%u,%u", kernel_name, blockIdx.x, blockIdx.y, blockIdx.z);
        return -1;
    }
}

void cudaemu_launch(dim3 g, dim3 b, size_t dyn, const char *name, const void *kernel, void (*fn)(void *), void *ctx) {
    kernel_name = name;
    size_t nt = (size_t)b.x * b.y * b.z;
    if (dyn > dyn_smem_limit(kernel)) {   /* on the GPU: the launch is refused ("invalid argument") */
        fprintf(stderr, "cudaemu: %s: %zu bytes of dynamic shared memory, more than the kernel's limit of %zu "
                "(raise it with cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), "
                "up to %d)\n", name, dyn, dyn_smem_limit(kernel), CUDAEMU_SMEM_OPTIN);
        set_error(cudaErrorInvalidValue);
        return;
    }
    if (!g.x || !g.y || !g.z || !nt || nt > MAX_THREADS || b.z > 64 || g.y > 65535 || g.z > 65535 ||
        g.x > 0x7fffffffu) {
        fprintf(stderr, "cudaemu: %s: invalid launch grid (%u,%u,%u) block (%u,%u,%u) shared %zu\n", name, g.x, g.y,
                g.z, b.x, b.y, b.z, dyn);
        set_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (S.cur >= 0) { fault("%s: launched from inside a kernel", name); return; }
    if (!S.stacks) {
        void *m = mmap(NULL, (size_t)MAX_THREADS * STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) { set_error(cudaErrorMemoryAllocation); return; }
        S.stacks = (char *)m;
        for (int i = 0; i < MAX_THREADS; i++)   /* a fiber that overflows its stack faults, not its neighbour */
            mprotect(S.stacks + (size_t)i * STACK, 4096, PROT_NONE);
    }
    if (dyn > S.dyn_cap) {
        free(S.dyn);
        S.dyn = (unsigned char *)aligned_alloc(128, (dyn + 127) & ~(size_t)127);
        S.dyn_cap = S.dyn ? dyn : 0;
        if (!S.dyn) { set_error(cudaErrorMemoryAllocation); return; }
    }
    S.dyn_size = dyn;
    S.fn = fn;
    S.ctx = ctx;
    gridDim = g;
    blockDim = b;
    S.stat_n = 0;
    S.stat_used = 0;
    int mode = order_mode();
    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++)
            for (unsigned x = 0; x < g.x; x++) {
                blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                if (run_block((int)nt, mode)) goto out;
            }
out:
    check_guards(name);
}
