#!/bin/sh
# arf_grep.sh: the differential test of `arf grep` against GNU grep.  An ARF image served by
# arfd on loopback gets the grep test's files (tests/grep/gen_data.sh) plus files written one
# block per extent (lines straddle extents), sparse files (holes), a long line across many
# extents; each pattern x option set runs over all of them in one command, through arfd and
# through --local, and must give grep's stdout, stderr and exit status on the local copy
# (names shown as given: ENDPOINT:/name, compared with the prefix removed).  Then -r with
# --include/--exclude/--exclude-dir (lines sorted: directory order differs).
# Prints "N passed, N failed" last; skipped (0 passed, 0 failed) without GNU grep.
BUILD=${BUILD:-build}
here=$(dirname "$0")
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "arf_grep.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_grep.XXXXXX") || exit 1
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"
fail_msg() { fail=$((fail + 1)); echo "FAIL: $*"; }

d=$tmp/d
sh "$here/../grep/gen_data.sh" "$d" || exit 1
for f in words long nonl binary greek; do cp "$d/$f" "$d/frag_$f"; done
awk 'BEGIN { for (i = 0; i < 4000; i++) printf "line %d of the needle file %s\n", i, (i % 7 ? "x" : "needle foo") }' > "$d/frag_many"
awk 'BEGIN { s = ""; for (i = 0; i < 9000; i++) s = s "abcdefghij"; print "x"; print s "needle"; print s; printf "end" }' > "$d/frag_longline"
# sparse: data, a hole of 3 blocks, data, a hole at the end
{ printf 'hello needle\nfoo\n'; head -c 12288 /dev/zero; printf 'after the hole\nneedle\n'; head -c 9000 /dev/zero; } > "$d/sparse_a"
{ head -c 8192 /dev/zero; printf 'starts after a hole\n'; } > "$d/sparse_b"
{ printf 'one\0two\0'; head -c 8192 /dev/zero; printf 'three\0needle\0'; } > "$d/sparse_z"
mkdir -p "$d/sub/deeper" "$d/sub/skip"
printf 'needle in sub\nfoo\n' > "$d/sub/a.txt"
printf 'needle in c\n' > "$d/sub/b.c"
printf 'deeper needle\n' > "$d/sub/deeper/c.txt"
printf 'skipped needle\n' > "$d/sub/skip/d.txt"
# many: 300 small files (several grep_batch runs, more than are kept in flight), two files of
# more than 4 MiB of matching lines (a batch stops after such a file: the rest go in a batch
# of their own), a binary file, an empty one, a directory among them
mkdir -p "$d/many/inner"
awk -v d="$d/many" 'BEGIN { for (i = 0; i < 300; i++) { f = sprintf("%s/f%03d", d, i);
	printf "%s %d\nplain line\n", (i % 3 ? "nothing" : "Needle here"), i > f; close(f) } }'
for b in big1 big2; do
	awk 'BEGIN { for (i = 0; i < 150000; i++) printf "needle line %08d\n", i }' > "$d/many/$b"
done
printf 'bin\0ary needle\n' > "$d/many/binfile"
: > "$d/many/empty"
printf 'inner needle\n' > "$d/many/inner/x"

# UTF-8 text (issue 19): the client compiles the pattern in its locale, arfd scans the bytes
{
	printf '%s\n' 'café au lait' 'naïve façade' 'École élève' 'straße STRASSE' 'Σίσυφος σοφός'
	printf '%s\n' 'Кириллица мир' '日本語のテキスト' 'emoji 😀 🎉 end' 'combining e\314\201 here' 'needle'
} > "$d/utf8_mixed"
printf 'good café\nbad \377 byte needle\nafter naïve\n' > "$d/utf8_invalid"
# groups of context printed before a line with an encoding error (line 150): the exact path
# goes on after what the fast path printed
awk 'BEGIN { for (i = 1; i <= 200; i++) if (i == 150) printf "bad \377 fox %d\n", i;
	else printf "line %d %s\n", i, (i % 10 == 7 || i == 151 ? "needle café" : "x") }' > "$d/utf8_late"
