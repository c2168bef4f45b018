#!/usr/bin/env bash
# bench/fs/run.sh: ARF (`arf mount` of `arfd --arf`) against sshfs (sshd's sftp) on the same
# source tree, over a veth pair between two network namespaces, once with the link shaped
# to 1 Gbit/s (tbf) and once unshaped (issue #7).  Each row runs on ARF and on sshfs in the
# same run, each on a fresh mount (cold client caches); the ratio is sshfs/ARF seconds, so
# > 1 means ARF is faster.  Table on stdout, results/NAME.{txt,csv,png}.
#
#   bash bench/fs/run.sh [--quick] [--build DIR] [--nets "1gbit unlimited"] [--tree kernel|gen]
#                        [--kernel-dirs "DIR ..."|all] [--files N] [--big MIB] [--out NAME]
#                        [--row-timeout S] [--compare-segs DIR [--ref-first]]
#                        [--mount-opts OPTS] [--instr]
#   (make bench-fs BENCH_FS_ARGS=--quick)
#
# --quick: a generated tree of 2000 files and a 64 MiB file, results/fs-quick.*.  The default
# untars the top-level directories --kernel-dirs (default fs include kernel lib mm net
# scripts: 12 000 entries, 16 of them symlinks; `all` is the whole 84 000) of Debian's
# linux-source tarball (installed when missing; a generated tree of --files files when it
# cannot be) and writes a --big 4096 MiB file (the issue's 4 GiB), results/fs.*.  Needs root
# (namespaces, mounts).  Everything it makes lives in a mktemp directory, two namespaces
# and one veth pair, all removed on exit; every step is bounded by `timeout`.
#
# --compare-segs DIR: ARF against ARF instead of sshfs, this build's segments (arfseg/ops.pno,
# data.pno, statfs.pno: side "new") on one side and the ops.pno, data.pno and statfs.pno found
# in DIR (side "ref": another build's build/arfseg, e.g. `git worktree add /tmp/old COMMIT &&
# make -C /tmp/old`, DIR=/tmp/old/build/arfseg) on the other, given to `arf mount` as
# ARF_OPS_SEG, ARF_DATA_SEG and ARF_STATFS_SEG: what a change to pncc or to arf/*.c costs
# against the build before it.  Both sides run this build's arf and arfd, each its own image
# and arfd (ports 7070 and 7071), so nothing is shared but the machine.  Each row on a fresh
# mount of each; which side goes first alternates from row to row (--ref-first: the ref side
# on the first row).  The ratio is ref s / new s (> 1: new faster); also the CPU time each
# side's arfd spent during the row (utime + stime of the process, in clock ticks: 10 ms) and
# its ratio, which leaves out most of what both share (FUSE, the link, the client); no plot.
# Default --out: segs-vs-ref-quick with --quick, else segs-vs-ref.  A row that needs an export
# the ref segments lack fails on the ref side, and the table says so (the exports only in the
# new segments are listed at the start).  The mount calls the xattr exports (a default ACL run
# per create, security.capability before writes), which the assembly of issue #16 never had:
# --mount-opts noxattr gives both sides `arf mount -o noxattr` (docs/arf.md), so both run the
# same operations against a reference from before them.  --mount-opts OPTS: `-o OPTS` for
# every ARF mount (either mode).  --instr (with --compare-segs): both arfds
# run under valgrind's callgrind, and each row also gets the instructions each arfd executed
# during it (callgrind_control zeroes before the row and dumps after): a count that the
# machine's load does not blur, unlike the seconds (which under valgrind mean little).
set -uo pipefail
umask 022

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
BUILD=$TOP/build
QUICK=0
NETS="1gbit unlimited"
TREE=kernel
KDIRS="fs include kernel lib mm net scripts"
FILES=20000
BIG_MIB=4096
OUT=
ROW_T=
CMP=0 REF_FIRST=0 REF_DIR=
MOPTS=
INSTR=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--build) BUILD=$(cd "$2" && pwd) || exit 2; shift ;;
	--nets) NETS=$2; shift ;;
	--tree) TREE=$2; shift ;;
	--kernel-dirs) KDIRS=$2; shift ;;
	--files) FILES=$2; shift ;;
	--big) BIG_MIB=$2; shift ;;
	--out) OUT=$2; shift ;;
	--row-timeout) ROW_T=$2; shift ;;
	--compare-segs) CMP=1; REF_DIR=${2:-}; [ $# -gt 1 ] && shift ;;
	--ref-first) REF_FIRST=1 ;;
	--mount-opts) MOPTS=$2; shift ;;
	--instr) INSTR=1 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "run.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
