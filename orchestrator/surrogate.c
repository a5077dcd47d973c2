/* surrogate.c — a Gaussian process over the schedule space and batch Thompson sampling (surrogate.h).
 *
 * Design note.
 *  - Why a GP with one shared lengthscale: the sweeps it serves train tens to a few hundred schedules, so exact
 *    O(n³) inference is cheap, and with ≤ 150 noisy points an ARD kernel over 36 layers has more hyperparameters
 *    than the data can pin down; a shared lengthscale over per-layer log head dims is what neighbouring schedules
 *    behaving alike means. The noise is not learned: each estimate comes with its SE from the ranking, used as is
 *    (heteroscedastic), so a schedule with a missing seed counts for less. A nugget σ_g² (a per-schedule term the
 *    features do not explain) keeps the pooling from overriding a schedule's own evidence on rough landscapes
 *    (measured: docs/SEARCH.md). The constant mean is profiled out by GLS; (σ_f², σ_g², ℓ) by a fixed grid around
 *    data-derived scales (the variance of y, the median distance among the trained features), which makes the fit
 *    a function of its inputs (no optimiser state, no start point).
 *  - Why Thompson sampling on a screened subset: a joint draw over 3,610 candidates needs a 3,610² Cholesky per
 *    fit; the candidates whose 2.5σ lower bound is not among the best SURROGATE_SUBSET are, under the model, a
 *    negligible chance of being a draw's argmin, so the joint draw is exact on the subset and the rest is ignored.
 *    Independent joint draws give the batch its diversity; an argmin already proposed falls back to the draw's next
 *    best, so the batch is distinct.
 *  - Everything is plain C (stats_cholesky, shared with the blocked model): n is small, and the module needs no
 *    BLAS.
 */
#include "surrogate.h"

#include "stats.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LCB_Z 2.5         /* the subset screen's quantile: μ̂ − z σ̂ */
#define GRID_ELL 12       /* lengthscales: median distance × 2^(−3 .. +2.5) */
#define GRID_SF2 11       /* signal variances: var(y) × 10^(−2 .. +1.5) */
#define GRID_SG2 4        /* nugget variances: var(y) × {0, 0.03, 0.1, 0.3} */
static const double grid_sg2[GRID_SG2] = { 0, 0.03, 0.1, 0.3 };
#define GRID_WU 5         /* the axes' weight: the schedule features' median distance × 2^(−2 .. +2) */
#define AXIS_REPS 16      /* with axes: each schedule of a small valid set paired with up to this many coordinates */
#define LOCAL_TOP 8       /* with axes: the best trained points whose coordinates are perturbed ... */
#define LOCAL_EACH 16     /* ... this many times each ... */
#define LOCAL_SD 0.1      /* ... by N(0, 0.1²) per coordinate */

/* ---- numeric axes ------------------------------------------------------------------------------------- */
static double clamp01(double u) { return u < 0 ? 0 : u > 1 ? 1 : u; }

double surrogate_axis_value(const surrogate_axis *a, double u) {
    u = clamp01(u);
    double v = a->log ? a->lo * pow(a->hi / a->lo, u) : a->lo + u * (a->hi - a->lo);
    if (a->integer) v = round(v);
    else {
        char t[32];   /* 3 significant digits, as a person would write it (and the nearest double to that) */
        snprintf(t, sizeof t, "%.3g", v);
        v = strtod(t, NULL);
    }
    return v < a->lo ? a->lo : v > a->hi ? a->hi : v;
}

double surrogate_axis_unit(const surrogate_axis *a, double v) {
    if (v <= a->lo) return 0;
    if (v >= a->hi) return 1;
    return a->log ? log(v / a->lo) / log(a->hi / a->lo) : (v - a->lo) / (a->hi - a->lo);
}

static double axis_quantize(const surrogate_axis *a, double u) { return surrogate_axis_unit(a, surrogate_axis_value(a, u)); }

static int axes_ok(int naxes, const surrogate_axis *axes) {
    if (naxes < 0 || naxes > SURROGATE_MAX_AXES || (naxes > 0 && !axes)) return 0;
    for (int k = 0; k < naxes; k++)
        if (!(axes[k].lo < axes[k].hi) || !isfinite(axes[k].lo) || !isfinite(axes[k].hi) || (axes[k].log && axes[k].lo <= 0))
            return 0;
    return 1;
}

/* ---- features --------------------------------------------------------------------------------------- */
static int resolve(const schedule_rules *in, schedule_rules *out) {
    *out = *in;
    return schedule_rules_resolve(out, NULL, NULL, 0) == 0 ? 0 : SURROGATE_EINVAL;
}

