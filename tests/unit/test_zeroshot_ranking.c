/* test_zeroshot_ranking.c — the zero-shot columns' comparison with uniform (orchestrator/leaderboard_zeroshot.c,
 * its pure core leaderboard_zero_shot_compare / _holm): the blocked model per task worked by hand (balanced: Δ is
 * the mean paired difference, SE the pooled sd · √(2/n), (K−1)(n−1) df), a missing cell and a disconnected
 * schedule, no test without residual df or with SE 0, Holm's family counting comparisons without a test; then
 * Monte Carlo on simulated zero-shot tables (no training): family-wise error under no effect and the power for a
 * realistic effect, against the per-schedule paired test the columns used before (n − 1 df).
 * MCREPS=N sets the replications (default 2000, a few seconds), MCSEED=S the seed, MCROUND=0 leaves the simulated
 * accuracies unrounded (by default each is a whole number of items, as a real one is).
 * timeout: 120
 */
#include "harness.h"
#include "mc_rng.h"
#include "leaderboard_zeroshot.h"
#include "ranking.h"
#include "stats.h"

#include <stdlib.h>
#include <string.h>

/* ---- the blocked comparison, worked by hand -------------------------------------------------------- */

TEST(balanced_is_the_mean_paired_difference_with_pooled_df) {
    /* 3 schedules × 3 seeds; schedule 0 the baseline */
    const double y[3][3] = { { 0.30, 0.31, 0.29 }, { 0.33, 0.341, 0.321 }, { 0.29, 0.32, 0.30 } };
    ranking_obs obs[9];
    int n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) obs[n++] = (ranking_obs){ i, 11 * (j + 1), y[i][j], NULL, 0, 0 };
    leaderboard_zs_cmp c[3];
    ASSERT_EQ_INT(0, leaderboard_zero_shot_compare(obs, n, 3, 0, c));
    ASSERT_EQ_INT(0, c[0].has);   /* the baseline against itself: no comparison */
    /* the two-way ANOVA by hand: residual e_ij = y_ij − ȳ_i. − ȳ_.j + ȳ.., df (3−1)(3−1) = 4 */
    double ri[3] = {0}, cj[3] = {0}, g = 0, rss = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) { ri[i] += y[i][j] / 3; cj[j] += y[i][j] / 3; g += y[i][j] / 9; }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) { double e = y[i][j] - ri[i] - cj[j] + g; rss += e * e; }
    double sd = sqrt(rss / 4), se = sd * sqrt(2.0 / 3);
    for (int i = 1; i < 3; i++) {
        printf("schedule %d: Δ %.9f (by hand %.9f), se %.9f (%.9f), df %g, p %.6g\n", i, c[i].mean, ri[i] - ri[0], c[i].se, se, c[i].df, c[i].p);
        ASSERT_EQ_INT(1, c[i].has);
        ASSERT_EQ_INT(LEADERBOARD_ZS_TESTED, c[i].why);
        ASSERT_EQ_INT(3, c[i].seeds);
        ASSERT_EQ_INT(3, c[i].common);
        ASSERT_NEAR(ri[i] - ri[0], c[i].mean, 1e-14);
        ASSERT_NEAR(4, c[i].df, 0);
        ASSERT_NEAR(se, c[i].se, 1e-14);
        ASSERT_NEAR(c[i].mean / se, c[i].t, 1e-9);
        ASSERT_NEAR(stats_t_p2(c[i].mean / se, 4), c[i].p, 1e-12);
        ASSERT_NEAR(c[i].mean - stats_t_quantile(0.975, 4) * se, c[i].ci_low, 1e-14);
        ASSERT_NEAR(c[i].mean + stats_t_quantile(0.975, 4) * se, c[i].ci_high, 1e-14);
        double d[3], m = 0, v = 0;   /* the descriptive sd of the paired differences */
        for (int j = 0; j < 3; j++) { d[j] = y[i][j] - y[0][j]; m += d[j] / 3; }
        for (int j = 0; j < 3; j++) v += (d[j] - m) * (d[j] - m) / 2;
        ASSERT_NEAR(sqrt(v), c[i].sd, 1e-14);
    }
}

