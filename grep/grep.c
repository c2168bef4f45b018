/* grep.c: libgrep's public entry points: compile patterns into a segment, and print a run's
 * records exactly as GNU grep prints the lines.
 *
 * The segment (gen.c) selects lines; this file owns everything about how they look: file
 * name, line number and byte offset prefixes, "--" between context groups, -o and colour
 * (which need the match spans: found again here, on the few lines that came back), -c, -l, -L
 * and the binary-file message.  In exact mode (back-references, or a DFA too big to build)
 * the segment sends candidate lines and the selection logic runs here too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "grep_int.h"

#define REC_CONTEXT GREP_REC_CONTEXT

/* Shared across files of one process: grep prints "--" between context groups of different
 * files as well. */
static int fmt_any_output;

/* -T: numbers are right-aligned to the digits of the file's size, plus one with -n (19 when
 * the size is unknown: a pipe), as grep 3.8 does; set per file by grep_set_file_size. */
static int fmt_num_width;

/* How -o, colour and the exact path's set of strings find matches (struct grep's span_kind) */
enum { SPAN_UNKNOWN, SPAN_NFA, SPAN_LITERAL, SPAN_FIXED, SPAN_SET };
static void span_setup(struct grep *g);
static int next_match(struct grep *g, const uint8_t *p, size_t n, size_t from, size_t *s,
                      size_t *e);

/* Is the pattern rooted at root exactly the bytes lit[0..n): a concatenation of one-byte
 * sets, in that order, and nothing else?  Then finding the literal is matching: the scan
 * need not run the DFA over a line it found it in.  In UTF-8 the literal must not start
 * with a continuation byte (a match starts on a character; a lead byte or ASCII always
 * does).  The concatenation is walked with a stack of its own, bounded by the node count
 * (no recursion as deep as the pattern is long). */
static int literal_is_pattern(const struct ast *t, int root, const uint8_t *lit, size_t n,
                              int utf8)
{
	if (n == 0 || (utf8 && lit[0] >= 0x80 && lit[0] < 0xC0))
		return 0;
	int *stack = malloc((size_t)t->len * sizeof *stack);
	if (!stack)
		return 0;
	int sp = 0, ok = 1;
	size_t k = 0;
	stack[sp++] = root;
	while (ok && sp > 0) {
		const struct node *x = &t->n[stack[--sp]];
		if (x->kind == N_CAT && sp + 2 <= t->len) {
			stack[sp++] = x->b;                 /* b after a: pushed first */
			stack[sp++] = x->a;
		} else if (x->kind == N_SET) {
			const uint64_t *set = ast_set(t, (int)(x - t->n));
			unsigned members = 0;
			for (int w = 0; w < 4; w++)
				members += (unsigned)__builtin_popcountll(set[w]);
			ok = members == 1 && k < n && (set[lit[k] >> 6] >> (lit[k] & 63) & 1);
			k++;
		} else {
			ok = 0;
		}
	}
	free(stack);
	return ok && k == n;
}

static int wrap(struct ast *t, int root, int a1, int a2)
{
	int x = ast_new(t, N_ASSERT), y = ast_new(t, N_ASSERT);
	if (x < 0 || y < 0)
		return -1;
	t->n[x].akind = (uint8_t)a1;
	t->n[y].akind = (uint8_t)a2;
	int c1 = ast_new(t, N_CAT);
	if (c1 < 0)
		return -1;
	t->n[c1].a = root;
	t->n[c1].b = y;
	int c2 = ast_new(t, N_CAT);
	if (c2 < 0)
		return -1;
	t->n[c2].a = x;
	t->n[c2].b = c1;
	return c2;
}

/* The DFA of t with every word assertion taken as true (UTF-8: the client checks them on
 * characters).  0, -1 (too big) or -2 (out of memory). */
static int relaxed_dfa(struct dfa *d, const struct ast *t, int eol)
{
	struct ast r = *t;
	struct nfa m = { 0 };
	r.n = malloc((size_t)t->len * sizeof *r.n);
	if (!r.n)
		return -2;
	memcpy(r.n, t->n, (size_t)t->len * sizeof *r.n);
	r.cap = t->len;
	for (int i = 0; i < r.len; i++)
		if (r.n[i].kind == N_ASSERT && r.n[i].akind != A_BOL && r.n[i].akind != A_EOL)
			r.n[i].kind = N_EMPTY;
	int rc = nfa_build(&m, &r) != 0 ? -1 : dfa_build(d, &m, eol, -1, 0);
	nfa_free(&m);
	free(r.n);
	return rc;
}

/* Patterns past this many AST nodes (thousands of strings) do not try dfa_build_u8, which
 * gives up on many alternatives anyway, after building their NFA */
#define U8_DFA_MAX_AST (1 << 16)

/* A DFA that selects every line: the exact path's "send everything" filter. */
static int all_lines_dfa(struct dfa *d, int eol)
{
	struct ast t = { 0 };
	struct nfa m;
	t.root = ast_new(&t, N_EMPTY);
	int rc = t.root < 0 || nfa_build(&m, &t) != 0 ? -2 : dfa_build(d, &m, eol, -1, 0);
	nfa_free(&m);
	ast_free(&t);
	return rc;
}

/* The patterns into t as one alternation: its root, -2 when there is none, or -1 with grep's
 * message in err (a pattern's error, or "memory exhausted"). */
static int parse_patterns(struct ast *t, const char *const *pats, const size_t *lens, size_t n,
                          const struct grep_opts *o, char *err, size_t errlen, char *warn,
                          size_t warnlen)
{
	int root = -2;
	for (size_t i = 0; i < n; i++) {
		int r = grep_parse(t, pats[i], lens[i], o->syntax, o->icase, err, errlen, warn, warnlen);
		if (r < 0)
			return -1;
		if (root < 0) {
			root = r;
		} else {
			int a = ast_new(t, N_ALT);
			if (a < 0) {
				snprintf(err, errlen, "memory exhausted");
				return -1;
			}
			t->n[a].a = root;
			t->n[a].b = r;
			root = a;
		}
	}
	return root;
}

/* grep 3.8's superset DFA (dfa.c dfassbuild) of the patterns as its DFA reads them, into
 * g->sup: what it cannot take as any text (t->sup_read), word assertions taken as true;
 * -x's anchors kept, -w's not (its "[^[:alnum:]_]" is any text there).  grep runs regex
 * only on the lines the superset finds, so a line must match it as well as the patterns
 * read as regex reads them.  None when the patterns have no character that the DFA keeps
 * (grep then builds none).  0 or -1 (out of memory). */
static int superset_nfa(struct grep *g, const char *const *pats, const size_t *lens, size_t n)
{
	struct ast r = { .utf8 = 2, .sup_read = 1 };    /* a byte DFA: matches start anywhere */
	char err[128];
	int root = parse_patterns(&r, pats, lens, n, &g->o, err, sizeof err, NULL, 0);
	int chars = 0;
	for (int i = 0; i < r.len && !chars; i++)
		chars = r.n[i].kind == N_SET;
	if (root < 0 || !chars || r.err) {
		ast_free(&r);
		return root == -1 && !strcmp(err, "memory exhausted") ? -1 : 0;
	}
	for (int i = 0; i < r.len; i++)
		if (r.n[i].kind == N_ASSERT && r.n[i].akind != A_BOL && r.n[i].akind != A_EOL)
			r.n[i].kind = N_EMPTY;
	r.root = g->o.line ? wrap(&r, root, A_BOL, A_EOL) : root;
	int rc = r.root < 0 || r.err || nfa_build(&g->sup, &r) != 0 ? -1 : 0;
	if (rc == 0)
		g->sup.utf8 = 2;
	g->have_sup = rc == 0;
	ast_free(&r);
	return rc;
}

