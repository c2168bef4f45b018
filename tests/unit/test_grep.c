/* test_grep.c: unit tests of libgrep: the parser's messages (pinned to GNU grep 3.8's
 * wording), the DFA against the NFA simulation, leftmost-longest spans, back-references,
 * the required-literal extractor, and whole segments run in a VM on small inputs.
 * The differential test against GNU grep itself is tests/grep/diff.sh.
 * Prints "N passed, N failed" last; exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"
#include "vm.h"

static unsigned n_pass, n_fail;

#define CHECK(cond, ...)                                                                  \
	do {                                                                                  \
		if (cond) {                                                                       \
			n_pass++;                                                                     \
		} else {                                                                          \
			n_fail++;                                                                     \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
			printf(__VA_ARGS__);                                                          \
			printf("\n");                                                                 \
		}                                                                                 \
	} while (0)

static struct grep *compile(const char *pat, int syntax, const struct grep_opts *base,
                            char *err, size_t errlen, char *warn)
{
	struct grep_opts o = { 0 };
	if (base)
		o = *base;
	else
		o.max_count = -1, o.before = o.after = -1;
	o.syntax = syntax;
	size_t len = strlen(pat);
	const char *pats[1] = { pat };
	struct grep *g = NULL;
	grep_compile(pats, &len, 1, &o, &g, err, errlen, warn, 256);
	return g;
}

/* ---- parser messages ---- */
static void test_errors(void)
{
	static const struct { int syntax; const char *pat, *msg; } cases[] = {
		{ GREP_BASIC, "[", "Invalid regular expression" },
		{ GREP_BASIC, "[^", "Invalid regular expression" },
		{ GREP_BASIC, "[a", "Unmatched [, [^, [:, [., or [=" },
		{ GREP_BASIC, "[]", "Unmatched [, [^, [:, [., or [=" },
		{ GREP_BASIC, "[[:space]", "Unmatched [, [^, [:, [., or [=" },
		{ GREP_BASIC, "[[:foo:]]", "Invalid character class name" },
		{ GREP_BASIC, "[:space:]", "character class syntax is [[:space:]], not [:space:]" },
		{ GREP_BASIC, "[^:a:]", "character class syntax is [[:space:]], not [:space:]" },
		{ GREP_BASIC, "[z-a]", "Invalid range end" },
		{ GREP_BASIC, "[a-[:digit:]]", "Invalid range end" },
		{ GREP_BASIC, "[a-c-e]", "Invalid range end" },
		{ GREP_BASIC, "[a-c--]", "Invalid range end" },
		{ GREP_BASIC, "[a-c-", "Invalid range end" },
		{ GREP_EXTENDED, "[[.a.]-c-e]", "Invalid range end" },
		{ GREP_BASIC, "[[.xx.]]", "Invalid collation character" },
		{ GREP_BASIC, "[[=ab=]]", "Invalid collation character" },
		{ GREP_BASIC, "\\(", "Unmatched ( or \\(" },
		{ GREP_BASIC, "\\)", "Unmatched ) or \\)" },
		{ GREP_BASIC, "a\\{1", "Unmatched \\{" },
		{ GREP_BASIC, "a\\{1,", "Unmatched \\{" },
		{ GREP_BASIC, "a\\{x\\}", "Invalid content of \\{\\}" },
		{ GREP_BASIC, "a\\{2,1\\}", "Invalid content of \\{\\}" },
		{ GREP_BASIC, "a\\{32768\\}", "Regular expression too big" },
		{ GREP_BASIC, "a\\", "Trailing backslash" },
		{ GREP_BASIC, "\\1", "Invalid back reference" },
		{ GREP_BASIC, "\\(a\\)\\|\\1", "Invalid back reference" },
		{ GREP_EXTENDED, "(", "Unmatched ( or \\(" },
		{ GREP_EXTENDED, "a{2,1}", "Invalid content of \\{\\}" },
		{ GREP_EXTENDED, "a{}", "Invalid content of \\{\\}" },
		{ GREP_EXTENDED, "(a)\\2", "Invalid back reference" },
		{ GREP_EXTENDED, "a{99999}", "Regular expression too big" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256] = "", warn[256];
		struct grep *g = compile(cases[i].pat, cases[i].syntax, NULL, err, sizeof err, warn);
		CHECK(!g && !strcmp(err, cases[i].msg), "%s: expected \"%s\", got \"%s\"",
		      cases[i].pat, cases[i].msg, g ? "(compiled)" : err);
		grep_free(g);
	}
	/* nesting deeper than the parser takes: grep's message when its stack runs out (it says
	 * so past about 12 400 groups; the limit here is lower) */
	static char deep[30001];
	for (int syntax = GREP_BASIC; syntax <= GREP_EXTENDED; syntax++) {
		char err[256] = "", warn[256];
		memset(deep, '(', sizeof deep - 1);
		if (syntax == GREP_BASIC)
			for (size_t i = 0; i + 1 < sizeof deep - 1; i += 2)
				memcpy(deep + i, "\\(", 2);
		struct grep *g = compile(deep, syntax, NULL, err, sizeof err, warn);
		CHECK(!g && !strcmp(err, "stack overflow"), "30000 ( (syntax %d): got \"%s\"", syntax,
		      g ? "(compiled)" : err);
		grep_free(g);
	}
	/* accepted, some with grep's warning */
	static const struct { int syntax; const char *pat, *warn; } ok[] = {
		{ GREP_EXTENDED, "a{1", "" },
		{ GREP_EXTENDED, "a)", "" },
		{ GREP_EXTENDED, "+a", "warning: + at start of expression\n" },
		{ GREP_EXTENDED, "a|*b", "warning: * at start of expression\n" },
		{ GREP_EXTENDED, "{1}a", "warning: {...} at start of expression\n" },
		{ GREP_BASIC, "*a", "" },
		{ GREP_BASIC, "\\(*a\\)", "" },
		{ GREP_BASIC, "\\(\\(a\\)\\|b\\)\\2", "" },
		{ GREP_BASIC, "[]a]", "" },
		{ GREP_BASIC, "[::]", "" },
		{ GREP_BASIC, "[a-c-]", "" },
		{ GREP_BASIC, "[----]", "" },
		{ GREP_BASIC, "[%--]", "" },
		{ GREP_BASIC, "a\\{,\\}", "" },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char err[256] = "", warn[256] = "";
		struct grep *g = compile(ok[i].pat, ok[i].syntax, NULL, err, sizeof err, warn);
		CHECK(g && !strcmp(warn, ok[i].warn), "%s: %s / warning \"%s\"", ok[i].pat, err, warn);
		grep_free(g);
	}
}

