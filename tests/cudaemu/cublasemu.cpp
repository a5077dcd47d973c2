/* tests/cudaemu/cublasemu.cpp — the emulator's cuBLAS and cuBLASLt: the GEMM entry points kernels/cuda uses.
 *
 * Semantics are the documented ones, column-major: C(m x n) = alpha op(A) op(B) + beta C, op(A) m x k; A is
 * stored m x k (lda >= m) without transpose, k x m (lda >= k) with; likewise B (k x n or n x k). beta == 0
 * means C is not read (it may hold NaN). cuBLASLt's matrix layouts describe the stored matrices, so they must
 * agree with TRANSA/TRANSB and with each other; epilogues: BIAS adds bias[i] (D's type, length m) to every
 * column; GELU applies 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); the *_AUX forms also store the
 * pre-GELU value (after bias) in the aux matrix (D's type, column-major, ld AUX_LD, a multiple of 8); DGELU
 * multiplies each result by GELU'(aux) (the same tanh form's derivative), reading the aux matrix (the forward's
 * pre-GELU values, same layout rules) instead of writing it.
 * Every matrix extent is checked against the device allocation it lies in; a mismatch is
 * CUBLAS_STATUS_INVALID_VALUE and a printed fault. Types: A and B both bf16 or both float32, C/D bf16 or
 * float32, compute CUBLAS_COMPUTE_32F (anything else is NOT_SUPPORTED, as for the real library's Ex calls).
 * The arithmetic: operands converted to float32, cblas_sgemm (float32 accumulation), epilogue in float32,
 * one rounding to the output type.
 */
#include "cudaemu.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

int cudaemu_check_range(const void *p, size_t bytes, const char *what);
void cudaemu_graph_node_failed(void);   /* cudaemu.cpp: a replayed node failed (the graph launch fails) */

struct cudaemu_blas { int dummy; };
struct cudaemu_lt { int dummy; };
struct cudaemu_lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    void *aux = nullptr;
    int64_t ldaux = 0;
};
struct cudaemu_lt_layout { cudaDataType_t type; uint64_t rows, cols; int64_t ld; };
struct cudaemu_lt_pref { uint64_t ws = 0; };

static size_t type_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
static int type_ok(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16BF; }
static float load(const void *p, cudaDataType_t t, size_t i) {
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}
static void store(void *p, cudaDataType_t t, size_t i, float v) {
    if (t == CUDA_R_32F) ((float *)p)[i] = v;
    else ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}
/* bytes spanned by a column-major rows x cols matrix with leading dimension ld */
static size_t extent(int64_t rows, int64_t cols, int64_t ld, cudaDataType_t t) {
    if (rows <= 0 || cols <= 0) return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * type_size(t);
}

struct gemm {
    bool ta, tb;
    int m, n, k;
    float alpha, beta;
    const void *A; cudaDataType_t tA; int64_t lda; long long sA;
    const void *B; cudaDataType_t tB; int64_t ldb; long long sB;
    const void *C; void *D; cudaDataType_t tC; int64_t ldc; long long sC;   /* C read (beta != 0), D written */
    int batch;
    cublasLtEpilogue_t epi;
    const void *bias;
    void *aux; int64_t ldaux;
};

