/* model_cpu.c — the CPU backend behind model.h: a thin adapter from the model_ops vtable to gpt2.c
 * (float32). Host arrays are the model's own layout, so get/set are memcpy; the gradient norm and the
 * clipping factor are computed here and folded into AdamW's gradient scale (no extra pass over grads).
 */
#include "model.h"
#include "gpt2.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_model {
    struct gpt2 g;
    char err[512];
};

static int cpu_create(const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    *out = NULL;
    struct cpu_model *cm = calloc(1, sizeof *cm);
    if (!cm) { if (err) snprintf(err, errlen, "out of memory allocating the model"); return MODEL_ENOMEM; }
    int rc = gpt2_init(&cm->g, cfg);
    if (rc == MODEL_ENOMEM) {
        size_t np = model_num_params(cfg);
        if (err) snprintf(err, errlen, "out of memory: %zu parameters with activations for B=%d T=%d do not fit in host memory",
                          np, cfg->B, cfg->T);
        free(cm);
        return rc;
    }
    if (rc) {
        if (err) snprintf(err, errlen, "invalid model configuration (L=%d C=%d V=%d Vp=%d maxT=%d B=%d T=%d; every head count must divide C)",
                          cfg->L, cfg->C, cfg->V, cfg->Vp, cfg->maxT, cfg->B, cfg->T);
        free(cm);
        return rc;
    }
    *out = (model *)cm;
    return MODEL_OK;
}

static void cpu_free(model *m) {
    struct cpu_model *cm = (struct cpu_model *)m;
    if (!cm) return;
    gpt2_release(&cm->g);
    free(cm);
}

static const char *cpu_error(model *m) { return ((struct cpu_model *)m)->err; }

static int cpu_get_params(model *m, float *dst) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    memcpy(dst, g->params_mem, g->num_params * sizeof(float));
    return 0;
}
static int cpu_set_params(model *m, const float *src) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    memcpy(g->params_mem, src, g->num_params * sizeof(float));
    return 0;
}
static int cpu_get_opt(model *m, float *mo, float *vo) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    memcpy(mo, g->m_mem, g->num_params * sizeof(float));
    memcpy(vo, g->v_mem, g->num_params * sizeof(float));
    return 0;
}
static int cpu_set_opt(model *m, const float *mi, const float *vi) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    memcpy(g->m_mem, mi, g->num_params * sizeof(float));
    memcpy(g->v_mem, vi, g->num_params * sizeof(float));
    return 0;
}
static int cpu_get_grads(model *m, float *dst) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    memcpy(dst, g->grads_mem, g->num_params * sizeof(float));
    return 0;
}
static int cpu_zero_grad(model *m) { gpt2_zero_grad(&((struct cpu_model *)m)->g); return 0; }

static int check_shape(struct cpu_model *cm, int B, int T) {
    if (B < 1 || T < 1 || B > cm->g.cfg.B || T > cm->g.cfg.T) {
        snprintf(cm->err, sizeof cm->err, "micro-batch %dx%d exceeds the allocated %dx%d", B, T, cm->g.cfg.B, cm->g.cfg.T);
        return MODEL_EINVAL;
    }
    return 0;
}

static int cpu_forward_backward(model *m, const int *in, const int *tg, int B, int T, float loss_scale, float *loss) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    *loss = (float)gpt2_forward(&cm->g, in, tg, B, T, loss_scale / ((float)B * T), NULL);
    gpt2_backward(&cm->g);
    return 0;
}

static int cpu_forward_loss(model *m, const int *in, const int *tg, int B, int T, float *loss, double *attn) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    *loss = (float)gpt2_forward(&cm->g, in, tg, B, T, 0.0f, attn);
    return 0;
}

static int cpu_forward_losses(model *m, const int *in, const int *tg, int B, int T, float *losses) {
    struct cpu_model *cm = (struct cpu_model *)m;
    int rc = check_shape(cm, B, T);
    if (rc) return rc;
    gpt2_forward(&cm->g, in, tg, B, T, 0.0f, NULL);
    memcpy(losses, cm->g.acts.losses, (size_t)B * T * sizeof(float));
    return 0;
}

static int cpu_update(model *m, const struct adamw_params *hp, int t, float *grad_norm) {
    struct gpt2 *g = &((struct cpu_model *)m)->g;
    double norm = gpt2_grad_norm(g);
    float scale = 1.0f;
    if (hp->grad_clip > 0 && norm > hp->grad_clip) scale = (float)(hp->grad_clip / norm);
    gpt2_update(g, hp, t, scale);
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
