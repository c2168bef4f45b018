/* dis.c: asm_disassemble, segment bytes -> .pna text that assembles back to the same bytes.
 *
 * Everything the assembler would otherwise choose is spelled out: explicit push forms,
 * .locals and .stack, the constant data as byte/string chunks, the line table as .line
 * directives (or .nolines).  Branch targets become labels L<pc>; a displacement that does not
 * land on an instruction is written .+N, and bytes that do not decode as .byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "asm_int.h"

#define COMMENT_COL 32         /* column of the "; pc N" comments */
#define CONST_CHUNK 16         /* bytes of constant data per .const line */

static void put_quoted(struct buf *b, const uint8_t *s, size_t len)
{
	buf_putc(b, '"');
	for (size_t i = 0; i < len; i++) {
		uint8_t c = s[i];
		switch (c) {
		case '\n': buf_puts(b, "\\n"); break;
		case '\t': buf_puts(b, "\\t"); break;
		case '\r': buf_puts(b, "\\r"); break;
		case '\\': buf_puts(b, "\\\\"); break;
		case '"': buf_puts(b, "\\\""); break;
		default:
			if (c >= ' ' && c <= '~')
				buf_putc(b, c);
			else
				buf_printf(b, "\\x%02x", c);
		}
	}
	buf_putc(b, '"');
}

