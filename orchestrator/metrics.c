/* metrics.c — the server's operational routes: GET /healthz and GET /metrics (Prometheus text format), and
 * the per-request accounting /metrics reports.
 *
 * Design: /healthz reads the database once (a row count) and reports the last failed write for
 * METRICS_WRITE_ERR_WINDOW_S, so a full disk shows while reads still work. /metrics prints gauges read from the
 * store (jobs per state, workers alive), the queue's and the group commit's counters, requests by status
 * code and a latency histogram filled by metrics_record() after every answer, then the program's own
 * gauges through api.metrics_extra. Nothing here writes the database.
 */
#include "metrics.h"
#include "api.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "jobstate.h"
#include "util.h"
#include "views.h"

#define PRISM_VERSION "0.1.0"

static const double lat_bounds[METRICS_LAT_BUCKETS] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5 };

void metrics_healthz(api_ctx *c) {
    sqlite3_stmt *s = views_prepare(c, "SELECT count(*) FROM (SELECT 1 FROM sweeps LIMIT 1)");   /* readable, in O(1) */
    if (!s) return;
    int ok = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    if (!ok || c->a->stopping) {
        api_reply_json(c->res, 503, json_pack("{s:s, s:b}", "error", c->a->stopping ? "shutting down" : "database not readable", "ok", 0));
        return;
    }
    double ago = store_now() - c->a->metrics.write_err_at;
    if (c->a->metrics.write_err_at > 0 && ago < METRICS_WRITE_ERR_WINDOW_S) {
        char msg[700];
        snprintf(msg, sizeof msg, "database write failed %.0f s ago: %s (free disk space or fix the file; writes are "
                 "refused until then)", ago, c->a->metrics.write_err);
        api_reply_json(c->res, 503, json_pack("{s:s, s:b, s:s, s:s}", "error", msg, "ok", 0, "db", "write failed",
                                          "version", PRISM_VERSION));
        return;
    }
    api_reply_json(c->res, 200, json_pack("{s:b, s:s, s:s}", "ok", 1, "version", PRISM_VERSION, "db", "ok"));
}

