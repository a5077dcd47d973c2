/* checkpoint.c — llm.c model files and full training-state files (formats in checkpoint.h).
 *
 * Writes go through util_write_atomic (a temporary file, fsync'd, renamed over PATH, the directory fsync'd), so a reader
 * sees the old file or the new one, never half of one. Reads check the header, then the exact file size
 * implied by it, then that the shapes match the job, before reading any floats; every message names the
 * file and the expectation it failed.
 */
#include "checkpoint.h"
#include "util.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAIL(code, ...) do { if (err) snprintf(err, errlen, __VA_ARGS__); rc = (code); goto out; } while (0)

static int read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* Writes header + arrays atomically (util_write_atomic: temporary file, fsync, rename, directory fsync). */
static int write_atomic(const char *path, const int32_t *hdr, const float *const *arrays, int narr, size_t n,
                        char *err, size_t errlen) {
    util_part parts[4] = {{hdr, 256 * sizeof(int32_t)}};
    for (int i = 0; i < narr && i < 3; i++) parts[1 + i] = (util_part){arrays[i], n * sizeof(float)};
    char e[512];
    if (util_write_atomic(path, parts, 1 + narr, 0644, e, sizeof e)) {
        if (err) snprintf(err, errlen, "%s", e);
        return CKPT_EIO;
    }
    return CKPT_OK;
}

int ckpt_write_model(const char *path, const struct model_config *cfg, const float *params, char *err, size_t errlen) {
    int32_t hdr[256] = {0};
    if (cfg->arch == MODEL_ARCH_LLAMA) {
        hdr[0] = CKPT_LLAMA_MAGIC; hdr[1] = CKPT_LLAMA_VERSION; hdr[2] = cfg->maxT; hdr[3] = cfg->V;
        hdr[4] = cfg->L; hdr[5] = cfg->heads[cfg->L - 1]; hdr[6] = cfg->C; hdr[7] = cfg->Vp; hdr[8] = cfg->H;
        hdr[9] = (int32_t)(cfg->rope_theta + 0.5f);
        for (int l = 0; l < cfg->L; l++) hdr[CKPT_LLAMA_HEADS_SLOT + l] = cfg->heads[l];
        const float *arr[1] = {params};
        return write_atomic(path, hdr, arr, 1, model_num_params(cfg), err, errlen);
    }
    hdr[0] = CKPT_MODEL_MAGIC; hdr[1] = CKPT_MODEL_VERSION; hdr[2] = cfg->maxT; hdr[3] = cfg->V;
    hdr[4] = cfg->L; hdr[5] = cfg->heads[cfg->L - 1]; hdr[6] = cfg->C; hdr[7] = cfg->Vp;
    for (int l = 0; l < cfg->L; l++) hdr[CKPT_HEADS_SLOT + l] = cfg->heads[l];
    const float *arr[1] = {params};
    return write_atomic(path, hdr, arr, 1, model_num_params(cfg), err, errlen);
}

/* Opens path, reads its 256-int header, returns the fd (or -1 with err set) and the file size. */
static int open_header(const char *path, int32_t *hdr, off_t *size, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0) { if (err) snprintf(err, errlen, "%s: cannot open checkpoint: %s", path, strerror(errno)); return -1; }
    if (fstat(fd, &st) || st.st_size < 1024 || read_all(fd, hdr, 1024)) {
        if (err) snprintf(err, errlen, "%s: %lld bytes, shorter than the 1024-byte checkpoint header (truncated or not a checkpoint)",
                          path, (long long)st.st_size);
        close(fd);
        return -1;
    }
    *size = st.st_size;
    return fd;
}

