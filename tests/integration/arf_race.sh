#!/bin/sh
# arf_race.sh: two mounts of one arfd (two clients, the default options: attributes and
# entries cached for a second) doing things to the same files at the same moment.
# O_APPEND from both (the issue's two-line case after the cache went stale, and 2,000
# 8-byte appends from each at once: every record there, once, in each writer's order);
# open(O_CREAT) of the same 500 names from both (no EEXIST without O_EXCL; with O_EXCL each
# name made exactly once); close after queued writes on a full image (ENOSPC, and the
# bytes not there); then pairs of namespace operations run at once many times: link,
# rename over one target, rename against unlink, mkdir -p of one path, create against
# rmdir, a read of an open file the other client removes, truncate while the other
# appends.  No operation may fail that POSIX lets succeed, no acknowledged data may be
# lost, and `arf fsck` must find the image clean at the end.
#
#   BUILD=build sh tests/integration/arf_race.sh     prints "N passed, N failed" last
# Every command is bounded by `timeout`, every loop by a count; on exit the mounts are
# undone and what was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
ROUNDS=${ARF_RACE_ROUNDS:-40}
mp1= mp2= mp3= pid3=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_race.sh.XXXXXX") || exit 1
m1=$tmp/m1
m2=$tmp/m2
m3=$tmp/m3
is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	for d in "$m1" "$m2" "$m3"; do
		if is_mounted "$d"; then
			fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null
		fi
	done
	for p in "$mp1" "$mp2" "$mp3" "$pid" "$pid3"; do
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	done
	if is_mounted "$m1" || is_mounted "$m2" || is_mounted "$m3"; then
		echo "arf_race.sh: still mounted, $tmp left"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

skip() {
	echo "arf_race.sh: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "arf_race.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
[ -c /dev/fuse ] || skip "no /dev/fuse here"
{ [ -r /dev/fuse ] && [ -w /dev/fuse ]; } || skip "/dev/fuse is not readable and writable by $(id -un)"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed (the concurrent parts are python)"

# mount_at EP DIR LOG: arf mount -f in the background; $mp is its process, status 0 once
# mounted
mount_at() {
	mkdir -p "$2"
	"$BUILD/arf" mount "$1" "$2" -f 2>"$3" &
	mp=$!
	for _ in $(seq 100); do
		is_mounted "$2" && return 0
		kill -0 "$mp" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

img=$tmp/fs.img
run "$BUILD/arf" mkfs "$img" --size 64M; check_rc mkfs 0 $?
start_arfd "$tmp/arfd.log" --arf "$img"
if [ -z "$ep" ]; then
	bad "arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
if ! mount_at "$ep" "$m1" "$tmp/m1.log"; then
	mp1=$mp
	if grep -qiE "fuse: device not found|permission denied|operation not permitted|fusermount3: mount failed" "$tmp/m1.log"; then
		cat "$tmp/m1.log"
		skip "FUSE is present but this environment may not mount it"
	fi
	bad "first mount:"; sed 's/^/  | /' "$tmp/m1.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
mp1=$mp
mount_at "$ep" "$m2" "$tmp/m2.log"; check_rc "second mount" 0 $?
mp2=$mp
if ! is_mounted "$m2"; then
	echo "$pass passed, $fail failed"
	exit 1
fi

# ---- O_APPEND from two clients
# A descriptor on each kept open; the second pair of lines comes after the attributes
# each kernel cached went stale (the default attr_timeout is 1 s): each kernel would put
# its line at the size it last knew, over the other's.
mkdir "$m1/app"
timeout "$T" sh -c "exec 3>>'$m1/app/log' 4>>'$m2/app/log'
printf 'A1\n' >&3; printf 'B1\n' >&4; sleep 1.5; printf 'A2\n' >&3; printf 'B2\n' >&4"
check_rc "appends through two mounts" 0 $?
same "O_APPEND from two clients, a second apart" "$(tr '\n' ' ' <"$m1/app/log")" "A1 B1 A2 B2 "
same "the other client reads the same" "$(tr '\n' ' ' <"$m2/app/log")" "A1 B1 A2 B2 "

# 2,000 appends of 8 bytes through each mount, in turn from one process (the issue's
# case: each kernel's cached size is its own appends only), then from one process on each
# mount at once
cat >"$tmp/appender.py" <<'PY'
import os, sys
# appender.py N FILE TAG [FILE TAG]...: N rounds, each one append of an 8-byte record
# ("TAG", 6 digits, newline) through each FILE's descriptor in turn
n = int(sys.argv[1])
ds = [(os.open(f, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), t.encode())
      for f, t in zip(sys.argv[2::2], sys.argv[3::2])]
for i in range(n):
    for fd, tag in ds:
        rec = tag + b"%06d\n" % i
        if os.write(fd, rec) != len(rec):
            print("short write", i)
            sys.exit(1)
for fd, tag in ds:
    os.close(fd)
PY
cat >"$tmp/records.py" <<'PY'
import sys
# records.py FILE TAGS...: "ok" when FILE is whole records only, each tag's numbered 0, 1,
# ... in order; else what is wrong
d = open(sys.argv[1], "rb").read()
nxt = {t.encode(): 0 for t in sys.argv[2:]}
if len(d) % 8:
    print("size %d is not whole records" % len(d)); sys.exit(1)
for o in range(0, len(d), 8):
    r = d[o:o + 8]
    t = r[:1]
    if t not in nxt or r != t + b"%06d\n" % nxt[t]:
        print("record at %d: %r (expected one of %s)" % (o, r,
              ", ".join("%r" % (k + b"%06d" % v) for k, v in nxt.items()))); sys.exit(1)
    nxt[t] += 1
print("ok", " ".join("%s=%d" % (k.decode(), v) for k, v in sorted(nxt.items())))
PY
run python3 "$tmp/appender.py" 2000 "$m1/app/turns" a "$m2/app/turns" b
check_rc "2,000 appends through each mount in turn" 0 $?
same "appends in turn: size" "$(stat -c %s "$m1/app/turns")" 32000
same "appends in turn: records" "$(python3 "$tmp/records.py" "$m2/app/turns" a b)" "ok a=2000 b=2000"
timeout "$T" python3 "$tmp/appender.py" 2000 "$m1/app/rec" a >"$tmp/a.out" 2>&1 &
ap1=$!
timeout "$T" python3 "$tmp/appender.py" 2000 "$m2/app/rec" b >"$tmp/b.out" 2>&1
rc2=$?
wait "$ap1"; rc1=$?
same "2,000 appends from each mount at once: exit statuses" "$rc1 $rc2" "0 0"
same "appends at once: size" "$(stat -c %s "$m1/app/rec")" 32000
same "appends at once: records" "$(python3 "$tmp/records.py" "$m2/app/rec" a b)" "ok a=2000 b=2000"

# on one client, a descriptor that read the last block sees another one's appends
timeout "$T" python3 - "$m1/app/tail" "$m2/app/tail" >"$tmp/out" 2>&1 <<'PY'
import os, sys
r = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(r, b"head\n")
seen = [os.pread(r, 100, 0)]
w = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
o = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND)
os.write(w, b"one\n")
seen.append(os.pread(r, 100, 0))
os.write(o, b"other\n")
os.write(w, b"two\n")
seen.append(os.pread(r, 100, 0))
print(b"|".join(seen).decode().replace("\n", " "))
PY
same "a reader on the appending client" "$(cat "$tmp/out")" \
	"head |head one |head one other two "
run rm -r "$m1/app"; check_rc "rm the append files" 0 $?

# ---- open(O_CREAT) of the same names from both clients at once
# Each kernel looked the name up, found nothing and asked for a create; the client that
# lost the race must open the other's file (EEXIST only with O_EXCL).  With O_EXCL each
# name is made by exactly one of the two.
cat >"$tmp/creat.py" <<'PY'
import errno, os, sys, time
# creat.py DIR N EXCL START: close(open(DIR/xI, O_WRONLY|O_CREAT[|O_EXCL])) for I < N,
# from START (a time both processes wait for); prints the count made and the failures
d, n, excl, start = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", float(sys.argv[4])
flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else 0)
while time.time() < start:
    time.sleep(0.001)
