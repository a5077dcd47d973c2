/* test_llama_parity.c — the CPU engine's Llama-style model against an independent float64 implementation
 * written here, from the same model file.
 * timeout: 240
 *
 * The reference shares no code with the engine: it parses the pinned model file itself (fread, the header
 * slots, the nine tensors in file order), runs the model as plain loops in double (embedding, RMSNorm,
 * QKV, rotate-half RoPE at each layer's head size, causal softmax attention at scale 1/√d_h, W_O, SwiGLU
 * MLP, final RMSNorm, tied classifier, mean cross-entropy over the real vocabulary), and gets gradients by
 * fourth-order central differences of that forward (so no backward pass is shared or even mirrored);
 * then global-norm clipping and AdamW with bias correction, decay on the 2-D tensors only.
 * Schedule heads 1,2,4 at C=8 (head sizes 8, 4, 2), L=3, H=16, V=11 padded to 16, B=2, T=6, θ=500.
 * Checked: the first 5 training losses (5 AdamW steps) agree to <= 1e-4.
 */
#include "harness.h"
#include "checkpoint.h"
#include "model.h"
#include <math.h>
#include <stdint.h>

#define RL 3
#define RC 8
#define RH 16
#define RV 11
#define RVP 16
#define RB 2
#define RT 6

/* ---- the reference (double, loops) ---- */
struct ref {
    int maxT, V, L, C, Vp, H, theta, heads[RL];
    double *p;                 /* all parameters, file order */
    size_t n, off[9], size[9];
};

static void ref_load(struct ref *r, const char *path) {
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    int32_t h[256];
    ASSERT_EQ_INT(256, fread(h, 4, 256, f));
    ASSERT_EQ_INT(20260629, h[0]);
    ASSERT_EQ_INT(1, h[1]);
    r->maxT = h[2]; r->V = h[3]; r->L = h[4]; r->C = h[6]; r->Vp = h[7]; r->H = h[8]; r->theta = h[9];
    ASSERT_EQ_INT(RL, r->L);
    for (int l = 0; l < RL; l++) r->heads[l] = h[16 + l];
    ASSERT_EQ_INT(r->heads[RL - 1], h[5]);
    size_t L = r->L, C = r->C, H = r->H;
    size_t sz[9] = {(size_t)r->Vp * C, L * C, L * 3 * C * C, L * C * C, L * C, L * H * C, L * H * C, L * C * H, C};
    r->n = 0;
    for (int i = 0; i < 9; i++) { r->off[i] = r->n; r->size[i] = sz[i]; r->n += sz[i]; }
    float *tmp = malloc(r->n * 4);
    ASSERT_EQ_INT(r->n, fread(tmp, 4, r->n, f));
    char extra;
    ASSERT_EQ_INT(0, fread(&extra, 1, 1, f));     /* nothing after the last tensor */
    fclose(f);
    r->p = malloc(r->n * 8);
    for (size_t i = 0; i < r->n; i++) r->p[i] = tmp[i];
    free(tmp);
}

static void rms(double *y, const double *x, const double *w, int C) {
    double ss = 0;
    for (int c = 0; c < C; c++) ss += x[c] * x[c];
    double s = 1 / sqrt(ss / C + 1e-5);
    for (int c = 0; c < C; c++) y[c] = x[c] * s * w[c];
}

static void lin(double *y, const double *x, const double *W, int out, int in) {   /* y = W x, W (out, in) */
    for (int o = 0; o < out; o++) { double s = 0; for (int i = 0; i < in; i++) s += W[(size_t)o * in + i] * x[i]; y[o] = s; }
}

