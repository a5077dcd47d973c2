/* fuzz_spec.c — libFuzzer target over the sweep-spec parser (orchestrator/spec.h): spec_parse on the input
 * bytes (not NUL-terminated: spec_parse takes a length).
 *
 * Contract checked on every input:
 *   failure ⇒ a negative SPEC_E* code, a non-empty message, and *sp zeroed (nothing to free);
 *   success ⇒ a name, n_layer/d_model in range, 1..SPEC_MAX_SCHEDULES distinct schedules of n_layer heads,
 *             schedule 0 the uniform baseline (h_base everywhere), every schedule passing the hard rules,
 *             1..SPEC_MAX_SEEDS distinct non-negative seeds, and the job JSON of the first and last
 *             (schedule, seed) accepted by the job parser with exactly those heads and that seed.
 * spec_release frees everything (ASan's leak check on).
 *
 * fuzz_spec_one() is the entry point (1 = accepted, 0 = rejected); LLVMFuzzerTestOneInput only with
 * -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "schedule.h"
#include "spec.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_spec: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static int fsp_all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) if (b[i]) return 0;
    return 1;
}

static void fsp_check_job(const sweep_spec *sp, int i, int j) {
    json_t *jj = spec_job_json(sp, i, j);
    FUZZ_CHECK(jj);
    struct job_config job;
    char err[512];
    int rc = job_from_json(jj, &job, err, sizeof err);
    if (rc) fprintf(stderr, "fuzz_spec: job %d x %d refused: %s\n", i, j, err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(job.model.n_layer == sp->n_layer && job.model.d_model == sp->d_model);
    for (int l = 0; l < sp->n_layer; l++) FUZZ_CHECK(job.model.heads[l] == sp->heads[(size_t)i * sp->n_layer + l]);
    FUZZ_CHECK(job.train.seed == (uint64_t)sp->seeds[j]);
    FUZZ_CHECK(job.train.steps == sp->steps);
    job_release(&job);
    json_decref(jj);
}

static void fsp_check_accepted(const sweep_spec *sp) {
    FUZZ_CHECK(sp->root && sp->name[0]);
    int L = sp->n_layer;
    FUZZ_CHECK(L >= 1 && L <= JOB_MAX_LAYERS);   /* every job must be trainable */
    FUZZ_CHECK(sp->rules.L == L && sp->rules.d_model == sp->d_model && sp->rules.h_base >= 1);
    FUZZ_CHECK(sp->n_schedules >= 1 && sp->n_schedules <= SPEC_MAX_SCHEDULES && sp->heads);
    FUZZ_CHECK(sp->n_seeds >= 1 && sp->n_seeds <= SPEC_MAX_SEEDS && sp->seeds);
    FUZZ_CHECK(spec_is_baseline(sp, 0));
    for (int l = 0; l < L; l++) FUZZ_CHECK(sp->heads[l] == sp->rules.h_base);
    /* distinct, and each passes the hard rules */
    json_t *seen = json_object();
    FUZZ_CHECK(seen);
    char *text = malloc((size_t)L * 12 + 16);
    FUZZ_CHECK(text);
    for (int i = 0; i < sp->n_schedules; i++) {
        const int *h = sp->heads + (size_t)i * L;
        FUZZ_CHECK(schedule_validate_hard(&sp->rules, h, L, NULL) == 0);
        FUZZ_CHECK(i == 0 || !spec_is_baseline(sp, i));
        FUZZ_CHECK(schedule_format(h, L, text, (size_t)L * 12 + 16) > 0);
        FUZZ_CHECK(json_object_get(seen, text) == NULL);
        FUZZ_CHECK(json_object_set_new(seen, text, json_true()) == 0);
    }
    free(text);
    json_decref(seen);
    for (int i = 0; i < sp->n_seeds; i++) {
        FUZZ_CHECK(sp->seeds[i] >= 0);
        for (int j = 0; j < i; j++) FUZZ_CHECK(sp->seeds[i] != sp->seeds[j]);
    }
    fsp_check_job(sp, 0, 0);
    fsp_check_job(sp, sp->n_schedules - 1, sp->n_seeds - 1);
}

int fuzz_spec_one(const uint8_t *data, size_t size) {
    /* a private copy with no terminator: spec_parse must honour len */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    memcpy(text, data, size);
    sweep_spec sp;
    char err[600];
    err[0] = 0;
    int rc = spec_parse(text, size, &sp, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == SPEC_EINVAL || rc == SPEC_ENOMEM || rc == SPEC_ETOOBIG);
    if (rc == 0) {
        fsp_check_accepted(&sp);
        FUZZ_CHECK((long long)sp.n_schedules * sp.n_seeds <= SPEC_MAX_JOBS);
        spec_release(&sp);
        /* the server's bound: a small max_jobs refuses before enumerating, and never accepts more */
        int rc2 = spec_parse_max(text, size, 8, &sp, err, sizeof err);
        FUZZ_CHECK(rc2 == 0 || rc2 == SPEC_ETOOBIG || rc2 == SPEC_ENOMEM);
        if (rc2 == 0) FUZZ_CHECK((long long)sp.n_schedules * sp.n_seeds <= 8);
        else FUZZ_CHECK(err[0] != 0 && fsp_all_zero(&sp, sizeof sp));
    }
    else {
        if (!err[0]) fprintf(stderr, "fuzz_spec: rc %d with an empty message\n", rc);
        FUZZ_CHECK(err[0] != 0);
        FUZZ_CHECK(memchr(err, 0, sizeof err) != NULL);
        FUZZ_CHECK(fsp_all_zero(&sp, sizeof sp));
    }
    spec_release(&sp);
    FUZZ_CHECK(fsp_all_zero(&sp, sizeof sp));
    free(text);
    return rc == 0;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_spec_one(data, size);
    return 0;
}
#endif
