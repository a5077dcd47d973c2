/* kernels/cuda/mma_sync.cuh — register-level tensor-core and async-copy primitives (internal, C++ only):
 * inline PTX on the GPU (sm_80+), calls into the CUDA emulator under PRISM_CUDAEMU (tests/cudaemu/ptx.h), with
 * the same per-lane fragment layouts either way (PTX ISA, m16n8k16; groupID g = lane/4, t = lane%4):
 *   frag_a  (16x16 bf16, row-major A): x0 (g, 2t..2t+1), x1 (g+8, 2t..), x2 (g, 2t+8..), x3 (g+8, 2t+8..)
 *   frag_b  (16x8 bf16, col-major B, (k, n)): x0 (2t..2t+1, g), x1 (2t+8..2t+9, g)
 *   frag_c  (16x8 float): x0, x1 (g, 2t..2t+1), x2, x3 (g+8, 2t..2t+1)
 * A bf16 register holds two elements, the first in the low 16 bits (pack_bf16x2).
 *   mma_m16n8k16_bf16(d, a, b, c)       d = a b + c (d may be c)
 *   ldmatrix_x{1,2,4}[_trans](regs..., p) four/two/one 8x8 b16 matrices from shared memory; lane 8i+j gives the
 *                                       address of row j of matrix i (16-byte aligned); register i of lane l gets
 *                                       (row l/4, cols 2(l%4)..) of matrix i, or its transpose with _trans
 *   cp_async_16(dst, src, src_bytes)    16 bytes global -> shared, bypassing L1 (.cg); bytes past src_bytes are
 *                                       zero-filled (0: nothing is read)
 *   cp_async_commit(), cp_async_wait<N>() close a group of copies; wait until at most N groups are pending
 * Fragment registers are read and written through at(i) (a plain array element on the GPU; checked on the
 * emulator: the index, and that the lane itself produced the register).
 */
#ifndef PRISM_MMA_SYNC_CUH
#define PRISM_MMA_SYNC_CUH
#include "cuda_common.cuh"

#ifdef PRISM_CUDAEMU
#include "ptx.h"
typedef cudaemu_reg<uint32_t> preg;
template <int N> using pfrag_u = cudaemu_frag<uint32_t, N>;
typedef cudaemu_frag<float, 4> frag_c;
#else
typedef uint32_t preg;
template <class T, int N> struct pfrag {
    T x[N];
    __device__ __forceinline__ T &at(int i) { return x[i]; }
    __device__ __forceinline__ const T &at(int i) const { return x[i]; }
};
template <int N> using pfrag_u = pfrag<uint32_t, N>;
typedef pfrag<float, 4> frag_c;
#endif
typedef pfrag_u<4> frag_a;
typedef pfrag_u<2> frag_b;

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    __nv_bfloat16 a = __float2bfloat16_rn(lo), b = __float2bfloat16_rn(hi);
    uint16_t ua, ub;
    memcpy(&ua, &a, 2);
    memcpy(&ub, &b, 2);
    return (uint32_t)ua | ((uint32_t)ub << 16);
}

#ifdef PRISM_CUDAEMU
static inline void mma_m16n8k16_bf16(frag_c &d, const frag_a &a, const frag_b &b, const frag_c &c,
                                     const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    cudaemu_mma_bf16(file, line, d.x, a.x, b.x, c.x);
}
static inline void ldmatrix_x4(preg &d0, preg &d1, preg &d2, preg &d3, const void *p,
                               const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    preg *d[4] = { &d0, &d1, &d2, &d3 };
    cudaemu_ldmatrix(file, line, 4, 0, d, p);
}
static inline void ldmatrix_x4_trans(preg &d0, preg &d1, preg &d2, preg &d3, const void *p,
                                     const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    preg *d[4] = { &d0, &d1, &d2, &d3 };
    cudaemu_ldmatrix(file, line, 4, 1, d, p);
}
static inline void ldmatrix_x2(preg &d0, preg &d1, const void *p, const char *file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
    preg *d[2] = { &d0, &d1 };
    cudaemu_ldmatrix(file, line, 2, 0, d, p);
}
static inline void ldmatrix_x2_trans(preg &d0, preg &d1, const void *p, const char *file = __builtin_FILE(),
                                     int line = __builtin_LINE()) {
    preg *d[2] = { &d0, &d1 };
    cudaemu_ldmatrix(file, line, 2, 1, d, p);
}
static inline void ldmatrix_x1(preg &d0, const void *p, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    preg *d[1] = { &d0 };
    cudaemu_ldmatrix(file, line, 1, 0, d, p);
}
static inline void ldmatrix_x1_trans(preg &d0, const void *p, const char *file = __builtin_FILE(),
                                     int line = __builtin_LINE()) {
    preg *d[1] = { &d0 };
    cudaemu_ldmatrix(file, line, 1, 1, d, p);
}
static inline void cp_async_16(void *dst, const void *src, int src_bytes = 16, const char *file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
    cudaemu_cp_async(file, line, dst, src, 16, src_bytes, 1);
}
static inline void cp_async_commit(void) { cudaemu_cp_async_commit(); }
template <int N> static inline void cp_async_wait(const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
    cudaemu_cp_async_wait(file, line, N);
}
#else
__device__ __forceinline__ uint32_t pcu_smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mma_m16n8k16_bf16(frag_c &d, const frag_a &a, const frag_b &b, const frag_c &c) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d.x[0]), "=f"(d.x[1]), "=f"(d.x[2]), "=f"(d.x[3])
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]),
                   "f"(c.x[0]), "f"(c.x[1]), "f"(c.x[2]), "f"(c.x[3]));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t &d0, uint32_t &d1, uint32_t &d2, uint32_t &d3, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &d0, uint32_t &d1, uint32_t &d2, uint32_t &d3,
                                                  const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t &d0, uint32_t &d1, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(d0), "=r"(d1) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t &d0, uint32_t &d1, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(d0), "=r"(d1) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x1(uint32_t &d0, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d0) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t &d0, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(d0) : "r"(pcu_smem_addr(p)));
}
__device__ __forceinline__ void cp_async_16(void *dst, const void *src, int src_bytes = 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(pcu_smem_addr(dst)), "l"(src),
                 "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif
#endif
