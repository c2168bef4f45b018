/* translate.c: one BPF object (struct obj) -> one code segment, through the builder API.
 *
 * Each BPF function becomes a function of the segment with the same arguments: the
 * parameters r1..rN arrive in its locals 0..N-1, each value of a register gets a local
 * (values that a copy joins share one: alloc_locals) and each 8-byte stack slot it touches
 * a local of its own.  Every BPF instruction becomes a short stack sequence that starts and
 * ends with an empty operand stack (lget the operands, the opcode, lset the result), so every
 * BPF branch target is a point of depth 0 and the verifier's rule of one depth per
 * instruction holds by construction.
 *
 * Memory: the pointers a C segment can hold are stack addresses (r10 plus an integer),
 * addresses of `static const` data (LD_IMM64 of a .rodata section, which are offsets into
 * the segment's constants), and integers.  A function that never uses r10 as a value keeps
 * its stack slots in locals.  One that does is "framed" (frame_uses): its 512 bytes live in
 * the run's frame region (vm.h, VM_FRAME_REGION), which pncc imports only then; r10 as a
 * value is the frame offset tagged with FRAME_TAG.  A forward data-flow pass (kinds, below)
 * proves which registers hold a constants pointer or a stack address at each instruction; a
 * load through one reads region const or the frame region, through any other pointer the
 * tag decides at run time (objects without frames refuse it).  Region memory is reached
 * through the ar.h intrinsics only.  docs/cc.md, "Stack memory", has the whole design.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "cc.h"
#include "cc_int.h"
#include "vm.h"                    /* VM_FRAME_REGION, VM_FRAME_FIRST */

#define STACK_BYTES   512          /* clang's BPF stack: r10-512 .. r10-1 */
#define N_SLOTS       (STACK_BYTES / 8)
#define N_KINDS       (10 + N_SLOTS)   /* r0..r9, then the stack slots */
#define NO_LOCAL      (-1)
#define MASK32        0xffffffffll
/* A stack address as a C value (r10 + c in a framed function) is its frame-region offset with
 * this bit set, so a dereference of a pointer whose origin the data flow does not know (a
 * parameter, a value loaded from memory) can tell the frame from the constants at run time:
 * constants offsets stay below 2^26, frame offsets below 2^18.  Bit 30 keeps "offset - tag"
 * a 32-bit immediate, which the JIT folds into the access. */
#define FRAME_TAG     (1ll << 30)
#define FRAME_TAG_BIT 30

/* What a register or stack slot may hold at an instruction, joined by OR over the paths into
 * it: nothing seen yet, a plain integer, a pointer into the constants, a stack address
 * (r10 plus an integer, in a framed function), or several of those. */
enum kind { K_NONE = 0, K_INT = 1, K_CONST = 2, K_FRAME = 4 };

struct tr {
	const struct obj *o;
	struct asm_builder *b;
	struct diag *d;
	const struct func *f;
	const struct section *sec;
	const int64_t *const_off;      /* per section: offset in the segment's constants, or -1 */
	const uint8_t *region_acc;     /* access of each region index (0: none) */
	unsigned n_regions;
	const char *const *hook_sig;
	unsigned n_hooks;
	uint32_t n;                    /* instruction slots of f */
	struct bpf_insn *in;
	uint8_t *target;               /* slot is a branch target */
	uint8_t *reach;                /* slot reached by the data-flow pass */
	uint8_t *kinds;                /* n * N_KINDS: kinds before each slot */
	asm_label *labels;
	int reg_local[BPF_NREGS];
	int slot_local[N_SLOTS];
	unsigned n_locals;
	uint16_t *live_out;            /* registers live after each slot (bit r) */
	uint8_t *loc_in;               /* n * ALLOC_REGS: the local of each register live into
	                                * slot i (alloc_locals), LOC_NONE for one that is not;
	                                * NULL: every register has its own, reg_local */
	uint8_t *loc_out;              /* the same after slot i: LOC_NONE marks a dead value */
	uint32_t *dup_end;             /* goto at slot i: 1 + last slot of the block it copies, or 0 */
	uint8_t *fwd_skip;             /* slot is a move into an argument register that its call
	                                * reads from the source instead (plan_forwarding) */
	uint8_t *nop;                  /* slot is a mask of a shift count that changes no result
	                                * (plan_count_masks): nothing, read and written by no one */
	uint32_t cur;                  /* slot being translated */
	int pending;                   /* local whose new value is still on the operand stack
	                                * (its lset not emitted yet), LOC_NONE for a value that
	                                * nothing reads (dropped), or -1 */
	unsigned pending_reg;          /* the register it is the value of, for --explain */
	uint8_t zbits[BPF_NREGS];      /* register values are known to fit this many low bits */
	unsigned frame_region;         /* region index of VM_FRAME_REGION, 0: the object has no
	                                * framed function (pointers are then refused) */
	int framed;                    /* f keeps its stack in the frame region (frame_uses) */
	unsigned fp_local;             /* framed: the local holding fb + 512 (reg_local[r10]
	                                * holds the same, tagged: r10 as a C value) */
	struct buf *listing;           /* --explain of this function, else NULL */
	struct buf note;               /* our assembly of the current instruction, for listing */
};

static const char *const bpf_reg_name[BPF_NREGS] = {
	"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10"
};

#define ALLOC_REGS    10           /* r0..r9 get locals by alloc_locals; r10 keeps its own */
#define LOC_NONE      0xff         /* no local: the register is not live there */

#define ERR(t, i, ...) cc_error((t)->d, (t)->o, (t)->f->sec, (t)->f->start + (i), __VA_ARGS__)

/* ---- emitting, with the text for --explain ---- */

/* Mnemonics as pnasm spells them (isa_op_info has the enum's upper-case names). */
static const char *mnem(enum op op)
{
	static __thread char lower[16];
	const char *n = isa_op_info[op].name;
	size_t i = 0;
	for (; n[i] && i + 1 < sizeof lower; i++)
		lower[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] + 32 : n[i]);
	lower[i] = 0;
	return lower;
}

static void note(struct tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct tr *t, const char *fmt, ...)
{
	if (!t->listing)
		return;
	if (t->note.len)
		buf_puts(&t->note, "; ");
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&t->note, fmt, ap);
	va_end(ap);
}

/* Emit the store a translation left pending (see em_reg). */
static void flush(struct tr *t)
{
	if (t->pending < 0)
		return;
	if (t->pending == LOC_NONE) {
		asm_op(t->b, OP_DROP);
		note(t, "drop (%s is not read)", bpf_reg_name[t->pending_reg]);
	} else {
		asm_local(t->b, OP_LSET, (unsigned)t->pending);
		note(t, "lset %s", bpf_reg_name[t->pending_reg]);
	}
	t->pending = -1;
}

/* The local register r is read from at slot i, and the one it is in after slot i (LOC_NONE:
 * dead there).  Without an allocation (alloc_locals gave up) both are r's own local. */
static unsigned use_loc(const struct tr *t, uint32_t i, unsigned r)
{
	if (!t->loc_in || r >= ALLOC_REGS)
		return (unsigned)t->reg_local[r];
	return t->loc_in[(size_t)i * ALLOC_REGS + r];
}

static unsigned out_loc(const struct tr *t, uint32_t i, unsigned r)
{
	if (!t->loc_out || r >= ALLOC_REGS)
		return (unsigned)t->reg_local[r];
	return t->loc_out[(size_t)i * ALLOC_REGS + r];
}

static unsigned reads_of(const struct tr *t, uint32_t i, unsigned r);
static void use_def(const struct tr *t, uint32_t i, unsigned *use, unsigned *def);
static int consumable(const struct tr *t, uint32_t i, unsigned r);
static void translate_insn(struct tr *t, uint32_t i);
static void update_bits(struct tr *t, uint32_t i);

static void em_op(struct tr *t, enum op op)
{
	flush(t);
	asm_op(t->b, op);
	note(t, "%s", mnem(op));
}

static void em_push(struct tr *t, int64_t v)
{
	flush(t);
	asm_push(t->b, v);
	note(t, "push %lld", (long long)v);
}

/* How many times the translation of slot i reads local l, through any register in it. */
static unsigned reads_loc(const struct tr *t, uint32_t i, unsigned l)
{
	unsigned n = 0;
	for (unsigned r = 0; r < ALLOC_REGS; r++) {
		unsigned k = reads_of(t, i, r);
		if (k && use_loc(t, i, r) == l)
			n += k;
	}
	return n;
}

/* Whether the value local l holds as slot i starts is read after slot i: some register live
 * after i, and not written by it, is in l.  (One written by i holds a new value.) */
static int needed_after(const struct tr *t, uint32_t i, unsigned l)
{
	unsigned use, def;
	use_def(t, i, &use, &def);
	for (unsigned r = 0; r < ALLOC_REGS; r++)
		if ((t->live_out[i] >> r & 1) && !(def >> r & 1) && out_loc(t, i, r) == l)
			return 1;
	return 0;
}

/* Registers through locals, with one store in flight: a translation ends with "lset dst",
 * which is held back; when the next instruction starts by reading dst, the value is still on
 * the stack: "ltee dst" keeps both, or, when that instruction is the last reader of the
 * value (no register in its local is read after it), nothing is emitted at all.  A value
 * nothing reads is dropped.  Anything else emits the store first.  Every branch target
 * starts with the store emitted, so the operand stack is empty there as before. */
static void em_reg(struct tr *t, enum op op, unsigned r)
{
	if (op == OP_LSET) {
		flush(t);
		t->pending = (int)out_loc(t, t->cur, r);
		t->pending_reg = r;
		return;
	}
	unsigned l = use_loc(t, t->cur, r);
	if (op == OP_LGET && t->pending == (int)l && l != LOC_NONE) {
		t->pending = -1;
		if (reads_loc(t, t->cur, l) == 1 && !needed_after(t, t->cur, l))
			return note(t, "(%s on the stack)", bpf_reg_name[r]);
		asm_local(t->b, OP_LTEE, l);
		return note(t, "ltee %s", bpf_reg_name[r]);
	}
	flush(t);
	asm_local(t->b, op, l);
	note(t, "%s %s", mnem(op), bpf_reg_name[r]);
}

static void em_slot(struct tr *t, enum op op, unsigned s)
{
	flush(t);
	asm_local(t->b, op, (unsigned)t->slot_local[s]);
	note(t, "%s fp-%u", mnem(op), STACK_BYTES - 8 * s);
}

static void em_mem(struct tr *t, enum op op, unsigned r)
{
	flush(t);
	asm_mem(t->b, op, r);
	note(t, "%s %u", mnem(op), r);
}

/* Push the frame-region address r10+off of a framed function (r10 is a local: fb + 512). */
static void em_fp_addr(struct tr *t, int off)
{
	flush(t);
	asm_local(t->b, OP_LGET, t->fp_local);
	note(t, "lget fp");
	if (off) {
		em_push(t, off);
		em_op(t, OP_ADD);
	}
}

static void em_jump(struct tr *t, enum op op, uint32_t slot)
{
	flush(t);
	asm_jump(t->b, op, t->labels[slot]);
	note(t, "%s L%u", mnem(op), slot);
}

static int fits32(const struct tr *t, unsigned r) { return t->zbits[r] <= 32; }

static uint64_t known_mask(const struct tr *t, unsigned r)
{
	return t->zbits[r] >= 64 ? ~0ull : (1ull << t->zbits[r]) - 1;
}

static void em_zext32(struct tr *t)
{
	em_push(t, MASK32);
	em_op(t, OP_AND);
}

/* ---- instruction properties ---- */

static int is_ld_imm64(const struct bpf_insn *in) { return in->code == BPF_LD_IMM64; }

static int is_jmp(const struct bpf_insn *in)
{
	unsigned cl = BPF_CLASS(in->code);
	return cl == BPF_JMP || cl == BPF_JMP32;
}

