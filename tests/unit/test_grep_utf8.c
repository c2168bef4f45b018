/* test_grep_utf8.c: unit tests of libgrep in UTF-8 locales (grep/utf8.c): the compiler of
 * code point ranges into UTF-8 byte sequences (a table of boundaries, then every code point
 * against random ranges), the size of the automata of large sets, and patterns matched by the
 * DFA, the NFA and the backtracker on characters, encoding errors and word boundaries.
 * Runs in C.UTF-8 (skipped, "0 passed, 0 failed", where it is missing).
 * Prints "N passed, N failed" last; exits 1 on any failure.
 */
#include <locale.h>
#include <wctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

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

/* The sequences as text: "[E1-EC][80-BF][80-BF] ..." (a single byte as [E0]). */
static void show(const struct utf8_seq *q, int n, char *buf, size_t cap)
{
	size_t l = 0;
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < q[i].n && l < cap; k++) {
			if (q[i].lo[k] == q[i].hi[k])
				l += (size_t)snprintf(buf + l, cap - l, "[%02X]", q[i].lo[k]);
			else
				l += (size_t)snprintf(buf + l, cap - l, "[%02X-%02X]", q[i].lo[k], q[i].hi[k]);
		}
		if (i + 1 < n && l < cap)
			l += (size_t)snprintf(buf + l, cap - l, " ");
	}
}

static void test_sequences(void)
{
	static const struct { uint32_t lo, hi; const char *want; } cases[] = {
		{ 0x00, 0x7F, "[00-7F]" },
		{ 'a', 'z', "[61-7A]" },
		{ 0x7F, 0x80, "[7F] [C2][80]" },                                /* 1 | 2 bytes */
		{ 0x80, 0x7FF, "[C2-DF][80-BF]" },
		{ 0x7FF, 0x800, "[DF][BF] [E0][A0][80]" },                      /* 2 | 3 bytes */
		{ 0x3B1, 0x3C9, "[CE][B1-BF] [CF][80-89]" },                    /* α-ω */
		{ 0x100, 0x17F, "[C4-C5][80-BF]" },
		{ 0x800, 0xFFFF, "[E0][A0-BF][80-BF] [E1-EC][80-BF][80-BF] [ED][80-9F][80-BF] "
		                 "[EE-EF][80-BF][80-BF]" },                     /* no surrogates */
		{ 0xD7FF, 0xE000, "[ED][9F][BF] [EE][80][80]" },
		{ 0xD800, 0xDFFF, "" },                                         /* surrogates only */
		{ 0xD800, 0xE000, "[EE][80][80]" },
		{ 0xFFFF, 0x10000, "[EF][BF][BF] [F0][90][80][80]" },            /* 3 | 4 bytes */
		{ 0x10FFFF, 0x10FFFF, "[F4][8F][BF][BF]" },
		{ 0x10FFFF, 0x7FFFFFFF, "[F4][8F][BF][BF]" },                    /* clipped */
		{ 0x10000, 0x10FFFF, "[F0][90-BF][80-BF][80-BF] [F1-F3][80-BF][80-BF][80-BF] "
		                     "[F4][80-8F][80-BF][80-BF]" },
		{ 0x4E00, 0x9FA5, "[E4][B8-BF][80-BF] [E5-E8][80-BF][80-BF] [E9][80-BD][80-BF] "
		                  "[E9][BE][80-A5]" },                          /* 一-龥 */
		{ 0x1F600, 0x1F64F, "[F0][9F][98][80-BF] [F0][9F][99][80-8F]" },
		{ 0x20, 0x1F, "" },                                             /* empty */
	};
	char buf[512];
	struct utf8_seq q[UTF8_MAX_SEQS];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int n = utf8_sequences(cases[i].lo, cases[i].hi, q, UTF8_MAX_SEQS);
		show(q, n < 0 ? 0 : n, buf, sizeof buf);
		CHECK(n >= 0 && !strcmp(buf, cases[i].want), "U+%04X-U+%04X: got \"%s\", want \"%s\"",
		      cases[i].lo, cases[i].hi, buf, cases[i].want);
	}
	/* the whole of Unicode: the 9 sequences of a valid character */
	int n = utf8_sequences(0, UTF8_MAX, q, UTF8_MAX_SEQS);
	CHECK(n == 9, "all of Unicode: %d sequences", n);
	CHECK(utf8_sequences(0, UTF8_MAX, q, 3) == -1, "capacity");
}

static int seq_match(const struct utf8_seq *q, int n, const uint8_t *b, int len)
{
	int hits = 0;
	for (int i = 0; i < n; i++) {
		if (q[i].n != len)
			continue;
		int ok = 1;
		for (int k = 0; k < len && ok; k++)
			ok = b[k] >= q[i].lo[k] && b[k] <= q[i].hi[k];
		hits += ok;
	}
	return hits;
}

/* Every code point against random ranges: its encoding is in exactly one sequence when it
 * lies in the range, in none otherwise; no sequence holds a surrogate or an overlong form. */
