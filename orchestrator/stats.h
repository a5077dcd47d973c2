/* stats.h — the distributions and tests behind the ranking (orchestrator/ranking.c): Student's t, the normal,
 * chi-square (Bartlett's test), the studentized range (the best group), the paired t-test, Holm's step-down
 * adjustment, and the approximate power of a t-test.
 *
 * Everything is pure (no allocation, no I/O). NAN marks "not computable" (too few values); callers print it
 * as null.
 */
#ifndef PRISM_STATS_H
#define PRISM_STATS_H

/* Two-sided tail probability P(|T| >= |t|) of Student's t with df > 0 degrees of freedom; NAN if df <= 0 or t
 * is not finite. */
double stats_t_p2(double t, double df);
/* The quantile q with P(T <= q) = p, 0 < p < 1, df > 0 (e.g. p = 0.975 for a two-sided 95% interval). NAN
 * outside that domain. Accurate to ~1e-9 relative. */
double stats_t_quantile(double p, double df);

/* The paired t-test of the differences d[0..n-1] against 0. */
typedef struct stats_paired {
    int n;
    double mean;          /* NAN when n == 0 */
    double sd;            /* sample std (n−1); NAN when n < 2 */
    double t;             /* mean / (sd/√n); NAN when n < 2; ±INFINITY when sd == 0 and mean != 0 */
    double p;             /* two-sided p-value; NAN when n < 2; 0 when every difference is the same nonzero value,
                             1 when all are 0 */
    double ci_low, ci_high; /* 95% Student-t interval; NAN when n < 2 */
} stats_paired;
void stats_paired_test(const double *d, int n, stats_paired *out);

/* Holm's step-down adjustment. p[0..n-1] are the raw p-values of a family of m comparisons (m >= the number of
 * finite p; comparisons that have no p yet count toward m as if their p were 1). Writes adj[i] =
 * max over j ≤ rank(i) of min(1, (m − j + 1)·p_(j)) for finite p[i] and NAN otherwise. Ties keep input order.
 * adj may not alias p. Returns the family size used (max(m, number of finite p)). */
int stats_holm(const double *p, int n, int m, double *adj);

/* Standard normal CDF Φ(x) and its quantile Φ⁻¹(p) (0 < p < 1, else NAN; ~1e-9 relative). */
double stats_norm_cdf(double x);
double stats_norm_quantile(double p);

/* Upper tail P(X ≥ x) of chi-square with df > 0 degrees of freedom (df need not be an integer); 1 for x ≤ 0,
 * NAN when df ≤ 0 or x is NAN. Regularized upper incomplete gamma Q(df/2, x/2). */
double stats_chi2_sf(double x, double df);

/* The studentized range: P(R ≤ q) for the range R of k ≥ 2 independent N(0,1) variables divided by an independent
 * sqrt(χ²_df / df) (df ≤ 0 or INFINITY: no divisor, the normal range). Numerical double integral, ~1e-6 absolute. */
double stats_range_cdf(double q, int k, double df);
/* Its upper quantile: the q with P(R > q) = alpha (0 < alpha < 1), ~1e-5 relative. Tukey's q_{1−alpha}(k, df);
 * e.g. k = 3, df = 10, alpha = 0.05 gives 3.877. Results are cached per (k, df, alpha) behind a mutex, so a
 * ranking that asks again pays nothing. NAN when k < 2. */
double stats_range_quantile(double alpha, int k, double df);

/* Bartlett's test that groups share one variance: ms[i] an unbiased variance estimate with df[i] > 0 degrees of
 * freedom (i < n; groups with df[i] ≤ 0 or a non-finite ms are ignored). Writes the statistic (χ² with k − 1
 * degrees of freedom after Bartlett's correction, k the groups used) and returns its p-value; NAN (and *stat NAN)
 * when fewer than 2 groups can be used. A group with ms 0 (an exact fit) gives p = 0. */
double stats_bartlett(const double *ms, const double *df, int n, double *stat, int *groups);

/* The noncentrality a two-sided t-test with critical value c (|T| > c rejects) and df degrees of freedom needs to
 * reject with probability power (normal approximation to the noncentral t, c + z_power·sqrt(1 + c²/(2·df))):
 * the effect detectable with that power is this value times the comparison's standard error. */
double stats_t_power_ncp(double c, double df, double power);
#endif

/* Digamma ψ(x) and trigamma ψ'(x) for x > 0 (NAN otherwise), ~1e-12 relative; the inverse of the trigamma (the x
 * with ψ'(x) = y, y > 0) by Smyth's Newton iteration. */
double stats_digamma(double x);
double stats_trigamma(double x);
double stats_trigamma_inverse(double y);

/* The empirical-Bayes prior of variances (Smyth 2004, limma's fitFDist): s2[i] an unbiased variance with d[i] > 0
 * residual df (entries with d ≤ 0 or a non-finite s2 are skipped; a zero s2 is floored at 1e-5 × the median).
 * Fits s2 ~ s0²·F(d, d0) by the method of moments on log s2: *d0 = 2·ψ'⁻¹(var(e) − mean ψ'(d/2)) with
 * e = log s2 − ψ(d/2) + log(d/2), *s02 = exp(mean e + ψ(d0/2) − log(d0/2)); when the log-variances spread no more
 * than sampling alone explains, *d0 = INFINITY and *s02 = exp(mean e). Returns the entries used (NAN outputs below 2),
 * -1 on no memory. The posterior of group i is (d0·s0² + d_i·s2_i)/(d0 + d_i) with d0 + d_i df. */
int stats_eb_prior(const double *s2, const double *d, int n, double *d0, double *s02);

/* In-place lower Cholesky factor of the n×n symmetric a (row-major; reads the lower triangle, leaves the strict
 * upper one as it was). Returns 0, or -1 when a pivot is not above min_pivot or not finite (not positive definite;
 * a is then partly overwritten). The blocked model's seed system (ranking.c) and the surrogate (surrogate.c). */
int stats_cholesky(double *a, int n, double min_pivot);

/* qsort comparator of doubles, ascending (NAN compares equal to everything: keep it out of the array). */
int stats_cmp_double(const void *a, const void *b);

/* A deterministic generator: SplitMix64 for uniforms in (0, 1), Box–Muller for standard normals; the same seed
 * gives the same stream on every machine. Initialise as (stats_rng){ seed, 0, 0 }. */
typedef struct { unsigned long long s; int have; double next; } stats_rng;
unsigned long long stats_rng_next(stats_rng *g);   /* the next 64-bit SplitMix64 word */
double stats_rng_unif(stats_rng *g);
double stats_rng_gauss(stats_rng *g);
