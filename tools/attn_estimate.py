#!/usr/bin/env python3
"""tools/attn_estimate.py — ESTIMATED fused-attention time per GPT-2 124M training step on an H200 (docs/PERF.md),
before (the wmma kernels k_fa_*: accumulators and S/P through float shared memory) and after (the register-
accumulator kernels k_fm_*), from counted work, not measured:

  FLOPs   the tensor-core products the kernels execute (whole tiles up to the diagonal, masked parts included;
          S and dP are computed twice in the two-pass backward, as both designs do);
  smem    the shared-memory bytes read and written per tile, as the code issues them: tile fills (16-byte stores or
          cp.async), fragment loads (a 16x16 bf16 wmma load or an ldmatrix.x4: 512 bytes a warp), wmma accumulator
          loads/stores and the float S/P/O round trips of k_fa_* (none in k_fm_*).
  time    max(FLOPs / tensor rate, smem bytes / shared-memory bandwidth) per kernel, summed over the layers.
Ceilings (leads, not measured here): HMMA (mma.sync and wmma both issue it) ~ 2/3 of the 989 TFLOP/s dense bf16
datasheet rate, 660 TFLOP/s; shared memory 132 SMs x 128 B/clock x 1.98 GHz = 33.4 TB/s. Occupancy (latency hiding)
is not modelled: the docs list warps per SM beside the estimate.
Usage: tools/attn_estimate.py [--heads 12,12,...] [--B 16 --T 1024 --C 768]
"""
import sys

args = sys.argv[1:]
def opt(name, default):
    return args[args.index(name) + 1] if name in args else default
B, T, C = int(opt("--B", 16)), int(opt("--T", 1024)), int(opt("--C", 768))
heads = [int(h) for h in opt("--heads", ",".join(["12"] * 12)).split(",")]
R_TC, R_SM = 660e12, 33.4e12
WL = 512  # bytes of one 16x16 bf16 fragment load (wmma load or ldmatrix.x4) by a warp

def pad(d):
    return next(s for s in (16, 32, 64, 96, 128, 192, 256) if d <= s)
def cdiv(a, b):
    return (a + b - 1) // b

def wmm(N, K, acc):   # k_fa_* warp_mm<N, K, ..., ACC> smem bytes: chunks of 64 columns, A + B loads, C load/store
    b = 0
    for n0 in range(0, N, 64):
        nt = min(4, (N - n0) // 16)
        b += (K // 16) * (1 + nt) * WL + (16 * nt * 16 * 4 if acc else 0) + 16 * nt * 16 * 4
    return b

def old(D):           # per (b, h): (FLOPs, smem bytes) of k_fa_fwd, k_fa_dkv, k_fa_dq at the shapes of fa_shape
    big = D * 2 > 256
    BR, BC = 64, (32 if big else 64)
    f = s = 0
    for qt in range(cdiv(T, BR)):
        for _ in range(cdiv(min(qt * BR + BR, T), BC)):
            f += BR * BC * D * 4
            s += 2 * BC * D * 2 + 4 * (wmm(BC, D, False) + 16 * BC * 4 + 16 * BC * 2 + 2 * 16 * D * 4 + wmm(D, BC, True))
    fwd = (f, s)
    KB, QB, f, s = 32, 64, 0, 0
    for kt in range(cdiv(T, KB)):
        for _ in range(kt * KB // QB, cdiv(T, QB)):
            f += KB * QB * D * 8
            s += 2 * QB * D * 2 + 2 * QB * 4 + 2 * (2 * wmm(QB, D, False) + 2 * 16 * QB * 4 + 2 * 16 * QB * 2
                                                    + 2 * wmm(D, QB, True))
    dkv = (f, s)
    BR, KT, f, s = 64, 32, 0, 0
    for qt in range(cdiv(T, BR)):
        for _ in range(cdiv(min(qt * BR + BR, T), KT)):
            f += BR * KT * D * 6
            s += 2 * KT * D * 2 + 4 * (2 * wmm(KT, D, False) + 2 * 16 * KT * 4 + 16 * KT * 2 + wmm(D, KT, True))
    return fwd, dkv, (f, s)

def new(D):           # per (b, h): k_fm_fwd, k_fm_dkv, k_fm_dq at the shapes of fm_shape
    BC = 32 if D > 128 else 64
    qreg, dq_bc, dq_qreg = D <= 192, (16 if D > 192 else 32 if D > 128 else 64), D <= 128
    split = 2 if D > 128 else 1
    BR, f, s = 64, 0, 0
    for qt in range(cdiv(T, BR)):
        s += BR * D * 2 + (4 * (D // 16) * WL if qreg else 0)
        for _ in range(cdiv(min(qt * BR + BR, T), BC)):
            f += BR * BC * D * 4
            s += 2 * BC * D * 2 + 4 * (2 * (D // 16) * (BC // 16) * WL + (0 if qreg else (D // 16) * WL))
    fwd = (f, s)
    KB, QB, NW, f, s = 64, 32, 4 * split, 0, 0
    for kt in range(cdiv(T, KB)):
        s += 2 * KB * D * 2
        for _ in range(kt * KB // QB, cdiv(T, QB)):
            f += NW * 16 * QB * (2 * D + 2 * D // split) * 2
            s += 2 * QB * D * 2 + 2 * QB * 4 + NW * (2 * (D // 16) * WL + 2 * (D // 16) * (QB // 16) * WL
                                                     + 2 * (QB // 16) * (D // split // 16) * WL + 32 * (QB // 4) * 4 * 2)
    dkv = (f, s)
    f, s = 0, 0
    for qt in range(cdiv(T, BR)):
        s += 2 * BR * D * 2 + (4 * 2 * (D // 16) * WL if dq_qreg else 0)
        for _ in range(cdiv(min(qt * BR + BR, T), dq_bc)):
            f += BR * dq_bc * D * 6
            s += 2 * dq_bc * D * 2 + 4 * (3 * (D // 16) * (dq_bc // 16) * WL + (0 if dq_qreg else 2 * (D // 16) * WL))
    return fwd, dkv, (f, s)

def total(model):
    out = {"fwd": [0, 0, 0.0], "dkv": [0, 0, 0.0], "dq": [0, 0, 0.0]}
    for h in heads:
        D = pad(C // h)
        for name, (f, s) in zip(("fwd", "dkv", "dq"), model(D)):
            f, s = f * B * h, s * B * h
            out[name][0] += f
            out[name][1] += s
            out[name][2] += max(f / R_TC, s / R_SM)
    return out

print(f"B={B} T={T} C={C} heads {','.join(map(str, heads))}; HMMA {R_TC / 1e12:.0f} TFLOP/s, shared memory "
      f"{R_SM / 1e12:.1f} TB/s (ESTIMATE)")
print("| kernels | pass | GFLOP | smem GB | est. ms (tensor) | est. ms (smem) | est. ms |")
print("|---|---|---|---|---|---|---|")
for label, model in (("before: k_fa_* (wmma)", old), ("after: k_fm_* (mma.sync)", new)):
    t = total(model)
    for name in ("fwd", "dkv", "dq"):
        f, s, ms = t[name]
        print(f"| {label} | {name} | {f / 1e9:.0f} | {s / 1e9:.1f} | {f / R_TC * 1e3:.2f} | {s / R_SM * 1e3:.2f} | {ms * 1e3:.2f} |")
    print(f"| {label} | **step** | {sum(v[0] for v in t.values()) / 1e9:.0f} | {sum(v[1] for v in t.values()) / 1e9:.1f} | | | "
          f"**{sum(v[2] for v in t.values()) * 1e3:.2f}** |")
