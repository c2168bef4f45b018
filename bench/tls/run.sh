#!/bin/sh
# run.sh OUT RUNS [bench_tls options]: throwaway certificates, an arfd without a secret on
# tcp: and one with a secret on tcp: and tls:, each with a 64 MiB region, and bench_tls RUNS
# times against them; everything written to OUT (emptied first) with the machine's load
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
# one arfd without a secret (plain), one with a secret on tcp: and tls: (secret, tls)
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --region mem=64M 2>"$tmp/plain.log" &
pid=$!
"$BUILD/arfd" --listen tcp:127.0.0.1:0 --listen tls:127.0.0.1:0 --tls-cert "$tmp/s.pem" \
	--tls-key "$tmp/s.key" --secret "$secret" --region mem=64M 2>"$tmp/arfd.log" &
pid="$pid $!"
for _ in $(seq 100); do
	grep -q 'endpoint tls:' "$tmp/arfd.log" && grep -q 'endpoint tcp:' "$tmp/plain.log" && break
	sleep 0.1
done
plain=$(sed -n 's/.*endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/plain.log")
tcp=$(sed -n 's/.*endpoint \(tcp:[^ ]*\).*/\1/p' "$tmp/arfd.log")
tls=$(sed -n 's/.*endpoint \(tls:[^ ]*\).*/\1/p' "$tmp/arfd.log")
[ -n "$plain" ] && [ -n "$tcp" ] && [ -n "$tls" ] ||
	{ echo "run.sh: arfd did not start"; cat "$tmp/plain.log" "$tmp/arfd.log"; exit 1; }
{
	echo "# bench/tls: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(openssl version)"
	for i in $(seq "$runs"); do
		echo "## run $i"
		PN_TLS_CA=$tmp/ca.pem timeout 900 "$BUILD/bench/tls/bench_tls" "$plain" "$tcp" "$tls" "$secret" \
			"$tmp/null.pno" "$@" || exit 1
	done
	echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
