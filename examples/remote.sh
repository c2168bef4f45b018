#!/bin/sh
# remote.sh: the main demo.  Starts arfd on loopback with a text file exported as a region,
# ships examples/string_search.pna to it with arc, and checks that the lines that come back
# are exactly what grep -F prints on the same file.  Stops the server with SIGTERM.
#
#   BUILD=build sh examples/remote.sh [NEEDLE]
#   SEG=c BUILD=build sh examples/remote.sh    the same with examples/string_search.c (pncc)
set -eu

BUILD=${BUILD:-build}
here=$(dirname "$0")
needle=${1:-"the lazy dog"}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/remote.XXXXXX")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ "${SEG:-pna}" = c ]; then
	cp "$BUILD/examples/string_search.pno" "$tmp/search.pno"
else
	"$BUILD/pnasm" -o "$tmp/search.pno" "$here/string_search.pna"
fi
sh "$here/gen_text.sh" >"$tmp/text.txt"

# port 0: the kernel picks a free port, arfd logs the endpoint it got
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --region "text=@$tmp/text.txt:ro" \
	--region scratch=1M:rw 2>"$tmp/arfd.log" &
pid=$!
ep=
for _ in $(seq 50); do
	ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
	[ -n "$ep" ] && break
	sleep 0.1
done
[ -n "$ep" ] || { echo "remote.sh: arfd did not start:" >&2; cat "$tmp/arfd.log" >&2; exit 1; }
echo "\$ arfd --listen tcp:127.0.0.1:0 --region text=@text.txt:ro --region scratch=1M:rw   # $ep"
echo "\$ arc regions $ep"
"$BUILD/arc" regions "$ep"
echo "\$ arc run $ep search.pno --entry lines --args-str '$needle'"
"$BUILD/arc" run "$ep" "$tmp/search.pno" --entry lines --args-str "$needle" \
	>"$tmp/out.txt" 2>"$tmp/err.txt"
head -n 5 "$tmp/out.txt"
echo "..."
cat "$tmp/err.txt"
grep -F -e "$needle" "$tmp/text.txt" >"$tmp/want.txt" || true
n=$(wc -l <"$tmp/want.txt")
if ! cmp -s "$tmp/out.txt" "$tmp/want.txt"; then
	echo "remote.sh: FAIL: the server's lines differ from grep -F" >&2
	diff "$tmp/want.txt" "$tmp/out.txt" | head -n 10 >&2
	exit 1
fi
echo "remote search: $n matching lines crossed the network out of 20000 ($(wc -c <"$tmp/out.txt") of $(wc -c <"$tmp/text.txt") bytes), identical to grep -F"
echo "\$ arc stats $ep | grep exec"
"$BUILD/arc" stats "$ep" | grep '^exec\.'
# The same segment placed here instead: every access to 'text' becomes a READ of the server.
r0=$("$BUILD/arc" stats "$ep" | sed -n 's/^read.requests //p')
echo "\$ arc run $ep search.pno --entry lines --args-str '$needle' --local"
"$BUILD/arc" run "$ep" "$tmp/search.pno" --entry lines --args-str "$needle" --local \
	>"$tmp/local.txt" 2>"$tmp/lerr.txt"
r1=$("$BUILD/arc" stats "$ep" | sed -n 's/^read.requests //p')
if ! cmp -s "$tmp/local.txt" "$tmp/out.txt"; then
	echo "remote.sh: FAIL: local placement gave other lines than the server" >&2
	exit 1
fi
echo "local placement: the same $n lines, after $((r1 - r0)) READ requests for the text (one EXEC did it in one round trip)"
kill -TERM "$pid"
wait "$pid"
pid=
echo "arfd stopped cleanly:"
tail -n 2 "$tmp/arfd.log"