# streamed: many runs of context output (ARF_GREP_RUN_OUT below)
printf 'a1\nb2\nc3 \377\nd4\ne5\nf6\ng7 \377 x\nh8\n' > "$d/ctxenc"
awk 'BEGIN { for (i = 0; i < 60000; i++) printf "needle line %08d x\n", i }' > "$d/frag_stream"
# encoding errors next to words and inside characters
printf 'caf\303\251 fox\nx\251y\n\303fox\n\377fox\nbad \200 fox\n\342\202fox\n' > "$d/utf8_enc"
# -w over ASCII patterns (dfa_build_ascii_w): ASCII lines first, printed by earlier runs, then
# lines its table cannot decide (a match beside a byte >= 0x80: the file again on the exact
# path); the same in a binary file, and in a directory for -r's batches
mkdir -p "$d/wdir"
{
	awk 'BEGIN { for (i = 1; i <= 300; i++) printf "line %d %s\n", i, (i % 7 == 3 ? "a fox b" : "foxes x") }'
	printf '%s\n' 'éfox' 'foxé' 'fox·' 'Σfox' 'fox ж' 'fox日' 'e\314\201fox' 'fox\377' 'a fox'
} > "$d/wdir/utf8_word"
{ printf 'a fox\0b\n'; printf '%s\n' 'éfox' 'fox·' 'fox\377'; } > "$d/wdir/utf8_wbin"
printf 'x\nfox·\n' > "$d/wdir/utf8_wlate"
img=$tmp/img
"$BUILD/arf" mkfs "$img" --size 64M >/dev/null || exit 1
start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	echo "arf_grep.sh: arfd did not start:"; cat "$tmp/arfd.log"
	echo "0 passed, 1 failed"; exit 1
fi
# (the segments of this build: arf_put's default is build/arfseg, which check-asan's
# build-asan may run without)
ARF_OPS_SEG=$BUILD/arfseg/ops.pno ARF_DATA_SEG=$BUILD/arfseg/data.pno \
	timeout 60 "$BUILD/tests/arf_put" "$ep" "$d" || { echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$tmp/bin"
ln -s /usr/bin/grep "$tmp/bin/grep"

files='empty nonl greek crlf binary nuls long words rep zdata frag_words frag_long frag_nonl frag_binary frag_greek frag_many frag_longline sparse_a sparse_b sparse_z'
remote=
for f in $files; do remote="$remote $ep:/$f"; done

# check OPTS... : grep over every file, arf grep over the same files in the image
check() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" $files >"$tmp/g.out" 2>"$tmp/g.err"; echo $? >"$tmp/g.rc")
	for mode in ${modes:-server}; do
		[ "$mode" = server ] && mode=
		timeout 60 "$BUILD/arf" grep $mode "$@" $remote >"$tmp/a.raw" 2>"$tmp/a.eraw"
		echo $? >"$tmp/a.rc"
		sed "s#$ep:/##g" "$tmp/a.raw" >"$tmp/a.out"
		sed "s#$ep:/##g" "$tmp/a.eraw" >"$tmp/a.err"
		if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
		   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
			pass=$((pass + 1))
		else
			fail_msg "arf grep $mode $*"
			diff "$tmp/g.out" "$tmp/a.out" | head -n 5
			diff "$tmp/g.err" "$tmp/a.err" | head -n 3
			echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
		fi
	done
}

. "$here/../grep/arf_sets.sh"
# --local (the same segment in this process, reading the region remotely) on the first
# pattern's option sets only: it is slow by design (one READ per cache miss)
first_modes='server --local' check_sets
check -E -n 'needle|foo$'
# -B: the segment sends no leading context, the client reads it back (lead_add): lines in
# other extents, across holes, back to the file's start or the last line printed
for o in '-B 1 -v' '-B 3 -b' '-C 2 -m 3 -n' '-B 1 -o' '-z -B 1' '-B 5 -n' '-C 3 -c'; do
	# shellcheck disable=SC2086
	modes='server --local' check $o -e 'needle\|after\|end'
done
# ... across runs of a few records each
for o in '-B 1 -v' '-B 3 -b' '-C 2 -m 3 -n' '-B 2 -n'; do
	# shellcheck disable=SC2086
	ARF_GREP_RUN_OUT=64 check $o -e 'needle\|after\|end'
