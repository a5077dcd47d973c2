/* report.c — the worker's calls to the server: register, lease, and the reports of the job a slot holds.
 *
 * Design. While a job trains, a reporter thread of its slot does the talking: every heartbeat period it
 * POSTs a heartbeat, every flush period it sends the metrics outbox, and it reports each new checkpoint as
 * soon as it is durable. It sleeps on the slot's condition variable so a checkpoint wakes it early, and
 * heartbeats thus run on their own timer, whatever the step length (a cold start, a long step, an
 * evaluation). It has its own libcurl handle (client.c), which retries network errors and 5xx with
 * backoff, so an orchestrator restart is invisible except for a pause: the outbox keeps everything until
 * it is acknowledged. When training ends, the device thread reports the outcome itself (report_outcome):
 * metrics first, then the checkpoint, then complete / fail / rung, so what the server stores is ordered.
 * A 409 (cancelled, lease expired and re-leased) or a 404 on a job-scoped call (the job or its sweep is
 * no longer on the server) means the job is not ours any more: stop = 1, `lost`, and the device thread
 * drops the job's unsent points (the server would refuse them) and goes back to leasing. A 401/403 after
 * registration (the worker token was changed or revoked while we ran) says nothing about the job or its
 * points, and every later call would be refused too: the job stops the way SIGTERM stops it (stop = 2:
 * finish the step, write a checkpoint, return) but nothing is reported, env->refused stops every slot from
 * leasing, and the agent exits 2. The job's lease then expires and a worker with a valid token resumes it
 * from its last reported checkpoint; only 400/413/422 on metrics (malformed points) make the outbox drop
 * anything (client.c).
 */
#include "report.h"

#include "heartbeat.h"
#include "logesc.h"
#include "slot.h"
#include "testhook.h"
#include "train.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- registration and lease ------------------------------------------------------------------------ */

int report_register(slot_env *env, client *c) {
    json_t *devs = json_array();
    for (int i = 0; i < env->nslots; i++) json_array_append_new(devs, json_string(env->slots[i].device));
    json_t *body = json_pack("{s:s, s:s, s:o}", "name", env->name, "host", env->host, "devices", devs);
    json_t *resp = NULL;
    volatile int *saved = c->abort;
    c->abort = env->quit;
    c->first_contact = env->worker_id == 0;   /* the first registration: is this a prism-sweep server at all? */
    int rc = client_request(c, "POST", "/api/v1/workers/register", body, -1, &resp);
    c->first_contact = 0;
    c->abort = saved;
    json_decref(body);
    if (rc == CLIENT_EREJECTED && !c->err_json) rc = CLIENT_EPROTO;   /* a 4xx that is not a prism-sweep answer */
    if (rc != CLIENT_OK) {
        char e[4 * sizeof c->err];
        if (rc == CLIENT_EPROTO)
            fprintf(stderr, "prism-worker: --server %s is not a prism-sweep server, or not at this scheme, host and "
                    "port: %s; give the address `prism-sweep serve` prints (http://HOST:PORT)\n", env->o->server,
                    log_escape(e, sizeof e, c->err));
        else if (rc != CLIENT_ESTOPPED)
            fprintf(stderr, "prism-worker: registration refused: %s%s\n", log_escape(e, sizeof e, c->err),
                    c->status == 401 ? " (check --token-file: it must hold the server's worker token)" : "");
        json_decref(resp);
        return rc;
    }
    json_int_t id = json_integer_value(json_object_get(resp, "worker_id"));
    double hb = json_number_value(json_object_get(resp, "heartbeat_every_s"));
    double ttl = json_number_value(json_object_get(resp, "lease_ttl_s"));
    json_decref(resp);
    if (id <= 0) {
        fprintf(stderr, "prism-worker: --server %s is not a prism-sweep server: its answer to POST "
                "/api/v1/workers/register has no worker_id; give the address `prism-sweep serve` prints\n", env->o->server);
        return CLIENT_EPROTO;
    }
    env->worker_id = id;
    if (env->o->heartbeat_s > 0) env->heartbeat_s = env->o->heartbeat_s;
    else if (hb > 0) env->heartbeat_s = hb;
    else if (ttl > 0) env->heartbeat_s = ttl / 3;
    else env->heartbeat_s = 10;
    progress_event(-1, "registered", "worker_id=%lld name=%s server=%s devices=%d heartbeat_s=%.2f",
                   (long long)id, env->name, env->o->server, env->nslots, env->heartbeat_s);
    return CLIENT_OK;
}

