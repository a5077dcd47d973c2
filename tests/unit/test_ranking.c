/* test_ranking.c — orchestrator/ranking.c: the blocked model against a two-way ANOVA worked by hand (balanced,
 * and one missing cell by Yates' missing-value formula), against a dense least-squares solution written here
 * (several missing cells, a disconnected schedule), and the whole ranking on simulated sweeps (no training):
 * family-wise error under the global null, the best group keeping every truly best schedule, the power at the
 * paper's effect, the power figure the ranking states, the variance check, the fallback, the val-sample noise,
 * and a schedule with fewer seeds that beats rank 1.
 * timeout: 120
 */
#include "harness.h"
#include "ranking.h"
#include "ranking_sim.h"
#include "stats.h"

#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a ranking of given observations (schedule 0 = the uniform baseline): tests/ranking_sim.h ---------- */
static void rank_obs(ranking *rk, ranking_row *rows, int K, int nseeds, ranking_obs *obs, int nobs) {
    if (sim_rank(rk, rows, K, nseeds, obs, nobs) != 0) HFAIL("ranking_compute failed");
}

static const ranking_row *row_of(const ranking *rk, long long id) {
    for (int i = 0; i < rk->nrows; i++) if (rk->rows[i].schedule_id == id) return &rk->rows[i];
    return NULL;
}

/* K schedules × n seeds, y = eff[i] + seed effect + run noise; miss (K×n, may be NULL) drops cells */
static int simulate(sim_rng *g, int K, int n, const double *eff, double run_sd, double seed_sd, const unsigned char *miss,
                    ranking_obs *obs) {
    sim_design d = { K, n, eff, run_sd, seed_sd, NULL, 0, miss };
    return sim_sweep(g, &d, obs);
}

/* ---- the fit ------------------------------------------------------------------------------------ */

TEST(block_model_balanced_is_the_two_way_anova) {
    /* 3 schedules × 4 seeds; by hand: τ̂_a − τ̂_b = ȳ_a· − ȳ_b·, RSS = Σ (y − ȳ_i· − ȳ_·j + ȳ_··)², df = 2·3 = 6 */
    double y[3][4] = { {3.40, 3.38, 3.41, 3.39}, {3.37, 3.36, 3.40, 3.35}, {3.42, 3.39, 3.44, 3.40} };
    ranking_obs obs[12];
    int m = 0;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) obs[m++] = (ranking_obs){ i, 10 + j, y[i][j], NULL, 0, 0 };
    ranking_fit f;
    ASSERT_EQ_INT(0, ranking_fit_compute(obs, m, 3, &f));
    double ri[3] = {0}, cj[4] = {0}, g = 0;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) { ri[i] += y[i][j] / 4; cj[j] += y[i][j] / 3; g += y[i][j] / 12; }
    double rss = 0;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) { double e = y[i][j] - ri[i] - cj[j] + g; rss += e * e; }
    printf("tau1-tau0 %.12f (hand %.12f), rss %.12g (hand %.12g), df %d (hand 6)\n", f.tau[1] - f.tau[0], ri[1] - ri[0],
           f.rss, rss, f.df);
    ASSERT_EQ_INT(6, f.df);
    ASSERT_TRUE(f.balanced);
    ASSERT_NEAR(ri[1] - ri[0], f.tau[1] - f.tau[0], 1e-12);
    ASSERT_NEAR(ri[2] - ri[1], f.tau[2] - f.tau[1], 1e-12);
    ASSERT_NEAR(rss, f.rss, 1e-14);
    ASSERT_NEAR(sqrt(rss / 6), f.sd, 1e-12);
    ASSERT_NEAR(2.0 / 4, ranking_fit_var(&f, 0, 2), 1e-12);
    /* each schedule's residual df: (K−1)(n−1)/K = 2 */
    for (int i = 0; i < 3; i++) ASSERT_NEAR(2.0, f.dfi[i], 1e-12);
    ASSERT_EQ_INT(3, f.bartlett_groups);
    ranking_fit_release(&f);
}

