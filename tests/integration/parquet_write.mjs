// parquet_write.mjs — writes test parquet files with independent writers from the npm registry (installed by
// test_datain.sh into a cache directory given as NODE_PATH-like argument), so prism-data's own reader is checked
// against files it did not write.
//   node parquet_write.mjs MODULES_DIR WRITER OUT.parquet ROWS.json OPTIONS_JSON
// ROWS.json: a JSON array of strings (null = a null value). WRITER:
//   hyparquet  hyparquet-writer: data page v2, dictionary encoding when it pays, options {codec: SNAPPY|ZSTD|
//              GZIP|BROTLI|LZ4_RAW|LZ4|UNCOMPRESSED, rowGroupSize, pageSize (bytes), encoding (PLAIN,
//              DELTA_BYTE_ARRAY, DELTA_LENGTH_BYTE_ARRAY, ...), lz4 (hadoop|frame|raw: how LZ4 pages are framed)};
//              hyparquet-writer only ships snappy, so ZSTD pages are compressed by the zstd CLI, GZIP and BROTLI
//              by node's zlib, LZ4_RAW by the lz4 CLI (its frame's one block, a raw block) and LZ4 as the same
//              block in Hadoop frames (each half of the page its own frame), or left in the lz4 CLI's frame
//              format, or bare, as writers of that deprecated codec have done
//   arrowrs    parquet-wasm (arrow-rs compiled to WebAssembly; the table built by apache-arrow): options {codec:
//              UNCOMPRESSED|SNAPPY|GZIP|BROTLI|LZ4|LZ4_RAW|ZSTD, encoding (PLAIN, DELTA_BYTE_ARRAY, ...), dictionary
//              (false turns it off), v2 (data page v2), rowGroupSize (rows), pageSize (bytes)}
//   duckdb     DuckDB (@duckdb/node-api, its engine a binary in an npm package): COPY ... TO (FORMAT parquet),
//              options {codec: snappy|gzip|zstd|brotli|lz4|lz4_raw|uncompressed, version: V1|V2 (PARQUET_VERSION:
//              V2 stores strings DELTA_LENGTH_BYTE_ARRAY where a dictionary does not pay), rowGroupSize (rows)}
//   parquetjs  parquetjs-lite: PLAIN values, options {codec: SNAPPY|GZIP|UNCOMPRESSED, rowGroupSize (rows),
//              pageSize (rows), v2 (false = data page v1, the default here)}
//   node parquet_write.mjs MODULES_DIR inspect FILE.parquet
// prints what hyparquet (the reader of the same project, not prism-data's) finds in the "text" column: row
// groups, codecs, and the page types and value encodings of every page, as JSON — so a test can assert the file
// really has the dictionary pages, v1/v2 pages, several pages and row groups it claims to check.
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import zlib from 'node:zlib'

const [modules, writer, out, rowsFile, optsJson] = process.argv.slice(2)
const rows = writer === 'inspect' ? [] : JSON.parse(readFileSync(rowsFile, 'utf8'))
const opts = JSON.parse(optsJson || '{}')

