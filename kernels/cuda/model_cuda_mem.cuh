/* kernels/cuda/model_cuda_mem.cuh — the memory plan both CUDA backends share (model_cuda.cu for GPT-2,
 * model_llama.cu for the Llama-style model): where the parameter tensors lie in the padded device group, which
 * layers run fused attention, how a group is carved into 256-byte aligned tensors, the host ↔ device copies of
 * one float32 group, and the micro-batch check every forward makes. Host functions only; no state.
 *
 * - mc_al256b(bytes): bytes rounded up to a multiple of 256.
 * - mc_param_layout(cfg, sizes, offs, &nparams, &npad): model_param_sizes(cfg) into sizes
 *   (MODEL_NUM_TENSORS), each tensor's element offset in the device group (each padded to 128 elements: 256 B
 *   in bf16, 512 B in float32) into offs, the packed total into nparams and the padded one into npad.
 * - mc_attention_plan(cfg, fused, att_off, &any_mat): fused[l] = 1 where flash_attention.cu takes layer l's
 *   head size; att_off[l] the element offset of a materialised layer's probabilities (B·h_l·T·T each);
 *   any_mat = 1 when some layer is materialised. Returns the total elements of those probabilities.
 * - mc_group_bytes(bytes, n): the sum of n pieces each rounded by mc_al256b; mc_carve(mem, bytes, ptrs, n)
 *   points ptrs[i] at piece i of one allocation laid out that way.
 * - mc_group_download(dst, dev, offs, sizes, n) / mc_group_upload(dev, src, offs, sizes, n): one float32
 *   group between the host (llm.c order, packed) and the device (padded offsets), n tensors. Return 0, or
 *   nonzero at the first failed copy (prism_cuda_last_error() says why).
 * - mc_check_batch(cfg, in, tg, B, T, err, errlen): 0 when B x T fits the allocated cfg->B x cfg->T and every
 *   token id lies in [0, V) (a bad one would read out of bounds on the device); else MODEL_EINVAL with err
 *   naming the micro-batch or the token and its position.
 * - mc_head_rows(cfg, B, T): the rows of logits the LM head computes at once (the memory accounting of its buffer,
 *   head_rows x Vp floatX): PRISM_CUDA_HEAD_CHUNK=N rows when set (0: all B*T rows, the unchunked head), else as
 *   many as fit in MC_HEAD_BYTES; never more than B*T, at least 1.
 * - mc_model is what both backends' models begin with (each derives from it): configuration, device, last
 *   error and the parameter group. mc_fail(cm, what) sets err to "CUDA WHAT: <runtime error>" and returns
 *   MODEL_EDEVICE; mc_bind(cm) binds the calling thread to cm's device (the CUDA runtime state is per thread),
 *   0 or MODEL_EDEVICE. mc_error, mc_get_params, mc_set_params (also refreshes the working-precision copy px),
 *   mc_get_opt, mc_set_opt and mc_get_grads are the model_ops entries of the same names (kernels/model.h) for
 *   any model* that is an mc_model: 0 or MODEL_EDEVICE with err set. mc_free(mp) frees every group and host
 *   buffer of the base and the model itself (model_ops.free; NULL is fine).
 * - The update path both models share: mc_param_bytes(npad) is the size of the params group (master, grads, m,
 *   v in float32, px in floatX, the norm slot) and mc_carve_params(cm) points master..norm_dev into cm->pmem.
 *   mc_zero_grad(mp) is model_ops.zero_grad: it clears the gradients only when they are not known to be zero
 *   (grads_zero: set after create, zero_grad and update; the derived forward_backward clears it).
 *   mc_update(mp, hp, t, &norm) is model_ops.update: the gradient norm on the device, one fused AdamW launch for
 *   all cm->ntensors tensors (decay per model_arch_tensor_decays, clipping read on the device, each gradient zeroed
 *   as it is read) and one host synchronisation (the norm comes back). 0 or MODEL_EDEVICE with err set.
 */
#ifndef PRISM_MODEL_CUDA_MEM_CUH
#define PRISM_MODEL_CUDA_MEM_CUH
#include <stddef.h>
#include "cuda_common.cuh"
extern "C" {
#include "model.h"
}

