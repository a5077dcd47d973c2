/* api.c — routing, auth and the write handlers of the orchestrator's API; the read views are in views.c,
 * static files in static.c, /healthz and /metrics in metrics.c.
 *
 * Design: a request is routed by splitting its path into at most 6 segments and matching a table of
 * { method, pattern, auth level, handler }, where "#" in a pattern matches a decimal id. Write handlers run
 * between api_write_begin() (BEGIN IMMEDIATE if no transaction is open yet, then SAVEPOINT) and
 * api_write_end() (RELEASE, or ROLLBACK TO on failure); api_flush() issues the COMMIT right before the
 * server writes the answers, so many requests share one fsync. Read views (views.c) query directly with prepared
 * statements (they see this iteration's uncommitted writes, which are answered only after the commit too).
 * Bodies are capped by http.c; JSON is checked for nesting depth before jansson parses it.
 */
#include "jsonout.h"
#include "api.h"
#include "util.h"
#include "halving.h"
#include "racing.h"
#include "search.h"
#include "ranking_build.h"
#include "lease.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartbeat.h"
#include "jobstate.h"
#include "logesc.h"
#include "metrics.h"
#include "static.h"
#include "sweeps.h"
#include "views.h"

/* ---- helpers ------------------------------------------------------------------------------------- */

void api_reply_json(http_response *res, int status, json_t *o) {   /* steals o */
    char *s = o ? json_dumps(o, JSON_COMPACT | JSONOUT_FLAGS) : NULL;
    json_decref(o);
    if (!s) { http_response_error(res, 500, "out of memory"); return; }
    http_response_set(res, status, "application/json", s, strlen(s));
    free(s);
    res->extra_headers = "Cache-Control: no-store\r\n";
}


void api_reply_store_error(api_ctx *c, int rc, const char *msg, const char *state) {
    if (rc == STORE_EIO && c->req->method == HTTP_POST) metrics_note_write_error(&c->a->metrics, c->req->path, msg);
    int status = rc == STORE_ENOTFOUND ? 404 : rc == STORE_ECONFLICT ? 409 : rc == STORE_EINVAL ? 400 : 500;
    if (status == 409 && state && *state) {
        api_reply_json(c->res, 409, json_pack("{s:s, s:s}", "error", msg, "state", state));
        return;
    }
    http_response_error(c->res, status, "%s", msg && *msg ? msg : "database error");
}

/* Longest bracket nesting outside strings; > limit stops early. */
static int json_depth_ok(const char *s, size_t n, int limit) {
    int d = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"') in_str = 0;
        } else if (ch == '"') in_str = 1;
        else if (ch == '{' || ch == '[') { if (++d > limit) return 0; }
        else if (ch == '}' || ch == ']') d--;
    }
    return 1;
}

/* Parses the request body as a JSON object into c->body; on failure answers 400/413 and returns -1. */
static int parse_body(api_ctx *c) {
    http_request *r = c->req;
    if (r->body.len == 0) { c->body = json_object(); return 0; }
    if (!json_depth_ok(r->body.data, r->body.len, API_MAX_JSON_DEPTH)) {
        http_response_error(c->res, 413, "JSON nested deeper than %d levels", API_MAX_JSON_DEPTH);
        return -1;
    }
    json_error_t e;
    c->body = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &e);
    if (!c->body) {
        http_response_error(c->res, 400, "malformed JSON body at line %d column %d: %s", e.line, e.column, e.text);
        return -1;
    }
    if (!json_is_object(c->body)) {
        json_decref(c->body);
        c->body = NULL;
        http_response_error(c->res, 400, "the body must be a JSON object");
        return -1;
    }
    return 0;
}

/* Field accessors: on a missing/ill-typed field they answer 400 naming it and return -1. */
static int get_str(api_ctx *c, const char *key, int required, const char **out) {
    json_t *v = json_object_get(c->body, key);
    if (!v || json_is_null(v)) {
        if (!required) { *out = NULL; return 0; }
        http_response_error(c->res, 400, "%s: required string is missing", key);
        return -1;
    }
    if (!json_is_string(v)) { http_response_error(c->res, 400, "%s: must be a string", key); return -1; }
    *out = json_string_value(v);
    return 0;
}

static int get_int(api_ctx *c, const char *key, int required, long long *out) {
    json_t *v = json_object_get(c->body, key);
    if (!v || json_is_null(v)) {
        if (!required) return 0;
        http_response_error(c->res, 400, "%s: required integer is missing", key);
        return -1;
    }
    if (!json_is_integer(v)) { http_response_error(c->res, 400, "%s: must be an integer", key); return -1; }
    *out = json_integer_value(v);
    return 0;
}

static int get_token(api_ctx *c, const char **tok) {
    if (get_str(c, "lease_token", 1, tok) < 0) return -1;
    if (!**tok || strlen(*tok) > 128) { http_response_error(c->res, 400, "lease_token: must be the token from the lease"); return -1; }
    return 0;
}

/* ---- transactions -------------------------------------------------------------------------------- */


enum { SP_BEGIN, SP_RELEASE, SP_ROLLBACK };

