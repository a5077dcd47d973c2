/* kernels/cuda/attention_cudnn.cu — causal bf16 attention through cuDNN's graph (backend) API, and the per-layer
 * choice between it and the fused kernel. Contract: attention_cudnn.h.
 *
 * Design. cuDNN 9.19's SDPA operation node (CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD_DESCRIPTOR) has no causal mask
 * (its mask subgraph arrives in 9.21), so the graphs here are the fused-attention pattern cuDNN's fused flash
 * attention engine recognises, built from primitive nodes:
 *   forward   S = Q·Kᵀ, S *= scale, S = (row >= col) ? S : -inf (two GEN_INDEX + CMP_GE + BINARY_SELECT),
 *             m = max_row S, E = exp(S - m), z = sum_row E, stats = m + log z, O = (E / z)·V
 *   backward  delta = sum_row dO∘O, S recomputed and masked as above, P = exp(S - stats), dV = Pᵀ·dO,
 *             dS = P∘(dO·Vᵀ - delta)·scale, dQ = dS·K, dK = dSᵀ·Q   (transposes of virtual tensors: RESHAPE views)
 * Q, K, V, dQ, dK, dV are described with dims (B, NH, T, hs) and strides (3CT, hs, 3C, 1) at qkv + {0, C, 2C}, O and
 * dO with (CT, hs, C, 1): no permute. Stats is (B, NH, T, 1) float32, the fused kernel's lse layout, so either
 * backward can follow either forward. The scale and -inf are by-value tensors. Every finalize failure (no engine
 * for the graph on this GPU, version, workspace) is an error the caller turns into one logged fallback.
 * libcudnn.so.9 is dlopen'ed on first use (the emulator's shim, tests/cudaemu/cudnnemu.cpp, is linked instead), so
 * nothing here is needed to load prism-cuda.so. Plans are cached per thread by (direction, B, T, C, NH); one
 * workspace per thread grows to the largest plan's need (+ delta for the backward).
 */
#include "cuda_common.cuh"
#include "attention_cudnn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <mutex>
extern "C" {
#include "model.h"
#include "testhook.h"
}

#if defined(PRISM_HAVE_CUDNN) || defined(PRISM_CUDAEMU)
#define PCD_BUILT 1
#include <cudnn.h>
#ifndef PRISM_CUDAEMU
#include <dlfcn.h>
#endif

/* ---- the library, found at run time --------------------------------------------------------------------- */
struct pcd_api {
    size_t (*version)(void);
    const char *(*errstr)(cudnnStatus_t);
    cudnnStatus_t (*create)(cudnnHandle_t *);
    cudnnStatus_t (*destroy)(cudnnHandle_t);
    cudnnStatus_t (*setstream)(cudnnHandle_t, cudaStream_t);
    cudnnStatus_t (*mk)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
    cudnnStatus_t (*rm)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*fin)(cudnnBackendDescriptor_t);
    cudnnStatus_t (*set)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t,
                         const void *);
    cudnnStatus_t (*get)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t,
                         int64_t *, void *);
    cudnnStatus_t (*exec)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t);
};
static pcd_api g_api;
static int g_api_state;            /* 0 not tried, 1 ready, -1 failed (g_api_why) */
static char g_api_why[256];

static std::mutex g_api_lock;      /* models are created from several threads (one per device) */

static int pcd_load_locked(void);
static int pcd_load(void) {
    std::lock_guard<std::mutex> g(g_api_lock);
    return pcd_load_locked();
}
static int pcd_load_locked(void) {
    if (g_api_state) return g_api_state > 0 ? 0 : -1;
#ifdef PRISM_CUDAEMU
    g_api = pcd_api{ cudnnGetVersion, cudnnGetErrorString, cudnnCreate, cudnnDestroy, cudnnSetStream, cudnnBackendCreateDescriptor,
                     cudnnBackendDestroyDescriptor, cudnnBackendFinalize, cudnnBackendSetAttribute,
                     cudnnBackendGetAttribute, cudnnBackendExecute };
#else
    const char *names[] = { getenv("PRISM_CUDNN_LIBRARY"), "libcudnn.so.9", "libcudnn.so" };
    void *h = NULL;
    for (int i = 0; i < 3 && !h; i++) if (names[i] && *names[i]) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_api_why, sizeof g_api_why, "libcudnn.so.9 not found (%s)", dlerror());
        g_api_state = -1;
        return -1;
    }
#define PCD_SYM(field, name) do { *(void **)&g_api.field = dlsym(h, name); \
        if (!g_api.field) { snprintf(g_api_why, sizeof g_api_why, "libcudnn lacks %s", name); g_api_state = -1; return -1; } } while (0)
    PCD_SYM(version, "cudnnGetVersion"); PCD_SYM(errstr, "cudnnGetErrorString");
    PCD_SYM(create, "cudnnCreate"); PCD_SYM(destroy, "cudnnDestroy"); PCD_SYM(setstream, "cudnnSetStream");
    PCD_SYM(mk, "cudnnBackendCreateDescriptor"); PCD_SYM(rm, "cudnnBackendDestroyDescriptor");
    PCD_SYM(fin, "cudnnBackendFinalize"); PCD_SYM(set, "cudnnBackendSetAttribute");
    PCD_SYM(get, "cudnnBackendGetAttribute"); PCD_SYM(exec, "cudnnBackendExecute");
