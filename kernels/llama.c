/* llama.c — the Llama-style model's forward, backward and AdamW on the CPU, with h_l heads in layer l.
 *
 * Design: gpt2.c's structure (one block per tensor group, a pointer table, layer l's slice at l·(B·T·width),
 * explicit offsets for the schedule-dependent attention probabilities) with the Llama pieces from
 * llama_kernels.c. RoPE rotates q and k in place inside the layer's qkv activation right after the QKV
 * matmul, so the attention kernels of cpu_kernels.c are used unchanged and the stored qkv is exactly what
 * attention read; backward rotates dq/dk back before the QKV matmul's backward. No biases anywhere.
 */
#include "llama.h"
#include "cpu_kernels.h"
#include "llama_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void llama_act_sizes(const struct model_config *c, size_t *s, size_t *att_off, int for_grads) {
    size_t L = c->L, BT = (size_t)c->B * c->T, C = c->C, H = c->H;
    size_t att = 0;
    for (int l = 0; l < c->L; l++) { if (att_off) att_off[l] = att; att += (size_t)c->B * c->heads[l] * c->T * c->T; }
    size_t g = for_grads ? 0 : 1;
    size_t v[LLAMA_NUM_ACTS] = {
        BT * C, L * BT * C, g * L * BT, L * BT * 3 * C, L * BT * C, g * att, L * BT * C, L * BT * C,
        L * BT * C, g * L * BT, L * BT * H, L * BT * H, L * BT * H, L * BT * C, L * BT * C, BT * C, g * BT,
        g * BT * c->Vp,
    };
    memcpy(s, v, sizeof v);
}



int RN(llama_init)(struct llama *g, const struct model_config *cfg) {
    memset(g, 0, sizeof *g);
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS || cfg->C < 1 || cfg->V < 1 || cfg->Vp < cfg->V ||
        cfg->maxT < 1 || cfg->B < 1 || cfg->T < 1 || cfg->T > cfg->maxT || cfg->H < 0 || cfg->rope_theta < 0)
        return MODEL_EINVAL;
    int maxh = 0;
    for (int l = 0; l < cfg->L; l++) {
        if (cfg->heads[l] < 1 || cfg->C % cfg->heads[l] || (cfg->C / cfg->heads[l]) % 2) return MODEL_EINVAL;
        if (cfg->heads[l] > maxh) maxh = cfg->heads[l];
    }
    g->cfg = *cfg;
    g->cfg.arch = MODEL_ARCH_LLAMA;
    if (!g->cfg.H) g->cfg.H = model_llama_default_ffn(cfg->C);
    if (g->cfg.rope_theta == 0) g->cfg.rope_theta = 10000.0f;
    cfg = &g->cfg;
    model_param_sizes(cfg, g->param_sizes);
    g->num_params = model_num_params(cfg);
    size_t gsz[LLAMA_NUM_ACTS], ngacts = 0;
    llama_act_sizes(cfg, g->act_sizes, g->att_off, 0);
    llama_act_sizes(cfg, gsz, NULL, 1);
    for (int i = 0; i < LLAMA_NUM_ACTS; i++) { g->num_acts += g->act_sizes[i]; ngacts += gsz[i]; }
    size_t np = g->num_params;
    int bad = RN(cpu_model_alloc)(np, g->num_acts, ngacts, &g->params_mem, &g->grads_mem, &g->m_mem, &g->v_mem,
                                  &g->acts_mem, &g->dacts_mem);
    g->losses = calloc((size_t)cfg->B * cfg->T, sizeof(real));
    g->datt = calloc((size_t)cfg->B * maxh * cfg->T * cfg->T, sizeof(real));
    if (bad || !g->losses || !g->datt) {
        RN(llama_release)(g);
        return MODEL_ENOMEM;
    }
    RN(cpu_point_tensors)(g->params_mem, g->param_sizes, (real **)&g->params, MODEL_LLAMA_NUM_TENSORS);
    RN(cpu_point_tensors)(g->grads_mem, g->param_sizes, (real **)&g->grads, MODEL_LLAMA_NUM_TENSORS);
    RN(cpu_point_tensors)(g->acts_mem, g->act_sizes, (real **)&g->acts, LLAMA_NUM_ACTS);
    RN(cpu_point_tensors)(g->dacts_mem, gsz, (real **)&g->dacts, LLAMA_NUM_ACTS);
    return MODEL_OK;
}

void RN(llama_release)(struct llama *g) {
    if (!g) return;
    free(g->params_mem); free(g->grads_mem); free(g->m_mem); free(g->v_mem);
    free(g->acts_mem); free(g->dacts_mem); free(g->losses); free(g->datt);
    memset(g, 0, sizeof *g);
}

