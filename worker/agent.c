/* agent.c — the worker agent: register, then per device lease → train → complete/fail, forever.
 *
 * Design. Threads, not processes: train_run() is a library call, so each device gets a "slot" with
 *   - a device thread: leases a job, runs train_run() on it (blocking), then reports the outcome;
 *   - a reporter thread, alive while a job trains: every heartbeat period it POSTs a heartbeat, every
 *     flush period it sends the metrics outbox, and it reports each new checkpoint as soon as it is
 *     durable. It sleeps on a condition variable so a checkpoint wakes it early. Heartbeats thus run on
 *     their own timer, whatever the step length (a cold start, a long step, an evaluation).
 * The two threads of a slot share: `stop` (train_run's flag: 1 = cancel now, 2 = checkpoint and return),
 * the outbox (metric rows the trainer produced, removed only once the server acknowledged them), and the
 * pending checkpoint. A 409 seen by the reporter (cancelled, lease expired and re-leased) sets stop = 1
 * and `lost`: the device thread then drops the job's unsent points (the server would refuse them) and
 * goes back to leasing. Each thread has its own libcurl handle (client.c), which retries network errors
 * and 5xx with backoff, so an orchestrator restart is invisible except for a pause: the outbox keeps
 * everything until it is acknowledged.
 * A 404 on a job-scoped call (the job or its sweep is no longer on the server, e.g. a new database) is
 * the same as a 409: the job is not ours any more, so stop = 1, `lost`, its unsent points are dropped and
 * the slot leases again. A 401/403 on any call after registration (the worker token was changed or
 * revoked while we ran) says nothing about the job or its points, and every later call would be refused
 * too: the slot stops its job the way SIGTERM does (stop = 2: finish the step, write a checkpoint, return)
 * but reports nothing (no metrics dropped, no checkpoint, no complete/fail), `refused` stops every slot
 * from leasing, and the agent exits 2 naming the request and --token-file. The job's lease then expires
 * and a worker with a valid token resumes it from its last reported checkpoint; only 400/413/422 on
 * metrics (malformed points) make the outbox drop anything (client.c).
 * Signals: the first SIGTERM/SIGINT sets stop = 2 on every training slot and stops leasing; train_run
 * finishes the step, writes a checkpoint and returns TRAIN_EPREEMPTED; the slot sends its metrics, the
 * checkpoint, and `fail` retryable (so the job is re-queued at once with `resume`), then the agent exits 0.
 * A second signal exits at once (the lease then simply expires).
 */
#include "agent.h"
#include "util.h"

#include "client.h"
#include "job.h"
#include "logesc.h"
#include "progress.h"
#include "train.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define AGENT_MAX_DEVICES 64
#define AGENT_BATCH 2000            /* metric points per POST (the server takes up to 10,000) */

typedef struct agent agent;

typedef struct slot {
    agent *ag;
    int index;
    char device[32];                /* "cpu" or a CUDA index (what train_run and the server get) */
    char label[32];                 /* its name in the display and the log */
    pthread_t thread;
    client cl;                      /* device thread: lease, complete, fail */
    client rcl;                     /* reporter thread: heartbeat, metrics, checkpoint */
    int jobs_done;
    int jobs_taken;                 /* leases taken, however they ended: what --max-jobs counts */
    int disabled;                   /* the backend failed on this device: lease nothing more */

    /* the current job; the fields below are guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int training;          /* 1 while train_run runs (the signal handler only touches stop then) */
    volatile int stop;              /* train_run's flag */
    volatile int reporter_quit;     /* tells the reporter to return (its client's abort flag) */
    int lost;                       /* a 409 or 404 arrived: the job is no longer ours */
    int refused;                    /* a 401/403 arrived: stop like SIGTERM, report nothing */
    char lost_reason[512];
    long long job_id;
    int attempt;
    char lease_token[256];
    char path_metrics[96], path_heartbeat[96], path_checkpoint[96];
    outbox ob;
    int ckpt_pending;
    int ckpt_sending;               /* the reporter is posting ckpt_path: it is not ours to unlink */
    int ckpt_tried;                 /* ckpt_path was posted at least once: the server may hold it even without
                                     * an answer we could read, so it stays until a newer one is acknowledged */
    int ckpt_step;
    char ckpt_path[PATH_MAX];
    char acked_ckpt[PATH_MAX];      /* the checkpoint the server last acknowledged (what it offers as resume) */
    progress_row row;
    int new_points;                 /* train rows since the last log line */
    pthread_t reporter;
} slot;

struct agent {
    const agent_opts *o;
    char token[512];
    char name[256];
    char host[256];
    char work_dir[PATH_MAX];
    char ckpt_dir[PATH_MAX];
    char ckpt_real[PATH_MAX];       /* ckpt_dir with symlinks resolved: the only folder resume files come from */
    char data_root[PATH_MAX];
    long long worker_id;
    double heartbeat_s;
    int nslots;
    slot slots[AGENT_MAX_DEVICES];
    pthread_mutex_t reg_mu;         /* re-registration after a 404 on lease */
    pthread_mutex_t refuse_mu;      /* guards the refused_* details */
    volatile int refused;           /* a 401/403 after registration: lease nothing more, exit 2 */
    long refused_status;            /* the first refusal: status, "METHOD PATH", client error */
    char refused_req[160];
    char refused_err[512];
};

static volatile int g_quit;         /* set by the first SIGTERM/SIGINT: stop leasing, preempt training */
static agent *g_agent;

