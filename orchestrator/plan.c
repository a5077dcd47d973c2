/* plan.c — a sweep's decision policies (halving, racing) as C values: the spec keys' parsers and one load.
 *
 * Design: halving and racing are checked against the spec at create (spec.c) and read back from the stored spec
 * by whoever decides (halving.c at a rung, racing.c at a round, ranking.c for the spend it reports). Both read
 * the same struct through plan_load: one statement, one parse of each section, nothing of a consumer's. This
 * file sits under ranking, halving and racing (tools/layers.sh's orchestrator list), so the ranking reads the
 * plan instead of calling back into halving or racing for it. The parsers keep their halving_ / racing_ names:
 * they are each key's contract (sweeps/README.md), and the tests call them by those.
 */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"

static int db_fail(store *st, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
}

/* ---- halving ------------------------------------------------------------------------------------- */

int halving_parse(const json_t *v, long long steps, halving_cfg *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    if (!v) return 0;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "halving: must be an object {\"eta\": 3, \"rungs\": [0.111, 0.333], \"mode\": \"sync\"}");
        return -1;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
        if (strcmp(k, "eta") && strcmp(k, "rungs") && strcmp(k, "mode")) {
            snprintf(err, errlen, "halving.%.100s: unknown key (expected one of: eta, rungs, mode)", k);
            return -1;
        }
    json_t *eta = json_object_get(v, "eta"), *rungs = json_object_get(v, "rungs"), *mode = json_object_get(v, "mode");
    if (!json_is_integer(eta) || json_integer_value(eta) < 2 || json_integer_value(eta) > 1000) {
        snprintf(err, errlen, "halving.eta: required, an integer >= 2 (each rung keeps the best 1/eta), e.g. 3");
        return -1;
    }
    cfg->eta = (int)json_integer_value(eta);
    if (!json_is_array(rungs) || json_array_size(rungs) < 1 || json_array_size(rungs) > HALVING_MAX_RUNGS) {
        snprintf(err, errlen, "halving.rungs: required, an array of 1..%d fractions of train.steps in (0, 1), strictly "
                 "increasing, e.g. [0.111, 0.333] (the full run is the last rung)", HALVING_MAX_RUNGS);
        return -1;
    }
    if (mode && !(json_is_string(mode) && (!strcmp(json_string_value(mode), "sync") || !strcmp(json_string_value(mode), "async")))) {
        snprintf(err, errlen, "halving.mode: must be \"sync\" (decide when the whole rung reported) or \"async\" (ASHA)");
        return -1;
    }
    cfg->async = mode && !strcmp(json_string_value(mode), "async");
    cfg->nrungs = (int)json_array_size(rungs);
    for (int i = 0; i < cfg->nrungs; i++) {
        json_t *f = json_array_get(rungs, (size_t)i);
        double fr = json_is_number(f) ? json_number_value(f) : NAN;
        if (!(fr > 0 && fr < 1)) {
            snprintf(err, errlen, "halving.rungs[%d]: must be a number in (0, 1) (a fraction of train.steps)", i);
            return -1;
        }
        if (i > 0 && !(fr > cfg->frac[i - 1])) {
            snprintf(err, errlen, "halving.rungs[%d]: %g is not above halving.rungs[%d] = %g: rungs must be strictly "
                     "increasing", i, fr, i - 1, cfg->frac[i - 1]);
            return -1;
        }
        cfg->frac[i] = fr;
        long long s = (long long)floor(fr * (double)steps + 0.5);
        if (s < 1) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld: every rung needs at least "
                     "one step; raise the fraction or train.steps", i, fr, steps, s);
            return -1;
        }
        if (s >= steps) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld, the full run: lower the "
                     "fraction (the full run is always the last rung)", i, fr, steps, s);
            return -1;
        }
        if (i > 0 && s <= cfg->step[i - 1]) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld rounds to step %lld, the same as "
                     "halving.rungs[%d]: use fewer rungs or more train.steps", i, fr, steps, s, i - 1);
            return -1;
        }
        cfg->step[i] = s;
    }
    cfg->step[cfg->nrungs] = steps;
    cfg->enabled = 1;
    return 0;
}

