#!/usr/bin/env bash
# tests/cudaemu/seeded_bugs.sh — shows that the emulator tests of the register-accumulator attention kernel
# (kernels/cuda/flash_attention_mma.cu, FA_MMA_SEED) fail on each seeded bug: the emulated bf16 flash_attention_mma
# object is rebuilt with -DFA_MMA_SEED=N into a copy of the emulator library, test_cuda_kernels is linked
# against it, and one fused-attention case must FAIL (seed 1: the cp.async wait before a tile's use removed;
# seed 2: the two 8-key halves of the K ldmatrix lane map swapped) while seed 0 passes.
# Run after `make -j2 all tests`; takes about a minute (three compilations). Exit 0 when all three behave.
set -uo pipefail
B=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CXXF="-O1 -g -std=c++17 -fPIC -Itests/cudaemu -Ikernels/cuda -Ikernels -Icommon -Itests $(pkg-config --cflags openblas 2>/dev/null)"
LIBS="$(pkg-config --libs sqlite3 libuv jansson libcurl openblas libpcre2-8) -lhttp_parser -lz -lzstd -lsnappy -fopenmp -lm -lpthread -lstdc++"
rc=0
for seed in ${SEEDS:-0 1 2}; do
    mkdir -p "$tmp/$seed"
    g++ $CXXF -DFA_MMA_SEED=$seed -c "$B/gen/cudaemu/flash_attention_mma.cpp" -o "$tmp/$seed/flash_attention_mma.o" || exit 2
    cp "$B/lib/libprism_cudaemu_bf16.a" "$tmp/$seed/lib.a" && (cd "$tmp/$seed" && ar r lib.a flash_attention_mma.o) || exit 2
    cc -O1 -std=gnu11 -fopenmp -Icommon -Ikernels -Itests -DPRISM_HAVE_CUDA -o "$tmp/$seed/t" tests/unit/test_cuda_kernels.c \
       -Wl,--start-group "$B/lib/libprism_kernels.a" "$tmp/$seed/lib.a" "$B/lib/libprism_common.a" -Wl,--end-group $LIBS || exit 2
    for c in flash_attention_head_dim_64 flash_attention_head_dim_256; do
        timeout 300 "$tmp/$seed/t" $c > "$tmp/$seed/$c.log" 2>&1
        r=$?
        first=$(grep -m1 -E 'cudaemu:|test_cuda_kernels.c:[0-9]+:|cuda_test_lib.h:[0-9]+:' "$tmp/$seed/$c.log" || true)
        echo "seed $seed $c: exit $r ${first:+— $first}"
        if [ "$seed" = 0 ] && [ $r -ne 0 ]; then rc=1; fi
        if [ "$seed" != 0 ] && [ $r -eq 0 ]; then rc=1; fi
    done
done
exit $rc
