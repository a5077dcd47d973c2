#!/usr/bin/python3
"""fuzz_trainer.py — a deterministic mutation fuzzer for the reference PyTorch trainer's parsers (trainers/torch/).

Design. Debian has no atheris and the project adds no dependency for this, so this is a plain mutation fuzzer with
no coverage feedback: it draws every choice from random.Random(--seed), so a run of N iterations is the same run
everywhere (`make check` runs a short one). Each target feeds one input (bytes) through the trainer's own code path:
  job       the job file: prism_protocol.Run reads PRISM_JOB, then prism_data.job_normalize (as train.py does),
            then the sizes the trainer derives from the job (tensor_shapes, num_params, flops_per_token)
  shard     an llm.c token shard: prism_data.open_shard, then a Loader over it (two shuffled micro-batches)
  model     a model file: prism_data.read_model_file against two fixed tiny jobs (gpt2, llama) and against the job
            its own header describes, when that is a valid job
  protocol  fd-3 lines (one JSON object a line): prism_protocol.Run.emit (its _check, then the encoding and the size
            cap) on each line in turn, so the order rules (steps increase, nothing after the terminal line) run too
The oracle: an input either parses or raises the target's documented error (JobError for job/shard/model,
ProtocolError for protocol and for the job file's JSON) with a non-empty message. Any other exception, a hang
(--timeout per input, SIGALRM) or an allocation past --mem-mb (RLIMIT_AS, so a header that claims 2^40 tokens
shows up as MemoryError) is a crash: the input goes to --crash-dir and the run exits 1 naming the target, the
exception and the file. Seeds: the C targets' corpora where the format is shared (fuzz/corpus/job, shard,
checkpoint, extrun), fuzz/corpus/py-NAME (this fuzzer's reproducers and seeds) and a few written here
(write_model_file). Mutations: bit flips, byte insert/delete/overwrite, truncation, splicing, int32 header slots set
to edge values, and for JSON a parsed-tree mutation (drop a key, change a type, huge/negative/NaN numbers, deep
nesting, unknown keys).

    /usr/bin/python3 fuzz/fuzz_trainer.py --iterations 2000 --seed 1          # every target, 2000 inputs each
    /usr/bin/python3 fuzz/fuzz_trainer.py --target job --seconds 60
    /usr/bin/python3 fuzz/fuzz_trainer.py --replay fuzz/corpus/py-job          # replay only (target from the name)
    /usr/bin/python3 fuzz/fuzz_trainer.py --replay                             # replay every target's corpora
Exit: 0 no crash, 1 a crash (reproducer written), 2 bad usage.
"""
import argparse
import copy
import hashlib
import json
import os
import random
import resource
import signal
import struct
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINER_DIR = os.path.join(ROOT, "trainers", "torch")


