/* kernels/cuda/model_cuda_mem.cu — the memory plan both CUDA backends share (see model_cuda_mem.cuh).
 *
 * Design: each backend keeps one device allocation per tensor group (parameters with their float32 master,
 * gradients and AdamW moments; activations; activation-gradient scratch) and a pointer table into it. What
 * does not depend on the architecture lives here once: the padded parameter layout (so every tensor starts on
 * a 256-byte boundary for the vector kernels and cuBLASLt), the fused-or-materialised attention plan per
 * layer, the carving of a group, the packed ↔ padded copies of a float32 group, and the token check. Both
 * models derive from mc_model (C++ inheritance, no virtual functions: the base sits at the start), so the
 * model_ops entries that only touch the parameter group are written once, here.
 */
#include "cuda_common.cuh"
#include "model_cuda_mem.cuh"
#include <stdio.h>
#include <stdlib.h>

size_t mc_al256b(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

int mc_head_rows(const struct model_config *cfg, int B, int T) {
    const long N = (long)B * T;
    long rows = (long)(MC_HEAD_BYTES / ((size_t)cfg->Vp * sizeof(floatX)));
    const char *e = getenv("PRISM_CUDA_HEAD_CHUNK");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        rows = v > 0 ? v : N;
    }
    if (rows > N) rows = N;
    return rows < 1 ? 1 : (int)rows;
}

void mc_param_layout(const struct model_config *cfg, size_t *sizes, size_t *offs, size_t *nparams, size_t *npad) {
    model_param_sizes(cfg, sizes);
    size_t off = 0, n = 0;
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        offs[i] = off;
        off += (sizes[i] + 127) & ~(size_t)127;   /* 128 elements: 256 B in bf16, 512 B in float32 */
        n += sizes[i];
    }
    *nparams = n;
    *npad = off;
}

size_t mc_attention_plan(const struct model_config *cfg, int *fused, size_t *att_off, int *any_mat) {
    size_t att = 0;
    *any_mat = 0;
    for (int l = 0; l < cfg->L; l++) {
        fused[l] = prism_cuda_flash_attention_supports(cfg->C / cfg->heads[l]);
        att_off[l] = att;
        if (!fused[l]) { att += (size_t)cfg->B * cfg->heads[l] * cfg->T * cfg->T; *any_mat = 1; }
    }
    return att;
}

size_t mc_group_bytes(const size_t *bytes, int n) {
    size_t tot = 0;
    for (int i = 0; i < n; i++) tot += mc_al256b(bytes[i]);
    return tot;
}

void mc_carve(void *mem, const size_t *bytes, void **ptrs, int n) {
    char *p = (char *)mem;
    for (int i = 0; i < n; i++) { ptrs[i] = p; p += mc_al256b(bytes[i]); }
}

int mc_group_download(float *dst, const float *dev, const size_t *offs, const size_t *sizes, int n) {
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (prism_cuda_download(dst + o, dev + offs[i], sizes[i] * sizeof(float)) != 0) return -1;
        o += sizes[i];
    }
    return 0;
}

int mc_group_upload(float *dev, const float *src, const size_t *offs, const size_t *sizes, int n) {
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (prism_cuda_upload(dev + offs[i], src + o, sizes[i] * sizeof(float)) != 0) return -1;
        o += sizes[i];
    }
    return 0;
}

int mc_check_batch(const struct model_config *cfg, const int *in, const int *tg, int B, int T, char *err,
                   size_t errlen) {
    if (B < 1 || T < 1 || B > cfg->B || T > cfg->T) {
        snprintf(err, errlen, "micro-batch %dx%d exceeds the allocated %dx%d", B, T, cfg->B, cfg->T);
        return MODEL_EINVAL;
    }
    size_t n = (size_t)B * T;
    for (size_t i = 0; i < n; i++) {
        if (in[i] < 0 || in[i] >= cfg->V || tg[i] < 0 || tg[i] >= cfg->V) {
            snprintf(err, errlen, "token id %d at position %zu is outside the vocabulary [0, %d)",
                     in[i] < 0 || in[i] >= cfg->V ? in[i] : tg[i], i, cfg->V);
            return MODEL_EINVAL;
        }
    }
    return 0;
}

/* ---- the parameter group of an mc_model ------------------------------------------------------------ */

int mc_fail(mc_model *cm, const char *what) {
    snprintf(cm->err, sizeof cm->err, "CUDA %s: %s", what, prism_cuda_last_error());
    return MODEL_EDEVICE;
}

int mc_bind(mc_model *cm) {
    char e[300];
    if (prism_cuda_init(cm->device, e, sizeof e) != 0) {
        snprintf(cm->err, sizeof cm->err, "%s", e);
        return MODEL_EDEVICE;
    }
    return 0;
}

