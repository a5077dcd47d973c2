/* ranking.c — the sweep's answer (ranking.h): the comparisons against uniform, the best group, the detectable effect
 * and the val-sample noise on the blocked model's fits (ranking_fit.c: the fit, its design and the outlier screen;
 * ranking_read.c: the read of the store that feeds them).
 *
 * Levels: without halving one level (the final result); with halving each rung is a level and the final result
 * the last. Each level is fitted on every job with a value there, each schedule is compared at the level it is
 * shown at, and the best group is chosen at the highest level shown (the survivors): pruned schedules are not
 * compared with them.
 */
#include "ranking.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* d[] = y(a, seed) − y(b, seed) over the seeds both have; returns the count */
static int fit_paired(const ranking_fit *f, int a, int b, double *d) {
    int n = 0;
    for (int j = 0; j < f->nseed; j++) {
        double x = f->y[(size_t)a * f->nseed + j], y = f->y[(size_t)b * f->nseed + j];
        if (!isnan(x) && !isnan(y)) d[n++] = x - y;
    }
    return n;
}

/* ---- the ranking --------------------------------------------------------------------------------- */

void ranking_cmp_clear(ranking_cmp *c) {
    memset(c, 0, sizeof *c);
    c->mean = c->sd = c->se = c->df = c->t = c->p = c->p_holm = c->ci_low = c->ci_high = NAN;
}

/* row a against row b at fit f by the method: the estimate of y_a − y_b, its SE and df */
static void compare(const ranking_fit *f, ranking_method m, int a, int b, double *d, ranking_cmp *c) {
    ranking_cmp_clear(c);
    c->method = m;
    c->n = fit_paired(f, a, b, d);
    stats_paired sp;   /* the paired differences: their sd always, their mean and SE under the paired method */
    stats_paired_test(d, c->n, &sp);
    if (c->n >= 2) c->sd = sp.sd;
    if (m == RANKING_BLOCKED) {   /* the moderated contrast: each side at its own shrunken variance */
        if (isnan(ranking_fit_var(f, a, b))) return;
        c->has = 1;
        c->mean = f->tau[a] - f->tau[b];
        double df, var = f->df > 0 ? ranking_fit_contrast(f, a, b, &df) : NAN;
        if (isfinite(var)) {
            c->df = df;
            c->se = sqrt(var);
        }
    } else {
        if (c->n == 0) return;
        c->has = 1;
        c->mean = sp.mean;
        if (c->n >= 2) { c->df = c->n - 1; c->se = sp.sd / sqrt((double)c->n); }
    }
    if (isfinite(c->se)) {
        double h = stats_t_quantile(0.975, c->df) * c->se;
        c->ci_low = c->mean - h;
        c->ci_high = c->mean + h;
        if (c->se > 0) { c->t = c->mean / c->se; c->p = stats_t_p2(c->t, c->df); }
        else { c->t = c->mean == 0 ? 0 : c->mean > 0 ? INFINITY : -INFINITY; c->p = c->mean == 0 ? 1 : 0; }
    }
}

/* The best group's critical value from the data's own tails. Under "every schedule equal" the residuals of a seed
 * are exchangeable across the schedules run with it, so permuting them within each seed block, refitting, and
 * taking the largest |τ̂_i − τ̂_j| / SE_ij over the family's pairs (SE_ij the moderated contrast's, as in the
 * group's rule) draws from the null distribution of the statistic the best group thresholds, whatever the error
 * law. The (B+1)·(1−α) order statistic of B draws is the critical value; the group uses max(Tukey's, this). The
 * stream is fixed (SplitMix64 from RANKING_PERM_SEED), so a ranking is a function of its data. Work is counted in
 * pair evaluations plus fitted observations; when B·(pairs + observations) would exceed RANKING_PERM_WORK, B
 * shrinks, and below RANKING_PERM_MIN_REPS the calibration is skipped (Tukey's alone, said so). Below
 * RANKING_PERM_MIN_DF residual df it is not tried: with a few cells per block the permutations are few and their
 * refitted variances near zero, so the quantile only inflates what Tukey's already bounds under normality. Returns 0 (q NAN
 * when skipped or not computable) or -1 on no memory. */

