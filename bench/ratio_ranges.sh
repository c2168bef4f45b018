#!/usr/bin/env bash
# bench/ratio_ranges.sh: one ratio column (old s / new s) of several runs' results/NAME.csv
# (bench/fs, bench/grep) gathered per row: the range over the runs, the median, how many runs
# had a ratio, and in how many the new side was more than LIMIT times slower (a ratio under
# 1/LIMIT).  For --compare-segs runs (ref s / new s: under 1/1.05 = 0.952, the new segments
# more than 1.05x slower):
#
#   bash bench/ratio_ranges.sh ratio_ref_over_new bench/fs/results/segs-vs-ref-quick-[0-9]*.csv
#   bash bench/ratio_ranges.sh grep_ref_over_new bench/grep/results/segs-vs-ref-quick-[0-9]*.csv
#
# and for issue 16's C-against-assembly runs (the --compare-asm mode before it, asm s / C s):
#
#   bash bench/ratio_ranges.sh ratio_asm_over_c bench/fs/results/asm-vs-c-quick-[0-9]*.csv
#   bash bench/ratio_ranges.sh grep_asm_over_c bench/grep/results/asm-vs-c-quick-[0-9]*.csv
#
# LIMIT: $LIMIT, default 1.05.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2; }
col=$1; shift
awk -F, -v col="$col" -v lim="${LIMIT:-1.05}" '
FNR == 1 { c = 0; for (i = 1; i <= NF; i++) if ($i == col) c = i
           if (!c) { print "ratio_ranges.sh: " FILENAME ": no column " col > "/dev/stderr"; exit 2 }
           nfiles++; next }
{ k = $1 SUBSEP $3
  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  runs[k]++
  if ($c != "") { v[k, ++m[k]] = $c + 0 } }
END {
  printf "%d runs; ratio %s per row: min - max (median), runs with a ratio, runs where the new side was more than %.2fx slower (ratio < %.3f)\n\n", nfiles, col, lim, 1 / lim
  printf "%-10s %-14s %16s %8s %6s %9s\n", "net", "row", "range", "median", "runs", "slow>" lim
  for (j = 1; j <= n; j++) {
    k = order[j]; split(k, f, SUBSEP); q = m[k] + 0
    # insertion sort of the ratios of the row
    for (a = 1; a <= q; a++) s[a] = v[k, a]
    for (a = 2; a <= q; a++) { x = s[a]; for (b = a - 1; b >= 1 && s[b] > x; b--) s[b + 1] = s[b]; s[b + 1] = x }
    slow = 0; for (a = 1; a <= q; a++) if (s[a] < 1 / lim) slow++
    if (q == 0) { printf "%-10s %-14s %16s %8s %3d/%-2d %9s\n", f[1], f[2], "-", "-", 0, runs[k], "-"; continue }
    med = q % 2 ? s[(q + 1) / 2] : (s[q / 2] + s[q / 2 + 1]) / 2
    printf "%-10s %-14s %16s %8.2f %3d/%-2d %9d\n", f[1], f[2], sprintf("%.2f - %.2f", s[1], s[q]), med, q, runs[k], slow
  }
}' "$@"
