/* store.h — the SQLite sweep store (one file, owned by one process).
 *
 * store_open() opens or creates the database, sets WAL + foreign keys + synchronous=FULL (an acknowledged
 * commit survives a kill -9), a busy timeout, and applies every pending migration (PRAGMA user_version).
 * `prism-sweep serve` then commits with synchronous=NORMAL on its connection and makes each group commit
 * durable itself, off the event loop, before answering (walck.h); every other command keeps FULL.
 * All SQL elsewhere goes through prepared statements on st->db; functions that change several rows wrap
 * them in one transaction (store_begin / store_commit / store_rollback).
 *
 * Errors: functions return 0 on success or a negative STORE_E* code; on failure a message is left in
 * st->err (for store_open, in the caller's errbuf) and the database is unchanged (the transaction rolled back).
 */
#ifndef PRISM_STORE_H
#define PRISM_STORE_H
#include <sqlite3.h>
#include <stddef.h>

enum {
    STORE_OK = 0,
    STORE_EIO = -1,        /* SQLite error (message in err) */
    STORE_ENOTFOUND = -2,  /* no such row */
    STORE_ECONFLICT = -3,  /* a state or token check failed */
    STORE_EINVAL = -4,     /* bad argument */
    STORE_ENEWER = -5,     /* the file has a schema newer than this binary knows */
};

/* The schema version this binary brings a store to: the number of migrations it carries, sql/001_schema.sql,
 * sql/002_halving.sql, ... (tools/embed_sql.sh orders them by their numbers; adding one is adding its file). */
int store_schema_version(void);
#define STORE_SCHEMA_VERSION store_schema_version()

typedef struct store {
    sqlite3 *db;     /* owned; closed by store_close */
    char path[1024];
    char err[512];   /* last error message */
    int immutable;   /* store_open_readonly read it as immutable (read-only media) */
} store;

/* Opens (creating if needed) the database at path and migrates it. On success *out is a new store the
 * caller frees with store_close(). On failure *out is NULL, errbuf holds the reason, returns < 0. */
int store_open(const char *path, store **out, char *errbuf, size_t errlen);
void store_close(store *st);            /* NULL is fine */
/* Opens an existing prism-sweep database read-only, for the read commands: nothing is created or
 * migrated. A file that is not SQLite, has no prism-sweep schema (user_version 0, no sweeps/jobs tables)
 * or an older/newer one is refused (STORE_EINVAL / STORE_ENEWER) with the reason in errbuf; a file that cannot
 * be read is STORE_EIO. On read-only media (a WAL database whose -shm cannot be made) it is read as immutable
 * (`file:PATH?immutable=1`, st->immutable = 1), with a warning on stderr when a -wal file beside it holds writes
 * that are then not seen. */
int store_open_readonly(const char *path, store **out, char *errbuf, size_t errlen);

int store_begin(store *st);             /* BEGIN IMMEDIATE */
int store_commit(store *st);
void store_rollback(store *st);         /* safe to call when no transaction is open */

/* Runs one statement with no result rows (no parameters). */
int store_exec(store *st, const char *sql);

/* Records sqlite's message for rc in st->err and returns STORE_EIO. */
int store_fail(store *st, const char *what);

double store_now(void);                 /* Unix seconds, sub-second precision */
#endif
