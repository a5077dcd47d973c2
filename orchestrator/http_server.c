/* http_server.c — HTTP/1.1 over libuv: http.c's sessions on TCP connections, answers written after the group commit.
 *
 * Design: a connection (struct http_conn) embeds its uv_tcp_t, a uv_timer_t and an http_session (http.c parses and
 * serialises); the struct is freed when the second of its two handles has finished closing. Reads go into one
 * 64 KiB buffer owned by the server, so no read allocates. A uv_check handle runs after each poll phase: it calls
 * opts.flush (the API's COMMIT) and then writes every connection's out buffer in one uv_write, so nothing is
 * acknowledged before it is durable and concurrent requests share one fsync. When a session's out reaches
 * HTTP_MAX_OUT its parser pauses and reading stops until the answers drain.
 *
 * Durability off the loop (opts.durable): when flush committed something, the answers answered before it
 * (the batch) are not written yet: each waiting connection marks how many bytes of its out buffer belong to
 * the batch (ready), and opts.durable runs on a libuv pool thread (the fdatasync). Its completion writes
 * exactly those bytes; answers made meanwhile stay held for the next batch. At most one sync is in flight and
 * no COMMIT starts while it is (the loop keeps reading and answering inside the open transaction), so the
 * sync of COMMIT k covers every byte COMMIT k wrote, and COMMIT k+1 follows it; when it completes, the next
 * batch is committed by the check phase right after (the completion runs in the poll phase). A batch with
 * nothing to commit (reads only) is written once no sync is in flight: what it read was durable then. A
 * failed sync drops every held answer (connections closed) and stops all further commits
 * (opts.durable_failed decides what the program does). An answer the handler marks no_state (/healthz,
 * /metrics, the page's files: nothing a crash could take back) is written at once when nothing older waits on
 * its connection, so a slow disk does not hold it; a connection whose answer waits for a sync is not idle.
 *
 * Timers: one per connection. While a request is partly received it is the slow-request deadline (armed at
 * the request's first byte, not re-armed by later bytes, so a trickle cannot hold a connection); between
 * requests it is the idle timeout, re-armed by each request. For an anonymous connection (no token seen yet)
 * both are anon_timeout_s at most. A connection whose answer is still being written is not idle while the client
 * takes some of it in each timeout (the write queue shrank since the timer last fired), so no answer is cut for a
 * client that reads it; one that takes nothing for a whole timeout is closed.
 *
 * Scale: nothing walks every connection per loop iteration. Connections with answers to write are on a
 * dirty list that the check walks; anonymous connections are on their own list, oldest first (the one to
 * close when the table is full); a small hash table counts anonymous connections per client address. Reads
 * go into one buffer owned by the server: every byte read is parsed (or copied aside) before the read
 * callback returns, so a connection costs its parser state and nothing more while idle.
 *
 * Size: the connection, the dirty list, the batch marks and the sync job are one state machine (a write completion,
 * a timer, the check phase and a sync completion each move a connection on), so they stay in this one file; the
 * session they carry (parsing, limits, the answers' bytes and shared bodies) is http.c's, below this floor.
 */
#include "http_server.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

/* ---- libuv server -------------------------------------------------------------------------------- */

typedef struct http_conn {
    uv_tcp_t tcp;             /* handle 1 */
    uv_timer_t timer;         /* handle 2 */
    http_server *srv;
    http_session sess;
    struct http_conn *prev, *next;
    int open_handles;         /* freed when this reaches 0 */
    int closing;
    int writes;               /* uv_write requests in flight */
    int timer_is_request;     /* 1: slow-request deadline armed */
    int read_paused;          /* reading stopped: answers over HTTP_MAX_OUT wait for the client */
    int admitted;             /* counted in nadmitted (not a refused connection) */
    int anon;                 /* on the anonymous list and counted for its address */
    struct http_conn *aprev, *anext;   /* anonymous list */
    struct http_conn *pprev, *pnext;   /* its address's anonymous connections, oldest first */
    int is_dirty;
    struct http_conn *dprev, *dnext;   /* dirty list */
    unsigned char addr[16];   /* client address (IPv4 in the first 4 bytes) */
    int addr_len;             /* 4, 16, or 0 when unknown */
    size_t ready;             /* bytes at the head of sess.out that belong to the committed batch */
    size_t wq_seen;           /* tcp.write_queue_size when the idle timer last fired with an answer being written
                               * (SIZE_MAX: not since it was armed) */
} http_conn;

