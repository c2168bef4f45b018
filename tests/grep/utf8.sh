#!/bin/sh
# utf8.sh: differential test of pngrep against GNU grep (/usr/bin/grep) in UTF-8 locales.
#
# Patterns x option sets over files of Latin, Greek, Cyrillic, CJK, emoji, combining marks and
# invalid bytes; stdout, stderr (program name normalised to "grep") and the exit status must
# be identical.  Runs under C.UTF-8 (always there on Debian), then under en_US.UTF-8 (made
# with localedef into a LOCPATH of its own when `locale -a` lacks it; else a line says it was
# skipped), then checks that a Latin-1 locale is refused.
# Prints "N passed, N failed" last.
#   BUILD=build sh tests/grep/utf8.sh [-v]        STRIDE=N: every Nth option set per pattern
BUILD=${BUILD:-build}
PNGREP=${PNGREP:-$BUILD/pngrep}
PNGREP=$(cd "$(dirname "$PNGREP")" && pwd)/$(basename "$PNGREP")
GREP=${GREP:-/usr/bin/grep}
unset GREP_COLORS GREP_COLOR LANGUAGE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/greputf8.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
pass=0
fail=0
verbose=${1:-}
mkdir -p "$tmp/d" && cd "$tmp/d" || exit 1

# ---- the files ----
{
	printf '%s\n' 'café au lait' 'naïve façade' 'École élève' 'straße STRASSE' 'ÀÉÎÕÜ àéîõü'
	printf '%s\n' 'Σίσυφος ΣΊΣΥΦΟΣ σοφός' 'Ελληνικά: αβγ ΑΒΓ' 'Кириллица: мир МИР Ёж ёж'
	printf '%s\n' '日本語のテキスト' '中文 汉字 漢字' '한국어 텍스트' 'emoji 😀 🎉 👍🏽 end'
	printf '%s\n' 'combining: e\xcc\x81 a\xcc\x80 n\xcc\x83' 'plain ascii line' 'x_y z9 _under'
	printf '%s\n' 'ſ long s, K kelvin, ı dotless, İ dotted, ǅ title' 'ﬁ ligature, ß, ẞ capital'
	printf '%s\n' 'word·middle dot' 'a—b dash' '' 'tab	tab' '123 ٣٤٥ digits' 'end'
} > mixed
# invalid bytes: a stray continuation, a lone lead byte, an overlong, 0xFF, a cut sequence.
# (Surrogates and glibc's old forms past U+10FFFF: the file glibcforms below)
{
	printf 'good line café\n'
	printf 'bad \200 continuation\n'
	printf 'bad \303 lead\n'
	printf 'overlong \300\257 slash\n'
	printf 'ff \377 byte\n'
	printf 'after the errors: naïve\n'
	printf 'truncated \342\202\n'
} > invalid
printf 'αβγ\nδεζ\n' > greek
printf 'first é\nsecond \0 nul é\n' > nul
printf 'no newline é' > nonl
printf '%s\n' 'ab' 'ñandú' 'ÑANDÚ' 'σς Σ' 'ǆ ǅ Ǆ' 'ﬀ' > fold
# -i's literal of byte sets (findset): case variants, and lines that only its relaxation
# matches (ϣ is CF A3: the bytes of σ and Σ crossed; U+0383 is CE 83), so that the DFA has the
# last word on each candidate line
printf '%s\n' 'σίσυφος' 'x ΣΊΣΥΦΟΣ y' 'ΣίΣυφοΣ' 'ςίςυφος' 'ϣίϣυφοϣ' 'σίσυϕος' 'σίσυφοσ' \
	"$(printf '\316\203\316\257\316\203\317\205\317\206\316\277\316\203')" 'ärger ÄRGER' \
	'Ãrger' 'äRGER' 'ПРИВЕТ' 'пРиВеТ' 'прuвет' 'плохо' 'σίσυ' 'φος' > setlit