static void agent_on_signal(int sig) {
    if (g_quit) _exit(128 + sig);
    g_quit = 1;
    agent *ag = g_agent;
    if (!ag) return;
    for (int i = 0; i < ag->nslots; i++)
        if (ag->slots[i].training && ag->slots[i].stop == 0) ag->slots[i].stop = 2;
    static const char msg[] = "prism-worker: stopping: finishing the current step, checkpointing, reporting "
                              "(signal again to exit at once)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

/* Sleeps s seconds unless `flag` rises. */
static void agent_sleep(double s, volatile int *flag) {
    double end = util_now_s() + s;
    while (!(flag && *flag)) {
        double left = end - util_now_s();
        if (left <= 0) return;
        if (left > 0.05) left = 0.05;
        struct timespec ts = { 0, (long)(left * 1e9) };
        nanosleep(&ts, NULL);
    }
}

static int agent_mkdirs(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static void agent_abspath(const char *in, char *out, size_t len) {
    if (in[0] == '/') { snprintf(out, len, "%s", in); return; }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) { snprintf(out, len, "%s", in); return; }
    int n = snprintf(out, len, "%s/%s", cwd, in);
    if (n < 0 || (size_t)n >= len) snprintf(out, len, "%s", in);   /* too long: keep it relative */
}

/* Whether path is a checkpoint this worker wrote for job_id: once resolved (symlinks, "..") it lies in
 * CKPT/job-ID-aN/ under the checkpoint root and is named resume-*.bin or ckpt_*.bin. Only such a file is
 * read as `resume` or ever removed: the path comes from the server, which anyone with the worker token
 * can feed. */
static int agent_own_checkpoint(const agent *ag, long long job_id, const char *path) {
    char real[PATH_MAX];
    if (!path || !*path || !ag->ckpt_real[0] || !realpath(path, real)) return 0;
    size_t rl = strlen(ag->ckpt_real);
    if (strncmp(real, ag->ckpt_real, rl) != 0 || real[rl] != '/') return 0;
    char prefix[64];
    int pl = snprintf(prefix, sizeof prefix, "job-%lld-a", job_id);
    const char *rest = real + rl + 1;
    if (strncmp(rest, prefix, (size_t)pl) != 0) return 0;
    rest += pl;
    if (*rest < '0' || *rest > '9') return 0;
    while (*rest >= '0' && *rest <= '9') rest++;
    if (*rest != '/') return 0;
    const char *base = rest + 1;
    size_t bl = strlen(base);
    if (strchr(base, '/') || bl < 5 || strcmp(base + bl - 4, ".bin") != 0) return 0;
    return strncmp(base, "resume-", 7) == 0 || strncmp(base, "ckpt_", 5) == 0;
}

/* The worker token: `worker_token=X` if the file has such a line, else its first bare line. */
static int agent_read_token(const char *path, char *tok, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "prism-worker: --token-file %s: %s\n", path, strerror(errno)); return -1; }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & 077))
        fprintf(stderr, "prism-worker: warning: token file %s is readable by other users (mode 0%03o): chmod 600 %s\n",
                path, (unsigned)(sb.st_mode & 077), path);
    char line[1024];
    tok[0] = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
        if (!*s || *s == '#') continue;
        if (strncmp(s, "worker_token=", 13) == 0) { snprintf(tok, len, "%s", s + 13); found = 1; break; }
        if (!strchr(s, '=') && !tok[0]) snprintf(tok, len, "%s", s);
    }
    fclose(f);
    if (!found && !tok[0]) {
        fprintf(stderr, "prism-worker: --token-file %s holds no token (expected a bare token line or "
                "worker_token=HEX; the server keeps it in <db>.worker-token)\n", path);
        return -1;
    }
    return 0;
}

/* ---- registration ---------------------------------------------------------------------------------- */

static int agent_register(agent *ag, client *c) {
    json_t *devs = json_array();
    for (int i = 0; i < ag->nslots; i++) json_array_append_new(devs, json_string(ag->slots[i].device));
    json_t *body = json_pack("{s:s, s:s, s:o}", "name", ag->name, "host", ag->host, "devices", devs);
    json_t *resp = NULL;
    volatile int *saved = c->abort;
    c->abort = &g_quit;
    int rc = client_request(c, "POST", "/api/v1/workers/register", body, -1, &resp);
    c->abort = saved;
    json_decref(body);
    if (rc != CLIENT_OK) {
        char e[4 * sizeof c->err];
        if (rc != CLIENT_ESTOPPED)
            fprintf(stderr, "prism-worker: registration refused: %s%s\n", log_escape(e, sizeof e, c->err),
                    c->status == 401 ? " (check --token-file: it must hold the server's worker token)" : "");
        json_decref(resp);
        return rc;
    }
    json_int_t id = json_integer_value(json_object_get(resp, "worker_id"));
    double hb = json_number_value(json_object_get(resp, "heartbeat_every_s"));
    double ttl = json_number_value(json_object_get(resp, "lease_ttl_s"));
    json_decref(resp);
    if (id <= 0) { fprintf(stderr, "prism-worker: registration answer has no worker_id\n"); return CLIENT_EPROTO; }
    ag->worker_id = id;
    if (ag->o->heartbeat_s > 0) ag->heartbeat_s = ag->o->heartbeat_s;
    else if (hb > 0) ag->heartbeat_s = hb;
    else if (ttl > 0) ag->heartbeat_s = ttl / 3;
    else ag->heartbeat_s = 10;
    progress_event(-1, "registered", "worker_id=%lld name=%s server=%s devices=%d heartbeat_s=%.2f",
                   (long long)id, ag->name, ag->o->server, ag->nslots, ag->heartbeat_s);
    return CLIENT_OK;
}

/* ---- trainer callbacks (device thread) ------------------------------------------------------------- */

