/* fuzz_extrun.c — libFuzzer target over the external-trainer protocol line parser (worker/extrun.h):
 * extrun_parse_line on the input as one fd-3 line of a job of 100 steps, and extrun_split_command on the input
 * as a --trainer COMMAND.
 *
 * Contract checked on every input:
 *   line rejected ⇒ -1 or EXTRUN_ENAN, a non-empty NUL-terminated message, no reference held (row, result NULL);
 *   line accepted ⇒ a known EXTRUN_EV_*, the step in 0..100 (a train step below 100), train/val a metrics row
 *                    whose "step" is that step and whose numbers are finite, a checkpoint a non-empty path, a
 *                    result an object with a numeric val_loss (or final_val_loss);
 *   command ⇒ -1 with a message and no argv, or n >= 1 words, argv[n] == NULL, every word a string.
 * fuzz_extrun_one() is the entry point (tests/unit/test_fuzz_corpus.c replays fuzz/corpus/extrun through it);
 * LLVMFuzzerTestOneInput only for the libFuzzer build (-DPRISM_LIBFUZZER, fuzz/run.sh). Returns 1 when the line
 * parsed, 0 when it was rejected.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrun.h"
#include "point.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_extrun: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

/* A metrics row: the line's step, and every key a row of common/point.h POINT_FIELDS that the line carries
 * (`lines`; zero_shot on a val line), its number finite and at or above the row's lower bound (a loss: finite). */
static int fe_row_ok(const json_t *row, long long step, int lines) {
    if (!json_is_object(row) || json_integer_value(json_object_get(row, "step")) != step) return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)row, k, v) {
        if (json_is_real(v) && !isfinite(json_real_value(v))) return 0;
        if (lines == POINT_ON_VAL && strcmp(k, "zero_shot") == 0) continue;
        const point_key *r = NULL;
        for (int i = 0; i < POINT_NKEYS; i++) if (strcmp(POINT_KEYS[i].key, k) == 0) r = &POINT_KEYS[i];
        if (!r || !(r->lines & lines)) return 0;
        if ((r->cls == POINT_C_OPT || r->cls == POINT_C_TOKENS) && !(json_number_value(v) >= r->lo)) return 0;
    }
    return 1;
}

int fuzz_extrun_one(const uint8_t *data, size_t size) {
    extrun_limits lim = { 100 };
    extrun_line l;
    char err[1200];
    err[0] = 0;
    int rc = extrun_parse_line((const char *)data, size, &lim, &l, err, sizeof err);
    int ok = rc > 0;
    if (!ok) {
        FUZZ_CHECK(rc == -1 || rc == EXTRUN_ENAN);
        FUZZ_CHECK(err[0] != 0 && memchr(err, 0, sizeof err) != NULL);
        FUZZ_CHECK(l.row == NULL && l.result == NULL);
    } else {
        FUZZ_CHECK(rc >= EXTRUN_EV_TRAIN && rc <= EXTRUN_EV_FAILED && rc == l.event);
        if (rc != EXTRUN_EV_RESULT && rc != EXTRUN_EV_HEARTBEAT && rc != EXTRUN_EV_FAILED)
            FUZZ_CHECK(l.step >= 0 && l.step <= 100);
        if (rc == EXTRUN_EV_FAILED)   /* a reason that reads safely in an error; a message cut and NUL-terminated */
            FUZZ_CHECK(job_trainer_name_ok(l.reason) && memchr(l.message, 0, sizeof l.message) != NULL);
        if (rc == EXTRUN_EV_TRAIN) FUZZ_CHECK(l.step < 100 && isfinite(l.train_loss) && fe_row_ok(l.row, l.step, POINT_ON_TRAIN));
        if (rc == EXTRUN_EV_VAL)
            FUZZ_CHECK(isfinite(l.val_loss) && fe_row_ok(l.row, l.step, POINT_ON_VAL) && (!l.has_val_loss_se || l.val_loss_se >= 0));
        if (rc == EXTRUN_EV_CHECKPOINT) FUZZ_CHECK(l.path[0] && memchr(l.path, 0, sizeof l.path));
        if (rc == EXTRUN_EV_RESULT) FUZZ_CHECK(json_is_object(l.result) && isfinite(l.val_loss));
        extrun_line_release(&l);
        FUZZ_CHECK(l.row == NULL && l.result == NULL);
    }
    char *cmd = malloc(size + 1);
    FUZZ_CHECK(cmd);
    memcpy(cmd, data, size);
    cmd[size] = 0;
    char **argv = (char **)1;
    err[0] = 0;
    int n = extrun_split_command(cmd, &argv, err, sizeof err);
    if (n < 0) FUZZ_CHECK(argv == NULL && err[0]);
    else {
        FUZZ_CHECK(n >= 1 && argv && argv[n] == NULL);
        for (int i = 0; i < n; i++) FUZZ_CHECK(argv[i] != NULL && strlen(argv[i]) <= size);
        extrun_free_argv(argv);
    }
    free(cmd);
    return ok;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_extrun_one(data, size);
    return 0;
}
#endif
