/* ranking.h — the sweep's answer as a C value: schedules ranked against the uniform baseline by a blocked model
 * over every finished job, with the tests, the best group and what the design can detect. The leaderboard renders
 * it (JSON, CSV, table: leaderboard.c), halving promotes from it (halving.c). The method and its assumptions are
 * in docs/STATISTICS.md; the JSON it becomes in docs/API.md.
 *
 * The model. A sweep is a randomized complete block design: schedules are treatments, seeds are blocks (same seed
 * ⇒ same initial weights and data order). At each level (the final result; with halving also each rung) the val
 * losses are fitted by least squares to  y = schedule effect + seed effect + ε,  over every job with a value
 * there (a missing cell is handled, not dropped). The residual variance is pooled over the whole sweep:
 * residual df = observations − schedules − seeds + components ((K−1)(n−1) when complete).
 *   vs uniform   Δ_i = τ̂_i − τ̂_base with its moderated SE: each schedule's residual mean square shrunk toward an
 *                empirical-Bayes prior over all (Smyth 2004; the pooled variance when they spread no more than
 *                chance), the contrast's variance Σ over its cells c_k²·s̃²_sched (ranking_fit_contrast), t with the
 *                Satterthwaite df (≤ the residual df), two-sided p, Holm over every non-baseline schedule of the
 *                sweep (the family counts schedules without a value).
 *   best group   a schedule leaves it only when it is significantly WORSE than some other schedule:
 *                τ̂_i − τ̂_j > q·SE_ij for some j. With ≥ RANKING_PERM_MIN_DF residual df: SE_ij moderated and q the
 *                larger of Tukey's q_{0.95}(K, df_ij)/√2 and the 95% quantile of max |Δ|/SE under residual
 *                permutations within seed blocks (heavy tails; cost-capped). Below: Tukey–Kramer on the pooled
 *                variance. Every truly best schedule, ties included, stays in the group with probability ≥ 95%.
 *                Membership means "not shown to be worse", not "as good".
 *   variance     Bartlett's test on the residual mean squares by schedule, a diagnostic only: nothing falls back.
 *                The paired per-pair method remains for more than RANKING_MAX_SEEDS seeds.
 *   detectable   from the fitted design: the median schedule's contrast against uniform (moderated variance,
 *                df), the smallest |Δ| significant whatever the others do (Holm's first step), the |Δ| detected
 *                with 80% power, and the seeds the paper's effect (RANKING_PAPER_EFFECT) needs.
 *   val noise    from each result's per-batch val losses (the same batches for every job): the standard error of
 *                the seed-averaged Δ that the val sample alone contributes (it does not shrink with seeds),
 *                against the seeds' standard error of that Δ.
 *
 * Ownership: ranking_build returns a ranking the caller frees with ranking_free (ranking_read.h, which reads the
 * store into it); every pointer inside is owned by it. Nothing here writes to the store.
 */
#ifndef PRISM_RANKING_H
#define PRISM_RANKING_H
#include <jansson.h>
#include <stddef.h>

#include "jobstate.h"
#include "ranking_fit.h"
#include "store.h"

#define RANKING_ALPHA 0.05          /* family-wise error rate of the marks and of the best group */
#define RANKING_VAR_ALPHA 0.01      /* Bartlett's test below this: "rejected" in the diagnostic (no fallback) */
#define RANKING_PAPER_EFFECT 0.0144 /* the paper's headline |Δ| (PAPER.md), for the detectable-effect sentence */
#define RANKING_PERM_REPS 400       /* permutations that calibrate the best group's critical value (heavy tails) */
#define RANKING_PERM_MIN_REPS 100   /* fewer within the cost cap: no calibration (Tukey's alone, said so) */
#define RANKING_PERM_MIN_DF 30      /* the calibration needs this many residual df (a 56 × 3 sweep has 110) */
#define RANKING_PERM_WORK 4000000LL /* the calibration's cost cap: permutations × (family pairs + observations) */
#define RANKING_PERM_SEED 0x5052534d50524d31ULL   /* the permutations' fixed stream: a ranking is a function of its data */
#define RANKING_NSTATES JOB_NSTATES   /* counts[] is indexed by job_state (jobstate.h) */

typedef enum { RANKING_BLOCKED = 0, RANKING_PAIRED = 1 } ranking_method;

/* ---- the pure core: no store, no allocation beyond its own results (the Monte Carlo tests call it) ---- */
/* The observations, the fit at one level and the outlier screen (ranking_obs, ranking_fit, ranking_screen,
 * RANKING_MAX_SEEDS, RANKING_SCREEN_ALPHA) are ranking_fit.h's. */

/* ---- the outlier screen (issue #37): a job the fit leaves out, named on every surface ---- */

