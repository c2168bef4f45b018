#!/bin/sh
# tests/rdma/run.sh: the rdma: tests, run where there is an RDMA device (the rdma-vm guest;
# `make check-rdma` gets there).  Builds its own objects in $BUILD (default build-rdma: the
# guest's compiler and libraries may differ from the host's), then runs the common
# Paradis-Net suite over rdma (replies as SENDs below the inline limit, then with every reply
# written in place: PN_RDMA_INLINE=0) and test_rdma; in the rdma-vm guest last, the device
# deleted under a client (it stays deleted).  Ends with "N passed, N failed".
#   PN_TEST_HOST  the address of the RDMA netdev (default $RDMA_VM_IP)
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-rdma}
host=${PN_TEST_HOST:-${RDMA_VM_IP:-}}
if [ -z "$host" ]; then
	echo "tests/rdma: set PN_TEST_HOST to the address of an RDMA netdev (127.0.0.1 does not work)"
	echo "0 passed, 1 failed"
	exit 1
fi
export PN_TEST_HOST="$host" TEST_PN_TIMES=1
t0=$(date +%s)
mkdir -p "$BUILD"
if ! make -j"$(nproc)" BUILD="$BUILD" rdma-tests >"$BUILD/rdma-build.log" 2>&1; then
	cat "$BUILD/rdma-build.log"
	echo "tests/rdma: build failed"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "== build: $(($(date +%s) - t0)) s"
passed=0 failed=0 status=0
out=$(mktemp)
# run NAME TIMEOUT CMD...: run one program, add its "N passed, N failed" to the totals
run() {
	name=$1 limit=$2
	shift 2
	echo "== $name"
	t=$(date +%s)
	timeout "$limit" "$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	[ "$rc" -eq 124 ] && echo "== $name: timed out after $limit s"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
	if [ -n "$line" ]; then
		passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
		failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
	fi
	[ "$rc" -eq 0 ] || { status=1; [ -n "$line" ] || failed=$((failed + 1)); }
	echo "== $name: exit $rc, $(($(date +%s) - t)) s"
}
run "test_pn rdma" 300 "$BUILD/tests/rdma/test_pn" rdma
run "test_pn rdma (PN_RDMA_INLINE=0: every reply written in place)" 300 \
	env PN_RDMA_INLINE=0 "$BUILD/tests/rdma/test_pn" rdma
run "test_rdma" 300 "$BUILD/tests/rdma/test_rdma" "$host"
run "test_arfd_rdma" 300 "$BUILD/tests/rdma/test_arfd_rdma" "$host"
# (only in the guest, whose device is made for it: never a machine's own)
if [ -n "${RDMA_VM:-}" ] && [ -n "${RDMA_VM_DEV:-}" ]; then
	run "test_arfd_rdma --link-delete $RDMA_VM_DEV" 300 \
		"$BUILD/tests/rdma/test_arfd_rdma" "$host" --link-delete "$RDMA_VM_DEV"
fi
rm -f "$out"
echo "== rdma total: $(($(date +%s) - t0)) s"
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