done
check -n -B2 -e 'needle foo\|after'
ARF_GREP_RUN_OUT=200 check -b -B3 -e 'needle foo\|end'
# ... and the leading lines of a run's groups are read back together (readv): -B1 over
# frag_many, 572 groups, costs a few EXECs (it was one READ per group)
e0=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
timeout 60 "$BUILD/arf" grep -n -B1 'needle foo' "$ep:/frag_many" >"$tmp/a.out" 2>&1
e1=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
/usr/bin/grep -n -B1 'needle foo' "$d/frag_many" >"$tmp/g.out"
if [ -n "$e0" ] && [ -n "$e1" ] && [ $((e1 - e0)) -le 8 ] && cmp -s "$tmp/g.out" "$tmp/a.out"; then
	pass=$((pass + 1))
else
	fail_msg "arf grep -n -B1 'needle foo' frag_many: $((e1 - e0)) EXECs for 572 groups"
fi
# UTF-8: the same command lines under C.UTF-8 over the UTF-8 files
files_c=$files remote_c=$remote
files='utf8_mixed utf8_invalid utf8_enc frag_words'
remote=
for f in $files; do remote="$remote $ep:/$f"; done
export LC_ALL=C.UTF-8
check -n '^.....$'
check '[[:alpha:]]\{6\}'
check -i 'école'
check -o '\w\+'
check -c '.'
check -w -n 'caf'
check -i -o 'STRASSE\|ΣΟΦΌΣ'
check -n 'needle'
check -c -v '[^[:alpha:] ]'
check -a -n '.'
modes='server --local' check -n -E '(é|ï)'
# a lone byte of the pattern matches inside a character (grep's regex goes byte by byte),
# not under -i; \b beside an encoding error takes it as the Latin-1 character of its byte
check -a -o "$(printf '\251')"
check -c -i "$(printf '\251')"
check -c '\bfox'
check -c -v '\<fox'
check -a -n 'fox\B'
# context (issue 19): the fast path, its records held until the file ends; a file where one
# of them has an encoding error (utf8_invalid, utf8_enc) goes again on the exact path
for o in -A1 '-A2 -n' -C1 '-B1 -v' -A0 '-C1 -o' '-A1 -m1' '-C0 -c'; do
	# shellcheck disable=SC2086
	modes='server --local' check $o 'needle\|bad\|good\|fox'
done
# ... many runs per file (a run stops after 64 bytes of output): the runs before the one
# holding a line with an encoding error print as they come, the exact path goes on after them
files_u=$files remote_u=$remote
files="$files utf8_late" remote="$remote $ep:/utf8_late"
for o in -A1 '-A2 -n' -C1 '-B1 -v' -A0 '-C1 -o' '-A1 -m1' '-C2 -m 9' '-B3 -n' '-C1 -b'; do
	# shellcheck disable=SC2086
	ARF_GREP_RUN_OUT=64 check $o 'needle\|bad\|good\|fox'
done
# -w, \< \> over ASCII patterns beside multibyte characters (dfa_build_ascii_w, maybe_redo)
files_w=$files remote_w=$remote
files='wdir/utf8_word wdir/utf8_wbin wdir/utf8_wlate utf8_enc' remote=
for f in $files; do remote="$remote $ep:/$f"; done
for o in -w '-c -w' '-n -w' '-v -c -w' '-l -w' '-L -w' '-m3 -n -w' '-o -b -w' '-a -n -w'; do
	# shellcheck disable=SC2086
	modes='server --local' check $o fox
	# shellcheck disable=SC2086
	ARF_GREP_RUN_OUT=64 check $o fox
done
check -c '\<fox\>'
check -n 'fox\b'
ARF_GREP_RUN_OUT=64 check -n '\<fox'
files=$files_w remote=$remote_w
# ... tests/grep/utf8.sh's context next to lines grep does not print, a run a line
files=ctxenc remote=$ep:/ctxenc
for o in -A1 -A2 -B1 -B2 -C1 '-A1 -v' '-B1 -v' '-C1 -o' '-A1 -m1' '-A2 -m2' -A0 -B0 \
	'-C0 -v' '-A1 --color=always' '-B1 -c'; do
	for p in c d '[cd]' '[ce]' x . '[ag]' '[bc]'; do
		# shellcheck disable=SC2086
		ARF_GREP_RUN_OUT=1 check -n $o -e "$p"
	done
