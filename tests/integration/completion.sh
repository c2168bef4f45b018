#!/bin/sh
# completion.sh: the bash completions of arf and arc (arf/arf.bash-completion,
# client/arc.bash-completion), loaded after bash-completion as bash loads them: complete -p
# names the function, and the function called with COMP_WORDS set as bash sets them offers
# the subcommands, the options, .pno files, directories, -o mount options and the ARF
# mounts.  Without bash or bash-completion it says so and counts nothing.
#
#   sh tests/integration/completion.sh        prints "N passed, N failed" last

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bc=/usr/share/bash-completion/bash_completion
if ! command -v bash >/dev/null 2>&1 || [ ! -f "$bc" ]; then
	echo "completion.sh: skipped: bash or $bc missing (scripts/deps.sh installs bash-completion)"
	echo "0 passed, 0 failed"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/completion.sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/dir" "$tmp/dir/sub"
: >"$tmp/dir/seg.pno"
: >"$tmp/dir/notes.txt"

cd "$tmp/dir" && timeout 30 bash --norc --noprofile -c '
pass=0 fail=0
. "$1"
. "$2/arf/arf.bash-completion"
. "$2/client/arc.bash-completion"

# want NAME "COMMAND LINE" "EXPECTED": complete the last word of the line (a trailing space
# means a new empty word) and compare the sorted offers
want() {
	local line=$2
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMPREPLY=()
	local fn
	fn=$(complete -p "${COMP_WORDS[0]}" 2>/dev/null | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
	"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
	local got
	got=$(printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " ")
	if [[ $got == "$3 " ]]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $1: \"$line\" offers \"$got\", want \"$3 \""
	fi
}

for p in arf arc; do
	if [[ $(complete -p $p 2>/dev/null) == "complete -F _$p $p" ]]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "FAIL: complete -p $p: $(complete -p $p 2>&1)"
	fi
done

want "arf subcommands" "arf " "--help cluster export fsck grep import mkfs mount umount"
want "arf cluster" "arf cluster " "cat init move show"
want "arf cluster init --" "arf cluster init --" "--layout --stripe-unit"
want "arf m" "arf m" "mkfs mount"
want "arf mkfs options" "arf mkfs img --" "--inodes --size"
want "arf fsck --r" "arf fsck --r" "--repair"
want "arf mount endpoint" "arf mount t" "tcp:"
want "arf mount directory" "arf mount tcp:h:1 " "sub"
want "arf mount flags" "arf mount -" "-f -o -s"
want "arf mount -o" "arf mount tcp:h:1 d -o allow_other,w" "allow_other,writeback"
want "arf import source" "arf import -j 4 " "sub"
want "arf import --" "arf import --" "--stripe-unit"
want "arf import --stripe-unit" "arf import --stripe-unit " "1M 4K 4M 64K"
want "arf export -" "arf export -" "-j"
want "arf import destination" "arf import sub " "rdma: tcp: udp:"
want "arf export destination" "arf export tcp:h:1:/x " "sub"
want "arf grep --loc" "arf grep --loc" "--local"
want "arf grep files" "arf grep -n x n" "notes.txt"
want "arc commands" "arc " "--help install read regions run stats write"
want "arc r" "arc r" "read regions run"
want "arc endpoint" "arc run " "rdma: tcp: udp:"
want "arc run segment" "arc run tcp:h:1 " "seg.pno sub"
want "arc run options" "arc run tcp:h:1 seg.pno --a" "--admin-secret --arg --args-file --args-str"
want "arc run --args-file" "arc run tcp:h:1 seg.pno --args-file n" "notes.txt"
want "arc write options" "arc write tcp:h:1 mem 0 --" "--admin-secret --data --file --outage --secret --timeout --tls-ca"
want "arc regions options" "arc regions tcp:h:1 --" "--admin-secret --outage --secret --timeout --tls-ca"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
' completion "$bc" "$src"
