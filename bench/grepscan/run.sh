#!/usr/bin/env bash
# bench/grepscan/run.sh: the speed of the grep scan itself, against GNU grep on the same data.
# One text file (default 75 MB, 1.5 M lines of words, `needle42` in about 1 line in 1200) is
# searched by GNU grep and pngrep locally and by `arf grep` through an arfd on loopback that
# serves an ARF image holding the file.  For arf grep the scan is separated from the fixed
# cost: `scan` is the server's EXEC latency (arc stats: exec.latency_avg_us x requests,
# before and after), `fixed` is a whole arf grep of a one-line file (connect, compile,
# install, one EXEC).  Every system runs in the same repetition; the ratios (X / GNU grep,
# < 1 is faster) are the median of the per-repetition ratios.  Outputs are compared with
# GNU grep's every time.  Table on stdout and in results/NAME.txt.
#
#   bash bench/grepscan/run.sh [--build DIR] [--mb N] [--reps N] [--out NAME] [--perf]
#                              [--cases REGEX] [--locale NAME]
#
# --locale runs every program under LC_ALL=NAME (default C), e.g. C.UTF-8 (issue 19); the
# times of every repetition are also kept, one line each, in results/NAME.raw.
#
# Rows starting with @log run on a second file, 200,000 lines of a web log (16 MB) with one
# id u<7 digits> per line, with 10 to 10,000 ids as patterns (-f, as fixed strings and not,
# with -w and -x; ids100000big: 100,000 ids and one string of 65,536 a's;
# idsre1000: 1,000 ids each followed by ".*status [45]", past the scanning DFA's limits; -o:
# the spans of a set of strings);
# @long on one line of 58,893 digits (seq 1 15000) with a back-reference; @mixed on 200,000
# lines of Latin, Greek, Cyrillic and CJK words (-i with multibyte letters, issue 19: run
# with --locale C.UTF-8), `Ärger ΣΊΣΥΦΟΣ straße привет` in about 1 line in 1200.
# --cases runs only the rows whose text matches REGEX (grep -E).
# --perf also records `perf record` of arfd during one extra run of each case and keeps
# the top of `perf report` in results/NAME.perf.txt.  Needs no root; everything lives in a
# mktemp directory and the arfd it starts is stopped on exit.
set -uo pipefail
export LC_ALL=C
LOCALE=C
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILD=$TOP/build
MB=75
REPS=5
OUT=scan
PERF=0
CASES=
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd) || exit 2; shift ;;
	--mb) MB=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--perf) PERF=1 ;;
	--cases) CASES=$2; shift ;;
	--locale) LOCALE=$2; shift ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "run.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
GREP=/usr/bin/grep
for p in arf arfd arc pngrep; do
	[ -x "$BUILD/$p" ] || { echo "run.sh: $BUILD/$p not built (make)" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grepscan.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the data: words, lines of 5-14 words, needle42 now and then
mkdir -p "$tmp/d"
lines=$((MB * 20000))
awk -v n="$lines" -f "$HERE/words.awk" > "$tmp/d/big"
echo 'one line' > "$tmp/d/tiny"
# many patterns: a web log with an id per line, and sets of ids (a few of them present)
awk 'BEGIN { srand(11); split("GET POST PUT DELETE", m, " ");
	for (i = 0; i < 200000; i++)
		printf "2026-11-25 %02d:%02d:%02d %s /api/v%d/items?id=u%07d from 10.%d.%d.%d status %d\n",
			i / 8334, (i / 139) % 60, i % 60, m[1 + int(rand() * 4)], 1 + int(rand() * 3),
			int(rand() * 10000000), int(rand() * 256), int(rand() * 256), int(rand() * 256),
			200 + int(rand() * 5) * 100 }' >"$tmp/d/log"
mkdir -p "$tmp/p"
for n in 10 100 1000 10000; do
	awk -v n=$n 'BEGIN { srand(n); for (i = 0; i < n; i++) printf "u%07d\n", int(rand() * 10000000) }' \
		>"$tmp/p/ids$n"