/* UTF-8 -o and colour: grep 3.8 takes the spans from glibc's regex, whose "." is a character
 * for glibc (also past U+10FFFF) and, where regex optimizes the pattern for UTF-8 (not -i, no
 * word assertion, \w \s or bracket it keeps as characters: optimize_utf8), any 2- to 6-byte
 * form with its lead byte, a surrogate (ED A0 80) too.  Likewise in any locale an ERE
 * operator with nothing to repeat or after an anchor (t->rx_ops): regex skips it (`^*a` is
 * `^a`, `^{2}a` is `^2}a`) where the DFA repeats the anchor or drops it.  The patterns read
 * so into g->span_nfa, wrapped as root (-w, -x); the lines stay the DFA's.  0 or -1. */
static int span_dot_nfa(struct grep *g, const char *const *pats, const size_t *lens, size_t n)
{
	const struct ast *t = &g->ast;
	int optimized = !g->o.icase && !t->mb_set;
	for (int i = 0; i < t->len; i++)
		if (t->n[i].kind == N_ASSERT && t->n[i].akind >= A_WORDB && t->n[i].akind <= A_EOW)
			optimized = 0;
	/* an ERE operator with nothing to repeat or after an anchor: regex's reading of it
	 * (parse.c rx_read) gives the spans even where the DFA's gives the lines */
	struct ast r = { .utf8 = t->utf8, .rx_read = t->rx_read || t->rx_ops,
	                 .dot_read = t->utf8 ? 1 + optimized : 0 };
	char err[128];
	int root = parse_patterns(&r, pats, lens, n, &g->o, err, sizeof err, NULL, 0);
	if (root < 0) {
		ast_free(&r);
		return root == -1 && !strcmp(err, "memory exhausted") ? -1 : 0;
	}
	r.root = g->o.line ? wrap(&r, root, A_BOL, A_EOL) :
	         g->o.word ? wrap(&r, root, A_NPREVW, A_NNEXTW) : root;
	r.utf8 = t->utf8;
	int rc = r.root < 0 || r.err || nfa_build(&g->span_nfa, &r) != 0 ? -1 : 0;
	if (rc == 0)
		g->span_nfa.utf8 = t->utf8;
	g->have_span_nfa = rc == 0;
	ast_free(&r);
	return rc;
}

/* Can the pattern rooted at root match the empty string (assertions taken as true) where
 * a longer match may start with a byte that is not an ASCII word character?  Then grep's
 * -w regex loop and our -w assertions may differ (w_regex_loop); not for "x*", whose longer
 * matches start with a word character, which fails the empty match there too.  The children
 * of a node come before it, so one pass in order. */
static int w_empty_differs(const struct ast *t, int root)
{
	uint8_t *z = malloc((size_t)t->len + 1);
	uint64_t (*f)[4] = malloc(((size_t)t->len + 1) * sizeof *f);   /* first bytes */
	if (!z || !f) {
		free(z);
		free(f);
		return 1;               /* the safe answer: the client's loop decides */
	}
	for (int i = 0; i <= root && i < t->len; i++) {
		const struct node *x = &t->n[i];
		memset(f[i], 0, sizeof f[i]);
		switch (x->kind) {
		case N_SET:
			z[i] = 0;
			memcpy(f[i], ast_set(t, i), sizeof f[i]);
			break;
		case N_CAT:
			z[i] = z[x->a] && z[x->b];
			for (int w = 0; w < 4; w++)
				f[i][w] = f[x->a][w] | (z[x->a] ? f[x->b][w] : 0);
			break;
		case N_ALT:
			z[i] = z[x->a] || z[x->b];
			for (int w = 0; w < 4; w++)
				f[i][w] = f[x->a][w] | f[x->b][w];
			break;
		case N_REPEAT:
			z[i] = x->min == 0 || z[x->a];
			if (x->max != 0)
				memcpy(f[i], f[x->a], sizeof f[i]);
			break;
		case N_GROUP:
			z[i] = z[x->a];
			memcpy(f[i], f[x->a], sizeof f[i]);
			break;
		case N_BACKREF:             /* may be empty, may be anything */
			z[i] = 1;
			memset(f[i], 0xff, sizeof f[i]);
			break;
		default:                    /* N_EMPTY, N_ASSERT */
			z[i] = 1;
			break;
		}
	}
	int r = 0;
	for (unsigned c = 0; z[root] && c < 256 && !r; c++)
		r = set_has(f[root], c) && !(c < 0x80 && is_word(c));
	free(z);
	free(f);
	return r;
}

/* Does glibc's regex decide which lines match, rather than grep 3.8's DFA?  In a UTF-8
 * locale, where the DFA cannot take the patterns (dfasupported): word assertions, -w (its
 * DFA pattern has "[^[:alnum:]_]"), back-references, an encoding error, \w \s and most
 * brackets (t->rx).  The DFA then only picks candidate lines: a superset (dfassbuild). */
static int regex_decides(const struct ast *t, const struct grep_opts *o)
{
	if (!o->utf8 || o->syntax == GREP_FIXED)
		return 0;
	if (t->rx || t->enc_err || t->has_backref || (o->word && !o->line))
		return 1;
	for (int i = 0; i < t->len; i++)
		if (t->n[i].kind == N_ASSERT && t->n[i].akind >= A_WORDB && t->n[i].akind <= A_EOW)
			return 1;
	return 0;
}

/* grep_compile; ctx_exact: compile the twin (grep_exact_twin), where UTF-8 context and -B
 * under no_walk_back take the exact path (1), or grep_redo_twin's (2): without
 * dfa_build_ascii_w's table, else as grep_compile */
