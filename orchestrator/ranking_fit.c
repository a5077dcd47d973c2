/* ranking_fit.c — the blocked model at one level (ranking_fit.h): the least-squares fit of val loss ~ schedule +
 * seed, its contrasts, its refit on new values and the outlier screen. Its own file because it is the part of the
 * ranking that knows no ranking: racing's rounds, the search's batches and the zero-shot columns fit with it too,
 * and the ranking (ranking.c) is the comparisons, the best group and the power on top of it.
 *
 * Design. The fit absorbs the schedule effects and solves the reduced normal equations for the seeds: with N the
 * schedule × seed incidence (0/1), r_i and c_j its margins, S = diag(c) − Nᵀ diag(1/r) N is the seeds'
 * information matrix. It is singular once per connected component of the incidence graph, so one seed per
 * component is fixed at 0 and the rest of S is positive definite (Cholesky, then the inverse: a sweep has tens
 * of seeds, so it is n² memory and n³ time with n small, while schedules may be thousands and enter linearly).
 * Then β̂ = S⁻¹(B − Nᵀ diag(1/r) T), τ̂_i = (T_i − Σ_j N_ij β̂_j)/r_i, and for two schedules of one component
 *   Var(τ̂_a − τ̂_b)/σ² = 1/r_a + 1/r_b + (u_a − u_b)ᵀ S⁻¹ (u_a − u_b),  u_i = N_i·/r_i,
 * the partitioned inverse of XᵀX; the leverage of a cell is 1/r_i + (e_j − u_i)ᵀ S⁻¹ (e_j − u_i), so each
 * schedule's residual df is Σ(1 − h) over its cells (what Bartlett's test weighs it by). A complete design gives
 * the textbook two-way ANOVA: τ̂_a − τ̂_b = ȳ_a· − ȳ_b·, variance 2σ²/n, df (K−1)(n−1).
 *
 * The screen (ranking_screen, issue #37). Iteratively: fit the cells not yet screened, compute each cell's deleted
 * (externally) studentized residual with its schedule's moderated variance as the scale (the cell deleted from the
 * variance and from the prior, so a diverged run cannot mask itself), and leave out the largest while it exceeds
 * t_{1−α/(2N)} at its df (Bonferroni over the level's N jobs, α = RANKING_SCREEN_ALPHA). At most a tenth of the
 * cells, never a schedule's last cell (leverage 1), never one whose removal splits the design.
 */
#include "ranking_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* ---- the fit ----------------------------------------------------------------------------------------- */

void ranking_fit_release(ranking_fit *f) {
    free(f->tau); free(f->r); free(f->comp); free(f->ms); free(f->dfi); free(f->u); free(f->sinv);
    free(f->seeds); free(f->kept); free(f->y); free(f->cell); free(f->beta); free(f->s2m); free(f->dfm);
    memset(f, 0, sizeof *f);
    f->sd = f->bartlett_p = f->bartlett_stat = f->d0 = f->s02 = NAN;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int seed_index(const long long *seeds, int n, long long s) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (seeds[mid] < s) lo = mid + 1; else hi = mid;
    }
    return lo < n && seeds[lo] == s ? lo : -1;
}

static int uf_find(int *p, int x) {
    while (p[x] != x) { p[x] = p[p[x]]; x = p[x]; }
    return x;
}

/* In-place Cholesky of the n×n SPD a (lower), then its inverse into inv. Returns -1 when not positive definite. */
static int spd_inverse(double *a, int n, double *inv) {
    if (stats_cholesky(a, n, 1e-12) != 0) return -1;
    for (int c = 0; c < n; c++) {   /* solve L Lᵀ x = e_c column by column */
        double *x = inv + (size_t)c * n;
        for (int i = 0; i < n; i++) {
            double s = i == c ? 1 : 0;
            for (int k = 0; k < i; k++) s -= a[i * n + k] * x[k];
            x[i] = s / a[i * n + i];
        }
        for (int i = n - 1; i >= 0; i--) {
            double s = x[i];
            for (int k = i + 1; k < n; k++) s -= a[k * n + i] * x[k];
            x[i] = s / a[i * n + i];
        }
    }
    return 0;   /* inv is column-major of a symmetric matrix: the same row-major */
}

