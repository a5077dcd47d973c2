/* test_point.c — the worker's reports as one shape on both sides (common/point.h, heartbeat.h, jobresult.h):
 * what the worker builds parses back the same on the server's side, every bad key is an error that names it
 * (with the messages the server always gave), and the result carries no alias a writer does not produce. */
#include "harness.h"
#include "heartbeat.h"
#include "jobresult.h"
#include "point.h"

#include <math.h>
#include <string.h>

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *o = json_loads(text, JSON_DECODE_ANY, &je);
    if (!o) HFAIL("test JSON does not parse: %s: %s", je.text, text);
    return o;
}

static void point_error(const char *text, const char *needle) {
    json_t *o = parse(text);
    metric_point p;
    char err[256] = "";
    if (point_from_json(o, &p, "points[3]", err, sizeof err) == 0) HFAIL("expected \"%s\", accepted: %s", needle, text);
    ASSERT_CONTAINS(err, needle);
    json_decref(o);
}

TEST(train_point_round_trips) {
    metric_point p = {.step = 41, .has_train_loss = 1, .train_loss = 3.25, .has_lr = 1, .lr = 6e-4, .has_grad_norm = 1,
                      .grad_norm = 0.5, .has_tokens = 1, .tokens = 172032, .has_tok_per_s = 1, .tok_per_s = 51234.5};
    json_t *o = point_to_json(&p);
    ASSERT_TRUE(o != NULL);
    char *text = json_dumps(o, JSON_COMPACT);
    ASSERT_STREQ("{\"step\":41,\"train_loss\":3.25,\"lr\":0.00059999999999999995,\"grad_norm\":0.5,\"tokens\":172032,"
                 "\"tok_per_s\":51234.5}", text);
    free(text);
    metric_point q;
    char err[256] = "";
    ASSERT_EQ_INT(0, point_from_json(o, &q, "points[0]", err, sizeof err));
    ASSERT_EQ_INT(41, q.step);
    ASSERT_EQ_INT(1, q.has_train_loss);
    ASSERT_EQ_INT(0, q.has_val_loss);
    ASSERT_NEAR(3.25, q.train_loss, 0);
    ASSERT_NEAR(6e-4, q.lr, 0);
    ASSERT_NEAR(0.5, q.grad_norm, 0);
    ASSERT_EQ_INT(172032, q.tokens);
    ASSERT_NEAR(51234.5, q.tok_per_s, 0);
    json_decref(o);
    metric_point none;
    point_init(&none);
    ASSERT_TRUE(point_to_json(&none) == NULL);   /* neither loss: not a point */
}

TEST(val_point_and_nulls) {
    json_t *o = parse("{\"step\": 400, \"val_loss\": 3.05, \"lr\": null, \"tokens\": null, \"zero_shot\": {}}");
    metric_point p;
    char err[256] = "";
    ASSERT_EQ_INT(0, point_from_json(o, &p, "points[0]", err, sizeof err));
    ASSERT_EQ_INT(1, p.has_val_loss);
    ASSERT_EQ_INT(0, p.has_train_loss);
    ASSERT_EQ_INT(0, p.has_lr);
    ASSERT_EQ_INT(0, p.has_tokens);
    json_decref(o);
}

