/* test_surrogate.c — orchestrator/surrogate.c: the GP posterior against a dense computation written here (Gaussian
 * elimination, not Cholesky), interpolation of noiseless points, proposals (valid, distinct, never trained,
 * deterministic for a seed; the whole set and the sampled one), a small space exhausted, the outlook, the initial
 * design (baseline first, more spread than random designs), and on simulated L=12 landscapes (tests/search_sim.h)
 * the search finding the true best more often than uniform random search at the same budget.
 * timeout: 240
 */
#include "harness.h"
#include "search_sim.h"
#include "surrogate.h"

#include <stdlib.h>
#include <string.h>

static void rules12(schedule_rules *r) {
    schedule_rules_default(r);
    ASSERT_EQ_INT(0, schedule_rules_resolve(r, NULL, NULL, 0));
}
static void rules36(schedule_rules *r) {
    schedule_rules_default(r);
    r->L = 36; r->d_model = 1280; r->h_base = 0; r->max_block = 0;
    ASSERT_EQ_INT(0, schedule_rules_resolve(r, NULL, NULL, 0));
}
/* a smooth synthetic value of a schedule: mean log head dim over the first half */
static double smooth_y(const schedule_rules *r, const int *h) {
    double s = 0;
    for (int l = 0; l < r->L / 2; l++) s += log2((double)r->d_model / h[l]);
    return 3.3 + 0.01 * s / (r->L / 2);
}
static double fdist(const schedule_rules *r, const int *a, const int *b) {
    double xa[SCHEDULE_MAX_L], xb[SCHEDULE_MAX_L], s = 0;
    int d = surrogate_features(r, 0, a, xa);
    surrogate_features(r, 0, b, xb);
    for (int i = 0; i < d; i++) s += (xa[i] - xb[i]) * (xa[i] - xb[i]);
    return sqrt(s);
}
static double min_pair(const schedule_rules *r, const int *h, int m) {
    double best = INFINITY;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < i; j++) best = fmin(best, fdist(r, h + i * r->L, h + j * r->L));
    return best;
}
/* x ← A⁻¹ b by Gaussian elimination with partial pivoting (A n × n, destroyed) */
static void gauss_solve(double *A, double *b, int n) {
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++) if (fabs(A[i * n + c]) > fabs(A[p * n + c])) p = i;
        for (int k = 0; k < n; k++) { double t = A[c * n + k]; A[c * n + k] = A[p * n + k]; A[p * n + k] = t; }
        double t = b[c]; b[c] = b[p]; b[p] = t;
        for (int i = c + 1; i < n; i++) {
            double f = A[i * n + c] / A[c * n + c];
            for (int k = c; k < n; k++) A[i * n + k] -= f * A[c * n + k];
            b[i] -= f * b[c];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++) s -= A[i * n + k] * b[k];
        b[i] = s / A[i * n + i];
    }
}
static double matern(double r) { double s = sqrt(5.0) * r; return (1 + s + s * s / 3) * exp(-s); }