static int compile(const char *const *pats, const size_t *lens, size_t n,
                   const struct grep_opts *o, struct grep **out, char *err, size_t errlen,
                   char *warn, size_t warnlen, int ctx_exact)
{
	*out = NULL;
	err[0] = '\0';
	if (warn && warnlen)
		warn[0] = '\0';
	struct grep *g = calloc(1, sizeof *g);
	if (!g) {
		snprintf(err, errlen, "memory exhausted");
		return -1;
	}
	g->o = *o;
	fmt_any_output = 0;
	struct ast *t = &g->ast;
	t->utf8 = o->utf8;
	int root = parse_patterns(t, pats, lens, n, o, err, errlen, warn, warnlen);
	if (root == -1)
		goto fail;
	if (t->rx_ops && regex_decides(t, o)) {
		/* read the operators as glibc's regex does (parse.c); the warnings are the DFA's,
		 * from the first reading */
		struct ast r = { .utf8 = o->utf8, .rx_read = 1 };
		int rroot = parse_patterns(&r, pats, lens, n, o, err, errlen, NULL, 0);
		if (rroot == -1) {
			ast_free(&r);
			if (!strcmp(err, "memory exhausted"))
				goto fail;
			err[0] = '\0';          /* keep the DFA's reading */
		} else {
			ast_free(t);
			*t = r;
			root = rroot;
			if (superset_nfa(g, pats, lens, n) != 0)
				goto oom;
		}
	}
	if (root < 0) {
		/* no pattern at all (-f /dev/null): nothing matches */
		g->match_none = 1;
		root = ast_new(t, N_SET);
		if (root < 0)
			goto oom;
	}
	if ((o->only || o->color) && !t->has_backref &&
	    ((o->utf8 && t->has_dot) || (t->rx_ops && !t->rx_read)) &&
	    span_dot_nfa(g, pats, lens, n) != 0)
		goto oom;
	int bare = root;   /* the patterns without -w's or -x's assertions */
	if (o->line)
		root = wrap(t, root, A_BOL, A_EOL);
	else if (o->word)
		root = wrap(t, root, A_NPREVW, A_NNEXTW);
	if (root < 0 || t->err)
		goto oom;
	t->root = root;

	int eol = o->null_data ? 0 : '\n';
	g->lit_len = must_literal(t, o->icase, o->utf8, g->lit, sizeof g->lit, g->lit_set,
	                          GREP_LIT_SETS, &g->lit_is_sets);
	for (size_t i = 0; o->icase && !g->lit_is_sets && i < g->lit_len; i++)
		g->lit_icase |= g->lit[i] >= 'a' && g->lit[i] <= 'z';
	g->lit_exact = !o->icase && !o->word && !o->line && !g->lit_is_sets && !g->match_none &&
	               literal_is_pattern(t, bare, g->lit, g->lit_len, o->utf8);
	/* UTF-8: matches start on characters (utf8 1), except under -w: grep 3.8's -w retry loop
	 * moves on byte by byte, and an empty match inside a character that is no word
	 * character (the middle of "·" in "word·middle") passes its checks (utf8 2); not with
	 * -i (found by tests/grep/utf8.sh: grep -i -w 'x*' does not match there) */
	if (o->utf8 && o->word && !o->line && !o->icase)
		t->utf8 = 2;
	/* ... and wherever a pattern holds an encoding error, also without -w: grep 3.8 hands
	 * such patterns to glibc's regex, which goes byte by byte, every byte a start (a lone
	 * 0xA9 matches inside 'é', C3 A9; found by fuzz_grep), when it can (optimize_utf8):
	 * not under -i, nor with word assertions, \w \s or brackets it must keep as
	 * characters; then matches start on characters */
	int bytewise = o->utf8 && t->enc_err && !o->icase && !t->mb_set;
	for (int i = 0; bytewise && i < t->len; i++)
		bytewise = t->n[i].kind != N_ASSERT || t->n[i].akind < A_WORDB || t->n[i].akind > A_EOW;
	if (bytewise)
		t->utf8 = 2;
	/* -w over patterns that can match the empty string: grep's regex loop decides (not when
	 * grep runs them as -F: two or more plain strings) */
	if (o->utf8 && o->word && !o->line && o->syntax != GREP_FIXED && !grep_runs_fixed(pats, lens, n, o) &&
	    w_empty_differs(t, bare)) {
		struct ast b = *t;      /* the same nodes, rooted before the -w wrap */
		b.root = bare;
		if (nfa_build(&g->w_nfa, &b) != 0)
			goto oom;
		g->w_nfa.utf8 = t->utf8;
		g->have_w_nfa = 1;
	}
	/* a set of strings (-F -f): its automaton straight from the trie; the NFA is then only
	 * for -o, colour and the exact path's -B under arf grep, made when first asked for
	 * (grep_nfa): building it is a fifth of the start-up with 10,000 patterns */
	int lit = dfa_build_literals(&g->dfa, t, eol, -1);
	if (lit == -2)
		goto oom;
	int context = o->before > 0 || o->after > 0;
	/* -w or -x over a set of strings: the set's own automaton finds the lines that hold one
	 * of the strings (a superset, also of the pieces between a binary file's NULs), and the
	 * client keeps those where one is word- or line-bounded, with the set's trie (strset,
	 * line_matches).  The DFA of the NFA with the assertions was most of the start-up with
	 * 10,000 strings (-x: two tables, 3 MB of segment), and in UTF-8 each candidate went
	 * through the lazy DFA.  Not with -v or context: the client needs every line then */
	int bounded_set = 0;
	/* a set of strings whose automaton passes the segment's limits: every line goes to the
	 * client (its trie decides), without building the NFA's DFA to find that out again
	 * (100,000 strings: a fifth of the start-up) */
	int too_big = lit == 2;
	/* -x over a set of strings: the trie from the line's start is the whole answer (a line
	 * that leaves it is dead until its end), no client check; the binary table likewise */
	struct ast bare_t = *t;
	bare_t.root = bare;
	int line_set = 0;
	if (lit == 1 && o->line) {
		int r = dfa_build_line_literals(&g->dfa, &bare_t, eol, -1, 0);
		if (r == -2)
			goto oom;
		line_set = r == 0;
	}
	/* UTF-8 word assertions (\b \B \< \> -w): a DFA whose states follow the characters
	 * (dfa_build_u8) decides in the segment, as in C, also for -v and context.  Where it
	 * cannot (too big, an encoding error in the pattern, many alternatives), the exact path
	 * below: a set of strings' trie, or the relaxed DFA */
	int u8dfa = 0;
	for (int i = 0; o->utf8 && lit == 1 && !g->have_sup && !g->have_w_nfa && !t->has_backref && t->len <= U8_DFA_MAX_AST &&
	                i < t->len && !u8dfa; i++)
		u8dfa = t->n[i].kind == N_ASSERT && t->n[i].akind != A_BOL && t->n[i].akind != A_EOL;
	/* ... or, for a pattern of ASCII bytes, the C-sized table of dfa_build_ascii_w, whose
	 * "maybe" (a match beside a byte >= 0x80) sends the file to a twin (maybe_redo):
	 * grep_redo_twin's (ctx_exact 2) takes the decoder's DFA, grep_exact_twin's (1) the
	 * exact path, relaxed DFA and client.  Not with context (the twin's rules there
	 * differ: ctx_redo) */
	int ascii_w = 0;
	if (u8dfa && o->before < 0 && o->after < 0 && ctx_exact != 2) {
		int r = dfa_build_ascii_w(&g->dfa, t, eol, -1);
		if (r == -2)
			goto oom;
		ascii_w = r == 0;
		if (ascii_w && ctx_exact) {
			dfa_free(&g->dfa);
			u8dfa = 0;
		}
	}
	if (u8dfa && !ascii_w) {
		int r = dfa_build_u8(&g->dfa, t, eol, -1);
		if (r == -2)
			goto oom;
		u8dfa = r == 0;
	}
	if (lit == 1 && (o->word || o->line) && !line_set && !u8dfa) {
		int r = dfa_build_literals(&g->dfa, &bare_t, eol, -1);
		if (r == -2)
			goto oom;
		too_big = r == 2;
		if (r == 0 && !o->invert && !context) {
			span_setup(g);
			bounded_set = g->span_kind == SPAN_SET;
		}
		if (!bounded_set)
			dfa_free(&g->dfa);
	}
	int nfa_ok = 1;
	if (lit == 0 || bounded_set || too_big || line_set || u8dfa) {
		g->nfa_later = 1;
	} else {
		nfa_ok = nfa_build(&g->nfa, t) == 0;
		g->nfa.utf8 = t->utf8;
	}
	/* UTF-8: the DFA's word assertions see bytes; the client decides on characters */
	int u8words = 0;
	for (int i = 0; o->utf8 && i < t->len; i++)
		u8words |= t->n[i].kind == N_ASSERT && t->n[i].akind != A_BOL && t->n[i].akind != A_EOL;
	/* ... but a DFA without them (every word assertion holds) is a superset of the lines:
	 * the segment sends its lines, with the literal skip.  Not with line anchors (a piece of
	 * a binary file's line between NULs may match where the line does not), -v or context */
	int relaxed = u8words && nfa_ok && !t->has_backref && !o->invert && !context &&
	              !bounded_set && !too_big;
	for (int i = 0; relaxed && i < t->len; i++)
		relaxed = t->n[i].kind != N_ASSERT || (t->n[i].akind != A_BOL && t->n[i].akind != A_EOL);
	if (u8dfa)
		u8words = relaxed = 0;
	int rc;
	if (lit == 0 || bounded_set || line_set || u8dfa) {
		rc = 0;            /* lit == 0: no assertions, neither u8words nor relaxed */
	} else if (too_big) {
		rc = -1;
	} else if (relaxed) {
		rc = relaxed_dfa(&g->dfa, t, eol);
		relaxed = rc == 0;
	} else {
		rc = nfa_ok ? dfa_build(&g->dfa, &g->nfa, eol, -1, 0) : -1;
	}
	if (rc == -2)
		goto oom;
	/* an encoding error in a pattern that glibc's regex matches on characters (above): a
	 * lone byte of the pattern must not start a match inside a character of the text,
	 * which the byte DFA cannot tell: it picks the lines, the client decides */
	int chars_err = o->utf8 && t->enc_err && !bytewise;
	/* UTF-8 context (-A -B -C, 0 too: "--"), not -a, lines printed: a line grep 3.8 does
	 * not print (an encoding error) changes which lines it prints around it
	 * (select_grep38), lines the segment would not send.  Up to the first such line grep
	 * tries to print, it prints what the fast path prints, so the fast path goes first and
	 * a file whose records hold one runs again on the exact path (ctx_redo, the twin:
	 * every line goes to the client).  The twin is compiled with ctx_exact. */
	int ctx_lines = o->utf8 && !o->text && (o->before >= 0 || o->after >= 0) &&
	                !o->count && !o->quiet && !o->list && !o->list_nomatch;
	int ctx_enc = ctx_lines && ctx_exact == 1;
	/* -B where the segment cannot walk back (arf grep, no_walk_back): the caller reads the
	 * leading lines and adds them to the records (lead_client), the exact path in the twin */
	int lines = !o->count && !o->quiet && !o->list && !o->list_nomatch;
	int walk_back = o->no_walk_back && o->before > 0 && lines;
	g->exact = bounded_set || rc != 0 || t->has_backref || !nfa_ok ||
	           (walk_back && ctx_exact == 1) || u8words || chars_err ||
	           g->have_sup || ctx_enc ||
	           g->have_w_nfa;
	if (!nfa_ok)
		nfa_free(&g->nfa);
	if (g->exact && !relaxed && !bounded_set &&
	    (rc != 0 || u8words || o->invert || context || ctx_enc ||
	     (!o->text && !o->null_data))) {
		/* send every line (or every line with the literal) and decide here */
		dfa_free(&g->dfa);
		if (all_lines_dfa(&g->dfa, eol) != 0)
			goto oom;
		if (o->invert || context || ctx_enc || (!o->text && !o->null_data))
			g->lit_len = 0;
	}
	if (!g->exact && !o->text && !o->null_data && !o->binary_nomatch) {
		/* a big table (thousands of patterns) is built once: the binary table takes its
		 * rows when it can */
		rc = eol == '\n' && dfa_share_binary(&g->bdfa, &g->dfa) == 0 ? 0 :
		     u8dfa ? (ascii_w ? dfa_build_ascii_w : dfa_build_u8)(&g->bdfa, t, '\n', 0) :
		     line_set ? dfa_build_line_literals(&g->bdfa, &bare_t, '\n', 0, DFA_NO_DEAD) :
		     grep_nfa(g) ? dfa_build(&g->bdfa, &g->nfa, '\n', 0, DFA_NO_DEAD) : -1;
		if (rc == 1)
			rc = -1;    /* the binary trie alone too big: as below */
		if (rc == -2)
			goto oom;
		if (rc != 0) {
			/* rare: the binary table alone is too big; take the exact path */
			g->exact = 1;
			dfa_free(&g->dfa);
			if (all_lines_dfa(&g->dfa, eol) != 0)
				goto oom;
			g->lit_len = 0;
		} else {
			g->have_bdfa = 1;
		}
	}
	g->ctx_redo = ctx_lines && !g->exact;
	g->maybe_redo = ascii_w && u8dfa && !g->exact;
	g->lead_client = walk_back && !g->exact;
	if (g->ctx_redo || g->lead_client || g->maybe_redo) {
		g->pats = calloc(n ? n : 1, sizeof *g->pats);
		g->lens = malloc((n ? n : 1) * sizeof *g->lens);
		if (!g->pats || !g->lens)
			goto oom;
		g->n_pats = n;
		for (size_t i = 0; i < n; i++) {
			g->pats[i] = malloc(lens[i] ? lens[i] : 1);
			if (!g->pats[i])
				goto oom;
			memcpy(g->pats[i], pats[i], lens[i]);
			g->lens[i] = lens[i];
		}
	}
	if (grep_gen(g, err, errlen) != 0)
		goto fail;
	*out = g;
	return 0;
oom:
	snprintf(err, errlen, "memory exhausted");
fail:
	grep_free(g);
	return -1;
}