static void test_sequences_exhaustive(void)
{
	uint64_t x = 88172645463325252ull;
	unsigned bad = 0;
	for (int r = 0; r < 12; r++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t a = (uint32_t)(x % (UTF8_MAX + 1)), b = (uint32_t)((x >> 32) % (UTF8_MAX + 1));
		if (r < 4)     /* small ranges around the length boundaries */
			a = (uint32_t[]){ 0x70, 0x7F0, 0xD7F0, 0xFFF0 }[r], b = a + 0x20;
		if (a > b) {
			uint32_t t = a;
			a = b, b = t;
		}
		struct utf8_seq q[UTF8_MAX_SEQS];
		int n = utf8_sequences(a, b, q, UTF8_MAX_SEQS);
		CHECK(n > 0 || (a >= 0xD800 && b <= 0xDFFF), "U+%X-U+%X: %d", a, b, n);
		for (uint32_t c = 0; c <= UTF8_MAX; c++) {
			uint8_t e[4];
			int len = utf8_encode(c, e);
			int want = c >= a && c <= b && !(c >= 0xD800 && c <= 0xDFFF);
			if (seq_match(q, n, e, len) != want)
				bad++;
		}
		/* overlong forms of 'A' and U+07FF, 0xF4 0x90 (past U+10FFFF) in no sequence */
		const uint8_t ov1[] = { 0xC1, 0x81 }, ov2[] = { 0xE0, 0x9F, 0xBF },
		              big[] = { 0xF4, 0x90, 0x80, 0x80 };
		bad += seq_match(q, n, ov1, 2) + seq_match(q, n, ov2, 3) + seq_match(q, n, big, 4);
	}
	CHECK(bad == 0, "%u code points misplaced", bad);
}

static struct grep *compile(const char *pat, int syntax, int icase, int word, char *err)
{
	struct grep_opts o = { 0 };
	o.max_count = -1, o.before = o.after = -1;
	o.syntax = syntax, o.icase = icase, o.word = word, o.utf8 = 1;
	size_t len = strlen(pat);
	const char *pats[1] = { pat };
	struct grep *g = NULL;
	char warn[256];
	grep_compile(pats, &len, 1, &o, &g, err, 256, warn, sizeof warn);
	return g;
}

/* The line's verdict in d: DFA_MATCH, DFA_EOL or DFA_MAYBE. */
static int dfa_verdict(const struct dfa *d, const uint8_t *p, size_t n)
{
	size_t w = (size_t)d->n_cls + 1;
	uint32_t row = (uint32_t)d->start;
	for (size_t i = 0; i < n; i++) {
		row = d->t[row * w + d->cls[p[i]]];
		if (row < DFA_N_SPECIAL)
			return (int)row;
	}
	return (int)d->t[row * w + (size_t)d->n_cls];
}

/* Large sets compile to small automata: [^a] over all of Unicode, classes. */
static void test_sizes(void)
{
	static const struct { const char *pat; int max_nodes, max_states; } cases[] = {
		{ "[^a]", 64, 32 },
		{ ".", 64, 32 },
		{ "\\W", 2000, 400 },
		{ "[[:alpha:]]", 4000, 500 },
		{ "[[:punct:][:space:]]", 4000, 500 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256];
		struct grep *g = compile(cases[i].pat, GREP_BASIC, 0, 0, err);
		CHECK(g != NULL, "%s: %s", cases[i].pat, err);
		if (!g)
			continue;
		CHECK(g->ast.len <= cases[i].max_nodes, "%s: %d AST nodes", cases[i].pat, g->ast.len);
		CHECK(!g->exact && g->dfa.n_rows <= cases[i].max_states, "%s: %d DFA rows", cases[i].pat,
		      g->dfa.n_rows);
		grep_free(g);
	}
}