/* (v)ᵀ S⁻¹ (v) over the kept seeds */
static double quad(const ranking_fit *f, const double *v) {
    double s = 0;
    for (int j = 0; j < f->nkept; j++) {
        if (v[j] == 0) continue;
        double t = 0;
        for (int k = 0; k < f->nkept; k++) t += f->sinv[j * f->nkept + k] * v[k];
        s += v[j] * t;
    }
    return s;
}

/* The moderated variances (Smyth 2004): each schedule's mean square shrunk toward the prior fitted over all.
 * Reads ms, dfi, r, sd, df; writes d0, s02, s2m, dfm. Returns -1 on no memory. */
static int moderate(ranking_fit *f) {
    if (stats_eb_prior(f->ms, f->dfi, f->nsched, &f->d0, &f->s02) < 0) return -1;
    for (int i = 0; i < f->nsched; i++) {
        f->s2m[i] = f->dfm[i] = NAN;
        if (f->r[i] == 0 || f->df <= 0) continue;
        if (!isfinite(f->d0)) { f->s2m[i] = f->sd * f->sd; f->dfm[i] = f->df; continue; }   /* also d0 NAN: pooled */
        double di = f->dfi[i] > 0 && isfinite(f->ms[i]) ? f->dfi[i] : 0, mi = di > 0 ? f->ms[i] : 0;
        f->s2m[i] = (f->d0 * f->s02 + di * mi) / (f->d0 + di);
        f->dfm[i] = f->d0 + di < f->df ? f->d0 + di : f->df;
    }
    return 0;
}

/* The distinct seeds of obs[], ascending, into f->seeds and f->nseed. Returns 0, -1 on no memory, -2 with more than
 * RANKING_MAX_SEEDS (nothing kept). */
static int fit_seeds(const ranking_obs *obs, int nobs, ranking_fit *f) {
    long long *all = malloc((size_t)(nobs ? nobs : 1) * sizeof *all);
    if (!all) return -1;
    for (int k = 0; k < nobs; k++) all[k] = obs[k].seed;
    qsort(all, (size_t)nobs, sizeof *all, cmp_ll);
    int n = 0;
    for (int k = 0; k < nobs; k++) if (n == 0 || all[n - 1] != all[k]) all[n++] = all[k];
    if (n > RANKING_MAX_SEEDS) { free(all); return -2; }
    f->seeds = all;
    f->nseed = n;
    return 0;
}

/* The cells: f's per-schedule arrays and y, cell filled from obs[] (a duplicate: the later one wins), r the
 * observations of each schedule; T and B (zeroed, the caller's) the schedule and seed totals; uf (nsched + nseed,
 * the caller's) the schedule–seed incidence graph's union-find. Returns 0 or -1 on no memory (what was allocated
 * is f's, for ranking_fit_release). */
static int fit_cells(const ranking_obs *obs, int nobs, ranking_fit *f, int *uf, double *T, double *B) {
    int nsched = f->nsched, n = f->nseed;
    size_t cells = (size_t)nsched * (size_t)(n ? n : 1);
    f->tau = malloc((size_t)(nsched ? nsched : 1) * sizeof *f->tau);
    f->r = calloc((size_t)(nsched ? nsched : 1), sizeof *f->r);
    f->comp = malloc((size_t)(nsched ? nsched : 1) * sizeof *f->comp);
    f->ms = malloc((size_t)(nsched ? nsched : 1) * sizeof *f->ms);
    f->dfi = calloc((size_t)(nsched ? nsched : 1), sizeof *f->dfi);
    f->kept = malloc((size_t)(n ? n : 1) * sizeof *f->kept);
    f->y = malloc(cells * sizeof *f->y);
    f->cell = calloc(cells, sizeof *f->cell);
    if (!f->tau || !f->r || !f->comp || !f->ms || !f->dfi || !f->kept || !f->y || !f->cell) return -1;
    for (size_t c = 0; c < cells; c++) f->y[c] = NAN;
    for (int i = 0; i < nsched + n; i++) uf[i] = i;
    for (int k = 0; k < nobs; k++) {
        int i = obs[k].sched, j = seed_index(f->seeds, n, obs[k].seed);
        if (i < 0 || i >= nsched || j < 0 || !isfinite(obs[k].y)) continue;
        size_t c = (size_t)i * n + j;
        if (f->cell[c]) { T[i] -= f->y[c]; B[j] -= f->y[c]; f->r[i]--; }   /* a duplicate: the later one wins */
        f->y[c] = obs[k].y;
        f->cell[c] = &obs[k];
        T[i] += obs[k].y;
        B[j] += obs[k].y;
        f->r[i]++;
        int a = uf_find(uf, i), b = uf_find(uf, nsched + j);
        if (a != b) uf[a] = b;
    }
    return 0;
}