TEST(bad_points_name_the_key) {
    point_error("[1]", "points[3]: must be an object");
    point_error("{\"train_loss\": 1}", "points[3].step: must be an integer >= 0");
    point_error("{\"step\": -2, \"train_loss\": 1}", "points[3].step: must be an integer >= 0");
    point_error("{\"step\": 1099511627777, \"train_loss\": 1}", "points[3].step: must be at most 2^40");
    point_error("{\"step\": 1}", "points[3]: needs train_loss or val_loss");
    point_error("{\"step\": 1, \"val_loss\": \"x\"}", "points[3]: train_loss/val_loss must be numbers");
    point_error("{\"step\": 1, \"train_loss\": 1, \"lr\": true}", "points[3]: lr must be a number");
    point_error("{\"step\": 1, \"train_loss\": 1, \"grad_norm\": []}", "points[3]: grad_norm must be a number");
    point_error("{\"step\": 1, \"train_loss\": 1, \"tok_per_s\": \"fast\"}", "points[3]: tok_per_s must be a number");
    point_error("{\"step\": 1, \"train_loss\": 1, \"tokens\": 1.5}", "points[3]: tokens must be an integer");
    /* numbers as the job's bounds allow (issue #44: 1e308 losses and a negative lr were stored) */
    point_error("{\"step\": 1, \"train_loss\": 1e308}", "points[3].train_loss: 1e+308 is outside [0, 1e+06]");
    point_error("{\"step\": 1, \"val_loss\": -1e308}", "points[3].val_loss: -1e+308 is outside [0, 1e+06]");
    point_error("{\"step\": 1, \"train_loss\": 1, \"lr\": -0.001}", "points[3].lr: -0.001 is outside [0, 10]");
    point_error("{\"step\": 1, \"train_loss\": 1, \"grad_norm\": -1}", "points[3].grad_norm: -1 is outside [0, 1e+30]");
    point_error("{\"step\": 1, \"train_loss\": 1, \"tok_per_s\": 1e15}", "points[3].tok_per_s: 1e+15 is outside [0, 1e+12]");
    point_error("{\"step\": 1, \"train_loss\": 1, \"tokens\": -5}", "points[3].tokens: -5 is outside [0, 9.2e+18]");
}

/* An external trainer's own metrics: parsed (borrowed from the object), written back by the builder, and every
 * bound of point_extra_check (the worker's and the server's one rule) refused naming the name. */
