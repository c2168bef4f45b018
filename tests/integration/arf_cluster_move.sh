#!/bin/sh
# arf_cluster_move.sh: a cluster's data server moved to another arfd while clients read
# (docs/cluster.md, "Moving a data server").  1 metadata + 2 data arfd sharing a cluster
# key, 64 KiB stripes; data server 2 serves its image from a --config file, and its
# successor B waits for the image's lock on another port:
#   1. `arf cluster move` refuses: a server that is not a data server, a target that is
#      one already, a target without /stripes, and the target while the old server still
#      serves its image (exit 1, each named);
#   2. a loop of `arf export` of the tree (every file across stripes of both servers) and a
#      mount reading it, while server 2 moves to B (move-to, SIGHUP): every export exits 0
#      and gives the tree back identical; the mount reads it identical after the move;
#   3. `arf cluster move M OLD B`: `arf cluster show` names B, and so does /.arf-cluster
#      read through the mount that ran through it (which refuses to write it); the metadata server, still
#      run with the old --member (which it had matched at a delegated read before), refuses
#      a delegated read naming the mismatch (no bytes),
#      and restarted with the new list reads the file whole; with the old server stopped,
#      export gives the tree back identical and `arf fsck --cluster` is clean.
#
#   BUILD=build sh tests/integration/arf_cluster_move.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`, every loop by a count; on exit the mount is undone and
# whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
pids=
loops=
mpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_move.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	for p in $loops; do kill "$p" 2>/dev/null; done
	mounted && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; }
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	if mounted; then echo "arf_cluster_move.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster_move.sh arf arfd arc

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key"

