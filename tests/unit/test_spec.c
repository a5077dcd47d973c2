/* test_spec.c — sweep specs (orchestrator/spec.c) and the store's sweeps (orchestrator/sweeps.c): validation
 * errors naming the JSON path, expansion to schedules x seeds, the job JSON each row holds, one-transaction
 * idempotent creation, counts per state, and the committed sweeps/ specs.
 * timeout: 60
 */
#include "harness.h"
#include "job.h"
#include "spec.h"
#include "store.h"
#include "sweeps.h"
#include "store_test_lib.h"

#define TINY_MODEL "\"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, \"padded_vocab_size\": 256, " \
                   "\"seq_len\": 64}"
#define TINY_TRAIN "\"train\": {\"batch_size\": 2, \"seq_len\": 32, \"steps\": 10, \"lr\": 0.001}"
#define TINY_DATA "\"data\": {\"train\": \"data/*train*.bin\", \"val\": \"data/*val*.bin\"}"

static char spec_buf[8192];
/* A valid tiny spec with `extra` inserted (a trailing comma is needed in extra) */
static const char *tiny(const char *extra) {
    snprintf(spec_buf, sizeof spec_buf, "{ \"name\": \"t\", %s " TINY_MODEL ", \"rules\": {\"h_base\": 4, "
             "\"max_head_dim\": 0, \"min_block\": 1, \"max_block\": 2}, \"seeds\": [1, 2], " TINY_TRAIN ", "
             "\"eval\": {\"every\": 5, \"batches\": 2}, " TINY_DATA " }", extra);
    return spec_buf;
}

static void expect_error(const char *text, const char *needle) {
    sweep_spec sp;
    char err[1024];
    int rc = spec_parse(text, strlen(text), &sp, err, sizeof err);
    if (rc == 0) HFAIL("spec accepted, expected an error containing \"%s\": %s", needle, text);
    ASSERT_CONTAINS(err, needle);
    ASSERT_TRUE(sp.root == NULL && sp.heads == NULL);  /* nothing left to free */
}

static void parse_ok(const char *text, sweep_spec *sp) {
    char err[1024];
    if (spec_parse(text, strlen(text), sp, err, sizeof err) != 0) HFAIL("spec refused: %s", err);
}

static char *heads_of(const sweep_spec *sp, int i) {
    static char buf[512];
    schedule_format(sp->heads + (size_t)i * sp->n_layer, sp->n_layer, buf, sizeof buf);
    return buf;
}

TEST(tiny_spec_expands_in_order_with_baseline_first) {
    sweep_spec sp;
    parse_ok(tiny(""), &sp);
    ASSERT_STREQ("t", sp.name);
    ASSERT_EQ_INT(6, sp.n_schedules);
    ASSERT_EQ_INT(2, sp.n_seeds);
    ASSERT_EQ_INT(10, sp.steps);
    ASSERT_STREQ("4,4,4,4", heads_of(&sp, 0));
    ASSERT_TRUE(spec_is_baseline(&sp, 0));
    ASSERT_STREQ("2,4,4,4", heads_of(&sp, 1));
    ASSERT_STREQ("1,1,4,4", heads_of(&sp, 5));
    ASSERT_TRUE(!spec_is_baseline(&sp, 5));
    spec_release(&sp);
}

TEST(job_json_is_the_job_format_and_parses) {
    sweep_spec sp;
    parse_ok(tiny(""), &sp);
    json_t *job = spec_job_json(&sp, 2, 1);
    ASSERT_TRUE(job != NULL);
    char *s = json_dumps(job, JSON_COMPACT);
    ASSERT_CONTAINS(s, "\"heads\":[2,2,4,4]");
    ASSERT_CONTAINS(s, "\"seed\":2");
    ASSERT_CONTAINS(s, "\"vocab_size\":256");
    ASSERT_CONTAINS(s, "\"train\":\"data/*train*.bin\"");
    free(s);
    struct job_config cfg;
    char err[512];
    ASSERT_EQ_INT(0, job_from_json(job, &cfg, err, sizeof err));
    ASSERT_EQ_INT(4, cfg.model.n_layer);
    ASSERT_EQ_INT(2, cfg.model.heads[0]);
    ASSERT_EQ_INT(4, cfg.model.heads[3]);
    ASSERT_EQ_INT(2, (long long)cfg.train.seed);
    ASSERT_EQ_INT(10, cfg.train.steps);
    job_release(&cfg);
    json_decref(job);
    spec_release(&sp);
}

