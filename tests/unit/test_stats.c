/* test_stats.c — orchestrator/stats.c against values worked out by hand: Student t tails in closed form
 * (df 1: p = 1 − (2/π)·atan t; df 2: p = 1 − t/√(2 + t²)), tabulated quantiles, a paired test computed step by
 * step, and Holm's order, monotonicity, ties and family size.
 * timeout: 30
 */
#include "harness.h"
#include "stats.h"

TEST(t_tail_closed_forms) {
    /* df = 1 (Cauchy): P(|T| ≥ 1) = 1 − (2/π)·atan(1) = 0.5 */
    ASSERT_NEAR(0.5, stats_t_p2(1.0, 1), 1e-12);
    ASSERT_NEAR(1 - 2 / M_PI * atan(3.0), stats_t_p2(3.0, 1), 1e-12);
    ASSERT_NEAR(1 - 2 / M_PI * atan(3.0), stats_t_p2(-3.0, 1), 1e-12);
    /* df = 2: P(|T| ≥ 2) = 1 − 2/√6 = 0.18350341907 */
    ASSERT_NEAR(0.18350341907, stats_t_p2(2.0, 2), 1e-10);
    ASSERT_NEAR(1 - 0.5 / sqrt(2.25), stats_t_p2(0.5, 2), 1e-12);
    ASSERT_NEAR(1.0, stats_t_p2(0.0, 7), 1e-15);
    /* a large df approaches the normal: P(|Z| ≥ 1.959963985) = 0.05 */
    ASSERT_NEAR(0.05, stats_t_p2(1.959963985, 1e7), 1e-6);
    ASSERT_TRUE(isnan(stats_t_p2(1.0, 0)));
    ASSERT_TRUE(isnan(stats_t_p2(NAN, 3)));
}

TEST(t_quantiles_match_the_table) {
    /* t_{0.975, df} from the usual printed table */
    static const struct { int df; double q; } tab[] = { {1, 12.7062047}, {2, 4.3026527}, {3, 3.1824463}, {4, 2.7764451},
                                                       {5, 2.5705818}, {10, 2.2281389}, {30, 2.0422725}, {120, 1.9799304} };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) ASSERT_NEAR(tab[i].q, stats_t_quantile(0.975, tab[i].df), 2e-7);
    /* df = 1 closed form: q = tan(π(p − 1/2)) */
    ASSERT_NEAR(tan(M_PI * 0.4), stats_t_quantile(0.9, 1), 1e-9);
    ASSERT_NEAR(-tan(M_PI * 0.4), stats_t_quantile(0.1, 1), 1e-9);
    /* df = 2 closed form: q = (2p − 1)·√(2 / (4p(1 − p))) */
    double p = 0.95;
    ASSERT_NEAR((2 * p - 1) * sqrt(2 / (4 * p * (1 - p))), stats_t_quantile(p, 2), 1e-9);
    ASSERT_NEAR(0.0, stats_t_quantile(0.5, 4), 0);
    ASSERT_TRUE(isnan(stats_t_quantile(1.0, 4)));
    ASSERT_TRUE(isnan(stats_t_quantile(0.975, 0)));
}

TEST(paired_test_by_hand) {
    /* d = 0.01, 0.02, 0.03: mean 0.02, sd 0.01, t = 0.02/(0.01/√3) = 2√3, df 2:
     * p = 1 − 2√3/√(2 + 12) = 0.0741799 ; CI = 0.02 ± 4.3026527·0.01/√3 */
    double d[3] = { 0.01, 0.02, 0.03 };
    stats_paired r;
    stats_paired_test(d, 3, &r);
    ASSERT_EQ_INT(3, r.n);
    ASSERT_NEAR(0.02, r.mean, 1e-15);
    ASSERT_NEAR(0.01, r.sd, 1e-15);
    ASSERT_NEAR(2 * sqrt(3.0), r.t, 1e-12);
    ASSERT_NEAR(1 - 2 * sqrt(3.0) / sqrt(14.0), r.p, 1e-10);
    ASSERT_NEAR(0.0741799, r.p, 1e-7);
    ASSERT_NEAR(0.02 - 4.3026527 * 0.01 / sqrt(3.0), r.ci_low, 1e-8);
    ASSERT_NEAR(0.02 + 4.3026527 * 0.01 / sqrt(3.0), r.ci_high, 1e-8);
    /* negative differences: same p, mirrored t */
    double e[3] = { -0.01, -0.02, -0.03 };
    stats_paired q;
    stats_paired_test(e, 3, &q);
    ASSERT_NEAR(r.p, q.p, 1e-15);
    ASSERT_NEAR(-r.t, q.t, 1e-12);
}

