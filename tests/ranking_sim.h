/* tests/ranking_sim.h — simulated sweeps through the ranking module (no training), shared by
 * tests/unit/test_ranking.c, tests/unit/test_ranking_sim.c and bench/bench_ranking_sim.c (issue #37, "the ranking
 * on real sweeps"). Header-only (static functions): each test and bench is one program.
 *
 * The generator. SplitMix64 + Box–Muller (sim_unif, sim_gauss), deterministic for a seed; sim_t3 is Student's t
 * with 3 df scaled to unit sd (t3 has variance 3).
 * A sweep. sim_sweep draws y_ij = 3.36 + eff[i] + β_j + ε_ij for K schedules × n seeds (schedule 0 = the uniform
 * baseline), β_j ~ N(0, seed_sd²), ε_ij ~ run_sd·scale[i]·(N(0,1) or t3), skipping the cells miss[] marks; every
 * observation gets a distinct job_id (1 + i·n + j). The draw order (seed effects, then the cells row by row) is
 * the one test_ranking.c's Monte Carlo cases were tuned with, so their figures do not move.
 * A ranking. sim_rank fills rows[] the way leaderboard.c does before ranking_compute (ids = index, baseline 0,
 * seeds_done, provisional, mean) and calls it on one level; sim_release frees what ranking_compute allocated.
 *
 * The robustness conditions (docs/STATISTICS.md, "Real sweeps are not clean"): 56 schedules × 3 seeds, run sd
 * 0.002, seed sd 0.02, schedule SIM_TARGET 0.0144 better than uniform and the rest equal to it (the "effect" arm),
 * and the same condition with no effect anywhere (the "null" arm, where every schedule is truly best):
 *   SIM_GAUSS      clean Gaussian noise (today's assumption)
 *   SIM_MISSING    one of the best's 3 jobs absent (the null arm: one of SIM_TARGET's)
 *   SIM_DIVERGED   one job at a random cell (baseline and best included) +1.0 nats
 *   SIM_NOISY      a random quarter of the schedules (14, baseline and best may be among them) with 3× the run sd
 *   SIM_T3         t(3) noise scaled to sd 0.002
 *   SIM_SPREAD     the other 54 spread uniformly over [−0.004, +0.012] around uniform (no null arm)
 * sim_condition runs reps sweeps of each arm from a fixed seed and counts, per arm: "found" (SIM_TARGET
 * significant vs uniform after Holm with Δ < 0), SIM_TARGET at rank 1 and in the best group, the best group's size,
 * any schedule significant vs uniform (the null arm's family-wise error), any ranked schedule shown worse
 * (best == 0: the null arm's coverage failure), any job screened other than an injected one (false alarms), the
 * injected diverged job named in ranking.screened, the ranking falling back to paired tests, and the same two
 * screen counts from ranking_screen called alone on the sweep (before ranking_compute).
 */
#ifndef PRISM_RANKING_SIM_H
#define PRISM_RANKING_SIM_H
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ranking.h"

/* ---- a deterministic normal generator (SplitMix64 + Box–Muller) ---------------------------------- */
typedef struct { unsigned long long s; int have; double next; } sim_rng;
static __attribute__((unused)) double sim_unif(sim_rng *g) {
    unsigned long long z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((z >> 11) + 0.5) / 9007199254740992.0;
}
static __attribute__((unused)) double sim_gauss(sim_rng *g) {
    if (g->have) { g->have = 0; return g->next; }
    double u1 = sim_unif(g), u2 = sim_unif(g), r = sqrt(-2 * log(u1));
    g->next = r * sin(2 * M_PI * u2);
    g->have = 1;
    return r * cos(2 * M_PI * u2);
}
/* Student's t with 3 df, scaled to unit sd */
static __attribute__((unused)) double sim_t3(sim_rng *g) {
    double z = sim_gauss(g), c = 0;
    for (int k = 0; k < 3; k++) { double e = sim_gauss(g); c += e * e; }
    return z / sqrt(c / 3) / sqrt(3.0);
}
/* 0 ≤ sim_below(g, n) < n */
static __attribute__((unused)) int sim_below(sim_rng *g, int n) {
    int k = (int)(sim_unif(g) * n);
    return k < n ? k : n - 1;
}