/* ---- matching: DFA vs NFA vs backtracker, and spans ---- */
static void test_match(void)
{
	static const struct { int syntax; const char *pat, *line; int match; long s, e; } cases[] = {
		{ GREP_BASIC, "abc", "xxabcxx", 1, 2, 5 },
		{ GREP_BASIC, "a*", "bbb", 1, 0, 0 },
		{ GREP_EXTENDED, "a|ab|abc", "xabcd", 1, 1, 4 },          /* longest, not first */
		{ GREP_EXTENDED, "(a|ab)(c|bcd)", "abcd", 1, 0, 4 },
		{ GREP_BASIC, "^foo", "afoo", 0, -1, -1 },
		{ GREP_BASIC, "foo$", "foox", 0, -1, -1 },
		{ GREP_BASIC, "\\bfoo\\b", "a foo b", 1, 2, 5 },
		{ GREP_BASIC, "\\<ba", "foo_bar bar", 1, 8, 10 },
		{ GREP_BASIC, "r\\>", "bar_x", 0, -1, -1 },
		{ GREP_BASIC, "\\Bb", "ab b", 1, 1, 2 },
		{ GREP_BASIC, "x\\{2,3\\}", "xxxxx", 1, 0, 3 },
		{ GREP_EXTENDED, "[[:digit:]]+", "ab123c", 1, 2, 5 },
		{ GREP_BASIC, "a.c", "a-c", 1, 0, 3 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256], warn[256];
		struct grep *g = compile(cases[i].pat, cases[i].syntax, NULL, err, sizeof err, warn);
		CHECK(g != NULL, "%s: %s", cases[i].pat, err);
		if (!g)
			continue;
		const uint8_t *p = (const uint8_t *)cases[i].line;
		size_t n = strlen(cases[i].line);
		if (!g->exact)
			CHECK(dfa_line_matches(&g->dfa, p, n) == cases[i].match, "dfa %s", cases[i].pat);
		CHECK(nfa_line_matches(grep_nfa(g), p, n) == cases[i].match, "nfa %s", cases[i].pat);
		CHECK(lazy_line_matches(&g->lazy, grep_nfa(g), p, n) == cases[i].match, "lazy %s",
		      cases[i].pat);
		CHECK(bt_line_matches(&g->ast, p, n, 0) == cases[i].match, "bt %s", cases[i].pat);
		size_t s = 0, e = 0;
		int m = nfa_leftmost_longest(grep_nfa(g), p, n, 0, &s, &e);
		CHECK(m == cases[i].match && (!m || ((long)s == cases[i].s && (long)e == cases[i].e)),
		      "%s on \"%s\": %d [%zu,%zu)", cases[i].pat, cases[i].line, m, s, e);
		grep_free(g);
	}
	/* back-references take the exact path */
	char err[256], warn[256];
	struct grep *g = compile("\\([a-z]\\)\\1", GREP_BASIC, NULL, err, sizeof err, warn);
	CHECK(g && g->exact, "backref not exact");
	if (g) {
		CHECK(bt_line_matches(&g->ast, (const uint8_t *)"abcc", 4, 0) == 1, "cc");
		CHECK(bt_line_matches(&g->ast, (const uint8_t *)"abcd", 4, 0) == 0, "abcd");
		CHECK(bt_longest_at(&g->ast, (const uint8_t *)"xaab", 4, 1, 0) == 3, "aa at 1");
	}
	grep_free(g);
	/* a last, empty iteration sets the group (grep matches \(a*\)*\1b on "ab") */
	g = compile("\\(a*\\)*\\1b", GREP_BASIC, NULL, err, sizeof err, warn);
	CHECK(g && bt_line_matches(&g->ast, (const uint8_t *)"ab", 2, 0) == 1, "empty iteration");
	CHECK(g && bt_longest_at(&g->ast, (const uint8_t *)"xab", 3, 1, 0) == 3, "empty iteration span");
	grep_free(g);
	/* exponential for plain backtracking (2^28 partitions of the a's before the z, which
	 * the old 20M-step budget turned into "no match"): the memo answers exactly */
	g = compile("\\(a*\\)*\\1y", GREP_BASIC, NULL, err, sizeof err, warn);
	if (g) {
		const char *l = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaz aay";
		CHECK(bt_line_matches(&g->ast, (const uint8_t *)l, strlen(l), 0) == 1, "memo match");
		l = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaz";
		CHECK(bt_line_matches(&g->ast, (const uint8_t *)l, strlen(l), 0) == 0, "memo no match");
	}
	grep_free(g);
	/* past the budget: an error (the client says "memory exhausted"), not "no match" */
	g = compile("\\(a*\\)*\\(a*\\)*\\(a*\\)*\\1\\2\\3x*c\\1", GREP_BASIC, NULL, err,
	            sizeof err, warn);
	if (g) {
		char l[400];
		memset(l, 'a', 300);
		memcpy(l + 300, "baaaac", 6);
		CHECK(bt_line_matches(&g->ast, (const uint8_t *)l, 306, 0) == -2, "gives up");
	}
	grep_free(g);
	/* -i: backreference compares without case */
	struct grep_opts o = { .icase = 1, .max_count = -1, .before = -1, .after = -1 };
	g = compile("\\(a\\)\\1", GREP_BASIC, &o, err, sizeof err, warn);
	CHECK(g && bt_line_matches(&g->ast, (const uint8_t *)"aA", 2, 1) == 1, "icase backref");
	grep_free(g);
	/* a pattern whose DFA would explode takes the exact path instead of failing */
	g = compile("(a|b)*a(a|b){20}", GREP_EXTENDED, NULL, err, sizeof err, warn);
	CHECK(g && g->exact, "blow-up: %s", g ? "dfa built" : err);
	grep_free(g);
}