/* The relocation of slot i of the function, or NULL. */
static const struct reloc *reloc_at(const struct tr *t, uint32_t i)
{
	uint32_t slot = t->f->start + i, lo = 0, hi = t->sec->n_relocs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->sec->relocs[mid].slot == slot)
			return &t->sec->relocs[mid];
		if (t->sec->relocs[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The function a BPF-to-BPF call at slot i calls, or NULL (error reported). */
static const struct func *call_target(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	const struct reloc *r = reloc_at(t, i);
	uint32_t sec = t->f->sec;
	int64_t slot;
	if (r) {
		/* clang: the symbol is the callee (imm -1) or its section (imm: slot - 1) */
		const struct symbol *s = &t->o->syms[r->sym];
		if (s->sec == UINT32_MAX || t->o->secs[s->sec].kind != SEC_CODE) {
			ERR(t, i, "call of '%s', which is not a function of this file", s->name);
			return NULL;
		}
		sec = s->sec;
		slot = (int64_t)(s->value / 8) + in->imm + 1;
	} else {
		slot = (int64_t)t->f->start + i + in->imm + 1;
	}
	/* funcs are sorted by (section, start) */
	uint32_t lo = 0, hi = t->o->n_funcs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct func *f = &t->o->funcs[mid];
		if (f->sec == sec && f->start == slot)
			return f;
		if (f->sec < sec || (f->sec == sec && f->start < slot))
			lo = mid + 1;
		else
			hi = mid;
	}
	ERR(t, i, "call into the middle of a function (instruction %lld of %s)", (long long)slot,
	    t->o->secs[sec].name);
	return NULL;
}

/* Successors of slot i: returns how many (0..2) into succ. */
static int successors(const struct tr *t, uint32_t i, uint32_t succ[2])
{
	const struct bpf_insn *in = &t->in[i];
	if (is_ld_imm64(in)) {
		succ[0] = i + 2;
		return 1;
	}
	if (!is_jmp(in))
		return succ[0] = i + 1, 1;
	unsigned op = BPF_OP(in->code);
	if (op == BPF_EXIT)
		return 0;
	if (op == BPF_CALL)
		return succ[0] = i + 1, 1;
	uint32_t to = (uint32_t)((int64_t)i + 1 + in->off);
	if (op == BPF_JA)
		return succ[0] = to, 1;
	succ[0] = i + 1;
	succ[1] = to;
	return 2;
}

/* ---- pass 1: check each instruction, find branch targets, give registers and slots locals */

static void use_reg(struct tr *t, unsigned r)
{
	if (r < BPF_FP && t->reg_local[r] == NO_LOCAL)
		t->reg_local[r] = (int)t->n_locals++;
}

/* The stack slot of an access r10+off of size bytes, or -1 (error reported). */
static int stack_slot(struct tr *t, uint32_t i, int off, unsigned size)
{
	if (off >= 0 || off < -STACK_BYTES) {
		ERR(t, i, "stack access at r10%+d is outside the %d-byte frame", off, STACK_BYTES);
		return -1;
	}
	if (t->framed) {
		/* memory: any alignment, but inside the frame */
		if (off + (int)size > 0) {
			ERR(t, i, "stack access at r10%+d is outside the %d-byte frame", off, STACK_BYTES);
			return -1;
		}
		return 0;
	}
	unsigned byte = (unsigned)(off + STACK_BYTES);
	if (byte % 8 + size > 8) {
		ERR(t, i, "unaligned %u-byte stack access at r10%+d (a packed struct on the stack?)",
		    size, off);
		return -1;
	}
	unsigned s = byte / 8;
	if (t->slot_local[s] == NO_LOCAL)
		t->slot_local[s] = (int)t->n_locals++;
	return (int)s;
}

static int ld_imm64_value(struct tr *t, uint32_t i, uint64_t *value);

static const unsigned bpf_size_bytes[4] = { 4, 2, 1, 8 };   /* BPF_W, H, B, DW >> 3 */

static int check_insn(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code);
	if (in->dst > BPF_FP || in->src > BPF_FP) {
		ERR(t, i, "register r%u does not exist", in->dst > BPF_FP ? in->dst : in->src);
		return -1;
	}
	const struct reloc *rel = reloc_at(t, i);
	if (rel && !is_ld_imm64(in) && !(cl == BPF_JMP && op == BPF_CALL)) {
		ERR(t, i, "relocation of a %s instruction", "non-call, non-LD_IMM64");
		return -1;
	}
	switch (cl) {
	case BPF_ALU:
	case BPF_ALU64:
		if (in->dst == BPF_FP) {
			ERR(t, i, "write to r10, the frame pointer");
			return -1;
		}
		if (op > BPF_END || (op == BPF_END && (in->imm != 16 && in->imm != 32 && in->imm != 64))) {
			ERR(t, i, "unknown ALU operation 0x%02x", in->code);
			return -1;
		}
		if (in->off != 0 || (op == BPF_END && cl == BPF_ALU64)) {
			ERR(t, i, "a BPF cpu v4 instruction (signed division, sign-extending move, bswap): "
			    "compile with -mcpu=v3");
			return -1;
		}
		use_reg(t, in->dst);
		if (BPF_SRC(in->code) == BPF_X && op != BPF_END && op != BPF_NEG)
			use_reg(t, in->src);
		return 0;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT) {
			use_reg(t, 0);
			return cl == BPF_JMP ? 0 : (ERR(t, i, "unknown jump 0x%02x", in->code), -1);
		}
		if (op == BPF_CALL) {
			if (cl != BPF_JMP || BPF_SRC(in->code) == BPF_X) {
				ERR(t, i, "indirect call (a function pointer)");
				return -1;
			}
			for (unsigned r = 0; r <= 5; r++)
				use_reg(t, r);
			return 0;
		}
		if (op > BPF_JSLE || (op == BPF_JA && cl == BPF_JMP32)) {
			ERR(t, i, "unknown jump 0x%02x", in->code);
			return -1;
		}
		int64_t to = (int64_t)i + 1 + in->off;
		if (to < 0 || to >= t->n || t->target[to] == 2) {
			ERR(t, i, "jump to instruction %lld, outside the function or inside another", (long long)to);
			return -1;
		}
		t->target[to] |= 1;
		if (op != BPF_JA) {
			use_reg(t, in->dst);
			if (BPF_SRC(in->code) == BPF_X)
				use_reg(t, in->src);
		}
		return 0;
	case BPF_LD:
		if (!is_ld_imm64(in)) {
			ERR(t, i, "packet access (BPF_LD_ABS/IND) has no meaning here");
			return -1;
		}
		if (i + 1 >= t->n) {
			ERR(t, i, "LD_IMM64 without its second half");
			return -1;
		}
		if (in->dst == BPF_FP) {
			ERR(t, i, "write to r10, the frame pointer");
			return -1;
		}
		if (in->src != 0) {
			ERR(t, i, "LD_IMM64 of a map or BTF object (src r%u) has no meaning here", in->src);
			return -1;
		}
		uint64_t v;
		if (ld_imm64_value(t, i, &v) != 0)
			return -1;
		use_reg(t, in->dst);
		return 0;
	case BPF_LDX:
		if (BPF_MODE(in->code) != BPF_MEM) {
			ERR(t, i, "load mode 0x%02x (cpu v4 sign-extending loads are not supported: "
			    "compile with -mcpu=v3)", BPF_MODE(in->code));
			return -1;
		}
		if (in->dst == BPF_FP) {
			ERR(t, i, "write to r10, the frame pointer");
			return -1;
		}
		use_reg(t, in->dst);
		if (in->src == BPF_FP)
			return stack_slot(t, i, in->off, bpf_size_bytes[BPF_SIZE(in->code) >> 3]) < 0 ? -1 : 0;
		use_reg(t, in->src);
		return 0;
	case BPF_ST:
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_ATOMIC) {
			ERR(t, i, "a BPF atomic operation (__sync_* / __atomic_*) has no meaning here: "
			    "use ar_cas or ar_fadd on a region");
			return -1;
		}
		if (BPF_MODE(in->code) != BPF_MEM) {
			ERR(t, i, "store mode 0x%02x", BPF_MODE(in->code));
			return -1;
		}
		if (cl == BPF_STX)
			use_reg(t, in->src);
		if (in->dst != BPF_FP) {
			if (!t->frame_region) {
				ERR(t, i, "store through a pointer: memory outside the stack is written only "
				    "with ar_st8/16/32/64 (and constants are read-only)");
				return -1;
			}
			use_reg(t, in->dst);
			return 0;
		}
		return stack_slot(t, i, in->off, bpf_size_bytes[BPF_SIZE(in->code) >> 3]) < 0 ? -1 : 0;
	}
	return -1;
}

/* ---- pass 2: which registers and slots hold a pointer into the constants (see the top) */

static int slot_of_fp(const struct bpf_insn *in, int *slot)
{
	int byte = in->off + STACK_BYTES;
	if (BPF_SIZE(in->code) != BPF_DW || byte < 0 || byte % 8)
		return 0;
	*slot = byte / 8;
	return 1;
}

/* The kind LD_IMM64 at slot i loads. */
static uint8_t ld_imm64_kind(const struct tr *t, uint32_t i)
{
	const struct reloc *r = reloc_at(t, i);
	if (!r)
		return K_INT;
	const struct symbol *s = &t->o->syms[r->sym];
	return s->sec != UINT32_MAX && t->o->secs[s->sec].kind == SEC_RODATA ? K_CONST : K_INT;
}

static void transfer(const struct tr *t, uint32_t i, uint8_t *k)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code);
	int s;
	switch (cl) {
	case BPF_ALU64: {
		uint8_t src = BPF_SRC(in->code) != BPF_X ? K_INT : in->src == BPF_FP ? K_FRAME :
		              k[in->src];
		if (op == BPF_MOV) {
			k[in->dst] = src;
		} else if (op == BPF_ADD || op == BPF_SUB) {
			uint8_t d = k[in->dst];
			if ((d == K_CONST || d == K_FRAME) && src == K_INT)
				;                          /* pointer +- integer */
			else if (op == BPF_ADD && d == K_INT && (src == K_CONST || src == K_FRAME))
				k[in->dst] = src;          /* integer + pointer */
			else
				k[in->dst] = K_INT;
		} else {
			k[in->dst] = K_INT;
		}
		break;
	}
	case BPF_ALU:
		k[in->dst] = K_INT;
		break;
	case BPF_LD:
		k[in->dst] = ld_imm64_kind(t, i);
		break;
	case BPF_LDX:
		k[in->dst] = in->src == BPF_FP && slot_of_fp(in, &s) ? k[10 + s] : K_INT;
		break;
	case BPF_ST:
	case BPF_STX:
		if (in->dst != BPF_FP)
			break;     /* through a pointer: C cannot name a spill slot, so none changes */
		if (slot_of_fp(in, &s))
			k[10 + s] = cl == BPF_STX && in->src != BPF_FP ? k[in->src] : K_INT;
		else if (in->off < 0 && in->off >= -STACK_BYTES)
			k[10 + (in->off + STACK_BYTES) / 8] = K_INT;   /* part of a slot: an integer */
		break;
	case BPF_JMP:
		if (op == BPF_CALL)
			for (unsigned r = 0; r <= 5; r++)
				k[r] = K_INT;
		break;
	}
}

static int flow(struct tr *t)
{
	uint32_t *work = malloc(t->n * sizeof *work);
	uint8_t *queued = calloc(t->n, 1), cur[N_KINDS];
	if (!work || !queued) {
		free(work);
		free(queued);
		return -1;
	}
	uint32_t top = 0;
	for (int r = 1; r <= t->f->n_params; r++)
		t->kinds[r] = K_INT;
	t->reach[0] = 1;
	work[top++] = 0;
	queued[0] = 1;
	/* each push follows a growth of some kinds entry (2 bits each) or a first visit: the
	 * loop runs at most n * (1 + 2 * N_KINDS) times */
	while (top) {
		uint32_t i = work[--top], succ[2];
		queued[i] = 0;
		memcpy(cur, t->kinds + (size_t)i * N_KINDS, N_KINDS);
		transfer(t, i, cur);
		int ns = successors(t, i, succ);
		for (int j = 0; j < ns; j++) {
			uint32_t s = succ[j];
			if (s >= t->n)
				continue;          /* falls off the end: reported by the emitter */
			uint8_t *ks = t->kinds + (size_t)s * N_KINDS;
			int grew = !t->reach[s];
			for (unsigned k = 0; k < N_KINDS; k++)
				if ((ks[k] | cur[k]) != ks[k]) {
					ks[k] |= cur[k];
					grew = 1;
				}
			t->reach[s] = 1;
			if (grew && !queued[s]) {
				queued[s] = 1;
				work[top++] = s;
			}
		}
	}
	free(work);
	free(queued);
	return 0;
}

/* ---- pass 4: emit (pass 3, liveness, is further down with the other emit helpers) ---- */

static enum op alu_op(unsigned bpf_op)
{
	switch (bpf_op) {
	case BPF_ADD: return OP_ADD;
	case BPF_SUB: return OP_SUB;
	case BPF_MUL: return OP_MUL;
	case BPF_DIV: return OP_DIVU;
	case BPF_MOD: return OP_REMU;
	case BPF_OR: return OP_OR;
	case BPF_AND: return OP_AND;
	case BPF_XOR: return OP_XOR;
	case BPF_LSH: return OP_SHL;
	case BPF_RSH: return OP_SHRU;
	default: return OP_SHRS;   /* BPF_ARSH */
	}
}

