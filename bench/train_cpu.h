/* train_cpu.h — what the CPU training benchmarks share (bench_train.c, bench_train_arch.c): process CPU time,
 * the sgemm yardstick, a trainer that runs full steps of the CPU engine on fixed synthetic tokens, and one
 * training measurement bracketed by sgemm measurements.
 * Header-only (static functions): each benchmark is one program. */
#ifndef PRISM_BENCH_TRAIN_CPU_H
#define PRISM_BENCH_TRAIN_CPU_H

#include "bench_util.h"
#include "model.h"
#include "util.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double bench_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* OpenBLAS sgemm n×n×n: returns wall FLOP/s (best of 3); *per_cpu = FLOP per CPU-second of the same best run. */
static double bench_sgemm_flops(int n, double *per_cpu) {
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
    openblas_set_num_threads(omp_get_max_threads());
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = util_now_s(), c0 = bench_cpu_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double dt = util_now_s() - t0, dc = bench_cpu_s() - c0;
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
    }
    free(a); free(b); free(c);
    *per_cpu = 2.0 * n * n * n / best_cpu;
    return 2.0 * n * n * n / best;
}

struct bench_trainer {
    struct model_config c;
    model *m;
    int *in, *tg;   /* (B*T) fixed pseudo-random tokens */
    int t;          /* AdamW step */
};

/* A CPU model of config c, initialised from seed 1, with fixed tokens; exits on failure (a benchmark edge). */
static void bench_trainer_init(struct bench_trainer *tr, const struct model_config *c) {
    tr->c = *c;
    char err[512];
    if (model_cpu_ops.create(&tr->c, -1, &tr->m, err, sizeof err)) { fprintf(stderr, "create: %s\n", err); exit(1); }
    float *p = malloc(model_num_params(&tr->c) * 4);
    model_init_params(&tr->c, 1, p);
    model_cpu_ops.set_params(tr->m, p);
    free(p);
    int n = c->B * c->T;
    tr->in = malloc(n * sizeof(int));
    tr->tg = malloc(n * sizeof(int));
    uint32_t s = 1;
    for (int i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; tr->in[i] = (s >> 8) % c->V; tr->tg[i] = (s >> 16) % c->V; }
    tr->t = 0;
}

/* Runs `steps` full training steps (zero_grad, forward+backward, AdamW); returns tokens/s (wall) and
 * *tok_cpu = tokens per CPU-second (when not NULL). */
static double bench_trainer_run(struct bench_trainer *tr, int steps, double *tok_cpu) {
    struct adamw_params hp = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1};
    double t0 = util_now_s(), c0 = bench_cpu_s();
    for (int k = 0; k < steps; k++) {
        float loss, gn;
        model_cpu_ops.zero_grad(tr->m);
        model_cpu_ops.forward_backward(tr->m, tr->in, tr->tg, tr->c.B, tr->c.T, 1.0f, &loss);
        model_cpu_ops.update(tr->m, &hp, ++tr->t, &gn);
    }
    double tok = (double)steps * tr->c.B * tr->c.T;
    if (tok_cpu) *tok_cpu = tok / (bench_cpu_s() - c0);
    return tok / (util_now_s() - t0);
}

/* One measurement on a shared machine: sgemm, `steps` of tr, sgemm again. Returns tokens/s (wall); *ref = the
 * mean of the two sgemm FLOP/s around it, *ratio = training FLOP/s (flops_tok per token) over *ref, *cratio =
 * the same per CPU-second (so another process's load cancels out). */
static double bench_trainer_bracketed(struct bench_trainer *tr, int steps, double flops_tok, double *ref, double *ratio,
                                      double *cratio) {
    double cb, ca, tc;
    double before = bench_sgemm_flops(2048, &cb);
    double tps = bench_trainer_run(tr, steps, &tc);
    double after = bench_sgemm_flops(2048, &ca);
    *ref = 0.5 * (before + after);
    *ratio = tps * flops_tok / *ref;
    *cratio = tc * flops_tok / (0.5 * (cb + ca));
    return tps;
}

static void bench_trainer_release(struct bench_trainer *tr) {
    model_cpu_ops.free(tr->m);
    free(tr->in); free(tr->tg);
}

#endif
