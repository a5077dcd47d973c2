/* kernels/cuda/attention.cu — causal multi-head self-attention for any head count per layer (twin:
 * attention_forward/attention_backward in kernels/cpu_kernels.h).
 *
 * A layer with NH heads has head size hs = C/NH (the Prism schedules use 32..256, a different one in each
 * layer); nothing here is specialised on hs, so one code path serves every layer. Per layer:
 *   permute   qkv[B,T,3,NH,hs] -> q,k,v[B,NH,T,hs]                         (scratch)
 *   preatt    = q k^T / sqrt(hs)       strided-batched GEMM, float32 out     (scratch [B,NH,T,T])
 *   att       = causal softmax(preatt) one warp per row, online max/sum      (caller's [B,NH,T,T], kept)
 *   y         = att v                  strided-batched GEMM                  (scratch [B,NH,T,hs])
 *   unpermute y -> out[B,T,C]
 * Backward recomputes the permutation of qkv, then dv = att^T dy, datt = dy v^T (float32), the softmax
 * backward dpre = att (datt - rowsum(att*datt)) / sqrt(hs), dq = dpre k, dk = dpre^T q, and scatters
 * dq,dk,dv back into dqkv[B,T,3C]. GEMMs take floatX inputs with float32 accumulation; the score
 * matrices that feed a softmax are float32 so bf16 rounding does not hit the exponent.
 * Scratch is sized for the largest head count of the schedule (prism_cuda_attention_scratch_bytes);
 * the caller keeps one att tensor per layer, sized B*NH_l*T*T, at offsets from the schedule.
 * Row-major [T,hs] is column-major hs x T to cuBLAS; each GEMM below states its column-major form.
 */
#include "cuda_common.cuh"
#include <math.h>

/* scratch layout (bytes, each part 256-aligned):
 *   q, k, v, y    floatX [B,NH,T,hs] each (4 * B*T*C)
 *   dq, dk, dv    floatX [B,NH,T,hs] each (3 * B*T*C)   (backward; dy reuses y)
 *   s32           float  [B,NHmax,T,T]                   (preatt in forward, datt in backward)
 *   dpre          floatX [B,NHmax,T,T]                   (backward) */
static size_t al256(size_t x) { return (x + 255) & ~(size_t)255; }

struct att_scratch { floatX *q, *k, *v, *y, *dq, *dk, *dv; float *s32; floatX *dpre; };

static att_scratch carve(void *base, int B, int T, int C, int NH) {
    att_scratch s;
    size_t btc = al256((size_t)B * T * C * sizeof(floatX));
    char *p = (char *)base;
    s.q = (floatX *)p; p += btc;
    s.k = (floatX *)p; p += btc;
    s.v = (floatX *)p; p += btc;
    s.y = (floatX *)p; p += btc;
    s.dq = (floatX *)p; p += btc;
    s.dk = (floatX *)p; p += btc;
    s.dv = (floatX *)p; p += btc;
    s.s32 = (float *)p; p += al256((size_t)B * NH * T * T * sizeof(float));
    s.dpre = (floatX *)p;
    return s;
}

extern "C" size_t prism_cuda_attention_scratch_bytes(int B, int T, int C, int NHmax) {
    size_t btc = al256((size_t)B * T * C * sizeof(floatX));
    return 7 * btc + al256((size_t)B * NHmax * T * T * sizeof(float)) + al256((size_t)B * NHmax * T * T * sizeof(floatX));
}

/* Element i of a [B,NH,T,hs] tensor -> its offset in a row-major [B,T,W*NH*hs] one whose head h is columns
 * h*hs..(h+1)*hs (W = 3: qkv, Q first; W = 1: the attention output). */
__device__ __forceinline__ size_t bhtd_to_bt(size_t i, int T, int NH, int hs, int W) {
    int d = (int)(i % hs);
    size_t r = i / hs;
    int t = (int)(r % T); r /= T;
    int h = (int)(r % NH);
    size_t b = r / NH;
    return (b * T + t) * (size_t)W * NH * hs + (size_t)h * hs + d;
}

/* qkv[b,t,w,h,d] -> q/k/v[b,h,t,d] (w = 0,1,2) */
__global__ void k_permute(floatX *q, floatX *k, floatX *v, const floatX *qkv, int B, int T, int NH, int hs) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * NH * T * hs) return;
    size_t src = bhtd_to_bt(i, T, NH, hs, 3), C = (size_t)NH * hs;
    q[i] = qkv[src];
    k[i] = qkv[src + C];
    v[i] = qkv[src + 2 * C];
}

/* dq/dk/dv[b,h,t,d] -> dqkv[b,t,w,h,d] (overwrite) */
__global__ void k_unpermute_qkv(floatX *dqkv, const floatX *dq, const floatX *dk, const floatX *dv, int B, int T,
                                int NH, int hs) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * NH * T * hs) return;
    size_t dst = bhtd_to_bt(i, T, NH, hs, 3), C = (size_t)NH * hs;
    dqkv[dst] = dq[i];
    dqkv[dst + C] = dk[i];
    dqkv[dst + 2 * C] = dv[i];
}

