/* tests/cudaemu/ptx.h — the emulated build's side of kernels/cuda/mma_sync.cuh: the PTX instructions that the
 * register-accumulator attention kernel uses, as per-lane registers and warp-collective calls (cudaemu.cpp).
 *
 *   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32   cudaemu_mma_bf16
 *   ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 cudaemu_ldmatrix
 *   cp.async.{ca,cg}.shared.global [+ zero fill]         cudaemu_cp_async
 *   cp.async.commit_group / cp.async.wait_group N        cudaemu_cp_async_commit / _wait
 *
 * Registers. A kernel's fragment registers are cudaemu_reg<T> (uint32_t for bf16x2 A/B registers, float for the
 * accumulators): the value and the lane that produced it (-1: never written, NaN/0xFFFFFFFF bits). Writing one
 * (a plain assignment, ldmatrix, mma) makes it the writing lane's; reading one that another lane produced, or
 * that nothing produced, is a fault naming the reading site (file:line), as is a fragment index outside
 * 0..N-1 (cudaemu_frag::at). So a lane can only use the registers it holds, as on the GPU, and a fragment
 * passed to mma must have come from ldmatrix, an mma or the lane's own writes.
 * Layouts (PTX ISA, "Matrix fragments for mma.m16n8k16", "ldmatrix"), groupID g = lane/4, t = lane%4:
 *   A 16x16 (row): reg0 (g, 2t..2t+1), reg1 (g+8, 2t..), reg2 (g, 2t+8..), reg3 (g+8, 2t+8..)
 *   B 16x8 (col), (k, n): reg0 (2t..2t+1, g), reg1 (2t+8.., g)
 *   C/D 16x8 float: c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1)
 *   ldmatrix: matrix i (i < x) has its 8 rows at the addresses of lanes 8i..8i+7 (16 bytes each, 16-byte
 *   aligned, in shared memory); lane l receives in register i the pair (row l/4, columns 2(l%4), 2(l%4)+1), or
 *   with .trans (rows 2(l%4), 2(l%4)+1 of column l/4); the lower 16 bits hold the first element.
 * cp.async: the source is read when the copy is issued; the destination changes only when a wait_group
 * completes the copy's committed group (copies not yet committed stay pending), so before the wait the
 * shared memory keeps its old (or NaN) contents. An ldmatrix that reads bytes of a copy still pending in any
 * thread of the block is a fault ("cp.async wait missing"). A destination outside the block's shared memory or
 * not aligned to the copy size, a source outside device memory, or a size other than 4/8/16 (16 for .cg) are
 * faults; so are copies still pending when the thread exits.
 */
#ifndef PRISM_CUDAEMU_PTX_H
#define PRISM_CUDAEMU_PTX_H
#include "cudaemu.h"

/* The fault hook for register checks (cudaemu.cpp): reading register `what` at file:line, produced by `owner`. */
void cudaemu_reg_fault(const char *file, int line, const char *what, int owner);
int cudaemu_lane(void);   /* the running thread's lane (linear thread id % 32), -1 outside a kernel */

template <class T> struct cudaemu_reg {
    T v;
    int owner = -1;
    const char *file = nullptr;   /* the site of the access that cudaemu_frag::at handed out (for faults) */
    int line = 0;
    cudaemu_reg() { memset(&v, 0xFF, sizeof v); }   /* garbage: NaN / all ones */
    T get() const {
        int l = cudaemu_lane();
        if (owner != l) cudaemu_reg_fault(file, line, owner < 0 ? "a register nothing wrote" : "a register of another lane", owner);
        return v;
    }
    void set(T x) { v = x; owner = cudaemu_lane(); }
    operator T() const { return get(); }
    cudaemu_reg &operator=(T x) { set(x); return *this; }
    cudaemu_reg &operator=(const cudaemu_reg &o) { set(o.get()); return *this; }
    cudaemu_reg(const cudaemu_reg &o) = default;   /* copying a fragment copies the registers and their owners */
    cudaemu_reg &operator+=(T x) { set(get() + x); return *this; }
    cudaemu_reg &operator*=(T x) { set(get() * x); return *this; }
};

/* N registers of one lane; at(i) checks the index and records the site for the register's own checks. */
template <class T, int N> struct cudaemu_frag {
    cudaemu_reg<T> x[N];
    cudaemu_reg<T> &at(int i, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
        if (i < 0 || i >= N) {
            cudaemu_reg_fault(file, line, "a fragment index outside the lane's registers", i);
            static thread_local cudaemu_reg<T> junk;
            return junk;
        }
        x[i].file = file;
        x[i].line = line;
        return x[i];
    }
    const cudaemu_reg<T> &at(int i, const char *file = __builtin_FILE(), int line = __builtin_LINE()) const {
        return const_cast<cudaemu_frag *>(this)->at(i, file, line);
    }
};

/* ldmatrix: num 1, 2 or 4 matrices; d[i] receives matrix i's pair; p is this lane's row address. */
void cudaemu_ldmatrix(const char *file, int line, int num, int trans, cudaemu_reg<uint32_t> *const *d, const void *p);
/* D = A B + C (16x16 bf16 row, 16x8 bf16 col, float). a: 4 registers, b: 2, c and d: 4. */
void cudaemu_mma_bf16(const char *file, int line, cudaemu_reg<float> *d, const cudaemu_reg<uint32_t> *a,
                      const cudaemu_reg<uint32_t> *b, const cudaemu_reg<float> *c);
/* cp.async of `bytes` (4, 8, 16) from global src to shared dst; src_bytes < bytes zero-fills the rest (0: no read). */
void cudaemu_cp_async(const char *file, int line, void *dst, const void *src, int bytes, int src_bytes, int cg);
void cudaemu_cp_async_commit(void);
void cudaemu_cp_async_wait(const char *file, int line, int n);
#endif
