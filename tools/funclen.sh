#!/bin/sh
# funclen.sh: the longest functions and files of the C tree, for docs/CONTRIBUTING.md's before/after table.
# Design: universal-ctags parses the C, CUDA and header files and reports each function definition's first line
# (the line naming it) and its end line (the closing brace), so a signature wrapped over several lines, a body
# full of macros or braces in strings, and the .cu kernels are measured like any other; length = end - line + 1.
# RN(name) (kernels/real.h: the precision's name of a kernel) is expanded to name, so those are named too.
# The old brace scan (a line at column 0 ending in "{") missed every wrapped signature. Needs universal-ctags
# (Debian universal-ctags; `make deps` installs it): exuberant ctags has no end lines and is refused.
# Usage: tools/funclen.sh [N] [FILE...]  -- the N longest functions (default 10), then the N longest files;
#        without FILEs, the tracked .c/.cu/.h files outside tests/, fuzz/ and bench/.
n=${1:-10}
[ $# -gt 0 ] && shift
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
    echo "funclen.sh: universal-ctags not found (ctags --version does not say Universal Ctags); install it: apt-get install universal-ctags (or make deps)" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    files="$*"
else
    cd "$(dirname "$0")/.." || exit 2
    files=$(git ls-files '*.c' '*.cu' '*.h' '*.cuh' | grep -v '^tests/\|^fuzz/\|^bench/')
fi
echo "# longest functions (lines, file:line name)"
# shellcheck disable=SC2086  # the file list is word-split on purpose (git paths have no spaces)
ctags --languages=C,C++,CUDA --kinds-C=f --kinds-C++=f --kinds-CUDA=f --fields=+ne --excmd=number \
      --sort=no -D 'RN(name)=name' -f - $files |
    awk -F '\t' '{ s = ""; e = ""
                   for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) s = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
                   if (s != "" && e != "") printf "%6d %s:%d %s\n", e - s + 1, $2, s, $1 }' |
    sort -k1,1rn -k2,2 | head -n "$n"
echo "# longest files (lines)"
# shellcheck disable=SC2086
wc -l $files | grep -v ' total$' | sort -rn | head -n "$n"
