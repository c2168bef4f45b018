/* parse.c: asm_assemble, the .pna text assembler (language reference: docs/asm.md).
 *
 * One pass over the lines: declarations go straight into a struct seg_build (emit.c),
 * instructions into the current function's code buffer.  Names that may be used before they
 * are declared (labels, functions, hooks, regions) leave a fixup that is patched at .end or at
 * the end of the file; constants must be declared before use because their value decides the
 * size of a push.  Errors are collected as compiler-style diagnostics and parsing continues
 * with the next line; only an error-free program is verified and encoded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "asm.h"
#include "asm_int.h"

#define MAX_ERRORS     50      /* stop reporting (and parsing) after this many */
#define MAX_EXPR_DEPTH 64      /* nesting of parentheses and unary operators */
#define MAX_ALIGN      65536

typedef __int128 i128;
#define I64_MIN_128 ((i128)INT64_MIN)
#define U64_MAX_128 ((i128)UINT64_MAX)

/* A declared or referenced name and where it appeared. */
struct sym {
	char *name;
	size_t len;
	int64_t val;               /* label: pc; const: offset; local: index */
	uint32_t size;             /* const: length in bytes */
	uint32_t line, col;
};

struct symtab {
	struct sym *v;
	uint32_t n, cap;
};

enum fix_kind { FIX_LABEL, FIX_FUNC, FIX_HOOK, FIX_REGION };

/* A use of a name whose value is not known yet: patched into code[pos] of function func. */
struct fixup {
	enum fix_kind kind;
	uint32_t func, insn_pc, pos;
	struct sym ref;            /* the name and where it was used */
};

struct fixups {
	struct fixup *v;
	uint32_t n, cap;
};

/* An error and its notes: diags.p[off..next group's off).  Errors found at the end (undefined
 * names, verification) are sorted in among the others so output follows the source. */
struct dgroup {
	uint32_t line, col, seq;
	size_t off;
};

/* Source position of one instruction: the default line table and the map from a verifier
 * error's pc back to the line. */
struct insn_pos { uint32_t func, pc, line, col; };

struct asm_state {
	const char *file;
	struct seg_build sb;
	struct lexer lx;
	uint32_t ti;               /* cursor into lx.toks */
	struct buf diags;
	struct dgroup *groups;     /* one per error, with its notes; sorted by position at the end */
	uint32_t n_groups, cap_groups;
	int n_errors;
	int stopped;               /* too many errors */
	uint32_t line;             /* current line, 1-based */

	struct symtab consts, exports, func_defs;
	struct fixups fixes;       /* functions, hooks, regions: resolved at the end */

	/* line table */
	struct insn_pos *insns;
	uint32_t n_insns, cap_insns;
	struct isa_line *xlines;   /* entries from .line directives */
	uint32_t n_xlines, cap_xlines;
	int saw_line, nolines, pending_set;
	uint32_t pending_line;

	/* the open function, if cur >= 0 */
	int cur;
	struct buf code;
	int code_too_big;
	struct symtab locals, labels;
	struct fixups label_fixes;
	int64_t explicit_locals;   /* -1: not given */
	uint32_t locals_line, locals_col;
	uint32_t func_line;
	int func_errors;           /* n_errors when the function began */
};

/* ---- diagnostics ---- */

static void vdiag(struct asm_state *st, uint32_t line, size_t col, const char *kind,
                  const char *fmt, va_list ap)
{
	if (st->stopped)
		return;
	if (kind[0] == 'e' || st->n_groups == 0) {
		if (vec_reserve((void **)&st->groups, &st->cap_groups, st->n_groups + 1,
		                sizeof *st->groups) != 0) {
			st->diags.oom = 1;
			return;
		}
		st->groups[st->n_groups] = (struct dgroup){ line, (uint32_t)col, st->n_groups,
		                                            st->diags.len };
		st->n_groups++;
	}
	buf_printf(&st->diags, "%s:%u:%zu: %s: ", st->file, line, col + 1, kind);
	buf_vprintf(&st->diags, fmt, ap);
	buf_putc(&st->diags, '\n');
}

static void note_at(struct asm_state *st, uint32_t line, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void note_at(struct asm_state *st, uint32_t line, size_t col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdiag(st, line, col, "note", fmt, ap);
	va_end(ap);
}

static void error_at(struct asm_state *st, uint32_t line, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void error_at(struct asm_state *st, uint32_t line, size_t col, const char *fmt, ...)
{
	if (st->stopped)
		return;
	va_list ap;
	va_start(ap, fmt);
	vdiag(st, line, col, "error", fmt, ap);
	va_end(ap);
	if (++st->n_errors >= MAX_ERRORS) {
		note_at(st, line, col, "too many errors, stopping");
		st->stopped = 1;
	}
}

/* Error at a token of the current line. */
#define error_tok(st, t, ...) error_at((st), (st)->line, (t)->col, __VA_ARGS__)

/* Printable form of a name for messages: cut long ones, show odd bytes as '?'. */
static const char *show(const char *s, size_t len, char out[72])
{
	size_t n = len > 64 ? 64 : len, i;
	for (i = 0; i < n; i++)
		out[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
	if (len > n) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
	return out;
}

/* ---- "did you mean" ---- */

struct suggest {
	const char *want;
	size_t wlen;
	const char *best;
	size_t blen;
	unsigned dist;
};

static void suggest_init(struct suggest *sg, const char *want, size_t wlen)
{
	*sg = (struct suggest){ .want = want, .wlen = wlen, .dist = UINT32_MAX };
}

static void suggest_consider(struct suggest *sg, const char *name, size_t len)
{
	unsigned d = edit_distance(sg->want, sg->wlen, name, len);
	if (d < sg->dist) {
		sg->dist = d;
		sg->best = name;
		sg->blen = len;
	}
}

static void suggest_note(struct asm_state *st, struct suggest *sg, uint32_t line, size_t col)
{
	unsigned limit = sg->wlen <= 3 ? 1 : sg->wlen <= 6 ? 2 : 3;
	if (sg->best && sg->dist > 0 && sg->dist <= limit && sg->dist < sg->wlen) {
		char b[72];
		note_at(st, line, col, "did you mean '%s'?", show(sg->best, sg->blen, b));
	}
}

static void suggest_symtab(struct suggest *sg, const struct symtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		suggest_consider(sg, t->v[i].name, t->v[i].len);
}

/* ---- symbol tables (linear: programs have few names per kind) ---- */

static struct sym *sym_find(const struct symtab *t, const char *name, size_t len)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->v[i].len == len && memcmp(t->v[i].name, name, len) == 0)
			return &t->v[i];
	return NULL;
}

static struct sym *sym_add(struct asm_state *st, struct symtab *t, const char *name, size_t len,
                           int64_t val, uint32_t line, size_t col)
{
	char *n = malloc(len + 1);
	if (!n || vec_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v) != 0) {
		free(n);
		error_at(st, line, col, "out of memory");
		return NULL;
	}
	memcpy(n, name, len);
	n[len] = '\0';
	struct sym *s = &t->v[t->n++];
	*s = (struct sym){ .name = n, .len = len, .val = val, .line = line, .col = (uint32_t)col };
	return s;
}