/* y[b,h,t,d] <-> out[b,t,h*hs+d]; dir 0: y -> out, dir 1: out -> y */
__global__ void k_heads(floatX *y, floatX *out, int B, int T, int NH, int hs, int dir) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * NH * T * hs) return;
    size_t o = bhtd_to_bt(i, T, NH, hs, 1);
    if (dir == 0) out[o] = y[i]; else y[i] = out[o];
}

/* One warp per row r of [B*NH*T, T]; row's query t = r % T sees keys 0..t. Writes zeros above diagonal. */
__global__ void k_softmax_causal(floatX *att, const float *pre, int rows, int T) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int t = row % T;
    const float *p = pre + (size_t)row * T;
    floatX *a = att + (size_t)row * T;
    float m = -INFINITY, s = 0.0f;
    for (int j = lane; j <= t; j += 32) {       /* online max/sum per lane */
        float x = p[j];
        if (x > m) { s = s * __expf(m - x) + 1.0f; m = x; }
        else s += __expf(x - m);
    }
    float M = warp_max(m);
    s = (m == -INFINITY) ? 0.0f : s * __expf(m - M);
    float S = warp_sum(s);
    float inv = 1.0f / S;
    for (int j = lane; j < T; j += 32)
        a[j] = fx(j <= t ? __expf(p[j] - M) * inv : 0.0f);
}

/* dpre[r, j] = scale * att[r,j] * (datt[r,j] - sum_j' att[r,j'] datt[r,j']) for j <= t, else 0. */
__global__ void k_softmax_causal_bwd(floatX *dpre, const floatX *att, const float *datt, int rows, int T, float scale) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int t = row % T;
    const floatX *a = att + (size_t)row * T;
    const float *g = datt + (size_t)row * T;
    floatX *o = dpre + (size_t)row * T;
    float s = 0.0f;
    for (int j = lane; j <= t; j += 32) s += xf(a[j]) * g[j];
    s = warp_sum(s);
    for (int j = lane; j < T; j += 32)
        o[j] = fx(j <= t ? scale * xf(a[j]) * (g[j] - s) : 0.0f);
}

/* Column-major strided-batched GEMM: C(m x n) = alpha op(A) op(B) + beta C, float32 compute. */
static int sb_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const void *A, cudaDataType_t tA, int lda,
                   long long sA, const void *Bm, cudaDataType_t tB, int ldb, long long sB, float beta, void *Cm,
                   cudaDataType_t tC, int ldc, long long sC, int batch, const char *where) {
    cublasStatus_t st = cublasGemmStridedBatchedEx(g_pcu.blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
        tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A, tA, lda, sA, Bm, tB, ldb, sB, &beta, Cm, tC, ldc, sC,
        batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) return pcu_fail_blas(where, st);
    return 0;
}

/* What forward and backward both start with: checks, the scratch carved for NH heads, qkv permuted into
 * q, k, v. Returns 0, -1 on error, 1 when there is nothing to do (B or T is 0). */
static int att_begin(const char *where, const void *qkv, void *scratch, int B, int T, int C, int NH, att_scratch *s) {
    if (!g_pcu.ready) return pcu_fail_msg(where, "prism_cuda_init was not called");
    if (NH <= 0 || C % NH != 0) return pcu_fail_msg(where, "head count must divide C");
    if (B <= 0 || T <= 0) return 1;
    *s = carve(scratch, B, T, C, NH);
    size_t n = (size_t)B * T * C;
    k_permute<<<pcu_blocks(n, 256), 256>>>(s->q, s->k, s->v, (const floatX *)qkv, B, T, NH, C / NH);
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : pcu_fail(where, e);
}

extern "C" int prism_cuda_attention_forward(void *out, void *att, const void *qkv, void *scratch, int B, int T, int C,
                                            int NH) {
    att_scratch s;
    int rc = att_begin("attention_forward", qkv, scratch, B, T, C, NH, &s);
    if (rc) return rc < 0 ? -1 : 0;
    int hs = C / NH, batch = B * NH;
    size_t n = (size_t)B * T * C;
    float scale = 1.0f / sqrtf((float)hs);
    long long sq = (long long)T * hs, stt = (long long)T * T;
    /* preatt^T (T x T) = op_T(k: hs x T) * (q: hs x T), i.e. preatt[t1,t2] = q[t1].k[t2] * scale */
    if (sb_gemm(true, false, T, T, hs, scale, s.k, PCU_R_X, hs, sq, s.q, PCU_R_X, hs, sq, 0.0f, s.s32, CUDA_R_32F, T,
                stt, batch, "attention_forward(q k^T)")) return -1;
    int rows = batch * T;
    k_softmax_causal<<<pcu_blocks((size_t)rows, 8), 256>>>((floatX *)att, s.s32, rows, T);
    PCU_CHECK_LAUNCH("attention_forward(softmax)");
    /* y^T (hs x T) = (v: hs x T) * (att^T: T x T), i.e. y = att v */
    if (sb_gemm(false, false, hs, T, T, 1.0f, s.v, PCU_R_X, hs, sq, att, PCU_R_X, T, stt, 0.0f, s.y, PCU_R_X, hs, sq,
                batch, "attention_forward(att v)")) return -1;
    k_heads<<<pcu_blocks(n, 256), 256>>>(s.y, (floatX *)out, B, T, NH, hs, 0);
    PCU_CHECK_LAUNCH("attention_forward(unpermute)");
    return 0;
}

