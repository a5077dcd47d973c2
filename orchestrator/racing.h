/* racing.h — racing (the spec key "racing"): seeds added round by round, only to the schedules still in
 * contention, with the uniform baseline always alongside.
 *
 *   "racing": {"max_seeds": 10, "alpha": 0.05}
 *
 * max_seeds: seeds per schedule at most, > the spec's seeds and ≤ RACING_MAX_SEEDS; alpha in (0, 0.5]: the chance
 * that the race eliminates the truly best schedule over ALL its rounds (default 0.05).
 *
 * Rounds. Round 1 is the spec's seeds (n0 of them). When every job of round r is over (none queued, leased or
 * paused at a halving rung), the round is decided once: the blocked model val_loss ~ schedule + seed is fitted on
 * every finished job of the sweep (ranking.h, ranking_fit_compute) and each schedule still in the race (the
 * family) leaves it when it is significantly worse than another of the family — the one-sided best-group test:
 * τ̂_i − τ̂_j > q·σ̂·√Var(τ̂_i − τ̂_j)/σ² for some j of the family, q = q_{1−α_r}(K, df)/√2, the studentized range of
 * the K schedules of the family at the pooled residual df. α_r, the same at every round: the larger of alpha / looks
 * (looks = max_seeds − n0 + 1, the union bound over the rounds: Bonferroni) and the level calibrated by simulation
 * (racing_calibrate: under the global null, Gaussian equal-variance runs, the race's looks eliminate any schedule
 * with rate ≤ alpha at it). It is computed once, when round 1 is decided, with K = round 1's family, and stored
 * (racing_config), so every round and a restarted server use the same value (docs/STATISTICS.md). If more than
 * one schedule survives and the round's seeds are below max_seeds, the next round's jobs are created — one new
 * seed for every survivor and the uniform baseline (paired) — in the same transaction as the decisions.
 *
 * Seeds. Round r ≥ 2 trains seed max(spec seeds) + r − 1 (seed_index n0 + r − 2): above every spec seed and one
 * higher each round, so no seed is ever used twice. With "halving", round 1 is the halving sweep (its racing
 * family: the schedules that completed the last rung) and later rounds train the full run at once (rung = the
 * last, no stop_at_step).
 *
 * Tables (migration 7, sql/007_racing.sql): racing_rounds, one row per decided round (its existence is the decision
 * having happened: a round is never decided twice), racing_decisions, one row per round × schedule of the family
 * (eliminated or not, its seeds, Δ vs uniform and the 95% CI at that round: the page draws them narrowing).
 * Migration 8 (sql/008_racing_calibration.sql): racing_config (the per-round level, its method and the
 * simulation's replications, rate and cost), racing_screened (the jobs the outlier screen left out of a round).
 *
 * Fault injection (tests only): PRISM_FAULT_RACING=abort aborts the process inside a decision, after its
 * decision rows and the next round's jobs are written and before the round row and the commit.
 *
 * Returns: 0 or a negative STORE_E* code with the message in err. Transactions: none opened here; the caller's
 * transaction (the API's savepoint, serve's start-up transaction) makes each decision atomic.
 */
#ifndef PRISM_RACING_H
#define PRISM_RACING_H
#include <jansson.h>
#include <stddef.h>

#include "plan.h"
#include "ranking.h"
#include "store.h"

/* ---- the per-round level calibrated by simulation ---- */
#define RACING_CALIB_REPS 10000           /* replications (MC error of the null rate at 0.05: ±0.0022) */
#define RACING_CALIB_MIN_REPS 200         /* fewer within the work bound: Bonferroni, said so */
#define RACING_CALIB_WORK 60000000LL      /* observations looked at, at most: reps × Σ_looks K·n */
#define RACING_CALIB_SEED 0x5eed37ULL     /* the fixed RNG seed: the calibration is a function of (K, n0, max, alpha) */
typedef struct racing_calib {
    double level;                         /* the level to test at: max(alpha / looks, calibrated) */
    int calibrated;                       /* 1: the simulated level is above Bonferroni and used */
    double simulated;                     /* the bisection's level (NAN when not simulated) */
    int reps;                             /* replications (0: not simulated: over the work bound or K < 2) */
    double rate, rate_se;                 /* the simulated null rate of eliminating any schedule at `level`; MC se */
    long long work;                       /* observations looked at (reps × Σ_{n=n0}^{max_seeds} K·n) */
} racing_calib;
/* The per-round level for a race of K schedules, round 1 = n0 seeds, at most max_seeds, overall alpha: simulates
 * reps (≤ RACING_CALIB_REPS, fewer so that the work stays ≤ RACING_CALIB_WORK) sweeps under the global null
 * (y = seed effect + N(0, 1), all schedules equal, so every elimination is of a truly best one), looks at
 * n = n0..max_seeds seeds with racing_look's test (closed-form on the complete design: racing.c), and bisects for the largest level whose rate of
 * eliminating any schedule at some look is ≤ alpha. Deterministic (RNG seed `seed`). Returns 0, -1 on no memory. */
