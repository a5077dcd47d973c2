#!/usr/bin/python3
# export_check.py DB DIR FORMAT SWEEP_ID — reads back what `prism-sweep export` wrote, independently of its
# writer, and compares every point with the database (read here with Python's sqlite3).
#   tensorboard: each events file's TFRecord framing is checked (length, masked CRC-32C of the length and of the
#   data, computed here bit by bit) and every Event is decoded with Debian's python3-protobuf from a descriptor
#   built here (Event/Summary/Value as TensorFlow's event.proto and summary.proto number them).
#   csv / jsonl: every row parsed and compared.
# A point's extra metrics (metrics.extra, an external trainer's {name: number}) too: TensorBoard tags extra/NAME
# (train) and val/extra/NAME (val), extras.csv (long: a row per point and name), metrics.jsonl's "extra".
# Expected points: per (job, kind, step) the latest attempt's, the curve the API serves. Exit 0, or 1 naming
# the first difference (both sides printed).
import csv
import glob
import json
import os
import sqlite3
import struct
import sys

db, out, fmt, sweep = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def eq(want, got, what):
    if want != got:
        fail("%s: expected [%r], got [%r]" % (what, want, got))


con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
jobs = {r[0]: r for r in con.execute(
    "SELECT j.id, sc.heads, j.seed, j.state, j.steps, r.val_loss, r.tok_per_s, r.attn_distance, r.result FROM jobs j "
    "JOIN schedules sc ON "
    "sc.id = j.schedule_id LEFT JOIN results r ON r.job_id = j.id WHERE j.sweep_id = ?", (sweep,))}
pts = {}
extras = {}   # (job, kind, step) -> {name: value} of the point exported (the latest attempt's)
times = {}    # (job, kind, step) -> metrics.t of that point
for job, kind, step, value, tokens, lr, tps, gn, att, se, ex, t in con.execute(
        "SELECT m.job_id, m.kind, m.step, m.value, m.tokens, m.lr, m.tok_per_s, m.grad_norm, m.attempt, m.val_loss_se, "
        "m.extra, m.t FROM metrics m "
        "JOIN jobs j ON j.id = m.job_id WHERE j.sweep_id = ?", (sweep,)):
    k = (job, kind, step)
    if k not in pts or pts[k][5] < att:
        pts[k] = (value, tokens, lr, tps, gn, att, se)
        times[k] = t
        extras.pop(k, None)
        if ex is not None:
            extras[k] = json.loads(ex)
if not pts:
    fail("the database has no points for sweep %d: the test fed nothing" % sweep)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


if crc32c(b"123456789") != 0xE3069283:   # the CRC-32C check value: this reader's own CRC is right
    fail("export_check.py's CRC-32C is wrong")


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fd = descriptor_pb2.FileDescriptorProto(name="prism_check_event.proto", package="tensorflow", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    val = fd.message_type.add(name="Value")
    val.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    val.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summ = fd.message_type.add(name="Summary")
    summ.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".tensorflow.Value")
    ev = fd.message_type.add(name="Event")
    ev.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    ev.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    ev.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    ev.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".tensorflow.Summary")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("tensorflow.Event")
    try:
        return message_factory.GetMessageClass(desc)
    except AttributeError:
        return message_factory.MessageFactory(pool).GetPrototype(desc)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def records(path):
    raw = open(path, "rb").read()
    i = 0
    while i < len(raw):
        if len(raw) - i < 12:
            fail("%s: %d trailing bytes, not a record header" % (path, len(raw) - i))
        head = raw[i:i + 8]
        (n,) = struct.unpack("<Q", head)
        (hc,) = struct.unpack("<I", raw[i + 8:i + 12])
        eq(masked(head), hc, "%s@%d: masked CRC-32C of the length" % (path, i))
        data = raw[i + 12:i + 12 + n]
        eq(n, len(data), "%s@%d: record length" % (path, i))
        (dc,) = struct.unpack("<I", raw[i + 12 + n:i + 16 + n])
        eq(masked(data), dc, "%s@%d: masked CRC-32C of the data" % (path, i))
        yield data
        i += 16 + n


