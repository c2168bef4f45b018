#!/bin/sh
# service.sh: arfd as systemd runs it and arf mounted as /etc/fstab does, without systemd
# itself.  server/arfd.service.in must pass systemd-analyze verify, and so must the units
# systemd-fstab-generator makes of an fstab line (automount, remote-fs.target); arfd is
# started with
# exactly the unit's ExecStart (its config file swapped for one in the temporary directory),
# NOTIFY_SOCKET on a datagram socket read here and stderr made the "journal" through
# $JOURNAL_STREAM: READY=1 must come once the endpoint answers, lines carry <N> priorities,
# SIGHUP (ExecReload) gives RELOADING=1 then READY=1 and applies a new log level (a bad file
# changes nothing), SIGTERM gives STOPPING=1 and exit 0.  The image is mounted through an
# fstab line (mount -T FILE, with arf/mount.fuse.arf.in put where mount(8) looks, /sbin, in a
# mount namespace of its own), by mount -t fuse.arf there, and by calling the helper as
# mount(8) does, as root and as an unprivileged user; on each mount a file is read (on most
# also written) and the mount undone.
#
#   BUILD=build sh tests/integration/service.sh        prints "N passed, N failed" last
# Every call is bounded by `timeout`; whatever was started is stopped on exit.

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-20}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
umask 022
tmp=$(mktemp -d "${TMPDIR:-/tmp}/service.sh.XXXXXX") || exit 1
chmod 755 "$tmp"
npid=
mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
	for d in "$tmp/mnt2" "$tmp/mnt3"; do
		mounted "$d" && { fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null; }
	done
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	if mounted "$tmp/mnt2" || mounted "$tmp/mnt3"; then echo "service.sh: still mounted, $tmp left"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$here/../lib.sh"

for p in arf arfd; do
	[ -x "$BUILD/$p" ] || { echo "service.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- the unit file ----
sed "s|@bindir@|$BUILD|g" "$src/server/arfd.service.in" >"$tmp/arfd.service"
if command -v systemd-analyze >/dev/null 2>&1; then
	# --man=no: the page is checked by make (man/), not installed here
	run systemd-analyze verify --man=no "$tmp/arfd.service"; check_rc "systemd-analyze verify" 0 $?
	# the hardening, as systemd scores it (0 best, 10 worst; the unit is 1.8 now): a lost
	# ProtectSystem=, NoNewPrivileges= and CapabilityBoundingSet= together score 4.2
	run systemd-analyze security --offline=true --threshold=25 "$tmp/arfd.service"
	check_rc "systemd-analyze security: exposure at most 2.5" 0 $?
else
	echo "service.sh: systemd-analyze not installed: the unit is not verified"
fi
# the fstab line as systemd reads it at boot: a remote mount (_netdev) mounted at first
# access (x-systemd.automount), type fuse.arf, so mount(8) runs mount.fuse.arf
gen=/lib/systemd/system-generators/systemd-fstab-generator
if [ -x "$gen" ] && command -v systemd-analyze >/dev/null 2>&1; then
	mkdir "$tmp/gen"
	echo "tcp:127.0.0.1:7070 /mnt/arf fuse.arf _netdev,x-systemd.automount,allow_other 0 0" >"$tmp/gen.fstab"
	run env SYSTEMD_FSTAB="$tmp/gen.fstab" SYSTEMD_PROC_CMDLINE= "$gen" "$tmp/gen" "$tmp/gen" "$tmp/gen"
	check_rc "systemd-fstab-generator" 0 $?
	contains "generated mount unit" "$tmp/gen/mnt-arf.mount" "Type=fuse.arf"
	if [ -e "$tmp/gen/remote-fs.target.requires/mnt-arf.automount" ]; then ok; else
		bad "no automount under remote-fs.target:"; ls -R "$tmp/gen" | sed 's/^/  | /'; fi
	run systemd-analyze verify --man=no "$tmp/gen/mnt-arf.mount" "$tmp/gen/mnt-arf.automount"
	check_rc "systemd-analyze verify of the generated units" 0 $?
else
	echo "service.sh: no systemd-fstab-generator: the fstab line is not read as systemd reads it"
fi

execstart=$(sed -n 's/^ExecStart=//p' "$tmp/arfd.service")
case $execstart in
*" --config /etc/arfd/arfd.conf") ok ;;
*) bad "ExecStart '$execstart' does not end in --config /etc/arfd/arfd.conf" ;;
esac
grep -q '^Type=notify$' "$tmp/arfd.service" && ok || bad "the unit is not Type=notify"
# ExecReload: arfd --check on the same file, then SIGHUP
check=$(sed -n 's/^ExecReload=\(.*--check.*\)/\1/p' "$tmp/arfd.service")
same "ExecReload checks with ExecStart's flags" "$check" "$(echo "$execstart" | sed 's|arfd |arfd --check |')"
same "ExecReload signals" "$(sed -n 's/^ExecReload=//p' "$tmp/arfd.service" | tail -n 1)" '/bin/kill -HUP $MAINPID'

