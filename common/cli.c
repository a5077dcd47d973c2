/* cli.c — table-driven flag parsing and --help for the subcommands of prism-sweep, prism-worker and prism-data.
 *
 * Design: a command describes its flags once (name, type, destination, default text, help, range); the parser
 * and the usage printer both read that table, so --help always lists every flag with its real default and a
 * bad value is refused with the flag's name and its valid range. Destinations keep their initial values when a
 * flag is absent, so the caller initialises them to the defaults the table shows.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *prog_of(const cli_cmd *cmd) { return cmd->prog ? cmd->prog : "prism-sweep"; }

static int verror(const char *prog, const char *cmd, const char *fmt, va_list ap) {
    fprintf(stderr, "%s%s%s: ", prog, *cmd ? " " : "", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return CLI_ERR;
}

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror("prism-sweep", cmd, fmt, ap);
    va_end(ap);
    return CLI_ERR;
}

int cli_cmd_error(const cli_cmd *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(prog_of(cmd), cmd->name, fmt, ap);
    va_end(ap);
    return CLI_ERR;
}

cli_flag *cli_find(cli_cmd *cmd, const char *name) {
    for (cli_flag *f = cmd->flags; f && f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

static const char *type_hint(const cli_flag *f) {
    switch (f->type) {
    case CLI_INT: case CLI_INT64: case CLI_COUNT: return "N";
    case CLI_DOUBLE: return "X";
    case CLI_STR: case CLI_STRS: return "S";
    case CLI_CHOICE: return f->choices;
    default: return "";
    }
}

/* "  LEFT  TEXT" with TEXT wrapped at word boundaries so that no line passes CLI_USAGE_WIDTH columns (a word longer
 * than a line is left whole), the continuation lines indented to the text's column. Columns are counted in bytes
 * that do not continue a UTF-8 character. */
#define CLI_USAGE_WIDTH 100
#define CLI_USAGE_COL 29
static size_t cols(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}
static void usage_wrapped(FILE *o, const char *left, const char *text) {
    int col = fprintf(o, "  %-26s ", left);
    const char *p = text;
    int first = 1;
    while (*p) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        size_t w = cols(p, (size_t)(e - p));
        if (!first && col + 1 + (int)w > CLI_USAGE_WIDTH) { fprintf(o, "\n%*s", CLI_USAGE_COL, ""); col = CLI_USAGE_COL; first = 1; }
        if (!first) { fputc(' ', o); col++; }
        fwrite(p, 1, (size_t)(e - p), o);
        col += (int)w;
        first = 0;
        p = e;
    }
    fputc('\n', o);
}

/* text's lines as given, each one longer than CLI_USAGE_WIDTH wrapped at word boundaries (no indent). */
static void text_wrapped(FILE *o, const char *text) {
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        int col = 0, first = 1;
        for (const char *p = line; p < end;) {
            while (p < end && *p == ' ' && !first) p++;
            const char *e = p;
            while (e < end && *e != ' ') e++;
            if (first) { while (e < end && *e == ' ') e++; while (e < end && *e != ' ') e++; }   /* leading spaces stay */
            size_t w = cols(p, (size_t)(e - p));
            if (!first && col + 1 + (int)w > CLI_USAGE_WIDTH) { fputc('\n', o); col = 0; first = 1; }
            else if (!first) { fputc(' ', o); col++; }
            fwrite(p, 1, (size_t)(e - p), o);
            col += (int)w;
            first = 0;
            p = e;
        }
        fputc('\n', o);
        line = nl ? nl + 1 : end;
    }
}

void cli_usage(const cli_cmd *cmd, FILE *o) {
    fprintf(o, "usage: %s %s%s%s\n\n", prog_of(cmd), cmd->name, *cmd->name ? " " : "", cmd->synopsis);
    text_wrapped(o, cmd->summary);
    if (!cmd->flags || !cmd->flags[0].name) return;
    fprintf(o, "\nflags (default in brackets):\n");
    for (const cli_flag *f = cmd->flags; f->name; f++) {
        char left[96], text[2048];
        const char *h = type_hint(f);
        snprintf(left, sizeof left, "%s%s%s", f->name, *h ? " " : "", h);
        int n = snprintf(text, sizeof text, "%s [%s]", f->help, f->def ? f->def : "");
        if (n < 0 || n >= (int)sizeof text) n = (int)sizeof text - 1;
        if ((f->type == CLI_INT || f->type == CLI_INT64) && f->min < f->max)
            snprintf(text + n, sizeof text - (size_t)n, " (range %lld..%lld)", (long long)f->min, (long long)f->max);
        else if (f->type == CLI_COUNT && f->min < f->max)
            snprintf(text + n, sizeof text - (size_t)n, " (range %lld..%lld; k, M, G suffixes)", (long long)f->min, (long long)f->max);
        else if (f->type == CLI_DOUBLE && f->min < f->max)
            snprintf(text + n, sizeof text - (size_t)n, " (range %g..%g)", f->min, f->max);
        usage_wrapped(o, left, text);
    }
    usage_wrapped(o, "--help", "print this help and exit");
}

