/* fuzz_tempfile.h — for targets whose parser reads only from a path: the input goes to a fresh temporary
 * file under $TMPDIR (default /tmp). Header-only (static), because tests/unit/test_fuzz_corpus.c includes
 * several targets into one binary. */
#ifndef PRISM_FUZZ_TEMPFILE_H
#define PRISM_FUZZ_TEMPFILE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes data to a new file named "<tmp>/prism-fuzz-<tag>-XXXXXX"; path gets its name (the caller unlinks it).
 * Returns 0, or -1 with nothing left on disk. */
static __attribute__((unused)) int fuzz_write_temp(char *path, size_t len, const char *tag, const uint8_t *data,
                                                   size_t size) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, len, "%s/prism-fuzz-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) { close(fd); unlink(path); return -1; }
        done += (size_t)w;
    }
    close(fd);
    return 0;
}
#endif
