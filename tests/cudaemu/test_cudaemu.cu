/* tests/cudaemu/test_cudaemu.cu — the CUDA emulator's own tests: it computes what CUDA computes, and it catches
 * the kernel bugs it claims to catch (cudaemu.h). Written as CUDA, built through cu2cpp.sh like the kernels.
 *   timeout: 60
 */
#include "harness.h"
#include "cuda_common.cuh"
#include <math.h>
#include <stdlib.h>

#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) HFAIL("%s: %s", #call, cudaGetErrorString(e_)); } while (0)

static float *kept[64];
static int nkept;
static void free_kept(void) { while (nkept > 0) cudaFree(kept[--nkept]); }
static float *dev_floats(size_t n) {   /* freed at exit, before LeakSanitizer looks */
    float *p = NULL;
    CK(cudaMalloc(&p, n * sizeof(float)));
    if (nkept == 0) atexit(free_kept);
    if (nkept < 64) kept[nkept++] = p;
    return p;
}
static void expect_fault(const char *what, const char *needle) {
    cudaError_t e = cudaGetLastError();
    printf("%s: cudaGetLastError -> %s; fault: \"%s\"\n", what, cudaGetErrorName(e), cudaemu_last_fault());
    ASSERT_EQ_INT(cudaErrorLaunchFailure, e);
    ASSERT_CONTAINS(cudaemu_last_fault(), needle);
}

/* ---- reductions agree with a serial sum whatever order the threads run in ---------------------------- */
__global__ void k_block_sums(float *out, const float *in, int n) {
    __shared__ float sh[32];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[blockIdx.x * n + i];
    float t = block_sum(s, sh);
    float m = block_max(s, sh);
    if (threadIdx.x == 0) { out[2 * blockIdx.x] = t; out[2 * blockIdx.x + 1] = m; }
}
TEST(block_reductions_match_serial_in_every_order) {
    const int blocks = 3, n = 1000, threads = 256;
    static float h[blocks * n];
    float r[2 * blocks];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < blocks * n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; h[i] = (float)((x >> 40) % 2000) / 1000.0f - 1.0f; }
    float *in = dev_floats(blocks * n), *out = dev_floats(2 * blocks);
    CK(cudaMemcpy(in, h, blocks * n * sizeof(float), cudaMemcpyHostToDevice));
    const char *orders[] = { "forward", "reverse", "random", "warps" };
    for (int o = 0; o < 4; o++) {
        setenv("CUDAEMU_ORDER", orders[o], 1);
        k_block_sums<<<blocks, threads>>>(out, in, n);
        CK(cudaGetLastError());
        CK(cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; b++) {
            double s = 0, mx = -1e30;
            for (int t = 0; t < threads; t++) {   /* per-thread partials, as the kernel forms them */
                double p = 0;
                for (int i = t; i < n; i += threads) p += h[b * n + i];
                s += p;
                if (p > mx) mx = p;
            }
            printf("order %-7s block %d: sum gpu %.6f serial %.6f, max of partials gpu %.6f serial %.6f\n", orders[o], b,
                   r[2 * b], s, r[2 * b + 1], mx);
            ASSERT_NEAR(s, r[2 * b], 1e-4);
            ASSERT_NEAR(mx, r[2 * b + 1], 1e-5);
        }
    }
    ASSERT_EQ_INT(0, cudaemu_faults());
}

/* ---- a missing __syncthreads shows: shared memory is NaN until written --------------------------------- */
template <bool SYNC> __global__ void k_rotate(float *out) {
    __shared__ float sh[64];
    sh[threadIdx.x] = (float)threadIdx.x;
    if (SYNC) __syncthreads();
    out[threadIdx.x] = sh[(threadIdx.x + 1) % blockDim.x];
}
TEST(missing_barrier_reads_poisoned_shared_memory) {
    float *out = dev_floats(64), h[64];
    const char *orders[] = { "forward", "reverse", "warps" };
    for (int o = 0; o < 3; o++) {
        setenv("CUDAEMU_ORDER", orders[o], 1);
        k_rotate<true><<<1, 64>>>(out);
        CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 64; i++) ASSERT_NEAR((float)((i + 1) % 64), h[i], 0.0);
        k_rotate<false><<<1, 64>>>(out);
        CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
        int nans = 0;
        for (int i = 0; i < 64; i++) nans += isnan(h[i]);
        printf("order %s: without the barrier %d of 64 threads read unwritten (NaN) shared memory\n", orders[o], nans);
        ASSERT_TRUE(nans > 0);
    }
}