static void symtab_free(struct symtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	memset(t, 0, sizeof *t);
}

static void fixups_free(struct fixups *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		free(f->v[i].ref.name);
	free(f->v);
	memset(f, 0, sizeof *f);
}

static int find_func(const struct asm_state *st, const char *name, size_t len)
{
	for (uint32_t i = 0; i < st->sb.s.n_funcs; i++) {
		const char *n = st->sb.s.funcs[i].name;
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return (int)i;
	}
	return -1;
}

static int find_hook(const struct asm_state *st, const char *name, size_t len)
{
	for (uint32_t i = 0; i < st->sb.s.n_hooks; i++) {
		const char *n = st->sb.s.hooks[i].name;
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return (int)i;
	}
	return -1;
}

static const char *const builtin_regions[ISA_R_FIRST_IMPORT] = { "args", "out", "const" };

static int find_region(const struct asm_state *st, const char *name, size_t len)
{
	for (int i = 0; i < ISA_R_FIRST_IMPORT; i++)
		if (strlen(builtin_regions[i]) == len && memcmp(builtin_regions[i], name, len) == 0)
			return i;
	for (uint32_t i = 0; i < st->sb.s.n_regions; i++) {
		const char *n = st->sb.s.regions[i].name;
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return ISA_R_FIRST_IMPORT + (int)i;
	}
	return -1;
}

/* ---- token cursor ---- */

static struct tok *peek(struct asm_state *st) { return &st->lx.toks[st->ti]; }

static struct tok *next(struct asm_state *st)
{
	struct tok *t = &st->lx.toks[st->ti];
	if (t->kind != TOK_EOL)
		st->ti++;
	return t;
}

static int is_punct(const struct tok *t, char c) { return t->kind == TOK_PUNCT && t->punct == c; }

static int accept_punct(struct asm_state *st, char c)
{
	if (is_punct(peek(st), c)) {
		st->ti++;
		return 1;
	}
	return 0;
}

/* Operands are separated by commas or blanks. */
static void skip_comma(struct asm_state *st) { accept_punct(st, ','); }

static int expect_eol(struct asm_state *st)
{
	struct tok *t = peek(st);
	if (t->kind == TOK_EOL)
		return 0;
	char b[72];
	error_tok(st, t, "unexpected '%s' at end of statement", show(t->p, t->len, b));
	return -1;
}

static const char *tok_desc(const struct tok *t, char out[72])
{
	if (t->kind == TOK_EOL)
		return "end of line";
	char tmp[72];
	snprintf(out, 72, "'%s'", show(t->p, t->len, tmp));
	return out;
}

/* A name: an identifier or a quoted string.  Points into the line or the string buffer. */
static int parse_name(struct asm_state *st, const char *what, const char **name, size_t *len,
                      struct tok **at)
{
	struct tok *t = peek(st);
	*at = t;
	if (t->kind == TOK_IDENT) {
		*name = t->p;
		*len = t->len;
	} else if (t->kind == TOK_STR) {
		*name = lex_str(&st->lx, t);
		*len = t->str_len;
	} else {
		char b[72];
		error_tok(st, t, "expected %s, found %s", what, tok_desc(t, b));
		return -1;
	}
	st->ti++;
	return 0;
}

/* Names stored in the segment must pass isa_name_check. */
static int check_name(struct asm_state *st, const struct tok *t, const char *name, size_t len,
                      const char *what)
{
	if (isa_name_check(name, len) == 0)
		return 0;
	error_tok(st, t, "%s name must be 1-%d printable characters without spaces", what,
	          ISA_MAX_NAME);
	return -1;
}

/* ---- integer expressions ----
 * Values are exact integers (128-bit) restricted to -2^63 .. 2^64-1, the union of the int64
 * and uint64 ranges, so both -1 and 0xffffffffffffffff are accepted where 64 bits fit.
 * Bitwise operators and shifts work on the 64-bit two's complement pattern. */

static int in_range(i128 v) { return v >= I64_MIN_128 && v <= U64_MAX_128; }

static uint64_t bits(i128 v) { return (uint64_t)v; }

static int parse_expr_prec(struct asm_state *st, int prec, int depth, i128 *out);

static int parse_primary(struct asm_state *st, int depth, i128 *out)
{
	struct tok *t = next(st);
	if (depth > MAX_EXPR_DEPTH) {
		error_tok(st, t, "expression nested too deeply");
		return -1;
	}
	if (t->kind == TOK_NUM) {
		*out = (i128)t->num;
		return 0;
	}
	if (t->kind == TOK_PUNCT) {
		switch (t->punct) {
		case '-': case '~': case '+': {
			i128 v;
			if (parse_primary(st, depth + 1, &v) != 0)
				return -1;
			if (t->punct == '-')
				v = -v;
			else if (t->punct == '~')
				v = (i128)~bits(v);
			if (!in_range(v)) {
				error_tok(st, t, "value out of range");
				return -1;
			}
			*out = v;
			return 0;
		}
		case '(':
			if (parse_expr_prec(st, 0, depth + 1, out) != 0)
				return -1;
			if (!accept_punct(st, ')')) {
				char b[72];
				error_tok(st, peek(st), "expected ')', found %s", tok_desc(peek(st), b));
				return -1;
			}
			return 0;
		case '@': case '#': {
			struct tok *n = next(st);
			if (n->kind != TOK_IDENT && n->kind != TOK_STR) {
				error_tok(st, t, "expected a constant name after '%c'", t->punct);
				return -1;
			}
			const char *name = n->kind == TOK_STR ? lex_str(&st->lx, n) : n->p;
			size_t len = n->kind == TOK_STR ? n->str_len : n->len;
			struct sym *c = sym_find(&st->consts, name, len);
			if (!c) {
				char b[72];
				error_tok(st, n, "unknown constant '%s'", show(name, len, b));
				struct suggest sg;
				suggest_init(&sg, name, len);
				suggest_symtab(&sg, &st->consts);
				suggest_note(st, &sg, st->line, n->col);
				return -1;
			}
			*out = t->punct == '@' ? (i128)c->val : (i128)c->size;
			return 0;
		}
		default:
			break;
		}
	}
	char b[72];
	error_tok(st, t, "expected an integer, found %s", tok_desc(t, b));
	return -1;
}

