#!/bin/sh
# arfd_restart.sh: clients ride through a restart of arfd (docs/net.md, "Sessions").  arfd on
# a free loopback port with a secret; a loop of `arc run` of a segment with no effect but its
# output that takes about 300 ms (so a kill lands in the middle of a run), while arfd is
# killed with SIGKILL and started again on the same port 2 s later: every run exits 0 with
# its output, the one in flight and those started during the outage included.  Then, with
# nobody listening, `arc --outage 1000` fails within its limit with a message, never hangs,
# and `--outage 0` fails at once.
#
#   BUILD=build sh tests/integration/arfd_restart.sh     prints "N passed, N failed" last
# Every client call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${ARFD_SH_TIMEOUT:-${ARF_SH_TIMEOUT:-30}}
loop=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arfd_restart.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$loop" ] && kill "$loop" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

for p in arfd arc pnasm; do
	[ -x "$BUILD/$p" ] || { echo "arfd_restart.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done

# about 300 ms: 30 pauses of 10 ms, then "hello"
{
	echo '.hook pause "l:l"'
	printf '%s\n' '.const msg "hello\n"'
	echo '.func main'
	for _ in $(seq 30); do
		printf '    push 10000\n    hcall pause\n    drop\n'
	done
	printf '    push @msg\n    push #msg\n    output const\n    push 0\n    ret\n.end\n.export main\n'
} >"$tmp/slow.pna"
run "$BUILD/pnasm" "$tmp/slow.pna" -o "$tmp/slow.pno"
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

# the loop: each run's exit status and output into runs.txt, one line each
(
	end=$(($(date +%s) + 7))
	i=0
	while [ "$(date +%s)" -lt "$end" ]; do
		i=$((i + 1))
		t0=$(date +%s%N)
		out=$(timeout "$T" "$BUILD/arc" run "$ep" "$tmp/slow.pno" 2>"$tmp/err.$i")
		rc=$?
		echo "$i $rc $out" >>"$tmp/runs.txt"
		echo $((($(date +%s%N) - t0) / 1000000)) >>"$tmp/ms.txt"
	done
) &
loop=$!
sleep 1.1
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 2
"$BUILD/arfd" --listen "tcp:127.0.0.1:$port" --secret hush 2>"$tmp/arfd2.log" &
pid=$!
wait "$loop"
loop=
n=$(wc -l <"$tmp/runs.txt")
n_ok=$(grep -c '^[0-9]* 0 hello$' "$tmp/runs.txt")
if [ "$n" -ge 4 ] && [ "$n_ok" -eq "$n" ]; then
	ok
else
	bad "arc run loop through a kill -9 and restart of arfd: $n_ok of $n runs ok"
	grep -v '^[0-9]* 0 hello$' "$tmp/runs.txt" | head -n 10 | sed 's/^/  | /'
	cat "$tmp"/err.* 2>/dev/null | head -n 10 | sed 's/^/  | /'
fi
# a run rode through the outage: it took the 2 s arfd was away, or most of them
longest=$(sort -n "$tmp/ms.txt" | tail -n 1)
if [ "$longest" -ge 1500 ]; then ok; else bad "no run spanned the outage (longest $longest ms)"; fi
if grep -q 'info: endpoint' "$tmp/arfd2.log"; then ok; else bad "arfd did not come back"; cat "$tmp/arfd2.log"; fi

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
