#!/bin/sh
# grep.sh: the differential test of pngrep against GNU grep (/usr/bin/grep, C locale): first
# the command line (tests/unit/test_grep_opts.c has the parses; here the outputs: -NUM,
# abbreviations, --include/--exclude over a small tree), then tests/grep/diff.sh sampled
# (every STRIDE-th option set per pattern) so that it stays within make check's time.
# Prints "N passed, N failed" last; skipped (0 passed, 0 failed) where GNU grep is missing.
here=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "grep.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
BUILD=${BUILD:-build}
PNGREP=$(cd "$(dirname "${PNGREP:-$BUILD/pngrep}")" && pwd)/$(basename "${PNGREP:-$BUILD/pngrep}")
GREP=/usr/bin/grep
export LC_ALL=C
unset GREP_COLORS GREP_COLOR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grepopts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
pass=0
fail=0

# pngrep as "grep": both name themselves by the last part of argv[0] in their usage hint
mkdir -p "$tmp/bin" && ln -s "$PNGREP" "$tmp/bin/grep" || exit 1
PNGREP_AS_GREP=$tmp/bin/grep

# compare ARGS...: $tmp/[gp].{out,err,rc} of GNU grep and pngrep must be the same
compare() {
	if cmp -s "$tmp/g.out" "$tmp/p.out" && cmp -s "$tmp/g.err" "$tmp/p.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/p.rc"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		printf 'FAIL: grep'
		for a in "$@"; do printf " '%.80s'" "$a"; done
		printf ' (rc %s vs %s)\n' "$(cat "$tmp/g.rc")" "$(cat "$tmp/p.rc")"
		diff "$tmp/g.out" "$tmp/p.out" | head -5
		diff "$tmp/g.err" "$tmp/p.err" | head -5
	fi
}

# check ARGS...: both programs in $tmp/t; stdout, stderr (the program's name as "grep") and
# the exit status must be the same.
check() {
	(cd "$tmp/t" && "$GREP" "$@" >"$tmp/g.out" 2>"$tmp/g.err" </dev/null; echo $? >"$tmp/g.rc")
	(cd "$tmp/t" && "$PNGREP_AS_GREP" "$@" >"$tmp/p.out" 2>"$tmp/p.err" </dev/null; echo $? >"$tmp/p.rc")
	sed -i "s|^$GREP:|grep:|" "$tmp/g.err"
	sed -i "s|^$PNGREP_AS_GREP:|grep:|" "$tmp/p.err"
	compare "$@"
}

# check_sh SCRIPT: a shell script in which "grep" is each program in turn (found in PATH, so
# both name themselves "grep"), run in a fresh copy of $tmp/t: pipes, standard input, where
# the output goes.  At most 20 s each: a program that never ends fails.
mkdir -p "$tmp/gbin" && ln -s "$GREP" "$tmp/gbin/grep" || exit 1
check_sh() {
	for w in g p; do
		rm -rf "$tmp/s" && cp -R "$tmp/t" "$tmp/s" || exit 1
		if [ $w = g ]; then bin=$tmp/gbin; else bin=$tmp/bin; fi
		(cd "$tmp/s" && PATH="$bin:$PATH" timeout 20 sh -c "$1" >"$tmp/$w.out" 2>"$tmp/$w.err" \
		  </dev/null; echo $? >"$tmp/$w.rc")
	done
	compare sh -c "$1"
}

mkdir -p "$tmp/t/sub/deep" || exit 1
for f in a.c b.h c.txt skip.c sub/d.c sub/e.h sub/deep/f.c; do
	printf 'x in %s\n' "$f" >"$tmp/t/$f"
done
awk 'BEGIN { for (i = 1; i <= 30; i++) print "line " i (i % 10 == 5 ? " foo" : "") }' \
	>"$tmp/t/n"

# -NUM is -C NUM; -A and -B win over -C in any order
for args in "-1" "-2n" "-12" "-n12" "-1n2" "-1 -2" "-0" "-3 -A0" "-A0 -3" "-C0 -1" "-1 -C0" \
            "-A1 -B0 -C0" "-A 1 -B0 -C 5" "-C5 -A1" "-99999999999999999999" "-c2" \
            "-C 010" "-C +1" "-C -0"; do
	# shellcheck disable=SC2086
	check $args foo n