double RN(llama_forward)(struct llama *g, const int *inputs, const int *targets, int B, int T, real dloss,
                         double *attn_dist) {
    const struct model_config *cf = &g->cfg;
    int L = cf->L, C = cf->C, H = cf->H;
    double theta = cf->rope_theta;
    size_t BTa = (size_t)cf->B * cf->T;
    struct llama_tensors *p = &g->params;
    struct llama_acts *a = &g->acts;
    g->fwd_B = B; g->fwd_T = T; g->fwd_inputs = inputs;
    RN(cpu_embedding_forward)(a->encoded, inputs, p->wte, B, T, C);
    for (int l = 0; l < L; l++) {
        int NH = cf->heads[l];
        real *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTa * C;
        size_t o1 = l * BTa * C, o3 = o1 * 3, oh = l * BTa * H, om = l * BTa;
        real *qkv = a->qkv + o3, *att = a->att + g->att_off[l];
        RN(cpu_rmsnorm_forward)(a->attnorm + o1, a->attnorm_rstd + om, residual, p->attnormw + l * C, B, T, C);
        RN(cpu_matmul_forward)(qkv, a->attnorm + o1, p->qkvw + (size_t)l * 3 * C * C, NULL, B, T, C, 3 * C);
        RN(cpu_rope_forward)(qkv, B, T, C, NH, theta);
        RN(cpu_attention_forward)(a->atty + o1, att, qkv, B, T, C, NH);
        if (attn_dist) attn_dist[l] += RN(cpu_attention_distance)(att, B, T, NH);
        RN(cpu_matmul_forward)(a->attproj + o1, a->atty + o1, p->attprojw + (size_t)l * C * C, NULL, B, T, C, C);
        RN(cpu_residual_forward)(a->residual2 + o1, residual, a->attproj + o1, (size_t)B * T * C);
        RN(cpu_rmsnorm_forward)(a->mlpnorm + o1, a->mlpnorm_rstd + om, a->residual2 + o1, p->mlpnormw + l * C, B, T, C);
        RN(cpu_matmul_forward)(a->fch + oh, a->mlpnorm + o1, p->fcw + (size_t)l * H * C, NULL, B, T, C, H);
        RN(cpu_matmul_forward)(a->fcg + oh, a->mlpnorm + o1, p->fcgw + (size_t)l * H * C, NULL, B, T, C, H);
        RN(cpu_swiglu_forward)(a->fch_swiglu + oh, a->fch + oh, a->fcg + oh, (size_t)B * T * H);
        RN(cpu_matmul_forward)(a->fcproj + o1, a->fch_swiglu + oh, p->fcprojw + (size_t)l * C * H, NULL, B, T, H, C);
        RN(cpu_residual_forward)(a->residual3 + o1, a->residual2 + o1, a->fcproj + o1, (size_t)B * T * C);
    }
    real *last = a->residual3 + (L - 1) * BTa * C;
    RN(cpu_rmsnorm_forward)(a->normf, a->normf_rstd, last, p->normfw, B, T, C);
    RN(cpu_matmul_forward)(a->logits, a->normf, p->wte, NULL, B, T, C, cf->Vp);
    return RN(cpu_crossentropy_softmax)(a->logits, g->losses, targets, B, T, cf->V, cf->Vp, dloss);
}

void RN(llama_zero_grad)(struct llama *g) {
    memset(g->grads_mem, 0, g->num_params * sizeof(real));
}

