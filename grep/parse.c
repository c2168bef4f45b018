/* parse.c: grep patterns (POSIX BRE and ERE with GNU extensions, C locale) into an AST.
 *
 * Follows what GNU grep 3.8 accepts, found by running it (tests/unit/test_grep.c pins each
 * case): BRE anchors only where POSIX allows them, `*` literal at the start of a BRE, invalid
 * ERE intervals taken literally, "X at start of expression" warnings, back-references valid
 * only to groups closed earlier in the same alternative, grep's exact error messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

#define DUP_MAX 32767     /* RE_DUP_MAX: larger counts are "Regular expression too big" */
#define MAX_DEPTH 2000    /* nesting of groups, to bound the recursion */
/* grep runs out of stack on deep nesting (about 12 400 groups with 8 MiB) and says so; past our
 * own limit we give the same message */
#define TOO_DEEP "stack overflow"

int ast_new(struct ast *t, int kind)
{
	if (t->len == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		struct node *n = realloc(t->n, (size_t)cap * sizeof *n);
		if (!n) {
			t->err = 1;
			return -1;
		}
		t->n = n;
		t->cap = cap;
	}
	int set = -1;
	if (kind == N_SET) {
		if (t->n_sets == t->cap_sets) {
			int cap = t->cap_sets ? 2 * t->cap_sets : 64;
			uint64_t (*s)[4] = realloc(t->sets, (size_t)cap * sizeof *s);
			if (!s) {
				t->err = 1;
				return -1;
			}
			t->sets = s;
			t->cap_sets = cap;
		}
		set = t->n_sets++;
		memset(t->sets[set], 0, sizeof t->sets[set]);
	}
	struct node *n = &t->n[t->len];
	memset(n, 0, sizeof *n);
	n->kind = (uint8_t)kind;
	n->a = n->b = -1;
	n->set = set;
	return t->len++;
}

void ast_free(struct ast *t)
{
	free(t->n);
	free(t->sets);
	memset(t, 0, sizeof *t);
}

struct parser {
	struct ast *t;
	const unsigned char *p, *end;
	int ere, icase;
	int utf8;              /* UTF-8 locale: characters, not bytes (utf8.c) */
	int depth;
	int after_anchor;      /* BRE: an anchor or assertion led the branch so far: a '^' now
	                        * is a literal ("^^" is "^" then a '^') */
	int group_base;        /* global number of this pattern's group 0 */
	int n_groups;          /* groups opened in this pattern */
	uint64_t done;         /* groups 1..63 closed so far in the current alternative */
	char *err;
	size_t errlen;
	char *warn;
	size_t warnlen;
	int failed;
};

static int fail(struct parser *ps, const char *msg)
{
	if (!ps->failed)
		snprintf(ps->err, ps->errlen, "%s", msg);
	ps->failed = 1;
	return -1;
}

static void warning(struct parser *ps, const char *msg)
{
	if (!ps->warn)
		return;
	size_t l = strlen(ps->warn);
	if (l < ps->warnlen)
		snprintf(ps->warn + l, ps->warnlen - l, "warning: %s\n", msg);
}

static int mk(struct parser *ps, int kind)
{
	int i = ast_new(ps->t, kind);
	if (i < 0)
		return fail(ps, "memory exhausted");
	return i;
}

static int mk2(struct parser *ps, int kind, int a, int b)
{
	int i = mk(ps, kind);
	if (i >= 0) {
		ps->t->n[i].a = a;
		ps->t->n[i].b = b;
	}
	return i;
}

/* Case folding of the C locale: only ASCII letters. */
static void fold_set(uint64_t *s)
{
	for (unsigned c = 'a'; c <= 'z'; c++)
		if (set_has(s, c) || set_has(s, c - 32)) {
			set_add(s, c);
			set_add(s, c - 32);
		}
}

static int mk_set(struct parser *ps, const uint64_t *set)
{
	int i = mk(ps, N_SET);
	if (i >= 0) {
		memcpy(ast_set(ps->t, i), set, 32);
		if (ps->icase)
			fold_set(ast_set(ps->t, i));
	}
	return i;
}

static int mk_byte(struct parser *ps, unsigned c)
{
	uint64_t s[4] = { 0 };
	set_add(s, c);
	return mk_set(ps, s);
}

static int mk_assert(struct parser *ps, int kind)
{
	int i = mk(ps, N_ASSERT);
	if (i >= 0)
		ps->t->n[i].akind = (uint8_t)kind;
	return i;
}

/* ---- UTF-8 locales ---- */

/* A set of characters (folded with -i) as its byte automaton; frees s. */
static int mk_cset(struct parser *ps, struct cset *s)
{
	if (ps->icase)
		cset_fold(s);
	int i = cset_ast(ps->t, s);
	cset_free(s);
	if (i < 0)
		return fail(ps, "memory exhausted");
	return i;
}

/* t->sup_read: what grep 3.8's DFA cannot take in a multibyte locale (t->rx), as its
 * superset DFA takes it: any text (a back-reference node without a group: nfa_build) */
static int mk_any_text(struct parser *ps)
{
	return mk(ps, N_BACKREF);
}

