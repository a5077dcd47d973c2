/* extrun_line.c — one line of an external trainer's fd-3 protocol, checked (docs/TRAINERS.md; extrun_line.h).
 *
 * Design. Pure and stateless (fuzzed: fuzz/fuzz_extrun.c): a line is one JSON object whose "event" names a row
 * of EVENTS (its keys: a train or val line's are common/point.h's rows that carry it, then the row's own), so the
 * unknown-key and required-key checks, and `prism-worker schema --json`'s "events", are loops over those rows.
 * The step range is the job's (extrun_limits); each event's own values are checked by one function per event.
 * The order of lines (steps increasing, one terminal line) is the run's: worker/extrun.c.
 */
#include "extrun_line.h"

#include "jobresult.h"
#include "logesc.h"
#include "point.h"
#include "result_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void extrun_line_release(extrun_line *l) {
    json_decref(l->row);
    json_decref(l->result);
    l->row = l->result = NULL;
}

/* Keys a result may not carry: the job, attempt, lease and worker are the worker's and the server's to name
 * (the complete call's URL and lease token say which job it is), and "backend" describes the built-in CUDA
 * engine's library, which an external trainer does not run. Refused rather than overwritten: a trainer that
 * sends them means something by them, and a silent rewrite would hide the mistake. */
static const char *const EXTRUN_RESULT_RESERVED[] = {"job", "job_id", "sweep_id", "schedule_id", "attempt",
                                                     "lease_token", "worker", "worker_id", "backend",
                                                     JOBRESULT_KEY_TRAINER_COMMAND, JOBRESULT_KEY_TRAINER_VERSION, NULL};

/* The keys each event may have (besides "event"): a train or val line's are the point's rows that carry it
 * (common/point.h POINT_FIELDS, `lines`), then `keys`; the first `req` of them all are required. */
static const struct extrun_event {
    const char *name;
    int kind, req, point_lines;
    const char *keys[8];
} EVENTS[] = {
    {"train", EXTRUN_EV_TRAIN, 2, POINT_ON_TRAIN, {NULL}},
    {"val", EXTRUN_EV_VAL, 2, POINT_ON_VAL, {"zero_shot", NULL}},
    {"checkpoint", EXTRUN_EV_CHECKPOINT, 2, 0, {"step", "path", NULL}},
    {"paused", EXTRUN_EV_PAUSED, 2, 0, {"step", "val_loss", NULL}},
    {"preempted", EXTRUN_EV_PREEMPTED, 1, 0, {"step", NULL}},
    {"result", EXTRUN_EV_RESULT, 1, 0, {"result", NULL}},
    {"heartbeat", EXTRUN_EV_HEARTBEAT, 0, 0, {NULL}},                       /* keep-alive: the trainer is busy */
    {"failed", EXTRUN_EV_FAILED, 1, 0, {"reason", "retryable", "message", NULL}},   /* the trainer says why it fails */
    {"start", EXTRUN_EV_START, 0, 0, {"version", NULL}},
};
#define NEVENTS (int)(sizeof EVENTS / sizeof EVENTS[0])

/* The i-th key event E may have, NULL past the last. */
static const char *event_key(const struct extrun_event *E, int i) {
    for (int p = 0; p < POINT_NKEYS; p++)
        if (POINT_KEYS[p].lines & E->point_lines) { if (i-- == 0) return POINT_KEYS[p].key; }
    return E->keys[i];
}

