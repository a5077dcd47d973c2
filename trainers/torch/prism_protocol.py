"""prism_protocol — speak prism-sweep's external-trainer protocol from your own training script.

Design. A worker started with `prism-worker --trainer NAME=COMMAND` runs COMMAND with the environment below and
reads one JSON object per line from the trainer's fd 3 (docs/TRAINERS.md is the contract). This module is the
trainer side of that contract and nothing else: it reads the environment, checks every line before it is written
(the same rules the worker enforces, so a mistake fails here with a Python traceback naming it instead of as a
failed job), writes checkpoints atomically inside PRISM_OUT, and turns SIGTERM into a flag the training loop polls.
Under torchrun only rank 0 writes lines (the others' calls are no-ops), and where torchrun closed fd 3 the launcher's
FIFO (PRISM_PROTOCOL_FIFO, set by trainers/torch/train.py) takes its place.

    import prism_protocol as pp
    run = pp.Run()                       # reads PRISM_JOB, PRISM_OUT, PRISM_RESUME, PRISM_STOP_AT_STEP, ...
    run.install_sigterm()                # SIGTERM -> run.stop_requested (finish the step, checkpoint, preempted)
    job = run.job                        # the job JSON as the lease gave it (a dict)
    for step in range(start, steps):
        if run.stop_requested: path = run.save(state, step); run.checkpoint(step, path); run.preempted(step); exit(0)
        ...
        run.train(step, loss, lr=lr, grad_norm=gn, tokens=(step + 1) * tokens_per_step, tok_per_s=tps,
                  extra={"mfu": mfu})     # extra: your own metrics, stored, plotted and exported (optional)
    run.val(steps, val_loss, val_loss_se)
    run.result({...})                    # the keys of the built-in engine's result.json
    # or, instead of a result: run.failed("oom", str(e), retryable=True) / run.failed("diverged", why)
    # and during a long pause (a compile, a long eval): run.heartbeat()

Environment: PRISM_JOB (path of the job JSON), PRISM_OUT (the job's directory, absolute), PRISM_RESUME (a checkpoint
this trainer reported earlier, or empty), PRISM_STOP_AT_STEP (0 = the job's train.steps), PRISM_DEVICES (`cpu` or
CUDA ordinals `0,1`), PRISM_DATA_ROOT (the job's relative data paths resolve against it).
"""
import json
import math
import os
import re
import signal
import tempfile

MAX_LINE = 65536
MAX_KEY = 64   # bytes of a key in a result, at any depth (worker/extrun.h EXTRUN_KEY_MAX)
# the result keys the worker refuses at the top (worker/extrun_line.c EXTRUN_RESULT_RESERVED): which job, attempt and
# worker a result belongs to is the worker's and the server's to say, "backend" is the built-in CUDA engine's
RESULT_RESERVED = ("job", "job_id", "sweep_id", "schedule_id", "attempt", "lease_token", "worker", "worker_id", "backend",
                   "trainer_command", "trainer_version")
# a line's or a result's own metrics, "extra": {NAME: number} (common/point.h point_extra_check's bounds)
EXTRA_MAX = 16          # POINT_EXTRA_MAX: names in one extra object
EXTRA_NAME = re.compile(r"[A-Za-z0-9_./-]{1,64}\Z")   # POINT_EXTRA_NAME_MAX = 64
EXTRA_ABS_MAX = 1e300   # POINT_EXTRA_ABS_MAX
REASON = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,62}\Z")   # a failed line's reason: oom, diverged, nccl, ...
TERMINAL = ("result", "paused", "preempted", "failed")
# event -> (required keys, optional keys), as the worker checks them (`prism-worker schema --json`'s "events";
# tests/integration/test_schema.sh fails naming a key missing here); every value but "event" and "path"/"result" is a finite number
EVENTS = {
    "train": (("step", "train_loss"), ("lr", "grad_norm", "tokens", "tok_per_s", "extra")),
    "val": (("step", "val_loss"), ("val_loss_se", "zero_shot", "extra")),
    "checkpoint": (("step", "path"), ()),
    "paused": (("step", "val_loss"), ()),
    "preempted": (("step",), ()),
    "result": (("result",), ()),
    "heartbeat": ((), ()),
    "failed": (("reason",), ("retryable", "message")),
    "start": ((), ("version",)),   # optional, only as the first line: who the trainer is (recorded with the result)
}
VERSION_MAX = 128   # worker/extrun.h EXTRUN_VERSION_MAX: printable ASCII
INT_KEYS = ("step", "tokens")