done
files=$files_u remote=$remote_u
# ... and the output of a file streams: it begins long before the file's last run (the
# records were held until the file ended); 60000 selected lines, runs of 16 KiB of output,
# the reader stops after the first line (arf grep then waits on the full pipe)
ex() { "$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p'; }
e0=$(ex)
ARF_GREP_RUN_OUT=16384 timeout 60 "$BUILD/arf" grep -A1 needle "$ep:/frag_stream" |
	{ IFS= read -r first; echo "$first" >"$tmp/s.first"; sleep 1; ex >"$tmp/s.n"; cat >/dev/null; }
e2=$(ex) e1=$(cat "$tmp/s.n")
if [ -n "$e0" ] && [ -n "$e1" ] && [ $((e2 - e0)) -gt 40 ] && [ $((e1 - e0)) -lt $(((e2 - e0) / 2)) ] &&
   [ "$(cat "$tmp/s.first")" = "needle line 00000000 x" ]; then
	pass=$((pass + 1))
else
	fail_msg "arf grep -A1 in C.UTF-8 does not stream: $((e1 - e0)) of $((e2 - e0)) runs before the first line"
fi
# ... and only the lines printed cross the link: -A1 and -C1 of one line of frag_many
# (130 KB) in C.UTF-8 (every line went to the client before; -B's leading lines are read
# back)
ob() { "$BUILD/arc" stats "$ep" | sed -n 's/^exec.output_bytes //p'; }
size=$(stat -c %s "$d/frag_many")
for o in -A1 -C1; do
	b0=$(ob)
	timeout 60 "$BUILD/arf" grep $o 'line 123 ' "$ep:/frag_many" >"$tmp/a.out" 2>&1
	b1=$(ob)
	want='line 123 of the needle file x\nline 124 of the needle file x'
	[ $o = -C1 ] && want="line 122 of the needle file x\\n$want"
	if [ -n "$b0" ] && [ -n "$b1" ] && [ $((b1 - b0)) -lt $((size / 10)) ] &&
	   [ "$(cat "$tmp/a.out")" = "$(printf "$want")" ]; then
		pass=$((pass + 1))
	else
		fail_msg "arf grep $o in C.UTF-8: $((b1 - b0)) bytes sent for a file of $size"
		head -n 3 "$tmp/a.out"
	fi
done
unset LC_ALL
files=$files_c remote=$remote_c
check -F -c 'needle
foo'
# many patterns (-f): words of the files and made-up ones, 300 and 3300 of them; past 64
# alternatives the DFA shares kernels (Aho-Corasick for literals) and the binary table
# shares the text table's rows, in the server's segment as in pngrep's
tr -cs 'A-Za-z0-9_' '\n' <"$d/words" | awk 'NF && NR % 7 == 0' | head -n 300 >"$tmp/mp300"
awk 'BEGIN { srand(4); for (i = 0; i < 3000; i++) printf "%c%c%c%d\n", 97 + int(rand() * 26),
	97 + int(rand() * 26), 97 + int(rand() * 26), int(rand() * 100) }' >"$tmp/mp3300"