TEST(missing_cell_and_disconnected_schedule) {
    /* Yates: 3 × 3 with cell (2, seed 3) missing; a 4th schedule with a seed nobody else has */
    const double y[3][3] = { { 0.30, 0.31, 0.29 }, { 0.33, 0.341, 0.321 }, { 0.29, 0.32, NAN } };
    ranking_obs obs[10];
    int n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!isnan(y[i][j])) obs[n++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
    obs[n++] = (ranking_obs){ 3, 99, 0.5, NULL, 0, 0 };
    leaderboard_zs_cmp c[5];
    ASSERT_EQ_INT(0, leaderboard_zero_shot_compare(obs, n, 5, 0, c));
    /* Yates' estimate of the missing value x = (K·R + n·C − G)/((K−1)(n−1)) over the other cells, then Δ from the
     * completed table; Var(τ̂_2 − τ̂_0)/σ² = 2/n + K/(n(K−1)(n−1)) (Cochran & Cox) */
    double R = y[2][0] + y[2][1], C = y[0][2] + y[1][2], G = 0;
    for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) if (!isnan(y[i][j])) G += y[i][j];
    double x = (3 * R + 3 * C - G) / 4, d2 = (y[2][0] + y[2][1] + x) / 3 - (y[0][0] + y[0][1] + y[0][2]) / 3;
    printf("missing cell: Δ %.12f (Yates %.12f), df %g, seeds %d, common %d\n", c[2].mean, d2, c[2].df, c[2].seeds, c[2].common);
    ASSERT_NEAR(d2, c[2].mean, 1e-12);
    ASSERT_NEAR(3, c[2].df, 0);   /* 8 cells (+1 disconnected) − 3 − 3 + 1 component */
    ASSERT_EQ_INT(2, c[2].seeds);
    ASSERT_EQ_INT(2, c[2].common);
    double var = 2.0 / 3 + 3.0 / (3 * 2 * 2);
    ASSERT_NEAR(c[1].se / sqrt(2.0 / 3) * sqrt(var), c[2].se, 1e-12);
    ASSERT_EQ_INT(0, c[3].has);   /* its seed is nobody else's: not comparable */
    ASSERT_EQ_INT(0, c[4].has);   /* no data */
    /* no baseline data at all: nothing is compared */
    ASSERT_EQ_INT(0, leaderboard_zero_shot_compare(obs + 3, n - 3, 5, 0, c));
    for (int i = 0; i < 5; i++) ASSERT_EQ_INT(0, c[i].has);
}

TEST(no_df_and_se_zero_are_no_test) {
    /* one seed: Δ, no df, no interval */
    ranking_obs one[3] = { { 0, 1, 0.30, NULL, 0, 0 }, { 1, 1, 0.33, NULL, 0, 0 }, { 2, 1, 0.28, NULL, 0, 0 } };
    leaderboard_zs_cmp c[3];
    ASSERT_EQ_INT(0, leaderboard_zero_shot_compare(one, 3, 3, 0, c));
    ASSERT_EQ_INT(1, c[1].has);
    ASSERT_NEAR(0.03, c[1].mean, 1e-15);
    ASSERT_EQ_INT(LEADERBOARD_ZS_NO_DF, c[1].why);
    ASSERT_NEAR(0, c[1].df, 0);
    ASSERT_TRUE(isnan(c[1].se) && isnan(c[1].p) && isnan(c[1].ci_low) && isnan(c[1].ci_high));
    ASSERT_STREQ("none", leaderboard_zero_shot_method(c[1].why));
    ASSERT_CONTAINS(leaderboard_zero_shot_reason(c[1].why), "no residual df");
    /* exactly additive (schedule + seed, no noise; the rounding of 0.1 + 0.2 leaves ~1e-17): SE 0, no test */
    ranking_obs ex[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) ex[i * 3 + j] = (ranking_obs){ i, j, 0.1 * (i + 1) + 0.2 * j, NULL, 0, 0 };
    ASSERT_EQ_INT(0, leaderboard_zero_shot_compare(ex, 6, 2, 0, c));
    printf("exact fit: Δ %.17g, se %.3g, df %g\n", c[1].mean, c[1].se, c[1].df);
    ASSERT_EQ_INT(LEADERBOARD_ZS_SE_ZERO, c[1].why);
    ASSERT_NEAR(0.1, c[1].mean, 1e-15);
    ASSERT_NEAR(2, c[1].df, 0);
    ASSERT_TRUE(c[1].se <= LEADERBOARD_ZS_SD_ZERO);
    ASSERT_TRUE(isnan(c[1].p) && isnan(c[1].ci_low));
    ASSERT_STREQ("blocked", leaderboard_zero_shot_method(LEADERBOARD_ZS_TESTED));
    ASSERT_TRUE(leaderboard_zero_shot_reason(LEADERBOARD_ZS_TESTED) == NULL);
}

