/* evaltasks.c — native benchmark JSONL → multiple-choice examples (evaltasks.h).
 *
 * Design: one parse function per task reads the keys its dataset ships, builds the context and completion
 * strings with lm-eval's prompt for that task, and finds the label; all share a small string builder, and every
 * failure names the key and what was expected. Nothing here tokenizes: `prism-data evalfile` does; it also
 * stores evaltask_choice_chars of each choice, the length lm-eval's acc_norm divides by.
 */
#include "evaltasks.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[] = {"prism", "hellaswag", "piqa", "arc", "winogrande"};

int evaltask_by_name(const char *name) {
    if (!strcmp(name, "arc-easy") || !strcmp(name, "arc-challenge") || !strcmp(name, "arc_easy") || !strcmp(name, "arc_challenge")) return EVALTASK_ARC;
    for (int i = 0; i < (int)(sizeof NAMES / sizeof NAMES[0]); i++) if (!strcmp(name, NAMES[i])) return i;
    return -1;
}
const char *evaltask_name(int task) { return task >= 0 && task <= EVALTASK_WINOGRANDE ? NAMES[task] : "?"; }

int evaltask_detect(const json_t *o) {
    if (!json_is_object(o)) return -1;
    if (json_object_get(o, "context")) return EVALTASK_PRISM;
    if ((json_object_get(o, "ctx") || json_object_get(o, "ctx_a")) && json_object_get(o, "endings")) return EVALTASK_HELLASWAG;
    if (json_object_get(o, "goal") && json_object_get(o, "sol1")) return EVALTASK_PIQA;
    if (json_object_get(o, "question") && json_object_get(o, "answerKey")) return EVALTASK_ARC;
    if (json_object_get(o, "sentence") && json_object_get(o, "option1")) return EVALTASK_WINOGRANDE;
    return -1;
}

static int efail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* a + b + c (any may be NULL), newly allocated */
static char *cat3(const char *a, size_t na, const char *b, size_t nb, const char *c, size_t nc) {
    char *s = malloc(na + nb + nc + 1);
    if (!s) return NULL;
    if (na) memcpy(s, a, na);
    if (nb) memcpy(s + na, b, nb);
    if (nc) memcpy(s + na + nb, c, nc);
    s[na + nb + nc] = 0;
    return s;
}

static const char *str_key(const json_t *o, const char *key, size_t *n) {
    const json_t *v = json_object_get(o, key);
    *n = 0;
    if (!json_is_string(v)) return NULL;
    *n = json_string_length(v);
    return json_string_value(v);
}

/* an integer label: a JSON integer or a string of digits; -1 when neither */
static int int_label(const json_t *v) {
    if (json_is_integer(v)) return json_integer_value(v) >= 0 && json_integer_value(v) < 1000 ? (int)json_integer_value(v) : -1;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 3) return -1;
    const char *s = json_string_value(v);
    for (const char *p = s; *p; p++) if (!isdigit((unsigned char)*p)) return -1;
    return atoi(s);
}

static int is_py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

char *evaltask_hellaswag_preprocess(const char *s, size_t n) {
    while (n && is_py_space((unsigned char)*s)) { s++; n--; }                        /* strip() */
    while (n && is_py_space((unsigned char)s[n - 1])) n--;
    char *a = malloc(2 * n + 1), *b = malloc(2 * n + 1);
    if (!a || !b) { free(a); free(b); return NULL; }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {                                                  /* " [title]" → ". " */
        if (n - i >= 8 && memcmp(s + i, " [title]", 8) == 0) { a[k++] = '.'; a[k++] = ' '; i += 7; }
        else a[k++] = s[i];
    }
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {                                                  /* re.sub(r"\[.*?\]", "") */
        if (a[i] == '[') {
            size_t j = i + 1;
            while (j < k && a[j] != ']' && a[j] != '\n') j++;
            if (j < k && a[j] == ']') { i = j; continue; }
        }
        b[m++] = a[i];
    }
    k = 0;
    for (size_t i = 0; i < m; i++) {                                                  /* "  " → " " (one pass) */
        if (i + 1 < m && b[i] == ' ' && b[i + 1] == ' ') { a[k++] = ' '; i++; }
        else a[k++] = b[i];
    }
    a[k] = 0;
    free(b);
    return a;
}

int evaltask_choice_chars(const char *choice) {
    const unsigned char *p = (const unsigned char *)choice;
    if (*p == ' ') p++;                       /* lm-eval's target delimiter is not part of the choice */
    int n = 0;
    for (; *p; p++) n += (*p & 0xc0) != 0x80;  /* a code point per UTF-8 lead byte (jansson's strings are valid UTF-8) */
    return n;
}

static int add_choice(struct evaltask_example *ex, char *s, char *err, size_t errlen) {
    if (!s) return efail(err, errlen, "out of memory");
    if (ex->nchoice == EVALTASK_MAX_CHOICES) { free(s); return efail(err, errlen, "more than %d choices", EVALTASK_MAX_CHOICES); }
    ex->choice[ex->nchoice++] = s;
    return 0;
}

