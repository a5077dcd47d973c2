/* bench_server.c — the orchestrator under load: N simulated workers (default 64) on loopback doing
 * register → (lease → metrics → complete)* against a real `prism-sweep serve` process, and, in the same run,
 * the raw SQLite durable commit rate (WAL, synchronous=FULL, one row per transaction) of this disk.
 *
 * Design: the server is started as a child process on a free port with a fresh database holding one sweep
 * (53 schedules × SEEDS seeds). Each simulated worker is a thread with its own libcurl easy handle (one
 * keep-alive connection) so the server sees 64 concurrent connections, as from 64 GPU boxes. Every request's
 * latency goes into a per-thread array; afterwards all are merged and sorted for p50/p99. A cycle is one
 * lease + one metrics batch (POINTS points) + one complete. Prints one line per figure, then a summary line.
 *   bench_server [--workers 64] [--seconds 8] [--points 32] [--seeds 400]
 */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server_bench.h"
#include "util.h"


typedef struct resp { char buf[65536]; size_t len; } resp;

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    resp *r = ud;
    size_t k = sz * n;
    if (r->len + k >= sizeof r->buf) k = sizeof r->buf - 1 - r->len;
    memcpy(r->buf + r->len, p, k);
    r->len += k;
    r->buf[r->len] = 0;
    return sz * n;
}

typedef struct worker {
    pthread_t th;
    int idx;
    CURL *c;
    struct curl_slist *hdr;
    double *lat;          /* latencies, seconds */
    size_t nlat, caplat;
    long cycles, points, errors;
    int empty;
} worker;

static char g_base[128], g_auth[256];
static double g_deadline;
static int g_points = 32;

