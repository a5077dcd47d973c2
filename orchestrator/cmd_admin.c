/* cmd_admin.c — the admin API as commands: `prism-sweep requeue | cancel | pause | resume | priority`.
 *
 *   prism-sweep requeue SWEEP --state failed [--error-like TEXT]   every failed job of SWEEP (one call, one transaction)
 *   prism-sweep requeue SWEEP --state screened                    every done job the leaderboard's outlier screen left out
 *   prism-sweep requeue --job ID | cancel --job ID                 one job
 *   prism-sweep pause SWEEP | resume SWEEP                         a sweep leases nothing / again
 *   prism-sweep priority SWEEP N | priority --job ID N             a sweep (and its queued jobs) or one job
 *
 * Design: each command is a row of one table (name, what it needs, the route it calls); cmd_admin_run parses
 * the shared flags (--server, --token-file, --db) and the row's own, resolves SWEEP (a name, else an id) through
 * GET /api/v1/sweeps, and sends one POST with the admin token (common/client.c: refused connections, timeouts
 * and 5xx are retried for --retry-for seconds). The admin token is read from --token-file (an admin_token=
 * line, or one bare line), by default DB.tokens beside --db, else DB.admin-token.
 * Exit status (the table in docs/API.md): 0 done, 1 the server could not be reached or failed (5xx), 2 bad
 * usage, no such sweep or job, the request refused (4xx: a job in the wrong state, the token refused).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "jsonout.h"
#include "cli.h"
#include "client.h"
#include "commands.h"
#include "logesc.h"

enum { NEED_SWEEP = 1, NEED_JOB = 2, NEED_VALUE = 4, TAKES_STATE = 8 };

typedef struct admin_cmd {
    const char *name;
    int needs;                 /* NEED_* of the sweep form; the --job form (NEED_JOB) when job_route is set */
    const char *sweep_route;   /* "/api/v1/sweeps/%lld/pause", NULL: no sweep form */
    const char *job_route;     /* "/api/v1/jobs/%lld/cancel", NULL: no job form */
    const char *synopsis;
    const char *summary;
} admin_cmd;

static const admin_cmd admin_cmds[] = {
    { "requeue", NEED_SWEEP | TAKES_STATE, "/api/v1/sweeps/%lld/requeue", "/api/v1/jobs/%lld/requeue",
      "SWEEP --state failed|cancelled|screened [--error-like TEXT] | --job ID",
      "Put failed (or cancelled) jobs back in the queue, attempts counted afresh: every such job of SWEEP whose last\n"
      "error contains TEXT, in one request and one transaction; or the one job --job ID. --state screened: every done\n"
      "job the leaderboard's outlier screen leaves out (its \"screened\" list) is trained again from the start; its old\n"
      "result is kept in the store (requeued_results). --job ID takes such a job too." },
    { "cancel", 0, NULL, "/api/v1/jobs/%lld/cancel", "--job ID",
      "Cancel a queued or leased job (its worker stops it at its next heartbeat). To stop a whole sweep, pause it." },
    { "pause", NEED_SWEEP, "/api/v1/sweeps/%lld/pause", NULL, "SWEEP",
      "Lease nothing more from SWEEP (jobs already leased run on)." },
    { "resume", NEED_SWEEP, "/api/v1/sweeps/%lld/resume", NULL, "SWEEP", "Lease SWEEP's jobs again after a pause." },
    { "priority", NEED_SWEEP | NEED_VALUE, "/api/v1/sweeps/%lld/priority", "/api/v1/jobs/%lld/priority",
      "SWEEP N | --job ID N", "Set the priority of SWEEP and all its queued jobs, or of one job (higher leases first)." },
};

/* The admin token: an admin_token= line, else the file's one bare line. */
static int admin_read_token(const char *cmd, const char *path, char *tok, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) return -errno;
    char line[1024];
    int bare = 0;
    tok[0] = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        s[strcspn(s, "\r\n")] = 0;
        while (*s == ' ' || *s == '\t') s++;
        if (!*s || *s == '#') continue;
        if (strncmp(s, "admin_token=", 12) == 0) { snprintf(tok, len, "%.500s", s + 12); bare = -1; break; }
        if (!strchr(s, '=') && !bare) { snprintf(tok, len, "%.500s", s); bare = 1; }
    }
    fclose(f);
    if (!tok[0]) {
        cli_error(cmd, "--token-file %s holds no admin_token= line (the server keeps it in DB.tokens beside its database)",
                  path);
        return -EINVAL;
    }
    return 0;
}

