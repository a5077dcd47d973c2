"""protocol_check.py LINES PRISM_OUT STEPS [TERMINAL] — checks a trainer's fd-3 lines against docs/TRAINERS.md's rules,
independently of trainers/torch/prism_protocol.py (which must not be the judge of itself): one JSON object a line of at
most 65536 bytes, known events and keys, finite numbers, train steps strictly increasing and below train.steps,
checkpoint paths inside PRISM_OUT, the newest one an existing file, exactly one terminal line and it is the last (of the kind
TERMINAL when given), a start line only first. Prints the events; exit 1 naming the first violation. The events and
their keys are the worker's own rows (`$PRISM_BUILD/prism-worker schema --json`), not a copy."""
import json, math, os, subprocess, sys

_SCHEMA = json.loads(subprocess.run([os.path.join(os.environ["PRISM_BUILD"], "prism-worker"), "schema", "--json"],
                                    check=True, capture_output=True).stdout)
KEYS = {ev: set(e["required"]) | set(e["optional"]) for ev, e in _SCHEMA["events"].items()}
RESULT = {"val_loss", "train_loss", "tok_per_s", "wall_s", "params", "flops_per_token", "steps", "tokens", "heads", "device",
          "arch", "val_loss_batches", "val_loss_se", "val_batches", "attn_distance", "setup_s"}
path, out, steps = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3])
want = sys.argv[4] if len(sys.argv) > 4 else None
raw = open(path, "rb").read()
assert raw.endswith(b"\n"), "the last line has no newline"
lines = raw.split(b"\n")[:-1]
last, terminal, newest = -1, [], None
for n, b in enumerate(lines):
    assert len(b) + 1 <= 65536, "line %d: %d bytes" % (n, len(b) + 1)
    o = json.loads(b.decode("utf-8"))
    ev = o.pop("event")
    assert ev in KEYS, "line %d: unknown event %r" % (n, ev)
    assert set(o) <= KEYS[ev], "line %d: unknown keys %s" % (n, set(o) - KEYS[ev])
    assert ev != "start" or n == 0, "line %d: a start line that is not the first" % n
    assert ev != "start" or isinstance(o.get("version", "v"), str), "line %d: start.version %r" % (n, o.get("version"))
    for k, v in o.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            assert math.isfinite(v), "line %d: %s is %r" % (n, k, v)
    if "step" in o:
        assert isinstance(o["step"], int) and 0 <= o["step"] <= steps, "line %d: step %r" % (n, o["step"])
    if ev == "train":
        assert last < o["step"] < steps, "line %d: train step %d after %d" % (n, o["step"], last)
        last = o["step"]
    if ev == "checkpoint":
        p = o["path"] if os.path.isabs(o["path"]) else os.path.join(out, o["path"])
        assert os.path.realpath(p).startswith(out + os.sep), "line %d: %s outside %s" % (n, p, out)
        newest = p   # older ones may be gone (a trainer keeps only its newest: docs/TRAINERS.md "Disk")
    if ev == "result":
        r = o["result"]
        assert set(r) <= RESULT and {"val_loss", "steps", "tokens", "val_loss_batches"} <= set(r), sorted(r)
        assert r["steps"] == steps and math.isfinite(r["val_loss"])
        assert "setup_s" not in r or (math.isfinite(r["setup_s"]) and r["setup_s"] >= 0), "setup_s %r" % r.get("setup_s")
    if ev == "failed":
        assert isinstance(o["reason"], str) and isinstance(o.get("retryable", False), bool), "line %d: %r" % (n, o)
    if ev in ("result", "paused", "preempted", "failed"):
        terminal.append((n, ev))
assert newest is None or os.path.isfile(newest), "the newest checkpoint %s does not exist" % newest
print("events:", " ".join("%s%s" % (json.loads(b)["event"], ("@%d" % json.loads(b)["step"]) if "step" in json.loads(b) else "") for b in lines))
assert len(terminal) == 1 and terminal[0][0] == len(lines) - 1, "terminal lines %r of %d" % (terminal, len(lines))
assert want is None or terminal[0][1] == want, "ended with %s, expected %s" % (terminal[0][1], want)
