#!/bin/sh
# session_link.sh: sessions ride through a link that goes down and comes back (docs/net.md,
# "Sessions").  arfd --arf in one network namespace, the clients in another, joined by a veth
# pair made here; `ip link set down` on the client's end for 5 s while
#   - a loop of `arc run` (a 200 ms segment) runs: every run exits 0 with its output;
#   - `tar x` of a tree writes into an `arf mount`: exit 0, the tree identical, fsck clean;
# and past the outage limit: `arc --outage 2000` and a mount with -o outage=2 fail with the
# outage message / EIO within about 1.5 times the limit (the session's connection breaks
# after half the limit of silence, TCP_USER_TIMEOUT), never hang, and work again once the
# link is back.  Needs root and `ip netns`; otherwise it says why and counts nothing.
#
#   BUILD=build sh tests/integration/session_link.sh     prints "N passed, N failed" last
# Every client call is bounded by `timeout`; on exit the mounts are undone, whatever was
# started is killed and the namespaces and the veth pair are deleted.

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-30}
ID=$$
NS_S=s17srv-$ID NS_C=s17cli-$ID V_S=sl-s$ID V_C=sl-c$ID
IP_S=10.234.$((ID % 200)).1 IP_C=10.234.$((ID % 200)).2 PORT=7072
EP=tcp:$IP_S:$PORT
loop=
mpid=
m2pid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/session_link.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mnt2=$tmp/mnt2
mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	[ -n "$loop" ] && kill "$loop" 2>/dev/null
	for d in "$mnt" "$mnt2"; do
		mounted "$d" && { fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null; }
	done
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$m2pid" ] && kill -KILL "$m2pid" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	for ns in "$NS_C" "$NS_S"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns" 2>/dev/null
	done
	ip link del "$V_S" 2>/dev/null
	if mounted "$mnt" || mounted "$mnt2"; then echo "session_link.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

