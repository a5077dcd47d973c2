/* test_client.c — the worker's HTTP client (common/client.c) against a scripted HTTP server on loopback.
 * timeout: 60
 *
 * The server is a small Python http.server (Debian's /usr/bin/python3) started per case; it answers by
 * path: /echo returns the request body, /flaky/N fails with 503 N times then answers 200, /big returns
 * 2 MiB, /conflict 409, /bad 400, /toolarge 413, /unprocessable 422, /forbidden 403, /gone 404 (a job
 * the server no longer has), /points stores the points it gets (optionally failing the first N
 * requests), /log returns what it saw; every POST without "Bearer sekret" gets 401. Real libcurl, real
 * sockets.
 */
#include "harness.h"
#include "client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static const char *mock_py =
    "import json, sys, threading\n"
    "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
    "state = {'hits': {}, 'points': [], 'batches': [], 'fail_points': int(sys.argv[1])}\n"
    "lock = threading.Lock()\n"
    "class H(BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def send(self, code, obj=None, raw=None):\n"
    "        body = raw if raw is not None else (json.dumps(obj).encode() if obj is not None else b'')\n"
    "        self.send_response(code)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def do_GET(self):\n"
    "        if self.path == '/log':\n"
    "            with lock: return self.send(200, {'hits': state['hits'], 'points': state['points'], 'batches': state['batches']})\n"
    "        if self.path == '/big': return self.send(200, raw=b'[' + b'1,' * (1 << 20) + b'1]')\n"
    "        if self.path == '/empty': return self.send(204)\n"
    "        self.send(404, {'error': 'no route'})\n"
    "    def do_POST(self):\n"
    "        n = int(self.headers.get('Content-Length', 0))\n"
    "        body = self.rfile.read(n)\n"
    "        with lock:\n"
    "            state['hits'][self.path] = state['hits'].get(self.path, 0) + 1\n"
    "            hits = state['hits'][self.path]\n"
    "        auth = self.headers.get('Authorization', '')\n"
    "        if auth != 'Bearer sekret': return self.send(401, {'error': 'bad token ' + auth})\n"
    "        if self.path == '/echo': return self.send(200, raw=body)\n"
    "        if self.path.startswith('/flaky/'):\n"
    "            if hits <= int(self.path.split('/')[2]): return self.send(503, {'error': 'busy'})\n"
    "            return self.send(200, {'ok': hits})\n"
    "        if self.path == '/conflict': return self.send(409, {'error': 'lease lost: job 7 was re-leased'})\n"
    "        if self.path == '/bad': return self.send(400, {'error': 'points[0].step: must be an integer'})\n"
    "        if self.path == '/toolarge': return self.send(413, {'error': 'body larger than 8 MiB'})\n"
    "        if self.path == '/unprocessable': return self.send(422, {'error': 'points[0]: unknown kind'})\n"
    "        if self.path == '/forbidden': return self.send(403, {'error': 'worker token revoked'})\n"
    "        if self.path == '/gone': return self.send(404, {'error': 'no job 17'})\n"
    "        if self.path == '/points':\n"
    "            if hits <= state['fail_points']: return self.send(503, {'error': 'down'})\n"
    "            j = json.loads(body)\n"
    "            with lock:\n"
    "                state['batches'].append(len(j['points']))\n"
    "                state['points'] += [p['step'] for p in j['points']]\n"
    "            return self.send(200, {'accepted': len(j['points'])})\n"
    "        self.send(404, {'error': 'no route'})\n"
    "s = ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
    "print(s.server_address[1], flush=True)\n"
    "s.serve_forever()\n";

static pid_t mock_pid;
static char mock_url[128];

static void mock_stop(void) { if (mock_pid > 0) { kill(mock_pid, SIGKILL); waitpid(mock_pid, NULL, 0); } }