class ProtocolError(Exception):
    """A line that the worker would refuse (the message names the event and the key)."""


def _env_int(name, default=0):
    v = os.environ.get(name, "")
    if v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ProtocolError("%s: expected an integer, got %r" % (name, v))


def load_job(path):
    """The job JSON at PRISM_JOB as a dict, or ProtocolError naming the file and what is wrong with it. Checks only
    what Run needs (an object; train.steps, when given, a positive integer); prism_data.job_normalize checks the rest."""
    try:
        with open(path, "rb") as f:
            job = json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise ProtocolError("PRISM_JOB: %s: cannot read the job file (%s)" % (path, e.strerror or e))
    except (ValueError, RecursionError) as e:   # JSONDecodeError, UnicodeDecodeError; nesting past the parser's depth
        raise ProtocolError("PRISM_JOB: %s: not a JSON job (%s): the worker writes it as UTF-8 JSON; check the file"
                            % (path, str(e)[:200] or type(e).__name__))
    if not isinstance(job, dict):
        raise ProtocolError("PRISM_JOB: %s: expected a JSON object, got %s" % (path, type(job).__name__))
    train = job.get("train", {})
    if not isinstance(train, dict):
        raise ProtocolError("PRISM_JOB: %s: train: expected an object" % path)
    steps = train.get("steps", 100)
    if not _is_int(steps) or not 1 <= steps <= 10 ** 9:
        raise ProtocolError("PRISM_JOB: %s: train.steps: expected an integer in 1..1000000000, got %.40r" % (path, steps))
    return job


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _finite_number(v):
    """A number the worker reads: a finite float, or an integer that fits int64 (jansson's json_int_t)."""
    if _is_int(v):
        return -(1 << 63) <= v < (1 << 63)
    return isinstance(v, float) and math.isfinite(v)


def rank():
    """This process's rank under torchrun (0 when not distributed)."""
    return int(os.environ.get("RANK", "0"))


def _check_zero_shot(zs, where):
    """{task: {"acc", "acc_norm" in [0, 1], "acc_norm_char" (optional) in [0, 1], "n", "truncated" integers >= 0}}
    (what worker/extrun_line.c accepts: common/result_check.c result_check_scores)."""
    if not isinstance(zs, dict):
        raise ProtocolError("%s: must be an object {task: {acc, acc_norm, n, truncated}}" % where)
    for name, v in zs.items():
        if not isinstance(v, dict):
            raise ProtocolError("%s.%s: must be an object {acc, acc_norm, n, truncated}" % (where, name))
        for k in ("acc", "acc_norm"):
            x = v.get(k)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
                raise ProtocolError("%s.%s.%s: must be a number in [0, 1], got %r" % (where, name, k, x))
        x = v.get("acc_norm_char")   # lm-eval's acc_norm (per character); absent when the file has no counts
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1):
            raise ProtocolError("%s.%s.acc_norm_char: must be a number in [0, 1] (or absent), got %r" % (where, name, x))
        for k in ("n", "truncated"):
            x = v.get(k)
            if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
                raise ProtocolError("%s.%s.%s: must be an integer >= 0, got %r" % (where, name, k, x))


