#!/bin/sh
# many_sessions.sh: a thousand clients of one arfd at once (docs/net.md, "Sessions").  One
# process (build/tests/many_sessions) holds 1000 libarc connections, each its own session,
# each running a 10 ms segment over and over for 8 s; arfd is killed with SIGKILL 3 s in and
# started again 1 s later, so all of them reconnect at once (jittered back-off): every
# client finishes without an error (no request lost or timed out), each run adds 1 to its
# client's counter (a file region, which survives the kill) and every counter equals the
# runs its client saw answered, or one more (a run in flight at the kill that the old
# arfd did and the new one did again: exactly once within a server's life, at least once
# across a restart, docs/net.md), and the restarted arfd's peak memory stays small
# (docs/net.md, "Memory": sessions of about 200 bytes plus their slots, replies capped by
# session_cache_max; here under 128 MiB).  The clients wait for a server that is away at
# their first run (wait_first, as `arc` does): starting a thousand takes seconds here, so
# some start during the outage.  arfd runs with --max-conns-per-addr 2000: all clients come
# from 127.0.0.1.  With the default (256), the connections past it are shed: clients that
# fail first (libarc's default, a mount) fail with "peer is down" and arfd's log says why
# (checked with 300 clients); waiting ones get in as others leave.
#
#   BUILD=build sh tests/stress/many_sessions.sh (make check-stress)     prints "N passed, N failed" last
# Every call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${ARF_SH_TIMEOUT:-60}
N=${MANY_SESSIONS_N:-1000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/many_sessions.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

for p in arfd pnasm tests/many_sessions; do
	[ -x "$BUILD/$p" ] || { echo "many_sessions.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
# each client holds a connection, a listening socket, epolls and eventfds (about 5)
ulimit -n $((N * 8 + 256)) 2>/dev/null
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((N * 8 + 256)) ]; then
	echo "many_sessions.sh: skipped: needs $((N * 8 + 256)) file descriptors, ulimit -n is $(ulimit -n)"
	echo "0 passed, 0 failed"
	exit 0
fi

{
	echo '.hook pause "l:l"'
	printf '%s\n' '.const msg "hello\n"' '.func main'
	printf '    push 10000\n    hcall pause\n    drop\n'
	printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n'
} >"$tmp/seg.pna"
run "$BUILD/pnasm" "$tmp/seg.pna" -o "$tmp/seg.pno"; check_rc assemble 0 $?
# the same run counted: main(off) adds 1 to the counter at off, get(off) reads it
cat >"$tmp/count.pna" <<'EOF'
.hook pause "l:l"
.region ctr rw
.const msg "hello\n"
.func main off
    lget off
    push 1
    fadd ctr
    drop
    push 10000
    hcall pause
    drop
    push @msg
    push #msg
    output const
    push 0
    ret
.end
.func get off
    lget off
    ld64 ctr
    ret
.end
.export main
.export get
EOF
run "$BUILD/pnasm" "$tmp/count.pna" -o "$tmp/count.pno"; check_rc "assemble count" 0 $?
truncate -s $((N * 8)) "$tmp/ctr"

hwm_kb() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null; }

start_arfd "$tmp/arfd.log" --max-conns-per-addr 2000 --region "ctr=@$tmp/ctr:rw"
[ -n "$ep" ] || { bad "arfd did not start:"; cat "$tmp/arfd.log"; echo "$pass passed, $fail failed"; exit 1; }
port=${ep##*:}
# Lost requests are what it looks for (issue 17, docs/net.md): a request may wait 60 s, not
# libarc's 30, as a restarted arfd's queue of a thousand takes 10-25 s on 2 idle cores and
# over 30 on a shared machine (traced: those were answered, after their clients gave up)
timeout $((T + 60)) "$BUILD/tests/many_sessions" "$ep" "$tmp/count.pno" "$N" 8 count=1 \
	timeout=60000 >"$tmp/many.out" 2>&1 &
cpid=$!
sleep 3
hwm1=$(hwm_kb "$pid")
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 1
"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --max-conns-per-addr 2000 --region "ctr=@$tmp/ctr:rw" \
	2>"$tmp/arfd2.log" &
pid=$!
wait "$cpid"
rc=$?
hwm2=$(hwm_kb "$pid")
check_rc "$N clients through a kill -9 and restart of arfd" 0 $rc
[ "$rc" -eq 0 ] || sed 's/^/  | /' "$tmp/many.out"
echo "many_sessions.sh: $(cat "$tmp/many.out"); arfd peak RSS ${hwm1:-?} kB before the kill, ${hwm2:-?} kB after the reconnect"
if [ -n "$hwm2" ] && [ "$hwm2" -lt 131072 ]; then ok; else bad "restarted arfd's peak RSS ${hwm2:-?} kB (want < 128 MiB)"; fi
kill -TERM "$pid"
wait "$pid"
pid=

# the default per-address limit: those past it are refused, and the log says so
start_arfd "$tmp/arfd3.log"
timeout "$T" "$BUILD/tests/many_sessions" "$ep" "$tmp/seg.pno" 300 2 fail-first >"$tmp/many3.out" 2>&1
check_rc "300 clients from one address past --max-conns-per-addr 256, fail-first" 1 $?
# (a clear error within the request's limit: "peer is down" as a rule; once, on a machine
# loaded by three other test runs, the first failing client had "no reply ... within 30000
# ms" instead: noted for issue 21's follow-up, docs in the stop-29 note)
if grep -q "peer is down\|no reply from .* within 30000 ms" "$tmp/many3.out"; then ok
else bad "refused clients' error: neither 'peer is down' nor the request's timeout in: $(cat "$tmp/many3.out")"; fi
contains "arfd says why" "$tmp/arfd3.log" "at max_conns_per_addr (256)"
echo "many_sessions.sh: default limit: $(cat "$tmp/many3.out")"

# a client that fails first (a mount's default) whose very first request is running when
# arfd is killed has reached its server: it rides through (before: "peer is down" at once)
{
	echo '.hook pause "l:l"'
	printf '%s\n' '.const msg "hello\n"' '.func main'
	for _ in $(seq 150); do printf '    push 10000\n    hcall pause\n    drop\n'; done
	printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n'
} >"$tmp/long.pna"
run "$BUILD/pnasm" "$tmp/long.pna" -o "$tmp/long.pno"; check_rc "assemble long" 0 $?
kill -TERM "$pid"
wait "$pid"
start_arfd "$tmp/arfd4.log"
port=${ep##*:}
timeout "$T" "$BUILD/tests/many_sessions" "$ep" "$tmp/long.pno" 1 1 fail-first >"$tmp/many4.out" 2>&1 &
cpid=$!
sleep 1.2
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 0.8
"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" 2>"$tmp/arfd5.log" &
pid=$!
wait "$cpid"
check_rc "a fail-first client's first request through a kill -9 of arfd" 0 $?
sed 's/^/  | /' "$tmp/many4.out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
