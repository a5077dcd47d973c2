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
 */
#ifndef PRISM_MODEL_CUDA_MEM_CUH
#define PRISM_MODEL_CUDA_MEM_CUH
#include <stddef.h>
extern "C" {
#include "model.h"
}

size_t mc_al256b(size_t bytes);
void mc_param_layout(const struct model_config *cfg, size_t *sizes, size_t *offs, size_t *nparams, size_t *npad);
size_t mc_attention_plan(const struct model_config *cfg, int *fused, size_t *att_off, int *any_mat);
size_t mc_group_bytes(const size_t *bytes, int n);
void mc_carve(void *mem, const size_t *bytes, void **ptrs, int n);
int mc_group_download(float *dst, const float *dev, const size_t *offs, const size_t *sizes, int n);
int mc_group_upload(float *dev, const float *src, const size_t *offs, const size_t *sizes, int n);
int mc_check_batch(const struct model_config *cfg, const int *in, const int *tg, int B, int T, char *err,
                   size_t errlen);
#endif
