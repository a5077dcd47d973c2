/* cmd_power.c — `prism-sweep power SPEC.json [--sd SD] [--seeds N] [--effect D]`: what a sweep can detect before
 * it runs. The spec gives the schedules (K) and seeds; the run-to-run sd is the user's (default 0.002, PAPER.md's
 * 0.001–0.003 at GPT-2 Small), or a finished sweep's own (`analysis.pooled_sd` on its leaderboard).
 *
 * Design: the same figures the leaderboard states for a sweep (ranking_design_power: Holm's first-step critical
 * value over K − 1 comparisons at the blocked model's (K−1)(n−1) df, the |Δ| detectable with 80% power, and the
 * seeds an effect needs), so the plan and the answer speak the same numbers. Reads the spec only; writes nothing.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "ranking.h"
#include "spec.h"

int cmd_power(int argc, char **argv) {
    double sd = 0.002, effect = RANKING_PAPER_EFFECT;
    int seeds = 0;
    const char *format = "text";
    cli_flag flags[] = {
        { "--sd", CLI_DOUBLE, &sd, "0.002", "run-to-run sd of the final val loss (a finished sweep's analysis.pooled_sd)",
          1e-9, 10, 0, 0 },
        { "--seeds", CLI_INT, &seeds, "the spec's", "seeds per schedule to plan for", 2, 1000, 0, 0 },
        { "--effect", CLI_DOUBLE, &effect, "0.0144", "the |delta| to detect (the paper's headline effect)", 1e-9, 10, 0, 0 },
        { "--format", CLI_CHOICE, &format, "text", "output: text, or JSON {schedules, seeds, comparisons, sd, df, "
          "critical, min_significant_delta, delta_80, effect, effect_detectable, seeds_for_effect, table: [{seeds, "
          "min_significant_delta, delta_80}]}", 0, 0, "text|json", 0 },
        { 0 },
    };
    cli_cmd cmd = { "power", "SPEC.json [--sd SD] [--seeds N] [--effect D]",
                    "What a sweep of SPEC can detect against uniform before it runs: the smallest |delta| that can be\n"
                    "significant (Holm over the schedules, the blocked model's pooled t), the |delta| found with 80%\n"
                    "power, and the seeds per schedule an effect of --effect needs (docs/STATISTICS.md).", flags, NULL };
    char *pos[1];
    int npos = 0, prc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    if (npos != 1) return cli_error("power", "give one SPEC.json, e.g. prism-sweep power sweeps/paper-small.json --sd 0.002");
    sweep_spec sp;
    char *text = NULL, err[1024];
    if (spec_load(pos[0], &sp, &text, err, sizeof err) < 0) {
        fprintf(stderr, "prism-sweep power: %s\n", err);
        return 2;
    }
    free(text);
    int K = sp.n_schedules, n = seeds > 0 ? seeds : sp.n_seeds;
    spec_release(&sp);
    if (n < 2) {
        fprintf(stderr, "prism-sweep power: %s has %d seed: with one seed per schedule there is no estimate of the noise and "
                "nothing can be significant; plan with --seeds 2 or more\n", pos[0], n);
        return 2;
    }
    ranking_power pw;
    ranking_design_power(K, n, K - 1, sd, RANKING_BLOCKED, effect, &pw);
    int need = pw.seeds_for_paper;   /* the seeds this effect needs */
    static const int rows[] = { 2, 3, 4, 5, 6, 8, 10, 15, 20 };
    if (strcmp(format, "json") == 0) {
        json_t *tab = json_array();
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            ranking_power q;
            ranking_design_power(K, rows[i], K - 1, sd, RANKING_BLOCKED, effect, &q);
            json_array_append_new(tab, json_pack("{s:i, s:f, s:f}", "seeds", rows[i], "min_significant_delta",
                                                 q.min_significant, "delta_80", q.delta80));
        }
        json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:o, s:o}", "spec", pos[0],
                              "schedules", K, "seeds", n, "comparisons", K - 1, "sd", sd, "df", pw.df, "critical", pw.critical,
                              "min_significant_delta", pw.min_significant, "delta_80", pw.delta80, "effect", effect,
                              "effect_detectable", pw.delta80 <= effect, "seeds_for_effect",
                              need ? json_integer(need) : json_null(), "table", tab);
        json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
        fputc('\n', stdout);
        json_decref(o);
        return 0;
    }
    printf("%s: %d schedules x %d seeds, %d comparisons against uniform, run-to-run sd %.4f (%.0f residual df)\n", pos[0],
           K, n, K - 1, sd, pw.df);
    printf("significant (Holm, pooled t |t| > %.3f): |delta| > %.4f; detected with 80%% power: |delta| >= %.4f\n",
           pw.critical, pw.min_significant, pw.delta80);
    if (pw.delta80 <= effect) printf("an effect of %.4f is within reach at %d seeds (%d would do)\n", effect, n, need);
    else if (need) printf("an effect of %.4f is below what %d seeds can detect: about %d seeds per schedule would reach it\n",
                          effect, n, need);
    else printf("an effect of %.4f is below what this design can detect, even at 1000 seeds\n", effect);
    printf("%6s %22s %14s\n", "seeds", "min significant |delta|", "80% power");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ranking_power q;
        ranking_design_power(K, rows[i], K - 1, sd, RANKING_BLOCKED, effect, &q);
        printf("%6d %22.4f %14.4f\n", rows[i], q.min_significant, q.delta80);
    }
    return 0;
}
