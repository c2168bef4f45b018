#!/bin/sh
# arf_cluster_grep_utf8.sh: `arf grep` on a cluster (docs/cluster.md) in UTF-8 locales and
# with -z, the scan in the data servers, against GNU grep under the same locale, byte for
# byte (stdout, stderr, exit status).  1 metadata + 3 data arfd on loopback, stripe unit
# 4 KiB.  Files: lines of 2-, 3- and 4-byte characters across 33 stripe boundaries, the
# boundary at each of their bytes (a character split at every offset) and just after the
# terminator; the same with encoding errors (a lone \377, a continuation byte, a truncated
# sequence, a surrogate) across and inside stripes; NUL-terminated records (-z) with
# newlines inside, across every boundary at each offset, the last one without a terminator.
# C.UTF-8, en_US.UTF-8 (made with localedef where `locale -a` lacks it; else skipped, a line
# says so) and C for -z; every ARF_GREP_STRIDE-th (option set, pattern) pair.  Then that the servers scanned: what the data servers sent (arc
# stats) is a fraction of the file, where the gather (what UTF-8 and -z took before) sends
# all of it.
#
#   BUILD=build sh tests/integration/arf_cluster_grep_utf8.sh    prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
here=$(dirname "$0")
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=4096
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "arf_cluster_grep_utf8.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
if ! locale -a 2>/dev/null | /usr/bin/grep -qi '^c\.utf-\?8$'; then
	echo "arf_cluster_grep_utf8.sh: skipped: no C.UTF-8 locale (locale -a)"
	echo "0 passed, 0 failed"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_grep_utf8.sh.XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

need arf_cluster_grep_utf8.sh arf arfd
arf_cluster 3 64M
arf_cluster_init

# ---- the files (made in the C locale: awk counts bytes)
export LC_ALL=C
d=$tmp/d
mkdir -p "$d"
# across(LINE, TERM, FILLER, NB): the file's boundary k (k = 1 .. NB) cuts LINE (its
# terminator TERM included) k - 1 bytes after its start: at each of its bytes, then just
# after it.  Filler lines of up to 60 bytes between (ASCII, and every fourth a whole line of
# FILLER), some with needle.
across() {
	awk -v u=$U -v line="$1" -v term="$2" -v mb="$3" -v nb="$4" 'BEGIN {
		pos = 0; i = 0; f = "filler text with foo and needle words abcdefghijklmnopqrstuvwxyz 0123456789"
		L = length(line) + 1
		for (k = 1; k <= nb; k++) {
			t = k * u - (k - 1) % (L + 1)
			while (pos < t) {
				n = t - pos
				if (n > length(mb) + 62 && i % 4 == 0) { printf "%s%s", mb, term; pos += length(mb) + 1; i++; continue }
				if (n > 60) n = (n > 61 ? 60 : 59)
				printf "%s%s", substr(f, 1 + (i++ % 7), n - 1), term; pos += n
			}
			printf "%s%s", line, term; pos += L
		}
		printf "the end é%s", term }'
}
# 2-, 3- and 4-byte characters, each class of them, case pairs (é É, Ω ω), a word of them
across 'ab é€😀 needle Ωx café' '\n' 'Ωmega é filler € 😀 ok' 33 >"$d/split"
across 'ÉTÉ€€😀😀 NEEDLE ωω ça' '\n' 'ωmega É € 😀 ok' 33 >"$d/split2"
# encoding errors: a truncated sequence, a lone continuation byte, \377, a surrogate (each
# file under 96 KiB: GNU grep's first read.  Its context beside a line with an encoding error
# depends on where its reads end: grep 3.8 forgets the last line printed at a read's end, so
# with -A 1 a line it could not print just after one does not retry the pending context)
across "a$(printf '\342\202') needle z$(printf '\200') é" '\n' "bad $(printf '\377') filler é" 20 >"$d/bad"
across "ok $(printf '\355\240\200') needle é" '\n' 'Ωmega é filler € 😀 ok' 20 >"$d/bad2"
# valid lines across the boundaries, one line with \377 inside a stripe, not selected by
# needle (grep prints the others, no message) but by foo
across 'ab é needle €' '\n' "foo $(printf '\377') é" 12 >"$d/badfar"
# -z: records ending in NUL with newlines inside, across every boundary at each offset; the
# last record without a terminator ("the end é")
across "ab é
needle €😀 z" '\0' "Ωmega é
filler € 😀 ok" 30 >"$d/zsplit"
across "NEEDLE $(printf '\377')
x é" '\0' 'Ωmega é filler' 14 >"$d/zbad"
printf 'small é needle\nfoo €\nend 😀' >"$d/small"
printf 'small é needle\000foo €\000end 😀' >"$d/zsmall"
run "$BUILD/arf" import "$d" "$M:/g"; check_rc "import" 0 $?