/* Runs the request savepoint's statement i, prepared once (a write request runs two of them: parsing them
 * each time was a tenth of the loop's time under a fleet). Returns 0, or -1 with st->err set. */
static int savepoint_run(api *a, int i) {
    static const char *const sql[3] = { "SAVEPOINT req", "RELEASE req", "ROLLBACK TO req" };
    sqlite3_stmt *s = a->sp_stmt[i];
    if (!s && sqlite3_prepare_v3(a->st->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &a->sp_stmt[i], NULL) != SQLITE_OK)
        return store_fail(a->st, sql[i]);
    s = a->sp_stmt[i];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : store_fail(a->st, sql[i]);
}

static int write_begin(api *a) {
    if (!a->txn_open) {
        if (store_begin(a->st) < 0) { metrics_note_write_error(&a->metrics, "BEGIN", a->st->err); return -1; }
        a->txn_open = 1;
        a->txn_wrote = 0;
    }
    if (savepoint_run(a, SP_BEGIN) < 0) { metrics_note_write_error(&a->metrics, "SAVEPOINT", a->st->err); return -1; }
    a->sp_changes0 = sqlite3_total_changes64(a->st->db);
    return 0;
}

int api_probe_write(store *st, char *err, size_t errlen) {
    /* a real write that changes nothing: the header's user_version, rewritten with its own value */
    sqlite3_stmt *s = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
    if (v < 0 || store_begin(st) < 0 || store_exec(st, sql) < 0 || store_commit(st) < 0) {
        snprintf(err, errlen, "%s", v < 0 ? sqlite3_errmsg(st->db) : st->err);
        store_rollback(st);
        return -1;
    }
    return 0;
}

static void write_end(api *a, int ok) {
    if (ok && sqlite3_total_changes64(a->st->db) > a->sp_changes0) a->txn_wrote = 1;   /* rows kept in this COMMIT */
    if (!ok) savepoint_run(a, SP_ROLLBACK);
    savepoint_run(a, SP_RELEASE);
}

int api_flush(void *ud) {
    api *a = ud;
    if (!a->txn_open) return 0;
    a->txn_open = 0;
    if (store_commit(a->st) < 0) {
        metrics_note_write_error(&a->metrics, "COMMIT", a->st->err);
        char e[1024];
        fprintf(stderr, "prism-sweep serve: COMMIT failed: %s (answers dropped, clients will retry)\n",
                log_escape(e, sizeof e, a->st->err));
        store_rollback(a->st);
        views_release(&a->views);   /* entries built inside the rolled-back transaction: their revs will be reused */
        a->commit_failures++;
        return -1;
    }
    a->commits++;
    if (a->txn_wrote)
        metrics_clear_write_error(&a->metrics);   /* rows written and committed: /healthz is healthy from now, not 60 s later */
    return 0;
}

/* Racing, then a surrogate search: decides every due round and batch (of job's sweep, or of every sweep when job
 * is 0), each in its own savepoint (orchestrator/racing.h, orchestrator/search.h). */
static void api_racing_tick(api *a, const char *after, long long job) {
    int n = 0;
    char rerr[512] = "";
    if (write_begin(a) < 0) return;
    int rc = job > 0 ? racing_job_done(a->st, job, &n, rerr, sizeof rerr) : racing_tick_all(a->st, &n, rerr, sizeof rerr);
    write_end(a, rc >= 0);
    if (rc < 0) fprintf(stderr, "prism-sweep serve: racing after %s: %s\n", after, rerr);
    else if (n > 0) fprintf(stderr, "prism-sweep serve: event=racing rounds=%d after=%s\n", n, after);
    /* a surrogate search: the next batch, when the last job of one is over (orchestrator/search.h), in its own
     * savepoint (a failed search decision does not undo a racing round) */
    n = 0;
    rerr[0] = 0;
    if (write_begin(a) < 0) return;
    rc = job > 0 ? search_job_done(a->st, job, &n, rerr, sizeof rerr) : search_tick_all(a->st, &n, rerr, sizeof rerr);
    write_end(a, rc >= 0);
    if (rc < 0) fprintf(stderr, "prism-sweep serve: search after %s: %s\n", after, rerr);
    else if (n > 0) fprintf(stderr, "prism-sweep serve: event=search batches=%d after=%s\n", n, after);
}

/* Successive halving: runs every due promotion in its own savepoint (orchestrator/halving.h). */
static void api_halving_tick(api *a, const char *after) {
    int n = 0;
    char herr[512] = "";
    if (write_begin(a) < 0) return;
    int rc = halving_tick_all(&a->q, &n, herr, sizeof herr);
    write_end(a, rc >= 0);
    if (rc < 0) fprintf(stderr, "prism-sweep serve: halving after %s: %s\n", after, herr);
    else if (n > 0) fprintf(stderr, "prism-sweep serve: event=halving decisions=%d after=%s\n", n, after);
    api_racing_tick(a, after, 0);   /* a pruned or failed job may end a racing round */
}

