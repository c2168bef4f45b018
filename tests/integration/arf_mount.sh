#!/bin/sh
# arf_mount.sh: `arf mount` (the FUSE client) on a real image served by arfd --arf, driven
# with plain shell tools: mkdir -p, create, mkfifo, ls -la (names, types), stat, statfs,
# rm, rmdir, the errors the tools print (EEXIST, ENOTEMPTY, ENOENT, EPERM for a device), a
# directory of 1000 entries listed completely, arf umount, the daemonized mount, and fsck
# clean at the end.  Where FUSE cannot be used (no /dev/fuse, no permission to mount) it
# says why and counts nothing.
#
#   BUILD=build sh tests/integration/arf_mount.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit the mounts are undone and whatever was started
# is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-20}
pass=0
fail=0
pid=
mpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_mount.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	if mounted; then
		fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	# never recurse into a mount that is still there
	if mounted; then echo "arf_mount.sh: $mnt still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check_rc() {
	if [ "$3" -eq "$2" ]; then ok; else bad "$1: exit status $3, want $2"; sed 's/^/  | /' "$tmp/out" "$tmp/err"; fi
}
contains() {
	if grep -qF -e "$3" "$2"; then ok; else bad "$1: '$3' not in:"; sed 's/^/  | /' "$2"; fi
}
same() {
	if [ "$2" = "$3" ]; then ok; else bad "$1: '$2', want '$3'"; fi
}
run() { timeout "$T" "$@" >"$tmp/out" 2>"$tmp/err"; }
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
run "$BUILD/arf" mkfs "$img" --size 32M; check_rc mkfs 0 $?

"$BUILD/arfd" --listen tcp:127.0.0.1:0 --arf "$img" 2>"$tmp/arfd.log" &
pid=$!
ep=
for _ in $(seq 100); do
	ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
	[ -n "$ep" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
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
same "statfs bsize blocks namemax" "$(cat "$tmp/out")" "4096 8192 255"
run ls -a "$m"; check_rc "ls root" 0 $?
same "root entries" "$(tr '\n' ' ' <"$tmp/out")" ". .. lost+found "

# make: mkdir -p, a file by create, a file by touch, a fifo
run mkdir -p "$m/a/b/c"; check_rc "mkdir -p" 0 $?
if [ -d "$m/a/b/c" ]; then ok; else bad "a/b/c is not a directory"; fi
run sh -c ": > '$m/a/file'"; check_rc "create by redirection" 0 $?
# touch creates the file, then sets its times: that part needs setattr (not yet), so only
# the creation is checked here
timeout "$T" touch "$m/a/touched" 2>/dev/null
if [ -f "$m/a/touched" ]; then ok; else bad "touch did not create a/touched"; fi
# (mkfifo -m would chmod afterwards: setattr, not yet)
run mkfifo "$m/a/fifo"; check_rc mkfifo 0 $?

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
run mknod "$m/a/null" c 1 3; check_rc "mknod a device" 1 $?
contains "mknod a device" "$tmp/err" "Operation not permitted"
# writing data is not there yet: it must fail, never pretend
run sh -c "printf data > '$m/a/file'"
if [ -s "$m/a/file" ] || ! [ -s "$tmp/err" ]; then bad "a write did not fail"; else ok; fi

# remove
run rm "$m/a/file" "$m/a/fifo" "$m/a/touched"; check_rc rm 0 $?
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
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean, 3 inodes"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
