/* test_checkpoint.c — llm.c model files and training-state checkpoints: identical round trips,
 * llm.c compatibility of the header, clear errors for bad files, and exact resume through train_run.
 * timeout: 180
 */
#include "harness.h"
#include "checkpoint.h"
#include "job.h"
#include "model.h"
#include "shard.h"
#include "train.h"
#include <stdint.h>
#include <sys/stat.h>

static struct model_config tiny(void) {
    struct model_config c = {.L = 4, .C = 32, .V = 50, .Vp = 64, .maxT = 16, .heads = {1, 2, 4, 4}, .B = 2, .T = 16};
    return c;
}

TEST(model_file_round_trip_is_identical_and_llmc_shaped) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/model.bin", harness_tmpdir());
    struct model_config c = tiny();
    size_t n = model_num_params(&c);
    float *p = malloc(n * 4), *q = malloc(n * 4);
    model_init_params(&c, 7, p);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    struct stat st;
    ASSERT_EQ_INT(0, stat(path, &st));
    ASSERT_EQ_INT(1024 + 4 * n, st.st_size);
    int32_t h[256];
    FILE *f = fopen(path, "rb");
    ASSERT_EQ_INT(256, fread(h, 4, 256, f));
    fclose(f);
    /* llm.c's slots: magic, version, maxT, V, L, NH, C, Vp; ours: heads in 8.. */
    int want[8] = {20240326, 3, 16, 50, 4, 4, 32, 64};
    for (int i = 0; i < 8; i++) ASSERT_EQ_INT(want[i], h[i]);
    ASSERT_EQ_INT(1, h[8]); ASSERT_EQ_INT(2, h[9]); ASSERT_EQ_INT(4, h[10]); ASSERT_EQ_INT(4, h[11]);
    ASSERT_EQ_INT(0, h[12]);
    ASSERT_EQ_INT(0, ckpt_read_model(path, &c, q, err, sizeof err));
    ASSERT_EQ_INT(0, memcmp(p, q, n * 4));
    struct model_config r;
    int has = -1;
    ASSERT_EQ_INT(0, ckpt_read_model_header(path, &r, &has, err, sizeof err));
    ASSERT_EQ_INT(1, has);
    ASSERT_EQ_INT(2, r.heads[1]);
    free(p); free(q);
}

TEST(llmc_file_without_head_slots_reads_as_uniform) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/llmc.bin", harness_tmpdir());
    struct model_config c = tiny();
    size_t n = model_num_params(&c);
    int32_t h[256] = {20240326, 3, 16, 50, 4, 8, 32, 64};     /* as llm.c writes it: NH=8, slots 8.. zero */
    float *p = calloc(n, 4);
    FILE *f = fopen(path, "wb");
    fwrite(h, 4, 256, f); fwrite(p, 4, n, f); fclose(f);
    struct model_config r;
    int has = -1;
    ASSERT_EQ_INT(0, ckpt_read_model_header(path, &r, &has, err, sizeof err));
    ASSERT_EQ_INT(0, has);
    for (int l = 0; l < 4; l++) ASSERT_EQ_INT(8, r.heads[l]);
    /* the job's schedule decides: reading into a 1,2,4,4 model works */
    ASSERT_EQ_INT(0, ckpt_read_model(path, &c, p, err, sizeof err));
    free(p);
}