int api_expire(api *a) {
    int n = 0;
    if (write_begin(a) < 0) return -1;
    int rc = queue_expire(&a->q, queue_clock(&a->q), &n);
    write_end(a, rc >= 0);
    if (rc < 0) {
        metrics_note_write_error(&a->metrics, "lease expiry", a->q.err);
        char e[1024];
        fprintf(stderr, "prism-sweep serve: lease expiry failed: %s\n", log_escape(e, sizeof e, a->q.err));
        return rc;
    }
    if (n > 0) fprintf(stderr, "prism-sweep serve: %d lease(s) expired\n", n);
    if (n > 0) api_halving_tick(a, "lease expiry");   /* a job that failed for good may complete a rung */
    return n;
}

/* ---- worker routes ------------------------------------------------------------------------------- */

static void h_register(api_ctx *c) {
    const char *name, *host;
    if (get_str(c, "name", 1, &name) < 0 || get_str(c, "host", 0, &host) < 0) return;
    if (!*name || strlen(name) > 200) { http_response_error(c->res, 400, "name: must be 1 to 200 characters"); return; }
    if (host && strlen(host) > 200) { http_response_error(c->res, 400, "host: at most 200 characters"); return; }
    json_t *dev = json_object_get(c->body, "devices");
    if (dev && !json_is_array(dev)) { http_response_error(c->res, 400, "devices: must be an array"); return; }
    if (dev && json_array_size(dev) > API_MAX_DEVICES) {   /* stored per worker and served by GET /workers */
        http_response_error(c->res, 400, "devices: %zu entries, at most %d (one per accelerator of this worker)",
                            json_array_size(dev), API_MAX_DEVICES);
        return;
    }
    for (size_t i = 0; dev && i < json_array_size(dev); i++) {
        json_t *d = json_array_get(dev, i);
        if (!(json_is_integer(d) || (json_is_string(d) && json_string_length(d) >= 1 &&
                                     json_string_length(d) <= API_MAX_DEVICE_NAME))) {
            http_response_error(c->res, 400, "devices[%zu]: must be a device name of 1 to %d characters (\"cuda:0\", "
                                "\"cpu\") or a device index", i, API_MAX_DEVICE_NAME);
            return;
        }
    }
    char *devs = dev ? json_dumps(dev, JSON_COMPACT) : strdup("[]");
    long long id = 0;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = queue_register(&c->a->q, name, host ? host : "", devs ? devs : "[]", &id);
    write_end(c->a, rc >= 0);
    free(devs);
    if (rc < 0) { api_reply_store_error(c, rc, c->a->q.err[0] ? c->a->q.err : c->a->st->err, NULL); return; }
    double hb = c->a->cfg.lease_ttl / 4;
    api_reply_json(c->res, 200, json_pack("{s:I, s:f, s:f}", "worker_id", (json_int_t)id, "lease_ttl_s", c->a->cfg.lease_ttl,
                                      "heartbeat_every_s", hb));
}

static void h_lease(api_ctx *c) {
    long long wid = 0;
    const char *device;
    if (get_int(c, "worker_id", 1, &wid) < 0) return;
    json_t *dv = json_object_get(c->body, "device");
    char devbuf[64];
    if (json_is_integer(dv)) { snprintf(devbuf, sizeof devbuf, "%lld", (long long)json_integer_value(dv)); device = devbuf; }
    else if (get_str(c, "device", 0, &device) < 0) return;
    if (device && strlen(device) > 64) { http_response_error(c->res, 400, "device: at most 64 characters"); return; }
    lease_filter lf;   /* what the worker can train: its trainers, the built-in engine or not (common/lease.h) */
    char lerr[256];
    if (lease_filter_from_json(c->body, &lf, lerr, sizeof lerr) != LEASE_OK) { http_response_error(c->res, 400, "%s", lerr); return; }
    json_t *out = NULL;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = queue_lease_for(&c->a->q, wid, device, &lf, &out);
    write_end(c->a, rc >= 0);
    if (rc < 0) { api_reply_store_error(c, rc, c->a->q.err, c->a->q.state); return; }
    if (rc == QUEUE_EMPTY) { c->res->status = 204; c->res->content_type = "application/json"; return; }
    char dev_log[4 * 64 + 1];   /* the device is the client's text: escaped, it cannot start a forged line */
    fprintf(stderr, "prism-sweep serve: event=lease job=%lld attempt=%lld worker=%lld device=%s\n",
            (long long)json_integer_value(json_object_get(out, "job_id")),
            (long long)json_integer_value(json_object_get(out, "attempt")), wid, log_escape(dev_log, sizeof dev_log, device));
    api_reply_json(c->res, 200, out);
}

enum { W_HEARTBEAT, W_METRICS, W_CHECKPOINT, W_COMPLETE, W_FAIL };