static void emit_alu(struct tr *t, const struct bpf_insn *in)
{
	int is64 = BPF_CLASS(in->code) == BPF_ALU64, x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	/* the immediate is sign-extended to 64 bits, as BPF defines; 32-bit operations use its
	 * low 32 bits */
	int64_t imm = is64 ? (int64_t)in->imm : (int64_t)(uint32_t)in->imm;

	/* a value nothing reads: moves and arithmetic that cannot trap are left out */
	if (out_loc(t, t->cur, in->dst) == LOC_NONE && op != BPF_DIV && op != BPF_MOD)
		return note(t, "(nothing: %s is not read)", bpf_reg_name[in->dst]);
	/* a copy between registers that share a local (alloc_locals) is no copy at all */
	if (op == BPF_MOV && x && is64 && use_loc(t, t->cur, in->src) == out_loc(t, t->cur, in->dst))
		return note(t, "(nothing: %s and %s share a local)", bpf_reg_name[in->dst],
		            bpf_reg_name[in->src]);
	if (op == BPF_MOV) {
		if (x) {
			em_reg(t, OP_LGET, in->src);
			if (!is64 && !fits32(t, in->src))
				em_zext32(t);
		} else {
			em_push(t, imm);
		}
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	if (op == BPF_NEG) {
		em_reg(t, OP_LGET, in->dst);
		em_op(t, OP_NEG);
		if (!is64)
			em_zext32(t);
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	if (op == BPF_END) {
		/* to little endian on a little-endian machine: keep the low imm bits; to big
		 * endian: reverse the low imm/8 bytes */
		unsigned n = (unsigned)in->imm / 8;
		if (BPF_SRC(in->code) == 0) {
			if (n == 8 && use_loc(t, t->cur, in->dst) == out_loc(t, t->cur, in->dst))
				return note(t, "(nothing: already little-endian)");
			if (n == 8) {
				/* the value moves to its new web's local */
				em_reg(t, OP_LGET, in->dst);
				return em_reg(t, OP_LSET, in->dst);
			}
			em_reg(t, OP_LGET, in->dst);
			em_push(t, (int64_t)((1ull << in->imm) - 1));
			em_op(t, OP_AND);
		} else {
			for (unsigned k = 0; k < n; k++) {
				em_reg(t, OP_LGET, in->dst);
				if (k) {
					em_push(t, 8 * k);
					em_op(t, OP_SHRU);
				}
				em_push(t, 0xff);
				em_op(t, OP_AND);
				if (n - 1 - k) {
					em_push(t, 8 * (n - 1 - k));
					em_op(t, OP_SHL);
				}
				if (k)
					em_op(t, OP_OR);
			}
		}
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	int shift = op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH;
	/* a constant added to a register in a local: linc; to one still on the stack: add */
	unsigned dl = use_loc(t, t->cur, in->dst);
	if (is64 && !x && (op == BPF_ADD || op == BPF_SUB) && t->pending != (int)dl &&
	    dl == out_loc(t, t->cur, in->dst)) {
		int64_t delta = op == BPF_ADD ? imm : -imm;
		if (delta >= -128 && delta <= 127) {
			/* the pending store goes first: the interpreter makes "add; lset s" one
			 * three-address add, which a linc between the two would split in two */
			flush(t);
			asm_linc(t->b, dl, (int)delta);
			note(t, "linc %s, %lld", bpf_reg_name[in->dst], (long long)delta);
			return;
		}
	}
	/* and with a mask that keeps every bit the value can have changes nothing */
	if (op == BPF_AND && !x && (is64 ? in->imm >= 0 : fits32(t, in->dst)) &&
	    (known_mask(t, in->dst) & ~(uint64_t)imm) == 0 && dl == out_loc(t, t->cur, in->dst))
		return note(t, "(nothing: %s has no bits outside the mask)", bpf_reg_name[in->dst]);
	/* r *= r and the like with r still on the stack: dup, when the old value dies here */
	if (is64 && x && in->src == in->dst && t->pending == (int)dl &&
	    !needed_after(t, t->cur, dl)) {
		t->pending = -1;
		note(t, "(%s on the stack)", bpf_reg_name[in->dst]);
		em_op(t, OP_DUP);
		em_op(t, alu_op(op));
		return em_reg(t, OP_LSET, in->dst);
	}
	/* 64-bit, the second operand still on the stack: push the first under it */
	if (is64 && x && in->src != in->dst && consumable(t, t->cur, in->src)) {
		em_reg(t, OP_LGET, in->src);
		em_reg(t, OP_LGET, in->dst);
		if (op != BPF_ADD && op != BPF_MUL && op != BPF_AND && op != BPF_OR && op != BPF_XOR)
			em_op(t, OP_SWAP);
		em_op(t, alu_op(op));
		return em_reg(t, OP_LSET, in->dst);
	}
	/* 32-bit: add, sub, mul, and, or, xor, lsh only need the low 32 bits of their operands
	 * and the result cut to 32; division, remainder and right shifts see the operands' low
	 * 32 bits (arsh: sign-extended) */
	int zext_a = !is64 && (op == BPF_DIV || op == BPF_MOD || op == BPF_RSH);
	em_reg(t, OP_LGET, in->dst);
	if (zext_a && !fits32(t, in->dst))
		em_zext32(t);
	if (!is64 && op == BPF_ARSH)
		em_op(t, OP_SEXT32);
	if (x) {
		em_reg(t, OP_LGET, in->src);
		if (!is64 && (op == BPF_DIV || op == BPF_MOD) && !fits32(t, in->src))
			em_zext32(t);
		if (shift) {
			/* BPF masks the shift count to the operand's width, 63 or 31; our shifts mask
			 * with 63, so only 32-bit shifts need the mask */
			if (!is64) {
				em_push(t, 31);
				em_op(t, OP_AND);
			}
		}
	} else {
		em_push(t, shift ? imm & (is64 ? 63 : 31) : imm);
	}
	em_op(t, alu_op(op));
	/* unsigned 32-bit division, remainder and logical right shift of zero-extended operands
	 * are already zero-extended, and so are and, or, xor of two 32-bit values */
	int narrow = (op == BPF_AND || op == BPF_OR || op == BPF_XOR) && fits32(t, in->dst) &&
	             (!x || fits32(t, in->src));
	if (!is64 && !zext_a && !narrow && !(op == BPF_AND && !x))
		em_zext32(t);
	em_reg(t, OP_LSET, in->dst);
}

static enum op jmp_op(unsigned bpf_op)
{
	switch (bpf_op) {
	case BPF_JEQ: return OP_JEQ;
	case BPF_JNE: return OP_JNE;
	case BPF_JGT: return OP_JGTU;
	case BPF_JGE: return OP_JGEU;
	case BPF_JLT: return OP_JLTU;
	case BPF_JLE: return OP_JLEU;
	case BPF_JSGT: return OP_JGTS;
	case BPF_JSGE: return OP_JGES;
	case BPF_JSLT: return OP_JLTS;
	default: return OP_JLES;    /* BPF_JSLE */
	}
}

/* A JMP32 operand, register r: its low 32 bits, sign-extended for signed compares; nothing
 * when r's value already is that (known bits). */
static void low32(struct tr *t, int sig, unsigned r)
{
	if (t->zbits[r] <= (sig ? 31 : 32))
		return;
	if (sig)
		em_op(t, OP_SEXT32);
	else
		em_zext32(t);
}

/* The mirror of a comparison: a OP b == b MIRROR(OP) a. */
static unsigned mirror(unsigned bpf_op)
{
	switch (bpf_op) {
	case BPF_JGT: return BPF_JLT;
	case BPF_JGE: return BPF_JLE;
	case BPF_JLT: return BPF_JGT;
	case BPF_JLE: return BPF_JGE;
	case BPF_JSGT: return BPF_JSLT;
	case BPF_JSGE: return BPF_JSLE;
	case BPF_JSLT: return BPF_JSGT;
	case BPF_JSLE: return BPF_JSGE;
	default: return bpf_op;     /* ==, !=, & */
	}
}

/* Whether the value pending for register r can be used where instruction i reads r, without
 * storing it (i is r's only reader and r is dead or overwritten after it). */
static int consumable(const struct tr *t, uint32_t i, unsigned r)
{
	unsigned l = use_loc(t, i, r);
	return t->pending == (int)l && l != LOC_NONE && reads_loc(t, i, l) == 1 &&
	       !needed_after(t, i, l);
}

/* Push the operands of the conditional jump at slot i (extended for JMP32; for JSET, their
 * and) and return the test to make of them: a BPF jump operation, BPF_JSET meaning "!= 0",
 * or BPF_JEQ/JNE with zero_test set when the test is against 0 (one operand pushed). */
static unsigned push_compare(struct tr *t, uint32_t i, int *zero_test)
{
	const struct bpf_insn *in = &t->in[i];
	int is32 = BPF_CLASS(in->code) == BPF_JMP32, x = BPF_SRC(in->code) == BPF_X;
	unsigned op = BPF_OP(in->code);
	int sig = op == BPF_JSGT || op == BPF_JSGE || op == BPF_JSLT || op == BPF_JSLE;
	int ext = is32 && op != BPF_JSET;
	uint32_t saved = t->cur;

	t->cur = i;
	*zero_test = 0;
	if (x && !is32 && in->src != in->dst && consumable(t, i, in->src)) {
		/* the second operand is already on the stack: push the first, test the mirror */
		em_reg(t, OP_LGET, in->src);
		em_reg(t, OP_LGET, in->dst);
		op = mirror(op);
	} else {
		em_reg(t, OP_LGET, in->dst);
		if (ext)
			low32(t, sig, in->dst);
		if (!x && in->imm == 0 && (op == BPF_JEQ || op == BPF_JNE)) {
			*zero_test = 1;
			t->cur = saved;
			return op;
		}
		if (x) {
			em_reg(t, OP_LGET, in->src);
			if (ext)
				low32(t, sig, in->src);
		} else {
			/* 64-bit compares see the immediate sign-extended; 32-bit ones its 32 bits, as
			 * the operand was extended */
			em_push(t, is32 && !sig ? (int64_t)(uint32_t)in->imm : (int64_t)in->imm);
		}
	}
	if (op == BPF_JSET) {
		em_op(t, OP_AND);
		if (is32)
			em_zext32(t);
	}
	t->cur = saved;
	return op;
}

static void emit_jmp(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	uint32_t to = (uint32_t)((int64_t)i + 1 + in->off);
	int zero;

	if (BPF_OP(in->code) == BPF_JA && t->dup_end[i]) {
		/* a copy of the short block at the target instead of the jump: what this path
		 * knows (a value on the stack, known bits) carries into it */
		uint32_t end = t->dup_end[i];
		note(t, "(a copy of %u..%u:)", to, end - 1);
		for (uint32_t k = to; k < end; k++) {
			t->cur = k;
			translate_insn(t, k);
			update_bits(t, k);
		}
		t->cur = i;
		const struct bpf_insn *last = &t->in[end - 1];
		if (BPF_OP(last->code) != BPF_JA && BPF_OP(last->code) != BPF_EXIT)
			em_jump(t, OP_JMP, end);  /* where the copied branch falls through */
		return;
	}
	if (BPF_OP(in->code) == BPF_JA)
		return em_jump(t, OP_JMP, to);
	unsigned op = push_compare(t, i, &zero);
	if (zero)
		return em_jump(t, op == BPF_JEQ ? OP_JZ : OP_JNZ, to);
	em_jump(t, op == BPF_JSET ? OP_JNZ : jmp_op(op), to);
}

/* clang writes "x = a OP b" (BPF has no set-on-condition) as
 *     i    rX = 1            (or 0)
 *     i+1  if a OP b goto T
 *     i+2  rX = 0            (or 1)
 *     i+3  T: ...            or  i+3: goto T
 * which is one comparison opcode of ours.  Returns 1 when slot i starts that shape (the
 * branch and the second move are then not translated on their own). */
static int is_select(const struct tr *t, uint32_t i)
{
	if (i + 3 > t->n || t->target[i + 1] || t->target[i + 2])
		return 0;
	const struct bpf_insn *a = &t->in[i], *j = &t->in[i + 1], *b = &t->in[i + 2];
	unsigned ca = BPF_CLASS(a->code), cb = BPF_CLASS(b->code), cj = BPF_CLASS(j->code);
	if ((ca != BPF_ALU && ca != BPF_ALU64) || BPF_OP(a->code) != BPF_MOV ||
	    BPF_SRC(a->code) != BPF_K || (cb != BPF_ALU && cb != BPF_ALU64) ||
	    BPF_OP(b->code) != BPF_MOV || BPF_SRC(b->code) != BPF_K || b->dst != a->dst ||
	    (a->imm | b->imm) != 1 || (a->imm & b->imm) != 0)
		return 0;
	if ((cj != BPF_JMP && cj != BPF_JMP32) || BPF_OP(j->code) == BPF_JA ||
	    BPF_OP(j->code) == BPF_CALL || BPF_OP(j->code) == BPF_EXIT || j->dst == a->dst ||
	    (BPF_SRC(j->code) == BPF_X && j->src == a->dst))
		return 0;
	int64_t to = (int64_t)i + 2 + j->off;
	if (to == i + 3)
		return 1;
	const struct bpf_insn *g = i + 3 < t->n ? &t->in[i + 3] : NULL;
	return g && g->code == (BPF_JMP | BPF_JA) && (int64_t)i + 4 + g->off == to;
}

/* clang has no BPF remainder by a constant: x % K comes as
 *     i    rA = rX
 *     i+1  rA /= K
 *     i+2  rA *= K
 *     i+3  rX -= rA        (rA dead after)
 * which is one remu of ours.  Returns 1 when slot i starts that shape (64-bit). */
static int is_rem(const struct tr *t, uint32_t i)
{
	if (i + 4 > t->n || t->target[i + 1] || t->target[i + 2] || t->target[i + 3])
		return 0;
	const struct bpf_insn *m = &t->in[i], *dv = &t->in[i + 1], *ml = &t->in[i + 2],
	                      *sb = &t->in[i + 3];
	unsigned a = m->dst, x = m->src;
	return m->code == (BPF_ALU64 | BPF_MOV | BPF_X) && a != x &&
	       dv->code == (BPF_ALU64 | BPF_DIV | BPF_K) && dv->dst == a && dv->off == 0 &&
	       ml->code == (BPF_ALU64 | BPF_MUL | BPF_K) && ml->dst == a && ml->imm == dv->imm &&
	       sb->code == (BPF_ALU64 | BPF_SUB | BPF_X) && sb->dst == x && sb->src == a &&
	       !(t->live_out[i + 3] >> a & 1);
}

/* clang extends a 32-bit value to 64 bits (a u32 cast, the result of ar_ld32u) as
 *     i    rX <<= 32
 *     i+1  rX >>= 32       (or s>>= 32)
 * which is a mask (sext32) of ours, or nothing when rX's known bits say it already fits.
 * Returns 1 when slot i starts that shape. */
static int is_ext32(const struct tr *t, uint32_t i)
{
	if (i + 2 > t->n || t->target[i + 1] || t->fwd_skip[i] || t->fwd_skip[i + 1])
		return 0;
	const struct bpf_insn *a = &t->in[i], *b = &t->in[i + 1];
	return a->code == (BPF_ALU64 | BPF_LSH | BPF_K) && a->imm == 32 &&
	       (b->code == (BPF_ALU64 | BPF_RSH | BPF_K) ||
	        b->code == (BPF_ALU64 | BPF_ARSH | BPF_K)) && b->imm == 32 && b->dst == a->dst;
}

static void emit_ext32(struct tr *t, uint32_t i)
{
	unsigned r = t->in[i].dst;
	int sig = BPF_OP(t->in[i + 1].code) == BPF_ARSH;
	int same = t->zbits[r] <= (sig ? 31 : 32);        /* the extension changes nothing */
	if (same && use_loc(t, i, r) == out_loc(t, i + 1, r))
		return note(t, "(nothing: %s already fits 32 bits)", bpf_reg_name[r]);
	em_reg(t, OP_LGET, r);
	if (!same) {
		if (sig)
			em_op(t, OP_SEXT32);
		else
			em_zext32(t);
	}
	t->cur = i + 1;
	em_reg(t, OP_LSET, r);
	t->cur = i;
}

static enum op cmp_op(unsigned bpf_op)
{
	switch (bpf_op) {
	case BPF_JEQ: return OP_EQ;
	case BPF_JNE: return OP_NE;
	case BPF_JGT: return OP_GTU;
	case BPF_JGE: return OP_GEU;
	case BPF_JLT: return OP_LTU;
	case BPF_JLE: return OP_LEU;
	case BPF_JSGT: return OP_GTS;
	case BPF_JSGE: return OP_GES;
	case BPF_JSLT: return OP_LTS;
	default: return OP_LES;     /* BPF_JSLE */
	}
}

static void emit_select(struct tr *t, uint32_t i)
{
	int zero;
	unsigned op = push_compare(t, i + 1, &zero);
	if (zero) {
		em_op(t, OP_EQZ);                  /* a == 0 */
		if (op == BPF_JNE)
			em_op(t, OP_EQZ);
	} else if (op == BPF_JSET) {
		em_push(t, 0);
		em_op(t, OP_NE);
	} else {
		em_op(t, cmp_op(op));
	}
	if (t->in[i].imm == 0)                 /* rX = 0 where the branch is taken */
		em_op(t, OP_EQZ);
	em_reg(t, OP_LSET, t->in[i].dst);
}

/* Which opcodes an ar.h intrinsic may name: the ones that take their operands from the stack
 * and push at most one result, with region, hook or trap-code immediates. */
static int intrinsic_ok(enum op op)
{
	const struct isa_op_info *oi = &isa_op_info[op];
	if (op == OP_TRAP || op == OP_HCALL)
		return 1;
	if (oi->fmt != ISA_FMT_NONE && oi->fmt != ISA_FMT_R && oi->fmt != ISA_FMT_RR)
		return 0;
	return oi->push <= 1 && oi->pop >= 0 && oi->pop <= 5 && op != OP_RET && op != OP_NOP &&
	       op != OP_DROP && !(oi->flags & (OPF_BRANCH | OPF_JUMP | OPF_CALL));
}

static int region_ok(struct tr *t, uint32_t i, enum op op, unsigned r, int dest)
{
	const char *what = mnem(op);
	if (r >= t->n_regions) {
		ERR(t, i, "ar_%s: region %u is not declared (AR_IMPORT_REGIONS declares %u)", what, r,
		    t->n_regions - ISA_R_FIRST_IMPORT);
		return 0;
	}
	if (dest && (isa_op_info[op].flags & OPF_WRITE) && !(t->region_acc[r] & ISA_ACC_WRITE)) {
		ERR(t, i, "ar_%s writes region %u, which is read-only", what, r);
		return 0;
	}
	if ((op == OP_CAS || op == OP_FADD) && r < ISA_R_FIRST_IMPORT) {
		ERR(t, i, "ar_%s works on imported rw regions only", what);
		return 0;
	}
	return 1;
}

/* Push argument register r of the call at slot i: its own local, or, when the move into it
 * right before the call was left out (plan_forwarding), that move's source. */
static void push_arg(struct tr *t, uint32_t i, unsigned r)
{
	for (uint32_t k = i; k-- > 0 && t->fwd_skip[k];) {
		const struct bpf_insn *m = &t->in[k];
		if (m->dst != r)
			continue;
		if (BPF_SRC(m->code) == BPF_X) {
			/* the source's local at the move: nothing between it and the call writes it.
			 * A value still pending there is used in place when the move was its last
			 * reader (em_reg asks about the move, not the call) */
			uint32_t cur = t->cur;
			t->cur = k;
			em_reg(t, OP_LGET, m->src);
			t->cur = cur;
			return;
		}
		return em_push(t, BPF_CLASS(m->code) == BPF_ALU64 ? (int64_t)m->imm
		                                              : (int64_t)(uint32_t)m->imm);
	}
	em_reg(t, OP_LGET, r);
}

/* Moves into r1..r5 just before a call, each read only by the call, are left out and the call
 * pushes their sources: "r1 = r8; r3 = 10; call" becomes "lget r8; ...; push 10; findb".
 * A move qualifies when nothing between it and the call (only such moves) reads its register
 * or writes its source, and no branch lands after it before the call. */
static void plan_forwarding(struct tr *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct bpf_insn *c = &t->in[i];
		if (t->target[i] == 2 || c->code != (BPF_JMP | BPF_CALL) || t->target[i])
			continue;
		for (uint32_t k = i; k-- > 0;) {
			const struct bpf_insn *m = &t->in[k];
			unsigned cl = BPF_CLASS(m->code);
			if (t->target[k] == 2 || (cl != BPF_ALU && cl != BPF_ALU64) ||
			    BPF_OP(m->code) != BPF_MOV || m->dst < 1 || m->dst > 5 ||
			    (cl == BPF_ALU && BPF_SRC(m->code) == BPF_X))
				break;
			int ok = 1;
			for (uint32_t j = k + 1; j < i; j++) {
				const struct bpf_insn *n2 = &t->in[j];
				if (n2->dst == m->dst ||
				    (BPF_SRC(n2->code) == BPF_X && n2->src == m->dst) ||
				    (BPF_SRC(m->code) == BPF_X && n2->dst == m->src))
					ok = 0;
			}
			if (ok)
				t->fwd_skip[k] = 1;
			else
				break;
			if (t->target[k])
				break;     /* a block starts here: nothing before it belongs to this call */
		}
	}
}

/* ar_arg(k): argument k of a function that takes more than its C parameters (AR_EXPORT_ARGS
 * declares its count); those arguments stay in their locals, which nothing else writes. */
static void emit_arg(struct tr *t, uint32_t i, unsigned k)
{
	if (k < (unsigned)t->f->n_params || k >= (unsigned)t->f->n_args) {
		if (t->f->n_args == t->f->n_params)
			ERR(t, i, "ar_arg(%u): %s takes only its %d parameters (AR_EXPORT_ARGS declares "
			    "more)", k, t->f->name, t->f->n_params);
		else
			ERR(t, i, "ar_arg(%u): %s's arguments past its parameters are %d .. %d", k,
			    t->f->name, t->f->n_params, t->f->n_args - 1);
		return;
	}
	flush(t);
	asm_local(t->b, OP_LGET, k);
	note(t, "lget %u (argument %u)", k, k);
	em_reg(t, OP_LSET, 0);
}

static void emit_intrinsic(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	uint32_t imm = (uint32_t)in->imm;
	if ((imm & CC_CALL_MASK) != CC_CALL_TAG) {
		ERR(t, i, "call of BPF helper %d, which is not an ar.h intrinsic", in->imm);
		return;
	}
	unsigned opn = imm & 0xff, a = imm >> 8 & 0xff, b = imm >> 16 & 0xff;
	if (opn == OP_LGET)
		return emit_arg(t, i, a | b << 8);
	if (opn >= OP_COUNT || !intrinsic_ok((enum op)opn)) {
		ERR(t, i, "call of helper 0x%x: opcode %u is not an intrinsic", imm, opn);
		return;
	}
	enum op op = (enum op)opn;
	const struct isa_op_info *oi = &isa_op_info[op];
	int n_args = oi->pop;
	if (op == OP_HCALL) {
		unsigned h = a | b << 8;
		if (h >= t->n_hooks) {
			ERR(t, i, "hook %u is not declared (AR_IMPORT_HOOKS declares %u)", h, t->n_hooks);
			return;
		}
		n_args = isa_sig_check(t->hook_sig[h]);
		if (n_args > 5) {
			ERR(t, i, "hook %u takes %d arguments; a call passes at most 5", h, n_args);
			return;
		}
	} else if (oi->fmt == ISA_FMT_R) {
		if (!region_ok(t, i, op, a, 1))
			return;
	} else if (oi->fmt == ISA_FMT_RR) {
		if (!region_ok(t, i, op, a, 1) || !region_ok(t, i, op, b, 0))
			return;
	}
	for (int r = 1; r <= n_args; r++)
		push_arg(t, i, (unsigned)r);
	switch (oi->fmt) {
	case ISA_FMT_R: em_mem(t, op, a); break;
	case ISA_FMT_RR:
		flush(t);
		asm_mem2(t->b, op, a, b);
		note(t, "%s %u, %u", mnem(op), a, b);
		break;
	case ISA_FMT_HOOK:
		flush(t);
		asm_hcall(t->b, (int)(a | b << 8));
		note(t, "hcall %u", a | b << 8);
		break;
	case ISA_FMT_U16:
		flush(t);
		asm_trap(t->b, a | b << 8);
		note(t, "trap %u", a | b << 8);
		break;
	default: em_op(t, op); break;
	}
	if (oi->push == 1)
		em_reg(t, OP_LSET, 0);
}

static void emit_call(struct tr *t, uint32_t i)
{
	if (t->in[i].src != BPF_PSEUDO_CALL) {
		if (t->in[i].src != 0)
			return (void)ERR(t, i, "call of a kernel function (kfunc) has no meaning here");
		return emit_intrinsic(t, i);
	}
	const struct func *callee = call_target(t, i);
	if (!callee)
		return;
	if (callee->n_args != callee->n_params)
		return (void)ERR(t, i, "call of %s, which takes %d arguments (AR_EXPORT_ARGS): only a "
		                 "client can pass more than 5", callee->name, callee->n_args);
	for (int r = 1; r <= callee->n_args; r++)
		push_arg(t, i, (unsigned)r);
	flush(t);
	asm_call(t->b, callee->index);
	note(t, "call %s", callee->name);
	em_reg(t, OP_LSET, 0);
}

/* The value LD_IMM64 at slot i loads: its 64-bit immediate, or the offset in the segment's
 * constants of the read-only data it names.  Returns 0, or -1 after reporting why not. */
static int ld_imm64_value(struct tr *t, uint32_t i, uint64_t *value)
{
	const struct bpf_insn *in = &t->in[i], *hi = &t->in[i + 1];
	uint64_t v = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)hi->imm << 32;
	const struct reloc *r = reloc_at(t, i);
	if (hi->code || hi->dst || hi->src || hi->off)
		return ERR(t, i, "malformed LD_IMM64 (second half 0x%02x)", hi->code);
	if (r) {
		const struct symbol *s = &t->o->syms[r->sym];
		const struct section *sec = s->sec == UINT32_MAX ? NULL : &t->o->secs[s->sec];
		if (!sec)
			return ERR(t, i, "'%s' is not defined in this file (extern objects are not "
			           "supported)", s->name);
		if (sec->kind == SEC_WRITABLE)
			return ERR(t, i, "global variable '%s' (%s) may be written at run time: only "
			           "`static const` data is supported, keep state in a region", s->name,
			           sec->name);
		if (sec->kind != SEC_RODATA || t->const_off[s->sec] < 0)
			return ERR(t, i, "address of '%s' in section %s (only constants have an address)",
			           s->name, sec->name);
		/* the address is the symbol's offset plus the addend clang put in the immediate */
		if (s->value > sec->size || v > sec->size - s->value)
			return ERR(t, i, "address of '%s'+%llu is outside %s", s->name,
			           (unsigned long long)v, sec->name);
		v += (uint64_t)t->const_off[s->sec] + s->value;
	}
	*value = v;
	return 0;
}

static void emit_ld_imm64(struct tr *t, uint32_t i)
{
	uint64_t v = 0;
	if (ld_imm64_value(t, i, &v) != 0)
		return;
	em_push(t, (int64_t)v);
	em_reg(t, OP_LSET, t->in[i].dst);
}

static const enum op ld_of_size[4] = { OP_LD32U, OP_LD16U, OP_LD8U, OP_LD64 };
static const enum op st_of_size[4] = { OP_ST32, OP_ST16, OP_ST8, OP_ST64 };

static void emit_ldx(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned sz = BPF_SIZE(in->code) >> 3, bytes = bpf_size_bytes[sz];
	if (in->src == BPF_FP && t->framed) {
		em_fp_addr(t, in->off);
		em_mem(t, ld_of_size[sz], t->frame_region);
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	if (in->src == BPF_FP && out_loc(t, i, in->dst) == LOC_NONE)
		return note(t, "(nothing: %s is not read)", bpf_reg_name[in->dst]);
	if (in->src == BPF_FP) {
		/* a slot local holds the 8 bytes little-endian: shift the ones asked for down */
		unsigned byte = (unsigned)(in->off + STACK_BYTES);
		em_slot(t, OP_LGET, byte / 8);
		if (byte % 8) {
			em_push(t, 8 * (byte % 8));
			em_op(t, OP_SHRU);
		}
		if (bytes < 8) {
			em_push(t, (int64_t)((1ull << (8 * bytes)) - 1));
			em_op(t, OP_AND);
		}
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	uint8_t kind = t->kinds[(size_t)i * N_KINDS + in->src];
	if (kind != K_CONST && !t->frame_region) {
		ERR(t, i, "pointer dereference: memory is read only from the stack, `static const` "
		    "data and regions (ar_ld8u .. ar_ld64)");
		return;
	}
	em_reg(t, OP_LGET, in->src);
	/* a stack address (K_FRAME) drops its tag with the offset: one add */
	int64_t off = in->off - (kind == K_FRAME ? FRAME_TAG : 0);
	if (off) {
		em_push(t, off);
		em_op(t, OP_ADD);
	}
	if (kind == K_CONST || kind == K_FRAME) {
		em_mem(t, ld_of_size[sz], kind == K_CONST ? ISA_R_CONST : t->frame_region);
		em_reg(t, OP_LSET, in->dst);
		return;
	}
	/* a pointer of unknown origin: the tag says frame or constants (a wild value traps on
	 * the bounds of one or the other) */
	asm_label lc = asm_label_new(t->b), ld = asm_label_new(t->b);
	em_op(t, OP_DUP);
	em_push(t, FRAME_TAG_BIT);
	em_op(t, OP_SHRU);
	asm_jump(t->b, OP_JZ, lc);
	em_push(t, FRAME_TAG);
	em_op(t, OP_SUB);
	em_mem(t, ld_of_size[sz], t->frame_region);
	asm_jump(t->b, OP_JMP, ld);
	asm_label_bind(t->b, lc);
	em_mem(t, ld_of_size[sz], ISA_R_CONST);
	asm_label_bind(t->b, ld);
	note(t, "(jz: the constants; else the frame, untagged)");
	em_reg(t, OP_LSET, in->dst);
}

static void emit_st(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned sz = BPF_SIZE(in->code) >> 3, bytes = bpf_size_bytes[sz];
	if (in->dst != BPF_FP || t->framed) {
		/* frame memory: r10+off in a framed function, else a stack address in a register */
		if (in->dst == BPF_FP) {
			em_fp_addr(t, in->off);
		} else {
			if (t->kinds[(size_t)i * N_KINDS + in->dst] == K_CONST) {
				ERR(t, i, "store through a pointer into the constants (they are read-only)");
				return;
			}
			em_reg(t, OP_LGET, in->dst);
			/* untag: a pointer without the tag wraps far past the region's end */
			em_push(t, (int64_t)in->off - FRAME_TAG);
			em_op(t, OP_ADD);
		}
		if (BPF_CLASS(in->code) == BPF_STX)
			em_reg(t, OP_LGET, in->src);
		else
			em_push(t, in->imm);
		em_mem(t, st_of_size[sz], t->frame_region);
		return;
	}
	unsigned byte = (unsigned)(in->off + STACK_BYTES), sh = 8 * (byte % 8);
	uint64_t mask = bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
	/* slot = slot & ~(mask << sh) | (value & mask) << sh */
	if (bytes < 8) {
		em_slot(t, OP_LGET, byte / 8);
		em_push(t, (int64_t)~(mask << sh));
		em_op(t, OP_AND);
	}
	if (BPF_CLASS(in->code) == BPF_STX)
		em_reg(t, OP_LGET, in->src);
	else
		em_push(t, in->imm);
	if (bytes < 8) {
		em_push(t, (int64_t)mask);
		em_op(t, OP_AND);
		if (sh) {
			em_push(t, sh);
			em_op(t, OP_SHL);
		}
		em_op(t, OP_OR);
	}
	em_slot(t, OP_LSET, byte / 8);
}

static void translate_insn(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	if (t->fwd_skip[i])
		return note(t, "(read by the call below from the source)");
	if (t->nop[i])
		return note(t, "(nothing: only shift counts read it, and they take it mod 64)");
	switch (BPF_CLASS(in->code)) {
	case BPF_ALU:
	case BPF_ALU64:
		return emit_alu(t, in);
	case BPF_JMP:
	case BPF_JMP32:
		if (BPF_OP(in->code) == BPF_CALL)
			return emit_call(t, i);
		if (BPF_OP(in->code) == BPF_EXIT) {
			em_reg(t, OP_LGET, 0);
			if (t->framed) {
				/* pop the frame: the frame pointer word back to fb */
				em_push(t, 0);
				em_fp_addr(t, -STACK_BYTES);
				em_mem(t, OP_ST64, t->frame_region);
			}
			return em_op(t, OP_RET);
		}
		return emit_jmp(t, i);
	case BPF_LD:
		return emit_ld_imm64(t, i);
	case BPF_LDX:
		return emit_ldx(t, i);
	default:
		return emit_st(t, i);
	}
}

/* ---- pass 3: which registers are live after each instruction, for em_reg ---- */

#define REGS_CALL_CLOBBERS 0x3fu    /* r0..r5 */

/* The argument registers a call reads: an intrinsic's operands (emit_intrinsic pushes as
 * many), else r1..r5 (a function of this file; or a call that emit_call refuses).  Knowing
 * that "r1 = r7; call ld8u" leaves r2..r5 unread keeps values that die before the call from
 * living on around a loop through it. */
static unsigned call_reads(const struct tr *t, const struct bpf_insn *in)
{
	uint32_t imm = (uint32_t)in->imm;
	unsigned all = REGS_CALL_CLOBBERS & ~1u;
	if (in->src != 0 || (imm & CC_CALL_MASK) != CC_CALL_TAG)
		return all;
	unsigned opn = imm & 0xff, h = imm >> 8 & 0xffff;
	int n;
	if (opn == OP_LGET)
		return 0;                                  /* ar_arg */
	if (opn >= OP_COUNT || !intrinsic_ok((enum op)opn))
		return all;
	if (opn == OP_HCALL)
		n = h < t->n_hooks ? isa_sig_check(t->hook_sig[h]) : -1;
	else
		n = isa_op_info[opn].pop;
	return n >= 0 && n <= 5 ? (1u << (n + 1)) - 2 : all;
}

/* Registers instruction i reads and writes (bit r; r10 left out). */
static void use_def(const struct tr *t, uint32_t i, unsigned *use, unsigned *def)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code), x = BPF_SRC(in->code) == BPF_X;
	*use = *def = 0;
	if (t->nop[i])
		return;
	switch (cl) {
	case BPF_ALU:
	case BPF_ALU64:
		if (op != BPF_MOV)
			*use |= 1u << in->dst;
		if (x && op != BPF_NEG && op != BPF_END)
			*use |= 1u << in->src;
		*def = 1u << in->dst;
		break;
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT) {
			*use = 1;
		} else if (op == BPF_CALL) {
			*use = call_reads(t, in);
			*def = REGS_CALL_CLOBBERS;
		} else if (op != BPF_JA) {
			*use = 1u << in->dst | (x ? 1u << in->src : 0);
		}
		break;
	case BPF_LD:
		*def = 1u << in->dst;
		break;
	case BPF_LDX:
		*use = 1u << in->src;
		*def = 1u << in->dst;
		break;
	case BPF_STX:
		*use = 1u << in->src | 1u << in->dst;     /* dst: a pointer other than r10 */
		break;
	case BPF_ST:
		*use = 1u << in->dst;
		break;
	}
	*use &= (1u << BPF_FP) - 1;
	*def &= (1u << BPF_FP) - 1;
}