# free_port: a loopback port nobody listens on now (an arfd on port 0 tells, then goes):
# B must be named before it listens, since it listens only once it holds the image
free_port() {
	start_arfd "$tmp/probe.log"
	_p=${ep##*:}
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
	echo "$_p"
}

# data server 1 as the other scripts start it; data server 2 from a config file (the move
# goes there); then the metadata server with both as members
arf_server 1 64M --cluster-key-file "$tmp/key"
"$BUILD/arf" mkfs "$tmp/img2" --size 64M >/dev/null || bad "mkfs img2"
printf 'arf %s\ncluster-key-file %s\n' "$tmp/img2" "$tmp/key" >"$tmp/d2.conf"
start_arfd "$tmp/arfd2.log" --config "$tmp/d2.conf"
[ -n "$ep" ] || { bad "data server 2 did not start:"; cat "$tmp/arfd2.log"; echo "$pass passed, $fail failed"; exit 1; }
pid_2=$pid ep_2=$ep
pids="$pids $pid_2"
arf_server 0 64M --cluster-key-file "$tmp/key" --member "$ep_1" --member "$ep_2"
M=$ep_0
data="$ep_1 $ep_2"
arf_cluster_init

mkdir -p "$tmp/src/sub"
head -c $((5 * U + 777)) /dev/urandom >"$tmp/src/big"           # stripes on both servers
seq 1 40000 >"$tmp/src/sub/numbers"
for i in 1 2 3 4 5 6; do printf 'small file %s\n' "$i" >"$tmp/src/sub/s$i"; done
run "$BUILD/arf" import "$tmp/src" "$M:/t"; check_rc "import" 0 $?
# a delegated read: the metadata server checks its members and remembers the match
run "$BUILD/arf" cluster cat "$M:/t/big"; check_rc "a delegated read" 0 $?
if cmp -s "$tmp/out" "$tmp/src/big"; then ok; else bad "delegated read: bytes differ"; fi

# ---- 1. refusals
run "$BUILD/arf" cluster move "$M" tcp:127.0.0.1:9 "$ep_2"
check_rc "move: not a data server" 1 $?
contains "its message" "$tmp/err" "tcp:127.0.0.1:9 is not a data server of this cluster"
run "$BUILD/arf" cluster move "$M" "$ep_2" "$ep_1"
check_rc "move: onto a data server" 1 $?
contains "its message" "$tmp/err" "$ep_1 is data server 0 of this cluster already"
run "$BUILD/arf" cluster move "$M" "$ep_2"
check_rc "move: a missing argument" 2 $?
# a server of an image that is no data server's (no /stripes)
arf_server 9 16M --cluster-key-file "$tmp/key"
run "$BUILD/arf" cluster move "$M" "$ep_2" "$ep_9"
check_rc "move: a target without /stripes" 1 $?
contains "its message" "$tmp/err" "$ep_9: /stripes: No such file or directory (not a data server's image)"
# one with /stripes, while server 2 still serves its own image
mkdir -p "$tmp/empty/stripes"
run "$BUILD/arf" import "$tmp/empty/stripes" "$ep_9:/stripes"; check_rc "a /stripes on server 9" 0 $?
run "$BUILD/arf" cluster move "$M" "$ep_2" "$ep_9"
check_rc "move: the old server still serves" 1 $?
contains "its message" "$tmp/err" "$ep_2 still serves its image: move it to $ep_9 first"
run "$BUILD/arf" cluster show "$M"
contains "the description unchanged" "$tmp/out" "server $ep_2"

# ---- 2. the move, under reads
port_b=$(free_port)
ep_b=tcp:127.0.0.1:$port_b
printf 'listen %s\narf %s\ncluster-key-file %s\nlock-wait 30\n' "$ep_b" "$tmp/img2" "$tmp/key" >"$tmp/b.conf"
"$BUILD/arfd" --config "$tmp/b.conf" 2>"$tmp/b.log" &
pid_b=$!
pids="$pids $pid_b"

fuse=yes
if ! [ -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	fuse="no /dev/fuse or fusermount3"
else
	mkdir -p "$mnt"
	"$BUILD/arf" mount "$M" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do mounted && break; kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
	mounted || fuse="FUSE could not be mounted here: $(head -n 1 "$tmp/mount.log")"
fi
if [ "$fuse" = yes ]; then
	if diff -r "$tmp/src" "$mnt/t" >"$tmp/diff" 2>&1; then ok; else bad "the mount before the move:"; head "$tmp/diff"; fi
fi

(
	for i in $(seq 12); do
		rm -rf "$tmp/back$i"
		if timeout "$T" "$BUILD/arf" export "$M:/t" "$tmp/back$i" 2>>"$tmp/exp.err"; then
			diff -r "$tmp/src" "$tmp/back$i" >/dev/null 2>&1 || echo "export $i: the tree differs" >>"$tmp/fails"
		else
			echo "export $i failed" >>"$tmp/fails"
		fi
		rm -rf "$tmp/back$i"
		sleep 0.1
	done
) &
exp=$!
loops="$exp"
sleep 0.5
echo "move-to $ep_b" >>"$tmp/d2.conf"
kill -HUP "$pid_2"
for _ in $(seq 100); do grep -q 'info: moved: ' "$tmp/arfd2.log" && break; sleep 0.1; done
if grep -q 'info: moved: ' "$tmp/arfd2.log"; then ok; else bad "no move in arfd2.log:"; sed 's/^/  | /' "$tmp/arfd2.log"; fi
wait "$exp"
loops=
if [ ! -s "$tmp/fails" ]; then
	ok
else
	bad "$(wc -l <"$tmp/fails") exports failed through the move:"
	sed 's/^/  | /' "$tmp/fails" "$tmp/exp.err" | head -n 20
fi
for _ in $(seq 100); do grep -q "info: endpoint $ep_b" "$tmp/b.log" && break; sleep 0.1; done
contains "B took the image" "$tmp/b.log" "info: endpoint $ep_b"
if [ "$fuse" = yes ]; then
	if diff -r "$tmp/src" "$mnt/t" >"$tmp/diff" 2>&1; then ok; else bad "the mount after the move:"; head "$tmp/diff"; fi
else
	echo "arf_cluster_move.sh: the mount not checked: $fuse"
fi

# ---- 3. the description follows
run "$BUILD/arf" cluster move "$M" "$ep_2" "$ep_b"; check_rc "move" 0 $?
contains "its report" "$tmp/out" "data server $ep_2 is now $ep_b"
run "$BUILD/arf" cluster show "$M"
contains "show names B" "$tmp/out" "server $ep_b"
if grep -qF "server $ep_2" "$tmp/out"; then bad "show still names $ep_2"; else ok; fi
if [ "$fuse" = yes ]; then
	# the mount that ran through the move: the new description (a new inode, renamed in)
	# reads from the metadata image, and the mount refuses to write it, as the old one
	sleep 1.2                  # (the kernel's entry for the name expires: entry_timeout=1)
	run cat "$mnt/.arf-cluster"
	contains "the new description through the mount" "$tmp/out" "server $ep_b"
	run sh -c "echo x >>'$mnt/.arf-cluster'"
	if [ $? -ne 0 ] && grep -q "Operation not permitted" "$tmp/err"; then ok
	else bad "a write to the new description through the mount was not refused"; fi
	timeout "$T" fusermount3 -u "$mnt" || bad "umount"
	wait "$mpid" 2>/dev/null
	mpid=
fi
run "$BUILD/arf" cluster move "$M" "$ep_2" "$ep_b"
check_rc "move again" 1 $?
# the metadata server still has the old --member: its remembered match was of the old
# description, so delegation is refused, naming the mismatch
run "$BUILD/arf" cluster cat "$M:/t/big"
check_rc "a delegated read with the old members" 1 $?
contains "its message" "$tmp/err" "--member 1 is $ep_2 but the image's cluster description names $ep_b as data server 1"
same "no bytes" "$(wc -c <"$tmp/out")" 0
# restarted with the new list
kill -TERM "$pid_0"
wait "$pid_0" 2>/dev/null
start_arfd "$tmp/arfd0b.log" --arf "$tmp/img0" --cluster-key-file "$tmp/key" --member "$ep_1" --member "$ep_b"
[ -n "$ep" ] || { bad "the metadata server did not restart:"; cat "$tmp/arfd0b.log"; }
pids="$pids $pid"
M=$ep
run "$BUILD/arf" cluster cat "$M:/t/big"; check_rc "a delegated read with the new members" 0 $?
if cmp -s "$tmp/out" "$tmp/src/big"; then ok; else bad "delegated read: bytes differ"; fi
# the old server gone: the description alone leads to B
kill -TERM "$pid_2"
wait "$pid_2" 2>/dev/null
rm -rf "$tmp/back"
run "$BUILD/arf" export "$M:/t" "$tmp/back"; check_rc "export, the old server stopped" 0 $?
if diff -r "$tmp/src" "$tmp/back" >"$tmp/diff" 2>&1; then ok; else bad "export after: the tree differs"; head "$tmp/diff"; fi
run "$BUILD/arf" fsck --cluster "$M"; check_rc "fsck --cluster" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