/* One character of the pattern at ps->p (a valid UTF-8 sequence, or one byte that is not:
 * it matches itself), ps->p moved past it.  Without -i its bytes in sequence. */
static int mk_char(struct parser *ps)
{
	uint32_t c;
	int len = utf8_decode(ps->p, (size_t)(ps->end - ps->p), &c);
	if (len == 0) {
		/* an encoding error in the pattern matches the same byte */
		ps->t->enc_err = 1;
		if (ps->t->sup_read) {
			ps->p++;
			return mk_any_text(ps);
		}
		uint64_t s[4] = { 0 };
		set_add(s, *ps->p++);
		int i = mk(ps, N_SET);
		if (i >= 0)
			memcpy(ast_set(ps->t, i), s, sizeof s);
		return i;
	}
	ps->p += len;
	if (ps->icase) {
		struct cset s = { 0 };
		cset_add(&s, c, c);
		return mk_cset(ps, &s);
	}
	int seq = -1;
	for (int k = 0; k < len; k++) {
		int i = mk(ps, N_SET);
		if (i < 0)
			return -1;
		set_add(ast_set(ps->t, i), ps->p[k - len]);
		seq = seq < 0 ? i : mk2(ps, N_CAT, seq, i);
		if (seq < 0)
			return -1;
	}
	return seq;
}

/* t->dot_read: "." as glibc's regex takes it (grep 3.8's -o and colour): a character for
 * its mbrtowc, also past U+10FFFF in the old 4-, 5- and 6-byte forms, and with dot_read 2
 * (regex optimized the pattern for UTF-8: OP_UTF8_PERIOD) a surrogate too. */
static int mk_glibc_dot(struct parser *ps)
{
	static const uint8_t seqs[][7] = {     /* n, then n pairs lo-hi ... as bytes */
		{ 1, 0x00, 0x7F },
		{ 2, 0xC2, 0xDF, 0x80, 0xBF },
		{ 3, 0xE0, 0xE0, 0xA0, 0xBF, 0x80, 0xBF },
		{ 3, 0xE1, 0xEC, 0x80, 0xBF, 0x80, 0xBF },
		{ 3, 0xED, 0xED, 0x80, 0x9F, 0x80, 0xBF },    /* 0xBF with dot_read 2 */
		{ 3, 0xEE, 0xEF, 0x80, 0xBF, 0x80, 0xBF },
		{ 4, 0xF0, 0xF0, 0x90, 0xBF, 0x80, 0xBF },
		{ 4, 0xF1, 0xF7, 0x80, 0xBF, 0x80, 0xBF },
		{ 5, 0xF8, 0xF8, 0x88, 0xBF, 0x80, 0xBF },
		{ 5, 0xF9, 0xFB, 0x80, 0xBF, 0x80, 0xBF },
		{ 6, 0xFC, 0xFC, 0x84, 0xBF, 0x80, 0xBF },
		{ 6, 0xFD, 0xFD, 0x80, 0xBF, 0x80, 0xBF },
	};
	int alt = -1;
	for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
		int n = seqs[k][0], seq = -1;
		for (int i = 0; i < n; i++) {
			/* the pairs are the first byte's, the second's, then the rest are 80-BF */
			unsigned lo = i < 3 ? seqs[k][1 + 2 * i] : 0x80;
			unsigned hi = i < 3 ? seqs[k][2 + 2 * i] : 0xBF;
			if (k == 4 && i == 1 && ps->t->dot_read == 2)
				hi = 0xBF;
			int b = mk(ps, N_SET);
			if (b < 0)
				return -1;
			for (unsigned c = lo; c <= hi; c++)
				set_add(ast_set(ps->t, b), c);
			seq = seq < 0 ? b : mk2(ps, N_CAT, seq, b);
			if (seq < 0)
				return -1;
		}
		alt = alt < 0 ? seq : mk2(ps, N_ALT, alt, seq);
		if (alt < 0)
			return -1;
	}
	return alt;
}

/* A named class ("word" for \w) or its complement. */
static int mk_class(struct parser *ps, const char *name, int neg)
{
	struct cset s = { 0 };
	ps->t->mb_set = 1;
	ps->t->rx = 1;
	if (ps->t->sup_read)
		return mk_any_text(ps);
	cset_class(&s, name);
	if (neg)
		cset_negate(&s);
	int i = cset_ast(ps->t, &s);       /* classes are closed under case already, except
	                                    * upper and lower, which -i does not reach here */
	cset_free(&s);
	if (i < 0)
		return fail(ps, "memory exhausted");
	return i;
}

/* The POSIX classes of the C locale. */
static int class_set(const char *name, size_t len, uint64_t *s)
{
	static const char *const names[] = { "alpha", "upper", "lower", "digit", "xdigit", "space",
	                                     "print", "punct", "graph", "cntrl", "blank", "alnum" };
	int k = -1;
	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			k = i;
	if (k < 0)
		return -1;
	for (unsigned c = 0; c < 256; c++) {
		int up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z', dg = c >= '0' && c <= '9';
		int sp = c == ' ' || (c >= '\t' && c <= '\r');
		int pr = c >= 0x20 && c < 0x7f;
		int in = 0;
		switch (k) {
		case 0: in = up || lo; break;
		case 1: in = up; break;
		case 2: in = lo; break;
		case 3: in = dg; break;
		case 4: in = dg || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); break;
		case 5: in = sp; break;
		case 6: in = pr; break;
		case 7: in = pr && c != ' ' && !up && !lo && !dg; break;
		case 8: in = pr && c != ' '; break;
		case 9: in = c < 0x20 || c == 0x7f; break;
		case 10: in = c == ' ' || c == '\t'; break;
		case 11: in = up || lo || dg; break;
		}
		if (in)
			set_add(s, c);
	}
	return 0;
}

