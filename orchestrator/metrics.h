/* metrics.h — the server's operational routes and the request accounting behind GET /metrics.
 *
 * metrics_healthz: 200 {ok: true, version, db: "ok"}; 503 {error, ok: false, ...} while the database is not
 * readable, the server is stopping, or a write failed within API_WRITE_ERR_WINDOW_S (the message says when and
 * why). metrics_prometheus: 200 text/plain (Prometheus exposition format 0.0.4), 500 when the store cannot be
 * read. metrics_record: counts one answered request (its status, 500 when unset, and its handling time since
 * req->t_start) into a's counters; call it once per answer. None of them writes the database or allocates
 * anything the caller frees.
 */
#ifndef PRISM_METRICS_H
#define PRISM_METRICS_H
#include "api.h"

void metrics_healthz(api_ctx *c);
void metrics_prometheus(api_ctx *c);
void metrics_record(api *a, const http_request *req, const http_response *res);
#endif
