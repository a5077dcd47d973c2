/* agent.c — the worker agent: register, then per device lease → train → complete/fail, forever.
 *
 * Design. Threads, not processes: train_run() is a library call, so each device gets a slot (slot.h) with
 *   - a device thread (here): leases a job, runs train_run() on it (blocking), then reports the outcome;
 *   - a reporter thread (report.c), alive while a job trains: heartbeats, the metrics outbox and each new
 *     checkpoint, on their own timers whatever the step length.
 * The two threads of a slot share `stop` (train_run's flag: 1 = cancel now, 2 = checkpoint and return), the
 * outbox, the pending checkpoint (slot.c) and the display row (progress.c). What the server's answers mean
 * (409/404: the job is lost; 401/403: the token was refused) is report.c's; this file acts on the outcome:
 * a lost job's unsent points are dropped and the slot leases again; a refused token stops every slot from
 * leasing and the agent exits 2 naming the request and --token-file.
 * Signals: the first SIGTERM/SIGINT sets stop = 2 on every training slot and stops leasing; train_run
 * finishes the step, writes a checkpoint and returns TRAIN_EPREEMPTED; the slot sends its metrics, the
 * checkpoint, and `fail` retryable (so the job is re-queued at once with `resume`), then the agent exits 0.
 * A second signal exits at once (the lease then simply expires).
 * Results: before `complete` (and a rung's val loss before `/rung`) the worker applies the server's own rules
 * (common/result_check.h), so a result the server would refuse fails its job at once, not retryable, with the
 * rule's message; a 4xx on complete / rung all the same with the server's. Nothing is left leased until its TTL.
 */
#include "agent.h"
#include "util.h"

#include "client.h"
#include "extrun.h"
#include "pgrec.h"
#include "job.h"
#include "logesc.h"
#include "model.h"
#include "progress.h"
#include "report.h"
#include "result_check.h"
#include "slot.h"
#include "testhook.h"
#include "train.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGENT_MAX_DEVICES 64

typedef struct agent {
    slot_env env;                   /* what the slots read (slot.h) */
    extrun_set trainers;            /* --trainer NAME=COMMAND (worker/extrun.h) */
    slot slots[AGENT_MAX_DEVICES];
} agent;

static volatile int g_quit;         /* set by the first SIGTERM/SIGINT: stop leasing, preempt training */
static agent *g_agent;

static void agent_on_signal(int sig) {
    if (g_quit) _exit(128 + sig);
    g_quit = 1;
    agent *ag = g_agent;
    if (!ag) return;
    for (int i = 0; i < ag->env.nslots; i++)
        if (ag->slots[i].training && ag->slots[i].stop == 0) ag->slots[i].stop = 2;
    static const char msg[] = "prism-worker: stopping: finishing the current step, checkpointing, reporting "
                              "(signal again to exit at once)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

/* The worker token: `worker_token=X` if the file has such a line, else its first bare line. */
static int agent_read_token(const char *path, char *tok, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "prism-worker: --token-file %s: %s\n", path, strerror(errno)); return -1; }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & 077))
        fprintf(stderr, "prism-worker: warning: token file %s is readable by other users (mode 0%03o): chmod 600 %s\n",
                path, (unsigned)(sb.st_mode & 0777), path);   /* the whole mode, as ls shows it: 0644 */
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

/* ---- one job ------------------------------------------------------------------------------------- */

static json_t *agent_read_result(const char *out_dir, char *err, size_t errlen) {
    char path[PATH_MAX + 100];
    snprintf(path, sizeof path, "%.*s/result.json", PATH_MAX, out_dir);
    json_error_t je;
    json_t *r = json_load_file(path, 0, &je);
    if (!r) snprintf(err, errlen, "%.1000s: %.500s", path, je.text);
    return r;
}

/* Reports `fail` with `msg` (retryable or not) for a job that never reached train_run. */
static void agent_fail_early(slot *s, const char *msg, int retryable) {
    json_t *body = json_pack("{s:s, s:b}", "error", msg, "retryable", retryable);
    report_outcome(s, "fail", body, NULL);
    json_decref(body);
}

/* Stops every slot from leasing: storm_why is what agent_run prints. Call with env->streak_mu held. */
static void agent_storm(slot_env *env, const char *why) {
    if (!env->storm) snprintf(env->storm_why, sizeof env->storm_why, "%s", why);
    env->storm = 1;
}

/* A job's outcome for the failure streak: code 0 = it trained (done, a rung, or a failure of the job's own, such as
 * a NaN loss), else the TRAIN_E* kind of a local failure, one that would fail every job on this worker the same
 * way (data, checkpoint, a job it cannot read). The same kind --fail-limit times in a row stops the worker. */