static int range_err(const cli_cmd *cmd, const cli_flag *f, const char *kind, const char *v) {
    if (f->min < f->max)
        return cli_cmd_error(cmd, "%s must be %s in %.17g..%.17g (got \"%s\")", f->name, kind, f->min, f->max, v);
    return cli_cmd_error(cmd, "%s must be %s (got \"%s\")", f->name, kind, v);
}

static int set_value(const cli_cmd *cmd, cli_flag *f, const char *v) {
    char *end = NULL;
    errno = 0;
    switch (f->type) {
    case CLI_INT: case CLI_INT64: {
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno || (f->min < f->max && (x < f->min || x > f->max)) ||
            (f->type == CLI_INT && (x < -2147483647LL || x > 2147483647LL)))
            return range_err(cmd, f, "an integer", v);
        if (f->type == CLI_INT) *(int *)f->dst = (int)x;
        else *(long long *)f->dst = x;
        return CLI_OK;
    }
    case CLI_COUNT: {
        long long x = strtoll(v, &end, 10), mul = 1;
        if (end != v && *end && !end[1]) {
            mul = *end == 'k' || *end == 'K' ? 1000LL : *end == 'M' ? 1000000LL : *end == 'G' ? 1000000000LL : 0;
            if (mul) end++;
        }
        if (!*v || *end || errno || !mul || x > 9223372036854775807LL / mul || x < -9223372036854775807LL / mul ||
            (f->min < f->max && (x * mul < f->min || x * mul > f->max)))
            return range_err(cmd, f, "an integer (k, M, G suffixes allowed)", v);
        *(long long *)f->dst = x * mul;
        return CLI_OK;
    }
    case CLI_DOUBLE: {
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x) || (f->min < f->max && (x < f->min || x > f->max)))
            return range_err(cmd, f, "a number", v);
        *(double *)f->dst = x;
        return CLI_OK;
    }
    case CLI_STR:
        *(const char **)f->dst = v;
        return CLI_OK;
    case CLI_STRS: {
        cli_strs *l = f->dst;
        if (l->n >= CLI_STRS_MAX) return cli_cmd_error(cmd, "%s: at most %d times", f->name, CLI_STRS_MAX);
        l->v[l->n++] = v;
        return CLI_OK;
    }
    case CLI_CHOICE: {
        size_t n = strlen(v);
        for (const char *c = f->choices; c && *c;) {
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            if (len == n && strncmp(c, v, n) == 0 && n) {
                *(const char **)f->dst = v;
                return CLI_OK;
            }
            c = bar ? bar + 1 : c + len;
        }
        return cli_cmd_error(cmd, "%s must be one of %s (got \"%s\")", f->name, f->choices, v);
    }
    default:
        return CLI_ERR;
    }
}

int cli_parse(cli_cmd *cmd, int argc, char **argv, char **pos, int maxpos, int *npos) {
    int np = 0, flags_done = 0;
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!flags_done && strcmp(a, "--") == 0) { flags_done = 1; continue; }
        if (!flags_done && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            cli_usage(cmd, stdout);
            return CLI_HELP;
        }
        if (!flags_done && a[0] == '-' && a[1] == '-') {
            char name[96];
            const char *eq = strchr(a, '=');
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            if (len >= sizeof name) len = sizeof name - 1;
            memcpy(name, a, len);
            name[len] = 0;
            cli_flag *f = cli_find(cmd, name);
            if (!f)
                return cli_cmd_error(cmd, "unknown flag %s (see %s%s%s --help)", name, prog_of(cmd),
                                     *cmd->name ? " " : "", cmd->name);
            f->seen = 1;
            if (f->type == CLI_BOOL) {
                if (eq) {
                    if (strcmp(eq + 1, "1") == 0 || strcmp(eq + 1, "true") == 0) *(int *)f->dst = 1;
                    else if (strcmp(eq + 1, "0") == 0 || strcmp(eq + 1, "false") == 0) *(int *)f->dst = 0;
                    else return cli_cmd_error(cmd, "%s takes no value, or =true|false (got \"%s\")", name, eq + 1);
                } else {
                    *(int *)f->dst = 1;
                }
                continue;
            }
            const char *v = eq ? eq + 1 : NULL;
            if (!v) {
                if (i + 1 >= argc)
                    return cli_cmd_error(cmd, "%s needs a value (%s)", name, type_hint(f));
                v = argv[++i];
            }
            int rc = set_value(cmd, f, v);
            if (rc != CLI_OK) return rc;
            continue;
        }
        if (np >= maxpos) {
            if (maxpos == 0) return cli_cmd_error(cmd, "unexpected argument \"%s\" (this command takes only flags; "
                                                  "see --help)", a);
            return cli_cmd_error(cmd, "unexpected extra argument \"%s\" (usage: %s %s%s%s)", a, prog_of(cmd),
                                 cmd->name, *cmd->name ? " " : "", cmd->synopsis);
        }
        pos[np++] = a;
    }
    *npos = np;
    return CLI_OK;
}