static void worker_job_op(api_ctx *c, int op) {
    const char *tok;
    if (get_token(c, &tok) < 0) return;
    queue *q = &c->a->q;
    q->err[0] = q->state[0] = 0;
    double expires = 0;
    int rc;
    json_t *reply = NULL;
    switch (op) {
    case W_HEARTBEAT: {
        heartbeat hb;   /* common/heartbeat.h */
        char e[128];
        if (heartbeat_from_json(c->body, &hb, e, sizeof e) < 0) { http_response_error(c->res, 400, "%s", e); return; }
        if ((rc = write_begin(c->a)) >= 0) rc = queue_heartbeat(q, c->id, tok, hb.step, hb.loss, &expires);
        long long sd = 0, sj = 0;   /* the sweep's progress, for the worker's display */
        if (rc >= 0) rc = queue_sweep_progress(q, c->id, &sd, &sj);
        if (rc >= 0) reply = json_pack("{s:f, s:I, s:I}", "lease_expires_at", expires, "sweep_done", (json_int_t)sd,
                                       "sweep_jobs", (json_int_t)sj);
        break;
    }
    case W_METRICS: {
        int acc = 0, dup = 0;
        json_t *pts = json_object_get(c->body, "points");
        if (!pts) { http_response_error(c->res, 400, "points: required array is missing"); return; }
        if ((rc = write_begin(c->a)) >= 0) rc = queue_metrics(q, c->id, tok, pts, &acc, &dup, &expires);
        if (rc >= 0) reply = json_pack("{s:i, s:i, s:f}", "accepted", acc, "duplicates", dup, "lease_expires_at", expires);
        break;
    }
    case W_CHECKPOINT: {
        const char *path;
        long long step = -1;
        if (get_str(c, "path", 1, &path) < 0 || get_int(c, "step", 1, &step) < 0) return;
        if (strlen(path) > 4000) { http_response_error(c->res, 400, "path: at most 4000 characters"); return; }
        if ((rc = write_begin(c->a)) >= 0) rc = queue_checkpoint(q, c->id, tok, path, step, &expires);
        if (rc >= 0) reply = json_pack("{s:f}", "lease_expires_at", expires);
        break;
    }
    case W_COMPLETE: {
        json_t *result = json_object_get(c->body, "result");
        if (!result) { http_response_error(c->res, 400, "result: required object (result.json) is missing"); return; }
        if ((rc = write_begin(c->a)) >= 0) rc = queue_complete(q, c->id, tok, result);
        if (rc >= 0) reply = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", jobstate_name(JOB_DONE));
        break;
    }
    default: {
        const char *err;
        json_t *rt = json_object_get(c->body, "retryable"), *pre = json_object_get(c->body, "preempted");
        if (get_str(c, "error", 1, &err) < 0) return;
        if (rt && !json_is_boolean(rt)) { http_response_error(c->res, 400, "retryable: must be true or false"); return; }
        if (pre && !json_is_boolean(pre)) { http_response_error(c->res, 400, "preempted: must be true or false"); return; }
        if (json_is_true(pre) && !json_is_true(rt)) {
            http_response_error(c->res, 400, "preempted: true needs retryable: true (a preempted attempt is run again)");
            return;
        }
        const char *st = NULL;
        int flags = (json_is_true(rt) ? QUEUE_FAIL_RETRYABLE : 0) | (json_is_true(pre) ? QUEUE_FAIL_PREEMPTED : 0);
        if ((rc = write_begin(c->a)) >= 0) rc = queue_fail(q, c->id, tok, err, flags, &st);
        if (rc >= 0) reply = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", st);
        break;
    }
    }
    write_end(c->a, rc >= 0);
    if (rc < 0) { api_reply_store_error(c, rc, q->err[0] ? q->err : c->a->st->err, q->state); return; }
    if (op == W_COMPLETE || op == W_FAIL)
        fprintf(stderr, "prism-sweep serve: event=%s job=%lld state=%s\n", op == W_COMPLETE ? "complete" : "fail", c->id,
                json_string_value(json_object_get(reply, "state")));
    if (op == W_FAIL && !strcmp(json_string_value(json_object_get(reply, "state")), jobstate_name(JOB_FAILED))) api_halving_tick(c->a, "fail");
    if (op == W_COMPLETE) api_racing_tick(c->a, "complete", c->id);
    api_reply_json(c->res, 200, reply);
}

static void h_heartbeat(api_ctx *c) { worker_job_op(c, W_HEARTBEAT); }
static void h_metrics_post(api_ctx *c) { worker_job_op(c, W_METRICS); }
static void h_checkpoint(api_ctx *c) { worker_job_op(c, W_CHECKPOINT); }
static void h_complete(api_ctx *c) { worker_job_op(c, W_COMPLETE); }
static void h_fail(api_ctx *c) { worker_job_op(c, W_FAIL); }

/* POST /api/v1/jobs/{id}/rung {lease_token, step, val_loss}: a halving rung reached (orchestrator/halving.h). */
static void h_rung(api_ctx *c) {
    const char *tok;
    long long step = -1;
    if (get_token(c, &tok) < 0 || get_int(c, "step", 1, &step) < 0) return;
    json_t *vl = json_object_get(c->body, "val_loss");
    if (!json_is_number(vl)) { http_response_error(c->res, 400, "val_loss: required number (the val loss at step)"); return; }
    char err[512] = "", state_buf[16] = "";
    const char *state = NULL;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = halving_report(&c->a->q, c->id, tok, step, json_number_value(vl), &state, state_buf, err, sizeof err);
    if (rc >= 0 && (rc = queue_worker_succeeded(&c->a->q, c->id)) < 0) snprintf(err, sizeof err, "%s", c->a->q.err);
    write_end(c->a, rc >= 0);
    if (rc < 0) { api_reply_store_error(c, rc, err[0] ? err : c->a->st->err, state_buf); return; }
    fprintf(stderr, "prism-sweep serve: event=rung job=%lld step=%lld state=%s\n", c->id, step, state ? state : "?");
    api_racing_tick(c->a, "rung", c->id);   /* a rung that pruned the last job of a racing round ends it */
    api_reply_json(c->res, 200, json_pack("{s:I, s:I, s:s}", "job_id", (json_int_t)c->id, "step", (json_int_t)step,
                                      "state", state ? state : "paused"));
}

