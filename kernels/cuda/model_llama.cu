/* kernels/cuda/model_llama.cu — the CUDA backend for the Llama-style model (model_cuda_llama_ops; kernels/model.h):
 * RoPE + SwiGLU + RMSNorm with h_l heads in layer l, bf16 (or fp32) activations and weights, float32 master
 * weights, gradients and AdamW. The GPT-2 backend (model_cuda.cu) is untouched: model_ops_for_arch() picks this
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
 * scratch LD_QKV. W_up and W_gate are two GEMMs (the file layout keeps them apart). No biases. zero_grad and update
 * are GPT-2's (mc_zero_grad, mc_update in model_cuda_mem.cu: the norm on the device, one fused AdamW launch for all
 * 9 tensors, one host synchronisation, no zeroing of gradients the update already zeroed). Every call returns
 * 0 or MODEL_E*; the message is in error() and, from create, in err.
 */
#include "cuda_common.cuh"
#include "llama_kernels_cuda.h"
#include "model_cuda_mem.cuh"
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

#define LP(cm, i) ((cm)->px + (cm)->offs[i])
#define LG(cm, i) ((cm)->grads + (cm)->offs[i])
#define LAX(cm, i) ((floatX *)(cm)->a[i])
#define LAF(cm, i) ((float *)(cm)->a[i])