TEST(paired_test_degenerate) {
    stats_paired r;
    double one = 0.5;
    stats_paired_test(&one, 1, &r);   /* one pair: a mean, no test */
    ASSERT_NEAR(0.5, r.mean, 0);
    ASSERT_TRUE(isnan(r.sd) && isnan(r.p) && isnan(r.ci_low));
    stats_paired_test(NULL, 0, &r);
    ASSERT_TRUE(isnan(r.mean) && isnan(r.p));
    double same[3] = { -0.2, -0.2, -0.2 };   /* no spread, nonzero: as significant as it gets */
    stats_paired_test(same, 3, &r);
    ASSERT_NEAR(0.0, r.p, 1e-12);
    double zero[2] = { 0, 0 };
    stats_paired_test(zero, 2, &r);
    ASSERT_NEAR(1.0, r.p, 0);
}

TEST(holm_order_and_monotone) {
    /* sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → raised to 0.06 (monotone) */
    double p[4] = { 0.01, 0.04, 0.03, 0.005 }, a[4];
    ASSERT_EQ_INT(4, stats_holm(p, 4, 4, a));
    ASSERT_NEAR(0.03, a[0], 1e-15);
    ASSERT_NEAR(0.06, a[1], 1e-15);
    ASSERT_NEAR(0.06, a[2], 1e-15);
    ASSERT_NEAR(0.02, a[3], 1e-15);
    /* capped at 1 */
    double q[2] = { 0.6, 0.7 }, b[2];
    stats_holm(q, 2, 2, b);
    ASSERT_NEAR(1.0, b[0], 0);
    ASSERT_NEAR(1.0, b[1], 0);
}

TEST(holm_ties_missing_and_family_size) {
    /* ties: 0.02·3 = 0.06, 0.02·2 = 0.04 → 0.06, 0.5·1 = 0.5 */
    double p[3] = { 0.02, 0.5, 0.02 }, a[3];
    stats_holm(p, 3, 3, a);
    ASSERT_NEAR(0.06, a[0], 1e-15);
    ASSERT_NEAR(0.5, a[1], 1e-15);
    ASSERT_NEAR(0.06, a[2], 1e-15);
    /* a comparison with no p yet is NAN and still counts in the family of 5: 0.01·5, 0.02·4 */
    double q[3] = { 0.02, NAN, 0.01 }, b[3];
    ASSERT_EQ_INT(5, stats_holm(q, 3, 5, b));
    ASSERT_NEAR(0.08, b[0], 1e-15);
    ASSERT_TRUE(isnan(b[1]));
    ASSERT_NEAR(0.05, b[2], 1e-15);
    /* m smaller than the number of p values: the count of p values wins */
    ASSERT_EQ_INT(2, stats_holm(p, 2, 0, a));
    /* 55 comparisons, no effect: an unadjusted p of 0.01 is not significant after Holm */
    double r[55], c[55];
    for (int i = 0; i < 55; i++) r[i] = 0.01 + i * 0.017;
    stats_holm(r, 55, 55, c);
    ASSERT_NEAR(0.55, c[0], 1e-12);
    for (int i = 1; i < 55; i++) ASSERT_TRUE(c[i] >= c[i - 1]);
}

/* the studentized range against SciPy 1.10's scipy.stats.studentized_range (an independent implementation),
 * values printed by python3 -c 'from scipy.stats import studentized_range as s; print(s.ppf(0.95, k, df))' */
TEST(studentized_range_matches_scipy) {
    static const struct { int k; double df, q; } tab[] = {
        {2, 5, 3.63535169514679}, {3, 10, 3.876776750013158}, {10, 20, 5.007882667595452},
        {56, 110, 5.8961546062978}, {6, 5, 6.032902708726493}, {300, 600, 6.776384783050364} };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        double q = stats_range_quantile(0.05, tab[i].k, tab[i].df);
        printf("q(0.95; k=%d, df=%g): %.7f, SciPy %.7f\n", tab[i].k, tab[i].df, q, tab[i].q);
        ASSERT_NEAR(tab[i].q, q, 2e-4 * tab[i].q);
    }
    ASSERT_NEAR(0.8849069920361906, stats_range_cdf(3.5, 4, 12), 2e-6);
    ASSERT_NEAR(1 - 0.12544669577733902, stats_range_cdf(4.0, 8, 30), 2e-6);
    /* k = 2 and no divisor: the range of two normals is √2·|Z|, so q = √2 · z_{0.975} */
    ASSERT_NEAR(M_SQRT2 * 1.959963984540054, stats_range_quantile(0.05, 2, INFINITY), 1e-5);
    /* the cache answers the same */
    ASSERT_NEAR(stats_range_quantile(0.05, 10, 20), stats_range_quantile(0.05, 10, 20), 0);
    ASSERT_TRUE(isnan(stats_range_quantile(0.05, 1, 10)));
}