/* ---- admin routes -------------------------------------------------------------------------------- */

static void h_sweep_create(api_ctx *c) {
    sweeps_created cr;
    memset(&cr, 0, sizeof cr);
    char err[1024] = "";
    int too_big = 0;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = sweeps_create_json_max(c->a->st, c->req->body.data ? c->req->body.data : "{}", c->req->body.len,
                                             API_MAX_CREATE_JOBS, &too_big, &cr, err, sizeof err);
    write_end(c->a, rc >= 0);
    if (too_big) { http_response_error(c->res, 413, "%s", err); return; }
    if (rc < 0) { api_reply_store_error(c, rc, err[0] ? err : c->a->st->err, NULL); return; }
    int created = cr.sweep_is_new || cr.jobs_created > 0 || cr.schedules_created > 0;
    api_reply_json(c->res, created ? 201 : 200,
               json_pack("{s:I, s:s, s:I, s:I, s:b, s:I, s:I}", "sweep_id", (json_int_t)cr.sweep_id, "name", cr.name,
                         "schedules", (json_int_t)cr.schedules_total, "jobs", (json_int_t)cr.jobs_total,
                         "created", created, "schedules_created", (json_int_t)cr.schedules_created,
                         "jobs_created", (json_int_t)cr.jobs_created));
}

enum { A_CANCEL, A_REQUEUE, A_PRIO, A_PAUSE, A_RESUME, A_SWEEP_PRIO };

/* The current ranking of sweep (ranking_build, every schedule at its level) and its screened jobs that are done:
 * the jobs a requeue may train again (issue #37). On 0 *rk is the ranking (ranking_free) or NULL on an error. */
static int screened_ranking(api_ctx *c, long long sweep, ranking **rk) {
    char err[512] = "";
    int rc = ranking_build(c->a->st, sweep, -1, rk, err, sizeof err);
    if (rc < 0) { *rk = NULL; api_reply_store_error(c, rc, err, NULL); }
    return rc;
}

/* The screen's reason for job in rk, or NULL: it is not screened. */
static const char *screened_reason(const ranking *rk, long long job) {
    for (int i = 0; rk && i < rk->nscreened; i++) if (rk->screened[i].job_id == job) return rk->screened[i].reason;
    return NULL;
}

/* A done job's requeue needs the current screen's verdict (queue_requeue_screened): read it before the write.
 * 0 and *rk (NULL for a job that is not done), or -1 answered. */
static int requeue_verdict(api_ctx *c, ranking **rk) {
    queue *q = &c->a->q;
    job_state js;
    long long sweep = 0;
    *rk = NULL;
    int rc = queue_job_state(q, c->id, &js);
    if (rc >= 0 && js == JOB_DONE) rc = queue_job_sweep(q, c->id, &sweep);
    if (rc < 0) { api_reply_store_error(c, rc, q->err, NULL); return -1; }
    return js == JOB_DONE && screened_ranking(c, sweep, rk) < 0 ? -1 : 0;
}

static void admin_op(api_ctx *c, int op) {
    queue *q = &c->a->q;
    q->err[0] = q->state[0] = 0;
    long long prio = 0;
    if ((op == A_PRIO || op == A_SWEEP_PRIO) && get_int(c, "priority", 1, &prio) < 0) return;
    ranking *rk = NULL;
    if (op == A_REQUEUE && requeue_verdict(c, &rk) < 0) return;
    int rc = write_begin(c->a);
    if (rc >= 0) switch (op) {
        case A_CANCEL: rc = queue_cancel(q, c->id); break;
        case A_REQUEUE: rc = queue_requeue_screened(q, c->id, screened_reason(rk, c->id)); break;
        case A_PRIO: rc = queue_set_priority(q, c->id, prio); break;
        case A_PAUSE: rc = queue_sweep_set_state(q, c->id, "paused"); break;
        case A_RESUME: rc = queue_sweep_set_state(q, c->id, "active"); break;
        default: rc = queue_sweep_set_priority(q, c->id, prio); break;
        }
    write_end(c->a, rc >= 0);
    ranking_free(rk);
    if (rc < 0) { api_reply_store_error(c, rc, q->err[0] ? q->err : c->a->st->err, q->state); return; }
    if (op == A_CANCEL || op == A_REQUEUE) api_halving_tick(c->a, op == A_CANCEL ? "cancel" : "requeue");
    if (op == A_RESUME) views_rate_restart(&c->a->views, c->id, store_now());
    static const char *const names[] = { "cancel", "requeue", "priority", "pause", "resume", "sweep-priority" };
    fprintf(stderr, "prism-sweep serve: event=%s %s=%lld\n", names[op], op >= A_PAUSE ? "sweep" : "job", c->id);
    json_t *o;
    switch (op) {
    case A_CANCEL: o = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", jobstate_name(JOB_CANCELLED)); break;
    case A_REQUEUE: o = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", jobstate_name(JOB_QUEUED)); break;
    case A_PRIO: o = json_pack("{s:I, s:I}", "job_id", (json_int_t)c->id, "priority", (json_int_t)prio); break;
    case A_PAUSE: o = json_pack("{s:I, s:s}", "sweep_id", (json_int_t)c->id, "state", "paused"); break;
    case A_RESUME: o = json_pack("{s:I, s:s}", "sweep_id", (json_int_t)c->id, "state", "active"); break;
    default: o = json_pack("{s:I, s:I}", "sweep_id", (json_int_t)c->id, "priority", (json_int_t)prio); break;
    }
    api_reply_json(c->res, 200, o);
}

