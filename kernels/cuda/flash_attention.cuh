/* kernels/cuda/flash_attention.cuh — what the two kernel families of the fused attention share: the tile
 * loader, RoPE on a loaded tile and its inverse on an accumulator row, the launch arguments, the head sizes
 * compiled and the switch onto them. flash_attention.cu (the host side and the fp32 build's shared-memory
 * kernels k_fa_*) and flash_attention_mma.cu (the bf16 build's register-accumulator kernels k_fm_*) include it;
 * the design of both is in flash_attention.cu's opening note. Device helpers only, no launches: the emulator
 * (tests/cudaemu/cu2cpp.sh) rewrites the .cu files, not their headers.
 */
#ifndef PRISM_FLASH_ATTENTION_CUH
#define PRISM_FLASH_ATTENTION_CUH
#include "cuda_common.cuh"

#define FA_MAX_D 256

/* ---- shared-memory tiles ------------------------------------------------------------------------------ */
__host__ __device__ constexpr size_t fa_al(size_t b) { return (b + 127) & ~(size_t)127; }

/* rows [row0, row0+ROWS) of one head's slice of a (B*T, ld) floatX matrix -> dst[ROWS][D] (row stride ldd);
 * rows >= T and columns >= d are zero. vec: d == D and every row start 16-byte aligned. All threads call. */
template <int ROWS, int D>
__device__ __forceinline__ void fa_load_tile(floatX *dst, int ldd, const floatX *src, size_t ld, int row0, int T,
                                             int d, bool vec) {
    const int nt = blockDim.x, tid = threadIdx.x;
    if (vec) {
        constexpr int EPV = 16 / sizeof(floatX), CH = D / EPV;   /* 16-byte chunks per row */
        for (int e = tid; e < ROWS * CH; e += nt) {
            int r = e / CH, c = (e % CH) * EPV, t = row0 + r;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (t < T) v = *(const uint4 *)(src + (size_t)t * ld + c);
            *(uint4 *)(dst + (size_t)r * ldd + c) = v;
        }
    } else {
        for (int e = tid; e < ROWS * D; e += nt) {
            int r = e / D, c = e % D, t = row0 + r;
            dst[(size_t)r * ldd + c] = (t < T && c < d) ? src[(size_t)t * ld + c] : fx(0.0f);
        }
    }
}

/* RoPE on rows [0, ROWS) of a tile fa_load_tile just loaded from rows row0..: for i < d/2 the pair
 * (x_i, x_{i+d/2}) of the row at position t = row0 + r rotates by the angle whose cos/sin are rope[t*d + 2i],
 * rope[t*d + 2i + 1] (k_fa_rope_table). Rows >= T (zero) are left alone. All threads call; the caller puts a
 * __syncthreads between the load and this, and another before the tile is read. */
template <int ROWS>
__device__ __forceinline__ void fa_rope_tile(floatX *tile, int ldt, const float *rope, int row0, int T, int d) {
    const int hd = d >> 1;
    for (int e = threadIdx.x; e < ROWS * hd; e += blockDim.x) {
        int r = e / hd, i = e % hd, t = row0 + r;
        if (t >= T) continue;
        const float cs = rope[(size_t)t * d + 2 * i], sn = rope[(size_t)t * d + 2 * i + 1];
        floatX *x = tile + (size_t)r * ldt;
        float a = xf(x[i]), b = xf(x[i + hd]);
        x[i] = fx(a * cs - b * sn);
        x[i + hd] = fx(a * sn + b * cs);
    }
}

/* Column c of the inverse rotation of a float accumulator row g[0..d) (a gradient w.r.t. rotated q or k) at the
 * position whose table row is rope_t = rope + t*d: the transpose of fa_rope_tile's rotation. */
__device__ __forceinline__ float fa_unrope(const float *g, int c, int d, const float *rope_t) {
    const int hd = d >> 1, i = c < hd ? c : c - hd;
    const float cs = rope_t[2 * i], sn = rope_t[2 * i + 1];
    return c < hd ? g[i] * cs + g[i + hd] * sn : g[i + hd] * cs - g[i] * sn;
}

/* ---- host side, both families ------------------------------------------------------------------------- */
struct fa_args {
    floatX *out, *dqkv;
    float *lse, *delta;
    const floatX *qkv, *dout;
    int B, T, NH, d;
    float scale;
    bool vec;
    const float *rope;   /* cos/sin table (k_fa_rope_table), NULL: no RoPE */
};

template <class K> static int fa_launch_prep(K kernel, size_t bytes, const char *where) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    return e == cudaSuccess ? 0 : pcu_fail(where, e);
}

/* The compiled head size a head of size d runs in (0: none). */
static inline int fa_padded(int d) {
    static const int sizes[] = { 16, 32, 64, 96, 128, 192, 256 };
    for (int s : sizes) if (d <= s) return s;
    return 0;
}

/* R<D>::run(a, fwd) for the compiled head size of a.d: each family's launches per head size. */
template <template <int> class R> static int fa_by_head_size(const fa_args &a, bool fwd) {
    switch (fa_padded(a.d)) {
    case 16: return R<16>::run(a, fwd);
    case 32: return R<32>::run(a, fwd);
    case 64: return R<64>::run(a, fwd);
    case 96: return R<96>::run(a, fwd);
    case 128: return R<128>::run(a, fwd);
    case 192: return R<192>::run(a, fwd);
    case 256: return R<256>::run(a, fwd);
    }
    return pcu_fail_msg(fwd ? "flash_attention_forward" : "flash_attention_backward",
                        "head size above 256: use prism_cuda_attention_forward/backward");
}

#ifndef ENABLE_FP32
/* The bf16 build's forward (fwd) or backward launches for a (flash_attention_mma.cu). Returns 0 or -1. */
int fm_dispatch(const fa_args &a, bool fwd);
#endif
#endif