static void test_match(void)
{
	static const struct { int syntax, icase, word; const char *pat, *line; int match; long s, e; } cases[] = {
		{ GREP_BASIC, 0, 0, "^.$", "é", 1, 0, 2 },
		{ GREP_BASIC, 0, 0, "^..$", "é", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "^.....$", "École", 1, 0, 6 },
		{ GREP_BASIC, 0, 0, ".", "\xff", 0, -1, -1 },                  /* invalid byte */
		{ GREP_BASIC, 0, 0, ".", "\x80", 0, -1, -1 },                  /* lone continuation */
		{ GREP_BASIC, 0, 0, ".", "\xc3", 0, -1, -1 },                  /* cut sequence */
		{ GREP_BASIC, 0, 0, ".", "\xc0\xaf", 0, -1, -1 },              /* overlong '/' */
		{ GREP_BASIC, 0, 0, ".", "\xed\xa0\x80", 0, -1, -1 },          /* surrogate */
		{ GREP_BASIC, 0, 0, ".", "\xf4\x90\x80\x80", 0, -1, -1 },      /* past U+10FFFF */
		{ GREP_BASIC, 0, 0, "^.$", "\xf4\x8f\xbf\xbf", 1, 0, 4 },      /* U+10FFFF */
		{ GREP_BASIC, 0, 0, "[^a]", "\xff", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "[^a]", "a😀", 1, 1, 5 },
		{ GREP_BASIC, 0, 0, "[[:alpha:]]\\{6\\}", "straße", 1, 0, 7 },
		{ GREP_BASIC, 0, 0, "[[:alpha:]]\\{6\\}", "café!", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "é*x", "ééx", 1, 0, 5 },                   /* * repeats the char */
		{ GREP_BASIC, 0, 0, "\\w\\+", "--naïve--", 1, 2, 8 },
		{ GREP_BASIC, 0, 0, "\\W", "é日", 0, -1, -1 },
		{ GREP_BASIC, 1, 0, "école", "ÉCOLE", 1, 0, 6 },
		{ GREP_BASIC, 1, 0, "σοφός", "ΣΟΦΌΣ", 1, 0, 10 },
		{ GREP_BASIC, 1, 0, "s", "ſ", 1, 0, 2 },                        /* long s: 2 bytes */
		{ GREP_BASIC, 1, 0, "k", "\xe2\x84\xaa", 0, -1, -1 },          /* not KELVIN SIGN */
		{ GREP_BASIC, 1, 0, "ǆ", "ǅ", 1, 0, 2 },                        /* titlecase */
		{ GREP_BASIC, 1, 0, "[[:upper:]]", "ı", 1, 0, 2 },
		{ GREP_BASIC, 0, 0, "\\bé", "x é", 1, 2, 4 },
		{ GREP_BASIC, 0, 0, "\\bé", "xé", 0, -1, -1 },                  /* é is a word char */
		{ GREP_BASIC, 0, 0, "x\\>", "xé", 0, -1, -1 },
		/* \b \< \> (glibc's regex in grep) take an encoding error as the Latin-1
		 * character of its byte: 0xFF is 'y' with diaeresis, a word character; 0x80 is not */
		{ GREP_BASIC, 0, 0, "x\\>", "x\xff", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "x\\>", "x\x80", 1, 0, 1 },
		/* a lone byte in the pattern (an encoding error): grep's regex goes byte by byte
		 * and it matches inside a character, except under -i or beside \w, \b or a
		 * bracket that regex keeps as characters (found by fuzz_grep) */
		{ GREP_BASIC, 0, 0, "\xa9", "caf\xc3\xa9", 1, 4, 5 },
		{ GREP_FIXED, 0, 0, "\xa9", "caf\xc3\xa9", 1, 4, 5 },
		{ GREP_BASIC, 0, 0, "\xac\xe2", "\xe2\x82\xac\xe2\x82\xac", 1, 2, 4 },
		{ GREP_BASIC, 0, 1, "\xac\xe2", "\xe2\x82\xac\xe2\x82\xac", 1, 2, 4 },
		{ GREP_BASIC, 0, 0, "\xa9\\|[ab]", "\xc3\xa9", 1, 1, 2 },
		{ GREP_BASIC, 1, 0, "\xa9", "caf\xc3\xa9", 0, -1, -1 },
		{ GREP_FIXED, 1, 0, "\xa9", "caf\xc3\xa9", 0, -1, -1 },
		{ GREP_BASIC, 1, 0, "\xa9", "x\xa9", 1, 1, 2 },
		{ GREP_BASIC, 0, 0, "\xa9 \\w", "caf\xc3\xa9 foo", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "\xa9\\|[a-c]", "\xc3\xa9", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "\xa9\\|[^a]", "\xc3\xa9", 1, 0, 2 },
		{ GREP_BASIC, 0, 0, "\\>\xa9", "caf\xc3\xa9", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "\\<日", "本日", 0, -1, -1 },
		{ GREP_BASIC, 0, 1, "caf", "café", 0, -1, -1 },
		{ GREP_BASIC, 0, 1, "café", "un café.", 1, 3, 8 },
		{ GREP_EXTENDED, 0, 0, "(é|ü)+", "xéüé", 1, 1, 7 },
		/* grep 3.8's -w: an empty match inside a non-word character ("·"), not inside a word
		 * character ("é"), and not with -i */
		{ GREP_BASIC, 0, 1, "x*", "word·middle", 1, 5, 5 },
		{ GREP_BASIC, 0, 1, "x*", "café au", 0, -1, -1 },
		{ GREP_BASIC, 1, 1, "x*", "word·middle", 0, -1, -1 },
		{ GREP_BASIC, 0, 0, "\\B", "é", 0, -1, -1 },
		{ GREP_BASIC, 1, 0, "\\(.\\)\\1", "σς", 1, 0, 4 },             /* -i back-reference */
		{ GREP_BASIC, 1, 0, "\\(.\\)\\1", "sſ", 1, 0, 3 },             /* of another length */
		/* glibc's regex decides (a word assertion): a leading interval is text but its '{' */
		{ GREP_EXTENDED, 0, 0, "{1}x\\>", "a 1}x", 1, 2, 5 },
		{ GREP_EXTENDED, 0, 0, "{1}x\\>", "ax", 0, -1, -1 },
		{ GREP_EXTENDED, 0, 0, "a|${1,}\\<", "x$1,}", 0, -1, -1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256];
		struct grep *g = compile(cases[i].pat, cases[i].syntax, cases[i].icase, cases[i].word, err);
		CHECK(g != NULL, "%s: %s", cases[i].pat, err);
		if (!g)
			continue;
		const uint8_t *p = (const uint8_t *)cases[i].line;
		size_t n = strlen(cases[i].line);
		if (!g->exact)
			CHECK((g->maybe_redo && dfa_verdict(&g->dfa, p, n) == DFA_MAYBE) ||
			      dfa_line_matches(&g->dfa, p, n) == cases[i].match, "dfa %s on %s", cases[i].pat,
			      cases[i].line);
		CHECK(bt_line_matches(&g->ast, p, n, cases[i].icase) == cases[i].match, "bt %s on %s",
		      cases[i].pat, cases[i].line);
		if (g->ast.has_backref) {
			grep_free(g);
			continue;
		}
		CHECK(nfa_line_matches(grep_nfa(g), p, n) == cases[i].match, "nfa %s on %s", cases[i].pat,
		      cases[i].line);
		size_t s = 0, e = 0;
		int m = nfa_leftmost_longest(grep_nfa(g), p, n, 0, &s, &e);
		CHECK(m == cases[i].match && (!m || ((long)s == cases[i].s && (long)e == cases[i].e)),
		      "%s on \"%s\": %d [%zu,%zu)", cases[i].pat, cases[i].line, m, s, e);
		grep_free(g);
	}
}

/* -i's groups are made from the characters up to UTF8_FOLD_MAX (utf8.c fold_pairs): no
 * character of the locale past it has another case, nor is the upper case of one */
