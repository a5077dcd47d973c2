/* bench_util.h — the one piece every benchmark family here shares (train_cpu.h, server_bench.h): the sort
 * order for latency and throughput samples. Header-only (static functions): each benchmark is one program.
 *
 * bench_cmp_double: qsort comparator for doubles, ascending.
 */
#ifndef PRISM_BENCH_UTIL_H
#define PRISM_BENCH_UTIL_H

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#endif
