/* client.h — the worker's HTTP/JSON client for the orchestrator API (libcurl + jansson).
 *
 * One client per thread (a libcurl easy handle is not shareable): the device loop has one, the
 * device's reporter thread (heartbeats + metrics) has another. Every request has a connect timeout and a
 * total timeout. Network errors (connect refused, timeouts, resets, names not resolved), 5xx (but 501 and 505), 408 and
 * 429 are retried with
 * capped exponential backoff and jitter until `retry_for_s` seconds have passed (< 0: forever) or the
 * client's abort flag is raised. What no retry can cure is CLIENT_EPROTO at once, c->err naming the likely cause:
 * another scheme (https:// to a plain-HTTP server, http:// to a TLS one), a reply that is not HTTP, a malformed
 * URL, a refused certificate. Responses are read into a buffer capped at opts.max_response bytes.
 *
 * The outbox buffers metric points in order and sends them in batches; a point leaves the outbox only
 * once the server acknowledged the batch holding it (2xx), so nothing is dropped while the server is
 * down. Re-sending is safe: the server keys points by (job, attempt, step, kind). Only a batch the server
 * calls malformed (400, 413, 422, ...) is dropped; a refused token (401/403) or a gone job (404) is not
 * the points' fault, so they stay and the caller decides (client_refusal()).
 */
#ifndef PRISM_CLIENT_H
#define PRISM_CLIENT_H
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

enum {
    CLIENT_OK = 0,          /* a 2xx answer (204 included) */
    CLIENT_ENET = -1,       /* no 2xx/4xx answer before the retry budget ran out (network or 5xx) */
    CLIENT_ECONFLICT = -2,  /* 409: lease lost or job cancelled */
    CLIENT_EREJECTED = -3,  /* any other 4xx: the request itself is wrong; not retried */
    CLIENT_ESTOPPED = -4,   /* the abort flag was raised while retrying */
    CLIENT_EPROTO = -5,     /* the answer was not JSON or not HTTP, larger than max_response, or another scheme */
    CLIENT_ENOMEM = -6,
    /* Refinements of CLIENT_EREJECTED (client_request itself returns CLIENT_EREJECTED; client_refusal()
     * and outbox_flush() return these): */
    CLIENT_EAUTH = -7,      /* 401/403: the token is missing, wrong or revoked; nothing this worker sends will do */
    CLIENT_EGONE = -8,      /* 404: the job (or its sweep) is not on the server any more */
};

#define CLIENT_REMIND_S 30.0   /* seconds between "still cannot reach" lines while the server stays unreachable */

typedef struct client_opts {
    long connect_timeout_ms;   /* default 3000 */
    long timeout_ms;           /* whole request, default 30000 */
    double backoff_initial_s;  /* first retry delay, default 0.2 */
    double backoff_max_s;      /* cap on the delay, default 10 */
    size_t max_response;       /* bytes, default 4 MiB */
} client_opts;

typedef struct client {
    void *curl;                 /* CURL*, owned */
    void *headers;              /* struct curl_slist*, owned */
    char base[1024];            /* "http://host:port" without a trailing slash */
    client_opts opts;
    unsigned rng;               /* jitter state */
    volatile int *abort;        /* optional: non-zero stops retrying (CLIENT_ESTOPPED); not owned */
    int failing;                /* 1 while the server is unreachable (to log once, then on recovery) */
    double failing_since;       /* when this failure began, and when it was last said (a reminder every
                                 * CLIENT_REMIND_S while it lasts: a worker is never silent for long while the
                                 * server is down) */
    double failing_told;
    const char *who;            /* log prefix, not owned (e.g. "cpu") */
    long status;                /* HTTP status of the last answer (0: none) */
    char req[160];              /* "METHOD PATH" of the last request (for messages) */
    char err[512];              /* message of the last failure; for 4xx the server's "error" text */
    int err_json;               /* the last 4xx/409 answer was JSON with an "error" string (a prism-sweep answer) */
    int first_contact;          /* set by the caller for a first registration: a connection closed without any
                                 * answer (what a TLS port does to plain HTTP) is then CLIENT_EPROTO, not retried;
                                 * prism-sweep serve always answers, 503 included */
} client;

