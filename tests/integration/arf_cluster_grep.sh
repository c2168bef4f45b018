#!/bin/sh
# arf_cluster_grep.sh: `arf grep` on a cluster (docs/cluster.md) against GNU grep on the
# same files, byte for byte (stdout, stderr, exit status).  1 metadata + 3 data arfd on
# loopback, stripe unit 64 KiB.  Files: the grep test's (tests/grep/gen_data.sh), files
# with a line across every stripe boundary at each offset from 8 bytes before the boundary
# to 8 after (the boundary inside the line, just before or after its terminator), a line
# longer than three stripes, a last line without a terminator across a boundary, a NUL in
# the third stripe only (the whole file is binary), a file smaller than a stripe, an empty
# file, a tree for -r.  The option sets and patterns of arf_grep.sh (every
# ARF_GREP_STRIDE-th pair), in the C locale (the scan in the data servers), some forced
# through the gather and some in C.UTF-8 (arf_cluster_grep_utf8.sh has more); that the servers scanned (their
# output, from arc stats, a fraction of the file).  A killed data server: grep's error message naming it within
# 10 s, exit status 2.
#
#   BUILD=build sh tests/integration/arf_cluster_grep.sh    prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
here=$(dirname "$0")
# the C locale (a section below in C.UTF-8; arf_cluster_grep_utf8.sh: UTF-8 and -z)
export LC_ALL=C
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
if ! /usr/bin/grep --version 2>/dev/null | head -n 1 | /usr/bin/grep -q 'GNU grep'; then
	echo "arf_cluster_grep.sh: skipped: no GNU grep at /usr/bin/grep"
	echo "0 passed, 0 failed"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_grep.sh.XXXXXX") || exit 1
pids=
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

need arf_cluster_grep.sh arf arfd
arf_cluster 3 64M
# flat: the killed-server check below reads a file smaller than a stripe, on server 1 only
arf_cluster_init --layout flat

# ---- the files
d=$tmp/d
sh "$here/../grep/gen_data.sh" "$d" >/dev/null || exit 1
# edge_D: at each of the first four stripe boundaries B, the 13-byte line "ab needle cd"
# starts at B - 6 + D (filler lines of up to 60 bytes before it, some with foo)
for D in -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8; do
	awk -v u=$U -v dd="$D" 'BEGIN { pos = 0; f = "filler text with foo and words abcdefghijklmnopqrstuvwxyz 0123456789";
		for (k = 1; k <= 4; k++) {
			t = k * u - 6 + dd
			while (pos < t) { n = t - pos; if (n > 60) n = (n > 61 ? 60 : 59);
				printf "%s\n", substr(f, 1 + (pos % 7), n - 1); pos += n }
			printf "ab needle cd\n"; pos += 13
		}
		printf "the end\n" }' >"$d/edge_$D"
done
# the boundary right after a line's terminator, and right before it, at the last line
awk -v u=$U 'BEGIN { for (i = 0; i < u / 8 - 1; i++) printf "abcdef\n"; printf "needle\n"; printf "foo needle" }' >"$d/nonl_edge"
# one line of 200 000 bytes (three stripes and more) with needle at a boundary and near its
# end, between short lines
# (letters no pattern repeats: GNU grep -w 'x\{2,\}' takes minutes over a line of x)
awk -v u=$U 'BEGIN { print "first foo"; w = "qwertyuiop";
	for (i = 0; i < u - 13; i++) printf "%s", substr(w, 1 + i % 10, 1); printf "needle";
	for (i = 0; i < 200000 - u; i++) printf "%s", substr(w, 1 + i % 7, 1); print "needle end"; print "last foo" }' >"$d/longline"