/* ---- anonymous connections per address ------------------------------------------------------------ */

#define ADDR_TAB 4096   /* buckets */

typedef struct http_addr_count {
    unsigned char addr[16];
    int addr_len;
    int n;
    struct http_conn *head, *tail;   /* the address's anonymous connections, oldest first */
    struct http_addr_count *next;
} http_addr_count;

static unsigned addr_hash(const unsigned char *a, int n) {
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++) h = (h ^ a[i]) * 16777619u;
    return h % ADDR_TAB;
}

static http_addr_count **addr_slot(http_server *srv, const unsigned char *a, int n) {
    http_addr_count **pp = &srv->addr_tab[addr_hash(a, n)];
    while (*pp && !((*pp)->addr_len == n && memcmp((*pp)->addr, a, (size_t)n) == 0)) pp = &(*pp)->next;
    return pp;
}

static http_addr_count *addr_entry(http_server *srv, const http_conn *c) {
    if (!c->addr_len || !srv->addr_tab) return NULL;
    return *addr_slot(srv, c->addr, c->addr_len);
}

static int addr_count(http_server *srv, const http_conn *c) {
    http_addr_count *e = addr_entry(srv, c);
    return e ? e->n : 0;
}

/* Whether c has shown nothing yet: no request under way, no answer pending, and no bytes waiting unread on its
 * socket (a request that arrived in this loop turn, behind the accepts of a flood, is not read yet). */
static int conn_silent(http_conn *c) {
    if (c->sess.in_message || c->writes || c->is_dirty || c->sess.out.len) return 0;
    uv_os_fd_t fd;
    char b;
    return !(uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1);
}

#define EVICT_SCAN 64   /* connections looked at for a silent one before the oldest is taken anyway */

/* The anonymous connection to close to make room, from the list starting at c (oldest first, next_of links it):
 * the oldest silent one among the first EVICT_SCAN, else the oldest. A reopen flood from one address thus closes
 * its own silent connections, not a worker's behind the same address whose request waits unread (57 of 60
 * registrations got through a flood before). */
static http_conn *evict_pick(http_conn *c, int per_addr) {
    http_conn *oldest = c;
    for (int i = 0; c && i < EVICT_SCAN; i++, c = per_addr ? c->pnext : c->anext)
        if (conn_silent(c)) return c;
    return oldest;
}

/* The anonymous connection from c's address to close to make room (evict_pick), or NULL. */
static http_conn *addr_oldest(http_server *srv, const http_conn *c) {
    http_addr_count *e = addr_entry(srv, c);
    return e ? evict_pick(e->head, 1) : NULL;
}

/* Counts c for its address and links it last on the address's list; returns 0 or -1 (no memory: the caller
 * refuses the connection). */
static int addr_link(http_server *srv, http_conn *c) {
    if (!c->addr_len || !srv->addr_tab) return 0;
    http_addr_count **pp = addr_slot(srv, c->addr, c->addr_len);
    if (!*pp) {
        http_addr_count *e = calloc(1, sizeof *e);
        if (!e) return -1;
        memcpy(e->addr, c->addr, (size_t)c->addr_len);
        e->addr_len = c->addr_len;
        *pp = e;
    }
    http_addr_count *e = *pp;
    e->n++;
    c->pprev = e->tail;
    c->pnext = NULL;
    if (e->tail) e->tail->pnext = c; else e->head = c;
    e->tail = c;
    return 0;
}

static void addr_unlink(http_server *srv, http_conn *c) {
    if (!c->addr_len || !srv->addr_tab) return;
    http_addr_count **pp = addr_slot(srv, c->addr, c->addr_len);
    http_addr_count *e = *pp;
    if (!e) return;
    if (c->pprev) c->pprev->pnext = c->pnext; else e->head = c->pnext;
    if (c->pnext) c->pnext->pprev = c->pprev; else e->tail = c->pprev;
    c->pprev = c->pnext = NULL;
    if (--e->n <= 0) {
        *pp = e->next;
        free(e);
    }
}

