#!/usr/bin/env python3
"""tests/integration/fake_trainer.py — an external trainer that trains nothing, for the worker's side of the
protocol (docs/TRAINERS.md; tests/integration/test_trainers*.sh).

It speaks the protocol like a real trainer: reads PRISM_JOB, resumes from PRISM_RESUME (a JSON checkpoint it
wrote: {"step": S}), stops at PRISM_STOP_AT_STEP (val, checkpoint, paused), checkpoints every
train.checkpoint_every steps (ckpt/step_N.json, temp file + rename), on SIGTERM finishes the step, checkpoints
and says "preempted". Its "loss" is a function of the step, the schedule and the seed, so a sweep has a
leaderboard. --bad MODE misbehaves in one way when the job's seed is --bad-seed (default 1), after --bad-after
steps: crash, hang, garbage, huge, nan, escape, noresult, backwards, over, unknown, resultjob, resultbackend,
resultlongkey, resultparams (the server's rules refuse it: params 0), resultdiverged (val_loss 9 > 1.1 ln 64),
failoom / faildiverged (a "failed" line: oom retryable, diverged not), pauseddiverged (a rung's val loss 9); and, ending in a valid result:
heartbeat (3 s of keep-alive lines between two steps), lineafter (a line after the result, then it hangs),
slowexit (it hangs after the result). --bad-seed 0: every job misbehaves (or a comma list of seeds). --spawn starts a child
(`sleep 300`) in its process group and writes both pids to $PRISM_OUT/pids. --ledger FILE appends
"ATTEMPT_DIR STEP" for every step it trains. --preempt-every N checkpoints and says "preempted" (exit 0) after
N steps of each attempt (a spot instance taken away every N steps).
"""
import argparse, json, math, os, signal, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--step-s", type=float, default=0.0)
ap.add_argument("--bad", default="")
ap.add_argument("--bad-seed", default="1")   # a seed, a comma list of them, or 0: every job
ap.add_argument("--bad-after", type=int, default=2)
ap.add_argument("--spawn", action="store_true")
ap.add_argument("--ledger", default="")
ap.add_argument("--ignore-term", action="store_true")
ap.add_argument("--preempt-every", type=int, default=0)
a = ap.parse_args()

out_fd = os.fdopen(3, "w", buffering=1)
def emit(**kv):
    out_fd.write(json.dumps(kv) + "\n")
    out_fd.flush()

job = json.load(open(os.environ["PRISM_JOB"]))
out = os.environ["PRISM_OUT"]
steps = job["train"]["steps"]
seed = job["train"]["seed"]
heads = job["model"]["heads"]
every = job["train"].get("checkpoint_every", 0)
stop_at = int(os.environ.get("PRISM_STOP_AT_STEP", "0") or 0)
end = stop_at if 0 < stop_at < steps else steps
bad_seeds = [int(x) for x in a.bad_seed.split(",")]
bad = a.bad if 0 in bad_seeds or seed in bad_seeds else ""
print("fake trainer: devices=%s resume=%s stop_at=%s data_root=%s" % (os.environ.get("PRISM_DEVICES"),
      os.environ.get("PRISM_RESUME"), stop_at, os.environ.get("PRISM_DATA_ROOT")), file=sys.stderr, flush=True)

term = [False]
def on_term(sig, frame):
    term[0] = True
signal.signal(signal.SIGTERM, signal.SIG_IGN if a.ignore_term else on_term)

if a.spawn:
    child = subprocess.Popen(["sleep", "300"])
    with open(os.path.join(out, "pids"), "w") as f:
        f.write("%d %d\n" % (os.getpid(), child.pid))

start = 0
if os.environ.get("PRISM_RESUME"):
    start = json.load(open(os.environ["PRISM_RESUME"]))["step"]

def loss_at(s):
    return 4.0 * math.exp(-s / 40.0) + 0.3 + 0.01 * heads[0] + 0.001 * (seed % 7)

def checkpoint(s):
    os.makedirs(os.path.join(out, "ckpt"), exist_ok=True)
    rel = "ckpt/step_%06d.json" % s
    tmp = os.path.join(out, rel + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"step": s}, f)
    os.rename(tmp, os.path.join(out, rel))
    emit(event="checkpoint", step=s, path=rel)