static void slot_on_metrics(void *ctx, json_t *row) {
    slot *s = ctx;
    json_t *copy = json_deep_copy(row);
    if (copy) outbox_push(&s->ob, copy);
    pthread_mutex_lock(&s->mu);
    json_t *v = json_object_get(row, "val_loss");
    if (v) s->row.val_loss = json_number_value(v);
    json_t *tl = json_object_get(row, "train_loss");
    if (tl) {
        s->row.loss = json_number_value(tl);
        s->row.step = (long)json_integer_value(json_object_get(row, "step"));
        json_t *tps = json_object_get(row, "tok_per_s");
        if (tps) s->row.tok_s = json_number_value(tps);
        s->new_points++;
    }
    pthread_mutex_unlock(&s->mu);
}

/* The trainer keeps only its newest checkpoint and deletes the previous one once the new one is durable,
 * but the server may not have heard of the new one yet (it is reported asynchronously, and not at all
 * while the server is down). So each checkpoint gets a hard link resume-STEP.bin that the agent owns:
 * the file the server offers as `resume` always exists. The link of the previously acknowledged
 * checkpoint is removed once a newer one is acknowledged (slot_send_checkpoint). */
static void slot_on_checkpoint(void *ctx, int step, const char *path) {
    slot *s = ctx;
    char abs[PATH_MAX], link_path[PATH_MAX];
    agent_abspath(path, abs, sizeof abs);
    const char *slash = strrchr(abs, '/');
    snprintf(link_path, sizeof link_path, "%.*s/resume-%d.bin", (int)(slash ? slash - abs : 1), slash ? abs : ".", step);
    unlink(link_path);
    const char *use = link(abs, link_path) == 0 ? link_path : abs;
    pthread_mutex_lock(&s->mu);
    /* superseded before it was ever reported; but once the token is refused nothing more is reported, and
     * the refused report of this one may have been a retry of one the server had already stored */
    if (s->ckpt_pending && !s->ckpt_sending && !s->ckpt_tried && !s->refused && strcmp(s->ckpt_path, s->acked_ckpt) != 0 &&
        strcmp(s->ckpt_path, use) != 0 && strstr(s->ckpt_path, "/resume-") &&
        agent_own_checkpoint(s->ag, s->job_id, s->ckpt_path))
        unlink(s->ckpt_path);
    snprintf(s->ckpt_path, sizeof s->ckpt_path, "%s", use);
    s->ckpt_step = step;
    s->ckpt_pending = 1;
    s->ckpt_tried = 0;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void slot_on_progress(void *ctx, const struct train_progress *p) {
    slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->row.step = p->step;
    s->row.steps = p->steps;
    s->row.loss = p->loss;
    s->row.tok_s = p->tok_per_s;
    s->row.eta_s = p->eta_s;
    progress_row r = s->row;
    pthread_mutex_unlock(&s->mu);
    if (s->ag->o->progress == 1) progress_report(s->index, &r);
}

/* ---- reporter thread ------------------------------------------------------------------------------- */

static void slot_mark_lost(slot *s, const char *why) {
    pthread_mutex_lock(&s->mu);
    if (!s->lost) {
        s->lost = 1;
        snprintf(s->lost_reason, sizeof s->lost_reason, "%s", why);
    }
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
}

/* 404 on a job-scoped call: the job (or its sweep) is not on the server any more; like a 409. */
static void slot_mark_gone(slot *s, const client *c) {
    char why[512];
    snprintf(why, sizeof why, "the job is gone from the server: %.440s", c->err);
    slot_mark_lost(s, why);
}

/* 401/403 on any call after registration: the server no longer takes this worker's token, so nothing
 * this worker sends can succeed. The slot's job stops the way SIGTERM stops it (stop = 2: finish the
 * step, checkpoint, return) and is not reported; the agent leases nothing more and exits 2 (agent_run
 * prints the first refusal). */
static void agent_token_refused(slot *s, const client *c) {
    agent *ag = s->ag;
    pthread_mutex_lock(&ag->refuse_mu);
    if (!ag->refused) {
        ag->refused_status = c->status;
        snprintf(ag->refused_req, sizeof ag->refused_req, "%s", c->req);
        snprintf(ag->refused_err, sizeof ag->refused_err, "%s", c->err);
        ag->refused = 1;
    }
    pthread_mutex_unlock(&ag->refuse_mu);
    pthread_mutex_lock(&s->mu);
    s->refused = 1;
    if (s->stop == 0) s->stop = 2;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Once `sent` (step) is acknowledged, the links resume-N.bin of older steps in its folder are of no use:
 * some were posted without a readable answer (kept until now in case the server had stored them). The
 * newer ones (not yet reported) stay. Called with s->mu held. */
static void slot_remove_older_links(slot *s, const char *sent, int step) {
    const char *slash = strrchr(sent, '/');
    if (!slash) return;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - sent), sent);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int n = -1, used = 0;
        if (sscanf(e->d_name, "resume-%d.bin%n", &n, &used) != 1 || e->d_name[used] != 0 || n >= step) continue;
        char p[PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strcmp(p, s->ckpt_path) != 0 && agent_own_checkpoint(s->ag, s->job_id, p)) unlink(p);
    }
    closedir(d);
}

