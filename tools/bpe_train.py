#!/usr/bin/env python3
"""tools/bpe_train.py — learn a small byte-level BPE vocabulary offline and write it as GPT-2's two files.

    tools/bpe_train.py CORPUS.jsonl --vocab 1024 --out DIR [--skip-docs N]

GPT-2's own encoder.json / vocab.bpe cannot be downloaded everywhere (README, "Your data"); prism-data tokenize
(dataprep/bpe.c) reads any vocabulary in GPT-2's format, so this writes one learned from local text:
DIR/encoder.json (the 256 byte tokens with id = byte value, the merges' tokens 256.. in rank order,
<|endoftext|> last, id VOCAB - 1) and DIR/vocab.bpe ("#version: 0.2", then one merge "A B" a line in rank
order), both in GPT-2's byte-to-unicode alphabet.

Learning is the classic BPE of Sennrich et al. / GPT-2 on the pieces of GPT-2's pre-tokenising pattern (written
for Python's re: letters are [^\\W\\d_], numbers \\d; dataprep/bpe.c applies the exact Unicode pattern — on the
ASCII text of man pages they cut alike): count the pieces, repeatedly merge the most frequent adjacent pair of
tokens (ties: the pair whose bytes sort first), so the result is a deterministic function of the input.
CORPUS.jsonl is one {"text": ...} object a line (prism-data tokenize's JSONL); --skip-docs N learns from the
documents after the first N (keep the val split, which is the first tokens of the stream, out of the vocabulary).
Only the standard library; a few seconds for a few MB.
"""
import argparse
import collections
import json
import os
import re
import sys

PATTERN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def byte_alphabet():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other 68 map to U+0100.. in order."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cp, extra = {}, 0
    for b in range(256):
        if b in printable:
            cp[b] = chr(b)
        else:
            cp[b] = chr(256 + extra)
            extra += 1
    return cp


def learn(words, ntoken):
    """words: Counter of byte strings. Merges until ntoken tokens (the 256 bytes included) exist; returns the
    merges, a list of (bytes, bytes) in rank order (two merges may make the same token: one id for it)."""
    tokens = {bytes([c]) for c in range(256)}
    seqs = [[bytes([c]) for c in w] for w in words]      # each word as its current tokens
    freq = list(words.values())
    pairs = collections.Counter()
    where = collections.defaultdict(set)                 # pair -> indices of the words holding it
    for i, s in enumerate(seqs):
        for a, b in zip(s, s[1:]):
            pairs[(a, b)] += freq[i]
            where[(a, b)].add(i)
    merges = []
    while len(tokens) < ntoken:
        if not pairs:
            break
        top = max(pairs.values())
        if top < 2:
            break
        best = min(p for p, c in pairs.items() if c == top)
        merges.append(best)
        a, b = best
        ab = a + b
        if ab not in tokens:
            tokens.add(ab)
            if len(tokens) == ntoken:
                break
        for i in list(where[best]):
            s, f = seqs[i], freq[i]
            for x, y in zip(s, s[1:]):                   # remove this word's old pairs
                pairs[(x, y)] -= f
                if pairs[(x, y)] <= 0:
                    del pairs[(x, y)]
                where[(x, y)].discard(i)
            out, j = [], 0
            while j < len(s):                            # merge every occurrence, left to right
                if j + 1 < len(s) and s[j] == a and s[j + 1] == b:
                    out.append(ab)
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[i] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] += f
                where[(x, y)].add(i)
        where.pop(best, None)
    return merges


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", help="JSONL, one {\"text\": ...} a line")
    ap.add_argument("--vocab", type=int, default=1024, help="the vocabulary's size: 256 bytes, the merges' tokens, <|endoftext|>")
    ap.add_argument("--out", required=True, help="directory for encoder.json and vocab.bpe")
    ap.add_argument("--skip-docs", type=int, default=0, help="learn from the documents after the first N")
    o = ap.parse_args()
    words = collections.Counter()
    with open(o.corpus, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if n < o.skip_docs or not line.strip():
                continue
            for piece in PATTERN.findall(json.loads(line)["text"]):
                words[piece.encode("utf-8")] += 1
    merges = learn(words, o.vocab - 1)
    cp = byte_alphabet()
    u = lambda bs: "".join(cp[c] for c in bs)
    enc = {cp[b]: b for b in range(256)}
    for a, b in merges:
        enc.setdefault(u(a + b), len(enc))
    enc["<|endoftext|>"] = len(enc)
    os.makedirs(o.out, exist_ok=True)
    with open(os.path.join(o.out, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(enc, f, ensure_ascii=False)
    with open(os.path.join(o.out, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join("%s %s\n" % (u(a), u(b)) for a, b in merges))
    print("bpe_train: %d pieces (%d distinct), %d merges, vocabulary %d (<|endoftext|> = %d)"
          % (sum(words.values()), len(words), len(merges), len(enc), enc["<|endoftext|>"]), file=sys.stderr)


if __name__ == "__main__":
    main()
