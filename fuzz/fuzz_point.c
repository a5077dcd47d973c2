/* fuzz_point.c — libFuzzer target over the worker report parsers (common/point.h, common/heartbeat.h,
 * common/jobresult.h): point_from_json, heartbeat_from_json and jobresult_columns on the input text when it is
 * JSON.
 *
 * Contract checked on every input:
 *   point: failure ⇒ a non-empty message naming "p"; success ⇒ step in 0..POINT_MAX_STEP, at least one loss,
 *          and point_to_json re-serialises it to an object that parses back to the same point (point_equal:
 *          every row of point.h POINT_FIELDS);
 *   heartbeat: failure ⇒ a message naming step or loss; success ⇒ heartbeat_to_json parses back the same;
 *   result: success ⇒ the input is an object with a numeric val_loss equal to the column read.
 * fuzz_point_one() is the entry point (tests/unit/test_fuzz_corpus.c replays fuzz/corpus/point through it);
 * LLVMFuzzerTestOneInput only for the libFuzzer build (-DPRISM_LIBFUZZER, fuzz/run.sh). Returns 1 when the
 * input parsed as a point, 0 otherwise.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartbeat.h"
#include "jobresult.h"
#include "point.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_point: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)


int fuzz_point_one(const uint8_t *data, size_t size) {
    json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!obj) return 0;
    char err[256] = "";
    metric_point p, q;
    int ok = point_from_json(obj, &p, "p", err, sizeof err) == 0;
    if (!ok) FUZZ_CHECK(err[0] == 'p' && strlen(err) > 2);
    else {
        FUZZ_CHECK(p.step >= 0 && p.step <= POINT_MAX_STEP && (p.has_train_loss || p.has_val_loss));
        json_t *back = point_to_json(&p);
        FUZZ_CHECK(back != NULL);
        FUZZ_CHECK(point_from_json(back, &q, "p", err, sizeof err) == 0);
        FUZZ_CHECK(point_equal(&p, &q));   /* every row of common/point.h POINT_FIELDS */
        json_decref(back);
    }
    heartbeat h, h2;
    err[0] = 0;
    if (heartbeat_from_json(obj, &h, err, sizeof err) < 0) FUZZ_CHECK(strstr(err, "step:") || strstr(err, "loss:"));
    else {
        json_t *back = heartbeat_to_json("t", &h);
        FUZZ_CHECK(back != NULL && heartbeat_from_json(back, &h2, err, sizeof err) == 0);
        FUZZ_CHECK(h2.step == (h.step >= 0 ? h.step : -1) && (isfinite(h.loss) ? h2.loss == h.loss : isnan(h2.loss)));
        json_decref(back);
    }
    jobresult_cols c;
    if (jobresult_columns(obj, &c) == 0)
        FUZZ_CHECK(json_is_object(obj) && c.val_loss == json_number_value(json_object_get(obj, JOBRESULT_KEY_VAL_LOSS)));
    json_decref(obj);
    return ok;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_point_one(data, size);
    return 0;
}
#endif