TEST(block_model_one_missing_cell_matches_yates) {
    /* t = 4 schedules × r = 3 seeds, cell (2, seed 1) missing. Yates: the least-squares fit equals the complete
     * two-way ANOVA with the cell filled by ŷ = (t·T' + r·B' − G') / ((t−1)(r−1)), residual df one less, and
     * Var(τ̂_2 − τ̂_k) = σ²·(2/r + t/(r(r−1)(t−1))) (Cochran & Cox) */
    double y[4][3] = { {3.40, 3.38, 3.43}, {3.36, 3.35, 3.39}, {3.41, 0, 3.45}, {3.39, 3.37, 3.40} };
    const int t = 4, r = 3, mi = 2, mj = 1;
    ranking_obs obs[12];
    int m = 0;
    for (int i = 0; i < t; i++) for (int j = 0; j < r; j++) if (!(i == mi && j == mj)) obs[m++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
    double T = 0, B = 0, G = 0;
    for (int i = 0; i < t; i++) for (int j = 0; j < r; j++) {
        if (i == mi && j == mj) continue;
        G += y[i][j];
        if (i == mi) T += y[i][j];
        if (j == mj) B += y[i][j];
    }
    y[mi][mj] = (t * T + r * B - G) / ((t - 1) * (r - 1));
    double ri[4] = {0}, cj[3] = {0}, g = 0, rss = 0;
    for (int i = 0; i < t; i++) for (int j = 0; j < r; j++) { ri[i] += y[i][j] / r; cj[j] += y[i][j] / t; g += y[i][j] / (t * r); }
    for (int i = 0; i < t; i++) for (int j = 0; j < r; j++) { double e = y[i][j] - ri[i] - cj[j] + g; rss += e * e; }
    ranking_fit f;
    ASSERT_EQ_INT(0, ranking_fit_compute(obs, m, t, &f));
    printf("Yates estimate %.6f; rss %.12g (hand %.12g); df %d (hand 5); var(2,0) %.9f (hand %.9f)\n", y[mi][mj], f.rss,
           rss, f.df, ranking_fit_var(&f, 2, 0), 2.0 / r + (double)t / (r * (r - 1) * (t - 1)));
    ASSERT_EQ_INT((t - 1) * (r - 1) - 1, f.df);
    ASSERT_TRUE(!f.balanced);
    for (int i = 1; i < t; i++) ASSERT_NEAR(ri[i] - ri[0], f.tau[i] - f.tau[0], 1e-12);
    ASSERT_NEAR(rss, f.rss, 1e-14);
    for (int k = 0; k < t; k++)
        if (k != mi) ASSERT_NEAR(2.0 / r + (double)t / (r * (r - 1) * (t - 1)), ranking_fit_var(&f, mi, k), 1e-12);
    ranking_fit_release(&f);
}

/* Gauss–Jordan inverse of the p×p a (row-major) into inv; returns -1 if singular */
static int gj_inverse(double *a, int p, double *inv) {
    for (int i = 0; i < p * p; i++) inv[i] = i / p == i % p;
    for (int c = 0; c < p; c++) {
        int piv = c;
        for (int r = c + 1; r < p; r++) if (fabs(a[r * p + c]) > fabs(a[piv * p + c])) piv = r;
        if (fabs(a[piv * p + c]) < 1e-12) return -1;
        for (int k = 0; k < p; k++) {
            double x = a[c * p + k]; a[c * p + k] = a[piv * p + k]; a[piv * p + k] = x;
            x = inv[c * p + k]; inv[c * p + k] = inv[piv * p + k]; inv[piv * p + k] = x;
        }
        double d = a[c * p + c];
        for (int k = 0; k < p; k++) { a[c * p + k] /= d; inv[c * p + k] /= d; }
        for (int r = 0; r < p; r++) {
            if (r == c) continue;
            double f = a[r * p + c];
            for (int k = 0; k < p; k++) { a[r * p + k] -= f * a[c * p + k]; inv[r * p + k] -= f * inv[c * p + k]; }
        }
    }
    return 0;
}

TEST(fit_matches_dense_least_squares) {
    /* 5 schedules × 4 seeds with 4 cells missing, solved here directly: X = [schedule indicators | seeds 1..3],
     * β = (XᵀX)⁻¹Xᵀy, Var(τ̂_a − τ̂_b)/σ² = cᵀ(XᵀX)⁻¹c */
    enum { K = 5, N = 4, P = K + N - 1 };
    unsigned char miss[K][N] = { {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 0}, {0, 1, 0, 1} };
    sim_rng g = { 7, 0, 0 };
    ranking_obs obs[K * N];
    int m = 0;
    double X[K * N][P];
    memset(X, 0, sizeof X);
    for (int i = 0; i < K; i++) for (int j = 0; j < N; j++) {
        if (miss[i][j]) continue;
        obs[m] = (ranking_obs){ i, 50 + j, 3.3 + 0.01 * i + 0.02 * j + 0.003 * sim_gauss(&g), NULL, 0, 0 };
        X[m][i] = 1;
        if (j > 0) X[m][K + j - 1] = 1;
        m++;
    }
    double xtx[P * P] = {0}, inv[P * P], xty[P] = {0}, beta[P] = {0};
    for (int a = 0; a < P; a++) {
        for (int b = 0; b < P; b++) for (int k = 0; k < m; k++) xtx[a * P + b] += X[k][a] * X[k][b];
        for (int k = 0; k < m; k++) xty[a] += X[k][a] * obs[k].y;
    }
    ASSERT_EQ_INT(0, gj_inverse(xtx, P, inv));
    for (int a = 0; a < P; a++) for (int b = 0; b < P; b++) beta[a] += inv[a * P + b] * xty[b];
    double rss = 0;
    for (int k = 0; k < m; k++) {
        double fit = 0;
        for (int a = 0; a < P; a++) fit += X[k][a] * beta[a];
        rss += (obs[k].y - fit) * (obs[k].y - fit);
    }
    ranking_fit f;
    ASSERT_EQ_INT(0, ranking_fit_compute(obs, m, K, &f));
    printf("rss %.12g (dense %.12g), df %d (dense %d)\n", f.rss, rss, f.df, m - P);
    ASSERT_EQ_INT(m - P, f.df);
    ASSERT_NEAR(rss, f.rss, 1e-13);
    for (int a = 0; a < K; a++)
        for (int b = 0; b < K; b++) {
            if (a == b) continue;
            double v = inv[a * P + a] + inv[b * P + b] - 2 * inv[a * P + b];
            ASSERT_NEAR(beta[a] - beta[b], f.tau[a] - f.tau[b], 1e-11);
            ASSERT_NEAR(v, ranking_fit_var(&f, a, b), 1e-10);
        }
    ranking_fit_release(&f);
    /* a schedule whose only seed nobody else has: its effect cannot be told from the seed's */
    obs[m++] = (ranking_obs){ K, 999, 3.5, NULL, 0, 0 };
    ASSERT_EQ_INT(0, ranking_fit_compute(obs, m, K + 1, &f));
    ASSERT_EQ_INT(2, f.ncomp);
    ASSERT_TRUE(isnan(ranking_fit_var(&f, K, 0)));
    ASSERT_EQ_INT(m - 1 - P, f.df);   /* the extra cell adds a parameter of its own and no residual */
    ranking_fit_release(&f);
}

/* ---- the ranking on simulated sweeps --------------------------------------------------------------- */

typedef struct mc_out { int any_sig, excl_best, fallback, marked, in_best, reps; double size_sum; } mc_out;

/* reps simulated sweeps; eff may be NULL (global null); best = the index of the truly best schedule (-1: all) */
static mc_out monte_carlo(unsigned long long seed, int reps, int K, int n, const double *eff, int target,
                          const unsigned char *miss) {
    sim_rng g = { seed, 0, 0 };
    mc_out o = {0};
    o.reps = reps;
    ranking_obs *obs = malloc((size_t)K * n * sizeof *obs);
    ranking_row *rows = malloc((size_t)K * sizeof *rows);
    double best = 1e9;
    for (int i = 0; i < K; i++) if ((eff ? eff[i] : 0) < best) best = eff ? eff[i] : 0;
    for (int r = 0; r < reps; r++) {
        int m = simulate(&g, K, n, eff, 0.002, 0.002, miss, obs);
        ranking rk;
        rank_obs(&rk, rows, K, n, obs, m);
        int sig = 0, excl = 0, size = 0;
        for (int i = 0; i < K; i++) {
            const ranking_row *x = &rk.rows[i];
            sig |= x->cmp.significant;
            double e = eff ? eff[x->schedule_id] : 0;
            if (x->best == 0 && e == best) excl = 1;
            if (x->best == 1) size++;
            if (x->schedule_id == target) { o.marked += x->cmp.significant && x->cmp.mean < 0; o.in_best += x->best == 1; }
        }
        o.any_sig += sig;
        o.excl_best += excl;
        o.fallback += rk.method == RANKING_PAIRED;
        o.size_sum += size;
        ranking_fit_release(&rk.fit);
    }
    free(obs);
    free(rows);
    return o;
}

/* Monte Carlo error: a rate ≤ alpha passes while the estimate is below alpha + 3 standard errors */
static double mc_bound(double alpha, int reps) { return alpha + 3 * sqrt(alpha * (1 - alpha) / reps); }

TEST(global_null_family_wise_error_56x3) {
    /* 56 schedules × 3 seeds, no effect anywhere: any "significant vs uniform" and any schedule dropped from the
     * best group (every schedule is truly best here) each happen in ≤ 5% of sweeps */
    int reps = 10000;
    mc_out o = monte_carlo(getenv("MCSEED") ? atoi(getenv("MCSEED")) : 1, getenv("MCREPS") ? atoi(getenv("MCREPS")) : reps, 56, 3, NULL, -1, NULL); reps = o.reps;
    printf("56x3 null, %d sweeps: any significant %.4f, best group drops a truly best %.4f, fallback %.4f, "
           "mean group size %.1f of 56 (bound %.4f)\n", reps, (double)o.any_sig / reps, (double)o.excl_best / reps,
           (double)o.fallback / reps, o.size_sum / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)o.any_sig / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)o.excl_best / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)o.fallback / reps, mc_bound(RANKING_VAR_ALPHA, reps));
    /* and not trivially: the rates are not zero (the procedure is not simply blind) */
    ASSERT_TRUE(o.any_sig + o.excl_best > 0);
}

