/* bpfdis.c: decode BPF instructions and print them in the syntax of the kernel's verifier log
 * and llvm-objdump ("r1 += r2", "w0 = *(u32 *)(r10 - 8)", "if r1 s> 5 goto +3"), for
 * pncc --explain. */
#include <stdio.h>

#include "cc_int.h"

void bpf_decode(const uint8_t *p, struct bpf_insn *in)
{
	in->code = p[0];
	in->dst = p[1] & 0x0f;
	in->src = p[1] >> 4;
	in->off = (int16_t)isa_get16(p + 2);
	in->imm = (int32_t)isa_get32(p + 4);
}

static const char *const alu_sym[16] = {
	"+=", "-=", "*=", "/=", "|=", "&=", "<<=", ">>=", "neg", "%=", "^=", "=", "s>>=", "end",
	"?", "?"
};
static const char *const jmp_sym[16] = {
	"goto", "==", ">", ">=", "&", "!=", "s>", "s>=", "call", "exit", "<", "<=", "s<", "s<=",
	"?", "?"
};
static const char *const size_name[4] = { "u32", "u16", "u8", "u64" };

void bpf_format(struct buf *out, const struct bpf_insn *in, const struct bpf_insn *next)
{
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code) >> 4;
	int x = BPF_SRC(in->code) == BPF_X;
	char r = cl == BPF_ALU || cl == BPF_JMP32 ? 'w' : 'r';
	const char *sz = size_name[BPF_SIZE(in->code) >> 3];

	switch (cl) {
	case BPF_ALU:
	case BPF_ALU64:
		if (op == BPF_NEG >> 4)
			buf_printf(out, "%c%u = -%c%u", r, in->dst, r, in->dst);
		else if (op == BPF_END >> 4)
			buf_printf(out, "r%u = %s%d r%u", in->dst, x ? "be" : "le", in->imm, in->dst);
		else if (x)
			buf_printf(out, "%c%u %s %c%u", r, in->dst, alu_sym[op], r, in->src);
		else
			buf_printf(out, "%c%u %s %d", r, in->dst, alu_sym[op], in->imm);
		return;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_JA >> 4)
			buf_printf(out, "goto %+d", in->off);
		else if (op == BPF_CALL >> 4)
			buf_printf(out, in->src == BPF_PSEUDO_CALL ? "call pc%+d" : "call 0x%x", in->imm);
		else if (op == BPF_EXIT >> 4)
			buf_puts(out, "exit");
		else if (x)
			buf_printf(out, "if %c%u %s %c%u goto %+d", r, in->dst, jmp_sym[op], r, in->src,
			           in->off);
		else
			buf_printf(out, "if %c%u %s %d goto %+d", r, in->dst, jmp_sym[op], in->imm, in->off);
		return;
	case BPF_LD:
		if (in->code == BPF_LD_IMM64 && next)
			buf_printf(out, "r%u = 0x%llx ll", in->dst,
			           (unsigned long long)((uint64_t)(uint32_t)in->imm |
			                                (uint64_t)(uint32_t)next->imm << 32));
		else
			buf_printf(out, "ld 0x%02x", in->code);
		return;
	case BPF_LDX:
		buf_printf(out, "r%u = *(%s *)(r%u %c %d)", in->dst, sz, in->src, in->off < 0 ? '-' : '+',
		           in->off < 0 ? -in->off : in->off);
		return;
	case BPF_ST:
		buf_printf(out, "*(%s *)(r%u %c %d) = %d", sz, in->dst, in->off < 0 ? '-' : '+',
		           in->off < 0 ? -in->off : in->off, in->imm);
		return;
	default:   /* BPF_STX */
		if (BPF_MODE(in->code) == BPF_ATOMIC)
			buf_printf(out, "atomic 0x%x (%s *)(r%u %+d), r%u", in->imm, sz, in->dst, in->off,
			           in->src);
		else
			buf_printf(out, "*(%s *)(r%u %c %d) = r%u", sz, in->dst, in->off < 0 ? '-' : '+',
			           in->off < 0 ? -in->off : in->off, in->src);
		return;
	}
}
