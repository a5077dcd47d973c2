/* kernels/cuda/flash_attention.cu — fused causal attention, forward and backward, in the FlashAttention-2
 * manner (twin: kernels/flash_attention.c; the materialised attention.cu is the other reference).
 *
 * Q, K, V are read straight from the (B,T,3C) output of the QKV matmul (head h: columns h*d..(h+1)*d of
 * each third) and the output is written as (B,T,C) for the projection: no permutes, no B*NH*T*T tensor.
 * Two sets of kernels share the tiling, the grid order, masking, RoPE and the host side:
 *   bf16 build: k_fm_fwd, k_fm_dkv, k_fm_dq (section "the register-accumulator kernels" below): mma.sync
 *     m16n8k16 with S, P, O (dQ, dK, dV) in registers, ldmatrix fragment loads, Q fragments kept in registers,
 *     cp.async double-buffered tiles — FlashAttention-2 class;
 *   fp32 build (ENABLE_FP32, no bf16 tensor-core path): k_fa_fwd, k_fa_dkv, k_fa_dq, described next, with float
 *     tiles and accumulators in shared memory and the tile products as plain float loops (warp_mm).
  * Forward, one block per (64-query tile, b*NH + h), heaviest tiles (those nearest the end) first across the
 * whole grid: b*NH + h is the grid's x (the fastest-issued index) and the tile its y, reversed, so every head's
 * last tile is issued before any head's second-to-last and the light tiles fill the tail (dk/dv likewise
 * with its key tiles, whose first is the heaviest; before, x was the tile, and head 1's heavy tiles waited behind
 * head 0's light ones):
 *   the block's Q tile sits in shared memory; K/V tiles of BC keys stream through it up to the diagonal
 *   (tiles wholly above it are never loaded); warp w owns query rows 16w..16w+15 and for each tile computes
 *   S_w = Q_w K^T (tensor cores), the online softmax of its rows (two lanes per row: running max m and
 *   sum l, the O rows rescaled by exp(m_old - m_new)), then O_w += P_w V (tensor cores, P in bf16).
 *   It writes out = O / l and the per-row log-sum-exp lse = m + log(l) (scaled scores), all that backward keeps.
 * Backward, from lse and delta = rowsum(dout * out) (k_fa_delta): P = exp(S - lse) is recomputed, never stored.
 *   k_fa_dkv: one block per (32-key tile, b*NH + h), query tiles from the diagonal down; warp w owns 16 keys:
 *     S^T = K_w Q^T, dP^T = V_w dO^T, dS^T = P^T (dP^T - delta), dV_w += P^T dO, dK_w += dS^T Q (scaled).
 *   k_fa_dq: one block per 64-query tile, key tiles up to the diagonal: S, dP again, dQ_w += dS K (scaled).
 *   Two passes instead of FA-2's atomics into a float dQ: no scratch to zero, and the result is
 *   deterministic, for about 40% more backward arithmetic (S and dP computed twice).
 * (k_fa_*) Tile products are warp-level 16-row GEMMs between shared-memory tiles (warp_mm), accumulators (O, dQ,
 * dK, dV) in shared memory as float.
 * Head sizes: each kernel is compiled for D in {16, 32, 64, 96, 128, 192, 256}; head size d runs in the
 * smallest D >= d, with columns d..D-1 zero-filled in shared memory. k_fm_*: rows move as 16-byte cp.async
 * chunks whenever d % 8 == 0 (48, 80 included: the chunks past d are zero-filled), scalar loads otherwise;
 * k_fa_*: 16-byte vectors when d == D (and the row strides allow), scalar loads otherwise.
 * d > 256 is refused (prism_cuda_flash_attention_supports). Shared-memory rows are padded (+16 bytes for
 * bf16 rows, +32 bytes for float rows: FA_FPAD) against bank conflicts.
 * RoPE (the _rope entry points, theta > 0): qkv in memory stays as the QKV matmul wrote it; each Q or K tile is
 * rotated in shared memory right after its load (fa_rope_tile: pair (i, i+d/2) of the row at position t by
 * t*theta^(-2i/d), with the REAL head size d, so the zero padding up to D stays zero), and the dQ and dK
 * accumulators are rotated back (the transpose) as they are written, so dqkv is the gradient w.r.t. the
 * un-rotated qkv. The cos/sin come from a (T, d/2) table built per call by k_fa_rope_table with the angle
 * computed in double exactly as the separate rope kernel (llama.cu) and the CPU engine compute it (t*freq reaches
 * ~1e3 rad, beyond fast single-precision sin/cos); it lives in the thread's pcu_scratch. theta == 0 passes a NULL
 * table: no rotation, no extra barrier, the GPT-2 path unchanged.
 */
#include "cuda_common.cuh"
#ifndef ENABLE_FP32
#include "mma_sync.cuh"
#endif
#include <math.h>

#define FA_MAX_D 256
/* float rows of the k_fa_* kernels (the O/dQ/dK/dV accumulators, the scores S and dP) are padded by 8 floats
 * (a row stride of 8 mod 32 words); bf16 rows keep their 8-element (16-byte) pad, conflict-free for 16-byte row
 * fragments and for ldmatrix's 8 row addresses. */
#define FA_FPAD 8

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

/* rope[t*d + 2i], [t*d + 2i + 1] = cos, sin of t*theta^(-2i/d) for t < T, i < d/2: the angle in double, the
 * same expression as k_rope (llama.cu) and cpu_rope_forward. One thread per (t, i). */
__global__ void k_fa_rope_table(float *rope, int T, int d, double theta) {
    const int hd = d >> 1;
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)T * hd) return;
    int t = (int)(e / hd), i = (int)(e % hd);
    double ang = (double)t * pow(theta, -2.0 * i / d);
    rope[2 * e] = (float)cos(ang);
    rope[2 * e + 1] = (float)sin(ang);
}

/* ---- warp-level tile product: C[16][N] (+)= A[16][K] B[K][N] (fp32 build) -------------------------------
 * A(r,k) = A[r*lda + k], or A[k*lda + r] when A_COL; B(k,n) = B[k*ldb + n], or B[n*ldb + k] when B_COL; C float,
 * row-major. Called by all 32 lanes of a warp; C's previous values are read when ACC. The caller orders
 * shared memory around it (__syncwarp / __syncthreads): it reads A, B (and C) and writes C, nothing else.
 * Plain float loops on CUDA cores: the fp32 build has no bf16 tensor-core path (the bf16 build runs k_fm_*). */
template <int N, int K, bool A_COL, bool B_COL, bool ACC>
__device__ __forceinline__ void warp_mm(float *C, int ldc, const floatX *A, int lda, const floatX *B, int ldb) {
    static_assert(N % 16 == 0 && K % 16 == 0, "tile sizes are multiples of 16");
    const int lane = threadIdx.x & 31;
    for (int e = lane; e < 16 * N; e += 32) {
        int r = e / N, n = e % N;
        float s = ACC ? C[(size_t)r * ldc + n] : 0.0f;
        for (int k = 0; k < K; k++)
            s += xf(A_COL ? A[(size_t)k * lda + r] : A[(size_t)r * lda + k]) *
                 xf(B_COL ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n]);
        C[(size_t)r * ldc + n] = s;
    }
}

/* ---- forward ----------------------------------------------------------------------------------------------
 * Block: NW warps, 16*NW query rows; BC keys per K/V tile. Shared memory (bytes, each part 128-aligned):
 *   sQ floatX[BR][D+8] | sK, sV floatX[BC][D+8] | sO float[BR][D+4] | sS float[BR][BC+4] | sP floatX[BR][BC+8]
 *   | sInv float[BR] */
template <int D, int NW, int BC> struct fa_fwd_cfg {
    static constexpr int BR = 16 * NW, LX = D + 8, LO = D + FA_FPAD, LS = BC + FA_FPAD, LP = BC + 8;
    static constexpr size_t oQ = 0, oK = oQ + fa_al((size_t)BR * LX * sizeof(floatX)),
                            oV = oK + fa_al((size_t)BC * LX * sizeof(floatX)),
                            oO = oV + fa_al((size_t)BC * LX * sizeof(floatX)),
                            oS = oO + fa_al((size_t)BR * LO * sizeof(float)),
                            oP = oS + fa_al((size_t)BR * LS * sizeof(float)),
                            oI = oP + fa_al((size_t)BR * LP * sizeof(floatX)),
                            bytes = oI + fa_al((size_t)BR * sizeof(float));
};

