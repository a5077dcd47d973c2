/* http.c — HTTP/1.1 sessions with http-parser: requests in, serialised answers (and shared bodies) out.
 *
 * Design: the session parses with http-parser callbacks that copy the URL, the Authorization and If-None-Match
 * headers and the body into capped buffers; any cap breached stops the parser and the answer is a 413. A complete
 * request is handled synchronously (the API touches SQLite in this thread) and its serialised answer appended to
 * the session's out buffer; a shared body (http_response_set_shared) is not copied but held as a reference at its
 * place in out (at most HTTP_MAX_SHARED at once), and the writer sends out's pieces and the bodies in order. A
 * client that pipelines requests without reading the answers is throttled: past HTTP_MAX_OUT of pending answers
 * the parser pauses at a request boundary (the rest of the read is held) and the caller stops reading until they
 * drain. The response builders the handlers use (http_response_*, http_status_text, http_etag_matches) are here.
 *
 * Why its own file: it knows no transport (no libuv), so the fuzzer and the unit tests drive it with bytes; the
 * libuv server that carries it over TCP, with the group commit and the timeouts, is http_server.c, the floor
 * above (ORCH_FLOORS in tools/layers.sh).
 */
#include "http.h"
#include "util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

/* ---- responses ----------------------------------------------------------------------------------- */

const char *http_status_text(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

int http_response_set(http_response *res, int status, const char *content_type, const char *body, size_t len) {
    res->body.len = 0;
    blob_unref(res->shared);
    res->shared = NULL;
    res->status = status;
    res->content_type = content_type;
    if (buf_append(&res->body, body, len, BUF_MAX) < 0) {
        res->status = 500;
        res->content_type = "application/json";
        res->body.len = 0;
        return -1;
    }
    return 0;
}

/* JSON-escapes msg into out (which has room for n bytes). */
static void json_escape(char *out, size_t n, const char *msg) {
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && o + 7 < n; p++) {
        if (*p == '"' || *p == '\\') { out[o++] = '\\'; out[o++] = (char)*p; }
        else if (*p < 0x20) o += (size_t)snprintf(out + o, n - o, "\\u%04x", *p);
        else out[o++] = (char)*p;
    }
    out[o] = 0;
}

