/* heartbeat.c — the heartbeat body's builder and parser (heartbeat.h). */
#include "heartbeat.h"

#include <math.h>
#include <stdio.h>

json_t *heartbeat_to_json(const char *token, const heartbeat *h) {
    json_t *o = json_pack("{s:s}", "lease_token", token ? token : "");
    if (!o) return NULL;
    int bad = 0;
    if (h->step >= 0) bad |= json_object_set_new(o, "step", json_integer(h->step));
    if (isfinite(h->loss)) bad |= json_object_set_new(o, "loss", json_real(h->loss));
    if (bad) { json_decref(o); return NULL; }
    return o;
}

int heartbeat_from_json(const json_t *body, heartbeat *h, char *err, size_t errlen) {
    h->step = -1;
    h->loss = NAN;
    json_t *st = json_object_get(body, "step"), *loss = json_object_get(body, "loss");
    if (st && !json_is_null(st)) {
        if (!json_is_integer(st)) { snprintf(err, errlen, "step: must be an integer"); return -1; }
        h->step = json_integer_value(st);
    }
    if (loss && !json_is_null(loss)) {
        if (!json_is_number(loss)) { snprintf(err, errlen, "loss: must be a number"); return -1; }
        h->loss = json_number_value(loss);
    }
    return 0;
}