static void agent_note_outcome(slot *s, int code, const char *msg) {
    slot_env *env = s->env;
    int limit = env->o->fail_limit;
    pthread_mutex_lock(&env->streak_mu);
    if (code == 0) env->streak_n = 0;
    else {
        env->streak_n = code == env->streak_code && env->streak_n > 0 ? env->streak_n + 1 : 1;
        env->streak_code = code;
        snprintf(env->streak_err, sizeof env->streak_err, "%s", msg);
        if (limit > 0 && env->streak_n >= limit) {
            char why[sizeof env->storm_why], like[64];
            snprintf(like, sizeof like, "%.*s", (int)strcspn(env->streak_err, ":'"), env->streak_err);   /* its kind */
            snprintf(why, sizeof why, "%d jobs in a row failed on this worker with the same error (--fail-limit %d), "
                     "so it leases no more: %.900s. Fix this worker (its --data-root, files, disk), start it again, "
                     "and put the failed jobs back with: prism-sweep requeue SWEEP --state failed --error-like '%s'",
                     env->streak_n, limit, env->streak_err, like);
            agent_storm(env, why);
            progress_event(s->index, "fail-limit", "%d jobs in a row failed with: %s; leasing no more", env->streak_n,
                           env->streak_err);
        }
    }
    pthread_mutex_unlock(&env->streak_mu);
}

/* ---- agent_run_job's sections ------------------------------------------------------------------- */

/* The job in the lease, who trains it, and the attempt's folders: 0, or -1 after reporting (or, for a lease
 * that names no job, logging) why this worker does not run it. *trp: the --trainer, NULL = the built-in
 * engine. */
static int agent_job_open(slot *s, int lrc, struct job_config *job, const extrun_trainer **trp, char *out_dir,
                          size_t outlen, char *ckpt_dir, size_t cklen, char *err, size_t errlen) {
    slot_env *env = s->env;
    const agent_opts *o = env->o;
    lease *l = &s->rp.l;
    if (lrc != LEASE_OK) {
        /* a lease this worker cannot read: report it when the lease names its job, else only log it */
        progress_event(s->index, "failed", "job=%lld attempt=%d bad lease: %s", l->job_id, l->attempt, err);
        char msg[2200];
        snprintf(msg, sizeof msg, "bad lease: %s", err);
        if (l->job_id > 0 && l->token[0]) agent_fail_early(s, msg, 0);
        agent_note_outcome(s, TRAIN_EINVAL, msg);
        return -1;
    }
    int jrc = job_from_json(l->job, job, err, errlen);
    if (jrc != JOB_OK) {
        progress_event(s->index, "failed", "job=%lld attempt=%d bad job JSON: %s", l->job_id, l->attempt, err);
        char msg[2200];
        snprintf(msg, sizeof msg, "bad job JSON: %s", err);
        agent_fail_early(s, msg, 0);
        agent_note_outcome(s, TRAIN_EINVAL, msg);
        return -1;
    }
    job_format_heads(job, s->view.row.schedule, sizeof s->view.row.schedule);
    s->view.row.steps = job->train.steps;
    /* who trains it: the built-in engine or one of this worker's --trainer (a server that filters leases by the
     * request's trainers never sends another; an older one might) */
    const extrun_trainer *tr = job->trainer[0] ? extrun_find(env->trainers, job->trainer) : NULL;
    *trp = tr;
    if ((job->trainer[0] && !tr) || (!job->trainer[0] && !env->filter.builtin)) {
        if (job->trainer[0])
            snprintf(err, errlen, "this worker has no trainer \"%s\" (give it --trainer %s=COMMAND); the server "
                     "should not have leased the job to it", job->trainer, job->trainer);
        else
            snprintf(err, errlen, "this worker does not run the built-in engine (--devices-per-job > 1, or no usable "
                     "backend for --devices %s): the server should not have leased the job to it", o->devices);
        progress_event(s->index, "failed", "job=%lld attempt=%d %s", l->job_id, l->attempt, err);
        agent_fail_early(s, err, 1);
        return -1;
    }

    snprintf(out_dir, outlen, "%s/job-%lld-a%d", env->work_dir, l->job_id, l->attempt);
    /* one directory per attempt: a stale holder of the lease can never touch the new holder's files */
    snprintf(ckpt_dir, cklen, "%s/job-%lld-a%d", env->ckpt_dir, l->job_id, l->attempt);
    if (util_mkdir_p(out_dir, 0755) != 0 || util_mkdir_p(ckpt_dir, 0755) != 0) {
        snprintf(err, errlen, "cannot create %.900s or %.900s: %s (check --work-dir/--checkpoint-dir)", out_dir,
                 ckpt_dir, strerror(errno));
        progress_event(s->index, "failed", "job=%lld %s", l->job_id, err);
        agent_fail_early(s, err, 1);
        return -1;
    }
    struct stat cksb;
    if (lstat(ckpt_dir, &cksb) != 0 || !S_ISDIR(cksb.st_mode)) {   /* planted in a shared --checkpoint-dir */
        snprintf(err, errlen, "checkpoint folder %.900s is a symlink or not a folder: not used (remove it; "
                 "--checkpoint-dir must not be writable by others)", ckpt_dir);
        progress_event(s->index, "failed", "job=%lld %s", l->job_id, err);
        agent_fail_early(s, err, 1);
        return -1;
    }
    return 0;
}

