#!/bin/sh
# arf_race.sh: two mounts of one arfd (two clients, the default options: attributes and
# entries cached for a second) doing things to the same files at the same moment, and a
# third mount that caches nothing to look at the outcome.
# O_APPEND from both (the issue's two-line case after the cache went stale, 2,000 8-byte
# appends through each in turn and from a process on each at once: every record there,
# once, in each writer's order; a reader on the appending client sees the appends);
# open(O_CREAT) of the same 500 names from both (no EEXIST without O_EXCL; with O_EXCL each
# name made exactly once); then pairs of operations run at once, ARF_RACE_ROUNDS times
# each (default 40, at most 20 s a pair): link of one file to two names, two links to one
# name, two renames over one name, one source renamed by both, rename against unlink,
# mkdir -p of one path, create against rmdir, a directory moved while the other creates
# in it, x into y against y into x, link against unlink of its source, rename into a
# directory against its rmdir, lookups while the other unlinks, unlink of one name by
# both, truncate while the other
# appends, a read of an open file the other client removes, XATTR_CREATE of one name from
# both, a setxattr against a removexattr that moves its entry.  No operation may fail that
# POSIX lets succeed (except that last read, docs/arf.md), no acknowledged data may be
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

# mount_at EP DIR LOG [OPTION...]: arf mount -f in the background; $mp is its process,
# status 0 once mounted
mount_at() {
	_ep=$1 _dir=$2 _log=$3
	shift 3
	mkdir -p "$_dir"
	"$BUILD/arf" mount "$_ep" "$_dir" -f "$@" 2>"$_log" &
	mp=$!
	for _ in $(seq 100); do
		is_mounted "$_dir" && return 0
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

# ---- pairs of namespace operations, one from each client at the same moment
# pairs.py runs each pair ROUNDS times (bounded in time too): the setup through the first
# mount, then one thread per mount does its operation (a barrier lines them up: python
# lets go of the lock during the system calls), then the outcome is checked through a
# third mount that caches nothing.  Each pair prints "NAME ok ROUNDS" or what went wrong.
mount_at "$ep" "$m3" "$tmp/m3.log" -o attr_timeout=0,entry_timeout=0
check_rc "third mount (caching nothing)" 0 $?
mp3=$mp
cat >"$tmp/pairs.py" <<'PY'
import errno, os, shutil, sys, threading, time
m1, m2, m3, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
only = sys.argv[5:]
BUDGET = 20.0                   # seconds a pair may take, whatever ROUNDS says

def en(e):
    return errno.errorcode.get(e.errno, str(e.errno))

def both(fa, fb):
    """fa and fb at once (fa in this thread): each one's result, "ok" or the errno name."""
    bar = threading.Barrier(2, timeout=30)
    res = [None, None]
    def go(k, f):
        bar.wait()
        try:
            r = f()
            res[k] = "ok" if r is None else r
        except OSError as e:
            res[k] = en(e)
        except Fail as e:
            res[k] = str(e)
    t = threading.Thread(target=go, args=(1, fb))
    t.start()
    go(0, fa)
    t.join(60)
    if t.is_alive():
        raise SystemExit("a thread did not come back in 60 s")
    return res

def put(path, data):
    with open(path, "wb") as f:
        f.write(data)

def get(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return en(e)

def exists(path):
    try:
        os.lstat(path)
        return True
    except FileNotFoundError:
        return False

def nlink(path):
    return os.lstat(path).st_nlink

class Fail(Exception):
    pass

def want(cond, what):
    if not cond:
        raise Fail(what)

# each pair: (name, fn(i, base)) where base is the round's directory name under the mounts

def link_two_names(i, d):
    put(f"{m1}/{d}/s", b"s")
    r = both(lambda: os.link(f"{m1}/{d}/s", f"{m1}/{d}/l1"),
             lambda: os.link(f"{m2}/{d}/s", f"{m2}/{d}/l2"))
    want(r == ["ok", "ok"], f"link of one file to two names: {r}")
    want(nlink(f"{m3}/{d}/s") == 3, f"nlink {nlink(f'{m3}/{d}/s')}, want 3")

def link_one_name(i, d):
    put(f"{m1}/{d}/s1", b"1")
    put(f"{m1}/{d}/s2", b"2")
    r = both(lambda: os.link(f"{m1}/{d}/s1", f"{m1}/{d}/t"),
             lambda: os.link(f"{m2}/{d}/s2", f"{m2}/{d}/t"))
    want(sorted(r) == ["EEXIST", "ok"], f"two links to one name: {r}")
    want(get(f"{m3}/{d}/t") == (b"1" if r[0] == "ok" else b"2"), "the name is the winner's")

def rename_over(i, d):
    put(f"{m1}/{d}/a", b"a")
    put(f"{m1}/{d}/b", b"b")
    put(f"{m1}/{d}/t", b"t")
    r = both(lambda: os.rename(f"{m1}/{d}/a", f"{m1}/{d}/t"),
             lambda: os.rename(f"{m2}/{d}/b", f"{m2}/{d}/t"))
    want(r == ["ok", "ok"], f"two renames over one name: {r}")
    want(get(f"{m3}/{d}/t") in (b"a", b"b"), f"t holds {get(f'{m3}/{d}/t')!r}")
    want(not exists(f"{m3}/{d}/a") and not exists(f"{m3}/{d}/b"), "a source left")

def rename_one_source(i, d):
    put(f"{m1}/{d}/s", b"s")
    r = both(lambda: os.rename(f"{m1}/{d}/s", f"{m1}/{d}/t1"),
             lambda: os.rename(f"{m2}/{d}/s", f"{m2}/{d}/t2"))
    want(sorted(r) == ["ENOENT", "ok"], f"one source renamed by both: {r}")
    want(exists(f"{m3}/{d}/t1") == (r[0] == "ok") and exists(f"{m3}/{d}/t2") == (r[1] == "ok")
         and not exists(f"{m3}/{d}/s"), "the names after")

def rename_vs_unlink(i, d):
    put(f"{m1}/{d}/x", b"x")
    r = both(lambda: os.rename(f"{m1}/{d}/x", f"{m1}/{d}/y"),
             lambda: os.unlink(f"{m2}/{d}/x"))
    want(sorted(r) == ["ENOENT", "ok"], f"rename against unlink: {r}")
    want(exists(f"{m3}/{d}/y") == (r[0] == "ok") and not exists(f"{m3}/{d}/x"), "the names after")

def mkdir_p(i, d):
    p = f"{d}/p/q/r/s"
    r = both(lambda: os.makedirs(f"{m1}/{p}", exist_ok=True),
             lambda: os.makedirs(f"{m2}/{p}", exist_ok=True))
    want(r == ["ok", "ok"], f"mkdir -p of one path from both: {r}")
    want(os.path.isdir(f"{m3}/{p}"), "the path is not there")

def create_vs_rmdir(i, d):
    os.mkdir(f"{m1}/{d}/sub")
    r = both(lambda: os.close(os.open(f"{m1}/{d}/sub/f", os.O_WRONLY | os.O_CREAT, 0o644)),
             lambda: os.rmdir(f"{m2}/{d}/sub"))
    want(r in (["ok", "ENOTEMPTY"], ["ENOENT", "ok"]), f"create against rmdir: {r}")
    want(exists(f"{m3}/{d}/sub") == (r[0] == "ok"), "the directory after")

def rename_dir_vs_create(i, d):
    os.mkdir(f"{m1}/{d}/dir")
    os.mkdir(f"{m1}/{d}/to")
    fd = os.open(f"{m2}/{d}/dir", os.O_RDONLY)   # the second client holds the directory
    try:
        r = both(lambda: os.rename(f"{m1}/{d}/dir", f"{m1}/{d}/to/dir"),
                 lambda: os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)))
    finally:
        os.close(fd)
    want(r == ["ok", "ok"], f"a directory moved while the other creates in it: {r}")
    want(exists(f"{m3}/{d}/to/dir/f"), "the file did not move with its directory")

