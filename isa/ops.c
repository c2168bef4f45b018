/* ops.c: the opcode and trap tables generated from ops.def and trap.def, and the
 * instruction decoder/encoder every consumer of bytecode shares.
 */
#include <string.h>
#include <strings.h>

#include "isa.h"

#define OPF_NONE 0
const struct isa_op_info isa_op_info[OP_COUNT] = {
#define OP(n, f, po, pu, fl, syn) \
	[OP_##n] = { .name = #n, .synopsis = syn, .fmt = ISA_FMT_##f, .pop = po, .push = pu, \
	             .flags = (fl) },
#include "ops.def"
#undef OP
};

const uint8_t isa_fmt_len[ISA_FMT_COUNT] = {
	[ISA_FMT_NONE] = 0, [ISA_FMT_I8] = 1, [ISA_FMT_I32] = 4, [ISA_FMT_I64] = 8,
	[ISA_FMT_U8] = 1, [ISA_FMT_U8I8] = 2, [ISA_FMT_U16] = 2, [ISA_FMT_REL32] = 4,
	[ISA_FMT_FUNC] = 2, [ISA_FMT_HOOK] = 2, [ISA_FMT_R] = 1, [ISA_FMT_RR] = 2,
};

const char *const isa_fmt_name[ISA_FMT_COUNT] = {
	[ISA_FMT_NONE] = "none", [ISA_FMT_I8] = "i8", [ISA_FMT_I32] = "i32", [ISA_FMT_I64] = "i64",
	[ISA_FMT_U8] = "local", [ISA_FMT_U8I8] = "local, i8", [ISA_FMT_U16] = "u16",
	[ISA_FMT_REL32] = "rel32", [ISA_FMT_FUNC] = "func", [ISA_FMT_HOOK] = "hook",
	[ISA_FMT_R] = "region", [ISA_FMT_RR] = "region, region",
};

/* Mnemonics are the enum names; op_info keeps them upper case (stringified), the assembler
 * and disassembler print them lower case.  Lookup is therefore case-insensitive. */
int isa_op_lookup(const char *name, size_t len)
{
	for (int op = 0; op < OP_COUNT; op++) {
		const char *n = isa_op_info[op].name;
		if (strlen(n) == len && strncasecmp(n, name, len) == 0)
			return op;
	}
	return -1;
}

static const char *const trap_names[] = {
#define TRAP(name, value, desc) [value] = #name,
#include "trap.def"
#undef TRAP
};
static const char *const trap_descs[] = {
#define TRAP(name, value, desc) [value] = desc,
#include "trap.def"
#undef TRAP
};

const char *isa_trap_name(int kind)
{
	if (kind < 0 || kind >= ISA_TRAP_COUNT || !trap_names[kind])
		return "?";
	return trap_names[kind];
}

const char *isa_trap_desc(int kind)
{
	if (kind < 0 || kind >= ISA_TRAP_COUNT || !trap_descs[kind])
		return "unknown trap";
	return trap_descs[kind];
}

int isa_decode(const uint8_t *code, size_t len, size_t pc, struct isa_insn *in)
{
	if (pc >= len || code[pc] >= OP_COUNT)
		return -1;
	const struct isa_op_info *oi = &isa_op_info[code[pc]];
	size_t n = 1 + isa_fmt_len[oi->fmt];
	if (n > len - pc)
		return -1;
	const uint8_t *p = code + pc + 1;
	in->op = code[pc];
	in->len = (uint8_t)n;
	in->a = in->b = 0;
	in->imm = 0;
	switch ((enum isa_fmt)oi->fmt) {
	case ISA_FMT_NONE: break;
	case ISA_FMT_I8: in->imm = (int8_t)p[0]; break;
	case ISA_FMT_I32:
	case ISA_FMT_REL32: in->imm = (int32_t)isa_get32(p); break;
	case ISA_FMT_I64: in->imm = (int64_t)isa_get64(p); break;
	case ISA_FMT_U8:
	case ISA_FMT_R: in->a = p[0]; break;
	case ISA_FMT_U8I8: in->a = p[0]; in->imm = (int8_t)p[1]; break;
	case ISA_FMT_RR: in->a = p[0]; in->b = p[1]; break;
	case ISA_FMT_U16:
	case ISA_FMT_FUNC:
	case ISA_FMT_HOOK: in->imm = isa_get16(p); break;
	case ISA_FMT_COUNT: return -1;
	}
	return 0;
}

size_t isa_encode(uint8_t *buf, const struct isa_insn *in)
{
	uint8_t *p = buf + 1;
	buf[0] = in->op;
	switch ((enum isa_fmt)isa_op_info[in->op].fmt) {
	case ISA_FMT_NONE: break;
	case ISA_FMT_I8: p[0] = (uint8_t)in->imm; break;
	case ISA_FMT_I32:
	case ISA_FMT_REL32: isa_put32(p, (uint32_t)in->imm); break;
	case ISA_FMT_I64: isa_put64(p, (uint64_t)in->imm); break;
	case ISA_FMT_U8:
	case ISA_FMT_R: p[0] = in->a; break;
	case ISA_FMT_U8I8: p[0] = in->a; p[1] = (uint8_t)in->imm; break;
	case ISA_FMT_RR: p[0] = in->a; p[1] = in->b; break;
	case ISA_FMT_U16:
	case ISA_FMT_FUNC:
	case ISA_FMT_HOOK: isa_put16(p, (uint16_t)in->imm); break;
	case ISA_FMT_COUNT: break;
	}
	return 1 + (size_t)isa_fmt_len[isa_op_info[in->op].fmt];
}
