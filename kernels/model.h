/* model.h — the backend interface the trainer drives (CPU here, CUDA in kernels/cuda/, loaded as a shared object).
 *
 * A backend owns the parameters, gradients, AdamW state and activations of one GPT-2 with a per-layer
 * head schedule. The trainer only ever sees host float32 arrays in llm.c's tensor order:
 *   wte (Vp,C), wpe (maxT,C), ln1w (L,C), ln1b (L,C), qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C),
 *   attprojb (L,C), ln2w (L,C), ln2b (L,C), fcw (L,4C,C), fcb (L,4C), fcprojw (L,C,4C), fcprojb (L,C),
 *   lnfw (C), lnfb (C)
 * concatenated (model_param_sizes() gives the 16 sizes; the sum is model_num_params()).
 * Parameter shapes never depend on the schedule; only attention's reshape does.
 *
 * Calling sequence per update:  zero_grad; grad_accum × forward_backward; update.
 * All functions return 0 or a negative MODEL_E* code with a message in the err buffer given to create
 * (model_err()). After a failure the model is still valid to free.
 */
#ifndef PRISM_MODEL_H
#define PRISM_MODEL_H
#include <stddef.h>
#include <stdint.h>

#define MODEL_NUM_TENSORS 16
#define MODEL_MAX_LAYERS 240

enum { MODEL_OK = 0, MODEL_EINVAL = -1, MODEL_ENOMEM = -2, MODEL_EDEVICE = -3 };

/* Architectures. GPT-2 (the zero value) has the 16 tensors above. Llama-style (RoPE + SwiGLU + RMSNorm,
 * no biases, tied classifier) has 9, in this order:
 *   wte (Vp,C), attnormw (L,C), qkvw (L,3C,C), attprojw (L,C,C), mlpnormw (L,C), fcw = W_up (L,H,C),
 *   fcgw = W_gate (L,H,C), fcprojw = W_down (L,C,H), normfw (C)
 * model_param_sizes() then fills slots 0..8 and leaves 9..15 zero. */
enum { MODEL_ARCH_GPT2 = 0, MODEL_ARCH_LLAMA = 1 };
#define MODEL_LLAMA_NUM_TENSORS 9

struct model_config {
    int L, C, V, Vp, maxT;          /* layers, width, real vocab, padded vocab, position table (llama: max T) */
    int heads[MODEL_MAX_LAYERS];    /* h_l, each divides C (llama: C/h_l even too) */
    int B, T;                       /* the largest micro-batch forward_* will be given (activation sizes) */
    int arch;                       /* MODEL_ARCH_*; 0 = GPT-2 */
    int H;                          /* llama: MLP hidden size (model_llama_default_ffn(C) when 0 at create) */
    float rope_theta;               /* llama: RoPE base θ (10000 when 0) */
};

struct adamw_params {
    float lr, beta1, beta2, eps, weight_decay;  /* weight decay applies to wte wpe qkvw attprojw fcw fcprojw */
    float grad_clip;                            /* global-norm clip, 0 = off */
};

typedef struct model model;         /* a backend's own object; starts with nothing the trainer reads */

typedef struct model_ops {
    const char *name;               /* "cpu", "cuda" */
    /* device: -1 for CPU, else a CUDA ordinal. Params are zero until set_params. On failure *out is NULL. */
    int (*create)(const struct model_config *cfg, int device, model **out, char *err, size_t errlen);
    void (*free)(model *m);         /* NULL is fine */
    const char *(*error)(model *m); /* last error message */
    /* host float32, llm.c order, model_num_params() floats */
    int (*get_params)(model *m, float *dst);
    int (*set_params)(model *m, const float *src);
    /* AdamW first and second moments, same layout as params */
    int (*get_opt_state)(model *m, float *m_out, float *v_out);
    int (*set_opt_state)(model *m, const float *m_in, const float *v_in);
    int (*get_grads)(model *m, float *dst);      /* for tests: the accumulated gradient */
    int (*zero_grad)(model *m);
    /* Forward + backward on one micro-batch (inputs, targets: B*T token ids, B,T <= config's);
     * gradients of loss_scale × mean loss are ADDED to the accumulated gradients (loss_scale = 1/grad_accum).
     * *loss = mean loss of this micro-batch. */
    int (*forward_backward)(model *m, const int *inputs, const int *targets, int B, int T, float loss_scale,
                            float *loss);
    /* Forward only: *loss = mean loss. attn_dist: NULL, or L doubles to which each layer's
     * Σ over the B sequences of its per-sequence attention distance is ADDED (divide by sequences seen). */
    int (*forward_loss)(model *m, const int *inputs, const int *targets, int B, int T, float *loss,
                        double *attn_dist);
    /* Clips (global norm over all grads, if hp->grad_clip > 0) and applies AdamW with bias correction t
     * (t = step + 1). *grad_norm = the norm before clipping. */
    int (*update)(model *m, const struct adamw_params *hp, int t, float *grad_norm);
    /* Forward only, the same pass as forward_loss: losses (B*T, host) = each position's cross-entropy
     * −log p(targets[i] | inputs up to i). Used to score zero-shot completions. */
    int (*forward_losses)(model *m, const int *inputs, const int *targets, int B, int T, float *losses);
} model_ops;

extern const model_ops model_cpu_ops;
#ifdef PRISM_HAVE_CUDA
/* Only code linked against the CUDA objects themselves (the kernel tests, bench_cuda_gpt2) names these; the
 * worker reaches them through the loaded backend below. */
extern const model_ops model_cuda_ops;   /* kernels/cuda/ */
extern const model_ops model_cuda_llama_ops;   /* kernels/cuda/model_llama.cu: the Llama-style model */
#endif