static int parse_prism(const json_t *o, struct evaltask_example *ex, char *err, size_t errlen) {
    size_t n;
    const char *c = str_key(o, "context", &n);
    const json_t *ends = json_object_get(o, "endings");
    if (!c) return efail(err, errlen, "\"context\" must be a string");
    if (!json_is_array(ends) || json_array_size(ends) < 1) return efail(err, errlen, "\"endings\" must be a non-empty array of strings");
    if (!json_is_integer(json_object_get(o, "label"))) return efail(err, errlen, "\"label\" must be an integer (the index of the right ending)");
    if (!(ex->ctx = cat3(c, n, NULL, 0, NULL, 0))) return efail(err, errlen, "out of memory");
    for (size_t k = 0; k < json_array_size(ends); k++) {
        const json_t *e = json_array_get(ends, k);
        if (!json_is_string(e)) return efail(err, errlen, "\"endings\" must be a non-empty array of strings");
        if (add_choice(ex, cat3(" ", 1, json_string_value(e), json_string_length(e), NULL, 0), err, errlen)) return -1;
    }
    json_int_t l = json_integer_value(json_object_get(o, "label"));
    ex->label = l >= 0 && l < 1000 ? (int)l : 1000;
    return 0;
}

static int parse_hellaswag(const json_t *o, struct evaltask_example *ex, char *err, size_t errlen) {
    size_t na, nb, nl, nc;
    const char *a = str_key(o, "ctx_a", &na), *b = str_key(o, "ctx_b", &nb), *act = str_key(o, "activity_label", &nl);
    const char *ctx = str_key(o, "ctx", &nc);
    const json_t *ends = json_object_get(o, "endings");
    if (a && b && act) {
        /* activity_label + ": " + ctx_a + " " + ctx_b.capitalize() */
        char *cb = cat3(b, nb, NULL, 0, NULL, 0);
        if (!cb) return efail(err, errlen, "out of memory");
        for (size_t i = 0; i < nb; i++) cb[i] = (char)(i == 0 ? toupper((unsigned char)cb[i]) : tolower((unsigned char)cb[i]));
        char *head = cat3(act, nl, ": ", 2, a, na);
        char *all = head ? cat3(head, strlen(head), " ", 1, cb, nb) : NULL;
        free(head);
        free(cb);
        if (!all) return efail(err, errlen, "out of memory");
        ex->ctx = evaltask_hellaswag_preprocess(all, strlen(all));
        free(all);
    } else if (ctx) {
        ex->ctx = evaltask_hellaswag_preprocess(ctx, nc);
    } else {
        return efail(err, errlen, "expected HellaSwag's \"activity_label\", \"ctx_a\" and \"ctx_b\" strings (or \"ctx\")");
    }
    if (!ex->ctx) return efail(err, errlen, "out of memory");
    if (!json_is_array(ends) || json_array_size(ends) < 1) return efail(err, errlen, "\"endings\" must be a non-empty array of strings");
    for (size_t k = 0; k < json_array_size(ends); k++) {
        const json_t *e = json_array_get(ends, k);
        if (!json_is_string(e)) return efail(err, errlen, "\"endings\" must be a non-empty array of strings");
        char *p = evaltask_hellaswag_preprocess(json_string_value(e), json_string_length(e));
        char *s = p ? cat3(" ", 1, p, strlen(p), NULL, 0) : NULL;
        free(p);
        if (add_choice(ex, s, err, errlen)) return -1;
    }
    if ((ex->label = int_label(json_object_get(o, "label"))) < 0)
        return efail(err, errlen, "\"label\" must be an integer or a digit string (HellaSwag's test split has no labels)");
    return 0;
}

static char *question_prompt(const char *q, size_t n) { return cat3("Question: ", 10, q, n, "\nAnswer:", 8); }

static int parse_piqa(const json_t *o, int label_override, struct evaltask_example *ex, char *err, size_t errlen) {
    size_t ng, n1, n2;
    const char *g = str_key(o, "goal", &ng), *s1 = str_key(o, "sol1", &n1), *s2 = str_key(o, "sol2", &n2);
    if (!g || !s1 || !s2) return efail(err, errlen, "expected PIQA's \"goal\", \"sol1\" and \"sol2\" strings");
    if (!(ex->ctx = question_prompt(g, ng))) return efail(err, errlen, "out of memory");
    if (add_choice(ex, cat3(" ", 1, s1, n1, NULL, 0), err, errlen) || add_choice(ex, cat3(" ", 1, s2, n2, NULL, 0), err, errlen)) return -1;
    const json_t *l = json_object_get(o, "label");
    ex->label = l ? int_label(l) : label_override;
    if (ex->label < 0)
        return efail(err, errlen, l ? "\"label\" must be 0 or 1" : "no \"label\": give PIQA's labels file with --labels (valid-labels.lst)");
    return 0;
}