TEST(posterior_equals_a_dense_computation) {
    schedule_rules r;
    rules12(&r);
    enum { N = 6, T = 4 };
    int h[N * 12], q[T * 12];
    double y[N], se[N];
    for (int i = 0; i < N; i++) {
        ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)(i * 9), h + i * 12));
        y[i] = smooth_y(&r, h + i * 12) + 0.002 * ((i * 7) % 5 - 2);
        se[i] = 0.001 * (1 + i % 3);
    }
    for (int t = 0; t < T; t++) ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)(4 + t * 11), q + t * 12));
    surrogate_model m;
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, h, y, se, N, NULL));
    ASSERT_TRUE(m.sf2 > 0 && m.ell > 0 && isfinite(m.loglik));
    double mean[T], var[T];
    ASSERT_EQ_INT(0, surrogate_predict(&m, q, T, mean, var));
    /* dense: C = σ² K + diag(σ_g² + se²) + jitter; μ = 1ᵀC⁻¹y / 1ᵀC⁻¹1; mean = μ + k*ᵀ C⁻¹ (y − μ);
     * var = σ² + σ_g² − k*ᵀ C⁻¹ k* */
    double C[N * N], A[N * N], b[N], ones[N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            C[i * N + j] = m.sf2 * matern(fdist(&r, h + i * 12, h + j * 12) / m.ell) +
                           (i == j ? m.sg2 + se[i] * se[i] + SURROGATE_JITTER * m.sf2 : 0);
    memcpy(A, C, sizeof A);
    for (int i = 0; i < N; i++) ones[i] = 1;
    gauss_solve(A, ones, N);
    memcpy(A, C, sizeof A);
    memcpy(b, y, sizeof b);
    gauss_solve(A, b, N);
    double s11 = 0, s1y = 0;
    for (int i = 0; i < N; i++) { s11 += ones[i]; s1y += b[i]; }
    double mu = s1y / s11;
    ASSERT_NEAR(mu, m.mu, 1e-9);
    double res[N];
    for (int i = 0; i < N; i++) res[i] = y[i] - mu;
    memcpy(A, C, sizeof A);
    gauss_solve(A, res, N);
    for (int t = 0; t < T; t++) {
        double k[N], kk[N], mt = mu, vt = m.sf2 + m.sg2;   /* the queries are none of the trained: no nugget term */
        for (int i = 0; i < N; i++) k[i] = kk[i] = m.sf2 * matern(fdist(&r, h + i * 12, q + t * 12) / m.ell);
        for (int i = 0; i < N; i++) mt += k[i] * res[i];
        memcpy(A, C, sizeof A);
        gauss_solve(A, kk, N);
        for (int i = 0; i < N; i++) vt -= k[i] * kk[i];
        ASSERT_NEAR(mt, mean[t], 1e-9);
        ASSERT_NEAR(vt, var[t], 1e-9);
    }
    surrogate_release(&m);
    surrogate_release(&m);   /* a released model releases again as a no-op */
}

/* Leave-one-out (surrogate_loo, closed form from the Cholesky factor) against refitting by hand: for each i, the
 * GP with the same hyperparameters and constant mean on the other n − 1 points predicts observation i with mean
 * μ + k_iᵀ C₋ᵢ⁻¹ (y₋ᵢ − μ) and variance C_ii − k_iᵀ C₋ᵢ⁻¹ k_i (Gaussian elimination here). */
TEST(leave_one_out_equals_refitting_without_each_point) {
    schedule_rules r;
    rules12(&r);
    enum { N = 7 };
    int h[N * 12];
    double y[N], se[N], lm[N], ls[N];
    for (int i = 0; i < N; i++) {
        ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)(i * 7 + 1), h + i * 12));
        y[i] = smooth_y(&r, h + i * 12) + 0.002 * ((i * 5) % 3 - 1);
        se[i] = 0.001 * (1 + i % 2);
    }
    surrogate_model m;
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, h, y, se, N, NULL));
    ASSERT_EQ_INT(0, surrogate_loo(&m, lm, ls));
    double C[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            C[i * N + j] = m.sf2 * matern(fdist(&r, h + i * 12, h + j * 12) / m.ell) +
                           (i == j ? m.sg2 + se[i] * se[i] + SURROGATE_JITTER * m.sf2 : 0);
    for (int i = 0; i < N; i++) {
        enum { M = N - 1 };
        double A[M * M], b[M], k[M], kk[M];
        int ix[M], c = 0;
        for (int j = 0; j < N; j++) if (j != i) ix[c++] = j;
        for (int a = 0; a < M; a++) {
            for (int bb = 0; bb < M; bb++) A[a * M + bb] = C[ix[a] * N + ix[bb]];
            b[a] = y[ix[a]] - m.mu;
            k[a] = kk[a] = C[i * N + ix[a]];
        }
        double A2[M * M];
        memcpy(A2, A, sizeof A);
        gauss_solve(A, b, M);
        gauss_solve(A2, kk, M);
        double mean = m.mu, var = C[i * N + i];
        for (int a = 0; a < M; a++) { mean += k[a] * b[a]; var -= k[a] * kk[a]; }
        printf("loo %d: closed form %.9f ± %.9f, refit %.9f ± %.9f\n", i, lm[i], ls[i], mean, sqrt(var));
        ASSERT_NEAR(mean, lm[i], 1e-9);
        ASSERT_NEAR(sqrt(var), ls[i], 1e-9);
    }
    surrogate_release(&m);
}