def check_tensorboard():
    Event = event_class()
    runs = sorted(glob.glob(os.path.join(out, "*", "events.out.tfevents.*")))
    # the run names sort as the job ids (zero-padded: job10 after job9, not before job1)
    ids = [int(os.path.basename(os.path.dirname(p)).split("_")[0][3:]) for p in runs]
    eq(sorted(ids), ids, "runs in name order are in job id order")
    got, got_wt = {}, {}
    seen_jobs = set()
    for path in runs:
        run = os.path.basename(os.path.dirname(path))
        job = int(run.split("_")[0][3:])
        seen_jobs.add(job)
        eq(1, len(glob.glob(os.path.join(os.path.dirname(path), "events.out.tfevents.*"))), "one events file in run " + run)
        heads, seed = jobs[job][1], jobs[job][2]
        eq("seed%d" % seed, run.split("_")[-1], "run name's seed of job %d" % job)
        first = True
        for data in records(path):
            e = Event()
            e.ParseFromString(data)
            if first:
                eq("brain.Event:2", e.file_version, run + ": the first event's file_version")
                first = False
                continue
            eq(1, len(e.summary.value), run + ": values per event")
            v = e.summary.value[0]
            k = (job, v.tag, e.step)
            if k in got:
                fail("%s: tag %s step %d written twice" % (run, v.tag, e.step))
            got[k] = v.simple_value
            got_wt[k] = e.wall_time
    want = {}
    for (job, kind, step), (value, tokens, lr, tps, gn, att, se) in pts.items():
        want[(job, kind + "/loss", step)] = f32(value)
        if kind == "val" and se is not None:
            want[(job, "val/loss_se", step)] = f32(se)
        if kind == "train":
            for tag, x in (("train/lr", lr), ("train/tok_per_s", tps), ("train/grad_norm", gn)):
                if x is not None:
                    want[(job, tag, step)] = f32(x)
    for (job, kind, step), ex in extras.items():
        for name, x in ex.items():
            want[(job, ("extra/" if kind == "train" else "val/extra/") + name, step)] = f32(x)
    for job, r in jobs.items():
        if r[5] is not None:
            want[(job, "result/val_loss", r[4])] = f32(r[5])
            if r[6] is not None:
                want[(job, "result/tok_per_s", r[4])] = f32(r[6])
            for l, x in enumerate(json.loads(r[7]) if r[7] else []):   # the attention distance of each layer
                if x is not None:
                    want[(job, "result/attn_distance/layer%02d" % l, r[4])] = f32(x)
            res = json.loads(r[8]) if r[8] else {}
            for task, sc in (res.get("zero_shot") or {}).items():
                for key in ("acc", "acc_norm", "acc_norm_char"):
                    if sc.get(key) is not None:
                        want[(job, "result/zero_shot/%s/%s" % (task, key), r[4])] = f32(sc[key])
            for name, x in (res.get("extra") or {}).items():
                want[(job, "result/extra/" + name, r[4])] = f32(x)
    eq(sorted(want), sorted(got), "the (job, tag, step) points of the event files")
    for k in want:
        eq(want[k], got[k], "value of %r" % (k,))
    # each point at its own stored time (metrics.t, sql/019_metrics_time.sql), not its job's last update
    n_wt = 0
    for (job, kind, step), t in times.items():
        if t is not None:
            eq(float(t), got_wt[(job, kind + "/loss", step)], "wall time of %r" % ((job, kind, step),))
            n_wt += 1
    if times and not n_wt:
        fail("no metric point has a stored time (metrics.t)")
    n_gn = sum(1 for k in got if k[1] == "train/grad_norm")
    if not n_gn and any(v[4] is not None for v in pts.values()):
        fail("no train/grad_norm points in the event files")
    n_ex = sum(1 for k in got if "extra/" in k[1])
    n_se = sum(1 for k in got if k[1] == "val/loss_se")
    want_se = sum(1 for k, v in pts.items() if k[1] == "val" and v[6] is not None)
    if want_se and not n_se:
        fail("no val/loss_se points in the event files (the database has %d)" % want_se)
    n_ad = sum(1 for k in got if k[1].startswith("result/attn_distance/"))
    n_zs = sum(1 for k in got if k[1].startswith("result/zero_shot/"))
    print("tensorboard: %d runs, %d scalars (%d grad_norm, %d val/loss_se, %d extra, %d attn_distance, %d zero_shot) "
          "equal the database's; %d points at their stored time" % (len(runs), len(got), n_gn, n_se, n_ex, n_ad, n_zs, n_wt))