/* ---- a simulated sweep ----------------------------------------------------------------------------- */
typedef struct sim_design {
    int K, n;                      /* schedules (0 = uniform) × seeds (n ≤ 64) */
    const double *eff;             /* (K) schedule effects, NULL: none */
    double run_sd, seed_sd;
    const double *scale;           /* (K) multiplier of run_sd, NULL: 1 */
    int t3;                        /* t(3) run noise (scaled to run_sd) instead of Gaussian */
    const unsigned char *miss;     /* (K × n) cells left out, NULL: none */
} sim_design;

/* fills obs[] (room for K × n) and returns how many */
static __attribute__((unused)) int sim_sweep(sim_rng *g, const sim_design *d, ranking_obs *obs) {
    double be[64];
    for (int j = 0; j < d->n; j++) be[j] = d->seed_sd * sim_gauss(g);
    int m = 0;
    for (int i = 0; i < d->K; i++)
        for (int j = 0; j < d->n; j++) {
            if (d->miss && d->miss[i * d->n + j]) continue;
            double e = d->t3 ? sim_t3(g) : sim_gauss(g);
            obs[m] = (ranking_obs){ .sched = i, .seed = 1000 + j, .job_id = 1 + (long long)i * d->n + j };
            obs[m].y = 3.36 + (d->eff ? d->eff[i] : 0) + be[j] + d->run_sd * (d->scale ? d->scale[i] : 1) * e;
            m++;
        }
    return m;
}

/* ---- the ranking of a simulated sweep, as the leaderboard computes it ------------------------------- */
/* rk and rows[K] are the caller's; returns ranking_compute's status (0, -1 no memory) */
static __attribute__((unused)) int sim_rank(ranking *rk, ranking_row *rows, int K, int nseeds, ranking_obs *obs,
                                            int nobs) {
    memset(rk, 0, sizeof *rk);
    memset(rows, 0, (size_t)K * sizeof *rows);
    for (int i = 0; i < K; i++) {
        rows[i].schedule_id = i;
        rows[i].ord = i;
        rows[i].is_baseline = i == 0;
        rows[i].seeds_total = nseeds;
        rows[i].mean = NAN;
    }
    double *sum = calloc((size_t)K, sizeof *sum);
    if (!sum) return -1;
    for (int k = 0; k < nobs; k++) { rows[obs[k].sched].seeds_done++; sum[obs[k].sched] += obs[k].y; }
    for (int i = 0; i < K; i++) {
        rows[i].provisional = rows[i].seeds_done < nseeds;
        if (rows[i].seeds_done) rows[i].mean = sum[i] / rows[i].seeds_done;
    }
    free(sum);
    rk->rows = rows;
    rk->nrows = K;
    rk->seeds = nseeds;
    rk->baseline_id = 0;
    ranking_obs *levels[1] = { obs };
    int n[1] = { nobs };
    return ranking_compute(rk, levels, n, 1, 0);
}
/* what ranking_compute allocated (the rows are the caller's) */
static __attribute__((unused)) void sim_release(ranking *rk) {
    ranking_fit_release(&rk->fit);
    free(rk->screened);
    rk->screened = NULL;
    rk->nscreened = 0;
}

/* ---- the robustness conditions ---------------------------------------------------------------------- */
enum { SIM_K = 56, SIM_N = 3, SIM_TARGET = 17, SIM_NMAX = 16 };
/* seeds per schedule of the conditions (SIM_N; the bench sets it from MCSEEDS to show what more seeds buy) */
static int sim_seeds = SIM_N;
#define SIM_RUN_SD 0.002
#define SIM_SEED_SD 0.02
#define SIM_EFFECT 0.0144
#define SIM_DIVERGE 1.0

typedef enum { SIM_GAUSS, SIM_MISSING, SIM_DIVERGED, SIM_NOISY, SIM_T3, SIM_SPREAD, SIM_NCOND } sim_cond;
static __attribute__((unused)) const char *const sim_cond_name[SIM_NCOND] = {
    "Gaussian (clean)", "missing seed on the best", "one diverged run (+1.0)", "a quarter 3x noisier", "t(3) noise",
    "spread of effects",
};

