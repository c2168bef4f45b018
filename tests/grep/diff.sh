#!/bin/sh
# diff.sh: differential test of pngrep against GNU grep (/usr/bin/grep, C locale).
#
# Every pattern runs with every option set over the files of gen_data.sh, once per file set;
# stdout, stderr (program name normalised to "grep") and the exit status must be identical.
# Prints each failure with the command, and "N passed, N failed" last.
#   BUILD=build sh tests/grep/diff.sh [-v]
BUILD=${BUILD:-build}
PNGREP=${PNGREP:-$BUILD/pngrep}
PNGREP=$(cd "$(dirname "$PNGREP")" && pwd)/$(basename "$PNGREP")
GREP=${GREP:-/usr/bin/grep}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
unset GREP_COLORS GREP_COLOR
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grepdiff.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
sh "$here/gen_data.sh" "$tmp/d" || exit 1
cd "$tmp/d" || exit 1
pass=0
fail=0
verbose=${1:-}

# check ARGS...: run both programs in $tmp/d with ARGS and compare.
check() {
	$GREP_RUN "$GREP" "$@" >"$tmp/g.out" 2>"$tmp/g.err" </dev/null
	echo $? >"$tmp/g.rc"
	"$PNGREP" "$@" >"$tmp/p.out" 2>"$tmp/p.err.raw" </dev/null
	echo $? >"$tmp/p.rc"
	# both programs name themselves by their argv[0]
	sed "s|^$PNGREP:|grep:|" "$tmp/p.err.raw" >"$tmp/p.err"
	sed "s|^$GREP:|grep:|" "$tmp/g.err" >"$tmp/g.err.n" && mv "$tmp/g.err.n" "$tmp/g.err"
	if cmp -s "$tmp/g.out" "$tmp/p.out" && cmp -s "$tmp/g.rc" "$tmp/p.rc" &&
	   cmp -s "$tmp/g.err" "$tmp/p.err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		if [ "$fail" -le 40 ] || [ -n "$verbose" ]; then
			printf 'FAIL: grep'
			for a in "$@"; do printf " '%s'" "$a"; done
			printf ' (rc %s vs %s)\n' "$(cat "$tmp/g.rc")" "$(cat "$tmp/p.rc")"
			diff "$tmp/g.out" "$tmp/p.out" | head -5 | cat -v
			diff "$tmp/g.err" "$tmp/p.err" | head -3
		fi
	fi
}

files_all="empty nonl greek crlf binary nuls long words rep"

# BRE patterns (also run with -F where they are plain strings)
bre='hello
foo
o
a
abc
^foo
bar$
^$
^
$
.
x*
foo.*bar
[a-c]b
[^a-z ]
[[:upper:]]
[[:digit:]]
[[:space:]]x
\(ab\)*c
a\{2\}
a\{1,\}b
\(a\|b\)\+
\bfoo\b
\<ba
r\>
\w\+
\W
\s
\S\S\S
\Bb
needle
ab\?c
\.
*
[.*]
\(a\)\1
\([a-z]\)\1
\(ab\)\(c\)\2
the
THE
^[a-z]*$
e$
[]x]
[^]]
a.b
\$
x\{0\}
\(\)
gamma\|delta\|zeta'

