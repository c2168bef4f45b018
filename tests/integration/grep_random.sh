#!/bin/sh
# grep_random.sh: make check's run of tests/grep/random.sh, the random differential test of
# pngrep against GNU grep: a fixed seed and a bounded count (GREP_RANDOM_SEED,
# GREP_RANDOM_COUNT); `make fuzz` runs it longer with a new seed.  Skipped (0 passed,
# 0 failed) where GNU grep is missing.
here=$(dirname "$0")
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "grep_random.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
exec sh "$here/../grep/random.sh" --seed "${GREP_RANDOM_SEED:-1}" --count "${GREP_RANDOM_COUNT:-300}"
