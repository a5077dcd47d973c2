/* fuzz_checkpoint.c — libFuzzer target over the llm.c model-file and training-state readers
 * (kernels/checkpoint.h). The readers only take a path, so each input is written to a temporary file, read
 * with ckpt_read_model_header, ckpt_read_model and ckpt_read_state (with the model config the file's own
 * header describes, so the shape checks pass and the deeper checks are reached), and unlinked.
 *
 * Since a well-formed file is megabytes for any real shape, a second pass "completes" the input: when its
 * header implies a file of at most 1 MiB, the header is kept, the body is the input's remaining bytes
 * zero-padded to exactly the implied size, and (state files) the parameter count in slots 17-18 is set to
 * the implied one; that file goes through the same readers. The fuzzer thus explores header values freely.
 *
 * Contract checked on every file:
 *   failure ⇒ a CKPT_E* code and a non-empty message naming the file;
 *   header success ⇒ magic/version right, 1 <= L <= 240, every h_l >= 1 divides C, the fields are the
 *                    header's ints (heads = slots 8.. or NH when those are all zero); for the Llama-style
 *                    file (magic 20260629): heads = slots 16.., every head size C/h_l even, H and θ >= 1;
 *   read success   ⇒ the file is exactly 1024 + 4·n (model) or 1024 + 12·n (state) bytes with n computed
 *                    without overflow, the arrays are the file's floats, the state fields are the header's,
 *                    rope_theta <= CKPT_ROPE_THETA_MAX (a float holds it exactly); an accepted state written
 *                    again by ckpt_write_state reads back the same, and with one byte flipped is refused (a
 *                    body byte: "checksum mismatch").
 * The readers are given buffers sized to what the file can hold, so a read past them is an ASan error.
 *
 * fuzz_checkpoint_one() is the entry point (1 = some reader accepted, 0 = none); LLVMFuzzerTestOneInput only
 * with -DPRISM_LIBFUZZER (fuzz/run.sh). tests/unit/test_fuzz_corpus.c replays the corpus with gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_tempfile.h"

#include "checkpoint.h"

#undef FUZZ_CHECK
#define FUZZ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_checkpoint: contract violated: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)
#undef COMPLETE_MAX
#define COMPLETE_MAX (1u << 20)

/* model_num_params without wrap-around: what the file must really hold. */
static unsigned __int128 fck_exact_params(const struct model_config *c) {
    unsigned __int128 L = (unsigned)c->L, C = (unsigned)c->C;
    if (c->arch == MODEL_ARCH_LLAMA) {
        unsigned __int128 H = (unsigned)c->H;
        return (unsigned __int128)(unsigned)c->Vp * C + L * (2 * C + 4 * C * C + 3 * H * C) + C;
    }
    return (unsigned __int128)(unsigned)c->Vp * C + (unsigned __int128)(unsigned)c->maxT * C + L * (13 * C + 12 * C * C) + 2 * C;
}

static void fck_hdr_ints(const uint8_t *data, size_t size, int32_t *h) {
    memset(h, 0, 256 * sizeof *h);
    memcpy(h, data, size < 1024 ? size : 1024);
}

static void fck_check_error(int rc, const char *err, const char *path) {
    FUZZ_CHECK(rc == CKPT_EIO || rc == CKPT_EFORMAT || rc == CKPT_EMISMATCH || rc == CKPT_ENOMEM);
    if (!err[0] || !strstr(err, path)) fprintf(stderr, "fuzz_checkpoint: message \"%s\" for %s\n", err, path);
    FUZZ_CHECK(err[0] != 0 && strstr(err, path));
}