static int ll_create(const struct model_config *cfg0, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    struct model_config cfgv = *cfg0;
    const struct model_config *cfg = &cfgv;
    cfgv.arch = MODEL_ARCH_LLAMA;
    if (!cfgv.H) cfgv.H = model_llama_default_ffn(cfgv.C);
    if (cfgv.rope_theta == 0) cfgv.rope_theta = 10000.0f;
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS || cfg->C < 1 || cfg->V < 1 || cfg->Vp < cfg->V || cfg->maxT < 1 ||
        cfg->B < 1 || cfg->T < 1 || cfg->T > cfg->maxT || cfg->H < 1 || !(cfg->rope_theta > 0)) {
        if (err) snprintf(err, errlen, "invalid llama model configuration (L=%d C=%d V=%d Vp=%d maxT=%d B=%d T=%d H=%d)",
                          cfg->L, cfg->C, cfg->V, cfg->Vp, cfg->maxT, cfg->B, cfg->T, cfg->H);
        return MODEL_EINVAL;
    }
    int maxh = 0;
    for (int l = 0; l < cfg->L; l++) {
        if (cfg->heads[l] < 1 || cfg->C % cfg->heads[l] || (cfg->C / cfg->heads[l]) % 2) {
            if (err) snprintf(err, errlen, "layer %d: %d heads do not divide C=%d into an even head size", l + 1,
                              cfg->heads[l], cfg->C);
            return MODEL_EINVAL;
        }
        if (cfg->heads[l] > maxh) maxh = cfg->heads[l];
    }
    if ((size_t)cfg->C * sizeof(float) > 48 * 1024) {
        if (err) snprintf(err, errlen, "C=%d is larger than the CUDA RMSNorm backward supports (12288)", cfg->C);
        return MODEL_EINVAL;
    }
    char ierr[400];
    if (prism_cuda_init(device, ierr, sizeof ierr) != 0) {
        if (err) snprintf(err, errlen, "%s", ierr);
        return MODEL_EDEVICE;
    }
    llama_cuda *cm = (llama_cuda *)calloc(1, sizeof *cm);
    if (!cm) { if (err) snprintf(err, errlen, "out of host memory"); return MODEL_ENOMEM; }
    cm->cfg = *cfg;
    cm->device = device;
    cm->ntensors = MODEL_LLAMA_NUM_TENSORS;
    mc_param_layout(cfg, cm->sizes, cm->offs, &cm->nparams, &cm->npad);

    const size_t L = cfg->L, BT = (size_t)cfg->B * cfg->T, C = cfg->C, H = cfg->H, X = sizeof(floatX), F = sizeof(float);
    int any_mat;
    const size_t att = mc_attention_plan(cfg, cm->fused, cm->att_off, &any_mat);
    const size_t lse_layer = (size_t)cfg->B * maxh * cfg->T, TT = (size_t)cfg->T * cfg->T;
    cm->lse_layer = lse_layer;
    size_t dist_rows = prism_cuda_attention_distance_rows(cfg->B, cfg->T, maxh);
    size_t abytes[LA_NUM] = {
        BT * C * X, L * BT * C * X, L * BT * F, L * BT * 3 * C * X, L * BT * C * X, att * X, BT * C * X,
        L * BT * C * X, L * BT * C * X, L * BT * F, L * BT * H * X, L * BT * H * X, L * BT * H * X, BT * C * X,
        L * BT * C * X, BT * C * X, BT * F, BT * (size_t)cfg->Vp * X, BT * F, dist_rows * F,
        L * lse_layer * F, lse_layer * F, maxh * TT * X,
    };
    size_t dbytes[LD_NUM] = { BT * C * X, BT * C * X, BT * H * X, BT * H * X, BT * H * X, BT * 3 * C * X };
    size_t atot = mc_group_bytes(abytes, LA_NUM), dtot = mc_group_bytes(dbytes, LD_NUM);
    size_t pbytes = mc_param_bytes(cm->npad);
    size_t sbytes = prism_cuda_attention_scratch_bytes(any_mat ? cfg->B : 1, cfg->T, cfg->C, maxh);
    int rc = MODEL_ENOMEM;
    cm->pmem = prism_cuda_malloc(pbytes);
    cm->amem = prism_cuda_malloc(atot);
    cm->dmem = prism_cuda_malloc(dtot);
    cm->scratch = prism_cuda_malloc(sbytes);
    cm->tok = (int *)prism_cuda_malloc(2 * BT * sizeof(int));
    cm->h_losses = (float *)malloc(BT * F);
    cm->h_rows = (float *)malloc((dist_rows ? dist_rows : 1) * F);
    if (!cm->pmem || !cm->amem || !cm->dmem || !cm->scratch || !cm->tok || !cm->h_losses || !cm->h_rows) {
        if (err) snprintf(err, errlen, "out of GPU memory for llama L=%d C=%d H=%d Vp=%d B=%d T=%d (params %zu MiB, "
                          "activations %zu MiB, attention scratch %zu MiB): %s", cfg->L, cfg->C, cfg->H, cfg->Vp, cfg->B,
                          cfg->T, pbytes >> 20, atot >> 20, sbytes >> 20, prism_cuda_last_error());
        goto fail;
    }
    mc_carve_params(cm);
    mc_carve(cm->amem, abytes, cm->a, LA_NUM);
    mc_carve(cm->dmem, dbytes, cm->d, LD_NUM);
    rc = MODEL_EDEVICE;
    if (prism_cuda_memset0(cm->pmem, pbytes) || prism_cuda_memset0(cm->amem, atot) || prism_cuda_sync()) {
        if (err) snprintf(err, errlen, "CUDA memset: %s", prism_cuda_last_error());
        goto fail;
    }
    /* PRISM_ATTENTION: cuDNN or the fused kernel per fused layer (a bad value is the only failure) */
    if (prism_attention_choose(cfg, cm->fused, cm->attn, NULL, 0, err, errlen) != 0) { rc = MODEL_EINVAL; goto fail; }
    cm->grads_zero = 1;
    prism_cuda_mem_sample();
    *out = (model *)cm;
    return MODEL_OK;
fail:
    mc_free((model *)cm);
    return rc;
}

static int ll_check_batch(llama_cuda *cm, const int *in, const int *tg, int B, int T) {
    return mc_check_batch(&cm->cfg, in, tg, B, T, cm->err, sizeof cm->err);
}