/* ---- shuffles: exited partner lanes and split warps are faults --------------------------------------- */
__global__ void k_shfl_after_exit(float *out) {
    if (threadIdx.x == 5) return;
    float v = __shfl_xor_sync(0xffffffffu, (float)threadIdx.x, 1);
    out[threadIdx.x] = v;
}
__global__ void k_split_warp(float *out) {
    float v = (float)threadIdx.x;
    if (threadIdx.x < 16) __syncthreads();
    else v = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x] = v;
}
__global__ void k_shfl_ok(float *out) { out[threadIdx.x] = warp_sum((float)threadIdx.x); }
__global__ void k_shfl_divergent(float *out) {
    float v = (float)threadIdx.x;
    if ((threadIdx.x & 31) < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
    else v = __shfl_xor_sync(0xffffffffu, v, 2);
    out[threadIdx.x] = v;
}
__global__ void k_sync_after_return(float *out) {
    if (threadIdx.x >= 16) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}
TEST(shuffle_faults_and_results) {
    float *out = dev_floats(64), h[64];
    k_shfl_ok<<<1, 64>>>(out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    printf("warp_sum of lane ids: warp 0 %.0f (expect 496), warp 1 %.0f (expect 1520)\n", h[0], h[32]);
    for (int i = 0; i < 64; i++) ASSERT_NEAR(i < 32 ? 496.0 : 1520.0, h[i], 0.0);
    k_shfl_after_exit<<<1, 32>>>(out);
    expect_fault("shuffle with an exited lane", "already exited");
    k_split_warp<<<1, 32>>>(out);
    expect_fault("warp split between a shuffle and __syncthreads", "is split");
    k_shfl_divergent<<<1, 32>>>(out);
    expect_fault("lanes of one warp in two different shuffles", "is divergent");
    k_sync_after_return<<<1, 64>>>(out);
    expect_fault("__syncthreads after some threads returned", "returned");
}

/* ---- writes outside an allocation fail the launch ------------------------------------------------------ */
__global__ void k_write(float *p, int i) { if (threadIdx.x == 0) p[i] = 1.0f; }
TEST(out_of_bounds_writes_fail_the_launch) {
#if defined(__SANITIZE_ADDRESS__)
    SKIP("under ASan the guard zones are poisoned: ASan itself reports the access (and stops the process)");
#endif
    float *p = dev_floats(100);
    k_write<<<1, 32>>>(p, 99);
    CK(cudaGetLastError());
    k_write<<<1, 32>>>(p, 100);        /* one past the end, inside the 256-byte rounding */
    expect_fault("write one past the end", "the first 0 bytes past its end");
    k_write<<<1, 32>>>(p, 100 + 64);   /* past the rounding too */
    expect_fault("write past the end", "past the end");
    k_write<<<1, 32>>>(p, -3);
    expect_fault("write before the start", "before the start");
}

TEST(invalid_launch_configuration) {
    float *p = dev_floats(4);
    k_write<<<1, 2048>>>(p, 0);
    cudaError_t e = cudaGetLastError();
    printf("block of 2048 threads: %s\n", cudaGetErrorName(e));
    ASSERT_EQ_INT(cudaErrorInvalidConfiguration, e);
}

/* ---- a 16-byte vector access (cuda_common.cuh's ld_xpack/st_xpack) off a 16-byte boundary faults, as the
 * GPU's "misaligned address" does --------------------------------------------------------------------------- */
__global__ void k_vec_copy(floatX *dst, const floatX *src) { st_xpack(dst + threadIdx.x * XPACK, ld_xpack(src + threadIdx.x * XPACK)); }
TEST(misaligned_vector_access_faults) {
    floatX *x = (floatX *)dev_floats(1024);
    k_vec_copy<<<1, 32>>>(x + 32 * XPACK, x);
    CK(cudaGetLastError());
    k_vec_copy<<<1, 32>>>(x + 32 * XPACK + 1, x);
    expect_fault("vector store one element off", "misaligned address");
    k_vec_copy<<<1, 32>>>(x + 32 * XPACK, x + 1);
    expect_fault("vector load one element off", "misaligned address");
}

/* ---- bf16 conversion: round to nearest, ties to even; NaN and overflow as on the GPU ------------------- */
TEST(bf16_round_to_nearest_even) {
    struct { float in, out; } cases[] = {
        { 1.0f, 1.0f }, { 1.00390625f, 1.0f },            /* halfway between 1 and 1+2^-7: to even (1) */
        { 1.01171875f, 1.015625f },                          /* halfway between 1+2^-7 (odd) and 1+2^-6: to even */
        { nextafterf(1.00390625f, 2.0f), 1.0078125f },       /* just above halfway: up */
        { -2.5f, -2.5f }, { 3.4028235e38f, INFINITY }, { 3.3895314e38f, 3.3895314e38f },   /* bf16 max stays */
    };
    for (auto &c : cases) {
        float r = __bfloat162float(__float2bfloat16_rn(c.in));
        printf("bf16(%.9g) = %.9g, expect %.9g\n", c.in, r, c.out);
        ASSERT_TRUE(r == c.out);
    }
    ASSERT_TRUE(isnan(__bfloat162float(__float2bfloat16_rn(NAN))));
}

/* ---- cuBLAS/cuBLASLt: documented column-major results, and the checks on layouts and extents ------------ */
TEST(gemm_semantics_and_checks) {
    cublasHandle_t h;
    cublasLtHandle_t lt;
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasCreate(&h));
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasLtCreate(&lt));
    /* A stored 3x2 column-major = [[1,4],[2,5],[3,6]]; op(A)=A^T is 2x3. B 3x2 = [[1,0],[0,1],[1,1]]. */
    float ha[6] = { 1, 2, 3, 4, 5, 6 }, hb[6] = { 1, 0, 1, 0, 1, 1 }, hc[4], bias[2] = { -4.5f, -10.25f };
    float *A = dev_floats(6), *B = dev_floats(6), *C = dev_floats(4), *bi = dev_floats(2), *aux = dev_floats(16);
    CK(cudaMemcpy(A, ha, sizeof ha, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(B, hb, sizeof hb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bi, bias, sizeof bias, cudaMemcpyHostToDevice));
    float one = 1.0f, zero = 0.0f;
    /* C (2x2) = A^T B = [[1+3, 2+3],[4+6, 5+6]] = [[4,5],[10,11]]; column-major: 4,10,5,11. C holds NaN: beta 0 ignores it */
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, A, CUDA_R_32F, 3, B,
                                                      CUDA_R_32F, 3, &zero, C, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                                                      CUBLAS_GEMM_DEFAULT));
    CK(cudaMemcpy(hc, C, sizeof hc, cudaMemcpyDeviceToHost));
    printf("A^T B = [%g %g; %g %g] (expect [4 5; 10 11])\n", hc[0], hc[2], hc[1], hc[3]);
    ASSERT_TRUE(hc[0] == 4 && hc[1] == 10 && hc[2] == 5 && hc[3] == 11);
    /* lda smaller than the stored rows */
    ASSERT_EQ_INT(CUBLAS_STATUS_INVALID_VALUE, cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, A, CUDA_R_32F, 2,
                                                            B, CUDA_R_32F, 3, &zero, C, CUDA_R_32F, 2,
                                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    /* a batch stride that walks out of A's allocation */
    ASSERT_EQ_INT(CUBLAS_STATUS_INVALID_VALUE,
                  cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 3, &one, A, CUDA_R_32F, 3, 6, B,
                                             CUDA_R_32F, 3, 0, &zero, C, CUDA_R_32F, 2, 0, 2, CUBLAS_COMPUTE_32F,
                                             CUBLAS_GEMM_DEFAULT));
    ASSERT_CONTAINS(cudaemu_last_fault(), "not inside one device allocation");
    cudaGetLastError();
    /* cuBLASLt with the BIAS + GELU_AUX epilogue: aux = A^T B + bias (per row), D = gelu(aux) */
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t la, lb, lc, lbad;
    cublasLtMatmulPreference_t pref;
    cublasOperation_t opT = CUBLAS_OP_T;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    int64_t ldaux = 8;
    const void *bp = bi;
    void *ap = aux;
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &ap, sizeof ap);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldaux, sizeof ldaux);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 3, 2, 3);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 3);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 2, 2, 2);
    cublasLtMatrixLayoutCreate(&lbad, CUDA_R_32F, 2, 3, 2);   /* B described as 2x3: k does not match */
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    ASSERT_EQ_INT(CUBLAS_STATUS_INVALID_VALUE, cublasLtMatmulAlgoGetHeuristic(lt, d, la, lbad, lc, lc, pref, 1, &res, &found));
    ASSERT_EQ_INT(0, found);
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 1, &res, &found));
    ASSERT_EQ_INT(1, found);
    ASSERT_EQ_INT(CUBLAS_STATUS_SUCCESS, cublasLtMatmul(lt, d, &one, A, la, B, lb, &zero, C, lc, C, lc, &res.algo, NULL, 0, 0));
    float hx[16];
    CK(cudaMemcpy(hc, C, sizeof hc, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hx, aux, sizeof hx, cudaMemcpyDeviceToHost));
    float pre[4] = { -0.5f, -0.25f, 0.5f, 0.75f };   /* column-major A^T B + bias[row]: near 0, where GELU bends */
    for (int i = 0; i < 4; i++) {
        float x = pre[i], g = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
        float got_aux = hx[(i / 2) * 8 + (i % 2)];
        printf("element %d: aux %g (expect %g), D %.7g (expect gelu %.7g)\n", i, got_aux, x, hc[i], g);
        ASSERT_TRUE(got_aux == x);
        ASSERT_NEAR(g, hc[i], 1e-5);
    }
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(lbad); cublasLtMatmulPreferenceDestroy(pref); cublasLtMatmulDescDestroy(d);
    cublasLtDestroy(lt);
    cublasDestroy(h);
}


