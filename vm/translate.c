/* translate.c: verified stack bytecode -> the interpreter's three-address slot code.
 *
 * The verifier proved the stack depth at every instruction, so stack position k of a function
 * always lives in frame slot n_locals + k ("home(k)") and no run-time stack pointer is needed.
 * Within a basic block the translator keeps a virtual stack whose entries may be lazy: a pushed
 * local or constant emits nothing, and the instruction that consumes it reads the local's slot
 * or takes the constant as an immediate.  A result that is immediately stored to a local is
 * written there directly.  At block boundaries (branch targets, branches, calls) every entry is
 * materialised in its home slot, so all paths into a block agree on where values are.
 *
 * Invariant: an entry of kind SLOT always lives in its own home slot; only lazy entries (LOCAL,
 * CONST) may be duplicated or permuted freely.  Before a local is overwritten, lazy entries
 * that refer to it are materialised.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm_int.h"

enum vkind { V_SLOT, V_LOCAL, V_CONST };
struct ventry {
	enum vkind kind;
	int64_t v;                     /* local index or constant */
};

struct fixup { uint32_t x, target_pc; };

struct tr {
	const struct isa_seg *seg;
	const struct isa_func *f;
	struct xinsn *code;
	uint32_t *pcs;
	uint32_t n, cap;
	struct ventry *vs;
	int depth;
	int n_locals;
	uint32_t pc;                   /* bytecode pc being translated */
	int32_t last_val;              /* index of the last emitted insn if it only wrote fp[a] */
	struct fixup *fix;
	uint32_t n_fix;
	int failed;
};

static int home(const struct tr *t, int k) { return t->n_locals + k; }

static uint32_t emit(struct tr *t, enum xop op, int32_t a, int32_t b, int32_t c, int64_t imm)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 64;
		struct xinsn *code = realloc(t->code, cap * sizeof *code);
		uint32_t *pcs = code ? realloc(t->pcs, cap * sizeof *pcs) : NULL;
		if (code)
			t->code = code;
		if (!code || !pcs) {
			t->failed = 1;
			t->n = 0;      /* keep going harmlessly; the result is thrown away */
			return 0;
		}
		t->pcs = pcs;
		t->cap = cap;
	}
	uint32_t i = t->n++;
	t->code[i] = (struct xinsn){ .op = op, .a = a, .b = b, .c = c, .imm = imm };
	t->pcs[i] = t->pc;
	t->last_val = -1;
	return i;
}

/* Emit an instruction whose only effect is writing fp[a] (so a later lset may retarget it). */
static void emit_val(struct tr *t, enum xop op, int32_t a, int32_t b, int32_t c, int64_t imm)
{
	uint32_t i = emit(t, op, a, b, c, imm);
	t->last_val = (int32_t)i;
}

static void materialize(struct tr *t, int k)
{
	struct ventry *e = &t->vs[k];
	if (e->kind == V_LOCAL)
		emit(t, X_MOV, home(t, k), (int32_t)e->v, 0, 0);
	else if (e->kind == V_CONST)
		emit(t, X_MOVI, home(t, k), 0, 0, e->v);
	e->kind = V_SLOT;
}

static void flush_all(struct tr *t)
{
	for (int k = 0; k < t->depth; k++)
		materialize(t, k);
}

static int all_materialized(const struct tr *t)
{
	for (int k = 0; k < t->depth; k++)
		if (t->vs[k].kind != V_SLOT)
			return 0;
	return 1;
}

/* Before local x changes: entries below position `below` that read it lazily get their value now. */
static void flush_local(struct tr *t, int x, int below)
{
	for (int k = 0; k < below; k++)
		if (t->vs[k].kind == V_LOCAL && t->vs[k].v == x)
			materialize(t, k);
}

/* The slot an entry's value can be read from (constants are materialised first). */
static int32_t slot_of(struct tr *t, int k)
{
	if (t->vs[k].kind == V_CONST)
		materialize(t, k);
	return t->vs[k].kind == V_LOCAL ? (int32_t)t->vs[k].v : home(t, k);
}

static void push(struct tr *t, enum vkind kind, int64_t v)
{
	t->vs[t->depth++] = (struct ventry){ kind, v };
}

/* ---- mapping ISA opcodes to the slot code ---- */

static int xbin_of(enum op op, enum xop *rr)
{
	switch (op) {
#define M(o) case OP_##o: *rr = X_##o##_RR; return 1;
	M(ADD) M(SUB) M(MUL) M(AND) M(OR) M(XOR) M(SHL) M(SHRU) M(SHRS) M(ROTL) M(ROTR)
	M(EQ) M(NE) M(LTS) M(LTU) M(LES) M(LEU) M(GTS) M(GTU) M(GES) M(GEU)
#undef M
	default: return 0;
	}
}

static int commutes(enum op op)
{
	return op == OP_ADD || op == OP_MUL || op == OP_AND || op == OP_OR || op == OP_XOR ||
	       op == OP_EQ || op == OP_NE;
}