void RN(llama_backward)(struct llama *g) {
    const struct model_config *cf = &g->cfg;
    int L = cf->L, C = cf->C, H = cf->H, B = g->fwd_B, T = g->fwd_T;
    double theta = cf->rope_theta;
    size_t BTa = (size_t)cf->B * cf->T, BTC = (size_t)B * T * C, BTH = (size_t)B * T * H;
    struct llama_tensors *p = &g->params, *dp = &g->grads;
    struct llama_acts *a = &g->acts, *da = &g->dacts;
    memset(da->encoded, 0, BTC * sizeof(real));
    for (int l = 0; l < L; l++) {
        size_t o1 = l * BTa * C, oh = l * BTa * H;
        memset(da->attnorm + o1, 0, BTC * sizeof(real));
        memset(da->qkv + 3 * o1, 0, 3 * BTC * sizeof(real));
        memset(da->atty + o1, 0, BTC * sizeof(real));
        memset(da->attproj + o1, 0, BTC * sizeof(real));
        memset(da->residual2 + o1, 0, BTC * sizeof(real));
        memset(da->mlpnorm + o1, 0, BTC * sizeof(real));
        memset(da->fch + oh, 0, BTH * sizeof(real));
        memset(da->fcg + oh, 0, BTH * sizeof(real));
        memset(da->fch_swiglu + oh, 0, BTH * sizeof(real));
        memset(da->fcproj + o1, 0, BTC * sizeof(real));
        memset(da->residual3 + o1, 0, BTC * sizeof(real));
    }
    memset(da->normf, 0, BTC * sizeof(real));

    RN(cpu_matmul_backward)(da->normf, dp->wte, NULL, a->logits, a->normf, p->wte, B, T, C, cf->Vp);
    real *last = a->residual3 + (L - 1) * BTa * C, *dlast = da->residual3 + (L - 1) * BTa * C;
    RN(cpu_rmsnorm_backward)(dlast, dp->normfw, da->normf, last, p->normfw, a->normf_rstd, B, T, C);
    for (int l = L - 1; l >= 0; l--) {
        int NH = cf->heads[l];
        real *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTa * C;
        real *dresidual = l == 0 ? da->encoded : da->residual3 + (l - 1) * BTa * C;
        size_t o1 = l * BTa * C, o3 = 3 * o1, oh = l * BTa * H, om = l * BTa;
        RN(cpu_residual_backward)(da->residual2 + o1, da->fcproj + o1, da->residual3 + o1, BTC);
        RN(cpu_matmul_backward)(da->fch_swiglu + oh, dp->fcprojw + (size_t)l * C * H, NULL, da->fcproj + o1,
                                a->fch_swiglu + oh, p->fcprojw + (size_t)l * C * H, B, T, H, C);
        RN(cpu_swiglu_backward)(da->fch + oh, da->fcg + oh, da->fch_swiglu + oh, a->fch + oh, a->fcg + oh, BTH);
        RN(cpu_matmul_backward)(da->mlpnorm + o1, dp->fcw + (size_t)l * H * C, NULL, da->fch + oh, a->mlpnorm + o1,
                                p->fcw + (size_t)l * H * C, B, T, C, H);
        RN(cpu_matmul_backward)(da->mlpnorm + o1, dp->fcgw + (size_t)l * H * C, NULL, da->fcg + oh, a->mlpnorm + o1,
                                p->fcgw + (size_t)l * H * C, B, T, C, H);
        RN(cpu_rmsnorm_backward)(da->residual2 + o1, dp->mlpnormw + l * C, da->mlpnorm + o1, a->residual2 + o1,
                                 p->mlpnormw + l * C, a->mlpnorm_rstd + om, B, T, C);
        RN(cpu_residual_backward)(dresidual, da->attproj + o1, da->residual2 + o1, BTC);
        RN(cpu_matmul_backward)(da->atty + o1, dp->attprojw + (size_t)l * C * C, NULL, da->attproj + o1,
                                a->atty + o1, p->attprojw + (size_t)l * C * C, B, T, C, C);
        RN(cpu_attention_backward)(da->qkv + o3, g->datt, da->atty + o1, a->qkv + o3, a->att + g->att_off[l],
                                   B, T, C, NH);
        RN(cpu_rope_backward)(da->qkv + o3, B, T, C, NH, theta);
        RN(cpu_matmul_backward)(da->attnorm + o1, dp->qkvw + (size_t)l * 3 * C * C, NULL, da->qkv + o3,
                                a->attnorm + o1, p->qkvw + (size_t)l * 3 * C * C, B, T, C, 3 * C);
        RN(cpu_rmsnorm_backward)(dresidual, dp->attnormw + l * C, da->attnorm + o1, residual, p->attnormw + l * C,
                                 a->attnorm_rstd + om, B, T, C);
    }
    RN(cpu_embedding_backward)(dp->wte, da->encoded, g->fwd_inputs, B, T, C);
}

double RN(llama_grad_norm)(struct llama *g) {
    return sqrt(RN(cpu_sumsq)(g->grads_mem, g->num_params));
}

void RN(llama_update)(struct llama *g, const struct adamw_params *hp, int t, real grad_scale) {
    size_t off = 0;
    for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
        size_t n = g->param_sizes[i];
        RN(cpu_adamw)(g->params_mem + off, g->grads_mem + off, g->m_mem + off, g->v_mem + off, n, hp->lr,
                      hp->beta1, hp->beta2, hp->eps, model_arch_tensor_decays(&g->cfg, i) ? hp->weight_decay : 0.0f,
                      (float)grad_scale, t);
        off += n;
    }
}
