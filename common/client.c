/* client.c — libcurl requests with retries, and the metrics outbox.
 *
 * Design: one CURL easy handle per client, reused across requests so keep-alive connections to the
 * orchestrator survive between heartbeats. A request is tried, and a transport failure, 5xx, 408 or 429
 * is retried after min(cap, initial·2^n) seconds scaled by a random factor in [0.5, 1) ("equal jitter"),
 * so many workers that lost the server at the same moment do not come back in lockstep. Sleeps are cut
 * in 50 ms slices so a raised abort flag (SIGTERM, 409 on another thread) is honoured promptly.
 * The answer is written into a growable buffer that refuses to grow beyond max_response (the write
 * callback then returns 0 and libcurl aborts the transfer).
 * The outbox drops a batch only when the server says the points are malformed (400, 413, 422): a refused
 * token (401/403) says nothing about the points and a gone job (404) is the caller's to handle (like a
 * 409), so those batches stay and the code goes back to the caller.
 */
#include "jsonout.h"
#include "client.h"
#include "logesc.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct rbuf {
    char *data;
    size_t len, cap, max;
    int overflow;
} rbuf;

static size_t client_write_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
    rbuf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n + 1 > b->max) { b->overflow = 1; return 0; }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        if (cap > b->max) cap = b->max;
        char *d = realloc(b->data, cap);
        if (!d) return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

/* Sleeps up to s seconds; returns 1 if the abort flag was raised meanwhile. */
static int client_sleep(client *c, double s) {
    double end = util_now_s() + s;
    for (;;) {
        if (c->abort && *c->abort) return 1;
        double left = end - util_now_s();
        if (left <= 0) return 0;
        if (left > 0.05) left = 0.05;
        struct timespec ts = { 0, (long)(left * 1e9) };
        nanosleep(&ts, NULL);
    }
}

void client_opts_default(client_opts *o) {
    o->connect_timeout_ms = 3000;
    o->timeout_ms = 30000;
    o->backoff_initial_s = 0.2;
    o->backoff_max_s = 10.0;
    o->max_response = 4u << 20;
}

int client_init(client *c, const char *base_url, const char *token, const client_opts *opts) {
    memset(c, 0, sizeof *c);
    if (opts) c->opts = *opts; else client_opts_default(&c->opts);
    snprintf(c->base, sizeof c->base, "%s", base_url);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/') c->base[--n] = 0;
    c->rng = (unsigned)getpid() ^ (unsigned)(util_now_s() * 1e6) ^ (unsigned)(size_t)c;
    c->who = "";
    CURL *h = curl_easy_init();
    if (!h) return CLIENT_ENOMEM;
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    if (hd) hd = curl_slist_append(hd, "Accept: application/json");
    if (hd && token && *token) {
        char line[1200];
        snprintf(line, sizeof line, "Authorization: Bearer %s", token);
        hd = curl_slist_append(hd, line);
    }
    if (!hd) { curl_easy_cleanup(h); return CLIENT_ENOMEM; }
    c->curl = h;
    c->headers = hd;
    return CLIENT_OK;
}

void client_release(client *c) {
    if (c->curl) curl_easy_cleanup(c->curl);
    if (c->headers) curl_slist_free_all(c->headers);
    c->curl = NULL;
    c->headers = NULL;
}

static double client_jitter(client *c) {
    c->rng = c->rng * 1103515245u + 12345u;
    return 0.5 + 0.5 * ((c->rng >> 8) & 0xffff) / 65536.0;
}

/* Transport errors no retry can cure: another scheme or protocol (TLS to a plain-HTTP server, plain HTTP to a TLS
 * one, a reply that is not HTTP), a malformed URL, a certificate refused. Refused connections, timeouts, resets
 * and unresolved names (DNS in a cluster comes and goes) are retried. */
static int client_curl_final(CURLcode rc) {
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL: case CURLE_URL_MALFORMAT: case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED: case CURLE_USE_SSL_FAILED: case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: case CURLE_HTTP2:
        return 1;
    default:
        return 0;
    }
}

static const char *client_curl_hint(CURLcode rc, const char *url) {
    int tls = strncmp(url, "https://", 8) == 0;
    if (rc == CURLE_URL_MALFORMAT) return "the URL is malformed: give http://HOST:PORT";
    if (rc == CURLE_GOT_NOTHING && !tls)
        return "the server closed the connection without an answer, as a TLS port does to plain HTTP: use https:// "
               "for a TLS proxy, or the address prism-sweep serve prints";
    if (tls && rc != CURLE_PEER_FAILED_VERIFICATION)
        return "the server does not speak TLS here: prism-sweep serve speaks plain HTTP, use http:// (or the https "
               "proxy's own address)";
    if (tls) return "the server's TLS certificate was refused";
    return "the answer is not HTTP: is this a TLS port (use https://) or another service? prism-sweep serve speaks "
           "plain HTTP";
}

