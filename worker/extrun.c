/* extrun.c — run a job with an external trainer and speak its fd-3 protocol (docs/TRAINERS.md; extrun.h).
 *
 * Design. One child per job, started with fork + execvp in its own process group (setpgid), so every
 * process it starts (torchrun's ranks, a shell's children) is signalled together. The device thread that
 * calls extrun_run() is the only reader: a poll() loop over two pipes (fd 3: protocol lines; stdout+stderr:
 * log lines, prefixed and escaped onto the worker's stderr, the last ones kept for an error message), waking
 * every 100 ms, and after at most EXTRUN_TURN_S of reading however fast the trainer writes, to look at the stop
 * flag, the silence timer and the child (waitid WNOWAIT: the leader stays a
 * zombie, so its pid, the group's id, cannot be reused before the group has been SIGKILLed and the leader
 * reaped). A third pipe, close-on-exec, carries an execvp errno back, so a wrong COMMAND is named as such.
 * The trainer gets descriptors 0-3 and nothing else: the child marks every other one close-on-exec before
 * execvp (extrun_cloexec_from), so it can neither read the worker's connection to the server nor keep it.
 * Lines are parsed by extrun_parse_line() (worker/extrun_line.c: pure, fuzzed) and then checked against the
 * run's state (steps increasing, stops, one terminal line); the first bad line SIGKILLs the group and fails
 * the job. Checkpoints are hard-linked (copied when the checkpoint folder is another filesystem) to
 * ckpt_STEP.bin in the attempt's checkpoint folder: from there the built-in's machinery (slot.c: the
 * resume-STEP.bin link, the report, the removal once superseded) takes over unchanged.
 */
#define _GNU_SOURCE   /* pipe2 */
#include "jsonout.h"
#include "extrun.h"

#include "jobresult.h"
#include "logesc.h"
#include "pgrec.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define EXTRUN_CLOSE_RANGE_CLOEXEC (1U << 2)   /* linux/close_range.h's CLOSE_RANGE_CLOEXEC */

/* ---- the command line ---------------------------------------------------------------------------- */

void extrun_free_argv(char **argv) {
    for (char **a = argv; a && *a; a++) free(*a);
    free(argv);
}

int extrun_split_command(const char *cmd, char ***out, char *err, size_t errlen) {
    *out = NULL;
    size_t n = strlen(cmd), nw = 0;
    char **argv = calloc(n / 2 + 2, sizeof *argv);   /* words are separated: at most (n + 1) / 2 of them */
    char *w = malloc(n + 1);
    if (!argv || !w) { free(argv); free(w); snprintf(err, errlen, "out of memory"); return -1; }
    const char *p = cmd;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) break;
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'') {
                const char *e = strchr(p + 1, '\'');
                if (!e) { snprintf(err, errlen, "unclosed ' in the command"); goto bad; }
                memcpy(w + k, p + 1, (size_t)(e - p - 1));
                k += (size_t)(e - p - 1);
                p = e + 1;
            } else if (*p == '"') {
                p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
                    w[k++] = *p++;
                }
                if (*p != '"') { snprintf(err, errlen, "unclosed \" in the command"); goto bad; }
                p++;
            } else if (*p == '\\') {
                if (!p[1]) { snprintf(err, errlen, "a backslash ends the command"); goto bad; }
                w[k++] = p[1];
                p += 2;
            } else {
                w[k++] = *p++;
            }
        }
        w[k] = 0;
        if (!(argv[nw] = strdup(w))) { snprintf(err, errlen, "out of memory"); goto bad; }
        nw++;
    }
    free(w);
    if (nw == 0) { extrun_free_argv(argv); snprintf(err, errlen, "the command is empty"); return -1; }
    *out = argv;
    return (int)nw;
bad:
    free(w);
    extrun_free_argv(argv);
    return -1;
}

int extrun_set_parse(extrun_set *set, const char *const *specs, int n, double timeout_s, double grace_s, char *err,
                     size_t errlen) {
    memset(set, 0, sizeof *set);
    set->timeout_s = timeout_s;
    set->grace_s = grace_s;
    char why[256];
    if (n > LEASE_MAX_TRAINERS) { snprintf(err, errlen, "--trainer: at most %d trainers", LEASE_MAX_TRAINERS); return -1; }
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(specs[i], '=');
        size_t nl = eq ? (size_t)(eq - specs[i]) : 0;
        char name[JOB_TRAINER_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(nl < sizeof name ? nl : sizeof name - 1), specs[i]);
        if (!eq || nl >= sizeof name || !job_trainer_name_ok(name)) {
            snprintf(err, errlen, "--trainer %.200s: expected NAME=COMMAND with NAME 1-63 of [A-Za-z0-9._-] (not "
                     "starting with . or -), e.g. --trainer torch='python3 trainers/torch/train.py'", specs[i]);
            goto bad;
        }
        if (extrun_find(set, name)) { snprintf(err, errlen, "--trainer %s: given twice", name); goto bad; }
        extrun_trainer *t = &set->t[set->n];
        if (extrun_split_command(eq + 1, &t->argv, why, sizeof why) < 0) {
            snprintf(err, errlen, "--trainer %s: %s (COMMAND is split into words without a shell; quote with '...' "
                     "or \"...\")", name, why);
            goto bad;
        }
        snprintf(t->name, sizeof t->name, "%s", name);
        size_t cl = strlen(eq + 1);
        if (cl < sizeof t->command) memcpy(t->command, eq + 1, cl + 1);
        else snprintf(t->command, sizeof t->command, "%.*s...", (int)sizeof t->command - 4, eq + 1);
        set->n++;
    }
    return 0;