def rename_cross(i, d):
    """x into y and y into x at once: one of them must fail (a loop cut off from the root
    otherwise; fsck at the end would find it)"""
    os.mkdir(f"{m1}/{d}/x")
    os.mkdir(f"{m1}/{d}/y")
    r = both(lambda: os.rename(f"{m1}/{d}/x", f"{m1}/{d}/y/x"),
             lambda: os.rename(f"{m2}/{d}/y", f"{m2}/{d}/x/y"))
    want(r.count("ok") == 1 and (set(r) - {"ok"}) <= {"EINVAL", "ENOENT"},
         f"x into y against y into x: {r}")
    want(os.path.isdir(f"{m3}/{d}/y/x") if r[0] == "ok" else os.path.isdir(f"{m3}/{d}/x/y"),
         "the moved directory")

def link_vs_unlink(i, d):
    put(f"{m1}/{d}/s", b"s")
    r = both(lambda: os.link(f"{m1}/{d}/s", f"{m1}/{d}/l"), lambda: os.unlink(f"{m2}/{d}/s"))
    want(r in (["ok", "ok"], ["ENOENT", "ok"]), f"link against unlink of its source: {r}")
    if r[0] == "ok":
        want(get(f"{m3}/{d}/l") == b"s" and nlink(f"{m3}/{d}/l") == 1, "the link after")
    else:
        want(not exists(f"{m3}/{d}/l"), "a link to a removed file")

