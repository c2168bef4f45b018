#!/bin/sh
# arf_cluster_udp.sh: a cluster (docs/cluster.md) whose servers listen on udp only: the code
# is transport-neutral, and this shows it.  1 metadata + 3 data arfd on loopback udp, stripe
# unit 64 KiB: import/export of files around the stripe edges byte-identical, arf grep -c
# and -n against GNU grep on a striped file, the mount (cp in, cmp, an append from two
# processes), fsck --cluster clean; a killed data server makes a read fail with a message
# naming it within 10 s instead of hanging.
#
#   BUILD=build sh tests/integration/arf_cluster_udp.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_udp.sh.XXXXXX") || exit 1
pids= mpid=
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	if mounted; then fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; fi
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	if mounted; then echo "arf_cluster_udp.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster_udp.sh arf arfd
ARFD_LISTEN=udp:127.0.0.1:0
arf_cluster 3 64M
case "$M $data" in
*tcp:*) bad "a server listens on tcp: $M $data" ;;
*) ok ;;
esac
arf_cluster_init

# ---- import and export, files around the stripe edges
src=$tmp/src
mkdir -p "$src/sub"
for n in 0 1 $((U - 1)) $U $((U + 1)) $((3 * U - 1)) $((3 * U + 1)) $((40 * U + 777)); do
	head -c "$n" /dev/urandom >"$src/f$n"
done
# a text file of lines straddling the edges, for grep
awk 'BEGIN { for (i = 0; i < 60000; i++) printf "line %d %s\n", i, (i % 7 ? "plain" : "needle here") }' \
	>"$src/sub/text"
run "$BUILD/arf" import "$src" "$M:/t"; check_rc "import over udp" 0 $?
run "$BUILD/arf" export "$M:/t" "$tmp/exp"; check_rc "export over udp" 0 $?
run diff -r "$src" "$tmp/exp"; check_rc "export identical to the source" 0 $?

# ---- grep: the scan on the data servers over udp
run "$BUILD/arf" grep -c needle "$M:/t/sub/text"; check_rc "arf grep -c" 0 $?
same "arf grep -c as GNU grep" "$(cat "$tmp/out")" "$(grep -c needle "$src/sub/text")"
run "$BUILD/arf" grep -n 'line 4[0-9]* needle' "$M:/t/sub/text"; check_rc "arf grep -n" 0 $?
grep -n 'line 4[0-9]* needle' "$src/sub/text" >"$tmp/want"
if cmp -s "$tmp/want" "$tmp/out"; then ok; else bad "arf grep -n differs from GNU grep's"; fi

# ---- the mount
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	mkdir "$mnt"
	"$BUILD/arf" mount "$M" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do mounted && break; kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
	if mounted; then
		ok
		run cmp "$src/f$((40 * U + 777))" "$mnt/t/f$((40 * U + 777))"; check_rc "read through the mount" 0 $?
		run cp "$src/f$((3 * U + 1))" "$mnt/copy"; check_rc "write through the mount" 0 $?
		run cmp "$src/f$((3 * U + 1))" "$mnt/copy"; check_rc "cmp of the written file" 0 $?
		( for i in $(seq 50); do echo "a $i"; done >>"$mnt/log" ) &
		_a=$!
		( for i in $(seq 50); do echo "b $i"; done >>"$mnt/log" ) &
		_b=$!
		wait "$_a" "$_b"
		same "appends of two processes all there" "$(sort "$mnt/log" | uniq | wc -l)" 100
		run fusermount3 -u "$mnt"; check_rc "umount" 0 $?
		wait "$mpid"; mpid=
	elif grep -qiE "fuse: device not found|permission denied|operation not permitted" "$tmp/mount.log"; then
		echo "arf_cluster_udp.sh: the mount part skipped: FUSE may not be mounted here"
	else
		bad "arf mount over udp did not mount"; sed 's/^/  | /' "$tmp/mount.log"
	fi
fi

run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster" 0 $?
contains "fsck --cluster" "$tmp/out" "cluster clean"

# ---- a killed data server: a read that needs it fails within 10 s, naming it
kill -KILL "$pid_2"
t0=$(date +%s%N)
run "$BUILD/arf" export "$M:/t" "$tmp/exp2"; rc=$?
ms=$(ms_since "$t0")
if [ "$rc" -ne 0 ]; then ok; else bad "export with a data server killed exited 0"; fi
contains "the error names the server" "$tmp/err" "$ep_2"
if [ "$ms" -le 10000 ]; then ok; else bad "the failure took $ms ms"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
