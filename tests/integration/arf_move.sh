#!/bin/sh
# arf_move.sh: an ARF image moved from one arfd to another under real work (docs/arf.md,
# "Moving an image").  The image file is shared (shared storage): arfd A serves it, arfd B
# is started on the same image with --lock-wait and waits for A's lock; then A is told to
# move (move-to B in its --config file, SIGHUP):
#   1. a second arfd on the image without --lock-wait is refused with a message; arfd
#      --check takes a good move-to and refuses a bad one, arfd does not start with one;
#   2. a loop of `arf import` (a small tree each) and a loop of `arc run` (a 300 ms run),
#      every command given A's endpoint, through the move: every command exits 0 (the ones
#      in flight finish on A or are sent again to B, the later ones are redirected); `arc
#      stats` of A shows B's endpoint and one move; `arf export` through A's endpoint gives
#      back the trees, identical;
#   3. where FUSE works: `tar x` of 1500 files of /usr/include into a mount of B while B
#      moves to C the same way (0.3 s in): tar exits 0, the tree identical (diff -r);
#   4. arf fsck of the image clean.
#
#   BUILD=build sh tests/integration/arf_move.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`, every loop by a count; on exit the mount is undone and
# whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
pids=
loops=
mpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_move.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	for p in $loops; do kill "$p" 2>/dev/null; done
	mounted && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; }
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	if mounted; then echo "arf_move.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"
need arf_move.sh arf arfd arc pnasm

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

# successor PORT NAME: an arfd on PORT for the image that waits up to 30 s for its lock, its
# settings in $tmp/NAME.conf (a later move-to goes there), its log $tmp/NAME.log, pid_NAME
successor() {
	printf 'listen tcp:127.0.0.1:%s\narf %s\nlock-wait 30\n' "$1" "$img" >"$tmp/$2.conf"
	"$BUILD/arfd" --config "$tmp/$2.conf" 2>"$tmp/$2.log" &
	pids="$pids $!"
	eval "pid_$2=$!"
}

# move CONF LOG PID TO: write move-to TO into the config, SIGHUP the server; wait (10 s at
# most) for its log to say it let the image go
move() {
	echo "move-to $4" >>"$1"
	kill -HUP "$3"
	for _ in $(seq 100); do grep -q 'info: moved: ' "$2" && break; sleep 0.1; done
	if grep -q 'info: moved: ' "$2"; then ok; else bad "no move in $2:"; sed 's/^/  | /' "$2"; fi
}

img=$tmp/img
"$BUILD/arf" mkfs "$img" --size 256M >/dev/null || bad "mkfs"
printf 'arf %s\n' "$img" >"$tmp/a.conf"   # start_arfd gives the endpoint
start_arfd "$tmp/a.log" --config "$tmp/a.conf"
if [ -z "$ep" ]; then
	echo "arf_move.sh: arfd did not start:"; cat "$tmp/a.log"
	echo "$pass passed, 1 failed"; exit 1
fi
pid_a=$pid ep_a=$ep
pids="$pids $pid_a"

# 1. the image is A's: another arfd without --lock-wait is refused at once
run "$BUILD/arfd" --listen tcp:127.0.0.1:0 --arf "$img"
check_rc "a second arfd on a served image" 1 $?
contains "its message" "$tmp/err" "another arfd serves this image (it holds its lock)"

# the setting: checked as a client checks a MOVED reply; refused at a start
printf 'listen tcp:127.0.0.1:1\nmove-to tcp:127.0.0.1:0\n' >"$tmp/bad.conf"
run "$BUILD/arfd" --config "$tmp/bad.conf" --check
check_rc "arfd --check, a bad move-to" 2 $?
contains "its message" "$tmp/err" "move-to 'tcp:127.0.0.1:0': a port outside 1..65535"
printf 'listen tcp:127.0.0.1:1\nmove-to tcp:127.0.0.1:7\n' >"$tmp/move.conf"
run "$BUILD/arfd" --config "$tmp/move.conf" --check
check_rc "arfd --check, move-to" 0 $?
run "$BUILD/arfd" --config "$tmp/move.conf"
check_rc "arfd started with move-to" 2 $?
contains "its message" "$tmp/err" "applied by a reload (SIGHUP) of a running arfd"

port_b=$(free_port)
ep_b=tcp:127.0.0.1:$port_b
successor "$port_b" b

# 2. the work: 30 imports of a small tree each, 12 runs of a 300 ms segment, all through A
mkdir -p "$tmp/trees"
for i in $(seq 30); do
	mkdir -p "$tmp/trees/t$i/sub"
	seq "$i" $((i * 40)) >"$tmp/trees/t$i/numbers"
	head -c $((i * 3000)) /usr/include/stdio.h >"$tmp/trees/t$i/sub/head.h" 2>/dev/null ||
		seq 1000 >"$tmp/trees/t$i/sub/head.h"
done
printf '.hook pause "l:l"\n.const msg "hello\\n"\n.func main\n' >"$tmp/slow.pna"
for _ in $(seq 30); do printf '    push 10000\n    hcall pause\n    drop\n' >>"$tmp/slow.pna"; done
printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n' \
	>>"$tmp/slow.pna"
