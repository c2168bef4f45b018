# lib.sh: what the integration scripts share; they source it (. "$(dirname "$0")/../lib.sh").
# Counting checks, running a command with a time limit, starting arfd on a port of its own
# choosing, and an ARF cluster's servers (arf_cluster).  The sourcing script sets tmp (its
# temporary directory), BUILD and T (the seconds one command may take), kills $pids on exit
# and prints "$pass passed, $fail failed" at its end.  The scripts run as `sh SCRIPT`
# (tests/run.sh; /bin/sh is dash) and without set -e: a check that fails is counted, not
# fatal, and these functions may return non-zero (a test such as [ -n "$ep" ] last).

pass=0
fail=0
pid=
ep=

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# check_rc NAME WANT GOT: an exit status; a mismatch shows what run captured
check_rc() {
	if [ "$3" -eq "$2" ]; then
		ok
	else
		bad "$1: exit status $3, want $2"
		sed 's/^/  | /' "$tmp/out" "$tmp/err" 2>/dev/null
	fi
}

# contains NAME FILE TEXT: FILE holds TEXT as a fixed string
contains() {
	if grep -qF -e "$3" "$2"; then ok; else bad "$1: '$3' not in:"; sed 's/^/  | /' "$2"; fi
}

# same NAME GOT WANT
same() {
	if [ "$2" = "$3" ]; then ok; else bad "$1: '$2', want '$3'"; fi
}

# run CMD...: with the time limit T, stdout in $tmp/out, stderr in $tmp/err
run() { timeout "$T" "$@" >"$tmp/out" 2>"$tmp/err"; }

# start_arfd LOG ARG...: arfd --listen tcp:127.0.0.1:0 (ARFD_LISTEN: another) ARG... in the background, its log
# in LOG; $pid is the process, $ep the endpoint it logged ("" when it did not start within
# 10 s or exited).  LOG is emptied first: the shell may read it before arfd's own
# redirection truncates it, and must not find an earlier run's endpoint there.
start_arfd() {
	_log=$1
	shift
	: >"$_log"
	"$BUILD/arfd" --listen "${ARFD_LISTEN:-tcp:127.0.0.1:0}" "$@" 2>"$_log" &
	pid=$!
	ep=
	for _ in $(seq 100); do
		ep=$(sed -n 's/.*info: endpoint \([a-z]*:[^ ]*\).*/\1/p' "$_log" | head -n 1)
		[ -n "$ep" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
}

# need SCRIPT PROG...: every PROG built in $BUILD, or the script ends counting one failure.
need() {
	_script=$1
	shift
	for _p in "$@"; do
		[ -x "$BUILD/$_p" ] && continue
		echo "$_script: $BUILD/$_p not built"
		echo "0 passed, 1 failed"
		exit 1
	done
}

# arf_server N SIZE [ARG...]: an ARF image of SIZE ($tmp/imgN) and an arfd serving it with
# ARG... (the cluster scripts); its pid in pid_N and added to $pids (the caller's cleanup
# kills those), its endpoint in ep_N.  A server that does not start ends the script.
arf_server() {
	_n=$1
	"$BUILD/arf" mkfs "$tmp/img$_n" --size "$2" >/dev/null || bad "mkfs img$_n"
	shift 2
	start_arfd "$tmp/arfd$_n.log" --arf "$tmp/img$_n" "$@"
	if [ -z "$ep" ]; then
		bad "arfd $_n did not start:"; cat "$tmp/arfd$_n.log"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	pids="$pids $pid"
	eval "pid_$_n=$pid ep_$_n=$ep"
}

# arf_cluster [--members] [--at IDX] N SIZE [ARG...]: the servers of a test cluster on
# loopback (the arf_cluster*.sh scripts): data servers IDX+1..IDX+N, each an image of SIZE,
# then the metadata server IDX (64M; IDX 0 unless given, another for a script's second
# cluster), every arfd with ARG... (a cluster key, a secret), each started by arf_server.
# --members: the metadata server is also given the data servers as --member, in order
# (delegation; arfd checks them against the description).  $M is the metadata server's
# endpoint, $data the data servers' in order, $cl_pids the cluster's arfd processes (the
# metadata server's last: $pid); the description is arf_cluster_init's to make.
arf_cluster() {
	_members= _at=0
	while :; do
		case $1 in
		--members) _members=1; shift ;;
		--at) _at=$2; shift 2 ;;
		*) break ;;
		esac
	done
	_nd=$1 _size=$2
	shift 2
	data= cl_pids=
	_k=1
	while [ "$_k" -le "$_nd" ]; do
		arf_server $((_at + _k)) "$_size" "$@"
		data="$data $ep"
		cl_pids="$cl_pids $pid"
		_k=$((_k + 1))
	done
	if [ -n "$_members" ]; then
		for _e in $data; do
			set -- "$@" --member "$_e"
		done
	fi
	arf_server "$_at" 64M "$@"
	M=$ep
	cl_pids="$cl_pids $pid"
}

# arf_cluster_init [OPTION...]: `arf cluster init --stripe-unit $U OPTION...` of the servers
# arf_cluster started (--layout flat: the scripts whose checks name the server a stripe is
# on), counted as the check "init"
arf_cluster_init() {
	run "$BUILD/arf" cluster init --stripe-unit "$U" "$@" "$M" $data
	check_rc "init" 0 $?
}

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# run_loop SECONDS CMD...: in the background ($loop), CMD again and again for SECONDS (at
# most 200 times), each run's number, exit status and output a line of $tmp/runs.txt, its
# milliseconds a line of $tmp/ms.txt, its stderr in $tmp/err.N (all emptied first)
run_loop() {
	_secs=$1
	shift
	: >"$tmp/runs.txt"
	: >"$tmp/ms.txt"
	rm -f "$tmp"/err.*
	(
		end=$(($(date +%s) + _secs))
		i=0
		while [ "$(date +%s)" -lt "$end" ] && [ "$i" -lt 200 ]; do
			i=$((i + 1))
			t0=$(date +%s%N)
			out=$(timeout "$T" "$@" 2>"$tmp/err.$i")
			echo "$i $? $out" >>"$tmp/runs.txt"
			ms_since "$t0" >>"$tmp/ms.txt"
		done
	) &
	loop=$!
}

# check_run_loop WHAT WANT MIN_MS: after run_loop ended: at least 4 runs, every one exited 0
# printing WANT, and (MIN_MS > 0) the longest took at least MIN_MS: it rode through WHAT;
# $n_ok, $n and $longest are left for a summary line
check_run_loop() {
	n=$(wc -l <"$tmp/runs.txt")
	n_ok=$(grep -c "^[0-9]* 0 $2\$" "$tmp/runs.txt")
	# every run ok; how many fit in the time is the machine's speed, not a property (one
	# run under ASan on a loaded machine): the spanning check below is the timing one
	if [ "$n" -ge 1 ] && [ "$n_ok" -eq "$n" ]; then
		ok
	else
		bad "arc run loop through $1: $n_ok of $n runs ok"
		grep -v "^[0-9]* 0 $2\$" "$tmp/runs.txt" | head -n 10 | sed 's/^/  | /'
		cat "$tmp"/err.* 2>/dev/null | head -n 10 | sed 's/^/  | /'
	fi
	longest=$(sort -n "$tmp/ms.txt" | tail -n 1)
	[ "$3" -gt 0 ] || return 0
	if [ "$longest" -ge "$3" ]; then ok; else bad "no run spanned $1 (longest $longest ms)"; fi
}
