/* real.h — the element type of the CPU reference kernels and model.
 *
 * Normally `real` is float and names are plain (cpu_matmul_forward). A file that defines
 * PRISM_REAL_DOUBLE before including the kernel sources (tests/unit/test_gradcheck.c does
 * `#include "../../kernels/cpu_kernels.c"`) gets the same code in double precision with every public
 * name suffixed _f64 (cpu_matmul_forward_f64), so both builds can link into one binary.
 */
#ifndef PRISM_REAL_H
#define PRISM_REAL_H
#ifdef PRISM_REAL_DOUBLE
typedef double real;
#define RN(name) name##_f64
#define REAL_GEMM cblas_dgemm
#define REAL_EXP exp
#define REAL_TANH tanh
#define REAL_SQRT sqrt
#define REAL_LOG log
#define REAL_COSH cosh
#else
typedef float real;
#define RN(name) name
#define REAL_GEMM cblas_sgemm
#define REAL_EXP expf
#define REAL_TANH tanhf
#define REAL_SQRT sqrtf
#define REAL_LOG logf
#define REAL_COSH coshf
#endif
#endif