/* Resume: the lease offers the last reported checkpoint; returns it when this box can read it (and notes it
 * as acknowledged), else NULL (restart from step 0). */
static const char *agent_job_resume(slot *s) {
    slot_env *env = s->env;
    lease *l = &s->rp.l;
    const char *rpath = l->has_resume ? l->resume_checkpoint : NULL;
    long long rstep = l->resume_step;
    if (!rpath) return NULL;
    /* a missing file (another box's disk) is only unreadable; an existing one must be our own */
    if (access(rpath, R_OK) != 0) {
        progress_event(s->index, "resume-unreadable", "job=%lld attempt=%d checkpoint %s (step %lld) is not "
                       "readable here (%s): restarting from step 0", l->job_id, l->attempt, rpath, rstep,
                       strerror(errno));
        return NULL;
    }
    if (!slot_own_checkpoint(env, l->job_id, rpath)) {
        progress_event(s->index, "resume-refused", "job=%lld attempt=%d the offered checkpoint (step %lld) is not a "
                       "checkpoint of this job under --checkpoint-dir %s: not read, restarting from step 0",
                       l->job_id, l->attempt, rstep, env->ckpt_dir);
        return NULL;
    }
    snprintf(s->ck.acked, sizeof s->ck.acked, "%s", rpath);
    progress_event(s->index, "resume", "job=%lld attempt=%d resuming from step %lld (%s)", l->job_id,
                   l->attempt, rstep, rpath);
    return rpath;
}

/* Trains the job (the reporter thread running alongside); a resume checkpoint that does not load is
 * retried once from step 0. Returns train_run's / extrun_run's code. */
static int agent_job_train(slot *s, const extrun_trainer *tr, json_t *job_json, struct job_config *job,
                           char *out_dir, char *ckpt_dir, const char *resume, struct train_result *res, char *err,
                           size_t errlen) {
    slot_env *env = s->env;
    const agent_opts *o = env->o;
    report *rp = &s->rp;
    lease *l = &rp->l;
    memset(res, 0, sizeof *res);
    /* successive halving: the lease says where this rung stops (the LR schedule stays the full run's) */
    struct train_opts to = {
        .stop_at_step = l->stop_at_step,
        .out_dir = out_dir, .device = s->device, .data_root = env->data_root, .checkpoint_dir = ckpt_dir,
        .resume = resume, .confine_data = !o->data_anywhere, .stop = &s->stop, .on_metrics = slot_on_metrics, .on_checkpoint = slot_on_checkpoint,
        .on_progress = slot_on_progress, .ctx = s, .quiet = 1, .result = res, .err = err, .errlen = errlen,
    };
    s->training = 1;
    if (*env->quit) s->stop = 2;
    report_start(s);
    char tprefix[160];   /* an external trainer's log lines (worker/extrun.h) */
    snprintf(tprefix, sizeof tprefix, "prism-worker [%s] job=%lld trainer=%s", s->label, l->job_id, tr ? tr->name : "");
    int trc = tr ? extrun_run(env->trainers, tr, job_json, job, &to, tprefix) : train_run(job, &to);
    pthread_mutex_lock(&s->mu);
    int lost = rp->lost;
    pthread_mutex_unlock(&s->mu);
    if (!tr && trc == TRAIN_ECHECKPOINT && resume && strncmp(err, "resume: ", 8) == 0 && !lost && s->stop == 0) {
        /* readable but not loadable (truncated, corrupt): like an unreadable one, start again from 0 */
        progress_event(s->index, "resume-unreadable", "job=%lld attempt=%d checkpoint %s (step %lld) does not load "
                       "(%s): restarting from step 0", l->job_id, l->attempt, resume, (long long)l->resume_step, err);
        to.resume = NULL;
        pthread_mutex_lock(&s->mu);
        s->ck.acked[0] = 0;   /* it was not loaded: not ours to supersede (or remove) */
        pthread_mutex_unlock(&s->mu);
        trc = train_run(job, &to);
    }
    s->training = 0;
    report_stop(s);
    return trc;
}

/* A result that is not reported as done: `fail`, not retryable, with why (the rule it breaks, or the server's
 * refusal). A result of an external trainer reads "trainer failed: trainer NAME: ..." like its other failures
 * (requeue --error-like 'trainer failed'); the streak counts it (a trainer that writes a bad result writes it
 * for every job). */
