#!/usr/bin/env python3
"""tools/ptxas_table.py — the resource table of every CUDA kernel for docs/PERF.md, from the compiler's own report.

    for f in kernels/cuda/*.cu; do nvcc $NVFLAGS -Xptxas -v -c $f -o /dev/null; done 2> ptxas.log
    python3 tools/ptxas_table.py ptxas.log [--C 768] > table.md

Per kernel (sm_90 entries only): registers, static shared memory, stack frame, spill stores/loads (all from ptxas),
threads a block and dynamic shared memory (from the launch sites, below: ptxas cannot know them), and the blocks
and warps per SM those allow on an H100/H200 (65,536 registers allocated 256 a warp, 228 KiB shared memory with
1 KiB reserved a block, 2,048 threads, 32 blocks), with the limit that binds. The launch shapes are read off the
kernels/cuda/*.cu launch sites (at the 124M width C for the C-dependent ones); the fused attention's dynamic shared
memory is the byte count of its tile layout (fa_fwd_cfg, fa_dkv_cfg, fa_dq_cfg for the fp32 build's k_fa_*;
fm_fwd_cfg, fm_dq_cfg, fm_dkv_cfg for the bf16 build's k_fm_* in flash_attention_mma.cu), recomputed
here for the bf16 build — a change there must be mirrored here (the table's bytes are also what
tests/unit/test_cuda_kernels.c's flash cases run with: a mismatch would only misstate occupancy, not break code).
"""
import re
import subprocess
import sys

C = 768
args = sys.argv[1:]
if "--C" in args:
    i = args.index("--C"); C = int(args[i + 1]); del args[i:i + 2]
if len(args) != 1:
    sys.exit("usage: ptxas_table.py PTXAS_LOG [--C 768]")

X = 2  # sizeof(floatX), bf16 build
def al(b): return (b + 127) & ~127

def fa_bytes(kind, D, NW, B2):
    """dynamic shared memory of k_fa_{fwd,dkv,dq}<D, NW, B2> (bf16), as the cfg structs lay it out"""
    LX, LA, FP = D + 8, D + 8, 8   # FA_FPAD: float rows padded by 8
    if kind == "fwd":
        BR, BC = 16 * NW, B2
        return (al(BR * LX * X) + 2 * al(BC * LX * X) + al(BR * (D + FP) * 4) + al(BR * (BC + FP) * 4)
                + al(BR * (BC + 8) * X) + al(BR * 4))
    if kind == "dkv":
        KB, QB = 16 * NW, B2
        return (2 * al(KB * LX * X) + 2 * al(QB * LX * X) + 2 * al(QB * 4) + 2 * al(KB * (QB + FP) * 4)
                + 2 * al(KB * (QB + 8) * X) + 2 * al(KB * LA * 4))
    BR, KT = 16 * NW, B2
    return (2 * al(BR * LX * X) + 2 * al(KT * LX * X) + 2 * al(BR * 4) + 2 * al(BR * (KT + FP) * 4)
            + al(BR * (KT + 8) * X) + al(BR * LA * 4))

def fm_bytes(kind, D, NW, B2, P4):
    """dynamic shared memory of k_fm_{fwd,dq,dkv}<D, NW, B2, P4> (bf16), as the fm_*_cfg structs lay it out"""
    LX = D + 8
    if kind == "fwd":
        return al(16 * NW * LX * 2) + 2 * al(2 * B2 * LX * 2)
    if kind == "dq":
        return 2 * al(16 * NW * LX * 2) + 2 * al(2 * B2 * LX * 2)
    KB = 16 * NW // int(P4)   # P4: SPLIT
    return 2 * al(KB * LX * 2) + 2 * al(2 * B2 * LX * 2) + 2 * al(2 * B2 * 4)

# threads a block and dynamic shared memory by kernel base name (launch sites in kernels/cuda/*.cu)
LAUNCH = {
    "k_sumsq_partial": (512, 0), "k_sum_final": (1024, 0), "k_sqrt_final": (1024, 0),
    "k_classifier": (1024, 0), "k_classifier_vec": (512, 0), "k_layernorm_bwd_sum": (1024, 0),
    "k_layernorm_bwd": (256, 2 * C * 4), "k_layernorm_bwd_vec": (256, 2 * C * 4), "k_rmsnorm_bwd": (256, C * 4),
}

def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except Exception:
        return names

def occupancy(regs, smem, threads):
    warps = (threads + 31) // 32
    per_warp = ((regs * 32 + 255) // 256) * 256
    lim = {"threads": 2048 // threads, "blocks": 32,
           "registers": (65536 // per_warp) // warps if per_warp else 32,
           "shared": (228 * 1024) // (((smem + 127) // 128) * 128 + 1024)}
    b = min(lim.values())
    why = min(lim, key=lambda k: (lim[k], k != "registers"))
    return b, b * warps, why

rows, cur, fname = [], None, None
for line in open(args[0], errors="replace"):
    m = re.search(r"Compiling entry function '([^']+)' for 'sm_90'", line)
    if m:
        cur = {"mangled": m.group(1), "file": fname}
        rows.append(cur)
        continue
    m = re.search(r"^== (\S+)", line)
    if m:
        fname = m.group(1)
        continue
    if cur is None:
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        cur["stack"], cur["sst"], cur["sld"] = map(int, m.groups())
    m = re.search(r"Used (\d+) registers", line)
    if m:
        cur["regs"] = int(m.group(1))
        s = re.search(r"(\d+) bytes smem", line)
        cur["smem"] = int(s.group(1)) if s else 0
        cur = None

names = demangle([r["mangled"] for r in rows])
print("| file | kernel | registers | static smem B | dynamic smem B | stack B | spill st/ld B | threads | blocks/SM | warps/SM | bound by |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r, n in zip(rows, names):
    base = re.sub(r"[<(].*", "", n.replace("void ", ""))
    short = re.sub(r"\(.*", "", n.replace("void ", ""))
    threads, dyn = LAUNCH.get(base, (256, 0))
    m = re.match(r"k_fa_(fwd|dkv|dq)<(\d+), (\d+), (\d+)>", short)
    if m:
        kind, D, NW, B2 = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        threads, dyn = NW * 32, fa_bytes(kind, D, NW, B2)
    m = re.match(r"k_fm_(fwd|dkv|dq)<(\d+), (\d+), (\d+), (\w+)>", short)
    if m:
        kind, D, NW, B2 = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        threads, dyn = NW * 32, fm_bytes(kind, D, NW, B2, m.group(5) if kind == "dkv" else 1)
    regs = r.get("regs", 0)
    b, w, why = occupancy(regs, r.get("smem", 0) + dyn, threads)
    print(f"| {r['file'] or '?'} | `{short}` | {regs} | {r.get('smem', 0)} | {dyn} | {r.get('stack', 0)} | "
          f"{r.get('sst', 0)}/{r.get('sld', 0)} | {threads} | {b} | {w} | {why} |")
