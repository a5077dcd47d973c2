/* tests/cudaemu/mma.h — stands in for CUDA's <mma.h> in the emulated build: the nvcuda::wmma fragment API at
 * the m16n16k16 shape, __nv_bfloat16 inputs (matrix_a, matrix_b; row_major or col_major) and a float
 * accumulator, as kernels/cuda uses it.
 *
 * Semantics (the CUDA programming guide's, checked where the emulator can see them):
 *   - A fragment is spread over the 32 lanes of a warp, num_elements per lane, in an order the guide leaves
 *     unspecified. Here lane l's element e is tile element ((8l + e) * 97) mod 256 (row-major in the 16x16
 *     tile): a scrambled order, so a kernel that assumes the hardware's order gets wrong numbers here.
 *     A fresh fragment holds NaN (uninitialised registers), so an mma on an unfilled accumulator shows.
 *   - load_matrix_sync / store_matrix_sync: element (r, c) of the tile is p[r*ldm + c] (row-major) or
 *     p[c*ldm + r] (col-major). p must be 32-byte aligned; ldm a multiple of 8 (bf16) or 4 (float).
 *     A load reads the lane's own elements when the lane arrives and a store writes them when the warp
 *     leaves: neither orders the warp's other shared-memory accesses, so a missing __syncwarp between
 *     lanes' stores and a wmma load (or a wmma store and lanes' loads) reads stale or NaN data, as it may on
 *     the GPU.
 *   - mma_sync: D = A B + C in float (bf16 products are exact in float; summed in k order).
 *   - Every call is warp-collective: all 32 lanes of the warp must reach the same call (same file:line, same
 *     pointer, ldm and layout). A lane that exited, lanes at different wmma calls (or one in a shuffle), lanes
 *     that disagree on pointer/ldm/layout, a layout that is neither mem_row_major nor mem_col_major, a
 *     misaligned pointer, a bad ldm, or a warp cut short by the block size are faults: the launch fails with
 *     the reason on stderr, like the shuffle checks (cudaemu.h).
 * The calls are macros that add __FILE__/__LINE__ so that fault messages name the call site.
 */
#ifndef PRISM_CUDAEMU_MMA_H
#define PRISM_CUDAEMU_MMA_H
#include "cudaemu.h"
#include <type_traits>

/* role: 0 matrix_a, 1 matrix_b, 2 accumulator; esize: bytes per element in memory (2 bf16, 4 float);
 * col: 1 when the memory is column-major. x: the calling lane's elements (bf16 for a/b, float for acc). */
void cudaemu_wmma_load(const char *file, int line, void *x, int role, const void *p, unsigned ldm, int col);
void cudaemu_wmma_store(const char *file, int line, void *p, const float *x, unsigned ldm, int layout);
void cudaemu_wmma_mma(const char *file, int line, float *d, const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                      const float *c);

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void> class fragment {
    static_assert(M == 16 && N == 16 && K == 16, "cudaemu models the m16n16k16 wmma shape only");
    static constexpr bool is_acc = std::is_same<Use, accumulator>::value;
    static_assert(is_acc ? (std::is_same<T, float>::value && std::is_same<Layout, void>::value)
                         : (std::is_same<T, __nv_bfloat16>::value &&
                            (std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value)),
                  "cudaemu models bf16 matrix_a/matrix_b fragments with a row_major/col_major layout and float "
                  "accumulators without one");
public:
    enum { num_elements = 8 };
    T x[num_elements];
    fragment() {
        for (int i = 0; i < num_elements; i++) memset(&x[i], 0xFF, sizeof x[i]);   /* NaN: garbage registers */
    }
};

template <class Use, class L> static inline void fill_fragment(fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f,
                                                               __nv_bfloat16 v) {
    for (int i = 0; i < 8; i++) f.x[i] = v;
}
static inline void fill_fragment(fragment<accumulator, 16, 16, 16, float> &f, float v) {
    for (int i = 0; i < 8; i++) f.x[i] = v;
}

template <class Use, class L>
static inline void load_matrix_sync_at(const char *file, int line, fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f,
                                       const __nv_bfloat16 *p, unsigned ldm) {
    cudaemu_wmma_load(file, line, f.x, std::is_same<Use, matrix_a>::value ? 0 : 1, p, ldm,
                      std::is_same<L, col_major>::value);
}
static inline void load_matrix_sync_at(const char *file, int line, fragment<accumulator, 16, 16, 16, float> &f,
                                       const float *p, unsigned ldm, layout_t layout) {
    cudaemu_wmma_load(file, line, f.x, 2, p, ldm, (int)layout);   /* 0 row-major, 1 col-major, else a fault */
}
static inline void store_matrix_sync_at(const char *file, int line, float *p,
                                        const fragment<accumulator, 16, 16, 16, float> &f, unsigned ldm,
                                        layout_t layout) {
    cudaemu_wmma_store(file, line, p, f.x, ldm, (int)layout);
}
template <class LA, class LB>
static inline void mma_sync_at(const char *file, int line, fragment<accumulator, 16, 16, 16, float> &d,
                               const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                               const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                               const fragment<accumulator, 16, 16, 16, float> &c) {
    cudaemu_wmma_mma(file, line, d.x, a.x, b.x, c.x);
}
}  // namespace wmma
}  // namespace nvcuda

#define load_matrix_sync(...) load_matrix_sync_at(__FILE__, __LINE__, __VA_ARGS__)
#define store_matrix_sync(...) store_matrix_sync_at(__FILE__, __LINE__, __VA_ARGS__)
#define mma_sync(...) mma_sync_at(__FILE__, __LINE__, __VA_ARGS__)
#endif