/* How many times the translation of instruction i reads register r (lget). */
static unsigned reads_of(const struct tr *t, uint32_t i, unsigned r)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code), x = BPF_SRC(in->code) == BPF_X;
	if (t->nop[i])
		return 0;
	switch (cl) {
	case BPF_ALU:
	case BPF_ALU64:
		if (op == BPF_MOV)
			return x && in->src == r;
		if (op == BPF_END)
			return in->dst != r ? 0 : x ? (unsigned)in->imm / 8 : in->imm == 64 ? 0 : 1;
		return (in->dst == r) + (x && op != BPF_NEG && in->src == r);
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_EXIT)
			return r == 0;
		if (op == BPF_CALL)
			return call_reads(t, in) >> r & 1;
		if (op == BPF_JA)
			return 0;
		return (in->dst == r) + (x && in->src == r);
	case BPF_LDX:
		return in->src == r;
	case BPF_STX:
		return (in->src == r) + (in->dst == r);
	case BPF_ST:
		return in->dst == r;
	}
	return 0;
}

/* Backward data flow over the function's control-flow graph, with a work list of
 * predecessors: each live_in only grows (at most 10 bits), so it ends after at most
 * n + 10 * edges steps. */
static int liveness(struct tr *t)
{
	uint32_t n = t->n, *npred = calloc(n + 1, sizeof *npred), *pred = NULL, *work = NULL;
	uint16_t *live_in = calloc(n, sizeof *live_in);
	uint8_t *queued = calloc(n, 1);
	int rc = -1;
	if (!npred || !live_in || !queued)
		goto out;
	/* predecessors in CSR form: npred[s+1] counts, then prefix sums, then fill */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t succ[2];
		if (t->target[i] == 2)
			continue;
		int ns = successors(t, i, succ);
		for (int j = 0; j < ns; j++)
			if (succ[j] < n)
				npred[succ[j] + 1]++;
	}
	for (uint32_t i = 0; i < n; i++)
		npred[i + 1] += npred[i];
	pred = malloc((npred[n] ? npred[n] : 1) * sizeof *pred);
	work = malloc(n * sizeof *work);
	uint32_t *fill = calloc(n, sizeof *fill);
	if (!pred || !work || !fill) {
		free(fill);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t succ[2];
		if (t->target[i] == 2)
			continue;
		int ns = successors(t, i, succ);
		for (int j = 0; j < ns; j++)
			if (succ[j] < n)
				pred[npred[succ[j]] + fill[succ[j]]++] = i;
	}
	free(fill);
	uint32_t top = 0;
	for (uint32_t i = 0; i < n; i++)
		if (t->target[i] != 2) {
			work[top++] = i;       /* the last slot is popped first */
			queued[i] = 1;
		}
	while (top) {
		uint32_t i = work[--top], succ[2];
		unsigned use, def, out = 0;
		queued[i] = 0;
		int ns = successors(t, i, succ);
		for (int j = 0; j < ns; j++)
			if (succ[j] < n)
				out |= live_in[succ[j]];
		use_def(t, i, &use, &def);
		t->live_out[i] = (uint16_t)out;
		uint16_t in = (uint16_t)(use | (out & ~def));
		if (in == live_in[i])
			continue;
		live_in[i] = in;
		for (uint32_t k = npred[i]; k < npred[i + 1]; k++)
			if (!queued[pred[k]]) {
				queued[pred[k]] = 1;
				work[top++] = pred[k];
			}
	}
	rc = 0;
