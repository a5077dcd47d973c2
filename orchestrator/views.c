/* views.c — the API's read views: every GET route under /api/v1/ with the SQL behind it.
 *
 * Design: a view reads with prepared statements on the server's own connection, between the loop's writes,
 * so it sees this iteration's uncommitted writes (their answers too wait for the COMMIT). Rows become JSON
 * through one table of column names per query (row_json: '@' heads, '?' booleans, '!' JSON text). After a row
 * loop the last step result is checked (read_done): a corrupt page or an I/O error answers 500 naming it,
 * never fewer rows. The sweep summary is sweeps.c's (sweeps_summary, shared with `prism-sweep status`); this
 * file adds what only a live server knows: workers alive, steps/s and the ETA from its own samples. Job
 * progress (steps) is the jobs.steps column, the job model's (common/jobmodel.h), filled at create.
 * What the page polls costs what changed, not the sweep's size (issue #39): the jobs list answers ?since=CURSOR from
 * the jobs_rev index (jobs.rev: sql/014_job_changes.sql), and a sweep's cost is read from counters.
 */
#include "views.h"
#include "api.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobstate.h"
#include "leaderboard.h"
#include "racing.h"
#include "search.h"
#include "sweeps.h"

/* Query parameter value (raw, not decoded) copied into out; returns 1 when present. */
static int query_get(const char *q, const char *key, char *out, size_t n) {
    size_t kl = strlen(key);
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= n) vl = n - 1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = 0;
            return 1;
        }
        p = amp ? amp + 1 : NULL;
    }
    return 0;
}

static int parse_ll(const char *s, long long *v) {
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

sqlite3_stmt *views_prepare(api_ctx *c, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->a->st->db, sql, -1, &s, NULL) != SQLITE_OK) {
        http_response_error(c->res, 500, "database error: %s", sqlite3_errmsg(c->a->st->db));
        return NULL;
    }
    return s;
}

/* After a row loop: rc is the last sqlite3_step; anything but SQLITE_DONE is a read error (a corrupt page,
 * an I/O error), never the end of the rows. Answers 500 naming it and returns -1. */
static int read_done(api_ctx *c, int rc, const char *what) {
    if (rc == SQLITE_DONE) return 0;
    http_response_error(c->res, 500, "database read failed (%s): %s", what, sqlite3_errmsg(c->a->st->db));
    return -1;
}

/* Converts column i to JSON by its SQLite type; names starting with '!' parse JSON text, '@' are heads,
 * '?' are booleans. */
static json_t *col_json(sqlite3_stmt *s, int i, const char *name) {
    int t = sqlite3_column_type(s, i);
    if (t == SQLITE_NULL) return json_null();
    if (name[0] == '@') return schedule_heads_json((const char *)sqlite3_column_text(s, i));
    if (name[0] == '?') return json_boolean(sqlite3_column_int(s, i));
    if (name[0] == '!') {
        json_t *v = json_loads((const char *)sqlite3_column_text(s, i), 0, NULL);
        return v ? v : json_string((const char *)sqlite3_column_text(s, i));
    }
    if (t == SQLITE_INTEGER) return json_integer(sqlite3_column_int64(s, i));
    if (t == SQLITE_FLOAT) return json_real(sqlite3_column_double(s, i));
    return json_string((const char *)sqlite3_column_text(s, i));
}

/* sql (the row of the sweep or job ?1 = c->id; what names it) prepared and stepped onto its row; NULL after
 * answering 404 "no <what> <id>" or 500. The caller finalizes the statement. */
static sqlite3_stmt *id_row(api_ctx *c, const char *what, const char *sql) {
    sqlite3_stmt *s = views_prepare(c, sql);
    if (!s) return NULL;
    sqlite3_bind_int64(s, 1, c->id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        if (read_done(c, rc, what) == 0) http_response_error(c->res, 404, "no %s %lld", what, c->id);
        sqlite3_finalize(s);
        return NULL;
    }
    return s;
}

static json_t *row_json(sqlite3_stmt *s, const char *const *names, int n) {
    json_t *o = json_object();
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        json_object_set_new(o, (nm[0] == '@' || nm[0] == '?' || nm[0] == '!') ? nm + 1 : nm, col_json(s, i, nm));
    }
    return o;
}