static const char UNMATCHED_BRACKET[] = "Unmatched [, [^, [:, [., or [=";

/* A bracket expression; ps->p is just past '['. */
static int parse_bracket(struct parser *ps)
{
	uint64_t s[4] = { 0 };
	const unsigned char *start = ps->p;
	int neg = 0, had_range = 0;
	if (ps->p < ps->end && *ps->p == '^') {
		neg = 1;
		ps->p++;
	}
	const unsigned char *content = ps->p;
	int first = 1;
	if (ps->p >= ps->end)
		return fail(ps, "Invalid regular expression");   /* grep's word for "[" or "[^" last */
	for (;;) {
		if (ps->p >= ps->end)
			return fail(ps, UNMATCHED_BRACKET);
		unsigned c = *ps->p;
		if (c == ']' && !first)
			break;
		first = 0;
		/* one element: a byte, a class, an equivalence class or a collating symbol */
		int lo, is_class = 0;
		if (c == '[' && ps->p + 1 < ps->end &&
		    (ps->p[1] == ':' || ps->p[1] == '=' || ps->p[1] == '.')) {
			unsigned kind = ps->p[1];
			const unsigned char *name = ps->p + 2, *q = name;
			while (q + 1 < ps->end && !(q[0] == kind && q[1] == ']'))
				q++;
			if (q + 1 >= ps->end)
				return fail(ps, UNMATCHED_BRACKET);
			size_t nlen = (size_t)(q - name);
			ps->p = q + 2;
			if (kind == ':') {
				if (class_set((const char *)name, nlen, s) != 0)
					return fail(ps, "Invalid character class name");
				is_class = 1;
				lo = -1;
			} else {
				/* only single bytes collate in the C locale */
				if (nlen != 1)
					return fail(ps, "Invalid collation character");
				lo = name[0];
			}
		} else {
			lo = (int)c;
			ps->p++;
		}
		/* a range lo-hi, unless the '-' is last */
		if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
			ps->p++;
			int hi;
			unsigned d = *ps->p;
			if (d == '[' && ps->p + 1 < ps->end && (ps->p[1] == '.' || ps->p[1] == '=')) {
				unsigned kind = ps->p[1];
				const unsigned char *name = ps->p + 2, *q = name;
				while (q + 1 < ps->end && !(q[0] == kind && q[1] == ']'))
					q++;
				if (q + 1 >= ps->end)
					return fail(ps, UNMATCHED_BRACKET);
				if (q - name != 1)
					return fail(ps, "Invalid collation character");
				hi = name[0];
				ps->p = q + 2;
			} else if (d == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
				return fail(ps, "Invalid range end");
			} else {
				hi = (int)d;
				ps->p++;
			}
			if (is_class || hi < lo)
				return fail(ps, "Invalid range end");
			for (int x = lo; x <= hi; x++)
				set_add(s, (unsigned)x);
			had_range = 1;
			/* a range cannot start where one ended: "[a-c-e]" (grep: even "[a-c-" unclosed) */
			if (ps->p < ps->end && ps->p[0] == '-' && (ps->p + 1 >= ps->end || ps->p[1] != ']'))
				return fail(ps, "Invalid range end");
		} else if (!is_class) {
			set_add(s, (unsigned)lo);
		}
	}
	/* ps->p at ']'.  grep refuses "[:alpha:]" (a class written without the outer brackets) */
	size_t clen = (size_t)(ps->p - content);
	if (clen >= 3 && content[0] == ':' && content[clen - 1] == ':' && !had_range) {
		int other = 0;
		for (size_t i = 1; i + 1 < clen; i++)
			other |= content[i] != ':';
		if (other)
			return fail(ps, "character class syntax is [[:space:]], not [:space:]");
	}
	(void)start;
	ps->p++;
	if (ps->icase)
		fold_set(s);
	if (neg)
		for (int i = 0; i < 4; i++)
			s[i] = ~s[i];
	int n = mk(ps, N_SET);
	if (n >= 0)
		memcpy(ast_set(ps->t, n), s, sizeof s);
	return n;
}

/* A bracket expression in a UTF-8 locale; ps->p is just past '['.  The same grammar and
 * messages as parse_bracket, on characters: ranges by code point, classes from isw*, an
 * encoding error inside the brackets matches nothing (as in grep), collating elements of one
 * byte only (C.UTF-8 refuses "[[.é.]]" too).  In a locale that collates (en_US.UTF-8, not
 * C.UTF-8) ranges and equivalence classes follow the collation as grep's regex takes them
 * (utf8.c), except a bracket grep's own DFA decides: not negated, no class, equivalence
 * class or collating symbol, and every range one of two ASCII digits ([0-9] is ten digits
 * there, not the forty-odd scripts' digits the collation puts between 0 and 9). */