static void mock_start(int fail_points) {
    const char *dir = harness_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/mock.py", dir);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(mock_py, f);
    fclose(f);
    int fd[2];
    ASSERT_EQ_INT(0, pipe(fd));
    mock_pid = fork();
    if (mock_pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", fail_points);
        execl("/usr/bin/python3", "python3", path, arg, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[32] = "";
    FILE *r = fdopen(fd[0], "r");
    if (!fgets(buf, sizeof buf, r)) HFAIL("mock server did not start");
    fclose(r);
    snprintf(mock_url, sizeof mock_url, "http://127.0.0.1:%d", atoi(buf));
    atexit(mock_stop);
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void fast_client(client *c, const char *url, const char *token) {
    client_opts o;
    client_opts_default(&o);
    o.backoff_initial_s = 0.01;
    o.backoff_max_s = 0.05;
    o.connect_timeout_ms = 500;
    o.timeout_ms = 5000;
    o.max_response = 64 << 10;
    ASSERT_EQ_INT(CLIENT_OK, client_init(c, url, token, &o));
}

static json_t *mock_log(void) {
    client c;
    fast_client(&c, mock_url, "sekret");
    c.opts.max_response = 16 << 20;
    json_t *r = NULL;
    ASSERT_EQ_INT(CLIENT_OK, client_request(&c, "GET", "/log", NULL, 5, &r));
    client_release(&c);
    return r;
}

static int mock_hits(const char *path) {
    json_t *l = mock_log();
    int n = (int)json_integer_value(json_object_get(json_object_get(l, "hits"), path));
    json_decref(l);
    return n;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int free_port(void) {
    char *out = NULL;
    harness_run("/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); print(s.getsockname()[1])'", &out);
    int p = atoi(out ? out : "0");
    free(out);
    return p;
}

TEST(post_json_roundtrip_with_token) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    json_t *body = json_pack("{s:s, s:i}", "lease_token", "abc", "step", 42), *resp = NULL;
    ASSERT_EQ_INT(CLIENT_OK, client_request(&c, "POST", "/echo", body, 5, &resp));
    ASSERT_EQ_INT(200, c.status);
    ASSERT_EQ_INT(42, json_integer_value(json_object_get(resp, "step")));
    ASSERT_STREQ("abc", json_string_value(json_object_get(resp, "lease_token")));
    json_decref(resp);
    ASSERT_EQ_INT(CLIENT_OK, client_request(&c, "GET", "/empty", NULL, 5, &resp));
    ASSERT_EQ_INT(204, c.status);
    ASSERT_TRUE(resp == NULL);
    json_decref(body);
    client_release(&c);
}

TEST(wrong_token_is_rejected_not_retried) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "wrong");
    json_t *body = json_object();
    ASSERT_EQ_INT(CLIENT_EREJECTED, client_request(&c, "POST", "/echo", body, 5, NULL));
    ASSERT_EQ_INT(401, c.status);
    ASSERT_CONTAINS(c.err, "bad token Bearer wrong");
    ASSERT_EQ_INT(1, mock_hits("/echo"));
    json_decref(body);
    client_release(&c);
}

TEST(retries_5xx_until_answered) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    json_t *body = json_object(), *resp = NULL;
    ASSERT_EQ_INT(CLIENT_OK, client_request(&c, "POST", "/flaky/3", body, 10, &resp));
    ASSERT_EQ_INT(4, json_integer_value(json_object_get(resp, "ok")));
    ASSERT_EQ_INT(4, mock_hits("/flaky/3"));
    json_decref(resp);
    json_decref(body);
    client_release(&c);
}

TEST(conflict_and_bad_request_are_final) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    json_t *body = json_object();
    ASSERT_EQ_INT(CLIENT_ECONFLICT, client_request(&c, "POST", "/conflict", body, 5, NULL));
    ASSERT_EQ_INT(409, c.status);
    ASSERT_CONTAINS(c.err, "lease lost: job 7 was re-leased");
    ASSERT_EQ_INT(CLIENT_EREJECTED, client_request(&c, "POST", "/bad", body, 5, NULL));
    ASSERT_CONTAINS(c.err, "points[0].step: must be an integer");
    ASSERT_EQ_INT(1, mock_hits("/conflict"));
    ASSERT_EQ_INT(1, mock_hits("/bad"));
    json_decref(body);
    client_release(&c);
}

TEST(response_larger_than_cap_is_refused) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");   /* cap 64 KiB; /big is 2 MiB */
    json_t *resp = NULL;
    ASSERT_EQ_INT(CLIENT_EPROTO, client_request(&c, "GET", "/big", NULL, 5, &resp));
    ASSERT_TRUE(resp == NULL);
    ASSERT_CONTAINS(c.err, "larger than 65536 bytes");
    client_release(&c);
}