# a NUL in the third stripe only: the whole file is binary
awk -v u=$U 'BEGIN { for (i = 0; i < 3 * u / 16; i++) printf "needle line %4d\n", i % 10000 }' >"$d/binmid"
printf 'x\0y' | dd of="$d/binmid" bs=1 seek=$((2 * U + 100)) conv=notrunc 2>/dev/null
printf 'small needle\nfoo\nend' >"$d/small"
# every: 8.5 stripes of lines of 17 to 83 bytes (the boundaries fall at many places in a
# line), each with needle, every third with foo; bigedge: a 20 000-byte line (longer than
# the edges searched, shorter than a stripe) across the first boundary
awk -v u=$U 'BEGIN { pos = 0; i = 0; w = "abcdefghijklmnopqrstuvwxyz0123456789 ";
	while (pos < 8 * u + u / 2) { n = 17 + (i * 37) % 67; s = sprintf("needle %d %s", i, (i % 3) ? "" : "foo ");
		while (length(s) < n - 1) s = s substr(w, 1 + (i + length(s)) % 37, 1);
		print s; pos += n; i++ } }' >"$d/every"
awk -v u=$U 'BEGIN { for (pos = 0; pos < u - 5000; pos += 50) printf "%049d\n", pos;
	for (i = 0; i < 20000; i++) printf "%s", (i == 12000 ? "needle" : "x"); print "";
	print "ab needle cd"; print "the end foo" }' >"$d/bigedge"
# UTF-8 context beside lines with encoding errors (the gather runs such a file again on the
# exact path)
printf 'a1\nb2\nc3 \377\nd4\ne5\nf6\ng7 \377 x\nh8 needle\n' >"$d/ctxenc"
: >"$d/empty2"
mkdir -p "$d/sub/deeper"
cp "$d/edge_0" "$d/sub/a"
printf 'needle in sub\nfoo\n' >"$d/sub/b.txt"
cp "$d/edge_3" "$d/sub/deeper/c"
run "$BUILD/arf" import "$d" "$M:/g"; check_rc "import" 0 $?

mkdir -p "$tmp/bin"
ln -s /usr/bin/grep "$tmp/bin/grep"
files='empty empty2 small nonl greek crlf binary nuls long words rep zdata nonl_edge longline binmid every bigedge'
for D in -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8; do files="$files edge_$D"; done
remote=
for f in $files; do remote="$remote $M:/g/$f"; done

check() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" $files >"$tmp/g.out" 2>"$tmp/g.err"; echo $? >"$tmp/g.rc")
	timeout "$T" "$BUILD/arf" grep "$@" $remote >"$tmp/a.raw" 2>"$tmp/a.eraw"
	echo $? >"$tmp/a.rc"
	sed "s#$M:/g/##g" "$tmp/a.raw" >"$tmp/a.out"
	sed "s#$M:/g/##g" "$tmp/a.eraw" >"$tmp/a.err"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err" &&
	   cmp -s "$tmp/g.rc" "$tmp/a.rc"; then
		ok
	else
		bad "arf grep $*"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err" "$tmp/a.err" | head -n 3
		echo "status: grep $(cat "$tmp/g.rc"), arf grep $(cat "$tmp/a.rc")"
	fi
}

. "$here/../grep/arf_sets.sh"
check_sets
check -E -n 'needle|foo$'
check -n -e 'ab needle cd' -e 'dle cd$' -e '^ab nee'
check -b -o -e 'needle'
check -C 3 -n -b needle
check -F -x 'ab needle cd'
check -n needle nosuch
# counts (-c, -l, -L, -q): the data servers count each window, the client adds the lines
# across boundaries (each once) and clamps at -m; with -v, -i, -w, -x, context, -I
for o in "-c" "-c -v" "-l" "-L" "-q" "-l -v" "-L -v" "-q -v" "-c -m 1" "-c -m 2" "-c -m 3" \
         "-c -m 4" "-c -m 5" "-c -m 1500" "-c -m 4 -v" "-c -m 2000 -v" "-l -m 1" "-L -m 2" \
         "-q -m 3" "-c -i" "-c -w" "-c -x" "-c -o -n -b" "-c -C 2" "-l -A 1" "-L -B 3" \
         "-c -I" "-l -I" "-c -m 2 -I" "-c -h" "-c -m 3 -x -v"; do
	for p in needle 'ab needle cd' foo 'd$' 'NEEDLE [0-9]*5 '; do
		# shellcheck disable=SC2086
		check $o -e "$p"
	done
