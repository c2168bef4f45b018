#!/bin/sh
# arf_cluster_deleg.sh: delegation on a cluster (docs/cluster.md, "Delegation") on loopback:
# 1 metadata + 3 data arfd servers sharing a cluster key, 64 KiB stripes, the metadata
# server told its members (--member, in the description's order).  `arf cluster cat` reads
# files through the metadata server alone: each stripe piece is one EXEC of deleg.pno's
# route there, forwarded (arfd's forward hook, pn_forward_for) to the data server holding
# it, which answers the client directly.  Checked: the bytes (whole files across stripe
# edges, a range, an empty file, a hole); the message counts of one small read from the
# client's own counters (1 sent, 1 received) and the servers' STATS (the metadata server
# forwards 1 and answers none, the data server receives 1 and sends 1: 3 messages, n+1;
# the same read the ordinary way, --direct, for comparison: 5 sent and 5 received);
# hostile input: a member index arfd does not have, a forwarded request the data server
# rejects (a segment id it does not hold), a data server killed (an error within 10 s);
# servers with a secret (the data server takes the forwarded read on its member's word; a
# client without the secret is refused before anything is forwarded).  --member against
# the description: members swapped on a metadata server started before the description
# existed make every delegated read fail naming the mismatch (no bytes, not zeros; within
# 10 s); restarted, that server refuses to start with its members swapped, one missing,
# one too many or the second wrong (exit 1, the first mismatch named), and starts and
# reads the file whole with them in order; members with no description at all: refused.
#
#   BUILD=build sh tests/integration/arf_cluster_deleg.sh     prints "N passed, N failed" last
# Every call is bounded by `timeout`; on exit whatever was started is killed.