/* Takes c off the anonymous list and its address count (it showed a token, or it is closing). */
static void anon_remove(http_conn *c) {
    http_server *srv = c->srv;
    if (!c->anon) return;
    c->anon = 0;
    if (c->aprev) c->aprev->anext = c->anext; else srv->anon_head = c->anext;
    if (c->anext) c->anext->aprev = c->aprev; else srv->anon_tail = c->aprev;
    c->aprev = c->anext = NULL;
    srv->nanon--;
    addr_unlink(srv, c);
}

static void mark_dirty(http_conn *c) {
    http_server *srv = c->srv;
    if (c->is_dirty || c->closing) return;
    c->is_dirty = 1;
    c->dprev = NULL;
    c->dnext = srv->dirty;
    if (srv->dirty) srv->dirty->dprev = c;
    srv->dirty = c;
}

static void unmark_dirty(http_conn *c) {
    if (!c->is_dirty) return;
    c->is_dirty = 0;
    if (c->dprev) c->dprev->dnext = c->dnext; else c->srv->dirty = c->dnext;
    if (c->dnext) c->dnext->dprev = c->dprev;
    c->dprev = c->dnext = NULL;
}

typedef struct write_req {
    uv_write_t req;
    http_conn *conn;
    char *data;               /* owned */
    blob *shared[HTTP_MAX_SHARED];   /* references to the shared bodies written with it */
    int nshared;
} write_req;

static void conn_maybe_stopped(http_server *srv);
static void conn_flush(http_conn *c, size_t n);
static void server_check(uv_check_t *h);

static void conn_handle_closed(uv_handle_t *h) {
    http_conn *c = h->data;
    if (--c->open_handles > 0) return;
    http_server *srv = c->srv;
    http_session_release(&c->sess);
    free(c);
    conn_maybe_stopped(srv);
}

static void conn_close(http_conn *c) {
    if (c->closing) return;
    c->closing = 1;
    http_server *srv = c->srv;
    if (c->prev) c->prev->next = c->next; else srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    srv->nconns--;
    if (c->admitted) srv->nadmitted--;
    anon_remove(c);
    unmark_dirty(c);
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

/* A timeout of c: limit_s, at most anon_timeout_s while c is anonymous. */
static double conn_limit_s(const http_conn *c, double limit_s) {
    return c->anon && limit_s > c->srv->opts.anon_timeout_s ? c->srv->opts.anon_timeout_s : limit_s;
}

static void conn_timeout(uv_timer_t *t) {
    http_conn *c = t->data;
    if (c->anon && !c->sess.in_message && !c->sess.closing && !c->read_paused) {
        /* Timers run before the poll that reads: after a long loop iteration (a saturated server) a new
         * worker's first request may be waiting unread. Bytes waiting are not silence: read them first. */
        uv_os_fd_t fd;
        char b;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
            uv_timer_start(&c->timer, conn_timeout, 1000, 0);
            return;
        }
    }
    if (c->writes > 0 && !c->sess.in_message && !c->sess.closing && c->tcp.write_queue_size < c->wq_seen) {
        /* an answer is still being written and the client took some of it since the timer last fired: it reads, it
         * is not idle. Cut mid-answer, the client would hold a body shorter than its Content-Length (an anonymous
         * reader of a 308 MB answer got 4 MB of it after --anon-timeout). A reader that takes nothing for a whole
         * timeout is cut as before. */
        c->wq_seen = c->tcp.write_queue_size;
        uv_timer_start(&c->timer, conn_timeout, (uint64_t)(conn_limit_s(c, c->srv->opts.idle_timeout_s) * 1000), 0);
        return;
    }
    if (c->is_dirty && !c->sess.in_message && !c->sess.closing) {
        /* its answer waits for the batch's sync (a slow disk): not silence; it is written when the sync ends */
        uv_timer_start(&c->timer, conn_timeout, 1000, 0);
        return;
    }
    if (c->anon && !c->sess.closing) c->srv->anon_timeouts++;
    if (c->sess.in_message) {
        http_session_fail(&c->sess, 408, "request not completed in time (slow-request timeout)");
        uv_read_stop((uv_stream_t *)&c->tcp);   /* answered at the next flush, then closed */
        uv_timer_start(&c->timer, conn_timeout, 5000, 0);   /* hard close if even that write stalls */
        c->timer_is_request = 0;
        mark_dirty(c);
        return;
    }
    conn_close(c);
}

