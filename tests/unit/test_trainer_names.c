/* test_trainer_names.c — the trainer a job names, from the spec to the lease (docs/TRAINERS.md): the job
 * format's "trainer" key (common/job.c), the spec's (copied into every job), the lease request's filter
 * (common/lease.c), the server's lease path that leases a job only to a worker with its trainer
 * (orchestrator/queue.c, on a real SQLite file), and the worker's --trainer COMMAND splitting and fd-3 line
 * checks (worker/extrun.c). */
#include "harness.h"
#include "extrun.h"
#include "job.h"
#include "lease.h"
#include "queue.h"
#include "spec.h"
#include "store.h"
#include "sweeps.h"
#include "store_test_lib.h"

#define JOB_TEXT(extra) "{\"model\": {\"n_layer\": 2, \"d_model\": 8, \"vocab_size\": 64, \"seq_len\": 16, " \
    "\"heads\": [2, 2]}, \"data\": {\"train\": \"t*.bin\", \"val\": \"v*.bin\"}" extra "}"

TEST(job_trainer_key_parsed_written_and_checked) {
    struct job_config j;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(JOB_TEXT(", \"trainer\": \"torch\""), &j, err, sizeof err));
    ASSERT_STREQ("torch", j.trainer);
    json_t *o = job_to_json(&j);
    ASSERT_STREQ("torch", json_string_value(json_object_get(o, "trainer")));
    json_decref(o);
    job_release(&j);
    ASSERT_EQ_INT(0, job_parse_json(JOB_TEXT(""), &j, err, sizeof err));
    ASSERT_STREQ("", j.trainer);
    o = job_to_json(&j);
    ASSERT_TRUE(json_object_get(o, "trainer") == NULL);   /* the built-in engine: no key */
    json_decref(o);
    job_release(&j);
    static const char *const bad[] = { JOB_TEXT(", \"trainer\": \"../x\""), JOB_TEXT(", \"trainer\": \"\""),
                                       JOB_TEXT(", \"trainer\": 3"), JOB_TEXT(", \"trainer\": \"-x\"") };
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ_INT(JOB_EINVAL, job_parse_json(bad[i], &j, err, sizeof err));
        ASSERT_CONTAINS(err, "trainer: must be a trainer name");
    }
    ASSERT_TRUE(job_trainer_name_ok("fake.v2_x-1"));
    ASSERT_TRUE(!job_trainer_name_ok("a b"));
    char longname[80];
    memset(longname, 'a', 64);
    longname[64] = 0;
    ASSERT_TRUE(!job_trainer_name_ok(longname));
}

#define SPEC(extra) "{ \"name\": \"tn\", \"model\": {\"n_layer\": 2, \"d_model\": 8, \"vocab_size\": 64, " \
    "\"seq_len\": 16}, \"rules\": {\"h_base\": 2}, \"schedules\": [\"2,2\", \"1,2\"], \"seeds\": [1, 2], " \
    "\"train\": {\"batch_size\": 2, \"steps\": 10}, \"data\": {\"train\": \"t*.bin\", \"val\": \"v*.bin\"}" extra "}"

TEST(spec_trainer_key_reaches_every_job) {
    sweep_spec sp;
    char err[1024];
    /* the string form, and the object form with args: every job gets "trainer" (and "trainer_args") */
    const char *forms[] = { SPEC(", \"trainer\": \"torch\""),
                            SPEC(", \"trainer\": {\"name\": \"torch\", \"args\": {\"dropout\": 0.1}}") };
    for (int f = 0; f < 2; f++) {
        ASSERT_EQ_INT(0, spec_parse(forms[f], strlen(forms[f]), &sp, err, sizeof err));
        for (int i = 0; i < sp.n_schedules; i++) {
            json_t *job = spec_job_json(&sp, i, 1), *args = json_object_get(job, "trainer_args");
            ASSERT_STREQ("torch", json_string_value(json_object_get(job, "trainer")));
            ASSERT_TRUE(f ? json_number_value(json_object_get(args, "dropout")) == 0.1 : args == NULL);
            json_decref(job);
        }
        spec_release(&sp);
    }
    const char *t = SPEC(", \"trainer\": \"no/slash\"");
    ASSERT_TRUE(spec_parse(t, strlen(t), &sp, err, sizeof err) < 0);
    ASSERT_CONTAINS(err, "trainer: must be a trainer name");
}