def _check_extra(ex, where):
    """{NAME: number}: at most EXTRA_MAX names of [A-Za-z0-9_./-]{1,64}, finite numbers of magnitude <= 1e300; None or
    {} = none (what worker/extrun_line.c and the server accept: common/point.c point_extra_check)."""
    if ex is None:
        return
    if not isinstance(ex, dict):
        raise ProtocolError("%s: must be an object {name: number}, got %s" % (where, type(ex).__name__))
    if len(ex) > EXTRA_MAX:
        raise ProtocolError("%s: %d names: at most %d" % (where, len(ex), EXTRA_MAX))
    for k, v in ex.items():
        if not isinstance(k, str) or not EXTRA_NAME.match(k):
            raise ProtocolError("%s: name %.70r: names are 1 to 64 characters of A-Z a-z 0-9 _ . / -" % (where, k))
        if not _finite_number(v) or abs(v) > EXTRA_ABS_MAX:
            raise ProtocolError("%s.%s: must be a finite number (magnitude at most 1e300), got %.40r" % (where, k, v))


def _check_keys(v, where):
    """Every key of a result, at any depth, at most MAX_KEY bytes (the worker refuses longer ones)."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, y in x.items():
                if not isinstance(k, str) or len(k.encode("utf-8", "surrogatepass")) > MAX_KEY:
                    raise ProtocolError("%s: a key of %d bytes (%.40r...): keys are at most %d bytes"
                                        % (where, len(str(k).encode("utf-8", "surrogatepass")), k, MAX_KEY))
                stack.append(y)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)


class Run:
    """One protocol session: the environment, the job, the line writer and the stop flag."""

    def __init__(self, environ=None, out_fd=3):
        env = os.environ if environ is None else environ
        self.job_path = env.get("PRISM_JOB", "")
        self.out = env.get("PRISM_OUT", "")
        if not self.job_path:
            raise ProtocolError("PRISM_JOB is not set: run this trainer through prism-worker --trainer NAME=COMMAND, or set "
                                "PRISM_JOB (the job JSON) and PRISM_OUT (its directory) and open fd 3 (3>lines.jsonl)")
        if not self.out or not os.path.isabs(self.out):
            raise ProtocolError("PRISM_OUT must be the job's directory as an absolute path, got %r" % self.out)
        self.job = load_job(self.job_path)
        self.resume = env.get("PRISM_RESUME", "") or None
        self.stop_at_step = _env_int("PRISM_STOP_AT_STEP", 0)
        self.devices = env.get("PRISM_DEVICES", "") or "cpu"
        self.data_root = env.get("PRISM_DATA_ROOT", "") or os.getcwd()
        self.steps = self.job.get("train", {}).get("steps", 100)
        if self.stop_at_step < 0 or (self.stop_at_step and self.stop_at_step >= self.steps):
            raise ProtocolError("PRISM_STOP_AT_STEP: %d must be 0 or in 1..train.steps-1 (%d)" % (self.stop_at_step, self.steps - 1))
        self.stop_requested = False
        self.last_train_step = -1
        self.done = False
        self.lines = 0
        self._fh = None
        if rank() == 0:
            fifo = env.get("PRISM_PROTOCOL_FIFO", "")
            try:
                self._fh = open(fifo, "w", buffering=1) if fifo else os.fdopen(os.dup(out_fd), "w", buffering=1)
            except OSError as e:
                raise ProtocolError("fd %d (the protocol pipe) is not open (%s): prism-worker opens it; run by hand with "
                                    "3>lines.jsonl" % (out_fd, e))
        os.makedirs(self.out, exist_ok=True)

    # ---- signals ------------------------------------------------------------------------------------
    def install_sigterm(self):
        """SIGTERM sets stop_requested: the loop finishes its step, checkpoints and calls preempted()."""
        def on_term(signum, frame):
            self.stop_requested = True
        signal.signal(signal.SIGTERM, on_term)

    # ---- paths --------------------------------------------------------------------------------------
    def data_path(self, p):
        """A job path (data glob, model.init) as the built-in engine opens it: relative ones under PRISM_DATA_ROOT."""
        return p if os.path.isabs(p) else os.path.join(self.data_root, p)

    def checkpoint_path(self, step):
        """Where the checkpoint after `step` steps goes: PRISM_OUT/ckpt/step_NNNNNN.pt."""
        return os.path.join(self.out, "ckpt", "step_%06d.pt" % step)

    def inside_out(self, path):
        full = os.path.realpath(path if os.path.isabs(path) else os.path.join(self.out, path))
        root = os.path.realpath(self.out)
        return full.startswith(root + os.sep)

    def save(self, write, step):
        """Writes the checkpoint for `step` with write(file_object) to a temporary name, fsyncs and renames it;
        returns its path (complete when this returns, as a checkpoint line requires)."""
        path = self.checkpoint_path(step)
        d = os.path.dirname(path)
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dfd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return path

    # ---- lines --------------------------------------------------------------------------------------
    def _check(self, obj):
        if not isinstance(obj, dict):
            raise ProtocolError("line: expected a JSON object with an \"event\", got %s" % type(obj).__name__)
        ev = obj.get("event")
        if not isinstance(ev, str) or ev not in EVENTS:
            raise ProtocolError("event %.40r: unknown (known: %s)" % (ev, " ".join(EVENTS)))
        req, opt = EVENTS[ev]
        for k in obj:
            if k != "event" and k not in req and k not in opt:
                raise ProtocolError("%s.%s: unknown key (known: %s)" % (ev, k, " ".join(req + opt)))
        for k in req:
            if obj.get(k) is None:
                raise ProtocolError("%s.%s: required" % (ev, k))
        for k, v in obj.items():
            if k in ("event", "path", "result", "zero_shot", "reason", "retryable", "message") or v is None:
                continue
            if k == "extra":
                _check_extra(v, "%s.extra" % ev)
                continue
            if k == "version":
                if not (isinstance(v, str) and 1 <= len(v) <= VERSION_MAX and all(" " <= c <= "~" for c in v)):
                    raise ProtocolError("start.version: must be a string of 1-%d printable ASCII characters, got %.40r"
                                        % (VERSION_MAX, v))
                continue
            if not _finite_number(v):
                raise ProtocolError("%s.%s: must be a finite number (an integer within int64), got %.40r" % (ev, k, v))
            if k in INT_KEYS and not isinstance(v, int):
                raise ProtocolError("%s.%s: must be an integer, got %r" % (ev, k, v))
        if "step" in obj:
            s = obj["step"]
            if s < 0 or s > self.steps:
                raise ProtocolError("%s.step: %d is outside 0..train.steps (%d)" % (ev, s, self.steps))
            if ev == "train":
                if s <= self.last_train_step:
                    raise ProtocolError("train.step: %d does not increase (last %d)" % (s, self.last_train_step))
                if s >= self.steps:
                    raise ProtocolError("train.step: %d is past the last step %d" % (s, self.steps - 1))
        if ev == "checkpoint":
            p = obj["path"]
            if isinstance(p, str) and ("\0" in p or any(0xD800 <= ord(c) <= 0xDFFF for c in p)):
                raise ProtocolError("checkpoint.path: %.80r holds a NUL or an unpaired surrogate: not a file name the worker "
                                    "can open (write the path as save() returns it)" % p)
            if not isinstance(p, str) or not self.inside_out(p):
                raise ProtocolError("checkpoint.path: %r is not inside PRISM_OUT (%s)" % (p, self.out))
            if not os.path.isfile(p if os.path.isabs(p) else os.path.join(self.out, p)):
                raise ProtocolError("checkpoint.path: %s does not exist (write it completely before the line)" % p)
        if obj.get("zero_shot") is not None:
            _check_zero_shot(obj["zero_shot"], "%s.zero_shot" % ev)
            if obj["step"] != self.steps:
                raise ProtocolError("val.zero_shot: only on the final val line (step = train.steps %d), got step %d"
                                    % (self.steps, obj["step"]))
        if ev == "failed":
            if not isinstance(obj["reason"], str) or not REASON.match(obj["reason"]):
                raise ProtocolError("failed.reason: must be a word of 1-63 [A-Za-z0-9._-] (oom, diverged, nccl, ...), "
                                    "got %.40r" % (obj["reason"],))
            if obj.get("retryable") is not None and not isinstance(obj["retryable"], bool):
                raise ProtocolError("failed.retryable: must be true or false, got %.40r" % (obj["retryable"],))
            if obj.get("message") is not None and not isinstance(obj["message"], str):
                raise ProtocolError("failed.message: must be a string, got %.40r" % (obj["message"],))
        if ev == "result":
            r = obj["result"]
            if isinstance(r, dict):
                for k in RESULT_RESERVED:
                    if k in r:
                        raise ProtocolError("result.result.%s: a trainer may not set it (the worker and the server know "
                                            "which job, attempt, worker and backend this is)" % k)
                _check_keys(r, "result.result")
            if isinstance(r, dict) and r.get("zero_shot") is not None:
                _check_zero_shot(r["zero_shot"], "result.result.zero_shot")
            if isinstance(r, dict):
                _check_extra(r.get("extra"), "result.result.extra")
            if not isinstance(r, dict) or not _finite_number(r.get("val_loss")):
                raise ProtocolError("result.result: must be an object with a finite val_loss")
        if ev == "start" and self.lines:
            raise ProtocolError("start: only as the first line")
        if self.done:
            raise ProtocolError("%s: a line after the terminal one" % ev)

    def emit(self, obj):
        """Checks obj against the protocol and writes it as one line (rank 0 only)."""
        self._check(obj)
        try:
            line = json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n"
            json.dumps(obj, ensure_ascii=False).encode("utf-8")   # an unpaired surrogate: the worker's jansson refuses it
        except (ValueError, TypeError, RecursionError) as e:   # NaN/Infinity, a surrogate, a non-JSON value, nesting
            raise ProtocolError("%s: not encodable as a protocol line (%s): every value must be JSON, numbers finite"
                                % (obj["event"], str(e)[:200] or type(e).__name__))
        if len(line.encode("utf-8")) > MAX_LINE:
            raise ProtocolError("%s: line of %d bytes exceeds %d" % (obj["event"], len(line), MAX_LINE))
        if obj["event"] == "train":
            self.last_train_step = obj["step"]
        if obj["event"] in TERMINAL:
            self.done = True
        self.lines += 1
        if self._fh is not None:
            self._fh.write(line)
            self._fh.flush()

    def start(self, version=None):
        """The optional first line: the trainer's version, which the worker records with the result."""
        self.emit(dict(event="start", **({"version": version} if version is not None else {})))

    def train(self, step, train_loss, **kw):
        self.emit(dict(event="train", step=step, train_loss=float(train_loss), **{k: v for k, v in kw.items() if v is not None}))

    def val(self, step, val_loss, val_loss_se=None, zero_shot=None, extra=None):
        """A val point; zero_shot ({task: {"acc", "acc_norm", "n", "truncated"[, "acc_norm_char"]}}) only on the final one; extra your
        own metrics {name: number} (as train's extra=)."""
        o = dict(event="val", step=step, val_loss=float(val_loss))
        if val_loss_se is not None:
            o["val_loss_se"] = float(val_loss_se)
        if zero_shot is not None:
            o["zero_shot"] = zero_shot
        if extra is not None:
            o["extra"] = extra
        self.emit(o)

    def checkpoint(self, step, path):
        self.emit(dict(event="checkpoint", step=step, path=os.path.relpath(path, self.out) if os.path.isabs(path) else path))

    def paused(self, step, val_loss):
        self.emit(dict(event="paused", step=step, val_loss=float(val_loss)))

    def preempted(self, step):
        self.emit(dict(event="preempted", step=step))

    def result(self, result):
        self.emit(dict(event="result", result=result))

    def heartbeat(self):
        """A keep-alive: the trainer is busy but alive (it resets the worker's --trainer-timeout clock)."""
        self.emit(dict(event="heartbeat"))

    def failed(self, reason, message="", retryable=False):
        """The run failed and the trainer knows why: reason "diverged" reads as the built-in engine's divergence
        ("diverged: MESSAGE", never retried); retryable=True (a CUDA OOM, an NCCL timeout) lets the job be leased again."""
        o = dict(event="failed", reason=reason, retryable=bool(retryable))
        if message:
            o["message"] = str(message)
        self.emit(o)

    def close(self):
        if self._fh is not None:
            self._fh.close()
            self._fh = None