template <int D, int NW, int BC>
__global__ void __launch_bounds__(NW * 32) k_fa_fwd(floatX *out, float *lse, const floatX *qkv, int T, int NH, int d,
                                                    float scale, bool vec, const float *rope) {
    typedef fa_fwd_cfg<D, NW, BC> G;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    floatX *sQ = (floatX *)(sm + G::oQ), *sK = (floatX *)(sm + G::oK), *sV = (floatX *)(sm + G::oV);
    float *sO = (float *)(sm + G::oO), *sS = (float *)(sm + G::oS), *sInv = (float *)(sm + G::oI);
    floatX *sP = (floatX *)(sm + G::oP);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int qt = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int q0 = qt * G::BR, C = NH * d;
    const size_t ld = (size_t)3 * C;
    const floatX *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;

    fa_load_tile<G::BR, D>(sQ, G::LX, qb, ld, q0, T, d, vec);
    if (rope) { __syncthreads(); fa_rope_tile<G::BR>(sQ, G::LX, rope, q0, T, d); }   /* read after the loop's barrier */
    const int r = 16 * warp + (lane >> 1), half = lane & 1, q = q0 + r;   /* this lane's row, and which half */
    for (int c = half; c < D; c += 2) sO[(size_t)r * G::LO + c] = 0.0f;
    const int qlast = (q < T - 1 ? q : T - 1);                /* rows past T (padding) attend like row T-1, never written */
    float m = -INFINITY, l = 0.0f;
    const int last_key = (q0 + G::BR < T ? q0 + G::BR : T) - 1, ntiles = last_key / BC + 1;
    for (int j = 0; j < ntiles; j++) {
        const int k0 = j * BC;
        __syncthreads();                            /* every warp is done with the previous K/V tile */
        fa_load_tile<BC, D>(sK, G::LX, kb, ld, k0, T, d, vec);
        fa_load_tile<BC, D>(sV, G::LX, vb, ld, k0, T, d, vec);
        __syncthreads();
        if (rope) { fa_rope_tile<BC>(sK, G::LX, rope, k0, T, d); __syncthreads(); }
        float *sSw = sS + (size_t)16 * warp * G::LS;
        warp_mm<BC, D, false, true, false>(sSw, G::LS, sQ + (size_t)16 * warp * G::LX, G::LX, sK, G::LX);
        __syncwarp();
        /* online softmax of row r over this tile's keys; the lane pair shares max and sum through shuffles */
        const float *srow = sS + (size_t)r * G::LS;
        floatX *prow = sP + (size_t)r * G::LP;
        float mt = -INFINITY;
        for (int c = half; c < BC; c += 2)
            if (k0 + c <= qlast) mt = fmaxf(mt, srow[c] * scale);
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        const float mn = fmaxf(m, mt);              /* finite: key 0 is in every row's first tile */
        const float alpha = __expf(m - mn);
        float ls = 0.0f;
        for (int c = half; c < BC; c += 2) {
            float p = k0 + c <= qlast ? __expf(srow[c] * scale - mn) : 0.0f;
            ls += p;
            prow[c] = fx(p);
        }
        ls += __shfl_xor_sync(0xffffffffu, ls, 1);
        l = l * alpha + ls;
        m = mn;
        for (int c = half; c < D; c += 2) sO[(size_t)r * G::LO + c] *= alpha;
        __syncwarp();
        warp_mm<D, BC, false, false, true>(sO + (size_t)16 * warp * G::LO, G::LO, sP + (size_t)16 * warp * G::LP,
                                           G::LP, sV, G::LX);
        __syncwarp();
    }
    if (!half) {
        sInv[r] = 1.0f / l;
        if (q < T) lse[(size_t)bh * T + q] = m + logf(l);
    }
    __syncwarp();
    /* the warp's 16 rows of out, consecutive lanes on consecutive columns */
    for (int e = lane; e < 16 * d; e += 32) {
        int rr = 16 * warp + e / d, c = e % d, t = q0 + rr;
        if (t < T) out[((size_t)b * T + t) * C + (size_t)h * d + c] = fx(sO[(size_t)rr * G::LO + c] * sInv[rr]);
    }
}

/* ---- backward ---------------------------------------------------------------------------------------------- */
/* delta[bh, t] = sum_c dout[b,t,h*d+c] * out[b,t,h*d+c]: one warp per (b, t, h). */
__global__ void k_fa_delta(float *delta, const floatX *dout, const floatX *out, int B, int T, int NH, int d) {
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= (size_t)B * T * NH) return;
    int h = (int)(row % NH);
    size_t bt = row / NH;
    int t = (int)(bt % T), b = (int)(bt / T);
    const floatX *o = out + bt * (size_t)NH * d + (size_t)h * d, *g = dout + bt * (size_t)NH * d + (size_t)h * d;
    float s = 0.0f;
    for (int c = lane; c < d; c += 32) s += xf(g[c]) * xf(o[c]);
    s = warp_sum(s);
    if (lane == 0) delta[((size_t)b * NH + h) * T + t] = s;
}

/* dK, dV for KB = 16*NW keys per block, QB queries per step. Shared memory:
 *   sK, sV floatX[KB][D+8] | sQ, sdO floatX[QB][D+8] | sL, sDl float[QB] | sS, sdP float[KB][QB+4]
 *   | sP, sdS floatX[KB][QB+8] | sdK, sdV float[KB][D+4] */
template <int D, int NW, int QB> struct fa_dkv_cfg {
    static constexpr int KB = 16 * NW, LX = D + 8, LA = D + FA_FPAD, LS = QB + FA_FPAD, LP = QB + 8;
    static constexpr size_t oK = 0, oV = oK + fa_al((size_t)KB * LX * sizeof(floatX)),
                            oQ = oV + fa_al((size_t)KB * LX * sizeof(floatX)),
                            odO = oQ + fa_al((size_t)QB * LX * sizeof(floatX)),
                            oL = odO + fa_al((size_t)QB * LX * sizeof(floatX)),
                            oDl = oL + fa_al((size_t)QB * sizeof(float)),
                            oS = oDl + fa_al((size_t)QB * sizeof(float)),
                            odP = oS + fa_al((size_t)KB * LS * sizeof(float)),
                            oP = odP + fa_al((size_t)KB * LS * sizeof(float)),
                            odS = oP + fa_al((size_t)KB * LP * sizeof(floatX)),
                            odK = odS + fa_al((size_t)KB * LP * sizeof(floatX)),
                            odV = odK + fa_al((size_t)KB * LA * sizeof(float)),
                            bytes = odV + fa_al((size_t)KB * LA * sizeof(float));
};