/* Comparison with its operands swapped: a < b  ==  b > a. */
static enum op mirror(enum op op)
{
	switch (op) {
	case OP_LTS: return OP_GTS; case OP_GTS: return OP_LTS;
	case OP_LTU: return OP_GTU; case OP_GTU: return OP_LTU;
	case OP_LES: return OP_GES; case OP_GES: return OP_LES;
	case OP_LEU: return OP_GEU; case OP_GEU: return OP_LEU;
	case OP_JLTS: return OP_JGTS; case OP_JGTS: return OP_JLTS;
	case OP_JLTU: return OP_JGTU; case OP_JGTU: return OP_JLTU;
	case OP_JLES: return OP_JGES; case OP_JGES: return OP_JLES;
	case OP_JLEU: return OP_JGEU; case OP_JGEU: return OP_JLEU;
	default: return op;        /* eq, ne and the non-comparisons */
	}
}

/* Conditional branch ops in XCC order, so X_J<cc>_RR = X_JEQ_RR + 4 * index. */
static int jcc_index(enum op op)
{
	switch (op) {
	case OP_JEQ: return 0; case OP_JNE: return 1; case OP_JLTS: return 2; case OP_JLTU: return 3;
	case OP_JLES: return 4; case OP_JLEU: return 5; case OP_JGTS: return 6; case OP_JGTU: return 7;
	case OP_JGES: return 8; case OP_JGEU: return 9;
	default: return -1;
	}
}
_Static_assert(X_JNE_RR == X_JEQ_RR + 4 && X_JGEU_RR == X_JEQ_RR + 36, "XCC order");

static void branch_fixup(struct tr *t, uint32_t x, int64_t rel)
{
	struct fixup *f = realloc(t->fix, (t->n_fix + 1) * sizeof *f);
	if (!f) {
		t->failed = 1;
		return;
	}
	t->fix = f;
	t->fix[t->n_fix++] = (struct fixup){ x, (uint32_t)((int64_t)t->pc + rel) };
}

/* Two-operand arithmetic and comparisons.  A constant operand becomes the immediate of the
 * _RI form; a constant on the left works too when the operation commutes or mirrors. */
static void binop(struct tr *t, enum op op)
{
	int k = t->depth - 2;
	struct ventry e1 = t->vs[k], e2 = t->vs[k + 1];
	enum xop rr = X_ADD_RR;
	int kv = -1;                       /* position of the non-constant operand of an _RI form */
	int64_t imm = 0;
	if (e2.kind == V_CONST) {
		kv = k;
		imm = e2.v;
	} else if (e1.kind == V_CONST && (commutes(op) || mirror(op) != op)) {
		op = mirror(op);
		kv = k + 1;
		imm = e1.v;
	}
	xbin_of(op, &rr);
	/* shl 32; shru 32, how pncc zero-extends a 32-bit value: one AND_RI instead of two
	 * dispatches.  last_val is -1 at a branch target, so no path enters between the two. */
	int32_t last = t->last_val;
	if (op == OP_SHRU && kv == k && imm == 32 && e1.kind == V_SLOT && last >= 0 &&
	    last == (int32_t)t->n - 1 && t->code[last].op == X_SHL_RI &&
	    t->code[last].imm == 32 && t->code[last].a == home(t, k)) {
		t->code[last].op = X_AND_RI;
		t->code[last].imm = 0xffffffff;
		t->depth -= 2;
		push(t, V_SLOT, 0);
		return;
	}
	if (kv >= 0) {
		int32_t b = slot_of(t, kv);
		t->depth -= 2;
		emit_val(t, rr + 1, home(t, k), b, 0, imm);   /* _RI follows _RR */
	} else {
		int32_t b = slot_of(t, k), c = slot_of(t, k + 1);
		t->depth -= 2;
		emit_val(t, rr, home(t, k), b, c, 0);
	}
	push(t, V_SLOT, 0);
}

static void divop(struct tr *t, enum op op)
{
	int k = t->depth - 2;
	struct ventry e2 = t->vs[k + 1];
	int is_signed = op == OP_DIVS || op == OP_REMS;
	enum xop rr = op == OP_DIVS ? X_DIVS_RR : op == OP_DIVU ? X_DIVU_RR :
	              op == OP_REMS ? X_REMS_RR : X_REMU_RR;
	enum xop ri = op == OP_DIVS ? X_DIVS_RI : op == OP_DIVU ? X_DIVU_RI :
	              op == OP_REMS ? X_REMS_RI : X_REMU_RI;
	if (e2.kind == V_CONST && e2.v != 0 && !(is_signed && e2.v == -1)) {
		uint64_t d = (uint64_t)e2.v;
		int32_t b = slot_of(t, k);
		t->depth -= 2;
		if (!is_signed && (d & (d - 1)) == 0) {        /* unsigned by a power of two */
			if (op == OP_DIVU)
				emit_val(t, X_SHRU_RI, home(t, k), b, 0, __builtin_ctzll(d));
			else
				emit_val(t, X_AND_RI, home(t, k), b, 0, (int64_t)(d - 1));
		} else {
			emit_val(t, ri, home(t, k), b, 0, e2.v);
		}
	} else {
		int32_t b = slot_of(t, k), c = slot_of(t, k + 1);
		t->depth -= 2;
		emit_val(t, rr, home(t, k), b, c, 0);
	}
	push(t, V_SLOT, 0);
}