TEST(global_null_family_wise_error_small_and_unbalanced) {
    /* the demo's shape (6 × 2) and a 12 × 4 sweep with a fifth of its cells missing (Tukey–Kramer) */
    int reps = 10000;
    mc_out a = monte_carlo(2, reps, 6, 2, NULL, -1, NULL);
    unsigned char miss[12 * 4];
    sim_rng g = { 99, 0, 0 };
    for (int c = 0; c < 48; c++) miss[c] = c >= 4 && sim_unif(&g) < 0.2;   /* the baseline keeps every seed */
    mc_out b = monte_carlo(3, reps, 12, 4, NULL, -1, miss);
    printf("6x2 null: any significant %.4f, drops a best %.4f, fallback %.4f; 12x4 with cells missing: %.4f, %.4f, %.4f\n",
           (double)a.any_sig / reps, (double)a.excl_best / reps, (double)a.fallback / reps, (double)b.any_sig / reps,
           (double)b.excl_best / reps, (double)b.fallback / reps);
    ASSERT_LT((double)a.any_sig / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)a.excl_best / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)b.any_sig / reps, mc_bound(0.05, reps));
    ASSERT_LT((double)b.excl_best / reps, mc_bound(0.05, reps));
}

TEST(paper_effect_is_found_at_56x3) {
    /* one schedule 0.0144 better than all others (run sd 0.002): marked significant vs uniform in ≥ 90% of sweeps
     * (the paired per-schedule test found it 8% of the time) and kept in the best group */
    double eff[56] = {0};
    eff[17] = -0.0144;
    int reps = 4000;
    mc_out o = monte_carlo(4, reps, 56, 3, eff, 17, NULL);
    printf("56x3, one schedule -0.0144: marked significant %.4f, in the best group %.4f, mean group size %.2f\n",
           (double)o.marked / reps, (double)o.in_best / reps, o.size_sum / reps);
    ASSERT_TRUE((double)o.marked / reps >= 0.90);
    ASSERT_TRUE((double)o.in_best / reps >= 0.95);
    ASSERT_LT(o.size_sum / reps, 3.0);   /* and the group is small: the others are shown worse */
}