/* The components of the incidence graph uf, the dropped seed of each (kept −1), the kept seeds' indices, each
 * schedule's component; the observations used, the residual df and whether the design is balanced. Returns 0 or -1
 * on no memory. */
static int fit_components(ranking_fit *f, int *uf) {
    int nsched = f->nsched, n = f->nseed;
    int nobs_used = 0, kdata = 0;
    for (int i = 0; i < nsched; i++) { nobs_used += f->r[i]; if (f->r[i] > 0) kdata++; }
    f->nobs = nobs_used;
    int *root_seen = malloc((size_t)(nsched + n + 1) * sizeof *root_seen);
    if (!root_seen) return -1;
    for (int i = 0; i < nsched + n; i++) root_seen[i] = -1;
    int ncomp = 0;
    f->nkept = 0;
    for (int j = 0; j < n; j++) {
        int root = uf_find(uf, nsched + j);
        if (root_seen[root] < 0) { root_seen[root] = ncomp++; f->kept[j] = -1; }
        else f->kept[j] = f->nkept++;
    }
    for (int i = 0; i < nsched; i++) f->comp[i] = f->r[i] > 0 ? root_seen[uf_find(uf, i)] : -1;
    free(root_seen);
    f->ncomp = ncomp;
    f->df = nobs_used - (kdata + n - ncomp);
    if (f->df < 0) f->df = 0;
    f->balanced = 1;
    for (int i = 0; i < nsched; i++) if (f->r[i] > 0 && f->r[i] != n) f->balanced = 0;
    return 0;
}

/* The reduced seed system over the kept seeds (u and S⁻¹ kept in f) from the totals T and B, its solution β̂ (0 for
 * the dropped seeds) and τ̂ (ms NAN, filled by fit_residuals). Returns 0 or -1 on no memory or an S that is not
 * positive definite (which cannot happen for a connected reduction). */
static int fit_solve(ranking_fit *f, const double *T, const double *B) {
    int nsched = f->nsched, n = f->nseed, nk = f->nkept, rc = -1;
    f->u = calloc((size_t)(nsched ? nsched : 1) * (size_t)(nk ? nk : 1), sizeof *f->u);
    double *S = calloc((size_t)(nk ? nk : 1) * (size_t)(nk ? nk : 1), sizeof *S);
    f->sinv = calloc((size_t)(nk ? nk : 1) * (size_t)(nk ? nk : 1), sizeof *f->sinv);
    double *Q = calloc((size_t)(nk ? nk : 1), sizeof *Q);
    double *beta = f->beta = calloc((size_t)(n ? n : 1), sizeof *beta);
    if (!f->u || !S || !f->sinv || !Q || !beta) goto out;
    for (int j = 0; j < n; j++) if (f->kept[j] >= 0) Q[f->kept[j]] = B[j];
    for (int i = 0; i < nsched; i++) {
        if (f->r[i] == 0) continue;
        double ri = f->r[i], *ui = f->u + (size_t)i * nk;
        for (int j = 0; j < n; j++) {
            int a = f->kept[j];
            if (!f->cell[(size_t)i * n + j] || a < 0) continue;
            ui[a] = 1 / ri;
            S[a * nk + a] += 1;
            Q[a] -= T[i] / ri;
            for (int m = 0; m < n; m++) {
                int b = f->kept[m];
                if (b >= 0 && f->cell[(size_t)i * n + m]) S[a * nk + b] -= 1 / ri;
            }
        }
    }
    if (nk > 0 && spd_inverse(S, nk, f->sinv) < 0) goto out;   /* cannot happen for a connected reduction */
    for (int j = 0; j < n; j++) {
        int a = f->kept[j];
        if (a < 0) continue;
        double s = 0;
        for (int b = 0; b < nk; b++) s += f->sinv[a * nk + b] * Q[b];
        beta[j] = s;
    }
    for (int i = 0; i < nsched; i++) {
        f->tau[i] = NAN;
        f->ms[i] = NAN;
        if (f->r[i] == 0) continue;
        double s = T[i];
        for (int j = 0; j < n; j++) if (f->cell[(size_t)i * n + j]) s -= beta[j];
        f->tau[i] = s / f->r[i];
    }
    rc = 0;
out:
    free(S); free(Q);
    return rc;
}