/* One observation the screen (ranking_screen) left out of the fit at a level. */
typedef struct ranking_screened {
    long long job_id, schedule_id, seed;
    int level;                   /* 0.. (the final level is nrungs) */
    double y;                    /* its value at the level */
    double residual;             /* its deleted studentized residual at the step it was screened */
    double threshold;            /* the |residual| it exceeded */
    char reason[128];            /* one line for a person: what was seen and the rule */
} ranking_screened;

/* one schedule against the uniform baseline at its level */
typedef struct ranking_cmp {
    int n;                       /* seeds both have; 0: no comparison */
    int has;                     /* an estimate exists */
    double mean;                 /* Δ: blocked τ̂_i − τ̂_base, or the mean paired difference (paired method) */
    double sd;                   /* sd of the paired differences (n ≥ 2), NAN otherwise */
    double se, df, t, p, p_holm; /* NAN when not computable */
    double ci_low, ci_high;      /* 95%, Student t with df */
    int significant;             /* p_holm < RANKING_ALPHA */
    int method;                  /* ranking_method used */
} ranking_cmp;

/* the best group's permutation calibration (ranking.c, best_perm_q) */
typedef struct ranking_perm {
    double q;                    /* the (B+1)(1−α) order statistic of max |Δ|/SE over the family's pairs; NAN: none */
    int reps;                    /* permutations drawn (0: none) */
    int planned;                 /* permutations the cost cap allowed */
    int skipped;                 /* 1: the family was too large for RANKING_PERM_MIN_REPS within RANKING_PERM_WORK */
    int small;                   /* 1: fewer than RANKING_PERM_MIN_DF residual df: not tried */
    long long work;              /* pair evaluations + fitted observations spent (the cost test's count) */
} ranking_perm;

/* what the design can detect (vs uniform, at the sweep's seeds) */
typedef struct ranking_power {
    int seeds, m;                /* seeds per schedule; comparisons against uniform (Holm family) */
    double sd, df;               /* run-to-run sd and its df (the fitted design: the sd that gives the median
                                    contrast's variance, √(V·seeds/2), and that contrast's df) */
    double contrast_se;          /* SE of a typical Δ: sd·√(2/seeds) */
    char test[80];               /* the test the figures are for ("moderated t ...", "pooled t", "paired t") */
    double critical;             /* Holm's first-step |t| */
    double min_significant;      /* |Δ| significant whatever the rest: critical · sd·√(2/seeds) */
    double delta80;              /* |Δ| detected with 80% power (approximate) */
    int paper_detectable;        /* delta80 ≤ the target effect (RANKING_PAPER_EFFECT for a sweep) */
    int seeds_for_paper;         /* seeds at which delta80 ≤ the target effect (≤ 1000), 0 when none */
} ranking_power;

typedef struct ranking_valnoise {
    int pairs;                   /* (schedule, seed) pairs with per-batch losses on both sides; 0: none */
    double sd;                   /* RMS standard error of a paired Δ from the val sample alone */
    double seed_sd;              /* sd of one seed's paired Δ (√2 · pooled sd) */
    double share;                /* sd² / seed_sd²: the val sample's share of a paired Δ's variance */
    int schedules;               /* schedules with per-batch losses on common seeds with the baseline */
    double sd_mean;              /* RMS over those of the val sample's SE of the seed-averaged Δ (batch-wise
                                    differences averaged over the common seeds: it does not shrink with seeds) */
    double seed_sd_mean;         /* RMS of the seeds' SE of that Δ, √2·pooled sd/√(common seeds) */
    double share_mean;           /* sd_mean² / seed_sd_mean² */
    int warn;                    /* sd_mean > seed_sd_mean / 3 (the seed-averaged Δ the tests use) */
    int batches;                 /* val batches per result (the most common) */
} ranking_valnoise;

