#!/usr/bin/python3
"""schema_check.py SCHEMA.json ROOT — the copies of the wire contracts checked against the C rows.

`prism-worker schema --json` (SCHEMA.json) prints the rows the C code loops over: the job's keys (common/job.c), the
metrics point's (common/point.h POINT_FIELDS), the result's (common/jobresult.c) and the trainer protocol's events
(worker/extrun_line.c). The Python reference trainer re-declares them (trainers/torch/prism_data.py DEFAULTS, SPEC,
REQUIRED; trainers/torch/prism_protocol.py EVENTS, RESULT_RESERVED, INT_KEYS) and the docs list them
(docs/TRAINERS.md's protocol table, docs/FORMATS.md's job and metrics sections). Prints one line per difference,
naming the file to edit, the key and what the rows say; exit 1 when there is any, 0 when all agree.
"""
import json
import os
import re
import sys

PY_KIND = {"int": "int", "num": "num", "bool": "bool", "str": "str", "u64": "u64", "heads": "heads",
           "one of": "one of", "tasks": "tasks", "batches": "batches"}
BOUNDED = ("int", "num", "heads", "batches")


def check_job(rows, pd, out):
    data = "trainers/torch/prism_data.py"
    have = set()
    for r in rows:
        sec, key = r["section"], r["key"]
        if not sec:   # the top-level trainer / trainer_args: the worker's, the trainer reads neither from SPEC
            continue
        have.add((sec, key))
        name = "%s.%s" % (sec, key)
        spec = pd.SPEC.get(sec, {}).get(key)
        if spec is None:
            out.append("%s: SPEC[%r] lacks %r (the job key %s: kind %s%s); add it"
                       % (data, sec, key, name, r["kind"], ", %g..%g" % (r["min"], r["max"]) if "min" in r else ""))
        elif spec[0] != PY_KIND[r["kind"]]:
            out.append("%s: SPEC[%r][%r] has kind %r, the job key %s is %r" % (data, sec, key, spec[0], name, r["kind"]))
        elif r["kind"] in BOUNDED and tuple(spec[1:3]) != (r["min"], r["max"]):
            out.append("%s: SPEC[%r][%r] bounds %r, the job key %s is %g..%g" % (data, sec, key, tuple(spec[1:3]), name,
                                                                                 r["min"], r["max"]))
        elif r["kind"] == "one of" and list(spec[1:]) != r["choices"]:
            out.append("%s: SPEC[%r][%r] choices %r, the job key %s takes %r" % (data, sec, key, spec[1:], name, r["choices"]))
        required = key in pd.REQUIRED.get(sec, ())
        if required != r["required"]:
            out.append("%s: REQUIRED[%r] %s %r: the job key %s is %s" % (data, sec, "has" if required else "lacks", key,
                                                                         name, "required" if r["required"] else "optional"))
        defaults = pd.DEFAULTS.get(sec, {})
        if "default" in r:
            if key not in defaults:
                out.append("%s: DEFAULTS[%r] lacks %r (the job key %s defaults to %s); add it"
                           % (data, sec, key, name, json.dumps(r["default"])))
            elif defaults[key] != r["default"] or (type(defaults[key]) is bool) != (type(r["default"]) is bool):
                out.append("%s: DEFAULTS[%r][%r] is %r, the job key %s defaults to %s"
                           % (data, sec, key, defaults[key], name, json.dumps(r["default"])))
        elif key in defaults:
            out.append("%s: DEFAULTS[%r] has %r, but the job key %s has %s" % (
                data, sec, key, name, "no default (required)" if r["required"] else "a derived default (%s)" % r.get("derived")))
    for sec, keys in pd.SPEC.items():
        for key in keys:
            if (sec, key) not in have:
                out.append("%s: SPEC[%r][%r] is not a job key (prism-worker schema --json has no %s.%s); remove it"
                           % (data, sec, key, sec, key))


def check_protocol(schema, pp, out):
    proto = "trainers/torch/prism_protocol.py"
    events = schema["events"]
    for ev, e in events.items():
        if ev not in pp.EVENTS:
            out.append("%s: EVENTS lacks %r (required %s, optional %s); add it" % (proto, ev, e["required"], e["optional"]))
            continue
        req, opt = pp.EVENTS[ev]
        for what, mine, theirs in (("required", set(req), set(e["required"])), ("optional", set(opt), set(e["optional"]))):
            for k in sorted(theirs - mine):
                out.append("%s: EVENTS[%r] lacks the %s key %r (the worker accepts it); add it" % (proto, ev, what, k))
            for k in sorted(mine - theirs):
                out.append("%s: EVENTS[%r] has the %s key %r, which the worker does not take as %s; remove it"
                           % (proto, ev, what, k, what))
    for ev in pp.EVENTS:
        if ev not in events:
            out.append("%s: EVENTS has %r, an event the worker does not know; remove it" % (proto, ev))
    if set(pp.RESULT_RESERVED) != set(schema["result_reserved"]):
        out.append("%s: RESULT_RESERVED is %s, the worker refuses %s" % (proto, sorted(pp.RESULT_RESERVED),
                                                                       sorted(schema["result_reserved"])))
    for p in schema["point"]:
        if p["kind"] == "integer" and p["key"] not in pp.INT_KEYS:
            out.append("%s: INT_KEYS lacks %r (an integer key of the metrics point); add it" % (proto, p["key"]))


def section(text, start, stop):
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(stop, i + len(start))
    return text[i:j if j > 0 else len(text)]


def check_docs(schema, root, out):
    trainers = open(os.path.join(root, "docs/TRAINERS.md"), encoding="utf-8").read()
    for ev, e in schema["events"].items():
        m = re.search(r"^\| `%s` \| ([^|]*) \|" % re.escape(ev), trainers, re.M)
        if not m:
            out.append("docs/TRAINERS.md: the protocol table has no row for the event `%s`; add it" % ev)
            continue
        listed = set(re.findall(r"`([^`]+)`", m.group(1)))
        for k in e["required"] + e["optional"]:
            if k not in listed:
                out.append("docs/TRAINERS.md: the `%s` row of the protocol table lacks the key `%s`; add it" % (ev, k))
    formats = open(os.path.join(root, "docs/FORMATS.md"), encoding="utf-8").read()
    job = section(formats, "\n## Job", "\n## Token shards")
    llama = section(formats, "\n## Model file for `model.arch: \"llama\"`", "\n## ")
    for r in schema["job"]:
        k = r["key"]
        if not re.search(r'["`.]%s["`]' % re.escape(k), job + (llama if r.get("arch") else "")):
            out.append('docs/FORMATS.md: the "Job" section does not name the job key %s%s; add it'
                       % (r["section"] + "." if r["section"] else "", k))
    metrics = section(formats, "\n## `metrics.jsonl` and `result.json`", "\n## Export")
    for p in schema["point"]:
        if not re.search(r'["`]%s["`]' % re.escape(p["key"]), metrics):
            out.append('docs/FORMATS.md: the "metrics.jsonl and result.json" section does not name the point key %s; '
                       'add it' % p["key"])


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: schema_check.py SCHEMA.json ROOT\n")
        return 2
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    root = sys.argv[2]
    sys.path.insert(0, os.path.join(root, "trainers/torch"))
    import prism_data
    import prism_protocol
    out = []
    check_job(schema["job"], prism_data, out)
    check_protocol(schema, prism_protocol, out)
    check_docs(schema, root, out)
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