static int best_perm_q(const ranking_fit *f, const int *fam, int K, ranking_perm *out) {
    memset(out, 0, sizeof *out);
    out->q = NAN;
    if (K < 2 || !f->beta) return 0;
    if (f->df < RANKING_PERM_MIN_DF) { out->small = 1; return 0; }   /* too few cells per block to permute usefully */
    long long pairs = (long long)K * (K - 1) / 2, per = pairs + f->nobs;
    long long B = RANKING_PERM_REPS;
    if (B * per > RANKING_PERM_WORK) B = RANKING_PERM_WORK / per;
    out->planned = (int)B;
    if (B < RANKING_PERM_MIN_REPS) { out->skipped = 1; return 0; }
    int n = f->nseed, K0 = f->nsched, rc = -1;
    size_t cells = (size_t)K0 * n;
    double *e = malloc((size_t)f->nobs * sizeof *e), *mx = malloc((size_t)B * sizeof *mx);
    double *y = malloc(cells * sizeof *y), *T = malloc((size_t)K0 * sizeof *T), *Q = malloc((size_t)(f->nkept + 1) * sizeof *Q);
    double *tau = malloc((size_t)K0 * sizeof *tau), *ms = malloc((size_t)K0 * sizeof *ms);
    double *s2m = malloc((size_t)K0 * sizeof *s2m), *dfm = malloc((size_t)K0 * sizeof *dfm), *beta = malloc((size_t)n * sizeof *beta);
    int *start = malloc((size_t)(n + 1) * sizeof *start), *at = malloc((size_t)f->nobs * sizeof *at);
    int *pat = malloc((size_t)K * sizeof *pat);
    double *w = malloc((size_t)K * sizeof *w);
    if (!e || !mx || !y || !T || !Q || !tau || !ms || !s2m || !dfm || !beta || !start || !at || !pat || !w) goto out;
    for (int a = 0; a < K; a++) {   /* pat[a]: the first member whose seeds are a's (same u row) */
        const double *ua = f->u + (size_t)fam[a] * f->nkept;
        pat[a] = a;
        for (int c = 0; c < a && pat[a] == a; c++) {
            if (pat[c] != c || f->comp[fam[c]] != f->comp[fam[a]]) continue;
            const double *uc = f->u + (size_t)fam[c] * f->nkept;
            int same = 1;
            for (int k = 0; k < f->nkept && same; k++) same = ua[k] == uc[k];
            if (same) pat[a] = c;
        }
    }
    ranking_fit g = *f;   /* the design's parts borrowed; the y-dependent ones are ours */
    g.tau = tau; g.ms = ms; g.s2m = s2m; g.dfm = dfm; g.beta = beta; g.y = y;
    /* the cells by seed (blocks), with their residuals */
    int m = 0;
    for (int j = 0; j < n; j++) {
        start[j] = m;
        for (int i = 0; i < K0; i++) {
            size_t c = (size_t)i * n + j;
            y[c] = f->y[c];
            if (!f->cell[c]) continue;
            at[m] = (int)c;
            e[m++] = f->y[c] - f->tau[i] - f->beta[j];
        }
    }
    start[n] = m;
    stats_rng st = { RANKING_PERM_SEED ^ ((unsigned long long)m << 32) ^ (unsigned long long)K, 0, 0 };
    for (long long b = 0; b < B; b++) {
        for (int j = 0; j < n; j++) {   /* Fisher–Yates within the block */
            int lo = start[j], len = start[j + 1] - lo;
            for (int k = len - 1; k > 0; k--) {
                int r = (int)(stats_rng_next(&st) % (unsigned long long)(k + 1));
                double t = e[lo + k]; e[lo + k] = e[lo + r]; e[lo + r] = t;
            }
            for (int k = 0; k < len; k++) y[at[lo + k]] = e[lo + k];
        }
        if (ranking_fit_refit(f, &g, y, T, Q) < 0) goto out;
        out->work += m;
        /* the largest studentized pair: members missing the same seeds (pat equal) have Var = s̃²_a/r_a + s̃²_c/r_c,
         * the rest go through ranking_fit_contrast */
        double best2 = 0;
        for (int a = 0; a < K; a++) w[a] = g.s2m[fam[a]] / f->r[fam[a]];
        for (int a = 0; a < K; a++) {
            double ta = g.tau[fam[a]], wa = w[a];
            for (int c = a + 1; c < K; c++) {
                double v, d = ta - g.tau[fam[c]];
                if (pat[a] == pat[c]) v = wa + w[c];
                else { double df; v = ranking_fit_contrast(&g, fam[a], fam[c], &df); }
                if (v > 0 && d * d > best2 * v) best2 = d * d / v;
            }
        }
        out->work += pairs;
        mx[b] = sqrt(best2);
    }
    qsort(mx, (size_t)B, sizeof *mx, stats_cmp_double);
    long long k = (long long)ceil((1 - RANKING_ALPHA) * (double)(B + 1)) - 1;
    if (k > B - 1) k = B - 1;
    out->q = mx[k];
    out->reps = (int)B;
    rc = 0;
out:
    free(e); free(mx); free(y); free(T); free(Q); free(tau); free(ms); free(s2m); free(dfm); free(beta); free(start); free(at);
    free(pat); free(w);
    return rc;
}

/* Tukey's q_{1−α}(K, df)/√2 at df rounded down (a cache of the integer df's; conservative) */
static double tukey_q(int K, double df) {
    if (!(df >= 1)) return NAN;
    return stats_range_quantile(RANKING_ALPHA, K > 1 ? K : 2, floor(df)) / M_SQRT2;
}
/* A pair's SE and critical value in the best group. Calibrated (the permutation ran): the moderated contrast's SE
 * and the larger of Tukey's q at its df and the permutation's. Otherwise (a small design, a family over the cost
 * cap): Tukey–Kramer on the pooled variance, exact under equal normal errors — with few cells the prior's spread
 * is too noisy to moderate the group's pairs (docs/STATISTICS.md: 0.085 drops at 6 × 2 under the null). Returns
 * the margin q·SE (NAN when not computable). */
static double pair_margin(const ranking_fit *f, const ranking *r, int K, int i, int j) {
    if (r->perm.reps > 0) {
        double df, var = ranking_fit_contrast(f, i, j, &df), q = tukey_q(K, df);
        if (isfinite(r->perm.q) && !(r->perm.q <= q)) q = r->perm.q;
        return isfinite(var) ? q * sqrt(var) : NAN;
    }
    double var = ranking_fit_var(f, i, j);
    return isfinite(var) && isfinite(f->sd) ? r->tukey_critical * f->sd * sqrt(var) : NAN;
}

