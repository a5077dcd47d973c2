/* test_racing.c — racing (orchestrator/racing.c): the spec key's checks, the pure look, the simulation of a
 * 56-schedule race against the fixed 10-seed design on the ranking module (no training), and a racing sweep
 * driven through the queue on a real SQLite store: rounds created in one transaction, eliminated schedules get no
 * new jobs, the baseline gets every round, seeds never reused, a decision taken once, the leaderboard's rounds.
 * MCREPS=N sets the simulation's replications (default 400, a few seconds), MCSEED=S its seed, MCSEEDS0=n the
 * spec's seeds (round 1; default 3).
 * timeout: 120
 */
#include "harness.h"
#include "mc_rng.h"
#include "halving.h"
#include "leaderboard.h"
#include "queue.h"
#include "racing.h"
#include "ranking.h"
#include "spec.h"
#include "stats.h"
#include "store.h"
#include "sweeps.h"
#define PRISM_TEST_CHECK_COUNTERS   /* every store_close checks the per-sweep counters */
#include "store_test_lib.h"

#include <signal.h>

#define TINY_MODEL "\"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, \"padded_vocab_size\": 256, " \
                   "\"seq_len\": 64}"
#define TINY_DATA "\"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"}"

static char spec_buf[8192];
/* A tiny spec (6 schedules: ord 0 = the baseline 4,4,4,4) with the seeds, "racing" and "halving" values given */
static const char *tiny(const char *seeds, const char *racing, const char *halving) {
    snprintf(spec_buf, sizeof spec_buf, "{ \"name\": \"r\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, "
             "\"min_block\": 1, \"max_block\": 2}, \"seeds\": %s, \"train\": {\"batch_size\": 2, \"seq_len\": 32, "
             "\"steps\": 90, \"lr\": 0.001}, \"eval\": {\"every\": 5, \"batches\": 2}, " TINY_DATA "%s%s%s%s }",
             seeds, racing ? ", \"racing\": " : "", racing ? racing : "", halving ? ", \"halving\": " : "",
             halving ? halving : "");
    return spec_buf;
}

static void expect_error(const char *text, const char *needle) {
    sweep_spec sp;
    char err[1024];
    if (spec_parse(text, strlen(text), &sp, err, sizeof err) == 0) HFAIL("spec accepted, expected \"%s\": %s", needle, text);
    ASSERT_CONTAINS(err, needle);
}

TEST(spec_errors_name_the_key) {
    expect_error(tiny("[1, 2]", "3", NULL), "racing: must be an object");
    expect_error(tiny("[1, 2]", "{}", NULL), "racing.max_seeds: required");
    expect_error(tiny("[1, 2]", "{\"max_seeds\": 2}", NULL), "racing.max_seeds: required, an integer above the spec's 2 seeds");
    expect_error(tiny("[1, 2]", "{\"max_seeds\": 1000}", NULL), "at most 200");
    expect_error(tiny("[1, 2]", "{\"max_seeds\": 5, \"alpha\": 0}", NULL), "racing.alpha: must be a number in (0, 0.5]");
    expect_error(tiny("[1, 2]", "{\"max_seeds\": 5, \"alpha\": \"x\"}", NULL), "racing.alpha");
    expect_error(tiny("[1, 2]", "{\"max_seeds\": 5, \"seeds\": 3}", NULL), "racing.seeds: unknown key");
    expect_error(tiny("[1]", "{\"max_seeds\": 5}", NULL), "racing: the spec's seeds are the first round and need at least 2");
    sweep_spec sp;
    char err[1024];
    const char *t = tiny("[7, 3]", "{\"max_seeds\": 5}", NULL);
    if (spec_parse(t, strlen(t), &sp, err, sizeof err) != 0) HFAIL("refused: %s", err);
    racing_cfg c;
    ASSERT_EQ_INT(0, racing_parse(json_object_get(sp.root, "racing"), sp.n_seeds, 7, &c, err, sizeof err));
    ASSERT_EQ_INT(1, c.enabled);
    ASSERT_EQ_INT(5, c.max_seeds);
    ASSERT_NEAR(0.05, c.alpha, 0);
    ASSERT_EQ_INT(4, c.looks);               /* after 2, 3, 4 and 5 seeds */
    ASSERT_NEAR(0.0125, racing_round_alpha(&c), 1e-15);
    ASSERT_EQ_INT(8, racing_round_seed(&c, 2));   /* above every spec seed, one more each round */
    ASSERT_EQ_INT(10, racing_round_seed(&c, 4));
    spec_release(&sp);
}

/* ---- the pure look -------------------------------------------------------------------------------- */

