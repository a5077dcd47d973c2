#!/usr/bin/python3
# export_check.py DB DIR FORMAT SWEEP_ID — reads back what `prism-sweep export` wrote, independently of its
# writer, and compares every point with the database (read here with Python's sqlite3).
#   tensorboard: each events file's TFRecord framing is checked (length, masked CRC-32C of the length and of the
#   data, computed here bit by bit) and every Event is decoded with Debian's python3-protobuf from a descriptor
#   built here (Event/Summary/Value as TensorFlow's event.proto and summary.proto number them). The HParams
#   plugin's summaries too (descriptors built here as plugin_data.proto and api.proto number them): every run's
#   session_start_info hparams equal the job's (computed here from the jobs table and its job JSON, with job.h's
#   defaults), its session_end_info the job's status, and the top folder's experiment lists each hparam with every
#   value it takes and the metrics.
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
    "SELECT j.id, sc.heads, j.seed, j.state, j.steps, r.val_loss, r.tok_per_s, r.attn_distance, r.result, sc.is_baseline, "
    "j.job, j.created_at, j.finished_at FROM jobs j "
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


def event_classes():
    """Event (tensorflow's event.proto / summary.proto, with the Value's tensor and metadata), and the HParams
    plugin's HParamsPluginData (tensorboard/plugins/hparams/plugin_data.proto and api.proto): descriptors built here
    with the real files' field numbers and types; google.protobuf.Value/ListValue are struct.proto's own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2
    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    sfd = descriptor_pb2.FileDescriptorProto()
    struct_pb2.DESCRIPTOR.CopyToProto(sfd)
    pool.Add(sfd)

    def msg(fd, name, fields, oneofs=()):
        m = fd.message_type.add(name=name)
        for o in oneofs:
            m.oneof_decl.add(name=o)
        for f in fields:
            fname, num, ftype = f[0], f[1], f[2]
            kw = {"name": fname, "number": num, "type": ftype,
                  "label": F.LABEL_REPEATED if "repeated" in f[3:] else F.LABEL_OPTIONAL}
            for extra in f[3:]:
                if extra.startswith("."):
                    kw["type_name"] = extra
                elif extra.startswith("oneof:"):
                    kw["oneof_index"] = int(extra[6:])
            m.field.add(**kw)
        return m

    def enum(fd, name, values):
        e = fd.enum_type.add(name=name)
        for n, v in values:
            e.value.add(name=n, number=v)

    tf = descriptor_pb2.FileDescriptorProto(name="prism_check_event.proto", package="tensorflow", syntax="proto3")
    msg(tf, "Dim", [("size", 1, F.TYPE_INT64), ("name", 2, F.TYPE_STRING)])
    msg(tf, "TensorShapeProto", [("dim", 2, F.TYPE_MESSAGE, "repeated", ".tensorflow.Dim"),
                                 ("unknown_rank", 3, F.TYPE_BOOL)])
    msg(tf, "TensorProto", [("dtype", 1, F.TYPE_INT32), ("tensor_shape", 2, F.TYPE_MESSAGE, ".tensorflow.TensorShapeProto"),
                            ("tensor_content", 4, F.TYPE_BYTES), ("float_val", 5, F.TYPE_FLOAT, "repeated"),
                            ("string_val", 8, F.TYPE_BYTES, "repeated")])
    msg(tf, "PluginData", [("plugin_name", 1, F.TYPE_STRING), ("content", 2, F.TYPE_BYTES)])
    msg(tf, "SummaryMetadata", [("plugin_data", 1, F.TYPE_MESSAGE, ".tensorflow.PluginData"),
                                ("display_name", 2, F.TYPE_STRING), ("summary_description", 3, F.TYPE_STRING),
                                ("data_class", 4, F.TYPE_INT32)])
    msg(tf, "Value", [("node_name", 7, F.TYPE_STRING), ("tag", 1, F.TYPE_STRING),
                      ("metadata", 9, F.TYPE_MESSAGE, ".tensorflow.SummaryMetadata"),
                      ("simple_value", 2, F.TYPE_FLOAT, "oneof:0"), ("tensor", 8, F.TYPE_MESSAGE, ".tensorflow.TensorProto", "oneof:0")],
        oneofs=["value"])
    msg(tf, "Summary", [("value", 1, F.TYPE_MESSAGE, "repeated", ".tensorflow.Value")])
    msg(tf, "Event", [("wall_time", 1, F.TYPE_DOUBLE), ("step", 2, F.TYPE_INT64), ("file_version", 3, F.TYPE_STRING),
                      ("summary", 5, F.TYPE_MESSAGE, ".tensorflow.Summary")])
    pool.Add(tf)

    hp = descriptor_pb2.FileDescriptorProto(name="prism_check_hparams.proto", package="tensorboard.hparams",
                                            syntax="proto3", dependency=["google/protobuf/struct.proto"])
    enum(hp, "DataType", [("DATA_TYPE_UNSET", 0), ("DATA_TYPE_STRING", 1), ("DATA_TYPE_BOOL", 2), ("DATA_TYPE_FLOAT64", 3)])
    enum(hp, "DatasetType", [("DATASET_UNKNOWN", 0), ("DATASET_TRAINING", 1), ("DATASET_VALIDATION", 2)])
    enum(hp, "Status", [("STATUS_UNKNOWN", 0), ("STATUS_SUCCESS", 1), ("STATUS_FAILURE", 2), ("STATUS_RUNNING", 3)])
    H = ".tensorboard.hparams."
    msg(hp, "Interval", [("min_value", 1, F.TYPE_DOUBLE), ("max_value", 2, F.TYPE_DOUBLE)])
    msg(hp, "HParamInfo", [("name", 1, F.TYPE_STRING), ("display_name", 2, F.TYPE_STRING),
                           ("description", 3, F.TYPE_STRING), ("type", 4, F.TYPE_ENUM, H + "DataType"),
                           ("domain_discrete", 5, F.TYPE_MESSAGE, ".google.protobuf.ListValue", "oneof:0"),
                           ("domain_interval", 6, F.TYPE_MESSAGE, H + "Interval", "oneof:0")], oneofs=["domain"])
    msg(hp, "MetricName", [("group", 1, F.TYPE_STRING), ("tag", 2, F.TYPE_STRING)])
    msg(hp, "MetricInfo", [("name", 1, F.TYPE_MESSAGE, H + "MetricName"), ("display_name", 3, F.TYPE_STRING),
                           ("description", 4, F.TYPE_STRING), ("dataset_type", 5, F.TYPE_ENUM, H + "DatasetType")])
    msg(hp, "Experiment", [("name", 6, F.TYPE_STRING), ("description", 1, F.TYPE_STRING), ("user", 2, F.TYPE_STRING),
                           ("time_created_secs", 3, F.TYPE_DOUBLE),
                           ("hparam_infos", 4, F.TYPE_MESSAGE, "repeated", H + "HParamInfo"),
                           ("metric_infos", 5, F.TYPE_MESSAGE, "repeated", H + "MetricInfo")])
    ssi = msg(hp, "SessionStartInfo", [("hparams", 1, F.TYPE_MESSAGE, "repeated", H + "SessionStartInfo.HparamsEntry"),
                                       ("model_uri", 2, F.TYPE_STRING), ("monitor_url", 3, F.TYPE_STRING),
                                       ("group_name", 4, F.TYPE_STRING), ("start_time_secs", 5, F.TYPE_DOUBLE)])
    entry = ssi.nested_type.add(name="HparamsEntry")   # map<string, google.protobuf.Value> hparams = 1
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".google.protobuf.Value")
    entry.options.map_entry = True
    msg(hp, "SessionEndInfo", [("status", 1, F.TYPE_ENUM, H + "Status"), ("end_time_secs", 2, F.TYPE_DOUBLE)])
    msg(hp, "HParamsPluginData", [("version", 1, F.TYPE_INT32),
                                  ("experiment", 2, F.TYPE_MESSAGE, H + "Experiment", "oneof:0"),
                                  ("session_start_info", 3, F.TYPE_MESSAGE, H + "SessionStartInfo", "oneof:0"),
                                  ("session_end_info", 4, F.TYPE_MESSAGE, H + "SessionEndInfo", "oneof:0")],
        oneofs=["data"])
    pool.Add(hp)

    def cls(name):
        desc = pool.FindMessageTypeByName(name)
        try:
            return message_factory.GetMessageClass(desc)
        except AttributeError:
            return message_factory.MessageFactory(pool).GetPrototype(desc)
    return cls("tensorflow.Event"), cls("tensorboard.hparams.HParamsPluginData")


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


def rle(heads):   # "1,1,4,4" -> "1x2-4x2", the run name's schedule
    xs, out, i = [int(x) for x in heads.split(",")], [], 0
    while i < len(xs):
        k = i
        while k < len(xs) and xs[k] == xs[i]:
            k += 1
        out.append("%dx%d" % (xs[i], k - i))
        i = k
    return "-".join(out)


# common/job.h's defaults of the train fields the hparams carry (seq_len: model.seq_len)
TRAIN_DEFAULTS = {"batch_size": 8, "grad_accum": 1, "steps": 100, "lr": 6e-4, "lr_schedule": "cosine", "warmup_steps": 0,
                  "min_lr_frac": 0.1, "weight_decay": 0.1, "grad_clip": 1.0}


def want_hparams(job):
    """The hparams a job's run must carry, from the database: the schedule and seed as stored, the job JSON's model
    and train fields (job.h's defaults where the JSON leaves one out), its trainer and trainer_args."""
    r = jobs[job]
    h = {"schedule": r[1], "schedule_rle": rle(r[1]), "seed": float(r[2]), "is_baseline": bool(r[9]), "state": r[3]}
    j = json.loads(r[10])
    m = j["model"]
    t = dict(TRAIN_DEFAULTS, seq_len=m["seq_len"])
    t.update(j.get("train") or {})
    h["arch"] = m.get("arch", "gpt2")
    for k in ("n_layer", "d_model", "vocab_size"):
        h[k] = float(m[k])
    for k in ("seq_len", "batch_size", "grad_accum", "steps"):
        h[k] = float(t[k])
    h["tokens"] = float(t["batch_size"] * t["seq_len"] * t["grad_accum"] * t["steps"])
    h["lr"] = float(t["lr"])
    h["lr_schedule"] = t["lr_schedule"]
    for k in ("warmup_steps", "min_lr_frac", "weight_decay", "grad_clip"):
        h[k] = float(t[k])
    if j.get("trainer"):
        h["trainer"] = j["trainer"]
    for k, x in (j.get("trainer_args") or {}).items():
        h["trainer_args." + k] = x if isinstance(x, (bool, str)) else float(x)
    return h


def pyvalue(v):   # google.protobuf.Value -> bool | float | str
    kind = v.WhichOneof("kind")
    if kind not in ("number_value", "string_value", "bool_value"):
        fail("an hparam Value holds %r, not a number, string or bool" % kind)
    return getattr(v, kind)


STATUS = {"done": 1, "failed": 2, "leased": 3}   # hparams Status: SUCCESS, FAILURE, RUNNING; else UNKNOWN (0)
METRICS = [("", "result/val_loss", 2), ("", "result/tok_per_s", 0), ("", "val/loss", 2), ("", "train/loss", 1)]
HP_TAGS = {"_hparams_/experiment": "experiment", "_hparams_/session_start_info": "session_start_info",
           "_hparams_/session_end_info": "session_end_info"}


def hparams_data(HParams, e, where):
    """The HParamsPluginData of an hparams Event, checked laid out as the plugin's summary writer does: one Value at
    step 0 whose tag names the data it holds, metadata plugin_data {plugin_name "hparams", content}, the plugin's
    NULL_TENSOR (float32 of shape [0]); version 0."""
    eq(1, len(e.summary.value), where + ": values per hparams event")
    v = e.summary.value[0]
    eq(0, e.step, where + ": step of " + v.tag)
    eq("hparams", v.metadata.plugin_data.plugin_name, where + ": plugin of " + v.tag)
    eq("tensor", v.WhichOneof("value"), where + ": " + v.tag + "'s value")
    eq((1, [0]), (v.tensor.dtype, [d.size for d in v.tensor.tensor_shape.dim]), where + ": " + v.tag + "'s null tensor")
    pd = HParams()
    pd.ParseFromString(v.metadata.plugin_data.content)
    eq(0, pd.version, where + ": HParamsPluginData.version")
    eq(HP_TAGS.get(v.tag), pd.WhichOneof("data"), where + ": the data under tag " + v.tag)
    return pd


def check_experiment(HParams, got_tags):
    files = glob.glob(os.path.join(out, "events.out.tfevents.*"))
    eq(1, len(files), "event files in the top folder (the experiment's)")
    evs = []
    for data in records(files[0]):
        e = Event()
        e.ParseFromString(data)
        evs.append(e)
    eq(2, len(evs), "events in the top folder's file (version, experiment)")
    eq("brain.Event:2", evs[0].file_version, "the experiment file's version")
    x = hparams_data(HParams, evs[1], "experiment").experiment
    name, created = con.execute("SELECT name, created_at FROM sweeps WHERE id = ?", (sweep,)).fetchone()
    eq(created, x.time_created_secs, "experiment time_created_secs")
    if name not in x.description:
        fail("experiment description %r does not name the sweep %r" % (x.description, name))
    domains = {}
    for job in sorted(jobs):
        for k, val in want_hparams(job).items():
            if val not in domains.setdefault(k, []):
                domains[k].append(val)
    got = {}
    for info in x.hparam_infos:
        if info.name in got:
            fail("experiment: hparam %s listed twice" % info.name)
        got[info.name] = (info.type, info.WhichOneof("domain"), [pyvalue(v) for v in info.domain_discrete.values])
    want = {}
    for k, vals in domains.items():
        types = {type(v) for v in vals}
        t = {str: 1, bool: 2, float: 3}[types.pop()] if len(types) == 1 else 0
        key = lambda v: (0 if isinstance(v, bool) else 1 if isinstance(v, float) else 2, v)
        want[k] = (t, "domain_discrete", sorted(vals, key=key)) if t else (0, None, [])
    eq(want, got, "experiment hparam_infos (name: type, domain, values)")
    eq(METRICS, [(m.name.group, m.name.tag, m.dataset_type) for m in x.metric_infos], "experiment metric_infos")
    # the metrics are the runs' own tags (the scalars themselves are compared above): some show in the dashboard
    if got_tags and not got_tags & {m[1] for m in METRICS}:
        fail("none of the experiment's metrics %s is a tag of a run" % [m[1] for m in METRICS])
    return len(got)


def check_tensorboard():
    global Event
    Event, HParams = event_classes()
    runs = sorted(glob.glob(os.path.join(out, "*", "events.out.tfevents.*")))
    # the run names sort as the job ids (zero-padded: job10 after job9, not before job1)
    ids = [int(os.path.basename(os.path.dirname(p)).split("_")[0][3:]) for p in runs]
    eq(sorted(ids), ids, "runs in name order are in job id order")
    got, got_wt = {}, {}
    seen_jobs = set()
    n_sessions = 0
    for path in runs:
        run = os.path.basename(os.path.dirname(path))
        job = int(run.split("_")[0][3:])
        seen_jobs.add(job)
        eq(1, len(glob.glob(os.path.join(os.path.dirname(path), "events.out.tfevents.*"))), "one events file in run " + run)
        heads, seed = jobs[job][1], jobs[job][2]
        eq("seed%d" % seed, run.split("_")[-1], "run name's seed of job %d" % job)
        evs = []
        for data in records(path):
            e = Event()
            e.ParseFromString(data)
            evs.append(e)
        eq("brain.Event:2", evs[0].file_version, run + ": the first event's file_version")
        if len(evs) < 3:
            fail("%s: %d events, not version, session start, ..., session end" % (run, len(evs)))
        # the session: its hparams right after the version, its end (status) last, as the plugin's writer lays them
        start = hparams_data(HParams, evs[1], run).session_start_info
        eq(want_hparams(job), {k: pyvalue(v) for k, v in start.hparams.items()}, run + ": session_start_info hparams")
        eq(jobs[job][11], start.start_time_secs, run + ": start_time_secs")
        end = hparams_data(HParams, evs[-1], run).session_end_info
        eq(STATUS.get(jobs[job][3], 0), end.status, run + ": session_end_info status of a " + jobs[job][3] + " job")
        eq(jobs[job][12] or 0.0, end.end_time_secs, run + ": end_time_secs")
        n_sessions += 1
        for e in evs[2:-1]:
            eq(1, len(e.summary.value), run + ": values per event")
            v = e.summary.value[0]
            if v.HasField("metadata"):
                fail("%s: tag %s at step %d: an hparams summary between the session's start and end" % (run, v.tag, e.step))
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
    n_hp = check_experiment(HParams, {k[1] for k in got})
    print("tensorboard: %d runs, %d scalars (%d grad_norm, %d val/loss_se, %d extra, %d attn_distance, %d zero_shot) "
          "equal the database's; %d points at their stored time; %d sessions' hparams and the experiment's %d hparams "
          "equal the jobs'" % (len(runs), len(got), n_gn, n_se, n_ex, n_ad, n_zs, n_wt, n_sessions, n_hp))


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