bad:
    extrun_set_release(set);
    return -1;
}

void extrun_set_release(extrun_set *set) {
    for (int i = 0; i < set->n; i++) extrun_free_argv(set->t[i].argv);
    set->n = 0;
}

const extrun_trainer *extrun_find(const extrun_set *set, const char *name) {
    for (int i = 0; set && i < set->n; i++)
        if (strcmp(set->t[i].name, name) == 0) return &set->t[i];
    return NULL;
}

/* ---- the run ---------------------------------------------------------------------------------------- */

#define EXTRUN_TAIL 1200   /* bytes of the trainer's last log lines kept for an error message */
#define EXTRUN_TURN_S 0.05 /* the longest a pipe is read before the stop flag and the timers are looked at again */
#define EXTRUN_DRAIN_S 1.0 /* the longest the pipes are read once the trainer's group is gone */

typedef struct extrun_state {
    const extrun_set *set;
    const extrun_trainer *t;
    const struct job_config *job;
    const struct train_opts *o;
    const char *prefix;
    pid_t pid;
    int fd3, fdlog;                  /* read ends, -1 once closed */
    char *buf;                       /* fd-3 bytes not yet a whole line */
    size_t blen;
    char logbuf[4096];
    size_t loglen;
    char tail[EXTRUN_TAIL];          /* the last log lines, newest last */
    size_t tail_len;
    long long lineno;
    double last_line_at, term_at, start_at, terminal_at;
    double first_train_at;           /* when the first train line came (0: none yet): setup_s = it - start_at */
    char version[EXTRUN_VERSION_MAX + 1]; /* the start line's version, "" when none */
    int term_sent, kill_sent, mode;  /* mode: 0 run, 1 cancel, 2 preempt */
    int failed;                      /* a TRAIN_E* code once the run is judged a failure */
    char why[1800];
    long long resume_step, last_train, last_val, last_ckpt;
    long long ckpt_repeats;          /* checkpoint lines of the step already taken (extrun_on_checkpoint) */
    int terminal;                    /* the EXTRUN_EV_* of the terminal line, 0 before it */
    int warned;                      /* a warning after a result / failed line was printed (extrun_fail) */
    extrun_line failed_line;         /* the "failed" line: reason, retryable, message */
    int paused_at;
    double paused_val, train_loss, tok_per_s;
    char out_real[PATH_MAX], ckpt_path[PATH_MAX + 64];
} extrun_state;

static void extrun_fail(extrun_state *st, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void extrun_fail(extrun_state *st, int code, const char *fmt, ...) {
    if (st->failed) return;   /* the first cause is the one that counts */
    char why[sizeof st->why];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (st->terminal == EXTRUN_EV_RESULT || st->terminal == EXTRUN_EV_FAILED) {
        /* the line that decides the job is in: what follows (a line, a slow exit) cannot undo it; the group goes */
        if (!st->warned)
            fprintf(stderr, "%s: warning: %s: ignored, after its %s line (which stands); its process group is "
                    "killed\n", st->prefix, why, st->terminal == EXTRUN_EV_RESULT ? "result" : "failed");
        st->warned = 1;
    } else {
        st->failed = code;
        memcpy(st->why, why, sizeof why);
    }
    if (!st->kill_sent && st->pid > 0) { kill(-st->pid, SIGKILL); st->kill_sent = 1; }
}

static void extrun_tail_add(extrun_state *st, const char *line) {
    size_t n = strlen(line);
    if (n + 1 >= sizeof st->tail) { line += n - (sizeof st->tail - 2); n = sizeof st->tail - 2; }
    while (st->tail_len + n + 1 >= sizeof st->tail) {   /* drop the oldest line */
        char *nl = memchr(st->tail, '\n', st->tail_len);
        size_t cut = nl ? (size_t)(nl - st->tail) + 1 : st->tail_len;
        memmove(st->tail, st->tail + cut, st->tail_len - cut);
        st->tail_len -= cut;
    }
    memcpy(st->tail + st->tail_len, line, n);
    st->tail_len += n;
    st->tail[st->tail_len++] = '\n';
    st->tail[st->tail_len] = 0;
}

static void extrun_log_line(extrun_state *st, const char *line) {
    char esc[4 * sizeof st->logbuf + 1];
    log_escape(esc, sizeof esc, line);
    fprintf(stderr, "%s: %s\n", st->prefix, esc);
    extrun_tail_add(st, esc);
}

/* The tail for an error message: its last lines joined by " | ". */
static const char *extrun_tail_text(extrun_state *st, char *out, size_t n) {
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < st->tail_len && k + 4 < n; i++) {
        if (st->tail[i] == '\n') {
            if (i + 1 < st->tail_len) { memcpy(out + k, " | ", 3); k += 3; }
        } else out[k++] = st->tail[i];
    }
    out[k] = 0;
    return out;
}

/* Writes text to path durably (temp file, fsync, rename). 0 or -1 with errno. */
static int extrun_write_file(const char *path, const char *text) {
    char tmp[PATH_MAX + 200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0) { if (errno == EINTR) continue; close(fd); unlink(tmp); return -1; }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) { unlink(tmp); return -1; }
    if (rename(tmp, path) != 0) { int e = errno; unlink(tmp); errno = e; return -1; }
    return 0;
}