/* 4 schedules × 3 seeds, exact data: schedule 3 is far worse, schedule 2 only a little; noise from a small jitter */
TEST(look_eliminates_only_the_clearly_worse) {
    static const double eff[4] = { 0.0, 0.001, 0.003, 0.5 };
    static const double jit[4][3] = { { 0.001, -0.001, 0 }, { -0.001, 0, 0.001 }, { 0, 0.001, -0.001 }, { 0.001, 0, -0.001 } };
    ranking_obs obs[12];
    int m = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) obs[m++] = (ranking_obs){ i, j, 3.0 + eff[i] + 0.01 * j + jit[i][j], NULL, 0, 0 };
    unsigned char alive[4] = { 1, 1, 1, 1 };
    double q;
    ranking_fit f;
    int n = racing_look(obs, m, 4, alive, 0.05, &q, &f);
    ASSERT_EQ_INT(1, n);
    ASSERT_EQ_INT(0, alive[3]);
    ASSERT_TRUE(alive[0] && alive[1] && alive[2]);
    ASSERT_EQ_INT(6, f.df);   /* (4−1)(3−1) */
    ASSERT_NEAR(stats_range_quantile(0.05, 4, 6) / M_SQRT2, q, 1e-12);
    ranking_fit_release(&f);
    /* an already eliminated schedule is not in the family: it can neither leave again nor eliminate another */
    unsigned char alive2[4] = { 0, 1, 1, 1 };
    n = racing_look(obs, m, 4, alive2, 0.05, &q, NULL);
    ASSERT_EQ_INT(1, n);
    ASSERT_EQ_INT(0, alive2[0]);
    ASSERT_NEAR(stats_range_quantile(0.05, 3, 6) / M_SQRT2, q, 1e-12);   /* K = 3 alive, df (4−1)(3−1) = 6 */
    /* one seed: no noise estimate, nothing eliminated */
    unsigned char alive3[4] = { 1, 1, 1, 1 };
    ranking_obs one[4] = { { 0, 0, 3.0, NULL, 0, 0 }, { 1, 0, 3.1, NULL, 0, 0 }, { 2, 0, 3.2, NULL, 0, 0 }, { 3, 0, 9.0, NULL, 0, 0 } };
    ASSERT_EQ_INT(0, racing_look(one, 4, 4, alive3, 0.05, &q, NULL));
    ASSERT_TRUE(isnan(q));
    ASSERT_TRUE(alive3[0] && alive3[1] && alive3[2] && alive3[3]);
}

/* ---- the simulation: a race to 10 seeds against the fixed 10-seed design -------------------------- */

#define SIM_K 56
#define SIM_N 10

/* The paper's grid in shape: schedule 0 the uniform baseline 0.014 behind the best (schedule 1); four leaders
 * within 0.001 of it (0.00025 apart); the other 50 spread evenly from 0.0015 to 0.030 behind. */
static void sim_effects(double *eff) {
    eff[0] = 0.014;
    eff[1] = 0;
    for (int i = 2; i < 6; i++) eff[i] = 0.00025 * (i - 1);
    for (int i = 6; i < SIM_K; i++) eff[i] = 0.0015 + (0.030 - 0.0015) * (i - 6) / (SIM_K - 7.0);
}

/* The ranking's best group over rows (race_round set: eliminated rows leave the family); returns its size and
 * whether schedule `best` is in it. */
static int best_group(ranking_obs *obs, int m, const int *race_round, int *best_in, int best) {
    ranking rk;
    ranking_row rows[SIM_K];
    memset(&rk, 0, sizeof rk);
    memset(rows, 0, sizeof rows);
    int cnt[SIM_K] = {0};
    for (int k = 0; k < m; k++) cnt[obs[k].sched]++;
    for (int i = 0; i < SIM_K; i++) {
        rows[i].schedule_id = i;
        rows[i].ord = i;
        rows[i].is_baseline = i == 0;
        rows[i].seeds_total = rows[i].seeds_done = cnt[i];
        rows[i].race_round = race_round ? race_round[i] : 0;
        rows[i].mean = NAN;
    }
    rk.rows = rows;
    rk.nrows = SIM_K;
    rk.seeds = SIM_N;
    ranking_obs *lv[1] = { obs };
    int n1[1] = { m };
    if (ranking_compute(&rk, lv, n1, 1, 0) != 0) HFAIL("ranking_compute failed");
    int size = 0;
    *best_in = 0;
    for (int i = 0; i < SIM_K; i++) {
        if (rows[i].best == 1) size++;
        if (rows[i].best == 1 && rows[i].schedule_id == best) *best_in = 1;
    }
    ranking_fit_release(&rk.fit);
    return size;
}

typedef struct sim_out {
    int reps, n0;
    long long race_jobs;           /* over all replications */
    int best_eliminated;           /* the race eliminated schedule 1 */
    double survivors;              /* sum of the final survivors */
    double race_group;             /* sum of the leaderboard's best group after the race (survivors only) */
    int race_group_misses;         /* that group lacks schedule 1 */
    double fixed_group;            /* sum of the fixed design's best group */
    int fixed_misses;
    int smaller_or_equal;          /* reps where the survivors are no more than the fixed design's group */
    double rounds;
    double level;                  /* the per-round level the race tested at */
    int diverged_screened;         /* diverge: round 1 screened the diverged job */
    double screened;               /* sum of the jobs screened at round 1 */
} sim_out;

/* diverge: one run of round 1, at a random cell, is +1.0 nats (a diverged job); out->diverged_screened counts the
 * replications whose round-1 look screened exactly it */
