/* kernels/cuda/model_cuda_base.cu — the part of a CUDA model that is not its forward/backward body (see
 * model_cuda_base.cuh): checks and creation, the entry points, the chunked LM head, the graph-captured step.
 *
 * Design. A micro-batch is: check the token ids (host), upload them, queue the body, download the per-token losses
 * and sum them on the host in a fixed order. Everything between the upload and the download only queues work on
 * the thread's stream, so a training step can be captured once into a CUDA graph and replayed: one launch instead
 * of ~20 per layer, the host free to prepare the next batch. Kernel arguments are fixed in a graph, so the step is
 * keyed by what they depend on (B, T, the loss scale, and the address of the thread's internal scratch); the first
 * step of a key runs eagerly (it grows the scratch and fills cuBLASLt's algorithm cache: neither may happen during
 * a capture), the second is captured. The LM head runs in chunks of rows: logits for head_rows rows, the
 * cross-entropy overwriting them with dlogits, and at once their products into dhead_in and wte's gradient, so the
 * B*T x Vp logits (1.6 GB at B=16, T=1024, bf16) never exist whole; the price is one more read and write of wte's
 * float32 gradient per extra chunk (docs/PERF.md).
 */
#include "cuda_common.cuh"
#include "model_cuda_base.cuh"
#include "attention_cudnn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mc_config_check(const struct model_config *cfg, int even_head, int max_c, const char *norm, int *maxh, char *err,
                    size_t errlen) {
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS || cfg->C < 1 || cfg->V < 1 || cfg->Vp < cfg->V || cfg->maxT < 1 ||
        cfg->B < 1 || cfg->T < 1 || cfg->T > cfg->maxT) {
        snprintf(err, errlen, "invalid model configuration (L=%d C=%d V=%d Vp=%d maxT=%d B=%d T=%d)", cfg->L, cfg->C,
                 cfg->V, cfg->Vp, cfg->maxT, cfg->B, cfg->T);
        return MODEL_EINVAL;
    }
    *maxh = 0;
    for (int l = 0; l < cfg->L; l++) {
        const int h = cfg->heads[l];
        if (h < 1 || cfg->C % h || (even_head && (cfg->C / h) % 2)) {
            snprintf(err, errlen, "layer %d: %d heads do not divide C=%d into a%s head size", l + 1, h, cfg->C,
                     even_head ? "n even" : "");
            return MODEL_EINVAL;
        }
        if (h > *maxh) *maxh = h;
    }
    if (cfg->C > max_c) {
        snprintf(err, errlen, "C=%d is larger than the CUDA %s backward supports (%d)", cfg->C, norm, max_c);
        return MODEL_EINVAL;
    }
    return 0;
}

mc_model *mc_new(const struct model_config *cfg, int device, size_t bytes, int ntensors, const mc_arch *arch,
                 int *rc, char *err, size_t errlen) {
    char ierr[400];
    if (prism_cuda_init(device, ierr, sizeof ierr) != 0) {
        snprintf(err, errlen, "%s", ierr);
        *rc = MODEL_EDEVICE;
        return NULL;
    }
    mc_model *cm = (mc_model *)calloc(1, bytes);
    if (!cm) { snprintf(err, errlen, "out of host memory"); *rc = MODEL_ENOMEM; return NULL; }
    cm->cfg = *cfg;
    cm->device = device;
    cm->ntensors = ntensors;
    cm->arch = arch;
    mc_param_layout(cfg, cm->sizes, cm->offs, &cm->nparams, &cm->npad);
    const char *g = getenv("PRISM_CUDA_GRAPH");
    cm->graph_on = !(g && *g == '0');
    return cm;
}

size_t mc_plan(mc_model *cm, int maxh, size_t *sbytes, size_t *dist_rows) {
    const struct model_config *cfg = &cm->cfg;
    int any_mat;
    const size_t att = mc_attention_plan(cfg, cm->fused, cm->att_off, &any_mat);
    cm->lse_layer = (size_t)cfg->B * maxh * cfg->T;
    cm->head_rows = mc_head_rows(cfg, cfg->B, cfg->T);
    *sbytes = prism_cuda_attention_scratch_bytes(any_mat ? cfg->B : 1, cfg->T, cfg->C, maxh);
    *dist_rows = prism_cuda_attention_distance_rows(cfg->B, cfg->T, maxh);
    return att;
}

