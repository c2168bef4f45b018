#!/bin/sh
# tls.sh: the tls: endpoint end to end (docs/net.md, "TLS").  Certificates made here with the
# openssl command (a CA, a server certificate for 127.0.0.1, one for another address, and a
# second CA); arfd listens on tcp: and tls: with --secret and an admin secret.
#   - test_pn and test_arfd over tls: (every test of the transport, and of arfd through libarc,
#     that does not write raw plain frames);
#   - EXEC, INSTALL, WRITE and READ with arc through a loopback proxy that records every byte
#     both ways: neither secret nor the data written or read may show in the recording,
#     while the same requests over tcp: show the data there (the recording works);
#   - arf import, arf grep and arf mount (where FUSE can be used) over tls:;
#   - what fails, fails at once with a message that says why: a tcp: client at the tls:
#     port, a client trusting another CA, a certificate for another address, the wrong
#     secret inside TLS, a tls: client at the tcp: port;
#   - a peer that connects and stalls in the handshake is closed at --auth-timeout.
#
#   BUILD=build sh tests/integration/tls.sh        prints "N passed, N failed" last
# Every client call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${TLS_SH_TIMEOUT:-${ARF_SH_TIMEOUT:-20}}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tls.sh.XXXXXX") || exit 1
proxy=
pid2=
cleanup() {
	[ -n "$proxy" ] && kill "$proxy" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	[ -n "$pid2" ] && kill -KILL "$pid2" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

for p in arfd arc arf pnasm tests/test_pn tests/test_arfd; do
	[ -x "$BUILD/$p" ] || { echo "tls.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done
for c in openssl python3; do
	command -v $c >/dev/null || { echo "tls.sh: needs $c (bash scripts/deps.sh)"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- certificates: P-256 keys, valid two days ----
cert() {   # cert NAME CA SAN: NAME.pem and NAME.key, signed by CA (CA.pem, CA.key)
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$tmp/$1.key" -out "$tmp/$1.csr" 2>/dev/null &&
	printf 'subjectAltName=%s\n' "$3" >"$tmp/$1.ext" &&
	openssl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.pem" -CAkey "$tmp/$2.key" \
		-CAcreateserial -days 2 -extfile "$tmp/$1.ext" -out "$tmp/$1.pem" 2>/dev/null
}
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$1" -keyout "$tmp/$1.key" -out "$tmp/$1.pem" 2>/dev/null
}
if ! { ca ca && ca otherca && cert server ca IP:127.0.0.1 && cert elsewhere ca IP:127.0.0.2; }; then
	echo "tls.sh: openssl could not make the test certificates"
	echo "0 passed, 1 failed"
	exit 1
fi

# ---- Paradis-Net's own tests, and arfd's through libarc, over tls: ----
for t in test_pn test_arfd; do
	PN_TLS_CERT=$tmp/server.pem PN_TLS_KEY=$tmp/server.key PN_TLS_CA=$tmp/ca.pem \
		timeout 300 "$BUILD/tests/$t" tls >"$tmp/t.out" 2>&1
	last=$(tail -n 1 "$tmp/t.out")
	case "$last" in
	*" passed, 0 failed") ok ;;
	*) bad "$t tls: $last"; grep FAIL "$tmp/t.out" | head -20 ;;
	esac
done

# ---- arfd on tcp: and tls: ----
img=$tmp/img
"$BUILD/arf" mkfs "$img" --size 16M >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
start_arfd "$tmp/arfd.log" --listen tls:127.0.0.1:0 --tls-cert "$tmp/server.pem" \
	--tls-key "$tmp/server.key" --secret hush-client-5ecret --admin-secret hush-admin-5ecret \
	--region mem=1M --arf "$img" --auth-timeout 1
tep=$(sed -n 's/.*info: endpoint \(tls:[^ ]*\).*/\1/p' "$tmp/arfd.log" | head -n 1)
if [ -z "$ep" ] || [ -z "$tep" ]; then
	echo "tls.sh: arfd did not start:"; cat "$tmp/arfd.log"
	echo "$pass passed, 1 failed"; exit 1