typedef struct sort_item { ranking_row row; double key; int has_key; } sort_item;

static int cmp_items(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    if (a->row.level != b->row.level) return a->row.level > b->row.level ? -1 : 1;   /* highest rung reached first */
    if (a->has_key != b->has_key) return a->has_key ? -1 : 1;
    if (a->has_key) {   /* provisional is a column, not a key: the model's estimate orders */
        if (a->key < b->key) return -1;
        if (a->key > b->key) return 1;
    }
    return a->row.ord < b->row.ord ? -1 : a->row.ord > b->row.ord;
}

static int cmp_tau_idx(const void *pa, const void *pb, void *ctx) {
    const double *tau = ctx;
    double x = tau[*(const int *)pa], y = tau[*(const int *)pb];
    return x < y ? -1 : x > y;
}

/* insertion sort of idx[] by tau[] (families are ordered once per ranking; qsort_r is not portable C) */
static void sort_by_tau(int *idx, int n, const double *tau) {
    for (int i = 1; i < n; i++) {
        int x = idx[i], j = i - 1;
        while (j >= 0 && cmp_tau_idx(&idx[j], &x, (void *)tau) > 0) { idx[j + 1] = idx[j]; j--; }
        idx[j + 1] = x;
    }
}

/* the power search behind ranking_design_power and the fitted design's figure: df(n) is the design's residual df
 * ((K−1)(n−1) blocked, n − 1 paired) or, with df_at > 0, the fitted contrast's df scaled by (n − 1)/(seeds − 1) */
static void power_search(int K, int seeds, int m, double sd, ranking_method method, double df_at, double effect,
                         ranking_power *pw) {
    memset(pw, 0, sizeof *pw);
    pw->seeds = seeds;
    pw->m = m;
    pw->sd = sd;
    pw->critical = pw->min_significant = pw->delta80 = pw->df = pw->contrast_se = NAN;
    if (m < 1) m = 1;
    if (!isfinite(sd) || !(sd > 0) || seeds < 2) return;
    for (int n = 2; n <= 1000; n++) {
        double df = df_at > 0 ? df_at * (n - 1) / (seeds - 1)
                  : method == RANKING_BLOCKED && K >= 2 ? (double)(K - 1) * (n - 1) : n - 1;
        if (df < 1) df = 1;
        double c = stats_t_quantile(1 - RANKING_ALPHA / (2.0 * m), df);
        double se = sd * sqrt(2.0 / n), d80 = stats_t_power_ncp(c, df, 0.8) * se;
        if (n == seeds) {
            pw->df = df;
            pw->critical = c;
            pw->contrast_se = se;
            pw->min_significant = c * se;
            pw->delta80 = d80;
            pw->paper_detectable = d80 <= effect;
        }
        if (!pw->seeds_for_paper && d80 <= effect) pw->seeds_for_paper = n;
        if (n >= seeds && pw->seeds_for_paper) break;
    }
}

void ranking_design_power(int K, int seeds, int m, double sd, ranking_method method, double effect, ranking_power *pw) {
    power_search(K, seeds, m, sd, method, 0, effect, pw);
    snprintf(pw->test, sizeof pw->test, "%s", method == RANKING_BLOCKED ? "pooled t" : "paired t");
}

/* What the fitted design can detect: the median over the schedules of their contrast against uniform (its
 * moderated variance and Satterthwaite df, as the tests use them), at the design's seeds. The sd reported is the
 * run-to-run sd that gives that contrast in a complete design, √(V·seeds/2). The paired method (too many seeds)
 * and a fit without a baseline contrast use the design's formula at the pooled sd. */
static void compute_power(ranking *r, const ranking_row *byorig, int base, int K) {
    const ranking_fit *f = &r->fit;
    int m = 0;
    double *v = NULL, *dfs = NULL;
    if (r->method == RANKING_BLOCKED && base >= 0 && f->s2m && f->df > 0) {
        v = malloc((size_t)(f->nsched ? f->nsched : 1) * sizeof *v);
        dfs = malloc((size_t)(f->nsched ? f->nsched : 1) * sizeof *dfs);
        if (v && dfs)
            for (int i = 0; i < f->nsched; i++) {
                if (i == base || byorig[i].level != r->best_level) continue;
                double df, x = ranking_fit_contrast(f, i, base, &df);
                if (isfinite(x) && x > 0 && isfinite(df)) { v[m] = x; dfs[m++] = df; }
            }
    }
    if (m == 0 || r->seeds < 2) {
        ranking_design_power(K, r->seeds, r->comparisons, f->sd, r->method, RANKING_PAPER_EFFECT, &r->power);
    } else {
        qsort(v, (size_t)m, sizeof *v, stats_cmp_double);
        qsort(dfs, (size_t)m, sizeof *dfs, stats_cmp_double);
        double vm = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2, dm = m % 2 ? dfs[m / 2] : (dfs[m / 2 - 1] + dfs[m / 2]) / 2;
        power_search(K, r->seeds, r->comparisons, sqrt(vm * r->seeds / 2), r->method, dm, RANKING_PAPER_EFFECT, &r->power);
        snprintf(r->power.test, sizeof r->power.test, "%s", isfinite(f->d0)
                 ? "moderated t" : "pooled t");
    }
    free(v);
    free(dfs);
}