made, fails = 0, {}
for i in range(n):
    try:
        os.close(os.open("%s/x%d" % (d, i), flags, 0o644))
        made += 1
    except OSError as e:
        k = errno.errorcode.get(e.errno, str(e.errno))
        fails[k] = fails.get(k, 0) + 1
print(made, " ".join("%s=%d" % kv for kv in sorted(fails.items())) or "none")
PY
# creat_both NAME EXCL: the two processes at once on directory NAME; their outputs in
# $tmp/c1.out and $tmp/c2.out
creat_both() {
	mkdir "$m1/$1"
	start=$(python3 -c 'import time; print(time.time() + 0.5)')
	timeout "$T" python3 "$tmp/creat.py" "$m1/$1" 500 "$2" "$start" >"$tmp/c1.out" 2>&1 &
	cp1=$!
	timeout "$T" python3 "$tmp/creat.py" "$m2/$1" 500 "$2" "$start" >"$tmp/c2.out" 2>&1
	wait "$cp1"
}
creat_both creat 0
same "O_CREAT of 500 names from both mounts: first" "$(cat "$tmp/c1.out")" "500 none"
same "O_CREAT of 500 names from both mounts: second" "$(cat "$tmp/c2.out")" "500 none"
same "O_CREAT: the names" "$(ls "$m1/creat" | wc -l)" 500
creat_both excl 1
made=$(( $(cut -d' ' -f1 "$tmp/c1.out") + $(cut -d' ' -f1 "$tmp/c2.out") ))
same "O_CREAT|O_EXCL of 500 names from both: each made once" "$made" 500
same "O_CREAT|O_EXCL: the others EEXIST" \
	"$(cut -d' ' -f2 "$tmp/c1.out" "$tmp/c2.out" | sed 's/=.*//' | sort -u | tr '\n' ' ')" \
	"$(if [ "$(cut -d' ' -f1 "$tmp/c1.out")" = 500 ] || [ "$(cut -d' ' -f1 "$tmp/c2.out")" = 500 ]; then echo "EEXIST none "; else echo "EEXIST "; fi)"
run rm -r "$m1/creat" "$m1/excl"; check_rc "rm the created names" 0 $?

# ---- the end: both mounts go, arfd stops, the image is clean
for d in "$m1" "$m2"; do
	run "$BUILD/arf" umount "$d"; check_rc "umount $(basename "$d")" 0 $?
done
wait "$mp1"; check_rc "first mount's exit" 0 $?
wait "$mp2"; check_rc "second mount's exit" 0 $?
mp1= mp2=
kill -TERM "$pid"
wait "$pid"; check_rc "arfd SIGTERM" 0 $?
pid=
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean, 3 inodes"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
