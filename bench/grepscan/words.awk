# words.awk: the grep benchmarks' text (run.sh, cpu_ab.sh, startup.sh): n lines of 5-14
# words drawn from a fixed list, "needle42 LINE" added to about one line in 1200; seeded, so
# every run and every script makes the same file.   awk -v n=LINES -f words.awk
BEGIN {
	split("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " \
	      "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud " \
	      "exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure " \
	      "in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint " \
	      "occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est " \
	      "laborum quick brown fox jumps over lazy dog needle haystack", w, " ")
	nw = length(w); srand(42)
	for (i = 0; i < n; i++) {
		k = 5 + int(rand() * 10); s = ""
		for (j = 0; j < k; j++) s = s (j ? " " : "") w[1 + int(rand() * nw)]
		if (rand() < 1 / 1200) s = s " needle42 " i
		print s
	}
}
