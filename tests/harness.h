/* tests/harness.h — the unit-test harness: one binary per feature, each case run in its own process.
 *
 * A test file defines cases with TEST(name) { ... } and includes this header once. The binary:
 *   test_x --list      prints one case name per line
 *   test_x NAME        runs that case: exit 0 = pass, 77 = skipped (SKIP("why")), anything else = fail
 * tests/run.sh runs every case of every binary in its own process under a timeout and prints the totals.
 * Assertions print both sides (expected vs actual) with file:line and abort the case at once.
 * Helpers: harness_bin("prism-sweep") is the path of a built program ($PRISM_BUILD, default build/);
 * harness_tmpdir() makes a fresh directory removed by run.sh; harness_run() runs a shell command and
 * captures stdout+stderr into a malloc'd string (caller frees) and returns the exit status (or -1).
 */
#ifndef PRISM_TEST_HARNESS_H
#define PRISM_TEST_HARNESS_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*harness_fn)(void);
static struct { const char *name; harness_fn fn; } harness_cases[512];
static __attribute__((unused)) int harness_ncases;

static __attribute__((unused)) void harness_register(const char *name, harness_fn fn) {
    if (harness_ncases < 512) { harness_cases[harness_ncases].name = name; harness_cases[harness_ncases].fn = fn; harness_ncases++; }
}

#define TEST(name) \
    static void test_##name(void); \
    __attribute__((constructor)) static void harness_reg_##name(void) { harness_register(#name, test_##name); } \
    static void test_##name(void)

#define HFAIL(...) do { fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
                        fprintf(stderr, "\n"); fflush(NULL); exit(1); } while (0)
#define SKIP(...) do { printf("skipped: "); printf(__VA_ARGS__); printf("\n"); fflush(NULL); exit(77); } while (0)

#define ASSERT_TRUE(c) do { if (!(c)) HFAIL("assertion failed: %s", #c); } while (0)
#define ASSERT_EQ_INT(exp, act) do { long long e_ = (long long)(exp), a_ = (long long)(act); \
    if (e_ != a_) HFAIL("%s == %s: expected %lld, got %lld", #exp, #act, e_, a_); } while (0)
#define ASSERT_NE_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) HFAIL("%s != %s: both are %lld", #a, #b, a_); } while (0)
#define ASSERT_GE_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (!(a_ >= b_)) HFAIL("%s >= %s: %lld < %lld", #a, #b, a_, b_); } while (0)
#define ASSERT_STREQ(exp, act) do { const char *e_ = (exp), *a_ = (act); \
    if (!e_ || !a_ || strcmp(e_, a_) != 0) HFAIL("%s == %s: expected \"%s\", got \"%s\"", #exp, #act, \
        e_ ? e_ : "(null)", a_ ? a_ : "(null)"); } while (0)
#define ASSERT_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    if (!h_ || !strstr(h_, n_)) HFAIL("expected \"%s\" in: %s", n_, h_ ? h_ : "(null)"); } while (0)
#define ASSERT_NEAR(exp, act, tol) do { double e_ = (double)(exp), a_ = (double)(act), t_ = (double)(tol); \
    if (!(fabs(e_ - a_) <= t_)) HFAIL("%s ~ %s: expected %.9g, got %.9g (|diff| %.3g > tol %.3g)", #exp, #act, \
        e_, a_, fabs(e_ - a_), t_); } while (0)
#define ASSERT_LT(a, b) do { double a_ = (double)(a), b_ = (double)(b); \
    if (!(a_ < b_)) HFAIL("%s < %s: %.9g is not < %.9g", #a, #b, a_, b_); } while (0)

static __attribute__((unused)) const char *harness_build_dir(void) {
    const char *b = getenv("PRISM_BUILD");
    return b && *b ? b : "build";
}

/* Path of a built program; static buffer, valid until the next call. */
static __attribute__((unused)) const char *harness_bin(const char *prog) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", harness_build_dir(), prog);
    return buf;
}

/* A fresh directory under $PRISM_TEST_TMP (run.sh removes it); static buffer. */
static __attribute__((unused)) const char *harness_tmpdir(void) {
    static char buf[4096];
    const char *base = getenv("PRISM_TEST_TMP");
    snprintf(buf, sizeof buf, "%s/prism-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf)) HFAIL("mkdtemp(%s) failed", buf);
    return buf;
}

/* Runs `cmd` through /bin/sh with stdout and stderr captured into *out (malloc'd, NUL-terminated;
 * may be NULL to discard). Returns the exit status, 128+signal, or -1 if it could not start. */
static __attribute__((unused)) int harness_run(const char *cmd, char **out) {
    char full[8192];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t cap = 4096, len = 0;
    char *buf = (char *)malloc(cap);   /* casts: the CUDA-emulator test includes this as C++ */
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 1024) {
            char *nb = (char *)realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf) buf[len] = 0;
    int st = pclose(p);
    if (out) *out = buf; else free(buf);
    if (st == -1) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < harness_ncases; i++) printf("%s\n", harness_cases[i].name);
        return 0;
    }
    if (argc != 2) { fprintf(stderr, "usage: %s --list | CASE\n", argv[0]); return 2; }
    for (int i = 0; i < harness_ncases; i++)
        if (strcmp(argv[1], harness_cases[i].name) == 0) { harness_cases[i].fn(); fflush(NULL); return 0; }
    fprintf(stderr, "no such case: %s\n", argv[1]);
    return 2;
}
#endif
