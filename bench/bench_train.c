/* bench_train.c — CPU training speed: tokens/s of a fixed GPT-2 config and the ratio of its training
 * FLOP/s to OpenBLAS sgemm FLOP/s on a large square matrix, both measured in this run.
 *
 * Config: L=6, C=256, T=256, B=8, V=4096 (padded 4096), heads 2,2,4,4,8,8 (Prism-style) and 8×6 (uniform).
 * FLOPs per token are model_flops_per_token() (6·matmul params + 6·L·T·C causal attention).
 * Reference: cblas_sgemm 2048×2048×2048 with OpenBLAS on all cores (best of 3). The trainer then runs with
 * its own OpenMP threads (OpenBLAS at one thread per call), as in production.
 * The VM is shared, so each training measurement (BENCH_STEPS steps, default 4) is bracketed by two sgemm
 * measurements and divided by their mean; 3 rounds alternate the schedules; medians are printed last.
 * "per CPU-second" divides by process CPU time instead of wall time (OpenMP waits sleep, so time lost to
 * other processes on the cores does not count): the kernels' efficiency, stable under load.
 */
#include "model.h"
#include "train_cpu.h"
#include "util.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    /* as prism-worker does: sleeping (not spinning) OpenMP waits, set before libgomp starts */
    if (!getenv("OMP_WAIT_POLICY")) { setenv("OMP_WAIT_POLICY", "PASSIVE", 1); execv("/proc/self/exe", argv); }
    int steps = getenv("BENCH_STEPS") ? atoi(getenv("BENCH_STEPS")) : 4;
    if (steps < 1) steps = 4;
    enum { ROUNDS = 3 };
    int threads = omp_get_max_threads();
    const int prism[6] = {2, 2, 4, 4, 8, 8}, uniform[6] = {8, 8, 8, 8, 8, 8};
    const char *names[2] = {"prism 2,2,4,4,8,8", "uniform 8x6"};
    struct bench_trainer tr[2];
    for (int i = 0; i < 2; i++) {
        struct model_config c = {.L = 6, .C = 256, .V = 4096, .Vp = 4096, .maxT = 256, .B = 8, .T = 256};
        memcpy(c.heads, i == 0 ? prism : uniform, 6 * sizeof(int));
        bench_trainer_init(&tr[i], &c);
    }
    bench_trainer_run(&tr[0], 2, NULL);                /* warm-up: first touch of every buffer */
    bench_trainer_run(&tr[1], 2, NULL);
    double flops_tok = model_flops_per_token(&tr[0].c, tr[0].c.T);
    double tps[2][ROUNDS], ratio[2][ROUNDS], cratio[2][ROUNDS], ref_all[2 * ROUNDS];
    /* the machine is shared: each training measurement is bracketed by sgemm measurements and compared
     * with their mean, and the rounds alternate the two schedules */
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < 2; i++) {
            tps[i][r] = bench_trainer_bracketed(&tr[i], steps, flops_tok, &ref_all[2 * r + i], &ratio[i][r], &cratio[i][r]);
            printf("round %d  %-18s %7.0f tok/s  %6.1f GFLOP/s  sgemm %6.1f GFLOP/s  ratio %.2f  (per CPU-second: %.2f)\n",
                   r + 1, names[i], tps[i][r], tps[i][r] * flops_tok / 1e9, ref_all[2 * r + i] / 1e9, ratio[i][r], cratio[i][r]);
        }
    qsort(ref_all, 2 * ROUNDS, sizeof(double), bench_cmp_double);
    printf("config: L=6 C=256 T=256 B=8 V=4096, %.2f MFLOP/token, %d threads, %d steps per measurement\n",
           flops_tok / 1e6, threads, steps);
    printf("sgemm 2048^3 (OpenBLAS, %d threads): median %.1f GFLOP/s\n", threads, ref_all[ROUNDS] / 1e9);
    for (int i = 0; i < 2; i++) {
        qsort(tps[i], ROUNDS, sizeof(double), bench_cmp_double);
        qsort(ratio[i], ROUNDS, sizeof(double), bench_cmp_double);
        qsort(cratio[i], ROUNDS, sizeof(double), bench_cmp_double);
        printf("train %-18s median %7.0f tok/s   training FLOP/s / sgemm FLOP/s: median %.2f (range %.2f-%.2f);"
               " per CPU-second %.2f\n", names[i], tps[i][ROUNDS / 2], ratio[i][ROUNDS / 2], ratio[i][0],
               ratio[i][ROUNDS - 1], cratio[i][ROUNDS / 2]);
    }
    for (int i = 0; i < 2; i++) {
        bench_trainer_release(&tr[i]);
    }
    return 0;
}
