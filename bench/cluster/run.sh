#!/usr/bin/env bash
# bench/cluster/run.sh: ARF on 1, 2 and 3 data servers (issue #18): does a cluster of N data
# servers give N times one?  Every server (the metadata arfd and each data arfd) lives in a
# network namespace of its own behind its own veth link to the client's namespace, each link
# shaped to --rate (tbf, both ends, as bench/grep), and each server held to the same CPU share
# by a cgroup (--cpu-max, cgroup v2 cpu.max; v1 cpu.cfs_quota_us where the cpu controller is
# bound to v1), so that N servers have N links and N times the CPU, as N machines would.
# For each N: fresh images, `arf cluster init`, the grep corpus imported (not timed), then
# --runs times:
#   write    dd of a --size file of random bytes (prepared on the client's disk beforehand)
#            into a fresh `arf mount`, conv=fsync
#   read     the same file back through a fresh mount (dd to /dev/null); the first run also
#            compares it with the source (cmp, not timed)
#   grep     `arf grep PATTERN` over a striped text file (--grep-size)
#   grep -r  `arf grep -r PATTERN` over a source tree (linux-source's, or a generated one)
# Both greps' outputs must be byte-identical to GNU grep's on the local copy (sorted for -r),
# else the run is marked MISMATCH and run.sh exits 1.  Table on stdout and in
# results/NAME.txt, raw rows in results/NAME.csv, the plot in results/NAME.png (gnuplot) or
# results/NAME.dat + plot.gp to draw it.
#
#   bash bench/cluster/run.sh [--quick] [--size SIZE] [--grep-size SIZE] [--runs K]
#        [--servers "1 2 3"] [--cpu-max "40000 100000"] [--rate 1gbit] [--stripe-unit 1M]
#        [--layout rotate|flat]
#        [--tree-dirs "DIR ..."|all] [--pattern P] [--img-dir DIR] [--timeout S]
#        [--out NAME] [--build DIR] [--no-verify]
#   (make bench-cluster BENCH_CLUSTER_ARGS=--quick)
#
# --size: the file written and read (4G; 256M with --quick).  --grep-size: the striped text
# file grep scans (the --size; the servers' scan takes any size, docs/cluster.md).  --layout:
# `arf cluster init`'s (rotate, its default, or flat: every file's first stripe on data
# server 0, the layout of the first clusters).  --quick: --size 256M, --runs 2, the tree of text files from
# /usr/include and /usr/share/doc (~20 MB).  Otherwise the tree is Debian's linux-source
# (installed when missing; --tree-dirs picks top-level directories of it), or the quick
# tree when it cannot be had (the output says so).  --img-dir: where the server images live
# (default /dev/shm when it has room, so that the one disk of this machine is not a resource
# the servers share; the servers' page cache is warm, the client's is cold: fresh mounts).
# Needs root.  Everything is removed on exit (namespaces, veth links, cgroups, mounts,
# processes, images), also on failure; every step is bounded by `timeout`.
set -uo pipefail
umask 022
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILD=$TOP/build
QUICK=0 SIZE= GREP_SIZE= RUNS= SERVERS="1 2 3" CPU_MAX="40000 100000" RATE=1gbit UNIT=1M LAYOUT=rotate
TREE_DIRS=all PATTERN='Free Software Foundation' IMG_DIR= TO= OUT= VERIFY=1
ARGS=$( [ $# -gt 0 ] && printf ' %q' "$@")   # the command line, quoted as typed back
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--size) SIZE=$2; shift ;;
	--grep-size) GREP_SIZE=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--servers) SERVERS=$2; shift ;;
	--cpu-max) CPU_MAX=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--stripe-unit) UNIT=$2; shift ;;
	--layout) LAYOUT=$2; shift ;;
	--tree-dirs) TREE_DIRS=$2; shift ;;
	--pattern) PATTERN=$2; shift ;;
	--img-dir) IMG_DIR=$2; shift ;;
	--timeout) TO=$2; shift ;;
	--out) OUT=$2; shift ;;
	--build) BUILD=$(cd "$2" && pwd) || exit 2; shift ;;
	--no-verify) VERIFY=0 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "run.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$QUICK" = 1 ]; then
	SIZE=${SIZE:-256M} RUNS=${RUNS:-2} TO=${TO:-300} OUT=${OUT:-cluster-quick}