typedef struct sim_arm {
    int reps;
    int found;                     /* SIM_TARGET significant vs uniform (Holm), Δ < 0 */
    int rank1, in_best;            /* SIM_TARGET at rank 1; in the best group */
    int any_sig;                   /* any schedule significant vs uniform */
    int shown_worse;               /* any ranked schedule with best == 0 */
    int false_screen;              /* any job screened other than an injected one */
    int diverged_named;            /* the injected diverged job in ranking.screened */
    int paired;                    /* the ranking fell back to paired tests (method paired) */
    int scr_named, scr_other;      /* ranking_screen called alone: the diverged job flagged; any other flagged */
    int failed;                    /* ranking_compute returned non-zero */
    double size_sum;               /* best-group size */
    double screened_sum;           /* jobs screened */
    double secs;
} sim_arm;

typedef struct sim_result { sim_cond cond; sim_arm effect, null; int has_null; } sim_result;

static double sim_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* one arm: reps sweeps of condition c with (effect = 1) or without SIM_TARGET's effect */
static __attribute__((unused)) void sim_arm_run(sim_cond c, int effect, int reps, unsigned long long seed, sim_arm *o) {
    enum { KN = SIM_K * SIM_NMAX };
    const int N = sim_seeds >= 2 && sim_seeds <= SIM_NMAX ? sim_seeds : SIM_N;
    sim_rng g = { seed, 0, 0 };
    ranking_obs obs[KN];
    ranking_row rows[SIM_K];
    double eff[SIM_K], scale[SIM_K];
    unsigned char miss[KN];
    memset(o, 0, sizeof *o);
    o->reps = reps;
    double t0 = sim_now();
    for (int r = 0; r < reps; r++) {
        memset(eff, 0, sizeof eff);
        memset(miss, 0, sizeof miss);
        for (int i = 0; i < SIM_K; i++) scale[i] = 1;
        if (c == SIM_SPREAD)
            for (int i = 1; i < SIM_K; i++) eff[i] = -0.004 + 0.016 * sim_unif(&g);
        if (effect) eff[SIM_TARGET] = -SIM_EFFECT;
        if (c == SIM_MISSING) miss[SIM_TARGET * N + sim_below(&g, N)] = 1;
        if (c == SIM_NOISY) {   /* a random quarter: the first 14 of a partial Fisher–Yates shuffle */
            int idx[SIM_K];
            for (int i = 0; i < SIM_K; i++) idx[i] = i;
            for (int i = 0; i < SIM_K / 4; i++) {
                int k = i + sim_below(&g, SIM_K - i), t = idx[i];
                idx[i] = idx[k];
                idx[k] = t;
                scale[idx[i]] = 3;
            }
        }
        sim_design d = { SIM_K, N, eff, SIM_RUN_SD, SIM_SEED_SD, scale, c == SIM_T3, miss };
        int m = sim_sweep(&g, &d, obs);
        long long diverged = -1;
        if (c == SIM_DIVERGED) {
            int k = sim_below(&g, m);
            obs[k].y += SIM_DIVERGE;
            diverged = obs[k].job_id;
        }
        unsigned char flag[KN];
        if (ranking_screen(obs, m, SIM_K, flag, NULL, NULL) < 0) { o->failed++; continue; }
        int fnamed = 0, fother = 0;
        for (int k = 0; k < m; k++) if (flag[k]) { if (obs[k].job_id == diverged) fnamed = 1; else fother = 1; }
        o->scr_named += fnamed;
        o->scr_other += fother;
        ranking rk;
        if (sim_rank(&rk, rows, SIM_K, N, obs, m) != 0) { o->failed++; sim_release(&rk); continue; }
        int sig = 0, worse = 0, size = 0, named = 0, other = 0;
        for (int i = 0; i < rk.nrows; i++) {
            const ranking_row *x = &rk.rows[i];
            sig |= x->cmp.significant;
            if (x->rank > 0 && x->best == 0) worse = 1;
            if (x->best == 1) size++;
            if (x->schedule_id == SIM_TARGET) {
                o->found += x->cmp.significant && x->cmp.mean < 0;
                o->rank1 += x->rank == 1;
                o->in_best += x->best == 1;
            }
        }
        for (int k = 0; k < rk.nscreened; k++) {
            if (rk.screened[k].job_id == diverged) named = 1;
            else other = 1;
        }
        o->paired += rk.method == RANKING_PAIRED;
        o->any_sig += sig;
        o->shown_worse += worse;
        o->size_sum += size;
        o->screened_sum += rk.nscreened;
        o->diverged_named += named;
        o->false_screen += other;
        sim_release(&rk);
    }
    o->secs = sim_now() - t0;
}

