/* model_cpu.c — the CPU backend behind model.h: a thin adapter from the model_ops vtable to gpt2.c or
 * llama.c (float32, by cfg->arch). Host arrays are the model's own layout, so get/set are memcpy; the gradient norm and the
 * clipping factor are computed here and folded into AdamW's gradient scale (no extra pass over grads).
 */
#include "model.h"
#include "gpt2.h"
#include "llama.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_model {
    struct gpt2 g;
    struct llama lm;     /* used instead of g when arch is MODEL_ARCH_LLAMA */
    int arch;
    char err[512];
};

/* The float blocks get/set copy, whichever model is inside. */
struct cpu_blocks { float *p, *g, *m, *v; size_t n; };
static struct cpu_blocks cpu_blocks_of(model *m) {
    struct cpu_model *cm = (struct cpu_model *)m;
    if (cm->arch == MODEL_ARCH_LLAMA)
        return (struct cpu_blocks){cm->lm.params_mem, cm->lm.grads_mem, cm->lm.m_mem, cm->lm.v_mem, cm->lm.num_params};
    return (struct cpu_blocks){cm->g.params_mem, cm->g.grads_mem, cm->g.m_mem, cm->g.v_mem, cm->g.num_params};
}

static int cpu_create(const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    struct cpu_model *cm = calloc(1, sizeof *cm);
    if (!cm) { if (err) snprintf(err, errlen, "out of memory allocating the model"); return MODEL_ENOMEM; }
    cm->arch = cfg->arch;
    int rc = cfg->arch == MODEL_ARCH_LLAMA ? llama_init(&cm->lm, cfg) : cfg->arch == MODEL_ARCH_GPT2 ? gpt2_init(&cm->g, cfg)
                                                                                                 : MODEL_EINVAL;
    if (rc == MODEL_ENOMEM) {
        size_t np = model_num_params(cfg);
        if (err) snprintf(err, errlen, "out of memory: %zu parameters with activations for B=%d T=%d do not fit in host memory",
                          np, cfg->B, cfg->T);
        free(cm);
        return rc;
    }
    if (rc) {
        if (err) snprintf(err, errlen, "invalid %s model configuration (L=%d C=%d V=%d Vp=%d maxT=%d B=%d T=%d; every head count must divide C%s)",
                          model_arch_name(cfg->arch), cfg->L, cfg->C, cfg->V, cfg->Vp, cfg->maxT, cfg->B, cfg->T,
                          cfg->arch == MODEL_ARCH_LLAMA ? " and leave an even head size" : "");
        free(cm);
        return rc;
    }
    *out = (model *)cm;
    return MODEL_OK;
}

static void cpu_free(model *m) {
    struct cpu_model *cm = (struct cpu_model *)m;
    if (!cm) return;
    if (cm->arch == MODEL_ARCH_LLAMA) llama_release(&cm->lm); else gpt2_release(&cm->g);
    free(cm);
}

static const char *cpu_error(model *m) { return ((struct cpu_model *)m)->err; }

static int cpu_get_params(model *m, float *dst) {
    struct cpu_blocks b = cpu_blocks_of(m);
    memcpy(dst, b.p, b.n * sizeof(float));
    return 0;
}
static int cpu_set_params(model *m, const float *src) {
    struct cpu_blocks b = cpu_blocks_of(m);
    memcpy(b.p, src, b.n * sizeof(float));
    return 0;
}
static int cpu_get_opt(model *m, float *mo, float *vo) {
    struct cpu_blocks b = cpu_blocks_of(m);
    memcpy(mo, b.m, b.n * sizeof(float));
    memcpy(vo, b.v, b.n * sizeof(float));
    return 0;
}
static int cpu_set_opt(model *m, const float *mi, const float *vi) {
    struct cpu_blocks b = cpu_blocks_of(m);
    memcpy(b.m, mi, b.n * sizeof(float));
    memcpy(b.v, vi, b.n * sizeof(float));
    return 0;
}
static int cpu_get_grads(model *m, float *dst) {
    struct cpu_blocks b = cpu_blocks_of(m);
    memcpy(dst, b.g, b.n * sizeof(float));
    return 0;
}
static int cpu_zero_grad(model *m) {
    struct cpu_model *cm = (struct cpu_model *)m;
    if (cm->arch == MODEL_ARCH_LLAMA) llama_zero_grad(&cm->lm); else gpt2_zero_grad(&cm->g);
    return 0;
}

