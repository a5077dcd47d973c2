/* walck.h — WAL checkpoints off the event loop for `prism-sweep serve`, and the durability step of its commits.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses wal_autocheckpoint pages, i.e. on the
 * loop's thread, stalling every client while the database file is written and synced. walck turns it off on
 * the loop's connection and instead, when a COMMIT leaves the WAL at WALCK_PAGES pages or more (sqlite3's WAL
 * hook), runs a PASSIVE checkpoint on a libuv thread-pool thread with a connection of its own. PASSIVE takes
 * no lock that the writer waits for: the loop keeps committing while pages are copied. The WAL starts over
 * only once every frame is copied, so the frames committed meanwhile (at most WALCK_TAIL) are copied by the
 * loop right after a COMMIT (walck_after_commit): a short, timed stall (loop_max_s) instead of a whole
 * checkpoint. The file then stops growing (journal_size_limit trims it back after a burst). At most one
 * checkpoint runs at a time.
 *
 * Durability (walck->durable): the loop's connection commits with synchronous=NORMAL and cache_spill=OFF, so
 * a COMMIT is write()s into the WAL, and walck_sync() — run by the server on a pool thread after each COMMIT,
 * before any answer of that batch is written — makes it durable (fdatasync of the WAL, fsync of the database
 * file after a checkpoint on the loop). The ordering argument is in walck.c.
 *
 * PRISM_WAL_CHECKPOINTS=loop in the environment restores SQLite's default (a whole PASSIVE checkpoint inside
 * the COMMIT that reaches 1,000 pages), timed the same way, so a benchmark can compare the two.
 * PRISM_SYNC=commit keeps synchronous=FULL on the loop's connection (every COMMIT syncs on the loop, the
 * server writes answers right after it): the previous behaviour, for comparison.
 *
 * Lifecycle: walck_init after store_open, on the loop's thread; walck_release after the loop has run dry
 * (no checkpoint or sync in flight) and before store_close (which then checkpoints what is left, as before).
 */
#ifndef PRISM_WALCK_H
#define PRISM_WALCK_H
#include <sqlite3.h>
#include <uv.h>

#include "store.h"

#define WALCK_PAGES 4000                       /* pages (16 MiB at 4 KiB) before a pool checkpoint starts */
#define WALCK_TAIL 256                         /* frames the loop copies itself to let the WAL start over */
#define WALCK_HARD 16000                       /* pages (62.5 MiB at 4 KiB): checkpoint on the loop regardless */
#define WALCK_SIZE_LIMIT (64LL * 1024 * 1024)   /* journal_size_limit: the WAL file after a reset */

typedef struct walck {
    uv_loop_t *loop;
    store *st;                  /* borrowed: the loop's connection */
    sqlite3 *db;                /* owned: the checkpointer's connection, used only on a pool thread */
    uv_work_t work;
    int busy;                   /* a checkpoint is queued or running */
    int rc;                     /* last checkpoint's sqlite3 code (set on the pool thread) */
    int log_frames, done_frames;
    double t_queued, run_s;
    /* figures (loop thread) */
    unsigned long long checkpoints, failures;
    double max_s;               /* longest checkpoint, on its own thread (the loop does not wait for it) */
    int copied_upto;            /* the last pool checkpoint copied every frame up to this one (0: none/partial) */
    unsigned long long loop_checkpoints;   /* tails (or full checkpoints) run on the loop */
    double loop_max_s;          /* the longest of them: the loop's checkpoint stall */
    double loop_sum_s;
    int on_loop_only;           /* PRISM_WAL_CHECKPOINTS=loop: SQLite's default (every 1,000 pages, in the COMMIT) */
    int wal_pages_max;          /* largest WAL seen after a COMMIT, in pages */
    unsigned long long frame_commits;   /* COMMITs of the loop's connection that wrote frames (the hook's calls) */
    char err[256];              /* last failure */
    /* durability (see walck.c) */
    int durable;                /* 1: the loop commits with synchronous=NORMAL and walck_sync makes it durable */
    int tail_due;               /* the WAL hook found a checkpoint for the loop to run: walck_after_commit runs it */
    int db_dirty;               /* a checkpoint on the loop wrote the database file: the next walck_sync fsyncs it */
    int sync_db;                /* db_dirty as taken by walck_after_commit for the sync that follows */
    int wal_fd, db_fd;          /* our own descriptors on DB-wal and DB (-1 when closed) */
    sqlite3 *hold;              /* owned, loop thread: a read transaction from a tail copy until its sync is done */
    int holding;
    char wal_path[1100];
    char sync_err[320];         /* why the last walck_sync / walck_after_commit failed */
} walck;

/* Opens the checkpointer's connection to st's file, turns off auto-checkpointing on st and installs the
 * WAL hook. Returns 0, or -1 with a message in err (st is then unchanged). */
int walck_init(walck *w, uv_loop_t *loop, store *st, char *err, size_t errlen);
/* Removes the hook (st auto-checkpoints again, synchronous=FULL again) and closes the checkpointer's
 * connection and descriptors. Call with no checkpoint or sync in flight (after uv_run returned). */
void walck_release(walck *w);

/* Loop thread, right after a COMMIT of the loop's connection succeeded and before its sync is queued: runs a
 * checkpoint the WAL hook found due (on the loop's connection: the WAL synced first, then write()s only) and
 * takes the sync's plan (walck_sync fsyncs the database file when that checkpoint wrote it). Returns 0, or -1
 * with sync_err set (a failed fdatasync: nothing of the batch may be acknowledged). */
int walck_after_commit(walck *w);
/* Loop thread, right before the loop's connection COMMITs (its previous sync completed): ends the read
 * transaction walck_after_commit held so that no writer restarted the WAL before the database file's fsync. */
void walck_before_commit(walck *w);
/* Any thread (the server runs it on a pool thread, at most one at a time, with no COMMIT meanwhile): makes
 * every COMMIT so far durable — fdatasync of DB-wal (reopened when its inode changed), and fsync of DB when
 * walck_after_commit said so. Returns 0, or -1 with sync_err set. */
int walck_sync(walck *w);
#endif
