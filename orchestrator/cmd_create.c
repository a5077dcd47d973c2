/* cmd_create.c — `prism-sweep create SPEC.json --db FILE`: validate a sweep spec and create its sweep, schedules
 * and one job per schedule x seed, in one transaction; running it again creates nothing new.
 *
 * Design: spec_load does all the checking (messages name the JSON path), sweeps_create does all the writing;
 * this file only maps outcomes to words and exit codes (2 bad spec or name clash, 1 database trouble).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "spec.h"
#include "store.h"
#include "sweeps.h"
#include "halving.h"
#include "racing.h"
#include "search.h"

int cmd_create(int argc, char **argv) {
    const char *db = "prism.db", *format = "text";
    int dry = 0;
    cli_flag flags[] = {
        { "--db", CLI_STR, &db, "prism.db", "the SQLite store (created when missing)", 0, 0, 0, 0 },
        { "--dry-run", CLI_BOOL, &dry, "off", "validate and print the counts, create nothing", 0, 0, 0, 0 },
        { "--format", CLI_CHOICE, &format, "text", "output: a sentence, or JSON {sweep_id, name, created, "
          "schedules_created, jobs_created, schedules, jobs, seeds}", 0, 0, "text|json", 0 },
        { 0 },
    };
    cli_cmd cmd = { "create", "SPEC.json [--db FILE]",
                    "Validate a sweep spec (errors name the JSON path, e.g. train.lr: must be > 0), then create the\n"
                    "sweep, its schedules and one queued job per schedule x seed in one transaction. Creating the\n"
                    "same spec again creates nothing new; a spec with the same name that adds seeds or schedules\n"
                    "adds just those.", flags, NULL };
    char *pos[1];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    if (npos != 1) return cli_error("create", "give one sweep spec, e.g. prism-sweep create sweeps/tiny-cpu.json "
                                    "--db prism.db");
    sweep_spec sp;
    char *text = NULL, err[1024];
    int rc = spec_load(pos[0], &sp, &text, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "prism-sweep create: %s\n", err);
        return 2;
    }
    if (sp.warn[0]) fprintf(stderr, "prism-sweep create: warning: %s\n", sp.warn);
    if (dry) {
        printf("valid spec \"%s\": %d schedules x %d seeds = %lld jobs of %lld steps (nothing created)\n", sp.name,
               sp.n_schedules, sp.n_seeds, (long long)sp.n_schedules * sp.n_seeds, (long long)sp.steps);
        halving_cfg hv;   /* successive halving: where each rung stops (the rounding is documented in sweeps/README.md) */
        if (halving_parse(json_object_get(sp.root, "halving"), sp.steps, &hv, err, sizeof err) == 0 && hv.enabled) {
            printf("halving: eta %d, %s; rungs at steps", hv.eta, hv.async ? "async" : "sync");
            for (int r = 0; r <= hv.nrungs; r++) printf(" %lld%s", hv.step[r], r == hv.nrungs ? " (the full run)\n" : ",");
        }
        racing_cfg rc2;   /* racing: the rounds' seeds (derived from the spec's: sweeps/README.md) and the most it can cost */
        long long mx = 0;
        for (int i = 0; i < sp.n_seeds; i++) if (sp.seeds[i] > mx) mx = sp.seeds[i];
        if (racing_parse(json_object_get(sp.root, "racing"), sp.n_seeds, mx, &rc2, err, sizeof err) == 0 && rc2.enabled)
            printf("racing: round 1 = the %d spec seeds, then seeds %lld..%lld one per round for the schedules still in "
                   "contention and the baseline; at most %lld jobs (max_seeds x schedules); alpha %g over all rounds "
                   "(per round: at least alpha / looks = %.4g, calibrated by simulation when round 1 is decided)\n", sp.n_seeds, racing_round_seed(&rc2, 2), racing_round_seed(&rc2, rc2.looks),
                   (long long)rc2.max_seeds * sp.n_schedules, rc2.alpha, racing_round_alpha(&rc2));
        free(text);
        spec_release(&sp);
        return 0;
    }
    store *st = NULL;
    if (store_served_elsewhere(db, err, sizeof err)) {   /* before anything is written through this name */
        fprintf(stderr, "prism-sweep create: --db %s\n", err);
        free(text);
        spec_release(&sp);
        return 2;
    }
    if (store_open(db, &st, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep create: --db %s: %s\n", db, err);
        free(text);
        spec_release(&sp);
        return 1;
    }
    sweeps_created c;
    rc = sweeps_create(st, &sp, text, &c);
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "prism-sweep create: %s: %s\n", pos[0], st->err);
        status = rc == STORE_ECONFLICT ? 2 : 1;
    } else if (strcmp(format, "json") == 0) {
        json_t *o = json_pack("{s:I, s:s, s:b, s:I, s:I, s:I, s:I, s:i}", "sweep_id", (json_int_t)c.sweep_id, "name",
                              c.name, "created", c.sweep_is_new, "schedules_created", (json_int_t)c.schedules_created,
                              "jobs_created", (json_int_t)c.jobs_created, "schedules", (json_int_t)c.schedules_total,
                              "jobs", (json_int_t)c.jobs_total, "seeds", c.n_seeds);
        json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
        fputc('\n', stdout);
        json_decref(o);
    } else if (c.sweep_is_new) {
        printf("created sweep %lld \"%s\": %lld schedules x %d seeds = %lld jobs queued\n", (long long)c.sweep_id,
               c.name, (long long)c.schedules_created, c.n_seeds, (long long)c.jobs_created);
        search_cfg sc;   /* a surrogate search: those are its initial design; the server proposes the rest */
        if (search_parse(json_object_get(sp.root, "search"), json_object_get(sp.root, "train"), &sp.rules, sp.n_seeds, &sc, err, sizeof err) == 0 && sc.enabled)
            printf("search: the initial design of a surrogate search over %lld valid schedules%s%s; `prism-sweep serve` "
                   "proposes the next %d each time a batch is over, up to %d %s (%lld jobs at most)\n",
                   sc.space, sc.naxes ? " at values of train." : "", sc.naxes ? sc.keys[0] : "", sc.batch, sc.budget,
                   sc.naxes ? "candidates" : "schedules", (long long)sc.budget * sp.n_seeds);
    } else if (c.jobs_created == 0 && c.schedules_created == 0) {
        printf("sweep %lld \"%s\" already exists: nothing new created (%lld schedules, %lld jobs)\n",
               (long long)c.sweep_id, c.name, (long long)c.schedules_total, (long long)c.jobs_total);
    } else {
        printf("sweep %lld \"%s\" extended: %lld new schedules, %lld new jobs (now %lld schedules, %lld jobs)\n",
               (long long)c.sweep_id, c.name, (long long)c.schedules_created, (long long)c.jobs_created,
               (long long)c.schedules_total, (long long)c.jobs_total);
    }
    store_close(st);
    free(text);
    spec_release(&sp);
    return status;
}