int mc_create_groups(mc_model *cm, const size_t *abytes, int na, void **a, const size_t *dbytes, int nd, void **d,
                     size_t sbytes, size_t dist_rows, char *err, size_t errlen) {
    const struct model_config *cfg = &cm->cfg;
    const size_t BT = (size_t)cfg->B * cfg->T, atot = mc_group_bytes(abytes, na), dtot = mc_group_bytes(dbytes, nd);
    const size_t pbytes = mc_param_bytes(cm->npad);
    cm->pmem = prism_cuda_malloc(pbytes);
    cm->amem = prism_cuda_malloc(atot);
    cm->dmem = prism_cuda_malloc(dtot);
    cm->scratch = prism_cuda_malloc(sbytes);
    cm->tok = (int *)prism_cuda_malloc(2 * BT * sizeof(int));
    cm->h_losses = (float *)malloc(BT * sizeof(float));
    cm->h_rows = (float *)malloc((dist_rows ? dist_rows : 1) * sizeof(float));
    if (!cm->pmem || !cm->amem || !cm->dmem || !cm->scratch || !cm->tok || !cm->h_losses || !cm->h_rows) {
        snprintf(err, errlen, "out of GPU memory for %s L=%d C=%d Vp=%d B=%d T=%d (params %zu MiB, activations %zu MiB, "
                 "attention scratch %zu MiB): %s", cm->arch->name, cfg->L, cfg->C, cfg->Vp, cfg->B, cfg->T, pbytes >> 20,
                 atot >> 20, sbytes >> 20, prism_cuda_last_error());
        return MODEL_ENOMEM;
    }
    mc_carve_params(cm);
    mc_carve(cm->amem, abytes, a, na);
    mc_carve(cm->dmem, dbytes, d, nd);
    if (prism_cuda_memset0(cm->pmem, pbytes) || prism_cuda_memset0(cm->amem, atot) || prism_cuda_sync()) {
        snprintf(err, errlen, "CUDA memset: %s", prism_cuda_last_error());
        return MODEL_EDEVICE;
    }
    cm->grads_zero = 1;
    prism_cuda_mem_sample();
    return 0;
}

int mc_create_as(int (*create)(const struct model_config *, int, model **, char *, size_t),
                 const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    char e[512] = "";
    int rc = create(cfg, device, out, e, sizeof e);
    if (rc && err) snprintf(err, errlen, "%s", e);
    return rc;
}

void mc_set_head(mc_model *cm, void *head_in, void *dhead_in, void *logits, void *losses) {
    cm->head_in = (floatX *)head_in;
    cm->dhead_in = (floatX *)dhead_in;
    cm->logits = (floatX *)logits;
    cm->losses = (float *)losses;
}

int mc_distance_fused(mc_model *cm, int l, int B, int T, const floatX *qkv, void *out, floatX *eatt, float *dist_dev,
                      double *attn_dist) {
    const int C = cm->cfg.C, NH = cm->cfg.heads[l];
    for (int b = 0; attn_dist && b < B; b++) {
        double d = 0;
        MC_TRY(cm, prism_cuda_attention_forward(out, eatt, qkv + (size_t)b * T * 3 * C, cm->scratch, 1, T, C, NH),
               "attention_forward(distance)");
        MC_TRY(cm, prism_cuda_attention_distance(eatt, 1, T, NH, dist_dev, cm->h_rows, &d), "attention_distance");
        attn_dist[l] += d;
    }
    return 0;
}

int mc_distance_probs(mc_model *cm, int l, int B, int T, const floatX *att, float *dist_dev, double *attn_dist) {
    if (!attn_dist) return 0;
    double d = 0;
    MC_TRY(cm, prism_cuda_attention_distance(att, B, T, cm->cfg.heads[l], dist_dev, cm->h_rows, &d),
           "attention_distance");
    attn_dist[l] += d;
    return 0;
}

int mc_finish(mc_model *cm, const size_t *abytes, int na, void **a, const size_t *dbytes, int nd, void **d,
              size_t sbytes, size_t dist_rows, const int head[4], model **out, char *err, size_t errlen) {
    int rc = mc_create_groups(cm, abytes, na, a, dbytes, nd, d, sbytes, dist_rows, err, errlen);
    /* PRISM_ATTENTION: cuDNN or the fused kernel per fused layer (a bad value is its only failure) */
    if (!rc && prism_attention_choose(&cm->cfg, cm->fused, cm->attn, NULL, 0, err, errlen) != 0) rc = MODEL_EINVAL;
    if (rc) { mc_free((model *)cm); return rc; }
    mc_set_head(cm, a[head[0]], d[head[1]], a[head[2]], a[head[3]]);
    *out = (model *)cm;
    return MODEL_OK;
}

int mc_head(mc_model *cm, int B, int T, int train, float dloss) {
    const struct model_config *cf = &cm->cfg;
    const int N = B * T, C = cf->C, rows = cm->head_rows;
    const floatX *wte = cm->px + cm->offs[0];   /* tensor 0 is wte in both architectures (tied to the head) */
    float *dwte = cm->grads + cm->offs[0];
    const int *tg = cm->tok + (size_t)cf->B * cf->T;
    for (int r0 = 0; r0 < N; r0 += rows) {
        const int n = N - r0 < rows ? N - r0 : rows;
        const size_t o = (size_t)r0 * C;
        MC_TRY(cm, prism_cuda_matmul_forward(cm->logits, NULL, cm->head_in + o, wte, NULL, n, C, cf->Vp),
               "matmul_forward(logits)");
        MC_TRY(cm, prism_cuda_fused_classifier(cm->logits, cm->losses + r0, tg + r0, n, cf->V, cf->Vp, dloss, train),
               "fused_classifier");
        if (train)   /* the chunk's dlogits: its rows of dL/d head_in, and its share of wte's gradient */
            MC_TRY(cm, prism_cuda_matmul_backward(cm->dhead_in + o, dwte, NULL, cm->logits, cm->head_in + o, wte, n, C,
                                                  cf->Vp, 0), "matmul_backward(logits)");
    }
    return 0;
}

