/* report.h — the worker's side of the job life cycle on the server: register, lease, and everything a slot
 * reports about the job it holds (heartbeats, metrics, checkpoints, the rung, complete, fail).
 *
 * Every call goes through client.c (retries, backoff). The answers a slot acts on:
 *   409 (cancelled, lease lost) or 404 (the job or its sweep is gone) → the job is lost: stop = 1, lost, its
 *       unsent points dropped; 401/403 after registration (the token was changed or revoked) → the job stops
 *       as on SIGTERM (stop = 2) and nothing more is reported; env->refused stops every slot from leasing.
 *
 * Contract (s is a slot, slot.h; "under mu" means the function takes s->mu itself unless it says otherwise).
 * - report_register(env, c): POST /api/v1/workers/register; sets env->worker_id and env->heartbeat_s (the
 *   --heartbeat flag, else the server's heartbeat_every_s, else lease_ttl_s / 3, else 10). Returns a CLIENT_*
 *   code (CLIENT_ESTOPPED once *env->quit rises; CLIENT_EPROTO without a worker_id); prints why on stderr.
 * - report_lease(s, &resp): POST /api/v1/lease for s's device. CLIENT_OK with *resp the lease (caller
 *   decrefs), or NULL on 204 (nothing queued); any other code leaves *resp NULL.
 * - report_begin(s): after s->rp.l is filled (or failed to parse: job_id may be 0), resets the job's
 *   report state: the job-scoped routes, lost/refused, an empty outbox. report_end(s) drops the unsent
 *   points and the lease's references.
 * - report_start(s) starts the reporter thread (heartbeat every env->heartbeat_s, metrics every --flush
 *   seconds and at once with a new checkpoint, then the checkpoint); report_stop(s) tells it to return and
 *   joins it. In between, only the reporter posts with s->rcl.
 * - report_send_checkpoint(s, c, retry_for_s): posts the pending checkpoint, if any. Returns a CLIENT_* code.
 * - report_outcome(s, route, body, res): the end of a job that was not lost: metrics, checkpoint, then
 *   POST /api/v1/jobs/ID/ROUTE (route "complete", "fail" or "rung"; body gets the lease_token, and keeps
 *   the caller's reference). Logs and records what a refusal means (token refused → CLIENT_EAUTH;
 *   job gone → CLIENT_EGONE, marked lost). res (may be NULL) is only for the log line.
 * - report_mark_lost(s, why), report_token_refused(s, c): what the reporter does on a 409 / a 401-403
 *   (under mu); report_log_refused(s, res): the log line of a job stopped by a refused token.
 */
#ifndef PRISM_REPORT_H
#define PRISM_REPORT_H

#include "client.h"
#include "lease.h"

#include <jansson.h>
#include <pthread.h>

struct slot;
struct slot_env;
struct train_result;

#define REPORT_BATCH 2000           /* metric points per POST (the server takes up to 10,000) */

/* One job's link to the server. lost, refused and lost_reason are guarded by slot.mu. */
typedef struct report {
    lease l;                        /* the lease (common/lease.h): job id, attempt, token, resume, stop_at_step */
    char path_metrics[96], path_heartbeat[96], path_checkpoint[96];
    outbox ob;                      /* metric rows the trainer produced, until the server acknowledged them */
    int lost;                       /* a 409 or 404 arrived: the job is no longer ours */
    int refused;                    /* a 401/403 arrived: stop like SIGTERM, report nothing */
    char lost_reason[512];
    pthread_t thread;               /* the reporter */
    int started;                    /* the reporter thread runs */
} report;

int report_register(struct slot_env *env, client *c);
int report_lease(struct slot *s, json_t **resp);
void report_begin(struct slot *s);
void report_end(struct slot *s);
void report_start(struct slot *s);
void report_stop(struct slot *s);
int report_send_checkpoint(struct slot *s, client *c, double retry_for_s);
int report_outcome(struct slot *s, const char *route, json_t *body, const struct train_result *res);
void report_mark_lost(struct slot *s, const char *why);
void report_token_refused(struct slot *s, const client *c);
void report_log_refused(struct slot *s, const struct train_result *res);

#endif
