/* emit.c: the output side shared by the text assembler and the C builder.
 *
 * Growable buffers, a segment under construction (struct seg_build) whose arrays grow as
 * declarations arrive, instruction encoding, and the finishing step: max_stack of a function is
 * whatever depth isa_verify_func reaches, so the assembler, the builder and the VM agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm_int.h"

/* ---- buffers ---- */

static int buf_reserve(struct buf *b, size_t n)
{
	if (b->oom)
		return -1;
	if (n <= b->cap - b->len)
		return 0;
	if (n > SIZE_MAX / 2 - b->len) {
		b->oom = 1;
		return -1;
	}
	size_t cap = b->cap ? b->cap : 64;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void buf_put(struct buf *b, const void *data, size_t n)
{
	if (n == 0 || buf_reserve(b, n) != 0)
		return;
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void buf_putc(struct buf *b, int c)
{
	uint8_t ch = (uint8_t)c;
	buf_put(b, &ch, 1);
}

void buf_puts(struct buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || buf_reserve(b, (size_t)n + 1) != 0)
		return;
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *buf_take_str(struct buf *b)
{
	buf_putc(b, 0);
	char *s = b->oom ? NULL : (char *)b->p;
	if (!s)
		free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
	return s;
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int vec_reserve(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint64_t c = *cap ? *cap : 8;
	while (c < need)
		c *= 2;
	if (c > UINT32_MAX || c * elem > SIZE_MAX / 2)
		return -1;
	void *p = realloc(*arr, (size_t)(c * elem));
	if (!p)
		return -1;
	*arr = p;
	*cap = (uint32_t)c;
	return 0;
}

/* ---- the segment under construction ---- */

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

int sb_add_region(struct seg_build *sb, const char *name, size_t len, uint8_t access)
{
	struct isa_seg *s = &sb->s;
	if (s->n_regions >= ISA_MAX_REGIONS ||
	    vec_reserve((void **)&s->regions, &sb->cap_regions, s->n_regions + 1, sizeof *s->regions))
		return -1;
	char *n = dup_n(name, len);
	if (!n)
		return -1;
	s->regions[s->n_regions] = (struct isa_region_import){ .name = n, .access = access };
	return ISA_R_FIRST_IMPORT + (int)s->n_regions++;
}

int sb_add_hook(struct seg_build *sb, const char *name, size_t len, const char *sig,
                size_t sig_len)
{
	struct isa_seg *s = &sb->s;
	if (s->n_hooks >= ISA_MAX_HOOKS ||
	    vec_reserve((void **)&s->hooks, &sb->cap_hooks, s->n_hooks + 1, sizeof *s->hooks))
		return -1;
	char *n = dup_n(name, len), *g = dup_n(sig, sig_len);
	if (!n || !g) {
		free(n);
		free(g);
		return -1;
	}
	s->hooks[s->n_hooks] = (struct isa_hook_import){ .name = n, .sig = g };
	return (int)s->n_hooks++;
}

int sb_add_func(struct seg_build *sb, const char *name, size_t len, unsigned n_args)
{
	struct isa_seg *s = &sb->s;
	if (s->n_funcs >= ISA_MAX_FUNCS ||
	    vec_reserve((void **)&s->funcs, &sb->cap_funcs, s->n_funcs + 1, sizeof *s->funcs) ||
	    vec_reserve((void **)&sb->stack_set, &sb->cap_stack_set, s->n_funcs + 1, 1))
		return -1;
	char *n = dup_n(name, len);
	if (!n)
		return -1;
	s->funcs[s->n_funcs] = (struct isa_func){ .name = n, .n_args = (uint8_t)n_args,
	                                          .n_locals = (uint8_t)n_args };
	sb->stack_set[s->n_funcs] = 0;
	return (int)s->n_funcs++;
}

int sb_add_export(struct seg_build *sb, const char *name, size_t len, uint16_t func)
{
	struct isa_seg *s = &sb->s;
	if (s->n_exports >= ISA_MAX_EXPORTS ||
	    vec_reserve((void **)&s->exports, &sb->cap_exports, s->n_exports + 1, sizeof *s->exports))
		return -1;
	char *n = dup_n(name, len);
	if (!n)
		return -1;
	s->exports[s->n_exports++] = (struct isa_export){ .name = n, .func = func };
	return 0;
}

int sb_add_line(struct seg_build *sb, uint16_t func, uint32_t pc, uint32_t line)
{
	struct isa_seg *s = &sb->s;
	if (vec_reserve((void **)&s->lines, &sb->cap_lines, s->n_lines + 1, sizeof *s->lines))
		return -1;
	s->lines[s->n_lines++] = (struct isa_line){ .func = func, .pc = pc, .line = line };
	return 0;
}

int64_t sb_add_const(struct seg_build *sb, const void *data, size_t len, unsigned align)
{
	struct isa_seg *s = &sb->s;
	uint64_t off = s->const_len;
	if (align > 1)
		off = (off + align - 1) & ~(uint64_t)(align - 1);
	if (off > ISA_MAX_CONST || len > ISA_MAX_CONST - off)
		return -1;
	uint32_t end = (uint32_t)(off + len);
	if (vec_reserve((void **)&s->consts, &sb->cap_consts, end, 1))
		return -1;
	if (off > s->const_len)
		memset(s->consts + s->const_len, 0, off - s->const_len);
	if (len)
		memcpy(s->consts + off, data, len);
	s->const_len = end;
	return (int64_t)off;
}

int sb_set_source(struct seg_build *sb, const char *name, size_t len)
{
	char *n = dup_n(name, len);
	if (!n)
		return -1;
	free(sb->s.source);
	sb->s.source = n;
	return 0;
}

int sb_finish_func(struct seg_build *sb, uint32_t fi, char *err, size_t errlen,
                   uint32_t *bad_pc)
{
	struct isa_func *f = &sb->s.funcs[fi];
	*bad_pc = UINT32_MAX;
	if (f->code_len == 0) {
		snprintf(err, errlen, "function '%s' has no instructions", f->name);
		return -1;
	}
	int explicit = sb->stack_set[fi];
	if (!explicit)
		f->max_stack = ISA_MAX_STACK;
	unsigned max = 0;
	if (isa_verify_func(&sb->s, fi, NULL, &max, err, errlen) != 0) {
		/* The verifier's messages read "verify: function NAME at pc N ..."; names have no
		 * spaces, so the first " at pc " is the one we want. */
		const char *p = strstr(err, " at pc ");
		if (p) {
			char *end;
			unsigned long pc = strtoul(p + 7, &end, 10);
			if (end != p + 7 && pc < f->code_len)
				*bad_pc = (uint32_t)pc;
		}
		return -1;
	}
	if (!explicit)
		f->max_stack = (uint16_t)max;
	return 0;
}

void sb_free(struct seg_build *sb)
{
	struct isa_seg *s = &sb->s;
	for (uint32_t i = 0; i < s->n_regions; i++)
		free(s->regions[i].name);
	for (uint32_t i = 0; i < s->n_hooks; i++) {
		free(s->hooks[i].name);
		free(s->hooks[i].sig);
	}
	for (uint32_t i = 0; i < s->n_funcs; i++) {
		free(s->funcs[i].name);
		free(s->funcs[i].code);
	}
	for (uint32_t i = 0; i < s->n_exports; i++)
		free(s->exports[i].name);
	free(s->regions);
	free(s->hooks);
	free(s->funcs);
	free(s->exports);
	free(s->consts);
	free(s->source);
	free(s->lines);
	free(sb->stack_set);
	memset(sb, 0, sizeof *sb);
}

/* ---- instructions ---- */

void emit_insn(struct buf *code, enum op op, unsigned a, unsigned b, int64_t imm)
{
	struct isa_insn in = { .op = (uint8_t)op, .a = (uint8_t)a, .b = (uint8_t)b, .imm = imm };
	uint8_t tmp[ISA_MAX_INSN];
	size_t n = isa_encode(tmp, &in);
	buf_put(code, tmp, n);
}

enum op push_op_for(int64_t v)
{
	if (v >= INT8_MIN && v <= INT8_MAX)
		return OP_PUSHI8;
	if (v >= INT32_MIN && v <= INT32_MAX)
		return OP_PUSHI32;
	return OP_PUSHI64;
}

const char *op_mnemonic(enum op op, char out[16])
{
	const char *n = isa_op_info[op].name;
	size_t i = 0;
	for (; n[i] && i < 15; i++)
		out[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
	out[i] = '\0';
	return out;
}

#define EDIT_MAX_LEN 64

/* Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbours ("fvn" -> "fnv") each cost 1; letters compare case-insensitively. */
static unsigned lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 'a' - 'A' : c; }

unsigned edit_distance(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen > EDIT_MAX_LEN || blen > EDIT_MAX_LEN)
		return UINT32_MAX;
	unsigned rows[3][EDIT_MAX_LEN + 1];
	unsigned *pp = rows[0], *prev = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= blen; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= alen; i++) {
		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= blen; j++) {
			unsigned ca = lower((unsigned char)a[i - 1]), cb = lower((unsigned char)b[j - 1]);
			unsigned best = prev[j - 1] + (ca != cb);
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) &&
			    lower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < best)
				best = pp[j - 2] + 1;
			cur[j] = best;
		}
		unsigned *t = pp;
		pp = prev;
		prev = cur;
		cur = t;
	}
	return prev[blen];
}
