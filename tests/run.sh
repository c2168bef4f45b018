#!/bin/sh
# run.sh: run every test program of $BUILD and every tests/integration/*.sh, and print the
# summed "N passed, N failed".
#
# Called by `make check` (BUILD set).  Each program prints its own "N passed, N failed" as its
# last line; a program that crashes, times out, exits non-zero without failures, or prints no
# such line counts as one failure, so nothing can pass by dying quietly.
# Exit status: 0 only when every program ran to the end and nothing failed.

BUILD=${BUILD:-build}
TIMEOUT=${TEST_TIMEOUT:-300}
here=$(dirname "$0")
total_pass=0
total_fail=0
log=$(mktemp "${TMPDIR:-/tmp}/run.sh.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
trap 'exit 130' INT TERM

# run NAME CMD...: run one test program, echo its output, add its counts to the totals.
run() {
	name=$1
	shift
	echo "== $name"
	timeout "$TIMEOUT" "$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	last=$(tail -n 1 "$log")
	p=$(printf '%s\n' "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p')
	f=$(printf '%s\n' "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p')
	if [ -z "$p" ]; then
		# no summary line: crashed, hung, or never got going
		p=0
		f=1
		if [ "$rc" -eq 124 ]; then
			echo "$name: FAIL: timed out after ${TIMEOUT}s"
		else
			echo "$name: FAIL: exited with status $rc without a summary line"
		fi
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# a summary that claims success but a failing exit (e.g. a leak report): count it
		f=1
		echo "$name: FAIL: exited with status $rc after reporting no failures"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

# SKIP_TESTS: names of test programs not to run here, each said so
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	case " ${SKIP_TESTS:-} " in
	*" $(basename "$t") "*) echo "== $(basename "$t"): skipped (SKIP_TESTS)"; continue ;;
	esac
	run "$(basename "$t")" "$t"
done
if [ -x "$BUILD/tests/casetest" ]; then
	run casetest "$BUILD/tests/casetest" --all-ops "$here/cases"
else
	echo "casetest: FAIL: $BUILD/tests/casetest was not built"
	total_fail=$((total_fail + 1))
fi
if [ -x "$BUILD/tests/progtest" ]; then
	run progtest "$BUILD/tests/progtest" "$here/../examples" "$BUILD/examples"
fi
# integration scripts drive the real programs of $BUILD; each prints its own summary line
for t in "$here"/integration/*.sh; do
	[ -f "$t" ] || continue
	run "integration/$(basename "$t")" env BUILD="$BUILD" sh "$t"
done

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
