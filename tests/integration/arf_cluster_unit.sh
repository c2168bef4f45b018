#!/bin/sh
# arf_cluster_unit.sh: a file's own stripe unit (docs/cluster.md, "A file's own stripe
# unit") on loopback, clusters of 1 and 3 data servers in both layouts, the cluster's unit
# 64 KiB.  Text files of sizes around the units (0, 1, 4K-1, 4K+1, 64K+1, 1M+1, 3M+5) go in
# with units of 4 KiB, 64 KiB and 1 MiB: by `arf import --stripe-unit` and through
# `arf mount` (user.arf.stripe_unit set on the empty file, then cp).  Each reads back
# identical through the mount, `arf export` and `arf cluster cat`; `arf grep -n` and -c
# match GNU grep on the local copy (lines cross the stripe boundaries); every object on
# every data server is exactly its file's share counted with the file's own unit;
# `arf fsck --cluster` and, the servers stopped, `arf fsck` of the metadata image are
# clean.  The refusals: the xattr on a file with bytes (EBUSY), values not a multiple of
# 4 KiB, 0, over 4 MiB (EINVAL), and on a one-server image (ENOTSUP, and import
# --stripe-unit exits 2).  The layout comes with getattr's answer: the metadata server's
# EXEC count (arc stats) of `cluster cat --direct` and of an open and a read through the
# mount has no request for it.  xattrs are set and read with python3's os.setxattr/getxattr.
#
#   BUILD=build sh tests/integration/arf_cluster_unit.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit the mount is undone and whatever was started
# is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
mpid=
pids=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_unit.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	if mounted; then
		fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	if mounted; then echo "arf_cluster_unit.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster_unit.sh arf arfd
use_mount=1
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1 ||
   ! command -v python3 >/dev/null 2>&1; then
	echo "arf_cluster_unit.sh: no FUSE or python3 here: the checks through a mount are left out"
	use_mount=0
fi

# execs SERVER: the EXEC requests SERVER has run (arc stats)
execs() { timeout "$T" "$BUILD/arc" stats "$1" | sed -n 's/^exec.requests //p'; }

# setx FILE VALUE / getx FILE: print "ok", the value, or the errno's name
setx() {
	timeout "$T" python3 -c 'import os, sys, errno
try:
    os.setxattr(sys.argv[1], "user.arf.stripe_unit", sys.argv[2].encode()); print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$1" "$2"
}
getx() {
	timeout "$T" python3 -c 'import os, sys, errno
try:
    print(os.getxattr(sys.argv[1], "user.arf.stripe_unit").decode())
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$1"
}

K=4096
M1=1048576
sizes="0 1 $((K - 1)) $((K + 1)) $((65536 + 1)) $((M1 + 1)) $((3 * M1 + 5))"
units="4096 65536 1048576"
mkdir "$tmp/text" "$mnt"
# lines of 1 to 200 bytes, one in 7 with "needle": many cross a boundary of every unit
awk 'BEGIN { srand(7); for (i = 0; i < 60000; i++) {
	n = int(rand() * 200); s = ""; for (j = 0; j < n; j++) s = s sprintf("%c", 97 + int(rand() * 26))
	printf "%d %s%s\n", i, (i % 7 == 0 ? "needle " : ""), s } }' >"$tmp/text.all"
for s in $sizes; do head -c "$s" "$tmp/text.all" >"$tmp/text/t$s"; done
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key"

# the bytes of a file of $1 bytes on the server at slot $2 of $3, unit $4 (arf_cl_obj_len)
share() {
	_row=$(($4 * $3))
	_rem=$(($1 % _row))
	_part=$((_rem > $2 * $4 ? _rem - $2 * $4 : 0))
	echo $(($1 / _row * $4 + (_part < $4 ? _part : $4)))
}

# check_objects TAG LAYOUT N: every file of $tmp/inos ("ino size unit name"), each server
check_objects() {
	_bad=0
	while read -r _ino _size _unit _name; do
		_first=0
		[ "$2" = rotate ] && _first=$((_ino % $3))
		_k=0
		while [ "$_k" -lt "$3" ]; do
			_j=$(((_k + $3 - _first) % $3))
			_want=$(share "$_size" "$_j" "$3" "$_unit")
			_obj=$(ls "$tmp/obj$_k" | grep "^$_ino\.[0-9]*\$")
			if [ -z "$_obj" ]; then
				_got=none
				[ "$_want" -eq 0 ] && _got=0
			else
				_got=$(stat -c %s "$tmp/obj$_k/$_obj")
				[ "$_want" -eq 0 ] && _got="an object of $_got bytes"
			fi
			if [ "$_got" != "$_want" ]; then
				[ "$_bad" -lt 3 ] && echo "  $1: $_name (inode $_ino, $_size bytes, unit $_unit): server $_k holds $_got, want $_want"
				_bad=$((_bad + 1))
			fi
			_k=$((_k + 1))
		done
	done <"$tmp/inos"
	if [ "$_bad" -eq 0 ]; then ok; else bad "$1: $_bad objects not as the file's unit says"; fi
}

