/* stats.c — Student's t distribution, the paired t-test and Holm's adjustment (stats.h).
 *
 * Design: the t tail comes from the regularized incomplete beta function, P(|T| ≥ t) = I_x(df/2, 1/2) with
 * x = df/(df + t²), evaluated by its continued fraction (modified Lentz), using the symmetry
 * I_x(a, b) = 1 − I_{1−x}(b, a) where the fraction converges slowly. Quantiles invert the tail by bisection:
 * ~100 halvings of a bracket are cheap next to a database read and cannot fail to converge.
 */
#include "stats.h"

#include <math.h>
#include <pthread.h>
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
    /* a ranking asks for the same few (p, df) once per schedule: each thread keeps its last 8 answers */
    static __thread struct { double p, df, q; } memo[8];
    static __thread int memo_n, memo_next;
    for (int i = 0; i < memo_n; i++) if (memo[i].p == p && memo[i].df == df) return memo[i].q;
    double tail = p > 0.5 ? 2 * (1 - p) : 2 * p;   /* two-sided tail of |q| */
    /* safeguarded Newton on g(q) = P(|T| ≥ q) − tail from the normal quantile: g is decreasing with slope −2f(q),
     * f the t density; a step that leaves the bracket [lo, hi] bisects instead */
    double lo = 0, hi = 1;
    while (stats_t_p2(hi, df) > tail && hi < 1e300) { lo = hi; hi *= 2; }
    double lc = lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI);
    double q = fabs(stats_norm_quantile(tail / 2));
    if (!(q > lo && q < hi)) q = 0.5 * (lo + hi);
    for (int i = 0; i < 100; i++) {
        double g = stats_t_p2(q, df) - tail;
        if (g > 0) lo = q; else hi = q;
        double f = exp(lc - (df + 1) / 2 * log1p(q * q / df));
        double next = q + g / (2 * f);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (fabs(next - q) <= 1e-13 * q || hi - lo <= 1e-13 * hi) { q = next; break; }
        q = next;
    }
    q = p > 0.5 ? q : -q;
    int slot = memo_n < 8 ? memo_n++ : memo_next++ % 8;
    memo[slot].p = p;
    memo[slot].df = df;
    memo[slot].q = q;
    return q;
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

/* ---- the normal ----------------------------------------------------------------------------------- */

double stats_norm_cdf(double x) { return 0.5 * erfc(-x / M_SQRT2); }

double stats_norm_quantile(double p) {
    if (!(p > 0 && p < 1)) return NAN;
    /* bisection on erfc: 200 halvings of [-40, 40] is far below double precision and cannot fail */
    double lo = -40, hi = 40;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * fmax(1.0, fabs(lo)); i++) {
        double mid = 0.5 * (lo + hi);
        if (stats_norm_cdf(mid) < p) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* ---- chi-square: the regularized incomplete gamma ------------------------------------------------- */

/* P(a, x) by its series (x < a + 1) */
static double gamma_p_series(double a, double x) {
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 1000; n++) {
        term *= x / (a + n);
        sum += term;
        if (fabs(term) < fabs(sum) * 1e-16) break;
    }
    return sum * exp(-x + a * log(x) - lgamma(a));
}

/* Q(a, x) by its continued fraction (x ≥ a + 1), modified Lentz */
static double gamma_q_cf(double a, double x) {
    const double tiny = 1e-300;
    double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16) break;
    }
    return exp(-x + a * log(x) - lgamma(a)) * h;
}

double stats_chi2_sf(double x, double df) {
    if (!(df > 0) || isnan(x)) return NAN;
    if (x <= 0) return 1;
    if (isinf(x)) return 0;
    double a = df / 2, y = x / 2;
    double q = y < a + 1 ? 1 - gamma_p_series(a, y) : gamma_q_cf(a, y);
    return q < 0 ? 0 : q > 1 ? 1 : q;
}

/* ---- the studentized range ------------------------------------------------------------------------ */

/* P(range of k N(0,1) ≤ w) = k ∫ φ(z) [Φ(z) − Φ(z − w)]^(k−1) dz, Simpson on z ∈ [−8.5, 8.5] (the tails beyond
 * hold < 1e-16 of φ's mass) */
static double range_cdf_normal(double w, int k) {
    if (w <= 0) return 0;
    const int N = 200;   /* even */
    const double a = -8.5, h = 17.0 / N;
    double sum = 0;
    for (int i = 0; i <= N; i++) {
        double z = a + i * h, inner = stats_norm_cdf(z) - stats_norm_cdf(z - w);
        double f = inner > 0 ? exp(-0.5 * z * z + (k - 1) * log(inner)) : 0;
        sum += f * (i == 0 || i == N ? 1 : i % 2 ? 4 : 2);
    }
    double p = k * sum * h / 3 / sqrt(2 * M_PI);
    return p > 1 ? 1 : p;
}

