#!/usr/bin/env bash
# bench/fs/run.sh: ARF (`arf mount` of `arfd --arf`) against sshfs (sshd's sftp) on the same
# source tree, over a veth pair between two network namespaces, once with the link shaped
# to 1 Gbit/s (tbf) and once unshaped (issue #7).  Each row runs on ARF and on sshfs in the
# same run, each on a fresh mount (cold client caches); the ratio is sshfs/ARF seconds, so
# > 1 means ARF is faster.  Table on stdout, results/NAME.{txt,csv,png}.
#
#   bash bench/fs/run.sh [--quick] [--build DIR] [--nets "1gbit unlimited"] [--tree kernel|gen]
#                        [--kernel-dirs "DIR ..."|all] [--files N] [--big MIB] [--out NAME]
#                        [--row-timeout S]
#   (make bench-fs BENCH_FS_ARGS=--quick)
#
# --quick: a generated tree of 2000 files and a 64 MiB file, results/fs-quick.*.  The default
# untars the top-level directories --kernel-dirs (default fs include kernel lib mm net
# scripts: 12 000 entries, 16 of them symlinks; `all` is the whole 84 000) of Debian's
# linux-source tarball (installed when missing; a generated tree of --files files when it
# cannot be) and writes a --big 4096 MiB file (the issue's 4 GiB), results/fs.*.  Needs root
# (namespaces, mounts).  Everything it makes lives in a mktemp directory, two namespaces
# and one veth pair, all removed on exit; every step is bounded by `timeout`.
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
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "run.sh: $1: unknown option (--help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$QUICK" = 1 ]; then
	TREE=gen; FILES=2000; BIG_MIB=64; OUT=${OUT:-fs-quick}; ROW_T=${ROW_T:-300}
else
	OUT=${OUT:-fs}; ROW_T=${ROW_T:-3600}
fi
[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (network namespaces, mounts)" >&2; exit 2; }
for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "run.sh: $BUILD/$p not built (make)" >&2; exit 2; }
done

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
PORT=7070
M_ARF=$tmp/mnt/arf M_SSH=$tmp/mnt/sshfs
arfd_pid= sshd_pid= arfm_pid=

cleanup() {
	trap - EXIT
	unmount "$M_ARF"; unmount "$M_SSH"
	[ -n "$arfm_pid" ] && kill -KILL "$arfm_pid" 2>/dev/null
	stop "$sshd_pid"; stop "$arfd_pid"
	net_down
	if mounted "$M_ARF" || mounted "$M_SSH"; then
		echo "run.sh: a mount is still there, $tmp left"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "run.sh: $*" >&2; exit 1; }

