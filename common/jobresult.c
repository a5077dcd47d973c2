/* jobresult.c — the job result's builder and column reader (jobresult.h).
 *
 * Design: both sides name the keys through jobresult.h's constants, so a key the worker writes is a key the
 * server reads; the bounds of each number depend on the job and are common/result_check.c's, applied by the
 * server and by the worker before it reports.
 */
#include "jobresult.h"

#include <math.h>
#include <string.h>

/* Every key of a result: what jobresult_to_json writes (by "engine"), what an external trainer may add ("trainer")
 * and what only the worker sets ("worker"); kinds as JSON names them. */
static const struct { const char *key, *kind, *by; int required; } RESULT_KEYS[] = {
    {JOBRESULT_KEY_VAL_LOSS, "number", "engine", 1},
    {JOBRESULT_KEY_TRAIN_LOSS, "number", "engine", 0},
    {JOBRESULT_KEY_TOK_PER_S, "number", "engine", 0},
    {JOBRESULT_KEY_WALL_S, "number", "engine", 0},
    {JOBRESULT_KEY_PARAMS, "integer", "engine", 0},
    {JOBRESULT_KEY_FLOPS_PER_TOKEN, "number", "engine", 0},
    {JOBRESULT_KEY_STEPS, "integer", "engine", 0},
    {JOBRESULT_KEY_TOKENS, "integer", "engine", 0},
    {"heads", "array", "engine", 0},
    {"device", "string", "engine", 0},
    {"arch", "string", "engine", 0},
    {"backend", "object", "engine", 0},
    {JOBRESULT_KEY_ATTN_DISTANCE, "array", "engine", 0},
    {JOBRESULT_KEY_ZERO_SHOT, "object", "engine", 0},
    {JOBRESULT_KEY_VAL_LOSS_BATCHES, "array", "engine", 0},
    {JOBRESULT_KEY_VAL_LOSS_SE, "number", "engine", 0},
    {JOBRESULT_KEY_VAL_BATCHES, "integer", "engine", 0},
    {JOBRESULT_KEY_SETUP_S, "number", "trainer", 0},
    {"extra", "object", "trainer", 0},
    {JOBRESULT_KEY_TRAINER_COMMAND, "string", "worker", 0},
    {JOBRESULT_KEY_TRAINER_VERSION, "string", "worker", 0},
};

json_t *jobresult_schema_json(void) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < sizeof RESULT_KEYS / sizeof RESULT_KEYS[0]; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:b}", "key", RESULT_KEYS[i].key, "kind", RESULT_KEYS[i].kind,
                                               "by", RESULT_KEYS[i].by, "required", RESULT_KEYS[i].required)) < 0) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

int jobresult_val_se(const double *batch, int n, double *se) {
    if (n < 2) return 0;
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += batch[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (batch[i] - mean) * (batch[i] - mean);
    *se = sqrt(ss / (n - 1) / n);
    return 1;
}

json_t *jobresult_to_json(const job_result *r) {
    json_t *o = json_object(), *heads = json_array(), *vb = json_array();
    if (!o || !heads || !vb) goto oom;
    for (int l = 0; l < r->n_layer && r->heads; l++) json_array_append_new(heads, json_integer(r->heads[l]));
    int bad = json_object_set_new(o, JOBRESULT_KEY_VAL_LOSS, json_real(r->val_loss));
    bad |= json_object_set_new(o, JOBRESULT_KEY_TRAIN_LOSS, isfinite(r->train_loss) ? json_real(r->train_loss) : json_null());
    bad |= json_object_set_new(o, JOBRESULT_KEY_TOK_PER_S, json_real(r->tok_per_s));
    bad |= json_object_set_new(o, JOBRESULT_KEY_WALL_S, json_real(r->wall_s));
    bad |= json_object_set_new(o, JOBRESULT_KEY_PARAMS, json_integer(r->params));
    bad |= json_object_set_new(o, JOBRESULT_KEY_FLOPS_PER_TOKEN, json_real(r->flops_per_token));
    bad |= json_object_set_new(o, JOBRESULT_KEY_STEPS, json_integer(r->steps));
    bad |= json_object_set_new(o, JOBRESULT_KEY_TOKENS, json_integer(r->tokens));
    bad |= json_object_set_new(o, "heads", heads);
    heads = NULL;
    bad |= json_object_set_new(o, "device", json_string(r->device ? r->device : ""));
    if (r->arch) bad |= json_object_set_new(o, "arch", json_string(r->arch));
    if (r->backend) bad |= json_object_set(o, "backend", r->backend);
    if (r->attn_distance) {
        json_t *a = json_array();
        for (int l = 0; a && l < r->n_layer; l++) json_array_append_new(a, json_real(r->attn_distance[l]));
        bad |= json_object_set_new(o, JOBRESULT_KEY_ATTN_DISTANCE, a);
    }
    if (r->zero_shot) bad |= json_object_set(o, JOBRESULT_KEY_ZERO_SHOT, r->zero_shot);
    /* the final evaluation's per-batch losses and the standard error of their mean (the ranking's val noise) */
    for (int i = 0; i < r->val_nb; i++) json_array_append_new(vb, json_real(r->val_batch[i]));
    bad |= json_object_set_new(o, JOBRESULT_KEY_VAL_LOSS_BATCHES, vb);
    vb = NULL;
    double se;
    bad |= json_object_set_new(o, JOBRESULT_KEY_VAL_LOSS_SE,
                               jobresult_val_se(r->val_batch, r->val_nb, &se) ? json_real(se) : json_null());
    bad |= json_object_set_new(o, JOBRESULT_KEY_VAL_BATCHES, json_integer(r->val_nb));
    if (bad) goto oom;
    return o;
oom:
    json_decref(o);
    json_decref(heads);
    json_decref(vb);
    return NULL;
}

int jobresult_columns(const json_t *result, jobresult_cols *c) {
    memset(c, 0, sizeof *c);
    json_t *vl = json_object_get(result, JOBRESULT_KEY_VAL_LOSS);
    if (!json_is_object(result) || !json_is_number(vl)) return -1;
    c->val_loss = json_number_value(vl);
    json_t *v;
    if ((c->has_tok_per_s = json_is_number(v = json_object_get(result, JOBRESULT_KEY_TOK_PER_S)))) c->tok_per_s = json_number_value(v);
    if ((c->has_wall_s = json_is_number(v = json_object_get(result, JOBRESULT_KEY_WALL_S)))) c->wall_s = json_number_value(v);
    if ((c->has_params = json_is_integer(v = json_object_get(result, JOBRESULT_KEY_PARAMS)))) c->params = json_integer_value(v);
    if ((c->has_flops_per_token = json_is_number(v = json_object_get(result, JOBRESULT_KEY_FLOPS_PER_TOKEN))))
        c->flops_per_token = json_number_value(v);
    if ((c->has_setup_s = json_is_number(v = json_object_get(result, JOBRESULT_KEY_SETUP_S)))) c->setup_s = json_number_value(v);
    c->trainer_command = json_string_value(json_object_get(result, JOBRESULT_KEY_TRAINER_COMMAND));
    c->trainer_version = json_string_value(json_object_get(result, JOBRESULT_KEY_TRAINER_VERSION));
    v = json_object_get(result, JOBRESULT_KEY_ATTN_DISTANCE);
    c->attn_distance = json_is_array(v) ? v : NULL;
    return 0;
}