# -i where s (ſ, U+017F) cuts the literal of ASCII letters and k stays {k, K} (the upper case
# of KELVIN SIGN, U+212A, is itself): findsi's candidates (two, then three letters of the
# literal) on lines long enough for its 16-byte blocks, among many near misses (`quick`)
awk 'BEGIN { k = "\342\204\252"; ls = "\305\277"
	split("haystack needle|HAYSTACK NEEDLE|hay" ls "tack needle|haystac" k " needle|" \
	      "Hay" ls "tac" k " Needle|haySTACK needlE|tack needle|k needle|quick needle|" \
	      "haystack|quick|hayſtac|kiss " k "i" ls ls "|KISS|sks " ls k ls "|stack|" k, v, "|")
	for (i = 1; i <= 300; i++)
		printf "lorem quick haystack ipsum %s dolor quick%s\n", (i % 7 ? "haystack" : v[1 + int(i / 7) % 17]), (i % 3 ? "" : " haystack needle")
	for (j = 1; j <= 17; j++) print v[j] }' > kslit
printf 'caf\303\251 foo\nx\251y\n\251\nab\n\342\202\254\342\202\254\n\303\227\303\227\ncaf\303\n' > lone
printf 'a fox\n\377fox\nbad \200 fox\nxfox\n\303fox\nfoo\n\342\202fox\n\303\251\200fox\n' > wordenc
printf 'a\252fox\na\327fox\na\367fox\na\271fox\nfox\252\nfox\327\nfox\342\202\nfox\342\n' >> wordenc
# ERE operators with nothing to repeat or after an assertion, where glibc's regex decides
printf '%s\n' '1}x' 'ax' '1}x y' '{1}x' '2}x' 'x' ',2}a-b' 'a-b' 'ab' 'a*b' 'a b' 'é1}x' \
	'x$1,}' '' 'z 1,2}' '2}ab' 'ba' 'aab' 'é1}é' > ops
# what glibc's mbrtowc takes and grep's DFA does not: the old forms past U+10FFFF (F4 90 80
# 80, F7.., 5 and 6 bytes), a character for grep's printing and its -o/colour "."; surrogates
# (ED A0 80), an encoding error, but one character for the "." of regex optimized for UTF-8
printf 'a\364\220\200\200b\nc\370\210\200\200\200d\ne\340\200\200f\ng\300\257h\n' > glibcforms
printf 'i\355\277\277j\nk\367\277\277\277l\nm\374\204\200\200\200\200n\no\355\240\200\n' >> glibcforms
printf 'x\355\240\200 y\nplain\n' >> glibcforms
# -w over patterns that can match the empty string (grep 3.8's regex loop: w_regex_loop)
printf -- '-_ccbbbbcB\nfoo\nabc\n\n x\n-\nfoo bar\n_a\n a\na \n-a-\nb-\n-ba\nword·middle\n' > wempty
# -w, \< \> \b over ASCII patterns (dfa_build_ascii_w): matches beside multibyte word and
# non-word characters, combining marks, encoding errors, Greek, Cyrillic and CJK words; the
# table decides what touches no byte >= 0x80, and a line it cannot decide sends the file to
# the exact path (maybe_redo), after lines it printed already (wascii: 400 lines of ASCII
# first, then such lines; wabin: the same in a binary file)
printf '%s\n' 'éfox' 'foxé' 'fox·' '·fox' 'a fox b' 'ſfox' 'fox_' 'ｆox' 'Σfox' 'foxΣ' \
	'Жfox' 'fox ж' 'fox日' '日fox' 'fox😀' 'e\314\201fox' 'fox\314\201' 'fox\314\201 fox' \
	'x\303\251 fox' 'fox\303' 'fox\377' '\377fox' '\200fox fox\342\202' 'fox—fox' \
	'σοφός fox мир' 'fox_1 fox9 fox' 'Fox FOX fox' > wmulti