/* The residuals: rss, each schedule's residual df (Σ 1 − leverage over its cells) and mean square, the pooled sd.
 * Returns 0 or -1 on no memory. */
static int fit_residuals(ranking_fit *f) {
    int nsched = f->nsched, n = f->nseed, nk = f->nkept;
    double *v = calloc((size_t)(nk ? nk : 1), sizeof *v);
    if (!v) return -1;
    f->rss = 0;
    for (int i = 0; i < nsched; i++) {
        if (f->r[i] == 0) continue;
        double rss_i = 0, df_i = 0, *ui = f->u + (size_t)i * nk;
        for (int j = 0; j < n; j++) {
            size_t c = (size_t)i * n + j;
            if (!f->cell[c]) continue;
            double e = f->y[c] - f->tau[i] - f->beta[j];
            rss_i += e * e;
            for (int b = 0; b < nk; b++) v[b] = -ui[b];
            if (f->kept[j] >= 0) v[f->kept[j]] += 1;
            double h = 1.0 / f->r[i] + quad(f, v);
            df_i += 1 - h;
        }
        f->rss += rss_i;
        f->dfi[i] = df_i > 1e-9 ? df_i : 0;
        f->ms[i] = f->dfi[i] > 0 ? rss_i / f->dfi[i] : NAN;
    }
    free(v);
    if (f->df > 0) f->sd = sqrt(f->rss / f->df);
    return 0;
}

/* The schedules' variances: the moderated ones (moderate) and Bartlett's test over the schedules with 2+
 * observations (with two schedules their residuals mirror each other, so the test needs three). Returns 0 or -1 on
 * no memory. */
static int fit_variances(ranking_fit *f) {
    int nsched = f->nsched;
    f->s2m = malloc((size_t)(nsched ? nsched : 1) * sizeof *f->s2m);
    f->dfm = malloc((size_t)(nsched ? nsched : 1) * sizeof *f->dfm);
    if (!f->s2m || !f->dfm || moderate(f) < 0) return -1;
    int groups = 0;
    for (int i = 0; i < nsched; i++) if (f->r[i] >= 2 && f->dfi[i] > 0) groups++;
    if (groups >= 3 && f->df > 0) {
        double *msg = malloc((size_t)nsched * sizeof *msg), *dfg = malloc((size_t)nsched * sizeof *dfg);
        if (!msg || !dfg) { free(msg); free(dfg); return -1; }
        for (int i = 0; i < nsched; i++) {
            msg[i] = f->r[i] >= 2 ? f->ms[i] : NAN;
            dfg[i] = f->r[i] >= 2 ? f->dfi[i] : 0;
        }
        f->bartlett_p = stats_bartlett(msg, dfg, nsched, &f->bartlett_stat, &f->bartlett_groups);
        free(msg);
        free(dfg);
    } else f->bartlett_groups = groups;
    return 0;
}

