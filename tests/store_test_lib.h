/* store_test_lib.h — what the unit tests on a real SQLite store share (test_jobmodel.c, test_queue.c,
 * test_halving.c, test_spec.c): qv(st, sql), the first column of the first row of sql as an integer (-1 when
 * there is no row), failing the case (HFAIL) when sql does not prepare. Include once, after harness.h and
 * store.h. */
#ifndef PRISM_STORE_TEST_LIB_H
#define PRISM_STORE_TEST_LIB_H

static long long qv(store *st, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) HFAIL("prepare %s: %s", sql, sqlite3_errmsg(st->db));
    long long v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}
#endif