TEST(errors_name_the_json_path) {
    expect_error("{", "not valid JSON");
    expect_error("[1]", "a sweep spec is a JSON object");
    expect_error(tiny("\"colour\": 1,"), "colour: unknown key");
    expect_error(tiny("\"priority\": \"high\","), "priority: must be an integer in -1000000..1000000");
    /* name */
    expect_error("{\"model\": {}}", "name: required");
    /* train.lr via the job module */
    char t[8192];
    snprintf(t, sizeof t, "%s", tiny(""));
    char *p = strstr(t, "\"lr\": 0.001");
    memcpy(p, "\"lr\": -1.00", 11);
    expect_error(t, "train.lr: must be");
    /* model */
    expect_error("{\"name\": \"x\", \"model\": {\"n_layer\": 0, \"d_model\": 64}}", "model.n_layer: must be in 1..");
    expect_error("{\"name\": \"x\", \"model\": {\"n_layer\": 4}}", "model.d_model: required");
    expect_error("{\"name\": \"x\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"heads\": [4,4,4,4]}}",
                 "model.heads: the heads come from");
}

TEST(rule_errors_name_rules_keys) {
    char s[8192];
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"min_block\": 0}, \"seeds\": [1], "
             TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.min_block: must be in 1..4096 (got 0)");
    snprintf(s, sizeof s, "{\"name\": \"x\", \"model\": {\"n_layer\": 4, \"d_model\": 100, \"vocab_size\": 256, "
             "\"seq_len\": 64}, \"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.h_base: defaults to d_model/64, but 100/64 is not an integer");
}

TEST(rule_errors_more) {
    char s[8192];
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 5}, \"seeds\": [1], "
             TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.h_base: must be a divisor of d_model 64");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"heads\": [3]}, "
             "\"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.heads: 3 does not divide d_model 64");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"pow2\": 1}, "
             "\"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.pow2: must be true or false");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4, \"size\": 1}, "
             "\"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "rules.size: unknown key");
}

TEST(seed_errors) {
    char s[8192];
    const char *bad[][2] = {
        { "[]", "seeds: required" }, { "[1, 1]", "seeds[1]: 1 repeats seeds[0]" }, { "[-3]", "seeds[0]" },
        { "\"1\"", "seeds: required" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, \"seeds\": %s, "
                 TINY_TRAIN ", " TINY_DATA "}", bad[i][0]);
        expect_error(s, bad[i][1]);
    }
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, \"seeds\": [1], "
             "\"train\": {\"steps\": 5, \"seed\": 3}, " TINY_DATA "}");
    expect_error(s, "train.seed: each job's seed comes from the top-level \"seeds\"");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, \"seeds\": [1], "
             TINY_TRAIN "}");
    expect_error(s, "data: required");
}

TEST(explicit_list_include_exclude_sample) {
    char s[8192];
    sweep_spec sp;
    /* explicit list: hard rules only, baseline added first */
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, "
             "\"schedules\": [\"1,2,4,4\", [2,2,2,4], \"1x3,4\"], \"seeds\": [7], " TINY_TRAIN ", " TINY_DATA "}");
    parse_ok(s, &sp);
    ASSERT_EQ_INT(4, sp.n_schedules);
    ASSERT_STREQ("4,4,4,4", heads_of(&sp, 0));
    ASSERT_STREQ("1,2,4,4", heads_of(&sp, 1));
    ASSERT_STREQ("1,1,1,4", heads_of(&sp, 3));
    spec_release(&sp);
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, "
             "\"schedules\": [\"1,2,4,4\", \"4,2,4,4\"], \"seeds\": [7], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "schedules[1]: layer 2 (block 2): 2 heads after 4 in layer 1");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, "
             "\"schedules\": [\"1,2,4,4\", \"1,2,4,4\"], \"seeds\": [7], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "schedules[1]: 1,2,4,4 is listed twice");
    snprintf(s, sizeof s, "{\"name\": \"x\", " TINY_MODEL ", \"rules\": {\"h_base\": 4}, "
             "\"schedules\": [\"1,2,4\"], \"seeds\": [7], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "schedules[0]: length");
    /* include adds (hard rules only), exclude removes, sample draws */
    snprintf(s, sizeof s, "%s", tiny("\"include\": [\"1,1,1,4\", \"1,1,4,4\"], \"exclude\": [\"2,4,4,4\"],"));
    parse_ok(s, &sp);
    ASSERT_EQ_INT(6, sp.n_schedules);  /* 6 + 1 new - 1 excluded (1,1,4,4 already there) */
    for (int i = 0; i < sp.n_schedules; i++) ASSERT_TRUE(strcmp(heads_of(&sp, i), "2,4,4,4") != 0);
    ASSERT_STREQ("1,1,1,4", heads_of(&sp, 5));
    spec_release(&sp);
    expect_error(tiny("\"exclude\": [\"4,4,4,4\"],"), "the uniform baseline cannot be excluded");
    expect_error(tiny("\"exclude\": [\"1,2,2,4\"],"), "exclude[0]: 1,2,2,4 is not in the sweep's schedules");
    parse_ok(tiny("\"sample\": {\"n\": 3, \"seed\": 5},"), &sp);
    ASSERT_GE_INT(sp.n_schedules, 3);
    ASSERT_STREQ("4,4,4,4", heads_of(&sp, 0));
    spec_release(&sp);
    expect_error(tiny("\"sample\": {\"n\": 7},"), "sample.n: must be in 1..6 (got 7)");
}