else
	SIZE=${SIZE:-4G} RUNS=${RUNS:-3} TO=${TO:-1800} OUT=${OUT:-cluster}
fi
die() { echo "run.sh: $*" >&2; exit 1; }
bytes() {   # 256M, 4G, 1024K, 12345 -> bytes
	case $1 in
	*[kK]) echo $(( ${1%?} << 10 )) ;; *[mM]) echo $(( ${1%?} << 20 )) ;;
	*[gG]) echo $(( ${1%?} << 30 )) ;; *[0-9]) echo "$1" ;; *) return 1 ;;
	esac
}
SIZE_B=$(bytes "$SIZE") && [ "$SIZE_B" -gt 0 ] || die "--size $SIZE: want a size like 256M or 4G"
GREP_NOTE=
if [ -z "$GREP_SIZE" ]; then
	GREP_B=$SIZE_B
else
	GREP_B=$(bytes "$GREP_SIZE") && [ "$GREP_B" -gt 0 ] || die "--grep-size $GREP_SIZE: want a size like 256M"
fi
read -r CPU_Q CPU_P <<<"$CPU_MAX"
case "$CPU_Q $CPU_P" in
max\ [0-9]*|[0-9]*\ [0-9]*) ;;
*) die "--cpu-max '$CPU_MAX': want \"QUOTA PERIOD\" in microseconds (e.g. \"40000 100000\") or \"max 100000\"" ;;
esac
for n in $SERVERS; do case $n in [1-9]) ;; *) die "--servers: $n: want numbers 1 to 9" ;; esac; done
MAXN=$(printf '%s\n' $SERVERS | sort -n | tail -n 1)
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, cgroups, mounts)"
for p in arf arfd; do [ -x "$BUILD/$p" ] || die "$BUILD/$p not built (make)"; done
for p in ip tc nsenter fusermount3 dd cmp; do command -v "$p" >/dev/null || die "$p not found"; done
BUILD_DESC=$(git -C "$BUILD/.." describe --always --dirty 2>/dev/null || echo unknown)