double stats_range_cdf(double q, int k, double df) {
    if (k < 2 || isnan(q)) return NAN;
    if (q <= 0) return 0;
    if (!(df > 0) || isinf(df) || df > 1e5) return range_cdf_normal(q, k);
    /* E over S = sqrt(χ²_df/df) of the normal-range CDF at q·S; S's density
     * f(s) = 2 (df/2)^(df/2) / Γ(df/2) · s^(df−1) e^(−df s²/2), Simpson over its bulk */
    double spread = 12.0 / sqrt(2 * df);
    double lo = fmax(0.0, 1 - spread), hi = 1 + spread + (df < 10 ? 6.0 : 0.0);
    const int N = df < 10 ? 1000 : 120;   /* wide S at small df: a fine grid, else q·S jumps across the CDF */
    double h = (hi - lo) / N, sum = 0, lc = log(2.0) + (df / 2) * log(df / 2) - lgamma(df / 2);
    for (int i = 0; i <= N; i++) {
        double s = lo + i * h;
        if (s <= 0) continue;
        double f = exp(lc + (df - 1) * log(s) - df * s * s / 2);
        sum += f * range_cdf_normal(q * s, k) * (i == 0 || i == N ? 1 : i % 2 ? 4 : 2);
    }
    double p = sum * h / 3;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}


#define RANGE_CACHE 1024   /* a race asks for one (k, df) per round (racing.c) */
static struct { int k; double df, alpha, q; } range_cache[RANGE_CACHE];
static int range_cached, range_next;
static pthread_mutex_t range_mu = PTHREAD_MUTEX_INITIALIZER;

double stats_range_quantile(double alpha, int k, double df) {
    if (k < 2 || !(alpha > 0 && alpha < 1)) return NAN;
    if (!(df > 0) || df > 1e5) df = INFINITY;
    pthread_mutex_lock(&range_mu);
    for (int i = 0; i < range_cached; i++)
        if (range_cache[i].k == k && range_cache[i].df == df && range_cache[i].alpha == alpha) {
            double q = range_cache[i].q;
            pthread_mutex_unlock(&range_mu);
            return q;
        }
    pthread_mutex_unlock(&range_mu);
    /* bracket, then the Illinois variant of regula falsi on g(q) = log P(R > q) − log alpha (smooth and monotone
     * in q): a handful of CDF evaluations, each a double integral */
    double la = log(alpha), lo = 1, hi = 4;
    double glo = log(fmax(1e-300, 1 - stats_range_cdf(lo, k, df))) - la, ghi;
    while ((ghi = log(fmax(1e-300, 1 - stats_range_cdf(hi, k, df))) - la) > 0 && hi < 1e4) { lo = hi; glo = ghi; hi *= 2; }
    double q = hi;
    int side = 0;
    for (int i = 0; i < 60 && hi - lo > 1e-7 * hi; i++) {
        q = (lo * ghi - hi * glo) / (ghi - glo);
        if (!(q > lo && q < hi)) q = 0.5 * (lo + hi);
        double g = log(fmax(1e-300, 1 - stats_range_cdf(q, k, df))) - la;
        if (fabs(g) < 1e-9) break;
        if (g > 0) { lo = q; glo = g; if (side == -1) ghi /= 2; side = -1; }
        else { hi = q; ghi = g; if (side == 1) glo /= 2; side = 1; }
    }
    pthread_mutex_lock(&range_mu);
    int slot = range_cached < RANGE_CACHE ? range_cached++ : (range_next++ % RANGE_CACHE);
    range_cache[slot].k = k;
    range_cache[slot].df = df;
    range_cache[slot].alpha = alpha;
    range_cache[slot].q = q;
    pthread_mutex_unlock(&range_mu);
    return q;
}

/* ---- Bartlett's test and power --------------------------------------------------------------------- */

double stats_bartlett(const double *ms, const double *df, int n, double *stat, int *groups) {
    double sdf = 0, sw = 0, sinv = 0, slog = 0;
    int k = 0, zero = 0;
    for (int i = 0; i < n; i++) {
        if (!(df[i] > 0) || !isfinite(ms[i]) || ms[i] < 0) continue;
        k++;
        sdf += df[i];
        sw += df[i] * ms[i];
        sinv += 1 / df[i];
        if (ms[i] == 0) zero = 1; else slog += df[i] * log(ms[i]);
    }
    if (groups) *groups = k;
    if (stat) *stat = NAN;
    if (k < 2 || !(sw > 0)) return NAN;
    if (zero) { if (stat) *stat = INFINITY; return 0; }
    double m = sdf * log(sw / sdf) - slog, c = 1 + (sinv - 1 / sdf) / (3.0 * (k - 1)), x = m / c;
    if (stat) *stat = x;
    return stats_chi2_sf(x, k - 1);
}