static int parse_arc(const json_t *o, struct evaltask_example *ex, char *err, size_t errlen) {
    const json_t *q = json_object_get(o, "question"), *ak = json_object_get(o, "answerKey");
    const json_t *stem = json_is_object(q) ? json_object_get(q, "stem") : q;
    const json_t *choices = json_is_object(q) ? json_object_get(q, "choices") : json_object_get(o, "choices");
    if (!json_is_string(stem)) return efail(err, errlen, "expected ARC's \"question\": {\"stem\": str, \"choices\": [...]}");
    if (!json_is_string(ak)) return efail(err, errlen, "\"answerKey\" must be a string (the right choice's label)");
    if (!(ex->ctx = question_prompt(json_string_value(stem), json_string_length(stem)))) return efail(err, errlen, "out of memory");
    ex->label = -1;
    size_t nch = json_is_array(choices) ? json_array_size(choices)
               : json_is_object(choices) && json_is_array(json_object_get(choices, "text")) ? json_array_size(json_object_get(choices, "text")) : 0;
    if (nch < 1) return efail(err, errlen, "\"question.choices\" must be a non-empty array of {\"text\", \"label\"}");
    for (size_t k = 0; k < nch; k++) {
        const json_t *t, *lab;
        if (json_is_array(choices)) { const json_t *c = json_array_get(choices, k); t = json_object_get(c, "text"); lab = json_object_get(c, "label"); }
        else { t = json_array_get(json_object_get(choices, "text"), k); lab = json_array_get(json_object_get(choices, "label"), k); }
        if (!json_is_string(t) || !json_is_string(lab)) return efail(err, errlen, "choice %zu needs a \"text\" and a \"label\" string", k);
        if (add_choice(ex, cat3(" ", 1, json_string_value(t), json_string_length(t), NULL, 0), err, errlen)) return -1;
        if (strcmp(json_string_value(lab), json_string_value(ak)) == 0 && ex->label < 0) ex->label = (int)k;
    }
    if (ex->label < 0) return efail(err, errlen, "\"answerKey\" \"%s\" is none of the choices' labels", json_string_value(ak));
    return 0;
}

static int parse_winogrande(const json_t *o, struct evaltask_example *ex, char *err, size_t errlen) {
    size_t ns, n1, n2;
    const char *s = str_key(o, "sentence", &ns), *o1 = str_key(o, "option1", &n1), *o2 = str_key(o, "option2", &n2);
    if (!s || !o1 || !o2) return efail(err, errlen, "expected WinoGrande's \"sentence\", \"option1\" and \"option2\" strings");
    const char *blank = memchr(s, '_', ns);
    if (!blank) return efail(err, errlen, "\"sentence\" has no \"_\" (the blank)");
    size_t pre = (size_t)(blank - s), ctxn = pre;
    while (ctxn && is_py_space((unsigned char)s[ctxn - 1])) ctxn--;                  /* the context: up to the blank */
    const char *rest = blank + 1;
    size_t nr = ns - pre - 1;
    while (nr && is_py_space((unsigned char)*rest)) { rest++; nr--; }                /* partial_target: .strip() */
    while (nr && is_py_space((unsigned char)rest[nr - 1])) nr--;
    if (!(ex->ctx = cat3(s, ctxn, NULL, 0, NULL, 0))) return efail(err, errlen, "out of memory");
    const char *opt[2] = {o1, o2};
    size_t on[2] = {n1, n2};
    for (int k = 0; k < 2; k++) {
        /* the white space before the blank, the option, " " + the rest (lm-eval's target delimiter) */
        char *head = cat3(s + ctxn, pre - ctxn, opt[k], on[k], NULL, 0);
        char *c = head ? cat3(head, strlen(head), " ", 1, rest, nr) : NULL;
        free(head);
        if (add_choice(ex, c, err, errlen)) return -1;
    }
    const json_t *a = json_object_get(o, "answer");
    int l = int_label(a);
    if (l != 1 && l != 2) return efail(err, errlen, "\"answer\" must be \"1\" or \"2\" (WinoGrande's test split has no answers)");
    ex->label = l - 1;
    return 0;
}

int evaltask_parse(int task, const json_t *o, int label_override, struct evaltask_example *ex, char *err,
                   size_t errlen) {
    memset(ex, 0, sizeof *ex);
    int rc;
    if (!json_is_object(o)) rc = efail(err, errlen, "not a JSON object");
    else switch (task) {
    case EVALTASK_PRISM: rc = parse_prism(o, ex, err, errlen); break;
    case EVALTASK_HELLASWAG: rc = parse_hellaswag(o, ex, err, errlen); break;
    case EVALTASK_PIQA: rc = parse_piqa(o, label_override, ex, err, errlen); break;
    case EVALTASK_ARC: rc = parse_arc(o, ex, err, errlen); break;
    case EVALTASK_WINOGRANDE: rc = parse_winogrande(o, ex, err, errlen); break;
    default: rc = efail(err, errlen, "unknown task");
    }
    if (rc) evaltask_release(ex);
    return rc;
}

void evaltask_release(struct evaltask_example *ex) {
    free(ex->ctx);
    for (int k = 0; k < ex->nchoice; k++) free(ex->choice[k]);
    memset(ex, 0, sizeof *ex);
}
