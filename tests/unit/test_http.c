/* test_http.c — the HTTP session (parser, caps, pipelining, split reads), tokens on disk, and the
 * leaderboard's t quantiles, without sockets: bytes are fed to an http_session wired to the real API on a
 * real temporary SQLite database. */
#include <sys/stat.h>

#include "api.h"
#include "auth.h"
#include "harness.h"
#include "http.h"
#include "leaderboard.h"
#include "store.h"

static api A;
static store *ST;

static void setup(void) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/t.db", harness_tmpdir());
    if (store_open(path, &ST, err, sizeof err) < 0) HFAIL("store_open: %s", err);
    auth_tokens t;
    memset(&t, 0, sizeof t);
    snprintf(t.worker, sizeof t.worker, "worker-token-0123456789");
    snprintf(t.admin, sizeof t.admin, "admin-token-0123456789");
    api_config cfg = { .lease_ttl = 60, .max_attempts = 3, .public_read = 1 };
    if (api_init(&A, ST, &t, &cfg, err, sizeof err) < 0) HFAIL("api_init: %s", err);
}

/* Feeds `in` in pieces of `chunk` bytes (0 = all at once); returns the session's output (malloc'd). */
static char *run(const char *in, size_t chunk) {
    http_session s;
    http_session_init(&s, api_handle, &A);
    size_t n = strlen(in);
    for (size_t off = 0; off < n;) {
        size_t k = chunk && chunk < n - off ? chunk : n - off;
        if (http_session_feed(&s, in + off, k) < 0) break;
        off += k;
    }
    ASSERT_EQ_INT(0, api_flush(&A));
    char *out = strdup(s.out.data ? s.out.data : "");
    http_session_release(&s);
    return out;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

#define REG "POST /api/v1/workers/register HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer worker-token-0123456789\r\n" \
            "Content-Length: 14\r\n\r\n{\"name\": \"w1\"}"

TEST(split_reads_give_the_same_answer) {
    setup();
    char *whole = run(REG, 0);
    ASSERT_CONTAINS(whole, "HTTP/1.1 200 OK");
    ASSERT_CONTAINS(whole, "\"worker_id\":1");
    for (size_t chunk = 1; chunk < 12; chunk++) {
        char *part = run(REG, chunk);
        ASSERT_STREQ(whole, part);   /* same name+host: same worker id every time */
        free(part);
    }
    free(whole);
}

TEST(pipelined_requests_answered_in_order) {
    setup();
    char *out = run("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" REG "GET /api/v1/nope HTTP/1.1\r\nHost: x\r\n\r\n", 7);
    ASSERT_EQ_INT(3, count(out, "HTTP/1.1 "));
    const char *a = strstr(out, "\"ok\":true"), *b = strstr(out, "\"worker_id\""), *c = strstr(out, "404 Not Found");
    ASSERT_TRUE(a && b && c && a < b && b < c);
    free(out);
}

TEST(caps_and_malformed_input) {
    setup();
    char *big = malloc(HTTP_MAX_URL + 100);
    snprintf(big, 32, "GET /");
    memset(big + 5, 'a', HTTP_MAX_URL + 10);
    snprintf(big + HTTP_MAX_URL + 15, 64, " HTTP/1.1\r\n\r\n");
    char *out = run(big, 0);
    ASSERT_CONTAINS(out, "413");
    free(out);
    out = run("POST /api/v1/lease HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 0);
    ASSERT_CONTAINS(out, "HTTP/1.1 413");
    ASSERT_CONTAINS(out, "\"error\"");
    free(out);
    out = run("\x01\x02garbage\r\n\r\n", 0);
    ASSERT_CONTAINS(out, "HTTP/1.1 400");
    ASSERT_CONTAINS(out, "Connection: close");
    free(out);
    /* the request after Connection: close is not answered */
    out = run("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n", 0);
    ASSERT_EQ_INT(1, count(out, "HTTP/1.1 "));
    free(out);
    free(big);
}

TEST(tokens_generated_private_and_reloaded) {
    const char *dir = harness_tmpdir();
    char db[4200], err[512], path[4300];
    snprintf(db, sizeof db, "%s/p.db", dir);
    auth_tokens a, b;
    ASSERT_EQ_INT(0, auth_load(&a, NULL, db, err, sizeof err));
    ASSERT_EQ_INT(1, a.generated);
    ASSERT_EQ_INT(64, strlen(a.worker));
    ASSERT_NE_INT(0, strcmp(a.worker, a.admin));
    struct stat st;
    snprintf(path, sizeof path, "%s.tokens", db);
    ASSERT_EQ_INT(0, stat(path, &st));
    ASSERT_EQ_INT(0600, st.st_mode & 0777);
    ASSERT_EQ_INT(0, auth_load(&b, NULL, db, err, sizeof err));
    ASSERT_EQ_INT(0, b.generated);
    ASSERT_STREQ(a.worker, b.worker);
    ASSERT_STREQ(a.admin, b.admin);
    char hdr[200];
    snprintf(hdr, sizeof hdr, "Bearer %s", a.admin);
    ASSERT_EQ_INT(AUTH_ADMIN, auth_check(&a, hdr));
    snprintf(hdr, sizeof hdr, "Bearer %s", a.worker);
    ASSERT_EQ_INT(AUTH_WORKER, auth_check(&a, hdr));
    hdr[strlen(hdr) - 1] ^= 1;
    ASSERT_EQ_INT(AUTH_NONE, auth_check(&a, hdr));
    ASSERT_EQ_INT(AUTH_NONE, auth_check(&a, a.worker));   /* no "Bearer " */
    /* a bad token file names the file and the problem */
    snprintf(path, sizeof path, "%s/bad", dir);
    FILE *f = fopen(path, "w");
    fputs("worker_token=short\n", f);
    fclose(f);
    ASSERT_EQ_INT(-1, auth_load(&b, path, db, err, sizeof err));
    ASSERT_CONTAINS(err, path);
    ASSERT_CONTAINS(err, "worker_token must be 16 to");
}


/* A shared body (the leaderboard's text, held by reference) goes out byte for byte as the same body copied would:
 * in its place among pipelined answers, not after HEAD or in a 304, copied once the session holds HTTP_MAX_SHARED,
 * and every reference the session took is given back. */
static blob *SHARED;
static int SHARED_AS_COPY;

static void shared_handler(void *ud, http_request *req, http_response *res) {
    (void)ud;
    if (!strcmp(req->url, "/s") && !SHARED_AS_COPY)
        http_response_set_shared(res, 200, "application/json", SHARED);
    else if (!strcmp(req->url, "/s"))
        http_response_set(res, 200, "application/json", SHARED->data, SHARED->len);
    else if (!strcmp(req->url, "/n")) {
        http_response_set_shared(res, 304, "application/json", SHARED);
        snprintf(res->etag, sizeof res->etag, "\"e1\"");
    } else
        http_response_set(res, 200, "text/plain", "plain", 5);
    res->no_state = 1;
}

static char *run_shared(const char *in, int as_copy, int *nseg) {
    SHARED_AS_COPY = as_copy;
    http_session s;
    http_session_init(&s, shared_handler, NULL);
    ASSERT_TRUE(http_session_feed(&s, in, strlen(in)) >= 0);
    *nseg = s.nseg;
    buf o = { 0 };
    ASSERT_EQ_INT(0, http_session_output(&s, &o));
    ASSERT_EQ_INT(0, buf_append(&o, "", 1, BUF_MAX));
    http_session_release(&s);
    return o.data;
}

TEST(shared_bodies_written_as_copies_would_be) {
    size_t n = 100000;
    char *d = malloc(n + 1);
    for (size_t i = 0; i < n; i++) d[i] = (char)('a' + i % 26);
    memcpy(d, "<<body>>", 8);   /* one mark per body written */
    d[n] = 0;
    SHARED = blob_wrap(d, n);
    ASSERT_TRUE(SHARED != NULL);
    buf in = { 0 };
    const char *p = "GET /p HTTP/1.1\r\nHost: x\r\n\r\n", *sh = "GET /s HTTP/1.1\r\nHost: x\r\n\r\n";
    buf_append(&in, p, strlen(p), BUF_MAX);
    for (int i = 0; i < HTTP_MAX_SHARED + 3; i++) {   /* more than a session holds by reference */
        buf_append(&in, sh, strlen(sh), BUF_MAX);
        if (i % 4 == 1) buf_append(&in, p, strlen(p), BUF_MAX);
    }
    const char *tail = "HEAD /s HTTP/1.1\r\nHost: x\r\n\r\nGET /n HTTP/1.1\r\nHost: x\r\n\r\n"
                       "GET /p HTTP/1.1\r\nHost: x\r\n\r\n";
    buf_append(&in, tail, strlen(tail) + 1, BUF_MAX);
    int segs_shared = 0, segs_copy = 0;
    char *a = run_shared(in.data, 0, &segs_shared), *b = run_shared(in.data, 1, &segs_copy);
    ASSERT_EQ_INT(HTTP_MAX_SHARED, segs_shared);
    ASSERT_EQ_INT(0, segs_copy);
    ASSERT_EQ_INT(strlen(b), strlen(a));
    ASSERT_TRUE(!strcmp(a, b));
    ASSERT_EQ_INT(HTTP_MAX_SHARED + 4, count(a, "Content-Length: 100000\r\n"));   /* the GETs and the HEAD... */
    ASSERT_EQ_INT(HTTP_MAX_SHARED + 3, count(a, "<<body>>"));                      /* ...bodies: the GETs only */
    ASSERT_EQ_INT(5, count(a, "\r\n\r\nplain"));
    const char *nm = strstr(a, "HTTP/1.1 304 Not Modified\r\n");
    ASSERT_TRUE(nm != NULL);
    ASSERT_TRUE(strstr(nm, "ETag: \"e1\"\r\n") != NULL);
    ASSERT_TRUE(!strncmp(strstr(nm, "\r\n\r\n") + 4, "HTTP/1.1 200 OK", 15));   /* nothing between 304 and next */
    ASSERT_EQ_INT(1, (int)SHARED->refs);   /* every session reference returned */
    free(a);
    free(b);
    buf_free(&in);
    blob_unref(SHARED);
}
