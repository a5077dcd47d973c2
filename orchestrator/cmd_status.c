/* cmd_status.c — `prism-sweep status --db FILE [SWEEP]`: jobs per state (queued, leased, done, failed,
 * cancelled) of one sweep (by id or name) or of every sweep with a total.
 *
 * Design: a read of the store through sweeps.h's one sweep summary (sweeps_summary, behind sweeps_get and
 * sweeps_list), the same the server's GET /api/v1/sweeps[/{id}] serves in its own JSON shape;
 * the database must already exist, so a mistyped --db is an error rather than a new empty file. Each sweep's
 * screened jobs (the leaderboard's outlier screen, issue #37) come from its ranking (ranking_build): their number
 * ("screened" in JSON) and, in text, a line naming them and the requeue command.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonout.h"
#include "cli.h"
#include "halving.h"
#include "leaderboard.h"
#include "racing.h"
#include "search.h"
#include "buf.h"
#include "ranking_build.h"
#include "commands.h"
#include "store.h"
#include "sweeps.h"
#include "jobstate.h"

/* The sweep's preempted attempts (jobs.preemptions, sql/015) and how many jobs had one: 0, or -1 on a read error. */
static int preemptions_of(store *st, long long sweep, long long *total, long long *jobs) {
    sqlite3_stmt *s = NULL;
    *total = *jobs = 0;
    int rc = -1;
    if (sqlite3_prepare_v2(st->db, "SELECT coalesce(sum(preemptions), 0), count(*) FILTER (WHERE preemptions > 0) "
                           "FROM jobs WHERE sweep_id = ?1", -1, &s, NULL) != SQLITE_OK) goto out;
    sqlite3_bind_int64(s, 1, sweep);
    if (sqlite3_step(s) != SQLITE_ROW) goto out;
    *total = sqlite3_column_int64(s, 0);
    *jobs = sqlite3_column_int64(s, 1);
    rc = 0;
out:
    sqlite3_finalize(s);
    return rc;
}

static void print_counts(const sweeps_counts *c) {
    for (int k = 0; k < JOB_NSTATES; k++) printf("  %-10s %8lld\n", jobstate_name((job_state)k), (long long)c->n[k]);
    printf("  %-10s %8lld\n", "total", (long long)c->total);
}

/* The table's per-state columns: each as wide as its name, at least 7 (the numbers' width). */
static void print_state_cells(const sweeps_counts *c) {
    for (int k = 0; k < JOB_NSTATES; k++) {
        int w = (int)strlen(jobstate_name((job_state)k));
        if (c) printf(" %*lld", w < 7 ? 7 : w, (long long)c->n[k]);
        else printf(" %*s", w < 7 ? 7 : w, jobstate_name((job_state)k));
    }
    putchar('\n');
}

/* The sweep's screened jobs (its current ranking's); -1 when the ranking could not be built (err says why). */
static int screened_count(store *st, long long id, ranking **rk, char *err, size_t errlen) {
    if (ranking_build(st, id, -1, rk, err, errlen) < 0) { *rk = NULL; return -1; }
    return (*rk)->nscreened;
}

/* One line naming rk's screened jobs and how to train them again (nothing when there are none). */
static void print_screened_hint(const ranking *rk, const char *sweep) {
    if (!rk || rk->nscreened == 0) return;
    printf("screened: %d job%s left out of the ranking as outliers (", rk->nscreened, rk->nscreened == 1 ? "" : "s");
    for (int i = 0; i < rk->nscreened && i < 8; i++)
        printf("%sjob %lld seed %lld val_loss %.4f", i ? ", " : "", rk->screened[i].job_id, rk->screened[i].seed, rk->screened[i].y);
    printf("%s); train again: prism-sweep requeue %s --state screened\n", rk->nscreened > 8 ? ", ..." : "", sweep);
}