static int ll_forward(llama_cuda *cm, const int *in, const int *tg, int B, int T, int train, float dloss, float *loss,
                      double *attn_dist) {
    int rc = ll_check_batch(cm, in, tg, B, T);
    if (rc) return rc;
    MC_BIND(cm);
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, H = cf->H, N = B * T;
    const double theta = cf->rope_theta;
    const size_t BTa = (size_t)cf->B * cf->T;
    int *d_in = cm->tok, *d_tg = cm->tok + BTa;
    MC_TRY(cm, prism_cuda_upload(d_in, in, (size_t)N * sizeof(int)), "upload inputs");
    MC_TRY(cm, prism_cuda_upload(d_tg, tg, (size_t)N * sizeof(int)), "upload targets");
    MC_TRY(cm, prism_cuda_embedding_forward(LAX(cm, LA_ENC), d_in, LP(cm, LT_WTE), B, T, C), "embedding_forward");
    MC_TRY(cm, prism_cuda_rmsnorm_forward(LAX(cm, LA_AN), LAF(cm, LA_ANR), LAX(cm, LA_ENC), LP(cm, LT_ATTNORM), N, C),
         "rmsnorm_forward");
    for (int l = 0; l < L; l++) {
        const int NH = cf->heads[l];
        const size_t o1 = l * BTa * C, o3 = 3 * o1, oh = l * BTa * H, om = l * BTa;
        floatX *residual = l == 0 ? LAX(cm, LA_ENC) : LAX(cm, LA_RES3) + (l - 1) * BTa * C;
        floatX *qkv = LAX(cm, LA_QKV) + o3, *atty = LAX(cm, LA_ATTY) + o1, *att = LAX(cm, LA_ATT) + cm->att_off[l];
        floatX *attproj = LAX(cm, LA_ATTPROJ), *res2 = LAX(cm, LA_RES2) + o1, *mn = LAX(cm, LA_MN) + o1;
        floatX *up = LAX(cm, LA_UP) + oh, *gate = LAX(cm, LA_GATE) + oh, *sw = LAX(cm, LA_SW) + oh;
        floatX *fcproj = LAX(cm, LA_FCPROJ), *res3 = LAX(cm, LA_RES3) + o1;
        MC_TRY(cm, prism_cuda_matmul_forward(qkv, NULL, LAX(cm, LA_AN) + o1, LP(cm, LT_QKV) + (size_t)l * 3 * C * C, NULL,
                                           N, C, 3 * C), "matmul_forward(qkv)");
        if (cm->fused[l]) {
            /* RoPE inside the fused kernel: qkv is left pre-RoPE, as the backward reads it. On a cuDNN layer RoPE is
             * its own pass instead, rotating qkv in place (its saved qkv is post-RoPE, as a materialised layer's) */
            const int cudnn = cm->attn[l] == PRISM_ATTN_CUDNN;
            if (cudnn) MC_TRY(cm, prism_cuda_rope_forward(qkv, B, T, C, NH, theta), "rope_forward");
            MC_TRY(cm, cudnn ? prism_attention_forward(PRISM_ATTN_CUDNN, atty, LAF(cm, LA_LSE) + l * cm->lse_layer, qkv,
                                                       B, T, C, NH)
                             : prism_cuda_flash_attention_forward_rope(atty, LAF(cm, LA_LSE) + l * cm->lse_layer, qkv, B, T,
                                                                       C, NH, theta), "attention_forward(fused/cudnn)");
            /* D_l needs the probabilities: attention.cu over a rotated copy of qkv (the separate rope kernel, in
             * the gradient scratch LD_QKV; a cuDNN layer's qkv is rotated already), one sequence at a time, its
             * output thrown away (into the gradient scratch LD_LN); both scratches are unused during the forward */
            floatX *rq = cudnn ? qkv : (floatX *)cm->d[LD_QKV];
            if (attn_dist && !cudnn) {
                MC_TRY(cm, prism_cuda_copy_d2d(rq, qkv, (size_t)N * 3 * C * sizeof(floatX)), "copy qkv(distance)");
                MC_TRY(cm, prism_cuda_rope_forward(rq, B, T, C, NH, theta), "rope_forward(distance)");
            }
            for (int b = 0; attn_dist && b < B; b++) {
                double d = 0;
                MC_TRY(cm, prism_cuda_attention_forward(cm->d[LD_LN], LAX(cm, LA_EATT), rq + (size_t)b * T * 3 * C,
                                                      cm->scratch, 1, T, C, NH), "attention_forward(distance)");
                MC_TRY(cm, prism_cuda_attention_distance(LAX(cm, LA_EATT), 1, T, NH, LAF(cm, LA_DIST), cm->h_rows, &d),
                     "attention_distance");
                attn_dist[l] += d;
            }
        } else {
            /* materialised fallback (head above 256): the separate rope kernel rotates qkv in place, so this
             * layer's saved qkv is post-RoPE and its backward rotates dq, dk back after attention.cu's */
            MC_TRY(cm, prism_cuda_rope_forward(qkv, B, T, C, NH, theta), "rope_forward");
            MC_TRY(cm, prism_cuda_attention_forward(atty, att, qkv, cm->scratch, B, T, C, NH), "attention_forward");
            if (attn_dist) {
                double d = 0;
                MC_TRY(cm, prism_cuda_attention_distance(att, B, T, NH, LAF(cm, LA_DIST), cm->h_rows, &d),
                     "attention_distance");
                attn_dist[l] += d;
            }
        }
        MC_TRY(cm, prism_cuda_matmul_forward(attproj, NULL, atty, LP(cm, LT_ATTPROJ) + (size_t)l * C * C, NULL, N, C, C),
             "matmul_forward(attproj)");
        MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res2, mn, LAF(cm, LA_MNR) + om, residual, attproj,
                                                     LP(cm, LT_MLPNORM) + (size_t)l * C, N, C), "residual_rmsnorm(mlp)");
        MC_TRY(cm, prism_cuda_matmul_forward(up, NULL, mn, LP(cm, LT_FC) + (size_t)l * H * C, NULL, N, C, H),
             "matmul_forward(up)");
        MC_TRY(cm, prism_cuda_matmul_forward(gate, NULL, mn, LP(cm, LT_FCG) + (size_t)l * H * C, NULL, N, C, H),
             "matmul_forward(gate)");
        MC_TRY(cm, prism_cuda_swiglu_forward(sw, up, gate, (size_t)N * H), "swiglu_forward");
        MC_TRY(cm, prism_cuda_matmul_forward(fcproj, NULL, sw, LP(cm, LT_FCPROJ) + (size_t)l * C * H, NULL, N, H, C),
             "matmul_forward(down)");
        if (l + 1 < L) {
            const size_t on = (l + 1) * BTa;
            MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res3, LAX(cm, LA_AN) + on * C, LAF(cm, LA_ANR) + on, res2, fcproj,
                                                         LP(cm, LT_ATTNORM) + (size_t)(l + 1) * C, N, C),
                 "residual_rmsnorm(attn)");
        } else {
            MC_TRY(cm, prism_cuda_residual_rmsnorm_forward(res3, LAX(cm, LA_NF), LAF(cm, LA_NFR), res2, fcproj,
                                                         LP(cm, LT_NORMF), N, C), "residual_rmsnorm(final)");
        }
    }
    MC_TRY(cm, prism_cuda_matmul_forward(LAX(cm, LA_LOGITS), NULL, LAX(cm, LA_NF), LP(cm, LT_WTE), NULL, N, C, cf->Vp),
         "matmul_forward(logits)");
    MC_TRY(cm, prism_cuda_fused_classifier(LAX(cm, LA_LOGITS), LAF(cm, LA_LOSSES), d_tg, N, cf->V, cf->Vp, dloss, train),
         "fused_classifier");
    MC_TRY(cm, prism_cuda_download(cm->h_losses, LAF(cm, LA_LOSSES), (size_t)N * sizeof(float)), "download losses");
    double total = 0;
    for (int i = 0; i < N; i++) total += cm->h_losses[i];
    *loss = (float)(total / N);
    prism_cuda_mem_sample();
    return 0;
}