def rename_into_vs_rmdir(i, d):
    put(f"{m1}/{d}/f", b"f")
    os.mkdir(f"{m1}/{d}/dir")
    r = both(lambda: os.rename(f"{m1}/{d}/f", f"{m1}/{d}/dir/f"), lambda: os.rmdir(f"{m2}/{d}/dir"))
    want(r in (["ok", "ENOTEMPTY"], ["ENOENT", "ok"]), f"rename into a directory against its rmdir: {r}")
    want(exists(f"{m3}/{d}/dir/f") == (r[0] == "ok") and exists(f"{m3}/{d}/f") == (r[0] != "ok"),
         "the file after")

def lookup_vs_unlink(i, d):
    """the third client (it caches no entry: each lookup reaches arfd) looks names up
    while the first removes them: each lookup finds the file or not (ENOENT), never an
    error (a lookup takes no lock: it once read a name's slot again after an unlink made
    it a tombstone, and answered EIO)"""
    names = [f"n{k}" for k in range(20)]
    for n in names:
        put(f"{m1}/{d}/{n}", b"x")
    done = threading.Event()
    def unlinks():
        try:
            for n in names:
                os.unlink(f"{m1}/{d}/{n}")
        finally:
            done.set()
    def lookups():
        seen = set()
        for k in range(4000):
            if done.is_set() and k >= len(names):
                break
            try:
                os.lstat(f"{m3}/{d}/{names[k % len(names)]}")
                seen.add("ok")
            except OSError as e:
                seen.add(en(e))
        want(seen <= {"ok", "ENOENT"}, f"lookups: {sorted(seen)}")
    r = both(unlinks, lookups)
    want(r == ["ok", "ok"], f"lookups against unlinks: {r}")

def both_unlink(i, d):
    put(f"{m1}/{d}/u", b"u")
    r = both(lambda: os.unlink(f"{m1}/{d}/u"), lambda: os.unlink(f"{m2}/{d}/u"))
    want(sorted(r) == ["ENOENT", "ok"], f"unlink of one name by both: {r}")