done
# 100,000 ids and one string of 65,536 bytes: the set's trie is past the segment's DFA limits
awk 'BEGIN { srand(100000); for (i = 0; i < 100000; i++) printf "u%07d\n", int(rand() * 10000000)
	s = "a"; while (length(s) < 65536) s = s s; print s }' >"$tmp/p/ids100000big"
# past the scanning DFA's limits (each id followed by ".*"): the client's lazy DFA decides
awk 'BEGIN { srand(1000); for (i = 0; i < 1000; i++) printf "u%07d.*status [45]\n", int(rand() * 10000000) }' \
	>"$tmp/p/idsre1000"
{ seq 1 15000 | tr -d '\n'; echo; } >"$tmp/d/long"
awk 'BEGIN { srand(19)
	n = split("lorem ipsum dolor café naïve École σοφός μήλο θάλασσα мир река город 日本語 テスト über Öl strasse Bahn", w, " ")
	for (i = 0; i < 200000; i++) {
		k = 5 + int(rand() * 10); s = ""
		for (j = 0; j < k; j++) s = s (j ? " " : "") w[1 + int(rand() * n)]
		if (rand() < 1 / 1200) s = s " Ärger ΣΊΣΥΦΟΣ straße привет " i
		print s
	}
}' >"$tmp/d/mixed"
size=$(stat -c %s "$tmp/d/big")

"$BUILD/arf" mkfs "$tmp/img" --size $(( (size / 1048576 + 64) * 2 ))M >/dev/null || exit 1
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --arf "$tmp/img" --max-fuel 100000000000 \
	2>"$tmp/arfd.log" &