static void unop(struct tr *t, enum xop xop)
{
	int k = t->depth - 1;
	int32_t b = slot_of(t, k);
	t->depth--;
	emit_val(t, xop, home(t, k), b, 0, 0);
	push(t, V_SLOT, 0);
}

/* Store the popped top entry into local x. */
static void store_local(struct tr *t, int x, int keep)
{
	int k = t->depth - 1;
	struct ventry e = t->vs[k];
	if (e.kind == V_LOCAL && e.v == x) {              /* lget x; lset x: nothing to move */
		t->depth -= !keep;
		return;
	}
	uint32_t before = t->n;
	int32_t last = t->last_val;
	flush_local(t, x, k);
	if (e.kind == V_SLOT && last >= 0 && t->n == before && t->code[last].a == home(t, k)) {
		t->code[last].a = x;                          /* compute straight into the local */
		t->last_val = -1;
	} else if (e.kind == V_CONST) {
		emit(t, X_MOVI, x, 0, 0, e.v);
	} else {
		emit(t, X_MOV, x, slot_of(t, k), 0, 0);
	}
	if (keep)
		t->vs[k] = (struct ventry){ V_LOCAL, x };
	else
		t->depth--;
}

static void branch(struct tr *t, const struct isa_insn *in)
{
	int back = (int64_t)t->pc + in->imm <= (int64_t)t->pc;
	uint32_t x;
	if (in->op == OP_JMP) {
		flush_all(t);
		x = emit(t, back ? X_JMPB : X_JMP, 0, 0, 0, 0);
	} else if (in->op == OP_JZ || in->op == OP_JNZ) {
		int k = t->depth - 1;
		int32_t b = slot_of(t, k);
		t->depth--;
		flush_all(t);
		enum xop op = in->op == OP_JZ ? (back ? X_JZB : X_JZ) : (back ? X_JNZB : X_JNZ);
		x = emit(t, op, 0, b, 0, 0);
	} else {
		enum op op = in->op;
		int k = t->depth - 2;
		int kv = -1;                   /* as in binop: the non-constant operand of _RI */
		int64_t imm = 0;
		if (t->vs[k + 1].kind == V_CONST) {
			kv = k;
			imm = t->vs[k + 1].v;
		} else if (t->vs[k].kind == V_CONST) {
			op = mirror(op);
			kv = k + 1;
			imm = t->vs[k].v;
		}
		enum xop base = X_JEQ_RR + 4 * jcc_index(op);
		int32_t last = t->last_val;
		if (kv >= 0) {
			/* ld8u r; push c; jeq/jne (forward): one handler for the scanning loops of
			 * grep-like code.  Backward ones would need a fuel check too: not fused. */
			if ((op == OP_JEQ || op == OP_JNE) && !back && t->vs[kv].kind == V_SLOT &&
			    last >= 0 && last == (int32_t)t->n - 1 && t->code[last].op == X_LD8U &&
			    t->code[last].a == home(t, kv) && t->code[last].imm == 0) {
				t->depth -= 2;
				if (all_materialized(t)) {
					struct xinsn *ld = &t->code[last];
					ld->op = op == OP_JEQ ? X_LD8U_JEQ_I : X_LD8U_JNE_I;
					ld->imm = imm;
					t->last_val = -1;
					branch_fixup(t, last, in->imm);
					return;
				}
				t->depth += 2;
			}
			int32_t b = slot_of(t, kv);
			t->depth -= 2;
			flush_all(t);
			x = emit(t, base + (back ? 3 : 1), 0, b, 0, imm);
		} else {
			int32_t b = slot_of(t, k), c = slot_of(t, k + 1);
			t->depth -= 2;
			flush_all(t);
			x = emit(t, base + (back ? 2 : 0), 0, b, c, 0);
		}
	}
	branch_fixup(t, x, in->imm);
}

/* Memory and bulk operations read their n operands from consecutive home slots. */
static int32_t operands_home(struct tr *t, int n)
{
	for (int k = t->depth - n; k < t->depth; k++)
		materialize(t, k);
	t->depth -= n;
	return home(t, t->depth);
}