#define JOB_COLS \
    "j.id, j.sweep_id, j.schedule_id, sc.heads, sc.is_baseline, j.seed, j.seed_index, j.priority, j.state, j.attempt, " \
    "j.preemptions, " \
    "j.worker_id, w.name, j.device, j.step, j.steps, " \
    "j.last_loss, r.val_loss, j.last_error, j.checkpoint_step, j.lease_expires_at, j.created_at, j.updated_at, j.finished_at"
static const char *const job_names[] = {
    "id", "sweep_id", "schedule_id", "@heads", "?is_baseline", "seed", "seed_index", "priority", "state", "attempt",
    "preemptions", "worker_id", "worker", "device", "step", "steps", "last_loss", "val_loss", "last_error", "checkpoint_step",
    "lease_expires_at", "created_at", "updated_at", "finished_at", "!job", "checkpoint_path", "!result",
};
#define JOB_NCOLS 24   /* JOB_COLS' columns (job_names' first ones); the job route adds 3 (job, checkpoint_path, result) */
#define JOB_JOINS "JOIN schedules sc ON sc.id = j.schedule_id LEFT JOIN workers w ON w.id = j.worker_id " \
                  "LEFT JOIN results r ON r.job_id = j.id "
#define JOB_FROM " FROM jobs j " JOB_JOINS
#define JOB_FROM_REV " FROM jobs j INDEXED BY jobs_rev " JOB_JOINS   /* the changes since a cursor: a range of jobs_rev */

int views_workers_alive(api *a) {
    sqlite3_stmt *s = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(a->st->db, "SELECT count(*) FROM workers WHERE last_seen_at > ?1", -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_double(s, 1, store_now() - 2 * a->cfg.lease_ttl);
        if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int(s, 0);
    }
    sqlite3_finalize(s);
    return n;
}

static views_rate *rate_of(views_state *v, long long sweep) {
    for (int i = 0; i < VIEWS_RATE_SLOTS; i++) if (v->rates[i].sweep == sweep) return &v->rates[i];
    views_rate *r = &v->rates[sweep % VIEWS_RATE_SLOTS];
    memset(r, 0, sizeof *r);
    r->sweep = sweep;
    return r;
}

void views_rate_restart(views_state *v, long long sweep, double now) {
    views_rate *r = rate_of(v, sweep);
    r->n = r->head = 0;
    r->resumed_at = now;
}

/* Records (now, steps) for the sweep and returns steps/s over its samples of the last 600 s since its last
 * resume (-1: unknown). */
static double sweep_rate(views_state *v, long long sweep, long long steps, double now, double *window) {
    views_rate *r = rate_of(v, sweep);
    int last = (r->head + VIEWS_RATE_SAMPLES - 1) % VIEWS_RATE_SAMPLES;
    if (r->n == 0 || now - r->s[last].t >= 2.0) {
        r->s[r->head].t = now;
        r->s[r->head].steps = steps;
        r->head = (r->head + 1) % VIEWS_RATE_SAMPLES;
        if (r->n < VIEWS_RATE_SAMPLES) r->n++;
    }
    int oldest = -1;
    for (int k = r->n; k >= 1; k--) {
        int i = (r->head + VIEWS_RATE_SAMPLES - k) % VIEWS_RATE_SAMPLES;
        if (now - r->s[i].t <= 600) { oldest = i; break; }
    }
    if (oldest < 0 || now - r->s[oldest].t < 1.0) { *window = 0; return -1; }
    *window = now - r->s[oldest].t;
    return (double)(steps - r->s[oldest].steps) / *window;
}

/* The API's shape of one sweep summary (sweeps_summary in sweeps.c, which `prism-sweep status` prints too):
 * counts per state with the total beside them, the workers alive, and steps/s and the ETA from this server's
 * own samples of steps_done. */
static json_t *sweep_json(api *a, const sweeps_info *v, int alive, double now) {
    double window = 0;
    double rate = sweep_rate(&a->views, v->id, v->steps_done, now, &window);
    long long remaining = v->steps_total - v->steps_done;
    /* no ETA while nothing runs (a paused sweep whose leased jobs ended, or one whose jobs all stopped) */
    json_t *eta = remaining <= 0 ? json_real(0) : rate > 0 && v->counts.leased > 0 ? json_real(remaining / rate) : json_null();
    const sweeps_counts *n = &v->counts;
    json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:f, s:I, s:o, s:I, s:i, s:I, s:I, "
                          "s:{s:f, s:I, s:I, s:f}, s:o}",
                          "id", (json_int_t)v->id, "name", v->name, "state", v->state, "priority", (json_int_t)v->priority,
                          "created_at", v->created_at, "schedules", (json_int_t)v->n_schedules,
                          "counts", sweeps_states_json(n),   /* every job state (jobstate.h) */
                          "total", (json_int_t)n->total, "workers_alive", alive,
                          "steps_done", (json_int_t)v->steps_done, "steps_total", (json_int_t)v->steps_total,
                          "throughput", "window_s", window, "jobs_done", (json_int_t)v->jobs_done_since,
                          "steps", (json_int_t)(rate > 0 ? (long long)(rate * window + 0.5) : 0),
                          "steps_per_s", rate > 0 ? rate : 0.0,
                          "eta_s", eta);
    views_rate *r = rate_of(&a->views, v->id);
    json_object_set_new(json_object_get(o, "throughput"), "resumed_at", r->resumed_at > 0 ? json_real(r->resumed_at) : json_null());
    return o;
}

