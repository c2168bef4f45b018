#!/bin/sh
# arf_cluster_grep_r.sh: `arf grep -r` on a cluster, several files in flight (arf/grep.c,
# cl_pool; docs/cluster.md "arf grep -r on a cluster").  1 metadata + 3 data arfd on loopback,
# the rotated layout (each small file's one stripe on server ino mod 3), stripe unit 64 KiB.
# The tree: many small files in nested directories, a few larger than several stripes, a
# binary file, an empty one, a last line without newline.  For each option set:
#  - against GNU grep on the local copy: stdout and stderr (lines sorted: the walk's order
#    is the server's directory order, not the local one) and the exit status;
#  - against itself one file at a time (ARF_GREP_CLUSTER_FILES=1, the order before the
#    window): stdout and stderr together (2>&1, so the messages' places among the lines are
#    checked too) and the exit status, byte for byte, unsorted.
# Then a data server hung and killed while -r is in flight: grep's message naming it for
# the files it holds, the other files' lines in order, exit status 2, within 25 s.
#
#   BUILD=build sh tests/integration/arf_cluster_grep_r.sh    prints "N passed, N failed" last

BUILD=${BUILD:-build}
here=$(dirname "$0")
export LC_ALL=C
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "arf_cluster_grep_r.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_grep_r.sh.XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

need arf_cluster_grep_r.sh arf arfd
arf_cluster 3 64M
arf_cluster_init --layout rotate

# ---- the tree: 6 directories x 40 small files (some lines with needle or foo, some files
# without either, some without a final newline), 4 files over several stripes, a binary
# file, an empty file
d=$tmp/d
mkdir -p "$d/t"
for a in 0 1 2; do
	for b in 0 1; do
		dir=$d/t/d$a/e$b
		mkdir -p "$dir"
		awk -v dir="$dir" -v seed=$((a * 10 + b)) 'BEGIN {
			for (f = 0; f < 40; f++) {
				name = sprintf("%s/f%02d.c", dir, f)
				n = 1 + (f * 7 + seed) % 23
				for (i = 0; i < n; i++) {
					k = (f * 31 + i * 17 + seed) % 11
					if (k == 0) line = sprintf("int needle_%d = %d; /* foo */", i, f)
					else if (k == 3) line = sprintf("Needle %d of %d", i, f)
					else if (k == 5) line = sprintf("foo bar %d", i * f)
					else line = sprintf("line %d of file %d in %d", i, f, seed)
					if (f % 9 == 4 && i == n - 1) printf "%s", line > name
					else print line > name
				}
				close(name)
			}
		}'
	done
done
for n in 1 2 3 4; do
	awk -v n=$n 'BEGIN { for (i = 0; i < 9000 * n; i++)
		if (i % 997 == n) printf "big %d needle here %d\n", n, i;
		else printf "filler line %6d of big file %d foo%d\n", i, n, i % 13 }' >"$d/t/d$((n % 3))/big$n"
done
awk 'BEGIN { for (i = 0; i < 200; i++) print "needle before the NUL " i }' >"$d/t/d1/bin"
printf 'x\0y\nneedle after\n' >>"$d/t/d1/bin"
: >"$d/t/d2/empty"
run "$BUILD/arf" import "$d/t" "$M:/t"; check_rc "import" 0 $?

mkdir -p "$tmp/bin"
ln -s /usr/bin/grep "$tmp/bin/grep"

