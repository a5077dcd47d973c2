/* kernels/cuda/model_llama.cu — the CUDA backend for the Llama-style model (model_cuda_llama_ops; kernels/model.h):
 * RoPE + SwiGLU + RMSNorm with h_l heads in layer l, bf16 (or fp32) activations and weights, float32 master
 * weights, gradients and AdamW. model_ops_for_arch() picks this
 * table for cfg->arch == MODEL_ARCH_LLAMA.
 *
 * Same memory plan as model_cuda.cu (one device allocation per group, 256-byte aligned tensors; activations
 * strided by the allocated B*T; activation gradients in scratch reused layer after layer). Attention is fused
 * (flash_attention.cu) in every layer whose head size it takes (1..256): only the per-row log-sum-exp (lse,
 * B*h_l*T floats) is kept, no B*h*T*T tensor. Only a layer with a larger head keeps its probabilities (at
 * att_off[l]) and runs attention.cu; eval computes attention distance D_l with attention.cu one sequence at a
 * time (LA_EATT: h*T*T). Each residual add is fused with the RMSNorm that follows. RoPE, in a fused layer, is
 * applied inside the flash kernels where q and k are read (prism_cuda_flash_attention_forward_rope/_backward_rope):
 * the layer's saved qkv stays as the QKV matmul wrote it (pre-RoPE) and the backward's dqkv comes out already
 * rotated back. The separate rope kernel (llama.cu) serves only the materialised paths: a layer with a head above
 * 256 rotates its qkv in place before attention.cu (its saved qkv is post-RoPE) and rotates dq, dk back after
 * attention.cu's backward; eval's D_l of a fused layer runs attention.cu on a rotated copy of qkv in the gradient
 * scratch LD_QKV. W_up and W_gate are two GEMMs (the file layout keeps them apart). No biases. This file is the
 * body only (create's checks and plan, ll_forward up to the final RMSNorm, ll_backward from its gradient, each
 * layer's attention in attention_forward_layer / attention_backward_layer); creation, the entry points, the
 * chunked LM head and the CUDA graph of the step are model_cuda_base.cu's, as for GPT-2. zero_grad and update
 * are GPT-2's (mc_zero_grad, mc_update in model_cuda_mem.cu: the norm on the device, one fused AdamW launch for all
 * 9 tensors, one host synchronisation, no zeroing of gradients the update already zeroed). Every call returns
 * 0 or MODEL_E*; the message is in error() and, from create, in err.
 */
#include "cuda_common.cuh"
#include "llama_kernels_cuda.h"
#include "model_cuda_base.cuh"
#include "attention_cudnn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LA_ENC, LA_AN, LA_ANR, LA_QKV, LA_ATTY, LA_ATT, LA_ATTPROJ, LA_RES2, LA_MN, LA_MNR, LA_UP, LA_GATE, LA_SW,
       LA_FCPROJ, LA_RES3, LA_NF, LA_NFR, LA_LOGITS, LA_LOSSES, LA_DIST, LA_LSE, LA_DELTA, LA_EATT, LA_NUM };
enum { LD_RES, LD_LN, LD_SW, LD_UP, LD_GATE, LD_QKV, LD_NUM };
enum { LT_WTE, LT_ATTNORM, LT_QKV, LT_ATTPROJ, LT_MLPNORM, LT_FC, LT_FCG, LT_FCPROJ, LT_NORMF };

struct llama_cuda : mc_model {       /* cfg, device, err, the groups, the attention plan: model_cuda_mem.cuh */
    void *a[LA_NUM];                   /* into amem; att_off[l] is into LA_ATT, lse_layer counts LA_LSE */
    void *d[LD_NUM];                   /* into dmem */
};

static int ll_forward(mc_model *base, int B, int T, double *attn_dist);
static int ll_backward(mc_model *base, int B, int T);
static const mc_arch llama_arch = { "llama", ll_forward, ll_backward };