/* ---- input-sized depth: nothing recurses on the C stack as deep as a line or a pattern ---- */
static void test_deep(void)
{
	char err[256] = "", warn[256];
	/* the backtracker on a 300 000-byte line (recursing per byte, it overflowed the stack:
	 * pngrep -c '^\(.*\)\1$' on one long line died with SIGSEGV) */
	size_t n = 300000;
	uint8_t *line = malloc(n);
	struct grep *g = compile("^\\(.*\\)\\1$", GREP_BASIC, NULL, err, sizeof err, warn);
	if (line && g) {
		uint32_t x = 1;
		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			line[i] = (uint8_t)('0' + (x >> 16) % 10);
		}
		CHECK(bt_line_matches(&g->ast, line, n, 0) == 0, "long line, no match");
		memcpy(line + n / 2, line, n / 2);
		CHECK(bt_line_matches(&g->ast, line, n, 0) == 1, "long line, its two halves equal");
		CHECK(bt_longest_at(&g->ast, line, n, 0, 0) == (long)n, "longest: the whole line");
	}
	grep_free(g);
	/* \(a\)* iterates once per byte: one frame and one choice each */
	g = compile("\\(a\\)*\\1b", GREP_BASIC, NULL, err, sizeof err, warn);
	if (line && g) {
		memset(line, 'a', n);
		line[n - 1] = 'b';
		CHECK(bt_line_matches(&g->ast, line, n, 0) == 1, "a...ab");
		CHECK(bt_line_matches(&g->ast, line, n - 1, 0) == 0, "a...a");
	}
	grep_free(g);
	/* a fixed string of 1 000 000 bytes: a concatenation as deep as the pattern, walked by
	 * the NFA compiler and the literal extractor; and 100 000 patterns: an alternation as
	 * deep */
	size_t plen = 1000000;
	char *pat = malloc(plen + 1);
	if (pat) {
		for (size_t i = 0; i < plen; i++)
			pat[i] = (char)('a' + (i * 7 + i / 26) % 26);
		pat[plen] = '\0';
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = GREP_FIXED };
		const char *pats[1] = { pat };
		g = NULL;
		CHECK(grep_compile(pats, &plen, 1, &o, &g, err, sizeof err, warn, sizeof warn) == 0,
		      "1 MB fixed string: %s", err);
		uint8_t lit[256];
		int no_sets;
		CHECK(g && must_literal(&g->ast, 0, 0, lit, sizeof lit, NULL, 0, &no_sets) == 255 &&
		      memmem(pat, plen, lit, 255),
		      "its literal: 255 of its bytes");
		grep_free(g);
	}
	free(pat);
	size_t np = 100000;
	char (*words)[8] = malloc(np * sizeof *words);
	const char **pv = malloc(np * sizeof *pv);
	size_t *lens = malloc(np * sizeof *lens);
	if (words && pv && lens) {
		for (size_t i = 0; i < np; i++) {
			lens[i] = (size_t)snprintf(words[i], sizeof words[i], "w%zu", i);
			pv[i] = words[i];
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = GREP_BASIC };
		g = NULL;
		CHECK(grep_compile(pv, lens, np, &o, &g, err, sizeof err, warn, sizeof warn) == 0,
		      "100 000 patterns: %s", err);
		CHECK(g && g->lit_len == 1 && g->lit[0] == 'w', "their literal: w");
		CHECK(g && grep_nfa(g), "an NFA");
		if (g && grep_nfa(g))
			CHECK(nfa_line_matches(grep_nfa(g), (const uint8_t *)"x w99999 y", 10) == 1 &&
			      nfa_line_matches(grep_nfa(g), (const uint8_t *)"x w y", 5) == 0, "nfa");
		grep_free(g);
	}
	free(words), free(pv), free(lens);
	/* a hundred thousand nested repetitions (a*** ...) */
	char *stars = malloc(100002);
	if (stars) {
		stars[0] = 'a';
		memset(stars + 1, '*', 100000);
		stars[100001] = '\0';
		g = compile(stars, GREP_BASIC, NULL, err, sizeof err, warn);
		CHECK(g && dfa_line_matches(&g->dfa, (const uint8_t *)"xaay", 4) == 1, "a***: %s", err);
		grep_free(g);
	}
	free(stars);
	free(line);
}

/* ---- many patterns: shared kernels ---- */
static uint32_t rnd_state = 12345;
static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

/* The exact path's lazy DFA against the NFA simulation: sets past the scanning DFA's
 * limits (ids followed by ".*", which made 1,000 patterns take 105 s over 200,000 lines of a
 * log), -w/-x/-i, and a cache bound so low that it is emptied every few states. */
static void test_lazy(void)
{
	static const char *const tails[] = { ".*s=[45]", "[0-9]*/i.*t=1$", "\\>", "x*y",
	                                     "\\(a\\|b\\)*c", "" };
	size_t saved = lazy_max_bytes;
	int n_lines = 0, n_exact = 0;
	for (int round = 0; round < 24; round++) {
		static char buf[300][40];
		const char *pv[300];
		size_t lens[300];
		int np = round < 12 ? 300 : 1 + (int)rnd(40);
		for (int i = 0; i < np; i++) {
			snprintf(buf[i], sizeof buf[i], "u%03u%s", (unsigned)rnd(1000),
			         tails[rnd(sizeof tails / sizeof tails[0])]);
			pv[i] = buf[i];
			lens[i] = strlen(buf[i]);
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = GREP_BASIC, .icase = round % 4 == 1,
		                       .word = round % 5 == 2, .line = round % 7 == 3 };
		struct grep *g = NULL;
		char err[256], warn[256];
		if (grep_compile(pv, lens, (size_t)np, &o, &g, err, sizeof err, warn, sizeof warn)) {
			CHECK(0, "lazy round %d: %s", round, err);
			continue;
		}
		n_exact += g->exact;
		lazy_max_bytes = round % 2 ? 16u << 10 : saved;
		for (int l = 0; l < 300; l++) {
			char line[64];
			int n = snprintf(line, sizeof line, "%s u%03u%s s=%u t=%u%s", rnd(2) ? "GET" : "U",
			                 (unsigned)rnd(1000), rnd(2) ? "7/i" : "y", (unsigned)rnd(6),
			                 (unsigned)rnd(3), rnd(3) ? "" : " abac");
			int want = nfa_line_matches(grep_nfa(g), (const uint8_t *)line, (size_t)n);
			int got = lazy_line_matches(&g->lazy, grep_nfa(g), (const uint8_t *)line, (size_t)n);
			n_lines++;
			if (got != want) {
				CHECK(0, "lazy round %d, line \"%s\": lazy %d, nfa %d", round, line, got, want);
				break;
			}
		}
		lazy_max_bytes = saved;
		grep_free(g);
	}
	CHECK(n_lines == 24 * 300 && n_exact > 0, "%d lines compared, %d exact sets", n_lines,
	      n_exact);
}

