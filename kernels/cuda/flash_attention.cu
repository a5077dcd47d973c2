/* kernels/cuda/flash_attention.cu — fused causal attention, forward and backward, in the FlashAttention-2
 * manner (twin: kernels/flash_attention.c; the materialised attention.cu is the other reference).
 *
 * Q, K, V are read straight from the (B,T,3C) output of the QKV matmul (head h: columns h*d..(h+1)*d of
 * each third) and the output is written as (B,T,C) for the projection: no permutes, no B*NH*T*T tensor.
 * Two sets of kernels share the tiling, the grid order, masking, RoPE and the host side:
 *   bf16 build: k_fm_fwd, k_fm_dkv, k_fm_dq (kernels/cuda/flash_attention_mma.cu): mma.sync
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
#include "flash_attention.cuh"
#include <math.h>

/* float rows of the k_fa_* kernels (the O/dQ/dK/dV accumulators, the scores S and dP) are padded by 8 floats
 * (a row stride of 8 mod 32 words); bf16 rows keep their 8-element (16-byte) pad, conflict-free for 16-byte row
 * fragments and for ldmatrix's 8 row addresses. */
#define FA_FPAD 8

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

template <int D> static int fa_forward_d(const fa_args &a) {
    typedef fa_shape<D> S;
    dim3 grid(a.B * a.NH, (a.T + S::F::BR - 1) / S::F::BR);   /* (b*NH + h) fastest: see the note at the top */
    if (fa_launch_prep(k_fa_fwd<D, S::FWD_NW, S::FWD_BC>, S::F::bytes, "flash_attention_forward(smem)")) return -1;
    k_fa_fwd<D, S::FWD_NW, S::FWD_BC><<<grid, S::FWD_NW * 32, S::F::bytes>>>(a.out, a.lse, a.qkv, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_forward");
    return 0;
}

template <int D> static int fa_backward_d(const fa_args &a) {
    typedef fa_shape<D> S;
    dim3 gk(a.B * a.NH, (a.T + S::K::KB - 1) / S::K::KB), gq(a.B * a.NH, (a.T + S::Q::BR - 1) / S::Q::BR);
    if (fa_launch_prep(k_fa_dkv<D, S::DKV_NW, S::DKV_QB>, S::K::bytes, "flash_attention_backward(smem)") ||
        fa_launch_prep(k_fa_dq<D, S::DQ_NW, S::DQ_KT>, S::Q::bytes, "flash_attention_backward(smem)")) return -1;
    k_fa_dkv<D, S::DKV_NW, S::DKV_QB><<<gk, S::DKV_NW * 32, S::K::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dk, dv)");
    k_fa_dq<D, S::DQ_NW, S::DQ_KT><<<gq, S::DQ_NW * 32, S::Q::bytes>>>(a.dqkv, a.qkv, a.dout, a.lse, a.delta, a.T, a.NH, a.d, a.scale, a.vec, a.rope);
    PCU_CHECK_LAUNCH("flash_attention_backward(dq)");
    return 0;
}

/* The fp32 build's launches of head size D (the bf16 build runs fm_run, flash_attention_mma.cu). */
template <int D> struct fa_run {
    static int run(const fa_args &a, bool fwd) { return fwd ? fa_forward_d<D>(a) : fa_backward_d<D>(a); }
};

/* Whether a head of size d in rows of C elements can move as 16-byte vectors (k_fa_*). */
static bool fa_vec(const void *qkv, int C, int d) {
    const int epv = 16 / (int)sizeof(floatX);
    return fa_padded(d) == d && d % epv == 0 && C % epv == 0 && (uintptr_t)qkv % 16 == 0;
}

static int fa_dispatch(const fa_args &a, bool fwd) {
#ifndef ENABLE_FP32   /* bf16: the register-accumulator kernels */
    return fm_dispatch(a, fwd);
#else
    return fa_by_head_size<fa_run>(a, fwd);
#endif
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