json_t *extrun_schema_json(void) {
    json_t *o = json_object(), *res = json_array();
    if (!o || !res || json_object_set_new(o, "result_reserved", res) < 0) { json_decref(o); return NULL; }
    for (int r = 0; EXTRUN_RESULT_RESERVED[r]; r++) json_array_append_new(res, json_string(EXTRUN_RESULT_RESERVED[r]));
    json_t *evs = json_object();
    if (!evs || json_object_set_new(o, "events", evs) < 0) { json_decref(o); return NULL; }
    for (int e = 0; e < NEVENTS; e++) {
        json_t *req = json_array(), *opt = json_array();
        const char *k;
        for (int i = 0; (k = event_key(&EVENTS[e], i)); i++) json_array_append_new(i < EVENTS[e].req ? req : opt, json_string(k));
        if (json_object_set_new(evs, EVENTS[e].name, json_pack("{s:o, s:o}", "required", req, "optional", opt)) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* A number key: required or optional (absent or null: *has = 0). Finite is guaranteed by jansson (it refuses
 * NaN, Infinity and overflowing literals), checked anyway. */
static int extrun_num(const json_t *o, const char *ev, const char *key, int required, double lo, double *out,
                      int *has, char *err, size_t errlen) {
    json_t *v = json_object_get(o, key);
    if (has) *has = 0;
    if (!v || json_is_null(v)) {
        if (!required) return 0;
        snprintf(err, errlen, "%s: %s: required (a number)", ev, key);
        return -1;
    }
    if (!json_is_number(v)) { snprintf(err, errlen, "%s: %s: must be a number, got %s", ev, key, job_json_type(v)); return -1; }
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo) { snprintf(err, errlen, "%s: %s: must be a finite number >= %g, got %g", ev, key, lo, x); return -1; }
    *out = x;
    if (has) *has = 1;
    return 0;
}

/* A final val line's zero_shot, as the built-in engine writes it: {task: {"acc", "acc_norm" in [0, 1], "n",
 * "truncated" integers >= 0 when present, "acc_norm_char" in [0, 1] when present}}. The server checks the result's copy against the job's task names. */
static int extrun_zero_shot(const json_t *zs, char *err, size_t errlen) {
    if (!json_is_object(zs)) {
        snprintf(err, errlen, "val: zero_shot: must be an object {task: {acc, acc_norm, n, truncated}}, got %s", job_json_type(zs));
        return -1;
    }
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)zs, name, v) {
        char esc[160];
        log_escape(esc, sizeof esc, name);
        if (!json_is_object(v)) { snprintf(err, errlen, "val: zero_shot.%s: must be an object {acc, acc_norm, n, truncated}", esc); return -1; }
        char what[200];
        snprintf(what, sizeof what, "val: zero_shot.%s", esc);
        if (result_check_scores(v, what, 0, err, errlen)) return -1;   /* the server's own rule (common/result_check.h) */
    }
    return 0;
}

/* A train or val line's (or a result's) own metrics, "extra": {name: number}, checked by the server's own rule
 * (common/point.h point_extra_check) and copied into the metrics row. Absent or null: nothing. 0 or -1 with err. */
static int extrun_extra(const json_t *o, const char *where, json_t *row, char *err, size_t errlen) {
    json_t *ex = json_object_get(o, POINT_KEY_EXTRA);
    if (!ex || json_is_null(ex)) return 0;
    if (point_extra_check(ex, where, err, errlen) < 0) return -1;
    if (!json_object_size(ex)) return 0;   /* {}: none */
    if (row && json_object_set_new(row, POINT_KEY_EXTRA, json_deep_copy(ex)) < 0) { snprintf(err, errlen, "out of memory"); return -1; }
    return 0;
}

/* Every key of a result, at any depth, at most EXTRUN_KEY_MAX bytes, none reserved at the top. 0 or -1 with err. */
static int extrun_result_keys(const json_t *v, int depth, char *err, size_t errlen) {
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_array(v)) {
        json_array_foreach((json_t *)v, i, x) if (extrun_result_keys(x, depth + 1, err, errlen)) return -1;
        return 0;
    }
    if (!json_is_object(v)) return 0;
    json_object_foreach((json_t *)v, k, x) {
        char esc[160];
        if (strlen(k) > EXTRUN_KEY_MAX) {
            snprintf(err, errlen, "result: a key of %zu bytes (\"%.40s...\"): keys are at most %d bytes", strlen(k),
                     log_escape(esc, sizeof esc, k), EXTRUN_KEY_MAX);
            return -1;
        }
        for (int r = 0; depth == 0 && EXTRUN_RESULT_RESERVED[r]; r++)
            if (strcmp(k, EXTRUN_RESULT_RESERVED[r]) == 0) {
                snprintf(err, errlen, "result: result.%s: a trainer may not set it (the worker and the server know "
                         "which job, attempt, worker and backend this is; the trainer's command and version are the "
                         "worker's to record: declare the version in a start line)", k);
                return -1;
            }
        if (extrun_result_keys(x, depth + 1, err, errlen)) return -1;
    }
    return 0;
}

/* A train or val line's optional point keys (common/point.h's rows that carry it, `lines`: numbers at or above
 * their lower bound, tokens an integer >= 0, extra by its rule) copied into the metrics row. 0 or -1 with err. */