int grep_compile(const char *const *pats, const size_t *lens, size_t n,
                 const struct grep_opts *o, struct grep **out, char *err, size_t errlen,
                 char *warn, size_t warnlen)
{
	return compile(pats, lens, n, o, out, err, errlen, warn, warnlen, 0);
}

struct grep *grep_exact_twin(struct grep *g)
{
	if (!g->ctx_redo && !g->lead_client && !g->maybe_redo)
		return g;
	if (!g->twin) {
		/* compiling resets the "--" state shared across files: keep it */
		int any = fmt_any_output;
		char err[256];
		if (compile((const char *const *)g->pats, g->lens, g->n_pats, &g->o, &g->twin, err,
		            sizeof err, NULL, 0, 1) != 0)
			g->twin = NULL;
		fmt_any_output = any;
		if (!g->twin)
			return NULL;
	}
	g->twin->o.with_filename = g->o.with_filename;
	return g->twin;
}

struct grep *grep_redo_twin(struct grep *g)
{
	if (!g->maybe_redo || g->ctx_redo || g->lead_client)
		return grep_exact_twin(g);
	if (!g->redo_twin) {
		int any = fmt_any_output;
		char err[256];
		if (compile((const char *const *)g->pats, g->lens, g->n_pats, &g->o, &g->redo_twin,
		            err, sizeof err, NULL, 0, 2) != 0)
			g->redo_twin = NULL;
		fmt_any_output = any;
		if (!g->redo_twin)
			return NULL;
	}
	g->redo_twin->o.with_filename = g->o.with_filename;
	return g->redo_twin;
}

int grep_ctx_redo(const struct grep *g)
{
	return g->ctx_redo || g->maybe_redo;
}

int grep_lead_client(const struct grep *g)
{
	return g->lead_client;
}

int grep_needs_exact(const struct grep *g, const uint8_t *rec, size_t rec_len)
{
	if (!g->ctx_redo && !g->maybe_redo)
		return 0;
	size_t hdr = g->o.line_number ? 24 : 16;
	for (size_t i = 0; i + hdr <= rec_len;) {
		uint64_t q[2];
		memcpy(q, rec + i, sizeof q);
		i += hdr;
		if (q[0] == GREP_REC_REDO)
			return 1;
		if (!g->ctx_redo) {
			if (q[1] > rec_len - i)
				return 0;
			i += q[1];
			continue;
		}
		if (q[1] > rec_len - i)
			return 0;              /* malformed: the formatter says so */
		/* any line with an encoding error, also one grep would print in part (-o): the
		 * exact path prints what grep prints either way */
		if (!(q[0] & GREP_REC_SCRATCH) && utf8_print_errors(rec + i, q[1]))
			return 1;
		i += q[1];
	}
	return 0;
}

const struct nfa *grep_nfa(struct grep *g)
{
	if (g->nfa_later) {
		g->nfa_later = 0;
		if (nfa_build(&g->nfa, &g->ast) != 0)
			nfa_free(&g->nfa);
		g->nfa.utf8 = g->ast.utf8;
	}
	return g->nfa.s ? &g->nfa : NULL;
}

void grep_free(struct grep *g)
{
	if (!g)
		return;
	ast_free(&g->ast);
	lazy_free(g->lazy);
	lazy_free(g->sup_lazy);
	bt_det_free(g->bt_det);
	nfa_free(&g->sup);
	nfa_free(&g->span_nfa);
	nfa_free(&g->w_nfa);
	strset_free(g->span_set);
	nfa_free(&g->nfa);
	dfa_free(&g->dfa);
	dfa_free(&g->bdfa);
	free(g->seg);
	free(g->arf_seg);
	grep_free(g->twin);
	grep_free(g->redo_twin);
	for (size_t i = 0; g->pats && i < g->n_pats; i++)
		free(g->pats[i]);
	free(g->pats);
	free(g->lens);
	free(g);
}

void grep_set_with_filename(struct grep *g, int on)
{
	g->o.with_filename = on;
}

void grep_set_file_size(struct grep *g, int64_t size)
{
	uint64_t bound = size < 0 || size == INT64_MAX ? INT64_MAX
	               : (uint64_t)size + (g->o.line_number != 0);
	fmt_num_width = 1;
	for (; bound >= 10; bound /= 10)
		fmt_num_width++;
}

