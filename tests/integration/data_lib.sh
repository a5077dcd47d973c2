# data_lib.sh — sourced by the prism-data tests (test_datain.sh, test_bombs.sh).

# A byte-level GPT-2-format vocabulary (256 byte tokens, a few merges, <|endoftext|>) in $1.
make_vocab() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
d = sys.argv[1]
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs = bs[:]; n = 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
u = {b: chr(c) for b, c in zip(bs, cs)}
enc = {u[b]: b for b in range(256)}
merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("\u0120", "a"), ("i", "n"), ("\u0120", "s")]
for i, (a, b) in enumerate(merges): enc[a + b] = 256 + i
enc["<|endoftext|>"] = 256 + len(merges)
json.dump(enc, open(d + "/encoder.json", "w"))
open(d + "/vocab.bpe", "w").write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
PY
}
