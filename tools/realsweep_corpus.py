import hashlib, json, os, sys
d, out = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(d), key=lambda n: hashlib.sha1(n.encode()).hexdigest())
seen, ndoc, nchar, ndup = set(), 0, 0, 0
with open(out, 'w') as f:
    for n in names:
        t = open(os.path.join(d, n), encoding='utf-8', errors='replace').read()
        h = hashlib.sha1(t.encode()).hexdigest()
        if not t.strip() or h in seen:
            ndup += 1; continue
        seen.add(h)
        f.write(json.dumps({"text": t}) + "\n"); ndoc += 1; nchar += len(t)
print("corpus: %d documents, %d characters, %d empty or duplicate pages left out" % (ndoc, nchar, ndup), file=sys.stderr)