static long post(worker *w, const char *path, const char *body, resp *r) {
    char url[256];
    snprintf(url, sizeof url, "%s%s", g_base, path);
    r->len = 0;
    r->buf[0] = 0;
    curl_easy_setopt(w->c, CURLOPT_URL, url);
    curl_easy_setopt(w->c, CURLOPT_POSTFIELDS, body);
    double t0 = util_now_s();
    CURLcode rc = curl_easy_perform(w->c);
    double dt = util_now_s() - t0;
    if (w->nlat == w->caplat) {
        w->caplat = w->caplat ? w->caplat * 2 : 4096;
        w->lat = realloc(w->lat, w->caplat * sizeof *w->lat);
    }
    w->lat[w->nlat++] = dt;
    long code = 0;
    if (rc != CURLE_OK) return -1;
    curl_easy_getinfo(w->c, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    resp *r = malloc(sizeof *r);
    char body[8192], path[128];
    w->c = curl_easy_init();
    w->hdr = curl_slist_append(NULL, g_auth);
    w->hdr = curl_slist_append(w->hdr, "Content-Type: application/json");
    curl_easy_setopt(w->c, CURLOPT_HTTPHEADER, w->hdr);
    curl_easy_setopt(w->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(w->c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(w->c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(w->c, CURLOPT_TCP_NODELAY, 1L);
    snprintf(body, sizeof body, "{\"name\": \"bench-%d\", \"host\": \"loopback\", \"devices\": [\"cpu\"]}", w->idx);
    if (post(w, "/api/v1/workers/register", body, r) != 200) { w->errors++; goto out; }
    json_t *j = json_loads(r->buf, 0, NULL);
    long long wid = json_integer_value(json_object_get(j, "worker_id"));
    json_decref(j);
    while (util_now_s() < g_deadline) {
        snprintf(body, sizeof body, "{\"worker_id\": %lld, \"device\": \"cpu\"}", wid);
        long code = post(w, "/api/v1/lease", body, r);
        if (code == 204) { w->empty = 1; break; }
        if (code != 200) { w->errors++; continue; }
        j = json_loads(r->buf, 0, NULL);
        long long job = json_integer_value(json_object_get(j, "job_id"));
        char token[160];
        snprintf(token, sizeof token, "%s", json_string_value(json_object_get(j, "lease_token")));
        json_decref(j);
        int n = snprintf(body, sizeof body, "{\"lease_token\": \"%s\", \"points\": [", token);
        for (int i = 0; i < g_points; i++)
            n += snprintf(body + n, sizeof body - n, "%s{\"step\": %d, \"train_loss\": %.4f, \"lr\": 0.0006, \"tok_per_s\": 50000}",
                          i ? "," : "", i, 6.0 - i * 0.01);
        snprintf(body + n, sizeof body - n, "]}");
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics", job);
        if (post(w, path, body, r) != 200) { w->errors++; continue; }
        w->points += g_points;
        snprintf(body, sizeof body, "{\"lease_token\": \"%s\", \"result\": {\"val_loss\": %.4f, \"tok_per_s\": 50000}}",
                 token, 3.3 + (job % 7) * 0.001);
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/complete", job);
        if (post(w, path, body, r) != 200) { w->errors++; continue; }
        w->cycles++;
    }
out:
    curl_slist_free_all(w->hdr);
    curl_easy_cleanup(w->c);
    free(r);
    return NULL;
}

/* Raw SQLite: one-row INSERT per COMMIT in WAL with synchronous=FULL for `secs`. Returns commits/s. */
static double sqlite_commit_rate(const char *path, double secs) {
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) return -1;
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (k INTEGER PRIMARY KEY, v REAL)",
                 NULL, NULL, NULL);
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(db, "INSERT INTO t (v) VALUES (?1)", -1, &s, NULL);
    long n = 0;
    double t0 = util_now_s(), t;
    while ((t = util_now_s()) - t0 < secs) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        sqlite3_bind_double(s, 1, t);
        sqlite3_step(s);
        sqlite3_reset(s);
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) break;
        n++;
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n / (util_now_s() - t0);
}

int main(int argc, char **argv) {
    int nworkers = 64, seeds = 400;
    double secs = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--workers")) nworkers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) secs = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--points")) g_points = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seeds")) seeds = atoi(argv[i + 1]);
        else { fprintf(stderr, "usage: bench_server [--workers N] [--seconds S] [--points P] [--seeds K]\n"); return 2; }
    }
    if (nworkers < 1 || nworkers > 1024 || g_points < 1 || g_points > 150 || seeds < 1 || seeds > 1000) {
        fprintf(stderr, "bench_server: --workers 1..1024, --points 1..150, --seeds 1..1000\n");
        return 2;
    }
    const char *build = getenv("PRISM_BUILD") ? getenv("PRISM_BUILD") : "build";
    char dir[] = "/tmp/prism-bench-XXXXXX", cmd[4096], db[256], specp[256];
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(db, sizeof db, "%s/bench.db", dir);
    snprintf(specp, sizeof specp, "%s/spec.json", dir);
    if (bench_write_spec(specp, "bench", seeds, 11000) < 0) { perror(specp); return 1; }
    snprintf(cmd, sizeof cmd, "%s/prism-sweep create %s --db %s", build, specp, db);
    if (system(cmd) != 0) { fprintf(stderr, "bench_server: create failed\n"); return 1; }

    int port = bench_free_port();
    char listen[64], logp[300];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(logp, sizeof logp, "%s/server.log", dir);
    char sweep_bin[512];
    snprintf(sweep_bin, sizeof sweep_bin, "%s/prism-sweep", build);
    pid_t pid = fork();
    if (pid == 0) {
        freopen(logp, "w", stderr);
        execl(sweep_bin, "prism-sweep", "serve", "--db", db, "--listen", listen, "--lease-ttl", "600", (char *)NULL);
        _exit(127);
    }
    snprintf(g_base, sizeof g_base, "http://%s", listen);
    curl_global_init(CURL_GLOBAL_ALL);
    /* wait for the server, then read the generated worker token */
    char tok[200] = "";
    for (int i = 0; i < 200; i++) {
        bench_read_token(db, tok, sizeof tok);
        CURL *c = curl_easy_init();
        char url[200];
        snprintf(url, sizeof url, "%s/healthz", g_base);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
        FILE *nul = fopen("/dev/null", "w");
        curl_easy_setopt(c, CURLOPT_WRITEDATA, nul);
        int ok = curl_easy_perform(c) == CURLE_OK;
        curl_easy_cleanup(c);
        fclose(nul);
        if (ok && tok[0]) break;
        usleep(50000);
    }
    if (!tok[0]) { fprintf(stderr, "bench_server: server did not start (see %s)\n", logp); kill(pid, SIGKILL); return 1; }
    snprintf(g_auth, sizeof g_auth, "Authorization: Bearer %s", tok);

    char load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) { if (fgets(load, sizeof load, la)) load[strcspn(load, " ")] = 0; fclose(la); }
    worker *ws = calloc((size_t)nworkers, sizeof *ws);
    double t0 = util_now_s();
    g_deadline = t0 + secs;
    for (int i = 0; i < nworkers; i++) { ws[i].idx = i; pthread_create(&ws[i].th, NULL, worker_main, &ws[i]); }
    for (int i = 0; i < nworkers; i++) pthread_join(ws[i].th, NULL);
    double elapsed = util_now_s() - t0;
    /* the server's own count of group commits */
    long long commits = -1;
    {
        resp *r = calloc(1, sizeof *r);
        CURL *c = curl_easy_init();
        char url[200];
        snprintf(url, sizeof url, "%s/metrics", g_base);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        if (curl_easy_perform(c) == CURLE_OK) {
            const char *m = strstr(r->buf, "\nprism_commits_total ");
            if (m) commits = atoll(m + strlen("\nprism_commits_total "));
        }
        curl_easy_cleanup(c);
        free(r);
    }
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);

    long cycles = 0, points = 0, errors = 0;
    size_t nlat = 0;
    int drained = 0;
    for (int i = 0; i < nworkers; i++) { cycles += ws[i].cycles; points += ws[i].points; errors += ws[i].errors; nlat += ws[i].nlat; drained |= ws[i].empty; }
    double *all = malloc((nlat ? nlat : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < nworkers; i++) { memcpy(all + k, ws[i].lat, ws[i].nlat * sizeof *all); k += ws[i].nlat; free(ws[i].lat); }
    qsort(all, nlat, sizeof *all, bench_cmp_double);
    double p50 = nlat ? all[nlat / 2] : 0, p99 = nlat ? all[(size_t)(nlat * 0.99)] : 0, pmax = nlat ? all[nlat - 1] : 0;
    char rawp[300];
    snprintf(rawp, sizeof rawp, "%s/raw.db", dir);
    double raw = sqlite_commit_rate(rawp, 2.0);

    printf("workers               %d simulated (threads, one keep-alive connection each), %.1f s%s, %ld cores, "
           "load average %s at start\n", nworkers, elapsed, drained ? " (queue drained)" : "", sysconf(_SC_NPROCESSORS_ONLN), load);
    printf("cycles/s              %.0f   (lease + metrics[%d points] + complete; %ld cycles)\n", cycles / elapsed, g_points, cycles);
    printf("requests/s            %.0f   (%zu requests, %ld errors)\n", nlat / elapsed, nlat, errors);
    printf("metric points/s       %.0f\n", points / elapsed);
    printf("latency p50/p99/max   %.2f / %.2f / %.2f ms\n", p50 * 1e3, p99 * 1e3, pmax * 1e3);
    printf("raw sqlite commits/s  %.0f   (WAL, synchronous=FULL, 1 row per commit, same disk)\n", raw);
    if (commits > 0)
        printf("server commits/s      %.0f   (group commit: %.1f write requests per fsync)\n", commits / elapsed,
               (double)(cycles * 3 + nworkers) / commits);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    int bad = errors > 0;
    if (system(cmd) != 0) bad = 1;
    free(all);
    free(ws);
    curl_global_cleanup();
    return bad;
}
