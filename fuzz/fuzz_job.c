/* fuzz_job.c — libFuzzer target over the job JSON parser (common/job.h): job_parse_json on the input text,
 * and job_from_json on the same text when it is a JSON object.
 *
 * Contract checked on every input:
 *   failure ⇒ JOB_EINVAL, a non-empty message, and *out back in job_init() state (nothing to free);
 *   success ⇒ job_validate accepts it, job_to_json re-serialises it, and parsing that text again gives the
 *             same value (the same serialisation and the same fields); job_copy deep-copies it.
 * The same bytes also go through job_parse_heads (the CLI's --heads): failure ⇒ a message; success ⇒
 * 1..JOB_MAX_LAYERS counts in 1..65536 whose job_format_heads text parses back to the same counts.
 * Everything is released, so ASan's leak check sees a leak-free parser.
 *
 * fuzz_job_one() is the entry point; tests/unit/test_fuzz_corpus.c replays the seed corpus through it with
 * gcc, and LLVMFuzzerTestOneInput is defined only for the libFuzzer build (-DPRISM_LIBFUZZER, fuzz/run.sh).
 * Returns 1 when the input parsed, 0 when it was rejected.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "schedule.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_job: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static int fj_is_initial(const struct job_config *j) {
    struct job_config z;
    job_init(&z);
    return memcmp(j, &z, sizeof z) == 0;
}

/* The fields a round trip must keep: every key of job.c's rows (job_equal loops over them). */
static int fj_equal(const struct job_config *a, const struct job_config *b) { return job_equal(a, b); }

static void fj_check_accepted(const struct job_config *job) {
    char err[1024];
    FUZZ_CHECK(job_validate(job, err, sizeof err) == 0);
    FUZZ_CHECK(job->data.train && job->data.val);
    /* tokens per step and per job stay where sums and stored token counts cannot overflow */
    long long per_step = (long long)job->train.batch_size * job->train.seq_len * job->train.grad_accum;
    FUZZ_CHECK(per_step <= JOB_MAX_STEP_TOKENS && per_step * job->train.steps <= JOB_MAX_TOKENS);
    json_t *j1 = job_to_json(job);
    FUZZ_CHECK(j1);
    char *t1 = json_dumps(j1, JSON_SORT_KEYS | JSON_COMPACT);
    FUZZ_CHECK(t1);
    struct job_config again;
    err[0] = 0;
    int rc = job_parse_json(t1, &again, err, sizeof err);
    if (rc) fprintf(stderr, "fuzz_job: re-parse of %s failed: %s\n", t1, err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(fj_equal(job, &again));
    json_t *j2 = job_to_json(&again);
    FUZZ_CHECK(j2);
    char *t2 = json_dumps(j2, JSON_SORT_KEYS | JSON_COMPACT);
    FUZZ_CHECK(t2 && strcmp(t1, t2) == 0);
    struct job_config copy;
    FUZZ_CHECK(job_copy(&copy, job) == 0);
    FUZZ_CHECK(fj_equal(job, &copy));
    FUZZ_CHECK(!job->model.init || copy.model.init != job->model.init);
    job_release(&copy);
    FUZZ_CHECK(fj_is_initial(&copy));
    free(t1);
    free(t2);
    json_decref(j1);
    json_decref(j2);
    job_release(&again);
}

int fuzz_job_one(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    struct job_config job;
    char err[512];
    err[0] = 0;
    int rc = job_parse_json(text, &job, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == JOB_EINVAL);
    if (rc == 0) fj_check_accepted(&job);
    else {
        FUZZ_CHECK(err[0] != 0);
        FUZZ_CHECK(memchr(err, 0, sizeof err) != NULL);
        FUZZ_CHECK(fj_is_initial(&job));
    }
    /* the same text through job_from_json (what the worker does with a lease's "job" member) */
    json_t *obj = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    if (obj) {
        struct job_config j2;
        char err2[512];
        err2[0] = 0;
        int rc2 = job_from_json(obj, &j2, err2, sizeof err2);
        FUZZ_CHECK(rc2 == rc);
        if (rc2 == 0) { FUZZ_CHECK(fj_equal(&job, &j2)); job_release(&j2); }
        else { FUZZ_CHECK(err2[0] != 0); FUZZ_CHECK(strcmp(err, err2) == 0); FUZZ_CHECK(fj_is_initial(&j2)); }
        json_decref(obj);
    }
    /* a NULL error buffer must be fine too */
    struct job_config j3;
    int rc3 = job_parse_json(text, &j3, NULL, 0);
    FUZZ_CHECK(rc3 == rc);
    job_release(&j3);
    job_release(&job);
    /* the CLI's --heads text ("3,3,6,6", "3x2,6x2", "12×6": schedule_parse's grammar) on the same bytes */
    int heads[JOB_MAX_LAYERS];
    char herr[256];
    herr[0] = 0;
    int nh = job_parse_heads(text, heads, JOB_MAX_LAYERS, herr, sizeof herr);
    if (nh < 0) FUZZ_CHECK(herr[0] != 0 && memchr(herr, 0, sizeof herr));
    else {
        FUZZ_CHECK(nh >= 1 && nh <= JOB_MAX_LAYERS);
        for (int l = 0; l < nh; l++) FUZZ_CHECK(heads[l] >= 1 && heads[l] <= SCHEDULE_MAX_DMODEL);
        struct job_config hj;
        job_init(&hj);
        hj.model.n_layer = nh;
        memcpy(hj.model.heads, heads, sizeof(int) * (size_t)nh);
        char buf[JOB_MAX_LAYERS * 9];   /* "1048576," per layer at most */
        job_format_heads(&hj, buf, sizeof buf);
        int again[JOB_MAX_LAYERS];
        FUZZ_CHECK(job_parse_heads(buf, again, JOB_MAX_LAYERS, herr, sizeof herr) == nh);
        FUZZ_CHECK(memcmp(heads, again, sizeof(int) * (size_t)nh) == 0);
    }
    free(text);
    return rc == 0;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_job_one(data, size);
    return 0;
}
#endif
