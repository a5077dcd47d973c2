#!/usr/bin/env python3
"""tests/gpu/torch_reftrainer.py — tests/gpu/run.sh's reference-trainer row: trainers/torch/train.py timed at the
GPT-2 124M shape, through its own protocol (the way prism-worker --trainer runs it), beside the built-in engine.

It writes random llm.c token shards (vocab 50257) and a GPT-2 124M job (12 layers, 12 heads, d 768, vocab padded to
50304, B x T, seed init, shuffle off, one val batch), runs the trainer with PRISM_DEVICES=0 and fd 3 on a file, and
reads the train lines' tok_per_s (the trainer's own per-step wall clock around zero_grad .. optimizer step, with a
loss.item() per micro-batch and a device sync: the same span bench/bench_cuda_gpt2.c times): the median of the
steps after --warmup. Trainer options: bf16 autocast, SDPA where torch has it, fused AdamW; --compile passes
--compile.

Prints "RESULT reftrainer mode=eager|compile B=.. T=.. tok_s=.. ms_step=.." last. Without PyTorch (or without a
CUDA device, --tiny aside) it prints "RESULT reftrainer absent: <why>" and exits 3. --tiny (the emulator dry run of
run.sh): a 2-layer d=64 job on the CPU, fp32, so the row is exercised; its figure means nothing.

    python3 tests/gpu/torch_reftrainer.py [--B 16] [--T 1024] [--steps 10] [--warmup 3] [--compile] [--tiny]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def shard(path, tokens):
    import numpy as np
    hdr = np.zeros(256, dtype="<i4")
    hdr[:3] = [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(hdr.tobytes())
        f.write(np.asarray(tokens, dtype="<u2").tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=16)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args()
    try:
        import numpy as np
        import torch
    except Exception as e:  # noqa: BLE001 (any import failure means the row cannot run)
        print("RESULT reftrainer absent: PyTorch cannot be imported here (%s)" % e)
        return 3
    if not a.tiny and not torch.cuda.is_available():
        print("RESULT reftrainer absent: torch %s sees no CUDA device" % torch.__version__)
        return 3
    if a.tiny:
        L, C, H, V, Vp, B, T = 2, 64, 4, 512, 512, 4, 64
    else:
        L, C, H, V, Vp, B, T = 12, 768, 12, 50257, 50304, a.B, a.T
    steps = a.warmup + a.steps
    d = tempfile.mkdtemp(prefix="prism-reftrainer-")
    os.makedirs(d + "/data")
    rng = np.random.default_rng(1)
    shard(d + "/data/r_train_000001.bin", rng.integers(0, V, steps * B * T + T + 1))
    shard(d + "/data/r_val_000000.bin", rng.integers(0, V, B * (T + 1)))
    job = {"model": {"n_layer": L, "d_model": C, "vocab_size": V, "padded_vocab_size": Vp, "seq_len": T, "heads": [H] * L},
           "train": {"batch_size": B, "steps": steps, "lr": 6e-4, "warmup_steps": 0, "shuffle": False},
           "eval": {"every": 0, "batches": 1},
           "data": {"train": "data/r_train_*.bin", "val": "data/r_val_*.bin"}}
    with open(d + "/job.json", "w") as f:
        json.dump(job, f)
    os.makedirs(d + "/out")
    lines = open(d + "/out/lines.jsonl", "w+b")
    env = dict(os.environ, PRISM_JOB=d + "/job.json", PRISM_OUT=d + "/out", PRISM_DATA_ROOT=d, PRISM_RESUME="",
               PRISM_STOP_AT_STEP="0", PRISM_DEVICES="cpu" if a.tiny else "0")
    cmd = [sys.executable, ROOT + "/trainers/torch/train.py"] + (["--compile"] if a.compile else [])
    if a.tiny:
        cmd += ["--threads", "1"]
    mode = "compile" if a.compile else "eager"
    print("reference trainer (torch %s) on %s: GPT-2 %s, B=%d T=%d, %s, %d warmup + %d timed steps" % (
        torch.__version__, "the CPU (dry run, tiny shape)" if a.tiny else torch.cuda.get_device_name(0),
        "tiny (2 layers, d 64)" if a.tiny else "124M", B, T, mode, a.warmup, a.steps), flush=True)
    if lines.fileno() != 3:
        os.dup2(lines.fileno(), 3)   # the trainer's fd 3 is this file
    rc = subprocess.call(cmd, env=env, pass_fds=(3,))
    lines.seek(0)
    ev = [json.loads(x) for x in lines.read().decode().splitlines() if x.strip()]
    rates = [e["tok_per_s"] for e in ev if e["event"] == "train" and e["step"] >= a.warmup]
    for e in ev:
        if e["event"] in ("train", "val"):
            print("  %s step %d: %s" % (e["event"], e["step"], e.get("train_loss", e.get("val_loss"))), flush=True)
    if rc != 0 or not rates or ev[-1]["event"] != "result":
        print("error: the trainer exited %d after %d lines (last: %s)" % (rc, len(ev), ev[-1] if ev else None))
        return 1
    med = statistics.median(rates)
    print("RESULT reftrainer mode=%s B=%d T=%d tok_s=%.0f ms_step=%.2f" % (mode, B, T, med, 1e3 * B * T / med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