TEST(stated_power_is_the_simulated_power) {
    /* the ranking's delta_80 for 20 × 3 at sd 0.002: a schedule that far below uniform is marked ≈ 80% of the time */
    double eff[20] = {0};
    sim_rng g = { 5, 0, 0 };
    ranking_obs obs[60];
    ranking_row rows[20];
    ranking rk;
    rank_obs(&rk, rows, 20, 3, obs, simulate(&g, 20, 3, NULL, 0.002, 0.002, NULL, obs));
    /* the ranking's critical value and df (Holm's first step over 19 comparisons, (K−1)(n−1) = 38 df), at the true
     * sd (the sweep states it at its own estimate of the sd) */
    ASSERT_NEAR(38, rk.power.df, 0);
    ASSERT_NEAR(stats_t_quantile(1 - 0.05 / 38, 38), rk.power.critical, 1e-12);
    double d80 = rk.power.delta80 / rk.power.sd * 0.002;
    printf("stated: delta80 %.6f at the estimated sd %.6f; %.6f at the true sd 0.002\n", rk.power.delta80, rk.power.sd, d80);
    ranking_fit_release(&rk.fit);
    eff[5] = -d80;
    int reps = 6000;
    mc_out o = monte_carlo(6, reps, 20, 3, eff, 5, NULL);
    printf("simulated power at delta80: %.4f\n", (double)o.marked / reps);
    /* Holm's later steps only add power: between 0.8 and 0.8 + a little, with Monte Carlo error */
    ASSERT_TRUE((double)o.marked / reps > 0.8 - 3 * sqrt(0.16 / reps));
    ASSERT_LT((double)o.marked / reps, 0.88);
}

TEST(unequal_variances_keep_the_blocked_model_with_moderated_ses) {
    /* one schedule ten times noisier than the rest (replaces "unequal variances fall back to paired tests", which
     * asserted the cliff issue #37 removes): Bartlett still rejects and says so, but nothing falls back — the
     * ranking stays blocked, the noisy schedule carries its own larger SE and fewer df, the quiet ones keep theirs */
    sim_rng g = { 8, 0, 0 };
    int K = 12, n = 5;
    ranking_obs obs[60];
    int m = simulate(&g, K, n, NULL, 0.002, 0.002, NULL, obs);
    for (int k = 0; k < m; k++) if (obs[k].sched == 7) obs[k].y += 0.02 * sim_gauss(&g);
    ranking_row rows[12];
    ranking rk;
    rank_obs(&rk, rows, K, n, obs, m);
    const ranking_row *q = row_of(&rk, 3), *x = row_of(&rk, 7);
    printf("Bartlett p %.3g, method %s, reason %d, d0 %.3g; SE quiet %.5f (df %.1f), noisy %.5f (df %.1f), pooled df %d\n",
           rk.fit.bartlett_p, rk.method == RANKING_PAIRED ? "paired" : "blocked", rk.fallback_reason, rk.fit.d0,
           q->cmp.se, q->cmp.df, x->cmp.se, x->cmp.df, rk.fit.df);
    ASSERT_LT(rk.fit.bartlett_p, RANKING_VAR_ALPHA);
    ASSERT_EQ_INT(RANKING_BLOCKED, rk.method);
    ASSERT_EQ_INT(0, rk.fallback_reason);
    ASSERT_TRUE(isfinite(rk.fit.d0));
    ASSERT_EQ_INT(RANKING_BLOCKED, x->cmp.method);
    ASSERT_TRUE(x->cmp.se > 3 * q->cmp.se);       /* the noisy one's own variance, not the pooled one */
    ASSERT_TRUE(x->cmp.df < q->cmp.df);
    ASSERT_TRUE(q->cmp.df <= rk.fit.df);
    /* the quiet schedule's SE is near what the quiet schedules alone give: √(2·s²/n) with s the quiet pool */
    double quiet = 0;
    int nq = 0;
    for (int i = 0; i < K; i++) if (i != 7) { quiet += rk.fit.s2m[i]; nq++; }
    quiet /= nq;
    ASSERT_NEAR(sqrt(2 * quiet / n), q->cmp.se, 0.5 * sqrt(2 * quiet / n));
    json_t *a = ranking_analysis_json(&rk);
    printf("comparison: %s\n", json_string_value(json_object_get(a, "comparison")));
    ASSERT_STREQ("blocked", json_string_value(json_object_get(a, "method")));
    ASSERT_TRUE(json_is_null(json_object_get(a, "fallback_reason")));
    ASSERT_CONTAINS(json_string_value(json_object_get(a, "comparison")), "moderated t");
    ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(a, "equal_variance"), "role")), "diagnostic");
    json_decref(a);
    sim_release(&rk);
}