extern "C" int prism_cuda_attention_backward(void *dqkv, const void *dout, const void *qkv, const void *att,
                                             void *scratch, int B, int T, int C, int NH) {
    att_scratch s;
    int rc = att_begin("attention_backward", qkv, scratch, B, T, C, NH, &s);
    if (rc) return rc < 0 ? -1 : 0;
    int hs = C / NH, batch = B * NH;
    size_t n = (size_t)B * T * C;
    floatX *dy = s.y;
    k_heads<<<pcu_blocks(n, 256), 256>>>(dy, (floatX *)dout, B, T, NH, hs, 1);
    PCU_CHECK_LAUNCH("attention_backward(permute dout)");
    float scale = 1.0f / sqrtf((float)hs);
    long long sq = (long long)T * hs, stt = (long long)T * T;
    /* dv^T (hs x T) = (dy: hs x T) * op_T(att^T: T x T), i.e. dv = att^T dy */
    if (sb_gemm(false, true, hs, T, T, 1.0f, dy, PCU_R_X, hs, sq, att, PCU_R_X, T, stt, 0.0f, s.dv, PCU_R_X, hs, sq,
                batch, "attention_backward(dv)")) return -1;
    /* datt^T (T x T) = op_T(v) * dy, i.e. datt[t1,t2] = dy[t1].v[t2] */
    if (sb_gemm(true, false, T, T, hs, 1.0f, s.v, PCU_R_X, hs, sq, dy, PCU_R_X, hs, sq, 0.0f, s.s32, CUDA_R_32F, T,
                stt, batch, "attention_backward(datt)")) return -1;
    int rows = batch * T;
    k_softmax_causal_bwd<<<pcu_blocks((size_t)rows, 8), 256>>>(s.dpre, (const floatX *)att, s.s32, rows, T, scale);
    PCU_CHECK_LAUNCH("attention_backward(softmax)");
    /* dq^T (hs x T) = (k: hs x T) * (dpre^T: T x T), i.e. dq = dpre k */
    if (sb_gemm(false, false, hs, T, T, 1.0f, s.k, PCU_R_X, hs, sq, s.dpre, PCU_R_X, T, stt, 0.0f, s.dq, PCU_R_X, hs,
                sq, batch, "attention_backward(dq)")) return -1;
    /* dk^T (hs x T) = (q: hs x T) * op_T(dpre^T), i.e. dk = dpre^T q */
    if (sb_gemm(false, true, hs, T, T, 1.0f, s.q, PCU_R_X, hs, sq, s.dpre, PCU_R_X, T, stt, 0.0f, s.dk, PCU_R_X, hs,
                sq, batch, "attention_backward(dk)")) return -1;
    k_unpermute_qkv<<<pcu_blocks(n, 256), 256>>>((floatX *)dqkv, s.dq, s.dk, s.dv, B, T, NH, hs);
    PCU_CHECK_LAUNCH("attention_backward(unpermute)");
    return 0;
}

/* rows[b, h, i] = sum_{s<=t} att[b,h,t,s] * (t - s) for t = T/2 + i (query positions in the second half). */
__global__ void k_att_distance_rows(float *rows, const floatX *att, int B, int NH, int T) {
    int t0 = T / 2, nq = T - t0;
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (r >= B * NH * nq) return;
    int i = r % nq;
    int bh = r / nq;
    int t = t0 + i;
    const floatX *a = att + ((size_t)bh * T + t) * T;
    float s = 0.0f;
    for (int j = lane; j <= t; j += 32) s += xf(a[j]) * (float)(t - j);
    s = warp_sum(s);
    if (lane == 0) rows[r] = s;
}

extern "C" size_t prism_cuda_attention_distance_rows(int B, int T, int NH) {
    return (size_t)B * NH * (T - T / 2);
}

extern "C" int prism_cuda_attention_distance(const void *att, int B, int T, int NH, float *rows_dev, float *rows_host,
                                             double *out) {
    int t0 = T / 2, nq = T - t0;
    size_t nrows = (size_t)B * NH * nq;
    *out = 0.0;
    if (!nrows) return 0;
    k_att_distance_rows<<<pcu_blocks(nrows, 8), 256>>>(rows_dev, (const floatX *)att, B, NH, T);
    PCU_CHECK_LAUNCH("attention_distance");
    PCU_CHECK(cudaMemcpy(rows_host, rows_dev, nrows * sizeof(float), cudaMemcpyDeviceToHost));
    double total = 0.0;
    for (int b = 0; b < B; b++) {     /* same order and normalisation as cpu_attention_distance */
        double seq = 0.0;
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < nq; i++) seq += rows_host[((size_t)b * NH + h) * nq + i];
        total += seq / ((double)NH * nq);
    }
    *out = total;
    return 0;
}
