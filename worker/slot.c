/* slot.c — one device of the agent: set up and torn down, its job's checkpoint files, the trainer's callbacks.
 *
 * Design. train_run() is a library call on the device thread; what it produces reaches the reporter thread
 * through the slot, under the slot's mutex: metric rows go into the outbox (report.h) and the display row
 * (progress.h); each new checkpoint becomes the pending one and wakes the reporter.
 * Checkpoint files: the trainer keeps only its newest checkpoint and deletes the previous one once the new
 * one is durable, but the server may not have heard of the new one yet (it is reported asynchronously, and
 * not at all while the server is down). So each checkpoint gets a hard link resume-STEP.bin that the agent
 * owns: the file the server offers as `resume` always exists. The link of the previously acknowledged
 * checkpoint is removed once a newer one is acknowledged, and every folder of the job once it is complete.
 * Only files that pass slot_own_checkpoint are ever read as resume or removed.
 */
#include "slot.h"

#include "train.h"
#include "util.h"

#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int slot_init(slot *s, slot_env *env, int index, const slot *before) {
    s->env = env;
    s->index = index;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    int ok = client_init(&s->cl, env->o->server, env->token, NULL) == 0;
    ok &= client_init(&s->rcl, env->o->server, env->token, NULL) == 0;
    s->cl.who = s->label;
    s->rcl.who = s->label;
    /* display label: the device, made unique when a device is listed twice ("cpu,cpu" → cpu, cpu#1) */
    int dup = 0;
    for (int k = 0; k < index; k++) dup |= strcmp(before[k].device, s->device) == 0;
    if (dup) snprintf(s->label, sizeof s->label, "%.20s#%d", s->device, index);
    else snprintf(s->label, sizeof s->label, "%.31s", s->device);
    progress_job_begin(&s->view, s->label, 0, 0);
    return ok ? 0 : -1;
}

void slot_release(slot *s) {
    client_release(&s->cl);
    client_release(&s->rcl);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

void slot_sleep(double s, volatile int *flag) {
    double end = util_now_s() + s;
    while (!(flag && *flag)) {
        double left = end - util_now_s();
        if (left <= 0) return;
        if (left > 0.05) left = 0.05;
        struct timespec ts = { 0, (long)(left * 1e9) };
        nanosleep(&ts, NULL);
    }
}

void slot_abspath(const char *in, char *out, size_t len) {
    if (in[0] == '/') { snprintf(out, len, "%s", in); return; }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) { snprintf(out, len, "%s", in); return; }
    int n = snprintf(out, len, "%s/%s", cwd, in);
    if (n < 0 || (size_t)n >= len) snprintf(out, len, "%s", in);   /* too long: keep it relative */
}