static void agent_fail_result(slot *s, const extrun_trainer *tr, const struct train_result *res, const char *why) {
    lease *l = &s->rp.l;
    char msg[2600];
    if (tr) snprintf(msg, sizeof msg, "%s: trainer %s: %.2400s", train_strerror(TRAIN_ETRAINER), tr->name, why);
    else snprintf(msg, sizeof msg, "%.2500s", why);
    json_t *body = json_pack("{s:s, s:b}", "error", msg, "retryable", 0);
    int rc = report_outcome(s, "fail", body, res);
    json_decref(body);
    if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) return;
    progress_event(s->index, "failed", "job=%lld attempt=%d retryable=0 %s%s", l->job_id, l->attempt, msg,
                   rc == CLIENT_OK ? "" : " (not acknowledged)");
    agent_note_outcome(s, tr ? TRAIN_ETRAINER : TRAIN_EINVAL, msg);
}

static void agent_report_failure(slot *s, int trc, struct train_result *res, const char *err);

/* A finished run: its result file as `complete` (a result that cannot be read: `fail`, retryable). The result is
 * checked first with the server's own rules (common/result_check.h): one the server would refuse fails its job
 * now with the rule's message (a val_loss above the divergence bound as "diverged: ..."), and a 400 from
 * complete all the same with the server's, instead of leaving the job leased until its TTL. */
static void agent_report_complete(slot *s, const struct job_config *job, const extrun_trainer *tr, const char *out_dir,
                                  struct train_result *res, char *err, size_t errlen) {
    slot_env *env = s->env;
    lease *l = &s->rp.l;
    int rc;
    json_t *result = agent_read_result(out_dir, err, errlen);
    if (!result) {
        json_t *body = json_pack("{s:s, s:b}", "error", err, "retryable", 1);
        rc = report_outcome(s, "fail", body, res);
        json_decref(body);
        if (rc != CLIENT_EAUTH && rc != CLIENT_EGONE) progress_event(s->index, "failed", "job=%lld %s", l->job_id, err);
        return;
    }
    result_limits lim;
    result_limits_from_job(job, &lim);
    char why[1200];
    /* test hook (tests/integration/test_trainers_misbehave.sh; test builds only, common/testhook.h): send the result
     * unchecked, so the server's refusal is what the worker meets */
    if (!testhook_fault("PRISM_FAULT_SKIP_RESULT_CHECK", "1") && result_check(result, &lim, why, sizeof why) < 0) {
        int diverged = result_diverged(result, &lim);
        json_decref(result);
        if (diverged) { agent_report_failure(s, TRAIN_EDIVERGED, res, why); return; }
        snprintf(err, errlen, "invalid result: %s (result.json is kept in %.600s)", why, out_dir);
        agent_fail_result(s, tr, res, err);
        return;
    }
    json_t *body = json_pack("{s:o}", "result", result);
    rc = report_outcome(s, "complete", body, res);
    json_decref(body);
    if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) return;
    if (rc == CLIENT_EREJECTED) {   /* a 400 (its rules), 413...: no resend can succeed, its message fails the job */
        snprintf(err, errlen, "the server refused the result: %.900s (result.json is kept in %.600s)", s->cl.err,
                 out_dir);
        agent_fail_result(s, tr, res, err);
        return;
    }
    if (rc == CLIENT_OK) slot_remove_checkpoints(env->ckpt_dir, l->job_id);
    if (rc == CLIENT_OK)
        progress_event(s->index, "done", "job=%lld attempt=%d schedule=%s val_loss=%.4f tok_s=%.0f wall_s=%.1f",
                       l->job_id, l->attempt, s->view.row.schedule, res->val_loss, res->tok_per_s, res->wall_s);
    else
        progress_event(s->index, "report-error", "job=%lld complete not acknowledged: %s", l->job_id, s->cl.err);
    s->jobs_done++;
    agent_note_outcome(s, 0, NULL);
}

/* A halving rung: metrics and the rung checkpoint first (report_outcome), then the val loss at the rung;
 * the checkpoints stay: a promoted job resumes from this one. The val loss is checked first with the server's
 * bound (common/result_check.h): above it the run diverged ("diverged: ..."), and a val loss the server refuses
 * (or a 400 on the rung report) fails the job at once with the message, instead of leaving it leased. */
static void agent_report_rung(slot *s, const struct job_config *job, const extrun_trainer *tr,
                              struct train_result *res) {
    lease *l = &s->rp.l;
    result_limits lim;
    result_limits_from_job(job, &lim);
    char why[1200];
    if (result_check_val_loss(&lim, "paused.val_loss", res->val_loss, why, sizeof why) < 0) {
        if (isfinite(res->val_loss) && res->val_loss > lim.val_loss_max) agent_report_failure(s, TRAIN_EDIVERGED, res, why);
        else agent_fail_result(s, tr, res, why);
        return;
    }
    json_t *body = json_pack("{s:i, s:f}", "step", res->paused_at, "val_loss", res->val_loss);
    int rc = report_outcome(s, "rung", body, res);
    json_decref(body);
    if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) return;
    if (rc == CLIENT_EREJECTED) {
        snprintf(why, sizeof why, "the server refused the rung report: %.900s", s->cl.err);
        agent_fail_result(s, tr, res, why);
        return;
    }
    progress_event(s->index, rc == CLIENT_OK ? "rung" : "report-error", "job=%lld attempt=%d schedule=%s step=%d "
                   "val_loss=%.4f%s%s", l->job_id, l->attempt, s->view.row.schedule, res->paused_at, res->val_loss,
                   rc == CLIENT_OK ? "" : " not acknowledged: ", rc == CLIENT_OK ? "" : s->cl.err);
    s->jobs_done++;
    agent_note_outcome(s, 0, NULL);
}

