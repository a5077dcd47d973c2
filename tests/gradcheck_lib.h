/* gradcheck_lib.h — what the two whole-model gradient checks share (test_gradcheck.c for GPT-2,
 * test_gradcheck_llama.c for the Llama-style model): the xorshift draws behind their weights and tokens, and
 * the check of the product's float32 CPU backend (model_cpu_ops) against the double build of the same model.
 * Include once, after harness.h and the double build (PRISM_REAL_DOUBLE) of the model; define
 * GRADCHECK_SEED first (each test keeps its own draws).
 */
#ifndef PRISM_GRADCHECK_LIB_H
#define PRISM_GRADCHECK_LIB_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model.h"

static uint64_t rng_state = GRADCHECK_SEED;
static double urand(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-300)) * cos(2 * M_PI * urand()); }

/* Runs one forward + backward of model_cpu_ops (float32) built from cfg with the double weights `params`
 * (nparams, rounded to float) on in/tg (B=2, T=6, loss scale 1), and compares with the double build's loss
 * `loss_double` (relative 1e-5) and gradients `grads` tensor by tensor (ntensors, sizes, names): every
 * float gradient within 1e-4 of the tensor's largest |gradient| (+1e-9). Prints each tensor's figures. */
static void gradcheck_float_backend(const struct model_config *cfg, const double *params, const double *grads,
                                    size_t nparams, const int *in, const int *tg, double loss_double,
                                    int ntensors, const size_t *sizes, const char *const *names) {
    struct model_config c = *cfg;
    model *m = NULL;
    char err[512];
    ASSERT_EQ_INT(0, model_cpu_ops.create(&c, -1, &m, err, sizeof err));
    float *pf = malloc(nparams * 4), *gf = malloc(nparams * 4);
    for (size_t i = 0; i < nparams; i++) pf[i] = (float)params[i];
    model_cpu_ops.set_params(m, pf);
    model_cpu_ops.zero_grad(m);
    float lf;
    ASSERT_EQ_INT(0, model_cpu_ops.forward_backward(m, in, tg, 2, 6, 1.0f, &lf));
    model_cpu_ops.get_grads(m, gf);
    printf("loss float %.9g double %.12g\n", lf, loss_double);
    ASSERT_NEAR(loss_double, lf, 1e-5 * fabs(loss_double));
    size_t off = 0;
    for (int i = 0; i < ntensors; i++) {
        double gmax = 0, worst = 0;
        for (size_t k = 0; k < sizes[i]; k++) if (fabs(grads[off + k]) > gmax) gmax = fabs(grads[off + k]);
        for (size_t k = 0; k < sizes[i]; k++) {
            double d = fabs(grads[off + k] - gf[off + k]);
            if (d > worst) worst = d;
        }
        printf("%-9s max |grad| %.4g  max |float - double| %.3g\n", names[i], gmax, worst);
        if (worst > 1e-4 * gmax + 1e-9) HFAIL("%s: float gradient off by %.3g (max |grad| %.3g, tol 1e-4 of it)", names[i], worst, gmax);
        off += sizes[i];
    }
    free(pf); free(gf);
    model_cpu_ops.free(m);
}
#endif