static void arm_timer(http_conn *c) {
    http_server *srv = c->srv;
    c->wq_seen = SIZE_MAX;
    double req = conn_limit_s(c, srv->opts.request_timeout_s), idle = conn_limit_s(c, srv->opts.idle_timeout_s);
    if (c->sess.in_message) {
        if (!c->timer_is_request) {
            c->timer_is_request = 1;
            uv_timer_start(&c->timer, conn_timeout, (uint64_t)(req * 1000), 0);
        }
    } else {
        c->timer_is_request = 0;
        uv_timer_start(&c->timer, conn_timeout, (uint64_t)(idle * 1000), 0);
    }
}

/* The session showed a token: the connection leaves the anonymous list and gets the full timeouts (a
 * request under way gets a fresh request_timeout_s from now). */
static void conn_check_trust(http_conn *c) {
    if (!c->anon || !c->sess.trusted) return;
    anon_remove(c);
    c->timer_is_request = 0;
}

#define HTTP_RBUF (64 * 1024)

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    http_conn *c = h->data;
    buf->base = c->srv->rbuf;   /* consumed by conn_read before the next read */
    buf->len = HTTP_RBUF;
}

/* How long answers may wait for more requests to share their COMMIT while requests are still being read:
 * max_batch_delay_s, or as long as a COMMIT has been taking (running average) if that is longer. A batch
 * cut at 5 ms behind a 17 ms fsync spends most of the loop in fsync: measured on this VM under a
 * 2,000-box fleet, 57 commits/s of 18 requests each, ~1,050 requests/s, p50 1 s. Matching the window to
 * the COMMIT keeps at least half the loop for requests whatever the disk does. */
static double batch_window(const http_server *srv) {
    return srv->flush_avg_s > srv->opts.max_batch_delay_s ? srv->flush_avg_s : srv->opts.max_batch_delay_s;
}

static void conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
    http_conn *c = st->data;
    if (nread < 0) {                       /* EOF or error: drop the connection (pending answers too) */
        if (c->sess.out.len == 0 && c->writes == 0) conn_close(c);
        else { uv_read_stop(st); c->sess.closing = 1; }
        return;
    }
    if (nread == 0) return;
    if (c->srv->stopping && !c->sess.in_message && c->sess.out.len == 0) { conn_close(c); return; }
    size_t before = c->sess.out.len;
    http_server *srv = c->srv;
    unsigned long r0 = c->sess.requests;
    c->sess.slowest_s = 0;
    int frc = http_session_feed(&c->sess, buf->base, (size_t)nread);
    srv->turn_requests += c->sess.requests - r0;
    if (c->sess.slowest_s > srv->turn_slowest_s) {
        srv->turn_slowest_s = c->sess.slowest_s;
        memcpy(srv->turn_slowest_path, c->sess.slowest_path, sizeof srv->turn_slowest_path);
    }
    conn_check_trust(c);
    if (frc < 0) uv_read_stop(st);
    else {
        if (frc > 0) { uv_read_stop(st); c->read_paused = 1; }   /* resumed in write_done */
        arm_timer(c);
    }
    if (c->sess.out.len > before && !c->sess.out_needs_sync) {
        unmark_dirty(c);              /* only answers that claim no database state: no COMMIT or sync to wait for */
        c->ready = 0;
        conn_flush(c, c->sess.out.len);
    } else if (c->sess.out.len > before) {
        mark_dirty(c);
        double t = util_now_s();
        if (srv->pending_since == 0) srv->pending_since = t;
        else if (t - srv->pending_since > batch_window(srv)) server_check(&srv->check);   /* commit now */
    }
}

/* Reading was paused for a client that does not read its answers; they have drained: parse what is held
 * and read again (or stay paused). New answers are committed and written at once (server_check), since the
 * loop may otherwise sleep in poll with them pending. */
