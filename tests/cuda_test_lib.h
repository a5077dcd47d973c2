/* cuda_test_lib.h — what the CUDA kernel tests share (test_cuda_kernels.c, test_cuda_llama.c): random inputs
 * rounded to the build's element type, device copies, NaN-poisoned outputs, every buffer freed at exit, the
 * emulator's fault count failing a case, and close_to(), the relative-error check that prints both sides.
 * Include once, after harness.h and cuda/cuda_kernels.h, inside #ifdef PRISM_HAVE_CUDA. */
#ifndef PRISM_CUDA_TEST_LIB_H
#define PRISM_CUDA_TEST_LIB_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rs = 0x243F6A8885A308D3ULL;
static float frand(void) {   /* uniform in [-1, 1) */
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)((rs >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static int fp32(void) { return strcmp(prism_cuda_precision(), "fp32") == 0; }
static double tol(double t32, double t16) { return fp32() ? t32 : t16; }

/* Linked against the CUDA emulator (tests/cudaemu, binaries test_cuda_kernels.emu-*), these exist: every fault
 * it saw (a shuffle with an exited lane, an out-of-bounds write, a bad cuBLAS extent...) fails the case at exit,
 * even one whose numbers came out right. Against the real CUDA libraries they are NULL. */
extern int cudaemu_faults(void) __attribute__((weak));
extern const char *cudaemu_last_fault(void) __attribute__((weak));
static void emu_faults_fail(void) {
    if (cudaemu_faults && cudaemu_faults() > 0) {
        fprintf(stderr, "CUDA emulator: %d fault(s), the last: %s\n", cudaemu_faults(), cudaemu_last_fault());
        fflush(NULL);
        _exit(1);
    }
}

static void need_device(void) {
    /* the kernel and model tests pin the fused attention kernel (the default, auto, would hand bf16 layers to cuDNN
     * where it is found); test_cuda_cudnn.c sets PRISM_ATTENTION itself after this */
    setenv("PRISM_ATTENTION", "fused", 0);
    int nd = prism_cuda_device_probe();
    if (nd < 0) HFAIL("CUDA runtime error (not a missing device): %s", prism_cuda_last_error());
    if (nd == 0) SKIP("no CUDA device");
    char err[512];
    if (prism_cuda_init(0, err, sizeof err) != 0) HFAIL("prism_cuda_init: %s", err);
    printf("device: %s, precision %s\n", prism_cuda_device_name(), prism_cuda_precision());
    if (cudaemu_faults) atexit(emu_faults_fail);
}
#define CK(call) do { if ((call) != 0) HFAIL("%s failed: %s", #call, prism_cuda_last_error()); } while (0)

/* Every buffer a case allocates is freed at exit (atexit, before LeakSanitizer looks in `make sanitize`), so a
 * leak report there is the product's, not the test's. */
static struct { void *p; int dev; } kept[8192];
static int nkept;
static void free_kept(void) {
    for (int i = nkept - 1; i >= 0; i--) { if (kept[i].dev) prism_cuda_free(kept[i].p); else free(kept[i].p); }
    nkept = 0;
}
static void *keep(void *p, int dev) {
    if (!p) HFAIL("out of memory%s%s", dev ? ": " : "", dev ? prism_cuda_last_error() : "");
    if (nkept == 0) atexit(free_kept);
    if (nkept < (int)(sizeof kept / sizeof kept[0])) { kept[nkept].p = p; kept[nkept].dev = dev; nkept++; }
    return p;
}
#define tmalloc(n) keep(malloc(n), 0)
#define tcalloc(n, s) keep(calloc((n), (s)), 0)
#define tdmalloc(n) keep(prism_cuda_malloc(n), 1)

/* host random array, rounded to the device element type */
static float *hrand(size_t n, float scale) {
    float *a = tmalloc(n * sizeof(float));
    if (!a) HFAIL("out of memory");
    for (size_t i = 0; i < n; i++) a[i] = frand() * scale;
    prism_cuda_round_host(a, n);
    return a;
}
static float *hzero(size_t n) { float *a = tcalloc(n ? n : 1, sizeof(float)); if (!a) HFAIL("oom"); return a; }
static float *hcopy(const float *s, size_t n) { float *a = tmalloc(n * sizeof(float)); memcpy(a, s, n * sizeof(float)); return a; }
static void *dx(const float *h, size_t n) {   /* device floatX copy of h */
    void *d = tdmalloc(n * prism_cuda_x_size());
    if (!d) HFAIL("%s", prism_cuda_last_error());
    CK(prism_cuda_upload_x(d, h, n));
    return d;
}
static float *df(const float *h, size_t n) {  /* device float32 copy of h */
    float *d = tdmalloc(n * sizeof(float));
    if (!d) HFAIL("%s", prism_cuda_last_error());
    CK(prism_cuda_upload(d, h, n * sizeof(float)));
    return d;
}
static void *dpoison_x(size_t n) {
    void *d = tdmalloc(n * prism_cuda_x_size());
    if (!d) HFAIL("%s", prism_cuda_last_error());
    CK(prism_cuda_fill_x(d, NAN, n));
    return d;
}
static float *dpoison_f(size_t n) {
    float *d = tdmalloc(n * sizeof(float));
    if (!d) HFAIL("%s", prism_cuda_last_error());
    CK(prism_cuda_fill_f32(d, NAN, n));
    return d;
}
static float *get_x(const void *d, size_t n) { float *h = hzero(n); CK(prism_cuda_sync()); CK(prism_cuda_download_x(h, d, n)); return h; }
static float *get_f(const float *d, size_t n) { float *h = hzero(n); CK(prism_cuda_sync()); CK(prism_cuda_download(h, d, n * sizeof(float))); return h; }
static int *irand(size_t n, int hi) { int *a = tmalloc(n * sizeof(int)); for (size_t i = 0; i < n; i++) a[i] = (int)((frand() + 1.0f) * 0.5f * hi) % hi; return a; }
static int *di(const int *h, size_t n) {
    int *d = tdmalloc(n * sizeof(int));
    if (!d) HFAIL("%s", prism_cuda_last_error());
    CK(prism_cuda_upload(d, h, n * sizeof(int)));
    return d;
}

static void close_to(const char *what, const float *gpu, const float *cpu, size_t n, double tl) {
    double maxref = 0, maxerr = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(gpu[i])) HFAIL("%s: element %zu is %g (poisoned output not written, or overflow); cpu %g", what, i,
                                     gpu[i], cpu[i]);
        double r = fabs(cpu[i]), e = fabs((double)gpu[i] - cpu[i]);
        if (r > maxref) maxref = r;
        if (e > maxerr) { maxerr = e; worst = i; }
    }
    double rel = maxref > 0 ? maxerr / maxref : maxerr;
    printf("  %-26s n=%-9zu max|cpu|=%.3e max|err|=%.3e rel=%.2e tol=%.0e (worst [%zu]: gpu %.7g cpu %.7g)\n", what, n,
           maxref, maxerr, rel, tl, worst, gpu[worst], cpu[worst]);
    if (!(maxref > 0)) HFAIL("%s: the CPU reference is all zeros: the check would prove nothing", what);
    if (!(rel <= tl)) HFAIL("%s: relative error %.3e > tolerance %.1e", what, rel, tl);
}

#endif
