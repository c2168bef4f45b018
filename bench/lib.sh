# bench/lib.sh: what the benchmarks that compare ARF with sshfs (bench/fs, bench/grep) set up
# alike: two network namespaces joined by a veth pair, the link's shape, arfd serving an
# image in the server namespace, sshd (sftp) there, and their teardown.  Sourced by a bash
# script that sets before calling these:
#   NS_S NS_C   the namespaces (server, client)     V_S V_C  the veth ends (<= 15 characters)
#   IP_S IP_C   their addresses (/24)               tmp      the run's directory
#   NET         for set_net: unlimited or a tbf rate such as 1gbit
# and defines die (message, exit 1).  The FUSE mounts are made through nsenter --net, which
# enters the network namespace only, so they stay visible to every process here (ip netns
# exec would make a private mount namespace).

ns_s() { nsenter --net="/run/netns/$NS_S" "$@"; }
ns_c() { nsenter --net="/run/netns/$NS_C" "$@"; }

mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
unmount() {
	mounted "$1" || return 0
	timeout 60 fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
}
# An `arf mount` in the client namespace (or MOUNT_NS: ns_s), in the foreground (-f) in the
# background: the mount's pid goes into the variable named PIDVAR.  Needs BIN (arf's
# directory), tmp/log, and MOPTS (mount options, or empty).
#   arf_mount_at PIDVAR ENDPOINT MOUNTPOINT LOGNAME [VAR=VALUE ...]  (the mount's environment)
arf_mount_at() {
	local pidvar=$1 ep=$2 mp=$3 logname=$4 pid
	shift 4
	n_mount=$((${n_mount:-0} + 1))
	${MOUNT_NS:-ns_c} env "$@" "$BIN/arf" mount "$ep" "$mp" -f ${MOPTS:+-o "$MOPTS"} 2>"$tmp/log/$logname.$n_mount" &
	pid=$!
	printf -v "$pidvar" '%s' "$pid"
	for _ in $(seq 200); do
		mounted "$mp" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "run.sh: arf mount ($logname) failed: $(tr '\n' ' ' <"$tmp/log/$logname.$n_mount")" >&2
	return 1
}
# Undo arf_mount_at PIDVAR ... MOUNTPOINT: unmount, then wait for the mount (5 s) or kill it.
arf_umount_at() {
	local pidvar=$1 mp=$2 pid=${!1}
	mounted "$mp" && timeout 60 "$BIN/arf" umount "$mp" 2>/dev/null
	unmount "$mp"
	if [ -n "$pid" ]; then
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		printf -v "$pidvar" '%s' ""
	fi
}

stop() {   # pid: TERM, 10 s, KILL
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
}

# The namespaces, the veth pair between them and the addresses.
net_up() {
	ip netns add "$NS_S" && ip netns add "$NS_C" || die "ip netns add failed"
	ip link add "$V_S" type veth peer name "$V_C" || die "ip link add veth failed"
	ip link set "$V_S" netns "$NS_S" && ip link set "$V_C" netns "$NS_C" || die "ip link set netns failed"
	ns_s ip addr add "$IP_S/24" dev "$V_S" && ns_s ip link set "$V_S" up && ns_s ip link set lo up &&
	ns_c ip addr add "$IP_C/24" dev "$V_C" && ns_c ip link set "$V_C" up && ns_c ip link set lo up ||
		die "addresses on the veth pair failed"
}

# Everything left in the namespaces (sshfs's ssh and sftp-server, ...) killed, the
# namespaces and the veth pair removed; safe to call when they were never made.
net_down() {
	local ns p
	for ns in "$NS_C" "$NS_S"; do
		[ -e "/run/netns/$ns" ] || continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	ip link del "$V_S" 2>/dev/null
}

# NET on the link: 1gbit etc. is a token bucket on both ends' egress (burst 512 KiB: above a
# 64 KiB GSO packet and rate/HZ; latency 10 ms bounds the queue); unlimited: no qdisc.
set_net() {
	local v
	for v in "ns_s $V_S" "ns_c $V_C"; do
		set -- $v
		$1 tc qdisc del dev "$2" root 2>/dev/null
		case $NET in
		unlimited) ;;
		*bit) $1 tc qdisc add dev "$2" root tbf rate "$NET" burst 512kb latency 10ms ||
			die "tc tbf on $2 failed" ;;
		*) die "--nets: $NET: want unlimited or a rate like 1gbit" ;;
		esac
	done
}

# arfd ARFD IMAGE ENDPOINT LOG: arfd serving IMAGE in the server namespace; arfd_pid.
arfd_up() {
	ns_s "$1" --listen "$3" --arf "$2" 2>"$4" &
	arfd_pid=$!
	for _ in $(seq 100); do
		grep -q "endpoint tcp:" "$4" && break
		kill -0 "$arfd_pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "endpoint tcp:" "$4" || { cat "$4"; die "arfd did not start"; }
}

# sshd on IP_S:22 in the server namespace, keys and configs in $tmp/ssh, its log in LOG;
# sshd_pid.  The client side is `ssh -F $tmp/ssh/ssh_config bench` (root, a fast cipher, no
# compression).
sshd_up() {
	local log=$1
	mkdir -p "$tmp/ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$tmp/ssh/client_key" ||
		die "ssh-keygen failed"
	cp "$tmp/ssh/client_key.pub" "$tmp/ssh/authorized_keys"
	cat >"$tmp/ssh/sshd_config" <<EOF
ListenAddress $IP_S
Port 22
HostKey $tmp/ssh/host_key
PidFile $tmp/ssh/sshd.pid
AuthorizedKeysFile $tmp/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
	cat >"$tmp/ssh/ssh_config" <<EOF
Host bench
	HostName $IP_S
	User root
	IdentityFile $tmp/ssh/client_key
	IdentitiesOnly yes
	UserKnownHostsFile /dev/null
	StrictHostKeyChecking no
	BatchMode yes
	LogLevel ERROR
	Ciphers aes128-gcm@openssh.com
	Compression no
EOF
	mkdir -p /run/sshd
	local sshd
	sshd=$(command -v sshd || echo /usr/sbin/sshd)
	"$sshd" -t -f "$tmp/ssh/sshd_config" 2>"$log" || { cat "$log"; die "sshd -t failed"; }
	ns_s "$sshd" -D -e -f "$tmp/ssh/sshd_config" 2>>"$log" &
	sshd_pid=$!
	for _ in $(seq 100); do
		ns_c timeout 5 ssh -F "$tmp/ssh/ssh_config" bench true 2>/dev/null && break
		kill -0 "$sshd_pid" 2>/dev/null || break
		sleep 0.2
	done
	ns_c timeout 10 ssh -F "$tmp/ssh/ssh_config" bench true || { cat "$log"; die "ssh to the server namespace failed"; }
}
