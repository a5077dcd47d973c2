#!/usr/bin/env bash
# tests/gpu/find_cuda_libs.sh — where tests/gpu/run.sh links cuBLAS, cuBLASLt and the CUDA runtime from.
#
#   source tests/gpu/find_cuda_libs.sh; find_cuda_libs LINKDIR     (or: bash tests/gpu/find_cuda_libs.sh LINKDIR)
#
# For each of libcublasLt, libcublas and libcudart, the first place that has it:
#   1. $CUDA_HOME/lib64, then $CUDA_HOME/targets/x86_64-linux/lib (a toolkit install);
#   2. the pip layout GPU images often have: nvidia/*/lib under each site-packages directory of python3
#      (nvidia/cublas/lib, nvidia/cuda_runtime/lib, or CUDA 13's nvidia/cu13/lib), or of $PIP_SITE_DIRS
#      (colon-separated; replaces python3's list, for tests).
# pip wheels ship only versioned names (libcublasLt.so.13), which -l cannot find, so LINKDIR gets an unversioned
# symlink to each library found; the run-time path (rpath) is the directory each came from. Headers
# (cublas_v2.h, cublasLt.h) likewise: $CUDA_HOME/include, else nvidia/*/include of the same site-packages.
# Sets CUDA_LIBS (link flags), CUDA_INCS (extra -I flags, often empty) and CUDA_LIB_SOURCE (one line saying
# which was used, for the summary); returns 1 when a library is missing (CUDA_LIB_SOURCE then says which and
# where it looked). Run as a script it prints the three assignments.

pip_site_dirs() {
  if [ -n "${PIP_SITE_DIRS:-}" ]; then tr ':' '\n' <<<"$PIP_SITE_DIRS"; return; fi
  "${PYTHON:-python3}" - 2>/dev/null <<'EOF'
import site, sys
dirs = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()]
dirs += [p for p in sys.path if p.endswith("site-packages") or p.endswith("dist-packages")]
seen = set()
for d in dirs:
    if d not in seen:
        seen.add(d)
        print(d)
EOF
}

# first_lib NAME DIR... -> the path of DIR/NAME.so or DIR/NAME.so.* (highest version) in the first DIR that has one
first_lib() {
  local name=$1 d f; shift
  for d in "$@"; do
    [ -d "$d" ] || continue
    if [ -e "$d/$name.so" ]; then echo "$d/$name.so"; return 0; fi
    f=$(ls -1 "$d/$name.so."* 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$f" ]; then echo "$f"; return 0; fi
  done
  return 1
}

find_cuda_libs() {
  local linkdir=$1 lib path dir where rpaths="" sources="" missing="" home=${CUDA_HOME:-}
  local toolkit_dirs=() pip_dirs=() pip_incs=() sp d
  [ -n "$home" ] && toolkit_dirs=("$home/lib64" "$home/targets/x86_64-linux/lib")
  while IFS= read -r sp; do
    [ -n "$sp" ] || continue
    for d in "$sp"/nvidia/*/lib; do [ -d "$d" ] && pip_dirs+=("$d"); done
    for d in "$sp"/nvidia/*/include; do [ -f "$d/cublasLt.h" ] && pip_incs+=("$d"); done
  done < <(pip_site_dirs)
  mkdir -p "$linkdir"
  for lib in libcublasLt libcublas libcudart; do
    where=""
    if [ ${#toolkit_dirs[@]} -gt 0 ] && path=$(first_lib "$lib" "${toolkit_dirs[@]}"); then where="CUDA_HOME"
    elif [ ${#pip_dirs[@]} -gt 0 ] && path=$(first_lib "$lib" "${pip_dirs[@]}"); then where="pip layout"
    else missing+=" $lib"; continue; fi
    dir=$(dirname "$path")
    ln -sf "$path" "$linkdir/$lib.so"
    case ":$rpaths:" in *":$dir:"*) ;; *) rpaths+="${rpaths:+:}$dir";; esac
    sources+="${sources:+, }$lib from $where ($path)"
  done
  CUDA_INCS=""
  if [ -n "$home" ] && [ -f "$home/include/cublasLt.h" ]; then :
  elif [ ${#pip_incs[@]} -gt 0 ]; then for d in "${pip_incs[@]}"; do CUDA_INCS+=" -I$d"; done; fi
  if [ -n "$missing" ]; then
    CUDA_LIBS=""
    CUDA_LIB_SOURCE="not found:$missing (looked in ${toolkit_dirs[*]:-\$CUDA_HOME unset} and ${#pip_dirs[@]} pip nvidia/*/lib directories; set CUDA_HOME or install the nvidia-cublas and nvidia-cuda-runtime wheels)"
    return 1
  fi
  CUDA_LIBS="-L$linkdir -lcublasLt -lcublas -lcudart -lstdc++ -ldl -Wl,-rpath,$rpaths"   # -ldl: kernels/model_backend.c on glibc < 2.34
  CUDA_LIB_SOURCE=$sources
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  [ $# -eq 1 ] || { echo "usage: $0 LINKDIR" >&2; exit 2; }
  find_cuda_libs "$1"; rc=$?
  printf 'CUDA_LIBS=%q\nCUDA_INCS=%q\nCUDA_LIB_SOURCE=%q\n' "$CUDA_LIBS" "$CUDA_INCS" "$CUDA_LIB_SOURCE"
  exit $rc
fi