/* The Llama-style header: every field checked on its own so the message names the slot. */
static int hdr_llama_config(const char *path, const int32_t *h, struct model_config *cfg, int *has_heads,
                            char *err, size_t errlen) {
    int rc = CKPT_OK;
    if (h[1] != CKPT_LLAMA_VERSION) FAIL(CKPT_EFORMAT, "%s: header slot 1 (version) is %d, expected %d (float32)", path, h[1], CKPT_LLAMA_VERSION);
    int maxT = h[2], V = h[3], L = h[4], C = h[6], Vp = h[7], H = h[8], theta = h[9];
    if (maxT < 1 || maxT > (1 << 20)) FAIL(CKPT_EFORMAT, "%s: header slot 2 (maxT) is %d, expected 1..%d", path, maxT, 1 << 20);
    if (V < 1 || V > (1 << 24)) FAIL(CKPT_EFORMAT, "%s: header slot 3 (V) is %d, expected 1..%d", path, V, 1 << 24);
    if (L < 1 || L > 256 - CKPT_LLAMA_HEADS_SLOT)
        FAIL(CKPT_EFORMAT, "%s: header slot 4 (L) is %d, expected 1..%d", path, L, 256 - CKPT_LLAMA_HEADS_SLOT);
    if (C < 2 || C > 65536) FAIL(CKPT_EFORMAT, "%s: header slot 6 (C) is %d, expected 2..65536", path, C);
    if (Vp < V || Vp > (1 << 24)) FAIL(CKPT_EFORMAT, "%s: header slot 7 (Vp) is %d, expected V=%d..%d", path, Vp, V, 1 << 24);
    if (H < 1 || H > (1 << 20)) FAIL(CKPT_EFORMAT, "%s: header slot 8 (H, the MLP hidden size) is %d, expected 1..%d", path, H, 1 << 20);
    if (theta < 1 || theta > CKPT_ROPE_THETA_MAX)
        FAIL(CKPT_EFORMAT, "%s: header slot 9 (rope_theta) is %d, expected 1..%d (an integer a float holds exactly)", path,
             theta, CKPT_ROPE_THETA_MAX);
    memset(cfg, 0, sizeof *cfg);
    cfg->arch = MODEL_ARCH_LLAMA;
    cfg->maxT = maxT; cfg->V = V; cfg->L = L; cfg->C = C; cfg->Vp = Vp; cfg->H = H; cfg->rope_theta = (float)theta;
    for (int l = 0; l < L; l++) {
        int hl = h[CKPT_LLAMA_HEADS_SLOT + l];
        if (hl < 1 || C % hl)
            FAIL(CKPT_EFORMAT, "%s: header slot %d (heads of layer %d) is %d, which does not divide C=%d",
                 path, CKPT_LLAMA_HEADS_SLOT + l, l, hl, C);
        if ((C / hl) % 2)
            FAIL(CKPT_EFORMAT, "%s: header slot %d (heads of layer %d) is %d, giving an odd head size %d (RoPE needs an even one)",
                 path, CKPT_LLAMA_HEADS_SLOT + l, l, hl, C / hl);
        cfg->heads[l] = hl;
    }
    if (h[5] != cfg->heads[L - 1])
        FAIL(CKPT_EFORMAT, "%s: header slot 5 (h_L) is %d but slot %d (heads of the last layer) is %d",
             path, h[5], CKPT_LLAMA_HEADS_SLOT + L - 1, cfg->heads[L - 1]);
    if (has_heads) *has_heads = 1;
out:
    return rc;
}

static int hdr_model_config(const char *path, const int32_t *h, struct model_config *cfg, int *has_heads,
                            char *err, size_t errlen) {
    int rc = CKPT_OK;
    if (h[0] == CKPT_LLAMA_MAGIC) return hdr_llama_config(path, h, cfg, has_heads, err, errlen);
    if (h[0] != CKPT_MODEL_MAGIC)
        FAIL(CKPT_EFORMAT, "%s: bad magic: header slot 0 is neither %d (an llm.c GPT-2 model checkpoint) nor %d (a Llama-style "
             "model file)", path, CKPT_MODEL_MAGIC, CKPT_LLAMA_MAGIC);
    if (h[1] != CKPT_MODEL_VERSION)
        FAIL(CKPT_EFORMAT, "%s: version %d, expected %d (float32; bf16 version 5 files are not supported)", path, h[1], CKPT_MODEL_VERSION);
    int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
    if (L < 1 || L > MODEL_MAX_LAYERS || C < 1 || V < 1 || Vp < V || maxT < 1 || NH < 1 || C % NH)
        FAIL(CKPT_EFORMAT, "%s: implausible header (maxT=%d V=%d L=%d NH=%d C=%d Vp=%d)", path, maxT, V, L, NH, C, Vp);
    memset(cfg, 0, sizeof *cfg);
    cfg->maxT = maxT; cfg->V = V; cfg->L = L; cfg->C = C; cfg->Vp = Vp;
    int any = 0;
    for (int l = 0; l < L && CKPT_HEADS_SLOT + l < 256; l++) any |= h[CKPT_HEADS_SLOT + l] != 0;
    for (int l = 0; l < L; l++) {
        int hl = any ? h[CKPT_HEADS_SLOT + l] : NH;
        if (hl < 1 || C % hl) FAIL(CKPT_EFORMAT, "%s: header slot %d (heads of layer %d) is %d, which does not divide C=%d",
                                  path, CKPT_HEADS_SLOT + l, l, hl, C);
        cfg->heads[l] = hl;
    }
    if (has_heads) *has_heads = any;
out:
    return rc;
}