def _trainer_dir(argv):
    """--trainer-dir, read before the trainer's modules are imported (the test fuzzes a copy with a seeded bug)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--trainer-dir", default=TRAINER_DIR)
    return p.parse_known_args(argv)[0].trainer_dir


sys.path.insert(0, _trainer_dir(sys.argv[1:]) if __name__ == "__main__" else TRAINER_DIR)
import numpy as np  # noqa: E402
import prism_data as pd  # noqa: E402
import prism_protocol as pp  # noqa: E402

CORPORA = {"job": ("job", "py-job"), "shard": ("shard", "py-shard"), "model": ("checkpoint", "py-model"),
           "protocol": ("extrun", "py-protocol")}
ALLOWED = {"job": (pd.JobError, pp.ProtocolError), "shard": (pd.JobError,), "model": (pd.JobError,),
           "protocol": (pp.ProtocolError,)}
MAX_LEN = {"job": 8192, "shard": 16384, "model": 65536, "protocol": 8192}


class Hang(BaseException):
    """Raised by SIGALRM: an input ran past --timeout (BaseException: no parser's `except Exception` swallows it)."""


# ---- the targets: each returns True (parsed) or raises ---------------------------------------------------
class Targets:
    def __init__(self, tmp):
        self.tmp = tmp
        self.out = os.path.join(tmp, "out")
        os.makedirs(os.path.join(self.out, "ckpt"), exist_ok=True)
        for s in (4, 20):   # checkpoint lines of the seeds name these
            open(os.path.join(self.out, "ckpt", "step_%06d.pt" % s), "wb").close()
        self.devnull = os.open(os.devnull, os.O_WRONLY)
        self.jobs = [pd.job_normalize(j) for j in (tiny_job("gpt2"), tiny_job("llama"))]
        self.proto_job = os.path.join(tmp, "protocol-job.json")
        with open(self.proto_job, "w") as f:
            json.dump({"train": {"steps": 100}}, f)

    def _file(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def _run(self, job_path):
        return pp.Run(environ={"PRISM_JOB": job_path, "PRISM_OUT": self.out}, out_fd=self.devnull)

    def job(self, data):
        run = self._run(self._file("job.json", data))
        run.close()
        job = pd.job_normalize(run.job)
        pd.tensor_shapes(job)
        pd.num_params(job)
        pd.flops_per_token(job)
        return True

    def shard(self, data):
        p = self._file("shard.bin", data)
        s = pd.open_shard(p)
        int(np.asarray(s, dtype=np.int64).sum())
        del s
        ld = pd.Loader("data.train", p, 2, 4, True, 7, 1000)   # a vocabulary some tokens lie outside
        ld.batch(0)
        ld.batch(1)
        return True

    def model(self, data):
        p = self._file("model.bin", data)
        jobs = list(self.jobs)
        hj = header_job(data)
        if hj is not None:
            jobs.append(hj)
        ok = False
        for job in jobs:
            try:
                pd.read_model_file(p, job)
                ok = True
            except pd.JobError as e:
                check_message(e)
        return ok

    def protocol(self, data):
        run = self._run(self.proto_job)
        ok = False
        try:
            for line in data.split(b"\n"):
                try:
                    obj = json.loads(line.decode("utf-8"))
                except (ValueError, RecursionError):   # the lines are the trainer's own objects; not JSON: not one
                    continue
                run.emit(obj)
                ok = True
        finally:
            run.close()
        return ok


def tiny_job(arch):
    m = {"n_layer": 1, "d_model": 8, "vocab_size": 16, "seq_len": 4, "heads": [2], "arch": arch}
    return {"model": m, "data": {"train": "t_*.bin", "val": "v_*.bin"}}


def header_job(data):
    """The job the model file's header describes (gpt2 or llama by magic), when that is a valid job; else None."""
    if len(data) < 1024:
        return None
    h = struct.unpack("<256i", data[:1024])
    if h[0] not in (pd.GPT2_MAGIC, pd.LLAMA_MAGIC):
        return None
    llama = h[0] == pd.LLAMA_MAGIC
    L = h[4]
    if not 1 <= L <= 240:
        return None
    first = 16 if llama else 8
    m = {"arch": "llama" if llama else "gpt2", "seq_len": h[2], "vocab_size": h[3], "n_layer": L, "d_model": h[6],
         "padded_vocab_size": h[7], "heads": list(h[first:first + L])}
    if llama:
        m.update(ffn_hidden=h[8], rope_theta=h[9])
    try:
        return pd.job_normalize({"model": m, "data": {"train": "t", "val": "v"}})
    except pd.JobError:
        return None


def check_message(e):
    if not str(e).strip():
        raise AssertionError("%s with an empty message" % type(e).__name__)


# ---- seeds ----------------------------------------------------------------------------------------------
def built_in_seeds(target):
    """Valid inputs written here, so every target starts from something it accepts."""
    if target == "model":
        out = []
        for arch in ("gpt2", "llama"):
            job = pd.job_normalize(tiny_job(arch))
            ts = [np.arange(int(np.prod(s)), dtype=np.float32).reshape(s) / 100 for _, s in pd.tensor_shapes(job)]
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "m.bin")
                pd.write_model_file(p, job, ts)
                out.append(open(p, "rb").read())
        return out
    if target == "shard":
        h = np.zeros(256, "<i4")
        h[:3] = [pd.SHARD_MAGIC, pd.SHARD_VERSION, 40]
        return [h.tobytes() + (np.arange(40, dtype="<u2") * 7).tobytes()]
    if target == "job":
        return [json.dumps(tiny_job("gpt2")).encode(), json.dumps(tiny_job("llama")).encode()]
    return [b'{"event":"train","step":0,"train_loss":4.0}\n{"event":"checkpoint","step":4,"path":"ckpt/step_000004.pt"}\n'
            b'{"event":"val","step":4,"val_loss":3.5}\n{"event":"result","result":{"val_loss":3.5}}\n']


def corpus_files(target, dirs=None):
    files = []
    for d in dirs or [os.path.join(ROOT, "fuzz", "corpus", c) for c in CORPORA[target]]:
        if os.path.isdir(d):
            files += sorted(os.path.join(d, f) for f in os.listdir(d) if not f.startswith("."))
    return [f for f in files if os.path.isfile(f)]


# ---- mutations ------------------------------------------------------------------------------------------
INT32_EDGES = (0, 1, -1, 2, 3, 255, 256, 1023, 1024, 65535, 65536, 1 << 20, (1 << 31) - 1, -(1 << 31), 1 << 30,
               pd.SHARD_MAGIC, pd.GPT2_MAGIC, pd.LLAMA_MAGIC, 240, 241, 127, 128)
JSON_EDGES = (None, True, False, 0, -1, 1, 2, 3, 2 ** 31, 2 ** 63, 2 ** 64, -(2 ** 63), 10 ** 400, -10 ** 400, 1.5, -0.0,
              1e308, 1e-320, float("nan"), float("inf"), float("-inf"), "", "x", "all", "cosine", "llama", "gpt2",
              "\x00", "\udcff", "../x", "ckpt/step_000004.pt", "/", [], [1], [0], [-1], [2, 4], {}, {"val_loss": 1.0})
KEYS = ("model", "train", "eval", "data", "trainer", "event", "step", "path", "result", "val_loss", "train_loss", "lr",
        "heads", "n_layer", "d_model", "vocab_size", "seq_len", "arch", "init", "tasks", "batches", "steps",
        "batch_size", "ffn_hidden", "rope_theta", "padded_vocab_size", "seed", "shuffle", "tokens", "grad_norm")


def edge(rng):
    return copy.deepcopy(rng.choice(JSON_EDGES))   # a fresh one: the mutations change lists and objects in place


def deep(rng):
    v = edge(rng)
    for _ in range(rng.choice((10, 100, 900, 3000, 100000))):
        v = [v] if rng.random() < 0.5 else {"a": v}
    return v


def json_nodes(v, path=()):
    """(path, value) of every node, parents before children."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from json_nodes(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from json_nodes(x, path + (i,))


def mutate_json(rng, data, pool):
    try:
        tree = json.loads(data.split(b"\n")[0].decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    try:
        nodes = list(json_nodes(tree))
    except RecursionError:   # a tree nested past the interpreter's depth (it came back parsed): leave it
        return None
    path, node = rng.choice(nodes)
    op = rng.randrange(7)
    if op == 6 and isinstance(node, str) and path:   # edit a string: a NUL, a surrogate, a path escape, length
        i = rng.randrange(len(node) + 1)
        ins = rng.choice(("\x00", "\udc80", "\ud800", "/..", "../", "//", "\n", "%d", "x" * 5000))
        parent = tree
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = node[:i] + ins + node[i:]
    elif op == 0 and isinstance(node, dict) and node:   # drop a key
        del node[rng.choice(list(node))]
    elif op == 1 and isinstance(node, (dict, list)):   # add a key / an element
        val = edge(rng) if rng.random() < 0.8 else deep(rng)
        if isinstance(node, dict):
            node[rng.choice(KEYS) if rng.random() < 0.8 else "zz"] = val
        else:
            node.insert(rng.randrange(len(node) + 1), val)
    else:   # replace this node: an edge value, deep nesting, or a node of another seed
        other = None
        if op == 5 and pool:
            try:
                other = rng.choice(list(json_nodes(json.loads(rng.choice(pool).split(b"\n")[0].decode("utf-8")))))[1]
            except (ValueError, RecursionError, IndexError):
                other = None
        val = other if other is not None else deep(rng) if op == 4 else edge(rng)
        if not path:
            tree = val
        else:
            parent = tree
            for k in path[:-1]:
                parent = parent[k]
            parent[path[-1]] = val
    try:
        return json.dumps(tree).encode("utf-8", "surrogatepass")
    except (RecursionError, ValueError):
        return None


def mutate_bytes(rng, data, pool, max_len):
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        op = rng.randrange(9)
        if op == 0 and b:   # bit flip
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:   # a byte set
            b[rng.randrange(len(b))] = rng.choice((0, 0xFF, 0x7F, 0x80, ord("0"), ord("9"), ord("-"), ord('"'), ord("{")))
        elif op == 2:   # insert bytes
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 4, 16))))
        elif op == 3 and b:   # delete a range
            i = rng.randrange(len(b))
            del b[i:i + rng.choice((1, 2, 4, 64, 1024))]
        elif op == 4 and b:   # truncate
            del b[rng.randrange(len(b)):]
        elif op == 5 and len(b) >= 4:   # an int32 header slot (aligned, the first 1 KiB mostly) to an edge value
            slot = rng.randrange(min(len(b), 1024) // 4) if rng.random() < 0.8 else rng.randrange(len(b) // 4)
            b[4 * slot:4 * slot + 4] = struct.pack("<i", rng.choice(INT32_EDGES))
        elif op == 6 and pool:   # splice with another input
            o = rng.choice(pool)
            i, j = rng.randrange(len(b) + 1), rng.randrange(len(o) + 1)
            b = b[:i] + o[j:]
        elif op == 7 and b:   # duplicate a chunk
            i = rng.randrange(len(b))
            b[i:i] = b[i:i + rng.choice((1, 4, 32, 1024))]
        elif op == 8 and len(b) >= 4:   # grow the file (a count the size then disagrees with, or agrees with)
            b += bytes(rng.choice((2, 4, 1024, 4096)))
    return bytes(b[:max_len]) if len(b) > max_len else bytes(b)


def mutate(rng, target, data, pool):
    if target in ("job", "protocol") and rng.random() < 0.85:   # most mutants stay JSON: they reach the key checks
        out = data
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            out = mutate_json(rng, out, pool) if out is not None else None
        if out is not None:
            if target == "protocol" and rng.random() < 0.3:   # a line after others (order rules)
                out = rng.choice(pool).rstrip(b"\n") + b"\n" + out
            return out[:MAX_LEN[target] * 16]
    if target in ("job", "protocol") and rng.random() < 0.02:
        return b"[" * rng.choice((1000, 100000)) + data
    return mutate_bytes(rng, data, pool, MAX_LEN[target])


# ---- the driver -----------------------------------------------------------------------------------------
class Crash(Exception):
    pass


def run_one(targets, target, data, timeout):
    """True parsed / False refused with the documented error; raises Crash(description) otherwise."""
    try:
        return _run_one(targets, target, data, timeout)
    except Hang:   # the alarm landed after the target returned, in the cleanup: still past the cap
        raise Crash("hang: no answer within %gs (--timeout)" % timeout)


def _run_one(targets, target, data, timeout):
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return bool(getattr(targets, target)(data))
    except ALLOWED[target] as e:
        if not str(e).strip():
            raise Crash("%s with an empty message" % type(e).__name__)
        return False
    except Hang:
        raise Crash("hang: no answer within %gs (--timeout)" % timeout)
    except (Exception, RecursionError, MemoryError) as e:   # noqa: B014 (RecursionError, MemoryError named for the reader)
        tb = traceback.extract_tb(e.__traceback__)
        mine = (pd.__file__, pp.__file__)
        where = next((f for f in reversed(tb) if f.filename in mine), tb[-1] if tb else None)
        at = " at %s:%d (%s)" % (os.path.basename(where.filename), where.lineno, where.name) if where else ""
        raise Crash("%s: %s%s" % (type(e).__name__, str(e)[:300], at))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def save_crash(crash_dir, target, data, why):
    os.makedirs(crash_dir, exist_ok=True)
    p = os.path.join(crash_dir, "%s-crash-%s" % (target, hashlib.sha1(data).hexdigest()[:16]))
    with open(p, "wb") as f:
        f.write(data)
    print("fuzz_trainer: CRASH target=%s %s\n  reproducer: %s\n  replay: /usr/bin/python3 fuzz/fuzz_trainer.py "
          "--target %s --replay %s" % (target, why, p, target, p), file=sys.stderr, flush=True)
    return p


def replay(targets, target, files, timeout):
    acc = rej = 0
    crashes = []
    for f in files:
        data = open(f, "rb").read()
        try:
            if run_one(targets, target, data, timeout):
                acc += 1
            else:
                rej += 1
        except Crash as c:
            print("fuzz_trainer: CRASH target=%s %s\n  input: %s" % (target, c, f), file=sys.stderr, flush=True)
            crashes.append(f)
    print("fuzz_trainer: replay %s: %d files, %d parsed, %d refused, %d crashes" % (target, len(files), acc, rej, len(crashes)))
    return acc, rej, crashes


def fuzz(targets, target, args, crash_dir):
    rng = random.Random("%s:%d" % (target, args.seed))
    pool = [open(f, "rb").read() for f in corpus_files(target)] + built_in_seeds(target)
    pool = [p for p in pool if len(p) <= MAX_LEN[target] * 16]
    seen, crashes, n, acc = set(), [], 0, 0
    t0 = time.monotonic()
    while True:
        if args.seconds is not None and time.monotonic() - t0 >= args.seconds:
            break
        if args.seconds is None and n >= args.iterations:
            break
        data = mutate(rng, target, rng.choice(pool), pool)
        n += 1
        try:
            if run_one(targets, target, data, args.timeout):
                acc += 1
                if len(pool) < 400 and rng.random() < 0.1:   # parsed mutants seed later ones
                    pool.append(data)
        except Crash as c:
            key = str(c).split(": ")[0] + str(c).rsplit(" at ", 1)[-1]
            if key in seen:
                continue
            seen.add(key)
            crashes.append(save_crash(crash_dir, target, data, str(c)))
            if not args.keep_going:
                break
    print("fuzz_trainer: fuzz %s: %d inputs (seed %d, %.1fs), %d parsed, %d crashes"
          % (target, n, args.seed, time.monotonic() - t0, acc, len(crashes)))
    return crashes


def target_of_dir(d):
    base = os.path.basename(os.path.normpath(d))
    base = base[3:] if base.startswith("py-") else base
    for t, dirs in CORPORA.items():
        if base in (t, dirs[0]):
            return t
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=sorted(CORPORA), action="append", help="a target (repeatable; default all)")
    ap.add_argument("--iterations", type=int, default=2000, help="inputs per target (default 2000)")
    ap.add_argument("--seconds", type=float, help="time per target instead of --iterations")
    ap.add_argument("--seed", type=int, default=1, help="the random seed (default 1)")
    ap.add_argument("--replay", nargs="?", const="", metavar="DIR|FILE",
                    help="replay only: DIR's files (or one FILE), or with no value every target's committed corpora")
    ap.add_argument("--crash-dir", default=os.path.join(ROOT, "build", "fuzz", "py-crash"), help="where reproducers go")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds per input before it counts as a hang (default 5)")
    ap.add_argument("--mem-mb", type=int, default=4096, help="address-space cap (default 4096 MiB)")
    ap.add_argument("--trainer-dir", default=TRAINER_DIR, help="the prism_data.py/prism_protocol.py to fuzz "
                    "(default trainers/torch)")
    ap.add_argument("--keep-going", action="store_true", help="after a crash, keep fuzzing that target (new crashes only)")
    args = ap.parse_args(argv)
    if args.iterations < 0 or (args.seconds is not None and args.seconds < 0):
        ap.error("--iterations and --seconds must be >= 0")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = args.mem_mb << 20 if hard == resource.RLIM_INFINITY else min(args.mem_mb << 20, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))

    def on_alarm(signum, frame):
        raise Hang()
    signal.signal(signal.SIGALRM, on_alarm)
    crashes = []
    with tempfile.TemporaryDirectory(prefix="prism-pyfuzz-") as tmp:
        targets = Targets(tmp)
        if args.replay is not None:
            if args.replay:
                t = args.target[0] if args.target else target_of_dir(args.replay if os.path.isdir(args.replay)
                                                                      else os.path.dirname(args.replay))
                if t is None:
                    ap.error("--replay %s: cannot tell the target from the name: add --target" % args.replay)
                files = corpus_files(t, [args.replay]) if os.path.isdir(args.replay) else [args.replay]
                crashes += replay(targets, t, files, args.timeout)[2]
            else:
                for t in args.target or sorted(CORPORA):
                    acc, rej, c = replay(targets, t, corpus_files(t), args.timeout)
                    crashes += c
                    if acc < 1 or rej < 1:
                        print("fuzz_trainer: replay %s: the corpus must hold inputs it parses and inputs it refuses "
                              "(%d parsed, %d refused)" % (t, acc, rej), file=sys.stderr)
                        crashes.append(t)
        else:
            for t in args.target or sorted(CORPORA):
                crashes += fuzz(targets, t, args, args.crash_dir)
        os.close(targets.devnull)
    if crashes:
        print("fuzz_trainer: FAILED: %d crash(es): %s" % (len(crashes), " ".join(crashes)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
