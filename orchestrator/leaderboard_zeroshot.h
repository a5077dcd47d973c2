/* leaderboard_zeroshot.h — the zero-shot columns of the leaderboard: per schedule and task (the names of the
 * jobs' eval.tasks, read from each finished job's result.json "zero_shot"), mean ± std of acc and acc_norm over
 * the seeds that reported the task, and against the uniform baseline the paired difference of acc_norm (and of
 * acc) over the seeds both reported, with the same Student-t 95% interval as val loss (leaderboard.h).
 *
 * JSON added to a leaderboard (docs/API.md): top level "zero_shot_tasks": [names, sorted]; per row
 * "zero_shot": {task: {"n", "acc_mean", "acc_std", "acc_norm_mean", "acc_norm_std", "delta", "delta_acc"}} where
 * delta / delta_acc are {"n","mean","std","ci_low","ci_high","excludes_zero"} or null (baseline, or no pair).
 */
#ifndef PRISM_LEADERBOARD_ZEROSHOT_H
#define PRISM_LEADERBOARD_ZEROSHOT_H
#include <jansson.h>
#include <stddef.h>
#include "buf.h"
#include "store.h"

/* Adds the fields above to lb (leaderboard_build's object, rows carrying "schedule_id"). 0, or STORE_EIO with
 * err set (lb then may hold some of them). Reads only. */
int leaderboard_add_zero_shot(store *st, long long sweep_id, json_t *lb, char *err, size_t errlen);

/* CSV: the extra header cells (",T_acc_mean,T_acc_norm_mean,T_acc_norm_std,T_delta_mean,T_delta_ci_low,
 * T_delta_ci_high" per task T) and one row's cells, appended to b. 0 or -1 (no memory). */
int leaderboard_zero_shot_csv_header(const json_t *lb, buf *b);
int leaderboard_zero_shot_csv_row(const json_t *lb, const json_t *row, buf *b);
/* The terminal table's zero-shot section (one block per task, rows in leaderboard order), appended to b. */
int leaderboard_zero_shot_table(const json_t *lb, buf *b);
#endif
