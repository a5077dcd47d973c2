/* jobresult.h — a job's result (result.json, the body of POST /api/v1/jobs/{id}/complete's "result"), one type
 * both sides share: the worker builds it (jobresult_to_json), the orchestrator reads the columns it stores
 * (jobresult_columns) after common/result_check.c has checked every number against the job's bounds.
 *
 *   {"val_loss": 3.05, "train_loss": 3.11, "tok_per_s": 51234.5, "wall_s": 812.4, "params": 124475904,
 *    "flops_per_token": 7.5e8, "steps": 400, "tokens": 6553600, "heads": [3, 3, 6, ...], "device": "cpu",
 *    "arch": "gpt2", "backend": {...}, "attn_distance": [..one per layer..], "zero_shot": {task: {acc, acc_norm, acc_norm_char?, n, truncated}},
 *    "val_loss_batches": [...], "val_loss_se": 0.004, "val_batches": 20}
 *
 * The keys are JOBRESULT_KEY_*; there are no aliases (final_val_loss, tokens_per_s, wall_time_s, num_params,
 * step, attention_distance were accepted once and are not any more: docs/API.md).
 *
 * Contract.
 * - jobresult_to_json(r): a new object (caller decrefs) with every key r has (train_loss null when NAN;
 *   attn_distance only when r->attn_distance; backend/zero_shot only when non-NULL, new references taken;
 *   val_loss_se null with fewer than two batches); NULL when out of memory. r is unchanged.
 * - jobresult_columns(result, c): result borrowed. Fills c with what the results table stores (has_* 0 for a
 *   key absent or not of its type; attn_distance borrowed from result, NULL unless an array). Returns 0, or -1
 *   when result is not an object or has no numeric val_loss (common/result_check.c's result_check says why).
 * Thread-safe; no globals.
 */
#ifndef PRISM_JOBRESULT_H
#define PRISM_JOBRESULT_H
#include <jansson.h>

#define JOBRESULT_KEY_VAL_LOSS "val_loss"
#define JOBRESULT_KEY_TRAIN_LOSS "train_loss"
#define JOBRESULT_KEY_TOK_PER_S "tok_per_s"
#define JOBRESULT_KEY_WALL_S "wall_s"
#define JOBRESULT_KEY_PARAMS "params"
#define JOBRESULT_KEY_FLOPS_PER_TOKEN "flops_per_token"
#define JOBRESULT_KEY_STEPS "steps"
#define JOBRESULT_KEY_TOKENS "tokens"
#define JOBRESULT_KEY_ATTN_DISTANCE "attn_distance"
#define JOBRESULT_KEY_VAL_LOSS_SE "val_loss_se"
#define JOBRESULT_KEY_VAL_BATCHES "val_batches"
#define JOBRESULT_KEY_VAL_LOSS_BATCHES "val_loss_batches"
#define JOBRESULT_KEY_ZERO_SHOT "zero_shot"
/* an external trainer's run (docs/TRAINERS.md): its start-up before the first step, seconds (device time beside
 * wall_s: the sweep's device_hours counts both), and who produced the result (the worker's --trainer COMMAND and the
 * version the trainer declared; the trainer itself may not set these two) */
#define JOBRESULT_KEY_SETUP_S "setup_s"
#define JOBRESULT_KEY_TRAINER_COMMAND "trainer_command"
#define JOBRESULT_KEY_TRAINER_VERSION "trainer_version"

typedef struct job_result {
    double val_loss;
    double train_loss;                 /* NAN: none (a run resumed at its last step) */
    double tok_per_s, wall_s, flops_per_token;
    long long params, steps, tokens;
    const int *heads;                  /* n_layer head counts */
    int n_layer;
    const char *device, *arch;
    const double *attn_distance;       /* n_layer values, or NULL (eval.attn_distance off) */
    const double *val_batch;           /* the final evaluation's per-batch mean losses */
    int val_nb;
    json_t *backend, *zero_shot;       /* borrowed; NULL: none */
} job_result;

typedef struct jobresult_cols {
    double val_loss;
    int has_tok_per_s, has_wall_s, has_params, has_flops_per_token, has_setup_s;
    double tok_per_s, wall_s, flops_per_token, setup_s;
    long long params;
    const json_t *attn_distance;
    const char *trainer_command, *trainer_version;   /* borrowed from result; NULL: none */
} jobresult_cols;

/* The result's keys as rows ({key, kind, required, by}: by "engine" the built-in engine writes it, "trainer" an
 * external trainer may add it, "worker" only the worker sets it): `prism-worker schema --json`'s "result". A new
 * array, NULL when out of memory. The bounds of each number are common/result_check.c's (they depend on the job). */
json_t *jobresult_schema_json(void);

json_t *jobresult_to_json(const job_result *r);
/* The standard error of the mean of n per-batch losses (sd / sqrt(n)): 1 with *se set, 0 when n < 2 (none). The
 * result's val_loss_se and the built-in engine's val points' (worker/train.c). */
int jobresult_val_se(const double *batch, int n, double *se);
int jobresult_columns(const json_t *result, jobresult_cols *c);
#endif