TEST(bad_model_files_give_clear_errors) {
    char dir[4096], path[4200], err[1024];
    snprintf(dir, sizeof dir, "%s", harness_tmpdir());
    struct model_config c = tiny();
    size_t n = model_num_params(&c);
    float *p = calloc(n, 4);
    snprintf(path, sizeof path, "%s/m.bin", dir);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    ASSERT_EQ_INT(0, truncate(path, 1024 + 4 * n - 8));
    ASSERT_EQ_INT(CKPT_EFORMAT, ckpt_read_model(path, &c, p, err, sizeof err));
    ASSERT_CONTAINS(err, "m.bin: file is");
    ASSERT_CONTAINS(err, "so expected");
    /* a model of another shape */
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));
    struct model_config other = c;
    other.C = 64; other.heads[0] = 2;
    float *big = calloc(model_num_params(&other), 4);
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_model(path, &other, big, err, sizeof err));
    ASSERT_CONTAINS(err, "model is L=4 C=32");
    ASSERT_CONTAINS(err, "job wants L=4 C=64");
    /* bf16 llm.c files (version 5) are refused by name */
    int32_t h[256] = {20240326, 5, 16, 50, 4, 4, 32, 64};
    snprintf(path, sizeof path, "%s/bf16.bin", dir);
    FILE *f = fopen(path, "wb"); fwrite(h, 4, 256, f); fclose(f);
    ASSERT_EQ_INT(CKPT_EFORMAT, ckpt_read_model(path, &c, p, err, sizeof err));
    ASSERT_CONTAINS(err, "bf16.bin: version 5, expected 3");
    snprintf(path, sizeof path, "%s/nope.bin", dir);
    ASSERT_EQ_INT(CKPT_EIO, ckpt_read_model(path, &c, p, err, sizeof err));
    ASSERT_CONTAINS(err, "nope.bin: cannot open checkpoint");
    free(p); free(big);
}

TEST(state_round_trip_and_mismatch) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/s.bin", harness_tmpdir());
    struct model_config c = tiny();
    size_t n = model_num_params(&c);
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4), *p2 = malloc(n * 4), *m2 = malloc(n * 4), *v2 = malloc(n * 4);
    model_init_params(&c, 1, p);
    for (size_t i = 0; i < n; i++) { m[i] = (float)i * 1e-6f; v[i] = (float)(n - i) * 1e-7f; }
    struct ckpt_state st = {.step = 12, .data_pos = 5000000000ULL, .rng = 0xdeadbeefcafeULL, .seed = 42, .B = 2, .T = 16, .grad_accum = 3}, got;
    ASSERT_EQ_INT(0, ckpt_write_state(path, &c, &st, p, m, v, err, sizeof err));
    ASSERT_EQ_INT(0, ckpt_read_state(path, &c, &st, &got, p2, m2, v2, err, sizeof err));
    ASSERT_EQ_INT(12, got.step);
    ASSERT_TRUE(got.data_pos == 5000000000ULL && got.rng == 0xdeadbeefcafeULL && got.seed == 42);
    ASSERT_EQ_INT(3, got.grad_accum);
    ASSERT_EQ_INT(0, memcmp(p, p2, n * 4)); ASSERT_EQ_INT(0, memcmp(m, m2, n * 4)); ASSERT_EQ_INT(0, memcmp(v, v2, n * 4));
    /* another schedule or seed is refused, naming both */
    struct model_config u = c;
    for (int l = 0; l < 4; l++) u.heads[l] = 4;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_state(path, &u, &st, &got, p2, m2, v2, err, sizeof err));
    ASSERT_CONTAINS(err, "heads are 1,2,4,4 but the job has 4,4,4,4");
    struct ckpt_state other = st;
    other.seed = 43;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_state(path, &c, &other, &got, p2, m2, v2, err, sizeof err));
    ASSERT_CONTAINS(err, "seed is 42 but the job has 43");
    /* a model file is not a state file */
    char mp[4300];
    snprintf(mp, sizeof mp, "%s.model", path);
    ASSERT_EQ_INT(0, ckpt_write_model(mp, &c, p, err, sizeof err));
    ASSERT_EQ_INT(CKPT_EFORMAT, ckpt_read_state(mp, &c, &st, &got, p2, m2, v2, err, sizeof err));
    ASSERT_CONTAINS(err, "this is a model file");
    /* truncated */
    ASSERT_EQ_INT(0, truncate(path, 1024 + 3 * 4 * n - 4));
    ASSERT_EQ_INT(CKPT_EFORMAT, ckpt_read_state(path, &c, &st, &got, p2, m2, v2, err, sizeof err));
    ASSERT_CONTAINS(err, "s.bin: file is");
    ASSERT_CONTAINS(err, "truncated?");
    free(p); free(m); free(v); free(p2); free(m2); free(v2);
}

