"""prism_eval — zero-shot multiple-choice tasks (job key eval.tasks): llm.c eval files and their scoring.

Design. The built-in engine's definition, re-derived so the two trainers give the same numbers on the same weights:
the reader is common/evalfile.c (every check, in its order, with its messages: the file, the example's position
from 0, the problem), the row layout and the decision are worker/zeroshot.c. Completion c of an example is scored
on the sequence context + c: its loss is the sum of -log p(token | everything before it) over c's tokens; a sequence
longer than T + 1 is cut from the left of its context (layout: keep = min(ctx_len, T + 1 - comp_len)), and a
completion longer than T is refused (here at open, before any training; the built-in finds it when scoring).
acc = share of examples whose lowest summed loss is the label's, acc_norm = the same with the mean per completion
token (llm.c's rule), acc_norm_char = the same with the summed loss per character of the choice (lm-eval's acc_norm;
only for files with character counts: header[4] = 1 and one uint32 per completion after the examples, a choice of
0 characters never winning), ties to the lowest index; truncated = examples where any completion's context was cut. Completions go one
per row into micro-batches of B rows, each forward as long as its longest row rounded up to 8 (at most T); padding
holds token 0 and is never summed (causal attention keeps it out of the scored positions).
The file is read whole after its size is checked, and nothing is allocated from what a header claims before the
bytes are known to be there. numpy only: the forward pass comes from the caller (score's `losses`).
"""
import os

import numpy as np

from prism_data import JobError

MAGIC, VERSION = 20240522, 1
HEADER_BYTES = 256 * 4
DELIM = 65535
MAX_COMPLETIONS = 64
SHARD_MAGIC = 20240520


class EvalFile:
    """An eval file checked whole: n examples, example(i) -> (label, ctx, [completion, ...]) as int64 arrays;
    chars(i) -> the completions' character counts, or None when the file has none."""

    def __init__(self, path, data, off, chars=None, chars_off=None):
        self.path, self.data, self.off, self.n = path, data, off, len(off)
        self._chars, self._chars_off = chars, chars_off

    def chars(self, i):
        if self._chars is None:
            return None
        k, ncomp = self._chars_off[i], int(self.data[self.off[i] + 4])
        return [int(x) for x in self._chars[k:k + ncomp]]

    def example(self, i):
        d, p = self.data, self.off[i]
        label, ncomp, ctx_len = int(d[p + 3]), int(d[p + 4]), int(d[p + 5])
        q = p + 6
        ctx = d[q:q + ctx_len].astype(np.int64)
        q += ctx_len
        comps = []
        for _ in range(ncomp):
            n = int(d[q])
            comps.append(d[q + 1:q + 1 + n].astype(np.int64))
            q += 1 + n
        return label, ctx, comps


