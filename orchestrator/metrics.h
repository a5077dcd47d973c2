/* metrics.h — the server's operational routes and the request accounting behind GET /metrics.
 *
 * metrics_healthz: 200 {ok: true, version, db: "ok"}; 503 {error, ok: false, ...} while the database is not
 * readable, the server is stopping, or a write failed within METRICS_WRITE_ERR_WINDOW_S (the message says when and
 * why). metrics_prometheus: 200 text/plain (Prometheus exposition format 0.0.4), 500 when the store cannot be
 * read. metrics_record: counts one answered request (its status, 500 when unset, and its handling time since
 * req->t_start) into the server's metrics_state; call it once per answer. metrics_note_write_error remembers a
 * failed database write for /healthz ("WHAT: MSG"), metrics_clear_write_error forgets it once a write committed.
 * None of them writes the database or allocates anything the caller frees.
 *
 * State: metrics_state is this module's own (the request counters, the latency histogram, the last write
 * error); the router's struct api holds one and hands it over, and only this module reads or writes it. This
 * header does not include api.h (the router includes it): no include circle.
 */
#ifndef PRISM_METRICS_H
#define PRISM_METRICS_H
#include "http.h"

#define METRICS_LAT_BUCKETS 12
#define METRICS_WRITE_ERR_WINDOW_S 60.0   /* /healthz answers 503 for this long after a failed database write */
#define METRICS_MAX_ROUTES 32             /* the API's routes (api.c's table) whose cost is counted */

/* One API route's requests and what their statements cost (store.h: store_cost), since start. */
typedef struct metrics_route {
    const char *name;                     /* static: the route's label ("heartbeat", "lease", "sweep_jobs", ...) */
    unsigned long long requests, vm_steps, rows;
    double seconds, seconds_max;          /* the handler's time on the event loop, all together and the longest */
} metrics_route;

typedef struct metrics_state {
    unsigned long long req_by_class[6];   /* 1xx..5xx */
    unsigned long long req_by_code[600];
    unsigned long long lat_bucket[METRICS_LAT_BUCKETS + 1];
    double lat_sum;
    char write_err[512];                  /* the last failed database write (BEGIN, a statement, COMMIT), "" when none */
    double write_err_at;                  /* when (store_now), 0 when none */
    metrics_route route[METRICS_MAX_ROUTES];   /* by the router's route index; name NULL: none answered yet */
} metrics_state;

typedef struct api_ctx api_ctx;   /* api.h */

void metrics_healthz(api_ctx *c);
void metrics_prometheus(api_ctx *c);
void metrics_record(metrics_state *m, const http_request *req, const http_response *res);
/* Adds one request of route i (0 <= i < METRICS_MAX_ROUTES, named name) and its cost to m: its statements' VM steps,
 * rows written, and the seconds its handler held the event loop. */
void metrics_route_cost(metrics_state *m, int i, const char *name, unsigned long long vm_steps, unsigned long long rows,
                        double seconds);
void metrics_note_write_error(metrics_state *m, const char *what, const char *msg);
void metrics_clear_write_error(metrics_state *m);
#endif