static int parse_bracket_u8(struct parser *ps)
{
	struct cset s = { 0 }, coll = { 0 }, digits = { 0 };
	int neg = 0, had_range = 0, rc = -1, non_ascii = 0;
	const int collating = utf8_collating();
	int dfa_known = 1;                 /* grep's DFA would decide this bracket itself */
	int rx = 0;                        /* ... not even as one of its own sets (t->rx) */
	int enc_member = 0;
	if (ps->p < ps->end && *ps->p == '^') {
		neg = 1;
		ps->p++;
	}
	const unsigned char *content = ps->p;
	int first = 1;
	if (ps->p >= ps->end)
		return fail(ps, "Invalid regular expression");
	for (;;) {
		if (ps->p >= ps->end) {
			fail(ps, UNMATCHED_BRACKET);
			goto out;
		}
		unsigned c = *ps->p;
		if (c == ']' && !first)
			break;
		first = 0;
		int64_t lo;
		int is_class = 0, lo_sym = 0, hi_sym = 0;   /* an end written [.x.] */
		if (c == '[' && ps->p + 1 < ps->end &&
		    (ps->p[1] == ':' || ps->p[1] == '=' || ps->p[1] == '.')) {
			unsigned kind = ps->p[1];
			const unsigned char *name = ps->p + 2, *q = name;
			while (q + 1 < ps->end && !(q[0] == kind && q[1] == ']'))
				q++;
			if (q + 1 >= ps->end) {
				fail(ps, UNMATCHED_BRACKET);
				goto out;
			}
			size_t nlen = (size_t)(q - name);
			ps->p = q + 2;
			if (kind == ':') {
				char nm[16];
				if (nlen >= sizeof nm)
					nlen = sizeof nm - 1, nm[0] = '?';
				else
					memcpy(nm, name, nlen);
				nm[nlen] = '\0';
				/* grep: under -i, [:upper:] and [:lower:] are [:alpha:] */
				if (ps->icase && (!strcmp(nm, "upper") || !strcmp(nm, "lower")))
					strcpy(nm, "alpha");
				if (!strcmp(nm, "word") || cset_class(&s, nm) != 0) {
					fail(ps, "Invalid character class name");
					goto out;
				}
				is_class = 1;
				dfa_known = 0;
				rx |= strcmp(nm, "digit") != 0;
				lo = -1;
			} else if (kind == '=' && collating) {
				/* one character, its equivalence class; no range end */
				uint32_t cp;
				if (utf8_decode(name, nlen, &cp) != (int)nlen || nlen == 0) {
					fail(ps, "Invalid collation character");
					goto out;
				}
				if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
					fail(ps, "Invalid range end");
					goto out;
				}
				if (cset_equiv(&coll, cp, ps->icase) != 0) {
					fail(ps, "memory exhausted");
					goto out;
				}
				dfa_known = 0;
				rx = 1;
				continue;
			} else {
				if (nlen != 1) {
					fail(ps, "Invalid collation character");
					goto out;
				}
				dfa_known = 0;
				rx = 1;
				lo_sym = 1;
				lo = name[0] < 0x80 ? name[0] : -2;
			}
		} else {
			uint32_t cp;
			int len = utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
			lo = len ? (int64_t)cp : -2;     /* -2: an encoding error */
			ps->p += len ? len : 1;
			non_ascii |= lo < 0 || lo >= 0x80;
			enc_member |= lo < 0;
		}
		/* a range lo-hi, unless the '-' is last */
		if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
			ps->p++;
			int64_t hi;
			unsigned d = *ps->p;
			if (d == '[' && ps->p + 1 < ps->end && (ps->p[1] == '.' || ps->p[1] == '=')) {
				unsigned kind = ps->p[1];
				const unsigned char *name = ps->p + 2, *q = name;
				while (q + 1 < ps->end && !(q[0] == kind && q[1] == ']'))
					q++;
				if (q + 1 >= ps->end) {
					fail(ps, UNMATCHED_BRACKET);
					goto out;
				}
				if (q - name != 1 || (kind == '=' && collating)) {
					fail(ps, kind == '=' && collating && q - name >= 1 ?
					     "Invalid range end" : "Invalid collation character");
					goto out;
				}
				hi_sym = 1;
				hi = name[0] < 0x80 ? name[0] : -2;
				ps->p = q + 2;
			} else if (d == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
				fail(ps, "Invalid range end");
				goto out;
			} else {
				uint32_t cp;
				int len = utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
				hi = len ? (int64_t)cp : -2;
				ps->p += len ? len : 1;
			}
			rx |= hi_sym || (lo != hi && !(lo >= '0' && lo <= '9' && hi >= '0' && hi <= '9'));
			if ((lo >= 0x80 || hi >= 0x80) && !is_class && utf8_ranges_refused()) {
				fail(ps, "Invalid collation character");
				goto out;
			}
			if (is_class || (!collating && hi < lo)) {
				fail(ps, "Invalid range end");
				goto out;
			}
			if (!collating) {
				if (lo >= 0)
					cset_add(&s, (uint32_t)lo, (uint32_t)hi);
			} else if (lo == hi && !lo_sym && !hi_sym) {
				if (lo >= 0)          /* [x-x] is x, as grep's DFA takes it */
					cset_add(&s, (uint32_t)lo, (uint32_t)lo);
			} else if (lo >= '0' && lo <= '9' && hi >= '0' && hi <= '9' && !lo_sym && !hi_sym) {
				if (hi < lo) {
					fail(ps, "Invalid range end");
					goto out;
				}
				cset_add(&digits, (uint32_t)lo, (uint32_t)hi);   /* decided at the end */
			} else if (lo < 0 || hi < 0) {
				fail(ps, "Invalid collation character");   /* an encoding error as an end */
				goto out;
			} else {
				int k = cset_coll_range(&coll, (uint32_t)lo, (uint32_t)hi,
				                        lo_sym | hi_sym << 1, ps->icase);
				if (k != 0) {
					fail(ps, k == -1 ? "Invalid collation character" :
					     k == -2 ? "Invalid range end" : "memory exhausted");
					goto out;
				}
				dfa_known = 0;
			}
			had_range = 1;
			if (ps->p < ps->end && ps->p[0] == '-' && (ps->p + 1 >= ps->end || ps->p[1] != ']')) {
				fail(ps, "Invalid range end");
				goto out;
			}
		} else if (!is_class && lo >= 0) {
			cset_add(&s, (uint32_t)lo, (uint32_t)lo);
		}
	}
	size_t clen = (size_t)(ps->p - content);
	if (clen >= 3 && content[0] == ':' && content[clen - 1] == ':' && !had_range) {
		int other = 0;
		for (size_t i = 1; i + 1 < clen; i++)
			other |= content[i] != ':';
		if (other) {
			fail(ps, "character class syntax is [[:space:]], not [:space:]");
			goto out;
		}
	}
	ps->p++;
	if (neg)
		dfa_known = 0;
	if (!dfa_known || had_range || non_ascii)
		ps->t->mb_set = 1;
	/* where glibc's regex decides (grep.c rx_read), it takes [0-9] by collation too */
	if (digits.n > 0 && dfa_known)
		ps->t->rx_ops = 1;
	for (int i = 0; i < digits.n; i++) {
		if (dfa_known && !ps->t->rx_read) {
			cset_add(&s, digits.r[i][0], digits.r[i][1]);
		} else if (cset_coll_range(&coll, digits.r[i][0], digits.r[i][1], 0, ps->icase) != 0) {
			fail(ps, "memory exhausted");
			goto out;
		}
	}
	if (ps->icase)
		cset_fold(&s);
	/* grep's DFA takes a bracket (members outside ASCII as alternatives: dfa.c addtok's
	 * MBCSET) unless negated, with an encoding error, a range but of digits or x-x, a class
	 * but [:digit:], an equivalence class or a collating symbol (parse_bracket_exp) */
	rx |= neg || enc_member;
	if (rx)
		ps->t->rx = 1;
	for (int i = 0; i < coll.n; i++)     /* folded already, as grep's regex folds */
		cset_add(&s, coll.r[i][0], coll.r[i][1]);
	s.err |= coll.err | digits.err;
	if (neg)
		cset_negate(&s);
	rc = rx && ps->t->sup_read ? mk_any_text(ps) : cset_ast(ps->t, &s);
	if (rc < 0)
		fail(ps, "memory exhausted");