static void test_many(void)
{
	/* the DFA built with shared kernels (own part + base) against the one built from whole
	 * kernels, on random lines, for random sets of small patterns in both syntaxes and
	 * with -w/-x/-i; both against the NFA */
	static const char *const atoms[] = { "a", "b", "c", "ab", "A", "_", "-", ".", "[ab]",
	                                     "c*", "^a", "b$", "\\<a", "c\\>", "\\(ab\\)\\{2\\}" };
	int n_sets = 0, n_lines = 0;
	for (int round = 0; round < 60; round++) {
		char buf[64][24];
		const char *pv[64];
		size_t lens[64];
		int np = 1 + (int)rnd(64), fixed = round % 3 == 0;
		for (int i = 0; i < np; i++) {
			buf[i][0] = '\0';
			int k = 1 + (int)rnd(3);
			for (int j = 0; j < k; j++)
				strcat(buf[i], fixed ? atoms[rnd(7)] : atoms[rnd(15)]);
			pv[i] = buf[i];
			lens[i] = strlen(buf[i]);
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = fixed ? GREP_FIXED : GREP_BASIC,
		                       .icase = round % 4 == 1, .word = round % 5 == 2,
		                       .line = round % 7 == 3 };
		struct grep *g = NULL;
		char err[256], warn[256];
		if (grep_compile(pv, lens, (size_t)np, &o, &g, err, sizeof err, warn, sizeof warn)) {
			CHECK(0, "round %d: %s", round, err);
			continue;
		}
		struct dfa sh, plain;
		int rs = dfa_build(&sh, grep_nfa(g), '\n', -1, DFA_SHARED);
		int rp = dfa_build(&plain, grep_nfa(g), '\n', -1, 0);
		if (rs == 0 && rp == 0) {
			n_sets++;
			for (int l = 0; l < 40; l++) {
				uint8_t line[16];
				size_t n = rnd(16);
				for (size_t i = 0; i < n; i++)
					line[i] = (uint8_t)"abcAB_- "[rnd(8)];
				int want = nfa_line_matches(grep_nfa(g), line, n);
				int a = dfa_line_matches(&sh, line, n), b = dfa_line_matches(&plain, line, n);
				int lz = lazy_line_matches(&g->lazy, grep_nfa(g), line, n);
				n_lines++;
				if (a != want || b != want || lz != want) {
					CHECK(0, "round %d, line \"%.*s\": shared %d, plain %d, lazy %d, nfa %d",
					      round, (int)n, line, a, b, lz, want);
					break;
				}
			}
		}
		dfa_free(&sh);
		dfa_free(&plain);
		grep_free(g);
	}
	CHECK(n_sets >= 50 && n_lines >= 2000, "%d sets, %d lines compared", n_sets, n_lines);

	/* 10 000 literals: a DFA in the segment (before: more than 4096 states, every line went
	 * to the NFA on the client, 300+ s over 200 000 lines), whose binary table shares the
	 * text table's rows */
	size_t np = 10000;
	char (*words)[12] = malloc(np * sizeof *words);
	const char **pv = malloc(np * sizeof *pv);
	size_t *lens = malloc(np * sizeof *lens);
	if (words && pv && lens) {
		for (size_t i = 0; i < np; i++) {
			lens[i] = (size_t)snprintf(words[i], sizeof words[i], "u%07u", rnd(10000000));
			pv[i] = words[i];
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = GREP_FIXED, .count = 1 };
		struct grep *g = NULL;
		char err[256], warn[256];
		CHECK(grep_compile(pv, lens, np, &o, &g, err, sizeof err, warn, sizeof warn) == 0,
		      "10 000 ids: %s", err);
		CHECK(g && !g->exact && g->have_bdfa && g->bdfa.rows_shared, "dfa, shared rows");
		/* the DFA came from the trie: no NFA until the client's matchers ask for it */
		CHECK(g && g->nfa_later && !g->nfa.s, "no NFA yet");
		if (g && !g->exact) {
			char line[64];
			int n = snprintf(line, sizeof line, "GET /items?id=%s HTTP", words[4321]);
			CHECK(dfa_line_matches(&g->dfa, (const uint8_t *)line, (size_t)n) == 1, "id 4321");
			n = snprintf(line, sizeof line, "GET /items?id=%.7s HTTP", words[4321]);
			CHECK(dfa_line_matches(&g->dfa, (const uint8_t *)line, (size_t)n) ==
			      nfa_line_matches(grep_nfa(g), (const uint8_t *)line, (size_t)n), "a prefix");
		}
		grep_free(g);
	}
	free(words), free(pv), free(lens);
}

/* The automaton of a set of strings made from its trie (dfa_build_literals) against the NFA,
 * on random lines: short strings over a small alphabet, so that one is often a prefix, a
 * suffix or inside another (where the trie stops and failure rows take over). */
static void test_strings(void)
{
	int n_built = 0, n_refused = 0, n_lines = 0;
	for (int round = 0; round < 200; round++) {
		char buf[48][8];
		const char *pv[48];
		size_t lens[48];
		int np = 1 + (int)rnd(48), basic = round % 4 == 3;
		for (int i = 0; i < np; i++) {
			int k = 1 + (int)rnd(5);
			for (int j = 0; j < k; j++)
				buf[i][j] = "abAB_-"[rnd(basic ? 6 : 5)];
			buf[i][k] = '\0';
			if (basic && rnd(8) == 0)
				strcpy(buf[i], "a[bc]");     /* a set of two classes: dfa_build's */
			pv[i] = buf[i];
			lens[i] = strlen(buf[i]);
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = basic ? GREP_BASIC : GREP_FIXED,
		                       .icase = round % 3 == 1 };
		struct grep *g = NULL;
		char err[256], warn[256];
		if (grep_compile(pv, lens, (size_t)np, &o, &g, err, sizeof err, warn, sizeof warn)) {
			CHECK(0, "round %d: %s", round, err);
			continue;
		}
		struct dfa d;
		int rc = dfa_build_literals(&d, &g->ast, '\n', -1);
		if (rc == 1) {
			n_refused++;
		} else if (rc != 0) {
			CHECK(0, "round %d: dfa_build_literals %d", round, rc);
		} else {
			n_built++;
			for (int l = 0; l < 60; l++) {
				uint8_t line[24];
				size_t n = rnd(24);
				for (size_t i = 0; i < n; i++)
					line[i] = (uint8_t)"abcAB_- "[rnd(8)];
				int want = nfa_line_matches(grep_nfa(g), line, n);
				int got = dfa_line_matches(&d, line, n);
				n_lines++;
				if (got != want) {
					CHECK(0, "round %d, line \"%.*s\": trie %d, nfa %d", round, (int)n,
					      line, got, want);
					break;
				}
			}
			dfa_free(&d);
		}
		grep_free(g);
	}
	CHECK(n_built >= 150 && n_refused >= 5 && n_lines >= 9000, "%d built, %d refused, %d lines",
	      n_built, n_refused, n_lines);
	/* strings that end where longer ones made before them went on cut those rows off: only
	 * the root and the all-match row are left */
	{
		const char *pv[4] = { "abcd", "xyz", "a", "x" };
		size_t lens[4] = { 4, 3, 1, 1 };
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = GREP_FIXED };
		struct grep *g = NULL;
		char err[256], warn[256];
		CHECK(grep_compile(pv, lens, 4, &o, &g, err, sizeof err, warn, sizeof warn) == 0, "%s",
		      err);
		struct dfa d;
		CHECK(g && dfa_build_literals(&d, &g->ast, '\n', -1) == 0 &&
		      d.n_rows == DFA_N_SPECIAL + 2, "rows cut off: %d rows", g ? d.n_rows : -1);
		if (g) {
			CHECK(dfa_line_matches(&d, (const uint8_t *)"bbxb", 4) == 1 &&
			      dfa_line_matches(&d, (const uint8_t *)"bcdyz", 5) == 0, "a or x");
			dfa_free(&d);
		}
		grep_free(g);
	}
	/* what is not a set of strings: anchors, -w, repetitions, an empty string */
	static const char *const not_strings[] = { "^ab", "a*", "a\\|", "a.b" };
	for (size_t i = 0; i < sizeof not_strings / sizeof not_strings[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = GREP_BASIC };
		const char *pv[1] = { not_strings[i] };
		size_t lens[1] = { strlen(not_strings[i]) };
		struct grep *g = NULL;
		char err[256], warn[256];
		CHECK(grep_compile(pv, lens, 1, &o, &g, err, sizeof err, warn, sizeof warn) == 0, "%s",
		      err);
		struct dfa d;
		CHECK(g && dfa_build_literals(&d, &g->ast, '\n', -1) == 1, "%s: not strings",
		      not_strings[i]);
		grep_free(g);
	}
}