static int extrun_point_keys(const json_t *o, const char *ev, int lines, json_t *row, char *err, size_t errlen) {
    for (int i = 0; i < POINT_NKEYS; i++) {
        const point_key *k = &POINT_KEYS[i];
        if (!(k->lines & lines)) continue;
        if (k->cls == POINT_C_OPT) {
            double x;
            int has;
            if (extrun_num(o, ev, k->key, 0, k->lo, &x, &has, err, errlen)) return -1;
            if (has && row) json_object_set_new(row, k->key, json_real(x));
        } else if (k->cls == POINT_C_TOKENS) {
            json_t *tk = json_object_get(o, k->key);
            if (!tk || json_is_null(tk)) continue;
            if (!json_is_integer(tk) || json_integer_value(tk) < 0) {
                snprintf(err, errlen, "%s: %s: must be an integer >= 0, got %s", ev, k->key, job_json_type(tk));
                return -1;
            }
            if (row) json_object_set_new(row, k->key, json_integer(json_integer_value(tk)));
        } else if (k->cls == POINT_C_EXTRA && extrun_extra(o, ev, row, err, errlen))
            return -1;
    }
    return 0;
}

/* The row of the line's "event" (err naming the known ones when it has none or an unknown one), or NULL. */
static const struct extrun_event *extrun_line_event(const json_t *o, char *err, size_t errlen) {
    json_t *ev = json_object_get(o, "event");
    if (!json_is_string(ev)) {
        snprintf(err, errlen, "event: required string (start, train, val, checkpoint, paused, preempted, result, "
                 "heartbeat, failed)%s",
                 ev ? ", got another type" : "");
        return NULL;
    }
    const struct extrun_event *E = NULL;
    for (int i = 0; i < NEVENTS; i++) if (strcmp(EVENTS[i].name, json_string_value(ev)) == 0) E = &EVENTS[i];
    if (!E) {
        char esc[160];
        snprintf(err, errlen, "event: unknown event \"%s\" (known: start train val checkpoint paused preempted "
                 "result heartbeat failed)",
                 log_escape(esc, sizeof esc, json_string_value(ev)));
    }
    return E;
}

/* Only E's keys, and its required ones not absent or null. 0 or -1 with err. */
static int extrun_line_keys(json_t *o, const struct extrun_event *E, char *err, size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (strcmp(k, "event") == 0) continue;
        int known = 0;
        const char *q;
        for (int i = 0; (q = event_key(E, i)); i++) known |= strcmp(q, k) == 0;
        if (!known) {
            char esc[160];
            int n = snprintf(err, errlen, "%s: unknown key \"%s\" (known:", E->name, log_escape(esc, sizeof esc, k));
            for (int i = 0; (q = event_key(E, i)) && n > 0 && (size_t)n < errlen; i++) n += snprintf(err + n, errlen - n, " %s", q);
            if (n > 0 && (size_t)n < errlen) snprintf(err + n, errlen - n, ")");
            return -1;
        }
    }
    for (int i = 0; i < E->req; i++)
        if (!json_object_get(o, event_key(E, i)) || json_is_null(json_object_get(o, event_key(E, i)))) {
            snprintf(err, errlen, "%s: %s: required", E->name, event_key(E, i));
            return -1;
        }
    return 0;
}

/* A train, val, checkpoint, paused or preempted line's step: an integer in 0..lim->steps (train: below it). */
static int extrun_line_step(const json_t *o, const struct extrun_event *E, const extrun_limits *lim, extrun_line *out,
                            char *err, size_t errlen) {
    json_t *st = json_object_get(o, "step");
    long long top = E->kind == EXTRUN_EV_TRAIN ? lim->steps - 1 : lim->steps;
    if (!json_is_integer(st) || json_integer_value(st) < 0 || json_integer_value(st) > top) {
        if (json_is_integer(st))
            snprintf(err, errlen, "%s: step: %lld is outside 0..%lld (the job's train.steps is %lld%s)", E->name,
                     (long long)json_integer_value(st), top, lim->steps,
                     E->kind == EXTRUN_EV_TRAIN ? "; a train step is the 0-based step just finished" : "");
        else snprintf(err, errlen, "%s: step: must be an integer, got %s", E->name, job_json_type(st));
        return -1;
    }
    out->step = json_integer_value(st);
    return 0;
}

