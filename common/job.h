/* job.h — the job format: the one JSON object the orchestrator hands a worker ("train this model with
 * these per-layer head counts"). Both programs link this module, so parsing, defaults and validation live
 * in exactly one place.
 *
 *   { "model": { "n_layer", "d_model", "vocab_size", "padded_vocab_size"?, "seq_len", "heads": [h_1..h_L],
 *                "init"?: "path/to/llmc_checkpoint.bin", "arch"?: "gpt2"|"llama",
 *                "ffn_hidden"?, "rope_theta"? (llama only) },
 *     "train": { "batch_size", "seq_len", "grad_accum", "steps", "lr", "lr_schedule": "cosine"|"constant",
 *                "warmup_steps", "min_lr_frac", "beta1", "beta2", "eps", "weight_decay", "grad_clip",
 *                "seed", "shuffle", "checkpoint_every" },
 *     "eval":  { "every", "batches", "attn_distance", "tasks"?: [{"name", "path"}, ...] },
 *     "data":  { "train": "glob", "val": "glob" },
 *     "trainer"?: "NAME",     the external trainer that trains it (docs/TRAINERS.md); absent = the built-in engine
 *     "trainer_args"?: { "NAME": scalar, ... } }   that trainer's own options (the spec's trainer.args); needs "trainer"
 *
 * Required: model.{n_layer, d_model, vocab_size, seq_len, heads}, data.{train, val}. Everything else has
 * the default job_init() sets (listed next to each field below). Unknown keys, wrong types and bad values
 * are errors whose message names the key ("train.lr: must be > 0, got -1").
 * Schedule rules checked here: len(heads) == n_layer, every h_l >= 1 divides d_model. Monotonicity
 * (h_1 <= ... <= h_L) is the sweep's rule, not the engine's: the engine trains any schedule.
 */
#ifndef PRISM_JOB_H
#define PRISM_JOB_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define JOB_MAX_STEP_TOKENS (1LL << 32)   /* train.batch_size x seq_len x grad_accum, at most */
#define JOB_MAX_TOKENS (1LL << 48)        /* ... x train.steps, at most: sums of tokens and steps cannot overflow */
/* A run diverged when its val loss is above this x ln(vocab_size), worse than guessing uniformly: the worker
 * stops it (worker/train.c) and the server refuses it as a result (common/result_check.c). */
#define JOB_DIVERGED_FACTOR 1.1
#define JOB_MAX_LAYERS 240   /* llm.c header slots 8..247 hold per-layer heads (see kernels/checkpoint.h) */

enum { JOB_OK = 0, JOB_EINVAL = -1, JOB_ENOMEM = -2 };

struct job_model {
    int n_layer;                  /* L, required, 1..JOB_MAX_LAYERS */
    int d_model;                  /* C, required */
    int vocab_size;               /* V, required, <= 65536 (uint16 token shards) */
    int padded_vocab_size;        /* Vp, default: V rounded up to a multiple of 128 */
    int seq_len;                  /* maxT, the position table, required */
    int heads[JOB_MAX_LAYERS];    /* h_l for l < n_layer, required, each divides d_model */
    char *init;                   /* model file to start from, NULL = random init from the seed (owned) */
    char arch[8];                 /* "gpt2" (default) | "llama" (RoPE + SwiGLU + RMSNorm; head sizes even) */
    int ffn_hidden;               /* llama: MLP hidden size H, default 8·d_model/3 rounded up to a multiple of 64 */
    int rope_theta;               /* llama: RoPE base θ, default 10000 */
};

struct job_train {
    int batch_size;               /* B, default 8 */
    int seq_len;                  /* T, default model.seq_len; must be <= model.seq_len */
    int grad_accum;               /* micro-batches per update, default 1 */
    int steps;                    /* updates, default 100 */
    double lr;                    /* peak learning rate, default 6e-4 */
    char lr_schedule[16];         /* "cosine" (default) | "constant" (both after linear warmup) */
    int warmup_steps;             /* default 0 */
    double min_lr_frac;           /* cosine floor as a fraction of lr, default 0.1 */
    double beta1, beta2, eps;     /* AdamW, defaults 0.9, 0.95, 1e-8 */
    double weight_decay;          /* default 0.1, matrices only (wte wpe qkvw attprojw fcw fcprojw) */
    double grad_clip;             /* global-norm clip, 0 = off, default 1.0 */
    uint64_t seed;                /* init weights + data order, default 1337 */
    int shuffle;                  /* bool, default 1; 0 = sequential from the first train shard, wrapping */
    int checkpoint_every;         /* steps between training-state checkpoints, 0 = off (default) */
};

#define JOB_MAX_TASKS 32
struct job_eval_task {            /* one zero-shot task: an llm.c multiple-choice eval file (common/evalfile.h) */
    char *name;                   /* [A-Za-z0-9._-]{1,63}, unique in the job (owned) */
    char *path;                   /* relative paths resolve against the data root (owned) */
};

