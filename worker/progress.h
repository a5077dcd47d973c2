/* progress.h — what the agent shows while it trains.
 *
 * On a TTY (live mode) one line per device, redrawn in place: device, job, schedule, step/steps, loss,
 * tok/s, ETA; events (leased, resumed, done, failed, lost) print above the block. Otherwise (log mode)
 * every report is one structured key=value line, e.g.
 *   2026-11-30T07:01:02Z event=progress device=cpu job=3 attempt=1 schedule=2,2,4,4 step=40/200
 *   loss=3.2100 tok_s=5400 eta_s=35
 * All output goes to stderr. The functions are thread-safe (one process-wide display).
 */
#ifndef PRISM_PROGRESS_H
#define PRISM_PROGRESS_H

typedef struct progress_row {
    char device[32];
    long long job_id;       /* 0: idle */
    int attempt;
    char schedule[160];     /* "2,2,4,4" */
    long step, steps;       /* last train step reported, total */
    double loss;            /* last train loss (NaN: none yet) */
    double val_loss;        /* last val loss (NaN: none yet) */
    double tok_s;
    double eta_s;           /* < 0: unknown */
} progress_row;

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
 * progress_job_begin: a fresh row for job_id/attempt on device `label` (step -1, losses NaN, ETA unknown);
 *   job_id 0 is the idle line.
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
int progress_job_take(progress_job *v, progress_row *out);
#endif