static int extrun_line_train(const json_t *o, extrun_line *out, char *err, size_t errlen) {
    if (extrun_num(o, "train", "train_loss", 1, -INFINITY, &out->train_loss, NULL, err, errlen)) return -1;
    out->row = json_pack("{s:I, s:f}", "step", (json_int_t)out->step, "train_loss", out->train_loss);
    return extrun_point_keys(o, "train", POINT_ON_TRAIN, out->row, err, errlen);
}

static int extrun_line_val(const json_t *o, const extrun_limits *lim, extrun_line *out, char *err, size_t errlen) {
    if (extrun_num(o, "val", "val_loss", 1, -INFINITY, &out->val_loss, NULL, err, errlen)) return -1;
    out->row = json_pack("{s:I, s:f}", "step", (json_int_t)out->step, "val_loss", out->val_loss);
    if (extrun_point_keys(o, "val", POINT_ON_VAL, out->row, err, errlen)) return -1;
    json_t *se = json_object_get(out->row, POINT_KEY_VAL_LOSS_SE);
    if ((out->has_val_loss_se = se != NULL)) out->val_loss_se = json_real_value(se);
    json_t *zs = json_object_get(o, "zero_shot");
    if (zs && !json_is_null(zs)) {   /* the built-in's last val point carries it (worker/train.c run_finish) */
        if (out->step != lim->steps) {
            snprintf(err, errlen, "val: zero_shot: only on the final val line (step = train.steps %lld), got step %lld",
                     lim->steps, out->step);
            return -1;
        }
        if (extrun_zero_shot(zs, err, errlen)) return -1;
        if (out->row) json_object_set_new(out->row, "zero_shot", json_deep_copy(zs));
    }
    return 0;
}

static int extrun_line_checkpoint(const json_t *o, extrun_line *out, char *err, size_t errlen) {
    json_t *p = json_object_get(o, "path");
    size_t n = json_is_string(p) ? json_string_length(p) : 0;
    if (!json_is_string(p) || n == 0 || n >= sizeof out->path || strlen(json_string_value(p)) != n) {
        snprintf(err, errlen, "checkpoint: path: must be a non-empty path (under %d bytes, no NUL) inside "
                 "PRISM_OUT, got %s", (int)sizeof out->path, job_json_type(p));
        return -1;
    }
    memcpy(out->path, json_string_value(p), n + 1);
    return 0;
}

/* who this is: an optional version string, recorded with the result */
static int extrun_line_start(const json_t *o, extrun_line *out, char *err, size_t errlen) {
    json_t *v = json_object_get(o, "version");
    if (!v || json_is_null(v)) return 0;
    const char *s = json_string_value(v);
    size_t n = s ? json_string_length(v) : 0;
    int ok = s && n >= 1 && n <= EXTRUN_VERSION_MAX && strlen(s) == n;
    for (size_t i = 0; ok && i < n; i++) ok = s[i] >= 0x20 && s[i] < 0x7f;
    if (!ok) {
        snprintf(err, errlen, "start: version: must be a string of 1-%d printable ASCII characters "
                 "(\"1.4.2\", a git hash), got %s", EXTRUN_VERSION_MAX, json_is_string(v) ? "another string" :
                 job_json_type(v));
        return -1;
    }
    memcpy(out->version, s, n + 1);
    return 0;
}

static int extrun_line_result(const json_t *o, const extrun_limits *lim, extrun_line *out, char *err, size_t errlen) {
    json_t *r = json_object_get(o, "result");
    if (!json_is_object(r)) { snprintf(err, errlen, "result: result: must be an object, got %s", job_json_type(r)); return -1; }
    if (extrun_result_keys(r, 0, err, errlen)) return -1;
    if (extrun_extra(r, "result: result", NULL, err, errlen)) return -1;
    json_t *vl = json_object_get(r, "val_loss");
    if (!vl) vl = json_object_get(r, "final_val_loss");
    if (!json_is_number(vl)) {
        snprintf(err, errlen, "result: result.val_loss: required (a number; the keys of the built-in engine's "
                 "result.json)");
        return -1;
    }
    json_t *st = json_object_get(r, "steps");
    if (st && (!json_is_integer(st) || json_integer_value(st) != lim->steps)) {
        snprintf(err, errlen, "result: result.steps: must be the job's train.steps %lld", lim->steps);
        return -1;
    }
    out->val_loss = json_number_value(vl);
    out->result = json_incref(r);
    return 0;
}