TEST(too_many_schedules_asks_for_sample) {
    char s[8192];
    snprintf(s, sizeof s, "{\"name\": \"x\", \"model\": {\"n_layer\": 200, \"d_model\": 720720, \"vocab_size\": 256,"
             " \"seq_len\": 64}, \"rules\": {\"h_base\": 720720, \"max_head_dim\": 0, \"min_block\": 1, "
             "\"max_block\": 0}, \"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "add \"sample\"");
}

/* Found by fuzzing specs: n_layer 4096 (no job can have it) was only refused after enumerating ~90,000
 * schedules of 4096 layers (7 s, 2.2 GB). It is now refused first, with the job's bound in the message. */
TEST(deeper_than_a_job_is_refused_before_enumerating) {
    char s[8192];
    snprintf(s, sizeof s, "{\"name\": \"deep\", \"model\": {\"n_layer\": 4096, \"d_model\": 64, \"vocab_size\": 256,"
             " \"seq_len\": 32}, \"rules\": {\"h_base\": 4, \"max_head_dim\": 0, \"heads\": [1, 2], \"min_block\": 1,"
             " \"max_block\": 300, \"min_baseline\": 0.5}, \"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    expect_error(s, "model.n_layer: must be in 1..240 (got 4096)");
    snprintf(s, sizeof s, "{\"name\": \"x\", \"model\": {\"n_layer\": 240, \"d_model\": 64, \"vocab_size\": 256, "
             "\"padded_vocab_size\": 256, \"seq_len\": 32}, \"rules\": {\"h_base\": 4}, \"schedules\": [\"1,4x239\"],"
             " \"seeds\": [1], " TINY_TRAIN ", " TINY_DATA "}");
    sweep_spec sp;
    char err[600] = "";
    ASSERT_EQ_INT(0, spec_parse(s, strlen(s), &sp, err, sizeof err));
    ASSERT_EQ_INT(2, sp.n_schedules);
    spec_release(&sp);
}

/* ---- the store ------------------------------------------------------------------------------------ */
static store *fresh_store(void) {
    static char path[4200];
    char err[512];
    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    store *st = NULL;
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    return st;
}

TEST(create_is_one_transaction_and_idempotent) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny("\"priority\": 5,");
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_EQ_INT(1, c.sweep_is_new);
    ASSERT_EQ_INT(6, c.schedules_created);
    ASSERT_EQ_INT(12, c.jobs_created);
    ASSERT_EQ_INT(12, qv(st, "SELECT count(*) FROM jobs WHERE state = 'queued' AND priority = 5 AND steps = 10"));
    ASSERT_EQ_INT(1, qv(st, "SELECT count(*) FROM schedules WHERE is_baseline = 1 AND heads = '4,4,4,4' AND ord = 0"));
    ASSERT_EQ_INT(6, qv(st, "SELECT count(*) FROM jobs WHERE seed = 2 AND seed_index = 1"));
    /* ids follow the lease order: all first seeds (baseline first) before any second seed */
    ASSERT_EQ_INT(6, qv(st, "SELECT max(id) FROM jobs WHERE seed_index = 0"));
    ASSERT_EQ_INT(1, qv(st, "SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.is_baseline = 1 "
                           "AND j.seed_index = 0"));
    ASSERT_EQ_INT(7, qv(st, "SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.is_baseline = 1 "
                           "AND j.seed_index = 1"));
    ASSERT_EQ_INT(1, qv(st, "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.heads = "
                           "'1,2,4,4' AND j.seed = 1 AND json_extract(j.job, '$.train.seed') = 1 AND "
                           "json_extract(j.job, '$.model.heads[1]') = 2"));
    /* again: nothing new, same id */
    sweeps_created c2;
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c2, err, sizeof err));
    ASSERT_EQ_INT(c.sweep_id, c2.sweep_id);
    ASSERT_EQ_INT(0, c2.sweep_is_new);
    ASSERT_EQ_INT(0, c2.schedules_created);
    ASSERT_EQ_INT(0, c2.jobs_created);
    ASSERT_EQ_INT(12, c2.jobs_total);
    ASSERT_EQ_INT(12, qv(st, "SELECT count(*) FROM jobs"));
    ASSERT_EQ_INT(1, qv(st, "SELECT count(*) FROM sweeps"));
    store_close(st);
}