/* Posts the pending checkpoint, if any. Returns a CLIENT_* code. */
static int slot_send_checkpoint(slot *s, client *c, double retry_for_s) {
    pthread_mutex_lock(&s->mu);
    if (!s->ckpt_pending) { pthread_mutex_unlock(&s->mu); return CLIENT_OK; }
    json_t *body = json_pack("{s:s, s:s, s:i}", "lease_token", s->lease_token, "path", s->ckpt_path,
                             "step", s->ckpt_step);
    int step = s->ckpt_step;
    char sent[PATH_MAX];            /* a newer checkpoint may replace ckpt_path while this one is in flight */
    snprintf(sent, sizeof sent, "%s", s->ckpt_path);
    s->ckpt_sending = 1;
    s->ckpt_tried = 1;
    pthread_mutex_unlock(&s->mu);
    int rc = client_request(c, "POST", s->path_checkpoint, body, retry_for_s, NULL);
    json_decref(body);
    pthread_mutex_lock(&s->mu);
    s->ckpt_sending = 0;
    if (rc == CLIENT_OK) {
        if (s->ckpt_step == step && strcmp(s->ckpt_path, sent) == 0) s->ckpt_pending = 0;
        /* the server now offers `sent`: the older link is no longer needed */
        if (s->acked_ckpt[0] && strcmp(s->acked_ckpt, sent) != 0 && strstr(s->acked_ckpt, "/resume-") &&
            agent_own_checkpoint(s->ag, s->job_id, s->acked_ckpt))
            unlink(s->acked_ckpt);
        snprintf(s->acked_ckpt, sizeof s->acked_ckpt, "%s", sent);
        slot_remove_older_links(s, sent, step);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Log mode: one structured line per report that carried new train points. */
static void slot_log_progress(slot *s) {
    if (s->ag->o->progress == 1) return;
    pthread_mutex_lock(&s->mu);
    int fresh = s->new_points;
    s->new_points = 0;
    progress_row r = s->row;
    pthread_mutex_unlock(&s->mu);
    if (fresh) progress_report(s->index, &r);
}

static void *slot_reporter(void *arg) {
    slot *s = arg;
    agent *ag = s->ag;
    double hb = ag->heartbeat_s, fl = ag->o->flush_s;
    double next_hb = util_now_s() + hb, next_flush = util_now_s() + fl;
    pthread_mutex_lock(&s->mu);
    while (!s->reporter_quit && !s->lost && !s->refused) {
        double wake = next_hb < next_flush ? next_hb : next_flush;
        int pending = s->ckpt_pending;
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
            rc = outbox_flush(&s->ob, &s->rcl, s->path_metrics, s->lease_token, AGENT_BATCH, -1);
            if (rc == CLIENT_OK) rc = slot_send_checkpoint(s, &s->rcl, -1);
            next_flush = util_now_s() + fl;
            if (rc == CLIENT_OK) slot_log_progress(s);
        }
        if (rc == CLIENT_OK && util_now_s() >= next_hb) {
            pthread_mutex_lock(&s->mu);
            json_t *body = json_pack("{s:s}", "lease_token", s->lease_token);
            if (s->row.step >= 0) json_object_set_new(body, "step", json_integer(s->row.step));
            if (isfinite(s->row.loss)) json_object_set_new(body, "loss", json_real(s->row.loss));
            pthread_mutex_unlock(&s->mu);
            rc = client_request(&s->rcl, "POST", s->path_heartbeat, body, -1, NULL);
            json_decref(body);
            next_hb = util_now_s() + hb;
        }
        int why = client_refusal(&s->rcl, rc);
        if (rc == CLIENT_ECONFLICT) slot_mark_lost(s, s->rcl.err);
        else if (why == CLIENT_EGONE) slot_mark_gone(s, &s->rcl);
        else if (why == CLIENT_EAUTH) agent_token_refused(s, &s->rcl);
        else if (rc != CLIENT_OK && rc != CLIENT_ESTOPPED) {
            progress_event(s->index, "report-error", "job=%lld %s", s->job_id, s->rcl.err);
            agent_sleep(1.0, &s->reporter_quit);
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- one job ------------------------------------------------------------------------------------- */

/* Reports the end of a job that was not lost: metrics, checkpoint, then `tail` (complete or fail). */
static int slot_finish(slot *s, const char *route, json_t *body) {
    double budget = g_quit ? 60 : -1;   /* preempted: the machine is going away, do not hang for ever */
    s->cl.abort = NULL;
    int rc = outbox_flush(&s->ob, &s->cl, s->path_metrics, s->lease_token, AGENT_BATCH, budget);
    if (rc == CLIENT_OK) slot_log_progress(s);
    if (rc == CLIENT_OK) rc = slot_send_checkpoint(s, &s->cl, budget);
    if (rc == CLIENT_OK) {
        char path[128];
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/%s", s->job_id, route);
        json_object_set_new(body, "lease_token", json_string(s->lease_token));
        const char *fault = getenv("PRISM_FAULT_AT_RUNG");   /* tests only: die between the rung checkpoint and its report */
        if (fault && !strcmp(fault, "exit") && !strcmp(route, "rung")) {
            fprintf(stderr, "prism-worker: PRISM_FAULT_AT_RUNG=exit: exiting before the rung report (test hook)\n");
            _exit(137);
        }
        rc = client_request(&s->cl, "POST", path, body, budget, NULL);
    }
    return rc;
}

/* Logs the end of a job whose token was refused: stopped (as by SIGTERM), nothing reported. res may be NULL. */
static void slot_log_refused(slot *s, const struct train_result *res) {
    progress_event(s->index, "token-refused", "job=%lld attempt=%d stopped at step %ld and not reported: %s; "
                   "checkpoint %s (step %d)%s; %zu metric points unsent (past the last reported checkpoint, %s: the "
                   "lease expires and the attempt that resumes from it trains and sends them again)", s->job_id, s->attempt,
                   s->row.step, s->ag->refused_err, res && res->checkpoint[0] ? res->checkpoint : "(none)",
                   res ? res->steps_done : -1, res && res->checkpoint[0] ? " written" : "", outbox_pending(&s->ob),
                   s->acked_ckpt[0] ? s->acked_ckpt : "(none)");
}

/* slot_finish, then what a refusal means: 401/403 (the token) stops the agent, 404 (the job is gone) is
 * a lost job; both are logged here. Returns slot_finish's code, refined by client_refusal(). */
static int slot_report(slot *s, const char *route, json_t *body, const struct train_result *res) {
    int rc = client_refusal(&s->cl, slot_finish(s, route, body));
    if (rc == CLIENT_EAUTH) {
        agent_token_refused(s, &s->cl);
        slot_log_refused(s, res);
    } else if (rc == CLIENT_EGONE) {
        size_t unsent = outbox_pending(&s->ob);
        slot_mark_gone(s, &s->cl);
        progress_event(s->index, "stopped", "job=%lld attempt=%d stopped at step %ld: %s (%zu unsent metric points "
                       "dropped)", s->job_id, s->attempt, s->row.step, s->lost_reason, unsent);
    }
    return rc;
}

/* After `complete` is acknowledged the job's training-state checkpoints (every attempt's, in
 * CKPT/job-ID-aN/) are of no further use. Only our own file names are removed. */
static void slot_remove_checkpoints(const char *root, long long job_id) {
    char pat[PATH_MAX + 64];
    snprintf(pat, sizeof pat, "%s/job-%lld-a*", root, job_id);
    glob_t g;
    if (glob(pat, GLOB_ONLYDIR, NULL, &g) != 0) return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        DIR *d = opendir(g.gl_pathv[i]);
        if (!d) continue;
        struct dirent *e;
        char p[PATH_MAX + 600];
        while ((e = readdir(d))) {
            if ((strncmp(e->d_name, "resume-", 7) == 0 || strncmp(e->d_name, "ckpt_", 5) == 0) && strstr(e->d_name, ".bin")) {
                snprintf(p, sizeof p, "%s/%s", g.gl_pathv[i], e->d_name);
                unlink(p);
            }
        }
        closedir(d);
        rmdir(g.gl_pathv[i]);
    }
    globfree(&g);
}

static json_t *slot_read_result(const char *out_dir, char *err, size_t errlen) {
    char path[PATH_MAX + 100];
    snprintf(path, sizeof path, "%.*s/result.json", PATH_MAX, out_dir);
    json_error_t je;
    json_t *r = json_load_file(path, 0, &je);
    if (!r) snprintf(err, errlen, "%.1000s: %.500s", path, je.text);
    return r;
}

static void slot_run_job(slot *s, json_t *lease) {
    agent *ag = s->ag;
    const agent_opts *o = ag->o;
    struct job_config job;
    job_init(&job);
    char err[2048] = "";
    char out_dir[PATH_MAX + 64], ckpt_dir[PATH_MAX + 64];

    s->jobs_taken++;
    s->job_id = json_integer_value(json_object_get(lease, "job_id"));
    s->attempt = (int)json_integer_value(json_object_get(lease, "attempt"));
    snprintf(s->lease_token, sizeof s->lease_token, "%s", json_string_value(json_object_get(lease, "lease_token")) ?: "");
    snprintf(s->path_metrics, sizeof s->path_metrics, "/api/v1/jobs/%lld/metrics", s->job_id);
    snprintf(s->path_heartbeat, sizeof s->path_heartbeat, "/api/v1/jobs/%lld/heartbeat", s->job_id);
    snprintf(s->path_checkpoint, sizeof s->path_checkpoint, "/api/v1/jobs/%lld/checkpoint", s->job_id);
    s->lost = 0;
    s->refused = 0;
    s->lost_reason[0] = 0;
    s->ckpt_pending = 0;
    s->ckpt_tried = 0;
    s->ckpt_path[0] = 0;
    s->acked_ckpt[0] = 0;
    s->stop = 0;
    s->reporter_quit = 0;
    s->new_points = 0;
    outbox_init(&s->ob);

    memset(&s->row, 0, sizeof s->row);
    memcpy(s->row.device, s->label, sizeof s->row.device);
    s->row.job_id = s->job_id;
    s->row.attempt = s->attempt;
    s->row.loss = s->row.val_loss = NAN;
    s->row.eta_s = -1;
    s->row.step = -1;

    int jrc = job_from_json(json_object_get(lease, "job"), &job, err, sizeof err);
    if (jrc != JOB_OK) {
        progress_event(s->index, "failed", "job=%lld attempt=%d bad job JSON: %s", s->job_id, s->attempt, err);
        char msg[2200];
        snprintf(msg, sizeof msg, "bad job JSON: %s", err);
        json_t *body = json_pack("{s:s, s:b}", "error", msg, "retryable", 0);
        slot_report(s, "fail", body, NULL);
        json_decref(body);
        goto out;
    }
    job_format_heads(&job, s->row.schedule, sizeof s->row.schedule);
    s->row.steps = job.train.steps;

    snprintf(out_dir, sizeof out_dir, "%s/job-%lld-a%d", ag->work_dir, s->job_id, s->attempt);
    /* one directory per attempt: a stale holder of the lease can never touch the new holder's files */
    snprintf(ckpt_dir, sizeof ckpt_dir, "%s/job-%lld-a%d", ag->ckpt_dir, s->job_id, s->attempt);
    if (agent_mkdirs(out_dir) != 0 || agent_mkdirs(ckpt_dir) != 0) {
        snprintf(err, sizeof err, "cannot create %.900s or %.900s: %s (check --work-dir/--checkpoint-dir)", out_dir,
                 ckpt_dir, strerror(errno));
        progress_event(s->index, "failed", "job=%lld %s", s->job_id, err);
        json_t *body = json_pack("{s:s, s:b}", "error", err, "retryable", 1);
        slot_report(s, "fail", body, NULL);
        json_decref(body);
        goto out;
    }

    /* resume: the lease offers the last reported checkpoint; use it when this box can read it */
    const char *resume = NULL;
    json_t *rj = json_object_get(lease, "resume");
    const char *rpath = json_string_value(json_object_get(rj, "checkpoint"));
    long long rstep = json_integer_value(json_object_get(rj, "step"));
    if (rpath) {
        /* a missing file (another box's disk) is only unreadable; an existing one must be our own */
        if (access(rpath, R_OK) != 0) {
            progress_event(s->index, "resume-unreadable", "job=%lld attempt=%d checkpoint %s (step %lld) is not "
                           "readable here (%s): restarting from step 0", s->job_id, s->attempt, rpath, rstep,
                           strerror(errno));
        } else if (!agent_own_checkpoint(ag, s->job_id, rpath)) {
            progress_event(s->index, "resume-refused", "job=%lld attempt=%d the offered checkpoint (step %lld) is not a "
                           "checkpoint of this job under --checkpoint-dir %s: not read, restarting from step 0",
                           s->job_id, s->attempt, rstep, ag->ckpt_dir);
        } else {
            resume = rpath;
            snprintf(s->acked_ckpt, sizeof s->acked_ckpt, "%s", rpath);
            progress_event(s->index, "resume", "job=%lld attempt=%d resuming from step %lld (%s)", s->job_id,
                           s->attempt, rstep, rpath);
        }
    }
    progress_event(s->index, "leased", "job=%lld attempt=%d schedule=%s seed=%llu steps=%d out=%s", s->job_id,
                   s->attempt, s->row.schedule, (unsigned long long)job.train.seed, job.train.steps, out_dir);

    struct train_result res;
    memset(&res, 0, sizeof res);
    /* successive halving: the lease says where this rung stops (the LR schedule stays the full run's) */
    json_t *stop_at = json_object_get(lease, "stop_at_step");
    struct train_opts to = {
        .stop_at_step = json_is_integer(stop_at) ? (int)json_integer_value(stop_at) : 0,
        .out_dir = out_dir, .device = s->device, .data_root = ag->data_root, .checkpoint_dir = ckpt_dir,
        .resume = resume, .confine_data = !o->data_anywhere, .stop = &s->stop, .on_metrics = slot_on_metrics, .on_checkpoint = slot_on_checkpoint,
        .on_progress = slot_on_progress, .ctx = s, .quiet = 1, .result = &res, .err = err, .errlen = sizeof err,
    };
    s->rcl.abort = &s->reporter_quit;
    s->training = 1;
    if (g_quit) s->stop = 2;
    int started = pthread_create(&s->reporter, NULL, slot_reporter, s) == 0;
    int trc = train_run(&job, &to);
    pthread_mutex_lock(&s->mu);
    int lost = s->lost;
    pthread_mutex_unlock(&s->mu);
    if (trc == TRAIN_ECHECKPOINT && resume && strncmp(err, "resume: ", 8) == 0 && !lost && s->stop == 0) {
        /* readable but not loadable (truncated, corrupt): like an unreadable one, start again from 0 */
        progress_event(s->index, "resume-unreadable", "job=%lld attempt=%d checkpoint %s (step %lld) does not load "
                       "(%s): restarting from step 0", s->job_id, s->attempt, rpath, rstep, err);
        to.resume = NULL;
        pthread_mutex_lock(&s->mu);
        s->acked_ckpt[0] = 0;   /* it was not loaded: not ours to supersede (or remove) */
        pthread_mutex_unlock(&s->mu);
        trc = train_run(&job, &to);
    }
    s->training = 0;
    pthread_mutex_lock(&s->mu);
    s->reporter_quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (started) pthread_join(s->reporter, NULL);

    if (s->lost) {
        progress_event(s->index, "stopped", "job=%lld attempt=%d stopped at step %ld: %s (%zu unsent metric points "
                       "dropped)", s->job_id, s->attempt, s->row.step, s->lost_reason, outbox_pending(&s->ob));
        goto out;
    }
    if (s->refused) {   /* the token was refused: checkpointed (stop = 2) and reported nothing */
        slot_log_refused(s, &res);
        goto out;
    }
    int rc;
    if (trc == TRAIN_OK && res.paused_at > 0) {
        /* a halving rung: metrics and the rung checkpoint first (slot_finish), then the val loss at the rung; the
         * checkpoints stay: a promoted job resumes from this one */
        json_t *body = json_pack("{s:i, s:f}", "step", res.paused_at, "val_loss", res.val_loss);
        rc = slot_report(s, "rung", body, &res);
        json_decref(body);
        if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) goto out;
        progress_event(s->index, rc == CLIENT_OK ? "rung" : "report-error", "job=%lld attempt=%d schedule=%s step=%d "
                       "val_loss=%.4f%s%s", s->job_id, s->attempt, s->row.schedule, res.paused_at, res.val_loss,
                       rc == CLIENT_OK ? "" : " not acknowledged: ", rc == CLIENT_OK ? "" : s->cl.err);
        s->jobs_done++;
        goto out;
    }
    if (trc == TRAIN_OK) {
        json_t *result = slot_read_result(out_dir, err, sizeof err);
        if (!result) {
            json_t *body = json_pack("{s:s, s:b}", "error", err, "retryable", 1);
            rc = slot_report(s, "fail", body, &res);
            json_decref(body);
            if (rc != CLIENT_EAUTH && rc != CLIENT_EGONE) progress_event(s->index, "failed", "job=%lld %s", s->job_id, err);
            goto out;
        }
        json_t *body = json_pack("{s:o}", "result", result);
        rc = slot_report(s, "complete", body, &res);
        json_decref(body);
        if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) goto out;
        if (rc == CLIENT_OK) slot_remove_checkpoints(ag->ckpt_dir, s->job_id);
        if (rc == CLIENT_OK)
            progress_event(s->index, "done", "job=%lld attempt=%d schedule=%s val_loss=%.4f tok_s=%.0f wall_s=%.1f",
                           s->job_id, s->attempt, s->row.schedule, res.val_loss, res.tok_per_s, res.wall_s);
        else
            progress_event(s->index, "report-error", "job=%lld complete not acknowledged: %s", s->job_id, s->cl.err);
        s->jobs_done++;
        goto out;
    }
    if (trc == TRAIN_ECANCELLED) {
        progress_event(s->index, "stopped", "job=%lld attempt=%d cancelled at step %ld", s->job_id, s->attempt,
                       s->row.step);
        goto out;
    }
    /* a failure or a preemption: say why, with the retry policy of its kind */
    int retryable;
    char msg[2600];
    switch (trc) {
    case TRAIN_EPREEMPTED:
        retryable = 1;
        if (res.checkpoint[0] && (s->ckpt_step != res.steps_done || !s->ckpt_path[0]))
            slot_on_checkpoint(s, res.steps_done, res.checkpoint);   /* make sure the last one is reported */
        snprintf(msg, sizeof msg, "preempted: worker %.200s got a stop signal at step %d; checkpoint %.2000s", ag->name,
                 res.steps_done, res.checkpoint[0] ? res.checkpoint : "(none)");
        break;
    case TRAIN_ENAN: case TRAIN_EDATA: case TRAIN_EINVAL: case TRAIN_ECHECKPOINT: case TRAIN_EDIVERGED:
        retryable = 0;
        snprintf(msg, sizeof msg, "%s: %s", train_strerror(trc), err);
        break;
    default:   /* out of memory, device, I/O: another box may do better */
        retryable = 1;
        snprintf(msg, sizeof msg, "%s: %s", train_strerror(trc), err);
        break;
    }
    json_t *body = json_pack("{s:s, s:b}", "error", msg, "retryable", retryable);
    rc = slot_report(s, "fail", body, &res);
    json_decref(body);
    if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) goto out;
    progress_event(s->index, trc == TRAIN_EPREEMPTED ? "preempted" : "failed", "job=%lld attempt=%d retryable=%d %s%s",
                   s->job_id, s->attempt, retryable, msg, rc == CLIENT_OK ? "" : " (not acknowledged)");
    if (trc == TRAIN_EDEVICE) {
        /* a device that cannot train would fail every job it leases: take it out of service */
        s->disabled = 1;
        progress_event(s->index, "device-disabled", "device %s leases no more jobs: %s", s->device, err);
    }
out:
    job_release(&job);
    outbox_release(&s->ob);
    s->row.job_id = 0;
    if (o->progress == 1) progress_report(s->index, &s->row);
}