static sim_out simulate(unsigned long long seed, int reps, int n0, double alpha, int diverge) {
    rng g = { seed, 0, 0 };
    double eff[SIM_K], y[SIM_K][SIM_N];
    sim_effects(eff);
    sim_out o;
    memset(&o, 0, sizeof o);
    o.reps = reps;
    o.n0 = n0;
    racing_calib cal;
    if (racing_calibrate(SIM_K, n0, SIM_N, alpha, RACING_CALIB_REPS, RACING_CALIB_SEED, &cal) != 0) HFAIL("calibrate");
    double a_r = cal.level;   /* what a sweep of this shape stores at round 1 */
    o.level = a_r;
    ranking_obs *obs = malloc(sizeof(ranking_obs) * SIM_K * SIM_N);
    for (int rep = 0; rep < reps; rep++) {
        for (int j = 0; j < SIM_N; j++) {
            double beta = 0.002 * gauss(&g);   /* the seed's luck, shared by every schedule */
            for (int i = 0; i < SIM_K; i++) y[i][j] = 3.36 + eff[i] + beta + 0.002 * gauss(&g);
        }
        int di = -1, dj = -1;
        if (diverge) {
            di = (int)(unif(&g) * SIM_K) % SIM_K;
            dj = (int)(unif(&g) * n0) % n0;
            y[di][dj] += 1.0;
        }
        /* the fixed design: every schedule × 10 seeds */
        int m = 0;
        for (int i = 0; i < SIM_K; i++) for (int j = 0; j < SIM_N; j++) obs[m++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
        int in;
        int fg = best_group(obs, m, NULL, &in, 1);
        o.fixed_group += fg;
        o.fixed_misses += !in;
        /* the race */
        unsigned char alive[SIM_K];
        int race_round[SIM_K] = {0};
        memset(alive, 1, sizeof alive);
        m = 0;
        for (int i = 0; i < SIM_K; i++) for (int j = 0; j < n0; j++) obs[m++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
        int n = n0, round = 1, surv = SIM_K;
        for (;;) {
            double q;
            unsigned char before[SIM_K];
            memcpy(before, alive, sizeof before);
            unsigned char scr[SIM_K * SIM_N];
            memset(scr, 0, sizeof scr);
            if (racing_look_screened(obs, m, SIM_K, alive, a_r, &q, NULL, scr, NULL, NULL) < 0) HFAIL("racing_look failed");
            if (round == 1) {
                int ns = 0;
                for (int k = 0; k < m; k++) ns += scr[k];
                o.screened += ns;
                if (diverge && ns == 1 && scr[di * n0 + dj]) o.diverged_screened++;
            }
            surv = 0;
            for (int i = 0; i < SIM_K; i++) {
                surv += alive[i];
                if (before[i] && !alive[i]) race_round[i] = round;
            }
            if (surv <= 1 || n >= SIM_N) break;
            for (int i = 0; i < SIM_K; i++)
                if (alive[i] || i == 0) obs[m++] = (ranking_obs){ i, n, y[i][n], NULL, 0, 0 };
            n++;
            round++;
        }
        o.rounds += round;
        o.race_jobs += m;
        o.best_eliminated += !alive[1];
        o.survivors += surv;
        o.smaller_or_equal += surv <= fg;
        int rg = best_group(obs, m, race_round, &in, 1);
        o.race_group += rg;
        o.race_group_misses += !in;
    }
    free(obs);
    return o;
}

static void print_sim(const sim_out *o) {
    double fixed_jobs = (double)SIM_K * SIM_N;
    printf("level per round %.5f; ", o->level);
    printf("%d races, %d seeds in round 1, max_seeds %d, 56 schedules: jobs %.1f of the fixed design's %.0f (%.1f%%), "
           "rounds %.2f; survivors %.2f, the leaderboard's best group after the race %.2f (misses the best %.4f), the fixed "
           "design's best group %.2f (misses the best %.4f); survivors <= the fixed group in %.4f; truly best eliminated "
           "%.4f\n", o->reps, o->n0, SIM_N, (double)o->race_jobs / o->reps, fixed_jobs,
           100.0 * o->race_jobs / o->reps / fixed_jobs, o->rounds / o->reps, o->survivors / o->reps, o->race_group / o->reps,
           (double)o->race_group_misses / o->reps, o->fixed_group / o->reps, (double)o->fixed_misses / o->reps,
           (double)o->smaller_or_equal / o->reps, (double)o->best_eliminated / o->reps);
}

/* Monte Carlo error: a rate ≤ alpha passes while the estimate is below alpha + 3 standard errors */
static double mc_bound(double alpha, int reps) { return alpha + 3 * sqrt(alpha * (1 - alpha) / reps); }

TEST(race_56_schedules_to_10_seeds_against_the_fixed_design) {
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) : 400;
    int n0 = getenv("MCSEEDS0") ? atoi(getenv("MCSEEDS0")) : 3;
    sim_out o = simulate(getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) : 1, reps, n0, 0.05, 0);
    print_sim(&o);
    printf("jobs screened at round 1: %.4f a race\n", o.screened / o.reps);
    double frac = (double)o.race_jobs / o.reps / (SIM_K * SIM_N);
    ASSERT_LT(frac, 0.5);                                              /* ≤ 50% of the fixed design's jobs */
    ASSERT_LT(o.survivors / o.reps, o.fixed_group / o.reps + 1e-9);    /* a best group no larger on average */
    ASSERT_LT((double)o.best_eliminated / o.reps, mc_bound(0.05, o.reps));   /* the truly best eliminated ≤ alpha */
}

/* One diverged run (+1.0 nats) in round 1 at a random cell: the screen leaves it out, so the race spends about what
 * it spends without it (≤ 50% of the fixed design's jobs; without the screen one such run inflates σ̂ and the race
 * spent 98.8% and ended with 55 survivors) and the diverged job is the one screened. */