template <int D, int NW, int QB>
__global__ void __launch_bounds__(NW * 32) k_fa_dkv(floatX *dqkv, const floatX *qkv, const floatX *dout,
                                                    const float *lse, const float *delta, int T, int NH, int d,
                                                    float scale, bool vec, const float *rope) {
    typedef fa_dkv_cfg<D, NW, QB> G;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    floatX *sK = (floatX *)(sm + G::oK), *sV = (floatX *)(sm + G::oV), *sQ = (floatX *)(sm + G::oQ);
    floatX *sdO = (floatX *)(sm + G::odO), *sP = (floatX *)(sm + G::oP), *sdS = (floatX *)(sm + G::odS);
    float *sL = (float *)(sm + G::oL), *sDl = (float *)(sm + G::oDl), *sS = (float *)(sm + G::oS);
    float *sdP = (float *)(sm + G::odP), *sdK = (float *)(sm + G::odK), *sdV = (float *)(sm + G::odV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int bh = blockIdx.x, b = bh / NH, h = bh % NH, k0 = blockIdx.y * G::KB, C = NH * d;
    const size_t ld = (size_t)3 * C;
    const floatX *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;
    const floatX *gb = dout + (size_t)b * T * C + (size_t)h * d;
    const float *lseb = lse + (size_t)bh * T, *deltab = delta + (size_t)bh * T;

    fa_load_tile<G::KB, D>(sK, G::LX, kb, ld, k0, T, d, vec);
    fa_load_tile<G::KB, D>(sV, G::LX, vb, ld, k0, T, d, vec);
    if (rope) { __syncthreads(); fa_rope_tile<G::KB>(sK, G::LX, rope, k0, T, d); }   /* read after the loop's barrier */
    for (int e = lane; e < 16 * D; e += 32) {     /* the warp's own accumulator rows */
        size_t o = (size_t)(16 * warp + e / D) * G::LA + e % D;
        sdK[o] = 0.0f;
        sdV[o] = 0.0f;
    }
    const int kw = 16 * warp;
    for (int i = k0 / QB; i * QB < T; i++) {       /* query tiles from the one holding key k0: none above the diagonal */
        const int q0 = i * QB;
        __syncthreads();                            /* every warp is done with the previous Q/dO tile */
        fa_load_tile<QB, D>(sQ, G::LX, qb, ld, q0, T, d, vec);
        fa_load_tile<QB, D>(sdO, G::LX, gb, (size_t)C, q0, T, d, vec && C % (16 / sizeof(floatX)) == 0);
        for (int e = threadIdx.x; e < QB; e += blockDim.x) {
            sL[e] = q0 + e < T ? lseb[q0 + e] : 0.0f;
            sDl[e] = q0 + e < T ? deltab[q0 + e] : 0.0f;
        }
        __syncthreads();
        if (rope) { fa_rope_tile<QB>(sQ, G::LX, rope, q0, T, d); __syncthreads(); }
        warp_mm<QB, D, false, true, false>(sS + (size_t)kw * G::LS, G::LS, sK + (size_t)kw * G::LX, G::LX, sQ, G::LX);
        warp_mm<QB, D, false, true, false>(sdP + (size_t)kw * G::LS, G::LS, sV + (size_t)kw * G::LX, G::LX, sdO, G::LX);
        __syncwarp();
        for (int e = lane; e < 16 * QB; e += 32) {  /* row: key kw + e/QB of the block; column: query q0 + e%QB */
            int rr = kw + e / QB, c = e % QB, key = k0 + rr, q = q0 + c;
            size_t o = (size_t)rr * G::LS + c;
            float p = (key <= q && q < T) ? __expf(sS[o] * scale - sL[c]) : 0.0f;
            sP[(size_t)rr * G::LP + c] = fx(p);
            sdS[(size_t)rr * G::LP + c] = fx(p * (sdP[o] - sDl[c]));
        }
        __syncwarp();
        warp_mm<D, QB, false, false, true>(sdV + (size_t)kw * G::LA, G::LA, sP + (size_t)kw * G::LP, G::LP, sdO, G::LX);
        warp_mm<D, QB, false, false, true>(sdK + (size_t)kw * G::LA, G::LA, sdS + (size_t)kw * G::LP, G::LP, sQ, G::LX);
        __syncwarp();
    }
    for (int e = lane; e < 16 * d; e += 32) {
        int rr = kw + e / d, c = e % d, key = k0 + rr;
        if (key >= T) continue;
        size_t o = ((size_t)b * T + key) * ld + (size_t)h * d + c;
        const float *gk = sdK + (size_t)rr * G::LA;   /* dK of the rotated k: rotated back (the warp's own row) */
        dqkv[o + C] = fx((rope ? fa_unrope(gk, c, d, rope + (size_t)key * d) : gk[c]) * scale);
        dqkv[o + 2 * C] = fx(sdV[(size_t)rr * G::LA + c]);
    }
}

/* dQ for BR = 16*NW queries per block, KT keys per step. Shared memory:
 *   sQ, sdO floatX[BR][D+8] | sK, sV floatX[KT][D+8] | sL, sDl float[BR] | sS, sdP float[BR][KT+4]
 *   | sdS floatX[BR][KT+8] | sdQ float[BR][D+4] */
template <int D, int NW, int KT> struct fa_dq_cfg {
    static constexpr int BR = 16 * NW, LX = D + 8, LA = D + FA_FPAD, LS = KT + FA_FPAD, LP = KT + 8;
    static constexpr size_t oQ = 0, odO = oQ + fa_al((size_t)BR * LX * sizeof(floatX)),
                            oK = odO + fa_al((size_t)BR * LX * sizeof(floatX)),
                            oV = oK + fa_al((size_t)KT * LX * sizeof(floatX)),
                            oL = oV + fa_al((size_t)KT * LX * sizeof(floatX)),
                            oDl = oL + fa_al((size_t)BR * sizeof(float)),
                            oS = oDl + fa_al((size_t)BR * sizeof(float)),
                            odP = oS + fa_al((size_t)BR * LS * sizeof(float)),
                            odS = odP + fa_al((size_t)BR * LS * sizeof(float)),
                            odQ = odS + fa_al((size_t)BR * LP * sizeof(floatX)),
                            bytes = odQ + fa_al((size_t)BR * LA * sizeof(float));
};

template <int D, int NW, int KT>
__global__ void __launch_bounds__(NW * 32) k_fa_dq(floatX *dqkv, const floatX *qkv, const floatX *dout,
                                                   const float *lse, const float *delta, int T, int NH, int d,
                                                   float scale, bool vec, const float *rope) {
    typedef fa_dq_cfg<D, NW, KT> G;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    floatX *sQ = (floatX *)(sm + G::oQ), *sdO = (floatX *)(sm + G::odO), *sK = (floatX *)(sm + G::oK);
    floatX *sV = (floatX *)(sm + G::oV), *sdS = (floatX *)(sm + G::odS);
    float *sL = (float *)(sm + G::oL), *sDl = (float *)(sm + G::oDl), *sS = (float *)(sm + G::oS);
    float *sdP = (float *)(sm + G::odP), *sdQ = (float *)(sm + G::odQ);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int qt = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int q0 = qt * G::BR, C = NH * d, rw = 16 * warp;
    const size_t ld = (size_t)3 * C;
    const floatX *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;
    const floatX *gb = dout + (size_t)b * T * C + (size_t)h * d;

    fa_load_tile<G::BR, D>(sQ, G::LX, qb, ld, q0, T, d, vec);
    fa_load_tile<G::BR, D>(sdO, G::LX, gb, (size_t)C, q0, T, d, vec && C % (16 / sizeof(floatX)) == 0);
    for (int e = threadIdx.x; e < G::BR; e += blockDim.x) {
        sL[e] = q0 + e < T ? lse[(size_t)bh * T + q0 + e] : 0.0f;
        sDl[e] = q0 + e < T ? delta[(size_t)bh * T + q0 + e] : 0.0f;
    }
    if (rope) { __syncthreads(); fa_rope_tile<G::BR>(sQ, G::LX, rope, q0, T, d); }   /* read after the loop's barrier */
    for (int e = lane; e < 16 * D; e += 32) sdQ[(size_t)(rw + e / D) * G::LA + e % D] = 0.0f;
    const int last_key = (q0 + G::BR < T ? q0 + G::BR : T) - 1, ntiles = last_key / KT + 1;
    for (int j = 0; j < ntiles; j++) {
        const int k0 = j * KT;
        __syncthreads();
        fa_load_tile<KT, D>(sK, G::LX, kb, ld, k0, T, d, vec);
        fa_load_tile<KT, D>(sV, G::LX, vb, ld, k0, T, d, vec);
        __syncthreads();
        if (rope) { fa_rope_tile<KT>(sK, G::LX, rope, k0, T, d); __syncthreads(); }
        warp_mm<KT, D, false, true, false>(sS + (size_t)rw * G::LS, G::LS, sQ + (size_t)rw * G::LX, G::LX, sK, G::LX);
        warp_mm<KT, D, false, true, false>(sdP + (size_t)rw * G::LS, G::LS, sdO + (size_t)rw * G::LX, G::LX, sV, G::LX);
        __syncwarp();
        for (int e = lane; e < 16 * KT; e += 32) {
            int rr = rw + e / KT, c = e % KT, q = q0 + rr, key = k0 + c;
            size_t o = (size_t)rr * G::LS + c;
            float p = (key <= q && q < T) ? __expf(sS[o] * scale - sL[rr]) : 0.0f;
            sdS[(size_t)rr * G::LP + c] = fx(p * (sdP[o] - sDl[rr]));
        }
        __syncwarp();
        warp_mm<D, KT, false, false, true>(sdQ + (size_t)rw * G::LA, G::LA, sdS + (size_t)rw * G::LP, G::LP, sK, G::LX);
        __syncwarp();
    }
    for (int e = lane; e < 16 * d; e += 32) {
        int rr = rw + e / d, c = e % d, q = q0 + rr;
        if (q >= T) continue;
        const float *gq = sdQ + (size_t)rr * G::LA;   /* dQ of the rotated q: rotated back (the warp's own row) */
        dqkv[((size_t)b * T + q) * ld + (size_t)h * d + c] =
            fx((rope ? fa_unrope(gq, c, d, rope + (size_t)q * d) : gq[c]) * scale);
    }
}

/* ---- host side -------------------------------------------------------------------------------------------- */
/* Tile shapes per head size: fewer rows when a bigger head (or float32 elements) would not fit. */
template <int D> struct fa_shape {
    static constexpr bool big = D * sizeof(floatX) > 256;   /* D > 128 in bf16, D > 64 in float32 */
    static constexpr int FWD_NW = 4, FWD_BC = big ? 32 : 64;
    static constexpr int DKV_NW = 2, DKV_QB = (sizeof(floatX) == 4 && D > 128) ? 32 : 64;
    static constexpr int DQ_NW = (sizeof(floatX) == 4 && D > 128) ? 2 : 4, DQ_KT = 32;
    typedef fa_fwd_cfg<D, FWD_NW, FWD_BC> F;
    typedef fa_dkv_cfg<D, DKV_NW, DKV_QB> K;
    typedef fa_dq_cfg<D, DQ_NW, DQ_KT> Q;
    static_assert(F::bytes <= 227 * 1024 && K::bytes <= 227 * 1024 && Q::bytes <= 227 * 1024,
                  "a flash-attention tile set does not fit the 227 KiB of shared memory of a block");
};

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

#ifndef ENABLE_FP32
/* ---- the register-accumulator kernels (bf16 build): FlashAttention-2 class ------------------------------
 *
 * Forward k_fm_fwd: one block of NW warps per (16*NW-query tile, b*NH + h), heaviest tiles first (the grid
 * order above). Warp w owns query rows 16w..16w+15 and keeps everything of them in registers (mma_sync.cuh's
 * m16n8k16 fragments, PTX ISA layouts):
 *   Q   QREG: D/16 A-fragments loaded once by ldmatrix and kept across the K/V loop; otherwise (head size 256,
 *       where they do not fit beside O) re-read from the shared Q tile by ldmatrix at each K/V tile;
 *   S   BC/8 accumulator fragments of Q K^T (K B-fragments by ldmatrix from the [key][dim] tile);
 *   P   exp(S - m) rounded to bf16 and re-packed in registers as the A-fragments of P V: the accumulator layout
 *       of S tiles 2k, 2k+1 is exactly the A layout of key block k, so no shuffle and no shared memory;
 *   O   D/8 accumulator fragments, rescaled in registers by exp(m_old - m_new) per row;
 *   m, l  per lane, for rows g and g+8 (g = lane/4): the row max is reduced over the 4 lanes of a row group
 *       (xor 1, 2) at each tile; l is the lane's partial sum, reduced once at the end.
 * V B-fragments come from the [key][dim] tile by ldmatrix .trans. K/V tiles of BC keys are double-buffered in
 * shared memory and filled by cp.async (16-byte .cg copies, zero fill for rows >= T and columns >= d) one tile
 * ahead: tile j+1 is in flight while tile j is computed (cp_async_wait<1> + __syncthreads before use, a
 * __syncthreads after, before the buffer is refilled). Head sizes with d % 8 != 0 (or unaligned rows) take
 * plain loads (fa_load_tile's scalar path) into the same buffers. Only tiles up to the diagonal are loaded;
 * masking (key > query, key >= T) is applied only in tiles that cross the diagonal or T; a warp whose rows all
 * precede a tile's first key skips it.
 * Backward, the same two passes as the wmma kernels (no atomics, deterministic), in the same style:
 *   k_fm_dq: the forward's shape with dO beside Q: S = Q K^T, dP = dO V^T (V B-fragments non-transposed),
 *     P = exp(S - lse), dS = P (dP - delta) re-packed as A-fragments, dQ += dS K (K by ldmatrix .trans), dQ in
 *     registers; K/V double-buffered by cp.async.
 *   k_fm_dkv: one block per 64-key tile, query tiles of QB from the diagonal down, Q/dO (and their lse, delta)
 *     double-buffered by cp.async; warp w owns 16 keys and SPLIT = 1 (or 2 above head size 128: the pair of
 *     warps on the same keys each keeps half of the columns of dK and dV, computing S^T and dP^T both) so dK,
 *     dV stay in registers: S^T = K_w Q^T, dP^T = V_w dO^T (K, V A-fragments from shared memory), P^T, dS^T
 *     re-packed, dV += P^T dO, dK += dS^T Q (dO, Q by ldmatrix .trans).
 *   Results leave registers once: dV straight to dqkv; dQ and dK through a float tile in the then idle
 *   buffers, where RoPE's inverse rotation (which pairs columns i, i+d/2 of different lanes) reads them.
 * RoPE (Llama): Q and each K tile are rotated in shared memory after they land (fa_rope_tile), then read by
 * ldmatrix: one more __syncthreads per tile, only on that path.
 * Shared memory rows are bf16[D+8] (+8: ldmatrix's 8 row addresses fall on disjoint banks). Seeded bugs for the
 * emulator tests (FA_MMA_SEED, never set in a real build; tests/cudaemu/seeded_bugs.sh): 1 drops the cp.async wait
 * before a K/V tile is used (fm_kv_step: forward and dQ); 2 swaps the two 8-row halves of the B-fragment ldmatrix
 * lane map (fm_brow: K in S = Q K^T, and every other non-transposed B operand).
 */
#ifndef FA_MMA_SEED
#define FA_MMA_SEED 0
#endif
typedef __nv_bfloat16 fm_bf;

/* rows [row0, row0+ROWS) of one head's slice of a (B*T, ld) bf16 matrix -> dst[ROWS][D+8] by cp.async (rows >= T,
 * columns >= d zero-filled); async: d % 8 == 0 and rows 16-byte aligned, else plain loads. All threads call;
 * the caller commits the group. */
template <int ROWS, int D>
__device__ __forceinline__ void fm_load_tile(fm_bf *dst, const fm_bf *src, size_t ld, int row0, int T, int d,
                                             bool async) {
    constexpr int LX = D + 8, CH = D / 8;
    if (!async) { fa_load_tile<ROWS, D>(dst, LX, src, ld, row0, T, d, false); return; }
    for (int e = threadIdx.x; e < ROWS * CH; e += blockDim.x) {
        const int r = e / CH, c = (e % CH) * 8, t = row0 + r;
        const bool in = t < T && c < d;
        cp_async_16(dst + (size_t)r * LX + c, in ? src + (size_t)t * ld + c : src, in ? 16 : 0);
    }
}

/* This lane's ldmatrix row address in a [row][LX] tile: for A-fragments (16 rows x 16 columns, matrices
 * row-halves first) and for B-fragments of two 8-row n-tiles (x4: rows 0-7 cols 0-15, then rows 8-15). */
__device__ __forceinline__ const fm_bf *fm_arow(const fm_bf *t, int LX, int lane) {
    return t + (size_t)(((lane >> 3) & 1) * 8 + (lane & 7)) * LX + (lane >> 4) * 8;
}
__device__ __forceinline__ const fm_bf *fm_brow(const fm_bf *t, int LX, int lane) {
#if FA_MMA_SEED == 2
    return fm_arow(t, LX, lane);
#else
    return t + (size_t)((lane >> 4) * 8 + (lane & 7)) * LX + ((lane >> 3) & 1) * 8;
#endif
}

/* s[0..NS) = A B^T over NK*16 columns: A (16 rows) as registers af[] (AREG) or read by ldmatrix at arow; B's NS*8
 * rows [n][k] at brow (fm_brow). UK: how far the k loop unrolls when A is read from shared memory. */
template <int NK, int NS, bool AREG, int UK>
__device__ __forceinline__ void fm_mm_nt(frag_c *s, const frag_a *af, const fm_bf *arow, const fm_bf *brow, int LX) {
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[n].at(e) = 0.0f;
#pragma unroll UK
    for (int kk = 0; kk < NK; kk++) {
        frag_a qa;
        if (!AREG) ldmatrix_x4(qa.at(0), qa.at(1), qa.at(2), qa.at(3), arow + kk * 16);
        const frag_a &a = AREG ? af[AREG ? kk : 0] : qa;
#pragma unroll
        for (int np = 0; np < NS / 2; np++) {
            frag_b b0, b1;
            ldmatrix_x4(b0.at(0), b0.at(1), b1.at(0), b1.at(1), brow + (size_t)np * 16 * LX + kk * 16);
            mma_m16n8k16_bf16(s[2 * np], a, b0, s[2 * np]);
            mma_m16n8k16_bf16(s[2 * np + 1], a, b1, s[2 * np + 1]);
        }
    }
}

/* o[0..2*NDP) += P V: P (16 rows x NKB*16 keys) in the accumulator layout p[2*NKB] (floats, rounded to bf16 here);
 * V rows [key][dim] read .trans at vrow (fm_arow of the tile, plus the first column), NDP*16 columns. */
template <int NKB, int NDP>
__device__ __forceinline__ void fm_mm_pv(frag_c *o, const frag_c *p, const fm_bf *vrow, int LX) {
#pragma unroll
    for (int kb = 0; kb < NKB; kb++) {
        frag_a pa;
        pa.at(0) = pack_bf16x2(p[2 * kb].at(0), p[2 * kb].at(1));
        pa.at(1) = pack_bf16x2(p[2 * kb].at(2), p[2 * kb].at(3));
        pa.at(2) = pack_bf16x2(p[2 * kb + 1].at(0), p[2 * kb + 1].at(1));
        pa.at(3) = pack_bf16x2(p[2 * kb + 1].at(2), p[2 * kb + 1].at(3));
#pragma unroll
        for (int dp = 0; dp < NDP; dp++) {
            frag_b b0, b1;
            ldmatrix_x4_trans(b0.at(0), b0.at(1), b1.at(0), b1.at(1), vrow + (size_t)kb * 16 * LX + dp * 16);
            mma_m16n8k16_bf16(o[2 * dp], pa, b0, o[2 * dp]);
            mma_m16n8k16_bf16(o[2 * dp + 1], pa, b1, o[2 * dp + 1]);
        }
    }
}

template <int N> __device__ __forceinline__ void fm_zero(frag_c *f) {
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) f[n].at(e) = 0.0f;
}