/* One flipped byte anywhere in a training state (the params, AdamW m or v, or a header slot the reader does
 * not otherwise check) is refused as corrupt, naming the file: it silently changed results (5.4194 → 5.4301)
 * or made a NaN and a permanent failure. */
TEST(state_with_a_flipped_byte_is_refused_by_its_checksum) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/s.bin", harness_tmpdir());
    struct model_config c = tiny();
    size_t n = model_num_params(&c);
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4), *x = malloc(n * 12);
    model_init_params(&c, 1, p);
    for (size_t i = 0; i < n; i++) { m[i] = (float)i * 1e-6f; v[i] = (float)(n - i) * 1e-7f; }
    struct ckpt_state st = {.step = 12, .data_pos = 77, .rng = 5, .seed = 42, .B = 2, .T = 16, .grad_accum = 1}, got;
    long at[] = { 1024 + 3, 1024 + (long)n * 4 + 100, 1024 + (long)n * 8 + (long)n * 4 - 1, 30 * 4, 10 * 4 };
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        ASSERT_EQ_INT(0, ckpt_write_state(path, &c, &st, p, m, v, err, sizeof err));
        ASSERT_EQ_INT(0, ckpt_read_state(path, &c, &st, &got, x, x + n, x + 2 * n, err, sizeof err));
        FILE *f = fopen(path, "r+b");
        ASSERT_TRUE(f != NULL);
        fseek(f, at[k], SEEK_SET);
        int b = fgetc(f);
        fseek(f, at[k], SEEK_SET);
        fputc(b ^ 0x10, f);
        fclose(f);
        err[0] = 0;
        int rc = ckpt_read_state(path, &c, &st, &got, x, x + n, x + 2 * n, err, sizeof err);
        printf("byte %ld flipped: rc %d: %s\n", at[k], rc, err);
        ASSERT_EQ_INT(CKPT_EFORMAT, rc);
        ASSERT_CONTAINS(err, "s.bin: checksum mismatch");
        ASSERT_CONTAINS(err, "not loaded");
    }
    free(p); free(m); free(v); free(x);
}

/* Found by fuzz/fuzz_checkpoint.c: with L > 224 the reader compared heads past the 256-int header (stack
 * overflow; garbage made a valid file "mismatch"). The state header holds the first 224 layers' heads. */
TEST(state_with_more_layers_than_head_slots_round_trips) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/deep.bin", harness_tmpdir());
    struct model_config c = {.L = 240, .C = 2, .V = 3, .Vp = 4, .maxT = 2, .B = 1, .T = 2};
    for (int l = 0; l < c.L; l++) c.heads[l] = l < 120 ? 1 : 2;
    size_t n = model_num_params(&c);
    float *p = calloc(n, 4), *m = calloc(n, 4), *v = calloc(n, 4);
    for (size_t i = 0; i < n; i++) { p[i] = (float)i; m[i] = 0.5f; v[i] = 0.25f; }
    struct ckpt_state st = {.step = 3, .data_pos = 9, .rng = 11, .seed = 5, .B = 1, .T = 2, .grad_accum = 1}, got;
    ASSERT_EQ_INT(0, ckpt_write_state(path, &c, &st, p, m, v, err, sizeof err));
    memset(p, 0, n * 4);
    ASSERT_EQ_INT(0, ckpt_read_state(path, &c, &st, &got, p, m, v, err, sizeof err));
    ASSERT_EQ_INT(3, got.step);
    ASSERT_NEAR(7.0, p[7], 0);
    /* a change in a stored layer is still caught */
    c.heads[0] = 2;
    ASSERT_EQ_INT(CKPT_EMISMATCH, ckpt_read_state(path, &c, &st, &got, p, m, v, err, sizeof err));
    ASSERT_CONTAINS(err, "heads are 1,1,1");
    free(p); free(m); free(v);
}