# rcheck OPTION...: the two comparisons above, over the tree and a missing operand
rcheck() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" t nosuch >"$tmp/g.raw" 2>"$tmp/g.eraw"
	 echo $? >"$tmp/g.rc")
	sort "$tmp/g.raw" >"$tmp/g.out"
	sort "$tmp/g.eraw" >"$tmp/g.err"
	timeout "$T" "$BUILD/arf" grep "$@" "$M:/t" "$M:/nosuch" >"$tmp/a.raw" 2>"$tmp/a.eraw"
	echo $? >"$tmp/a.rc"
	sed "s#$M:/##g" "$tmp/a.raw" | sort >"$tmp/a.out"
	sed "s#$M:/##g" "$tmp/a.eraw" | sort >"$tmp/a.err"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
		ok
	else
		bad "arf grep $* (against GNU grep, sorted)"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err" "$tmp/a.err" | head -n 3
		echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
	fi
	timeout "$T" "$BUILD/arf" grep "$@" "$M:/t" "$M:/nosuch" >"$tmp/w.out" 2>&1
	echo $? >"$tmp/w.rc"
	ARF_GREP_CLUSTER_FILES=1 timeout "$T" "$BUILD/arf" grep "$@" "$M:/t" "$M:/nosuch" \
		>"$tmp/s.out" 2>&1
	echo $? >"$tmp/s.rc"
	if cmp -s "$tmp/s.out" "$tmp/w.out" && cmp -s "$tmp/s.rc" "$tmp/w.rc"; then
		ok
	else
		bad "arf grep $* (window against one file at a time)"
		diff "$tmp/s.out" "$tmp/w.out" | head -n 5
		echo "status: one at a time $(cat "$tmp/s.rc"), window $(cat "$tmp/w.rc")"
	fi
}
rcheck -r needle
rcheck -rn needle
rcheck -rn -b -i needle
rcheck -rl needle
rcheck -rL needle
rcheck -rc foo
rcheck -rq needle
rcheck -rq nomatchanywhere
rcheck -r -m1 -n needle
rcheck -ro 'needle_[0-9]*'
rcheck -r -v -c line
rcheck -r -w -n foo
rcheck -r -C1 -n needle
rcheck -r --color=always -n needle
rcheck -r -a needle
rcheck -rh -e Needle -e 'big 3'
rcheck -r --include='*.c' -l foo
# a small window: the reorder buffer wraps many times
export ARF_GREP_CLUSTER_FILES=2
rcheck -rn needle
unset ARF_GREP_CLUSTER_FILES

# -q ends at the first match without waiting for the rest of the tree
run "$BUILD/arf" grep -rq needle "$M:/t"; check_rc "grep -rq" 0 $?
same "grep -rq prints nothing" "$(cat "$tmp/out" "$tmp/err")" ""

# ---- a data server hung, then killed, while -r is in flight: its files are errors, the
# others are printed in the walk's order, status 2, bounded time
timeout "$T" "$BUILD/arf" grep -rn needle "$M:/t" >"$tmp/full.raw" 2>/dev/null
kill -STOP "$pid_2"
t0=$(date +%s)
timeout 60 "$BUILD/arf" grep -rn needle "$M:/t" >"$tmp/k.out" 2>"$tmp/k.err" &
gp=$!
sleep 1
kill -KILL "$pid_2"
kill -CONT "$pid_2" 2>/dev/null
wait "$gp"
rc=$?
el=$(( $(date +%s) - t0 ))
same "grep -r, a data server killed: status" "$rc" 2
if [ "$el" -le 25 ]; then ok; else bad "grep -r with a killed data server: $el s"; fi
contains "grep -r names the data server" "$tmp/k.err" "data server $ep_2"
# every message names a file of the tree and that server (but the binary file's, when it
# was read)
n_err=$(grep -vc ': binary file matches$' "$tmp/k.err")
n_named=$(grep -c "^grep: $M:/t/.*data server $ep_2" "$tmp/k.err")
same "grep -r: every message names a file and the server" "$n_named" "$n_err"
if [ "$n_err" -ge 1 ]; then ok; else bad "grep -r: no file reported"; fi
# the other files' lines: the full run's, in its order, less the failed files'
sed -n "s#^grep: \($M:/t/[^:]*\): .*#\1#p" "$tmp/k.err" | sort -u >"$tmp/k.failed"
awk -v m="$M:" 'NR == FNR { bad[$0] = 1; next }
	{ split(substr($0, length(m) + 1), p, ":"); if (!((m p[1]) in bad)) print }' \
	"$tmp/k.failed" "$tmp/full.raw" >"$tmp/k.want"
if cmp -s "$tmp/k.want" "$tmp/k.out"; then ok; else
	bad "grep -r with a killed data server: the other files' lines"
	diff "$tmp/k.want" "$tmp/k.out" | head -n 5
fi
lines=$(wc -l <"$tmp/k.out")
if [ "$lines" -ge 1 ]; then ok; else bad "grep -r with a killed data server printed nothing"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
