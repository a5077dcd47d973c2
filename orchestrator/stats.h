/* stats.h — the tests behind the leaderboard: Student's t distribution, the paired t-test and Holm's
 * step-down adjustment for a family of comparisons.
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
#endif
