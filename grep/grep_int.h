/* grep_int.h: private interface of libgrep (the remote-grep pattern compiler).
 *
 * Pipeline: parse.c turns each pattern into an AST (POSIX BRE/ERE plus the GNU extensions
 * grep accepts, with grep's messages for invalid patterns); nfa.c builds one Thompson NFA for
 * all patterns, the scanning DFA over byte classes, the client-side exact matchers (NFA
 * simulation for leftmost-longest spans, backtracking for back-references) and the required
 * literal; gen.c emits the code segment; grep.c holds the public entry points and the
 * client-side formatting of the segment's records.  docs/grep.md explains the design.
 */
#ifndef GREP_INT_H
#define GREP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "grep.h"

/* ---- AST ---- */
enum node_kind {
	N_EMPTY,      /* matches the empty string */
	N_SET,        /* one byte from set[] */
	N_CAT,        /* a then b */
	N_ALT,        /* a or b */
	N_REPEAT,     /* a{min,max}, max < 0 means unbounded */
	N_GROUP,      /* \( a \) numbered group (for back-references) */
	N_BACKREF,    /* \N */
	N_ASSERT,     /* zero-width assertion (enum assert_kind) */
};

/* Zero-width assertions; all of them depend only on the byte before and the byte after. */
enum assert_kind {
	A_BOL,        /* ^ and \` (grep matches line by line, so the buffer is the line) */
	A_EOL,        /* $ and \' */
	A_WORDB,      /* \b */
	A_NWORDB,     /* \B */
	A_BOW,        /* \< */
	A_EOW,        /* \> */
	A_NPREVW,     /* -w: no word byte before */
	A_NNEXTW,     /* -w: no word byte after */
};

struct node {
	uint8_t kind;
	uint8_t akind;         /* N_ASSERT */
	int a, b;              /* children (node indices) */
	int min, max;          /* N_REPEAT */
	int group;             /* N_GROUP, N_BACKREF: global group number (1-based) */
	int set;               /* N_SET: its bytes are ast.sets[set] (ast_set).  Apart, so that a
	                        * node is 28 bytes, not 64: 10,000 patterns make 90,000 nodes,
	                        * every walk of them was bound by their cache misses and their
	                        * first touch page faults */
};

struct ast {
	struct node *n;
	int len, cap;
	uint64_t (*sets)[4];   /* one per N_SET node, made zero by ast_new */
	int n_sets, cap_sets;
	int root;
	int n_groups;          /* over all patterns */
	int has_backref;
	int utf8;              /* UTF-8 locale: word assertions look at characters; 1: matches
	                        * start on characters, 2: anywhere (-w, and a pattern with an
	                        * encoding error that grep takes byte by byte: grep.c) */
	int enc_err;           /* UTF-8: a pattern has an encoding error outside brackets */
	int mb_set;            /* UTF-8: a pattern has \w \W \s \S or a bracket that glibc's
	                        * regex keeps as characters (a range, class, negation, or a
	                        * member outside ASCII) */
	int rx;                /* UTF-8: a pattern has \w \W \s \S or a bracket that grep 3.8's
	                        * DFA cannot take in a multibyte locale (dfa.c's BACKREF: negated,
	                        * a class but [:digit:], a range but of digits...), so that
	                        * glibc's regex decides */
	int rx_ops;            /* an ERE operator with nothing to repeat or after an assertion,
	                        * or a BRE one after an assertion, or a range of ASCII digits
	                        * where the locale collates: glibc's regex reads it otherwise
	                        * than grep's DFA (parse.c parse_branch, parse_bracket_u8) */
	int rx_read;           /* set by the caller: parse such operators as glibc's regex */
	int has_dot;           /* UTF-8: a pattern has "." */
	int dot_read;          /* set by the caller: "." as glibc's regex takes it, 1, or 2 for
	                        * its OP_UTF8_PERIOD (parse.c mk_glibc_dot; -o spans) */
	int sup_read;          /* set by the caller: what sets t->rx (and an encoding error) as
	                        * any text, an N_BACKREF without a group (grep.c superset_nfa) */
	int err;               /* sticky out-of-memory */
};

int ast_new(struct ast *t, int kind);
/* The byte set of N_SET node i (valid until the next ast_new). */
static inline uint64_t *ast_set(const struct ast *t, int i) { return t->sets[t->n[i].set]; }
void ast_free(struct ast *t);