TEST(moderated_contrast_is_the_sum_over_its_cells) {
    /* τ̂_a − τ̂_b is linear in y: its coefficient on cell k is the contrast of the fit to the unit vector e_k. With
     * those (computed here by K·n refits), Var = Σ c_k² s̃²_{sched k} and the Satterthwaite df must be
     * ranking_fit_contrast's, for pairs that miss different seeds (the general path) and the same ones (the short
     * one); with every s̃² equal to s², Var = s²·ranking_fit_var */
    sim_rng g = { 21, 0, 0 };
    int K = 7, n = 5;
    unsigned char miss[35] = {0};
    miss[1 * 5 + 0] = miss[2 * 5 + 3] = miss[2 * 5 + 4] = miss[5 * 5 + 1] = 1;
    ranking_obs obs[35];
    double scale[7] = { 1, 3, 1, 0.5, 1, 2, 1 };
    sim_design d = { K, n, NULL, 0.002, 0.01, scale, 0, miss };
    int m = sim_sweep(&g, &d, obs);
    ranking_fit f;
    ASSERT_EQ_INT(0, ranking_fit_compute(obs, m, K, &f));
    ASSERT_TRUE(isfinite(f.d0));   /* unequal spread: the moderated variances differ */
    static const int pairs[][2] = { { 1, 0 }, { 2, 1 }, { 5, 2 }, { 3, 0 }, { 6, 4 } };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        int a = pairs[p][0], b = pairs[p][1];
        double var = 0, den = 0, w[7] = {0};
        for (int k = 0; k < m; k++) {
            ranking_obs u[35];
            memcpy(u, obs, (size_t)m * sizeof *u);
            for (int l = 0; l < m; l++) u[l].y = l == k;
            ranking_fit fu;
            ASSERT_EQ_INT(0, ranking_fit_compute(u, m, K, &fu));
            double c = fu.tau[a] - fu.tau[b];
            w[obs[k].sched] += c * c;
            ranking_fit_release(&fu);
        }
        for (int i = 0; i < K; i++) { var += w[i] * f.s2m[i]; den += w[i] * f.s2m[i] * w[i] * f.s2m[i] / f.dfm[i]; }
        double sdf = var * var / den, want_df = sdf < f.df ? sdf : f.df, df, got = ranking_fit_contrast(&f, a, b, &df);
        printf("%d-%d: var %.6g (cells %.6g), df %.4f (cells %.4f)\n", a, b, got, var, df, want_df);
        ASSERT_NEAR(var, got, 1e-12 * var);
        ASSERT_NEAR(want_df, df, 1e-9 * want_df);
        /* equal variances: the homoscedastic formula */
        double sum = 0;
        for (int i = 0; i < K; i++) sum += w[i];
        ASSERT_NEAR(ranking_fit_var(&f, a, b), sum, 1e-12);
    }
    double df;
    ASSERT_TRUE(isnan(ranking_fit_contrast(&f, 3, 3, &df)));
    ASSERT_TRUE(isnan(df));
    ranking_fit_release(&f);
}