skip() {
	echo "session_link.sh: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}
for p in arfd arc arf pnasm; do
	[ -x "$BUILD/$p" ] || { echo "session_link.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces and a veth pair)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
command -v nsenter >/dev/null 2>&1 || skip "nsenter (util-linux) not installed"
ip netns add "$NS_S" 2>/dev/null && ip netns add "$NS_C" 2>/dev/null || skip "ip netns add failed (no network namespaces here)"
ip link add "$V_S" type veth peer name "$V_C" 2>/dev/null || skip "ip link add type veth failed"
ip link set "$V_S" netns "$NS_S" && ip link set "$V_C" netns "$NS_C" &&
	ip -n "$NS_S" addr add "$IP_S/24" dev "$V_S" && ip -n "$NS_S" link set "$V_S" up &&
	ip -n "$NS_S" link set lo up && ip -n "$NS_C" addr add "$IP_C/24" dev "$V_C" &&
	ip -n "$NS_C" link set "$V_C" up && ip -n "$NS_C" link set lo up || skip "veth setup failed"
# nsenter --net only: the mounts made in the client's namespace are seen here (ip netns exec
# would make a mount namespace of its own).  Commands, not functions: timeout runs them, and
# $! of one started in the background is the program itself (nsenter execs it)
ns_s="nsenter --net=/run/netns/$NS_S"
ns_c="nsenter --net=/run/netns/$NS_C"
set_link() { ip -n "$NS_C" link set "$V_C" "$1"; }

# a segment of about 200 ms (20 pauses of 10 ms), then "hello"
{
	echo '.hook pause "l:l"'
	printf '%s\n' '.const msg "hello\n"' '.func main'
	for _ in $(seq 20); do printf '    push 10000\n    hcall pause\n    drop\n'; done
	printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n'
} >"$tmp/slow.pna"
run "$BUILD/pnasm" "$tmp/slow.pna" -o "$tmp/slow.pno"; check_rc assemble 0 $?
run "$BUILD/arf" mkfs "$tmp/fs.img" --size 128M; check_rc mkfs 0 $?

$ns_s "$BUILD/arfd" --listen "$EP" --arf "$tmp/fs.img" 2>"$tmp/arfd.log" &
pid=$!
for _ in $(seq 100); do grep -q 'info: endpoint' "$tmp/arfd.log" && break; sleep 0.1; done
grep -q 'info: endpoint' "$tmp/arfd.log" || { bad "arfd did not start:"; cat "$tmp/arfd.log"; echo "$pass passed, $fail failed"; exit 1; }

# 1. an arc run loop through 5 s of link down
run_loop 9 $ns_c "$BUILD/arc" run "$EP" "$tmp/slow.pno"
sleep 1.5
set_link down
sleep 5
set_link up
wait "$loop"
loop=
check_run_loop "5 s of link down" hello 4000
echo "session_link.sh: arc run through 5 s of link down: $n_ok of $n runs ok, longest $longest ms"

# 2. past the outage limit: a clear error within about 1.5 times the limit, then fine again
set_link down
t0=$(date +%s%N)
run $ns_c "$BUILD/arc" run "$EP" "$tmp/slow.pno" --outage 2000
rc=$?
ms=$(ms_since "$t0")
check_rc "arc --outage 2000, link down (new connection)" 2 $rc
contains "outage message" "$tmp/err" "unreachable for 2000 ms (the outage limit)"
if [ "$ms" -ge 1900 ] && [ "$ms" -lt 6000 ]; then ok; else bad "outage 2 s, link down: gave up after $ms ms"; fi
set_link up
# the link goes down while the request runs on an established connection: nothing resets
# it, only the silence tells (before keepalive and TCP_USER_TIMEOUT: the 30 s request timeout)
(sleep 0.05; set_link down; sleep 8; set_link up) &
dn=$!
t0=$(date +%s%N)
run $ns_c "$BUILD/arc" run "$EP" "$tmp/slow.pno" --outage 2000
rc=$?
ms=$(ms_since "$t0")
check_rc "arc --outage 2000, link down mid-request" 2 $rc
contains "outage message mid-request" "$tmp/err" "unreachable for 2000 ms (the outage limit)"
echo "session_link.sh: outage 2 s, link down mid-request for 8 s: exit $rc after $ms ms"
if [ "$ms" -ge 1900 ] && [ "$ms" -lt 7000 ]; then ok; else bad "outage 2 s, link down mid-request: gave up after $ms ms"; fi
wait "$dn"
run $ns_c "$BUILD/arc" run "$EP" "$tmp/slow.pno"; check_rc "arc run after the link came back" 0 $?

# 3. through a mount (FUSE where it can be used)
if ! [ -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "session_link.sh: mount part skipped: no /dev/fuse or fusermount3"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi
# the tree: up to 800 files of /usr/include (a generated one where there is none)
mkdir -p "$tmp/src" "$mnt" "$mnt2"
if [ -d /usr/include ]; then
	(cd /usr/include && find . -type f -size -200k | sort | head -n 800 >"$tmp/list" &&
		tar cf "$tmp/src.tar" -T "$tmp/list" 2>/dev/null)
else
	for i in $(seq 400); do mkdir -p "$tmp/gen/d$((i % 20))"; seq "$i" 3000 >"$tmp/gen/d$((i % 20))/f$i"; done
	tar cf "$tmp/src.tar" -C "$tmp/gen" .
fi
tar xf "$tmp/src.tar" -C "$tmp/src"
$ns_c "$BUILD/arf" mount "$EP" "$mnt" -f 2>"$tmp/mount.log" &
mpid=$!
for _ in $(seq 100); do mounted "$mnt" && break; kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
if ! mounted "$mnt"; then
	cat "$tmp/mount.log"
	echo "session_link.sh: mount part skipped: FUSE may not be mounted here (above)"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi
mkdir "$mnt/x"
t0=$(date +%s%N)
(cd "$mnt/x" && timeout 120 tar xf "$tmp/src.tar") 2>"$tmp/tar.err" &
tpid=$!
sleep 0.3
set_link down
sleep 5
set_link up
wait "$tpid"
rc=$?
ms=$(ms_since "$t0")
check_rc "tar x into the mount through 5 s of link down" 0 $rc
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$tmp/tar.err" | head -n 5
echo "session_link.sh: tar x of $(find "$tmp/src" -type f | wc -l) files through 5 s of link down: exit $rc in $ms ms"
if diff -r "$tmp/src" "$mnt/x" >"$tmp/diff" 2>&1; then ok; else bad "the tree differs:"; head -n 5 "$tmp/diff" | sed 's/^/  | /'; fi

# a mount with outage=2: EIO past the limit, in bounded time; fine again after
$ns_c "$BUILD/arf" mount "$EP" "$mnt2" -f -o outage=2,attr_timeout=0,entry_timeout=0 2>"$tmp/mount2.log" &
m2pid=$!
for _ in $(seq 100); do mounted "$mnt2" && break; kill -0 "$m2pid" 2>/dev/null || break; sleep 0.1; done
echo hello >"$mnt2/f"
set_link down
t0=$(date +%s%N)
timeout "$T" cat "$mnt2/f" >"$tmp/out" 2>"$tmp/err"
rc=$?
ms=$(ms_since "$t0")
set_link up
check_rc "cat on a mount with outage=2 while the link is down" 1 $rc
contains "EIO" "$tmp/err" "Input/output error"
echo "session_link.sh: mount -o outage=2, link down: exit $rc after $ms ms"
if [ "$ms" -lt 6000 ]; then ok; else bad "outage=2 mount: gave up after $ms ms"; fi
same "cat after the link came back" "$(timeout "$T" cat "$mnt2/f" 2>&1)" hello

for d in "$mnt2" "$mnt"; do timeout "$T" fusermount3 -u "$d" || bad "umount $d"; done
wait "$mpid" "$m2pid" 2>/dev/null
mpid= m2pid=
kill -TERM "$pid"
wait "$pid"
pid=
run "$BUILD/arf" fsck "$tmp/fs.img"; check_rc "fsck after the link tests" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