/* ---- spans of a set of strings (strset) ---- */

/* g's pattern under -w's or -x's wrapper (as span_setup finds it). */
static int span_root(const struct grep *g)
{
	const struct ast *t = &g->ast;
	int x = t->root;
	if (g->o.word || g->o.line)
		x = t->n[t->n[x].b].a;
	return x;
}

/* The spans from the trie against the NFA's, from every start, on random lines: random sets
 * of short strings (prefixes of each other often), -i, -w, -x, and in BRE sets of several
 * classes (a[bc]: the trie branches). */
static void test_spans(void)
{
	int n_built = 0, n_spans = 0;
	for (int round = 0; round < 300; round++) {
		char buf[40][12];
		const char *pv[40];
		size_t lens[40];
		int np = 1 + (int)rnd(40), basic = round % 4 == 3;
		for (int i = 0; i < np; i++) {
			int k = 1 + (int)rnd(5);
			for (int j = 0; j < k; j++)
				buf[i][j] = "abAB_-"[rnd(basic ? 6 : 5)];
			buf[i][k] = '\0';
			if (basic && rnd(6) == 0)
				strcpy(buf[i], rnd(2) ? "a[bc]" : "[ab]b");
			pv[i] = buf[i];
			lens[i] = strlen(buf[i]);
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = basic ? GREP_BASIC : GREP_FIXED,
		                       .icase = round % 3 == 1, .word = round % 5 == 2,
		                       .line = round % 7 == 4 };
		struct grep *g = NULL;
		char err[256], warn[256];
		if (grep_compile(pv, lens, (size_t)np, &o, &g, err, sizeof err, warn, sizeof warn)) {
			CHECK(0, "round %d: %s", round, err);
			continue;
		}
		struct strset *ss = NULL;
		int rc = strset_build(&ss, &g->ast, span_root(g), o.word && !o.line, o.line);
		if (rc != 0) {
			CHECK(0, "round %d: strset_build %d", round, rc);
			grep_free(g);
			continue;
		}
		n_built++;
		for (int l = 0; l < 40; l++) {
			uint8_t line[24];
			size_t n = rnd(24);
			for (size_t i = 0; i < n; i++)
				line[i] = (uint8_t)"abcAB_- "[rnd(8)];
			/* whether the line holds a match: one Aho-Corasick pass (strset_line_matches) */
			int lm = strset_line_matches(ss, line, n), lw = nfa_line_matches(grep_nfa(g), line, n);
			CHECK(lm == lw, "round %d, line \"%.*s\": trie %d, nfa %d", round, (int)n, line,
			      lm, lw);
			for (size_t from = 0; from <= n; from++) {
				size_t s1 = 0, e1 = 0, s2 = 0, e2 = 0;
				int want = nfa_leftmost_longest(grep_nfa(g), line, n, from, &s1, &e1);
				int got = strset_leftmost_longest(ss, line, n, from, &s2, &e2);
				n_spans++;
				if (got != want || (got && (s1 != s2 || e1 != e2))) {
					CHECK(0, "round %d, line \"%.*s\" from %zu: trie %d [%zu,%zu), nfa %d "
					      "[%zu,%zu)", round, (int)n, line, from, got, s2, e2, want, s1, e1);
					l = 40;
					break;
				}
			}
		}
		strset_free(ss);
		grep_free(g);
	}
	CHECK(n_built == 300 && n_spans >= 100000, "%d built, %d spans", n_built, n_spans);

	/* table: patterns (one a line), -i/-w/-x, line, from, the span (-1: none) */
	static const struct { const char *pat; int icase, word, line; const char *text;
	                      int from, s, e; } cases[] = {
		{ "ab\nabcd\nbc", 0, 0, 0, "xabcdy", 0, 1, 5 },
		{ "ab\nabcd\nbc", 0, 0, 0, "xabcdy", 2, 2, 4 },
		{ "ab\nabc", 0, 1, 0, "abcd ab", 0, 5, 7 },
		{ "ab\nabc", 0, 1, 0, "abc", 0, 0, 3 },
		{ "ab\nabc", 0, 0, 1, "abc", 0, 0, 3 },
		{ "ab\nabc", 0, 0, 1, "abcd", 0, -1, -1 },
		{ "ab\nXY", 1, 0, 0, "zzxyAB", 0, 2, 4 },
		{ "ab\nXY", 1, 0, 0, "zzxyAB", 3, 4, 6 },
		{ "b\nab", 0, 0, 0, "aab", 0, 1, 3 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *pv[8];
		size_t lens[8], np = 0;
		for (const char *q = cases[i].pat; *q; np++) {
			size_t k = strcspn(q, "\n");
			pv[np] = q;
			lens[np] = k;
			q += k + (q[k] != '\0');
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = GREP_FIXED, .icase = cases[i].icase,
		                       .word = cases[i].word, .line = cases[i].line };
		struct grep *g = NULL;
		char err[256], warn[256];
		CHECK(grep_compile(pv, lens, np, &o, &g, err, sizeof err, warn, sizeof warn) == 0,
		      "%s", err);
		struct strset *ss = NULL;
		size_t s = 0, e = 0;
		const uint8_t *text = (const uint8_t *)cases[i].text;
		CHECK(g && strset_build(&ss, &g->ast, span_root(g), cases[i].word, cases[i].line) == 0,
		      "case %zu: built", i);
		int got = ss && strset_leftmost_longest(ss, text, strlen(cases[i].text),
		                                        (size_t)cases[i].from, &s, &e);
		CHECK(cases[i].s < 0 ? !got : got && (int)s == cases[i].s && (int)e == cases[i].e,
		      "case %zu: %d [%zu,%zu)", i, got, s, e);
		strset_free(ss);
		grep_free(g);
	}

	/* not a set of strings (the NFA keeps them): repetitions, anchors, an empty string,
	 * back-references, any byte */
	static const char *const not_strings[] = { "a*", "^ab", "a\\|", "\\(a\\)\\1", "a.b" };
	for (size_t i = 0; i < sizeof not_strings / sizeof not_strings[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = GREP_BASIC };
		const char *pv[1] = { not_strings[i] };
		size_t lens[1] = { strlen(not_strings[i]) };
		struct grep *g = NULL;
		char err[256], warn[256];
		CHECK(grep_compile(pv, lens, 1, &o, &g, err, sizeof err, warn, sizeof warn) == 0, "%s",
		      err);
		struct strset *ss = NULL;
		int rc = g ? strset_build(&ss, &g->ast, g->ast.root, 0, 0) : -3;
		/* a.b: its 256-byte set is fine for the trie; the others are not strings */
		CHECK(i == 4 ? rc == 0 : rc == 1, "%s: rc %d", not_strings[i], rc);
		strset_free(ss);
		grep_free(g);
	}

	/* a 60,000-byte string and 20,000 others: built without recursion */
	{
		size_t big = 60000, np = 20001;
		char *a = malloc(big + np * 6);
		const char **pv = malloc(np * sizeof *pv);
		size_t *lens = malloc(np * sizeof *lens);
		CHECK(a && pv && lens, "malloc");
		if (a && pv && lens) {
			memset(a, 'a', big);
			pv[0] = a;
			lens[0] = big;
			char *q = a + big;
			for (size_t i = 1; i < np; i++) {
				lens[i] = (size_t)sprintf(q, "%05zu", i);
				pv[i] = q;
				q += lens[i] + 1;
			}
			struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
			                       .syntax = GREP_FIXED };
			struct grep *g = NULL;
			char err[256], warn[256];
			CHECK(grep_compile(pv, lens, np, &o, &g, err, sizeof err, warn, sizeof warn) == 0,
			      "%s", err);
			struct strset *ss = NULL;
			CHECK(g && strset_build(&ss, &g->ast, g->ast.root, 0, 0) == 0, "deep: built");
			size_t s = 0, e = 0;
			CHECK(ss && strset_leftmost_longest(ss, (const uint8_t *)"x123456", 7, 0, &s, &e) &&
			      s == 1 && e == 6, "deep: [%zu,%zu)", s, e);
			CHECK(ss && strset_leftmost_longest(ss, (const uint8_t *)a, big, 0, &s, &e) &&
			      s == 0 && e == big, "deep: the long one [%zu,%zu)", s, e);
			strset_free(ss);
			grep_free(g);
		}
		free(a), free(pv), free(lens);
	}
}