# ---- arfd as the unit starts it ----
run "$BUILD/arf" mkfs "$tmp/arf.img" --size 16M; check_rc mkfs 0 $?
printf 's3cret\n' >"$tmp/secret"
cat >"$tmp/arfd.conf" <<EOC
# as server/arfd.conf, on a port of its own choosing
listen tcp:127.0.0.1:0
arf $tmp/arf.img
secret s3cret
log info
EOC
# the notification socket: one line per datagram, newlines inside made spaces
cat >"$tmp/notify.py" <<'EOP'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.5)
end = time.time() + float(sys.argv[3])
with open(sys.argv[2], "a") as f:
    while time.time() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        f.write(m.decode().replace("\n", " ") + "\n")
        f.flush()
EOP
: >"$tmp/notify.log"
python3 "$tmp/notify.py" "$tmp/notify" "$tmp/notify.log" 900 &   # stopped by cleanup
npid=$!
for _ in $(seq $((T * 10))); do [ -S "$tmp/notify" ] && break; sleep 0.1; done
: >"$tmp/arfd.log"
js=$(stat -c '%d:%i' "$tmp/arfd.log")
# shellcheck disable=SC2086  # ExecStart is split into words as systemd does (no quotes in it)
NOTIFY_SOCKET=$tmp/notify JOURNAL_STREAM=$js \
	${execstart% /etc/arfd/arfd.conf} "$tmp/arfd.conf" 2>>"$tmp/arfd.log" &
pid=$!

# wait_notify TEXT [AFTER]: a datagram holding TEXT arrives (after line AFTER of the log)
# within T seconds
wait_notify() {
	for _ in $(seq $((T * 10))); do
		tail -n +"$((${2:-0} + 1))" "$tmp/notify.log" | grep -q -e "$1" && return 0
		sleep 0.1
	done
	return 1
}
if wait_notify READY=1; then ok; else bad "no READY=1 from arfd:"; sed 's/^/  | /' "$tmp/arfd.log"; fi
ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
# READY=1 came after the endpoint was opened: a client is served at once
run env ARC_SECRET=s3cret "$BUILD/arc" regions "$ep"; check_rc "arc regions right after READY=1" 0 $?
contains "READY=1 carries a status" "$tmp/notify.log" "STATUS=serving $ep"
# the journal keeps levels: <6> is LOG_INFO, and no time stamp of our own on any line
contains "journal line" "$tmp/arfd.log" "<6>info: listening on tcp:127.0.0.1:0"
other=$(grep -v '^<[0-7]>[a-z]*: ' "$tmp/arfd.log")
same "lines without a priority" "$other" ""