done
check -c -i -e 'NEEDLE [0-9]*5 ' -e zzz
# counts over files of their own 4 KiB unit (arf import --stripe-unit): 14 files of 100 to
# 40 000 bytes, lines of 0 to 200 bytes of random words and in the last five one in 50 of
# 3 000 to 9 000 (longer than the edges searched, than a stripe: those files gathered), a NUL
# in two, no final newline in two
# (awk's rand from a fixed seed)
r=$tmp/r
mkdir -p "$r"
awk -v dir="$r" 'BEGIN { srand(18); split("ab needle cd x foo NEEDLE a b", w, " ");
	split("100 4000 4096 8191 8192 8193 12288 20000 40000 40000 12288 8193 4096 30000", sz, " ");
	split("0 1 2 5 10 30 80 200 40 60 20 15 25", ll, " "); split("3000 5000 9000", lo, " ");
	for (i = 1; i <= 14; i++) {
		f = dir "/f" i; n = sz[i]; pos = 0; s = ""
		while (pos < n) {
			L = i > 9 && rand() < 0.02 ? lo[1 + int(rand() * 3)] : ll[1 + int(rand() * 13)]; line = ""
			while (length(line) < L) line = line w[1 + int(rand() * 8)] " "
			line = substr(line, 1, L)
			if (pos + L + 1 > n) line = substr(line, 1, n - pos - 1)
			printf "%s\n", line > f; pos += length(line) + 1
		}
		close(f) } }'
printf 'x\0y' | dd of="$r/f3" bs=1 seek=2000 conv=notrunc 2>/dev/null
printf 'x\0y' | dd of="$r/f9" bs=1 seek=30000 conv=notrunc 2>/dev/null
printf 'x\0y' | dd of="$r/f12" bs=1 seek=8000 conv=notrunc 2>/dev/null
head -c 19999 "$r/f8" >"$r/f8.t" && mv "$r/f8.t" "$r/f8"
head -c 8190 "$r/f5" >"$r/f5.t" && mv "$r/f5.t" "$r/f5"
run "$BUILD/arf" import --stripe-unit 4096 "$r" "$M:/g/r"; check_rc "import (4 KiB)" 0 $?
files_c=$files remote_c=$remote d_c=$d
d=$tmp files= remote=
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do files="$files r/f$i"; remote="$remote $M:/g/r/f$i"; done
for o in "-c" "-c -v" "-l" "-L" "-q" "-c -m 1" "-c -m 3" "-c -m 7 -v" "-l -v" "-L -x" "-c -x" \
         "-c -w" "-c -m 2 -x -v" "-c -I" "-n"; do
	for p in needle 'ab' '^$' 'cd$' '^a'; do
		# shellcheck disable=SC2086
		check $o -e "$p"
	done
done
d=$d_c files=$files_c remote=$remote_c

# -m and context with lines printed (the servers' selected lines, the first NUM of them in
# file order, the context read by the client across stripes): files of a 4 KiB unit with
# "MARK k" at each of the first six boundaries starting at 3 bytes before it + D (D -10 to
# 10: the boundary at every place of the mark, of its context lines and of the lines
# between), a second mark 13 to 15 bytes after every other one (context groups that meet
# or overlap across a boundary), filler lines of 1 to 13 bytes (empty ones too), a mark on
# the second line when D is even (-m reached inside the first stripe), and with D = 10 a
# 5 000-byte line with a mark (longer than a stripe: that file is gathered)
x=$tmp/x
mkdir -p "$x"
for D in -10 -9 -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8 9 10; do
	awk -v u=4096 -v dd="$D" 'BEGIN { pos = 0; i = 0; f = "filler-abcdefghijklmn";
		if (dd % 2 == 0) { print "first"; print "MARK 0"; pos = 13 }
		for (k = 1; k <= 6; k++) {
			t = k * u - 3 + dd
			while (pos < t) { n = t - pos; L = n > 14 ? 2 + (i++ * 7) % 12 : n; print substr(f, 1, L - 1); pos += L }
			print "MARK " k; pos += 7
			if (k % 2 == 0) { t = pos + 13 + (dd + 30) % 3
				while (pos < t) { n = t - pos; L = n > 14 ? 2 + (i++ * 7) % 12 : n; print substr(f, 1, L - 1); pos += L }
				print "MARK b"; pos += 7 }
			if (k == 3 && dd == 10) { s = ""; for (j = 0; j < 5000; j++) s = s substr(f, 1 + j % 20, 1); print s " MARK long"; pos += length(s) + 11 }
		}
		for (j = 0; j < 40; j++) print substr(f, 1, 1 + j % 15) }' >"$x/ctx_$D"