TEST(race_with_one_diverged_run_screens_it) {
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) : 200;   /* the screen refits: 200 keeps make check short */
    int n0 = getenv("MCSEEDS0") ? atoi(getenv("MCSEEDS0")) : 3;
    sim_out o = simulate(getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) + 77 : 78, reps, n0, 0.05, 1);
    print_sim(&o);
    printf("diverged job screened (and only it) at round 1 in %.4f of races; jobs screened %.4f a race\n",
           (double)o.diverged_screened / o.reps, o.screened / o.reps);
    double frac = (double)o.race_jobs / o.reps / (SIM_K * SIM_N);
    ASSERT_LT(frac, 0.5);
    ASSERT_LT(0.95, (double)o.diverged_screened / o.reps);
    ASSERT_LT((double)o.best_eliminated / o.reps, mc_bound(0.05, o.reps));
}

/* The truly best schedule ties with a second one (both at 0): racing keeps both in ≥ 1 − alpha of races and every
 * eliminated schedule is truly worse. (A global null at 56 would never end the race: the check is the spread grid.) */
TEST(race_keeps_both_of_two_tied_best) {
    rng g = { 7, 0, 0 };
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) / 2 : 200, lost = 0;
    double eff[SIM_K];
    sim_effects(eff);
    eff[2] = 0;   /* a tie for the best */
    ranking_obs *obs = malloc(sizeof(ranking_obs) * SIM_K * SIM_N);
    racing_calib cal;
    if (racing_calibrate(SIM_K, 3, SIM_N, 0.05, RACING_CALIB_REPS, RACING_CALIB_SEED, &cal) != 0) HFAIL("calibrate");
    for (int rep = 0; rep < reps; rep++) {
        double y[SIM_K][SIM_N];
        for (int j = 0; j < SIM_N; j++) {
            double beta = 0.002 * gauss(&g);
            for (int i = 0; i < SIM_K; i++) y[i][j] = 3.36 + eff[i] + beta + 0.002 * gauss(&g);
        }
        unsigned char alive[SIM_K];
        memset(alive, 1, sizeof alive);
        int m = 0, n = 3;
        for (int i = 0; i < SIM_K; i++) for (int j = 0; j < n; j++) obs[m++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
        for (;;) {
            double q;
            racing_look(obs, m, SIM_K, alive, cal.level, &q, NULL);
            int surv = 0;
            for (int i = 0; i < SIM_K; i++) surv += alive[i];
            if (surv <= 1 || n >= SIM_N) break;
            for (int i = 0; i < SIM_K; i++) if (alive[i] || i == 0) obs[m++] = (ranking_obs){ i, n, y[i][n], NULL, 0, 0 };
            n++;
        }
        lost += !alive[1] || !alive[2];
    }
    free(obs);
    printf("%d races with two tied best: one of them eliminated in %.4f (bound %.4f)\n", reps, (double)lost / reps,
           mc_bound(0.05, reps));
    ASSERT_LT((double)lost / reps, mc_bound(0.05, reps));
}

/* ---- the per-round level calibrated by simulation ------------------------------------------------- */

/* The calibration for the documented race (56 schedules, 3 → 10 seeds, alpha 0.05): above Bonferroni, its own
 * simulated rate ≤ alpha, deterministic (the same value twice), and within the work bound. */
TEST(calibrated_level_for_the_56_schedule_race) {
    racing_calib a, b;
    ASSERT_EQ_INT(0, racing_calibrate(56, 3, 10, 0.05, RACING_CALIB_REPS, RACING_CALIB_SEED, &a));
    printf("K 56, 3 -> 10 seeds, alpha 0.05: level %.5f (bonferroni %.5f, simulated %.5f), %s, %d reps, null rate %.4f "
           "± %.4f, work %lld\n", a.level, 0.05 / 8, a.simulated, a.calibrated ? "calibrated" : "bonferroni", a.reps,
           a.rate, a.rate_se, a.work);
    ASSERT_EQ_INT(1, a.calibrated);
    ASSERT_LT(0.05 / 8, a.level);
    ASSERT_LT(a.rate, 0.05 + 1e-12);
    ASSERT_LT(0.05 - 4 * a.rate_se, a.rate);          /* the bisection got close to alpha, not far below it */
    ASSERT_EQ_INT(RACING_CALIB_REPS, a.reps);
    ASSERT_EQ_INT(0, racing_calibrate(56, 3, 10, 0.05, RACING_CALIB_REPS, RACING_CALIB_SEED, &b));
    ASSERT_NEAR(a.level, b.level, 0);
}

/* The cost is bounded by counting the observations fitted, not by a clock: reps × Σ_n K·n ≤ RACING_CALIB_WORK, and a
 * race too large for RACING_CALIB_MIN_REPS replications within it falls back to Bonferroni, unsimulated. */
/* (the work bound at 60M: 10,000 reps of the 56-schedule race = 29.1M) */
TEST(calibration_work_is_bounded) {
    racing_calib c;
    ASSERT_EQ_INT(0, racing_calibrate(56, 3, 10, 0.05, RACING_CALIB_REPS, 1, &c));
    long long per = 0;
    for (int n = 3; n <= 10; n++) per += 56LL * n;
    ASSERT_EQ_INT(c.reps * per, c.work);
    ASSERT_TRUE(c.work <= RACING_CALIB_WORK);
    ASSERT_EQ_INT(0, racing_calibrate(300, 2, 60, 0.05, RACING_CALIB_REPS, 1, &c));   /* 300 · Σ 2..60 = 548,700 a rep: 109 within the bound */
    ASSERT_TRUE(RACING_CALIB_WORK / 548700 < RACING_CALIB_MIN_REPS);
    ASSERT_EQ_INT(0, c.reps);
    ASSERT_EQ_INT(0, (int)c.work);
    ASSERT_EQ_INT(0, c.calibrated);
    ASSERT_NEAR(0.05 / 59, c.level, 1e-15);
    ASSERT_TRUE(isnan(c.rate));
    ASSERT_EQ_INT(0, racing_calibrate(10, 2, 6, 0.05, 100000, 1, &c));   /* more reps asked for than the cap */
    ASSERT_EQ_INT(RACING_CALIB_REPS, c.reps);
}