int surrogate_dim(const schedule_rules *r, int features) {
    int allowed[SCHEDULE_MAX_ALLOWED * 64], na = schedule_allowed_heads(r, allowed, (int)(sizeof allowed / sizeof *allowed));
    int nt = 0;
    for (int i = 0; i < na; i++) nt += allowed[i] < r->h_base;
    if (features == 0) features = SURROGATE_F_DEFAULT;
    if (features < SURROGATE_F_LOGDIM || features > SURROGATE_F_BOTH) return SURROGATE_EINVAL;
    return (features & SURROGATE_F_LOGDIM ? r->L : 0) + (features & SURROGATE_F_TRANS ? nt : 0);
}

int surrogate_features(const schedule_rules *r, int features, const int *heads, double *x) {
    if (features == 0) features = SURROGATE_F_DEFAULT;
    if (features < SURROGATE_F_LOGDIM || features > SURROGATE_F_BOTH || r->L < 1) return SURROGATE_EINVAL;
    int k = 0;
    if (features & SURROGATE_F_LOGDIM)
        for (int l = 0; l < r->L; l++) {
            if (heads[l] < 1) return SURROGATE_EINVAL;
            x[k++] = log2((double)r->d_model / heads[l]);
        }
    if (features & SURROGATE_F_TRANS) {
        int allowed[SCHEDULE_MAX_ALLOWED * 64], na = schedule_allowed_heads(r, allowed, (int)(sizeof allowed / sizeof *allowed));
        for (int i = 0; i < na && allowed[i] < r->h_base; i++) {
            int next = i + 1 < na ? allowed[i + 1] : r->h_base, c = 0;
            for (int l = 0; l < r->L; l++) c += heads[l] <= allowed[i];
            x[k++] = c * log2((double)next / allowed[i]);
        }
    }
    return k;
}

/* ---- the kernel and dense linear algebra --------------------------------------------------------------- */
static double dist(const double *a, const double *b, int dim) {
    double s = 0;
    for (int i = 0; i < dim; i++) { double d = a[i] - b[i]; s += d * d; }
    return sqrt(s);
}
static double sqdist(const double *a, const double *b, int dim) {
    double s = 0;
    for (int i = 0; i < dim; i++) { double d = a[i] - b[i]; s += d * d; }
    return s;
}
/* the distance of two points of the model: schedule features x (m->dim) and coordinates u (m->naxes) */
static double pdist(const surrogate_model *m, const double *xa, const double *ua, const double *xb, const double *ub) {
    double s = sqdist(xa, xb, m->dim);
    if (m->naxes) s += m->wu * m->wu * sqdist(ua, ub, m->naxes);
    return sqrt(s);
}
#define UROW(m, p, i) ((m)->naxes ? (p) + (size_t)(i) * (m)->naxes : NULL)
static double kern(int kernel, double r) {   /* r = distance / ℓ, unit variance */
    if (kernel == SURROGATE_K_SE) return exp(-0.5 * r * r);
    double s = sqrt(5.0) * r;
    return (1 + s + s * s / 3) * exp(-s);
}
/* the prior covariance of two schedules at feature distance d: the smooth part, plus the nugget when they are the
 * same schedule (d = 0: the features are injective on schedules) */
static double cov(int kernel, double sf2, double sg2, double ell, double d) {
    return sf2 * kern(kernel, d / ell) + (d == 0 ? sg2 : 0);
}
static void solve_lower(const double *l, int n, double *b) {   /* b ← L⁻¹ b */
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++) s -= l[i * n + k] * b[k];
        b[i] = s / l[i * n + i];
    }
}
static void solve_upper(const double *l, int n, double *b) {   /* b ← L⁻ᵀ b */
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++) s -= l[k * n + i] * b[k];
        b[i] = s / l[i * n + i];
    }
}

/* ---- the fit ------------------------------------------------------------------------------------------- */
/* σ_f² k(D/ℓ) + diag(noise) + jitter into a and its Cholesky; then the GLS mean, α and the log likelihood */
static int fit_at(const surrogate_model *m, const double *D, double sf2, double sg2, double ell, double *a,
                  double *tmp, double *mu, double *alpha, double *ll) {
    int n = m->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++)
            a[i * n + j] = cov(m->kernel, sf2, sg2, ell, D[i * n + j]) + (i == j ? m->noise[i] + SURROGATE_JITTER * sf2 : 0);
    if (stats_cholesky(a, n, 0) != 0) return -1;
    for (int i = 0; i < n; i++) tmp[i] = 1;
    solve_lower(a, n, tmp);                    /* tmp = L⁻¹ 1 */
    memcpy(alpha, m->y, (size_t)n * sizeof *alpha);
    solve_lower(a, n, alpha);                  /* alpha = L⁻¹ y */
    double s11 = 0, s1y = 0;
    for (int i = 0; i < n; i++) { s11 += tmp[i] * tmp[i]; s1y += tmp[i] * alpha[i]; }
    *mu = s1y / s11;
    double q = 0, logdet = 0;
    for (int i = 0; i < n; i++) {
        alpha[i] -= *mu * tmp[i];              /* L⁻¹ (y − μ) */
        q += alpha[i] * alpha[i];
        logdet += log(a[i * n + i]);
    }
    *ll = -0.5 * q - logdet - 0.5 * n * log(2 * M_PI);
    solve_upper(a, n, alpha);                  /* (K + N)⁻¹ (y − μ) */
    return 0;
}

