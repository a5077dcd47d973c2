# tests/gpu/sass_counts.awk — per-kernel instruction counts of the fused attention kernels from `cuobjdump -sass`
# (tests/gpu/run.sh): the fragment loads of the tensor-core tiles (LDSM = ldmatrix, against plain shared LDS and
# generic LD, which wmma.load from a generic address becomes), the tensor-core ops (HMMA), shared stores (STS),
# global loads (LDG) and local memory (LDL/STL: spills or a register array indexed at run time). A markdown table,
# then one closing line with the totals and the verdict: "LDSM in use, N% of LDSM+LDS+LD" or "no LDSM".
/Function : / { fn = $3; if (!(fn in seen)) { seen[fn] = 1; order[++nf] = fn }; next }
/^[ \t]*\/\*[0-9a-f]+\*\// {
  if (fn == "") next
  line = $0
  sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]*/, "", line)
  if (line ~ /^@/) sub(/^@[^ \t]+[ \t]+/, "", line)
  op = line; sub(/[ \t;].*/, "", op)
  base = op; sub(/\..*/, "", base)
  if (base == "LDSM") ldsm[fn]++
  else if (base == "LDS") lds[fn]++
  else if (base == "LD") ld[fn]++
  else if (base == "HMMA") hmma[fn]++
  else if (base == "STS") sts[fn]++
  else if (base == "LDG") ldg[fn]++
  else if (base == "LDL" || base == "STL") loc[fn]++
}
END {
  print "| kernel | LDSM | LDS | LD (generic) | HMMA | STS | LDG | LDL/STL |"
  print "|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= nf; i++) {
    f = order[i]
    if (f !~ /k_f[am]_/) continue   # k_fm_*: the bf16 build's kernels; k_fa_*: the fp32 build's
    name = f; sub(/^_Z[0-9]+/, "", name); sub(/EvP.*/, "", name); sub(/ILi/, "<", name); gsub(/ELi/, ",", name); gsub(/ELb/, ",b", name); sub(/E$/, ">", name)
    printf "| %s | %d | %d | %d | %d | %d | %d | %d |\n", name, ldsm[f], lds[f], ld[f], hmma[f], sts[f], ldg[f], loc[f]
    tl += ldsm[f]; ts += lds[f]; tg += ld[f]; th += hmma[f]; tloc += loc[f]; nk++
  }
  printf "%d fused attention kernels: LDSM %d, LDS %d, generic LD %d, HMMA %d, LDL/STL %d: %s\n", nk, tl, ts, tg, th, tloc, \
    (nk == 0 ? "no k_fa_ kernel found" : tl > 0 ? sprintf("LDSM in use, %.0f%% of LDSM+LDS+LD", 100 * tl / (tl + ts + tg)) : "no LDSM: the fragment loads are LDS/LD")
}