/* trainer_args: an object of scalar options, checked by name and kind, written back compact with sorted keys,
 * only beside a "trainer"; the spec's {"name", "args"} form puts both keys in every job, the string form stays. */
TEST(trainer_args_parsed_checked_and_handed_to_every_job) {
    struct job_config j, c;
    char err[512];
    ASSERT_EQ_INT(0, job_parse_json(JOB_TEXT(", \"trainer\": \"torch\", \"trainer_args\": {\"z\": true, \"dropout\": 0.1, "
                                             "\"tag\": \"a b\"}"), &j, err, sizeof err));
    printf("trainer_args: %s\n", j.trainer_args);
    ASSERT_STREQ("{\"dropout\":0.10000000000000001,\"tag\":\"a b\",\"z\":true}", j.trainer_args);
    ASSERT_EQ_INT(0, job_copy(&c, &j));
    ASSERT_STREQ(j.trainer_args, c.trainer_args);
    json_t *o = job_to_json(&c);
    ASSERT_TRUE(json_is_true(json_object_get(json_object_get(o, "trainer_args"), "z")));
    json_decref(o);
    job_release(&c);
    job_release(&j);
    json_t *many = json_object();   /* 33 keys, a 257-byte string: over the bounds */
    for (int i = 0; i < JOB_TRAINER_ARGS_MAX + 1; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        json_object_set_new(many, k, json_integer(i));
    }
    ASSERT_EQ_INT(JOB_EINVAL, job_trainer_args_check(many, "trainer.args", err, sizeof err));
    ASSERT_CONTAINS(err, "trainer.args: 33 keys, at most 32");
    json_object_clear(many);
    char longs[JOB_TRAINER_ARG_STR_MAX + 2];
    memset(longs, 'x', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    json_object_set_new(many, "s", json_string(longs));
    ASSERT_EQ_INT(JOB_EINVAL, job_trainer_args_check(many, "trainer.args", err, sizeof err));
    ASSERT_CONTAINS(err, "trainer.args.s: a string of 257 bytes, at most 256");
    json_decref(many);

    sweep_spec sp;
    char serr[1024];
    static const struct { int spec; const char *text, *want; } bad[] = {   /* refusals naming the key */
        { 0, JOB_TEXT(", \"trainer\": \"t\", \"trainer_args\": {\"a\": [1]}"), "trainer_args.a: must be a string, a number or a boolean, got an array" },
        { 0, JOB_TEXT(", \"trainer\": \"t\", \"trainer_args\": {\"a\": null}"), "trainer_args.a: must be a string, a number or a boolean, got null" },
        { 0, JOB_TEXT(", \"trainer\": \"t\", \"trainer_args\": {\"a b\": 1}"), "trainer_args: key \"a b\" is not a name" },
        { 0, JOB_TEXT(", \"trainer\": \"t\", \"trainer_args\": 3"), "trainer_args: must be an object" },
        { 0, JOB_TEXT(", \"trainer_args\": {\"a\": 1}"), "trainer_args: only for a job with a \"trainer\"" },
        { 1, SPEC(", \"trainer\": {\"name\": \"torch\", \"args\": {\"dropout\": {\"p\": 1}}}"), "trainer.args.dropout: must be a string, a number or a boolean" },
        { 1, SPEC(", \"trainer\": {\"name\": \"torch\", \"argz\": {}}"), "trainer.argz: unknown key (expected one of: name, args)" },
        { 1, SPEC(", \"trainer\": {\"args\": {}}"), "trainer.name: required" },
        { 1, SPEC(", \"trainer\": {\"name\": \"a/b\"}"), "trainer: must be a trainer name" },
        { 1, SPEC(", \"trainer\": [\"torch\"]"), "trainer: must be a trainer name (\"torch\") or an object" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = bad[i].spec ? spec_parse(bad[i].text, strlen(bad[i].text), &sp, serr, sizeof serr)
                             : job_parse_json(bad[i].text, &j, serr, sizeof serr);
        printf("refused (%d): %s\n", rc, serr);
        ASSERT_TRUE(rc < 0);
        ASSERT_CONTAINS(serr, bad[i].want);
    }
}

/* The trainer (name and args) is part of what a sweep's jobs are: the same name re-created with other args is a
 * conflict naming "trainer"; "torch" and {"name": "torch"} are the same. */
TEST(sweep_recreated_with_other_trainer_args_is_a_conflict) {
    char path[4200];
    snprintf(path, sizeof path, "%s/targs.db", harness_tmpdir());
    store *st = NULL;
    char err[1024];
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    const char *a = SPEC(", \"trainer\": {\"name\": \"torch\", \"args\": {\"dropout\": 0.1}}");
    const char *b = SPEC(", \"trainer\": {\"name\": \"torch\", \"args\": {\"dropout\": 0.2}}");
    const char *n1 = SPEC(", \"trainer\": \"torch\""), *n2 = SPEC(", \"trainer\": {\"name\": \"torch\"}");
    ASSERT_EQ_INT(0, sweeps_create_json(st, a, strlen(a), &c, err, sizeof err));
    ASSERT_EQ_INT(0, sweeps_create_json(st, a, strlen(a), &c, err, sizeof err));   /* the same again: a no-op */
    ASSERT_EQ_INT(0, (int)c.jobs_created);
    int rc = sweeps_create_json(st, b, strlen(b), &c, err, sizeof err);
    printf("other args: rc %d: %s\n", rc, err);
    ASSERT_EQ_INT(STORE_ECONFLICT, rc);
    ASSERT_CONTAINS(err, "already exists with a different trainer");
    store_exec(st, "DELETE FROM sweeps");
    ASSERT_EQ_INT(0, sweeps_create_json(st, n1, strlen(n1), &c, err, sizeof err));
    ASSERT_EQ_INT(0, sweeps_create_json(st, n2, strlen(n2), &c, err, sizeof err));
    store_close(st);
}

TEST(lease_filter_request_keys) {
    lease_filter f;
    char err[256];
    json_t *b = json_loads("{\"worker_id\": 1, \"trainers\": [\"torch\", \"fake\"], \"builtin\": false}", 0, NULL);
    ASSERT_EQ_INT(LEASE_OK, lease_filter_from_json(b, &f, err, sizeof err));
    ASSERT_EQ_INT(2, f.ntrainers);
    ASSERT_EQ_INT(0, f.builtin);
    ASSERT_STREQ("fake", f.names[1]);
    json_decref(b);
    b = json_loads("{\"worker_id\": 1}", 0, NULL);   /* an older worker: the built-in engine only */
    ASSERT_EQ_INT(LEASE_OK, lease_filter_from_json(b, &f, err, sizeof err));
    ASSERT_EQ_INT(0, f.ntrainers);
    ASSERT_EQ_INT(1, f.builtin);
    json_decref(b);
    static const char *const bad[][2] = {
        { "{\"trainers\": \"torch\"}", "trainers: must be an array" },
        { "{\"trainers\": [\"a\", \"a\"]}", "trainers[1]: \"a\" repeats trainers[0]" },
        { "{\"trainers\": [1]}", "trainers[0]: must be a trainer name" },
        { "{\"builtin\": 0}", "builtin: must be true or false" },
    };
    for (int i = 0; i < 4; i++) {
        b = json_loads(bad[i][0], 0, NULL);
        ASSERT_EQ_INT(LEASE_EINVAL, lease_filter_from_json(b, &f, err, sizeof err));
        ASSERT_CONTAINS(err, bad[i][1]);
        ASSERT_EQ_INT(1, f.builtin);
        json_decref(b);
    }
}

/* One sweep of trainer "torch", one of the built-in engine: who gets which. */
TEST(queue_leases_only_what_the_worker_can_train) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/t.db", harness_tmpdir());
    store *st;
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sweeps_created c;
    const char *t1 = SPEC(", \"trainer\": \"torch\"");
    if (sweeps_create_json(st, t1, strlen(t1), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    char t2[2048];
    snprintf(t2, sizeof t2, "%s", SPEC(""));
    memcpy(strstr(t2, "\"tn\""), "\"tb\"", 4);
    if (sweeps_create_json(st, t2, strlen(t2), &c, err, sizeof err) != 0) HFAIL("create: %s", err);
    queue q;
    queue_init(&q, st, 60, 3);
    long long wid;
    ASSERT_EQ_INT(0, store_begin(st));
    ASSERT_EQ_INT(0, queue_register(&q, "w", "h", "[\"cpu\"]", &wid));
    lease_filter none, torch, other;
    lease_filter_init(&none);
    none.builtin = 0;
    lease_filter_init(&other);
    other.builtin = 0;
    snprintf(other.names[other.ntrainers++], sizeof other.names[0], "jax");
    lease_filter_init(&torch);
    torch.builtin = 0;
    snprintf(torch.names[torch.ntrainers++], sizeof torch.names[0], "torch");
    json_t *o = NULL;
    ASSERT_EQ_INT(QUEUE_EMPTY, queue_lease_for(&q, wid, "cpu", &none, &o));
    ASSERT_EQ_INT(QUEUE_EMPTY, queue_lease_for(&q, wid, "cpu", &other, &o));
    for (int i = 0; i < 4; i++) {   /* the 4 torch jobs, and only them */
        ASSERT_EQ_INT(QUEUE_OK, queue_lease_for(&q, wid, "0,1", &torch, &o));
        ASSERT_STREQ("torch", json_string_value(json_object_get(json_object_get(o, "job"), "trainer")));
        json_decref(o);
    }
    ASSERT_EQ_INT(QUEUE_EMPTY, queue_lease_for(&q, wid, "0,1", &torch, &o));
    for (int i = 0; i < 4; i++) {   /* queue_lease: the built-in engine's 4 */
        ASSERT_EQ_INT(QUEUE_OK, queue_lease(&q, wid, "cpu", &o));
        ASSERT_TRUE(json_object_get(json_object_get(o, "job"), "trainer") == NULL);
        json_decref(o);
    }
    ASSERT_EQ_INT(QUEUE_EMPTY, queue_lease(&q, wid, "cpu", &o));
    ASSERT_EQ_INT(0, store_commit(st));
    ASSERT_EQ_INT(8, qv(st, "SELECT count(*) FROM jobs WHERE state = 'leased'"));
    queue_release(&q);
    store_close(st);
}

TEST(command_split_without_a_shell) {
    char **argv, err[256];
    ASSERT_EQ_INT(5, extrun_split_command("python3  'a b' \"c \\\" d\" e\\ f $HOME", &argv, err, sizeof err));
    ASSERT_STREQ("python3", argv[0]);
    ASSERT_STREQ("a b", argv[1]);
    ASSERT_STREQ("c \" d", argv[2]);
    ASSERT_STREQ("e f", argv[3]);
    ASSERT_STREQ("$HOME", argv[4]);   /* no expansion */
    ASSERT_TRUE(argv[5] == NULL);
    extrun_free_argv(argv);
    ASSERT_EQ_INT(-1, extrun_split_command("   ", &argv, err, sizeof err));
    ASSERT_CONTAINS(err, "empty");
    ASSERT_EQ_INT(-1, extrun_split_command("x \"y", &argv, err, sizeof err));
    ASSERT_CONTAINS(err, "unclosed \"");
    ASSERT_EQ_INT(-1, extrun_split_command("x\\", &argv, err, sizeof err));
    ASSERT_CONTAINS(err, "backslash");
    extrun_set set;
    const char *specs[] = { "a=x", "a=y" };
    ASSERT_EQ_INT(-1, extrun_set_parse(&set, specs, 2, 10, 1, err, sizeof err));
    ASSERT_CONTAINS(err, "--trainer a: given twice");
}

TEST(protocol_lines_checked) {
    extrun_limits lim = { 10 };
    extrun_line l;
    char err[1024];
    const char *ok = "{\"event\":\"val\",\"step\":10,\"val_loss\":3.5,\"val_loss_se\":0.02}";
    ASSERT_EQ_INT(EXTRUN_EV_VAL, extrun_parse_line(ok, strlen(ok), &lim, &l, err, sizeof err));
    ASSERT_TRUE(json_real_value(json_object_get(l.row, "val_loss_se")) == 0.02);
    extrun_line_release(&l);
    static const char *const bad[][2] = {
        { "{\"event\":\"train\",\"step\":10,\"train_loss\":1}", "train: step: 10 is outside 0..9" },
        { "{\"event\":\"train\",\"step\":1,\"train_loss\":\"x\"}", "train: train_loss: must be a number" },
        { "{\"event\":\"train\",\"step\":1}", "train: train_loss: required" },
        { "{\"event\":\"val\",\"step\":1,\"val_loss\":1,\"val_loss_se\":-1}", "val_loss_se: must be a finite number >= 0" },
        { "{\"step\":1}", "event: required string" },
        { "[1]", "must be a JSON object" },
        { "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"steps\":9}}", "result.steps: must be the job's train.steps 10" },
        { "{\"event\":\"checkpoint\",\"step\":1,\"path\":7}", "checkpoint: path: must be a non-empty path" },
    };
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ_INT(-1, extrun_parse_line(bad[i][0], strlen(bad[i][0]), &lim, &l, err, sizeof err));
        ASSERT_CONTAINS(err, bad[i][1]);
    }
    const char *nan = "{\"event\":\"train\",\"step\":1,\"train_loss\":Infinity}";
    ASSERT_EQ_INT(EXTRUN_ENAN, extrun_parse_line(nan, strlen(nan), &lim, &l, err, sizeof err));
}

/* A train or val line's (and a result's) "extra": checked by the server's rule (common/point.h), copied into the
 * metrics row; {} is none; a bad one fails naming the line's event and the name. */
TEST(protocol_extra_metrics) {
    extrun_limits lim = { 10 };
    extrun_line l;
    char err[1024];
    const char *tr = "{\"event\":\"train\",\"step\":1,\"train_loss\":3,\"extra\":{\"tokens_per_s\":99.5,\"lr_scale\":0.5}}";
    ASSERT_EQ_INT(EXTRUN_EV_TRAIN, extrun_parse_line(tr, strlen(tr), &lim, &l, err, sizeof err));
    char *row = json_dumps(l.row, JSON_COMPACT | JSON_SORT_KEYS);
    printf("row: %s\n", row);
    ASSERT_STREQ("{\"extra\":{\"lr_scale\":0.5,\"tokens_per_s\":99.5},\"step\":1,\"train_loss\":3.0}", row);
    free(row);
    extrun_line_release(&l);
    const char *va = "{\"event\":\"val\",\"step\":10,\"val_loss\":3,\"extra\":{}}";
    ASSERT_EQ_INT(EXTRUN_EV_VAL, extrun_parse_line(va, strlen(va), &lim, &l, err, sizeof err));
    ASSERT_TRUE(json_object_get(l.row, "extra") == NULL);
    extrun_line_release(&l);
    const char *res = "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"steps\":10,\"extra\":{\"mfu\":0.4}}}";
    ASSERT_EQ_INT(EXTRUN_EV_RESULT, extrun_parse_line(res, strlen(res), &lim, &l, err, sizeof err));
    extrun_line_release(&l);
    static const char *const bad[][2] = {
        { "{\"event\":\"train\",\"step\":1,\"train_loss\":3,\"extra\":{\"a b\":1}}", "train.extra: name \"a b\": names are" },
        { "{\"event\":\"val\",\"step\":1,\"val_loss\":3,\"extra\":{\"x\":true}}", "val.extra.x: must be a finite number" },
        { "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"extra\":7}}", "result: result.extra: must be an object" },
        { "{\"event\":\"paused\",\"step\":1,\"val_loss\":3,\"extra\":{}}", "paused: unknown key \"extra\"" },
    };
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ_INT(-1, extrun_parse_line(bad[i][0], strlen(bad[i][0]), &lim, &l, err, sizeof err));
        printf("refused: %s\n", err);
        ASSERT_CONTAINS(err, bad[i][1]);
    }
}

/* A result may not name the job, attempt, lease, worker or backend (another job's id, a spoofed backend), nor
 * carry a key over EXTRUN_KEY_MAX bytes at any depth; the built-in's keys (device, heads, arch, zero_shot task
 * names up to 63 bytes) pass. */
/* The start line: optional, a version of printable ASCII, nothing else. */
TEST(protocol_start_line) {
    extrun_limits lim = { 10 };
    extrun_line l;
    char err[1024];
    const char *ok = "{\"event\":\"start\",\"version\":\"mine 1.2 (abc123)\"}", *bare = "{\"event\":\"start\"}";
    ASSERT_EQ_INT(EXTRUN_EV_START, extrun_parse_line(ok, strlen(ok), &lim, &l, err, sizeof err));
    ASSERT_STREQ("mine 1.2 (abc123)", l.version);
    extrun_line_release(&l);
    ASSERT_EQ_INT(EXTRUN_EV_START, extrun_parse_line(bare, strlen(bare), &lim, &l, err, sizeof err));
    ASSERT_STREQ("", l.version);
    extrun_line_release(&l);
    static const char *const bad[] = { "{\"event\":\"start\",\"version\":3}", "{\"event\":\"start\",\"version\":\"\"}",
                                       "{\"event\":\"start\",\"version\":\"a\\nb\"}", "{\"event\":\"start\",\"step\":1}" };
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ_INT(-1, extrun_parse_line(bad[i], strlen(bad[i]), &lim, &l, err, sizeof err));
        printf("refused %s: %s\n", bad[i], err);
        ASSERT_CONTAINS(err, "start: ");
    }
}