if (writer === 'inspect') {
  const hp = await import(pathToFileURL(`${modules}/node_modules/hyparquet/src/index.js`).href)
  const { parquetHeader } = await import(pathToFileURL(`${modules}/node_modules/hyparquet/src/column.js`).href)
  const file = readFileSync(out)
  const ab = file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength)
  const md = hp.parquetMetadata(ab)
  const summary = { row_groups: md.row_groups.length, codecs: [], pages: {}, encodings: [] }
  for (const rg of md.row_groups) {
    const cc = rg.columns.find((c) => c.meta_data.path_in_schema.join('.') === 'text')
    const m = cc.meta_data
    if (!summary.codecs.includes(m.codec)) summary.codecs.push(m.codec)
    let off = Number(m.dictionary_page_offset ?? m.data_page_offset)
    const end = off + Number(m.total_compressed_size)
    while (off < end) {
      const reader = { view: new DataView(ab), offset: off }
      const h = parquetHeader(reader)
      summary.pages[h.type] = (summary.pages[h.type] || 0) + 1
      const enc = (h.data_page_header || h.data_page_header_v2 || h.dictionary_page_header || {}).encoding
      if (enc && !summary.encodings.includes(enc)) summary.encodings.push(enc)
      off = reader.offset + h.compressed_page_size
    }
  }
  console.log(JSON.stringify(summary))
} else if (writer === 'hyparquet') {
  const hw = await import(pathToFileURL(`${modules}/node_modules/hyparquet-writer/src/index.js`).href)
  const compressors = {
    ZSTD: (b) => new Uint8Array(execFileSync('zstd', ['-q', '-c', '-3'], { input: Buffer.from(b) })),
    GZIP: (b) => new Uint8Array(zlib.gzipSync(Buffer.from(b))),
    BROTLI: (b) => new Uint8Array(zlib.brotliCompressSync(Buffer.from(b))),
    LZ4_RAW: (b) => lz4Block(b),
    LZ4: (b) => lz4Hadoop(b, opts.lz4 || 'hadoop'),
  }
  const col = { name: 'text', data: rows, type: 'STRING' }
  if (opts.encoding) col.encoding = opts.encoding
  const other = { name: 'id', data: rows.map((_, i) => BigInt(i)), type: 'INT64' }   // a column before and after text
  const url = { name: 'url', data: rows.map((_, i) => `https://example.org/${i}`), type: 'STRING' }
  const buf = hw.parquetWriteBuffer({
    columnData: [other, col, url],
    codec: opts.codec || 'SNAPPY',
    compressors,
    rowGroupSize: opts.rowGroupSize || 1000,
    pageSize: opts.pageSize || 1048576,
  })
  writeFileSync(out, Buffer.from(buf))
} else if (writer === 'arrowrs') {
  const require = createRequire(`${modules}/package.json`)
  const arrow = require('apache-arrow')
  const pw = require('parquet-wasm')
  const table = arrow.tableFromArrays({
    id: BigInt64Array.from(rows.map((_, i) => BigInt(i))),
    text: arrow.vectorFromArray(rows, new arrow.Utf8()),
    url: arrow.vectorFromArray(rows.map((_, i) => `https://example.org/${i}`), new arrow.Utf8()),
  })
  let b = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression[opts.codec || 'SNAPPY'])
    .setWriterVersion(opts.v2 ? pw.WriterVersion.V2 : pw.WriterVersion.V1)
    .setMaxRowGroupSize(opts.rowGroupSize || 1000)
    .setDataPageSizeLimit(opts.pageSize || 1048576)
  if (opts.dictionary === false) b = b.setColumnDictionaryEnabled('text', false)
  if (opts.encoding) b = b.setColumnEncoding('text', pw.Encoding[opts.encoding])
  const buf = pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), b.build())
  writeFileSync(out, Buffer.from(buf))
} else if (writer === 'duckdb') {
  const require = createRequire(`${modules}/package.json`)
  const { DuckDBInstance } = require('@duckdb/node-api')
  const con = await (await DuckDBInstance.create(':memory:')).connect()
  const q = (p) => `'${p.replaceAll("'", "''")}'`
  await con.run(`CREATE TABLE t AS SELECT (j.ordinality - 1)::BIGINT AS id, j.unnest AS text,
                 'https://example.org/' || (j.ordinality - 1) AS url
                 FROM unnest((SELECT json_transform(content, '["VARCHAR"]') FROM read_text(${q(rowsFile)}))) WITH ORDINALITY AS j`)
  await con.run(`COPY (SELECT id, text, url FROM t ORDER BY id) TO ${q(out)} (FORMAT parquet, COMPRESSION
                 '${opts.codec || 'snappy'}', PARQUET_VERSION '${opts.version || 'V1'}', ROW_GROUP_SIZE ${opts.rowGroupSize || 122880})`)
} else if (writer === 'parquetjs') {
  const require = createRequire(`${modules}/package.json`)
  const parquet = require('parquetjs-lite')
  const schema = new parquet.ParquetSchema({
    id: { type: 'INT64' },
    text: { type: 'UTF8', optional: true, compression: opts.codec || 'SNAPPY' },
    url: { type: 'UTF8' },
  })
  const w = await parquet.ParquetWriter.openFile(schema, out, {
    useDataPageV2: !!opts.v2, pageSize: opts.pageSize || 5000, rowGroupSize: opts.rowGroupSize || 4096,
  })
  for (let i = 0; i < rows.length; i++) {
    const r = { id: i, url: `https://example.org/${i}` }
    if (rows[i] !== null) r.text = rows[i]
    await w.appendRow(r)
  }
  await w.close()
} else {
  console.error(`unknown writer ${writer}`)
  process.exit(2)
}

// One raw LZ4 block of b: the lz4 CLI's frame (magic, FLG, BD, HC; -B7: blocks of 4 MiB, so a page is one block)
// holds it after its 4-byte size; a block stored uncompressed (the size's high bit) becomes literals-only.
function lz4Block(b) {
  const f = execFileSync('lz4', ['-q', '-c', '-B7', '--no-frame-crc'], { input: Buffer.from(b) })
  if (f.readUInt32LE(0) !== 0x184d2204 || (f[4] & 0x09) !== 0) throw new Error('unexpected lz4 frame header')
  const size = f.readUInt32LE(7)
  if (size === 0) return new Uint8Array([0])   // an empty page: the end mark at once; a raw block of no literals
  const body = f.subarray(11, 11 + (size & 0x7fffffff))
  if (f.readUInt32LE(11 + body.length) !== 0 && b.length) throw new Error('the page took more than one lz4 block')
  if (!(size & 0x80000000)) return new Uint8Array(body)
  const n = body.length, head = [Math.min(n, 15) << 4]
  for (let r = n - 15; r >= 0; r -= 255) head.push(Math.min(r, 255))
  return new Uint8Array(Buffer.concat([Buffer.from(head), body]))
}

function lz4Hadoop(b, framing) {
  if (framing === 'frame') return new Uint8Array(execFileSync('lz4', ['-q', '-c'], { input: Buffer.from(b) }))
  if (framing === 'raw') return lz4Block(b)
  const half = b.length > 1024 ? b.length >> 1 : b.length, parts = []
  for (const piece of [b.subarray(0, half), b.subarray(half)]) {
    if (!piece.length && parts.length) continue
    const blk = lz4Block(piece), h = Buffer.alloc(8)
    h.writeUInt32BE(piece.length, 0)
    h.writeUInt32BE(blk.length, 4)
    parts.push(h, Buffer.from(blk))
  }
  return new Uint8Array(Buffer.concat(parts))
}
