/* test_util.c — the shared helpers: the mixer's published values, mkdir -p, and durable whole-file writes
 * that leave either the old file or the new one and never a temporary file. */
#include <malloc.h>
#include "harness.h"
#include "util.h"

#include <errno.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* SplitMix64 from state 0: the reference sequence (Steele, Lea, Flood 2014; Vigna's splitmix64.c). */
TEST(splitmix64_reference_sequence) {
    uint64_t s = 0;
    ASSERT_EQ_INT((long long)0xe220a8397b1dcdafULL, (long long)util_splitmix64(&s));
    ASSERT_EQ_INT((long long)0x6e789e6aa1b965f4ULL, (long long)util_splitmix64(&s));
    ASSERT_EQ_INT((long long)0x06c45d188009454fULL, (long long)util_splitmix64(&s));
    ASSERT_EQ_INT((long long)(3 * 0x9E3779B97F4A7C15ULL), (long long)s);
    ASSERT_EQ_INT((long long)0xe220a8397b1dcdafULL, (long long)util_mix64(0));
}

TEST(mkdir_p_makes_parents_and_accepts_existing) {
    char p[4600];
    snprintf(p, sizeof p, "%s/a/b/c", harness_tmpdir());
    ASSERT_EQ_INT(0, util_mkdir_p(p, 0755));
    struct stat st;
    ASSERT_EQ_INT(0, stat(p, &st));
    ASSERT_TRUE(S_ISDIR(st.st_mode));
    ASSERT_EQ_INT(0, util_mkdir_p(p, 0755));                 /* again: fine */
    char f[4700];
    snprintf(f, sizeof f, "%s/file", p);
    FILE *fp = fopen(f, "w"); fclose(fp);
    char q[4800];
    snprintf(q, sizeof q, "%s/below", f);                  /* a parent that is a file */
    ASSERT_EQ_INT(-1, util_mkdir_p(q, 0755));
    ASSERT_EQ_INT(ENOTDIR, errno);
}

TEST(write_atomic_replaces_whole_and_leaves_no_temporary) {
    const char *dir = harness_tmpdir();
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    util_part parts[2] = {{"hello ", 6}, {"world", 5}};
    ASSERT_EQ_INT(0, util_write_atomic(path, parts, 2, 0600, err, sizeof err));
    ASSERT_STREQ("hello world", slurp(path));
    struct stat st;
    ASSERT_EQ_INT(0, stat(path, &st));
    ASSERT_EQ_INT(0600, st.st_mode & 0777);
    util_part again = {"second", 6};
    ASSERT_EQ_INT(0, util_write_atomic(path, &again, 1, 0600, err, sizeof err));
    ASSERT_STREQ("second", slurp(path));
    ASSERT_EQ_INT(1, count_entries(dir));                   /* only out.bin */
}

TEST(write_atomic_stale_temporary_does_not_keep_its_mode) {
    const char *dir = harness_tmpdir();
    char path[4200], tmp[4300], err[512];
    snprintf(path, sizeof path, "%s/token", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w"); fputs("stale", f); fclose(f);
    chmod(tmp, 0666);
    util_part p = {"secret", 6};
    ASSERT_EQ_INT(0, util_write_atomic(path, &p, 1, 0600, err, sizeof err));
    struct stat st;
    ASSERT_EQ_INT(0, stat(path, &st));
    ASSERT_EQ_INT(0600, st.st_mode & 0777);
    ASSERT_STREQ("secret", slurp(path));
}

TEST(write_atomic_failure_names_step_and_keeps_old_file) {
    const char *dir = harness_tmpdir();
    char path[4200], err[512] = "";
    snprintf(path, sizeof path, "%s/missing-dir/out.bin", dir);
    util_part p = {"x", 1};
    ASSERT_EQ_INT(-1, util_write_atomic(path, &p, 1, 0644, err, sizeof err));
    ASSERT_CONTAINS(err, "missing-dir/out.bin.tmp.");
    ASSERT_CONTAINS(err, "create failed: No such file or directory");
    if (geteuid() == 0) return;                              /* root writes into read-only directories */
    snprintf(path, sizeof path, "%s/kept", dir);
    util_part old = {"old", 3};
    ASSERT_EQ_INT(0, util_write_atomic(path, &old, 1, 0644, err, sizeof err));
    chmod(dir, 0555);
    util_part nw = {"new", 3};
    int rc = util_write_atomic(path, &nw, 1, 0644, err, sizeof err);
    chmod(dir, 0755);
    ASSERT_EQ_INT(-1, rc);
    ASSERT_CONTAINS(err, "create failed: Permission denied");
    ASSERT_STREQ("old", slurp(path));
    ASSERT_EQ_INT(1, count_entries(dir));
}

TEST(commit_file_renames_and_reports_rename_failure) {
    const char *dir = harness_tmpdir();
    char path[4200], tmp[4300], err[512] = "";
    snprintf(path, sizeof path, "%s/result.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    fputs("{}\n", f);
    ASSERT_EQ_INT(0, util_commit_file(f, tmp, path, err, sizeof err));
    ASSERT_STREQ("{}\n", slurp(path));
    ASSERT_EQ_INT(1, count_entries(dir));
    /* renaming over a non-empty directory fails: the temporary file goes, the directory stays */
    snprintf(path, sizeof path, "%s/sub", dir);
    char inner[4300];
    snprintf(inner, sizeof inner, "%s/x", path);
    ASSERT_EQ_INT(0, util_mkdir_p(inner, 0755));
    snprintf(tmp, sizeof tmp, "%s/sub.tmp", dir);
    f = fopen(tmp, "w");
    fputs("data", f);
    ASSERT_EQ_INT(-1, util_commit_file(f, tmp, path, err, sizeof err));
    ASSERT_CONTAINS(err, "rename failed");
    ASSERT_EQ_INT(-1, access(tmp, F_OK));
}

TEST(now_is_monotonic_seconds) {
    double a = util_now_s();
    usleep(20000);
    double b = util_now_s();
    ASSERT_TRUE(b - a >= 0.019);
    ASSERT_LT(b - a, 5.0);
}

/* Small chunks freed now are merged now: none left in fastbins for a later large malloc to walk
 * (malloc_consolidate: 55-147 ms on the server's loop after a 100,000-job leaderboard was freed). */
static size_t fastbin_bytes_after_churn(void) {
    enum { N = 200000 };
    void **p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++) p[i] = malloc(24 + (size_t)(i % 4) * 16);
    for (int i = 0; i < N; i++) free(p[i]);
    free(p);
    return mallinfo2().fsmblks;
}

TEST(malloc_eager_leaves_no_fastbin_chunks) {
    size_t before = fastbin_bytes_after_churn();
    printf("fastbin bytes after freeing 200,000 small chunks: %zu (glibc default)\n", before);
    ASSERT_TRUE(before > 100000);   /* the control: what the allocator leaves by default */
    ASSERT_EQ_INT(0, util_malloc_eager());
    size_t after = fastbin_bytes_after_churn();
    printf("fastbin bytes after util_malloc_eager: %zu\n", after);
    ASSERT_EQ_INT(0, (long long)after);
}
