/* store.c — opening the SQLite store and keeping its schema current.
 *
 * Design: the schema lives in sql/NNN_NAME.sql, the migrations in the order of their numbers, compiled into the
 * binary (tools/embed_sql.sh, which also makes their ordered table), so a binary always carries the migrations it
 * expects and adding one is adding its file. PRAGMA user_version counts applied migrations; each
 * migration runs in its own transaction together with the version bump, so a crash mid-migration leaves
 * the previous version intact. journal_mode=WAL lets readers (the CLI, `sqlite3`) look while the
 * orchestrator writes; synchronous=FULL makes every COMMIT durable before we answer anyone.
 *
 * Cost accounting (store_cost_now): a SQLITE_TRACE_PROFILE callback, which SQLite calls once per statement run
 * when it finishes or is reset, adds the run's VM steps to st->vm_steps and zeroes the statement's counter, so
 * every statement on the connection is counted once, whichever module prepared it.
 */
#define _GNU_SOURCE   /* F_OFD_GETLK */
#include "store.h"
#include "jobmodel.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* The migrations, in order (store.h's prism_sql_migrations[]): migration i (1-based) brings user_version from i-1
 * to i. They run with foreign_keys OFF (a table rebuild must not cascade its DROP into the tables that reference
 * it); it is back ON when they are done. */
extern const int prism_sql_migration_count;

#define N_MIGRATIONS prism_sql_migration_count

int store_schema_version(void) { return N_MIGRATIONS; }

/* The C half of sql/004_job_sizes.sql: every existing job's steps (where still 0) and tokens_per_step by the job model
 * (common/jobmodel.h) from the job JSON it stores, the same numbers sweeps.c writes at create. A row whose
 * JSON is not a valid job (none that prism-sweep made) keeps its 0s. Runs inside the migration's transaction. */
static int fill_job_sizes(store *st) {
    sqlite3_stmt *sel = NULL, *upd = NULL;
    int rc = STORE_OK, step;
    if (sqlite3_prepare_v2(st->db, "SELECT id, job FROM jobs ORDER BY id", -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(st->db, "UPDATE jobs SET steps = CASE WHEN steps = 0 THEN ?2 ELSE steps END, "
                           "tokens_per_step = ?3 WHERE id = ?1", -1, &upd, NULL) != SQLITE_OK) {
        rc = store_fail(st, "job sizes");
        goto out;
    }
    while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
        job_sizes z;
        char why[256];
        if (jobmodel_sizes_text((const char *)sqlite3_column_text(sel, 1), &z, why, sizeof why) < 0) continue;
        sqlite3_reset(upd);
        sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
        sqlite3_bind_int64(upd, 2, z.steps);
        sqlite3_bind_int64(upd, 3, z.tokens_per_step);
        if (sqlite3_step(upd) != SQLITE_DONE) { rc = store_fail(st, "job sizes"); goto out; }
    }
    if (step != SQLITE_DONE) rc = store_fail(st, "job sizes");
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return rc;
}

/* The C halves: run after the named migration's SQL, in the same transaction. */
static const struct { const char *migration; int (*fill)(store *); } migration_fills[] = {
    { "job_sizes", fill_job_sizes },
};

#define N_FILLS (sizeof migration_fills / sizeof migration_fills[0])

/* The index of the migration called name (sql/NNN_name.sql), or -1. */
static int migration_index(const char *name) {
    for (int i = 0; i < N_MIGRATIONS; i++)
        if (!strcmp(prism_sql_migrations[i].name, name)) return i;
    return -1;
}

/* Migration i's C half, or NULL when it has none. */
static int (*migration_fill(int i))(store *) {
    for (size_t k = 0; k < N_FILLS; k++)
        if (migration_index(migration_fills[k].migration) == i) return migration_fills[k].fill;
    return NULL;
}

/* Every C half names a migration this binary carries (a renamed sql file must not drop its fill silently). */
static int fills_named(store *st) {
    for (size_t k = 0; k < N_FILLS; k++)
        if (migration_index(migration_fills[k].migration) < 0) {
            snprintf(st->err, sizeof st->err, "store.c: migration_fills names \"%s\", which no sql/NNN_*.sql is: "
                     "rename the entry after its migration", migration_fills[k].migration);
            return STORE_EIO;
        }
    return STORE_OK;
}

