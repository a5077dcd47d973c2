/* kernels/cuda/model_cuda.cu — the CUDA backend behind kernels/model.h (model_cuda_ops): GPT-2 with h_l
 * heads in layer l, bf16 (or fp32) activations and weights, float32 master weights, gradients and AdamW.
 *
 * Memory, one device allocation per group, each tensor at a 256-byte aligned offset (cuBLASLt wants
 * aligned matrices):
 *   params group: master (float32), grads (float32), m, v (float32), params_x (floatX working copy), all
 *                 in llm.c tensor order; the host sees float32 arrays without the alignment gaps.
 *   acts group:   per-layer activations kept for backward (strided by the allocated B*T, like gpt2.c),
 *                 the per-row log-sum-exp of each layer's attention (lse, B*h_l*T floats: all the fused
 *                 attention's backward keeps besides qkv and its output), and the float32 LayerNorm
 *                 statistics and losses. Attention is fused (flash_attention.cu) in every layer whose head
 *                 size it takes (1..256, every schedule the rules allow): no B*h*T*T tensor is kept. Only a
 *                 layer with a larger head keeps att (B*h_l*T*T, at att_off[l]) and runs attention.cu; eval
 *                 computes attention distance D_l with attention.cu one sequence at a time (eatt: h*T*T).
 *   grad scratch: the residual-stream gradient dres (B,T,C), dln (B,T,C), d4 (B,T,4C), dqkv (B,T,3C) —
 *                 reused layer after layer, so activation gradients cost O(one layer).
 *   attention scratch for attention.cu, sized for the largest head count and one sequence (eval's D_l), or
 *                 the whole batch when a layer trains through it (prism_cuda_attention_scratch_bytes).
 * The forward fuses each residual add with the LayerNorm that follows (residual_layernorm_forward); with
 * PRISM_CUDA_GELU_FUSION=1 in the environment the fc matmul also applies GELU in its cuBLASLt epilogue and the
 * fcproj backward GELU' in its (DGELU) — off by default until tests/gpu/run.sh has confirmed both exact on a GPU
 * (gelu_epilogue_exactness). The
 * classifier overwrites logits with dlogits (never probabilities). Mean losses are summed on the host in
 * a fixed order, like the CPU engine; the gradient norm is a deterministic device reduction.
 * Host synchronisations per training step: one at the end of forward_backward (the losses come back once
 * forward and backward are both queued, so the GPU never waits for the host in between) and one at the end of
 * update (the norm comes back after AdamW is queued: the clipping factor is read on the device). The update
 * (mc_update, shared with the Llama backend) is two passes over the gradients, the norm and one AdamW launch for
 * all 16 tensors, which also zeroes each gradient after reading it; zero_grad (mc_zero_grad) is then free (it only
 * clears when something else left gradients).
 * Every call returns 0 or MODEL_E*; the message is in the model (error()) and, from create, in err.
 */
#include "cuda_common.cuh"
#include "model_cuda_mem.cuh"
#include "attention_cudnn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { A_ENCODED, A_LN1, A_LN1M, A_LN1R, A_QKV, A_ATTY, A_ATT, A_ATTPROJ, A_RES2, A_LN2, A_LN2M, A_LN2R, A_FCH,
       A_FCHG, A_FCPROJ, A_RES3, A_LNF, A_LNFM, A_LNFR, A_LOGITS, A_LOSSES, A_DIST, A_LSE, A_DELTA, A_EATT, A_NUM };
enum { D_RES, D_LN, D_4, D_QKV, D_NUM };

struct cuda_model : mc_model {       /* cfg, device, err, the groups, the attention plan: model_cuda_mem.cuh */
    void *a[A_NUM];                    /* into amem; att_off[l] is into A_ATT, lse_layer counts A_LSE */
    void *d[D_NUM];                    /* into dmem */
    int maxh;
    int gelu_fusion;                   /* PRISM_CUDA_GELU_FUSION=1: GELU in the fc matmul's epilogue */
};

#define P(cm, i) ((cm)->px + (cm)->offs[i])          /* floatX param tensor i */
#define G(cm, i) ((cm)->grads + (cm)->offs[i])       /* float32 grad tensor i */
#define AX(cm, i) ((floatX *)(cm)->a[i])
#define AF(cm, i) ((float *)(cm)->a[i])

