#!/bin/sh
# arf_cluster.sh: ARF on a cluster (docs/cluster.md) on loopback: 1 metadata + 3 data arfd
# servers, stripe unit 64 KiB.  `arf cluster init` records the data servers in the metadata
# image (once: a second init, an init of a non-empty image, or one naming an image twice
# is refused); `arf import` /
# `arf export` of files of every size around the stripe boundaries (0, 1, 64K-1, 64K,
# 64K+1, one row of 3 units and one byte either side, several MiB not a multiple of the
# unit, sparse ones) come back byte-identical; the stripes are where the layout says (the
# biggest file rebuilt by hand from the data servers' objects); a file replaced by a sparse
# one shows no stale byte; `arf fsck --cluster` finds (and with --repair removes) a leaked
# object and the stale tails a cut-short import leaves, also with no server running (the
# images given); every image is fsck-clean after
# arfd stops; a one-server image works as before.  Faults: a hung (SIGSTOP) and a killed (SIGKILL, also in the middle of an
# import) data server make the commands fail with a message naming it within 10 s, while
# a file none of whose bytes are on it is still read.  arf grep -r searches it (at length:
# arf_cluster_grep.sh); arf mount serves it (arf_cluster_mount.sh).
#
#   BUILD=build sh tests/integration/arf_cluster.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster.sh.XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster.sh arf arfd
arf_cluster 3 256M             # the description is made below, after the inits refused

# ---- making the cluster
run "$BUILD/arf" cluster show "$M"; check_rc "show before init" 0 $?
contains "show before init" "$tmp/out" "one server"
run "$BUILD/arf" cluster init --stripe-unit 3000 "$M" "$ep_1"; check_rc "odd unit" 2 $?
run "$BUILD/arf" cluster init "$M"; check_rc "no data server" 2 $?
# every image once: the metadata server's own, or one server under two names, is refused
run "$BUILD/arf" cluster init "$M" "$ep_1" "$M"; check_rc "init, the metadata image as data" 1 $?
contains "init, the metadata image as data" "$tmp/err" "serves the metadata server's own image"
run "$BUILD/arf" cluster init "$M" "$ep_1" "$(echo "$ep_1" | sed 's/127.0.0.1/localhost/')"
check_rc "init, one server twice" 1 $?
contains "init, one server twice" "$tmp/err" "serves the same image as $ep_1"
run "$BUILD/arf" cluster init --stripe-unit 64K --layout flat "$M" "$ep_1" "$ep_2" "$ep_3"; check_rc "init" 0 $?
run "$BUILD/arf" cluster show "$M"; check_rc "show" 0 $?
same "description" "$(tr '\n' ' ' <"$tmp/out")" \
	"arf-cluster 1 unit $U server $ep_1 server $ep_2 server $ep_3 "
run "$BUILD/arf" cluster init "$M" "$ep_1"; check_rc "init twice" 1 $?
contains "init twice" "$tmp/err" "already a cluster"

# ---- one file first: its objects are the only ones, so the layout can be checked by hand
src=$tmp/src
mkdir -p "$src/sub"
big=$((5 * 1024 * 1024 + 12345))          # 80 units and a part: every server, uneven ends
head -c $big /dev/urandom >"$src/big"
run "$BUILD/arf" import "$tmp/src" "$M:/t"; check_rc "import big" 0 $?
for k in 1 2 3; do
	eval "e=\$ep_$k"
	run "$BUILD/arf" export "$e:/stripes" "$tmp/obj$k"; check_rc "export stripes of $k" 0 $?
	same "one object on server $k" "$(ls "$tmp/obj$k" | wc -l)" 1
done
# stripe s is on server s % 3, at (s / 3) * U of its object
units=$(( (big + U - 1) / U ))
s=0
: >"$tmp/rebuilt"
while [ $s -lt $units ]; do
	k=$((s % 3 + 1))
	dd if="$(ls -d "$tmp/obj$k"/*)" bs=$U skip=$((s / 3)) count=1 2>/dev/null >>"$tmp/rebuilt"
	s=$((s + 1))
