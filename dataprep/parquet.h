/* parquet.h — a small reader for one text column of an Apache Parquet file, as FineWeb (and most datasets on the
 * Hugging Face hub) ship them: `prism-data tokenize x.parquet` reads the "text" column through it.
 *
 * What it reads: the footer (FileMetaData in Thrift's compact protocol), a top-level BYTE_ARRAY column (REQUIRED
 * or OPTIONAL: null values are skipped), in every row group; dictionary pages (PLAIN) and data pages v1 and v2
 * whose values are PLAIN, dictionary-encoded (PLAIN_DICTIONARY / RLE_DICTIONARY: RLE/bit-packed hybrid indices),
 * DELTA_LENGTH_BYTE_ARRAY or DELTA_BYTE_ARRAY (lengths / prefix and suffix lengths in DELTA_BINARY_PACKED),
 * definition levels RLE-encoded; pages UNCOMPRESSED, SNAPPY (libsnappy), GZIP (zlib), ZSTD (libzstd), BROTLI
 * (libbrotlidec), LZ4_RAW or the deprecated LZ4 (liblz4; Hadoop-framed, else an LZ4 frame or a bare block).
 * Anything else (a nested or repeated column, BYTE_STREAM_SPLIT values, LZO pages, a column chunk in another
 * file, encrypted footers) is refused with a message naming it.
 *
 * The file is a memory image (the caller mmaps it); nothing is copied out of it except decompressed pages.
 * Every offset and length read from the file is checked against the image, so any byte string is safe to give.
 * Bombs are refused (PARQUET_EUNSUPPORTED, naming the cap) before they cost memory or output: a compressed page
 * that declares more than PARQUET_BOMB_RATIO times its bytes and more than PARQUET_BOMB_FLOOR (checked before it
 * is decompressed), a dictionary of more than PARQUET_MAX_DICT entries, a data page whose values decode (counted
 * as PLAIN would store them: 4 + length each) to more than PARQUET_MAX_PAGE, a column chunk or a file whose
 * values so far decode to more than PARQUET_BOMB_RATIO times its bytes and PARQUET_BOMB_FLOOR (a DELTA_BYTE_ARRAY
 * page's values counted whole, prefix included), and column chunks that share bytes (row groups reusing one
 * page). Memory is one decompressed page, the dictionary (16 bytes an entry) and 4 bytes a value of the current
 * page (DELTA_BYTE_ARRAY: 8, and its longest value): values are handed out one at a time, not expanded.
 */
#ifndef PRISM_PARQUET_H
#define PRISM_PARQUET_H
#include <stddef.h>
#include <stdint.h>

enum { PARQUET_OK = 0, PARQUET_EFORMAT = -2, PARQUET_ENOMEM = -3, PARQUET_EUNSUPPORTED = -4 };
/* Caps against decompression and dictionary bombs (a few KB that declare gigabytes). */
#define PARQUET_MAX_PAGE (1u << 28)   /* a page, decompressed, and a data page's values, decoded: 256 MiB each */
#define PARQUET_MAX_DICT (1u << 22)   /* entries of a dictionary page (writers stop near 1 MiB of dictionary) */
#define PARQUET_BOMB_RATIO 1000       /* decoded bytes per byte of input beyond PARQUET_BOMB_FLOOR: a bomb */
#define PARQUET_BOMB_FLOOR (64u << 20)

struct parquet_reader;

/* Checks the magic at both ends, parses the footer and finds the top-level column `column`. 0 with *out set (free
 * with parquet_close), or PARQUET_EFORMAT (malformed file), PARQUET_EUNSUPPORTED (a valid file this reader cannot
 * read: no such column, a non-BYTE_ARRAY or nested column, ...), PARQUET_ENOMEM; then *out is NULL and err says
 * what (without the file name: the caller adds it). data must stay valid until parquet_close. */
int parquet_open(const uint8_t *data, size_t len, const char *column, struct parquet_reader **out, char *err,
                 size_t errlen);

/* The next non-null value of the column in file order: 1 with *val / *vlen set (valid until the next call), 0 at
 * the end, or a negative PARQUET_E* code with err naming the row group, page and problem (the reader is then
 * finished: later calls return the same code). */
int parquet_next(struct parquet_reader *r, const uint8_t **val, size_t *vlen, char *err, size_t errlen);

int64_t parquet_num_rows(const struct parquet_reader *r);       /* from the footer */
int parquet_num_row_groups(const struct parquet_reader *r);
void parquet_close(struct parquet_reader *r);                    /* NULL is fine */
#endif