static void load(struct tr *t, enum xop xop, int region)
{
	int k = t->depth - 1;
	int32_t last = t->last_val;
	int32_t b;
	int64_t disp = 0;
	if (t->vs[k].kind == V_SLOT && last >= 0 && last == (int32_t)t->n - 1 &&
	    t->code[last].op == X_ADD_RI && t->code[last].a == home(t, k)) {
		/* push c; add; ld: fold the addition into the load's displacement */
		b = t->code[last].b;
		disp = t->code[last].imm;
		t->n--;
	} else {
		b = slot_of(t, k);
	}
	t->depth--;
	emit_val(t, xop, home(t, k), b, region, disp);
	push(t, V_SLOT, 0);
}

static void translate_insn(struct tr *t, const struct isa_insn *in)
{
	int k = t->depth - 1;              /* top of the stack before the instruction */
	enum xop xop;
	switch ((enum op)in->op) {
	case OP_NOP: break;
	case OP_PUSHI8: case OP_PUSHI32: case OP_PUSHI64: push(t, V_CONST, in->imm); break;
	case OP_DROP: t->depth--; break;
	case OP_DUP:
		if (t->vs[k].kind != V_SLOT) {
			push(t, t->vs[k].kind, t->vs[k].v);
		} else {
			emit_val(t, X_MOV, home(t, k + 1), home(t, k), 0, 0);
			push(t, V_SLOT, 0);
		}
		break;
	case OP_OVER:
		if (t->vs[k - 1].kind != V_SLOT) {
			push(t, t->vs[k - 1].kind, t->vs[k - 1].v);
		} else {
			emit_val(t, X_MOV, home(t, k + 1), home(t, k - 1), 0, 0);
			push(t, V_SLOT, 0);
		}
		break;
	case OP_SWAP: {
		struct ventry x = t->vs[k - 1], y = t->vs[k];
		if (x.kind == V_SLOT && y.kind == V_SLOT) {
			emit(t, X_XSWAP, home(t, k - 1), home(t, k), 0, 0);
		} else if (x.kind == V_SLOT) {
			emit(t, X_MOV, home(t, k), home(t, k - 1), 0, 0);
			t->vs[k - 1] = y; t->vs[k] = x;
		} else if (y.kind == V_SLOT) {
			emit(t, X_MOV, home(t, k - 1), home(t, k), 0, 0);
			t->vs[k - 1] = y; t->vs[k] = x;
		} else {
			t->vs[k - 1] = y; t->vs[k] = x;
		}
		break;
	}
	case OP_ROT: {
		struct ventry a = t->vs[k - 2], b = t->vs[k - 1], c = t->vs[k];
		if (a.kind != V_SLOT && b.kind != V_SLOT && c.kind != V_SLOT) {
			t->vs[k - 2] = b; t->vs[k - 1] = c; t->vs[k] = a;
		} else {
			materialize(t, k - 2); materialize(t, k - 1); materialize(t, k);
			emit(t, X_XROT, home(t, k - 2), 0, 0, 0);
		}
		break;
	}
	case OP_LGET: push(t, V_LOCAL, in->a); break;
	case OP_LSET: store_local(t, in->a, 0); break;
	case OP_LTEE: store_local(t, in->a, 1); break;
	case OP_LINC:
		flush_local(t, in->a, t->depth);
		emit(t, X_ADD_RI, in->a, in->a, 0, in->imm);
		break;
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_AND: case OP_OR: case OP_XOR:
	case OP_SHL: case OP_SHRU: case OP_SHRS: case OP_ROTL: case OP_ROTR:
	case OP_EQ: case OP_NE: case OP_LTS: case OP_LTU: case OP_LES: case OP_LEU:
	case OP_GTS: case OP_GTU: case OP_GES: case OP_GEU:
		binop(t, in->op);
		break;
	case OP_DIVS: case OP_DIVU: case OP_REMS: case OP_REMU: divop(t, in->op); break;
	case OP_NEG: unop(t, X_NEG); break;
	case OP_NOT: unop(t, X_NOT); break;
	case OP_CLZ: unop(t, X_CLZ); break;
	case OP_CTZ: unop(t, X_CTZ); break;
	case OP_POPCNT: unop(t, X_POPCNT); break;
	case OP_SEXT8: unop(t, X_SEXT8); break;
	case OP_SEXT16: unop(t, X_SEXT16); break;
	case OP_SEXT32: unop(t, X_SEXT32); break;
	case OP_EQZ: unop(t, X_EQZ); break;
	case OP_SELECT: {
		int32_t va = slot_of(t, k - 2), vb = slot_of(t, k - 1), vc = slot_of(t, k);
		t->depth -= 3;
		emit_val(t, X_SELECT, home(t, k - 2), vb, vc, va);
		push(t, V_SLOT, 0);
		break;
	}
	case OP_JMP: case OP_JZ: case OP_JNZ: case OP_JEQ: case OP_JNE: case OP_JLTS: case OP_JLTU:
	case OP_JLES: case OP_JLEU: case OP_JGTS: case OP_JGTU: case OP_JGES: case OP_JGEU:
		branch(t, in);
		break;
	case OP_CALL: {
		unsigned n = t->seg->funcs[in->imm].n_args;
		flush_all(t);
		t->depth -= (int)n;
		emit(t, X_CALL, home(t, t->depth), 0, 0, in->imm);
		push(t, V_SLOT, 0);
		break;
	}
	case OP_HCALL: {
		int n = isa_sig_check(t->seg->hooks[in->imm].sig);
		flush_all(t);
		t->depth -= n;
		emit(t, X_HCALL, home(t, t->depth), 0, 0, in->imm);
		push(t, V_SLOT, 0);
		break;
	}
	case OP_RET:
		if (t->vs[k].kind == V_CONST)
			emit(t, X_RETI, 0, 0, 0, t->vs[k].v);
		else
			emit(t, X_RET, 0, slot_of(t, k), 0, 0);
		t->depth--;
		break;
	case OP_TRAP: emit(t, X_TRAP, 0, 0, 0, in->imm); break;
	case OP_LD8U: load(t, X_LD8U, in->a); break;
	case OP_LD8S: load(t, X_LD8S, in->a); break;
	case OP_LD16U: load(t, X_LD16U, in->a); break;
	case OP_LD16S: load(t, X_LD16S, in->a); break;
	case OP_LD32U: load(t, X_LD32U, in->a); break;
	case OP_LD32S: load(t, X_LD32S, in->a); break;
	case OP_LD64: load(t, X_LD64, in->a); break;
	case OP_ST8: case OP_ST16: case OP_ST32: case OP_ST64: {
		xop = in->op == OP_ST8 ? X_ST8 : in->op == OP_ST16 ? X_ST16 :
		      in->op == OP_ST32 ? X_ST32 : X_ST64;
		if (in->a == ISA_R_OUT)
			xop = xop + 1;                            /* the _OUT variant follows */
		int32_t a = slot_of(t, k - 1), b = slot_of(t, k);
		t->depth -= 2;
		emit(t, xop, a, b, in->a, 0);
		break;
	}
	case OP_RLEN:
		emit_val(t, in->a == ISA_R_OUT ? X_RLEN_OUT : X_RLEN, home(t, t->depth), 0, in->a, 0);
		push(t, V_SLOT, 0);
		break;
	case OP_CAS: case OP_FADD: case OP_COPY: case OP_FILL: case OP_CMP: case OP_FINDB:
	case OP_FINDS: case OP_FINDSI: case OP_FINDSET: case OP_OUTPUT: case OP_OUTB: case OP_OUTQ: {
		static const enum xop bulk[OP_COUNT] = {
			[OP_CAS] = X_CAS, [OP_FADD] = X_FADD, [OP_COPY] = X_COPY, [OP_FILL] = X_FILL,
			[OP_CMP] = X_CMP, [OP_FINDB] = X_FINDB, [OP_FINDS] = X_FINDS,
			[OP_FINDSI] = X_FINDSI, [OP_FINDSET] = X_FINDSET, [OP_OUTPUT] = X_OUTPUT,
			[OP_OUTB] = X_OUTB, [OP_OUTQ] = X_OUTQ,
		};
		const struct isa_op_info *oi = &isa_op_info[in->op];
		/* emit, not emit_val: fp[a] is an operand too, so the result cannot be retargeted */
		int32_t a = operands_home(t, oi->pop);
		emit(t, bulk[in->op], a, in->b, in->a, 0);
		if (oi->push)
			push(t, V_SLOT, 0);
		break;
	}
	case OP_COUNT:
		break;
	}
}

