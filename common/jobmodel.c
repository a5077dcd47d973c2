/* jobmodel.c — steps, tokens per step and total tokens of a job (see jobmodel.h).
 *
 * Design: the numbers are read off the struct job_config that job.c fills, never off the JSON keys, so the
 * defaults and the validation (tokens per step and in all bounded, so no product here overflows) are job.c's
 * own. The JSON entry points parse with job_from_json and release what it allocated.
 */
#include "jobmodel.h"

#include <string.h>

void jobmodel_sizes(const struct job_config *job, job_sizes *out) {
    const struct job_train *t = &job->train;
    out->steps = t->steps;
    out->tokens_per_step = (long long)t->batch_size * t->seq_len * t->grad_accum;
    out->tokens_total = out->steps * out->tokens_per_step;
}

/* After job_from_json / job_parse_json returned rc into *cfg: the sizes, and cfg released. */
static int sizes_of_parsed(int rc, struct job_config *cfg, job_sizes *out) {
    if (rc < 0) return rc;   /* the parser released cfg; *out stays zeroed */
    jobmodel_sizes(cfg, out);
    job_release(cfg);
    return JOB_OK;
}

int jobmodel_sizes_json(const json_t *obj, job_sizes *out, char *err, size_t errlen) {
    struct job_config cfg;
    memset(out, 0, sizeof *out);
    return sizes_of_parsed(job_from_json(obj, &cfg, err, errlen), &cfg, out);
}

int jobmodel_sizes_text(const char *text, job_sizes *out, char *err, size_t errlen) {
    struct job_config cfg;
    memset(out, 0, sizeof *out);
    return sizes_of_parsed(job_parse_json(text, &cfg, err, errlen), &cfg, out);
}