static void test_fold_bound(void)
{
	unsigned bad = 0;
	for (uint32_t c = 0; c <= UTF8_MAX; c++) {
		if (c == 0xD800)
			c = 0xE000;
		wint_t u = towupper((wint_t)c);
		bad += u != (wint_t)c && (c > UTF8_FOLD_MAX || u > UTF8_FOLD_MAX);
	}
	CHECK(bad == 0, "%u characters past UTF8_FOLD_MAX with another upper case", bad);
}

/* The classes made from glibc's tables (utf8.c class_from_table) are exactly the ones made
 * by one isw* call per code point, for every class, in the current locale (loc names it). */
static void test_class_tables(const char *loc)
{
	static const char *const names[] = { "alpha", "upper", "lower", "digit", "xdigit", "space",
		                             "print", "punct", "graph", "cntrl", "blank", "alnum",
		                             "word" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct cset scan = { 0 }, tab = { 0 };
		int rs = cset_class_way(&scan, names[i], 1), rt = cset_class_way(&tab, names[i], 0);
#ifdef __GLIBC__
		CHECK(rt == 0, "%s %s: the table walk gave up", loc, names[i]);
#endif
		int same = rs == 0 && !scan.err && !tab.err && scan.n == tab.n &&
		           (!scan.n || !memcmp(scan.r, tab.r, (size_t)scan.n * sizeof scan.r[0]));
		if (rt == 0)
			CHECK(same, "%s %s: %d ranges scanned, %d from the table", loc, names[i], scan.n,
			      tab.n);
		/* a test that can fail: the classes are not empty nor everything */
		CHECK(rs == 0 && scan.n > 0 && (scan.r[0][0] > 0 || scan.r[0][1] < UTF8_MAX),
		      "%s %s: %d ranges", loc, names[i], scan.n);
		cset_free(&scan);
		cset_free(&tab);
	}
	/* -i's case pairs (utf8.c pairs_from_table) likewise */
	uint32_t (*ps)[2] = NULL, (*pt)[2] = NULL;
	size_t ns = 0, nt = 0;
	int rs = utf8_fold_pairs_way(1, &ps, &ns), rt = utf8_fold_pairs_way(0, &pt, &nt);
#ifdef __GLIBC__
	CHECK(rt == 0, "%s: the case table walk gave up", loc);
#endif
	CHECK(rs == 0 && ns > 1000, "%s: %zu case pairs", loc, ns);
	if (rt == 0)
		CHECK(rs == 0 && ns == nt && !memcmp(ps, pt, ns * sizeof ps[0]),
		      "%s: %zu case pairs scanned, %zu from the table", loc, ns, nt);
	free(ps);
	free(pt);
}

/* The same in en_US.UTF-8: installed, or made here with localedef into a LOCPATH of our own
 * (as tests/grep/utf8.sh does); skipped with a line when neither works. */
static void test_class_tables_en_us(void)
{
	char dir[] = "/tmp/test_grep_utf8.XXXXXX", cmd[512];
	int made = 0;
	if (!setlocale(LC_ALL, "en_US.UTF-8")) {
		if (!mkdtemp(dir))
			return;
		snprintf(cmd, sizeof cmd,
		         "localedef -i en_US -f UTF-8 %s/en_US.UTF-8 >/dev/null 2>&1; "
		         "test -f %s/en_US.UTF-8/LC_CTYPE", dir, dir);
		made = system(cmd) == 0;
		if (made) {
			setenv("LOCPATH", dir, 1);
			made = setlocale(LC_ALL, "en_US.UTF-8") != NULL;
		}
		if (!made) {
			printf("test_grep_utf8: en_US.UTF-8 classes skipped: not installed and "
			       "localedef could not make it\n");
			snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
			if (system(cmd) != 0)
				printf("test_grep_utf8: could not remove %s\n", dir);
			setlocale(LC_ALL, "C.UTF-8");
			return;
		}
	}
	test_class_tables("en_US.UTF-8");
	setlocale(LC_ALL, "C.UTF-8");
	if (made) {
		unsetenv("LOCPATH");
		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			printf("test_grep_utf8: could not remove %s\n", dir);
	}
}

/* grep 3.8's messages for UTF-8 brackets in C.UTF-8 */
static void test_errors(void)
{
	static const struct { const char *pat, *msg; } cases[] = {
		{ "[α-ω]", "Invalid collation character" },
		{ "[a-é]", "Invalid collation character" },
		{ "[[.é.]]", "Invalid collation character" },
		{ "[[:alpha:]-é]", "Invalid range end" },
		{ "[é", "Unmatched [, [^, [:, [., or [=" },
		{ "[[:foo:]]", "Invalid character class name" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256];
		struct grep *g = compile(cases[i].pat, GREP_BASIC, 0, 0, err);
		CHECK(!g && !strcmp(err, cases[i].msg), "%s: got \"%s\"", cases[i].pat, err);
		grep_free(g);
	}
}

/* Word assertions and -w in the segment's DFA (dfa_build_u8): its states follow characters.
 * Each case must compile to a DFA (not the exact path) that answers as expected and as the
 * NFA on characters (the client's reference); then random lines of multibyte letters,
 * non-letters, combining marks and encoding errors, every pattern, DFA against NFA. */
/* Word DFAs of one compiled pattern: g's table, and when that is dfa_build_ascii_w's (an
 * ASCII pattern: maybe_redo), dfa_build_u8's too, which the twin no longer takes but other
 * patterns do.  wdfa_ok: g's table agrees with want (DFA_MAYBE too, but never on a line of
 * ASCII bytes), and dfa_build_u8's says want. */
struct wdfa {
	struct grep *g;
	struct dfa u8;
	int have_u8;
	long maybes;
};