/* ---- wmma (mma.h): exact products in every layout, and the faults of a warp-collective call ------------- */
#include <mma.h>
using namespace nvcuda;

/* D = A B + C for one 16x16x16 tile: A, B bf16 with leading dimension 24 (padded rows), C and D float with
 * leading dimension 20; A_COL/B_COL pick the memory layouts of A and B, D_COL the layout D is stored in. */
template <class LA, class LB>
__global__ void k_wmma_tile(float *d, const __nv_bfloat16 *a, const __nv_bfloat16 *b, const float *c, int d_col) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, LA> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, LB> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a, 24);
    wmma::load_matrix_sync(fb, b, 24);
    wmma::load_matrix_sync(fc, c, 20, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 20, d_col ? wmma::mem_col_major : wmma::mem_row_major);
}
/* All ones times B[k][c] = k, plus nothing: every element of D is 0+1+...+15 = 120. */
__global__ void k_wmma_ones(float *d, const __nv_bfloat16 *b) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(fa, __float2bfloat16_rn(1.0f));
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}
static __nv_bfloat16 *dev_bf16(const float *h, size_t n) {
    __nv_bfloat16 *p = (__nv_bfloat16 *)dev_floats((n + 1) / 2), tmp[1024];
    for (size_t i = 0; i < n; i++) tmp[i] = __float2bfloat16_rn(h[i]);
    CK(cudaMemcpy(p, tmp, n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
    return p;
}
TEST(wmma_products_match_hand_computed_in_every_layout) {
    float hb[256], hd[320];
    for (int k = 0; k < 16; k++) for (int c = 0; c < 16; c++) hb[k * 16 + c] = (float)k;
    float *d = dev_floats(320);
    k_wmma_ones<<<1, 32>>>(d, dev_bf16(hb, 256));
    CK(cudaGetLastError());
    CK(cudaMemcpy(hd, d, 256 * sizeof(float), cudaMemcpyDeviceToHost));
    printf("ones(16x16) x [k]: D[0][0] %g, D[15][15] %g (expect 120)\n", hd[0], hd[255]);
    for (int i = 0; i < 256; i++) ASSERT_TRUE(hd[i] == 120.0f);
    /* integers small enough that bf16 holds them and every float sum is exact */
    float ha[16 * 24], hbb[16 * 24], hc[16 * 20];
    for (int i = 0; i < 16 * 24; i++) { ha[i] = (float)((i * 7) % 11 - 5); hbb[i] = (float)((i * 5) % 9 - 4); }
    for (int i = 0; i < 16 * 20; i++) hc[i] = (float)(i % 13 - 6) * 0.5f;
    __nv_bfloat16 *a = dev_bf16(ha, 16 * 24), *b = dev_bf16(hbb, 16 * 24);
    float *c = dev_floats(320);
    CK(cudaMemcpy(c, hc, sizeof hc, cudaMemcpyHostToDevice));
    for (int combo = 0; combo < 8; combo++) {
        int acol = combo & 1, bcol = (combo >> 1) & 1, dcol = combo >> 2;
        CK(cudaMemset(d, 0x7F, 320 * sizeof(float)));   /* padding between rows must stay untouched */
        if (!acol && !bcol) k_wmma_tile<wmma::row_major, wmma::row_major><<<1, 32>>>(d, a, b, c, dcol);
        if (acol && !bcol) k_wmma_tile<wmma::col_major, wmma::row_major><<<1, 32>>>(d, a, b, c, dcol);
        if (!acol && bcol) k_wmma_tile<wmma::row_major, wmma::col_major><<<1, 32>>>(d, a, b, c, dcol);
        if (acol && bcol) k_wmma_tile<wmma::col_major, wmma::col_major><<<1, 32>>>(d, a, b, c, dcol);
        CK(cudaGetLastError());
        CK(cudaMemcpy(hd, d, sizeof hd, cudaMemcpyDeviceToHost));
        int wrong = 0, pad_touched = 0;
        for (int r = 0; r < 16; r++)
            for (int cc = 0; cc < 16; cc++) {
                double s = hc[r * 20 + cc];
                for (int k = 0; k < 16; k++)
                    s += (double)(acol ? ha[k * 24 + r] : ha[r * 24 + k]) * (bcol ? hbb[cc * 24 + k] : hbb[k * 24 + cc]);
                float got = hd[dcol ? cc * 20 + r : r * 20 + cc];
                if (got != (float)s) { if (!wrong) printf("  D[%d][%d] = %g, expect %g\n", r, cc, got, s); wrong++; }
            }
        for (int i = 0; i < 16; i++)
            for (int j = 16; j < 20; j++) pad_touched += hd[i * 20 + j] != hd[319];
        printf("A %s, B %s, D stored %s: %d of 256 elements wrong, %d padding elements written\n",
               acol ? "col-major" : "row-major", bcol ? "col-major" : "row-major", dcol ? "col-major" : "row-major", wrong,
               pad_touched);
        ASSERT_EQ_INT(0, wrong);
        ASSERT_EQ_INT(0, pad_touched);
    }
    ASSERT_EQ_INT(0, cudaemu_faults());
}

__global__ void k_wmma_divergent(float *d, const float *c, int mode) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    int lane = threadIdx.x & 31;
    if (mode == 0) {                        /* half the warp skips the store and exits */
        if (lane < 16) wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
    } else if (mode == 1) {                 /* two different wmma calls in one warp */
        if (lane < 16) wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
        else wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
    } else if (mode == 2) {                 /* same call, lanes pass different pointers */
        wmma::load_matrix_sync(acc, c + (lane < 8 ? 0 : 256), 16, wmma::mem_row_major);
    } else if (mode == 3) {                 /* a wmma call against a shuffle */
        if (lane < 16) wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
        else acc.x[0] = __shfl_xor_sync(0xffffffffu, acc.x[0], 1);
    }
}
__global__ void k_wmma_bad_layout(float *d, const float *c, int mode) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    int lane = threadIdx.x & 31;
    if (mode == 0)        /* lanes disagree on the layout of one store */
        wmma::store_matrix_sync(d, acc, 16, lane == 3 ? wmma::mem_col_major : wmma::mem_row_major);
    else if (mode == 1)   /* not a layout at all */
        wmma::load_matrix_sync(acc, c, 16, (wmma::layout_t)2);
    else if (mode == 2)   /* misaligned: 4 floats in */
        wmma::load_matrix_sync(acc, c + 4, 16, wmma::mem_row_major);
    else if (mode == 3)   /* ldm not a multiple of 4 floats */
        wmma::store_matrix_sync(d, acc, 18, wmma::mem_row_major);
}
TEST(wmma_faults_divergent_warps_and_mismatched_layouts) {
    float *d = dev_floats(1024), *c = dev_floats(1024);
    k_wmma_divergent<<<1, 32>>>(d, c, 0);
    expect_fault("half a warp skips a wmma store", "has exited");
    k_wmma_divergent<<<1, 64>>>(d, c, 1);
    expect_fault("one warp in two different wmma calls", "is divergent");
    k_wmma_divergent<<<1, 32>>>(d, c, 2);
    expect_fault("lanes pass different pointers", "disagree");
    k_wmma_divergent<<<1, 32>>>(d, c, 3);
    expect_fault("wmma call against a shuffle", "divergent");
    k_wmma_divergent<<<1, 16>>>(d, c, 2);
    expect_fault("wmma in a partial warp", "partial warp");
    k_wmma_bad_layout<<<1, 32>>>(d, c, 0);
    expect_fault("lanes disagree on the layout", "disagree");
    k_wmma_bad_layout<<<1, 32>>>(d, c, 1);
    expect_fault("an invalid layout", "neither mem_row_major nor mem_col_major");
    k_wmma_bad_layout<<<1, 32>>>(d, c, 2);
    expect_fault("a misaligned tile pointer", "not 32-byte aligned");
    k_wmma_bad_layout<<<1, 32>>>(d, c, 3);
    expect_fault("a bad ldm", "ldm 18");
}