/* Copies src to dst durably (temp, fsync, rename): the checkpoint folder is on another filesystem. */
static int extrun_copy_file(const char *src, const char *dst) {
    char tmp[PATH_MAX + 200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    int in = open(src, O_RDONLY | O_CLOEXEC), out = in < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0) { int e = errno; if (in >= 0) close(in); errno = e; return -1; }
    char b[1 << 16];
    ssize_t r;
    int ok = 1;
    while (ok && (r = read(in, b, sizeof b)) != 0) {
        if (r < 0) { if (errno == EINTR) continue; ok = 0; break; }
        for (ssize_t off = 0; ok && off < r;) {
            ssize_t w = write(out, b + off, (size_t)(r - off));
            if (w < 0 && errno != EINTR) ok = 0;
            else if (w > 0) off += w;
        }
    }
    int e = errno;
    close(in);
    if (!ok || fsync(out) != 0) { close(out); unlink(tmp); errno = ok ? errno : e; return -1; }
    if (close(out) != 0 || rename(tmp, dst) != 0) { e = errno; unlink(tmp); errno = e; return -1; }
    return 0;
}

/* A checkpoint line: its file must exist inside PRISM_OUT (resolved: symlinks, ".."); it becomes
 * CKPT/ckpt_STEP.bin (a hard link, or a copy) and is handed to on_checkpoint. A line of the step this run has
 * already taken a checkpoint of is a repeat: checked like any, then only counted (the state of a step is the
 * state of that step, e.g. a checkpoint again on SIGTERM right after a periodic one): a flood of them costs
 * neither a link nor a report to the server (641k lines were 3,568 checkpoint POSTs). */