#undef PCD_SYM
#endif
    size_t v = g_api.version();
    if (v < 90000) {
        /* cuDNN 8 numbered itself MAJOR*1000 + MINOR*100 + PATCH, cuDNN 9 MAJOR*10000 + MINOR*100 + PATCH */
        snprintf(g_api_why, sizeof g_api_why, "cuDNN %zu.%zu.%zu is older than 9.0", v / 1000, v / 100 % 10, v % 100);
        g_api_state = -1;
        return -1;
    }
    g_api_state = 1;
    return 0;
}

/* ---- per-thread state: handle, plans, workspace ---------------------------------------------------------- */
#define PCD_MAX_PLANS 32
#define PCD_MAX_DESC 160
struct pcd_plan {
    int bwd, B, T, C, NH;
    cudnnBackendDescriptor_t plan;
    cudnnBackendDescriptor_t keep[PCD_MAX_DESC];   /* every descriptor the plan was built from */
    int nkeep;
    int64_t ws;                                    /* the plan's workspace bytes */
};
struct pcd_state {
    cudnnHandle_t h;
    pcd_plan plans[PCD_MAX_PLANS];
    int nplans;
    void *ws;
    size_t ws_bytes;
    int calls, built;
    int off;                  /* a run-time failure turned cuDNN off for this thread */
};
static thread_local pcd_state g_cd;

static void pcd_plan_free(pcd_plan *p) {
    if (p->plan) g_api.rm(p->plan);
    for (int i = 0; i < p->nkeep; i++) g_api.rm(p->keep[i]);
    memset(p, 0, sizeof *p);
}
struct pcd_reaper { ~pcd_reaper() { prism_cuda_cudnn_shutdown(); } };
static thread_local pcd_reaper g_reaper;

extern "C" void prism_cuda_cudnn_shutdown(void) {
    for (int i = 0; i < g_cd.nplans; i++) pcd_plan_free(&g_cd.plans[i]);
    g_cd.nplans = 0;
    if (g_cd.h) g_api.destroy(g_cd.h);
    g_cd.h = NULL;
    if (g_cd.ws) cudaFree(g_cd.ws);
    g_cd.ws = NULL;
    g_cd.ws_bytes = 0;
}
extern "C" int prism_cuda_cudnn_calls(void) { return g_cd.calls; }
extern "C" int prism_cuda_cudnn_plans_built(void) { return g_cd.built; }

/* ---- graph building: the first failing call is remembered, later calls do nothing --------------------------- */
struct pcd_gb {
    pcd_plan *p;
    cudnnStatus_t st;
    char where[96];
};
static cudnnBackendDescriptor_t gb_new(pcd_gb &g, cudnnBackendDescriptorType_t t, const char *what) {
    cudnnBackendDescriptor_t d = NULL;
    if (g.st != CUDNN_STATUS_SUCCESS) return NULL;
    if (g.p->nkeep >= PCD_MAX_DESC) { g.st = CUDNN_STATUS_INTERNAL_ERROR; snprintf(g.where, sizeof g.where, "too many descriptors"); return NULL; }
    if ((g.st = g_api.mk(t, &d)) != CUDNN_STATUS_SUCCESS) { snprintf(g.where, sizeof g.where, "create %s", what); return NULL; }
    g.p->keep[g.p->nkeep++] = d;
    return d;
}
static void gb_set(pcd_gb &g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                   int64_t count, const void *v, const char *what) {
    if (g.st != CUDNN_STATUS_SUCCESS) return;
    if ((g.st = g_api.set(d, n, t, count, v)) != CUDNN_STATUS_SUCCESS) snprintf(g.where, sizeof g.where, "set %s", what);
}
static void gb_fin(pcd_gb &g, cudnnBackendDescriptor_t d, const char *what) {
    if (g.st != CUDNN_STATUS_SUCCESS) return;
    if ((g.st = g_api.fin(d)) != CUDNN_STATUS_SUCCESS) snprintf(g.where, sizeof g.where, "finalize %s", what);
}
#define GB_DESC(g, d, n, v, what) gb_set(g, d, n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &(v), what)

enum { U_Q = 1, U_K, U_V, U_O, U_STATS, U_SCALE, U_NEGINF, U_DO, U_DQ, U_DK, U_DV, U_DELTA, U_ONE, U_VIRT = 100 };

