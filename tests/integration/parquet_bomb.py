#!/usr/bin/env python3
"""parquet_bomb.py — writes the parquet decompression and dictionary bombs of issue #44 (test_bombs.sh).

A minimal parquet writer (Thrift compact protocol by hand: FileMetaData, PageHeader) for one REQUIRED BYTE_ARRAY
column "text", so a test can build files that declare far more than they hold:

  parquet_bomb.py OUT --codec zstd|gzip|snappy|brotli|lz4_raw|none KIND ARGS
    dict K V [--pages P] [--rg R]  a dictionary of one value of K bytes, P data pages (per row group) of V
                                   RLE-run indices each (bit width 0): V*K bytes per page from a few bytes
    entries E                      a dictionary of E empty values (4 zero bytes each), one data page of 1 index
    plain K                        one PLAIN data page holding one value of K bytes
    prefix K V [P]                 one DELTA_BYTE_ARRAY data page of V values: the first K bytes, each later one
                                   the previous value's first P (default K) bytes and no suffix: V*K bytes from
                                   K bytes and two DELTA_BINARY_PACKED streams of a few bytes (P > K: malformed)
  --encoding N                     the data page's encoding number instead (e.g. 9, BYTE_STREAM_SPLIT)
  --fill spaces|text|zeros         the bytes of the values (default spaces); text = "the cat sat on a mat " repeated
  --share                          every row group's column chunk points at row group 0's bytes

zstd pages are compressed by the zstd program, gzip by zlib, brotli by node's zlib, lz4_raw by the lz4 program (its
frame's one block), snappy by a literal then overlapping copies (the format's own run-length trick; the fill is
periodic), so nothing here needs a library beyond Python's stdlib.
"""
import argparse, functools, struct, subprocess, zlib

I32, I64, BIN, LIST, STRUCT = 5, 6, 8, 9, 12


class W:
    def __init__(self):
        self.b = bytearray()
        self.last = [0]

    def varint(self, v):
        while True:
            x = v & 0x7F
            v >>= 7
            if v:
                self.b.append(x | 0x80)
            else:
                self.b.append(x)
                return

    def fh(self, fid, t):
        d = fid - self.last[-1]
        assert 0 < d < 16
        self.b.append(d << 4 | t)
        self.last[-1] = fid

    def i32(self, fid, v):
        self.fh(fid, I32)
        self.varint((v << 1) ^ (v >> 63))

    def i64(self, fid, v):
        self.fh(fid, I64)
        self.varint((v << 1) ^ (v >> 63))

    def binary(self, fid, v):
        self.fh(fid, BIN)
        self.varint(len(v))
        self.b += v

    def lst(self, fid, etype, n):
        self.fh(fid, LIST)
        if n < 15:
            self.b.append(n << 4 | etype)
        else:
            self.b.append(0xF0 | etype)
            self.varint(n)

    def begin(self, fid=None):   # a struct field, or (fid None) a struct element of a list
        if fid is not None:
            self.fh(fid, STRUCT)
        self.last.append(0)

    def end(self):
        self.b.append(0)
        self.last.pop()


CODECS = {"none": 0, "snappy": 1, "gzip": 2, "brotli": 4, "zstd": 6, "lz4_raw": 7}
BROTLI_JS = ("const z = require('zlib'); process.stdout.write(z.brotliCompressSync(require('fs').readFileSync(0), "
             "{params: {[z.constants.BROTLI_PARAM_QUALITY]: 1}}))")


UNITS = {"spaces": b" ", "text": b"the cat sat on a mat ", "zeros": b"\0"}


def varint(v):
    w = W()
    w.varint(v)
    return bytes(w.b)


def zz(v):
    return varint((v << 1) ^ (v >> 63))


def delta_binary_packed(vals):
    """DELTA_BINARY_PACKED of vals: blocks of 128 values in 4 miniblocks of 32, each miniblock's deltas above the
    block's minimum bit-packed least significant bit first; no miniblock after the last value."""
    out = bytearray(varint(128) + varint(4) + varint(len(vals)) + zz(vals[0] if vals else 0))
    deltas = [b - a for a, b in zip(vals, vals[1:])]
    for i in range(0, len(deltas), 128):
        blk = deltas[i:i + 128]
        lo = min(blk)
        minis = [[d - lo for d in blk[j:j + 32]] for j in range(0, len(blk), 32)]
        widths = [max(m).bit_length() for m in minis] + [0] * (4 - len(minis))
        out += zz(lo) + bytes(widths)
        for m, w in zip(minis, widths):
            acc = sum(v << (k * w) for k, v in enumerate(m))
            out += acc.to_bytes(4 * w, "little")        # a full miniblock: 32 values of w bits
    return bytes(out)


def snappy(prefix, unit, n):
    """A snappy stream of prefix + n bytes of unit repeated: one literal (prefix and one unit), then copies of
    64 bytes at the unit's period (overlapping copies: snappy's run-length trick)."""
    lit = prefix + unit[:min(len(unit), n)]
    out = bytearray(varint(len(prefix) + n))
    out.append((len(lit) - 1) << 2)      # a literal of at most 60 bytes
    out += lit
    full, rest = divmod(n - min(len(unit), n), 64)
    copy = lambda k: bytes([((k - 1) << 2) | 2]) + struct.pack("<H", len(unit))
    out += copy(64) * full
    if rest:
        out += copy(rest)
    return bytes(out)