TEST(unique_constraints_not_luck) {
    /* a second insert of the same (schedule, seed) is refused by the schema itself */
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny("");
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_TRUE(store_exec(st, "INSERT INTO jobs (sweep_id, schedule_id, seed, seed_index, job, created_at, "
                               "updated_at) SELECT sweep_id, schedule_id, seed, seed_index, job, 0, 0 FROM jobs "
                               "LIMIT 1") < 0);
    ASSERT_CONTAINS(st->err, "UNIQUE");
    ASSERT_TRUE(store_exec(st, "INSERT INTO schedules (sweep_id, heads, ord) VALUES (1, '4,4,4,4', 9)") < 0);
    store_close(st);
}

TEST(adding_a_seed_adds_only_its_jobs) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024], t[8192];
    snprintf(t, sizeof t, "%s", tiny(""));
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    char *p = strstr(t, "\"seeds\": [1, 2]");
    memcpy(p, "\"seeds\": [1, 3]", 15);
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_EQ_INT(0, c.sweep_is_new);
    ASSERT_EQ_INT(6, c.jobs_created);
    ASSERT_EQ_INT(18, c.jobs_total);
    store_close(st);
}

TEST(same_name_other_training_is_a_conflict) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024], t[8192];
    snprintf(t, sizeof t, "%s", tiny(""));
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    char *p = strstr(t, "\"lr\": 0.001");
    memcpy(p, "\"lr\": 0.002", 11);
    ASSERT_EQ_INT(STORE_ECONFLICT, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_CONTAINS(err, "already exists with a different train");
    ASSERT_EQ_INT(12, qv(st, "SELECT count(*) FROM jobs"));
    /* a bad spec is STORE_EINVAL and writes nothing */
    ASSERT_EQ_INT(STORE_EINVAL, sweeps_create_json(st, "{}", 2, &c, err, sizeof err));
    ASSERT_EQ_INT(1, qv(st, "SELECT count(*) FROM sweeps"));
    store_close(st);
}

TEST(create_inside_callers_transaction_uses_a_savepoint) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny("");
    ASSERT_EQ_INT(0, store_begin(st));
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_TRUE(!sqlite3_get_autocommit(st->db));   /* still the caller's transaction */
    store_rollback(st);
    ASSERT_EQ_INT(0, qv(st, "SELECT count(*) FROM jobs"));
    store_close(st);
}

TEST(counts_per_state_and_list) {
    store *st = fresh_store();
    sweeps_created c;
    char err[1024];
    const char *t = tiny("");
    ASSERT_EQ_INT(0, sweeps_create_json(st, t, strlen(t), &c, err, sizeof err));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'done' WHERE id IN (1, 2, 3)"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'leased' WHERE id = 4"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'failed' WHERE id = 5"));
    ASSERT_EQ_INT(0, store_exec(st, "UPDATE jobs SET state = 'cancelled' WHERE id = 6"));
    sweeps_counts k;
    ASSERT_EQ_INT(0, sweeps_count_states(st, c.sweep_id, &k));
    ASSERT_EQ_INT(6, k.queued); ASSERT_EQ_INT(1, k.leased); ASSERT_EQ_INT(3, k.done);
    ASSERT_EQ_INT(1, k.failed); ASSERT_EQ_INT(1, k.cancelled); ASSERT_EQ_INT(12, k.total);
    int64_t id;
    ASSERT_EQ_INT(0, sweeps_find(st, "t", &id));
    ASSERT_EQ_INT(c.sweep_id, id);
    ASSERT_EQ_INT(STORE_ENOTFOUND, sweeps_find(st, "nope", &id));
    sweeps_info *v;
    int n;
    ASSERT_EQ_INT(0, sweeps_list(st, &v, &n));
    ASSERT_EQ_INT(1, n);
    ASSERT_EQ_INT(6, v[0].n_schedules);
    ASSERT_EQ_INT(3, v[0].counts.done);
    json_t *o = sweeps_info_json(&v[0]);
    char *s = json_dumps(o, JSON_COMPACT);
    ASSERT_CONTAINS(s, "\"done\":3");
    ASSERT_CONTAINS(s, "\"name\":\"t\"");
    free(s);
    json_decref(o);
    free(v);
    store_close(st);
}