BUILD=${BUILD:-build}
umask 022
T=${ARF_SH_TIMEOUT:-60}
U=65536
pids=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arf_cluster_deleg.sh.XXXXXX") || exit 1
cleanup() {
	for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/../lib.sh"

need arf_cluster_deleg.sh arf arfd arc

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/key"
# data servers first (the metadata server names them), then the metadata server; its image
# has no description yet: arfd checks --member against it at the first forward
arf_cluster --members 3 64M --cluster-key-file "$tmp/key"
# the flat layout (version 1): the checks below name the servers stripes are on
arf_cluster_init --layout flat

mkdir "$tmp/src"
head -c $((4 * U + 1234)) /dev/urandom >"$tmp/src/big"         # 5 stripes, all 3 servers
printf 'a small file, one stripe on data server 0\n' >"$tmp/src/small"
: >"$tmp/src/empty"
run "$BUILD/arf" import "$tmp/src" "$M:/d"; check_rc "import" 0 $?

# the whole file, across four stripe edges
run "$BUILD/arf" cluster cat "$M:/d/big"; check_rc "cat big" 0 $?
if cmp -s "$tmp/out" "$tmp/src/big"; then ok; else bad "cat big: bytes differ ($(wc -c <"$tmp/out") bytes)"; fi
# a range across an edge
run "$BUILD/arf" cluster cat --offset $((U - 100)) --length 300 "$M:/d/big"; check_rc "cat range" 0 $?
tail -c +$((U - 100 + 1)) "$tmp/src/big" | head -c 300 >"$tmp/want"
if cmp -s "$tmp/out" "$tmp/want"; then ok; else bad "cat range: bytes differ"; fi
# past the end, and an empty file: nothing
run "$BUILD/arf" cluster cat --offset $((5 * U)) "$M:/d/big"; check_rc "cat past the end" 0 $?
same "past the end: bytes" "$(wc -c <"$tmp/out")" 0
run "$BUILD/arf" cluster cat "$M:/d/empty"; check_rc "cat empty" 0 $?
same "empty: bytes" "$(wc -c <"$tmp/out")" 0
run "$BUILD/arf" cluster cat "$M:/d/small"; check_rc "cat small" 0 $?
if cmp -s "$tmp/out" "$tmp/src/small"; then ok; else bad "cat small: bytes differ"; fi

# ---- the message counts of one small read (stripe.pno is installed on data server 0 now)
stat_of() { sed -n "s/^$2 //p" "$1"; }
snap() { timeout "$T" "$BUILD/arc" stats "$1" >"$2" 2>/dev/null || bad "arc stats $1"; }
# what a STATS pair costs by itself (each STATS shows its own request, not its reply)
snap "$M" "$tmp/m0"; snap "$ep_1" "$tmp/d0"
snap "$M" "$tmp/m1"; snap "$ep_1" "$tmp/d1"
run "$BUILD/arf" cluster cat --stats "$M:/d/small"; check_rc "cat --stats" 0 $?
snap "$M" "$tmp/m2"; snap "$ep_1" "$tmp/d2"
if cmp -s "$tmp/out" "$tmp/src/small"; then ok; else bad "cat --stats: bytes differ"; fi
csent=$(sed -n 's/^client.msgs_sent //p' "$tmp/err")
crecv=$(sed -n 's/^client.msgs_recv //p' "$tmp/err")
same "client: messages sent for the read" "$csent" 1
same "client: messages received for the read" "$crecv" 1
d() { echo $(( $(stat_of "$3" "$1") - $(stat_of "$2" "$1") )); }
# the data server: only the forwarded request and its answer, beyond the STATS pair
dr=$(( $(d net.msgs_recv "$tmp/d1" "$tmp/d2") - $(d net.msgs_recv "$tmp/d0" "$tmp/d1") ))
ds=$(( $(d net.msgs_sent "$tmp/d1" "$tmp/d2") - $(d net.msgs_sent "$tmp/d0" "$tmp/d1") ))
same "data server: messages received for the read" "$dr" 1
same "data server: messages sent for the read (its answer, to the client)" "$ds" 1
# the metadata server: the read is forwarded, not answered (cat's other requests, the
# lookup and the description, are answered as ever: one sent for each received)
mf=$(d net.forwarded "$tmp/m1" "$tmp/m2")
mx=$(d exec.forwarded "$tmp/m1" "$tmp/m2")
mr=$(( $(d net.msgs_recv "$tmp/m1" "$tmp/m2") - $(d net.msgs_recv "$tmp/m0" "$tmp/m1") ))
ms=$(( $(d net.msgs_sent "$tmp/m1" "$tmp/m2") - $(d net.msgs_sent "$tmp/m0" "$tmp/m1") ))
same "metadata server: forwards" "$mf $mx" "1 1"
same "metadata server: one message sent for each received" "$ms" "$mr"
# the same read the ordinary way (the data server reached, the object looked up, read):
# the client's own messages only, at least 2 round trips beside the metadata server's
run "$BUILD/arf" cluster cat --stats --direct "$M:/d/small"; check_rc "cat --direct" 0 $?
if cmp -s "$tmp/out" "$tmp/src/small"; then ok; else bad "cat --direct: bytes differ"; fi
dsent=$(sed -n 's/^client.msgs_sent //p' "$tmp/err")
drecv=$(sed -n 's/^client.msgs_recv //p' "$tmp/err")
[ "$dsent" -ge 2 ] && [ "$drecv" -ge 2 ] && ok || bad "direct: client sent '$dsent', received '$drecv'"
echo "arf_cluster_deleg.sh: one small read, delegated: client sent $csent, received $crecv; metadata server forwarded $mf (received $mr, sent $ms for cat, setup included); data server received $dr, sent $ds: $((csent + mf + ds)) messages (n+1 = 3; asking each in turn: 4).  Direct, data server not reached yet: client sent $dsent, received $drecv"

# ---- hostile input
ino=$(timeout "$T" "$BUILD/arc" run "$M" "$BUILD/arfseg/ops.pno" --entry lookup --arg 1 --args-str /d/small 2>&1 | sed -n 's/^result: //p')
[ -n "$ino" ] && [ "$ino" -gt 1 ] && ok || bad "lookup of /d/small: '$ino'"
# a member arfd does not have: 5 servers claimed, stripe 3 -> member 3 of 0..2
run "$BUILD/arc" run "$M" "$BUILD/arfseg/deleg.pno" --entry route --arg "$ino" --arg $((3 * U)) \
	--arg 10 --arg $U --arg 5 --args-file "$BUILD/arfseg/stripe.pno" --delegated
contains "member 3 of 3: EINVAL from the metadata server" "$tmp/err" "result: 0"
# (the file ends before stripe 3: route answers 0 itself; a big file's stripe 3 forwards)
run "$BUILD/arc" run "$M" "$BUILD/arfseg/deleg.pno" --entry route --arg "$(timeout "$T" "$BUILD/arc" run "$M" "$BUILD/arfseg/ops.pno" --entry lookup --arg 1 --args-str /d/big 2>&1 | sed -n 's/^result: //p')" \
	--arg $((3 * U)) --arg 10 --arg $U --arg 5 --args-file "$BUILD/arfseg/stripe.pno" --delegated
contains "member 3 of 3: EINVAL, nothing forwarded" "$tmp/err" "result: -22"
# a forwarded request the data server rejects: an id it does not hold
head -c 32 /dev/zero >"$tmp/badid"
t0=$(date +%s%N)
run "$BUILD/arc" run --timeout 10000 "$M" "$BUILD/arfseg/deleg.pno" --entry route --arg "$ino" --arg 0 \
	--arg 10 --arg $U --arg 3 --args-file "$tmp/badid" --delegated
rc=$?
el=$(ms_since "$t0")
same "rejected by the data server: arc's status" "$rc" 2
contains "rejected by the data server: its message" "$tmp/err" "segment not installed"
[ "$el" -lt 10000 ] && ok || bad "rejected by the data server: $el ms"
# a data server that stopped answering (SIGSTOP: its connection takes the forward and
# nothing comes back): the client's own bound on a delegated wait (ARF_CLUSTER_TIMEOUT_MS)
# ends it with an error naming the server
kill -STOP "$pid_1"
t0=$(date +%s%N)
run "$BUILD/arf" cluster cat "$M:/d/small"
rc=$?
el=$(ms_since "$t0")
kill -CONT "$pid_1"
same "data server stopped: exit status" "$rc" 1
contains "data server stopped: the message names the member" "$tmp/err" "$ep_1"
[ "$el" -lt 10000 ] && ok || bad "data server stopped: $el ms"
# a data server killed: the metadata server cannot forward, and says so at once.  The
# wait: until the process is gone its connection is open, and a forward written into it
# just before it closes is lost (the client then waits its 30 s): seen on a loaded machine
kill -KILL "$pid_1"
wait "$pid_1" 2>/dev/null
t0=$(date +%s%N)
run "$BUILD/arf" cluster cat "$M:/d/small"
rc=$?
el=$(ms_since "$t0")
same "data server down: exit status" "$rc" 1
contains "data server down: the message names the member" "$tmp/err" "$ep_1"
[ "$el" -lt 10000 ] && ok || bad "data server down: $el ms"
# a file with no bytes on it still reads (stripe 1 is on data server 1, the second member)
run "$BUILD/arf" cluster cat --offset $U --length 100 "$M:/d/big"; check_rc "a stripe on a live server" 0 $?
tail -c +$((U + 1)) "$tmp/src/big" | head -c 100 >"$tmp/want"
if cmp -s "$tmp/out" "$tmp/want"; then ok; else bad "a stripe on a live server: bytes differ"; fi

# ---- servers with a secret: the client proves it to the metadata server only; the data
# server takes the forwarded read on its member's word (a client's rights)
printf 'a long random secret %s\n' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$tmp/secret"
arf_cluster --members --at 4 1 64M --cluster-key-file "$tmp/key" --secret-file "$tmp/secret"
export ARC_SECRET="$(head -n 1 "$tmp/secret")"
run "$BUILD/arf" cluster init --stripe-unit 4K "$M" $data; check_rc "secret: init (4 KiB stripes: stripe.pno sent whole in a request longer than a stripe)" 0 $?
run "$BUILD/arf" import "$tmp/src" "$M:/d"; check_rc "secret: import" 0 $?
run "$BUILD/arf" cluster cat "$M:/d/big"; check_rc "secret: cat" 0 $?
if cmp -s "$tmp/out" "$tmp/src/big"; then ok; else bad "secret: cat: bytes differ"; fi
unset ARC_SECRET
run "$BUILD/arf" cluster cat "$M:/d/small"
same "no secret: exit status" "$?" 1
contains "no secret: refused" "$tmp/err" "secret"


# ---- --member against the description (arfd checks it: docs/cluster.md, "Delegation")
# A metadata server started before the description exists, its members swapped: it starts
# (nothing to check yet); once init wrote the description the first delegated read is
# refused, naming the mismatch, instead of reading the other server's object (zeros).
arf_server 6 16M --cluster-key-file "$tmp/key"
arf_server 7 16M --cluster-key-file "$tmp/key"
arf_server 8 16M --cluster-key-file "$tmp/key" --member "$ep_7" --member "$ep_6"
run "$BUILD/arf" cluster init --stripe-unit 64K "$ep_8" "$ep_6" "$ep_7"; check_rc "order: init" 0 $?
run "$BUILD/arf" import "$tmp/src" "$ep_8:/d"; check_rc "order: import" 0 $?
swapped="--member 0 is $ep_7 but the image's cluster description names $ep_6 as data server 0"
t0=$(date +%s%N)
run "$BUILD/arf" cluster cat "$ep_8:/d/big"
rc=$?
el=$(ms_since "$t0")
same "order: swapped members: exit status" "$rc" 1
contains "order: swapped members: the mismatch named" "$tmp/err" "delegation refused: $swapped"
same "order: swapped members: no bytes (not zeros)" "$(wc -c <"$tmp/out")" 0
[ "$el" -lt 10000 ] && ok || bad "order: swapped members: $el ms"
contains "order: swapped members: the metadata server's log" "$tmp/arfd8.log" "$swapped"
# a data server's stripe read through the wrong member must not pass either (stripe 1)
run "$BUILD/arf" cluster cat --offset $U --length 100 "$ep_8:/d/big"
contains "order: swapped members: stripe 1 refused too" "$tmp/err" "delegation refused"

# stopped and started again, now that the image has a description: a wrong list is refused
# at start-up (exit 1, the first mismatch named), within 10 s
# (SIGKILL: gone at once, so the wait is short without a timer; attach recovers the image)
kill -KILL "$pid_8"
wait "$pid_8" 2>/dev/null
refused() {  # NAME WANT ARG...: arfd on img8 with ARG... exits 1 at start saying WANT
	_name=$1 _want=$2
	shift 2
	t0=$(date +%s%N)
	timeout 10 "$BUILD/arfd" --listen tcp:127.0.0.1:0 --arf "$tmp/img8" \
		--cluster-key-file "$tmp/key" "$@" 2>"$tmp/refused.log"
	same "$_name: arfd's exit status" "$?" 1
	contains "$_name: arfd's message" "$tmp/refused.log" "$_want"
	[ "$(ms_since "$t0")" -lt 10000 ] && ok || bad "$_name: arfd took over 10 s"
}
refused "start, swapped" "arfd: error: --arf $tmp/img8: $swapped" --member "$ep_7" --member "$ep_6"
refused "start, a member missing" "1 --member given but the image's cluster description names 2 data servers: data server 1 ($ep_7) has no --member" --member "$ep_6"
refused "start, a member too many" "--member 2 is $ep_6 but the image's cluster description names only 2 data servers" --member "$ep_6" --member "$ep_7" --member "$ep_6"
refused "start, the second wrong" "--member 1 is $ep_6 but the image's cluster description names $ep_7 as data server 1" --member "$ep_6" --member "$ep_6"
# the right order: it starts, says so, and the file reads whole
start_arfd "$tmp/arfd8b.log" --arf "$tmp/img8" --cluster-key-file "$tmp/key" --member "$ep_6" --member "$ep_7"
[ -n "$ep" ] && ok || { bad "arfd 8 with its members in order did not start:"; cat "$tmp/arfd8b.log"; }
pids="$pids $pid"
contains "order: in order: the log" "$tmp/arfd8b.log" "2 --member match the cluster description"
run "$BUILD/arf" cluster cat "$ep:/d/big"; check_rc "order: in order: cat" 0 $?
if cmp -s "$tmp/out" "$tmp/src/big"; then ok; else bad "order: in order: cat: bytes differ"; fi
# members but no description at all (a one-server image): route's forward is refused
arf_server 9 16M --cluster-key-file "$tmp/key" --member "$ep_6"
run "$BUILD/arf" import "$tmp/src" "$ep_9:/d"; check_rc "no description: import" 0 $?
ino=$(timeout "$T" "$BUILD/arc" run "$ep_9" "$BUILD/arfseg/ops.pno" --entry lookup --arg 1 --args-str /d/small 2>&1 | sed -n 's/^result: //p')
run "$BUILD/arc" run --timeout 10000 "$ep_9" "$BUILD/arfseg/deleg.pno" --entry route --arg "$ino" \
	--arg 0 --arg 10 --arg $U --arg 1 --args-file "$BUILD/arfseg/stripe.pno" --delegated
same "no description: arc's status" "$?" 2
contains "no description: refused" "$tmp/err" "delegation refused: $tmp/img9 holds no cluster description"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