mkdir -p "$tmp/bin"
ln -s /usr/bin/grep "$tmp/bin/grep"

check() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" $files >"$tmp/g.out" 2>"$tmp/g.err"; echo $? >"$tmp/g.rc")
	timeout "$T" "$BUILD/arf" grep "$@" $remote >"$tmp/a.raw" 2>"$tmp/a.eraw"
	echo $? >"$tmp/a.rc"
	sed "s#${rprefix:-$M:/g/}##g" "$tmp/a.raw" >"$tmp/a.out"
	sed "s#${rprefix:-$M:/g/}##g" "$tmp/a.eraw" >"$tmp/a.err"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
		ok
	else
		bad "LC_ALL=$LC_ALL arf grep $*"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err" "$tmp/a.err" | head -n 3
		echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
	fi
}
use() {
	files=$* remote=
	for f in $files; do remote="$remote $M:/g/$f"; done
}

opts='-n
-c
-v -c
-l
-L
-q
-o -b
-o -n
-n -b
-i -n
-w
-w -c
-x -n
-m 2 -n
-m 3 -c
-m 1 -A 2
-A 1 -n
-B 2 -n
-C 1
-v -m 5 -n
-a -n
-I -c
-I -n
-H -h'
lines_pats='needle
é
€😀
Ωx
NEEDLE [[:alpha:]]*
^ab .*z$
café
.needle
\w\+ needle
[^a-z ]'
zopts='-z
-z -n
-z -c
-z -v -c
-z -o -b
-z -m 2 -n
-z -A 1 -n
-z -B 1
-z -C 1 -n
-z -l
-z -i -n
-z -w
-z -x
-z -a'
zpats='needle
é
^needle
z$
NEEDLE
[[:upper:]]'

# each OPTS PATS: check every option set (a line of OPTS) with every pattern (of PATS);
# every ARF_GREP_STRIDE-th pair (make check-asan: 4)
stride=${ARF_GREP_STRIDE:-1}
nth=0
nl='
'
each() {
	set -f
	IFS=$nl
	for o in $1; do
		for p in $2; do
			IFS=' '
			nth=$((nth + 1))
			# shellcheck disable=SC2086
			[ $((nth % stride)) -eq 0 ] && check $o -e "$p"
			IFS=$nl
		done
	done
	IFS=' 	
'
	set +f
}
utf8_round() {
	use split split2 bad bad2 badfar small
	each "$opts" "$lines_pats"
	zround
}
zround() {
	use zsplit zbad zsmall split small
	each "$zopts" "$zpats"
}

# en_US.UTF-8: the system's, or made with localedef into LOCPATH (tests/grep/utf8.sh)
mkloc() {      # NAME INPUT CHARMAP
	locale -a 2>/dev/null | /usr/bin/grep -qi "^$(echo "$1" | sed 's/-//; s/\./\\./')\$" && return 0
	command -v localedef >/dev/null 2>&1 || return 1
	mkdir -p "$tmp/loc"
	localedef -i "$2" -f "$3" "$tmp/loc/$1" >/dev/null 2>&1 || [ -f "$tmp/loc/$1/LC_CTYPE" ] ||
		return 1
	export LOCPATH="$tmp/loc"
}

export LC_ALL=C.UTF-8
utf8_round
if mkloc en_US.UTF-8 en_US UTF-8 && LC_ALL=en_US.UTF-8 locale charmap 2>/dev/null | /usr/bin/grep -q UTF-8; then
	export LC_ALL=en_US.UTF-8
	utf8_round