TEST(chi2_normal_and_bartlett_match_scipy) {
    ASSERT_NEAR(0.0575584519726364, stats_chi2_sf(7.5, 3), 1e-12);
    ASSERT_NEAR(0.44385924751421246, stats_chi2_sf(0.3, 0.7), 1e-12);
    ASSERT_NEAR(0.1335748340856504, stats_chi2_sf(50, 40), 1e-12);
    ASSERT_NEAR(1.0, stats_chi2_sf(0, 4), 0);
    ASSERT_NEAR(0.8416212335729143, stats_norm_quantile(0.8), 1e-9);
    ASSERT_NEAR(0.006209665325776132, stats_norm_cdf(-2.5), 1e-15);
    /* scipy.stats.bartlett([1,2,3,4,5], [2,4,6,8,10.5], [1,1.1,1.3,1.2,1.0]) = (19.01845810653548, 7.4164196e-05) */
    double g[3][5] = { {1, 2, 3, 4, 5}, {2, 4, 6, 8, 10.5}, {1, 1.1, 1.3, 1.2, 1.0} }, ms[3], df[3] = { 4, 4, 4 }, stat;
    for (int i = 0; i < 3; i++) {
        double m = 0, q = 0;
        for (int j = 0; j < 5; j++) m += g[i][j] / 5;
        for (int j = 0; j < 5; j++) q += (g[i][j] - m) * (g[i][j] - m);
        ms[i] = q / 4;
    }
    int used;
    double p = stats_bartlett(ms, df, 3, &stat, &used);
    printf("Bartlett: statistic %.10f p %.6g (SciPy 19.01845810653548, 7.416419634655213e-05)\n", stat, p);
    ASSERT_EQ_INT(3, used);
    ASSERT_NEAR(19.01845810653548, stat, 1e-9);
    ASSERT_NEAR(7.416419634655213e-05, p, 1e-12);
    double one[1] = { 1 }, dfo[1] = { 3 };
    ASSERT_TRUE(isnan(stats_bartlett(one, dfo, 1, &stat, &used)));
}

TEST(power_approximation_tracks_the_noncentral_t) {
    /* large df: the normal limit c + z_0.8 */
    ASSERT_NEAR(1.959964 + 0.841621, stats_t_power_ncp(1.959964, 1e9, 0.8), 1e-5);
    /* the approximation at df 10 against a simulated noncentral t: P(|T'| > c) at the returned ncp ≈ 0.8 */
    double c = stats_t_quantile(0.975, 10), ncp = stats_t_power_ncp(c, 10, 0.8);
    unsigned long long s = 12345;
    int hit = 0, N = 40000;
    for (int r = 0; r < N; r++) {
        double z[12];
        for (int k = 0; k < 12; k += 2) {   /* Box–Muller from a 64-bit LCG */
            s = s * 6364136223846793005ULL + 1442695040888963407ULL; double u1 = ((s >> 11) + 0.5) / 9007199254740992.0;
            s = s * 6364136223846793005ULL + 1442695040888963407ULL; double u2 = ((s >> 11) + 0.5) / 9007199254740992.0;
            z[k] = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
            z[k + 1] = sqrt(-2 * log(u1)) * sin(2 * M_PI * u2);
        }
        double chi = 0;
        for (int k = 1; k <= 10; k++) chi += z[k] * z[k];
        double t = (z[0] + ncp) / sqrt(chi / 10);
        if (fabs(t) > c) hit++;
    }
    printf("power at ncp %.4f (c %.4f, df 10): %.4f by simulation\n", ncp, c, (double)hit / N);
    ASSERT_NEAR(0.8, (double)hit / N, 0.015);
}

/* values from SciPy 1.10 (scipy.special.digamma/polygamma; the prior by brentq on polygamma(1, x)) */
TEST(polygamma_matches_scipy) {
    ASSERT_NEAR(-3.502524222200133, stats_digamma(0.3), 1e-11);
    ASSERT_NEAR(12.245364546107734, stats_trigamma(0.3), 1e-10);
    ASSERT_NEAR(1.9467574842460866, stats_digamma(7.5), 1e-12);
    ASSERT_NEAR(0.1426158966967038, stats_trigamma(7.5), 1e-12);
    ASSERT_NEAR(7.5, stats_trigamma_inverse(0.1426158966967038), 1e-8);
    ASSERT_NEAR(0.3, stats_trigamma_inverse(12.245364546107734), 1e-9);
    ASSERT_TRUE(isnan(stats_digamma(0)));
}

TEST(eb_prior_matches_scipy) {
    const double s2[] = {0.8, 1.3, 9.9, 0.1, 1.1, 25.0, 0.7, 1.9}, d[] = {2, 2, 2, 2, 1.5, 2, 3, 2.5};
    double d0, s02;
    ASSERT_EQ_INT(8, stats_eb_prior(s2, d, 8, &d0, &s02));
    ASSERT_NEAR(2.3961504738969035, d0, 1e-7);
    ASSERT_NEAR(1.7234830036397162, s02, 1e-8);
}

TEST(eb_prior_without_excess_spread_is_infinite) {
    /* identical variances spread less than sampling alone explains: d0 = ∞, s0² = exp(mean e), e = log s² − ψ(1) */
    const double s2[] = {1.0, 1.0, 1.0, 1.0}, d[] = {2, 2, 2, 2};
    double d0, s02;
    ASSERT_EQ_INT(4, stats_eb_prior(s2, d, 4, &d0, &s02));
    ASSERT_TRUE(isinf(d0));
    ASSERT_NEAR(1.7810724179901979, s02, 1e-11);   /* exp(γ) */
}