void mc_free(model *mp) {
    mc_model *cm = (mc_model *)mp;
    if (!cm) return;
    prism_cuda_graph_free(cm->graph);
    prism_cuda_free(cm->pmem);
    prism_cuda_free(cm->amem);
    prism_cuda_free(cm->dmem);
    prism_cuda_free(cm->scratch);
    prism_cuda_free(cm->tok);
    free(cm->h_losses);
    free(cm->h_rows);
    free(cm);
}

const char *mc_error(model *mp) { return ((mc_model *)mp)->err; }

/* host (llm.c order, packed) <-> device (aligned) for one float32 group */
static int mc_get_group(mc_model *cm, const float *dev, float *dst) {
    int rc = mc_bind(cm);
    if (rc) return rc;
    if (mc_group_download(dst, dev, cm->offs, cm->sizes, cm->ntensors)) return mc_fail(cm, "download");
    return 0;
}

static int mc_set_group(mc_model *cm, float *dev, const float *src) {
    int rc = mc_bind(cm);
    if (rc) return rc;
    if (mc_group_upload(dev, src, cm->offs, cm->sizes, cm->ntensors)) return mc_fail(cm, "upload");
    return 0;
}

int mc_get_params(model *mp, float *dst) { mc_model *cm = (mc_model *)mp; return mc_get_group(cm, cm->master, dst); }

int mc_set_params(model *mp, const float *src) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_set_group(cm, cm->master, src);
    if (rc) return rc;
    if (prism_cuda_f32_to_x(cm->px, cm->master, cm->npad)) return mc_fail(cm, "params to working precision");
    if (prism_cuda_sync()) return mc_fail(cm, "set_params");
    return 0;
}

int mc_get_opt(model *mp, float *mo, float *vo) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_get_group(cm, cm->m, mo);
    return rc ? rc : mc_get_group(cm, cm->v, vo);
}

int mc_set_opt(model *mp, const float *mi, const float *vi) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_set_group(cm, cm->m, mi);
    return rc ? rc : mc_set_group(cm, cm->v, vi);
}

int mc_get_grads(model *mp, float *dst) { mc_model *cm = (mc_model *)mp; return mc_get_group(cm, cm->grads, dst); }

/* ---- the update path (both models) ----------------------------------------------------------------------- */
size_t mc_param_bytes(size_t npad) {
    return 4 * mc_al256b(npad * sizeof(float)) + mc_al256b(npad * sizeof(floatX)) + mc_al256b(sizeof(float));
}

void mc_carve_params(mc_model *cm) {
    char *p = (char *)cm->pmem;
    const size_t f = mc_al256b(cm->npad * sizeof(float));
    cm->master = (float *)p; p += f;
    cm->grads = (float *)p; p += f;
    cm->m = (float *)p; p += f;
    cm->v = (float *)p; p += f;
    cm->px = (floatX *)p; p += mc_al256b(cm->npad * sizeof(floatX));
    cm->norm_dev = (float *)p;
}

int mc_zero_grad(model *mp) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_bind(cm);
    if (rc) return rc;
    if (cm->grads_zero) return 0;   /* update (or the last zero_grad) left them zero */
    if (prism_cuda_memset0(cm->grads, cm->npad * sizeof(float))) return mc_fail(cm, "zero_grad");
    cm->grads_zero = 1;
    return 0;
}

int mc_update(model *mp, const struct adamw_params *hp, int t, float *grad_norm) {
    mc_model *cm = (mc_model *)mp;
    float norm = 0;
    int rc = mc_bind(cm);
    if (rc) return rc;
    size_t bounds[MODEL_NUM_TENSORS + 1];
    unsigned decay = 0;
    for (int i = 0; i < cm->ntensors; i++) {
        bounds[i] = cm->offs[i];
        if (model_arch_tensor_decays(&cm->cfg, i)) decay |= 1u << i;
    }
    bounds[cm->ntensors] = cm->npad;   /* each tensor with its alignment gap: zeros that stay zero */
    /* like the CPU backend, a non-finite norm is not an error here: the trainer sees the loss go NaN */
    if (prism_cuda_grad_norm_device(cm->grads, cm->npad, cm->norm_dev)) return mc_fail(cm, "grad_norm");
    cm->grads_zero = 0;
    if (prism_cuda_adamw_tensors(cm->master, cm->px, cm->grads, cm->m, cm->v, bounds, cm->ntensors, decay, hp->lr,
                                 hp->beta1, hp->beta2, hp->eps, hp->weight_decay, t, cm->norm_dev, hp->grad_clip, 1))
        return mc_fail(cm, "adamw");
    if (prism_cuda_download(&norm, cm->norm_dev, sizeof norm)) return mc_fail(cm, "update");   /* the one sync */
    cm->grads_zero = 1;
    if (grad_norm) *grad_norm = norm;
    return 0;
}
