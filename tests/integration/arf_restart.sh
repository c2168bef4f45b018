#!/bin/sh
# arf_restart.sh: an `arf mount` and `arf grep` riding through restarts of arfd under real
# work (docs/arf.md, "arfd restarts"; docs/net.md, "Sessions").  On a free loopback port:
#   1. `tar x` of a tree (up to 2000 files of /usr/include) into the mount while arfd is
#      killed with SIGKILL and started again on the same port 2 s later: tar exits 0, the tree
#      is identical (diff -r);
#      three rounds, the kill once a tenth, a quarter and a half of the files are made;
#   1b. exactly once across a crash (docs/arf.md, "Exactly once across a restart"): an arfd
#      that kills itself (ARFD_TEST_KILL, server.c) right after its N-th mkdir, create,
#      link, rename, unlink or rmdir is done but before the reply leaves, restarted 2 s
#      later, under a shell loop of those commands that must each succeed (a re-run would
#      answer EEXIST or ENOENT: mkdir, `set -C` create, ln, mv, rm, rmdir say so), and under
#      `tar x` with the kill after its N-th create: tar exits 0, the tree identical; and
#      under a loop of `echo line >>file` with the kill after its N-th append (O_APPEND:
#      data.c's keyed append): every line in the file once, in order;
#   2. the same through a graceful restart (SIGTERM: arfd drains, answers DRAINING, clients
#      send again to the new one);
#   3. a loop of `arf grep -rn` over the server's copy and over the mount's, through a kill -9
#      and restart: every run exits 0 with exactly GNU grep's lines;
#   4. appends of numbered records through O_APPEND (server-side appends) across three
#      kill -9 restarts: no record lost, none out of order, none doubled (an append the
#      killed arfd had done is answered from its keyed record when sent again);
#   5. arf fsck of the image clean at the end.
# Where FUSE cannot be used it says why and runs only 3 over the server.
#
#   BUILD=build sh tests/integration/arf_restart.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`, every loop by a count and a time; on exit the mount is
# undone and whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
N_FILES=${ARF_RESTART_FILES:-2000}
mpid=
loop=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_restart.sh.XXXXXX") || exit 1
mnt=$tmp/mnt
mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	[ -n "$loop" ] && kill "$loop" 2>/dev/null
	mounted && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; }
	[ -n "$mpid" ] && kill -KILL "$mpid" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	if mounted; then echo "arf_restart.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "arf_restart.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# restart SIG PAUSE: stop arfd with SIG, start it again on the same port PAUSE s later
restart() {
	kill "-$1" "$pid"
	wait "$pid" 2>/dev/null
	sleep "$2"
	n_restart=$((n_restart + 1))
	"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --arf "$img" 2>"$tmp/arfd.$n_restart.log" &
	pid=$!
}
n_restart=0

# the tree: regular files of /usr/include under 200 KiB, sorted, at most N_FILES (a
# generated tree where there is none)
mkdir -p "$tmp/src" "$mnt"
if [ -d /usr/include ]; then
	(cd /usr/include && find . -type f -size -200k | sort | head -n "$N_FILES" >"$tmp/list" &&
		tar cf "$tmp/src.tar" -T "$tmp/list" 2>/dev/null)
else
	for i in $(seq 600); do mkdir -p "$tmp/gen/d$((i % 30))"; seq "$i" 3000 >"$tmp/gen/d$((i % 30))/f$i.h"; done
	tar cf "$tmp/src.tar" -C "$tmp/gen" .
fi
tar xf "$tmp/src.tar" -C "$tmp/src"
n_src=$(find "$tmp/src" -type f | wc -l)
pat='define.*_H\|__u32'
(cd "$tmp/src" && grep -rn "$pat" . | sed 's|^\./||' | LC_ALL=C sort) >"$tmp/grep.want"

