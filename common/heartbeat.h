/* heartbeat.h — the body of POST /api/v1/jobs/{id}/heartbeat, one type both sides share (the worker's reporter
 * builds it, the orchestrator parses it), as lease.h is for the lease.
 *
 *   {"lease_token": "HEX", "step": 41, "loss": 3.21}
 *
 * lease_token is the lease's (the server reads it with every worker route, not here); step (integer >= 0, the
 * last step trained) and loss (a number, its train loss) are optional: a heartbeat before the first step has
 * neither.
 *
 * Contract.
 * - heartbeat_to_json(token, h): a new object (caller decrefs), "step" only when h->step >= 0, "loss" only when
 *   finite; NULL when out of memory.
 * - heartbeat_from_json(body, h, err, errlen): body borrowed. Returns 0 with h filled (step -1 / loss NAN when
 *   absent or null), or -1 with err "step: must be an integer" / "loss: must be a number". Nothing to free.
 * Thread-safe; no globals.
 */
#ifndef PRISM_HEARTBEAT_H
#define PRISM_HEARTBEAT_H
#include <jansson.h>
#include <stddef.h>

typedef struct heartbeat {
    long long step;   /* -1: none */
    double loss;      /* NAN: none */
} heartbeat;

json_t *heartbeat_to_json(const char *token, const heartbeat *h);
int heartbeat_from_json(const json_t *body, heartbeat *h, char *err, size_t errlen);
#endif