done
run "$BUILD/arf" import --stripe-unit 4096 "$x" "$M:/g/x"; check_rc "import (context)" 0 $?
files_c=$files remote_c=$remote d_c=$d
d=$tmp files= remote=
for D in -10 -9 -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6 7 8 9 10; do
	files="$files x/ctx_$D"; remote="$remote $M:/g/x/ctx_$D"
done
for o in "-C 2 -n" "-A 3 -b" "-B 2 -n -b" "-C 1" "-C 0 -n" "-A 1 -B 4 -n" "-A 0" \
         "-m 1 -A 3 -n" "-m 2 -C 2" "-m 4 -B 1 -b" "-m 7 -A 2 -n -b" "-m 3 -n" "-m 1" \
         "-v -C 1 -n" "-v -m 5 -A 2 -n" "-v -B 3 -m 40" "-o -C 2 -n" "-c -C 2" \
         "--color=always -C 1 -n" "-T -n -C 1" "-h -m 2 -A 1" "-l -C 1" "-C 3 -n -b -m 9"; do
	for p in 'MARK' '^f$' '^$' 'zz' 'MARK [b0]'; do
		# shellcheck disable=SC2086
		check $o -e "$p"
	done
done
check -C 2 -n -e 'MARK 3' -e 'MARK 4'
check -m 1 -A 100000 -n MARK
check -B 100000 -n 'MARK 6'
# -m reads the edges of a few stripes at a time (2 a server, then 4 times as many): many64,
# 64 stripes with needle every ~1000 bytes (-m NUM reached in stripes 0 to 60); in
# emptywin the stripes of server 1 among the first six (1 and 4) hold one terminator each,
# between two long lines (no window), so the edges of more stripes are read before the
# scan, whose first runs make each server's binary pass; emptybin the same with a NUL in
# stripe 7 (server 1's first window): the whole file is binary also for -m 1
y=$tmp/y
mkdir -p "$y"
awk 'BEGIN { pos = 0; i = 0; while (pos < 64 * 4096 - 100) {
		s = (i % 20 == 7) ? sprintf("needle %d", i) : sprintf("line %d of words", i)
		while (length(s) < 30 + (i * 13) % 40) s = s " w"; print s; pos += length(s) + 1; i++ } }' >"$y/many64"
awk -v nul=0 'function fill(to) { while (pos < to - 1) { s = sprintf("needle %d", pos); if (pos + length(s) + 1 > to - 1) s = substr("xxxxxxxxxxxxxxxxxxxx", 1, to - 2 - pos); print s; pos += length(s) + 1 } }
	function long(to) { s = ""; while (pos + length(s) < to) s = s "q"; print s; pos += length(s) + 1 }
	BEGIN { pos = 0; fill(3000); long(6000); long(9000); fill(15000); long(18000); long(21000);
		fill(30000); if (nul) printf "x%cy\n", 0; pos += 4; fill(40000) }' >"$y/emptywin"
awk -v nul=1 'function fill(to) { while (pos < to - 1) { s = sprintf("needle %d", pos); if (pos + length(s) + 1 > to - 1) s = substr("xxxxxxxxxxxxxxxxxxxx", 1, to - 2 - pos); print s; pos += length(s) + 1 } }
	function long(to) { s = ""; while (pos + length(s) < to) s = s "q"; print s; pos += length(s) + 1 }
	BEGIN { pos = 0; fill(3000); long(6000); long(9000); fill(15000); long(18000); long(21000);
		fill(30000); if (nul) printf "x%cy\n", 0; pos += 4; fill(40000) }' >"$y/emptybin"
