/* progress.c — live per-device lines on a TTY, structured key=value lines otherwise.
 *
 * Design: one static display guarded by a mutex. Live mode keeps the last row of every device and draws
 * the block of n lines at the bottom of the terminal: to redraw it moves the cursor up n lines (CSI nA)
 * and rewrites each line after clearing it (CSI K). An event first moves up over the block, prints the
 * event line, then draws the block again below it, so events scroll away while the block stays put.
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
#include <string.h>
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

static void progress_line(const progress_row *r, char *buf, size_t len) {
    if (r->job_id == 0) { snprintf(buf, len, "[%-4s] idle", r->device); return; }
    char eta[32];
    progress_fmt_eta(r->eta_s, eta, sizeof eta);
    double pct = r->steps > 0 ? 100.0 * (r->step + 1) / r->steps : 0;
    snprintf(buf, len, "[%-4s] job %lld/a%d  %-24s step %ld/%ld (%3.0f%%)  loss %.4f  val %.4f  %.0f tok/s  ETA %s",
             r->device, r->job_id, r->attempt, r->schedule, r->step + 1, r->steps, pct, r->loss, r->val_loss,
             r->tok_s, eta);
}

static void progress_draw(void) {  /* P.mu held */
    if (P.drawn) fprintf(stderr, "\033[%dA", P.n);
    for (int i = 0; i < P.n; i++) {
        char line[512];
        progress_line(&P.rows[i], line, sizeof line);
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
                "val_loss=%.4f tok_s=%.0f eta_s=%s\n", ts, row->device, row->job_id, row->attempt, row->schedule,
                row->step + 1, row->steps, row->loss, row->val_loss, row->tok_s, eta);
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
    memset(v, 0, sizeof *v);
    snprintf(v->row.device, sizeof v->row.device, "%s", label);
    v->row.job_id = job_id;
    v->row.attempt = attempt;
    v->row.loss = v->row.val_loss = NAN;
    v->row.eta_s = -1;
    v->row.step = -1;
}

void progress_job_metrics(progress_job *v, const json_t *row) {
    json_t *val = json_object_get(row, "val_loss");
    if (val) v->row.val_loss = json_number_value(val);
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

int progress_job_take(progress_job *v, progress_row *out) {
    int fresh = v->new_points;
    v->new_points = 0;
    *out = v->row;
    return fresh;
}