/* ---- device thread ------------------------------------------------------------------------------- */

static void *slot_main(void *arg) {
    slot *s = arg;
    agent *ag = s->ag;
    const agent_opts *o = ag->o;
    double idle_since = util_now_s();
    while (!g_quit && !ag->refused) {
        if (o->max_jobs > 0 && s->jobs_taken >= o->max_jobs) break;   /* a failed job counts too */
        if (s->disabled) break;
        json_t *body = json_pack("{s:I, s:s}", "worker_id", (json_int_t)ag->worker_id, "device", s->device);
        json_t *resp = NULL;
        s->cl.abort = &g_quit;
        int rc = client_request(&s->cl, "POST", "/api/v1/lease", body, -1, &resp);
        json_decref(body);
        if (rc == CLIENT_ESTOPPED) break;
        if (client_refusal(&s->cl, rc) == CLIENT_EAUTH) { agent_token_refused(s, &s->cl); break; }
        if (rc == CLIENT_EREJECTED && s->cl.status == 404) {
            /* the server forgot us (a new database): register again */
            pthread_mutex_lock(&ag->reg_mu);
            int rrc = agent_register(ag, &s->cl);
            pthread_mutex_unlock(&ag->reg_mu);
            if (client_refusal(&s->cl, rrc) == CLIENT_EAUTH) { agent_token_refused(s, &s->cl); break; }
            agent_sleep(o->poll_s, &g_quit);
            continue;
        }
        if (rc != CLIENT_OK) {
            progress_event(s->index, "lease-error", "%s", s->cl.err);
            agent_sleep(o->poll_s, &g_quit);
            continue;
        }
        if (!resp) {  /* 204: nothing queued */
            if (o->idle_exit_s > 0 && util_now_s() - idle_since >= o->idle_exit_s) {
                progress_event(s->index, "idle-exit", "nothing to lease for %.1f s", util_now_s() - idle_since);
                break;
            }
            agent_sleep(o->poll_s, &g_quit);
            continue;
        }
        slot_run_job(s, resp);
        json_decref(resp);
        idle_since = util_now_s();
    }
    return NULL;
}

