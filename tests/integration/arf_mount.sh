#!/bin/sh
# arf_mount.sh: `arf mount` (the FUSE client) on a real image served by arfd --arf, driven
# with plain shell tools: mkdir -p, create, mkfifo, ls -la (names, types), stat, statfs,
# data (write, overwrite, append, truncate, holes), fsync, chmod/chown/touch and the
# kernel's permission checks, two clients (close-to-open, also after queued writes), ENOSPC
# of queued writes at a write, close or fsync (each descriptor told once), rm, rmdir, the errors the tools
# print (EEXIST, ENOTEMPTY, ENOENT, EPERM for a device), a
# directory of 1000 entries listed completely, reads riding through a kill -9 of arfd and
# its restart 2 s later, arf umount, the daemonized mount, and fsck
# clean at the end.  Where FUSE cannot be used (no /dev/fuse, no permission to mount) it
# says why and counts nothing.
#
#   BUILD=build sh tests/integration/arf_mount.sh     prints "N passed, N failed" last
#   CLUSTER=3 BUILD=build sh tests/integration/arf_mount.sh   the same on a cluster
# CLUSTER=N: the image is a cluster's metadata server's and N more arfd serve data images
# of 16M (docs/cluster.md), stripe unit CLUSTER_UNIT (64K), so most files span
# every server; the kill -9 is the metadata server's; fsck --cluster at the end as well.
# Every call is bounded by `timeout`; on exit the mounts are undone and whatever was started
# is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-20}
mpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_mount.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	for d in "$mnt" "$tmp/mnt2" "$tmp/mntwb" "$tmp/mntq" "$tmp/mntz"; do
		if awk -v m="$d" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
			fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null
		fi
	done
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for _p in $dpids; do kill -KILL "$_p" 2>/dev/null; done
	# never recurse into a mount that is still there
	if mounted || grep -qF " $tmp/mnt2 " /proc/mounts; then echo "arf_mount.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