int ckpt_read_model_header(const char *path, struct model_config *cfg, int *has_heads, char *err, size_t errlen) {
    int32_t h[256];
    off_t size;
    int fd = open_header(path, h, &size, err, errlen);
    if (fd < 0) return CKPT_EIO;
    close(fd);
    return hdr_model_config(path, h, cfg, has_heads, err, errlen);
}

int ckpt_read_model(const char *path, const struct model_config *cfg, float *params, char *err, size_t errlen) {
    int32_t h[256];
    off_t size;
    int rc = CKPT_OK;
    struct model_config fc;
    int fd = open_header(path, h, &size, err, errlen);
    if (fd < 0) return CKPT_EIO;
    rc = hdr_model_config(path, h, &fc, NULL, err, errlen);
    if (rc) goto out;
    size_t n = model_num_params(&fc), want = 1024 + n * sizeof(float);
    if ((size_t)size != want)
        FAIL(CKPT_EFORMAT, "%s: file is %lld bytes but its header (L=%d C=%d Vp=%d maxT=%d%s) implies %zu parameters, so expected %zu bytes",
             path, (long long)size, fc.L, fc.C, fc.Vp, fc.maxT, fc.arch == MODEL_ARCH_LLAMA ? " H, llama" : "", n, want);
    if (fc.arch != cfg->arch)
        FAIL(CKPT_EMISMATCH, "%s: this is a %s model file but the job has model.arch \"%s\"", path,
             model_arch_name(fc.arch), model_arch_name(cfg->arch));
    if (fc.arch == MODEL_ARCH_LLAMA && (fc.H != cfg->H || (int)(fc.rope_theta + 0.5f) != (int)(cfg->rope_theta + 0.5f)))
        FAIL(CKPT_EMISMATCH, "%s: model has H=%d rope_theta=%d but the job wants model.ffn_hidden=%d model.rope_theta=%d",
             path, fc.H, (int)fc.rope_theta, cfg->H, (int)(cfg->rope_theta + 0.5f));
    if (fc.L != cfg->L || fc.C != cfg->C || fc.V != cfg->V || fc.Vp != cfg->Vp || fc.maxT != cfg->maxT)
        FAIL(CKPT_EMISMATCH, "%s: model is L=%d C=%d V=%d Vp=%d maxT=%d but the job wants L=%d C=%d V=%d Vp=%d maxT=%d",
             path, fc.L, fc.C, fc.V, fc.Vp, fc.maxT, cfg->L, cfg->C, cfg->V, cfg->Vp, cfg->maxT);
    if (read_all(fd, params, n * sizeof(float))) FAIL(CKPT_EIO, "%s: read failed: %s", path, strerror(errno));
out:
    close(fd);
    return rc;
}

/* ---- the training state's checksum ----------------------------------------------------------------
 * A 64-bit hash of the header (its checksum slots zero) and of the params, m and v arrays, each part hashed
 * in four independent lanes of 64-bit words (a multiply-rotate per word, several GB/s: a checkpoint of
 * GPT-2 124M is 1.5 GB) and the parts chained through util_mix64. One flipped bit anywhere changes it. */