def num(s, integer=False):
    if s == "":
        return None
    return int(s) if integer else float(s)


got_ex = {}   # the extras the export holds, (job, kind, step) -> {name: value}


def check_rows(rows):
    got = {}
    for r in rows:
        k = (r["job_id"], r["kind"], r["step"])
        if k in got:
            fail("point %r listed twice" % (k,))
        got[k] = (r["value"], r["tokens"], r["lr"], r["tok_per_s"], r["grad_norm"], r["attempt"], r["val_loss_se"])
        if fmt == "jsonl" and "extra" in r:
            got_ex[k] = r["extra"]
        j = jobs[r["job_id"]]
        eq(j[1], r["schedule"], "schedule of job %d" % r["job_id"])
        eq(j[2], r["seed"], "seed of job %d" % r["job_id"])
    eq(sorted(pts), sorted(got), "the (job, kind, step) points exported")
    for k in pts:
        eq(pts[k], got[k], "point %r (value, tokens, lr, tok_per_s, grad_norm, attempt, val_loss_se)" % (k,))
    eq(extras, got_ex, "the points' extra metrics exported")
    print("%s: %d points (%d with extras) equal the database's" % (fmt, len(got), len(got_ex)))


def check_csv():
    with open(os.path.join(out, "metrics.csv"), newline="") as f:
        rd = csv.DictReader(f)
        eq(["job_id", "schedule", "seed", "kind", "step", "value", "tokens", "lr", "tok_per_s", "grad_norm", "attempt",
            "val_loss_se"],
           rd.fieldnames, "metrics.csv header")
        rows = [{"job_id": int(r["job_id"]), "schedule": r["schedule"], "seed": int(r["seed"]), "kind": r["kind"],
                 "step": int(r["step"]), "value": num(r["value"]), "tokens": num(r["tokens"], True), "lr": num(r["lr"]),
                 "tok_per_s": num(r["tok_per_s"]), "grad_norm": num(r["grad_norm"]), "attempt": int(r["attempt"]),
                 "val_loss_se": num(r["val_loss_se"])}
                for r in rd]
    with open(os.path.join(out, "extras.csv"), newline="") as f:
        rd = csv.DictReader(f)
        eq(["job_id", "schedule", "seed", "kind", "step", "name", "value"], rd.fieldnames, "extras.csv header")
        for r in rd:
            k = (int(r["job_id"]), r["kind"], int(r["step"]))
            if r["name"] in got_ex.setdefault(k, {}):
                fail("extras.csv: %r name %s twice" % (k, r["name"]))
            got_ex[k][r["name"]] = float(r["value"])
            eq(jobs[k[0]][1], r["schedule"], "extras.csv: schedule of job %d" % k[0])
    check_rows(rows)
    with open(os.path.join(out, "results.csv"), newline="") as f:
        res = {int(r["job_id"]): r for r in csv.DictReader(f)}
    eq(sorted(jobs), sorted(res), "results.csv jobs")
    for job, r in jobs.items():
        eq(r[3], res[job]["state"], "state of job %d" % job)
        eq(r[5], num(res[job]["val_loss"]), "val_loss of job %d" % job)


def check_jsonl():
    rows = []
    for line in open(os.path.join(out, "metrics.jsonl")):
        o = json.loads(line)
        o["schedule"] = ",".join(map(str, o["heads"]))
        rows.append(o)
    check_rows(rows)
    res = {}
    for line in open(os.path.join(out, "results.jsonl")):
        o = json.loads(line)
        res[o["job_id"]] = o
    eq(sorted(jobs), sorted(res), "results.jsonl jobs")
    for job, r in jobs.items():
        eq(r[3], res[job]["state"], "state of job %d" % job)
        eq(r[5], res[job]["val_loss"], "val_loss of job %d" % job)


spec = json.load(open(os.path.join(out, "sweep.json")))
eq(sweep, spec["id"], "sweep.json id")
{"tensorboard": check_tensorboard, "csv": check_csv, "jsonl": check_jsonl}[fmt]()