/* ---- the committed specs --------------------------------------------------------------------------- */
static void load_spec(const char *name, sweep_spec *sp) {
    char path[4200], err[1024];
    const char *root = getenv("PRISM_ROOT");
    snprintf(path, sizeof path, "%s/sweeps/%s", root ? root : ".", name);
    if (spec_load(path, sp, NULL, err, sizeof err) != 0) HFAIL("%s", err);
}

static int has_schedule(const sweep_spec *sp, const char *h) {
    for (int i = 0; i < sp->n_schedules; i++)
        if (!strcmp(heads_of(sp, i), h)) return 1;
    return 0;
}

TEST(committed_specs_are_valid_and_match_the_paper) {
    sweep_spec sp;
    load_spec("gpt2-124m.json", &sp);
    ASSERT_EQ_INT(12, sp.n_layer); ASSERT_EQ_INT(768, sp.d_model); ASSERT_EQ_INT(12, sp.rules.h_base);
    ASSERT_EQ_INT(3, sp.n_seeds); ASSERT_EQ_INT(11000, sp.steps);
    ASSERT_EQ_INT(56, sp.n_schedules);   /* the 53 of the default rules + 3 paper schedules outside them */
    ASSERT_TRUE(has_schedule(&sp, "3,3,6,6,8,8,12,12,12,12,12,12"));
    ASSERT_TRUE(has_schedule(&sp, "2,4,6,8,12,12,12,12,12,12,12,12"));
    json_t *tr = json_object_get(sp.root, "train");
    long long tokens = json_integer_value(json_object_get(tr, "batch_size")) *
                       json_integer_value(json_object_get(tr, "seq_len")) *
                       json_integer_value(json_object_get(tr, "grad_accum"));
    ASSERT_EQ_INT(1 << 18, tokens);
    ASSERT_NEAR(6e-4, json_real_value(json_object_get(tr, "lr")), 1e-12);
    spec_release(&sp);
    load_spec("gpt2-354m.json", &sp);
    ASSERT_EQ_INT(24, sp.n_layer); ASSERT_EQ_INT(1024, sp.d_model); ASSERT_EQ_INT(16, sp.rules.h_base);
    ASSERT_TRUE(has_schedule(&sp, "4,4,4,8,8,8,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16"));
    spec_release(&sp);
    load_spec("gpt2-757m.json", &sp);
    ASSERT_EQ_INT(24, sp.n_layer); ASSERT_EQ_INT(1536, sp.d_model); ASSERT_EQ_INT(16, sp.rules.h_base);
    ASSERT_TRUE(has_schedule(&sp, "6,6,6,12,12,12,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16"));
    tr = json_object_get(sp.root, "train");
    tokens = json_integer_value(json_object_get(tr, "batch_size")) * json_integer_value(json_object_get(tr, "seq_len")) *
             json_integer_value(json_object_get(tr, "grad_accum"));
    ASSERT_EQ_INT(1 << 19, tokens);
    spec_release(&sp);
    load_spec("tiny-cpu.json", &sp);
    ASSERT_GE_INT(sp.n_schedules, 3);
    ASSERT_EQ_INT(2, sp.n_seeds);
    spec_release(&sp);
}

/* Every committed spec shuffles (each seed its own data order, the same for every schedule): train.shuffle is
 * true or left to the job's default, which is true (tests/unit/test_job.c checks that default). */
TEST(committed_specs_shuffle_by_default) {
    static const char *const names[] = { "gpt2-124m.json", "gpt2-354m.json", "gpt2-757m.json", "tiny-cpu.json" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        sweep_spec sp;
        load_spec(names[i], &sp);
        json_t *sh = json_object_get(json_object_get(sp.root, "train"), "shuffle");
        if (sh && !json_is_true(sh)) HFAIL("%s: train.shuffle is %s, expected true (or absent)", names[i], json_is_false(sh) ? "false" : "not a boolean");
        spec_release(&sp);
    }
}