static void compute_valnoise(ranking *r, const ranking_fit *f, const ranking_row *rows, int base) {
    ranking_valnoise *v = &r->val;
    memset(v, 0, sizeof *v);
    v->sd = v->seed_sd = v->share = v->sd_mean = v->seed_sd_mean = v->share_mean = NAN;
    if (base < 0) return;
    double sum = 0;
    int hist_n = 0, hist_c = 0;
    for (int i = 0; i < f->nsched; i++) {
        if (i == base || rows[i].level != r->best_level) continue;
        for (int j = 0; j < f->nseed; j++) {
            const ranking_obs *a = f->cell[(size_t)i * f->nseed + j], *b = f->cell[(size_t)base * f->nseed + j];
            if (!a || !b || !a->batches || !b->batches || a->nbatch != b->nbatch || a->nbatch < 2) continue;
            int nb = a->nbatch;
            double mean = 0, ss = 0;
            for (int k = 0; k < nb; k++) mean += a->batches[k] - b->batches[k];
            mean /= nb;
            for (int k = 0; k < nb; k++) {
                double d = a->batches[k] - b->batches[k] - mean;
                ss += d * d;
            }
            sum += ss / (nb - 1) / nb;   /* the squared standard error of this pair's Δ over its batches */
            v->pairs++;
            if (nb == hist_n) hist_c++;
            else if (hist_c == 0) { hist_n = nb; hist_c = 1; }
            else hist_c--;   /* majority vote: the most common batch count */
        }
    }
    if (v->pairs == 0) return;
    v->batches = hist_n;
    v->sd = sqrt(sum / v->pairs);
    if (isfinite(f->sd)) {
        v->seed_sd = M_SQRT2 * f->sd;
        v->share = v->seed_sd > 0 ? v->sd * v->sd / (v->seed_sd * v->seed_sd) : NAN;
    }
    /* The estimate is a seed average, and the val batches are the same for every seed: the val sample's error in a
     * schedule's Δ does not average out over seeds while the seeds' does. So per schedule the batch-wise difference
     * averaged over its common seeds, d_k = mean_j (a_jk − b_jk), gives the val sample's SE of the averaged Δ,
     * sd_k(d)/√nb, against the seeds' √2·σ/√n; the warning is on that ratio. */
    double se2 = 0, sd2 = 0;
    int ns = 0;
    for (int i = 0; i < f->nsched && isfinite(f->sd); i++) {
        if (i == base || rows[i].level != r->best_level) continue;
        int nb = 0, nj = 0;
        for (int j = 0; j < f->nseed; j++) {
            const ranking_obs *a = f->cell[(size_t)i * f->nseed + j], *b = f->cell[(size_t)base * f->nseed + j];
            if (!a || !b || !a->batches || !b->batches || a->nbatch != b->nbatch || a->nbatch != hist_n) continue;
            nb = hist_n;
            nj++;
        }
        if (nj == 0 || nb < 2) continue;
        double mean = 0, ss = 0;
        for (int k = 0; k < nb; k++) {
            double dk = 0;
            for (int j = 0; j < f->nseed; j++) {
                const ranking_obs *a = f->cell[(size_t)i * f->nseed + j], *b = f->cell[(size_t)base * f->nseed + j];
                if (!a || !b || !a->batches || !b->batches || a->nbatch != nb || b->nbatch != nb) continue;
                dk += a->batches[k] - b->batches[k];
            }
            dk /= nj;
            double dl = dk - mean;   /* Welford */
            mean += dl / (k + 1);
            ss += dl * (dk - mean);
        }
        se2 += ss / (nb - 1) / nb;
        sd2 += 2 * f->sd * f->sd / nj;
        ns++;
    }
    if (ns > 0) {
        v->schedules = ns;
        v->sd_mean = sqrt(se2 / ns);
        v->seed_sd_mean = sqrt(sd2 / ns);
        v->share_mean = v->seed_sd_mean > 0 ? v->sd_mean * v->sd_mean / (v->seed_sd_mean * v->seed_sd_mean) : NAN;
        v->warn = v->sd_mean > v->seed_sd_mean / 3;
    }
}

/* Level l's screen and fit: the observations the screen keeps go to *keptp (allocated here, the caller frees it),
 * the screened are appended to r->screened, and the fit of the kept is *fit with its method and fallback reason.
 * Returns 0, or -1 out of memory. */