static int translate_func(struct vm_prog *prog, uint32_t fi, char *err, size_t errlen)
{
	const struct isa_func *f = &prog->seg->funcs[fi];
	struct xfunc *xf = &prog->funcs[fi];
	struct tr t = { .seg = prog->seg, .f = f, .n_locals = f->n_locals, .last_val = -1 };
	int16_t *depth = malloc(f->code_len * sizeof *depth);
	uint8_t *target = calloc(f->code_len, 1);
	int32_t *pc2x = malloc(f->code_len * sizeof *pc2x);
	t.vs = malloc(((size_t)f->max_stack + 1) * sizeof *t.vs);
	int rc = -VM_ENOMEM;
	if (!depth || !target || !pc2x || !t.vs)
		goto out;
	rc = -VM_EVERIFY;
	if (isa_verify_func(prog->seg, fi, depth, NULL, err, errlen) != 0)
		goto out;

	struct isa_insn in;
	for (uint32_t pc = 0; pc < f->code_len; pc += in.len) {
		isa_decode(f->code, f->code_len, pc, &in);
		if (depth[pc] >= 0 && (isa_op_info[in.op].flags & (OPF_BRANCH | OPF_JUMP)))
			target[pc + in.imm] = 1;
	}
	int falls_in = 0;                  /* does the previous instruction fall through? */
	for (uint32_t pc = 0; pc < f->code_len; pc += in.len) {
		isa_decode(f->code, f->code_len, pc, &in);
		pc2x[pc] = -1;
		if (depth[pc] < 0) {           /* unreachable: nothing to run */
			falls_in = 0;
			continue;
		}
		if (target[pc] || !falls_in) {
			if (falls_in)
				flush_all(&t);
			t.depth = depth[pc];
			for (int k = 0; k < t.depth; k++)
				t.vs[k] = (struct ventry){ V_SLOT, 0 };
			t.last_val = -1;
			pc2x[pc] = (int32_t)t.n;
		}
		t.pc = pc;
		translate_insn(&t, &in);
		falls_in = !(isa_op_info[in.op].flags & (OPF_JUMP | OPF_END));
	}
	if (t.failed) {
		rc = -VM_ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < t.n_fix; i++) {
		struct xinsn *x = &t.code[t.fix[i].x];
		int32_t to = pc2x[t.fix[i].target_pc];
		x->d = to - (int32_t)t.fix[i].x;
	}
	xf->code = t.code;
	xf->pcs = t.pcs;
	xf->n_code = t.n;
	xf->n_slots = (uint32_t)f->n_locals + f->max_stack;
	xf->n_args = f->n_args;
	xf->n_locals = f->n_locals;
	t.code = NULL;
	t.pcs = NULL;
	rc = 0;
out:
	if (rc == -VM_ENOMEM)
		snprintf(err, errlen, "translate: out of memory");
	free(t.code);
	free(t.pcs);
	free(t.vs);
	free(t.fix);
	free(depth);
	free(target);
	free(pc2x);
	return rc;
}

