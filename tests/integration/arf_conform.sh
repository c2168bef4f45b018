#!/bin/sh
# arf_conform.sh: the conformance run (tests/conform/conform.c) side by side on tmpfs, the
# reference, and on an ARF mount made by root with no -o option but the cache timeouts
# (a root mount serves every user with the kernel's permission checks, allow_other and
# default_permissions, so the scenarios run as other users compare too).
# The outputs are compared line by line within each scenario; each difference must be in
# tests/conform/known-differences (with its reason there, and in docs/arf.md), and each
# line of that file must still be a difference: a new one fails, and so does one that went
# away (the file is kept exact).  As root only (other users, tmpfs); where FUSE cannot be
# used it says why and counts nothing.
#
#   BUILD=build sh tests/integration/arf_conform.sh     prints "N passed, N failed" last

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
known=$here/conform/known-differences
mpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_conform.sh.XXXXXX") || exit 1
# the scenarios run as other users, who must reach the directories
chmod 755 "$tmp"
mnt=$tmp/mnt
ref=$tmp/ref
on() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	if on "$mnt"; then fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; fi
	if on "$ref"; then umount -l "$ref" 2>/dev/null; fi
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	# never recurse into a mount that is still there
	if on "$mnt" || on "$ref"; then echo "arf_conform.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