TEST(unreachable_server_gives_up_after_budget) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", free_port());
    curl_global_init(CURL_GLOBAL_DEFAULT);
    client c;
    fast_client(&c, url, "sekret");
    json_t *body = json_object();
    double t0 = now_s();
    ASSERT_EQ_INT(CLIENT_ENET, client_request(&c, "POST", "/x", body, 0.5, NULL));
    double dt = now_s() - t0;
    ASSERT_LT(dt, 3.0);
    ASSERT_EQ_INT(0, c.status);
    ASSERT_CONTAINS(c.err, "POST");
    json_decref(body);
    client_release(&c);
}

static volatile int abort_flag;
static void *raise_abort(void *arg) {
    struct timespec ts = { 0, 200 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    abort_flag = 1;
    return NULL;
}

TEST(abort_flag_stops_endless_retries) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", free_port());
    curl_global_init(CURL_GLOBAL_DEFAULT);
    client c;
    fast_client(&c, url, "sekret");
    c.abort = &abort_flag;
    pthread_t t;
    pthread_create(&t, NULL, raise_abort, NULL);
    json_t *body = json_object();
    double t0 = now_s();
    ASSERT_EQ_INT(CLIENT_ESTOPPED, client_request(&c, "POST", "/x", body, -1, NULL));
    ASSERT_LT(now_s() - t0, 2.0);
    pthread_join(t, NULL);
    json_decref(body);
    client_release(&c);
}

TEST(outbox_keeps_points_while_server_down_then_delivers_in_order) {
    mock_start(0);
    char down[64];
    snprintf(down, sizeof down, "http://127.0.0.1:%d", free_port());
    client dc, c;
    fast_client(&dc, down, "sekret");
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 5; i++) outbox_push(&ob, json_pack("{s:i, s:f}", "step", i, "train_loss", 4.0 - i * 0.1));
    ASSERT_EQ_INT(CLIENT_ENET, outbox_flush(&ob, &dc, "/points", "tok", 100, 0.3));
    ASSERT_EQ_INT(5, outbox_pending(&ob));
    for (int i = 5; i < 8; i++) outbox_push(&ob, json_pack("{s:i, s:f}", "step", i, "train_loss", 4.0 - i * 0.1));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 100, 5));
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    ASSERT_EQ_INT(8, ob.sent);
    json_t *l = mock_log();
    json_t *pts = json_object_get(l, "points");
    ASSERT_EQ_INT(8, json_array_size(pts));
    for (int i = 0; i < 8; i++) ASSERT_EQ_INT(i, json_integer_value(json_array_get(pts, i)));
    json_decref(l);
    outbox_release(&ob);
    client_release(&dc);
    client_release(&c);
}

TEST(outbox_batches_and_survives_5xx) {
    mock_start(2);   /* the first two POSTs to /points answer 503 */
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 25; i++) outbox_push(&ob, json_pack("{s:i, s:f}", "step", i, "val_loss", 3.0));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 10, 10));
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    json_t *l = mock_log();
    json_t *b = json_object_get(l, "batches");
    ASSERT_EQ_INT(3, json_array_size(b));
    ASSERT_EQ_INT(10, json_integer_value(json_array_get(b, 0)));
    ASSERT_EQ_INT(10, json_integer_value(json_array_get(b, 1)));
    ASSERT_EQ_INT(5, json_integer_value(json_array_get(b, 2)));
    ASSERT_EQ_INT(25, json_array_size(json_object_get(l, "points")));
    ASSERT_EQ_INT(5, json_integer_value(json_object_get(json_object_get(l, "hits"), "/points")));
    json_decref(l);
    outbox_release(&ob);
    client_release(&c);
}

/* A trainer that pushes while the reporter flushes: the pusher adds 10 points as soon as the first of 5
 * single-point batches is acknowledged. The flush sends the 5 it found and returns; the 10 wait (before,
 * it sent until the outbox was empty, so a trainer faster than the server kept the reporter, and with it
 * the checkpoint report and the heartbeat, inside the flush until the job ended). */
typedef struct { outbox *ob; int pushed; } late_pusher;