void metrics_prometheus(api_ctx *c) {
    api *a = c->a;
    buf b = {0};
    buf_printf(&b, BUF_MAX, "# HELP prism_jobs Jobs per state.\n# TYPE prism_jobs gauge\n");
    /* the per-sweep counters (sql/010_sweep_counts.sql): a row per sweep and state, not a count of every job */
    sqlite3_stmt *s = views_prepare(c, "SELECT coalesce(sum(n), 0) FROM sweep_counts WHERE state = ?1");
    if (!s) { buf_free(&b); return; }
    for (int i = 0; i < JOB_NSTATES; i++) {   /* every state, paused and pruned included */
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, jobstate_name((job_state)i), -1, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        if (rc != SQLITE_ROW) {   /* a read error, not zero jobs */
            http_response_error(c->res, 500, "database read failed (jobs per state): %s", sqlite3_errmsg(a->st->db));
            sqlite3_finalize(s);
            buf_free(&b);
            return;
        }
        long long n = sqlite3_column_int64(s, 0);
        buf_printf(&b, BUF_MAX, "prism_jobs{state=\"%s\"} %lld\n", jobstate_name((job_state)i), n);
    }
    sqlite3_finalize(s);
    buf_printf(&b, BUF_MAX, "# HELP prism_leases_granted_total Leases granted since start.\n# TYPE prism_leases_granted_total counter\n"
                   "prism_leases_granted_total %llu\n", a->q.leases_granted);
    buf_printf(&b, BUF_MAX, "# HELP prism_leases_expired_total Leases expired since start.\n# TYPE prism_leases_expired_total counter\n"
                   "prism_leases_expired_total %llu\n", a->q.leases_expired);
    buf_printf(&b, BUF_MAX, "# HELP prism_metric_points_total Metric points stored since start.\n# TYPE prism_metric_points_total counter\n"
                   "prism_metric_points_total %llu\n", a->q.points_stored);
    buf_printf(&b, BUF_MAX, "# HELP prism_commits_total Group commits since start.\n# TYPE prism_commits_total counter\n"
                   "prism_commits_total %llu\n", a->commits);
    buf_printf(&b, BUF_MAX, "# HELP prism_leaderboard_builds_total Leaderboards ranked since start (the rest answered from the last "
                   "build: lbcache.h).\n# TYPE prism_leaderboard_builds_total counter\nprism_leaderboard_builds_total %llu\n"
                   "# HELP prism_leaderboard_cache_hits_total Leaderboard polls answered from the last build.\n"
                   "# TYPE prism_leaderboard_cache_hits_total counter\nprism_leaderboard_cache_hits_total %llu\n"
                   "# HELP prism_leaderboard_builds_off_loop_total Of the builds, those ranked on the thread pool (a costly "
                   "sweep's, while the last build answered).\n# TYPE prism_leaderboard_builds_off_loop_total counter\n"
                   "prism_leaderboard_builds_off_loop_total %llu\n"
                   "# HELP prism_leaderboard_not_modified_total Polls answered 304: the client held the build (its ETag).\n"
                   "# TYPE prism_leaderboard_not_modified_total counter\nprism_leaderboard_not_modified_total %llu\n",
               a->views.lb.builds, a->views.lb.hits, a->views.lb.async_builds, a->views.lb.not_modified);
    buf_printf(&b, BUF_MAX, "# HELP prism_workers_alive Workers seen within two lease TTLs.\n# TYPE prism_workers_alive gauge\n"
                   "prism_workers_alive %d\n", views_workers_alive(a));
    buf_printf(&b, BUF_MAX, "# HELP prism_http_requests_total Requests answered, by status code.\n# TYPE prism_http_requests_total counter\n");
    for (int code = 100; code < 600; code++)
        if (a->metrics.req_by_code[code]) buf_printf(&b, BUF_MAX, "prism_http_requests_total{code=\"%d\"} %llu\n", code, a->metrics.req_by_code[code]);
    buf_printf(&b, BUF_MAX, "# HELP prism_http_request_duration_seconds Handling time per request.\n"
                   "# TYPE prism_http_request_duration_seconds histogram\n");
    unsigned long long cum = 0, total = 0;
    for (int i = 0; i <= METRICS_LAT_BUCKETS; i++) total += a->metrics.lat_bucket[i];
    for (int i = 0; i < METRICS_LAT_BUCKETS; i++) {
        cum += a->metrics.lat_bucket[i];
        buf_printf(&b, BUF_MAX, "prism_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i], cum);
    }
    buf_printf(&b, BUF_MAX, "prism_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", total);
    buf_printf(&b, BUF_MAX, "prism_http_request_duration_seconds_sum %.6f\nprism_http_request_duration_seconds_count %llu\n",
               a->metrics.lat_sum, total);
    /* what each route's statements cost (store.h: store_cost): VM steps do not depend on the machine's speed, so a
     * route whose steps per request grow with the sweep's size shows here before it shows in latency */
    static const char *const cost_help[3][2] = {
        { "prism_route_requests_total", "API requests answered, by route." },
        { "prism_route_vm_steps_total", "SQLite VM steps run by the API's requests, by route (per request: divide by prism_route_requests_total)." },
        { "prism_route_rows_written_total", "Database rows inserted, updated or deleted by the API's requests, by route." },
    };
    for (int k = 0; k < 3; k++) {
        buf_printf(&b, BUF_MAX, "# HELP %s %s\n# TYPE %s counter\n", cost_help[k][0], cost_help[k][1], cost_help[k][0]);
        for (int i = 0; i < METRICS_MAX_ROUTES; i++) {
            const metrics_route *r = &a->metrics.route[i];
            if (!r->name) continue;
            buf_printf(&b, BUF_MAX, "%s{route=\"%s\"} %llu\n", cost_help[k][0], r->name,
                       k == 0 ? r->requests : k == 1 ? r->vm_steps : r->rows);
        }
    }
    /* how long each route's handler held the event loop (every other client waits meanwhile) */
    static const char *const time_help[2][3] = {
        { "prism_route_loop_seconds_total", "counter", "Time the API's handlers held the event loop, by route." },
        { "prism_route_loop_seconds_max", "gauge", "The longest one request's handler held the event loop, by route." },
    };
    for (int k = 0; k < 2; k++) {
        buf_printf(&b, BUF_MAX, "# HELP %s %s\n# TYPE %s %s\n", time_help[k][0], time_help[k][2], time_help[k][0], time_help[k][1]);
        for (int i = 0; i < METRICS_MAX_ROUTES; i++) {
            const metrics_route *r = &a->metrics.route[i];
            if (!r->name) continue;
            buf_printf(&b, BUF_MAX, "%s{route=\"%s\"} %.6f\n", time_help[k][0], r->name, k == 0 ? r->seconds : r->seconds_max);
        }
    }
    if (a->metrics_extra) a->metrics_extra(a->metrics_extra_ud, &b);
    http_response_set(c->res, 200, "text/plain; version=0.0.4; charset=utf-8", b.data ? b.data : "", b.len);
    buf_free(&b);
}

void metrics_record(metrics_state *m, const http_request *req, const http_response *res) {
    int st = res->status ? res->status : 500;
    if (st >= 100 && st < 600) { m->req_by_code[st]++; m->req_by_class[st / 100]++; }
    double dt = util_now_s() - req->t_start;
    if (dt < 0) dt = 0;
    int b = 0;
    while (b < METRICS_LAT_BUCKETS && dt > lat_bounds[b]) b++;
    m->lat_bucket[b]++;
    m->lat_sum += dt;
}

void metrics_route_cost(metrics_state *m, int i, const char *name, unsigned long long vm_steps, unsigned long long rows,
                        double seconds) {
    if (i < 0 || i >= METRICS_MAX_ROUTES) return;
    metrics_route *r = &m->route[i];
    r->name = name;
    r->requests++;
    r->vm_steps += vm_steps;
    r->rows += rows;
    r->seconds += seconds;
    if (seconds > r->seconds_max) r->seconds_max = seconds;
}

void metrics_note_write_error(metrics_state *m, const char *what, const char *msg) {
    snprintf(m->write_err, sizeof m->write_err, "%.100s: %.400s", what, msg && *msg ? msg : "database error");
    m->write_err_at = store_now();
}

void metrics_clear_write_error(metrics_state *m) {
    m->write_err_at = 0;
}