/* The warp's 16 accumulator rows (N fragments = N*8 columns) into a float tile rows [16][ldf] for a read by row. */
template <int N> __device__ __forceinline__ void fm_stage(float *tile, int ldf, const frag_c *f, int lane) {
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) tile[(size_t)(g + (e >> 1) * 8) * ldf + n * 8 + 2 * tq + (e & 1)] = f[n].at(e);
}

/* One step of the K/V tile loop of k_fm_fwd and k_fm_dq (all threads): start tile j+1's cp.async into the other
 * buffer (if any), wait for tile j (group j; the newest group may stay in flight), barrier; with RoPE, rotate tile
 * j's K (and at j == 0 the BR-row Q tile) and barrier again. */
template <int BR, int BC, int D>
__device__ __forceinline__ void fm_kv_step(fm_bf *sK, fm_bf *sV, const fm_bf *kb, const fm_bf *vb, size_t ld, int j,
                                           int ntiles, int T, int d, bool async, const float *rope, fm_bf *sQ, int q0) {
    constexpr size_t buf = (size_t)BC * (D + 8);
    const int nb = (j & 1) ^ 1;
    if (j + 1 < ntiles) {   /* the next tile flies while this one is computed */
        fm_load_tile<BC, D>(sK + nb * buf, kb, ld, (j + 1) * BC, T, d, async);
        fm_load_tile<BC, D>(sV + nb * buf, vb, ld, (j + 1) * BC, T, d, async);
    }
    cp_async_commit();      /* possibly empty: the wait below always leaves exactly the newest group */
#if FA_MMA_SEED != 1
    cp_async_wait<1>();
#endif
    __syncthreads();
    if (rope) {
        if (j == 0) fa_rope_tile<BR>(sQ, D + 8, rope, q0, T, d);
        fa_rope_tile<BC>(sK + (j & 1) * buf, D + 8, rope, j * BC, T, d);
        __syncthreads();
    }
}