awk 'BEGIN { for (i = 1; i <= 400; i++) printf "line %d %s\n", i, (i % 7 == 3 ? "a fox b" : "foxes x") }' > wascii
cat wmulti >> wascii
{ printf 'a fox\0b\n'; cat wmulti; } > wabin
wfiles="wmulti wascii wabin"
wordascii() {
	for p in fox '\<fox\>' 'fox\b' '\bfox' '\Bfox' 'fox\>' 'fo\w\b' '\<[a-z]\+\>'; do
		for o in '' -w -c '-c -w' '-n -w' '-v -c' '-l -w' '-L' '-q -w' '-m2 -n -w' \
		         '-o -w' '-h -w -i' '-a -c -w'; do
			# shellcheck disable=SC2086
			check $o -e "$p" $wfiles
		done
	done
	check -w -F -e fox -e ox $wfiles
	check -w -E 'fox|mir' $wfiles
	check -w -c mir $wfiles
}

# context next to lines with encoding errors (grep 3.8 prints no such line, and its last
# printed line stays before it: select_grep38 in grep.c)
printf 'a1\nb2\nc3 \377\nd4\ne5\nf6\ng7 \377 x\nh8\n' > ctxenc
files="mixed invalid greek nul nonl fold"

# check ARGS...: run both programs with ARGS and compare (standard input: /dev/null, or
# the file $check_in through a pipe).
check() {
	cat "${check_in:-/dev/null}" | "$GREP" "$@" >"$tmp/g.out" 2>"$tmp/g.err"
	echo $? >"$tmp/g.rc"
	cat "${check_in:-/dev/null}" | "$PNGREP" "$@" >"$tmp/p.out" 2>"$tmp/p.err.raw"
	echo $? >"$tmp/p.rc"
	sed "s|^$PNGREP:|grep:|" "$tmp/p.err.raw" >"$tmp/p.err"
	sed "s|^$GREP:|grep:|" "$tmp/g.err" >"$tmp/g.err.n" && mv "$tmp/g.err.n" "$tmp/g.err"
	if cmp -s "$tmp/g.out" "$tmp/p.out" && cmp -s "$tmp/g.rc" "$tmp/p.rc" &&
	   cmp -s "$tmp/g.err" "$tmp/p.err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		if [ "$fail" -le 40 ] || [ -n "$verbose" ]; then
			printf 'FAIL: LC_ALL=%s grep' "$LC_ALL"
			for a in "$@"; do printf " '%s'" "$a"; done
			printf ' (rc %s vs %s)\n' "$(cat "$tmp/g.rc")" "$(cat "$tmp/p.rc")"
			diff "$tmp/g.out" "$tmp/p.out" | head -5 | cat -v
			diff "$tmp/g.err" "$tmp/p.err" | head -3
		fi
	fi
}

bre='.
^.....$
^.\{3\}
[[:alpha:]]\{6\}
[[:upper:]]
[[:lower:]][[:lower:]]
[[:digit:]]
[[:alnum:]]*$
[[:punct:]]
[[:space:]][[:alpha:]]
[[:print:]]\{20\}
[[:graph:]]
[^[:alpha:] ]
[^a-z]
[α-ω]\+
[а-я]
[À-ÿ]
[一-龥]
é
école
σοφός
ΣΊΣΥΦΟΣ
мир
日本
😀
e.
.̀
\w\+
\W
\s
\S\+
\bé
é\b
\<[[:alpha:]]
[[:alpha:]]\>
\Bσ
a\B
x*
\(.\)\1
[ſß]
k
s
i
ǆ
ß
bad
.*'

ere='(α|β)+
.{2}
^[^ ]+ [^ ]+$
[[:alpha:]]{4,}
(é|ü)+
ñ?and
[^[:ascii:]]
(..)\1
^(.)
'

opts='
-i
-v
-w
-x
-c
-o
-n
-b -o
-o -i
-w -o
-x -i
-c -v
-in -w
-l
-L
-h -n
-a
-I
--color=always
--color=always -i
--color=always -o
-A 1
-B 1 -n
-z
-m 2
-q
-a -o
--binary-files=without-match'