/* Every done job of rk's screened list back to queued (queue_requeue_screened), its ids appended to ids. */
static int requeue_screened_all(queue *q, const ranking *rk, json_t *ids) {
    for (int i = 0; i < rk->nscreened; i++) {
        const ranking_screened *x = &rk->screened[i];
        job_state js;
        int rc = queue_job_state(q, x->job_id, &js), seen = 0;
        if (rc < 0) return rc;
        for (size_t k = 0; k < json_array_size(ids); k++) seen |= json_integer_value(json_array_get(ids, k)) == x->job_id;
        if (js != JOB_DONE || seen) continue;   /* screened at two levels, or not finished (a halving rung) */
        if ((rc = queue_requeue_screened(q, x->job_id, x->reason)) < 0) return rc;
        if (json_array_append_new(ids, json_integer(x->job_id)) < 0) { snprintf(q->err, sizeof q->err, "out of memory"); return STORE_EIO; }
    }
    return STORE_OK;
}

/* POST /api/v1/sweeps/{id}/requeue {"state": "failed"|"cancelled"|"screened", "error_like": str?}: every such job
 * of the sweep back to queued, in one transaction ("screened": the done jobs the current ranking's outlier screen
 * leaves out, each trained again; error_like does not apply). */
static void h_sweep_requeue(api_ctx *c) {
    const char *state, *like = NULL;
    if (get_str(c, "state", 1, &state) < 0 || get_str(c, "error_like", 0, &like) < 0) return;
    if (like && strlen(like) > 1000) { http_response_error(c->res, 400, "error_like: at most 1000 characters"); return; }
    queue *q = &c->a->q;
    q->err[0] = 0;
    int screened = strcmp(state, "screened") == 0;
    if (screened && like) { http_response_error(c->res, 400, "error_like: only with state failed or cancelled"); return; }
    ranking *rk = NULL;
    if (screened && screened_ranking(c, c->id, &rk) < 0) return;
    json_t *ids = json_array();
    if (!ids) { ranking_free(rk); http_response_error(c->res, 500, "out of memory"); return; }
    int rc = write_begin(c->a);
    if (rc >= 0) rc = screened ? requeue_screened_all(q, rk, ids) : queue_requeue_sweep(q, c->id, state, like, ids);
    write_end(c->a, rc >= 0);
    ranking_free(rk);
    if (rc < 0) { json_decref(ids); api_reply_store_error(c, rc, q->err[0] ? q->err : c->a->st->err, NULL); return; }
    size_t n = json_array_size(ids);
    if (n) api_halving_tick(c->a, "requeue");
    fprintf(stderr, "prism-sweep serve: event=requeue sweep=%lld state=%s jobs=%zu\n", c->id, state, n);
    api_reply_json(c->res, 200, json_pack("{s:I, s:s, s:I, s:o}", "sweep_id", (json_int_t)c->id, "state", state,
                                          "requeued", (json_int_t)n, "job_ids", ids));
}

static void h_cancel(api_ctx *c) { admin_op(c, A_CANCEL); }
static void h_requeue(api_ctx *c) { admin_op(c, A_REQUEUE); }
static void h_priority(api_ctx *c) { admin_op(c, A_PRIO); }
static void h_pause(api_ctx *c) { admin_op(c, A_PAUSE); }
static void h_resume(api_ctx *c) { admin_op(c, A_RESUME); }
static void h_sweep_priority(api_ctx *c) { admin_op(c, A_SWEEP_PRIO); }

/* ---- routing ------------------------------------------------------------------------------------- */

enum { R_PUBLIC = -1, R_READ = 0, R_WORKER = 1, R_ADMIN = 2 };

typedef struct route {
    int method;                 /* HTTP_GET / HTTP_POST */
    const char *pattern;        /* segments after /api/v1, '#' = id */
    int auth;
    void (*fn)(api_ctx *);
    const char *name;           /* its label in /metrics (prism_route_*{route="NAME"}) */
} route;

/* GET routes answer from views.c (read views); POST routes from the write handlers above. At most
 * METRICS_MAX_ROUTES of them (their cost is counted by index). */