static int extrun_line_failed(const json_t *o, extrun_line *out, char *err, size_t errlen) {
    /* reason: a word (oom, diverged, nccl, ...), as a trainer name is spelled, so it reads safely in an error */
    json_t *rs = json_object_get(o, "reason"), *rt = json_object_get(o, "retryable"), *m = json_object_get(o, "message");
    if (!json_is_string(rs) || !job_trainer_name_ok(json_string_value(rs))) {
        snprintf(err, errlen, "failed: reason: must be a word of 1-63 [A-Za-z0-9._-] (oom, diverged, nccl, ...), "
                 "got %s", json_is_string(rs) ? "another string" : job_json_type(rs));
        return -1;
    }
    if (rt && !json_is_null(rt) && !json_is_boolean(rt)) {
        snprintf(err, errlen, "failed: retryable: must be true or false, got %s", job_json_type(rt));
        return -1;
    }
    if (m && !json_is_null(m) && !json_is_string(m)) {
        snprintf(err, errlen, "failed: message: must be a string, got %s", job_json_type(m));
        return -1;
    }
    snprintf(out->reason, sizeof out->reason, "%s", json_string_value(rs));
    out->retryable = json_is_true(rt);
    if (json_is_string(m)) log_escape(out->message, sizeof out->message, json_string_value(m));
    return 0;
}

/* The event's own values into out: 0 or -1 with err. */
static int extrun_line_values(const json_t *o, int kind, const extrun_limits *lim, extrun_line *out, char *err,
                              size_t errlen) {
    switch (kind) {
    case EXTRUN_EV_TRAIN: return extrun_line_train(o, out, err, errlen);
    case EXTRUN_EV_VAL: return extrun_line_val(o, lim, out, err, errlen);
    case EXTRUN_EV_PAUSED: return extrun_num(o, "paused", "val_loss", 1, -INFINITY, &out->val_loss, NULL, err, errlen);
    case EXTRUN_EV_CHECKPOINT: return extrun_line_checkpoint(o, out, err, errlen);
    case EXTRUN_EV_START: return extrun_line_start(o, out, err, errlen);
    case EXTRUN_EV_RESULT: return extrun_line_result(o, lim, out, err, errlen);
    case EXTRUN_EV_FAILED: return extrun_line_failed(o, out, err, errlen);
    default: return 0;
    }
}

int extrun_parse_line(const char *line, size_t len, const extrun_limits *lim, extrun_line *out, char *err,
                      size_t errlen) {
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        /* Python's json.dumps writes NaN / Infinity for non-finite floats: a loss that is not finite */
        for (size_t i = 0; i + 3 <= len; i++)
            if (memcmp(line + i, "NaN", 3) == 0 || (i + 8 <= len && memcmp(line + i, "Infinity", 8) == 0)) {
                snprintf(err, errlen, "a number is not finite (NaN or Infinity): %.200s", je.text);
                return EXTRUN_ENAN;
            }
        snprintf(err, errlen, "not a JSON object: %s (column %d)", je.text, je.column);
        return -1;
    }
    int rc = -1;
    const struct extrun_event *E = NULL;
    if (!json_is_object(o)) { snprintf(err, errlen, "must be a JSON object, got %s", job_json_type(o)); goto out; }
    if (!(E = extrun_line_event(o, err, errlen)) || extrun_line_keys(o, E, err, errlen)) goto out;
    out->event = E->kind;
    if (E->kind != EXTRUN_EV_RESULT && E->kind != EXTRUN_EV_HEARTBEAT && E->kind != EXTRUN_EV_FAILED &&
        E->kind != EXTRUN_EV_START && extrun_line_step(o, E, lim, out, err, errlen))
        goto out;
    if (extrun_line_values(o, E->kind, lim, out, err, errlen)) goto out;
    if ((E->kind == EXTRUN_EV_TRAIN || E->kind == EXTRUN_EV_VAL) && !out->row) { snprintf(err, errlen, "out of memory"); goto out; }
    rc = out->event;
out:
    if (rc < 0) extrun_line_release(out);
    json_decref(o);
    return rc;
}