/* The summaries of every sweep (only = 0) or one, as a JSON array; NULL after answering 500. */
static json_t *sweeps_query(api_ctx *c, long long only) {
    double now = store_now();
    sweeps_info *v = NULL;
    int n = 0;
    if (sweeps_summary(c->a->st, only, now - SWEEPS_DONE_WINDOW_S, &v, &n) < 0) {
        http_response_error(c->res, 500, "database read failed: %s", c->a->st->err);
        return NULL;
    }
    int alive = views_workers_alive(c->a);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = sweep_json(c->a, &v[i], alive, now);
        if (o) json_array_append_new(arr, o);
    }
    free(v);
    return arr;
}

void views_sweeps_list(api_ctx *c) {
    json_t *arr = sweeps_query(c, 0);
    if (!arr) return;
    /* the job states (jobstate.h) and its sets: the page's vocabulary, so it spells none of them */
    json_t *names = json_array(), *halving = json_array(), *terminal = json_array(), *active = json_array();
    for (int k = 0; k < JOB_NSTATES; k++) {
        job_state s = (job_state)k;
        json_array_append_new(names, json_string(jobstate_name(s)));
        if (jobstate_is_halving(s)) json_array_append_new(halving, json_string(jobstate_name(s)));
        json_array_append_new(jobstate_is_terminal(s) ? terminal : active, json_string(jobstate_name(s)));
    }
    api_reply_json(c->res, 200, json_pack("{s:o, s:i, s:f, s:o, s:o, s:o, s:o}", "sweeps", arr, "workers_alive",
                                          views_workers_alive(c->a), "now", store_now(), "job_states", names,
                                          "halving_states", halving, "terminal_states", terminal, "active_states", active));
}

void views_sweep_get(api_ctx *c) {
    json_t *arr = sweeps_query(c, c->id > 0 ? c->id : -1);   /* id 0 is no sweep, not "every sweep" */
    if (!arr) return;
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        http_response_error(c->res, 404, "no sweep %lld", c->id);
        return;
    }
    json_t *o = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    sqlite3_stmt *s = id_row(c, "sweep", "SELECT spec FROM sweeps WHERE id = ?1");   /* the spec as given */
    if (!s) { json_decref(o); return; }
    json_t *spec = json_loads((const char *)sqlite3_column_text(s, 0), 0, NULL);
    sqlite3_finalize(s);
    json_object_set_new(o, "spec", spec ? spec : json_null());
    /* what the sweep has cost so far: tokens trained by every job (failed and cancelled ones too: they were
     * spent) and the device time the finished jobs reported (result wall_s + setup_s; running jobs count once done). Read
     * from the counters (sql/014_job_changes.sql: sweep_counts.tokens, sweep_results), the leased jobs' tokens live
     * (jobs_sweep: as many rows as the sweep's running jobs): O(1) in the sweep's size. */
    s = id_row(c, "sweep", "SELECT (SELECT coalesce(sum(tokens), 0) FROM sweep_counts WHERE sweep_id = sw.id) + "
               "(SELECT coalesce(sum(min(j.step, coalesce(nullif(j.steps, 0), j.step)) * j.tokens_per_step), 0) "
               "FROM jobs j WHERE j.sweep_id = sw.id AND j.state = 'leased'), coalesce(r.wall_s, 0) + coalesce(r.setup_s, 0), "
               "coalesce(r.timed, 0), coalesce(r.setup_s, 0) "
               "FROM sweeps sw LEFT JOIN sweep_results r ON r.sweep_id = sw.id WHERE sw.id = ?1");
    if (!s) { json_decref(o); return; }
    /* device_hours: the results' wall_s and their trainers' start-up before the first step (setup_s, migration 17) */
    json_object_set_new(o, "cost", json_pack("{s:I, s:f, s:I, s:f}", "tokens_trained", (json_int_t)sqlite3_column_int64(s, 0),
                                             "device_hours", sqlite3_column_double(s, 1) / 3600.0,
                                             "jobs_timed", (json_int_t)sqlite3_column_int64(s, 2),
                                             "setup_hours", sqlite3_column_double(s, 3) / 3600.0));
    sqlite3_finalize(s);
    racing_summary rs;   /* racing (sweeps/README.md): the rounds, survivors and seeds spent, as status and the leaderboard */
    char rerr[256];
    if (racing_summarize(c->a->st, c->id, &rs, rerr, sizeof rerr) == 0 && rs.enabled) {
        json_t *rj = racing_summary_json(c->a->st, c->id, &rs, rerr, sizeof rerr);
        if (rj) json_object_set_new(o, "racing", rj);
    }
    json_t *sj = NULL;   /* a surrogate search (search.h): its progress, recommendation and outlook */
    if (search_summary_json(c->a->st, c->id, &sj, rerr, sizeof rerr) == 0 && sj) json_object_set_new(o, "search", sj);
    api_reply_json(c->res, 200, o);
}