int ranking_fit_compute(const ranking_obs *obs, int nobs, int nsched, ranking_fit *f) {
    memset(f, 0, sizeof *f);
    f->sd = f->bartlett_p = f->bartlett_stat = f->d0 = f->s02 = NAN;
    f->nsched = nsched;
    f->nobs = nobs;
    int *uf = NULL;
    double *T = NULL, *B = NULL;
    int rc = fit_seeds(obs, nobs, f);
    if (rc < 0) goto out;
    rc = -1;
    uf = malloc((size_t)(nsched + f->nseed + 1) * sizeof *uf);
    T = calloc((size_t)(nsched ? nsched : 1), sizeof *T);
    B = calloc((size_t)(f->nseed ? f->nseed : 1), sizeof *B);
    if (!uf || !T || !B || fit_cells(obs, nobs, f, uf, T, B) < 0 || fit_components(f, uf) < 0 ||
        fit_solve(f, T, B) < 0 || fit_residuals(f) < 0 || fit_variances(f) < 0)
        goto out;
    rc = 0;
out:
    free(uf); free(T); free(B);
    if (rc < 0) ranking_fit_release(f);
    return rc;
}

double ranking_fit_var(const ranking_fit *f, int a, int b) {
    if (a < 0 || b < 0 || a >= f->nsched || b >= f->nsched || f->r[a] == 0 || f->r[b] == 0 || f->comp[a] != f->comp[b])
        return NAN;
    if (a == b) return 0;
    int nk = f->nkept;
    double s = 1.0 / f->r[a] + 1.0 / f->r[b];
    if (nk == 0) return s;
    const double *ua = f->u + (size_t)a * nk, *ub = f->u + (size_t)b * nk;
    double q = 0;
    for (int j = 0; j < nk; j++) {
        double dj = ua[j] - ub[j];
        if (dj == 0) continue;
        double t = 0;
        for (int k = 0; k < nk; k++) t += f->sinv[j * nk + k] * (ua[k] - ub[k]);
        q += dj * t;
    }
    return s + q;
}

/* The contrast τ̂_a − τ̂_b = Σ_k c_k y_k is linear in the observations: with g = u_a − u_b and v = S⁻¹ g (over the
 * kept seeds, 0 for a dropped one), c_k = [s = a]/r_a − [s = b]/r_b + u_s·v − v_j for cell k = (schedule s, seed j)
 * (β̂ = S⁻¹Q, Q = B − Nᵀȳ, so a'τ̂ = a'ȳ − vᵀQ). Its variance with each schedule at its own moderated variance is
 * Σ_s w_s s̃²_s, w_s = Σ_{k ∈ s} c_k²; with every s̃² equal it is ranking_fit_var · s̃² (the tests check both).
 * When u_a = u_b (both complete, or missing the same seeds) v = 0 and only a's and b's cells enter: no scan. */
double ranking_fit_contrast(const ranking_fit *f, int a, int b, double *df) {
    *df = NAN;
    if (!f->s2m || a < 0 || b < 0 || a >= f->nsched || b >= f->nsched || f->r[a] == 0 || f->r[b] == 0 ||
        f->comp[a] != f->comp[b] || a == b || !isfinite(f->s2m[a]) || !isfinite(f->s2m[b]))
        return NAN;
    int nk = f->nkept, n = f->nseed, same = 1;
    const double *ua = f->u + (size_t)a * nk, *ub = f->u + (size_t)b * nk;
    for (int j = 0; j < nk && same; j++) same = ua[j] == ub[j];
    if (same) {
        double wa = f->s2m[a] / f->r[a], wb = f->s2m[b] / f->r[b], var = wa + wb;
        double den = wa * wa / f->dfm[a] + wb * wb / f->dfm[b], d = den > 0 ? var * var / den : f->df;
        *df = d < f->df ? d : f->df;
        return var;
    }
    double vbuf[64], *v = nk <= 64 ? vbuf : malloc((size_t)nk * sizeof *v);
    if (!v) return NAN;
    for (int j = 0; j < nk; j++) {
        double t = 0;
        for (int k = 0; k < nk; k++) t += f->sinv[j * nk + k] * (ua[k] - ub[k]);
        v[j] = t;
    }
    double var = 0, den = 0;
    for (int s = 0; s < f->nsched; s++) {
        if (f->r[s] == 0 || f->comp[s] != f->comp[a] || !isfinite(f->s2m[s])) continue;
        const double *us = f->u + (size_t)s * nk;
        double uv = (s == a ? 1.0 / f->r[a] : 0) - (s == b ? 1.0 / f->r[b] : 0), w = 0;
        for (int k = 0; k < nk; k++) uv += us[k] * v[k];
        for (int j = 0; j < n; j++) {
            if (!f->cell[(size_t)s * n + j]) continue;
            double c = uv - (f->kept[j] >= 0 ? v[f->kept[j]] : 0);
            w += c * c;
        }
        if (w == 0) continue;
        double x = w * f->s2m[s];
        var += x;
        den += x * x / f->dfm[s];
    }
    if (v != vbuf) free(v);
    double d = den > 0 ? var * var / den : f->df;
    *df = d < f->df ? d : f->df;
    return var;
}

