#!/bin/sh
# arf_image.sh: build/arf and build/arfd on real files: arf mkfs and fsck (exit codes,
# messages), arfd --arf refusing a corrupt image and serving a good one as region "arf"
# (read of the superblock and the statfs segment through build/arc), SIGTERM leaving the
# image clean, SIGKILL leaving it unclean but consistent (fsck exit 0, arfd attaches again).
#
#   BUILD=build sh tests/integration/arf_image.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-20}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_image.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"


for p in arf arfd arc; do
	[ -x "$BUILD/$p" ] || { echo "arf_image.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
[ -f "$BUILD/arfseg/statfs.pno" ] || { echo "arf_image.sh: $BUILD/arfseg/statfs.pno not built"; echo "0 passed, 1 failed"; exit 1; }

img=$tmp/fs.img
run "$BUILD/arf" mkfs "$img" --size 32M; check_rc mkfs 0 $?
run "$BUILD/arf" fsck "$img"; check_rc "fsck fresh" 0 $?
contains "fsck fresh" "$tmp/out" "clean, 3 inodes and"
run "$BUILD/arf" mkfs "$tmp/x.img" --size 1M; check_rc "mkfs too small" 1 $?
contains "mkfs too small" "$tmp/err" "must be 4194304 bytes (4 MiB) to"
run "$BUILD/arf" fsck "$tmp/none.img"; check_rc "fsck missing" 8 $?
run "$BUILD/arf" bogus; check_rc "unknown command" 2 $?

# start arfd on IMAGE; sets pid and ep ("" when it did not start)
start() { start_arfd "$tmp/arfd.log" --arf "$1"; }

# a corrupt image is refused: arfd exits 1 with the reason
cp "$img" "$tmp/bad.img"
printf 'XXXXXXXX' | dd of="$tmp/bad.img" conv=notrunc 2>/dev/null
timeout "$T" "$BUILD/arfd" --listen tcp:127.0.0.1:0 --arf "$tmp/bad.img" >"$tmp/out" 2>"$tmp/err"
check_rc "arfd on a corrupt image" 1 $?
contains "arfd refusal" "$tmp/err" "--arf $tmp/bad.img: refused: superblock: bad magic"
run "$BUILD/arf" fsck "$tmp/bad.img" --repair; check_rc "fsck corrupt superblock" 8 $?

# served: the superblock through arc read, statfs through arc run
start "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
else
	run "$BUILD/arc" read "$ep" arf 0 8; check_rc "read magic" 0 $?
	contains "magic" "$tmp/out" "ARFIMAG1"
	run "$BUILD/arc" run "$ep" "$BUILD/arfseg/statfs.pno" --entry statfs; check_rc statfs 0 $?
	contains "statfs epoch" "$tmp/err" "result: 1"
	if [ "$(wc -c <"$tmp/out")" -eq 48 ]; then ok; else bad "statfs output is not 6 words"; fi
	kill -TERM "$pid"
	wait "$pid"; check_rc "arfd SIGTERM" 0 $?
	pid=
	run "$BUILD/arf" fsck "$img"; check_rc "fsck after SIGTERM" 0 $?
	if grep -q note: "$tmp/out"; then bad "clean stop left notes:"; cat "$tmp/out"; else ok; fi
fi

# SIGKILL: the image is left attached (unclean) but consistent
start "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start again:"; cat "$tmp/arfd.log"
else
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	pid=
	run "$BUILD/arf" fsck "$img"; check_rc "fsck after SIGKILL" 0 $?
	contains "unclean note" "$tmp/out" "not detached cleanly"
	start "$img"
	if [ -n "$ep" ]; then ok; else bad "arfd refused the image after SIGKILL:"; cat "$tmp/arfd.log"; fi
	contains "attach log" "$tmp/arfd.log" "epoch 3 (after an unclean stop), 0 operations rolled back"
	[ -n "$pid" ] && kill -TERM "$pid" && wait "$pid"
	pid=
	run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
