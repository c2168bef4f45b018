#!/bin/sh
# grep_utf8.sh: make check's run of tests/grep/utf8.sh, pngrep against GNU grep in UTF-8
# locales (C.UTF-8, en_US.UTF-8, a Latin-1 locale refused), every 4th option set per pattern
# (STRIDE=1 sh tests/grep/utf8.sh runs all).  Skipped (0 passed, 0 failed) where GNU grep or
# the C.UTF-8 locale is missing.
here=$(dirname "$0")
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "grep_utf8.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
if ! locale -a 2>/dev/null | /usr/bin/grep -qi '^c\.utf-\?8$'; then
	echo "grep_utf8.sh: skipped: no C.UTF-8 locale (locale -a)"
	echo "0 passed, 0 failed"
	exit 0
fi
STRIDE=${STRIDE:-4} exec sh "$here/../grep/utf8.sh"
