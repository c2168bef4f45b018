#!/bin/sh
# arfd.sh: the real programs end to end: build/arfd on a free loopback port with a secret, an
# anonymous rw region, a read-only one and a file-backed one, driven by build/arc (regions,
# install, run, read, write, stats) with segments assembled by build/pnasm.  Checks exit codes
# (arc: 0 ok, 1 usage, 2 the server refused, 3 the run trapped) and outputs; then SIGTERM while
# a run is in flight: the run must still get its answer, arfd must exit 0, and the file must
# hold what was written (msync'd on the way out).  Then a second arfd with endless runs: four
# whose clients are killed are cancelled while a new client is served at once, a request's
# wall-clock limit, and SIGTERM ending it within 10 s, the runs' clients told why.  Then a
# third with --secret-file and a config naming an admin-secret-file and an :admin region: a
# table of arc requests with no secret, the client secret and the admin secret (installs and
# the :admin region refused with DENIED to clients); equal secrets and an empty one refused
# at start.
#
#   BUILD=build sh tests/integration/arfd.sh        prints "N passed, N failed" last
# Every client call is bounded by `timeout`; whatever was started is killed on exit.

BUILD=${BUILD:-build}
T=${ARFD_SH_TIMEOUT:-${ARF_SH_TIMEOUT:-20}}
bg=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arfd.sh.XXXXXX") || exit 1
cleanup() {
	[ -n "$bg" ] && kill "$bg" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

arc() { timeout "$T" "$BUILD/arc" "$@" >"$tmp/out" 2>"$tmp/err"; }

for p in arfd arc pnasm pndis; do
	[ -x "$BUILD/$p" ] || { echo "arfd.sh: $BUILD/$p not built"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- segments ----
cat >"$tmp/calc.pna" <<'EOF'
; main(a, b) = a + b, printing "sum\n"; boom traps; stamp(v) stores v into disk[256]
.region disk rw
.const msg "sum\n"
.func main a b
	push @msg
	push #msg
	output const
	lget a
	lget b
	add
	ret
.end
.func boom
	trap 42
.end
.func stamp v
	push 256
	lget v
	st64 disk
	push 1
	ret
.end
.export main
.export boom
.export stamp
EOF
# spin(ms): busy until ms milliseconds passed by the server's clock (hook now), for the drain
cat >"$tmp/spin.pna" <<'EOF'
.hook now ":l"
.func main ms
.local t0
	hcall now
	lset t0
loop:
	hcall now
	lget t0
	sub
	lget ms
	push 1000000
	mul
	jltu loop
	lget ms
	ret
.end
.export main
EOF
for s in calc spin; do
	if ! timeout "$T" "$BUILD/pnasm" -o "$tmp/$s.pno" "$tmp/$s.pna" 2>"$tmp/err"; then
		bad "pnasm $s.pna"; cat "$tmp/err"
		echo "$pass passed, $fail failed"
		exit 1
	fi
done

# a 8 KiB file region that starts with a marker
head -c 8192 /dev/zero >"$tmp/disk.bin"
printf 'initial' | dd of="$tmp/disk.bin" conv=notrunc 2>/dev/null

# ---- start arfd; port 0: it logs the endpoint it got ----
start_arfd "$tmp/arfd.log" --secret hush --region mem=4096 --region rom=4096:ro \
	--region "disk=@$tmp/disk.bin:rw"
if [ -z "$ep" ]; then
	echo "arfd.sh: arfd did not start:"
	cat "$tmp/arfd.log"
	echo "$pass passed, 1 failed"
	exit 1
fi
export ARC_SECRET=hush

# ---- regions ----
arc regions "$ep"; check_rc regions 0 $?
printf 'mem\t4096\trw\nrom\t4096\tro\ndisk\t8192\trw\n' >"$tmp/want"
if cmp -s "$tmp/out" "$tmp/want"; then ok; else bad "regions output:"; cat "$tmp/out"; fi

# ---- the secret ----
arc regions "$ep" --secret wrong; check_rc "wrong secret" 2 $?
contains "wrong secret message" "$tmp/err" "refused: this server requires its shared secret"

# ---- install: the id is the segment's SHA-256, as pndis computes it ----
arc install "$ep" "$tmp/calc.pno"; check_rc install 0 $?
want_id=$(timeout "$T" "$BUILD/pndis" --id "$tmp/calc.pno")
got_id=$(cat "$tmp/out")
if [ -n "$want_id" ] && [ "$got_id" = "$want_id" ]; then ok; else bad "install id '$got_id', want '$want_id'"; fi

# ---- run: result, output, traps, refusals ----
arc run "$ep" "$tmp/calc.pno" --arg 40 --arg 2; check_rc run 0 $?
if [ "$(cat "$tmp/out")" = "sum" ]; then ok; else bad "run output: '$(cat "$tmp/out")'"; fi
contains "run result" "$tmp/err" "result: 42"
arc run "$ep" "$tmp/calc.pno" --entry boom; check_rc "run boom" 3 $?
contains "trap text" "$tmp/err" "arc: trap user (explicit trap 42) in boom at pc 0, line 14"
arc run "$ep" "$tmp/calc.pno" --entry nosuch; check_rc "run nosuch" 2 $?
contains "no entry message" "$tmp/err" "arc: run: no exported entry 'nosuch'"
arc run "$ep" "$tmp/calc.pno" --arg 1; check_rc "run with 1 argument of 2" 2 $?
contains "args message" "$tmp/err" "entry 'main' takes 2 arguments, 1 given"
arc run "$ep" "$tmp/spin.pno" --arg 1000 --fuel 100; check_rc "run out of fuel" 3 $?
contains "fuel trap" "$tmp/err" "trap fuel (fuel exhausted) in main"
printf 'not a segment' >"$tmp/junk.pno"
arc run "$ep" "$tmp/junk.pno"; check_rc "run junk" 2 $?
if [ -s "$tmp/err" ]; then ok; else bad "run junk: no message"; fi
arc run "$ep" "$tmp/nonexistent.pno"; check_rc "run a missing file" 1 $?
arc frobnicate "$ep"; check_rc "unknown command" 1 $?

# ---- read and write ----
arc read "$ep" disk 0 7; check_rc "read disk" 0 $?
if [ "$(cat "$tmp/out")" = "initial" ]; then ok; else bad "read disk: '$(cat "$tmp/out")'"; fi
arc write "$ep" disk 100 --data persisted; check_rc "write disk" 0 $?
arc read "$ep" disk 100 9; check_rc "read back" 0 $?
if [ "$(cat "$tmp/out")" = "persisted" ]; then ok; else bad "read back: '$(cat "$tmp/out")'"; fi
printf 'end' >"$tmp/end.bin"
arc write "$ep" disk 8189 --file "$tmp/end.bin"; check_rc "write the last 3 bytes" 0 $?
arc write "$ep" disk 8190 --file "$tmp/end.bin"; check_rc "write past the end" 2 $?
contains "bounds message" "$tmp/err" "write of 3 bytes at 8190 is outside region 'disk' (8192 bytes)"
arc write "$ep" rom 0 --data x; check_rc "write to rom" 2 $?
contains "read-only message" "$tmp/err" "region 'rom' is read-only"
arc read "$ep" nosuch 0 1; check_rc "read an unknown region" 2 $?
contains "no region message" "$tmp/err" "no region 'nosuch' here"
arc read "$ep" mem 4000 100; check_rc "read across the end of mem" 2 $?
arc run "$ep" "$tmp/calc.pno" --entry stamp --arg 0x4847464544434241; check_rc "run stamp" 0 $?

# ---- stats ----
arc stats "$ep"; check_rc stats 0 $?
# exec requests so far: main, boom, nosuch, 1-argument, fuel, junk, stamp = 7
n=$(sed -n 's/^exec\.requests \([0-9]*\)$/\1/p' "$tmp/out")
if [ "${n:-0}" -ge 7 ]; then ok; else bad "exec.requests '$n', want >= 7"; fi
contains "stats traps" "$tmp/out" "traps 2"

# ---- SIGTERM with a run in flight: it is answered, then arfd exits 0 ----
timeout "$T" "$BUILD/arc" run "$ep" "$tmp/spin.pno" --arg 700 >"$tmp/spin.out" 2>"$tmp/spin.err" &
bg=$!
sleep 0.3
kill -TERM "$pid"
wait "$bg"; rc=$?
bg=
if [ "$rc" -eq 0 ] && grep -qF "result: 700" "$tmp/spin.err"; then ok
else bad "the run in flight at SIGTERM: status $rc"; cat "$tmp/spin.err"; fi
# arfd must be gone within a few seconds, with status 0
for _ in $(seq 50); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	bad "arfd still running 5 s after SIGTERM"
	kill -KILL "$pid"
fi
wait "$pid"; rc=$?
pid=
check_rc "arfd exit status" 0 "$rc"
contains "drain logged" "$tmp/arfd.log" "draining requests in flight"
contains "stop logged" "$tmp/arfd.log" "arfd: info: stopped"

# ---- the file holds what was written through arfd ----
got=$(dd if="$tmp/disk.bin" bs=1 skip=100 count=9 2>/dev/null)
if [ "$got" = persisted ]; then ok; else bad "file at 100: '$got'"; fi
got=$(dd if="$tmp/disk.bin" bs=1 skip=8189 count=3 2>/dev/null)
if [ "$got" = end ]; then ok; else bad "file at 8189: '$got'"; fi
got=$(dd if="$tmp/disk.bin" bs=1 skip=256 count=8 2>/dev/null)   # the segment's st64, LE
if [ "$got" = ABCDEFGH ]; then ok; else bad "file at 256 (segment store): '$got'"; fi
sz=$(wc -c <"$tmp/disk.bin")
if [ "$sz" -eq 8192 ]; then ok; else bad "file size $sz"; fi

# ---- endless runs: clients that leave, the wall-clock limit, SIGTERM ----
# pause(10 ms) for ever; before hooks paid for their time, one unit of fuel per 10 ms
cat >"$tmp/pauses.pna" <<'EOF'
.hook pause "l:l"
.func main
loop:
	push 10000
	hcall pause
	drop
	jmp loop
.end
.export main
EOF
timeout "$T" "$BUILD/pnasm" -o "$tmp/pauses.pno" "$tmp/pauses.pna" 2>"$tmp/err" || bad "pnasm pauses.pna"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# timed NAME MAX_MS CMD...: CMD answered (status 0) within MAX_MS
timed() {
	_name=$1 _max=$2
	shift 2
	_t0=$(now_ms)
	"$@" >"$tmp/out" 2>"$tmp/err"; _rc=$?
	_dt=$(( $(now_ms) - _t0 ))
	if [ "$_rc" -eq 0 ] && [ "$_dt" -lt "$_max" ]; then ok
	else bad "$_name: status $_rc after $_dt ms (want 0 within $_max ms)"; sed 's/^/  | /' "$tmp/err"; fi
}
unset ARC_SECRET
start_arfd "$tmp/arfd2.log" --threads 4 --max-run-ms 60000 --region disk=8192
if [ -z "$ep" ]; then
	bad "second arfd did not start"; cat "$tmp/arfd2.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
# four endless runs whose clients are killed: the runs are cancelled, and a new client's
# REGIONS, STATS and EXEC are answered at once (they all timed out before: four workers held)
hogs=
for i in 1 2 3 4; do   # no timeout in between: the kill must reach arc itself
	"$BUILD/arc" run "$ep" "$tmp/pauses.pno" --timeout 20000 >/dev/null 2>&1 &
	hogs="$hogs $!"
done
sleep 0.5
# shellcheck disable=SC2086
kill -KILL $hogs 2>/dev/null
# shellcheck disable=SC2086
wait $hogs 2>/dev/null
timed "REGIONS after four endless runs" 5000 timeout 10 "$BUILD/arc" regions "$ep"
timed "STATS after four endless runs" 5000 timeout 10 "$BUILD/arc" stats "$ep"
timed "EXEC after four endless runs" 5000 timeout 10 "$BUILD/arc" run "$ep" "$tmp/calc.pno" --entry main --arg 1 --arg 2
contains "its result" "$tmp/err" "result: 3"
n=
t0=$(now_ms)
while [ $(( $(now_ms) - t0 )) -lt 5000 ]; do   # 5 s in all, however slow each look is
	n=$(timeout 3 "$BUILD/arc" stats "$ep" 2>/dev/null | sed -n 's/^exec\.cancelled \([0-9]*\)$/\1/p')
	[ "${n:-0}" -ge 4 ] && break
	sleep 0.1
done
same "runs cancelled when their clients left" "${n:-none}" 4
contains "cancel logged" "$tmp/arfd2.log" "cancelled after"
# a request's own wall-clock limit
arc run "$ep" "$tmp/pauses.pno" --time-limit 200; check_rc "run past its time limit" 3 $?
contains "time trap" "$tmp/err" "arc: trap time (wall-clock limit reached: 200 ms, the request's limit) in main at pc 5, line 5"
# SIGTERM while four endless runs go on (they would for 60 s): arfd stops within 10 s and the
# runs' clients are told
hogs=
for i in 1 2 3 4; do
	timeout "$T" "$BUILD/arc" run "$ep" "$tmp/pauses.pno" >"$tmp/hog$i.out" 2>"$tmp/hog$i.err" &
	hogs="$hogs $!"
done
# all four running (a loaded machine may take more than a moment to start arc), 5 s at most
n=
t0=$(now_ms)
while [ $(( $(now_ms) - t0 )) -lt 5000 ]; do
	n=$(timeout 3 "$BUILD/arc" stats "$ep" 2>/dev/null | sed -n 's/^workers\.busy \([0-9]*\)$/\1/p')
	[ "${n:-0}" -ge 4 ] && break
	sleep 0.1
done
same "four endless runs before SIGTERM" "${n:-none}" 4
t0=$(now_ms)
kill -TERM "$pid"
for _ in $(seq 110); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
dt=$(( $(now_ms) - t0 ))
if kill -0 "$pid" 2>/dev/null; then
	bad "arfd still running $dt ms after SIGTERM with endless runs"
	kill -KILL "$pid"
elif [ "$dt" -le 10000 ]; then ok
else bad "arfd took $dt ms to stop after SIGTERM"; fi
wait "$pid"; rc=$?
pid=
check_rc "arfd exit status after cancelling" 0 "$rc"
i=0
for h in $hogs; do
	i=$((i + 1))
	wait "$h"; rc=$?
	if [ "$rc" -eq 2 ] && grep -qF "server is shutting down: the run was stopped after" "$tmp/hog$i.err"
	then ok; else bad "endless run $i at SIGTERM: status $rc"; sed 's/^/  | /' "$tmp/hog$i.err"; fi
done
contains "cancelling logged" "$tmp/arfd2.log" "stopping: 4 runs cancelled"

# ---- rights: the secrets from files, an :admin region, arc with either secret ----
printf 'cli-secret\n' >"$tmp/secret"
printf 'adm-secret\n' >"$tmp/admin-secret"
printf 'admin-secret-file %s\nregion conf=4096:admin\n' "$tmp/admin-secret" >"$tmp/rights.conf"
start_arfd "$tmp/arfd3.log" --secret-file "$tmp/secret" --config "$tmp/rights.conf" \
	--region mem=4096 --region disk=4096
if [ -z "$ep" ]; then
	bad "arfd with --secret-file and an admin secret did not start:"; sed 's/^/  | /' "$tmp/arfd3.log"
else
	unset ARC_SECRET
	# one row per request: who, what, its exit status, what its output must say
	while IFS='|' read -r who args want text; do
		case $who in
		client) set -- --secret cli-secret ;;
		admin) set -- --admin-secret adm-secret ;;
		*) set -- ;;
		esac
		# shellcheck disable=SC2086
		arc $args "$@"; check_rc "$who: arc $args" "$want" $?
		cat "$tmp/out" "$tmp/err" >"$tmp/both"
		[ -z "$text" ] || contains "$who: arc $args" "$tmp/both" "$text"
	done <<ROWS