static cudnnBackendDescriptor_t gb_tensor(pcd_gb &g, int64_t uid, const int64_t dims[4], const int64_t strides[4],
                                          cudnnDataType_t dt, bool virt, bool byval) {
    cudnnBackendDescriptor_t d = gb_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    int64_t align = virt || byval ? 4 : 16;
    gb_set(g, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    gb_set(g, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dims");
    gb_set(g, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
    gb_set(g, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    gb_set(g, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    gb_set(g, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual flag");
    if (byval) gb_set(g, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval, "tensor by-value flag");
    gb_fin(g, d, "tensor");
    return d;
}
/* a virtual float tensor (B, NH, rows, cols), packed */
static cudnnBackendDescriptor_t gb_virt(pcd_gb &g, int64_t &uid, int64_t B, int64_t NH, int64_t r, int64_t c,
                                        cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
    const int64_t dims[4] = { B, NH, r, c }, str[4] = { NH * r * c, r * c, c, 1 };
    return gb_tensor(g, uid++, dims, str, dt, true, false);
}
/* the transposed view (B, NH, c, r) of a packed (B, NH, r, c) virtual tensor, for a RESHAPE node */
static cudnnBackendDescriptor_t gb_virt_t(pcd_gb &g, int64_t &uid, int64_t B, int64_t NH, int64_t r, int64_t c,
                                          cudnnDataType_t dt) {
    const int64_t dims[4] = { B, NH, c, r }, str[4] = { NH * r * c, r * c, 1, c };
    return gb_tensor(g, uid++, dims, str, dt, true, false);
}
static cudnnBackendDescriptor_t gb_pw(pcd_gb &g, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                      cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                                      cudnnBackendDescriptor_t t = NULL, int64_t axis = -1) {
    cudnnBackendDescriptor_t pw = gb_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    /* the compute type as cudnn-frontend sets it: INT32 for the index, BOOLEAN for the compare, float otherwise */
    cudnnDataType_t prec = mode == CUDNN_POINTWISE_GEN_INDEX ? CUDNN_DATA_INT32
                         : mode == CUDNN_POINTWISE_CMP_GE ? CUDNN_DATA_BOOLEAN : CUDNN_DATA_FLOAT;
    gb_set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    gb_set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
    if (axis >= 0) gb_set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "gen_index axis");
    gb_fin(g, pw, "pointwise");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "pointwise op mode");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "pointwise x");
    if (b) GB_DESC(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, "pointwise b");
    if (t) GB_DESC(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, "pointwise t");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "pointwise y");
    gb_fin(g, op, "pointwise op");
    return op;
}
static cudnnBackendDescriptor_t gb_mm(pcd_gb &g, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                                      cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm = gb_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    gb_set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec, "matmul compute type");
    gb_fin(g, mm, "matmul");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul a");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul b");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "matmul c");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, "matmul desc");
    gb_fin(g, op, "matmul op");
    return op;
}
static cudnnBackendDescriptor_t gb_red(pcd_gb &g, cudnnReduceTensorOp_t rop, cudnnBackendDescriptor_t x,
                                       cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t rd = gb_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    gb_set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop, "reduction operator");
    gb_set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec, "reduction compute type");
    gb_fin(g, rd, "reduction");
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, "reduction x");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, "reduction y");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd, "reduction desc");
    gb_fin(g, op, "reduction op");
    return op;
}
static cudnnBackendDescriptor_t gb_reshape(pcd_gb &g, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = gb_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, "reshape x");
    GB_DESC(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, "reshape y");
    gb_fin(g, op, "reshape op");
    return op;
}

/* Test hook (testhook.h): PRISM_CUDNN_SEED_BUG=stride describes K with the wrong row stride (C instead of 3C), the
 * seeded bug the emulator's shim and the tests must catch. Read once per process; the constant 0 in prism-cuda.so
 * (compiled in only for the emulator's objects and the hooked object the nvcc-built kernel tests link). */
static int pcd_seed_bug(void) {
    static int v = -1;
    if (v < 0) v = testhook_fault("PRISM_CUDNN_SEED_BUG", "stride");
    return v;
}

/* The scaled scores S·scale (B, NH, T, T) of Q·Kᵀ; appends its ops to ops. */
static cudnnBackendDescriptor_t gb_scores(pcd_gb &g, int64_t &uid, cudnnBackendDescriptor_t q, cudnnBackendDescriptor_t kt,
                                          cudnnBackendDescriptor_t scale, int64_t B, int64_t NH, int64_t T,
                                          cudnnBackendDescriptor_t *ops, int &nops) {
    cudnnBackendDescriptor_t s = gb_virt(g, uid, B, NH, T, T), ss = gb_virt(g, uid, B, NH, T, T);
    ops[nops++] = gb_mm(g, q, kt, s);
    ops[nops++] = gb_pw(g, CUDNN_POINTWISE_MUL, s, scale, ss);
    return ss;
}
/* The causal mask on x (B, NH, T, T): (row >= col) ? x : -inf, the index pair in INT32, the compare in BOOLEAN. */
static cudnnBackendDescriptor_t gb_mask(pcd_gb &g, int64_t &uid, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t neginf,
                                        int64_t B, int64_t NH, int64_t T, cudnnBackendDescriptor_t *ops, int &nops) {
    cudnnBackendDescriptor_t row = gb_virt(g, uid, B, NH, T, T, CUDNN_DATA_INT32), col = gb_virt(g, uid, B, NH, T, T, CUDNN_DATA_INT32);
    cudnnBackendDescriptor_t keep = gb_virt(g, uid, B, NH, T, T, CUDNN_DATA_BOOLEAN), sm = gb_virt(g, uid, B, NH, T, T);
    ops[nops++] = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, x, NULL, row, NULL, 2);
    ops[nops++] = gb_pw(g, CUDNN_POINTWISE_GEN_INDEX, x, NULL, col, NULL, 3);
    ops[nops++] = gb_pw(g, CUDNN_POINTWISE_CMP_GE, row, col, keep);
    ops[nops++] = gb_pw(g, CUDNN_POINTWISE_BINARY_SELECT, x, neginf, sm, keep);
    return sm;
}

static int pcd_fail(const char *where, cudnnStatus_t st) {
    char m[200];
    snprintf(m, sizeof m, "%s", g_api_state > 0 ? g_api.errstr(st) : "cuDNN not loaded");
    return pcu_fail_msg(where, m);
}

static int pcd_handle(void) {
    if (pcd_load() != 0) return pcu_fail_msg("cuDNN", g_api_why);
    if (!g_cd.h) {
        cudnnStatus_t st = g_api.create(&g_cd.h);
        if (st != CUDNN_STATUS_SUCCESS) { g_cd.h = NULL; return pcd_fail("cudnnCreate", st); }
        /* the stream every other launch goes to (the per-thread default stream), so a captured step records it */
        if ((st = g_api.setstream(g_cd.h, PCU_STREAM)) != CUDNN_STATUS_SUCCESS) return pcd_fail("cudnnSetStream", st);
    }
    return 0;
}

