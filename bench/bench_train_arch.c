/* bench_train_arch.c — CPU training efficiency of the two architectures side by side: the Llama-style
 * model's training FLOP/s ÷ OpenBLAS sgemm FLOP/s next to GPT-2's, same shape and schedule.
 *
 * Config: L=6, C=256, T=256, B=8, V=4096, heads 2,2,4,4,8,8 (head sizes 128, 64, 32); llama with the default
 * SwiGLU hidden size 704 and θ = 10000. FLOPs per token are model_flops_per_token() for each arch (llama
 * counts SwiGLU's three matrices). As in bench_train.c: each measurement (BENCH_STEPS steps, default 4) is
 * bracketed by two sgemm 2048³ runs and divided by their mean, 3 rounds alternate the archs, medians last;
 * "per CPU-second" uses process CPU time (stable under load on a shared VM).
 */
#include "model.h"
#include "util.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double sgemm_flops(int n, double *per_cpu) {
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; }
    openblas_set_num_threads(omp_get_max_threads());
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = util_now_s(), c0 = cpu_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double dt = util_now_s() - t0, dc = cpu_s() - c0;
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
    }
    free(a); free(b); free(c);
    *per_cpu = 2.0 * n * n * n / best_cpu;
    return 2.0 * n * n * n / best;
}

struct arch_trainer {
    struct model_config c;
    model *m;
    int *in, *tg;
    int t;
};

static void arch_trainer_init(struct arch_trainer *tr, int arch) {
    struct model_config c = {.L = 6, .C = 256, .V = 4096, .Vp = 4096, .maxT = 256, .B = 8, .T = 256,
                             .heads = {2, 2, 4, 4, 8, 8}, .arch = arch};
    if (arch == MODEL_ARCH_LLAMA) { c.H = model_llama_default_ffn(c.C); c.rope_theta = 10000; }
    tr->c = c;
    char err[512];
    if (model_cpu_ops.create(&c, -1, &tr->m, err, sizeof err)) { fprintf(stderr, "create: %s\n", err); exit(1); }
    float *p = malloc(model_num_params(&c) * 4);
    model_init_params(&c, 1, p);
    model_cpu_ops.set_params(tr->m, p);
    free(p);
    int n = c.B * c.T;
    tr->in = malloc(n * sizeof(int));
    tr->tg = malloc(n * sizeof(int));
    uint32_t s = 1;
    for (int i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; tr->in[i] = (s >> 8) % c.V; tr->tg[i] = (s >> 16) % c.V; }
    tr->t = 0;
}

static double arch_trainer_run(struct arch_trainer *tr, int steps, double *tok_cpu) {
    struct adamw_params hp = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1};
    double t0 = util_now_s(), c0 = cpu_s();
    for (int k = 0; k < steps; k++) {
        float loss, gn;
        model_cpu_ops.zero_grad(tr->m);
        model_cpu_ops.forward_backward(tr->m, tr->in, tr->tg, tr->c.B, tr->c.T, 1.0f, &loss);
        model_cpu_ops.update(tr->m, &hp, ++tr->t, &gn);
    }
    double tok = (double)steps * tr->c.B * tr->c.T;
    if (tok_cpu) *tok_cpu = tok / (cpu_s() - c0);
    return tok / (util_now_s() - t0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (!getenv("OMP_WAIT_POLICY")) { setenv("OMP_WAIT_POLICY", "PASSIVE", 1); execv("/proc/self/exe", argv); }
    int steps = getenv("BENCH_STEPS") ? atoi(getenv("BENCH_STEPS")) : 4;
    if (steps < 1) steps = 4;
    enum { ROUNDS = 3 };
    const char *names[2] = {"gpt2", "llama"};
    struct arch_trainer tr[2];
    arch_trainer_init(&tr[0], MODEL_ARCH_GPT2);
    arch_trainer_init(&tr[1], MODEL_ARCH_LLAMA);
    arch_trainer_run(&tr[0], 2, NULL);
    arch_trainer_run(&tr[1], 2, NULL);
    double ftok[2] = {model_flops_per_token(&tr[0].c, 256), model_flops_per_token(&tr[1].c, 256)};
    double tps[2][ROUNDS], ratio[2][ROUNDS], cratio[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < 2; i++) {
            double cb, ca, tc;
            double before = sgemm_flops(2048, &cb);
            tps[i][r] = arch_trainer_run(&tr[i], steps, &tc);
            double after = sgemm_flops(2048, &ca);
            ratio[i][r] = tps[i][r] * ftok[i] / (0.5 * (before + after));
            cratio[i][r] = tc * ftok[i] / (0.5 * (cb + ca));
            printf("round %d  %-6s %7.0f tok/s  %6.1f GFLOP/s  ratio %.2f  (per CPU-second: %.2f)\n", r + 1, names[i],
                   tps[i][r], tps[i][r] * ftok[i] / 1e9, ratio[i][r], cratio[i][r]);
        }
    printf("config: L=6 C=256 T=256 B=8 V=4096 heads 2,2,4,4,8,8; gpt2 %.2f MFLOP/token, llama (H=%d) %.2f MFLOP/token; "
           "%d threads, %d steps per measurement\n", ftok[0] / 1e6, tr[1].c.H, ftok[1] / 1e6, omp_get_max_threads(), steps);
    double med[2], cmed[2];
    for (int i = 0; i < 2; i++) {
        qsort(tps[i], ROUNDS, sizeof(double), cmp_double);
        qsort(ratio[i], ROUNDS, sizeof(double), cmp_double);
        qsort(cratio[i], ROUNDS, sizeof(double), cmp_double);
        med[i] = ratio[i][ROUNDS / 2]; cmed[i] = cratio[i][ROUNDS / 2];
        printf("train %-6s median %7.0f tok/s   training FLOP/s / sgemm FLOP/s: median %.2f (range %.2f-%.2f); per CPU-second %.2f\n",
               names[i], tps[i][ROUNDS / 2], med[i], ratio[i][0], ratio[i][ROUNDS - 1], cmed[i]);
    }
    printf("llama / gpt2 efficiency: %.2f (wall), %.2f (per CPU-second)\n", med[1] / med[0], cmed[1] / cmed[0]);
    for (int i = 0; i < 2; i++) {
        model_cpu_ops.free(tr[i].m);
        free(tr[i].in); free(tr[i].tg);
    }
    return 0;
}
