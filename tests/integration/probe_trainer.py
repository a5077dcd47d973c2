#!/usr/bin/env python3
"""probe_trainer.py SEEN_DIR VERSION [SETUP_SLEEP_S] — an external trainer (docs/TRAINERS.md) written as a
third party would, stdlib only, for test_trainers_identity.sh: it declares VERSION in a start line (unless VERSION
is "-"), sleeps SETUP_SLEEP_S before its first step (a start-up the worker measures as setup_s), records what it
was handed (PRISM_TRAINER_ARGS, the raw job, the effective job of PRISM_JOB_EFFECTIVE) in SEEN_DIR/<job dir>.json,
and reports a formula's loss with wall_s 0.5."""
import json, os, sys, time

seen, version = sys.argv[1], sys.argv[2]
sleep = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
out = os.fdopen(3, "w", buffering=1)
def emit(**kv): out.write(json.dumps(kv) + "\n")
if version != "-":
    emit(event="start", version=version)
raw = json.load(open(os.environ["PRISM_JOB"]))
eff_path = os.environ.get("PRISM_JOB_EFFECTIVE", "")
eff = json.load(open(eff_path)) if eff_path else None
with open(os.path.join(seen, os.path.basename(os.environ["PRISM_OUT"]) + ".json"), "w") as f:
    json.dump({"args_env": json.loads(os.environ.get("PRISM_TRAINER_ARGS", "null")), "raw": raw, "effective": eff,
               "effective_path": eff_path}, f)
time.sleep(sleep)
steps = raw["train"]["steps"]
for s in range(steps):
    emit(event="train", step=s, train_loss=4.0 / (1 + s))
emit(event="val", step=steps, val_loss=2.0 + raw["train"]["seed"] / 1000)
emit(event="result", result={"val_loss": 2.0 + raw["train"]["seed"] / 1000, "steps": steps, "wall_s": 0.5})
