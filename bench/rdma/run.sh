#!/bin/sh
# bench/rdma/run.sh: Paradis-Net's rdma: transport beside perftest, where there is an RDMA
# device (the rdma-vm guest; `make bench-rdma` gets there).  Builds libpn and bench_rdma in
# $BUILD (default build-rdma: the guest's compiler and libraries), then runs bench_rdma on
# the RDMA netdev's address: perftest's server and client and pn's both in this machine.
#   sh bench/rdma/run.sh [--quick] [--reps N]       results in bench/rdma/results/
#   PN_TEST_HOST / RDMA_VM_IP  the address; RDMA_VM_DEV the device (default: the first one)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-rdma}
host=${PN_TEST_HOST:-${RDMA_VM_IP:-}}
dev=${RDMA_VM_DEV:-$(ls /sys/class/infiniband 2>/dev/null | head -n 1)}
if [ -z "$host" ] || [ -z "$dev" ]; then
	echo "bench/rdma: no RDMA device or address (set PN_TEST_HOST, or run 'make bench-rdma')" >&2
	exit 1
fi
command -v ib_send_lat >/dev/null || { echo "bench/rdma: perftest is not installed" >&2; exit 1; }
mkdir -p "$BUILD"
make -j"$(nproc)" BUILD="$BUILD" "$BUILD/libpn.a" >"$BUILD/bench-rdma-build.log" 2>&1 ||
	{ cat "$BUILD/bench-rdma-build.log"; exit 1; }
make -C bench/rdma BUILD="$(pwd)/$BUILD" build >>"$BUILD/bench-rdma-build.log" 2>&1 ||
	{ cat "$BUILD/bench-rdma-build.log"; exit 1; }
mkdir -p bench/rdma/results
# bench_rdma bounds itself (--quick 400 s, else 1500 s); timeout is the backstop
timeout 1800 "$BUILD/bench/rdma/bench_rdma" --host "$host" --dev "$dev" \
	--results bench/rdma/results "$@"