static void *late_push(void *arg) {
    late_pusher *p = arg;
    for (int i = 0; i < 200000; i++) {   /* up to 20 s */
        pthread_mutex_lock(&p->ob->mu);
        long long sent = p->ob->sent;
        pthread_mutex_unlock(&p->ob->mu);
        if (sent >= 1) break;
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 10; i++) outbox_push(p->ob, json_pack("{s:i}", "step", 100 + i));
    p->pushed = 1;
    return NULL;
}

TEST(outbox_flush_sends_what_was_pending_not_what_arrives_meanwhile) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 5; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    late_pusher p = { &ob, 0 };
    pthread_t t;
    ASSERT_EQ_INT(0, pthread_create(&t, NULL, late_push, &p));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 1, 5));
    long long sent_by_first = ob.sent;
    pthread_join(t, NULL);
    ASSERT_EQ_INT(1, p.pushed);
    ASSERT_EQ_INT(5, (int)sent_by_first);
    ASSERT_EQ_INT(10, (int)outbox_pending(&ob));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 100, 5));
    ASSERT_EQ_INT(0, (int)outbox_pending(&ob));
    json_t *l = mock_log();
    json_t *pts = json_object_get(l, "points");
    ASSERT_EQ_INT(15, (int)json_array_size(pts));
    for (int i = 0; i < 5; i++) ASSERT_EQ_INT(i, (int)json_integer_value(json_array_get(pts, i)));
    ASSERT_EQ_INT(100, (int)json_integer_value(json_array_get(pts, 5)));
    json_decref(l);
    outbox_release(&ob);
    client_release(&c);
}

TEST(outbox_conflict_keeps_points_and_reports) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    outbox_push(&ob, json_pack("{s:i}", "step", 1));
    ASSERT_EQ_INT(CLIENT_ECONFLICT, outbox_flush(&ob, &c, "/conflict", "tok", 10, 5));
    ASSERT_EQ_INT(1, outbox_pending(&ob));
    outbox_release(&ob);
    client_release(&c);
}

TEST(outbox_drops_only_batches_refused_as_malformed) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 3; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/bad", "tok", 2, 5));   /* 400 twice: 2 + 1 points */
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    ASSERT_EQ_INT(3, ob.rejected);
    ASSERT_EQ_INT(0, ob.sent);
    ASSERT_EQ_INT(2, mock_hits("/bad"));
    outbox_release(&ob);
    client_release(&c);
}

/* 413 and 422 say the batch itself is malformed, as 400 does: dropped and counted, not resent. */
TEST(outbox_drops_batches_refused_as_too_large_or_unprocessable) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 2; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/toolarge", "tok", 10, 5));
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    for (int i = 2; i < 5; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/unprocessable", "tok", 10, 5));
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    ASSERT_EQ_INT(5, ob.rejected);
    ASSERT_EQ_INT(1, mock_hits("/toolarge"));
    ASSERT_EQ_INT(1, mock_hits("/unprocessable"));
    outbox_release(&ob);
    client_release(&c);
}

/* 401 (wrong or missing token) and 403 (revoked) are not the points' fault: the batch is neither dropped
 * nor counted as rejected, nor resent in a loop; the flush says CLIENT_EAUTH and the points, in order,
 * are delivered once the token is right. */
TEST(outbox_keeps_points_when_the_token_is_refused) {
    mock_start(0);
    client bad, c;
    fast_client(&bad, mock_url, "revoked");
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 5; i++) outbox_push(&ob, json_pack("{s:i, s:f}", "step", i, "train_loss", 3.0));
    int rc = outbox_flush(&ob, &bad, "/points", "tok", 2, 5);
    ASSERT_EQ_INT(CLIENT_EAUTH, rc);
    ASSERT_EQ_INT(401, bad.status);
    ASSERT_STREQ("POST /points", bad.req);
    ASSERT_EQ_INT(5, outbox_pending(&ob));
    ASSERT_EQ_INT(0, ob.rejected);
    ASSERT_EQ_INT(1, mock_hits("/points"));      /* the first batch only: the rest would be refused too */
    ASSERT_EQ_INT(CLIENT_EAUTH, outbox_flush(&ob, &c, "/forbidden", "tok", 2, 5));
    ASSERT_EQ_INT(403, c.status);
    ASSERT_CONTAINS(c.err, "worker token revoked");
    ASSERT_EQ_INT(5, outbox_pending(&ob));
    ASSERT_EQ_INT(0, ob.rejected);
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 2, 5));
    ASSERT_EQ_INT(0, outbox_pending(&ob));
    ASSERT_EQ_INT(5, ob.sent);
    json_t *l = mock_log();
    json_t *pts = json_object_get(l, "points");
    ASSERT_EQ_INT(5, json_array_size(pts));
    for (int i = 0; i < 5; i++) ASSERT_EQ_INT(i, json_integer_value(json_array_get(pts, i)));
    json_decref(l);
    outbox_release(&ob);
    client_release(&bad);
    client_release(&c);
}