out:
	cset_free(&s);
	cset_free(&coll);
	cset_free(&digits);
	return rc;
}

/* Interval after '{' (ERE) or '\{' (BRE); ps->p just past it.  Returns 1 with min/max, 0 when
 * an ERE brace is not an interval (then it is a literal '{' and ps->p is restored), -1 on an
 * error. */
static int parse_interval(struct parser *ps, int *min, int *max)
{
	const unsigned char *save = ps->p;
	long lo = -1, hi = -1;
	int comma = 0;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		lo = (lo < 0 ? 0 : lo) * 10 + (*ps->p++ - '0');
		if (lo > 1000000)
			lo = 1000000;
	}
	if (ps->p < ps->end && *ps->p == ',') {
		comma = 1;
		ps->p++;
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
			hi = (hi < 0 ? 0 : hi) * 10 + (*ps->p++ - '0');
			if (hi > 1000000)
				hi = 1000000;
		}
	}
	int closed;
	if (ps->ere)
		closed = ps->p < ps->end && *ps->p == '}';
	else
		closed = ps->p + 1 < ps->end && ps->p[0] == '\\' && ps->p[1] == '}';
	if (!closed) {
		if (ps->ere) {
			ps->p = save;
			return 0;
		}
		/* BRE: "Unmatched \{" when no "\}" follows at all, else bad content */
		for (const unsigned char *q = save; q + 1 < ps->end; q++) {
			if (q[0] == '\\' && q[1] == '}')
				return fail(ps, "Invalid content of \\{\\}");
			if (q[0] == '\\')
				q++;
		}
		return fail(ps, "Unmatched \\{");
	}
	ps->p += ps->ere ? 1 : 2;
	if (!comma)
		hi = lo;
	if (lo < 0 && !comma)
		return fail(ps, "Invalid content of \\{\\}");
	if (lo < 0)
		lo = 0;
	if (hi >= 0 && hi < lo)
		return fail(ps, "Invalid content of \\{\\}");
	if (lo > DUP_MAX || hi > DUP_MAX)
		return fail(ps, "Regular expression too big");
	*min = (int)lo;
	*max = (int)hi;
	return 1;
}

