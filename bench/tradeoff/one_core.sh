#!/usr/bin/env bash
# one_core.sh CMD...: run CMD (and every process it starts) with one CPU's worth of time, as
# a 1-vCPU virtual machine has: a CFS quota of 100 ms per 100 ms period in a cgroup of its
# own, not pinned to any CPU (cgroup v2 cpu.max, or v1's cpu.cfs_quota_us).  Needs root.
#   bash bench/tradeoff/one_core.sh build/bench/tradeoff/bench_tradeoff --quick
# Unpinned, this is a container's --cpus=1 rather than a 1-vCPU machine: the threads still run
# on every CPU, and a client and its server may sit on two of them, each CPU halting between
# requests (the kernel's choice, run to run; bench_tradeoff --count shows it), which costs raw
# sockets as much as arfd (arfd's tcp reader now keeps to its client's CPU there: docs/net.md,
# "Threads"; the raw pair still splits).  --pin CPU runs CMD on that CPU alone as well: one
# vCPU, as a 1-vCPU virtual machine has it.
set -euo pipefail
pin=
if [ "${1:-}" = --pin ]; then
	[ $# -gt 2 ] || { echo "usage: one_core.sh [--pin CPU] CMD..." >&2; exit 2; }
	pin=$2
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: one_core.sh [--pin CPU] CMD..." >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "one_core.sh: needs root (a cgroup of its own)" >&2; exit 1; }
name=arbench-onecore-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then            # v2, unified at the top
	dir=/sys/fs/cgroup/$name
	mkdir "$dir"
	echo "100000 100000" > "$dir/cpu.max"
elif [ -d /sys/fs/cgroup/cpu ]; then                          # v1 cpu controller
	dir=/sys/fs/cgroup/cpu/$name
	mkdir "$dir"
	echo 100000 > "$dir/cpu.cfs_period_us"
	echo 100000 > "$dir/cpu.cfs_quota_us"
else
	echo "one_core.sh: no cgroup cpu controller here" >&2
	exit 1
fi
cleanup() { rmdir "$dir" 2>/dev/null || true; }
trap cleanup EXIT
# the child joins the cgroup before it runs CMD, so everything CMD forks is in it
if [ -n "$pin" ]; then
	set -- taskset -c "$pin" "$@"
fi
bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' one_core "$dir" "$@"