/* Fills opts with the defaults above. */
void client_opts_default(client_opts *o);

/* base_url: "http://HOST:PORT" (a trailing '/' is dropped); token: sent as "Authorization: Bearer TOKEN"
 * (may be NULL). opts may be NULL for the defaults. Returns 0, or CLIENT_ENOMEM with nothing left to free.
 * curl_global_init() must have run (prism-worker's main does it). */
int client_init(client *c, const char *base_url, const char *token, const client_opts *opts);
void client_release(client *c);   /* safe on a zeroed or released client */

/* Sends `body` (borrowed; NULL for GET) to base+path with method "GET" or "POST". Retries as described
 * above for up to retry_for_s seconds (< 0: forever). On CLIENT_OK *resp (if resp != NULL) is the parsed
 * JSON answer (a new reference the caller decrefs), or NULL for an empty body (204). On every return
 * c->status holds the last HTTP status (0 when none) and, on failure, c->err says why. */
int client_request(client *c, const char *method, const char *path, json_t *body, double retry_for_s,
                   json_t **resp);

/* What a CLIENT_EREJECTED from client_request means, by c->status: CLIENT_EAUTH for 401/403, CLIENT_EGONE
 * for 404, else CLIENT_EREJECTED (the request itself is wrong). Any other rc is returned unchanged. */
static inline int client_refusal(const client *c, int rc) {
    if (rc != CLIENT_EREJECTED) return rc;
    if (c->status == 401 || c->status == 403) return CLIENT_EAUTH;
    if (c->status == 404) return CLIENT_EGONE;
    return CLIENT_EREJECTED;
}

/* Metric points waiting to be acknowledged. Thread-safe: the trainer pushes, the reporter flushes. */
typedef struct outbox {
    pthread_mutex_t mu;
    pthread_mutex_t flush_mu;   /* one flush at a time */
    json_t *points;             /* array, oldest first; owned; [0, head) already sent (null), compacted now and then */
    size_t head;                /* the first pending point: removing a batch is O(batch), not O(outbox) */
    long long sent;             /* points acknowledged so far */
    long long rejected;         /* points the server refused as malformed (400/413/422...): logged and dropped */
    long long pushed;           /* points ever pushed */
} outbox;

int outbox_init(outbox *o);              /* 0 or CLIENT_ENOMEM */
void outbox_release(outbox *o);          /* drops whatever is left */
/* Appends a point (the reference is stolen, also on failure). */
int outbox_push(outbox *o, json_t *point);
size_t outbox_pending(outbox *o);
/* Points that have left the outbox (acknowledged, or refused as malformed): pushed − pending. A caller that notes
 * `pushed` when some event happens (a checkpoint) knows every point before it has left once this reaches it. */
long long outbox_out(outbox *o);
/* Sends the points pending when it is called to POST path as {"lease_token": T, "points": [...]} in batches
 * of at most max_batch, oldest first. Points pushed while it runs wait for the next flush: a trainer that
 * pushes faster than the server answers cannot keep the caller (the reporter, whose checkpoint report and
 * heartbeat come after the flush) in here for the rest of the job. A batch leaves the outbox only on a 2xx, or on a
 * 4xx that says the points themselves are malformed (400, 413, 422: any 4xx but 401, 403, 404 and 409;
 * they are counted in `rejected`, logged on stderr and dropped, since no resend can succeed). Returns
 * CLIENT_OK when those points are out, else the failing batch's code, the points staying, in order, for the next flush:
 * CLIENT_ECONFLICT (409), CLIENT_EAUTH (401/403: the worker's token is refused), CLIENT_EGONE (404: the job
 * is gone), CLIENT_ENET, CLIENT_ESTOPPED. */
int outbox_flush(outbox *o, client *c, const char *path, const char *lease_token, size_t max_batch,
                 double retry_for_s);
#endif