/* The global null (all 56 schedules equal, so each is truly best): races at the calibrated level, run through
 * racing_look on sweeps drawn with another RNG stream than the calibration's (MCSEED), eliminate any schedule in at
 * most alpha of them (+ 3 MC standard errors). The Bonferroni level's rate is printed beside it. */
TEST(global_null_eliminates_any_schedule_at_most_alpha) {
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) / 2 : 200, n0 = 3;
    rng g = { getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) + 1000 : 1001, 0, 0 };
    racing_calib cal;
    if (racing_calibrate(SIM_K, n0, SIM_N, 0.05, RACING_CALIB_REPS, RACING_CALIB_SEED, &cal) != 0) HFAIL("calibrate");
    double levels[2] = { cal.level, 0.05 / (SIM_N - n0 + 1) };
    int any[2] = { 0, 0 };
    ranking_obs *obs = malloc(sizeof(ranking_obs) * SIM_K * SIM_N);
    for (int rep = 0; rep < reps; rep++) {
        double y[SIM_K][SIM_N];
        for (int j = 0; j < SIM_N; j++) {
            double beta = 0.002 * gauss(&g);
            for (int i = 0; i < SIM_K; i++) y[i][j] = 3.36 + beta + 0.002 * gauss(&g);
        }
        for (int w = 0; w < 2; w++) {
            unsigned char alive[SIM_K];
            memset(alive, 1, sizeof alive);
            int m = 0, n = n0, out = 0;
            for (int i = 0; i < SIM_K; i++) for (int j = 0; j < n; j++) obs[m++] = (ranking_obs){ i, j, y[i][j], NULL, 0, 0 };
            for (;;) {
                double q;
                int e = racing_look(obs, m, SIM_K, alive, levels[w], &q, NULL);
                if (e < 0) HFAIL("racing_look failed");
                if (e > 0) { out = 1; break; }   /* the event: some truly best schedule eliminated */
                if (n >= SIM_N) break;
                for (int i = 0; i < SIM_K; i++) if (alive[i] || i == 0) obs[m++] = (ranking_obs){ i, n, y[i][n], NULL, 0, 0 };
                n++;
            }
            any[w] += out;
        }
    }
    free(obs);
    printf("global null, 56 schedules, 3 -> 10 seeds, %d races: any eliminated at the calibrated level %.5f: %.4f "
           "(bound %.4f); at Bonferroni's %.5f: %.4f\n", reps, levels[0], (double)any[0] / reps, mc_bound(0.05, reps),
           levels[1], (double)any[1] / reps);
    ASSERT_LT((double)any[0] / reps, mc_bound(0.05, reps));
    ASSERT_TRUE(any[1] <= any[0]);   /* the calibrated level is the larger: it eliminates at least as often */
}

/* ---- a racing sweep driven through the queue ----------------------------------------------------- */

static char db_path[4200];
static store *fresh_store(void) {
    char err[512];
    snprintf(db_path, sizeof db_path, "%s/r.db", harness_tmpdir());
    store *st = NULL;
    if (store_open(db_path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    return st;
}

/* Δ of each schedule (by ord) against the baseline (ord 0): ords 2 and 4 lead within 0.001, 1, 3, 5 are far behind,
 * the baseline 0.03 behind the leaders */
static const double BIAS[6] = { 0, 0.5, -0.030, 0.6, -0.031, 0.7 };

static double loss_for(long long ord, long long seed) {
    return 3.0 + BIAS[ord] + 0.01 * (double)seed + 0.0005 * (double)((ord * 7 + seed * 13) % 5 - 2);
}

static long long job_ord(store *st, long long job) {
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT sc.ord FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE j.id = %lld", job);
    return qv(st, sql);
}

/* Leases every queued job, finishes each (complete with its loss, rung reports with halving) and ticks racing after
 * each as the server does; returns the jobs completed. */
static int run_queue(store *st, queue *qu, long long wid, long long sweep) {
    int done = 0;
    for (;;) {
        json_t *o = NULL;
        int rc = queue_lease(qu, wid, "cpu", &o);
        if (rc == QUEUE_EMPTY) break;
        if (rc != QUEUE_OK) HFAIL("lease: %d %s", rc, qu->err);
        long long job = json_integer_value(json_object_get(o, "job_id")), seed = json_integer_value(json_object_get(o, "seed"));
        json_t *stopj = json_object_get(o, "stop_at_step");
        int has_stop = json_is_integer(stopj);
        long long stop = json_integer_value(stopj);
        char token[128];
        snprintf(token, sizeof token, "%s", json_string_value(json_object_get(o, "lease_token")));
        long long attempt = json_integer_value(json_object_get(o, "attempt"));
        json_decref(o);
        long long ord = job_ord(st, job);
        char err[512], sb[16];
        if (has_stop) {   /* halving: the rung report (checkpoint first) */
            long long step = stop;
            char path[256];
            double exp;
            snprintf(path, sizeof path, "/ck/job-%lld-a%lld/ckpt_%lld.bin", job, attempt, step);
            if (queue_checkpoint(qu, job, token, path, step, &exp) != 0) HFAIL("checkpoint: %s", qu->err);
            const char *state = NULL;
            if (halving_report(qu, job, token, step, loss_for(ord, seed) + 0.1, &state, sb, err, sizeof err) != 0)
                HFAIL("rung report: %s", err);
        } else {
            json_t *r = json_pack("{s:f}", "val_loss", loss_for(ord, seed));
            if (queue_complete(qu, job, token, r) != 0) HFAIL("complete: %s", qu->err);
            json_decref(r);
            done++;
        }
        int decided = 0;
        if (racing_tick(st, sweep, &decided, err, sizeof err) != 0) HFAIL("racing_tick: %s", err);
    }
    return done;
}

static long long seed_jobs(store *st, long long seed, int ord) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id WHERE j.seed = %lld%s",
             seed, ord >= 0 ? " AND sc.ord = " : "");
    if (ord >= 0) snprintf(sql + strlen(sql), sizeof sql - strlen(sql), "%d", ord);
    return qv(st, sql);
}