static cublasStatus_t run_gemm(const gemm &g, const char *who) {
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (!type_ok(g.tA) || !type_ok(g.tB) || !type_ok(g.tC) || g.tA != g.tB) return CUBLAS_STATUS_NOT_SUPPORTED;
    int64_t ar = g.ta ? g.k : g.m, ac = g.ta ? g.m : g.k, br = g.tb ? g.n : g.k, bc = g.tb ? g.k : g.n;
    if (g.lda < (ar > 1 ? ar : 1) || g.ldb < (br > 1 ? br : 1) || g.ldc < (g.m > 1 ? g.m : 1)) {
        fprintf(stderr, "cudaemu: %s: leading dimension too small (lda %ld for %ld rows, ldb %ld for %ld, ldc %ld for %d)\n",
                who, (long)g.lda, (long)ar, (long)g.ldb, (long)br, (long)g.ldc, g.m);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    bool gelu = g.epi == CUBLASLT_EPILOGUE_GELU || g.epi == CUBLASLT_EPILOGUE_GELU_BIAS ||
                g.epi == CUBLASLT_EPILOGUE_GELU_AUX || g.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    bool want_bias = g.epi == CUBLASLT_EPILOGUE_BIAS || g.epi == CUBLASLT_EPILOGUE_GELU_BIAS ||
                     g.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    bool dgelu = g.epi == CUBLASLT_EPILOGUE_DGELU;
    bool want_aux = g.epi == CUBLASLT_EPILOGUE_GELU_AUX || g.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || dgelu;
    if (g.epi != CUBLASLT_EPILOGUE_DEFAULT && !gelu && !want_bias && !dgelu) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((want_bias && !g.bias) || (want_aux && (!g.aux || g.ldaux < g.m || g.ldaux % 8 != 0))) {
        fprintf(stderr, "cudaemu: %s: epilogue %d needs %s\n", who, (int)g.epi,
                want_bias && !g.bias ? "a bias pointer" : "an aux pointer and AUX_LD >= m, a multiple of 8");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (g.m == 0 || g.n == 0 || g.batch == 0) return CUBLAS_STATUS_SUCCESS;
    size_t sa = type_size(g.tA), sc = type_size(g.tC);
    for (int b = 0; b < g.batch; b++) {
        const char *A = (const char *)g.A + (size_t)b * g.sA * sa, *B = (const char *)g.B + (size_t)b * g.sB * sa;
        const char *C = (const char *)g.C + (size_t)b * g.sC * sc;
        char *D = (char *)g.D + (size_t)b * g.sC * sc;
        if (cudaemu_check_range(A, extent(ar, ac, g.lda, g.tA), who) || cudaemu_check_range(B, extent(br, bc, g.ldb, g.tB), who) ||
            cudaemu_check_range(D, extent(g.m, g.n, g.ldc, g.tC), who) ||
            (g.beta != 0.0f && cudaemu_check_range(C, extent(g.m, g.n, g.ldc, g.tC), who)) ||
            (want_bias && cudaemu_check_range(g.bias, (size_t)g.m * sc, who)) ||
            (want_aux && cudaemu_check_range(g.aux, extent(g.m, g.n, g.ldaux, g.tC), who)))
            return CUBLAS_STATUS_INVALID_VALUE;
        std::vector<float> fa((size_t)ar * ac), fb((size_t)br * bc), fc((size_t)g.m * g.n, 0.0f);
        for (int64_t j = 0; j < ac; j++)
            for (int64_t i = 0; i < ar; i++) fa[(size_t)j * ar + i] = load(A, g.tA, (size_t)j * g.lda + i);
        for (int64_t j = 0; j < bc; j++)
            for (int64_t i = 0; i < br; i++) fb[(size_t)j * br + i] = load(B, g.tB, (size_t)j * g.ldb + i);
        if (g.beta != 0.0f)
            for (int j = 0; j < g.n; j++)
                for (int i = 0; i < g.m; i++) fc[(size_t)j * g.m + i] = load(C, g.tC, (size_t)j * g.ldc + i);
        if (g.k > 0)
            cblas_sgemm(CblasColMajor, g.ta ? CblasTrans : CblasNoTrans, g.tb ? CblasTrans : CblasNoTrans, g.m, g.n,
                        g.k, g.alpha, fa.data(), ar > 0 ? (int)ar : 1, fb.data(), br > 0 ? (int)br : 1, g.beta,
                        fc.data(), g.m);
        else
            for (float &v : fc) v *= g.beta;
        for (int j = 0; j < g.n; j++)
            for (int i = 0; i < g.m; i++) {
                float v = fc[(size_t)j * g.m + i];
                if (want_bias) v += load(g.bias, g.tC, (size_t)i);
                if (dgelu) {
                    const float x = load(g.aux, g.tC, (size_t)j * g.ldaux + i), k = 0.7978845608028654f;
                    const float th = tanhf(k * (x + 0.044715f * x * x * x));
                    v *= 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * k * (1.0f + 3.0f * 0.044715f * x * x);
                } else if (want_aux) store(g.aux, g.tC, (size_t)j * g.ldaux + i, v);
                if (gelu) v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
                store(D, g.tC, (size_t)j * g.ldc + i, v);
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLAS ---------------------------------------------------------------------------------------------- */
cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = new cudaemu_blas{ 0 }; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *ws, size_t bytes) {
    return cudaemu_check_range(ws, bytes, "cublasSetWorkspace") ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

/* During a stream capture: the GEMM as it was described at the call (alpha, beta, descriptors, layouts by value)
 * becomes a graph node; a failure at replay is a launch failure of the graph. */
static cublasStatus_t record_gemm(const gemm &g, const char *who) {
    cudaemu_record(who, [g, who]() {
        cublasStatus_t s = run_gemm(g, who);
        if (s != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cudaemu: %s (graph node) -> %s\n", who, cublasGetStatusString(s));
            cudaemu_graph_node_failed();
        }
    });
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t ex(const char *who, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         const void *alpha, const void *A, cudaDataType_t tA, int lda, long long sA, const void *B,
                         cudaDataType_t tB, int ldb, long long sB, const void *beta, void *C, cudaDataType_t tC,
                         int ldc, long long sC, int batch, cublasComputeType_t compute) {
    if (compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ta == CUBLAS_OP_C || tb == CUBLAS_OP_C) return CUBLAS_STATUS_NOT_SUPPORTED;
    gemm g;
    g.ta = ta == CUBLAS_OP_T; g.tb = tb == CUBLAS_OP_T;
    g.m = m; g.n = n; g.k = k;
    g.alpha = *(const float *)alpha; g.beta = *(const float *)beta;
    g.A = A; g.tA = tA; g.lda = lda; g.sA = sA;
    g.B = B; g.tB = tB; g.ldb = ldb; g.sB = sB;
    g.C = C; g.D = C; g.tC = tC; g.ldc = ldc; g.sC = sC;
    g.batch = batch;
    g.epi = CUBLASLT_EPILOGUE_DEFAULT; g.bias = nullptr; g.aux = nullptr; g.ldaux = 0;
    if (cudaemu_capturing()) return record_gemm(g, who);
    cublasStatus_t s = run_gemm(g, who);
    if (s != CUBLAS_STATUS_SUCCESS) fprintf(stderr, "cudaemu: %s -> %s\n", who, cublasGetStatusString(s));
    return s;
}
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType_t tA, int lda, const void *B,
                            cudaDataType_t tB, int ldb, const void *beta, void *C, cudaDataType_t tC, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
    return ex("cublasGemmEx", ta, tb, m, n, k, alpha, A, tA, lda, 0, B, tB, ldb, 0, beta, C, tC, ldc, 0, 1, compute);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType_t tA, int lda,
                                          long long sA, const void *B, cudaDataType_t tB, int ldb, long long sB,
                                          const void *beta, void *C, cudaDataType_t tC, int ldc, long long sC,
                                          int batch, cublasComputeType_t compute, cublasGemmAlgo_t) {
    return ex("cublasGemmStridedBatchedEx", ta, tb, m, n, k, alpha, A, tA, lda, sA, B, tB, ldb, sB, beta, C, tC, ldc,
              sC, batch, compute);
}

/* ---- cuBLASLt -------------------------------------------------------------------------------------------- */
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { *h = new cudaemu_lt{ 0 }; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale) {
    *d = new cudaemu_lt_desc();
    (*d)->compute = compute;
    (*d)->scale = scale;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete d; return CUBLAS_STATUS_SUCCESS; }

template <class T> static cublasStatus_t get_attr(T *dst, const void *buf, size_t bytes) {
    if (bytes != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(dst, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t bytes) {
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return get_attr(&d->ta, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB: return get_attr(&d->tb, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return get_attr(&d->epi, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return get_attr(&d->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return get_attr(&d->aux, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return get_attr(&d->ldaux, buf, bytes);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
    if (!type_ok(type) || ld < (int64_t)(rows > 1 ? rows : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    *l = new cudaemu_lt_layout{ type, rows, cols, ld };
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { delete l; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = new cudaemu_lt_pref();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { delete p; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t bytes) {
    uint32_t al;
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return get_attr(&p->ws, buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return get_attr(&al, buf, bytes);
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* Builds the GEMM from the descriptor and the four layouts; INVALID_VALUE when they disagree. */
static cublasStatus_t lt_problem(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                                 cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld, gemm *g) {
    if (d->compute != CUBLAS_COMPUTE_32F || d->scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    g->ta = d->ta == CUBLAS_OP_T;
    g->tb = d->tb == CUBLAS_OP_T;
    uint64_t m = ld->rows, n = ld->cols;
    uint64_t am = g->ta ? la->cols : la->rows, ak = g->ta ? la->rows : la->cols;
    uint64_t bk = g->tb ? lb->cols : lb->rows, bn = g->tb ? lb->rows : lb->cols;
    if (am != m || bn != n || ak != bk || lc->rows != m || lc->cols != n || lc->type != ld->type || lc->ld != ld->ld) {
        fprintf(stderr, "cudaemu: cuBLASLt layouts disagree: A %lux%lu%s, B %lux%lu%s, C %lux%lu, D %lux%lu\n",
                (unsigned long)la->rows, (unsigned long)la->cols, g->ta ? "^T" : "", (unsigned long)lb->rows,
                (unsigned long)lb->cols, g->tb ? "^T" : "", (unsigned long)lc->rows, (unsigned long)lc->cols,
                (unsigned long)ld->rows, (unsigned long)ld->cols);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    g->m = (int)m; g->n = (int)n; g->k = (int)ak;
    g->tA = la->type; g->lda = la->ld; g->sA = 0;
    g->tB = lb->type; g->ldb = lb->ld; g->sB = 0;
    g->tC = ld->type; g->ldc = ld->ld; g->sC = 0;
    g->batch = 1;
    g->epi = d->epi; g->bias = d->bias; g->aux = d->aux; g->ldaux = d->ldaux;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t dl, cublasLtMatmulPreference_t,
                                              int requested, cublasLtMatmulHeuristicResult_t *res, int *returned) {
    *returned = 0;
    if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
    gemm g;
    cublasStatus_t s = lt_problem(d, a, b, c, dl, &g);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    memset(&res[0], 0, sizeof res[0]);
    res[0].algo.data[0] = 0xC0DAE0ULL;   /* the one "algorithm" */
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                              const void *C, cublasLtMatrixLayout_t lc, void *D, cublasLtMatrixLayout_t ld,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, cudaStream_t) {
    gemm g;
    cublasStatus_t s = lt_problem(d, la, lb, lc, ld, &g);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (!algo || algo->data[0] != 0xC0DAE0ULL) return CUBLAS_STATUS_INVALID_VALUE;
    if (ws_bytes && cudaemu_check_range(ws, ws_bytes, "cublasLtMatmul workspace")) return CUBLAS_STATUS_INVALID_VALUE;
    g.alpha = *(const float *)alpha;
    g.beta = *(const float *)beta;
    g.A = A; g.B = B; g.C = C; g.D = D;
    if (cudaemu_capturing()) return record_gemm(g, "cublasLtMatmul");
    s = run_gemm(g, "cublasLtMatmul");
    if (s != CUBLAS_STATUS_SUCCESS) fprintf(stderr, "cudaemu: cublasLtMatmul -> %s\n", cublasGetStatusString(s));
    return s;
}
