/* bench_fleet.c — one orchestrator under a fleet's traffic: N boxes × G devices on loopback, in one process.
 *
 * Design: a real `prism-sweep serve` child on a free port with a fresh database (one sweep, 53 schedules ×
 * enough seeds for every device to lease a job and complete a few). The fleet is a libuv loop in this
 * process: each box is one keep-alive TCP connection carrying its devices' requests one at a time (http-parser
 * reads the answers, jansson the JSON). Boxes join in waves of at most RAMP_WAVE at once (register, then one
 * lease per device), as a fleet starts over seconds, not in the same millisecond; they all come from
 * 127.0.0.1, so a wave stays under the server's per-address cap on connections without a token. Then, for
 * --seconds, each device on its own jittered clock: a heartbeat every heartbeat_every_s (the server's
 * answer to register), a metrics batch of --points train rows every --metrics-every s, and at the end of its
 * job (--job-seconds × U(0.5, 1.5)) complete + lease. A box's timer fires at its devices' next event.
 * Latency is from the request's write to its whole answer, per route, measured after the ramp. The server
 * process's CPU time and RSS come from /proc, the WAL's size is sampled every 100 ms, the database's logical
 * size (page_count × page_size, WAL included) from a read-only connection at both ends of the window,
 * the longest group COMMIT and the connection counters from the server's /metrics.
 * Any transport error, unexpected status (anything but 200, or 204 to a lease) or a connection closed by
 * the server is an error; the exit status is 1 when there was any.
 *   bench_fleet [--boxes 2000] [--devices 8] [--seconds 60] [--metrics-every 5] [--points 8]
 *               [--job-seconds 600] [--lease-ttl 120] [--server-nice N] [--quiet]
 * --server-nice N runs the server at that nice value (negative needs root): on a machine shared with other
 * work it stands for a box where the orchestrator has its CPU to itself.
 *
 * Size: one file of ~730 lines: the simulated fleet, the server child and the report belong to one run; what
 * the other benches share with it is in server_bench.h and bench_util.h.
 */
#include <http_parser.h>
#include <jansson.h>
#include <netinet/in.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "server_bench.h"
#include "util.h"

#define RAMP_WAVE 32
enum { R_REGISTER, R_LEASE, R_HEARTBEAT, R_METRICS, R_COMPLETE, N_ROUTES };
static const char *const route_name[N_ROUTES] = { "register", "lease", "heartbeat", "metrics", "complete" };

static double urand(void) { return rand() / (RAND_MAX + 1.0); }

typedef struct dev {
    long long job;
    char token[128];
    long step;
    double next_hb, next_metrics, job_end;
    int running, drained;
    unsigned queued;            /* bit per route already waiting in the box's queue */
} dev;

typedef struct box {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_timer_t timer;
    http_parser parser;
    int id, ndev;
    long long worker_id;
    dev *devs;
    int q[64], qh, qn;          /* queued requests: dev * N_ROUTES + route (dev -1 → register) */
    int busy, cur;
    double t_sent;
    char *body;
    size_t blen, bcap;
    int done_msg;
    int connected, ramped, open;
    int ramp_answers;           /* lease answers while joining */
} box;

typedef struct lat { double *v; size_t n, cap; } lat;

static struct {
    int boxes, devices, points, quiet, server_nice;
    double seconds, metrics_every, job_seconds, lease_ttl, hb;
    char auth[256];
    struct sockaddr_in addr;
    uv_loop_t *loop;
    box *bx;
    int next_box, ramping, ramped;
    int measuring, finished;
    double t_meas;
    lat lat[N_ROUTES];
    long errors[N_ROUTES], transport_errors, closed, drained, skipped_late;
    long requests;
    char first_error[512];
    uv_timer_t stop_timer, wal_timer;
    char walp[600];
    long long wal_max;
} G;

static void lat_add(lat *l, double v) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = v;
}

