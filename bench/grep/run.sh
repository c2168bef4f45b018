#!/usr/bin/env bash
# bench/grep/run.sh: `arf grep` (the scan runs in arfd, only matching lines cross the link)
# against GNU grep reading the same data over the link: through `arf mount`, sshfs and NFS
# (nfs-ganesha, libnfs client), and GNU grep locally on the server (the limit), issue #8.
# Server and client are two network namespaces joined by a veth pair, shaped to 1 Gbit/s
# (tbf) and unshaped.  Every row runs every system in the same run; each output is checked
# against local GNU grep's.  Table on stdout, results/NAME.{txt,csv,png}.
#
#   bash bench/grep/run.sh [--quick] [--build DIR] [--nets "1gbit unlimited"]
#                          [--kernel-dirs "DIR ..."|all] [--big MIB] [--reps N]
#                          [--out NAME] [--row-timeout S] [--local-timeout S] [--no-nfs]
#                          [--build-desc TEXT] [--rows "NAME,NAME"]
#                          [--compare-segs DIR [--ref-first]]
#                          [--mount-opts OPTS]
#   (make bench-grep BENCH_GREP_ARGS=--quick)
#
# --quick: a ~20 MB tree of text files from /usr/include and /usr/share/doc and a 64 MiB
# file made of it, results/grep-quick.*.  The default unpacks Debian's linux-source tarball
# (--kernel-dirs all: the whole tree; or only the listed top-level directories) and makes a
# --big 1024 MiB file by concatenating the tree's files, results/grep.*.  Needs root
# (namespaces, mounts).  Everything lives in a mktemp directory, two namespaces, one veth
# pair and one /dev/shm directory, all removed on exit; every step is bounded by `timeout`.
#
# --compare-segs DIR: instead of sshfs, NFS and --local, ARF with this build's segments
# (arfseg/ops.pno, data.pno, statfs.pno: side "new") against ARF with the ops.pno, data.pno
# and statfs.pno found in DIR (side "ref": another build's build/arfseg, e.g. `git worktree
# add /tmp/old COMMIT && make -C /tmp/old`, DIR=/tmp/old/build/arfseg), given as ARF_OPS_SEG,
# ARF_DATA_SEG and ARF_STATFS_SEG: what a change to pncc or to arf/*.c costs against the
# build before it.  `arf grep` (systems arf and ref) and GNU grep over `arf mount` (arfmnt and
# refmnt), each side its own image (the corpus imported into each with this build's
# segments) and arfd (ports 7171 and 7172); local GNU grep stays as the check's reference.
# Which side goes first alternates from row to row (--ref-first: ref on the first).  Ratios
# ref s / new s (> 1: new faster); also the CPU time each side's arfd used in the row
# (utime + stime, clock ticks of 10 ms; the least over --reps) and its ratio.  Default --out:
# segs-vs-ref-quick with --quick, else segs-vs-ref; no plot.  --mount-opts OPTS: `-o OPTS`
# for every `arf mount` (noxattr: both sides without the xattr exports, for a reference from
# before them, like the assembly of issue #16; see bench/fs/run.sh).
set -uo pipefail
umask 022
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
BUILD=$TOP/build
QUICK=0
NETS="1gbit unlimited"
KDIRS=all
BIG_MIB=1024
REPS=1
OUT= ROW_T= LOCAL_T=
NFS=1
ROWS_ONLY=
BUILD_DESC=
CMP=0 REF_FIRST=0 REF_DIR=
MOPTS=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--build) BUILD=$(cd "$2" && pwd) || exit 2; shift ;;
	--nets) NETS=$2; shift ;;
	--kernel-dirs) KDIRS=$2; shift ;;
	--big) BIG_MIB=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--row-timeout) ROW_T=$2; shift ;;
	--local-timeout) LOCAL_T=$2; shift ;;
	--no-nfs) NFS=0 ;;
	--rows) ROWS_ONLY=$2; shift ;;
	--build-desc) BUILD_DESC=$2; shift ;;
	--compare-segs) CMP=1; REF_DIR=${2:-}; [ $# -gt 1 ] && shift ;;
	--ref-first) REF_FIRST=1 ;;
	--mount-opts) MOPTS=$2; shift ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "run.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
[ "$CMP" = 1 ] && { NFS=0; OUT=${OUT:-segs-vs-ref$([ "$QUICK" = 1 ] && echo -quick)}; }
if [ "$QUICK" = 1 ]; then
	BIG_MIB=64; OUT=${OUT:-grep-quick}; ROW_T=${ROW_T:-300}; LOCAL_T=${LOCAL_T:-30}
else
	OUT=${OUT:-grep}; ROW_T=${ROW_T:-1800}; LOCAL_T=${LOCAL_T:-90}