static int create(const struct model_config *cfg0, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    struct model_config cfgv = *cfg0;
    const struct model_config *cfg = &cfgv;
    cfgv.arch = MODEL_ARCH_LLAMA;
    if (!cfgv.H) cfgv.H = model_llama_default_ffn(cfgv.C);
    if (cfgv.rope_theta == 0) cfgv.rope_theta = 10000.0f;
    if (cfg->H < 1 || !(cfg->rope_theta > 0)) {
        snprintf(err, errlen, "invalid llama model configuration (H=%d rope_theta=%g)", cfg->H, cfg->rope_theta);
        return MODEL_EINVAL;
    }
    int maxh, rc = mc_config_check(cfg, 1, 12288, "RMSNorm", &maxh, err, errlen);
    if (rc) return rc;
    llama_cuda *cm = (llama_cuda *)mc_new(cfg, device, sizeof *cm, MODEL_LLAMA_NUM_TENSORS, &llama_arch, &rc, err,
                                          errlen);
    if (!cm) return rc;
    const size_t L = cfg->L, BT = (size_t)cfg->B * cfg->T, C = cfg->C, H = cfg->H, X = sizeof(floatX), F = sizeof(float);
    size_t sbytes, dist_rows;
    const size_t att = mc_plan(cm, maxh, &sbytes, &dist_rows), lse_layer = cm->lse_layer, TT = (size_t)cfg->T * cfg->T;
    size_t abytes[LA_NUM] = {
        BT * C * X, L * BT * C * X, L * BT * F, L * BT * 3 * C * X, L * BT * C * X, att * X, BT * C * X,
        L * BT * C * X, L * BT * C * X, L * BT * F, L * BT * H * X, L * BT * H * X, L * BT * H * X, BT * C * X,
        L * BT * C * X, BT * C * X, BT * F, (size_t)cm->head_rows * cfg->Vp * X, BT * F, dist_rows * F,
        L * lse_layer * F, lse_layer * F, maxh * TT * X,
    };
    size_t dbytes[LD_NUM] = { BT * C * X, BT * C * X, BT * H * X, BT * H * X, BT * H * X, BT * 3 * C * X };
    static const int head[4] = { LA_NF, LD_LN, LA_LOGITS, LA_LOSSES };
    return mc_finish(cm, abytes, LA_NUM, cm->a, dbytes, LD_NUM, cm->d, sbytes, dist_rows, head, out, err, errlen);
}

/* ---- attention, one layer: the one place a layer's attention is chosen (fused with RoPE inside, or RoPE + the
 * materialised attention.cu above a head size of 256) ---- */
static int attention_forward_layer(llama_cuda *cm, int l, int B, int T, floatX *qkv, floatX *atty, double *attn_dist) {
    const int C = cm->cfg.C, NH = cm->cfg.heads[l], N = B * T;
    const double theta = cm->cfg.rope_theta;
    floatX *att = AX(cm, LA_ATT) + cm->att_off[l];
    if (cm->fused[l]) {
        /* RoPE inside the fused kernel: qkv is left pre-RoPE, as the backward reads it. On a cuDNN layer
         * (PRISM_ATTENTION, attention_cudnn.h) RoPE is its own pass instead, rotating qkv in place (its saved qkv is
         * then post-RoPE, as a materialised layer's) */
        const int cudnn = cm->attn[l] == PRISM_ATTN_CUDNN;
        if (cudnn) MC_TRY(cm, prism_cuda_rope_forward(qkv, B, T, C, NH, theta), "rope_forward");
        MC_TRY(cm, cudnn ? prism_attention_forward(PRISM_ATTN_CUDNN, atty, AF(cm, LA_LSE) + l * cm->lse_layer, qkv, B, T,
                                                   C, NH)
                         : prism_cuda_flash_attention_forward_rope(atty, AF(cm, LA_LSE) + l * cm->lse_layer, qkv, B, T, C,
                                                                   NH, theta), "attention_forward(fused/cudnn)");
        /* D_l needs the probabilities: attention.cu over a rotated copy of qkv (the separate rope kernel, in
         * the gradient scratch LD_QKV; a cuDNN layer's qkv is rotated already), one sequence at a time, its output
         * thrown away (into the gradient scratch LD_LN); both scratches are unused during the forward */
        floatX *rq = cudnn ? qkv : (floatX *)cm->d[LD_QKV];
        if (attn_dist && !cudnn) {
            MC_TRY(cm, prism_cuda_copy_d2d(rq, qkv, (size_t)N * 3 * C * sizeof(floatX)), "copy qkv(distance)");
            MC_TRY(cm, prism_cuda_rope_forward(rq, B, T, C, NH, theta), "rope_forward(distance)");
        }
        return mc_distance_fused(cm, l, B, T, rq, cm->d[LD_LN], AX(cm, LA_EATT), AF(cm, LA_DIST), attn_dist);
    }
    /* materialised fallback (head above 256): the separate rope kernel rotates qkv in place, so this
     * layer's saved qkv is post-RoPE and its backward rotates dq, dk back after attention.cu's */
    MC_TRY(cm, prism_cuda_rope_forward(qkv, B, T, C, NH, theta), "rope_forward");
    MC_TRY(cm, prism_cuda_attention_forward(atty, att, qkv, cm->scratch, B, T, C, NH), "attention_forward");
    return mc_distance_probs(cm, l, B, T, att, AF(cm, LA_DIST), attn_dist);
}

