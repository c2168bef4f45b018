#!/bin/bash
# runs.sh: how many runs in arfd (arc stats' exec.requests) each metadata row of run.sh
# costs through `arf mount`, on loopback: a count, not a time, so it does not move with the
# machine's load (run.sh's seconds do, by tens of percent on the shared machine).
#
#   bash bench/fs/runs.sh [--build DIR] [--files N] [--mount-opts OPTS]
#
# Each row on a fresh mount of one image served by one arfd (as run.sh's rows), the tree
# made by gen_tree.py (--files, default 2000: run.sh --quick's).  Prints row, runs, and the
# runs per tar entry.  Stops what it started and unmounts on exit.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$HERE/../../build
FILES=2000
MOPTS=
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd) || exit 2; shift ;;
	--files) FILES=$2; shift ;;
	--mount-opts) MOPTS=$2; shift ;;
	*) echo "runs.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T=120
tmp=$(mktemp -d /tmp/arf-runs.XXXXXX) || exit 1
M=$tmp/mnt
apid=
cleanup() {
	grep -qF " $M " /proc/mounts && { fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"; }
	[ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	grep -qF " $M " /proc/mounts || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "runs.sh: $*" >&2; exit 1; }

python3 "$HERE/gen_tree.py" "$tmp/gen" "$FILES" --text "$HERE/../.." >/dev/null || die "gen_tree.py failed"
tar -c -f "$tmp/src.tar" -C "$tmp/gen" . && rm -rf "$tmp/gen" || die "tar failed"
entries=$(tar -t -f "$tmp/src.tar" | wc -l)
"$BUILD/arf" mkfs "$tmp/img" --size 512M >/dev/null || die "mkfs failed"
port=$((20000 + RANDOM % 20000))
EP=tcp:127.0.0.1:$port
"$BUILD/arfd" --listen "$EP" --arf "$tmp/img" >"$tmp/arfd.log" 2>&1 &
apid=$!
for _ in $(seq 50); do timeout 5 "$BUILD/arc" stats "$EP" >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$M"
export ARF_OPS_SEG=$BUILD/arfseg/ops.pno ARF_DATA_SEG=$BUILD/arfseg/data.pno ARF_STATFS_SEG=$BUILD/arfseg/statfs.pno
runs() { timeout 5 "$BUILD/arc" stats "$EP" | sed -n 's/^exec.requests //p'; }
row() {
	timeout "$T" "$BUILD/arf" mount "$EP" "$M" ${MOPTS:+-o "$MOPTS"} || die "mount failed"
	local r0; r0=$(runs)
	(cd "$tmp" && timeout "$T" bash -c "$2" >/dev/null 2>&1) || echo "runs.sh: $1 failed" >&2
	local n=$(( $(runs) - r0 ))
	fusermount3 -u "$M" || die "umount failed"
	awk -v r="$1" -v n="$n" -v e="$entries" 'BEGIN { printf "%-8s %8d runs  %5.2f per entry\n", r, n, n / e }'
}
echo "runs.sh: $entries tar entries, $BUILD"
row untar "mkdir mnt/tree && tar -x --no-same-owner -f src.tar -C mnt/tree"
row find "find mnt/tree"
row "ls -lR" "ls -lR mnt/tree"
row "du -s" "du -s mnt/tree"
row "rm -r" "rm -r mnt/tree"
