/* jobmodel.h — the numbers the orchestrator needs about a job: how many steps it trains, how many tokens
 * one step takes, and how many tokens it takes in all. One definition, shared by everything that counts
 * progress or tokens (job creation, the lease, metrics, the sweep summary, halving's tokens spent), so no
 * caller reads "train.steps" or multiplies batch_size x seq_len x grad_accum out of the JSON by itself.
 *
 * The numbers come from the job as common/job.c parses it, so its defaults apply: train.steps 100,
 * train.batch_size 8, train.seq_len = model.seq_len, train.grad_accum 1.
 *
 * Contract:
 * - jobmodel_sizes(job, out) fills *out from a parsed, valid job (job_from_json / job_validate passed).
 *   Never fails; no allocation.
 * - jobmodel_sizes_json(obj, out, err, errlen) and jobmodel_sizes_text(text, ...) parse the job JSON with
 *   job_from_json and fill *out. Return 0, or JOB_EINVAL with err naming the problem (the job module's
 *   message) and *out zeroed. Nothing to free either way.
 */
#ifndef PRISM_JOBMODEL_H
#define PRISM_JOBMODEL_H
#include <jansson.h>
#include <stddef.h>

#include "job.h"

typedef struct job_sizes {
    long long steps;            /* train.steps: optimizer updates */
    long long tokens_per_step;  /* train.batch_size x train.seq_len x train.grad_accum (<= JOB_MAX_STEP_TOKENS) */
    long long tokens_total;     /* steps x tokens_per_step (<= JOB_MAX_TOKENS) */
} job_sizes;

void jobmodel_sizes(const struct job_config *job, job_sizes *out);
int jobmodel_sizes_json(const json_t *obj, job_sizes *out, char *err, size_t errlen);
int jobmodel_sizes_text(const char *text, job_sizes *out, char *err, size_t errlen);
#endif
