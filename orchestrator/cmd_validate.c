/* cmd_validate.c — `prism-sweep validate SCHEDULE`: is one schedule valid under the rules, and if not, which
 * rules does it break and where (layer, block)?
 *
 * Design: the same rule flags as enumerate (rules_cli.h), except that --L defaults to the schedule's own length;
 * schedule_validate collects every violation rather than stopping at the first, so one run shows the whole list.
 * Exit 0 valid, 1 invalid, 2 bad usage (an unparsable schedule or a bad flag).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonout.h"
#include "cli.h"
#include "commands.h"
#include "rules_cli.h"
#include "schedule.h"

int cmd_validate(int argc, char **argv) {
    rules_cli rc;
    rules_cli_init(&rc);
    const char *format = "text";
    cli_flag flags[] = {
        RULES_CLI_FLAGS(rc, "the schedule's length"),
        { "--format", CLI_CHOICE, &format, "text", "output: lines, or one JSON object {valid, schedule, violations: "
          "[{rule, layer, layer_end, block, message}]}", 0, 0, "text|json", 0 },
        { 0 },
    };
    cli_cmd cmd = { "validate", "[flags] SCHEDULE",
                    "Check one schedule (e.g. 3,3,6,6,8,8,12,12,12,12,12,12; 12x6 repeats 12 six times) against\n"
                    "the rules of `prism-sweep enumerate`. Exit 0 and \"valid\", or exit 1 and one line per broken\n"
                    "rule naming the layers and block (blocks are maximal runs of equal heads, counted from 1).",
                    flags, NULL };
    char *pos[1];
    int npos = 0;
    int prc = cli_parse(&cmd, argc, argv, pos, 1, &npos);
    if (prc != CLI_OK) return prc == CLI_HELP ? 0 : 2;
    if (npos != 1) return cli_error("validate", "give one SCHEDULE, e.g. prism-sweep validate --dmodel 768 "
                                    "3,3,6,6,8,8,12,12,12,12,12,12");
    int *heads = malloc(sizeof(int) * SCHEDULE_MAX_L), L = 0;
    char err[256];
    if (!heads) return 1;
    if (schedule_parse(pos[0], heads, SCHEDULE_MAX_L, &L, err, sizeof err) < 0) {
        free(heads);
        return cli_error("validate", "SCHEDULE \"%.60s\": %s", pos[0], err);
    }
    int L_given = cli_find(&cmd, "--L")->seen;
    if (!L_given) rc.L = L;
    schedule_rules r;
    if (rules_cli_resolve("validate", &rc, &r) != 0) { free(heads); return 2; }
    if (!L_given) r.L = 0;  /* take the length from the schedule */
    static schedule_report rep;
    int n = schedule_validate(&r, heads, L, &rep);
    if (n < 0) {
        free(heads);
        return cli_error("validate", "%s", rep.v[0].msg);
    }
    char *canon = malloc((size_t)L * 12 + 16);
    schedule_format(heads, L, canon, (size_t)L * 12 + 16);
    if (strcmp(format, "json") == 0) {
        json_t *o = json_object(), *vs = json_array();
        json_object_set_new(o, "valid", json_boolean(n == 0));
        json_object_set_new(o, "schedule", json_string(canon));
        for (int i = 0; i < rep.n; i++)
            json_array_append_new(vs, json_pack("{s:s, s:i, s:i, s:i, s:s}", "rule", schedule_rule_name(rep.v[i].rule),
                                                "layer", rep.v[i].layer, "layer_end", rep.v[i].layer_end, "block",
                                                rep.v[i].block, "message", rep.v[i].msg));
        json_object_set_new(o, "violations", vs);
        json_object_set_new(o, "more_violations", json_integer(rep.n_more));
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSONOUT_FLAGS);
        fputc('\n', stdout);
        json_decref(o);
    } else if (n == 0) {
        printf("valid: %s\n", canon);
    } else {
        printf("invalid: %s breaks %d rule%s:\n", canon, n, n == 1 ? "" : "s");
        for (int i = 0; i < rep.n; i++) printf("  %s: %s\n", schedule_rule_name(rep.v[i].rule), rep.v[i].msg);
        if (rep.n_more) printf("  ... and %d more\n", rep.n_more);
    }
    free(canon);
    free(heads);
    return n == 0 ? 0 : 1;
}