/* The model readers. Returns 1 when ckpt_read_model accepted the file. */
static int fck_check_model(const char *path, const uint8_t *data, size_t size) {
    struct model_config cfg;
    char err[1024];
    int has = -1, ok = 0;
    err[0] = 0;
    int rc = ckpt_read_model_header(path, &cfg, &has, err, sizeof err);
    if (rc) { fck_check_error(rc, err, path); return 0; }
    int32_t h[256];
    fck_hdr_ints(data, size, h);
    int llama = h[0] == CKPT_LLAMA_MAGIC;
    FUZZ_CHECK(size >= 1024 && ((h[0] == CKPT_MODEL_MAGIC && h[1] == CKPT_MODEL_VERSION && cfg.arch == MODEL_ARCH_GPT2) ||
                                (llama && h[1] == CKPT_LLAMA_VERSION && cfg.arch == MODEL_ARCH_LLAMA)));
    FUZZ_CHECK(cfg.maxT == h[2] && cfg.V == h[3] && cfg.L == h[4] && cfg.C == h[6] && cfg.Vp == h[7]);
    FUZZ_CHECK(cfg.L >= 1 && cfg.L <= MODEL_MAX_LAYERS && cfg.C >= 1 && cfg.V >= 1 && cfg.Vp >= cfg.V && cfg.maxT >= 1);
    FUZZ_CHECK(has == 0 || has == 1);
    if (llama) FUZZ_CHECK(has == 1 && cfg.H == h[8] && cfg.H >= 1 && (int)cfg.rope_theta == h[9] && h[9] >= 1 &&
                          h[9] <= CKPT_ROPE_THETA_MAX && h[5] == cfg.heads[cfg.L - 1]);
    for (int l = 0; l < cfg.L; l++) {
        FUZZ_CHECK(cfg.heads[l] >= 1 && cfg.C % cfg.heads[l] == 0);
        if (llama) FUZZ_CHECK(cfg.heads[l] == h[CKPT_LLAMA_HEADS_SLOT + l] && (cfg.C / cfg.heads[l]) % 2 == 0);
        else FUZZ_CHECK(cfg.heads[l] == (has ? h[CKPT_HEADS_SLOT + l] : h[5]));
    }
    /* params: a buffer no larger than the file's body can fill */
    unsigned __int128 n = fck_exact_params(&cfg);
    size_t avail = (size - 1024) / 4, nbuf = n < avail ? (size_t)n : avail;
    float *p = malloc((nbuf ? nbuf : 1) * sizeof(float));
    FUZZ_CHECK(p);
    err[0] = 0;
    rc = ckpt_read_model(path, &cfg, p, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK((unsigned __int128)size == 1024 + 4 * n);
        FUZZ_CHECK(memcmp(p, data + 1024, (size_t)n * 4) == 0);
        ok = 1;
    } else fck_check_error(rc, err, path);
    free(p);
    return ok;
}

/* A state the reader accepted, written again by ckpt_write_state (with its checksum), reads back the same;
 * the same file with one byte flipped (where the input says) is refused — a body byte by the checksum. */