static int ll_backward(llama_cuda *cm, int B, int T) {
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, H = cf->H, N = B * T;
    const double theta = cf->rope_theta;
    const size_t BTa = (size_t)cf->B * cf->T;
    floatX *dres = (floatX *)cm->d[LD_RES], *dln = (floatX *)cm->d[LD_LN], *dsw = (floatX *)cm->d[LD_SW];
    floatX *dup = (floatX *)cm->d[LD_UP], *dgate = (floatX *)cm->d[LD_GATE], *dqkv = (floatX *)cm->d[LD_QKV];
    MC_TRY(cm, prism_cuda_matmul_backward(dln, LG(cm, LT_WTE), NULL, LAX(cm, LA_LOGITS), LAX(cm, LA_NF), LP(cm, LT_WTE),
                                        N, C, cf->Vp, 0), "matmul_backward(logits)");
    MC_TRY(cm, prism_cuda_memset0(dres, (size_t)N * C * sizeof(floatX)), "memset");
    MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, LG(cm, LT_NORMF), dln, LAX(cm, LA_RES3) + (L - 1) * BTa * C,
                                         LP(cm, LT_NORMF), LAF(cm, LA_NFR), N, C), "rmsnorm_backward(final)");
    for (int l = L - 1; l >= 0; l--) {
        const int NH = cf->heads[l];
        const size_t o1 = l * BTa * C, o3 = 3 * o1, oh = l * BTa * H, om = l * BTa;
        floatX *residual = l == 0 ? LAX(cm, LA_ENC) : LAX(cm, LA_RES3) + (l - 1) * BTa * C;
        MC_TRY(cm, prism_cuda_matmul_backward(dsw, LG(cm, LT_FCPROJ) + (size_t)l * C * H, NULL, dres, LAX(cm, LA_SW) + oh,
                                            LP(cm, LT_FCPROJ) + (size_t)l * C * H, N, H, C, 0), "matmul_backward(down)");
        MC_TRY(cm, prism_cuda_swiglu_backward(dup, dgate, dsw, LAX(cm, LA_UP) + oh, LAX(cm, LA_GATE) + oh, (size_t)N * H),
             "swiglu_backward");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, LG(cm, LT_FC) + (size_t)l * H * C, NULL, dup, LAX(cm, LA_MN) + o1,
                                            LP(cm, LT_FC) + (size_t)l * H * C, N, C, H, 0), "matmul_backward(up)");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, LG(cm, LT_FCG) + (size_t)l * H * C, NULL, dgate, LAX(cm, LA_MN) + o1,
                                            LP(cm, LT_FCG) + (size_t)l * H * C, N, C, H, 1), "matmul_backward(gate)");
        MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, LG(cm, LT_MLPNORM) + (size_t)l * C, dln, LAX(cm, LA_RES2) + o1,
                                             LP(cm, LT_MLPNORM) + (size_t)l * C, LAF(cm, LA_MNR) + om, N, C),
             "rmsnorm_backward(mlp)");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, LG(cm, LT_ATTPROJ) + (size_t)l * C * C, NULL, dres, LAX(cm, LA_ATTY) + o1,
                                            LP(cm, LT_ATTPROJ) + (size_t)l * C * C, N, C, C, 0), "matmul_backward(attproj)");
        if (cm->fused[l] && cm->attn[l] == PRISM_ATTN_CUDNN) {   /* cuDNN over the rotated qkv, then dq, dk rotated back */
            MC_TRY(cm, prism_attention_backward(PRISM_ATTN_CUDNN, dqkv, LAF(cm, LA_DELTA), dln, LAX(cm, LA_QKV) + o3,
                                                LAX(cm, LA_ATTY) + o1, LAF(cm, LA_LSE) + l * cm->lse_layer, B, T, C, NH),
                 "attention_backward(cudnn)");
            MC_TRY(cm, prism_cuda_rope_backward(dqkv, B, T, C, NH, theta), "rope_backward");
        } else if (cm->fused[l]) {   /* dqkv w.r.t. the pre-RoPE qkv: the kernels rotate dq, dk back */
            MC_TRY(cm, prism_cuda_flash_attention_backward_rope(dqkv, LAF(cm, LA_DELTA), dln, LAX(cm, LA_QKV) + o3,
                                                              LAX(cm, LA_ATTY) + o1, LAF(cm, LA_LSE) + l * cm->lse_layer,
                                                              B, T, C, NH, theta), "flash_attention_backward_rope");
        } else {
            MC_TRY(cm, prism_cuda_attention_backward(dqkv, dln, LAX(cm, LA_QKV) + o3, LAX(cm, LA_ATT) + cm->att_off[l],
                                                   cm->scratch, B, T, C, NH), "attention_backward");
            MC_TRY(cm, prism_cuda_rope_backward(dqkv, B, T, C, NH, theta), "rope_backward");
        }
        MC_TRY(cm, prism_cuda_matmul_backward(dln, LG(cm, LT_QKV) + (size_t)l * 3 * C * C, NULL, dqkv, LAX(cm, LA_AN) + o1,
                                            LP(cm, LT_QKV) + (size_t)l * 3 * C * C, N, C, 3 * C, 0), "matmul_backward(qkv)");
        MC_TRY(cm, prism_cuda_rmsnorm_backward(dres, LG(cm, LT_ATTNORM) + (size_t)l * C, dln, residual,
                                             LP(cm, LT_ATTNORM) + (size_t)l * C, LAF(cm, LA_ANR) + om, N, C),
             "rmsnorm_backward(attn)");
    }
    MC_TRY(cm, prism_cuda_encoder_backward(LG(cm, LT_WTE), NULL, dres, cm->tok, B, T, C), "embedding_backward");
    prism_cuda_mem_sample();
    return 0;
}