out:
	free(npred);
	free(pred);
	free(work);
	free(live_in);
	free(queued);
	return rc;
}

/* ---- pass 3a': masks of shift counts ----
 *
 * C masks a variable shift count to keep the shift defined ("v |= b << (sh & 63)"); our
 * shifts take the count mod 64 themselves (isa/ops.def) and a 32-bit shift gets its own
 * "& 31" (emit_alu).  So an and with a constant that keeps the 6 low bits, whose result is
 * read only as shift counts, changes no result: it becomes nothing (t->nop), and the copy
 * clang put before it ("r2 = r9; r2 &= 63") can then share the source's local, which leaves
 * the shift reading the count's own local, as hand-written code does.
 *
 * Which results only shift counts read: a backward flow like liveness with two sets per
 * slot, the registers whose value a later instruction reads in full and the ones read as a
 * shift count; a register in the second and not the first is a count only.  Passes over the
 * slots in reverse until nothing changes (each set only grows: at most 20 bits a slot); a
 * function that has not settled after COUNT_MASK_PASSES keeps its masks. */
#define COUNT_MASK_PASSES 64

static int plan_count_masks(struct tr *t)
{
	uint32_t n = t->n;
	uint16_t *full_in = calloc(n + 1, sizeof *full_in), *cnt_in = calloc(n + 1, sizeof *cnt_in);
	uint16_t *full_out = calloc(n + 1, sizeof *full_out);
	if (!full_in || !cnt_in || !full_out) {
		free(full_in);
		free(cnt_in);
		free(full_out);
		return -1;
	}
	int settled = 0;
	for (int pass = 0; pass < COUNT_MASK_PASSES && !settled; pass++) {
		settled = 1;
		for (uint32_t i = n; i-- > 0;) {
			const struct bpf_insn *in = &t->in[i];
			uint32_t succ[2];
			unsigned use, def, fo = 0, co = 0;
			if (t->target[i] == 2)
				continue;
			int ns = successors(t, i, succ);
			for (int j = 0; j < ns; j++)
				if (succ[j] < n) {
					fo |= full_in[succ[j]];
					co |= cnt_in[succ[j]];
				}
			use_def(t, i, &use, &def);
			unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code), cnt_use = 0;
			if ((cl == BPF_ALU || cl == BPF_ALU64) && BPF_SRC(in->code) == BPF_X &&
			    (op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) && in->src != in->dst)
				cnt_use = 1u << in->src & use;
			uint16_t fi = (uint16_t)((use & ~cnt_use) | (fo & ~def));
			uint16_t ci = (uint16_t)(cnt_use | (co & ~def));
			full_out[i] = (uint16_t)fo;
			if (fi != full_in[i] || ci != cnt_in[i]) {
				full_in[i] = fi;
				cnt_in[i] = ci;
				settled = 0;
			}
		}
	}
	for (uint32_t i = 0; settled && i < n; i++) {
		const struct bpf_insn *in = &t->in[i];
		unsigned cl = BPF_CLASS(in->code);
		if (t->target[i] == 2 || (cl != BPF_ALU && cl != BPF_ALU64) ||
		    BPF_OP(in->code) != BPF_AND || BPF_SRC(in->code) != BPF_K ||
		    in->dst >= ALLOC_REGS || (in->imm & 63) != 63)
			continue;
		/* read after i only as a shift count (and read at all: a dead and stays as it is) */
		if (!(full_out[i] >> in->dst & 1)) {
			uint32_t succ[2];
			unsigned counted = 0;
			int ns = successors(t, i, succ);
			for (int j = 0; j < ns; j++)
				if (succ[j] < n)
					counted |= cnt_in[succ[j]];
			t->nop[i] = counted >> in->dst & 1;
		}
	}
	free(full_in);
	free(cnt_in);
	free(full_out);
	return 0;
}

