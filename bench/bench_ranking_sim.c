/* bench/bench_ranking_sim.c — the ranking on real sweeps (issue #37): the robustness simulation through the ranking
 * module itself. Each condition of tests/ranking_sim.h (56 schedules × 3 seeds, run sd 0.002, seed sd 0.02, one
 * schedule 0.0144 better than uniform; clean, a missing seed on the best, one diverged run, a quarter of the
 * schedules 3× noisier, t(3) noise, a spread of effects) is simulated MCREPS times with and without the effect,
 * and every sweep is ranked by ranking_compute exactly as the leaderboard ranks it. Prints one markdown table
 * (the rates, with the Monte Carlo standard error of a rate at the end) and the targets, each ✓ or ✗ on
 * the point estimate. The same code with fewer sweeps is tests/unit/test_ranking_sim.c, in `make check`.
 *
 *   bench_ranking_sim            MCREPS (default 1000 sweeps per arm), MCSEED (default 1) override; MCCOND=3,4 runs
 *                                only those conditions (sim_cond's order, from 0) and their targets;
 *                                MCSEEDS=5 seeds per schedule instead of 3 (2..16)
 * Exit 0 whether or not a target is met (the figures are the result; the test asserts them).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ranking_sim.h"

static const char *pct(char *buf, double v) {
    if (isnan(v)) snprintf(buf, 48, "—");
    else snprintf(buf, 48, "%.3f", v);
    return buf;
}

int main(void) {
    int reps = getenv("MCREPS") ? atoi(getenv("MCREPS")) : 1000;
    unsigned long long seed = getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) : 1;
    if (reps < 1) { fprintf(stderr, "MCREPS must be ≥ 1\n"); return 1; }
    if (getenv("MCSEEDS")) sim_seeds = atoi(getenv("MCSEEDS"));
    if (sim_seeds < 2 || sim_seeds > SIM_NMAX) { fprintf(stderr, "MCSEEDS must be 2..%d\n", SIM_NMAX); return 1; }
    int run[SIM_NCOND];
    for (int c = 0; c < SIM_NCOND; c++) run[c] = getenv("MCCOND") == NULL;
    for (const char *p = getenv("MCCOND"); p && *p;) {
        char *end;
        long c = strtol(p, &end, 10);
        if (end == p || c < 0 || c >= SIM_NCOND) { fprintf(stderr, "MCCOND: conditions 0..%d, comma-separated\n", SIM_NCOND - 1); return 1; }
        run[c] = 1;
        p = *end == ',' ? end + 1 : end;
    }
    printf("ranking robustness: %d × %d, run sd %g, seed sd %g, schedule %d %.4f better; %d sweeps per arm, MCSEED %llu\n\n",
           SIM_K, sim_seeds, SIM_RUN_SD, SIM_SEED_SD, SIM_TARGET, SIM_EFFECT, reps, seed);
    sim_result res[SIM_NCOND];
    printf("| condition | found | best rank 1 | best in group | group size | diverged named | null: FWER | "
           "null: coverage | null: group size | null: any screened | paired (effect/null) | ranking_screen alone: diverged / other (effect, null) | ms/sweep |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int c = 0; c < SIM_NCOND; c++) {
        sim_result *r = &res[c];
        if (!run[c]) continue;
        sim_condition((sim_cond)c, reps, seed, r);
        const sim_arm *e = &r->effect, *z = &r->null;
        char b[10][48];
        snprintf(b[9], sizeof b[9], "%.3f / %.3f, %.3f / %.3f", (double)e->scr_named / e->reps, (double)e->scr_other / e->reps,
                 r->has_null ? (double)z->scr_named / z->reps : NAN, r->has_null ? (double)z->scr_other / z->reps : NAN);
        if (r->has_null) snprintf(b[6], sizeof b[6], "%.1f", z->size_sum / z->reps);
        else snprintf(b[6], sizeof b[6], "—");
        if (r->has_null) snprintf(b[8], sizeof b[8], "%.3f / %.3f", (double)e->paired / e->reps, (double)z->paired / z->reps);
        else snprintf(b[8], sizeof b[8], "%.3f / —", (double)e->paired / e->reps);
        int arms = e->reps + (r->has_null ? z->reps : 0);
        printf("| %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %.1f |\n", sim_cond_name[c],
               pct(b[0], (double)e->found / e->reps), pct(b[1], (double)e->rank1 / e->reps),
               pct(b[2], (double)e->in_best / e->reps), e->size_sum / e->reps,
               c == SIM_DIVERGED ? pct(b[3], (double)e->diverged_named / e->reps) : "—",
               pct(b[4], sim_rate(r, SIM_M_FWER)), pct(b[5], sim_rate(r, SIM_M_COVER)),
               b[6], pct(b[7], sim_rate(r, SIM_M_FALSE_SCREEN)), b[8], b[9],
               1e3 * (e->secs + z->secs) / arms);
        if (e->failed || z->failed) printf("!! %d + %d sweeps: ranking_compute failed\n", e->failed, z->failed);
        fflush(stdout);
    }
    printf("\n(rates over %d sweeps; 3 Monte Carlo s.e. of a rate: %.3f at 0.50, %.3f at 0.95, %.3f at 0.99; "
           "\"any screened\" counts jobs other than the injected diverged one)\n\n", reps, sim_mc3(0.5, reps),
           sim_mc3(0.95, reps), sim_mc3(0.99, reps));
    int met = 0, asked = 0;
    for (int k = 0; k < SIM_NTARGETS; k++) {
        const sim_target *t = &sim_targets[k];
        if (!run[t->cond]) continue;
        asked++;
        int ok = sim_meets(&res[t->cond], t, 0);
        met += ok;
        printf("%s %-26s %-40s %.3f (target %s %.2f)\n", ok ? "✓" : "✗", sim_cond_name[t->cond], t->what,
               sim_rate(&res[t->cond], t->metric), t->at_least ? "≥" : "≤", t->bound);
    }
    printf("targets met: %d of %d\n", met, asked);
    return 0;
}
