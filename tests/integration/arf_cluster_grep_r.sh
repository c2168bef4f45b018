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
# A second tree for the batches (cl_batch): 760 files, several batches a server, empty,
# binary, sparse and multi-stripe files among them; the data servers' requests counted.
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

# ---- batches (cl_batch: a data server's files of one stripe, their objects in one objinos
# run and their scans in one grep_batch run): a tree of 720 small files over all three
# servers (several batches each), 12 empty ones, 6 binary ones, a sparse one (no object: the
# batch leaves it to cluster_file), files of one stripe exactly (U bytes) and of two (U + 1)
# and of several, one over the batch's scan of a file (a long output: cl_batch_file leaves
# it), in directories that mix them
m=$tmp/m
mkdir -p "$m/b/s0" "$m/b/s1" "$m/b/s2" "$m/b/s3"
awk -v dir="$m/b" 'BEGIN {
	for (f = 0; f < 720; f++) {
		name = sprintf("%s/s%d/f%03d.h", dir, f % 4, f)
		n = f % 37
		for (i = 0; i < n; i++) {
			k = (f * 13 + i * 7) % 17
			if (k == 0) line = sprintf("#include <needle%d.h>", i)
			else if (k == 5) line = sprintf("int foo_%d(void); /* needle */", f)
			else line = sprintf("/* %d:%d filler text */", f, i)
			if (f % 11 == 3 && i == n - 1) printf "%s", line > name
			else print line > name
		}
		close(name)
	}
}'
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do : >"$m/b/s$((i % 4))/empty$i"; done
for i in 0 1 2 3 4 5; do
	{ echo "needle in binary $i"; printf 'a\0b\n'; echo "foo $i"; } >"$m/b/s$((i % 4))/bin$i"
done
truncate -s 5000 "$m/b/s1/sparse"
awk -v u=$U 'BEGIN { s = ""; while (length(s) < u) s = s sprintf("needle exact %07d\n", length(s));
	printf "%s", substr(s, 1, u - 1) "\n" }' >"$m/b/s2/exact_unit"
{ cat "$m/b/s2/exact_unit"; printf 'x'; } >"$m/b/s2/unit_plus_1"
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "multi stripe %d needle foo\n", i }' >"$m/b/s3/multi"
awk 'BEGIN { for (i = 0; i < 200; i++) printf "needle %0200d\n", i }' >"$m/b/s0/wide"
run "$BUILD/arf" import "$m/b" "$M:/b"; check_rc "import the batch tree" 0 $?
nfiles=$(find "$m/b" -type f | wc -l)

# bcheck OPTION...: against GNU grep (sorted), and batches against none
# (ARF_GREP_CLUSTER_BATCH=0: every file through cluster_file) byte for byte, messages in place
bcheck() {
	(cd "$m" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" b >"$tmp/g.raw" 2>"$tmp/g.eraw"
	 echo $? >"$tmp/g.rc")
	sort "$tmp/g.raw" >"$tmp/g.out"
	sort "$tmp/g.eraw" >"$tmp/g.err"
	timeout "$T" "$BUILD/arf" grep "$@" "$M:/b" >"$tmp/a.raw" 2>"$tmp/a.eraw"
	echo $? >"$tmp/a.rc"
	sed "s#$M:/##g" "$tmp/a.raw" | sort >"$tmp/a.out"
	sed "s#$M:/##g" "$tmp/a.eraw" | sort >"$tmp/a.err"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
		ok
	else
		bad "arf grep $* over the batch tree (against GNU grep, sorted)"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err" "$tmp/a.err" | head -n 3
		echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
	fi
	timeout "$T" "$BUILD/arf" grep "$@" "$M:/b" >"$tmp/w.out" 2>&1
	echo $? >"$tmp/w.rc"
	ARF_GREP_CLUSTER_BATCH=0 timeout "$T" "$BUILD/arf" grep "$@" "$M:/b" >"$tmp/s.out" 2>&1
	echo $? >"$tmp/s.rc"
	if cmp -s "$tmp/s.out" "$tmp/w.out" && cmp -s "$tmp/s.rc" "$tmp/w.rc"; then
		ok
	else
		bad "arf grep $* over the batch tree (batches against none)"
		diff "$tmp/s.out" "$tmp/w.out" | head -n 5
		echo "status: no batches $(cat "$tmp/s.rc"), batches $(cat "$tmp/w.rc")"
	fi
}
bcheck -r needle
bcheck -rn needle
bcheck -r -b -o 'needle[0-9]*'
bcheck -rc needle
bcheck -rc -v needle
bcheck -rl foo
bcheck -rL foo
bcheck -rq needle
bcheck -rq nomatchanywhere
bcheck -r -m 1 -c needle
bcheck -r -m 1 -l needle
bcheck -r -m 1 needle
bcheck -r -m 2 -n needle
bcheck -r -m 3 -b -o 'needle[0-9]*'
bcheck -r -m 1 -c -v needle
bcheck -rh -n foo
bcheck -rH -c include
bcheck -r -a -c needle
bcheck -r -I -l needle
bcheck -r -w -n -i NEEDLE
bcheck -r -A1 needle
export ARF_GREP_RUN_OUT=4096           # runs that stop early: the batch leaves such files
bcheck -rn needle
unset ARF_GREP_RUN_OUT
export ARF_GREP_CLUSTER_FILES=5        # a small window: batches of a few files
bcheck -rc needle
unset ARF_GREP_CLUSTER_FILES

# requests: a batch of up to 64 files costs two runs on its data server (objinos,
# grep_batch), where one file at a time cost two a file: fewer than one a four files
req_sum() {
	_n=0
	for _e in $data; do
		_b=$("$BUILD/arc" stats "$_e" | sed -n "s/^exec.requests //p")
		_n=$((_n + ${_b:-0}))
	done
	echo "$_n"
}
x0=$(req_sum)
ARF_GREP_CLUSTER_STATS=1 timeout "$T" "$BUILD/arf" grep -rc needle "$M:/b" >/dev/null 2>"$tmp/st.err"
x1=$(req_sum)
reqs=$((x1 - x0))
if [ "$reqs" -lt $((nfiles / 4)) ]; then ok; else
	bad "grep -rc over $nfiles files: $reqs requests on the data servers (want < $((nfiles / 4)))"
fi
contains "grep -rc: batches settled most files" "$tmp/st.err" "batches settled"
settled=$(sed -n 's/.* batches settled \([0-9]*\) of .*/\1/p' "$tmp/st.err")
if [ "${settled:-0}" -ge $((nfiles - 30)) ]; then ok; else
	bad "grep -rc: batches settled ${settled:-0} of $nfiles files"
fi

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
