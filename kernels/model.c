/* model.c — what every backend shares: the llm.c tensor table (sizes, which tensors decay), the FLOP
 * count and the GPT-2 initialisation. Picking a backend from a device string (and loading the CUDA one) is
 * model_backend.c's; this file is also linked into the CUDA backend object (prism-cuda.so), which uses the table.
 *
 * Initialisation uses its own PRNG (splitmix64 → Box-Muller) and fills the tensors in llm.c order on one
 * thread, so the same seed gives the same weights on every machine, for every schedule and backend.
 */
#include "model.h"
#include "util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void llama_param_sizes(const struct model_config *c, size_t s[MODEL_NUM_TENSORS]) {
    size_t L = c->L, C = c->C, H = c->H;
    memset(s, 0, MODEL_NUM_TENSORS * sizeof s[0]);
    s[0] = (size_t)c->Vp * C;   /* wte */
    s[1] = L * C;               /* attnormw */
    s[2] = L * 3 * C * C;       /* qkvw */
    s[3] = L * C * C;           /* attprojw */
    s[4] = L * C;               /* mlpnormw */
    s[5] = L * H * C;           /* fcw (W_up) */
    s[6] = L * H * C;           /* fcgw (W_gate) */
    s[7] = L * C * H;           /* fcprojw (W_down) */
    s[8] = C;                   /* normfw */
}

int model_llama_default_ffn(int C) {
    long h = (8L * C + 2) / 3;
    return (int)((h + 63) / 64 * 64);
}

const char *model_arch_name(int arch) { return arch == MODEL_ARCH_LLAMA ? "llama" : "gpt2"; }

int model_arch_tensor_decays(const struct model_config *c, int i) {
    if (c->arch == MODEL_ARCH_LLAMA) return i == 0 || i == 2 || i == 3 || i == 5 || i == 6 || i == 7;
    return model_tensor_decays(i);
}

void model_param_sizes(const struct model_config *c, size_t s[MODEL_NUM_TENSORS]) {
    if (c->arch == MODEL_ARCH_LLAMA) { llama_param_sizes(c, s); return; }
    size_t L = c->L, C = c->C;
    s[0] = (size_t)c->Vp * C;   /* wte */
    s[1] = (size_t)c->maxT * C; /* wpe */
    s[2] = L * C;               /* ln1w */
    s[3] = L * C;               /* ln1b */
    s[4] = L * 3 * C * C;       /* qkvw */
    s[5] = L * 3 * C;           /* qkvb */
    s[6] = L * C * C;           /* attprojw */
    s[7] = L * C;               /* attprojb */
    s[8] = L * C;               /* ln2w */
    s[9] = L * C;               /* ln2b */
    s[10] = L * 4 * C * C;      /* fcw */
    s[11] = L * 4 * C;          /* fcb */
    s[12] = L * C * 4 * C;      /* fcprojw */
    s[13] = L * C;              /* fcprojb */
    s[14] = C;                  /* lnfw */
    s[15] = C;                  /* lnfb */
}

size_t model_num_params(const struct model_config *c) {
    size_t s[MODEL_NUM_TENSORS], n = 0;
    model_param_sizes(c, s);
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) n += s[i];
    return n;
}

int model_tensor_decays(int i) {
    return i == 0 || i == 1 || i == 4 || i == 6 || i == 10 || i == 12;
}

double model_flops_per_token(const struct model_config *c, int T) {
    double L = c->L, C = c->C;
    double matmul_params = L * 12.0 * C * C + (double)c->V * C;
    if (c->arch == MODEL_ARCH_LLAMA) matmul_params = L * (4.0 * C * C + 3.0 * c->H * C) + (double)c->V * C;
    return 6.0 * matmul_params + 6.0 * L * T * C;
}


static void fill_normal(float *p, size_t n, double std, uint64_t *s) {
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((util_splitmix64(s) >> 11) + 1.0) * (1.0 / 9007199254740993.0);   /* (0, 1] */
        double u2 = (util_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
        p[i] = (float)(r * cos(th) * std);
        if (i + 1 < n) p[i + 1] = (float)(r * sin(th) * std);
    }
}

void model_init_params(const struct model_config *c, uint64_t seed, float *params) {
    size_t s[MODEL_NUM_TENSORS];
    model_param_sizes(c, s);
    uint64_t st = seed ^ 0x5052495332303236ULL;   /* "PRIS2026" */
    double resid_std = 0.02 / sqrt(2.0 * c->L);
    float *p = params;
    if (c->arch == MODEL_ARCH_LLAMA) {
        for (int i = 0; i < MODEL_LLAMA_NUM_TENSORS; i++) {
            if (i == 1 || i == 4 || i == 8)        /* RMSNorm weights */
                for (size_t k = 0; k < s[i]; k++) p[k] = 1.0f;
            else
                fill_normal(p, s[i], (i == 3 || i == 7) ? resid_std : 0.02, &st);
            p += s[i];
        }
        memset(params + (size_t)c->V * c->C, 0, (size_t)(c->Vp - c->V) * c->C * sizeof(float));
        return;
    }
    for (int i = 0; i < MODEL_NUM_TENSORS; i++) {
        switch (i) {
        case 2: case 8: case 14:                   /* LayerNorm weights */
            for (size_t k = 0; k < s[i]; k++) p[k] = 1.0f;
            break;
        case 0: case 1: case 4: case 10:
            fill_normal(p, s[i], 0.02, &st);
            break;
        case 6: case 12:
            fill_normal(p, s[i], resid_std, &st);
            break;
        default:                                   /* biases */
            memset(p, 0, s[i] * sizeof(float));
        }
        p += s[i];
    }
    /* padded vocabulary rows never score (the classifier ignores them) and start at zero */
    memset(params + (size_t)c->V * c->C, 0, (size_t)(c->Vp - c->V) * c->C * sizeof(float));
}