run "$BUILD/arf" import --stripe-unit 4096 "$y" "$M:/g/y"; check_rc "import (-m)" 0 $?
files= remote=
for f in many64 emptywin emptybin; do files="$files y/$f"; remote="$remote $M:/g/y/$f"; done
for o in "-m 1" "-m 5 -n" "-m 100 -n -b" "-m 150 -C 2 -n" "-m 400 -A 1" "-m 300 -c" "-m 1 -B 3 -n" \
         "-v -m 200 -n" "-m 7 -o -b"; do
	# shellcheck disable=SC2086
	check $o -e needle
done
d=$d_c files=$files_c remote=$remote_c
# the same on the 64 KiB files: -m reached inside the first stripe, in a later one, on a
# line across a boundary; context across every boundary offset (edge_D)
check -m 3 -A 2 -n needle
check -m 1500 -C 1 -n foo
check -m 1 -B 2 -n 'ab needle cd'
check -m 2 -A 1 -b 'ab needle cd'
check -v -m 4 -B 2 foo
check -v -C 1 -n foo
check -B 3 -A 1 -n -b 'ab needle cd'
check -C 2 -n 'needle 1[0-9]*5 '

# the same with the servers returning lines (what they did before counts)
export ARF_GREP_CLUSTER_LINES=1
check -c foo
check -l -v needle
check -L 'ab needle cd'
check -c -m 3 -A 1 needle
unset ARF_GREP_CLUSTER_LINES

# the same lines gathered and scanned in the client (what the servers' scan falls back to)
export ARF_GREP_CLUSTER_GATHER=1
check -c needle
check -o -b -i 'AB NEEDLE'
check -v -c foo
unset ARF_GREP_CLUSTER_GATHER
# UTF-8: the servers' scan; context beside a line with an encoding error (ctxenc) gathered
export LC_ALL=C.UTF-8
check -n -i 'NEEDLE'
check -c '.'
check -o -w 'needle'
files_c=$files remote_c=$remote
files="small ctxenc greek" remote=
for f in $files; do remote="$remote $M:/g/$f"; done
check -n -A1 -e c -e needle
check -C1 -e '[cg]'
check -A2 -v -e '[a-f]'
files=$files_c remote=$remote_c
export LC_ALL=C

# -r over a tree (lines sorted: the walk's order is the server's)
rcheck() {
	(cd "$d" && PATH="$tmp/bin:$PATH" timeout 20 grep "$@" sub 2>"$tmp/g.err" | sort >"$tmp/g.out")
	timeout "$T" "$BUILD/arf" grep "$@" "$M:/g/sub" 2>"$tmp/a.err" | sed "s#$M:/g/##g" | sort >"$tmp/a.out"
	sed -i "s#$M:/g/##g" "$tmp/a.err"
	if cmp -s "$tmp/g.out" "$tmp/a.out" && cmp -s "$tmp/g.err" "$tmp/a.err"; then
		ok
	else
		bad "arf grep $* (recursive)"
		diff "$tmp/g.out" "$tmp/a.out" | head -n 5
		diff "$tmp/g.err" "$tmp/a.err" | head -n 5
	fi
}
rcheck -r needle
rcheck -r -n -b needle
rcheck -r -c foo
rcheck -r -l needle
rcheck -r -L foo
rcheck -r -C 2 -n needle
rcheck -r --include='*.txt' -n needle

# the scan ran in the data servers: what they sent back (edges and the selected lines) is a
# fraction of the file, where the gather sends all of it
# the sum of arc stats' NAME over the data servers
stat_sum() {
	n=0
	for e in "$ep_1" "$ep_2" "$ep_3"; do
		b=$("$BUILD/arc" stats "$e" | sed -n "s/^$1 //p")
		n=$((n + ${b:-0}))
	done
	echo "$n"
}
outbytes() { stat_sum exec.output_bytes; }
size=$(stat -c %s "$d/edge_0")
for mode in servers gather; do
	b0=$(outbytes)
	if [ $mode = gather ]; then export ARF_GREP_CLUSTER_GATHER=1; fi
	run "$BUILD/arf" grep -c needle "$M:/g/edge_0"; check_rc "grep -c ($mode)" 0 $?
	unset ARF_GREP_CLUSTER_GATHER
	same "grep -c ($mode)" "$(cat "$tmp/out")" 4
	sent=$(( $(outbytes) - b0 ))
	if [ $mode = servers ] && [ "$sent" -lt $((size / 2)) ]; then ok
	elif [ $mode = gather ] && [ "$sent" -ge "$size" ]; then ok
	else bad "$mode: the data servers sent $sent bytes of a $size-byte file"; fi