void surrogate_release(surrogate_model *m) {
    if (!m) return;
    free(m->x); free(m->heads); free(m->y); free(m->noise); free(m->chol); free(m->alpha); free(m->u);
    memset(m, 0, sizeof *m);
}

int surrogate_fit(surrogate_model *m, const schedule_rules *rules, const int *heads, const double *y,
                  const double *se, int n, const surrogate_opts *opts) {
    memset(m, 0, sizeof *m);
    surrogate_opts o = opts ? *opts : (surrogate_opts){ 0 };
    if (n < 1 || !heads || !y || !se) return SURROGATE_EINVAL;
    if (resolve(rules, &m->rules) != 0) return SURROGATE_EINVAL;
    m->L = m->rules.L;
    m->n = n;
    m->features = o.features ? o.features : SURROGATE_F_DEFAULT;
    m->kernel = o.kernel;
    if (m->kernel != SURROGATE_K_MATERN52 && m->kernel != SURROGATE_K_SE) return SURROGATE_EINVAL;
    m->dim = surrogate_dim(&m->rules, m->features);
    if (m->dim < 1) return SURROGATE_EINVAL;
    if (!axes_ok(o.naxes, o.axes) || (o.naxes > 0 && !o.u)) return SURROGATE_EINVAL;
    m->naxes = o.naxes;
    for (int k = 0; k < o.naxes; k++) m->axes[k] = o.axes[k];
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]) || !isfinite(se[i]) || se[i] < 0) return SURROGATE_EINVAL;
    if (m->naxes) {
        m->u = malloc((size_t)n * m->naxes * sizeof *m->u);
        if (!m->u) return SURROGATE_ENOMEM;
        for (size_t i = 0; i < (size_t)n * m->naxes; i++) {
            if (!isfinite(o.u[i])) { surrogate_release(m); return SURROGATE_EINVAL; }
            m->u[i] = clamp01(o.u[i]);
        }
    }
    size_t nn = (size_t)n * n;
    m->x = malloc((size_t)n * m->dim * sizeof *m->x);
    m->heads = malloc((size_t)n * m->L * sizeof *m->heads);
    m->y = malloc((size_t)n * sizeof *m->y);
    m->noise = malloc((size_t)n * sizeof *m->noise);
    m->chol = malloc(nn * sizeof *m->chol);
    m->alpha = malloc((size_t)n * sizeof *m->alpha);
    double *D = malloc(nn * sizeof *D), *a = malloc(nn * sizeof *a), *tmp = malloc((size_t)n * sizeof *tmp),
           *al = malloc((size_t)n * sizeof *al), *dv = malloc((nn / 2 + 1) * sizeof *dv);
    double *Ds = malloc(nn * sizeof *Ds), *Du = malloc(nn * sizeof *Du);
    int rc = SURROGATE_ENOMEM;
    if (!m->x || !m->heads || !m->y || !m->noise || !m->chol || !m->alpha || !D || !a || !tmp || !al || !dv || !Ds || !Du)
        goto out;
    rc = SURROGATE_EINVAL;
    memcpy(m->heads, heads, (size_t)n * m->L * sizeof *m->heads);
    memcpy(m->y, y, (size_t)n * sizeof *m->y);
    double ybar = 0, vy = 0, vn = 0;
    for (int i = 0; i < n; i++) {
        if (surrogate_features(&m->rules, m->features, heads + (size_t)i * m->L, m->x + (size_t)i * m->dim) != m->dim)
            goto out;
        m->noise[i] = se[i] * se[i];
        ybar += y[i] / n;
        vn += m->noise[i] / n;
    }
    for (int i = 0; i < n; i++) vy += (y[i] - ybar) * (y[i] - ybar) / (n > 1 ? n - 1 : 1);
    size_t nd = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            Ds[i * n + j] = Ds[j * n + i] = sqdist(m->x + (size_t)i * m->dim, m->x + (size_t)j * m->dim, m->dim);
            Du[i * n + j] = Du[j * n + i] = m->naxes ? sqdist(m->u + (size_t)i * m->naxes, m->u + (size_t)j * m->naxes, m->naxes) : 0;
            if (j < i && Ds[i * n + j] > 0) dv[nd++] = sqrt(Ds[i * n + j]);
        }
    double meds = 1;   /* the schedule features' median distance: the scale of the axes' weight */
    if (nd) { qsort(dv, nd, sizeof *dv, stats_cmp_double); meds = dv[nd / 2]; }
    double v0 = vy > 0 ? vy : (vn > 0 ? vn : 1e-6);
    m->loglik = -INFINITY;
    for (int iw = 0; iw < (m->naxes ? GRID_WU : 1); iw++) {
        double wu = m->naxes ? meds * pow(2.0, -2 + iw) : 0;
        nd = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                D[i * n + j] = D[j * n + i] = sqrt(Ds[i * n + j] + wu * wu * Du[i * n + j]);
                if (j < i && D[i * n + j] > 0) dv[nd++] = D[i * n + j];
            }
        double med = 1;
        if (nd) { qsort(dv, nd, sizeof *dv, stats_cmp_double); med = dv[nd / 2]; }
        for (int ig = 0; ig < GRID_SG2; ig++)
            for (int ie = 0; ie < GRID_ELL; ie++)
                for (int is = 0; is < GRID_SF2; is++) {
                    double ell = med * pow(2.0, -3 + 0.5 * ie), sf2 = v0 * pow(10.0, -2 + 0.35 * is), sg2 = v0 * grid_sg2[ig];
                    double mu, ll;
                    if (fit_at(m, D, sf2, sg2, ell, a, tmp, &mu, al, &ll) != 0) continue;
                    if (ll > m->loglik) {   /* strict: ties keep the earlier grid point */
                        m->loglik = ll; m->mu = mu; m->sf2 = sf2; m->sg2 = sg2; m->ell = ell; m->wu = wu;
                        memcpy(m->alpha, al, (size_t)n * sizeof *al);
                        memcpy(m->chol, a, nn * sizeof *a);
                    }
                }
    }
    rc = isfinite(m->loglik) ? 0 : SURROGATE_ENUM;
