/* progress.c — live per-device lines on a TTY, structured key=value lines otherwise.
 *
 * Design: one static display guarded by a mutex. Live mode keeps the last row of every device and draws
 * the block of n lines at the bottom of the terminal: to redraw it moves the cursor up n lines (CSI nA)
 * and rewrites each line after clearing it (CSI K). An event first moves up over the block, prints the
 * event line, then draws the block again below it, so events scroll away while the block stays put. That only
 * holds while no block line wraps, so progress_format builds each line from fields in order of importance and
 * stops at the first that would pass the width (read again at every draw: a resized terminal is followed).
 * A progress_job is one device's row while it trains: the trainer's callbacks fill it (metrics rows and
 * progress figures), the agent shows it (progress_report) and, in log mode, only when new points came.
 */
#include "progress.h"

#include "logesc.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#define PROGRESS_MAX 64

static struct {
    pthread_mutex_t mu;
    int n, live, drawn;
    double last_draw;
    progress_row rows[PROGRESS_MAX];
} P = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void progress_stamp(char *buf, size_t len) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void progress_fmt_eta(double s, char *buf, size_t len) {
    if (s < 0 || !isfinite(s)) { snprintf(buf, len, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
}

void progress_setup(int n_devices, int live) {
    pthread_mutex_lock(&P.mu);
    P.n = n_devices < PROGRESS_MAX ? n_devices : PROGRESS_MAX;
    P.live = live;
    P.drawn = 0;
    for (int i = 0; i < P.n; i++) {
        memset(&P.rows[i], 0, sizeof P.rows[i]);
        P.rows[i].loss = P.rows[i].val_loss = NAN;
        P.rows[i].eta_s = -1;
    }
    pthread_mutex_unlock(&P.mu);
}

int progress_width(void) {
    const char *c = getenv("COLUMNS");
    long w = c && *c ? strtol(c, NULL, 10) : 0;
    struct winsize ws;
    if (w <= 0 && ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) w = ws.ws_col;
    if (w <= 0) w = 80;
    return w > 4096 ? 4096 : (int)w;
}

/* Appends " " + field to buf (length *n) when it fits in limit characters; returns 0 once one does not. */
static int progress_add(char *buf, size_t *n, size_t limit, const char *field) {
    size_t f = strlen(field), sep = *n ? 1 : 0;
    if (*n + sep + f > limit) return 0;
    if (sep) buf[(*n)++] = ' ';
    memcpy(buf + *n, field, f + 1);
    *n += f;
    return 1;
}

void progress_format(const progress_row *r, int width, double now, char *buf, size_t len) {
    size_t limit = width > 1 ? (size_t)width - 1 : 1, n = 0;   /* width - 1: the last column would wrap on some terminals */
    if (limit >= len) limit = len - 1;
    buf[0] = 0;
    char f[256];
    snprintf(f, sizeof f, "[%-4s]", r->device);
    if (!progress_add(buf, &n, limit, f)) { memcpy(buf, f, limit); buf[limit] = 0; return; }
    if (r->job_id == 0) {
        progress_add(buf, &n, limit, "idle");
        if (r->sweep_jobs > 0) {
            snprintf(f, sizeof f, "sweep %lld/%lld done", r->sweep_done, r->sweep_jobs);
            progress_add(buf, &n, limit, f);
        }
        return;
    }
    long done = r->step + 1;   /* steps finished */
    double frac = r->steps > 0 && done > 0 ? (double)done / r->steps : 0;
    if (frac > 1) frac = 1;
    char eta[32], el[32], bar[64];
    progress_fmt_eta(r->eta_s, eta, sizeof eta);
    progress_fmt_eta(r->started > 0 ? now - r->started : -1, el, sizeof el);
    int bw = width >= 140 ? 24 : width >= 100 ? 16 : 8;
    int fill = (int)(frac * bw + 0.5);
    bar[0] = '[';
    for (int i = 0; i < bw; i++) bar[1 + i] = i < fill ? '#' : '-';
    snprintf(bar + 1 + bw, sizeof bar - 1 - bw, "] %3.0f%%", 100 * frac);
    char fields[10][200];
    int k = 0;
    snprintf(fields[k++], 200, "job %lld/a%d", r->job_id, r->attempt);
    snprintf(fields[k++], 200, "%s", bar);
    snprintf(fields[k++], 200, "%ld/%ld", done > 0 ? done : 0, r->steps);
    if (isfinite(r->loss)) snprintf(fields[k++], 200, "loss %.4f", r->loss);
    else snprintf(fields[k++], 200, "loss -");
    snprintf(fields[k++], 200, "ETA %s", eta);   /* before val: at 80 columns with 5-digit steps only one fits */
    if (r->val_step >= 0 && isfinite(r->val_loss)) snprintf(fields[k++], 200, "val %.4f@%ld", r->val_loss, r->val_step);
    else snprintf(fields[k++], 200, "val -");
    snprintf(fields[k++], 200, "elapsed %s", el);
    snprintf(fields[k++], 200, "%.0f tok/s", r->tok_s);
    if (r->sweep_jobs > 0) snprintf(fields[k++], 200, "sweep %lld/%lld", r->sweep_done, r->sweep_jobs);
    snprintf(fields[k++], 200, "%.190s", r->schedule);
    for (int i = 0; i < k; i++) if (!progress_add(buf, &n, limit, fields[i])) break;
}

static void progress_draw(void) {  /* P.mu held */
    if (P.drawn) fprintf(stderr, "\033[%dA", P.n);
    int width = progress_width();
    double now = util_now_s();
    for (int i = 0; i < P.n; i++) {
        char line[4100];
        progress_format(&P.rows[i], width, now, line, sizeof line);
        fprintf(stderr, "\r\033[K%s\n", line);
    }
    P.drawn = 1;
    P.last_draw = util_now_s();
    fflush(stderr);
}

void progress_report(int dev, const progress_row *row) {
    if (dev < 0 || dev >= PROGRESS_MAX) return;
    pthread_mutex_lock(&P.mu);
    P.rows[dev] = *row;
    if (P.live) {
        if (util_now_s() - P.last_draw >= 0.1 || !P.drawn) progress_draw();
    } else if (row->job_id) {
        char ts[32], eta[32];
        progress_stamp(ts, sizeof ts);
        if (row->eta_s >= 0) snprintf(eta, sizeof eta, "%.0f", row->eta_s); else snprintf(eta, sizeof eta, "?");
        fprintf(stderr, "%s event=progress device=%s job=%lld attempt=%d schedule=%s step=%ld/%ld loss=%.4f "
                "val_loss=%.4f tok_s=%.0f eta_s=%s val_step=%ld elapsed_s=%.0f sweep_done=%lld sweep_jobs=%lld\n", ts,
                row->device, row->job_id, row->attempt, row->schedule, row->step + 1, row->steps, row->loss,
                row->val_loss, row->tok_s, eta, row->val_step, row->started > 0 ? util_now_s() - row->started : 0,
                row->sweep_done, row->sweep_jobs);
        fflush(stderr);
    }
    pthread_mutex_unlock(&P.mu);
}

void progress_event(int dev, const char *event, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char safe[4 * sizeof msg];   /* paths, errors and names in msg came from the server or a job: one line */
    log_escape(safe, sizeof safe, msg);
    char ts[32];
    progress_stamp(ts, sizeof ts);
    pthread_mutex_lock(&P.mu);
    const char *dname = dev >= 0 && dev < PROGRESS_MAX && P.rows[dev].device[0] ? P.rows[dev].device : "-";
    if (P.live && P.drawn) fprintf(stderr, "\033[%dA\r\033[K", P.n);
    if (P.live) {
        /* on the terminal an event is cut into lines of the width (continued after two spaces), so no line wraps */
        char line[sizeof safe + 128];
        int w = progress_width() - 1, len = snprintf(line, sizeof line, "%s event=%s device=%s %s", ts, event, dname, safe);
        if (w < 8) w = 8;
        if (len > (int)sizeof line - 1) len = (int)sizeof line - 1;
        for (int at = 0, first = 1; at < len; first = 0) {
            int take = first ? w : w - 2;
            if (take > len - at) take = len - at;
            fprintf(stderr, "%s%.*s\n", first ? "" : "  ", take, line + at);
            at += take;
        }
    } else
        fprintf(stderr, "%s event=%s device=%s %s\n", ts, event, dname, safe);
    if (P.live && P.drawn) { P.drawn = 0; progress_draw(); }
    fflush(stderr);
    pthread_mutex_unlock(&P.mu);
}

void progress_finish(void) {
    pthread_mutex_lock(&P.mu);
    P.drawn = 0;
    fflush(stderr);
    pthread_mutex_unlock(&P.mu);
}

/* ---- one device's job view ------------------------------------------------------------------------- */

void progress_job_begin(progress_job *v, const char *label, long long job_id, int attempt) {
    long long sd = v->row.sweep_done, sj = v->row.sweep_jobs;
    memset(v, 0, sizeof *v);
    v->row.sweep_done = sd;
    v->row.sweep_jobs = sj;
    v->row.val_step = -1;
    v->row.started = job_id ? util_now_s() : 0;
    snprintf(v->row.device, sizeof v->row.device, "%s", label);
    v->row.job_id = job_id;
    v->row.attempt = attempt;
    v->row.loss = v->row.val_loss = NAN;
    v->row.eta_s = -1;
    v->row.step = -1;
}

void progress_job_metrics(progress_job *v, const json_t *row) {
    json_t *val = json_object_get(row, "val_loss");
    if (val && isfinite(json_number_value(val))) {
        v->row.val_loss = json_number_value(val);
        v->row.val_step = (long)json_integer_value(json_object_get(row, "step"));
    }
    json_t *tl = json_object_get(row, "train_loss");
    if (tl) {
        v->row.loss = json_number_value(tl);
        v->row.step = (long)json_integer_value(json_object_get(row, "step"));
        json_t *tps = json_object_get(row, "tok_per_s");
        if (tps) v->row.tok_s = json_number_value(tps);
        v->new_points++;
    }
}

void progress_job_step(progress_job *v, long step, long steps, double loss, double tok_s, double eta_s) {
    v->row.step = step;
    v->row.steps = steps;
    v->row.loss = loss;
    v->row.tok_s = tok_s;
    v->row.eta_s = eta_s;
}

void progress_job_sweep(progress_job *v, long long done, long long jobs) {
    if (jobs <= 0 || done < 0) return;
    v->row.sweep_done = done;
    v->row.sweep_jobs = jobs;
}

int progress_job_take(progress_job *v, progress_row *out) {
    int fresh = v->new_points;
    v->new_points = 0;
    *out = v->row;
    return fresh;
}