const uint8_t *grep_segment(const struct grep *g, size_t *len)
{
	*len = g->seg_len;
	return g->seg;
}

void grep_describe(const struct grep *g, char *buf, size_t len)
{
	char lit[400];
	size_t k = 0;
	for (size_t i = 0; !g->lit_is_sets && i < g->lit_len && k + 5 < sizeof lit; i++) {
		unsigned c = g->lit[i];
		k += (size_t)snprintf(lit + k, sizeof lit - k, c >= 0x20 && c < 0x7f && c != '"' &&
		                      c != '\\' ? "%c" : "\\x%02x", c);
	}
	/* byte sets: a set of one byte as a byte, others in brackets ("[\xa3\x83\x82]") */
	for (size_t i = 0; g->lit_is_sets && i < g->lit_len && k + 40 < sizeof lit; i++) {
		int cnt = 0;
		for (unsigned c = 0; c < 256; c++)
			cnt += g->lit_set[i][c / 8] >> (c % 8) & 1;
		if (cnt > 1)
			lit[k++] = '[';
		for (unsigned c = 0; c < 256 && k + 10 < sizeof lit; c++)
			if (g->lit_set[i][c / 8] >> (c % 8) & 1)
				k += (size_t)snprintf(lit + k, sizeof lit - k, c >= 0x20 && c < 0x7f &&
				                      c != '"' && c != '\\' && c != '[' && c != ']' ?
				                      "%c" : "\\x%02x", c);
		if (cnt > 1)
			lit[k++] = ']';
	}
	lit[k] = '\0';
	snprintf(buf, len, "%s: dfa %d states x %d byte classes (%zu bytes of table)%s%s%s, "
	         "segment %zu bytes", g->exact ? "exact path (candidate lines checked by the client)"
	         : "dfa", g->dfa.n_rows - DFA_N_SPECIAL, g->dfa.n_cls,
	         (size_t)g->dfa.n_rows * (size_t)(g->dfa.n_cls + 1) * 4,
	         g->lit_len ? ", required literal \"" : ", no required literal", lit,
	         !g->lit_len ? "" : g->lit_is_sets ? "\" (byte sets)" :
	         g->lit_icase ? "\" (letters folded)" : "\"", g->seg_len);
}

/* ---- matching on the client ---- */

static int line_matches_1(struct grep *g, const uint8_t *p, size_t n);
static int word_before(const struct grep *g, const uint8_t *p, size_t n, size_t i);
static int word_at(const struct grep *g, const uint8_t *p, size_t n, size_t i);

/* UTF-8 -w over patterns that can match the empty string (g->w_nfa: them without -w's
 * assertions): grep 3.8's regex loop (EGexecute).  At each place, from the line's start on,
 * regex's longest match; when it is not a word, shorter ones at the same place (re_match
 * up to one byte less), where one of length 0 counts as none: it moves on a byte.  So an
 * empty match is a word match only where nothing longer matches at its place. */
static int w_regex_loop(struct grep *g, const uint8_t *p, size_t n)
{
	size_t from = 0, s, e;
	while (from <= n && nfa_leftmost_longest(&g->w_nfa, p, n, from, &s, &e)) {
		size_t len = e - s;
		for (;;) {
			if (!word_before(g, p, n, s) && !word_at(g, p, n, s + len))
				return 1;
			size_t s2, e2;
			if (len == 0 || !nfa_leftmost_longest(&g->w_nfa, p, s + len - 1, s, &s2, &e2) ||
			    s2 != s || e2 == s)
				break;
			len = e2 - s;
		}
		from = s + 1;
	}
	return 0;
}

/* Does line p[0..n) contain a match (exact)?  -1 (and g->gave_up) when the backtracker
 * gave up. */
static int line_matches(struct grep *g, const uint8_t *p, size_t n)
{
	int r = line_matches_1(g, p, n);
	if (r == 1 && g->have_w_nfa)
		r = w_regex_loop(g, p, n);
	return r;
}

int grep_line_matches(struct grep *g, const uint8_t *p, size_t n)
{
	return line_matches(g, p, n);
}

static int line_matches_1(struct grep *g, const uint8_t *p, size_t n)
{
	if (g->match_none || g->gave_up)
		return 0;
	/* glibc's regex decides, on the lines grep's superset DFA finds (superset_nfa) */
	if (g->have_sup && !lazy_line_matches(&g->sup_lazy, &g->sup, p, n))
		return 0;
	/* a set of strings (maybe under -w or -x): its trie decides, as for -o.  The lazy DFA
	 * of its NFA adds the closure of every string at each start: with 10,000 strings most
	 * of the time went there (perf: closure, simulate), and 100,000 strings past the
	 * segment's DFA limits sent every line to it */
	if (g->span_kind == SPAN_UNKNOWN && !g->ast.has_backref)
		span_setup(g);
	if (g->span_kind == SPAN_SET)
		return strset_line_matches(g->span_set, p, n);
	/* one string: its occurrences, checked as -o finds them.  In UTF-8 a word assertion
	 * (-w) kept the lazy DFA from the line and each line went through the NFA simulation
	 * (perf: closure, simulate; -c -w fox 3.5x its C-locale time) */
	if (g->span_kind == SPAN_FIXED) {
		size_t s, e;
		return next_match(g, p, n, 0, &s, &e);
	}
	if (g->ast.has_backref || !grep_nfa(g)) {
		/* the NFA stands for a back-reference with any text: no match there, none here */
		if (g->nfa.s && !lazy_line_matches(&g->lazy, &g->nfa, p, n))
			return 0;
		if (!g->bt_det && !(g->bt_det = bt_det_build(&g->ast)))
			return g->gave_up = 1, -1;
		int r = bt_line_matches_det(&g->ast, g->bt_det, p, n, g->o.icase);
		if (r < 0)
			g->gave_up = 1;
		return r < 0 ? -1 : r;
	}
	return lazy_line_matches(&g->lazy, &g->nfa, p, n);
}

/* Is node x of t one string (a chain of one-byte sets; with icase a letter may stand for
 * both its cases)?  Its bytes (letters lower case when folded) into buf; the length, or -1.
 * Iterative: a CAT chain is as deep as the string is long. */
static long fixed_string(const struct ast *t, int x, int icase, uint8_t *buf, size_t cap)
{
	int stack[2 * 256 + 8];
	size_t sp = 0, len = 0;
	stack[sp++] = x;
	while (sp > 0) {
		const struct node *nd = &t->n[stack[--sp]];
		if (nd->kind == N_CAT) {
			if (sp + 2 > sizeof stack / sizeof stack[0])
				return -1;
			stack[sp++] = nd->b;
			stack[sp++] = nd->a;
			continue;
		}
		if (nd->kind != N_SET || len == cap)
			return -1;
		int bits = 0, c = -1;
		for (int i = 0; i < 256; i++)
			if (set_has(t->sets[nd->set], (unsigned)i)) {
				bits++;
				if (c < 0)
					c = i;
			}
		if (bits == 2 && icase && c >= 'A' && c <= 'Z' && set_has(t->sets[nd->set], (unsigned)c + 32))
			c += 32;
		else if (bits != 1)
			return -1;
		buf[len++] = (uint8_t)c;
	}
	return (long)len;
}

static int is_assert(const struct ast *t, int x, int kind)
{
	return t->n[x].kind == N_ASSERT && t->n[x].akind == kind;
}