/* Lanes write a tile to shared memory; the warp loads it with wmma: without __syncwarp between the two, the
 * early lanes' wmma reads run before the late lanes' writes (NaN), with it the copy is exact. */
template <bool SYNC> __global__ void k_wmma_needs_syncwarp(float *out) {
    __shared__ float tile[256];
    for (int i = threadIdx.x; i < 256; i += 32) tile[i] = (float)i;
    if (SYNC) __syncwarp();
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, tile, 16, wmma::mem_row_major);
    wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}
TEST(wmma_load_after_lane_stores_needs_syncwarp) {
    float *d = dev_floats(256), h[256];
    const char *orders[] = { "forward", "reverse" };
    for (int o = 0; o < 2; o++) {
        setenv("CUDAEMU_ORDER", orders[o], 1);
        k_wmma_needs_syncwarp<true><<<1, 32>>>(d);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 256; i++) ASSERT_TRUE(h[i] == (float)i);
        k_wmma_needs_syncwarp<false><<<1, 32>>>(d);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        int nans = 0;
        for (int i = 0; i < 256; i++) nans += isnan(h[i]);
        printf("order %s: without __syncwarp %d of 256 elements were read before they were written\n", orders[o], nans);
        ASSERT_TRUE(nans > 0);
    }
}

/* ---- dynamic shared memory above 48 KiB needs cudaFuncSetAttribute, as on the GPU ------------------------ */
__global__ void k_big_smem(float *out, int n) {
    extern __shared__ float big[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) big[i] = (float)i;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = big[n - 1];
}
TEST(dynamic_shared_memory_above_48k_needs_the_attribute) {
    float *d = dev_floats(1), h = 0;
    int n = 200 * 1024 / 4;
    k_big_smem<<<1, 128, (size_t)n * 4>>>(d, n);
    cudaError_t e = cudaGetLastError();
    printf("200 KiB without the attribute: %s\n", cudaGetErrorName(e));
    ASSERT_EQ_INT(cudaErrorInvalidValue, e);
    ASSERT_EQ_INT(cudaErrorInvalidValue, cudaFuncSetAttribute(k_big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                              228 * 1024));
    cudaGetLastError();
    CK(cudaFuncSetAttribute(k_big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, n * 4));
    k_big_smem<<<1, 128, (size_t)n * 4>>>(d, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
    printf("200 KiB with the attribute: last element %g (expect %d)\n", h, n - 1);
    ASSERT_TRUE(h == (float)(n - 1));
    k_big_smem<<<1, 128, (size_t)n * 4 + 4>>>(d, n);
    ASSERT_EQ_INT(cudaErrorInvalidValue, cudaGetLastError());
}

/* ---- PTX-level instructions (mma_sync.cuh / ptx.h): ldmatrix, mma.sync m16n8k16, cp.async ----------------
 * Layouts checked against the PTX ISA's tables written out by hand here (g = lane/4, t = lane%4), not against
 * the emulator's own code. */
#include "mma_sync.cuh"

static uint16_t bf_bits(float f) { __nv_bfloat16 b = __float2bfloat16_rn(f); return b.x; }
static float bits_bf(uint16_t u) { __nv_bfloat16 b; b.x = u; return __bfloat162float(b); }

/* Each lane writes its 4 registers of ldmatrix_x4 (or _trans) over a 16x16 bf16 tile (row stride 24) whose
 * element (r, c) is r*16 + c: matrix i is rows 8*(i&1).., columns 8*(i>>1).. (lane l gives the address of row
 * l%16, column 8*(l/16)), the A-fragment arrangement. x2 and x1 load matrices 0..1 / 0 the same way. */
__global__ void k_ldmatrix(uint32_t *out, const __nv_bfloat16 *g, int variant) {
    __shared__ __nv_bfloat16 tile[16 * 24];
    const int lane = threadIdx.x;
    for (int i = lane; i < 16 * 24; i += 32) tile[i] = g[i];
    __syncwarp();
    const __nv_bfloat16 *p = tile + (lane % 16) * 24 + 8 * (lane / 16);
    frag_a r;
    for (int i = 0; i < 4; i++) r.at(i) = 0u;
    if (variant == 0) ldmatrix_x4(r.at(0), r.at(1), r.at(2), r.at(3), p);
    if (variant == 1) ldmatrix_x4_trans(r.at(0), r.at(1), r.at(2), r.at(3), p);
    if (variant == 2) ldmatrix_x2(r.at(0), r.at(1), p);
    if (variant == 3) ldmatrix_x2_trans(r.at(0), r.at(1), p);
    if (variant == 4) ldmatrix_x1(r.at(0), p);
    if (variant == 5) ldmatrix_x1_trans(r.at(0), p);
    for (int i = 0; i < 4; i++) out[lane * 4 + i] = r.at(i);
}
TEST(ldmatrix_lane_layouts_match_the_ptx_isa) {
    float h[16 * 24];
    for (int r = 0; r < 16; r++) for (int c = 0; c < 24; c++) h[r * 24 + c] = (float)(r * 16 + c);   /* exact in bf16 */
    __nv_bfloat16 *g = dev_bf16(h, 16 * 24);
    uint32_t *d = (uint32_t *)dev_floats(128), got[128];
    const char *names[] = { "x4", "x4.trans", "x2", "x2.trans", "x1", "x1.trans" };
    for (int v = 0; v < 6; v++) {
        k_ldmatrix<<<1, 32>>>(d, g, v);
        CK(cudaGetLastError());
        CK(cudaMemcpy(got, d, sizeof got, cudaMemcpyDeviceToHost));
        int num = v < 2 ? 4 : v < 4 ? 2 : 1, trans = v & 1, wrong = 0;
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) {
                int g_ = l / 4, t = l % 4, r0 = 8 * (i & 1), c0 = 8 * (i >> 1);
                /* the PTX ISA: row g, columns 2t, 2t+1 of matrix i; .trans: rows 2t, 2t+1 of column g */
                int ra = trans ? 2 * t : g_, ca = trans ? g_ : 2 * t, rb = trans ? 2 * t + 1 : g_, cb = trans ? g_ : 2 * t + 1;
                uint32_t want = i < num ? (uint32_t)bf_bits(h[(r0 + ra) * 24 + c0 + ca]) |
                                          ((uint32_t)bf_bits(h[(r0 + rb) * 24 + c0 + cb]) << 16) : 0u;
                if (got[l * 4 + i] != want) {
                    if (!wrong) printf("  lane %d reg %d: (%g, %g), expect (%g, %g)\n", l, i, bits_bf(got[l * 4 + i] & 0xffff),
                                       bits_bf(got[l * 4 + i] >> 16), bits_bf(want & 0xffff), bits_bf(want >> 16));
                    wrong++;
                }
            }
        printf("ldmatrix.%s: %d of 128 registers differ from the PTX ISA layout\n", names[v], wrong);
        ASSERT_EQ_INT(0, wrong);
    }
    ASSERT_EQ_INT(0, cudaemu_faults());
}