double store_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

int store_fail(store *st, const char *what) {
    snprintf(st->err, sizeof st->err, "%s: %s", what, sqlite3_errmsg(st->db));
    return STORE_EIO;
}

int store_exec(store *st, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(st->err, sizeof st->err, "%s", msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return STORE_EIO;
    }
    return STORE_OK;
}

/* SQLITE_TRACE_PROFILE: statement p finished (or was reset): its VM steps since the last reading. */
static int cost_trace(unsigned kind, void *ud, void *p, void *x) {
    if (kind == SQLITE_TRACE_PROFILE) ((store *)ud)->vm_steps += (unsigned)sqlite3_stmt_status(p, SQLITE_STMTSTATUS_VM_STEP, 1);
    return 0;
}

store_cost store_cost_now(const store *st) {
    store_cost c = { st->vm_steps, (unsigned long long)sqlite3_total_changes64(st->db) };
    return c;
}

int store_begin(store *st) { return store_exec(st, "BEGIN IMMEDIATE"); }
int store_commit(store *st) { return store_exec(st, "COMMIT"); }
void store_rollback(store *st) {
    if (!sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

static int user_version(store *st, int *v) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK) return store_fail(st, "user_version");
    int rc = sqlite3_step(s);
    *v = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? STORE_OK : store_fail(st, "user_version");
}

static int migrate(store *st) {
    int v, rc;
    if ((rc = fills_named(st)) < 0 || (rc = user_version(st, &v)) < 0) return rc;
    if (v > N_MIGRATIONS) {
        snprintf(st->err, sizeof st->err, "%.400s has schema version %d but this binary knows only up to %d: "
                 "use a newer prism-sweep", st->path, v, N_MIGRATIONS);
        return STORE_ENEWER;
    }
    if (v < N_MIGRATIONS && (rc = store_exec(st, "PRAGMA foreign_keys=OFF")) < 0) return rc;
    for (int i = v; i < N_MIGRATIONS; i++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", i + 1);
        if ((rc = store_begin(st)) < 0) return rc;
        int (*fill)(store *) = migration_fill(i);
        if ((rc = store_exec(st, prism_sql_migrations[i].sql)) < 0 || (fill && (rc = fill(st)) < 0) ||
            (rc = store_exec(st, bump)) < 0) {
            char why[400];
            snprintf(why, sizeof why, "%.399s", st->err);
            store_rollback(st);
            snprintf(st->err, sizeof st->err, "migration %d failed: %.400s", i + 1, why);
            return rc;
        }
        if ((rc = store_commit(st)) < 0) return rc;
    }
    return store_exec(st, "PRAGMA foreign_keys=ON");
}

/* Counts sqlite_master's objects: all of them, and the six tables every prism-sweep schema has. */
static int schema_objects(store *st, int *all, int *ours) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, "SELECT count(*), coalesce(sum(type = 'table' AND name IN ('sweeps', 'schedules', "
                           "'jobs', 'metrics', 'results', 'workers')), 0) FROM sqlite_master", -1, &s, NULL) != SQLITE_OK)
        return store_fail(st, "read the schema");
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) { *all = sqlite3_column_int(s, 0); *ours = sqlite3_column_int(s, 1); }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? STORE_OK : store_fail(st, "read the schema");
}

/* A write open adopts a new (empty) file or a prism-sweep database; another application's database is left
 * exactly as it was (no schema added, no WAL switch), as the read commands refuse it. */