out:
    free(D); free(a); free(tmp); free(al); free(dv); free(Ds); free(Du);
    if (rc != 0) surrogate_release(m);
    return rc;
}

/* ---- prediction ---------------------------------------------------------------------------------------- */
/* k(X, x) σ_f² into ks[n]; mean; and v = L⁻¹ ks (the variance's reduction ‖v‖²) */
static double post_at(const surrogate_model *m, const double *x, const double *u, double *ks, double *var) {
    double mean = m->mu;
    for (int i = 0; i < m->n; i++) {
        ks[i] = cov(m->kernel, m->sf2, m->sg2, m->ell, pdist(m, m->x + (size_t)i * m->dim, UROW(m, m->u, i), x, u));
        mean += ks[i] * m->alpha[i];
    }
    if (var) {
        solve_lower(m->chol, m->n, ks);
        double s = 0;
        for (int i = 0; i < m->n; i++) s += ks[i] * ks[i];
        *var = fmax(0, m->sf2 + m->sg2 - s);
    }
    return mean;
}

int surrogate_predict(const surrogate_model *m, const int *heads, int k, double *mean, double *var) {
    return surrogate_predict_at(m, heads, NULL, k, mean, var);
}

int surrogate_predict_at(const surrogate_model *m, const int *heads, const double *u, int k, double *mean, double *var) {
    if (!m || !m->n || k < 0 || !heads || !mean || (m->naxes && !u)) return SURROGATE_EINVAL;
    double *ks = malloc((size_t)m->n * sizeof *ks), *x = malloc((size_t)m->dim * sizeof *x);
    int rc = ks && x ? 0 : SURROGATE_ENOMEM;
    for (int j = 0; j < k && rc == 0; j++) {
        if (surrogate_features(&m->rules, m->features, heads + (size_t)j * m->L, x) != m->dim) { rc = SURROGATE_EINVAL; break; }
        mean[j] = post_at(m, x, UROW(m, u, j), ks, var ? &var[j] : NULL);
    }
    free(ks); free(x);
    return rc;
}