void http_response_error(http_response *res, int status, const char *fmt, ...) {
    char msg[1024], esc[2200], body[2300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_escape(esc, sizeof esc, msg);
    int n = snprintf(body, sizeof body, "{\"error\": \"%s\"}", esc);
    http_response_set(res, status, "application/json", body, (size_t)n);
}

int http_etag_matches(const http_request *r, const char *etag) {
    const char *h = r->if_none_match;
    if (!etag[0] || !h[0]) return 0;
    while (*h == ' ' || *h == '\t') h++;
    if (h[0] == '*' && (h[1] == 0 || h[1] == ' ')) return 1;
    return strstr(h, etag) != NULL;   /* a tag is quoted whole: no tag is another's substring */
}

/* ---- session ------------------------------------------------------------------------------------- */

static http_session *S(http_parser *p) { return p->data; }

static int on_message_begin(http_parser *p) {
    http_session *s = S(p);
    http_request *r = &s->req;
    r->url_len = 0;
    r->url[0] = 0;
    r->auth[0] = 0;
    r->auth_too_long = 0;
    r->expect_continue = 0;
    r->if_none_match[0] = 0;
    r->if_none_match_long = 0;
    r->body.len = 0;
    r->t_start = util_now_s();
    s->header_bytes = 0;
    s->hname_len = 0;
    s->hname_long = 0;
    s->last_was_value = 0;
    s->auth_headers = 0;
    s->in_message = 1;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n) {
    http_request *r = &S(p)->req;
    if (r->url_len + n > HTTP_MAX_URL) { S(p)->pending_status = 413; return 1; }
    memcpy(r->url + r->url_len, at, n);
    r->url_len += n;
    r->url[r->url_len] = 0;
    return 0;
}

static int count_header(http_session *s, size_t n) {
    s->header_bytes += n;
    if (s->header_bytes > HTTP_MAX_HEADERS) { s->pending_status = 413; return 1; }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n) {
    http_session *s = S(p);
    if (count_header(s, n)) return 1;
    if (s->last_was_value) { s->hname_len = 0; s->hname_long = 0; s->last_was_value = 0; }
    if (s->hname_len + n >= sizeof s->hname) { s->hname_long = 1; return 0; }
    for (size_t i = 0; i < n; i++) s->hname[s->hname_len++] = (char)((at[i] >= 'A' && at[i] <= 'Z') ? at[i] + 32 : at[i]);
    s->hname[s->hname_len] = 0;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
    http_session *s = S(p);
    if (count_header(s, n)) return 1;
    int first_chunk = !s->last_was_value;   /* a value may arrive in pieces: count each header line once */
    s->last_was_value = 1;
    http_request *r = &s->req;
    if (!s->hname_long && strcmp(s->hname, "expect") == 0 && n >= 12 && strncasecmp(at, "100-continue", 12) == 0)
        r->expect_continue = 1;
    if (!s->hname_long && strcmp(s->hname, "if-none-match") == 0) {   /* kept whole or not at all */
        size_t have = first_chunk ? 0 : strlen(r->if_none_match);
        if (r->if_none_match_long || have + n > HTTP_MAX_ETAG) { r->if_none_match_long = 1; r->if_none_match[0] = 0; return 0; }
        memcpy(r->if_none_match + have, at, n);
        r->if_none_match[have + n] = 0;
        return 0;
    }
    if (s->hname_long || strcmp(s->hname, "authorization") != 0) return 0;
    if (first_chunk && ++s->auth_headers > 1) { s->pending_status = 400; return 1; }   /* never joined into one token */
    size_t have = strlen(r->auth);
    if (have + n > HTTP_MAX_AUTH) { r->auth_too_long = 1; return 0; }
    memcpy(r->auth + have, at, n);
    r->auth[have + n] = 0;
    return 0;
}

static int on_headers_complete(http_parser *p) {
    http_session *s = S(p);
    if (!s->trusted && s->trust && s->req.auth[0] && !s->req.auth_too_long && s->trust(s->ud, s->req.auth))
        s->trusted = 1;
    if (p->content_length != (uint64_t)-1 && p->content_length > HTTP_MAX_BODY) {
        S(p)->pending_status = 413;
        return -1;   /* http-parser: non-zero other than 1/2 is an error */
    }
    if (S(p)->req.expect_continue) {   /* the client waits for this before sending the body */
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        buf_append(&S(p)->out, cont, sizeof cont - 1, BUF_MAX);
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
    http_request *r = &S(p)->req;
    if (buf_append(&r->body, at, n, HTTP_MAX_BODY) < 0) { S(p)->pending_status = 413; return 1; }
    return 0;
}

/* Serialises res onto s->out. */
static void session_emit(http_session *s, http_response *res, int keep_alive, int head_only) {
    char head[1024];
    int st = res->status ? res->status : 500;
    if (!res->content_type) res->content_type = "application/json";
    char etag[HTTP_MAX_ETAG + 16] = "";
    if (res->etag[0]) snprintf(etag, sizeof etag, "ETag: %s\r\n", res->etag);
    int n, bodiless = st == 204 || st == 304;   /* RFC 9110: neither carries content */
    size_t body_len = res->shared ? res->shared->len : res->body.len;
    if (bodiless)
        n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n%s%sConnection: %s\r\n\r\n", st, http_status_text(st), etag,
                     res->extra_headers ? res->extra_headers : "", keep_alive ? "keep-alive" : "close");
    else
        n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%sConnection: %s\r\n\r\n",
                     st, http_status_text(st), res->content_type, body_len, etag,
                     res->extra_headers ? res->extra_headers : "", keep_alive ? "keep-alive" : "close");
    if (buf_append(&s->out, head, (size_t)n, BUF_MAX) < 0) { s->closing = 1; return; }   /* out of memory: it dies */
    if (bodiless || head_only || !body_len) return;
    if (res->shared && s->nseg < HTTP_MAX_SHARED) {   /* the bytes stay where they are: a reference moves */
        s->seg[s->nseg++] = (http_shared_seg){ .at = s->out.len, .b = res->shared };
        s->seg_bytes += res->shared->len;
        res->shared = NULL;
        return;
    }
    const char *body = res->shared ? res->shared->data : res->body.data;
    if (buf_append(&s->out, body, body_len, BUF_MAX) < 0) s->closing = 1;
}

void http_response_set_shared(http_response *res, int status, const char *content_type, blob *b) {
    res->body.len = 0;
    blob_unref(res->shared);
    res->shared = blob_ref(b);
    res->status = status;
    res->content_type = content_type;
}