static int refuse_foreign(store *st) {
    int v = 0, all = 0, ours = 0, rc;
    if ((rc = user_version(st, &v)) < 0 || (rc = schema_objects(st, &all, &ours)) < 0) {
        char why[300];
        snprintf(why, sizeof why, "%.299s", st->err);
        snprintf(st->err, sizeof st->err, "cannot use %.150s as a prism-sweep database: %.290s", st->path, why);
        return rc;
    }
    if (all == 0 && v == 0) return STORE_OK;   /* new */
    if (v >= 1 && ours == 6) return STORE_OK;   /* ours (newer versions are refused by migrate) */
    snprintf(st->err, sizeof st->err, "%.300s is not a prism-sweep database (schema version %d, %d objects, %d of its 6 "
             "tables): nothing was changed; give a new path or the --db that prism-sweep create or serve made", st->path,
             v, all, ours);
    return STORE_EINVAL;
}

int store_open(const char *path, store **out, char *errbuf, size_t errlen) {
    int rc = STORE_EIO;
    *out = NULL;
    store *st = calloc(1, sizeof *st);
    if (!st) { snprintf(errbuf, errlen, "out of memory"); return STORE_EIO; }
    snprintf(st->path, sizeof st->path, "%s", path);
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL)
        != SQLITE_OK) {
        char dir[sizeof st->path];   /* the common cause, named: the database's folder is not there */
        struct stat sb;
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) *slash = 0;
        if (slash && slash != dir && stat(dir, &sb) != 0)
            snprintf(st->err, sizeof st->err, "cannot open %.140s: its folder %.140s does not exist (create it first: "
                     "mkdir -p %.140s)", path, dir, dir);
        else
            snprintf(st->err, sizeof st->err, "cannot open %s: %s", path, st->db ? sqlite3_errmsg(st->db) : "no memory");
        goto out;
    }
    sqlite3_busy_timeout(st->db, 5000);
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_trace_v2(st->db, SQLITE_TRACE_PROFILE, cost_trace, st);
    if ((rc = refuse_foreign(st)) < 0) goto out;   /* before anything is changed (WAL mode is a change) */
    if ((rc = store_exec(st, "PRAGMA journal_mode=WAL")) < 0 ||
        (rc = store_exec(st, "PRAGMA synchronous=FULL")) < 0 ||
        (rc = store_exec(st, "PRAGMA foreign_keys=ON")) < 0) {
        char why[256];
        snprintf(why, sizeof why, "%.255s", st->err);
        snprintf(st->err, sizeof st->err, "cannot use %.200s as a prism-sweep database: %.250s", path, why);
        goto out;
    }
    if ((rc = migrate(st)) < 0) goto out;
    *out = st;
    st = NULL;
    rc = STORE_OK;
out:
    if (st) {
        snprintf(errbuf, errlen, "%s", st->err);
        store_close(st);
    }
    return rc;
}

/* Opens path read-only; immutable: as `file:PATH?immutable=1` (no locks, no -shm: read-only media). Returns the
 * SQLite code of the open and of a first read (PRAGMA user_version into *v). */
static int store_open_ro(store *st, const char *path, int immutable, int *v) {
    if (st->db) { sqlite3_close_v2(st->db); st->db = NULL; }
    char uri[2200];
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX;
    if (immutable) {
        /* a URI: the path percent-encoded where it must be (%, ?, #), "immutable=1" */
        size_t k = (size_t)snprintf(uri, sizeof uri, "file:");
        for (const char *p = path; *p && k + 4 < sizeof uri - 16; p++) {
            if (*p == '%' || *p == '?' || *p == '#') k += (size_t)snprintf(uri + k, sizeof uri - k, "%%%02X", (unsigned char)*p);
            else uri[k++] = *p;
        }
        snprintf(uri + k, sizeof uri - k, "?immutable=1");
        flags |= SQLITE_OPEN_URI;
    }
    int rc = sqlite3_open_v2(immutable ? uri : path, &st->db, flags, NULL);
    if (rc != SQLITE_OK) return rc;
    sqlite3_busy_timeout(st->db, 5000);
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) { *v = sqlite3_column_int(s, 0); rc = SQLITE_OK; }
    sqlite3_finalize(s);
    return rc;
}