/* ---- the required literal ---- */
static void test_literal(void)
{
	static const struct { int syntax, icase; const char *pat, *lit; } cases[] = {
		{ GREP_BASIC, 0, "hello", "hello" },
		{ GREP_BASIC, 0, "foo.*barbaz", "barbaz" },
		{ GREP_BASIC, 0, "a[bc]defg", "defg" },
		{ GREP_EXTENDED, 0, "(abc|abd)x", "ab" },
		{ GREP_EXTENDED, 0, "x(abc)+y", "xabc" },
		{ GREP_EXTENDED, 0, "x(abc)*y", "x" },
		{ GREP_EXTENDED, 0, "foo|bar", "" },
		/* -i: letters folded to lower case (findsi searches the literal) */
		{ GREP_BASIC, 1, "abc", "abc" },
		{ GREP_BASIC, 1, "GNU General", "gnu general" },
		{ GREP_BASIC, 1, "a-12-B", "a-12-b" },
		{ GREP_EXTENDED, 1, "(Abc|aBd)x", "ab" },
		{ GREP_BASIC, 1, "[ab]cd", "cd" },
		{ GREP_BASIC, 1, "x[[:upper:]]", "x" },
		{ GREP_BASIC, 1, "@[`]", "@`" },
		{ GREP_BASIC, 0, "[aA]bc", "bc" },
		{ GREP_BASIC, 0, "^\\<abc\\>$", "abc" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ast t = { 0 };
		char err[256];
		t.root = grep_parse(&t, cases[i].pat, strlen(cases[i].pat), cases[i].syntax,
		                    cases[i].icase, err, sizeof err, NULL, 0);
		uint8_t buf[256];
		int no_sets;
		size_t n = t.root >= 0 ? must_literal(&t, cases[i].icase, 0, buf, sizeof buf, NULL, 0,
		                                         &no_sets) : 0;
		CHECK(n == strlen(cases[i].lit) && !memcmp(buf, cases[i].lit, n), "%s: \"%.*s\"",
		      cases[i].pat, (int)n, (const char *)buf);
		ast_free(&t);
	}
	/* lit_exact: the pattern is its literal and nothing else */
	static const struct { int syntax, icase, word; const char *pat; int exact; } ex[] = {
		{ GREP_BASIC, 0, 0, "hello", 1 },
		{ GREP_BASIC, 0, 0, "a.b", 0 },
		{ GREP_BASIC, 0, 0, "hel*lo", 0 },
		{ GREP_BASIC, 0, 0, "^hello", 0 },
		{ GREP_BASIC, 0, 0, "hello$", 0 },
		{ GREP_BASIC, 0, 0, "\\(hello\\)", 0 },
		{ GREP_EXTENDED, 0, 0, "foo|bar", 0 },
		{ GREP_BASIC, 1, 0, "hello", 0 },
		{ GREP_BASIC, 0, 1, "hello", 0 },
		{ GREP_BASIC, 0, 0, "[h]ello", 1 },       /* a one-byte bracket is that byte */
		{ GREP_FIXED, 0, 0, "a.b*", 1 },
	};
	for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = ex[i].syntax,
		                       .icase = ex[i].icase, .word = ex[i].word };
		char err[256], warn[256];
		struct grep *g = compile(ex[i].pat, ex[i].syntax, &o, err, sizeof err, warn);
		CHECK(g && g->lit_exact == ex[i].exact, "lit_exact of %s: %d, want %d", ex[i].pat,
		      g ? g->lit_exact : -1, ex[i].exact);
		grep_free(g);
	}
}