cat "$tmp/mp300" >>"$tmp/mp3300"
# (GNU grep takes more than 20 s for -o or -i -w with the 3300 over the long lines).  -w and
# -x over a set of strings: the set's DFA in the server finds candidate lines, the client's
# trie decides
for o in "-c" "-n" "-c -v" "-o" "-c -i -w" "-n -x" "-l" "-c -a" "3300 -c" "3300 -n -x" \
         "-n -w" "3300 -c -w" "3300 -n -w" "3300 -c -x -i" "3300 -c -w -v"; do
	set=mp300
	case $o in 3300*) set=mp3300 o=${o#3300 } ;; esac
	# shellcheck disable=SC2086
	check $o -F -f "$tmp/$set"
	# shellcheck disable=SC2086
	check $o -f "$tmp/$set"
done

# -r: the walk runs in the server, a batch of entries per round trip; order differs, so sort
rcheck() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" "${rdir:-sub}" 2>"$tmp/g.err" | sort >"$tmp/g.out"; echo $? >"$tmp/g.rc")
	timeout 60 "$BUILD/arf" grep "$@" "$ep:/${rdir:-sub}" 2>"$tmp/a.err" | sed "s#$ep:/##g" | sort >"$tmp/a.out"
	sort "$tmp/g.err" >"$tmp/g.err.s"
	sed "s#$ep:/##g" "$tmp/a.err" | sort >"$tmp/a.err.s"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err.s" "$tmp/a.err.s"; then
		pass=$((pass + 1))
	else
		fail_msg "arf grep $* (recursive)"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err.s" "$tmp/a.err.s" | head -n 5
	fi
}
rcheck -r needle
# --exclude-dir drops trailing slashes; names join with one slash
rcheck -r --exclude-dir=skip/ -l needle
rcheck -r --exclude-dir='deep*//' -c needle
rdir=sub// rcheck -r -n needle
rcheck -r -L -m0 needle
rcheck -r -L -f /dev/null
rcheck -r -c -f /dev/null
rcheck -r -n --include='*.txt' needle
rcheck -r --exclude='*.c' -c needle
rcheck -r --exclude-dir=skip -l needle
rdir=many rcheck -r -i needle
rdir=many rcheck -r -c needle
rdir=many rcheck -r -l -i needle
rdir=many rcheck -r -L needle
rdir=many rcheck -r -n -m 2 needle
rdir=many rcheck -r -B 1 -n Needle
rdir=many rcheck -r -c '\(e\)\1'
rdir=many rcheck -r -A 1 -i 'needle here'
LC_ALL=C.UTF-8 rdir=wdir rcheck -r -n -w fox
LC_ALL=C.UTF-8 rdir=wdir rcheck -r -c -w fox
LC_ALL=C.UTF-8 rdir=wdir rcheck -r -l '\<fox\>'
"$BUILD/arf" grep -r -q needle "$ep:/many"
if [ $? -eq 0 ]; then pass=$((pass + 1)); else fail_msg "arf grep -r -q needle many"; fi
# --local over a file of more than 1 MiB whose every line has the literal: one search per
# line over the remote region (it used to fetch a 1 MiB window per line: minutes)
for a in '-c needle' '-n -i NEEDLE' '-c -v 0$'; do
	# shellcheck disable=SC2086
	/usr/bin/grep $a "$d/many/big1" >"$tmp/g.out"
	# shellcheck disable=SC2086
	timeout 30 "$BUILD/arf" grep --local $a "$ep:/many/big1" >"$tmp/a.out"
	if cmp -s "$tmp/g.out" "$tmp/a.out"; then
		pass=$((pass + 1))
	else
		fail_msg "arf grep --local $a (2.4 MB file)"
	fi
done
# errors: a missing file, a directory without -r (after the error, what grep prints for a
# file without lines: -c's 0, -L's name)
check -n needle nosuch
saved_files=$files saved_remote=$remote
files="sub words" remote="$ep:/sub $ep:/words"
for o in -c -L -l -q "-c -H" -n; do
	# shellcheck disable=SC2086
	check $o needle
done
# -m 0 or no pattern (without -v): grep exits 1 reading nothing; with -L it names each file
# it finds (errors as usual)
for o in "" -v -c -vc -L -vL -l -q -o -x -vx "-L -s" "-c -H"; do
	# shellcheck disable=SC2086
	{ check $o -f /dev/null; check $o -m0 needle; }
done
files="sub words nosuch" remote="$ep:/sub $ep:/words $ep:/nosuch"
check -L -m0 needle
check -L -f /dev/null
check -c -f /dev/null
# -r with one file operand does not name it
files=words remote=$ep:/words
for o in -r "-r -c" "-r -n -m2" "-rH" "-r -L"; do
	# shellcheck disable=SC2086
	check $o needle
done
files=$saved_files remote=$saved_remote
# a range may not start where one ended; pattern errors name -f FILE:LINE, every one
check -e '[a-c-e]'
check -e '[a-c-]'
printf 'ok\nbad(\n' >"$tmp/pbad"
check -E -f "$tmp/pbad"
check -E -e 'a(' -f "$tmp/pbad"
check -E -e '*a' -e 'b('
# -T: a tab after the prefix, numbers aligned to the width of the file's size
check -T -n needle
check -T -H -b -e foo
check -T -c needle
# -c -v counts the lines between the literal's occurrences (holes, extents, straddling
# lines, a last line without a terminator, -z)
for o in "-c -v" "-c -v -i" "-c -v -a" "-c -v -z" "-c -v -w" "-c -v -x" "-c -v -H"; do
	# shellcheck disable=SC2086
	{ check $o needle; check $o -e 'abc'; check $o -e 'x'; }