# the two sides: ARF and sshfs, or with --compare-segs ARF with this build's segments (arf)
# and ARF with DIR's (ref)
SIDES="arf sshfs"; B=sshfs
[ "$CMP" = 1 ] && { SIDES="arf ref"; B=ref; }
if [ "$QUICK" = 1 ]; then
	TREE=gen; FILES=2000; BIG_MIB=64; ROW_T=${ROW_T:-300}
	[ "$CMP" = 1 ] && OUT=${OUT:-segs-vs-ref-quick} || OUT=${OUT:-fs-quick}
else
	ROW_T=${ROW_T:-3600}
	[ "$CMP" = 1 ] && OUT=${OUT:-segs-vs-ref} || OUT=${OUT:-fs}
fi
[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (network namespaces, mounts)" >&2; exit 2; }
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

# ---- install what is missing (as scripts/deps.sh)
pkgs=(iproute2 fuse3 sshfs openssh-server openssh-client gnuplot python3 xz-utils tar)
[ "$TREE" = kernel ] && pkgs+=(linux-source)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "run.sh: installing ${missing[*]}"
	timeout 300 apt-get update -qq
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${missing[@]}" >/dev/null ||
		echo "run.sh: apt-get install failed; going on with what is there"
fi

# ---- the workspace, the namespaces and the veth pair; cleanup undoes all of it
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf-bench-fs.XXXXXX") || exit 1
ID=$$
NS_S=arfbench-srv-$ID NS_C=arfbench-cli-$ID
V_S=afs-s$ID V_C=afs-c$ID              # interface names: 15 characters at most
IP_S=10.231.0.1 IP_C=10.231.0.2
PORT=7070 PORT_REF=7071
M_ARF=$tmp/mnt/arf M_SSH=$tmp/mnt/sshfs M_REF=$tmp/mnt/ref
arfd_pid= sshd_pid= arfm_pid= arfd_ref_pid= refm_pid=

cleanup() {
	trap - EXIT
	unmount "$M_ARF"; unmount "$M_SSH"; unmount "$M_REF"
	[ -n "$arfm_pid" ] && kill -KILL "$arfm_pid" 2>/dev/null
	[ -n "$refm_pid" ] && kill -KILL "$refm_pid" 2>/dev/null
	stop "$sshd_pid"; stop "$arfd_pid"; stop "$arfd_ref_pid"
	net_down
	if mounted "$M_ARF" || mounted "$M_SSH" || mounted "$M_REF"; then
		echo "run.sh: a mount is still there, $tmp left"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "run.sh: $*" >&2; exit 1; }

mkdir -p "$tmp/bin/arfseg" "$tmp/srv/export" "$tmp/ssh" "$M_ARF" "$M_SSH" "$M_REF" "$tmp/log"
# a copy of the programs: others may rebuild build/ while this runs
cp "$BUILD/arf" "$BUILD/arfd" "$tmp/bin/" && cp "$BUILD"/arfseg/*.pno "$tmp/bin/arfseg/" ||
	die "cannot copy the programs from $BUILD"
BIN=$tmp/bin
if [ "$CMP" = 1 ]; then
	cp "$BUILD/pndis" "$BIN/" || die "cannot copy $BUILD/pndis"
	# the reference segments too: their build may be remade while this runs
	mkdir -p "$BIN/ref" && for s in $SEGS; do cp "$REF_DIR/$s.pno" "$BIN/ref/" || die "cannot copy $REF_DIR/$s.pno"; done
fi
exports_of() { "$BIN/pndis" "$1" | awk '$1 == ".export" { print $2 }' | sort; }
BUILD_AT=$(date -u -r "$BUILD/arf" '+%Y-%m-%d %H:%M')
# the checkout BUILD was made from (not this script's, when --build names another one)
SRC=$(cd "$BUILD/.." && pwd)
BUILD_REV="$(git -C "$SRC" log -1 --format=%h 2>/dev/null)$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' + uncommitted changes')"
# --compare-segs: what each side's `arf mount` runs, and the exports the ref segments lack
# (added since): a row that needs one fails on the ref side, and the table says so
SEGENV_NEW="ARF_OPS_SEG=$BIN/arfseg/ops.pno ARF_DATA_SEG=$BIN/arfseg/data.pno ARF_STATFS_SEG=$BIN/arfseg/statfs.pno"
SEGENV_REF="ARF_OPS_SEG=$BIN/ref/ops.pno ARF_DATA_SEG=$BIN/ref/data.pno ARF_STATFS_SEG=$BIN/ref/statfs.pno"
ONLY_NEW= REF_REV=
if [ "$CMP" = 1 ]; then
	for s in $SEGS; do
		x=$(comm -23 <(exports_of "$BIN/arfseg/$s.pno") <(exports_of "$BIN/ref/$s.pno") | paste -sd ' ' -)
		[ -n "$x" ] && ONLY_NEW+="${ONLY_NEW:+; }$s.pno: $x"
	done
	echo "run.sh: exports only in the new segments: ${ONLY_NEW:-none}"
	# the checkout DIR belongs to, when it is one
	REF_REV=$(git -C "$REF_DIR" log -1 --format=%h 2>/dev/null)
	[ -n "$REF_REV" ] && git -C "$REF_DIR" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && REF_REV+=" + uncommitted changes"
fi

net_up

# ---- the source tree, as a plain tar (decompressed once, so untar measures the mount)
SRC_TAR=$tmp/src.tar
TREE_DESC=
if [ "$TREE" = kernel ]; then
	kt=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$kt" ]; then
		echo "run.sh: decompressing $kt"
		top=$(basename "$kt" .tar.xz)
		if [ "$KDIRS" = all ]; then
			timeout 600 xz -dc "$kt" >"$SRC_TAR" || die "xz -dc $kt failed"
			TREE_DESC=$top
		else
			mkdir -p "$tmp/k"
			timeout 600 tar -x -J -f "$kt" -C "$tmp/k" $(for d in $KDIRS; do echo "$top/$d"; done) ||
				die "tar -x of $KDIRS from $kt failed"
			tar -c -f "$SRC_TAR" -C "$tmp/k" "$top" && rm -rf "$tmp/k" || die "tar -c of the kernel subset failed"
			TREE_DESC="$top/{$(echo $KDIRS | tr ' ' ',')}"
		fi
	else
		echo "run.sh: no /usr/src/linux-source-*.tar.xz: a generated tree of $FILES files"
		TREE=gen
	fi
fi
if [ "$TREE" = gen ]; then
	timeout 600 python3 "$HERE/gen_tree.py" "$tmp/gen" "$FILES" --text "$TOP" >"$tmp/log/gen" ||
		{ cat "$tmp/log/gen"; die "gen_tree.py failed"; }
	tar -c -f "$SRC_TAR" -C "$tmp/gen" . && rm -rf "$tmp/gen" || die "tar of the generated tree failed"
	TREE_DESC="generated: $(sed 's/^gen_tree.py: //' "$tmp/log/gen")"
fi
tar -tvf "$SRC_TAR" >"$tmp/log/src.list" || die "tar -t failed"
N_ENTRIES=$(wc -l <"$tmp/log/src.list")
N_SYML=$(grep -c '^l' "$tmp/log/src.list")
N_HARD=$(grep -c '^h' "$tmp/log/src.list")
SRC_MIB=$(( $(stat -c %s "$SRC_TAR") >> 20 ))
echo "run.sh: tree: $TREE_DESC; $N_ENTRIES tar entries ($N_SYML symlinks, $N_HARD hard links), $SRC_MIB MiB of tar"

# ---- server: arfd on an image, sshd exporting a directory
# the image: twice the tree plus the big file plus room (sparse, so the size costs nothing)
IMG_MIB=$(( 2 * SRC_MIB + BIG_MIB + 1024 ))
timeout 120 "$BIN/arf" mkfs "$tmp/srv/arf.img" --size "${IMG_MIB}M" >"$tmp/log/mkfs" 2>&1 ||
	{ cat "$tmp/log/mkfs"; die "arf mkfs failed"; }
ARFD_NEW=$BIN/arfd ARFD_REF=$BIN/arfd
if [ "$INSTR" = 1 ]; then
	[ "$CMP" = 1 ] || die "--instr goes with --compare-segs"
	command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
		die "--instr: valgrind (callgrind_control) is not installed"
	# a wrapper per side (its dumps: log/cg.SIDE.N); JIT code is written at run time, so
	# valgrind checks all code but files' for changes
	for side in new ref; do
		printf '#!/bin/sh\nexec valgrind --tool=callgrind --dump-line=no --smc-check=all-non-file --callgrind-out-file=%s "%s" "$@"\n' \
			"$tmp/log/cg.$side" "$BIN/arfd" >"$BIN/arfd-cg-$side"
		chmod +x "$BIN/arfd-cg-$side"
	done
	ARFD_NEW=$BIN/arfd-cg-new ARFD_REF=$BIN/arfd-cg-ref
fi
arfd_up "$ARFD_NEW" "$tmp/srv/arf.img" "tcp:$IP_S:$PORT" "$tmp/log/arfd"
if [ "$CMP" = 1 ]; then
	# the ref side: its own image and arfd (segments are installed by the mount, by hash)
	c_pid=$arfd_pid
	timeout 120 "$BIN/arf" mkfs "$tmp/srv/ref.img" --size "${IMG_MIB}M" >"$tmp/log/mkfs.ref" 2>&1 ||
		{ cat "$tmp/log/mkfs.ref"; die "arf mkfs (ref side) failed"; }
	arfd_up "$ARFD_REF" "$tmp/srv/ref.img" "tcp:$IP_S:$PORT_REF" "$tmp/log/arfd.ref"
	arfd_ref_pid=$arfd_pid arfd_pid=$c_pid
else
	sshd_up "$tmp/log/sshd"
fi

# ---- client mounts (a fresh one before each row: cold client caches)
n_mount=0
mount_arf() {
	# explicit segments with --compare-segs (the same files the mount would find beside arf)
	# shellcheck disable=SC2046  # SEGENV_NEW is VAR=VALUE words
	arf_mount_at arfm_pid "tcp:$IP_S:$PORT" "$M_ARF" arf-mount $([ "$CMP" = 1 ] && echo "$SEGENV_NEW")
}
umount_arf() { arf_umount_at arfm_pid "$M_ARF"; }
mount_sshfs() {
	# no_contain_symlinks: Debian's sshfs refuses (EPERM) to read symlinks whose target is
	# absolute or has a .. unless told the server is trusted; noforget: node numbers stay
	# stable (else tar -x may say "Directory renamed before its status could be extracted")
	ns_c timeout 30 sshfs -F "$tmp/ssh/ssh_config" -o no_contain_symlinks,noforget "bench:$tmp/srv/export" "$M_SSH" 2>"$tmp/log/sshfs-mount" ||
		{ echo "run.sh: sshfs failed: $(tr '\n' ' ' <"$tmp/log/sshfs-mount")" >&2; return 1; }
	for _ in $(seq 100); do mounted "$M_SSH" && return 0; sleep 0.05; done
	return 1
}
umount_sshfs() { unmount "$M_SSH"; }
# the ref side (--compare-segs): the same mount, its own arfd, DIR's segments
mount_ref() {
	# shellcheck disable=SC2086  # SEGENV_REF is VAR=VALUE words
	arf_mount_at refm_pid "tcp:$IP_S:$PORT_REF" "$M_REF" ref-mount $SEGENV_REF
}
umount_ref() { arf_umount_at refm_pid "$M_REF"; }
remount() {
	case $1 in
	arf) umount_arf; mount_arf ;;
	sshfs) umount_sshfs; mount_sshfs ;;
	ref) umount_ref; mount_ref ;;
	esac
}
umount_side() {
	case $1 in
	arf) umount_arf ;;
	sshfs) umount_sshfs ;;
	ref) umount_ref ;;
	esac
}
mnt_of() { case $1 in arf) echo "$M_ARF" ;; ref) echo "$M_REF" ;; *) echo "$M_SSH" ;; esac; }

# ---- rows: name and command; $M is the mount, the tree goes to $M/tree
BIG_NAME="$((BIG_MIB >= 1024 ? BIG_MIB / 1024 : BIG_MIB)) $([ "$BIG_MIB" -ge 1024 ] && echo GiB || echo MiB)"
ROWS=("untar" "find" "ls -lR" "du -s" "read all" "write $BIG_NAME" "read $BIG_NAME" "append $BIG_NAME" "rm -r")
row_cmd() {
	case $1 in
	untar) echo 'mkdir "$M/tree" && tar -x --no-same-owner -f "$SRC_TAR" -C "$M/tree"' ;;
	find) echo 'find "$M/tree" >"$OUTF"' ;;
	"ls -lR") echo 'ls -lR "$M/tree" >"$OUTF"' ;;
	"du -s") echo 'du -s "$M/tree" >"$OUTF"' ;;
	# tar c to a pipe reads every file (to /dev/null, GNU tar would skip reading them)
	"read all") echo 'cd "$M/tree" && tar -c . | cat >/dev/null' ;;
	write*) echo 'dd if=/dev/zero of="$M/big" bs=1M count=$BIG_MIB conv=fsync status=none' ;;
	read*) echo 'dd if="$M/big" of=/dev/null bs=1M status=none' ;;
	# O_APPEND: on ARF each write is data.c's append run (the size found under the lock)
	append*) echo 'dd if=/dev/zero of="$M/big" bs=1M count=$BIG_MIB oflag=append conv=notrunc,fsync status=none' ;;
	"rm -r") echo 'rm -r "$M/tree" "$M/big"' ;;
	esac
}
# what a row's checks compare between the two mounts (and the tar): find's count, the big
# file's size
declare -A SEC STATUS ERR DETAIL FIRST CPU INS
# --instr: the instructions the side's arfd (under callgrind) executed since the last zero:
# dumped now, the newest dump's total
instr_dump() {   # pid side
	timeout 120 callgrind_control -d "$1" >/dev/null 2>&1 || return 1
	local f
	f=$(ls -v "$tmp/log/cg.$2".* 2>/dev/null | tail -n 1)
	[ -n "$f" ] && sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$f"
}
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
run_row() {   # net row fs
	local net=$1 row=$2 fs=$3 k="$1|$2|$3" M OUTF rc t0 t1
	M=$(mnt_of "$fs")
	OUTF=$tmp/log/out.$fs
	if ! remount "$fs"; then
		SEC[$k]=; STATUS[$k]=failed; ERR[$k]="mount failed"; return
	fi
	export M OUTF SRC_TAR BIG_MIB
	local dpid= c0=
	[ "$CMP" = 1 ] && case $fs in arf) dpid=$(arfd_of "$arfd_pid") ;; ref) dpid=$(arfd_of "$arfd_ref_pid") ;; esac
	[ -n "$dpid" ] && c0=$(cpu_s "$dpid")
	[ "$INSTR" = 1 ] && [ -n "$dpid" ] && timeout 120 callgrind_control -z "$dpid" >/dev/null 2>&1
	t0=$EPOCHREALTIME
	timeout "$ROW_T" bash -c "$(row_cmd "$row")" >/dev/null 2>"$tmp/log/err.$fs"
	rc=$?
	t1=$EPOCHREALTIME
	CPU[$k]= INS[$k]=
	[ "$INSTR" = 1 ] && [ -n "$dpid" ] && INS[$k]=$(instr_dump "$dpid" "$([ "$fs" = arf ] && echo new || echo ref)")
	[ -n "$c0" ] && CPU[$k]=$(awk -v a="$c0" -v b="$(cpu_s "$dpid")" 'BEGIN { if (b != "") printf "%.2f", b - a }')
	SEC[$k]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	if [ $rc -eq 0 ]; then STATUS[$k]=ok
	elif [ $rc -eq 124 ]; then STATUS[$k]="timeout"
	else STATUS[$k]="failed"; fi
	# the errors, grouped: the operation and errno without the paths
	ERR[$k]=$(grep -v 'Exiting with failure status' "$tmp/log/err.$fs" |
		sed -E 's/^(tar|find|ls|du|rm|dd|mkdir|cat): //; s/^([^:]*): ((Cannot|cannot)[^:]*)/\2/; s/ to .*: /: /; s/'\''[^'\'']*'\''//g' |
		sort | uniq -c | sort -rn | head -n 3 | awk '{ $1 = $1 "x"; print }' | paste -sd ';' - | tr -d ',')
	[ $rc -eq 124 ] && ERR[$k]="timeout after ${ROW_T}s${ERR[$k]:+; ${ERR[$k]}}"
	[ $rc -ne 0 ] && [ -z "${ERR[$k]}" ] && ERR[$k]="exit status $rc"
	case $row in
	find) DETAIL[$k]="$(wc -l <"$OUTF") names" ;;
	"du -s") DETAIL[$k]="$(awk '{ print $1 }' "$OUTF") KiB" ;;
	write*|append*) DETAIL[$k]="$(stat -c %s "$M/big" 2>/dev/null || echo none) bytes" ;;
	esac
	if [ "$fs" = arf ] && ! kill -0 "$arfd_pid" 2>/dev/null; then
		ERR[$k]="${ERR[$k]:+${ERR[$k]}; }arfd died: $(tail -n 3 "$tmp/log/arfd" | tr '\n' ' ')"
	fi
	if [ "$fs" = ref ] && ! kill -0 "$arfd_ref_pid" 2>/dev/null; then
		ERR[$k]="${ERR[$k]:+${ERR[$k]}; }arfd (ref) died: $(tail -n 3 "$tmp/log/arfd.ref" | tr '\n' ' ')"
	fi
	if [ "$fs" = arf ] && grep -q . "$tmp/log/arf-mount.$n_mount" 2>/dev/null; then
		cp "$tmp/log/arf-mount.$n_mount" "$tmp/log/arf-row.$net.${row// /_}"
	fi
	if [ "$fs" = ref ] && grep -q . "$tmp/log/ref-mount.$n_mount" 2>/dev/null; then
		cp "$tmp/log/ref-mount.$n_mount" "$tmp/log/ref-row.$net.${row// /_}"
	fi
}

machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))," 
machine+=" $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r)"
echo "run.sh: $machine; rows bounded by ${ROW_T}s"

[ "$CMP" = 1 ] && echo "run.sh: load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
n_row=0
for NET in $NETS; do
	set_net
	remount arf || die "arf mount failed"
	remount "$B" || die "$B mount failed"
	for row in "${ROWS[@]}"; do
		# --compare-segs: which side goes first alternates from row to row (and over the
		# network settings), so neither always finds the machine in the state the other left
		order=$SIDES
		[ "$CMP" = 1 ] && [ $(( (n_row + REF_FIRST) % 2 )) = 1 ] && order="ref arf"
		FIRST[$NET|$row]=${order%% *}
		n_row=$((n_row + 1))
		for fs in $order; do
			run_row "$NET" "$row" "$fs"
			k="$NET|$row|$fs"
			lbl=$fs; [ "$CMP" = 1 ] && [ "$fs" = arf ] && lbl=new
			printf '  %-9s %-12s %-6s %9ss %s%s%s\n' "$NET" "$row" "$lbl" "${SEC[$k]}" "${STATUS[$k]}" \
				"${CPU[$k]:+ (arfd CPU ${CPU[$k]} s${INS[$k]:+, ${INS[$k]} instructions})}" "${ERR[$k]:+ (${ERR[$k]})}"
		done
	done
	# leave both empty for the next network setting
	umount_arf; umount_side "$B"
	rm -rf "$tmp/srv/export/"* 2>/dev/null
	mount_arf && { rm -rf "$M_ARF/tree" "$M_ARF/big" 2>/dev/null; umount_arf; }
	[ "$CMP" = 1 ] && mount_ref && { rm -rf "$M_REF/tree" "$M_REF/big" 2>/dev/null; umount_ref; }
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report: table, CSV, plot
mkdir -p "$HERE/results"
csv=$HERE/results/$OUT.csv txt=$HERE/results/$OUT.txt png=$HERE/results/$OUT.png
# the sides' names: ARF and sshfs, or new and ref (--compare-segs: this build's segments, DIR's)
if [ "$CMP" = 1 ]; then LA=new LB=ref CA=new CB=ref; else LA=ARF LB=sshfs CA=arf CB=sshfs; fi
{
	echo "net,row_n,row,${CA}_s,${CB}_s,ratio_${CB}_over_${CA},${CA}_status,${CB}_status,${CA}_error,${CB}_error,${CA}_detail,${CB}_detail$([ "$CMP" = 1 ] && echo ,first,new_arfd_cpu_s,ref_arfd_cpu_s,cpu_ref_over_new,new_instr,ref_instr,instr_ref_over_new)"
	for NET in $NETS; do
		i=0
		for row in "${ROWS[@]}"; do
			i=$((i + 1))
			a="$NET|$row|arf" s="$NET|$row|$B"
			ratio=
			if [ "${STATUS[$a]}" = ok ] && [ "${STATUS[$s]}" = ok ]; then
				ratio=$(awk -v a="${SEC[$a]}" -v s="${SEC[$s]}" 'BEGIN { if (a > 0) printf "%.2f", s / a }')
			fi
			first=
			if [ "$CMP" = 1 ]; then
				first=${FIRST[$NET|$row]}; [ "$first" = arf ] && first=new
				# the CPU ratio only when both used at least 5 ticks (below, it is mostly rounding)
				cr=$(awk -v a="${CPU[$a]}" -v s="${CPU[$s]}" -v t="$TICK" 'BEGIN { if (a != "" && s != "" && a * t >= 5 && s * t >= 5) printf "%.2f", s / a }')
				[ "${STATUS[$a]}" = ok ] && [ "${STATUS[$s]}" = ok ] || cr=
				ir=$(awk -v a="${INS[$a]}" -v s="${INS[$s]}" 'BEGIN { if (a != "" && s != "" && a > 0) printf "%.3f", s / a }')
				[ "${STATUS[$a]}" = ok ] && [ "${STATUS[$s]}" = ok ] || ir=
				first=",$first,${CPU[$a]},${CPU[$s]},$cr,${INS[$a]},${INS[$s]},$ir"
			fi
			echo "$NET,$i,$row,${SEC[$a]},${SEC[$s]},$ratio,${STATUS[$a]},${STATUS[$s]},${ERR[$a]:-},${ERR[$s]:-},${DETAIL[$a]:-},${DETAIL[$s]:-}$first"
		done
	done
} >"$csv"
{
	if [ "$CMP" = 1 ]; then
		echo "ARF's segments, this build's (new) vs a reference (ref): arf mount of each, own arfd and image, $(date -u '+%Y-%m-%d %H:%M') UTC, bench/fs/run.sh --compare-segs $REF_DIR$([ "$QUICK" = 1 ] && echo ' --quick')${MOPTS:+ --mount-opts $MOPTS}$([ "$REF_FIRST" = 1 ] && echo ' --ref-first')$([ "$INSTR" = 1 ] && echo ' --instr')"
	else
		echo "ARF (arf mount) vs sshfs, $(date -u +%Y-%m-%d), bench/fs/run.sh${QUICK:+$([ "$QUICK" = 1 ] && echo ' --quick')}"
	fi
	echo "tree: $TREE_DESC; $N_ENTRIES tar entries ($N_SYML symlinks, $N_HARD hard links), $SRC_MIB MiB"
	echo "machine: $machine"
	echo "programs: $BUILD built at $BUILD_AT UTC, tree at $BUILD_REV"
	if [ "$CMP" = 1 ]; then
		echo "new: $BUILD/arfseg/{ops,data,statfs}.pno; ref: $REF_DIR/{ops,data,statfs}.pno${REF_REV:+ (tree at $REF_REV)}"
		echo "exports only in the new segments: ${ONLY_NEW:-none}"
		echo "arf mount options: ${MOPTS:-none}"
		[ "$INSTR" = 1 ] && echo "--instr: both arfds under callgrind ($(valgrind --version)); instr = arfd's instructions in the row, ref/new; seconds under valgrind"
		echo "load average (1, 5, 15 min) at the end: $LOAD_END"
		echo "each row on a fresh mount of each, the first side alternating (column first); ratio = ref s / new s (> 1: new faster)"
		echo "arfd CPU: seconds of CPU each side's arfd used during the row (ticks of $((1000 / TICK)) ms), cpu ref/new from 5 ticks each"
	else
		echo "each row on a fresh mount of each; ratio = sshfs s / ARF s (> 1: ARF faster)"
	fi
	echo
	printf '%-10s %-12s %10s %10s %8s  %s\n' net row "$LA s" "$LB s" "$([ "$CMP" = 1 ] && echo ref/new || echo ratio)" \
		"$([ "$CMP" = 1 ] && echo 'first  new cpu  ref cpu  cpu r/n  ')notes"
	awk -F, -v la="$LA" -v lb="$LB" -v cmp="$CMP" 'function f(x) { return x == "" ? "-" : x }
	NR > 1 {
		r = $6 != "" ? $6 : ($7 != "ok" ? la " " toupper($7) : lb " " toupper($8))
		n = cmp == 1 ? sprintf("%-6s %5s %8s %8s  ", $13, f($14), f($15), f($16)) : ""
		if ($19 != "") n = n sprintf("instr %s vs %s: %s  ", $17, $18, $19)
		if ($9 != "") n = n la ": " $9 " "
		if ($10 != "") n = n lb ": " $10 " "
		if ($11 != "" && $11 != $12) n = n "[" $11 " vs " $12 "]"
		printf "%-10s %-12s %10s %10s %8s  %s\n", $1, $3, $4, $5, r, n
	}' "$csv"
} >"$txt"
cat "$txt"
if [ "$CMP" = 1 ]; then
	echo "plot: none for --compare-segs (plot.gp draws ARF against sshfs)"
elif command -v gnuplot >/dev/null 2>&1; then
	if timeout 60 gnuplot -e "csv='$csv'; out='$png'; ttl='ARF vs sshfs: $TREE_DESC'" "$HERE/plot.gp" 2>"$tmp/log/gnuplot"; then
		echo "plot: $png"
	else
		echo "plot: gnuplot failed: $(head -n 5 "$tmp/log/gnuplot")"
	fi
else
	echo "plot: gnuplot not found, $png not made"
fi
echo "csv: $csv"