/* ---- the entry points ------------------------------------------------------------------------------------ */

/* check the micro-batch (host), bind the thread, upload the token ids */
static int mc_begin(mc_model *cm, const int *in, const int *tg, int B, int T) {
    int rc = mc_check_batch(&cm->cfg, in, tg, B, T, cm->err, sizeof cm->err);
    if (rc) return rc;
    MC_BIND(cm);
    const size_t n = (size_t)B * T;
    MC_TRY(cm, prism_cuda_upload(cm->tok, in, n * sizeof(int)), "upload inputs");
    MC_TRY(cm, prism_cuda_upload(cm->tok + (size_t)cm->cfg.B * cm->cfg.T, tg, n * sizeof(int)), "upload targets");
    return 0;
}

/* The mean of the B*T per-token losses: downloaded (the sync) and summed on the host in a fixed order. */
static int mc_mean_loss(mc_model *cm, int N, float *loss) {
    MC_TRY(cm, prism_cuda_download(cm->h_losses, cm->losses, (size_t)N * sizeof(float)), "download losses");
    double total = 0;
    for (int i = 0; i < N; i++) total += cm->h_losses[i];
    *loss = (float)(total / N);
    prism_cuda_mem_sample();
    return 0;
}

static int mc_body(mc_model *cm, int B, int T, int train, float dloss, double *attn_dist) {
    int rc = cm->arch->forward(cm, B, T, attn_dist);
    if (!rc) rc = mc_head(cm, B, T, train, dloss);
    if (!rc && train) rc = cm->arch->backward(cm, B, T);
    return rc;
}

/* forward, head and backward of a training micro-batch: eagerly, or captured and launched as a graph */
static int mc_train_step(mc_model *cm, int B, int T, float dloss) {
    if (!cm->graph_on) return mc_body(cm, B, T, 1, dloss, NULL);
    const unsigned gen = prism_cuda_scratch_generation();
    const int same = cm->gkey.warm && cm->gkey.B == B && cm->gkey.T == T && !memcmp(&cm->gkey.dloss, &dloss, sizeof dloss)
                     && cm->gkey.gen == gen;
    if (!same) {   /* a new key: one eager step, which sizes the scratch and the algorithm cache */
        prism_cuda_graph_free(cm->graph);
        cm->graph = NULL;
        cm->gkey.warm = 0;
        int rc = mc_body(cm, B, T, 1, dloss, NULL);
        if (rc) return rc;
        cm->gkey.B = B; cm->gkey.T = T; cm->gkey.dloss = dloss; cm->gkey.gen = prism_cuda_scratch_generation();
        cm->gkey.warm = 1;
        return 0;
    }
    if (!cm->graph) {
        MC_TRY(cm, prism_cuda_graph_begin(), "graph capture");
        int rc = mc_body(cm, B, T, 1, dloss, NULL);
        void *x = NULL;
        int erc = prism_cuda_graph_end(&x);
        if (rc || erc) {   /* nothing of it ran: say so once and go on without graphs */
            fprintf(stderr, "prism: capturing the training step as a CUDA graph failed (%s); training on without graphs "
                    "(PRISM_CUDA_GRAPH=0 skips the attempt)\n", rc ? cm->err : prism_cuda_last_error());
            prism_cuda_graph_free(x);
            cm->graph_on = 0;
            return mc_body(cm, B, T, 1, dloss, NULL);
        }
        cm->graph = x;
    }
    MC_TRY(cm, prism_cuda_graph_launch(cm->graph), "graph launch");
    return 0;
}

int mc_forward_backward(model *mp, const int *in, const int *tg, int B, int T, float loss_scale, float *loss) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_begin(cm, in, tg, B, T);
    if (rc) return rc;
    cm->grads_zero = 0;
    rc = mc_train_step(cm, B, T, loss_scale / ((float)B * T));
    return rc ? rc : mc_mean_loss(cm, B * T, loss);
}

int mc_forward_loss(model *mp, const int *in, const int *tg, int B, int T, float *loss, double *attn_dist) {
    mc_model *cm = (mc_model *)mp;
    int rc = mc_begin(cm, in, tg, B, T);
    if (!rc) rc = mc_body(cm, B, T, 0, 0.0f, attn_dist);
    return rc ? rc : mc_mean_loss(cm, B * T, loss);
}

/* per-position losses of the same forward (zero-shot scoring) */
int mc_forward_losses(model *mp, const int *in, const int *tg, int B, int T, float *losses) {
    mc_model *cm = (mc_model *)mp;
    float mean = 0;
    int rc = mc_forward_loss(mp, in, tg, B, T, &mean, NULL);
    if (!rc) memcpy(losses, cm->h_losses, (size_t)B * T * sizeof(float));
    return rc;
}
