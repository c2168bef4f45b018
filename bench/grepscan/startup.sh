#!/bin/bash
# startup.sh: CPU milliseconds (perf stat task-clock) of two pngrep builds in a UTF-8 locale
# against the new one in C (issue 19: UTF-8 within 1.1x of our own C-locale speed), in two
# tables: start-up (each pattern on a 3-line file, perf stat -r 30) and rows (run.sh's file of
# words, 400,000 lines, perf stat -r 5, GNU grep alongside in both locales).  Every round
# runs every cell once, in turn, so a busy machine slows all of them alike; the cells are the
# min-max over the rounds.  Row outputs are compared with GNU grep's.
#   bench/grepscan/startup.sh --before OLD_BUILD --after NEW_BUILD [--rounds N] [--locale L]
set -uo pipefail
export LC_ALL=C
before= after= rounds=3 locale=C.UTF-8
while [ $# -gt 0 ]; do
	case $1 in
	--before) before=$2; shift ;;
	--after) after=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--locale) locale=$2; shift ;;
	*) echo "startup.sh: $1: unknown option" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$before/pngrep" ] && [ -x "$after/pngrep" ] ||
	{ echo "startup.sh: --before and --after build directories (with pngrep)" >&2; exit 2; }
command -v perf >/dev/null || { echo "startup.sh: needs perf (linux-perf)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/startup.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
printf 'the quick brown fox\njumps over\nfoxes\n' >"$tmp/small"
# the text run.sh and cpu_ab.sh search (words.awk)
awk -v n=400000 -f "$(dirname "$0")/words.awk" >"$tmp/big"

# ms of task-clock: cpu REPS LOCALE PROGRAM ARGS... (stdout to a file: GNU grep stops at
# the first match when it writes to /dev/null)
cpu() {
	local reps=$1 loc=$2
	shift 2
	LC_ALL=$loc perf stat -x, -r "$reps" -e task-clock "$@" 2>&1 >"$tmp/out" |
		awk -F, '/task-clock/ { print $1 }'
}
prog() { case $1 in grep) echo /usr/bin/grep ;; base) echo "$before/pngrep" ;; new) echo "$after/pngrep" ;; esac; }
# min-max of the numbers in a file
range() { sort -g "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }

echo "# startup.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cpus, load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds; before $before, after $after"
start_pats=("-w fox" "-n -w fox" "-c \\<fox\\>" "-i fox" "-i ΣΊΣΥΦΟΣ" "-E \\w+y" "[[:alpha:]]x" "fox")
start_cfgs="base:$locale new:$locale new:C"
for r in $(seq "$rounds"); do
	for i in "${!start_pats[@]}"; do
		read -r -a a <<<"${start_pats[$i]}"
		for cfg in $start_cfgs; do
			cpu 30 "${cfg#*:}" "$(prog "${cfg%%:*}")" "${a[@]}" "$tmp/small" >>"$tmp/s.$i.${cfg%%:*}.${cfg#*:}"
		done
	done
done
echo
echo "start-up, ms (3-line file, perf stat -r 30)"
echo "| pattern | before $locale | after $locale | after C |"
echo "|---|---|---|---|"
for i in "${!start_pats[@]}"; do
	printf '| `%s` ' "${start_pats[$i]}"
	for cfg in $start_cfgs; do printf '| %s ' "$(range "$tmp/s.$i.${cfg%%:*}.${cfg#*:}")"; done
	echo '|'
done

row_pats=("-n -w fox" "-c -w fox" "-c \\<fox\\>" "-c -v -w fox" "-c -i NEEDLE42" "-c -i Haystack" "-o lorem" "-c lorem")
row_cfgs="grep:$locale base:$locale new:$locale grep:C new:C"
for r in $(seq "$rounds"); do
	for i in "${!row_pats[@]}"; do
		read -r -a a <<<"${row_pats[$i]}"
		for cfg in $row_cfgs; do
			b=${cfg%%:*} l=${cfg#*:}
			cpu 5 "$l" "$(prog "$b")" "${a[@]}" "$tmp/big" >>"$tmp/r.$i.$b.$l"
			if [ "$b" = grep ]; then
				cp "$tmp/out" "$tmp/g.$l"
			elif ! cmp -s "$tmp/out" "$tmp/g.$l"; then
				echo "MISMATCH $b $l: ${row_pats[$i]}" >&2
			fi
		done
	done
done
echo
echo "rows, ms (400,000 lines of words, perf stat -r 5)"
echo "| row | grep $locale | before $locale | after $locale | grep C | after C |"
echo "|---|---|---|---|---|---|"
for i in "${!row_pats[@]}"; do
	printf '| `%s` ' "${row_pats[$i]}"
	for cfg in $row_cfgs; do printf '| %s ' "$(range "$tmp/r.$i.${cfg%%:*}.${cfg#*:}")"; done
	echo '|'
done