img=$tmp/fs.img
run "$BUILD/arf" mkfs "$img" --size 512M; check_rc mkfs 0 $?
start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
port=${ep##*:}

fuse=yes
if ! [ -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	fuse="no /dev/fuse or fusermount3"
else
	"$BUILD/arf" mount "$ep" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do mounted && break; kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
	mounted || fuse="FUSE could not be mounted here: $(head -n 1 "$tmp/mount.log")"
fi

# until_made DIR PART PID: wait (30 s at most) until the mount's DIR holds 1/PART of the
# tree's files or PID is gone: a kill lands in the middle of a tar however fast it runs
until_made() {
	i=0
	while kill -0 "$3" 2>/dev/null && [ "$i" -lt 600 ] &&
	      [ "$(find "$mnt/$1" -type f 2>/dev/null | wc -l)" -lt $((n_src / $2)) ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# tar_through DIR SIG PAUSE: tar x into the mount's DIR; SIG to arfd once a tenth of the
# files are made, back PAUSE s later
tar_through() {
	mkdir "$mnt/$1"
	t0=$(date +%s%N)
	(cd "$mnt/$1" && timeout 120 tar xf "$tmp/src.tar") 2>"$tmp/tar.err" &
	tpid=$!
	until_made "$1" 10 "$tpid"
	kill -0 "$tpid" 2>/dev/null || bad "tar x into $1 ended before arfd was stopped: nothing tested"
	restart "$2" "$3"
	wait "$tpid"
	rc=$?
	ms=$(ms_since "$t0")
	check_rc "tar x through SIG$2 of arfd" 0 $rc
	[ "$rc" -eq 0 ] || sed 's/^/  | /' "$tmp/tar.err" | head -n 5
	echo "arf_restart.sh: tar x of $n_src files through SIG$2 and a restart $3 s later: exit $rc in $ms ms"
	if diff -r "$tmp/src" "$mnt/$1" >"$tmp/diff" 2>&1; then ok; else bad "tree after SIG$2 differs:"; head -n 5 "$tmp/diff" | sed 's/^/  | /'; fi
}

# fault_arfd ENTRY N: replace arfd (SIGTERM) by one that kills itself right after its N-th
# completed run of ENTRY, before the reply is sent
fault_arfd() {
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	n_restart=$((n_restart + 1))
	ARFD_TEST_KILL="$1:$2" "$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --arf "$img" \
		2>"$tmp/arfd.$n_restart.log" &
	pid=$!
}

# fault_wait WHAT: wait (at most 60 s) for the faulting arfd to die, then start a plain one
# 2 s later; fails when it did not die of SIGKILL (the fault never fired: nothing tested)
fault_wait() {
	i=0
	while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then
		bad "$1: the fault did not fire within 60 s"
		restart KILL 2
		return
	fi
	wait "$pid"
	frc=$?
	[ "$frc" -eq 137 ] && ok || bad "$1: arfd ended with status $frc, not by SIGKILL (137)"
	sleep 2
	n_restart=$((n_restart + 1))
	"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --arf "$img" 2>"$tmp/arfd.$n_restart.log" &
	pid=$!
}

# reap PID: wait (at most 120 s) for the loop PID to end, then stop it
reap() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ "$i" -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	kill "$1" 2>/dev/null
	wait "$1"
}

# ops_through ENTRY N: 12 rounds of mkdir, create (O_EXCL), ln, mv, rm, rmdir in the mount,
# each of which must succeed, while arfd dies after its N-th ENTRY (done, reply lost)
ops_through() {
	d=$mnt/ops-$1
	mkdir "$d" || bad "mkdir $d"
	fault_arfd "$1" "$2"
	(
		set -C                     # `: >f` opens with O_EXCL: an existing f is EEXIST
		i=0
		while [ "$i" -lt 12 ]; do
			i=$((i + 1))
			mkdir "$d/m$i" || echo "mkdir m$i" >>"$tmp/ops.fail"
			: >"$d/m$i/f" || echo "create m$i/f" >>"$tmp/ops.fail"
			ln "$d/m$i/f" "$d/m$i/l" || echo "ln m$i/l" >>"$tmp/ops.fail"
			mv "$d/m$i/l" "$d/m$i/r" || echo "mv m$i/r" >>"$tmp/ops.fail"
			rm "$d/m$i/r" || echo "rm m$i/r" >>"$tmp/ops.fail"
			rm "$d/m$i/f" || echo "rm m$i/f" >>"$tmp/ops.fail"
			rmdir "$d/m$i" || echo "rmdir m$i" >>"$tmp/ops.fail"
		done
		mkdir "$d/end"
	) 2>"$tmp/ops.err" &
	opid=$!
	fault_wait "ops through a kill after $1 $2"
	reap "$opid"
	if [ ! -s "$tmp/ops.fail" ] && [ -d "$d/end" ] && [ -z "$(ls "$d" | grep -v '^end$')" ]; then
		ok
	else
		bad "a kill after $1 $2 (done, reply lost): $(cat "$tmp/ops.fail" 2>/dev/null | tr '\n' ' ')left: $(ls "$d" | tr '\n' ' ')"
		sed 's/^/  | /' "$tmp/ops.err" | head -n 5
	fi
	echo "arf_restart.sh: 84 namespace operations through arfd killed after its $1 number $2, reply lost: $( [ -s "$tmp/ops.fail" ] && echo "$(wc -l <"$tmp/ops.fail") failed" || echo "each exactly once")"
	rm -f "$tmp/ops.fail"
}

# appends_through N: 40 `echo line >>file` in the mount (O_APPEND: data.c's append, keyed)
# while arfd dies after its N-th append (done, reply lost): every line once, in order
appends_through() {
	f=$mnt/appends-$1
	: >"$f" || bad "create $f"
	fault_arfd append "$1"
	(
		i=0
		while [ "$i" -lt 40 ]; do
			i=$((i + 1))
			echo "line $i" >>"$f" || echo "append $i" >>"$tmp/app.fail"
		done
	) 2>"$tmp/app.err" &
	apid=$!
	fault_wait "appends through a kill after append $1"
	reap "$apid"
	seq -f 'line %g' 40 >"$tmp/app.want"
	if [ ! -s "$tmp/app.fail" ] && cmp -s "$tmp/app.want" "$f"; then
		ok
	else
		bad "appends through a kill after append $1 (done, reply lost): $(cat "$tmp/app.fail" 2>/dev/null | tr '\n' ' ')$(wc -l <"$f") lines for 40, $(sort "$f" | uniq -d | wc -l) doubled"
		sed 's/^/  | /' "$tmp/app.err" | head -n 5
	fi
	echo "arf_restart.sh: 40 appends (echo >>) through arfd killed after its append number $1, reply lost: $(wc -l <"$f") lines, $(sort "$f" | uniq -d | wc -l) doubled"
	rm -f "$tmp/app.fail"
}

if [ "$fuse" = yes ]; then
	tar_through a KILL 2
	for part in 4 2; do
		# more kills at other moments, each into a tree of its own: once tar has made a
		# quarter, then a half of the files (counted, not timed: a fixed delay was past the
		# end of a fast tar)
		mkdir "$mnt/a$part"
		(cd "$mnt/a$part" && timeout 120 tar xf "$tmp/src.tar") 2>"$tmp/tar.err" &
		tpid=$!
		until_made "a$part" "$part" "$tpid"
		kill -0 "$tpid" 2>/dev/null || bad "tar x into a$part ended before the kill: nothing tested"
		restart KILL 2
		wait "$tpid"
		check_rc "tar x through a kill -9 after 1/$part of the files" 0 $?
		if diff -r "$tmp/src" "$mnt/a$part" >"$tmp/diff" 2>&1; then ok; else bad "tree after a kill after 1/$part of the files differs:"; head -n 5 "$tmp/diff" | sed 's/^/  | /'; fi
	done
	ops_through mkdirattrs 3
	ops_through mknodattrs 4
	ops_through linkattrs 5
	ops_through rename 6
	ops_through unlinkattr 7
	ops_through rmdirattr 8
	appends_through 5
	appends_through 17
	# tar x with the kill right after its 150th create (reply lost)
	mkdir "$mnt/fault"
	fault_arfd mknodattrs 150
	(cd "$mnt/fault" && timeout 120 tar xf "$tmp/src.tar") 2>"$tmp/tar.err" &
	tpid=$!
	fault_wait "tar x through a kill after create 150"
	wait "$tpid"
	check_rc "tar x through a kill after its 150th create" 0 $?
	if diff -r "$tmp/src" "$mnt/fault" >"$tmp/diff" 2>&1; then ok; else bad "tree after a kill after a create differs:"; head -n 5 "$tmp/diff" | sed 's/^/  | /'; fi
	tar_through b TERM 1
else
	echo "arf_restart.sh: mount parts skipped: $fuse"
	timeout 120 "$BUILD/arf" import "$tmp/src" "$ep:/a" >/dev/null 2>"$tmp/err" || { bad "arf import"; cat "$tmp/err"; }
fi

# 3. arf grep -rn in a loop (over the server, and over the mount's copy) through a kill -9
: >"$tmp/greps.txt"
(
	end=$(($(date +%s) + 7))
	i=0
	while [ "$(date +%s)" -lt "$end" ] && [ "$i" -lt 100 ]; do
		i=$((i + 1))
		if [ "$fuse" = yes ] && [ $((i % 2)) -eq 0 ]; then
			where=$mnt/a
		else
			where=$ep:/a
		fi
		t0=$(date +%s%N)
		timeout "$T" "$BUILD/arf" grep -rn "$pat" "$where" >"$tmp/g.out" 2>"$tmp/g.err.$i"
		rc=$?
		ms_since "$t0" >>"$tmp/gms.txt"
		sed "s|^$where/||" "$tmp/g.out" | LC_ALL=C sort >"$tmp/g.got"
		if cmp -s "$tmp/g.got" "$tmp/grep.want"; then same=same; else same=differs; fi
		echo "$i $rc $same $where" >>"$tmp/greps.txt"
	done
) &
loop=$!
sleep 1.5
restart KILL 2
wait "$loop"
loop=
n=$(wc -l <"$tmp/greps.txt")
n_ok=$(grep -c '^[0-9]* 0 same ' "$tmp/greps.txt")
longest=$(sort -n "$tmp/gms.txt" | tail -n 1)
echo "arf_restart.sh: arf grep -rn through a kill -9 and restart: $n_ok of $n runs exit 0 with GNU grep's $(wc -l <"$tmp/grep.want") lines, longest $longest ms"
if [ "$longest" -ge 1500 ]; then ok; else bad "no arf grep spanned the 2 s outage (longest $longest ms)"; fi
if [ "$n" -ge 1 ] && [ "$n_ok" -eq "$n" ]; then   # every run (how many fit: the speed)
	ok
else
	bad "arf grep -rn loop: $n_ok of $n runs ok"
	grep -v '^[0-9]* 0 same ' "$tmp/greps.txt" | head -n 5 | sed 's/^/  | /'
	cat "$tmp"/g.err.* | head -n 5 | sed 's/^/  | /'
fi

# 4. appends through O_APPEND across kill -9 restarts: numbered 4 KiB records
if [ "$fuse" = yes ]; then
	pad=$(printf '%4090s' '' | tr ' ' x)
	(
		end=$(($(date +%s) + 8))
		i=0
		while [ "$(date +%s)" -lt "$end" ] && [ "$i" -lt 100000 ]; do
			i=$((i + 1))
			printf '%06d%s\n' "$i" "$pad" >>"$mnt/log" || { echo "$i" >>"$tmp/append.fail"; break; }
		done
		echo "$i" >"$tmp/append.n"
	) 2>"$tmp/append.err" &
	loop=$!
	for k in 1 2 3; do
		sleep 1.2
		restart KILL 0.5
	done
	wait "$loop"
	loop=
	n_app=$(cat "$tmp/append.n")
	if [ ! -s "$tmp/append.fail" ]; then ok; else bad "an append failed:"; head -n 3 "$tmp/append.err" | sed 's/^/  | /'; fi
	cut -c1-6 "$mnt/log" >"$tmp/recs"
	uniq "$tmp/recs" >"$tmp/recs.u"
	n_recs=$(wc -l <"$tmp/recs")
	n_dup=$((n_recs - $(wc -l <"$tmp/recs.u")))
	# every record, once or repeated in place, in order
	if seq -f '%06g' "$n_app" | cmp -s - "$tmp/recs.u"; then ok; else bad "appended records lost or out of order ($n_recs lines for $n_app records)"; fi
	if [ "$(awk 'length != 4096' "$mnt/log" | wc -l)" -eq 0 ]; then ok; else bad "torn append records"; fi
	if [ "$n_dup" -eq 0 ]; then ok; else bad "$n_dup record(s) doubled by the re-run of an append the killed arfd had done"; fi
	echo "arf_restart.sh: $n_app appends through 3 kill -9 restarts: $n_dup record(s) doubled"
	timeout "$T" fusermount3 -u "$mnt" || bad "umount"
	wait "$mpid" 2>/dev/null
	mpid=
fi

kill -TERM "$pid"
wait "$pid"
pid=
run "$BUILD/arf" fsck "$img"; check_rc "fsck after $n_restart restarts" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
