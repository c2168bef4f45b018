#!/bin/sh
# instr.sh OUT [RUNS [N1 N2]]: the instructions arfd executes per null EXEC, without a secret
# (plain) and with one proved (secret), counted by valgrind's callgrind, so that the cost of
# the identity checks on the normal path is a count, not a time a shared machine blurs.
#
# Each count is one arfd under callgrind serving one client's N null EXECs over tcp:
# loopback, then SIGTERM; arfd's instructions for N2 EXECs minus those for N1, over N2 - N1,
# is the cost of one EXEC (start-up, the connection and its proof, and shutdown cancel
# out).  RUNS pairs per way (default 3), N1/N2 default 500/2500.  The remainder that does not
# cancel (timers, polls that time out: they follow wall time, and valgrind is slow) shows as
# the spread between runs.  Needs valgrind (apt install valgrind).
BUILD=${BUILD:-../../build}
out=$1 runs=${2:-3} n1=${3:-500} n2=${4:-2500}
[ -n "$out" ] && [ "$n2" -gt "$n1" ] || { echo "usage: instr.sh OUT [RUNS [N1 N2]] (N2 > N1)"; exit 2; }
command -v valgrind >/dev/null || { echo "instr.sh: valgrind is not installed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_instr.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
printf '.func main\n    push 0\n    ret\n.end\n.export main\n' >"$tmp/null.pna"
"$BUILD/pnasm" -o "$tmp/null.pno" "$tmp/null.pna" || exit 1
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')

# count WAY N: arfd's instructions (callgrind's total Ir) while it serves N null EXECs
count() {
	way=$1 n=$2
	set -- --listen tcp:127.0.0.1:0 --region mem=1M
	[ "$way" = secret ] && set -- "$@" --secret "$secret"
	rm -f "$tmp/cg.out" "$tmp/arfd.log"
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --dump-line=no \
		"$BUILD/arfd" "$@" 2>"$tmp/arfd.log" &
	pid=$!
	ep=
	for _ in $(seq 600); do     # valgrind starts slowly: up to 60 s
		ep=$(sed -n 's/.*endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log")
		[ -n "$ep" ] && break
		sleep 0.1
	done
	[ -n "$ep" ] || { echo "instr.sh: arfd did not start" >&2; cat "$tmp/arfd.log" >&2; return 1; }
	key=-
	[ "$way" = secret ] && key=$secret
	timeout 600 "$BUILD/bench/tls/bench_tls" --execs "$n" "$ep" "$key" "$tmp/null.pno" || return 1
	kill -TERM "$pid"
	wait "$pid"
	pid=
	sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$tmp/cg.out"
}

{
	echo "# bench/tls instr.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(valgrind --version), N $n1 and $n2, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "run  plain_instr/EXEC  secret_instr/EXEC  secret/plain"
	for i in $(seq "$runs"); do
		p1=$(count plain "$n1") && p2=$(count plain "$n2") &&
		s1=$(count secret "$n1") && s2=$(count secret "$n2") || exit 1
		awk -v i="$i" -v p1="$p1" -v p2="$p2" -v s1="$s1" -v s2="$s2" -v d="$((n2 - n1))" \
			'BEGIN { p = (p2 - p1) / d; s = (s2 - s1) / d;
			         printf "%3d  %16.0f  %17.0f  %11.4fx\n", i, p, s, s / p }'
	done
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
