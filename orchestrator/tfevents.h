/* tfevents.h — a writer of TensorBoard event files: TFRecord framing around Event protobufs that carry scalar
 * summaries, the files `tensorboard --logdir` and W&B's TensorBoard sync read. Used by `prism-sweep export
 * --format tensorboard` (cmd_export.c).
 *
 * The format, encoded here by hand (no protobuf library):
 *   record = uint64 length (little-endian) | uint32 masked_crc32c(length's 8 bytes) | data | uint32 masked_crc32c(data)
 *   masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 with c = CRC-32C (Castagnoli) of x
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
 * The first record of a file is the Event with file_version "brain.Event:2" (what TensorBoard's loader expects).
 *
 * Contract: tfevents_open creates PATH's temporary file "<path>.tmp.<pid>" and writes the version record;
 * tfevents_scalar appends one Event with one Value; tfevents_close makes the file durable (fflush, fsync, rename
 * over PATH, directory fsync: util_commit_file) and is the only way PATH appears. Each returns 0, or -1 with
 * w->err naming the file and the failed step; after a failure of open or scalar, tfevents_abort removes the
 * temporary file (close does so itself on failure). Tags are at most 1,000 bytes. Not thread-safe per writer.
 * tfevents_crc32c and tfevents_masked_crc are exposed for tests.
 */
#ifndef PRISM_TFEVENTS_H
#define PRISM_TFEVENTS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tfevents {
    FILE *f;
    char path[4096], tmp[4200];
    char err[4500];
} tfevents;

uint32_t tfevents_crc32c(const void *data, size_t n);
uint32_t tfevents_masked_crc(const void *data, size_t n);

int tfevents_open(tfevents *w, const char *path, double wall_time);
int tfevents_scalar(tfevents *w, double wall_time, int64_t step, const char *tag, float value);
int tfevents_close(tfevents *w);
void tfevents_abort(tfevents *w);
#endif