int halving_check_rungs(const halving_cfg *cfg, int warmup_steps, char *warn, size_t warnlen, char *err, size_t errlen) {
    if (warn && warnlen) warn[0] = 0;
    if (!cfg->enabled) return 0;
    long long steps = cfg->step[cfg->nrungs];
    double least = fmax(HALVING_WARN_FRACTION, (double)(2 * warmup_steps + 1) / (double)steps);
    char fix[200];
    if (least < 1) snprintf(fix, sizeof fix, "move it later, e.g. halving.rungs[0] = %.3f", least);
    else snprintf(fix, sizeof fix, "train.warmup_steps (%d) leaves no room for a rung in train.steps (%lld): shorten "
                  "the warmup or train longer", warmup_steps, steps);
    for (int i = 0; i < cfg->nrungs; i++) {
        const char *where = NULL;
        if (cfg->step[i] <= warmup_steps) where = "at or before train.warmup_steps";
        else if (cfg->step[i] <= 2LL * warmup_steps && cfg->frac[i] < HALVING_WARN_FRACTION)
            where = "below 20% of the run and within twice train.warmup_steps (the learning rate has just peaked)";
        if (where) {
            snprintf(err, errlen, "halving.rungs[%d]: %g x train.steps %lld is step %lld, %s (%d): a rung there ranks "
                     "schedules by how fast they warm up, not by where they end (one such rung reversed the final "
                     "order); %s", i, cfg->frac[i], steps, cfg->step[i], where, warmup_steps, fix);
            return -1;
        }
    }
    if (warn && cfg->frac[0] < HALVING_WARN_FRACTION)
        snprintf(warn, warnlen, "halving.rungs[0]: %g of train.steps (step %lld) is below %.0f%% of the run: early val losses "
                 "rank schedules poorly (docs/STATISTICS.md has the rank correlations the halving bench measured); "
                 "consider a first rung of at least %.2f", cfg->frac[0], cfg->step[0], 100 * HALVING_WARN_FRACTION,
                 HALVING_WARN_FRACTION);
    return 0;
}

/* ---- racing -------------------------------------------------------------------------------------- */

int racing_parse(const json_t *v, int n_seeds, long long max_seed, racing_cfg *cfg, char *err, size_t errlen) {
    memset(cfg, 0, sizeof *cfg);
    if (!v) return 0;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "racing: must be an object {\"max_seeds\": 10, \"alpha\": 0.05}");
        return -1;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
        if (strcmp(k, "max_seeds") && strcmp(k, "alpha")) {
            snprintf(err, errlen, "racing.%.100s: unknown key (expected one of: max_seeds, alpha)", k);
            return -1;
        }
    json_t *ms = json_object_get(v, "max_seeds"), *al = json_object_get(v, "alpha");
    if (n_seeds < 2) {
        snprintf(err, errlen, "racing: the spec's seeds are the first round and need at least 2 (one seed gives no "
                 "estimate of the run-to-run noise, so nothing could be eliminated); give \"seeds\": [0, 1] or more");
        return -1;
    }
    if (!json_is_integer(ms) || json_integer_value(ms) <= n_seeds || json_integer_value(ms) > RACING_MAX_SEEDS) {
        snprintf(err, errlen, "racing.max_seeds: required, an integer above the spec's %d seeds (round 1) and at most %d, "
                 "e.g. 10: the seeds a schedule still in contention gets at most", n_seeds, RACING_MAX_SEEDS);
        return -1;
    }
    double a = RACING_DEFAULT_ALPHA;
    if (al) {
        a = json_is_number(al) ? json_number_value(al) : NAN;
        if (!(a > 0 && a <= 0.5)) {
            snprintf(err, errlen, "racing.alpha: must be a number in (0, 0.5], e.g. 0.05: the chance over all rounds "
                     "that the race eliminates the truly best schedule");
            return -1;
        }
    }
    cfg->enabled = 1;
    cfg->max_seeds = (int)json_integer_value(ms);
    cfg->alpha = a;
    cfg->seeds0 = n_seeds;
    cfg->seed_base = max_seed;
    cfg->looks = cfg->max_seeds - n_seeds + 1;
    return 0;
}

double racing_round_alpha(const racing_cfg *cfg) { return cfg->alpha / (cfg->looks > 0 ? cfg->looks : 1); }