# grep_same TAG REMOTE LOCAL OPTS...: arf grep's output equals GNU grep's
grep_same() {
	_tag=$1 _r=$2 _l=$3
	shift 3
	timeout "$T" "$BUILD/arf" grep "$@" needle "$_r" >"$tmp/g.arf" 2>"$tmp/g.err"
	_a=$?
	grep "$@" needle "$_l" >"$tmp/g.gnu"
	_g=$?
	if [ "$_a" = "$_g" ] && cmp -s "$tmp/g.arf" "$tmp/g.gnu"; then ok
	else bad "$_tag: arf grep $* (rc $_a, GNU $_g)"; sed 's/^/  | /' "$tmp/g.err" | head -3; fi
}

idx=10
for layout in flat rotate; do
	for n in 1 3; do
		tag="$layout N=$n"
		arf_cluster --members --at "$idx" "$n" 64M --cluster-key-file "$tmp/key"
		meta_img=$tmp/img$idx
		# shellcheck disable=SC2086
		run "$BUILD/arf" cluster init --stripe-unit 64K --layout "$layout" "$M" $data
		check_rc "$tag: init" 0 $?

		for u in $units; do
			run "$BUILD/arf" import --stripe-unit "$u" "$tmp/text" "$M:/i$u"
			check_rc "$tag: import --stripe-unit $u" 0 $?
		done
		run "$BUILD/arf" import --stripe-unit 1000 "$tmp/text" "$M:/bad"
		check_rc "$tag: import --stripe-unit 1000 refused" 2 $?
		# the layout comes with the attributes: a file of its own unit is read with no
		# request for it (the description: lookup, getattr, read; the file: lookup, getattr)
		e0=$(execs "$M")
		run "$BUILD/arf" cluster cat --direct "$M:/i4096/t$((K + 1))"
		same "$tag: metadata requests of cluster cat --direct" "$(($(execs "$M") - e0))" 5
		for u in $units; do
			run "$BUILD/arf" export "$M:/i$u" "$tmp/back"
			check_rc "$tag: export of unit $u" 0 $?
			run diff -r "$tmp/text" "$tmp/back"; check_rc "$tag: export equals (unit $u)" 0 $?
			rm -rf "$tmp/back"
			for s in $sizes; do
				run "$BUILD/arf" cluster cat "$M:/i$u/t$s"
				if [ $? -eq 0 ] && cmp -s "$tmp/out" "$tmp/text/t$s"; then ok
				else bad "$tag: cluster cat i$u/t$s"; sed 's/^/  | /' "$tmp/err" | head -3; fi
				run "$BUILD/arf" cluster cat --direct "$M:/i$u/t$s"
				if [ $? -eq 0 ] && cmp -s "$tmp/out" "$tmp/text/t$s"; then ok
				else bad "$tag: cluster cat --direct i$u/t$s"; sed 's/^/  | /' "$tmp/err" | head -3; fi
			done
			for s in $((K + 1)) $((M1 + 1)) $((3 * M1 + 5)); do
				grep_same "$tag: unit $u t$s" "$M:/i$u/t$s" "$tmp/text/t$s" -n
				grep_same "$tag: unit $u t$s" "$M:/i$u/t$s" "$tmp/text/t$s" -c
				grep_same "$tag: unit $u t$s" "$M:/i$u/t$s" "$tmp/text/t$s" -b -o
			done
		done

		: >"$tmp/inos"
		if [ "$use_mount" = 1 ]; then
			"$BUILD/arf" mount "$M" "$mnt" -f 2>"$tmp/mount.log" &
			mpid=$!
			for _ in $(seq 100); do mounted && break; sleep 0.1; done
			if mounted; then ok; else bad "$tag: mount"; sed 's/^/  | /' "$tmp/mount.log"; fi
			# an open and a read through the mount, the name looked up before: the
			# kernel's getattr (the open drops the attributes it holds: close-to-open)
			# and the read's, which carries the layout (one more before: getlayout)
			stat "$mnt/i4096/t$((K + 1))" >/dev/null
			e0=$(execs "$M")
			cat "$mnt/i4096/t$((K + 1))" >"$tmp/out"
			same "$tag: metadata requests of an open and a read" "$(($(execs "$M") - e0))" 2
			for u in $units; do
				same "$tag: getfattr of an imported file (unit $u)" \
					"$(getx "$mnt/i$u/t$((K + 1))")" "$u"
				mkdir "$mnt/m$u"
				for s in $sizes; do
					: >"$mnt/m$u/t$s"
					same "$tag: setfattr $u on an empty file" "$(setx "$mnt/m$u/t$s" "$u")" ok
					cp "$tmp/text/t$s" "$mnt/m$u/t$s"
				done
				run diff -r "$tmp/text" "$mnt/m$u"; check_rc "$tag: diff -r, the mount's (unit $u)" 0 $?
				run diff -r "$tmp/text" "$mnt/i$u"; check_rc "$tag: diff -r, the import (unit $u)" 0 $?
				same "$tag: getfattr (unit $u)" "$(getx "$mnt/m$u/t$((M1 + 1))")" "$u"
				same "$tag: setfattr on a file with bytes" "$(setx "$mnt/m$u/t1" 8192)" EBUSY
				same "$tag: the unit stays" "$(getx "$mnt/m$u/t1")" "$u"
			done
			same "$tag: getfattr of a directory" "$(getx "$mnt/i4096")" ENODATA
			: >"$mnt/empty"
			same "$tag: getfattr, an empty file: the cluster's" "$(getx "$mnt/empty")" 65536
			for v in 1000 0 8388608 5000 abc -4096; do
				same "$tag: setfattr $v refused" "$(setx "$mnt/empty" "$v")" EINVAL
			done
			same "$tag: setfattr on a directory" "$(setx "$mnt/m4096" 4096)" EINVAL
			same "$tag: setfattr 4M" "$(setx "$mnt/empty" 4194304)" ok
			same "$tag: set again while empty" "$(setx "$mnt/empty" 8K)" ok
			same "$tag: getfattr 8K" "$(getx "$mnt/empty")" 8192
			# the mount's files through export, cat and grep too
			run "$BUILD/arf" export "$M:/m4096" "$tmp/back"
			check_rc "$tag: export of the mount's unit-4096 files" 0 $?
			run diff -r "$tmp/text" "$tmp/back"; check_rc "$tag: the mount's files exported" 0 $?
			rm -rf "$tmp/back"
			grep_same "$tag: the mount's t3M" "$M:/m4096/t$((3 * M1 + 5))" "$tmp/text/t$((3 * M1 + 5))" -n
			for u in $units; do
				for f in "$mnt/m$u"/* "$mnt/i$u"/*; do
					echo "$(stat -c '%i %s' "$f") $(getx "$f") $f" >>"$tmp/inos"
				done
			done
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
			same "$tag: files listed for the object check" "$(wc -l <"$tmp/inos")" 42
			check_objects "$tag: objects" "$layout" "$n"
		fi
		run "$BUILD/arf" fsck --cluster "$M"; check_rc "$tag: fsck --cluster" 0 $?
		contains "$tag: fsck --cluster clean" "$tmp/out" "cluster clean"

		for p in $cl_pids; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
		run "$BUILD/arf" fsck "$meta_img"; check_rc "$tag: fsck of the metadata image" 0 $?
		idx=$((idx + 10))
	done
done

# a one-server image: no stripes, so no unit to set
arf_server "$idx" 32M
S=$ep
run "$BUILD/arf" import --stripe-unit 4K "$tmp/text" "$S:/x"
check_rc "one server: import --stripe-unit refused" 2 $?
contains "one server: import says why" "$tmp/err" "not a cluster"
if [ "$use_mount" = 1 ]; then
	"$BUILD/arf" mount "$S" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do mounted && break; sleep 0.1; done
	if mounted; then ok; else bad "one server: mount"; fi
	: >"$mnt/e"
	same "one server: setfattr refused" "$(setx "$mnt/e" 4096)" ENOTSUP
	same "one server: getfattr" "$(getx "$mnt/e")" ENODATA
	run fusermount3 -u "$mnt"; check_rc "one server: umount" 0 $?
	wait "$mpid"
	mpid=
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
