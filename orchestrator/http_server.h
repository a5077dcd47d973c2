/* http_server.h — the orchestrator's HTTP/1.1 server: http.h's sessions carried over libuv TCP connections.
 *
 * A libuv listener. Responses are not written as soon as the handler returns: once per loop
 * iteration (a uv_check handle, i.e. right after the poll phase read everything that had arrived) the
 * server calls opts.flush(ud) — the API commits its open transaction there — and only then writes every
 * pending response. So a 2xx is on the wire only after its COMMIT, and every request read in the same
 * iteration shares one commit (group commit). If flush fails, the pending answers are dropped and their
 * connections closed: the client sees a reset and retries, nothing unacknowledged is claimed. With
 * opts.durable, a COMMIT only writes: opts.durable runs on a libuv pool thread after it (one at a time, no
 * COMMIT meanwhile) and the batch's answers are written when it returned 0 (see http_server.c).
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
 * Ownership: a connection's handles live in its struct and the struct is freed only in the last close callback.
 */
#ifndef PRISM_HTTP_SERVER_H
#define PRISM_HTTP_SERVER_H
#include <stdint.h>
#include <uv.h>

#include "http.h"

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
#endif