static void note_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_error(const char *fmt, ...) {
    if (G.first_error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(G.first_error, sizeof G.first_error, fmt, ap);
    va_end(ap);
}

static void box_pump(box *b);
static void box_connect(box *b);
static void box_arm(box *b);

static void enqueue(box *b, int devi, int route) {
    if (devi >= 0) {
        if (b->devs[devi].queued & (1u << route)) { G.skipped_late++; return; }   /* previous one still waiting */
        b->devs[devi].queued |= 1u << route;
    }
    if (b->qn == (int)(sizeof b->q / sizeof b->q[0])) { G.skipped_late++; return; }
    b->q[(b->qh + b->qn++) % 64] = devi < 0 ? -1 : devi * N_ROUTES + route;
}

static void ramp_next(void) {
    while (G.ramping < RAMP_WAVE && G.next_box < G.boxes) {
        box *b = &G.bx[G.next_box++];
        G.ramping++;
        box_connect(b);
    }
}

/* ---- requests -------------------------------------------------------------------------------------- */

typedef struct wreq { uv_write_t req; box *b; char data[]; } wreq;   /* one per write: its callback may come
                                                                        after the answer was read */
static void on_written(uv_write_t *w, int status) {
    wreq *r = (wreq *)w;
    if (status < 0 && !G.finished) { G.transport_errors++; note_error("box %d: write: %s", r->b->id, uv_strerror(status)); }
    free(r);
}

static void send_req(box *b, const char *path, const char *json) {
    size_t jl = strlen(json);
    size_t cap = jl + strlen(path) + 512;
    wreq *w = malloc(sizeof *w + cap);
    w->b = b;
    int n = snprintf(w->data, cap, "POST %s HTTP/1.1\r\nHost: fleet\r\n%s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s", path, G.auth, jl, json);
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)n);
    b->t_sent = util_now_s();
    b->busy = 1;
    b->blen = 0;
    b->done_msg = 0;
    G.requests++;
    if (uv_write(&w->req, (uv_stream_t *)&b->tcp, &buf, 1, on_written) < 0) {
        free(w);
        b->busy = 0;
        G.transport_errors++;
    }
}

static void box_pump(box *b) {
    if (b->busy || !b->qn || !b->connected) return;
    int e = b->q[b->qh];
    b->qh = (b->qh + 1) % 64;
    b->qn--;
    b->cur = e;
    static char js[65536];
    char path[128];
    if (e < 0) {
        snprintf(js, sizeof js, "{\"name\": \"fleet-box-%d\", \"host\": \"box%d\", \"devices\": [0,1,2,3,4,5,6,7]}", b->id, b->id);
        send_req(b, "/api/v1/workers/register", js);
        return;
    }
    int di = e / N_ROUTES, r = e % N_ROUTES;
    dev *d = &b->devs[di];
    d->queued &= ~(1u << r);
    if (r == R_LEASE) {
        snprintf(js, sizeof js, "{\"worker_id\": %lld, \"device\": \"%d\"}", b->worker_id, di);
        send_req(b, "/api/v1/lease", js);
        return;
    }
    if (!d->running) { b->cur = -2; box_pump(b); return; }   /* its job ended before this went out */
    if (r == R_HEARTBEAT) {
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/heartbeat", d->job);
        snprintf(js, sizeof js, "{\"lease_token\": \"%s\", \"step\": %ld, \"loss\": %.4f}", d->token, d->step,
                 3.3 + 3.0 / (1 + d->step * 0.01));
    } else if (r == R_METRICS) {
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/metrics", d->job);
        int n = snprintf(js, sizeof js, "{\"lease_token\": \"%s\", \"points\": [", d->token);
        for (int i = 0; i < G.points && n < (int)sizeof js - 200; i++, d->step++)
            n += snprintf(js + n, sizeof js - n, "%s{\"step\": %ld, \"train_loss\": %.4f, \"lr\": 0.0006, \"tok_per_s\": 400000}",
                          i ? "," : "", d->step, 3.3 + 3.0 / (1 + d->step * 0.01));
        snprintf(js + n, sizeof js - n, "]}");
    } else {
        snprintf(path, sizeof path, "/api/v1/jobs/%lld/complete", d->job);
        snprintf(js, sizeof js, "{\"lease_token\": \"%s\", \"result\": {\"val_loss\": %.4f, \"tok_per_s\": 400000}}",
                 d->token, 3.3 + (d->job % 11) * 0.001);
        d->running = 0;
    }
    send_req(b, path, js);
}

static void box_joined(box *b) {
    b->ramped = 1;
    G.ramping--;
    G.ramped++;
    ramp_next();
}