static int parse_alt(struct parser *ps);

/* Is the BRE '$' at ps->p (just past it) an anchor: at the end, or before \) or \| ? */
static int bre_dollar_anchor(struct parser *ps)
{
	if (ps->p >= ps->end)
		return 1;
	return ps->p + 1 < ps->end && ps->p[0] == '\\' &&
	       (ps->p[1] == '|' || (ps->p[1] == ')' && ps->depth > 0));
}

/* One atom, or -2 at the end of a branch.  *start_ok tells whether a repetition operator
 * here would be at the start of an expression. */
static int parse_atom(struct parser *ps, int at_start)
{
	unsigned c = *ps->p;
	if (ps->ere) {
		switch (c) {
		case '|':
			return -2;
		case ')':
			if (ps->depth > 0)
				return -2;
			ps->p++;
			return mk_byte(ps, c);
		case '(': {
			if (ps->depth >= MAX_DEPTH)
				return fail(ps, TOO_DEEP);
			ps->p++;
			int g = ++ps->n_groups;
			ps->depth++;
			int a = parse_alt(ps);
			ps->depth--;
			if (a < 0)
				return -1;
			if (ps->p >= ps->end || *ps->p != ')')
				return fail(ps, "Unmatched ( or \\(");
			ps->p++;
			if (g < 64)
				ps->done |= 1ull << g;
			int n = mk2(ps, N_GROUP, a, -1);
			if (n >= 0)
				ps->t->n[n].group = ps->group_base + g;
			return n;
		}
		case '^':
			ps->p++;
			return mk_assert(ps, A_BOL);
		case '$':
			ps->p++;
			return mk_assert(ps, A_EOL);
		default:
			break;
		}
	} else {
		if (c == '^' && at_start && !ps->after_anchor) {
			ps->p++;
			return mk_assert(ps, A_BOL);
		}
		if (c == '$') {
			ps->p++;
			if (bre_dollar_anchor(ps))
				return mk_assert(ps, A_EOL);
			return mk_byte(ps, c);
		}
		if (c == '*' && at_start) {
			ps->p++;
			return mk_byte(ps, c);
		}
		if (c == '\\' && ps->p + 1 < ps->end) {
			unsigned d = ps->p[1];
			if (d == '|')
				return -2;
			if (d == ')') {
				if (ps->depth > 0)
					return -2;
				return fail(ps, "Unmatched ) or \\)");
			}
			if (d == '(') {
				if (ps->depth >= MAX_DEPTH)
					return fail(ps, TOO_DEEP);
				ps->p += 2;
				int g = ++ps->n_groups;
				ps->depth++;
				int a = parse_alt(ps);
				ps->depth--;
				if (a < 0)
					return -1;
				if (ps->p + 1 >= ps->end || ps->p[0] != '\\' || ps->p[1] != ')')
					return fail(ps, "Unmatched ( or \\(");
				ps->p += 2;
				if (g < 64)
					ps->done |= 1ull << g;
				int n = mk2(ps, N_GROUP, a, -1);
				if (n >= 0)
					ps->t->n[n].group = ps->group_base + g;
				return n;
			}
			if (d == '{' && at_start) {     /* nothing to repeat: a literal '{' */
				ps->p += 2;
				return mk_byte(ps, d);
			}
		}
	}
	/* common to both syntaxes */
	if (c == '.') {
		ps->p++;
		uint64_t s[4] = { ~0ull, ~0ull, ~0ull, ~0ull };
		if (ps->utf8 && ps->t->dot_read)
			return mk_glibc_dot(ps);
		if (ps->utf8) {
			/* any character: no encoding error */
			ps->t->has_dot = 1;
			struct cset cs = { 0 };
			cset_add(&cs, 0, UTF8_MAX);
			int i = cset_ast(ps->t, &cs);
			cset_free(&cs);
			return i < 0 ? fail(ps, "memory exhausted") : i;
		}
		return mk_set(ps, s);
	}
	if (c == '[') {
		ps->p++;
		return ps->utf8 ? parse_bracket_u8(ps) : parse_bracket(ps);
	}
	if (c == '\\') {
		if (ps->p + 1 >= ps->end)
			return fail(ps, "Trailing backslash");
		unsigned d = ps->p[1];
		ps->p += 2;
		uint64_t s[4] = { 0 };
		if (ps->utf8 && (d == 'w' || d == 'W' || d == 's' || d == 'S'))
			return mk_class(ps, d == 'w' || d == 'W' ? "word" : "space", d == 'W' || d == 'S');
		switch (d) {
		case 'w': case 'W':
			for (unsigned x = 0; x < 256; x++)
				if (is_word(x) == (d == 'w'))
					set_add(s, x);
			return mk_set(ps, s);
		case 's': case 'S':
			class_set("space", 5, s);
			if (d == 'S')
				for (int i = 0; i < 4; i++)
					s[i] = ~s[i];
			return mk_set(ps, s);
		case 'b': return mk_assert(ps, A_WORDB);
		case 'B': return mk_assert(ps, A_NWORDB);
		case '<': return mk_assert(ps, A_BOW);
		case '>': return mk_assert(ps, A_EOW);
		case '`': return mk_assert(ps, A_BOL);
		case '\'': return mk_assert(ps, A_EOL);
		default:
			break;
		}
		if (d >= '1' && d <= '9') {
			int g = (int)(d - '0');
			if (g > ps->n_groups || !(ps->done & (1ull << g)))
				return fail(ps, "Invalid back reference");
			int n = mk(ps, N_BACKREF);
			if (n >= 0) {
				ps->t->n[n].group = ps->group_base + g;
				ps->t->has_backref = 1;
			}
			return n;
		}
		if (ps->utf8) {
			ps->p--;
			return mk_char(ps);
		}
		return mk_byte(ps, d);
	}
	if (ps->utf8)
		return mk_char(ps);
	ps->p++;
	return mk_byte(ps, c);
}

