/* walck.h — WAL checkpoints off the event loop for `prism-sweep serve`.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses wal_autocheckpoint pages, i.e. on the
 * loop's thread, stalling every client while the database file is written and synced. walck turns it off on
 * the loop's connection and instead, when a COMMIT leaves the WAL at WALCK_PAGES pages or more (sqlite3's WAL
 * hook), runs a PASSIVE checkpoint on a libuv thread-pool thread with a connection of its own. PASSIVE takes
 * no lock that the writer waits for: the loop keeps committing while pages are copied. The WAL starts over
 * only once every frame is copied, so the frames committed meanwhile (at most WALCK_TAIL) are copied by the
 * loop right after a COMMIT: a short, timed stall (loop_max_s) instead of a whole checkpoint. The file then
 * stops growing (journal_size_limit trims it back after a burst). At most one checkpoint runs at a time.
 *
 * PRISM_WAL_CHECKPOINTS=loop in the environment restores SQLite's default (a whole PASSIVE checkpoint inside
 * the COMMIT that reaches 1,000 pages), timed the same way, so a benchmark can compare the two.
 *
 * Lifecycle: walck_init after store_open, on the loop's thread; walck_release after the loop has run dry
 * (no checkpoint in flight) and before store_close (which then checkpoints what is left, as before).
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
    char err[256];              /* last failure */
} walck;

/* Opens the checkpointer's connection to st's file, turns off auto-checkpointing on st and installs the
 * WAL hook. Returns 0, or -1 with a message in err (st is then unchanged). */
int walck_init(walck *w, uv_loop_t *loop, store *st, char *err, size_t errlen);
/* Removes the hook (st auto-checkpoints again) and closes the checkpointer's connection. Call with no
 * checkpoint in flight (after uv_run returned). */
void walck_release(walck *w);
#endif
