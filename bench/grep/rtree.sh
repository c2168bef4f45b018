#!/usr/bin/env bash
# rtree.sh: arf grep -r over a tree of many files on loopback (the per-file cost), two builds
# and GNU grep -r in the same run.  One arfd (of the second build) serves an image holding a
# copy of TREE (default /usr/include); each pattern runs REPS times, GNU grep -r on the local
# directory first, then arf grep -r of each build; outputs are compared (sorted, names made
# relative).  Ratios are X / GNU grep of the same repetition.
#
#   [RTREE_SIZE=400M] bash bench/grep/rtree.sh BEFORE_BUILD AFTER_BUILD [TREE [REPS]]
#   (RTREE_SIZE: the image, enough for TREE)
set -u
BEFORE=$(cd "$1" && pwd) || exit 2
AFTER=$(cd "$2" && pwd) || exit 2
TREE=${3:-/usr/include}
REPS=${4:-3}
export LC_ALL=C
T=$(mktemp -d "${TMPDIR:-/tmp}/rtree.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT
cd "$AFTER/.." || exit 2                     # arf finds its segments under build/arfseg
"$AFTER/arf" mkfs "$T/img" --size "${RTREE_SIZE:-400M}" >/dev/null || exit 1
"$AFTER/arfd" --listen tcp:127.0.0.1:0 --arf "$T/img" 2>"$T/arfd.log" &
pid=$!
ep=
for _ in $(seq 100); do
	ep=$(sed -n 's/.*info: endpoint \(tcp:[^ ]*\).*/\1/p' "$T/arfd.log" | head -n 1)
	[ -n "$ep" ] && break
	sleep 0.1
done
[ -n "$ep" ] || { cat "$T/arfd.log"; exit 1; }
"$AFTER/arf" import --no-progress "$TREE" "$ep:/" >"$T/import.log" 2>&1 || { cat "$T/import.log"; exit 1; }
echo "# rtree.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cpus, tree $TREE: $(find "$TREE" -type f | wc -l) files, $(du -sh "$TREE" | cut -f1); before $BEFORE, after $AFTER"
ns() { date +%s%N; }
for row in lit icase count; do
	case $row in
	lit) a=(-r 'Free Software Foundation') ;;
	icase) a=(-r -i 'gnu general public') ;;
	count) a=(-r -c -w the) ;;
	esac
	for rep in $(seq "$REPS"); do
		s0=$(ns); (cd "$TREE" && /usr/bin/grep "${a[@]}" . | sed 's#^\./##' | sort >"$T/g.out"); s1=$(ns)
		"$BEFORE/arf" grep "${a[@]}" "$ep:/" | sed "s#^$ep:/##" | sort >"$T/b.out"; s2=$(ns)
		"$AFTER/arf" grep "${a[@]}" "$ep:/" | sed "s#^$ep:/##" | sort >"$T/a.out"; s3=$(ns)
		awk -v p="${a[*]}" -v r="$rep" -v g=$((s1 - s0)) -v b=$((s2 - s1)) -v f=$((s3 - s2)) \
		    -v cb="$(cmp -s "$T/g.out" "$T/b.out" && echo ok || echo MISMATCH)" \
		    -v ca="$(cmp -s "$T/g.out" "$T/a.out" && echo ok || echo MISMATCH)" \
		    'BEGIN { printf "%-28s rep %d: grep %.3f s  before %.3f s  after %.3f s | before/grep %.2f  after/grep %.2f  %s %s\n", p, r, g / 1e9, b / 1e9, f / 1e9, b / g, f / g, cb, ca }'
	done
done