/* One answer is complete: account for it and act on it. */
static void box_answer(box *b) {
    int st = b->parser.status_code;
    double dt = util_now_s() - b->t_sent;
    int e = b->cur, r = e < 0 ? R_REGISTER : e % N_ROUTES, di = e < 0 ? -1 : e / N_ROUTES;
    b->busy = 0;
    if (G.measuring) lat_add(&G.lat[r], dt);
    int ok = st == 200 || (r == R_LEASE && st == 204);
    if (!ok) {
        G.errors[r]++;
        note_error("box %d %s: HTTP %d: %.300s", b->id, route_name[r], st, b->body ? b->body : "");
    }
    json_t *j = ok && st == 200 && b->blen ? json_loadb(b->body, b->blen, 0, NULL) : NULL;
    double t = util_now_s();
    if (r == R_REGISTER && !j && !b->ramped) box_joined(b);   /* failed: counted; let the others join */
    if (r == R_REGISTER && j) {
        b->worker_id = json_integer_value(json_object_get(j, "worker_id"));
        double hb = json_number_value(json_object_get(j, "heartbeat_every_s"));
        if (hb > 0) G.hb = hb;
        for (int i = 0; i < b->ndev; i++) enqueue(b, i, R_LEASE);
    } else if (r == R_LEASE) {
        dev *d = &b->devs[di];
        if (j) {
            d->job = json_integer_value(json_object_get(j, "job_id"));
            snprintf(d->token, sizeof d->token, "%s", json_string_value(json_object_get(j, "lease_token")) ?: "");
            d->step = 0;
            d->running = 1;
            d->next_hb = t + G.hb * urand();
            d->next_metrics = t + G.metrics_every * urand();
            d->job_end = t + G.job_seconds * (0.5 + urand());
        } else if (ok) {
            d->drained = 1;
            G.drained++;
        }
        if (!b->ramped && ++b->ramp_answers == b->ndev) box_joined(b);   /* every device has its first answer */
    } else if (r == R_COMPLETE && ok) {
        enqueue(b, di, R_LEASE);
    }
    json_decref(j);
    box_arm(b);
}

/* ---- http-parser (answers) ------------------------------------------------------------------------- */

static int p_body(http_parser *p, const char *at, size_t n) {
    box *b = p->data;
    if (b->blen + n + 1 > b->bcap) {
        b->bcap = (b->blen + n + 1) * 2;
        b->body = realloc(b->body, b->bcap);
    }
    memcpy(b->body + b->blen, at, n);
    b->blen += n;
    b->body[b->blen] = 0;
    return 0;
}
static int p_begin(http_parser *p) { box *b = p->data; b->blen = 0; if (b->body) b->body[0] = 0; return 0; }
static int p_complete(http_parser *p) { ((box *)p->data)->done_msg = 1; http_parser_pause(p, 1); return 0; }
static const http_parser_settings psettings = { .on_message_begin = p_begin, .on_body = p_body,
                                                .on_message_complete = p_complete };

static char g_rbuf[65536];
static void on_alloc(uv_handle_t *h, size_t s, uv_buf_t *buf) { buf->base = g_rbuf; buf->len = sizeof g_rbuf; }

static void box_closed(uv_handle_t *h) {
    box *b = h->data;
    b->open = 0;
    if (!G.finished) box_connect(b);   /* reconnect (already counted as an error) */
}

static void box_drop(box *b, const char *why) {
    if (G.finished) return;
    G.closed++;
    note_error("box %d: connection lost: %s", b->id, why);
    b->connected = 0;
    b->busy = 0;
    uv_read_stop((uv_stream_t *)&b->tcp);
    uv_close((uv_handle_t *)&b->tcp, box_closed);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    box *b = s->data;
    if (n < 0) { box_drop(b, n == UV_EOF ? "closed by the server" : uv_strerror((int)n)); return; }
    size_t off = 0;
    while (off < (size_t)n) {
        size_t k = http_parser_execute(&b->parser, &psettings, buf->base + off, (size_t)n - off);
        off += k;
        if (HTTP_PARSER_ERRNO(&b->parser) == HPE_PAUSED) http_parser_pause(&b->parser, 0);
        else if (HTTP_PARSER_ERRNO(&b->parser) != HPE_OK) { box_drop(b, "malformed answer"); return; }
        if (b->done_msg) { b->done_msg = 0; box_answer(b); }
        else if (k == 0) break;
    }
    box_pump(b);
}

