"""prism_data — the job's defaults, llm.c token shards in the built-in engine's order, and the project's model files.

Design. Everything here is a re-derivation of C code that defines what a seed and a model file mean, so the two
trainers agree token for token and weight for weight: job defaults (common/job.c job_init), the data order
(worker/train.c's loader: windows of T+1 tokens at offsets k*T in each shard, micro-batch p = windows p*B .. p*B+B-1
of the epoch order, a Fisher-Yates permutation per (seed, epoch) drawn with util_mix64; docs/FORMATS.md "Data
order"), the seed init (kernels/model.c: SplitMix64 -> Box-Muller in llm.c tensor order) and the model files
(docs/FORMATS.md, kernels/checkpoint.c). numpy only; no torch here.
"""
import glob
import math
import re
import os

import numpy as np

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SHARD_MAGIC, SHARD_VERSION = 20240520, 1
GPT2_MAGIC, GPT2_VERSION = 20240326, 3
LLAMA_MAGIC, LLAMA_VERSION = 20260629, 1


class JobError(Exception):
    """Bad job, data or model file; the message names the key or file (exit 2)."""


# ---- the job ----------------------------------------------------------------------------------------
DEFAULTS = {
    "model": {"arch": "gpt2", "init": None},
    "train": {"batch_size": 8, "grad_accum": 1, "steps": 100, "lr": 6e-4, "lr_schedule": "cosine", "warmup_steps": 0,
              "min_lr_frac": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "grad_clip": 1.0,
              "seed": 1337, "shuffle": True, "checkpoint_every": 0},
    "eval": {"every": 0, "batches": 4, "attn_distance": False, "tasks": []},
    "data": {},
}
# every key's type and bounds, as common/job.c's key tables (set_key) check them; "trainer" is the worker's.
# DEFAULTS, SPEC and REQUIRED are checked against those rows (`prism-worker schema --json`'s "job") by
# tests/integration/test_schema.sh, which names the key and the dict to edit
INT, NUM, BOOL, STR, U64 = "int", "num", "bool", "str", "u64"
SPEC = {
    "model": {"n_layer": (INT, 1, 240), "d_model": (INT, 1, 65536), "vocab_size": (INT, 1, 65536),
              "padded_vocab_size": (INT, 1, 1 << 20), "seq_len": (INT, 1, 1 << 20), "heads": ("heads", 1, 65536),
              "init": (STR,), "arch": ("one of", "gpt2", "llama"), "ffn_hidden": (INT, 1, 1 << 20),
              "rope_theta": (INT, 1, 1 << 24)},
    "train": {"batch_size": (INT, 1, 1 << 16), "seq_len": (INT, 1, 1 << 20), "grad_accum": (INT, 1, 1 << 16),
              "steps": (INT, 1, 10 ** 9), "lr": (NUM, 0, 10), "lr_schedule": ("one of", "cosine", "constant"),
              "warmup_steps": (INT, 0, 10 ** 9), "min_lr_frac": (NUM, 0, 1), "beta1": (NUM, 0, 0.999999),
              "beta2": (NUM, 0, 0.999999999), "eps": (NUM, 1e-30, 1), "weight_decay": (NUM, 0, 10),
              "grad_clip": (NUM, 0, 1e9), "seed": (U64,), "shuffle": (BOOL,), "checkpoint_every": (INT, 0, 10 ** 9)},
    "eval": {"every": (INT, 0, 10 ** 9), "batches": ("batches", 1, 10 ** 6), "attn_distance": (BOOL,), "tasks": ("tasks",)},
    "data": {"train": (STR,), "val": (STR,)},
}
KNOWN = {sec: tuple(keys) for sec, keys in SPEC.items()}
REQUIRED = {"model": ("n_layer", "d_model", "vocab_size", "seq_len", "heads"), "data": ("train", "val")}
MAX_STEP_TOKENS, MAX_TOKENS = 1 << 32, 1 << 48   # common/job.h JOB_MAX_STEP_TOKENS, JOB_MAX_TOKENS
INT64_MAX = (1 << 63) - 1                        # a JSON integer the C side (jansson json_int_t) reads


