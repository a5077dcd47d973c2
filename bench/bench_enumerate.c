/* bench/bench_enumerate.c — the schedule enumerator's speed: exact counting by dynamic programming
 * versus walking every schedule, for L=48, d_model=1600, --max-head-dim 0 (the figure), both through
 * the library and through the real `prism-sweep enumerate` command (fork + exec, output to /dev/null).
 * Also counts a set far too large to list, to show that --count does not depend on the size of the list.
 * Each figure is the median of several runs (the machine is shared and noisy).
 *
 *   bench_enumerate            (finds prism-sweep in $BUILD, default build/)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "schedule.h"
#include "util.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_d);
    return v[n / 2];
}

static int noop(const int *heads, int L, void *ctx) {
    (*(long long *)ctx) += heads[0];   /* touch the data so the walk is not optimised away */
    return 0;
}

/* wall seconds of prism-sweep ARGS with stdout to /dev/null; -1 on failure */
static double run_cli(const char *bin, char *const argv[]) {
    double t0 = util_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execv(bin, argv);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return util_now_s() - t0;
}

int main(void) {
    schedule_rules r;
    schedule_rules_default(&r);
    r.L = 48;
    r.d_model = 1600;
    r.max_head_dim = 0;
    schedule_count_t n;
    char num[64];
    if (schedule_count(&r, &n) != 0) { fprintf(stderr, "count failed\n"); return 1; }
    printf("enumerator: L=48, d_model=1600, h_base=25, --max-head-dim 0 (other rules default): %s schedules\n",
           schedule_count_str(n, num, sizeof num));

    enum { RUNS = 7 };
    double t[RUNS];
    for (int i = 0; i < RUNS; i++) {
        double t0 = util_now_s();
        for (int k = 0; k < 100; k++) schedule_count(&r, &n);
        t[i] = (util_now_s() - t0) / 100;
    }
    printf("  schedule_count (library)          %10.1f us\n", median(t, RUNS) * 1e6);
    long long sink = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = util_now_s();
        schedule_enumerate(&r, noop, &sink);
        t[i] = util_now_s() - t0;
    }
    double te = median(t, RUNS);
    printf("  schedule_enumerate (library)      %10.2f ms  (%.1f M schedules/s)\n", te * 1e3, (double)n / te / 1e6);

    const char *build = getenv("BUILD");
    char bin[4096];
    snprintf(bin, sizeof bin, "%s/prism-sweep", build && *build ? build : "build");
    if (access(bin, X_OK) == 0) {
        char *count_argv[] = { bin, "enumerate", "--L", "48", "--dmodel", "1600", "--max-head-dim", "0", "--count",
                               NULL };
        char *list_argv[] = { bin, "enumerate", "--L", "48", "--dmodel", "1600", "--max-head-dim", "0", NULL };
        char *json_argv[] = { bin, "enumerate", "--L", "48", "--dmodel", "1600", "--max-head-dim", "0", "--format",
                              "json", NULL };
        for (int i = 0; i < RUNS; i++) t[i] = run_cli(bin, count_argv);
        printf("  prism-sweep enumerate --count     %10.2f ms wall (process start included)\n", median(t, RUNS) * 1e3);
        for (int i = 0; i < RUNS; i++) t[i] = run_cli(bin, list_argv);
        double tl = median(t, RUNS);
        printf("  prism-sweep enumerate > /dev/null %10.2f ms wall  (%.2f M lines/s)\n", tl * 1e3, (double)n / tl / 1e6);
        for (int i = 0; i < 3; i++) t[i] = run_cli(bin, json_argv);
        printf("  prism-sweep enumerate --format json %8.2f ms wall\n", median(t, 3) * 1e3);
    } else {
        printf("  (%s not built: CLI timings skipped)\n", bin);
    }

    /* a set far too large to list: L=200, d=1600, h_base=1600, no head-dim bound, blocks 1..unbounded */
    schedule_rules big = r;
    big.L = 200;
    big.h_base = 1600;
    big.min_block = 1;
    big.max_block = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = util_now_s();
        schedule_count(&big, &n);
        t[i] = util_now_s() - t0;
    }
    printf("  schedule_count L=200 d=1600 h_base=1600 blocks 1..any: %s schedules in %.1f us\n",
           schedule_count_str(n, num, sizeof num), median(t, RUNS) * 1e6);
    return sink == 42 ? 1 : 0;
}
