# arf_sets.sh: the patterns and option sets arf_grep.sh and arf_cluster_grep.sh run through
# arf grep against GNU grep; they source it and define check (ARGS...: one comparison).

pats='needle
foo
^$
^
ab*c
\(ab\)\1
x\{2,\}
[[:digit:]]
hello\|world
end$'
opts='-n
-c
-v -c
-l
-L
-q
-o -b
-i -n
-w
-x
-m 2 -n
-m 1 -A 2
-A 1 -n
-B 2 -n
-C 1
-a -n
-z -c
-z
-I -c
-H -h
--color=always -n
-v -n -m 5
-c -m 3
-b -n
-T -n
-o -n'

# check_sets: check OPTION-SET -e PATTERN for every pair; ARF_GREP_STRIDE=N runs every N-th
# pair only, shifted per pattern so that every option set still meets some pattern (make
# check-asan: the sanitized programs are several times slower).  With first_modes set,
# modes is first_modes for the first pattern's pairs and "server" for the others.
check_sets() {
	_stride=${ARF_GREP_STRIDE:-1}
	_k=0
	_ifs=$IFS
	IFS='
'
	for _p in $pats; do
		if [ -n "${first_modes:-}" ]; then
			[ "$_p" = needle ] && modes=$first_modes || modes=server
		fi
		for _o in $opts; do
			_k=$((_k + 1))
			[ $((_k % _stride)) -eq 0 ] || continue
			IFS=$_ifs
			# shellcheck disable=SC2086
			check $_o -e "$_p"
			IFS='
'
		done
		_k=$((_k + 1))
	done
	IFS=$_ifs
}
