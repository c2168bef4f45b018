#!/bin/sh
# run.sh: an example program end to end with the command-line tools (`make examples`).
#
# Assembles examples/string_search.pna with pnasm, writes a deterministic 20000-line text,
# runs the `lines` entry with pnrun (the text bound as region `text`, the needle as the
# argument bytes) and checks that its output is exactly what grep -F prints.  Then the same
# with the segment pncc made of examples/string_search.c ($BUILD/examples, built by make).
#
#   BUILD=build sh examples/run.sh [NEEDLE]
set -eu

BUILD=${BUILD:-build}
here=$(dirname "$0")
needle=${1:-"the lazy dog"}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/examples.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$BUILD/pnasm" -o "$tmp/search.pno" "$here/string_search.pna"

sh "$here/gen_text.sh" >"$tmp/text.txt"

grep -F -e "$needle" "$tmp/text.txt" >"$tmp/want.txt" || true
n=$(wc -l <"$tmp/want.txt")
for seg in "$tmp/search.pno" "$BUILD/examples/string_search.pno"; do
	echo "\$ pnrun $seg --entry lines --args-str '$needle' --region text=@text.txt:ro"
	"$BUILD/pnrun" "$seg" --entry lines --args-str "$needle" \
		--region "text=@$tmp/text.txt:ro" --out-cap 1048576 >"$tmp/out.txt" 2>"$tmp/err.txt"
	head -n 5 "$tmp/out.txt"
	echo "..."
	cat "$tmp/err.txt"
	if ! cmp -s "$tmp/out.txt" "$tmp/want.txt"; then
		echo "examples/run.sh: FAIL: output of $seg differs from grep -F" >&2
		diff "$tmp/want.txt" "$tmp/out.txt" | head -n 10 >&2
		exit 1
	fi
	if ! grep -qx "result: $n" "$tmp/err.txt"; then
		echo "examples/run.sh: FAIL: expected 'result: $n' from pnrun" >&2
		exit 1
	fi
	echo "string_search: $n of 20000 lines contain '$needle', the same lines grep -F prints"
done

# local_sort.c: arrays on the C stack (the frame region); reverse checked against rev(1)'s
# byte order, done here with od and sort so that no locale is involved
seg="$BUILD/examples/local_sort.pno"
text="stressed desserts, 0123456789"
echo "\$ pnrun $seg --entry reverse --args-str '$text'"
"$BUILD/pnrun" "$seg" --entry reverse --args-str "$text" >"$tmp/rev.txt" 2>"$tmp/err.txt"
cat "$tmp/rev.txt"; echo
cat "$tmp/err.txt"
want=$(printf '%s' "$text" | od -An -v -tx1 | tr -s ' \n' '\n\n' | grep . | sed -n '1!G;h;$p' | tr -d '\n')
got=$(od -An -v -tx1 <"$tmp/rev.txt" | tr -d ' \n')
if [ "$want" != "$got" ] || ! grep -qx "result: ${#text}" "$tmp/err.txt"; then
	echo "examples/run.sh: FAIL: local_sort reverse" >&2
	exit 1
fi
echo "local_sort: the argument bytes reversed in a local buffer"