static int screen_level(ranking *r, const ranking_obs *o, int no, int l, ranking_obs **keptp, ranking_fit *fit,
                        ranking_method *meth, int *reason) {
    int n = r->nrows;
    /* the screen: the fit of this level is on the observations it keeps; the screened are named in r->screened */
    int nk = 0, ns;
    unsigned char *out_ = malloc((size_t)(no ? no : 1));
    double *res = malloc((size_t)(no ? no : 1) * sizeof *res), *thr = malloc((size_t)(no ? no : 1) * sizeof *thr);
    *keptp = malloc((size_t)(no ? no : 1) * sizeof **keptp);
    if (!out_ || !res || !thr || !*keptp || (ns = ranking_screen(o, no, n, out_, res, thr)) < 0) {
        free(out_); free(res); free(thr);
        return -1;
    }
    if (ns > 0) {
        ranking_screened *grow = realloc(r->screened, (size_t)(r->nscreened + ns) * sizeof *grow);
        if (!grow) { free(out_); free(res); free(thr); return -1; }
        r->screened = grow;
    }
    int ncells = 0;
    for (int k = 0; k < no; k++) if (o[k].sched >= 0 && o[k].sched < n && isfinite(o[k].y)) ncells++;
    for (int k = 0; k < no; k++) {
        if (!out_[k]) { (*keptp)[nk++] = o[k]; continue; }
        ranking_screened *x = &r->screened[r->nscreened++];
        memset(x, 0, sizeof *x);
        x->job_id = o[k].job_id;
        x->schedule_id = r->rows[o[k].sched].schedule_id;
        x->seed = o[k].seed;
        x->level = l;
        x->y = o[k].y;
        x->residual = res[k];
        x->threshold = thr[k];
        snprintf(x->reason, sizeof x->reason, "val loss %.4g is %.1f residual SDs from the fit (threshold %.2f: "
                 "Bonferroni %g%% over %d jobs)", x->y, fabs(x->residual), x->threshold, 100 * RANKING_SCREEN_ALPHA, ncells);
    }
    free(out_); free(res); free(thr);
    int frc = ranking_fit_compute(*keptp, nk, n, fit);
    if (frc == -1) return -1;
    if (frc == -2) {   /* too many seeds for the blocked model: a fit of the cells only, compared in pairs */
        *meth = RANKING_PAIRED;
        *reason = 2;
        ranking_fit_release(fit);
        return 0;
    }
    *meth = RANKING_BLOCKED;   /* unequal variances are the moderated contrasts' business: no fallback */
    *reason = 0;
    return 0;
}

/* The best group's members at fit f by method m: fam[K] their positions in r->rows, orig[] each position's fit index,
 * byt[K] their fit indices (in τ̂ order for the blocked rule), q the critical value; each member's best, worse_than
 * and its comparison with rank 1 set. d is scratch of RANKING_MAX_SEEDS + 1. Returns 0, or -1 out of memory. */
static int mark_best(ranking *r, const ranking_fit *f, ranking_method m, const int *fam, int K, const int *orig,
                     const int *byt, double q, double *d) {
    int n = r->nrows;
    int *pos_of = malloc((size_t)n * sizeof *pos_of);
    if (!pos_of) return -1;
    for (int i = 0; i < n; i++) pos_of[orig[i]] = i;
    int first = orig[fam[0]];   /* rank 1 of the family */
    for (int a = 0; a < K; a++) {
        int i = orig[fam[a]];
        ranking_row *x = &r->rows[fam[a]];
        x->best = 1;
        ranking_cmp c;
        if (i != first) {
            compare(f, m, i, first, d, &c);
            x->vs_best_n = c.n;
            x->vs_best_mean = c.mean;
            x->vs_best_se = c.se;
            if (m == RANKING_BLOCKED) x->vs_best_margin = pair_margin(f, r, K, i, first);
            else if (c.n >= 2 && K > 1) x->vs_best_margin = stats_t_quantile(1 - RANKING_ALPHA / ((double)K * (K - 1)), c.n - 1) * c.se;
        }
        if (m == RANKING_BLOCKED) {
            if (!isfinite(q)) continue;   /* no noise estimate: nothing can be shown worse */
            for (int b = 0; b < K && byt[b] != i; b++) {
                int j = byt[b];
                if (!(f->tau[j] < f->tau[i])) break;
                double margin = pair_margin(f, r, K, i, j);
                if (isfinite(margin) && f->tau[i] - f->tau[j] > margin) {
                    x->best = 0;
                    x->worse_than = r->rows[pos_of[j]].schedule_id;
                    break;
                }
            }
        } else if (K > 1) {
            for (int b = 0; b < K; b++) {
                int j = orig[fam[b]];
                if (j == i) continue;
                compare(f, m, i, j, d, &c);
                if (c.n < 2 || !isfinite(c.se)) continue;
                double crit = stats_t_quantile(1 - RANKING_ALPHA / ((double)K * (K - 1)), c.n - 1);
                if (c.mean > crit * c.se) { x->best = 0; x->worse_than = r->rows[pos_of[j]].schedule_id; break; }
            }
        }
    }
    free(pos_of);
    return 0;
}

/* Best-group members first within their level (stable: τ̂ order kept inside each part), orig[] kept in step with the rows, ranks renumbered.
 * Returns 0, or -1 out of memory (the rows as they were). */
static int best_first(ranking *r, int *orig) {
    int n = r->nrows;
    ranking_row *tmp = malloc((size_t)n * sizeof *tmp);
    int *otmp = malloc((size_t)n * sizeof *otmp);
    if (!tmp || !otmp) { free(tmp); free(otmp); return -1; }
    int w = 0;
    for (int i = 0; i < n;) {
        int e = i;
        while (e < n && r->rows[e].level == r->rows[i].level) e++;
        for (int pass = 0; pass < 3; pass++)
            for (int k = i; k < e; k++) {
                const ranking_row *x = &r->rows[k];
                int part = x->rank > 0 && x->best == 1 ? 0 : x->rank > 0 ? 1 : 2;
                if (part == pass) { tmp[w] = *x; otmp[w++] = orig[k]; }
            }
        i = e;
    }
    memcpy(r->rows, tmp, (size_t)n * sizeof *tmp);
    memcpy(orig, otmp, (size_t)n * sizeof *otmp);
    free(tmp);
    free(otmp);
    int rk = 0;
    for (int i = 0; i < n; i++) if (r->rows[i].rank > 0) r->rows[i].rank = ++rk;
    return 0;
}