/* A repetition operator at ps->p: 1 with min/max (ps->p past it), 0 when none, -1 error. */
static int parse_rep_op(struct parser *ps, int *min, int *max, const char **what)
{
	if (ps->p >= ps->end)
		return 0;
	unsigned c = ps->p[0];
	if (c == '*') {
		ps->p++;
		*min = 0, *max = -1, *what = "*";
		return 1;
	}
	if (ps->ere) {
		if (c == '+' || c == '?') {
			ps->p++;
			*min = c == '+', *max = c == '+' ? -1 : 1, *what = c == '+' ? "+" : "?";
			return 1;
		}
		if (c == '{') {
			ps->p++;
			*what = "{...}";
			int r = parse_interval(ps, min, max);
			if (r == 0)
				ps->p--;
			return r;
		}
		return 0;
	}
	if (c == '\\' && ps->p + 1 < ps->end) {
		unsigned d = ps->p[1];
		if (d == '+' || d == '?') {
			ps->p += 2;
			*min = d == '+', *max = d == '+' ? -1 : 1, *what = d == '+' ? "+" : "?";
			return 1;
		}
		if (d == '{') {
			ps->p += 2;
			*what = "{...}";
			return parse_interval(ps, min, max);
		}
	}
	return 0;
}

static int ere_op(unsigned c)
{
	return c == '*' || c == '+' || c == '?' || c == '{';
}

static int parse_branch(struct parser *ps)
{
	int seq = -1;
	int at_start = 1;         /* nothing yet that a repetition could apply to */
	int bre_after_anchor = 0;
	int empty_rep = 0;        /* ERE: the last operator repeated nothing or an assertion */
	int rx_start = 1;         /* glibc's regex would start an expression here (below) */
	while (ps->p < ps->end) {
		int min, max;
		const char *what;
		/* An ERE operator where glibc's regex starts an expression (a branch's start, or
		 * right after an assertion, which regex never repeats): regex skips it, and of an
		 * interval only its '{', so the rest is text ("{1}x" is "1}x", "a$?" is "a$").
		 * Grep's DFA drops or applies it instead (below); t->rx_ops notes the place, and
		 * where regex decides (grep.c) the patterns are read again with t->rx_read */
		if (ps->ere && rx_start && ps->p < ps->end && ere_op(*ps->p)) {
			ps->t->rx_ops = 1;
			if (ps->t->rx_read) {
				while (ps->p < ps->end && ere_op(*ps->p))
					ps->p++;
				continue;
			}
		}
		rx_start = 0;
		/* grep 3.8 refuses such an operator (* + ?, not an interval) right before a
		 * group's ')': "(a|*)", "(a$*)" are "Unmatched ( or \\(" ("(^*a)" is fine) */
		if (empty_rep && ps->depth > 0 && *ps->p == ')')
			return fail(ps, "Unmatched ( or \\(");
		empty_rep = 0;
		if (ps->ere && at_start) {
			/* an ERE repetition with nothing before it: grep warns and ignores it */
			const unsigned char *save = ps->p;
			int r = parse_rep_op(ps, &min, &max, &what);
			if (r < 0)
				return -1;
			if (r > 0) {
				char msg[64];
				snprintf(msg, sizeof msg, "%s at start of expression", what);
				warning(ps, msg);
				empty_rep = strcmp(what, "{...}") != 0;
				/* after an interval grep is no longer at the start: operators that follow
				 * it are dropped without a word ("{1}*a"); after * + ? they warn again */
				if (!strcmp(what, "{...}")) {
					while ((r = parse_rep_op(ps, &min, &max, &what)) > 0)
						;
					if (r < 0)
						return -1;
				}
				continue;
			}
			ps->p = save;
		}
		ps->after_anchor = bre_after_anchor;
		int atom = parse_atom(ps, at_start || bre_after_anchor);
		ps->after_anchor = 0;
		if (atom == -2)
			break;
		if (atom < 0)
			return -1;
		const struct node *an = &ps->t->n[atom];
		/* grep 3.8: an anchor or assertion (^ $ \< \> \b \B \` \') with nothing but
		 * such before it in the branch is at the start of the expression.  In a BRE a '*'
		 * after it is literal ("\<*" needs a '*').  In an ERE an operator after it draws
		 * the warning "* at start of expression"; after a word assertion the operator is
		 * dropped ("\b+a" is "\ba"), after a line anchor it applies to the anchor ("^*a"
		 * finds the "a" of "ba"). */
		int is_assert = an->kind == N_ASSERT;
		int line_anchor = is_assert && (an->akind == A_BOL || an->akind == A_EOL);
		int repeated = 0;
		/* glibc's regex: after an assertion a BRE operator is text ("a\<*" needs a '*'),
		 * an ERE one is skipped (above); grep's DFA repeats the assertion */
		if (is_assert && ps->p < ps->end && (ps->ere ? ere_op(*ps->p) :
		    *ps->p == '*' || (ps->p + 1 < ps->end && ps->p[0] == '\\' &&
		                      ere_op(ps->p[1]))))
			ps->t->rx_ops = 1;
		if (is_assert && ps->t->rx_read) {
			bre_after_anchor = !ps->ere;
			rx_start = 1;
		} else if (is_assert && (at_start || bre_after_anchor) && !(ps->ere && line_anchor)) {
			bre_after_anchor = !ps->ere;
			rx_start = 1;
		} else {
			bre_after_anchor = 0;
			for (;;) {
				int r = parse_rep_op(ps, &min, &max, &what);
				if (r < 0)
					return -1;
				if (r == 0)
					break;
				if (ps->ere && line_anchor && at_start && !repeated) {
					char msg[64];
					snprintf(msg, sizeof msg, "%s at start of expression", what);
					warning(ps, msg);
				}
				repeated = 1;
				empty_rep = ps->ere && is_assert && strcmp(what, "{...}") != 0;
				int rep = mk2(ps, N_REPEAT, atom, -1);
				if (rep < 0)
					return -1;
				ps->t->n[rep].min = min;
				ps->t->n[rep].max = max;
				atom = rep;
			}
		}
		/* In ERE a leading assertion leaves "start of expression" ("^*$*" warns twice) */
		if (!(ps->ere && is_assert && at_start))
			at_start = 0;
		seq = seq < 0 ? atom : mk2(ps, N_CAT, seq, atom);
		if (seq < 0)
			return -1;
	}
	return seq < 0 ? mk(ps, N_EMPTY) : seq;
}