static void wdfa_init(struct wdfa *w, struct grep *g)
{
	memset(w, 0, sizeof *w);
	w->g = g;
	if (g->maybe_redo) {
		w->have_u8 = dfa_build_u8(&w->u8, &g->ast, '\n', -1) == 0;
		CHECK(w->have_u8, "dfa_build_u8 beside dfa_build_ascii_w");
	}
}

static void wdfa_free(struct wdfa *w)
{
	if (w->have_u8)
		dfa_free(&w->u8);
}

static int wdfa_ok(struct wdfa *w, const uint8_t *p, size_t n, int want)
{
	if (!w->g->maybe_redo)
		return dfa_line_matches(&w->g->dfa, p, n) == want;
	int v = dfa_verdict(&w->g->dfa, p, n), ascii = 1;
	for (size_t i = 0; i < n; i++)
		ascii &= p[i] < 0x80;
	if (v == DFA_MAYBE)
		w->maybes++;
	if (v == DFA_MAYBE ? ascii : (v == DFA_MATCH) != want)
		return 0;
	return !w->have_u8 || dfa_line_matches(&w->u8, p, n) == want;
}

static void test_word_dfa(void)
{
	static const struct { int syntax, icase, word; const char *pat, *line; int match; } cases[] = {
		{ GREP_BASIC, 0, 1, "fox", "a fox.", 1 },
		{ GREP_BASIC, 0, 1, "fox", "éfox", 0 },                       /* letter before */
		{ GREP_BASIC, 0, 1, "fox", "foxé", 0 },                       /* letter after */
		{ GREP_BASIC, 0, 1, "fox", "×fox×", 1 },                      /* U+00D7: lead C3 too */
		{ GREP_BASIC, 0, 1, "fox", "—fox—", 1 },                      /* em dash */
		{ GREP_BASIC, 0, 1, "fox", "ßfox", 0 },
		{ GREP_BASIC, 0, 1, "fox", "Σfox", 0 },
		{ GREP_BASIC, 0, 1, "fox", "日本fox", 0 },                     /* CJK: word characters */
		{ GREP_BASIC, 0, 1, "fox", "😀fox😀", 1 },                     /* emoji: not */
		{ GREP_BASIC, 0, 1, "fox", "fox\xcc\x81", 1 },                /* combining acute: not */
		{ GREP_BASIC, 0, 1, "fox", "\xff" "fox\xc3", 1 },                /* encoding errors: not */
		{ GREP_BASIC, 0, 1, "fox", "\xe6\x97" "fox", 1 },                /* cut sequence */
		{ GREP_BASIC, 0, 1, "fox", "\xc3\xa9\xa9" "fox", 1 },            /* é, then a lone A9 */
		{ GREP_BASIC, 0, 1, "fox", "foxéfox fox", 1 },
		{ GREP_BASIC, 0, 1, "fox", "foxéfox", 0 },
		{ GREP_BASIC, 0, 1, "é", "café", 0 },
		{ GREP_BASIC, 0, 1, "é", "× é ×", 1 },
		{ GREP_BASIC, 0, 1, "日本", "日本語", 0 },
		{ GREP_BASIC, 0, 1, "日本", "「日本」", 1 },
		{ GREP_BASIC, 0, 0, "\\bé", "×é", 1 },
		{ GREP_BASIC, 0, 0, "\\bé", "ßé", 0 },
		{ GREP_BASIC, 0, 0, "é\\b", "é×", 1 },
		{ GREP_BASIC, 0, 0, "é\\b", "éß", 0 },
		{ GREP_BASIC, 0, 0, "é\\B", "éß", 1 },
		{ GREP_BASIC, 0, 0, "\\Bé", "×é", 0 },
		{ GREP_BASIC, 0, 0, "\\<Σ", "ΑΣ ÷Σ", 1 },
		{ GREP_BASIC, 0, 0, "\\<Σ", "ΑΣ", 0 },
		{ GREP_BASIC, 0, 0, "Σ\\>", "Σ😀", 1 },
		{ GREP_BASIC, 0, 0, "Σ\\>", "Σα", 0 },
		/* encoding errors: Latin-1 characters for \b \B \< \> (ÿ, Ã: word; 0x80, ×: not) */
		{ GREP_BASIC, 0, 0, "x\\>", "x\xff", 0 },
		{ GREP_BASIC, 0, 0, "x\\>", "x\xc3", 0 },                     /* cut at the line's end */
		{ GREP_BASIC, 0, 0, "x\\>", "x\xd7", 1 },
		{ GREP_BASIC, 0, 0, "x\\>", "x\x80", 1 },
		{ GREP_BASIC, 0, 0, "\\bfox", "\xff" "fox", 0 },
		{ GREP_BASIC, 0, 0, "\\bfox", "\x80" "fox", 1 },
		{ GREP_BASIC, 0, 0, "\\bfox", "\xc3" "fox", 0 },
		{ GREP_BASIC, 0, 0, "\\Bfox", "\xc3" "fox", 1 },
		{ GREP_BASIC, 0, 0, "\\bfox", "\xe2\x82" "fox", 1 },           /* 0x82 last */
		{ GREP_BASIC, 0, 0, "fox\\b", "fox\xaa", 0 },                   /* feminine ordinal */
		{ GREP_BASIC, 0, 0, "fox\\b", "fox\xb9", 1 },                   /* superscript one */
		{ GREP_BASIC, 0, 0, "x\\b", "x\xe2\x82", 0 },
		{ GREP_BASIC, 0, 0, "\\>", "\xe2\x82", 1 },                    /* between the two */
		{ GREP_BASIC, 0, 0, "\\<", "\x80\xe2", 1 },
		{ GREP_BASIC, 0, 0, "\\B", "\xe2", 0 },
		{ GREP_BASIC, 0, 0, "x\\>", "x\xc3\xa9", 0 },
		{ GREP_BASIC, 0, 0, "\\<", "×—", 0 },
		{ GREP_BASIC, 0, 0, "\\<", "×é", 1 },
		{ GREP_BASIC, 0, 0, "\\b", "\xff\xfe", 1 },
		{ GREP_BASIC, 0, 0, "\\b", "\x80\x81", 0 },
		{ GREP_BASIC, 0, 0, "\\B", "é", 0 },
		{ GREP_BASIC, 0, 0, "\\B", "éé", 1 },
		{ GREP_EXTENDED, 0, 0, "\\<[[:alpha:]]+\\>", "— ß —", 1 },
		{ GREP_EXTENDED, 0, 0, "\\b.\\b", "日", 1 },
		{ GREP_EXTENDED, 0, 0, "\\b.\\b", "😀", 0 },
		{ GREP_BASIC, 0, 1, "x*", "word·middle", 1 },                  /* inside "·" */
		{ GREP_BASIC, 0, 1, "x*", "café", 0 },
		{ GREP_BASIC, 1, 1, "x*", "word·middle", 0 },
		{ GREP_BASIC, 1, 1, "ÉCOLE", "l'école.", 1 },
		{ GREP_BASIC, 1, 1, "ÉCOLE", "écoles", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[256];
		struct grep *g = compile(cases[i].pat, cases[i].syntax, cases[i].icase, cases[i].word, err);
		CHECK(g != NULL, "%s: %s", cases[i].pat, err);
		if (!g)
			continue;
		const uint8_t *p = (const uint8_t *)cases[i].line;
		size_t n = strlen(cases[i].line);
		CHECK(!g->exact, "%s: exact path", cases[i].pat);
		if (!g->exact) {
			struct wdfa w;
			wdfa_init(&w, g);
			CHECK(wdfa_ok(&w, p, n, cases[i].match), "dfa %s%s on %s",
			      cases[i].word ? "-w " : "", cases[i].pat, cases[i].line);
			wdfa_free(&w);
		}
		CHECK(nfa_line_matches(grep_nfa(g), p, n) == cases[i].match, "nfa %s on %s", cases[i].pat,
		      cases[i].line);
		grep_free(g);
	}
	/* random lines */
	static const char *const bits[] = {
		"a", "x", "_", "9", " ", ".", "fox", "é", "×", "÷", "ß", "Σ", "日", "本", "😀", "—",
		"\xcc\x81", "·", "\xff", "\x80", "\xc3", "\xe6\x97", "\xf0\x9f\x98", "\xed\xa0\x80",
		"\xc0\xaf", "\xe0\x80\x80",
	};
	static const struct { int syntax, icase, word; const char *pat; } pats[] = {
		{ GREP_BASIC, 0, 1, "fox" }, { GREP_BASIC, 0, 1, "é" }, { GREP_BASIC, 0, 1, "x*" },
		{ GREP_BASIC, 1, 1, "x*" }, { GREP_BASIC, 0, 1, "a.x" }, { GREP_BASIC, 1, 1, "σ" },
		{ GREP_BASIC, 0, 0, "\\bx" }, { GREP_BASIC, 0, 0, "x\\b" }, { GREP_BASIC, 0, 0, "\\B" },
		{ GREP_BASIC, 0, 0, "\\b" }, { GREP_BASIC, 0, 0, "\\<" }, { GREP_BASIC, 0, 0, "\\>" },
		{ GREP_BASIC, 0, 0, "\\<.\\>" }, { GREP_BASIC, 0, 0, "\\B.\\B" },
		{ GREP_BASIC, 0, 0, "\\b\\W\\b" }, { GREP_EXTENDED, 0, 0, "^\\<|\\>$" },
		{ GREP_EXTENDED, 0, 0, "\\<[[:alpha:]]+\\>" }, { GREP_EXTENDED, 0, 1, "\\w+" },
		/* (not "[^a]*": its empty match takes grep's -w regex loop, on the client) */
		{ GREP_EXTENDED, 0, 1, "[b-z]*" }, { GREP_EXTENDED, 0, 0, "é\\B|\\B日" },
	};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int bad = 0, dfa_ok = 0;
	for (size_t pi = 0; pi < sizeof pats / sizeof pats[0]; pi++) {
		char err[256];
		struct grep *g = compile(pats[pi].pat, pats[pi].syntax, pats[pi].icase, pats[pi].word, err);
		CHECK(g != NULL && !g->exact, "%s: %s", pats[pi].pat, g ? "exact path" : err);
		if (!g || g->exact) {
			grep_free(g);
			continue;
		}
		dfa_ok++;
		struct wdfa w;
		wdfa_init(&w, g);
		for (int r = 0; r < 3000; r++) {
			char line[128];
			size_t n = 0;
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			int len = (int)(seed >> 60) % 8;
			for (int k = 0; k < len; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				const char *b = bits[(seed >> 33) % (sizeof bits / sizeof bits[0])];
				memcpy(line + n, b, strlen(b));
				n += strlen(b);
			}
			const uint8_t *p = (const uint8_t *)line;
			int want = nfa_line_matches(grep_nfa(g), p, n);
			if (!wdfa_ok(&w, p, n, want) && bad++ < 5)
				CHECK(0, "dfa %s%s on \"%.*s\": %d, nfa %d", pats[pi].word ? "-w " : "",
				      pats[pi].pat, (int)n, line, !want, want);
		}
		wdfa_free(&w);
		grep_free(g);
	}
	CHECK(bad == 0, "%d random lines where the DFA and the NFA differ", bad);
	/* every character before and after a word character: the decoder's kinds are the
	 * locale's (4.4 M lines, about 0.7 s) */
	static const struct { int word; const char *pat; } every[] = {
		{ 1, "x" }, { 0, "\\bx" }, { 0, "x\\b" },
	};
	bad = 0;
	for (size_t pi = 0; pi < sizeof every / sizeof every[0]; pi++) {
		char err[256];
		struct grep *g = compile(every[pi].pat, GREP_BASIC, 0, every[pi].word, err);
		CHECK(g != NULL && !g->exact, "%s: %s", every[pi].pat, g ? "exact path" : err);
		if (!g || g->exact) {
			grep_free(g);
			continue;
		}
		struct wdfa w;
		wdfa_init(&w, g);
		for (uint32_t c = 0x80; c <= UTF8_MAX; c++) {
			if (c >= 0xD800 && c <= 0xDFFF)
				continue;
			uint8_t line[8], b[4];
			int l = utf8_encode(c, b);
			for (int after = 0; after < 2; after++) {
				memcpy(line + after, b, (size_t)l);
				line[after ? 0 : l] = 'x';
				int want = nfa_line_matches(grep_nfa(g), line, (size_t)l + 1);
				if (!wdfa_ok(&w, line, (size_t)l + 1, want) && bad++ < 5)
					CHECK(0, "dfa %s%s with U+%04X %s: %d, nfa %d", every[pi].word ? "-w " : "",
					      every[pi].pat, (unsigned)c, after ? "after" : "before", !want, want);
			}
		}
		wdfa_free(&w);
		grep_free(g);
	}
	CHECK(bad == 0, "%d characters next to a word where the DFA and the NFA differ", bad);
}

/* -i's required literal with byte sets (findset): letters whose case variants all have the
 * same length keep their bytes as sets; where a variant differs in length ('s' with 'ſ')
 * the literal stops there as before; 'İ' has no other case for grep 3.8 in C.UTF-8.  want: the sets as positions, "xy" a set of x and y (in order), one char one byte. */
static void test_set_literal(void)
{
	static const struct { int icase; const char *pat; int sets; const char *want[16]; } cases[] = {
		{ 1, "Ärger", 1, { "\xc3", "\x84\xa4", "Rr", "Gg", "Ee", "Rr" } },
		{ 1, "σίσυφος", 1, { "\xce\xcf", "\x82\x83\xa3", "\xce", "\x8a\xaf", "\xce\xcf",
		                     "\x82\x83\xa3", "\xce\xcf", "\x85\xa5", "\xce\xcf", "\x86\x95\xa6",
		                     "\xce", "\x9f\xbf", "\xce\xcf", "\x82\x83\xa3" } },
		{ 1, "straße", 0, { "tra\xc3\x9f" "e" } },   /* 's' has 'ſ' (2 bytes) */
		{ 1, "Ärger", 1, { "\xc3", "\x84\xa4", "Rr", "Gg", "Ee", "Rr" } },
		{ 0, "Ärger", 0, { "\xc3\x84rger" } },       /* without -i: bytes, as before */
		{ 1, "xİy", 0, { "x\xc4\xb0y" } },         /* grep 3.8 -i: İ matches only itself */
		{ 1, "ab", 0, { "ab" } },                     /* ASCII: findsi, as before */
		/* as sets the branches share no inner string, as bytes both hold CE: the bytes */
		{ 1, "σοφός\\|μήλο", 0, { "\xce" } },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = -1, .after = -1, .syntax = GREP_BASIC,
		                       .icase = cases[i].icase, .utf8 = 1 };
		const char *pats[1] = { cases[i].pat };
		size_t len = strlen(cases[i].pat);
		struct grep *g = NULL;
		char err[256], warn[256];
		if (grep_compile(pats, &len, 1, &o, &g, err, sizeof err, warn, sizeof warn) != 0) {
			CHECK(0, "%s: %s", cases[i].pat, err);
			continue;
		}
		int ok = g->lit_is_sets == cases[i].sets;
		if (ok && !cases[i].sets) {
			ok = g->lit_len == strlen(cases[i].want[0]) &&
			     !memcmp(g->lit, cases[i].want[0], g->lit_len);
		} else if (ok) {
			size_t n = 0;
			while (n < 16 && cases[i].want[n])
				n++;
			ok = g->lit_len == n;
			for (size_t k = 0; ok && k < n; k++) {
				char got[257];
				size_t m = 0;
				for (unsigned c = 0; c < 256; c++)
					if (g->lit_set[k][c / 8] >> (c % 8) & 1)
						got[m++] = (char)c;
				got[m] = '\0';
				ok = !strcmp(got, cases[i].want[k]);
			}
		}
		char desc[600];
		grep_describe(g, desc, sizeof desc);
		CHECK(ok, "-i %d %s: %s", cases[i].icase, cases[i].pat, desc);
		grep_free(g);
	}
}