/* ---- the CUDA backend as a loadable object (kernels/backend.c loads it) ------------------------------------
 * The CUDA backend is a shared object, prism-cuda.so (built by `make` when nvcc is found; the emulator's are
 * prism-cuda.emu-bf16.so / .emu-fp32.so), that exports one symbol, MODEL_BACKEND_SYMBOL, a struct model_backend.
 * prism-worker links no CUDA library: it loads the object (dlopen) only when a job asks for a CUDA device.
 * Which file: $PRISM_CUDA_BACKEND (a path) when set, else prism-cuda.so in the directory of the running binary.
 * MODEL_BACKEND_ABI changes whenever this struct, model_ops, model_config or adamw_params change (layout or
 * meaning); the loader refuses an object whose abi or struct sizes differ from its own. */
#define MODEL_BACKEND_ABI 1
#define MODEL_BACKEND_SYMBOL "prism_model_backend"
#define MODEL_BACKEND_FILE "prism-cuda.so"
#define MODEL_BACKEND_ENV "PRISM_CUDA_BACKEND"

struct model_backend {
    uint32_t abi;                   /* MODEL_BACKEND_ABI the object was built with: read first, alone */
    uint32_t size;                  /* sizeof(struct model_backend) */
    uint32_t ops_size;              /* sizeof(model_ops) */
    uint32_t config_size;           /* sizeof(struct model_config) */
    const char *name;               /* "cuda", or "cuda-emulator" (tests/cudaemu) */
    const char *precision;          /* "bf16" or "fp32": the build's activation/weight type */
    const model_ops *gpt2;          /* MODEL_ARCH_GPT2 */
    const model_ops *llama;         /* MODEL_ARCH_LLAMA */
    /* 0 when CUDA device `device` can be used here; else -1 with why and the fix in err (no driver, no device,
     * an index past the last one, a broken runtime). Cheap next to create; creates no model. */
    int (*device_check)(int device, char *err, size_t errlen);
};
#ifdef PRISM_HAVE_CUDA
extern const struct model_backend prism_model_backend;   /* kernels/cuda/model_cuda.cu */
#endif

/* The CUDA backend of this process, loaded on first use (thread-safe; later calls return the same result):
 * the backend linked into the binary when there is one (the kernel tests), else the object above. NULL when it
 * cannot be had, with one message in err naming the file and the fix (absent file, not a regular file, not
 * loadable, no MODEL_BACKEND_SYMBOL or one that is not a data object of this struct's size, another ABI, a NULL
 * name, device_check, model table or model_ops entry). *path (if path) = the file loaded ("" when linked in), owned by the
 * loader, valid until exit. Never called on a CPU run. */
const struct model_backend *model_backend_load(const char **path, char *err, size_t errlen);
/* The file model_backend_load() would load: $PRISM_CUDA_BACKEND, else MODEL_BACKEND_FILE next to the binary.
 * 0, or -1 when neither can be named (err says why). */
int model_backend_path(char *out, size_t outlen, char *err, size_t errlen);

/* The backend table for cfg->arch on the device ops was chosen for (model_ops_for_device): the CUDA GPT-2 table
 * becomes the CUDA Llama one for MODEL_ARCH_LLAMA; the CPU table serves both. */
const model_ops *model_ops_for_arch(const model_ops *ops, int arch);

/* The tensor sizes in the arch's order (16 for GPT-2; 9 then zeros for llama), and their sum. */
void model_param_sizes(const struct model_config *cfg, size_t sizes[MODEL_NUM_TENSORS]);
size_t model_num_params(const struct model_config *cfg);
/* 1 when tensor i (llm.c order) gets weight decay (the matrices). */
int model_tensor_decays(int i);
/* 1 when tensor i of cfg's arch gets weight decay (the 2-D tensors). */
int model_arch_tensor_decays(const struct model_config *cfg, int i);
/* Llama's default MLP hidden size: 8·C/3 rounded up to a multiple of 64 (768 → 2048, 1024 → 2752). */
int model_llama_default_ffn(int C);
/* "gpt2" / "llama" for cfg->arch. */
const char *model_arch_name(int arch);
/* Training FLOPs per token (forward + backward): 6·(matmul params incl. classifier V·C) + 6·L·T·C
 * attention (causal: half of the PaLM 12·L·T·C). */
double model_flops_per_token(const struct model_config *cfg, int T);
/* (llama: the matmul params are L·(4C² + 3·H·C), SwiGLU's three matrices, plus V·C.) */

/* GPT-2 init from seed into params (host float32, llm.c order): N(0, 0.02), residual projections
 * (attprojw, fcprojw) N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1; padded wte rows 0.
 * Independent of the schedule; identical for the same seed on every machine (own PRNG, sequential). */
void model_init_params(const struct model_config *cfg, uint64_t seed, float *params);
/* (llama, cfg->arch == MODEL_ARCH_LLAMA: N(0, 0.02) for wte qkvw fcw fcgw, N(0, 0.02/sqrt(2L)) for attprojw
 * fcprojw, norm weights 1, padded wte rows 0.) */

/* The backend for a device string: "cpu" → model_cpu_ops (device -1), which loads nothing; "0", "cuda:0" → the
 * CUDA backend's GPT-2 table (model_backend_load), after its device_check said the device is usable. NULL if
 * unavailable: a malformed device string, no backend (model_backend_load's message), or an unusable device;
 * err says which and the fix. */
const model_ops *model_ops_for_device(const char *device, int *device_index, char *err, size_t errlen);
#endif
