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
 *                 statistics and losses; the logits buffer holds head_rows rows of Vp (the LM head runs in
 *                 chunks: model_cuda_base.cu), not B*T. Attention is fused (flash_attention.cu) in every layer whose head
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
 * (gelu_epilogue_exactness).
 * This file is the GPT-2 body only: its configuration checks and activation plan (create), the forward up to lnf
 * and the backward from dlnf (gpt2_arch), each layer's attention in one place (attention_forward_layer /
 * attention_backward_layer, where an attention backend is chosen). Creation, the model_ops entry points, the
 * chunked LM head + cross-entropy (dlogits never probabilities, fed into dlnf and wte's gradient chunk by chunk)
 * and the CUDA graph of the training step are model_cuda_base.cu's, shared with the Llama backend. Mean losses
 * are summed on the host in a fixed order, like the CPU engine; the gradient norm is a deterministic device
 * reduction. Host synchronisations per training step: one at the end of forward_backward (the losses come back
 * once forward, head and backward are queued — one graph launch from the second step of a shape on) and one at
 * the end of update (the norm comes back after AdamW is queued: the clipping factor is read on the device). The update
 * (mc_update, shared with the Llama backend) is two passes over the gradients, the norm and one AdamW launch for
 * all 16 tensors, which also zeroes each gradient after reading it; zero_grad (mc_zero_grad) is then free (it only
 * clears when something else left gradients).
 * Every call returns 0 or MODEL_E*; the message is in the model (error()) and, from create, in err.
 */
#include "cuda_common.cuh"
#include "model_cuda_base.cuh"
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

/* MC_TRY, MC_BIND (model_cuda_mem.cuh): the CUDA runtime state is per thread, so a model used from a thread other
 * than its creator's binds that thread to the model's device first (a no-op in the usual case). */

static int gpt2_forward(mc_model *base, int B, int T, double *attn_dist);
static int gpt2_backward(mc_model *base, int B, int T);
static const mc_arch gpt2_arch = { "GPT-2", gpt2_forward, gpt2_backward };

static int create(const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    if (cfg->arch != MODEL_ARCH_GPT2) {   /* the Llama-style model has its own table: model_ops_for_arch() */
        snprintf(err, errlen, "model_cuda_ops trains GPT-2 only; use model_cuda_llama_ops for arch %d", cfg->arch);
        return MODEL_EINVAL;
    }
    int maxh, rc = mc_config_check(cfg, 0, 6144, "LayerNorm", &maxh, err, errlen);
    if (rc) return rc;
    cuda_model *cm = (cuda_model *)mc_new(cfg, device, sizeof *cm, MODEL_NUM_TENSORS, &gpt2_arch, &rc, err, errlen);
    if (!cm) return rc;
    cm->maxh = maxh;
    {
        const char *g = getenv("PRISM_CUDA_GELU_FUSION");
        cm->gelu_fusion = g && *g == '1';
    }
    const size_t L = cfg->L, BT = (size_t)cfg->B * cfg->T, C = cfg->C, X = sizeof(floatX), F = sizeof(float);
    size_t sbytes, dist_rows;
    const size_t att = mc_plan(cm, maxh, &sbytes, &dist_rows), lse_layer = cm->lse_layer, TT = (size_t)cfg->T * cfg->T;
    size_t abytes[A_NUM] = {
        BT * C * X, L * BT * C * X, L * BT * F, L * BT * F, L * BT * 3 * C * X, L * BT * C * X, att * X,
        BT * C * X, L * BT * C * X, L * BT * C * X, L * BT * F, L * BT * F, L * BT * 4 * C * X, L * BT * 4 * C * X,
        BT * C * X, L * BT * C * X, BT * C * X, BT * F, BT * F, (size_t)cm->head_rows * cfg->Vp * X, BT * F,
        dist_rows * F, L * lse_layer * F, lse_layer * F, maxh * TT * X,
    };
    size_t dbytes[D_NUM] = { BT * C * X, BT * C * X, BT * 4 * C * X, BT * 3 * C * X };
    static const int head[4] = { A_LNF, D_LN, A_LOGITS, A_LOSSES };
    return mc_finish(cm, abytes, A_NUM, cm->a, dbytes, D_NUM, cm->d, sbytes, dist_rows, head, out, err, errlen);
}

/* ---- attention, one layer: the one place a layer's attention is chosen (fused, or materialised above 256) ---- */
static int attention_forward_layer(cuda_model *cm, int l, int B, int T, const floatX *qkv, floatX *atty,
                                   double *attn_dist) {
    const int C = cm->cfg.C, NH = cm->cfg.heads[l];
    floatX *att = AX(cm, A_ATT) + cm->att_off[l];
    if (cm->fused[l]) {
        /* the fused kernel or cuDNN, as PRISM_ATTENTION chose for this layer at creation (attention_cudnn.h) */
        MC_TRY(cm, prism_attention_forward(cm->attn[l], atty, AF(cm, A_LSE) + l * cm->lse_layer, qkv, B, T, C, NH),
               "attention_forward(fused/cudnn)");
        /* D_l needs the probabilities: attention.cu, one sequence at a time, its output thrown away (into the
         * gradient scratch dln, unused during the forward) */
        return mc_distance_fused(cm, l, B, T, qkv, cm->d[D_LN], AX(cm, A_EATT), AF(cm, A_DIST), attn_dist);
    }
    MC_TRY(cm, prism_cuda_attention_forward(atty, att, qkv, cm->scratch, B, T, C, NH), "attention_forward");
    return mc_distance_probs(cm, l, B, T, att, AF(cm, A_DIST), attn_dist);
}

static int attention_backward_layer(cuda_model *cm, int l, int B, int T, floatX *dqkv, const floatX *datty) {
    const int C = cm->cfg.C, NH = cm->cfg.heads[l];
    const size_t o1 = l * (size_t)cm->cfg.B * cm->cfg.T * C, o3 = 3 * o1;
    if (cm->fused[l])
        MC_TRY(cm, prism_attention_backward(cm->attn[l], dqkv, AF(cm, A_DELTA), datty, AX(cm, A_QKV) + o3,
                                            AX(cm, A_ATTY) + o1, AF(cm, A_LSE) + l * cm->lse_layer, B, T, C, NH),
               "attention_backward(fused/cudnn)");
    else
        MC_TRY(cm, prism_cuda_attention_backward(dqkv, datty, AX(cm, A_QKV) + o3, AX(cm, A_ATT) + cm->att_off[l],
                                                 cm->scratch, B, T, C, NH), "attention_backward");
    return 0;
}

/* ---- the body ------------------------------------------------------------------------------------------------ */
/* tokens (cm->tok) -> lnf (the head's input); attn_dist: eval only */
static int gpt2_forward(mc_model *base, int B, int T, double *attn_dist) {
    cuda_model *cm = (cuda_model *)base;
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    MC_TRY(cm, prism_cuda_encoder_forward(AX(cm, A_ENCODED), cm->tok, P(cm, 0), P(cm, 1), B, T, C), "encoder_forward");
    /* layer 0's ln1 (later layers get theirs fused with the previous residual add) */
    MC_TRY(cm, prism_cuda_layernorm_forward(AX(cm, A_LN1), AF(cm, A_LN1M), AF(cm, A_LN1R), AX(cm, A_ENCODED), P(cm, 2),
                                         P(cm, 3), N, C), "layernorm_forward");
    for (int l = 0; l < L; l++) {
        const size_t o1 = l * BTa * C, o3 = 3 * o1, o4 = 4 * o1, om = l * BTa;
        floatX *residual = l == 0 ? AX(cm, A_ENCODED) : AX(cm, A_RES3) + (l - 1) * BTa * C;
        floatX *ln1 = AX(cm, A_LN1) + o1, *qkv = AX(cm, A_QKV) + o3, *atty = AX(cm, A_ATTY) + o1;
        floatX *attproj = AX(cm, A_ATTPROJ);
        floatX *res2 = AX(cm, A_RES2) + o1, *ln2 = AX(cm, A_LN2) + o1, *fch = AX(cm, A_FCH) + o4;
        floatX *fchg = AX(cm, A_FCHG) + o4, *fcproj = AX(cm, A_FCPROJ), *res3 = AX(cm, A_RES3) + o1;
        MC_TRY(cm, prism_cuda_matmul_forward(qkv, NULL, ln1, P(cm, 4) + (size_t)l * 3 * C * C, P(cm, 5) + (size_t)l * 3 * C,
                                          N, C, 3 * C), "matmul_forward(qkv)");
        int rc = attention_forward_layer(cm, l, B, T, qkv, atty, attn_dist);
        if (rc) return rc;
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
    return 0;
}

/* dlnf (cm->dhead_in, left by the head with wte's share of the gradient) -> every gradient */
static int gpt2_backward(mc_model *base, int B, int T) {
    cuda_model *cm = (cuda_model *)base;
    const struct model_config *cf = &cm->cfg;
    const int L = cf->L, C = cf->C, N = B * T;
    const size_t BTa = (size_t)cf->B * cf->T;
    floatX *dres = (floatX *)cm->d[D_RES], *dln = (floatX *)cm->d[D_LN], *d4 = (floatX *)cm->d[D_4];
    floatX *dqkv = (floatX *)cm->d[D_QKV];
    MC_TRY(cm, prism_cuda_memset0(dres, (size_t)N * C * sizeof(floatX)), "memset");
    MC_TRY(cm, prism_cuda_layernorm_backward(dres, G(cm, 14), G(cm, 15), dln, AX(cm, A_RES3) + (L - 1) * BTa * C, P(cm, 14),
                                          AF(cm, A_LNFM), AF(cm, A_LNFR), N, C), "layernorm_backward(lnf)");
    for (int l = L - 1; l >= 0; l--) {
        const size_t o1 = l * BTa * C, o4 = 4 * o1, om = l * BTa;
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
        int rc = attention_backward_layer(cm, l, B, T, dqkv, dln);
        if (rc) return rc;
        MC_TRY(cm, prism_cuda_matmul_backward(dln, G(cm, 4) + (size_t)l * 3 * C * C, G(cm, 5) + (size_t)l * 3 * C, dqkv,
                                           AX(cm, A_LN1) + o1, P(cm, 4) + (size_t)l * 3 * C * C, N, C, 3 * C, 0),
            "matmul_backward(qkv)");
        MC_TRY(cm, prism_cuda_layernorm_backward(dres, G(cm, 2) + (size_t)l * C, G(cm, 3) + (size_t)l * C, dln, residual,
                                              P(cm, 2) + (size_t)l * C, AF(cm, A_LN1M) + om, AF(cm, A_LN1R) + om, N, C),
            "layernorm_backward(ln1)");
    }
    MC_TRY(cm, prism_cuda_encoder_backward(G(cm, 0), G(cm, 1), dres, cm->tok, B, T, C), "encoder_backward");
    return 0;
}

extern "C" const model_ops model_cuda_ops = MC_MODEL_OPS(create);

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