/* MC_TRY, MC_BIND (model_cuda_mem.cuh): the CUDA runtime state is per thread, so a model used from a thread other
 * than its creator's binds that thread to the model's device first (a no-op in the usual case). */

static int cuda_create(const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    if (cfg->arch != MODEL_ARCH_GPT2) {   /* the Llama-style model has its own table: model_ops_for_arch() */
        if (err) snprintf(err, errlen, "model_cuda_ops trains GPT-2 only; use model_cuda_llama_ops for arch %d", cfg->arch);
        return MODEL_EINVAL;
    }
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS || cfg->C < 1 || cfg->V < 1 || cfg->Vp < cfg->V || cfg->maxT < 1 ||
        cfg->B < 1 || cfg->T < 1 || cfg->T > cfg->maxT) {
        if (err) snprintf(err, errlen, "invalid model configuration (L=%d C=%d V=%d Vp=%d maxT=%d B=%d T=%d)",
                          cfg->L, cfg->C, cfg->V, cfg->Vp, cfg->maxT, cfg->B, cfg->T);
        return MODEL_EINVAL;
    }
    int maxh = 0;
    for (int l = 0; l < cfg->L; l++) {
        if (cfg->heads[l] < 1 || cfg->C % cfg->heads[l]) {
            if (err) snprintf(err, errlen, "layer %d: %d heads do not divide C=%d", l + 1, cfg->heads[l], cfg->C);
            return MODEL_EINVAL;
        }
        if (cfg->heads[l] > maxh) maxh = cfg->heads[l];
    }
    if (2 * (size_t)cfg->C * sizeof(float) > 48 * 1024) {
        if (err) snprintf(err, errlen, "C=%d is larger than the CUDA LayerNorm backward supports (6144)", cfg->C);
        return MODEL_EINVAL;
    }
    char ierr[400];
    if (prism_cuda_init(device, ierr, sizeof ierr) != 0) {
        if (err) snprintf(err, errlen, "%s", ierr);
        return MODEL_EDEVICE;
    }
    cuda_model *cm = (cuda_model *)calloc(1, sizeof *cm);
    if (!cm) { if (err) snprintf(err, errlen, "out of host memory"); return MODEL_ENOMEM; }
    cm->cfg = *cfg;
    cm->device = device;
    cm->ntensors = MODEL_NUM_TENSORS;
    cm->maxh = maxh;
    {
        const char *g = getenv("PRISM_CUDA_GELU_FUSION");
        cm->gelu_fusion = g && *g == '1';
    }
    mc_param_layout(cfg, cm->sizes, cm->offs, &cm->nparams, &cm->npad);

    const size_t L = cfg->L, BT = (size_t)cfg->B * cfg->T, C = cfg->C, X = sizeof(floatX), F = sizeof(float);
    int any_mat;
    const size_t att = mc_attention_plan(cfg, cm->fused, cm->att_off, &any_mat);
    const size_t lse_layer = (size_t)cfg->B * maxh * cfg->T, TT = (size_t)cfg->T * cfg->T;
    cm->lse_layer = lse_layer;
    const size_t sbytes = prism_cuda_attention_scratch_bytes(any_mat ? cfg->B : 1, cfg->T, cfg->C, maxh);
    size_t dist_rows = prism_cuda_attention_distance_rows(cfg->B, cfg->T, maxh);
    size_t abytes[A_NUM] = {
        BT * C * X, L * BT * C * X, L * BT * F, L * BT * F, L * BT * 3 * C * X, L * BT * C * X, att * X,
        BT * C * X, L * BT * C * X, L * BT * C * X, L * BT * F, L * BT * F, L * BT * 4 * C * X, L * BT * 4 * C * X,
        BT * C * X, L * BT * C * X, BT * C * X, BT * F, BT * F, BT * (size_t)cfg->Vp * X, BT * F, dist_rows * F,
        L * lse_layer * F, lse_layer * F, maxh * TT * X,
    };
    size_t dbytes[D_NUM] = { BT * C * X, BT * C * X, BT * 4 * C * X, BT * 3 * C * X };
    size_t atot = mc_group_bytes(abytes, A_NUM), dtot = mc_group_bytes(dbytes, D_NUM);
    size_t pbytes = mc_param_bytes(cm->npad);
    int rc = MODEL_ENOMEM;
    cm->pmem = prism_cuda_malloc(pbytes);
    cm->amem = prism_cuda_malloc(atot);
    cm->dmem = prism_cuda_malloc(dtot);
    cm->scratch = prism_cuda_malloc(sbytes);
    cm->tok = (int *)prism_cuda_malloc(2 * BT * sizeof(int));
    cm->h_losses = (float *)malloc(BT * F);
    cm->h_rows = (float *)malloc((dist_rows ? dist_rows : 1) * F);
    if (!cm->pmem || !cm->amem || !cm->dmem || !cm->scratch || !cm->tok || !cm->h_losses || !cm->h_rows) {
        if (err) snprintf(err, errlen, "out of GPU memory for L=%d C=%d Vp=%d B=%d T=%d (params %zu MiB, activations "
                          "%zu MiB, attention scratch %zu MiB): %s", cfg->L, cfg->C, cfg->Vp, cfg->B, cfg->T,
                          pbytes >> 20, atot >> 20, sbytes >> 20,
                          prism_cuda_last_error());
        goto fail;
    }
    mc_carve_params(cm);
    mc_carve(cm->amem, abytes, cm->a, A_NUM);
    mc_carve(cm->dmem, dbytes, cm->d, D_NUM);
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