struct mc_arch;                      /* the derived model's forward/backward bodies: model_cuda_base.cuh */
struct mc_model {
    const struct mc_arch *arch;
    struct model_config cfg;
    int device;
    char err[512];
    size_t sizes[MODEL_NUM_TENSORS];   /* elements, llm.c order */
    size_t offs[MODEL_NUM_TENSORS];    /* element offsets in the padded device layout */
    size_t nparams, npad;
    int ntensors;                      /* the architecture's tensors (MODEL_NUM_TENSORS, MODEL_LLAMA_NUM_TENSORS) */
    void *pmem;                        /* params group */
    float *master, *grads, *m, *v;     /* (npad) each */
    floatX *px;                        /* (npad) */
    void *amem;                        /* acts group (the derived model's a[] points into it) */
    void *dmem;                        /* activation-gradient scratch group (its d[]) */
    size_t att_off[MODEL_MAX_LAYERS];  /* elements into the attention probabilities (layers that do not run fused) */
    int fused[MODEL_MAX_LAYERS];       /* layer l runs flash_attention.cu */
    int attn[MODEL_MAX_LAYERS];        /* a fused layer's backend: PRISM_ATTN_FUSED or _CUDNN (attention_cudnn.h) */
    size_t lse_layer;                  /* floats of log-sum-exp per layer: B * maxh * T (allocated B) */
    void *scratch;                     /* attention */
    int *tok;                          /* (2, B*T): inputs then targets */
    float *h_losses;                   /* host (B*T) */
    float *h_rows;                     /* host attention-distance rows */
    float *norm_dev;                   /* the gradient norm (device, the last slot of the params group) */
    int grads_zero;                    /* grads are known to be all zero (after create, zero_grad or update) */
    /* the LM head (model_cuda_base.cu): the final norm's output and its gradient (B*T rows of C, set by the derived
     * create), a logits buffer of head_rows rows of Vp (mc_head_rows), the per-token losses (B*T) */
    floatX *head_in, *dhead_in, *logits;
    float *losses;
    int head_rows;
    /* the training step as a CUDA graph (model_cuda_base.cu; PRISM_CUDA_GRAPH=0 turns it off) */
    int graph_on;                      /* capture steps (off after a failed capture) */
    void *graph;                       /* the instantiated step for key gkey, or NULL */
    struct { int B, T; float dloss; unsigned gen; int warm; } gkey;   /* warm: the last eager step had this key */
};

/* In a function returning int: call (0 = done) or return mc_fail(cm, what); bind the thread to cm's device. */
#define MC_TRY(cm, call, what) do { if ((call) != 0) return mc_fail(cm, what); } while (0)
#define MC_BIND(cm) do { int b_ = mc_bind(cm); if (b_) return b_; } while (0)

#define MC_HEAD_BYTES ((size_t)128 << 20)   /* default cap of the LM head's logits buffer */
size_t mc_al256b(size_t bytes);
int mc_head_rows(const struct model_config *cfg, int B, int T);
void mc_param_layout(const struct model_config *cfg, size_t *sizes, size_t *offs, size_t *nparams, size_t *npad);
size_t mc_attention_plan(const struct model_config *cfg, int *fused, size_t *att_off, int *any_mat);
size_t mc_group_bytes(const size_t *bytes, int n);
void mc_carve(void *mem, const size_t *bytes, void **ptrs, int n);
int mc_group_download(float *dst, const float *dev, const size_t *offs, const size_t *sizes, int n);
int mc_group_upload(float *dev, const float *src, const size_t *offs, const size_t *sizes, int n);
int mc_check_batch(const struct model_config *cfg, const int *in, const int *tg, int B, int T, char *err,
                   size_t errlen);
int mc_fail(mc_model *cm, const char *what);
int mc_bind(mc_model *cm);
const char *mc_error(model *mp);
int mc_get_params(model *mp, float *dst);
int mc_set_params(model *mp, const float *src);
int mc_get_opt(model *mp, float *mo, float *vo);
int mc_set_opt(model *mp, const float *mi, const float *vi);
int mc_get_grads(model *mp, float *dst);
void mc_free(model *mp);
size_t mc_param_bytes(size_t npad);
void mc_carve_params(mc_model *cm);
int mc_zero_grad(model *mp);
int mc_update(model *mp, const struct adamw_params *hp, int t, float *grad_norm);
#endif