/* ranking_fit.h: only what depends on y is recomputed (T, Q, β̂, τ̂, the mean squares, the moderation) */
int ranking_fit_refit(const ranking_fit *f, ranking_fit *g, const double *y, double *T, double *Q) {
    int n = f->nseed, nk = f->nkept, K = f->nsched;
    for (int i = 0; i < K; i++) T[i] = 0;
    for (int b = 0; b < nk; b++) Q[b] = 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j < n; j++) if (f->cell[(size_t)i * n + j]) T[i] += y[(size_t)i * n + j];
    for (int i = 0; i < K; i++)
        for (int j = 0; j < n; j++) {
            int a = f->kept[j];
            if (a < 0 || !f->cell[(size_t)i * n + j]) continue;
            Q[a] += y[(size_t)i * n + j] - T[i] / f->r[i];
        }
    for (int j = 0; j < n; j++) {
        int a = f->kept[j];
        double s = 0;
        if (a >= 0) for (int b = 0; b < nk; b++) s += f->sinv[a * nk + b] * Q[b];
        g->beta[j] = s;
    }
    g->rss = 0;
    for (int i = 0; i < K; i++) {
        g->tau[i] = g->ms[i] = NAN;
        if (f->r[i] == 0) continue;
        double t = T[i];
        for (int j = 0; j < n; j++) if (f->cell[(size_t)i * n + j]) t -= g->beta[j];
        g->tau[i] = t / f->r[i];
        double rss = 0;
        for (int j = 0; j < n; j++) {
            if (!f->cell[(size_t)i * n + j]) continue;
            double e = y[(size_t)i * n + j] - g->tau[i] - g->beta[j];
            rss += e * e;
        }
        g->rss += rss;
        g->ms[i] = f->dfi[i] > 0 ? rss / f->dfi[i] : NAN;
    }
    g->sd = f->df > 0 ? sqrt(g->rss / f->df) : NAN;
    return moderate(g);
}

/* ---- the outlier screen ------------------------------------------------------------------------- */

/* The deleted studentized residual of every cell of fit f. For cell k (schedule i, seed j) with residual e_k and
 * leverage h_k, deleting it changes the other residuals of schedule i by h_mk·e_k/(1 − h_k), so schedule i's
 * residual sum of squares without the cell is exact, its df dfi − 1 (the total df drops by one, nearly all of it
 * in the cell's own schedule). The scale is schedule i's moderated variance with the cell deleted: the prior is
 * refitted from the moments with schedule i's mean square replaced by its deleted one (so a diverged run inflates
 * neither its own variance nor the prior's spread), and with no excess spread the pooled variance with the cell
 * deleted, (RSS − e_k²/(1 − h_k))/(df − 1), the textbook externally studentized residual. Writes t[k] and df[k]
 * per cell index i·nseed + j (NAN where not computable). Returns -1 on no memory. */
