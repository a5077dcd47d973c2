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
    if (!getenv("OMP_WAIT_POLICY")) { setenv("OMP_WAIT_POLICY", "PASSIVE", 1); execv("/proc/self/exe", argv); }
    int steps = getenv("BENCH_STEPS") ? atoi(getenv("BENCH_STEPS")) : 4;
    if (steps < 1) steps = 4;
    enum { ROUNDS = 3 };
    const char *names[2] = {"gpt2", "llama"};
    struct bench_trainer tr[2];
    for (int i = 0; i < 2; i++) {
        struct model_config c = {.L = 6, .C = 256, .V = 4096, .Vp = 4096, .maxT = 256, .B = 8, .T = 256,
                                 .heads = {2, 2, 4, 4, 8, 8}, .arch = i ? MODEL_ARCH_LLAMA : MODEL_ARCH_GPT2};
        if (c.arch == MODEL_ARCH_LLAMA) { c.H = model_llama_default_ffn(c.C); c.rope_theta = 10000; }
        bench_trainer_init(&tr[i], &c);
    }
    bench_trainer_run(&tr[0], 2, NULL);
    bench_trainer_run(&tr[1], 2, NULL);
    double ftok[2] = {model_flops_per_token(&tr[0].c, 256), model_flops_per_token(&tr[1].c, 256)};
    double tps[2][ROUNDS], ratio[2][ROUNDS], cratio[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < 2; i++) {
            double ref;
            tps[i][r] = bench_trainer_bracketed(&tr[i], steps, ftok[i], &ref, &ratio[i][r], &cratio[i][r]);
            printf("round %d  %-6s %7.0f tok/s  %6.1f GFLOP/s  ratio %.2f  (per CPU-second: %.2f)\n", r + 1, names[i],
                   tps[i][r], tps[i][r] * ftok[i] / 1e9, ratio[i][r], cratio[i][r]);
        }
    printf("config: L=6 C=256 T=256 B=8 V=4096 heads 2,2,4,4,8,8; gpt2 %.2f MFLOP/token, llama (H=%d) %.2f MFLOP/token; "
           "%d threads, %d steps per measurement\n", ftok[0] / 1e6, tr[1].c.H, ftok[1] / 1e6, omp_get_max_threads(), steps);
    double med[2], cmed[2];
    for (int i = 0; i < 2; i++) {
        qsort(tps[i], ROUNDS, sizeof(double), bench_cmp_double);
        qsort(ratio[i], ROUNDS, sizeof(double), bench_cmp_double);
        qsort(cratio[i], ROUNDS, sizeof(double), bench_cmp_double);
        med[i] = ratio[i][ROUNDS / 2]; cmed[i] = cratio[i][ROUNDS / 2];
        printf("train %-6s median %7.0f tok/s   training FLOP/s / sgemm FLOP/s: median %.2f (range %.2f-%.2f); per CPU-second %.2f\n",
               names[i], tps[i][ROUNDS / 2], med[i], ratio[i][0], ratio[i][ROUNDS - 1], cmed[i]);
    }
    printf("llama / gpt2 efficiency: %.2f (wall), %.2f (per CPU-second)\n", med[1] / med[0], cmed[1] / cmed[0]);
    for (int i = 0; i < 2; i++) {
        bench_trainer_release(&tr[i]);
    }
    return 0;
}