run_all() {
	old_ifs=$IFS
	nl='
'
	IFS=$nl
	STRIDE=${STRIDE:-2}
	i=0
	for p in $bre; do
		i=$((i + 1))
		j=0
		for o in $opts; do
			j=$((j + 1))
			[ $(((i + j) % STRIDE)) -eq 0 ] || continue
			IFS=' '
			# shellcheck disable=SC2086
			check $o -e "$p" $files
			IFS=$nl
		done
		IFS=' '
		check -F -e "$p" mixed
		check -F -i -e "$p" mixed fold
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
			check -E $o -e "$p" $files
			IFS=$nl
		done
	done
	IFS=$old_ifs
	# errors and edge cases of bracket expressions in UTF-8
	check -e '[[.é.]]' mixed
	if [ "$LC_ALL" = C.UTF-8 ]; then
		check -e '[[=é=]]' mixed
		check -e '[é-a]' mixed
		check -e '[a-é]' mixed
	fi
	check -e '[[:alpha:]-z]' mixed
	check -e "$(printf '\377')" invalid
	check -c -e "$(printf '[\377]')" invalid
	check -e "$(printf '\303')" invalid
	check -i -e 'STRASSE' mixed
	check -i -e 'ǅ' fold
	check -i -e 'Σ' fold
	for o in '' -c -o -n '-c -v' -w -x; do
		# shellcheck disable=SC2086
		for p in 'σίσυφος' 'ärger' 'привет' 'ΣΊΣ' 'straße'; do check -i $o -e "$p" setlit; done
		for p in 'Haystack Needle' 'tack needle' 'HAYſTACK' 'haystacK' 'kiss' 'SKS' 'sk' \
		         'ſtack' 'K' 'Kiss' 'quick needle' 'a.stack'; do
			check -i $o -e "$p" kslit
		done
	done
	check -c 'Haystack Needle' kslit
	check -c -F -i -e 'Haystack Needle' -e 'quick' kslit
	check -i -F -e 'ÑANDÚ' fold
	check -w -e 'é' mixed
	check -x -e 'end' mixed
	check -o -e '[^ ]*' invalid
	check -c -e '.' invalid
	check -v -e '.' invalid
	check -n -e 'a' invalid
	check -o -e 'a' invalid
	check -H -e 'e' invalid mixed
	# a lone byte in the pattern: grep's regex goes byte by byte (a match may start inside
	# a character) unless -i, \w \s, word assertions or a bracket of characters keep it on
	# characters
	b9=$(printf '\251') bc=$(printf '\254') e2=$(printf '\342') c3=$(printf '\303')
	for o in -o -c '-o -i' '-c -i' '-o -w' '-o -F' '-c -v'; do
		for p in "$b9" "$bc$e2" "x*$b9" "$b9\\|[ab]" "$b9\\|[a-c]" "$b9\\|[^a]" "$b9 \\w" \
			"\\>$b9" "$b9\\|\\bfoo" "$c3" "$b9\\|zz"; do
			# shellcheck disable=SC2086
			check -a $o -e "$p" lone
		done
		# shellcheck disable=SC2086
		check -a $o -F -e "$b9" -e zz lone
	done
	# An ERE repetition operator with nothing before it or after an assertion, where grep
	# 3.8 hands the patterns to glibc's regex (word assertions, -w, \s \w, most brackets,
	# back-references): regex skips it, and of an interval only its '{' ("{1}x" is "1}x",
	# "a$?" is "a$"), on the lines that grep's DFA reading (superset) finds.  A BRE operator
	# after an assertion is text there.  (random.sh --seed 2 found the first four)
	for o in '' -c -o -n -w '-o -w' -x --color=always -i -v; do
		for p in '{1}.\>' '{1}x\b' '(a|{1}x)\>' '^{2}x\>' '${1,}' '?{,2}([a-b]|[^ ]-)' \
			'{1}*x\>' '*{1}x\>' 'x\>{1}' 'a.\<{1}x' '{x\>' 'a\b*b' '^*a\>' 'a$?\s*' \
			'a\<{1}' '\b+a' '{1}x|\w' '{1}x|[^é]'; do
			# shellcheck disable=SC2086
			check -E $o -e "$p" ops
		done
		# grep's DFA decides these lines (a member outside ASCII, [:digit:]); -o and colour
		# take regex's spans, as grep's regex finds them (span_dot_nfa)
		# shellcheck disable=SC2086
		check -E $o -e '{1}x|[é]' -e '{1}x|[[:digit:]]' ops
		for p in '^{2}a' '^*a' '^{1}b' 'a|*b' '(^|a){2}' 'b|{1}é' 'a^?' '[[:alpha:]]${,2}' \
			'?{,2}(ab)' 'a$?' '^+b|x' '(+a|{1}x)'; do
			# shellcheck disable=SC2086
			check -E $o -e "$p" ops
		done
		# shellcheck disable=SC2086
		check -E $o -e '${1,2}' -e '\s|-+' ops
		# shellcheck disable=SC2086
		check -E $o -e '{1}x' -e '(a)\1' ops
		for p in 'a\b*b' 'a\<\{1\}' 'a\b\+b' 'x\>*' '\(a\|\b*b\)'; do
			# shellcheck disable=SC2086
			check $o -e "$p" ops
			# shellcheck disable=SC2086
			check $o -e "$p" -e '\s' ops
		done
	done
	# -w and the empty match: grep's regex loop takes no empty match where a longer one
	# starts ("-_cc..." with "" and "-."); two or more plain strings run as -F and are not
	# concerned (-e '' -e -)
	for o in -c -n '-c -v' '-n -x' -A1; do
		# shellcheck disable=SC2086
		check -w $o -e '' -e '-.' wempty
		# shellcheck disable=SC2086
		check -w $o -e '' -e - wempty
		# shellcheck disable=SC2086
		check -w $o -e '' -e 'b.' -e foo wempty
		for p in '[^a]*' '(-|b)*' 'x*' 'c*|_a' '-*' '[^b]*|x'; do
			# shellcheck disable=SC2086
			check -w -E $o -e "$p" wempty
		done
	done
	# "." under -o and colour as glibc's regex takes it (optimized for UTF-8 or not)
	for o in -o '-a -o' '-a --color=always' '-o -w' '-a -o -x' '-o -b' -c -n '-a -o -i'; do
		for p in . '.|zz' '.|[^z]' '.|\W' 'x.|a.' '.{2}' '(.)' '^..' 'y|.$'; do
			# shellcheck disable=SC2086
			check -E $o -e "$p" glibcforms
		done
	done
	check -n '' glibcforms
	check -c -v 'zz' glibcforms
	# context next to a line grep does not print: it prints from where its last printed
	# line ended (an earlier line as trailing context, the file's first line when nothing
	# was printed yet), spends its pending trailing context on trying the line again, and
	# "--" only where a group does not start there
	for o in -A1 -A2 -B1 -B2 -C1 '-A1 -v' '-B1 -v' '-C1 -o' '-A1 -m1' '-A2 -m2' -A0 -B0 \
		'-C0 -v' '-A1 --color=always' '-B1 -c'; do
		for p in c d '[cd]' '[ce]' x . '[ag]' '[bc]'; do
			# shellcheck disable=SC2086
			check -n $o -e "$p" ctxenc
		done
		# shellcheck disable=SC2086
		check $o -e a -e x ctxenc invalid ctxenc
		# the same read from a pipe (pngrep streams it: a part holding such a line runs
		# again on the exact path, and so do the parts after it)
		# shellcheck disable=SC2086
		check_in=ctxenc check -n $o -e c -e h
		# shellcheck disable=SC2086
		check_in=invalid check $o -e a -e x
	done
	# context on the relaxed DFA's path (-w with \B: the segment sends the candidate lines
	# and their context, not every line): "--" where the records skip a line
	printf '%s\n' '+ ab with' '' '| the ab cat' 'sat {z} * ?' 'é' '' '' '+' 'ab' > ctxgap
	for o in -A0 -A1 -B1 -C1 '-B2 -n' '-A0 -c' '-A0 -i'; do
		for p in '\S\B' '[^ ]\B'; do
			# shellcheck disable=SC2086
			check -w $o -e "$p" ctxgap
		done
	done
	# \b \B \< \> beside encoding errors: glibc's regex takes a lone byte as the Latin-1
	# character of its value (0xC3 a letter, 0x80 not); -w takes none as a word character
	for o in -c '-c -v' '-a -n' '-a -o -b' '-a -n -w' '-a -c -v -w'; do
		for p in '\bfox' '\<fox' '\Bfox' 'fox\>' 'fox\B' 'x\b' '\>'; do
			# shellcheck disable=SC2086
			check $o -e "$p" wordenc
		done
	done
}

