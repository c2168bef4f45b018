#!/bin/bash
# cpu_ab.sh: CPU seconds (user+sys) of GNU grep and two pngrep builds, run alternately, on
# run.sh's file of words; the median of REPS runs each, and the ratios to GNU grep.  CPU time
# rather than wall time, for a machine that other work keeps busy.  Outputs are compared.
#   bench/grepscan/cpu_ab.sh --before OLD/pngrep --after NEW/pngrep [--lines N] [--reps N] \
#       [--locale NAME] [CASE...]  (a CASE is grep's arguments in one word: "-c -v needle42")
# --locale runs the three programs under LC_ALL=NAME (default C), e.g. C.UTF-8 (issue 19);
# the file is made in C either way (ASCII words).
set -uo pipefail
export LC_ALL=C
before= after= lines=1000000 reps=5 locale=C
while [ $# -gt 0 ]; do
	case $1 in
	--before) before=$2; shift ;;
	--after) after=$2; shift ;;
	--lines) lines=$2; shift ;;
	--reps) reps=$2; shift ;;
	--locale) locale=$2; shift ;;
	--) shift; break ;;
	-*) echo "cpu_ab.sh: $1: unknown option" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ -x "$before" ] && [ -x "$after" ] || { echo "cpu_ab.sh: --before and --after pngrep" >&2; exit 2; }
[ $# -gt 0 ] || set -- "-o lorem" "-o -w fox" "-c -v needle42" "-c -v -i NEEDLE42" "-c -v lorem"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpu_ab.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# the text run.sh searches (words.awk)
awk -v n="$lines" -f "$(dirname "$0")/words.awk" >"$tmp/big"
cpu() {
	local t
	TIMEFORMAT='%U %S'
	t=$( { time LC_ALL=$locale "$@" >"$tmp/out" 2>/dev/null; } 2>&1 )
	echo "$t" | awk '{ printf "%.3f\n", $1 + $2 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "# cpu_ab.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cpus, load $(cut -d' ' -f1 /proc/loadavg), $lines lines, $reps reps, LC_ALL=$locale"
for c in "$@"; do
	read -r -a a <<<"$c"
	: >"$tmp/g.t"; : >"$tmp/b.t"; : >"$tmp/a.t"
	for _ in $(seq "$reps"); do
		cpu /usr/bin/grep "${a[@]}" "$tmp/big" >>"$tmp/g.t"; cp "$tmp/out" "$tmp/g.out"
		cpu "$before" "${a[@]}" "$tmp/big" >>"$tmp/b.t"
		cmp -s "$tmp/out" "$tmp/g.out" || echo "MISMATCH before: $c" >&2
		cpu "$after" "${a[@]}" "$tmp/big" >>"$tmp/a.t"
		cmp -s "$tmp/out" "$tmp/g.out" || echo "MISMATCH after: $c" >&2
	done
	g=$(median <"$tmp/g.t"); b=$(median <"$tmp/b.t"); n=$(median <"$tmp/a.t")
	awk -v c="$c" -v g="$g" -v b="$b" -v n="$n" 'BEGIN {
		printf "%-22s grep %.3f  before %.3f (%.2fx)  after %.3f (%.2fx)\n", c, g, b, b / g, n, n / g }'
done