double stats_t_power_ncp(double c, double df, double power) {
    if (!(c > 0) || !(power > 0 && power < 1) || !(df > 0)) return NAN;
    double z = stats_norm_quantile(power);
    return c + z * sqrt(1 + c * c / (2 * df));
}

/* ---- polygamma and the empirical-Bayes prior of the moderated variances --------------------------- */

/* ψ(x), ψ'(x), ψ''(x) for x > 0: the recurrence up to x ≥ 10, then the asymptotic series (~1e-13 relative) */
double stats_digamma(double x) {
    if (!(x > 0)) return NAN;
    double s = 0;
    while (x < 10) { s -= 1 / x; x += 1; }
    double x2 = 1 / (x * x);
    return s + log(x) - 0.5 / x - x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 * (1.0 / 252 - x2 * (1.0 / 240 - x2 / 132))));
}

double stats_trigamma(double x) {
    if (!(x > 0)) return NAN;
    double s = 0;
    while (x < 10) { s += 1 / (x * x); x += 1; }
    double x2 = 1 / (x * x);
    return s + 1 / x + x2 / 2 + x2 / x * (1.0 / 6 - x2 * (1.0 / 30 - x2 * (1.0 / 42 - x2 * (1.0 / 30 - x2 * 5.0 / 66))));
}

static double tetragamma(double x) {
    double s = 0;
    while (x < 10) { s -= 2 / (x * x * x); x += 1; }
    double x2 = 1 / (x * x);
    return s - x2 - x2 / x - x2 * x2 * (0.5 - x2 * (1.0 / 6 - x2 * (1.0 / 6 - x2 * (3.0 / 10 - x2 * 5.0 / 6))));
}

double stats_trigamma_inverse(double y) {
    if (!(y > 0)) return NAN;
    if (y > 1e7) return 1 / sqrt(y);
    if (y < 1e-6) return 1 / y;
    double x = 0.5 + 1 / y;   /* Smyth's Newton iteration, monotone from this start */
    for (int it = 0; it < 60; it++) {
        double tri = stats_trigamma(x), dif = tri * (1 - tri / y) / tetragamma(x);
        x += dif;
        if (-dif / x < 1e-10) break;
    }
    return x;
}

int stats_eb_prior(const double *s2, const double *d, int n, double *d0, double *s02) {
    *d0 = NAN;
    *s02 = NAN;
    double med[4096], *tmp = n <= 4096 ? med : malloc((size_t)n * sizeof *tmp);
    if (!tmp) return -1;
    int m = 0;
    for (int i = 0; i < n; i++) if (d[i] > 0 && isfinite(s2[i]) && s2[i] >= 0) tmp[m++] = s2[i];
    if (m < 2) { if (tmp != med) free(tmp); return m; }
    /* limma's floor: a zero variance would put −∞ in the moments */
    for (int i = 1; i < m; i++) { double v = tmp[i]; int j = i - 1; while (j >= 0 && tmp[j] > v) { tmp[j + 1] = tmp[j]; j--; } tmp[j + 1] = v; }
    double md = m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
    if (tmp != med) free(tmp);
    if (md == 0) md = 1;
    double se = 0, see = 0, tri = 0;
    for (int i = 0; i < n; i++) {
        if (!(d[i] > 0 && isfinite(s2[i]) && s2[i] >= 0)) continue;
        double x = s2[i] > 1e-5 * md ? s2[i] : 1e-5 * md;
        double e = log(x) - stats_digamma(d[i] / 2) + log(d[i] / 2);
        se += e;
        see += e * e;
        tri += stats_trigamma(d[i] / 2);
    }
    double emean = se / m, evar = (see - m * emean * emean) / (m - 1) - tri / m;
    if (evar > 0) {
        *d0 = 2 * stats_trigamma_inverse(evar);
        *s02 = exp(emean + stats_digamma(*d0 / 2) - log(*d0 / 2));
    } else {
        *d0 = INFINITY;
        *s02 = exp(emean);
    }
    return m;
}

int stats_cholesky(double *a, int n, double min_pivot) {
    for (int j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (int k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
        if (!(d > min_pivot) || !isfinite(d)) return -1;
        d = sqrt(d);
        a[j * n + j] = d;
        for (int i = j + 1; i < n; i++) {
            double s = a[i * n + j];
            for (int k = 0; k < j; k++) s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / d;
        }
    }
    return 0;
}

unsigned long long stats_rng_next(stats_rng *g) {
    unsigned long long z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double stats_rng_unif(stats_rng *g) {
    return ((stats_rng_next(g) >> 11) + 0.5) / 9007199254740992.0;
}

int stats_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_rng_gauss(stats_rng *g) {
    if (g->have) { g->have = 0; return g->next; }
    double u1 = stats_rng_unif(g), u2 = stats_rng_unif(g), r = sqrt(-2 * log(u1));
    g->next = r * sin(2 * M_PI * u2);
    g->have = 1;
    return r * cos(2 * M_PI * u2);
}