/* Parse one pattern (len bytes) and return its root node index, or -1 with grep's message
 * ("Unmatched ( or \\(", without the "grep: " prefix) in err.  Warnings (grep 3.8's "* at
 * start of expression", ...) are appended to warn, one per line, when warn is not NULL.
 * Group numbers continue from t->n_groups so that several patterns can share one AST. */
/* Would grep 3.8 run these -G/-E patterns as -F (options.c: two or more distinct plain
 * strings, not -i in UTF-8)? */
int grep_runs_fixed(const char *const *pats, const size_t *lens, size_t n,
                    const struct grep_opts *o);

int grep_parse(struct ast *t, const char *pat, size_t len, int syntax, int icase, char *err,
               size_t errlen, char *warn, size_t warnlen);

static inline int set_has(const uint64_t *s, unsigned c) { return (int)((s[c >> 6] >> (c & 63)) & 1); }
static inline void set_add(uint64_t *s, unsigned c) { s[c >> 6] |= 1ull << (c & 63); }
static inline int is_word(unsigned c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* ---- UTF-8 locales (utf8.c) ----
 * The caller has set a UTF-8 LC_CTYPE (setlocale): classes and case come from its isw*,
 * towupper. */
#define UTF8_MAX 0x10FFFF
#define UTF8_FOLD_MAX 0x1FFFF  /* no character past it has another case (utf8.c fold_pairs) */
#define UTF8_MAX_SEQS 32       /* byte sequences one range of code points can need */
struct utf8_seq {              /* one sequence of n byte ranges lo[i]..hi[i] */
	uint8_t n;
	uint8_t lo[4], hi[4];
};
/* The scalar values lo..hi (surrogates left out) as sequences of byte ranges, in increasing
 * order, whose byte strings are exactly the UTF-8 encodings of those values.  Returns the
 * count (0 for an empty range), or -1 when more than cap. */
int utf8_sequences(uint32_t lo, uint32_t hi, struct utf8_seq *out, int cap);
/* The valid character at p[0..n): its length (1-4) and *cp, or 0 (an encoding error). */
int utf8_decode(const uint8_t *p, size_t n, uint32_t *cp);
int utf8_encode(uint32_t c, uint8_t *b);
int utf8_has_errors(const uint8_t *p, size_t n);
/* Does p[0..n) hold a sequence glibc's mbrlen refuses (grep 3.8 prints no such line)?  It
 * takes the old forms past U+10FFFF (up to 6 bytes) that utf8_has_errors refuses. */
int utf8_print_errors(const uint8_t *p, size_t n);
/* Is the character that starts at p[i] (ends at p[i]) a word character ('_' or iswalnum)?
 * 1 or 0; 2 for an encoding error whose byte is a letter or digit of Latin-1 (0xC3 alone,
 * 'Ã'): grep's -w takes no encoding error as a word character, but \b \B \< \> are glibc's
 * regex's, which takes a byte that starts no character as the character of its value. */
int utf8_word_at(const uint8_t *p, size_t n, size_t i);
int utf8_word_before(const uint8_t *p, size_t n, size_t i);
/* Is byte b, as an encoding error, a word character for glibc's regex (above)? */
int utf8_err_word(unsigned b);
/* Is position i inside a valid character (after its first byte)?  No match starts there. */
int utf8_inside(const uint8_t *p, size_t n, size_t i);
/* Does p[0..n) start with the text a[0..na) under -i's folding?  The length it takes there,
 * or -1.  (Back-references with -i.) */
long utf8_fold_prefix(const uint8_t *a, size_t na, const uint8_t *p, size_t n);
/* Whether a bracket range with an end outside ASCII is refused (C.UTF-8, as grep 3.8). */
int utf8_ranges_refused(void);
/* Collation in UTF-8 locales other than C.UTF-8 (utf8.c): 1 when LC_COLLATE has rules. */
int utf8_collating(void);

struct cset {                  /* ranges of code points; sorted and merged by cset_norm */
	uint32_t (*r)[2];
	int n, cap;
	int err;               /* sticky out-of-memory */
};
void cset_add(struct cset *s, uint32_t lo, uint32_t hi);
void cset_norm(struct cset *s);
int cset_has(const struct cset *s, uint32_t c);     /* s normalized */
void cset_negate(struct cset *s);                    /* within 0..UTF8_MAX */
void cset_fold(struct cset *s);                      /* GNU grep's -i in a multibyte locale */
int cset_class(struct cset *s, const char *name);   /* "alpha"...; "word": \w.  0 or -1 */
/* For tests: the class made one way, not cached, into s (empty): scan 1, one isw* call per
 * code point; 0, from glibc's table (-1 where that is not possible).  0, or -1. */
int cset_class_way(struct cset *s, const char *name, int scan);
/* The decoder of word characters for dfa_build_u8 (nfa.c): every valid character as a trie
 * of byte ranges whose leaves say whether it is a word character ('_' or iswalnum), equal
 * subtrees merged.  Node 0 is the root; node i's edges are e[first[i] .. first[i + 1]), in
 * increasing byte order, each to a node or to a leaf (the character ends there); a byte in no
 * edge is an encoding error.  0, or -1 when out of memory; utf8_word_decoder_free frees. */
enum { U8_DEC_WORD = -2, U8_DEC_OTHER = -3 };
struct u8_edge {
	uint8_t lo, hi;
	int to;                /* a node, or U8_DEC_WORD / U8_DEC_OTHER */
};
struct u8_dec {
	int n;
	int *first;
	struct u8_edge *e;
};
int utf8_word_decoder(struct u8_dec *d);
void utf8_word_decoder_free(struct u8_dec *d);
/* For tests: -i's pairs (towupper(c), c) with towupper(c) != c, c <= UTF8_FOLD_MAX, in
 * increasing c, malloc'd into *pairs ([0] the upper case, [1] c), freed by the caller: scan 1,
 * one towupper call per code point; 0, from glibc's table.  0, or -1 (out of memory, no
 * table). */
int utf8_fold_pairs_way(int scan, uint32_t (**pairs)[2], size_t *n);
void cset_free(struct cset *s);
/* lo-hi in the locale's collation order (under icase: every c whose towupper lies between the
 * upper-cased ends), into s; sym bit 0 / bit 1: lo / hi was written [.x.] (an ASCII x).  0, -1
 * an end without a place ("Invalid collation character"), -2 ends out of order ("Invalid
 * range end"), -3 out of memory. */
int cset_coll_range(struct cset *s, uint32_t lo, uint32_t hi, unsigned sym, int icase);
/* [[=c=]]: the characters whose first-level weights are c's (under icase: whose towupper's
 * are), into s.  0, or -1 out of memory. */
int cset_equiv(struct cset *s, uint32_t c, int icase);
/* The set as an AST of one-byte sets (a byte trie with equal subtrees merged): its root, or
 * -1 when out of memory (t->err set). */
int cset_ast(struct ast *t, struct cset *s);

/* ---- NFA ---- */
enum nfa_kind { S_SET, S_SPLIT, S_EPS, S_ASSERT, S_MATCH };

struct nstate {
	uint8_t kind, akind;
	int out, out1;         /* out1 only for S_SPLIT */
	int set;               /* S_SET: index into nfa.sets */
};

struct nfa {
	struct nstate *s;
	int len, cap;
	uint64_t (*sets)[4];
	int n_sets, cap_sets;
	int start;
	int uses_prev;         /* some assertion looks at the byte before */
	int utf8;              /* word assertions look at characters (the client's matchers) */
	int err;
};

/* Contexts of the byte before (P_*) and after (X_*) a position. */
enum { P_BOL, P_WORD, P_OTHER, P_ERRW };
enum { X_EOL, X_WORD, X_OTHER, X_ERRW };   /* ERRW: utf8_word_* 2, the client's matchers only */
/* dfa_build_ascii_w's unknown kinds (nfa.c assert_ok): a word assertion that looks at such a
 * side is false (UNK0) or true (UNK1) */
enum { P_UNK0 = 8, P_UNK1 = 9 };
enum { X_UNK0 = 8, X_UNK1 = 9 };

/* The exact path's line matcher: a DFA made lazily from the NFA, its states cached in *lp
 * (NULL at first; lazy_free) up to a bound, then made again.  1 when p[0..n) holds a match. */
struct lazy_dfa;
int lazy_line_matches(struct lazy_dfa **lp, const struct nfa *m, const uint8_t *p, size_t n);
void lazy_free(struct lazy_dfa *L);
extern size_t lazy_max_bytes;   /* the cache's bound (tests lower it to empty it often) */
int nfa_build(struct nfa *m, const struct ast *t); /* 0, or -1 when out of memory / too big */
void nfa_free(struct nfa *m);

/* ---- scanning DFA ----
 * Rows of (n_cls + 1) u32 entries: one per byte class, the last for "end of line" (the line
 * terminator bytes map to that class too).  Entries are row numbers, or one of the specials
 * below: the line matched (before the byte that took the transition), the line ended without
 * a match, or the line cannot match any more.  DFA_NO_DEAD keeps the dead state an ordinary
 * row (used by the binary-file loop, which walks every byte anyway). */
enum { DFA_MATCH, DFA_EOL, DFA_DEAD, DFA_N_SPECIAL };
#define DFA_MAX_STATES (1 << 18)
#define DFA_MAX_TABLE  ((size_t)6 << 20)  /* bytes of rows: two tables (text, binary) and the
                                           * code stay under arfd's 16 MiB segments */
#define DFA_MAX_KERNEL ((size_t)1 << 22)  /* NFA states in all DFA states' kernels */
#define DFA_NO_DEAD 1
#define DFA_SHARED  2  /* build with shared kernels even for few alternatives (tests) */
#define DFA_SHARE_WIDTH 64   /* states a start reaches from which kernels are shared */

struct dfa {
	uint8_t cls[256];      /* byte -> class (n_cls for terminator bytes) */
	int n_cls;
	int n_rows;            /* rows 0..DFA_N_SPECIAL-1 are the specials (unused) */
	uint32_t *t;           /* n_rows * (n_cls + 1); the text table's when rows_shared */
	int start;             /* row at the start of a line */
	int rows_shared;       /* a binary table whose rows are the text table's (it has no dead
	                        * state): only the class map, with NUL ending a line, is its own */
};

/* Build the DFA that says whether a line contains a match; eol1/eol2 are the line
 * terminators (eol2 < 0 for none).  Returns 0, -1 when it would need more than
 * DFA_MAX_STATES states, DFA_MAX_TABLE bytes of rows or DFA_MAX_KERNEL kernel entries (the
 * caller takes the exact path),
 * -2 when out of memory. */
int dfa_build(struct dfa *d, const struct nfa *m, int eol1, int eol2, int flags);
/* The same DFA for the pattern of AST t in a UTF-8 locale (t->utf8) when it has word
 * assertions: its states follow characters, so that \b \B \< \> and -w see the characters
 * around a position as the client's matchers do.  No dead state.  0; -1 when too big, when
 * the pattern does not keep in step with the characters (an encoding error in it) or has
 * too many alternatives (the caller keeps the exact path); -2 when out of memory. */
int dfa_build_u8(struct dfa *d, const struct ast *t, int eol1, int eol2);
/* A smaller table for the same patterns when they move on ASCII bytes only and cannot match
 * empty: bytes >= 0x80 are of unknown kind, and a line where a match needs the kind of one is
 * neither matched nor not: its end-of-line entry (or its first match-free one) is DFA_MAYBE,
 * which the segment answers by stopping with a GREP_REC_REDO record (grep.c maybe_redo).  No
 * dead state (DFA_MAYBE is DFA_DEAD's value).  0; 1 when t is not such a pattern; -1 too
 * big; -2 out of memory. */
#define DFA_MAYBE DFA_DEAD
int dfa_build_ascii_w(struct dfa *d, const struct ast *t, int eol1, int eol2);
/* The same DFA (lines holding a match) when t is an alternation of strings, each byte of
 * them one byte class (a byte; a letter and its capital): Aho-Corasick's automaton, made from
 * the trie without the NFA.  0; 1 when t is not such a set, or its trie passes 4 times the
 * limits above (use dfa_build); 2 when it is one whose automaton would pass them (dfa_build's
 * states would be the same trie nodes: take the exact path); -2 when out of memory.  No dead
 * state: the binary table can share its rows (dfa_share_binary). */
int dfa_build_literals(struct dfa *d, const struct ast *t, int eol1, int eol2);
/* The same for -x (t the strings without -x's anchors): the lines that are one of the
 * strings, the trie with a dead state (a row of its own with DFA_NO_DEAD, for the binary
 * table).  0; 1 when t is no such set or its trie passes the limits; -2. */
int dfa_build_line_literals(struct dfa *d, const struct ast *t, int eol1, int eol2, int flags);
void dfa_free(struct dfa *d);
/* The DFA into a segment's constants (gen.c; arfscan.c too): the class map (class * 4 when
 * that fits a byte: *mul 1, else 4) and the rows, whose entries are constant offsets of
 * rows.  0, or -1 when out of memory. */
struct asm_builder;
int grep_put_dfa(struct asm_builder *b, const struct dfa *d, uint32_t *map, uint32_t *tab,
                 unsigned *mul);
/* The binary table the same way; when it shares the text table's rows (at text_tab), only
 * its class map is put. */
int grep_put_bdfa(struct asm_builder *b, const struct dfa *bd, uint32_t text_tab, uint32_t *map,
                  uint32_t *tab, unsigned *mul);
/* The binary table of text table d (built for terminator '\n') when d has no dead state:
 * the same rows, NUL in the end-of-line column.  0, or -1 (build it with dfa_build). */
int dfa_share_binary(struct dfa *bd, const struct dfa *d);
int dfa_line_matches(const struct dfa *d, const uint8_t *p, size_t n);

/* ---- exact matchers (client side) ---- */
/* Does some match lie inside line[0..n)? */
int nfa_line_matches(const struct nfa *m, const uint8_t *p, size_t n);
/* The leftmost-longest match starting at or after from (a Pike-style simulation whose
 * threads carry their start): 1 and [*s, *e), or 0. */
int nfa_leftmost_longest(const struct nfa *m, const uint8_t *p, size_t n, size_t from,
                         size_t *s, size_t *e);
/* The same spans when the pattern (node root, under -w's assertions when word, -x's when
 * line) is a set of strings whose distinct byte sets are disjoint: an anchored walk of their
 * trie from each start.  strset_build: 0 and *out (strset_free), 1 when root is no such set
 * or its trie is too big (take the NFA), -2 when out of memory.  Iterative. */
struct strset;
int strset_build(struct strset **out, const struct ast *t, int root, int word, int line);
int strset_leftmost_longest(const struct strset *s, const uint8_t *p, size_t n, size_t from,
                            size_t *ms, size_t *me);
/* Does p[0..n) hold a match (under the set's -w or -x)?  Linear in n for -x and plain sets,
 * times the strings that are suffixes of each other for -w. */
int strset_line_matches(const struct strset *s, const uint8_t *p, size_t n);
void strset_free(struct strset *s);
/* The longest match starting at s: its end, or -1 when none starts at s. */
long nfa_longest_at(const struct nfa *m, const uint8_t *p, size_t n, size_t s);
/* The same on the AST by backtracking (exact with back-references); bt_line_matches says
 * whether any match exists.  Both memoize, and give up (-2) past a step or memory budget. */
long bt_longest_at(const struct ast *t, const uint8_t *p, size_t n, size_t s, int icase);
int bt_line_matches(const struct ast *t, const uint8_t *p, size_t n, int icase);
/* The same with the AST's deterministic subtrees found once (bt_det_build, NULL when out of
 * memory; valid while the AST does not grow: a det of another length is not used). */
struct bt_det;
struct bt_det *bt_det_build(const struct ast *t);
void bt_det_free(struct bt_det *d);
long bt_longest_at_det(const struct ast *t, const struct bt_det *det, const uint8_t *p,
                       size_t n, size_t s, int icase);
int bt_line_matches_det(const struct ast *t, const struct bt_det *det, const uint8_t *p,
                        size_t n, int icase);

/* ---- required literal ---- */
/* The longest byte string every match must contain (empty when none is known).  With icase
 * it is a string every match contains with ASCII letters folded (findsi finds it): its letters
 * are lower case, and a letter stands for the set of it and its capital.  Writes at most cap
 * bytes to buf and returns the length.  With icase in UTF-8 and sets given, the string may
 * also hold byte sets (the bytes of letters whose case variants all have the same length):
 * then *is_sets is 1 and the literal is written as at most max_sets sets of 32 bytes (bit
 * c % 8 of byte c / 8: byte c, as findset takes them) instead; the length is their number. */
#define GREP_LIT_SETS 64       /* findset's most sets (FINDSET_MAX in vm/ops_common.h) */
size_t must_literal(const struct ast *t, int icase, int utf8, uint8_t *buf, size_t cap,
                    uint8_t (*sets)[32], size_t max_sets, int *is_sets);

/* ---- code generation ---- */
struct grep {
	struct grep_opts o;
	struct lazy_dfa *lazy;  /* the exact path's line matcher's states (lazy_line_matches) */
	struct ast ast;
	struct nfa nfa;        /* empty when nfa_later, or when too big (the backtracker) */
	int nfa_later;         /* the DFA came without it (dfa_build_literals): grep_nfa makes it */
	struct dfa dfa, bdfa;  /* text-file DFA; binary-file DFA (NUL also ends a line) */
	int exact;             /* 1: the segment sends candidate lines, the client decides */
	struct nfa sup;        /* UTF-8, patterns read as glibc's regex reads them: the first
	                        * reading's superset, which a line must match too (grep.c
	                        * superset_nfa) */
	int have_sup;
	struct lazy_dfa *sup_lazy;
	struct bt_det *bt_det; /* the backtracker's deterministic subtrees (made on first use) */
	struct nfa span_nfa;   /* UTF-8 -o, colour: the spans of "." as glibc's regex finds them
	                        * (grep.c span_dot_nfa) */
	int have_span_nfa;
	struct nfa w_nfa;      /* UTF-8 -w, patterns that can match empty: them without -w's
	                        * assertions, for grep's regex loop (grep.c w_regex_loop) */
	int have_w_nfa;
	int have_bdfa;
	int match_none;        /* no pattern at all (grep -f /dev/null) */
	int enc_err;           /* UTF-8: a line to print had an encoding error (grep_format_end
	                        * then says "binary file matches", as grep does) */
	int gave_up;           /* the backtracker ran out of steps or memory: the formatter
	                        * stops and returns -2 ("memory exhausted") */
	/* UTF-8 context (not -a, lines printed) on the fast path: grep 3.8 prints other lines
	 * around a line it cannot print (an encoding error), which only the exact path can
	 * follow (select_grep38).  A file whose records hold such a line is run again with the
	 * twin: the same patterns compiled for the exact path (grep_needs_exact) */
	int ctx_redo;
	int maybe_redo;        /* the DFA is dfa_build_ascii_w's: a run that meets DFA_MAYBE
	                        * ends with a GREP_REC_REDO record, and the file runs again on
	                        * the exact path (the twin) */
	int lead_client;       /* -B with no_walk_back (arf grep): the arf segment sends no
	                        * leading context, the caller adds it to the records */
	struct grep *twin;     /* made on first use (grep_exact_twin), freed with this one */
	struct grep *redo_twin; /* maybe_redo: the same with the decoder's DFA (grep_redo_twin) */
	char **pats;           /* ctx_redo: copies of the patterns, to compile the twin */
	size_t *lens, n_pats;
	uint8_t lit[256];
	size_t lit_len;
	int lit_icase;         /* lit has letters and is found with them folded (-i: findsi) */
	int lit_is_sets;       /* the literal is lit_set[0..lit_len), found with findset */
	int lit_exact;         /* the pattern is that literal and nothing else: where it is
	                        * found the line matches (literal_is_pattern) */
	uint8_t lit_set[GREP_LIT_SETS][32];
	uint8_t *seg;
	size_t seg_len;
	uint8_t *arf_seg;      /* the ARF segment (arfscan.c), made on first use */
	size_t arf_seg_len;
	/* -o and colour spans (grep.c, set on first use): SPAN_FIXED when the pattern is one
	 * string (letters folded with -i), maybe under -w or -x: its occurrences are the spans;
	 * SPAN_SET: a set of strings (strset); SPAN_LITERAL: every match contains span_lit (a line without it has no more spans) */
	int span_kind;
	int span_word, span_line;
	struct strset *span_set;   /* SPAN_SET: a set of strings, found with its trie */
	uint8_t span_lit[256];
	size_t span_len;
};

/* The client's answer for one line (the exact path's): 1 when it holds a match, 0, or -1
 * when the backtracker gave up. */
int grep_line_matches(struct grep *g, const uint8_t *p, size_t n);
/* g's NFA, made now when grep_compile left it for later; NULL when it could not be made
 * (too big, or out of memory: the client's matchers take the backtracker).  Not
 * thread-safe, as the rest of the formatting. */
const struct nfa *grep_nfa(struct grep *g);
int grep_gen(struct grep *g, char *err, size_t errlen);
/* The segment that scans one file of an ARF image in place (arfscan.c). */
int grep_arf_gen(struct grep *g, char *err, size_t errlen);

#endif