done

# -m and context with lines: the selected lines and the few lines around them cross, not
# the file (the gather: all of it)
for o in "-m 5 -n" "-C 2 -n"; do
	for mode in servers gather; do
		f=edge_0; [ "$o" = "-m 5 -n" ] && f=every
		size=$(stat -c %s "$d/$f")
		want=$(cd "$d" && /usr/bin/grep $o needle "$f")
		b0=$(outbytes)
		if [ $mode = gather ]; then export ARF_GREP_CLUSTER_GATHER=1; fi
		# shellcheck disable=SC2086
		run "$BUILD/arf" grep $o needle "$M:/g/$f"; check_rc "grep $o ($mode)" 0 $?
		unset ARF_GREP_CLUSTER_GATHER
		same "grep $o ($mode)" "$(cat "$tmp/out")" "$want"
		sent=$(( $(outbytes) - b0 ))
		if [ $mode = servers ] && [ "$sent" -lt 8192 ]; then ok
		elif [ $mode = gather ] && [ "$sent" -ge "$size" ]; then ok
		else bad "grep $o ($mode): the data servers sent $sent bytes of a $size-byte file"; fi
	done
done

# counts cross as counts: -c and -l of a file whose every line is selected send no line
# (the edges' partial lines and a trailer a window), and the edges of all stripes are one
# request a server (before: two reads a stripe, one after another)
size=$(stat -c %s "$d/every")
nst=$(( (size + U - 1) / U ))
for mode in lines counts; do
	for o in -c -l; do
		want=$(cd "$d" && /usr/bin/grep $o needle every)
		b0=$(outbytes)
		if [ $mode = lines ]; then export ARF_GREP_CLUSTER_LINES=1; fi
		run "$BUILD/arf" grep $o needle "$M:/g/every"; check_rc "grep $o ($mode)" 0 $?
		unset ARF_GREP_CLUSTER_LINES
		same "grep $o ($mode)" "$(sed "s#$M:/g/##" "$tmp/out")" "$want"
		sent=$(( $(outbytes) - b0 ))
		if [ $mode = lines ] && [ $o = -c ] && [ "$sent" -ge $((size / 2)) ]; then ok
		elif [ $mode = lines ] && [ $o = -l ]; then ok
		elif [ $mode = counts ] && [ "$sent" -lt 8192 ]; then ok
		else bad "grep $o ($mode): the data servers sent $sent bytes of a $size-byte file"; fi
	done
done
x0=$(stat_sum exec.requests)
run "$BUILD/arf" grep -c zzzz "$M:/g/every"; check_rc "grep -c zzzz" 1 $?
x=$(( $(stat_sum exec.requests) - x0 ))
# a connection's lookup of /stripes, the objects' lookups and the edges (3 each), a
# window a stripe
if [ "$x" -le $((nst + 9)) ]; then ok; else bad "grep -c of $nst stripes: $x requests to the data servers"; fi

# ---- a killed data server: grep's error, naming it, within 10 s
kill -KILL "$pid_2"
wait "$pid_2" 2>/dev/null
t0=$(date +%s)
run "$BUILD/arf" grep -c needle "$M:/g/edge_0"; check_rc "grep, a data server killed" 2 $?
el=$(( $(date +%s) - t0 ))
if [ "$el" -le 10 ]; then ok; else bad "grep with a killed data server: $el s"; fi
contains "grep names the file" "$tmp/err" "grep: $M:/g/edge_0: "
contains "grep names the data server" "$tmp/err" "data server $ep_2"
# a file whose bytes are all on other servers (smaller than a stripe: server 1's) is read
run "$BUILD/arf" grep -c needle "$M:/g/small"; check_rc "grep, a file not on the killed server" 0 $?
same "its count" "$(cat "$tmp/out")" 1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