static int on_message_complete(http_parser *p) {
    http_session *s = S(p);
    http_request *r = &s->req;
    s->in_message = 0;
    char *q = memchr(r->url, '?', r->url_len);
    if (q) { *q = 0; r->query = q + 1; } else r->query = "";
    r->path = r->url;
    r->method = p->method;
    http_response res = {0};
    int keep_alive = http_should_keep_alive(p);
    double t0 = util_now_s();
    if (s->handler) s->handler(s->ud, r, &res);
    else http_response_error(&res, 404, "no handler");
    double took = util_now_s() - t0;
    if (took > s->slowest_s) {
        s->slowest_s = took;
        snprintf(s->slowest_path, sizeof s->slowest_path, "%s", r->path);
    }
    if (res.close) keep_alive = 0;
    if (!res.no_state) s->out_needs_sync = 1;
    session_emit(s, &res, keep_alive, r->method == HTTP_HEAD);
    buf_free(&res.body);
    blob_unref(res.shared);   /* not moved into the session: a HEAD, a bodiless status, or out of memory */
    s->requests++;
    if (!keep_alive) { s->closing = 1; return 1; }   /* stop parsing what follows */
    if (s->out.len + s->seg_bytes >= HTTP_MAX_OUT) http_parser_pause(p, 1);   /* pipelined flood: parse the rest later */
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void http_session_init(http_session *s, http_handler_fn handler, void *ud) {
    memset(s, 0, sizeof *s);
    http_parser_init(&s->parser, HTTP_REQUEST);
    s->parser.data = s;
    s->handler = handler;
    s->ud = ud;
}

void http_session_release(http_session *s) {
    buf_free(&s->req.body);
    buf_free(&s->out);
    for (int i = 0; i < s->nseg; i++) blob_unref(s->seg[i].b);
    s->nseg = 0;
    s->seg_bytes = 0;
    buf_free(&s->held);
}

void http_session_fail(http_session *s, int status, const char *msg) {
    http_response res = {0};
    http_response_error(&res, status, "%s", msg);
    session_emit(s, &res, 0, 0);
    buf_free(&res.body);
    s->closing = 1;
    s->in_message = 0;
}

int http_session_feed(http_session *s, const char *data, size_t len) {
    if (s->closing) return -1;
    size_t n = http_parser_execute(&s->parser, &settings, data, len);
    if (s->closing) return -1;
    enum http_errno e = HTTP_PARSER_ERRNO(&s->parser);
    if (e == HPE_PAUSED) {   /* on_message_complete: out is full; keep the rest for http_session_resume */
        http_parser_pause(&s->parser, 0);
        s->held.len = 0;
        if (n < len && buf_append(&s->held, data + n, len - n, BUF_MAX) < 0) {
            s->closing = 1;   /* out of memory: answer what we have, then close */
            return -1;
        }
        s->paused = 1;
        return 1;
    }
    if (s->pending_status == 413) {
        http_session_fail(s, 413, "request too large: URL must be under 4 KiB, headers under 16 KiB and the body "
                                  "under 8 MiB (send metrics in smaller batches)");
        return -1;
    }
    if (s->pending_status == 400) {
        http_session_fail(s, 400, "more than one Authorization header: send the token in exactly one");
        return -1;
    }
    if (e == HPE_HEADER_OVERFLOW) {
        http_session_fail(s, 413, "request headers too large (limit 16 KiB)");
        return -1;
    }
    if (e != HPE_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", http_errno_description(e));
        http_session_fail(s, 400, msg);
        return -1;
    }
    if (n != len) {
        http_session_fail(s, 400, "malformed HTTP request");
        return -1;
    }
    return 0;
}

int http_session_output(const http_session *s, buf *dst) {
    size_t from = 0;
    for (int i = 0; i < s->nseg; i++) {
        if (buf_append(dst, s->out.data + from, s->seg[i].at - from, BUF_MAX) < 0 ||
            buf_append(dst, s->seg[i].b->data, s->seg[i].b->len, BUF_MAX) < 0) return -1;
        from = s->seg[i].at;
    }
    return s->out.len > from ? buf_append(dst, s->out.data + from, s->out.len - from, BUF_MAX) : 0;
}

int http_session_resume(http_session *s) {
    if (!s->paused) return 0;
    s->paused = 0;
    buf in = s->held;   /* feed may hold bytes again: give it a fresh buffer */
    memset(&s->held, 0, sizeof s->held);
    int rc = in.len ? http_session_feed(s, in.data, in.len) : 0;
    buf_free(&in);
    return rc;
}