/* The analysis: the best level's fit moved into r->fit (*best left empty), the power and the val noise, which
 * read the rows in the fit's (original) order orig[]. Returns 0, or -1 out of memory. */
static int analyse(ranking *r, ranking_fit *best, const int *orig, int base) {
    int n = r->nrows;
    r->fit = *best;
    memset(best, 0, sizeof *best);
    int kfit = 0;
    for (int i = 0; i < r->fit.nsched && r->fit.r; i++) if (r->fit.r[i] > 0) kfit++;
    {
        /* the power and the val noise read rows in the fit's (original) order */
        ranking_row *byorig = malloc((size_t)(n ? n : 1) * sizeof *byorig);
        if (!byorig) return -1;
        for (int i = 0; i < n; i++) byorig[orig[i]] = r->rows[i];
        compute_power(r, byorig, base, kfit);
        if (r->fit.cell) compute_valnoise(r, &r->fit, byorig, base);
        else {
            memset(&r->val, 0, sizeof r->val);
            r->val.sd = r->val.seed_sd = r->val.share = r->val.sd_mean = r->val.seed_sd_mean = r->val.share_mean = NAN;
        }
        free(byorig);
    }
    return 0;
}

int ranking_compute(ranking *r, ranking_obs *const *obs, const int *nobs, int nlevels, int base) {
    int n = r->nrows, rc = -1;
    ranking_fit *fits = calloc((size_t)(nlevels ? nlevels : 1), sizeof *fits);
    ranking_method *meth = calloc((size_t)(nlevels ? nlevels : 1), sizeof *meth);
    int *reason = calloc((size_t)(nlevels ? nlevels : 1), sizeof *reason);
    double *d = malloc((size_t)(RANKING_MAX_SEEDS + 1) * sizeof *d), *praw = NULL, *padj = NULL;
    sort_item *items = NULL;
    int *fam = NULL, *orig = NULL;
    ranking_obs **kept = calloc((size_t)(nlevels ? nlevels : 1), sizeof *kept);
    if (!fits || !meth || !reason || !d || !kept) goto out;
    free(r->screened);
    r->screened = NULL;
    r->nscreened = 0;
    for (int l = 0; l < nlevels; l++)
        if (screen_level(r, obs[l], nobs[l], l, &kept[l], &fits[l], &meth[l], &reason[l]) < 0) goto out;
    /* the best group's level: the highest shown by a schedule with a value */
    r->best_level = 0;
    for (int i = 0; i < n; i++) if (r->rows[i].seeds_done > 0 && r->rows[i].level > r->best_level) r->best_level = r->rows[i].level;
    if (r->best_level >= nlevels) r->best_level = nlevels - 1;
    r->method = meth[r->best_level];
    r->fallback_reason = reason[r->best_level];

    /* against uniform, each at its level; Holm over every non-baseline schedule */
    praw = malloc((size_t)(n ? n : 1) * sizeof *praw);
    padj = malloc((size_t)(n ? n : 1) * sizeof *padj);
    if (!praw || !padj) goto out;
    for (int i = 0; i < n; i++) {
        ranking_row *x = &r->rows[i];
        ranking_cmp_clear(&x->cmp);
        praw[i] = padj[i] = NAN;   /* no baseline: no Holm, every row's p_holm stays NaN */
        if (base < 0 || i == base || x->seeds_done == 0) continue;
        const ranking_fit *f = &fits[x->level < nlevels ? x->level : 0];
        if (!f->tau) continue;   /* too many seeds: no fit at this level */
        compare(f, meth[x->level], i, base, d, &x->cmp);
        if (isfinite(x->cmp.p)) praw[i] = x->cmp.p;
    }
    r->comparisons = base >= 0 ? stats_holm(praw, n, n - 1, padj) : 0;
    for (int i = 0; i < n; i++) {
        r->rows[i].cmp.p_holm = padj[i];
        r->rows[i].cmp.significant = isfinite(padj[i]) && padj[i] < RANKING_ALPHA;
    }

    /* order: level, ranked, Δ = τ̂_i − τ̂_base (the mean loss without a baseline), the sweep's order; then, once the best
     * group is known, its members first within their level */
    items = malloc((size_t)(n ? n : 1) * sizeof *items);
    orig = malloc((size_t)(n ? n : 1) * sizeof *orig);
    if (!items || !orig) goto out;
    for (int i = 0; i < n; i++) {
        ranking_row *x = &r->rows[i];
        items[i].row = *x;
        items[i].row.rank = i;   /* carries the original index through the sort */
        items[i].key = base < 0 ? x->mean : i == base ? (x->seeds_done > 0 ? 0.0 : NAN) : x->cmp.has ? x->cmp.mean : NAN;
        items[i].has_key = isfinite(items[i].key);
    }
    qsort(items, (size_t)n, sizeof *items, cmp_items);
    int rank = 0;
    for (int i = 0; i < n; i++) {
        orig[i] = items[i].row.rank;
        r->rows[i] = items[i].row;
        r->rows[i].rank = items[i].has_key ? ++rank : 0;
        r->rows[i].best = -1;
        r->rows[i].worse_than = -1;
        r->rows[i].vs_best_mean = r->rows[i].vs_best_se = r->rows[i].vs_best_margin = NAN;
        r->rows[i].vs_best_n = 0;
    }

    /* the best group at best_level: every ranked, unpruned schedule shown there */
    const ranking_fit *f = &fits[r->best_level];
    ranking_method m = meth[r->best_level];
    fam = malloc((size_t)(n ? n : 1) * sizeof *fam);
    if (!fam) goto out;
    int K = 0;
    for (int i = 0; i < n; i++)
        if (r->rows[i].rank > 0 && r->rows[i].level == r->best_level && !r->rows[i].pruned && r->rows[i].race_round <= 0)
            fam[K++] = i;
    r->best_family = K;
    r->best_critical = NAN;
    memset(&r->perm, 0, sizeof r->perm);
    r->perm.q = r->tukey_critical = NAN;
    if (K > 0 && f->tau) {
        double q = NAN;   /* the blocked rule's critical value at the pooled df (reported); pairs use their own df */
        if (m == RANKING_BLOCKED && f->df > 0) q = tukey_q(K, f->df);
        r->tukey_critical = q;
        /* fam[] holds positions in rows[]; their fit indices are orig[] */
        int *byt = malloc((size_t)K * sizeof *byt);
        if (!byt) goto out;
        for (int a = 0; a < K; a++) byt[a] = orig[fam[a]];
        if (m == RANKING_BLOCKED && best_perm_q(f, byt, K, &r->perm) < 0) { free(byt); goto out; }
        if (isfinite(r->perm.q) && isfinite(q) && r->perm.q > q) q = r->perm.q;
        r->best_critical = q;
        if (m == RANKING_BLOCKED) sort_by_tau(byt, K, f->tau);
        if (mark_best(r, f, m, fam, K, orig, byt, q, d) < 0) { free(byt); goto out; }
        free(byt);
        if (best_first(r, orig) < 0) goto out;
    }
    if (analyse(r, &fits[r->best_level], orig, base) < 0) goto out;
    rc = 0;
out:
    if (fits) for (int l = 0; l < nlevels; l++) ranking_fit_release(&fits[l]);
    /* r->fit.cell points into the kept copies freed here: nothing after the compute reads a cell */
    free(r->fit.cell);
    r->fit.cell = NULL;
    if (kept) for (int l = 0; l < nlevels; l++) free(kept[l]);
    free(kept);
    free(fits); free(meth); free(reason); free(d); free(praw); free(padj); free(items); free(fam); free(orig);
    return rc;
}