mkdir -p "$tmp/bin/arfseg" "$tmp/srv/export" "$tmp/ssh" "$M_ARF" "$M_SSH" "$tmp/log"
# a copy of the programs: others may rebuild build/ while this runs
cp "$BUILD/arf" "$BUILD/arfd" "$tmp/bin/" && cp "$BUILD"/arfseg/*.pno "$tmp/bin/arfseg/" ||
	die "cannot copy the programs from $BUILD"
BIN=$tmp/bin
BUILD_AT=$(date -u -r "$BUILD/arf" '+%Y-%m-%d %H:%M')
# the checkout BUILD was made from (not this script's, when --build names another one)
SRC=$(cd "$BUILD/.." && pwd)
BUILD_REV="$(git -C "$SRC" log -1 --format=%h 2>/dev/null)$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' + uncommitted changes')"

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
arfd_up "$BIN/arfd" "$tmp/srv/arf.img" "tcp:$IP_S:$PORT" "$tmp/log/arfd"

sshd_up "$tmp/log/sshd"

# ---- client mounts (a fresh one before each row: cold client caches)
n_mount=0
mount_arf() {
	n_mount=$((n_mount + 1))
	ns_c "$BIN/arf" mount "tcp:$IP_S:$PORT" "$M_ARF" -f 2>"$tmp/log/arf-mount.$n_mount" &
	arfm_pid=$!
	for _ in $(seq 200); do
		mounted "$M_ARF" && return 0
		kill -0 "$arfm_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "run.sh: arf mount failed: $(tr '\n' ' ' <"$tmp/log/arf-mount.$n_mount")" >&2
	return 1
}
umount_arf() {
	mounted "$M_ARF" && timeout 60 "$BIN/arf" umount "$M_ARF" 2>/dev/null
	unmount "$M_ARF"
	if [ -n "$arfm_pid" ]; then
		for _ in $(seq 100); do kill -0 "$arfm_pid" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$arfm_pid" 2>/dev/null
		wait "$arfm_pid" 2>/dev/null
		arfm_pid=
	fi
}
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
remount() {
	case $1 in
	arf) umount_arf; mount_arf ;;
	sshfs) umount_sshfs; mount_sshfs ;;
	esac
}
mnt_of() { if [ "$1" = arf ]; then echo "$M_ARF"; else echo "$M_SSH"; fi; }

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
declare -A SEC STATUS ERR DETAIL
run_row() {   # net row fs
	local net=$1 row=$2 fs=$3 k="$1|$2|$3" M OUTF rc t0 t1
	M=$(mnt_of "$fs")
	OUTF=$tmp/log/out.$fs
	if ! remount "$fs"; then
		SEC[$k]=; STATUS[$k]=failed; ERR[$k]="mount failed"; return
	fi
	export M OUTF SRC_TAR BIG_MIB
	t0=$EPOCHREALTIME
	timeout "$ROW_T" bash -c "$(row_cmd "$row")" >/dev/null 2>"$tmp/log/err.$fs"
	rc=$?
	t1=$EPOCHREALTIME
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
	if [ "$fs" = arf ] && grep -q . "$tmp/log/arf-mount.$n_mount" 2>/dev/null; then
		cp "$tmp/log/arf-mount.$n_mount" "$tmp/log/arf-row.$net.${row// /_}"
	fi
}

machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))," 
machine+=" $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r)"
echo "run.sh: $machine; rows bounded by ${ROW_T}s"

for NET in $NETS; do
	set_net
	mount_arf || die "arf mount failed"
	mount_sshfs || die "sshfs mount failed"
	for row in "${ROWS[@]}"; do
		for fs in arf sshfs; do
			run_row "$NET" "$row" "$fs"
			k="$NET|$row|$fs"
			printf '  %-9s %-12s %-6s %9ss %s%s\n' "$NET" "$row" "$fs" "${SEC[$k]}" "${STATUS[$k]}" \
				"${ERR[$k]:+ (${ERR[$k]})}"
		done
	done
	# leave both empty for the next network setting
	umount_arf; umount_sshfs
	rm -rf "$tmp/srv/export/"* 2>/dev/null
	mount_arf && { rm -rf "$M_ARF/tree" "$M_ARF/big" 2>/dev/null; umount_arf; }
done

# ---- report: table, CSV, plot
mkdir -p "$HERE/results"
csv=$HERE/results/$OUT.csv txt=$HERE/results/$OUT.txt png=$HERE/results/$OUT.png
{
	echo "net,row_n,row,arf_s,sshfs_s,ratio_sshfs_over_arf,arf_status,sshfs_status,arf_error,sshfs_error,arf_detail,sshfs_detail"
	for NET in $NETS; do
		i=0
		for row in "${ROWS[@]}"; do
			i=$((i + 1))
			a="$NET|$row|arf" s="$NET|$row|sshfs"
			ratio=
			if [ "${STATUS[$a]}" = ok ] && [ "${STATUS[$s]}" = ok ]; then
				ratio=$(awk -v a="${SEC[$a]}" -v s="${SEC[$s]}" 'BEGIN { if (a > 0) printf "%.2f", s / a }')
			fi
			echo "$NET,$i,$row,${SEC[$a]},${SEC[$s]},$ratio,${STATUS[$a]},${STATUS[$s]},${ERR[$a]:-},${ERR[$s]:-},${DETAIL[$a]:-},${DETAIL[$s]:-}"
		done
	done
} >"$csv"
{
	echo "ARF (arf mount) vs sshfs, $(date -u +%Y-%m-%d), bench/fs/run.sh${QUICK:+$([ "$QUICK" = 1 ] && echo ' --quick')}"
	echo "tree: $TREE_DESC; $N_ENTRIES tar entries ($N_SYML symlinks, $N_HARD hard links), $SRC_MIB MiB"
	echo "machine: $machine"
	echo "programs: $BUILD built at $BUILD_AT UTC, tree at $BUILD_REV"
	echo "each row on a fresh mount of each; ratio = sshfs s / ARF s (> 1: ARF faster)"
	echo
	printf '%-10s %-12s %10s %10s %8s  %s\n' net row "ARF s" "sshfs s" ratio notes
	awk -F, 'NR > 1 {
		r = $6 != "" ? $6 : ($7 != "ok" ? "ARF " toupper($7) : "sshfs " toupper($8))
		n = ""
		if ($9 != "") n = n "ARF: " $9 " "
		if ($10 != "") n = n "sshfs: " $10 " "
		if ($11 != "" && $11 != $12) n = n "[" $11 " vs " $12 "]"
		printf "%-10s %-12s %10s %10s %8s  %s\n", $1, $3, $4, $5, r, n
	}' "$csv"
} >"$txt"
cat "$txt"
if command -v gnuplot >/dev/null 2>&1; then
	if timeout 60 gnuplot -e "csv='$csv'; out='$png'; ttl='ARF vs sshfs: $TREE_DESC'" "$HERE/plot.gp" 2>"$tmp/log/gnuplot"; then
		echo "plot: $png"
	else
		echo "plot: gnuplot failed: $(head -n 5 "$tmp/log/gnuplot")"
	fi
else
	echo "plot: gnuplot not found, $png not made"
fi
echo "csv: $csv"
