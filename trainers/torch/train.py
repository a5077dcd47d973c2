#!/usr/bin/python3
"""train.py — prism-sweep's reference PyTorch trainer: a job of the protocol (prism_protocol.py), trained like the built-in.

    prism-worker --trainer torch="/usr/bin/python3 /path/to/trainers/torch/train.py" ...
    train.py [--precision auto|fp32|bf16] [--attention auto|sdpa|math] [--compile] [--nproc N] [--threads N]

Design. The run is worker/train.c's loop, step for step: [stop?] -> [eval at 0, every eval.every, the rung] ->
grad_accum x (micro-batch, forward, backward of loss/accum) -> global-norm clip (scale clip/norm when above) ->
AdamW (decoupled decay lr*wd on the 2-D tensors only, bias correction t = step+1) at lr_at(step) -> train line ->
[checkpoint every train.checkpoint_every]; after the last step the final evaluation, the zero-shot tasks (eval.tasks,
prism_eval.py: files checked at setup, scored on the final model; the counts all-reduced over the ranks, each of
which scores examples i % N == rank; on the final val line and in the result), model.bin and the result.
Data order, seed init and model files come from prism_data.py (the built-in's, so a seed means the same in both).
A checkpoint (torch.save, tmp + fsync + rename) holds the model, AdamW's state, the step, the data position (micro-
batches consumed) and the RNG state, with the job's shape/seed/batch fields that resuming checks; resuming from one
reproduces the uninterrupted run's losses.
Devices: PRISM_DEVICES `cpu`, `cpu,cpu` (N CPU ranks) or CUDA ordinals. More than one (or --nproc N / PRISM_TORCH_NPROC)
and not yet under torchrun: this process becomes the launcher. It starts `python3 -m torch.distributed.run
--standalone --nproc_per_node N train.py ...` in its own process group's stead (same group: a cancel reaches every
rank), relays rank 0's lines from a FIFO to fd 3 (torchrun closes inherited fds), and exits 0 once a terminal line
came through. The ranks split each micro-batch's B rows (B % N == 0), so tokens per step stay the job's; DDP
averages the gradients; the stop flag is max-reduced every step so all ranks stop at the same step; rank 0 alone
writes lines and checkpoints. On CUDA: bf16 autocast (--precision auto), SDPA, fused AdamW where torch has it,
torch.compile with --compile. PRISM_DUMP_BATCHES=FILE appends every train micro-batch's B x (T+1) tokens (uint16)
to FILE, the same bytes `prism-worker train` writes with the same variable (tests compare them).
Exit: 0 after a terminal line; 2 bad job/data/checkpoint (stderr names it); 1 a failure while training.
"""
import time
T_PROCESS = time.time()   # the setup_s of the result counts from here: imports, data, model, resume (device time)
import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import prism_data as pd  # noqa: E402
import prism_eval as pe  # noqa: E402
import prism_protocol as pp  # noqa: E402
from model import Model  # noqa: E402

DIVERGED_FACTOR = 1.1
CKPT_FORMAT = "prism-sweep torch trainer state"


class TrainError(Exception):
    """A failure the trainer names on fd 3 with a "failed" line: reason (diverged, nan, oom), retryable."""
    reason, retryable = "error", False


class Diverged(TrainError):
    reason = "diverged"   # the worker reports it as the built-in engine's divergence: "diverged: MESSAGE"


class NotFinite(TrainError):
    reason = "nan"        # read as "loss is not finite: MESSAGE"


def is_oom(e):
    """A CUDA (or host) out-of-memory error: another box, or this one later, may do better (retryable)."""
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or (isinstance(e, (RuntimeError, MemoryError)) and
                                                        "out of memory" in str(e).lower())


def lr_at(t, step):
    if step < t["warmup_steps"]:
        return t["lr"] * (step + 1) / t["warmup_steps"]
    if t["lr_schedule"] == "constant":
        return t["lr"]
    min_lr = t["lr"] * t["min_lr_frac"]
    span = t["steps"] - t["warmup_steps"]
    ratio = (step - t["warmup_steps"]) / span if span > 0 else 1.0
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (t["lr"] - min_lr)


def is_cpu(devices):
    """PRISM_DEVICES `cpu`, or `cpu,cpu,...` (a worker's --devices cpu,cpu --devices-per-job 2: one CPU rank each)."""
    return all(d.strip() == "cpu" for d in devices.split(","))


