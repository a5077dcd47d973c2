/* gpt2.c — GPT-2 forward, backward and AdamW on the CPU, with h_l heads in layer l.
 *
 * Design: llm.c's structure (one block per tensor group, a pointer table over it, layer l's slice at
 * l·(B·T·width)), re-derived for a per-layer schedule: the only schedule-dependent piece is the attention
 * probability buffer, whose layers have different sizes (B·h_l·T·T) and therefore explicit offsets
 * att_off[l]. Parameters never depend on the schedule. The fused classifier turns logits into dlogits in
 * place during a training forward, so probabilities are never kept. Activation gradients have their own
 * block (zeroed per backward); attention's dA scratch is one buffer sized for the largest layer.
 */
#include "gpt2.h"
#include "cpu_kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void act_sizes(const struct model_config *c, size_t *s, size_t *att_off, int for_grads) {
    size_t L = c->L, BT = (size_t)c->B * c->T, C = c->C;
    size_t att = 0;
    for (int l = 0; l < c->L; l++) { if (att_off) att_off[l] = att; att += (size_t)c->B * c->heads[l] * c->T * c->T; }
    size_t v[GPT2_NUM_ACTS] = {
        BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C, for_grads ? 0 : att,
        L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT, L * BT * 4 * C, L * BT * 4 * C,
        L * BT * C, L * BT * C, BT * C, BT, BT, for_grads ? 0 : BT * c->Vp, BT,
    };
    memcpy(s, v, sizeof v);
}



int RN(gpt2_init)(struct gpt2 *g, const struct model_config *cfg) {
    memset(g, 0, sizeof *g);
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS || cfg->C < 1 || cfg->V < 1 || cfg->Vp < cfg->V ||
        cfg->maxT < 1 || cfg->B < 1 || cfg->T < 1 || cfg->T > cfg->maxT) return MODEL_EINVAL;
    int maxh = 0;
    for (int l = 0; l < cfg->L; l++) {
        if (cfg->heads[l] < 1 || cfg->C % cfg->heads[l]) return MODEL_EINVAL;
        if (cfg->heads[l] > maxh) maxh = cfg->heads[l];
    }
    g->cfg = *cfg;
    model_param_sizes(cfg, g->param_sizes);
    g->num_params = model_num_params(cfg);
    size_t gsz[GPT2_NUM_ACTS];
    act_sizes(cfg, g->act_sizes, g->att_off, 0);
    act_sizes(cfg, gsz, NULL, 1);
    g->num_acts = 0;
    size_t ngacts = 0;
    for (int i = 0; i < GPT2_NUM_ACTS; i++) { g->num_acts += g->act_sizes[i]; ngacts += gsz[i]; }
    size_t np = g->num_params;
    int bad = RN(cpu_model_alloc)(np, g->num_acts, ngacts, &g->params_mem, &g->grads_mem, &g->m_mem, &g->v_mem,
                                  &g->acts_mem, &g->dacts_mem);
    g->datt = calloc((size_t)cfg->B * maxh * cfg->T * cfg->T, sizeof(real));
    if (bad || !g->datt) {
        RN(gpt2_release)(g);
        return MODEL_ENOMEM;
    }
    RN(cpu_point_tensors)(g->params_mem, g->param_sizes, (real **)&g->params, MODEL_NUM_TENSORS);
    RN(cpu_point_tensors)(g->grads_mem, g->param_sizes, (real **)&g->grads, MODEL_NUM_TENSORS);
    RN(cpu_point_tensors)(g->acts_mem, g->act_sizes, (real **)&g->acts, GPT2_NUM_ACTS);
    RN(cpu_point_tensors)(g->dacts_mem, gsz, (real **)&g->dacts, GPT2_NUM_ACTS);
    return MODEL_OK;
}

void RN(gpt2_release)(struct gpt2 *g) {
    if (!g) return;
    free(g->params_mem); free(g->grads_mem); free(g->m_mem); free(g->v_mem);
    free(g->acts_mem); free(g->dacts_mem); free(g->datt);
    memset(g, 0, sizeof *g);
}