int racing_calibrate(int K, int n0, int max_seeds, double alpha, int reps, unsigned long long seed, racing_calib *out);
/* The pure look (no store; the simulation test calls it): fits obs[0..nobs) over nsched schedules and clears
 * alive[i] for every alive schedule significantly worse than another alive one at level alpha (above). Schedules
 * without data leave the family (alive[i] = 0). *critical: q (NAN when no test was possible: fewer than 2 alive
 * with data, or no residual df). fit: the fit on return (the caller releases it with ranking_fit_release), or
 * NULL. Returns the number eliminated (≥ 0), -1 on no memory, -2 with more than RANKING_MAX_SEEDS seeds. */
int racing_look(const ranking_obs *obs, int nobs, int nsched, unsigned char *alive, double alpha, double *critical,
                ranking_fit *fit);
/* racing_look, which screens first: ranking_screen (the same rule as the leaderboard's) runs on obs[0..nobs) and
 * the fit and the test use only the observations it keeps. screened (nobs, or NULL): 1 for each observation left
 * out; resid/thr (nobs, or NULL): its deleted studentized residual and the threshold (ranking_screen). The fit
 * returned has no cell table (cell NULL). racing_look is this with NULLs: every look screens. */
int racing_look_screened(const ranking_obs *obs, int nobs, int nsched, unsigned char *alive, double alpha,
                         double *critical, ranking_fit *fit, unsigned char *screened, double *resid, double *thr);

/* Decides every round of the sweep that is due (idempotent). *decided += rounds decided. */
int racing_tick(store *st, long long sweep_id, int *decided, char *err, size_t errlen);
/* racing_tick for the sweep of job (a job completed: the server's hook; a sweep without racing costs one read). */
int racing_job_done(store *st, long long job, int *decided, char *err, size_t errlen);
/* racing_tick for every sweep with racing (server start, job fail/cancel/requeue, rung report, lease expiry). */
int racing_tick_all(store *st, int *decided, char *err, size_t errlen);

/* What the race spent, for status and the leaderboard. */
typedef struct racing_summary {
    int enabled, max_seeds, seeds0, looks;
    double alpha, alpha_round;        /* alpha_round: the level the race tests at (NAN before round 1) */
    double alpha_bonferroni;          /* alpha / looks */
    char alpha_round_method[16];      /* "calibrated", "bonferroni", "" before round 1 */
    int calib_reps;
    double calib_rate, calib_rate_se;
    int screened;                     /* jobs the screen left out, over the decided rounds */
    int rounds_decided;               /* racing_rounds rows */
    int finished;                     /* the last decided round created no next round */
    int survivors, eliminated;        /* schedules after the last decided round (before any: all, 0) */
    long long jobs;                   /* the sweep's jobs (the seeds spent: schedule × seed pairs) */
    long long jobs_done;
    long long fixed_jobs;             /* the fixed design's max_seeds × schedules */
} racing_summary;
int racing_summarize(store *st, long long sweep_id, racing_summary *out, char *err, size_t errlen);
/* {"max_seeds","alpha","alpha_per_round" (Bonferroni's alpha / looks),"alpha_round" (the level used, null before
 *  round 1),"alpha_round_method","alpha_round_reps","alpha_round_null_rate","looks","rounds_decided","finished","survivors","eliminated",
 *  "seeds_spent","seeds_done","fixed_design_seeds","rounds":[{round, seed, seeds, family, survivors, critical}]}
 * (new reference; rounds read from st). NULL on a read error (err set). */
json_t *racing_summary_json(store *st, long long sweep_id, const racing_summary *s, char *err, size_t errlen);

/* Marks the ranking's rows: race_round (0 survivor, r eliminated at round r; -1 without racing), race_rounds
 * (per row, a JSON array of {round, seeds, delta, ci_low, ci_high, eliminated}, owned by r->racing), and sets
 * r->racing (the summary JSON). No-op without racing. */
int racing_annotate(store *st, ranking *r, char *err, size_t errlen);
#endif
