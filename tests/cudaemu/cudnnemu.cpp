/* tests/cudaemu/cudnnemu.cpp — the emulator's cuDNN: the graph (backend) API that kernels/cuda/attention_cudnn.cu
 * uses, checked against cuDNN's documented rules and run on the CPU.
 *
 * Rules checked (each violation: a non-success status and one "cudnnemu: ..." line, counted by cudnnemu_violations):
 * - descriptors: a known type; attributes of the documented value type (CUDNN_TYPE_*) for that descriptor type; no
 *   set after finalize; a descriptor-valued attribute takes a finalized descriptor of the right type; use after
 *   destroy is refused.
 * - tensors: data type, dims, strides, unique id and byte alignment all set; 1..8 dims, each >= 1, strides >= 1;
 *   by-value tensors are all-ones float scalars; virtual tensors have no by-value flag.
 * - the operation graph: a handle; every virtual tensor written by exactly one node and read only after it; a unique
 *   id names one tensor; pointwise operands broadcast to y (each dim equal or 1); GEN_INDEX has an axis within y;
 *   BINARY_SELECT has a boolean t; reductions keep rank and shrink dims to 1; matmuls are [.., M, K]·[.., K, N] ->
 *   [.., M, N] with float compute; RESHAPE y is a permuted view of x (the same dims and strides, reordered).
 * - the engine (execution-plan finalize): the fused-attention support matrix — graph I/O in bf16 or fp16 with the
 *   innermost (head) dimension contiguous (stride 1), a multiple of 8 and <= 256 (<= 128 for a graph that writes
 *   three gradients, i.e. a backward, on sm_8x), 16-byte alignment declared; float32 stats/row tensors; no
 *   non-virtual int or boolean tensor. The emulated GPU is sm_90 (CUDNNEMU_SM=80 makes it an Ampere).
 * - execution: the variant pack names exactly the graph's non-virtual uids, device pointers aligned as declared and
 *   each tensor's whole extent inside one device allocation (cudaemu_check_range); by-value pointers are host
 *   memory; the workspace covers the plan's size.
 * - CUDA graphs: during a stream capture (cudaemu_capturing) an execution is recorded, with the variant pack's
 *   pointers and by-value scalars copied at the call as the real library does, and runs at the graph's launch; the
 *   handle's stream must then be the captured one (cudaStreamPerThread), else it is a violation (on a GPU the
 *   legacy stream's work would invalidate the capture).
 * Arithmetic: each node in dependency order over float32 (bf16 rounded on load/store of graph I/O), so a wrong
 * stride, mask, scale or operand computes a wrong answer the tests see against the CPU twin.
 */
#include "cudnn.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <map>
#include <mutex>
#include <set>
#include <vector>

int cudaemu_check_range(const void *p, size_t bytes, const char *what);

static std::mutex g_lock;
static int g_violations;
static char g_last[512];
extern "C" int cudnnemu_violations(void) { return g_violations; }
extern "C" const char *cudnnemu_last_violation(void) { return g_last; }
static cudnnStatus_t bad(cudnnStatus_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last, sizeof g_last, fmt, ap);
    va_end(ap);
    g_violations++;
    fprintf(stderr, "cudnnemu: %s\n", g_last);
    return st;
}

struct attrv { cudnnBackendAttributeType_t type; int64_t count; std::vector<char> bytes; };
struct desc {
    cudnnBackendDescriptorType_t type;
    bool fin = false;
    std::map<int, attrv> a;
    /* tensors, after finalize */
    int64_t uid = 0, align = 0;
    int nd = 0;
    int64_t dims[8] = {0}, str[8] = {0};
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    bool virt = false, byval = false;
    /* graphs and plans */
    std::vector<desc *> order;        /* the graph's nodes in dependency order */
    desc *graph = nullptr;            /* heuristics, engine config, plan */
    int64_t ws = 0;                   /* plan */
};
struct cudnnContext { int magic; cudaStream_t stream; };
static std::set<desc *> g_live;

static desc *live(cudnnBackendDescriptor_t d) {
    std::lock_guard<std::mutex> g(g_lock);
    return g_live.count((desc *)d) ? (desc *)d : nullptr;
}

extern "C" size_t cudnnGetVersion(void) {
    const char *v = getenv("CUDNNEMU_VERSION");
    return v && *v ? (size_t)strtoul(v, NULL, 10) : (size_t)CUDNN_VERSION;
}
extern "C" const char *cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH: return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER: return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND: return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE: return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
    default: return "CUDNN_STATUS_(other)";
    }
}
extern "C" cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
    if (!h) return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: NULL handle pointer");
    *h = new cudnnContext{ 0x6e6e6463, (cudaStream_t)0 };
    return CUDNN_STATUS_SUCCESS;
}
extern "C" cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
    if (!h || h->magic != 0x6e6e6463) return bad(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a handle");
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}
extern "C" cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
    if (!h || h->magic != 0x6e6e6463) return bad(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a handle");
    h->magic = 0;
    delete h;
    return CUDNN_STATUS_SUCCESS;
}
extern "C" cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *d) {
    switch (t) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: break;
    default: return bad(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor: type %d is not emulated", (int)t);
    }
    desc *x = new desc;
    x->type = t;
    std::lock_guard<std::mutex> g(g_lock);
    g_live.insert(x);
    *d = x;
    return CUDNN_STATUS_SUCCESS;
}
extern "C" cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_live.erase((desc *)d)) return bad(CUDNN_STATUS_BAD_PARAM, "destroy: %p is not a live descriptor", d);
    delete (desc *)d;
    return CUDNN_STATUS_SUCCESS;
}