double RN(gpt2_forward)(struct gpt2 *g, const int *inputs, const int *targets, int B, int T, real dloss,
                        double *attn_dist) {
    const struct model_config *cf = &g->cfg;
    int L = cf->L, C = cf->C;
    size_t BTa = (size_t)cf->B * cf->T;     /* layer stride (allocated shape) */
    struct gpt2_tensors *p = &g->params;
    struct gpt2_acts *a = &g->acts;
    g->fwd_B = B; g->fwd_T = T; g->fwd_inputs = inputs;
    RN(cpu_encoder_forward)(a->encoded, inputs, p->wte, p->wpe, B, T, C);
    for (int l = 0; l < L; l++) {
        int NH = cf->heads[l];
        real *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTa * C;
        real *ln1 = a->ln1 + l * BTa * C, *ln1m = a->ln1_mean + l * BTa, *ln1r = a->ln1_rstd + l * BTa;
        real *qkv = a->qkv + l * BTa * 3 * C, *atty = a->atty + l * BTa * C, *att = a->att + g->att_off[l];
        real *attproj = a->attproj + l * BTa * C, *res2 = a->residual2 + l * BTa * C;
        real *ln2 = a->ln2 + l * BTa * C, *ln2m = a->ln2_mean + l * BTa, *ln2r = a->ln2_rstd + l * BTa;
        real *fch = a->fch + l * BTa * 4 * C, *gelu = a->fch_gelu + l * BTa * 4 * C;
        real *fcproj = a->fcproj + l * BTa * C, *res3 = a->residual3 + l * BTa * C;
        RN(cpu_layernorm_forward)(ln1, ln1m, ln1r, residual, p->ln1w + l * C, p->ln1b + l * C, B, T, C);
        RN(cpu_matmul_forward)(qkv, ln1, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + l * 3 * C, B, T, C, 3 * C);
        RN(cpu_attention_forward)(atty, att, qkv, B, T, C, NH);
        if (attn_dist) attn_dist[l] += RN(cpu_attention_distance)(att, B, T, NH);
        RN(cpu_matmul_forward)(attproj, atty, p->attprojw + (size_t)l * C * C, p->attprojb + l * C, B, T, C, C);
        RN(cpu_residual_forward)(res2, residual, attproj, (size_t)B * T * C);
        RN(cpu_layernorm_forward)(ln2, ln2m, ln2r, res2, p->ln2w + l * C, p->ln2b + l * C, B, T, C);
        RN(cpu_matmul_forward)(fch, ln2, p->fcw + (size_t)l * 4 * C * C, p->fcb + l * 4 * C, B, T, C, 4 * C);
        RN(cpu_gelu_forward)(gelu, fch, (size_t)B * T * 4 * C);
        RN(cpu_matmul_forward)(fcproj, gelu, p->fcprojw + (size_t)l * 4 * C * C, p->fcprojb + l * C, B, T, 4 * C, C);
        RN(cpu_residual_forward)(res3, res2, fcproj, (size_t)B * T * C);
    }
    real *last = a->residual3 + (L - 1) * BTa * C;
    RN(cpu_layernorm_forward)(a->lnf, a->lnf_mean, a->lnf_rstd, last, p->lnfw, p->lnfb, B, T, C);
    RN(cpu_matmul_forward)(a->logits, a->lnf, p->wte, NULL, B, T, C, cf->Vp);
    return RN(cpu_crossentropy_softmax)(a->logits, a->losses, targets, B, T, cf->V, cf->Vp, dloss);
}

void RN(gpt2_zero_grad)(struct gpt2 *g) {
    memset(g->grads_mem, 0, g->num_params * sizeof(real));
}