static int sweep_exists(api_ctx *c) {
    sqlite3_stmt *s = id_row(c, "sweep", "SELECT 1 FROM sweeps WHERE id = ?1");
    if (!s) return -1;
    sqlite3_finalize(s);
    return 0;
}

/* The sweep's change cursor now: the rev of its latest change of a job (sql/014_job_changes.sql: the end of its range
 * of jobs_rev); -1 after answering 500. */
static long long jobs_cursor(api_ctx *c) {
    sqlite3_stmt *s = views_prepare(c, "SELECT coalesce(max(rev), 0) FROM jobs INDEXED BY jobs_rev WHERE sweep_id = ?1");
    if (!s) return -1;
    sqlite3_bind_int64(s, 1, c->id);
    int rc = sqlite3_step(s);
    long long n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    if (rc != SQLITE_ROW) read_done(c, rc == SQLITE_DONE ? SQLITE_ERROR : rc, "jobs cursor");
    sqlite3_finalize(s);
    return n;
}

/* Appends the rows of s (JOB_COLS, then with_rev ? j.rev) to arr while it holds fewer than want; returns the
 * last sqlite3_step (SQLITE_ROW when it stopped at want with rows left) and sets *last_rev to the last row's rev. */
static int jobs_rows(sqlite3_stmt *s, json_t *arr, long long want, int with_rev, long long *last_rev) {
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if ((long long)json_array_size(arr) >= want) break;
        json_array_append_new(arr, row_json(s, job_names, JOB_NCOLS));
        if (with_rev) *last_rev = sqlite3_column_int64(s, JOB_NCOLS);
    }
    return rc;
}

/* The lease-order key (priority, seed_index, lease_ord) of job `after` of this sweep into k[]; -1 after answering
 * 400 (not a job of this sweep) or 500. */