"$BUILD/pnasm" "$tmp/slow.pna" -o "$tmp/slow.pno" || bad "assemble"
(
	for i in $(seq 30); do
		timeout "$T" "$BUILD/arf" import "$tmp/trees/t$i" "$ep_a:/t$i" >/dev/null 2>>"$tmp/imp.err" ||
			echo "import $i failed" >>"$tmp/fails"
		sleep 0.05
	done
) &
loops="$loops $!"
imp=$!
(
	for i in $(seq 12); do
		out=$(timeout "$T" "$BUILD/arc" run "$ep_a" "$tmp/slow.pno" 2>>"$tmp/run.err")
		[ "$out" = hello ] || echo "run $i failed: '$out'" >>"$tmp/fails"
	done
) &
loops="$loops $!"
runs=$!
sleep 1.5
t0=$(date +%s%N)
move "$tmp/a.conf" "$tmp/a.log" "$pid_a" "$ep_b"
wait "$imp"
wait "$runs"
loops=
if [ ! -s "$tmp/fails" ]; then
	ok
else
	bad "$(wc -l <"$tmp/fails") commands failed through the move:"
	sed 's/^/  | /' "$tmp/fails" "$tmp/imp.err" "$tmp/run.err" | head -n 20
fi
echo "arf_move.sh: moved A to B $((($(date +%s%N) - t0) / 1000000)) ms before the loops ended"
for _ in $(seq 100); do grep -q "info: endpoint $ep_b" "$tmp/b.log" && break; sleep 0.1; done
contains "B took the image" "$tmp/b.log" "info: endpoint $ep_b"
# the work went on at B (the imports after the move), and a late client of A is sent there
run "$BUILD/arc" stats "$ep_a"
check_rc "arc stats through A" 0 $?
contains "the endpoint it reached" "$tmp/out" "client.endpoint $ep_b"
contains "one move" "$tmp/out" "client.moves 1"
rm -rf "$tmp/back"
mkdir -p "$tmp/back"
for i in $(seq 30); do
	run "$BUILD/arf" export "$ep_a:/t$i" "$tmp/back/t$i" || { bad "export t$i"; cat "$tmp/err"; }
done
if diff -r "$tmp/trees" "$tmp/back" >"$tmp/diff" 2>&1; then ok; else bad "trees differ:"; head -n 20 "$tmp/diff"; fi

# 3. a mount of B, tar x into it, while B moves to C
fuse=yes
if ! [ -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	fuse="no /dev/fuse or fusermount3"
else
	mkdir -p "$mnt"
	"$BUILD/arf" mount "$ep_b" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do mounted && break; kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
	mounted || fuse="FUSE could not be mounted here: $(head -n 1 "$tmp/mount.log")"
fi
if [ "$fuse" = yes ]; then
	mkdir -p "$tmp/src"
	if [ -d /usr/include ]; then
		(cd /usr/include && find . -type f -size -100k | sort | head -n 1500 >"$tmp/list" &&
			tar cf "$tmp/src.tar" -T "$tmp/list" 2>/dev/null)
	else
		tar cf "$tmp/src.tar" -C "$tmp/trees" .
	fi
	tar xf "$tmp/src.tar" -C "$tmp/src"
	port_c=$(free_port)
	ep_c=tcp:127.0.0.1:$port_c
	successor "$port_c" c
	mkdir -p "$mnt/x"
	t_tar=$(date +%s%N)
	timeout "$T" tar xf "$tmp/src.tar" -C "$mnt/x" 2>"$tmp/tar.err" &
	tarp=$!
	loops="$tarp"
	sleep 0.3
	t0=$(date +%s%N)
	move "$tmp/b.conf" "$tmp/b.log" "$pid_b" "$ep_c"
	wait "$tarp"
	check_rc "tar x into the mount through a move" 0 $?
	loops=
	echo "arf_move.sh: tar took $((($(date +%s%N) - t_tar) / 1000000)) ms, the move began 300 ms in"
	for _ in $(seq 100); do grep -q "info: endpoint $ep_c" "$tmp/c.log" && break; sleep 0.1; done
	[ -s "$tmp/tar.err" ] && sed 's/^/  | /' "$tmp/tar.err" | head -n 10
	contains "C took the image" "$tmp/c.log" "info: endpoint $ep_c"
	if diff -r "$tmp/src" "$mnt/x" >"$tmp/diff" 2>&1; then ok; else bad "the tree differs:"; head -n 20 "$tmp/diff"; fi
	timeout "$T" fusermount3 -u "$mnt" || bad "umount"
	wait "$mpid" 2>/dev/null
	mpid=
else
	echo "arf_move.sh: mount part skipped: $fuse"
fi

# 4. every server stopped (the moved ones too: they answer SIGTERM as usual), fsck clean
for p in $pids; do kill -TERM "$p" 2>/dev/null; done
for p in $pids; do wait "$p" 2>/dev/null; done
pids=
run "$BUILD/arf" fsck "$img"
check_rc "fsck after the moves" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
