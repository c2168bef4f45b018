#!/usr/bin/env bash
# bench/fs/fsync_tail.sh: how long the fsync after a bulk write through `arf mount` takes
# (issue #7: the image's pages still dirty in arfd's page cache when the data is in), for one
# or more builds, alternately, over the same shaped veth pair as run.sh.  ARF only.
#
#   bash bench/fs/fsync_tail.sh [--builds "DIR ..."] [--net 1gbit|unlimited] [--mib N] [--rounds R]
#
# Each round and build: a fresh image (mkfs) and arfd in the server namespace, a mount in the
# client namespace, then `dd if=/dev/zero of=$M/big bs=1M count=N` (no fsync: its close waits
# until arfd applied every byte) and `sync $M/big` (one fsync), each timed, then unmount and
# stop.  Prints one line per run: build, write s, fsync s, total s.  Needs root; everything
# it makes (a mktemp directory, two namespaces, a veth pair) goes on exit.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILDS=$TOP/build NET=1gbit MIB=2048 ROUNDS=2
while [ $# -gt 0 ]; do
	case $1 in
	--builds) BUILDS=$2; shift ;;
	--net) NET=$2; shift ;;
	--mib) MIB=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "fsync_tail.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "fsync_tail.sh: needs root" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf-fsync-tail.XXXXXX") || exit 1
ID=$$
NS_S=arftail-srv-$ID NS_C=arftail-cli-$ID V_S=aft-s$ID V_C=aft-c$ID
IP_S=10.232.0.1 IP_C=10.232.0.2 PORT=7071
M=$tmp/mnt
ns_s() { nsenter --net="/run/netns/$NS_S" "$@"; }
ns_c() { nsenter --net="/run/netns/$NS_C" "$@"; }
mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
arfd_pid= mnt_pid=
stop_all() {
	if mounted "$M"; then
		timeout 60 fusermount3 -u "$M" 2>/dev/null || fusermount3 -u -z "$M" 2>/dev/null
	fi
	if [ -n "$mnt_pid" ]; then
		for _ in $(seq 100); do kill -0 "$mnt_pid" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$mnt_pid" 2>/dev/null; wait "$mnt_pid" 2>/dev/null; mnt_pid=
	fi
	if [ -n "$arfd_pid" ]; then
		kill -TERM "$arfd_pid" 2>/dev/null
		for _ in $(seq 300); do kill -0 "$arfd_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$arfd_pid" 2>/dev/null; wait "$arfd_pid" 2>/dev/null; arfd_pid=
	fi
}
cleanup() {
	trap - EXIT
	stop_all
	for ns in "$NS_C" "$NS_S"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns" 2>/dev/null
	done
	ip link del "$V_S" 2>/dev/null
	mounted "$M" && echo "fsync_tail.sh: $M still mounted, $tmp left" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "fsync_tail.sh: $*" >&2; exit 1; }

mkdir -p "$M" "$tmp/srv"
n=0
for b in $BUILDS; do      # copies: a rebuild meanwhile does not change what is measured
	n=$((n + 1))
	mkdir -p "$tmp/b$n/arfseg"
	cp "$b/arf" "$b/arfd" "$tmp/b$n/" && cp "$b"/arfseg/*.pno "$tmp/b$n/arfseg/" || die "cannot copy $b"
	echo "$b" >"$tmp/b$n/name"
done

ip netns add "$NS_S" && ip netns add "$NS_C" || die "ip netns add failed"
ip link add "$V_S" type veth peer name "$V_C" || die "ip link add failed"
ip link set "$V_S" netns "$NS_S" && ip link set "$V_C" netns "$NS_C" &&
ns_s ip addr add "$IP_S/24" dev "$V_S" && ns_s ip link set "$V_S" up && ns_s ip link set lo up &&
ns_c ip addr add "$IP_C/24" dev "$V_C" && ns_c ip link set "$V_C" up && ns_c ip link set lo up ||
	die "veth setup failed"
if [ "$NET" != unlimited ]; then    # as run.sh: a token bucket on both ends
	ns_s tc qdisc add dev "$V_S" root tbf rate "$NET" burst 512kb latency 10ms &&
	ns_c tc qdisc add dev "$V_C" root tbf rate "$NET" burst 512kb latency 10ms || die "tc failed"
fi

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
echo "fsync_tail.sh: $(date -u '+%Y-%m-%d %H:%M') UTC, $NET, $MIB MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-40s %8s %8s %8s\n' build write_s fsync_s total_s
for r in $(seq "$ROUNDS"); do
	for i in $(seq "$n"); do
		B=$tmp/b$i
		rm -f "$tmp/srv/arf.img"
		timeout 120 "$B/arf" mkfs "$tmp/srv/arf.img" --size "$((MIB + 1024))M" >/dev/null 2>&1 ||
			die "mkfs failed"
		nsenter --net="/run/netns/$NS_S" "$B/arfd" --listen "tcp:$IP_S:$PORT" --arf "$tmp/srv/arf.img" 2>"$tmp/arfd.log" &
		arfd_pid=$!
		for _ in $(seq 100); do grep -q "endpoint tcp:" "$tmp/arfd.log" && break; sleep 0.1; done
		nsenter --net="/run/netns/$NS_C" "$B/arf" mount "tcp:$IP_S:$PORT" "$M" -f 2>"$tmp/mnt.log" &
		mnt_pid=$!
		for _ in $(seq 200); do mounted "$M" && break; sleep 0.05; done
		mounted "$M" || die "mount failed: $(cat "$tmp/mnt.log" "$tmp/arfd.log")"
		t0=$EPOCHREALTIME
		timeout 900 dd if=/dev/zero of="$M/big" bs=1M count="$MIB" status=none || die "dd failed"
		t1=$EPOCHREALTIME
		timeout 900 sync "$M/big" || die "sync failed"
		t2=$EPOCHREALTIME
		printf '%-40s %8s %8s %8s\n' "$(cat "$B/name")" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" \
			"$(secs "$t0" "$t2")"
		stop_all
	done
done