static void *pcd_workspace(size_t bytes);
/* a plan's workspace bytes: its own, then (backward) delta's B*NH*T floats at a 256-byte boundary */
static size_t pcd_ws_need(const pcd_plan *p) {
    size_t w = ((size_t)(p->ws > 0 ? p->ws : 0) + 255) / 256 * 256;
    return p->bwd ? w + (size_t)p->B * p->NH * p->T * sizeof(float) : w;
}

/* Builds (or finds) the plan for one direction and shape. */
static pcd_plan *pcd_get_plan(int bwd, int B, int T, int C, int NH) {
    for (int i = 0; i < g_cd.nplans; i++) {
        pcd_plan *p = &g_cd.plans[i];
        if (p->bwd == bwd && p->B == B && p->T == T && p->C == C && p->NH == NH) return p;
    }
    if (pcd_handle() != 0) return NULL;
    if (g_cd.nplans == PCD_MAX_PLANS) { pcd_plan_free(&g_cd.plans[0]); memmove(&g_cd.plans[0], &g_cd.plans[1], sizeof(pcd_plan) * (PCD_MAX_PLANS - 1)); g_cd.nplans--; }
    pcd_plan *p = &g_cd.plans[g_cd.nplans];
    memset(p, 0, sizeof *p);
    p->bwd = bwd; p->B = B; p->T = T; p->C = C; p->NH = NH;
    pcd_gb g = { p, CUDNN_STATUS_SUCCESS, "" };
    const int64_t hs = C / NH, b = B, h = NH, t = T, c3 = 3 * (int64_t)C;
    const int64_t dq[4] = { b, h, t, hs }, sq[4] = { t * c3, hs, pcd_seed_bug() ? (int64_t)C : c3, 1 };
    const int64_t sqkv[4] = { t * c3, hs, c3, 1 };
    const int64_t dt_[4] = { b, h, hs, t }, st_[4] = { t * c3, hs, 1, c3 };   /* Kᵀ / Vᵀ views of the qkv buffer */
    const int64_t so[4] = { t * C, hs, C, 1 };
    const int64_t dst[4] = { b, h, t, 1 }, sst[4] = { h * t, t, 1, 1 };
    const int64_t d1[4] = { 1, 1, 1, 1 };
    const cudnnDataType_t X = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    int64_t uid = U_VIRT;
    cudnnBackendDescriptor_t ops[24];
    int nops = 0;
    cudnnBackendDescriptor_t q = gb_tensor(g, U_Q, dq, sqkv, X, false, false);
    cudnnBackendDescriptor_t scale = gb_tensor(g, U_SCALE, d1, d1, F, false, true);
    cudnnBackendDescriptor_t neginf = gb_tensor(g, U_NEGINF, d1, d1, F, false, true);
    cudnnBackendDescriptor_t stats = gb_tensor(g, U_STATS, dst, sst, F, false, false);
    cudnnBackendDescriptor_t o = gb_tensor(g, U_O, dq, so, X, false, false);
    if (!bwd) {
        const int64_t skt[4] = { t * c3, hs, 1, pcd_seed_bug() ? (int64_t)C : c3 };
        cudnnBackendDescriptor_t kt = gb_tensor(g, U_K, dt_, skt, X, false, false);
        cudnnBackendDescriptor_t v = gb_tensor(g, U_V, dq, sqkv, X, false, false);
        cudnnBackendDescriptor_t ss = gb_scores(g, uid, q, kt, scale, b, h, t, ops, nops);
        cudnnBackendDescriptor_t sm = gb_mask(g, uid, ss, neginf, b, h, t, ops, nops);
        cudnnBackendDescriptor_t mx = gb_virt(g, uid, b, h, t, 1), sub = gb_virt(g, uid, b, h, t, t);
        cudnnBackendDescriptor_t e = gb_virt(g, uid, b, h, t, t), z = gb_virt(g, uid, b, h, t, 1);
        /* P in Q's type: the frontend sets bmm2's A to the I/O type "by requirement of the backend" */
        cudnnBackendDescriptor_t lz = gb_virt(g, uid, b, h, t, 1), pr = gb_virt(g, uid, b, h, t, t, X);
        ops[nops++] = gb_red(g, CUDNN_REDUCE_TENSOR_MAX, sm, mx);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_SUB, sm, mx, sub);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_EXP, sub, NULL, e);
        ops[nops++] = gb_red(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_LOG, z, NULL, lz);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_ADD, mx, lz, stats);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_DIV, e, z, pr);
        ops[nops++] = gb_mm(g, pr, v, o);
    } else {
        /* as the frontend lowers it: K and V arrive as the transposed views Kᵀ, Vᵀ of the qkv buffer; K for dS·K is
         * the RESHAPE of Kᵀ; softmax_sum = (sum_row dO∘O)·1 (the dropout scale-inverse, 1 without dropout); the mask
         * is applied to S·scale − stats; Pᵀ and dSᵀ are in Q's type */
        const int64_t skt[4] = { t * c3, hs, 1, sq[2] };
        cudnnBackendDescriptor_t kt = gb_tensor(g, U_K, dt_, skt, X, false, false);
        cudnnBackendDescriptor_t vt = gb_tensor(g, U_V, dt_, st_, X, false, false);
        cudnnBackendDescriptor_t dout = gb_tensor(g, U_DO, dq, so, X, false, false);
        cudnnBackendDescriptor_t dqd = gb_tensor(g, U_DQ, dq, sqkv, X, false, false);
        cudnnBackendDescriptor_t dkd = gb_tensor(g, U_DK, dq, sqkv, X, false, false);
        cudnnBackendDescriptor_t dvd = gb_tensor(g, U_DV, dq, sqkv, X, false, false);
        cudnnBackendDescriptor_t delta = gb_tensor(g, U_DELTA, dst, sst, F, false, false);
        cudnnBackendDescriptor_t one = gb_tensor(g, U_ONE, d1, d1, F, false, true);
        cudnnBackendDescriptor_t doo = gb_virt(g, uid, b, h, t, hs), dsum = gb_virt(g, uid, b, h, t, 1);
        cudnnBackendDescriptor_t k = gb_tensor(g, uid++, dq, sq, X, true, false);   /* K: the view of Kᵀ */
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_MUL, dout, o, doo);
        ops[nops++] = gb_red(g, CUDNN_REDUCE_TENSOR_ADD, doo, dsum);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_MUL, dsum, one, delta);
        cudnnBackendDescriptor_t ss = gb_scores(g, uid, q, kt, scale, b, h, t, ops, nops);
        cudnnBackendDescriptor_t sub = gb_virt(g, uid, b, h, t, t);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_SUB, ss, stats, sub);
        cudnnBackendDescriptor_t sm = gb_mask(g, uid, sub, neginf, b, h, t, ops, nops);
        cudnnBackendDescriptor_t pr = gb_virt(g, uid, b, h, t, t), prt = gb_virt_t(g, uid, b, h, t, t, X);
        cudnnBackendDescriptor_t dp = gb_virt(g, uid, b, h, t, t), dpm = gb_virt(g, uid, b, h, t, t);
        cudnnBackendDescriptor_t ds = gb_virt(g, uid, b, h, t, t), dss = gb_virt(g, uid, b, h, t, t);
        cudnnBackendDescriptor_t dst_t = gb_virt_t(g, uid, b, h, t, t, X);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_EXP, sm, NULL, pr);
        ops[nops++] = gb_reshape(g, pr, prt);
        ops[nops++] = gb_mm(g, prt, dout, dvd);
        ops[nops++] = gb_mm(g, dout, vt, dp);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_SUB, dp, delta, dpm);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_MUL, dpm, pr, ds);
        ops[nops++] = gb_pw(g, CUDNN_POINTWISE_MUL, ds, scale, dss);
        ops[nops++] = gb_reshape(g, dss, dst_t);
        ops[nops++] = gb_mm(g, dst_t, q, dkd);
        ops[nops++] = gb_reshape(g, kt, k);
        ops[nops++] = gb_mm(g, dss, k, dqd);
    }
    cudnnBackendDescriptor_t graph = gb_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    gb_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_cd.h, "graph handle");
    gb_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops, "graph ops");
    gb_fin(g, graph, "operation graph");
    cudnnBackendDescriptor_t heur = gb_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics");
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    GB_DESC(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph");
    gb_set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
    gb_fin(g, heur, "heuristics");
    enum { NCFG = 4 };
    cudnnBackendDescriptor_t cfg[NCFG];
    for (int i = 0; i < NCFG; i++) cfg[i] = gb_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config");
    int64_t ncfg = 0;
    if (g.st == CUDNN_STATUS_SUCCESS && (g.st = g_api.get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, NCFG, &ncfg, cfg)) != CUDNN_STATUS_SUCCESS)
        snprintf(g.where, sizeof g.where, "heuristics results");
    if (g.st == CUDNN_STATUS_SUCCESS && ncfg < 1) { g.st = CUDNN_STATUS_NOT_SUPPORTED; snprintf(g.where, sizeof g.where, "heuristics: no engine for this graph"); }
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int i = 0; g.st == CUDNN_STATUS_SUCCESS && i < ncfg && i < NCFG && !p->plan; i++) {
        cudnnBackendDescriptor_t plan = NULL;
        if ((last = g_api.mk(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)) != CUDNN_STATUS_SUCCESS) break;
        if ((last = g_api.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_cd.h)) == CUDNN_STATUS_SUCCESS &&
            (last = g_api.set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i])) == CUDNN_STATUS_SUCCESS &&
            (last = g_api.fin(plan)) == CUDNN_STATUS_SUCCESS) p->plan = plan;
        else g_api.rm(plan);
    }
    if (g.st == CUDNN_STATUS_SUCCESS && !p->plan) { g.st = last; snprintf(g.where, sizeof g.where, "execution plan (no engine config finalized)"); }
    if (g.st == CUDNN_STATUS_SUCCESS &&
        (g.st = g_api.get(p->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ncfg, &p->ws)) != CUDNN_STATUS_SUCCESS)
        snprintf(g.where, sizeof g.where, "plan workspace size");
    if (g.st != CUDNN_STATUS_SUCCESS) {
        char where[160];
        snprintf(where, sizeof where, "cuDNN %s graph (B=%d T=%d C=%d NH=%d): %s", bwd ? "backward" : "forward", B, T, C,
                 NH, g.where);
        pcd_fail(where, g.st);
        pcd_plan_free(p);
        return NULL;
    }
    g_cd.nplans++;
    g_cd.built++;
    /* the workspace is grown here, when the plan is built (an eager step), never during a captured one */
    const size_t need = pcd_ws_need(p);
    if (need && !pcd_workspace(need)) return NULL;   /* the plan stays cached; the next call retries the allocation */
    return p;
}

