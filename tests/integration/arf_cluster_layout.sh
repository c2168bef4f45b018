#!/bin/sh
# arf_cluster_layout.sh: the two stripe layouts of a cluster (docs/cluster.md, "Layout of a
# file") on loopback, 64 KiB stripes, 1, 2 and 3 data servers each: flat (version 1, what
# the first clusters' images hold: every file starts on data server 0) and rotate (version
# 2, what `arf cluster init` makes now: stripe s of inode INO on server (s + INO % N) % N).
# For each: `arf cluster show` names the version; files of 0, 1, unit-1, unit, unit+1, 7
# units + 3 and 40 units of bytes written by `arf import` and by cp through `arf mount`
# read back identical through the mount, through `arf export` and through the metadata
# server alone (`arf cluster cat`, deleg.pno's route picking the server); every object on
# every data server is exactly its file's share there, counted from the file's inode
# number and size by the layout's rule (and absent where the share is 0); small files of
# the rotated layout spread over the servers; `arf fsck --cluster` is clean.
#
#   BUILD=build sh tests/integration/arf_cluster_layout.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit the mount is undone and whatever was started
# is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
mpid=
pids=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_layout.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	if mounted; then
		fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	if mounted; then echo "arf_cluster_layout.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster_layout.sh arf arfd
use_mount=1
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "arf_cluster_layout.sh: no FUSE here: the checks through a mount are left out"
	use_mount=0
fi

sizes="0 1 $((U - 1)) $U $((U + 1)) $((7 * U + 3)) $((40 * U))"
mkdir "$tmp/src" "$mnt"
for s in $sizes; do
	head -c "$s" /dev/urandom >"$tmp/src/f$s"
done
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key"

# the bytes of a file of $1 bytes on the server at slot $2 of $3 (arf_cl_obj_len)
share() {
	_row=$((U * $3))
	_rem=$(($1 % _row))
	_part=$((_rem > $2 * U ? _rem - $2 * U : 0))
	echo $(($1 / _row * U + (_part < U ? _part : U)))
}

# check_objects TAG DIR LAYOUT N: for every file of DIR (a directory of the mount, or of a
# mount-less listing "ino size name" in $tmp/inos), each data server's object
check_objects() {
	_bad=0
	while read -r _ino _size _name; do
		_first=0
		[ "$3" = rotate ] && _first=$((_ino % $4))
		_k=0
		while [ "$_k" -lt "$4" ]; do
			_j=$(((_k + $4 - _first) % $4))
			_want=$(share "$_size" "$_j" "$4")
			_obj=$(ls "$tmp/obj$_k" | grep "^$_ino\.[0-9]*\$")
			if [ -z "$_obj" ]; then
				_got=none
				[ "$_want" -eq 0 ] && _got=0
			else
				_got=$(stat -c %s "$tmp/obj$_k/$_obj")
				[ "$_want" -eq 0 ] && _got="an object of $_got bytes"
			fi
			if [ "$_got" != "$_want" ]; then
				[ "$_bad" -lt 3 ] && echo "  $1: $_name (inode $_ino, $_size bytes): server $_k holds $_got, want $_want"
				_bad=$((_bad + 1))
			fi
			_k=$((_k + 1))
		done
	done <"$tmp/inos"
	if [ "$_bad" -eq 0 ]; then ok; else bad "$1: $_bad objects not as the layout says"; fi
}

idx=10
for layout in flat rotate; do
	for n in 1 2 3; do
		tag="$layout N=$n"
		arf_cluster --members --at "$idx" "$n" 32M --cluster-key-file "$tmp/key"
		run "$BUILD/arf" cluster init --stripe-unit 64K --layout "$layout" "$M" $data
		check_rc "$tag: init" 0 $?
		run "$BUILD/arf" cluster show "$M"; check_rc "$tag: show" 0 $?
		want_v=1
		[ "$layout" = rotate ] && want_v=2
		same "$tag: the version" "$(head -n 1 "$tmp/out")" "arf-cluster $want_v"

		run "$BUILD/arf" import "$tmp/src" "$M:/imp"; check_rc "$tag: import" 0 $?
		run "$BUILD/arf" export "$M:/imp" "$tmp/back"; check_rc "$tag: export" 0 $?
		run diff -r "$tmp/src" "$tmp/back"; check_rc "$tag: export equals the sources" 0 $?
		rm -rf "$tmp/back"
		# through the metadata server alone: route picks each stripe's server
		for s in $sizes; do
			run "$BUILD/arf" cluster cat "$M:/imp/f$s"
			if [ $? -eq 0 ] && cmp -s "$tmp/out" "$tmp/src/f$s"; then ok
			else bad "$tag: cluster cat f$s"; sed 's/^/  | /' "$tmp/err"; fi
		done

		if [ "$use_mount" = 1 ]; then
			"$BUILD/arf" mount "$M" "$mnt" -f 2>"$tmp/mount.log" &
			mpid=$!
			for _ in $(seq 100); do mounted && break; sleep 0.1; done
			if mounted; then ok; else bad "$tag: mount"; sed 's/^/  | /' "$tmp/mount.log"; fi
			run cp -r "$tmp/src" "$mnt/cp"; check_rc "$tag: cp -r into the mount" 0 $?
			run diff -r "$tmp/src" "$mnt/cp"; check_rc "$tag: diff -r of the copy" 0 $?
			run diff -r "$tmp/src" "$mnt/imp"; check_rc "$tag: diff -r of the import" 0 $?
			# many small files: in the rotated layout they spread over the servers
			mkdir "$mnt/small"
			for i in $(seq 30); do echo "small $i" >"$mnt/small/s$i"; done
			stat -c '%i %s %n' "$mnt"/cp/* "$mnt"/imp/* "$mnt"/small/* >"$tmp/inos"
			run fusermount3 -u "$mnt"; check_rc "$tag: umount" 0 $?
			wait "$mpid"; check_rc "$tag: arf mount exits 0" 0 $?
			mpid=
			k=0
			for e in $data; do
				rm -rf "$tmp/obj$k"
				run "$BUILD/arf" export "$e:/stripes" "$tmp/obj$k"
				check_rc "$tag: export /stripes of server $k" 0 $?
				k=$((k + 1))
			done
			check_objects "$tag: objects" "$mnt" "$layout" "$n"
			# the 30 one-line files: all on server 0 when flat; when rotated, on every
			# server (consecutive inode numbers)
			on0=$(ls "$tmp/obj0" | while read -r o; do
				grep -q "^${o%%.*} [0-9]* $mnt/small/" "$tmp/inos" && echo x; done | wc -l)
			if [ "$layout" = flat ] || [ "$n" -eq 1 ]; then
				same "$tag: small files on server 0" "$on0" 30
			elif [ "$on0" -ge 5 ] && [ "$on0" -le $((30 - 5)) ]; then ok
			else bad "$tag: $on0 of 30 small files on server 0 (rotated: spread)"; fi
		fi
		run "$BUILD/arf" fsck --cluster "$M"; check_rc "$tag: fsck --cluster" 0 $?
		contains "$tag: fsck --cluster clean" "$tmp/out" "cluster clean"

		for p in $cl_pids; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
		idx=$((idx + 10))
	done
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
