/* test_jobstate.c — the job-state vocabulary (common/jobstate.h): every name parses back to its state, the
 * classes are what the state machine says, and the CHECK list of the jobs table a fresh store holds (001_schema.sql
 * widened by 002_halving.sql) is exactly the enum's list, so a state added on one side only fails here. */
#include "harness.h"
#include "jobstate.h"
#include "store.h"

#include <string.h>

TEST(names_parse_back_to_their_state) {
    for (int k = 0; k < JOB_NSTATES; k++) {
        job_state s = JOB_NSTATES;
        const char *n = jobstate_name((job_state)k);
        ASSERT_TRUE(n != NULL);
        ASSERT_EQ_INT(0, jobstate_parse(n, &s));
        ASSERT_EQ_INT(k, (int)s);
    }
    job_state s = JOB_DONE;
    ASSERT_EQ_INT(-1, jobstate_parse("running", &s));
    ASSERT_EQ_INT(-1, jobstate_parse(NULL, &s));
    ASSERT_EQ_INT(JOB_DONE, (int)s);   /* untouched after a failure */
    ASSERT_TRUE(jobstate_name(JOB_NSTATES) == NULL);
    ASSERT_TRUE(jobstate_name((job_state)-1) == NULL);
}

TEST(terminal_and_active_classes) {
    const int terminal[JOB_NSTATES] = { [JOB_DONE] = 1, [JOB_FAILED] = 1, [JOB_CANCELLED] = 1, [JOB_PRUNED] = 1 };
    for (int k = 0; k < JOB_NSTATES; k++) {
        ASSERT_EQ_INT(terminal[k], jobstate_is_terminal((job_state)k));
        ASSERT_EQ_INT(!terminal[k], jobstate_is_active((job_state)k));
    }
    ASSERT_EQ_INT(0, jobstate_is_terminal(JOB_NSTATES));
    ASSERT_EQ_INT(0, jobstate_is_active(JOB_NSTATES));
}

TEST(list_for_messages) {
    char b[128];
    ASSERT_STREQ("queued, leased, done, failed, cancelled, paused or pruned", jobstate_list(b, sizeof b, ", ", " or "));
    ASSERT_STREQ("'queued', 'leased', 'done', 'failed', 'cancelled', 'paused', 'pruned'", jobstate_sql_list(b, sizeof b));
    char small[10];
    jobstate_list(small, sizeof small, ", ", NULL);   /* truncated, terminated */
    ASSERT_EQ_INT(9, (int)strlen(small));
}

TEST(sql_check_equals_the_enum) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/s.db", harness_tmpdir());
    store *st = NULL;
    if (store_open(path, &st, err, sizeof err) != 0) HFAIL("store_open: %s", err);
    sqlite3_stmt *s = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(st->db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'",
                                                -1, &s, NULL));
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(s));
    const char *sql = (const char *)sqlite3_column_text(s, 0);
    const char *at = strstr(sql, "CHECK (state IN (");
    if (!at) HFAIL("no CHECK (state IN (...)) in the jobs table: %s", sql);
    at += strlen("CHECK (state IN (");
    const char *end = strchr(at, ')');
    ASSERT_TRUE(end != NULL);
    char got[256], want[256];
    snprintf(got, sizeof got, "%.*s", (int)(end - at), at);
    ASSERT_STREQ(jobstate_sql_list(want, sizeof want), got);
    sqlite3_finalize(s);
    store_close(st);
}

TEST(halving_states_are_paused_and_pruned) {
    for (int k = 0; k < JOB_NSTATES; k++)
        ASSERT_EQ_INT(k == JOB_PAUSED || k == JOB_PRUNED, jobstate_is_halving((job_state)k));
}
