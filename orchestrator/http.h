/* http.h — the orchestrator's HTTP/1.1 server: http-parser sessions carried over libuv TCP connections.
 *
 * Two layers:
 *  - http_session: transport-free. Bytes go in with http_session_feed(); every complete request is handed
 *    to the handler, whose answer is serialised onto s->out. Used by the server and by the fuzzer.
 *  - http_server: a libuv listener. Responses are not written as soon as the handler returns: once per loop
 *    iteration (a uv_check handle, i.e. right after the poll phase read everything that had arrived) the
 *    server calls opts.flush(ud) — the API commits its open transaction there — and only then writes every
 *    pending response. So a 2xx is on the wire only after its COMMIT, and every request read in the same
 *    iteration shares one commit (group commit). If flush fails, the pending answers are dropped and their
 *    connections closed: the client sees a reset and retries, nothing unacknowledged is claimed. With
 *    opts.durable, a COMMIT only writes: opts.durable runs on a libuv pool thread after it (one at a time, no
 *    COMMIT meanwhile) and the batch's answers are written when it returned 0 (see http.c).
 *
 * Limits (each breach answered with a JSON error, then the connection closes): URL > HTTP_MAX_URL (413),
 * headers > HTTP_MAX_HEADERS bytes (413), body > HTTP_MAX_BODY (413), malformed HTTP (400), a request not
 * complete within request_timeout_s of its first byte (408), more than max_conns connections (503).
 * Idle keep-alive connections close after idle_timeout_s.
 *
 * Connections without a token. A connection is "trusted" from the first request whose Authorization header
 * opts.trusted() accepts (checked when the headers are complete, before the body). Until then it is
 * anonymous, and: it is closed after anon_timeout_s without a complete request (idle or half-sent: a
 * request begun is answered 408); one client address holds at most max_conns_per_addr anonymous
 * connections (the next is admitted and the address's oldest anonymous one closed, so a tokened worker or
 * /healthz behind the same NAT still gets in); at max_conns a new connection replaces the oldest
 * anonymous one (closed without an answer), and gets 503 only when every open connection is trusted. So
 * sockets that never send cannot hold the server, and connections that showed a token are never refused
 * for lack of room by anonymous ones. Trusted connections are not capped per address (a NAT'd fleet
 * shares one).
 *
 * Ownership: a session owns its request buffers and its out buffer; http_session_release frees them.
 * A connection's handles live in its struct and the struct is freed only in the last close callback.
 */
#ifndef PRISM_HTTP_H
#define PRISM_HTTP_H
#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "blob.h"
#include "buf.h"

#define HTTP_MAX_URL      4096
#define HTTP_MAX_HEADERS  (16 * 1024)
#define HTTP_MAX_BODY     (8 * 1024 * 1024)
#define HTTP_MAX_AUTH     512
#define HTTP_MAX_ETAG     128   /* an If-None-Match longer than this is ignored (the full answer is sent) */
/* Answers a connection may have buffered (serialised, or queued for a client that is not reading) before the
 * server stops reading from it: pipelined requests cannot make the server hold unbounded output. */
#define HTTP_MAX_OUT      (4 * 1024 * 1024)

typedef struct http_request {
    int method;                     /* enum http_method (HTTP_GET, HTTP_POST, ...) */
    char url[HTTP_MAX_URL + 1];     /* raw request target */
    size_t url_len;
    const char *path;               /* points into url: before '?' (NUL-terminated in place) */
    const char *query;              /* points into url: after '?', "" when none */
    char auth[HTTP_MAX_AUTH + 1];   /* Authorization header value, "" when absent */
    int auth_too_long;
    int expect_continue;            /* "Expect: 100-continue" was sent */
    char if_none_match[HTTP_MAX_ETAG + 1];   /* If-None-Match header value, "" when absent or too long */
    int if_none_match_long;
    buf body;                  /* NUL-terminated when len > 0 */
    double t_start;                 /* when its first byte arrived (util_now_s: monotonic) */
} http_request;

typedef struct http_response {
    int status;                     /* 0 until set */
    const char *content_type;       /* static string */
    const char *extra_headers;      /* static string of "Name: value\r\n" lines, or NULL */
    char etag[HTTP_MAX_ETAG + 1];   /* "" or the answer's entity tag (quotes included), sent as ETag: */
    buf body;                       /* never sent with 204 or 304 */
    blob *shared;                   /* a reference (the response's): sent as the body instead of body, without a
                                     * copy; the connection keeps it until written (http_response_set_shared) */
    int close;                      /* close the connection after this answer */
    int no_state;                   /* claims nothing about the database (/healthz, /metrics, the page's files):
                                     * written at once, not held for the COMMIT and sync of the batch */
} http_response;