TEST(best_group_permutation_counts_its_work_within_the_cap) {
    /* the calibration's cost is pairs + observations per permutation, RANKING_PERM_REPS of them at 56 × 3; a
     * family too large for RANKING_PERM_MIN_REPS within RANKING_PERM_WORK is not calibrated (Tukey's alone, said
     * so); the stream is fixed, so the same data give the same critical value */
    sim_rng g = { 31, 0, 0 };
    enum { K1 = 56, N1 = 3, K2 = 400 };
    static ranking_obs obs[K2 * N1];
    static ranking_row rows[K2];
    int m = simulate(&g, K1, N1, NULL, 0.002, 0.02, NULL, obs);
    ranking rk;
    rank_obs(&rk, rows, K1, N1, obs, m);
    long long pairs = (long long)K1 * (K1 - 1) / 2, want = (long long)RANKING_PERM_REPS * (pairs + m);
    double q1 = rk.perm.q;
    printf("56x3: reps %d, work %lld (want %lld), q perm %.4f, Tukey %.4f, used %.4f\n", rk.perm.reps, rk.perm.work,
           want, rk.perm.q, rk.tukey_critical, rk.best_critical);
    ASSERT_EQ_INT(RANKING_PERM_REPS, rk.perm.reps);
    ASSERT_EQ_INT(want, rk.perm.work);
    ASSERT_TRUE(isfinite(rk.perm.q) && rk.perm.q > 2);
    ASSERT_NEAR(rk.perm.q > rk.tukey_critical ? rk.perm.q : rk.tukey_critical, rk.best_critical, 0);
    sim_release(&rk);
    rank_obs(&rk, rows, K1, N1, obs, m);
    ASSERT_NEAR(q1, rk.perm.q, 0);   /* a function of the data */
    sim_release(&rk);
    m = simulate(&g, K2, N1, NULL, 0.002, 0.02, NULL, obs);
    rank_obs(&rk, rows, K2, N1, obs, m);
    long long per = (long long)K2 * (K2 - 1) / 2 + m;
    printf("400x3: planned %d (cap %lld / %lld per permutation), skipped %d, work %lld, used %.4f = Tukey %.4f\n",
           rk.perm.planned, RANKING_PERM_WORK, per, rk.perm.skipped, rk.perm.work, rk.best_critical, rk.tukey_critical);
    ASSERT_EQ_INT(RANKING_PERM_WORK / per, rk.perm.planned);
    ASSERT_TRUE(rk.perm.planned < RANKING_PERM_MIN_REPS);
    ASSERT_EQ_INT(1, rk.perm.skipped);
    ASSERT_EQ_INT(0, rk.perm.work);
    ASSERT_NEAR(rk.tukey_critical, rk.best_critical, 0);
    json_t *a = ranking_analysis_json(&rk);
    ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(json_object_get(a, "best_group"), "calibration"),
                                                      "method")), "too large");
    json_decref(a);
    sim_release(&rk);
}

TEST(fewer_seeds_and_better_than_rank_1_is_never_shown_worse) {
    /* 8 complete schedules × 4 seeds and schedule 8 with 2 seeds, far better than all: the model's estimate orders,
     * so schedule 8 is rank 1 though provisional (missing seeds are a column, not a sort key), it is in the best
     * group, and the best complete schedule is shown worse than it */
    sim_rng g = { 9, 0, 0 };
    int K = 9, n = 4;
    double eff[9] = { 0, 0.001, -0.002, 0.003, 0.0, 0.002, -0.001, 0.004, -0.03 };
    unsigned char miss[36] = {0};
    miss[8 * 4 + 2] = miss[8 * 4 + 3] = 1;
    ranking_obs obs[36];
    int m = simulate(&g, K, n, eff, 0.002, 0.002, miss, obs);
    ranking_row rows[9];
    ranking rk;
    rank_obs(&rk, rows, K, n, obs, m);
    const ranking_row *p = row_of(&rk, 8), *first = &rk.rows[0], *second = &rk.rows[1];
    printf("rank 1 = schedule %lld (provisional %d best %d); rank 2 = schedule %lld (best %d, worse than %lld)\n",
           first->schedule_id, first->provisional, first->best, second->schedule_id, second->best, second->worse_than);
    ASSERT_EQ_INT(8, first->schedule_id);
    ASSERT_EQ_INT(1, p->rank);
    ASSERT_TRUE(p->provisional);
    ASSERT_EQ_INT(1, p->best);
    ASSERT_EQ_INT(2, row_of(&rk, 2)->rank);   /* the best complete one (eff −0.002) next, shown worse than 8 */
    ASSERT_EQ_INT(0, row_of(&rk, 2)->best);
    ASSERT_EQ_INT(8, row_of(&rk, 2)->worse_than);
    /* no schedule is shown worse than one it beats */
    for (int i = 0; i < rk.nrows; i++) {
        const ranking_row *x = &rk.rows[i];
        if (x->best != 0) continue;
        const ranking_row *w = row_of(&rk, x->worse_than);
        ASSERT_TRUE(rk.fit.tau[w->schedule_id] < rk.fit.tau[x->schedule_id]);
    }
    ranking_fit_release(&rk.fit);
}

