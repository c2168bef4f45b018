#!/bin/sh
# run.sh OUT RUNS [bench_tls options]: throwaway certificates, three arfds (tcp: without a
# secret, tcp: with one, tls: with the same one), each with a 64 MiB region, and bench_tls
# RUNS times against them; everything written to OUT (emptied first) with the machine's load
# before and after.  The arfds are stopped on exit.
BUILD=${BUILD:-../../build}
out=$1 runs=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_tls.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=ca \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=arfd \
	-keyout "$tmp/s.key" -out "$tmp/s.csr" 2>/dev/null &&
printf 'subjectAltName=IP:127.0.0.1\n' >"$tmp/ext" &&
openssl x509 -req -in "$tmp/s.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
	-days 2 -extfile "$tmp/ext" -out "$tmp/s.pem" 2>/dev/null || { echo "run.sh: openssl failed"; exit 1; }
printf '.func main\n    push 0\n    ret\n.end\n.export main\n' >"$tmp/null.pna"
"$BUILD/pnasm" -o "$tmp/null.pno" "$tmp/null.pna" || exit 1
# one arfd each: without a secret (plain), with a secret on tcp: (secret), with the same
# secret on tls: (tls), so that each one's CPU time is one way's
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --region mem=64M 2>"$tmp/plain.log" &
pids=$!
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --secret "$secret" --region mem=64M 2>"$tmp/secret.log" &
pids="$pids,$!"
"$BUILD/arfd" --listen tls:127.0.0.1:0 --tls-cert "$tmp/s.pem" --tls-key "$tmp/s.key" \
	--secret "$secret" --region mem=64M 2>"$tmp/tls.log" &
pids="$pids,$!"
pid=$(echo "$pids" | tr , ' ')
for _ in $(seq 100); do
	grep -q 'endpoint tcp:' "$tmp/plain.log" && grep -q 'endpoint tcp:' "$tmp/secret.log" &&
		grep -q 'endpoint tls:' "$tmp/tls.log" && break
	sleep 0.1
done
plain=$(sed -n 's/.*endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/plain.log")
tcp=$(sed -n 's/.*endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/secret.log")
tls=$(sed -n 's/.*endpoint \(tls:[^ ]*\).*/\1/p' "$tmp/tls.log")
[ -n "$plain" ] && [ -n "$tcp" ] && [ -n "$tls" ] ||
	{ echo "run.sh: arfd did not start"; cat "$tmp"/*.log; exit 1; }
{
	echo "# bench/tls: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(openssl version)"
	for i in $(seq "$runs"); do
		echo "## run $i"
		PN_TLS_CA=$tmp/ca.pem timeout 900 "$BUILD/bench/tls/bench_tls" "$plain" "$tcp" "$tls" "$secret" \
			"$tmp/null.pno" --pids "$pids" "$@" || exit 1
	done
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