done
# random cases of tests/grep/random.sh (ARF_GREP_RANDOM of seed ARF_GREP_RANDOM_SEED; 200 of
# seed 1, divided by ARF_GREP_STRIDE) over the files of the image, except those that read
# standard input (arf grep does not) or have no file operand
# grep's messages for a bad pattern: random.sh's list
eval "errors=$(sed -n 's/^errors=//p' "$here/../grep/random.sh")"
printf 'foo\nbar\n' >"$tmp/pat2"; printf 'abc\n' >"$tmp/pat1"; : >"$tmp/pat0"
printf '\n' >"$tmp/patblank"; printf 'ok\n(bad\n' >"$tmp/patbad"
sh "$here/../grep/random.sh" --seed "${ARF_GREP_RANDOM_SEED:-1}" \
	--count $(( ${ARF_GREP_RANDOM:-200} / ${ARF_GREP_STRIDE:-1} )) --print-cases |
while IFS= read -r line; do
	eval "set -- $line"
	ops=0 stdin=0 rec=0
	for a in "$@"; do
		case $a in --*) ;; -*r*) rec=1 ;; esac     # -r: the walk's order is the server's
	done
	# the operands: the file names of random.sh's list (no pattern it writes is one)
	a_args=
	for a in "$@"; do
		case $a in
		empty|nonl|greek|crlf|binary|nuls|long|words|rep|zdata|sub|nosuch|sub/a.txt)
			ops=$((ops + 1)); a_args="$a_args $(printf "'%s'" "$ep:/$a")" ;;
		-) stdin=1 ;;
		pat0|pat1|pat2|patblank|patbad)
			a_args="$a_args $(printf "'%s'" "$tmp/$a")" ;;
		*) a_args="$a_args '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'" ;;
		esac
	done
	[ "$stdin" -eq 0 ] && [ "$ops" -gt 0 ] || continue
	(cd "$d" && eval "set -- $(printf '%s\n' "$line" | sed "s#'\(pat[a-z0-9]*\)'#'$tmp/\1'#g")" &&
	 PATH="$tmp/bin:$PATH" timeout 20 grep "$@" >"$tmp/g.out" 2>"$tmp/g.err" </dev/null
	 echo $? >"$tmp/g.rc")
	(eval "set -- $a_args" && timeout 60 "$BUILD/arf" grep "$@" >"$tmp/a.raw" 2>"$tmp/a.eraw"
	 echo $? >"$tmp/a.rc")
	sed "s#$ep:/##g" "$tmp/a.raw" >"$tmp/a.out"
	sed "s#$ep:/##g" "$tmp/a.eraw" >"$tmp/a.err"
	if [ "$rec" -eq 1 ]; then
		for f in g.out a.out g.err a.err; do sort "$tmp/$f" >"$tmp/$f.s" && mv "$tmp/$f.s" "$tmp/$f"; done
	fi
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
		echo pass
	elif [ "$(cat "$tmp/g.rc")$(cat "$tmp/a.rc")" = 22 ] && [ ! -s "$tmp/g.out" ] &&
	     [ ! -s "$tmp/a.out" ] && [ "$(wc -l <"$tmp/g.err")" -eq 1 ] &&
	     [ "$(wc -l <"$tmp/a.err")" -eq 1 ] && grep -q "^grep: $errors\$" "$tmp/g.err" &&
	     grep -q "^grep: $errors\$" "$tmp/a.err"; then
		echo pass     # a pattern with two errors, each program naming another (random.sh)
	else
		printf 'FAIL: arf grep (random, seed %s): %s\n' "${ARF_GREP_RANDOM_SEED:-1}" "$line"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 4
		diff "$tmp/g.err" "$tmp/a.err" | head -n 3
		echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
	fi
done >"$tmp/random.log"
pass=$((pass + $(grep -c '^pass$' "$tmp/random.log")))
fail=$((fail + $(grep -c '^FAIL' "$tmp/random.log")))
grep -v '^pass$' "$tmp/random.log"
# a write error is an error
timeout 60 "$BUILD/arf" grep needle "$ep:/frag_many" >/dev/full 2>"$tmp/e"
if [ $? -eq 2 ] && [ "$(cat "$tmp/e")" = "grep: write error: No space left on device" ]; then
	pass=$((pass + 1))
else
	fail_msg "arf grep >/dev/full: $(cat "$tmp/e")"
fi
"$BUILD/arf" grep needle "$ep:/sub" >/dev/null 2>"$tmp/e"
if [ $? -eq 2 ] && [ "$(sed "s#$ep:/##" "$tmp/e")" = "grep: sub: Is a directory" ]; then
	pass=$((pass + 1))
else
	fail_msg "directory without -r: $(cat "$tmp/e")"
fi
echo "$pass passed, $fail failed"
