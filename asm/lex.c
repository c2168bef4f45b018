/* lex.c: splits one line of .pna source into tokens for parse.c.
 *
 * The assembler is line oriented (one statement per line), so the lexer works a line at a
 * time: identifiers, directives (.name), integer and character literals, strings (escapes
 * decoded into the line's string buffer), punctuation.  A ';' outside quotes ends the line.
 * Every read is bounded by the line's length; NUL bytes and other stray characters are errors.
 */
#include <stdlib.h>
#include <string.h>

#include "asm_int.h"

static int is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

int lex_is_ident_char(int c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '$';
}

static void lex_error(struct lexer *lx, size_t col, const char *msg)
{
	if (lx->err)
		return;
	lx->err = msg;
	lx->err_col = col;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One possibly escaped character of a string or char literal at line[*i]; returns the byte or
 * -1 after recording an error. */
static int lex_char(struct lexer *lx, size_t *i)
{
	const char *s = lx->line;
	size_t n = lx->len, at = *i;
	unsigned char c = (unsigned char)s[at];
	if (c != '\\') {
		if (c < ' ' || c > '~') {
			lex_error(lx, at, "unexpected character in literal");
			return -1;
		}
		*i = at + 1;
		return c;
	}
	if (at + 1 >= n) {
		lex_error(lx, at, "unterminated escape sequence");
		return -1;
	}
	switch (s[at + 1]) {
	case 'n': *i = at + 2; return '\n';
	case 't': *i = at + 2; return '\t';
	case 'r': *i = at + 2; return '\r';
	case '0': *i = at + 2; return 0;
	case '\\': *i = at + 2; return '\\';
	case '"': *i = at + 2; return '"';
	case '\'': *i = at + 2; return '\'';
	case 'x': {
		int h = at + 2 < n ? hexval((unsigned char)s[at + 2]) : -1;
		int l = at + 3 < n ? hexval((unsigned char)s[at + 3]) : -1;
		if (h < 0 || l < 0) {
			lex_error(lx, at, "\\x needs two hex digits");
			return -1;
		}
		*i = at + 4;
		return h * 16 + l;
	}
	default:
		lex_error(lx, at, "unknown escape sequence");
		return -1;
	}
}

static struct tok *push_tok(struct lexer *lx, enum tok_kind kind, size_t start, size_t end)
{
	if (vec_reserve((void **)&lx->toks, &lx->cap, lx->n + 1, sizeof *lx->toks) != 0) {
		lex_error(lx, start, "out of memory");
		return NULL;
	}
	struct tok *t = &lx->toks[lx->n++];
	memset(t, 0, sizeof *t);
	t->kind = kind;
	t->col = start;
	t->p = lx->line + start;
	t->len = end - start;
	return t;
}

/* Integer literal: decimal, 0x hex, 0b binary; values up to 2^64-1. */
static size_t lex_number(struct lexer *lx, size_t i)
{
	const char *s = lx->line;
	size_t n = lx->len, start = i;
	unsigned base = 10;
	if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'b' || s[i + 1] == 'B')) {
		base = 2;
		i += 2;
	}
	size_t digits_at = i;
	uint64_t v = 0;
	int overflow = 0;
	for (; i < n; i++) {
		int d = hexval((unsigned char)s[i]);
		if (d < 0 || (unsigned)d >= base)
			break;
		if (v > (UINT64_MAX - (unsigned)d) / base)
			overflow = 1;
		v = v * base + (unsigned)d;
	}
	if (i == digits_at || (i < n && lex_is_ident_char((unsigned char)s[i]))) {
		lex_error(lx, start, "malformed number");
		return i + 1;
	}
	if (overflow)
		lex_error(lx, start, "integer literal does not fit in 64 bits");
	struct tok *t = push_tok(lx, TOK_NUM, start, i);
	if (t)
		t->num = v;
	return i;
}

void lex_line(struct lexer *lx, const char *line, size_t len)
{
	lx->line = line;
	lx->len = len;
	lx->n = 0;
	lx->err = NULL;
	lx->err_col = 0;
	lx->strs.len = 0;
	const char *s = line;
	size_t i = 0;
	while (i < len && !lx->err) {
		unsigned char c = (unsigned char)s[i];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			i++;
		} else if (c == ';') {
			break;
		} else if (is_ident_start(c)) {
			size_t st = i;
			while (i < len && lex_is_ident_char((unsigned char)s[i]))
				i++;
			push_tok(lx, TOK_IDENT, st, i);
		} else if (c == '.' && i + 1 < len && is_ident_start((unsigned char)s[i + 1])) {
			size_t st = i++;
			while (i < len && lex_is_ident_char((unsigned char)s[i]))
				i++;
			push_tok(lx, TOK_DIR, st, i);
		} else if (c >= '0' && c <= '9') {
			i = lex_number(lx, i);
		} else if (c == '"') {
			size_t st = i++, off = lx->strs.len;
			while (i < len && s[i] != '"' && !lx->err) {
				int ch = lex_char(lx, &i);
				if (ch >= 0)
					buf_putc(&lx->strs, ch);
			}
			if (lx->err)
				break;
			if (i >= len) {
				lex_error(lx, st, "unterminated string");
				break;
			}
			i++;
			struct tok *t = push_tok(lx, TOK_STR, st, i);
			if (t) {
				t->str_off = off;
				t->str_len = lx->strs.len - off;
			}
		} else if (c == '\'') {
			size_t st = i++;
			int ch = i < len && s[i] != '\'' ? lex_char(lx, &i) : -1;
			if (lx->err)
				break;
			if (ch < 0 || i >= len || s[i] != '\'') {
				lex_error(lx, st, "malformed character literal");
				break;
			}
			i++;
			struct tok *t = push_tok(lx, TOK_NUM, st, i);
			if (t)
				t->num = (uint64_t)ch;
		} else if ((c == '<' || c == '>') && i + 1 < len && s[i + 1] == c) {
			struct tok *t = push_tok(lx, TOK_PUNCT, i, i + 2);
			if (t)
				t->punct = c == '<' ? 'L' : 'R';
			i += 2;
		} else if (strchr(",:@#+-*/%&|^~().", c) && c != 0) {
			struct tok *t = push_tok(lx, TOK_PUNCT, i, i + 1);
			if (t)
				t->punct = (char)c;
			i++;
		} else {
			lex_error(lx, i, "unexpected character");
		}
	}
	if (lx->strs.oom)
		lex_error(lx, 0, "out of memory");
	/* A final end-of-line token spares the parser from bounds checks. */
	push_tok(lx, TOK_EOL, i < len ? i : len, i < len ? i : len);
}

const char *lex_str(const struct lexer *lx, const struct tok *t)
{
	return lx->strs.p ? (const char *)lx->strs.p + t->str_off : "";
}

void lex_free(struct lexer *lx)
{
	free(lx->toks);
	buf_free(&lx->strs);
	memset(lx, 0, sizeof *lx);
}
