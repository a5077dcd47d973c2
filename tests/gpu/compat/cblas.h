/* tests/gpu/compat/cblas.h — used only by tests/gpu/run.sh on a GPU machine that has no OpenBLAS headers:
 * the CBLAS/OpenBLAS entry points the CPU reference kernels call (cblas_sgemm, cblas_dgemm,
 * openblas_get/set_num_threads), with the standard
 * CBLAS enum values. The product build always uses OpenBLAS's own header and library. */
#ifndef PRISM_COMPAT_CBLAS_H
#define PRISM_COMPAT_CBLAS_H
typedef enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_ORDER;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 double alpha, const double *A, int lda, const double *B, int ldb, double beta, double *C, int ldc);
/* OpenBLAS's thread controls, which the CPU kernels call: the reference GEMM has no threads of its own */
int openblas_get_num_threads(void);
void openblas_set_num_threads(int n);
#endif