export LC_ALL=C.UTF-8
run_all
wordascii
# a back-reference over one 400,000-byte line, where every start's search is short: the
# memoized search kept a few keys of each start and gave up ("memory exhausted") at 2M keys
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "abcdefghij"; print ""; print "x ab" }' >longbr
check -c '\([a-f]bar\?abc\|[[:upper:]]\([abc]\{2\}a\{,2\}\)\)\(\(a\)\{2\}\1\)\|\>' longbr
check -n -o '\(ab\)\1\|x\>' longbr
# -w and -x on one string, next to multibyte word and non-word characters (the client checks
# each occurrence, grep.c line_matches)
printf '%s\n' 'éfox' 'foxé' 'fox·' '·fox' 'a fox b' 'fox' 'ſfox' 'fox_' 'x fox fox' 'ｆox' \
	'日fox' 'fox日' 'fox 😀' 'éfox fox' > wordedge
for o in -w -x '-w -c' '-w -n -o' '-w -i' '-w -v' '-x -i'; do
	# shellcheck disable=SC2086
	check $o fox wordedge
	# shellcheck disable=SC2086
	check $o -F fox wordedge
done

# en_US.UTF-8 and a Latin-1 locale: the system's, or made here with localedef into LOCPATH
# (glibc's locale sources, /usr/share/i18n, come with libc-bin's data or the locales package)
mkloc() {      # NAME INPUT CHARMAP
	locale -a 2>/dev/null | grep -qi "^$(echo "$1" | sed 's/-//; s/\./\\./')\$" && return 0
	command -v localedef >/dev/null 2>&1 || return 1
	mkdir -p "$tmp/loc"
	localedef -i "$2" -f "$3" "$tmp/loc/$1" >/dev/null 2>&1 || [ -f "$tmp/loc/$1/LC_CTYPE" ] ||
		return 1
	export LOCPATH="$tmp/loc"
}
# Collation (en_US.UTF-8; docs/grep.md "Ranges"): ranges and equivalence classes over every
# code point of the Latin, Greek, Cyrillic, symbol and CJK blocks below and some beyond the
# BMP, one per line: each character's membership is checked, -c and -i, and the errors.
collation() {
	perl -X -CS -e 'for my $r ([1, 0x24FF], [0x2C00, 0x2E7F], [0x3040, 0x30FF], [0x4E00, 0x4FFF],
		[0xA640, 0xA7FF], [0xFB00, 0xFFFD], [0x10400, 0x1044F], [0x1D400, 0x1D7FF],
		[0x1F100, 0x1F1FF]) { for ($r->[0] .. $r->[1]) { print chr($_), "\n" unless $_ == 10 } }' \
		>codepoints || { echo "utf8.sh: collation skipped: perl could not write the file"; return; }
	for p in '[a-z]' '[A-Z]' '[0-9]' '[0-9a-z]' '[^0-9]' '[^a-z]' '[[:alpha:]0-9]' '[0-9[.a.]]' \
		'[0-9[=a=]]' '[[=e=]]' '[[=é=]]' '[[=ß=]]' '[[=0=]]' '[[=日=]]' '[^[=e=]]' '[α-ω]' \
		'[а-я]' '[一-龥]' '[a-é]' '[à-ÿ]' '[!-~]' '[ -ÿ]' '[a-a]' '[é-é]' '[0-9A]' '[0-9é]' \
		'[A-z]' '[Z-a]' '[[=a=]-z]' '[a-[=z=]]' '[[=ab=]]' '[[.é.]]' '[a-𝒜]' 'x[a-c]y' \
		'[[:upper:]a-c]' '[a-cx-z]' '[%--]' '[--9]' '[[=Σ=]]' '[[=ς=]]' '[ǅ-ǆ]' '[[=K=]]' \
		'[[.a.]-z]' '[[.-.]-9]' '[a-[.z.]]' '[[.a.]-[.z.]]' '[0-[.9.]]' '[[.a.]-é]'; do
		check -c -e "$p" codepoints
		check -c -i -e "$p" codepoints
	done
	check -n -e '[[=o=]]' -e '[ǅ-ǆ]' codepoints
	# [0-9] where glibc's regex decides because of another part: by collation, on the lines
	# with an ASCII digit or another alternative (grep's superset)
	check -c -e '[0-9]' -e '[a-z]' codepoints
	check -c -e '[0-9]' -e '\s' codepoints
	check -c -w '[0-9]' codepoints
	check -c '[0-9]\|\bq' codepoints
	check -c -E '[0-9]+|[^a]' codepoints
	check -n -e '[0-9]' -e 'x\>' mixed
	check -o -i -E '[a-e]+[[=u=]]' mixed fold
}