int surrogate_loo(const surrogate_model *m, double *mean, double *sd) {
    if (!m || !m->n || !mean || !sd) return SURROGATE_EINVAL;
    int n = m->n;
    double *e = malloc((size_t)n * sizeof *e);
    if (!e) return SURROGATE_ENOMEM;
    /* [C⁻¹]_ii = ‖L⁻¹ e_i‖²; the held-out mean y_i − α_i / [C⁻¹]_ii, its variance 1 / [C⁻¹]_ii (Rasmussen &
     * Williams §5.4.2; the constant mean stays the full-data GLS one) */
    for (int i = 0; i < n; i++) {
        memset(e, 0, (size_t)n * sizeof *e);
        e[i] = 1;
        solve_lower(m->chol, n, e);
        double d = 0;
        for (int k = i; k < n; k++) d += e[k] * e[k];   /* L⁻¹ e_i is zero above i */
        mean[i] = m->y[i] - m->alpha[i] / d;
        sd[i] = sqrt(1 / d);
    }
    free(e);
    return 0;
}

/* ---- candidates ---------------------------------------------------------------------------------------- */
typedef struct { int L, naxes, n, cap; int *heads; double *u; } cands;
static int cand_grow(cands *c) {
    if (c->n < c->cap) return 0;
    int cap = c->cap ? 2 * c->cap : 256;
    int *h = realloc(c->heads, (size_t)cap * c->L * sizeof *h);
    if (!h) return -1;
    c->heads = h;
    if (c->naxes) {
        double *u = realloc(c->u, (size_t)cap * c->naxes * sizeof *u);
        if (!u) return -1;
        c->u = u;
    }
    c->cap = cap;
    return 0;
}
static int cand_add(const int *heads, int L, void *ctx) {
    cands *c = ctx;
    if (cand_grow(c) != 0) return -1;
    memcpy(c->heads + (size_t)c->n * L, heads, (size_t)L * sizeof *heads);
    for (int k = 0; k < c->naxes; k++) c->u[(size_t)c->n * c->naxes + k] = 0.5;
    c->n++;
    return 0;
}
static void cands_free(cands *c) { free(c->heads); free(c->u); c->heads = NULL; c->u = NULL; }
/* every valid schedule (≤ cap) or a uniform sample of cap; *exhaustive says which. With axes each schedule is
 * paired with random quantized coordinates, a small valid set's schedules up to AXIS_REPS times. */
static int candidates(const schedule_rules *r, int cap, uint64_t seed, int naxes, const surrogate_axis *axes, cands *c,
                      int *exhaustive) {
    schedule_count_t cnt;
    memset(c, 0, sizeof *c);
    c->L = r->L;
    c->naxes = naxes;
    if (schedule_count(r, &cnt) != 0 || cnt == 0) return SURROGATE_ESPACE;
    *exhaustive = cnt <= (schedule_count_t)cap && naxes == 0;
    int all = cnt <= (schedule_count_t)cap;
    int rc = all ? schedule_enumerate(r, cand_add, c) : schedule_sample(r, (uint64_t)cap, seed, cand_add, c);
    if (rc != 0) { cands_free(c); return rc == -1 ? SURROGATE_ENOMEM : SURROGATE_ESPACE; }
    if (naxes) {
        int base = c->n, reps = all ? cap / (base ? base : 1) : 1;
        if (reps < 1) reps = 1;
        if (reps > AXIS_REPS) reps = AXIS_REPS;
        stats_rng g = { seed ^ 0x41584553ULL, 0, 0 };
        for (int rp = 1; rp < reps; rp++)
            for (int j = 0; j < base; j++)
                if (cand_add(c->heads + (size_t)j * c->L, c->L, c) != 0) { cands_free(c); return SURROGATE_ENOMEM; }
        for (int j = 0; j < c->n; j++)
            for (int k = 0; k < naxes; k++) c->u[(size_t)j * naxes + k] = axis_quantize(&axes[k], stats_rng_unif(&g));
    }
    return 0;
}
static int same_point(const surrogate_model *m, const int *ha, const double *ua, const int *hb, const double *ub) {
    if (memcmp(ha, hb, (size_t)m->L * sizeof *ha) != 0) return 0;
    for (int k = 0; k < m->naxes; k++) if (ua[k] != ub[k]) return 0;
    return 1;
}
static int is_trained(const surrogate_model *m, const surrogate_opts *o, const int *h, const double *u) {
    for (int i = 0; i < m->n; i++)
        if (same_point(m, m->heads + (size_t)i * m->L, UROW(m, m->u, i), h, u)) return 1;
    for (int i = 0; o->exclude && i < o->nexclude; i++)
        if (same_point(m, o->exclude + (size_t)i * m->L, m->naxes && o->exclude_u ? o->exclude_u + (size_t)i * m->naxes : u,
                       h, u)) return 1;
    return 0;
}

