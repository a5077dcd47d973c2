/* kernels/cuda/model_cuda_base.cuh — what both CUDA models share besides memory (model_cuda_mem.cuh): creation,
 * the micro-batch entry points (model_ops forward_backward / forward_loss / forward_losses), the chunked LM head
 * with its cross-entropy, and the training step captured as a CUDA graph. A backend (model_cuda.cu for GPT-2,
 * model_llama.cu for the Llama-style model) keeps only its configuration checks, its activation plan and the
 * bodies in its mc_arch.
 *
 * - mc_arch: name (in messages); forward(cm, B, T, attn_dist): from the token ids in cm->tok (inputs, then
 *   targets at cm->tok + cfg.B*cfg.T) to the final norm's output in cm->head_in, adding each layer's attention
 *   distance into attn_dist[l] when attn_dist != NULL (eval only: it synchronises); backward(cm, B, T): from
 *   dL/d head_in in cm->dhead_in (left by the head) to the embedding gradients, accumulated into cm->grads. Both
 *   only queue work (no host synchronisation, no allocation: the training step is captured), return 0 or
 *   MODEL_EDEVICE with cm->err set (MC_TRY).
 * - mc_config_check(cfg, even_head, max_c, norm, &maxh, err, errlen): the checks every CUDA model makes (sizes,
 *   heads dividing C into a head size, even when even_head, C at most max_c for the norm backward named norm);
 *   0 with the largest head count in maxh, or MODEL_EINVAL with err naming the problem.
 * - mc_new(cfg, device, bytes, ntensors, arch, err, errlen): binds the thread to device, allocates (zeroed) a derived
 *   model of `bytes` and fills cfg, device, ntensors, arch and the parameter layout; NULL with err set
 *   (*rc MODEL_EDEVICE or MODEL_ENOMEM).
 * - mc_plan(cm, maxh, &sbytes, &dist_rows): the attention plan (fused[], att_off[], lse_layer for maxh heads), the head's
 *   rows (head_rows), the attention scratch bytes and distance rows; returns the elements of kept probabilities.
 * - P, G, AX, AF: a derived model's floatX parameter tensor i, its float32 gradient, and activation i (its a[])
 *   as floatX or float.
 * - mc_create_groups(cm, abytes, na, a, dbytes, nd, d, sbytes, dist_rows, err, errlen): the device groups — params,
 *   activations (na pieces into a[]), activation-gradient scratch (nd pieces into d[]), attention scratch of
 *   sbytes, tokens — and the host buffers (B*T losses, dist_rows distance rows); params and activations zeroed.
 *   0, or MODEL_ENOMEM / MODEL_EDEVICE with err set (the caller frees with mc_free).
 * - mc_head(cm, B, T, train, dloss): logits = head_in @ wte^T and the fused cross-entropy, head_rows rows at a time
 *   into one buffer (never B*T x Vp whole): per-token losses in cm->losses; when train, each chunk's dlogits
 *   (dloss-scaled) go at once into dhead_in (those rows) and wte's gradient (+=). Queues only.
 * - mc_create_as(create, cfg, device, out, err, errlen): model_ops.create around a derived create that writes its
 *   message into a buffer of its own (err may be NULL). mc_set_head(cm, head_in, dhead_in, logits, losses): the
 *   head's four buffers, from the derived create.
 * - mc_distance_fused(cm, l, B, T, qkv, out, eatt, attn_dist): attn_dist[l] += the attention distance of layer l
 *   from its (RoPE-applied) qkv, through attention.cu one sequence at a time (probabilities into eatt, h*T*T; the
 *   attention output into out, thrown away). mc_distance_probs(cm, l, B, T, att, attn_dist): the same from the
 *   kept probabilities of a materialised layer; nothing when attn_dist is NULL. Both synchronise (eval only).
 * - MC_MODEL_OPS(create): the model_ops table of a CUDA model whose derived create is `create` (its message into
 *   a buffer of its own, through mc_create_as).
 * - mc_forward_backward, mc_forward_loss, mc_forward_losses: the model_ops entries (kernels/model.h). Training
 *   runs the step (forward, head, backward) as a CUDA graph when graph_on (PRISM_CUDA_GRAPH unset or not 0): the
 *   first step of a shape (B, T, the loss scale, the thread's scratch address) runs eagerly and sizes every
 *   buffer, the next one is captured and launched, later ones launch it; a shape change re-captures. The token
 *   upload and the loss download are outside the captured region. A failed capture says so on stderr, turns
 *   graphs off for the model and runs the step eagerly (nothing of the failed capture ran).
 */