else
	echo "arf_cluster_grep_utf8.sh: en_US.UTF-8 skipped: not installed and localedef could not make it"
fi
# -z in the C locale
export LC_ALL=C
zround

# ---- the scan ran in the data servers: what they sent back (edges, counts, the selected
# lines) is a fraction of the file, where the gather sends all of it
stat_sum() {
	n=0
	for e in $data; do
		b=$("$BUILD/arc" stats "$e" | sed -n "s/^$1 //p")
		n=$((n + ${b:-0}))
	done
	echo "$n"
}
outbytes() { stat_sum exec.output_bytes; }
sent_check() {   # LOCALE FILE OPTION...: servers under half the file, the gather all of it
	loc=$1 f=$2
	shift 2
	size=$(stat -c %s "$d/$f")
	(cd "$d" && LC_ALL=$loc /usr/bin/grep "$@" "$f" >"$tmp/want")
	for mode in servers gather; do
		b0=$(outbytes)
		if [ $mode = gather ]; then export ARF_GREP_CLUSTER_GATHER=1; fi
		LC_ALL=$loc timeout "$T" "$BUILD/arf" grep "$@" "$M:/g/$f" >"$tmp/out" 2>"$tmp/err"
		unset ARF_GREP_CLUSTER_GATHER
		if cmp -s "$tmp/out" "$tmp/want"; then ok; else bad "LC_ALL=$loc grep $* $f ($mode): output differs"; fi
		sent=$(( $(outbytes) - b0 ))
		if [ $mode = servers ] && [ "$sent" -lt $((size / 2)) ]; then ok
		elif [ $mode = gather ] && [ "$sent" -ge "$size" ]; then ok
		else bad "LC_ALL=$loc grep $* $f ($mode): the data servers sent $sent bytes of a $size-byte file"; fi
	done
}
sent_check C.UTF-8 split -c needle
sent_check C.UTF-8 split -n -o 'Ωx'
sent_check C.UTF-8 split2 -i -m 3 -C 1 'needle'
sent_check C.UTF-8 bad -c needle
sent_check C.UTF-8 zsplit -z -c needle
sent_check C zsplit -z -n -A 1 'ab é'

# -w over an ASCII pattern in UTF-8 takes a C-sized table whose scan stops at a line it
# cannot decide (a match beside a byte >= 0x80: `foxé`, `fox’s`) with a GREP_REC_REDO
# record: the file then goes to the gather (it was "malformed reply" once): in a window of
# a striped file, in a file of one stripe, and in -r's batches of such files
w=$tmp/wtree
mkdir -p "$w/d"
printf 'the fox\nfoxé here\nxfox\nfox’s tail\nend fox\n' >"$w/d/small"
awk 'BEGIN { for (i = 0; i < 3000; i++) print (i == 1500 ? "foxé" : i % 7 ? "line " i : "a fox " i) }' >"$w/d/big"
for i in $(seq 1 70); do printf 'x fox\nfoxé\n' >"$w/d/f$i"; done
run "$BUILD/arf" import "$w" "$M:/w"; check_rc "import the -w tree" 0 $?
export LC_ALL=C.UTF-8
d=$w/d
files="small big"
remote="$M:/w/d/small $M:/w/d/big"
rprefix="$M:/w/d/"
for o in "-w" "-n -w" "-c -w" "-o -b -w" "-w -C 1" "-w -m 2"; do
	check $o fox
done
(cd "$w" && timeout 20 /usr/bin/grep -r -n -w fox d | sort) >"$tmp/wr.want"
timeout "$T" "$BUILD/arf" grep -r -n -w fox "$M:/w/d" 2>&1 | sed "s#^$M:/w/##" | sort >"$tmp/wr.out"
if cmp -s "$tmp/wr.want" "$tmp/wr.out"; then ok; else bad "LC_ALL=C.UTF-8 arf grep -r -n -w fox over files with foxé"; diff "$tmp/wr.want" "$tmp/wr.out" | head -n 5; fi
export LC_ALL=C

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