t0 = time.time()
for s in range(start, end):
    if bad == "heartbeat" and s - start == a.bad_after:   # busy (a long eval, a compile) but alive
        for _ in range(12):
            time.sleep(0.25)
            emit(event="heartbeat")
    elif bad in ("failoom", "faildiverged") and s - start == a.bad_after:
        if bad == "failoom":
            emit(event="failed", reason="oom", retryable=True, message="CUDA out of memory (tried to allocate 2.00 GiB)")
        else:
            emit(event="failed", reason="diverged", retryable=False,
                 message="step %d: validation loss 9.1 is above 4.57 (the trainer's own check)" % s)
        sys.exit(1)
    elif bad and bad not in ("heartbeat", "lineafter", "slowexit", "pauseddiverged") and s - start == a.bad_after:
        if bad == "crash":
            print("fake trainer: Traceback: boom at step %d" % s, file=sys.stderr, flush=True)
            sys.exit(3)
        if bad == "hang":
            time.sleep(3600)
        if bad == "garbage":
            out_fd.write("this is not json\n"); out_fd.flush()
        if bad == "huge":
            out_fd.write('{"event":"train","step":%d,"train_loss":1.0,"lr":"%s"}\n' % (s, "x" * 70000)); out_fd.flush()
        if bad == "nan":
            emit(event="train", step=s, train_loss=float("nan"))
        if bad == "escape":
            outside = os.path.join(os.path.dirname(out), "outside-%d.json" % os.getpid())
            with open(outside, "w") as f:
                json.dump({"step": s}, f)
            emit(event="checkpoint", step=s, path="../" + os.path.basename(outside))
        if bad == "noresult":
            sys.exit(0)
        if bad == "backwards":
            emit(event="train", step=s - 2, train_loss=1.0)
        if bad == "over":
            emit(event="train", step=steps + 5, train_loss=1.0)
        if bad == "unknown":
            emit(event="train", step=s, train_loss=1.0, losss=2.0)
        if bad == "resultjob":     # a result that names another job
            emit(event="result", result={"val_loss": 1.0, "steps": steps, "job_id": 999})
        if bad == "resultbackend": # a spoofed CUDA backend
            emit(event="result", result={"val_loss": 1.0, "steps": steps, "backend": {"name": "prism-cuda", "version": 9}})
        if bad == "resultlongkey": # a 60 KB key
            emit(event="result", result={"val_loss": 1.0, "steps": steps, "k" * 60000: 1})
        if bad == "resultparams":  # a result the server's rules refuse (issue #40's zombie repro)
            emit(event="result", result={"val_loss": 3.0, "steps": steps, "params": 0})
        if bad == "resultdiverged": # worse than guessing: a divergence, not a result
            emit(event="result", result={"val_loss": 9.0, "steps": steps})
        if bad.startswith("result"):   # ends as a trainer that finished would: that result is all it says
            sys.exit(0)
        time.sleep(2)   # the worker must have stopped it by now
    if a.step_s:
        time.sleep(a.step_s)
    if a.ledger:
        with open(a.ledger, "a") as f:
            f.write("%s %d\n" % (os.path.basename(out), s))
    emit(event="train", step=s, train_loss=loss_at(s), lr=0.001, tokens=(s + 1) * 32, tok_per_s=1000.0)
    done = s + 1
    if every and done % every == 0 and done < end:
        checkpoint(done)
    if term[0] or (a.preempt_every and done - start >= a.preempt_every and done < end):
        checkpoint(done)
        emit(event="preempted", step=done)
        sys.exit(0)

vl = loss_at(end) + 0.05
if bad == "pauseddiverged" and end < steps:   # a rung's val loss worse than guessing
    vl = 9.0
emit(event="val", step=end, val_loss=vl, val_loss_se=0.01)
if end < steps:
    checkpoint(end)
    emit(event="paused", step=end, val_loss=vl)
    sys.exit(0)
emit(event="result", result={"val_loss": vl, "train_loss": loss_at(end - 1), "tok_per_s": 1000.0,
                             "wall_s": time.time() - t0, "steps": steps, "params": 1000, "tokens": steps * 32,
                             "val_loss_se": 0.01})
if bad == "lineafter":   # a trailing line (wandb.finish() printing on the wrong fd, a second summary)
    emit(event="train", step=0, train_loss=1.0)
if bad in ("lineafter", "slowexit"):   # an upload, an NCCL teardown that never ends
    time.sleep(300)