TEST(holm_family_counts_comparisons_without_a_test) {
    leaderboard_zs_cmp a[3];
    for (int i = 0; i < 3; i++) { memset(&a[i], 0, sizeof a[i]); a[i].has = 1; }
    a[0].p = 0.001; a[1].p = 0.02; a[2].why = LEADERBOARD_ZS_NO_DF; a[2].p = NAN;
    leaderboard_zs_cmp *cells[3] = { &a[0], &a[1], &a[2] };
    ASSERT_EQ_INT(10, leaderboard_zero_shot_holm(cells, 3, 10));   /* 10 in the family, 3 given */
    ASSERT_NEAR(0.01, a[0].p_holm, 1e-15);   /* 10 · 0.001 */
    ASSERT_NEAR(0.18, a[1].p_holm, 1e-15);   /* 9 · 0.02 */
    ASSERT_TRUE(isnan(a[2].p_holm));
    ASSERT_EQ_INT(1, a[0].significant);
    ASSERT_EQ_INT(0, a[1].significant);
    ASSERT_EQ_INT(0, a[2].significant);
    /* a p-value on a cell without a test is never used */
    a[2].p = 1e-9;
    ASSERT_EQ_INT(10, leaderboard_zero_shot_holm(cells, 3, 10));
    ASSERT_TRUE(isnan(a[2].p_holm));
    ASSERT_EQ_INT(0, a[2].significant);
}

/* ---- Monte Carlo: simulated zero-shot tables ------------------------------------------------------- */

#define MC_T 4
/* four tasks the size of HellaSwag, PIQA, ARC-Easy and WinoGrande's validation sets; accuracies around theirs */
static const int MC_ITEMS[MC_T] = { 10042, 1838, 2376, 1267 };
static const double MC_BASE[MC_T] = { 0.30, 0.62, 0.44, 0.51 };

typedef struct mc_out { int reps, any_blocked, any_paired, hit_blocked, hit_paired; double df; } mc_out;

/* reps tables of K schedules × n seeds × MC_T tasks: acc = base_t + effect + seed luck (sd seed_sd, shared by
 * every schedule of the seed on that task) + run noise (sd sd), rounded to a whole number of items; cells missing
 * with probability miss (never the baseline's). effect: schedule target gains eff on task 0. Each metric's family
 * is (K − 1) × MC_T, as the leaderboard's. Counts tables with any mark, and marks ▲ of the target on task 0, by the
 * blocked model (the columns now) and by the per-schedule paired t-test over common seeds (the columns before). */
static mc_out monte_carlo(unsigned long long seed, int reps, int K, int n, double sd, double seed_sd, double miss,
                          int target, double eff) {
    rng g = { seed, 0, 0 };
    mc_out o = {0};
    o.reps = reps;
    int m = (K - 1) * MC_T;
    ranking_obs *obs = malloc((size_t)K * n * sizeof *obs);
    double *y = malloc((size_t)K * n * sizeof *y), *beta = malloc((size_t)n * sizeof *beta);
    double *pp = malloc((size_t)m * sizeof *pp), *adj = malloc((size_t)m * sizeof *adj), *d = malloc((size_t)n * sizeof *d);
    leaderboard_zs_cmp *c = malloc((size_t)MC_T * K * sizeof *c), **fam = malloc((size_t)m * sizeof *fam);
    int *pcell = malloc((size_t)m * sizeof *pcell), round_items = !getenv("MCROUND") || atoi(getenv("MCROUND"));
    double *pmean = malloc((size_t)m * sizeof *pmean);
    if (!obs || !y || !beta || !pp || !adj || !d || !c || !fam || !pcell || !pmean) HFAIL("no memory");
    for (int r = 0; r < reps; r++) {
        int nf = 0, np = 0;
        for (int t = 0; t < MC_T; t++) {
            for (int j = 0; j < n; j++) beta[j] = seed_sd * gauss(&g);
            int no = 0;
            for (int i = 0; i < K; i++)
                for (int j = 0; j < n; j++) {
                    double v = MC_BASE[t] + (i == target && t == 0 ? eff : 0) + beta[j] + sd * gauss(&g);
                    if (round_items) v = round(v * MC_ITEMS[t]) / MC_ITEMS[t];
                    int gone = i > 0 && unif(&g) < miss;
                    y[i * n + j] = gone ? NAN : v;
                    if (!gone) obs[no++] = (ranking_obs){ i, j, v, NULL, 0, 0 };
                }
            leaderboard_zs_cmp *ct = c + (size_t)t * K;
            if (leaderboard_zero_shot_compare(obs, no, K, 0, ct) != 0) HFAIL("compare failed");
            for (int i = 1; i < K; i++) {
                if (ct[i].has) fam[nf++] = &ct[i];
                int nd = 0;   /* the paired test: schedule i − baseline over their common seeds */
                for (int j = 0; j < n; j++)
                    if (!isnan(y[i * n + j])) d[nd++] = y[i * n + j] - y[j];
                stats_paired sp;
                stats_paired_test(d, nd, &sp);
                pcell[np] = t * K + i;
                pmean[np] = sp.mean;
                pp[np++] = sp.p;
            }
            if (t == 0) o.df += ct[target >= 1 ? target : 1].df;
        }
        if (leaderboard_zero_shot_holm(fam, nf, m) < 0) HFAIL("holm failed");
        stats_holm(pp, np, m, adj);
        int anyb = 0, anyp = 0;
        for (int k = 0; k < nf; k++) anyb |= fam[k]->significant;
        for (int k = 0; k < np; k++) {
            int sig = isfinite(adj[k]) && adj[k] < RANKING_ALPHA;
            anyp |= sig;
            o.hit_paired += sig && pcell[k] == target && pmean[k] > 0;   /* task 0, the target, marked ▲ */
        }
        o.any_blocked += anyb;
        o.any_paired += anyp;
        if (target >= 1) o.hit_blocked += c[target].significant && c[target].mean > 0;
    }
    o.df /= reps;
    free(obs); free(y); free(beta); free(pp); free(adj); free(d); free(c); free(fam); free(pcell); free(pmean);
    return o;
}

