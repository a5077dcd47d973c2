/* test_fuzz_corpus.c — replays every libFuzzer target's committed corpus (fuzz/corpus/NAME: the seeds and
 * the reproducers of crashes already fixed) through the target's entry point, compiled here with gcc and
 * without libFuzzer, so `make check` exercises each parser's contract checks on those inputs in CI.
 * Each target aborts on a broken contract (failure without a message, a round trip that changes the value,
 * a read past a buffer that happens to corrupt memory); a case also asserts that its corpus holds inputs the
 * parser accepts and inputs it rejects, so the seeds keep covering both paths.
 * timeout: 120
 */
#include "harness.h"
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../../fuzz/fuzz_job.c"
#include "../../fuzz/fuzz_spec.c"
#include "../../fuzz/fuzz_schedule.c"
#include "../../fuzz/fuzz_shard.c"
#include "../../fuzz/fuzz_checkpoint.c"
#include "../../fuzz/fuzz_request.c"
#include "../../fuzz/fuzz_lease.c"
#include "../../fuzz/fuzz_parquet.c"
#include "../../fuzz/fuzz_walscan.c"
#include "../../fuzz/fuzz_extrun.c"
#include "../../fuzz/fuzz_point.c"

/* Runs fn on every regular file of fuzz/corpus/name; counts accepted (fn != 0) and rejected inputs. */
static void replay(const char *name, int (*fn)(const uint8_t *, size_t), int *accepted, int *rejected) {
    const char *root = getenv("PRISM_ROOT");
    char dir[4096], path[8192];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", root && *root ? root : ".", name);
    setenv("TMPDIR", harness_tmpdir(), 1);   /* the file readers' targets write their input there */
    DIR *d = opendir(dir);
    if (!d) HFAIL("cannot open corpus %s", dir);
    struct dirent *e;
    *accepted = *rejected = 0;
    while ((e = readdir(d))) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) || !S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        if (!f) HFAIL("cannot read %s", path);
        uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
        ASSERT_EQ_INT(st.st_size, fread(buf, 1, (size_t)st.st_size, f));
        fclose(f);
        printf("%s\n", path);
        fflush(stdout);
        if (fn(buf, (size_t)st.st_size)) ++*accepted; else ++*rejected;
        free(buf);
    }
    closedir(d);
    printf("%s: %d accepted, %d rejected\n", name, *accepted, *rejected);
}

#define CORPUS_CASE(name) \
    TEST(name##_corpus_keeps_the_parser_contract) { \
        int acc, rej; \
        replay(#name, fuzz_##name##_one, &acc, &rej); \
        ASSERT_GE_INT(acc, 1); \
        ASSERT_GE_INT(rej, 1); \
    }

CORPUS_CASE(job)
CORPUS_CASE(spec)
CORPUS_CASE(schedule)
CORPUS_CASE(shard)
CORPUS_CASE(checkpoint)
CORPUS_CASE(lease)
CORPUS_CASE(parquet)
CORPUS_CASE(walscan)
CORPUS_CASE(extrun)
CORPUS_CASE(point)

/* the HTTP request target answers every input (nothing to accept or reject): it must simply survive */
TEST(request_corpus_is_answered) {
    int acc, rej;
    replay("request", fuzz_request_one, &acc, &rej);
    ASSERT_GE_INT(acc + rej, 10);
}

/* the crash found by fuzz_checkpoint: a training-state file for 240 layers made the reader compare heads past
 * its 256-int header. Completed by the target to its exact size, this well-formed one must be accepted
 * (before the fix, whatever lay past the header made it "mismatch", or ASan stopped it). */
TEST(checkpoint_reproducer_240_layers_is_accepted) {
    const char *root = getenv("PRISM_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz/corpus/checkpoint/crash-state-240-layers-valid-header",
             root && *root ? root : ".");
    struct stat st;
    ASSERT_EQ_INT(0, stat(path, &st));
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc((size_t)st.st_size);
    ASSERT_EQ_INT(st.st_size, fread(buf, 1, (size_t)st.st_size, f));
    fclose(f);
    setenv("TMPDIR", harness_tmpdir(), 1);
    ASSERT_EQ_INT(1, fuzz_checkpoint_one(buf, (size_t)st.st_size));
    free(buf);
}
