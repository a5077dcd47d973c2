/* train.h — one training job as a library call: data, model backend, AdamW loop, evaluation,
 * metrics, checkpoints, result. `prism-worker train` and the agent both call train_run().
 *
 * Outputs in opts->out_dir (created if missing):
 *   metrics.jsonl  {"step":s,"train_loss":x,"lr":..,"grad_norm":..,"tokens":..,"tok_per_s":..}  per update s
 *                  (loss before that update); {"step":s,"val_loss":y} before update s at s = 0, every
 *                  eval.every, and s = steps (after the last update). One JSON object a line, flushed.
 *                  On resume the file is appended to (rows from the resumed step on).
 *   result.json    {"val_loss","train_loss","tok_per_s","wall_s","params","flops_per_token","steps",
 *                   "tokens","heads":[..],"attn_distance":[D_1..D_L] (only with eval.attn_distance)}
 *   model.bin      final weights, llm.c checkpoint format (kernels/checkpoint.h)
 * Training-state checkpoints (model + AdamW m,v + step + data position + RNG) go to
 * opts->checkpoint_dir/ckpt_STEP.bin (temp file, fsync, rename) every train.checkpoint_every steps and
 * on a stop request 2; the previous one is removed after the new one is durable. Resuming from one
 * reproduces the uninterrupted run's metrics exactly (same losses, bit for bit).
 *
 * Errors: train_run returns 0 or a TRAIN_E* code with a message in opts->err.
 */
#ifndef PRISM_TRAIN_H
#define PRISM_TRAIN_H
#include "job.h"
#include <jansson.h>
#include <stddef.h>

enum {
    TRAIN_OK = 0,
    TRAIN_EINVAL = -1,      /* bad job or options */
    TRAIN_EDATA = -2,       /* bad/missing data: message names the path and what was expected */
    TRAIN_ENAN = -3,        /* NaN/inf loss: message has the step and the value (not retryable) */
    TRAIN_ENOMEM = -4,      /* out of memory (host or device) */
    TRAIN_ECANCELLED = -5,  /* *stop == 1 seen: stopped at once, nothing more written */
    TRAIN_EPREEMPTED = -6,  /* *stop == 2 seen: checkpoint written (result->checkpoint), then returned */
    TRAIN_EIO = -7,         /* could not write outputs/checkpoints (message has the path) */
    TRAIN_ECHECKPOINT = -8, /* resume/init file unreadable or does not match the job (message says why) */
    TRAIN_EDEVICE = -9,     /* backend unavailable or failed */
    TRAIN_EDIVERGED = -10,  /* finite val loss above TRAIN_DIVERGED_FACTOR x ln V (uniform guessing) at an
                             * evaluation after warmup (a rung's too) or at the final one: stopped there, not a
                             * result to rank (not retryable) */
    TRAIN_EBACKEND = -11,   /* the device cannot be had at all: a malformed device string, or no usable CUDA backend
                             * (prism-cuda.so absent, unloadable, another ABI; no driver or no such device); the
                             * message names the file and the fix. Checked before anything is read or written. */
    TRAIN_ETRAINER = -12,   /* an external trainer (worker/extrun.h) crashed, hung, exited without a result or broke
                             * the protocol (docs/TRAINERS.md); the message names the cause (not retryable) */
};

struct train_progress {
    int step, steps;        /* step just finished (0-based), total */
    float loss;             /* its train loss */
    double tok_per_s;       /* over the run so far */
    double eta_s;           /* seconds left at that rate */
};

struct train_result {
    double val_loss, train_loss, tok_per_s, wall_s, flops_per_token;
    long long params, tokens;
    int steps_done;         /* updates completed (== steps on success) */
    int paused_at;          /* > 0: stopped at opts->stop_at_step (val_loss is the loss there), no result.json */
    int resumed_from;       /* step the run resumed from, 0 when fresh */
    char checkpoint[4096];  /* last checkpoint written ("" if none) */
    int retryable;          /* TRAIN_ETRAINER: the trainer called its failure retryable (a "failed" line) */
};

#define TRAIN_DIVERGED_FACTOR JOB_DIVERGED_FACTOR   /* diverged: val loss > 1.1 x ln(vocab_size) after warmup */

struct train_opts {
    const char *out_dir;          /* required */
    const char *device;           /* "cpu" (default when NULL) or a CUDA index "0" */
    const char *data_root;        /* relative data globs and model.init resolve against it; NULL = cwd */
    const char *checkpoint_dir;   /* NULL = out_dir */
    const char *resume;           /* training-state checkpoint to continue from, NULL = fresh */
    volatile int *stop;           /* NULL, or checked each step: 1 = cancel now, 2 = checkpoint then return */
    /* Called with each metrics row as it is written (row borrowed: json_incref to keep). */
    void (*on_metrics)(void *ctx, json_t *row);
    /* Called after each checkpoint is durable. */
    void (*on_checkpoint)(void *ctx, int step, const char *path);
    /* Called after each update; NULL = built-in: a live line on a TTY stderr, else one structured
     * line every progress_every steps (and never when quiet). */
    void (*on_progress)(void *ctx, const struct train_progress *p);
    void *ctx;
    int quiet;                    /* no built-in progress output */
    int confine_data;             /* 1: data globs and model.init must stay inside data_root (no "..", no absolute
                                   * path elsewhere, no symlink out): jobs from the network; 0: any path */
    int progress_every;           /* non-TTY structured lines every N steps, default 10 */
    int threads;                  /* CPU: OpenMP threads for this run (this calling thread), 0 = OpenMP's default */
    int stop_at_step;             /* > 0 and < train.steps: a successive-halving rung. Before update stop_at_step
                                   * the run evaluates val loss (a metrics row at that step), writes the training-state
                                   * checkpoint ckpt_STEP.bin and returns 0 with result->paused_at = stop_at_step (no
                                   * result.json, no model.bin). The learning-rate schedule stays the one of train.steps,
                                   * so resuming from that checkpoint gives the uninterrupted run's metrics bit for bit.
                                   * 0 = run to train.steps. */
    struct train_result *result;  /* optional out */
    char *err;                    /* message buffer for failures (may be NULL) */
    size_t errlen;
};

/* Runs the job to completion (or stop). See the header comment for outputs and errors. */
int train_run(const struct job_config *job, const struct train_opts *opts);

/* The time left after the step `step` (0-based) of a run of `steps` steps: the steps left at step_s each, plus the
 * evaluations still to come at eval_s each — every `every` steps (step 0 aside, as the loop evaluates before a
 * step s > 0 with s % every == 0) and the final one. The progress line's ETA (an 86.9 s job whose time was mostly
 * evaluation read "14 s left" at step 50 of 300 when it counted the steps alone). eval_s < 0 (none measured
 * yet): the steps alone. */
double train_eta_s(int step, int steps, int every, double step_s, double eval_s);

/* Names of the codes above ("bad data", "nan loss", ...). */
const char *train_strerror(int code);
#endif