/* ---- resume through train_run --------------------------------------------------------------------- */
static void make_data(const char *dir) {
    char path[4200], err[512];
    uint16_t *t = malloc(20000 * 2);
    uint64_t s = 9;
    for (int i = 0; i < 20000; i++) { s = s * 6364136223846793005ULL + 1442695040888963407ULL; t[i] = (uint16_t)((s >> 33) % 50); }
    snprintf(path, sizeof path, "%s/tr_000.bin", dir);
    if (shard_write(path, t, 15000, err, sizeof err)) HFAIL("%s", err);
    snprintf(path, sizeof path, "%s/va_000.bin", dir);
    if (shard_write(path, t + 15000, 5000, err, sizeof err)) HFAIL("%s", err);
    free(t);
}

static void tiny_job(struct job_config *j, const char *dir) {
    char text[9000], err[512];
    snprintf(text, sizeof text,
             "{\"model\":{\"n_layer\":4,\"d_model\":32,\"vocab_size\":50,\"seq_len\":16,\"heads\":[1,2,4,4]},"
             "\"train\":{\"batch_size\":2,\"steps\":12,\"lr\":0.003,\"warmup_steps\":2,\"grad_accum\":2,\"checkpoint_every\":4},"
             "\"eval\":{\"every\":3,\"batches\":2},"
             "\"data\":{\"train\":\"%s/tr_*.bin\",\"val\":\"%s/va_*.bin\"}}", dir, dir);
    if (job_parse_json(text, j, err, sizeof err)) HFAIL("%s", err);
}

struct stopper { volatile int flag; int at; };
static void stop_at(void *ctx, const struct train_progress *p) {
    struct stopper *s = ctx;
    if (p->step + 1 == s->at) s->flag = 2;          /* like SIGTERM after update at->-1 */
}

/* metrics.jsonl without the timing field */
static char *metrics_without_timing(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) HFAIL("cannot open %s", path);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(cap, 1), *line = NULL;
    size_t lc = 0;
    while (getline(&line, &lc, f) > 0) {
        json_t *row = json_loads(line, 0, NULL);
        if (!row) HFAIL("bad metrics line %s", line);
        json_object_del(row, "tok_per_s");
        char *s = json_dumps(row, JSON_SORT_KEYS | JSON_COMPACT);
        len += snprintf(out + len, cap - len, "%s\n", s);
        free(s);
        json_decref(row);
    }
    free(line);
    fclose(f);
    return out;
}

TEST(stop_checkpoint_resume_matches_uninterrupted_run) {
    char base[4096], a[4200], b[4200], err[1024];
    snprintf(base, sizeof base, "%s", harness_tmpdir());
    make_data(base);
    snprintf(a, sizeof a, "%s/straight", base);
    snprintf(b, sizeof b, "%s/interrupted", base);
    struct job_config j;
    tiny_job(&j, base);
    struct train_opts o = {.out_dir = a, .quiet = 1, .err = err, .errlen = sizeof err};
    ASSERT_EQ_INT(0, train_run(&j, &o));
    /* interrupted: stop request 2 after update 6 (not a checkpoint_every multiple) */
    struct stopper s = {.flag = 0, .at = 7};
    struct train_result res;
    struct train_opts o2 = {.out_dir = b, .stop = &s.flag, .on_progress = stop_at, .ctx = &s, .err = err,
                            .errlen = sizeof err, .result = &res};
    ASSERT_EQ_INT(TRAIN_EPREEMPTED, train_run(&j, &o2));
    ASSERT_CONTAINS(res.checkpoint, "ckpt_7.bin");
    ASSERT_CONTAINS(err, "stopped at step 7");
    struct stat st;
    char old[4300];
    snprintf(old, sizeof old, "%s/ckpt_4.bin", b);
    ASSERT_TRUE(stat(old, &st) != 0);                 /* the older checkpoint was replaced */
    char ck[4096];
    snprintf(ck, sizeof ck, "%s", res.checkpoint);
    struct train_opts o3 = {.out_dir = b, .resume = ck, .quiet = 1, .err = err, .errlen = sizeof err, .result = &res};
    ASSERT_EQ_INT(0, train_run(&j, &o3));
    ASSERT_EQ_INT(7, res.resumed_from);
    char *ma = metrics_without_timing(a), *mb = metrics_without_timing(b);
    ASSERT_STREQ(ma, mb);
    /* and the final weights are bit-identical */
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/model.bin", a);
    snprintf(pb, sizeof pb, "%s/model.bin", b);
    FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
    ASSERT_TRUE(fa && fb);
    int ca, cb;
    long same = 0;
    do { ca = getc(fa); cb = getc(fb); if (ca != cb) HFAIL("model.bin differs at byte %ld", same); same++; } while (ca != EOF);
    fclose(fa); fclose(fb);
    ASSERT_TRUE(same > 1024);
    free(ma); free(mb);
    job_release(&j);
}

