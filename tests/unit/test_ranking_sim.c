/* test_ranking_sim.c — the ranking on real sweeps (issue #37): bench/bench_ranking_sim.c's robustness simulation
 * with fewer sweeps, asserting the targets (tests/ranking_sim.h, sim_targets) with 3 Monte Carlo standard
 * errors of slack (a bound of 1 is exact). 56 schedules × 3 seeds, run sd 0.002, seed sd 0.02, one schedule 0.0144
 * better than uniform, each sweep ranked by ranking_compute as the leaderboard ranks it; one case per condition:
 * clean Gaussian noise, a missing seed on the best, one diverged run, a quarter of the schedules 3× noisier, t(3)
 * noise, and a spread of effects (where only the best-group guarantee and the found rate are asserted).
 * MCREPS (sweeps per arm, default 200) and MCSEED (default 1) override.
 * timeout: 120
 */
#include "harness.h"
#include "ranking_sim.h"

static int reps_env(void) { return getenv("MCREPS") ? atoi(getenv("MCREPS")) : 200; }
static unsigned long long seed_env(void) { return getenv("MCSEED") ? strtoull(getenv("MCSEED"), NULL, 10) : 1; }

/* runs condition c, prints its figures and asserts every target of it */
static void check_condition(sim_cond c) {
    sim_result r;
    sim_condition(c, reps_env(), seed_env(), &r);
    const sim_arm *e = &r.effect, *z = &r.null;
    printf("%s, %d sweeps per arm: found %.3f, best at rank 1 %.3f, in the best group %.3f, group size %.2f, "
           "diverged named %.3f, paired %.3f; null: any significant %.3f, coverage %.3f, group size %.1f, "
           "any screened %.3f, paired %.3f (%.1f ms/sweep)\n", sim_cond_name[c], e->reps,
           (double)e->found / e->reps, (double)e->rank1 / e->reps, (double)e->in_best / e->reps, e->size_sum / e->reps,
           (double)e->diverged_named / e->reps, (double)e->paired / e->reps, sim_rate(&r, SIM_M_FWER),
           sim_rate(&r, SIM_M_COVER), r.has_null ? z->size_sum / z->reps : NAN, sim_rate(&r, SIM_M_FALSE_SCREEN),
           r.has_null ? (double)z->paired / z->reps : NAN,
           1e3 * (e->secs + z->secs) / (e->reps + (r.has_null ? z->reps : 0)));
    ASSERT_EQ_INT(0, e->failed + z->failed);
    int failed = 0;
    for (int k = 0; k < SIM_NTARGETS; k++) {
        const sim_target *t = &sim_targets[k];
        if (t->cond != c) continue;
        double v = sim_rate(&r, t->metric);
        int reps = t->metric <= SIM_M_NAMED ? e->reps : z->reps;
        int ok = sim_meets(&r, t, 1);
        printf("%s %s: %.3f, target %s %.2f (with 3 MC s.e. %s %.3f)\n", ok ? "ok  " : "FAIL", t->what, v,
               t->at_least ? "≥" : "≤", t->bound, t->at_least ? "≥" : "≤",
               t->bound + (t->at_least ? -1 : 1) * sim_mc3(t->bound, reps));
        failed += !ok;
    }
    /* whatever the condition: the truly best schedule stays in the best group (the group's guarantee) */
    ASSERT_TRUE((double)e->in_best / e->reps >= 0.95 - sim_mc3(0.95, e->reps));
    if (failed) HFAIL("%d target(s) of \"%s\" missed (above)", failed, sim_cond_name[c]);
}

TEST(gaussian_found_fwer_and_coverage) { check_condition(SIM_GAUSS); }
TEST(missing_seed_on_the_best_is_still_rank_1) { check_condition(SIM_MISSING); }
TEST(one_diverged_run_is_screened_and_the_effect_found) { check_condition(SIM_DIVERGED); }
TEST(a_quarter_noisier_still_finds_the_effect) { check_condition(SIM_NOISY); }
TEST(t3_noise_found_fwer_and_coverage) { check_condition(SIM_T3); }
TEST(spread_of_effects_best_kept_and_found) { check_condition(SIM_SPREAD); }