/* Names print bare when the lexer reads them back as one identifier, else quoted. */
static void put_name(struct buf *b, const char *name)
{
	size_t n = strlen(name);
	int ident = n > 0 && ((name[0] >= 'a' && name[0] <= 'z') ||
	                      (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_');
	for (size_t i = 1; ident && i < n; i++)
		ident = lex_is_ident_char((unsigned char)name[i]);
	if (ident)
		buf_puts(b, name);
	else
		put_quoted(b, (const uint8_t *)name, n);
}

static void put_region(struct buf *b, const struct isa_seg *s, unsigned r)
{
	static const char *const builtin[ISA_R_FIRST_IMPORT] = { "args", "out", "const" };
	if (r < ISA_R_FIRST_IMPORT)
		buf_puts(b, builtin[r]);
	else if (r - ISA_R_FIRST_IMPORT < s->n_regions)
		put_name(b, s->regions[r - ISA_R_FIRST_IMPORT].name);
	else
		buf_printf(b, "%u", r);
}

/* Pad the current line to the comment column. */
static void pad_to_comment(struct buf *b, size_t line_start)
{
	size_t col = b->len - line_start;
	do
		buf_putc(b, ' ');
	while (++col < COMMENT_COL);
}

static void put_consts(struct buf *b, const struct isa_seg *s)
{
	for (uint32_t off = 0; off < s->const_len; off += CONST_CHUNK) {
		uint32_t n = s->const_len - off < CONST_CHUNK ? s->const_len - off : CONST_CHUNK;
		const uint8_t *p = s->consts + off;
		int text = 1;
		for (uint32_t i = 0; i < n && text; i++)
			text = (p[i] >= ' ' && p[i] <= '~') || p[i] == '\n' || p[i] == '\t';
		size_t start = b->len;
		buf_printf(b, ".const c%u ", off);
		if (text) {
			put_quoted(b, p, n);
		} else {
			buf_puts(b, "bytes");
			for (uint32_t i = 0; i < n; i++)
				buf_printf(b, "%s0x%02x", i ? ", " : " ", p[i]);
		}
		pad_to_comment(b, start);
		buf_printf(b, "; offset %u\n", off);
	}
}

static int func_name_unique(const struct isa_seg *s, uint32_t fi)
{
	for (uint32_t i = 0; i < s->n_funcs; i++)
		if (i != fi && strcmp(s->funcs[i].name, s->funcs[fi].name) == 0)
			return 0;
	return 1;
}

static void put_insn(struct buf *b, const struct isa_seg *s, const struct isa_func *f,
                     uint32_t pc, const struct isa_insn *in, const uint8_t *is_start)
{
	char mn[16];
	buf_puts(b, op_mnemonic((enum op)in->op, mn));
	switch ((enum isa_fmt)isa_op_info[in->op].fmt) {
	case ISA_FMT_NONE:
		break;
	case ISA_FMT_I8:
	case ISA_FMT_I32:
		buf_printf(b, " %lld", (long long)in->imm);
		break;
	case ISA_FMT_I64:
		if (in->imm >= INT32_MIN && in->imm <= INT32_MAX)
			buf_printf(b, " %lld", (long long)in->imm);
		else
			buf_printf(b, " 0x%llx", (unsigned long long)in->imm);
		break;
	case ISA_FMT_U8:
		buf_printf(b, " %u", in->a);
		break;
	case ISA_FMT_U8I8:
		buf_printf(b, " %u, %lld", in->a, (long long)in->imm);
		break;
	case ISA_FMT_U16:
		buf_printf(b, " %lld", (long long)in->imm);
		break;
	case ISA_FMT_REL32: {
		int64_t t = (int64_t)pc + in->imm;
		if (t >= 0 && t < (int64_t)f->code_len && is_start[t])
			buf_printf(b, " L%lld", (long long)t);
		else
			buf_printf(b, " .%+lld", (long long)in->imm);
		break;
	}
	case ISA_FMT_FUNC:
		buf_putc(b, ' ');
		if (in->imm < s->n_funcs)
			put_name(b, s->funcs[in->imm].name);
		else
			buf_printf(b, "%lld", (long long)in->imm); /* not assemblable: no such function */
		break;
	case ISA_FMT_HOOK:
		buf_putc(b, ' ');
		if (in->imm < s->n_hooks)
			put_name(b, s->hooks[in->imm].name);
		else
			buf_printf(b, "%lld", (long long)in->imm);
		break;
	case ISA_FMT_R:
		buf_putc(b, ' ');
		put_region(b, s, in->a);
		break;
	case ISA_FMT_RR:
		buf_putc(b, ' ');
		put_region(b, s, in->a);
		buf_puts(b, ", ");
		put_region(b, s, in->b);
		break;
	case ISA_FMT_COUNT:
		break;
	}
}

static int put_func(struct buf *b, const struct isa_seg *s, uint32_t fi, uint32_t *li)
{
	const struct isa_func *f = &s->funcs[fi];
	uint8_t *is_start = calloc(f->code_len ? f->code_len : 1, 1);
	uint8_t *is_target = calloc(f->code_len ? f->code_len : 1, 1);
	if (!is_start || !is_target) {
		free(is_start);
		free(is_target);
		return -1;
	}
	/* pass 1: instruction starts, up to the first byte that does not decode */
	struct isa_insn in;
	uint32_t end = 0;
	while (end < f->code_len && isa_decode(f->code, f->code_len, end, &in) == 0) {
		is_start[end] = 1;
		end += in.len;
	}
	for (uint32_t pc = 0; pc < end; pc += in.len) {
		isa_decode(f->code, f->code_len, pc, &in);
		if (isa_op_info[in.op].fmt == ISA_FMT_REL32) {
			int64_t t = (int64_t)pc + in.imm;
			if (t >= 0 && t < (int64_t)f->code_len && is_start[t])
				is_target[t] = 1;
		}
	}

	buf_puts(b, "\n.func ");
	put_name(b, f->name);
	for (unsigned i = 0; i < f->n_args; i++)
		buf_printf(b, " a%u", i);
	buf_printf(b, "\n.locals %u\n.stack %u\n", f->n_locals, f->max_stack);

	/* pass 2: print, with the line table entries of this function as .line */
	for (uint32_t pc = 0; pc < end; pc += in.len) {
		isa_decode(f->code, f->code_len, pc, &in);
		while (*li < s->n_lines && s->lines[*li].func == fi && s->lines[*li].pc < pc) {
			buf_printf(b, "; line table entry at pc %u (line %u) is not an instruction\n",
			           s->lines[*li].pc, s->lines[*li].line);
			(*li)++;
		}
		if (is_target[pc])
			buf_printf(b, "L%u:\n", pc);
		if (*li < s->n_lines && s->lines[*li].func == fi && s->lines[*li].pc == pc) {
			buf_printf(b, "    .line %u\n", s->lines[*li].line);
			(*li)++;
		}
		size_t start = b->len;
		buf_puts(b, "    ");
		put_insn(b, s, f, pc, &in, is_start);
		pad_to_comment(b, start);
		buf_printf(b, "; pc %u\n", pc);
	}
	if (end < f->code_len) {
		size_t start = b->len;
		buf_puts(b, "    .byte");
		for (uint32_t pc = end; pc < f->code_len; pc++)
			buf_printf(b, "%s0x%02x", pc > end ? ", " : " ", f->code[pc]);
		pad_to_comment(b, start);
		buf_printf(b, "; pc %u: does not decode\n", end);
	}
	while (*li < s->n_lines && s->lines[*li].func == fi) {
		buf_printf(b, "; line table entry at pc %u (line %u) is not an instruction\n",
		           s->lines[*li].pc, s->lines[*li].line);
		(*li)++;
	}
	buf_puts(b, ".end\n");
	free(is_start);
	free(is_target);
	return 0;
}

int asm_disassemble(const void *bytes, size_t len, char **text, char *err, size_t errlen)
{
	struct isa_seg *s;
	*text = NULL;
	if (isa_seg_decode(bytes, len, &s, err, errlen) != 0)
		return -1;
	struct buf b = { 0 };
	uint8_t id[ISA_ID_LEN];
	char hex[2 * ISA_ID_LEN + 1];
	isa_seg_id(bytes, len, id);
	isa_id_hex(id, hex);
	buf_printf(&b, "; segment %s (%zu bytes)\n", hex, len);
	if (s->n_lines) {
		buf_puts(&b, ".source ");
		const char *src = s->source ? s->source : "";
		put_quoted(&b, (const uint8_t *)src, strlen(src));
		buf_putc(&b, '\n');
	} else {
		buf_puts(&b, ".nolines\n");
	}
	for (uint32_t i = 0; i < s->n_regions; i++) {
		size_t start = b.len;
		buf_puts(&b, ".region ");
		put_name(&b, s->regions[i].name);
		buf_puts(&b, s->regions[i].access == ISA_ACC_RW ? " rw" : " ro");
		pad_to_comment(&b, start);
		buf_printf(&b, "; region %u\n", ISA_R_FIRST_IMPORT + i);
	}
	for (uint32_t i = 0; i < s->n_hooks; i++) {
		size_t start = b.len;
		buf_puts(&b, ".hook ");
		put_name(&b, s->hooks[i].name);
		buf_putc(&b, ' ');
		put_quoted(&b, (const uint8_t *)s->hooks[i].sig, strlen(s->hooks[i].sig));
		pad_to_comment(&b, start);
		buf_printf(&b, "; hook %u\n", i);
	}
	put_consts(&b, s);
	uint32_t li = 0;
	for (uint32_t fi = 0; fi < s->n_funcs; fi++)
		if (put_func(&b, s, fi, &li) != 0)
			b.oom = 1;
	if (s->n_exports)
		buf_putc(&b, '\n');
	for (uint32_t i = 0; i < s->n_exports; i++) {
		const struct isa_export *e = &s->exports[i];
		buf_puts(&b, ".export ");
		put_name(&b, e->name);
		if (strcmp(e->name, s->funcs[e->func].name) != 0 || !func_name_unique(s, e->func)) {
			buf_putc(&b, ' ');
			put_name(&b, s->funcs[e->func].name);
		}
		buf_putc(&b, '\n');
	}
	isa_seg_free(s);
	*text = buf_take_str(&b);
	if (!*text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}