static void on_connect(uv_connect_t *c, int status) {
    box *b = c->data;
    if (status < 0) {
        G.transport_errors++;
        note_error("box %d: connect: %s", b->id, uv_strerror(status));
        uv_close((uv_handle_t *)&b->tcp, box_closed);
        return;
    }
    b->connected = 1;
    uv_tcp_nodelay(&b->tcp, 1);
    http_parser_init(&b->parser, HTTP_RESPONSE);
    b->parser.data = b;
    uv_read_start((uv_stream_t *)&b->tcp, on_alloc, on_read);
    if (!b->worker_id) enqueue(b, -1, R_REGISTER);
    box_pump(b);
}

static void box_connect(box *b) {
    uv_tcp_init(G.loop, &b->tcp);
    b->tcp.data = b;
    b->open = 1;
    b->creq.data = b;
    if (uv_tcp_connect(&b->creq, &b->tcp, (struct sockaddr *)&G.addr, on_connect) < 0) {
        G.transport_errors++;
        uv_close((uv_handle_t *)&b->tcp, NULL);
        b->open = 0;
    }
}

/* ---- device clocks --------------------------------------------------------------------------------- */

static void box_tick(uv_timer_t *t) {
    box *b = t->data;
    double now = util_now_s();
    for (int i = 0; i < b->ndev; i++) {
        dev *d = &b->devs[i];
        if (!d->running) continue;
        if (now >= d->job_end) {
            if (!(d->queued & (1u << R_COMPLETE))) { enqueue(b, i, R_METRICS); enqueue(b, i, R_COMPLETE); }
            d->job_end = now + 1e9;
            continue;
        }
        if (now >= d->next_hb) { enqueue(b, i, R_HEARTBEAT); d->next_hb += G.hb * (0.9 + 0.2 * urand()); }
        if (now >= d->next_metrics) { enqueue(b, i, R_METRICS); d->next_metrics += G.metrics_every * (0.9 + 0.2 * urand()); }
    }
    box_pump(b);
    box_arm(b);
}

static void box_arm(box *b) {
    double next = 1e18, now = util_now_s();
    for (int i = 0; i < b->ndev; i++) {
        dev *d = &b->devs[i];
        if (!d->running) continue;
        if (d->next_hb < next) next = d->next_hb;
        if (d->next_metrics < next) next = d->next_metrics;
        if (d->job_end < next) next = d->job_end;
    }
    if (next > 1e17) { uv_timer_stop(&b->timer); return; }
    double ms = (next - now) * 1000;
    uv_timer_start(&b->timer, box_tick, ms > 0 ? (uint64_t)ms + 1 : 0, 0);
}

/* ---- the server process ---------------------------------------------------------------------------- */

static pid_t g_pid;
static char g_db[512];

static int proc_cpu(pid_t pid, double *cpu_s) {
    unsigned long long t[2];   /* utime, stime */
    if (util_proc_stat(pid, 14, 2, t) < 0) return -1;
    *cpu_s = (double)(t[0] + t[1]) / sysconf(_SC_CLK_TCK);
    return 0;
}

static long proc_status_kb(pid_t pid, const char *key) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') { v = atol(line + kl + 1); break; }
    fclose(f);
    return v;
}

/* Bytes the process has caused to be written to storage (/proc/PID/io write_bytes), or -1. */
static long long proc_write_bytes(pid_t pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/io", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    long long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "write_bytes:", 12) == 0) { v = atoll(line + 12); break; }
    fclose(f);
    return v;
}