# ---- the tree: linux-source when it is there or installable (not with --quick)
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
KT=
if [ "$QUICK" = 0 ]; then
	KT=$(ls /usr/src/linux-source-*.tar.* 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$KT" ] && command -v apt-get >/dev/null; then
		echo "run.sh: installing linux-source"
		DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq linux-source >/dev/null 2>&1
		KT=$(ls /usr/src/linux-source-*.tar.* 2>/dev/null | sort -V | tail -n 1)
	fi
	[ -n "$KT" ] || echo "run.sh: linux-source not there and not installable: the generated tree instead"
fi

# ---- the workspace; cleanup undoes everything, whatever state it finds
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf-bench-cluster.XXXXXX") || exit 1
ID=$$
NS_C=arfcl-cli-$ID
MNT=$tmp/mnt
BIN=$tmp/bin
CG= CGV=
declare -a SPID=()   # arfd pid per namespace index (0: metadata, 1..N: data)
mpid=
imgdir=

# shellcheck source=../lib.sh
. "$HERE/../lib.sh"   # ns_c, mounted, unmount, arf_mount_at, arf_umount_at, stop

ns_k() { local k=$1; shift; nsenter --net="/run/netns/arfcl-s$k-$ID" "$@"; }
stop_servers() {
	local k
	for k in "${!SPID[@]}"; do stop "${SPID[$k]}"; wait "${SPID[$k]}" 2>/dev/null; done
	SPID=()
}
cleanup() {
	trap - EXIT
	local k p ns
	unmount "$MNT"
	[ -n "$mpid" ] && { kill -KILL "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null; }
	stop_servers
	for ns in "$NS_C" $(for k in $(seq 0 "$MAXN"); do echo "arfcl-s$k-$ID"; done); do
		[ -e "/run/netns/$ns" ] || continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	for k in $(seq 0 "$MAXN"); do ip link del "acv$ID-$k" 2>/dev/null; done
	if [ -n "$CG" ]; then
		for k in $(seq 0 "$MAXN"); do [ -d "$CG/s$k" ] && rmdir "$CG/s$k" 2>/dev/null; done
		rmdir "$CG" 2>/dev/null
	fi
	[ -n "$imgdir" ] && rm -rf "$imgdir"
	if mounted "$MNT"; then echo "run.sh: $MNT still mounted, $tmp left" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

mkdir -p "$BIN/arfseg" "$MNT" "$tmp/log" "$tmp/out" "$tmp/exp"
# a copy of the programs: others may rebuild build/ while this runs
cp "$BUILD/arf" "$BUILD/arfd" "$BIN/" && cp "$BUILD"/arfseg/*.pno "$BIN/arfseg/" || die "cannot copy the programs from $BUILD"

# ---- cgroups: one per server, the same CPU share each
if [ -r /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
	CGV=2; CGROOT=/sys/fs/cgroup
elif [ -r /sys/fs/cgroup/unified/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/unified/cgroup.controllers; then
	CGV=2; CGROOT=/sys/fs/cgroup/unified
elif [ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
	CGV=1; CGROOT=/sys/fs/cgroup/cpu
else
	die "no cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us) to hold the servers to a CPU share"
fi
CG=$CGROOT/arfcl-$ID
mkdir "$CG" || die "mkdir $CG failed"
if [ "$CGV" = 2 ]; then
	grep -qw cpu "$CGROOT/cgroup.subtree_control" || echo +cpu >"$CGROOT/cgroup.subtree_control" ||
		die "cannot enable the cpu controller in $CGROOT"
	echo +cpu >"$CG/cgroup.subtree_control" || die "cannot enable the cpu controller in $CG"
fi
for k in $(seq 0 "$MAXN"); do
	mkdir "$CG/s$k" || die "mkdir $CG/s$k failed"
	if [ "$CGV" = 2 ]; then
		echo "$CPU_Q $CPU_P" >"$CG/s$k/cpu.max" || die "cpu.max of $CG/s$k failed"
	else
		echo "$CPU_P" >"$CG/s$k/cpu.cfs_period_us" &&
			echo "$([ "$CPU_Q" = max ] && echo -1 || echo "$CPU_Q")" >"$CG/s$k/cpu.cfs_quota_us" ||
			die "cpu.cfs_quota_us of $CG/s$k failed"
	fi
done
CG_DESC="cgroup v$CGV $([ "$CGV" = 2 ] && echo "cpu.max '$CPU_Q $CPU_P'" || echo "cpu.cfs_quota_us $CPU_Q / cpu.cfs_period_us $CPU_P (cpu is bound to the v1 hierarchy here)")"
# seconds a server's cgroup was throttled (cpu.stat)
throttled_s() {
	if [ "$CGV" = 2 ]; then awk '$1 == "throttled_usec" { printf "%.3f", $2 / 1e6 }' "$CG/s$1/cpu.stat"
	else awk '$1 == "throttled_time" { printf "%.3f", $2 / 1e9 }' "$CG/s$1/cpu.stat"; fi
}

# ---- the network: the client's namespace, and per server a namespace and a veth link
ip netns add "$NS_C" || die "ip netns add $NS_C failed"
ns_c ip link set lo up
for k in $(seq 0 "$MAXN"); do
	ns=arfcl-s$k-$ID vs=acv$ID-$k vc=acc$ID-$k
	[ ${#vs} -le 15 ] || die "interface name $vs too long"
	ip netns add "$ns" || die "ip netns add $ns failed"
	ip link add "$vs" type veth peer name "$vc" || die "ip link add $vs failed"
	ip link set "$vs" netns "$ns" && ip link set "$vc" netns "$NS_C" || die "ip link set netns failed"
	ns_k "$k" ip addr add "10.233.$k.1/24" dev "$vs" && ns_k "$k" ip link set "$vs" up && ns_k "$k" ip link set lo up &&
		ns_c ip addr add "10.233.$k.2/24" dev "$vc" && ns_c ip link set "$vc" up || die "addresses on $vs failed"
	if [ "$RATE" != unlimited ]; then
		ns_k "$k" tc qdisc add dev "$vs" root tbf rate "$RATE" burst 512kb latency 10ms &&
			ns_c tc qdisc add dev "$vc" root tbf rate "$RATE" burst 512kb latency 10ms || die "tc tbf on $vs failed"
	fi
done
EP_M=tcp:10.233.0.1:7000
ep_of() { echo "tcp:10.233.$1.1:7000"; }

# ---- the corpus: $tmp/exp/tree, $tmp/exp/big (the grep file), $tmp/src (the written file)
t0=$(now)
if [ -n "$KT" ]; then
	top=$(tar -tf "$KT" 2>/dev/null | head -n 1 | cut -d/ -f1)
	echo "run.sh: unpacking $KT ($TREE_DIRS)"
	mkdir -p "$tmp/k"
	if [ "$TREE_DIRS" = all ]; then
		timeout 1800 tar -xf "$KT" -C "$tmp/k" || die "tar -x $KT failed"
		CORPUS=$top
	else
		timeout 1800 tar -xf "$KT" -C "$tmp/k" $(for d in $TREE_DIRS; do echo "$top/$d"; done) || die "tar -x of $TREE_DIRS failed"
		CORPUS="$top/{$(echo $TREE_DIRS | tr ' ' ',')}"
	fi
	mv "$tmp/k/$top" "$tmp/exp/tree" || die "mv of the tree failed"
else
	mkdir -p "$tmp/exp/tree"
	timeout 300 grep -rIl --exclude='*.gz' '' /usr/include /usr/share/doc 2>/dev/null | sort |
		timeout 300 xargs -d '\n' stat -c '%s %n' 2>/dev/null | awk '{ t += $1 } t > 20000000 { exit } { print substr($0, index($0, " ") + 1) }' \
		>"$tmp/log/quick.list"
	timeout 300 xargs -d '\n' cp --parents -t "$tmp/exp/tree" <"$tmp/log/quick.list" 2>/dev/null || die "cp of the generated tree failed"
	CORPUS="generated: text files of /usr/include and /usr/share/doc up to 20 MB$([ "$QUICK" = 0 ] && echo ' (linux-source not available)')"
fi
N_FILES=$(find "$tmp/exp/tree" -type f | wc -l)
TREE_MB=$(du -sm --apparent-size "$tmp/exp/tree" | cut -f1)
# the grep file: the tree's text files (no NUL) concatenated, repeated, cut to size
(cd "$tmp/exp/tree" && timeout 600 grep -rIlZ '' . | sort -z) >"$tmp/log/text.list" || die "grep -rIl of the tree failed"
: >"$tmp/exp/big"
while [ "$(stat -c %s "$tmp/exp/big")" -lt "$GREP_B" ]; do
	(cd "$tmp/exp/tree" && timeout 900 xargs -0 cat <"$tmp/log/text.list") >>"$tmp/exp/big" || die "making the grep file failed"
done
truncate -s "$GREP_B" "$tmp/exp/big"
timeout 1800 head -c "$SIZE_B" /dev/urandom >"$tmp/src" || die "making the source file failed"
echo "run.sh: corpus ($(since "$t0") s): tree: $CORPUS, $N_FILES files, $TREE_MB MB; grep file $((GREP_B >> 20)) MiB; write file $((SIZE_B >> 20)) MiB"
[ -n "$GREP_NOTE" ] && echo "run.sh: $GREP_NOTE"
# GNU grep's answers, the reference
(cd "$tmp/exp" && timeout "$TO" grep -e "$PATTERN" big) >"$tmp/out/ref.big"; [ $? -le 1 ] || die "GNU grep on the grep file failed"
(cd "$tmp/exp" && timeout "$TO" grep -r -e "$PATTERN" tree) | sort >"$tmp/out/ref.tree"
REF_BIG=$(md5sum <"$tmp/out/ref.big" | cut -c1-32) REF_TREE=$(md5sum <"$tmp/out/ref.tree" | cut -c1-32)
L_BIG=$(wc -l <"$tmp/out/ref.big") L_TREE=$(wc -l <"$tmp/out/ref.tree")
echo "run.sh: GNU grep: $L_BIG lines in the grep file, $L_TREE in the tree"

# ---- the images: tmpfs when it has room for the largest cluster's
TREE_B=$((TREE_MB << 20))
unit_b=$(bytes "$UNIT") || die "--stripe-unit $UNIT: want a size like 1M"
# a data image: its share of both files, plus the whole tree (files up to a stripe unit all
# go to the first data server today), plus room; sparse
img_mib() { echo $(( ( (SIZE_B + GREP_B) / $1 * 5 / 4 + TREE_B * 2 + 4 * unit_b) >> 20 )); }
need_mib=$(( (SIZE_B + GREP_B + TREE_B * 2) * 5 / 4 >> 20 ))
if [ -z "$IMG_DIR" ]; then
	shm_free=$(df -m --output=avail /dev/shm 2>/dev/null | tail -n 1)
	if [ -n "$shm_free" ] && [ "$shm_free" -gt $((need_mib + 4096)) ]; then IMG_DIR=/dev/shm; else IMG_DIR=${TMPDIR:-/tmp}; fi
fi
imgdir=$(mktemp -d "$IMG_DIR/arf-bench-cluster-img.XXXXXX") || die "mktemp in $IMG_DIR failed"

# ---- servers and mounts
srv_up() {   # k image
	local k=$1 img=$2
	local log=$tmp/log/arfd.$k.$N
	: >"$log"
	# into the cgroup first, then into the namespace: arfd and all its threads are held
	( echo "$BASHPID" >"$CG/s$k/cgroup.procs" && exec nsenter --net="/run/netns/arfcl-s$k-$ID" "$BIN/arfd" \
		--listen "$(ep_of "$k")" --arf "$img" ) 2>"$log" &
	SPID[$k]=$!
	for _ in $(seq 100); do
		grep -q "endpoint tcp:" "$log" && return 0
		kill -0 "${SPID[$k]}" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"; die "arfd $k did not start"
}
# shellcheck disable=SC2034  # read by arf_mount_at (lib.sh): no -o
MOPTS=
mount_c() { arf_mount_at mpid "$EP_M" "$MNT" mount; }
umount_c() { arf_umount_at mpid "$MNT"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# the host's CPU: busy and total jiffies of all cores (/proc/stat)
host_cpu() { awk '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8; t = b + $5 + $6; print b, t }' /proc/stat; }

declare -A SEC CHECK SCPU BUSY THR
FAILED=0
machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r)"
echo "run.sh: $machine; load $(cut -d' ' -f1-3 /proc/loadavg); $CG_DESC; links $RATE; images in $IMG_DIR"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# measure N RUN WORKLOAD CMD...: time CMD in the client's namespace; seconds, the data
# servers' CPU seconds, the host's busy share and the most any data server was throttled
measure() {
	local n=$1 r=$2 w=$3 k c0=0 c1=0 t0 rc th0=() th1 thmax=0 hb0 ht0 hb1 ht1
	shift 3
	for k in $(seq 1 "$n"); do c0=$(awk -v a="$c0" -v b="$(cpu_s "${SPID[$k]}")" 'BEGIN { print a + b }'); th0[$k]=$(throttled_s "$k"); done
	read -r hb0 ht0 < <(host_cpu)
	t0=$(now)
	ns_c timeout "$TO" "$@"
	rc=$?
	SEC[$n,$r,$w]=$(since "$t0")
	read -r hb1 ht1 < <(host_cpu)
	for k in $(seq 1 "$n"); do
		c1=$(awk -v a="$c1" -v b="$(cpu_s "${SPID[$k]}")" 'BEGIN { print a + b }')
		th1=$(throttled_s "$k")
		thmax=$(awk -v m="$thmax" -v a="${th0[$k]}" -v b="$th1" 'BEGIN { d = b - a; print (d > m ? d : m) }')
	done
	SCPU[$n,$r,$w]=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
	BUSY[$n,$r,$w]=$(awk -v b="$((hb1 - hb0))" -v t="$((ht1 - ht0))" 'BEGIN { printf "%.0f", (t > 0 ? 100 * b / t : 0) }')
	THR[$n,$r,$w]=$(awk -v d="$thmax" -v s="${SEC[$n,$r,$w]}" 'BEGIN { printf "%.0f", (s > 0 ? 100 * d / s : 0) }')
	[ $rc -eq 124 ] && { CHECK[$n,$r,$w]="timeout ${TO}s"; SEC[$n,$r,$w]=; FAILED=1; return 1; }
	return $rc
}
# a grep's output against GNU grep's
grep_check() {   # n r w out ref_md5 rc
	local md5
	if [ "$6" -gt 1 ]; then
		CHECK[$1,$2,$3]="exit $6: $(head -n 1 "$4.err" | tr ',' ';')"; FAILED=1; return
	fi
	md5=$(sed "s|^$EP_M:/||" "$4" | { [ "$3" = grep-r ] && sort || cat; } | md5sum | cut -c1-32)
	if [ "$md5" = "$5" ]; then CHECK[$1,$2,$3]=same
	else CHECK[$1,$2,$3]=MISMATCH; FAILED=1; cp "$4" "$tmp/log/mismatch.$1.$2.$3"; echo "run.sh: $3 output differs from GNU grep's ($(wc -l <"$4") lines)" >&2; fi
}

IMPORT=
for N in $SERVERS; do
	echo "run.sh: ---- $N data server$([ "$N" -gt 1 ] && echo s)"
	d_mib=$(img_mib "$N")
	"$BIN/arf" mkfs "$imgdir/m.img" --size "$((TREE_B * 4 / 1048576 + 1024))M" >"$tmp/log/mkfs.$N" 2>&1 || { cat "$tmp/log/mkfs.$N"; die "mkfs failed"; }
	srv_up 0 "$imgdir/m.img"
	eps=
	for k in $(seq 1 "$N"); do
		"$BIN/arf" mkfs "$imgdir/d$k.img" --size "$((d_mib + 1024))M" >>"$tmp/log/mkfs.$N" 2>&1 || { cat "$tmp/log/mkfs.$N"; die "mkfs failed"; }
		srv_up "$k" "$imgdir/d$k.img"
		eps+=" $(ep_of "$k")"
	done
	# shellcheck disable=SC2086
	ns_c timeout 60 "$BIN/arf" cluster init --stripe-unit "$UNIT" --layout "$LAYOUT" "$EP_M" $eps >"$tmp/log/init.$N" 2>&1 ||
		{ cat "$tmp/log/init.$N"; die "arf cluster init failed"; }
	t0=$(now)
	ns_c timeout "$((TO * 2))" "$BIN/arf" import --no-progress "$tmp/exp" "$EP_M:/" >"$tmp/log/import.$N" 2>&1 ||
		{ tail -n 5 "$tmp/log/import.$N"; die "arf import failed"; }
	IMPORT+="${IMPORT:+, }N=$N $(since "$t0") s"
	echo "run.sh: arf import of the tree and the grep file over the links: $(since "$t0") s"
	for r in $(seq "$RUNS"); do
		# write: a fresh mount, the file from an earlier run removed first (not timed)
		mount_c || die "arf mount failed"
		rm -f "$MNT/w"
		CHECK[$N,$r,write]=ok
		measure "$N" "$r" write dd if="$tmp/src" of="$MNT/w" bs=1M conv=fsync status=none 2>"$tmp/log/dd.w" ||
			{ [ -n "${CHECK[$N,$r,write]#ok}" ] || CHECK[$N,$r,write]="dd failed: $(head -n 1 "$tmp/log/dd.w")"; FAILED=1; }
		umount_c
		# read: a fresh mount (the client's caches cold)
		mount_c || die "arf mount failed"
		CHECK[$N,$r,read]=ok
		if measure "$N" "$r" read dd if="$MNT/w" of=/dev/null bs=1M status=none 2>"$tmp/log/dd.r"; then
			if [ "$VERIFY" = 1 ] && [ "$r" = 1 ]; then
				timeout "$TO" cmp "$MNT/w" "$tmp/src" >"$tmp/log/cmp" 2>&1 && CHECK[$N,$r,read]=same ||
					{ CHECK[$N,$r,read]="DIFFERS: $(head -n 1 "$tmp/log/cmp")"; FAILED=1; }
			fi
		else
			[ -n "${CHECK[$N,$r,read]#ok}" ] || CHECK[$N,$r,read]="dd failed: $(head -n 1 "$tmp/log/dd.r")"; FAILED=1
		fi
		umount_c
		# grep over the striped file, grep -r over the tree
		measure "$N" "$r" grep "$BIN/arf" grep -e "$PATTERN" "$EP_M:/big" >"$tmp/out/a" 2>"$tmp/out/a.err"
		rc=$?; [ -n "${SEC[$N,$r,grep]}" ] && grep_check "$N" "$r" grep "$tmp/out/a" "$REF_BIG" "$rc"
		measure "$N" "$r" grep-r "$BIN/arf" grep -r -e "$PATTERN" "$EP_M:/tree" >"$tmp/out/a" 2>"$tmp/out/a.err"
		rc=$?; [ -n "${SEC[$N,$r,grep-r]}" ] && grep_check "$N" "$r" grep-r "$tmp/out/a" "$REF_TREE" "$rc"
		for w in write read grep grep-r; do
			printf '  N=%s run %s %-7s %9ss  data servers %6ss CPU  host busy %3s%%  most throttled %3s%%  %s\n' "$N" "$r" "$w" \
				"${SEC[$N,$r,$w]:--}" "${SCPU[$N,$r,$w]:--}" "${BUSY[$N,$r,$w]:--}" "${THR[$N,$r,$w]:--}" "${CHECK[$N,$r,$w]:-}"
		done
	done
	stop_servers
	rm -f "$imgdir"/*.img
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report
mkdir -p "$HERE/results"
csv=$HERE/results/$OUT.csv txt=$HERE/results/$OUT.txt dat=$HERE/results/$OUT.dat png=$HERE/results/$OUT.png
MIB_OF() { case $1 in write|read) echo $((SIZE_B >> 20)) ;; grep) echo $((GREP_B >> 20)) ;; grep-r) echo "$TREE_MB" ;; esac; }
{
	echo "servers,run,workload,mib,seconds,mib_per_s,data_servers_cpu_s,host_busy_pct,most_throttled_pct,check"
	for N in $SERVERS; do for r in $(seq "$RUNS"); do for w in write read grep grep-r; do
		s=${SEC[$N,$r,$w]:-}
		echo "$N,$r,$w,$(MIB_OF $w),$s,$(awk -v m="$(MIB_OF $w)" -v s="$s" 'BEGIN { if (s > 0) printf "%.1f", m / s }'),${SCPU[$N,$r,$w]:-},${BUSY[$N,$r,$w]:-},${THR[$N,$r,$w]:-},${CHECK[$N,$r,$w]:-}"
	done; done; done
} >"$csv"
N1=$(printf '%s\n' $SERVERS | sort -n | head -n 1)
# per workload and N: seconds min - max (median); the ratio T(N1) / T(N) of each run (runs
# paired by number), min - max (median)
summary() {
	awk -F, -v n1="$N1" '
	NR > 1 { k = $3 SUBSEP $1; if (!(k in cnt)) { if (!($3 in wseen)) { wseen[$3] = 1; wo[++nw] = $3 }
	                                              if (!($1 in nseen)) { nseen[$1] = 1; no[++nn] = $1 } }
	         cnt[k]++; sec[k, $2] = $5; runs[$2] = 1 }
	function med(a, q,   i, j, x) { for (i = 2; i <= q; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
	                                return q % 2 ? a[(q + 1) / 2] : (a[q / 2] + a[q / 2 + 1]) / 2 }
	END {
	  printf "%-8s %3s  %-26s  %-26s  %s\n", "workload", "N", "seconds: min - max (median)", "ratio vs N=" n1 ": min - max (median)", ">= 2.6x (3 vs 1)"
	  for (i = 1; i <= nw; i++) for (j = 1; j <= nn; j++) {
	    w = wo[i]; n = no[j]; q = 0; qr = 0; delete s; delete ra
	    for (r in runs) { x = sec[w SUBSEP n, r]; if (x != "") s[++q] = x + 0
	                      b = sec[w SUBSEP n1, r]; if (x != "" && b != "" && x > 0) ra[++qr] = b / x }
	    if (q == 0) { printf "%-8s %3s  %-26s\n", w, n, "-"; continue }
	    m = med(s, q); st = sprintf("%.2f - %.2f (%.2f)", s[1], s[q], m)
	    rt = "-"; goal = ""
	    if (qr > 0) { mr = med(ra, qr); rt = sprintf("%.2f - %.2f (%.2f)", ra[1], ra[qr], mr)
	                  if (n == 3 && n1 == 1) goal = (ra[1] >= 2.6 ? "yes" : (mr >= 2.6 ? "median only" : "no")) }
	    printf "%-8s %3s  %-26s  %-26s  %s\n", w, n, st, rt, goal
	    printf "%s %s %.4f %.4f %.4f\n", w, n, (qr ? mr : 0), (qr ? ra[1] : 0), (qr ? ra[qr] : 0) > "/dev/fd/3"
	  }
	}' "$csv"
}
{
	echo "ARF on N data servers (issue #18), $(date -u '+%Y-%m-%d %H:%M') UTC"
	echo "command: bash bench/cluster/run.sh$ARGS"
	echo "programs: $BUILD_DESC"
	echo "machine: $machine; load average (1, 5, 15 min) $LOAD_START at the start, $LOAD_END at the end"
	echo "each server (1 metadata + N data arfd) in its own network namespace behind its own veth link to the client's namespace,"
	echo "  tbf $RATE on both ends of each link; each server in its own cgroup: $CG_DESC"
	echo "  the client (arf mount, arf grep, dd) is not held: it shares the host's $(nproc) cores with all the servers"
	echo "stripe unit $UNIT, layout $LAYOUT; images in $IMG_DIR (servers' page cache warm); each write and read through a fresh arf mount"
	echo "write: dd bs=1M conv=fsync of $((SIZE_B >> 20)) MiB of random bytes; read: dd bs=1M to /dev/null$([ "$VERIFY" = 1 ] && echo ', run 1 compared with the source (cmp, not timed)')"
	echo "grep: arf grep -e '$PATTERN' over a $((GREP_B >> 20)) MiB striped text file ($L_BIG lines); grep-r: arf grep -r over the tree ($L_TREE lines)"
	[ -n "$GREP_NOTE" ] && echo "  $GREP_NOTE"
	echo "tree: $CORPUS, $N_FILES files, $TREE_MB MB; imported with arf import over the links (not timed): $IMPORT"
	echo "check: grep outputs byte-identical to GNU grep's on the local copy (sorted for -r): same / MISMATCH"
	echo
	echo "per run: seconds, MiB/s, data servers' CPU seconds, host busy share (all cores), the most any data server's cgroup was throttled (share of the wall time)"
	awk -F, 'NR > 1 { printf "  N=%s run %s %-7s %9ss %8s MiB/s  cpu %7ss  host busy %3s%%  throttled %3s%%  %s\n", $1, $2, $3, $5, $6, $7, $8, $9, $10 }' "$csv"
	echo
	summary 3>"$dat"
} >"$txt"
cat "$txt"
# the plot: speed-up (median, min - max over runs) against N, beside the ideal and the goal
if command -v gnuplot >/dev/null 2>&1; then
	if timeout 60 gnuplot -e "dat='$dat'; out='$png'; ttl='ARF on N data servers: $RATE links, cpu $CPU_Q/$CPU_P each, $((SIZE_B >> 20)) MiB file'" "$HERE/plot.gp" 2>"$tmp/log/gnuplot"; then
		echo "plot: $png"
	else
		echo "plot: gnuplot failed: $(head -n 3 "$tmp/log/gnuplot")"
	fi
else
	echo "plot: gnuplot not found: gnuplot -e \"dat='$dat'; out='$png'\" $HERE/plot.gp draws it"
fi
echo "csv: $csv"
[ "$FAILED" = 0 ] || { echo "run.sh: some workload failed or differed from GNU grep (see above)" >&2; exit 1; }