TEST(extra_metrics_round_trip_and_bounds) {
    json_t *o = parse("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"tokens_per_s\": 1234.5, \"lr/scale.0-x_y\": -0.25}}");
    metric_point p;
    char err[256] = "";
    ASSERT_EQ_INT(0, point_from_json(o, &p, "points[0]", err, sizeof err));
    ASSERT_TRUE(p.extra != NULL);
    ASSERT_NEAR(-0.25, json_number_value(json_object_get(p.extra, "lr/scale.0-x_y")), 0);
    json_t *back = point_to_json(&p);
    char *text = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
    printf("built: %s\n", text);
    ASSERT_STREQ("{\"extra\":{\"lr/scale.0-x_y\":-0.25,\"tokens_per_s\":1234.5},\"step\":3,\"train_loss\":2.5}", text);
    free(text);
    json_decref(back);
    json_decref(o);
    o = parse("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {}}");   /* {} and null: none */
    ASSERT_EQ_INT(0, point_from_json(o, &p, "points[0]", err, sizeof err));
    ASSERT_TRUE(p.extra == NULL);
    json_decref(o);
    point_error("{\"step\": 3, \"train_loss\": 2.5, \"extra\": [1]}", "points[3].extra: must be an object {name: number}");
    point_error("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"a b\": 1}}", "points[3].extra: name \"a b\": names are 1 to 64");
    point_error("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"\": 1}}", "points[3].extra: name \"\"");
    point_error("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"x\": \"1\"}}", "points[3].extra.x: must be a finite number");
    point_error("{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"x\": null}}", "points[3].extra.x: must be a finite number");
    char big[512] = "{\"step\": 3, \"train_loss\": 2.5, \"extra\": {";
    for (int i = 0; i < POINT_EXTRA_MAX + 1; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"m%d\": %d", i ? ", " : "", i, i);
    strcat(big, "}}");
    point_error(big, "points[3].extra: 17 names: at most 16");
    char name[POINT_EXTRA_NAME_MAX + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;   /* 65 characters */
    char longer[256];
    snprintf(longer, sizeof longer, "{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"%s\": 1}}", name);
    point_error(longer, "\"...: names are 1 to 64");
    name[POINT_EXTRA_NAME_MAX] = 0;   /* 64: allowed */
    snprintf(longer, sizeof longer, "{\"step\": 3, \"train_loss\": 2.5, \"extra\": {\"%s\": 1}}", name);
    o = parse(longer);
    ASSERT_EQ_INT(0, point_from_json(o, &p, "points[0]", err, sizeof err));
    json_decref(o);
}

TEST(heartbeat_round_trips_and_names_bad_keys) {
    heartbeat h = {.step = 12, .loss = 2.5}, back;
    json_t *o = heartbeat_to_json("tok", &h);
    ASSERT_STREQ("tok", json_string_value(json_object_get(o, "lease_token")));
    char err[128] = "";
    ASSERT_EQ_INT(0, heartbeat_from_json(o, &back, err, sizeof err));
    ASSERT_EQ_INT(12, back.step);
    ASSERT_NEAR(2.5, back.loss, 0);
    json_decref(o);
    heartbeat none = {.step = -1, .loss = NAN};
    o = heartbeat_to_json("tok", &none);
    ASSERT_EQ_INT(1, json_object_size(o));   /* token only: no step, no loss before the first step */
    ASSERT_EQ_INT(0, heartbeat_from_json(o, &back, err, sizeof err));
    ASSERT_EQ_INT(-1, back.step);
    ASSERT_TRUE(isnan(back.loss));
    json_decref(o);
    o = parse("{\"step\": 1.5}");
    ASSERT_EQ_INT(-1, heartbeat_from_json(o, &back, err, sizeof err));
    ASSERT_STREQ("step: must be an integer", err);
    json_decref(o);
    o = parse("{\"step\": 3, \"loss\": \"low\"}");
    ASSERT_EQ_INT(-1, heartbeat_from_json(o, &back, err, sizeof err));
    ASSERT_STREQ("loss: must be a number", err);
    json_decref(o);
}

TEST(result_builder_writes_what_the_server_reads) {
    int heads[2] = {2, 4};
    double attn[2] = {1.5, 3.0}, vb[3] = {3.0, 3.2, 3.1};
    job_result r = {.val_loss = 3.1, .train_loss = NAN, .tok_per_s = 900, .wall_s = 12.5, .flops_per_token = 1e6,
                    .params = 12345, .steps = 40, .tokens = 4000, .heads = heads, .n_layer = 2, .device = "cpu",
                    .arch = "gpt2", .attn_distance = attn, .val_batch = vb, .val_nb = 3};
    json_t *o = jobresult_to_json(&r);
    ASSERT_TRUE(o != NULL);
    ASSERT_TRUE(json_is_null(json_object_get(o, "train_loss")));
    ASSERT_EQ_INT(2, json_array_size(json_object_get(o, "heads")));
    ASSERT_EQ_INT(3, json_integer_value(json_object_get(o, "val_batches")));
    ASSERT_NEAR(0.057735, json_number_value(json_object_get(o, "val_loss_se")), 1e-6);
    jobresult_cols c;
    ASSERT_EQ_INT(0, jobresult_columns(o, &c));
    ASSERT_NEAR(3.1, c.val_loss, 0);
    ASSERT_TRUE(c.has_tok_per_s && c.has_wall_s && c.has_params && c.has_flops_per_token);
    ASSERT_EQ_INT(12345, c.params);
    ASSERT_EQ_INT(2, json_array_size(c.attn_distance));
    json_decref(o);
}

TEST(result_aliases_are_not_read) {
    json_t *o = parse("{\"final_val_loss\": 3.0, \"tokens_per_s\": 5, \"wall_time_s\": 2, \"num_params\": 7, "
                      "\"attention_distance\": [1]}");
    jobresult_cols c;
    ASSERT_EQ_INT(-1, jobresult_columns(o, &c));   /* no val_loss: final_val_loss is not it */
    json_object_set_new(o, "val_loss", json_real(3.0));
    ASSERT_EQ_INT(0, jobresult_columns(o, &c));
    ASSERT_EQ_INT(0, c.has_tok_per_s);
    ASSERT_EQ_INT(0, c.has_wall_s);
    ASSERT_EQ_INT(0, c.has_params);
    ASSERT_TRUE(c.attn_distance == NULL);
    json_decref(o);
}