static int check_batch(cuda_model *cm, const int *in, const int *tg, int B, int T) {
    return mc_check_batch(&cm->cfg, in, tg, B, T, cm->err, sizeof cm->err);
}

/* The mean of the N per-token losses in A_LOSSES: downloaded (a sync) and summed on the host in a fixed order. */
static int mean_loss(cuda_model *cm, int N, float *loss) {
    MC_TRY(cm, prism_cuda_download(cm->h_losses, AF(cm, A_LOSSES), (size_t)N * sizeof(float)), "download losses");
    double total = 0;
    for (int i = 0; i < N; i++) total += cm->h_losses[i];
    *loss = (float)(total / N);
    return 0;
}

/* Forward on B x T; train leaves dlogits (scaled by dloss) in A_LOGITS. *loss = mean loss (host, fixed order);
 * loss NULL leaves the losses on the device for mean_loss later (no sync here). */
static int forward(cuda_model *cm, const int *in, const int *tg, int B, int T, int train, float dloss, float *loss,
                   double *attn_dist) {
    int rc = check_batch(cm, in, tg, B, T);
    if (rc) return rc;
    MC_BIND(cm);
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    int *d_in = cm->tok, *d_tg = cm->tok + BTa;
    MC_TRY(cm, prism_cuda_upload(d_in, in, (size_t)N * sizeof(int)), "upload inputs");
    MC_TRY(cm, prism_cuda_upload(d_tg, tg, (size_t)N * sizeof(int)), "upload targets");
    MC_TRY(cm, prism_cuda_encoder_forward(AX(cm, A_ENCODED), d_in, P(cm, 0), P(cm, 1), B, T, C), "encoder_forward");
    /* layer 0's ln1 (later layers get theirs fused with the previous residual add) */
    MC_TRY(cm, prism_cuda_layernorm_forward(AX(cm, A_LN1), AF(cm, A_LN1M), AF(cm, A_LN1R), AX(cm, A_ENCODED), P(cm, 2),
                                         P(cm, 3), N, C), "layernorm_forward");
    for (int l = 0; l < L; l++) {
        const int NH = cf->heads[l];
        const size_t o1 = l * BTa * C, o3 = 3 * o1, o4 = 4 * o1, om = l * BTa;
        floatX *residual = l == 0 ? AX(cm, A_ENCODED) : AX(cm, A_RES3) + (l - 1) * BTa * C;
        floatX *ln1 = AX(cm, A_LN1) + o1, *qkv = AX(cm, A_QKV) + o3, *atty = AX(cm, A_ATTY) + o1;
        floatX *att = AX(cm, A_ATT) + cm->att_off[l], *attproj = AX(cm, A_ATTPROJ);
        floatX *res2 = AX(cm, A_RES2) + o1, *ln2 = AX(cm, A_LN2) + o1, *fch = AX(cm, A_FCH) + o4;
        floatX *fchg = AX(cm, A_FCHG) + o4, *fcproj = AX(cm, A_FCPROJ), *res3 = AX(cm, A_RES3) + o1;
        MC_TRY(cm, prism_cuda_matmul_forward(qkv, NULL, ln1, P(cm, 4) + (size_t)l * 3 * C * C, P(cm, 5) + (size_t)l * 3 * C,
                                          N, C, 3 * C), "matmul_forward(qkv)");
        if (cm->fused[l]) {
            MC_TRY(cm, prism_attention_forward(cm->attn[l], atty, AF(cm, A_LSE) + l * cm->lse_layer, qkv, B, T, C, NH),
                "attention_forward(fused/cudnn)");
            /* D_l needs the probabilities: attention.cu, one sequence at a time, its output thrown away (into
             * the gradient scratch dln, unused during the forward) */
            for (int b = 0; attn_dist && b < B; b++) {
                double d = 0;
                MC_TRY(cm, prism_cuda_attention_forward(cm->d[D_LN], AX(cm, A_EATT), qkv + (size_t)b * T * 3 * C, cm->scratch,
                                                     1, T, C, NH), "attention_forward(distance)");
                MC_TRY(cm, prism_cuda_attention_distance(AX(cm, A_EATT), 1, T, NH, AF(cm, A_DIST), cm->h_rows, &d),
                    "attention_distance");
                attn_dist[l] += d;
            }
        } else {
            MC_TRY(cm, prism_cuda_attention_forward(atty, att, qkv, cm->scratch, B, T, C, NH), "attention_forward");
            if (attn_dist) {
                double d = 0;
                MC_TRY(cm, prism_cuda_attention_distance(att, B, T, NH, AF(cm, A_DIST), cm->h_rows, &d), "attention_distance");
                attn_dist[l] += d;
            }
        }
        MC_TRY(cm, prism_cuda_matmul_forward(attproj, NULL, atty, P(cm, 6) + (size_t)l * C * C, P(cm, 7) + (size_t)l * C,
                                          N, C, C), "matmul_forward(attproj)");
        MC_TRY(cm, prism_cuda_residual_layernorm_forward(res2, ln2, AF(cm, A_LN2M) + om, AF(cm, A_LN2R) + om, residual,
                                                      attproj, P(cm, 8) + (size_t)l * C, P(cm, 9) + (size_t)l * C, N, C),
            "residual_layernorm_forward(ln2)");
        if (cm->gelu_fusion) {   /* cuBLASLt GELU_AUX_BIAS: fchg = GELU(pre), fch = pre, one pass */
            MC_TRY(cm, prism_cuda_matmul_forward(fchg, fch, ln2, P(cm, 10) + (size_t)l * 4 * C * C,
                                              P(cm, 11) + (size_t)l * 4 * C, N, C, 4 * C), "matmul_forward(fc+gelu)");
        } else {
            MC_TRY(cm, prism_cuda_matmul_forward(fch, NULL, ln2, P(cm, 10) + (size_t)l * 4 * C * C,
                                              P(cm, 11) + (size_t)l * 4 * C, N, C, 4 * C), "matmul_forward(fc)");
            MC_TRY(cm, prism_cuda_gelu_forward(fchg, fch, (size_t)N * 4 * C), "gelu_forward");
        }
        MC_TRY(cm, prism_cuda_matmul_forward(fcproj, NULL, fchg, P(cm, 12) + (size_t)l * 4 * C * C, P(cm, 13) + (size_t)l * C,
                                          N, 4 * C, C), "matmul_forward(fcproj)");
        if (l + 1 < L) {
            const size_t on = (l + 1) * BTa;
            MC_TRY(cm, prism_cuda_residual_layernorm_forward(res3, AX(cm, A_LN1) + on * C, AF(cm, A_LN1M) + on,
                                                          AF(cm, A_LN1R) + on, res2, fcproj, P(cm, 2) + (size_t)(l + 1) * C,
                                                          P(cm, 3) + (size_t)(l + 1) * C, N, C),
                "residual_layernorm_forward(ln1)");
        } else {
            MC_TRY(cm, prism_cuda_residual_layernorm_forward(res3, AX(cm, A_LNF), AF(cm, A_LNFM), AF(cm, A_LNFR), res2,
                                                          fcproj, P(cm, 14), P(cm, 15), N, C),
                "residual_layernorm_forward(lnf)");
        }
    }
    MC_TRY(cm, prism_cuda_matmul_forward(AX(cm, A_LOGITS), NULL, AX(cm, A_LNF), P(cm, 0), NULL, N, C, cf->Vp),
        "matmul_forward(logits)");
    MC_TRY(cm, prism_cuda_fused_classifier(AX(cm, A_LOGITS), AF(cm, A_LOSSES), d_tg, N, cf->V, cf->Vp, dloss, train),
        "fused_classifier");
    if (loss && (rc = mean_loss(cm, N, loss)) != 0) return rc;
    prism_cuda_mem_sample();
    return 0;
}