/* NK A-fragments of the warp's 16 rows, 16 columns each, from its ldmatrix row address (fm_arow). */
template <int NK> __device__ __forceinline__ void fm_load_afrags(frag_a *f, const fm_bf *row) {
#pragma unroll
    for (int kk = 0; kk < NK; kk++) ldmatrix_x4(f[kk].at(0), f[kk].at(1), f[kk].at(2), f[kk].at(3), row + kk * 16);
}

template <int D, int NW, int BC> struct fm_fwd_cfg {
    static constexpr int BR = 16 * NW, LX = D + 8;
    static constexpr size_t oQ = 0, oK = oQ + fa_al((size_t)BR * LX * 2), oV = oK + fa_al((size_t)2 * BC * LX * 2),
                            bytes = oV + fa_al((size_t)2 * BC * LX * 2);
    static constexpr size_t buf = (size_t)BC * LX;   /* elements between the two buffers of sK (sV) */
};

template <int D, int NW, int BC, bool QREG>
__global__ void __launch_bounds__(NW * 32) k_fm_fwd(fm_bf *out, float *lse, const fm_bf *qkv, int T, int NH, int d,
                                                    float scale, bool async, const float *rope) {
    typedef fm_fwd_cfg<D, NW, BC> G;
    constexpr int LX = G::LX, NK = D / 16, NS = BC / 8, NO = D / 8;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    fm_bf *sQ = (fm_bf *)(sm + G::oQ), *sK = (fm_bf *)(sm + G::oK), *sV = (fm_bf *)(sm + G::oV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const int qt = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int q0 = qt * G::BR, C = NH * d, w0 = q0 + 16 * warp;
    const size_t ld = (size_t)3 * C;
    const fm_bf *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;
    const float sl2 = scale * 1.4426950408889634f;   /* scores in log2 units: exp2 */
    const int last_key = (q0 + G::BR < T ? q0 + G::BR : T) - 1, ntiles = last_key / BC + 1;

    fm_load_tile<G::BR, D>(sQ, qb, ld, q0, T, d, async);
    fm_load_tile<BC, D>(sK, kb, ld, 0, T, d, async);
    fm_load_tile<BC, D>(sV, vb, ld, 0, T, d, async);
    cp_async_commit();

    frag_a qf[QREG ? NK : 1];
    frag_c o[NO];
    fm_zero<NO>(o);
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };
    const fm_bf *qrow = fm_arow(sQ + (size_t)16 * warp * LX, LX, lane);

    for (int j = 0; j < ntiles; j++) {
        const int k0 = j * BC, buf = j & 1;
        fm_kv_step<G::BR, BC, D>(sK, sV, kb, vb, ld, j, ntiles, T, d, async, rope, sQ, q0);
        const fm_bf *tK = sK + buf * G::buf, *tV = sV + buf * G::buf;
        if (QREG && j == 0) fm_load_afrags<QREG ? NK : 1>(qf, qrow);
        if (k0 <= w0 + 15) {    /* else every key of the tile is after every row of this warp */
            frag_c s[NS];
            fm_mm_nt<NK, NS, QREG, QREG ? NK : 2>(s, qf, qrow, fm_brow(tK, LX, lane), LX);
            /* mask, then the online softmax of rows g (e = 0, 1) and g + 8 (e = 2, 3) */
            const bool edge = k0 + BC - 1 > w0 || k0 + BC > T;
            float mx[2] = { -INFINITY, -INFINITY };
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float v = s[n].at(e) * sl2;
                    if (edge) {
                        const int key = k0 + n * 8 + 2 * tq + (e & 1), q = w0 + g + (e >> 1) * 8;
                        if (key > q || key >= T) v = -INFINITY;
                    }
                    s[n].at(e) = v;
                    mx[e >> 1] = fmaxf(mx[e >> 1], v);
                }
            float alpha[2];
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                const float mn = fmaxf(m[r], mx[r]);   /* finite: key 0 is in every row's first tile */
                alpha[r] = exp2f(m[r] - mn);
                m[r] = mn;
                l[r] *= alpha[r];
            }
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float p = exp2f(s[n].at(e) - m[e >> 1]);
                    l[e >> 1] += p;
                    s[n].at(e) = p;
                }
#pragma unroll
            for (int n = 0; n < NO; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) o[n].at(e) *= alpha[e >> 1];
            fm_mm_pv<BC / 16, D / 16>(o, s, fm_arow(tV, LX, lane), LX);
        }
        __syncthreads();        /* every warp is done with this buffer before it is refilled */
    }
    /* out = O / l, lse = m + log l (natural units), rows >= T dropped */
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        inv[r] = 1.0f / l[r];
        const int q = w0 + g + 8 * r;
        if (tq == 0 && q < T) lse[(size_t)bh * T + q] = m[r] * 0.6931471805599453f + logf(l[r]);
    }