static int ll_forward_backward(model *mp, const int *in, const int *tg, int B, int T, float loss_scale, float *loss) {
    llama_cuda *cm = (llama_cuda *)mp;
    cm->grads_zero = 0;
    int rc = ll_forward(cm, in, tg, B, T, 1, loss_scale / ((float)B * T), loss, NULL);
    return rc ? rc : ll_backward(cm, B, T);
}

static int ll_forward_loss(model *mp, const int *in, const int *tg, int B, int T, float *loss, double *attn_dist) {
    return ll_forward((llama_cuda *)mp, in, tg, B, T, 0, 0.0f, loss, attn_dist);
}

/* per-position losses of the same forward (zero-shot scoring): ll_forward() leaves them in h_losses */
static int ll_forward_losses(model *mp, const int *in, const int *tg, int B, int T, float *losses) {
    llama_cuda *cm = (llama_cuda *)mp;
    float mean = 0;
    int rc = ll_forward(cm, in, tg, B, T, 0, 0.0f, &mean, NULL);
    if (!rc) memcpy(losses, cm->h_losses, (size_t)B * T * sizeof(float));
    return rc;
}

extern "C" const model_ops model_cuda_llama_ops = {
    "cuda",
    ll_create,
    mc_free,
    mc_error,
    mc_get_params,
    mc_set_params,
    mc_get_opt,
    mc_set_opt,
    mc_get_grads,
    mc_zero_grad,
    ll_forward_backward,
    ll_forward_loss,
    mc_update,
    ll_forward_losses,
};
