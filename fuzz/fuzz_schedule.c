/* fuzz_schedule.c — libFuzzer target over the schedule text parser (common/schedule.h): schedule_parse on
 * the input text, then schedule_validate / schedule_validate_hard / schedule_blocks on what it returns.
 *
 * Input: the schedule text, optionally followed by a line "d_model h_base min_block max_block max_head_dim
 * pow2 min_baseline" giving the rules to validate against (absent fields keep schedule_rules_default's values; h_base 0
 * = d_model/64). Without that line the rules are the defaults with d_model = 64 × the last layer's heads.
 *
 * Contract checked on every input:
 *   parse failure ⇒ SCHEDULE_EINVAL and a non-empty message;
 *   parse success ⇒ 1 <= L <= cap, every h >= 1, the canonical text (schedule_format) parses back to the
 *                   same heads; schedule_blocks covers exactly L layers; schedule_validate returns either
 *                   SCHEDULE_EINVAL (bad rules, with a message) or n >= 0 violations of which min(n, 64) are
 *                   kept (n_more the rest), each with a non-empty message and layers inside 1..L; the hard
 *                   rules find no more violations than all rules; n == 0 only for a schedule whose last
 *                   layer is h_base and that never decreases.
 * Nothing here allocates; the target frees its own copy.
 *
 * fuzz_schedule_one() is the entry point (1 = parsed, 0 = rejected); LLVMFuzzerTestOneInput only with
 * -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_schedule: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static void fsc_check_report(const schedule_report *rep, int n, int L) {
    FUZZ_CHECK(n >= 0);
    FUZZ_CHECK(rep->n == (n < SCHEDULE_MAX_VIOLATIONS ? n : SCHEDULE_MAX_VIOLATIONS));
    FUZZ_CHECK(rep->n + rep->n_more == n);
    for (int i = 0; i < rep->n; i++) {
        const schedule_violation *v = &rep->v[i];
        FUZZ_CHECK(v->msg[0] != 0 && memchr(v->msg, 0, sizeof v->msg));
        FUZZ_CHECK(v->rule >= SCHEDULE_R_LENGTH && v->rule <= SCHEDULE_R_BASELINE);
        FUZZ_CHECK(schedule_rule_name(v->rule) != NULL);
        FUZZ_CHECK(v->layer >= 0 && v->layer <= L && v->layer_end >= v->layer && v->layer_end <= L);
        FUZZ_CHECK(v->block >= 0 && v->block <= L);
    }
}

int fuzz_schedule_one(const uint8_t *data, size_t size) {
    static int heads[SCHEDULE_MAX_L], again[SCHEDULE_MAX_L], bh[SCHEDULE_MAX_L], bl[SCHEDULE_MAX_L];
    static schedule_report rep, hard;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *rules_line = strchr(text, '\n');
    if (rules_line) *rules_line++ = 0;
    /* a small cap now and then, so "more than cap layers" is reached cheaply */
    int cap = size && (data[size - 1] & 1) ? 16 : SCHEDULE_MAX_L;
    int L = -1;
    char err[256];
    err[0] = 0;
    int rc = schedule_parse(text, heads, cap, &L, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == SCHEDULE_EINVAL);
    if (rc) {
        FUZZ_CHECK(err[0] != 0 && memchr(err, 0, sizeof err));
        FUZZ_CHECK(L == 0);
        free(text);
        return 0;
    }
    FUZZ_CHECK(L >= 1 && L <= cap);
    for (int l = 0; l < L; l++) FUZZ_CHECK(heads[l] >= 1 && heads[l] <= SCHEDULE_MAX_DMODEL);

    /* canonical text round trip */
    size_t flen = (size_t)L * 8 + 1;
    char *fmt = malloc(flen);
    FUZZ_CHECK(fmt);
    int w = schedule_format(heads, L, fmt, flen);
    FUZZ_CHECK(w > 0 && (size_t)w == strlen(fmt));
    int L2 = 0;
    FUZZ_CHECK(schedule_parse(fmt, again, SCHEDULE_MAX_L, &L2, err, sizeof err) == 0);
    FUZZ_CHECK(L2 == L && memcmp(heads, again, sizeof(int) * (size_t)L) == 0);
    /* a buffer one byte short is refused with a NUL-terminated prefix */
    FUZZ_CHECK(schedule_format(heads, L, fmt, (size_t)w) == SCHEDULE_ERANGE && strlen(fmt) < (size_t)w);
    free(fmt);

    /* blocks cover the schedule */
    int nb = schedule_blocks(heads, L, bh, bl, SCHEDULE_MAX_L);
    int covered = 0;
    FUZZ_CHECK(nb >= 1 && nb <= L);
    for (int b = 0; b < nb; b++) {
        FUZZ_CHECK(bl[b] >= 1);
        for (int k = 0; k < bl[b]; k++) FUZZ_CHECK(heads[covered + k] == bh[b]);
        covered += bl[b];
        FUZZ_CHECK(b == 0 || bh[b] != bh[b - 1]);
    }
    FUZZ_CHECK(covered == L);
    FUZZ_CHECK(schedule_is_uniform(heads, L) == (nb == 1));

    /* validation against the rules line, or defaults sized to the schedule */
    schedule_rules r;
    schedule_rules_default(&r);
    r.L = 0;
    r.d_model = heads[L - 1] <= SCHEDULE_MAX_DMODEL / 64 ? heads[L - 1] * 64 : heads[L - 1];
    if (rules_line) {
        int f[6] = { r.d_model, r.h_base, r.min_block, r.max_block, r.max_head_dim, r.pow2 };
        double mb = r.min_baseline;
        sscanf(rules_line, "%d %d %d %d %d %d %lf", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &mb);
        r.d_model = f[0]; r.h_base = f[1]; r.min_block = f[2]; r.max_block = f[3]; r.max_head_dim = f[4];
        r.pow2 = f[5]; r.min_baseline = mb;
    }
    memset(&rep, 0x5a, sizeof rep);
    int n = schedule_validate(&r, heads, L, &rep);
    int nh = schedule_validate_hard(&r, heads, L, &hard);
    FUZZ_CHECK(n == SCHEDULE_EINVAL || n >= 0);
    if (n == SCHEDULE_EINVAL) {
        FUZZ_CHECK(nh == SCHEDULE_EINVAL);
        FUZZ_CHECK(rep.v[0].msg[0] != 0 && memchr(rep.v[0].msg, 0, sizeof rep.v[0].msg));
    } else {
        fsc_check_report(&rep, n, L);
        fsc_check_report(&hard, nh, L);
        FUZZ_CHECK(nh <= n);
        FUZZ_CHECK(schedule_validate(&r, heads, L, NULL) == n);
        if (n == 0) {
            schedule_rules rr = r;
            rr.L = L;
            FUZZ_CHECK(schedule_rules_resolve(&rr, NULL, NULL, 0) == 0);
            FUZZ_CHECK(heads[L - 1] == rr.h_base);
            for (int l = 1; l < L; l++) FUZZ_CHECK(heads[l] >= heads[l - 1]);
        }
    }
    free(text);
    return 1;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_schedule_one(data, size);
    return 0;
}
#endif