static int deleted_residuals(const ranking_fit *f, double *t, double *tdf) {
    int n = f->nseed, nk = f->nkept, K = f->nsched, rc = -1;
    size_t cells = (size_t)K * n;
    for (size_t c = 0; c < cells; c++) t[c] = tdf[c] = NAN;
    if (f->df < 2) return 0;
    double *e = malloc(cells * sizeof *e), *zi = malloc((size_t)K * sizeof *zi), *ti = malloc((size_t)K * sizeof *ti);
    double *va = malloc((size_t)(nk ? nk : 1) * sizeof *va), *vb = malloc((size_t)(nk ? nk : 1) * sizeof *vb);
    if (!e || !zi || !ti || !va || !vb) goto out;
    /* the moments of e_i = log s_i² − ψ(d_i/2) + log(d_i/2) (stats_eb_prior's), to replace one schedule's term */
    double md = 0;
    {
        int m = 0;
        for (int i = 0; i < K; i++) if (f->dfi[i] > 0 && isfinite(f->ms[i])) { md += f->ms[i]; m++; }
        md = m ? md / m : 1;   /* the floor's scale: the mean here (the median in stats_eb_prior; only zero s² meet it) */
        if (md == 0) md = 1;
    }
    double se = 0, see = 0, stri = 0;
    int m = 0;
    for (int i = 0; i < K; i++) {
        zi[i] = ti[i] = NAN;
        if (!(f->dfi[i] > 0 && isfinite(f->ms[i]))) continue;
        double x = f->ms[i] > 1e-5 * md ? f->ms[i] : 1e-5 * md;
        zi[i] = log(x) - stats_digamma(f->dfi[i] / 2) + log(f->dfi[i] / 2);
        ti[i] = stats_trigamma(f->dfi[i] / 2);
        se += zi[i]; see += zi[i] * zi[i]; stri += ti[i]; m++;
    }
    for (int i = 0; i < K; i++)
        for (int j = 0; j < n; j++) {
            size_t c = (size_t)i * n + j;
            e[c] = f->cell[c] ? f->y[c] - f->tau[i] - f->beta[j] : NAN;
        }
    for (int i = 0; i < K; i++) {
        if (f->r[i] < 2) continue;
        const double *ui = f->u + (size_t)i * nk;
        for (int j = 0; j < n; j++) {
            size_t c = (size_t)i * n + j;
            if (!f->cell[c]) continue;
            for (int b = 0; b < nk; b++) va[b] = -ui[b];
            if (f->kept[j] >= 0) va[f->kept[j]] += 1;
            double h = 1.0 / f->r[i] + quad(f, va);
            if (!(1 - h > 1e-9)) continue;
            double ek = e[c], rssi = 0;
            for (int l = 0; l < n; l++) {   /* schedule i's residuals with the cell deleted */
                size_t cl = (size_t)i * n + l;
                if (l == j || !f->cell[cl]) continue;
                for (int b = 0; b < nk; b++) vb[b] = -ui[b];
                if (f->kept[l] >= 0) vb[f->kept[l]] += 1;
                double hlk = 1.0 / f->r[i];
                for (int a = 0; a < nk; a++) {
                    if (va[a] == 0) continue;
                    double s = 0;
                    for (int b = 0; b < nk; b++) s += f->sinv[a * nk + b] * vb[b];
                    hlk += va[a] * s;
                }
                double el = e[cl] + hlk * ek / (1 - h);
                rssi += el * el;
            }
            double s2p = (f->rss - ek * ek / (1 - h)) / (f->df - 1), dfp = f->df - 1, s2 = s2p, dfk = dfp;
            double di = f->dfi[i] - 1;
            /* the prior with schedule i's term replaced by its deleted one */
            double se2 = se, see2 = see, st2 = stri;
            int m2 = m;
            if (isfinite(zi[i])) { se2 -= zi[i]; see2 -= zi[i] * zi[i]; st2 -= ti[i]; m2--; }
            double si2 = di > 1e-9 ? rssi / di : NAN;
            if (di > 1e-9) {
                double x = si2 > 1e-5 * md ? si2 : 1e-5 * md, z = log(x) - stats_digamma(di / 2) + log(di / 2);
                se2 += z; see2 += z * z; st2 += stats_trigamma(di / 2); m2++;
            }
            if (m2 >= 2) {
                double em = se2 / m2, ev = (see2 - m2 * em * em) / (m2 - 1) - st2 / m2;
                if (ev > 0) {
                    double d0 = 2 * stats_trigamma_inverse(ev), s02 = exp(em + stats_digamma(d0 / 2) - log(d0 / 2));
                    double dd = di > 1e-9 ? di : 0;
                    s2 = (d0 * s02 + dd * (dd > 0 ? si2 : 0)) / (d0 + dd);
                    dfk = d0 + dd < dfp ? d0 + dd : dfp;
                }
            }
            if (!(s2 > 0)) continue;
            t[c] = ek / sqrt(s2 * (1 - h));
            tdf[c] = dfk;
        }
    }
    rc = 0;
out:
    free(e); free(zi); free(ti); free(va); free(vb);
    return rc;
}