TEST(val_noise_from_per_batch_losses) {
    /* 3 schedules × 3 seeds, 50 val batches each; schedule − baseline batch differences have sd 0.05, so a paired
     * Δ carries a val-sample standard error of 0.05/√50 ≈ 0.0071 against run-to-run noise 0.002: the warning */
    sim_rng g = { 10, 0, 0 };
    enum { K = 3, N = 3, NB = 50 };
    static double b[K][N][NB];
    ranking_obs obs[K * N];
    int m = 0;
    for (int j = 0; j < N; j++) for (int k = 0; k < NB; k++) b[0][j][k] = 3.4 + 0.3 * sim_gauss(&g);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < N; j++) {
            double mean = 0;
            for (int k = 0; k < NB; k++) {
                if (i > 0) b[i][j][k] = b[0][j][k] + 0.05 * sim_gauss(&g);
                mean += b[i][j][k] / NB;
            }
            obs[m++] = (ranking_obs){ i, j, mean + 0.002 * sim_gauss(&g), b[i][j], NB, 0 };
        }
    ranking_row rows[K];
    ranking rk;
    rank_obs(&rk, rows, K, N, obs, m);
    printf("val noise: pairs %d batches %d sd %.5f seed_sd %.5f share %.3f warn %d\n", rk.val.pairs, rk.val.batches, rk.val.sd,
           rk.val.seed_sd, rk.val.share, rk.val.warn);
    ASSERT_EQ_INT((K - 1) * N, rk.val.pairs);
    ASSERT_EQ_INT(NB, rk.val.batches);
    ASSERT_NEAR(0.05 / sqrt(NB), rk.val.sd, 0.0015);
    ASSERT_TRUE(rk.val.warn);
    char s[1024];
    ranking_power_sentence(&rk, s, sizeof s);
    ASSERT_CONTAINS(s, "\"batches\": \"all\"");
    ranking_fit_release(&rk.fit);
}

TEST(power_sentence_says_what_the_design_cannot_detect) {
    /* 56 × 3 at sd 0.008 (a noisy sweep): the paper's effect is out of reach, and the sentence names the seeds */
    sim_rng g = { 11, 0, 0 };
    ranking_obs obs[168];
    int m = simulate(&g, 56, 3, NULL, 0.008, 0.002, NULL, obs);
    ranking_row rows[56];
    ranking rk;
    rank_obs(&rk, rows, 56, 3, obs, m);
    char s[1024];
    ranking_power_sentence(&rk, s, sizeof s);
    printf("%s\n", s);
    ASSERT_TRUE(!rk.power.paper_detectable);
    ASSERT_TRUE(rk.power.seeds_for_paper > 3);
    ASSERT_CONTAINS(s, "below what this design can detect");
    char want[64];
    snprintf(want, sizeof want, "about %d seeds", rk.power.seeds_for_paper);
    ASSERT_CONTAINS(s, want);
    ranking_fit_release(&rk.fit);
}

/* ---- the outlier screen ------------------------------------------------------------------------- */

/* 56 × 3 at run sd 0.002, seed sd 0.02; cell (sched, seed index) diverged by +1.0 nats when sched ≥ 0 */
static int screen_sweep(unsigned long long seed, int K, int n, int bad_sched, int bad_seed, double jump, double run_sd,
                        ranking_obs *obs, unsigned char *out, double *res, double *thr) {
    sim_rng g = { seed, 0, 0 };
    int m = simulate(&g, K, n, NULL, run_sd, 0.02, NULL, obs);
    for (int k = 0; k < m; k++) {
        obs[k].job_id = 1 + k;
        if (obs[k].sched == bad_sched && obs[k].seed == 1000 + bad_seed) obs[k].y += jump;
    }
    return ranking_screen(obs, m, K, out, res, thr);
}

static void assert_screens_exactly(int bad_sched, int bad_seed) {
    static ranking_obs obs[56 * 3];
    unsigned char out[56 * 3];
    double res[56 * 3], thr[56 * 3];
    int ns = screen_sweep(11, 56, 3, bad_sched, bad_seed, 1.0, 0.002, obs, out, res, thr);
    ASSERT_EQ_INT(1, ns);
    for (int k = 0; k < 56 * 3; k++) {
        int bad = obs[k].sched == bad_sched && obs[k].seed == 1000 + bad_seed;
        if (bad) {
            printf("screened job %lld: residual %.1f, threshold %.2f\n", obs[k].job_id, res[k], thr[k]);
            ASSERT_EQ_INT(1, out[k]);
            ASSERT_LT(thr[k], res[k]);
        } else ASSERT_EQ_INT(0, out[k]);
    }
}

TEST(best_group_members_are_listed_first) {
    /* rows in order: ranked best-group members (by Δ), then the ranked rest (by Δ), then the unranked */
    sim_rng g = { 31, 0, 0 };
    int K = 12, n = 3;
    double eff[12] = { 0, -0.02, 0.01, -0.019, 0.03, 0.0, 0.02, 0.015, -0.018, 0.04, 0.01, 0.0 };
    ranking_obs obs[36];
    int m = simulate(&g, K, n, eff, 0.002, 0.02, NULL, obs);
    ranking_row rows[12];
    ranking rk;
    rank_obs(&rk, rows, K, n, obs, m);
    int seen_out = 0;
    for (int i = 0; i < rk.nrows; i++) {
        const ranking_row *x = &rk.rows[i];
        ASSERT_EQ_INT(i + 1, x->rank);
        if (x->best == 0) seen_out = 1;
        else if (seen_out) HFAIL("row %d (schedule %lld) is in the best group after one that is not", i, x->schedule_id);
        if (i > 0 && x->best == rk.rows[i - 1].best) ASSERT_TRUE(rk.rows[i - 1].cmp.mean <= x->cmp.mean || x->is_baseline || rk.rows[i - 1].is_baseline);
    }
    ASSERT_TRUE(seen_out);
    ranking_fit_release(&rk.fit);
}