static store *racing_sweep(const char *racing, const char *halving, queue *qu, long long *wid) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny("[1, 2]", racing, halving);
    if (sweeps_create_json(st, t, strlen(t), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    queue_init(qu, st, 60, 3);
    if (queue_register(qu, "w", "h", "[]", wid) != 0) HFAIL("register: %s", qu->err);
    return st;
}

TEST(rounds_add_seeds_to_survivors_and_the_baseline_only) {
    queue qu;
    long long wid;
    store *st = racing_sweep("{\"max_seeds\": 4, \"alpha\": 0.05}", NULL, &qu, &wid);
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, (int)qv(st, "PRAGMA user_version"));
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs"));
    ASSERT_EQ_INT(18, run_queue(st, &qu, wid, 1));
    /* round 1 (seeds 1, 2): 1, 3, 5 and the baseline out; round 2 = seed 3, round 3 = seed 4 (= max_seeds) */
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM racing_rounds"));
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT family FROM racing_rounds WHERE round = 1"));
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT survivors FROM racing_rounds WHERE round = 1"));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT next_seed FROM racing_rounds WHERE round = 1"));
    ASSERT_EQ_INT(4, (int)qv(st, "SELECT next_seed FROM racing_rounds WHERE round = 2"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT next_seed IS NULL FROM racing_rounds WHERE round = 3"));
    ASSERT_EQ_INT(4, (int)qv(st, "SELECT count(*) FROM racing_decisions WHERE round = 1 AND eliminated = 1"));
    /* the level: calibrated once at round 1 (K = 6, 2 → 4 seeds) and the same at every round */
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM racing_config"));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM racing_config WHERE method = 'calibrated' AND family = 6 AND "
                                 "reps = 10000 AND alpha_round > bonferroni"));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM racing_rounds r JOIN racing_config c ON c.sweep_id = r.sweep_id "
                                 "WHERE r.alpha = c.alpha_round"));
    racing_calib cal;
    ASSERT_EQ_INT(0, racing_calibrate(6, 2, 4, 0.05, RACING_CALIB_REPS, RACING_CALIB_SEED, &cal));
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM racing_config") * (cal.calibrated == 1));
    {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM racing_config WHERE abs(alpha_round - %.17g) < 1e-15", cal.level);
        ASSERT_EQ_INT(1, (int)qv(st, sql));
    }
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM racing_screened"));   /* no diverged run here */
    for (long long seed = 3; seed <= 4; seed++) {
        ASSERT_EQ_INT(3, (int)seed_jobs(st, seed, -1));   /* the two survivors and the baseline */
        for (int o = 0; o < 6; o++) ASSERT_EQ_INT(o == 0 || o == 2 || o == 4 ? 1 : 0, (int)seed_jobs(st, seed, o));
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE seed = %lld AND seed_index = %lld", seed, seed - 1);
        ASSERT_EQ_INT(3, (int)qv(st, sql));   /* seed_index n0 + r − 2 */
    }
    ASSERT_EQ_INT(0, (int)seed_jobs(st, 5, -1));
    ASSERT_EQ_INT(18, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'done'"));
    /* each new job is its schedule's first job with train.seed replaced */
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM jobs WHERE seed = 4 AND json_extract(job, '$.train.seed') = 4"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM jobs j JOIN jobs f ON f.schedule_id = j.schedule_id AND f.seed = 1 "
                                 "WHERE j.seed = 3 AND json_remove(j.job, '$.train.seed') != json_remove(f.job, '$.train.seed')"));
    /* idempotent: another tick decides nothing and creates nothing */
    int decided = 0;
    char err[512];
    ASSERT_EQ_INT(0, racing_tick(st, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, decided);
    ASSERT_EQ_INT(18, (int)qv(st, "SELECT count(*) FROM jobs"));
    /* the leaderboard: per schedule its status, round and seeds; the spend against max_seeds × schedules */
    json_t *lb = NULL;
    ASSERT_EQ_INT(0, leaderboard_build(st, 1, &lb, err, sizeof err));
    json_t *rj = json_object_get(lb, "racing");
    ASSERT_TRUE(json_is_object(rj));
    ASSERT_EQ_INT(18, json_integer_value(json_object_get(rj, "seeds_spent")));
    ASSERT_EQ_INT(24, json_integer_value(json_object_get(rj, "fixed_design_seeds")));
    ASSERT_EQ_INT(2, json_integer_value(json_object_get(rj, "survivors")));
    ASSERT_EQ_INT(4, json_integer_value(json_object_get(rj, "eliminated")));
    ASSERT_EQ_INT(3, (int)json_array_size(json_object_get(rj, "rounds")));
    ASSERT_STREQ("calibrated", json_string_value(json_object_get(rj, "alpha_round_method")));
    ASSERT_NEAR(cal.level, json_number_value(json_object_get(rj, "alpha_round")), 1e-15);
    ASSERT_NEAR(0.05 / 3, json_number_value(json_object_get(rj, "alpha_per_round")), 1e-15);
    ASSERT_EQ_INT(0, (int)json_array_size(json_object_get(rj, "screened")));
    ASSERT_TRUE(json_is_array(json_object_get(rj, "screened")));
    json_t *rows = json_object_get(lb, "rows");
    int surv = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i), *rr = json_object_get(r, "racing");
        const char *hd = json_string_value(json_object_get(rr, "status"));
        int out = json_is_integer(json_object_get(rr, "eliminated_round"));
        printf("row %zu: %s round %lld seeds %lld tied_best %s\n", i, hd, (long long)json_integer_value(json_object_get(rr, "eliminated_round")),
               (long long)json_integer_value(json_object_get(rr, "seeds_run")), json_dumps(json_object_get(r, "tied_best"), JSON_ENCODE_ANY));
        if (!out) {
            surv++;
            ASSERT_STREQ("survivor", hd);
            ASSERT_EQ_INT(4, json_integer_value(json_object_get(rr, "seeds_run")));
            ASSERT_EQ_INT(3, (int)json_array_size(json_object_get(rr, "rounds")));
            ASSERT_TRUE(json_is_boolean(json_object_get(r, "tied_best")));
            /* the CI narrows round by round (more seeds) */
            json_t *a = json_object_get(rr, "rounds");
            double w1 = json_number_value(json_object_get(json_array_get(a, 0), "ci_high")) - json_number_value(json_object_get(json_array_get(a, 0), "ci_low"));
            double w3 = json_number_value(json_object_get(json_array_get(a, 2), "ci_high")) - json_number_value(json_object_get(json_array_get(a, 2), "ci_low"));
            ASSERT_LT(w3, w1);
        } else {
            ASSERT_STREQ("eliminated", hd);
            ASSERT_EQ_INT(1, json_integer_value(json_object_get(rr, "eliminated_round")));
            ASSERT_TRUE(json_is_null(json_object_get(r, "tied_best")));   /* not compared with the survivors */
            ASSERT_EQ_INT(json_is_true(json_object_get(r, "is_baseline")) ? 4 : 2, json_integer_value(json_object_get(rr, "seeds_run")));
        }
    }
    ASSERT_EQ_INT(2, surv);
    char *csv = leaderboard_csv(lb), *tab = leaderboard_table(lb);
    ASSERT_CONTAINS(csv, ",race_status,eliminated_round,seeds_run");
    ASSERT_CONTAINS(csv, ",eliminated,1,2");
    ASSERT_CONTAINS(csv, ",survivor,,4");
    ASSERT_CONTAINS(tab, "eliminated by racing");
    ASSERT_CONTAINS(tab, "out@1");
    ASSERT_CONTAINS(tab, "seeds spent 18 of the fixed design's 24");
    free(csv);
    free(tab);
    json_decref(lb);
    store_close(st);
}