/* 404 on a job's metrics: the job is gone (like a 409, the caller stops it); the flush says CLIENT_EGONE
 * and leaves the points to the caller instead of logging them as malformed. */
TEST(outbox_leaves_points_of_a_gone_job_to_the_caller) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 3; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(CLIENT_EGONE, outbox_flush(&ob, &c, "/gone", "tok", 10, 5));
    ASSERT_EQ_INT(404, c.status);
    ASSERT_CONTAINS(c.err, "no job 17");
    ASSERT_EQ_INT(3, outbox_pending(&ob));
    ASSERT_EQ_INT(0, ob.rejected);
    ASSERT_EQ_INT(1, mock_hits("/gone"));
    outbox_release(&ob);
    client_release(&c);
}

/* client_request keeps answering CLIENT_EREJECTED for every final 4xx but 409; client_refusal() says which. */
TEST(client_refusal_names_token_and_gone_job) {
    mock_start(0);
    client bad, c;
    fast_client(&bad, mock_url, "wrong");
    fast_client(&c, mock_url, "sekret");
    json_t *body = json_object();
    int rc = client_request(&bad, "POST", "/echo", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_EREJECTED, rc);
    ASSERT_EQ_INT(CLIENT_EAUTH, client_refusal(&bad, rc));
    ASSERT_STREQ("POST /echo", bad.req);
    rc = client_request(&c, "POST", "/forbidden", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_EAUTH, client_refusal(&c, rc));
    rc = client_request(&c, "POST", "/gone", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_EREJECTED, rc);
    ASSERT_EQ_INT(CLIENT_EGONE, client_refusal(&c, rc));
    ASSERT_STREQ("POST /gone", c.req);
    rc = client_request(&c, "POST", "/bad", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_EREJECTED, client_refusal(&c, rc));
    rc = client_request(&c, "POST", "/conflict", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_ECONFLICT, client_refusal(&c, rc));
    rc = client_request(&c, "POST", "/echo", body, 5, NULL);
    ASSERT_EQ_INT(CLIENT_OK, client_refusal(&c, rc));
    json_decref(body);
    client_release(&bad);
    client_release(&c);
}

/* 9,000 points in batches of 1,000: the sent ones are released from the front and the rest compacted into a new
 * array halfway (outbox_drop_head); every point reaches the server once, in order, also the ones pushed after. */
TEST(outbox_sends_every_point_once_in_order_across_compaction) {
    mock_start(0);
    client c;
    fast_client(&c, mock_url, "sekret");
    outbox ob;
    ASSERT_EQ_INT(0, outbox_init(&ob));
    for (int i = 0; i < 9000; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 1000, 10));
    ASSERT_EQ_INT(0, (int)outbox_pending(&ob));
    ASSERT_TRUE(json_array_size(ob.points) < 9000);   /* compacted: the sent points are not all still held */
    for (int i = 9000; i < 9003; i++) outbox_push(&ob, json_pack("{s:i}", "step", i));
    ASSERT_EQ_INT(3, (int)outbox_pending(&ob));
    ASSERT_EQ_INT(9000, (int)outbox_out(&ob));
    ASSERT_EQ_INT(CLIENT_OK, outbox_flush(&ob, &c, "/points", "tok", 1000, 10));
    ASSERT_EQ_INT(9003, (int)outbox_out(&ob));
    json_t *l = mock_log();
    json_t *pts = json_object_get(l, "points");
    ASSERT_EQ_INT(9003, (int)json_array_size(pts));
    for (int i = 0; i < 9003; i++) ASSERT_EQ_INT(i, (int)json_integer_value(json_array_get(pts, i)));
    json_decref(l);
    outbox_release(&ob);
    client_release(&c);
}