if mkloc en_US.UTF-8 en_US UTF-8 && LC_ALL=en_US.UTF-8 locale charmap 2>/dev/null | grep -q UTF-8; then
	export LC_ALL=en_US.UTF-8
	run_all
	wordascii
	collation
else
	echo "utf8.sh: en_US.UTF-8 skipped: not installed and localedef could not make it (apt-get install locales; locale-gen en_US.UTF-8)"
fi
# a locale of another character set is refused, never taken as C
if mkloc en_US.ISO-8859-1 en_US ISO-8859-1 && LC_ALL=en_US.ISO-8859-1 locale charmap 2>/dev/null | grep -q 8859-1; then
	LC_ALL=en_US.ISO-8859-1 "$PNGREP" a mixed >"$tmp/p.out" 2>"$tmp/p.err"
	rc=$?
	if [ $rc -eq 2 ] && [ ! -s "$tmp/p.out" ] && grep -q "character set ISO-8859-1) is not supported" "$tmp/p.err"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: LC_ALL=en_US.ISO-8859-1 pngrep a mixed: status $rc, $(cat "$tmp/p.err")"
	fi
else
	echo "utf8.sh: ISO-8859-1 refusal skipped: no such locale and localedef could not make it"
fi

# which variables choose the locale (options.c load_locale: only LC_CTYPE, LC_COLLATE and
# LC_MESSAGES are loaded when one name decides every category): LANG alone, LC_ALL over
# LC_CTYPE, LC_CTYPE beside LANG, a name not installed (every category stays C, as
# setlocale(LC_ALL, "") leaves it), in GNU grep's terms (\w and -w on multibyte words)
unset LC_ALL
for e in 'LANG=C.UTF-8' 'LC_ALL=C.UTF-8 LC_CTYPE=C' 'LANG=C LC_CTYPE=C.UTF-8' \
         'LANG=C.UTF-8 LC_TIME=C' 'LANG=xx_XX.UTF-8' 'LANG=C.UTF-8 LC_NUMERIC=xx_XX.UTF-8' \
         'LC_ALL=xx_XX.UTF-8 LANG=C.UTF-8' 'LC_ALL= LANG=C.UTF-8'; do
	for a in '-c \w\+' '-n -w fox' '-o -w мир'; do
		# shellcheck disable=SC2086
		env -u LC_ALL -u LANG -u LC_CTYPE -u LC_COLLATE -u LC_MESSAGES $e "$GREP" $a mixed wmulti 2>&1 | sed "s|^$GREP:|grep:|" >"$tmp/g.out"
		# shellcheck disable=SC2086
		env -u LC_ALL -u LANG -u LC_CTYPE -u LC_COLLATE -u LC_MESSAGES $e "$PNGREP" $a mixed wmulti 2>&1 | sed "s|^$PNGREP:|grep:|" >"$tmp/p.out"
		if cmp -s "$tmp/g.out" "$tmp/p.out"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: $e grep $a mixed wmulti"
		fi
	done
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