#pragma unroll
    for (int n = 0; n < NO; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int q = w0 + g + (e >> 1) * 8, c = n * 8 + 2 * tq + (e & 1);
            if (q < T && c < d) out[((size_t)b * T + q) * C + (size_t)h * d + c] = __float2bfloat16_rn(o[n].at(e) * inv[e >> 1]);
        }
}

/* dQ: sQ, sdO bf16[BR][D+8] | sK, sV bf16[2][BC][D+8]; the dQ float tile [BR][D+4] reuses all of it at the end. */
template <int D, int NW, int BC> struct fm_dq_cfg {
    static constexpr int BR = 16 * NW, LX = D + 8, LF = D + 4;
    static constexpr size_t oQ = 0, odO = oQ + fa_al((size_t)BR * LX * 2), oK = odO + fa_al((size_t)BR * LX * 2),
                            oV = oK + fa_al((size_t)2 * BC * LX * 2), bytes = oV + fa_al((size_t)2 * BC * LX * 2);
    static constexpr size_t buf = (size_t)BC * LX;
    static_assert((size_t)BR * LF * 4 <= bytes, "the dQ tile fits the idle tiles");
};

template <int D, int NW, int BC, bool QREG>
__global__ void __launch_bounds__(NW * 32) k_fm_dq(fm_bf *dqkv, const fm_bf *qkv, const fm_bf *dout, const float *lse,
                                                   const float *delta, int T, int NH, int d, float scale, bool async,
                                                   const float *rope) {
    typedef fm_dq_cfg<D, NW, BC> G;
    constexpr int LX = G::LX, NK = D / 16, NS = BC / 8, NO = D / 8;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    fm_bf *sQ = (fm_bf *)(sm + G::oQ), *sdO = (fm_bf *)(sm + G::odO), *sK = (fm_bf *)(sm + G::oK);
    fm_bf *sV = (fm_bf *)(sm + G::oV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const int qt = gridDim.y - 1 - blockIdx.y, bh = blockIdx.x, b = bh / NH, h = bh % NH;
    const int q0 = qt * G::BR, C = NH * d, w0 = q0 + 16 * warp;
    const size_t ld = (size_t)3 * C;
    const fm_bf *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;
    const fm_bf *gb = dout + (size_t)b * T * C + (size_t)h * d;
    const float sl2 = scale * 1.4426950408889634f;
    const int last_key = (q0 + G::BR < T ? q0 + G::BR : T) - 1, ntiles = last_key / BC + 1;

    fm_load_tile<G::BR, D>(sQ, qb, ld, q0, T, d, async);
    fm_load_tile<G::BR, D>(sdO, gb, (size_t)C, q0, T, d, async);
    fm_load_tile<BC, D>(sK, kb, ld, 0, T, d, async);
    fm_load_tile<BC, D>(sV, vb, ld, 0, T, d, async);
    cp_async_commit();
    float L2[2], Dl[2];   /* lse in log2 units and delta of rows g, g+8 */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int q = w0 + g + 8 * r;
        L2[r] = q < T ? lse[(size_t)bh * T + q] * 1.4426950408889634f : 0.0f;
        Dl[r] = q < T ? delta[(size_t)bh * T + q] : 0.0f;
    }
    frag_a qf[QREG ? NK : 1], gf[QREG ? NK : 1];
    frag_c dq[NO];
    fm_zero<NO>(dq);
    const fm_bf *qrow = fm_arow(sQ + (size_t)16 * warp * LX, LX, lane), *grow = fm_arow(sdO + (size_t)16 * warp * LX, LX, lane);

    for (int j = 0; j < ntiles; j++) {
        const int k0 = j * BC, buf = j & 1;
        fm_kv_step<G::BR, BC, D>(sK, sV, kb, vb, ld, j, ntiles, T, d, async, rope, sQ, q0);
        const fm_bf *tK = sK + buf * G::buf, *tV = sV + buf * G::buf;
        if (QREG && j == 0) {
            fm_load_afrags<QREG ? NK : 1>(qf, qrow);
            fm_load_afrags<QREG ? NK : 1>(gf, grow);
        }
        if (k0 <= w0 + 15) {
            frag_c s[NS], dp[NS];
            fm_mm_nt<NK, NS, QREG, QREG ? NK : 2>(s, qf, qrow, fm_brow(tK, LX, lane), LX);
            fm_mm_nt<NK, NS, QREG, QREG ? NK : 2>(dp, gf, grow, fm_brow(tV, LX, lane), LX);
            const bool edge = k0 + BC - 1 > w0 || k0 + BC > T;
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int key = k0 + n * 8 + 2 * tq + (e & 1), q = w0 + g + (e >> 1) * 8;
                    float p = exp2f(s[n].at(e) * sl2 - L2[e >> 1]);
                    if (edge && (key > q || key >= T || q >= T)) p = 0.0f;
                    s[n].at(e) = p * (dp[n].at(e) - Dl[e >> 1]);   /* dS */
                }
            fm_mm_pv<BC / 16, D / 16>(dq, s, fm_arow(tK, LX, lane), LX);
        }
        __syncthreads();
    }
    /* dQ (of the rotated q, rotated back) * scale; the warp's rows through the now idle tiles */
    float *tile = (float *)sm + (size_t)16 * warp * G::LF;
    fm_stage<NO>(tile, G::LF, dq, lane);
    __syncwarp();
    for (int e = lane; e < 16 * d; e += 32) {
        const int rr = e / d, c = e % d, q = w0 + rr;
        if (q >= T) continue;
        const float *gq = tile + (size_t)rr * G::LF;
        dqkv[((size_t)b * T + q) * ld + (size_t)h * d + c] =
            __float2bfloat16_rn((rope ? fa_unrope(gq, c, d, rope + (size_t)q * d) : gq[c]) * scale);
    }
}

/* dK, dV: sK, sV bf16[KB][D+8] | sQ, sdO bf16[2][QB][D+8] | sL, sDl float[2][QB]; the dK float tile [KB][D+4]
 * reuses sQ.. at the end. KB = 16 * NW / SPLIT keys. */
template <int D, int NW, int QB, int SPLIT> struct fm_dkv_cfg {
    static constexpr int KB = 16 * NW / SPLIT, LX = D + 8, LF = D + 4;
    static constexpr size_t oK = 0, oV = oK + fa_al((size_t)KB * LX * 2), oQ = oV + fa_al((size_t)KB * LX * 2),
                            odO = oQ + fa_al((size_t)2 * QB * LX * 2), oL = odO + fa_al((size_t)2 * QB * LX * 2),
                            oDl = oL + fa_al((size_t)2 * QB * 4), bytes = oDl + fa_al((size_t)2 * QB * 4);
    static constexpr size_t buf = (size_t)QB * LX;
    static_assert((size_t)KB * LF * 4 <= bytes - oQ, "the dK tile fits the Q/dO buffers");
};

