/* bench/bench_step_cost.c — the CUDA engine's own count of one GPT-2 training step, kernel by kernel: the
 * floating-point operations each launch does and the fewest bytes it moves through device memory (each input
 * read once, each output written once, as the kernels in kernels/cuda lay them out: bf16 activations and weights, float32
 * gradients of the weights, master weights and moments), and from those an ESTIMATED H200 time — the larger of
 * FLOPs / 989 TFLOP/s (dense bf16, datasheet) and bytes / (4.8 TB/s x f), where f <= 1 is the share of the
 * bandwidth the kernel can draw by Little's law: f = min(1, bytes in flight on the chip / (4.8 TB/s x 600 ns)).
 * The bytes in flight are given only where a kernel's shape limits them (few blocks, narrow loads); elsewhere
 * f = 1. No GPU is involved: nothing here is measured. Launches are counted; at ~2.5 us each back to back without a
 * CUDA graph and ~1 us a kernel node when the step is one graph (both estimates) they are a separate line.
 *
 *   bench_step_cost [--B 16] [--T 1024] [--C 768] [--heads LIST] [--gelu-fusion] [--before] [--head-rows N]
 *                   [--no-graph] [--tflops 989] [--tbs 4.8]
 *
 * --tflops / --tbs replace the datasheet ceilings (KINDS.md records 769-798 TFLOP/s for a bf16 8192^3 cuBLAS product
 * on random data and 4.3 TB/s for a device-to-device copy on this workplace's H200s).
 *
 * --before counts the step as the engine ran it before issue 26 (one 2-byte load in flight per thread in the
 * bias backward, one float per thread in the gradient-norm loop, the LayerNorm partial sums in 2C/256 blocks);
 * --gelu-fusion the GELU forward and backward fused into the fc and fcproj matmuls' cuBLASLt epilogues
 * (PRISM_CUDA_GELU_FUSION=1). --head-rows N: the LM head in chunks of N rows (the engine's default: as many rows as
 * 128 MiB of bf16 logits hold, 1334 at Vp = 50304; 0 = all B*T rows at once, as before the chunked head): each chunk
 * reads wte again in the forward and the dinp product and reads and writes wte's float32 gradient once more.
 * --no-graph: launches as separate calls (before the graph-captured step). Prints a markdown table (one row per kernel kind, calls summed over the layers) and
 * "RESULT cost ..." with the totals.
 */
#include "model.h"
#include "bench_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double PEAK_FLOPS = 989e12, PEAK_BW = 4.8e12;   /* --tflops, --tbs: e.g. the rates measured on an H200 */
#define LATENCY 600e-9
#define LAUNCH_S 2.5e-6         /* a launch, back to back, no graph (estimate) */
#define GRAPH_NODE_S 1.0e-6     /* a kernel node of a replayed graph (estimate) */
#define SMS 132
#define MAXROW 64

struct row { const char *name; double calls, flops, bytes, inflight; };
static struct row rows[MAXROW];
static int nrows;

/* add CALLS launches of NAME, each FLOPS and BYTES; INFLIGHT bytes in flight chip-wide (0: saturating) */
static void add(const char *name, double calls, double flops, double bytes, double inflight) {
    for (int i = 0; i < nrows; i++)
        if (!strcmp(rows[i].name, name)) {
            rows[i].calls += calls; rows[i].flops += calls * flops; rows[i].bytes += calls * bytes;
            return;
        }
    if (nrows == MAXROW) { fprintf(stderr, "too many rows\n"); exit(1); }
    rows[nrows++] = (struct row){ name, calls, calls * flops, calls * bytes, inflight };
}

static double est_s(const struct row *r) {
    double f = r->inflight > 0 ? r->inflight / (PEAK_BW * LATENCY) : 1.0;
    if (f > 1) f = 1;
    double tf = r->flops / PEAK_FLOPS, tb = r->bytes / (PEAK_BW * f);
    return tf > tb ? tf : tb;
}

