/* tests/gpu/compat/cblas_ref.c — a plain reference GEMM for tests/gpu/run.sh when the GPU machine has no
 * OpenBLAS: C = alpha op(A) op(B) + beta C, row-major (column-major by swapping operands), one OpenMP
 * thread per block of rows, each dot product accumulated in double. Slow but exact enough to be the
 * CPU twin at the small sizes the GPU checks use; never linked into the product. */
#include "cblas.h"
#include <stddef.h>

#define GEMM_BODY(T)                                                                                        \
    if (order == CblasColMajor) {   /* C^T = op(B)^T op(A)^T in row-major terms */                         \
        enum CBLAS_TRANSPOSE t = ta; ta = tb; tb = t;                                                      \
        int m = M; M = N; N = m;                                                                            \
        const T *p = A; A = B; B = p;                                                                       \
        int l = lda; lda = ldb; ldb = l;                                                                    \
    }                                                                                                       \
    _Pragma("omp parallel for schedule(static)")                                                            \
    for (int i = 0; i < M; i++)                                                                             \
        for (int j = 0; j < N; j++) {                                                                       \
            double s = 0;                                                                                   \
            for (int k = 0; k < K; k++) {                                                                   \
                double a = ta == CblasNoTrans ? A[(size_t)i * lda + k] : A[(size_t)k * lda + i];            \
                double b = tb == CblasNoTrans ? B[(size_t)k * ldb + j] : B[(size_t)j * ldb + k];            \
                s += a * b;                                                                                 \
            }                                                                                               \
            T *c = &C[(size_t)i * ldc + j];                                                                 \
            *c = (T)(alpha * s + (beta == 0 ? 0 : beta * *c));                                              \
        }

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    GEMM_BODY(float)
}
void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 double alpha, const double *A, int lda, const double *B, int ldb, double beta, double *C, int ldc) {
    GEMM_BODY(double)
}

int openblas_get_num_threads(void) { return 1; }
void openblas_set_num_threads(int n) { (void)n; }