/* ---- whole segments in a VM ---- */
static int64_t run(struct grep *g, const char *data, size_t len, uint8_t *out, size_t cap,
                   size_t *out_len)
{
	struct vm *vm = vm_new();
	struct vm_prog *p = NULL;
	char err[256];
	size_t seg_len;
	const uint8_t *seg = grep_segment(g, &seg_len);
	int64_t v = -1;
	if (vm_bind_region(vm, "data", (void *)data, len, ISA_ACC_RO) == 0 &&
	    vm_load(vm, seg, seg_len, &p, err, sizeof err) == 0) {
		unsigned na;
		struct vm_run_opts ro = { .out = out, .out_cap = cap, .fuel = GREP_FUEL(len) };
		struct vm_result res;
		if (vm_run(p, (unsigned)vm_prog_entry(p, "grep", &na), NULL, 0, &ro, &res) == 0) {
			v = res.value;
			*out_len = res.out_len;
		}
	} else {
		printf("load: %s\n", err);
	}
	vm_prog_free(p);
	vm_free(vm);
	return v;
}

static void test_segment(void)
{
	static const struct { const char *pat; int syntax; const char *opts; const char *data;
	                      size_t len; const char *want; } cases[] = {
		{ "foo", GREP_BASIC, "", "a\nfoo\nbar\nxfoo", 0, "foo\nxfoo\n" },
		{ "foo", GREP_BASIC, "n", "a\nfoo\nbar\nxfoo", 0, "2:foo\n4:xfoo\n" },
		{ "foo", GREP_BASIC, "v", "a\nfoo\nbar\nxfoo", 0, "a\nbar\n" },
		{ "foo", GREP_BASIC, "c", "a\nfoo\nbar\nxfoo", 0, "2\n" },
		{ "o", GREP_BASIC, "A", "o\na\nb\no\nc", 0, "o\na\n--\no\nc\n" },
		{ "b", GREP_BASIC, "B", "a\nb\nc\nd\nb", 0, "a\nb\n--\nd\nb\n" },
		{ "^$", GREP_BASIC, "n", "\n\nx\n", 0, "1:\n2:\n" },
		{ "x", GREP_BASIC, "", "", 0, "" },
		{ "a", GREP_BASIC, "", "a\0b\n", 4, "" },     /* binary: the message goes to stderr */
		{ "b", GREP_BASIC, "c", "a\0b\nb\n", 6, "2\n" },
		{ "\\(a\\)\\1", GREP_BASIC, "n", "xaa\nab\naa", 0, "1:xaa\n3:aa\n" },
		/* a pattern that is its literal (the scan takes a found literal as a match, no
		 * DFA): dense and sparse lines, the last line without a terminator, a literal
		 * twice in a line, at a line's first and last byte, -c -v counting the rest */
		{ "ab", GREP_BASIC, "c", "ab\nxab\nabab\nq\nxxab", 0, "4\n" },
		{ "ab", GREP_BASIC, "n", "q\nq\nxab\nq\nab", 0, "3:xab\n5:ab\n" },
		{ "ab", GREP_BASIC, "cv", "ab\nq\nxab\nq\nr", 0, "3\n" },
		{ "ab", GREP_BASIC, "", "a\nb\nab\n", 0, "ab\n" },
		{ "ab", GREP_BASIC, "A", "ab\nq\nr\nab", 0, "ab\nq\n--\nab\n" },
		{ "a.b", GREP_BASIC, "c", "a.b\naxb\na.c", 0, "2\n" },        /* not a literal */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1 };
		o.line_number = strchr(cases[i].opts, 'n') != NULL;
		o.invert = strchr(cases[i].opts, 'v') != NULL;
		o.count = strchr(cases[i].opts, 'c') != NULL;
		if (strchr(cases[i].opts, 'A'))
			o.after = 1;
		if (strchr(cases[i].opts, 'B'))
			o.before = 1;
		char err[256], warn[256];
		struct grep *g = compile(cases[i].pat, cases[i].syntax, &o, err, sizeof err, warn);
		CHECK(g != NULL, "%s: %s", cases[i].pat, err);
		if (!g)
			continue;
		uint8_t out[4096];
		size_t out_len = 0;
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].data);  /* 0: a C string */
		int64_t v = run(g, cases[i].data, len, out, sizeof out, &out_len);
		CHECK(v >= 0, "%s: run failed", cases[i].pat);
		char *text = NULL, *etext = NULL;
		size_t text_len = 0, elen = 0;
		FILE *f = open_memstream(&text, &text_len), *ef = open_memstream(&etext, &elen);
		struct grep_file_result fr;
		CHECK(grep_format(g, "grep", "f", v, out, out_len, f, ef, &fr) == 0, "format");
		fclose(f);
		fclose(ef);
		CHECK(text_len == strlen(cases[i].want) && !memcmp(text, cases[i].want, text_len),
		      "%s [%s]:\n--- want\n%s--- got\n%s", cases[i].pat, cases[i].opts,
		      cases[i].want, text);
		free(text);
		free(etext);
		grep_free(g);
	}
}

/* One run of g's segment over data[0..len) and the output grep_format prints ("" when the
 * run failed: the caller's comparison then fails). */
static char *run_format(struct grep *g, const char *data, size_t len)
{
	static uint8_t out[1 << 16];
	size_t out_len = 0;
	int64_t v = run(g, data, len, out, sizeof out, &out_len);
	char *text = NULL, *etext = NULL;
	size_t text_len = 0, elen = 0;
	FILE *f = open_memstream(&text, &text_len), *ef = open_memstream(&etext, &elen);
	struct grep_file_result fr;
	if (v >= 0)
		grep_format(g, "grep", "f", v, out, out_len, f, ef, &fr);
	fclose(f);
	fclose(ef);
	free(etext);
	return text;
}

/* -w and -x over a set of strings (the set's own DFA finds candidate lines, its trie decides
 * on them) against the NFA with the assertions, line by line, and -c against the DFA of
 * that NFA (context turns the set's path off); random sets of words with non-word bytes,
 * overlapping, prefixes of each other, the empty string now and then, -i, and a few of
 * 3,000 strings; binary data (NULs: each piece between them is a line) for -c. */
