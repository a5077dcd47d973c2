/* bench/bench_search_sim.c — the surrogate search against uniform random search on simulated landscapes (issue #38;
 * tests/search_sim.h): paper-like effects (the valid set spans 0.03, run sd 0.002, seed sd 0.02, 3 seeds per
 * schedule, estimates from the real blocked model), a smooth additive truth and a rough one with interactions, at
 * L=12, d=768 (the 53-schedule grid) and L=36, d=1280, max_block 0 (3,610 schedules). At equal budgets (10/20/30%
 * of the grid at L=12; 50/100/150 schedules at L=36) it reports the true regret of the chosen schedule and
 * P(chosen is in the true top 1%), with the Monte Carlo SE of the rates. Chosen: "est" = the lowest blocked-model
 * estimate among the trained (both methods); "pm" = the lowest surrogate posterior mean among the trained (the
 * surrogate's shrunken estimate; the same trained set as "est"). The L=36 goal (top 1% in ≥ 80% of
 * repetitions with ≤ 150 schedules, ahead of random at every budget) is marked ✓/✗ per choice rule. One markdown
 * table.
 *
 *   SURR_REPS=30      repetitions per landscape (each a new landscape, sweep noise and search seed)
 *   SURR_FEATURES=0   surrogate features: 0 the default (3), 1 log head dims, 2 transition depths, 3 both (surrogate.h)
 *   SURR_KERNEL=0     0 Matérn-5/2, 1 squared exponential
 *   SURR_SCEN=0,1,2,3 which of (L12 smooth, L12 rough, L36 smooth, L36 rough)
 *   SURR_INIT, SURR_BATCH   initial design and batch at L=36 (default 10, 10; L=12 uses 3, 2)
 * Exit 0 whether or not the goal is met (the figures are the result).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "search_sim.h"

#define SURR_DELTA 0.001   /* the δ of the outlook's P(beat) */

static int envi(const char *k, int d) { return getenv(k) ? atoi(getenv(k)) : d; }