/* both arms of condition c (SIM_SPREAD has no null arm); the arms' streams are seeded apart */
static __attribute__((unused)) void sim_condition(sim_cond c, int reps, unsigned long long seed, sim_result *out) {
    memset(out, 0, sizeof *out);
    out->cond = c;
    sim_arm_run(c, 1, reps, seed * 1000003ULL + 2 * c, &out->effect);
    out->has_null = c != SIM_SPREAD;
    if (out->has_null) sim_arm_run(c, 0, reps, seed * 1000003ULL + 2 * c + 1, &out->null);
}

/* Monte Carlo error: a rate's estimate p̂ ± 3 standard errors of a rate p over reps */
static __attribute__((unused)) double sim_mc3(double p, int reps) { return 3 * sqrt(p * (1 - p) / reps); }

/* ---- the targets, one line each (the bench prints them against the point estimates, the test asserts
 *      them with 3 Monte Carlo standard errors of slack; a bound of 1 is exact) ----------------------------- */
typedef enum { SIM_M_FOUND, SIM_M_RANK1, SIM_M_NAMED, SIM_M_FWER, SIM_M_COVER, SIM_M_FALSE_SCREEN } sim_metric;
typedef struct sim_target { sim_cond cond; sim_metric metric; int at_least; double bound; const char *what; } sim_target;
static __attribute__((unused)) const sim_target sim_targets[] = {
    { SIM_MISSING, SIM_M_RANK1, 1, 0.95, "the best at rank 1" },
    { SIM_DIVERGED, SIM_M_FOUND, 1, 0.90, "effect found" },
    { SIM_DIVERGED, SIM_M_NAMED, 1, 1.00, "the diverged job in ranking.screened" },
    { SIM_NOISY, SIM_M_FOUND, 1, 0.80, "effect found" },
    { SIM_T3, SIM_M_FOUND, 1, 0.85, "effect found" },
    { SIM_T3, SIM_M_FWER, 0, 0.06, "null: any significant vs uniform" },
    { SIM_T3, SIM_M_COVER, 1, 0.93, "null: best group keeps every schedule" },
    { SIM_GAUSS, SIM_M_FOUND, 1, 0.99, "effect found" },
    { SIM_GAUSS, SIM_M_FWER, 0, 0.05, "null: any significant vs uniform" },
    { SIM_GAUSS, SIM_M_COVER, 1, 0.95, "null: best group keeps every schedule" },
};
enum { SIM_NTARGETS = sizeof sim_targets / sizeof sim_targets[0] };

/* the rate a metric names: the effect arm for found / rank 1 / named, the null arm for the rest */
static __attribute__((unused)) double sim_rate(const sim_result *r, sim_metric m) {
    const sim_arm *e = &r->effect, *z = &r->null;
    switch (m) {
    case SIM_M_FOUND: return (double)e->found / e->reps;
    case SIM_M_RANK1: return (double)e->rank1 / e->reps;
    case SIM_M_NAMED: return (double)e->diverged_named / e->reps;
    case SIM_M_FWER: return r->has_null ? (double)z->any_sig / z->reps : NAN;
    case SIM_M_COVER: return r->has_null ? 1 - (double)z->shown_worse / z->reps : NAN;
    case SIM_M_FALSE_SCREEN: return r->has_null ? (double)z->false_screen / z->reps : NAN;
    }
    return NAN;
}
/* whether r meets target t: exactly (slack 0, the bench) or within 3 Monte Carlo standard errors (the test) */
static __attribute__((unused)) int sim_meets(const sim_result *r, const sim_target *t, int slack) {
    double v = sim_rate(r, t->metric), reps = t->metric <= SIM_M_NAMED ? r->effect.reps : r->null.reps;
    double s = slack ? sim_mc3(t->bound, (int)reps) : 0;
    return t->at_least ? v >= t->bound - s : v <= t->bound + s;
}
#endif
