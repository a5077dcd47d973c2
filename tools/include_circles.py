#!/usr/bin/python3
"""include_circles.py [ROOT] -- the include circles inside orchestrator/, for docs/CONTRIBUTING.md's figures.

Design: a module is X.c with X.h; module A points at module B when A.c or A.h includes "B.h". The circles are the
strongly connected components of that graph with more than one module (Tarjan); the arrows counted are those
whose both ends lie in one circle. tools/layers.sh's ORCH_FLOORS is what keeps the count at zero; this only
measures a tree, the committed one or an old checkout (ROOT).
"""
import os
import re
import sys


def graph(root):
    d = os.path.join(root, "orchestrator")
    mods = {}
    for f in sorted(os.listdir(d)):
        if f.endswith((".c", ".h")):
            mods.setdefault(f[:-2], []).append(f)
    edges = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            with open(os.path.join(d, f), errors="replace") as fh:
                for line in fh:
                    hit = re.match(r'\s*#\s*include\s*"([^"/]+)\.h"', line)
                    if hit and hit.group(1) in mods and hit.group(1) != m:
                        edges[m].add(hit.group(1))
    return edges


def circles(edges):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    edges = graph(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = circles(edges)
    inside = sum(1 for c in found for a in c for b in edges[a] if b in c)
    print(f"circles: {len(found)}, arrows inside them: {inside}")
    for c in found:
        print(f"  {len(c)} modules: " + ", ".join(f"{a} -> {'/'.join(sorted(b for b in edges[a] if b in c))}" for a in c))


if __name__ == "__main__":
    main()