#define JOB_EVAL_ALL 0             /* eval.batches "all" */
#define JOB_EVAL_MAX_ALL 100000    /* "all" reads at most this many batches (the result carries each one's loss) */
struct job_eval {
    int every;                    /* val loss every N updates (plus step 0 and the end), 0 = only those; default 0 */
    int batches;                  /* val batches of B x T from the start of the val shards, default 4;
                                     JOB_EVAL_ALL ("all" in JSON): every whole batch of the val split */
    int attn_distance;            /* bool: compute D_l per layer at the final evaluation, default 0 */
    struct job_eval_task *tasks;  /* (ntasks) zero-shot tasks scored after the last update, default none (owned) */
    int ntasks;                   /* 0..JOB_MAX_TASKS */
};

struct job_data {
    char *train;                  /* glob of llm.c token shards, required (owned) */
    char *val;                    /* glob, required (owned) */
};

#define JOB_TRAINER_MAX 64          /* trainer name with its NUL */
#define JOB_TRAINER_ARGS_MAX 32     /* trainer_args: at most this many keys */
#define JOB_TRAINER_ARG_NAME_MAX 64 /* ... each name 1..64 of [A-Za-z0-9_.-] */
#define JOB_TRAINER_ARG_STR_MAX 256 /* ... a string value at most this many bytes; numbers finite; booleans */
struct job_config {
    struct job_model model;
    struct job_train train;
    struct job_eval eval;
    struct job_data data;
    char trainer[JOB_TRAINER_MAX];  /* "" = the built-in engine; else a worker's --trainer NAME (job_trainer_name_ok) */
    char *trainer_args;             /* the trainer's options as compact JSON with sorted keys, NULL = none (owned) */
};

/* Checks a trainer's options (the spec's trainer.args, the job's trainer_args): an object of at most
 * JOB_TRAINER_ARGS_MAX keys named [A-Za-z0-9_.-]{1,64}, each a string of at most JOB_TRAINER_ARG_STR_MAX bytes, a
 * finite number or a boolean. 0, or JOB_EINVAL with err naming WHAT.KEY and the fix. */
int job_trainer_args_check(const json_t *args, const char *what, char *err, size_t errlen);

/* 1 when s is a valid trainer name: 1..63 characters of [A-Za-z0-9._-], not starting with '.' or '-'. */
int job_trainer_name_ok(const char *s);

/* What kind of JSON value v is, for error messages ("an object", "a string", "a number", ...; "null" for NULL):
 * a static string. */
const char *job_json_type(const json_t *v);

/* Fills *job with the defaults (required fields zero / NULL). job_release() is safe afterwards. */
void job_init(struct job_config *job);

/* Parses and validates. On success returns 0 and *out owns its strings (free with job_release).
 * On failure returns JOB_EINVAL (err names the key and the problem) and *out holds nothing to free.
 * job_parse_json takes text; job_from_json a parsed object (not stolen). */
int job_parse_json(const char *text, struct job_config *out, char *err, size_t errlen);
int job_from_json(const json_t *obj, struct job_config *out, char *err, size_t errlen);
int job_load_file(const char *path, struct job_config *out, char *err, size_t errlen);

/* Re-checks a filled config (e.g. after CLI overrides). 0 or JOB_EINVAL with err naming the key. */
int job_validate(const struct job_config *job, char *err, size_t errlen);

/* Every field (defaults written out). New reference the caller json_decref()s; NULL on OOM. */
json_t *job_to_json(const struct job_config *job);

/* The key rows (job.c's tables: section, key, kind, min/max, choices, default or the rule that derives it, arch,
 * required; the top-level trainer and trainer_args with section ""): `prism-worker schema --json`'s "job". A new
 * array, NULL when out of memory. */
json_t *job_schema_json(void);

/* 1 when a and b hold the same value in every key of the rows (doubles by value, strings by content) and the
 * same trainer and trainer_args; 0 otherwise. The fuzz round-trip oracle (fuzz/fuzz_job.c). */
int job_equal(const struct job_config *a, const struct job_config *b);

/* Deep copy; 0 or JOB_ENOMEM (dst then holds nothing to free). */
int job_copy(struct job_config *dst, const struct job_config *src);

/* Frees the owned strings and resets to job_init() state. NULL is fine. */
void job_release(struct job_config *job);

/* Parses a schedule as schedule_parse() does ("3,3,6,6", "3x2,6x2", "12×6", spaces allowed) into heads[max];
 * returns the count, or JOB_EINVAL with err naming the text and the bad item. */
int job_parse_heads(const char *s, int *heads, int max, char *err, size_t errlen);

/* "3,3,6,6" into buf (truncated safely). */
void job_format_heads(const struct job_config *job, char *buf, size_t len);
#endif