done
# counts: grep's messages; a negative -m is no limit
check -Ax foo n
check -C -1 foo n
check -B '1 ' foo n
check -A '' foo n
check --context=3x foo n
check -m -1 foo n
check -m -0 foo n
check --max-count=-5 -c line n
check -m x foo n
check -m1k foo n
check foo n --max-count
check foo n --max
# long options: abbreviations, ambiguous ones, values where none is taken
check --col=always foo n
check --colo=never --line-n foo n
check --lab=in --with -e foo
check --cou foo n
check --c foo n
check --co=5 foo n
check --f foo n
check --in foo n
check --no foo n
check --a foo n
check --x foo n
check --count=5 foo n
check --cou= foo n
check --null=1 foo n
check --help=x
check --help --frob
check --help -E -F
# -E -F -G: two different ones conflict
check -E -E 'fo+' n
check -G --basic-regexp foo n
check -F --fixed-regexp foo n
check -E -F foo n
check -G -E foo n
check -E -G -E foo n
check -EF -Q foo n
check -Q -EF foo n
# --include, --exclude, --exclude-dir: while recursing and on operands
for globs in "--include=*.c" "--exclude=*.c" "--include=*.c --exclude=skip*" \
             "--exclude=skip* --include=*.c" "--include=*.c --exclude=*.c" \
             "--exclude=*.c --include=*.c" "--exclude=*.h --include=*.c" \
             "--include=a* --include=*.h --exclude=*.c" \
             "--exclude=*.h --include=*.c --exclude=a*" "--exclude=sub*" \
             "--exclude=*/d.c" "--exclude-dir=sub" "--exclude-dir=deep" \
             "--exclude-dir=sub/deep" "--exclude-dir=." "--exclude-dir=*"; do
	# shellcheck disable=SC2086
	{ check -r $globs x .; check -r $globs x; check -r $globs x sub; check -r $globs x sub/;
	  check -r $globs x ./sub; check $globs x a.c b.h skip.c sub/d.c ./sub/e.h .//c.txt;
	  check $globs x sub; }
done
check --exclude='s*' x sub/d.c a.c
check --exclude='sub/*' x sub/d.c a.c
check --exclude=d.c x sub/d.c a.c
check --exclude=sub x sub/d.c
check --exclude='*.c' x nonexistent.c
check --include='*.h' x nonexistent.c
# a directory without -r: "Is a directory", then what grep prints for a file without lines
for args in "-c x sub" "-c x sub a.c" "-L x sub" "-LZ x sub b.h" "-l x sub" "-cv x sub" \
            "-s -c x sub" "-q x sub a.c" "-cZ x sub a.c" "x sub" "-ch x sub a.c"; do
	# shellcheck disable=SC2086
	check $args
done

# -r with one operand names the files only when it is a directory
for args in "-r x a.c" "-r -c x a.c" "-r -n x sub/d.c" "-rH x a.c" "-r x sub" "-rh x sub" \
            "-r x a.c b.h" "-R x a.c" "-r -L y a.c" "-r x nosuch"; do
	# shellcheck disable=SC2086
	check $args
done
# -m 0 and an empty pattern set select nothing: grep reads nothing and exits 1, except -L,
# which opens each file (errors as usual) and names it
for o in "" -v -c -vc -L -vL -l -vl -q -vq -o -vo -n -x -vx -w -vw "-c -H" "-L -r" -r "-L -s"; do
	# shellcheck disable=SC2086
	{ check $o -f /dev/null a.c b.h nosuch sub; check $o -m0 x a.c nosuch sub; }
done
check -L -m0 -r x sub
check -L -m0 x
check -L -f /dev/null
check -c -f /dev/null
# --exclude-dir's trailing slashes are dropped; fts joins names with one slash
for args in "--exclude-dir=sub/ x ." "--exclude-dir=deep// x sub" "--exclude-dir=sub/ x sub/" \
            "--exclude-dir=/ x sub" "--exclude-dir=s*/ x" "x sub//" "x .//" "-c x sub///deep"; do
	# shellcheck disable=SC2086
	check -r $args