TEST(interpolates_noiseless_points) {
    schedule_rules r;
    rules12(&r);
    enum { N = 10 };
    int h[N * 12];
    double y[N], se[N] = { 0 }, mean[N], var[N];
    for (int i = 0; i < N; i++) {
        ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)(i * 5), h + i * 12));
        y[i] = smooth_y(&r, h + i * 12);
    }
    surrogate_model m;
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, h, y, se, N, NULL));
    ASSERT_EQ_INT(0, surrogate_predict(&m, h, N, mean, var));
    for (int i = 0; i < N; i++) {
        ASSERT_NEAR(y[i], mean[i], 1e-6);
        ASSERT_TRUE(var[i] < 1e-6 * m.sf2 + 1e-15);
    }
    surrogate_release(&m);
}

TEST(bad_inputs_are_refused) {
    schedule_rules r;
    rules12(&r);
    int h[12];
    double y = 3.3, se = -1;
    surrogate_model m;
    ASSERT_EQ_INT(0, schedule_unrank(&r, 0, h));
    ASSERT_EQ_INT(SURROGATE_EINVAL, surrogate_fit(&m, &r, h, &y, &se, 1, NULL));
    se = NAN;
    ASSERT_EQ_INT(SURROGATE_EINVAL, surrogate_fit(&m, &r, h, &y, &se, 1, NULL));
    se = 0.001;
    ASSERT_EQ_INT(SURROGATE_EINVAL, surrogate_fit(&m, &r, h, &y, &se, 0, NULL));
    surrogate_opts o = { .features = 9 };
    ASSERT_EQ_INT(SURROGATE_EINVAL, surrogate_fit(&m, &r, h, &y, &se, 1, &o));
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, h, &y, &se, 1, NULL));   /* one observation is a model */
    surrogate_release(&m);
}

/* fits on the initial design of M at L=36 with smooth_y + a little noise and proposes K (opts may sample) */
static int propose36(const surrogate_opts *o, int M, int K, int *train, int *out, surrogate_outlook *look, int *best) {
    schedule_rules r;
    rules36(&r);
    double y[64], se[64];
    ASSERT_EQ_INT(M, surrogate_initial_design(&r, M, o, train));
    for (int i = 0; i < M; i++) { y[i] = smooth_y(&r, train + i * 36) + 0.001 * sin(i); se[i] = 0.0012; }
    surrogate_model m;
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, train, y, se, M, o));
    int got = surrogate_propose(&m, K, o, out, look, best);
    surrogate_release(&m);
    return got;
}
static void check_proposals(const int *train, int M, const int *out, int K) {
    schedule_rules r;
    rules36(&r);
    for (int k = 0; k < K; k++) {
        ASSERT_EQ_INT(0, schedule_validate(&r, out + k * 36, 36, NULL));
        for (int j = 0; j < k; j++) ASSERT_TRUE(memcmp(out + k * 36, out + j * 36, 36 * sizeof(int)) != 0);
        for (int i = 0; i < M; i++) ASSERT_TRUE(memcmp(out + k * 36, train + i * 36, 36 * sizeof(int)) != 0);
    }
}

