#!/bin/sh
# arf_xfer.sh: `arf import` and `arf export` against arfd --arf on loopback: a tree with
# nested directories, empty, small, multi-chunk (> 4 MiB) and sparse files, a symlink, a
# fifo, devices and a socket (when run as root), odd modes and old times goes in and comes
# back out identical (diff -r, and modes, times, sizes and symlink targets by find -printf,
# device numbers by stat); xattrs both ways; holes stay holes both ways; a second
# import replaces files and merges directories; the errors a script sees (exit status 2 for
# a bad argument or a missing source, 1 when some files failed); fsck clean at the end.
#
#   BUILD=build sh tests/integration/arf_xfer.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_xfer.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

# everything find can say about a tree but the inode numbers and ctimes
listing() { (cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' | sort); }

for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "arf_xfer.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done

img=$tmp/fs.img
run "$BUILD/arf" mkfs "$img" --size 256M; check_rc mkfs 0 $?
start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
fi

# the tree
src=$tmp/src
mkdir -p "$src/a/b/c" "$src/empty dir" "$src/ro"
: >"$src/empty"
printf 'hello\n' >"$src/a/hello"
seq 1 200000 >"$src/a/b/nums"
head -c 9000000 /dev/urandom >"$src/a/b/c/big"           # three runs of 4 MiB
for i in $(seq 1 150); do printf 'file %s\n' "$i" >"$src/a/many-$i"; done
truncate -s 50M "$src/sparse"
printf 'middle' | dd of="$src/sparse" bs=1 seek=30000000 conv=notrunc 2>/dev/null
ln -s a/hello "$src/link"
ln -s /nowhere/at/all "$src/a/dangling"
mkfifo -m 640 "$src/fifo"
# devices (root only: mknod needs CAP_MKNOD) and a socket (mknod makes one as well)
if mknod -m 620 "$src/tty9" c 4 9 2>/dev/null; then
	mknod -m 660 "$src/sda" b 8 0
	mknod -m 755 "$src/sock" s 2>/dev/null || python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$src/sock"
fi
printf 'x\n' >"$src/ro/inside"
chmod 4755 "$src/a/hello"
chmod 600 "$src/a/b/nums"
chmod 555 "$src/ro"
touch -h -d '2001-02-03 04:05:06.789' "$src/a/b/nums" "$src/a" "$src/link"

run "$BUILD/arf" import -v "$src" "$ep:/in/tree"; check_rc import 0 $?
contains "import summary" "$tmp/err" "0 errors"
out=$tmp/out.tree
run "$BUILD/arf" export -v "$ep:/in/tree" "$out"; check_rc export 0 $?
run diff -r --no-dereference -x fifo -x tty9 -x sda -x sock "$src" "$out"; check_rc "diff -r after the round trip" 0 $?
listing "$src" >"$tmp/want"
listing "$out" >"$tmp/got"
if cmp -s "$tmp/want" "$tmp/got"; then ok; else bad "modes, sizes, times or targets differ:"; diff "$tmp/want" "$tmp/got" | head -20; fi
if [ -e "$src/tty9" ]; then
	same "devices and a socket: types and numbers" \
		"$(cd "$out" && stat -c '%n %F %t:%T' tty9 sda sock | tr '\n' ' ')" \
		"$(cd "$src" && stat -c '%n %F %t:%T' tty9 sda sock | tr '\n' ' ')"
fi
same "sparse stays sparse" "$(du -k "$out/sparse" | cut -f1)" "$(du -k "$src/sparse" | cut -f1)"
if [ "$(du -k "$out/sparse" | cut -f1)" -lt 1024 ]; then ok; else bad "exported sparse file owns $(du -k "$out/sparse" | cut -f1) KiB"; fi

# again over the same place: files replaced (a shorter one too), directories merged
printf 'short\n' >"$src/a/b/c/big"
mkdir "$src/a/new"
printf 'n\n' >"$src/a/new/file"
chmod 755 "$src/ro"
run "$BUILD/arf" import "$src" "$ep:/in/tree"; check_rc "import again" 0 $?
rm -rf "$out"
run "$BUILD/arf" export "$ep:/in/tree" "$out"; check_rc "export again" 0 $?
run diff -r --no-dereference -x fifo -x tty9 -x sda -x sock "$src" "$out"; check_rc "diff -r after replacing" 0 $?
same "replaced file" "$(cat "$out/a/b/c/big")" "short"

# a destination given as several components is made like mkdir -p; '/' works as the root
run "$BUILD/arf" import "$src/a/new" "$ep:/"; check_rc "import into the root" 0 $?
run "$BUILD/arf" export "$ep:/" "$tmp/root"; check_rc "export the root" 0 $?
same "a file imported into the root" "$(cat "$tmp/root/file")" "n"
if [ -d "$tmp/root/lost+found" ] && [ -f "$tmp/root/in/tree/a/hello" ]; then ok; else bad "root export incomplete"; fi

# a time ARF cannot hold (signed 64-bit nanoseconds: 1677 to 2262) is clamped, not wrapped
# (only the late end: the local filesystem, ext4's 1901 to 2446, clamps an early one itself)
mkdir "$tmp/far"
touch -d '2300-01-01 00:00:00 UTC' "$tmp/far/late"
run "$BUILD/arf" import "$tmp/far" "$ep:/far"; check_rc "import far times" 0 $?
run "$BUILD/arf" export "$ep:/far" "$tmp/far.out"; check_rc "export far times" 0 $?
same "2300 clamped" "$(stat -c %Y "$tmp/far.out/late" 2>&1)" 9223372036

# errors
run "$BUILD/arf" import "$src" "$ep"; check_rc "no :/PATH" 2 $?
contains "no :/PATH" "$tmp/err" "expected ENDPOINT:/PATH"
run "$BUILD/arf" import "$tmp/nothing" "$ep:/x"; check_rc "missing source" 2 $?
contains "missing source" "$tmp/err" "No such file or directory"
run "$BUILD/arf" export "$ep:/no/such" "$tmp/x"; check_rc "missing remote directory" 2 $?
contains "missing remote directory" "$tmp/err" "No such file or directory"
run "$BUILD/arf" export "$ep:/in/tree/a/hello" "$tmp/x"; check_rc "remote file as directory" 2 $?
contains "remote file as directory" "$tmp/err" "Not a directory"
run "$BUILD/arf" import -j 0 "$src" "$ep:/x"; check_rc "-j 0" 2 $?
run "$BUILD/arf" import "$src" tcp:127.0.0.1:1:/x; check_rc "no server" 2 $?
# xattrs go in and come back out (user.* on a file and a directory, binary and empty
# values, a read-only file; trusted.* on a symlink and POSIX ACLs as root); a namespace
# ARF does not keep is said and counted as an error.  The local filesystem must keep user.* (ext4, tmpfs).
xdump() {
	python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
for d, dirs, files in sorted(os.walk(root)):
    for n in sorted(dirs + files) + ([] if d != root else ['.']):
        p = os.path.join(d, n)
        for a in sorted(os.listxattr(p, follow_symlinks=False)):
            print(os.path.relpath(p, root), a, os.getxattr(p, a, follow_symlinks=False).hex())
PY
}
xsrc=$tmp/xsrc
mkdir -p "$xsrc/d"
printf 'x\n' >"$xsrc/f"
printf 'r\n' >"$xsrc/ro"
ln -s f "$xsrc/l"
if python3 -c 'import os, sys
os.setxattr(sys.argv[1] + "/f", "user.a", b"value")
os.setxattr(sys.argv[1] + "/f", "user.bin", bytes(range(256)))
os.setxattr(sys.argv[1] + "/f", "user.empty", b"")
os.setxattr(sys.argv[1] + "/d", "user.dir", b"d")
os.setxattr(sys.argv[1] + "/ro", "user.ro", b"r")
if os.geteuid() == 0:
    os.setxattr(sys.argv[1] + "/l", "trusted.t", b"t", follow_symlinks=False)
    # setfacl -m u:1000:r f; setfacl -d -m u:1000:rx d (where the filesystem has ACLs)
    acl = lambda ents: bytes([2, 0, 0, 0]) + b"".join(
        t.to_bytes(2, "little") + p.to_bytes(2, "little") + i.to_bytes(4, "little") for t, p, i in ents)
    try:
        os.setxattr(sys.argv[1] + "/f", "system.posix_acl_access",
                    acl([(1, 6, 2**32-1), (2, 4, 1000), (4, 4, 2**32-1), (16, 4, 2**32-1), (32, 4, 2**32-1)]))
        os.setxattr(sys.argv[1] + "/d", "system.posix_acl_default",
                    acl([(1, 7, 2**32-1), (2, 5, 1000), (4, 5, 2**32-1), (16, 5, 2**32-1), (32, 5, 2**32-1)]))
    except OSError:
        pass' "$xsrc" 2>/dev/null; then
	chmod 444 "$xsrc/ro"
	run "$BUILD/arf" import "$xsrc" "$ep:/xa"; check_rc "import with xattrs" 0 $?
	run "$BUILD/arf" export "$ep:/xa" "$tmp/xout"; check_rc "export with xattrs" 0 $?
	same "xattrs after the round trip" "$(xdump "$tmp/xout")" "$(xdump "$xsrc")"
	n=$(xdump "$xsrc" | wc -l)
	if [ "$n" -ge 5 ]; then ok; else bad "the xattr dump of the source has $n lines"; fi
else
	echo "arf_xfer.sh: $tmp keeps no user.* xattrs: the xattr round trip is left out"
fi

# an unreadable file (as a user without the permission) fails alone; the rest goes in
if [ "$(id -u)" -ne 0 ]; then
	chmod 000 "$src/a/hello"
	run "$BUILD/arf" import "$src" "$ep:/in/tree2"; check_rc "unreadable file" 1 $?
	contains "unreadable file" "$tmp/err" "a/hello: cannot open"
	chmod 644 "$src/a/hello"
fi

kill -TERM "$pid"
wait "$pid"; check_rc "arfd SIGTERM" 0 $?
pid=
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
