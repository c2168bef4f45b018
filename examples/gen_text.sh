#!/bin/sh
# gen_text.sh: the deterministic 20000-line text the example scripts search.  Line i is its
# number and four words drawn with a small LCG (the ZX81's), in integers small enough to be
# exact in any awk, so the text is the same on every machine.
awk 'BEGIN {
	n = split("quick brown fox jumps over the lazy dog", w, " ")
	x = 1
	for (i = 1; i <= 20000; i++) {
		printf "%d:", i
		for (k = 0; k < 4; k++) {
			x = (x * 75 + 74) % 65537
			printf " %s", w[x % n + 1]
		}
		printf "\n"
	}
}'