fi
[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (network namespaces, mounts)" >&2; exit 2; }
# what was measured: the commit of the checkout BUILD belongs to, -dirty when its sources
# differ from it (a shared work tree), unless --build-desc says (e.g. for a git archive)
[ -n "$BUILD_DESC" ] || BUILD_DESC=$(git -C "$BUILD/.." describe --always --dirty 2>/dev/null || echo "unknown")
for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "run.sh: $BUILD/$p not built (make)" >&2; exit 2; }
done
SEGS="ops data statfs"
if [ "$CMP" = 1 ]; then
	for p in arfseg/ops.pno arfseg/data.pno arfseg/statfs.pno pndis; do
		[ -r "$BUILD/$p" ] || { echo "run.sh: $BUILD/$p not built (make)" >&2; exit 2; }
	done
	[ -n "$REF_DIR" ] || { echo "run.sh: --compare-segs needs a directory (another build's build/arfseg)" >&2; exit 2; }
	[ -d "$REF_DIR" ] || { echo "run.sh: --compare-segs $REF_DIR: no such directory" >&2; exit 2; }
	REF_DIR=$(cd "$REF_DIR" && pwd)
	for s in $SEGS; do
		[ -r "$REF_DIR/$s.pno" ] || { echo "run.sh: --compare-segs $REF_DIR: no $s.pno (it wants ops.pno, data.pno and statfs.pno: another build's build/arfseg)" >&2; exit 2; }
	done
fi

# ---- install what is missing; NFS and the kernel source are optional
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
install() {   # packages...: 0 when all are installed afterwards
	local p missing=()
	for p in "$@"; do need "$p" || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "run.sh: installing ${missing[*]}"
	[ -n "${APT_UPDATED:-}" ] || { timeout 300 apt-get update -qq; APT_UPDATED=1; }
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1
	for p in "${missing[@]}"; do need "$p" || return 1; done
}
install iproute2 fuse3 sshfs openssh-server openssh-client gnuplot xz-utils tar gcc ||
	echo "run.sh: apt-get install failed; going on with what is there"
[ "$QUICK" = 1 ] || install linux-source || echo "run.sh: linux-source not installable"
NFS_WHY=
if [ "$NFS" = 1 ]; then
	install nfs-ganesha nfs-ganesha-vfs libnfs-utils libnfs-dev ||
		NFS_WHY="nfs-ganesha, nfs-ganesha-vfs, libnfs-utils or libnfs-dev not installable"
else
	NFS_WHY=$([ "$CMP" = 1 ] && echo "--compare-segs" || echo "--no-nfs")
fi

# ---- the workspace, the namespaces and the veth pair; cleanup undoes all of it
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf-bench-grep.XXXXXX") || exit 1
shm=$(mktemp -d /dev/shm/arf-bench-grep.XXXXXX) || exit 1   # the NFS client's copy of the tree
ID=$$
NS_S=arfgrep-srv-$ID NS_C=arfgrep-cli-$ID
V_S=agr-s$ID V_C=agr-c$ID              # interface names: 15 characters at most
IP_S=10.232.0.1 IP_C=10.232.0.2
PORT=7171 PORT_REF=7172
EP=tcp:$IP_S:$PORT EP_REF=tcp:$IP_S:$PORT_REF
M_ARF=$tmp/mnt/arf M_SSH=$tmp/mnt/sshfs M_REF=$tmp/mnt/ref
EXP=$tmp/srv/export IMG=$tmp/srv/arf.img IMG_REF=$tmp/srv/ref.img
arfd_pid= sshd_pid= arfm_pid= gan_pid= arfd_ref_pid= refm_pid=