/* The server killed inside a decision (PRISM_FAULT_RACING=abort, in a child process on the same file): nothing of the
 * decision is left, and the next tick takes it exactly once. */
TEST(decision_killed_midway_leaves_nothing_and_is_taken_once) {
    queue qu;
    long long wid;
    store *st = racing_sweep("{\"max_seeds\": 3}", NULL, &qu, &wid);
    /* finish round 1 without ticking */
    for (;;) {
        json_t *o = NULL;
        if (queue_lease(&qu, wid, "cpu", &o) != QUEUE_OK) break;
        long long job = json_integer_value(json_object_get(o, "job_id")), seed = json_integer_value(json_object_get(o, "seed"));
        char token[128];
        snprintf(token, sizeof token, "%s", json_string_value(json_object_get(o, "lease_token")));
        json_decref(o);
        json_t *r = json_pack("{s:f}", "val_loss", loss_for(job_ord(st, job), seed));
        if (queue_complete(&qu, job, token, r) != 0) HFAIL("complete: %s", qu.err);
        json_decref(r);
    }
    store_close(st);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        store *cs = NULL;
        char err[512];
        if (store_open(db_path, &cs, err, sizeof err) != 0) _exit(3);
        setenv("PRISM_FAULT_RACING", "abort", 1);
        int decided = 0;
        store_begin(cs);
        racing_tick(cs, 1, &decided, err, sizeof err);
        store_commit(cs);
        _exit(4);   /* not reached: the fault point aborts */
    }
    int wst = 0;
    waitpid(pid, &wst, 0);
    ASSERT_TRUE(WIFSIGNALED(wst));
    ASSERT_EQ_INT(SIGABRT, WTERMSIG(wst));
    char err[512];
    if (store_open(db_path, &st, err, sizeof err) != 0) HFAIL("reopen: %s", err);
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM racing_rounds"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM racing_decisions"));
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs"));
    int decided = 0;
    ASSERT_EQ_INT(0, store_begin(st));
    ASSERT_EQ_INT(0, racing_tick(st, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, store_commit(st));
    ASSERT_EQ_INT(1, decided);
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT count(*) FROM racing_rounds"));
    ASSERT_EQ_INT(3, (int)seed_jobs(st, 3, -1));
    decided = 0;
    ASSERT_EQ_INT(0, racing_tick(st, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, decided);
    ASSERT_EQ_INT(15, (int)qv(st, "SELECT count(*) FROM jobs"));
    store_close(st);
}

/* With halving, round 1 is the halving sweep: the race's family is the schedules that completed the last rung, and
 * later rounds train the full run at once (no stop_at_step). */
TEST(with_halving_racing_takes_the_schedules_completing_the_last_rung) {
    queue qu;
    long long wid;
    store *st = racing_sweep("{\"max_seeds\": 3}", "{\"eta\": 2, \"rungs\": [0.5]}", &qu, &wid);
    run_queue(st, &qu, wid, 1);
    /* halving: ⌈6/2⌉ = 3 best (2, 4 and the baseline) reach the full run; 1, 3, 5 are pruned at the rung */
    ASSERT_EQ_INT(6, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'pruned'"));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT family FROM racing_rounds WHERE round = 1"));
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT survivors FROM racing_rounds WHERE round = 1"));
    ASSERT_EQ_INT(3, (int)seed_jobs(st, 3, -1));
    ASSERT_EQ_INT(3, (int)qv(st, "SELECT count(*) FROM jobs WHERE seed = 3 AND rung = 1 AND stop_at_step IS NULL AND state = 'done'"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM racing_decisions d JOIN jobs j ON j.schedule_id = d.schedule_id "
                                 "WHERE j.state = 'pruned'"));   /* halving's pruned never enter the race */
    ASSERT_EQ_INT(1, (int)qv(st, "SELECT next_seed IS NULL FROM racing_rounds WHERE round = 2"));
    store_close(st);
}

