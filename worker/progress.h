/* progress.h — what the agent shows while it trains.
 *
 * On a TTY (live mode) one line per device, redrawn in place, never wider than the terminal ($COLUMNS, else
 * the terminal's own width, else 80; a field that does not fit is left out, so a line never wraps and the
 * redraw never scrolls): device, job, a bar with the percentage, step/steps, loss, the val loss with the step
 * it was measured at, ETA, elapsed, tok/s, the sweep's jobs done/total (once the server reported them), the
 * schedule; e.g. at 80 columns
 *   [cpu ] job 3/a1 [######------]  50% 100/200 loss 3.2100 val 3.3000@100 ETA 0m35s
 * Events (leased, resumed, done, failed, lost) print above the block, cut into lines of the width (continued after
 * two spaces). Otherwise (log mode) every report is one
 * structured key=value line, e.g.
 *   2026-11-30T07:01:02Z event=progress device=cpu job=3 attempt=1 schedule=2,2,4,4 step=40/200
 *   loss=3.2100 val_loss=3.3000 tok_s=5400 eta_s=35 val_step=40 elapsed_s=12 sweep_done=10 sweep_jobs=48
 * (val_loss nan and val_step -1 before the first evaluation of the attempt; sweep_* 0 when unknown).
 * All output goes to stderr. The functions are thread-safe (one process-wide display).
 */
#ifndef PRISM_PROGRESS_H
#define PRISM_PROGRESS_H

#include <stddef.h>

typedef struct progress_row {
    char device[32];
    long long job_id;       /* 0: idle */
    int attempt;
    char schedule[160];     /* "2,2,4,4" */
    long step, steps;       /* last train step reported, total */
    double loss;            /* last train loss (NaN: none yet) */
    double val_loss;        /* last val loss (NaN: none yet) */
    long val_step;          /* the step it was measured at (-1: none yet) */
    double tok_s;
    double eta_s;           /* < 0: unknown */
    double started;         /* util_now_s() when the job began (0: idle) */
    long long sweep_done;   /* the sweep's jobs done, as the server last said (sweep_jobs 0: not said) */
    long long sweep_jobs;
} progress_row;

/* The display's width: $COLUMNS when set (> 0), else the terminal's (TIOCGWINSZ on stderr), else 80. */
int progress_width(void);
/* Writes r's live line into buf, at most `width` - 1 characters (ASCII), fields in order of importance: one that
 * does not fit is left out with those after it. now: util_now_s() for the elapsed time. */
void progress_format(const progress_row *r, int width, double now, char *buf, size_t len);

/* Sets the number of device lines and the mode (live != 0: redraw in place). Call once before use. */
void progress_setup(int n_devices, int live);
/* Replaces device dev's line; live mode redraws (at most ~10 times a second), log mode prints a line. */
void progress_report(int dev, const progress_row *row);
/* One event line (printf format), in both modes; `event` is the key=value tag, e.g. "done". */
void progress_event(int dev, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Live mode: leaves the cursor below the block. */
void progress_finish(void);

/* One device's view of the job it trains: the row it shows and how many train points came since the last
 * log line. Not locked here: the agent guards it with its slot's mutex.
 * progress_job_begin: a fresh row for job_id/attempt on device `label` (step -1, losses NaN, ETA unknown, the
 *   sweep's counts kept from the last job); job_id 0 is the idle line.
 * progress_job_metrics: takes a metrics row (train_loss/step/tok_per_s, or val_loss; row is borrowed).
 * progress_job_step: takes the trainer's progress figures.
 * progress_job_take: copies the row to *out and returns the train points since the last take (then 0). */
#include <jansson.h>
typedef struct progress_job {
    progress_row row;
    int new_points;
} progress_job;
void progress_job_begin(progress_job *v, const char *label, long long job_id, int attempt);
void progress_job_metrics(progress_job *v, const json_t *row);
void progress_job_step(progress_job *v, long step, long steps, double loss, double tok_s, double eta_s);
/* The server's count of the sweep's jobs (the heartbeat's answer). */
void progress_job_sweep(progress_job *v, long long done, long long jobs);
int progress_job_take(progress_job *v, progress_row *out);
#endif