int report_lease(slot *s, json_t **resp) {
    json_t *body = json_pack("{s:I, s:s}", "worker_id", (json_int_t)s->env->worker_id, "device", s->device);
    *resp = NULL;
    if (body && lease_filter_to_json(&s->env->filter, body) != 0) { json_decref(body); body = NULL; }   /* its trainers */
    if (!body) { snprintf(s->cl.err, sizeof s->cl.err, "out of memory"); return CLIENT_ENOMEM; }
    s->cl.abort = s->env->quit;
    int rc = client_request(&s->cl, "POST", "/api/v1/lease", body, -1, resp);
    json_decref(body);
    if (rc != CLIENT_OK) { json_decref(*resp); *resp = NULL; }
    return rc;
}

/* ---- one job's report state ------------------------------------------------------------------------ */

void report_begin(slot *s) {
    report *r = &s->rp;
    snprintf(r->path_metrics, sizeof r->path_metrics, "/api/v1/jobs/%lld/metrics", r->l.job_id);
    snprintf(r->path_heartbeat, sizeof r->path_heartbeat, "/api/v1/jobs/%lld/heartbeat", r->l.job_id);
    snprintf(r->path_checkpoint, sizeof r->path_checkpoint, "/api/v1/jobs/%lld/checkpoint", r->l.job_id);
    r->lost = 0;
    r->refused = 0;
    r->lost_reason[0] = 0;
    r->started = 0;
    outbox_init(&r->ob);
}

void report_end(slot *s) {
    outbox_release(&s->rp.ob);
    lease_release(&s->rp.l);
}

void report_mark_lost(slot *s, const char *why) {
    pthread_mutex_lock(&s->mu);
    if (!s->rp.lost) {
        s->rp.lost = 1;
        snprintf(s->rp.lost_reason, sizeof s->rp.lost_reason, "%s", why);
    }
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
}

/* 404 on a job-scoped call: the job (or its sweep) is not on the server any more; like a 409. */
static void report_mark_gone(slot *s, const client *c) {
    char why[512];
    snprintf(why, sizeof why, "the job is gone from the server: %.440s", c->err);
    report_mark_lost(s, why);
}

/* 401/403 on any call after registration: the server no longer takes this worker's token, so nothing
 * this worker sends can succeed. The slot's job stops the way SIGTERM stops it (stop = 2: finish the
 * step, checkpoint, return) and is not reported; the agent leases nothing more and exits 2 (agent_run
 * prints the first refusal). */