static void conn_resume(http_conn *c) {
    http_server *srv = c->srv;
    c->read_paused = 0;
    size_t before = c->sess.out.len;
    int rc = http_session_resume(&c->sess);
    conn_check_trust(c);
    if (c->sess.out.len > before) mark_dirty(c);
    if (rc > 0) c->read_paused = 1;
    else if (rc == 0) uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read);
    if (rc >= 0) arm_timer(c);
    if (c->sess.out.len > before) server_check(&srv->check);
}

static void write_done(uv_write_t *w, int status) {
    write_req *wr = (write_req *)w;
    http_conn *c = wr->conn;
    free(wr->data);
    for (int i = 0; i < wr->nshared; i++) blob_unref(wr->shared[i]);
    free(wr);
    c->writes--;
    if (c->closing) return;
    if (status < 0) { conn_close(c); return; }
    if (c->writes == 0 && c->sess.out.len == 0 && (c->sess.closing || (c->srv->stopping && !c->sess.in_message)))
        conn_close(c);
    else if (c->read_paused && !c->sess.closing &&
             c->tcp.write_queue_size + c->sess.out.len + c->sess.seg_bytes <= HTTP_MAX_OUT / 2)
        conn_resume(c);
    else if (c->read_paused && !c->sess.in_message)
        arm_timer(c);   /* the client is reading: not idle */
}

/* Writes the first n bytes of c's out buffer, and the shared bodies among them (the rest stays for a later
 * batch): one uv_write of out's pieces and the bodies between them, in order. */
static void conn_flush(http_conn *c, size_t n) {
    if (c->closing || n == 0) return;
    if (n > c->sess.out.len) n = c->sess.out.len;
    write_req *wr = calloc(1, sizeof *wr);
    if (!wr) { conn_close(c); return; }
    wr->conn = c;
    http_session *s = &c->sess;
    if (n == s->out.len) {
        s->out_needs_sync = 0;
        wr->data = s->out.data;      /* ownership moves to the write request */
        s->out.data = NULL;
        s->out.len = s->out.cap = 0;
    } else {
        wr->data = malloc(n);
        if (!wr->data) { free(wr); conn_close(c); return; }
        memcpy(wr->data, s->out.data, n);
        memmove(s->out.data, s->out.data + n, s->out.len - n);
        s->out.len -= n;
        s->out.data[s->out.len] = 0;
    }
    /* out's first n bytes cut at each shared body that follows one of them (a body at n goes too: it is the body
     * of the head just before it) */
    uv_buf_t b[2 * HTTP_MAX_SHARED + 1];
    int nb = 0, k = 0;
    size_t from = 0;
    for (; k < s->nseg && s->seg[k].at <= n; k++) {
        if (s->seg[k].at > from) b[nb++] = uv_buf_init(wr->data + from, (unsigned)(s->seg[k].at - from));
        b[nb++] = uv_buf_init(s->seg[k].b->data, (unsigned)s->seg[k].b->len);
        wr->shared[wr->nshared++] = s->seg[k].b;   /* the session's reference moves to the write */
        s->seg_bytes -= s->seg[k].b->len;
        from = s->seg[k].at;
    }
    if (n > from) b[nb++] = uv_buf_init(wr->data + from, (unsigned)(n - from));
    memmove(s->seg, s->seg + k, (size_t)(s->nseg - k) * sizeof s->seg[0]);
    s->nseg -= k;
    for (int i = 0; i < s->nseg; i++) s->seg[i].at -= n;
    if (uv_write(&wr->req, (uv_stream_t *)&c->tcp, b, (unsigned)nb, write_done) < 0) {
        free(wr->data);
        for (int i = 0; i < wr->nshared; i++) blob_unref(wr->shared[i]);
        free(wr);
        conn_close(c);
        return;
    }
    c->writes++;
    if (!c->read_paused && !c->sess.closing && c->tcp.write_queue_size > HTTP_MAX_OUT) {
        uv_read_stop((uv_stream_t *)&c->tcp);   /* the client is not reading: neither do we */
        c->read_paused = 1;
    }
}