TEST(proposals_are_valid_distinct_untrained_and_deterministic) {
    enum { M = 20, K = 12 };
    int train[M * 36], out[K * 36], out2[K * 36], best[36];
    surrogate_opts o = { .seed = 7 };
    surrogate_outlook lk;
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out, &lk, best));
    check_proposals(train, M, out, K);
    ASSERT_EQ_INT(1, lk.exhaustive);
    ASSERT_EQ_INT(3610 - M, lk.ncand);
    ASSERT_TRUE(lk.p_beat >= 0 && lk.p_beat <= 1);
    ASSERT_TRUE(isfinite(lk.best_mean) && lk.best_sd >= 0);
    check_proposals(train, M, best, 1);   /* the predicted best untrained is untrained */
    ASSERT_TRUE(lk.best_trained >= 0 && lk.best_trained < M && isfinite(lk.best_trained_mean) && lk.best_trained_sd >= 0);
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out2, NULL, NULL));
    ASSERT_TRUE(memcmp(out, out2, sizeof out) == 0);
    /* a δ beyond every gap: no draw beats the best trained by that much */
    o.delta = 1;
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out2, &lk, NULL));
    ASSERT_NEAR(0, lk.p_beat, 0);
}

TEST(proposals_from_a_sampled_candidate_set) {
    enum { M = 15, K = 8 };
    int train[M * 36], out[K * 36], out2[K * 36];
    surrogate_opts o = { .seed = 3, .cap = 400, .subset = 50, .draws = 40 };
    surrogate_outlook lk;
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out, &lk, NULL));
    check_proposals(train, M, out, K);
    ASSERT_EQ_INT(0, lk.exhaustive);
    ASSERT_TRUE(lk.ncand <= 400 && lk.ncand >= 400 - M);
    ASSERT_EQ_INT(50, lk.subset);
    ASSERT_EQ_INT(40, lk.draws);
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out2, NULL, NULL));
    ASSERT_TRUE(memcmp(out, out2, sizeof out) == 0);
}

TEST(a_small_space_is_exhausted_not_repeated) {
    schedule_rules r;
    rules12(&r);
    schedule_count_t cnt;
    ASSERT_EQ_INT(0, schedule_count(&r, &cnt));
    int n = (int)cnt - 3, *h = malloc((size_t)n * 12 * sizeof *h), out[10 * 12];
    double *y = malloc((size_t)n * sizeof *y), *se = malloc((size_t)n * sizeof *se);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ_INT(0, schedule_unrank(&r, (schedule_count_t)(i + 2), h + i * 12));   /* ranks 0, 1 and the last untrained */
        y[i] = smooth_y(&r, h + i * 12);
        se[i] = 0.001;
    }
    surrogate_model m;
    ASSERT_EQ_INT(0, surrogate_fit(&m, &r, h, y, se, n, NULL));
    double mean[4], var[4];
    ASSERT_EQ_INT(0, surrogate_predict(&m, h, 4, mean, var));   /* what a caller shows for trained schedules */
    for (int i = 0; i < 4; i++) ASSERT_TRUE(isfinite(mean[i]) && var[i] >= 0 && var[i] < m.sf2);
    ASSERT_EQ_INT(3, surrogate_propose(&m, 10, NULL, out, NULL, NULL));
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        ASSERT_EQ_INT(0, schedule_validate(&r, out + k * 12, 12, NULL));
        for (int i = 0; i < n; i++) ASSERT_TRUE(memcmp(out + k * 12, h + i * 12, sizeof(int) * 12) != 0);
        seen |= 1 << k;
    }
    ASSERT_EQ_INT(7, seen);
    surrogate_release(&m);
    free(h); free(y); free(se);
}

typedef struct { int *h, n; } design;
static int design_add(const int *heads, int L, void *ctx) {
    design *d = ctx;
    memcpy(d->h + d->n++ * L, heads, (size_t)L * sizeof *heads);
    return 0;
}