done
if cmp -s "$src/big" "$tmp/rebuilt"; then ok; else bad "the stripes do not rebuild the file"; fi
obj_sizes=$(for k in 1 2 3; do stat -c %s "$tmp/obj$k"/*; done | tr '\n' ' ')
# 80 whole units and 12345 bytes: 27, 27 and 26 units; the part is stripe 80's, server 3's
same "object sizes" "$obj_sizes" "$((27 * U)) $((27 * U)) $((26 * U + 12345)) "

# ---- sizes around the stripe boundaries
for n in 0 1 $((U - 1)) $U $((U + 1)) $((2 * U)) $((3 * U - 1)) $((3 * U)) $((3 * U + 1)) \
         $((4 * U + 7)) $((9 * 1024 * 1024 + 3)); do
	head -c "$n" /dev/urandom >"$src/f$n"
done
printf 'deep\n' >"$src/sub/inner"
# sparse: a hole in the middle (no object bytes there) and one at the end
truncate -s $((10 * U)) "$src/holes"
printf 'AB' | dd of="$src/holes" bs=1 seek=$((U - 1)) conv=notrunc 2>/dev/null
printf 'CD' | dd of="$src/holes" bs=1 seek=$((7 * U + 5)) conv=notrunc 2>/dev/null
# a file to replace with a sparse one: its old bytes must not show through the new holes
head -c $((6 * U)) /dev/urandom >"$src/stale"
run "$BUILD/arf" import -v "$src" "$M:/t"; check_rc "import" 0 $?
contains "import summary" "$tmp/err" "0 errors"
run "$BUILD/arf" export -v "$M:/t" "$tmp/out1"; check_rc "export" 0 $?
run diff -r "$src" "$tmp/out1"; check_rc "diff -r after the round trip" 0 $?
same "sizes" "$(cd "$tmp/out1" && stat -c '%n %s' f* | sort | tr '\n' ' ')" \
	"$(cd "$src" && stat -c '%n %s' f* | sort | tr '\n' ' ')"
if [ -e "$tmp/out1/.arf-cluster" ]; then bad "the description was exported"; else ok; fi

rm "$src/stale"
truncate -s $((6 * U)) "$src/stale"
printf 'Z' | dd of="$src/stale" bs=1 seek=$((6 * U - 1)) conv=notrunc 2>/dev/null
head -c 100 /dev/urandom >"$src/big"          # shorter now
run "$BUILD/arf" import "$src" "$M:/t"; check_rc "import again" 0 $?
run "$BUILD/arf" export "$M:/t" "$tmp/out2"; check_rc "export again" 0 $?
run diff -r "$src" "$tmp/out2"; check_rc "diff -r after replacing (no stale bytes)" 0 $?
# the description is no file to import over
mkdir "$tmp/evil" && printf 'arf-cluster 1\nserver tcp:1.2.3.4:5\n' >"$tmp/evil/.arf-cluster"
run "$BUILD/arf" import "$tmp/evil" "$M:/"; check_rc "import over the description" 1 $?
run "$BUILD/arf" cluster show "$M"; check_rc "show after" 0 $?
contains "description kept" "$tmp/out" "server $ep_3"
# a cluster is made on an empty image only
run "$BUILD/arf" cluster init "$ep_1" "$ep_2"; check_rc "init over files" 1 $?
contains "init over files" "$tmp/err" "holds 'stripes'"

# fsck across the cluster: clean; a leaked object (no file has its inode and generation)
# is found and removed
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster" 0 $?
contains "fsck --cluster" "$tmp/out" "cluster clean"
mkdir "$tmp/leak" && printf 'lost bytes' >"$tmp/leak/424242.7"
run "$BUILD/arf" import "$tmp/leak" "$ep_1:/stripes"; check_rc "make a leaked object" 0 $?
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster finds a leak" 4 $?
contains "fsck --cluster finds a leak" "$tmp/out" "/stripes/424242.7: leaked, 10 bytes (the metadata inode 424242: no such inode)"
run "$BUILD/arf" fsck --cluster --repair "$M"; check_rc "fsck --cluster --repair" 1 $?
contains "fsck --cluster --repair" "$tmp/out" "repaired: removed"
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster after the repair" 0 $?
run "$BUILD/arf" fsck --cluster tcp:127.0.0.1:1; check_rc "fsck --cluster, no server" 8 $?

# grep searches it (arf_cluster_grep.sh compares it with GNU grep at length)
run "$BUILD/arf" grep -r -c -a x "$M:/t"; check_rc "grep -r on a cluster" 0 $?
same "grep -r -c on a cluster" "$(sed "s#^$M:/t#.#" "$tmp/out" | sort | md5sum)" \
	"$(cd "$src" && grep -r -c -a x . | sort | md5sum)"

# ---- faults: each within 10 s, a message naming the server
elapsed() { echo $(( $(date +%s) - $1 )); }
kill -STOP "$pid_2"
t0=$(date +%s)
run "$BUILD/arf" export "$M:/t" "$tmp/out3"; check_rc "export, a data server hung" 1 $?
el=$(elapsed "$t0")
if [ "$el" -le 10 ]; then ok; else bad "hung data server: $el s"; fi
contains "hung data server named" "$tmp/err" "data server $ep_2"
same "a file with no byte on it still read" "$(cmp "$src/f1" "$tmp/out3/f1" && echo same)" same
kill -CONT "$pid_2"

mkdir "$tmp/large"
head -c $((120 * 1024 * 1024)) /dev/zero | tr '\0' 'x' >"$tmp/large/x"
base=$(du -k "$tmp/img1" | cut -f1)
timeout 30 "$BUILD/arf" import "$tmp/large" "$M:/large" >"$tmp/out" 2>"$tmp/err" &
imp=$!
# in the middle: once 8 MiB of the file's 40 on server 1 are there
for _ in $(seq 200); do
	[ $(( $(du -k "$tmp/img1" | cut -f1) - base )) -ge 8192 ] && break
	kill -0 "$imp" 2>/dev/null || break
	sleep 0.05
done
t0=$(date +%s)
kill -KILL "$pid_2"
wait "$pid_2" 2>/dev/null
wait "$imp"; rc=$?
el=$(elapsed "$t0")
if [ $rc -eq 1 ]; then ok; else bad "import, a data server killed: exit status $rc"; fi
if [ "$el" -le 10 ]; then ok; else bad "import with a killed data server: $el s"; fi
contains "killed data server named" "$tmp/err" "data server $ep_2"

t0=$(date +%s)
run "$BUILD/arf" export "$M:/t" "$tmp/out4"; check_rc "export, a data server killed" 1 $?
el=$(elapsed "$t0")
if [ "$el" -le 10 ]; then ok; else bad "killed data server: $el s"; fi
contains "killed data server named" "$tmp/err" "data server $ep_2"
same "a file with no byte on it still read" "$(cmp "$src/f1" "$tmp/out4/f1" && echo same)" same

# back on its endpoint (its attach after the crash rolls back and recomputes): the files
# are whole again
: >"$tmp/arfd2b.log"
"$BUILD/arfd" --listen "$ep_2" --arf "$tmp/img2" 2>"$tmp/arfd2b.log" &
pid_2=$!
pids="$pids $pid_2"
for _ in $(seq 100); do
	grep -q "info: endpoint" "$tmp/arfd2b.log" && break
	kill -0 "$pid_2" 2>/dev/null || break
	sleep 0.1
done
run "$BUILD/arf" export "$M:/t" "$tmp/out5"; check_rc "export, the data server back" 0 $?
run diff -r "$src" "$tmp/out5"; check_rc "diff -r, the data server back" 0 $?
# the import cut short left stripes ahead of the size (data first, size last): fsck
# across the cluster finds them as stale tails and cuts them; the file reads as it is
run "$BUILD/arf" export "$M:/large" "$tmp/out6"; check_rc "export the cut-short file" 0 $?
same "the cut-short file is empty" "$(stat -c %s "$tmp/out6/x")" 0
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster, stale tails" 4 $?
contains "fsck --cluster, stale tails" "$tmp/out" "a stale tail"
run "$BUILD/arf" fsck --cluster --repair "$M"; check_rc "fsck --cluster --repair, stale tails" 1 $?
contains "fsck --cluster --repair, stale tails" "$tmp/out" "repaired: cut to 0 bytes"
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster, clean again" 0 $?

# a leaked object again, for the check with no server running (below)
mkdir "$tmp/leak2" && printf 'lost again' >"$tmp/leak2/515151.3"
run "$BUILD/arf" import "$tmp/leak2" "$ep_2:/stripes"; check_rc "make a second leaked object" 0 $?

# ---- every image clean once its server stopped
for k in 0 1 2 3; do
	eval "p=\$pid_$k"
	kill -TERM "$p"; wait "$p"; check_rc "arfd $k SIGTERM" 0 $?
done
pids=
# fsck --cluster of the images, nobody serving them: the leak found and removed, the data
# images taken in the order given (a count that does not match the description refused)
run "$BUILD/arf" fsck --cluster "$tmp/img0" "$tmp/img1" "$tmp/img2" "$tmp/img3"
check_rc "offline fsck --cluster finds the leak" 4 $?
contains "offline fsck --cluster finds the leak" "$tmp/out" "/stripes/515151.3: leaked, 10 bytes"
run "$BUILD/arf" fsck --cluster "$tmp/img0" "$tmp/img1" "$tmp/img2" "$tmp/img3" --repair
check_rc "offline fsck --cluster --repair" 1 $?
run "$BUILD/arf" fsck --cluster "$tmp/img0" "$tmp/img1" "$tmp/img2" "$tmp/img3"
check_rc "offline fsck --cluster, clean" 0 $?
contains "offline fsck --cluster, clean" "$tmp/out" "$tmp/img0: cluster clean"
run "$BUILD/arf" fsck --cluster "$tmp/img0" "$tmp/img1"; check_rc "offline, one data image of 3" 8 $?
contains "offline, one data image of 3" "$tmp/err" "names 3 data servers, 1 images given"
run "$BUILD/arf" fsck "$tmp/img0" "$tmp/img1"; check_rc "fsck of two images without --cluster" 8 $?
for k in 0 1 2 3; do
	run "$BUILD/arf" fsck "$tmp/img$k"; check_rc "fsck img$k" 0 $?
done

# ---- a one-server image: as before
arf_server 9 64M
run "$BUILD/arf" cluster show "$ep_9"; check_rc "one server: show" 0 $?
contains "one server: show" "$tmp/out" "one server"
run "$BUILD/arf" import "$src" "$ep_9:/t"; check_rc "one server: import" 0 $?
run "$BUILD/arf" export "$ep_9:/t" "$tmp/out9"; check_rc "one server: export" 0 $?
run diff -r "$src" "$tmp/out9"; check_rc "one server: diff -r" 0 $?
kill -TERM "$pid_9"; wait "$pid_9"; check_rc "arfd 9 SIGTERM" 0 $?
pids=
run "$BUILD/arf" fsck "$tmp/img9"; check_rc "one server: fsck" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