/* A failure or a preemption: say why, with the retry policy of its kind. */
static void agent_report_failure(slot *s, int trc, struct train_result *res, const char *err) {
    slot_env *env = s->env;
    lease *l = &s->rp.l;
    int retryable, rc;
    char msg[2600];
    switch (trc) {
    case TRAIN_EPREEMPTED:
        retryable = 1;
        if (res->checkpoint[0] && (s->ck.step != res->steps_done || !s->ck.path[0]))
            slot_on_checkpoint(s, res->steps_done, res->checkpoint);   /* make sure the last one is reported */
        if (s->stop || *env->quit)
            snprintf(msg, sizeof msg, "preempted: worker %.200s got a stop signal at step %d; checkpoint %.2000s", env->name,
                     res->steps_done, res->checkpoint[0] ? res->checkpoint : "(none)");
        else   /* the trainer said so on its own (a spot notice, a SLURM preemption), the worker was not stopped */
            snprintf(msg, sizeof msg, "preempted: the trainer on worker %.200s said preempted at step %d; checkpoint %.2000s",
                     env->name, res->steps_done, res->checkpoint[0] ? res->checkpoint : "(none)");
        break;
    case TRAIN_ENAN: case TRAIN_EDATA: case TRAIN_EINVAL: case TRAIN_ECHECKPOINT: case TRAIN_EDIVERGED: case TRAIN_ETRAINER:
        retryable = trc == TRAIN_ETRAINER && res->retryable;   /* a trainer's "failed" line may say a retry can help */
        snprintf(msg, sizeof msg, "%s: %s", train_strerror(trc), err);
        break;
    default:   /* out of memory, device, I/O: another box may do better */
        retryable = 1;
        snprintf(msg, sizeof msg, "%s: %s", train_strerror(trc), err);
        break;
    }
    json_t *body = json_pack("{s:s, s:b}", "error", msg, "retryable", retryable);
    if (body && trc == TRAIN_EPREEMPTED) json_object_set_new(body, "preempted", json_true());   /* not an attempt used */
    rc = report_outcome(s, "fail", body, res);
    json_decref(body);
    if (rc == CLIENT_EAUTH || rc == CLIENT_EGONE) return;
    progress_event(s->index, trc == TRAIN_EPREEMPTED ? "preempted" : "failed", "job=%lld attempt=%d retryable=%d %s%s",
                   l->job_id, l->attempt, retryable, msg, rc == CLIENT_OK ? "" : " (not acknowledged)");
    /* data, checkpoint, an unreadable job, a broken trainer: this box's; a NaN, a divergence (result_error_is_outcome),
     * a failure a retry may cure: not counted */
    if (trc != TRAIN_EPREEMPTED)
        agent_note_outcome(s, !retryable && !result_error_is_outcome(msg) && (trc == TRAIN_EDATA || trc == TRAIN_ECHECKPOINT ||
                           trc == TRAIN_EINVAL || trc == TRAIN_ETRAINER) ? trc : 0, msg);
    if (trc == TRAIN_EDEVICE || trc == TRAIN_EBACKEND) {
        /* a device that cannot train would fail every job it leases: take it out of service */
        s->disabled = 1;
        progress_event(s->index, "device-disabled", "device %s leases no more jobs: %s", s->device, err);
    }
}

