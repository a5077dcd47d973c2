/* slot.h — one device of the agent: its state, its job's checkpoint files, and the trainer's callbacks.
 *
 * A slot is one entry of --devices. Its device thread (agent.c) leases and trains; while a job trains, its
 * reporter thread (report.c) talks to the server. What the two share lives in `slot`, guarded by `mu`:
 *   - ck (slot_ckpt, this module): the newest checkpoint and the one the server last acknowledged;
 *   - rp (report, report.h): the lease, the metrics outbox, and whether the job was lost or the token refused;
 *   - view (progress_job, progress.h): what the display shows for the job.
 * `env` is the agent's state every slot reads (agent.c fills it before any slot thread starts).
 *
 * Contract.
 * - slot_init(s, env, index, before): sets up s (mutex, condition variable on CLOCK_MONOTONIC, the two libcurl
 *   handles, the display label, made unique among before[0..index-1], e.g. "cpu#1"); s->device must
 *   be set. Returns 0, or -1 when a client could not be set up (call slot_release anyway).
 *   slot_release(s) frees what slot_init made; safe on a slot whose init failed.
 * - slot_own_checkpoint(env, job_id, path): 1 when path, resolved (symlinks, ".."), is a file this worker
 *   wrote for job_id: CKPT/job-ID-aN/resume-*.bin or ckpt_*.bin under env->ckpt_real. Only such a file is
 *   read as `resume` or removed: the path comes from the server, which anyone with the worker token can feed.
 * - slot_on_checkpoint / slot_on_metrics / slot_on_progress: train_run's callbacks (ctx = the slot); they
 *   take s->mu themselves. slot_on_checkpoint links the trainer's file to resume-STEP.bin (that link, owned
 *   by the agent, is what gets reported) and wakes the reporter.
 * - slot_ckpt_acked(s, sent, step): the server acknowledged checkpoint `sent` at `step`: the older links of
 *   the job are removed (never the pending one). Call with s->mu held.
 * - slot_remove_checkpoints(root, job_id): removes every attempt's checkpoint folder of job_id under root
 *   (only our own file names; folders that keep other files stay).
 * - slot_abspath(in, out, len): in made absolute against the working directory (kept as is if too long).
 * - slot_sleep(s, flag): sleeps s seconds unless *flag rises first (polled every 50 ms).
 */
#ifndef PRISM_SLOT_H
#define PRISM_SLOT_H

#include "agent.h"
#include "client.h"
#include "progress.h"
#include "report.h"

#include <limits.h>
#include <pthread.h>

struct train_progress;
struct extrun_set;

/* The agent's state that its slots read. Fixed once the slots start, except heartbeat_s and worker_id
 * (rewritten under reg_mu when the server forgot us) and the refusal record (under refuse_mu). */
typedef struct slot_env {
    const agent_opts *o;
    char token[512];
    char name[256];
    char host[256];
    char work_dir[PATH_MAX];
    char ckpt_dir[PATH_MAX];
    char ckpt_real[PATH_MAX];       /* ckpt_dir with symlinks resolved: the only folder resume files come from */
    char data_root[PATH_MAX];
    struct extrun_set *trainers;    /* --trainer NAME=COMMAND (worker/extrun.h); n = 0 when none */
    lease_filter filter;            /* what the lease request says this worker trains (common/lease.h) */
    long long worker_id;
    double heartbeat_s;
    struct slot *slots;             /* the agent's slots (nslots) */
    int nslots;
    volatile int *quit;             /* the agent's first-signal flag: stop leasing, preempt training */
    pthread_mutex_t reg_mu;         /* re-registration after a 404 on lease */
    pthread_mutex_t refuse_mu;      /* guards the refused_* details */
    volatile int refused;           /* a 401/403 after registration: lease nothing more, exit 2 */
    long refused_status;            /* the first refusal: status, "METHOD PATH", client error */
    char refused_req[160];
    char refused_err[512];
    pthread_mutex_t streak_mu;      /* guards the failure streak below */
    int streak_n;                   /* jobs failed in a row with the same non-retryable local error ... */
    int streak_code;                /* ... of this kind (a TRAIN_E* code) */
    char streak_err[1024];          /* the last of them */
    volatile int storm;             /* 1: the worker stops leasing (--fail-limit reached, or the server stopped it) */
    char storm_why[1400];           /* what agent_run prints when storm is set (under streak_mu) */
} slot_env;

/* The job's checkpoints, guarded by slot.mu. */
typedef struct slot_ckpt {
    int pending;                    /* path is newer than what the server has heard of */
    int sending;                    /* the reporter is posting path: it is not ours to unlink */
    int tried;                      /* path was posted at least once: the server may hold it even without an
                                     * answer we could read, so it stays until a newer one is acknowledged */
    int step;
    long long covered;              /* the outbox's `pushed` when it was written: its steps' points are the first
                                     * `covered`; it is reported only once they have left (report.c) */
    char path[PATH_MAX];
    char acked[PATH_MAX];           /* the checkpoint the server last acknowledged (what it offers as resume) */
} slot_ckpt;

typedef struct slot {
    slot_env *env;
    int index;
    char device[64];                /* "cpu" or a CUDA index (what train_run and the server get); with
                                     * --devices-per-job N, N of them joined by ',' (an external trainer's PRISM_DEVICES) */
    char label[32];                 /* its name in the display and the log */
    pthread_t thread;
    client cl;                      /* device thread: lease, complete, fail */
    client rcl;                     /* reporter thread: heartbeat, metrics, checkpoint */
    int jobs_done;
    int jobs_taken;                 /* leases taken, however they ended: what --max-jobs counts */
    int disabled;                   /* the backend failed on this device: lease nothing more */

    pthread_mutex_t mu;
    pthread_cond_t cv;              /* wakes the reporter (a new checkpoint, the end of the job) */
    volatile int training;          /* 1 while train_run runs (the signal handler only touches stop then) */
    volatile int stop;              /* train_run's flag: 1 = cancel now, 2 = checkpoint and return */
    volatile int reporter_quit;     /* tells the reporter to return (its client's abort flag) */
    slot_ckpt ck;
    report rp;
    progress_job view;
} slot;

int slot_init(slot *s, slot_env *env, int index, const slot *before);
void slot_release(slot *s);
int slot_own_checkpoint(const slot_env *env, long long job_id, const char *path);
void slot_on_checkpoint(void *ctx, int step, const char *path);
void slot_on_metrics(void *ctx, json_t *row);
void slot_on_progress(void *ctx, const struct train_progress *p);
void slot_ckpt_acked(slot *s, const char *sent, int step);
void slot_remove_checkpoints(const char *root, long long job_id);
void slot_abspath(const char *in, char *out, size_t len);
void slot_sleep(double s, volatile int *flag);

#endif