TEST(initial_design_starts_with_the_baseline_and_spreads_more_than_random) {
    schedule_rules r;
    rules36(&r);
    enum { M = 20, RAND = 20 };
    int h[M * 36];
    ASSERT_EQ_INT(M, surrogate_initial_design(&r, M, NULL, h));
    ASSERT_TRUE(schedule_is_uniform(h, 36));
    for (int i = 0; i < M; i++) {
        ASSERT_EQ_INT(0, schedule_validate(&r, h + i * 36, 36, NULL));
        for (int j = 0; j < i; j++) ASSERT_TRUE(memcmp(h + i * 36, h + j * 36, sizeof(int) * 36) != 0);
    }
    double dm = min_pair(&r, h, M), rnd = 0;
    for (int s = 0; s < RAND; s++) {
        int rh[M * 36];
        design d = { rh, 0 };
        ASSERT_EQ_INT(0, schedule_sample(&r, M, 100 + s, design_add, &d));
        rnd += min_pair(&r, rh, M) / RAND;
    }
    printf("maximin design: min pairwise distance %.3f; random designs: %.3f on average\n", dm, rnd);
    ASSERT_LT(rnd * 1.5, dm);
    /* from a sample of the set (cap) the baseline still comes first */
    surrogate_opts o = { .cap = 200, .seed = 5 };
    ASSERT_EQ_INT(M, surrogate_initial_design(&r, M, &o, h));
    ASSERT_TRUE(schedule_is_uniform(h, 36));
    ASSERT_LT(rnd, min_pair(&r, h, M));
    /* more than the set holds: the whole set */
    schedule_rules r12;
    rules12(&r12);
    int *all = malloc(100 * 12 * sizeof *all);
    ASSERT_EQ_INT(53, surrogate_initial_design(&r12, 100, NULL, all));
    free(all);
}

TEST(finds_the_true_best_more_often_than_random_on_a_smooth_landscape) {
    /* L=12 (53 schedules), budget 16 (30%): the true best among the trained, and the chosen schedule's regret */
    schedule_rules r;
    rules12(&r);
    ss_space s;
    ASSERT_EQ_INT(0, ss_space_init(&s, &r));
    enum { REPS = 60 };
    int ck[1] = { 16 }, tr_s[16], tr_r[16], found_s = 0, found_r = 0;
    double reg_s = 0, reg_r = 0, *truth = malloc((size_t)s.n * sizeof *truth);
    for (int rep = 0; rep < REPS; rep++) {
        uint64_t seed = 4242 + rep;
        ss_landscape(&s, SS_SMOOTH, seed, truth);
        int best = 0;
        for (int i = 1; i < s.n; i++) if (truth[i] < truth[best]) best = i;
        ss_sweep w;
        ss_sweep_init(&w, &s, truth, seed);
        surrogate_opts o = { .seed = seed };
        int chosen;
        ASSERT_EQ_INT(0, ss_search_surrogate(&w, 3, 2, ck, 1, &o, &chosen, NULL, tr_s, NULL));
        int rnd = ss_search_random(&w, ck[0], seed * 7, tr_r);
        ASSERT_TRUE(rnd >= 0);
        for (int i = 0; i < ck[0]; i++) { found_s += tr_s[i] == best; found_r += tr_r[i] == best; }
        reg_s += truth[chosen] - truth[best];
        reg_r += truth[rnd] - truth[best];
    }
    printf("true best trained: surrogate %d/%d, random %d/%d; mean regret %.5f vs %.5f\n", found_s, REPS, found_r,
           REPS, reg_s / REPS, reg_r / REPS);
    ASSERT_TRUE(found_s > found_r);
    ASSERT_LT(reg_s, reg_r);
    free(truth);
    ss_space_free(&s);
}

/* opts.exclude: schedules in the sweep without a value are never proposed, like the trained ones. */
TEST(excluded_schedules_are_never_proposed) {
    enum { M = 20, K = 12 };
    int train[M * 36], out[K * 36], out2[K * 36];
    surrogate_opts o = { .seed = 7 };
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out, NULL, NULL));
    o.exclude = out;          /* exclude the first proposal run's schedules: the second proposes none of them */
    o.nexclude = K;
    ASSERT_EQ_INT(K, propose36(&o, M, K, train, out2, NULL, NULL));
    check_proposals(train, M, out2, K);
    for (int a = 0; a < K; a++)
        for (int b = 0; b < K; b++) ASSERT_TRUE(memcmp(out2 + a * 36, out + b * 36, 36 * sizeof(int)) != 0);
}

/* Numeric axes (the spec's "search.dims"): values are quantized (3 significant digits; integers) and their
 * coordinates round-trip; the initial design starts at the baseline's coordinates; a search over L=12 schedules × a
 * log-scale learning rate whose truth is a bowl in log lr (optimum 0.002) proposes valid, quantized, distinct points
 *  and converges on the optimum's lr. */