/* How -o and colour find spans: once per compile (see struct grep's span_kind). */
static void span_setup(struct grep *g)
{
	const struct ast *t = &g->ast;
	int x = t->root;
	g->span_kind = SPAN_NFA;
	if (g->ast.has_backref)
		return;
	/* -w and -x wrap the pattern: CAT(assert, CAT(pattern, assert)) */
	const struct node *r = &t->n[x];
	if (r->kind == N_CAT && t->n[r->b].kind == N_CAT) {
		int a1 = r->a, in = t->n[r->b].a, a2 = t->n[r->b].b;
		if (is_assert(t, a1, A_NPREVW) && is_assert(t, a2, A_NNEXTW)) {
			g->span_word = 1;
			x = in;
		} else if (is_assert(t, a1, A_BOL) && is_assert(t, a2, A_EOL) && g->o.line) {
			g->span_line = 1;
			x = in;
		}
	}
	long len = fixed_string(t, x, g->o.icase, g->span_lit, sizeof g->span_lit);
	if (len > 0) {
		g->span_len = (size_t)len;
		g->span_kind = SPAN_FIXED;
		return;
	}
	/* several strings (-F -f): their trie, not an NFA whose start closure holds them all;
	 * out of memory or too big, the NFA as before */
	if (strset_build(&g->span_set, t, x, g->span_word, g->span_line) == 0) {
		g->span_kind = SPAN_SET;
		return;
	}
	g->span_word = g->span_line = 0;
	if (!grep_nfa(g))
		return;
	int no_sets;   /* (none asked for: the span search takes bytes) */
	g->span_len = must_literal(t, g->o.icase, g->o.utf8, g->span_lit, sizeof g->span_lit, NULL, 0,
	                           &no_sets);
	if (g->span_len > 0)
		g->span_kind = SPAN_LITERAL;
}

static int fold(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The first occurrence of g's span_lit in p[from..n) (ASCII letters folded with -i), or -1. */
static long find_lit(const struct grep *g, const uint8_t *p, size_t n, size_t from)
{
	size_t m = g->span_len;
	if (n < m || from > n - m)
		return -1;
	if (!g->o.icase) {
		const uint8_t *q = memmem(p + from, n - from, g->span_lit, m);
		return q ? q - p : -1;
	}
	for (size_t i = from; i + m <= n; i++) {
		size_t k = 0;
		while (k < m && fold(p[i + k]) == g->span_lit[k])
			k++;
		if (k == m)
			return (long)i;
	}
	return -1;
}

static int word_byte(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Is there a word character just before (at) position i?  In a UTF-8 locale a character. */
static int word_before(const struct grep *g, const uint8_t *p, size_t n, size_t i)
{
	if (i == 0)
		return 0;
	return g->o.utf8 ? utf8_word_before(p, n, i) == 1 : word_byte(p[i - 1]);   /* -w: errors none */
}

static int word_at(const struct grep *g, const uint8_t *p, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	return g->o.utf8 ? utf8_word_at(p, n, i) == 1 : word_byte(p[i]);
}

/* The leftmost-longest match starting at or after from: 1 with [*s, *e), else 0. */
static int next_match(struct grep *g, const uint8_t *p, size_t n, size_t from, size_t *s,
                      size_t *e)
{
	if (g->match_none || g->gave_up)
		return 0;
	if (g->have_span_nfa)     /* "." as glibc's regex takes it (span_dot_nfa) */
		return nfa_leftmost_longest(&g->span_nfa, p, n, from, s, e);
	if (g->span_kind == SPAN_UNKNOWN)
		span_setup(g);
	if (g->span_kind == SPAN_FIXED) {
		/* one string: its occurrences, the first that -w or -x allows */
		for (long q; (q = find_lit(g, p, n, from)) >= 0; from = (size_t)q + 1) {
			size_t end = (size_t)q + g->span_len;
			if (g->span_word && (word_before(g, p, n, (size_t)q) || word_at(g, p, n, end)))
				continue;
			if (g->ast.utf8 == 1 && utf8_inside(p, n, (size_t)q))
				continue;          /* starts inside a character: not a match there */
			if (g->span_line && (q != 0 || end != n))
				return 0;
			*s = (size_t)q;
			*e = end;
			return 1;
		}
		return 0;
	}
	if (g->span_kind == SPAN_SET)
		return strset_leftmost_longest(g->span_set, p, n, from, s, e);
	/* every match contains the literal: none after from, no match there */
	if (g->span_kind == SPAN_LITERAL && find_lit(g, p, n, from) < 0)
		return 0;
	if (!g->ast.has_backref && grep_nfa(g))
		return nfa_leftmost_longest(&g->nfa, p, n, from, s, e);
	for (size_t i = from; i <= n; i++) {
		if (g->ast.utf8 == 1 && utf8_inside(p, n, i))
			continue;
		if (!g->bt_det && !(g->bt_det = bt_det_build(&g->ast)))
			return g->gave_up = 1, 0;
		long r = bt_longest_at_det(&g->ast, g->bt_det, p, n, i, g->o.icase);
		if (r == -2) {
			g->gave_up = 1;
			return 0;
		}
		if (r >= 0) {
			*s = i;
			*e = (size_t)r;
			return 1;
		}
	}
	return 0;
}

/* ---- output ---- */

#define SGR_END "\33[m\33[K"

static void sgr(FILE *f, const struct grep *g, const char *code, const void *p, size_t n)
{
	if (g->o.color)
		fprintf(f, "\33[%sm\33[K", code);
	fwrite(p, 1, n, f);
	if (g->o.color)
		fputs(SGR_END, f);
}

static void put_sep(FILE *f, const struct grep *g, char c)
{
	sgr(f, g, "36", &c, 1);
}

static void put_num(FILE *f, const struct grep *g, uint64_t v, char sep)
{
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%*llu", g->o.initial_tab ? fmt_num_width : 0,
	                 (unsigned long long)v);
	sgr(f, g, "32", buf, (size_t)n);
	put_sep(f, g, sep);
}

static void put_name(FILE *f, const struct grep *g, const char *name)
{
	sgr(f, g, "35", name, strlen(name));
}

struct fmt {
	struct grep *g;
	const char *name;
	FILE *f;
	int64_t last_end;          /* offset after the last line printed from this file, -1 */
	int own_seps;              /* the caller prints the "--" (select_grep38), not put_line */
};

static void put_prefix(struct fmt *x, uint64_t lineno, uint64_t off, char sep)
{
	const struct grep_opts *o = &x->g->o;
	if (o->with_filename) {
		put_name(x->f, x->g, x->name);
		if (o->null_name)
			fputc('\0', x->f);
		else
			put_sep(x->f, x->g, sep);
	}
	if (o->line_number)
		put_num(x->f, x->g, lineno, sep);
	if (o->byte_offset)
		put_num(x->f, x->g, off, sep);
}

/* -T: the line's text starts at a tab stop after a prefix (an empty line gets no tab) */
static void put_tab(struct fmt *x, size_t n)
{
	const struct grep_opts *o = &x->g->o;
	if (o->initial_tab && n > 0 && (o->with_filename || o->line_number || o->byte_offset))
		fputc('\t', x->f);
}

/* Print one line as grep does; context says it is a context line ('-').  0 when grep 3.8
 * prints nothing for it and leaves its last printed line where it was (an encoding error in
 * the line, or in an -o match), else 1. */
static int put_line(struct fmt *x, const uint8_t *p, size_t n, uint64_t off, uint64_t lineno,
                    int context)
{
	const struct grep_opts *o = &x->g->o;
	FILE *f = x->f;
	char eol = o->null_data ? '\0' : '\n';
	char sep = context ? '-' : ':';
	int64_t last_end = x->last_end;
	if ((int64_t)off < last_end)
		return 1;  /* printed already: a streamed part's overlap with the one before */
	if ((o->before >= 0 || o->after >= 0) && !x->own_seps) {
		if (fmt_any_output && x->last_end != (int64_t)off)
			sgr(f, x->g, "36", "--", 2), fputc('\n', f);
	}
	fmt_any_output = 1;
	/* UTF-8: grep 3.8 prints no line (no -o match) that holds an encoding error; it says
	 * "binary file matches" at the end instead (print_line_head).  Its "last line printed"
	 * stays where it was. */
	int check_enc = o->utf8 && !o->text;
	if (check_enc && !o->only && utf8_print_errors(p, n)) {
		x->g->enc_err = 1;
		return 0;
	}
	x->last_end = (int64_t)(off + n + 1);
	int matching = !context != !!o->invert;      /* the line's matches are what selected it */
	if (o->only) {
		if (!matching)
			return 1;
		size_t from = 0, s, e;
		while (from <= n && next_match(x->g, p, n, from, &s, &e)) {
			if (s == n)
				break;
			if (e == s) {
				from = s + 1;
				continue;
			}
			if (check_enc && utf8_print_errors(p + s, e - s)) {
				x->g->enc_err = 1;
				x->last_end = last_end;
				return 0;
			}
			put_prefix(x, lineno, off + s, sep);
			put_tab(x, e - s);
			sgr(f, x->g, "01;31", p + s, e - s);
			fputc(eol, f);
			from = e;
		}
		return 1;
	}
	put_prefix(x, lineno, off, sep);
	put_tab(x, n);
	if (o->color && matching) {
		size_t from = 0, done = 0, s, e;
		while (from <= n && next_match(x->g, p, n, from, &s, &e)) {
			if (s == n)
				break;
			if (e == s) {
				from = s + 1;
				continue;
			}
			fwrite(p + done, 1, s - done, f);
			sgr(f, x->g, "01;31", p + s, e - s);
			done = from = e;
		}
		fwrite(p + done, 1, n - done, f);
	} else {
		fwrite(p, 1, n, f);
	}
	fputc(eol, f);
	return 1;
}

struct rec {
	uint64_t off, len, lineno;
	int context;
	const uint8_t *p;
};

/* Decode records; returns the count or -1 when malformed. */
static long decode(const struct grep *g, const uint8_t *r, size_t n, struct rec **out)
{
	size_t hdr = g->o.line_number ? 24 : 16, cap = 0;
	long k = 0;
	struct rec *v = NULL;
	*out = NULL;
	for (size_t i = 0; i < n;) {
		if (n - i < hdr)
			goto bad;
		uint64_t q[3] = { 0, 0, 0 };
		memcpy(q, r + i, hdr);
		i += hdr;
		if (q[1] > n - i)
			goto bad;
		if ((size_t)k == cap) {
			cap = cap ? 2 * cap : 256;
			struct rec *nv = realloc(v, cap * sizeof *nv);
			if (!nv)
				goto bad;
			v = nv;
		}
		if (q[0] & GREP_REC_SCRATCH) {
			i += q[1];             /* a straddling line's copy (arf grep) */
			continue;
		}
		v[k].off = q[0] & ~(REC_CONTEXT | GREP_REC_SCRATCH);
		v[k].context = (q[0] & REC_CONTEXT) != 0;
		v[k].len = q[1];
		v[k].lineno = q[2];
		v[k].p = r + i;
		i += q[1];
		k++;
	}
	*out = v;
	return k;
bad:
	free(v);
	return -1;
}

/* UTF-8 with context, not -a (grep_compile sends every line): GNU grep 3.8's prtext and
 * prpending, line for line.  A line it does not print (an encoding error: put_line 0) leaves
 * `lastout`, the end of the last line printed, where it was: trailing context then starts
 * there again (before the line that selected it, or at the file's first line when nothing
 * was printed), a context line it cannot print is tried again until the pending count is
 * spent, leading context stops at lastout, and "--" comes when a group does not start at
 * lastout.  Without such a line this prints what select_exact's plain loop prints. */
static int64_t select_grep38(struct fmt *x, const struct rec *v, long n, struct grep_part *pt)
{
	const struct grep_opts *o = &x->g->o;
	int64_t count = 0, outleft = pt->limit;   /* negative: no limit */
	long lastout = -1, pending = 0;           /* lastout: the index just after it; -1: none */
	int64_t printed = pt->whole ? x->last_end : -1;  /* lines before it were printed */
	for (long i = 0; i < n && x->last_end >= 0 && lastout < 0 && !pt->whole; i++)
		if ((int64_t)v[i].off >= x->last_end)
			lastout = i;                      /* a part after the one that printed last */
	x->own_seps = 1;
#define SELECTED(k) ((line_matches(x->g, v[k].p, v[k].len) == 1) != !!o->invert)
#define PRLINE(k, ctx) (put_line(x, v[k].p, v[k].len, v[k].off, v[k].lineno, ctx) ? \
                        (void)(lastout = (k) + 1) : (void)0)
	/* the records may have gaps (the relaxed DFA sends candidate lines and their context,
	 * not every line): record k follows the one before it in the file */
#define CONTIG(k) ((k) > 0 && v[k].off == v[(k) - 1].off + v[(k) - 1].len + 1)
	for (long i = 0; i < n && outleft != 0;) {
		/* the next selected line, or run of lines under -v: [beg, lim) */
		long beg = i;
		while (beg < n && !SELECTED(beg) && !x->g->gave_up)
			beg++;
		if (beg == n || x->g->gave_up)
			break;
		long lim = beg + 1;
		while (o->invert && lim < n && SELECTED(lim))
			lim++;
		/* prtext(beg, lim): first the pending trailing context, from lastout */
		if (pending > 0 && lastout < 0)
			lastout = 0;
		for (; pending > 0 && lastout < beg && (lastout == 0 || CONTIG(lastout)); pending--)
			PRLINE(lastout, 1);
		long p = beg;
		for (int k = 0; k < o->before && p > (lastout < 0 ? 0 : lastout) && CONTIG(p); k++)
			p--;
		if (fmt_any_output && (p != lastout || (p > 0 && !CONTIG(p))) &&
		    (int64_t)v[p].off >= printed)
			sgr(x->f, x->g, "36", "--", 2), fputc('\n', x->f);
		for (; p < beg; p++)
			PRLINE(p, 1);
		for (; p < lim && outleft != 0; p++) {
			PRLINE(p, 0);
			pt->last_selected = (int64_t)v[p].off;
			if ((int64_t)v[p].off >= pt->new_from) {
				count++;
				outleft -= outleft > 0;
			}
		}
		fmt_any_output = 1;
		pending = o->after > 0 ? o->after : 0;
		i = lim;
	}
	if (pending > 0 && lastout < 0)
		lastout = 0;
	for (; pending > 0 && lastout < n && (lastout == 0 || CONTIG(lastout)); pending--)
		PRLINE(lastout, 1);
#undef CONTIG
#undef PRLINE
#undef SELECTED
	x->own_seps = 0;
	return count;
}

