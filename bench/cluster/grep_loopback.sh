#!/bin/sh
# grep_loopback.sh: arf grep on a loopback cluster (1 metadata + 3 data arfd, tests/lib.sh's
# arf_cluster), what the data servers send back (arc stats: exec.output_bytes and execs,
# summed over the three) and the wall time (median of REPS runs) for -c, -l, -q, -L,
# lines, -m with lines and context; then in C.UTF-8 over a file of the same lines with
# 2- and 3-byte characters, and -z over one of NUL-terminated records.  Not a benchmark of the servers' scan against one server (all on one machine):
# it shows what crosses the network.  ARF=path to another arf binary to compare (the
# servers stay this tree's).
#
#   BUILD=build [ARF=...] [UNIT=1048576] [MB=64] [REPS=5] sh bench/cluster/grep_loopback.sh
BUILD=${BUILD:-build}
ARF=${ARF:-$BUILD/arf}
U=${UNIT:-1048576}
MB=${MB:-64}
REPS=${REPS:-5}
T=120
export LC_ALL=C
here=$(dirname "$0")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grep_loopback.XXXXXX") || exit 1
pids=
cleanup() { for p in $pids; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../../tests/lib.sh"
arf_cluster 3 $((MB * 2 + 64))M
arf_cluster_init >/dev/null
# lines of words, ~64 bytes; "needle42" on one line in 50,000; "lorem" on every line
awk -v mb="$MB" 'BEGIN { srand(7); n = mb * 1048576 / 64;
	for (i = 0; i < n; i++) {
		s = sprintf("%08d lorem ipsum dolor %d sit amet %d", i, int(rand() * 100000), i % 977)
		if (i % 50000 == 4321) s = s " needle42"
		while (length(s) < 63) s = s " x"
		print substr(s, 1, 63) } }' >"$tmp/f"
# the same lines with characters of 2 and 3 bytes (u), and as NUL-terminated records (z)
sed 's/lorem/lörem/; s/ipsum/ïpsum €/; s/ x x/ é/' "$tmp/f" >"$tmp/u"
tr '\n' '\0' <"$tmp/f" >"$tmp/z"
mkdir "$tmp/d" && for f in f u z; do mv "$tmp/$f" "$tmp/d/$f" && ln -s "d/$f" "$tmp/$f"; done
"$BUILD/arf" import "$tmp/d" "$M:/" >/dev/null || exit 1
stat_sum() {
	n=0
	for e in $data; do
		b=$("$BUILD/arc" stats "$e" | sed -n "s/^$1 //p")
		n=$((n + ${b:-0}))
	done
	echo "$n"
}
# what reading the counters itself sends (one stats reply a server)
s0=$(stat_sum net.bytes_sent); s1=$(stat_sum net.bytes_sent); over=$((s1 - s0))
printf '%-24s %11s %11s %6s %9s  %s\n' "arf grep" "exec output" "net sent" "execs" "median ms" "output"
# row FILE ARGS: one line of the table (the locale is LC_ALL's)
row() {
	f=$1 args=$2
	b0=$(stat_sum exec.output_bytes); x0=$(stat_sum exec.requests); n0=$(stat_sum net.bytes_sent)
	# shellcheck disable=SC2086
	timeout $T "$ARF" grep $args "$M:/$f" >"$tmp/out"; rc=$?
	b1=$(stat_sum exec.output_bytes); x1=$(stat_sum exec.requests); n1=$(stat_sum net.bytes_sent)
	# shellcheck disable=SC2086
	want=$(grep $args "$tmp/$f" | sed "s#$tmp/$f#F#" | md5sum | cut -c1-8)
	got=$(sed "s#$M:/$f#F#" "$tmp/out" | md5sum | cut -c1-8)
	[ "$want" = "$got" ] && same=same || same=DIFFERENT
	ms=
	r=0
	while [ $r -lt "$REPS" ]; do
		t0=$(date +%s%N)
		# shellcheck disable=SC2086
		timeout $T "$ARF" grep $args "$M:/$f" >/dev/null
		ms="$ms $((($(date +%s%N) - t0) / 1000000))"
		r=$((r + 1))
	done
	med=$(echo $ms | tr ' ' '\n' | sort -n | sed -n "$(( (REPS + 1) / 2 ))p")
	label=$args
	[ "$f" = f ] || label="$f: $args"
	printf '%-24s %11s %11s %6s %9s  %s (rc %s)\n' "$label" $((b1 - b0)) $((n1 - n0 - 3 * over)) \
		$((x1 - x0)) "$med" "$same" "$rc"
}
for args in "-c needle42" "-c lorem" "-c -v lorem" "-c -m 5 lorem" "-l lorem" "-q lorem" \
            "-L needle42" "-l nosuchword" "needle42" "-m 5 -n lorem" "-C 2 needle42" \
            "-n -C 2 needle42" "-m 3 -A 2 lorem"; do
	row f "$args"
done
# UTF-8 (C.UTF-8; the rows of u), and -z (C; the rows of z)
export LC_ALL=C.UTF-8
echo "LC_ALL=C.UTF-8"
for args in "-c needle42" "-c lörem" "-n needle42" "-i -n NEEDLE42" "-w -c ïpsum" \
            "-o -b needle42" "-m 5 -n lörem" "-n -C 2 needle42"; do
	row u "$args"
done
export LC_ALL=C
echo "LC_ALL=C, -z"
for args in "-z -c needle42" "-z -c lorem" "-z needle42" "-z -n -C 2 needle42" \
            "-z -m 5 -n lorem"; do
	row z "$args"
done
