/* tests/mc_rng.h — the Monte Carlo tests' deterministic generator: SplitMix64 for uniforms in (0, 1), Box–Muller
 * for standard normals. A fixed seed gives the same stream on every machine, so a simulated rate is a fixed number.
 * Include once per test file (static functions).
 */
#ifndef PRISM_TEST_MC_RNG_H
#define PRISM_TEST_MC_RNG_H
#include <math.h>

typedef struct { unsigned long long s; int have; double next; } rng;
static __attribute__((unused)) double unif(rng *g) {
    unsigned long long z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((z >> 11) + 0.5) / 9007199254740992.0;
}
static __attribute__((unused)) double gauss(rng *g) {
    if (g->have) { g->have = 0; return g->next; }
    double u1 = unif(g), u2 = unif(g), r = sqrt(-2 * log(u1));
    g->next = r * sin(2 * M_PI * u2);
    g->have = 1;
    return r * cos(2 * M_PI * u2);
}
#endif
