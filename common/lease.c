/* lease.c — build and read the lease wrapper (see lease.h for the format and the contract).
 *
 * Design: the lease is the one message whose shape both programs depend on, so its keys are written down
 * once, here: lease_to_json writes them with json_pack, lease_from_json reads them back key by key in a
 * fixed order (the identifying keys first, so a caller can still name the job after a later key fails).
 * Every error starts with the key it is about and says what was expected and what came. The job JSON is
 * carried as a reference, never parsed here: job_from_json (job.c) owns that format.
 */
#include "lease.h"

#include "job.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

void lease_init(lease *l) {
    memset(l, 0, sizeof *l);
}

void lease_release(lease *l) {
    json_decref(l->job);
    json_decref(l->heads);
    lease_init(l);
}

json_t *lease_to_json(const lease *l) {
    if (!l->job) return NULL;
    json_t *o = json_pack("{s:I, s:I, s:s, s:f, s:f, s:I, s:I, s:I, s:O}",
                          "job_id", (json_int_t)l->job_id, "attempt", (json_int_t)l->attempt,
                          "lease_token", l->token, "lease_expires_at", l->expires_at, "lease_ttl_s", l->ttl_s,
                          "sweep_id", (json_int_t)l->sweep_id, "schedule_id", (json_int_t)l->schedule_id,
                          "seed", (json_int_t)l->seed, "job", l->job);
    if (!o) return NULL;
    int bad = 0;
    if (l->heads) bad |= json_object_set(o, "heads", l->heads);
    if (l->has_resume)
        bad |= json_object_set_new(o, "resume", json_pack("{s:s, s:I}", "checkpoint", l->resume_checkpoint,
                                                          "step", (json_int_t)l->resume_step));
    if (l->stop_at_step > 0) bad |= json_object_set_new(o, "stop_at_step", json_integer(l->stop_at_step));
    if (l->sweep_jobs > 0) {
        bad |= json_object_set_new(o, "sweep_done", json_integer(l->sweep_done));
        bad |= json_object_set_new(o, "sweep_jobs", json_integer(l->sweep_jobs));
    }
    if (bad) { json_decref(o); return NULL; }
    return o;
}

static const char *lease_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Reads integer key `name` of obj into *out when it lies in [min, max]. Absent: -1 when required (err set),
 * else 0 with *out untouched. */
static int lease_get_int(const json_t *obj, const char *name, const char *label, long long min, long long max,
                         int required, long long *out, char *err, size_t errlen) {
    json_t *v = json_object_get(obj, name);
    if (!v) {
        if (!required) return 0;
        snprintf(err, errlen, "%s: missing (an integer >= %lld is required)", label, min);
        return -1;
    }
    if (!json_is_integer(v)) {
        snprintf(err, errlen, "%s: must be an integer, got %s", label, lease_type_name(v));
        return -1;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        snprintf(err, errlen, "%s: must be in %lld..%lld, got %lld", label, min, max, (long long)x);
        return -1;
    }
    *out = x;
    return 0;
}

