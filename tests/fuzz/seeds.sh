#!/bin/sh
# seeds.sh: write fuzz seeds from the programs in the tree.
#
#   BUILD=build sh tests/fuzz/seeds.sh [--cases]     (needs $BUILD/pnasm: run `make` first)
#
# Rewrites tests/fuzz/seeds/fuzz_asm/ and seeds/fuzz_segment/, seeds/fuzz_jit/ (committed) from
# examples/*.pna, bench/vm/*.pna and tests/fuzz/*.pna (and seeds/fuzz_cc/ from the *.c there): the text with its comment-only lines
# dropped (the fuzz loop's -max_len 4096 would cut longer files) and the segment pnasm makes
# of it.  With --cases it also adds the "-- asm" sections of tests/cases/**/*.case to the
# working corpora tests/fuzz/corpus/<target>/, which git ignores: there are many and they
# change often.  Sources that do not assemble (error cases) become text seeds only.
set -eu

BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

[ -x "$BUILD/pnasm" ] || { echo "seeds.sh: $BUILD/pnasm not built (run make)" >&2; exit 1; }

# add DIR NAME FILE: one program into DIR/fuzz_asm as text and, if it assembles, into
# DIR/fuzz_segment and DIR/fuzz_jit as a segment
add() {
	grep -v '^[[:space:]]*;' "$3" >"$1/fuzz_asm/$2.pna" || true
	if "$BUILD/pnasm" -o "$tmp/seg.pno" "$1/fuzz_asm/$2.pna" 2>/dev/null; then
		cp "$tmp/seg.pno" "$1/fuzz_segment/$2.pno"
		cp "$tmp/seg.pno" "$1/fuzz_jit/$2.pno"
	fi
}

out=$top/tests/fuzz/seeds
rm -rf "$out/fuzz_asm" "$out/fuzz_segment" "$out/fuzz_jit"
mkdir -p "$out/fuzz_asm" "$out/fuzz_segment" "$out/fuzz_jit"
for f in "$top"/examples/*.pna; do add "$out" "example_$(basename "$f" .pna)" "$f"; done
for f in "$top"/bench/vm/*.pna; do add "$out" "bench_$(basename "$f" .pna)" "$f"; done
for f in "$top"/tests/fuzz/*.pna; do add "$out" "fuzz_$(basename "$f" .pna)" "$f"; done
echo "seeds: $(ls "$out/fuzz_asm" | wc -l) text, $(ls "$out/fuzz_segment" | wc -l) segments in $out"
# fuzz_cc: clang's BPF objects of the C examples and kernels, DWARF stripped (.BTF and
# .BTF.ext stay) so that they fit the fuzz loop's -max_len
rm -rf "$out/fuzz_cc"
mkdir -p "$out/fuzz_cc"
for f in $(grep -l 'activerdma/ar.h' "$top"/examples/*.c "$top"/bench/vm/*.c); do
	case $f in */examples/*) name=example_$(basename "$f" .c) ;; *) name=bench_$(basename "$f" .c) ;; esac
	clang -O2 -g -target bpf -mcpu=v3 -I"$top/cc" -I"$top/isa" -c "$f" -o "$tmp/obj.o"
	llvm-strip -g -o "$out/fuzz_cc/$name.o" "$tmp/obj.o"
done
echo "seeds: $(ls "$out/fuzz_cc" | wc -l) objects in $out/fuzz_cc"

[ "${1:-}" = --cases ] || exit 0
out=$top/tests/fuzz/corpus
mkdir -p "$out/fuzz_asm" "$out/fuzz_segment" "$out/fuzz_jit"
n=0
for f in $(find "$top/tests/cases" -name '*.case' | sort); do
	name=case_$(printf '%s' "${f#"$top"/tests/cases/}" | sed 's/\.case$//; s/[^A-Za-z0-9_]/_/g')
	# the body of the "-- asm" section: from its header line to the next "-- " header
	awk '/^-- /{ on = ($2 == "asm"); next } on' "$f" >"$tmp/case.pna"
	if [ -s "$tmp/case.pna" ]; then
		add "$out" "$name" "$tmp/case.pna"
		n=$((n + 1))
	fi
done
echo "seeds: $n case programs added to $out"