/* The workspace: the plan's bytes, then (backward) delta's B*NH*T floats at a 256-byte boundary. */
static void *pcd_workspace(size_t bytes) {
    if (bytes <= g_cd.ws_bytes) return g_cd.ws;
    if (g_cd.ws) cudaFree(g_cd.ws);
    g_cd.ws = NULL; g_cd.ws_bytes = 0;
    cudaError_t e = cudaMalloc(&g_cd.ws, bytes);
    if (e != cudaSuccess) { g_cd.ws = NULL; pcu_fail("cudaMalloc(cuDNN workspace)", e); return NULL; }
    g_cd.ws_bytes = bytes;
    return g_cd.ws;
}

static int pcd_run(pcd_plan *p, int n, const int64_t *uids, void **ptrs, void *ws) {
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t st = g_api.mk(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (st == CUDNN_STATUS_SUCCESS) st = g_api.set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (st == CUDNN_STATUS_SUCCESS) st = g_api.set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (st == CUDNN_STATUS_SUCCESS) st = g_api.set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (st == CUDNN_STATUS_SUCCESS) st = g_api.fin(vp);
    if (st == CUDNN_STATUS_SUCCESS) st = g_api.exec(g_cd.h, p->plan, vp);
    if (vp) g_api.rm(vp);
    if (st != CUDNN_STATUS_SUCCESS) return pcd_fail(p->bwd ? "cudnnBackendExecute(backward)" : "cudnnBackendExecute(forward)", st);
    g_cd.calls++;
    return 0;
}

static const char *pcd_unsupported(int hs, int bwd_needed, char *buf, size_t n) {
#ifdef ENABLE_FP32
    (void)hs; (void)bwd_needed; (void)buf; (void)n;
    return "the fp32 build (cuDNN attention runs bf16 only)";
#else
    if (pcd_load() != 0) return g_api_why;
    if (hs < 8 || hs % 8 || hs > 256) { snprintf(buf, n, "head size %d is not a multiple of 8 in 8..256", hs); return buf; }
    cudaDeviceProp prop;
    if (!g_pcu.ready || cudaGetDeviceProperties(&prop, g_pcu.device) != cudaSuccess) return "no CUDA device initialised";
    if (prop.major < 8) { snprintf(buf, n, "sm_%d%d is older than sm_80", prop.major, prop.minor); return buf; }
    if (bwd_needed && prop.major < 9 && hs > 128) {
        snprintf(buf, n, "head size %d: cuDNN's backward takes at most 128 on sm_%d%d", hs, prop.major, prop.minor);
        return buf;
    }
    return NULL;
#endif
}

extern "C" int prism_cuda_cudnn_supports(int hs, char *why, size_t whylen) {
    char buf[200];
    const char *w = pcd_unsupported(hs, 1, buf, sizeof buf);
    if (w && why && whylen) snprintf(why, whylen, "%s", w);
    return w == NULL;
}

static int pcd_shape_ok(int B, int T, int C, int NH, const char *where) {
    if (B < 1 || T < 1 || NH < 1 || C % NH) return pcu_fail_msg(where, "bad shape");
    char buf[200];
    const char *w = pcd_unsupported(C / NH, 1, buf, sizeof buf);
    return w ? pcu_fail_msg(where, w) : 0;
}

extern "C" int prism_cuda_cudnn_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int NH) {
    PCU_NEED_INIT("cudnn_attention_forward");
    if (pcd_shape_ok(B, T, C, NH, "cudnn_attention_forward")) return -1;
    pcd_plan *p = pcd_get_plan(0, B, T, C, NH);
    if (!p) return -1;
    void *ws = pcd_workspace(p->ws > 0 ? (size_t)p->ws : 0);
    if (p->ws > 0 && !ws) return -1;
    float scale = 1.0f / sqrtf((float)(C / NH)), neginf = -INFINITY;
    const floatX *x = (const floatX *)qkv;
    int64_t uids[7] = { U_Q, U_K, U_V, U_O, U_STATS, U_SCALE, U_NEGINF };
    void *ptrs[7] = { (void *)x, (void *)(x + C), (void *)(x + 2 * C), out, lse, &scale, &neginf };
    return pcd_run(p, 7, uids, ptrs, ws);
}