/* ---- pass 3b: BPF registers onto locals ----
 *
 * A local per register makes each of clang's register copies an lget and an lset, and clang
 * copies freely: its BPF is two-address ("r0 = r2; r0 *= r0" to compute into r0) and its
 * allocator moves a loop's result back at the end of each iteration ("r3 = r0").  So each
 * value gets a local of its own instead, and the two ends of a copy share one where they
 * can, which makes the copy nothing at all.
 *
 * - Webs: the values of one register that reach the same reads are one web, found by a
 *   union-find over the points "r live into slot i" and "r live after slot i": a value flows
 *   from after i into each successor, and through i when i does not write r.
 * - Interference (Chaitin's rule): a write interferes with every other value live after it,
 *   except a copy's with its source (they are one value); the values live into the function
 *   (its parameters) interfere with one another.
 * - Coalescing: the source and destination webs of each copy, then the two webs of each
 *   two-address operation ("r += K" is one linc when they share a local, "r &= 255" after
 *   a byte load nothing), become one web when they do not interfere.  The emitter checks
 *   that the locals are the same before it leaves anything out.
 * - A greedy coloring gives each web a local: the parameters' webs keep theirs, the others
 *   take locals past the arguments (and the framed function's two), the stack slots follow.
 *
 * Work is bounded for any object: functions of more than ALLOC_MAX_SLOTS slots, more than
 * ALLOC_MAX_WEBS webs, or more locals than the ISA has keep a local per register (loc_in
 * stays NULL).
 */
#define ALLOC_MAX_SLOTS 32768
#define ALLOC_MAX_WEBS  1024
#define A_IN(i, r)   ((size_t)(i) * ALLOC_REGS + (r))
#define A_OUT(i, r)  (((size_t)n + (i)) * ALLOC_REGS + (r))

static uint32_t uf_find(uint32_t *par, uint32_t x)
{
	while (par[x] != x) {
		par[x] = par[par[x]];      /* path halving: no recursion, near-constant depth */
		x = par[x];
	}
	return x;
}

static void uf_union(uint32_t *par, uint32_t a, uint32_t b)
{
	a = uf_find(par, a);
	b = uf_find(par, b);
	if (a != b)
		par[b] = a;
}

struct webs {
	uint32_t n;                /* webs */
	size_t words;              /* 64-bit words per row of adj */
	uint64_t *adj;             /* n x n interference bits, kept for the root of each merge */
	uint32_t *par;             /* merged webs: union-find */
	int *pin;                  /* the parameter local a web must use, PIN_ENTRY for one
	                            * live into the function that is no parameter, or -1 */
};

/* A register read before any write (BPF's verifier refuses that; an object need not) reads
 * 0, as locals start: such a web keeps away from the parameters' locals. */
#define PIN_ENTRY (-2)

static int adjacent(const struct webs *w, uint32_t a, uint32_t b)
{
	return w->adj[a * w->words + b / 64] >> (b % 64) & 1;
}

static void interfere(struct webs *w, uint32_t a, uint32_t b)
{
	w->adj[a * w->words + b / 64] |= 1ull << (b % 64);
	w->adj[b * w->words + a / 64] |= 1ull << (a % 64);
}

/* Make webs a and b one, unless they interfere or are two parameters. */
static void coalesce(struct webs *w, uint32_t a, uint32_t b)
{
	a = uf_find(w->par, a);
	b = uf_find(w->par, b);
	if (a == b || adjacent(w, a, b) || (w->pin[a] >= 0 && w->pin[b] >= 0))
		return;
	w->par[b] = a;
	if (w->pin[a] == -1)
		w->pin[a] = w->pin[b];
	/* a's row and column take b's: every web that interfered with a part of the merged
	 * web interferes with its root */
	for (uint32_t k = 0; k < w->n; k++)
		if (adjacent(w, b, k))
			interfere(w, a, k);
}

static int is_copy(const struct bpf_insn *in)
{
	return in->code == (BPF_ALU64 | BPF_MOV | BPF_X) && in->src < ALLOC_REGS &&
	       in->src != in->dst;
}

static int alloc_locals(struct tr *t)
{
	uint32_t n = t->n;
	if (n == 0 || n > ALLOC_MAX_SLOTS)
		return 0;
	size_t n_nodes = 2 * (size_t)n * ALLOC_REGS;
	uint32_t *par = malloc(n_nodes * sizeof *par), *wid = malloc(n_nodes * sizeof *wid);
	uint16_t *live_in = calloc(n, sizeof *live_in);
	struct webs w = { 0 };
	int *color = NULL, rc = -1;
	uint8_t *need = NULL;
	if (!par || !wid || !live_in)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		unsigned use, def;
		if (t->target[i] == 2)
			continue;
		use_def(t, i, &use, &def);
		live_in[i] = (uint16_t)(use | (t->live_out[i] & ~def));
	}
	for (size_t x = 0; x < n_nodes; x++)
		par[x] = (uint32_t)x;
	for (uint32_t i = 0; i < n; i++) {
		unsigned use, def;
		uint32_t succ[2];
		if (t->target[i] == 2)
			continue;
		use_def(t, i, &use, &def);
		for (unsigned r = 0; r < ALLOC_REGS; r++)
			if ((t->live_out[i] >> r & 1) && !(def >> r & 1))
				uf_union(par, (uint32_t)A_OUT(i, r), (uint32_t)A_IN(i, r));
		int ns = successors(t, i, succ);
		for (int j = 0; j < ns; j++)
			for (unsigned r = 0; succ[j] < n && r < ALLOC_REGS; r++)
				if (live_in[succ[j]] >> r & 1)
					uf_union(par, (uint32_t)A_OUT(i, r), (uint32_t)A_IN(succ[j], r));
	}
	/* number the webs: the roots of the live points */
	memset(wid, 0xff, n_nodes * sizeof *wid);
	for (uint32_t i = 0; i < n; i++)
		for (unsigned r = 0; r < ALLOC_REGS; r++) {
			size_t pts[2] = { A_IN(i, r), A_OUT(i, r) };
			int live[2] = { live_in[i] >> r & 1, t->live_out[i] >> r & 1 };
			for (int k = 0; k < 2; k++) {
				if (!live[k])
					continue;
				uint32_t root = uf_find(par, (uint32_t)pts[k]);
				if (wid[root] != UINT32_MAX)
					continue;
				if (w.n == ALLOC_MAX_WEBS) {
					rc = 0;        /* too many: a local per register */
					goto out;
				}
				wid[root] = w.n++;
			}
		}
