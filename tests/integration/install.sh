#!/bin/sh
# install.sh: make install into a staging directory (DESTDIR, PREFIX=/usr) puts every piece
# where the system looks for it: the programs, the operations' segments, the man pages (man
# -M finds arfd(8) and arf(1)), the bash completions, arfd.service and mount.fuse.arf with
# the installed paths filled in, the sysusers.d file, the example config; and the installed
# arf finds its segments from another directory (a copy in and out through arfd).
#
#   BUILD=build sh tests/integration/install.sh        prints "N passed, N failed" last

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-20}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/install.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

root=$tmp/root
# a make of its own (not the jobs of a make check that runs this), on the built tree
run env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$src" BUILD="$BUILD" DESTDIR="$root" PREFIX=/usr install
check_rc "make install" 0 $?

for f in usr/bin/arfd usr/bin/arf usr/bin/arc usr/bin/pnasm usr/bin/pndis usr/bin/pnrun \
	usr/bin/pngrep sbin/mount.fuse.arf; do
	if [ -x "$root/$f" ]; then ok; else bad "$f not installed executable"; fi
done
for f in usr/lib/activerdma/arfseg/ops.pno usr/lib/activerdma/arfseg/data.pno \
	usr/lib/activerdma/arfseg/statfs.pno usr/lib/systemd/system/arfd.service \
	usr/lib/sysusers.d/arfd.conf usr/share/doc/activerdma/arfd.conf \
	usr/share/bash-completion/completions/arf usr/share/bash-completion/completions/arc \
	usr/share/man/man8/arfd.8 usr/share/man/man1/arf.1 usr/share/man/man1/arc.1 \
	usr/share/man/man1/pnasm.1 usr/share/man/man1/pndis.1 usr/share/man/man1/pnrun.1 \
	usr/share/man/man1/pngrep.1; do
	if [ -f "$root/$f" ]; then ok; else bad "$f not installed"; fi
done
same "the unit's ExecStart" "$(sed -n 's/^ExecStart=//p' "$root/usr/lib/systemd/system/arfd.service")" \
	"/usr/bin/arfd --config /etc/arfd/arfd.conf"
contains "the helper runs the installed arf" "$root/sbin/mount.fuse.arf" 'arf=${ARF_PROGRAM:-/usr/bin/arf}'
if grep -q '@bindir@' "$root/usr/lib/systemd/system/arfd.service" "$root/sbin/mount.fuse.arf"; then
	bad "@bindir@ left in an installed file"
else
	ok
fi
if command -v man >/dev/null 2>&1; then
	same "man -M finds arfd(8)" "$(man -M "$root/usr/share/man" -w 8 arfd 2>&1)" "$root/usr/share/man/man8/arfd.8"
	same "man -M finds arf(1)" "$(man -M "$root/usr/share/man" -w arf 2>&1)" "$root/usr/share/man/man1/arf.1"
else
	echo "install.sh: no man(1) here: the pages are not looked up"
fi

# the installed arf, run from a directory without build/: its segments come from
# ../lib/activerdma/arfseg beside it
run "$root/usr/bin/arf" mkfs "$tmp/fs.img" --size 8M; check_rc "installed arf mkfs" 0 $?
start_arfd "$tmp/arfd.log" --arf "$tmp/fs.img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
else
	mkdir "$tmp/tree" "$tmp/copy"
	printf 'installed\n' >"$tmp/tree/file"
	(cd "$tmp" && run env -u ARF_OPS_SEG -u ARF_DATA_SEG -u ARF_STATFS_SEG \
		"$root/usr/bin/arf" import "$tmp/tree" "$ep:/x"); check_rc "installed arf import" 0 $?
	(cd "$tmp" && run env -u ARF_OPS_SEG -u ARF_DATA_SEG -u ARF_STATFS_SEG \
		"$root/usr/bin/arf" export "$ep:/x" "$tmp/copy"); check_rc "installed arf export" 0 $?
	same "the file through the installed arf" "$(cat "$tmp/copy/file" 2>/dev/null)" installed
	kill "$pid"
	wait "$pid"
	pid=
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
