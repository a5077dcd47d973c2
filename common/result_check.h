/* result_check.h — the checks on a worker's result (result.json) against its job, before it is stored or ranked:
 * one table of rules shared by the server (orchestrator/queue.c, POST .../complete) and the worker (worker/agent.c,
 * before it sends complete), so a result the worker reports is one the server takes, and a result the server would
 * refuse fails its job at once with the rule's message instead of leaving it leased until the TTL.
 *
 * Contract:
 * - result_load_limits(job_text, out, err, errlen): the bounds of a job's results from its job JSON (jobs.job):
 *   n_layer, vocab_size, seq_len, train.steps, the largest val loss (JOB_DIVERGED_FACTOR x ln vocab_size) and
 *   the zero-shot task names. Returns 0, or -1 with err naming the problem (*out zeroed). Nothing to free.
 * - result_check(result, lim, err, errlen): 0 when every number the server keeps is present where required,
 *   of its kind and within its bounds, every array element included (an attention-distance array has exactly
 *   n_layer elements), and zero_shot names only the job's tasks with accuracies in [0, 1]; else -1 with err
 *   naming the key (result.attn_distance[2]: ...) and the bound. Unknown keys are kept, unchecked.
 * - result_limits_from_job(job, out): the same bounds from a parsed job (the worker's). Nothing to free.
 * - result_check_val_loss(lim, what, v, err, errlen): the val-loss bound alone (a halving rung's report).
 * - result_check_scores(v, what, capped, err, errlen): one zero-shot task's scores (v an object): acc and acc_norm
 *   numbers in [0, 1], acc_norm_char (lm-eval's per-character acc_norm; optional) a number in [0, 1] when present
 *   and not null, n and truncated (when present, not null) integers >= 0 (capped: at most 1e9). 0, or -1
 *   with err "WHAT.acc: must be a number in [0, 1]" (the val line's check, worker/extrun_line.c, shares it).
 * - result_diverged(result, lim): 1 when the result's val_loss is a finite number above lim->val_loss_max (the run
 *   diverged: a failure of the job's own, reported as "diverged: ..."), else 0.
 * - result_error_is_outcome(error): 1 when a job's error text (POST .../fail "error") is an outcome of the job
 *   itself rather than of the worker that ran it: a divergence ("diverged: ...") or a loss that is not finite
 *   ("loss is not finite: ..."), the prefixes worker/train.c's train_strerror gives them. Neither fail limit
 *   (the worker's --fail-limit, the server's --worker-fail-limit) counts such a failure: the job trained.
 */
#ifndef PRISM_RESULT_CHECK_H
#define PRISM_RESULT_CHECK_H
#include <jansson.h>
#include <stddef.h>

#define RESULT_MAX_TASKS 32   /* = JOB_MAX_TASKS */
#define RESULT_ERR_DIVERGED "diverged"            /* the error prefixes of a job's own outcome (train_strerror) */
#define RESULT_ERR_NOT_FINITE "loss is not finite"

struct job_config;

typedef struct result_limits {
    int n_layer, vocab_size, seq_len;
    long long steps;
    double val_loss_max;
    int ntasks;
    char tasks[RESULT_MAX_TASKS][64];
} result_limits;

int result_load_limits(const char *job_text, result_limits *out, char *err, size_t errlen);
int result_check(const json_t *result, const result_limits *lim, char *err, size_t errlen);
void result_limits_from_job(const struct job_config *job, result_limits *out);
int result_diverged(const json_t *result, const result_limits *lim);
int result_error_is_outcome(const char *error);
int result_check_scores(const json_t *v, const char *what, int capped, char *err, size_t errlen);
int result_check_val_loss(const result_limits *lim, const char *what, double v, char *err, size_t errlen);
#endif