extern "C" int prism_cuda_cudnn_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *out,
                                                   const float *lse, int B, int T, int C, int NH) {
    PCU_NEED_INIT("cudnn_attention_backward");
    if (pcd_shape_ok(B, T, C, NH, "cudnn_attention_backward")) return -1;
    pcd_plan *p = pcd_get_plan(1, B, T, C, NH);
    if (!p) return -1;
    size_t wsb = ((size_t)(p->ws > 0 ? p->ws : 0) + 255) / 256 * 256;
    char *ws = (char *)pcd_workspace(pcd_ws_need(p));
    if (!ws) return -1;
    float scale = 1.0f / sqrtf((float)(C / NH)), neginf = -INFINITY, one = 1.0f;
    const floatX *x = (const floatX *)qkv;
    floatX *dx = (floatX *)dqkv;
    int64_t uids[13] = { U_Q, U_K, U_V, U_O, U_STATS, U_SCALE, U_NEGINF, U_DO, U_DQ, U_DK, U_DV, U_DELTA, U_ONE };
    void *ptrs[13] = { (void *)x, (void *)(x + C), (void *)(x + 2 * C), (void *)out, (void *)lse, &scale, &neginf,
                       (void *)dout, dx, dx + C, dx + 2 * C, ws + wsb, &one };
    return pcd_run(p, 13, uids, ptrs, p->ws > 0 ? ws : NULL);
}