static int backward(cuda_model *cm, int B, int T) {
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    floatX *dres = (floatX *)cm->d[D_RES], *dln = (floatX *)cm->d[D_LN], *d4 = (floatX *)cm->d[D_4];
    floatX *dqkv = (floatX *)cm->d[D_QKV];
    /* classifier (tied to wte): logits hold dlogits */
    MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, 0), NULL, AX(cm, A_LOGITS), AX(cm, A_LNF), P(cm, 0), N, C, cf->Vp, 0),
        "matmul_backward(logits)");
    MC_TRY(cm, prism_cuda_memset0(dres, (size_t)N * C * sizeof(floatX)), "memset");
    MC_TRY(cm, prism_cuda_layernorm_backward(dres, G(cm, 14), G(cm, 15), dln, AX(cm, A_RES3) + (L - 1) * BTa * C, P(cm, 14),
                                          AF(cm, A_LNFM), AF(cm, A_LNFR), N, C), "layernorm_backward(lnf)");
    for (int l = L - 1; l >= 0; l--) {
        const int NH = cf->heads[l];
        const size_t o1 = l * BTa * C, o3 = 3 * o1, o4 = 4 * o1, om = l * BTa;
        floatX *residual = l == 0 ? AX(cm, A_ENCODED) : AX(cm, A_RES3) + (l - 1) * BTa * C;
        /* dres = dL/d res3[l] = dL/d fcproj (and flows on unchanged to res2) */
        if (cm->gelu_fusion) {   /* cuBLASLt DGELU: d4 = (dres @ Wproj) * GELU'(fch), one pass */
            MC_TRY(cm, prism_cuda_matmul_backward_dgelu(d4, G(cm, 12) + (size_t)l * 4 * C * C, G(cm, 13) + (size_t)l * C,
                                                     dres, AX(cm, A_FCHG) + o4, P(cm, 12) + (size_t)l * 4 * C * C,
                                                     AX(cm, A_FCH) + o4, N, 4 * C, C), "matmul_backward(fcproj+dgelu)");
        } else {
            MC_TRY(cm, prism_cuda_matmul_backward(d4, G(cm, 12) + (size_t)l * 4 * C * C, G(cm, 13) + (size_t)l * C, dres,
                                               AX(cm, A_FCHG) + o4, P(cm, 12) + (size_t)l * 4 * C * C, N, 4 * C, C, 0),
                "matmul_backward(fcproj)");
            MC_TRY(cm, prism_cuda_gelu_backward(d4, AX(cm, A_FCH) + o4, d4, (size_t)N * 4 * C), "gelu_backward");
        }
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, 10) + (size_t)l * 4 * C * C, G(cm, 11) + (size_t)l * 4 * C, d4,
                                           AX(cm, A_LN2) + o1, P(cm, 10) + (size_t)l * 4 * C * C, N, C, 4 * C, 0),
            "matmul_backward(fc)");
        MC_TRY(cm, prism_cuda_layernorm_backward(dres, G(cm, 8) + (size_t)l * C, G(cm, 9) + (size_t)l * C, dln,
                                              AX(cm, A_RES2) + o1, P(cm, 8) + (size_t)l * C, AF(cm, A_LN2M) + om,
                                              AF(cm, A_LN2R) + om, N, C), "layernorm_backward(ln2)");
        /* dres = dL/d res2 = dL/d attproj (and flows on to the layer's input residual) */
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, 6) + (size_t)l * C * C, G(cm, 7) + (size_t)l * C, dres,
                                           AX(cm, A_ATTY) + o1, P(cm, 6) + (size_t)l * C * C, N, C, C, 0),
            "matmul_backward(attproj)");
        if (cm->fused[l])
            MC_TRY(cm, prism_attention_backward(cm->attn[l], dqkv, AF(cm, A_DELTA), dln, AX(cm, A_QKV) + o3,
                                                AX(cm, A_ATTY) + o1, AF(cm, A_LSE) + l * cm->lse_layer,
                                                B, T, C, NH), "attention_backward(fused/cudnn)");
        else
            MC_TRY(cm, prism_cuda_attention_backward(dqkv, dln, AX(cm, A_QKV) + o3, AX(cm, A_ATT) + cm->att_off[l],
                                                  cm->scratch, B, T, C, NH), "attention_backward");
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, 4) + (size_t)l * 3 * C * C, G(cm, 5) + (size_t)l * 3 * C, dqkv,
                                           AX(cm, A_LN1) + o1, P(cm, 4) + (size_t)l * 3 * C * C, N, C, 3 * C, 0),
            "matmul_backward(qkv)");
        MC_TRY(cm, prism_cuda_layernorm_backward(dres, G(cm, 2) + (size_t)l * C, G(cm, 3) + (size_t)l * C, dln, residual,
                                              P(cm, 2) + (size_t)l * C, AF(cm, A_LN1M) + om, AF(cm, A_LN1R) + om, N, C),
            "layernorm_backward(ln1)");
    }
    MC_TRY(cm, prism_cuda_encoder_backward(G(cm, 0), G(cm, 1), dres, cm->tok, B, T, C), "encoder_backward");
    prism_cuda_mem_sample();
    return 0;
}