static const route routes[] = {
    { HTTP_POST, "workers/register", R_WORKER, h_register, "register" },
    { HTTP_POST, "lease", R_WORKER, h_lease, "lease" },
    { HTTP_POST, "jobs/#/heartbeat", R_WORKER, h_heartbeat, "heartbeat" },
    { HTTP_POST, "jobs/#/metrics", R_WORKER, h_metrics_post, "metrics" },
    { HTTP_POST, "jobs/#/checkpoint", R_WORKER, h_checkpoint, "checkpoint" },
    { HTTP_POST, "jobs/#/complete", R_WORKER, h_complete, "complete" },
    { HTTP_POST, "jobs/#/fail", R_WORKER, h_fail, "fail" },
    { HTTP_POST, "jobs/#/rung", R_WORKER, h_rung, "rung" },
    { HTTP_POST, "jobs/#/cancel", R_ADMIN, h_cancel, "cancel" },
    { HTTP_POST, "jobs/#/requeue", R_ADMIN, h_requeue, "requeue" },
    { HTTP_POST, "jobs/#/priority", R_ADMIN, h_priority, "priority" },
    { HTTP_POST, "sweeps", R_ADMIN, h_sweep_create, "sweep_create" },
    { HTTP_POST, "sweeps/#/pause", R_ADMIN, h_pause, "sweep_pause" },
    { HTTP_POST, "sweeps/#/resume", R_ADMIN, h_resume, "sweep_resume" },
    { HTTP_POST, "sweeps/#/priority", R_ADMIN, h_sweep_priority, "sweep_priority" },
    { HTTP_POST, "sweeps/#/requeue", R_ADMIN, h_sweep_requeue, "sweep_requeue" },
    { HTTP_GET, "sweeps", R_READ, views_sweeps_list, "sweeps" },
    { HTTP_GET, "sweeps/#", R_READ, views_sweep_get, "sweep" },
    { HTTP_GET, "sweeps/#/jobs", R_READ, views_sweep_jobs, "sweep_jobs" },
    { HTTP_GET, "sweeps/#/leaderboard", R_READ, views_leaderboard, "leaderboard" },
    { HTTP_GET, "jobs/#", R_READ, views_job_get, "job" },
    { HTTP_GET, "jobs/#/metrics", R_READ, views_job_metrics, "job_metrics" },
    { HTTP_GET, "workers", R_READ, views_workers, "workers" },
};
_Static_assert(sizeof routes / sizeof routes[0] <= METRICS_MAX_ROUTES, "METRICS_MAX_ROUTES too small");

/* Matches segs against pattern; fills *id for '#'. */
static int match(const char *pattern, const char *const *seg, int nseg, long long *id) {
    char pat[64];
    snprintf(pat, sizeof pat, "%s", pattern);
    int i = 0;
    for (char *save = NULL, *tok = strtok_r(pat, "/", &save); tok; tok = strtok_r(NULL, "/", &save), i++) {
        if (i >= nseg) return 0;
        if (strcmp(tok, "#") == 0) {
            const char *s = seg[i];
            if (!*s || strlen(s) > 18) return 0;
            for (const char *p = s; *p; p++) if (*p < '0' || *p > '9') return 0;
            *id = atoll(s);
        } else if (strcmp(tok, seg[i]) != 0) return 0;
    }
    return i == nseg;
}

