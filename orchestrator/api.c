/* api.c — routes, auth, JSON handlers, read views, /metrics and static files for the orchestrator.
 *
 * Design: a request is routed by splitting its path into at most 6 segments and matching a table of
 * { method, pattern, auth level, handler }, where "#" in a pattern matches a decimal id. Write handlers run
 * between api_write_begin() (BEGIN IMMEDIATE if no transaction is open yet, then SAVEPOINT) and
 * api_write_end() (RELEASE, or ROLLBACK TO on failure); api_flush() issues the COMMIT right before the
 * server writes the answers, so many requests share one fsync. Read handlers query directly with prepared
 * statements (they see this iteration's uncommitted writes, which are answered only after the commit too).
 * Bodies are capped by http.c; JSON is checked for nesting depth before jansson parses it.
 */
#include "api.h"
#include "util.h"
#include "halving.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "leaderboard.h"
#include "logesc.h"
#include "sweeps.h"

#define PRISM_VERSION "0.1.0"

typedef struct route_ctx {
    api *a;
    http_request *req;
    http_response *res;
    long long id;              /* the "#" segment, when the pattern has one */
    const char *seg[8];
    int nseg;
    json_t *body;              /* parsed body of POST routes (owned, freed by the dispatcher) */
} route_ctx;

/* ---- helpers ------------------------------------------------------------------------------------- */

static void reply_json(http_response *res, int status, json_t *o) {   /* steals o */
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(o);
    if (!s) { http_response_error(res, 500, "out of memory"); return; }
    http_response_set(res, status, "application/json", s, strlen(s));
    free(s);
    res->extra_headers = "Cache-Control: no-store\r\n";
}

/* Maps a queue/store error code to an HTTP answer. */
static void note_write_error(api *a, const char *what, const char *msg);