/* the documented value type of each attribute, and the descriptor type it belongs to */
struct attr_rule { cudnnBackendAttributeName_t n; cudnnBackendDescriptorType_t owner; cudnnBackendAttributeType_t t;
                   int ref; /* a descriptor attribute: the type it must point to, -1 any tensor/op */ };
#define DT(x) CUDNN_BACKEND_##x##_DESCRIPTOR
static const attr_rule rules[] = {
    { CUDNN_ATTR_POINTWISE_MODE, DT(POINTWISE), CUDNN_TYPE_POINTWISE_MODE, 0 },
    { CUDNN_ATTR_POINTWISE_MATH_PREC, DT(POINTWISE), CUDNN_TYPE_DATA_TYPE, 0 },
    { CUDNN_ATTR_POINTWISE_AXIS, DT(POINTWISE), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_ENGINEHEUR_MODE, DT(ENGINEHEUR), CUDNN_TYPE_HEUR_MODE, 0 },
    { CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, DT(ENGINEHEUR), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(OPERATIONGRAPH) },
    { CUDNN_ATTR_EXECUTION_PLAN_HANDLE, DT(EXECUTION_PLAN), CUDNN_TYPE_HANDLE, 0 },
    { CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, DT(EXECUTION_PLAN), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(ENGINECFG) },
    { CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, DT(OPERATION_POINTWISE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(POINTWISE) },
    { CUDNN_ATTR_OPERATION_POINTWISE_XDESC, DT(OPERATION_POINTWISE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_POINTWISE_BDESC, DT(OPERATION_POINTWISE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_POINTWISE_YDESC, DT(OPERATION_POINTWISE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_POINTWISE_TDESC, DT(OPERATION_POINTWISE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATIONGRAPH_HANDLE, DT(OPERATIONGRAPH), CUDNN_TYPE_HANDLE, 0 },
    { CUDNN_ATTR_OPERATIONGRAPH_OPS, DT(OPERATIONGRAPH), CUDNN_TYPE_BACKEND_DESCRIPTOR, -1 },
    { CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, DT(TENSOR), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_TENSOR_DATA_TYPE, DT(TENSOR), CUDNN_TYPE_DATA_TYPE, 0 },
    { CUDNN_ATTR_TENSOR_DIMENSIONS, DT(TENSOR), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_TENSOR_STRIDES, DT(TENSOR), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_TENSOR_UNIQUE_ID, DT(TENSOR), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_TENSOR_IS_VIRTUAL, DT(TENSOR), CUDNN_TYPE_BOOLEAN, 0 },
    { CUDNN_ATTR_TENSOR_IS_BY_VALUE, DT(TENSOR), CUDNN_TYPE_BOOLEAN, 0 },
    { CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, DT(VARIANT_PACK), CUDNN_TYPE_INT64, 0 },
    { CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, DT(VARIANT_PACK), CUDNN_TYPE_VOID_PTR, 0 },
    { CUDNN_ATTR_VARIANT_PACK_WORKSPACE, DT(VARIANT_PACK), CUDNN_TYPE_VOID_PTR, 0 },
    { CUDNN_ATTR_MATMUL_COMP_TYPE, DT(MATMUL), CUDNN_TYPE_DATA_TYPE, 0 },
    { CUDNN_ATTR_OPERATION_MATMUL_ADESC, DT(OPERATION_MATMUL), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_MATMUL_BDESC, DT(OPERATION_MATMUL), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_MATMUL_CDESC, DT(OPERATION_MATMUL), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_MATMUL_DESC, DT(OPERATION_MATMUL), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(MATMUL) },
    { CUDNN_ATTR_REDUCTION_OPERATOR, DT(REDUCTION), CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 0 },
    { CUDNN_ATTR_REDUCTION_COMP_TYPE, DT(REDUCTION), CUDNN_TYPE_DATA_TYPE, 0 },
    { CUDNN_ATTR_OPERATION_REDUCTION_XDESC, DT(OPERATION_REDUCTION), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_REDUCTION_YDESC, DT(OPERATION_REDUCTION), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_REDUCTION_DESC, DT(OPERATION_REDUCTION), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(REDUCTION) },
    { CUDNN_ATTR_OPERATION_RESHAPE_XDESC, DT(OPERATION_RESHAPE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
    { CUDNN_ATTR_OPERATION_RESHAPE_YDESC, DT(OPERATION_RESHAPE), CUDNN_TYPE_BACKEND_DESCRIPTOR, DT(TENSOR) },
};
static size_t type_bytes(cudnnBackendAttributeType_t t) {
    switch (t) {
    case CUDNN_TYPE_HANDLE: case CUDNN_TYPE_VOID_PTR: case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void *);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return 8;
    case CUDNN_TYPE_FLOAT: return 4;
    case CUDNN_TYPE_DOUBLE: return 8;
    default: return 4;   /* enums */
    }
}
static bool is_op(cudnnBackendDescriptorType_t t) {
    return t == DT(OPERATION_POINTWISE) || t == DT(OPERATION_MATMUL) || t == DT(OPERATION_REDUCTION) ||
           t == DT(OPERATION_RESHAPE);
}

extern "C" cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                                                  cudnnBackendAttributeType_t t, int64_t count, const void *v) {
    desc *x = live(d);
    if (!x) return bad(CUDNN_STATUS_BAD_PARAM, "set attribute %d on %p: not a live descriptor", (int)n, d);
    if (x->fin) return bad(CUDNN_STATUS_BAD_PARAM, "set attribute %d: descriptor type %d is already finalized", (int)n, (int)x->type);
    const attr_rule *r = NULL;
    for (const attr_rule &q : rules) if (q.n == n && q.owner == x->type) r = &q;
    if (!r) return bad(CUDNN_STATUS_BAD_PARAM, "attribute %d does not belong to descriptor type %d", (int)n, (int)x->type);
    if (r->t != t) return bad(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "attribute %d takes value type %d, not %d", (int)n, (int)r->t, (int)t);
    if (count < 1 || !v) return bad(CUDNN_STATUS_BAD_PARAM, "attribute %d: %lld values at %p", (int)n, (long long)count, v);
    if (t == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        for (int64_t i = 0; i < count; i++) {
            desc *y = live(((cudnnBackendDescriptor_t const *)v)[i]);
            if (!y) return bad(CUDNN_STATUS_BAD_PARAM, "attribute %d: value %lld is not a live descriptor", (int)n, (long long)i);
            if (r->ref == -1 ? !is_op(y->type) : (int)y->type != r->ref)
                return bad(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, "attribute %d: descriptor of type %d where %d belongs",
                           (int)n, (int)y->type, r->ref);
            if (!y->fin) return bad(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "attribute %d: descriptor not finalized", (int)n);
        }
    }
    attrv a;
    a.type = t; a.count = count;
    a.bytes.assign((const char *)v, (const char *)v + count * type_bytes(t));
    x->a[(int)n] = a;
    return CUDNN_STATUS_SUCCESS;
}

template <class T> static const T *getv(desc *x, int n, int64_t *count = nullptr) {
    auto it = x->a.find(n);
    if (it == x->a.end()) return nullptr;
    if (count) *count = it->second.count;
    return (const T *)it->second.bytes.data();
}
static desc *getd(desc *x, int n) { desc *const *p = getv<desc *>(x, n); return p ? *p : nullptr; }

/* ---- the graph ------------------------------------------------------------------------------------------- */
static void op_io(desc *op, std::vector<desc *> &in, desc **out) {
    in.clear(); *out = nullptr;
    switch (op->type) {
    case DT(OPERATION_POINTWISE):
        for (int n : { CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_ATTR_OPERATION_POINTWISE_TDESC })
            if (desc *t = getd(op, n)) in.push_back(t);
        *out = getd(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC); break;
    case DT(OPERATION_MATMUL):
        in.push_back(getd(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC)); in.push_back(getd(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC));
        *out = getd(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC); break;
    case DT(OPERATION_REDUCTION):
        in.push_back(getd(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC)); *out = getd(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC); break;
    case DT(OPERATION_RESHAPE):
        in.push_back(getd(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC)); *out = getd(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC); break;
    default: break;
    }
}
static bool same_rank(desc *a, desc *b) { return a && b && a->nd == b->nd; }
static bool bcast_ok(desc *x, desc *y) {
    if (!same_rank(x, y)) return false;
    for (int i = 0; i < y->nd; i++) if (x->dims[i] != y->dims[i] && x->dims[i] != 1) return false;
    return true;
}

static cudnnStatus_t fin_op(desc *x) {
    std::vector<desc *> in; desc *out;
    op_io(x, in, &out);
    for (desc *t : in) if (!t) return bad(CUDNN_STATUS_BAD_PARAM, "operation %d: an input tensor is not set", (int)x->type);
    if (!out) return bad(CUDNN_STATUS_BAD_PARAM, "operation %d: the output tensor is not set", (int)x->type);
    if (x->type == DT(OPERATION_POINTWISE)) {
        desc *pw = getd(x, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
        if (!pw) return bad(CUDNN_STATUS_BAD_PARAM, "pointwise operation without its pointwise descriptor");
        const cudnnPointwiseMode_t *m = getv<cudnnPointwiseMode_t>(pw, CUDNN_ATTR_POINTWISE_MODE);
        bool binary = *m == CUDNN_POINTWISE_ADD || *m == CUDNN_POINTWISE_SUB || *m == CUDNN_POINTWISE_MUL ||
                      *m == CUDNN_POINTWISE_DIV || *m == CUDNN_POINTWISE_CMP_GE || *m == CUDNN_POINTWISE_BINARY_SELECT;
        desc *b = getd(x, CUDNN_ATTR_OPERATION_POINTWISE_BDESC), *tt = getd(x, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
        if (binary != (b != nullptr)) return bad(CUDNN_STATUS_BAD_PARAM, "pointwise mode %d: %s b operand", (int)*m, binary ? "needs a" : "takes no");
        if ((*m == CUDNN_POINTWISE_BINARY_SELECT) != (tt != nullptr)) return bad(CUDNN_STATUS_BAD_PARAM, "pointwise mode %d: t operand is for BINARY_SELECT only, which needs it", (int)*m);
        if (tt && tt->dt != CUDNN_DATA_BOOLEAN) return bad(CUDNN_STATUS_BAD_PARAM, "BINARY_SELECT: t must be boolean");
        for (desc *t : in) if (!bcast_ok(t, out)) return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "pointwise mode %d: operand uid %lld does not broadcast to y uid %lld", (int)*m, (long long)t->uid, (long long)out->uid);
        if (*m == CUDNN_POINTWISE_GEN_INDEX) {
            const int64_t *ax = getv<int64_t>(pw, CUDNN_ATTR_POINTWISE_AXIS);
            if (!ax || *ax < 0 || *ax >= out->nd) return bad(CUDNN_STATUS_BAD_PARAM, "GEN_INDEX without an axis inside y");
        }
        if (*m == CUDNN_POINTWISE_CMP_GE && out->dt != CUDNN_DATA_BOOLEAN) return bad(CUDNN_STATUS_BAD_PARAM, "CMP_GE: y must be boolean");
    } else if (x->type == DT(OPERATION_MATMUL)) {
        desc *A = in[0], *B = in[1], *C = out, *mm = getd(x, CUDNN_ATTR_OPERATION_MATMUL_DESC);
        if (!mm) return bad(CUDNN_STATUS_BAD_PARAM, "matmul operation without a matmul descriptor");
        int r = C->nd;
        if (!same_rank(A, C) || !same_rank(B, C) || r < 2 || A->dims[r - 2] != C->dims[r - 2] || B->dims[r - 1] != C->dims[r - 1] ||
            A->dims[r - 1] != B->dims[r - 2])
            return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "matmul uids %lld x %lld -> %lld: not [.., M, K] x [.., K, N] -> [.., M, N]",
                       (long long)A->uid, (long long)B->uid, (long long)C->uid);
        for (int i = 0; i < r - 2; i++)
            if ((A->dims[i] != C->dims[i] && A->dims[i] != 1) || (B->dims[i] != C->dims[i] && B->dims[i] != 1))
                return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "matmul: batch dim %d differs", i);
    } else if (x->type == DT(OPERATION_REDUCTION)) {
        if (!getd(x, CUDNN_ATTR_OPERATION_REDUCTION_DESC)) return bad(CUDNN_STATUS_BAD_PARAM, "reduction without its descriptor");
        if (!same_rank(in[0], out)) return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "reduction changes rank");
        for (int i = 0; i < out->nd; i++) if (out->dims[i] != in[0]->dims[i] && out->dims[i] != 1)
            return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "reduction: y dim %d is neither x's nor 1", i);
    } else if (x->type == DT(OPERATION_RESHAPE)) {
        desc *X = in[0];
        if (!same_rank(X, out)) return bad(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "reshape changes rank");
        std::multiset<std::pair<int64_t, int64_t>> a, b;
        for (int i = 0; i < X->nd; i++) { a.insert({ X->dims[i], X->str[i] }); b.insert({ out->dims[i], out->str[i] }); }
        if (a != b) return bad(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "reshape uid %lld -> %lld is not a permuted view (dims/strides differ)",
                               (long long)X->uid, (long long)out->uid);
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_tensor(desc *x) {
    int64_t nd = 0, ns = 0;
    const cudnnDataType_t *dt = getv<cudnnDataType_t>(x, CUDNN_ATTR_TENSOR_DATA_TYPE);
    const int64_t *dims = getv<int64_t>(x, CUDNN_ATTR_TENSOR_DIMENSIONS, &nd), *str = getv<int64_t>(x, CUDNN_ATTR_TENSOR_STRIDES, &ns);
    const int64_t *uid = getv<int64_t>(x, CUDNN_ATTR_TENSOR_UNIQUE_ID), *al = getv<int64_t>(x, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
    if (!dt || !dims || !str || !uid || !al)
        return bad(CUDNN_STATUS_BAD_PARAM, "tensor: data type, dimensions, strides, unique id and byte alignment are all required (uid %lld)",
                   uid ? (long long)*uid : -1LL);
    if (nd != ns || nd < 1 || nd > 8) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld: %lld dims, %lld strides", (long long)*uid, (long long)nd, (long long)ns);
    x->nd = (int)nd; x->uid = *uid; x->align = *al; x->dt = *dt;
    for (int i = 0; i < nd; i++) {
        if (dims[i] < 1 || str[i] < 1) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld: dim %d = %lld, stride %lld", (long long)*uid, i, (long long)dims[i], (long long)str[i]);
        x->dims[i] = dims[i]; x->str[i] = str[i];
    }
    const bool *v = getv<bool>(x, CUDNN_ATTR_TENSOR_IS_VIRTUAL), *bv = getv<bool>(x, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
    x->virt = v && *v; x->byval = bv && *bv;
    if (x->virt && x->byval) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld: virtual and by-value", (long long)*uid);
    if (x->byval) {
        for (int i = 0; i < nd; i++) if (dims[i] != 1) return bad(CUDNN_STATUS_BAD_PARAM, "by-value tensor uid %lld is not a scalar", (long long)*uid);
        if (*dt != CUDNN_DATA_FLOAT) return bad(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "by-value tensor uid %lld: float only here", (long long)*uid);
    }
    if (*al < 1 || (*al & (*al - 1))) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld: alignment %lld", (long long)*uid, (long long)*al);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fin_graph(desc *x) {
    int64_t n = 0;
    desc *const *ops = getv<desc *>(x, CUDNN_ATTR_OPERATIONGRAPH_OPS, &n);
    if (!getv<cudnnHandle_t>(x, CUDNN_ATTR_OPERATIONGRAPH_HANDLE)) return bad(CUDNN_STATUS_BAD_PARAM, "operation graph without a handle");
    if (!ops) return bad(CUDNN_STATUS_BAD_PARAM, "operation graph without operations");
    std::map<int64_t, desc *> byuid;
    std::map<desc *, int> writers;
    std::vector<desc *> in; desc *out;
    for (int64_t i = 0; i < n; i++) {
        op_io(ops[i], in, &out);
        in.push_back(out);
        for (desc *t : in) {
            auto it = byuid.find(t->uid);
            if (it != byuid.end() && it->second != t) return bad(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, "uid %lld names two tensors", (long long)t->uid);
            byuid[t->uid] = t;
        }
        if (writers[out]++) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld is written by two operations", (long long)out->uid);
        if (out->byval) return bad(CUDNN_STATUS_BAD_PARAM, "tensor uid %lld: an operation writes a by-value tensor", (long long)out->uid);
    }
    /* dependency order: a node runs once every virtual input is written (and every RESHAPE source) */
    std::set<desc *> done;
    std::vector<bool> used(n, false);
    x->order.clear();
    for (bool progress = true; progress;) {
        progress = false;
        for (int64_t i = 0; i < n; i++) {
            if (used[i]) continue;
            op_io(ops[i], in, &out);
            bool ready = true;
            for (desc *t : in) if ((t->virt || writers.count(t)) && !done.count(t)) ready = false;
            if (!ready) continue;
            used[i] = true; done.insert(out); x->order.push_back(ops[i]); progress = true;
        }
    }
    if ((int64_t)x->order.size() != n) return bad(CUDNN_STATUS_BAD_PARAM, "operation graph: a virtual tensor is read but never written (or a cycle)");
    for (auto &kv : byuid) if (kv.second->virt && !writers.count(kv.second))
        return bad(CUDNN_STATUS_BAD_PARAM, "virtual tensor uid %lld is never written", (long long)kv.first);
    return CUDNN_STATUS_SUCCESS;
}

static int emu_sm(void) { const char *s = getenv("CUDNNEMU_SM"); return s && *s ? atoi(s) : 90; }

static cudnnPointwiseMode_t pw_mode(desc *op) {
    return *getv<cudnnPointwiseMode_t>(getd(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), CUDNN_ATTR_POINTWISE_MODE);
}
static bool is_pw(desc *op, cudnnPointwiseMode_t m) { return op && op->type == DT(OPERATION_POINTWISE) && pw_mode(op) == m; }

/* The fused-attention pattern as cudnn-frontend lowers causal SDPA for cuDNN < 9.21 (its
 * scaled_dot_product_flash_attention.h and score modifiers; the facts, not its code), which is the pattern the
 * engine recognises: a graph that departs is refused at plan finalize with CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN
 * (a NOT_SUPPORTED status), as the real library refuses a graph no engine matches.
 * - a matmul with a virtual A and a graph-I/O B takes A in B's data type (the frontend sets the probabilities P fed
 *   to P·V, and the transposed Pᵀ / dSᵀ fed to Pᵀ·dO / dSᵀ·Q, to Q's type "by requirement of the backend");
 * - a matmul with a graph-I/O A takes B from graph I/O too (Q·Kᵀ and dO·Vᵀ read Kᵀ and Vᵀ as transposed views);
 * - GEN_INDEX computes in INT32 into an INT32 tensor; CMP_* compute in BOOLEAN;
 * - backward: the mask is applied to S − stats (the SUB that reads the stats takes the unmasked scaled scores and
 *   its output is the BINARY_SELECT's x), and the per-row softmax_sum (dO∘O summed) is written by the MUL with the
 *   dropout scale-inverse (×1 without dropout), not by the reduction. */
static cudnnStatus_t frontend_pattern(desc *graph, bool backward) {
    std::map<desc *, desc *> writer;
    std::vector<desc *> in; desc *out;
    for (desc *op : graph->order) { op_io(op, in, &out); writer[out] = op; }
    for (desc *op : graph->order) {
        op_io(op, in, &out);
        if (op->type == DT(OPERATION_MATMUL)) {
            desc *A = in[0], *B = in[1];
            if (A->virt && !B->virt && A->dt != B->dt)
                return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "matmul uid %lld x %lld: the virtual A is data type %d, the engine takes it in the I/O type %d (cudnn-frontend sets P's type to Q's)",
                           (long long)A->uid, (long long)B->uid, (int)A->dt, (int)B->dt);
            if (!A->virt && B->virt)
                return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "matmul uid %lld x %lld: A is graph I/O but B is virtual (the engine reads Kᵀ / Vᵀ as graph I/O)",
                           (long long)A->uid, (long long)B->uid);
        } else if (op->type == DT(OPERATION_POINTWISE)) {
            const cudnnPointwiseMode_t m = pw_mode(op);
            const cudnnDataType_t *prec = getv<cudnnDataType_t>(getd(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), CUDNN_ATTR_POINTWISE_MATH_PREC);
            if (m == CUDNN_POINTWISE_GEN_INDEX && (!prec || *prec != CUDNN_DATA_INT32 || out->dt != CUDNN_DATA_INT32))
                return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "GEN_INDEX into uid %lld: compute type and y must be INT32", (long long)out->uid);
            if (m == CUDNN_POINTWISE_CMP_GE && (!prec || *prec != CUDNN_DATA_BOOLEAN))
                return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "CMP_GE into uid %lld: compute type must be BOOLEAN", (long long)out->uid);
        }
    }
    if (!backward) return CUDNN_STATUS_SUCCESS;
    for (desc *op : graph->order) {
        op_io(op, in, &out);
        if (!is_pw(op, CUDNN_POINTWISE_SUB)) continue;
        desc *b = in[1];
        if (b->virt || b->dt != CUDNN_DATA_FLOAT) continue;
        if (writer.count(b)) {   /* softmax_sum, written by the graph */
            desc *w = writer[b];
            if (!is_pw(w, CUDNN_POINTWISE_MUL))
                return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "backward: softmax_sum uid %lld is written by op type %d, not the MUL with the dropout scale-inverse (x1)",
                           (long long)b->uid, (int)w->type);
            continue;
        }
        /* the stats: S - stats, then the mask */
        if (is_pw(writer.count(in[0]) ? writer[in[0]] : nullptr, CUDNN_POINTWISE_BINARY_SELECT))
            return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "backward: the mask is applied before S - stats (uid %lld); the engine takes the mask on S - stats", (long long)b->uid);
        bool masked = false;
        for (desc *o2 : graph->order) {
            std::vector<desc *> in2; desc *out2;
            op_io(o2, in2, &out2);
            if (is_pw(o2, CUDNN_POINTWISE_BINARY_SELECT) && in2[0] == out) masked = true;
        }
        if (!masked) return bad(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "backward: S - stats (uid %lld) is not masked", (long long)out->uid);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* the fused-attention engine's support matrix, on the graph's I/O */
static cudnnStatus_t engine_support(desc *graph) {
    cudnnStatus_t st;
    std::set<desc *> io;
    int grads = 0;
    std::vector<desc *> in; desc *out;
    for (desc *op : graph->order) {
        op_io(op, in, &out);
        in.push_back(out);
        for (desc *t : in) if (!t->virt && !t->byval) io.insert(t);
        if (!out->virt && (out->dt == CUDNN_DATA_BFLOAT16 || out->dt == CUDNN_DATA_HALF)) grads++;
        if (op->type == DT(OPERATION_MATMUL)) {
            const cudnnDataType_t *ct = getv<cudnnDataType_t>(getd(op, CUDNN_ATTR_OPERATION_MATMUL_DESC), CUDNN_ATTR_MATMUL_COMP_TYPE);
            if (!ct || *ct != CUDNN_DATA_FLOAT) return bad(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "matmul compute type must be float");
        }
    }
    const bool backward = grads >= 3;
    if ((st = frontend_pattern(graph, backward)) != CUDNN_STATUS_SUCCESS) return st;
    const int64_t dmax = backward && emu_sm() < 90 ? 128 : 256;
    for (desc *t : io) {
        if (t->dt == CUDNN_DATA_BFLOAT16 || t->dt == CUDNN_DATA_HALF) {
            if (t->nd != 4) return bad(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "attention tensor uid %lld: 4 dims (b, h, s, d) expected", (long long)t->uid);
            int inner = t->str[3] == 1 ? 3 : t->str[2] == 1 ? 2 : -1;   /* the head dim: stride 1 (dim 2 in a transposed view) */
            if (inner < 0) return bad(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "attention tensor uid %lld: the head dimension is not contiguous (strides %lld,%lld,%lld,%lld)",
                                      (long long)t->uid, (long long)t->str[0], (long long)t->str[1], (long long)t->str[2], (long long)t->str[3]);
            int64_t d = t->dims[inner];
            if (d % 8 || d > dmax) return bad(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "attention tensor uid %lld: head size %lld (multiple of 8 up to %lld on sm_%d)",
                                              (long long)t->uid, (long long)d, (long long)dmax, emu_sm());
            if (t->align < 16) return bad(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "attention tensor uid %lld: 16-byte alignment required", (long long)t->uid);
        } else if (t->dt == CUDNN_DATA_FLOAT) {
            if (t->nd != 4 || t->dims[3] != 1) return bad(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "float tensor uid %lld: only (b, h, s, 1) statistics", (long long)t->uid);
        } else return bad(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor uid %lld: data type %d in graph I/O", (long long)t->uid, (int)t->dt);
    }
    return CUDNN_STATUS_SUCCESS;
}

extern "C" cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
    desc *x = live(d);
    if (!x) return bad(CUDNN_STATUS_BAD_PARAM, "finalize %p: not a live descriptor", d);
    if (x->fin) return bad(CUDNN_STATUS_BAD_PARAM, "finalize: already finalized");
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    switch (x->type) {
    case DT(TENSOR): st = fin_tensor(x); break;
    case DT(POINTWISE):
        if (!getv<int>(x, CUDNN_ATTR_POINTWISE_MODE)) st = bad(CUDNN_STATUS_BAD_PARAM, "pointwise descriptor without a mode");
        break;
    case DT(REDUCTION): {
        const cudnnReduceTensorOp_t *o = getv<cudnnReduceTensorOp_t>(x, CUDNN_ATTR_REDUCTION_OPERATOR);
        if (!o || (*o != CUDNN_REDUCE_TENSOR_ADD && *o != CUDNN_REDUCE_TENSOR_MAX)) st = bad(CUDNN_STATUS_NOT_SUPPORTED, "reduction: ADD or MAX");
        break;
    }
    case DT(OPERATION_POINTWISE): case DT(OPERATION_MATMUL): case DT(OPERATION_REDUCTION): case DT(OPERATION_RESHAPE):
        st = fin_op(x); break;
    case DT(OPERATIONGRAPH): st = fin_graph(x); break;
    case DT(ENGINEHEUR):
        if (!(x->graph = getd(x, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)) || !getv<int>(x, CUDNN_ATTR_ENGINEHEUR_MODE))
            st = bad(CUDNN_STATUS_BAD_PARAM, "engine heuristics: graph and mode are required");
        break;
    case DT(ENGINECFG): if (!x->graph) st = bad(CUDNN_STATUS_BAD_PARAM, "engine config not filled by heuristics"); break;
    case DT(EXECUTION_PLAN): {
        desc *cfg = getd(x, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
        if (!getv<cudnnHandle_t>(x, CUDNN_ATTR_EXECUTION_PLAN_HANDLE) || !cfg) { st = bad(CUDNN_STATUS_BAD_PARAM, "execution plan: handle and engine config are required"); break; }
        x->graph = cfg->graph;
        if ((st = engine_support(x->graph)) != CUDNN_STATUS_SUCCESS) break;
        /* a workspace the caller must provide: one float per (b, h, s) row of the first statistics tensor */
        x->ws = 0;
        for (desc *op : x->graph->order) {
            std::vector<desc *> in; desc *out;
            op_io(op, in, &out);
            if (!out->virt && out->dt == CUDNN_DATA_FLOAT) { x->ws = out->dims[0] * out->dims[1] * out->dims[2] * 4; break; }
        }
        break;
    }
    case DT(VARIANT_PACK):
        if (!getv<int64_t>(x, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS) || !getv<void *>(x, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS))
            st = bad(CUDNN_STATUS_BAD_PARAM, "variant pack: unique ids and data pointers are required");
        break;
    default: break;
    }
    if (st == CUDNN_STATUS_SUCCESS) x->fin = true;
    return st;
}

extern "C" cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t n,
                                                  cudnnBackendAttributeType_t t, int64_t req, int64_t *count, void *v) {
    desc *x = live(d);
    if (!x || !x->fin) return bad(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "get attribute %d: descriptor not live and finalized", (int)n);
    if (x->type == DT(ENGINEHEUR) && n == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
        if (t != CUDNN_TYPE_BACKEND_DESCRIPTOR || req < 1 || !v) return bad(CUDNN_STATUS_BAD_PARAM, "heuristics results: descriptors to fill");
        desc *c = live(((cudnnBackendDescriptor_t *)v)[0]);
        if (!c || c->type != DT(ENGINECFG) || c->fin) return bad(CUDNN_STATUS_BAD_PARAM, "heuristics results: created, unfinalized engine configs expected");
        c->graph = x->graph;
        c->fin = true;
        if (count) *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    if (x->type == DT(EXECUTION_PLAN) && n == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
        if (t != CUDNN_TYPE_INT64 || !v) return bad(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "workspace size is INT64");
        *(int64_t *)v = x->ws;
        if (count) *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    return bad(CUDNN_STATUS_NOT_SUPPORTED, "get attribute %d of descriptor type %d is not emulated", (int)n, (int)x->type);
}

/* ---- execution ------------------------------------------------------------------------------------------- */
struct view { float *f = nullptr; void *dev = nullptr; cudnnDataType_t dt = CUDNN_DATA_FLOAT; float scalar = 0; bool sc = false; };
static size_t extent_elems(const desc *t) {
    size_t e = 1;
    for (int i = 0; i < t->nd; i++) e += (size_t)(t->dims[i] - 1) * t->str[i];
    return e;
}
static size_t dt_size(cudnnDataType_t dt) { return dt == CUDNN_DATA_BFLOAT16 || dt == CUDNN_DATA_HALF ? 2 : 4; }

struct runner {
    std::map<desc *, view> v;
    std::vector<std::vector<float>> bufs;
    /* w is v[t], looked up once per node by the caller (std::map references stay valid) */
    static float ld(const desc *t, const view &w, const int64_t *idx) {
        if (w.sc) return w.scalar;
        size_t o = 0;
        for (int i = 0; i < t->nd; i++) o += (size_t)(t->dims[i] == 1 ? 0 : idx[i]) * t->str[i];
        if (w.f) return w.f[o];
        if (w.dt == CUDNN_DATA_BFLOAT16) return __bfloat162float(((const __nv_bfloat16 *)w.dev)[o]);
        return ((const float *)w.dev)[o];
    }
    static void st(const desc *t, view &w, const int64_t *idx, float x) {
        size_t o = 0;
        for (int i = 0; i < t->nd; i++) o += (size_t)idx[i] * t->str[i];
        if (w.f) w.f[o] = x;
        else if (w.dt == CUDNN_DATA_BFLOAT16) ((__nv_bfloat16 *)w.dev)[o] = __float2bfloat16_rn(x);
        else ((float *)w.dev)[o] = x;
    }
    void alloc(desc *t) {
        if (v.count(t)) return;
        bufs.emplace_back(extent_elems(t), NAN);
        v[t].f = bufs.back().data();
    }
};
template <class F> static void each(const desc *t, F f) {
    int64_t idx[8] = {0};
    size_t n = 1;
    for (int i = 0; i < t->nd; i++) n *= (size_t)t->dims[i];
    for (size_t k = 0; k < n; k++) {
        size_t r = k;
        for (int i = t->nd - 1; i >= 0; i--) { idx[i] = (int64_t)(r % t->dims[i]); r /= t->dims[i]; }
        f(idx);
    }
}

static void run_op(runner &R, desc *op) {
    std::vector<desc *> in; desc *y;
    op_io(op, in, &y);
    if (op->type == DT(OPERATION_RESHAPE)) { R.v[y] = R.v[in[0]]; return; }   /* a view of the same storage */
    if (y->virt) R.alloc(y);
    if (op->type == DT(OPERATION_POINTWISE)) {
        desc *pw = getd(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
        const cudnnPointwiseMode_t m = *getv<cudnnPointwiseMode_t>(pw, CUDNN_ATTR_POINTWISE_MODE);
        desc *x = getd(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC), *b = getd(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        desc *t = getd(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
        const int64_t *ax = getv<int64_t>(pw, CUDNN_ATTR_POINTWISE_AXIS);
        view &wy = R.v[y], &wx = R.v[x], *wb = b ? &R.v[b] : nullptr, *wt = t ? &R.v[t] : nullptr;
        each(y, [&](const int64_t *i) {
            float a = m == CUDNN_POINTWISE_GEN_INDEX ? 0 : runner::ld(x, wx, i), c = b ? runner::ld(b, *wb, i) : 0, r = 0;
            switch (m) {
            case CUDNN_POINTWISE_ADD: r = a + c; break;
            case CUDNN_POINTWISE_SUB: r = a - c; break;
            case CUDNN_POINTWISE_MUL: r = a * c; break;
            case CUDNN_POINTWISE_DIV: r = a / c; break;
            case CUDNN_POINTWISE_EXP: r = expf(a); break;
            case CUDNN_POINTWISE_LOG: r = logf(a); break;
            case CUDNN_POINTWISE_IDENTITY: r = a; break;
            case CUDNN_POINTWISE_CMP_GE: r = a >= c ? 1.0f : 0.0f; break;
            case CUDNN_POINTWISE_GEN_INDEX: r = (float)i[*ax]; break;
            case CUDNN_POINTWISE_BINARY_SELECT: r = runner::ld(t, *wt, i) != 0 ? a : c; break;
            }
            runner::st(y, wy, i, r);
        });
    } else if (op->type == DT(OPERATION_REDUCTION)) {
        const cudnnReduceTensorOp_t o = *getv<cudnnReduceTensorOp_t>(getd(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC), CUDNN_ATTR_REDUCTION_OPERATOR);
        /* accumulate in float, in order, into a float scratch view of y, then store */
        std::vector<float> tmp(extent_elems(y), o == CUDNN_REDUCE_TENSOR_MAX ? -INFINITY : 0.0f);
        view &wx = R.v[in[0]], &wy = R.v[y];
        each(in[0], [&](const int64_t *i) {
            size_t off = 0;
            for (int k = 0; k < y->nd; k++) off += (size_t)(y->dims[k] == 1 ? 0 : i[k]) * y->str[k];
            float xv = runner::ld(in[0], wx, i);
            tmp[off] = o == CUDNN_REDUCE_TENSOR_MAX ? fmaxf(tmp[off], xv) : tmp[off] + xv;
        });
        each(y, [&](const int64_t *i) {
            size_t off = 0;
            for (int k = 0; k < y->nd; k++) off += (size_t)i[k] * y->str[k];
            runner::st(y, wy, i, tmp[off]);
        });
    } else if (op->type == DT(OPERATION_MATMUL)) {
        desc *A = in[0], *B = in[1];
        const int r = y->nd;
        const int64_t K = A->dims[r - 1];
        view &wa = R.v[A], &wb = R.v[B], &wy = R.v[y];
        each(y, [&](const int64_t *i) {
            int64_t ia[8], ib[8];
            memcpy(ia, i, sizeof ia); memcpy(ib, i, sizeof ib);
            double s = 0;
            for (int64_t k = 0; k < K; k++) {
                ia[r - 1] = k; ib[r - 2] = k; ib[r - 1] = i[r - 1];
                s += (double)runner::ld(A, wa, ia) * runner::ld(B, wb, ib);
            }
            runner::st(y, wy, i, (float)s);
        });
    }
}

extern "C" cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan_, cudnnBackendDescriptor_t pack_) {
    desc *plan = live(plan_), *pack = live(pack_);
    if (!h || h->magic != 0x6e6e6463) return bad(CUDNN_STATUS_BAD_PARAM, "execute: not a cuDNN handle");
    if (!plan || plan->type != DT(EXECUTION_PLAN) || !plan->fin) return bad(CUDNN_STATUS_BAD_PARAM, "execute: not a finalized execution plan");
    if (!pack || pack->type != DT(VARIANT_PACK) || !pack->fin) return bad(CUDNN_STATUS_BAD_PARAM, "execute: not a finalized variant pack");
    int64_t nu = 0, np = 0;
    const int64_t *uids = getv<int64_t>(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, &nu);
    void *const *ptrs = getv<void *>(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, &np);
    void *const *wsp = getv<void *>(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    if (nu != np) return bad(CUDNN_STATUS_BAD_PARAM, "variant pack: %lld uids, %lld pointers", (long long)nu, (long long)np);
    if (plan->ws > 0 && (!wsp || !*wsp || cudaemu_check_range(*wsp, (size_t)plan->ws, "cuDNN workspace")))
        return bad(CUDNN_STATUS_BAD_PARAM, "execute: the plan needs %lld workspace bytes and none (or too few) were given", (long long)plan->ws);
    /* the graph's non-virtual tensors, by uid */
    std::map<int64_t, desc *> need;
    std::vector<desc *> in; desc *out;
    for (desc *op : plan->graph->order) {
        op_io(op, in, &out);
        in.push_back(out);
        for (desc *t : in) if (!t->virt) need[t->uid] = t;
    }
    runner R;
    std::set<int64_t> seen;
    for (int64_t i = 0; i < nu; i++) {
        auto it = need.find(uids[i]);
        if (it == need.end()) return bad(CUDNN_STATUS_BAD_PARAM, "variant pack: uid %lld is not a tensor of the graph", (long long)uids[i]);
        if (!seen.insert(uids[i]).second) return bad(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, "variant pack: uid %lld twice", (long long)uids[i]);
        desc *t = it->second;
        if (!ptrs[i]) return bad(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "variant pack: uid %lld has a NULL pointer", (long long)uids[i]);
        view w;
        if (t->byval) { w.sc = true; w.scalar = *(const float *)ptrs[i]; }
        else {
            if ((uintptr_t)ptrs[i] % (uintptr_t)t->align)
                return bad(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "uid %lld: pointer %p is not %lld-byte aligned", (long long)t->uid, ptrs[i], (long long)t->align);
            char what[64];
            snprintf(what, sizeof what, "cuDNN tensor uid %lld", (long long)t->uid);
            if (cudaemu_check_range(ptrs[i], extent_elems(t) * dt_size(t->dt), what))
                return bad(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "uid %lld: its dims and strides reach past the device allocation", (long long)t->uid);
            w.dev = ptrs[i]; w.dt = t->dt;
        }
        R.v[t] = w;
    }
    for (auto &kv : need) if (!seen.count(kv.first)) return bad(CUDNN_STATUS_BAD_PARAM, "variant pack: no pointer for uid %lld", (long long)kv.first);
    if (cudaemu_capturing()) {
        if (h->stream != cudaStreamPerThread)
            return bad(CUDNN_STATUS_BAD_PARAM, "execute during a stream capture on a handle whose stream is not the captured cudaStreamPerThread (cudnnSetStream)");
        desc *g = plan->graph;   /* the plan (and its graph) must outlive the captured graph, as on a GPU */
        cudaemu_record("cudnnBackendExecute", [R, g]() mutable { for (desc *op : g->order) run_op(R, op); });
        return CUDNN_STATUS_SUCCESS;
    }
    for (desc *op : plan->graph->order) run_op(R, op);
    return CUDNN_STATUS_SUCCESS;
}
