/* llama.h — the Llama-style model (RoPE + SwiGLU + RMSNorm, no biases, tied classifier) with a per-layer
 * head schedule on the CPU: parameters, gradients, AdamW state and activations, each group in one
 * allocation with a pointer table, exactly like gpt2.h.
 *
 * Block l:  h = rmsnorm(x)·attnormw_l;  qkv = h·qkvwᵀ;  q, k = rope(q, k) at head size C/h_l;
 *           x += attn(q, k, v)·attprojwᵀ;  h = rmsnorm(x)·mlpnormw_l;
 *           x += (h·fcwᵀ ⊙ silu(h·fcgwᵀ))·fcprojwᵀ.     Then rmsnorm(x)·normfw, logits = ·wteᵀ.
 * Element type `real` (real.h): float for the product (model_cpu_ops), double for the gradient check
 * (names suffixed _f64). Lifecycle: llama_init → forward/backward/update any number of times → llama_release.
 */
#ifndef PRISM_LLAMA_H
#define PRISM_LLAMA_H
#include "model.h"
#include "real.h"
#include <stddef.h>

struct llama_tensors {          /* pointer table into one block, model file order */
    real *wte;       /* (Vp, C) */
    real *attnormw;  /* (L, C) */
    real *qkvw;      /* (L, 3C, C) */
    real *attprojw;  /* (L, C, C) */
    real *mlpnormw;  /* (L, C) */
    real *fcw;       /* (L, H, C)  W_up */
    real *fcgw;      /* (L, H, C)  W_gate */
    real *fcprojw;   /* (L, C, H)  W_down */
    real *normfw;    /* (C) */
};

#define LLAMA_NUM_ACTS 18
struct llama_acts {             /* pointer table into one block; B, T = the allocated maxima */
    real *encoded;   /* (B, T, C) */
    real *attnorm;   /* (L, B, T, C) */
    real *attnorm_rstd; /* (L, B, T) */
    real *qkv;       /* (L, B, T, 3C), q and k after RoPE */
    real *atty;      /* (L, B, T, C) */
    real *att;       /* (Σ_l B·h_l·T·T) layer l at att_off[l] */
    real *attproj;   /* (L, B, T, C) */
    real *residual2; /* (L, B, T, C) */
    real *mlpnorm;   /* (L, B, T, C) */
    real *mlpnorm_rstd; /* (L, B, T) */
    real *fch;       /* (L, B, T, H) up */
    real *fcg;       /* (L, B, T, H) gate */
    real *fch_swiglu;/* (L, B, T, H) */
    real *fcproj;    /* (L, B, T, C) */
    real *residual3; /* (L, B, T, C) */
    real *normf;     /* (B, T, C) */
    real *normf_rstd;/* (B, T) */
    real *logits;    /* (B, T, Vp); after a forward with dloss != 0 it holds dlogits */
};

struct llama {
    struct model_config cfg;       /* H and rope_theta filled in (defaults applied) */
    size_t param_sizes[MODEL_NUM_TENSORS];
    size_t num_params;
    real *params_mem, *grads_mem, *m_mem, *v_mem;
    struct llama_tensors params, grads;
    size_t act_sizes[LLAMA_NUM_ACTS];
    size_t num_acts;
    real *acts_mem, *dacts_mem;
    struct llama_acts acts, dacts;
    real *losses;                  /* (B, T) */
    real *datt;                    /* (B · max h_l · T · T) */
    size_t att_off[MODEL_MAX_LAYERS];
    int fwd_B, fwd_T;
    const int *fwd_inputs;
};

/* Allocates for cfg (copied; H = model_llama_default_ffn(C) when 0, rope_theta = 10000 when 0).
 * 0 or MODEL_EINVAL (a head count not dividing C, an odd head size, bad sizes) / MODEL_ENOMEM. Params zero. */
int RN(llama_init)(struct llama *g, const struct model_config *cfg);
void RN(llama_release)(struct llama *g);
/* As gpt2_forward / gpt2_backward / gpt2_grad_norm / gpt2_update (gpt2.h). */
double RN(llama_forward)(struct llama *g, const int *inputs, const int *targets, int B, int T, real dloss,
                         double *attn_dist);
void RN(llama_zero_grad)(struct llama *g);
void RN(llama_backward)(struct llama *g);
double RN(llama_grad_norm)(struct llama *g);
void RN(llama_update)(struct llama *g, const struct adamw_params *hp, int t, real grad_scale);
#endif