int main(void) {
    int reps = envi("SURR_REPS", 30), feat = envi("SURR_FEATURES", 0), kern = envi("SURR_KERNEL", 0);
    int init36 = envi("SURR_INIT", 10), batch36 = envi("SURR_BATCH", 10);
    int run[4] = { 1, 1, 1, 1 };
    if (getenv("SURR_SCEN")) {
        memset(run, 0, sizeof run);
        for (const char *p = getenv("SURR_SCEN"); *p; p++) if (*p >= '0' && *p <= '3') run[*p - '0'] = 1;
    }
    if (reps < 1) { fprintf(stderr, "SURR_REPS must be ≥ 1\n"); return 1; }
    printf("surrogate search vs uniform random: %d repetitions per landscape, features %d, kernel %s, "
           "run sd %g, seed sd %g, %d seeds, range %g\n\n", reps, feat, kern ? "SE" : "Matérn-5/2", SS_RUN_SD,
           SS_SEED_SD, SS_SEEDS, SS_RANGE);
    printf("| landscape | L (grid) | budget | regret surrogate est (mean, p90) | regret surrogate pm | "
           "regret random (mean, p90) | P(top 1%%) surrogate est | P(top 1%%) surrogate pm | P(top 1%%) random | "
           "best-vs-2nd gap (median) | s/rep |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    int goal_ok[2] = { 1, 1 }, goal_seen = 0;
    double pb_pred[4] = { 0 }, pb_true[4] = { 0 };
    for (int sc = 0; sc < 4; sc++) {
        if (!run[sc]) continue;
        int big = sc >= 2, kind = sc % 2;
        schedule_rules r;
        schedule_rules_default(&r);
        if (big) { r.L = 36; r.d_model = 1280; r.h_base = 0; r.max_block = 0; }
        ss_space s;
        if (ss_space_init(&s, &r) != 0) { fprintf(stderr, "space\n"); return 1; }
        int ck[3], nck = 3, M = big ? init36 : 3, K = big ? batch36 : 2;
        if (big) { ck[0] = 50; ck[1] = 100; ck[2] = 150; }
        else for (int c = 0; c < 3; c++) ck[c] = (int)lround(s.n * 0.1 * (c + 1));
        double *truth = malloc((size_t)s.n * sizeof *truth), *gaps = malloc((size_t)reps * sizeof *gaps);
        double *rs = calloc((size_t)reps * nck, sizeof *rs), *rr = calloc((size_t)reps * nck, sizeof *rr),
               *rp = calloc((size_t)reps * nck, sizeof *rp);
        int ts[3] = { 0 }, tr[3] = { 0 }, tp[3] = { 0 };
        double t0 = (double)clock() / CLOCKS_PER_SEC;
        for (int rep = 0; rep < reps; rep++) {
            uint64_t seed = 1000003ULL * (sc + 1) + rep;
            ss_landscape(&s, kind, seed, truth);
            double tmin = ss_min(truth, s.n), t2 = INFINITY;
            for (int i = 0; i < s.n; i++) if (truth[i] > tmin && truth[i] < t2) t2 = truth[i];
            gaps[rep] = t2 - tmin;
            ss_sweep w;
            ss_sweep_init(&w, &s, truth, seed);
            surrogate_opts o = { .features = feat, .kernel = kern, .seed = seed, .delta = SURR_DELTA };
            int chosen[3], cpm[3], *trained = malloc((size_t)ck[nck - 1] * sizeof *trained);
            surrogate_outlook lk;
            if (!trained || ss_search_surrogate(&w, M, K, ck, nck, &o, chosen, cpm, trained, &lk) != 0) {
                fprintf(stderr, "search failed\n");
                return 1;
            }
            /* the event P(beat) is about, in truth: some untrained schedule below the best trained by more than δ */
            double btr = INFINITY, bun = INFINITY;
            unsigned char *is_tr = calloc((size_t)s.n, 1);
            for (int i = 0; i < ck[nck - 1] && is_tr; i++) is_tr[trained[i]] = 1;
            for (int i = 0; i < s.n && is_tr; i++) {
                if (is_tr[i]) btr = fmin(btr, truth[i]); else bun = fmin(bun, truth[i]);
            }
            pb_pred[sc] += lk.p_beat / reps;
            pb_true[sc] += (double)(bun < btr - SURR_DELTA) / reps;
            free(is_tr); free(trained);
            for (int c = 0; c < nck; c++) {
                rs[c * reps + rep] = truth[chosen[c]] - tmin;
                ts[c] += ss_top1(&s, truth, chosen[c]);
                rp[c * reps + rep] = truth[cpm[c]] - tmin;
                tp[c] += ss_top1(&s, truth, cpm[c]);
                int rnd = ss_search_random(&w, ck[c], seed * 7 + c, NULL);
                if (rnd < 0) { fprintf(stderr, "random failed\n"); return 1; }
                rr[c * reps + rep] = truth[rnd] - tmin;
                tr[c] += ss_top1(&s, truth, rnd);
            }
        }
        double secs = ((double)clock() / CLOCKS_PER_SEC - t0) / reps;
        qsort(gaps, reps, sizeof *gaps, cmp_double_ss);
        for (int c = 0; c < nck; c++) {
            double ms = 0, mr = 0, mp = 0;
            for (int k = 0; k < reps; k++) {
                ms += rs[c * reps + k] / reps; mr += rr[c * reps + k] / reps; mp += rp[c * reps + k] / reps;
            }
            qsort(rs + c * reps, reps, sizeof *rs, cmp_double_ss);
            qsort(rr + c * reps, reps, sizeof *rr, cmp_double_ss);
            qsort(rp + c * reps, reps, sizeof *rp, cmp_double_ss);
            int p90 = (int)(0.9 * (reps - 1));
            double ps = (double)ts[c] / reps, pr = (double)tr[c] / reps, pp = (double)tp[c] / reps;
            char bud[32];
            if (big) snprintf(bud, sizeof bud, "%d", ck[c]);
            else snprintf(bud, sizeof bud, "%d (%d%%)", ck[c], 10 * (c + 1));
            printf("| %s | %d (%d) | %s | %.4f, %.4f | %.4f, %.4f | %.4f, %.4f | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f "
                   "| %.4f | %.2f |\n", kind ? "rough" : "smooth", s.L, s.n, bud, ms, rs[c * reps + p90], mp,
                   rp[c * reps + p90], mr, rr[c * reps + p90], ps, sqrt(ps * (1 - ps) / reps), pp,
                   sqrt(pp * (1 - pp) / reps), pr, sqrt(pr * (1 - pr) / reps), gaps[reps / 2], secs);
            if (big) {
                goal_seen = 1;
                if (ps < pr || (c == nck - 1 && ps < 0.8)) goal_ok[0] = 0;
                if (pp < pr || (c == nck - 1 && pp < 0.8)) goal_ok[1] = 0;
            }
        }
        fflush(stdout);
        free(truth); free(gaps); free(rs); free(rr); free(rp);
        ss_space_free(&s);
    }
    printf("\nP(some untrained schedule beats the best trained by more than δ = %g) at the largest budget, the model's\n"
           "mean over repetitions against the frequency of that event in truth:\n\n| landscape | L | predicted | true |\n"
           "|---|---|---|---|\n", SURR_DELTA);
    for (int sc = 0; sc < 4; sc++)
        if (run[sc]) printf("| %s | %d | %.2f | %.2f |\n", sc % 2 ? "rough" : "smooth", sc >= 2 ? 36 : 12, pb_pred[sc], pb_true[sc]);
    if (goal_seen)
        printf("\nL=36 goal (top 1%% in ≥ 80%% at 150, P(top 1%%) ≥ random at every budget): est %s, pm %s\n",
               goal_ok[0] ? "✓" : "✗", goal_ok[1] ? "✓" : "✗");
    return 0;
}