TEST(protocol_result_keys) {
    extrun_limits lim = { 10 };
    extrun_line l;
    char err[1024];
    const char *ok = "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"steps\":10,\"device\":\"cuda\",\"arch\":"
                     "\"gpt2\",\"heads\":[2,2],\"zero_shot\":{\"t23456789012345678901234567890123456789012345678901234567890123\":"
                     "{\"acc\":0.5,\"acc_norm\":0.5}}}}";
    ASSERT_EQ_INT(EXTRUN_EV_RESULT, extrun_parse_line(ok, strlen(ok), &lim, &l, err, sizeof err));
    extrun_line_release(&l);
    static const char *const reserved[] = { "job", "job_id", "sweep_id", "schedule_id", "attempt", "lease_token",
                                            "worker", "worker_id", "backend", "trainer_command", "trainer_version" };
    for (int i = 0; i < 11; i++) {
        char line[256], want[128];
        snprintf(line, sizeof line, "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"%s\":999}}", reserved[i]);
        snprintf(want, sizeof want, "result: result.%s: a trainer may not set it", reserved[i]);
        ASSERT_EQ_INT(-1, extrun_parse_line(line, strlen(line), &lim, &l, err, sizeof err));
        ASSERT_CONTAINS(err, want);
    }
    /* the same names deeper down are data (a task may be called "job"), but no key may be long */
    const char *deep = "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"zero_shot\":{\"job\":{\"acc\":0,\"acc_norm\":0}}}}";
    ASSERT_EQ_INT(EXTRUN_EV_RESULT, extrun_parse_line(deep, strlen(deep), &lim, &l, err, sizeof err));
    extrun_line_release(&l);
    char big[70000];
    for (int depth = 0; depth < 3; depth++) {
        char key[EXTRUN_KEY_MAX + 2];
        memset(key, 'k', EXTRUN_KEY_MAX + 1);
        key[EXTRUN_KEY_MAX + 1] = 0;
        snprintf(big, sizeof big, depth == 0 ? "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"%s\":1}}" :
                 depth == 1 ? "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"x\":{\"%s\":1}}}" :
                 "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"x\":[{\"%s\":1}]}}", key);
        ASSERT_EQ_INT(-1, extrun_parse_line(big, strlen(big), &lim, &l, err, sizeof err));
        ASSERT_CONTAINS(err, "result: a key of 65 bytes");
        ASSERT_CONTAINS(err, "keys are at most 64 bytes");
        key[EXTRUN_KEY_MAX] = 0;   /* 64 bytes: accepted */
        snprintf(big, sizeof big, "{\"event\":\"result\",\"result\":{\"val_loss\":1,\"x\":{\"%s\":1}}}", key);
        ASSERT_EQ_INT(EXTRUN_EV_RESULT, extrun_parse_line(big, strlen(big), &lim, &l, err, sizeof err));
        extrun_line_release(&l);
    }
}

