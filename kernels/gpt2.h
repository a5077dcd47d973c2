/* gpt2.h — the GPT-2 model with a per-layer head schedule on the CPU: parameters, gradients, AdamW state
 * and activations, each group in one allocation with a pointer table (llm.c style).
 *
 * Element type `real` (real.h): float for the product (model_cpu_ops wraps this), double for the
 * finite-difference gradient check (names suffixed _f64).
 * Lifecycle: gpt2_init (allocates everything once, for micro-batches up to cfg->B × cfg->T) →
 * any number of forward/backward/update → gpt2_release. Nothing allocates inside a step.
 */
#ifndef PRISM_GPT2_H
#define PRISM_GPT2_H
#include "model.h"
#include "real.h"
#include <stddef.h>

struct gpt2_tensors {          /* pointer table into one block, llm.c order */
    real *wte;       /* (Vp, C) */
    real *wpe;       /* (maxT, C) */
    real *ln1w;      /* (L, C) */
    real *ln1b;      /* (L, C) */
    real *qkvw;      /* (L, 3C, C) */
    real *qkvb;      /* (L, 3C) */
    real *attprojw;  /* (L, C, C) */
    real *attprojb;  /* (L, C) */
    real *ln2w;      /* (L, C) */
    real *ln2b;      /* (L, C) */
    real *fcw;       /* (L, 4C, C) */
    real *fcb;       /* (L, 4C) */
    real *fcprojw;   /* (L, C, 4C) */
    real *fcprojb;   /* (L, C) */
    real *lnfw;      /* (C) */
    real *lnfb;      /* (C) */
};

#define GPT2_NUM_ACTS 21
struct gpt2_acts {             /* pointer table into one block; B, T = the allocated maxima */
    real *encoded;   /* (B, T, C) */
    real *ln1;       /* (L, B, T, C) */
    real *ln1_mean;  /* (L, B, T) */
    real *ln1_rstd;  /* (L, B, T) */
    real *qkv;       /* (L, B, T, 3C) */
    real *atty;      /* (L, B, T, C) */
    real *att;       /* (Σ_l B·h_l·T·T) layer l at att_off[l], shaped (B, h_l, T, T) */
    real *attproj;   /* (L, B, T, C) */
    real *residual2; /* (L, B, T, C) */
    real *ln2;       /* (L, B, T, C) */
    real *ln2_mean;  /* (L, B, T) */
    real *ln2_rstd;  /* (L, B, T) */
    real *fch;       /* (L, B, T, 4C) */
    real *fch_gelu;  /* (L, B, T, 4C) */
    real *fcproj;    /* (L, B, T, C) */
    real *residual3; /* (L, B, T, C) */
    real *lnf;       /* (B, T, C) */
    real *lnf_mean;  /* (B, T) */
    real *lnf_rstd;  /* (B, T) */
    real *logits;    /* (B, T, Vp); after a forward with dloss != 0 it holds dlogits */
    real *losses;    /* (B, T) */
};

struct gpt2 {
    struct model_config cfg;
    size_t param_sizes[MODEL_NUM_TENSORS];
    size_t num_params;
    real *params_mem, *grads_mem, *m_mem, *v_mem;   /* (num_params) each */
    struct gpt2_tensors params, grads;
    size_t act_sizes[GPT2_NUM_ACTS];
    size_t num_acts;
    real *acts_mem, *dacts_mem;                     /* (num_acts) each; dacts = gradients of activations */
    struct gpt2_acts acts, dacts;
    real *datt;                                     /* (B · max h_l · T · T) attention backward scratch */
    size_t att_off[MODEL_MAX_LAYERS];
    int fwd_B, fwd_T;                               /* shape of the last forward (backward needs it) */
    const int *fwd_inputs;                          /* borrowed from the last forward */
};

/* Allocates for cfg (copied). 0 or MODEL_EINVAL / MODEL_ENOMEM (then nothing is left to free). Params zero. */
int RN(gpt2_init)(struct gpt2 *g, const struct model_config *cfg);
void RN(gpt2_release)(struct gpt2 *g);
/* Forward on inputs/targets (B*T, B <= cfg.B, T <= cfg.T); returns the mean loss over positions.
 * dloss != 0 also leaves dlogits (= dloss·(softmax − onehot)) for gpt2_backward; pass
 * loss_scale/(B·T). attn_dist: NULL or L doubles, each += Σ over sequences of that layer's D. */
double RN(gpt2_forward)(struct gpt2 *g, const int *inputs, const int *targets, int B, int T, real dloss,
                        double *attn_dist);
void RN(gpt2_zero_grad)(struct gpt2 *g);
/* Backward of the last forward (which must have had dloss != 0); accumulates into g->grads. */
void RN(gpt2_backward)(struct gpt2 *g);
/* Global gradient norm (deterministic). */
double RN(gpt2_grad_norm)(struct gpt2 *g);
/* AdamW on every tensor with grads scaled by grad_scale; decay only on matrices. */
void RN(gpt2_update)(struct gpt2 *g, const struct adamw_params *hp, int t, real grad_scale);
#endif