/* A halving rung held (the baseline's jobs failed there, so the rest wait paused): round 1 is not over while its jobs
 * are paused, and nothing is decided. */
TEST(a_held_halving_rung_keeps_round_1_open) {
    queue qu;
    long long wid;
    store *st = racing_sweep("{\"max_seeds\": 3}", "{\"eta\": 2, \"rungs\": [0.5]}", &qu, &wid);
    char err[512], sb[16];
    for (;;) {
        json_t *o = NULL;
        if (queue_lease(&qu, wid, "cpu", &o) != QUEUE_OK) break;
        long long job = json_integer_value(json_object_get(o, "job_id")), seed = json_integer_value(json_object_get(o, "seed"));
        long long attempt = json_integer_value(json_object_get(o, "attempt")), stop = json_integer_value(json_object_get(o, "stop_at_step"));
        char token[128];
        snprintf(token, sizeof token, "%s", json_string_value(json_object_get(o, "lease_token")));
        json_decref(o);
        long long ord = job_ord(st, job);
        if (ord == 0) {   /* the baseline fails for good at the rung */
            const char *ns = NULL;
            if (queue_fail(&qu, job, token, "boom", 0, &ns) != 0) HFAIL("fail: %s", qu.err);
        } else {
            char path[256];
            double exp;
            snprintf(path, sizeof path, "/ck/job-%lld-a%lld/ckpt_%lld.bin", job, attempt, stop);
            if (queue_checkpoint(&qu, job, token, path, stop, &exp) != 0) HFAIL("checkpoint: %s", qu.err);
            const char *state = NULL;
            if (halving_report(&qu, job, token, stop, loss_for(ord, seed), &state, sb, err, sizeof err) != 0) HFAIL("rung: %s", err);
        }
        int decided = 0;
        if (racing_tick(st, 1, &decided, err, sizeof err) != 0) HFAIL("racing_tick: %s", err);
    }
    ASSERT_EQ_INT(10, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'paused'"));
    ASSERT_EQ_INT(2, (int)qv(st, "SELECT count(*) FROM jobs WHERE state = 'failed'"));
    int decided = 0;
    ASSERT_EQ_INT(0, racing_tick(st, 1, &decided, err, sizeof err));
    ASSERT_EQ_INT(0, decided);
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM racing_rounds"));
    store_close(st);
}

/* A racing sweep re-created: the same spec adds nothing and is fine; one that adds a seed (which a round would have
 * used: round 2 trains seed 3) or a schedule is refused, naming the fix, and leaves the jobs as they were. */
TEST(recreating_a_racing_sweep_may_not_add_jobs) {
    queue qu;
    long long wid;
    store *st = racing_sweep("{\"max_seeds\": 4}", NULL, &qu, &wid);
    sweeps_created c;
    char err[1024] = "";
    const char *t = tiny("[1, 2]", "{\"max_seeds\": 4}", NULL);
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_EQ_INT(0, (int)c.jobs_created);
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs"));
    t = tiny("[1, 2, 3]", "{\"max_seeds\": 4}", NULL);
    ASSERT_EQ_INT(STORE_ECONFLICT, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_CONTAINS(err, "races (spec key \"racing\")");
    ASSERT_CONTAINS(err, "this spec adds 6");
    ASSERT_CONTAINS(err, "another \"name\"");
    ASSERT_EQ_INT(12, (int)qv(st, "SELECT count(*) FROM jobs"));
    ASSERT_EQ_INT(0, (int)qv(st, "SELECT count(*) FROM jobs WHERE seed = 3"));
    queue_release(&qu);
    store_close(st);
}