/* Sets res to a JSON body `{"error": msg}` with the status. */
void http_response_error(http_response *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets res to a body (copied) with the status and type. Returns 0 or -1 (no memory: res becomes a 500). */
int http_response_set(http_response *res, int status, const char *content_type, const char *body, size_t len);

/* Sets res to the bytes of b with the status and type: res takes a NEW reference (the caller keeps its own) and
 * the connection writes b's bytes as they are, never copying them (a 25 MB leaderboard costs the loop a reference
 * count, not two copies). Replaces any body set before. */
void http_response_set_shared(http_response *res, int status, const char *content_type, blob *b);

/* 1 when the request's If-None-Match names etag (quotes included; a weak W/ form or `*` match too, RFC 9110's weak
 * comparison for GET): the client holds these bytes, and a 304 with no body answers it; 0 otherwise. */
int http_etag_matches(const http_request *r, const char *etag);

typedef void (*http_handler_fn)(void *ud, http_request *req, http_response *res);

/* A shared body waiting in a session's output: written after the first `at` bytes of out (its answer's head). */
#define HTTP_MAX_SHARED 8           /* shared bodies a session holds at once; more are copied into out */
typedef struct http_shared_seg {
    size_t at;
    blob *b;                        /* a reference, the session's */
} http_shared_seg;

typedef struct http_session {
    http_parser parser;
    http_request req;
    buf out;                   /* serialised answers waiting to be written */
    http_shared_seg seg[HTTP_MAX_SHARED];   /* shared bodies between out's bytes, in order (at non-decreasing); each
                                             * follows its head, so out.len > 0 while any is held */
    int nseg;
    size_t seg_bytes;               /* their bytes, all together (what the output caps count besides out.len) */
    buf held;                  /* bytes read but not parsed while paused (at most one read) */
    int paused;                     /* out reached HTTP_MAX_OUT: parsing stopped at a request boundary */
    http_handler_fn handler;
    void *ud;
    size_t header_bytes;
    char hname[32];                 /* current header name (lower case, truncated) */
    size_t hname_len;
    int hname_long;                 /* name longer than hname: not one we look at */
    int last_was_value;
    int auth_headers;               /* Authorization header lines in this request (a second one is a 400) */
    int out_needs_sync;             /* out holds an answer that must wait for the batch's COMMIT and sync */
    int in_message;                 /* a request has started and is not complete */
    int pending_status;             /* a limit breached inside a callback (413), or 400: two Authorization headers */
    int closing;                    /* no more requests: close once out is written */
    unsigned long requests;         /* answered so far */
    double slowest_s;               /* the longest handler call since the caller last zeroed it, and its path */
    char slowest_path[48];          /* (truncated): what a slow loop turn was doing */
    /* Set by the server after http_session_init (NULL: never trusted): called with the Authorization value
     * when a request's headers are complete, until it returns non-zero; then trusted = 1. */
    int (*trust)(void *ud, const char *authorization);
    int trusted;
} http_session;

void http_session_init(http_session *s, http_handler_fn handler, void *ud);
void http_session_release(http_session *s);
/* Parses data; each complete request runs the handler and appends its answer to s->out. Returns 0 to go
 * on reading, -1 when the connection must close once s->out is written (error answered, Connection:
 * close, HTTP/1.0), or 1 when s->out reached HTTP_MAX_OUT: parsing paused after a complete request, the
 * unparsed bytes are kept in s->held; stop reading and call http_session_resume() once out is written.
 * Bytes after a closing request are ignored. */
int http_session_feed(http_session *s, const char *data, size_t len);
/* Parses the held bytes of a paused session; same returns as http_session_feed (0 when not paused). */
int http_session_resume(http_session *s);
/* Appends to dst every byte s would write now, in order: out with the shared bodies in their places (what the
 * wire gets; for tests and tools, it copies). Returns 0, or -1 when dst could not grow (dst as buf_append leaves it). */
int http_session_output(const http_session *s, buf *dst);
/* Appends an error answer (used on timeouts) and marks the session closing. */
void http_session_fail(http_session *s, int status, const char *msg);

typedef struct http_server_opts {
    int max_conns;                  /* default 1024 */
    double idle_timeout_s;          /* default 60 */
    double request_timeout_s;       /* default 30 */
    double anon_timeout_s;          /* default 5: a connection without a token, idle or mid-request */
    int max_conns_per_addr;         /* default 64: connections without a token from one client address */
    /* Non-zero when an Authorization header value is a token of this server (may be NULL: every
     * connection stays anonymous). Called with the handler's ud. */
    int (*trusted)(void *ud, const char *authorization);
    /* A batch is committed and answered early once its first answer has waited this long while more
     * requests are still being read (bounds latency under load); default 0.005 s. When COMMITs take longer
     * than this, the window is their running average instead (so fsync cannot take most of the loop). */
    double max_batch_delay_s;
    /* Called once per loop iteration (not while a durable call is in flight) before pending answers are
     * written; returns 1 when it committed something, 0 when there was nothing to commit, or < 0 when what the
     * answers claim could not be committed (they are then dropped and their connections closed). */
    int (*flush)(void *ud);
    /* May be NULL (flush alone makes a commit durable). Called on a libuv pool thread after each flush that
     * returned 1, never two at once and never during a flush: makes what flush committed durable (fdatasync).
     * Returns 0, or < 0: every held answer is dropped (connections closed), the server commits nothing more,
     * and durable_failed(ud) is called on the loop (may be NULL). */
    int (*durable)(void *ud);
    void (*durable_failed)(void *ud);
    /* Called once when a graceful stop has finished (every connection closed); may be NULL. */
    void (*stopped)(void *ud);
} http_server_opts;

/* Bounds (seconds) of the loop-turn histogram (prism_loop_turn_seconds in /metrics). */
#define HTTP_TURN_BUCKETS 9
#define HTTP_TURN_BOUNDS { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0 }

struct http_conn;
struct http_addr_count;
typedef struct http_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_check_t check;
    http_handler_fn handler;
    void *ud;
    http_server_opts opts;
    struct http_conn *conns;        /* doubly linked list of open connections */
    int nconns;                     /* open connections (admitted, and refused ones still being answered) */
    int nadmitted;                  /* open connections not refused: the ones max_conns counts */
    struct http_conn *anon_head, *anon_tail;   /* anonymous admitted connections, oldest first */
    int nanon;
    struct http_conn *dirty;        /* connections with answers to write at the next check */
    struct http_addr_count **addr_tab;   /* anonymous connections per client address (hash table) */
    char *rbuf;                     /* one read buffer for every connection (reads are consumed at once) */
    int stopping;
    int listener_open, check_open;
    unsigned long accepted, rejected;
    unsigned long evicted;          /* anonymous connections closed to make room (max_conns, or per address) */
    unsigned long anon_timeouts;    /* anonymous connections closed after anon_timeout_s */
    double flush_max_s;             /* longest opts.flush call (the loop is blocked in it) */
    double flush_avg_s;             /* running average of opts.flush calls (sets the batch window) */
    unsigned long flush_over_10ms;  /* opts.flush calls that took more than 10 ms */
    double flush_sum_s;             /* time in opts.flush calls, all together (the loop's share in COMMITs) */
    unsigned long flushes;          /* opts.flush calls */
    double pending_since;           /* when the oldest unwritten answer was made; 0 when none */
    uv_work_t sync_work;            /* the durable call in flight */
    int sync_busy;                  /* 1 while it is queued or running: no COMMIT, answers held */
    int sync_rc;                    /* its return (set on the pool thread) */
    double sync_run_s;              /* its time on the pool thread */
    unsigned long syncs, sync_failures;
    double sync_sum_s, sync_max_s;  /* time in durable calls (off the loop), all together and the longest */
    int broken;                     /* a durable call failed: nothing is committed or answered any more */
    /* The loop's turns (check to check), less the time it slept in poll (uv_metrics_idle_time; the loop must be
     * configured with UV_METRICS_IDLE_TIME, http_server_start does it): how long one turn held every client. */
    uint64_t turn_at_ns, turn_idle_ns;   /* the last check's uv_hrtime and idle time (0: none yet) */
    unsigned long long turn_bucket[HTTP_TURN_BUCKETS + 1];   /* turns by busy time, HTTP_TURN_BOUNDS; last: longer */
    double turn_busy_sum_s, turn_busy_max_s;
    double turn_cpu_s, turn_cpu_max_s;   /* the loop thread's CPU time at the last check; the most one turn used */
    unsigned long turn_requests;    /* requests answered in the turn under way */
    double turn_slowest_s;          /* its longest handler call, and that request's path */
    char turn_slowest_path[48];
} http_server;

/* Binds host:port (IPv4 or IPv6 literal, or "localhost") and starts accepting on loop. port 0 picks a free
 * port; http_server_port() says which. Returns 0, or a negative libuv code with a message in err. */
int http_server_start(http_server *srv, uv_loop_t *loop, const char *host, int port,
                      http_handler_fn handler, void *ud, const http_server_opts *opts, char *err, size_t errlen);
int http_server_port(http_server *srv);
/* Graceful stop: stop accepting, answer what has been read, close every connection once its answers are
 * written; then opts.stopped(ud). Safe to call twice. */
void http_server_stop(http_server *srv);

/* Commits now (opts.flush, then the durable step) what was done outside a request, e.g. by a timer; when a
 * sync is in flight the commit follows it. */
void http_server_commit(http_server *srv);

/* "Not Found" for 404, etc. */
const char *http_status_text(int status);
#endif