/* One attempt. Returns 1 when the answer is final (2xx or 4xx other than 408/429), 0 when it should be
 * retried, and CLIENT_EPROTO/ENOMEM for a failure that retrying will not fix. */
static int client_attempt(client *c, const char *method, const char *url, const char *payload, rbuf *b) {
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)c->headers);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->opts.timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, client_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload ? payload : "{}");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(payload ? payload : "{}"));
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    b->len = 0;
    b->overflow = 0;
    if (b->data) b->data[0] = 0;
    CURLcode rc = curl_easy_perform(h);
    c->status = 0;
    if (rc != CURLE_OK) {
        if (b->overflow) {
            snprintf(c->err, sizeof c->err, "%s %.400s: answer larger than %zu bytes", method, url, c->opts.max_response);
            return CLIENT_EPROTO;
        }
        snprintf(c->err, sizeof c->err, "%s %.400s: %s", method, url, curl_easy_strerror(rc));
        if (client_curl_final(rc) || (rc == CURLE_GOT_NOTHING && c->first_contact)) {
            /* retrying cannot make these better: say what the URL most likely gets wrong */
            size_t n = strlen(c->err);
            snprintf(c->err + n, sizeof c->err - n, " (%s)", client_curl_hint(rc, url));
            return CLIENT_EPROTO;
        }
        return 0;
    }
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    c->status = st;
    if ((st >= 500 && st != 501 && st != 505) || st == 408 || st == 429) {   /* 501/505: this server never will */
        snprintf(c->err, sizeof c->err, "%s %.400s: HTTP %ld", method, url, st);
        return 0;
    }
    return 1;
}

/* The "error" member of a JSON error answer, or the raw text. */
static void client_error_text(client *c, const char *method, const char *path, rbuf *b) {
    const char *msg = b->data && b->len ? b->data : "";
    json_t *j = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;
    c->err_json = e != NULL;
    snprintf(c->err, sizeof c->err, "%s %s: HTTP %ld: %.400s", method, path, c->status, e ? e : msg);
    json_decref(j);
}

int client_request(client *c, const char *method, const char *path, json_t *body, double retry_for_s,
                   json_t **resp) {
    if (resp) *resp = NULL;
    snprintf(c->req, sizeof c->req, "%s %.150s", method, path);
    c->err_json = 0;
    char url[2048];
    snprintf(url, sizeof url, "%s%s", c->base, path);
    char *payload = NULL;
    if (body) {
        payload = json_dumps(body, JSON_COMPACT | JSONOUT_FLAGS);
        if (!payload) return CLIENT_ENOMEM;
    }
    rbuf b = { .max = c->opts.max_response };
    double start = util_now_s();
    int ret, n = 0;
    for (;;) {
        if (c->abort && *c->abort) { ret = CLIENT_ESTOPPED; snprintf(c->err, sizeof c->err, "%s %s: stopped", method, path); goto out; }
        int r = client_attempt(c, method, url, payload, &b);
        if (r < 0) { ret = r; goto out; }
        if (r == 1) break;
        if (!c->failing) {
            char e[4 * sizeof c->err];   /* the server's answer is quoted in err: one log line */
            fprintf(stderr, "prism-worker%s%s: %s; retrying with backoff\n", *c->who ? " " : "", c->who,
                    log_escape(e, sizeof e, c->err));
            c->failing = 1;
            c->failing_since = c->failing_told = util_now_s();
        } else if (util_now_s() - c->failing_told >= CLIENT_REMIND_S) {
            char e[4 * sizeof c->err];
            c->failing_told = util_now_s();
            fprintf(stderr, "prism-worker%s%s: still cannot reach the server after %.0f s (%s); retrying, a job in hand "
                    "keeps training and its reports are sent once the server answers\n", *c->who ? " " : "", c->who,
                    c->failing_told - c->failing_since, log_escape(e, sizeof e, c->err));
        }
        double delay = c->opts.backoff_initial_s * (double)(1u << (n < 20 ? n : 20));
        if (delay > c->opts.backoff_max_s) delay = c->opts.backoff_max_s;
        delay *= client_jitter(c);
        n++;
        if (retry_for_s >= 0 && util_now_s() + delay - start > retry_for_s) { ret = CLIENT_ENET; goto out; }
        if (client_sleep(c, delay)) { ret = CLIENT_ESTOPPED; goto out; }
    }
    if (c->failing) {
        fprintf(stderr, "prism-worker%s%s: server reachable again (%s %s: HTTP %ld)\n", *c->who ? " " : "", c->who,
                method, path, c->status);
        c->failing = 0;
    }
    if (c->status == 409) { client_error_text(c, method, path, &b); ret = CLIENT_ECONFLICT; goto out; }
    if (c->status < 200 || c->status >= 300) { client_error_text(c, method, path, &b); ret = CLIENT_EREJECTED; goto out; }
    ret = CLIENT_OK;
    if (resp && b.len > 0) {
        json_error_t je;
        *resp = json_loadb(b.data, b.len, 0, &je);
        if (!*resp) {
            snprintf(c->err, sizeof c->err, "%s %s: answer is not JSON: %s", method, path, je.text);
            ret = CLIENT_EPROTO;
        }
    }
out:
    free(payload);
    free(b.data);
    return ret;
}

