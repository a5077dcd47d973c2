/* bench_util.h — the one piece every benchmark family here shares (train_cpu.h, server_bench.h): the sort
 * order for latency and throughput samples. Header-only (static functions): each benchmark is one program.
 *
 * bench_cmp_double: qsort comparator for doubles, ascending.
 * bench_parse_heads: a head schedule like "3,3,6,6,8,8,12x6" (NxR repeats N R times) into heads[max]; returns the
 *   layer count, or -1 on a malformed list or more than max layers (bench_cuda_gpt2, bench_step_cost).
 */
#ifndef PRISM_BENCH_UTIL_H
#define PRISM_BENCH_UTIL_H

static __attribute__((unused)) int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#include <stdlib.h>
static __attribute__((unused)) int bench_parse_heads(const char *s, int *heads, int max) {
    int n = 0;
    while (*s) {
        char *end;
        long h = strtol(s, &end, 10), rep = 1;
        if (end == s || h < 1) return -1;
        if (*end == 'x') { const char *r = end + 1; rep = strtol(r, &end, 10); if (end == r || rep < 1) return -1; }
        for (long i = 0; i < rep; i++) { if (n >= max) return -1; heads[n++] = (int)h; }
        if (*end == ',') end++;
        else if (*end) return -1;
        s = end;
    }
    return n;
}
#endif