/* Writes every waiting connection's batch bytes (ready); connections with answers made after the batch stay
 * on the dirty list. */
static void server_release(http_server *srv) {
    http_conn *c = srv->dirty, *next;
    for (; c; c = next) {
        next = c->dnext;
        size_t n = c->ready;
        c->ready = 0;
        if (n >= c->sess.out.len) unmark_dirty(c);
        if (n) conn_flush(c, n);
    }
}

/* Closes every connection holding answers: what they claim is not durable. */
static void server_drop(http_server *srv) {
    while (srv->dirty) {
        http_conn *c = srv->dirty;
        unmark_dirty(c);
        c->ready = 0;
        conn_close(c);
    }
}

static void sync_run(uv_work_t *w) {   /* pool thread */
    http_server *srv = w->data;
    double t0 = util_now_s();
    srv->sync_rc = srv->opts.durable(srv->ud);
    srv->sync_run_s = util_now_s() - t0;
}

static void sync_done(uv_work_t *w, int status) {   /* loop thread */
    http_server *srv = w->data;
    srv->sync_busy = 0;
    srv->syncs++;
    srv->sync_sum_s += srv->sync_run_s;
    if (srv->sync_run_s > srv->sync_max_s) srv->sync_max_s = srv->sync_run_s;
    if (status < 0 || srv->sync_rc < 0) {
        srv->sync_failures++;
        srv->broken = 1;
        server_drop(srv);
        if (srv->opts.durable_failed) srv->opts.durable_failed(srv->ud);
        if (srv->stopping) conn_maybe_stopped(srv);
        return;
    }
    server_release(srv);
    /* The next batch is committed by the check phase that follows this poll phase (so it takes in the requests
     * read in this iteration too); when stopping, there may be no more iterations with work: commit now. */
    if (srv->stopping) {
        if (srv->check_open && !uv_is_closing((uv_handle_t *)&srv->check)) server_check(&srv->check);
        conn_maybe_stopped(srv);
    }
}

/* One turn of the loop ended (its I/O callbacks ran): adds its busy time, the time since the last check less what
 * the loop slept meanwhile, to the histogram. */
static void turn_note(http_server *srv) {
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(srv->loop);
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    double cpu = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    if (srv->turn_at_ns) {
        uint64_t span = now - srv->turn_at_ns, slept = idle - srv->turn_idle_ns;
        double busy = span > slept ? (double)(span - slept) * 1e-9 : 0, used = cpu - srv->turn_cpu_s;
        static const double bounds[HTTP_TURN_BUCKETS] = HTTP_TURN_BOUNDS;
        int b = 0;
        while (b < HTTP_TURN_BUCKETS && busy > bounds[b]) b++;
        srv->turn_bucket[b]++;
        srv->turn_busy_sum_s += busy;
        if (busy > srv->turn_busy_max_s) srv->turn_busy_max_s = busy;
        if (used > srv->turn_cpu_max_s) srv->turn_cpu_max_s = used;
        if (busy > 0.05)   /* a turn that held every client: the loop's own work (cpu), or the machine's (busy) */
            fprintf(stderr, "prism-sweep serve: event=slow-turn t=%.3f busy_ms=%.1f cpu_ms=%.1f requests=%lu slowest=%s slowest_ms=%.1f\n",
                    util_now_s(), busy * 1e3, used * 1e3, srv->turn_requests,
                    srv->turn_slowest_s > 0 ? srv->turn_slowest_path : "-", srv->turn_slowest_s * 1e3);
    }
    srv->turn_requests = 0;
    srv->turn_slowest_s = 0;
    srv->turn_at_ns = now;
    srv->turn_idle_ns = idle;
    srv->turn_cpu_s = cpu;
}

static void server_turn(uv_check_t *h) {   /* the check phase: a turn ended; commit and answer its batch */
    turn_note(h->data);
    server_check(h);
}