/* Context in UTF-8 (issue 19): -A, -B, -C take the fast path (the segment's DFA and
 * literal skip, only the lines to print sent), and a file whose records hold a line with an
 * encoding error is run again on the exact path (the twin).  Before, every context option
 * took the exact path: every line of the file to the client, 12x pngrep's time. */
static void test_context_fast(void)
{
	static const struct { int before, after, no_walk_back, count, exact; } cases[] = {
		{ 1, 1, 0, 0, 0 },     /* -C1 */
		{ -1, 2, 0, 0, 0 },    /* -A2 */
		{ 3, -1, 0, 0, 0 },    /* -B3 */
		{ 0, 0, 0, 0, 0 },     /* -C0: "--" only */
		{ -1, 1, 1, 0, 0 },    /* arf grep -A1 */
		{ 1, 1, 1, 0, 0 },     /* arf grep -C1: the client reads -B's lines (lead_client) */
		{ 1, 1, 0, 1, 0 },     /* -c -C1: no lines printed, no twin */
		{ 2, -1, 1, 1, 0 },    /* arf grep -c -B2 */
	};
	const char *text = "a1\nb2 needle\nc3\nd4\n";
	const char *bad = "a1\nb2 needle \377\nc3\nd4\n";
	const char *bad_far = "a1 \377\nb2\nc3\nd4 needle\ne5\n";   /* not next to a match */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct grep_opts o = { .max_count = -1, .before = cases[i].before,
		                       .after = cases[i].after, .syntax = GREP_BASIC, .utf8 = 1,
		                       .no_walk_back = cases[i].no_walk_back, .count = cases[i].count };
		const char *pats[1] = { "needle" };
		size_t len = 6;
		char err[256], warn[256];
		struct grep *g = NULL;
		grep_compile(pats, &len, 1, &o, &g, err, sizeof err, warn, sizeof warn);
		CHECK(g != NULL, "case %zu: %s", i, err);
		if (!g)
			continue;
		CHECK(g->exact == cases[i].exact, "case %zu: exact %d", i, g->exact);
		int redo = !cases[i].exact && !cases[i].count;
		CHECK(grep_ctx_redo(g) == redo, "case %zu: ctx_redo %d", i, grep_ctx_redo(g));
		CHECK(cases[i].exact || g->lit_len == 6, "case %zu: literal skip lost", i);
		int lead = cases[i].no_walk_back && cases[i].before > 0 && !cases[i].count;
		CHECK(grep_lead_client(g) == lead, "case %zu: lead_client %d", i, !lead);
		const uint8_t *aseg;
		size_t aseg_len;
		CHECK(!cases[i].no_walk_back || grep_arf_segment(g, &aseg, &aseg_len, err, sizeof err) == 0,
		      "case %zu: arf segment: %s", i, err);
		struct grep_out out = { 0 };
		int64_t value;
		size_t out_len;
		const char *texts[3] = { text, bad, bad_far };
		for (int k = 0; k < 3 && !cases[i].exact; k++) {
			int rc = grep_run_local(g, 0, (const uint8_t *)texts[k], strlen(texts[k]), &out,
			                        &value, &out_len, err, sizeof err);
			CHECK(rc == 0, "case %zu: %s", i, err);
			int want = redo && k == 1;     /* the bad line is printed (selected) */
			if (k == 2)                    /* a1 is context only with -B3 */
				want = redo && cases[i].before >= 3;
			CHECK(rc != 0 || grep_needs_exact(g, out.buf, out_len) == want,
			      "case %zu text %d: needs_exact %d", i, k, !want);
		}
		struct grep *x = grep_exact_twin(g);
		CHECK(x != NULL && (x == g) == !(redo || lead) && (x->exact || x == g),
		      "case %zu: twin %p exact %d", i,
		      (void *)x, x ? x->exact : -1);
		grep_out_free(&out);
		grep_free(g);
	}
}

