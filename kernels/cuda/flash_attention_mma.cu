/* kernels/cuda/flash_attention_mma.cu — the fused attention's register-accumulator kernels (bf16 build):
 * FlashAttention-2 class. The host side, the fp32 build's kernels and the design both share (tiling, grid
 * order, masking, RoPE) are in flash_attention.cu; the helpers both use in flash_attention.cuh. fm_dispatch is
 * this file's one entry: the launches for a head size, called by flash_attention.cu's fa_dispatch.
 *
 * Forward k_fm_fwd: one block of NW warps per (16*NW-query tile, b*NH + h), heaviest tiles first (the grid
 * order of flash_attention.cu). Warp w owns query rows 16w..16w+15 and keeps everything of them in registers
 * (mma_sync.cuh's m16n8k16 fragments, PTX ISA layouts):
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
#include "flash_attention.cuh"
#ifndef ENABLE_FP32   /* the fp32 build runs k_fa_* (flash_attention.cu): nothing here */
#include "mma_sync.cuh"

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

/* The launches of head size D, forward or backward (cp.async when rows move as 16-byte chunks). */
template <int D> struct fm_run {
    static int run(const fa_args &a, bool fwd) {
        const bool async = a.d % 8 == 0 && (uintptr_t)a.qkv % 16 == 0;
        return fwd ? fm_forward_d<D>(a, async) : fm_backward_d<D>(a, async && (uintptr_t)a.dout % 16 == 0);
    }
};

int fm_dispatch(const fa_args &a, bool fwd) { return fa_by_head_size<fm_run>(a, fwd); }
#endif   /* !ENABLE_FP32 */