static int jobs_after_key(api_ctx *c, long long after, long long k[3]) {
    sqlite3_stmt *s = views_prepare(c, "SELECT priority, seed_index, lease_ord FROM jobs WHERE id = ?1 AND sweep_id = ?2");
    if (!s) return -1;
    sqlite3_bind_int64(s, 1, after);
    sqlite3_bind_int64(s, 2, c->id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        for (int i = 0; i < 3; i++) k[i] = sqlite3_column_int64(s, i);
    sqlite3_finalize(s);
    if (rc == SQLITE_ROW) return 0;
    if (read_done(c, rc, "jobs after") == 0)
        http_response_error(c->res, 400, "after: job %lld is not a job of sweep %lld (give the last id of the previous "
                            "answer, or leave after= out for the first page)", after, c->id);
    return -1;
}

/* One page of the sweep's jobs in the lease order into arr: want + 1 rows are asked, so *more says whether any
 * are left. From the start (offset rows skipped), or after job `after` (after >= 0): the rest of that job's
 * priority level past its (seed_index, lease_ord, id), then the lower levels — each a range of jobs_list (or of
 * jobs_list_state with a state), never a sort of the sweep. Returns 0, or -1 after answering 400/500. */
static int jobs_page_lease(api_ctx *c, const char *state, long long want, long long offset, long long after,
                           json_t *arr, int *more) {
#define JOBS_LIST(ix) " FROM jobs j INDEXED BY " ix " " JOB_JOINS
#define JOBS_ORDER " ORDER BY j.priority DESC, j.seed_index, j.lease_ord, j.id LIMIT ?3 OFFSET ?4"
    static const char *const sql[2][2] = {   /* [state given][after given] */
        { "SELECT " JOB_COLS JOBS_LIST("jobs_list") "WHERE j.sweep_id = ?1 AND ?2 IS NULL" JOBS_ORDER,
          "SELECT " JOB_COLS JOBS_LIST("jobs_list") "WHERE j.sweep_id = ?1 AND ?2 IS NULL AND j.priority = ?5 AND "
          "(j.seed_index, j.lease_ord, j.id) > (?6, ?7, ?8)" JOBS_ORDER },
        { "SELECT " JOB_COLS JOBS_LIST("jobs_list_state") "WHERE j.sweep_id = ?1 AND j.state = ?2" JOBS_ORDER,
          "SELECT " JOB_COLS JOBS_LIST("jobs_list_state") "WHERE j.sweep_id = ?1 AND j.state = ?2 AND j.priority = ?5 AND "
          "(j.seed_index, j.lease_ord, j.id) > (?6, ?7, ?8)" JOBS_ORDER },
    };
    static const char *const lower[2] = {   /* after: the levels below the job's priority */
        "SELECT " JOB_COLS JOBS_LIST("jobs_list") "WHERE j.sweep_id = ?1 AND ?2 IS NULL AND j.priority < ?5" JOBS_ORDER,
        "SELECT " JOB_COLS JOBS_LIST("jobs_list_state") "WHERE j.sweep_id = ?1 AND j.state = ?2 AND j.priority < ?5" JOBS_ORDER,
    };
#undef JOBS_LIST
#undef JOBS_ORDER
    long long k[3] = {0, 0, 0};
    if (after >= 0 && jobs_after_key(c, after, k) < 0) return -1;
    int st = state != NULL, rc = SQLITE_DONE;
    for (int part = 0; part < (after >= 0 ? 2 : 1) && (long long)json_array_size(arr) <= want; part++) {
        sqlite3_stmt *s = views_prepare(c, part == 0 ? sql[st][after >= 0] : lower[st]);
        if (!s) return -1;
        sqlite3_bind_int64(s, 1, c->id);
        if (st) sqlite3_bind_text(s, 2, state, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 3, want + 1 - (long long)json_array_size(arr));
        sqlite3_bind_int64(s, 4, part == 0 ? offset : 0);
        if (after >= 0) {
            sqlite3_bind_int64(s, 5, k[0]);
            if (part == 0) { sqlite3_bind_int64(s, 6, k[1]); sqlite3_bind_int64(s, 7, k[2]); sqlite3_bind_int64(s, 8, after); }
        }
        rc = jobs_rows(s, arr, want, 0, &(long long){0});
        sqlite3_finalize(s);
        if (rc == SQLITE_ROW) { *more = 1; return 0; }   /* a row past the page: there are more */
        if (read_done(c, rc, "jobs") < 0) return -1;
    }
    *more = 0;
    return 0;
}

/* GET sweeps/{id}/jobs: the sweep's jobs in the lease order, a page at a time (?limit=, at most VIEWS_JOBS_PAGE,
 * the default; the next page ?after= the last job's id; ?state= filters; ?offset= up to VIEWS_JOBS_OFFSET_MAX), or
 * with ?since=CURSOR those changed after the cursor, oldest change first (?limit= as well; the next page since= the
 * answer's cursor). Every answer carries "more" (whether a next page has jobs), "cursor" (to pass as since later:
 * the first page's cursor covers every change made while the pages are read) and "full": true when it is (a page of)
 * the whole list (no since, or a since ahead of this database's cursor: the client's copy is of another database).
 * A page is a range of an index (jobs_list, jobs_rev): its cost is the page's, whatever the sweep's size. */
void views_sweep_jobs(api_ctx *c) {
    char state[32] = "";
    int has_state = query_get(c->req->query, "state", state, sizeof state);
    job_state js;
    if (has_state && jobstate_parse(state, &js) < 0) {
        char names[128];
        http_response_error(c->res, 400, "state: must be %s", jobstate_list(names, sizeof names, ", ", " or "));
        return;
    }
    char num[32], off[32], aft[32];
    long long limit = VIEWS_JOBS_PAGE, offset = 0, since = -1, after = -1;
    int has_offset = query_get(c->req->query, "offset", off, sizeof off);
    int has_after = query_get(c->req->query, "after", aft, sizeof aft);
    if ((query_get(c->req->query, "limit", num, sizeof num) && (parse_ll(num, &limit) < 0 || limit < 0)) ||
        (has_offset && (parse_ll(off, &offset) < 0 || offset < 0))) {
        http_response_error(c->res, 400, "limit and offset: must be integers >= 0");
        return;
    }
    if (limit > VIEWS_JOBS_PAGE) limit = VIEWS_JOBS_PAGE;   /* a page at most: "more" says there is a next one */
    if (offset > VIEWS_JOBS_OFFSET_MAX) {
        http_response_error(c->res, 400, "offset: at most %d; page on with after= the last job id of the previous answer",
                            VIEWS_JOBS_OFFSET_MAX);
        return;
    }
    if (has_after && (parse_ll(aft, &after) < 0 || after < 0)) {
        http_response_error(c->res, 400, "after: must be a job id (an integer >= 0): the last job of the previous answer");
        return;
    }
    int has_since = query_get(c->req->query, "since", num, sizeof num);
    if (has_since && (parse_ll(num, &since) < 0 || since < 0)) {
        http_response_error(c->res, 400, "since: must be the cursor (an integer >= 0) of an earlier answer of this route");
        return;
    }
    if (has_since && has_state) {
        http_response_error(c->res, 400, "state with since: a job that changed out of the state would not be reported; "
                            "ask since= alone and filter on the client");
        return;
    }
    if (has_since && (has_offset || has_after)) {
        http_response_error(c->res, 400, "%s with since: page the changes with limit= and each answer's cursor as "
                            "the next since=", has_offset ? "offset" : "after");
        return;
    }
    if (has_after && has_offset) {
        http_response_error(c->res, 400, "after with offset: give one (after= the last job id of the previous answer)");
        return;
    }
    if (sweep_exists(c) < 0) return;
    long long cursor = jobs_cursor(c);
    if (cursor < 0) return;
    int full = !has_since || since > cursor;   /* a cursor ahead of ours: the whole list, in the order of changes */
    if (has_since && since > cursor) since = 0;
    json_t *arr = json_array();
    int more = 0;
    long long last_rev = since;   /* the cursor a page of changes stops at: its last job's change */
    if (has_since) {
        sqlite3_stmt *s = views_prepare(c, "SELECT " JOB_COLS ", j.rev" JOB_FROM_REV "WHERE j.sweep_id = ?1 AND j.rev > ?2 "
                                           "ORDER BY j.rev LIMIT ?3");
        if (!s) { json_decref(arr); return; }
        sqlite3_bind_int64(s, 1, c->id);
        sqlite3_bind_int64(s, 2, since);
        sqlite3_bind_int64(s, 3, limit + 1);   /* one more than asked: whether there are more */
        int rc = jobs_rows(s, arr, limit, 1, &last_rev);
        sqlite3_finalize(s);
        if (rc == SQLITE_ROW) more = 1;
        else if (read_done(c, rc, "jobs") < 0) { json_decref(arr); return; }
    } else if (jobs_page_lease(c, has_state ? state : NULL, limit, offset, after, arr, &more) < 0) {
        json_decref(arr);
        return;
    }
    size_t n = json_array_size(arr);
    json_t *o = json_pack("{s:o, s:I, s:b, s:b}", "jobs", arr, "cursor",
                          (json_int_t)(has_since && more ? last_rev : cursor), "full", full, "more", more);
    if (!has_since && more && n > 0)   /* the next page: after= this */
        json_object_set(o, "after", json_object_get(json_array_get(arr, n - 1), "id"));
    api_reply_json(c->res, 200, o);
}

void views_job_get(api_ctx *c) {
    sqlite3_stmt *s = id_row(c, "job", "SELECT " JOB_COLS ", j.job, j.checkpoint_path, r.result" JOB_FROM "WHERE j.id = ?1");
    if (!s) return;
    json_t *o = row_json(s, job_names, JOB_NCOLS + 3);
    sqlite3_finalize(s);
    api_reply_json(c->res, 200, o);
}

/* GET jobs/{id}/metrics: the job's curve of ?kind= (the latest attempt's point of each step) after ?since=STEP, a
 * page of at most ?limit= (VIEWS_POINTS_PAGE, the default) points: JSON "more" (CSV: the header X-Prism-More: true)
 * says there are others, from since= its last_step (the CSV's last row's step). A range of metrics_key. */
void views_job_metrics(api_ctx *c) {
    char kind[16] = "val", since_s[32] = "-1", fmt[16] = "json";
    query_get(c->req->query, "kind", kind, sizeof kind);
    query_get(c->req->query, "format", fmt, sizeof fmt);
    long long since = -1, limit = VIEWS_POINTS_PAGE;
    char num[32];
    if (query_get(c->req->query, "since", since_s, sizeof since_s) && parse_ll(since_s, &since) < 0) {
        http_response_error(c->res, 400, "since: must be an integer step");
        return;
    }
    if (query_get(c->req->query, "limit", num, sizeof num) && (parse_ll(num, &limit) < 0 || limit < 1)) {
        http_response_error(c->res, 400, "limit: must be an integer >= 1 (points per answer; at most %d)", VIEWS_POINTS_PAGE);
        return;
    }
    if (limit > VIEWS_POINTS_PAGE) limit = VIEWS_POINTS_PAGE;   /* a page at most: "more" says there is a next one */
    if (strcmp(kind, "val") && strcmp(kind, "train")) { http_response_error(c->res, 400, "kind: must be val or train"); return; }
    if (strcmp(fmt, "json") && strcmp(fmt, "csv")) { http_response_error(c->res, 400, "format: must be json or csv"); return; }
    sqlite3_stmt *s = id_row(c, "job", "SELECT attempt FROM jobs WHERE id = ?1");
    if (!s) return;
    int rc;
    long long attempt = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    s = views_prepare(c, "SELECT m.step, m.value, m.tokens, m.lr, m.tok_per_s, m.attempt, m.grad_norm, m.val_loss_se, m.extra "
                "FROM metrics m "
                "WHERE m.job_id = ?1 AND m.kind = ?2 AND m.step > ?3 AND m.attempt = "
                "(SELECT max(attempt) FROM metrics m2 WHERE m2.job_id = m.job_id AND m2.step = m.step AND m2.kind = m.kind) "
                "ORDER BY m.step LIMIT ?4");
    if (!s) return;
    sqlite3_bind_int64(s, 1, c->id);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, since);
    sqlite3_bind_int64(s, 4, limit + 1);   /* one more than a page: whether there are more */
    long long rows = 0;
    /* the SELECT's columns in its order, which is also the CSV's (an interface): a new one is appended to both */
    static const char *const names[] = { "step", "value", "tokens", "lr", "tok_per_s", "attempt", "grad_norm",
                                          "val_loss_se", "!extra" };
    /* the CSV has the numeric columns only; the JSON also a point's "extra" {name: number}, absent when it has none
     * (an external trainer's own metrics, sql/016_metric_extras.sql) */
    const int ncol = (int)(sizeof names / sizeof names[0]) - 1;
    if (strcmp(fmt, "csv") == 0) {
        buf b = {0};
        for (int i = 0; i < ncol; i++) {   /* the header: the names */
            buf_puts(&b, names[i], BUF_MAX);
            buf_puts(&b, i + 1 < ncol ? "," : "\n", BUF_MAX);
        }
        while ((rc = sqlite3_step(s)) == SQLITE_ROW && rows++ < limit) {
            for (int i = 0; i < ncol; i++) {   /* straight into b: no line buffer for the columns to outgrow */
                const char *t = (const char *)sqlite3_column_text(s, i);   /* NULL for NULL: an empty field */
                buf_puts(&b, t ? t : "", BUF_MAX);
                buf_puts(&b, i + 1 < ncol ? "," : "\n", BUF_MAX);
            }
        }
        sqlite3_finalize(s);
        int more = rc == SQLITE_ROW;   /* stopped at the page's end with a point left */
        if (!more && read_done(c, rc, "metrics") < 0) { buf_free(&b); return; }
        http_response_set(c->res, 200, "text/csv; charset=utf-8", b.data ? b.data : "", b.len);
        if (more) c->res->extra_headers = "X-Prism-More: true\r\n";   /* the next page: since= the last row's step */
        buf_free(&b);
        return;
    }
    json_t *pts = json_array();
    long long last = -1;
    int any = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && rows++ < limit) {
        json_t *row = row_json(s, names, ncol + 1);
        if (json_is_null(json_object_get(row, "extra"))) json_object_del(row, "extra");
        json_array_append_new(pts, row);
        last = sqlite3_column_int64(s, 0);
        any = 1;
    }
    sqlite3_finalize(s);
    int more = rc == SQLITE_ROW;
    if (!more && read_done(c, rc, "metrics") < 0) { json_decref(pts); return; }
    api_reply_json(c->res, 200, json_pack("{s:I, s:s, s:I, s:o, s:o, s:b}", "job_id", (json_int_t)c->id, "kind", kind,
                                      "attempt", (json_int_t)attempt, "points", pts,
                                      "last_step", any ? json_integer(last) : json_null(), "more", more));
}