static void extrun_on_checkpoint(extrun_state *st, const extrun_line *l) {
    const struct train_opts *o = st->o;
    char joined[2 * PATH_MAX + 2], real[PATH_MAX];
    if (l->path[0] == '/') snprintf(joined, sizeof joined, "%s", l->path);
    else snprintf(joined, sizeof joined, "%s/%s", st->out_real, l->path);
    char esc[600];
    log_escape(esc, sizeof esc, l->path);
    if (!realpath(joined, real)) {
        extrun_fail(st, TRAIN_ETRAINER, "line %lld: checkpoint: path \"%s\": %s (the file must exist, complete, when "
                    "the line is written)", st->lineno, esc, strerror(errno));
        return;
    }
    size_t rl = strlen(st->out_real);
    struct stat sb;
    if (strncmp(real, st->out_real, rl) != 0 || real[rl] != '/') {
        extrun_fail(st, TRAIN_ETRAINER, "line %lld: checkpoint: path \"%s\" is outside the job's directory PRISM_OUT "
                    "(%s): a checkpoint must be a file inside it", st->lineno, esc, st->out_real);
        return;
    }
    if (stat(real, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        extrun_fail(st, TRAIN_ETRAINER, "line %lld: checkpoint: path \"%s\" is not a regular file (a checkpoint is "
                    "one file)", st->lineno, esc);
        return;
    }
    if (l->step < st->last_ckpt) {
        extrun_fail(st, TRAIN_ETRAINER, "line %lld: checkpoint: step %lld is before the last checkpoint's step %lld",
                    st->lineno, l->step, st->last_ckpt);
        return;
    }
    if (st->ckpt_path[0] && l->step == st->last_ckpt) { st->ckpt_repeats++; return; }
    char dst[PATH_MAX + 64], tmp[PATH_MAX + 96];
    snprintf(dst, sizeof dst, "%.4000s/ckpt_%lld.bin", o->checkpoint_dir, l->step);
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    unlink(tmp);
    int rc = link(real, tmp) == 0 ? rename(tmp, dst) : -1;
    if (rc != 0 && (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP)) rc = extrun_copy_file(real, dst);
    if (rc != 0) {
        extrun_fail(st, TRAIN_EIO, "checkpoint of step %lld: cannot link or copy %s to %s: %s (check --checkpoint-dir)",
                    l->step, real, dst, strerror(errno));
        unlink(tmp);
        return;
    }
    if (st->ckpt_path[0] && strcmp(st->ckpt_path, dst) != 0) unlink(st->ckpt_path);   /* like the built-in's */
    snprintf(st->ckpt_path, sizeof st->ckpt_path, "%.4000s", dst);
    st->last_ckpt = l->step;
    if (o->result) {
        snprintf(o->result->checkpoint, sizeof o->result->checkpoint, "%.4000s", dst);
        o->result->steps_done = (int)l->step;
    }
    if (o->on_checkpoint) o->on_checkpoint(o->ctx, (int)l->step, dst);
}

/* What the worker adds to a trainer's result (docs/TRAINERS.md): trainer_command (its --trainer COMMAND),
 * trainer_version (the start line's, when given) and setup_s, the seconds from the spawn to the first train line of
 * this run, unless the trainer reported its own (a run with no train line, resumed at its end, has none). 0 or -1. */
static int extrun_result_identity(const extrun_state *st, json_t *r) {
    json_t *cmd = json_string(st->t->command);   /* NULL when not UTF-8 (or cut inside a character): say so */
    int bad = json_object_set_new(r, JOBRESULT_KEY_TRAINER_COMMAND, cmd ? cmd : json_string("(not UTF-8)"));
    if (st->version[0]) bad |= json_object_set_new(r, JOBRESULT_KEY_TRAINER_VERSION, json_string(st->version));
    if (!json_object_get(r, JOBRESULT_KEY_SETUP_S) && st->first_train_at > 0)
        bad |= json_object_set_new(r, JOBRESULT_KEY_SETUP_S, json_real(st->first_train_at - st->start_at));
    return bad ? -1 : 0;
}

/* One whole fd-3 line (without its newline). */
static void extrun_on_line(extrun_state *st, const char *line, size_t len) {
    st->lineno++;
    st->last_line_at = util_now_s();
    if (st->failed) return;
    if (st->terminal) {
        extrun_fail(st, TRAIN_ETRAINER, "line %lld: a line after the terminal \"%s\" line (it must be the last)",
                    st->lineno, st->terminal == EXTRUN_EV_RESULT ? "result" : st->terminal == EXTRUN_EV_PAUSED ?
                    "paused" : "preempted");
        return;
    }
    extrun_limits lim = { st->job->train.steps };
    extrun_line l;
    char err[1200];
    int ev = extrun_parse_line(line, len, &lim, &l, err, sizeof err);
    if (ev < 0) {
        extrun_fail(st, ev == EXTRUN_ENAN ? TRAIN_ENAN : TRAIN_ETRAINER, "line %lld: %s", st->lineno, err);
        return;
    }
    const struct train_opts *o = st->o;
    int stop_at = o->stop_at_step > 0 && o->stop_at_step < st->job->train.steps ? o->stop_at_step : 0;
    long long top = stop_at ? stop_at : st->job->train.steps;
    switch (ev) {
    case EXTRUN_EV_TRAIN:
        if (l.step <= st->last_train || l.step < st->resume_step) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: train: step %lld does not come after step %lld (steps increase; "
                        "a resumed run starts at %lld)", st->lineno, l.step,
                        st->last_train > st->resume_step - 1 ? st->last_train : st->resume_step - 1, st->resume_step);
            break;
        }
        if (l.step >= top) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: train: step %lld is past the stop at step %lld "
                        "(PRISM_STOP_AT_STEP)", st->lineno, l.step, top);
            break;
        }
        st->last_train = l.step;
        st->train_loss = l.train_loss;
        if (st->first_train_at == 0) st->first_train_at = util_now_s();
        if (o->on_metrics) o->on_metrics(o->ctx, l.row);
        if (o->on_progress) {
            json_t *tps = json_object_get(l.row, "tok_per_s");
            if (tps) st->tok_per_s = json_number_value(tps);
            double el = util_now_s() - st->start_at, done = (double)(l.step + 1 - st->resume_step);
            struct train_progress p = { (int)l.step, st->job->train.steps, (float)l.train_loss, st->tok_per_s,
                                        done > 0 ? el / done * (double)(st->job->train.steps - l.step - 1) : 0 };
            o->on_progress(o->ctx, &p);
        }
        break;
    case EXTRUN_EV_VAL:
        if (l.step <= st->last_val || l.step < st->resume_step || l.step > top) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: val: step %lld is not after the last val step %lld, or outside "
                        "%lld..%lld", st->lineno, l.step, st->last_val, st->resume_step, top);
            break;
        }
        st->last_val = l.step;
        if (o->on_metrics) o->on_metrics(o->ctx, l.row);
        break;
    case EXTRUN_EV_CHECKPOINT:
        if (l.step > top) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: checkpoint: step %lld is past the stop at %lld", st->lineno,
                        l.step, top);
            break;
        }
        extrun_on_checkpoint(st, &l);
        break;
    case EXTRUN_EV_PAUSED:
        if (!stop_at || l.step != stop_at) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: paused: at step %lld, but %s", st->lineno, l.step, stop_at ?
                        "PRISM_STOP_AT_STEP is another step" : "PRISM_STOP_AT_STEP is 0 (train to the end)");
            break;
        }
        if (st->last_ckpt != l.step) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: paused: no checkpoint line of step %lld before it (a rung "
                        "resumes from it)", st->lineno, l.step);
            break;
        }
        st->terminal = ev;
        st->paused_at = (int)l.step;
        st->paused_val = l.val_loss;
        break;
    case EXTRUN_EV_PREEMPTED:
        st->terminal = ev;
        break;
    case EXTRUN_EV_HEARTBEAT:   /* alive: last_line_at (the --trainer-timeout clock) is all it moves */
        break;
    case EXTRUN_EV_FAILED:
        st->terminal = ev;
        st->failed_line = l;    /* its text fields only: it owns no reference */
        break;
    case EXTRUN_EV_START:
        if (st->lineno != 1) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: start: only as the first line (it says who the trainer is, "
                        "before any step)", st->lineno);
            break;
        }
        snprintf(st->version, sizeof st->version, "%s", l.version);
        break;
    case EXTRUN_EV_RESULT: {
        if (stop_at) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: result: this run stops at step %d (PRISM_STOP_AT_STEP): it "
                        "ends with a paused line", st->lineno, stop_at);
            break;
        }
        if (extrun_result_identity(st, l.result) < 0) {
            extrun_fail(st, TRAIN_ENOMEM, "out of memory");
            break;
        }
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/result.json", o->out_dir);
        char *text = json_dumps(l.result, JSON_INDENT(2) | JSONOUT_FLAGS);
        if (!text || extrun_write_file(path, text) != 0) {
            extrun_fail(st, TRAIN_EIO, "cannot write %s: %s", path, text ? strerror(errno) : "out of memory");
            free(text);
            break;
        }
        free(text);
        st->terminal = ev;
        if (o->result) {
            struct train_result *r = o->result;
            r->val_loss = l.val_loss;
            json_t *x;
            r->train_loss = json_is_number(x = json_object_get(l.result, "train_loss")) ? json_number_value(x) : st->train_loss;
            r->tok_per_s = json_is_number(x = json_object_get(l.result, "tok_per_s")) ? json_number_value(x) : st->tok_per_s;
            r->wall_s = json_is_number(x = json_object_get(l.result, "wall_s")) ? json_number_value(x) : util_now_s() - st->start_at;
            r->steps_done = st->job->train.steps;
        }
        break;
    }
    default:
        break;
    }
    extrun_line_release(&l);
}