static void reply_store_error(route_ctx *c, int rc, const char *msg, const char *state) {
    if (rc == STORE_EIO && c->req->method == HTTP_POST) note_write_error(c->a, c->req->path, msg);
    int status = rc == STORE_ENOTFOUND ? 404 : rc == STORE_ECONFLICT ? 409 : rc == STORE_EINVAL ? 400 : 500;
    if (status == 409 && state && *state) {
        reply_json(c->res, 409, json_pack("{s:s, s:s}", "error", msg, "state", state));
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
static int parse_body(route_ctx *c) {
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
static int get_str(route_ctx *c, const char *key, int required, const char **out) {
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

static int get_int(route_ctx *c, const char *key, int required, long long *out) {
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

static int get_token(route_ctx *c, const char **tok) {
    if (get_str(c, "lease_token", 1, tok) < 0) return -1;
    if (!**tok || strlen(*tok) > 128) { http_response_error(c->res, 400, "lease_token: must be the token from the lease"); return -1; }
    return 0;
}

/* Query parameter value (raw, not decoded) copied into out; returns 1 when present. */
static int query_get(const char *q, const char *key, char *out, size_t n) {
    size_t kl = strlen(key);
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= n) vl = n - 1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = 0;
            return 1;
        }
        p = amp ? amp + 1 : NULL;
    }
    return 0;
}

static int parse_ll(const char *s, long long *v) {
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

/* ---- transactions -------------------------------------------------------------------------------- */

/* Remembers a failed database write for /healthz (a full disk or an I/O error fails writes while reads
 * still work). */
static void note_write_error(api *a, const char *what, const char *msg) {
    snprintf(a->write_err, sizeof a->write_err, "%.100s: %.400s", what, msg && *msg ? msg : "database error");
    a->write_err_at = store_now();
}

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
        if (store_begin(a->st) < 0) { note_write_error(a, "BEGIN", a->st->err); return -1; }
        a->txn_open = 1;
    }
    if (savepoint_run(a, SP_BEGIN) < 0) { note_write_error(a, "SAVEPOINT", a->st->err); return -1; }
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
    if (!ok) savepoint_run(a, SP_ROLLBACK);
    savepoint_run(a, SP_RELEASE);
}

int api_flush(void *ud) {
    api *a = ud;
    if (!a->txn_open) return 0;
    a->txn_open = 0;
    if (store_commit(a->st) < 0) {
        note_write_error(a, "COMMIT", a->st->err);
        char e[1024];
        fprintf(stderr, "prism-sweep serve: COMMIT failed: %s (answers dropped, clients will retry)\n",
                log_escape(e, sizeof e, a->st->err));
        store_rollback(a->st);
        a->commit_failures++;
        return -1;
    }
    a->commits++;
    return 0;
}

/* Successive halving: runs every due promotion in its own savepoint (orchestrator/halving.h). */
static void api_halving_tick(api *a, const char *after) {
    int n = 0;
    char herr[512] = "";
    if (write_begin(a) < 0) return;
    int rc = halving_tick_all(a->st, &n, herr, sizeof herr);
    write_end(a, rc >= 0);
    if (rc < 0) fprintf(stderr, "prism-sweep serve: halving after %s: %s\n", after, herr);
    else if (n > 0) fprintf(stderr, "prism-sweep serve: event=halving decisions=%d after=%s\n", n, after);
}

int api_expire(api *a) {
    int n = 0;
    if (write_begin(a) < 0) return -1;
    int rc = queue_expire(&a->q, store_now(), &n);
    write_end(a, rc >= 0);
    if (rc < 0) {
        note_write_error(a, "lease expiry", a->q.err);
        char e[1024];
        fprintf(stderr, "prism-sweep serve: lease expiry failed: %s\n", log_escape(e, sizeof e, a->q.err));
        return rc;
    }
    if (n > 0) fprintf(stderr, "prism-sweep serve: %d lease(s) expired\n", n);
    if (n > 0) api_halving_tick(a, "lease expiry");   /* a job that failed for good may complete a rung */
    return n;
}

/* ---- worker routes ------------------------------------------------------------------------------- */

static void h_register(route_ctx *c) {
    const char *name, *host;
    if (get_str(c, "name", 1, &name) < 0 || get_str(c, "host", 0, &host) < 0) return;
    if (!*name || strlen(name) > 200) { http_response_error(c->res, 400, "name: must be 1 to 200 characters"); return; }
    if (host && strlen(host) > 200) { http_response_error(c->res, 400, "host: at most 200 characters"); return; }
    json_t *dev = json_object_get(c->body, "devices");
    if (dev && !json_is_array(dev)) { http_response_error(c->res, 400, "devices: must be an array"); return; }
    char *devs = dev ? json_dumps(dev, JSON_COMPACT) : strdup("[]");
    long long id = 0;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = queue_register(&c->a->q, name, host ? host : "", devs ? devs : "[]", &id);
    write_end(c->a, rc >= 0);
    free(devs);
    if (rc < 0) { reply_store_error(c, rc, c->a->q.err[0] ? c->a->q.err : c->a->st->err, NULL); return; }
    double hb = c->a->cfg.lease_ttl / 4;
    reply_json(c->res, 200, json_pack("{s:I, s:f, s:f}", "worker_id", (json_int_t)id, "lease_ttl_s", c->a->cfg.lease_ttl,
                                      "heartbeat_every_s", hb));
}

static void h_lease(route_ctx *c) {
    long long wid = 0;
    const char *device;
    if (get_int(c, "worker_id", 1, &wid) < 0) return;
    json_t *dv = json_object_get(c->body, "device");
    char devbuf[64];
    if (json_is_integer(dv)) { snprintf(devbuf, sizeof devbuf, "%lld", (long long)json_integer_value(dv)); device = devbuf; }
    else if (get_str(c, "device", 0, &device) < 0) return;
    if (device && strlen(device) > 64) { http_response_error(c->res, 400, "device: at most 64 characters"); return; }
    json_t *out = NULL;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = queue_lease(&c->a->q, wid, device, &out);
    write_end(c->a, rc >= 0);
    if (rc < 0) { reply_store_error(c, rc, c->a->q.err, NULL); return; }
    if (rc == QUEUE_EMPTY) { c->res->status = 204; c->res->content_type = "application/json"; return; }
    char dev_log[4 * 64 + 1];   /* the device is the client's text: escaped, it cannot start a forged line */
    fprintf(stderr, "prism-sweep serve: event=lease job=%lld attempt=%lld worker=%lld device=%s\n",
            (long long)json_integer_value(json_object_get(out, "job_id")),
            (long long)json_integer_value(json_object_get(out, "attempt")), wid, log_escape(dev_log, sizeof dev_log, device));
    reply_json(c->res, 200, out);
}

enum { W_HEARTBEAT, W_METRICS, W_CHECKPOINT, W_COMPLETE, W_FAIL };

static void worker_job_op(route_ctx *c, int op) {
    const char *tok;
    if (get_token(c, &tok) < 0) return;
    queue *q = &c->a->q;
    q->err[0] = q->state[0] = 0;
    double expires = 0;
    int rc;
    json_t *reply = NULL;
    switch (op) {
    case W_HEARTBEAT: {
        long long step = -1;
        json_t *loss = json_object_get(c->body, "loss");
        if (get_int(c, "step", 0, &step) < 0) return;
        if ((rc = write_begin(c->a)) >= 0)
            rc = queue_heartbeat(q, c->id, tok, step, json_is_number(loss) ? json_number_value(loss) : NAN, &expires);
        if (rc >= 0) reply = json_pack("{s:f}", "lease_expires_at", expires);
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
        if (rc >= 0) reply = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", "done");
        break;
    }
    default: {
        const char *err;
        json_t *rt = json_object_get(c->body, "retryable");
        if (get_str(c, "error", 1, &err) < 0) return;
        if (rt && !json_is_boolean(rt)) { http_response_error(c->res, 400, "retryable: must be true or false"); return; }
        const char *st = NULL;
        if ((rc = write_begin(c->a)) >= 0) rc = queue_fail(q, c->id, tok, err, rt ? json_is_true(rt) : 0, &st);
        if (rc >= 0) reply = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", st);
        break;
    }
    }
    write_end(c->a, rc >= 0);
    if (rc < 0) { reply_store_error(c, rc, q->err[0] ? q->err : c->a->st->err, q->state); return; }
    if (op == W_COMPLETE || op == W_FAIL)
        fprintf(stderr, "prism-sweep serve: event=%s job=%lld state=%s\n", op == W_COMPLETE ? "complete" : "fail", c->id,
                json_string_value(json_object_get(reply, "state")));
    if (op == W_FAIL && !strcmp(json_string_value(json_object_get(reply, "state")), "failed")) api_halving_tick(c->a, "fail");
    reply_json(c->res, 200, reply);
}

static void h_heartbeat(route_ctx *c) { worker_job_op(c, W_HEARTBEAT); }
static void h_metrics_post(route_ctx *c) { worker_job_op(c, W_METRICS); }
static void h_checkpoint(route_ctx *c) { worker_job_op(c, W_CHECKPOINT); }
static void h_complete(route_ctx *c) { worker_job_op(c, W_COMPLETE); }
static void h_fail(route_ctx *c) { worker_job_op(c, W_FAIL); }

/* POST /api/v1/jobs/{id}/rung {lease_token, step, val_loss}: a halving rung reached (orchestrator/halving.h). */
static void h_rung(route_ctx *c) {
    const char *tok;
    long long step = -1;
    if (get_token(c, &tok) < 0 || get_int(c, "step", 1, &step) < 0) return;
    json_t *vl = json_object_get(c->body, "val_loss");
    if (!json_is_number(vl)) { http_response_error(c->res, 400, "val_loss: required number (the val loss at step)"); return; }
    char err[512] = "", state_buf[16] = "";
    const char *state = NULL;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = halving_report(c->a->st, c->id, tok, step, json_number_value(vl), &state, state_buf, err, sizeof err);
    write_end(c->a, rc >= 0);
    if (rc < 0) { reply_store_error(c, rc, err[0] ? err : c->a->st->err, state_buf); return; }
    fprintf(stderr, "prism-sweep serve: event=rung job=%lld step=%lld state=%s\n", c->id, step, state ? state : "?");
    reply_json(c->res, 200, json_pack("{s:I, s:I, s:s}", "job_id", (json_int_t)c->id, "step", (json_int_t)step,
                                      "state", state ? state : "paused"));
}

/* ---- admin routes -------------------------------------------------------------------------------- */

static void h_sweep_create(route_ctx *c) {
    sweeps_created cr;
    memset(&cr, 0, sizeof cr);
    char err[1024] = "";
    int too_big = 0;
    int rc = write_begin(c->a);
    if (rc >= 0) rc = sweeps_create_json_max(c->a->st, c->req->body.data ? c->req->body.data : "{}", c->req->body.len,
                                             API_MAX_CREATE_JOBS, &too_big, &cr, err, sizeof err);
    write_end(c->a, rc >= 0);
    if (too_big) { http_response_error(c->res, 413, "%s", err); return; }
    if (rc < 0) { reply_store_error(c, rc, err[0] ? err : c->a->st->err, NULL); return; }
    int created = cr.sweep_is_new || cr.jobs_created > 0 || cr.schedules_created > 0;
    reply_json(c->res, created ? 201 : 200,
               json_pack("{s:I, s:s, s:I, s:I, s:b, s:I, s:I}", "sweep_id", (json_int_t)cr.sweep_id, "name", cr.name,
                         "schedules", (json_int_t)cr.schedules_total, "jobs", (json_int_t)cr.jobs_total,
                         "created", created, "schedules_created", (json_int_t)cr.schedules_created,
                         "jobs_created", (json_int_t)cr.jobs_created));
}

enum { A_CANCEL, A_REQUEUE, A_PRIO, A_PAUSE, A_RESUME, A_SWEEP_PRIO };

static void admin_op(route_ctx *c, int op) {
    queue *q = &c->a->q;
    q->err[0] = q->state[0] = 0;
    long long prio = 0;
    if ((op == A_PRIO || op == A_SWEEP_PRIO) && get_int(c, "priority", 1, &prio) < 0) return;
    int rc = write_begin(c->a);
    if (rc >= 0) switch (op) {
        case A_CANCEL: rc = queue_cancel(q, c->id); break;
        case A_REQUEUE: rc = queue_requeue(q, c->id); break;
        case A_PRIO: rc = queue_set_priority(q, c->id, prio); break;
        case A_PAUSE: rc = queue_sweep_set_state(q, c->id, "paused"); break;
        case A_RESUME: rc = queue_sweep_set_state(q, c->id, "active"); break;
        default: rc = queue_sweep_set_priority(q, c->id, prio); break;
        }
    write_end(c->a, rc >= 0);
    if (rc < 0) { reply_store_error(c, rc, q->err[0] ? q->err : c->a->st->err, q->state); return; }
    if (op == A_CANCEL || op == A_REQUEUE) api_halving_tick(c->a, op == A_CANCEL ? "cancel" : "requeue");
    static const char *const names[] = { "cancel", "requeue", "priority", "pause", "resume", "sweep-priority" };
    fprintf(stderr, "prism-sweep serve: event=%s %s=%lld\n", names[op], op >= A_PAUSE ? "sweep" : "job", c->id);
    json_t *o;
    switch (op) {
    case A_CANCEL: o = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", "cancelled"); break;
    case A_REQUEUE: o = json_pack("{s:I, s:s}", "job_id", (json_int_t)c->id, "state", "queued"); break;
    case A_PRIO: o = json_pack("{s:I, s:I}", "job_id", (json_int_t)c->id, "priority", (json_int_t)prio); break;
    case A_PAUSE: o = json_pack("{s:I, s:s}", "sweep_id", (json_int_t)c->id, "state", "paused"); break;
    case A_RESUME: o = json_pack("{s:I, s:s}", "sweep_id", (json_int_t)c->id, "state", "active"); break;
    default: o = json_pack("{s:I, s:I}", "sweep_id", (json_int_t)c->id, "priority", (json_int_t)prio); break;
    }
    reply_json(c->res, 200, o);
}

static void h_cancel(route_ctx *c) { admin_op(c, A_CANCEL); }
static void h_requeue(route_ctx *c) { admin_op(c, A_REQUEUE); }
static void h_priority(route_ctx *c) { admin_op(c, A_PRIO); }
static void h_pause(route_ctx *c) { admin_op(c, A_PAUSE); }
static void h_resume(route_ctx *c) { admin_op(c, A_RESUME); }
static void h_sweep_priority(route_ctx *c) { admin_op(c, A_SWEEP_PRIO); }

/* ---- read views ---------------------------------------------------------------------------------- */

static sqlite3_stmt *prep(route_ctx *c, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->a->st->db, sql, -1, &s, NULL) != SQLITE_OK) {
        http_response_error(c->res, 500, "database error: %s", sqlite3_errmsg(c->a->st->db));
        return NULL;
    }
    return s;
}