def json_type(v):
    """common/job.c job_json_type: the JSON type's name for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "an integer"}.get(type(v), "a number")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _show(v):
    """v for a message, at most 40 characters (a JSON integer can have hundreds of digits)."""
    s = str(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _check_key(sec, k, v):
    """JobError naming sec.k unless v has the key's type and lies in its bounds (common/job.c set_key)."""
    kind, name = SPEC[sec][k][0], "%s.%s" % (sec, k)
    lo, hi = (SPEC[sec][k][1:] + (None, None))[:2]
    if kind == "batches" and isinstance(v, str):
        if v != "all":
            raise JobError('%s: expected an integer or "all" (the whole val split), got "%.40s"' % (name, v))
        return
    if kind in (INT, "batches"):
        if not _is_int(v):
            raise JobError("%s: expected an integer, got %s" % (name, json_type(v)))
        if not lo <= v <= hi:
            raise JobError("%s: must be between %d and %d, got %s" % (name, lo, hi, _show(v)))
    elif kind == NUM:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise JobError("%s: expected a number, got %s" % (name, json_type(v)))
        if (isinstance(v, float) and not math.isfinite(v)) or not lo <= v <= hi:
            raise JobError("%s: must be between %g and %g, got %s" % (name, lo, hi, _show(v)))
        if k == "lr" and v <= 0:
            raise JobError("train.lr: must be > 0, got %g" % v)
    elif kind == BOOL:
        if not isinstance(v, bool):
            raise JobError("%s: expected true or false, got %s" % (name, json_type(v)))
    elif kind == U64:
        if not _is_int(v) or not 0 <= v <= INT64_MAX:
            raise JobError("%s: expected a non-negative integer (at most 2^63-1), got %s"
                           % (name, _show(v) if _is_int(v) else json_type(v)))
    elif kind == STR:
        if not isinstance(v, str):
            raise JobError("%s: expected a string, got %s" % (name, json_type(v)))
        if not v or len(v) > 4000:
            raise JobError("%s: must be 1 to 4000 characters, got %d" % (name, len(v)))
        if "\0" in v or any(0xD800 <= ord(c) <= 0xDFFF for c in v):
            raise JobError("%s: holds a NUL or an unpaired surrogate (\\u0000, \\ud800): not a path" % name)
    elif kind == "one of":
        if not isinstance(v, str) or v not in SPEC[sec][k][1:]:
            raise JobError("%s: expected %s, got %s" % (name, " or ".join('"%s"' % x for x in SPEC[sec][k][1:]),
                                                        '"%.40s"' % v if isinstance(v, str) else json_type(v)))
    elif kind == "heads":
        if not isinstance(v, list):
            raise JobError("model.heads: expected an array of head counts, got %s" % json_type(v))
        if not 1 <= len(v) <= 240:
            raise JobError("model.heads: expected 1 to 240 entries, got %d" % len(v))
        for i, h in enumerate(v):
            if not _is_int(h) or not lo <= h <= hi:
                raise JobError("model.heads[%d]: expected a positive integer head count (at most %d), got %s"
                               % (i, hi, _show(h) if _is_int(h) else json_type(h)))
    elif kind == "tasks":
        if not isinstance(v, list):
            raise JobError('eval.tasks: expected an array of {"name", "path"} objects, got %s' % json_type(v))


TRAINER_ARGS_MAX, TRAINER_ARG_NAME_MAX, TRAINER_ARG_STR_MAX = 32, 64, 256   # common/job.h JOB_TRAINER_ARG*
_ARG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,%d}\Z" % TRAINER_ARG_NAME_MAX)


def trainer_args_check(args, what="trainer_args"):
    """common/job.c job_trainer_args_check: an object of scalar options, or JobError naming the key."""
    if not isinstance(args, dict):
        raise JobError('%s: must be an object of the trainer\'s options ({"dropout": 0.1, ...}), got %s' % (what, json_type(args)))
    if len(args) > TRAINER_ARGS_MAX:
        raise JobError("%s: %d keys, at most %d" % (what, len(args), TRAINER_ARGS_MAX))
    for k, v in args.items():
        if not _ARG_NAME.match(k):
            raise JobError('%s: key "%s" is not a name: 1-%d characters of [A-Za-z0-9_.-]' % (what, k[:80], TRAINER_ARG_NAME_MAX))
        if isinstance(v, str):
            if len(v.encode("utf-8", "surrogatepass")) > TRAINER_ARG_STR_MAX:
                raise JobError("%s.%s: a string of more than %d bytes" % (what, k, TRAINER_ARG_STR_MAX))
        elif isinstance(v, bool):
            pass
        elif isinstance(v, (int, float)):
            if not math.isfinite(v):
                raise JobError("%s.%s: must be a finite number" % (what, k))
        else:
            raise JobError("%s.%s: must be a string, a number or a boolean, got %s" % (what, k, json_type(v)))