pid=$!
ep=
for _ in $(seq 100); do
	ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
	[ -n "$ep" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$ep" ] || { echo "run.sh: arfd did not start"; cat "$tmp/arfd.log"; exit 1; }
timeout 300 "$BUILD/arf" import "$tmp/d" "$ep:/d" >/dev/null || { echo "run.sh: import failed"; exit 1; }

ns() { date +%s%N; }
# the data was made in C; the programs run in the locale asked for
export LC_ALL=$LOCALE
# exec_us: the server's total EXEC time so far, in microseconds
exec_us() {
	"$BUILD/arc" stats "$ep" | awk '/^exec.requests/ { r = $2 } /^exec.latency_avg_us/ { a = $2 }
		END { printf "%.0f\n", r * a }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cases=(
	"needle42"
	"-c -i NEEDLE42"
	"-c -i Haystack Needle"
	"-i NEEDLE42"
	"-c lorem"
	"-c lorem.*dolor"
	"-c -E (quick|lazy) [a-z]+ fox"
	"-n -w fox"
	"-c -v needle42"
	"-o lorem"
	"@log -c -F -f ids10"
	"@log -c -F -f ids100"
	"@log -c -F -f ids1000"
	"@log -c -F -f ids10000"
	"@log -c -f ids10"
	"@log -c -f ids100"
	"@log -c -f ids1000"
	"@log -c -f ids10000"
	"@log -F -f ids10000"
	"@log -c -w -F -f ids10000"
	"@log -c -w -f ids10000"
	"@log -c -x -F -f ids10000"
	"@log -c -F -f ids100000big"
	"@log -c -w -F -f ids100000big"
	"@log -o -F -f ids10000"
	"@log -o -i -f ids1000"
	"@log -c -f idsre1000"
	"@long -c ^\(.*\)\1$"
	"-c -i ΣΊΣΥΦΟΣ"
	"@mixed -c σοφός"
	"@mixed -c -i Ärger"
	"@mixed -c -i straße"
	"@mixed -c -i ΣΊΣΥΦΟΣ"
	"@mixed -c -i привет"
)
# a case's arguments into a[]; the patterns with spaces are rebuilt as one argument
case_args() {
	file=big
	case $1 in @*) file=${1%% *}; file=${file#@} ;; esac
	IFS=' ' read -r -a a <<<"${1#@* }"
	[ "$file" = big ] && IFS=' ' read -r -a a <<<"$1"
	for i in "${!a[@]}"; do
		case ${a[$i]} in ids*) a[$i]=$tmp/p/${a[$i]} ;; esac
	done
	case $1 in
	*"(quick|lazy)"*) a=(-c -E '(quick|lazy) [a-z]+ fox') ;;
	*"Haystack Needle"*) a=(-c -i 'Haystack Needle') ;;   # letters only
	esac
}
res=$HERE/results
mkdir -p "$res"
{
echo "# bench/grepscan/run.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cpus, $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)"
echo "# file: $size bytes, $lines lines, one file of an ARF image on arfd tcp loopback; $REPS reps, medians; LC_ALL=$LOCALE"
echo "# times in seconds; ratio = X / GNU grep (median of per-rep ratios; < 1: faster than grep)"
printf '%-32s %7s %7s %7s %7s %7s | %7s %7s %7s\n' case grep pngrep arf arfscan fixed \
	pngrep/g arf/g scan/g
} | tee "$res/$OUT.txt"
: >"$res/$OUT.raw"
for c in "${cases[@]}"; do
	[ -n "$CASES" ] && ! printf '%s\n' "$c" | grep -Eq -- "$CASES" && continue
	case_args "$c"
	: >"$tmp/t"
	for r in $(seq "$REPS"); do
		t0=$(ns); "$GREP" "${a[@]}" "$tmp/d/$file" >"$tmp/g.out"; t1=$(ns)
		"$BUILD/pngrep" "${a[@]}" "$tmp/d/$file" >"$tmp/p.out"; t2=$(ns)
		e0=$(exec_us)
		t3=$(ns); "$BUILD/arf" grep "${a[@]}" "$ep:/d/$file" >"$tmp/a.out"; t4=$(ns)
		e1=$(exec_us)
		t5=$(ns); "$BUILD/arf" grep "${a[@]}" "$ep:/d/tiny" >/dev/null; t6=$(ns)
		cmp -s "$tmp/g.out" "$tmp/p.out" || echo "MISMATCH pngrep: $c" >&2
		cmp -s "$tmp/g.out" "$tmp/a.out" || echo "MISMATCH arf grep: $c" >&2
		echo "$((t1 - t0)) $((t2 - t1)) $((t4 - t3)) $(( (e1 - e0) * 1000 )) $((t6 - t5))" >>"$tmp/t"
	done
	awk -v c="$c" '{ printf "%s\t%.4f %.4f %.4f %.4f %.4f\n", c, $1 / 1e9, $2 / 1e9, $3 / 1e9, $4 / 1e9,
		$5 / 1e9 }' "$tmp/t" >>"$res/$OUT.raw"
	col() { awk -v k="$1" '{ printf "%.4f\n", $k / 1e9 }' "$tmp/t" | median; }
	rat() { awk -v k="$1" '{ printf "%.4f\n", $k / $1 }' "$tmp/t" | median; }
	printf '%-32s %7.3f %7.3f %7.3f %7.3f %7.3f | %7.2f %7.2f %7.2f\n' "$c" "$(col 1)" \
		"$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(rat 2)" "$(rat 3)" "$(rat 4)" |
		tee -a "$res/$OUT.txt"
done
if [ "$PERF" = 1 ]; then
	: >"$res/$OUT.perf.txt"
	for c in "${cases[@]}"; do
		case_args "$c"
		perf record -q -o "$tmp/perf.data" -p "$pid" 2>/dev/null &
		pp=$!
		sleep 0.5
		"$BUILD/arf" grep "${a[@]}" "$ep:/d/big" >/dev/null
		kill -INT "$pp"; wait "$pp" 2>/dev/null
		{ echo "== $c"; perf report -i "$tmp/perf.data" --stdio --sort sym 2>/dev/null |
			grep -v '^#' | grep -v '^$' | head -8; } >>"$res/$OUT.perf.txt"
	done
fi