/* Reads number key `name` (integer or real) when present. */
static int lease_get_num(const json_t *obj, const char *name, double *out, char *err, size_t errlen) {
    json_t *v = json_object_get(obj, name);
    if (!v) return 0;
    if (!json_is_number(v)) {
        snprintf(err, errlen, "%s: must be a number, got %s", name, lease_type_name(v));
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* Copies non-empty string key `name` into buf (cap bytes with the NUL). */
static int lease_get_str(const json_t *obj, const char *name, const char *label, char *buf, size_t cap, char *err,
                         size_t errlen) {
    json_t *v = json_object_get(obj, name);
    if (!v) { snprintf(err, errlen, "%s: missing (a non-empty string is required)", label); return -1; }
    if (!json_is_string(v)) { snprintf(err, errlen, "%s: must be a string, got %s", label, lease_type_name(v)); return -1; }
    size_t n = json_string_length(v);
    if (n == 0) { snprintf(err, errlen, "%s: must not be empty", label); return -1; }
    if (n >= cap || strlen(json_string_value(v)) != n) {
        snprintf(err, errlen, "%s: must be at most %zu bytes without NUL bytes, got %zu bytes", label, cap - 1, n);
        return -1;
    }
    memcpy(buf, json_string_value(v), n + 1);
    return 0;
}

int lease_from_json(const json_t *obj, lease *l, char *err, size_t errlen) {
    long long v;
    json_t *x;
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "lease: must be a JSON object, got %s", obj ? lease_type_name(obj) : "nothing");
        return LEASE_EINVAL;
    }
    if (lease_get_int(obj, "job_id", "job_id", 1, LLONG_MAX, 1, &v, err, errlen)) goto fail;
    l->job_id = v;
    if (lease_get_int(obj, "attempt", "attempt", 0, INT_MAX, 1, &v, err, errlen)) goto fail;
    l->attempt = (int)v;
    if (lease_get_str(obj, "lease_token", "lease_token", l->token, sizeof l->token, err, errlen)) goto fail;
    x = json_object_get(obj, "job");
    if (!x) { snprintf(err, errlen, "job: missing (the job JSON object is required)"); goto fail; }
    if (!json_is_object(x)) { snprintf(err, errlen, "job: must be an object, got %s", lease_type_name(x)); goto fail; }
    if (lease_get_num(obj, "lease_expires_at", &l->expires_at, err, errlen)) goto fail;
    if (lease_get_num(obj, "lease_ttl_s", &l->ttl_s, err, errlen)) goto fail;
    if (lease_get_int(obj, "sweep_id", "sweep_id", LLONG_MIN, LLONG_MAX, 0, &l->sweep_id, err, errlen)) goto fail;
    if (lease_get_int(obj, "schedule_id", "schedule_id", LLONG_MIN, LLONG_MAX, 0, &l->schedule_id, err, errlen)) goto fail;
    if (lease_get_int(obj, "seed", "seed", LLONG_MIN, LLONG_MAX, 0, &l->seed, err, errlen)) goto fail;
    json_t *heads = json_object_get(obj, "heads");
    if (heads && !json_is_array(heads)) {
        snprintf(err, errlen, "heads: must be an array, got %s", lease_type_name(heads));
        goto fail;
    }
    json_t *r = json_object_get(obj, "resume");
    if (r) {
        if (!json_is_object(r)) { snprintf(err, errlen, "resume: must be an object, got %s", lease_type_name(r)); goto fail; }
        if (lease_get_str(r, "checkpoint", "resume.checkpoint", l->resume_checkpoint, sizeof l->resume_checkpoint, err,
                          errlen)) goto fail;
        if (lease_get_int(r, "step", "resume.step", 0, LLONG_MAX, 1, &l->resume_step, err, errlen)) goto fail;
        l->has_resume = 1;
    }
    v = 0;
    if (lease_get_int(obj, "stop_at_step", "stop_at_step", 0, INT_MAX, 0, &v, err, errlen)) goto fail;
    l->stop_at_step = (int)v;
    if (lease_get_int(obj, "sweep_done", "sweep_done", 0, LLONG_MAX, 0, &l->sweep_done, err, errlen)) goto fail;
    if (lease_get_int(obj, "sweep_jobs", "sweep_jobs", 0, LLONG_MAX, 0, &l->sweep_jobs, err, errlen)) goto fail;
    l->job = json_incref(x);
    l->heads = json_incref(heads);
    return LEASE_OK;
fail: ;
    /* keep what names the job (read first), drop the rest */
    long long id = l->job_id;
    int attempt = l->attempt;
    char token[LEASE_TOKEN_MAX];
    memcpy(token, l->token, sizeof token);
    lease_release(l);
    l->job_id = id;
    l->attempt = attempt;
    memcpy(l->token, token, sizeof token);
    return LEASE_EINVAL;
}

/* ---- the lease request's filter ------------------------------------------------------------------- */

_Static_assert(sizeof ((lease_filter *)0)->names[0] == JOB_TRAINER_MAX, "trainer names: one size on both sides");

void lease_filter_init(lease_filter *f) {
    memset(f, 0, sizeof *f);
    f->builtin = 1;
}

int lease_filter_to_json(const lease_filter *f, json_t *body) {
    json_t *names = json_array();
    if (!names) return -1;
    for (int i = 0; i < f->ntrainers; i++)
        if (json_array_append_new(names, json_string(f->names[i])) < 0) { json_decref(names); return -1; }
    if (json_object_set_new(body, "trainers", names) < 0) return -1;
    if (!f->builtin && json_object_set_new(body, "builtin", json_false()) < 0) return -1;
    return 0;
}

int lease_filter_from_json(const json_t *body, lease_filter *f, char *err, size_t errlen) {
    lease_filter_init(f);
    json_t *b = json_object_get(body, "builtin");
    if (b && !json_is_boolean(b)) {
        snprintf(err, errlen, "builtin: must be true or false, got %s", lease_type_name(b));
        return LEASE_EINVAL;
    }
    int builtin = b ? json_is_true(b) : 1;
    json_t *t = json_object_get(body, "trainers");
    if (t && !json_is_array(t)) {
        snprintf(err, errlen, "trainers: must be an array of trainer names, got %s", lease_type_name(t));
        return LEASE_EINVAL;
    }
    size_t n = t ? json_array_size(t) : 0;
    if (n > LEASE_MAX_TRAINERS) {
        snprintf(err, errlen, "trainers: at most %d names, got %zu", LEASE_MAX_TRAINERS, n);
        return LEASE_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(t, i);
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (!s || strlen(s) != json_string_length(v) || !job_trainer_name_ok(s)) {
            snprintf(err, errlen, "trainers[%zu]: must be a trainer name (1-63 of [A-Za-z0-9._-], not starting with . "
                     "or -), got %s", i, s ? "another string" : lease_type_name(v));
            lease_filter_init(f);
            return LEASE_EINVAL;
        }
        for (int k = 0; k < f->ntrainers; k++)
            if (strcmp(f->names[k], s) == 0) {
                snprintf(err, errlen, "trainers[%zu]: \"%s\" repeats trainers[%d]", i, s, k);
                lease_filter_init(f);
                return LEASE_EINVAL;
            }
        snprintf(f->names[f->ntrainers++], sizeof f->names[0], "%s", s);
    }
    f->builtin = builtin;
    return LEASE_OK;
}