typedef struct ranking_row {
    long long schedule_id;
    char *heads;                 /* canonical text (owned) */
    char *train;                 /* schedules.train: "" or the train values a search set ({"lr":0.001}; owned) */
    int is_baseline, ord;
    int level;                   /* the level shown (0 without halving; with halving 0..rungs, rungs = final) */
    int counts[RANKING_NSTATES];
    int seeds_total, seeds_done; /* jobs; jobs with a value at the level */
    int rank;                    /* 1.. ; 0 = unranked (no value) */
    int provisional;             /* seeds_done < the sweep's seeds */
    int pruned;                  /* halving pruned it */
    int race_round;              /* racing: the round it was eliminated at (≥ 1; out of the best group's family),
                                    0 in the race or no racing (racing.h) */
    int best;                    /* 1 in the best group, 0 shown worse, -1 not compared (pruned, other level, no value) */
    long long worse_than;        /* best == 0: a schedule it is significantly worse than */
    double vs_best_mean, vs_best_se, vs_best_margin;   /* τ̂ − τ̂ of rank 1, its SE, the margin q·SE; NAN if none */
    int vs_best_n;               /* common seeds with rank 1 */
    double mean, std;            /* val loss over seeds at the level */
    double tps_mean, tps_std;    /* tokens/s (final level only) */
    int nseeds;                  /* entries of seed_*[] */
    long long *seed;             /* (nseeds) */
    double *val, *val_se;        /* (nseeds) val loss at the level; its standard error over val batches (NAN) */
    int L;                       /* layers of attn_* (0: none) */
    double *attn, *attn_std;     /* (L) D_l mean, std over seeds (std NAN with one seed) */
    double *dattn, *dattn_lo, *dattn_hi;   /* (L) ΔD_l vs uniform and its paired 95% CI (NULL without baseline) */
    ranking_cmp cmp;
} ranking_row;

typedef struct ranking {
    long long sweep_id;
    char name[256], arch[16];
    long long baseline_id;       /* -1 without */
    int seeds;                   /* the design's seeds per schedule (the spec's seeds; without them the most
                                    non-cancelled jobs of one schedule) */
    int comparisons;             /* the Holm family against uniform */
    int best_family;             /* schedules compared for the best group */
    int best_level;              /* the level the best group is chosen at */
    int nrungs;                  /* halving rungs (0 without halving) */
    long long rung_step[17];     /* step of each level (rung_step[nrungs] = train.steps) */
    ranking_method method;       /* at the best group's level */
    int fallback_reason;         /* method paired: 2 too many seeds (1, Bartlett rejected, is no longer used) */
    ranking_fit fit;             /* the fit at best_level (owned) */
    double best_critical;        /* q (blocked: max(Tukey's at the pooled df, the permutation's)) or the Bonferroni t
                                    (paired); each pair uses Tukey's at its own df or the permutation's, the larger */
    double tukey_critical;       /* Tukey's q_{0.95}(K, pooled df)/√2 (NAN: paired or no df) */
    ranking_perm perm;           /* the best group's permutation calibration */
    ranking_power power;
    ranking_valnoise val;
    int nscreened;
    ranking_screened *screened;  /* (nscreened) every level's screened jobs, level then job id (owned) */
    int nrows;
    ranking_row *rows;           /* (nrows) in rank order: level, ranked, best group first, Δ (τ̂), the sweep's order
                                    (provisional is a column, not a key) */
    json_t *halving;             /* halving settings and spend, or NULL (owned) */
    json_t *racing;              /* racing settings, spend and each schedule's rounds, or NULL (owned; racing.h) */
    json_t *search;              /* a surrogate search's progress and each trained schedule's posterior, or NULL
                                    (owned; search.h) */
} ranking;

/* c as no comparison: every figure NaN, has and n 0 (what a row carries until ranking_compute compares it). */
void ranking_cmp_clear(ranking_cmp *c);

/* Pure: computes ranks, comparisons and the best group of rows[] (already filled with the descriptive fields,
 * level, pruned and the sweep's seeds in r->seeds) from per-level observations obs[lvl][0..nobs[lvl]) whose
 * sched indexes rows[] as given (the sweep's order). Sorts rows[] into rank order. Returns 0 or -1 on no memory. */
int ranking_compute(ranking *r, ranking_obs *const *obs, const int *nobs, int nlevels, int baseline_index);

/* What a design can detect against uniform: K schedules (baseline included), seeds per schedule, m comparisons
 * (the Holm family, usually K − 1), run-to-run sd, the method (blocked: (K−1)(n−1) df; paired: n − 1), and the
 * target effect whose detectability and seeds are reported. Pure; the ranking states it for the sweep at its own
 * estimate of sd and the paper's effect, `prism-sweep power` for a spec before it runs at the user's. */
void ranking_design_power(int K, int seeds, int m, double sd, ranking_method method, double effect, ranking_power *out);

/* The analysis as JSON ("analysis" in docs/API.md). New reference. */
json_t *ranking_analysis_json(const ranking *r);
/* One sentence on what the design can detect, for the table and the page (static-free: into buf). */
void ranking_power_sentence(const ranking *r, char *buf, size_t n);
/* The run of elements of base (n elements of size bytes, sorted ascending by the long long at byte key_off) whose
 * key is id: returns its first index and sets *end one past its last (both the insertion point when none).
 * Binary search, O(log n): the ranking, the leaderboard and its zero-shot columns find each schedule's rows with it. */
size_t ranking_key_range(const void *base, size_t n, size_t size, size_t key_off, long long id, size_t *end);
#endif
