/* walscan.c — reads a SQLite WAL file and finds committed frames its recovery would drop (format: sqlite.org
 * "Database File Format", section "The Write-Ahead Log").
 *
 * Design: the 32-byte header (magic 0x377f0682/3 — its low bit says whether the checksums are computed over
 * big-endian words — version, page size, checkpoint sequence, two salts, a checksum of the first 24 bytes),
 * then frames of a 24-byte header (page number, database size after a commit or 0, the two salts, the
 * running checksum) and one page. The checksum runs over every frame in order, seeded by the header's; a frame
 * is valid when its salts are the header's and the running checksum matches. SQLite keeps the frames up to the
 * last valid commit frame. After the first frame that breaks the chain, the frames that still carry this
 * generation's salts belong to transactions written after it; the commit frames among them were committed
 * (acknowledged) transactions that recovery would drop. A frame whose salts are not the header's ends the WAL
 * only if no frame of this generation follows it (after a restart the older generation's frames come last, never
 * before the current one's): a flipped salt byte is a break like a flipped page byte. A header whose checksum does
 * not match makes SQLite ignore the whole WAL; when the frames' own chain verifies from the stored checksum, or from
 * the header recomputed with the first frame's salts (a flipped sequence, salt or checksum byte), every commit in it
 * is lost. The WAL is the one SQLite opens: beside the database's resolved path (a symlinked path included).
 * The file is read in 1 MiB pieces: a WAL may be large.
 */
#include "walscan.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* SQLite's WAL checksum over n bytes (a multiple of 8), continuing s[0], s[1]. */
static void wal_sum(int big, const unsigned char *p, size_t n, uint32_t s[2]) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint32_t a, b;
        if (big) { a = be32(p + i); b = be32(p + i + 4); }
        else { memcpy(&a, p + i, 4); memcpy(&b, p + i + 4, 4); }   /* (x86-64: little-endian words) */
        s[0] += a + s[1];
        s[1] += b + s[0];
    }
}

/* A header whose checksum fails: the chain the frames carry, from either seed, with the first frame's salts. Counts
 * its commits into out (all lost: SQLite ignores the WAL). Rewinds f to the first frame. */
static void header_lost(FILE *f, const unsigned char *h0, int big, int page, unsigned char *frame, walscan_result *out) {
    size_t fsz = 24 + (size_t)page;
    if (fseek(f, 0, SEEK_END) == 0) {   /* whole frames in the file, as the normal scan counts them */
        long end = ftell(f);
        out->frames = end > 32 ? (long long)((size_t)(end - 32) / fsz) : 0;
    }
    if (fseek(f, 32, SEEK_SET) != 0 || fread(frame, 1, fsz, f) != fsz) return;
    unsigned char h[32];
    memcpy(h, h0, 32);
    memcpy(h + 16, frame + 8, 8);   /* the generation's salts, as its frames carry them */
    uint32_t seeds[2][2] = { { be32(h + 24), be32(h + 28) }, { 0, 0 } };
    wal_sum(big, h, 24, seeds[1]);
    for (int k = 0; k < 2; k++) {
        uint32_t s[2] = { seeds[k][0], seeds[k][1] };
        long long frames = 0, commits = 0, cframes = 0;
        if (fseek(f, 32, SEEK_SET) != 0) return;
        while (fread(frame, 1, fsz, f) == fsz) {
            if (memcmp(frame + 8, h + 16, 8) != 0) break;
            uint32_t t[2] = { s[0], s[1] };
            wal_sum(big, frame, 8, t);
            wal_sum(big, frame + 24, (size_t)page, t);
            if (t[0] != be32(frame + 16) || t[1] != be32(frame + 20)) break;
            s[0] = t[0]; s[1] = t[1];
            frames++;
            if (be32(frame + 4) != 0) { commits++; cframes = frames; }
        }
        if (commits > 0) {
            out->header_damaged = 1;
            out->lost_commits = commits;
            out->lost_frames = cframes;
            return;
        }
    }
}

int walscan_check(const char *db_path, walscan_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char path[4200], real[4096];
    /* SQLite resolves the database's symlinks and keeps the WAL beside the file itself */
    snprintf(path, sizeof path, "%s-wal", realpath(db_path, real) ? real : db_path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char h[32];
    int rc = 0;
    unsigned char *frame = NULL;
    size_t got = fread(h, 1, sizeof h, f);
    if (got == 0) goto out;
    out->exists = 1;
    uint32_t magic = got == 32 ? be32(h) : 0;
    int page = got == 32 ? (int)be32(h + 8) : 0;
    if ((magic & 0xFFFFFFFEu) != 0x377f0682u || page < 512 || page > 65536 || (page & (page - 1))) {
        out->bad_header = 1;
        goto out;
    }
    int big = magic & 1;
    uint32_t s[2] = {0, 0};
    wal_sum(big, h, 24, s);
    out->page_size = page;
    size_t fsz = 24 + (size_t)page;
    if (!(frame = malloc(fsz))) { snprintf(err, errlen, "%s: out of memory", path); rc = -1; goto out; }
    if (s[0] != be32(h + 24) || s[1] != be32(h + 28)) {
        out->bad_header = 1;
        header_lost(f, h, big, page, frame, out);
        goto out;
    }
    int broken = 0;
    for (long long k = 1; fread(frame, 1, fsz, f) == fsz; k++) {
        out->frames++;
        int salts = memcmp(frame + 8, h + 16, 8) == 0;
        int commit = be32(frame + 4) != 0;
        if (!broken) {
            uint32_t t[2] = { s[0], s[1] };
            wal_sum(big, frame, 8, t);
            wal_sum(big, frame + 24, (size_t)page, t);
            if (salts && t[0] == be32(frame + 16) && t[1] == be32(frame + 20)) {
                s[0] = t[0]; s[1] = t[1];
                if (commit) { out->valid_frames = k; out->valid_commits++; }
                continue;
            }
            if (!salts) {   /* an older generation's frames end the WAL, unless this generation's follow */
                broken = 1;
                out->first_bad = k;
                continue;
            }
            broken = 1;
            out->first_bad = k;
            out->lost_frames++;
            continue;   /* the broken frame itself may be a torn last write: only later commits count */
        }
        if (salts) {
            out->lost_frames++;
            if (commit) out->lost_commits++;
        }
    }
    if (ferror(f)) { snprintf(err, errlen, "%s: read failed: %s", path, strerror(errno)); rc = -1; }
out:
    free(frame);
    fclose(f);
    return rc;
}