long long racing_round_seed(const racing_cfg *cfg, int round) { return cfg->seed_base + round - 1; }

/* ---- the store ----------------------------------------------------------------------------------- */

/* One section of the stored spec: column c of s (NULL: the key is absent). */
static json_t *section(sqlite3_stmt *s, int c) {
    return sqlite3_column_type(s, c) == SQLITE_TEXT ? json_loads((const char *)sqlite3_column_text(s, c), 0, NULL) : NULL;
}

int plan_load(store *st, long long sweep_id, sweep_plan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    sqlite3_stmt *s = NULL;
    /* instr() first: a sweep without a policy (the racing hook runs on every completed job) costs a substring scan,
     * no parse. train.steps: the jobs' steps column (the job model's, filled at create; every job of a sweep has the
     * same, so the first job with one is read). The seeds: racing's rounds follow the spec's. */
    if (sqlite3_prepare_v2(st->db, "SELECT CASE WHEN instr(spec, '\"halving\"') THEN json_extract(spec, '$.halving') END, "
                                   "CASE WHEN instr(spec, '\"halving\"') THEN coalesce((SELECT steps FROM jobs WHERE "
                                   "sweep_id = sweeps.id AND steps > 0 LIMIT 1), 0) END, "
                                   "CASE WHEN instr(spec, '\"racing\"') THEN json_extract(spec, '$.racing') END, "
                                   "CASE WHEN instr(spec, '\"racing\"') THEN json_array_length(spec, '$.seeds') END, "
                                   "CASE WHEN instr(spec, '\"racing\"') THEN (SELECT max(value) FROM json_each(sweeps.spec, "
                                   "'$.seeds')) END FROM sweeps WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "sweep plan");
    sqlite3_bind_int64(s, 1, sweep_id);
    int rc = sqlite3_step(s), out = STORE_OK;
    if (rc == SQLITE_ROW) {
        json_t *hv = section(s, 0), *rv = section(s, 2);
        /* a key its parser refuses is off (zeroed) and said in err; the other key still counts */
        if (racing_parse(rv, sqlite3_column_int(s, 3), sqlite3_column_int64(s, 4), &p->racing, err, errlen) < 0) {
            memset(&p->racing, 0, sizeof p->racing);
            out = STORE_EINVAL;
        }
        if (halving_parse(hv, sqlite3_column_int64(s, 1), &p->halving, err, errlen) < 0) {
            memset(&p->halving, 0, sizeof p->halving);
            out = STORE_EINVAL;
        }
        json_decref(hv);
        json_decref(rv);
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "no sweep %lld", sweep_id);
        out = STORE_ENOTFOUND;
    } else out = db_fail(st, err, errlen, "sweep plan");
    sqlite3_finalize(s);
    return out;
}

int halving_init_jobs(store *st, long long sweep_id, char *err, size_t errlen) {
    sweep_plan p;
    int rc = plan_load(st, sweep_id, &p, err, errlen);
    if (rc < 0 || !p.halving.enabled) return rc;
    queue q;   /* the create path has no server's queue: a short-lived one for its statement */
    queue_init(&q, st, 0, 0);
    if ((rc = queue_rung_setup(&q, sweep_id, p.halving.step[0])) < 0) snprintf(err, errlen, "%s", q.err);
    queue_release(&q);
    return rc;
}

int halving_steps(store *st, long long sweep_id, long long *trained, long long *full, char *err, size_t errlen) {
    sqlite3_stmt *s = NULL;
    *trained = *full = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT coalesce(sum(CASE WHEN state = 'done' THEN steps ELSE max(step, coalesce("
                                   "(SELECT max(rr.step) FROM rung_results rr WHERE rr.job_id = jobs.id), 0)) END), 0), "
                                   "coalesce(sum(steps), 0) FROM jobs WHERE sweep_id = ?1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, err, errlen, "steps trained");
    sqlite3_bind_int64(s, 1, sweep_id);
    int rc = sqlite3_step(s) == SQLITE_ROW ? STORE_OK : db_fail(st, err, errlen, "steps trained");
    if (rc == STORE_OK) { *trained = sqlite3_column_int64(s, 0); *full = sqlite3_column_int64(s, 1); }
    sqlite3_finalize(s);
    return rc;
}