skip() {
	echo "arf_conform.sh: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

for p in arf arfd tests/conform; do
	[ -x "$BUILD/$p" ] || { echo "arf_conform.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || skip "not root: the reference is a tmpfs mount and the scenarios run as other users"
[ -c /dev/fuse ] || skip "no /dev/fuse here (modprobe fuse, or a container without the device)"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 not installed (scripts/deps.sh installs fuse3)"
mkdir "$ref" "$mnt"
mount -t tmpfs -o size=64m,mode=755 tmpfs "$ref" 2>"$tmp/err" ||
	skip "tmpfs cannot be mounted here: $(cat "$tmp/err")"

img=$tmp/fs.img
run "$BUILD/arf" mkfs "$img" --size 64M; check_rc mkfs 0 $?
start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
# the kernel caches nothing (timeouts 0): every step reaches the server
"$BUILD/arf" mount "$ep" "$mnt" -f -o attr_timeout=0,entry_timeout=0 2>"$tmp/mount.log" &
mpid=$!
for _ in $(seq 100); do
	on "$mnt" && break
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
if ! on "$mnt"; then
	if grep -qiE "fuse: device not found|permission denied|operation not permitted" "$tmp/mount.log"; then
		cat "$tmp/mount.log"
		skip "FUSE is present but this environment may not mount it (see the message above)"
	fi
	bad "arf mount -f did not mount:"; sed 's/^/  | /' "$tmp/mount.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok
if grep -F " $mnt fuse.arf " /proc/mounts | grep -q 'default_permissions,allow_other'; then ok; else
	bad "the root mount is not default_permissions,allow_other:"; grep -F " $mnt " /proc/mounts
fi
# but no setuid programs or devices from the server unless asked for (FUSE's default)
if grep -F " $mnt fuse.arf " /proc/mounts | grep -q 'nosuid,nodev'; then ok; else
	bad "the root mount is not nosuid,nodev:"; grep -F " $mnt " /proc/mounts
fi

timeout $((T * 3)) "$BUILD/tests/conform" "$ref" >"$tmp/ref.out" 2>"$tmp/ref.err"
check_rc "conform on tmpfs" 0 $?
timeout $((T * 6)) "$BUILD/tests/conform" "$mnt" >"$tmp/arf.out" 2>"$tmp/arf.err"
check_rc "conform on the mount" 0 $?
[ -s "$tmp/ref.err" ] && { echo "conform on tmpfs said:"; sed 's/^/  | /' "$tmp/ref.err"; }
[ -s "$tmp/arf.err" ] && { echo "conform on the mount said:"; sed 's/^/  | /' "$tmp/arf.err"; }

# compare REF OUT PREFIX WHAT: each line prefixed with PREFIX and its scenario, so a
# difference names where it is and stays the same line when other scenarios change; the
# lines only REF printed ("-") and only OUT printed ("+") must be those of known-differences
# that carry PREFIX, no more and no fewer
compare() {
	# (the hidden name of an open, unlinked file carries its inode number: not compared)
	tag() {
		awk -v p="$3" '/^== / { s = $2; next } { print p s ": " $0 }' "$1" |
			sed 's/\.arf-hidden-[0-9]*/.arf-hidden-N/g'
	}
	tag "$1" "" "$3" >"$tmp/a.tag"
	tag "$2" "" "$3" >"$tmp/b.tag"
	diff --unchanged-line-format= --old-line-format='- %L' --new-line-format='+ %L' \
		"$tmp/a.tag" "$tmp/b.tag" | LC_ALL=C sort >"$tmp/found"
	grep -v -e '^#' -e '^$' "$known" | grep "^[-+] $3[a-z_]*: " | LC_ALL=C sort >"$tmp/known"
	LC_ALL=C comm -23 "$tmp/found" "$tmp/known" >"$tmp/new"
	LC_ALL=C comm -13 "$tmp/found" "$tmp/known" >"$tmp/gone"
	# one check per scenario: no difference it does not list, none listed that went away
	for s in $(sed -n 's/^== //p' "$1"); do
		if grep -q "^[-+] $3$s: " "$tmp/new" "$tmp/gone"; then
			bad "scenario $3$s: $4 other than tests/conform/known-differences says:"
			grep "^[-+] $3$s: " "$tmp/new" | sed 's/^/  new  | /'
			grep "^[-+] $3$s: " "$tmp/gone" | sed 's/^/  gone | /'
		else
			ok
		fi
	done
	same "the same scenarios ran ($4)" "$(sed -n 's/^== //p' "$2" | tr '\n' ' ')" \
		"$(sed -n 's/^== //p' "$1" | tr '\n' ' ')"
	[ "${ARF_CONFORM_KEEP:-}" ] && cp "$tmp/found" "$ARF_CONFORM_KEEP/found$3"
}
compare "$tmp/ref.out" "$tmp/arf.out" "" "the mount differs from tmpfs"
if [ "${ARF_CONFORM_KEEP:-}" ]; then
	cp "$tmp/ref.out" "$tmp/arf.out" "$ARF_CONFORM_KEEP"/
fi

run "$BUILD/arf" umount "$mnt"; check_rc "arf umount" 0 $?
wait "$mpid"; check_rc "arf mount -f exit" 0 $?
mpid=

# again with -o writeback (the kernel caches writes, and then owns mtime and ctime and the
# size of a file it has written): compared with the default mount, so that only what the
# option changes shows, as lines of known-differences prefixed "wb."
"$BUILD/arf" mount "$ep" "$mnt" -f -o attr_timeout=0,entry_timeout=0,writeback 2>"$tmp/mount.log" &
mpid=$!
for _ in $(seq 100); do
	on "$mnt" && break
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
if on "$mnt"; then ok; else bad "arf mount -o writeback did not mount:"; sed 's/^/  | /' "$tmp/mount.log"; fi
mkdir "$mnt/wb"
timeout $((T * 6)) "$BUILD/tests/conform" "$mnt/wb" >"$tmp/wb.out" 2>"$tmp/wb.err"
check_rc "conform on the -o writeback mount" 0 $?
[ -s "$tmp/wb.err" ] && { echo "conform on the -o writeback mount said:"; sed 's/^/  | /' "$tmp/wb.err"; }
compare "$tmp/arf.out" "$tmp/wb.out" "wb." "-o writeback differs from the default mount"
[ "${ARF_CONFORM_KEEP:-}" ] && cp "$tmp/wb.out" "$ARF_CONFORM_KEEP"/
run "$BUILD/arf" umount "$mnt"; check_rc "arf umount (writeback)" 0 $?
wait "$mpid"; check_rc "arf mount -f -o writeback exit" 0 $?
mpid=

# -o allow_root: a root mount for root alone
run "$BUILD/arf" mount "$ep" "$mnt" -o allow_root; check_rc "arf mount -o allow_root" 0 $?
run ls "$mnt"; check_rc "ls as root through an allow_root mount" 0 $?
if command -v setpriv >/dev/null 2>&1; then
	run setpriv --reuid=65534 --regid=65534 --clear-groups ls "$mnt"
	check_rc "ls as nobody through an allow_root mount" 2 $?
	contains "ls as nobody through an allow_root mount" "$tmp/err" "Permission denied"
fi
run "$BUILD/arf" umount "$mnt"; check_rc "arf umount (allow_root)" 0 $?
for _ in $(seq 50); do on "$mnt" || break; sleep 0.1; done
umount "$ref"; check_rc "umount tmpfs" 0 $?
kill -TERM "$pid"
wait "$pid"; check_rc "arfd SIGTERM" 0 $?
pid=
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