/* Exit status for a failed request: 1 when the server could not be reached or failed, else 2. */
static int admin_fail(const char *cmd, client *c, int rc) {
    char e[4 * sizeof c->err];
    log_escape(e, sizeof e, c->err);
    if (rc == CLIENT_ENET || rc == CLIENT_ENOMEM) {
        fprintf(stderr, "prism-sweep %s: %s (is prism-sweep serve running at that --server?)\n", cmd, e);
        return 1;
    }
    const char *hint = c->status == 401 ? " (give the admin token: --token-file DB.tokens of the server's database)"
                     : rc == CLIENT_EPROTO ? " (--server must be the address prism-sweep serve prints)" : "";
    fprintf(stderr, "prism-sweep %s: %s%s\n", cmd, e, hint);
    return 2;
}

/* SWEEP as an id: a sweep named so first, else a sweep with that id. 0, or an exit status. */
static int admin_find_sweep(const char *cmd, client *c, const char *arg, double retry, long long *id) {
    json_t *resp = NULL;
    int rc = client_request(c, "GET", "/api/v1/sweeps", NULL, retry, &resp);
    if (rc != CLIENT_OK) return admin_fail(cmd, c, rc);
    json_t *arr = json_object_get(resp, "sweeps"), *v;
    size_t i;
    long long by_id = 0, by_name = 0;
    *id = 0;
    json_array_foreach(arr, i, v) {
        long long sid = json_integer_value(json_object_get(v, "id"));
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name && strcmp(name, arg) == 0) by_name = sid;
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", sid);
        if (strcmp(buf, arg) == 0) by_id = sid;
    }
    json_decref(resp);
    if (by_id && by_name && by_id != by_name)   /* sweeps_find's rule: the text must name one sweep */
        return cli_error(cmd, "\"%s\" is the id of sweep %lld and the name of sweep %lld: give %lld for sweep %lld, or "
                         "sweep %lld's name for sweep %lld", arg, by_id, by_name, by_name, by_name, by_id, by_id);
    *id = by_id ? by_id : by_name;
    if (!*id) return cli_error(cmd, "no sweep \"%s\" on the server (prism-sweep status --db DB lists them)", arg);
    return 0;
}