fi
tport=${tep##*:}
pport=${ep##*:}

# a loopback proxy that records both directions into a file: prints its port, serves one
# connection after another until killed
cat >"$tmp/proxy.py" <<'EOF'
import socket, sys, threading
to, rec = int(sys.argv[1]), open(sys.argv[2], 'ab', buffering=0)
lock = threading.Lock()
ls = socket.socket(); ls.bind(('127.0.0.1', 0)); ls.listen(16)
print(ls.getsockname()[1], flush=True)
def pump(a, b):
    while True:
        try:
            d = a.recv(65536)
        except OSError:
            d = b''
        if not d:
            for s in (a, b):
                try: s.shutdown(socket.SHUT_RDWR)
                except OSError: pass
            return
        with lock:
            rec.write(d)
        try:
            b.sendall(d)
        except OSError:
            return
while True:
    c, _ = ls.accept()
    s = socket.create_connection(('127.0.0.1', to))
    for a, b in ((c, s), (s, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
EOF
start_proxy() {   # start_proxy PORT FILE: $proxy, $xport
	[ -n "$proxy" ] && kill "$proxy" 2>/dev/null
	: >"$tmp/proxy.port"
	python3 "$tmp/proxy.py" "$1" "$2" >"$tmp/proxy.port" &
	proxy=$!
	xport=
	for _ in $(seq 50); do
		xport=$(head -n 1 "$tmp/proxy.port")
		[ -n "$xport" ] && break
		sleep 0.1
	done
}

cat >"$tmp/seg.pna" <<'EOF'
; main(a, b) = a + b, printing "MARKER-OUT-7q2\n"
.const msg "MARKER-OUT-7q2\n"
.func main a b
	push @msg
	push #msg
	output const
	lget a
	lget b
	add
	ret
.end
.export main
EOF
run "$BUILD/pnasm" -o "$tmp/seg.pno" "$tmp/seg.pna"; check_rc pnasm 0 $?

# session: the same requests through the proxy to SCHEME's port, recorded into FILE
session() {   # session SCHEME PORT FILE
	start_proxy "$2" "$3"
	x=$1:127.0.0.1:$xport
	export ARC_SECRET=hush-client-5ecret
	run "$BUILD/arc" install "$x" "$tmp/seg.pno" --admin-secret hush-admin-5ecret \
		--tls-ca "$tmp/ca.pem"; check_rc "$1 install" 0 $?
	run "$BUILD/arc" run "$x" "$tmp/seg.pno" --arg 40 --arg 2 --tls-ca "$tmp/ca.pem"
	check_rc "$1 exec" 0 $?
	contains "$1 exec output" "$tmp/out" "MARKER-OUT-7q2"
	contains "$1 exec value" "$tmp/err" "42"
	run "$BUILD/arc" write "$x" mem 100 --data "MARKER-DATA-k3z9" --tls-ca "$tmp/ca.pem"
	check_rc "$1 write" 0 $?
	run "$BUILD/arc" read "$x" mem 100 16 --tls-ca "$tmp/ca.pem"; check_rc "$1 read" 0 $?
	same "$1 read back" "$(cat "$tmp/out")" "MARKER-DATA-k3z9"
	unset ARC_SECRET
	kill "$proxy" 2>/dev/null; wait "$proxy" 2>/dev/null; proxy=
}
session tls "$tport" "$tmp/wire.tls"
session tcp "$pport" "$tmp/wire.tcp"
# the recording works: over tcp the data are there (the secrets never are: HMAC proofs)
for m in MARKER-DATA-k3z9 MARKER-OUT-7q2; do
	if grep -qaF "$m" "$tmp/wire.tcp"; then ok; else bad "tcp recording lacks $m (proxy broken?)"; fi
done
for m in hush-client-5ecret hush-admin-5ecret; do
	if grep -qaF "$m" "$tmp/wire.tcp"; then bad "$m on the wire over tcp"; else ok; fi
done
# over tls nothing of it: not the secrets, the data, the output or the segment's constants
sz=$(wc -c <"$tmp/wire.tls")
if [ "$sz" -gt 2000 ]; then ok; else bad "tls recording only $sz bytes"; fi
for m in hush-client-5ecret hush-admin-5ecret MARKER-DATA-k3z9 MARKER-OUT-7q2; do
	if grep -qaF "$m" "$tmp/wire.tls"; then bad "$m readable on the wire over tls"; else ok; fi
done

# ---- arf import and arf grep over tls: ----
mkdir -p "$tmp/src"
printf 'one\nneedle in tls\nthree\n' >"$tmp/src/a.txt"
export ARC_SECRET=hush-client-5ecret ARC_ADMIN_SECRET=hush-admin-5ecret PN_TLS_CA=$tmp/ca.pem
run "$BUILD/arf" import "$tmp/src" "$tep:/in"; check_rc "arf import over tls" 0 $?
run "$BUILD/arf" grep -n needle "$tep:/in/a.txt"; check_rc "arf grep over tls" 0 $?
same "arf grep output" "$(cat "$tmp/out")" "2:needle in tls"
# arf mount over tls:, where FUSE can be used here (else said and skipped)
mnt=$tmp/mnt
mkdir -p "$mnt"
if [ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ]; then
	"$BUILD/arf" mount "$tep" "$mnt" -f 2>"$tmp/mount.log" &
	mpid=$!
	for _ in $(seq 100); do
		awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts && break
		kill -0 "$mpid" 2>/dev/null || break
		sleep 0.1
	done
	if awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
		same "read through a tls: mount" "$(timeout "$T" cat "$mnt/in/a.txt" | sed -n 2p)" "needle in tls"
		timeout "$T" sh -c 'printf "written over tls\n" >"$1/in/b.txt"' sh "$mnt"
		check_rc "write through a tls: mount" 0 $?
		timeout "$T" "$BUILD/arf" umount "$mnt"; check_rc "arf umount" 0 $?
		run "$BUILD/arf" grep -c "over tls" "$tep:/in/b.txt"; same "written file" "$(cat "$tmp/out")" 1
	else
		echo "tls.sh: arf mount did not mount (skipped):"; sed 's/^/  | /' "$tmp/mount.log"
	fi
	kill "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
else
	echo "tls.sh: no usable /dev/fuse: arf mount over tls: skipped"
fi
unset ARC_SECRET ARC_ADMIN_SECRET PN_TLS_CA

# ---- failures: at once, and saying why ----
export ARC_SECRET=hush-client-5ecret
t0=$(date +%s)
run "$BUILD/arc" read "tcp:127.0.0.1:$tport" mem 0 4; check_rc "tcp client at the tls port" 2 $?
contains "tcp client at the tls port: log" "$tmp/err" "it is a tls: endpoint"
contains "tcp client at the tls port: error" "$tmp/err" "TLS handshake failed"
run "$BUILD/arc" read "tcp:127.0.0.1:$tport" mem 0 4 --secret ""
check_rc "tcp client without a secret at the tls port" 2 $?
contains "... without a secret: error" "$tmp/err" "TLS handshake failed"
run "$BUILD/arc" read "$tep" mem 0 4 --tls-ca "$tmp/otherca.pem"; check_rc "another CA" 2 $?
contains "another CA: why" "$tmp/err" "certificate verify failed: unable to get local issuer certificate"
run "$BUILD/arc" read "$tep" mem 0 4; check_rc "system CAs only" 2 $?
contains "system CAs only: why" "$tmp/err" "certificate verify failed"
run "$BUILD/arc" read "$tep" mem 0 4 --secret wrong --tls-ca "$tmp/ca.pem"; check_rc "wrong secret inside tls" 2 $?
contains "wrong secret inside tls: why" "$tmp/err" "requires its shared secret"
run "$BUILD/arc" read "tls:127.0.0.1:$pport" mem 0 4 --tls-ca "$tmp/ca.pem" --outage 1000
check_rc "tls client at the tcp port" 2 $?
contains "tls client at the tcp port: why" "$tmp/err" "closed during the handshake"
t1=$(date +%s)
if [ $((t1 - t0)) -le 8 ]; then ok; else bad "the failures took $((t1 - t0)) s"; fi
contains "arfd logged the tcp client" "$tmp/arfd.log" "it speaks tcp:"
unset ARC_SECRET

# a certificate for another address: the client refuses it
: >"$tmp/arfd2.log"            # (the loop below may look before arfd's redirection made it)
"$BUILD/arfd" --listen tls:127.0.0.1:0 --tls-cert "$tmp/elsewhere.pem" \
	--tls-key "$tmp/elsewhere.key" --region mem=4096 2>"$tmp/arfd2.log" &
pid2=$!
ep2=
for _ in $(seq 100); do
	ep2=$(sed -n 's/.*info: endpoint \(tls:[^ ]*\).*/\1/p' "$tmp/arfd2.log" | head -n 1)
	[ -n "$ep2" ] && break
	sleep 0.1
done
run "$BUILD/arc" read "$ep2" mem 0 4 --tls-ca "$tmp/ca.pem"; check_rc "certificate for another address" 2 $?
contains "another address: why" "$tmp/err" "certificate verify failed: IP address mismatch"
kill "$pid2"; wait "$pid2" 2>/dev/null; pid2=

# arfd refuses to start on a key that is not the certificate's
run "$BUILD/arfd" --listen tls:127.0.0.1:0 --tls-cert "$tmp/server.pem" --tls-key "$tmp/elsewhere.key" \
	--region mem=4096
check_rc "mismatched key" 1 $?
contains "mismatched key: why" "$tmp/err" "key $tmp/elsewhere.key"

# ---- a peer that stalls in the handshake: closed at --auth-timeout (1 s) ----
cat >"$tmp/stall.py" <<'EOF'
import socket, sys, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'\x16\x03\x01\x00\x05')       # the start of a TLS record, then nothing
s.settimeout(8)
t0 = time.time()
try:
    d = s.recv(1)
except OSError:
    d = b''
print('closed after %.1f s' % (time.time() - t0) if not d else 'got bytes')
EOF
run python3 "$tmp/stall.py" "$tport"
if grep -qE '^closed after [1-3]\.' "$tmp/out"; then ok; else bad "stalled handshake: $(cat "$tmp/out" "$tmp/err")"; fi
run "$BUILD/arc" read "$tep" mem 100 4 --tls-ca "$tmp/ca.pem" --secret hush-client-5ecret
check_rc "served after the stalled one" 0 $?

kill "$pid"; wait "$pid" 2>/dev/null
check_rc "arfd exits 0 on SIGTERM" 0 $?
pid=
echo "$pass passed, $fail failed"