ere='a|b
(foo|bar)+
^(a|b)*$
a{2,3}
[0-9]+
(ab)+c?
x?y
a+b*c
colou?r
\(
()
a||b
(a|)
^.{5}$
(abc){2}
foo|^bar
\<(foo|bar)\>
e{1}d
(a)(b)\2
[[:alpha:]]+[[:digit:]]
.*
a{,2}b
b{1
end$|^start'

errs='[
[[:foo:]]
\(
\)
a\{1
a\{x\}
a\{2,1\}
\
\1
[z-a]
[:space:]
[[.xx.]]
a\{99999\}'

eerrs='(
a{2,1}
(a)\2
[b-a]
a{1'

# option sets: each line is a list of options for one run
opts='
-i
-v
-w
-x
-c
-l
-L
-n
-b
-o
-H
-h
-q
-s
-m 2
-n -A 1
-n -B 2
-C 1
-c -v
-o -i
-n -v
-w -o
-x -i
-l -v
-m 1 -A 2
-b -o
--color=always
--color=always -i -n
--color=always -o
-a
-I
-c -a
-n -b -H
--null -l
--null -c
-z
-y -c
-v -x
-in -w
-ob
-A 1 -B 1 -v
-c -m 3 -v'

n_bre=0
old_ifs=$IFS
nl='
'
IFS=$nl
STRIDE=${STRIDE:-3}
i=0
for p in $bre; do
	i=$((i + 1))
	j=0
	for o in $opts; do
		j=$((j + 1))
		[ $(((i + j) % STRIDE)) -eq 0 ] || continue
		IFS=' '
		# shellcheck disable=SC2086
		check $o -e "$p" $files_all
		IFS=$nl
	done
	IFS=' '
	check -F -e "$p" greek words rep
	check -F -i -n -e "$p" words nonl
	IFS=$nl
done
for p in $ere; do
	i=$((i + 1))
	j=0
	for o in $opts; do
		j=$((j + 1))
		[ $(((i + j) % STRIDE)) -eq 0 ] || continue
		IFS=' '
		# shellcheck disable=SC2086
		check -E $o -e "$p" $files_all
		IFS=$nl
	done
done
for p in $errs; do
	check -e "$p" greek
	check -c -e "$p" greek
done
for p in $eerrs; do
	check -E -e "$p" greek
done
IFS=$old_ifs

# -o and colour take glibc regex's reading of an ERE operator with nothing to repeat or after
# an anchor (regex skips it, and of an interval only its '{': `^{2}a` is `^2}a`, `^*a` is
# `^a`), the lines the DFA's reading (`^*a` is `a`, `{1}x` is `x`)
printf '%s\n' '1}x' 'ax' '{1}x' '2}x' 'x' 'ab' 'a*b' 'a b' 'x$1,}' '' '2}ab' 'ba' 'aab' > ops
for o in -o --color=always '-o -b' '-o -i' '-o -x' '-n --color=always -i' -c; do
	for p in '^{2}a' '^*a' '^{1}b' 'a|*b' '(^|a){2}' 'b|{1}a' 'a^?' '[[:alpha:]]${,2}' \
		'?{,2}(ab)' 'a$?' '{1}x' '^+b|x' '(+a|{1}x)'; do
		# shellcheck disable=SC2086
		check -E $o -e "$p" ops
	done
done

# several patterns, -f, files that do not exist, single files, stdin-free edge cases
check -e foo -e bar words nonl
check -e foo -e bar -c words nonl
check -F -e 'a.b' -e '[x]' words
check -E -e 'a' -e 'b' -o rep
check -e '' greek
check -w -e '' greek words
check -x -e '' nonl crlf
check foo missing greek
check -s foo missing greek
check -q foo missing words
check -q nomatch missing words
check foo greek
check -H eta greek
check -c eta greek empty
check -L eta greek empty
check -r foo .
check -r --include='*r*' -n foo .
check -r --exclude='w*' -c o .
check -z -o 'wo'
check -z two zdata
check -z -c o zdata nuls
check -z -x three zdata
check --label=x -H foo words
check -i 'ABC' nonl rep
# -i with a required literal that has letters (found with findsi): capitals in the needle or
# the text, a match across the 16-byte blocks of a 400 KB line, punctuation 0x20 away from
# letters ([ and {, @ and `), -c, -v, -w, -o and -n over it
check -i 'HeLLo WoRLD' nonl words
check -i -c 'JABCDEFGHIJNEEDLE' long
check -i -c 'NEEDLEABCD' long
check -i -F '[X]' words
check -i -F '{Z}' words
check -i -n 'foo BAR' words
check -i -v -c 'foo bar' words
check -i -w -o 'foo' words nonl
check -i -E '(Foo|fOO)_bAR' nonl
check -i -x 'THE END' nonl
check -E 'x{32767}' greek
check -E '+a' greek
check -E 'a|*b' greek
check -n '' nonl
check -b -o 'c' crlf
check -A 3 -B 3 -n 'eta' greek
check -C 2 -m 1 'a' greek
check -v '' greek
check -c -v 'a' binary
check -o 'abc' binary
check -a -o 'abc' binary
check -a -n 'def' binary nuls
check -v -a 'abc' binary
printf '%s\n' 'foo' 'ba.' > "$tmp/d/pats"
check -f pats words
check -F -f pats words
check -f empty words
check -f pats -e zzz -c words

# back-references whose plain backtracking is exponential (the old 20M-step budget gave
# silent non-matches here; the memoized search answers exactly); GNU grep under a timeout
{
	printf 'a%.0s' $(seq 28); printf 'z aay\n'
	printf 'ab%.0s' $(seq 25); echo
	printf 'a%.0s' $(seq 40); printf 'c\n'
	printf 'x%.0s' $(seq 30); printf 'y%.0s' $(seq 30); echo
} > "$tmp/d/backtrack"
GREP_RUN="timeout 60"
check -n '\(a*\)*\1y' backtrack
check -c '\(a*\)*\1b' backtrack
check -o '\(a*\)*\1b' backtrack
check -n '\(a*\)*\1c' backtrack
check -n '\(x*\)*\(y*\)*\1\2z' backtrack
check -n -E '(a|aa)*\1y' backtrack
check -n -E '((a*)*)*\2\1z' backtrack
check -c -E '(x*)*(y*)*\1\2$' backtrack
GREP_RUN=

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