static int parse_alt(struct parser *ps)
{
	uint64_t initial = ps->done, all = 0;
	int alt = parse_branch(ps);
	if (alt < 0)
		return -1;
	all |= ps->done;
	for (;;) {
		if (ps->p >= ps->end)
			break;
		if (ps->ere && *ps->p == '|')
			ps->p++;
		else if (!ps->ere && ps->p + 1 < ps->end && ps->p[0] == '\\' && ps->p[1] == '|')
			ps->p += 2;
		else
			break;
		ps->done = initial;   /* a group of another alternative cannot be referred to */
		int b = parse_branch(ps);
		if (b < 0)
			return -1;
		all |= ps->done;
		alt = mk2(ps, N_ALT, alt, b);
		if (alt < 0)
			return -1;
	}
	ps->done = all;
	return alt;
}

int grep_parse(struct ast *t, const char *pat, size_t len, int syntax, int icase, char *err,
               size_t errlen, char *warn, size_t warnlen)
{
	struct parser ps = { .t = t, .p = (const unsigned char *)pat,
	                     .end = (const unsigned char *)pat + len, .ere = syntax == GREP_EXTENDED,
	                     .icase = icase, .utf8 = t->utf8, .group_base = t->n_groups, .err = err,
	                     .errlen = errlen, .warn = warn, .warnlen = warnlen };
	if (syntax == GREP_FIXED && ps.utf8 && icase) {
		/* folded characters */
		int seq = -1;
		while (ps.p < ps.end) {
			int b = mk_char(&ps);
			seq = b < 0 ? -1 : seq < 0 ? b : mk2(&ps, N_CAT, seq, b);
			if (seq < 0)
				return -1;
		}
		return seq < 0 ? mk(&ps, N_EMPTY) : seq;
	}
	if (syntax == GREP_FIXED) {
		if (ps.utf8 && utf8_has_errors((const uint8_t *)pat, len))
			t->enc_err = 1;
		int seq = -1;
		for (size_t i = 0; i < len; i++) {
			int b = mk_byte(&ps, (unsigned char)pat[i]);
			seq = b < 0 ? -1 : seq < 0 ? b : mk2(&ps, N_CAT, seq, b);
			if (seq < 0)
				return -1;
		}
		return seq < 0 ? mk(&ps, N_EMPTY) : seq;
	}
	int root = parse_alt(&ps);
	if (root < 0)
		return -1;
	if (ps.p < ps.end) {
		/* parse_alt stops early only at a closing parenthesis with no opening one */
		return fail(&ps, ps.ere ? "Unmatched ) or \\)" : "Unmatched ) or \\)");
	}
	t->n_groups += ps.n_groups;
	return root;
}
