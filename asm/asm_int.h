/* asm_int.h: private interface shared by the assembler (parse.c, lex.c), the builder
 * (builder.c) and the disassembler (dis.c).
 *
 * emit.c owns the pieces both producers need: growable buffers, a segment under construction
 * (struct seg_build) and the finishing step that computes max_stack with the verifier and
 * encodes the bytes.  Nothing here prints; text goes into buffers the caller owns.
 */
#ifndef ASM_INT_H
#define ASM_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "isa.h"

/* ---- growable byte buffer (code, text, diagnostics) ----
 * Errors are sticky: after an allocation failure every call does nothing and oom stays set. */
struct buf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

void buf_put(struct buf *b, const void *data, size_t n);
void buf_putc(struct buf *b, int c);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Detach the contents as a NUL-terminated malloc'd string (NULL on oom); resets b. */
char *buf_take_str(struct buf *b);
void buf_free(struct buf *b);

/* Grow *arr (elements of size elem) so that it holds at least need elements.  Returns 0, or
 * -1 on overflow or allocation failure (the array is left as it was). */
int vec_reserve(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* ---- a segment under construction ----
 * The isa_seg arrays grow as declarations arrive; strings are owned (freed by sb_free).
 * stack_set[i] says function i declared its max_stack (.stack); otherwise sb_finish_func
 * computes it. */
struct seg_build {
	struct isa_seg s;
	uint32_t cap_regions, cap_hooks, cap_funcs, cap_exports, cap_lines, cap_consts;
	uint8_t *stack_set;
	uint32_t cap_stack_set;
};

int sb_add_region(struct seg_build *sb, const char *name, size_t len, uint8_t access);
int sb_add_hook(struct seg_build *sb, const char *name, size_t len, const char *sig,
                size_t sig_len);
/* Appends a function with no code yet; returns its index or -1. */
int sb_add_func(struct seg_build *sb, const char *name, size_t len, unsigned n_args);
int sb_add_export(struct seg_build *sb, const char *name, size_t len, uint16_t func);
int sb_add_line(struct seg_build *sb, uint16_t func, uint32_t pc, uint32_t line);
/* Pad the constant data to align (a power of two, or 0/1 for none), append data; returns the
 * offset, or -1 when ISA_MAX_CONST would be exceeded or memory runs out. */
int64_t sb_add_const(struct seg_build *sb, const void *data, size_t len, unsigned align);
int sb_set_source(struct seg_build *sb, const char *name, size_t len);

/* Compute (or check the declared) max_stack of function fi with the verifier.  Returns 0, or
 * -1 with the verifier's message in err and, when it names one, the offending pc in *bad_pc
 * (else UINT32_MAX). */
int sb_finish_func(struct seg_build *sb, uint32_t fi, char *err, size_t errlen,
                   uint32_t *bad_pc);
void sb_free(struct seg_build *sb);

/* Encode one instruction into code.  The caller has range-checked the operands. */
void emit_insn(struct buf *code, enum op op, unsigned a, unsigned b, int64_t imm);
/* The shortest push of v: pushi8, pushi32 or pushi64. */
enum op push_op_for(int64_t v);

/* Printable lower-case mnemonic of op. */
const char *op_mnemonic(enum op op, char out[16]);

/* Levenshtein distance of a and b, or a large value when either is longer than the limit
 * (names are short; the bound keeps hostile input cheap). */
unsigned edit_distance(const char *a, size_t alen, const char *b, size_t blen);

/* ---- lexer (lex.c): one line at a time ---- */
enum tok_kind { TOK_EOL, TOK_IDENT, TOK_DIR, TOK_NUM, TOK_STR, TOK_PUNCT };

struct tok {
	enum tok_kind kind;
	size_t col;                /* 0-based byte offset in the line */
	const char *p;             /* raw text and its length */
	size_t len;
	uint64_t num;              /* TOK_NUM: value (character literals too) */
	size_t str_off, str_len;   /* TOK_STR: decoded bytes in the lexer's string buffer */
	char punct;                /* TOK_PUNCT: the character; 'L' for <<, 'R' for >> */
};

struct lexer {
	const char *line;
	size_t len;
	struct tok *toks;          /* n tokens, the last one TOK_EOL (unless err is set) */
	uint32_t n, cap;
	struct buf strs;
	const char *err;           /* first error on the line, at err_col */
	size_t err_col;
};

void lex_line(struct lexer *lx, const char *line, size_t len);
const char *lex_str(const struct lexer *lx, const struct tok *t);
int lex_is_ident_char(int c);
void lex_free(struct lexer *lx);

#endif
