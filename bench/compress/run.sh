#!/usr/bin/env bash
# bench/compress/run.sh: EXEC payloads packed with zstd on slow links (issue 17): `arf export`
# of a source tree (default /usr/include, 133 MB of headers), `arf import` of it, and `tar c`
# of it through an `arf mount` (a new mount each run: no page cache) piped to cat, from an
# arfd in one network namespace to a client in another over a veth pair shaped with tbf
# (100mbit, 1gbit) and unshaped (unlimited), or both on the server's loopback (loopback), each
# row with ARC_COMPRESS=never (nothing packed) and with the default (auto: packed when the
# link is measured slower than 150 MB/s, docs/protocol.md "Compression"), the two
# alternating, REPS runs each.  Prints min-max seconds and the never/auto ratio per row, each
# run's seconds and how much auto packed, and checks every export against the source (diff
# -r) and every tar's listing.  Root (namespaces, tc).
#   bash bench/compress/run.sh [--build DIR] [--src DIR] [--reps N]
#                              [--nets "100mbit 1gbit unlimited loopback"]
#                              [--what "export import mount-tar"]
set -uo pipefail          # (not -e: lib.sh tries things that may fail, e.g. deleting no qdisc)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUILD=$top/build SRC=/usr/include REPS=3 NETS="100mbit 1gbit unlimited loopback" WHAT="export import mount-tar"
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd); shift 2 ;;
	--src) SRC=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--nets) NETS=$2; shift 2 ;;
	--what) WHAT=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--src DIR] [--reps N] [--nets LIST] [--what LIST]" >&2; exit 2 ;;
	esac
done
BIN=$BUILD
die() { echo "compress/run.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, tc)"
NS_S=pnz_s.$$ NS_C=pnz_c.$$ V_S=pnzs$$ V_C=pnzc$$ IP_S=10.213.0.1 IP_C=10.213.0.2
tmp=$(mktemp -d /tmp/bench_compress.XXXXXX)
# export writes its copy to memory where there is some: on a disk, ext4 made each create
# after the previous run's rm -rf scan for recently deleted inodes (~0.5 ms a file, 4 s of
# the 7 s an unshaped export of /usr/include took), which measured the disk, not the link
out=$(mktemp -d /dev/shm/bench_compress_out.XXXXXX 2>/dev/null) || out=$tmp/outdir
# shellcheck source=../lib.sh
. "$top/bench/lib.sh"
arfd_pid=
mpid=
cleanup() { [ -n "$mpid" ] && arf_umount_at mpid "$tmp/mnt"; stop "$arfd_pid"; net_down; rm -rf "$tmp" "$out"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
net_up
mkdir -p "$tmp/log"
bytes=$(du -sb "$SRC" | cut -f1)
# the image: the tree, and the import rows' copies of it (in.REP.MODE: 2 x REPS), and a margin
copies=1
case " $WHAT " in *" import "*) copies=$((1 + 2 * REPS)) ;; esac
"$BIN/arf" mkfs "$tmp/img" --size $(( (bytes * copies * 5 / 4 >> 30) + 1 ))G >/dev/null
ep=tcp:$IP_S:7000
# (every address of the server's namespace: its veth's and its loopback)
arfd_up "$BIN/arfd" "$tmp/img" tcp:0.0.0.0:7000 "$tmp/log/arfd"
ep_veth=$ep
# one import first, unshaped, so that export has the tree to read
NET=unlimited set_net
ns_c env ARC_COMPRESS=never "$BIN/arf" import "$SRC" "$ep:/tree" >/dev/null 2>"$tmp/log/import0" ||
	die "arf import failed: $(cat "$tmp/log/import0")"
# timed CMD...: run it (output dropped, errors in $tmp/log/x); its seconds in $s, 1 if it failed
timed() {
	local t0 t1 rc
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$tmp/log/x"
	rc=$?
	t1=$(date +%s.%N)
	s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	return $rc
}
# arfd's count of packed outputs and unpacked argument bytes so far
packed_now() { ns_c "$BIN/arc" stats "$ep_veth" | awk '$1 == "exec.packed" { o = $2 } $1 == "exec.unpacked" { a = $2 } END { print o + 0, a + 0 }'; }
printf '# bench/compress, %s, %s, %d cpus; %s (%s bytes), %d runs per cell, alternating\n' \
	"$(date -u '+%F %T UTC')" "$(uname -sm)" "$(nproc)" "$SRC" "$bytes" "$REPS"
printf '%-10s %-8s %-20s %-20s %s\n' link what never_s auto_s never/auto
for NET in $NETS; do
	# loopback: the client beside arfd, in its namespace (lib.sh's ns_c and mounts there)
	if [ "$NET" = loopback ]; then
		NET=unlimited set_net
		ep=tcp:127.0.0.1:7000 cl=ns_s MOUNT_NS=ns_s
	else
		set_net
		ep=$ep_veth cl=ns_c MOUNT_NS=ns_c
	fi
	for what in $WHAT; do
		declare -A t=([never]="" [auto]="")
		packed0=$(packed_now)
		for rep in $(seq "$REPS"); do
			for mode in never auto; do
				[ $((rep % 2)) -eq 0 ] && mode=$([ $mode = never ] && echo auto || echo never)
				rm -rf "$out/tree"
				if [ $what = export ]; then
					timed $cl env ARC_COMPRESS=$mode "$BIN/arf" export "$ep:/tree" "$out/tree" ||
						die "export: $(cat "$tmp/log/x")"
					diff -r --no-dereference "$SRC" "$out/tree" >/dev/null || die "export ($NET, $mode) differs from $SRC"
				elif [ $what = import ]; then
					timed $cl env ARC_COMPRESS=$mode "$BIN/arf" import "$SRC" "$ep:/in.$rep.$mode" ||
						die "import: $(cat "$tmp/log/x")"
				else
					mkdir -p "$tmp/mnt"
					arf_mount_at mpid "$ep" "$tmp/mnt" mount ARC_COMPRESS=$mode || die "mount failed"
					timed sh -c 'tar cf - -C "$1" . | cat' tar "$tmp/mnt/tree" ||
						die "tar through the mount: $(cat "$tmp/log/x")"
					# what tar read is the tree: a listing with sizes, against the source's
					tar cf - -C "$tmp/mnt/tree" . | tar tvf - | awk '{ print $3, $6 }' | sort >"$tmp/got"
					arf_umount_at mpid "$tmp/mnt"
					tar cf - -C "$SRC" . | tar tvf - | awk '{ print $3, $6 }' | sort >"$tmp/want"
					cmp -s "$tmp/got" "$tmp/want" || die "tar through the mount ($NET, $mode): another tree"
				fi
				t[$mode]="${t[$mode]} $s"
			done
		done
		range() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f-%.2f", a, b }'; }
		med() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
		rn=$(echo "${t[never]}" | range) ra=$(echo "${t[auto]}" | range)
		mn=$(echo "${t[never]}" | med) ma=$(echo "${t[auto]}" | med)
		printf '%-10s %-8s %-20s %-20s %sx\n' "$NET" "$what" "$rn" "$ra" \
			"$(awk -v a="$mn" -v b="$ma" 'BEGIN { printf "%.2f", a / b }')"
		set -- $packed0 $(packed_now)
		echo "#   runs in order: never${t[never]}; auto${t[auto]}; packed (auto): $(($3 - $1)) outputs, $(($4 - $2)) argument bytes"
		unset t
	done
done
ns_c "$BIN/arc" stats "$ep_veth" | grep -E '^exec\.(packed|unpacked)'