cleanup() {
	trap - EXIT
	unmount "$M_ARF"; unmount "$M_SSH"; unmount "$M_REF"
	[ -n "$arfm_pid" ] && kill -KILL "$arfm_pid" 2>/dev/null
	[ -n "$refm_pid" ] && kill -KILL "$refm_pid" 2>/dev/null
	stop "$sshd_pid"; stop "$gan_pid"; stop "$arfd_pid"; stop "$arfd_ref_pid"
	net_down
	rm -rf "$shm"
	if mounted "$M_ARF" || mounted "$M_SSH" || mounted "$M_REF"; then
		echo "run.sh: a mount is still there, $tmp left"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "run.sh: $*" >&2; exit 1; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

mkdir -p "$tmp/bin/arfseg" "$EXP" "$tmp/ssh" "$tmp/nfs" "$M_ARF" "$M_SSH" "$M_REF" "$tmp/log" "$tmp/out"
# a copy of the programs: others may rebuild build/ while this runs
cp "$BUILD/arf" "$BUILD/arfd" "$tmp/bin/" && cp "$BUILD"/arfseg/*.pno "$tmp/bin/arfseg/" ||
	die "cannot copy the programs from $BUILD"
BIN=$tmp/bin
# --compare-segs: each side's segments (DIR's copied too: its build may be remade while this
# runs), and the exports the ref segments lack (a row that needs one fails on the ref side
# and says so)
SEGENV_NEW="ARF_OPS_SEG=$BIN/arfseg/ops.pno ARF_DATA_SEG=$BIN/arfseg/data.pno ARF_STATFS_SEG=$BIN/arfseg/statfs.pno"
SEGENV_REF="ARF_OPS_SEG=$BIN/ref/ops.pno ARF_DATA_SEG=$BIN/ref/data.pno ARF_STATFS_SEG=$BIN/ref/statfs.pno"
ONLY_NEW= REF_REV=
if [ "$CMP" = 1 ]; then
	cp "$BUILD/pndis" "$BIN/" || die "cannot copy $BUILD/pndis"
	mkdir -p "$BIN/ref" && for s in $SEGS; do cp "$REF_DIR/$s.pno" "$BIN/ref/" || die "cannot copy $REF_DIR/$s.pno"; done
	exports_of() { "$BIN/pndis" "$1" | awk '$1 == ".export" { print $2 }' | sort; }
	for s in $SEGS; do
		x=$(comm -23 <(exports_of "$BIN/arfseg/$s.pno") <(exports_of "$BIN/ref/$s.pno") | paste -sd ' ' -)
		[ -n "$x" ] && ONLY_NEW+="${ONLY_NEW:+; }$s.pno: $x"
	done
	echo "run.sh: exports only in the new segments: ${ONLY_NEW:-none}"
	# the checkout DIR belongs to, when it is one
	REF_REV=$(git -C "$REF_DIR" describe --always --dirty 2>/dev/null)
fi
if [ -z "$NFS_WHY" ]; then
	cc -O2 -o "$BIN/nfs_tree" "$HERE/nfs_tree.c" -lnfs 2>"$tmp/log/cc" ||
		NFS_WHY="nfs_tree.c does not build: $(head -n 2 "$tmp/log/cc" | tr '\n' ' ')"
fi

net_up

# ---- the corpus: $EXP/tree and $EXP/big, exported by all the servers
t0=$(now)
CORPUS=
if [ "$QUICK" = 0 ]; then
	kt=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$kt" ]; then
		top=$(basename "$kt" .tar.xz)
		echo "run.sh: unpacking $kt (${KDIRS})"
		mkdir -p "$tmp/k"
		if [ "$KDIRS" = all ]; then
			timeout 1800 tar -x -J -f "$kt" -C "$tmp/k" || die "tar -x $kt failed"
			CORPUS=$top
		else
			timeout 1800 tar -x -J -f "$kt" -C "$tmp/k" $(for d in $KDIRS; do echo "$top/$d"; done) ||
				die "tar -x of $KDIRS from $kt failed"
			CORPUS="$top/{$(echo $KDIRS | tr ' ' ',')}"
		fi
		mv "$tmp/k/$top" "$EXP/tree" && rmdir "$tmp/k" || die "mv of the tree failed"
	else
		echo "run.sh: no /usr/src/linux-source-*.tar.xz: the quick corpus instead"
		QUICK=2
	fi
fi
if [ "$QUICK" != 0 ]; then
	# text files (grep -I: no NUL) from what is on the machine, in name order, up to 20 MB
	mkdir -p "$EXP/tree"
	timeout 300 grep -rIl --exclude='*.gz' '' /usr/include /usr/share/doc 2>/dev/null | sort |
		timeout 300 xargs -d '\n' stat -c '%s %n' | awk '{ t += $1 } t > 20000000 { exit } { print substr($0, index($0, " ") + 1) }' \
		>"$tmp/log/quick.list"
	timeout 300 xargs -d '\n' cp --parents -t "$EXP/tree" <"$tmp/log/quick.list" 2>/dev/null ||
		die "cp of the quick corpus failed"
	CORPUS="text files of /usr/include and /usr/share/doc"
fi
N_FILES=$(find "$EXP/tree" -type f | wc -l)
TREE_MB=$(du -sm --apparent-size "$EXP/tree" | cut -f1)
# the big file: the tree's text files (no NUL: GNU grep would stop printing lines at the
# first binary buffer) concatenated in name order, repeated if needed, cut to size
big=$((BIG_MIB << 20))
(cd "$EXP/tree" && timeout 600 grep -rIlZ '' . | sort -z) >"$tmp/log/text.list" || die "grep -rIl of the tree failed"
: >"$EXP/big"
while [ "$(stat -c %s "$EXP/big")" -lt "$big" ]; do
	(cd "$EXP/tree" && timeout 600 xargs -0 cat <"$tmp/log/text.list") >>"$EXP/big" ||
		die "making the big file failed"
done
truncate -s "$big" "$EXP/big"
BIG_NAME="$((BIG_MIB >= 1024 ? BIG_MIB / 1024 : BIG_MIB)) $([ "$BIG_MIB" -ge 1024 ] && echo GiB || echo MiB)"
echo "run.sh: corpus ($(since "$t0") s): tree: $CORPUS, $N_FILES files, $TREE_MB MB; big: $BIG_NAME"

# ---- servers: arfd (data imported with arf import), sshd, nfs-ganesha
t0=$(now)
IMG_MIB=$(( 2 * TREE_MB + 2 * BIG_MIB + 1024 ))
timeout 120 "$BIN/arf" mkfs "$IMG" --size "${IMG_MIB}M" >"$tmp/log/mkfs" 2>&1 ||
	{ cat "$tmp/log/mkfs"; die "arf mkfs failed"; }
arfd_up "$BIN/arfd" "$IMG" "$EP" "$tmp/log/arfd"
# import in the server namespace (loopback), not over the shaped link: not measured
ns_s timeout 3600 "$BIN/arf" import --no-progress "$EXP" "$EP:/" >"$tmp/log/import" 2>&1 ||
	{ tail -n 5 "$tmp/log/import"; die "arf import failed"; }
IMPORT_S=$(since "$t0")
echo "run.sh: arf import of the corpus: $IMPORT_S s"
if [ "$CMP" = 1 ]; then
	# the ref side: its own image and arfd, the corpus imported the same way (this build's
	# segments: the import is not measured, and so both images are laid out alike)
	c_pid=$arfd_pid
	timeout 120 "$BIN/arf" mkfs "$IMG_REF" --size "${IMG_MIB}M" >"$tmp/log/mkfs.ref" 2>&1 ||
		{ cat "$tmp/log/mkfs.ref"; die "arf mkfs (ref side) failed"; }
	arfd_up "$BIN/arfd" "$IMG_REF" "$EP_REF" "$tmp/log/arfd.ref"
	arfd_ref_pid=$arfd_pid arfd_pid=$c_pid
	ns_s timeout 3600 "$BIN/arf" import --no-progress "$EXP" "$EP_REF:/" >"$tmp/log/import.ref" 2>&1 ||
		{ tail -n 5 "$tmp/log/import.ref"; die "arf import (ref side) failed"; }
else
	sshd_up "$tmp/log/sshd"
fi

# nfs-ganesha: NFSv4 only (v3 wants rpcbind to register with), FSAL VFS on the export
# directory, no dbus (its complaints in the log are harmless); libnfs talks v4 to port 2049
NFS_URL="nfs://$IP_S/export"
if [ -z "$NFS_WHY" ]; then
	cat >"$tmp/nfs/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	Protocols = 4;
	NFS_Port = 2049;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 { Graceless = true; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
	Export_Id = 1;
	Path = $EXP;
	Pseudo = /export;
	Protocols = 4;
	Transports = TCP;
	Access_Type = RO;
	Squash = No_Root_Squash;
	SecType = sys;
	FSAL { Name = VFS; }
}
EOF
	ns_s ganesha.nfsd -F -f "$tmp/nfs/ganesha.conf" -L "$tmp/log/ganesha" -p "$tmp/nfs/ganesha.pid" -N NIV_EVENT \
		>/dev/null 2>&1 &
	gan_pid=$!
	ok=
	for _ in $(seq 60); do
		kill -0 "$gan_pid" 2>/dev/null || break
		if ns_c timeout 10 nfs-ls "$NFS_URL?version=4" >/dev/null 2>&1; then ok=1; break; fi
		sleep 0.5
	done
	if [ -z "$ok" ]; then
		NFS_WHY="nfs-ganesha did not serve: $(grep -E 'FATAL|CRIT' "$tmp/log/ganesha" | grep -v DBUS | tail -n 2 | sed 's/.*\] //' | tr '\n' ' ')"
		stop "$gan_pid"; gan_pid=
	fi
fi
[ -n "$NFS_WHY" ] && echo "run.sh: no NFS rows: $NFS_WHY"

# ---- client mounts (a fresh one before each row: cold client caches)
n_mount=0
mount_arf() {
	# explicit segments with --compare-segs (the same files the mount would find beside arf)
	# shellcheck disable=SC2046  # SEGENV_NEW is VAR=VALUE words
	arf_mount_at arfm_pid "$EP" "$M_ARF" arf-mount $([ "$CMP" = 1 ] && echo "$SEGENV_NEW")
}
umount_arf() { arf_umount_at arfm_pid "$M_ARF"; }
# the ref side (--compare-segs): the same mount, its own arfd, DIR's segments
mount_ref() {
	# shellcheck disable=SC2086  # SEGENV_REF is VAR=VALUE words
	arf_mount_at refm_pid "$EP_REF" "$M_REF" ref-mount $SEGENV_REF
}
umount_ref() { arf_umount_at refm_pid "$M_REF"; }
mount_sshfs() {
	ns_c timeout 30 sshfs -F "$tmp/ssh/ssh_config" -o no_contain_symlinks "bench:$EXP" "$M_SSH" 2>"$tmp/log/sshfs-mount" ||
		{ echo "run.sh: sshfs failed: $(tr '\n' ' ' <"$tmp/log/sshfs-mount")" >&2; return 1; }
	for _ in $(seq 100); do mounted "$M_SSH" && return 0; sleep 0.05; done
	return 1
}

# ---- rows: name | target (big or tree) | grep options and pattern (shell words)
ROWS=(
	"literal|big|'Free Software Foundation'"
	"regex|big|-E 'Copyright.*[^0-9]19[0-8][0-9]'"
	"-i|big|-i 'gnu general public'"
	"-c word|big|-c -w the"
	"-r literal|tree|-r 'Free Software Foundation'"
)
# --rows: only the rows named (e.g. "-r literal,-i")
if [ -n "$ROWS_ONLY" ]; then
	keep=()
	IFS=',' read -ra want <<<"$ROWS_ONLY"
	for r in "${ROWS[@]}"; do
		for w in "${want[@]}"; do [ "${r%%|*}" = "$w" ] && keep+=("$r"); done
	done
	[ ${#keep[@]} -gt 0 ] || { echo "run.sh: --rows $ROWS_ONLY: no such row" >&2; exit 2; }
	ROWS=("${keep[@]}")
fi
SYSTEMS="local arf arf_local arfmnt sshfs nfs"
[ "$CMP" = 1 ] && SYSTEMS="local arf ref arfmnt refmnt"
# the command of one system for one row, run by bash -c after `eval set -- $A` (the options
# and pattern as "$@"), with $T (big or tree) exported; output to stdout
sys_cmd() {   # system target
	case $1 in
	local) echo 'cd "$EXP" && grep "$@" $T' ;;
	arf) echo '"$BIN/arf" grep "$@" "$EP:/$T"' ;;
	arf_local) echo '"$BIN/arf" grep --local "$@" "$EP:/$T"' ;;
	ref) echo 'env $SEGENV_REF "$BIN/arf" grep "$@" "$EP_REF:/$T"' ;;
	refmnt) echo 'cd "$M_REF" && grep "$@" $T' ;;
	arfmnt) echo 'cd "$M_ARF" && grep "$@" $T' ;;
	sshfs) echo 'cd "$M_SSH" && grep "$@" $T' ;;
	nfs) if [ "$2" = big ]; then
		echo 'nfs-cat "$NFS_URL/big?version=4" | grep "$@"; s=("${PIPESTATUS[@]}"); [ ${s[0]} = 0 ] || exit 2; exit ${s[1]}'
	     else
		echo 'rm -rf "$SHM/tree"; "$BIN/nfs_tree" "$NFS_URL/tree?version=4" "$SHM/tree" && cd "$SHM" && grep "$@" tree'
	     fi ;;
	esac
}
declare -A SEC STATUS LINES MATCH CPU
# CPU seconds a process has used, its threads' included (gone ones too): utime + stime of
# /proc/PID/stat, in clock ticks (the fields after the command, which may hold spaces)
TICK=$(getconf CLK_TCK)
cpu_s() { awk -v hz="$TICK" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null; }
# the arfd process under arfd_up's pid (a subshell around nsenter, which execs arfd)
arfd_of() {
	local p=$1 c
	for _ in 1 2 3; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = arfd ] && break
		c=$(pgrep -P "$p" | head -n 1)
		[ -n "$c" ] || break
		p=$c
	done
	echo "$p"
}
REF_MD5=
run_one() {   # net row_n system
	local net=$1 i=$2 sys=$3 name tgt args k="$1|$2|$3" t out rc best= r
	IFS='|' read -r name tgt args <<<"${ROWS[$((i - 1))]}"
	STATUS[$k]=; SEC[$k]=; LINES[$k]=; MATCH[$k]=; CPU[$k]=
	local dpid= c0 c
	case $sys in arf|arfmnt) dpid=$(arfd_of "$arfd_pid") ;; ref|refmnt) dpid=$(arfd_of "$arfd_ref_pid") ;; esac
	[ "$CMP" = 1 ] || dpid=
	case $sys in
	nfs) [ -n "$NFS_WHY" ] && { STATUS[$k]=n/a; return; } ;;
	arf_local) [ "$tgt" = big ] && [ "$net" = "${NETS%% *}" ] || { STATUS[$k]=n/a; return; } ;;
	esac
	t=$ROW_T; [ "$sys" = arf_local ] && t=$LOCAL_T
	out=$tmp/out/$net.$i.$sys
	export A="$args" T=$tgt EXP BIN EP M_ARF M_SSH NFS_URL SHM=$shm EP_REF M_REF SEGENV_REF
	for r in $(seq "$REPS"); do
		# cold client caches: fresh mounts; the servers' page cache is warm for all
		case $sys in
		arfmnt) umount_arf; mount_arf || { STATUS[$k]="mount failed"; return; } ;;
		refmnt) umount_ref; mount_ref || { STATUS[$k]="mount failed"; return; } ;;
		sshfs) unmount "$M_SSH"; mount_sshfs || { STATUS[$k]="mount failed"; return; } ;;
		esac
		[ -n "$dpid" ] && c0=$(cpu_s "$dpid")
		local t0=$EPOCHREALTIME
		if [ "$sys" = local ]; then
			ns_s timeout "$t" bash -c "eval set -- \"\$A\"; $(sys_cmd "$sys" "$tgt")" >"$out" 2>"$out.err"
		else
			ns_c timeout "$t" bash -c "eval set -- \"\$A\"; $(sys_cmd "$sys" "$tgt")" >"$out" 2>"$out.err"
		fi
		rc=$?
		local s; s=$(since "$t0")
		if [ -n "$dpid" ]; then
			c=$(awk -v a="$c0" -v b="$(cpu_s "$dpid")" 'BEGIN { printf "%.2f", b - a }')
			CPU[$k]=$(awk -v a="${CPU[$k]:-1e99}" -v b="$c" 'BEGIN { print (b < a ? b : a) }')
		fi
		if [ $rc -eq 124 ]; then STATUS[$k]="timeout ${t}s"; SEC[$k]=; break
		elif [ $rc -gt 1 ]; then STATUS[$k]="exit $rc: $(grep -v 'binary file matches' "$out.err" | head -n 1 | tr ',' ';')"; break
		fi
		STATUS[$k]=ok
		best=$(awk -v a="${best:-1e99}" -v b="$s" 'BEGIN { print (b < a ? b : a) }')
		SEC[$k]=$best
	done
	[ "$sys" = nfs ] && rm -rf "$shm/tree"
	[ "${STATUS[$k]}" = ok ] || return
	# the check: the output, names made relative (arf prints ENDPOINT:/tree/..., either side's), sorted for
	# -r (each walks the directories in its own order), against local GNU grep's
	local md5
	md5=$(sed "s|^$EP:/||; s|^$EP_REF:/||" "$out" | { [ "$tgt" = tree ] && sort || cat; } | md5sum | cut -c1-32)
	LINES[$k]=$(wc -l <"$out")
	if [ "$sys" = local ]; then REF_MD5=$md5; MATCH[$k]=ref
	elif [ "$md5" = "$REF_MD5" ]; then MATCH[$k]=same
	else MATCH[$k]=MISMATCH; cp "$out" "$tmp/log/mismatch.$net.$i.$sys"; fi
	rm -f "$out"
}

machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')),"
machine+=" $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r)"
echo "run.sh: $machine; load $(cut -d' ' -f1-3 /proc/loadavg); rows bounded by ${ROW_T}s (--local ${LOCAL_T}s)"
# warm the servers' page cache: the export directory and the image
(cd "$EXP" && tar -c . | cat >/dev/null); cat "$IMG" >/dev/null
[ "$CMP" = 1 ] && cat "$IMG_REF" >/dev/null
declare -A FIRST
n_row=0
for NET in $NETS; do
	set_net
	for i in $(seq ${#ROWS[@]}); do
		# --compare-segs: which side goes first alternates from row to row
		order=$SYSTEMS
		[ "$CMP" = 1 ] && [ $(( (n_row + REF_FIRST) % 2 )) = 1 ] && order="local ref arf refmnt arfmnt"
		FIRST[$NET|$i]=$([ "$order" = "$SYSTEMS" ] && echo new || echo ref)
		n_row=$((n_row + 1))
		for sys in $order; do
			run_one "$NET" "$i" "$sys"
			k="$NET|$i|$sys"
			[ "${STATUS[$k]}" = n/a ] && continue
			printf '  %-9s %-11s %-9s %9ss %6s lines %s %s%s\n' "$NET" "${ROWS[$((i - 1))]%%|*}" "$sys" \
				"${SEC[$k]:--}" "${LINES[$k]:--}" "${STATUS[$k]}" "${MATCH[$k]}" "${CPU[$k]:+ (arfd CPU ${CPU[$k]} s)}"
		done
	done
	umount_arf; unmount "$M_SSH"; umount_ref
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report: table, CSV, plot
mkdir -p "$HERE/results"
csv=$HERE/results/$OUT.csv txt=$HERE/results/$OUT.txt png=$HERE/results/$OUT.png
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2f", a / b }'; }
# the CPU ratio only when both used at least 5 ticks (below, it is mostly rounding)
cpuratio() { awk -v a="$1" -v b="$2" -v t="$TICK" 'BEGIN { if (a != "" && b != "" && a * t >= 5 && b * t >= 5) printf "%.2f", a / b }'; }
if [ "$CMP" = 1 ]; then
	# --compare-segs's own table: new segments against ref, arf grep and GNU grep over the mount
	{
		echo "net,row_n,row,target,grep_args,lines,local_s,arf_s,ref_s,arfmnt_s,refmnt_s,grep_ref_over_new,mnt_ref_over_new,first,check,notes,arf_cpu_s,ref_cpu_s,arfmnt_cpu_s,refmnt_cpu_s,grep_cpu_ref_over_new,mnt_cpu_ref_over_new"
		for NET in $NETS; do
			for i in $(seq ${#ROWS[@]}); do
				IFS='|' read -r name tgt args <<<"${ROWS[$((i - 1))]}"
				declare -A S=()
				check=ok notes=
				for sys in $SYSTEMS; do
					k="$NET|$i|$sys"
					S[$sys]=${SEC[$k]}
					case ${STATUS[$k]} in
					ok|n/a) ;;
					*) notes+="$sys: ${STATUS[$k]}; "; [ "$check" = ok ] && check=failed ;;
					esac
					[ "${MATCH[$k]}" = MISMATCH ] && { check=MISMATCH; notes+="$sys: output differs (${LINES[$k]} lines); "; }
				done
				declare -A C=()
				for sys in arf ref arfmnt refmnt; do C[$sys]=${CPU[$NET|$i|$sys]}; done
				echo "$NET,$i,$name,$tgt,$args,${LINES[$NET|$i|local]},${S[local]},${S[arf]},${S[ref]},${S[arfmnt]},${S[refmnt]},$(ratio "${S[ref]}" "${S[arf]}"),$(ratio "${S[refmnt]}" "${S[arfmnt]}"),${FIRST[$NET|$i]},$check,${notes//,/;},${C[arf]},${C[ref]},${C[arfmnt]},${C[refmnt]},$(cpuratio "${C[ref]}" "${C[arf]}"),$(cpuratio "${C[refmnt]}" "${C[arfmnt]}")"
				unset C
				unset S
			done
		done
	} >"$csv"
	{
		echo "ARF's segments, this build's (new) vs a reference (ref): arf grep and GNU grep over arf mount; $(date -u '+%Y-%m-%d %H:%M') UTC, bench/grep/run.sh --compare-segs $REF_DIR$([ "$QUICK" = 1 ] && echo ' --quick')${MOPTS:+ --mount-opts $MOPTS}$([ "$REF_FIRST" = 1 ] && echo ' --ref-first')"
		echo "tree: $CORPUS, $N_FILES files, $TREE_MB MB; big: $BIG_NAME of the tree's files concatenated; arf import took $IMPORT_S s (new side)"
		echo "machine: $machine"
		echo "programs: $BUILD_DESC"
		echo "new: $BUILD/arfseg/{ops,data,statfs}.pno; ref (ARF_OPS_SEG, ARF_DATA_SEG, ARF_STATFS_SEG): $REF_DIR/{ops,data,statfs}.pno${REF_REV:+ (tree at $REF_REV)}"
		echo "exports only in the new segments: ${ONLY_NEW:-none}"
		echo "arf mount options: ${MOPTS:-none}"
		echo "each side its own arfd and image; load average (1, 5, 15 min) at the end: $LOAD_END"
		echo "seconds (best of $REPS); each mount fresh before its row; first: the side that ran first in the row"
		echo "ref/new > 1: new faster (grep: arf grep, the scan in arfd; mnt: GNU grep over arf mount)"
		echo "after the second |: seconds of CPU each side's arfd used in the row (g: arf grep, m: over the mount) (ticks of $((1000 / TICK)) ms; least of the reps); cpu ratios from 5 ticks each"
		echo
		printf '%-9s %-10s %-5s %7s %7s %7s %7s %7s %7s | %8s %8s %5s | %5s %5s %5s %5s %6s %6s  %s\n' net row on lines local arf-new arf-ref mnt-new mnt-ref \
			"grep r/n" "mnt r/n" first "g-new" "g-ref" "m-new" "m-ref" "g r/n" "m r/n" check
		awk -F, 'function f(x) { return x == "" ? "-" : x }
		NR > 1 { printf "%-9s %-10s %-5s %7s %7s %7s %7s %7s %7s | %8s %8s %5s | %5s %5s %5s %5s %6s %6s  %s%s\n", $1, $3, $4, f($6),
			f($7), f($8), f($9), f($10), f($11), f($12), f($13), $14, f($17), f($18), f($19), f($20), f($21), f($22), $15,
			($16 != "" ? "  (" $16 ")" : "") }' "$csv"
	} >"$txt"
	cat "$txt"
	echo "plot: none for --compare-segs"
	echo "csv: $csv"
	exit 0
fi
{
	echo "net,row_n,row,target,grep_args,lines,local_s,arf_s,arf_local_s,arfmnt_s,sshfs_s,nfs_s,sshfs_over_arf,nfs_over_arf,arfmnt_over_arf,arf_over_local,arf_local_over_arf,check,notes"
	for NET in $NETS; do
		for i in $(seq ${#ROWS[@]}); do
			IFS='|' read -r name tgt args <<<"${ROWS[$((i - 1))]}"
			declare -A S=()
			check=ok notes=
			for sys in $SYSTEMS; do
				k="$NET|$i|$sys"
				S[$sys]=${SEC[$k]}
				# check: the outputs that came; a timeout is a note (arf_local is bounded
				# short on purpose), a failure is "failed"
				case ${STATUS[$k]} in
				ok|n/a) ;;
				timeout*) notes+="$sys: ${STATUS[$k]}; " ;;
				*) notes+="$sys: ${STATUS[$k]}; "; [ "$check" = ok ] && check=failed ;;
				esac
				[ "${MATCH[$k]}" = MISMATCH ] && { check=MISMATCH; notes+="$sys: output differs (${LINES[$k]} lines); "; }
			done
			echo "$NET,$i,$name,$tgt,$args,${LINES[$NET|$i|local]},${S[local]},${S[arf]},${S[arf_local]},${S[arfmnt]},${S[sshfs]},${S[nfs]},$(ratio "${S[sshfs]}" "${S[arf]}"),$(ratio "${S[nfs]}" "${S[arf]}"),$(ratio "${S[arfmnt]}" "${S[arf]}"),$(ratio "${S[arf]}" "${S[local]}"),$(ratio "${S[arf_local]}" "${S[arf]}"),$check,${notes//,/;}"
			unset S
		done
	done
} >"$csv"
{
	echo "arf grep vs GNU grep over arf mount, sshfs, NFS and locally; $(date -u +%Y-%m-%d), bench/grep/run.sh$([ "$QUICK" = 1 ] && echo ' --quick')"
	echo "tree: $CORPUS, $N_FILES files, $TREE_MB MB; big: $BIG_NAME of the tree's files concatenated; arf import took $IMPORT_S s"
	echo "machine: $machine"
	echo "programs: $BUILD_DESC"
	echo "seconds (best of $REPS); each mount fresh before its row; servers' page cache warm; nfs = nfs-ganesha 4.3 (NFSv4, VFS) + libnfs (nfs-cat | grep; nfs_tree copy to tmpfs + grep -r)"
	[ -n "$NFS_WHY" ] && echo "NFS: not measured: $NFS_WHY"
	echo "sshfs/arf, nfs/arf: > 1 means arf grep is faster; arf/local: 1 means arf grep as fast as GNU grep on the server"
	echo "check: every output against local GNU grep's (md5; sorted for -r): ok, MISMATCH, or failed (a system exited with an error)"
	echo
	printf '%-9s %-10s %-5s %7s %7s %7s %7s %7s %7s %7s | %8s %8s %8s %8s  %s\n' net row on lines local arf arf-loc arfmnt sshfs nfs \
		sshfs/arf nfs/arf mnt/arf arf/loc check
	awk -F, 'function f(x) { return x == "" ? "-" : x }
	NR > 1 { printf "%-9s %-10s %-5s %7s %7s %7s %7s %7s %7s %7s | %8s %8s %8s %8s  %s%s\n", $1, $3, $4, f($6),
		f($7), f($8), f($9), f($10), f($11), f($12), f($13), f($14), f($15), f($16), $18,
		($19 != "" ? "  (" $19 ")" : "") }' "$csv"
} >"$txt"
cat "$txt"
if command -v gnuplot >/dev/null 2>&1; then
	if timeout 60 gnuplot -e "csv='$csv'; out='$png'; ttl='arf grep: $CORPUS ($TREE_MB MB tree, $BIG_NAME file)'" "$HERE/plot.gp" 2>"$tmp/log/gnuplot"; then
		echo "plot: $png"
	else
		echo "plot: gnuplot failed: $(head -n 5 "$tmp/log/gnuplot")"
	fi
else
	echo "plot: gnuplot not found, $png not made"
fi
echo "csv: $csv"
