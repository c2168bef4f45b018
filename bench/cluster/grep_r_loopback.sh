#!/bin/sh
# grep_r_loopback.sh: `arf grep -r` over a tree on a loopback cluster (tests/lib.sh's
# arf_cluster: 1 metadata + 3 data arfd, no namespaces, no root), the rotated layout.  For
# each arf (ARFS, alternated RUNS times): the requests (arc stats exec.requests) on the data
# servers and on the metadata server, the bytes the data servers sent (net.bytes_sent), and
# the CLIENT's CPU time (user + sys of arf grep, /usr/bin/time), which is what batching cuts;
# the output against GNU grep's on the local tree (sorted: the walk's order is the server's).
#
#   BUILD=build ARFS="/work/ab-clr-before/arf build/arf" RUNS=3 \
#       sh bench/cluster/grep_r_loopback.sh [TREE [ARGS]]
# TREE: /usr/include; ARGS: "-c include", or several option sets separated by ';'.
BUILD=${BUILD:-build}
ARFS=${ARFS:-$BUILD/arf}
RUNS=${RUNS:-3}
TREE=${1:-/usr/include}
ARGS=${2:-"-c include"}
U=${UNIT:-1048576}               # the stripe unit (arf_cluster_init's)
export U
T=300
export LC_ALL=C
here=$(dirname "$0")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grep_r_loopback.XXXXXX") || exit 1
pids=
cleanup() { for p in $pids; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../../tests/lib.sh"
# arf_cluster's servers, with a metadata image large enough for the tree's inodes
data=
for k in 1 2 3; do
	arf_server "$k" 1024M
	# shellcheck disable=SC2154
	data="$data $ep"
done
arf_server 0 1024M
M=$ep
arf_cluster_init --layout rotate >/dev/null
# the tree's regular files only (-r skips symlinks; a copy keeps the servers' tree and the
# local one the same)
mkdir "$tmp/t"
(cd "$TREE" && find . -type f -readable -print0 | cpio -0pdm --quiet "$tmp/t") 2>/dev/null
"$BUILD/arf" import "$tmp/t" "$M:/t" >/dev/null || exit 1
files=$(find "$tmp/t" -type f | wc -l)
stat_sum() {               # stat_sum NAME ENDPOINT...: the stat summed over the servers
	_s=$1
	shift
	_n=0
	for _e in "$@"; do
		_b=$("$BUILD/arc" stats "$_e" | sed -n "s/^$_s //p")
		_n=$((_n + ${_b:-0}))
	done
	echo "$_n"
}
echo "tree $TREE: $files files, $(du -sh "$tmp/t" | cut -f1); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$ARGS" | tr ';' '\n' | while read -r args; do
# shellcheck disable=SC2086
(cd "$tmp" && grep -r $args t) | sort >"$tmp/want"
echo "arf grep -r $args"
printf '%-28s %9s %9s %11s %7s %7s %7s %7s  %s\n' arf "data req" "meta req" "data sent" user sys "cpu s" "wall s" output
r=0
while [ "$r" -lt "$RUNS" ]; do
	for a in $ARFS; do
		# shellcheck disable=SC2086
		x0=$(stat_sum exec.requests $data); m0=$(stat_sum exec.requests "$M")
		# shellcheck disable=SC2086
		n0=$(stat_sum net.bytes_sent $data)
		# shellcheck disable=SC2086
		/usr/bin/time -f '%U %S %e' -o "$tmp/time" timeout $T "$a" grep -r $args "$M:/t" >"$tmp/out" </dev/null
		# shellcheck disable=SC2086
		x1=$(stat_sum exec.requests $data); m1=$(stat_sum exec.requests "$M")
		# shellcheck disable=SC2086
		n1=$(stat_sum net.bytes_sent $data)
		sed "s#^$M:/##" "$tmp/out" | sort >"$tmp/got"
		cmp -s "$tmp/want" "$tmp/got" && same=same || same=DIFFERENT
		read -r us sy el <"$tmp/time"
		printf '%-28s %9s %9s %11s %7s %7s %7s %7s  %s\n' "$a" $((x1 - x0)) $((m1 - m0)) \
			$((n1 - n0)) "$us" "$sy" "$(echo "$us $sy" | awk '{ printf "%.2f", $1 + $2 }')" \
			"$el" "$same"
	done
	r=$((r + 1))
done
done
