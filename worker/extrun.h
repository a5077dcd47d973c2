/* extrun.h — external trainers: `prism-worker --trainer NAME=COMMAND` runs a job of `"trainer": "NAME"` by
 * starting COMMAND and reading its protocol lines (docs/TRAINERS.md is the protocol; this is its worker side).
 *
 * The trainer runs in its own process group with stdin /dev/null, stdout/stderr into the worker's log (each
 * line prefixed), no other descriptor of the worker's (4 and up are close-on-exec in the child), and fd 3 a pipe
 * of JSON lines: train / val / checkpoint points, heartbeats (keep-alive) and one terminal line
 * (result | paused | preempted | failed). A valid result stands whatever follows it: a line after it, or an exit
 * later than the grace or not 0, is a warning on stderr and the group is killed; a "failed" line says why the run
 * failed and whether a retry may do better ("diverged" reads as the built-in's divergence). extrun_run() feeds them to the same callbacks as the built-in engine
 * (train_opts.on_metrics, on_checkpoint, on_progress), watches train_opts.stop (1: SIGTERM to the group, SIGKILL
 * after the grace; 2: SIGTERM, the trainer checkpoints and says "preempted"), and whatever happens, returns only
 * after the whole process group is gone (killed with SIGKILL, the leader reaped).
 *
 * Contract.
 * - extrun_split_command(cmd, &argv, err, errlen): COMMAND split into words without a shell: blanks separate
 *   words; '...' keeps everything literally; "..." keeps everything but \" and \\ (backslash escapes); outside
 *   quotes a backslash keeps the next character. No variables, globs or redirections. Returns the number of
 *   words (>= 1) with *argv a NULL-terminated malloc'd array (free with extrun_free_argv), or -1 with err naming
 *   the problem (empty, an unclosed quote, a trailing backslash).
 * - extrun_set_parse(set, specs, n, timeout_s, grace_s, err, errlen): each spec "NAME=COMMAND" (NAME as
 *   job_trainer_name_ok, unique; COMMAND as above). 0, or -1 with err naming the spec; set holds nothing to free
 *   after a failure. extrun_set_release(set) frees it; extrun_find(set, name): the trainer, or NULL.
 * - extrun_parse_line, extrun_line_release, extrun_schema_json: one protocol line (extrun_line.h).
 * - extrun_run(set, t, job_json, job, o, log_prefix): runs job (job_json: the lease's job object, written to
 *   PRISM_OUT/job.json; job normalised by job_to_json, to PRISM_OUT/job-effective.json = PRISM_JOB_EFFECTIVE;
 *   job->trainer_args in PRISM_TRAINER_ARGS) with trainer t. PRISM_OUT = o->out_dir; checkpoints the trainer
 *   reports (inside PRISM_OUT) are linked (copied across filesystems) to o->checkpoint_dir/ckpt_STEP.bin and passed
 *   to o->on_checkpoint; an optional first "start" line gives the trainer's version; the result line becomes
 *   o->out_dir/result.json with trainer_command (t->command), trainer_version (the start line's) and setup_s (the
 *   trainer's, else spawn to the first train line) added; a result may not set the first two. Returns TRAIN_OK (result; or a rung:
 *   o->result->paused_at), TRAIN_EPREEMPTED (stop = 2, or the trainer said "preempted": o->result->checkpoint is
 *   the last checkpoint, "" if none), TRAIN_ECANCELLED (stop = 1), TRAIN_ENAN, TRAIN_EDIVERGED (a "failed" line of
 *   reason "diverged": o->err is its message; reason "nan": TRAIN_ENAN), or TRAIN_ETRAINER with o->err
 *   naming the cause (the line number and key, the exit status or signal with the last log lines, the
 *   silence of --trainer-timeout, a checkpoint outside PRISM_OUT; a "failed" line: its reason and message, with
 *   o->result->retryable its "retryable").
 */
#ifndef PRISM_EXTRUN_H
#define PRISM_EXTRUN_H

#include "extrun_line.h"
#include "job.h"
#include "lease.h"
#include "train.h"

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#define EXTRUN_LINE_MAX 65536          /* bytes of one fd-3 line with its newline */

#define EXTRUN_COMMAND_MAX 1024         /* bytes of --trainer's COMMAND recorded with a result (longer: cut, "...") */

typedef struct extrun_trainer {
    char name[JOB_TRAINER_MAX];
    char **argv;                       /* owned, NULL-terminated */
    char command[EXTRUN_COMMAND_MAX];  /* COMMAND as --trainer gave it: the result's trainer_command */
} extrun_trainer;

typedef struct extrun_set {
    int n;
    extrun_trainer t[LEASE_MAX_TRAINERS];
    double timeout_s;                  /* --trainer-timeout: the longest silence on fd 3 */
    double grace_s;                    /* --trainer-kill-grace: SIGTERM to SIGKILL */
    char group_dir[4096];              /* where each running trainer's process group is recorded (worker/pgrec.h);
                                        * "" (extrun_set_parse's): not recorded */
} extrun_set;


int extrun_split_command(const char *cmd, char ***argv, char *err, size_t errlen);
void extrun_free_argv(char **argv);
int extrun_set_parse(extrun_set *set, const char *const *specs, int n, double timeout_s, double grace_s, char *err,
                     size_t errlen);
void extrun_set_release(extrun_set *set);
const extrun_trainer *extrun_find(const extrun_set *set, const char *name);
int extrun_run(const extrun_set *set, const extrun_trainer *t, const json_t *job_json, const struct job_config *job,
               const struct train_opts *o, const char *log_prefix);

#endif
