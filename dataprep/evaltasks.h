/* evaltasks.h — the native JSONL of zero-shot benchmarks turned into multiple-choice examples (a context and its
 * completions, as text), for `prism-data evalfile --task NAME`. The text is what lm-evaluation-harness scores
 * (same prompts, same preprocessing); the caller tokenizes it and writes an llm.c eval file (evalfile.h).
 *
 *   prism       {"context": str, "endings": [str, ...], "label": int}: context; " " + each ending
 *   hellaswag   HellaSwag's own lines {"activity_label", "ctx_a", "ctx_b", "endings", "label"} (label an int or a
 *               digit string): context preprocess(activity_label + ": " + ctx_a + " " + capitalize(ctx_b)),
 *               completions " " + preprocess(ending), with lm-eval's preprocess (strip; " [title]" → ". "; drop
 *               "[...]"; "  " → " ") and Python's str.capitalize (on ASCII letters). A line with only "ctx" uses it.
 *   piqa        {"goal", "sol1", "sol2"} with "label" in the line or from the separate labels file (one 0/1 a line,
 *               PIQA's *-labels.lst): "Question: " + goal + "\nAnswer:"; " " + sol1, " " + sol2
 *   arc         ARC-Easy/Challenge's own lines {"question": {"stem", "choices": [{"text", "label"}]}, "answerKey"}
 *               (also the Hugging Face shape {"question": str, "choices": {"text": [], "label": []}}):
 *               "Question: " + stem + "\nAnswer:"; " " + each choice; the label is the answerKey's index
 *   winogrande  {"sentence" with one "_", "option1", "option2", "answer": "1"|"2"}: lm-eval's partial scoring
 *               scores the words after the blank given the sentence up to it with each option filled in; the eval
 *               file has one context per example, so the context is the text before the blank (trailing white
 *               space moved into the completions) and each completion is the option and the rest
 *               (" " + option + " " + rest): the same strings, but the score also counts the option's tokens
 *               (docs/FORMATS.md, "Zero-shot tasks", says what that changes).
 * An empty context becomes the end-of-text token (a WinoGrande sentence that opens with the blank).
 */
#ifndef PRISM_EVALTASKS_H
#define PRISM_EVALTASKS_H
#include <jansson.h>
#include <stddef.h>

enum { EVALTASK_PRISM, EVALTASK_HELLASWAG, EVALTASK_PIQA, EVALTASK_ARC, EVALTASK_WINOGRANDE };
#define EVALTASK_MAX_CHOICES 64

struct evaltask_example {
    char *ctx;                              /* owned, NUL-terminated */
    int nchoice;
    char *choice[EVALTASK_MAX_CHOICES];     /* owned; each begins with its separator (a space) */
    int label;
};

/* The task id of a name ("prism", "hellaswag", "piqa", "arc", "arc-easy", "arc-challenge", "winogrande"), -1 else. */
int evaltask_by_name(const char *name);
const char *evaltask_name(int task);
/* The task a line's keys say (-1: none fits). */
int evaltask_detect(const json_t *line);

/* One line → *ex. label_override >= 0 replaces a missing "label" (PIQA's labels file); -1 = none. 0, or -1 with
 * err saying which key is missing or wrong (the caller adds file and line); ex holds nothing then. */
int evaltask_parse(int task, const json_t *line, int label_override, struct evaltask_example *ex, char *err,
                   size_t errlen);
void evaltask_release(struct evaltask_example *ex);

/* The characters lm-eval's acc_norm divides a choice's log-likelihood by: Python's len() of the choice without
 * its target delimiter, i.e. the Unicode code points of choice (UTF-8) after one leading space, if it has one.
 * (lm-eval: completion_len = len(c) for c in doc_to_choice(doc); the request's continuation is " " + c.) */
int evaltask_choice_chars(const char *choice);

/* lm-eval's HellaSwag preprocess of s[0..n) into a new string (NULL on no memory). */
char *evaltask_hellaswag_preprocess(const char *s, size_t n);
#endif