/* ---- outbox ---------------------------------------------------------------------------------------- */

int outbox_init(outbox *o) {
    memset(o, 0, sizeof *o);
    o->points = json_array();
    if (!o->points) return CLIENT_ENOMEM;
    pthread_mutex_init(&o->mu, NULL);
    pthread_mutex_init(&o->flush_mu, NULL);
    return CLIENT_OK;
}

void outbox_release(outbox *o) {
    if (!o->points) return;
    json_decref(o->points);
    o->points = NULL;
    pthread_mutex_destroy(&o->mu);
    pthread_mutex_destroy(&o->flush_mu);
}

int outbox_push(outbox *o, json_t *point) {
    pthread_mutex_lock(&o->mu);
    int rc = json_array_append_new(o->points, point) == 0 ? CLIENT_OK : CLIENT_ENOMEM;
    if (rc == CLIENT_OK) o->pushed++;
    pthread_mutex_unlock(&o->mu);
    return rc;
}

size_t outbox_pending(outbox *o) {
    pthread_mutex_lock(&o->mu);
    size_t n = json_array_size(o->points) - o->head;
    pthread_mutex_unlock(&o->mu);
    return n;
}

long long outbox_out(outbox *o) {
    pthread_mutex_lock(&o->mu);
    long long n = o->pushed - (long long)(json_array_size(o->points) - o->head);
    pthread_mutex_unlock(&o->mu);
    return n;
}

/* Drops the n oldest pending points (o->mu held): each is released and its slot nulled, and once the sent slots are
 * the larger half (and many) the rest moves to a new array: O(n) amortised, where removing from the front of the
 * array one by one was O(outbox) each (3M points of a fast external trainer took minutes of CPU). */
static void outbox_drop_head(outbox *o, size_t n) {
    for (size_t i = 0; i < n; i++) json_array_set_new(o->points, o->head + i, json_null());
    o->head += n;
    size_t size = json_array_size(o->points);
    if (o->head < 4096 || 2 * o->head < size) return;
    json_t *rest = json_array();
    if (!rest) return;   /* out of memory: keep the nulls, compact later */
    for (size_t i = o->head; i < size; i++)
        if (json_array_append(rest, json_array_get(o->points, i)) < 0) { json_decref(rest); return; }
    json_decref(o->points);
    o->points = rest;
    o->head = 0;
}

int outbox_flush(outbox *o, client *c, const char *path, const char *lease_token, size_t max_batch,
                 double retry_for_s) {
    int rc = CLIENT_OK;
    pthread_mutex_lock(&o->flush_mu);
    pthread_mutex_lock(&o->mu);
    size_t left = json_array_size(o->points) - o->head;   /* what is pending now; later pushes wait for the next flush */
    pthread_mutex_unlock(&o->mu);
    while (left > 0) {
        /* Copy the oldest points; only this (serialised) flush removes from the head, pushes append. */
        json_t *batch = json_array();
        if (!batch) { rc = CLIENT_ENOMEM; break; }
        pthread_mutex_lock(&o->mu);
        size_t n = json_array_size(o->points) - o->head;
        if (n > max_batch) n = max_batch;
        if (n > left) n = left;
        for (size_t i = 0; i < n; i++) json_array_append(batch, json_array_get(o->points, o->head + i));
        pthread_mutex_unlock(&o->mu);
        if (n == 0) { json_decref(batch); break; }
        json_t *body = json_pack("{s:s, s:o}", "lease_token", lease_token, "points", batch);
        if (!body) { rc = CLIENT_ENOMEM; break; }
        int tries = 0;
        for (;;) {
            rc = client_request(c, "POST", path, body, retry_for_s, NULL);
            tries++;
            if (rc != CLIENT_EPROTO) break;   /* a garbled answer: the batch may or may not be in; resend */
            if (tries >= 3) break;
        }
        json_decref(body);
        rc = client_refusal(c, rc);   /* 401/403 (token) and 404 (job gone) are not the points' fault */
        if (rc != CLIENT_OK && rc != CLIENT_EREJECTED) break;
        /* acknowledged, or refused as malformed (400, 413, 422...: resending cannot help) */
        pthread_mutex_lock(&o->mu);
        outbox_drop_head(o, n);
        if (rc == CLIENT_OK) o->sent += (long long)n; else o->rejected += (long long)n;
        pthread_mutex_unlock(&o->mu);
        left -= n;
        if (rc == CLIENT_EREJECTED) {
            char e[4 * sizeof c->err];
            fprintf(stderr, "prism-worker%s%s: %zu metric points refused and dropped: %s\n", *c->who ? " " : "",
                    c->who, n, log_escape(e, sizeof e, c->err));
            rc = CLIENT_OK;
        }
    }
    pthread_mutex_unlock(&o->flush_mu);
    return rc;
}