/* Exact mode: the records are candidate lines; select them here.  Lines before pt->new_from
 * were in an earlier part (the overlap that carries context): they start context again but
 * are not counted or printed twice.  At most pt->limit new lines are selected (-m), then the
 * lines after the last one are its trailing context. */
static int64_t select_exact(struct fmt *x, const struct rec *v, long n, int binary, int noeol,
                            struct grep_part *pt)
{
	const struct grep_opts *o = &x->g->o;
	int64_t count = 0, limit = pt->limit;
	int stop_first = o->quiet || o->list || o->list_nomatch;
	int emit = !o->count && !stop_first;
	if (binary) {
		/* grep treats NUL as a line end in binary files and prints no lines */
		for (long i = 0; i < n; i++) {
			if ((int64_t)v[i].off < pt->new_from)
				continue;
			const uint8_t *p = v[i].p, *end = p + v[i].len;
			for (;;) {
				const uint8_t *z = memchr(p, 0, (size_t)(end - p));
				size_t len = z ? (size_t)(z - p) : (size_t)(end - p);
				/* NUL ends a line here: after a final NUL with no newline, no more */
				if (!z && len == 0 && noeol && i == n - 1 && p != v[i].p)
					break;
				if ((line_matches(x->g, p, len) == 1) != !!o->invert) {
					count++;
					pt->last_selected = (int64_t)v[i].off;
				}
				if (x->g->gave_up)
					return count;
				if ((!o->count && count > 0) || (limit >= 0 && count >= limit))
					return count;
				if (!z)
					break;
				p = z + 1;
			}
		}
		return count;
	}
	if (emit && o->utf8 && !o->text && (o->before >= 0 || o->after >= 0))
		return select_grep38(x, v, n, pt);
	long last = -1, after_left = 0;
	for (long i = 0; i < n; i++) {
		int sel = (line_matches(x->g, v[i].p, v[i].len) == 1) != !!o->invert;
		if (x->g->gave_up)
			return count;
		if (sel) {
			int is_new = (int64_t)v[i].off >= pt->new_from;
			count += is_new;
			pt->last_selected = (int64_t)v[i].off;
			if (stop_first && is_new)
				return count;
			if (emit) {
				long b = o->before > 0 ? i - o->before : i;
				for (long j = b > last + 1 ? b : last + 1; j < i; j++)
					put_line(x, v[j].p, v[j].len, v[j].off, v[j].lineno, 1);
				put_line(x, v[i].p, v[i].len, v[i].off, v[i].lineno, 0);
				last = i;
				after_left = o->after > 0 ? o->after : 0;
			}
			if (is_new && limit >= 0 && count >= limit) {
				for (long j = i + 1; emit && j < n && j <= i + (o->after > 0 ? o->after : 0); j++)
					put_line(x, v[j].p, v[j].len, v[j].off, v[j].lineno, 1);
				return count;
			}
		} else if (emit && after_left > 0) {
			after_left--;
			put_line(x, v[i].p, v[i].len, v[i].off, v[i].lineno, 1);
			last = i;
		}
	}
	return count;
}