#define SUM_P1 0x9E3779B185EBCA87ULL
#define SUM_P2 0xC2B2AE3D27D4EB4FULL
static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t sum_part(uint64_t acc, const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t l[4] = { acc + SUM_P1, acc ^ SUM_P2, acc - SUM_P1, ~acc };
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            l[k] = rotl64(l[k] + w * SUM_P2, 31) * SUM_P1;
        }
    uint64_t h = rotl64(l[0], 1) + rotl64(l[1], 7) + rotl64(l[2], 12) + rotl64(l[3], 18);
    for (; i < n; i++) h = rotl64(h ^ (p[i] * SUM_P1), 11) * SUM_P2;
    return util_mix64(h ^ (uint64_t)n);
}

static uint64_t state_sum(const int32_t *hdr, const float *const *arrays, size_t n) {
    int32_t h[256];
    memcpy(h, hdr, sizeof h);
    h[CKPT_STATE_SUM_SLOT] = h[CKPT_STATE_SUM_SLOT + 1] = 0;
    uint64_t acc = sum_part(0, h, sizeof h);
    for (int a = 0; a < 3; a++) acc = sum_part(acc, arrays[a], n * sizeof(float));
    return acc;
}

static void put64(int32_t *h, int slot, uint64_t v) { h[slot] = (int32_t)(uint32_t)v; h[slot + 1] = (int32_t)(uint32_t)(v >> 32); }
static uint64_t get64(const int32_t *h, int slot) { return (uint64_t)(uint32_t)h[slot] | ((uint64_t)(uint32_t)h[slot + 1] << 32); }

int ckpt_write_state(const char *path, const struct model_config *cfg, const struct ckpt_state *st,
                     const float *params, const float *m, const float *v, char *err, size_t errlen) {
    int32_t hdr[256] = {0};
    size_t n = model_num_params(cfg);
    hdr[0] = CKPT_STATE_MAGIC; hdr[1] = CKPT_STATE_VERSION; hdr[2] = cfg->maxT; hdr[3] = cfg->V;
    hdr[4] = cfg->L; hdr[5] = cfg->C; hdr[6] = cfg->Vp; hdr[7] = st->step;
    put64(hdr, 8, st->data_pos); put64(hdr, 10, st->rng); put64(hdr, 12, st->seed);
    hdr[14] = st->B; hdr[15] = st->T; hdr[16] = st->grad_accum; put64(hdr, 17, n);
    if (cfg->arch == MODEL_ARCH_LLAMA) { hdr[19] = MODEL_ARCH_LLAMA; hdr[20] = cfg->H; hdr[21] = (int32_t)(cfg->rope_theta + 0.5f); }
    for (int l = 0; l < cfg->L && CKPT_STATE_HEADS_SLOT + l < 256; l++) hdr[CKPT_STATE_HEADS_SLOT + l] = cfg->heads[l];
    const float *arr[3] = {params, m, v};
    put64(hdr, CKPT_STATE_SUM_SLOT, state_sum(hdr, arr, n));
    return write_atomic(path, hdr, arr, 3, n, err, errlen);
}

static void fmt_heads(char *buf, size_t len, const int *heads, int L) {
    size_t k = 0;
    buf[0] = 0;
    for (int l = 0; l < L && k + 12 < len; l++) k += snprintf(buf + k, len - k, l ? ",%d" : "%d", heads[l]);
}

