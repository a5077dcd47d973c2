#!/usr/bin/env python3
# numpy_trainer.py — a third-party-style external trainer (docs/TRAINERS.md), numpy only, not the shipped torch
# one: a bigram softmax model (K x K logits) trained by SGD on a token stream drawn from a fixed Markov chain
# (seeded by the job's seed), so its loss really falls from ln K. It logs metrics of its own through the
# protocol's "extra" (train lines: lr_scale, the schedule's factor, and tokens_per_s, measured; val lines: ppl =
# exp(val_loss); the result: final_lr_scale) and speaks the rest of the protocol a sweep needs (val every
# eval.every steps, the result). tests/integration/test_trainers_extras.sh runs it through a real server + worker.
import json, math, os, time
import numpy as np

out = os.fdopen(3, "w", buffering=1)
def emit(**kv): out.write(json.dumps(kv) + "\n")

job = json.load(open(os.environ["PRISM_JOB"]))
tr, ev = job["train"], job.get("eval", {})
steps, every = tr["steps"], ev.get("every", 10) or steps
K, B = 16, 64
rng = np.random.default_rng(job.get("seed", 0))
chain = np.random.default_rng(1234).dirichlet(np.full(K, 0.3), size=K)   # the data: one chain for every job
W = np.zeros((K, K))

def batch(n):
    x = rng.integers(0, K, size=n)
    u = rng.random(n)[:, None]
    y = (np.cumsum(chain[x], axis=1) < u).sum(axis=1).clip(0, K - 1)
    return x, y

def loss_grad(x, y):
    z = W[x] - W[x].max(axis=1, keepdims=True)
    p = np.exp(z); p /= p.sum(axis=1, keepdims=True)
    loss = float(-np.log(p[np.arange(len(x)), y]).mean())
    p[np.arange(len(x)), y] -= 1
    g = np.zeros_like(W)
    np.add.at(g, x, p / len(x))
    return loss, g

def lr_scale(s):   # cosine to 0.1, the factor reported as an extra metric (deterministic: the test recomputes it)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / steps))

vx, vy = batch(2048)
def val(s):
    v, _ = loss_grad(vx, vy)
    emit(event="val", step=s, val_loss=v, extra={"ppl": math.exp(v)})
    return v

v = val(0)
t0 = time.time()
for s in range(steps):
    t = time.time()
    x, y = batch(B)
    loss, g = loss_grad(x, y)
    W -= 2.0 * lr_scale(s) * g
    dt = max(time.time() - t, 1e-9)
    emit(event="train", step=s, train_loss=loss, tokens=(s + 1) * B,
         extra={"lr_scale": lr_scale(s), "tokens_per_s": B / dt})
    if (s + 1) % every == 0 or s + 1 == steps:
        v = val(s + 1)
emit(event="result", result={"val_loss": v, "steps": steps, "train_loss": loss, "wall_s": time.time() - t0,
                             "extra": {"final_lr_scale": lr_scale(steps - 1)}})
