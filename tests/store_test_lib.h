/* store_test_lib.h — what the unit tests on a real SQLite store share (test_jobmodel.c, test_queue.c,
 * test_halving.c, test_spec.c): qv(st, sql), the first column of the first row of sql as an integer (-1 when
 * there is no row), failing the case (HFAIL) when sql does not prepare. Include once, after harness.h and
 * store.h. With PRISM_TEST_CHECK_COUNTERS defined before it (and sweeps.h included), every store_close(st) of the
 * file first checks the per-sweep counters against the jobs (sweeps_counts_verify), failing the case when they
 * differ: every state change the file's cases make is also a check of sql/010_sweep_counts.sql's triggers. */
#ifndef PRISM_STORE_TEST_LIB_H
#define PRISM_STORE_TEST_LIB_H

static long long qv(store *st, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) HFAIL("prepare %s: %s", sql, sqlite3_errmsg(st->db));
    long long v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

#ifdef PRISM_TEST_CHECK_COUNTERS
static void counters_checked_close(store *st) {
    char err[512];
    if (st && sweeps_counts_verify(st, err, sizeof err) != 0) HFAIL("per-sweep counters: %s", err);
    (store_close)(st);
}
#define store_close(st) counters_checked_close(st)
#endif
#endif
