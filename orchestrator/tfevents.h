/* tfevents.h — a writer of TensorBoard event files: TFRecord framing around Event protobufs that carry scalar
 * summaries, the files `tensorboard --logdir` and W&B's TensorBoard sync read. Used by `prism-sweep export
 * --format tensorboard` (cmd_export.c).
 *
 * The format, encoded here by hand (no protobuf library):
 *   record = uint64 length (little-endian) | uint32 masked_crc32c(length's 8 bytes) | data | uint32 masked_crc32c(data)
 *   masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 with c = CRC-32C (Castagnoli) of x
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }
 *   Value   { string tag = 1; float simple_value = 2; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
 *   SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1; bytes content = 2; } }
 *   TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2 { repeated Dim dim = 2 { int64 size = 1; } } }
 * The first record of a file is the Event with file_version "brain.Event:2" (what TensorBoard's loader expects).
 *
 * The HParams plugin (tensorboard/plugins/hparams/plugin_data.proto and api.proto, laid out as its summary.py /
 * summary_v2.py write them): each summary is one Value at step 0 with tag _hparams_/experiment,
 * _hparams_/session_start_info or _hparams_/session_end_info, metadata plugin_data {plugin_name "hparams", content
 * = a serialized HParamsPluginData {version 0; experiment = 2 | session_start_info = 3 | session_end_info = 4}}, and
 * as its tensor the plugin's NULL_TENSOR (float32 of shape [0], what TensorBoard puts in a Value written without one).
 *   SessionStartInfo { map<string, google.protobuf.Value> hparams = 1; double start_time_secs = 5; }
 *   SessionEndInfo   { Status status = 1; double end_time_secs = 2; }
 *   Experiment { string description = 1; double time_created_secs = 3; repeated HParamInfo hparam_infos = 4;
 *                repeated MetricInfo metric_infos = 5; }
 *   HParamInfo { string name = 1; DataType type = 4; google.protobuf.ListValue domain_discrete = 5; }
 *   MetricInfo { MetricName name = 1 { string group = 1; string tag = 2; }; DatasetType dataset_type = 5; }
 *   google.protobuf.Value { double number_value = 2; string string_value = 3; bool bool_value = 4; }
 * A session's summaries go into its run's file, the experiment into a file of the top folder (the "empty run").
 *
 * Contract: tfevents_open creates PATH's temporary file "<path>.tmp.<pid>" and writes the version record;
 * tfevents_scalar appends one Event with one Value; tfevents_close makes the file durable (fflush, fsync, rename
 * over PATH, directory fsync: util_commit_file) and is the only way PATH appears. Each returns 0, or -1 with
 * w->err naming the file and the failed step; after a failure of open or scalar, tfevents_abort removes the
 * temporary file (close does so itself on failure). Tags are at most 1,000 bytes. Not thread-safe per writer.
 * tfevents_plugin appends one Event with one Value {tag, metadata naming PLUGIN with CONTENT, the null tensor}.
 * tfevents_hparams_start: HPARAMS is a JSON object {name: string | number | boolean} (in its order; anything else is
 * an error naming the hparam), start_time 0 = not written. tfevents_hparams_end: STATUS a TFEVENTS_STATUS_*, end_time
 * 0 = not written. tfevents_hparams_experiment: DOMAINS is an object {name: [every value it takes]}, the values all
 * strings, all booleans or all numbers (the HParamInfo's type; mixed ones get no type and no domain); METRICS the
 * scalar tags the dashboard shows as columns. tfevents_crc32c and tfevents_masked_crc are exposed for tests.
 */
#ifndef PRISM_TFEVENTS_H
#define PRISM_TFEVENTS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "buf.h"

typedef struct tfevents {
    FILE *f;
    char path[4096], tmp[4200];
    char err[4500];
    buf scratch[3];   /* tfevents_scalar's messages, reused (freed by close and abort) */
} tfevents;

uint32_t tfevents_crc32c(const void *data, size_t n);
uint32_t tfevents_masked_crc(const void *data, size_t n);

int tfevents_open(tfevents *w, const char *path, double wall_time);
int tfevents_scalar(tfevents *w, double wall_time, int64_t step, const char *tag, float value);
int tfevents_plugin(tfevents *w, double wall_time, int64_t step, const char *tag, const char *plugin, const void *content,
                    size_t n);

#define TFEVENTS_DT_FLOAT 1   /* tensorflow DataType DT_FLOAT */
#define TFEVENTS_HP_EXPERIMENT "_hparams_/experiment"
#define TFEVENTS_HP_SESSION_START "_hparams_/session_start_info"
#define TFEVENTS_HP_SESSION_END "_hparams_/session_end_info"
enum { TFEVENTS_HP_STRING = 1, TFEVENTS_HP_BOOL = 2, TFEVENTS_HP_FLOAT64 = 3 };   /* api.proto DataType */
enum { TFEVENTS_STATUS_UNKNOWN = 0, TFEVENTS_STATUS_SUCCESS = 1, TFEVENTS_STATUS_FAILURE = 2, TFEVENTS_STATUS_RUNNING = 3 };
enum { TFEVENTS_DATASET_UNKNOWN = 0, TFEVENTS_DATASET_TRAINING = 1, TFEVENTS_DATASET_VALIDATION = 2 };
typedef struct tfevents_metric { const char *group, *tag; int dataset_type; } tfevents_metric;

int tfevents_hparams_start(tfevents *w, double wall_time, const json_t *hparams, double start_time);
int tfevents_hparams_end(tfevents *w, double wall_time, int status, double end_time);
int tfevents_hparams_experiment(tfevents *w, double wall_time, const char *description, double time_created,
                                const json_t *domains, const tfevents_metric *metrics, size_t nmetrics);
int tfevents_close(tfevents *w);
void tfevents_abort(tfevents *w);
#endif