static int attention_backward_layer(llama_cuda *cm, int l, int B, int T, floatX *dqkv, const floatX *datty) {
    const int C = cm->cfg.C, NH = cm->cfg.heads[l];
    const double theta = cm->cfg.rope_theta;
    const size_t o1 = l * (size_t)cm->cfg.B * cm->cfg.T * C, o3 = 3 * o1;
    if (cm->fused[l] && cm->attn[l] == PRISM_ATTN_CUDNN) {   /* cuDNN over the rotated qkv, then dq, dk rotated back */
        MC_TRY(cm, prism_attention_backward(PRISM_ATTN_CUDNN, dqkv, AF(cm, LA_DELTA), datty, AX(cm, LA_QKV) + o3,
                                            AX(cm, LA_ATTY) + o1, AF(cm, LA_LSE) + l * cm->lse_layer, B, T, C, NH),
               "attention_backward(cudnn)");
        MC_TRY(cm, prism_cuda_rope_backward(dqkv, B, T, C, NH, theta), "rope_backward");
    } else if (cm->fused[l]) {   /* dqkv w.r.t. the pre-RoPE qkv: the kernels rotate dq, dk back */
        MC_TRY(cm, prism_cuda_flash_attention_backward_rope(dqkv, AF(cm, LA_DELTA), datty, AX(cm, LA_QKV) + o3,
                                                          AX(cm, LA_ATTY) + o1, AF(cm, LA_LSE) + l * cm->lse_layer,
                                                          B, T, C, NH, theta), "flash_attention_backward_rope");
    } else {
        MC_TRY(cm, prism_cuda_attention_backward(dqkv, datty, AX(cm, LA_QKV) + o3, AX(cm, LA_ATT) + cm->att_off[l],
                                               cm->scratch, B, T, C, NH), "attention_backward");
        MC_TRY(cm, prism_cuda_rope_backward(dqkv, B, T, C, NH, theta), "rope_backward");
    }
    return 0;
}

/* ---- the body ------------------------------------------------------------------------------------------------ */
/* tokens (cm->tok) -> the final RMSNorm's output (the head's input); attn_dist: eval only */
static int ll_forward(mc_model *base, int B, int T, double *attn_dist) {
    llama_cuda *cm = (llama_cuda *)base;
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, H = cf->H, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    MC_TRY(cm, prism_cuda_embedding_forward(AX(cm, LA_ENC), cm->tok, P(cm, LT_WTE), B, T, C), "embedding_forward");
    MC_TRY(cm, prism_cuda_rmsnorm_forward(AX(cm, LA_AN), AF(cm, LA_ANR), AX(cm, LA_ENC), P(cm, LT_ATTNORM), N, C),
         "rmsnorm_forward");
    for (int l = 0; l < L; l++) {
        const size_t o1 = l * BTa * C, o3 = 3 * o1, oh = l * BTa * H, om = l * BTa;
        floatX *residual = l == 0 ? AX(cm, LA_ENC) : AX(cm, LA_RES3) + (l - 1) * BTa * C;
        floatX *qkv = AX(cm, LA_QKV) + o3, *atty = AX(cm, LA_ATTY) + o1;
        floatX *attproj = AX(cm, LA_ATTPROJ), *res2 = AX(cm, LA_RES2) + o1, *mn = AX(cm, LA_MN) + o1;
        floatX *up = AX(cm, LA_UP) + oh, *gate = AX(cm, LA_GATE) + oh, *sw = AX(cm, LA_SW) + oh;
        floatX *fcproj = AX(cm, LA_FCPROJ), *res3 = AX(cm, LA_RES3) + o1;
        MC_TRY(cm, prism_cuda_matmul_forward(qkv, NULL, AX(cm, LA_AN) + o1, P(cm, LT_QKV) + (size_t)l * 3 * C * C, NULL,
                                           N, C, 3 * C), "matmul_forward(qkv)");
        int rc = attention_forward_layer(cm, l, B, T, qkv, atty, attn_dist);
        if (rc) return rc;
        MC_TRY(cm, prism_cuda_matmul_forward(attproj, NULL, atty, P(cm, LT_ATTPROJ) + (size_t)l * C * C, NULL, N, C, C),
             "matmul_forward(attproj)");
        MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res2, mn, AF(cm, LA_MNR) + om, residual, attproj,
                                                     P(cm, LT_MLPNORM) + (size_t)l * C, N, C), "residual_rmsnorm(mlp)");
        MC_TRY(cm, prism_cuda_matmul_forward(up, NULL, mn, P(cm, LT_FC) + (size_t)l * H * C, NULL, N, C, H),
             "matmul_forward(up)");
        MC_TRY(cm, prism_cuda_matmul_forward(gate, NULL, mn, P(cm, LT_FCG) + (size_t)l * H * C, NULL, N, C, H),
             "matmul_forward(gate)");
        MC_TRY(cm, prism_cuda_swiglu_forward(sw, up, gate, (size_t)N * H), "swiglu_forward");
        MC_TRY(cm, prism_cuda_matmul_forward(fcproj, NULL, sw, P(cm, LT_FCPROJ) + (size_t)l * C * H, NULL, N, H, C),
             "matmul_forward(down)");
        if (l + 1 < L) {
            const size_t on = (l + 1) * BTa;
            MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res3, AX(cm, LA_AN) + on * C, AF(cm, LA_ANR) + on, res2, fcproj,
                                                         P(cm, LT_ATTNORM) + (size_t)(l + 1) * C, N, C),
                 "residual_rmsnorm(attn)");
        } else {
            MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res3, AX(cm, LA_NF), AF(cm, LA_NFR), res2, fcproj,
                                                         P(cm, LT_NORMF), N, C), "residual_rmsnorm(final)");
        }
    }
    return 0;
}