/* ---- the analysis as JSON and as a sentence ------------------------------------------------------ */

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *ranking_analysis_json(const ranking *r) {
    const ranking_fit *f = &r->fit;
    const ranking_power *p = &r->power;
    const ranking_valnoise *v = &r->val;
    json_t *eq = json_null();
    if (isfinite(f->bartlett_p))
        eq = json_pack("{s:s, s:o, s:i, s:f, s:f, s:b}", "test", "bartlett", "statistic", num(f->bartlett_stat),
                       "df", f->bartlett_groups - 1, "p", f->bartlett_p, "alpha", RANKING_VAR_ALPHA,
                       "passed", f->bartlett_p >= RANKING_VAR_ALPHA);
    if (json_is_object(eq))
        json_object_set_new(eq, "role", json_string("diagnostic: unequal variances are carried by the moderated "
                                                    "contrasts, nothing falls back"));
    const char *why = r->fallback_reason == 2 ? "more seeds than the blocked model takes" : NULL;
    int moderated = isfinite(f->d0);
    json_t *a = json_pack("{s:s, s:s, s:o, s:i, s:o, s:b, s:i, s:i, s:o}",
                          "method", r->method == RANKING_BLOCKED ? "blocked" : "paired",
                          "model", "val_loss ~ schedule + seed (least squares over every finished job)",
                          "fallback_reason", why ? json_string(why) : json_null(),
                          "residual_df", f->df, "pooled_sd", num(f->sd), "balanced", f->balanced,
                          "observations", f->nobs, "seeds_observed", f->nseed, "equal_variance", eq);
    json_object_set_new(a, "screened", json_integer(r->nscreened));
    json_object_set_new(a, "screen", json_pack("{s:s, s:f}", "rule", "deleted studentized residual on the moderated "
                        "variance above t_{1-alpha/(2N)}, N the level's jobs (Bonferroni)", "alpha", RANKING_SCREEN_ALPHA));
    json_object_set_new(a, "variance", json_pack("{s:s, s:o, s:o, s:s}", "method", "moderated",
                        "d0", isfinite(f->d0) ? json_real(f->d0) : json_null(),
                        "s0", isfinite(f->s02) && isfinite(f->d0) ? json_real(sqrt(f->s02)) : json_null(),
                        "used_by", moderated ? "the screen, the comparisons against uniform, the best group and the "
                        "detectable effect (each schedule at its own moderated variance)" : "the screen and the comparisons "
                        "(no excess spread between the schedules' variances: the moderated variance is the pooled one)"));
    json_object_set_new(a, "comparison", json_string(r->method != RANKING_BLOCKED
                        ? "paired t per schedule (common seeds - 1 df), Holm over every schedule against uniform"
                        : moderated ? "moderated t (each side at its own shrunken variance, Satterthwaite df), Holm over "
                        "every schedule against uniform" : "pooled t (residual df), Holm over every schedule against uniform"));
    const ranking_perm *pm = &r->perm;
    json_object_set_new(a, "best_group", json_pack("{s:s, s:i, s:o, s:i, s:I, s:o, s:o, s:{s:s, s:o, s:i, s:i, s:b, s:I}}",
                        "method", r->method == RANKING_BLOCKED ? (f->balanced ? "tukey" : "tukey-kramer") : "bonferroni-paired",
                        "family", r->best_family, "critical", num(r->best_critical),
                        "level", r->best_level, "step", (json_int_t)(r->nrungs > 0 ? r->rung_step[r->best_level] : 0),
                        "tukey_critical", num(r->tukey_critical), "permutation_critical", num(pm->q),
                        "calibration", "method", pm->reps > 0 ? "residual permutation within seed blocks"
                        : pm->skipped ? "none: the family is too large for the calibration's cost cap"
                        : pm->small ? "none: fewer residual df than the calibration needs (Tukey's alone)" : "none",
                        "critical", num(pm->q), "reps", pm->reps, "planned", pm->planned, "skipped", pm->skipped,
                        "work", (json_int_t)pm->work));
    json_object_set_new(a, "detectable", json_pack("{s:s, s:o, s:i, s:i, s:o, s:o, s:o, s:o, s:f, s:b, s:o}",
                        "test", p->test, "contrast_se", num(p->contrast_se), "seeds", p->seeds,
                        "comparisons", p->m, "df", num(p->df), "critical", num(p->critical),
                        "min_significant_delta", num(p->min_significant), "delta_80", num(p->delta80),
                        "paper_effect", RANKING_PAPER_EFFECT, "paper_effect_detectable", p->paper_detectable,
                        "seeds_for_paper_effect", p->seeds_for_paper > 0 ? json_integer(p->seeds_for_paper) : json_null()));
    json_object_set_new(a, "val_noise", v->pairs == 0 ? json_null()
                        : json_pack("{s:i, s:i, s:o, s:o, s:o, s:b, s:i, s:o, s:o, s:o}", "pairs", v->pairs,
                                    "batches", v->batches, "sd", num(v->sd), "seed_sd", num(v->seed_sd),
                                    "share", num(v->share), "warn", v->warn, "schedules", v->schedules,
                                    "sd_mean", num(v->sd_mean), "seed_sd_mean", num(v->seed_sd_mean),
                                    "share_mean", num(v->share_mean)));
    char note[1024];
    ranking_power_sentence(r, note, sizeof note);
    json_object_set_new(a, "note", json_string(note));
    return a;
}