def fingerprint(job):
    m, t = job["model"], job["train"]
    return {"arch": m["arch"], "n_layer": m["n_layer"], "d_model": m["d_model"], "vocab_size": m["vocab_size"],
            "padded_vocab_size": m["padded_vocab_size"], "seq_len": m["seq_len"], "heads": list(m["heads"]),
            "ffn_hidden": m.get("ffn_hidden"), "rope_theta": m.get("rope_theta"), "seed": t["seed"],
            "batch_size": t["batch_size"], "train.seq_len": t["seq_len"], "grad_accum": t["grad_accum"]}


# ---- the launcher (several processes under torchrun) ---------------------------------------------------
def launch(nproc, argv):
    try:   # refused here, before nproc interpreters start (the ranks check it again)
        r = pp.Run()
        r.close()
        job = pd.job_normalize(r.job)
        apply_trainer_args(argparse.Namespace(), job)
        B = job["train"]["batch_size"]
    except (pd.JobError, pp.ProtocolError, OSError, ValueError) as e:
        print("torch trainer: %s" % e, file=sys.stderr)
        return 2
    if B % nproc:
        print("torch trainer: train.batch_size %d does not split over %d processes (each rank takes B/N rows of every "
              "micro-batch): use a device count that divides it" % (B, nproc), file=sys.stderr)
        return 2
    d = tempfile.mkdtemp(prefix="prism-torch-")
    fifo = os.path.join(d, "lines")
    os.mkfifo(fifo, 0o600)
    rfd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)     # RDWR: no EOF while ranks come and go
    env = dict(os.environ, PRISM_PROTOCOL_FIFO=fifo)
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun.py"), "--standalone", "--nnodes=1",
           "--nproc_per_node=%d" % nproc, os.path.abspath(__file__)] + argv
    try:
        out = os.fdopen(os.dup(3), "wb", buffering=0)
    except OSError as e:
        print("train.py: fd 3 (the protocol pipe) is not open (%s): run under prism-worker, or with 3>lines.jsonl" % e,
              file=sys.stderr)
        return 2
    # A cancel is SIGTERM to the whole process group: torchrun and every rank get it themselves (the ranks finish
    # their step and checkpoint; torchrun waits for them). The launcher outlives them to relay the last lines, so
    # it only notes the signal (a handler, not SIG_IGN, which torchrun would inherit).
    signal.signal(signal.SIGTERM, lambda s, f: None)
    proc = subprocess.Popen(cmd, env=env)
    buf, terminal = b"", False

    def pump(timeout):
        nonlocal buf, terminal
        r, _, _ = select.select([rfd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(rfd, 65536)
        except BlockingIOError:
            return False
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            out.write(line + b"\n")
            if any(b'"event":"%s"' % e.encode() in line for e in pp.TERMINAL):
                terminal = True
        return bool(data)

    while proc.poll() is None:
        pump(0.1)
    while pump(0):
        pass
    os.close(rfd)
    os.unlink(fifo)
    os.rmdir(d)
    if terminal:
        return 0
    return proc.returncode if proc.returncode and proc.returncode > 0 else 1


TRAINER_VERSION = "prism-torch-trainer/1"   # the start line's version (with torch's): raise it when results change

# The spec's trainer.args this trainer takes (the job's trainer_args, docs/TRAINERS.md): its command-line options,
# set per sweep. Any other name is refused (exit 2 naming it), never ignored.
TRAINER_ARGS = {"precision": ("auto", "fp32", "bf16"), "attention": ("auto", "sdpa", "math"), "compile": bool}


def apply_trainer_args(args, job):
    """Sets args' options from job["trainer_args"], or JobError naming the bad one."""
    for k, v in sorted(job.get("trainer_args", {}).items()):
        if k not in TRAINER_ARGS:
            raise pd.JobError("trainer_args.%s: not an option of the torch trainer (known: %s); remove it from the "
                              "spec's trainer.args" % (k, ", ".join(sorted(TRAINER_ARGS))))
        kind = TRAINER_ARGS[k]
        if kind is bool and not isinstance(v, bool):
            raise pd.JobError("trainer_args.%s: must be true or false, got %s" % (k, pd.json_type(v)))
        if kind is not bool and v not in kind:
            raise pd.JobError("trainer_args.%s: expected %s, got %s" % (k, " or ".join('"%s"' % x for x in kind), json.dumps(v)))
        setattr(args, k, v)


# ---- the run -------------------------------------------------------------------------------------------
class Trainer:
    def __init__(self, args):
        self.args = args
        self.run = pp.Run()
        self.run.install_sigterm()   # before the setup: a SIGTERM during it stops at step `start`, checkpointed
        self.job = pd.job_normalize(self.run.job)
        apply_trainer_args(args, self.job)
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        devs = self.run.devices
        if is_cpu(devs):
            self.device = torch.device("cpu")
        else:
            ords = [int(x) for x in devs.split(",")]
            lr = int(os.environ.get("LOCAL_RANK", "0"))
            if not torch.cuda.is_available():
                raise TrainError("PRISM_DEVICES %s: torch %s sees no CUDA device" % (devs, torch.__version__))
            self.device = torch.device("cuda", ords[lr])
            torch.cuda.set_device(self.device)
        self.cuda = self.device.type == "cuda"
        if self.world > 1:
            dist.init_process_group("nccl" if self.cuda else "gloo")
        prec = args.precision if args.precision != "auto" else ("bf16" if self.cuda else "fp32")
        if prec == "bf16" and not self.cuda:
            raise TrainError("--precision bf16 needs a CUDA device (PRISM_DEVICES is cpu)")
        self.bf16 = prec == "bf16"
        self.precision = prec

    def log(self, msg):
        if self.rank == 0:
            print("torch trainer: " + msg, file=sys.stderr, flush=True)

    def allreduce(self, x, op=None):
        if self.world == 1:
            return x
        t = torch.tensor([float(x)], dtype=torch.float64, device=self.device)   # NCCL reduces device tensors only
        dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
        return t.item()

    def setup(self):
        job, run = self.job, self.run
        m, t = job["model"], job["train"]
        B, T = t["batch_size"], t["seq_len"]
        if B % self.world:
            raise pd.JobError("train.batch_size %d does not split over %d processes (each rank takes B/N rows of every "
                              "micro-batch): use a device count that divides it" % (B, self.world))
        self.train_ld = pd.Loader("data.train", run.data_path(job["data"]["train"]), B, T, t["shuffle"], t["seed"], m["vocab_size"])
        self.val_ld = pd.Loader("data.val", run.data_path(job["data"]["val"]), B, T, False, 0, m["vocab_size"])
        have = self.val_ld.nwin // B
        nb = job["eval"]["batches"]
        if nb == 0:
            nb = min(have, 100000)
            if nb < 1:
                raise pd.JobError("data.val: %d windows make no whole batch of %d" % (self.val_ld.nwin, B))
        elif nb > have:
            raise pd.JobError("eval.batches %d exceeds the val split: data.val (%s) holds %d batches of batch_size %d: set "
                              "eval.batches to at most %d (or \"all\")" % (nb, job["data"]["val"], have, B, have))
        self.val_nb = nb
        self.tasks = []   # (name, EvalFile): every file read and checked before step 0, as the built-in does
        for i, task in enumerate(job["eval"]["tasks"]):
            try:
                ef = pe.open_evalfile(run.data_path(task["path"]), m["vocab_size"])
                pe.check_window(ef, T)
            except pd.JobError as e:
                raise pd.JobError("eval.tasks[%d] (%s): %s" % (i, task["name"], e))
            self.tasks.append((task["name"], ef))
        torch.manual_seed(t["seed"])
        self.model = Model(job, use_sdpa=self.args.attention != "math").to(self.device)
        if self.args.attention == "sdpa" and not self.model.att.use_sdpa:
            self.log("--attention sdpa: torch %s has no scaled_dot_product_attention; plain attention" % torch.__version__)
        self.start, self.data_pos = 0, 0
        ck = None
        if run.resume:
            ck = self.load_checkpoint(run.resume)
        elif m.get("init"):
            self.model.load_tensors(pd.read_model_file(run.data_path(m["init"]), job))
        else:
            self.model.load_tensors(pd.init_from_seed(job))
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        nodecay = [p for p in self.model.parameters() if p.dim() < 2]
        kw = {}
        if self.cuda and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames:
            kw["fused"] = True
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                                      {"params": nodecay, "weight_decay": 0.0}],
                                     lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"], **kw)
        if ck is not None:
            self.opt.load_state_dict(ck["optim"])
            torch.set_rng_state(ck["rng"])
        self.fwd = self.model
        if self.args.compile:
            if not hasattr(torch, "compile"):
                raise TrainError("--compile: torch %s has no torch.compile" % torch.__version__)
            self.fwd = torch.compile(self.model)
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP
            self.fwd = DDP(self.fwd, device_ids=[self.device.index] if self.cuda else None)
        m = job["model"]
        self.log("torch %s, %s %s, %d processes, %s%s, attention %s; %s" % (
            torch.__version__, m["arch"], ",".join(map(str, m["heads"])), self.world, self.device, " " + self.precision,
            "sdpa" if self.model.att.use_sdpa else "math",
            "resumed at step %d" % self.start if run.resume else "model.init %s" % m["init"] if m.get("init") else "seed init"))
        self.dump = open(os.environ["PRISM_DUMP_BATCHES"], "ab") if os.environ.get("PRISM_DUMP_BATCHES") and self.rank == 0 else None

    # ---- checkpoints ----------------------------------------------------------------------------------
    def save_checkpoint(self, step):
        state = {"format": CKPT_FORMAT, "version": 1, "step": step, "data_pos": self.data_pos,
                 "job": fingerprint(self.job), "model": self.model.state_dict(), "optim": self.opt.state_dict(),
                 "rng": torch.get_rng_state()}
        path = None
        if self.rank == 0:
            path = self.run.save(lambda f: torch.save(state, f), step)
            self.run.checkpoint(step, path)
            # only the newest stays in PRISM_OUT (docs/TRAINERS.md "Disk": the worker keeps its own links to the
            # ones it reported)
            prev = getattr(self, "last_ckpt", None)
            if prev and prev != path and os.path.exists(prev):
                os.unlink(prev)
            self.last_ckpt = path
        if self.world > 1:
            dist.barrier()
        return path

    def load_checkpoint(self, path):
        try:
            ck = torch.load(path, map_location="cpu")
        except Exception as e:
            raise pd.JobError("PRISM_RESUME: %s: not a readable checkpoint (%s)" % (path, e))
        if not isinstance(ck, dict) or ck.get("format") != CKPT_FORMAT:
            raise pd.JobError("PRISM_RESUME: %s is not a torch trainer checkpoint" % path)
        want = fingerprint(self.job)
        for k, v in want.items():
            if ck["job"].get(k) != v:
                raise pd.JobError("PRISM_RESUME: %s: %s is %r but the job has %r" % (path, k, ck["job"].get(k), v))
        if ck["step"] > self.job["train"]["steps"]:
            raise pd.JobError("PRISM_RESUME: %s is at step %d, past train.steps %d" % (path, ck["step"], self.job["train"]["steps"]))
        self.model.load_state_dict(ck["model"])
        self.start, self.data_pos = ck["step"], ck["data_pos"]
        return ck

    # ---- steps ----------------------------------------------------------------------------------------
    def rows(self, batch):
        """This rank's rows of a micro-batch, as (inputs, targets) on the device."""
        n = batch.shape[0] // self.world
        b = torch.from_numpy(batch[self.rank * n:(self.rank + 1) * n]).to(self.device)
        return b[:, :-1], b[:, 1:]

    def loss(self, x, y, module=None):
        if not self.bf16:
            return (module or self.fwd)(x, y)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return (module or self.fwd)(x, y)

    @torch.no_grad()
    def evaluate(self, attn=False):
        self.model.eval()
        L = self.job["model"]["n_layer"]
        self.model.att.collect = [0.0] * L if attn else None
        losses = []
        for i in range(self.val_nb):
            x, y = self.rows(self.val_ld.batch(i))
            loss = float(np.float32(self.allreduce(self.loss(x, y, module=self.model).item()) / self.world))
            losses.append(loss)
        dists = None
        if attn:
            B = self.job["train"]["batch_size"]
            dists = [self.allreduce(v) / (self.val_nb * B) for v in self.model.att.collect]
            self.model.att.collect = None
        self.model.train()
        self.val_batch = losses
        return sum(losses) / len(losses), dists

    @torch.no_grad()
    def zero_shot(self):
        """{task: {acc, acc_norm, n, truncated[, acc_norm_char]}} of the final model (prism_eval.py; None without eval.tasks). With N
        ranks each scores the examples i % N == rank and the counts are summed, so every rank returns the totals."""
        if not self.tasks:
            return None
        self.model.eval()
        T, B = self.job["train"]["seq_len"], self.job["train"]["batch_size"]

        def losses(inp, tgt):
            x, y = torch.from_numpy(inp).to(self.device), torch.from_numpy(tgt).to(self.device)
            if self.bf16:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    return self.model.losses(x, y).float().cpu().numpy()
            return self.model.losses(x, y).cpu().numpy()

        out = {}
        for name, ef in self.tasks:
            t0 = time.time()
            c = pe.score(ef, T, B, losses, self.rank, self.world)
            if self.world > 1:
                keys = sorted(c)
                v = torch.tensor([float(c[k]) for k in keys], dtype=torch.float64, device=self.device)
                dist.all_reduce(v)
                c = {k: int(round(x)) for k, x in zip(keys, v.tolist())}
            out[name] = pe.summary(c)
            ch = " acc_norm_char %.4f" % out[name]["acc_norm_char"] if "acc_norm_char" in out[name] else ""
            self.log("zero-shot %s: acc %.4f acc_norm %.4f%s over %d examples (%d with the context cut to T=%d), %.1f s"
                     % (name, out[name]["acc"], out[name]["acc_norm"], ch, out[name]["n"], out[name]["truncated"], T,
                        time.time() - t0))
        self.model.train()
        return out

    def val_se(self):
        n = len(self.val_batch)
        if n < 2:
            return None
        mean = sum(self.val_batch) / n
        return math.sqrt(sum((v - mean) ** 2 for v in self.val_batch) / (n - 1) / n)

    def stop_now(self):
        return self.allreduce(1.0 if self.run.stop_requested else 0.0, dist.ReduceOp.MAX if self.world > 1 else None) > 0

    def train_step(self, step):
        t = self.job["train"]
        accum = t["grad_accum"]
        self.opt.zero_grad(set_to_none=False)
        loss_sum = 0.0
        for k in range(accum):
            batch = self.train_ld.batch(self.data_pos)
            self.data_pos += 1
            if self.dump:
                self.dump.write(batch.astype("<u2").tobytes())
                self.dump.flush()
            x, y = self.rows(batch)
            sync = k == accum - 1 or self.world == 1
            ctx = self.fwd.no_sync() if not sync else _Null()
            with ctx:
                loss = self.loss(x, y)
                (loss / accum).backward()
            loss_sum += float(np.float32(loss.item()))
        train_loss = float(np.float32(self.allreduce(loss_sum / accum) / self.world))
        if not math.isfinite(train_loss):
            raise TrainError("step %d: train loss is %g (not finite); lower train.lr or enable train.grad_clip" % (step, train_loss))
        grads = [p.grad for p in self.model.parameters()]
        norm = math.sqrt(float(torch.stack([g.double().pow(2).sum() for g in grads]).sum()))   # one sync
        if not math.isfinite(norm):
            raise TrainError("step %d: gradient norm is %g (not finite); lower train.lr or enable train.grad_clip" % (step, norm))
        if t["grad_clip"] > 0 and norm > t["grad_clip"]:
            s = t["grad_clip"] / norm
            for g in grads:
                g.mul_(s)
        lr = lr_at(t, step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        self.opt.step()
        return train_loss, lr, norm

    def main(self):
        self.setup()   # a bad job, data or checkpoint exits 2 before any line
        if self.rank == 0:   # who this is, recorded with the result (docs/TRAINERS.md, the start line)
            self.run.start(version=TRAINER_VERSION + " torch/" + torch.__version__)
        job, run, t = self.job, self.run, self.job["train"]
        steps, every = t["steps"], job["eval"]["every"]
        V = job["model"]["vocab_size"]
        tokens_per_step = t["batch_size"] * t["seq_len"] * t["grad_accum"]
        diverged_at = DIVERGED_FACTOR * math.log(V)
        t_begin, train_time, tokens_run = time.time(), 0.0, 0
        setup_s = t_begin - T_PROCESS   # before the first step: in no wall_s, reported so device_hours counts it
        train_loss = float("nan")
        for step in range(self.start, steps):
            if self.stop_now():
                self.save_checkpoint(step)
                if self.rank == 0:
                    run.preempted(step)
                self.log("stopped by SIGTERM at step %d (checkpoint written)" % step)
                return 0
            at_rung = run.stop_at_step > 0 and step == run.stop_at_step
            if step == 0 or (every > 0 and step % every == 0) or at_rung:
                vl, _ = self.evaluate()
                if not math.isfinite(vl):
                    raise NotFinite("step %d: validation loss is %g (not finite)" % (step, vl))
                if self.rank == 0:
                    run.val(step, vl, self.val_se())
                if step > t["warmup_steps"] and vl > diverged_at:
                    raise Diverged("step %d: validation loss %g is above %g (%.1f x ln %d, guessing uniformly) after "
                                     "warmup: the run diverged; lower train.lr or raise train.warmup_steps"
                                     % (step, vl, diverged_at, DIVERGED_FACTOR, V))
            if at_rung:
                self.save_checkpoint(step)
                if self.rank == 0:
                    run.paused(step, vl)
                return 0
            t0 = time.time()
            train_loss, lr, gnorm = self.train_step(step)
            if self.cuda:
                torch.cuda.synchronize()
            dt = time.time() - t0
            train_time += dt
            tokens_run += tokens_per_step
            if self.rank == 0:
                run.train(step, train_loss, lr=lr, grad_norm=gnorm, tokens=(step + 1) * tokens_per_step,
                          tok_per_s=tokens_per_step / max(dt, 1e-9))
            if t["checkpoint_every"] > 0 and (step + 1) % t["checkpoint_every"] == 0 and step + 1 < steps:
                self.save_checkpoint(step + 1)
        vl, dists = self.evaluate(attn=job["eval"]["attn_distance"])
        if not math.isfinite(vl):
            raise NotFinite("step %d: validation loss is %g (not finite)" % (steps, vl))
        if vl > diverged_at:   # the final val point, then the failure (the built-in's order)
            if self.rank == 0:
                run.val(steps, vl, self.val_se())
            raise Diverged("step %d: validation loss %g is above %g: the run diverged" % (steps, vl, diverged_at))
        zs = self.zero_shot()
        if self.rank == 0:
            run.val(steps, vl, self.val_se(), zero_shot=zs)
            pd.write_model_file(os.path.join(run.out, "model.bin"), job, self.model.get_tensors())
            res = {"val_loss": vl, "train_loss": train_loss if math.isfinite(train_loss) else None,
                   "tok_per_s": tokens_run / max(train_time, 1e-9), "wall_s": time.time() - t_begin,
                   "params": pd.num_params(job), "flops_per_token": pd.flops_per_token(job), "steps": steps,
                   "tokens": steps * tokens_per_step, "heads": list(job["model"]["heads"]),
                   "device": "cuda" if self.cuda else "cpu", "arch": job["model"]["arch"],
                   "val_loss_batches": self.val_batch, "val_loss_se": self.val_se(), "val_batches": self.val_nb,
                   "setup_s": setup_s}
            if dists is not None:
                res["attn_distance"] = dists
            if zs is not None:
                res["zero_shot"] = zs
            run.result(res)
        return 0


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="train.py", description="prism-sweep's reference PyTorch trainer (an external "
                                 "trainer: run it through prism-worker --trainer NAME=COMMAND)")
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                    help="auto: bf16 autocast on CUDA, fp32 on the CPU")
    ap.add_argument("--attention", choices=("auto", "sdpa", "math"), default="auto",
                    help="auto/sdpa: F.scaled_dot_product_attention where torch has it; math: the plain softmax form")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2)")
    ap.add_argument("--nproc", type=int, default=int(os.environ.get("PRISM_TORCH_NPROC", "0") or 0),
                    help="CPU: run N processes under torchrun (DDP over gloo); default PRISM_TORCH_NPROC or 1")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    return ap.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if "LOCAL_RANK" not in os.environ:
        devs = os.environ.get("PRISM_DEVICES", "") or "cpu"
        n = len(devs.split(","))   # CUDA ordinals, or "cpu,cpu": one rank per entry
        if devs == "cpu":
            n = max(args.nproc, 1)
        if n > 1:
            return launch(n, argv)
    tr = None
    try:
        tr = Trainer(args)
        return tr.main()
    except (pd.JobError, pp.ProtocolError) as e:
        print("torch trainer: %s" % e, file=sys.stderr, flush=True)
        return 2
    except Exception as e:   # a cause the worker should read: a "failed" line (docs/TRAINERS.md) before exit 1
        if isinstance(e, TrainError):
            reason, retryable = e.reason, e.retryable
        elif is_oom(e):
            reason, retryable = "oom", True
        else:
            raise   # a bug: the traceback, and the worker reports a crash
        print("torch trainer: %s" % e, file=sys.stderr, flush=True)
        run = getattr(tr, "run", None)
        if run is not None and not run.done:
            try:
                run.failed(reason, str(e)[:900], retryable=retryable)
            except (pp.ProtocolError, OSError):
                pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
