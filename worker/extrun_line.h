/* extrun_line.h — one line of an external trainer's fd-3 protocol (docs/TRAINERS.md), checked by its rows.
 *
 * Contract.
 * - extrun_parse_line(line, len, lim, out, err, errlen): one protocol line (without its newline) checked
 *   against the job's limits: one JSON object, a known "event", only that event's keys, numbers finite, steps in
 *   0..lim->steps (train: below it), a checkpoint path a non-empty string, a result's keys at most EXTRUN_KEY_MAX
 *   bytes at any depth and none naming the job, attempt, lease, worker, backend or trainer identity (job_id,
 *   backend, trainer_command, ...: refused, not overwritten); a "start" line's version 1..EXTRUN_VERSION_MAX
 *   printable ASCII bytes (out->version). Returns the EXTRUN_EV_* kind with *out
 *   filled (out->result a new reference for "result": extrun_line_release), or -1 with err naming the key;
 *   EXTRUN_ENAN (-2) when the line is not JSON because of a NaN or an Infinity. Stateless: the order of lines
 *   (steps increasing, one terminal line) is extrun_run's.
 * - extrun_line_release(l): frees what a parsed line owns (row, result); l can be parsed into again.
 * - extrun_schema_json(): the events' rows as a new JSON object (below), NULL when out of memory.
 */
#ifndef PRISM_EXTRUN_LINE_H
#define PRISM_EXTRUN_LINE_H

#include "job.h"

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#define EXTRUN_KEY_MAX 64               /* bytes of a key in a result line's object, at any depth */
#define EXTRUN_ENAN (-2)

#define EXTRUN_MESSAGE_MAX 1024        /* bytes of a "failed" line's message kept */

enum { EXTRUN_EV_TRAIN = 1, EXTRUN_EV_VAL, EXTRUN_EV_CHECKPOINT, EXTRUN_EV_PAUSED, EXTRUN_EV_PREEMPTED,
       EXTRUN_EV_RESULT, EXTRUN_EV_HEARTBEAT, EXTRUN_EV_FAILED, EXTRUN_EV_START };
#define EXTRUN_VERSION_MAX 128          /* bytes of a start line's "version", printable ASCII */

typedef struct extrun_limits {
    long long steps;                   /* the job's train.steps */
} extrun_limits;

typedef struct extrun_line {
    int event;                         /* EXTRUN_EV_* */
    long long step;
    double train_loss, val_loss;
    int has_val_loss_se;               /* val: val_loss_se given (not null) */
    double val_loss_se;
    json_t *row;                       /* train/val: the metrics row for the outbox (owned) */
    char path[PATH_MAX];               /* checkpoint: as the trainer wrote it */
    json_t *result;                    /* result: the result object (owned) */
    char reason[JOB_TRAINER_MAX];      /* failed: the trainer's reason (oom, diverged, nccl, ...) */
    int retryable;                     /* failed: "retryable": true */
    char message[EXTRUN_MESSAGE_MAX];  /* failed: its message, "" when none (cut to fit) */
    char version[EXTRUN_VERSION_MAX + 1]; /* start: the trainer's version, "" when not given */
} extrun_line;

/* The protocol's events as extrun_parse_line checks them ({"events": {NAME: {"required": [...], "optional": [...]}},
 * "result_reserved": [...]}): `prism-worker schema --json`'s "events". A new object, NULL when out of memory. */
json_t *extrun_schema_json(void);
int extrun_parse_line(const char *line, size_t len, const extrun_limits *lim, extrun_line *out, char *err,
                      size_t errlen);
void extrun_line_release(extrun_line *l);

#endif