typedef struct { double key; int idx; } keyed;
static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* With axes: the best trained points' schedules again, their coordinates perturbed (local refinement). */
static int add_local(const surrogate_model *m, const double *tm, uint64_t seed, cands *c) {
    int n = m->n, top = n < LOCAL_TOP ? n : LOCAL_TOP;
    keyed *ord = malloc((size_t)n * sizeof *ord);
    if (!ord) return SURROGATE_ENOMEM;
    for (int i = 0; i < n; i++) ord[i] = (keyed){ tm[i], i };
    qsort(ord, n, sizeof *ord, cmp_keyed);
    stats_rng g = { seed ^ 0x4C4F43414CULL, 0, 0 };
    int rc = 0;
    for (int t = 0; t < top && rc == 0; t++) {
        int i = ord[t].idx;
        for (int e = 0; e < LOCAL_EACH && rc == 0; e++) {
            if ((rc = cand_add(m->heads + (size_t)i * m->L, m->L, c)) != 0) { rc = SURROGATE_ENOMEM; break; }
            double *u = c->u + (size_t)(c->n - 1) * m->naxes;
            for (int k = 0; k < m->naxes; k++)
                u[k] = axis_quantize(&m->axes[k], m->u[(size_t)i * m->naxes + k] + LOCAL_SD * stats_rng_gauss(&g));
        }
    }
    free(ord);
    return rc;
}