static void server_check(uv_check_t *h) {
    http_server *srv = h->data;
    if (srv->sync_busy) return;        /* answers wait for the sync in flight; sync_done comes back here */
    if (srv->broken) { server_drop(srv); return; }
    srv->pending_since = 0;
    double t0 = util_now_s();
    int rc = srv->opts.flush ? srv->opts.flush(srv->ud) : 0;
    double dt = util_now_s() - t0;   /* the loop does nothing else meanwhile: a long COMMIT stalls every client */
    if (dt > srv->flush_max_s) srv->flush_max_s = dt;
    srv->flush_avg_s += (dt - srv->flush_avg_s) * 0.2;
    if (dt > 0.010) srv->flush_over_10ms++;
    srv->flush_sum_s += dt;
    srv->flushes++;
    if (rc < 0) { server_drop(srv); return; }   /* not durable: acknowledge nothing */
    for (http_conn *c = srv->dirty; c; c = c->dnext) c->ready = c->sess.out.len;   /* the batch */
    if (rc > 0 && srv->opts.durable) {
        srv->sync_work.data = srv;
        if (uv_queue_work(srv->loop, &srv->sync_work, sync_run, sync_done) == 0) { srv->sync_busy = 1; return; }
        sync_run(&srv->sync_work);       /* cannot queue (never expected): sync here */
        srv->sync_busy = 1;
        sync_done(&srv->sync_work, 0);
        return;
    }
    server_release(srv);
}

/* Answers 503 with msg on a connection that is not admitted; it closes once that is written. */
static void conn_refuse(http_conn *c, const char *msg) {
    http_server *srv = c->srv;
    srv->rejected++;
    http_session_fail(&c->sess, 503, msg);
    mark_dirty(c);
    arm_timer(c);
}

static void on_connection(uv_stream_t *l, int status) {
    http_server *srv = l->data;
    if (status < 0) return;
    http_conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->srv = srv;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    http_session_init(&c->sess, srv->handler, srv->ud);
    c->sess.trust = srv->opts.trusted;
    c->next = srv->conns;
    if (srv->conns) srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0) { conn_close(c); return; }
    uv_tcp_nodelay(&c->tcp, 1);
    srv->accepted++;
    struct sockaddr_storage peer;
    int plen = sizeof peer;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen) == 0) {
        if (peer.ss_family == AF_INET) { memcpy(c->addr, &((struct sockaddr_in *)&peer)->sin_addr, 4); c->addr_len = 4; }
        else if (peer.ss_family == AF_INET6) { memcpy(c->addr, &((struct sockaddr_in6 *)&peer)->sin6_addr, 16); c->addr_len = 16; }
    }
    if (srv->stopping) { conn_refuse(c, "server is shutting down"); return; }   /* written at the next check */
    /* At the per-address cap the new connection is admitted and the address's oldest anonymous connection
     * closed: whether a connection is a worker's is known only once its headers arrive, and a fleet behind a
     * NAT, a tunnel or a TLS proxy shares one address, so refusing at accept would refuse tokened workers and
     * /healthz while one client holds idle sockets. An address still never holds more than the cap of them. */
    if (addr_count(srv, c) >= srv->opts.max_conns_per_addr) {
        http_conn *old = addr_oldest(srv, c);
        if (old) { srv->evicted++; conn_close(old); }
    }
    if (srv->nadmitted >= srv->opts.max_conns) {
        if (!srv->anon_head) { conn_refuse(c, "too many connections: retry later"); return; }
        srv->evicted++;
        conn_close(evict_pick(srv->anon_head, 0));   /* the oldest that has shown nothing (no token) makes room */
    }
    if (addr_link(srv, c) < 0) { conn_refuse(c, "out of memory: retry later"); return; }
    c->admitted = 1;
    srv->nadmitted++;
    c->anon = 1;
    c->aprev = srv->anon_tail;
    if (srv->anon_tail) srv->anon_tail->anext = c; else srv->anon_head = c;
    srv->anon_tail = c;
    srv->nanon++;
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read);
    arm_timer(c);
}

static void listener_closed(uv_handle_t *h) {
    http_server *srv = h->data;
    srv->listener_open = 0;
    conn_maybe_stopped(srv);
}

static void server_free_tables(http_server *srv) {
    if (srv->addr_tab) {
        for (int i = 0; i < ADDR_TAB; i++)
            while (srv->addr_tab[i]) { http_addr_count *e = srv->addr_tab[i]; srv->addr_tab[i] = e->next; free(e); }
        free(srv->addr_tab);
        srv->addr_tab = NULL;
    }
    free(srv->rbuf);
    srv->rbuf = NULL;
}