static double ref_loss(const struct ref *r, const double *p, const int *in, const int *tg) {
    int C = r->C, H = r->H;
    const double *wte = p + r->off[0], *an = p + r->off[1], *qw = p + r->off[2], *ow = p + r->off[3];
    const double *mn = p + r->off[4], *up = p + r->off[5], *gt = p + r->off[6], *dn = p + r->off[7], *nf = p + r->off[8];
    double x[RB][RT][RC], hbuf[RC], qkv[RB][RT][3 * RC], y[RC], u[RH], g[RH], a[RH], o[RC];
    double total = 0;
    for (int b = 0; b < RB; b++)
        for (int t = 0; t < RT; t++)
            for (int c = 0; c < C; c++) x[b][t][c] = wte[(size_t)in[b * RT + t] * C + c];
    for (int l = 0; l < r->L; l++) {
        int nh = r->heads[l], d = C / nh;
        for (int b = 0; b < RB; b++)
            for (int t = 0; t < RT; t++) {
                rms(hbuf, x[b][t], an + l * C, C);
                lin(qkv[b][t], hbuf, qw + (size_t)l * 3 * C * C, 3 * C, C);
                for (int part = 0; part < 2; part++)
                    for (int hh = 0; hh < nh; hh++)
                        for (int i = 0; i < d / 2; i++) {
                            double ang = t * pow((double)r->theta, -2.0 * i / d);
                            double *v = qkv[b][t] + part * C + hh * d, x0 = v[i], x1 = v[i + d / 2];
                            v[i] = x0 * cos(ang) - x1 * sin(ang);
                            v[i + d / 2] = x0 * sin(ang) + x1 * cos(ang);
                        }
            }
        for (int b = 0; b < RB; b++)
            for (int t = 0; t < RT; t++) {
                for (int hh = 0; hh < nh; hh++) {
                    double sc[RT], mx = -1e300, sum = 0;
                    for (int s = 0; s <= t; s++) {
                        double dot = 0;
                        for (int i = 0; i < d; i++) dot += qkv[b][t][hh * d + i] * qkv[b][s][C + hh * d + i];
                        sc[s] = dot / sqrt((double)d);
                        if (sc[s] > mx) mx = sc[s];
                    }
                    for (int s = 0; s <= t; s++) { sc[s] = exp(sc[s] - mx); sum += sc[s]; }
                    for (int i = 0; i < d; i++) {
                        double acc = 0;
                        for (int s = 0; s <= t; s++) acc += sc[s] / sum * qkv[b][s][2 * C + hh * d + i];
                        y[hh * d + i] = acc;
                    }
                }
                lin(o, y, ow + (size_t)l * C * C, C, C);
                for (int c = 0; c < C; c++) x[b][t][c] += o[c];
            }
        for (int b = 0; b < RB; b++)
            for (int t = 0; t < RT; t++) {
                rms(hbuf, x[b][t], mn + l * C, C);
                lin(u, hbuf, up + (size_t)l * H * C, H, C);
                lin(g, hbuf, gt + (size_t)l * H * C, H, C);
                for (int k = 0; k < H; k++) a[k] = u[k] * g[k] / (1 + exp(-g[k]));
                lin(o, a, dn + (size_t)l * C * H, C, H);
                for (int c = 0; c < C; c++) x[b][t][c] += o[c];
            }
    }
    for (int b = 0; b < RB; b++)
        for (int t = 0; t < RT; t++) {
            rms(hbuf, x[b][t], nf, C);
            double lg[RVP], mx = -1e300, sum = 0;
            for (int v = 0; v < r->V; v++) {
                double s = 0;
                for (int c = 0; c < C; c++) s += hbuf[c] * wte[(size_t)v * C + c];
                lg[v] = s;
                if (s > mx) mx = s;
            }
            for (int v = 0; v < r->V; v++) sum += exp(lg[v] - mx);
            total += log(sum) + mx - lg[tg[b * RT + t]];
        }
    return total / (RB * RT);
}