done
# a range may not start where one ended
for p in '[a-c-e]' '[a-c-' '[a-c--]' '[----]' '[%--]' '[a-c-]' '[^a-c-e]' '[[.a.]-c-e]'; do
	check -e "$p" n
done
# two or more distinct -G/-E patterns that are plain strings run as -F in grep 3.8: a lone
# backslash ending the last one is then a literal backslash (found by tests/grep/random.sh)
printf 'za\\\nfoo\nb\\\n' >"$tmp/t/bs"
for args in '-e za\' '-e foo -e za\' '-e za\ -e foo' '-E -e foo -e za\' '-e a -e b -e za\' \
            '-e za\ -e foo -e za\' '-e foo -e za\ -e za\' '-e a. -e za\' '-e a\. -e za\' \
            '-e za\ -e za\' '-E -e a( -e za\' '-e a( -e za\' '-e a\( -e za\' '-e b\\\ -e a' \
            '-F -e a -e za\' '-c -i -e FOO -e za\' '-x -e foo -e za\' '-w -e za\ -e b -e foo\'; do
	# shellcheck disable=SC2086
	check $args bs
done
# errors in patterns: "FILE:LINE:" for a line of -f FILE, every distinct pattern in error,
# no warnings then; deep nesting is grep's "stack overflow", without a place
printf 'ok\nbad(\n' >"$tmp/t/pbad"
printf 'a\\(\n[z-a]\n\n' >"$tmp/t/pbre"
awk 'BEGIN { s = ""; for (i = 0; i < 30000; i++) s = s "("; print s }' >"$tmp/t/pdeep"
for args in "-E -f pbad" "-E -e a( -f pbad" "-E -f pbad -e a(" "-f pbre" "-f pbre -f pbre" \
            "-E -e a( -e a(" "-E -e *a -e b(" "-E -f pbad -f pbre" "-E -f pdeep" "-F -f pbad"; do
	# shellcheck disable=SC2086
	check $args n
done
check -E -e "$(cat "$tmp/t/pdeep")" n
check_sh 'grep -E -f pbad - n < pbad'
# -T: a tab after the prefix, no padding
for args in "-T -n foo n" "-T -H -b x a.c" "-T -c x a.c b.h" "-T -o -b -n foo n" \
            "-T -A1 -n foo n" "-T x a.c" "-TZ -H -n x a.c" "-T -B1 -bH foo n" "-T -b x a.c" \
            "-T -n -b x a.c" "-Tn x a.c b.h n"; do
	# shellcheck disable=SC2086
	check $args
done
# a write error is an error
check_sh 'cat n | grep -Tn foo'
check_sh 'grep x a.c >/dev/full'
check_sh 'grep -c x a.c b.h >/dev/full'
check_sh 'grep -q x a.c >/dev/full'
check_sh 'grep -r x . >/dev/full'
# the input file is the output: an error, unless the output cannot grow with it
for o in "" -m1 -m2 -c -l -L -q -s -n "-A1 -m1" -v; do
	check_sh "cp n g && grep $o line g >>g; echo \$?; cat g"
	check_sh "cp n g && grep $o line - <g >>g; echo \$?; cat g"
done
check_sh 'grep -r x >out; echo $?; cat out'
check_sh 'cp n g && grep -c line n g 1<>g; echo $?; cat g'
check_sh 'grep x a.c >g; grep x g a.c >>g; echo $?; cat g'
# -m on a pipe stops reading; a seekable standard input is left after the last selected line
check_sh 'yes x | grep -m1 x'
check_sh 'yes x | grep -m2 -A1 -n x'
check_sh 'yes x | grep -q x'
check_sh 'yes x | grep -l x'
check_sh 'yes x | grep -c -m3 x'
check_sh '(echo a; yes b) | grep -m1 -A2 a'
check_sh '(echo a; yes b) | grep -v -m2 a'
check_sh 'cat n | grep -m2 foo'
check_sh 'cat n | grep -m9 foo'
for o in -m1 "-m1 -A1" "-m1 -A3" "-m1 -c" "-m2 -c" "-m1 -v" -q -l -m5 -L "-m1 -n" "-m1 -o" \
         "-m1 -B2" "-m2 -x line.5.foo"; do
	check_sh "(grep $o foo; echo \$?; cat) <n"
done
check_sh '(head -n 3 >/dev/null; grep -m1 line; cat) <n'
# standard input without -m/-q/-l/-L is searched in parts as it comes (a part after each
# pause of the input, or 4 MiB): a slow writer makes one part a line, so context, numbers,
# offsets and the "--" separators cross part boundaries; a 12 MB pipe makes parts by size;
# a NUL in a later part makes the rest binary
slow='i=0; while [ $i -lt 24 ]; do i=$((i+1)); case $((i%7)) in 0) echo "x $i";; 3) echo "a$i"; echo "x$i";; *) echo "l $i";; esac; sleep 0.02; done'
for o in "-n -A2 x" "-n -B2 x" "-n -C3 x" "-c x" "-b x" "-n -A1 -v l" "-n -o x" "-bn -B1 -A4 a" \
         "-n x\\([0-9]\\)" "-c -v x" "-T -n x" "--color=always -C1 x" \
         "-n -C2 \\([0-9]\\)\\1" "-n -B1 -A2 '\\(l\\) [0-9]*\\1*2'" "-m3 -n -A2 x" \
         "-m2 -B3 -n x" "-m3 -n -C1 '\\([0-9]\\)\\1'" "-m1 -A5 a" "-m2 -A2 -v l" "-l x" \
         "-c -m4 x" "-q a1"; do
	check_sh "($slow) | grep $o"
done
check_sh "(echo x; sleep 0.5; printf 'a\\0x\\n'; seq 3) | grep x"
check_sh "(echo x; sleep 0.5; printf 'a\\0x\\n'; seq 3) | grep -c x"
check_sh "(echo x; sleep 0.5; printf 'a\\0x\\n'; seq 3) | grep -a -n x"
awk 'BEGIN { for (i = 1; i <= 1200000; i++) print i (i % 10 == 7 ? " x" : "") }' >"$tmp/t/big" ||
	exit 1
for o in "-n 99.*x" "-c x" "-b -n -A3 9999" "-B4 -n 99999" "-C2 -n 5.99" "-n -o 1.30" "-v -c x"; do
	check_sh "cat big | grep $o"
done
rm -f "$tmp/t/big"
# an endless pipe: pngrep's memory stays bounded (a part and a line), grep's too; also on the
# exact path with context (back-references) and while -m, -l or -q wait for a first line
for o in zzz "-B2 \\(q\\)\\1" "-A1 -n \\(q\\)\\1" "-m1 zzz" "-m2 -A3 zzz" "-l zzz" "-q zzz" \
         "-c -m1 zzz"; do
	sh -c "yes abcdefgh | exec \"$PNGREP\" $o" >/dev/null &
	pid=$!
	sleep 1
	# the pipeline's last process is pngrep (exec): its peak resident size
	p=$(pgrep -P "$pid" -f pngrep | head -n 1)
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/${p:-$pid}/status" 2>/dev/null)
	kill "$pid" ${p:+"$p"} 2>/dev/null
	wait "$pid" 2>/dev/null
	if [ -n "$p" ] && [ -n "$hwm" ] && [ "$hwm" -lt 65536 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: yes abcdefgh | pngrep $o: peak RSS ${hwm:-?} KiB after 1 s (>= 64 MiB)"
	fi
done

# a line is printed while the writer still runs (--line-buffered: flushed at each line)
for w in "$GREP" "$PNGREP"; do
	rm -f "$tmp/lb.out"
	(echo x; sleep 3) | "$w" --line-buffered x >"$tmp/lb.out" &
	pid=$!
	sleep 1.5
	got=$(cat "$tmp/lb.out")
	wait "$pid"
	if [ "$got" = x ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: (echo x; sleep 3) | $w --line-buffered x: '$got' after 1.5 s, not 'x'"
	fi
done

# a set past the scanning DFA's limits (1,000 ids each followed by ".*"): the client's exact
# matcher is a lazy DFA (the NFA simulation took 105 s over 200,000 such lines; 20 s limit)
awk 'BEGIN { srand(5); for (i = 0; i < 60000; i++)
	printf "GET /u%07d/item?id=%d status=%d t=%d\n", int(rand() * 10000000), i,
	       200 + int(rand() * 3) * 100, int(rand() * 1000) }' >"$tmp/t/log" &&
awk 'BEGIN { srand(7); for (i = 0; i < 1000; i++)
	printf "u%07d.*status=[45]\nu%05d[0-9]*/item.*t=%d$\n", int(rand() * 10000000),
	       int(rand() * 100000), int(rand() * 1000) }' >"$tmp/t/ids" || exit 1
check_sh 'grep -c -f ids log'
check_sh 'grep -n -f ids log'
check_sh 'grep -c -v -i -f ids log'
rm -f "$tmp/t/log" "$tmp/t/ids"
# -R through symlinks to a directory above: grep warns of the loop and goes on
mkdir -p "$tmp/loop/a/b" && printf 'x\n' >"$tmp/loop/a/f" && ln -s .. "$tmp/loop/a/b/up" &&
	ln -s ../../a "$tmp/loop/a/b/again" || exit 1
for args in "-R x a" "-R zzz a" "-R -s x a" "-R -c x a/b" "-R x a/b/up" "-r x a" "-R -l x ."; do
	# shellcheck disable=SC2086
	{ (cd "$tmp/loop" && "$GREP" $args >"$tmp/g.out" 2>"$tmp/g.err"; echo $? >"$tmp/g.rc")
	  (cd "$tmp/loop" && timeout 20 "$PNGREP_AS_GREP" $args >"$tmp/p.out" 2>"$tmp/p.err"
	   echo $? >"$tmp/p.rc")
	  sed -i "s|^$GREP:|grep:|" "$tmp/g.err"
	  sed -i "s|^$PNGREP_AS_GREP:|grep:|" "$tmp/p.err"
	  compare $args; }
done

# found by tests/grep/random.sh: a repetition after a leading anchor or assertion (ERE: a
# warning, then dropped after a word assertion, applied to a line anchor; BRE: '*' literal);
# after a leading {...} no more warnings; -l/-L win over -c; -m 0 compiles nothing (no
# error for a bad pattern) unless -L; -T puts no tab before an empty line
printf 'ba\n\nb\na*b\nab\n-\n' >"$tmp/t/anch"
# (not after a word assertion in an ERE: "\<*a" gives grep 3.8 different answers on different
# files, as its DFA or its regex decides; docs/grep.md)
for p in '^*a' '$?a' '(^*a)' '\`*a' "\\'*a" '*a' '{1}*a' '{1}{,2}-' '**a' '*{1}a' '{1}+a' \
         '^+' 'a$*'; do
	check -E -c -e "$p" anch
done
for p in '\<*' 'a\B*b' '^*b' 'a$*' '\(^*b\)' 'a\|*b'; do
	check -c -e "$p" anch
done
for args in "-c -l a" "-l -c a" "-c -L a" "-L -c zz" "-c -L -v a"; do
	# shellcheck disable=SC2086
	check $args anch n
done
check -m0 -e 'a\(' anch
check -E -m0 -e '[a-c-e]' anch
check -E -L -m0 -e 'a(' anch
check -T -n -e '' anch
check -T -b -A1 -e a anch
# -v of the empty pattern alone selects nothing: exit 1 at once (not with -x, -w or another
# pattern); -q, or an output that is /dev/null, makes grep forget -L there
for args in "-v -e '' nosuch" "-v -e '' -e '' nosuch" "-vc -e '' anch" "-vL -e '' anch" \
            "-vx -e '' nosuch" "-vw -e '' nosuch" "-v -e '' -e a nosuch" "-F -v -e '' nosuch" \
            "-q -L -m0 -E -e a( anch" "-L -q -m0 -e '[a-c-e]' anch"; do
	check_sh "grep $args"
done
check_sh 'grep -L -m0 -E "a(" anch >/dev/null'
check_sh 'grep -L -m0 -E "a(" anch nosuch >/dev/null'
# an operator on nothing or on an assertion right before a group's ")" is an error (not an
# interval); after a leading anchor ERE stays at the start; in a BRE "^^" is "^" then '^'
for p in '(?)' '(a$*)' '(^?)' '(*)' '(a|*)' '(^*)' '($*)' '(\<*)' '(a|^*)' '(a\B*)' '(^*a)' \
         '(^*|a)' '(a$*b)' '({1})' '(a|{1}*)' '(*{1})' '(${2})' '(^{,2})*' '^*$*'; do
	check -E -c -e "$p" anch
done
for p in '^^' '\(^^a\)' '\<^' '^\<*'; do
	check -c -e "$p" anch
done
# -o and colour spans of one fixed string are its occurrences (the first that -w or -x
# allows); other patterns skip lines whose rest lacks their literal
printf 'foofoo foo_ foo\nFOO fOo x\nfoo\nafoo foob\na.b a.b\nab*c abbc\n' >"$tmp/t/spans"
for args in "-o foo" "-ow foo" "-ox foo" "-oi foo" "-owi FOO" "-ob -w foo" "-oF a.b" \
            "-o a.b" "-oF ab*c" "-o ab*c" "-o -e foo -e x" "--color=always -w foo" \
            "--color=always -i foo" "-on foo.*" "-ow 'fo*'" "-oc foo" "-o -E (foo)"; do
	check_sh "grep $args spans"
done

# long lines and deep patterns: nothing may recurse per byte of a line or of a pattern (the
# back-reference matcher did: SIGSEGV on the first line below)
{ seq 1 15000 | tr -d '\n'; echo; } >"$tmp/t/long" || exit 1
{ seq 1 1000 | tr -d '\n'; seq 1 1000 | tr -d '\n'; echo; echo x; } >"$tmp/t/twice" || exit 1
awk 'BEGIN { srand(7); for (i = 0; i < 150000; i++) printf "%c", 97 + int(rand() * 10);
             print "" }' >"$tmp/t/bigpat" || exit 1
{ head -c 100 "$tmp/t/bigpat"; cat "$tmp/t/bigpat"; echo xyz; } >"$tmp/t/hay" || exit 1
for args in "-c ^\(.*\)\1$ long" "-c \(.*\)\1 long" "-c ^\([0-9]*\)\1$ long" \
            "-n ^\(.*\)\1$ twice long" "-c \(1\)\1*\1 long" "-c -E (1)\1(.)\2 long" \
            "-c -F -f bigpat hay" "-c -f bigpat hay" "-n -x -f bigpat hay bigpat"; do
	# shellcheck disable=SC2086
	check $args
done

# many patterns (-f): the DFA shares kernels (Aho-Corasick for literals) past 64
# alternatives; sets that overlap, are prefixes of each other, hold the empty pattern or a
# few regular expressions, against every kind of option that looks at the matches
awk 'BEGIN { srand(3); split("a b c A B _ - a b c", al, " "); al[11] = " ";
	for (i = 0; i < 600; i++) { n = int(rand() * 12); s = "";
		for (j = 0; j < n; j++) s = s al[1 + int(rand() * 11)]; print s } }' \
	>"$tmp/t/mp.txt" || exit 1
printf 'ab\0cab\nbca\n' >"$tmp/t/mp.bin" || exit 1
awk 'BEGIN { srand(5); split("a b c A B _ -", al, " ");
	for (i = 0; i < 300; i++) { n = 2 + int(rand() * 4); s = "";
		for (j = 0; j < n; j++) s = s al[1 + int(rand() * 7)]; print s } }' \
	>"$tmp/t/mp.lit" || exit 1
