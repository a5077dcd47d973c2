/* http.h — the orchestrator's HTTP/1.1 sessions: http-parser requests in, serialised answers out.
 *
 * Two layers:
 *  - http_session (here): transport-free. Bytes go in with http_session_feed(); every complete request is handed
 *    to the handler, whose answer is serialised onto s->out. Used by the server and by the fuzzer.
 *  - http_server (http_server.h): a libuv listener carrying sessions over TCP, answers written after the group
 *    commit.
 *
 * Limits (each breach answered with a JSON error, then the connection closes): URL > HTTP_MAX_URL (413),
 * headers > HTTP_MAX_HEADERS bytes (413), body > HTTP_MAX_BODY (413), malformed HTTP (400), a request not
 * complete within request_timeout_s of its first byte (408), more than max_conns connections (503).
 * Idle keep-alive connections close after idle_timeout_s. (The timeouts and the caps on connections are
 * http_server.c's.)
 *
 * Ownership: a session owns its request buffers, its out buffer and the references of its shared bodies;
 * http_session_release frees them.
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

/* "Not Found" for 404, etc. */
const char *http_status_text(int status);
#endif