static void test_bounded_sets(void)
{
	int n_set_path = 0, n_lines = 0;
	char (*buf)[8] = malloc(3000 * sizeof *buf);
	const char **pv = malloc(3000 * sizeof *pv);
	size_t *lens = malloc(3000 * sizeof *lens);
	CHECK(buf && pv && lens, "malloc");
	for (int round = 0; buf && pv && lens && round < 200; round++) {
		int np = round % 20 == 19 ? 3000 : 1 + (int)rnd(40), basic = round % 4 == 3;
		int binary = round % 5 == 4;
		for (int i = 0; i < np; i++) {
			int k = rnd(30) == 0 ? 0 : 1 + (int)rnd(np > 100 ? 6 : 4);
			for (int j = 0; j < k; j++)
				buf[i][j] = "abAB_- ."[rnd(basic ? 7 : 8)];
			pv[i] = buf[i];
			lens[i] = (size_t)k;
		}
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
		                       .syntax = basic ? GREP_BASIC : GREP_FIXED,
		                       .icase = round % 3 == 1, .word = round % 2 == 0,
		                       .line = round % 2 == 1 };
		char data[40 * 24];
		size_t len = 0;
		for (int l = 0; l < 40; l++) {
			size_t n = rnd(22);
			for (size_t i = 0; i < n; i++)
				data[len++] = binary && rnd(15) == 0 ? '\0' : "abcAB_-. x"[rnd(10)];
			data[len++] = '\n';
		}
		struct grep *g = NULL, *gc = NULL, *gold = NULL;
		char err[256], warn[256];
		int rc = grep_compile(pv, lens, (size_t)np, &o, &g, err, sizeof err, warn, sizeof warn);
		o.count = 1;
		rc |= grep_compile(pv, lens, (size_t)np, &o, &gc, err, sizeof err, warn, sizeof warn);
		o.after = 1;
		rc |= grep_compile(pv, lens, (size_t)np, &o, &gold, err, sizeof err, warn, sizeof warn);
		CHECK(rc == 0, "round %d: %s", round, err);
		if (rc == 0) {
			/* -w: candidates, the trie decides; -x: the trie's DFA is the answer */
			n_set_path += (g->exact && g->span_set != NULL) || (o.line && g->nfa_later);
			char *want_c = run_format(gold, data, len), *got_c = run_format(gc, data, len);
			CHECK(want_c && got_c && strcmp(want_c, got_c) == 0,
			      "round %d (%s%s%s, %d strings): -c %s, with context (the DFA) %s", round,
			      o.word ? "-w" : "-x", o.icase ? " -i" : "", binary ? " binary" : "", np,
			      got_c, want_c);
			free(want_c), free(got_c);
		}
		if (rc == 0 && !binary) {
			/* the lines the NFA selects, in order */
			char want[sizeof data + 1];
			size_t wl = 0;
			for (size_t a = 0; a < len;) {
				size_t e = a;
				while (data[e] != '\n')
					e++;
				if (nfa_line_matches(grep_nfa(g), (const uint8_t *)data + a, e - a)) {
					memcpy(want + wl, data + a, e - a + 1);
					wl += e - a + 1;
				}
				n_lines++;
				a = e + 1;
			}
			want[wl] = '\0';
			char *got = run_format(g, data, len);
			CHECK(got && strcmp(got, want) == 0, "round %d (%s%s, %d strings):\n--- nfa\n%s"
			      "--- got\n%s", round, o.word ? "-w" : "-x", o.icase ? " -i" : "", np, want,
			      got ? got : "");
			free(got);
		}
		grep_free(g), grep_free(gc), grep_free(gold);
	}
	/* 100,000 ids and one string of 65,536 a's (bench/grepscan's ids100000big): past the
	 * segment's DFA (dfa_build_literals 2), every line to the client, whose trie decides;
	 * plain, -w, -x */
	{
		size_t np = 100001, big = 65536;
		char *a = malloc(big + np * 9);
		const char **ids = malloc(np * sizeof *ids);
		size_t *idl = malloc(np * sizeof *idl);
		CHECK(a && ids && idl, "malloc");
		for (int mode = 0; a && ids && idl && mode < 3; mode++) {
			char *q = a;
			for (size_t i = 0; i < np - 1; i++) {
				idl[i] = (size_t)sprintf(q, "u%07u", (unsigned)((i * 7919 + 13) % 10000000));
				ids[i] = q;
				q += idl[i] + 1;
			}
			memset(q, 'a', big);
			ids[np - 1] = q;
			idl[np - 1] = big;
			struct grep_opts o = { .max_count = -1, .before = -1, .after = -1,
			                       .syntax = GREP_FIXED, .count = 1, .word = mode == 1,
			                       .line = mode == 2 };
			struct grep *g = NULL;
			char err[256], warn[256];
			int rc = grep_compile(ids, idl, np, &o, &g, err, sizeof err, warn, sizeof warn);
			CHECK(rc == 0, "ids100000big: %s", err);
			if (rc != 0)
				continue;
			if (mode == 0)
				CHECK(dfa_build_literals(&(struct dfa){ 0 }, &g->ast, '\n', -1) == 2,
				      "ids100000big: not past the limits");
			CHECK(g->exact && g->dfa.n_rows <= DFA_N_SPECIAL + 1,
			      "ids100000big mode %d: every line to the client", mode);
			/* ids[5] is u0039608: alone (all modes), inside a word (none but plain), after
			 * '=' (-w), and a line of other ids' digits */
			static const char data[] = "u0039608\nxu0039608y\nid=u0039608 x\nu003960\n";
			static const char *const want[] = { "3\n", "2\n", "1\n" };
			char *got = run_format(g, data, sizeof data - 1);
			CHECK(got && strcmp(got, want[mode]) == 0, "ids100000big mode %d: %s", mode,
			      got ? got : "");
			free(got);
			grep_free(g);
		}
		free(a), free(ids), free(idl);
	}
	/* the set's path is taken unless the empty string is in the set or (-w) one string
	 * (SPAN_FIXED) */
	CHECK(n_set_path >= 80 && n_lines >= 4000, "%d rounds on the set's path, %d lines",
	      n_set_path, n_lines);
	free(buf), free(pv), free(lens);
}

int main(void)
{
	test_errors();
	test_match();
	test_deep();
	test_many();
	test_strings();
	test_spans();
	test_lazy();
	test_literal();
	test_segment();
	test_bounded_sets();
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