void views_workers(api_ctx *c) {
    sqlite3_stmt *s = views_prepare(c, "SELECT id, name, host, devices, registered_at, last_seen_at, fail_streak, "
                                       "stopped_reason FROM workers ORDER BY id");
    sqlite3_stmt *j = views_prepare(c, "SELECT id, device, sweep_id, step, steps FROM jobs WHERE state = 'leased' AND "
                                       "worker_id = ?1 ORDER BY id");
    if (!s || !j) { sqlite3_finalize(s); sqlite3_finalize(j); return; }
    static const char *const names[] = { "id", "name", "host", "!devices", "registered_at", "last_seen_at", "fail_streak",
                                         "stopped_reason" };
    static const char *const jnames[] = { "job_id", "device", "sweep_id", "step", "steps" };
    double cutoff = store_now() - 2 * c->a->cfg.lease_ttl;
    json_t *arr = json_array();
    int rc, jrc = SQLITE_DONE;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *o = row_json(s, names, 8);
        json_object_set_new(o, "alive", json_boolean(sqlite3_column_double(s, 5) > cutoff));
        json_t *jobs = json_array();
        sqlite3_reset(j);
        sqlite3_bind_int64(j, 1, sqlite3_column_int64(s, 0));
        while ((jrc = sqlite3_step(j)) == SQLITE_ROW) json_array_append_new(jobs, row_json(j, jnames, 5));
        json_object_set_new(o, "jobs", jobs);
        json_array_append_new(arr, o);
        if (jrc != SQLITE_DONE) break;
    }
    if (rc == SQLITE_ROW) rc = jrc;
    sqlite3_finalize(s);
    sqlite3_finalize(j);
    if (read_done(c, rc, "workers") < 0) { json_decref(arr); return; }
    api_reply_json(c->res, 200, json_pack("{s:o}", "workers", arr));
}