/* A stop request that arrives while a resumed run is still starting: the checkpoint written then is at the
 * resumed step, and the result says so (the agent reports res.steps_done as the checkpoint's step). */
TEST(stop_right_after_resume_reports_the_resumed_step) {
    char base[4096], a[4200], b[4200], err[1024];
    snprintf(base, sizeof base, "%s", harness_tmpdir());
    make_data(base);
    snprintf(a, sizeof a, "%s/first", base);
    snprintf(b, sizeof b, "%s/second", base);
    struct job_config j;
    tiny_job(&j, base);
    struct stopper s = {.flag = 0, .at = 5};
    struct train_result res;
    struct train_opts o = {.out_dir = a, .stop = &s.flag, .on_progress = stop_at, .ctx = &s, .err = err,
                           .errlen = sizeof err, .result = &res};
    ASSERT_EQ_INT(TRAIN_EPREEMPTED, train_run(&j, &o));
    ASSERT_EQ_INT(5, res.steps_done);
    char ck[4096];
    snprintf(ck, sizeof ck, "%s", res.checkpoint);
    volatile int stop_now = 2;
    struct train_opts o2 = {.out_dir = b, .resume = ck, .stop = &stop_now, .quiet = 1, .err = err,
                            .errlen = sizeof err, .result = &res};
    ASSERT_EQ_INT(TRAIN_EPREEMPTED, train_run(&j, &o2));
    ASSERT_EQ_INT(5, res.resumed_from);
    ASSERT_EQ_INT(5, res.steps_done);
    ASSERT_CONTAINS(res.checkpoint, "ckpt_5.bin");
    job_release(&j);
}

TEST(resume_refuses_a_checkpoint_of_another_schedule) {
    char base[4096], a[4200], err[1024];
    snprintf(base, sizeof base, "%s", harness_tmpdir());
    make_data(base);
    snprintf(a, sizeof a, "%s/run", base);
    struct job_config j;
    tiny_job(&j, base);
    struct train_result res;
    struct train_opts o = {.out_dir = a, .quiet = 1, .err = err, .errlen = sizeof err, .result = &res};
    ASSERT_EQ_INT(0, train_run(&j, &o));
    ASSERT_CONTAINS(res.checkpoint, "ckpt_8.bin");
    char ck[4096];
    snprintf(ck, sizeof ck, "%s", res.checkpoint);
    for (int l = 0; l < 4; l++) j.model.heads[l] = 4;
    struct train_opts o2 = {.out_dir = a, .resume = ck, .quiet = 1, .err = err, .errlen = sizeof err};
    ASSERT_EQ_INT(TRAIN_ECHECKPOINT, train_run(&j, &o2));
    ASSERT_CONTAINS(err, "heads are 1,2,4,4 but the job has 4,4,4,4");
    job_release(&j);
}