/* ---- proposals ----------------------------------------------------------------------------------------- */
int surrogate_propose(const surrogate_model *m, int K, const surrogate_opts *opts, int *out,
                      surrogate_outlook *look, int *best_heads) {
    if (!m || !m->n || K < 0 || (K > 0 && !out)) return SURROGATE_EINVAL;
    surrogate_opts o = opts ? *opts : (surrogate_opts){ 0 };
    if (m->naxes && K > 0 && !o.out_u) return SURROGATE_EINVAL;
    int cap = o.cap > 0 ? o.cap : SURROGATE_CAP, sub = o.subset > 0 ? o.subset : SURROGATE_SUBSET;
    int draws = o.draws > 0 ? o.draws : SURROGATE_DRAWS, L = m->L, n = m->n, dim = m->dim, P = m->naxes;
    if (draws < K) draws = K;
    surrogate_outlook lk = { .best_mean = NAN, .best_sd = NAN, .p_beat = NAN };
    lk.best_trained = -1;
    cands c;
    int rc = candidates(&m->rules, cap, o.seed, P, m->axes, &c, &lk.exhaustive);
    if (rc != 0) return rc;
    keyed *ord = NULL;
    double *cm = NULL, *ks = malloc((size_t)n * sizeof *ks), *xc = NULL, *tm = malloc((size_t)n * sizeof *tm);
    double *J = NULL, *Ju = NULL, *S = NULL, *V = NULL, *mj = NULL, *z = NULL, *f = NULL;
    unsigned char *taken = NULL;
    int nprop = 0;
    rc = SURROGATE_ENOMEM;
    if (!ks || !tm) goto out;
    for (int i = 0; i < n; i++) {   /* the trained schedules' posterior: the recommendation */
        double var, mean = post_at(m, m->x + (size_t)i * dim, UROW(m, m->u, i), ks, &var);
        tm[i] = mean;
        if (lk.best_trained < 0 || mean < lk.best_trained_mean) {
            lk.best_trained = i; lk.best_trained_mean = mean; lk.best_trained_sd = sqrt(var);
        }
    }
    if (P && (rc = add_local(m, tm, o.seed, &c)) != 0) goto out;
    rc = SURROGATE_ENOMEM;
    /* drop the trained ones (and, with axes, repeats of one point), in place */
    int nc = 0;
    for (int j = 0; j < c.n; j++) {
        const int *h = c.heads + (size_t)j * L;
        const double *u = P ? c.u + (size_t)j * P : NULL;
        if (is_trained(m, &o, h, u)) continue;
        int dup = 0;
        for (int q = 0; P && q < nc && !dup; q++) dup = same_point(m, c.heads + (size_t)q * L, c.u + (size_t)q * P, h, u);
        if (dup) continue;
        memmove(c.heads + (size_t)nc * L, h, (size_t)L * sizeof *c.heads);
        if (P) memmove(c.u + (size_t)nc * P, u, (size_t)P * sizeof *c.u);
        nc++;
    }
    lk.ncand = nc;
    ord = malloc((size_t)(nc ? nc : 1) * sizeof *ord);
    cm = malloc((size_t)(nc ? nc : 1) * sizeof *cm);
    xc = malloc((size_t)(nc ? nc : 1) * dim * sizeof *xc);
    if (!ord || !cm || !xc) goto out;
    int best = -1;
    for (int j = 0; j < nc; j++) {
        double var;
        surrogate_features(&m->rules, m->features, c.heads + (size_t)j * L, xc + (size_t)j * dim);
        cm[j] = post_at(m, xc + (size_t)j * dim, P ? c.u + (size_t)j * P : NULL, ks, &var);
        ord[j] = (keyed){ cm[j] - LCB_Z * sqrt(var), j };
        if (best < 0 || cm[j] < cm[best]) { best = j; lk.best_mean = cm[j]; lk.best_sd = sqrt(var); }
    }
    if (best >= 0 && best_heads) memcpy(best_heads, c.heads + (size_t)best * L, (size_t)L * sizeof *best_heads);
    if (best >= 0 && P && o.best_u) memcpy(o.best_u, c.u + (size_t)best * P, (size_t)P * sizeof *o.best_u);
    if (nc == 0) { rc = 0; goto out; }
    qsort(ord, nc, sizeof *ord, cmp_keyed);
    if (sub < K) sub = K;
    if (sub > nc) sub = nc;
    lk.subset = sub;
    /* the joint posterior over J = the subset's candidates, then the trained schedules */
    int nj = sub + n;
    J = malloc((size_t)nj * dim * sizeof *J);
    Ju = malloc((size_t)nj * (P ? P : 1) * sizeof *Ju);
    S = malloc((size_t)nj * nj * sizeof *S);
    V = malloc((size_t)nj * n * sizeof *V);
    mj = malloc((size_t)nj * sizeof *mj);
    z = malloc((size_t)nj * sizeof *z);
    f = malloc((size_t)nj * sizeof *f);
    taken = calloc((size_t)sub, 1);
    if (!J || !Ju || !S || !V || !mj || !z || !f || !taken) goto out;
    for (int a = 0; a < nj; a++) {
        const double *src = a < sub ? xc + (size_t)ord[a].idx * dim : m->x + (size_t)(a - sub) * dim;
        memcpy(J + (size_t)a * dim, src, (size_t)dim * sizeof *J);
        if (P) memcpy(Ju + (size_t)a * P, a < sub ? c.u + (size_t)ord[a].idx * P : m->u + (size_t)(a - sub) * P,
                      (size_t)P * sizeof *Ju);
        double *v = V + (size_t)a * n;
        mj[a] = post_at(m, J + (size_t)a * dim, UROW(m, Ju, a), v, NULL);
        solve_lower(m->chol, n, v);       /* post_at left σ_f² k(X, x_a) in v */
    }
    for (int a = 0; a < nj; a++)
        for (int b = 0; b <= a; b++) {
            double s = cov(m->kernel, m->sf2, m->sg2, m->ell,
                           pdist(m, J + (size_t)a * dim, UROW(m, Ju, a), J + (size_t)b * dim, UROW(m, Ju, b)));
            const double *va = V + (size_t)a * n, *vb = V + (size_t)b * n;
            for (int i = 0; i < n; i++) s -= va[i] * vb[i];
            S[a * nj + b] = s;
        }
    /* jitter, raised until the (possibly near-singular) posterior covariance factors */
    double *S0 = malloc((size_t)nj * nj * sizeof *S0);
    if (!S0) goto out;
    memcpy(S0, S, (size_t)nj * nj * sizeof *S);
    int ok = 0;
    for (double jit = SURROGATE_JITTER; jit <= 1e-2 && !ok; jit *= 100) {
        memcpy(S, S0, (size_t)nj * nj * sizeof *S);
        for (int a = 0; a < nj; a++) S[a * nj + a] += jit * m->sf2;
        ok = stats_cholesky(S, nj, 0) == 0;
    }
    free(S0);
    if (!ok) { rc = SURROGATE_ENUM; goto out; }
    stats_rng g = { o.seed ^ 0x53555252474154ULL, 0, 0 };
    int beat = 0;
    for (int d = 0; d < draws; d++) {
        for (int a = 0; a < nj; a++) z[a] = stats_rng_gauss(&g);
        for (int a = 0; a < nj; a++) {
            double s = mj[a];
            for (int b = 0; b <= a; b++) s += S[a * nj + b] * z[b];
            f[a] = s;
        }
        double mu_u = INFINITY, mu_t = INFINITY;
        int arg = -1;
        for (int a = 0; a < sub; a++) {
            mu_u = fmin(mu_u, f[a]);
            if (!taken[a] && (arg < 0 || f[a] < f[arg])) arg = a;
        }
        for (int a = sub; a < nj; a++) mu_t = fmin(mu_t, f[a]);
        beat += mu_u < mu_t - o.delta;
        if (d < K && arg >= 0) {
            taken[arg] = 1;
            memcpy(out + (size_t)nprop * L, c.heads + (size_t)ord[arg].idx * L, (size_t)L * sizeof *out);
            if (P) memcpy(o.out_u + (size_t)nprop * P, c.u + (size_t)ord[arg].idx * P, (size_t)P * sizeof *o.out_u);
            nprop++;
        }
    }
    lk.draws = draws;
    lk.p_beat = (double)beat / draws;
    rc = nprop;
out:
    if (look && rc >= 0) *look = lk;
    cands_free(&c);
    free(ord); free(cm); free(ks); free(xc); free(tm);
    free(J); free(Ju); free(S); free(V); free(mj); free(z); free(f); free(taken);
    return rc;
}