int main(int argc, char **argv) {
    int B = 16, T = 1024, C = 768, fusion = 0, before = 0, head_rows = -1, graph = 1;
    const char *sched = "12x12";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--gelu-fusion")) { fusion = 1; continue; }
        if (!strcmp(a, "--before")) { before = 1; continue; }
        if (!strcmp(a, "--no-graph")) { graph = 0; continue; }
        if (!v) { fprintf(stderr, "%s needs a value\n", a); return 2; }
        if (!strcmp(a, "--B")) B = atoi(v);
        else if (!strcmp(a, "--T")) T = atoi(v);
        else if (!strcmp(a, "--C")) C = atoi(v);
        else if (!strcmp(a, "--heads")) sched = v;
        else if (!strcmp(a, "--head-rows")) head_rows = atoi(v);
        else if (!strcmp(a, "--tflops")) PEAK_FLOPS = atof(v) * 1e12;
        else if (!strcmp(a, "--tbs")) PEAK_BW = atof(v) * 1e12;
        else { fprintf(stderr, "unknown option %s (usage: --B N --T N --C N --heads LIST --gelu-fusion --before --head-rows N --no-graph)\n", a); return 2; }
        i++;
    }
    struct model_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.C = C; cfg.V = 50257; cfg.Vp = 50304; cfg.maxT = 1024; cfg.B = B; cfg.T = T;
    cfg.L = bench_parse_heads(sched, cfg.heads, MODEL_MAX_LAYERS);
    if (B < 1 || T < 1 || C < 1 || cfg.L < 1 || !(PEAK_FLOPS > 0) || !(PEAK_BW > 0)) { fprintf(stderr, "bad sizes or --heads %s\n", sched); return 2; }
    const double X = 2, F = 4, N = (double)B * T, Cd = C, Vp = cfg.Vp, L = cfg.L;
    const double P = (double)model_num_params(&cfg);
    /* the LM head's chunks (kernels/cuda/model_cuda_mem.cu mc_head_rows: 128 MiB of logits by default) */
    if (head_rows < 0) head_rows = (int)((128.0 * 1048576) / (Vp * X));
    if (head_rows == 0 || head_rows > N) head_rows = (int)N;
    const double nc = ceil(N / head_rows);
    const double threads_chip = SMS * 2048.0;   /* resident threads at full occupancy */
    /* matmul out[N,OC] = in[N,K] W[OC,K]^T (+ bias): forward, and backward's dinp and dW (float32, +=) */
#define MM_FWD(name, K, OC, extra) add(name, 1, 2 * N * (K) * (OC), (N * (K) + (double)(K) * (OC) + N * (OC)) * X + (extra), 0)
#define MM_BWD(name, K, OC, extra) do { \
        add(name " dinp", 1, 2 * N * (K) * (OC), (N * (OC) + (double)(K) * (OC) + N * (K)) * X + (extra), 0); \
        add(name " dW", 1, 2 * N * (K) * (OC), (N * (OC) + N * (K)) * X + 2 * F * (double)(K) * (OC), 0); \
    } while (0)
    /* dbias = column sums of dout[N,OC]: before, 2 bytes in flight a thread (grid 24..96 x 64 blocks of 256);
     * now 4 x 16 bytes a thread over ~4 blocks an SM */
#define BIAS(OC) add("bias backward", 1, N * (OC), N * (OC) * X + 2 * F * (OC), \
                     before ? (threads_chip < ((OC) / 32.0) * 64 * 256 ? threads_chip : ((OC) / 32.0) * 64 * 256) * X \
                            : (double)SMS * 4 * 256 * 4 * 16)
    const double G = 2.0 * SMS;   /* LayerNorm backward blocks (vector kernels at C <= 768: 2 an SM) */