/* dL/d final norm output (cm->dhead_in, left by the head with wte's share of the gradient) -> every gradient */
static int ll_backward(mc_model *base, int B, int T) {
    llama_cuda *cm = (llama_cuda *)base;
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, H = cf->H, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    floatX *dres = (floatX *)cm->d[LD_RES], *dln = (floatX *)cm->d[LD_LN], *dsw = (floatX *)cm->d[LD_SW];
    floatX *dup = (floatX *)cm->d[LD_UP], *dgate = (floatX *)cm->d[LD_GATE], *dqkv = (floatX *)cm->d[LD_QKV];
    MC_TRY(cm, prism_cuda_memset0(dres, (size_t)N * C * sizeof(floatX)), "memset");
    MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, G(cm, LT_NORMF), dln, AX(cm, LA_RES3) + (L - 1) * BTa * C,
                                         P(cm, LT_NORMF), AF(cm, LA_NFR), N, C), "rmsnorm_backward(final)");
    for (int l = L - 1; l >= 0; l--) {
        const size_t o1 = l * BTa * C, oh = l * BTa * H, om = l * BTa;
        floatX *residual = l == 0 ? AX(cm, LA_ENC) : AX(cm, LA_RES3) + (l - 1) * BTa * C;
        MC_TRY(cm, prism_cuda_matmul_backward(dsw, G(cm, LT_FCPROJ) + (size_t)l * C * H, NULL, dres, AX(cm, LA_SW) + oh,
                                            P(cm, LT_FCPROJ) + (size_t)l * C * H, N, H, C, 0), "matmul_backward(down)");
        MC_TRY(cm, prism_cuda_swiglu_backward(dup, dgate, dsw, AX(cm, LA_UP) + oh, AX(cm, LA_GATE) + oh, (size_t)N * H),
             "swiglu_backward");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, LT_FC) + (size_t)l * H * C, NULL, dup, AX(cm, LA_MN) + o1,
                                            P(cm, LT_FC) + (size_t)l * H * C, N, C, H, 0), "matmul_backward(up)");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, LT_FCG) + (size_t)l * H * C, NULL, dgate, AX(cm, LA_MN) + o1,
                                            P(cm, LT_FCG) + (size_t)l * H * C, N, C, H, 1), "matmul_backward(gate)");
        MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, G(cm, LT_MLPNORM) + (size_t)l * C, dln, AX(cm, LA_RES2) + o1,
                                             P(cm, LT_MLPNORM) + (size_t)l * C, AF(cm, LA_MNR) + om, N, C),
             "rmsnorm_backward(mlp)");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, LT_ATTPROJ) + (size_t)l * C * C, NULL, dres, AX(cm, LA_ATTY) + o1,
                                            P(cm, LT_ATTPROJ) + (size_t)l * C * C, N, C, C, 0), "matmul_backward(attproj)");
        int rc = attention_backward_layer(cm, l, B, T, dqkv, dln);
        if (rc) return rc;
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, LT_QKV) + (size_t)l * 3 * C * C, NULL, dqkv, AX(cm, LA_AN) + o1,
                                            P(cm, LT_QKV) + (size_t)l * 3 * C * C, N, C, 3 * C, 0), "matmul_backward(qkv)");
        MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, G(cm, LT_ATTNORM) + (size_t)l * C, dln, residual,
                                             P(cm, LT_ATTNORM) + (size_t)l * C, AF(cm, LA_ANR) + om, N, C),
             "rmsnorm_backward(attn)");
    }
    MC_TRY(cm, prism_cuda_encoder_backward(G(cm, LT_WTE), NULL, dres, cm->tok, B, T, C), "embedding_backward");
    return 0;
}

extern "C" const model_ops model_cuda_llama_ops = MC_MODEL_OPS(create);