static int cmd_admin_run(const admin_cmd *ac, int argc, char **argv) {
    const char *server = "http://127.0.0.1:8080", *token_file = NULL, *db = "prism.db", *state = NULL, *like = NULL;
    long long job = 0;
    double retry = 15;
    cli_flag flags[] = {
        { "--server", CLI_STR, &server, "http://127.0.0.1:8080", "the orchestrator (prism-sweep serve)", 0, 0, NULL, 0 },
        { "--token-file", CLI_STR, &token_file, "DB.tokens, else DB.admin-token", "file with the admin token "
          "(admin_token=HEX, or one bare line)", 0, 0, NULL, 0 },
        { "--db", CLI_STR, &db, "prism.db", "the server's database: only where the token file is found", 0, 0, NULL, 0 },
        { "--retry-for", CLI_DOUBLE, &retry, "15", "seconds to retry refused connections, timeouts and 5xx", 0, 1e6, NULL, 0 },
        { ac->job_route ? "--job" : "--no-job-form", CLI_INT64, &job, "", "one job (its id) instead of a sweep", 1,
          9.2e18, NULL, 0 },
        { (ac->needs & TAKES_STATE) ? "--state" : "--no-state", CLI_CHOICE, &state, "", "the jobs to requeue "
          "(screened: the done jobs the leaderboard's outlier screen leaves out)", 0, 0, "failed|cancelled|screened", 0 },
        { (ac->needs & TAKES_STATE) ? "--error-like" : "--no-error-like", CLI_STR, &like, "any", "only jobs whose last "
          "error contains TEXT (plain text, case-sensitive)", 0, 0, NULL, 0 },
        { 0 },
    };
    /* drop the rows this command does not have (their placeholder names start with --no-) */
    int k = 0;
    for (int i = 0; flags[i].name; i++) if (strncmp(flags[i].name, "--no-", 5) != 0) flags[k++] = flags[i];
    flags[k] = (cli_flag){ 0 };
    cli_cmd cmd = { ac->name, ac->synopsis, ac->summary, flags, NULL };
    char *pos[2];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 2, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    int by_job = ac->job_route && cli_find(&cmd, "--job")->seen;
    int want = (by_job ? 0 : (ac->needs & NEED_SWEEP) ? 1 : 0) + ((ac->needs & NEED_VALUE) ? 1 : 0);
    if (!by_job && !ac->sweep_route) return cli_error(ac->name, "--job ID is required (usage: prism-sweep %s %s)", ac->name, ac->synopsis);
    if (npos != want) return cli_error(ac->name, "expected %s (got %d argument%s)", ac->synopsis, npos, npos == 1 ? "" : "s");
    if ((ac->needs & TAKES_STATE) && !by_job && !state)
        return cli_error(ac->name, "--state failed (or cancelled) is required with SWEEP: which jobs to requeue (--state screened: the done jobs the outlier screen left out)");
    if (state && like && strcmp(state, "screened") == 0)
        return cli_error(ac->name, "--error-like selects failed or cancelled jobs, not with --state screened");
    if (by_job && (state || like)) return cli_error(ac->name, "--state / --error-like select jobs of a SWEEP, not with --job");
    long long value = 0;
    if (ac->needs & NEED_VALUE) {
        char *end;
        errno = 0;
        value = strtoll(pos[npos - 1], &end, 10);
        if (errno || !*pos[npos - 1] || *end) return cli_error(ac->name, "N must be an integer (got \"%s\")", pos[npos - 1]);
    }

    char tok[512], tpath[1100];
    int trc;
    if (token_file) {
        snprintf(tpath, sizeof tpath, "%s", token_file);
        trc = admin_read_token(ac->name, tpath, tok, sizeof tok);
    } else {
        snprintf(tpath, sizeof tpath, "%s.tokens", db);
        trc = admin_read_token(ac->name, tpath, tok, sizeof tok);
        if (trc == -ENOENT) {
            snprintf(tpath, sizeof tpath, "%s.admin-token", db);
            trc = admin_read_token(ac->name, tpath, tok, sizeof tok);
            if (trc == -ENOENT) snprintf(tpath, sizeof tpath, "%s.tokens", db);
        }
    }
    if (trc == -EINVAL) return 2;
    if (trc < 0) return cli_error(ac->name, "--token-file %s: %s (give the server's token file: DB.tokens beside its "
                                  "database, or --db DB)", tpath, strerror(-trc));

    curl_global_init(CURL_GLOBAL_DEFAULT);
    client c;
    int status = 1;
    if (client_init(&c, server, tok, NULL) != CLIENT_OK) { fprintf(stderr, "prism-sweep %s: out of memory\n", ac->name); goto out; }
    c.who = "";
    long long id = job;
    if (!by_job && (status = admin_find_sweep(ac->name, &c, pos[0], retry, &id)) != 0) goto out;
    char path[128];
    snprintf(path, sizeof path, by_job ? ac->job_route : ac->sweep_route, id);
    json_t *body = json_object();
    if (ac->needs & NEED_VALUE) json_object_set_new(body, "priority", json_integer(value));
    if (!by_job && state) json_object_set_new(body, "state", json_string(state));
    if (!by_job && like) json_object_set_new(body, "error_like", json_string(like));
    json_t *resp = NULL;
    int rc = client_request(&c, "POST", path, body, retry, &resp);
    json_decref(body);
    if (rc != CLIENT_OK) { status = admin_fail(ac->name, &c, rc); goto out; }
    if (json_object_get(resp, "requeued"))
        printf("requeued %lld %s job%s of sweep %s\n", (long long)json_integer_value(json_object_get(resp, "requeued")),
               state, json_integer_value(json_object_get(resp, "requeued")) == 1 ? "" : "s", pos[0]);
    char *text = resp ? json_dumps(resp, JSON_COMPACT | JSONOUT_FLAGS) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    json_decref(resp);
    status = 0;
out:
    client_release(&c);
    return status;
}

static int admin_dispatch(const char *name, int argc, char **argv) {
    for (size_t i = 0; i < sizeof admin_cmds / sizeof admin_cmds[0]; i++)
        if (strcmp(admin_cmds[i].name, name) == 0) return cmd_admin_run(&admin_cmds[i], argc, argv);
    return 2;
}

int cmd_requeue(int argc, char **argv) { return admin_dispatch("requeue", argc, argv); }
int cmd_cancel(int argc, char **argv) { return admin_dispatch("cancel", argc, argv); }
int cmd_pause(int argc, char **argv) { return admin_dispatch("pause", argc, argv); }
int cmd_resume(int argc, char **argv) { return admin_dispatch("resume", argc, argv); }
int cmd_priority(int argc, char **argv) { return admin_dispatch("priority", argc, argv); }