/* D = A B + C with every lane filling its fragments from global memory by the PTX ISA's tables (A 16x16 row-major,
 * B 16x8 as [k][n], C, D 16x8), then writing D back by the same table. */
__global__ void k_mma_tile(float *d, const float *a, const float *b, const float *c) {
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    frag_a fa;
    frag_b fb;
    frag_c fc;
    fa.at(0) = pack_bf16x2(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
    fa.at(1) = pack_bf16x2(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
    fa.at(2) = pack_bf16x2(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
    fa.at(3) = pack_bf16x2(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
    fb.at(0) = pack_bf16x2(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
    fb.at(1) = pack_bf16x2(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
    for (int e = 0; e < 4; e++) fc.at(e) = c[(g + (e >> 1) * 8) * 8 + 2 * t + (e & 1)];
    mma_m16n8k16_bf16(fc, fa, fb, fc);
    for (int e = 0; e < 4; e++) d[(g + (e >> 1) * 8) * 8 + 2 * t + (e & 1)] = fc.at(e);
}
TEST(mma_m16n8k16_matches_hand_computed) {
    float ha[256], hb[128], hc[128], hd[128];
    for (int i = 0; i < 256; i++) ha[i] = (float)((i * 7) % 11 - 5);
    for (int i = 0; i < 128; i++) { hb[i] = (float)((i * 5) % 9 - 4); hc[i] = (float)(i % 13 - 6) * 0.5f; }
    float *a = dev_floats(256), *b = dev_floats(128), *c = dev_floats(128), *d = dev_floats(128);
    CK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(c, hc, sizeof hc, cudaMemcpyHostToDevice));
    k_mma_tile<<<1, 32>>>(d, a, b, c);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hd, d, sizeof hd, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            double s = hc[r * 8 + n];
            for (int k = 0; k < 16; k++) s += (double)ha[r * 16 + k] * hb[k * 8 + n];
            if (hd[r * 8 + n] != (float)s) { if (!wrong) printf("  D[%d][%d] = %g, expect %g\n", r, n, hd[r * 8 + n], s); wrong++; }
        }
    printf("mma.m16n8k16: %d of 128 elements wrong (D[0][0] %g, D[15][7] %g)\n", wrong, hd[0], hd[127]);
    ASSERT_EQ_INT(0, wrong);
    ASSERT_EQ_INT(0, cudaemu_faults());
}

/* Misuse, one per mode: 0 a fragment index outside the lane's 4 registers; 1 an mma on a B fragment nothing
 * wrote; 2 an A fragment another lane produced (lane 0's registers copied through shared memory); 3 lanes that
 * disagree on .trans at one ldmatrix; 4 an ldmatrix row address 8 bytes off; 5 an ldmatrix from global memory;
 * 6 half the warp in ldmatrix, half in mma. */
__global__ void k_ptx_misuse(float *out, int mode) {
    __shared__ __nv_bfloat16 tile[16 * 24];
    __shared__ float stash[64];
    const int lane = threadIdx.x;
    for (int i = lane; i < 16 * 24; i += 32) tile[i] = __float2bfloat16_rn(1.0f);
    __syncwarp();
    const __nv_bfloat16 *p = tile + (lane % 16) * 24 + 8 * (lane / 16);
    frag_a a;
    frag_b b;
    frag_c c;
    for (int e = 0; e < 4; e++) c.at(e) = 0.0f;
    if (mode == 0) { for (int i = 0; i < 4; i++) a.at(i) = 0u; out[lane] = (float)a.at(4); return; }
    ldmatrix_x4(a.at(0), a.at(1), a.at(2), a.at(3), p);
    if (mode == 1) { mma_m16n8k16_bf16(c, a, b, c); return; }
    b.at(0) = a.at(0);
    b.at(1) = a.at(1);
    if (mode == 2) {
        frag_a *sh = (frag_a *)(void *)stash;
        if (lane == 0) *sh = a;
        __syncwarp();
        frag_a other = *sh;
        mma_m16n8k16_bf16(c, other, b, c);
    }
    preg *r[4] = { &a.at(0), &a.at(1), &a.at(2), &a.at(3) };
    if (mode == 3) cudaemu_ldmatrix(__FILE__, __LINE__, 4, lane == 7, r, p);
    if (mode == 4) ldmatrix_x4(a.at(0), a.at(1), a.at(2), a.at(3), (const char *)p + 8);
    if (mode == 5) ldmatrix_x4(a.at(0), a.at(1), a.at(2), a.at(3), out);
    if (mode == 6) {
        if (lane < 16) ldmatrix_x4(a.at(0), a.at(1), a.at(2), a.at(3), p);
        else mma_m16n8k16_bf16(c, a, b, c);
    }
    out[lane] = c.at(0);
}
TEST(ptx_fragment_misuse_faults_name_the_site) {
    float *d = dev_floats(64);
    k_ptx_misuse<<<1, 32>>>(d, 0);
    expect_fault("a fragment index outside the lane's registers", "index 4");
    ASSERT_CONTAINS(cudaemu_last_fault(), "test_cudaemu.cu:");
    k_ptx_misuse<<<1, 32>>>(d, 1);
    expect_fault("mma on a B fragment nothing wrote", "B fragment register 0 is not the lane's own (never written");
    k_ptx_misuse<<<1, 32>>>(d, 2);
    expect_fault("mma on another lane's A fragment", "written by lane 0");
    k_ptx_misuse<<<1, 32>>>(d, 3);
    expect_fault("lanes disagree on .trans", "disagree");
    k_ptx_misuse<<<1, 32>>>(d, 4);
    expect_fault("a misaligned ldmatrix row", "not 16-byte aligned");
    k_ptx_misuse<<<1, 32>>>(d, 5);
    expect_fault("ldmatrix from global memory", "not in the block's shared memory");
    k_ptx_misuse<<<1, 32>>>(d, 6);
    expect_fault("ldmatrix against mma in one warp", "divergent");
    k_ptx_misuse<<<1, 32>>>(d, 7);   /* the same kernel used correctly: no fault */
    CK(cudaGetLastError());
}

/* cp.async: 64 threads copy 16 bytes each of src into shared memory (warp 0 commits before it looks, warp 1
 * after) and record what shared memory holds before any wait and after wait_group 0; then each copies again with
 * zero fill (8 of 16 source bytes for odd threads, none for even ones) as one group and a plain copy as a second
 * group, and records both areas after wait_group 1: the first group landed, the second not yet.
 * mode 1: ldmatrix straight after the copies (the wait missing): a fault. mode 2: exit with copies pending. */
__global__ void k_cp_async(float *out, const float *src, int mode) {
    __shared__ float sh[512];
    const int t = threadIdx.x;
    for (int i = t; i < 512; i += 64) sh[i] = -1.0f;
    __syncthreads();
    cp_async_16(sh + 4 * t, src + 4 * t, 16);
    if (t / 32 == 0) cp_async_commit();
    if (mode == 2) return;
    if (mode == 1) {
        preg r0, r1, r2, r3;
        ldmatrix_x4(r0, r1, r2, r3, (const char *)sh + 16 * (t % 32));
    }
    out[t] = sh[4 * t];                                   /* before any wait */
    if (t / 32 == 1) cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    out[64 + t] = sh[4 * t];                              /* after the wait */
    __syncthreads();
    cp_async_16(sh + 4 * t, src + 4 * t, t % 2 ? 8 : 0);  /* zero fill */
    cp_async_commit();
    cp_async_16(sh + 256 + 4 * t, src + 4 * t, 16);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    for (int k = 0; k < 4; k++) {
        out[128 + 4 * t + k] = sh[4 * t + k];
        out[384 + 4 * t + k] = sh[256 + 4 * t + k];
    }
    cp_async_wait<0>();
}
TEST(cp_async_data_visible_only_after_the_wait) {
    float hs[256], ho[640];
    for (int i = 0; i < 256; i++) hs[i] = (float)(i + 1);
    float *src = dev_floats(256), *out = dev_floats(640);
    CK(cudaMemcpy(src, hs, sizeof hs, cudaMemcpyHostToDevice));
    k_cp_async<<<1, 64>>>(out, src, 0);
    CK(cudaGetLastError());
    CK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost));
    int before = 0, after = 0, fill = 0, second = 0;
    for (int t = 0; t < 64; t++) {
        before += ho[t] == -1.0f;
        after += ho[64 + t] == hs[4 * t];
        for (int k = 0; k < 4; k++) {
            fill += ho[128 + 4 * t + k] == (t % 2 && k < 2 ? hs[4 * t + k] : 0.0f);
            second += ho[384 + 4 * t + k] == -1.0f;
        }
    }
    printf("cp.async: %d of 64 destinations still old before the wait, %d of 64 copied after it; after wait_group 1: "
           "%d of 256 zero-filled elements right, %d of 256 of the newest group still old\n", before, after, fill, second);
    ASSERT_EQ_INT(64, before);
    ASSERT_EQ_INT(64, after);
    ASSERT_EQ_INT(256, fill);
    ASSERT_EQ_INT(256, second);
    ASSERT_EQ_INT(0, cudaemu_faults());
    k_cp_async<<<1, 64>>>(out, src, 1);
    expect_fault("ldmatrix before the cp.async wait", "cp.async wait missing");
    k_cp_async<<<1, 64>>>(out, src, 2);
    expect_fault("exit with copies pending", "never completed by a wait_group");
}