int ckpt_read_state(const char *path, const struct model_config *cfg, const struct ckpt_state *expect,
                    struct ckpt_state *st, float *params, float *m, float *v, char *err, size_t errlen) {
    int32_t h[256];
    off_t size;
    int rc = CKPT_OK;
    int fd = open_header(path, h, &size, err, errlen);
    if (fd < 0) return CKPT_EIO;
    if (h[0] != CKPT_STATE_MAGIC)
        FAIL(CKPT_EFORMAT, "%s: bad magic: the header does not start with %d (not a prism-sweep training-state "
             "checkpoint)%s", path, CKPT_STATE_MAGIC, h[0] == CKPT_MODEL_MAGIC ? "; this is a model file: use it as model.init instead" : "");
    if (h[1] != CKPT_STATE_VERSION && h[1] != 1)
        FAIL(CKPT_EFORMAT, "%s: unsupported version %d: expected %d (or 1, written before checksums)", path, h[1], CKPT_STATE_VERSION);
    size_t n = model_num_params(cfg), fn = (size_t)get64(h, 17);
    if (h[19] != cfg->arch)
        FAIL(CKPT_EMISMATCH, "%s: arch is %s but the job has model.arch \"%s\" (resume with the job that wrote it)", path,
             h[19] == MODEL_ARCH_LLAMA ? "llama" : h[19] == 0 ? "gpt2" : "unknown", model_arch_name(cfg->arch));
    if (cfg->arch == MODEL_ARCH_LLAMA && (h[20] != cfg->H || h[21] != (int32_t)(cfg->rope_theta + 0.5f)))
        FAIL(CKPT_EMISMATCH, "%s: model has H=%d rope_theta=%d but the job has model.ffn_hidden=%d model.rope_theta=%d",
             path, h[20], h[21], cfg->H, (int)(cfg->rope_theta + 0.5f));
    if (h[2] != cfg->maxT || h[3] != cfg->V || h[4] != cfg->L || h[5] != cfg->C || h[6] != cfg->Vp)
        FAIL(CKPT_EMISMATCH, "%s: model is maxT=%d V=%d L=%d C=%d Vp=%d but the job has maxT=%d V=%d L=%d C=%d Vp=%d",
             path, h[2], h[3], h[4], h[5], h[6], cfg->maxT, cfg->V, cfg->L, cfg->C, cfg->Vp);
    size_t want = 1024 + 3 * n * sizeof(float);
    if (fn != n || (size_t)size != want)
        FAIL(CKPT_EFORMAT, "%s: file is %lld bytes but expected %zu (header + params, m, v of %zu floats each): truncated?",
             path, (long long)size, want, n);
    /* slots 32..255 hold the first 224 layers' heads (what ckpt_write_state stores); never read past h[255] */
    int nslots = cfg->L < 256 - CKPT_STATE_HEADS_SLOT ? cfg->L : 256 - CKPT_STATE_HEADS_SLOT;
    for (int l = 0; l < nslots; l++)
        if (h[CKPT_STATE_HEADS_SLOT + l] != cfg->heads[l]) {
            char a[1024], b[1024];
            fmt_heads(a, sizeof a, h + CKPT_STATE_HEADS_SLOT, nslots);
            fmt_heads(b, sizeof b, cfg->heads, cfg->L);
            FAIL(CKPT_EMISMATCH, "%s: heads are %s but the job has %s", path, a, b);
        }
    if (expect) {
        if (get64(h, 12) != expect->seed)
            FAIL(CKPT_EMISMATCH, "%s: seed is %llu but the job has %llu", path, (unsigned long long)get64(h, 12),
                 (unsigned long long)expect->seed);
        if (h[14] != expect->B || h[15] != expect->T || h[16] != expect->grad_accum)
            FAIL(CKPT_EMISMATCH, "%s: batch is B=%d T=%d grad_accum=%d but the job has B=%d T=%d grad_accum=%d",
                 path, h[14], h[15], h[16], expect->B, expect->T, expect->grad_accum);
    }
    if (h[7] < 0) FAIL(CKPT_EFORMAT, "%s: negative step %d", path, h[7]);
    st->step = h[7]; st->data_pos = get64(h, 8); st->rng = get64(h, 10); st->seed = get64(h, 12);
    st->B = h[14]; st->T = h[15]; st->grad_accum = h[16];
    if (read_all(fd, params, n * sizeof(float)) || read_all(fd, m, n * sizeof(float)) || read_all(fd, v, n * sizeof(float)))
        FAIL(CKPT_EIO, "%s: read failed: %s", path, strerror(errno));
    if (h[1] >= 2) {
        const float *arr[3] = {params, m, v};
        uint64_t want_sum = get64(h, CKPT_STATE_SUM_SLOT), got_sum = state_sum(h, arr, n);
        if (got_sum != want_sum)
            FAIL(CKPT_EFORMAT, "%s: checksum mismatch (header %016llx, contents %016llx): the file is corrupt (a flipped "
                 "byte on the disk or in transit); not loaded", path, (unsigned long long)want_sum,
                 (unsigned long long)got_sum);
    }
out:
    close(fd);
    return rc;
}