static int binop_prec(const struct tok *t)
{
	if (t->kind != TOK_PUNCT)
		return -1;
	switch (t->punct) {
	case '|': return 0;
	case '^': return 1;
	case '&': return 2;
	case 'L': case 'R': return 3;
	case '+': case '-': return 4;
	case '*': case '/': case '%': return 5;
	default: return -1;
	}
}

static int parse_expr_prec(struct asm_state *st, int prec, int depth, i128 *out)
{
	i128 l;
	if (parse_primary(st, depth, &l) != 0)
		return -1;
	for (;;) {
		struct tok *op = peek(st);
		int p = binop_prec(op);
		if (p < prec)
			break;
		st->ti++;
		i128 r, v = 0;
		if (parse_expr_prec(st, p + 1, depth + 1, &r) != 0)
			return -1;
		switch (op->punct) {
		case '|': v = (i128)(bits(l) | bits(r)); break;
		case '^': v = (i128)(bits(l) ^ bits(r)); break;
		case '&': v = (i128)(bits(l) & bits(r)); break;
		case 'L': case 'R':
			if (r < 0 || r > 63) {
				error_tok(st, op, "shift count must be 0..63");
				return -1;
			}
			v = op->punct == 'L' ? (i128)(bits(l) << (int)r) : (i128)(bits(l) >> (int)r);
			break;
		case '+': v = l + r; break;
		case '-': v = l - r; break;
		case '*':
			if (__builtin_mul_overflow(l, r, &v))
				v = U64_MAX_128 + 1; /* out of range: reported below */
			break;
		case '/': case '%':
			if (r == 0) {
				error_tok(st, op, "division by zero");
				return -1;
			}
			v = op->punct == '/' ? l / r : l % r;
			break;
		}
		if (!in_range(v)) {
			error_tok(st, op, "value out of range");
			return -1;
		}
		l = v;
	}
	*out = l;
	return 0;
}