int ranking_screen(const ranking_obs *obs, int nobs, int nsched, unsigned char *out, double *resid, double *thr) {
    int rc = -1, nscr = 0, ncells = 0, prev_comp = -1;
    for (int k = 0; k < nobs; k++) {
        out[k] = 0;
        if (resid) resid[k] = NAN;
        if (thr) thr[k] = NAN;
        if (obs[k].sched >= 0 && obs[k].sched < nsched && isfinite(obs[k].y)) ncells++;
    }
    ranking_obs *act = malloc((size_t)(nobs ? nobs : 1) * sizeof *act);
    int *from = malloc((size_t)(nobs ? nobs : 1) * sizeof *from);
    unsigned char *keep = calloc((size_t)(nobs ? nobs : 1), 1);   /* 1: may not be screened (it would disconnect) */
    double *t = NULL, *tdf = NULL;
    ranking_fit f;
    memset(&f, 0, sizeof f);
    if (!act || !from || !keep) goto out;
    int cap = ncells / 10, last = -1;   /* at most a tenth of the cells */
    while (nscr < cap) {
        int na = 0;
        for (int k = 0; k < nobs; k++)
            if (!out[k] && obs[k].sched >= 0 && obs[k].sched < nsched && isfinite(obs[k].y)) { act[na] = obs[k]; from[na++] = k; }
        int frc = ranking_fit_compute(act, na, nsched, &f);
        if (frc == -1) goto out;
        if (frc == -2) break;   /* too many seeds: no blocked fit, nothing screened */
        if (last >= 0 && f.ncomp > prev_comp) {   /* the last one screened split the design: keep it */
            out[last] = 0; keep[last] = 1; nscr--;
            if (resid) resid[last] = NAN;
            if (thr) thr[last] = NAN;
            last = -1;
            ranking_fit_release(&f);
            continue;
        }
        prev_comp = f.ncomp;
        size_t cells = (size_t)f.nsched * f.nseed;
        free(t); free(tdf);
        t = malloc((cells ? cells : 1) * sizeof *t);
        tdf = malloc((cells ? cells : 1) * sizeof *tdf);
        if (!t || !tdf || deleted_residuals(&f, t, tdf) < 0) goto out;
        int best = -1;
        double best_ratio = 1, best_t = NAN, best_thr = NAN;
        for (size_t c = 0; c < cells; c++) {
            if (!isfinite(t[c]) || !f.cell[c]) continue;
            int k = from[f.cell[c] - act];
            if (keep[k]) continue;
            double th = stats_t_quantile(1 - RANKING_SCREEN_ALPHA / (2.0 * ncells), tdf[c]), ratio = fabs(t[c]) / th;
            if (ratio > best_ratio) { best_ratio = ratio; best = k; best_t = t[c]; best_thr = th; }
        }
        ranking_fit_release(&f);
        if (best < 0) break;
        out[best] = 1;
        if (resid) resid[best] = best_t;
        if (thr) thr[best] = best_thr;
        last = best;
        nscr++;
    }
    if (last >= 0 && nscr > 0) {   /* the final one screened: check it did not split the design */
        int na = 0;
        for (int k = 0; k < nobs; k++)
            if (!out[k] && obs[k].sched >= 0 && obs[k].sched < nsched && isfinite(obs[k].y)) { act[na] = obs[k]; from[na++] = k; }
        int frc = ranking_fit_compute(act, na, nsched, &f);
        if (frc == -1) goto out;
        if (frc == 0 && f.ncomp > prev_comp) {
            out[last] = 0; nscr--;
            if (resid) resid[last] = NAN;
            if (thr) thr[last] = NAN;
        }
        ranking_fit_release(&f);
    }
    rc = nscr;
out:
    ranking_fit_release(&f);
    if (rc < 0) for (int k = 0; k < nobs; k++) out[k] = 0;
    free(act); free(from); free(keep); free(t); free(tdf);
    return rc;
}