/* Reads what fd 3 has, until it has nothing more or `until` (util_now_s) has passed: a trainer that writes
 * faster than its lines are handled cannot keep the caller from its stop flag and timers. Whole lines go to
 * extrun_on_line. Returns 0, or -1 at EOF (fd closed). */
static int extrun_read_fd3(extrun_state *st, double until) {
    for (;;) {
        if (util_now_s() >= until) return 0;
        if (st->blen >= EXTRUN_LINE_MAX) {
            extrun_fail(st, TRAIN_ETRAINER, "line %lld: longer than %d bytes (a protocol line is at most %d bytes with "
                        "its newline)", st->lineno + 1, EXTRUN_LINE_MAX, EXTRUN_LINE_MAX);
            st->blen = 0;
            return -1;
        }
        ssize_t r = read(st->fd3, st->buf + st->blen, EXTRUN_LINE_MAX - st->blen);
        if (r < 0) return errno == EINTR ? 0 : errno == EAGAIN ? 0 : -1;
        if (r == 0) {
            /* a last line without its newline; after our own SIGTERM, a line the stop cut short */
            if (st->blen > 0 && st->term_sent)
                fprintf(stderr, "%s: line %lld: ends without a newline after the stop (SIGTERM): dropped\n",
                        st->prefix, st->lineno + 1);
            else if (st->blen > 0 && !st->failed)
                extrun_fail(st, TRAIN_ETRAINER, "line %lld: ends without a newline (fd 3 was closed mid-line)",
                            st->lineno + 1);
            st->blen = 0;
            return -1;
        }
        size_t start = 0, end = st->blen + (size_t)r;
        for (size_t i = st->blen; i < end; i++)
            if (st->buf[i] == '\n') {
                extrun_on_line(st, st->buf + start, i - start);
                start = i + 1;
            }
        memmove(st->buf, st->buf + start, end - start);
        st->blen = end - start;
    }
}

/* Reads the trainer's stdout/stderr into prefixed log lines, until it has nothing more or `until` has passed
 * (as extrun_read_fd3). Returns 0, or -1 at EOF. */
static int extrun_read_log(extrun_state *st, double until) {
    for (;;) {
        if (util_now_s() >= until) return 0;
        ssize_t r = read(st->fdlog, st->logbuf + st->loglen, sizeof st->logbuf - 1 - st->loglen);
        if (r < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
        if (r == 0) {
            if (st->loglen) { st->logbuf[st->loglen] = 0; extrun_log_line(st, st->logbuf); st->loglen = 0; }
            return -1;
        }
        size_t start = 0, end = st->loglen + (size_t)r;
        for (size_t i = st->loglen; i < end; i++)
            if (st->logbuf[i] == '\n') {
                st->logbuf[i] = 0;
                extrun_log_line(st, st->logbuf + start);
                start = i + 1;
            }
        memmove(st->logbuf, st->logbuf + start, end - start);
        st->loglen = end - start;
        if (st->loglen == sizeof st->logbuf - 1) {   /* a long line: logged in pieces */
            st->logbuf[st->loglen] = 0;
            extrun_log_line(st, st->logbuf);
            st->loglen = 0;
        }
    }
}

/* The trainer's environment: the worker's, without any PRISM_* it had, plus the protocol's. NULL on OOM. */
static char **extrun_env(const extrun_state *st, const char *job_path, const char *eff_path) {
    const struct train_opts *o = st->o;
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 10, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PRISM_", 6) != 0) env[k++] = strdup(environ[i]);
    char stop[32];
    snprintf(stop, sizeof stop, "%d", o->stop_at_step > 0 && o->stop_at_step < st->job->train.steps ? o->stop_at_step : 0);
    const char *keys[] = {"PRISM_JOB", "PRISM_OUT", "PRISM_RESUME", "PRISM_STOP_AT_STEP", "PRISM_DEVICES", "PRISM_DATA_ROOT",
                          "PRISM_JOB_EFFECTIVE", "PRISM_TRAINER_ARGS"};
    const char *vals[] = {job_path, st->out_real, o->resume ? o->resume : "", stop, o->device ? o->device : "cpu",
                          o->data_root ? o->data_root : ".", eff_path,
                          st->job->trainer_args ? st->job->trainer_args : "{}"};
    for (int i = 0; i < 8; i++) {
        size_t len = strlen(keys[i]) + strlen(vals[i]) + 2;
        if ((env[k] = malloc(len))) snprintf(env[k], len, "%s=%s", keys[i], vals[i]);
        k++;
    }
    for (size_t i = 0; i < k; i++) if (!env[i]) { extrun_free_argv(env); return NULL; }
    return env;
}

/* Marks every descriptor from `from` up close-on-exec (the child, after its dup2s onto 0..3): the trainer gets
 * only the protocol's 0-3, never the worker's own (libcurl's TCP connection to the server and its socketpair,
 * checkpoint and log files, whatever the worker inherited), whichever thread opened them and with or without
 * O_CLOEXEC. Close-on-exec rather than closed: errw must stay open until execvp succeeds. close_range (Linux
 * 5.11) in one call; else each descriptor below maxfd (the RLIMIT_NOFILE the parent read before fork). Only
 * async-signal-safe calls (raw syscalls, fcntl). */
static void extrun_cloexec_from(int from, int maxfd) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)from, ~0U, EXTRUN_CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
    for (int fd = from; fd < maxfd; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);   /* EBADF for the closed ones */
}

