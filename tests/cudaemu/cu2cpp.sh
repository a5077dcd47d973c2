#!/usr/bin/env bash
# tests/cudaemu/cu2cpp.sh FILE.cu — prints FILE.cu as C++ for the CUDA emulator (tests/cudaemu/cudaemu.h).
# Two rewrites, each within one line so line numbers stay those of the .cu file:
#   name<<<grid, block[, shmem[, stream]]>>>(args)   ->  cudaemu_cfg(grid, block...).run(name)(args)
#   extern __shared__ [__align__(N) ]T name[];        ->  T *name = (T *)cudaemu_dyn_shared();   (128-aligned)
#   __shared__ T name[A][B];                          ->  T (&name)[A][B] = *(T (*)[A][B])cudaemu_static_shared(...);
#   #pragma unroll [N]                                ->  a blank line (nvcc's pragma; the C++ compiler warns)
# A launch that does not fit the first pattern (one launch per line, `>>>(` on the same line) is an error,
# so a new launch style cannot slip through unconverted.
set -euo pipefail
f=$1
bad=$(grep -n '<<<' "$f" | grep -v '<<<.*>>>(' || true)
if [ -n "$bad" ]; then echo "cu2cpp.sh: $f: launch not on one line: $bad" >&2; exit 2; fi
printf '#line 1 "%s"\n' "$f"
sed -e 's/^[[:space:]]*#pragma unroll.*$//' \
    -e 's/\([A-Za-z_][A-Za-z_0-9]*\(<[^<>]*>\)\{0,1\}\)<<<\(.*\)>>>(/cudaemu_cfg(\3).run(\1, "\1")(/' \
    -e 's/extern __shared__ \(__align__([0-9]*) \)\{0,1\}\([A-Za-z_][A-Za-z_0-9]*\) \([A-Za-z_][A-Za-z_0-9]*\)\[\];/\2 *\3 = (\2 *)cudaemu_dyn_shared();/' \
    -e 's/__shared__ \([A-Za-z_][A-Za-z_0-9]*\) \([A-Za-z_][A-Za-z_0-9]*\)\(\(\[[^]]*\]\)\{1,\}\);/\1 (\&\2)\3 = *(\1 (*)\3)cudaemu_static_shared(sizeof(\1\3), __FILE__, __LINE__);/' "$f"