def llama_default_ffn(C):
    h = (8 * C + 2) // 3
    return (h + 63) // 64 * 64


def job_normalize(raw):
    """The job with every default written out (common/job.c), or JobError naming the key."""
    if not isinstance(raw, dict):
        raise JobError("job: expected a JSON object")
    job = {}
    for sec, val in raw.items():
        if sec == "trainer":
            continue
        if sec == "trainer_args":
            trainer_args_check(val)
            job["trainer_args"] = dict(val)
            continue
        if sec not in KNOWN:
            raise JobError("%s: unknown key (a job has model, train, eval, data, trainer, trainer_args)" % sec)
        if not isinstance(val, dict):
            raise JobError("%s: expected an object" % sec)
        for k in val:
            if k not in KNOWN[sec]:
                raise JobError("%s.%s: unknown key (known: %s)" % (sec, k, " ".join(KNOWN[sec])))
            _check_key(sec, k, val[k])
    for sec in KNOWN:
        job[sec] = dict(DEFAULTS[sec])
        job[sec].update(raw.get(sec, {}))
        for k in REQUIRED.get(sec, ()):
            if k not in raw.get(sec, {}):
                raise JobError("%s.%s: required" % (sec, k))
    if "trainer_args" in raw and "trainer" not in raw:
        raise JobError('trainer_args: only for a job with a "trainer"')
    m, t, e = job["model"], job["train"], job["eval"]
    m.setdefault("padded_vocab_size", (m["vocab_size"] + 127) // 128 * 128)
    if m["padded_vocab_size"] < m["vocab_size"]:
        raise JobError("model.padded_vocab_size: must be >= model.vocab_size (%d), got %d" % (m["vocab_size"], m["padded_vocab_size"]))
    if m["arch"] == "llama":
        m.setdefault("ffn_hidden", llama_default_ffn(m["d_model"]))
        m.setdefault("rope_theta", 10000)
    else:
        for k in ("ffn_hidden", "rope_theta"):
            if k in m:
                raise JobError('model.%s: only for model.arch "llama" (this job is "gpt2")' % k)
    t.setdefault("seq_len", m["seq_len"])
    if len(m["heads"]) != m["n_layer"]:
        raise JobError("model.heads: has %d entries but model.n_layer is %d" % (len(m["heads"]), m["n_layer"]))
    for l, h in enumerate(m["heads"]):
        if h < 1 or m["d_model"] % h:
            raise JobError("model.heads[%d]: %d does not divide model.d_model %d" % (l, h, m["d_model"]))
        if m["arch"] == "llama" and (m["d_model"] // h) % 2:
            raise JobError("model.heads[%d]: head size %d is odd; llama (RoPE) needs an even head size" % (l, m["d_model"] // h))
    if not 1 <= t["seq_len"] <= m["seq_len"]:
        raise JobError("train.seq_len: must be between 1 and model.seq_len (%d), got %d" % (m["seq_len"], t["seq_len"]))
    per_step = t["batch_size"] * t["seq_len"] * t["grad_accum"]
    if per_step > MAX_STEP_TOKENS:
        raise JobError("train.batch_size x train.seq_len x train.grad_accum: %d x %d x %d = %d tokens per step, at most %d"
                       % (t["batch_size"], t["seq_len"], t["grad_accum"], per_step, MAX_STEP_TOKENS))
    if per_step * t["steps"] > MAX_TOKENS:
        raise JobError("train.steps: %d steps of %d tokens is %d tokens, at most %d (2^48)"
                       % (t["steps"], per_step, per_step * t["steps"], MAX_TOKENS))
    if e["batches"] == "all":
        e["batches"] = 0
    check_tasks(e["tasks"])
    return job


TASK_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_tasks(tasks):
    """eval.tasks as common/job.c set_tasks checks it: [{"name", "path"}], at most 32, names unique (JobError)."""
    if not isinstance(tasks, list):
        raise JobError('eval.tasks: expected an array of {"name", "path"} objects')
    if len(tasks) > 32:
        raise JobError("eval.tasks: at most 32 tasks, got %d" % len(tasks))
    seen = {}
    for i, t in enumerate(tasks):
        if not isinstance(t, dict):
            raise JobError('eval.tasks[%d]: expected an object {"name", "path"}, got %s' % (i, type(t).__name__))
        for k in t:
            if k not in ("name", "path"):
                raise JobError("eval.tasks[%d].%s: unknown key (known: name path)" % (i, k))
        nm, pa = t.get("name"), t.get("path")
        if not isinstance(nm, str):
            raise JobError('eval.tasks[%d].name: required, a string like "hellaswag"' % i)
        if not isinstance(pa, str) or not pa:
            raise JobError('eval.tasks[%d].path: required, the llm.c eval file (e.g. "hellaswag_val.bin")' % i)
        if not 1 <= len(nm) <= 63 or not set(nm) <= TASK_NAME_CHARS:
            raise JobError('eval.tasks[%d].name: "%.80s" must be 1-63 of [A-Za-z0-9._-]' % (i, nm))
        if nm in seen:
            raise JobError('eval.tasks[%d].name: "%s" repeats eval.tasks[%d]' % (i, nm, seen[nm]))
        if len(pa) > 4000:
            raise JobError("eval.tasks[%d].path: longer than 4000 characters" % i)
        if "\0" in pa or any(0xD800 <= ord(c) <= 0xDFFF for c in pa):
            raise JobError("eval.tasks[%d].path: holds a NUL or an unpaired surrogate (\\u0000, \\ud800): not a path" % i)
        seen[nm] = i


# ---- the data order (worker/train.c) ------------------------------------------------------------------
def mix64(z):
    """common/util.c util_mix64 (SplitMix64's finalizer after adding the golden ratio)."""
    z = (z + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def open_shard(path):
    size = os.path.getsize(path)
    if size < 1024:
        raise JobError("%s: %d bytes, shorter than the 1024-byte llm.c shard header" % (path, size))
    hdr = np.fromfile(path, dtype="<i4", count=256)
    if hdr[0] != SHARD_MAGIC:
        raise JobError("%s: bad magic: the header does not start with %d (not an llm.c token shard)" % (path, SHARD_MAGIC))
    if hdr[1] != SHARD_VERSION:
        raise JobError("%s: unsupported version: expected %d (uint16 tokens)" % (path, SHARD_VERSION))
    n = int(hdr[2])
    if n < 0 or size != 1024 + 2 * n:
        raise JobError("%s: file is %d bytes but the header says %d tokens" % (path, size, n))
    return np.memmap(path, dtype="<u2", mode="r", offset=1024, shape=(n,)) if n else np.zeros(0, np.uint16)


class Loader:
    """Micro-batch `pos` of B windows of T+1 tokens, exactly as worker/train.c's loader_batch reads it."""

    def __init__(self, what, pattern, B, T, shuffle, seed, vocab):
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise JobError("%s: %s: no token shards match (check the path and the data root)" % (what, pattern))
        self.what, self.paths, self.B, self.T, self.V = what, paths, B, T, vocab
        self.shards = [open_shard(p) for p in paths]
        self.cum = [0]
        for s in self.shards:
            self.cum.append(self.cum[-1] + ((len(s) - 1) // T if len(s) > T else 0))
        self.nwin = self.cum[-1]
        if self.nwin == 0:
            raise JobError("%s: %s holds %d tokens; each shard needs at least T+1 = %d tokens"
                           % (what, pattern, sum(len(s) for s in self.shards), T + 1))
        self.shuffle, self.seed = bool(shuffle), int(seed) & M64
        self.perm, self.perm_epoch = None, None

    def _draw_perm(self, epoch):
        s = mix64(self.seed ^ mix64((epoch + 0x44415441) & M64))   # "DATA"
        perm = list(range(self.nwin))
        G, A, B, M = GOLDEN, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, M64
        for i in range(self.nwin - 1, 0, -1):   # mix64 inlined: this loop is the job start's cost on a big split
            z = (s + G) & M
            z = ((z ^ (z >> 30)) * A) & M
            z = ((z ^ (z >> 27)) * B) & M
            s = z ^ (z >> 31)
            j = s % (i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        self.perm, self.perm_epoch = np.array(perm, dtype=np.int64), epoch

    def window(self, w):
        lo = int(np.searchsorted(self.cum, w, side="right")) - 1
        off = (w - self.cum[lo]) * self.T
        tok = np.asarray(self.shards[lo][off:off + self.T + 1], dtype=np.int64)
        if (tok >= self.V).any():
            t = int(np.argmax(tok >= self.V))
            raise JobError("%s: %s: the token at position %d is outside the vocabulary (model.vocab_size %d)"
                           % (self.what, self.paths[lo], off + t, self.V))
        return tok

    def batch(self, pos):
        """(B, T+1) int64: row b is window (pos*B + b) of the epoch order; inputs = [:, :-1], targets = [:, 1:]."""
        rows = []
        for b in range(self.B):
            g = pos * self.B + b
            w = g % self.nwin
            if self.shuffle:
                e = g // self.nwin
                if e != self.perm_epoch:
                    self._draw_perm(e)
                w = int(self.perm[w])
            rows.append(self.window(w))
        return np.stack(rows)


# ---- tensors in llm.c order ---------------------------------------------------------------------------
def tensor_shapes(job):
    """[(name, shape)] in the model file's order (kernels/model.c model_param_sizes)."""
    m = job["model"]
    L, C, Vp, maxT = m["n_layer"], m["d_model"], m["padded_vocab_size"], m["seq_len"]
    if m["arch"] == "llama":
        H = m["ffn_hidden"]
        return [("wte", (Vp, C)), ("attnormw", (L, C)), ("qkvw", (L, 3 * C, C)), ("attprojw", (L, C, C)),
                ("mlpnormw", (L, C)), ("fcw", (L, H, C)), ("fcgw", (L, H, C)), ("fcprojw", (L, C, H)), ("normfw", (C,))]
    return [("wte", (Vp, C)), ("wpe", (maxT, C)), ("ln1w", (L, C)), ("ln1b", (L, C)), ("qkvw", (L, 3 * C, C)),
            ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)), ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)),
            ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
            ("lnfw", (C,)), ("lnfb", (C,))]


def num_params(job):
    return sum(int(np.prod(s)) for _, s in tensor_shapes(job))


def flops_per_token(job):
    m = job["model"]
    L, C, V, T = m["n_layer"], m["d_model"], m["vocab_size"], job["train"]["seq_len"]
    mm = L * 12.0 * C * C + float(V) * C
    if m["arch"] == "llama":
        mm = L * (4.0 * C * C + 3.0 * m["ffn_hidden"] * C) + float(V) * C
    return 6.0 * mm + 6.0 * L * T * C


def _fill_normal(n, std, state):
    """kernels/model.c fill_normal: pairs of SplitMix64 outputs -> Box-Muller; returns (values, new state)."""
    out = np.empty(n, dtype=np.float32)
    pairs = (n + 1) // 2
    chunk = 1 << 22
    G = np.uint64(GOLDEN)
    for p0 in range(0, pairs, chunk):
        p1 = min(pairs, p0 + chunk)
        k = np.arange(2 * p0 + 1, 2 * p1 + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(state) + k * G
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        a, b = z[0::2], z[1::2]
        u1 = ((a >> np.uint64(11)).astype(np.float64) + 1.0) * (1.0 / 9007199254740993.0)
        u2 = (b >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
        r, th = np.sqrt(-2.0 * np.log(u1)), 2.0 * math.pi * u2
        c = (r * np.cos(th) * std).astype(np.float32)
        s = (r * np.sin(th) * std).astype(np.float32)
        i0 = 2 * p0
        out[i0:2 * p1:2] = c
        nodd = len(out[i0 + 1:2 * p1:2])
        out[i0 + 1:2 * p1:2] = s[:nodd]
    return out, (state + 2 * pairs * GOLDEN) & M64


def init_from_seed(job):
    """kernels/model.c model_init_params: the built-in engine's weights for train.seed, as numpy arrays."""
    m = job["model"]
    L, C, V = m["n_layer"], m["d_model"], m["vocab_size"]
    state = (int(job["train"]["seed"]) ^ 0x5052495332303236) & M64   # "PRIS2026"
    resid = 0.02 / math.sqrt(2.0 * L)
    out = []
    llama = m["arch"] == "llama"
    for i, (name, shape) in enumerate(tensor_shapes(job)):
        n = int(np.prod(shape))
        if (llama and i in (1, 4, 8)) or (not llama and i in (2, 8, 14)):
            a = np.ones(n, np.float32)
        elif llama or i in (0, 1, 4, 10, 6, 12):
            std = resid if (llama and i in (3, 7)) or (not llama and i in (6, 12)) else 0.02
            a, state = _fill_normal(n, std, state)
        else:
            a = np.zeros(n, np.float32)
        out.append(a.reshape(shape))
    out[0][V:] = 0
    return out


def read_model_file(path, job):
    """The model file's tensors (numpy, llm.c order) after checking its header against the job (message names the slot)."""
    m = job["model"]
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise JobError("model.init: %s: %s" % (path, e.strerror))
    if size < 1024:
        raise JobError("model.init: %s: %d bytes, shorter than the 1024-byte header" % (path, size))
    h = np.fromfile(path, dtype="<i4", count=256)
    llama = m["arch"] == "llama"
    magic, version = (LLAMA_MAGIC, LLAMA_VERSION) if llama else (GPT2_MAGIC, GPT2_VERSION)
    if h[0] != magic:
        other = "llama" if h[0] == LLAMA_MAGIC else "gpt2" if h[0] == GPT2_MAGIC else None
        if other:
            raise JobError('model.init: %s is a %s model file but the job has model.arch "%s"' % (path, other, m["arch"]))
        raise JobError("model.init: %s: bad magic %d in header slot 0" % (path, h[0]))
    if h[1] != version:
        raise JobError("model.init: %s: header slot 1 (version) is %d, expected %d (float32)" % (path, h[1], version))
    want = [("maxT", 2, m["seq_len"]), ("vocab_size", 3, m["vocab_size"]), ("n_layer", 4, m["n_layer"]),
            ("d_model", 6, m["d_model"]), ("padded_vocab_size", 7, m["padded_vocab_size"])]
    if llama:
        want += [("ffn_hidden", 8, m["ffn_hidden"]), ("rope_theta", 9, m["rope_theta"])]
    for name, slot, v in want:
        if h[slot] != v:
            raise JobError("model.init: %s: header slot %d (%s) is %d but the job has %d" % (path, slot, name, h[slot], v))
    shapes = tensor_shapes(job)
    total = sum(int(np.prod(s)) for _, s in shapes)
    if size != 1024 + 4 * total:
        raise JobError("model.init: %s: file is %d bytes but its header implies %d" % (path, size, 1024 + 4 * total))
    flat = np.fromfile(path, dtype="<f4", offset=1024, count=total)
    out, off = [], 0
    for _, s in shapes:
        n = int(np.prod(s))
        out.append(flat[off:off + n].reshape(s).copy())
        off += n
    return out


def write_model_file(path, job, tensors):
    """The final weights in the project's model file format (what the built-in writes as model.bin)."""
    m = job["model"]
    h = np.zeros(256, dtype="<i4")
    L = m["n_layer"]
    if m["arch"] == "llama":
        h[:10] = [LLAMA_MAGIC, LLAMA_VERSION, m["seq_len"], m["vocab_size"], L, m["heads"][-1], m["d_model"],
                  m["padded_vocab_size"], m["ffn_hidden"], m["rope_theta"]]
        h[16:16 + L] = m["heads"]
    else:
        h[:8] = [GPT2_MAGIC, GPT2_VERSION, m["seq_len"], m["vocab_size"], L, m["heads"][-1], m["d_model"],
                 m["padded_vocab_size"]]
        h[8:8 + L] = m["heads"]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(h.tobytes())
        for t in tensors:
            f.write(np.ascontiguousarray(t, dtype="<f4").tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