@functools.lru_cache(maxsize=4)
def body(codec, prefix, unit, n):
    """(compressed bytes, uncompressed size) of prefix + n bytes of unit repeated, in the chunk's codec."""
    if codec == "snappy":
        return snappy(prefix, unit, n), len(prefix) + n
    raw = prefix + ((unit * (n // len(unit) + 1))[:n] if n else b"")
    if codec == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return c.compress(raw) + c.flush(), len(raw)
    if codec == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=raw, stdout=subprocess.PIPE, check=True).stdout, len(raw)
    if codec == "brotli":
        return subprocess.run(["node", "-e", BROTLI_JS], input=raw, stdout=subprocess.PIPE, check=True).stdout, len(raw)
    if codec == "lz4_raw":   # the lz4 CLI's frame holds one compressed block (-B7: up to 4 MiB; larger: refused)
        f = subprocess.run(["lz4", "-q", "-c", "-B7", "--no-frame-crc"], input=raw, stdout=subprocess.PIPE, check=True).stdout
        size = struct.unpack_from("<I", f, 7)[0]
        if size == 0:
            return b"\0", 0
        blk = f[11:11 + (size & 0x7FFFFFFF)]
        assert f[11 + len(blk):15 + len(blk)] == b"\0\0\0\0", "more than one lz4 block"
        if size & 0x80000000:  # stored: one literals-only sequence (lengths past 15 in bytes of 255 and the rest)
            n = len(blk)
            blk = bytes([min(n, 15) << 4]) + (bytes([255] * ((n - 15) // 255) + [(n - 15) % 255]) if n >= 15 else b"") + blk
        return blk, len(raw)
    return raw, len(raw)


def page(ptype, nvals, encoding, data):
    """PageHeader + body: DICTIONARY_PAGE (2) or DATA_PAGE v1 (0; REQUIRED, so no levels)."""
    comp, usize = data
    w = W()
    w.i32(1, ptype)
    w.i32(2, usize)
    w.i32(3, len(comp))
    if ptype == 2:
        w.begin(7); w.i32(1, nvals); w.i32(2, 0); w.end()
    else:
        w.begin(5); w.i32(1, nvals); w.i32(2, encoding); w.i32(3, 3); w.i32(4, 3); w.end()
    w.b.append(0)
    return bytes(w.b) + comp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--codec", default="zstd", choices=CODECS)
    ap.add_argument("--fill", default="spaces")
    ap.add_argument("--pages", type=int, default=1)
    ap.add_argument("--rg", type=int, default=1)
    ap.add_argument("--share", action="store_true")
    ap.add_argument("--encoding", type=int)
    ap.add_argument("kind", choices=["dict", "entries", "plain", "prefix"])
    ap.add_argument("args", type=int, nargs="*")
    a = ap.parse_args()
    codec = a.codec
    unit = UNITS[a.fill]
    chunks = []     # (bytes, num_values, has_dict)
    for g in range(1 if a.share else a.rg):
        if a.kind == "dict":            # one value of k bytes; pages of v indices, bit width 0, one RLE run
            k, v = a.args
            d = page(2, 1, 0, body(codec, struct.pack("<I", k), unit, k))
            dp = page(0, v, 8, body(codec, bytes([0]) + varint(v << 1), b"", 0))
            chunks.append((d + dp * a.pages, v * a.pages, True))
        elif a.kind == "entries":       # e empty values: 4 zero bytes each
            (e,) = a.args
            d = page(2, e, 0, body(codec, b"", b"\0", 4 * e))
            dp = page(0, 1, 8, body(codec, bytes([0]) + varint(1 << 1), b"", 0))
            chunks.append((d + dp, 1, True))
        elif a.kind == "prefix":        # DELTA_BYTE_ARRAY: a value of k bytes, then v - 1 taking p bytes of it
            k, v, p = (a.args + [a.args[0]])[:3]
            lens = delta_binary_packed([0] + [p] * (v - 1)) + delta_binary_packed([k] + [0] * (v - 1))
            chunks.append((page(0, v, a.encoding or 7, body(codec, lens, unit, k)), v, False))
        else:                           # one PLAIN value of k bytes
            (k,) = a.args
            chunks.append((page(0, 1, a.encoding or 0, body(codec, struct.pack("<I", k), unit, k)), 1, False))
    out = bytearray(b"PAR1")
    offs = []
    for data, nv, has_dict in chunks:
        offs.append((len(out), len(data), nv, has_dict))
        out += data
    nrg = a.rg
    w = W()
    w.i32(1, 1)
    w.lst(2, STRUCT, 2)
    w.begin(); w.binary(4, b"schema"); w.i32(5, 1); w.end()
    w.begin(); w.i32(1, 6); w.i32(3, 0); w.binary(4, b"text"); w.end()
    total = sum(o[2] for o in offs) * (nrg if a.share else 1)
    w.i64(3, total)
    w.lst(4, STRUCT, nrg)
    for g in range(nrg):
        off, size, nv, has_dict = offs[0 if a.share else g]
        w.begin()
        w.lst(1, STRUCT, 1)
        w.begin()
        w.i64(2, off)
        w.begin(3)
        w.i32(1, 6)
        w.lst(2, I32, 2); w.varint(0); w.varint(16)
        w.lst(3, BIN, 1); w.varint(4); w.b += b"text"
        w.i32(4, CODECS[codec])
        w.i64(5, nv)
        w.i64(6, size)
        w.i64(7, size)
        if has_dict:
            # data_page_offset: after the dictionary page (any offset past it works for this reader)
            w.i64(9, off + 1)
            w.i64(11, off)
        else:
            w.i64(9, off)
        w.end()
        w.end()
        w.i64(2, size)
        w.i64(3, nv)
        w.end()
    w.b.append(0)
    out += w.b
    out += struct.pack("<I", len(w.b)) + b"PAR1"
    open(a.out, "wb").write(out)
    print(f"{a.out}: {len(out)} bytes")


if __name__ == "__main__":
    main()