def open_evalfile(path, vocab=0):
    """Reads and checks the whole file (common/evalfile.c evalfile_open); JobError naming the file and example."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise JobError("%s: cannot open eval file: %s" % (path, e.strerror))
    except ValueError:   # a NUL in the path
        raise JobError("%r: cannot open eval file: the path holds a NUL" % path)
    if not os.path.isfile(path):
        raise JobError("%s: not a regular file" % path)
    size = st.st_size
    if size < HEADER_BYTES:
        raise JobError("%s: %d bytes, shorter than the %d-byte eval file header (truncated, or not an llm.c eval file)"
                       % (path, size, HEADER_BYTES))
    try:
        with open(path, "rb") as f:
            raw = f.read(size)
    except OSError as e:
        raise JobError("%s: read failed: %s" % (path, e.strerror))
    if len(raw) != size:
        raise JobError("%s: read failed: %d of %d bytes (the file changed while read)" % (path, len(raw), size))
    hdr = np.frombuffer(raw, dtype="<i4", count=256)
    if hdr[0] != MAGIC:
        raise JobError("%s: magic %d, expected %d (an llm.c eval file; %s)" % (
            path, hdr[0], MAGIC, "this is a token shard: give it as data.train/data.val" if hdr[0] == SHARD_MAGIC
            else "written by write_evalfile"))
    if hdr[1] != VERSION:
        raise JobError("%s: version %d, expected %d" % (path, hdr[1], VERSION))
    n = int(hdr[2])
    if n <= 0 or n > 65536:
        raise JobError("%s: example count %d, expected 1..65536" % (path, n))
    if hdr[4] not in (0, 1):
        raise JobError("%s: header[4] is %d, expected 0 (no character counts) or 1 (character counts follow the examples)"
                       % (path, hdr[4]))
    body = size - HEADER_BYTES
    if body % 2:
        raise JobError("%s: %d bytes after the header, not a whole number of uint16 (truncated)" % (path, body))
    d = np.frombuffer(raw, dtype="<u2", offset=HEADER_BYTES)
    nd = len(d)
    off, pos, ncomps, chars_off = [], 0, 0, []
    where = lambda p: HEADER_BYTES + 2 * p   # noqa: E731
    for i in range(n):
        if pos >= nd:
            raise JobError("%s: example %d: missing, the file ends after %d of the %d examples its header counts "
                           "(truncated)" % (path, i, i, n))
        if nd - pos < 6:
            raise JobError("%s: example %d: truncated inside its 6-field header (at byte %d)" % (path, i, where(pos)))
        if d[pos] != DELIM:
            raise JobError("%s: example %d: starts with %d at byte %d, expected the delimiter 65535 (corrupt, or the "
                           "previous example's byte length is wrong)" % (path, i, d[pos], where(pos)))
        nbytes, label, ncomp, ctx = int(d[pos + 1]), int(d[pos + 3]), int(d[pos + 4]), int(d[pos + 5])
        if nbytes % 2 or nbytes < 14:
            raise JobError("%s: example %d: byte length %d is not an even count of at least 14" % (path, i, nbytes))
        if nbytes // 2 > nd - pos:
            raise JobError("%s: example %d: truncated: it says %d bytes but the file has %d left"
                           % (path, i, nbytes, 2 * (nd - pos)))
        end = pos + nbytes // 2
        if ncomp < 1 or ncomp > MAX_COMPLETIONS:
            raise JobError("%s: example %d: completion count %d, expected 1..%d" % (path, i, ncomp, MAX_COMPLETIONS))
        if label >= ncomp:
            raise JobError("%s: example %d: label %d >= completion count %d" % (path, i, label, ncomp))
        if ctx < 1:
            raise JobError("%s: example %d: empty context (a completion needs a token to follow)" % (path, i))
        q = pos + 6
        if ctx > end - q:
            raise JobError("%s: example %d: context of %d tokens runs past the example's end" % (path, i, ctx))
        _check_vocab(path, i, d[q:q + ctx], vocab, "context token")
        q += ctx
        for c in range(ncomp):
            if q >= end:
                raise JobError("%s: example %d: completion %d missing (the example ends first)" % (path, i, c))
            ln = int(d[q])
            q += 1
            if ln < 1:
                raise JobError("%s: example %d: completion %d is empty" % (path, i, c))
            if ln > end - q:
                raise JobError("%s: example %d: completion %d of %d tokens runs past the example's end" % (path, i, c, ln))
            _check_vocab(path, i, d[q:q + ln], vocab, "completion %d token" % c)
            q += ln
        if q != end:
            raise JobError("%s: example %d: byte length %d, but its fields take %d bytes" % (path, i, nbytes, 2 * (q - pos)))
        off.append(pos)
        chars_off.append(ncomps)
        ncomps += ncomp
        pos = end
    chars = None
    if hdr[4] == 1:
        if nd - pos != 2 * ncomps:
            raise JobError("%s: header[4] = 1 promises %d character counts (one per completion, %d bytes) after the "
                           "examples, but %d bytes follow them" % (path, ncomps, 4 * ncomps, 2 * (nd - pos)))
        chars = np.frombuffer(raw, dtype="<u4", offset=HEADER_BYTES + 2 * pos, count=ncomps)
        pos = nd
    if pos != nd:
        raise JobError("%s: %d bytes after the %d examples the header counts (wrong count, or two files joined)"
                       % (path, 2 * (nd - pos), n))
    return EvalFile(path, d, off, chars, chars_off if chars is not None else None)


def _check_vocab(path, i, toks, vocab, what):
    if vocab > 0 and len(toks) and int(toks.max()) >= vocab:
        t = int(np.argmax(toks >= vocab))
        raise JobError("%s: example %d: %s %d is %d, outside the vocabulary (model.vocab_size %d)"
                       % (path, i, what, t, toks[t], vocab))


def layout(ctx_len, comp_len, T):
    """worker/zeroshot.c zeroshot_layout: context tokens kept (from the right), or None when comp_len > T."""
    if comp_len > T:
        return None
    return min(ctx_len, T + 1 - comp_len)


def check_window(ef, T):
    """JobError naming the file and example when a completion cannot fit the window T (checked before training)."""
    for i in range(ef.n):
        d, p = ef.data, ef.off[i]
        q = p + 6 + int(d[p + 5])
        for c in range(int(d[p + 4])):
            ln = int(d[q])
            if layout(1, ln, T) is None:
                raise JobError("%s: example %d: completion %d has %d tokens, more than the model's window train.seq_len %d"
                               % (ef.path, i, c, ln, T))
            q += 1 + ln


def decide(sums, lens, label, chars=None):
    """(acc hit, acc_norm hit, acc_norm_char hit or None) for one example: the lowest summed loss, per token, per
    character (0 characters: +inf), ties to the lowest index (worker/zeroshot.c zeroshot_decide)."""
    def per_char(c):
        return sums[c] / chars[c] if chars[c] > 0 else float("inf")
    best = best_norm = best_char = 0
    for c in range(1, len(sums)):
        if sums[c] < sums[best]:
            best = c
        if sums[c] / lens[c] < sums[best_norm] / lens[best_norm]:
            best_norm = c
        if chars is not None and per_char(c) < per_char(best_char):
            best_char = c
    return best == label, best_norm == label, (best_char == label if chars is not None else None)


def score(ef, T, B, losses, rank=0, world=1):
    """Counts over the examples i with i % world == rank: {"correct", "correct_norm", "n", "truncated"}, and
    "correct_char" when the file has character counts.

    losses(inputs, targets) -> per-position losses, all (R, L) arrays (int64 in, float out) with R <= B rows and
    L <= T positions: the model's -log p(target | inputs up to the position)."""
    counts = {"correct": 0, "correct_norm": 0, "n": 0, "truncated": 0}
    if ef.chars(0) is not None:
        counts["correct_char"] = 0
    pending = []        # rows of the batch being filled: (example slot, completion, first, count, row tokens)
    inflight = {}       # example -> [label, sums, lens, completions left, character counts or None]

    def flush():
        if not pending:
            return
        L = max(first + count for _, _, first, count, _ in pending)
        L = min((L + 7) // 8 * 8, T)
        inp = np.zeros((len(pending), L), np.int64)
        tgt = np.zeros((len(pending), L), np.int64)
        for r, (_, _, _, _, seq) in enumerate(pending):
            inp[r, :len(seq) - 1] = seq[:-1]
            tgt[r, :len(seq) - 1] = seq[1:]
        out = np.asarray(losses(inp, tgt), dtype=np.float64)
        for r, (ex, c, first, count, _) in enumerate(pending):
            st = inflight[ex]
            st[1][c] = float(sum(out[r, first:first + count]))   # left to right in double, as zeroshot.c
            st[3] -= 1
            if st[3] == 0:
                a, an, ac = decide(st[1], st[2], st[0], st[4])
                counts["n"] += 1
                counts["correct"] += a
                counts["correct_norm"] += an
                if ac is not None:
                    counts["correct_char"] += ac
                del inflight[ex]
        pending.clear()

    for i in range(rank, ef.n, world):
        label, ctx, comps = ef.example(i)
        inflight[i] = [label, [0.0] * len(comps), [len(c) for c in comps], len(comps), ef.chars(i)]
        cut = False
        for c, comp in enumerate(comps):
            keep = layout(len(ctx), len(comp), T)
            if keep is None:
                raise JobError("%s: example %d: completion %d has %d tokens, more than the model's window train.seq_len %d"
                               % (ef.path, i, c, len(comp), T))
            cut |= keep < len(ctx)
            if len(pending) == B:
                flush()
            pending.append((i, c, keep - 1, len(comp), np.concatenate((ctx[len(ctx) - keep:], comp))))
        counts["truncated"] += cut
    flush()
    return counts


def summary(counts):
    """The result's object for one task: {"acc", "acc_norm", "n", "truncated"} and "acc_norm_char" when counted
    (worker/train.c zero_shot)."""
    n = int(counts["n"])
    out = {"acc": counts["correct"] / n if n else 0.0, "acc_norm": counts["correct_norm"] / n if n else 0.0,
           "n": n, "truncated": int(counts["truncated"])}
    if "correct_char" in counts:
        out["acc_norm_char"] = counts["correct_char"] / n if n else 0.0
    return out
