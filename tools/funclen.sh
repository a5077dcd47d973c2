#!/bin/sh
# funclen.sh: the longest functions and files of the C tree, for docs/CONTRIBUTING.md's before/after table.
# Design: a brace scan that relies on the project's style (a function opens with a line at column 0 ending in
# "{" and closes with "}" at column 0), so it needs nothing but awk; ctags would agree on this tree.
# Usage: tools/funclen.sh [N]   -- the N longest functions (default 10), then the N longest .c/.cu files.
n=${1:-10}
cd "$(dirname "$0")/.." || exit 2
files=$(git ls-files '*.c' '*.cu' '*.h' | grep -v '^tests/\|^fuzz/\|^bench/')
echo "# longest functions (lines, file:line name)"
for f in $files; do
    awk -v F="$f" '
        /^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ && !/^(typedef|struct|enum|union|static const|const)[ \t].*=/ {
            s = NR; name = $0; sub(/\(.*/, "", name); k = split(name, w, /[ \t*]+/); name = w[k]; next }
        /^\}/ && s { printf "%6d %s:%d %s\n", NR - s + 1, F, s, name; s = 0 }' "$f"
done | sort -rn | head -n "$n"
echo "# longest files (lines)"
wc -l $files | grep -v ' total$' | sort -rn | head -n "$n"