static void fck_check_rewrite(const char *path, const struct model_config *cfg, const struct ckpt_state *st,
                              const float *p, const float *m, const float *v, size_t n, const uint8_t *data, size_t size) {
    char p2[4200], err[1024];
    snprintf(p2, sizeof p2, "%s.w", path);
    err[0] = 0;
    int rc = ckpt_write_state(p2, cfg, st, p, m, v, err, sizeof err);
    if (rc) { fck_check_error(rc, err, p2); unlink(p2); return; }
    float *a = malloc((n ? n : 1) * 3 * sizeof(float));
    FUZZ_CHECK(a);
    struct ckpt_state got;
    rc = ckpt_read_state(p2, cfg, NULL, &got, a, a + n, a + 2 * n, err, sizeof err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(got.step == st->step && got.data_pos == st->data_pos && got.seed == st->seed);
    FUZZ_CHECK(memcmp(a, p, n * 4) == 0 && memcmp(a + n, m, n * 4) == 0 && memcmp(a + 2 * n, v, n * 4) == 0);
    size_t len = 1024 + 12 * n, at = 0;
    for (size_t i = 0; i < size && i < 64; i++) at = at * 131 + data[size - 1 - i];
    at %= len;
    FILE *f = fopen(p2, "r+b");
    FUZZ_CHECK(f);
    int c;
    FUZZ_CHECK(fseek(f, (long)at, SEEK_SET) == 0 && (c = fgetc(f)) != EOF);
    FUZZ_CHECK(fseek(f, (long)at, SEEK_SET) == 0 && fputc(c ^ (1 << (at % 8)), f) != EOF);
    fclose(f);
    err[0] = 0;
    rc = ckpt_read_state(p2, cfg, NULL, &got, a, a + n, a + 2 * n, err, sizeof err);
    if (rc == 0) fprintf(stderr, "fuzz_checkpoint: a state with byte %zu flipped was accepted\n", at);
    FUZZ_CHECK(rc != 0);
    fck_check_error(rc, err, p2);
    if (at >= 1024) FUZZ_CHECK(strstr(err, "checksum mismatch") != NULL);
    free(a);
    unlink(p2);
}

/* The training-state reader, with the model config the state header describes. */
static int fck_check_state(const char *path, const uint8_t *data, size_t size) {
    int32_t h[256];
    fck_hdr_ints(data, size, h);
    struct model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.maxT = h[2]; cfg.V = h[3]; cfg.L = h[4]; cfg.C = h[5]; cfg.Vp = h[6];
    if (h[19] == MODEL_ARCH_LLAMA) { cfg.arch = MODEL_ARCH_LLAMA; cfg.H = h[20] > 0 ? h[20] : 1; cfg.rope_theta = (float)h[21]; }
    if (cfg.L < 1 || cfg.L > MODEL_MAX_LAYERS || cfg.C < 1 || cfg.V < 1 || cfg.Vp < 1 || cfg.maxT < 1) {
        cfg.L = 1; cfg.C = 1; cfg.V = 1; cfg.Vp = 1; cfg.maxT = 1;   /* still run it: the mismatch path */
        cfg.H = 1;
    }
    for (int l = 0; l < cfg.L; l++) {
        int slot = CKPT_STATE_HEADS_SLOT + l;
        cfg.heads[l] = slot < 256 && h[slot] > 0 ? h[slot] : 1;
    }
    struct ckpt_state expect = { 0 }, st;
    uint64_t seed = (uint64_t)(uint32_t)h[12] | (uint64_t)(uint32_t)h[13] << 32;
    expect.seed = seed; expect.B = h[14]; expect.T = h[15]; expect.grad_accum = h[16];
    unsigned __int128 n = fck_exact_params(&cfg);
    size_t avail = size > 1024 ? (size - 1024) / 12 : 0, nbuf = n < avail ? (size_t)n : avail;
    float *p = malloc((nbuf ? nbuf : 1) * sizeof(float)), *m = malloc((nbuf ? nbuf : 1) * sizeof(float));
    float *v = malloc((nbuf ? nbuf : 1) * sizeof(float));
    FUZZ_CHECK(p && m && v);
    char err[1024];
    err[0] = 0;
    int ok = 0, rc = ckpt_read_state(path, &cfg, (size & 1) ? NULL : &expect, &st, p, m, v, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(size >= 1024 && h[0] == CKPT_STATE_MAGIC && (h[1] == CKPT_STATE_VERSION || h[1] == 1));
        FUZZ_CHECK((unsigned __int128)size == 1024 + 12 * n);
        FUZZ_CHECK(st.step == h[7] && st.step >= 0 && st.seed == seed && st.B == h[14] && st.T == h[15] &&
                   st.grad_accum == h[16]);
        FUZZ_CHECK(memcmp(p, data + 1024, (size_t)n * 4) == 0 && memcmp(m, data + 1024 + (size_t)n * 4, (size_t)n * 4) == 0 &&
                   memcmp(v, data + 1024 + (size_t)n * 8, (size_t)n * 4) == 0);
        if (cfg.arch == MODEL_ARCH_LLAMA) FUZZ_CHECK(h[21] >= 0 && h[21] <= CKPT_ROPE_THETA_MAX);
        fck_check_rewrite(path, &cfg, &st, p, m, v, (size_t)n, data, size);
        ok = 1;
    } else fck_check_error(rc, err, path);
    free(p); free(m); free(v);
    return ok;
}

static int fck_check_bytes(const uint8_t *data, size_t size) {
    char path[4096];
    if (fuzz_write_temp(path, sizeof path, "ckpt", data, size) < 0) return 0;
    int ok = fck_check_model(path, data, size);
    ok |= fck_check_state(path, data, size);
    unlink(path);
    return ok;
}

/* The input's header with a body of exactly the implied size, or 0 when it implies none <= 1 MiB. */
static size_t fck_complete(const uint8_t *data, size_t size, uint8_t **out) {
    int32_t h[256];
    if (size < 1024) return 0;
    fck_hdr_ints(data, size, h);
    struct model_config c;
    memset(&c, 0, sizeof c);
    int copies;
    if (h[0] == CKPT_MODEL_MAGIC) { c.maxT = h[2]; c.V = h[3]; c.L = h[4]; c.C = h[6]; c.Vp = h[7]; copies = 1; }
    else if (h[0] == CKPT_LLAMA_MAGIC) {
        c.arch = MODEL_ARCH_LLAMA; c.maxT = h[2]; c.V = h[3]; c.L = h[4]; c.C = h[6]; c.Vp = h[7]; c.H = h[8]; copies = 1;
        if (c.H < 1) return 0;
    } else if (h[0] == CKPT_STATE_MAGIC) {
        c.maxT = h[2]; c.V = h[3]; c.L = h[4]; c.C = h[5]; c.Vp = h[6]; copies = 3;
        if (h[19] == MODEL_ARCH_LLAMA) { c.arch = MODEL_ARCH_LLAMA; c.H = h[20]; if (c.H < 1) return 0; }
    } else return 0;
    if (c.L < 1 || c.L > MODEL_MAX_LAYERS || c.C < 1 || c.Vp < 1 || c.maxT < 1) return 0;
    unsigned __int128 n = fck_exact_params(&c);
    if (n * 4 * copies > COMPLETE_MAX) return 0;
    size_t len = 1024 + (size_t)n * 4 * copies;
    uint8_t *b = calloc(len, 1);
    if (!b) return 0;
    memcpy(b, data, size < len ? size : len);
    if (copies == 3) {
        int32_t lo = (int32_t)(uint32_t)(uint64_t)n, hi = 0;
        memcpy(b + 17 * 4, &lo, 4);
        memcpy(b + 18 * 4, &hi, 4);
    }
    *out = b;
    return len;
}

int fuzz_checkpoint_one(const uint8_t *data, size_t size) {
    int ok = fck_check_bytes(data, size);
    uint8_t *full = NULL;
    size_t len = fck_complete(data, size, &full);
    if (len) {
        ok |= fck_check_bytes(full, len);
        free(full);
    }
    return ok;
}

#ifdef PRISM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_checkpoint_one(data, size);
    return 0;
}
#endif