/* The ASCII table's twins: -w fox takes dfa_build_ascii_w (maybe_redo; a small table); the
 * redo twin (pngrep) the decoder's DFA on the fast path, the exact twin (arf grep) the exact
 * path; \< \> on a non-ASCII word and -w with context keep the decoder's DFA. */
static void test_ascii_twins(void)
{
	char err[256];
	struct grep *g = compile("fox", GREP_BASIC, 0, 1, err);
	CHECK(g && g->maybe_redo && !g->exact && g->dfa.n_rows < 32, "-w fox: the ASCII table");
	if (g) {
		struct grep *r = grep_redo_twin(g), *x = grep_exact_twin(g);
		CHECK(r && r != g && !r->exact && !r->maybe_redo && r->dfa.n_rows > 300,
		      "-w fox: redo twin on the decoder's DFA");
		CHECK(x && x != g && x != r && x->exact, "-w fox: exact twin");
		const uint8_t line[] = "foxé";
		CHECK(r && dfa_line_matches(&r->dfa, line, sizeof line - 1) == 0, "redo twin: foxé");
	}
	grep_free(g);
	g = compile("\\<мир\\>", GREP_BASIC, 0, 0, err);
	CHECK(g && !g->maybe_redo && !g->exact, "\\<мир\\>: the decoder's DFA");
	grep_free(g);
	struct grep_opts o = { 0 };
	o.max_count = -1, o.before = 1, o.after = -1;
	o.syntax = GREP_BASIC, o.word = 1, o.utf8 = 1;
	size_t len = 3;
	const char *pats[1] = { "fox" };
	char warn[256];
	g = NULL;
	grep_compile(pats, &len, 1, &o, &g, err, 256, warn, sizeof warn);
	CHECK(g && !g->maybe_redo && !g->exact && g->ctx_redo, "-B1 -w fox: the decoder's DFA");
	grep_free(g);
}

int main(void)
{
	test_sequences();
	if (!setlocale(LC_ALL, "C.UTF-8")) {
		printf("test_grep_utf8: no C.UTF-8 locale: the rest skipped\n");
		printf("%u passed, %u failed\n", n_pass, n_fail);
		return n_fail ? 1 : 0;
	}
	test_sequences_exhaustive();
	test_sizes();
	test_match();
	test_word_dfa();
	test_ascii_twins();
	test_errors();
	test_fold_bound();
	test_class_tables("C.UTF-8");
	test_class_tables_en_us();
	test_set_literal();
	test_context_fast();
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
