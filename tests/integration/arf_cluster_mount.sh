#!/bin/sh
# arf_cluster_mount.sh: `arf mount` of a cluster (docs/cluster.md) on loopback: 1 metadata +
# 3 data arfd servers, stripe unit 64 KiB, driven with plain shell tools.  Files of sizes
# around the stripe edges written with cp and dd read back identical (cmp) through the
# mount and through `arf export`; the description /.arf-cluster reads through the mount and
# every change to it is refused (rm, mv from and over it, ln, writes, truncate, chmod, the
# .new name); the objects are on the data servers (arf export of their
# /stripes); append with >>, truncate down and up (no stale byte shows in the new hole), a
# file rewritten in the middle, fsync, fallocate's modes (mode 0, punch, zero range, keep
# size) and SEEK_DATA/SEEK_HOLE on a sparse file against the same calls on a local file;
# two clients appending records to one file at once (every record whole and once);
# a tree copied from
# /usr/include and compared with diff -r; rm of a file (also one open while removed, and one
# replaced by mv) removes its objects, and fsck --cluster is clean after; a killed data
# server makes a read and a write fail (EIO) within 10 s instead of hanging, while files with
# no bytes on it are still read.  The requests in flight on all data servers: a file written
# with dd bs=1M, rewritten ahead of a reader that read ahead, replaced by another client;
# a second mount (another client) writing inside what this one has in flight for a reader,
# once between two reads of one descriptor and once while readers read on; a data server
# stopped (SIGSTOP) mid-write: the error at fsync and at close within 20 s; one stopped and
# killed under a reader with read-ahead in flight: EIO within 12 s.  Where FUSE cannot be
# used it says why and counts nothing.
#
#   BUILD=build sh tests/integration/arf_cluster_mount.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit the mount is undone and whatever was started is
# killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
mpid=
pids=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_mount.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mnt2=$tmp/mnt2
mpid2=
mounted_at() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
mounted() { mounted_at "$mnt" || mounted_at "$mnt2"; }
cleanup() {
	for _m in "$mnt" "$mnt2"; do
		if mounted_at "$_m"; then
			fusermount3 -u -z "$_m" 2>/dev/null || umount -l "$_m" 2>/dev/null
		fi
	done
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$mpid2" ] && kill -KILL "$mpid2" 2>/dev/null
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	# never recurse into a mount that is still there
	if mounted; then echo "arf_cluster_mount.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

skip() {
	echo "arf_cluster_mount.sh: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

need arf_cluster_mount.sh arf arfd
[ -c /dev/fuse ] || skip "no /dev/fuse here (modprobe fuse, or a container without the device)"
{ [ -r /dev/fuse ] && [ -w /dev/fuse ]; } || skip "/dev/fuse is not readable and writable by $(id -un)"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 not installed (scripts/deps.sh installs fuse3)"

arf_cluster 3 128M
# the flat layout (version 1): the object counts below name the servers stripes are on
arf_cluster_init --layout flat

wait_mounted() {   # $1: the mount's pid, $2: where (the first mount's by default)
	for _ in $(seq 100); do
		mounted_at "${2:-$mnt}" && return 0
		[ -n "$1" ] && ! kill -0 "$1" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

mkdir "$mnt"
"$BUILD/arf" mount "$M" "$mnt" -f 2>"$tmp/mount.log" &
mpid=$!
if ! wait_mounted "$mpid"; then
	if grep -qiE "fuse: device not found|permission denied|operation not permitted|fusermount3: mount failed" "$tmp/mount.log"; then
		cat "$tmp/mount.log"
		skip "FUSE is present but this environment may not mount it (see the message above)"
	fi
	bad "arf mount -f of a cluster did not mount:"; sed 's/^/  | /' "$tmp/mount.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok
m=$mnt

# ---- the description /.arf-cluster: readable, every change refused (EPERM), and the
# cluster still there after (a second mount reads it; arf cluster show)
desc=$(cat "$m/.arf-cluster")
contains_text() { case "$2" in *"$3"*) ok ;; *) bad "$1: no '$3' in: $2" ;; esac; }
contains_text "the description reads through the mount" "$desc" "arf-cluster 1"
for cmd in "rm -f $m/.arf-cluster" "mv $m/.arf-cluster $m/gone" "ln $m/.arf-cluster $m/desc2" \
	"sh -c 'echo x >>$m/.arf-cluster'" "truncate -s 0 $m/.arf-cluster" \
	"chmod 666 $m/.arf-cluster" "touch $m/.arf-cluster.new" "mkdir $m/.arf-cluster.new" \
	"ln -s x $m/.arf-cluster.new"; do
	run sh -c "$cmd"
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q "Operation not permitted" "$tmp/err"; then ok
	else bad "$cmd: exit $rc (want EPERM):"; sed 's/^/  | /' "$tmp/err"; fi
done
run sh -c "echo 'arf-cluster 2' >$m/x && mv $m/x $m/.arf-cluster"
if [ $? -ne 0 ] && grep -q "Operation not permitted" "$tmp/err"; then ok; else bad "mv over the description"; fi
rm -f "$m/x"
same "the description unchanged" "$(cat "$m/.arf-cluster")" "$desc"
run "$BUILD/arf" cluster show "$M"; check_rc "arf cluster show after the refusals" 0 $?

# the number of objects on data server k (1..3)
objects() {
	eval "_e=\$ep_$1"
	rm -rf "$tmp/obj"
	timeout "$T" "$BUILD/arf" export "$_e:/stripes" "$tmp/obj" >/dev/null 2>&1 || { echo error; return; }
	ls "$tmp/obj" | wc -l
}
all_objects() { echo "$(objects 1) $(objects 2) $(objects 3)"; }

# ---- files of every size around the stripe edges, written with cp and dd
src=$tmp/src
mkdir "$src"
sizes="0 1 4095 4096 65535 65536 65537 131071 131072 196607 196608 196609 $((3 * U * 2 + 5)) $((5 * 1024 * 1024 + 12345))"
for s in $sizes; do
	head -c "$s" /dev/urandom >"$src/f$s"
done
run mkdir "$m/sizes"; check_rc "mkdir sizes" 0 $?
for s in $sizes; do
	run cp "$src/f$s" "$m/sizes/f$s"; check_rc "cp f$s" 0 $?
done
run dd if="$src/f5255225" of="$m/sizes/dd" bs=10000 conv=fsync; check_rc "dd bs=10000 conv=fsync" 0 $?
for s in $sizes; do
	run cmp "$src/f$s" "$m/sizes/f$s"; check_rc "cmp f$s" 0 $?
	same "size f$s" "$(stat -c %s "$m/sizes/f$s")" "$s"
done
run cmp "$src/f5255225" "$m/sizes/dd"; check_rc "cmp dd" 0 $?
# read with odd block sizes across the edges
run sh -c "dd if='$m/sizes/f5255225' bs=65537 2>/dev/null | cmp - '$src/f5255225'"; check_rc "dd read bs=65537" 0 $?
# the same bytes through arf export (the stripes, not the mount's view of them)
run "$BUILD/arf" export "$M:/sizes" "$tmp/back"; check_rc "export sizes" 0 $?
run diff -r "$src" "$tmp/back"; check_rc "export equals the sources" 1 $?   # dd is extra
contains "only dd is extra" "$tmp/out" "Only in $tmp/back: dd"
same "only one difference" "$(wc -l <"$tmp/out")" 1
# the objects are on the data servers, named INO.GEN: a file of 1 byte has one, on the first
# (sizes 1 to 65536 on server 1 only, to 131072 on 1 and 2, the rest on all three)
same "objects on the data servers" "$(all_objects)" "14 9 6"
one=$(stat -c %i "$m/sizes/f1")
objects 1 >/dev/null
if ls "$tmp/obj" | grep -q "^$one\.[0-9]*\$"; then ok; else bad "no object of inode $one on server 1"; fi
objects 2 >/dev/null
if ls "$tmp/obj" | grep -q "^$one\.[0-9]*\$"; then bad "an object of a 1-byte file on server 2"; else ok; fi

# ---- append, truncate, rewrite in the middle
f=$m/sizes/f196609
cp "$src/f196609" "$tmp/ref"
head -c 70000 /dev/urandom >"$tmp/more"
run sh -c "cat '$tmp/more' >> '$f'"; check_rc "append >>" 0 $?
cat "$tmp/more" >>"$tmp/ref"
run cmp "$tmp/ref" "$f"; check_rc "cmp after append" 0 $?
run sh -c "echo tail >> '$f'"; check_rc "append a line" 0 $?
echo tail >>"$tmp/ref"
run cmp "$tmp/ref" "$f"; check_rc "cmp after a second append" 0 $?
# truncate down into the second stripe, then up over what was there: zeros, not old bytes
run truncate -s 70000 "$f"; check_rc "truncate down" 0 $?
truncate -s 70000 "$tmp/ref"
run cmp "$tmp/ref" "$f"; check_rc "cmp after truncate down" 0 $?
run truncate -s 300000 "$f"; check_rc "truncate up" 0 $?
truncate -s 300000 "$tmp/ref"
run cmp "$tmp/ref" "$f"; check_rc "cmp after truncate up (no stale byte)" 0 $?
# a write past the end leaves a hole of zeros
run dd if="$tmp/more" of="$f" bs=1000 count=3 seek=500 conv=notrunc; check_rc "write past the end" 0 $?
dd if="$tmp/more" of="$tmp/ref" bs=1000 count=3 seek=500 conv=notrunc 2>/dev/null
run cmp "$tmp/ref" "$f"; check_rc "cmp after a write past the end" 0 $?
# rewrite in the middle, across two stripe edges
run dd if="$tmp/more" of="$f" bs=1 seek=$((U - 100)) count=$((U + 200)) conv=notrunc; check_rc "rewrite in the middle" 0 $?
dd if="$tmp/more" of="$tmp/ref" bs=1 seek=$((U - 100)) count=$((U + 200)) conv=notrunc 2>/dev/null
run cmp "$tmp/ref" "$f"; check_rc "cmp after the rewrite" 0 $?
same "size after the rewrite" "$(stat -c %s "$f")" "$(stat -c %s "$tmp/ref")"
# O_TRUNC, then a smaller file
run sh -c "head -c 1000 '$tmp/more' > '$f'"; check_rc "O_TRUNC" 0 $?
head -c 1000 "$tmp/more" >"$tmp/ref"
run cmp "$tmp/ref" "$f"; check_rc "cmp after O_TRUNC" 0 $?
# fallocate on a striped file, each mode against the same call on a local ext4/tmpfs copy:
# mode 0 raising the size over several stripes (zeros after the old end), PUNCH_HOLE and
# ZERO_RANGE (with and without KEEP_SIZE) across stripe edges, KEEP_SIZE inside the size,
# KEEP_SIZE past the size refused (EOPNOTSUPP, as on one server)
fa() {  # fa NAME ARGS...: the same fallocate on the mount's file and the reference
	_n=$1
	shift
	run fallocate "$@" "$f"; check_rc "fallocate $_n" 0 $?
	fallocate "$@" "$tmp/ref"
	run cmp "$tmp/ref" "$f"; check_rc "cmp after fallocate $_n" 0 $?
	same "size after fallocate $_n" "$(stat -c %s "$f")" "$(stat -c %s "$tmp/ref")"
}
head -c $((2 * U + 5000)) "$tmp/more" >"$tmp/ref"
run cp "$tmp/ref" "$f"; check_rc "a file of two stripes and a bit" 0 $?
fa "mode 0 raising the size" -l $((6 * U + 123))
fa "punch across two stripe edges" -p -o $((U - 300)) -l $((U + 700))
fa "punch inside one stripe" -p -o $((3 * U + 10)) -l 4000
fa "zero range, keep size" -z -n -o $((2 * U - 50)) -l 3000
fa "zero range raising the size" -z -o $((6 * U)) -l $((2 * U))
fa "keep size inside the size" -n -o 100 -l $((4 * U))
head -c $((U + 17)) "$tmp/more" | dd of="$f" bs=1 seek=$((U - 9)) conv=notrunc 2>/dev/null
head -c $((U + 17)) "$tmp/more" | dd of="$tmp/ref" bs=1 seek=$((U - 9)) conv=notrunc 2>/dev/null
run cmp "$tmp/ref" "$f"; check_rc "cmp after writing over punched and allocated ranges" 0 $?
run fallocate -n -o $((8 * U)) -l $((3 * U)) "$f"; check_rc "fallocate -n past the size" 1 $?
contains "fallocate -n past the size refused" "$tmp/err" "unsupported"
run sync "$f"; check_rc "fsync" 0 $?
# SEEK_DATA / SEEK_HOLE on a sparse striped file, against the same file on the local
# filesystem: blocks written here and there (at stripe edges, inside a stripe, a whole
# stripe), one punched, a hole at the end; lseek from offsets around every edge
sp=$m/sparse
: >"$tmp/sref"
run touch "$sp"; check_rc "a sparse file" 0 $?
for at in 0 $((U + 12288)) $((3 * U - 4096)) $((3 * U)) $((5 * U + 8192)) $((6 * U)); do
	head -c 4096 "$tmp/more" | dd of="$sp" bs=4096 seek=$((at / 4096)) conv=notrunc 2>/dev/null
	head -c 4096 "$tmp/more" | dd of="$tmp/sref" bs=4096 seek=$((at / 4096)) conv=notrunc 2>/dev/null
done
head -c "$U" "$tmp/more" | dd of="$sp" bs=4096 seek=$((7 * U / 4096)) conv=notrunc 2>/dev/null
head -c "$U" "$tmp/more" | dd of="$tmp/sref" bs=4096 seek=$((7 * U / 4096)) conv=notrunc 2>/dev/null
run fallocate -p -o $((7 * U + 8192)) -l 8192 "$sp"; check_rc "punch in the sparse file" 0 $?
fallocate -p -o $((7 * U + 8192)) -l 8192 "$tmp/sref"
truncate -s $((9 * U + 100)) "$sp" "$tmp/sref"
run cmp "$tmp/sref" "$sp"; check_rc "cmp of the sparse file" 0 $?
seeks() {  # seeks FILE: SEEK_DATA and SEEK_HOLE from offsets around every 4 KiB and stripe edge
	python3 - "$1" "$U" <<'PY'
import os, sys
f, u = sys.argv[1], int(sys.argv[2])
fd = os.open(f, os.O_RDONLY)
size = os.fstat(fd).st_size
offs = sorted({max(0, min(o, size + 5)) for k in range(0, size // 4096 + 2)
               for o in (k * 4096 - 1, k * 4096, k * 4096 + 7)} |
              {k * u + d for k in range(10) for d in (-1, 0, 1)})
for o in offs:
    out = []
    for w, name in ((os.SEEK_DATA, "data"), (os.SEEK_HOLE, "hole")):
        try:
            out.append("%s %d" % (name, os.lseek(fd, o, w)))
        except OSError as e:
            out.append("%s %s" % (name, "ENXIO" if e.errno == 6 else e.errno))
    print(o, *out)
PY
}
seeks "$sp" >"$tmp/seek.arf" 2>&1
seeks "$tmp/sref" >"$tmp/seek.ref" 2>&1
if cmp -s "$tmp/seek.ref" "$tmp/seek.arf"; then ok; else
	bad "SEEK_DATA/SEEK_HOLE differ from the local file's:"; diff "$tmp/seek.ref" "$tmp/seek.arf" | head -20
fi
n_seeks=$(wc -l <"$tmp/seek.ref")
if [ "$n_seeks" -gt 400 ]; then ok; else bad "only $n_seeks offsets looked at"; fi
run rm "$sp"; check_rc "rm the sparse file" 0 $?

# ---- a tree copied in and compared
inc=$tmp/inc
mkdir "$inc"
find /usr/include -maxdepth 2 -type f -name '*.h' 2>/dev/null | head -n 300 | while read -r h; do
	d=$inc/$(dirname "${h#/usr/include/}")
	mkdir -p "$d" && cp "$h" "$d/"
done
n_inc=$(find "$inc" -type f | wc -l)
if [ "$n_inc" -ge 50 ]; then ok; else bad "only $n_inc headers found in /usr/include"; fi
before=$(all_objects)
run cp -r "$inc" "$m/inc"; check_rc "cp -r a tree" 0 $?
run diff -r "$inc" "$m/inc"; check_rc "diff -r of the tree" 0 $?
# through a second mount-independent path too: arf export
run "$BUILD/arf" export "$M:/inc" "$tmp/inc2"; check_rc "export the tree" 0 $?
run diff -r "$inc" "$tmp/inc2"; check_rc "diff -r of the exported tree" 0 $?

# ---- removing: the objects go with the last name
run rm -r "$m/inc"; check_rc "rm -r the tree" 0 $?
same "objects after rm -r of the tree" "$(all_objects)" "$before"
run rm "$m/sizes/f5255225"; check_rc "rm a 5 MiB file" 0 $?
same "objects after rm of a 5 MiB file" "$(all_objects)" "13 8 5"
# an open file removed keeps its bytes until the last close
exec 7<"$m/sizes/f131072"
run rm "$m/sizes/f131072"; check_rc "rm of an open file" 0 $?
run sh -c "cmp - '$src/f131072' <&7"; check_rc "an open file read after its rm" 0 $?
exec 7<&-
sleep 0.5
same "objects after the last close" "$(all_objects)" "12 7 5"
# mv over a file removes the one replaced
run mv "$m/sizes/f65537" "$m/sizes/f1"; check_rc "mv over a file" 0 $?
same "objects after mv over a file" "$(all_objects)" "11 7 5"
run cmp "$src/f65537" "$m/sizes/f1"; check_rc "cmp after mv" 0 $?
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster after the removals" 0 $?
contains "fsck --cluster clean" "$tmp/out" "cluster clean"

# ---- the write-behind's runs in flight on every data server at once, and the read-ahead
# (docs/cluster.md, "arf mount on a cluster"): rewrites inside a file read before, sizes
# raised only once the runs are answered, and what was read ahead never hides a write,
# ours or another client's
head -c $((40 * U + 777)) /dev/urandom >"$tmp/big"
run dd if="$tmp/big" of="$m/big" bs=1M; check_rc "dd bs=1M (runs in flight)" 0 $?
run cmp "$tmp/big" "$m/big"; check_rc "cmp after dd bs=1M" 0 $?
same "size after dd bs=1M" "$(stat -c %s "$m/big")" $((40 * U + 777))
# read part of it (read-ahead started), rewrite bytes ahead of the reader through the mount,
# read on through one descriptor: the new bytes
head -c $((3 * U)) /dev/urandom >"$tmp/patch"
cp "$tmp/big" "$tmp/bigref"
dd if="$tmp/patch" of="$tmp/bigref" bs=$U seek=20 conv=notrunc 2>/dev/null
run sh -c "exec 3<'$m/big'; dd bs=$U count=10 <&3 >/dev/null 2>&1 &&
	dd if='$tmp/patch' of='$m/big' bs=$U seek=20 conv=notrunc 2>/dev/null &&
	{ head -c $((10 * U)) '$tmp/bigref'; cat <&3; } >'$tmp/bigread'"
check_rc "read, rewrite ahead of the reader, read on" 0 $?
run cmp "$tmp/bigref" "$tmp/bigread"; check_rc "the reader sees the rewrite" 0 $?
# another client (arf import over the file) while this mount has read ahead of a reader
mkdir "$tmp/imp"
head -c $((40 * U + 777)) /dev/urandom >"$tmp/imp/big"
run sh -c "head -c $((5 * U)) '$m/big' >/dev/null"; check_rc "read the head" 0 $?
run "$BUILD/arf" import "$tmp/imp" "$M:/"; check_rc "import over the file" 0 $?
run cmp "$tmp/imp/big" "$m/big"; check_rc "the mount sees another client's bytes" 0 $?
# a write past the end inside a queue (a hole, zeros) and one that extends it
cp "$tmp/imp/big" "$tmp/bigref"
run sh -c "dd if='$tmp/patch' of='$m/big' bs=1000 seek=3000 conv=notrunc 2>/dev/null &&
	dd if='$tmp/patch' of='$m/big' bs=1000 seek=1 count=5 conv=notrunc 2>/dev/null"
check_rc "writes past the end and inside" 0 $?
dd if="$tmp/patch" of="$tmp/bigref" bs=1000 seek=3000 conv=notrunc 2>/dev/null
dd if="$tmp/patch" of="$tmp/bigref" bs=1000 seek=1 count=5 conv=notrunc 2>/dev/null
run cmp "$tmp/bigref" "$m/big"; check_rc "cmp after writes past the end" 0 $?

# ---- the read-ahead keeps requests in flight between reads, and another client writes
# into them.  A second mount of the cluster writes 3 stripes at stripe 28 while a reader of
# this one has read 10: past what the kernel read on its own (it asked for 14 here, and
# reads ahead at most 1 MiB, 16 stripes, past the reader), within what this mount has read
# ahead (32 stripes past the kernel's last read, refilled at half).  Close-to-open, as the
# kernel's attributes (docs/cluster.md, "Reads and the size"): the reader reads on through
# the same descriptor once attr_timeout (1 s) has passed, across the refill, and gets the
# new bytes; and a reader that opens the file again at once gets them through the new
# descriptor while the old one is still open (with the file's version not asked again
# after an open, it gets the old ones).
head -c $((100 * U)) /dev/urandom >"$tmp/ra"
run cp "$tmp/ra" "$m/ra"; check_rc "cp a 100-stripe file" 0 $?
mkdir "$mnt2"
"$BUILD/arf" mount "$M" "$mnt2" -f 2>"$tmp/mount2.log" &
mpid2=$!
if wait_mounted "$mpid2" "$mnt2"; then ok; else bad "a second mount"; sed 's/^/  | /' "$tmp/mount2.log"; fi
cp "$tmp/ra" "$tmp/raref"
dd if="$tmp/patch" of="$tmp/raref" bs=$U seek=28 conv=notrunc 2>/dev/null
run sh -c "exec 3<'$m/ra'; dd bs=$U count=10 <&3 >/dev/null 2>&1 &&
	dd if='$tmp/patch' of='$mnt2/ra' bs=$U seek=28 conv=notrunc 2>/dev/null && sleep 1.2 &&
	{ head -c $((10 * U)) '$tmp/raref'; cat <&3; } >'$tmp/raread'"
check_rc "read, another client writes ahead of the reader, read on after 1 s" 0 $?
run cmp "$tmp/raref" "$tmp/raread"; check_rc "the reader sees the other client's write" 0 $?
head -c $U /dev/urandom >"$tmp/rand1"
cp "$tmp/raref" "$tmp/raref2"
dd if="$tmp/rand1" of="$tmp/raref2" bs=$U seek=29 count=1 conv=notrunc 2>/dev/null
run sh -c "exec 3<'$m/ra'; dd bs=$U count=10 <&3 >/dev/null 2>&1 &&
	dd if='$tmp/rand1' of='$mnt2/ra' bs=$U seek=29 count=1 conv=notrunc 2>/dev/null &&
	dd if='$m/ra' bs=$U skip=10 of='$tmp/raread2' 2>/dev/null && exec 3<&-"
check_rc "read, another client writes ahead, open again at once" 0 $?
run cmp "$tmp/raread2" "$tmp/raref2" 0 $((10 * U))
check_rc "a new open sees the other client's write at once" 0 $?
cp "$tmp/raref2" "$tmp/raref"
# the other mount rewrites stripes while two readers here go through the file in order
# (reads that meet requests in flight, answered or not, of the file's version before):
# no error and no hang; once the writer is done, a read here shows all its bytes
cp "$tmp/raref" "$tmp/ra2ref"
for i in 1 2 3 4 5 6 7 8; do
	dd if="$tmp/patch" of="$tmp/ra2ref" bs=$U seek=$((i * 11)) conv=notrunc 2>/dev/null
done
timeout "$T" sh -c "for i in 1 2 3 4 5 6 7 8; do
	dd if='$tmp/patch' of='$mnt2/ra' bs=$U seek=\$((i * 11)) conv=notrunc 2>/dev/null || exit 1
done" &
_w=$!
timeout "$T" sh -c "for i in 1 2 3; do cat '$m/ra' >/dev/null || exit 1; done" 2>"$tmp/r1.err" &
_r1=$!
timeout "$T" sh -c "for i in 1 2 3; do dd if='$m/ra' bs=100000 2>/dev/null >/dev/null || exit 1; done" 2>"$tmp/r2.err" &
_r2=$!
wait "$_w"; check_rc "the other client's rewrites" 0 $?
wait "$_r1"; check_rc "a reader (cat) during the rewrites" 0 $?
wait "$_r2"; check_rc "a reader (dd bs=100000) during the rewrites" 0 $?
run cmp "$tmp/ra2ref" "$m/ra"; check_rc "after the rewrites: the other client's bytes" 0 $?
# appends from both clients at once to one file (O_APPEND, one write a record, records of
# 40 bytes to 70 KB, so many cross a stripe edge): every record lands whole, none on another
# (each client's range is taken at the metadata server under the inode's lock: extend)
appender() {  # appender FILE TAG: 120 records, one os.write each
	python3 - "$1" "$2" <<'PY'
import os, sys, random
path, tag = sys.argv[1], sys.argv[2]
rnd = random.Random(tag)
fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for i in range(120):
    n = 70000 if i % 17 == 0 else rnd.randrange(40, 3000)
    head = "%s %04d %06d " % (tag, i, n)
    rec = (head + (tag * n))[:n - 1] + "\n"
    assert os.write(fd, rec.encode()) == n
os.close(fd)
PY
}
checkrecs() {  # checkrecs FILE: every record whole (its length and fill), each tag's 0..119 once
	python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read().decode()
seen, bad = {}, 0
for line in data.split("\n")[:-1]:
    tag, i, n = line.split(" ")[:3]
    rec = line + "\n"
    want = ("%s %s %s " % (tag, i, n) + tag * int(n))[:int(n) - 1] + "\n"
    if rec != want:
        bad += 1
    seen[(tag, int(i))] = seen.get((tag, int(i)), 0) + 1
ok = bad == 0 and sorted(seen) == [(t, i) for t in "ab" for i in range(120)] and set(seen.values()) == {1}
print("ok" if ok else "bad records %d, records %d" % (bad, len(seen)))
PY
}
run touch "$m/app"; check_rc "touch the appended file" 0 $?
appender "$m/app" a 2>"$tmp/app1.err" &
_a1=$!
appender "$mnt2/app" b 2>"$tmp/app2.err" &
_a2=$!
wait "$_a1"; check_rc "appends of the first client" 0 $?
wait "$_a2"; check_rc "appends of the second client, at the same time" 0 $?
same "every record of both clients whole and once" "$(checkrecs "$m/app")" ok
same "... also read through the other client" "$(checkrecs "$mnt2/app")" ok
run fusermount3 -u "$mnt2"; check_rc "umount the second mount" 0 $?
wait "$mpid2"; check_rc "the second arf mount exits 0" 0 $?
mpid2=

# ---- a data server stopped in the middle of a write: the error reaches the writer (at a
# later write, at fsync or at close) within the cluster's timeout, never a hang.  Server 3
# is stopped (later checks need 1); the writer's bytes span all three.
stop_write() {   # $1: dd's conv= (fsync, or notrunc: the close reports)
	rm -f "$m/stopped"
	{ head -c $((20 * U)) "$tmp/big"; sleep 2; head -c $((40 * U)) "$tmp/big"; } |
		timeout 40 dd of="$m/stopped" bs=$U iflag=fullblock conv="$1" 2>"$tmp/dd.err" &
	_dd=$!
	sleep 1
	kill -STOP "$pid_3"
	_t0=$(date +%s)
	wait "$_dd"; _rc=$?
	_el=$(($(date +%s) - _t0))
	kill -CONT "$pid_3"
	if [ $_rc -ne 0 ] && [ $_rc -ne 124 ]; then ok; else bad "dd conv=$1 with a data server stopped: exit status $_rc"; fi
	if [ "$_el" -le 20 ]; then ok; else bad "dd conv=$1 with a data server stopped took $_el s"; fi
	contains "dd conv=$1: EIO" "$tmp/dd.err" "Input/output error"
}
stop_write fsync
stop_write notrunc
# the server is back: after the mount's retry time (10 s) it is asked again
sleep 11
run dd if="$tmp/big" of="$m/after" bs=1M conv=fsync; check_rc "write once the server is back" 0 $?
run cmp "$tmp/big" "$m/after"; check_rc "cmp once the server is back" 0 $?

# ---- a data server stopped, then killed, under a reader whose read-ahead has requests on
# it: the reader gets EIO within 12 s of the kill (the session rides a broken connection 5
# s; an unanswered request is an error after 8 s), not a hang.  The reader takes 8
# stripes a step, so its read-ahead asks the stopped server for more.
timeout 40 sh -c "exec 3<'$m/ra'; for i in \$(seq 12); do
	dd bs=$U count=8 <&3 >/dev/null || exit 1; sleep 0.3; done" 2>"$tmp/ra.err" &
_rdr=$!
sleep 0.5
kill -STOP "$pid_2"
sleep 1
kill -KILL "$pid_2"
kill -CONT "$pid_2" 2>/dev/null
wait "$pid_2" 2>/dev/null
t0=$(date +%s)
wait "$_rdr"; rc=$?
el=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then ok; else bad "read-ahead with a data server killed: exit status $rc"; fi
if [ "$el" -le 12 ]; then ok; else bad "read-ahead with a data server killed took $el s"; sed 's/^/  | /' "$tmp/mount.log"; fi
contains "read-ahead with a data server killed: EIO" "$tmp/ra.err" "Input/output error"

# ---- a dead data server: EIO within 10 s, not a hang; files with no bytes there still read
t0=$(date +%s)
run cat "$m/sizes/dd"; rc=$?
el=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then ok; else bad "read with a data server killed: exit status $rc"; fi
if [ "$el" -le 10 ]; then ok; else bad "read with a data server killed took $el s"; sed 's/^/  | /' "$tmp/mount.log"; fi
contains "EIO" "$tmp/err" "Input/output error"
run cmp "$src/f4096" "$m/sizes/f4096"; check_rc "a file with no bytes on the dead server" 0 $?
t0=$(date +%s)
run dd if="$tmp/big" of="$m/dead" bs=1M conv=fsync; rc=$?
el=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then ok; else bad "write with a data server killed: exit status $rc"; fi
if [ "$el" -le 10 ]; then ok; else bad "write with a data server killed took $el s"; fi
contains "write: EIO" "$tmp/err" "Input/output error"

run fusermount3 -u "$mnt"; check_rc "umount" 0 $?
wait "$mpid"; check_rc "arf mount exits 0" 0 $?
mpid=

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
