#!/bin/sh
# resume.sh: how long a client takes to resume after arfd comes back (docs/net.md,
# "Sessions").  Each trial: arfd is killed (SIGKILL), an `arc run` of a null segment starts
# while it is away (it rides: libarc's session, arc's --outage), arfd starts again on the
# same port 2 s later, and the time from arfd's "endpoint" log line to the client's exit is
# the resume time: the client's back-off wait, a connection, one round trip and the exit.
# Prints each trial, then the median and the largest (p99 of so few trials is the largest).
#
#   sh bench/net/resume.sh [TRIALS] [BUILD]     (default 10, build); results/resume.txt
# Everything started is killed on exit.

N=${1:-10}
BUILD=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/resume.sh.XXXXXX") || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
now_ms() { echo $(($(date +%s%N) / 1000000)); }

printf '.func main\n    push 0\n    ret\n.end\n.export main\n' >"$tmp/null.pna"
"$BUILD/pnasm" "$tmp/null.pna" -o "$tmp/null.pno" || exit 1

# start arfd on PORT (0: any); sets pid, ep, up_ms (when it logged its endpoint)
start() {
	: >"$tmp/arfd.log"
	"$BUILD/arfd" --listen "tcp:127.0.0.1:$1" 2>"$tmp/arfd.log" &
	pid=$!
	ep=
	for _ in $(seq 1000); do
		ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
		[ -n "$ep" ] && break
		sleep 0.005
	done
	up_ms=$(now_ms)
	[ -n "$ep" ] || { echo "resume.sh: arfd did not start"; cat "$tmp/arfd.log"; exit 1; }
}

start 0
port=${ep##*:}
: >"$tmp/ms.txt"
for i in $(seq "$N"); do
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	(timeout 30 "$BUILD/arc" run "$ep" "$tmp/null.pno" >/dev/null 2>"$tmp/err"; echo $? >"$tmp/rc"; now_ms >"$tmp/done") &
	client=$!
	sleep 2
	start "$port"
	wait "$client"
	rc=$(cat "$tmp/rc")
	ms=$(($(cat "$tmp/done") - up_ms))
	echo "trial $i: exit $rc, resumed $ms ms after arfd was back"
	[ "$rc" -eq 0 ] || cat "$tmp/err"
	echo "$ms" >>"$tmp/ms.txt"
done
sort -n "$tmp/ms.txt" >"$tmp/sorted"
med=$(sed -n "$(((N + 1) / 2))p" "$tmp/sorted")
max=$(tail -n 1 "$tmp/sorted")
mkdir -p "$here/results"
{
	echo "# resume.sh, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -sm), $(nproc) cpus, load $(cut -d' ' -f1 /proc/loadavg)"
	echo "# arfd killed, a null 'arc run' started while it is away, arfd back 2 s later; $N trials"
	echo "# ms from arfd's endpoint line to the client's exit (back-off 20 ms doubling to 1 s, jittered)"
	tr '\n' ' ' <"$tmp/ms.txt"
	echo
	echo "median $med ms, largest $max ms"
} | tee "$here/results/resume.txt"