#else   /* no cudnn.h at build time */
extern "C" int prism_cuda_cudnn_supports(int hs, char *why, size_t whylen) {
    (void)hs;
    if (why && whylen) snprintf(why, whylen, "cuDNN not built in (cudnn.h was not found at build time)");
    return 0;
}
extern "C" int prism_cuda_cudnn_attention_forward(void *, float *, const void *, int, int, int, int) {
    return pcu_fail_msg("cudnn_attention_forward", "cuDNN not built in");
}
extern "C" int prism_cuda_cudnn_attention_backward(void *, const void *, const void *, const void *, const float *, int,
                                                   int, int, int) {
    return pcu_fail_msg("cudnn_attention_backward", "cuDNN not built in");
}
extern "C" void prism_cuda_cudnn_shutdown(void) {}
extern "C" int prism_cuda_cudnn_calls(void) { return 0; }
extern "C" int prism_cuda_cudnn_plans_built(void) { return 0; }
static thread_local struct { int off; } g_cd;
#endif

/* ---- the per-layer choice -------------------------------------------------------------------------------- */
extern "C" int prism_attention_mode_parse(const char *value, int *mode, char *err, size_t errlen) {
    if (!value || !*value || !strcmp(value, "auto")) { *mode = PRISM_ATTN_AUTO; return 0; }
    if (!strcmp(value, "fused")) { *mode = PRISM_ATTN_FUSED; return 0; }
    if (!strcmp(value, "cudnn")) { *mode = PRISM_ATTN_CUDNN; return 0; }
    if (err && errlen)
        snprintf(err, errlen, "PRISM_ATTENTION=%.60s is not an attention backend: use cudnn, fused or auto (the default)", value);
    return -1;
}

#ifdef PCD_BUILT
/* relative error max|a-b| / max|b| */
static double pcd_rel(const float *a, const float *b, size_t n) {
    double m = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;             /* NaN propagates */
        if (fabs((double)b[i]) > r) r = fabs((double)b[i]);
    }
    return r > 0 ? m / r : m;
}

static size_t pcd_al256(size_t b) { return (b + 255) / 256 * 256; }

/* cuDNN against the fused kernel at head size hs on random data: 0 when it agrees, else -1 and why. */
static int pcd_selfcheck(int hs, char *why, size_t whylen) {
    const int B = 1, NH = 2, C = NH * hs, T = 40;   /* T not a multiple of any tile */
    const size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
    float *h = (float *)malloc((3 * nq + 3 * no + 2 * nl) * sizeof(float));   /* the 8 host arrays below */
    void *d = prism_cuda_malloc((2 * nq + 3 * no) * sizeof(floatX) + 3 * nl * sizeof(float) + 8 * 256);
    int rc = -1;
    if (!h || !d) { snprintf(why, whylen, "self-check: out of memory"); goto out; }
    {
        float *hq = h, *hd = hq + nq, *ho1 = hd + no, *ho2 = ho1 + no, *hl1 = ho2 + no, *hl2 = hl1 + nl;
        float *hg1 = hl2 + nl, *hg2 = hg1 + nq;
        uint64_t s = 0x9E3779B97F4A7C15ULL ^ (uint64_t)hs;
        for (size_t i = 0; i < nq + no; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; hq[i] = (float)((s >> 40) * (2.0 / 16777216.0)) - 1.0f; }
        char *p = (char *)d;
        floatX *qkv = (floatX *)p; p += pcd_al256(nq * sizeof(floatX));
        floatX *dout = (floatX *)p; p += pcd_al256(no * sizeof(floatX));
        floatX *o1 = (floatX *)p; p += pcd_al256(no * sizeof(floatX));
        floatX *o2 = (floatX *)p; p += pcd_al256(no * sizeof(floatX));
        floatX *dq = (floatX *)p; p += pcd_al256(nq * sizeof(floatX));
        float *l1 = (float *)p; p += pcd_al256(nl * sizeof(float));
        float *l2 = (float *)p; p += pcd_al256(nl * sizeof(float));
        float *delta = (float *)p;
        (void)ho2;
        if (prism_cuda_upload_x(qkv, hq, nq) || prism_cuda_upload_x(dout, hd, no)) { snprintf(why, whylen, "self-check upload: %s", prism_cuda_last_error()); goto out; }
        if (prism_cuda_cudnn_attention_forward(o1, l1, qkv, B, T, C, NH) ||
            prism_cuda_cudnn_attention_backward(dq, dout, qkv, o1, l1, B, T, C, NH) ||
            prism_cuda_download_x(ho1, o1, no) || prism_cuda_download(hl1, l1, nl * sizeof(float)) ||
            prism_cuda_download_x(hg1, dq, nq)) {
            snprintf(why, whylen, "%s", prism_cuda_last_error());
            goto out;
        }
        if (prism_cuda_flash_attention_forward(o2, l2, qkv, B, T, C, NH) ||
            prism_cuda_flash_attention_backward(dq, delta, dout, qkv, o2, l2, B, T, C, NH) ||
            prism_cuda_download_x(ho2, o2, no) || prism_cuda_download(hl2, l2, nl * sizeof(float)) ||
            prism_cuda_download_x(hg2, dq, nq)) {
            snprintf(why, whylen, "self-check's fused reference: %s", prism_cuda_last_error());
            goto out;
        }
        double eo = pcd_rel(ho1, ho2, no), el = pcd_rel(hl1, hl2, nl), eg = pcd_rel(hg1, hg2, nq);
        if (!(eo <= 2e-2 && el <= 2e-2 && eg <= 2e-2)) {
            snprintf(why, whylen, "self-check against the fused kernel failed (relative error out %.3g, lse %.3g, dqkv %.3g > 0.02)",
                     eo, el, eg);
            goto out;
        }
        rc = 0;
    }
out:
    free(h);
    prism_cuda_free(d);
    return rc;
}