static void check_closed(uv_handle_t *h) {
    http_server *srv = h->data;
    srv->check_open = 0;
    server_free_tables(srv);
    if (srv->opts.stopped) srv->opts.stopped(srv->ud);
}

static void conn_maybe_stopped(http_server *srv) {
    if (!srv->stopping || srv->nconns > 0 || srv->listener_open || !srv->check_open) return;
    if (uv_is_closing((uv_handle_t *)&srv->check)) return;
    if (srv->sync_busy) return;            /* sync_done calls back */
    server_check(&srv->check);             /* last commit */
    if (srv->sync_busy) return;            /* ... and its sync */
    uv_close((uv_handle_t *)&srv->check, check_closed);
}

int http_server_start(http_server *srv, uv_loop_t *loop, const char *host, int port,
                      http_handler_fn handler, void *ud, const http_server_opts *opts, char *err, size_t errlen) {
    memset(srv, 0, sizeof *srv);
    srv->loop = loop;
    srv->handler = handler;
    srv->ud = ud;
    if (opts) srv->opts = *opts;
    if (srv->opts.max_conns <= 0) srv->opts.max_conns = 1024;
    if (srv->opts.idle_timeout_s <= 0) srv->opts.idle_timeout_s = 60;
    if (srv->opts.request_timeout_s <= 0) srv->opts.request_timeout_s = 30;
    if (srv->opts.max_batch_delay_s <= 0) srv->opts.max_batch_delay_s = 0.005;
    if (srv->opts.anon_timeout_s <= 0) srv->opts.anon_timeout_s = 5;
    if (srv->opts.max_conns_per_addr <= 0) srv->opts.max_conns_per_addr = 64;
    srv->rbuf = malloc(HTTP_RBUF);
    srv->addr_tab = calloc(ADDR_TAB, sizeof *srv->addr_tab);
    if (!srv->rbuf || !srv->addr_tab) {
        server_free_tables(srv);
        snprintf(err, errlen, "out of memory");
        return UV_ENOMEM;
    }
    struct sockaddr_storage addr;
    int rc;
    if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
    if (strchr(host, ':')) rc = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr);
    else rc = uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
    if (rc < 0) {
        server_free_tables(srv);
        snprintf(err, errlen, "bad listen address %s: %s", host, uv_strerror(rc));
        return rc;
    }
    uv_tcp_init(loop, &srv->listener);
    srv->listener.data = srv;
    srv->listener_open = 1;
    if ((rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&addr, 0)) < 0 ||
        (rc = uv_listen((uv_stream_t *)&srv->listener, 511, on_connection)) < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, uv_strerror(rc));
        uv_close((uv_handle_t *)&srv->listener, NULL);
        srv->listener_open = 0;
        server_free_tables(srv);
        return rc;
    }
    uv_loop_configure(loop, UV_METRICS_IDLE_TIME);   /* the turn histogram's sleep time (turn_note) */
    uv_check_init(loop, &srv->check);
    srv->check.data = srv;
    srv->check_open = 1;
    uv_check_start(&srv->check, server_turn);
    return 0;
}

int http_server_port(http_server *srv) {
    struct sockaddr_storage a;
    int len = sizeof a;
    if (uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&a, &len) < 0) return -1;
    if (a.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

void http_server_stop(http_server *srv) {
    if (srv->stopping) return;
    srv->stopping = 1;
    if (srv->listener_open) uv_close((uv_handle_t *)&srv->listener, listener_closed);
    server_check(&srv->check);             /* commit and write what is answered */
    http_conn *next;
    for (http_conn *c = srv->conns; c; c = next) {
        next = c->next;
        if (c->writes == 0 && c->sess.out.len == 0) conn_close(c);
        else c->sess.closing = 1;          /* closes in write_done, once its held answers are written */
    }
    conn_maybe_stopped(srv);
}

void http_server_commit(http_server *srv) {
    if (srv->check_open && !uv_is_closing((uv_handle_t *)&srv->check)) server_check(&srv->check);
}