void RN(gpt2_backward)(struct gpt2 *g) {
    const struct model_config *cf = &g->cfg;
    int L = cf->L, C = cf->C, B = g->fwd_B, T = g->fwd_T;
    size_t BTa = (size_t)cf->B * cf->T, BTC = (size_t)B * T * C;
    struct gpt2_tensors *p = &g->params, *dp = &g->grads;
    struct gpt2_acts *a = &g->acts, *da = &g->dacts;
    /* zero the activation gradients that will be used (current B, T) */
    memset(da->encoded, 0, BTC * sizeof(real));
    for (int l = 0; l < L; l++) {
        memset(da->ln1 + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->qkv + l * BTa * 3 * C, 0, 3 * BTC * sizeof(real));
        memset(da->atty + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->attproj + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->residual2 + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->ln2 + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->fch + l * BTa * 4 * C, 0, 4 * BTC * sizeof(real));
        memset(da->fch_gelu + l * BTa * 4 * C, 0, 4 * BTC * sizeof(real));
        memset(da->fcproj + l * BTa * C, 0, BTC * sizeof(real));
        memset(da->residual3 + l * BTa * C, 0, BTC * sizeof(real));
    }
    memset(da->lnf, 0, BTC * sizeof(real));

    /* classifier (tied to wte): logits already hold dlogits */
    RN(cpu_matmul_backward)(da->lnf, dp->wte, NULL, a->logits, a->lnf, p->wte, B, T, C, cf->Vp);
    real *last = a->residual3 + (L - 1) * BTa * C, *dlast = da->residual3 + (L - 1) * BTa * C;
    RN(cpu_layernorm_backward)(dlast, dp->lnfw, dp->lnfb, da->lnf, last, p->lnfw, a->lnf_mean, a->lnf_rstd, B, T, C);
    for (int l = L - 1; l >= 0; l--) {
        int NH = cf->heads[l];
        real *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTa * C;
        real *dresidual = l == 0 ? da->encoded : da->residual3 + (l - 1) * BTa * C;
        size_t o1 = l * BTa * C, o3 = l * BTa * 3 * C, o4 = l * BTa * 4 * C, om = l * BTa;
        RN(cpu_residual_backward)(da->residual2 + o1, da->fcproj + o1, da->residual3 + o1, BTC);
        RN(cpu_matmul_backward)(da->fch_gelu + o4, dp->fcprojw + (size_t)l * 4 * C * C, dp->fcprojb + l * C,
                                da->fcproj + o1, a->fch_gelu + o4, p->fcprojw + (size_t)l * 4 * C * C, B, T, 4 * C, C);
        RN(cpu_gelu_backward)(da->fch + o4, a->fch + o4, da->fch_gelu + o4, 4 * BTC);
        RN(cpu_matmul_backward)(da->ln2 + o1, dp->fcw + (size_t)l * 4 * C * C, dp->fcb + l * 4 * C,
                                da->fch + o4, a->ln2 + o1, p->fcw + (size_t)l * 4 * C * C, B, T, C, 4 * C);
        RN(cpu_layernorm_backward)(da->residual2 + o1, dp->ln2w + l * C, dp->ln2b + l * C, da->ln2 + o1,
                                   a->residual2 + o1, p->ln2w + l * C, a->ln2_mean + om, a->ln2_rstd + om, B, T, C);
        RN(cpu_residual_backward)(dresidual, da->attproj + o1, da->residual2 + o1, BTC);
        RN(cpu_matmul_backward)(da->atty + o1, dp->attprojw + (size_t)l * C * C, dp->attprojb + l * C,
                                da->attproj + o1, a->atty + o1, p->attprojw + (size_t)l * C * C, B, T, C, C);
        RN(cpu_attention_backward)(da->qkv + o3, g->datt, da->atty + o1, a->qkv + o3, a->att + g->att_off[l],
                                   B, T, C, NH);
        RN(cpu_matmul_backward)(da->ln1 + o1, dp->qkvw + (size_t)l * 3 * C * C, dp->qkvb + l * 3 * C,
                                da->qkv + o3, a->ln1 + o1, p->qkvw + (size_t)l * 3 * C * C, B, T, C, 3 * C);
        RN(cpu_layernorm_backward)(dresidual, dp->ln1w + l * C, dp->ln1b + l * C, da->ln1 + o1, residual,
                                   p->ln1w + l * C, a->ln1_mean + om, a->ln1_rstd + om, B, T, C);
    }
    RN(cpu_encoder_backward)(dp->wte, dp->wpe, da->encoded, g->fwd_inputs, B, T, C);
}

double RN(gpt2_grad_norm)(struct gpt2 *g) {
    return sqrt(RN(cpu_sumsq)(g->grads_mem, g->num_params));
}

void RN(gpt2_update)(struct gpt2 *g, const struct adamw_params *hp, int t, real grad_scale) {
    size_t off = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        size_t n = g->param_sizes[i];
        RN(cpu_adamw)(g->params_mem + off, g->grads_mem + off, g->m_mem + off, g->v_mem + off, n, hp->lr,
                      hp->beta1, hp->beta2, hp->eps, model_tensor_decays(i) ? hp->weight_decay : 0.0f,
                      (float)grad_scale, t);
        off += n;
    }
}
