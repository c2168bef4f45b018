#!/bin/sh
# arfd_restart.sh: clients ride through a restart of arfd (docs/net.md, "Sessions").  arfd on
# a free loopback port with a secret; a loop of `arc run` of a segment with no effect but its
# output that takes about 300 ms (so a kill lands in the middle of a run), while arfd is
# killed with SIGKILL and started again on the same port 2 s later: every run exits 0 with
# its output, the one in flight and those started during the outage included.  The same
# through a graceful restart (SIGTERM), with 8 more clients at once.  Then, with
# nobody listening, `arc --outage 1000` fails within its limit with a message, never hangs,
# and `--outage 0` fails at once.
#
#   BUILD=build sh tests/integration/arfd_restart.sh     prints "N passed, N failed" last
# Every client call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${ARFD_SH_TIMEOUT:-${ARF_SH_TIMEOUT:-30}}
loop=
par=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arfd_restart.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$loop" ] && kill "$loop" 2>/dev/null
	[ -n "$par" ] && kill "$par" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

for p in arfd arc pnasm; do
	[ -x "$BUILD/$p" ] || { echo "arfd_restart.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done

# pauses N: a segment that sleeps N times 10 ms, then outputs "hello"
pauses() {
	echo '.hook pause "l:l"'
	printf '%s\n' '.const msg "hello\n"'
	echo '.func main'
	for _ in $(seq "$1"); do
		printf '    push 10000\n    hcall pause\n    drop\n'
	done
	printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n'
}
pauses 30 >"$tmp/slow.pna"     # about 300 ms: a kill lands mid-run
pauses 150 >"$tmp/long.pna"    # about 1.5 s: keeps a draining arfd busy while others knock
run "$BUILD/pnasm" "$tmp/long.pna" -o "$tmp/long.pno" && run "$BUILD/pnasm" "$tmp/slow.pna" -o "$tmp/slow.pno"
rc=$?
check_rc "assemble" 0 $rc
[ "$rc" -eq 0 ] || { echo "$pass passed, $fail failed"; exit 1; }

start_arfd "$tmp/arfd.log" --secret hush
if [ -z "$ep" ]; then
	echo "arfd_restart.sh: arfd did not start:"
	cat "$tmp/arfd.log"
	echo "$pass passed, 1 failed"
	exit 1
fi
export ARC_SECRET=hush
port=${ep##*:}

# runs of a segment that takes a while, through a kill -9 and a restart of arfd
run_loop 7 "$BUILD/arc" run "$ep" "$tmp/slow.pno"
sleep 1.1
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 2
"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --secret hush 2>"$tmp/arfd2.log" &
pid=$!
wait "$loop"
loop=
check_run_loop "a kill -9 and restart of arfd" hello 1500
if grep -q 'info: endpoint' "$tmp/arfd2.log"; then ok; else bad "arfd did not come back"; cat "$tmp/arfd2.log"; fi

# the same through a graceful restart (SIGTERM, as systemctl restart does): arfd finishes
# the runs it started, answers the others DRAINING (not started), and the clients send them
# again until the new arfd takes them
run_loop 6 "$BUILD/arc" run "$ep" "$tmp/slow.pno"
(
	for _ in 1 2 3 4 5 6 7 8; do
		timeout "$T" "$BUILD/arc" run "$ep" "$tmp/slow.pno" >/dev/null 2>>"$tmp/err.par" ||
			echo fail >>"$tmp/par.txt"
	done
) &
par=$!
sleep 0.8
timeout "$T" "$BUILD/arc" run "$ep" "$tmp/long.pno" >"$tmp/long.out" 2>&1 &
long=$!
sleep 0.3
kill -TERM "$pid"
t0=$(date +%s%N)
wait "$pid"
check_rc "arfd SIGTERM" 0 $?
ms=$((($(date +%s%N) - t0) / 1000000))
# it drained the long run (others were answered DRAINING meanwhile, and came back)
if [ "$ms" -ge 500 ]; then ok; else bad "arfd stopped after $ms ms: no drain to test"; fi
wait "$long"
check_rc "the run arfd drained" 0 $?
sleep 1
"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --secret hush 2>"$tmp/arfd3.log" &
pid=$!
wait "$loop"
loop=
wait "$par"
par=
check_run_loop "a SIGTERM restart of arfd" hello 0
if [ ! -s "$tmp/par.txt" ]; then
	ok
else
	bad "$(wc -l <"$tmp/par.txt") of 8 parallel runs failed through a SIGTERM restart of arfd"
	head -n 10 "$tmp/err.par" | sed 's/^/  | /'
fi

# nobody listening: the outage limit gives a clear error, and no hang
kill -KILL "$pid"
wait "$pid" 2>/dev/null
pid=
t0=$(date +%s%N)
run "$BUILD/arc" run "$ep" "$tmp/slow.pno" --outage 1000
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check_rc "arc with nobody listening, outage 1 s" 2 "$rc"
contains "outage message" "$tmp/err" "unreachable for 1000 ms (the outage limit)"
if [ "$ms" -ge 900 ] && [ "$ms" -lt 6000 ]; then ok; else bad "outage 1 s: gave up after $ms ms"; fi
t0=$(date +%s%N)
run "$BUILD/arc" run "$ep" "$tmp/slow.pno" --outage 0
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
check_rc "arc --outage 0 with nobody listening" 2 "$rc"
if [ "$ms" -lt 900 ]; then ok; else bad "outage 0: gave up after $ms ms"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
