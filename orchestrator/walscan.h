/* walscan.h — before `prism-sweep serve` opens its database: does the WAL end in frames SQLite will throw away
 * although they were committed (a flipped byte on the disk)? SQLite's recovery keeps the frames up to the last
 * commit whose checksum chain holds and drops the rest silently: one flipped byte dropped 7,100 acknowledged
 * points and the server started healthy.
 *
 * Contract:
 * - walscan_check(db_path, out, err, errlen) reads DB-wal (no SQLite involved, nothing written). Returns 0 with
 *   *out filled (out->exists = 0 when there is no WAL or it is empty), or -1 with err naming the file and why it
 *   cannot be read (a WAL that is not one at all is not an error: SQLite ignores it; out->bad_header = 1).
 *   out->lost_commits > 0 means committed transactions follow the first frame that breaks the checksum chain:
 *   SQLite would drop them. Frames of an older WAL generation (other salts) and an uncommitted tail (a crash in
 *   the middle of a transaction) are not losses. A damaged header over frames that verify (header_damaged) loses
 *   every commit in them. The WAL read is the resolved database path's (DB through a symlink included).
 */
#ifndef PRISM_WALSCAN_H
#define PRISM_WALSCAN_H
#include <stddef.h>

typedef struct walscan_result {
    int exists, bad_header;
    int header_damaged;       /* the header's checksum fails but its frames' chain holds: SQLite drops them all
                                 (lost_commits of them committed; first_bad 0) */
    long long frames;         /* whole frames in the file */
    long long valid_frames;   /* frames up to the last commit whose checksum chain holds (what SQLite keeps) */
    long long valid_commits;
    long long first_bad;      /* 1-based frame that breaks the chain (0: none) */
    long long lost_frames;    /* frames of this WAL generation after first_bad */
    long long lost_commits;   /* commit frames after first_bad: committed transactions SQLite would drop */
    int page_size;
} walscan_result;

int walscan_check(const char *db_path, walscan_result *out, char *err, size_t errlen);
#endif