/* After a row loop: rc is the last sqlite3_step; anything but SQLITE_DONE is a read error (a corrupt page,
 * an I/O error), never the end of the rows. Answers 500 naming it and returns -1. */
static int read_done(route_ctx *c, int rc, const char *what) {
    if (rc == SQLITE_DONE) return 0;
    http_response_error(c->res, 500, "database read failed (%s): %s", what, sqlite3_errmsg(c->a->st->db));
    return -1;
}

/* Converts column i to JSON by its SQLite type; names starting with '!' parse JSON text, '@' are heads,
 * '?' are booleans. */
static json_t *col_json(sqlite3_stmt *s, int i, const char *name) {
    int t = sqlite3_column_type(s, i);
    if (t == SQLITE_NULL) return json_null();
    if (name[0] == '@') return sweeps_heads_json((const char *)sqlite3_column_text(s, i));
    if (name[0] == '?') return json_boolean(sqlite3_column_int(s, i));
    if (name[0] == '!') {
        json_t *v = json_loads((const char *)sqlite3_column_text(s, i), 0, NULL);
        return v ? v : json_string((const char *)sqlite3_column_text(s, i));
    }
    if (t == SQLITE_INTEGER) return json_integer(sqlite3_column_int64(s, i));
    if (t == SQLITE_FLOAT) return json_real(sqlite3_column_double(s, i));
    return json_string((const char *)sqlite3_column_text(s, i));
}