int vm_translate(struct vm_prog *prog, char *err, size_t errlen)
{
	prog->funcs = calloc(prog->seg->n_funcs, sizeof *prog->funcs);
	if (!prog->funcs) {
		snprintf(err, errlen, "translate: out of memory");
		return -VM_ENOMEM;
	}
	for (uint32_t i = 0; i < prog->seg->n_funcs; i++) {
		int rc = translate_func(prog, i, err, errlen);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- superinstructions (interpreter only) ----
 * A pair of adjacent xinsns x, y becomes one dispatch: x's op is replaced by the fused op,
 * whose handler does x's work, then y's (reading y's fields), and continues after y.  y stays
 * where it is, so displacements and the pcs table are unchanged, and a trap in the second
 * half is reported at y's pc.  Only when nothing jumps or returns to y.  A triple x, y, z
 * (ADD_INC_J, MULI_INC_J) works the same way, with z in place too.  The pairs are the
 * ones that measured frequent (docs/interpreter.md): the step and test of a counted loop, and
 * a loaded byte going straight into arithmetic. */

_Static_assert(X_ADDI_JGEU_RIB == X_ADDI_JEQ_RR + 39 && X_ADDI_JMPB == X_ADDI_JEQ_RR + 40,
               "ADDI_J order follows XCC");
_Static_assert(X_LD8U_GEU_RI - X_LD8U_ADD_RR == X_GEU_RI - X_ADD_RR, "LD8U_ order follows XBIN");
_Static_assert(X_LD64 - X_LD8U == 6 && X_ADDR_LD64 - X_LDB_LD8U == 13, "LDB_, ADDR_ follow XLD");
_Static_assert(X_MOV_JGEU_RIB == X_MOV_JEQ_RR + 39 && X_MOV_JZ == X_MOV_JEQ_RR + 40 &&
               X_JNZB - X_JZ == 3 && X_MOV_JNZB - X_MOV_JZ == 3 && X_JZB == X_JZ + 1 &&
               X_MOV_JZB == X_MOV_JZ + 1, "MOV_J order follows XCC, then JZ JZB JNZ JNZB");

_Static_assert(X_INC_JGEU_RIB == X_INC_JEQ_RRB + 19 && X_ADD_INC_JEQ_RRB == X_INC_JGEU_RIB + 1 &&
               X_MULI_INC_JGEU_RIB == X_ADD_INC_JEQ_RRB + 39,
               "INC_J order follows XCC; then ADD_, MULI_ _RRB and _RIB per XCC");

_Static_assert(X_MUL_INC_JEQ_RRB == X_MULI_INC_JGEU_RIB + 1 &&
               X_ADDI_LD8U == X_MUL_INC_JGEU_RIB + 1 && X_ADDI_LD64 == X_ADDI_LD8U + 6 &&
               X_SHLI_ADDR_LD8U == X_ADDI_LD64 + 1 && X_SHLI_ADDR_LD64 == X_SHLI_ADDR_LD8U + 6 &&
               X_ANDI_JZ == X_SHLI_ADDR_LD64 + 1,
               "MUL_INC_J as INC_J; ADDI_ and SHLI_ADDR_ follow XLD; ANDI_ as JZ JZB JNZ JNZB");
_Static_assert(X_ADD_ADD_RR == X_ANDI_JNZB + 1 && X_ADD_GEU_RI - X_ADD_ADD_RR == X_GEU_RI - X_ADD_RR &&
               X_ADDI_ADD_RR == X_ADD_GEU_RI + 1 && X_MUL_DIVS_RI == X_ADDI_GEU_RI + 1,
               "ADD_<op> and ADDI_<op> follow XBIN");
_Static_assert(X_REMU_RI - X_DIVS_RI == 3 && X_MUL_REMU_RI - X_MUL_DIVS_RI == 3 &&
               X_DIVU_RI == X_DIVS_RI + 1 && X_MUL_DIVU_RI == X_MUL_DIVS_RI + 1 &&
               X_ALL_COUNT == X_MUL_REMU_RI + 1, "MUL_<div> follow DIVS_RI DIVU_RI REMS_RI REMU_RI");

enum xop vm_xop_unfused(enum xop op)
{
	if ((int)op >= X_MUL_INC_JEQ_RRB && (int)op <= X_MUL_INC_JGEU_RIB)
		return X_MUL_RR;
	if ((int)op >= X_ADDI_LD8U && (int)op <= X_ADDI_LD64)
		return X_ADD_RI;
	if ((int)op >= X_SHLI_ADDR_LD8U && (int)op <= X_SHLI_ADDR_LD64)
		return X_SHL_RI;
	if ((int)op >= X_ANDI_JZ && (int)op <= X_ANDI_JNZB)
		return X_AND_RI;
	if ((int)op >= X_ADD_ADD_RR && (int)op <= X_ADD_GEU_RI)
		return X_ADD_RR;
	if ((int)op >= X_MUL_DIVS_RI && (int)op <= X_MUL_REMU_RI)
		return X_MUL_RR;
	if ((int)op >= X_ADDI_ADD_RR && (int)op <= X_ADDI_GEU_RI)
		return X_ADD_RI;
	if ((int)op >= X_INC_JEQ_RRB && (int)op <= X_INC_JGEU_RIB)
		return X_ADD_RI;
	if ((int)op >= X_ADD_INC_JEQ_RRB && (int)op <= X_MULI_INC_JGEU_RIB)
		return ((int)op - X_ADD_INC_JEQ_RRB) % 4 < 2 ? X_ADD_RR : X_MUL_RI;
	if (op >= X_ADDI_JEQ_RR && op <= X_ADDI_JMPB)
		return X_ADD_RI;
	if (op >= X_LD8U_ADD_RR && op <= X_LD8U_GEU_RI)
		return X_LD8U;
	if (op >= X_LDB_LD8U && op <= X_ADDR_LD64)
		return (op - X_LDB_LD8U) % 2 ? X_ADD_RR : X_LD8U;
	if (op >= X_MOV_JEQ_RR && op <= X_MOV_JNZB)
		return X_MOV;
	return op;
}

/* The displacement of a branching xinsn, if it is one. */
static int jumps(enum xop op)
{
	return (op >= X_JEQ_RR && op <= X_JGEU_RIB) || op == X_JMP || op == X_JMPB ||
	       op == X_JZ || op == X_JZB || op == X_JNZ || op == X_JNZB ||
	       op == X_LD8U_JEQ_I || op == X_LD8U_JNE_I;
}

static int commutative_bin(enum xop rr)
{
	return rr == X_ADD_RR || rr == X_MUL_RR || rr == X_AND_RR || rr == X_OR_RR ||
	       rr == X_XOR_RR || rr == X_EQ_RR || rr == X_NE_RR;
}

/* For x = x + imm followed by a backward branch testing x: 2 * cc index + (0 for _RRB, 1 for
 * _RIB), the offset of the INC_J form from X_INC_JEQ_RRB.  Otherwise -1. */
static int inc_j(const struct xinsn *x, const struct xinsn *y)
{
	enum xop xo = (enum xop)x->op, yo = (enum xop)y->op;
	if (xo == X_ADD_RI && x->a == x->b && yo >= X_JEQ_RR && yo <= X_JGEU_RIB &&
	    (yo - X_JEQ_RR) % 4 >= 2 && y->b == x->a)
		return 2 * ((yo - X_JEQ_RR) / 4) + (yo - X_JEQ_RR) % 4 - 2;
	return -1;
}

/* The fused op for ADD_RR, MUL_RI or MUL_RR x, then an INC_J pair y, z; for SHL_RI x, then an
 * ADD_RR y and a load z at y's sum (an ADDR_ pair); or -1. */
static int fuse_triple(const struct xinsn *x, const struct xinsn *y, const struct xinsn *z)
{
	enum xop yo = (enum xop)y->op, zo = (enum xop)z->op;
	if (x->op == X_SHL_RI && yo == X_ADD_RR && zo >= X_LD8U && zo <= X_LD64 && z->b == y->a)
		return X_SHLI_ADDR_LD8U + (zo - X_LD8U);
	int k = inc_j(y, z);
	if (k < 0)
		return -1;
	int at = 2 * k - k % 2;            /* k = 2 * cc + v: the forms go 4 per cc */
	if (x->op == X_ADD_RR)
		return X_ADD_INC_JEQ_RRB + at;
	if (x->op == X_MUL_RI)
		return X_MULI_INC_JEQ_RRB + at;
	if (x->op == X_MUL_RR)
		return X_MUL_INC_JEQ_RRB + k;  /* these go 2 per cc, as INC_J */
	return -1;
}

/* The fused op (enum xop or enum xop_more) for x followed by y, or -1.  May swap y's
 * operands when that is exact. */
static int fuse_pair(const struct xinsn *x, struct xinsn *y)
{
	enum xop xo = (enum xop)x->op, yo = (enum xop)y->op;
	int k = inc_j(x, y);
	if (k >= 0)
		return X_INC_JEQ_RRB + k;
	if (xo == X_ADD_RI) {
		if (yo >= X_JEQ_RR && yo <= X_JGEU_RIB)
			return X_ADDI_JEQ_RR + (yo - X_JEQ_RR);
		if (yo == X_JMPB)
			return X_ADDI_JMPB;
		if (yo >= X_LD8U && yo <= X_LD64 && y->b == x->a)
			return X_ADDI_LD8U + (yo - X_LD8U);
	}
	if (xo == X_AND_RI && yo >= X_JZ && yo <= X_JNZB && y->b == x->a)
		return X_ANDI_JZ + (yo - X_JZ);
	if (xo == X_MUL_RR && yo >= X_DIVS_RI && yo <= X_REMU_RI && y->b == x->a)
		return X_MUL_DIVS_RI + (yo - X_DIVS_RI);
	if (xo == X_MOV) {
		if (yo >= X_JEQ_RR && yo <= X_JGEU_RIB)
			return X_MOV_JEQ_RR + (yo - X_JEQ_RR);
		if (yo >= X_JZ && yo <= X_JNZB)
			return X_MOV_JZ + (yo - X_JZ);
	}
	if ((xo == X_LD8U || xo == X_ADD_RR) && yo >= X_LD8U && yo <= X_LD64 && y->b == x->a)
		return X_LDB_LD8U + 2 * (yo - X_LD8U) + (xo == X_ADD_RR);
	/* LD8U, ADD_RR or ADD_RI, then an XBIN with the result as its left operand */
	int first = xo == X_LD8U ? X_LD8U_ADD_RR : xo == X_ADD_RR ? (int)X_ADD_ADD_RR :
	            xo == X_ADD_RI ? (int)X_ADDI_ADD_RR : -1;
	if (first >= 0 && yo >= X_ADD_RR && yo <= X_GEU_RI) {
		int rr = (yo - X_ADD_RR) % 2 == 0;
		if (y->b == x->a)
			return first + (yo - X_ADD_RR);
		if (rr && y->c == x->a && commutative_bin(yo)) {
			int32_t t = y->b;        /* a + v == v + a: the first's result on the left */
			y->b = y->c;
			y->c = t;
			return first + (yo - X_ADD_RR);
		}
	}
	return -1;
}

/* Fuse the frequent triples and pairs of one function (a triple first where one starts).
 * Without memory for the target map the code simply stays unfused. */
static void fuse_func(struct xfunc *f)
{
	uint8_t *target = calloc((size_t)f->n_code + 1, 1);
	if (!target)
		return;
	for (uint32_t i = 0; i < f->n_code; i++) {
		enum xop op = (enum xop)f->code[i].op;
		if (jumps(op))
			target[(int64_t)i + f->code[i].d] = 1;
		if (op == X_CALL)
			target[i + 1] = 1;         /* the return lands there */
	}
	for (uint32_t i = 0; i + 1 < f->n_code; i++) {
		if (target[i + 1])
			continue;
		if (i + 2 < f->n_code && !target[i + 2]) {
			int op = fuse_triple(&f->code[i], &f->code[i + 1], &f->code[i + 2]);
			if (op >= 0) {
				f->code[i].op = (uintptr_t)op;
				i += 2;
				continue;
			}
		}
		int op = fuse_pair(&f->code[i], &f->code[i + 1]);
		if (op >= 0) {
			f->code[i].op = (uintptr_t)op;
			i++;                       /* y is taken: pairs do not overlap */
		}
	}
	free(target);
}

/* Thread the code: opcode numbers become handler addresses.  Separate from vm_translate so
 * the JIT can read the opcode numbers first; superinstructions are formed here, after it. */
void vm_thread_code(struct vm_prog *prog)
{
	const void *const *labels = vm_interp_labels();
	if (!getenv("VM_NO_FUSE"))
		for (uint32_t i = 0; i < prog->seg->n_funcs; i++)
			fuse_func(&prog->funcs[i]);
	if (labels)
		for (uint32_t i = 0; i < prog->seg->n_funcs; i++)
			for (uint32_t j = 0; j < prog->funcs[i].n_code; j++)
				prog->funcs[i].code[j].h = labels[prog->funcs[i].code[j].op];
}

void vm_xfunc_free(struct xfunc *f)
{
	free(f->code);
	free(f->pcs);
}