/* Monte Carlo error: a rate ≤ alpha passes while the estimate is below alpha + 3 standard errors */
static double mc_bound(double alpha, int reps) { return alpha + 3 * sqrt(alpha * (1 - alpha) / reps); }
static int mc_reps(int dflt) { return getenv("MCREPS") ? atoi(getenv("MCREPS")) : dflt; }
static unsigned long long mc_seed(unsigned long long dflt) { return getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) : dflt; }

TEST(mc_null_family_wise_error_56x3x4) {
    /* 56 schedules × 3 seeds × 4 tasks, no effect anywhere, acc sd 0.005 and seed sd 0.005: a mark anywhere in the
     * acc table (Holm over 55 × 4 = 220) in ≤ 5% of tables */
    mc_out o = monte_carlo(mc_seed(1), mc_reps(2000), 56, 3, 0.005, 0.005, 0, -1, 0);
    printf("56x3x4 null, %d tables: any mark, blocked %.4f (df %.0f), paired %.4f (bound %.4f)\n", o.reps,
           (double)o.any_blocked / o.reps, o.df, (double)o.any_paired / o.reps, mc_bound(0.05, o.reps));
    ASSERT_NEAR(110, o.df, 0);   /* (56 − 1)(3 − 1) */
    ASSERT_LT((double)o.any_blocked / o.reps, mc_bound(0.05, o.reps));
    ASSERT_TRUE(o.any_blocked > 0);   /* not blind: under the null it errs at a rate near, not far below, 5% */
}

TEST(mc_null_family_wise_error_with_missing_cells) {
    /* 12 schedules × 4 seeds × 4 tasks with a fifth of the non-baseline cells missing: the fit's df and
     * variances carry the imbalance */
    mc_out o = monte_carlo(mc_seed(2), mc_reps(2000), 12, 4, 0.005, 0.005, 0.2, -1, 0);
    printf("12x4x4 null, 20%% of cells missing, %d tables: any mark, blocked %.4f (mean df %.1f), paired %.4f (bound %.4f)\n",
           o.reps, (double)o.any_blocked / o.reps, o.df, (double)o.any_paired / o.reps, mc_bound(0.05, o.reps));
    ASSERT_LT((double)o.any_blocked / o.reps, mc_bound(0.05, o.reps));
    ASSERT_TRUE(o.any_blocked > 0);
}

TEST(mc_power_one_schedule_plus_0_02) {
    /* the same table with one schedule +0.02 on one task (HellaSwag-sized): marked ▲ by the blocked model in most
     * tables; the paired test (2 df, Holm over 220: |t| > 66) almost never */
    mc_out o = monte_carlo(mc_seed(3), mc_reps(2000), 56, 3, 0.005, 0.005, 0, 17, 0.02);
    printf("56x3x4, schedule 17 +0.02 on task 0, %d tables: marked ▲, blocked %.4f, paired %.4f; critical |t| blocked %.2f, paired %.1f\n",
           o.reps, (double)o.hit_blocked / o.reps, (double)o.hit_paired / o.reps,
           stats_t_quantile(1 - 0.05 / (2.0 * 220), 110), stats_t_quantile(1 - 0.05 / (2.0 * 220), 2));
    ASSERT_TRUE((double)o.hit_blocked / o.reps >= 0.75);
    ASSERT_TRUE((double)o.hit_paired / o.reps <= 0.02);
    ASSERT_TRUE(o.hit_blocked > 20 * (o.hit_paired + 1));
}