#endif

static void pcd_ranges(char *dst, size_t n, const int *on, int L) {
    size_t k = 0;
    dst[0] = 0;
    for (int l = 0; l < L; l++) {
        if (!on[l]) continue;
        int e = l;
        while (e + 1 < L && on[e + 1]) e++;
        k += snprintf(dst + k, k < n ? n - k : 0, "%s%d", k ? "," : "", l + 1);
        if (e > l) k += snprintf(dst + k, k < n ? n - k : 0, "-%d", e + 1);
        l = e;
        if (k >= n) break;
    }
}

extern "C" int prism_attention_choose(const struct model_config *cfg, const int *fused, int *backend, char *summary,
                                      size_t summarylen, char *err, size_t errlen) {
    int mode;
    const char *env = getenv("PRISM_ATTENTION");
    if (prism_attention_mode_parse(env, &mode, err, errlen) != 0) return -1;
    int hs_ok[257], hs_why_logged[257];   /* per head size: self-check state (-1 not run), reason logged */
    for (int i = 0; i <= 256; i++) { hs_ok[i] = -1; hs_why_logged[i] = 0; }
    int on[MODEL_MAX_LAYERS] = { 0 }, off[MODEL_MAX_LAYERS] = { 0 };
    for (int l = 0; l < cfg->L; l++) {
        backend[l] = PRISM_ATTN_FUSED;
        if (!fused[l] || mode == PRISM_ATTN_FUSED) { off[l] = fused[l]; continue; }
        const int NH = cfg->heads[l], hs = cfg->C / NH;
        char why[300] = "";
        int ok = 0;
        if (hs <= 256 && hs_ok[hs] == 0) ok = 0;
        else if (!prism_cuda_cudnn_supports(hs, why, sizeof why)) ok = 0;
        else {
#ifdef PCD_BUILT
            /* the plans for this layer's own shape must build (an unsupported graph shows here, not mid-training) */
            if (!pcd_get_plan(0, cfg->B, cfg->T, cfg->C, NH) || !pcd_get_plan(1, cfg->B, cfg->T, cfg->C, NH))
                snprintf(why, sizeof why, "%s", prism_cuda_last_error());
            else if (mode == PRISM_ATTN_AUTO && hs_ok[hs] < 0 && pcd_selfcheck(hs, why, sizeof why) != 0) hs_ok[hs] = 0;
            else { ok = 1; hs_ok[hs] = 1; }
#endif
        }
        if (ok) { backend[l] = PRISM_ATTN_CUDNN; on[l] = 1; continue; }
        off[l] = 1;
        if (!hs_why_logged[hs <= 256 ? hs : 0]) {
            fprintf(stderr, "attention: layer %d (head size %d): cuDNN unavailable (%s); the fused kernel runs it\n",
                    l + 1, hs, why[0] ? why : "self-check failed earlier at this head size");
            hs_why_logged[hs <= 256 ? hs : 0] = 1;
        }
    }
    char a[160], b[160], line[400];
    pcd_ranges(a, sizeof a, on, cfg->L);
    pcd_ranges(b, sizeof b, off, cfg->L);
    snprintf(line, sizeof line, "PRISM_ATTENTION=%s: cudnn layers %s, fused layers %s",
             mode == PRISM_ATTN_AUTO ? "auto" : mode == PRISM_ATTN_CUDNN ? "cudnn" : "fused", a[0] ? a : "none",
             b[0] ? b : "none");
    fprintf(stderr, "attention: %s\n", line);
    if (summary && summarylen) snprintf(summary, summarylen, "%s", line);
    return 0;
}

static void pcd_runtime_off(const char *what) {
    if (g_cd.off) return;
    g_cd.off = 1;
    fprintf(stderr, "attention: cuDNN %s failed (%s); the fused kernel runs every layer from now on\n", what,
            prism_cuda_last_error());
}

extern "C" int prism_attention_forward(int backend, void *out, float *lse, const void *qkv, int B, int T, int C, int NH) {
    if (backend == PRISM_ATTN_CUDNN && !g_cd.off) {
        if (prism_cuda_cudnn_attention_forward(out, lse, qkv, B, T, C, NH) == 0) return 0;
        pcd_runtime_off("forward");
    }
    return prism_cuda_flash_attention_forward(out, lse, qkv, B, T, C, NH);
}

extern "C" int prism_attention_backward(int backend, void *dqkv, float *delta, const void *dout, const void *qkv,
                                        const void *out, const float *lse, int B, int T, int C, int NH) {
    if (backend == PRISM_ATTN_CUDNN && !g_cd.off) {
        if (prism_cuda_cudnn_attention_backward(dqkv, dout, qkv, out, lse, B, T, C, NH) == 0) return 0;
        pcd_runtime_off("backward");
    }
    return prism_cuda_flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH);
}