static json_t *row_json(sqlite3_stmt *s, const char *const *names, int n) {
    json_t *o = json_object();
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        json_object_set_new(o, (nm[0] == '@' || nm[0] == '?' || nm[0] == '!') ? nm + 1 : nm, col_json(s, i, nm));
    }
    return o;
}

#define JOB_COLS \
    "j.id, j.sweep_id, j.schedule_id, sc.heads, sc.is_baseline, j.seed, j.seed_index, j.priority, j.state, j.attempt, " \
    "j.worker_id, w.name, j.device, j.step, coalesce(nullif(j.steps, 0), json_extract(j.job, '$.train.steps'), 0), " \
    "j.last_loss, r.val_loss, j.last_error, j.checkpoint_step, j.lease_expires_at, j.created_at, j.updated_at, j.finished_at"
static const char *const job_names[] = {
    "id", "sweep_id", "schedule_id", "@heads", "?is_baseline", "seed", "seed_index", "priority", "state", "attempt",
    "worker_id", "worker", "device", "step", "steps", "last_loss", "val_loss", "last_error", "checkpoint_step",
    "lease_expires_at", "created_at", "updated_at", "finished_at", "!job", "checkpoint_path", "!result",
};
#define JOB_FROM " FROM jobs j JOIN schedules sc ON sc.id = j.schedule_id LEFT JOIN workers w ON w.id = j.worker_id " \
                 "LEFT JOIN results r ON r.job_id = j.id "

static int workers_alive(api *a) {
    sqlite3_stmt *s = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(a->st->db, "SELECT count(*) FROM workers WHERE last_seen_at > ?1", -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_double(s, 1, store_now() - 2 * a->cfg.lease_ttl);
        if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int(s, 0);
    }
    sqlite3_finalize(s);
    return n;
}

/* Records (now, steps) for the sweep and returns steps/s over the samples of the last 600 s (-1: unknown). */
static double sweep_rate(api *a, long long sweep, long long steps, double now, double *window) {
    api_rate *r = NULL;
    for (int i = 0; i < 16; i++) if (a->rates[i].sweep == sweep) { r = &a->rates[i]; break; }
    if (!r) {
        r = &a->rates[sweep % 16];
        memset(r, 0, sizeof *r);
        r->sweep = sweep;
    }
    int last = (r->head + API_RATE_SAMPLES - 1) % API_RATE_SAMPLES;
    if (r->n == 0 || now - r->s[last].t >= 2.0) {
        r->s[r->head].t = now;
        r->s[r->head].steps = steps;
        r->head = (r->head + 1) % API_RATE_SAMPLES;
        if (r->n < API_RATE_SAMPLES) r->n++;
    }
    int oldest = -1;
    for (int k = r->n; k >= 1; k--) {
        int i = (r->head + API_RATE_SAMPLES - k) % API_RATE_SAMPLES;
        if (now - r->s[i].t <= 600) { oldest = i; break; }
    }
    if (oldest < 0 || now - r->s[oldest].t < 1.0) { *window = 0; return -1; }
    *window = now - r->s[oldest].t;
    return (double)(steps - r->s[oldest].steps) / *window;
}

static json_t *sweeps_query(route_ctx *c, long long only, int with_spec) {
    static const char *const sql =
        "SELECT s.id, s.name, s.state, s.priority, s.created_at, "
        " (SELECT count(*) FROM schedules WHERE sweep_id = s.id), "
        " coalesce(sum(j.state = 'queued'), 0), coalesce(sum(j.state = 'leased'), 0), coalesce(sum(j.state = 'done'), 0), "
        " coalesce(sum(j.state = 'failed'), 0), coalesce(sum(j.state = 'cancelled'), 0), count(j.id), "
        /* total() sums in floating point (never an overflow error); a job counts at most its own steps */
        " CAST(total(CASE WHEN j.state = 'cancelled' THEN 0 "
        "   WHEN j.state = 'done' THEN coalesce(nullif(j.steps, 0), json_extract(j.job, '$.train.steps'), 0) "
        "   ELSE min(j.step, coalesce(nullif(j.steps, 0), json_extract(j.job, '$.train.steps'), j.step)) END) AS INTEGER), "
        " CAST(total(CASE WHEN j.state = 'cancelled' THEN 0 WHEN j.state = 'pruned' THEN j.step "   /* pruned: ends at its rung */
        "   ELSE coalesce(nullif(j.steps, 0), json_extract(j.job, '$.train.steps'), 0) END) AS INTEGER), "
        " coalesce(sum(j.state = 'done' AND j.finished_at > ?2), 0), s.spec, "
        " coalesce(sum(j.state = 'paused'), 0), coalesce(sum(j.state = 'pruned'), 0) "
        "FROM sweeps s LEFT JOIN jobs j ON j.sweep_id = s.id WHERE (?1 = 0 OR s.id = ?1) GROUP BY s.id ORDER BY s.id";
    sqlite3_stmt *s = prep(c, sql);
    if (!s) return NULL;
    double now = store_now();
    sqlite3_bind_int64(s, 1, only);
    sqlite3_bind_double(s, 2, now - 600);
    int alive = workers_alive(c->a);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(s, 0);
        long long steps_done = sqlite3_column_int64(s, 12), steps_total = sqlite3_column_int64(s, 13);
        double window = 0;
        double rate = sweep_rate(c->a, id, steps_done, now, &window);
        long long remaining = steps_total - steps_done;
        json_t *eta = remaining <= 0 ? json_real(0) : rate > 0 ? json_real(remaining / rate) : json_null();
        json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:f, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:i, s:I, s:I, "
                              "s:{s:f, s:I, s:I, s:f}, s:o}",
                              "id", (json_int_t)id, "name", (const char *)sqlite3_column_text(s, 1),
                              "state", (const char *)sqlite3_column_text(s, 2),
                              "priority", (json_int_t)sqlite3_column_int64(s, 3), "created_at", sqlite3_column_double(s, 4),
                              "schedules", (json_int_t)sqlite3_column_int64(s, 5),
                              "counts", "queued", (json_int_t)sqlite3_column_int64(s, 6), "leased",
                              (json_int_t)sqlite3_column_int64(s, 7), "done", (json_int_t)sqlite3_column_int64(s, 8),
                              "failed", (json_int_t)sqlite3_column_int64(s, 9), "cancelled",
                              (json_int_t)sqlite3_column_int64(s, 10),
                              "total", (json_int_t)sqlite3_column_int64(s, 11), "workers_alive", alive,
                              "steps_done", (json_int_t)steps_done, "steps_total", (json_int_t)steps_total,
                              "throughput", "window_s", window, "jobs_done", (json_int_t)sqlite3_column_int64(s, 14),
                              "steps", (json_int_t)(rate > 0 ? (long long)(rate * window + 0.5) : 0),
                              "steps_per_s", rate > 0 ? rate : 0.0,
                              "eta_s", eta);
        json_t *cn = json_object_get(o, "counts");   /* successive halving: at a rung awaiting promotion, and not promoted */
        json_object_set_new(cn, "paused", json_integer(sqlite3_column_int64(s, 16)));
        json_object_set_new(cn, "pruned", json_integer(sqlite3_column_int64(s, 17)));
        if (o && with_spec) {
            json_t *spec = json_loads((const char *)sqlite3_column_text(s, 15), 0, NULL);
            json_object_set_new(o, "spec", spec ? spec : json_null());
        }
        if (o) json_array_append_new(arr, o);
    }
    if (read_done(c, rc, "sweeps") < 0) {
        json_decref(arr);
        arr = NULL;
    }
    sqlite3_finalize(s);
    return arr;
}

