/* fuzz_lease.c — libFuzzer target over the lease parser (common/lease.h): lease_from_json on the input text
 * when it is JSON.
 *
 * Contract checked on every input:
 *   failure ⇒ LEASE_EINVAL, a non-empty NUL-terminated message, no reference held (job, heads NULL);
 *   success ⇒ job is an object, job_id >= 1, attempt >= 0, a non-empty token, stop_at_step >= 0; and
 *             lease_to_json re-serialises it to text that parses back to the same fields (and the same
 *             job and heads values).
 * The same input as a lease REQUEST (lease_filter_from_json): rejected ⇒ a message and the default filter;
 * accepted ⇒ at most LEASE_MAX_TRAINERS distinct valid names, and lease_filter_to_json writes a request that
 * reads back to the same filter.
 * Everything is released, so ASan's leak check sees the references counted right.
 *
 * fuzz_lease_one() is the entry point; tests/unit/test_fuzz_corpus.c replays the seed corpus through it with
 * gcc, and LLVMFuzzerTestOneInput is defined only for the libFuzzer build (-DPRISM_LIBFUZZER, fuzz/run.sh).
 * Returns 1 when the input parsed, 0 when it was rejected.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "lease.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_lease: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static int fl_equal(const lease *a, const lease *b) {
    return a->job_id == b->job_id && a->attempt == b->attempt && strcmp(a->token, b->token) == 0 &&
           a->expires_at == b->expires_at && a->ttl_s == b->ttl_s && a->sweep_id == b->sweep_id &&
           a->schedule_id == b->schedule_id && a->seed == b->seed && a->has_resume == b->has_resume &&
           strcmp(a->resume_checkpoint, b->resume_checkpoint) == 0 && a->resume_step == b->resume_step &&
           a->stop_at_step == b->stop_at_step && json_equal(a->job, b->job) &&
           ((a->heads == NULL && b->heads == NULL) || json_equal(a->heads, b->heads));
}

static void fl_filter(const json_t *obj) {
    lease_filter f, g;
    char err[512];
    err[0] = 0;
    if (lease_filter_from_json(obj, &f, err, sizeof err) != LEASE_OK) {
        FUZZ_CHECK(err[0] != 0 && f.builtin == 1 && f.ntrainers == 0);
        return;
    }
    FUZZ_CHECK(f.ntrainers >= 0 && f.ntrainers <= LEASE_MAX_TRAINERS);
    for (int i = 0; i < f.ntrainers; i++) {
        FUZZ_CHECK(job_trainer_name_ok(f.names[i]));
        for (int k = 0; k < i; k++) FUZZ_CHECK(strcmp(f.names[i], f.names[k]) != 0);
    }
    json_t *body = json_object();
    FUZZ_CHECK(body && lease_filter_to_json(&f, body) == 0);
    FUZZ_CHECK(lease_filter_from_json(body, &g, err, sizeof err) == LEASE_OK);
    FUZZ_CHECK(g.builtin == f.builtin && g.ntrainers == f.ntrainers);
    for (int i = 0; i < f.ntrainers; i++) FUZZ_CHECK(strcmp(f.names[i], g.names[i]) == 0);
    json_decref(body);
}

int fuzz_lease_one(const uint8_t *data, size_t size) {
    json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!obj) return 0;
    fl_filter(obj);
    lease l;
    lease_init(&l);
    char err[512];
    err[0] = 0;
    int rc = lease_from_json(obj, &l, err, sizeof err);
    FUZZ_CHECK(rc == LEASE_OK || rc == LEASE_EINVAL);
    if (rc != LEASE_OK) {
        FUZZ_CHECK(err[0] != 0 && memchr(err, 0, sizeof err) != NULL);
        FUZZ_CHECK(l.job == NULL && l.heads == NULL);
        json_decref(obj);
        return 0;
    }
    FUZZ_CHECK(json_is_object(l.job) && l.job_id >= 1 && l.attempt >= 0 && l.token[0] && l.stop_at_step >= 0);
    FUZZ_CHECK(!l.has_resume || (l.resume_checkpoint[0] && l.resume_step >= 0));
    json_decref(obj);                       /* the lease keeps its own references */
    json_t *o = lease_to_json(&l);
    FUZZ_CHECK(o);
    char *text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    FUZZ_CHECK(text);
    json_decref(o);
    json_t *o2 = json_loads(text, JSON_ALLOW_NUL, NULL);
    if (!o2) fprintf(stderr, "fuzz_lease: the builder wrote text that does not parse: %s\n", text);
    FUZZ_CHECK(o2);
    lease again;
    lease_init(&again);
    rc = lease_from_json(o2, &again, err, sizeof err);
    if (rc) fprintf(stderr, "fuzz_lease: re-parse of %s failed: %s\n", text, err);
    FUZZ_CHECK(rc == LEASE_OK);
    FUZZ_CHECK(fl_equal(&l, &again));
    json_decref(o2);
    free(text);
    lease_release(&again);
    lease_release(&l);
    FUZZ_CHECK(l.job == NULL && l.heads == NULL);
    return 1;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_lease_one(data, size);
    return 0;
}
#endif
