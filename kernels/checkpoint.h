/* checkpoint.h — model files in llm.c's format and full training-state checkpoints.
 *
 * Model file (llm.c gpt2_build_from_checkpoint compatible): 256 × int32 header
 *   [0] 20240326  [1] 3 (float32)  [2] maxT  [3] V  [4] L  [5] NH  [6] C  [7] Vp
 *   [8 .. 8+L) per-layer head counts h_l (prism-sweep extension; llm.c leaves slots 8+ zero and ignores
 *              them).  NH in [5] is h_L, so a uniform-schedule file loads in llm.c's train_gpt2.c unchanged.
 * then the 16 float32 tensors in llm.c order (see model.h). A file whose slots 8.. are all zero (from
 * llm.c) means "uniform NH"; the job's heads decide the schedule when such a file is model.init.
 *
 * Llama-style model file (model.h's MODEL_ARCH_LLAMA; pinned, other tools read it): 256 × int32 header
 *   [0] 20260629  [1] 1 (float32)  [2] maxT  [3] V  [4] L  [5] h_L  [6] C  [7] Vp  [8] H  [9] rope_theta
 *   [16 .. 16+L) h_1 … h_L
 * then the 9 float32 tensors in model.h's llama order (wte attnormw qkvw attprojw mlpnormw fcw fcgw fcprojw
 * normfw), (out, in) row-major; padded vocab rows zero. Readers refuse a head slot that does not divide C or
 * leaves an odd head size, naming the slot. The head slots record the training schedule; a job using the
 * file as model.init decides its own.
 *
 * Training state (prism-sweep's own): 256 × int32 header
 *   [0] 20261130 (CKPT_STATE_MAGIC)  [1] 1  [2] maxT [3] V [4] L [5] C [6] Vp [7] step (updates done)
 *   [8,9] data position (uint64 lo,hi)  [10,11] rng state (lo,hi)  [12,13] seed (lo,hi)
 *   [14] B  [15] T  [16] grad_accum  [17] num params lo  [18] hi  [19] arch (0 GPT-2, 1 llama; older files
 *   hold 0)  [20] H  [21] rope_theta (llama)  [22,23] checksum (uint64 lo,hi; version 2)  [32 .. 32+L) heads
 * then params, AdamW m, AdamW v (float32, llm.c order each). Written to a temporary file beside PATH, fsync'd, renamed.
 * Readers check the exact file size and that the header matches the job (the message says which
 * field differs: "ckpt.bin: heads are 4,4,4,4 but the job has 1,2,4,4"), then the checksum: a 64-bit hash of
 * the header (slots 22-23 zero) and the three arrays; a mismatch is CKPT_EFORMAT "checksum mismatch" and
 * nothing loaded counts (the worker restarts the job without it, saying so). Version 1 files (no checksum)
 * are still read. rope_theta (model file slot 9, state slot 21) is at most CKPT_ROPE_THETA_MAX, so the float
 * the model holds is exactly the integer stored.
 */
#ifndef PRISM_CHECKPOINT_H
#define PRISM_CHECKPOINT_H
#include "model.h"
#include <stddef.h>
#include <stdint.h>

#define CKPT_MODEL_MAGIC 20240326
#define CKPT_MODEL_VERSION 3
#define CKPT_HEADS_SLOT 8
#define CKPT_LLAMA_MAGIC 20260629
#define CKPT_LLAMA_VERSION 1
#define CKPT_LLAMA_HEADS_SLOT 16
#define CKPT_STATE_MAGIC 20261130
#define CKPT_STATE_VERSION 2
#define CKPT_STATE_HEADS_SLOT 32
#define CKPT_STATE_SUM_SLOT 22   /* [22,23]: the checksum (version 2) */
#define CKPT_ROPE_THETA_MAX (1 << 24)   /* rope_theta is a float in the model: integers above 2^24 would round */

enum { CKPT_OK = 0, CKPT_EIO = -1, CKPT_EFORMAT = -2, CKPT_EMISMATCH = -3, CKPT_ENOMEM = -4 };

struct ckpt_state {
    int step;               /* updates done; training continues at this step */
    uint64_t data_pos;      /* data loader position (micro-batches consumed) */
    uint64_t rng;           /* trainer RNG state */
    uint64_t seed;
    int B, T, grad_accum;
};

int ckpt_write_model(const char *path, const struct model_config *cfg, const float *params,
                     char *err, size_t errlen);
/* (cfg->arch picks the format: GPT-2's llm.c file or the Llama-style one above.) */
/* Reads the header only: fills cfg's arch, L C V Vp maxT (llama: H, rope_theta) and heads (GPT-2: uniform NH
 * when slots 8.. are zero).
 * *has_heads = 1 when the file carried per-layer heads. */
int ckpt_read_model_header(const char *path, struct model_config *cfg, int *has_heads, char *err, size_t errlen);
/* Reads params for a model whose arch L C V Vp maxT (llama: H, rope_theta) must equal cfg's (heads are not
 * compared: the job decides). */
int ckpt_read_model(const char *path, const struct model_config *cfg, float *params, char *err, size_t errlen);

int ckpt_write_state(const char *path, const struct model_config *cfg, const struct ckpt_state *st,
                     const float *params, const float *m, const float *v, char *err, size_t errlen);
/* Checks dims, heads, seed, B, T, grad_accum against cfg/expect (expect->step etc. ignored), then fills
 * *st and the three arrays (model_num_params(cfg) floats each). */
int ckpt_read_state(const char *path, const struct model_config *cfg, const struct ckpt_state *expect,
                    struct ckpt_state *st, float *params, float *m, float *v, char *err, size_t errlen);
#endif