/* ---- the initial design -------------------------------------------------------------------------------- */
int surrogate_initial_design(const schedule_rules *rules, int M, const surrogate_opts *opts, int *out) {
    schedule_rules r;
    surrogate_opts o = opts ? *opts : (surrogate_opts){ 0 };
    if (M < 0 || (M > 0 && !out) || resolve(rules, &r) != 0) return SURROGATE_EINVAL;
    if (!axes_ok(o.naxes, o.axes) || (o.naxes > 0 && M > 0 && !o.out_u)) return SURROGATE_EINVAL;
    int feat = o.features ? o.features : SURROGATE_F_DEFAULT, dim = surrogate_dim(&r, feat), L = r.L, P = o.naxes;
    if (dim < 1) return SURROGATE_EINVAL;
    if (M == 0) return 0;
    cands c;
    int exh, rc = candidates(&r, o.cap > 0 ? o.cap : SURROGATE_CAP, o.seed, P, o.axes, &c, &exh);
    if (rc != 0) return rc;
    /* the baseline first (a sample may lack it: it is put in front); with axes at the spec's own values */
    int *base = malloc((size_t)L * sizeof *base);
    double *x = malloc((size_t)(c.n + 1) * dim * sizeof *x), *mind = malloc((size_t)(c.n + 1) * sizeof *mind);
    rc = SURROGATE_ENOMEM;
    if (!base || !x || !mind) goto out;
    if (schedule_unrank(&r, 0, base) != 0) { rc = SURROGATE_ESPACE; goto out; }
    if ((exh || memcmp(c.heads, base, (size_t)L * sizeof *base) == 0) && P == 0) {
        /* enumeration order: rank 0 is already first */
    } else {
        if (cand_add(base, L, &c) != 0) goto out;
        memmove(c.heads + L, c.heads, (size_t)(c.n - 1) * L * sizeof *c.heads);
        memcpy(c.heads, base, (size_t)L * sizeof *base);
        if (P) {
            memmove(c.u + P, c.u, (size_t)(c.n - 1) * P * sizeof *c.u);
            for (int k = 0; k < P; k++) c.u[k] = o.base_u ? clamp01(o.base_u[k]) : 0.5;
        }
    }
    for (int j = 0; j < c.n; j++) surrogate_features(&r, feat, c.heads + (size_t)j * L, x + (size_t)j * dim);
    /* with axes, a unit step along them weighs as much as the schedules' median distance (a deterministic sample
     * of pairs estimates it) */
    double wu = 0;
    if (P) {
        int np = c.n < 2000 ? c.n : 2000, nd = 0;
        double *dv = malloc((size_t)(np ? np : 1) * sizeof *dv);
        if (!dv) goto out;
        for (int j = 0; j < np; j++) {
            double d = dist(x + (size_t)j * dim, x + (size_t)((j * 7 + 3) % c.n) * dim, dim);
            if (d > 0) dv[nd++] = d;
        }
        if (nd) { qsort(dv, nd, sizeof *dv, stats_cmp_double); wu = dv[nd / 2]; } else wu = 1;
        free(dv);
    }
    int got = 0, pick = 0;
    for (int j = 0; j < c.n; j++) mind[j] = INFINITY;
    while (got < M && got < c.n) {
        memcpy(out + (size_t)got * L, c.heads + (size_t)pick * L, (size_t)L * sizeof *out);
        if (P) memcpy(o.out_u + (size_t)got * P, c.u + (size_t)pick * P, (size_t)P * sizeof *o.out_u);
        got++;
        mind[pick] = -1;
        int nxt = -1;
        for (int j = 0; j < c.n; j++) {
            if (mind[j] < 0) continue;
            double d2 = sqdist(x + (size_t)j * dim, x + (size_t)pick * dim, dim);
            if (P) d2 += wu * wu * sqdist(c.u + (size_t)j * P, c.u + (size_t)pick * P, P);
            double d = sqrt(d2);
            if (d < mind[j]) mind[j] = d;
            if (nxt < 0 || mind[j] > mind[nxt]) nxt = j;
        }
        if (nxt < 0) break;
        pick = nxt;
    }
    rc = got;
out:
    cands_free(&c); free(base); free(x); free(mind);
    return rc;
}