/* One leased job on slot s, from the lease (borrowed) to its reported outcome. */
static void agent_run_job(slot *s, json_t *lease_json) {
    slot_env *env = s->env;
    const agent_opts *o = env->o;
    report *rp = &s->rp;
    lease *l = &rp->l;
    struct job_config job;
    job_init(&job);
    char err[2048] = "";
    char out_dir[PATH_MAX + 64], ckpt_dir[PATH_MAX + 64];
    const extrun_trainer *tr = NULL;

    s->jobs_taken++;
    lease_init(l);
    int lrc = lease_from_json(lease_json, l, err, sizeof err);
    report_begin(s);
    memset(&s->ck, 0, sizeof s->ck);
    s->stop = 0;
    s->reporter_quit = 0;
    progress_job_begin(&s->view, s->label, l->job_id, l->attempt);
    progress_job_sweep(&s->view, l->sweep_done, l->sweep_jobs);   /* current at the lease, not a heartbeat later */
    if (agent_job_open(s, lrc, &job, &tr, out_dir, sizeof out_dir, ckpt_dir, sizeof ckpt_dir, err, sizeof err))
        goto out;
    const char *resume = agent_job_resume(s);
    progress_event(s->index, "leased", "job=%lld attempt=%d schedule=%s seed=%llu steps=%d out=%s", l->job_id,
                   l->attempt, s->view.row.schedule, (unsigned long long)job.train.seed, job.train.steps, out_dir);

    struct train_result res;
    int trc = agent_job_train(s, tr, l->job, &job, out_dir, ckpt_dir, resume, &res, err, sizeof err);
    if (rp->lost) {
        progress_event(s->index, "stopped", "job=%lld attempt=%d stopped at step %ld: %s (%zu unsent metric points "
                       "dropped)", l->job_id, l->attempt, s->view.row.step, rp->lost_reason, outbox_pending(&rp->ob));
        goto out;
    }
    if (rp->refused)   /* the token was refused: checkpointed (stop = 2) and reported nothing */
        report_log_refused(s, &res);
    else if (trc == TRAIN_OK && res.paused_at > 0)
        agent_report_rung(s, &job, tr, &res);
    else if (trc == TRAIN_OK)
        agent_report_complete(s, &job, tr, out_dir, &res, err, sizeof err);
    else if (trc == TRAIN_ECANCELLED)
        progress_event(s->index, "stopped", "job=%lld attempt=%d cancelled at step %ld", l->job_id, l->attempt,
                       s->view.row.step);
    else
        agent_report_failure(s, trc, &res, err);
out:
    job_release(&job);
    report_end(s);
    s->view.row.job_id = 0;
    if (o->progress == 1) progress_report(s->index, &s->view.row);
}

/* ---- device thread ------------------------------------------------------------------------------- */

/* The device loop: lease, run the job, lease again, until a signal, a refused token, --max-jobs,
 * --idle-exit or a disabled device. */
static void *agent_slot_main(void *arg) {
    slot *s = arg;
    slot_env *env = s->env;
    const agent_opts *o = env->o;
    double idle_since = util_now_s();
    while (!g_quit && !env->refused && !env->storm) {
        if (o->max_jobs > 0 && s->jobs_taken >= o->max_jobs) break;   /* a failed job counts too */
        if (s->disabled) break;
        json_t *resp = NULL;
        int rc = report_lease(s, &resp);
        if (rc == CLIENT_ESTOPPED) break;
        if (client_refusal(&s->cl, rc) == CLIENT_EAUTH) { report_token_refused(s, &s->cl); break; }
        if (rc == CLIENT_EREJECTED && s->cl.status == 404) {
            /* the server forgot us (a new database): register again */
            pthread_mutex_lock(&env->reg_mu);
            int rrc = report_register(env, &s->cl);
            pthread_mutex_unlock(&env->reg_mu);
            if (client_refusal(&s->cl, rrc) == CLIENT_EAUTH) { report_token_refused(s, &s->cl); break; }
            slot_sleep(o->poll_s, &g_quit);
            continue;
        }
        if (rc == CLIENT_ECONFLICT) {
            /* the server stopped leasing to this worker (its failure streak, docs/API.md): it will not change its mind */
            char why[sizeof env->storm_why];
            snprintf(why, sizeof why, "the server leases nothing more to this worker: %.1200s", s->cl.err);
            pthread_mutex_lock(&env->streak_mu);
            agent_storm(env, why);
            pthread_mutex_unlock(&env->streak_mu);
            progress_event(s->index, "lease-refused", "%s", s->cl.err);
            break;
        }
        if (rc != CLIENT_OK) {
            progress_event(s->index, "lease-error", "%s", s->cl.err);
            slot_sleep(o->poll_s, &g_quit);
            continue;
        }
        if (!resp) {  /* 204: nothing queued */
            if (o->idle_exit_s > 0 && util_now_s() - idle_since >= o->idle_exit_s) {
                progress_event(s->index, "idle-exit", "nothing to lease for %.1f s", util_now_s() - idle_since);
                break;
            }
            slot_sleep(o->poll_s, &g_quit);
            continue;
        }
        agent_run_job(s, resp);
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
    o->fail_limit = 3;
    o->trainer_timeout_s = 600;
    o->trainer_grace_s = 30;
    o->devices_per_job = 1;
}

static int agent_parse_devices(agent *ag, const char *spec) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    int *n = &ag->env.nslots;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        if (*n >= AGENT_MAX_DEVICES) { fprintf(stderr, "prism-worker: --devices: at most %d\n", AGENT_MAX_DEVICES); return -1; }
        char *end;
        if (strcmp(t, "cpu") != 0) {
            long v = strtol(t, &end, 10);
            if (!*t || *end || v < 0 || v > 1023) {
                fprintf(stderr, "prism-worker: --devices: '%s' is neither 'cpu' nor a CUDA device index (e.g. --devices 0,1)\n", t);
                return -1;
            }
        }
        snprintf(ag->slots[*n].device, sizeof ag->slots[0].device, "%s", t);
        ++*n;
    }
    if (*n == 0) { fprintf(stderr, "prism-worker: --devices: empty list (use cpu or 0,1,...)\n"); return -1; }
    const agent_opts *o = ag->env.o;
    lease_filter *f = &ag->env.filter;
    f->builtin = 1;
    /* a CUDA device needs the CUDA backend (loaded here, once, for all of them) and a usable device: said now,
     * before registering, rather than as a failed job later; a worker with external trainers then leases only theirs */
    for (int i = 0; i < *n && f->builtin; i++) {
        char err[2048];
        if (strcmp(ag->slots[i].device, "cpu") != 0 && !model_ops_for_device(ag->slots[i].device, NULL, err, sizeof err)) {
            fprintf(stderr, "prism-worker: --devices %s: %s\n", ag->slots[i].device, err);
            if (o->ntrainers == 0) return -1;
            fprintf(stderr, "prism-worker: the built-in engine cannot train here: leasing only jobs of this worker's "
                    "--trainer\n");
            f->builtin = 0;
        }
    }
    /* --devices-per-job N: one job gets N devices (an external trainer's PRISM_DEVICES); slots = devices / N */
    int per = o->devices_per_job > 0 ? o->devices_per_job : 1;
    if (per > 1) {
        if (o->ntrainers == 0) {
            fprintf(stderr, "prism-worker: --devices-per-job %d: the built-in engine trains one job on one device; more "
                    "than 1 is for external trainers (--trainer NAME=COMMAND, docs/TRAINERS.md), or use "
                    "--devices-per-job 1\n", per);
            return -1;
        }
        if (*n % per != 0) {
            fprintf(stderr, "prism-worker: --devices-per-job %d does not divide the %d devices of --devices %s: give a "
                    "multiple of %d devices\n", per, *n, spec, per);
            return -1;
        }
        char names[AGENT_MAX_DEVICES][sizeof ag->slots[0].device];
        for (int i = 0; i < *n; i++) memcpy(names[i], ag->slots[i].device, sizeof names[i]);
        for (int g = 0; g < *n / per; g++) {
            char *d = ag->slots[g].device;
            size_t len = 0, cap = sizeof ag->slots[0].device;
            d[0] = 0;
            for (int k = 0; k < per; k++) {
                int w = snprintf(d + len, cap - len, k ? ",%s" : "%s", names[g * per + k]);
                if (w < 0 || (size_t)w >= cap - len) {
                    fprintf(stderr, "prism-worker: --devices-per-job %d: the device list of one job is longer than %zu "
                            "characters\n", per, cap - 1);
                    return -1;
                }
                len += (size_t)w;
            }
        }
        for (int i = *n / per; i < *n; i++) ag->slots[i].device[0] = 0;
        *n /= per;
        f->builtin = 0;   /* no built-in job is leased to a slot of several devices */
    }
    return 0;
}