# ---- reload: a bad file changes nothing; a good one sets the log level ----
# systemctl reload: ExecReload's check refuses the bad file (and systemd sends no SIGHUP);
# arfd itself, signalled anyway, keeps what it had
n=$(wc -l <"$tmp/notify.log")
run ${check% /etc/arfd/arfd.conf} "$tmp/arfd.conf"; check_rc "arfd --check of a good file" 0 $?
echo "log loud" >>"$tmp/arfd.conf"
run ${check% /etc/arfd/arfd.conf} "$tmp/arfd.conf"; check_rc "arfd --check of a bad file" 2 $?
contains "arfd --check says why" "$tmp/err" "arfd: $tmp/arfd.conf:6: log 'loud': expected error, warning, info or debug"
kill -HUP "$pid"
wait_notify RELOADING=1 "$n" && ok || bad "no RELOADING=1 after SIGHUP"
wait_notify READY=1 "$((n + 1))" && ok || bad "no READY=1 after a reload"
contains "bad reload" "$tmp/arfd.log" "<3>error: reload: $tmp/arfd.conf:6: log 'loud': expected error, warning, info or debug; settings unchanged"
kill -0 "$pid" 2>/dev/null && ok || bad "arfd died of a bad reload"
sed -i 's/^log .*/log info/' "$tmp/arfd.conf"
n=$(wc -l <"$tmp/notify.log")
kill -HUP "$pid"
wait_notify READY=1 "$((n + 1))" && ok || bad "no READY=1 after a good reload"
contains "good reload" "$tmp/arfd.log" "<6>info: reload: log level info; other settings change on restart"
# ---- the fstab line through mount(8) ----
helper=$tmp/sbin/mount.fuse.arf
mkdir "$tmp/sbin" "$tmp/mnt" "$tmp/mnt2" "$tmp/mnt3"
sed "s|@bindir@|$BUILD|g" "$src/arf/mount.fuse.arf.in" >"$helper"
chmod 755 "$helper"
fuse_ok=1
[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1 || fuse_ok=
if [ -z "$fuse_ok" ]; then
	echo "service.sh: no usable /dev/fuse or fusermount3: the mounts are not tried"
else
	echo "$ep $tmp/mnt fuse.arf _netdev,x-systemd.automount,allow_other,secret_file=$tmp/secret 0 0" >"$tmp/fstab"
	sbin=$(readlink -f /sbin)
	if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1; then
		# mount(8) finds helpers only in /sbin: in a mount namespace of its own, /sbin is a
		# copy with the helper added; the mount lives and dies with that namespace
		for f in "$sbin"/*; do ln -s "$f" "$tmp/sbin/" 2>/dev/null; done
		cat >"$tmp/fstab.sh" <<EOS
set -e
mount --bind "$tmp/sbin" "$sbin"
mount -T "$tmp/fstab" "$tmp/mnt"
awk '\$2 == "$tmp/mnt" { print \$1, \$3, \$4 }' /proc/mounts >"$tmp/fstab.mounts"
echo through-fstab >"$tmp/mnt/hello"
cat "$tmp/mnt/hello" >"$tmp/fstab.read"
umount "$tmp/mnt"
# the same without fstab: mount -t fuse.arf on the command line
mount -t fuse.arf -o allow_other,secret_file="$tmp/secret" "$ep" "$tmp/mnt"
cat "$tmp/mnt/hello" >"$tmp/mount-t.read"
umount "$tmp/mnt"
EOS
		run timeout "$T" unshare -m --propagation private sh "$tmp/fstab.sh"
		check_rc "mount -T fstab, write, read, umount; mount -t fuse.arf, read, umount" 0 $?
		same "read back through the fstab mount" "$(cat "$tmp/fstab.read" 2>/dev/null)" through-fstab
		same "read back through mount -t fuse.arf" "$(cat "$tmp/mount-t.read" 2>/dev/null)" through-fstab
		# fsname arf:ENDPOINT, type fuse.arf, allow_other kept, mount's own options gone
		opts=$(cat "$tmp/fstab.mounts" 2>/dev/null)
		case $opts in
		"arf:$ep fuse.arf "*allow_other*) ok ;;
		*) bad "the fstab mount in /proc/mounts: '$opts'" ;;
		esac
	else
		echo "service.sh: not root or no unshare: mount -T is not tried"
	fi

	# the helper called as mount(8) calls it (SOURCE DIR -o OPTS, no PATH)
	run env -i "$helper" "$ep" "$tmp/mnt2" -o "rw,nosuid,nodev,allow_other,secret_file=$tmp/secret,_netdev,nofail"
	check_rc "mount.fuse.arf as mount(8) runs it" 0 $?
	if mounted "$tmp/mnt2"; then ok; else bad "mount.fuse.arf returned but $tmp/mnt2 is not mounted"; sed 's/^/  | /' "$tmp/err"; fi
	same "the fstab mount's file, read through the helper's" "$(cat "$tmp/mnt2/hello" 2>/dev/null)" \
		"$( [ -s "$tmp/fstab.mounts" ] && echo through-fstab)"
	run sh -c "echo by-helper >'$tmp/mnt2/two' && cat '$tmp/mnt2/two'"; check_rc "write and read" 0 $?
	same "read back through the helper's mount" "$(cat "$tmp/out")" by-helper
	# a directory for the unprivileged user below (the root is root's, mode 755)
	run sh -c "mkdir '$tmp/mnt2/nobody' && chown nobody '$tmp/mnt2/nobody'"; check_rc "mkdir, chown" 0 $?
	run "$BUILD/arf" umount "$tmp/mnt2"; check_rc "arf umount" 0 $?
	if mounted "$tmp/mnt2"; then bad "still mounted after arf umount"; else ok; fi
	run env -i "$helper" -f "$ep" "$tmp/mnt2" -o rw
	if ! mounted "$tmp/mnt2"; then ok; else bad "mount.fuse.arf -f (fake) mounted"; fi
	run env -i "$helper" "$ep" "$tmp/mnt2" -o rw
	check_rc "without the secret" 1 $?
	contains "without the secret" "$tmp/err" "secret"

	# an unprivileged user, through fusermount3 (allow_other would need user_allow_other in
	# /etc/fuse.conf); libmount runs a helper as the user for a fstab line with "user"
	if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
		chown nobody "$tmp/mnt3"
		run runuser -u nobody -- env -i "$helper" "$ep" "$tmp/mnt3" -o "rw,noexec,nosuid,nodev,user,secret_file=$tmp/secret"
		if [ $? -ne 0 ] && grep -qiE "permission denied|not permitted" "$tmp/err"; then
			echo "service.sh: FUSE here does not let nobody mount:"; sed 's/^/  | /' "$tmp/err"
		else
			mounted "$tmp/mnt3" && ok || { bad "nobody's mount is not there"; sed 's/^/  | /' "$tmp/err"; }
			run runuser -u nobody -- sh -c "cat '$tmp/mnt3/two' && echo by-nobody >'$tmp/mnt3/nobody/three' && cat '$tmp/mnt3/nobody/three'"
			check_rc "nobody reads and writes" 0 $?
			same "nobody's file" "$(tr '\n' ' ' <"$tmp/out")" "by-helper by-nobody "
			run runuser -u nobody -- "$BUILD/arf" umount "$tmp/mnt3"; check_rc "nobody unmounts" 0 $?
		fi
	fi
fi

# a warning at level info; after a reload to "log error", none
run "$BUILD/arc" regions "$ep" --secret wrong; check_rc "wrong secret" 2 $?
contains "a warning at level info" "$tmp/arfd.log" "refused: wrong secret"
w=$(grep -c 'refused: wrong secret' "$tmp/arfd.log")
sed -i 's/^log .*/log error/' "$tmp/arfd.conf"
n=$(wc -l <"$tmp/notify.log")
kill -HUP "$pid"
wait_notify READY=1 "$((n + 1))" && ok || bad "no READY=1 after the second reload"
run "$BUILD/arc" regions "$ep" --secret wrong; check_rc "wrong secret" 2 $?
same "warnings logged after the reload to error" "$(grep -c 'refused: wrong secret' "$tmp/arfd.log")" "$w"

# ---- stop ----
n=$(wc -l <"$tmp/notify.log")
kill -TERM "$pid"
wait_notify STOPPING=1 "$n" && ok || bad "no STOPPING=1 after SIGTERM"
rc=0
wait "$pid" || rc=$?
pid=
check_rc "arfd exit status after SIGTERM" 0 "$rc"
run "$BUILD/arf" fsck "$tmp/arf.img"; check_rc "fsck after all that" 0 $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