/* The segment's records (not exact): selected lines and their context, printed as they are.
 * The same overlap and -m rules as select_exact: selected lines before pt->new_from are not
 * counted again; after the limit-th new one, only its trailing context (the records that
 * follow it without a gap, up to -A lines) is printed, each as context. */
static int64_t print_records(struct fmt *x, const struct rec *v, long n, struct grep_part *pt)
{
	const struct grep_opts *o = &x->g->o;
	int64_t count = 0;
	for (long i = 0; i < n; i++) {
		put_line(x, v[i].p, v[i].len, v[i].off, v[i].lineno, v[i].context);
		if (v[i].context)
			continue;
		pt->last_selected = (int64_t)v[i].off;
		if ((int64_t)v[i].off < pt->new_from || !(++count == pt->limit))
			continue;
		uint64_t next = v[i].off + v[i].len + 1;
		for (long j = i + 1; j < n && j <= i + (o->after > 0 ? o->after : 0) && v[j].off == next;
		     next = v[j].off + v[j].len + 1, j++)
			put_line(x, v[j].p, v[j].len, v[j].off, v[j].lineno, 1);
		break;
	}
	return count;
}

int grep_is_exact(const struct grep *g)
{
	return g->exact;
}

int grep_arf_segment(struct grep *g, const uint8_t **seg, size_t *len, char *err,
                     size_t errlen)
{
	err[0] = '\0';
	if (!g->arf_seg && grep_arf_gen(g, err, errlen) != 0)
		return -1;
	*seg = g->arf_seg;
	*len = g->arf_seg_len;
	return 0;
}

int grep_format_records(struct grep *g, const char *name, const uint8_t *rec, size_t rec_len,
                        FILE *f, int64_t *last_end)
{
	struct fmt x = { g, name, f, *last_end, 0 };
	struct rec *v;
	long n = decode(g, rec, rec_len, &v);
	if (n < 0)
		return -1;
	for (long i = 0; i < n; i++)
		put_line(&x, v[i].p, v[i].len, v[i].off, v[i].lineno, v[i].context);
	free(v);
	*last_end = x.last_end;
	return g->gave_up ? -2 : 0;
}

int grep_format_context_line(struct grep *g, const char *name, const uint8_t *p, size_t n,
                             uint64_t off, uint64_t lineno, FILE *f, int64_t *last_end)
{
	struct fmt x = { g, name, f, *last_end, 0 };
	put_line(&x, p, n, off, lineno, 1);
	*last_end = x.last_end;
	return g->gave_up ? -2 : 0;
}

int grep_format(struct grep *g, const char *prog, const char *name, int64_t value,
                const uint8_t *rec, size_t rec_len, FILE *f, FILE *err_f,
                struct grep_file_result *res)
{
	int64_t last_end = -1;
	return grep_format_end(g, prog, name, value, rec, rec_len, f, err_f, res, &last_end);
}

int grep_format_part(struct grep *g, const char *name, int64_t value, const uint8_t *rec,
                     size_t rec_len, FILE *f, int64_t *last_end, struct grep_part *pt)
{
	const struct grep_opts *o = &g->o;
	struct fmt x = { g, name, f, *last_end, 0 };
	int binary = (int)(value & 1) && !o->text && !o->null_data;
	int64_t count = value >> 2;
	int noeol = (int)(value >> 1) & 1;
	int lines = !o->count && !o->quiet && !o->list && !o->list_nomatch;
	struct rec *v;
	long n = decode(g, rec, rec_len, &v);
	if (n < 0)
		return -1;
	pt->last_selected = -1;
	if (g->exact) {
		if (binary && o->binary_nomatch)
			count = 0;
		else
			count = select_exact(&x, v, n, binary, noeol, pt);
	} else if (!binary && lines) {
		count = print_records(&x, v, n, pt);
	} else if (pt->limit >= 0 && count > pt->limit) {
		count = pt->limit;     /* the segment's own -m counts from the part's start */
	}
	free(v);
	*last_end = x.last_end;
	pt->selected = count;
	return g->gave_up ? -2 : 0;
}

int grep_format_done(struct grep *g, const char *prog, const char *name, int64_t count,
                     int binary, FILE *f, FILE *err_f, struct grep_file_result *res)
{
	const struct grep_opts *o = &g->o;
	binary = binary && !o->text && !o->null_data;
	/* grep counts a selected line of a binary file as output for the "--" rule */
	if (binary && count > 0 && !o->count && !o->list && !o->list_nomatch && !o->quiet)
		fmt_any_output = 1;
	res->matched = count > 0;
	res->binary = binary;
	if (o->quiet)
		return 0;
	if (o->count) {
		if (o->with_filename) {
			put_name(f, g, name);
			if (o->null_name)
				fputc('\0', f);
			else
				put_sep(f, g, ':');
		}
		fprintf(f, "%lld\n", (long long)count);
	}
	if ((o->list && count > 0) || (o->list_nomatch && count == 0)) {
		put_name(f, g, name);
		fputc(o->null_name ? '\0' : '\n', f);
	}
	int enc_err = g->enc_err;
	g->enc_err = 0;
	if (((binary && count > 0) || (enc_err && !o->binary_nomatch)) && !o->count && !o->list &&
	    !o->list_nomatch) {
		fflush(f);
		fprintf(err_f, "%s: %s: binary file matches\n", prog, name);
	}
	return 0;
}

int grep_format_end(struct grep *g, const char *prog, const char *name, int64_t value,
                    const uint8_t *rec, size_t rec_len, FILE *f, FILE *err_f,
                    struct grep_file_result *res, int64_t *last_end)
{
	/* one run over the whole file: its segment applied -m and counted the lines, which the
	 * caller may have printed already (arf grep prints the records as they come) */
	struct grep_part pt = { .new_from = 0, .limit = g->exact ? g->o.max_count : -1 };
	int rc = grep_format_part(g, name, value, rec, rec_len, f, last_end, &pt);
	if (rc != 0)
		return rc;
	return grep_format_done(g, prog, name, g->exact ? pt.selected : value >> 2,
	                        (int)(value & 1), f, err_f, res);
}

int64_t grep_selected_end(struct grep *g, const uint8_t *p, size_t len, int64_t n)
{
	int eol = g->o.null_data ? '\0' : '\n';
	int64_t selected = 0;
	for (size_t at = 0; at < len && n > 0;) {
		const uint8_t *z = memchr(p + at, eol, len - at);
		size_t line_len = z ? (size_t)(z - (p + at)) : len - at;
		int m = line_matches(g, p + at, line_len);
		if (m < 0)
			return -1;
		at += line_len + (z != NULL);
		if ((m == 1) != !!g->o.invert && ++selected == n)
			return (int64_t)at;
	}
	return -1;
}
