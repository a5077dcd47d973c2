/* stats.c — Student's t distribution, the paired t-test and Holm's adjustment (stats.h).
 *
 * Design: the t tail comes from the regularized incomplete beta function, P(|T| ≥ t) = I_x(df/2, 1/2) with
 * x = df/(df + t²), evaluated by its continued fraction (modified Lentz), using the symmetry
 * I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly. Quantiles invert the tail by bisection:
 * ~100 halvings of a bracket are cheap next to a database read and cannot fail to converge.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

/* continued fraction for I_x(a, b), valid (fast) for x < (a + 1)/(a + b + 2) */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 400; m++) {
        double m2 = 2.0 * m;
        double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));   /* even step */
        d = 1.0 + num * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + num / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        f *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));   /* odd step */
        d = 1.0 + num * d;
        if (fabs(d) < tiny) d = tiny;
        c = 1.0 + num / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1.0 / d;
        double delta = d * c;
        f *= delta;
        if (fabs(delta - 1.0) < eps) break;
    }
    return f;
}

/* regularized incomplete beta I_x(a, b), 0 ≤ x ≤ 1 */
static double beta_inc(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return exp(lfront) * beta_cf(a, b, x) / a;
    return 1.0 - exp(lfront) * beta_cf(b, a, 1.0 - x) / b;
}

double stats_t_p2(double t, double df) {
    if (!(df > 0) || !isfinite(t)) return NAN;
    double x = df / (df + t * t);
    double p = beta_inc(df / 2.0, 0.5, x);
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

double stats_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return NAN;
    if (p == 0.5) return 0;
    double tail = p > 0.5 ? 2 * (1 - p) : 2 * p;   /* two-sided tail of |q| */
    double lo = 0, hi = 1;
    while (stats_t_p2(hi, df) > tail && hi < 1e300) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (stats_t_p2(mid, df) > tail) lo = mid; else hi = mid;
    }
    double q = 0.5 * (lo + hi);
    return p > 0.5 ? q : -q;
}

void stats_paired_test(const double *d, int n, stats_paired *out) {
    out->n = n;
    out->mean = out->sd = out->t = out->p = out->ci_low = out->ci_high = NAN;
    if (n <= 0) return;
    double mean = 0;
    for (int i = 0; i < n; i++) mean += d[i];
    mean /= n;
    out->mean = mean;
    if (n < 2) return;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (d[i] - mean) * (d[i] - mean);
    double sd = sqrt(ss / (n - 1)), se = sd / sqrt((double)n);
    out->sd = sd;
    double half = stats_t_quantile(0.975, n - 1) * se;
    out->ci_low = mean - half;
    out->ci_high = mean + half;
    if (se == 0) {
        out->t = mean == 0 ? 0 : mean > 0 ? INFINITY : -INFINITY;
        out->p = mean == 0 ? 1 : 0;
        return;
    }
    out->t = mean / se;
    out->p = stats_t_p2(out->t, n - 1);
}

typedef struct holm_item { double p; int i; } holm_item;

static int holm_cmp(const void *a, const void *b) {
    const holm_item *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? -1 : 1;
    return x->i - y->i;   /* equal p keep input order */
}

int stats_holm(const double *p, int n, int m, double *adj) {
    int k = 0;
    for (int i = 0; i < n; i++) if (isfinite(p[i])) k++;
    if (m < k) m = k;
    holm_item *it = malloc((size_t)(k ? k : 1) * sizeof *it);
    if (!it) {   /* no memory: the conservative answer (Bonferroni) */
        for (int i = 0; i < n; i++) adj[i] = isfinite(p[i]) ? fmin(1.0, m * p[i]) : NAN;
        return m;
    }
    k = 0;
    for (int i = 0; i < n; i++) {
        adj[i] = NAN;
        if (isfinite(p[i])) it[k++] = (holm_item){ p[i], i };
    }
    qsort(it, (size_t)k, sizeof *it, holm_cmp);
    double run = 0;
    for (int j = 0; j < k; j++) {
        double a = fmin(1.0, (double)(m - j) * it[j].p);
        if (a > run) run = a;
        adj[it[j].i] = run;
    }
    free(it);
    return m;
}
