/* result.h — the checks on a worker's result (result.json) against its job, before it is stored or ranked.
 *
 * Contract:
 * - result_load_limits(job_text, out, err, errlen): the bounds of a job's results from its job JSON (jobs.job):
 *   n_layer, vocab_size, seq_len, train.steps, the largest val loss (JOB_DIVERGED_FACTOR x ln vocab_size) and
 *   the zero-shot task names. Returns 0, or -1 with err naming the problem (*out zeroed). Nothing to free.
 * - result_check(result, lim, err, errlen): 0 when every number the server keeps is present where required,
 *   of its kind and within its bounds, every array element included (an attention-distance array has exactly
 *   n_layer elements), and zero_shot names only the job's tasks with accuracies in [0, 1]; else -1 with err
 *   naming the key (result.attn_distance[2]: ...) and the bound. Unknown keys are kept, unchecked.
 * - result_check_val_loss(lim, what, v, err, errlen): the val-loss bound alone (a halving rung's report).
 */
#ifndef PRISM_RESULT_H
#define PRISM_RESULT_H
#include <jansson.h>
#include <stddef.h>

#define RESULT_MAX_TASKS 32   /* = JOB_MAX_TASKS */

typedef struct result_limits {
    int n_layer, vocab_size, seq_len;
    long long steps;
    double val_loss_max;
    int ntasks;
    char tasks[RESULT_MAX_TASKS][64];
} result_limits;

int result_load_limits(const char *job_text, result_limits *out, char *err, size_t errlen);
int result_check(const json_t *result, const result_limits *lim, char *err, size_t errlen);
int result_check_val_loss(const result_limits *lim, const char *what, double v, char *err, size_t errlen);
#endif