void ranking_power_sentence(const ranking *r, char *buf, size_t n) {
    const ranking_power *p = &r->power;
    size_t o = 0;
    buf[0] = 0;
#define ADD(...) do { if (o < n) { int w_ = snprintf(buf + o, n - o, __VA_ARGS__); if (w_ > 0) o += (size_t)w_; } } while (0)
    if (r->baseline_id < 0) { ADD("no uniform baseline in this sweep: nothing is compared against uniform."); return; }
    if (!isfinite(p->sd)) {
        ADD("%s: no estimate of the run-to-run noise yet, so nothing can be significant; run at least 2 seeds per schedule.",
            r->seeds < 2 ? "one seed per schedule" : "too few finished jobs");
        return;
    }
    ADD("With %d seeds, %d comparisons against uniform and a run-to-run sd of %.4f (%s, %.0f df), |delta| must exceed "
        "%.4f to be significant and about %.4f is detected with 80%% power; ", p->seeds, p->m, p->sd,
        r->method != RANKING_BLOCKED ? "paired t, per schedule" : !strcmp(p->test, "moderated t")
        ? "moderated t, the median schedule's contrast" : "pooled over the sweep", p->df, p->min_significant, p->delta80);
    if (p->paper_detectable) ADD("the paper's effect (%.4f) is within reach.", RANKING_PAPER_EFFECT);
    else if (p->seeds_for_paper > 0)
        ADD("the paper's effect (%.4f) is below what this design can detect: about %d seeds per schedule would reach it.",
            RANKING_PAPER_EFFECT, p->seeds_for_paper);
    else ADD("the paper's effect (%.4f) is below what this design can detect, even at 1000 seeds.", RANKING_PAPER_EFFECT);
    if (r->val.warn)
        ADD(" The val sample alone adds %.4f to a seed-averaged delta's sd (the seeds %.4f), and more seeds do not "
            "reduce it: evaluate more val batches (\"eval\": {\"batches\": \"all\"}) or a larger val split.", r->val.sd_mean,
            r->val.seed_sd_mean);
#undef ADD
}

size_t ranking_key_range(const void *base, size_t n, size_t size, size_t key_off, long long id, size_t *end) {
#define KEY(i) (*(const long long *)((const char *)base + (i) * size + key_off))
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (KEY(mid) < id) lo = mid + 1; else hi = mid;
    }
    size_t e = lo;
    while (e < n && KEY(e) == id) e++;
#undef KEY
    *end = e;
    return lo;
}