#ifndef PRISM_MODEL_CUDA_BASE_CUH
#define PRISM_MODEL_CUDA_BASE_CUH
#include "model_cuda_mem.cuh"

struct mc_arch {
    const char *name;
    int (*forward)(mc_model *cm, int B, int T, double *attn_dist);
    int (*backward)(mc_model *cm, int B, int T);
};

int mc_config_check(const struct model_config *cfg, int even_head, int max_c, const char *norm, int *maxh, char *err,
                    size_t errlen);
mc_model *mc_new(const struct model_config *cfg, int device, size_t bytes, int ntensors, const mc_arch *arch,
                 int *rc, char *err, size_t errlen);
size_t mc_plan(mc_model *cm, int maxh, size_t *sbytes, size_t *dist_rows);
#define P(cm, i) ((cm)->px + (cm)->offs[i])
#define G(cm, i) ((cm)->grads + (cm)->offs[i])
#define AX(cm, i) ((floatX *)(cm)->a[i])
#define AF(cm, i) ((float *)(cm)->a[i])
int mc_create_groups(mc_model *cm, const size_t *abytes, int na, void **a, const size_t *dbytes, int nd, void **d,
                     size_t sbytes, size_t dist_rows, char *err, size_t errlen);
/* the end of a derived create: mc_create_groups, the head's buffers (a[ia_in], d[id_din], a[ia_logits], a[ia_losses]),
 * *out = cm; on failure cm is freed and *out stays NULL */
int mc_finish(mc_model *cm, const size_t *abytes, int na, void **a, const size_t *dbytes, int nd, void **d,
              size_t sbytes, size_t dist_rows, const int head[4], model **out, char *err, size_t errlen);
int mc_head(mc_model *cm, int B, int T, int train, float dloss);
int mc_create_as(int (*create)(const struct model_config *, int, model **, char *, size_t),
                 const struct model_config *cfg, int device, model **out, char *err, size_t errlen);
void mc_set_head(mc_model *cm, void *head_in, void *dhead_in, void *logits, void *losses);
int mc_distance_fused(mc_model *cm, int l, int B, int T, const floatX *qkv, void *out, floatX *eatt, float *dist_dev,
                      double *attn_dist);
int mc_distance_probs(mc_model *cm, int l, int B, int T, const floatX *att, float *dist_dev, double *attn_dist);
int mc_forward_backward(model *mp, const int *in, const int *tg, int B, int T, float loss_scale, float *loss);
int mc_forward_loss(model *mp, const int *in, const int *tg, int B, int T, float *loss, double *attn_dist);
int mc_forward_losses(model *mp, const int *in, const int *tg, int B, int T, float *losses);

template <int (*F)(const struct model_config *, int, model **, char *, size_t)>
int mc_create_tpl(const struct model_config *cfg, int device, model **out, char *err, size_t errlen) {
    return mc_create_as(F, cfg, device, out, err, errlen);
}
#define MC_MODEL_OPS(create) { "cuda", mc_create_tpl<create>, mc_free, mc_error, mc_get_params, mc_set_params, mc_get_opt, mc_set_opt, \
                               mc_get_grads, mc_zero_grad, mc_forward_backward, mc_forward_loss, mc_update, \
                               mc_forward_losses }
#endif
