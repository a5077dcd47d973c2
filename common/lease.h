/* lease.h — the lease: what POST /api/v1/lease answers a worker (200), one type both sides share.
 * The orchestrator builds it (queue_lease → lease_to_json), the worker reads it (agent → lease_from_json).
 *
 *   { "job_id": 7, "attempt": 2, "lease_token": "HEX", "lease_expires_at": 1.7e9, "lease_ttl_s": 60,
 *     "sweep_id": 1, "schedule_id": 3, "seed": 1337, "heads": [3, 3, 6, ...],
 *     "job": { ...the job JSON, common/job.h... },
 *     "resume": { "checkpoint": "/path/ckpt.bin", "step": 500 },     only when a checkpoint was reported
 *     "stop_at_step": 250 }                                            only for a successive-halving rung
 *
 * Required: job_id (integer >= 1), attempt (integer 0..INT_MAX), lease_token (non-empty string, shorter than
 * LEASE_TOKEN_MAX), job (an object; its contents are job_from_json's to judge, not this parser's).
 * Optional, but of the stated type when present: lease_expires_at and lease_ttl_s (numbers), sweep_id,
 * schedule_id and seed (integers), heads (an array), resume (an object with a non-empty string "checkpoint"
 * shorter than LEASE_PATH_MAX and an integer "step" >= 0), stop_at_step (integer 0..INT_MAX; 0 = train to the
 * end). Unknown keys are ignored, so a newer server can add keys without stopping older workers.
 *
 * Contract.
 * - lease_init(l): zeroes l (no references held). lease_release(l): drops the references l holds (job, heads)
 *   and leaves l as lease_init does; safe to call twice.
 * - References: a lease OWNS one reference to each of `job` and `heads` when they are non-NULL. A builder
 *   that fills them by hand hands its reference over (steals it) and must not decref it afterwards.
 * - lease_to_json(l): returns a new object (caller decrefs) holding its own references to l->job and
 *   l->heads (l keeps its own; it is unchanged), or NULL when out of memory or l->job is NULL. Always writes
 *   every required and informational key; "resume" only when l->has_resume, "stop_at_step" only when > 0;
 *   "heads" only when l->heads is non-NULL.
 * - lease_from_json(obj, l, err, errlen): obj is borrowed (not stolen, not changed). l must be lease_init()ed
 *   (or released). Returns LEASE_OK with l filled, taking new references to obj's "job" and "heads", or
 *   LEASE_EINVAL with err set to "KEY: what is wrong (got ...)" (KEY dotted for resume.checkpoint /
 *   resume.step). After a failure l holds no references, and the keys read before the failing one (in this
 *   order: job_id, attempt, lease_token, then the rest) stay set, so a caller can still report the failure
 *   of a job whose wrapper names it (job_id > 0 and lease_token non-empty); the rest are zero.
 *
 * The lease REQUEST (POST /api/v1/lease {worker_id, device, trainers?, builtin?}) says what the worker can train:
 * "trainers": the names of its external trainers (--trainer NAME=COMMAND, docs/TRAINERS.md), an array of at
 * most LEASE_MAX_TRAINERS distinct names (job_trainer_name_ok); "builtin": false when it cannot run the built-in
 * engine (--devices-per-job > 1, or no usable backend for its devices). Absent: no trainers, built-in yes (the
 * request of a worker older than trainers). The server leases a job whose "trainer" is NAME only to a worker
 * listing NAME, and a job without one only to a worker with the built-in engine; it never sends a command.
 * - lease_filter_init(f): built-in yes, no trainers.
 * - lease_filter_to_json(f, body): adds "trainers" (always) and "builtin" (only when 0) to the request object
 *   body. Returns 0, -1 when out of memory.
 * - lease_filter_from_json(body, f, err, errlen): reads those keys of a request (borrowed). LEASE_OK, or
 *   LEASE_EINVAL with err naming the key ("trainers[2]: ...") and f as lease_filter_init leaves it.
 * Thread-safe (no globals); jansson's reference counts are not atomic, so one lease belongs to one thread.
 */
#ifndef PRISM_LEASE_H
#define PRISM_LEASE_H
#include <jansson.h>
#include <stddef.h>

#define LEASE_TOKEN_MAX 256      /* lease_token, with its NUL (the server's tokens are 48 hex digits) */
#define LEASE_PATH_MAX 4096      /* resume.checkpoint, with its NUL */

enum { LEASE_OK = 0, LEASE_EINVAL = -1 };

typedef struct lease {
    long long job_id;                    /* jobs.id */
    int attempt;                         /* the attempt this lease is for (metrics are keyed by it) */
    char token[LEASE_TOKEN_MAX];         /* lease_token: every job-scoped call carries it */
    double expires_at;                   /* lease_expires_at, server clock (epoch seconds); 0 when absent */
    double ttl_s;                        /* lease_ttl_s; 0 when absent */
    long long sweep_id, schedule_id;     /* 0 when absent */
    long long seed;                      /* the job's seed (also in job.train.seed); 0 when absent */
    json_t *heads;                       /* the schedule as an array of head counts, owned; NULL when absent */
    json_t *job;                         /* the job JSON (common/job.h), owned; never NULL in a parsed lease */
    int has_resume;                      /* 1: resume from resume_checkpoint at resume_step */
    char resume_checkpoint[LEASE_PATH_MAX];
    long long resume_step;
    int stop_at_step;                    /* successive halving: stop (and report the rung) here; 0 = none */
    long long sweep_done, sweep_jobs;    /* the sweep's jobs finished / in all when leased (the worker's display, as a
                                          * heartbeat's answer has them); 0 when absent */
} lease;

#define LEASE_MAX_TRAINERS 32    /* trainer names in one lease request */

typedef struct lease_filter {
    int builtin;                         /* 1: also jobs of the built-in engine (no "trainer" key) */
    int ntrainers;
    char names[LEASE_MAX_TRAINERS][64];  /* JOB_TRAINER_MAX */
} lease_filter;

void lease_filter_init(lease_filter *f);
int lease_filter_to_json(const lease_filter *f, json_t *body);
int lease_filter_from_json(const json_t *body, lease_filter *f, char *err, size_t errlen);

void lease_init(lease *l);
void lease_release(lease *l);
json_t *lease_to_json(const lease *l);
int lease_from_json(const json_t *obj, lease *l, char *err, size_t errlen);

#endif