static void h_sweeps_list(route_ctx *c) {
    json_t *arr = sweeps_query(c, 0, 0);
    if (!arr) return;
    reply_json(c->res, 200, json_pack("{s:o, s:i, s:f}", "sweeps", arr, "workers_alive", workers_alive(c->a),
                                      "now", store_now()));
}

static void h_sweep_get(route_ctx *c) {
    json_t *arr = sweeps_query(c, c->id, 1);
    if (!arr) return;
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        http_response_error(c->res, 404, "no sweep %lld", c->id);
        return;
    }
    json_t *o = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    reply_json(c->res, 200, o);
}

static int sweep_exists(route_ctx *c) {
    sqlite3_stmt *s = prep(c, "SELECT 1 FROM sweeps WHERE id = ?1");
    if (!s) return -1;
    sqlite3_bind_int64(s, 1, c->id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        if (read_done(c, rc, "sweep") == 0) http_response_error(c->res, 404, "no sweep %lld", c->id);
        sqlite3_finalize(s);
        return -1;
    }
    sqlite3_finalize(s);
    return 0;
}

static void h_sweep_jobs(route_ctx *c) {
    char state[32] = "";
    int has_state = query_get(c->req->query, "state", state, sizeof state);
    if (has_state && strcmp(state, "queued") && strcmp(state, "leased") && strcmp(state, "done") &&
        strcmp(state, "failed") && strcmp(state, "cancelled") && strcmp(state, "paused") && strcmp(state, "pruned")) {
        http_response_error(c->res, 400, "state: must be queued, leased, done, failed, cancelled, paused or pruned");
        return;
    }
    char num[32];
    long long limit = -1, offset = 0;
    if ((query_get(c->req->query, "limit", num, sizeof num) && (parse_ll(num, &limit) < 0 || limit < 0)) ||
        (query_get(c->req->query, "offset", num, sizeof num) && (parse_ll(num, &offset) < 0 || offset < 0))) {
        http_response_error(c->res, 400, "limit and offset: must be integers >= 0");
        return;
    }
    if (sweep_exists(c) < 0) return;
    sqlite3_stmt *s = prep(c, "SELECT " JOB_COLS JOB_FROM "WHERE j.sweep_id = ?1 AND (?2 IS NULL OR j.state = ?2) "
                              "ORDER BY j.priority DESC, j.seed_index, sc.is_baseline DESC, sc.ord, j.id LIMIT ?3 OFFSET ?4");
    if (!s) return;
    sqlite3_bind_int64(s, 1, c->id);
    if (has_state) sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, limit);
    sqlite3_bind_int64(s, 4, offset);
    json_t *arr = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) json_array_append_new(arr, row_json(s, job_names, 23));
    sqlite3_finalize(s);
    if (read_done(c, rc, "jobs") < 0) { json_decref(arr); return; }
    reply_json(c->res, 200, json_pack("{s:o}", "jobs", arr));
}

static void h_job_get(route_ctx *c) {
    sqlite3_stmt *s = prep(c, "SELECT " JOB_COLS ", j.job, j.checkpoint_path, r.result" JOB_FROM "WHERE j.id = ?1");
    if (!s) return;
    sqlite3_bind_int64(s, 1, c->id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        if (read_done(c, rc, "job") == 0) http_response_error(c->res, 404, "no job %lld", c->id);
        sqlite3_finalize(s);
        return;
    }
    json_t *o = row_json(s, job_names, 26);
    sqlite3_finalize(s);
    reply_json(c->res, 200, o);
}