#define LN_BWD() do { \
        add("layernorm backward", 1, 10 * N * Cd, 4 * N * Cd * X + 8 * N + G * 2 * Cd * F, 0); \
        add("layernorm backward partial sums", 1, G * 2 * Cd, G * 2 * Cd * F + 2 * 2 * Cd * F, \
            before ? (2 * Cd) * 4 * F : (2 * Cd / 32) * 1024 * 4 * F); \
    } while (0)
    /* ---- forward ---- */
    add("encoder forward", 1, N * Cd, 2 * N * Cd * X + T * Cd * X + 4 * N, 0);
    add("layernorm forward", 1, 8 * N * Cd, 2 * N * Cd * X + 8 * N, 0);
    for (int l = 0; l < cfg.L; l++) {
        double h = cfg.heads[l];
        MM_FWD("matmul qkv", Cd, 3 * Cd, 3 * Cd * X);
        add("flash attention forward", 1, 2.0 * B * T * (double)T * Cd, (3 * N * Cd + N * Cd) * X + N * h * F, 0);
        MM_FWD("matmul attproj", Cd, Cd, Cd * X);
        add("residual + layernorm forward", 2, 10 * N * Cd, 4 * N * Cd * X + 8 * N, 0);
        if (fusion) MM_FWD("matmul fc (+GELU epilogue)", Cd, 4 * Cd, 4 * Cd * X + N * 4 * Cd * X);
        else {
            MM_FWD("matmul fc", Cd, 4 * Cd, 4 * Cd * X);
            add("gelu forward", 1, 20 * N * 4 * Cd, 2 * N * 4 * Cd * X, 0);
        }
        MM_FWD("matmul fcproj", 4 * Cd, Cd, Cd * X);
    }
    /* the head, nc chunks of rows: wte read by each chunk's forward and dinp, wte's gradient read and written by
     * each chunk's dW (the totals over the chunks, as nc launches each) */
    add("matmul logits", nc, 2 * N * Cd * Vp / nc, ((N * Cd + N * Vp) * X + nc * Cd * Vp * X) / nc, 0);
    add("fused classifier", nc, 5 * N * Vp / nc, (2 * N * Vp * X + 8 * N) / nc, 0);
    add("matmul logits dinp", nc, 2 * N * Cd * Vp / nc, ((N * Vp + N * Cd) * X + nc * Cd * Vp * X) / nc, 0);
    add("matmul logits dW", nc, 2 * N * Cd * Vp / nc, ((N * Vp + N * Cd) * X + nc * 2 * F * Cd * Vp) / nc, 0);
    /* ---- backward ---- */
    add("memset dres", 1, 0, N * Cd * X, 0);
    LN_BWD();
    for (int l = cfg.L - 1; l >= 0; l--) {
        double h = cfg.heads[l];
        if (fusion) {
            add("matmul fcproj dinp (+DGELU epilogue)", 1, 2 * N * 4 * Cd * Cd,
                (N * Cd + 4 * Cd * Cd + 2 * N * 4 * Cd) * X, 0);
            add("matmul fcproj dW", 1, 2 * N * 4 * Cd * Cd, (N * Cd + N * 4 * Cd) * X + 2 * F * 4 * Cd * Cd, 0);
        } else {
            MM_BWD("matmul fcproj", 4 * Cd, Cd, 0);
            add("gelu backward", 1, 30 * N * 4 * Cd, 3 * N * 4 * Cd * X, 0);
        }
        BIAS(Cd);
        MM_BWD("matmul fc", Cd, 4 * Cd, 0);
        BIAS(4 * Cd);
        LN_BWD();
        MM_BWD("matmul attproj", Cd, Cd, 0);
        BIAS(Cd);
        add("flash attention delta", 1, 2 * N * Cd, 2 * N * Cd * X + N * h * F, 0);
        add("flash attention backward (dk,dv + dq)", 1, 5.0 * B * T * (double)T * Cd,
            (3 * N * Cd + N * Cd + 3 * N * Cd) * X + 2 * N * h * F, 0);
        MM_BWD("matmul qkv", Cd, 3 * Cd, 0);
        BIAS(3 * Cd);
        LN_BWD();
    }
    add("encoder backward", 2, N * Cd, N * Cd * X + N * Cd * 2 * F, 0);
    /* ---- update: the norm reads the gradients, AdamW reads g, m, v, master and writes m, v, master, the bf16
     * copy and the zeroed gradient; before, one float in flight a thread of 1024 x 512 */
    add("grad norm", 1, 2 * P, P * F, before ? (threads_chip < 1024 * 512.0 ? threads_chip : 1024 * 512.0) * F : 0);
    add("adamw (all tensors, one launch)", 1, 15 * P, P * (4 * F + 3 * F + X + F), 0);

    double tf = 0, tb = 0, ts = 0, calls = 0;
    printf("GPT-2 step, B=%d T=%d C=%d heads %s, bf16%s%s, LM head in %.0f chunk(s) of %d rows (logits buffer %.0f MiB), "
           "%s: ESTIMATE from the ceilings %.0f TFLOP/s bf16 dense and %.2f TB/s, not a measurement\n\n", B, T, C, sched,
           fusion ? ", GELU in the epilogues" : "", before ? ", as before issue 26" : "", nc, head_rows,
           head_rows * Vp * X / 1048576, graph ? "one CUDA graph" : "separate launches", PEAK_FLOPS / 1e12, PEAK_BW / 1e12);
    printf("| kernel | launches | GFLOP | GB moved | bytes in flight | est. ms | bound |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        double s = est_s(r);
        char infl[32] = "saturating";
        if (r->inflight > 0) snprintf(infl, sizeof infl, "%.2f MB", r->inflight / 1e6);
        printf("| %s | %.0f | %.1f | %.3f | %s | %.3f | %s |\n", r->name, r->calls, r->flops / 1e9, r->bytes / 1e9, infl,
               1e3 * s, r->flops / PEAK_FLOPS >= s * 0.999 ? "FLOPs" : "bytes");
        tf += r->flops; tb += r->bytes; ts += s; calls += r->calls;
    }
    printf("| **total** | %.0f | %.1f | %.2f | | %.2f | |\n", calls, tf / 1e9, tb / 1e9, 1e3 * ts);
    const double per = graph ? GRAPH_NODE_S : LAUNCH_S, lo = calls * per;
    printf("\nlaunch overhead at %.1f us a %s (estimate): %.2f ms; estimated step %.2f ms, %.0f tokens/s "
           "(model_flops_per_token counts %.1f GFLOP a step); logits buffer %.0f MiB (%.0f MiB unchunked)\n", per * 1e6,
           graph ? "graph node" : "launch", 1e3 * lo, 1e3 * (ts + lo), N / (ts + lo), model_flops_per_token(&cfg, T) * N / 1e9,
           head_rows * Vp * X / 1048576, N * Vp * X / 1048576);
    printf("RESULT cost B=%d T=%d C=%d L=%d fusion=%d before=%d head_rows=%d graph=%d tflops=%.0f tbs=%.2f gflop=%.1f gb=%.2f "
           "est_ms=%.3f launches=%.0f est_ms_with_launch=%.3f logits_mib=%.0f\n", B, T, C, (int)L, fusion, before, head_rows,
           graph, PEAK_FLOPS / 1e12, PEAK_BW / 1e12, tf / 1e9, tb / 1e9, 1e3 * ts, calls, 1e3 * (ts + lo),
           head_rows * Vp * X / 1048576);
    return 0;
}