TEST(axes_quantize_and_the_search_finds_the_best_learning_rate) {
    surrogate_axis lr = { 1e-4, 1e-2, 1, 0 }, wu = { 0, 200, 0, 1 };
    ASSERT_NEAR(1e-4, surrogate_axis_value(&lr, 0), 1e-18);
    ASSERT_NEAR(1e-2, surrogate_axis_value(&lr, 1), 1e-15);
    ASSERT_NEAR(0.001, surrogate_axis_value(&lr, 0.5), 1e-15);          /* the geometric middle */
    ASSERT_NEAR(0.00123, surrogate_axis_value(&lr, surrogate_axis_unit(&lr, 0.0012345)), 1e-15);   /* 3 digits */
    ASSERT_NEAR(0.5, surrogate_axis_unit(&lr, 0.001), 1e-12);
    ASSERT_NEAR(1, surrogate_axis_unit(&lr, 5), 0);                      /* clamped */
    ASSERT_NEAR(37, surrogate_axis_value(&wu, 0.1826), 0);               /* 36.52 rounds to 37 */
    schedule_rules r;
    rules12(&r);
    int L = r.L, M = 8, N = 40;
    int heads[64 * 12];
    double u[64], y[64], se[64], base = surrogate_axis_unit(&lr, 0.0006);
    surrogate_opts o;
    memset(&o, 0, sizeof o);
    o.naxes = 1;
    o.axes = &lr;
    o.base_u = &base;
    o.out_u = u;
    o.seed = 3;
    ASSERT_EQ_INT(M, surrogate_initial_design(&r, M, &o, heads));
    ASSERT_NEAR(base, u[0], 0);                                         /* the baseline at the spec's lr */
    for (int l = 0; l < L; l++) ASSERT_EQ_INT(r.h_base, heads[l]);
    int n = M;
    double truth_lr = log10(0.002);
    while (n < N) {
        for (int i = 0; i < n; i++) {
            double d = log10(surrogate_axis_value(&lr, u[i])) - truth_lr;
            y[i] = smooth_y(&r, heads + i * L) + 0.02 * d * d + 0.0005 * sin(7.0 * i);
            se[i] = 0.001;
        }
        surrogate_model m;
        surrogate_opts f = o;
        f.u = u;
        f.out_u = u + n;
        ASSERT_EQ_INT(0, surrogate_fit(&m, &r, heads, y, se, n, &f));
        ASSERT_TRUE(m.wu > 0);
        int got = surrogate_propose(&m, 4, &f, heads + n * L, NULL, NULL);
        ASSERT_EQ_INT(4, got);
        for (int k = n; k < n + got; k++) {
            ASSERT_TRUE(u[k] >= 0 && u[k] <= 1);
            double v = surrogate_axis_value(&lr, u[k]);
            ASSERT_NEAR(surrogate_axis_unit(&lr, v), u[k], 0);          /* a quantized point */
            ASSERT_EQ_INT(0, schedule_validate(&r, heads + k * L, L, NULL));
            for (int j = 0; j < k; j++)
                ASSERT_TRUE(memcmp(heads + j * L, heads + k * L, sizeof(int) * L) != 0 || u[j] != u[k]);
        }
        surrogate_release(&m);
        n += got;
    }
    /* the last 8 proposals' learning rates are within a factor 2 of the optimum, the initial design's are not */
    double far_init = 0, far_late = 0;
    for (int i = 1; i < M; i++) far_init += fabs(log10(surrogate_axis_value(&lr, u[i])) - truth_lr) / (M - 1);
    for (int i = N - 8; i < N; i++) far_late += fabs(log10(surrogate_axis_value(&lr, u[i])) - truth_lr) / 8;
    printf("mean |log10(lr / 0.002)|: initial design %.3f, last 8 proposals %.3f\n", far_init, far_late);
    ASSERT_TRUE(far_late < log10(2.0));
    ASSERT_TRUE(far_late < 0.5 * far_init);
}
