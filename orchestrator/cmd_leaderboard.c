/* cmd_leaderboard.c — `prism-sweep leaderboard --db FILE [SWEEP] [--format table|csv|json]`: the ranking of
 * leaderboard.c printed for a terminal, a spreadsheet or a program.
 *
 * Design: a read command: the store is opened read-only (nothing created or migrated); SWEEP is a name or an id
 * (a name wins when a sweep is named like another's id), the newest sweep when omitted. The JSON is
 * leaderboard_build()'s, the same GET /api/v1/sweeps/{id}/leaderboard serves.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "leaderboard.h"
#include "store.h"
#include "sweeps.h"

/* SWEEP by sweeps_find (the rule of every command), or the newest sweep */
static int find_sweep(store *st, const char *arg, long long *id) {
    if (arg) {
        int64_t v = 0;
        int frc = sweeps_find(st, arg, &v);
        *id = v;
        return frc;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT id FROM sweeps ORDER BY id DESC LIMIT 1", -1, &s, NULL) != SQLITE_OK) return STORE_EIO;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) *id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? STORE_OK : rc == SQLITE_DONE ? STORE_ENOTFOUND : STORE_EIO;
}

int cmd_leaderboard(int argc, char **argv) {
    const char *db = "prism.db", *fmt = "table";
    cli_flag flags[] = {
        { "--db", CLI_STR, &db, "prism.db", "the SQLite database", 0, 0, NULL, 0 },
        { "--format", CLI_CHOICE, &fmt, "table", "output format", 0, 0, "table|csv|json", 0 },
        { 0 },
    };
    cli_cmd cmd = { "leaderboard", "--db FILE [SWEEP] [--format table|csv|json]",
                    "Rank a sweep's schedules (SWEEP = id or name; default the newest sweep) by the paired mean difference of "
                    "final val loss against the uniform baseline over the seeds both finished, with its 95% confidence "
                    "interval, the paired t-test p-value Holm-adjusted over the sweep, and the tied-for-best group.", flags, NULL };
    char *pos[1];
    int npos = 0;
    int rc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    struct stat sb;
    if (stat(db, &sb) != 0) return cli_error("leaderboard", "--db %s: no such file (create a sweep first)", db);
    if (!S_ISREG(sb.st_mode)) return cli_error("leaderboard", "--db %s: not a file (give the database file)", db);
    char err[1024] = "";
    store *st = NULL;
    int orc = store_open_readonly(db, &st, err, sizeof err);   /* a read command changes no file */
    if (orc < 0) {
        fprintf(stderr, "prism-sweep leaderboard: --db %s: %s\n", db, err);
        return cmd_store_exit(orc);
    }
    long long id = 0;
    int status = 1;
    json_t *lb = NULL;
    rc = find_sweep(st, npos ? pos[0] : NULL, &id);
    if (rc == STORE_ENOTFOUND) {
        status = cli_error("leaderboard", npos ? "no sweep \"%s\" in %s (see prism-sweep status)" : "%s%s has no sweeps yet "
                           "(prism-sweep create SPEC.json)", npos ? pos[0] : "", db);
        goto out;
    }
    if (rc == STORE_EINVAL) { status = cli_error("leaderboard", "%s", st->err); goto out; }
    if (rc < 0 || (rc = leaderboard_build(st, id, &lb, err, sizeof err)) < 0) {
        fprintf(stderr, "prism-sweep leaderboard: %s\n", rc == STORE_EIO && !lb ? (err[0] ? err : sqlite3_errmsg(st->db)) : err);
        goto out;
    }
    char *text = strcmp(fmt, "json") == 0 ? json_dumps(lb, JSON_INDENT(2) | JSONOUT_FLAGS)
               : strcmp(fmt, "csv") == 0 ? leaderboard_csv(lb) : leaderboard_table(lb);
    if (text && !strcmp(fmt, "table")) {   /* fit the terminal: COLUMNS, else the tty's width (a pipe: as it is) */
        int w = getenv("COLUMNS") ? atoi(getenv("COLUMNS")) : 0;
        struct winsize ws;
        if (w <= 0 && isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) w = ws.ws_col;
        if (w > 0) {
            char *fit = leaderboard_wrap(text, w < 40 ? 40 : w);
            free(text);
            text = fit;
        }
    }
    if (!text) { fprintf(stderr, "prism-sweep leaderboard: out of memory\n"); goto out; }
    fputs(text, stdout);
    if (strcmp(fmt, "json") == 0) fputc('\n', stdout);
    free(text);
    status = 0;
out:
    json_decref(lb);
    store_close(st);
    return status;
}