def truncate_vs_append(i, d):
    """the first client appends 8-byte records, ten at a time; after each ten the second
    cuts the file to 0 while the first goes on with the next record at once (three
    times), then the first appends 30 more: no error, and the file is exactly the last 30
    records (an append at the size the first client's kernel last knew would leave zeros
    before them, one that landed after the cut would leave more records)"""
    f = f"{d}/log"
    put(f"{m1}/{f}", b"")
    ten, cut = threading.Semaphore(0), threading.Semaphore(0)
    def appends():
        fd = os.open(f"{m1}/{f}", os.O_WRONLY | os.O_APPEND)
        try:
            for k in range(60):
                if k and k % 10 == 0 and k <= 30:
                    ten.release()
                    if not cut.acquire(timeout=10):
                        raise Fail("no truncate came")
                os.write(fd, b"r%06d\n" % k)
        finally:
            os.close(fd)
    def truncates():
        for k in range(3):
            if not ten.acquire(timeout=10):
                raise Fail("no appends came")
            os.truncate(f"{m2}/{f}", 0)
            cut.release()
    r = both(appends, truncates)
    want(r == ["ok", "ok"], f"appends against truncates: {r}")
    data = get(f"{m3}/{f}")
    want(data == b"".join(b"r%06d\n" % k for k in range(30, 60)),
         f"{len(data)} bytes after the last truncate, from {data[:16]!r}")

def read_removed(i, d):
    """the first client reads a file it has open while the second removes it and makes new
    files (its inode number may come back): the bytes are the file's, or an error (a file
    another client has open is removed at once: docs/arf.md), never another file's"""
    body = b"old %d " % i * 500
    put(f"{m1}/{d}/o", body)
    fd = os.open(f"{m1}/{d}/o", os.O_RDONLY)
    try:
        def churn():
            os.unlink(f"{m2}/{d}/o")
            for k in range(3):
                put(f"{m2}/{d}/n{k}", b"NEW" * 1000)
        r = both(lambda: os.pread(fd, len(body) + 10, 0), churn)
        if isinstance(r[0], bytes):
            want(r[0] == body, f"read {r[0][:12]!r}... of {len(r[0])} bytes")
        else:
            want(r[0] in ("ESTALE", "ENOENT"), f"read: {r[0]}")
        want(r[1] == "ok", f"the removal: {r[1]}")
        # after the removal, a read finds the file gone or its own bytes
        try:
            again = os.pread(fd, len(body) + 10, 0)
            want(again == body, f"a read after the removal: {again[:12]!r}")
        except OSError as e:
            want(e.errno in (errno.ESTALE, errno.ENOENT), f"a read after the removal: {en(e)}")
            global stale_reads
            stale_reads += 1
    finally:
        os.close(fd)

def xattr_create(i, d):
    put(f"{m1}/{d}/f", b"f")
    r = both(lambda: os.setxattr(f"{m1}/{d}/f", "user.x", b"one", os.XATTR_CREATE),
             lambda: os.setxattr(f"{m2}/{d}/f", "user.x", b"two", os.XATTR_CREATE))
    want(sorted(r) == ["EEXIST", "ok"], f"XATTR_CREATE of one name from both: {r}")
    got = os.getxattr(f"{m3}/{d}/f", "user.x")
    want(got == (b"one" if r[0] == "ok" else b"two"), f"the value is the winner's: {got!r}")

def xattr_set_vs_remove(i, d):
    put(f"{m1}/{d}/f", b"f")
    for n in ("user.a", "user.b"):
        os.setxattr(f"{m1}/{d}/f", n, n.encode() * 40)
    r = both(lambda: os.setxattr(f"{m1}/{d}/f", "user.c", b"c" * 100),
             lambda: os.removexattr(f"{m2}/{d}/f", "user.a"))
    want(r == ["ok", "ok"], f"a set against a removal moving it: {r}")
    names = sorted(os.listxattr(f"{m3}/{d}/f"))
    want(names == ["user.b", "user.c"], f"names after: {names}")
    want(os.getxattr(f"{m3}/{d}/f", "user.b") == b"user.b" * 40 and
         os.getxattr(f"{m3}/{d}/f", "user.c") == b"c" * 100, "values after")