awk 'BEGIN { srand(9); split("a b c A _", al, " ");
	for (i = 0; i < 40; i++) { s = ""; for (j = 0; j < 6; j++) { s = s al[1 + int(rand() * 5)];
		print s } } }' >"$tmp/t/mp.pre" || exit 1
{ sed -n '1,100p' "$tmp/t/mp.lit"; echo; } >"$tmp/t/mp.empty" || exit 1
{ sed -n '100,250p' "$tmp/t/mp.lit"; printf '%s\n' 'a.c' 'b[ac]A' '^ca' 'ab$' 'c*B_' \
	'\<ab' 'Ba\>' 'a\{2\}c'; } >"$tmp/t/mp.re" || exit 1
for set in mp.lit mp.pre mp.empty mp.re; do
	# (not -o with -w: after a match grep 3.8 takes the next one's start as a line start
	# for -w, "cc-a-" gives "cc" and "-a" for the patterns cc, -a, a-; ours gives a-)
	for args in "-c" "-c -v" "-o" "-n -i" "-c -w" "-c -x" "-n -w" "-n -i -w" "-n -x" \
	            "-c -i -x" "-o -b" "-c -F" "-o -F" "-o -F -i" "-c -F -w" "-n -F -x" \
	            "-c -F -v -i" "-n -F -w -i" "-o -x -i"; do
		case $set:$args in mp.re:*-F*) continue ;; esac
		# shellcheck disable=SC2086
		check $args -f "$set" mp.txt
	done
	check -c -f "$set" mp.bin
	check -a -o -f "$set" mp.bin
