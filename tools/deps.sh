#!/usr/bin/env bash
# Reports ✓/✗ for every dependency; installs the missing Debian packages when run as root,
# otherwise prints the one apt-get line to run. Exit 0 when everything needed is present.
# (--fuzz is accepted and changes nothing: clang and libFuzzer, which `make fuzz` needs, are always checked.)
set -u
missing=()
check() { # check LABEL PACKAGE TEST-COMMAND...
  local label=$1 pkg=$2; shift 2
  if "$@" >/dev/null 2>&1; then printf '  \342\234\223 %s\n' "$label"
  else printf '  \342\234\227 %s (package %s)\n' "$label" "$pkg"; missing+=("$pkg"); fi
}
hdr() { [ -f "/usr/include/$1" ] || [ -f "/usr/include/x86_64-linux-gnu/$1" ] || [ -f "/usr/include/aarch64-linux-gnu/$1" ]; }
echo "dependencies:"
check "C compiler (cc)"         gcc                  command -v cc
check "pkg-config"              pkg-config           command -v pkg-config
check "SQLite (libsqlite3-dev)" libsqlite3-dev       hdr sqlite3.h
check "libuv (libuv1-dev)"      libuv1-dev           hdr uv.h
check "http-parser"             libhttp-parser-dev   hdr http_parser.h
check "jansson"                 libjansson-dev       hdr jansson.h
check "libcurl"                 libcurl4-openssl-dev hdr curl/curl.h
check "OpenBLAS"                libopenblas-dev      pkg-config --exists openblas
check "PCRE2 (libpcre2-dev)"    libpcre2-dev         pkg-config --exists libpcre2-8
check "zlib (zlib1g-dev)"       zlib1g-dev           hdr zlib.h
check "zstd (libzstd-dev)"      libzstd-dev          hdr zstd.h
check "snappy (libsnappy-dev)"  libsnappy-dev        hdr snappy-c.h
check "lz4 (liblz4-dev)"        liblz4-dev           hdr lz4.h
check "brotli (libbrotli-dev)"  libbrotli-dev        hdr brotli/decode.h
check "sqlite3 shell"           sqlite3              command -v sqlite3
check "Chart.js (libjs-chart.js)" libjs-chart.js     test -f /usr/share/javascript/chart.js/chart.umd.js -o -f /usr/share/javascript/chart.js/chart.min.js -o -f /usr/share/javascript/chart.js/Chart.min.js
check "python3 (Debian)"        python3              test -x /usr/bin/python3
check "selenium (python3-selenium)" python3-selenium /usr/bin/python3 -c 'import selenium'
check "chromium"                chromium             command -v chromium
check "chromedriver"            chromium-driver      command -v chromedriver
check "curl (CLI, tests)"       curl                 command -v curl
check "jq (tests)"              jq                   command -v jq
check "optipng (docs screenshots: tools/leaderboard_screenshots.py)" optipng command -v optipng
check "SLURM (slurm-wlm, tests)" slurm-wlm           test -x /usr/sbin/slurmctld -a -x /usr/sbin/slurmd -a -x /usr/bin/sbatch
check "munge (tests)"           munge                test -x /usr/sbin/munged
check "systemd-analyze (tests)" systemd              test -x /usr/bin/systemd-analyze
check "PyYAML (python3-yaml, tests)" python3-yaml    /usr/bin/python3 -c 'import yaml'
check "node (nodejs, tests)"    nodejs               command -v node
check "npm (tests)"             npm                  command -v npm
# tests/web/modules_check.cjs (tests/web/test_modules.py): the page's modules parsed and their scopes resolved
check "acorn (node-acorn, tests)" node-acorn         test -f /usr/share/nodejs/acorn/package.json -a -f /usr/share/nodejs/acorn-walk/package.json
check "eslint-scope (node-eslint-scope, tests)" node-eslint-scope test -f /usr/share/nodejs/eslint-scope/package.json
check "globals (node-globals, tests)" node-globals   test -f /usr/share/nodejs/globals/package.json
check "zstd (CLI, tests)"      zstd                 command -v zstd
check "lz4 (CLI, tests)"       lz4                  command -v lz4
check "SciPy (python3-scipy, tests)" python3-scipy  /usr/bin/python3 -c "import scipy.stats"
check "PyTorch (python3-torch, the reference trainer)" python3-torch /usr/bin/python3 -c 'import torch, torch.distributed'
check "tmux (tests)"            tmux                 command -v tmux
check "universal-ctags (tools/funclen.sh, tests)" universal-ctags sh -c 'ctags --version | grep -q "Universal Ctags"'
check "protobuf (python3-protobuf, tests)" python3-protobuf /usr/bin/python3 -c 'import google.protobuf'
check "NumPy (python3-numpy, bench)" python3-numpy   /usr/bin/python3 -c 'import numpy'
check "Optuna (python3-optuna, bench: TPE in bench_search_server.py)" python3-optuna /usr/bin/python3 -c 'import optuna'
# make fuzz, and tests/integration/test_fuzz_build.sh in make check: clang with libFuzzer's runtime
check "clang (make fuzz, tests)" clang               command -v clang
check "libFuzzer runtime (make fuzz, tests)" libclang-rt-14-dev compgen -G '/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
nv=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
if [ -n "$nv" ]; then printf '  \342\234\223 nvcc (%s): the CUDA backend prism-cuda.so will be built (prism-worker loads it only for a CUDA device)\n' "$nv"
else printf '  \342\234\227 nvcc: not found, the CUDA backend prism-cuda.so is not built (CPU build only)\n'; fi
cudnn_h=$(ls "${nv%/bin/nvcc}/include/cudnn.h" /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h 2>/dev/null | head -1)
if [ -n "$nv" ] && [ -n "$cudnn_h" ]; then printf '  \342\234\223 cuDNN (%s): the cuDNN attention backend is built in (libcudnn.so.9 is opened at run time)\n' "$cudnn_h"
else printf '  \342\234\227 cuDNN: cudnn.h not found, the fused attention kernel runs every layer (optional; the emulator tests its shim)\n'; fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" = 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # python3-torch without its recommends (the CPU build is all trainers/torch/ and its tests need); the rest as usual
  norec=() rest=()
  for p in "${missing[@]}"; do if [ "$p" = python3-torch ]; then norec+=("$p"); else rest+=("$p"); fi; done
  { apt-get update -q && { [ ${#rest[@]} -eq 0 ] || apt-get install -y -q "${rest[@]}"; } &&
    { [ ${#norec[@]} -eq 0 ] || apt-get install -y -q --no-install-recommends "${norec[@]}"; }; } >/tmp/prism-deps.log 2>&1 \
    || { echo "apt-get failed; see /tmp/prism-deps.log"; tail -20 /tmp/prism-deps.log; exit 1; }
  echo "installed."
else
  echo "missing packages; run as root:"
  echo "  sudo $line"
  exit 1
fi