static void dispatch(api *a, http_request *req, http_response *res) {
    api_ctx c = { .a = a, .req = req, .res = res };
    const char *path = req->path;
    a->q.err[0] = a->q.state[0] = 0;   /* no stale message from an earlier request */
    if (req->auth_too_long) {
        http_response_error(res, 401, "Authorization header too long");
        res->extra_headers = "WWW-Authenticate: Bearer\r\n";
        return;
    }
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0) {
        if (req->method != HTTP_GET && req->method != HTTP_HEAD) {
            http_response_error(res, 405, "use GET");
            res->extra_headers = "Allow: GET, HEAD\r\n";
            return;
        }
        if (path[1] == 'h') metrics_healthz(&c); else metrics_prometheus(&c);
        res->no_state = 1;   /* counters and "the database reads": nothing a later crash could take back */
        return;
    }
    if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0) {
        if (req->method != HTTP_GET && req->method != HTTP_HEAD) {
            http_response_error(res, 405, "static files take GET only");
            res->extra_headers = "Allow: GET, HEAD\r\n";
            return;
        }
        static_serve(&c);
        res->no_state = 1;   /* files of web/, not the database */
        return;
    }
    if (strncmp(path, "/api/v1/", 8) != 0) { http_response_error(res, 404, "unknown API route %s (the API is under /api/v1/)", path); return; }
    /* split into segments (a copy: req->path stays intact for messages) */
    char segbuf[HTTP_MAX_URL + 1];
    snprintf(segbuf, sizeof segbuf, "%s", path + 8);
    size_t sl = strlen(segbuf);
    if (sl && segbuf[sl - 1] == '/') segbuf[sl - 1] = 0;
    char *save = NULL;
    for (char *tok = strtok_r(segbuf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (c.nseg == 7) { http_response_error(res, 404, "unknown API route %s", path); return; }
        c.seg[c.nseg++] = tok;
    }
    const route *hit = NULL;
    int path_known = 0;   /* bit 1: a GET route has this path, bit 2: a POST route (the 405's Allow header) */
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        long long id = 0;
        if (!match(routes[i].pattern, c.seg, c.nseg, &id)) continue;
        path_known |= routes[i].method == HTTP_GET ? 1 : 2;
        if (routes[i].method == req->method || (routes[i].method == HTTP_GET && req->method == HTTP_HEAD)) {
            hit = &routes[i];
            a->route = (int)i;
            c.id = id;
            break;
        }
    }
    if (!hit) {
        if (path_known) {
            http_response_error(res, 405, "method %s not allowed on %s", http_method_str(req->method), path);
            res->extra_headers = path_known == 1 ? "Allow: GET, HEAD\r\n" : path_known == 2 ? "Allow: POST\r\n"
                                                                                   : "Allow: GET, HEAD, POST\r\n";
        } else http_response_error(res, 404, "unknown API route %s (see docs/API.md)", path);
        return;
    }
    int need = hit->auth;
    if (need == R_READ && a->cfg.public_read) need = R_PUBLIC;
    if (need != R_PUBLIC) {
        int have = auth_check(&a->tokens, req->auth);
        if (have == AUTH_NONE || (need == R_ADMIN && have != AUTH_ADMIN)) {
            /* say which of the three it is: no token, a token this server does not have, or the worker token
             * on an admin route */
            const char *why;
            if (!req->auth[0])
                why = need == R_ADMIN ? "admin token required: send 'Authorization: Bearer <admin_token>'"
                                      : "token required: send 'Authorization: Bearer <token>'";
            else if (have == AUTH_NONE)
                why = need == R_ADMIN ? "admin token refused: the Bearer token is not this server's admin token "
                                        "(admin_token= in <db>.tokens, or in --token-file)"
                                      : "token refused: the Bearer token is not this server's (the worker token is "
                                        "<db>.worker-token beside the database, or worker_token= in --token-file)";
            else
                why = "admin token required: the worker token is not enough for this route (admin_token= in <db>.tokens)";
            http_response_error(res, 401, "%s", why);
            res->extra_headers = "WWW-Authenticate: Bearer\r\n";
            return;
        }
    }
    if (a->stopping && hit->method == HTTP_POST) { http_response_error(res, 503, "server is shutting down: retry"); return; }
    if (hit->method == HTTP_POST && hit->fn != h_sweep_create && parse_body(&c) < 0) return;
    if (hit->fn == h_sweep_create && c.req->body.len > API_MAX_SPEC_BODY) {
        http_response_error(res, 413, "a spec of %zu bytes is more than the %d this route takes: run prism-sweep create "
                            "SPEC.json --db DB on the server's machine", c.req->body.len, API_MAX_SPEC_BODY);
        return;
    }
    if (hit->fn == h_sweep_create && c.req->body.len &&
        !json_depth_ok(c.req->body.data, c.req->body.len, API_MAX_JSON_DEPTH)) {
        http_response_error(res, 413, "JSON nested deeper than %d levels", API_MAX_JSON_DEPTH);
        return;
    }
    hit->fn(&c);
    json_decref(c.body);
}

void api_handle(void *ud, http_request *req, http_response *res) {
    api *a = ud;
    store_cost c0 = store_cost_now(a->st);
    double t0 = util_now_s();
    a->route = -1;
    dispatch(a, req, res);
    double dt = util_now_s() - t0;
    store_cost c1 = store_cost_now(a->st);
    a->last_cost.vm_steps = c1.vm_steps - c0.vm_steps;
    a->last_cost.rows = c1.rows - c0.rows;
    if (a->route >= 0)
        metrics_route_cost(&a->metrics, a->route, routes[a->route].name, a->last_cost.vm_steps, a->last_cost.rows, dt);
    if (!res->status) http_response_error(res, 500, "internal error: no answer");
    metrics_record(&a->metrics, req, res);
}

int api_init(api *a, store *st, const auth_tokens *tokens, const api_config *cfg, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->st = st;
    a->cfg = *cfg;
    if (tokens) a->tokens = *tokens;
    if (a->cfg.lease_ttl <= 0) a->cfg.lease_ttl = 120;
    if (a->cfg.max_attempts <= 0) a->cfg.max_attempts = 3;
    if (cfg->web_dir) {
        if (!realpath(cfg->web_dir, a->web_real)) {
            snprintf(err, errlen, "--web %s: %s", cfg->web_dir, strerror(errno));
            return -1;
        }
    }
    queue_init(&a->q, st, a->cfg.lease_ttl, a->cfg.max_attempts);
    a->q.worker_fail_limit = a->cfg.worker_fail_limit;
    if (a->cfg.max_preemptions) a->q.max_preemptions = a->cfg.max_preemptions < 0 ? 0 : a->cfg.max_preemptions;
    return 0;
}

void api_release(api *a) {
    if (a->txn_open) { store_rollback(a->st); a->txn_open = 0; }
    queue_release(&a->q);
    views_release(&a->views);
    for (int i = 0; i < 3; i++) {
        sqlite3_finalize(a->sp_stmt[i]);
        a->sp_stmt[i] = NULL;
    }
}
