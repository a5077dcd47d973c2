/* tfevents.c — TensorBoard event files written without a protobuf library (contract and format in tfevents.h).
 *
 * Design: each message is encoded into its own growable buffer (common/buf.h) field by field (varint keys, fixed64
 * doubles, fixed32 floats, length-delimited strings); a nested message is finished first and appended to its parent
 * as a length-delimited field (so no length is computed ahead), and the Event is framed as one TFRecord. The HParams
 * plugin's messages (HParamsPluginData and what it holds) are built the same way and carried as a plugin Value's
 * content. CRC-32C is the bytewise table method (reflected polynomial 0x82F63B78), built
 * once; speed is not the point here (an export writes a few bytes per metric point).
 */
#include "tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "util.h"

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t tfevents_crc32c(const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t tfevents_masked_crc(const void *data, size_t n) {
    uint32_t c = tfevents_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ---- protobuf wire format into a growable buffer ---------------------------------------------------- */

/* A message being encoded; oom is sticky (every append after a failure is a no-op), checked once at the end. Once
 * used (appended to its parent, or written), a message is done: freed, or with keep (a writer's scratch, reused by
 * every scalar) emptied with its memory kept. */
typedef struct pb { buf b; int oom, keep; } pb;

static void pb_done(pb *p) {
    if (p->keep) p->b.len = 0;
    else buf_free(&p->b);
}

static void pb_raw(pb *p, const void *v, size_t n) {
    if (!p->oom && buf_append(&p->b, v, n, BUF_MAX) < 0) p->oom = 1;
}
static void pb_varint(pb *p, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    do {
        unsigned char c = v & 0x7F;
        v >>= 7;
        t[n++] = c | (v ? 0x80 : 0);
    } while (v);
    pb_raw(p, t, n);
}
static void pb_key(pb *p, int field, int wire) { pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void pb_uint(pb *p, int field, uint64_t v) { pb_key(p, field, 0); pb_varint(p, v); }
static void pb_double(pb *p, int field, double v) { pb_key(p, field, 1); pb_raw(p, &v, 8); }   /* little-endian host */
static void pb_float(pb *p, int field, float v) { pb_key(p, field, 5); pb_raw(p, &v, 4); }
static void pb_bytes(pb *p, int field, const void *v, size_t n) {
    pb_key(p, field, 2);
    pb_varint(p, n);
    pb_raw(p, v, n);
}
static void pb_str(pb *p, int field, const char *s) { pb_bytes(p, field, s, strlen(s)); }
/* m as a length-delimited field of p; m is done (pb_done), its oom carried over. */
static void pb_msg(pb *p, int field, pb *m) {
    pb_bytes(p, field, m->b.data ? m->b.data : "", m->b.len);
    p->oom |= m->oom;
    pb_done(m);
}

/* Event { wall_time, step, file_version | summary } into p; summary (consumed) may be NULL. */
static void encode_event(pb *p, double wall_time, int64_t step, const char *version, pb *summary) {
    pb_double(p, 1, wall_time);
    if (step) pb_uint(p, 2, (uint64_t)step);
    if (version) pb_str(p, 3, version);
    if (summary) pb_msg(p, 5, summary);
}

/* One TFRecord holding the Event in p (p done). */
static int write_record(tfevents *w, pb *p) {
    int rc = -1;
    if (p->oom) {
        snprintf(w->err, sizeof w->err, "%s: out of memory encoding an event", w->tmp);
        goto out;
    }
    unsigned char head[12];
    uint64_t len = p->b.len;
    memcpy(head, &len, 8);
    uint32_t hc = tfevents_masked_crc(head, 8), dc = tfevents_masked_crc(p->b.data, p->b.len);
    memcpy(head + 8, &hc, 4);
    if (fwrite(head, 1, 12, w->f) != 12 || fwrite(p->b.data, 1, p->b.len, w->f) != p->b.len ||
        fwrite(&dc, 1, 4, w->f) != 4) {
        snprintf(w->err, sizeof w->err, "%s: write failed: %s", w->tmp, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    pb_done(p);
    return rc;
}

int tfevents_open(tfevents *w, const char *path, double wall_time) {
    memset(w, 0, sizeof *w);
    if (strlen(path) >= sizeof w->path) {
        snprintf(w->err, sizeof w->err, "%.200s...: path too long", path);
        return -1;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
        snprintf(w->err, sizeof w->err, "%s: create failed: %s", w->tmp, strerror(errno));
        if (fd >= 0) { close(fd); unlink(w->tmp); }
        return -1;
    }
    pb p = { 0 };
    encode_event(&p, wall_time, 0, "brain.Event:2", NULL);
    return write_record(w, &p);
}

static int tag_ok(tfevents *w, const char *tag) {
    if (strlen(tag) <= 1000) return 0;
    snprintf(w->err, sizeof w->err, "tag %.40s...: longer than 1000 bytes", tag);
    return -1;
}

/* An Event whose Summary holds the one Value v (consumed). */
static int write_value(tfevents *w, double wall_time, int64_t step, pb *v) {
    pb summary = { 0 }, ev = { 0 };
    pb_msg(&summary, 1, v);
    encode_event(&ev, wall_time, step, NULL, &summary);
    return write_record(w, &ev);
}

/* The writer's scratch messages (Value, Summary, Event): a scalar's encoding allocates nothing once they have grown. */
int tfevents_scalar(tfevents *w, double wall_time, int64_t step, const char *tag, float value) {
    if (tag_ok(w, tag) < 0) return -1;
    pb v = { w->scratch[0], 0, 1 }, summary = { w->scratch[1], 0, 1 }, ev = { w->scratch[2], 0, 1 };
    pb_str(&v, 1, tag);
    pb_float(&v, 2, value);
    pb_msg(&summary, 1, &v);
    encode_event(&ev, wall_time, step, NULL, &summary);
    int rc = write_record(w, &ev);
    w->scratch[0] = v.b;
    w->scratch[1] = summary.b;
    w->scratch[2] = ev.b;
    return rc;
}

int tfevents_plugin(tfevents *w, double wall_time, int64_t step, const char *tag, const char *plugin, const void *content,
                    size_t n) {
    if (tag_ok(w, tag) < 0) return -1;
    pb pd = { 0 }, md = { 0 }, shape = { 0 }, dim = { 0 }, tensor = { 0 }, v = { 0 };
    pb_str(&pd, 1, plugin);                   /* PluginData { plugin_name = 1; bytes content = 2; } */
    pb_bytes(&pd, 2, content, n);
    pb_msg(&md, 1, &pd);                      /* SummaryMetadata { plugin_data = 1; } */
    pb_msg(&shape, 2, &dim);                  /* TensorShapeProto { dim = 2 { size = 1 (0: not written) } } */
    pb_uint(&tensor, 1, TFEVENTS_DT_FLOAT);   /* TensorProto { dtype = 1; tensor_shape = 2; }: float32 of shape [0] */
    pb_msg(&tensor, 2, &shape);
    pb_str(&v, 1, tag);                       /* Value { tag = 1; tensor = 8; metadata = 9; } */
    pb_msg(&v, 8, &tensor);
    pb_msg(&v, 9, &md);
    return write_value(w, wall_time, step, &v);
}

/* ---- the HParams plugin's data (tensorboard/plugins/hparams/plugin_data.proto, api.proto) ----------- */

/* google.protobuf.Value { number_value = 2 (double); string_value = 3; bool_value = 4; } of a JSON scalar into p
 * (members of a oneof: written even when 0, "" or false). -1 when x is not a string, number or boolean. */
static int encode_value(pb *p, const json_t *x) {
    if (json_is_string(x)) pb_bytes(p, 3, json_string_value(x), json_string_length(x));
    else if (json_is_number(x)) pb_double(p, 2, json_number_value(x));
    else if (json_is_boolean(x)) pb_uint(p, 4, json_is_true(x));
    else return -1;
    return 0;
}

/* HParamsPluginData { version = 1 (0: not written); oneof data { experiment = 2; session_start_info = 3;
 * session_end_info = 4; } } holding m (consumed), written as the tag's hparams summary at step 0. */
static int write_hparams(tfevents *w, double wall_time, const char *tag, int oneof_field, pb *m) {
    pb data = { 0 };
    pb_msg(&data, oneof_field, m);
    if (data.oom) {
        buf_free(&data.b);
        snprintf(w->err, sizeof w->err, "%s: out of memory encoding %s", w->tmp, tag);
        return -1;
    }
    int rc = tfevents_plugin(w, wall_time, 0, tag, "hparams", data.b.data, data.b.len);
    buf_free(&data.b);
    return rc;
}

int tfevents_hparams_start(tfevents *w, double wall_time, const json_t *hparams, double start_time) {
    pb info = { 0 };
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)hparams, k, x) {   /* SessionStartInfo.hparams = 1: map<string, Value> */
        pb entry = { 0 }, val = { 0 };
        if (encode_value(&val, x) < 0) {
            buf_free(&val.b);
            buf_free(&info.b);
            snprintf(w->err, sizeof w->err, "hparam %.100s: not a string, number or boolean", k);
            return -1;
        }
        pb_str(&entry, 1, k);
        pb_msg(&entry, 2, &val);
        pb_msg(&info, 1, &entry);
    }
    if (start_time) pb_double(&info, 5, start_time);   /* start_time_secs = 5 */
    return write_hparams(w, wall_time, TFEVENTS_HP_SESSION_START, 3, &info);
}

int tfevents_hparams_end(tfevents *w, double wall_time, int status, double end_time) {
    pb info = { 0 };
    if (status) pb_uint(&info, 1, (uint64_t)status);   /* SessionEndInfo { status = 1; end_time_secs = 2; } */
    if (end_time) pb_double(&info, 2, end_time);
    return write_hparams(w, wall_time, TFEVENTS_HP_SESSION_END, 4, &info);
}

/* The DataType of a domain's values: all strings, all booleans or all numbers; 0 (unset) when mixed or empty. */
static int domain_type(const json_t *values) {
    int type = 0;
    size_t i;
    json_t *x;
    json_array_foreach(values, i, x) {
        int t = json_is_string(x) ? TFEVENTS_HP_STRING : json_is_boolean(x) ? TFEVENTS_HP_BOOL
              : json_is_number(x) ? TFEVENTS_HP_FLOAT64 : 0;
        if (!t || (type && t != type)) return 0;
        type = t;
    }
    return type;
}

int tfevents_hparams_experiment(tfevents *w, double wall_time, const char *description, double time_created,
                                const json_t *domains, const tfevents_metric *metrics, size_t nmetrics) {
    pb exp = { 0 };
    if (description && *description) pb_str(&exp, 1, description);   /* Experiment.description = 1 */
    if (time_created) pb_double(&exp, 3, time_created);               /* time_created_secs = 3 */
    const char *k;
    json_t *values;
    json_object_foreach((json_t *)domains, k, values) {   /* hparam_infos = 4: HParamInfo */
        pb info = { 0 };
        int type = domain_type(values);
        pb_str(&info, 1, k);                                           /* name = 1 */
        if (type) {
            pb_uint(&info, 4, (uint64_t)type);                         /* type = 4 (DataType) */
            pb list = { 0 };
            size_t i;
            json_t *x;
            json_array_foreach(values, i, x) {                         /* domain_discrete = 5: ListValue { values = 1 } */
                pb val = { 0 };
                encode_value(&val, x);
                pb_msg(&list, 1, &val);
            }
            pb_msg(&info, 5, &list);
        }
        pb_msg(&exp, 4, &info);
    }
    for (size_t i = 0; i < nmetrics; i++) {   /* metric_infos = 5: MetricInfo { name = 1: MetricName; dataset_type = 5 } */
        pb info = { 0 }, name = { 0 };
        if (metrics[i].group && *metrics[i].group) pb_str(&name, 1, metrics[i].group);   /* MetricName { group = 1; tag = 2 } */
        pb_str(&name, 2, metrics[i].tag);
        pb_msg(&info, 1, &name);
        if (metrics[i].dataset_type) pb_uint(&info, 5, (uint64_t)metrics[i].dataset_type);
        pb_msg(&exp, 5, &info);
    }
    return write_hparams(w, wall_time, TFEVENTS_HP_EXPERIMENT, 2, &exp);
}

static void free_scratch(tfevents *w) {
    for (int i = 0; i < 3; i++) buf_free(&w->scratch[i]);
}

int tfevents_close(tfevents *w) {
    free_scratch(w);
    FILE *f = w->f;
    w->f = NULL;
    return util_commit_file(f, w->tmp, w->path, w->err, sizeof w->err);
}

void tfevents_abort(tfevents *w) {
    free_scratch(w);
    if (w->f) fclose(w->f);
    w->f = NULL;
    if (w->tmp[0]) unlink(w->tmp);
}