template <int D, int NW, int QB, int SPLIT>
__global__ void __launch_bounds__(NW * 32) k_fm_dkv(fm_bf *dqkv, const fm_bf *qkv, const fm_bf *dout,
                                                    const float *lse, const float *delta, int T, int NH, int d,
                                                    float scale, bool async, const float *rope) {
    typedef fm_dkv_cfg<D, NW, QB, SPLIT> G;
    constexpr int LX = G::LX, NK = D / 16, NS = QB / 8, DH = D / SPLIT, NO = DH / 8;
    extern __shared__ __align__(128) float fa_smem[];
    char *sm = (char *)fa_smem;
    fm_bf *sK = (fm_bf *)(sm + G::oK), *sV = (fm_bf *)(sm + G::oV), *sQ = (fm_bf *)(sm + G::oQ);
    fm_bf *sdO = (fm_bf *)(sm + G::odO);
    float *sL = (float *)(sm + G::oL), *sDl = (float *)(sm + G::oDl);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
    const int kw = 16 * (warp / SPLIT), c0 = (warp % SPLIT) * DH;   /* the warp's keys and its columns of dK, dV */
    const int bh = blockIdx.x, b = bh / NH, h = bh % NH, k0 = blockIdx.y * G::KB, C = NH * d, wk = k0 + kw;
    const size_t ld = (size_t)3 * C;
    const fm_bf *qb = qkv + (size_t)b * T * ld + (size_t)h * d, *kb = qb + C, *vb = qb + 2 * C;
    const fm_bf *gb = dout + (size_t)b * T * C + (size_t)h * d;
    const float *lseb = lse + (size_t)bh * T, *deltab = delta + (size_t)bh * T;
    const float sl2 = scale * 1.4426950408889634f;
    const int i0 = k0 / QB, ni = (T + QB - 1) / QB;   /* query tiles from the one holding key k0 */

    fm_load_tile<G::KB, D>(sK, kb, ld, k0, T, d, async);
    fm_load_tile<G::KB, D>(sV, vb, ld, k0, T, d, async);
    cp_async_commit();
    /* a query tile: Q, dO by cp.async; lse (log2 units) and delta by plain stores, ordered by the same barrier */
    auto load_q = [&](int i, int bf) {
        const int q0 = i * QB;
        fm_load_tile<QB, D>(sQ + bf * G::buf, qb, ld, q0, T, d, async);
        fm_load_tile<QB, D>(sdO + bf * G::buf, gb, (size_t)C, q0, T, d, async);
        for (int e = threadIdx.x; e < QB; e += blockDim.x) {
            sL[bf * QB + e] = q0 + e < T ? lseb[q0 + e] * 1.4426950408889634f : 0.0f;
            sDl[bf * QB + e] = q0 + e < T ? deltab[q0 + e] : 0.0f;
        }
    };
    load_q(i0, 0);
    cp_async_commit();
    frag_c dk[NO], dv[NO];
    fm_zero<NO>(dk);
    fm_zero<NO>(dv);
    const fm_bf *krow = fm_arow(sK + (size_t)kw * LX, LX, lane), *vrow = fm_arow(sV + (size_t)kw * LX, LX, lane);

    for (int i = i0; i < ni; i++) {
        const int q0 = i * QB, bf = (i - i0) & 1;
        if (i + 1 < ni) load_q(i + 1, bf ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        fm_bf *tQ = sQ + bf * G::buf, *tdO = sdO + bf * G::buf;
        const float *tL = sL + bf * QB, *tDl = sDl + bf * QB;
        if (rope) {
            if (i == i0) fa_rope_tile<G::KB>(sK, LX, rope, k0, T, d);
            fa_rope_tile<QB>(tQ, LX, rope, q0, T, d);
            __syncthreads();
        }
        if (q0 + QB - 1 >= wk) {   /* else every query of the tile precedes every key of this warp */
            frag_c s[NS], dp[NS];
            fm_mm_nt<NK, NS, false, 2>(s, nullptr, krow, fm_brow(tQ, LX, lane), LX);     /* S^T = K Q^T */
            fm_mm_nt<NK, NS, false, 2>(dp, nullptr, vrow, fm_brow(tdO, LX, lane), LX);   /* dP^T = V dO^T */
            const bool edge = q0 < wk + 15 || q0 + QB > T;
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int qc = n * 8 + 2 * tq + (e & 1), q = q0 + qc, key = wk + g + (e >> 1) * 8;
                    float p = exp2f(s[n].at(e) * sl2 - tL[qc]);
                    if (edge && (key > q || q >= T)) p = 0.0f;
                    s[n].at(e) = p;
                    dp[n].at(e) = p * (dp[n].at(e) - tDl[qc]);   /* dS^T */
                }
            fm_mm_pv<QB / 16, DH / 16>(dv, s, fm_arow(tdO, LX, lane) + c0, LX);   /* dV += P^T dO */
            fm_mm_pv<QB / 16, DH / 16>(dk, dp, fm_arow(tQ, LX, lane) + c0, LX);   /* dK += dS^T Q */
        }
        __syncthreads();
    }
    /* dV straight from registers; dK (of the rotated k, rotated back) * scale through the idle Q/dO buffers */
#pragma unroll
    for (int n = 0; n < NO; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int key = wk + g + (e >> 1) * 8, c = c0 + n * 8 + 2 * tq + (e & 1);
            if (key < T && c < d) dqkv[((size_t)b * T + key) * ld + 2 * C + (size_t)h * d + c] = __float2bfloat16_rn(dv[n].at(e));
        }
    float *tile = (float *)(sm + G::oQ) + (size_t)kw * G::LF;
    fm_stage<NO>(tile + c0, G::LF, dk, lane);
    __syncthreads();   /* SPLIT: the pair of warps fills one row set */
    for (int e = lane + 32 * (warp % SPLIT); e < 16 * d; e += 32 * SPLIT) {
        const int rr = e / d, c = e % d, key = wk + rr;
        if (key >= T) continue;
        const float *gk = tile + (size_t)rr * G::LF;
        dqkv[((size_t)b * T + key) * ld + C + (size_t)h * d + c] =
            __float2bfloat16_rn((rope ? fa_unrope(gk, c, d, rope + (size_t)key * d) : gk[c]) * scale);
    }
}

/* Tile shapes per head size (docs/PERF.md has the occupancy table): 4 warps and 64 query rows forward and dQ,
 * K/V tiles of 64 keys up to head size 128 and 32 above (two K/V buffers leave room for two blocks = 8 warps per
 * SM), 16 for the dQ pass at 256 (Q and dO both stay in shared memory there); Q (and dO) fragments in registers
 * up to 192 (forward) / 128 (dQ). dK/dV: 64 keys per block, 32-query tiles, 4 warps, or 8 warps in pairs
 * (SPLIT 2) above 128. */
template <int D> struct fm_shape {
    static constexpr int NW = 4, BC = D > 128 ? 32 : 64, DQ_BC = D > 192 ? 16 : D > 128 ? 32 : 64;
    static constexpr bool QREG = D <= 192, DQ_QREG = D <= 128;
    static constexpr int DKV_SPLIT = D > 128 ? 2 : 1, DKV_NW = 4 * DKV_SPLIT, DKV_QB = 32;
    typedef fm_fwd_cfg<D, NW, BC> F;
    typedef fm_dq_cfg<D, NW, DQ_BC> Q;
    typedef fm_dkv_cfg<D, DKV_NW, DKV_QB, DKV_SPLIT> K;
    static_assert(F::bytes <= 113 * 1024 && Q::bytes <= 113 * 1024, "two blocks must fit an SM's 227 KiB");
    static_assert(K::bytes <= 227 * 1024, "a dK/dV block must fit 227 KiB");
};

template <int D> static int fm_forward_d(const fa_args &a, bool async) {
    typedef fm_shape<D> S;
    dim3 grid(a.B * a.NH, (a.T + S::F::BR - 1) / S::F::BR);   /* (b*NH + h) fastest: heaviest tiles first */
    if (fa_launch_prep(k_fm_fwd<D, S::NW, S::BC, S::QREG>, S::F::bytes, "flash_attention_forward(smem)")) return -1;
    k_fm_fwd<D, S::NW, S::BC, S::QREG><<<grid, S::NW * 32, S::F::bytes>>>(a.out, a.lse, a.qkv, a.T, a.NH, a.d, a.scale, async, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_forward");
    return 0;
}

template <int D> static int fm_backward_d(const fa_args &a, bool async) {
    typedef fm_shape<D> S;
    dim3 gk(a.B * a.NH, (a.T + S::K::KB - 1) / S::K::KB), gq(a.B * a.NH, (a.T + S::Q::BR - 1) / S::Q::BR);
    if (fa_launch_prep(k_fm_dkv<D, S::DKV_NW, S::DKV_QB, S::DKV_SPLIT>, S::K::bytes, "flash_attention_backward(smem)") ||
        fa_launch_prep(k_fm_dq<D, S::NW, S::DQ_BC, S::DQ_QREG>, S::Q::bytes, "flash_attention_backward(smem)")) return -1;
    k_fm_dkv<D, S::DKV_NW, S::DKV_QB, S::DKV_SPLIT><<<gk, S::DKV_NW * 32, S::K::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, async, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dk, dv)");
    k_fm_dq<D, S::NW, S::DQ_BC, S::DQ_QREG><<<gq, S::NW * 32, S::Q::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, async, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dq)");
    return 0;
}
#endif   /* !ENABLE_FP32 */