/* The final val line may carry zero_shot (as the built-in's last val point does): it reaches the metrics row. */
TEST(protocol_val_zero_shot) {
    extrun_limits lim = { 10 };
    extrun_line l;
    char err[1024];
    const char *ok = "{\"event\":\"val\",\"step\":10,\"val_loss\":3.5,\"zero_shot\":{\"hs\":{\"acc\":0.25,"
                     "\"acc_norm\":0.5,\"acc_norm_char\":0.375,\"n\":8,\"truncated\":1}}}";
    ASSERT_EQ_INT(EXTRUN_EV_VAL, extrun_parse_line(ok, strlen(ok), &lim, &l, err, sizeof err));
    json_t *zs = json_object_get(json_object_get(l.row, "zero_shot"), "hs");
    ASSERT_TRUE(zs != NULL);
    ASSERT_TRUE(json_real_value(json_object_get(zs, "acc_norm")) == 0.5);
    ASSERT_TRUE(json_real_value(json_object_get(zs, "acc_norm_char")) == 0.375);   /* lm-eval's, kept */
    ASSERT_EQ_INT(8, (int)json_integer_value(json_object_get(zs, "n")));
    extrun_line_release(&l);
    static const char *const bad[][2] = {
        { "{\"event\":\"val\",\"step\":5,\"val_loss\":1,\"zero_shot\":{}}", "only on the final val line (step = train.steps 10)" },
        { "{\"event\":\"val\",\"step\":10,\"val_loss\":1,\"zero_shot\":[]}", "val: zero_shot: must be an object" },
        { "{\"event\":\"val\",\"step\":10,\"val_loss\":1,\"zero_shot\":{\"hs\":{\"acc\":2,\"acc_norm\":0}}}", "zero_shot.hs.acc: must be a number in [0, 1]" },
        { "{\"event\":\"val\",\"step\":10,\"val_loss\":1,\"zero_shot\":{\"hs\":{\"acc\":0,\"acc_norm\":0,\"acc_norm_char\":-0.5}}}",
          "zero_shot.hs.acc_norm_char: must be a number in [0, 1] (or absent)" },
        { "{\"event\":\"val\",\"step\":10,\"val_loss\":1,\"zero_shot\":{\"hs\":{\"acc\":0,\"acc_norm\":0,\"n\":-1}}}", "zero_shot.hs.n: must be an integer >= 0" },
        { "{\"event\":\"val\",\"step\":10,\"val_loss\":1,\"zero_shot\":{\"hs\":1}}", "zero_shot.hs: must be an object" },
    };
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ_INT(-1, extrun_parse_line(bad[i][0], strlen(bad[i][0]), &lim, &l, err, sizeof err));
        ASSERT_CONTAINS(err, bad[i][1]);
    }
}
