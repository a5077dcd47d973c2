/* test_store.c — the SQLite store opens, migrates once, and refuses what it cannot use; its migrations are the
 * sql/NNN_NAME.sql files in the order of their names. */
#include "harness.h"
#include "store.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int query_int(store *st, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) HFAIL("prepare %s: %s", sql, sqlite3_errmsg(st->db));
    int v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

TEST(open_creates_and_migrates) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    store *st = NULL;
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, query_int(st, "PRAGMA user_version"));
    ASSERT_EQ_INT(1, query_int(st, "PRAGMA foreign_keys"));
    ASSERT_EQ_INT(1, query_int(st, "SELECT count(*) FROM sqlite_master WHERE name='jobs'"));
    store_close(st);
    /* reopening applies nothing twice */
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    ASSERT_EQ_INT(STORE_SCHEMA_VERSION, query_int(st, "PRAGMA user_version"));
    store_close(st);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The schema version is the number of .sql files in sql/, and migration i is the i-th file by name, its prefix
 * NNN_ stripped: a table left in another order (make's wildcard is not sorted everywhere), or a count that is
 * not the files', fails here. */
TEST(migrations_are_the_sql_files_in_name_order) {
    const char *root = getenv("PRISM_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/sql", root && *root ? root : ".");
    DIR *d = opendir(dir);
    if (!d) HFAIL("cannot open %s", dir);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".sql")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    ASSERT_EQ_INT(n, STORE_SCHEMA_VERSION);
    for (int i = 0; i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "%03d_%s.sql", i + 1, prism_sql_migrations[i].name);
        ASSERT_STREQ(names[i], want);
        free(names[i]);
    }
}

TEST(wal_mode_is_on) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    store *st = NULL;
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    sqlite3_stmt *s = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(st->db, "PRAGMA journal_mode", -1, &s, NULL));
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(s));
    ASSERT_STREQ("wal", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    store_close(st);
}

TEST(newer_schema_is_refused) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    store *st = NULL;
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    ASSERT_EQ_INT(0, store_exec(st, "PRAGMA user_version = 99"));
    store_close(st);
    ASSERT_EQ_INT(STORE_ENEWER, store_open(path, &st, err, sizeof err));
    ASSERT_TRUE(st == NULL);
    ASSERT_CONTAINS(err, "schema version 99");
}

TEST(not_a_database_is_refused) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/junk.db", harness_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("this is not sqlite, just text that is long enough to look like a header..........................", f);
    fclose(f);
    store *st = NULL;
    ASSERT_TRUE(store_open(path, &st, err, sizeof err) < 0);
    ASSERT_CONTAINS(err, "junk.db");
}

/* Read commands: a SQLite file of something else is refused and left as it was; a prism-sweep database
 * opens read-only (a write through it fails). */
TEST(readonly_open_refuses_foreign_files) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/other.db", harness_tmpdir());
    sqlite3 *db = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_exec(db, "CREATE TABLE notes (x)", NULL, NULL, NULL));
    sqlite3_close(db);
    store *st = NULL;
    ASSERT_EQ_INT(STORE_EINVAL, store_open_readonly(path, &st, err, sizeof err));
    ASSERT_CONTAINS(err, "is not a prism-sweep database (schema version 0, 0 of its 6 tables)");
    ASSERT_TRUE(st == NULL);
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL);
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(s));
    ASSERT_EQ_INT(1, sqlite3_column_int(s, 0));   /* nothing was added */
    sqlite3_finalize(s);
    sqlite3_close(db);

    snprintf(path, sizeof path, "%s/p.db", harness_tmpdir());
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    store_close(st);
    ASSERT_EQ_INT(0, store_open_readonly(path, &st, err, sizeof err));
    ASSERT_EQ_INT(1, query_int(st, "SELECT count(*) FROM sqlite_master WHERE name = 'jobs'"));
    ASSERT_TRUE(store_exec(st, "DELETE FROM jobs") < 0);
    ASSERT_CONTAINS(st->err, "readonly");
    store_close(st);
}

/* serve and create (store_open) refuse another application's database, as the read commands do, and leave it
 * exactly as it was: no prism-sweep tables added, still in its own journal mode (it used to be adopted: the
 * schema added and the file switched to WAL). An empty file is a new database. */
TEST(foreign_database_is_refused_and_left_unchanged) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/notes.db", harness_tmpdir());
    sqlite3 *db = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_exec(db, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me')", NULL, NULL, NULL));
    sqlite3_close(db);
    store *st = NULL;
    ASSERT_EQ_INT(STORE_EINVAL, store_open(path, &st, err, sizeof err));
    ASSERT_TRUE(st == NULL);
    ASSERT_CONTAINS(err, "notes.db is not a prism-sweep database (schema version 0, 1 objects, 0 of its 6 tables)");
    ASSERT_CONTAINS(err, "nothing was changed");
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    sqlite3_stmt *s = NULL;
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM sqlite_master), (SELECT t FROM notes)", -1, &s, NULL));
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(s));
    ASSERT_EQ_INT(1, sqlite3_column_int(s, 0));
    ASSERT_STREQ("keep me", (const char *)sqlite3_column_text(s, 1));
    sqlite3_finalize(s);
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL));
    ASSERT_EQ_INT(SQLITE_ROW, sqlite3_step(s));
    ASSERT_STREQ("delete", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    /* a user_version without the tables is foreign too; an empty file is new */
    snprintf(path, sizeof path, "%s/v7.db", harness_tmpdir());
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_open(path, &db));
    ASSERT_EQ_INT(SQLITE_OK, sqlite3_exec(db, "PRAGMA user_version = 7; CREATE TABLE jobs (x)", NULL, NULL, NULL));
    sqlite3_close(db);
    ASSERT_EQ_INT(STORE_EINVAL, store_open(path, &st, err, sizeof err));
    ASSERT_CONTAINS(err, "schema version 7, 1 objects, 1 of its 6 tables");
    snprintf(path, sizeof path, "%s/empty.db", harness_tmpdir());
    FILE *f = fopen(path, "w");
    fclose(f);
    ASSERT_EQ_INT(0, store_open(path, &st, err, sizeof err));
    store_close(st);
}