TEST(no_baseline_leaves_every_row_without_a_holm_p) {
    /* A sweep without the uniform baseline has nothing to compare against: no row may carry a Holm p or be marked
     * significant. M_PERTURB fills fresh allocations with 0xAA bytes (a finite double) so that a p_holm left
     * unwritten shows up as a number instead of whatever the heap held. */
    mallopt(M_PERTURB, 0x55);
    sim_rng g = { 7, 0, 0 };
    int K = 6, n = 3;
    double eff[6] = { 0, -0.02, 0.01, -0.019, 0.03, 0.0 };
    ranking_obs obs[18];
    int m = simulate(&g, K, n, eff, 0.002, 0.02, NULL, obs);
    ranking_row rows[6];
    ranking rk;
    memset(&rk, 0, sizeof rk);
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < K; i++) { rows[i].schedule_id = i; rows[i].ord = i; rows[i].seeds_total = n; rows[i].seeds_done = n; rows[i].mean = eff[i]; }
    rk.rows = rows;
    rk.nrows = K;
    rk.seeds = n;
    rk.baseline_id = -1;
    ranking_obs *levels[1] = { obs };
    int nl[1] = { m };
    int rc = ranking_compute(&rk, levels, nl, 1, -1);
    mallopt(M_PERTURB, 0);
    ASSERT_EQ_INT(0, rc);
    ASSERT_EQ_INT(0, rk.comparisons);
    for (int i = 0; i < K; i++) {
        if (!isnan(rk.rows[i].cmp.p_holm)) HFAIL("schedule %lld: p_holm %g without a baseline, expected NaN", rk.rows[i].schedule_id, rk.rows[i].cmp.p_holm);
        ASSERT_EQ_INT(0, rk.rows[i].cmp.significant);
    }
    sim_release(&rk);
}

TEST(screen_names_a_diverged_job) { assert_screens_exactly(17, 1); }
TEST(screen_names_a_diverged_baseline_job) { assert_screens_exactly(0, 2); }

TEST(screen_leaves_a_clean_sweep_alone) {
    static ranking_obs obs[56 * 3];
    unsigned char out[56 * 3];
    int ns = screen_sweep(12, 56, 3, -1, 0, 0, 0.002, obs, out, NULL, NULL);
    ASSERT_EQ_INT(0, ns);
    for (int k = 0; k < 56 * 3; k++) ASSERT_EQ_INT(0, out[k]);
}

TEST(screen_without_residual_df_screens_nothing) {
    /* one seed per schedule: every residual is 0 with leverage 1, nothing can be judged, nothing is screened */
    static ranking_obs obs[12];
    unsigned char out[12];
    ASSERT_EQ_INT(0, screen_sweep(13, 12, 1, 3, 0, 1.0, 0.002, obs, out, NULL, NULL));
}

TEST(screen_names_a_diverged_run_of_the_best_schedule) {
    /* schedule 9 is the paper's effect better, and its seed 0 diverged: the screen takes that job only */
    static ranking_obs obs[56 * 3];
    unsigned char out[56 * 3];
    sim_rng g = { 21, 0, 0 };
    double eff[56] = {0};
    eff[9] = -RANKING_PAPER_EFFECT;
    int m = simulate(&g, 56, 3, eff, 0.002, 0.02, NULL, obs);
    for (int k = 0; k < m; k++) if (obs[k].sched == 9 && obs[k].seed == 1000) obs[k].y += 1.0;
    ASSERT_EQ_INT(1, ranking_screen(obs, m, 56, out, NULL, NULL));
    for (int k = 0; k < m; k++) ASSERT_EQ_INT(obs[k].sched == 9 && obs[k].seed == 1000, out[k]);
}

TEST(screen_false_screen_rate_is_at_most_one_percent) {
    /* 400 clean 56 × 3 sweeps: the screen's per-sweep false-screen rate under Gaussian noise, run sd 0.002 */
    static ranking_obs obs[56 * 3];
    unsigned char out[56 * 3];
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) : 400, hit = 0;
    for (int r = 0; r < reps; r++) if (screen_sweep(5000 + r, 56, 3, -1, 0, 0, 0.002, obs, out, NULL, NULL) > 0) hit++;
    double rate = (double)hit / reps;
    printf("false screens: %d of %d sweeps (%.4f)\n", hit, reps, rate);
    ASSERT_LT(rate, 0.01 + 3 * sqrt(0.01 * 0.99 / reps));
}
