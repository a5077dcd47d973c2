/* leaderboard_zeroshot.h — the zero-shot columns of the leaderboard: per schedule and task (the names of the
 * jobs' eval.tasks, read from each finished job's result.json "zero_shot"), mean ± std of acc and acc_norm over
 * the seeds that reported the task, and against the uniform baseline Δ acc_norm and Δ acc from the same blocked
 * model as the val-loss ranking (ranking.h), fitted per task and metric.
 *
 * The model. For each task and each metric, y = schedule effect + seed effect + ε by least squares over every
 * (schedule, seed) cell that reported the task (ranking_fit_compute: a missing cell is handled, not dropped).
 * Δ_i = τ̂_i − τ̂_base, SE = the fit's pooled sd · sqrt(Var(τ̂_i − τ̂_base)/σ²), t with the task's residual df,
 * two-sided p, 95% Student-t interval. Every model answers the same items of a task, so the cells are item-paired:
 * an item's difficulty is common to every cell and cancels in Δ. No test (method "none", with the reason) when the
 * task's fit has no residual df (e.g. one seed) or no residual variation (SE 0): Δ is still reported.
 * Holm within each metric over the whole table: the family is every non-baseline schedule of the leaderboard ×
 * every task of the table (comparisons without a test count as p = 1). Marks on the adjusted p only.
 *
 * JSON added to a leaderboard (docs/API.md): top level "zero_shot_tasks": [names, sorted] and
 * "zero_shot_comparisons": the Holm family size (per metric); per row "zero_shot": {task: {"n" (seeds),
 * "items", "items_max", "acc_mean", "acc_std", "acc_norm_mean", "acc_norm_std", "delta", "delta_acc",
 * "acc_norm_char_n" (seeds that reported lm-eval's per-character acc_norm), "acc_norm_char_mean",
 * "acc_norm_char_std" (null without such seeds / with one)}} where
 * delta / delta_acc are {"n" (common seeds), "seeds", "items", "mean", "std", "se", "df", "t", "ci_low",
 * "ci_high", "excludes_zero", "p", "p_holm", "significant", "method", "reason"} or null (baseline, or no
 * comparison: no baseline cell for the task, or no seed linking them).
 */
#ifndef PRISM_LEADERBOARD_ZEROSHOT_H
#define PRISM_LEADERBOARD_ZEROSHOT_H
#include <jansson.h>
#include <stddef.h>
#include "buf.h"
#include "ranking.h"
#include "store.h"

/* A pooled sd at or below this is "no residual variation": accuracies are multiples of 1/items, so a real
 * residual is ≥ ~1e-7 (10^7 items); below 1e-9 the fit is exact up to rounding, and a t of Δ/0 is not a test. */
#define LEADERBOARD_ZS_SD_ZERO 1e-9

typedef enum {
    LEADERBOARD_ZS_TESTED = 0,   /* method "blocked" */
    LEADERBOARD_ZS_NO_DF = 1,    /* method "none": the task's fit has no residual df */
    LEADERBOARD_ZS_SE_ZERO = 2,  /* method "none": residual variation 0 (the cells fit schedule + seed exactly) */
} leaderboard_zs_why;

/* one schedule against the baseline on one task and metric */
typedef struct leaderboard_zs_cmp {
    int has;                     /* Δ exists: both have the task and a seed links them (one component) */
    int seeds;                   /* the schedule's cells in the fit */
    int common;                  /* seeds both have */
    double mean;                 /* Δ = τ̂_i − τ̂_base (positive = the schedule scores higher) */
    double sd;                   /* sd of the paired differences over the common seeds (≥ 2), descriptive; NAN */
    double df;                   /* the task's residual df (0: none) */
    double se;                   /* fit sd · sqrt(Var/σ²); NAN without df (0 with why SE_ZERO) */
    double t, p;                 /* the blocked test; NAN when why != TESTED */
    double ci_low, ci_high;      /* 95%, Student t with df; NAN when why != TESTED */
    leaderboard_zs_why why;
    double p_holm;               /* set by leaderboard_zero_shot_holm; NAN without a test */
    int significant;             /* p_holm < RANKING_ALPHA */
} leaderboard_zs_cmp;

/* Pure (the Monte Carlo tests call it): fits obs[0..nobs) (one task, one metric; sched < nsched) and writes
 * out[0..nsched) against schedule base (out[base] and schedules without data: has = 0). Returns 0, -1 on no
 * memory, -2 with more than RANKING_MAX_SEEDS seeds (out all has = 0). */
int leaderboard_zero_shot_compare(const ranking_obs *obs, int nobs, int nsched, int base, leaderboard_zs_cmp *out);
/* Holm over a family of m comparisons of which cells[0..n) are given (n ≤ m; the rest count as p = 1): sets
 * p_holm and significant of each. Returns the family size used, or -1 on no memory. */
int leaderboard_zero_shot_holm(leaderboard_zs_cmp *const *cells, int n, int m);
/* "blocked" or "none", and the reason in words for why != TESTED (NULL when tested). */
const char *leaderboard_zero_shot_method(leaderboard_zs_why why);
const char *leaderboard_zero_shot_reason(leaderboard_zs_why why);

/* Adds the fields above to lb (leaderboard_build's object, rows carrying "schedule_id"). 0, or STORE_EIO with
 * err set (lb then may hold some of them). Reads only. */
int leaderboard_add_zero_shot(store *st, long long sweep_id, json_t *lb, char *err, size_t errlen);

/* CSV: the extra header cells (per task T: T_acc_mean, T_acc_norm_mean, T_acc_norm_std, T_delta_mean,
 * T_delta_ci_low, T_delta_ci_high, T_delta_p, T_delta_p_holm, T_delta_significant, T_delta_items, T_delta_seeds,
 * T_delta_df, T_delta_method, T_acc_norm_char_mean, T_acc_norm_char_std) and one row's cells, appended to b. 0 or -1 (no memory). */
int leaderboard_zero_shot_csv_header(const json_t *lb, buf *b);
int leaderboard_zero_shot_csv_row(const json_t *lb, const json_t *row, buf *b);
/* The terminal table's zero-shot section (one block per task, rows in leaderboard order), appended to b. */
int leaderboard_zero_shot_table(const json_t *lb, buf *b);
#endif