/* An expression whose value must lie in lo..hi. */
static int parse_int(struct asm_state *st, i128 lo, i128 hi, const char *what, i128 *out)
{
	struct tok *t = peek(st);
	i128 v;
	if (parse_expr_prec(st, 0, 0, &v) != 0)
		return -1;
	if (v < lo || v > hi) {
		char b[72];
		/* print the literal text of the whole expression */
		struct tok *end = peek(st);
		size_t n = end->col > t->col ? end->col - t->col : t->len;
		while (n && (t->p[n - 1] == ' ' || t->p[n - 1] == '\t'))
			n--;
		error_tok(st, t, "%s %s out of range (%lld..%llu)", what, show(t->p, n, b),
		          (long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- function state ---- */

static void note_insn(struct asm_state *st, uint32_t pc, size_t col)
{
	if (vec_reserve((void **)&st->insns, &st->cap_insns, st->n_insns + 1, sizeof *st->insns)) {
		error_at(st, st->line, col, "out of memory");
		return;
	}
	st->insns[st->n_insns++] = (struct insn_pos){ (uint32_t)st->cur, pc, st->line,
	                                              (uint32_t)col };
	if (st->pending_set) {
		st->pending_set = 0;
		if (vec_reserve((void **)&st->xlines, &st->cap_xlines, st->n_xlines + 1,
		                sizeof *st->xlines)) {
			error_at(st, st->line, col, "out of memory");
			return;
		}
		st->xlines[st->n_xlines++] = (struct isa_line){ (uint16_t)st->cur, pc,
		                                                st->pending_line };
	}
}

/* Room for one more instruction in the open function? */
static int code_room(struct asm_state *st, size_t col, size_t n)
{
	if (st->code.len + n <= ISA_MAX_CODE)
		return 1;
	if (!st->code_too_big)
		error_at(st, st->line, col, "function '%s' exceeds %u bytes of code",
		         st->sb.s.funcs[st->cur].name, ISA_MAX_CODE);
	st->code_too_big = 1;
	return 0;
}

static void add_fixup(struct asm_state *st, struct fixups *fx, enum fix_kind kind,
                      uint32_t insn_pc, uint32_t pos, const char *name, size_t len,
                      const struct tok *t)
{
	char *n = malloc(len + 1);
	if (!n || vec_reserve((void **)&fx->v, &fx->cap, fx->n + 1, sizeof *fx->v) != 0) {
		free(n);
		error_tok(st, t, "out of memory");
		return;
	}
	memcpy(n, name, len);
	n[len] = '\0';
	fx->v[fx->n++] = (struct fixup){ .kind = kind, .func = (uint32_t)st->cur,
	                                 .insn_pc = insn_pc, .pos = pos,
	                                 .ref = { .name = n, .len = len, .line = st->line,
	                                          .col = (uint32_t)t->col } };
}

static void end_func(struct asm_state *st)
{
	struct isa_func *f = &st->sb.s.funcs[st->cur];
	/* branches to labels of this function */
	for (uint32_t i = 0; i < st->label_fixes.n; i++) {
		struct fixup *x = &st->label_fixes.v[i];
		struct sym *l = sym_find(&st->labels, x->ref.name, x->ref.len);
		if (!l) {
			char b[72];
			error_at(st, x->ref.line, x->ref.col, "undefined label '%s'",
			         show(x->ref.name, x->ref.len, b));
			struct suggest sg;
			suggest_init(&sg, x->ref.name, x->ref.len);
			suggest_symtab(&sg, &st->labels);
			suggest_note(st, &sg, x->ref.line, x->ref.col);
			continue;
		}
		if (x->pos + 4 <= st->code.len)
			isa_put32(st->code.p + x->pos, (uint32_t)(int32_t)(l->val - (int64_t)x->insn_pc));
	}
	if (st->explicit_locals >= 0 && st->explicit_locals < st->locals.n)
		error_at(st, st->locals_line, st->locals_col,
		         "'.locals %lld' is fewer than the %u locals named", 
		         (long long)st->explicit_locals, st->locals.n);
	f->n_locals = (uint8_t)(st->explicit_locals >= 0 ? (uint32_t)st->explicit_locals
	                                                 : st->locals.n);
	if (st->code.oom)
		error_at(st, st->line, 0, "out of memory");
	else if (st->code.len == 0 && st->n_errors == st->func_errors)
		error_at(st, st->func_line, 0, "function '%s' has no instructions", f->name);
	f->code = st->code.p;
	f->code_len = st->code.oom ? 0 : (uint32_t)st->code.len;
	st->code = (struct buf){ 0 };
	symtab_free(&st->locals);
	symtab_free(&st->labels);
	fixups_free(&st->label_fixes);
	st->cur = -1;
	st->pending_set = 0;
}

/* ---- directives ---- */

static int need_func(struct asm_state *st, const struct tok *d)
{
	if (st->cur >= 0)
		return 0;
	char b[72];
	error_tok(st, d, "'%s' outside a function", show(d->p, d->len, b));
	return -1;
}

static void add_local(struct asm_state *st, const char *name, size_t len, const struct tok *t)
{
	char b[72];
	struct sym *prev = sym_find(&st->locals, name, len);
	if (prev) {
		error_tok(st, t, "local '%s' declared twice", show(name, len, b));
		note_at(st, prev->line, prev->col, "first declared here");
		return;
	}
	if (st->locals.n >= ISA_MAX_LOCALS) {
		error_tok(st, t, "too many locals (at most %d)", ISA_MAX_LOCALS);
		return;
	}
	sym_add(st, &st->locals, name, len, st->locals.n, st->line, t->col);
}

static void dir_func(struct asm_state *st, struct tok *d)
{
	if (st->cur >= 0) {
		error_tok(st, d, "'.func' inside function '%s' (missing .end?)",
		          st->sb.s.funcs[st->cur].name);
		end_func(st);
	}
	const char *name;
	size_t len;
	struct tok *t;
	if (parse_name(st, "a function name", &name, &len, &t) != 0 ||
	    check_name(st, t, name, len, "function") != 0) {
		/* open a placeholder so the body does not cascade into more errors */
		name = "?";
		len = 1;
		while (peek(st)->kind != TOK_EOL)
			st->ti++;
	}
	char b[72];
	struct sym *prev = sym_find(&st->func_defs, name, len);
	if (prev) {
		error_tok(st, t, "function '%s' defined twice", show(name, len, b));
		note_at(st, prev->line, prev->col, "first defined here");
	} else {
		sym_add(st, &st->func_defs, name, len, st->sb.s.n_funcs, st->line, t->col);
	}
	int fi = sb_add_func(&st->sb, name, len, 0);
	if (fi < 0) {
		error_tok(st, t, "too many functions (at most %d)", ISA_MAX_FUNCS);
		return;
	}
	st->cur = fi;
	st->func_line = st->line;
	st->func_errors = st->n_errors;
	st->code_too_big = 0;
	st->explicit_locals = -1;
	st->pending_set = 0;
	while (peek(st)->kind != TOK_EOL) {
		skip_comma(st);
		if (parse_name(st, "an argument name", &name, &len, &t) != 0)
			return;
		add_local(st, name, len, t);
	}
	st->sb.s.funcs[fi].n_args = (uint8_t)st->locals.n;
}

static void dir_local(struct asm_state *st, struct tok *d)
{
	if (need_func(st, d) != 0)
		return;
	if (peek(st)->kind == TOK_EOL) {
		error_tok(st, peek(st), "expected a local name");
		return;
	}
	while (peek(st)->kind != TOK_EOL) {
		const char *name;
		size_t len;
		struct tok *t;
		skip_comma(st);
		if (parse_name(st, "a local name", &name, &len, &t) != 0)
			return;
		add_local(st, name, len, t);
	}
}

static void dir_region(struct asm_state *st, struct tok *d)
{
	(void)d;
	const char *name;
	size_t len;
	struct tok *t;
	char b[72];
	if (parse_name(st, "a region name", &name, &len, &t) != 0 ||
	    check_name(st, t, name, len, "region") != 0)
		return;
	int r = find_region(st, name, len);
	if (r >= 0 && r < ISA_R_FIRST_IMPORT) {
		error_tok(st, t, "'%s' is a built-in region and cannot be imported", show(name, len, b));
		return;
	}
	if (r >= 0) {
		error_tok(st, t, "region '%s' imported twice", show(name, len, b));
		return;
	}
	skip_comma(st);
	struct tok *a = next(st);
	uint8_t acc;
	if (a->kind == TOK_IDENT && a->len == 2 && strncasecmp(a->p, "ro", 2) == 0)
		acc = ISA_ACC_RO;
	else if (a->kind == TOK_IDENT && a->len == 2 && strncasecmp(a->p, "rw", 2) == 0)
		acc = ISA_ACC_RW;
	else {
		error_tok(st, a, "expected 'ro' or 'rw', found %s", tok_desc(a, b));
		return;
	}
	if (expect_eol(st) != 0)
		return;
	if (sb_add_region(&st->sb, name, len, acc) < 0)
		error_tok(st, t, "too many region imports (at most %d)", ISA_MAX_REGIONS);
}

static void dir_hook(struct asm_state *st, struct tok *d)
{
	(void)d;
	const char *name;
	size_t len;
	struct tok *t;
	char b[72];
	if (parse_name(st, "a hook name", &name, &len, &t) != 0 ||
	    check_name(st, t, name, len, "hook") != 0)
		return;
	if (find_hook(st, name, len) >= 0) {
		error_tok(st, t, "hook '%s' imported twice", show(name, len, b));
		return;
	}
	skip_comma(st);
	struct tok *s = peek(st);
	const char *sig;
	size_t sig_len;
	if (s->kind == TOK_STR) {
		sig = lex_str(&st->lx, s);
		sig_len = s->str_len;
		st->ti++;
		if (expect_eol(st) != 0)
			return;
	} else {
		/* unquoted: the rest of the statement, e.g. ll:l */
		while (peek(st)->kind != TOK_EOL)
			st->ti++;
		sig = s->p;
		sig_len = peek(st)->col - s->col;
		while (sig_len && (sig[sig_len - 1] == ' ' || sig[sig_len - 1] == '\t'))
			sig_len--;
	}
	char sigz[ISA_MAX_SIG + 2];
	int ok = sig_len > 0 && sig_len <= ISA_MAX_SIG && !memchr(sig, 0, sig_len);
	if (ok) {
		memcpy(sigz, sig, sig_len);
		sigz[sig_len] = '\0';
		ok = isa_sig_check(sigz) >= 0;
	}
	if (!ok) {
		error_tok(st, s, "bad hook signature '%s'", show(sig, sig_len, b));
		note_at(st, st->line, s->col,
		        "a signature is up to %d argument letters (i I l L), ':', and a result letter "
		        "(i I l L v), like \"ll:l\"", ISA_MAX_HOOK_ARGS);
		return;
	}
	if (sb_add_hook(&st->sb, name, len, sig, sig_len) < 0)
		error_tok(st, t, "too many hook imports (at most %d)", ISA_MAX_HOOKS);
}

/* .const NAME "text" | bytes|u16|u32|u64 v, ... | zero N */
static void dir_const(struct asm_state *st, struct tok *d)
{
	const char *name;
	size_t len;
	struct tok *t;
	char b[72];
	if (parse_name(st, "a constant name", &name, &len, &t) != 0)
		return;
	struct sym *prev = sym_find(&st->consts, name, len);
	if (prev) {
		error_tok(st, t, "constant '%s' defined twice", show(name, len, b));
		note_at(st, prev->line, prev->col, "first defined here");
		return;
	}
	skip_comma(st);
	struct tok *k = peek(st);
	struct buf data = { 0 };
	unsigned align = 1;
	int bad = 0;
	if (k->kind == TOK_STR) {
		buf_put(&data, lex_str(&st->lx, k), k->str_len);
		st->ti++;
		bad = expect_eol(st) != 0;
	} else if (k->kind == TOK_IDENT && k->len == 4 && strncasecmp(k->p, "zero", 4) == 0) {
		st->ti++;
		i128 n;
		if (parse_int(st, 0, ISA_MAX_CONST, "size", &n) != 0 || expect_eol(st) != 0)
			bad = 1;
		else if (n > 0) {
			uint8_t *z = calloc(1, (size_t)n);
			if (!z) {
				error_tok(st, k, "out of memory");
				bad = 1;
			} else {
				buf_put(&data, z, (size_t)n);
				free(z);
			}
		}
	} else if (k->kind == TOK_IDENT) {
		unsigned w = 0;
		if (k->len == 5 && strncasecmp(k->p, "bytes", 5) == 0)
			w = 1;
		else if (k->len == 3 && strncasecmp(k->p, "u16", 3) == 0)
			w = 2;
		else if (k->len == 3 && strncasecmp(k->p, "u32", 3) == 0)
			w = 4;
		else if (k->len == 3 && strncasecmp(k->p, "u64", 3) == 0)
			w = 8;
		if (!w) {
			error_tok(st, k, "unknown constant kind '%s' (expected a string, bytes, u16, u32, "
			          "u64 or zero)", show(k->p, k->len, b));
			return;
		}
		st->ti++;
		align = w;
		/* Each value may be negative down to the signed minimum of its width. */
		i128 lo = w == 8 ? I64_MIN_128 : -((i128)1 << (8 * w - 1));
		i128 hi = w == 8 ? U64_MAX_128 : ((i128)1 << (8 * w)) - 1;
		while (peek(st)->kind != TOK_EOL && !bad) {
			i128 v;
			if (parse_int(st, lo, hi, "value", &v) != 0) {
				bad = 1;
				break;
			}
			uint8_t le[8];
			isa_put64(le, bits(v));
			buf_put(&data, le, w);
			skip_comma(st);
			if (data.len > ISA_MAX_CONST)
				break;
		}
	} else {
		error_tok(st, k, "expected a string, bytes, u16, u32, u64 or zero, found %s",
		          tok_desc(k, b));
		return;
	}
	if (!bad && data.oom)
		error_tok(st, k, "out of memory");
	if (!bad && !data.oom) {
		int64_t off = data.len > ISA_MAX_CONST ? -1 : sb_add_const(&st->sb, data.p, data.len,
		                                                           align);
		if (off < 0)
			error_tok(st, t, "constant data exceeds %u bytes", ISA_MAX_CONST);
		else {
			struct sym *s = sym_add(st, &st->consts, name, len, off, st->line, t->col);
			if (s)
				s->size = (uint32_t)data.len;
		}
	}
	buf_free(&data);
	(void)d;
}

static void dir_align(struct asm_state *st, struct tok *d)
{
	struct tok *t = peek(st);
	i128 n;
	if (parse_int(st, 1, MAX_ALIGN, "alignment", &n) != 0 || expect_eol(st) != 0)
		return;
	if (n & (n - 1)) {
		error_tok(st, t, "alignment must be a power of two");
		return;
	}
	if (sb_add_const(&st->sb, NULL, 0, (unsigned)n) < 0)
		error_tok(st, d, "constant data exceeds %u bytes", ISA_MAX_CONST);
}

static void dir_export(struct asm_state *st, struct tok *d)
{
	const char *name, *fname;
	size_t len, flen;
	struct tok *t, *ft;
	if (parse_name(st, "an export name", &name, &len, &t) != 0 ||
	    check_name(st, t, name, len, "export") != 0)
		return;
	struct sym *e = NULL;
	char b[72];
	for (uint32_t i = 0; i < st->exports.n; i++)
		if (st->exports.v[i].len == len && memcmp(st->exports.v[i].name, name, len) == 0) {
			error_tok(st, t, "'%s' exported twice", show(name, len, b));
			note_at(st, st->exports.v[i].line, st->exports.v[i].col, "first exported here");
			return;
		}
	skip_comma(st);
	if (peek(st)->kind == TOK_EOL) {
		fname = name;
		flen = len;
		ft = t;
	} else if (parse_name(st, "a function name", &fname, &flen, &ft) != 0) {
		return;
	}
	if (expect_eol(st) != 0)
		return;
	e = sym_add(st, &st->exports, name, len, 0, st->line, t->col);
	if (!e)
		return;
	/* the function may be defined later: resolved at the end like a call */
	add_fixup(st, &st->fixes, FIX_FUNC, UINT32_MAX, st->exports.n - 1, fname, flen, ft);
	(void)d;
}

static void dir_line(struct asm_state *st, struct tok *d)
{
	if (need_func(st, d) != 0)
		return;
	i128 n;
	if (parse_int(st, 0, UINT32_MAX, "line", &n) != 0 || expect_eol(st) != 0)
		return;
	st->saw_line = 1;
	st->pending_set = 1;
	st->pending_line = (uint32_t)n;
}

static void dir_source(struct asm_state *st, struct tok *d)
{
	const char *name;
	size_t len;
	struct tok *t;
	if (parse_name(st, "a file name", &name, &len, &t) != 0 || expect_eol(st) != 0)
		return;
	if (len > ISA_MAX_NAME) {
		error_tok(st, t, "source name longer than %d bytes", ISA_MAX_NAME);
		return;
	}
	if (sb_set_source(&st->sb, name, len) != 0)
		error_tok(st, t, "out of memory");
	(void)d;
}

/* .byte v, ...: raw code bytes (the disassembler's escape for bytes it cannot decode) */
static void dir_byte(struct asm_state *st, struct tok *d)
{
	if (need_func(st, d) != 0)
		return;
	while (peek(st)->kind != TOK_EOL) {
		struct tok *t = peek(st);
		i128 v;
		if (parse_int(st, -128, 255, "byte", &v) != 0 || !code_room(st, t->col, 1))
			return;
		note_insn(st, (uint32_t)st->code.len, t->col);
		buf_putc(&st->code, (int)bits(v));
		skip_comma(st);
	}
}

static void directive(struct asm_state *st)
{
	struct tok *d = next(st);
	const char *n = d->p + 1;
	size_t len = d->len - 1;
#define IS(s) (len == sizeof(s) - 1 && strncasecmp(n, s, len) == 0)
	if (IS("func"))
		dir_func(st, d);
	else if (IS("end")) {
		if (need_func(st, d) == 0 && expect_eol(st) == 0)
			end_func(st);
		else if (st->cur >= 0)
			end_func(st);
	} else if (IS("local"))
		dir_local(st, d);
	else if (IS("locals")) {
		struct tok *t = peek(st);
		i128 v;
		if (need_func(st, d) == 0 && parse_int(st, 0, ISA_MAX_LOCALS, "local count", &v) == 0 &&
		    expect_eol(st) == 0) {
			st->explicit_locals = (int64_t)v;
			st->locals_line = st->line;
			st->locals_col = (uint32_t)t->col;
		}
	} else if (IS("stack")) {
		i128 v;
		if (need_func(st, d) == 0 && parse_int(st, 0, ISA_MAX_STACK, "stack size", &v) == 0 &&
		    expect_eol(st) == 0) {
			st->sb.stack_set[st->cur] = 1;
			st->sb.s.funcs[st->cur].max_stack = (uint16_t)v;
		}
	} else if (IS("region")) {
		dir_region(st, d);
	} else if (IS("hook")) {
		dir_hook(st, d);
	} else if (IS("const")) {
		dir_const(st, d);
	} else if (IS("align")) {
		dir_align(st, d);
	} else if (IS("export")) {
		dir_export(st, d);
	} else if (IS("line")) {
		dir_line(st, d);
	} else if (IS("source")) {
		dir_source(st, d);
	} else if (IS("nolines")) {
		if (expect_eol(st) == 0)
			st->nolines = 1;
	} else if (IS("byte")) {
		dir_byte(st, d);
	} else {
		static const char *const dirs[] = { ".func", ".end", ".local", ".locals", ".stack",
			".region", ".hook", ".const", ".align", ".export", ".line", ".source", ".nolines",
			".byte" };
		char b[72];
		error_tok(st, d, "unknown directive '%s'", show(d->p, d->len, b));
		struct suggest sg;
		suggest_init(&sg, d->p, d->len);
		for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
			suggest_consider(&sg, dirs[i], strlen(dirs[i]));
		suggest_note(st, &sg, st->line, d->col);
	}
#undef IS
}

/* ---- instructions ---- */

static int parse_local(struct asm_state *st, unsigned *out)
{
	struct tok *t = peek(st);
	if (t->kind == TOK_IDENT) {
		st->ti++;
		struct sym *l = sym_find(&st->locals, t->p, t->len);
		if (l) {
			*out = (unsigned)l->val;
			return 0;
		}
		char b[72];
		error_tok(st, t, "unknown local '%s'", show(t->p, t->len, b));
		struct suggest sg;
		suggest_init(&sg, t->p, t->len);
		suggest_symtab(&sg, &st->locals);
		suggest_note(st, &sg, st->line, t->col);
		return -1;
	}
	i128 v;
	if (parse_int(st, 0, ISA_MAX_LOCALS - 1, "local", &v) != 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A region operand: a name (resolved now or at the end) or an index.  *fix is set when the
 * name is not declared yet. */
static int parse_region(struct asm_state *st, unsigned *out, struct tok **fix)
{
	struct tok *t = peek(st);
	*fix = NULL;
	if (t->kind == TOK_IDENT || t->kind == TOK_STR) {
		st->ti++;
		const char *name = t->kind == TOK_STR ? lex_str(&st->lx, t) : t->p;
		size_t len = t->kind == TOK_STR ? t->str_len : t->len;
		int r = find_region(st, name, len);
		if (t->kind == TOK_STR && r >= 0 && r < ISA_R_FIRST_IMPORT)
			r = -1;
		*out = r >= 0 ? (unsigned)r : 0;
		if (r < 0)
			*fix = t;
		return 0;
	}
	i128 v;
	if (parse_int(st, 0, 255, "region", &v) != 0)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static void region_fixup(struct asm_state *st, struct tok *t, uint32_t insn_pc, uint32_t pos)
{
	const char *name = t->kind == TOK_STR ? lex_str(&st->lx, t) : t->p;
	size_t len = t->kind == TOK_STR ? t->str_len : t->len;
	add_fixup(st, &st->fixes, FIX_REGION, insn_pc, pos, name, len, t);
}

static void instruction(struct asm_state *st)
{
	struct tok *m = next(st);
	char b[72];
	int op = isa_op_lookup(m->p, m->len);
	int is_push = m->len == 4 && strncasecmp(m->p, "push", 4) == 0;
	if (op < 0 && !is_push) {
		error_tok(st, m, "unknown mnemonic '%s'", show(m->p, m->len, b));
		/* candidates: "push" and every mnemonic, lower case */
		static const char *const push_name = "push";
		char mn[OP_COUNT][16];
		struct suggest sg;
		suggest_init(&sg, m->p, m->len);
		suggest_consider(&sg, push_name, 4);
		for (int i = 0; i < OP_COUNT; i++) {
			op_mnemonic((enum op)i, mn[i]);
			suggest_consider(&sg, mn[i], strlen(mn[i]));
		}
		suggest_note(st, &sg, st->line, m->col);
		return;
	}
	if (st->cur < 0) {
		error_tok(st, m, "instruction outside a function");
		return;
	}
	if (!code_room(st, m->col, ISA_MAX_INSN))
		return;
	uint32_t pc = (uint32_t)st->code.len;
	unsigned a = 0, bb = 0;
	int64_t imm = 0;
	i128 v;
	int fmt = is_push ? ISA_FMT_I64 : isa_op_info[op].fmt;
	struct tok *fix1 = NULL, *fix2 = NULL, *t = peek(st);
	const char *name;
	size_t len;
	switch ((enum isa_fmt)fmt) {
	case ISA_FMT_NONE:
		break;
	case ISA_FMT_I8:
		if (parse_int(st, INT8_MIN, INT8_MAX, "immediate", &v) != 0)
			return;
		imm = (int64_t)v;
		break;
	case ISA_FMT_I32:
		if (parse_int(st, INT32_MIN, INT32_MAX, "immediate", &v) != 0)
			return;
		imm = (int64_t)v;
		break;
	case ISA_FMT_I64:
		if (parse_int(st, I64_MIN_128, U64_MAX_128, "immediate", &v) != 0)
			return;
		imm = (int64_t)bits(v);
		if (is_push)
			op = push_op_for(imm);
		break;
	case ISA_FMT_U8:
		if (parse_local(st, &a) != 0)
			return;
		break;
	case ISA_FMT_U8I8:
		if (parse_local(st, &a) != 0)
			return;
		skip_comma(st);
		if (parse_int(st, INT8_MIN, INT8_MAX, "increment", &v) != 0)
			return;
		imm = (int64_t)v;
		break;
	case ISA_FMT_U16:
		if (parse_int(st, 0, UINT16_MAX, "code", &v) != 0)
			return;
		imm = (int64_t)v;
		break;
	case ISA_FMT_REL32:
		if (t->kind == TOK_IDENT) {
			st->ti++;
			add_fixup(st, &st->label_fixes, FIX_LABEL, pc, pc + 1, t->p, t->len, t);
		} else if (is_punct(t, '.')) {
			/* .+N / .-N: a displacement relative to this instruction */
			st->ti++;
			struct tok *s = peek(st);
			if (!is_punct(s, '+') && !is_punct(s, '-')) {
				error_tok(st, s, "expected '+' or '-' after '.'");
				return;
			}
			if (parse_int(st, INT32_MIN, INT32_MAX, "displacement", &v) != 0)
				return;
			imm = (int64_t)v;
		} else {
			error_tok(st, t, "expected a label, found %s", tok_desc(t, b));
			return;
		}
		break;
	case ISA_FMT_FUNC:
	case ISA_FMT_HOOK: {
		struct tok *nt;
		if (parse_name(st, fmt == ISA_FMT_FUNC ? "a function name" : "a hook name", &name,
		               &len, &nt) != 0)
			return;
		int idx = fmt == ISA_FMT_FUNC ? find_func(st, name, len) : find_hook(st, name, len);
		if (idx >= 0)
			imm = idx;
		else
			add_fixup(st, &st->fixes, fmt == ISA_FMT_FUNC ? FIX_FUNC : FIX_HOOK, pc, pc + 1,
			          name, len, nt);
		break;
	}
	case ISA_FMT_R:
		if (parse_region(st, &a, &fix1) != 0)
			return;
		break;
	case ISA_FMT_RR:
		if (parse_region(st, &a, &fix1) != 0)
			return;
		skip_comma(st);
		if (parse_region(st, &bb, &fix2) != 0)
			return;
		break;
	case ISA_FMT_COUNT:
		return;
	}
	if (expect_eol(st) != 0)
		return;
	if (fix1)
		region_fixup(st, fix1, pc, pc + 1);
	if (fix2)
		region_fixup(st, fix2, pc, pc + 2);
	note_insn(st, pc, m->col);
	emit_insn(&st->code, (enum op)op, a, bb, imm);
}

/* ---- one line ---- */

static void statement(struct asm_state *st, const char *line, size_t len)
{
	lex_line(&st->lx, line, len);
	st->ti = 0;
	if (st->lx.err) {
		size_t c = st->lx.err_col;
		unsigned char ch = c < len ? (unsigned char)line[c] : 0;
		if (strcmp(st->lx.err, "unknown escape sequence") == 0 && c + 1 < len &&
		    line[c + 1] > ' ' && line[c + 1] <= '~') {
			error_at(st, st->line, c, "unknown escape sequence '\\%c'", line[c + 1]);
		} else if (strcmp(st->lx.err, "unexpected character") == 0) {
			if (ch > ' ' && ch <= '~')
				error_at(st, st->line, c, "unexpected character '%c'", ch);
			else
				error_at(st, st->line, c, "unexpected character '\\x%02x'", ch);
		} else {
			error_at(st, st->line, c, "%s", st->lx.err);
		}
		return;
	}
	struct tok *t = peek(st);
	if (t->kind == TOK_IDENT && is_punct(&st->lx.toks[1], ':')) {
		st->ti = 2;
		char b[72];
		if (st->cur < 0) {
			error_tok(st, t, "label '%s' outside a function", show(t->p, t->len, b));
		} else {
			struct sym *prev = sym_find(&st->labels, t->p, t->len);
			if (prev) {
				error_tok(st, t, "label '%s' defined twice", show(t->p, t->len, b));
				note_at(st, prev->line, prev->col, "first defined here");
			} else {
				sym_add(st, &st->labels, t->p, t->len, (int64_t)st->code.len, st->line, t->col);
			}
		}
		t = peek(st);
	}
	if (t->kind == TOK_EOL)
		return;
	if (t->kind == TOK_DIR)
		directive(st);
	else if (t->kind == TOK_IDENT)
		instruction(st);
	else {
		char b[72];
		error_tok(st, t, "expected a directive, label or instruction, found %s",
		          tok_desc(t, b));
	}
}

/* ---- end of input: fixups, exports, verification, line table ---- */

static void resolve(struct asm_state *st)
{
	struct isa_seg *s = &st->sb.s;
	char b[72];
	for (uint32_t i = 0; i < st->fixes.n; i++) {
		struct fixup *x = &st->fixes.v[i];
		int idx = -1;
		const char *what = "function";
		struct suggest sg;
		suggest_init(&sg, x->ref.name, x->ref.len);
		switch (x->kind) {
		case FIX_FUNC:
			idx = find_func(st, x->ref.name, x->ref.len);
			for (uint32_t j = 0; idx < 0 && j < s->n_funcs; j++)
				suggest_consider(&sg, s->funcs[j].name, strlen(s->funcs[j].name));
			break;
		case FIX_HOOK:
			what = "hook";
			idx = find_hook(st, x->ref.name, x->ref.len);
			for (uint32_t j = 0; idx < 0 && j < s->n_hooks; j++)
				suggest_consider(&sg, s->hooks[j].name, strlen(s->hooks[j].name));
			break;
		case FIX_REGION:
			what = "region";
			idx = find_region(st, x->ref.name, x->ref.len);
			for (int j = 0; idx < 0 && j < ISA_R_FIRST_IMPORT; j++)
				suggest_consider(&sg, builtin_regions[j], strlen(builtin_regions[j]));
			for (uint32_t j = 0; idx < 0 && j < s->n_regions; j++)
				suggest_consider(&sg, s->regions[j].name, strlen(s->regions[j].name));
			break;
		case FIX_LABEL:
			break;
		}
		if (idx < 0) {
			error_at(st, x->ref.line, x->ref.col, "undefined %s '%s'", what,
			         show(x->ref.name, x->ref.len, b));
			suggest_note(st, &sg, x->ref.line, x->ref.col);
			continue;
		}
		if (x->insn_pc == UINT32_MAX) {
			/* an export: pos is its index in st->exports */
			struct sym *e = &st->exports.v[x->pos];
			if (sb_add_export(&st->sb, e->name, e->len, (uint16_t)idx) != 0)
				error_at(st, e->line, e->col, "too many exports (at most %d)", ISA_MAX_EXPORTS);
			continue;
		}
		struct isa_func *f = &s->funcs[x->func];
		if (x->kind == FIX_REGION) {
			if (x->pos < f->code_len)
				f->code[x->pos] = (uint8_t)idx;
		} else if (x->pos + 2 <= f->code_len) {
			isa_put16(f->code + x->pos, (uint16_t)idx);
		}
	}
}

static const struct insn_pos *insn_at(const struct asm_state *st, uint32_t func, uint32_t pc)
{
	const struct insn_pos *best = NULL;
	for (uint32_t i = 0; i < st->n_insns; i++)
		if (st->insns[i].func == func && st->insns[i].pc <= pc)
			best = &st->insns[i];
	return best;
}

static void verify_all(struct asm_state *st)
{
	char err[512];
	for (uint32_t fi = 0; fi < st->sb.s.n_funcs; fi++) {
		uint32_t pc;
		if (sb_finish_func(&st->sb, fi, err, sizeof err, &pc) == 0)
			continue;
		const struct insn_pos *ip = pc != UINT32_MAX ? insn_at(st, fi, pc) : NULL;
		if (ip)
			error_at(st, ip->line, ip->col, "%s", err);
		else
			error_at(st, st->line, 0, "%s", err);
	}
}

static void set_lines(struct asm_state *st)
{
	struct isa_seg *s = &st->sb.s;
	if (st->nolines)
		return;
	if (st->saw_line) {
		s->lines = st->xlines;
		s->n_lines = st->n_xlines;
		st->xlines = NULL;
		st->n_xlines = 0;
		return;
	}
	if (st->n_insns == 0)
		return;
	s->lines = malloc((size_t)st->n_insns * sizeof *s->lines);
	if (!s->lines) {
		error_at(st, st->line, 0, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < st->n_insns; i++)
		s->lines[i] = (struct isa_line){ (uint16_t)st->insns[i].func, st->insns[i].pc,
		                                 st->insns[i].line };
	s->n_lines = st->n_insns;
}

static int group_cmp(const void *a, const void *b)
{
	const struct dgroup *x = a, *y = b;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The diagnostics as one string, error groups in source order (NULL when there are none). */
static char *sorted_diags(struct asm_state *st)
{
	if (st->diags.len == 0 || st->diags.oom)
		return NULL;
	for (uint32_t i = 0; i < st->n_groups; i++)
		st->groups[i].seq = i; /* seq doubles as the index of the group's end */
	struct dgroup *g = malloc((size_t)st->n_groups * sizeof *g);
	if (!g)
		return NULL;
	memcpy(g, st->groups, (size_t)st->n_groups * sizeof *g);
	qsort(g, st->n_groups, sizeof *g, group_cmp);
	struct buf out = { 0 };
	for (uint32_t i = 0; i < st->n_groups; i++) {
		uint32_t k = g[i].seq;
		size_t end = k + 1 < st->n_groups ? st->groups[k + 1].off : st->diags.len;
		buf_put(&out, st->diags.p + g[i].off, end - g[i].off);
	}
	free(g);
	return buf_take_str(&out);
}

int asm_assemble(const char *src, size_t len, const char *file, uint8_t **seg, size_t *seg_len,
                 char **diags)
{
	struct asm_state st = { .file = file ? file : "<input>", .cur = -1, .explicit_locals = -1 };
	*seg = NULL;
	*seg_len = 0;
	*diags = NULL;
	/* The line table names the source; long paths keep their last ISA_MAX_NAME bytes. */
	size_t flen = strlen(st.file);
	const char *fsrc = flen > ISA_MAX_NAME ? st.file + flen - ISA_MAX_NAME : st.file;
	if (sb_set_source(&st.sb, fsrc, strlen(fsrc)) != 0)
		st.n_errors++;

	size_t pos = 0;
	st.line = 0;
	while (pos < len && !st.stopped) {
		const char *nl = memchr(src + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - src) : len;
		st.line = st.line < UINT32_MAX ? st.line + 1 : st.line;
		statement(&st, src + pos, end - pos);
		pos = nl ? end + 1 : len;
	}
	if (st.line == 0)
		st.line = 1;
	if (st.cur >= 0 && !st.stopped) {
		error_at(&st, st.line, 0, "missing .end for function '%s'", st.sb.s.funcs[st.cur].name);
		note_at(&st, st.func_line, 0, "function '%s' starts here", st.sb.s.funcs[st.cur].name);
	}
	if (st.cur >= 0)
		end_func(&st);
	if (!st.stopped)
		resolve(&st);
	if (st.sb.s.n_funcs == 0 && st.n_errors == 0)
		error_at(&st, st.line, 0, "no functions defined");
	if (st.n_errors == 0)
		verify_all(&st);
	if (st.n_errors == 0)
		set_lines(&st);
	if (st.n_errors == 0) {
		char err[256];
		if (isa_seg_encode(&st.sb.s, seg, seg_len, err, sizeof err) != 0)
			error_at(&st, st.line, 0, "%s", err);
	}
	if (st.diags.oom && st.n_errors == 0)
		st.n_errors = 1;

	int n = st.n_errors;
	if (n && *seg) {
		free(*seg);
		*seg = NULL;
		*seg_len = 0;
	}
	*diags = sorted_diags(&st);
	buf_free(&st.diags);
	buf_free(&st.code);
	lex_free(&st.lx);
	symtab_free(&st.consts);
	symtab_free(&st.exports);
	symtab_free(&st.func_defs);
	symtab_free(&st.locals);
	symtab_free(&st.labels);
	fixups_free(&st.fixes);
	fixups_free(&st.label_fixes);
	free(st.insns);
	free(st.xlines);
	free(st.groups);
	sb_free(&st.sb);
	return n;
}
