#!/bin/sh
# man.sh: the man pages and the programs agree.  Every option a program's --help lists
# (--long and -x words) must be in its page's scdoc source (arf: `arf --help` and
# `arf grep --help` in arf.1), so neither can drift from the other; no source line may start
# with . or ' (roff would take it for a request); each built page in $BUILD/man must render
# without a warning from man(1).  Where scdoc is missing the pages
# were not built: the sources are still checked.
#
#   BUILD=build sh tests/integration/man.sh        prints "N passed, N failed" last

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-20}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/man.sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

# options FILE: the option words of a --help text, one a line: --long-name, -x (each
# word cut at blanks and at , [ ] ( ) | = that join options to others or to their values)
options() {
	tr -s ' \t,[]()|=' '\n\n\n\n\n\n\n\n' <"$1" | grep -xE -- '--[a-z][a-z0-9-]*|-[A-Za-z0-9]' | sort -u
}

# check PAGE.scd PROGRAM [ARG...]: PROGRAM ARG... --help's options all in PAGE.scd
check() {
	rel=$1
	page=$src/$1
	shift
	name=$(basename "$page" .scd)
	if [ ! -f "$page" ]; then bad "$page missing"; return; fi
	if ! timeout "$T" "$@" --help >"$tmp/help" 2>&1; then
		bad "$* --help failed:"; sed 's/^/  | /' "$tmp/help"; return
	fi
	# scdoc passes a line that starts with . or ' to roff as a request, which eats it quietly
	if grep -nE "^[[:space:]]*[.']" "$page" >"$tmp/dots"; then
		bad "$rel: lines roff would take for requests:"; sed 's/^/  | /' "$tmp/dots"
	else
		ok
	fi
	n=0
	for o in $(options "$tmp/help"); do
		n=$((n + 1))
		if grep -qE -e "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" "$page"; then
			ok
		else
			bad "$name: '$o' of '$* --help' is not in $rel"
		fi
	done
	[ "$n" -gt 0 ] || bad "$* --help: no options found (has its format changed?)"
	if [ ! -f "$BUILD/man/$name" ]; then
		command -v scdoc >/dev/null 2>&1 && bad "$BUILD/man/$name not built (make man)"
	elif command -v man >/dev/null 2>&1; then
		# a page that does not parse, or that man(1) warns about
		man --warnings -l "$BUILD/man/$name" >"$tmp/page" 2>"$tmp/warn"
		if [ -s "$tmp/warn" ] || ! grep -q "^NAME" "$tmp/page"; then
			bad "$BUILD/man/$name renders with warnings or without NAME:"; sed 's/^/  | /' "$tmp/warn"
		else
			ok
		fi
	fi
}

for p in arfd arf arc pnasm pndis pnrun pngrep; do
	[ -x "$BUILD/$p" ] || { echo "man.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
command -v scdoc >/dev/null 2>&1 || echo "man.sh: scdoc not installed: the pages were not built, only their sources are checked"
command -v man >/dev/null 2>&1 || echo "man.sh: no man(1) here: the built pages are not rendered"
check server/arfd.8.scd "$BUILD/arfd"
check arf/arf.1.scd "$BUILD/arf"
check arf/arf.1.scd "$BUILD/arf" grep
check client/arc.1.scd "$BUILD/arc"
check asm/pnasm.1.scd "$BUILD/pnasm"
check asm/pndis.1.scd "$BUILD/pndis"
check vm/pnrun.1.scd "$BUILD/pnrun"
check grep/pngrep.1.scd "$BUILD/pngrep"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