/* The highest descriptor number + 1 extrun_cloexec_from's fallback walks (read in the parent, before fork). */
static int extrun_maxfd(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20)) return 1 << 20;
    return (int)rl.rlim_cur;
}

/* In the child, between fork and exec: only async-signal-safe calls. fd3w/logw are the pipes' write ends,
 * errw the close-on-exec pipe the execvp errno goes back on; maxfd from extrun_maxfd. */
static void extrun_child(const extrun_trainer *t, char **env, int fd3w, int logw, int errw, pid_t parent, int maxfd) {
    setpgid(0, 0);
    /* the worker killed (-9): the trainer goes with it rather than training for no one */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* out of the way of 0..3 first, so no dup2 below overwrites another */
    int a = fcntl(fd3w, F_DUPFD_CLOEXEC, 10), b = fcntl(logw, F_DUPFD_CLOEXEC, 10);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (a < 0 || b < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(b, 1) < 0 || dup2(b, 2) < 0 || dup2(a, 3) < 0) {
        int e = errno;
        ssize_t w = write(errw, &e, sizeof e);
        (void)w;
        _exit(127);
    }
    extrun_cloexec_from(4, maxfd);
    environ = env;
    execvp(t->argv[0], t->argv);
    int e = errno;
    ssize_t w = write(errw, &e, sizeof e);
    (void)w;
    _exit(127);
}

static const char *extrun_signame(int sig) {
    switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGINT: return "SIGINT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "a signal";
    }
}

/* The attempt's folder and what the trainer reads there: job.json (the lease's job), job-effective.json (the same
 * job normalised: every default written out, eval.batches "all" as itself: job_to_json); the resume step from the
 * resume file's name; no result.json of an earlier run. 0, or TRAIN_EIO with err. */
static int extrun_prepare(extrun_state *st, const json_t *job_json, char *job_path, char *eff_path, size_t pathlen,
                          char *err, size_t errlen) {
    const struct train_opts *o = st->o;
    if (util_mkdir_p(o->out_dir, 0755) != 0 || !realpath(o->out_dir, st->out_real)) {
        snprintf(err, errlen, "cannot create %s: %s (check --work-dir)", o->out_dir, strerror(errno));
        return TRAIN_EIO;
    }
    /* the resume file is ours (slot.c names it resume-STEP.bin or ckpt_STEP.bin): its step is in its name */
    if (o->resume) {
        const char *base = strrchr(o->resume, '/');
        base = base ? base + 1 : o->resume;
        long long s = 0;
        if (sscanf(base, "resume-%lld.bin", &s) == 1 || sscanf(base, "ckpt_%lld.bin", &s) == 1) st->resume_step = s;
        st->last_ckpt = st->resume_step;   /* a new checkpoint comes after the one it resumed from */
        if (st->resume_step == 0) st->last_ckpt = -1;
    }
    char result_path[PATH_MAX + 16];
    snprintf(job_path, pathlen, "%s/job.json", st->out_real);
    snprintf(eff_path, pathlen, "%s/job-effective.json", st->out_real);
    snprintf(result_path, sizeof result_path, "%s/result.json", o->out_dir);
    unlink(result_path);   /* only this run's result line writes it */
    json_t *eff = job_to_json(st->job);
    const char *path[2] = {job_path, eff_path};
    char *text[2] = {json_dumps(job_json, JSON_INDENT(2) | JSONOUT_FLAGS),
                     eff ? json_dumps(eff, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSONOUT_FLAGS) : NULL};
    json_decref(eff);
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        if (!text[i] || extrun_write_file(path[i], text[i]) != 0) {
            snprintf(err, errlen, "cannot write %s: %s", path[i], text[i] ? strerror(errno) : "out of memory");
            rc = TRAIN_EIO;
        }
    free(text[0]);
    free(text[1]);
    return rc;
}

/* Forks the trainer into its own group (recorded in set->group_dir), then reads the exec pipe: an execvp errno
 * there names a wrong COMMAND. 0 with st->fd3 / st->fdlog the read ends (the pipes' other ends closed), or a
 * TRAIN_E* with err (st->pid is reaped when exec failed). */
