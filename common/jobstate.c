/* jobstate.c — the job states' names and classes (jobstate.h).
 *
 * Design: one table indexed by the enum; every other listing of the states (the SQL CHECK, /metrics, the
 * counts objects, the page) is derived from it or tested against it.
 */
#include "jobstate.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int terminal;
} states[JOB_NSTATES] = {
    [JOB_QUEUED] = { "queued", 0 },     [JOB_LEASED] = { "leased", 0 }, [JOB_DONE] = { "done", 1 },
    [JOB_FAILED] = { "failed", 1 },     [JOB_CANCELLED] = { "cancelled", 1 },
    [JOB_PAUSED] = { "paused", 0 },     [JOB_PRUNED] = { "pruned", 1 },
};

const char *jobstate_name(job_state s) {
    return (unsigned)s < JOB_NSTATES ? states[s].name : NULL;
}

int jobstate_parse(const char *name, job_state *s) {
    if (!name) return -1;
    for (int i = 0; i < JOB_NSTATES; i++)
        if (!strcmp(name, states[i].name)) {
            *s = (job_state)i;
            return 0;
        }
    return -1;
}

int jobstate_is_terminal(job_state s) {
    return (unsigned)s < JOB_NSTATES && states[s].terminal;
}

int jobstate_is_active(job_state s) {
    return (unsigned)s < JOB_NSTATES && !states[s].terminal;
}

int jobstate_is_halving(job_state s) {
    return s == JOB_PAUSED || s == JOB_PRUNED;
}

static char *join(char *buf, size_t len, const char *quote, const char *sep, const char *last) {
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < JOB_NSTATES && at < len; i++) {
        const char *s = i == 0 ? "" : i == JOB_NSTATES - 1 && last ? last : sep;
        int n = snprintf(buf + at, len - at, "%s%s%s%s", s, quote, states[i].name, quote);
        if (n < 0) break;
        at += (size_t)n;
    }
    return buf;
}

char *jobstate_list(char *buf, size_t len, const char *sep, const char *last) {
    return join(buf, len, "", sep, last);
}

char *jobstate_sql_list(char *buf, size_t len) {
    return join(buf, len, "'", ", ", NULL);
}
