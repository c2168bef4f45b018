# lib.sh: what the integration scripts share; they source it (. "$(dirname "$0")/../lib.sh").
# Counting checks, running a command with a time limit, and starting arfd on a port of its
# own choosing.  The sourcing script sets tmp (its temporary directory), BUILD and T (the
# seconds one command may take) and prints "$pass passed, $fail failed" at its end.

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

# start_arfd LOG ARG...: arfd --listen tcp:127.0.0.1:0 ARG... in the background, its log
# in LOG; $pid is the process, $ep the endpoint it logged ("" when it did not start within
# 10 s or exited).  LOG is emptied first: the shell may read it before arfd's own
# redirection truncates it, and must not find an earlier run's endpoint there.
start_arfd() {
	_log=$1
	shift
	: >"$_log"
	"$BUILD/arfd" --listen tcp:127.0.0.1:0 "$@" 2>"$_log" &
	pid=$!
	ep=
	for _ in $(seq 100); do
		ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$_log" | head -n 1)
		[ -n "$ep" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
}

# arf_server N SIZE: an ARF image of SIZE ($tmp/imgN) and an arfd serving it (the cluster
# scripts); its pid in pid_N and added to $pids (the caller's cleanup kills those), its
# endpoint in ep_N.  A server that does not start ends the script.
arf_server() {
	"$BUILD/arf" mkfs "$tmp/img$1" --size "$2" >/dev/null || bad "mkfs img$1"
	start_arfd "$tmp/arfd$1.log" --arf "$tmp/img$1"
	if [ -z "$ep" ]; then
		bad "arfd $1 did not start:"; cat "$tmp/arfd$1.log"
		echo "$pass passed, $fail failed"
		exit 1
	fi
	pids="$pids $pid"
	eval "pid_$1=$pid ep_$1=$ep"
}