static int extrun_spawn(extrun_state *st, char **env, int fd3[2], int lg[2], int ep[2], char *group_rec,
                        size_t reclen, char *err, size_t errlen) {
    const extrun_trainer *t = st->t;
    fflush(stderr);
    pid_t parent = getpid();
    int maxfd = extrun_maxfd();
    st->pid = fork();
    if (st->pid < 0) { snprintf(err, errlen, "fork: %s", strerror(errno)); return TRAIN_ENOMEM; }
    if (st->pid == 0) extrun_child(t, env, fd3[1], lg[1], ep[1], parent, maxfd);
    setpgid(st->pid, st->pid);   /* both sides: the group exists before either signals it */
    /* recorded before the trainer has done anything: a worker killed with SIGKILL kills it at its next start */
    if (st->set->group_dir[0] && pgrec_write(st->set->group_dir, st->o->device ? st->o->device : "cpu", st->pid,
                                             group_rec, reclen) != 0)
        fprintf(stderr, "%s: cannot record the trainer's process group in %s: %s (a worker killed with SIGKILL "
                "would leave it running)\n", st->prefix, st->set->group_dir, strerror(errno));
    close(fd3[1]); close(lg[1]); close(ep[1]);
    fd3[1] = lg[1] = ep[1] = -1;
    int e = 0;
    ssize_t er;
    while ((er = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {}
    if (er == (ssize_t)sizeof e) {
        char cmd[600];
        snprintf(err, errlen, "trainer %s: cannot run %s: %s (check --trainer %s=COMMAND: the program must exist "
                 "and be executable)", t->name, log_escape(cmd, sizeof cmd, t->argv[0]), strerror(e), t->name);
        waitpid(st->pid, NULL, 0);
        return TRAIN_ETRAINER;
    }
    st->fd3 = fd3[0];
    st->fdlog = lg[0];
    fd3[0] = lg[0] = -1;
    fcntl(st->fd3, F_SETFL, O_NONBLOCK);
    fcntl(st->fdlog, F_SETFL, O_NONBLOCK);
    return 0;
}

/* One turn of the watch: both pipes read (at most EXTRUN_TURN_S each), then the stop flag (SIGTERM, SIGKILL after
 * the grace), the terminal line's grace and the silence timer looked at. 1 once the leader has exited (a zombie:
 * waitid WNOWAIT), else 0. */
static int extrun_turn(extrun_state *st) {
    const extrun_set *set = st->set;
    struct pollfd p[2];
    int np = 0;
    if (st->fd3 >= 0) p[np++] = (struct pollfd){ st->fd3, POLLIN, 0 };
    if (st->fdlog >= 0) p[np++] = (struct pollfd){ st->fdlog, POLLIN, 0 };
    if (np) poll(p, (nfds_t)np, 100);
    else { struct timespec ts = { 0, 50000000 }; nanosleep(&ts, NULL); }
    /* each pipe gets a turn of at most EXTRUN_TURN_S, then the stop flag and the timers are looked at */
    double turn = util_now_s();
    if (st->fd3 >= 0 && extrun_read_fd3(st, turn + EXTRUN_TURN_S) < 0) { close(st->fd3); st->fd3 = -1; }
    if (st->fdlog >= 0 && extrun_read_log(st, util_now_s() + EXTRUN_TURN_S) < 0) { close(st->fdlog); st->fdlog = -1; }
    double now = util_now_s();
    int stop = st->o->stop ? *st->o->stop : 0;
    if (stop && !st->term_sent && !st->failed) {
        st->mode = stop == 1 ? 1 : 2;
        kill(-st->pid, SIGTERM);
        st->term_sent = 1;
        st->term_at = now;
    }
    if (stop == 1 && st->mode == 2) st->mode = 1;   /* cancelled while it checkpointed: cancel wins */
    if (st->term_sent && !st->kill_sent && now - st->term_at > set->grace_s) {
        kill(-st->pid, SIGKILL);
        st->kill_sent = 1;
        fprintf(stderr, "%s: the trainer did not stop within %g s of SIGTERM (--trainer-kill-grace): killed\n",
                st->prefix, set->grace_s);
    }
    if (st->terminal && st->terminal_at == 0) st->terminal_at = now;   /* its exit is due now */
    if (st->terminal && !st->term_sent && !st->kill_sent && !st->failed && now - st->terminal_at > set->grace_s)
        extrun_fail(st, TRAIN_ETRAINER, "the trainer did not exit within %g s of its terminal line "
                    "(--trainer-kill-grace)", set->grace_s);
    if (!st->term_sent && !st->terminal && !st->failed && set->timeout_s > 0 && now - st->last_line_at > set->timeout_s)
        extrun_fail(st, TRAIN_ETRAINER, "no line on fd 3 for %.0f s (--trainer-timeout %g): the trainer hangs, "
                    "or is too slow to report a step", now - st->last_line_at, set->timeout_s);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)st->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == st->pid;
}

/* A "failed" line's outcome: its reason, its retry policy. */
static int extrun_outcome_failed(const extrun_state *st, char *err, size_t errlen) {
    const extrun_line *f = &st->failed_line;
    if (strcmp(f->reason, "diverged") == 0 || strcmp(f->reason, "nan") == 0) {
        /* the job's own outcome, as the built-in engine reports it: "diverged: MESSAGE", never retried */
        snprintf(err, errlen, "%s", f->message[0] ? f->message : "the trainer reports it (no message)");
        return strcmp(f->reason, "diverged") == 0 ? TRAIN_EDIVERGED : TRAIN_ENAN;
    }
    if (st->o->result) st->o->result->retryable = f->retryable;
    snprintf(err, errlen, "trainer %s: failed (%s, %s)%s%s", st->t->name, f->reason, f->retryable ? "retryable" :
             "not retryable", f->message[0] ? ": " : "", f->message);
    return TRAIN_ETRAINER;
}

/* The run's outcome once the group is gone and the leader reaped with wait status `status`: a TRAIN_* code, err
 * naming the cause (with the last log lines) when it failed. */
static int extrun_outcome(extrun_state *st, int status, char *err, size_t errlen) {
    const struct train_opts *o = st->o;
    const char *name = st->t->name;
    char tail[EXTRUN_TAIL + 200];
    extrun_tail_text(st, tail, sizeof tail);
    char last[EXTRUN_TAIL + 240];
    snprintf(last, sizeof last, tail[0] ? "; its last log lines: %s" : "%s", tail);
    if (st->mode == 1) { snprintf(err, errlen, "cancelled"); return TRAIN_ECANCELLED; }
    if (!st->failed && st->terminal == EXTRUN_EV_FAILED) return extrun_outcome_failed(st, err, errlen);
    if (!st->failed && st->terminal == EXTRUN_EV_RESULT) {   /* the result stands, however the trainer ended */
        if (!st->warned && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            fprintf(stderr, "%s: warning: the trainer %s %d after its result line: the result stands\n", st->prefix,
                    WIFEXITED(status) ? "exited with status" : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? WTERMSIG(status) : status);
        return TRAIN_OK;
    }
    if (st->failed) { snprintf(err, errlen, "trainer %s: %s", name, st->why); return st->failed; }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (st->terminal == EXTRUN_EV_RESULT) return TRAIN_OK;
        if (st->terminal == EXTRUN_EV_PAUSED) {
            if (o->result) { o->result->paused_at = st->paused_at; o->result->val_loss = st->paused_val; o->result->steps_done = st->paused_at; }
            return TRAIN_OK;
        }
        if (st->terminal == EXTRUN_EV_PREEMPTED) return TRAIN_EPREEMPTED;
        if (st->mode == 2) return TRAIN_EPREEMPTED;   /* stopped on our SIGTERM without saying so: the last checkpoint */
        snprintf(err, errlen, "trainer %s: exited 0 without a result line (after %lld lines on fd 3)%s", name,
                 st->lineno, last);
        return TRAIN_ETRAINER;
    }
    if (st->mode == 2) return TRAIN_EPREEMPTED;   /* asked to stop: whatever it managed, the job goes back with its last checkpoint */
    if (WIFEXITED(status))
        snprintf(err, errlen, "trainer %s: exited with status %d%s%s", name, WEXITSTATUS(status),
                 st->terminal ? " after its terminal line" : " (crashed)", last);
    else if (WIFSIGNALED(status))
        snprintf(err, errlen, "trainer %s: killed by %s (signal %d)%s", name, extrun_signame(WTERMSIG(status)),
                 WTERMSIG(status), last);
    else snprintf(err, errlen, "trainer %s: ended with wait status %d%s", name, status, last);
    return TRAIN_ETRAINER;
}

int extrun_run(const extrun_set *set, const extrun_trainer *t, const json_t *job_json, const struct job_config *job,
               const struct train_opts *o, const char *log_prefix) {
    extrun_state st;
    memset(&st, 0, sizeof st);
    st.set = set;
    st.t = t;
    st.job = job;
    st.o = o;
    st.prefix = log_prefix;
    st.fd3 = st.fdlog = -1;
    st.last_train = st.last_val = st.last_ckpt = -1;
    st.start_at = st.last_line_at = util_now_s();
    char *err = o->err;
    size_t errlen = o->errlen;
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    err[0] = 0;
    int fd3[2] = {-1, -1}, lg[2] = {-1, -1}, ep[2] = {-1, -1};
    char **env = NULL;
    int rc;
    char group_rec[PATH_MAX + 200] = "";   /* pgrec.h: the group's record while it runs */
    char job_path[PATH_MAX + 32], eff_path[PATH_MAX + 32];

    if ((rc = extrun_prepare(&st, job_json, job_path, eff_path, sizeof job_path, err, errlen))) return rc;
    if (!(st.buf = malloc(EXTRUN_LINE_MAX)) || !(env = extrun_env(&st, job_path, eff_path))) {
        free(st.buf);
        snprintf(err, errlen, "out of memory");
        return TRAIN_ENOMEM;
    }
    if (pipe2(fd3, O_CLOEXEC) != 0 || pipe2(lg, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        rc = TRAIN_EIO;
        goto out;
    }
    int stop0 = o->stop ? *o->stop : 0;
    if (stop0) { rc = stop0 == 2 ? TRAIN_EPREEMPTED : TRAIN_ECANCELLED; goto out; }   /* stopped before it began */
    if ((rc = extrun_spawn(&st, env, fd3, lg, ep, group_rec, sizeof group_rec, err, errlen))) goto out;
    while (!extrun_turn(&st)) {}
    /* the leader is a zombie: no one of its group stays; what they wrote is in the pipes, read for at most
     * EXTRUN_DRAIN_S (a process outside the group, a setsid grandchild, may still hold fd 3 and write) */
    kill(-st.pid, SIGKILL);
    double drain = util_now_s() + EXTRUN_DRAIN_S;
    if (st.fd3 >= 0) extrun_read_fd3(&st, drain);
    if (st.fdlog >= 0) extrun_read_log(&st, drain);
    if (st.ckpt_repeats)
        fprintf(stderr, "%s: %lld checkpoint lines repeated the step of the checkpoint already taken: not linked or "
                "reported again\n", st.prefix, st.ckpt_repeats);
    int status = 0;
    while (waitpid(st.pid, &status, 0) < 0 && errno == EINTR) {}
    st.pid = -1;
    rc = extrun_outcome(&st, status, err, errlen);
out:
    if (st.pid > 0) { kill(-st.pid, SIGKILL); while (waitpid(st.pid, NULL, 0) < 0 && errno == EINTR) {} }
    pgrec_remove(group_rec);   /* the group is killed and its leader reaped */
    for (int i = 0; i < 2; i++) {
        if (fd3[i] >= 0) close(fd3[i]);
        if (lg[i] >= 0) close(lg[i]);
        if (ep[i] >= 0) close(ep[i]);
    }
    if (st.fd3 >= 0) close(st.fd3);
    if (st.fdlog >= 0) close(st.fdlog);
    extrun_free_argv(env);
    free(st.buf);
    if (rc == TRAIN_EPREEMPTED && o->result && st.ckpt_path[0]) {
        snprintf(o->result->checkpoint, sizeof o->result->checkpoint, "%.4000s", st.ckpt_path);
        o->result->steps_done = (int)st.last_ckpt;
    }
    return rc;
}