#define WEB(x) wid[uf_find(par, (uint32_t)(x))]
	w.words = (w.n + 63) / 64;
	w.adj = calloc(w.n * w.words + 1, sizeof *w.adj);
	w.par = malloc((w.n + 1) * sizeof *w.par);
	w.pin = malloc((w.n + 1) * sizeof *w.pin);
	color = malloc((w.n + 1) * sizeof *color);
	if (!w.adj || !w.par || !w.pin || !color)
		goto out;
	for (uint32_t k = 0; k < w.n; k++) {
		w.par[k] = k;
		w.pin[k] = -1;
		color[k] = -1;
	}
	/* the function's entry defines what is live there: the parameters in their locals */
	for (unsigned r = 0; r < ALLOC_REGS; r++) {
		if (!(live_in[0] >> r & 1))
			continue;
		w.pin[WEB(A_IN(0, r))] = r >= 1 && (int)r <= t->f->n_params ? (int)r - 1 : PIN_ENTRY;
		for (unsigned q = 0; q < r; q++)
			if (live_in[0] >> q & 1)
				interfere(&w, WEB(A_IN(0, r)), WEB(A_IN(0, q)));
	}
	for (uint32_t i = 0; i < n; i++) {
		unsigned use, def;
		if (t->target[i] == 2)
			continue;
		use_def(t, i, &use, &def);
		unsigned copy_src = is_copy(&t->in[i]) ? t->in[i].src : BPF_NREGS;
		for (unsigned d = 0; d < ALLOC_REGS; d++) {
			if (!(def >> d & 1) || !(t->live_out[i] >> d & 1))
				continue;
			for (unsigned r = 0; r < ALLOC_REGS; r++)
				if (r != d && (t->live_out[i] >> r & 1) && r != copy_src)
					interfere(&w, WEB(A_OUT(i, d)), WEB(A_OUT(i, r)));
		}
	}
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < n; i++) {
			const struct bpf_insn *in = &t->in[i];
			if (t->target[i] == 2 || !(t->live_out[i] >> in->dst & 1))
				continue;
			if (pass == 0 && is_copy(in))
				coalesce(&w, WEB(A_OUT(i, in->dst)), WEB(A_IN(i, in->src)));
			unsigned cl = BPF_CLASS(in->code);
			if (pass == 1 && (cl == BPF_ALU || cl == BPF_ALU64) && BPF_OP(in->code) != BPF_MOV)
				coalesce(&w, WEB(A_OUT(i, in->dst)), WEB(A_IN(i, in->dst)));
		}
	/* a web whose every write is a move the call below reads from its source
	 * (plan_forwarding) is never stored or read: it gets no local (color stays -1), so the
	 * function has no local that nothing uses (each costs a store in every call's prologue,
	 * and the JIT a register or a spill at every call).  The others are marked in need. */
	need = calloc(w.n + 1, 1);
	if (!need)
		goto out;
	for (unsigned r = 0; r < ALLOC_REGS; r++)
		if (live_in[0] >> r & 1)
			need[uf_find(w.par, WEB(A_IN(0, r)))] = 1;
	for (uint32_t i = 0; i < n; i++) {
		unsigned use, def;
		if (t->target[i] == 2)
			continue;
		use_def(t, i, &use, &def);
		for (unsigned d = 0; d < ALLOC_REGS; d++)
			if ((def >> d & 1) && (t->live_out[i] >> d & 1) &&
			    !(t->fwd_skip[i] && d == t->in[i].dst))
				need[uf_find(w.par, WEB(A_OUT(i, d)))] = 1;
		/* code no path reaches may read a register nothing wrote (a web with no
		 * definition, live nowhere reachable): it is still translated, so it needs a local */
		for (unsigned u = 0; !t->reach[i] && u < ALLOC_REGS; u++)
			if (use >> u & 1)
				need[uf_find(w.par, WEB(A_IN(i, u)))] = 1;
	}
	/* colors: 0 .. n_params-1 are the parameters' locals, the others follow the arguments */
	int n_colors = t->f->n_params;
	for (uint32_t k = 0; k < w.n; k++)
		if (w.par[k] == k && w.pin[k] >= 0)
			color[k] = w.pin[k];
	for (uint32_t k = 0; k < w.n; k++) {
		uint64_t used[ISA_MAX_LOCALS / 64 + 1] = { 0 };
		if (w.par[k] != k || color[k] >= 0 || !need[k])
			continue;
		for (uint32_t j = 0; j < w.n; j++) {
			int c = adjacent(&w, k, j) ? color[uf_find(w.par, j)] : -1;
			if (c >= 0)
				used[c / 64] |= 1ull << (c % 64);
		}
		int c = w.pin[k] == PIN_ENTRY ? t->f->n_params : 0;
		while (c < ISA_MAX_LOCALS && (used[c / 64] >> (c % 64) & 1))
			c++;
		if (c >= ISA_MAX_LOCALS) {
			rc = 0;
			goto out;
		}
		color[k] = c;
		if (c + 1 > n_colors)
			n_colors = c + 1;
	}
	unsigned base = (unsigned)t->f->n_args + (t->framed ? 2 : 0), n_slots = 0;
	for (unsigned s = 0; s < N_SLOTS; s++)
		n_slots += t->slot_local[s] != NO_LOCAL;
	unsigned n_locals = base + (unsigned)(n_colors - t->f->n_params) + n_slots;
	if (n_locals > ISA_MAX_LOCALS) {
		rc = 0;
		goto out;
	}
	t->loc_in = malloc((size_t)n * ALLOC_REGS);
	t->loc_out = malloc((size_t)n * ALLOC_REGS);
	if (!t->loc_in || !t->loc_out)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		for (unsigned r = 0; r < ALLOC_REGS; r++) {
			uint8_t *dst[2] = { &t->loc_in[A_IN(i, r)], &t->loc_out[A_IN(i, r)] };
			size_t pts[2] = { A_IN(i, r), A_OUT(i, r) };
			int live[2] = { live_in[i] >> r & 1, t->live_out[i] >> r & 1 };
			for (int k = 0; k < 2; k++) {
				int c = live[k] ? color[uf_find(w.par, WEB(pts[k]))] : -1;
				*dst[k] = c < 0 ? LOC_NONE : c < t->f->n_params ? (uint8_t)c :
				          (uint8_t)(base + (unsigned)(c - t->f->n_params));
			}
		}
#undef WEB
	/* the stack slots' locals after the webs' */
	t->n_locals = base + (unsigned)(n_colors - t->f->n_params);
	for (unsigned s = 0; s < N_SLOTS; s++)
		if (t->slot_local[s] != NO_LOCAL)
			t->slot_local[s] = (int)t->n_locals++;
	rc = 0;
out:
	if (rc != 0) {
		free(t->loc_in);
		free(t->loc_out);
		t->loc_in = t->loc_out = NULL;
	}
	free(par);
	free(wid);
	free(live_in);
	free(need);
	free(w.adj);
	free(w.par);
	free(w.pin);
	free(color);
	return rc;
}

/* Known bits: after instruction i, how many low bits dst's value can have (64: any).  Used
 * to leave out masks and extensions that cannot change a value: "r0 &= 255" after ar_ld8u,
 * the 32-bit extension of a JMP32 operand that a 32-bit operation made. */
static unsigned bits_of(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0;
}

static void update_bits(struct tr *t, uint32_t i)
{
	const struct bpf_insn *in = &t->in[i];
	unsigned cl = BPF_CLASS(in->code), op = BPF_OP(in->code), x = BPF_SRC(in->code) == BPF_X;
	uint8_t *z = t->zbits;
	if (t->nop[i])
		return;                 /* the value is as before: unmasked */
	switch (cl) {
	case BPF_ALU: {
		unsigned d = z[in->dst] < 32 ? z[in->dst] : 32;
		if (op == BPF_MOV)
			z[in->dst] = (uint8_t)(x ? (z[in->src] < 32 ? z[in->src] : 32)
			                         : bits_of((uint32_t)in->imm));
		else if (op == BPF_AND && !x)
			z[in->dst] = (uint8_t)(bits_of((uint32_t)in->imm) < d ? bits_of((uint32_t)in->imm) : d);
		else if (op == BPF_RSH || op == BPF_DIV)
			z[in->dst] = (uint8_t)d;
		else
			z[in->dst] = 32;
		break;
	}
	case BPF_ALU64:
		if (op == BPF_MOV)
			z[in->dst] = x ? z[in->src] : in->imm >= 0 ? (uint8_t)bits_of((uint64_t)in->imm) : 64;
		else if (op == BPF_AND && !x && in->imm >= 0)
			z[in->dst] = (uint8_t)(bits_of((uint64_t)in->imm) < z[in->dst] ?
			                       bits_of((uint64_t)in->imm) : z[in->dst]);
		else if (op == BPF_RSH || op == BPF_DIV)
			;          /* a logical right shift or unsigned division does not widen */
		else if (op == BPF_AND && !x)
			;          /* a negative mask keeps what it had */
		else
			z[in->dst] = 64;
		break;
	case BPF_LD:
		z[in->dst] = 64;
		break;
	case BPF_LDX:
		z[in->dst] = (uint8_t)(8 * bpf_size_bytes[BPF_SIZE(in->code) >> 3]);
		break;
	case BPF_JMP:
		if (op == BPF_CALL) {
			unsigned opn = (uint32_t)in->imm & 0xff;
			int intrinsic = in->src == 0 && ((uint32_t)in->imm & CC_CALL_MASK) == CC_CALL_TAG;
			memset(z, 64, 6);
			if (intrinsic && (opn == OP_LD8U || opn == OP_LD16U || opn == OP_LD32U))
				z[0] = opn == OP_LD8U ? 8 : opn == OP_LD16U ? 16 : 32;
		}
		break;
	}
}

/* Jump threading, the simple kind: a goto whose target starts a short straight block ending
 * in a jump or exit is replaced by a copy of that block (clang places loop bodies after the
 * loop test, so "x = ...; goto test" is every iteration's last step).  The copy's fall-through
 * needs a label: it becomes a branch target. */
#define COPY_MAX 6

static void plan_copies(struct tr *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct bpf_insn *in = &t->in[i];
		if (t->target[i] == 2 || in->code != (BPF_JMP | BPF_JA))
			continue;
		uint32_t to = (uint32_t)((int64_t)i + 1 + in->off);
		if (to == i + 1)
			continue;
		for (uint32_t k = to; k < t->n && k < to + COPY_MAX; k++) {
			const struct bpf_insn *b = &t->in[k];
			if (k == i || is_ld_imm64(b) || t->target[k] == 2)
				break;
			if (!is_jmp(b) || BPF_OP(b->code) == BPF_CALL)
				continue;
			if (BPF_OP(b->code) != BPF_JA && BPF_OP(b->code) != BPF_EXIT) {
				/* a label after the branch of a select shape would undo the select */
				if (k + 1 >= t->n || (k > 0 && is_select(t, k - 1)))
					break;
				t->target[k + 1] |= 1;
			}
			t->dup_end[i] = k + 1;
			break;
		}
	}
}

static void list_line(struct tr *t, const struct line *l)
{
	const char *text = l->text ? l->text : "";
	while (*text == ' ' || *text == '\t')
		text++;
	buf_printf(t->listing, "%s:%u: %s\n", l->file ? l->file : "?", l->line, text);
}

/* Whether function f takes a stack address: r10 read as a value (copied, added to, compared,
 * stored).  Such a function is "framed": its 512 bytes live in the frame region. */
static int frame_uses(const struct obj *o, const struct func *f)
{
	const struct section *sec = &o->secs[f->sec];
	for (uint32_t i = f->start; i < f->end; i++) {
		struct bpf_insn in;
		bpf_decode(sec->data + 8 * (size_t)i, &in);
		unsigned cl = BPF_CLASS(in.code), op = BPF_OP(in.code), x = BPF_SRC(in.code) == BPF_X;
		if (in.code == BPF_LD_IMM64) {
			i++;
			continue;
		}
		if ((cl == BPF_ALU || cl == BPF_ALU64) && x && in.src == BPF_FP && op != BPF_END)
			return 1;
		if (cl == BPF_STX && in.src == BPF_FP)
			return 1;
		if ((cl == BPF_JMP || cl == BPF_JMP32) && op != BPF_JA && op != BPF_CALL &&
		    op != BPF_EXIT && (in.dst == BPF_FP || (x && in.src == BPF_FP)))
			return 1;
	}
	return 0;
}

/* The prologue of a framed function: fb = the frame pointer word, r10 = fb + 512, and the
 * word moves past this frame (each return moves it back). */
static void frame_prologue(struct tr *t)
{
	em_push(t, 0);
	em_mem(t, OP_LD64, t->frame_region);
	em_push(t, STACK_BYTES);
	em_op(t, OP_ADD);
	asm_local(t->b, OP_LTEE, t->fp_local);
	note(t, "ltee fp");
	em_push(t, 0);
	em_op(t, OP_SWAP);
	em_mem(t, OP_ST64, t->frame_region);
	asm_local(t->b, OP_LGET, t->fp_local);
	em_push(t, FRAME_TAG);
	em_op(t, OP_OR);
	asm_local(t->b, OP_LSET, (unsigned)t->reg_local[BPF_FP]);
	note(t, "lset r10");
}