static long long db_logical_bytes(void) {
    sqlite3 *db = NULL;
    long long v = -1;
    if (sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(db, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size", -1, &s, NULL) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return v;
}

static void wal_sample(uv_timer_t *t) {
    struct stat sb;
    if (stat(G.walp, &sb) == 0 && sb.st_size > G.wal_max) G.wal_max = sb.st_size;
}

/* GET path on a fresh blocking socket; returns the body (malloc'd) or NULL. */
static char *http_get(const char *path) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return NULL;
    if (connect(s, (struct sockaddr *)&G.addr, sizeof G.addr) < 0) { close(s); return NULL; }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: fleet\r\n%s\r\nConnection: close\r\n\r\n", path, G.auth);
    if (write(s, req, (size_t)n) != n) { close(s); return NULL; }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t k;
    while ((k = read(s, buf + len, cap - len - 1)) > 0) {
        len += (size_t)k;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    close(s);
    buf[len] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    if (!body) { free(buf); return NULL; }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

static double prom_value(const char *text, const char *name) {
    if (!text) return -1;
    size_t nl = strlen(name);
    for (const char *p = text; (p = strstr(p, name)); p += nl)
        if ((p == text || p[-1] == '\n') && p[nl] == ' ') return atof(p + nl + 1);
    return -1;
}

/* ---- run ------------------------------------------------------------------------------------------- */

static struct { double cpu0, t0; long long db0, wb0; double points0, commits0, commit_s0, sync_s0, syncs0; } M;

static void stop_run(uv_timer_t *t) {
    G.finished = 1;
    uv_stop(G.loop);
}

static void start_measuring(void) {
    G.measuring = 1;
    G.t_meas = util_now_s();
    proc_cpu(g_pid, &M.cpu0);
    M.t0 = G.t_meas;
    M.db0 = db_logical_bytes();
    M.wb0 = proc_write_bytes(g_pid);
    char *m = http_get("/metrics");
    M.points0 = prom_value(m, "prism_metric_points_total");
    M.commits0 = prom_value(m, "prism_commits_total");
    M.commit_s0 = prom_value(m, "prism_commit_seconds_sum");
    M.sync_s0 = prom_value(m, "prism_sync_seconds_sum");
    M.syncs0 = prom_value(m, "prism_sync_seconds_count");
    free(m);
    G.wal_max = 0;
    for (int r = 0; r < N_ROUTES; r++) G.errors[r] = 0;
    G.requests = 0;
    uv_timer_start(&G.stop_timer, stop_run, (uint64_t)(G.seconds * 1000), 0);
}

static double g_t_ramp;
static void ramp_watch(uv_timer_t *t) {
    if (G.ramped >= G.boxes && !G.measuring) { uv_timer_stop(t); start_measuring(); return; }
    if (util_now_s() - g_t_ramp > 60 + G.boxes * 0.05) {   /* far beyond any ramp seen: report what happened */
        note_error("ramp not finished: %d of %d boxes joined", G.ramped, G.boxes);
        G.transport_errors++;
        uv_timer_stop(t);
        start_measuring();
    }
}

static void usage(void) {
    fprintf(stderr, "usage: bench_fleet [--boxes N (1..20000)] [--devices G (1..32)] [--seconds S] [--metrics-every S] "
                    "[--points P (1..500)] [--job-seconds S] [--lease-ttl S] [--server-nice N] [--quiet]\n");
}

int main(int argc, char **argv) {
    G.boxes = 2000; G.devices = 8; G.seconds = 60; G.metrics_every = 5; G.points = 8; G.job_seconds = 600;
    G.lease_ttl = 120;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quiet")) { G.quiet = 1; continue; }
        if (!v) { usage(); return 2; }
        if (!strcmp(a, "--boxes")) G.boxes = atoi(v);
        else if (!strcmp(a, "--devices")) G.devices = atoi(v);
        else if (!strcmp(a, "--seconds")) G.seconds = atof(v);
        else if (!strcmp(a, "--metrics-every")) G.metrics_every = atof(v);
        else if (!strcmp(a, "--points")) G.points = atoi(v);
        else if (!strcmp(a, "--job-seconds")) G.job_seconds = atof(v);
        else if (!strcmp(a, "--lease-ttl")) G.lease_ttl = atof(v);
        else if (!strcmp(a, "--server-nice")) G.server_nice = atoi(v);
        else { usage(); return 2; }
        i++;
    }
    if (G.boxes < 1 || G.boxes > 20000 || G.devices < 1 || G.devices > 32 || G.seconds <= 0 || G.metrics_every <= 0 ||
        G.points < 1 || G.points > 500 || G.job_seconds <= 0 || G.lease_ttl < 1) { usage(); return 2; }
    srand(12345);
    G.hb = G.lease_ttl / 4;

    /* the open-file limit: one socket per box here too */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)G.boxes + 64) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)G.boxes + 64 ? (rlim_t)G.boxes + 64 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < (rlim_t)G.boxes + 64) {
            fprintf(stderr, "bench_fleet: %d boxes need %d open files; the hard limit is %llu\n", G.boxes, G.boxes + 64,
                    (unsigned long long)rl.rlim_max);
            return 2;
        }
    }

    /* enough jobs for every device's first lease and the completions the window should bring, twice over */
    long devs = (long)G.boxes * G.devices;
    long jobs = devs + (long)(2.0 * devs * (G.seconds + 30) / G.job_seconds) + 53;
    int seeds = (int)(jobs / 53 + 1);
    if (seeds > 1000) seeds = 1000;
    const char *build = getenv("PRISM_BUILD") ? getenv("PRISM_BUILD") : "build";
    char dir[] = "/tmp/prism-fleet-XXXXXX", cmd[4096], specp[600], logp[600], sweep_bin[1024];
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(g_db, sizeof g_db, "%s/fleet.db", dir);
    snprintf(G.walp, sizeof G.walp, "%s-wal", g_db);
    snprintf(specp, sizeof specp, "%s/spec.json", dir);
    if (bench_write_spec(specp, "fleet", seeds, 1000000) < 0) { perror(specp); return 1; }
    snprintf(cmd, sizeof cmd, "%s/prism-sweep create %s --db %s >/dev/null", build, specp, g_db);
    if (system(cmd) != 0) { fprintf(stderr, "bench_fleet: %s failed\n", cmd); return 1; }

    int port = bench_free_port();
    char listen[64], ttl[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(ttl, sizeof ttl, "%g", G.lease_ttl);
    snprintf(logp, sizeof logp, "%s/server.log", dir);
    snprintf(sweep_bin, sizeof sweep_bin, "%s/prism-sweep", build);
    g_pid = fork();
    if (g_pid == 0) {
        if (!freopen(logp, "w", stderr)) _exit(127);
        if (G.server_nice && setpriority(PRIO_PROCESS, 0, G.server_nice) != 0) {
            fprintf(stderr, "bench_fleet: setpriority(%d) for the server: %s\n", G.server_nice, strerror(errno));
            _exit(126);
        }
        execl(sweep_bin, "prism-sweep", "serve", "--db", g_db, "--listen", listen, "--lease-ttl", ttl, (char *)NULL);
        _exit(127);
    }
    G.addr.sin_family = AF_INET;
    G.addr.sin_port = htons((uint16_t)port);
    G.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char tok[200] = "";
    G.auth[0] = 0;
    for (int i = 0; i < 200 && !tok[0]; i++) {
        usleep(50000);
        if (bench_read_token(g_db, tok, sizeof tok)) {
            char *h = http_get("/healthz");
            if (!h) tok[0] = 0;
            free(h);
        }
    }
    if (!tok[0]) { fprintf(stderr, "bench_fleet: server did not start (see %s)\n", logp); kill(g_pid, SIGKILL); return 1; }
    snprintf(G.auth, sizeof G.auth, "Authorization: Bearer %s", tok);

    char load[64] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) { if (fgets(load, sizeof load, la)) load[strcspn(load, "\n")] = 0; fclose(la); }

    G.loop = uv_default_loop();
    G.bx = calloc((size_t)G.boxes, sizeof *G.bx);
    for (int i = 0; i < G.boxes; i++) {
        box *b = &G.bx[i];
        b->id = i;
        b->ndev = G.devices;
        b->devs = calloc((size_t)G.devices, sizeof *b->devs);
        uv_timer_init(G.loop, &b->timer);
        b->timer.data = b;
    }
    uv_timer_t watch;
    uv_timer_init(G.loop, &watch);
    uv_timer_start(&watch, ramp_watch, 20, 20);
    uv_timer_init(G.loop, &G.stop_timer);
    uv_timer_init(G.loop, &G.wal_timer);
    uv_timer_start(&G.wal_timer, wal_sample, 100, 100);
    struct rusage ru1;
    double t_ramp = util_now_s();
    g_t_ramp = t_ramp;
    ramp_next();
    uv_run(G.loop, UV_RUN_DEFAULT);
    double t_end = util_now_s(), ramp_s = G.t_meas - t_ramp, wall = t_end - G.t_meas;
    getrusage(RUSAGE_SELF, &ru1);

    double cpu1 = 0;
    proc_cpu(g_pid, &cpu1);
    long rss = proc_status_kb(g_pid, "VmRSS"), hwm = proc_status_kb(g_pid, "VmHWM");
    long long db1 = db_logical_bytes(), wb1 = proc_write_bytes(g_pid);
    char *m = http_get("/metrics");
    double points1 = prom_value(m, "prism_metric_points_total"), commits1 = prom_value(m, "prism_commits_total");
    double commit_max = prom_value(m, "prism_commit_seconds_max"), commit_slow = prom_value(m, "prism_commits_over_10ms_total");
    double commit_s1 = prom_value(m, "prism_commit_seconds_sum");
    double sync_s1 = prom_value(m, "prism_sync_seconds_sum"), syncs1 = prom_value(m, "prism_sync_seconds_count");
    double sync_max = prom_value(m, "prism_sync_seconds_max"), off_loop = prom_value(m, "prism_sync_off_loop");
    double ck_n = prom_value(m, "prism_wal_checkpoints_total"), ck_max = prom_value(m, "prism_wal_checkpoint_seconds_max");
    double lck_n = prom_value(m, "prism_wal_loop_checkpoints_total"), lck_max = prom_value(m, "prism_wal_loop_checkpoint_seconds_max");
    double lck_sum = prom_value(m, "prism_wal_loop_checkpoint_seconds_sum");
    double conns = prom_value(m, "prism_connections"), refused = prom_value(m, "prism_connections_total{outcome=\"refused\"}");
    free(m);
    kill(g_pid, SIGTERM);
    int st;
    waitpid(g_pid, &st, 0);

    long errors = G.transport_errors + G.closed, nreq = 0;
    for (int r = 0; r < N_ROUTES; r++) { errors += G.errors[r]; nreq += (long)G.lat[r].n; }
    size_t nall = 0;
    for (int r = 0; r < N_ROUTES; r++) nall += G.lat[r].n;
    double *all = malloc((nall ? nall : 1) * sizeof *all);
    size_t k = 0;
    printf("fleet                 %d boxes x %d devices (%ld devices), one keep-alive connection per box, loopback; "
           "%.1f s measured after a %.1f s ramp; %ld cores; load average %s at start%s\n",
           G.boxes, G.devices, devs, wall, ramp_s, sysconf(_SC_NPROCESSORS_ONLN), load,
           G.server_nice ? "; server at nice " : "");
    if (G.server_nice) printf("                      (--server-nice %d: the server's scheduling priority raised over the "
                              "machine's other work, as on a box of its own)\n", G.server_nice);
    printf("traffic               heartbeat every %g s, metrics batch of %d points every %g s, job %g s x U(0.5,1.5), "
           "all jittered; %d jobs queued at start\n", G.hb, G.points, G.metrics_every, G.job_seconds, seeds * 53);
    printf("requests/s            %.0f   (%ld requests in the window)\n", nreq / wall, nreq);
    printf("latency ms            route       count      p50      p99      max\n");
    for (int r = 0; r < N_ROUTES; r++) {
        lat *l = &G.lat[r];
        if (!l->n) continue;
        qsort(l->v, l->n, sizeof *l->v, bench_cmp_double);
        memcpy(all + k, l->v, l->n * sizeof *all);
        k += l->n;
        printf("                      %-10s %6zu %8.2f %8.2f %8.2f\n", route_name[r], l->n, l->v[l->n / 2] * 1e3,
               l->v[(size_t)(l->n * 0.99)] * 1e3, l->v[l->n - 1] * 1e3);
    }
    qsort(all, nall, sizeof *all, bench_cmp_double);
    double p50 = nall ? all[nall / 2] : 0, p99 = nall ? all[(size_t)(nall * 0.99)] : 0, pmax = nall ? all[nall - 1] : 0;
    printf("                      %-10s %6zu %8.2f %8.2f %8.2f\n", "all", nall, p50 * 1e3, p99 * 1e3, pmax * 1e3);
    free(all);
    double client_cpu = ru1.ru_utime.tv_sec + ru1.ru_utime.tv_usec / 1e6 + ru1.ru_stime.tv_sec + ru1.ru_stime.tv_usec / 1e6;
    printf("server CPU            %.1f%% of one core (%.2f s in %.1f s); this client: %.1f%% of one core (whole run)\n",
           100 * (cpu1 - M.cpu0) / wall, cpu1 - M.cpu0, wall, 100 * client_cpu / (t_end - t_ramp));
    printf("server RSS            %.1f MiB now, %.1f MiB peak; %g connections open at the end, %g refused in all\n",
           rss / 1024.0, hwm / 1024.0, conns, refused);
    printf("metric points/s       %.0f stored; server group commits/s %.0f\n", (points1 - M.points0) / wall,
           (commits1 - M.commits0) / wall);
    if (commit_s1 >= 0 && M.commit_s0 >= 0 && commits1 > M.commits0)
        printf("loop in COMMIT        %.1f%% of the window (%.2f s; %.1f ms per group COMMIT, %.1f requests each): "
               "%s\n", 100 * (commit_s1 - M.commit_s0) / wall,
               commit_s1 - M.commit_s0, (commit_s1 - M.commit_s0) / (commits1 - M.commits0) * 1e3,
               (double)nreq / (commits1 - M.commits0),
               off_loop > 0 ? "write()s only, the fdatasync runs off the loop (below)" : "the event loop waits for the fsync meanwhile");
    if (off_loop > 0 && syncs1 > M.syncs0 && sync_s1 >= 0)
        printf("syncs off the loop    %.0f/s, mean %.1f ms, longest %.1f ms (%.0f%% of the window on a pool thread; "
               "each batch's answers wait for its sync)\n", (syncs1 - M.syncs0) / wall,
               (sync_s1 - M.sync_s0) / (syncs1 - M.syncs0) * 1e3, sync_max * 1e3, 100 * (sync_s1 - M.sync_s0) / wall);
    printf("WAL                   %.1f MiB at most; longest group COMMIT on the loop %.1f ms, %g over 10 ms",
           G.wal_max / 1048576.0, commit_max * 1e3, commit_slow);
    if (ck_n >= 0) printf("; %g checkpoints off the loop, longest %.1f ms", ck_n, ck_max * 1e3);
    if (lck_n >= 0) printf("; checkpoint stalls on the loop: %g, mean %.1f ms, longest %.1f ms%s", lck_n,
                           lck_n > 0 ? lck_sum / lck_n * 1e3 : 0.0, lck_max * 1e3,
                           getenv("PRISM_WAL_CHECKPOINTS") ? " (PRISM_WAL_CHECKPOINTS set)" : "");
    printf("\n");
    if (wb1 >= 0 && M.wb0 >= 0)
        printf("disk writes           %.1f MiB/s by the server (WAL frames + checkpoints), %.1f KiB per request\n",
               (wb1 - M.wb0) / wall / 1048576.0, nreq ? (wb1 - M.wb0) / 1024.0 / nreq : 0.0);
    double growth = db1 >= 0 && M.db0 >= 0 ? (double)(db1 - M.db0) / wall * 86400 : -1;
    printf("database growth       %.2f GiB per simulated day (%.1f MiB in %.1f s; %.0f bytes per stored point)\n",
           growth / 1073741824.0, (db1 - M.db0) / 1048576.0, wall,
           points1 > M.points0 ? (double)(db1 - M.db0) / (points1 - M.points0) : 0.0);
    printf("errors                %ld   (HTTP:", errors);
    for (int r = 0; r < N_ROUTES; r++) printf(" %s %ld", route_name[r], G.errors[r]);
    printf("; transport %ld; connections lost %ld)%s%s\n", G.transport_errors, G.closed,
           G.first_error[0] ? "; first: " : "", G.first_error);
    if (G.drained) printf("note                  %ld leases found the queue empty\n", G.drained);
    if (G.skipped_late) printf("note                  %ld requests skipped: the previous one of that device still waiting\n",
                               G.skipped_late);
    printf("summary               %d boxes x %d: %.0f req/s, p50/p99/max %.2f/%.2f/%.2f ms, errors %ld, server CPU %.0f%%, "
           "RSS %.0f MiB -> p99 < 50 ms %s\n", G.boxes, G.devices, nreq / wall, p50 * 1e3, p99 * 1e3, pmax * 1e3, errors,
           100 * (cpu1 - M.cpu0) / wall, hwm / 1024.0, p99 < 0.050 ? "met" : "MISSED");
    if (errors && !G.quiet) {
        snprintf(cmd, sizeof cmd, "tail -n 5 %s >&2", logp);
        if (system(cmd) != 0) { /* the log is only a hint */ }
    }
    if (getenv("BENCH_FLEET_KEEP")) printf("kept                  %s (database, server.log)\n", dir);
    else {
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) errors++;
    }
    return errors ? 1 : 0;
}
