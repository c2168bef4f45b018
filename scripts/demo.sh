#!/usr/bin/env bash
# demo.sh: the main job.  Installs dependencies, builds, then shows what the system is for:
#   1. a segment shipped to arfd runs where the data is (examples/remote.sh, checked by grep -F);
#   2. a filesystem served by arfd: an image is made, a real tree (/usr/include) imported,
#      mounted through FUSE, listed and read; then `arf grep -rn` (the scan runs in arfd) beside
#      GNU `grep -rn` over the same mount, with the bytes that crossed the network and the time
#      of each, and a check that both printed the same lines.
# Everything lives in one temporary directory; the mount is unmounted and arfd stopped on every
# exit, Ctrl-C included.  Exit status 0 only when every check held.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" all >/dev/null
B=$PWD/build

say() { printf '\n== %s\n' "$*"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

say "1. a segment shipped to arfd (examples/remote.sh)"
BUILD=build sh examples/remote.sh

# ---- 2. ARF: everything below in $work, cleaned up on any exit
work=$(mktemp -d /tmp/arf-demo.XXXXXX)
mnt=$work/mnt
arfd_pid=
cleanup() {
	set +e
	if mountpoint -q "$mnt" 2>/dev/null; then
		"$B/arf" umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	if [ -n "$arfd_pid" ] && kill -0 "$arfd_pid" 2>/dev/null; then
		kill -TERM "$arfd_pid"
		for _ in $(seq 100); do kill -0 "$arfd_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$arfd_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

tree=/usr/include
[ -d "$tree" ] || { echo "demo: $tree is missing (libc6-dev installs it)" >&2; exit 1; }

say "2. an ARF image served by arfd"
"$B/arf" mkfs "$work/fs.img" --size 2G
# Port 0: the kernel picks a free port; arfd logs the endpoint it got.
"$B/arfd" --listen tcp:127.0.0.1:0 --arf "$work/fs.img" 2>"$work/arfd.log" &
arfd_pid=$!
ep=
for _ in $(seq 100); do
	ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$work/arfd.log" | head -n 1)
	[ -n "$ep" ] && break
	kill -0 "$arfd_pid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$ep" ] || { echo "demo: arfd did not start:" >&2; cat "$work/arfd.log" >&2; exit 1; }
echo "arfd serves $work/fs.img at $ep (pid $arfd_pid)"

say "3. import $tree"
t0=$(date +%s%N)
"$B/arf" import "$tree" "$ep:/include" </dev/null
files=$(find "$tree" -type f | wc -l)
echo "imported $files files ($(du -sh "$tree" | cut -f1)) in $(ms_since "$t0") ms"

say "4. mount it and look around"
mkdir -p "$mnt"
"$B/arf" mount "$ep" "$mnt"
echo "\$ ls $mnt/include | head -5"
ls "$mnt/include" | head -5
echo "\$ head -3 $mnt/include/stdio.h"
head -3 "$mnt/include/stdio.h"
cmp -s "$tree/stdio.h" "$mnt/include/stdio.h" && echo "(stdio.h read through the mount is byte for byte the original)" ||
	{ echo "demo: stdio.h differs through the mount" >&2; exit 1; }

# Bytes arfd sent and received, from its own counters (each arc stats costs a few hundred).
net_bytes() { "$B/arc" stats "$ep" | awk '/^net.bytes_(sent|recv) / { n += $2 } END { print n + 0 }'; }

say "5. grep -rn over the mount vs arf grep -rn (the scan runs in arfd, only matches travel)"
pattern='SIGTERM'
b0=$(net_bytes); t0=$(date +%s%N)
"$B/arf" grep -rn "$pattern" "$mnt/include" >"$work/arf.out"
arf_ms=$(ms_since "$t0"); arf_bytes=$(( $(net_bytes) - b0 ))
b0=$(net_bytes); t0=$(date +%s%N)
grep -rn "$pattern" "$mnt/include" >"$work/grep.out"
grep_ms=$(ms_since "$t0"); grep_bytes=$(( $(net_bytes) - b0 ))
head -3 "$work/arf.out"
echo "... ($(wc -l <"$work/arf.out") lines)"
printf '\n%-28s %14s %10s\n' "" "network bytes" "time"
printf '%-28s %14d %8d ms\n' "arf grep -rn $pattern" "$arf_bytes" "$arf_ms"
printf '%-28s %14d %8d ms\n' "grep -rn $pattern (mount)" "$grep_bytes" "$grep_ms"
if cmp -s "$work/arf.out" "$work/grep.out"; then
	echo "both printed the same $(wc -l <"$work/arf.out") lines, byte for byte"
else
	echo "demo: arf grep and grep printed different output:" >&2
	diff "$work/arf.out" "$work/grep.out" | head -20 >&2
	exit 1
fi

say "6. unmount, stop arfd, check the image"
"$B/arf" umount "$mnt"
kill -TERM "$arfd_pid"; wait "$arfd_pid" || true; arfd_pid=
"$B/arf" fsck "$work/fs.img"
echo "demo: done"