stale_reads = 0
pairs = [("link-two-names", link_two_names), ("link-one-name", link_one_name),
         ("rename-over", rename_over), ("rename-one-source", rename_one_source),
         ("rename-vs-unlink", rename_vs_unlink), ("mkdir-p", mkdir_p),
         ("create-vs-rmdir", create_vs_rmdir), ("rename-dir-vs-create", rename_dir_vs_create),
         ("rename-cross", rename_cross), ("link-vs-unlink", link_vs_unlink),
         ("rename-into-vs-rmdir", rename_into_vs_rmdir), ("lookup-vs-unlink", lookup_vs_unlink),
         ("both-unlink", both_unlink), ("truncate-vs-append", truncate_vs_append),
         ("read-removed", read_removed), ("xattr-create", xattr_create),
         ("xattr-set-vs-remove", xattr_set_vs_remove)]
failed = 0
for name, fn in pairs:
    if only and name not in only:
        continue
    t0 = time.time()
    n = 0
    err = None
    for i in range(rounds):
        if time.time() - t0 > BUDGET:
            break
        d = f"race/{name}.{i}"
        try:
            os.makedirs(f"{m1}/{d}")
            fn(i, d)
            shutil.rmtree(f"{m3}/{d}")    # the image holds 4096 inodes
        except Fail as e:
            err = f"round {i}: {e}"
        except OSError as e:
            err = f"round {i}: {e}"
        n += 1
        if err:
            break
    if err:
        failed += 1
        print(f"{name} FAIL {err}")
    else:
        print(f"{name} ok" + (f" (reads after a removal: {stale_reads} ESTALE/ENOENT)"
                              if name == "read-removed" else ""))
sys.exit(1 if failed else 0)
PY
timeout 600 python3 "$tmp/pairs.py" "$m1" "$m2" "$m3" "$ROUNDS" >"$tmp/pairs.out" 2>&1
echo "pairs.py exit $?" >>"$tmp/pairs.out"
fail_before=$fail
while read -r name verdict rest; do
	case $verdict in
	ok) ok ;;
	exit) if [ "$rest" = 0 ] || [ "$rest" = 1 ]; then ok; else bad "pairs.py: exit $rest"; fi ;;
	*) bad "race pair $name: $verdict $rest" ;;
	esac
done <"$tmp/pairs.out"
if [ "$fail" -ne "$fail_before" ]; then
	sed 's/^/  | /' "$tmp/pairs.out"
	for l in m1 m2 m3 arfd; do
		[ -s "$tmp/$l.log" ] && { echo "  $l.log:"; tail -n 5 "$tmp/$l.log" | sed 's/^/  | /'; }
	done
fi
sed -n 's/^read-removed ok (\(.*\))/  (race pairs: \1)/p' "$tmp/pairs.out"
run rm -r "$m3/race"; check_rc "rm the race directories" 0 $?

# ---- the end: both mounts go, arfd stops, the image is clean
for d in "$m1" "$m2" "$m3"; do
	run "$BUILD/arf" umount "$d"; check_rc "umount $(basename "$d")" 0 $?
done
wait "$mp1"; check_rc "first mount's exit" 0 $?
wait "$mp2"; check_rc "second mount's exit" 0 $?
wait "$mp3"; check_rc "third mount's exit" 0 $?
mp1= mp2= mp3=
kill -TERM "$pid"
wait "$pid"; check_rc "arfd SIGTERM" 0 $?
pid=
run "$BUILD/arf" fsck "$img"; check_rc "fsck at the end" 0 $?
contains "fsck at the end" "$tmp/out" "clean, 3 inodes"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