static int check_shape(struct cpu_model *cm, int B, int T) {
    const struct model_config *c = cm->arch == MODEL_ARCH_LLAMA ? &cm->lm.cfg : &cm->g.cfg;
    if (B < 1 || T < 1 || B > c->B || T > c->T) {
        snprintf(cm->err, sizeof cm->err, "micro-batch %dx%d exceeds the allocated %dx%d", B, T, c->B, c->T);
        return MODEL_EINVAL;
    }
    return 0;
}

static int cpu_forward_backward(model *m, const int *in, const int *tg, int B, int T, float loss_scale, float *loss) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    if (cm->arch == MODEL_ARCH_LLAMA) {
        *loss = (float)llama_forward(&cm->lm, in, tg, B, T, loss_scale / ((float)B * T), NULL);
        llama_backward(&cm->lm);
        return 0;
    }
    *loss = (float)gpt2_forward(&cm->g, in, tg, B, T, loss_scale / ((float)B * T), NULL);
    gpt2_backward(&cm->g);
    return 0;
}

static int cpu_forward_loss(model *m, const int *in, const int *tg, int B, int T, float *loss, double *attn) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    if (cm->arch == MODEL_ARCH_LLAMA) *loss = (float)llama_forward(&cm->lm, in, tg, B, T, 0.0f, attn);
    else *loss = (float)gpt2_forward(&cm->g, in, tg, B, T, 0.0f, attn);
    return 0;
}

static int cpu_forward_losses(model *m, const int *in, const int *tg, int B, int T, float *losses) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    if (cm->arch == MODEL_ARCH_LLAMA) {
        llama_forward(&cm->lm, in, tg, B, T, 0.0f, NULL);
        memcpy(losses, cm->lm.losses, (size_t)B * T * sizeof(float));
        return 0;
    }
    gpt2_forward(&cm->g, in, tg, B, T, 0.0f, NULL);
    memcpy(losses, cm->g.acts.losses, (size_t)B * T * sizeof(float));
    return 0;
}

static int cpu_update(model *m, const struct adamw_params *hp, int t, float *grad_norm) {
    struct cpu_model *cm = (struct cpu_model *)m;
    double norm = cm->arch == MODEL_ARCH_LLAMA ? llama_grad_norm(&cm->lm) : gpt2_grad_norm(&cm->g);
    float scale = 1.0f;
    if (hp->grad_clip > 0 && norm > hp->grad_clip) scale = (float)(hp->grad_clip / norm);
    if (cm->arch == MODEL_ARCH_LLAMA) llama_update(&cm->lm, hp, t, scale); else gpt2_update(&cm->g, hp, t, scale);
    if (grad_norm) *grad_norm = (float)norm;
    return 0;
}

const model_ops model_cpu_ops = {
    .name = "cpu",
    .create = cpu_create,
    .free = cpu_free,
    .error = cpu_error,
    .get_params = cpu_get_params,
    .set_params = cpu_set_params,
    .get_opt_state = cpu_get_opt,
    .set_opt_state = cpu_set_opt,
    .get_grads = cpu_get_grads,
    .zero_grad = cpu_zero_grad,
    .forward_backward = cpu_forward_backward,
    .forward_loss = cpu_forward_loss,
    .update = cpu_update,
    .forward_losses = cpu_forward_losses,
};
