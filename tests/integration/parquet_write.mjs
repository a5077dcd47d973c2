// parquet_write.mjs — writes test parquet files with independent writers from the npm registry (installed by
// test_datain.sh into a cache directory given as NODE_PATH-like argument), so prism-data's own reader is checked
// against files it did not write.
//   node parquet_write.mjs MODULES_DIR WRITER OUT.parquet ROWS.json OPTIONS_JSON
// ROWS.json: a JSON array of strings (null = a null value). WRITER:
//   hyparquet  hyparquet-writer: data page v2, dictionary encoding when it pays, options {codec: SNAPPY|ZSTD|
//              GZIP|UNCOMPRESSED, rowGroupSize, pageSize (bytes), encoding (PLAIN, DELTA_BYTE_ARRAY, ...)}; ZSTD
//              and GZIP pages are compressed by the zstd CLI / node's zlib (hyparquet-writer only ships snappy)
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