int agent_run(const agent_opts *o) {
    if (!o->server || !*o->server) { fprintf(stderr, "prism-worker: --server URL is required (e.g. --server http://127.0.0.1:8080)\n"); return 2; }
    if (strncmp(o->server, "http://", 7) != 0 && strncmp(o->server, "https://", 8) != 0) {
        fprintf(stderr, "prism-worker: --server %s: must start with http:// or https://\n", o->server);
        return 2;
    }
    {   /* the base URL, not the API's: every route is appended to it (…/api/v1/api/v1/lease would be a 404) */
        size_t n = strlen(o->server);
        while (n > 0 && o->server[n - 1] == '/') n--;
        if (n >= 7 && strncmp(o->server + n - 7, "/api/v1", 7) == 0) {
            fprintf(stderr, "prism-worker: --server %s: give the server's base URL, without /api/v1 (--server %.*s): "
                    "the worker adds the routes itself\n", o->server, (int)(n - 7), o->server);
            return 2;
        }
    }
    if (!o->token_file) { fprintf(stderr, "prism-worker: --token-file F is required (the server writes <db>.worker-token)\n"); return 2; }
    agent *ag = calloc(1, sizeof *ag);
    if (!ag) return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);   /* before any thread; the process ends with the agent */
    int ret = 1;
    slot_env *env = &ag->env;
    env->o = o;
    env->slots = ag->slots;
    env->quit = &g_quit;
    pthread_mutex_init(&env->reg_mu, NULL);
    pthread_mutex_init(&env->refuse_mu, NULL);
    pthread_mutex_init(&env->streak_mu, NULL);
    int ninit = 0;
    if (agent_read_token(o->token_file, env->token, sizeof env->token) != 0) { ret = 2; goto out; }
    char terr[1024];
    if (extrun_set_parse(&ag->trainers, o->trainers, o->ntrainers, o->trainer_timeout_s, o->trainer_grace_s, terr,
                         sizeof terr) != 0) {
        fprintf(stderr, "prism-worker: %s\n", terr);
        ret = 2;
        goto out;
    }
    env->trainers = &ag->trainers;
    for (int i = 0; i < ag->trainers.n; i++)   /* the lease request names them (common/lease.h) */
        snprintf(env->filter.names[env->filter.ntrainers++], sizeof env->filter.names[0], "%s", ag->trainers.t[i].name);
    if (agent_parse_devices(ag, o->devices) != 0) { ret = 2; goto out; }
    gethostname(env->host, sizeof env->host - 1);
    if (o->name) snprintf(env->name, sizeof env->name, "%s", o->name);
    else snprintf(env->name, sizeof env->name, "%.200s-%d", env->host, (int)getpid());
    slot_abspath(o->work_dir, env->work_dir, sizeof env->work_dir);
    if (o->checkpoint_dir) slot_abspath(o->checkpoint_dir, env->ckpt_dir, sizeof env->ckpt_dir);
    else snprintf(env->ckpt_dir, sizeof env->ckpt_dir, "%.*s/checkpoints", PATH_MAX - 20, env->work_dir);
    slot_abspath(o->data_root ? o->data_root : ".", env->data_root, sizeof env->data_root);
    if (util_mkdir_p(env->work_dir, 0755) != 0 || util_mkdir_p(env->ckpt_dir, 0755) != 0 ||
        !realpath(env->ckpt_dir, env->ckpt_real)) {
        fprintf(stderr, "prism-worker: cannot create %s / %s: %s (check --work-dir / --checkpoint-dir)\n",
                env->work_dir, env->ckpt_dir, strerror(errno));
        ret = 2;
        goto out;
    }
    memcpy(env->ckpt_dir, env->ckpt_real, strlen(env->ckpt_real) + 1);   /* reported paths are then normalised */
    /* the trainer groups a worker killed with SIGKILL left running (worker/pgrec.h), before any device leases */
    snprintf(ag->trainers.group_dir, sizeof ag->trainers.group_dir, "%.*s/trainer-groups", PATH_MAX - 20, env->work_dir);
    pgrec_reap_stale(ag->trainers.group_dir, o->trainer_grace_s);
    agent_opts *mo = (agent_opts *)o;   /* resolve "auto" once */
    if (mo->progress < 0) mo->progress = isatty(2) ? 1 : 0;
    progress_setup(env->nslots, o->progress == 1);

    int ok = 1;
    for (int i = 0; i < env->nslots; i++) {
        if (slot_init(&ag->slots[i], env, i, ag->slots) != 0) ok = 0;
        ninit = i + 1;
        progress_report(i, &ag->slots[i].view.row);   /* names the device's line (job 0: "idle", no log line) */
    }
    if (!ok) { fprintf(stderr, "prism-worker: out of memory setting up libcurl\n"); goto out; }

    g_agent = ag;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = agent_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rrc = report_register(env, &ag->slots[0].cl);
    if (rrc == CLIENT_ESTOPPED) { ret = 0; goto out; }
    if (rrc != CLIENT_OK) { ret = rrc == CLIENT_EPROTO ? 2 : 1; goto out; }   /* EPROTO: not a prism-sweep server */

    int started = 0;
    for (int i = 0; i < env->nslots; i++)
        if (pthread_create(&ag->slots[i].thread, NULL, agent_slot_main, &ag->slots[i]) == 0) started = i + 1;
        else break;
    for (int i = 0; i < started; i++) pthread_join(ag->slots[i].thread, NULL);
    int disabled = 0;
    for (int i = 0; i < env->nslots; i++) disabled += ag->slots[i].disabled;
    progress_finish();
    progress_event(-1, "exit", "worker %s stopped%s", env->name,
                   env->refused ? " (token refused)" : env->storm ? " (failure storm)" : disabled == env->nslots ?
                   " (no usable device)" : g_quit ? " (signal)" : "");
    ret = disabled == env->nslots ? 1 : 0;
    if (env->storm && !env->refused) {
        fprintf(stderr, "prism-worker: stopped: %s\n", env->storm_why);
        ret = 1;
    }
    if (env->refused) {
        const char *said = strstr(env->refused_err, ": HTTP ");
        if (said) said = strstr(said + 7, ": ");
        char said_log[4 * sizeof env->refused_err];
        if (said) said = log_escape(said_log, sizeof said_log, said);
        fprintf(stderr, "prism-worker: the server refused this worker's token (HTTP %ld on %s%s%s): check --token-file %s: "
                "it must hold the server's current worker token (<db>.worker-token beside its database); jobs in hand "
                "were checkpointed and not reported, and resume from their last reported checkpoint once their "
                "leases expire\n", env->refused_status, env->refused_req, said ? ": " : "", said ? said + 2 : "",
                o->token_file);
        ret = 2;
    }
out:
    g_agent = NULL;
    for (int i = 0; i < ninit; i++) slot_release(&ag->slots[i]);
    pthread_mutex_destroy(&env->reg_mu);
    pthread_mutex_destroy(&env->refuse_mu);
    pthread_mutex_destroy(&env->streak_mu);
    extrun_set_release(&ag->trainers);
    free(ag);
    return ret;
}