int store_open_readonly(const char *path, store **out, char *errbuf, size_t errlen) {
    int rc = STORE_EIO;
    *out = NULL;
    store *st = calloc(1, sizeof *st);
    if (!st) { snprintf(errbuf, errlen, "out of memory"); return STORE_EIO; }
    snprintf(st->path, sizeof st->path, "%s", path);
    int v = 0, src = store_open_ro(st, path, 0, &v);
    if ((src & 0xff) == SQLITE_CANTOPEN || (src & 0xff) == SQLITE_READONLY || (src & 0xff) == SQLITE_IOERR) {
        /* a WAL database on read-only media (or in a folder this user cannot write): no -shm can be made, so
         * read it as immutable; what a -wal file beside it holds is then not seen, say so */
        char wal[1100];
        struct stat sb;
        snprintf(wal, sizeof wal, "%s-wal", path);
        int isrc = store_open_ro(st, path, 1, &v);
        if (isrc == SQLITE_OK) {
            src = isrc;
            st->immutable = 1;
            if (stat(wal, &sb) == 0 && sb.st_size > 0)
                fprintf(stderr, "prism-sweep: warning: %s is read as immutable (its folder is read-only) and the "
                        "%lld bytes of %s are not seen: copy the database with its -wal and -shm files to a writable "
                        "folder, or checkpoint it where it was written, to read the latest writes\n", path,
                        (long long)sb.st_size, wal);
        }
    }
    if (src != SQLITE_OK && !st->db) {
        snprintf(st->err, sizeof st->err, "cannot open %.400s: %s", path, sqlite3_errstr(src));
        goto out;
    }
    if (src != SQLITE_OK) {
        rc = STORE_EIO;
        snprintf(st->err, sizeof st->err, "cannot read %.150s as a prism-sweep database: %.290s", path,
                 sqlite3_errmsg(st->db));
        if ((src & 0xff) == SQLITE_NOTADB) rc = STORE_EINVAL;
        goto out;
    }
    if (v > N_MIGRATIONS) {
        snprintf(st->err, sizeof st->err, "%.400s has schema version %d but this binary knows only up to %d: "
                 "use a newer prism-sweep", path, v, N_MIGRATIONS);
        rc = STORE_ENEWER;
        goto out;
    }
    sqlite3_stmt *s = NULL;
    int tables = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                           "('sweeps', 'schedules', 'jobs', 'metrics', 'results', 'workers')", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        tables = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (v >= 1 && v < N_MIGRATIONS && tables == 6) {   /* made by an older prism-sweep: migrated by a write open */
        snprintf(st->err, sizeof st->err, "%.300s has schema version %d, older than this binary's %d: nothing was changed; "
                 "open it once with prism-sweep serve or create (they migrate it), then run this again", path, v, N_MIGRATIONS);
        rc = STORE_EINVAL;
        goto out;
    }
    if (v < N_MIGRATIONS || tables < 6) {
        snprintf(st->err, sizeof st->err, "%.300s is not a prism-sweep database (schema version %d, %d of its 6 tables): "
                 "nothing was changed; give the --db that prism-sweep create or serve made", path, v, tables);
        rc = STORE_EINVAL;
        goto out;
    }
    *out = st;
    st = NULL;
    rc = STORE_OK;
out:
    if (st) {
        snprintf(errbuf, errlen, "%s", st->err);
        store_close(st);
    }
    return rc;
}

void store_close(store *st) {
    if (!st) return;
    if (st->db) sqlite3_close_v2(st->db);
    free(st);
}

/* ---- served under another name ---------------------------------------------------------------------- */

/* PATH.lock is flock-held (by a server: it holds LOCK_EX while serving) */
static int lock_file_held(const char *db) {
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s.lock", db);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);   /* releases a shared lock we got */
    return held;
}

int store_served_elsewhere(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = STORE_SERVE_LOCK_BYTE, .l_len = 1 };
    int served = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    if (!served) return 0;
    char real[PATH_MAX];
    if (lock_file_held(path) || (realpath(path, real) && lock_file_held(real))) return 0;
    snprintf(err, errlen, "%s is being served by prism-sweep serve under another name (a hard link, a bind mount or "
             "another path to the same file): SQLite keeps one WAL per name, so what this writes would never reach the "
             "server. Give --db the path the server was started with", path);
    return 1;
}