template <int D> static int fa_forward_d(const fa_args &a) {
#ifndef ENABLE_FP32   /* bf16: the register-accumulator kernel (cp.async when rows move as 16-byte chunks) */
    return fm_forward_d<D>(a, a.d % 8 == 0 && (uintptr_t)a.qkv % 16 == 0);
#else
    typedef fa_shape<D> S;
    dim3 grid(a.B * a.NH, (a.T + S::F::BR - 1) / S::F::BR);   /* (b*NH + h) fastest: see the note at the top */
    if (fa_launch_prep(k_fa_fwd<D, S::FWD_NW, S::FWD_BC>, S::F::bytes, "flash_attention_forward(smem)")) return -1;
    k_fa_fwd<D, S::FWD_NW, S::FWD_BC><<<grid, S::FWD_NW * 32, S::F::bytes>>>(a.out, a.lse, a.qkv, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_forward");
    return 0;
#endif
}

template <int D> static int fa_backward_d(const fa_args &a) {
#ifndef ENABLE_FP32   /* bf16: the register-accumulator kernels */
    return fm_backward_d<D>(a, a.d % 8 == 0 && (uintptr_t)a.qkv % 16 == 0 && (uintptr_t)a.dout % 16 == 0);
#else
    typedef fa_shape<D> S;
    dim3 gk(a.B * a.NH, (a.T + S::K::KB - 1) / S::K::KB), gq(a.B * a.NH, (a.T + S::Q::BR - 1) / S::Q::BR);
    if (fa_launch_prep(k_fa_dkv<D, S::DKV_NW, S::DKV_QB>, S::K::bytes, "flash_attention_backward(smem)") ||
        fa_launch_prep(k_fa_dq<D, S::DQ_NW, S::DQ_KT>, S::Q::bytes, "flash_attention_backward(smem)")) return -1;
    k_fa_dkv<D, S::DKV_NW, S::DKV_QB><<<gk, S::DKV_NW * 32, S::K::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dk, dv)");
    k_fa_dq<D, S::DQ_NW, S::DQ_KT><<<gq, S::DQ_NW * 32, S::Q::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dq)");
    return 0;
#endif
}

/* The compiled head size a head of size d runs in (0: none), and whether its rows can move as 16-byte vectors. */
static int fa_padded(int d) {
    static const int sizes[] = { 16, 32, 64, 96, 128, 192, 256 };
    for (int s : sizes) if (d <= s) return s;
    return 0;
}
static bool fa_vec(const void *qkv, int C, int d) {
    const int epv = 16 / (int)sizeof(floatX);
    return fa_padded(d) == d && d % epv == 0 && C % epv == 0 && (uintptr_t)qkv % 16 == 0;
}

static int fa_dispatch(const fa_args &a, bool fwd) {
    switch (fa_padded(a.d)) {
    case 16: return fwd ? fa_forward_d<16>(a) : fa_backward_d<16>(a);
    case 32: return fwd ? fa_forward_d<32>(a) : fa_backward_d<32>(a);
    case 64: return fwd ? fa_forward_d<64>(a) : fa_backward_d<64>(a);
    case 96: return fwd ? fa_forward_d<96>(a) : fa_backward_d<96>(a);
    case 128: return fwd ? fa_forward_d<128>(a) : fa_backward_d<128>(a);
    case 192: return fwd ? fa_forward_d<192>(a) : fa_backward_d<192>(a);
    case 256: return fwd ? fa_forward_d<256>(a) : fa_backward_d<256>(a);
    }
    return pcu_fail_msg(fwd ? "flash_attention_forward" : "flash_attention_backward",
                        "head size above 256: use prism_cuda_attention_forward/backward");
}

static int fa_check(const char *where, int B, int T, int C, int NH) {
    if (!g_pcu.ready) return pcu_fail_msg(where, "prism_cuda_init was not called");
    if (NH <= 0 || C % NH != 0) return pcu_fail_msg(where, "head count must divide C");
    if (!prism_cuda_flash_attention_supports(C / NH))
        return pcu_fail_msg(where, "head size above 256: use prism_cuda_attention_forward/backward");
    if (B * NH > 65535) return pcu_fail_msg(where, "B*NH above 65535 (grid y limit)");
    return B <= 0 || T <= 0 ? 1 : 0;
}

/* The cos/sin table for a head of size d over T positions, in the thread's pcu_scratch (*rope NULL when theta == 0). */
static int fa_rope_prep(const char *where, int T, int d, double theta, const float **rope) {
    *rope = NULL;
    if (theta == 0) return 0;
    if (!(theta > 0) || !isfinite(theta)) return pcu_fail_msg(where, "RoPE theta must be a positive finite number (0: no RoPE)");
    if (d % 2) return pcu_fail_msg(where, "RoPE needs an even head size C/NH");
    float *tab = pcu_scratch((size_t)T * d * sizeof(float));
    if (!tab) return -1;
    size_t n = (size_t)T * (d / 2);
    k_fa_rope_table<<<pcu_blocks(n, 256), 256>>>(tab, T, d, theta);
    PCU_CHECK_LAUNCH(where);
    *rope = tab;
    return 0;
}

static thread_local int fa_calls;        /* fused forward + backward calls that launched, this thread */
static thread_local int fa_rope_calls;   /* those of them with RoPE */
extern "C" int prism_cuda_flash_attention_calls(void) { return fa_calls; }
extern "C" int prism_cuda_flash_attention_rope_calls(void) { return fa_rope_calls; }
extern "C" int prism_cuda_flash_attention_supports(int hs) { return hs >= 1 && hs <= FA_MAX_D; }

static int fa_forward(const char *where, void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
                      double theta) {
    int rc = fa_check(where, B, T, C, NH);
    if (rc) return rc < 0 ? -1 : 0;
    int d = C / NH;
    const float *rope;
    if (fa_rope_prep(where, T, d, theta, &rope)) return -1;
    fa_args a = { (floatX *)out, NULL, lse, NULL, (const floatX *)qkv, NULL, B, T, NH, d, 1.0f / sqrtf((float)d),
                  fa_vec(qkv, C, d), rope };
    rc = fa_dispatch(a, true);
    fa_calls += rc == 0;
    fa_rope_calls += rc == 0 && rope;
    return rc;
}

static int fa_backward(const char *where, void *dqkv, float *delta, const void *dout, const void *qkv, const void *out,
                       const float *lse, int B, int T, int C, int NH, double theta) {
    int rc = fa_check(where, B, T, C, NH);
    if (rc) return rc < 0 ? -1 : 0;
    int d = C / NH;
    const float *rope;
    if (fa_rope_prep(where, T, d, theta, &rope)) return -1;
    size_t rows = (size_t)B * T * NH;
    k_fa_delta<<<pcu_blocks(rows, 8), 256>>>(delta, (const floatX *)dout, (const floatX *)out, B, T, NH, d);
    PCU_CHECK_LAUNCH("flash_attention_backward(delta)");
    fa_args a = { NULL, (floatX *)dqkv, (float *)lse, delta, (const floatX *)qkv, (const floatX *)dout, B, T, NH, d,
                  1.0f / sqrtf((float)d), fa_vec(qkv, C, d) && fa_vec(dqkv, C, d) && fa_vec(dout, C, d), rope };
    rc = fa_dispatch(a, false);
    fa_calls += rc == 0;
    fa_rope_calls += rc == 0 && rope;
    return rc;
}

extern "C" int prism_cuda_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int NH) {
    return fa_forward("flash_attention_forward", out, lse, qkv, B, T, C, NH, 0.0);
}

extern "C" int prism_cuda_flash_attention_backward(void *dqkv, float *delta, const void *dout, const void *qkv,
                                                   const void *out, const float *lse, int B, int T, int C, int NH) {
    return fa_backward("flash_attention_backward", dqkv, delta, dout, qkv, out, lse, B, T, C, NH, 0.0);
}

extern "C" int prism_cuda_flash_attention_forward_rope(void *out, float *lse, const void *qkv, int B, int T, int C,
                                                       int NH, double theta) {
    return fa_forward("flash_attention_forward_rope", out, lse, qkv, B, T, C, NH, theta);
}

extern "C" int prism_cuda_flash_attention_backward_rope(void *dqkv, float *delta, const void *dout, const void *qkv,
                                                        const void *out, const float *lse, int B, int T, int C, int NH,
                                                        double theta) {
    return fa_backward("flash_attention_backward_rope", dqkv, delta, dout, qkv, out, lse, B, T, C, NH, theta);
}