static void translate_func(struct tr *t)
{
	const struct line *last = NULL;
	uint32_t cur_line = 0;

	for (unsigned r = 0; r < BPF_NREGS; r++)
		t->reg_local[r] = NO_LOCAL;
	for (unsigned s = 0; s < N_SLOTS; s++)
		t->slot_local[s] = NO_LOCAL;
	/* r1..r5 carry the parameters; arguments past them (AR_EXPORT_ARGS) keep their locals,
	 * read only by ar_arg */
	for (int r = 1; r <= t->f->n_params; r++)
		t->reg_local[r] = r - 1;
	t->n_locals = (unsigned)t->f->n_args;
	t->framed = t->frame_region && frame_uses(t->o, t->f);
	if (t->framed) {
		t->fp_local = t->n_locals++;                   /* fb + 512 */
		t->reg_local[BPF_FP] = (int)t->n_locals++;     /* r10's value: the same, tagged */
	}

	for (uint32_t i = 0; i < t->n; i++)
		bpf_decode(t->sec->data + 8 * ((size_t)t->f->start + i), &t->in[i]);
	/* second halves of LD_IMM64 are not instructions: mark them so no jump lands there */
	for (uint32_t i = 0; i + 1 < t->n; i++)
		if (is_ld_imm64(&t->in[i]))
			t->target[++i] = 2;
	/* the first error of a function is the one to fix: what follows often only echoes it */
	for (uint32_t i = 0; i < t->n; i++) {
		if (check_insn(t, i) != 0)
			return;
		if (is_ld_imm64(&t->in[i]))
			i++;
	}
	plan_copies(t);
	plan_forwarding(t);
	if (flow(t) != 0 || plan_count_masks(t) != 0 || liveness(t) != 0 || alloc_locals(t) != 0)
		return (void)ERR(t, 0, "out of memory");
	t->pending = -1;
	memset(t->zbits, 64, sizeof t->zbits);
	if (t->n_locals > ISA_MAX_LOCALS)
		return (void)ERR(t, 0, "%u locals needed (at most %u)", t->n_locals, ISA_MAX_LOCALS);

	if (asm_func_begin(t->b, t->f->name, (unsigned)t->f->n_args, t->n_locals) < 0)
		return (void)ERR(t, 0, "function '%s': bad name or too many functions", t->f->name);
	for (uint32_t i = 0; i < t->n; i++)
		t->labels[i] = (t->target[i] & 1) ? asm_label_new(t->b) : 0;
	if (t->framed)
		frame_prologue(t);
	for (uint32_t i = 0; i < t->n; i++) {
		const struct bpf_insn *in = &t->in[i];
		uint32_t succ[2];
		if (t->target[i] == 2)
			continue;
		t->cur = i;
		t->note.len = 0;
		if (t->target[i] & 1) {
			/* paths join: nothing in flight, nothing known */
			flush(t);
			memset(t->zbits, 64, sizeof t->zbits);
			asm_label_bind(t->b, t->labels[i]);
		}
		const struct line *l = obj_line(t->o, t->f->sec, t->f->start + i);
		if (l && (l->slot < t->f->start || l->line == 0))
			l = NULL;          /* line 0: code the compiler made up, part of the line before */
		if (l && l->file && t->o->main_file && strcmp(l->file, t->o->main_file) == 0 &&
		    l->line != cur_line) {
			cur_line = l->line;
			asm_line(t->b, cur_line);
		}
		if (t->listing && l && (!last || last->line != l->line || last->file != l->file))
			list_line(t, l);
		last = l;
		int sel = is_select(t, i) ? 2 : is_rem(t, i) ? 3 : is_ext32(t, i) ? 1 : 0;
		if (sel == 1) {
			unsigned r = t->in[i].dst;
			emit_ext32(t, i);
			if (BPF_OP(t->in[i + 1].code) == BPF_ARSH)
				t->zbits[r] = t->zbits[r] <= 31 ? t->zbits[r] : 64;
			else
				t->zbits[r] = t->zbits[r] < 32 ? t->zbits[r] : 32;
		} else if (sel == 2) {
			emit_select(t, i);
			t->zbits[t->in[i].dst] = 1;
		} else if (sel == 3) {
			/* rX %= K; rA, dead after, is not written */
			t->cur = i + 3;
			em_reg(t, OP_LGET, t->in[i].src);
			em_push(t, t->in[i + 1].imm);
			em_op(t, OP_REMU);
			em_reg(t, OP_LSET, t->in[i].src);
			t->zbits[t->in[i].src] = 64;
		} else {
			translate_insn(t, i);
			update_bits(t, i);
		}
		if (t->listing) {
			struct buf bt = { 0 };
			bpf_format(&bt, in, i + 1 < t->n ? &t->in[i + 1] : NULL);
			buf_putc(&bt, 0);
			buf_putc(&t->note, 0);
			buf_printf(t->listing, "  %4u  %-34s %s\n", i, bt.oom ? "?" : (char *)bt.p,
			           t->note.oom ? "?" : (char *)t->note.p);
			buf_free(&bt);
		}
		if (sel) {
			for (uint32_t k = i + 1; t->listing && k < i + sel + 1; k++) {
				struct buf bt = { 0 };
				bpf_format(&bt, &t->in[k], NULL);
				buf_putc(&bt, 0);
				buf_printf(t->listing, "  %4u  %-34s (in the %s above)\n", k,
				           bt.oom ? "?" : (char *)bt.p,
				           sel == 1 ? "extension" : sel == 2 ? "comparison" : "remainder");
				buf_free(&bt);
			}
			i += (uint32_t)sel;
			continue;
		}
		/* an instruction that continues into the next slot must have one there */
		int ns = successors(t, i, succ);
		if (t->reach[i] && ns > 0 && succ[0] >= t->n &&
		    !(is_jmp(in) && BPF_OP(in->code) == BPF_JA))
			ERR(t, i, "control falls off the end of function %s", t->f->name);
		if (is_ld_imm64(in))
			i++;
	}
	flush(t);
	asm_func_end(t->b);
}

/* Regions and hooks from ar.h's lists: "name:access" and "name:sig", NUL-separated. */
static int declare_imports(struct tr *t, uint8_t *acc, const char **sigs)
{
	const struct obj *o = t->o;
	acc[ISA_R_ARGS] = ISA_ACC_RO;
	acc[ISA_R_OUT] = ISA_ACC_RW;
	acc[ISA_R_CONST] = ISA_ACC_RO;
	t->n_regions = ISA_R_FIRST_IMPORT;
	for (size_t p = 0; o->regions && p < o->regions_len; p += strlen(o->regions + p) + 1) {
		char *e = o->regions + p, *colon = strchr(e, ':');
		if (!*e)
			continue;
		unsigned a = 0;
		if (colon && strcmp(colon + 1, "ro") == 0)
			a = ISA_ACC_RO;
		else if (colon && strcmp(colon + 1, "rw") == 0)
			a = ISA_ACC_RW;
		if (!a || t->n_regions >= 256) {
			cc_error(t->d, o, UINT32_MAX, 0, ".ar.regions: bad entry '%.60s' (AR_IMPORT_REGIONS "
			         "takes X(name, ro) or X(name, rw), at most %u)", e, ISA_MAX_REGIONS);
			return -1;
		}
		*colon = 0;
		if (strcmp(e, VM_FRAME_REGION) == 0) {
			*colon = ':';
			cc_error(t->d, o, UINT32_MAX, 0, ".ar.regions: the name '%s' is reserved (the "
			         "frame region pncc declares itself)", VM_FRAME_REGION);
			return -1;
		}
		int idx = asm_region(t->b, e, a);
		*colon = ':';
		if (idx < 0)
			return -1;
		acc[t->n_regions++] = (uint8_t)a;
	}
	for (size_t p = 0; o->hooks && p < o->hooks_len; p += strlen(o->hooks + p) + 1) {
		char *e = o->hooks + p, *colon = strchr(e, ':');
		if (!*e)
			continue;
		if (!colon || isa_sig_check(colon + 1) < 0 || t->n_hooks >= ISA_MAX_HOOKS) {
			cc_error(t->d, o, UINT32_MAX, 0, ".ar.hooks: bad entry '%.60s' (AR_IMPORT_HOOKS "
			         "takes X(name, \"sig\") with a signature as in docs/isa.md)", e);
			return -1;
		}
		*colon = 0;
		int idx = asm_hook(t->b, e, colon + 1);
		*colon = ':';
		if (idx < 0)
			return -1;
		sigs[t->n_hooks++] = colon + 1;
	}
	return 0;
}

int cc_translate(const struct obj *o, const char *explain, uint8_t **seg, size_t *seg_len,
                 struct diag *d, struct buf *listing)
{
	struct tr t = { .o = o, .d = d };
	uint8_t acc[256] = { 0 };
	const char **sigs = calloc(ISA_MAX_HOOKS, sizeof *sigs);
	int64_t *const_off = calloc(o->n_secs ? o->n_secs : 1, sizeof *const_off);
	char err[300];
	int explained = 0;

	*seg = NULL;
	*seg_len = 0;
	t.b = asm_builder_new();
	if (!t.b || !sigs || !const_off) {
		cc_error(d, o, UINT32_MAX, 0, "out of memory");
		goto out;
	}
	t.region_acc = acc;
	t.hook_sig = sigs;
	t.const_off = const_off;
	if (declare_imports(&t, acc, sigs) != 0)
		goto finish;
	/* the frame region, after the declared ones (their numbers do not change), only when
	 * some function takes a stack address */
	for (uint32_t k = 0; k < o->n_funcs && !t.frame_region; k++)
		if (frame_uses(o, &o->funcs[k])) {
			if (t.n_regions >= ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS ||
			    asm_region(t.b, VM_FRAME_REGION, ISA_ACC_RW) < 0) {
				cc_error(d, o, UINT32_MAX, 0, "no region index left for the frame region");
				goto finish;
			}
			t.frame_region = t.n_regions;
		}
	for (uint32_t s = 0; s < o->n_secs; s++) {
		const struct section *sec = &o->secs[s];
		const_off[s] = -1;
		if (sec->kind != SEC_RODATA || !sec->data)
			continue;
		unsigned align = sec->align > 1 && sec->align <= 4096 &&
		                 !(sec->align & (sec->align - 1)) ? (unsigned)sec->align : 1;
		const_off[s] = asm_const(t.b, sec->data, sec->size, align);
	}
	if (o->main_file) {
		/* the file's own name: a segment's bytes (and so its id) do not depend on the
		 * directory it was built in */
		const char *src = strrchr(o->main_file, '/') ? strrchr(o->main_file, '/') + 1 : o->main_file;
		if (strlen(src) > ISA_MAX_NAME)
			src += strlen(src) - ISA_MAX_NAME;
		asm_source(t.b, src);
	}
	for (uint32_t k = 0; k < o->n_funcs; k++) {
		t.f = &o->funcs[k];
		t.sec = &o->secs[t.f->sec];
		t.n = t.f->end - t.f->start;
		t.in = calloc(t.n, sizeof *t.in);
		t.target = calloc(t.n, 1);
		t.reach = calloc(t.n, 1);
		t.kinds = calloc((size_t)t.n * N_KINDS, 1);
		t.labels = calloc(t.n, sizeof *t.labels);
		t.live_out = calloc(t.n, sizeof *t.live_out);
		t.dup_end = calloc(t.n, sizeof *t.dup_end);
		t.fwd_skip = calloc(t.n, 1);
		t.nop = calloc(t.n, 1);
		t.loc_in = t.loc_out = NULL;
		t.listing = explain && strcmp(explain, t.f->name) == 0 ? listing : NULL;
		if (t.listing) {
			explained = 1;
			buf_printf(listing, "function %s (%d argument%s), BPF instructions %u..%u of %s\n",
			           t.f->name, t.f->n_args, t.f->n_args == 1 ? "" : "s", t.f->start,
			           t.f->end - 1, t.sec->name);
		}
		if (t.in && t.target && t.reach && t.kinds && t.labels && t.live_out && t.dup_end && t.fwd_skip &&
		    t.nop)
			translate_func(&t);
		else
			cc_error(d, o, UINT32_MAX, 0, "out of memory");
		free(t.in);
		free(t.target);
		free(t.reach);
		free(t.kinds);
		free(t.labels);
		free(t.live_out);
		free(t.dup_end);
		free(t.fwd_skip);
		free(t.nop);
		free(t.loc_in);
		free(t.loc_out);
		if (d->n_errors)
			continue;
		if (t.f->exported && asm_export(t.b, t.f->name, t.f->index) < 0)
			cc_error(d, o, UINT32_MAX, 0, "cannot export '%s'", t.f->name);
	}
	if (explain && !explained)
		cc_error(d, o, UINT32_MAX, 0, "--explain: no function named '%s'", explain);
finish:
	if (d->n_errors == 0 && asm_builder_finish(t.b, seg, seg_len, err, sizeof err) != 0)
		cc_error(d, o, UINT32_MAX, 0, "%s", err);
out:
	buf_free(&t.note);
	asm_builder_free(t.b);
	free(sigs);
	free(const_off);
	return d->n_errors;
}

int cc_compile(const void *obj, size_t len, const char *name, const struct cc_opts *opts,
               uint8_t **seg, size_t *seg_len, char **diags, char **explain)
{
	struct diag d = { 0 };
	struct buf listing = { 0 };
	struct obj o;

	*seg = NULL;
	*seg_len = 0;
	*diags = NULL;
	if (explain)
		*explain = NULL;
	if (obj_read(&o, obj, len, name ? name : "object", &d) == 0)
		cc_translate(&o, opts ? opts->explain : NULL, seg, seg_len, &d, &listing);
	obj_free(&o);
	if (d.n_errors && *seg) {
		free(*seg);
		*seg = NULL;
		*seg_len = 0;
	}
	if (d.text.len)
		*diags = buf_take_str(&d.text);
	buf_free(&d.text);
	if (explain && listing.len)
		*explain = buf_take_str(&listing);
	buf_free(&listing);
	return d.n_errors;
}