static void h_job_metrics(route_ctx *c) {
    char kind[16] = "val", since_s[32] = "-1", fmt[16] = "json";
    query_get(c->req->query, "kind", kind, sizeof kind);
    query_get(c->req->query, "format", fmt, sizeof fmt);
    long long since = -1;
    if (query_get(c->req->query, "since", since_s, sizeof since_s) && parse_ll(since_s, &since) < 0) {
        http_response_error(c->res, 400, "since: must be an integer step");
        return;
    }
    if (strcmp(kind, "val") && strcmp(kind, "train")) { http_response_error(c->res, 400, "kind: must be val or train"); return; }
    if (strcmp(fmt, "json") && strcmp(fmt, "csv")) { http_response_error(c->res, 400, "format: must be json or csv"); return; }
    sqlite3_stmt *s = prep(c, "SELECT attempt FROM jobs WHERE id = ?1");
    if (!s) return;
    sqlite3_bind_int64(s, 1, c->id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        if (read_done(c, rc, "job") == 0) http_response_error(c->res, 404, "no job %lld", c->id);
        sqlite3_finalize(s);
        return;
    }
    long long attempt = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    s = prep(c, "SELECT m.step, m.value, m.tokens, m.lr, m.tok_per_s, m.attempt FROM metrics m "
                "WHERE m.job_id = ?1 AND m.kind = ?2 AND m.step > ?3 AND m.attempt = "
                "(SELECT max(attempt) FROM metrics m2 WHERE m2.job_id = m.job_id AND m2.step = m.step AND m2.kind = m.kind) "
                "ORDER BY m.step");
    if (!s) return;
    sqlite3_bind_int64(s, 1, c->id);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, since);
    static const char *const names[] = { "step", "value", "tokens", "lr", "tok_per_s", "attempt" };
    if (strcmp(fmt, "csv") == 0) {
        http_buf b = {0};
        const char *hdr = "step,value,tokens,lr,tok_per_s,attempt\n";
        http_buf_append(&b, hdr, strlen(hdr), SIZE_MAX / 2);
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            char line[256];
            int n = 0;
            for (int i = 0; i < 6; i++) {
                const char *t = sqlite3_column_type(s, i) == SQLITE_NULL ? "" : (const char *)sqlite3_column_text(s, i);
                n += snprintf(line + n, sizeof line - n, "%s%s", i ? "," : "", t);
            }
            n += snprintf(line + n, sizeof line - n, "\n");
            http_buf_append(&b, line, (size_t)n, SIZE_MAX / 2);
        }
        sqlite3_finalize(s);
        if (read_done(c, rc, "metrics") < 0) { http_buf_free(&b); return; }
        http_response_set(c->res, 200, "text/csv; charset=utf-8", b.data ? b.data : "", b.len);
        http_buf_free(&b);
        return;
    }
    json_t *pts = json_array();
    long long last = -1;
    int any = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_array_append_new(pts, row_json(s, names, 6));
        last = sqlite3_column_int64(s, 0);
        any = 1;
    }
    sqlite3_finalize(s);
    if (read_done(c, rc, "metrics") < 0) { json_decref(pts); return; }
    reply_json(c->res, 200, json_pack("{s:I, s:s, s:I, s:o, s:o}", "job_id", (json_int_t)c->id, "kind", kind,
                                      "attempt", (json_int_t)attempt, "points", pts,
                                      "last_step", any ? json_integer(last) : json_null()));
}

static void h_workers(route_ctx *c) {
    sqlite3_stmt *s = prep(c, "SELECT id, name, host, devices, registered_at, last_seen_at FROM workers ORDER BY id");
    sqlite3_stmt *j = prep(c, "SELECT id, device, sweep_id, step, coalesce(nullif(steps, 0), json_extract(job, '$.train.steps'), 0) "
                              "FROM jobs WHERE state = 'leased' AND worker_id = ?1 ORDER BY id");
    if (!s || !j) { sqlite3_finalize(s); sqlite3_finalize(j); return; }
    static const char *const names[] = { "id", "name", "host", "!devices", "registered_at", "last_seen_at" };
    static const char *const jnames[] = { "job_id", "device", "sweep_id", "step", "steps" };
    double cutoff = store_now() - 2 * c->a->cfg.lease_ttl;
    json_t *arr = json_array();
    int rc, jrc = SQLITE_DONE;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *o = row_json(s, names, 6);
        json_object_set_new(o, "alive", json_boolean(sqlite3_column_double(s, 5) > cutoff));
        json_t *jobs = json_array();
        sqlite3_reset(j);
        sqlite3_bind_int64(j, 1, sqlite3_column_int64(s, 0));
        while ((jrc = sqlite3_step(j)) == SQLITE_ROW) json_array_append_new(jobs, row_json(j, jnames, 5));
        json_object_set_new(o, "jobs", jobs);
        json_array_append_new(arr, o);
        if (jrc != SQLITE_DONE) break;
    }
    if (rc == SQLITE_ROW) rc = jrc;
    sqlite3_finalize(s);
    sqlite3_finalize(j);
    if (read_done(c, rc, "workers") < 0) { json_decref(arr); return; }
    reply_json(c->res, 200, json_pack("{s:o}", "workers", arr));
}

static void h_leaderboard(route_ctx *c) {
    char fmt[16] = "json", err[512] = "";
    query_get(c->req->query, "format", fmt, sizeof fmt);
    if (strcmp(fmt, "json") && strcmp(fmt, "csv")) { http_response_error(c->res, 400, "format: must be json or csv"); return; }
    json_t *lb = NULL;
    int rc = leaderboard_build(c->a->st, c->id, &lb, err, sizeof err);
    if (rc < 0) { reply_store_error(c, rc, err, NULL); return; }
    if (strcmp(fmt, "csv") == 0) {
        char *csv = leaderboard_csv(lb);
        json_decref(lb);
        if (!csv) { http_response_error(c->res, 500, "out of memory"); return; }
        http_response_set(c->res, 200, "text/csv; charset=utf-8", csv, strlen(csv));
        c->res->extra_headers = "Content-Disposition: attachment; filename=\"leaderboard.csv\"\r\nCache-Control: no-store\r\n";
        free(csv);
        return;
    }
    reply_json(c->res, 200, lb);
}

/* ---- health, metrics ----------------------------------------------------------------------------- */

static const double lat_bounds[API_LAT_BUCKETS] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };

static void h_healthz(route_ctx *c) {
    sqlite3_stmt *s = prep(c, "SELECT count(*) FROM sweeps");
    if (!s) return;
    int ok = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    if (!ok || c->a->stopping) {
        reply_json(c->res, 503, json_pack("{s:s, s:b}", "error", c->a->stopping ? "shutting down" : "database not readable", "ok", 0));
        return;
    }
    double ago = store_now() - c->a->write_err_at;
    if (c->a->write_err_at > 0 && ago < API_WRITE_ERR_WINDOW_S) {
        char msg[700];
        snprintf(msg, sizeof msg, "database write failed %.0f s ago: %s (free disk space or fix the file; writes are "
                 "refused until then)", ago, c->a->write_err);
        reply_json(c->res, 503, json_pack("{s:s, s:b, s:s, s:s}", "error", msg, "ok", 0, "db", "write failed",
                                          "version", PRISM_VERSION));
        return;
    }
    reply_json(c->res, 200, json_pack("{s:b, s:s, s:s}", "ok", 1, "version", PRISM_VERSION, "db", "ok"));
}

static void buf_printf(http_buf *b, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) http_buf_append(b, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), SIZE_MAX / 2);
}

static void h_metrics_prom(route_ctx *c) {
    api *a = c->a;
    http_buf b = {0};
    buf_printf(&b, "# HELP prism_jobs Jobs per state.\n# TYPE prism_jobs gauge\n");
    static const char *const states[] = { "queued", "leased", "done", "failed", "cancelled" };
    sqlite3_stmt *s = prep(c, "SELECT count(*) FROM jobs WHERE state = ?1");
    if (!s) { http_buf_free(&b); return; }
    for (int i = 0; i < 5; i++) {
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, states[i], -1, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        if (rc != SQLITE_ROW) {   /* a read error, not zero jobs */
            http_response_error(c->res, 500, "database read failed (jobs per state): %s", sqlite3_errmsg(a->st->db));
            sqlite3_finalize(s);
            http_buf_free(&b);
            return;
        }
        long long n = sqlite3_column_int64(s, 0);
        buf_printf(&b, "prism_jobs{state=\"%s\"} %lld\n", states[i], n);
    }
    sqlite3_finalize(s);
    buf_printf(&b, "# HELP prism_leases_granted_total Leases granted since start.\n# TYPE prism_leases_granted_total counter\n"
                   "prism_leases_granted_total %llu\n", a->q.leases_granted);
    buf_printf(&b, "# HELP prism_leases_expired_total Leases expired since start.\n# TYPE prism_leases_expired_total counter\n"
                   "prism_leases_expired_total %llu\n", a->q.leases_expired);
    buf_printf(&b, "# HELP prism_metric_points_total Metric points stored since start.\n# TYPE prism_metric_points_total counter\n"
                   "prism_metric_points_total %llu\n", a->q.points_stored);
    buf_printf(&b, "# HELP prism_commits_total Group commits since start.\n# TYPE prism_commits_total counter\n"
                   "prism_commits_total %llu\n", a->commits);
    buf_printf(&b, "# HELP prism_workers_alive Workers seen within two lease TTLs.\n# TYPE prism_workers_alive gauge\n"
                   "prism_workers_alive %d\n", workers_alive(a));
    buf_printf(&b, "# HELP prism_http_requests_total Requests answered, by status code.\n# TYPE prism_http_requests_total counter\n");
    for (int code = 100; code < 600; code++)
        if (a->req_by_code[code]) buf_printf(&b, "prism_http_requests_total{code=\"%d\"} %llu\n", code, a->req_by_code[code]);
    buf_printf(&b, "# HELP prism_http_request_duration_seconds Handling time per request.\n"
                   "# TYPE prism_http_request_duration_seconds histogram\n");
    unsigned long long cum = 0, total = 0;
    for (int i = 0; i <= API_LAT_BUCKETS; i++) total += a->lat_bucket[i];
    for (int i = 0; i < API_LAT_BUCKETS; i++) {
        cum += a->lat_bucket[i];
        buf_printf(&b, "prism_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i], cum);
    }
    buf_printf(&b, "prism_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", total);
    buf_printf(&b, "prism_http_request_duration_seconds_sum %.6f\nprism_http_request_duration_seconds_count %llu\n",
               a->lat_sum, total);
    if (a->metrics_extra) a->metrics_extra(a->metrics_extra_ud, &b);
    http_response_set(c->res, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "", b.len);
    http_buf_free(&b);
}

/* ---- static files -------------------------------------------------------------------------------- */

static const char *content_type(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return "application/octet-stream";
    static const struct { const char *ext, *type; } types[] = {
        { ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
        { ".mjs", "text/javascript; charset=utf-8" }, { ".css", "text/css; charset=utf-8" },
        { ".json", "application/json" }, { ".svg", "image/svg+xml" }, { ".png", "image/png" },
        { ".ico", "image/x-icon" }, { ".txt", "text/plain; charset=utf-8" }, { ".map", "application/json" },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0) return types[i].type;
    return "application/octet-stream";
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Percent-decodes src into dst; returns -1 on a bad escape or a NUL. */
static int url_decode(const char *src, char *dst, size_t n) {
    size_t o = 0;
    for (const char *p = src; *p; p++) {
        if (o + 1 >= n) return -1;
        if (*p == '%') {
            int h = hexval(p[1]), l = h >= 0 ? hexval(p[2]) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0)) return -1;
            dst[o++] = (char)(h * 16 + l);
            p += 2;
        } else dst[o++] = *p;
    }
    dst[o] = 0;
    return 0;
}

/* Serves root/rel if it resolves inside root. */
static void serve_file(route_ctx *c, const char *root_real, const char *rel) {
    char full[8192], real[PATH_MAX];
    snprintf(full, sizeof full, "%s/%s", root_real, rel);
    if (!realpath(full, real)) { http_response_error(c->res, 404, "no such file: /%s", rel); return; }
    size_t rl = strlen(root_real);
    if (strncmp(real, root_real, rl) != 0 || real[rl] != '/') {
        http_response_error(c->res, 403, "path escapes the web root");
        return;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        http_response_error(c->res, 404, "no such file: /%s", rel);
        return;
    }
    if (st.st_size > 16 * 1024 * 1024) { close(fd); http_response_error(c->res, 500, "file too large to serve"); return; }
    char *data = malloc((size_t)st.st_size + 1);
    ssize_t got = 0;
    while (data && got < st.st_size) {
        ssize_t n = read(fd, data + got, (size_t)(st.st_size - got));
        if (n <= 0) break;
        got += n;
    }
    close(fd);
    if (!data || got != st.st_size) { free(data); http_response_error(c->res, 500, "cannot read /%s", rel); return; }
    http_response_set(c->res, 200, content_type(real), data, (size_t)got);
    c->res->extra_headers = "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n";
    free(data);
}

static void h_static(route_ctx *c) {
    char path[HTTP_MAX_URL + 1];
    if (url_decode(c->req->path, path, sizeof path) < 0 || path[0] != '/') {
        http_response_error(c->res, 400, "bad path");
        return;
    }
    if (strstr(path, "..") || strchr(path, '\\') || strstr(path, "//")) {
        http_response_error(c->res, 403, "path traversal refused: %s", c->req->path);
        return;
    }
    static const char vendor[] = "/vendor/chart.js/";
    if (strncmp(path, vendor, sizeof vendor - 1) == 0) {
        const char *name = path + sizeof vendor - 1;
        if (strcmp(name, "chart.umd.js") == 0) name = "chart.min.js";
        for (const char *p = name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_')) {
                http_response_error(c->res, 404, "no such vendor file");
                return;
            }
        char vreal[PATH_MAX];
        const char *vd = c->a->cfg.vendor_dir ? c->a->cfg.vendor_dir : "/usr/share/javascript/chart.js";
        if (!*name || !realpath(vd, vreal)) {
            http_response_error(c->res, 404, "Chart.js is not installed (apt-get install libjs-chart.js)");
            return;
        }
        serve_file(c, vreal, name);
        return;
    }
    if (!c->a->web_real[0]) { http_response_error(c->res, 404, "no web root configured (--web DIR)"); return; }
    const char *rel = path + 1;
    if (!*rel || path[strlen(path) - 1] == '/') {
        char idx[HTTP_MAX_URL + 16];
        snprintf(idx, sizeof idx, "%sindex.html", rel);
        serve_file(c, c->a->web_real, idx);
        return;
    }
    serve_file(c, c->a->web_real, rel);
}

/* ---- routing ------------------------------------------------------------------------------------- */

enum { R_PUBLIC = -1, R_READ = 0, R_WORKER = 1, R_ADMIN = 2 };

typedef struct route {
    int method;                 /* HTTP_GET / HTTP_POST */
    const char *pattern;        /* segments after /api/v1, '#' = id */
    int auth;
    void (*fn)(route_ctx *);
} route;

static const route routes[] = {
    { HTTP_POST, "workers/register", R_WORKER, h_register },
    { HTTP_POST, "lease", R_WORKER, h_lease },
    { HTTP_POST, "jobs/#/heartbeat", R_WORKER, h_heartbeat },
    { HTTP_POST, "jobs/#/metrics", R_WORKER, h_metrics_post },
    { HTTP_POST, "jobs/#/checkpoint", R_WORKER, h_checkpoint },
    { HTTP_POST, "jobs/#/complete", R_WORKER, h_complete },
    { HTTP_POST, "jobs/#/fail", R_WORKER, h_fail },
    { HTTP_POST, "jobs/#/rung", R_WORKER, h_rung },
    { HTTP_POST, "jobs/#/cancel", R_ADMIN, h_cancel },
    { HTTP_POST, "jobs/#/requeue", R_ADMIN, h_requeue },
    { HTTP_POST, "jobs/#/priority", R_ADMIN, h_priority },
    { HTTP_POST, "sweeps", R_ADMIN, h_sweep_create },
    { HTTP_POST, "sweeps/#/pause", R_ADMIN, h_pause },
    { HTTP_POST, "sweeps/#/resume", R_ADMIN, h_resume },
    { HTTP_POST, "sweeps/#/priority", R_ADMIN, h_sweep_priority },
    { HTTP_GET, "sweeps", R_READ, h_sweeps_list },
    { HTTP_GET, "sweeps/#", R_READ, h_sweep_get },
    { HTTP_GET, "sweeps/#/jobs", R_READ, h_sweep_jobs },
    { HTTP_GET, "sweeps/#/leaderboard", R_READ, h_leaderboard },
    { HTTP_GET, "jobs/#", R_READ, h_job_get },
    { HTTP_GET, "jobs/#/metrics", R_READ, h_job_metrics },
    { HTTP_GET, "workers", R_READ, h_workers },
};

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

static void record(api *a, http_request *req, http_response *res) {
    int st = res->status ? res->status : 500;
    if (st >= 100 && st < 600) { a->req_by_code[st]++; a->req_by_class[st / 100]++; }
    double dt = util_now_s() - req->t_start;
    if (dt < 0) dt = 0;
    int b = 0;
    while (b < API_LAT_BUCKETS && dt > lat_bounds[b]) b++;
    a->lat_bucket[b]++;
    a->lat_sum += dt;
}

static void dispatch(api *a, http_request *req, http_response *res) {
    route_ctx c = { .a = a, .req = req, .res = res };
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
        if (path[1] == 'h') h_healthz(&c); else h_metrics_prom(&c);
        return;
    }
    if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0) {
        if (req->method != HTTP_GET && req->method != HTTP_HEAD) {
            http_response_error(res, 405, "static files take GET only");
            res->extra_headers = "Allow: GET, HEAD\r\n";
            return;
        }
        h_static(&c);
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
    dispatch(a, req, res);
    if (!res->status) http_response_error(res, 500, "internal error: no answer");
    record(a, req, res);
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
    return 0;
}

void api_release(api *a) {
    if (a->txn_open) { store_rollback(a->st); a->txn_open = 0; }
    queue_release(&a->q);
    for (int i = 0; i < 3; i++) {
        sqlite3_finalize(a->sp_stmt[i]);
        a->sp_stmt[i] = NULL;
    }
}