/* ---- entry points ---------------------------------------------------------------------------------- */

void agent_opts_default(agent_opts *o) {
    memset(o, 0, sizeof *o);
    o->devices = "cpu";
    o->work_dir = "prism-work";
    o->poll_s = 5;
    o->flush_s = 1;
    o->progress = -1;
}

static int agent_parse_devices(agent *ag, const char *spec) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        if (ag->nslots >= AGENT_MAX_DEVICES) { fprintf(stderr, "prism-worker: --devices: at most %d\n", AGENT_MAX_DEVICES); return -1; }
        char *end;
        if (strcmp(t, "cpu") != 0) {
            long v = strtol(t, &end, 10);
            if (!*t || *end || v < 0 || v > 1023) {
                fprintf(stderr, "prism-worker: --devices: '%s' is neither 'cpu' nor a CUDA device index (e.g. --devices 0,1)\n", t);
                return -1;
            }
        }
        snprintf(ag->slots[ag->nslots].device, sizeof ag->slots[0].device, "%s", t);
        ag->nslots++;
    }
    if (ag->nslots == 0) { fprintf(stderr, "prism-worker: --devices: empty list (use cpu or 0,1,...)\n"); return -1; }
    return 0;
}

int agent_run(const agent_opts *o) {
    if (!o->server || !*o->server) { fprintf(stderr, "prism-worker: --server URL is required (e.g. --server http://127.0.0.1:8080)\n"); return 2; }
    if (strncmp(o->server, "http://", 7) != 0 && strncmp(o->server, "https://", 8) != 0) {
        fprintf(stderr, "prism-worker: --server %s: must start with http:// or https://\n", o->server);
        return 2;
    }
    if (!o->token_file) { fprintf(stderr, "prism-worker: --token-file F is required (the server writes <db>.worker-token)\n"); return 2; }
    agent *ag = calloc(1, sizeof *ag);
    if (!ag) return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);   /* before any thread; the process ends with the agent */
    int ret = 1;
    ag->o = o;
    pthread_mutex_init(&ag->reg_mu, NULL);
    pthread_mutex_init(&ag->refuse_mu, NULL);
    if (agent_read_token(o->token_file, ag->token, sizeof ag->token) != 0) { ret = 2; goto out; }
    if (agent_parse_devices(ag, o->devices) != 0) { ret = 2; goto out; }
    gethostname(ag->host, sizeof ag->host - 1);
    if (o->name) snprintf(ag->name, sizeof ag->name, "%s", o->name);
    else snprintf(ag->name, sizeof ag->name, "%.200s-%d", ag->host, (int)getpid());
    agent_abspath(o->work_dir, ag->work_dir, sizeof ag->work_dir);
    if (o->checkpoint_dir) agent_abspath(o->checkpoint_dir, ag->ckpt_dir, sizeof ag->ckpt_dir);
    else snprintf(ag->ckpt_dir, sizeof ag->ckpt_dir, "%.*s/checkpoints", PATH_MAX - 20, ag->work_dir);
    agent_abspath(o->data_root ? o->data_root : ".", ag->data_root, sizeof ag->data_root);
    if (agent_mkdirs(ag->work_dir) != 0 || agent_mkdirs(ag->ckpt_dir) != 0 || !realpath(ag->ckpt_dir, ag->ckpt_real)) {
        fprintf(stderr, "prism-worker: cannot create %s / %s: %s (check --work-dir / --checkpoint-dir)\n",
                ag->work_dir, ag->ckpt_dir, strerror(errno));
        ret = 2;
        goto out;
    }
    memcpy(ag->ckpt_dir, ag->ckpt_real, strlen(ag->ckpt_real) + 1);   /* reported paths are then normalised */
    agent_opts *mo = (agent_opts *)o;   /* resolve "auto" once */
    if (mo->progress < 0) mo->progress = isatty(2) ? 1 : 0;
    progress_setup(ag->nslots, o->progress == 1);

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = 1;
    for (int i = 0; i < ag->nslots; i++) {
        slot *s = &ag->slots[i];
        s->ag = ag;
        s->index = i;
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, &ca);
        if (client_init(&s->cl, o->server, ag->token, NULL) != 0 || client_init(&s->rcl, o->server, ag->token, NULL) != 0) ok = 0;
        s->cl.who = s->label;
        s->rcl.who = s->label;
        /* display label: the device, made unique when a device is listed twice ("cpu,cpu" → cpu, cpu#1) */
        int dup = 0;
        for (int k = 0; k < i; k++) dup |= strcmp(ag->slots[k].device, s->device) == 0;
        if (dup) snprintf(s->label, sizeof s->label, "%.20s#%d", s->device, i);
        else memcpy(s->label, s->device, sizeof s->label);
        memcpy(s->row.device, s->label, sizeof s->row.device);
        s->row.step = -1;
        progress_report(i, &s->row);   /* names the device's line (job 0: "idle", no log line) */
    }
    pthread_condattr_destroy(&ca);
    if (!ok) { fprintf(stderr, "prism-worker: out of memory setting up libcurl\n"); goto out_slots; }

    g_agent = ag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = agent_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rrc = agent_register(ag, &ag->slots[0].cl);
    if (rrc == CLIENT_ESTOPPED) { ret = 0; goto out_slots; }
    if (rrc != CLIENT_OK) { ret = 1; goto out_slots; }

    int started = 0;
    for (int i = 0; i < ag->nslots; i++)
        if (pthread_create(&ag->slots[i].thread, NULL, slot_main, &ag->slots[i]) == 0) started = i + 1;
        else break;
    for (int i = 0; i < started; i++) pthread_join(ag->slots[i].thread, NULL);
    int disabled = 0;
    for (int i = 0; i < ag->nslots; i++) disabled += ag->slots[i].disabled;
    progress_finish();
    progress_event(-1, "exit", "worker %s stopped%s", ag->name,
                   ag->refused ? " (token refused)" : disabled == ag->nslots ? " (no usable device)" : g_quit ? " (signal)" : "");
    ret = disabled == ag->nslots ? 1 : 0;
    if (ag->refused) {
        const char *said = strstr(ag->refused_err, ": HTTP ");
        if (said) said = strstr(said + 7, ": ");
        char said_log[4 * sizeof ag->refused_err];
        if (said) said = log_escape(said_log, sizeof said_log, said);
        fprintf(stderr, "prism-worker: the server refused this worker's token (HTTP %ld on %s%s%s): check --token-file %s: "
                "it must hold the server's current worker token (<db>.worker-token beside its database); jobs in hand "
                "were checkpointed and not reported, and resume from their last reported checkpoint once their "
                "leases expire\n", ag->refused_status, ag->refused_req, said ? ": " : "", said ? said + 2 : "",
                o->token_file);
        ret = 2;
    }
out_slots:
    g_agent = NULL;
    for (int i = 0; i < ag->nslots; i++) {
        client_release(&ag->slots[i].cl);
        client_release(&ag->slots[i].rcl);
        pthread_mutex_destroy(&ag->slots[i].mu);
        pthread_cond_destroy(&ag->slots[i].cv);
    }
out:
    pthread_mutex_destroy(&ag->reg_mu);
    pthread_mutex_destroy(&ag->refuse_mu);
    free(ag);
    return ret;
}