skip() {
	echo "arf_mount.sh: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "arf_mount.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
[ -c /dev/fuse ] || skip "no /dev/fuse here (modprobe fuse, or a container without the device)"
{ [ -r /dev/fuse ] && [ -w /dev/fuse ]; } || skip "/dev/fuse is not readable and writable by $(id -un)"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 not installed (scripts/deps.sh installs fuse3)"

img=$tmp/fs.img
dpids= deps=
k=0
while [ "$k" -lt "${CLUSTER:-0}" ]; do
	k=$((k + 1))
	# 16M each: the 64 MiB the ENOSPC checks below write fill the cluster as they fill the
	# 32M image of one server
	run "$BUILD/arf" mkfs "$tmp/data$k.img" --size 16M; check_rc "mkfs of data server $k" 0 $?
	start_arfd "$tmp/arfd.data$k.log" --arf "$tmp/data$k.img"
	if [ -z "$ep" ]; then
		bad "data server $k did not start:"; cat "$tmp/arfd.data$k.log"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	dpids="$dpids $pid" deps="$deps $ep"
done
pid=
run "$BUILD/arf" mkfs "$img" --size 32M; check_rc mkfs 0 $?

start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
if [ -n "$deps" ]; then
	# shellcheck disable=SC2086  # deps are several endpoints
	run "$BUILD/arf" cluster init --stripe-unit "${CLUSTER_UNIT:-64K}" "$ep" $deps
	check_rc "arf cluster init" 0 $?
fi

# wait until the mount shows (or the mounting process died): 0 when mounted
wait_mounted() {
	for _ in $(seq 100); do
		mounted && return 0
		[ -n "$1" ] && ! kill -0 "$1" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

mkdir "$mnt"
# the kernel caches nothing (timeouts 0): every step below reaches the server
"$BUILD/arf" mount "$ep" "$mnt" -f -o attr_timeout=0,entry_timeout=0 2>"$tmp/mount.log" &
mpid=$!
if ! wait_mounted "$mpid"; then
	if grep -qiE "fuse: device not found|permission denied|operation not permitted|fusermount3: mount failed" "$tmp/mount.log"; then
		cat "$tmp/mount.log"
		skip "FUSE is present but this environment may not mount it (see the message above)"
	fi
	bad "arf mount -f did not mount:"; sed 's/^/  | /' "$tmp/mount.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok
m=$mnt

# the root, statfs
run stat -c '%i %F' "$m"; check_rc "stat root" 0 $?
same "root inode" "$(cat "$tmp/out")" "1 directory"
run stat -f -c '%S %b %l' "$m"; check_rc "statfs" 0 $?
# (a cluster: the data servers' blocks, CLUSTER of them of 16M)
same "statfs bsize blocks namemax" "$(cat "$tmp/out")" "4096 $((${CLUSTER:-0} ? CLUSTER * 4096 : 8192)) 255"
run ls -a "$m"; check_rc "ls root" 0 $?
same "root entries" "$(tr '\n' ' ' <"$tmp/out")" \
	"$([ -n "$deps" ] && echo ". .. .arf-cluster lost+found " || echo ". .. lost+found ")"

# make: mkdir -p, a file by create, a file by touch, a fifo
run mkdir -p "$m/a/b/c"; check_rc "mkdir -p" 0 $?
if [ -d "$m/a/b/c" ]; then ok; else bad "a/b/c is not a directory"; fi
run sh -c ": > '$m/a/file'"; check_rc "create by redirection" 0 $?
run touch "$m/a/touched"; check_rc touch 0 $?
if [ -f "$m/a/touched" ]; then ok; else bad "touch did not create a/touched"; fi
run mkfifo -m 644 "$m/a/fifo"; check_rc mkfifo 0 $?

# ls -la: names and types
run ls -la "$m/a"; check_rc "ls -la" 0 $?
types=$(awk 'NR > 1 { print substr($1, 1, 1) $NF }' "$tmp/out" | sort | tr '\n' ' ')
same "ls -la types and names" "$types" "-file -touched d. d.. db pfifo "

# stat
run stat -c '%F %h %s %a' "$m/a/b"; check_rc "stat dir" 0 $?
same "stat a/b" "$(cat "$tmp/out")" "directory 3 4096 755"
run stat -c '%F %h %s' "$m/a/file"; check_rc "stat file" 0 $?
same "stat a/file" "$(cat "$tmp/out")" "regular empty file 1 0"
run stat -c '%F %a' "$m/a/fifo"; check_rc "stat fifo" 0 $?
same "stat a/fifo" "$(cat "$tmp/out")" "fifo 644"
same "owner" "$(stat -c '%u:%g' "$m/a/file")" "$(id -u):$(id -g)"

# errors, as the tools print them
run mkdir "$m/a"; check_rc "mkdir existing" 1 $?
contains "mkdir existing" "$tmp/err" "File exists"
run rmdir "$m/a"; check_rc "rmdir non-empty" 1 $?
contains "rmdir non-empty" "$tmp/err" "Directory not empty"
run rm "$m/a/nothing"; check_rc "rm missing" 1 $?
contains "rm missing" "$tmp/err" "No such file or directory"
run rmdir "$m/a/file"; check_rc "rmdir a file" 1 $?
contains "rmdir a file" "$tmp/err" "Not a directory"

# devices and sockets are stored (an inode with a type and a device number); the mount
# is nodev (libfuse's default), so opening a device node never reaches this machine's
# device
run mknod -m 666 "$m/a/null" c 1 3; check_rc "mknod a character device" 0 $?
run mknod -m 660 "$m/a/disk" b 7 129; check_rc "mknod a block device" 0 $?
same "devices: type and number" "$(stat -c '%F %t:%T %a' "$m/a/null" "$m/a/disk" | tr '\n' ' ')" \
	"character special file 1:3 666 block special file 7:81 660 "
if awk -v m="$m" '$2 == m && $4 ~ /(^|,)nodev(,|$)/ { f = 1 } END { exit !f }' /proc/mounts; then
	ok
else
	bad "the mount is not nodev: $(awk -v m="$m" '$2 == m' /proc/mounts)"
fi
run cat "$m/a/null"; check_rc "read of a device node on a nodev mount" 1 $?
contains "open of a device node on a nodev mount" "$tmp/err" "Permission denied"
timeout "$T" python3 -c '
import os, socket, stat, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.close()
print(stat.S_ISSOCK(os.lstat(sys.argv[1]).st_mode))' "$m/a/sock" >"$tmp/out" 2>&1
same "bind of a Unix socket" "$(cat "$tmp/out")" "True"
run rm "$m/a/null" "$m/a/disk" "$m/a/sock"; check_rc "rm devices and a socket" 0 $?
# tar x of a tree holding devices and a fifo (as a root filesystem or a container image
# has them): the same types, numbers and modes
mkdir -p "$tmp/devtree/dev"
if mknod -m 666 "$tmp/devtree/dev/null" c 1 3 2>/dev/null; then
	mknod -m 660 "$tmp/devtree/dev/sda" b 8 0
	mknod -m 640 "$tmp/devtree/dev/tty9" c 4 9
	mkfifo -m 600 "$tmp/devtree/dev/initctl"
	echo hello >"$tmp/devtree/etc-file"
	(cd "$tmp/devtree" && tar cf "$tmp/devtree.tar" .)
	mkdir "$m/root"
	run tar xpf "$tmp/devtree.tar" -C "$m/root"; check_rc "tar x of a tree with devices" 0 $?
	same "the devices after tar x" \
		"$(cd "$m/root" && find . -print0 | sort -z | xargs -0 stat -c '%n %F %t:%T %a' | tr '\n' ' ')" \
		"$(cd "$tmp/devtree" && find . -print0 | sort -z | xargs -0 stat -c '%n %F %t:%T %a' | tr '\n' ' ')"
	run rm -r "$m/root"; check_rc "rm the unpacked tree" 0 $?
fi

# data: write, read back, overwrite in the middle, append, truncate both ways
head -c 3000000 /dev/urandom >"$tmp/rand"
run cp "$tmp/rand" "$m/a/rand"; check_rc "cp 3 MB in" 0 $?
if cmp -s "$tmp/rand" "$m/a/rand"; then ok; else bad "3 MB file read back differs"; fi
same "size of the copy" "$(stat -c %s "$m/a/rand")" 3000000
printf 'ABCDEFGH' | dd of="$tmp/rand" bs=1 seek=1234567 conv=notrunc 2>/dev/null
printf 'ABCDEFGH' | timeout "$T" dd of="$m/a/rand" bs=1 seek=1234567 conv=notrunc 2>/dev/null
if cmp -s "$tmp/rand" "$m/a/rand"; then ok; else bad "overwrite in the middle differs"; fi
printf 'tail\n' >>"$tmp/rand"
run sh -c "printf 'tail\n' >> '$m/a/rand'"; check_rc append 0 $?
if cmp -s "$tmp/rand" "$m/a/rand"; then ok; else bad "append differs"; fi
run truncate -s 100 "$m/a/rand"; check_rc "truncate down" 0 $?
same "truncated content" "$(head -c 100 "$tmp/rand" | md5sum)" "$(md5sum <"$m/a/rand")"
run truncate -s 10000 "$m/a/rand"; check_rc "truncate up" 0 $?
{ head -c 100 "$tmp/rand"; head -c 9900 /dev/zero; } >"$tmp/want"
if cmp -s "$tmp/want" "$m/a/rand"; then ok; else bad "truncate up: not zeros past the old end"; fi
run sh -c "printf data > '$m/a/file'"; check_rc "write by redirection" 0 $?
same "a/file" "$(cat "$m/a/file")" "data"
run sh -c "printf new > '$m/a/file'"; check_rc "O_TRUNC rewrite" 0 $?
same "a/file after O_TRUNC" "$(cat "$m/a/file")" "new"

# four writers of one file at once (disjoint 1 MiB pieces): an operation that finds the
# inode locked is run again by the client, never an EAGAIN from write(2) or a lost piece
head -c 4194304 /dev/urandom >"$tmp/four"
: >"$m/a/four"
ddpids=
for i in 0 1 2 3; do
	timeout "$T" dd if="$tmp/four" of="$m/a/four" bs=1M skip=$i seek=$i count=1 conv=notrunc \
		2>"$tmp/dd$i" &
	ddpids="$ddpids $!"
done
for p in $ddpids; do wait "$p"; done   # (a bare wait would wait for arfd too)
if cmp -s "$tmp/four" "$m/a/four"; then ok; else bad "four concurrent writers: content differs"; cat "$tmp"/dd?; fi
rm -f "$m/a/four"

# a sparse file: 1 GiB with a few blocks written; holes read as zeros and own no blocks
run dd if="$tmp/rand" of="$m/a/sparse" bs=4096 count=1 seek=262143 conv=notrunc 2>/dev/null
check_rc "dd far out" 0 $?
same "sparse size" "$(stat -c %s "$m/a/sparse")" 1073741824
if [ "$(stat -c %b "$m/a/sparse")" -le 64 ]; then ok; else bad "sparse file owns $(stat -c %b "$m/a/sparse") sectors"; fi
same "a hole reads as zeros" "$(dd if="$m/a/sparse" bs=4096 skip=1000 count=2 2>/dev/null | tr -d '\0' | wc -c)" 0
same "the written block" "$(dd if="$m/a/sparse" bs=4096 skip=262143 2>/dev/null | md5sum)" "$(head -c 4096 "$tmp/rand" | md5sum)"
run rm "$m/a/sparse"; check_rc "rm sparse" 0 $?

# fsync reaches the server's msync (sync FILE calls fsync; conv=fsync too)
run sync "$m/a/rand"; check_rc "fsync a file" 0 $?
run sync "$m/a"; check_rc "fsync a directory" 0 $?
run dd if=/dev/zero of="$m/a/synced" bs=64k count=16 conv=fsync 2>/dev/null; check_rc "dd conv=fsync" 0 $?

# attributes: chmod, chown, times, and the kernel checks permissions against them
run chmod 640 "$m/a/file"; check_rc chmod 0 $?
same "mode after chmod" "$(stat -c %a "$m/a/file")" 640
if [ "$(id -u)" -eq 0 ]; then
	run chown 1234:5678 "$m/a/file"; check_rc chown 0 $?
	same "owner after chown" "$(stat -c %u:%g "$m/a/file")" "1234:5678"
	run chown 0:0 "$m/a/file"; check_rc "chown back" 0 $?
	run chmod 600 "$m/a/file"; check_rc "chmod 600" 0 $?
	if command -v setpriv >/dev/null 2>&1; then
		run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$m/a/file"
		check_rc "cat of a 600 root file as nobody" 1 $?
		contains "cat as nobody" "$tmp/err" "Permission denied"
	fi
fi
run touch -d '2001-02-03 04:05:06.5 UTC' "$m/a/file"; check_rc "touch -d" 0 $?
same "mtime after touch -d" "$(TZ=UTC stat -c %y "$m/a/file")" "2001-02-03 04:05:06.500000000 +0000"
run touch -a -d '2002-01-01 00:00:00 UTC' "$m/a/file"; check_rc "touch -a -d" 0 $?
same "atime after touch -a" "$(TZ=UTC stat -c %x "$m/a/file")" "2002-01-01 00:00:00.000000000 +0000"
same "mtime kept by touch -a" "$(TZ=UTC stat -c %y "$m/a/file")" "2001-02-03 04:05:06.500000000 +0000"

# remove
run rm "$m/a/file" "$m/a/fifo" "$m/a/touched" "$m/a/rand" "$m/a/synced"; check_rc rm 0 $?
run rmdir "$m/a/b/c"; check_rc rmdir 0 $?
run ls -A "$m/a"; check_rc "ls after rm" 0 $?
same "left in a" "$(tr '\n' ' ' <"$tmp/out")" "b "
if [ -e "$m/a/file" ]; then bad "a/file still there"; else ok; fi

# 1000 entries (files and directories), listed completely and exactly once
run mkdir "$m/big"; check_rc "mkdir big" 0 $?
timeout 120 sh -c "i=0; while [ \$i -lt 1000 ]; do
	if [ \$((i % 10)) -eq 0 ]; then mkdir '$m/big/entry-'\$i || exit 1
	else : > '$m/big/entry-'\$i || exit 1; fi
	i=\$((i + 1)); done" >"$tmp/out" 2>"$tmp/err"
check_rc "make 1000 entries" 0 $?
seq 0 999 | sed 's/^/entry-/' | sort >"$tmp/want"
timeout "$T" ls -f "$m/big" | grep -v '^\.\.\?$' | sort >"$tmp/got"
if cmp -s "$tmp/want" "$tmp/got"; then ok; else bad "ls of 1000 entries: $(wc -l <"$tmp/got") names, $(sort -u "$tmp/got" | wc -l) distinct"; fi
same "ls -fa count" "$(timeout "$T" ls -fa "$m/big" | wc -l)" 1002
same "directories among them" "$(timeout "$T" find "$m/big" -mindepth 1 -type d | wc -l)" 100
same "nlink of big" "$(stat -c %h "$m/big")" 102
run rm -r "$m/big"; check_rc "rm -r big" 0 $?
if [ -e "$m/big" ]; then bad "big still there"; else ok; fi

# symlinks, hard links, rename
printf 'linked\n' >"$m/a/target"
run ln -s target "$m/a/sym"; check_rc "ln -s" 0 $?
same "readlink" "$(readlink "$m/a/sym")" "target"
same "through the symlink" "$(cat "$m/a/sym")" "$(cat "$m/a/target")"
same "symlink type and size" "$(stat -c '%F %s' "$m/a/sym")" "symbolic link 6"
long=$(printf 'x%.0s' $(seq 1 300))
run ln -s "$long" "$m/a/longsym"; check_rc "ln -s (300-byte target)" 0 $?
same "long target" "$(readlink "$m/a/longsym")" "$long"
run ln "$m/a/target" "$m/a/hard"; check_rc "ln" 0 $?
same "nlink after ln" "$(stat -c %h "$m/a/target")" 2
same "same inode" "$(stat -c %i "$m/a/hard")" "$(stat -c %i "$m/a/target")"
run ln "$m/a/b" "$m/a/dirlink"; check_rc "ln of a directory" 1 $?
run mv "$m/a/hard" "$m/a/b/moved"; check_rc "mv across directories" 0 $?
same "moved content" "$(cat "$m/a/b/moved")" "$(cat "$m/a/target")"
if [ -e "$m/a/hard" ]; then bad "old name still there after mv"; else ok; fi
run rm "$m/a/b/moved"; check_rc "rm of one of two links" 0 $?
same "nlink after rm" "$(stat -c %h "$m/a/target")" 1
same "content kept by the other link" "$(cat "$m/a/target")" "linked"
run mkdir -p "$m/r1/sub" "$m/r2"; check_rc "mkdir for rename" 0 $?
printf one >"$m/r1/sub/f"
run mv "$m/r1/sub" "$m/r2/sub2"; check_rc "mv a directory" 0 $?
same "moved directory's file" "$(cat "$m/r2/sub2/f")" "one"
same "nlink of the old parent" "$(stat -c %h "$m/r1")" 2
same "nlink of the new parent" "$(stat -c %h "$m/r2")" 3
same "'..' of the moved directory" "$(stat -c %i "$m/r2/sub2/..")" "$(stat -c %i "$m/r2")"
run mv "$m/r2" "$m/r2/sub2/inside"; check_rc "mv a directory into itself" 1 $?
contains "mv into itself" "$tmp/err" "to a subdirectory of itself"
printf two >"$m/r1/g"
run mv -T "$m/r1/g" "$m/r2/sub2/f"; check_rc "mv over an existing file" 0 $?
same "replaced content" "$(cat "$m/r2/sub2/f")" "two"
printf three >"$m/r1/h"
run mv --no-clobber "$m/r1/h" "$m/r2/sub2/f"; check_rc "mv -n" 0 $?
same "mv -n kept the target" "$(cat "$m/r2/sub2/f")" "two"
if command -v python3 >/dev/null 2>&1; then
	# renameat2 RENAME_EXCHANGE (glibc has no wrapper the shell can reach; os.rename cannot)
	printf 'AAA' >"$m/r1/x"; printf 'BBB' >"$m/r1/y"
	timeout "$T" python3 - "$m/r1/x" "$m/r1/y" >"$tmp/out" 2>"$tmp/err" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
r = libc.renameat2(AT_FDCWD, sys.argv[1].encode(), AT_FDCWD, sys.argv[2].encode(), 2)
sys.exit(0 if r == 0 else ctypes.get_errno())
PY
	check_rc "renameat2 RENAME_EXCHANGE" 0 $?
	same "exchanged" "$(cat "$m/r1/x")$(cat "$m/r1/y")" "BBBAAA"
fi
run rm -r "$m/r1" "$m/r2" "$m/a/sym" "$m/a/longsym" "$m/a/target"; check_rc "rm -r after renames" 0 $?

# a file unlinked while open keeps its data until the last close (POSIX); meanwhile it is
# not visible under its name and reports no link
if command -v python3 >/dev/null 2>&1; then
	timeout "$T" python3 - "$m/a" >"$tmp/out" 2>"$tmp/err" <<'PY'
import os, sys
d = sys.argv[1]
p = os.path.join(d, "tmpfile")
fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.unlink(p)
gone = not os.path.exists(p)
os.write(fd, b"kept until close")
st = os.fstat(fd)
os.lseek(fd, 0, 0)
data = os.read(fd, 100)
fd2 = os.open(os.path.join(d, "tmpfile2"), os.O_CREAT | os.O_RDWR, 0o600)
os.unlink(os.path.join(d, "tmpfile2"))
os.close(fd2)
os.close(fd)
print(gone, st.st_nlink, st.st_size, data.decode())
PY
	check_rc "unlink of an open file" 0 $?
	same "open-unlinked file" "$(cat "$tmp/out")" "True 0 16 kept until close"
	for _ in $(seq 50); do
		[ -z "$(ls -A "$m/a" | grep '^\.arf-hidden')" ] && break
		sleep 0.1
	done
	same "nothing left after the last close" "$(ls -A "$m/a" | grep -c '^\.arf-hidden')" 0
fi

# -o writeback: the kernel caches writes and sends them in the background; what a close
# or fsync returned is on the server
mw=$tmp/mntwb
mkdir "$mw"
if timeout "$T" "$BUILD/arf" mount "$ep" "$mw" -o writeback 2>"$tmp/err"; then
	head -c 5000000 /dev/urandom >"$tmp/wb"
	run dd if="$tmp/wb" of="$mw/a/wb" bs=64k conv=fsync; check_rc "dd through writeback" 0 $?
	if cmp -s "$tmp/wb" "$m/a/wb"; then ok; else bad "writeback: the other mount reads different bytes"; fi
	printf 'x' | dd of="$mw/a/wb" bs=1 seek=100 conv=notrunc 2>/dev/null
	same "a partial page written back" "$(dd if="$m/a/wb" bs=1 skip=100 count=1 2>/dev/null)" "x"
	rm -f "$mw/a/wb"
	# the kernel sends a removed file's new ctime after the unlink or the rename over it: no
	# error for the mount to keep, so syncfs (sync -f) succeeds
	printf 'one' >"$mw/a/wb1" && printf 'two' >"$mw/a/wb2" && mv "$mw/a/wb1" "$mw/a/wb2"
	run sync -f "$mw/a"; check_rc "syncfs after rm and mv over a file (writeback)" 0 $?
	[ -s "$tmp/err" ] && sed 's/^/  | /' "$tmp/err"
	same "the file moved over the other" "$(cat "$mw/a/wb2" 2>&1)" "one"
	rm -f "$mw/a/wb2"
	run sync -f "$mw/a"; check_rc "syncfs after rm (writeback)" 0 $?
	timeout "$T" "$BUILD/arf" umount "$mw"
else
	bad "mount -o writeback:"; sed 's/^/  | /' "$tmp/err"
fi

# -o noxattr: no xattrs through the mount (the kernel gets ENOSYS once and tells callers
# EOPNOTSUPP); files are made and appended to as usual, with no xattr run (for an ops
# segment without the xattr exports, e.g. an older build's in bench/fs --compare-segs)
mx=$tmp/mntnx
mkdir "$mx"
if timeout "$T" "$BUILD/arf" mount "$ep" "$mx" -o noxattr 2>"$tmp/err"; then
	same "setxattr under -o noxattr" "$(python3 -c '
import errno, os, sys
try:
    os.setxattr(sys.argv[1], "user.x", b"1")
    print("set")
except OSError as e:
    print("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, e.errno))' \
		"$mx/a" 2>&1)" EOPNOTSUPP
	printf 'one' >"$mx/a/nx" && printf 'two' >>"$mx/a/nx"
	same "a file made and appended to under -o noxattr" "$(cat "$m/a/nx" 2>&1)" "onetwo"
	rm -f "$mx/a/nx"
	timeout "$T" "$BUILD/arf" umount "$mx"
else
	bad "mount -o noxattr:"; sed 's/^/  | /' "$tmp/err"
fi

# xattrs the mount answers itself (docs/arf.md, "Mounting": inodes known to have none):
# through a mount that caches attributes, ls -l of 40 new files takes no getxattr run in
# arfd (without it, two per name: security.selinux, system.posix_acl_access); an xattr set
# through that mount is seen at once, also by listxattr; a default ACL set on a directory
# the mount knew without xattrs is inherited by a file made in it right after; and another
# mount sees an xattr set elsewhere once its attributes expired (attr_timeout=1)
mq=$tmp/mntq
mz=$tmp/mntz
mkdir "$mq" "$mz"
xa() {   # xa get|list|set|setacl PATH [NAME [VALUE]]: the value, the names, or the errno name
	timeout "$T" python3 -c '
import errno, os, sys
op, p = sys.argv[1], sys.argv[2]
# setfacl -m u:1000:r as a default ACL: user_obj rw-, user 1000 r--, group_obj r--, mask r--, other r--
acl = bytes([2, 0, 0, 0, 1, 0, 6, 0, 255, 255, 255, 255, 2, 0, 4, 0, 0xe8, 3, 0, 0,
             4, 0, 4, 0, 255, 255, 255, 255, 0x10, 0, 4, 0, 255, 255, 255, 255,
             0x20, 0, 4, 0, 255, 255, 255, 255])
try:
    if op == "get":
        print(os.getxattr(p, sys.argv[3]).decode(errors="replace"))
    elif op == "list":
        print(" ".join(sorted(os.listxattr(p))))
    elif op == "set":
        os.setxattr(p, sys.argv[3], sys.argv[4].encode())
        print("set")
    else:
        os.setxattr(p, "system.posix_acl_default", acl)
        print("set")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$@" 2>&1
}
if timeout "$T" "$BUILD/arf" mount "$ep" "$mq" -o attr_timeout=60,entry_timeout=60 2>"$tmp/err" &&
   timeout "$T" "$BUILD/arf" mount "$ep" "$mz" 2>>"$tmp/err"; then
	mkdir "$mq/nx"
	for i in $(seq 40); do : >"$mq/nx/f$i"; done
	# the count once the creates' releases (sent by the kernel after close returns) landed:
	# two reads 0.2 s apart that agree, at most 20 tries
	x0=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
	for _ in $(seq 20); do
		sleep 0.2
		x1=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
		[ "$x1" = "$x0" ] && break
		x0=$x1
	done
	n=$(ls -l "$mq/nx" | grep -c ' f[0-9]')
	x=$(( $("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p') - x0 ))
	same "ls -l of 40 files through a caching mount" "$n" 40
	if [ "$x" -le 5 ]; then ok; else bad "ls -l of 40 files without xattrs took $x runs in arfd (at most 5 expected: no getxattr run)"; fi
	ls -l "$mz/nx" >/dev/null      # the other mount notes the files too
	same "getxattr of a file without xattrs" "$(xa get "$mq/nx/f1" user.t)" ENODATA
	same "listxattr of a file without xattrs" "$(xa list "$mq/nx/f1")" ""
	same "setxattr through the caching mount" "$(xa set "$mq/nx/f1" user.t v1)" set
	same "getxattr right after, same mount" "$(xa get "$mq/nx/f1" user.t)" v1
	same "listxattr right after, same mount" "$(xa list "$mq/nx/f1")" user.t
	same "a default ACL on a directory known without xattrs" "$(xa setacl "$mq/nx")" set
	: >"$mq/nx/inherits"
	case $(xa get "$mq/nx/inherits" system.posix_acl_access) in
	ENODATA|ENOTSUP|EOPNOTSUPP) bad "a file made right after the default ACL has no access ACL";;
	*) ok;;
	esac
	# rm through the caching mount: the kernel's GETATTR of the directory before each unlink
	# is answered from unlinkattr's answer (one run a name, not two), and a change made
	# through the mount since is not hidden by it (nlink after an rmdir, then a mkdir)
	mkdir "$mq/rmd" "$mq/rmd/s1" "$mq/rmd/s2"
	for i in $(seq 40); do : >"$mq/rmd/g$i"; done
	x0=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
	rm "$mq"/rmd/g*
	x=$(( $("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p') - x0 ))
	# (a cluster's unlink looks the name up first, one run more a name: the objects of a
	# last link are removed after it, by the inode and generation that lookup gives)
	most=$((${CLUSTER:-0} ? 90 : 50))
	if [ "$x" -le "$most" ]; then ok; else bad "rm of 40 files took $x runs in arfd (at most $most expected: no getattr of their directory between the unlinks)"; fi
	same "the files are gone" "$(ls "$mq/rmd" | tr '\n' ' ')" "s1 s2 "
	# creates through the caching mount (untar's, mkdir's): the kernel's GETATTR of the
	# directory before each create is answered from the previous create's answer
	# (mknodattrs, mkdirattrs: the parent's attributes after it), and setattr's reply
	# from setattrattr's: per name a lookup and the create, per touch one run
	mkdir "$mq/mkd"
	x0=$("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p')
	for i in $(seq 40); do : >"$mq/mkd/c$i"; done
	(cd "$mq/mkd" && mkdir $(seq -f 'd%g' 40))
	touch -d @1000000000 "$mq"/mkd/c*
	x=$(( $("$BUILD/arc" stats "$ep" | sed -n 's/^exec.requests //p') - x0 ))
	# (a cluster's create makes the file's layout and objects: more runs a file)
	most=$((${CLUSTER:-0} ? 400 : 230))
	if [ "$x" -le "$most" ]; then ok; else bad "40 creates, 40 mkdirs and a touch of 40 files took $x runs in arfd (at most $most expected: no getattr of their directory between the creates, none after a setattr)"; fi
	same "nlink after 40 mkdirs" "$(stat -c %h "$mq/mkd")" 42
	same "entries after the creates" "$(ls "$mq/mkd" | wc -l)" 80
	same "mtime set by touch" "$(stat -c %Y "$mq/mkd/c7")" 1000000000
	: >"$mq/mkd/z"
	touch -d @1000000000 "$mq/mkd"
	same "mtime of a directory set right after a create in it" "$(stat -c %Y "$mq/mkd")" 1000000000
	: >"$mq/mkd/z2"
	chmod 700 "$mq/mkd"
	same "mode of a directory changed right after a create in it" "$(stat -c %a "$mq/mkd")" 700
	ln "$mq/mkd/z" "$mq/mkd/z3"
	ln -s z "$mq/mkd/z4"
	same "nlink of a file after ln" "$(stat -c %h "$mq/mkd/z")" 2
	same "directory mtime after ln, ln -s (not the touch's)" "$([ "$(stat -c %Y "$mq/mkd")" -gt 1000000000 ] && echo newer)" newer
	same "the other mount's view of the directory, its attributes expired" "$(sleep 1.5; stat -c %h "$mz/mkd")" 42
	rmdir "$mq/rmd/s1"
	same "nlink after rmdir" "$(stat -c %h "$mq/rmd")" 3
	mkdir "$mq/rmd/s3"
	same "nlink after rmdir, then mkdir (the kept attributes are stale)" "$(stat -c %h "$mq/rmd")" 4
	: >"$mq/rmd/s3/f"
	rm "$mq/rmd/s3/f"
	touch -d @1000000000 "$mq/rmd/s3"
	same "mtime set right after an unlink in the directory" "$(stat -c %Y "$mq/rmd/s3")" 1000000000
	sleep 1.5                      # past $mz's attr_timeout (1 s)
	same "another mount, its attributes expired" "$(xa get "$mz/nx/f1" user.t)" v1
	rm -rf "$mq/nx" "$mq/rmd" "$mq/mkd"
	timeout "$T" "$BUILD/arf" umount "$mz"
	timeout "$T" "$BUILD/arf" umount "$mq"
else
	bad "mounts for the xattr checks:"; sed 's/^/  | /' "$tmp/err"
fi

# two clients on one server, close-to-open: the second mount caches attributes and entries
# for a minute; a file written and closed by one is read whole by the other, also after it
# grew and shrank while the other had it cached
m2=$tmp/mnt2
mkdir "$m2"
"$BUILD/arf" mount "$ep" "$m2" -f -o attr_timeout=60,entry_timeout=60 2>"$tmp/mount2.log" &
m2pid=$!
mounted2() { awk -v m="$m2" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
for _ in $(seq 100); do mounted2 && break; kill -0 "$m2pid" 2>/dev/null || break; sleep 0.1; done
if mounted2; then
	ok
	printf 'first version\n' >"$m/a/shared"
	same "second client reads" "$(cat "$m2/a/shared")" "first version"
	seq 1 20000 >"$m/a/shared"
	same "second client sees it grown" "$(md5sum <"$m2/a/shared")" "$(seq 1 20000 | md5sum)"
	# 6 MiB in 1 MiB writes (several in flight, write-behind): the close waits for all of
	# them, so the other client's next open reads every byte
	head -c 6291456 /dev/urandom >"$tmp/six"
	dd if="$tmp/six" of="$m/a/shared" bs=1M status=none
	same "second client reads queued writes after close" "$(md5sum <"$m2/a/shared")" "$(md5sum <"$tmp/six")"
	printf 'short\n' >"$m/a/shared"
	same "second client sees it shrunk" "$(cat "$m2/a/shared")" "short"
	printf 'from two\n' >"$m2/a/shared2"
	same "first client reads the second's file" "$(cat "$m/a/shared2")" "from two"
	rm -f "$m/a/shared" "$m/a/shared2"
	# a descriptor open on one client while the other deletes the file and its inode
	# number is made again for a new file: ESTALE, and the new file is not touched
	if command -v python3 >/dev/null 2>&1; then
		printf 'old file\n' >"$m/a/stale"
		timeout "$T" python3 - "$m/a/stale" "$m2/a" >"$tmp/out" 2>"$tmp/err" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
ino = os.fstat(fd).st_ino
os.unlink(os.path.join(sys.argv[2], "stale"))
new = os.path.join(sys.argv[2], "fresh")
with open(new, "w") as f:
    f.write("new file\n")
if os.stat(new).st_ino != ino:
    print("inode not reused")
    sys.exit(0)
# writes are queued (write-behind): the ESTALE comes with the write or, at the latest,
# with the fsync or close after it
try:
    os.pwrite(fd, b"CLOBBER", 0)
    os.fsync(fd)
    os.close(fd)
    print("write went through")
    sys.exit(1)
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
    sys.exit(0 if e.errno == errno.ESTALE else 1)
PY
		check_rc "write through a stale descriptor" 0 $?
		same "the reused inode's new file" "$(cat "$m2/a/fresh")" "new file"
		rm -f "$m/a/fresh"
	fi
	timeout "$T" "$BUILD/arf" umount "$m2"
	wait "$m2pid"; check_rc "second mount exit" 0 $?
else
	bad "second mount did not mount:"; sed 's/^/  | /' "$tmp/mount2.log"
	kill -KILL "$m2pid" 2>/dev/null
fi

# arfd killed (SIGKILL) and started again on the same endpoint: the mount carries on (the
# connection is made again on the next request, the segments installed again), and what
# was written before the kill is there
printf 'written before the kill\n' >"$m/a/survivor"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
# ... and reads made while it is away wait for it (the mount's session, -o outage=60):
# none fails (docs/net.md, "Sessions")
(
	for i in 1 2 3; do
		out=$(timeout "$T" cat "$m/a/survivor" 2>&1)
		echo "$? $out" >>"$tmp/away.txt"
		sleep 0.5
	done
) &
away=$!
sleep 2
"$BUILD/arfd" --listen "$ep" --arf "$img" 2>"$tmp/arfd2.log" &
pid=$!
for _ in $(seq 100); do
	grep -q "info: endpoint" "$tmp/arfd2.log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
wait "$away"
same "reads while arfd was away" "$(grep -c '^0 written before the kill$' "$tmp/away.txt")" 3
same "a file after arfd's restart" "$(timeout "$T" cat "$m/a/survivor" 2>&1)" "written before the kill"
run sh -c "printf 'and after\n' >> '$m/a/survivor'"; check_rc "write after the restart" 0 $?
same "appended after the restart" "$(timeout "$T" tail -n 1 "$m/a/survivor" 2>&1)" "and after"
run rm "$m/a/survivor"; check_rc "rm after the restart" 0 $?

# the image fills up under queued writes: the ENOSPC reaches dd (from a later write or
# from its close), never a silent success; fsync of a queued file reports it too
run dd if=/dev/zero of="$m/a/full" bs=1M count=64
if [ $? -ne 0 ]; then ok; else bad "dd past the image's end exited 0"; fi
contains "ENOSPC from queued writes" "$tmp/err" "No space left on device"
run rm "$m/a/full"; check_rc "rm the full file" 0 $?
if command -v python3 >/dev/null 2>&1; then
	timeout "$T" python3 - "$m/a/full2" >"$tmp/out" 2>&1 <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
try:
    for i in range(64):
        os.write(fd, b"\0" * (1 << 20))
    os.fsync(fd)
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
    sys.exit(0 if e.errno == errno.ENOSPC else 1)
print("no error")
sys.exit(1)
PY
	check_rc "ENOSPC from a write or fsync" 0 $?
	run rm "$m/a/full2"; check_rc "rm the second full file" 0 $?
	# a queued write's error is told to each open descriptor once, at its close or fsync
	# (Linux's errseq), not to the first one only: d1 and d2 open before the failure, d3
	# after it but before anyone was told, d4 after
	timeout "$T" python3 - "$m/a/full3" >"$tmp/out" 2>&1 <<'PY'
import errno, os, sys
p = sys.argv[1]
def tell(name, f, *a):
    try:
        f(*a)
        return name + " ok"
    except OSError as e:
        return name + " " + errno.errorcode.get(e.errno, str(e.errno))
d1 = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
d2 = os.open(p, os.O_WRONLY)
try:
    for i in range(64):
        os.write(d1, b"\1" * (1 << 20))
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
d3 = os.open(p, os.O_WRONLY)
r = [tell("close1", os.close, d1), tell("fsync2", os.fsync, d2), tell("fsync2", os.fsync, d2)]
d4 = os.open(p, os.O_WRONLY)
r += [tell("close4", os.close, d4), tell("close3", os.close, d3), tell("close2", os.close, d2)]
print(" ".join(r))
PY
	same "a queued write's ENOSPC told to each descriptor once" "$(cat "$tmp/out")" \
		"close1 ENOSPC fsync2 ENOSPC fsync2 ok close4 ok close3 ENOSPC close2 ok"
	run rm "$m/a/full3"; check_rc "rm the third full file" 0 $?
	# a program that writes and then checks close's result (as cp, editors and tar do)
	# learns of ENOSPC there: the image nearly full, a write of 1 MiB is answered at once
	# (queued) and fails in arfd; the close waits for it and returns ENOSPC, and the file
	# does not hold the megabyte the write acknowledged
	timeout "$T" python3 - "$m/a/fill" "$m/a/late" >"$tmp/out" 2>&1 <<'PY'
import errno, os, sys
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
try:
    for i in range(64):
        os.write(fd, b"\2" * (1 << 20))
    os.fsync(fd)
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
try:
    os.close(fd)
except OSError:
    pass                        # the filling file's own ENOSPC, told once more or not
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
try:
    n = os.write(fd, b"\3" * (1 << 20))
    r = ["write %d" % n]
except OSError as e:
    r = ["write " + err(e)]
try:
    os.close(fd)
    r.append("close ok")
except OSError as e:
    r.append("close " + err(e))
size = os.stat(sys.argv[2]).st_size
r.append("all there" if size == 1 << 20 else "not all there")
print(" ".join(r))
PY
	same "write, then close on a full image" "$(cat "$tmp/out")" \
		"write 1048576 close ENOSPC not all there"
	head -c 2097152 /dev/urandom >"$tmp/two"
	run cp "$tmp/two" "$m/a/copy"
	if [ $? -ne 0 ]; then ok; else bad "cp onto a full image exited 0"; fi
	contains "cp onto a full image" "$tmp/err" "No space left on device"
	# pages of a shared mapping are written at munmap, after the descriptor's close: their
	# ENOSPC is kept for the next descriptor (as Linux keeps a writeback error in the
	# inode's mapping), whose fsync reports it once (the build before lost it)
	timeout "$T" python3 - "$m/a/mapped" >"$tmp/out" 2>&1 <<'PY'
import ctypes, errno, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
def tell(name, f, *a):
    try:
        f(*a)
        return name + " ok"
    except OSError as e:
        return name + " " + errno.errorcode.get(e.errno, str(e.errno))
n, p = 1 << 20, sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, n)
# libc's mmap, not python's: that one keeps a dup of the descriptor and closes it at munmap
a = libc.mmap(None, n, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
if a in (None, ctypes.c_void_p(-1).value):
    print("mmap failed")
    sys.exit(1)
r = [tell("close", os.close, fd)]
ctypes.memset(a, 5, n)
libc.munmap(a, n)
fd = os.open(p, os.O_RDONLY)
r += [tell("fsync", os.fsync, fd), tell("fsync", os.fsync, fd), tell("close", os.close, fd)]
d = open(p, "rb").read()
print(" ".join(r), "all there" if d.count(b"\5") == n else "not all there")
PY
	same "a mapping written at munmap on a full image" "$(cat "$tmp/out")" \
		"close ok fsync ENOSPC fsync ok close ok not all there"
	run rm -f "$m/a/fill" "$m/a/late" "$m/a/copy" "$m/a/mapped"; check_rc "rm the files of the full image" 0 $?
fi

# arf grep -r of a directory on the mount: the server's walk visits it in the order GNU
# grep (fts) does over the mount, so the outputs are equal byte for byte, unsorted: each
# directory's entries in readdir's order, a subdirectory's files in place, a chain deeper
# than one walk's 64 frames, a directory of 300 files, an excluded directory
if mkdir -p "$m/g/wide" "$m/g/skip/in" "$m/g/sub" 2>"$tmp/err"; then
	d="$m/g/deep"
	for i in $(seq 70); do
		mkdir -p "$d" && printf 'needle at depth %s\nhay\n' "$i" >"$d/f$i" || break
		d="$d/d$i"
	done
	for i in $(seq 300); do
		if [ $((i % 7)) -eq 0 ]; then echo "needle $i" ; else echo "hay $i"; fi >"$m/g/wide/w$i"
	done
	echo needle >"$m/g/skip/in/x"
	echo "a needle" >"$m/g/sub/y"
	ok
else
	bad "mkdir the grep tree: $(cat "$tmp/err")"
fi
arf=$(cd "$BUILD" && pwd)/arf
for o in -n -c -l -L "--exclude-dir=skip -n" "--include=w1* -c" "-h -m 1"; do
	# shellcheck disable=SC2086
	(cd "$m" && timeout "$T" grep -r $o needle g) >"$tmp/g.out" 2>&1
	grc=$?
	# shellcheck disable=SC2086
	(cd "$m" && timeout "$T" "$arf" grep -r $o needle g) >"$tmp/a.out" 2>&1
	arc=$?
	if [ "$grc" -eq "$arc" ] && cmp -s "$tmp/g.out" "$tmp/a.out" && [ -s "$tmp/g.out" ]; then
		ok
	else
		bad "arf grep -r $o on the mount: exit $arc (grep $grc), $(diff "$tmp/g.out" "$tmp/a.out" | head -n 4)"
	fi
done
# -r without operands searches the working directory (here: a directory of the mount),
# names without "./"; the output a file of the mount that is also an input: grep's error
for o in -n "-c --exclude-dir=wide" "-l --exclude-dir=deep"; do
	# shellcheck disable=SC2086
	(cd "$m/g" && timeout "$T" grep -r $o needle) >"$tmp/g.out" 2>&1
	grc=$?
	# shellcheck disable=SC2086
	(cd "$m/g" && timeout "$T" "$arf" grep -r $o needle) >"$tmp/a.out" 2>&1
	arc=$?
	if [ "$grc" -eq "$arc" ] && cmp -s "$tmp/g.out" "$tmp/a.out" && [ -s "$tmp/g.out" ]; then
		ok
	else
		bad "arf grep -r $o in a directory of the mount: exit $arc (grep $grc), $(diff "$tmp/g.out" "$tmp/a.out" | head -n 4)"
	fi
done
for o in "" -c -m1 -m2 -s "-A1 -m1"; do
	for w in g a; do
		if [ $w = g ]; then prog=grep; else prog="$arf grep"; fi
		# shellcheck disable=SC2086
		(cd "$m/g" && cp sub/y out && timeout "$T" $prog $o needle out >>out; echo "rc $?";
		 cat out) >"$tmp/$w.out" 2>&1
	done
	if cmp -s "$tmp/g.out" "$tmp/a.out"; then
		ok
	else
		bad "arf grep $o needle out >>out: $(diff "$tmp/g.out" "$tmp/a.out" | head -n 4)"
	fi
done
run rm -f "$m/g/out"
run rm -rf "$m/g"; check_rc "rm -r the grep tree" 0 $?

# arf umount ends the foreground mount with status 0
run "$BUILD/arf" umount "$m"; check_rc "arf umount" 0 $?
wait "$mpid"; check_rc "arf mount -f exit" 0 $?
mpid=
if mounted; then bad "still mounted after arf umount"; else ok; fi

# bad option, unreachable server: refused before mounting
run "$BUILD/arf" mount "$ep" "$m" -o attr_timeout=soon; check_rc "bad timeout" 2 $?
contains "bad timeout" "$tmp/err" "attr_timeout=soon: expected a number of seconds"
run "$BUILD/arf" mount tcp:127.0.0.1:1 "$m"; check_rc "no server" 1 $?
if mounted; then bad "mounted without a server"; else ok; fi

# daemonized (no -f): returns once mounted; the tree made above is there
run "$BUILD/arf" mount "$ep" "$m"; check_rc "arf mount (daemon)" 0 $?
if wait_mounted ""; then ok; else bad "daemonized mount not there"; fi
same "daemon mount sees a/b" "$(stat -c %F "$m/a/b" 2>&1)" "directory"
run rmdir "$m/a/b"; check_rc "rmdir a/b" 0 $?
run rmdir "$m/a"; check_rc "rmdir a" 0 $?
run "$BUILD/arf" umount "$m"; check_rc "arf umount (daemon)" 0 $?
for _ in $(seq 50); do mounted || break; sleep 0.1; done
if mounted; then bad "daemonized mount still there after umount"; else ok; fi

# stop the server; the image is clean
kill -TERM "$pid"
wait "$pid"; check_rc "arfd SIGTERM" 0 $?
pid=
if [ -n "$deps" ]; then
	# the metadata server back for the cluster's fsck, which goes through the servers
	start_arfd "$tmp/arfd3.log" --arf "$img"
	run "$BUILD/arf" fsck --cluster "$ep"; check_rc "fsck --cluster at the end" 0 $?
	kill -TERM "$pid"
	wait "$pid"; check_rc "arfd SIGTERM (after fsck --cluster)" 0 $?
	pid=
	for p in $dpids; do kill -TERM "$p"; wait "$p"; check_rc "a data server's SIGTERM" 0 $?; done
	dpids=
	k=0
	for k in $(seq "$CLUSTER"); do
		run "$BUILD/arf" fsck "$tmp/data$k.img"; check_rc "fsck of data server $k at the end" 0 $?
	done
fi
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean, $([ -n "$deps" ] && echo 4 || echo 3) inodes"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