none|regions $ep|2|refused: this server requires its shared secret
client|regions $ep|0|conf	4096	ro
client|install $ep $tmp/calc.pno|2|permission denied: INSTALL needs the admin secret
client|write $ep mem 0 --data x|0|
client|write $ep conf 0 --data x|2|permission denied: region 'conf' is written only with the admin secret
client|run $ep $tmp/calc.pno --arg 1 --arg 2|0|result: 3
admin|regions $ep|0|conf	4096	rw
admin|install $ep $tmp/calc.pno|0|
admin|write $ep conf 0 --data x|0|
client|read $ep conf 0 1|0|x
ROWS
	kill -TERM "$pid"; wait "$pid"; pid=
fi
printf 'secret same\nadmin-secret same\n' >"$tmp/same.conf"
timeout "$T" "$BUILD/arfd" --listen tcp:127.0.0.1:0 --config "$tmp/same.conf" 2>"$tmp/err"
check_rc "equal secrets refused" 1 $?
contains "equal secrets message" "$tmp/err" "the admin secret must differ from the secret"
timeout "$T" "$BUILD/arfd" --listen tcp:127.0.0.1:0 --secret "" 2>"$tmp/err"
check_rc "an empty secret refused" 2 $?
contains "empty secret message" "$tmp/err" "secret: empty"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