int slot_own_checkpoint(const slot_env *env, long long job_id, const char *path) {
    char real[PATH_MAX];
    if (!path || !*path || !env->ckpt_real[0] || !realpath(path, real)) return 0;
    size_t rl = strlen(env->ckpt_real);
    if (strncmp(real, env->ckpt_real, rl) != 0 || real[rl] != '/') return 0;
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

/* ---- trainer callbacks (device thread) ------------------------------------------------------------- */

void slot_on_metrics(void *ctx, json_t *row) {
    slot *s = ctx;
    json_t *copy = json_deep_copy(row);
    if (copy) outbox_push(&s->rp.ob, copy);
    pthread_mutex_lock(&s->mu);
    progress_job_metrics(&s->view, row);
    pthread_mutex_unlock(&s->mu);
}

void slot_on_checkpoint(void *ctx, int step, const char *path) {
    slot *s = ctx;
    char abs[PATH_MAX], link_path[PATH_MAX];
    slot_abspath(path, abs, sizeof abs);
    const char *slash = strrchr(abs, '/');
    snprintf(link_path, sizeof link_path, "%.*s/resume-%d.bin", (int)(slash ? slash - abs : 1), slash ? abs : ".", step);
    unlink(link_path);
    const char *use = link(abs, link_path) == 0 ? link_path : abs;
    pthread_mutex_lock(&s->mu);
    slot_ckpt *ck = &s->ck;
    /* superseded before it was ever reported; but once the token is refused nothing more is reported, and
     * the refused report of this one may have been a retry of one the server had already stored */
    if (ck->pending && !ck->sending && !ck->tried && !s->rp.refused && strcmp(ck->path, ck->acked) != 0 &&
        strcmp(ck->path, use) != 0 && strstr(ck->path, "/resume-") &&
        slot_own_checkpoint(s->env, s->rp.l.job_id, ck->path))
        unlink(ck->path);
    snprintf(ck->path, sizeof ck->path, "%s", use);
    ck->step = step;
    pthread_mutex_lock(&s->rp.ob.mu);   /* the trainer pushes and writes checkpoints: every point of its steps is in */
    ck->covered = s->rp.ob.pushed;
    pthread_mutex_unlock(&s->rp.ob.mu);
    ck->pending = 1;
    ck->tried = 0;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void slot_on_progress(void *ctx, const struct train_progress *p) {
    slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    progress_job_step(&s->view, p->step, p->steps, p->loss, p->tok_per_s, p->eta_s);
    progress_row r = s->view.row;
    pthread_mutex_unlock(&s->mu);
    if (s->env->o->progress == 1) progress_report(s->index, &r);
}

/* ---- checkpoint files ------------------------------------------------------------------------------ */

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
        if (strcmp(p, s->ck.path) != 0 && slot_own_checkpoint(s->env, s->rp.l.job_id, p)) unlink(p);
    }
    closedir(d);
}

void slot_ckpt_acked(slot *s, const char *sent, int step) {
    slot_ckpt *ck = &s->ck;
    if (ck->step == step && strcmp(ck->path, sent) == 0) ck->pending = 0;
    /* the server now offers `sent`: the older link is no longer needed */
    if (ck->acked[0] && strcmp(ck->acked, sent) != 0 && strstr(ck->acked, "/resume-") &&
        slot_own_checkpoint(s->env, s->rp.l.job_id, ck->acked))
        unlink(ck->acked);
    snprintf(ck->acked, sizeof ck->acked, "%s", sent);
    slot_remove_older_links(s, sent, step);
}

void slot_remove_checkpoints(const char *root, long long job_id) {
    char pat[PATH_MAX + 64];
    snprintf(pat, sizeof pat, "%s/job-%lld-a*", root, job_id);
    glob_t g;
    if (glob(pat, GLOB_ONLYDIR, NULL, &g) != 0) return;
    char root_real[PATH_MAX];
    int have_root = realpath(root, root_real) != NULL;
    size_t rl = have_root ? strlen(root_real) : 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        /* a symlinked job-ID-aN (a shared checkpoint folder: anyone may plant one) is not followed: only a real
         * folder directly under the checkpoint root is emptied */
        struct stat sb;
        char real[PATH_MAX];
        if (lstat(g.gl_pathv[i], &sb) != 0 || !S_ISDIR(sb.st_mode) || !have_root || !realpath(g.gl_pathv[i], real) ||
            strncmp(real, root_real, rl) != 0 || real[rl] != '/' || strchr(real + rl + 1, '/'))
            continue;
        DIR *d = opendir(g.gl_pathv[i]);
        if (!d) continue;
        struct dirent *e;
        char p[PATH_MAX + 600];
        while ((e = readdir(d))) {
            if ((strncmp(e->d_name, "resume-", 7) == 0 || strncmp(e->d_name, "ckpt_", 5) == 0) && strstr(e->d_name, ".bin")) {
                snprintf(p, sizeof p, "%s/%s", g.gl_pathv[i], e->d_name);
                unlink(p);   /* (a symlink entry is removed itself, its target left alone) */
            }
        }
        closedir(d);
        rmdir(g.gl_pathv[i]);
    }
    globfree(&g);
}