void report_token_refused(slot *s, const client *c) {
    slot_env *env = s->env;
    pthread_mutex_lock(&env->refuse_mu);
    if (!env->refused) {
        env->refused_status = c->status;
        snprintf(env->refused_req, sizeof env->refused_req, "%s", c->req);
        snprintf(env->refused_err, sizeof env->refused_err, "%s", c->err);
        env->refused = 1;
    }
    pthread_mutex_unlock(&env->refuse_mu);
    pthread_mutex_lock(&s->mu);
    s->rp.refused = 1;
    if (s->stop == 0) s->stop = 2;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* 1 when no checkpoint waits, or the one that waits has every point of its steps out of the outbox. */
static int ckpt_covered(slot *s) {
    pthread_mutex_lock(&s->mu);
    int pending = s->ck.pending;
    long long need = s->ck.covered;
    pthread_mutex_unlock(&s->mu);
    return !pending || outbox_out(&s->rp.ob) >= need;
}

int report_send_checkpoint(slot *s, client *c, double retry_for_s) {
    slot_ckpt *ck = &s->ck;
    if (!ckpt_covered(s)) return CLIENT_OK;   /* not before its points: the next flush sends them, then it */
    pthread_mutex_lock(&s->mu);
    if (!ck->pending) { pthread_mutex_unlock(&s->mu); return CLIENT_OK; }
    json_t *body = json_pack("{s:s, s:s, s:i}", "lease_token", s->rp.l.token, "path", ck->path, "step", ck->step);
    int step = ck->step;
    char sent[PATH_MAX];            /* a newer checkpoint may replace ck->path while this one is in flight */
    snprintf(sent, sizeof sent, "%s", ck->path);
    ck->sending = 1;
    ck->tried = 1;
    pthread_mutex_unlock(&s->mu);
    int rc = client_request(c, "POST", s->rp.path_checkpoint, body, retry_for_s, NULL);
    json_decref(body);
    pthread_mutex_lock(&s->mu);
    ck->sending = 0;
    if (rc == CLIENT_OK) slot_ckpt_acked(s, sent, step);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Log mode: one structured line per report that carried new train points. */
static void report_log_progress(slot *s) {
    if (s->env->o->progress == 1) return;
    progress_row r;
    pthread_mutex_lock(&s->mu);
    int fresh = progress_job_take(&s->view, &r);
    pthread_mutex_unlock(&s->mu);
    if (fresh) progress_report(s->index, &r);
}

/* ---- the reporter thread --------------------------------------------------------------------------- */

static void *report_thread(void *arg) {
    slot *s = arg;
    report *r = &s->rp;
    double hb = s->env->heartbeat_s, fl = s->env->o->flush_s;
    double next_hb = util_now_s() + hb, next_flush = util_now_s() + fl;
    pthread_mutex_lock(&s->mu);
    while (!s->reporter_quit && !r->lost && !r->refused) {
        double wake = next_hb < next_flush ? next_hb : next_flush;
        int pending = s->ck.pending;
        if (!pending && util_now_s() < wake) {
            struct timespec ts;
            ts.tv_sec = (time_t)wake;
            ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);   /* cv uses CLOCK_MONOTONIC, as util_now_s */
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        double now = util_now_s();
        int rc = CLIENT_OK;
        if (now >= next_flush || pending) {
            /* metrics first: the checkpoint's step is then already covered by stored points */
            /* a flush sends the points pending when it starts (a fast trainer cannot keep the reporter in it); a
             * checkpoint written meanwhile has points past that, pushed before it: a second flush sends them */
            rc = outbox_flush(&r->ob, &s->rcl, r->path_metrics, r->l.token, REPORT_BATCH, -1);
            if (rc == CLIENT_OK && !ckpt_covered(s))
                rc = outbox_flush(&r->ob, &s->rcl, r->path_metrics, r->l.token, REPORT_BATCH, -1);
            if (rc == CLIENT_OK) rc = report_send_checkpoint(s, &s->rcl, -1);
            next_flush = util_now_s() + fl;
            if (rc == CLIENT_OK) report_log_progress(s);
        }
        if (rc == CLIENT_OK && util_now_s() >= next_hb) {
            pthread_mutex_lock(&s->mu);
            heartbeat h = { .step = s->view.row.step, .loss = s->view.row.loss };   /* common/heartbeat.h */
            json_t *body = heartbeat_to_json(r->l.token, &h);
            pthread_mutex_unlock(&s->mu);
            json_t *hr = NULL;
            rc = client_request(&s->rcl, "POST", r->path_heartbeat, body, -1, &hr);
            json_decref(body);
            if (rc == CLIENT_OK && hr) {   /* the sweep's progress, for the display */
                pthread_mutex_lock(&s->mu);
                progress_job_sweep(&s->view, json_integer_value(json_object_get(hr, "sweep_done")),
                                   json_integer_value(json_object_get(hr, "sweep_jobs")));
                pthread_mutex_unlock(&s->mu);
            }
            json_decref(hr);
            next_hb = util_now_s() + hb;
        }
        int why = client_refusal(&s->rcl, rc);
        if (rc == CLIENT_ECONFLICT) report_mark_lost(s, s->rcl.err);
        else if (why == CLIENT_EGONE) report_mark_gone(s, &s->rcl);
        else if (why == CLIENT_EAUTH) report_token_refused(s, &s->rcl);
        else if (rc != CLIENT_OK && rc != CLIENT_ESTOPPED) {
            progress_event(s->index, "report-error", "job=%lld %s", r->l.job_id, s->rcl.err);
            slot_sleep(1.0, &s->reporter_quit);
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void report_start(slot *s) {
    s->rcl.abort = &s->reporter_quit;
    s->rp.started = pthread_create(&s->rp.thread, NULL, report_thread, s) == 0;
}

void report_stop(slot *s) {
    pthread_mutex_lock(&s->mu);
    s->reporter_quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->rp.started) pthread_join(s->rp.thread, NULL);
    s->rp.started = 0;
}

/* ---- the end of a job ------------------------------------------------------------------------------ */

/* Reports the end of a job that was not lost: metrics, checkpoint, then the route (complete, fail, rung). */
static int report_finish(slot *s, const char *route, json_t *body) {
    report *r = &s->rp;
    double budget = *s->env->quit ? 60 : -1;   /* preempted: the machine is going away, do not hang for ever */
    s->cl.abort = NULL;
    int rc = outbox_flush(&r->ob, &s->cl, r->path_metrics, r->l.token, REPORT_BATCH, budget);
    if (rc == CLIENT_OK) report_log_progress(s);
    if (rc == CLIENT_OK) rc = report_send_checkpoint(s, &s->cl, budget);
    if (rc == CLIENT_OK) {
        char path[128];
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/%s", r->l.job_id, route);
        json_object_set_new(body, "lease_token", json_string(r->l.token));
        /* test builds only (common/testhook.h): die between the rung checkpoint and its report */
        if (testhook_fault("PRISM_FAULT_AT_RUNG", "exit") && !strcmp(route, "rung")) {
            fprintf(stderr, "prism-worker: PRISM_FAULT_AT_RUNG=exit: exiting before the rung report (test hook)\n");
            _exit(137);
        }
        rc = client_request(&s->cl, "POST", path, body, budget, NULL);
    }
    return rc;
}

void report_log_refused(slot *s, const struct train_result *res) {
    report *r = &s->rp;
    progress_event(s->index, "token-refused", "job=%lld attempt=%d stopped at step %ld and not reported: %s; "
                   "checkpoint %s (step %d)%s; %zu metric points unsent (past the last reported checkpoint, %s: the "
                   "lease expires and the attempt that resumes from it trains and sends them again)", r->l.job_id,
                   r->l.attempt, s->view.row.step, s->env->refused_err, res && res->checkpoint[0] ? res->checkpoint : "(none)",
                   res ? res->steps_done : -1, res && res->checkpoint[0] ? " written" : "", outbox_pending(&r->ob),
                   s->ck.acked[0] ? s->ck.acked : "(none)");
}

int report_outcome(slot *s, const char *route, json_t *body, const struct train_result *res) {
    report *r = &s->rp;
    int rc = client_refusal(&s->cl, report_finish(s, route, body));
    if (rc == CLIENT_EAUTH) {
        report_token_refused(s, &s->cl);
        report_log_refused(s, res);
    } else if (rc == CLIENT_EGONE) {
        size_t unsent = outbox_pending(&r->ob);
        report_mark_gone(s, &s->cl);
        progress_event(s->index, "stopped", "job=%lld attempt=%d stopped at step %ld: %s (%zu unsent metric points "
                       "dropped)", r->l.job_id, r->l.attempt, s->view.row.step, r->lost_reason, unsent);
    }
    return rc;
}