static int cuda_forward_backward(model *mp, const int *in, const int *tg, int B, int T, float loss_scale, float *loss) {
    cuda_model *cm = (cuda_model *)mp;
    cm->grads_zero = 0;
    int rc = forward(cm, in, tg, B, T, 1, loss_scale / ((float)B * T), NULL, NULL);
    if (!rc) rc = backward(cm, B, T);
    return rc ? rc : mean_loss(cm, B * T, loss);
}

static int cuda_forward_loss(model *mp, const int *in, const int *tg, int B, int T, float *loss, double *attn_dist) {
    return forward((cuda_model *)mp, in, tg, B, T, 0, 0.0f, loss, attn_dist);
}

/* per-position losses of the same forward (zero-shot scoring): forward() leaves them in h_losses */
static int cuda_forward_losses(model *mp, const int *in, const int *tg, int B, int T, float *losses) {
    cuda_model *cm = (cuda_model *)mp;
    float mean = 0;
    int rc = forward(cm, in, tg, B, T, 0, 0.0f, &mean, NULL);
    if (!rc) memcpy(losses, cm->h_losses, (size_t)B * T * sizeof(float));
    return rc;
}

extern "C" const model_ops model_cuda_ops = {
    "cuda",
    cuda_create,
    mc_free,
    mc_error,
    mc_get_params,
    mc_set_params,
    mc_get_opt,
    mc_set_opt,
    mc_get_grads,
    mc_zero_grad,
    cuda_forward_backward,
    cuda_forward_loss,
    mc_update,
    cuda_forward_losses,
};