void views_release(views_state *v) { lbcache_release(&v->lb); }

void views_leaderboard(api_ctx *c) {
    char fmt[16] = "json", err[512] = "";
    query_get(c->req->query, "format", fmt, sizeof fmt);
    if (strcmp(fmt, "json") && strcmp(fmt, "csv")) { http_response_error(c->res, 400, "format: must be json or csv"); return; }
    json_t *lb = NULL;
    int rc = lbcache_get(&c->a->views.lb, c->a->st, c->id, &lb, err, sizeof err);   /* the cache's: read only */
    if (rc < 0) { api_reply_store_error(c, rc, err, NULL); return; }
    if (strcmp(fmt, "csv") == 0) {
        char *csv = leaderboard_csv(lb);
        json_decref(lb);
        if (!csv) { http_response_error(c->res, 500, "out of memory"); return; }
        http_response_set(c->res, 200, "text/csv; charset=utf-8", csv, strlen(csv));
        c->res->extra_headers = "Content-Disposition: attachment; filename=\"leaderboard.csv\"\r\nCache-Control: no-store\r\n";
        free(csv);
        return;
    }
    blob *text = lbcache_text(&c->a->views.lb, lb);   /* rendered once per build; written without a copy */
    if (!text) { api_reply_json(c->res, 200, lb); return; }
    /* The page polls every 2 s and a large sweep's build changes every LBCACHE_DUTY build times at most: a client
     * holding this build's bytes (the browser revalidates: no-cache) gets a 304 instead of them again. */
    char tag[HTTP_MAX_ETAG + 1];
    if (lbcache_etag(&c->a->views.lb, lb, tag, sizeof tag) == 0) {
        snprintf(c->res->etag, sizeof c->res->etag, "%s", tag);
        if (http_etag_matches(c->req, tag)) {
            json_decref(lb);
            c->res->status = 304;
            c->res->extra_headers = "Cache-Control: no-cache\r\n";
            c->a->views.lb.not_modified++;
            return;
        }
    }
    http_response_set_shared(c->res, 200, "application/json", text);
    c->res->extra_headers = c->res->etag[0] ? "Cache-Control: no-cache\r\n" : "Cache-Control: no-store\r\n";
    json_decref(lb);
}