/* One training step of the reference: returns the loss before the update. */
static double ref_step(struct ref *r, double *m, double *v, int t, const int *in, const int *tg,
                       double lr, double b1, double b2, double eps, double wd, double clip) {
    double loss = ref_loss(r, r->p, in, tg), h = 1e-3, nrm = 0;
    double *g = malloc(r->n * 8);
    for (size_t i = 0; i < r->n; i++) {
        double s = r->p[i];
        r->p[i] = s + h; double f1 = ref_loss(r, r->p, in, tg);
        r->p[i] = s - h; double f_1 = ref_loss(r, r->p, in, tg);
        r->p[i] = s + 2 * h; double f2 = ref_loss(r, r->p, in, tg);
        r->p[i] = s - 2 * h; double f_2 = ref_loss(r, r->p, in, tg);
        r->p[i] = s;
        g[i] = (8 * (f1 - f_1) - (f2 - f_2)) / (12 * h);
        nrm += g[i] * g[i];
    }
    nrm = sqrt(nrm);
    double scale = clip > 0 && nrm > clip ? clip / nrm : 1;
    for (int k = 0; k < 9; k++) {
        int decays = k == 0 || k == 2 || k == 3 || k == 5 || k == 6 || k == 7;
        for (size_t i = r->off[k]; i < r->off[k] + r->size[k]; i++) {
            double gi = g[i] * scale;
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            double mh = m[i] / (1 - pow(b1, t)), vh = v[i] / (1 - pow(b2, t));
            r->p[i] -= lr * (mh / (sqrt(vh) + eps) + (decays ? wd * r->p[i] : 0));
        }
    }
    free(g);
    return loss;
}

TEST(first_five_losses_match_an_independent_float64_model) {
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/llama.bin", harness_tmpdir());
    struct model_config c = {.L = RL, .C = RC, .V = RV, .Vp = RVP, .maxT = 8, .heads = {1, 2, 4}, .B = RB, .T = RT,
                             .arch = MODEL_ARCH_LLAMA, .H = RH, .rope_theta = 500};
    size_t n = model_num_params(&c);
    float *p = malloc(n * 4);
    model_init_params(&c, 11, p);
    for (size_t i = 0; i < n; i++) p[i] *= 3;   /* N(0, 0.06) */
    memset(p + RV * RC, 0, (RVP - RV) * RC * 4);
    ASSERT_EQ_INT(0, ckpt_write_model(path, &c, p, err, sizeof err));

    /* engine: model.init from the file */
    float *q = malloc(n * 4);
    ASSERT_EQ_INT(0, ckpt_read_model(path, &c, q, err, sizeof err));
    model *m = NULL;
    ASSERT_EQ_INT(0, model_cpu_ops.create(&c, -1, &m, err, sizeof err));
    ASSERT_EQ_INT(0, model_cpu_ops.set_params(m, q));
    struct adamw_params hp = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f};

    struct ref r;
    ref_load(&r, path);
    ASSERT_EQ_INT(n, r.n);
    double *rm = calloc(r.n, 8), *rv = calloc(r.n, 8);

    int in[RB * RT], tg[RB * RT];
    uint64_t s = 7;
    double worst = 0;
    for (int step = 1; step <= 5; step++) {
        for (int i = 0; i < RB * RT; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL; in[i] = (int)((s >> 33) % RV);
            s = s * 6364136223846793005ULL + 1442695040888963407ULL; tg[i] = (int)((s >> 33) % RV);
        }
        float le, gn;
        ASSERT_EQ_INT(0, model_cpu_ops.zero_grad(m));
        ASSERT_EQ_INT(0, model_cpu_ops.forward_backward(m, in, tg, RB, RT, 1.0f, &le));
        ASSERT_EQ_INT(0, model_cpu_ops.update(m, &hp, step, &gn));
        double lr_ = ref_step(&r, rm, rv, step, in, tg, hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay, hp.grad_clip);
        printf("step %d  engine loss %.8f  reference %.8f  |diff| %.2e  (engine grad norm %.5f)\n", step, le, lr_,
               fabs(le - lr_), gn);
        if (fabs(le - lr_) > worst) worst = fabs(le - lr_);
        if (fabs(le - lr_) > 1e-4) HFAIL("step %d: engine loss %.8f vs float64 reference %.8f (|diff| %.3g > 1e-4)", step, le, lr_, fabs(le - lr_));
    }
    printf("worst |diff| %.3g over 5 steps\n", worst);
    free(p); free(q); free(rm); free(rv); free(r.p);
    model_cpu_ops.free(m);
}
