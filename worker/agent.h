/* agent.h — `prism-worker --server URL`: the agent that turns a box's devices into sweep workers.
 *
 * agent_run() registers with the orchestrator, then runs one thread per device. Each device thread loops
 * lease → train_run → complete/fail until the agent is stopped; while a job trains, a reporter thread of
 * that device sends heartbeats on their own timer (independent of step length), streams the metrics
 * outbox and reports checkpoints. A 409 or 404 on any of those stops the job (cancelled, lease lost, job
 * gone from the server) through train_run's stop flag and frees the device. A 401/403 on any call after
 * registration (the token was changed or revoked) stops the job like SIGTERM (step, checkpoint) without
 * reporting it, stops leasing, and the agent exits 2. SIGTERM/SIGINT: every device finishes its current step,
 * checkpoints, reports (metrics, checkpoint, then fail retryable "preempted"), and the agent exits 0;
 * a second signal exits at once. Failure storms: a worker whose jobs fail one after another with the same
 * local error (its data root is wrong, its disk is full of bad checkpoints) stops leasing after
 * --fail-limit of them, says why and exits 1, instead of failing every job of the queue in seconds.
 */
#ifndef PRISM_AGENT_H
#define PRISM_AGENT_H

typedef struct agent_opts {
    const char *server;          /* "http://HOST:PORT", required */
    const char *token_file;      /* worker token: a bare line, or a `worker_token=` line; required */
    const char *devices;         /* "cpu" (default) or "0,1,..." (CUDA indices); "cpu,cpu" = two CPU slots */
    const char *work_dir;        /* per-job outputs go to WORK/job-ID-aATTEMPT/, default "prism-work" */
    const char *checkpoint_dir;  /* training-state checkpoints, default WORK/checkpoints */
    const char *name;            /* worker name, default HOSTNAME-PID */
    const char *data_root;       /* relative data globs resolve here, default the working directory */
    double poll_s;               /* wait after a 204 (nothing queued), default 5 */
    double heartbeat_s;          /* 0 = the server's heartbeat_every_s (or lease TTL / 3) */
    double flush_s;              /* metrics are sent at least this often, default 1 */
    double idle_exit_s;          /* exit after this long with nothing to lease on any device; 0 = never */
    int max_jobs;                /* leased jobs per device, however they end (done, failed, cancelled); 0 = no limit */
    int fail_limit;              /* stop after this many jobs in a row failed with the same non-retryable local error
                                  * (bad data, bad checkpoint, a job this worker cannot read), default 3; 0 = never */
    int data_anywhere;           /* --allow-data-outside-root: job data paths may leave data_root */
    int progress;                /* -1 auto (live lines when stderr is a TTY), 0 log lines, 1 live lines */
    const char *const *trainers; /* --trainer NAME=COMMAND, ntrainers of them (worker/extrun.h, docs/TRAINERS.md) */
    int ntrainers;
    double trainer_timeout_s;    /* --trainer-timeout: longest silence on a trainer's fd 3, default 600 */
    double trainer_grace_s;      /* --trainer-kill-grace: SIGTERM to SIGKILL of a trainer's group, default 30 */
    int devices_per_job;         /* --devices-per-job: devices one job gets (> 1: external trainers only), default 1 */
} agent_opts;

/* Fills the defaults above (required fields NULL). */
void agent_opts_default(agent_opts *o);

/* Runs until stopped (signal, --idle-exit, --max-jobs, a refused token, a failure storm). Returns the process
 * exit status: 0 after a clean stop; 1 when registration failed for good (e.g. 401), every device failed
 * (TRAIN_EDEVICE), or a failure storm stopped it (--fail-limit jobs in a row failed with the same local error,
 * or the server stopped leasing to it: message on stderr with the error and the requeue command); 2 for bad
 * options (a CUDA device in --devices without a usable CUDA backend or device included, unless --trainer gives
 * external trainers (then only their jobs are leased); --devices-per-job N > 1 without --trainer, or N not dividing
 * the devices; a malformed --trainer: all checked before registering), a --server that is not a prism-sweep server or speaks another scheme (at registration, no retry),
 * or when the server refused the worker token after registration (401/403; message on stderr naming the
 * request and --token-file). */
int agent_run(const agent_opts *o);

#endif