int cmd_status(int argc, char **argv) {
    const char *db = "prism.db", *format = "text";
    cli_flag flags[] = {
        { "--db", CLI_STR, &db, "prism.db", "the SQLite store (must exist)", 0, 0, 0, 0 },
        { "--format", CLI_CHOICE, &format, "text", "output: text, or JSON (one sweep: {id, name, state, priority, "
          "created_at, schedules, jobs: {queued, leased, done, failed, cancelled, paused, pruned, total}, screened, preemptions: {total, jobs}}; all: "
          "{sweeps: [..], jobs: {..}})", 0, 0, "text|json", 0 },
        { 0 },
    };
    cli_cmd cmd = { "status", "[--db FILE] [SWEEP]",
                    "Print the number of jobs per state (queued, leased, done, failed, cancelled; with halving also paused\n"
                    "at a rung and pruned) of SWEEP (an id or\n"
                    "a name), or of every sweep and in total when SWEEP is omitted.", flags, NULL };
    char *pos[1];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    struct stat sb;
    if (stat(db, &sb) != 0)
        return cli_error("status", "--db %s: no such file (create a sweep first: prism-sweep create SPEC.json "
                         "--db %s)", db, db);
    if (!S_ISREG(sb.st_mode)) return cli_error("status", "--db %s: not a file (give the database file)", db);
    store *st = NULL;
    char err[1024];
    int orc = store_open_readonly(db, &st, err, sizeof err);   /* a read command changes no file */
    if (orc < 0) {
        fprintf(stderr, "prism-sweep status: --db %s: %s\n", db, err);
        return cmd_store_exit(orc);
    }
    int status = 0, json = strcmp(format, "json") == 0;
    if (npos == 1) {
        int64_t id;
        sweeps_info info;
        int rc = sweeps_find(st, pos[0], &id);
        if (rc == 0) rc = sweeps_get(st, id, &info);
        if (rc < 0) {
            fprintf(stderr, "prism-sweep status: %s%s\n", st->err,
                    rc == STORE_ENOTFOUND ? " (prism-sweep status --db FILE lists the sweeps)" : "");
            status = cmd_store_exit(rc);
        } else if (json) {
            json_t *o = sweeps_info_json(&info);
            char why[512], e2[256];
            ranking *rk = NULL;
            int ns = screened_count(st, id, &rk, e2, sizeof e2);
            json_object_set_new(o, "screened", ns >= 0 ? json_integer(ns) : json_null());
            ranking_free(rk);
            if (halving_held(st, id, why, sizeof why, e2, sizeof e2) > 0) json_object_set_new(o, "held", json_string(why));
            racing_summary rs;
            if (racing_summarize(st, id, &rs, e2, sizeof e2) == 0 && rs.enabled) {
                json_t *rj = racing_summary_json(st, id, &rs, e2, sizeof e2);
                if (rj) json_object_set_new(o, "racing", rj);
            }
            long long pt, pj;
            if (preemptions_of(st, id, &pt, &pj) == 0)
                json_object_set_new(o, "preemptions", json_pack("{s:I, s:I}", "total", (json_int_t)pt, "jobs", (json_int_t)pj));
            json_t *sj = NULL;   /* a surrogate search: progress, recommendation, outlook (search.h) */
            if (search_summary_json(st, id, &sj, e2, sizeof e2) == 0 && sj) json_object_set_new(o, "search", sj);
            json_t *ids = NULL;   /* who trained its results (leaderboard.h), and the warning when they are mixed */
            char tnote[1024];
            if (leaderboard_trainer_identities(st, id, &ids, tnote, sizeof tnote, e2, sizeof e2) == 0) {
                json_object_set_new(o, "trainer_identities", ids);
                if (tnote[0]) json_object_set_new(o, "trainer_note", json_string(tnote));
            }
            json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
            fputc('\n', stdout);
            json_decref(o);
        } else {
            printf("sweep %lld \"%s\" (%s, priority %d): %lld schedules, %lld jobs\n", (long long)info.id, info.name,
                   info.state, info.priority, (long long)info.n_schedules, (long long)info.counts.total);
            print_counts(&info.counts);
            /* the steps done and left (README §5, what a sweep costs), as sweeps_summary counts them */
            printf("steps: %lld of %lld trained, %lld left (%.1f%%)\n", (long long)info.steps_done,
                   (long long)info.steps_total, (long long)(info.steps_total - info.steps_done),
                   info.steps_total > 0 ? 100.0 * info.steps_done / info.steps_total : 0.0);
            long long pt, pj;   /* preempted attempts: not failures, not counted in --max-attempts */
            if (preemptions_of(st, id, &pt, &pj) == 0 && pt > 0)
                printf("preemptions: %lld over %lld job(s) (each requeued from its checkpoint without using an attempt; "
                       "serve --max-preemptions caps a job's)\n", pt, pj);
            char why[512], e2[256];   /* a halving rung that cannot be decided, and why */
            if (halving_held(st, id, why, sizeof why, e2, sizeof e2) > 0) printf("held: %s\n", why);
            racing_summary rs;   /* racing: the rounds, the survivors and the seeds spent against the fixed design */
            if (racing_summarize(st, id, &rs, e2, sizeof e2) == 0 && rs.enabled)
                printf("racing: %d round(s) decided%s (max_seeds %d, alpha %g), %d survivor(s), %d eliminated; seeds spent "
                       "%lld (%lld done) of the fixed design's %lld (max_seeds x schedules, %.1f%%)\n", rs.rounds_decided,
                       rs.finished ? ", finished" : "", rs.max_seeds, rs.alpha, rs.survivors, rs.eliminated, rs.jobs,
                       rs.jobs_done, rs.fixed_jobs, rs.fixed_jobs > 0 ? 100.0 * rs.jobs / rs.fixed_jobs : 0.0);
            json_t *sj = NULL;   /* a surrogate search: the recommendation and best-so-far against schedules trained */
            if (search_summary_json(st, id, &sj, e2, sizeof e2) == 0 && sj) {
                buf tb = {0};
                if (search_summary_text(sj, &tb, 1 << 20) == 0 && tb.data) fputs(tb.data, stdout);
                buf_free(&tb);
                json_decref(sj);
            }
            json_t *ids = NULL;   /* results of more than one trainer identity in one ranking: said, not silent */
            char tnote[1024];
            if (leaderboard_trainer_identities(st, id, &ids, tnote, sizeof tnote, e2, sizeof e2) == 0 && tnote[0])
                printf("WARNING: %s\n", tnote);
            json_decref(ids);
            ranking *rk = NULL;
            if (screened_count(st, id, &rk, e2, sizeof e2) >= 0) print_screened_hint(rk, info.name);
            ranking_free(rk);
        }
    } else {
        sweeps_info *v = NULL;
        int n = 0;
        sweeps_counts all;
        if (sweeps_list(st, &v, &n) < 0 || sweeps_count_states(st, 0, &all) < 0) {
            fprintf(stderr, "prism-sweep status: %s\n", st->err);
            status = 1;
        } else if (json) {
            json_t *arr = json_array();
            for (int i = 0; i < n; i++) {
                json_t *o = sweeps_info_json(&v[i]);
                ranking *rk = NULL;
                int ns = screened_count(st, v[i].id, &rk, err, sizeof err);
                json_object_set_new(o, "screened", ns >= 0 ? json_integer(ns) : json_null());
                ranking_free(rk);
                json_array_append_new(arr, o);
            }
            json_t *o = json_pack("{s:o, s:o}", "sweeps", arr, "jobs", sweeps_counts_json(&all));
            json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
            fputc('\n', stdout);
            json_decref(o);
        } else {
            printf("%4s  %-24s %-7s %9s %7s", "id", "name", "state", "schedules", "jobs");
            print_state_cells(NULL);
            for (int i = 0; i < n; i++) {
                printf("%4lld  %-24s %-7s %9lld %7lld", (long long)v[i].id, v[i].name, v[i].state,
                       (long long)v[i].n_schedules, (long long)v[i].counts.total);
                print_state_cells(&v[i].counts);
            }
            printf("%4s  %-24s %-7s %9s %7lld", "", "total", "", "", (long long)all.total);
            print_state_cells(&all);
            for (int i = 0; i < n; i++) {   /* the sweeps with screened jobs: one line each */
                ranking *rk = NULL;
                if (screened_count(st, v[i].id, &rk, err, sizeof err) > 0) {
                    printf("sweep %lld %s: ", (long long)v[i].id, v[i].name);
                    print_screened_hint(rk, v[i].name);
                }
                ranking_free(rk);
            }
        }
        free(v);
    }
    store_close(st);
    return status;
}
