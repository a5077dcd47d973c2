/* fuzz_request.c — libFuzzer target over the orchestrator's whole request path: http-parser session
 * (http.c) → routing, auth, JSON caps and handlers (api.c) → queue/sweeps/leaderboard SQL on a real
 * temporary SQLite database → group commit (api_flush). No sockets: the bytes are fed to a session as
 * if they had arrived on a connection, split in two reads at a point chosen by the first input byte so
 * that the parser's resumption across reads is exercised too.
 *
 * The database is created once with one sweep (3 schedules × 2 seeds) and one worker, and the tokens are
 * fixed ("Bearer fuzz-worker-token-0001", "Bearer fuzz-admin-token-00001") so that inputs from the seed
 * corpus reach the worker and admin handlers. Built and run by fuzz/run.sh (`make fuzz`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "http.h"
#include "store.h"
#include "sweeps.h"

static api g_api;
static store *g_st;

static const char spec[] =
    "{\"name\": \"fuzz\", \"model\": {\"n_layer\": 4, \"d_model\": 64, \"vocab_size\": 256, \"padded_vocab_size\": 256,"
    " \"seq_len\": 32}, \"rules\": {\"h_base\": 4}, \"schedules\": [\"1,1,4,4\", \"2,2,4,4\"], \"seeds\": [1, 2],"
    " \"train\": {\"batch_size\": 2, \"seq_len\": 32, \"grad_accum\": 1, \"steps\": 10, \"lr\": 0.001, \"lr_schedule\":"
    " \"constant\", \"warmup_steps\": 0, \"min_lr_frac\": 0.1, \"beta1\": 0.9, \"beta2\": 0.95, \"eps\": 1e-8,"
    " \"weight_decay\": 0.1, \"grad_clip\": 1.0, \"shuffle\": false}, \"eval\": {\"every\": 5, \"batches\": 1,"
    " \"attn_distance\": true}, \"data\": {\"train\": \"d/train_*.bin\", \"val\": \"d/val_*.bin\"}}";

static void setup(void) {
    char dir[200], path[320], err[512];
    const char *tmp = getenv("TMPDIR");   /* the corpus replay test points this at its own directory */
    snprintf(dir, sizeof dir, "%s/prism-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 100 ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/fuzz.db", dir);
    if (store_open(path, &g_st, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); abort(); }
    store_exec(g_st, "PRAGMA synchronous=OFF");   /* speed; durability is not what is fuzzed */
    sweeps_created cr;
    if (sweeps_create_json(g_st, spec, strlen(spec), &cr, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); abort(); }
    char web[300];
    snprintf(web, sizeof web, "%s/web", dir);
    mkdir(web, 0700);
    snprintf(path, sizeof path, "%s/index.html", web);
    FILE *f = fopen(path, "w");
    if (f) { fputs("<!doctype html>", f); fclose(f); }
    auth_tokens t;
    memset(&t, 0, sizeof t);
    snprintf(t.worker, sizeof t.worker, "fuzz-worker-token-0001");
    snprintf(t.admin, sizeof t.admin, "fuzz-admin-token-00001");
    api_config cfg = { .lease_ttl = 60, .max_attempts = 3, .public_read = 1, .web_dir = web };
    if (api_init(&g_api, g_st, &t, &cfg, err, sizeof err) < 0) { fprintf(stderr, "%s\n", err); abort(); }
}

/* The entry point (tests/unit/test_fuzz_corpus.c replays the corpus through it with gcc); returns 0. */
int fuzz_request_one(const uint8_t *data, size_t size) {
    if (!g_st) setup();
    http_session s;
    http_session_init(&s, api_handle, &g_api);
    size_t cut = size ? (size_t)data[0] % (size + 1) : 0;
    if (http_session_feed(&s, (const char *)data, cut) == 0 && size > cut)
        http_session_feed(&s, (const char *)data + cut, size - cut);
    api_flush(&g_api);
    api_expire(&g_api);
    api_flush(&g_api);
    /* every answer must be a well-formed status line */
    if (s.out.len && strncmp(s.out.data, "HTTP/1.1 ", 9) != 0) abort();
    /* what the network may store stays bounded: no step past its job's steps, no checkpoint path but a
     * worker's own file name, no request-made sweep over API_MAX_CREATE_JOBS jobs */
    static const char *const bounds[] = {
        "SELECT count(*) FROM jobs WHERE steps > 0 AND step > steps",
        "SELECT count(*) FROM jobs WHERE checkpoint_path IS NOT NULL AND NOT (checkpoint_path GLOB '/*/job-[0-9]*-a[0-9]*/resume-[0-9]*.bin' "
        "OR checkpoint_path GLOB '/*/job-[0-9]*-a[0-9]*/ckpt_[0-9]*.bin')",
        "SELECT count(*) FROM (SELECT sweep_id FROM jobs GROUP BY sweep_id HAVING count(*) > 5000)",
    };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(g_st->db, bounds[i], -1, &q, NULL) != SQLITE_OK) abort();
        if (sqlite3_step(q) != SQLITE_ROW) abort();
        if (sqlite3_column_int(q, 0) != 0) { fprintf(stderr, "fuzz_request: bound violated: %s\n", bounds[i]); abort(); }
        sqlite3_finalize(q);
    }
    http_session_release(&s);
    return 0;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_request_one(data, size);
}
#endif