done

# -w and -x over a few thousand strings (words with non-word bytes, overlapping, prefixes of
# each other; one set with the empty string): the set's DFA finds candidate lines, its trie
# decides on them; in C and in C.UTF-8
awk 'BEGIN { srand(13); split("a b c A B _ - . a b", al, " "); al[11] = " ";
	for (i = 0; i < 3000; i++) { n = 1 + int(rand() * 5); s = "";
		for (j = 0; j < n; j++) s = s al[1 + int(rand() * 11)]; print s } }' \
	>"$tmp/t/mp.many" || exit 1
{ sed -n '1,2000p' "$tmp/t/mp.many"; echo; } >"$tmp/t/mp.many0" || exit 1
awk 'BEGIN { s = "-"; while (length(s) < 999) s = s "-"; print s "a"; print "zz-" }' \
	>"$tmp/t/mp.dash" || exit 1
awk 'BEGIN { s = "-"; while (length(s) < 20000) s = s s; print s "ab"; print "x" s "x" }' \
	>"$tmp/t/mp.dashes" || exit 1
for loc in C C.UTF-8; do
	export LC_ALL=$loc
	for set in mp.many mp.many0; do
		for args in "-c -w" "-c -x" "-n -w" "-n -x" "-c -F -w" "-n -F -x" "-n -F -w -i" \
		            "-c -F -x -i" "-c -w -i" "-o -F -x" "-c -F -w -v"; do
			# (in C.UTF-8 with -w, without -F, over the set holding the empty string, grep
			# 3.8's regex loop selects fewer lines: not "-_ccbbbbcB", which the empty string
			# at its start selects in C, as "-" matches longer there: w_regex_loop)
			# shellcheck disable=SC2086
			check $args -f "$set" mp.txt
		done
		check -c -F -w -f "$set" mp.bin
		check -c -x -f "$set" mp.bin
	done
	# a long string of non-word bytes that the line holds but not as a word: the trie's
	# walk from every start took 0.8 s for one line of 100,000 (now one pass)
	check -c -w -F -f mp.dash mp.dashes
	check -n -w -f mp.dash mp.dashes
done
export LC_ALL=C

echo "grep.sh: command line: $pass passed, $fail failed"
opt_pass=$pass
opt_fail=$fail
STRIDE=${STRIDE:-4} BUILD=$BUILD PNGREP=$PNGREP sh "$here/../grep/diff.sh" >"$tmp/diff.log"
rc=$?
sed '$d' "$tmp/diff.log"
# its last line, "N passed, N failed" (without a newline)
set -- $(tail -n 1 "$tmp/diff.log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
if [ "$#" -ne 2 ]; then
	echo "grep.sh: diff.sh: no summary (exit $rc)"
	echo "$opt_pass passed, $((opt_fail + 1)) failed"
	exit 1
fi
pass=$((opt_pass + $1))
fail=$((opt_fail + $2))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