/* ---- the backend table (kernels/model.h): the one symbol prism-cuda.so exports, resolved by the worker's loader
 * (kernels/model_backend.c); a binary linked against these objects finds it without loading anything. */
extern "C" const model_ops model_cuda_llama_ops;   /* model_llama.cu */

static int cuda_device_check(int device, char *err, size_t errlen) {
    int n = prism_cuda_device_probe();
    if (n < 0) {
        snprintf(err, errlen, "the CUDA runtime failed (%s). Fix: install an NVIDIA driver at least as new as the CUDA "
                 "runtime this backend was built with (nvidia-smi must work), or run on the CPU with --device cpu",
                 prism_cuda_last_error());
        return -1;
    }
    if (n == 0) {
        snprintf(err, errlen, "no CUDA device is visible here: no NVIDIA driver or no GPU (%s). Fix: run on a machine "
                 "where nvidia-smi lists a GPU (check CUDA_VISIBLE_DEVICES), or run on the CPU with --device cpu",
                 prism_cuda_last_error());
        return -1;
    }
    if (device < 0 || device >= n) {
        snprintf(err, errlen, "this machine has %d CUDA device(s), 0..%d. Fix: pick one of those, or run on the CPU "
                 "with --device cpu", n, n - 1);
        return -1;
    }
    return 0;
}

extern "C" __attribute__((visibility("default"))) const struct model_backend prism_model_backend = {
    MODEL_BACKEND_ABI,
    (uint32_t)sizeof(struct model_backend),
    (uint32_t)sizeof(model_ops),
    (uint32_t)sizeof(struct model_config),
#ifdef PRISM_CUDAEMU
    "cuda-emulator",
#else
    "cuda",
#endif
#ifdef ENABLE_FP32
    "fp32",
#else
    "bf16",
#endif
    &model_cuda_ops,
    &model_cuda_llama_ops,
    cuda_device_check,
};
