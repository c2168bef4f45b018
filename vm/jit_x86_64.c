/* jit_x86_64.c: the x86-64 JIT, translated slot code (translate.c, xops.def) -> machine code.
 *
 * vm_load compiles every function of a verified, translated segment into one mapping that is
 * written while read+write and then made read+execute (never both writable and executable).
 * One template per xop; the frame slots a function uses most live in registers; the run's
 * state (frame pointer, region table, fuel, context) lives in callee-saved registers.  Traps
 * jump to stubs that record (kind, function, xinsn) and unwind to the C caller, which reports
 * them exactly as the interpreter does.  docs/jit.md explains the design and its reasons.
 */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"

/* Names of the translated instructions, for listings (pndis --jit). */
static const char *const xop_names[X_COUNT] = {
#define XBIN(n, e) [X_##n##_RR] = #n "_rr", [X_##n##_RI] = #n "_ri",
#define XUN(n, e) [X_##n] = #n,
#define XCC(n, e) [X_J##n##_RR] = "j" #n "_rr", [X_J##n##_RI] = "j" #n "_ri", \
                  [X_J##n##_RRB] = "j" #n "_rrb", [X_J##n##_RIB] = "j" #n "_rib",
#define XLD(n, w, t) [X_##n] = #n,
#define XST(n, w, t) [X_##n] = #n, [X_##n##_OUT] = #n "_out",
#define X(n) [X_##n] = #n,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
};

#if defined(__x86_64__) && defined(__linux__)

#include <sys/mman.h>
#include <unistd.h>

#define JIT_MAX_CODE (1u << 30)   /* rel32 reaches everything in one mapping below 2 GiB */
#define JIT_ALIGN    16          /* functions and loop heads start at such a boundary */
#define JIT_LIM_REGIONS 16       /* regions whose access limits the context holds (emit_bounds) */

/* ---- registers ----
 * Fixed for the whole run (callee-saved, so C helpers keep them):
 *   rbx  fp: the current frame's slots          r12  R: the run's region table
 *   r13  fuel left                              r14  struct jit_ctx *
 * rax, rcx, rdx are scratch in every template.  The others hold cached frame slots. */
enum reg { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };
#define R_FP   RBX
#define R_TAB  R12
#define R_FUEL R13
#define R_CTX  R14
/* Registers for cached slots, in order of preference (no REX prefix first).  All are
 * written back to the frame before any call, so caller- and callee-saved ones serve alike. */
static const uint8_t cache_regs[] = { RSI, RDI, R8, R9, R10, R11, RBP, R15 };
#define N_CACHE_REGS (sizeof cache_regs / sizeof cache_regs[0])

/* Condition codes (the low nibble of jcc/setcc/cmovcc); cc ^ 1 is the negation. */
enum cc {
	CC_O = 0x0, CC_B = 0x2, CC_AE = 0x3, CC_E = 0x4, CC_NE = 0x5, CC_BE = 0x6, CC_A = 0x7,
	CC_S = 0x8, CC_L = 0xc, CC_GE = 0xd, CC_LE = 0xe, CC_G = 0xf, CC_ALWAYS = -1
};

/* The run state generated code reaches through r14.  Offsets are taken with offsetof. */
struct jit_ctx {
	struct run *run;
	struct mref *R;
	uint64_t fuel;
	const uint64_t *slots_end;     /* one past the run's frame slots */
	uint64_t out_cap;
	uint64_t saved_rsp;            /* rsp inside the trampoline, restored by a trap */
	uint64_t rsp_limit;            /* rsp at a call site VM_MAX_CALL_DEPTH calls below the
	                                * entry (gen_call: the depth check) */
	int64_t result;
	uint64_t fuel_base;            /* in a versioned loop's fast copy: fuel + induction
	                                * variable (gen_vloop) */
	uint32_t trap_kind, trap_xi, trap_func, trap_code;
	/* lim[r][k]: how many offsets a 2 << k byte access of region r may start at (its length
	 * less the width plus one, 0 when shorter than the width), for the regions below
	 * JIT_LIM_REGIONS but out, whose lengths stay put during a run (vm_jit_run) */
	uint64_t lim[JIT_LIM_REGIONS][3];
};

/* The trampoline: int enter(struct jit_ctx *ctx, uint64_t *fp, const void *func), 0 when the
 * function returned (ctx->result), 1 after a trap (ctx->trap_*). */
typedef int jit_enter_fn(struct jit_ctx *ctx, uint64_t *fp, const void *func);

struct jit_prog {
	uint8_t *mem;                  /* the mapping, read+execute after compiling */
	size_t mem_len;
	uint32_t n_funcs;
	uint32_t *func_off, *func_end; /* per function: its code in mem */
	uint32_t **xoff;               /* per function: offset of each xinsn's code from func_off */
	uint8_t **xop;                 /* per function: each xinsn's enum xop, for listings
	                                * (threading replaces them by handler addresses) */
};
/* The JIT reads the code before superinstructions are formed (vm_thread_code): the xops it
 * meets fit a byte. */
_Static_assert(X_FUSED_FIRST <= 256, "xop numbers fit a byte");

/* ---- the emitter: bytes into a growing buffer, with a sticky error ---- */
struct emit {
	uint8_t *buf;
	size_t len, cap;
	int err;                       /* 0, -VM_ENOMEM or -VM_ENOJIT (too large) */
};

static void emit_bytes(struct emit *e, const void *p, size_t n)
{
	if (e->err)
		return;
	if (e->len + n > e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 4096;
		while (cap < e->len + n)
			cap *= 2;
		if (cap > JIT_MAX_CODE) {
			e->err = -VM_ENOJIT;
			return;
		}
		uint8_t *b = realloc(e->buf, cap);
		if (!b) {
			e->err = -VM_ENOMEM;
			return;
		}
		e->buf = b;
		e->cap = cap;
	}
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void emit1(struct emit *e, unsigned b) { uint8_t c = (uint8_t)b; emit_bytes(e, &c, 1); }
static void emit4(struct emit *e, uint32_t v) { uint8_t b[4]; isa_put32(b, v); emit_bytes(e, b, 4); }
static void emit8(struct emit *e, uint64_t v) { uint8_t b[8]; isa_put64(b, v); emit_bytes(e, b, 8); }

/* Patch a rel32 at `at` so that it jumps to `to` (both buffer offsets). */
static void patch_rel32(struct emit *e, uint32_t at, size_t to)
{
	if (!e->err)
		isa_put32(e->buf + at, (uint32_t)((int64_t)to - (int64_t)(at + 4)));
}

static int fits32(int64_t v) { return v == (int32_t)v; }

/* Pad with the recommended multi-byte nops up to a multiple of `to` (a power of two).  Loop
 * heads and functions start aligned, as gcc -O2 aligns them: a tight loop otherwise crosses
 * fetch boundaries wherever the code before it happens to end (count_nl's loop ran 1.46x or
 * 1.70x of gcc's, its machine code identical, as the trampoline grew by 12 bytes). */
/* nops up to where len + ahead is a multiple of to */
static void emit_align_ahead(struct emit *e, unsigned to, size_t ahead)
{
	static const uint8_t nop[8][8] = {
		{ 0x90 }, { 0x66, 0x90 }, { 0x0f, 0x1f, 0x00 }, { 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	size_t pad = (to - ((e->len + ahead) & (to - 1))) & (to - 1);
	while (pad > 0 && !e->err) {
		size_t n = pad > 8 ? 8 : pad;
		emit_bytes(e, nop[n - 1], n);
		pad -= n;
	}
}

static void emit_align(struct emit *e, unsigned to) { emit_align_ahead(e, to, 0); }

/* An r/m operand: a register, or memory at [base + index * 2^scale + disp]. */
struct rm {
	int8_t reg;                    /* register operand, or -1 for memory */
	int8_t base, index;            /* memory: base register, index register or -1 */
	uint8_t scale;                 /* 0..3, with an index */
	int32_t disp;
};
static struct rm rm_reg(int r) { return (struct rm){ .reg = (int8_t)r, .base = -1, .index = -1 }; }
static struct rm rm_mem(int base, int32_t disp)
{
	return (struct rm){ .reg = -1, .base = (int8_t)base, .index = -1, .disp = disp };
}
static struct rm rm_idx(int base, int index)
{
	return (struct rm){ .reg = -1, .base = (int8_t)base, .index = (int8_t)index };
}

/* REX prefix 0100WRXB; emitted when any bit is set, or when a byte operand is spl..dil
 * (without REX those encodings mean ah..bh). */
static void emit_rex(struct emit *e, int w, int r, int x, int b, int force)
{
	unsigned rex = 0x40 | (w ? 8 : 0) | ((r >> 3) & 1) << 2 | ((x >> 3) & 1) << 1 | ((b >> 3) & 1);
	if (rex != 0x40 || force)
		emit1(e, rex);
}

static void emit_modrm(struct emit *e, int mod, int reg, int rm)
{
	emit1(e, (unsigned)(mod << 6 | (reg & 7) << 3 | (rm & 7)));
}

/* ModRM (+ SIB + displacement) for reg field `reg` and operand m.  rsp/r12 as a base need a
 * SIB byte; rbp/r13 as a base need a displacement (mod 00 would mean rip-relative). */
static void emit_modrm_rm(struct emit *e, int reg, struct rm m)
{
	if (m.reg >= 0) {
		emit_modrm(e, 3, reg, m.reg);
		return;
	}
	int mod = m.disp == 0 && (m.base & 7) != RBP ? 0 : m.disp >= -128 && m.disp <= 127 ? 1 : 2;
	if (m.index >= 0 || (m.base & 7) == RSP) {
		emit_modrm(e, mod, reg, 4);
		int idx = m.index >= 0 ? m.index : RSP;          /* index 100: none */
		emit1(e, (unsigned)(m.scale << 6 | (idx & 7) << 3 | (m.base & 7)));
	} else {
		emit_modrm(e, mod, reg, m.base);
	}
	if (mod == 1)
		emit1(e, (unsigned)m.disp);
	else if (mod == 2)
		emit4(e, (uint32_t)m.disp);
}

/* Flags of emit_op: operand size and prefixes. */
#define OP_W    0x01u      /* REX.W: 64-bit operands */
#define OP_66   0x02u      /* 16-bit operands */
#define OP_F3   0x04u      /* mandatory prefix (popcnt) */
#define OP_BYTE 0x08u      /* byte registers: sil/dil/bpl need a REX */

/* One instruction: [prefix] [REX] opcode (0x0fxx: two bytes) ModRM... */
static void emit_op(struct emit *e, unsigned flags, unsigned opcode, int reg, struct rm m)
{
	if (flags & OP_66)
		emit1(e, 0x66);
	if (flags & OP_F3)
		emit1(e, 0xf3);
	int b = m.reg >= 0 ? m.reg : m.base, x = m.reg < 0 && m.index >= 0 ? m.index : 0;
	int force = (flags & OP_BYTE) && ((reg >= 4 && reg < 8) || (m.reg >= 4 && m.reg < 8));
	emit_rex(e, flags & OP_W, reg, x, b, force);
	if (opcode > 0xff)
		emit1(e, opcode >> 8);
	emit1(e, opcode & 0xff);
	emit_modrm_rm(e, reg, m);
}

enum alu { ALU_ADD = 0, ALU_OR = 1, ALU_AND = 4, ALU_SUB = 5, ALU_XOR = 6, ALU_CMP = 7 };
enum shift { SH_ROL = 0, SH_ROR = 1, SH_SHL = 4, SH_SHR = 5, SH_SAR = 7 };
enum f7 { F7_NOT = 2, F7_NEG = 3, F7_MUL = 4, F7_DIV = 6, F7_IDIV = 7 };

static void emit_mov_r_rm(struct emit *e, int r, struct rm m)      /* mov r64, r/m64 */
{
	if (m.reg != r)
		emit_op(e, OP_W, 0x8b, r, m);
}
static void emit_mov_rm_r(struct emit *e, struct rm m, int r)      /* mov r/m64, r64 */
{
	if (m.reg != r)
		emit_op(e, OP_W, 0x89, r, m);
}
static void emit_mov_rr(struct emit *e, int d, int s) { emit_mov_rm_r(e, rm_reg(d), s); }

/* mov r64, imm: the shortest of mov r32, imm32 (zero-extends), mov r/m64, simm32 and
 * mov r64, imm64.  Leaves the flags alone. */
static void emit_mov_imm(struct emit *e, int r, uint64_t v)
{
	if (v <= UINT32_MAX) {
		emit_rex(e, 0, 0, 0, r, 0);
		emit1(e, 0xb8 + (r & 7));                      /* mov r32, imm32 */
		emit4(e, (uint32_t)v);
	} else if (fits32((int64_t)v)) {
		emit_op(e, OP_W, 0xc7, 0, rm_reg(r));           /* mov r/m64, simm32 */
		emit4(e, (uint32_t)v);
	} else {
		emit_rex(e, 1, 0, 0, r, 0);
		emit1(e, 0xb8 + (r & 7));                      /* mov r64, imm64 */
		emit8(e, v);
	}
}

static void emit_alu_r_rm(struct emit *e, enum alu op, int r, struct rm m)   /* op r64, r/m64 */
{
	emit_op(e, OP_W, (unsigned)op * 8 + 3, r, m);
}
static void emit_alu_rm_r(struct emit *e, enum alu op, struct rm m, int r)   /* op r/m64, r64 */
{
	emit_op(e, OP_W, (unsigned)op * 8 + 1, r, m);
}
/* op r/m, simm32 (83 /op ib when it fits a byte); flags 0 for 32-bit operands */
static void emit_alu_rm_imm(struct emit *e, unsigned flags, enum alu op, struct rm m, int32_t imm)
{
	if (imm >= -128 && imm <= 127) {
		emit_op(e, flags, 0x83, op, m);
		emit1(e, (unsigned)imm);
	} else {
		emit_op(e, flags, 0x81, op, m);
		emit4(e, (uint32_t)imm);
	}
}

static void emit_ret(struct emit *e) { emit1(e, 0xc3); }                        /* ret */
static void emit_push(struct emit *e, int r) { emit_rex(e, 0, 0, 0, r, 0); emit1(e, 0x50 + (r & 7)); }
static void emit_pop(struct emit *e, int r) { emit_rex(e, 0, 0, 0, r, 0); emit1(e, 0x58 + (r & 7)); }

/* jcc/jmp rel32 with the displacement left zero; returns where to patch it. */
static uint32_t emit_jcc(struct emit *e, int cc)
{
	if (cc == CC_ALWAYS) {
		emit1(e, 0xe9);                                /* jmp rel32 */
	} else {
		emit1(e, 0x0f);
		emit1(e, 0x80 + (unsigned)cc);                 /* jcc rel32 */
	}
	uint32_t at = (uint32_t)e->len;
	emit4(e, 0);
	return at;
}

/* call a C function at an absolute address.  A JIT activation takes 8 bytes of C stack (its
 * return address), so rsp is 16-byte aligned here or not depending on the depth: align it for
 * the ABI, keeping the old rsp in rbp, which the callee preserves (rbp's own value, maybe a
 * cached slot, is pushed and popped around it):
 *   push rbp; mov rbp, rsp; and rsp, -16; mov rax, imm64; call rax; mov rsp, rbp; pop rbp */
static void emit_call_abs(struct emit *e, const void *fn)
{
	emit_push(e, RBP);
	emit_mov_rr(e, RBP, RSP);
	emit_alu_rm_imm(e, OP_W, ALU_AND, rm_reg(RSP), -16);
	emit_mov_imm(e, RAX, (uint64_t)(uintptr_t)fn);
	emit_op(e, 0, 0xff, 2, rm_reg(RAX));
	emit_mov_rr(e, RSP, RBP);
	emit_pop(e, RBP);
}

/* ---- the code generator of one function ---- */
struct jump { uint32_t at, target; };          /* rel32 at `at` to xinsn `target` */
struct trapsite { uint32_t at, xi; int kind; };  /* kind -1: the kind is in eax */
/* A fuel check whose chunk ran out jumps (rel32 at `at`) to a refill stub, which goes on at
 * xinsn `resume` (a back edge's target) or, when at_code, at code offset `resume` (a call). */
struct refillsite { uint32_t at, xi, resume; bool at_code; };
struct callsite { uint32_t at, callee; };

/* A counted loop the JIT compiles twice (gen_vloop): xinsns head..back, whose only way in is
 * head and only way out the fall-through of the branch at back, which loops while i < n (or
 * i != n) where i steps by 1 once per iteration and n stays put.  Its fast copy has no bounds
 * checks (each load's offset is i + disp, all proven at once at the head for every value i
 * will take) and no fuel counter (fuel is fuel_base - i). */
#define VLOOP_MAX_REGIONS 4
struct vloop {
	uint32_t head, back, inc;      /* inc: the xinsn i = i + 1 */
	int32_t i, n;                  /* slots; n -1: the bound is n_imm */
	int64_t n_imm;
	bool is_signed;                /* i < n signed: n must be >= 0 as well */
	unsigned n_regions;
	int region[VLOOP_MAX_REGIONS];
	int64_t need[VLOOP_MAX_REGIONS];   /* region[k] must hold n + need[k] bytes */
};

#define PEEL_MAX_LOOP  128         /* xinsns of a loop body that find_peel looks at */

struct flagcmp {
	int32_t b, c;                  /* c: -1 for an immediate */
	int64_t imm;
};

struct cg {
	struct emit e;
	const struct vm_prog *prog;
	uint32_t fi;                   /* function being compiled */
	const struct xfunc *xf;
	uint32_t xi;                   /* xinsn being compiled */
	int8_t *reg_of;                /* per slot: its cache register or -1 */
	int32_t cached[N_CACHE_REGS];  /* the cached slots */
	unsigned n_cached;
	int hot_region;                /* region whose base and length live in registers, or -1 */
	int8_t hot_base, hot_len;      /* (never out: its length changes during a run) */
	uint32_t *xoff;                /* per xinsn: offset of its code (from the buffer start) */
	struct jump *jumps;
	uint32_t n_jumps, cap_jumps;
	struct trapsite *traps;
	uint32_t n_traps, cap_traps;
	struct callsite *calls;
	uint32_t n_calls, cap_calls;
	struct refillsite *refills;
	uint32_t n_refills, cap_refills;
	uint32_t common_trap;          /* offset of the shared trap exit */
	const char *unsupported;       /* name of an xop the JIT cannot compile, or NULL */
	/* Arguments in registers: function f's argument k arrives in register arg_reg[arg_base[f]
	 * + k] (-1: in its frame slot only), the one f caches it in, at f's inner entry
	 * (entry_in[f], after the loads of the outer entry that the trampoline calls). */
	int8_t *arg_reg;
	uint32_t *arg_base;
	uint32_t *entry_in;
	bool frames_fit;               /* the deepest chain of calls fits VM_STACK_SLOTS whatever
	                                * the functions: calls check the depth alone (gen_call) */
	/* The last store of an uncached slot: where its code ends, the slot and the register
	 * stored.  A load of that slot emitted right there (nothing between, no label) takes
	 * the register instead of a store-to-load round trip (load_slot). */
	uint32_t fwd_end;              /* UINT32_MAX: none */
	int32_t fwd_slot;
	int8_t fwd_reg;
	/* The last mov a = b between slots: where its code ends and its slots.  A mov b = a
	 * right there (nothing between, no label) has nothing to do (gen_mov). */
	uint32_t mov_end;              /* UINT32_MAX: none */
	int32_t mov_a, mov_b;
	/* Where the flags last said whether slot zf_slot is zero: the end of the add, sub, and,
	 * or, xor that computed it, or of movs after it (which leave the flags alone).  A test
	 * of that slot against zero for == or != right there is left out (emit_jcc_cmp). */
	uint32_t zf_end;               /* UINT32_MAX: none */
	int32_t zf_slot;
	/* Where the flags last held a compare of two slots or of a slot and an immediate (a
	 * conditional branch's, or after movs of other slots and lea forms of add and sub that
	 * leave them), and what it compared: a branch on the same compare right there needs no
	 * cmp (gen_jcc).  Across a forward branch's target too when every branch to it and the
	 * code falling into it agree (in_n, n_in): btree's search step tests its compare twice,
	 * in clang's code, on both sides of a join. */
	uint32_t cmp_end;              /* UINT32_MAX: none */
	struct flagcmp cmp;
	struct flagcmp *in_cmp;        /* per xinsn: the compare its incoming branches left */
	uint32_t *in_n;                /* per xinsn: how many did, UINT32_MAX: one left another */
	const uint32_t *n_in;          /* per xinsn: branches (branch_d) to it */
	/* Per xinsn, the slots live after it (a bitset of live_words words each; NULL: take
	 * every slot as live), for the folds of gen_fold */
	uint64_t *live;
	uint32_t live_words;
	/* gen_range's first xinsn while it runs (else UINT32_MAX): a backward branch to an xinsn
	 * from there on knows its target's final address and takes the short form if it fits */
	uint32_t range_lo;
	/* Threading (find_thread, gen_thread), in compile_func's own ranges only (thread_ok; a
	 * loop's copies keep their branches): thr_t, a forward branch's target that branch no
	 * longer reaches (its code was copied at the branch), so no label there; thr_b, the
	 * branch on the same compare after it, reached now only by falling through the first,
	 * so never taken (UINT32_MAX: none). */
	bool thread_ok;
	uint32_t thr_t, thr_b;
	const struct vloop *fast;      /* compiling the fast copy of this loop: no bounds checks */
	uint32_t slow_head;            /* compiling a slow copy: its head's code offset, where
	                                * its back edge goes (UINT32_MAX: none) */
	uint32_t slow_head_xi;         /* ... and that head's xinsn */
	/* Compiling a peeled loop (gen_peel): in its first copy a back edge to xinsn peel_xi
	 * goes on to the second copy (the rel32 at peel_at, patched once that is emitted); in
	 * the second, peel_skip[xi - peel_lo] marks the accesses whose bounds an earlier
	 * iteration proved (UINT32_MAX, NULL: none). */
	uint32_t peel_xi, peel_at, peel_lo;
	const uint8_t *peel_skip;
	/* Compiling the fast copy of a counted-down peeled loop (gen_peel, struct dloop): a back
	 * edge to xinsn dl_head_xi spends its unit of fuel without a check (UINT32_MAX: none);
	 * dl_back_end: where the code of that back edge ends. */
	uint32_t dl_head_xi, dl_back_end;
	/* dl_rel: r13 holds the fuel less the counter c (slot dl_c, stepped at xinsn dl_step)
	 * instead, spent by the step itself; every way out (a stub) adds c back, and one more
	 * after the step (gen_dloop_fast).  dl_back: the loop's back branch. */
	bool dl_rel;
	/* dl_pre: the guard took from r13 all the fuel the loop will spend (a bit-clearing
	 * dloop, struct dloop's pop): its back edge spends none. */
	bool dl_pre;
	int32_t dl_c;
	uint32_t dl_step, dl_back;
	/* ... and its sunk copies (find_sinks): per xinsn from peel_lo, where its code goes
	 * (enum sink); NULL: none.  sink_at: the taken branches to the stubs of SINK_TAKEN. */
	const uint8_t *sink;
	const uint32_t *sink_j;        /* ... and the branch it goes with */
	struct sinkstub { uint32_t at, j, target; } sink_at[PEEL_MAX_LOOP];
	uint32_t n_sink_at;
};

/* Append to one of the growing arrays of cg; a failed allocation is the emitter's error. */
static void *grow(struct cg *g, void *arr, uint32_t *cap, uint32_t n, size_t size)
{
	if (n < *cap)
		return arr;
	uint32_t c = *cap ? 2 * *cap : 64;
	void *p = realloc(arr, (size_t)c * size);
	if (!p) {
		g->e.err = -VM_ENOMEM;
		return arr;
	}
	*cap = c;
	return p;
}

static void add_jump(struct cg *g, uint32_t at, uint32_t target)
{
	g->jumps = grow(g, g->jumps, &g->cap_jumps, g->n_jumps, sizeof *g->jumps);
	if (!g->e.err)
		g->jumps[g->n_jumps++] = (struct jump){ at, target };
}

static bool same_cmp(const struct flagcmp *p, const struct flagcmp *q)
{
	return p->b == q->b && p->c == q->c && p->imm == q->imm;
}

/* A jump to xinsn target is being emitted here: note what the flags hold (cmp_end), or that
 * they hold something else, for its target's join (gen_range). */
static void note_in(struct cg *g, uint32_t target)
{
	if (!g->in_n || g->in_n[target] == UINT32_MAX)
		return;
	if (g->cmp_end != g->e.len ||
	    (g->in_n[target] && !same_cmp(&g->in_cmp[target], &g->cmp))) {
		g->in_n[target] = UINT32_MAX;
		return;
	}
	g->in_cmp[target] = g->cmp;
	g->in_n[target]++;
}

/* jcc to xinsn `target` of this function (patched once every xinsn has its address). */
static void emit_jcc_x(struct cg *g, int cc, uint32_t target)
{
	note_in(g, target);
	add_jump(g, emit_jcc(&g->e, cc), target);
}

/* jcc to a trap of kind `kind` (-1: kind in eax) at the current xinsn. */
static void emit_jcc_trap(struct cg *g, int cc, int kind)
{
	uint32_t at = emit_jcc(&g->e, cc);
	g->traps = grow(g, g->traps, &g->cap_traps, g->n_traps, sizeof *g->traps);
	if (!g->e.err)
		g->traps[g->n_traps++] = (struct trapsite){ at, g->xi, kind };
}

/* jcc to the refill stub of a fuel check at the current xinsn (gen_refill_stubs); it goes on
 * at xinsn target, or with at_code just after this jcc. */
static void emit_jcc_refill(struct cg *g, int cc, uint32_t target, bool at_code)
{
	uint32_t at = emit_jcc(&g->e, cc);
	g->refills = grow(g, g->refills, &g->cap_refills, g->n_refills, sizeof *g->refills);
	if (!g->e.err)
		g->refills[g->n_refills++] = (struct refillsite){ at, g->xi,
			at_code ? (uint32_t)g->e.len : target, at_code };
}

/* Another path arrives here (a label): what the code just before left in registers is no
 * longer known (load_slot's forwarding, gen_mov's pair). */
static void forget(struct cg *g)
{
	g->fwd_end = UINT32_MAX;
	g->mov_end = UINT32_MAX;
	g->zf_end = UINT32_MAX;
	g->cmp_end = UINT32_MAX;
}

/* A forward branch inside a template: emit_skip, then emit_land where it lands. */
static uint32_t emit_skip(struct cg *g, int cc) { return emit_jcc(&g->e, cc); }
static void emit_land(struct cg *g, uint32_t at)
{
	patch_rel32(&g->e, at, g->e.len);
	forget(g);
}

/* jcc/jmp to code offset `to`, already emitted: jcc rel8 (eb / 70+cc) when it reaches, else
 * rel32.  Loops get shorter: isum's is 58 bytes, 4 fewer. */
static void emit_jcc_back(struct emit *e, int cc, size_t to)
{
	int64_t rel = (int64_t)to - (int64_t)(e->len + 2);
	if (rel >= -128 && !e->err) {
		emit1(e, cc == CC_ALWAYS ? 0xeb : 0x70 + (unsigned)cc);
		emit1(e, (unsigned)(uint8_t)(int8_t)rel);
		return;
	}
	patch_rel32(e, emit_jcc(e, cc), to);
}

/* ---- frame slots: a register when cached, else [rbx + 8 * slot] ---- */
static struct rm slot(const struct cg *g, int32_t s)
{
	return g->reg_of[s] >= 0 ? rm_reg(g->reg_of[s]) : rm_mem(R_FP, 8 * s);
}
/* Slot s as a source operand: its register, the register it was stored from just before
 * (fwd_end), or its frame slot. */
static struct rm src_slot(const struct cg *g, int32_t s)
{
	if (g->reg_of[s] < 0 && g->fwd_end == g->e.len && g->fwd_slot == s)
		return rm_reg(g->fwd_reg);
	return slot(g, s);
}
static void load_slot(struct cg *g, int r, int32_t s) { emit_mov_r_rm(&g->e, r, src_slot(g, s)); }
static void store_slot(struct cg *g, int32_t s, int r)
{
	emit_mov_rm_r(&g->e, slot(g, s), r);
	if (g->reg_of[s] < 0) {
		g->fwd_end = (uint32_t)g->e.len;
		g->fwd_slot = s;
		g->fwd_reg = (int8_t)r;
	}
}
/* Where to compute a new value of slot s: its register, else rax (then stored). */
static int work_reg(const struct cg *g, int32_t s) { return g->reg_of[s] >= 0 ? g->reg_of[s] : RAX; }

/* Before anything that reads or writes frames in memory or clobbers registers (calls, C
 * helpers): write every cached slot back; afterwards read them again. */
static void spill_all(struct cg *g)
{
	for (unsigned i = 0; i < g->n_cached; i++)
		emit_mov_rm_r(&g->e, rm_mem(R_FP, 8 * g->cached[i]), g->reg_of[g->cached[i]]);
}
static void load_hot_region(struct cg *g)
{
	if (g->hot_region >= 0) {
		emit_mov_r_rm(&g->e, g->hot_base, rm_mem(R_TAB, 16 * g->hot_region));
		if (g->hot_len >= 0)
			emit_mov_r_rm(&g->e, g->hot_len, rm_mem(R_TAB, 16 * g->hot_region + 8));
	}
}
/* ... except slot `skip` (-1: none), when the caller overwrites it right away (a call's
 * result) */
static void reload_all_but(struct cg *g, int32_t skip)
{
	for (unsigned i = 0; i < g->n_cached; i++)
		if (g->cached[i] != skip)
			emit_mov_r_rm(&g->e, g->reg_of[g->cached[i]], rm_mem(R_FP, 8 * g->cached[i]));
	load_hot_region(g);
}
static void reload_all(struct cg *g) { reload_all_but(g, -1); }

/* Around a C helper that reads and writes the frame only at slots a and above (its operands
 * and result, on top of the operand stack): the System V ABI keeps rbp and r15, so a slot
 * cached there below a needs neither the store nor the load, and a hot region base or length
 * there stays.  hprobe's key compare (cmp, once per probe) wrote back and read again all
 * eight registers. */
static bool callee_saved(int r) { return r == RBP || r == R15; }
static void spill_for_helper(struct cg *g, int32_t a)
{
	for (unsigned i = 0; i < g->n_cached; i++) {
		int32_t s = g->cached[i];
		if (s >= a || !callee_saved(g->reg_of[s]))
			emit_mov_rm_r(&g->e, rm_mem(R_FP, 8 * s), g->reg_of[s]);
	}
}
static void reload_for_helper(struct cg *g, int32_t a)
{
	for (unsigned i = 0; i < g->n_cached; i++) {
		int32_t s = g->cached[i];
		if (s >= a || !callee_saved(g->reg_of[s]))
			emit_mov_r_rm(&g->e, g->reg_of[s], rm_mem(R_FP, 8 * s));
	}
	if (g->hot_region >= 0 && !callee_saved(g->hot_base))
		emit_mov_r_rm(&g->e, g->hot_base, rm_mem(R_TAB, 16 * g->hot_region));
	if (g->hot_region >= 0 && g->hot_len >= 0 && !callee_saved(g->hot_len))
		emit_mov_r_rm(&g->e, g->hot_len, rm_mem(R_TAB, 16 * g->hot_region + 8));
}

/* ---- templates ---- */

/* After a mov (or several, or a lea) emitted from `start` on that leaves slot a, the flags
 * still say what they said of slot zf_slot, or of the compare cmp, unless that reads a. */
static void keep_zf(struct cg *g, uint32_t start, int32_t a)
{
	if (g->zf_end == start && g->zf_slot != a)
		g->zf_end = (uint32_t)g->e.len;
	if (g->cmp_end == start && g->cmp.b != a && g->cmp.c != a)
		g->cmp_end = (uint32_t)g->e.len;
}

/* a = b op c / a = b op imm, for add, sub, and, or, xor */
static void gen_alu(struct cg *g, const struct xinsn *x, enum alu op, int ri)
{
	struct emit *e = &g->e;
	struct xinsn sw;
	if (!ri && op != ALU_SUB && x->c == x->a && x->b != x->a) {
		sw = *x;                                   /* a = b + a  ==  a = a + b */
		sw.b = x->c;
		sw.c = x->b;
		x = &sw;
	}
	int t = work_reg(g, x->a);
	if (ri && op == ALU_AND && x->imm == 0xffffffff) {
		/* how pncc zero-extends a 32-bit value: mov r32, r/m32 clears the upper half
		 * in one instruction (and with a mask needs the mask in a register first) */
		emit_op(e, 0, 0x8b, t, src_slot(g, x->b));   /* mov t32, b32 */
		store_slot(g, x->a, t);
		return;
	}
	/* a = b + imm, a = b + c into another register, b and c in registers: one lea instead
	 * of a mov and an add (nothing reads the flags an ALU template leaves) */
	/* ... and in place too while the flags hold a compare of other slots, which the lea
	 * leaves for a branch on the same compare (btree's lo = mid + 1 between two) */
	struct rm mb = src_slot(g, x->b);
	uint32_t start = (uint32_t)e->len;
	bool keep = g->cmp_end == start && g->cmp.b != x->a && g->cmp.c != x->a;
	if (mb.reg >= 0 && (mb.reg != t || keep) && ri && (op == ALU_ADD || op == ALU_SUB) &&
	    x->imm != INT64_MIN && fits32(op == ALU_ADD ? x->imm : -x->imm)) {
		emit_op(e, OP_W, 0x8d, t, rm_mem(mb.reg, (int32_t)(op == ALU_ADD ? x->imm : -x->imm)));
		store_slot(g, x->a, t);
		keep_zf(g, start, x->a);
		return;
	}
	if (mb.reg >= 0 && mb.reg != t && !ri && op == ALU_ADD && g->reg_of[x->c] >= 0 &&
	    g->reg_of[x->c] != t && g->reg_of[x->c] != RSP) {
		emit_op(e, OP_W, 0x8d, t, rm_idx(mb.reg, g->reg_of[x->c]));   /* lea t, [b + c] */
		store_slot(g, x->a, t);
		keep_zf(g, start, x->a);
		return;
	}
	if (!ri && x->b != x->c && g->reg_of[x->c] == t)
		t = RAX;                                   /* a = b - a: keep a until it is read */
	load_slot(g, t, x->b);
	if (!ri) {
		emit_alu_r_rm(e, op, t, slot(g, x->c));
	} else if (fits32(x->imm)) {
		emit_alu_rm_imm(e, OP_W, op, rm_reg(t), (int32_t)x->imm);
	} else {
		emit_mov_imm(e, RCX, (uint64_t)x->imm);
		emit_alu_r_rm(e, op, t, rm_reg(RCX));
	}
	store_slot(g, x->a, t);                        /* a mov: the flags stay */
	g->zf_end = (uint32_t)e->len;
	g->zf_slot = x->a;
}

static void gen_mul(struct cg *g, const struct xinsn *x, int ri)
{
	struct emit *e = &g->e;
	int t = work_reg(g, x->a);
	if (ri && fits32(x->imm)) {
		emit_op(e, OP_W, 0x69, t, slot(g, x->b));   /* imul t, b, imm32 */
		emit4(e, (uint32_t)x->imm);
	} else {
		int32_t b = x->b, c = x->c;
		if (!ri && c == x->a && b != x->a) {          /* a = b * a  ==  a = a * b */
			c = x->b;
			b = x->c;
		}
		if (!ri && b != c && g->reg_of[c] == t)
			t = RAX;
		load_slot(g, t, b);
		if (ri) {
			emit_mov_imm(e, RCX, (uint64_t)x->imm);
			emit_op(e, OP_W, 0x0faf, t, rm_reg(RCX));   /* imul t, rcx */
		} else {
			emit_op(e, OP_W, 0x0faf, t, slot(g, c));    /* imul t, c */
		}
	}
	store_slot(g, x->a, t);
}

/* Shifts and rotates: x86 masks the count to 6 bits, exactly the ISA's `& 63`. */
static void gen_shift(struct cg *g, const struct xinsn *x, enum shift sh, int ri)
{
	struct emit *e = &g->e;
	int t = work_reg(g, x->a);
	struct rm mb = src_slot(g, x->b);
	if (ri && sh == SH_SHL && (x->imm & 63) >= 1 && (x->imm & 63) <= 3 && mb.reg >= 0 &&
	    mb.reg != t && mb.reg != RSP) {
		/* lea t, [b * 2^k]: one instruction for mov and shl (btree's index * 4) */
		emit_rex(e, 1, t, mb.reg, 0, 0);
		emit1(e, 0x8d);
		emit_modrm(e, 0, t, 4);                    /* SIB, no base: disp32 */
		emit1(e, (unsigned)((x->imm & 63) << 6 | (mb.reg & 7) << 3 | RBP));
		emit4(e, 0);
		store_slot(g, x->a, t);
		return;
	}
	if (!ri && (sh == SH_SHL || sh == SH_SHR || sh == SH_SAR) && __builtin_cpu_supports("bmi2")) {
		/* shlx/shrx/sarx t, b, c: any count register, the count masked to 6 bits like
		 * the ISA's & 63, no copy into cl (varint's v |= (b & 0x7f) << sh) */
		struct rm mc = src_slot(g, x->c);
		int c = mc.reg >= 0 ? mc.reg : mb.reg == RCX ? RDX : RCX;   /* b may be in rcx */
		load_slot(g, c, x->c);
		unsigned pp = sh == SH_SHL ? 1 : sh == SH_SAR ? 2 : 3;   /* 66, f3, f2 */
		int bx = mb.reg < 0 && mb.index >= 0 ? mb.index : 0;
		int bb = mb.reg >= 0 ? mb.reg : mb.base;
		emit1(e, 0xc4);                            /* VEX3 . 0f38 . W1 */
		emit1(e, (unsigned)((~t >> 3 & 1) << 7 | (~bx >> 3 & 1) << 6 | (~bb >> 3 & 1) << 5 | 2));
		emit1(e, (unsigned)(0x80 | (~c & 15) << 3 | pp));
		emit1(e, 0xf7);
		emit_modrm_rm(e, t, mb);
		store_slot(g, x->a, t);
		return;
	}
	if (!ri)
		load_slot(g, RCX, x->c);                   /* the count goes to cl first */
	load_slot(g, t, x->b);
	if (!ri) {
		emit_op(e, OP_W, 0xd3, sh, rm_reg(t));      /* sh t, cl */
	} else if (x->imm & 63) {
		emit_op(e, OP_W, 0xc1, sh, rm_reg(t));      /* sh t, imm8 */
		emit1(e, (unsigned)(x->imm & 63));
	}
	store_slot(g, x->a, t);
}

/* Compare slot b with slot c (rr) or with imm: flags as for cmp b, c. */
static void emit_cmp_slots(struct cg *g, int32_t b, int32_t c, int64_t imm, int ri)
{
	struct emit *e = &g->e;
	struct rm mb = slot(g, b);
	if (ri) {
		if (imm == 0 && mb.reg >= 0) {
			emit_op(e, OP_W, 0x85, mb.reg, mb);     /* test b, b */
		} else if (fits32(imm)) {
			emit_alu_rm_imm(e, OP_W, ALU_CMP, mb, (int32_t)imm);
		} else {
			emit_mov_imm(e, RCX, (uint64_t)imm);
			emit_alu_rm_r(e, ALU_CMP, mb, RCX);      /* cmp b, rcx */
		}
		return;
	}
	struct rm mc = slot(g, c);
	if (mb.reg >= 0) {
		emit_alu_r_rm(e, ALU_CMP, mb.reg, mc);       /* cmp rb, c */
	} else if (mc.reg >= 0) {
		emit_alu_rm_r(e, ALU_CMP, mb, mc.reg);       /* cmp [b], rc */
	} else {
		emit_mov_r_rm(e, RAX, mb);
		emit_alu_r_rm(e, ALU_CMP, RAX, mc);
	}
}

/* a = (b cc c) ? 1 : 0, as  xor d, d; cmp b, c; setcc d8.  Zeroing d first (before the
 * compare, since xor sets flags) keeps setcc from merging into d's old value, which would
 * chain every comparison to whatever last wrote d.  d is a's register unless the compare
 * reads it; rdx otherwise (emit_cmp_slots uses only rax and rcx). */
static void emit_cmp_set(struct cg *g, int32_t a, int32_t b, int32_t c, int64_t imm, int ri,
                         enum cc cc)
{
	struct emit *e = &g->e;
	int t = work_reg(g, a);
	int d = t != RAX && g->reg_of[b] != t && (ri || g->reg_of[c] != t) ? t : RDX;
	emit_op(e, 0, 0x33, d, rm_reg(d));                   /* xor d32, d32 */
	emit_cmp_slots(g, b, c, imm, ri);
	emit_op(e, OP_BYTE, 0x0f90 + (unsigned)cc, 0, rm_reg(d));   /* setcc d8 */
	store_slot(g, a, d);
}

static void gen_setcc(struct cg *g, const struct xinsn *x, enum cc cc, int ri)
{
	emit_cmp_set(g, x->a, x->b, x->c, x->imm, ri, cc);
}

/* Ops of the XBIN list (xops.def) -> templates.  A new XBIN without a BIN_ line here fails
 * the build. */
#define BIN_ADD(g, x, ri)  gen_alu(g, x, ALU_ADD, ri)
#define BIN_SUB(g, x, ri)  gen_alu(g, x, ALU_SUB, ri)
#define BIN_AND(g, x, ri)  gen_alu(g, x, ALU_AND, ri)
#define BIN_OR(g, x, ri)   gen_alu(g, x, ALU_OR, ri)
#define BIN_XOR(g, x, ri)  gen_alu(g, x, ALU_XOR, ri)
#define BIN_MUL(g, x, ri)  gen_mul(g, x, ri)
#define BIN_SHL(g, x, ri)  gen_shift(g, x, SH_SHL, ri)
#define BIN_SHRU(g, x, ri) gen_shift(g, x, SH_SHR, ri)
#define BIN_SHRS(g, x, ri) gen_shift(g, x, SH_SAR, ri)
#define BIN_ROTL(g, x, ri) gen_shift(g, x, SH_ROL, ri)
#define BIN_ROTR(g, x, ri) gen_shift(g, x, SH_ROR, ri)
#define BIN_EQ(g, x, ri)   gen_setcc(g, x, CC_E, ri)
#define BIN_NE(g, x, ri)   gen_setcc(g, x, CC_NE, ri)
#define BIN_LTS(g, x, ri)  gen_setcc(g, x, CC_L, ri)
#define BIN_LTU(g, x, ri)  gen_setcc(g, x, CC_B, ri)
#define BIN_LES(g, x, ri)  gen_setcc(g, x, CC_LE, ri)
#define BIN_LEU(g, x, ri)  gen_setcc(g, x, CC_BE, ri)
#define BIN_GTS(g, x, ri)  gen_setcc(g, x, CC_G, ri)
#define BIN_GTU(g, x, ri)  gen_setcc(g, x, CC_A, ri)
#define BIN_GES(g, x, ri)  gen_setcc(g, x, CC_GE, ri)
#define BIN_GEU(g, x, ri)  gen_setcc(g, x, CC_AE, ri)

/* Unary ops (XUN). */
static void gen_f7(struct cg *g, const struct xinsn *x, enum f7 op)    /* neg, not */
{
	int t = work_reg(g, x->a);
	load_slot(g, t, x->b);
	emit_op(&g->e, OP_W, 0xf7, op, rm_reg(t));
	store_slot(g, x->a, t);
}

/* clz/ctz: bsr/bsf leave the destination undefined for 0, so 0 is handled first. */
static void gen_bitscan(struct cg *g, const struct xinsn *x, int clz)
{
	struct emit *e = &g->e;
	if (!clz && __builtin_cpu_supports("bmi")) {
		/* tzcnt t, b: 64 for 0, the ISA's ctz (bitmap: one instruction for five and a
		 * branch); without BMI1 the same bytes would run as bsf */
		int t = work_reg(g, x->a);
		emit_op(e, OP_F3 | OP_W, 0x0fbc, t, src_slot(g, x->b));
		store_slot(g, x->a, t);
		return;
	}
	load_slot(g, RCX, x->b);
	emit_mov_imm(e, RAX, 64);                          /* mov eax, 64 */
	emit_op(e, OP_W, 0x85, RCX, rm_reg(RCX));           /* test rcx, rcx */
	uint32_t zero = emit_skip(g, CC_E);
	emit_op(e, OP_W, clz ? 0x0fbd : 0x0fbc, RAX, rm_reg(RCX));   /* bsr/bsf rax, rcx */
	if (clz)
		emit_alu_rm_imm(e, OP_W, ALU_XOR, rm_reg(RAX), 63);   /* 63 - i == i ^ 63 */
	emit_land(g, zero);
	store_slot(g, x->a, RAX);
}

static void unsupported(struct cg *g, const struct xinsn *x);

static void gen_popcnt(struct cg *g, const struct xinsn *x)
{
	if (!__builtin_cpu_supports("popcnt")) {       /* x86-64 before 2008 */
		unsupported(g, x);
		return;
	}
	int t = work_reg(g, x->a);
	emit_op(&g->e, OP_F3 | OP_W, 0x0fb8, t, slot(g, x->b));   /* popcnt t, b */
	store_slot(g, x->a, t);
}

/* movsx t, b8/b16/b32 (from memory: the low bytes, little-endian) */
static void gen_sext(struct cg *g, const struct xinsn *x, unsigned opcode)
{
	int t = work_reg(g, x->a);
	emit_op(&g->e, OP_W | OP_BYTE, opcode, t, slot(g, x->b));
	store_slot(g, x->a, t);
}

static void gen_eqz(struct cg *g, const struct xinsn *x)
{
	emit_cmp_set(g, x->a, x->b, 0, 0, 1, CC_E);
}

#define UN_NEG(g, x)    gen_f7(g, x, F7_NEG)
#define UN_NOT(g, x)    gen_f7(g, x, F7_NOT)
#define UN_CLZ(g, x)    gen_bitscan(g, x, 1)
#define UN_CTZ(g, x)    gen_bitscan(g, x, 0)
#define UN_POPCNT(g, x) gen_popcnt(g, x)
#define UN_SEXT8(g, x)  gen_sext(g, x, 0x0fbe)       /* movsx r64, r/m8 */
#define UN_SEXT16(g, x) gen_sext(g, x, 0x0fbf)       /* movsx r64, r/m16 */
#define UN_SEXT32(g, x) gen_sext(g, x, 0x63)         /* movsxd r64, r/m32 */
#define UN_EQZ(g, x)    gen_eqz(g, x)

static void gen_mov(struct cg *g, const struct xinsn *x)
{
	struct rm ma = slot(g, x->a), mb = slot(g, x->b);
	uint32_t start = (uint32_t)g->e.len;
	if (x->a == x->b)
		return;
	/* b = a right after a = b: they are equal already (btree: clang's copies before its
	 * loop test) */
	if (g->mov_end == g->e.len && g->mov_a == x->b && g->mov_b == x->a)
		return;
	if (ma.reg >= 0)
		emit_mov_r_rm(&g->e, ma.reg, mb);
	else if (mb.reg >= 0)
		emit_mov_rm_r(&g->e, ma, mb.reg);
	else {
		emit_mov_r_rm(&g->e, RAX, mb);
		emit_mov_rm_r(&g->e, ma, RAX);
	}
	g->mov_end = (uint32_t)g->e.len;
	g->mov_a = x->a;
	g->mov_b = x->b;
	keep_zf(g, start, x->a);
}

static void gen_movi(struct cg *g, const struct xinsn *x)
{
	struct rm ma = slot(g, x->a);
	uint32_t start = (uint32_t)g->e.len;
	if (ma.reg >= 0) {
		emit_mov_imm(&g->e, ma.reg, (uint64_t)x->imm);
	} else if (fits32(x->imm)) {
		emit_op(&g->e, OP_W, 0xc7, 0, ma);              /* mov qword [a], simm32 */
		emit4(&g->e, (uint32_t)x->imm);
	} else {
		emit_mov_imm(&g->e, RAX, (uint64_t)x->imm);
		emit_mov_rm_r(&g->e, ma, RAX);
	}
	keep_zf(g, start, x->a);                       /* mov r, imm: the flags stay */
}

/* Division by a slot: div_zero when it is 0; signed by -1 is negation (div_overflow for
 * INT64_MIN, which `neg` flags as overflow) or 0 (rem), since idiv would fault. */
static void gen_div_rr(struct cg *g, const struct xinsn *x, int is_signed, int rem)
{
	struct emit *e = &g->e;
	int res = rem ? RDX : RAX;
	load_slot(g, RCX, x->c);
	emit_op(e, OP_W, 0x85, RCX, rm_reg(RCX));           /* test rcx, rcx */
	emit_jcc_trap(g, CC_E, ISA_TRAP_DIV_ZERO);
	load_slot(g, RAX, x->b);
	uint32_t done = 0;
	if (is_signed) {
		emit_alu_rm_imm(e, OP_W, ALU_CMP, rm_reg(RCX), -1);
		uint32_t normal = emit_skip(g, CC_NE);
		if (rem) {
			emit_mov_imm(e, RDX, 0);
		} else {
			emit_op(e, OP_W, 0xf7, F7_NEG, rm_reg(RAX));   /* neg rax */
			emit_jcc_trap(g, CC_O, ISA_TRAP_DIV_OVERFLOW);
		}
		done = emit_skip(g, CC_ALWAYS);
		emit_land(g, normal);
		emit1(e, 0x48);
		emit1(e, 0x99);                                /* cqo */
		emit_op(e, OP_W, 0xf7, F7_IDIV, rm_reg(RCX));   /* idiv rcx */
		emit_land(g, done);
	} else {
		emit_mov_imm(e, RDX, 0);
		emit_op(e, OP_W, 0xf7, F7_DIV, rm_reg(RCX));    /* div rcx */
	}
	store_slot(g, x->a, res);
}

/* Division by a constant (never 0 or -1, translate.c made sure).  Unsigned: multiply by a
 * magic reciprocal (Granlund & Montgomery 1994, fig. 4.1), which works for every divisor:
 *   l = ceil(log2 d), m = floor(2^64 * (2^l - d) / d) + 1, t = mulhi(m, n),
 *   q = (t + ((n - t) >> 1)) >> (l - 1).
 * Signed: idiv, which is exact and rare in hot code. */
static void gen_div_ri(struct cg *g, const struct xinsn *x, int is_signed, int rem)
{
	struct emit *e = &g->e;
	uint64_t d = (uint64_t)x->imm;
	if (is_signed) {
		load_slot(g, RAX, x->b);
		emit_mov_imm(e, RCX, d);
		emit1(e, 0x48);
		emit1(e, 0x99);                                /* cqo */
		emit_op(e, OP_W, 0xf7, F7_IDIV, rm_reg(RCX));   /* idiv rcx */
		store_slot(g, x->a, rem ? RDX : RAX);
		return;
	}
	/* n: b's register where it has one (not rax or rdx, which the multiply takes), else
	 * rcx; a remainder into n's own register is one sub, as gcc does it (isum's s += i * i
	 * % 7 had two more movs) */
	struct rm mb = src_slot(g, x->b);
	int n = mb.reg >= 0 && mb.reg != RAX && mb.reg != RDX ? mb.reg : RCX;
	load_slot(g, n, x->b);
	if ((d & (d - 1)) == 0) {                          /* 1, 2, 4, ...: a shift or a mask */
		int k = __builtin_ctzll(d);
		emit_mov_rr(e, RAX, n);
		if (rem) {
			emit_mov_imm(e, RDX, d - 1);
			emit_alu_r_rm(e, ALU_AND, RAX, rm_reg(RDX));
		} else if (k) {
			emit_op(e, OP_W, 0xc1, SH_SHR, rm_reg(RAX));
			emit1(e, (unsigned)k);
		}
		store_slot(g, x->a, RAX);
		return;
	}
	int l = 64 - __builtin_clzll(d - 1);
	uint64_t two_l_minus_d = l == 64 ? 0 - d : (1ull << l) - d;
	uint64_t m = (uint64_t)(((unsigned __int128)two_l_minus_d << 64) / d) + 1;
	emit_mov_imm(e, RAX, m);
	emit_op(e, OP_W, 0xf7, F7_MUL, rm_reg(n));          /* mul n: rdx = mulhi(m, n) */
	emit_mov_rr(e, RAX, n);
	emit_alu_r_rm(e, ALU_SUB, RAX, rm_reg(RDX));        /* n - t */
	emit_op(e, OP_W, 0xd1, SH_SHR, rm_reg(RAX));        /* shr rax, 1 */
	emit_alu_r_rm(e, ALU_ADD, RAX, rm_reg(RDX));
	if (l > 1) {
		emit_op(e, OP_W, 0xc1, SH_SHR, rm_reg(RAX));    /* shr rax, l - 1 */
		emit1(e, (unsigned)(l - 1));
	}
	if (rem) {                                         /* n - q * d */
		if (fits32((int64_t)d)) {
			emit_op(e, OP_W, 0x69, RAX, rm_reg(RAX));   /* imul rax, rax, d */
			emit4(e, (uint32_t)d);
		} else {
			emit_mov_imm(e, RDX, d);
			emit_op(e, OP_W, 0x0faf, RAX, rm_reg(RDX));
		}
		int t = work_reg(g, x->a);
		if (t != n) {
			t = t == RAX ? RCX : t;
			emit_mov_rr(e, t, n);
		}
		emit_alu_r_rm(e, ALU_SUB, t, rm_reg(RAX));        /* n - q * d */
		store_slot(g, x->a, t);
	} else {
		store_slot(g, x->a, RAX);
	}
}

/* return the value in rax to the caller (the trampoline, or a call template) */
static void gen_ret(struct cg *g, const struct xinsn *x, int imm)
{
	if (imm)
		emit_mov_imm(&g->e, RAX, (uint64_t)x->imm);
	else
		load_slot(g, RAX, x->b);
	emit_ret(&g->e);
}

/* fp[a] = fp[c] ? fp[imm] : fp[b] */
static void gen_select(struct cg *g, const struct xinsn *x)
{
	struct emit *e = &g->e;
	load_slot(g, RAX, x->b);
	emit_cmp_slots(g, x->c, 0, 0, 1);
	emit_op(e, OP_W, 0x0f40 + CC_NE, RAX, slot(g, (int32_t)x->imm));   /* cmovne rax, [imm] */
	store_slot(g, x->a, RAX);
}

static void gen_xswap(struct cg *g, const struct xinsn *x)
{
	load_slot(g, RAX, x->a);
	load_slot(g, RCX, x->b);
	store_slot(g, x->a, RCX);
	store_slot(g, x->b, RAX);
}

static void gen_xrot(struct cg *g, const struct xinsn *x)
{
	load_slot(g, RAX, x->a);
	load_slot(g, RCX, x->a + 1);
	load_slot(g, RDX, x->a + 2);
	store_slot(g, x->a, RCX);
	store_slot(g, x->a + 1, RDX);
	store_slot(g, x->a + 2, RAX);
}

enum sink { SINK_NONE, SINK_DROP, SINK_OUT, SINK_TAKEN };
static bool has_sunk(const struct cg *g, uint32_t j, enum sink kind);
static void gen_sunk(struct cg *g, uint32_t j, enum sink kind);

/* With dl_rel, on a way out at the current xinsn: the fuel back in r13,
 *   lea r13, [r13 + c + 1 if after the step]     (rax holding c when it is in memory)
 * lea, to leave the flags to whatever compare they hold. */
static void emit_fuel_back(struct cg *g)
{
	int c = g->reg_of[g->dl_c];
	if (c < 0) {
		load_slot(g, RAX, g->dl_c);
		c = RAX;
	}
	struct rm m = rm_idx(R_FUEL, c);
	m.disp = g->xi > g->dl_step;
	emit_op(&g->e, OP_W, 0x8d, R_FUEL, m);
}

/* A taken backward branch spends one unit of fuel; when the chunk in r13 is empty the refill
 * stub gets the next one (or traps) and then takes the branch:
 *   sub r13, 1; jae target; jmp refill stub    (borrow <=> the chunk was empty) */
static void emit_fuel_jmp(struct cg *g, uint32_t target)
{
	emit_alu_rm_imm(&g->e, OP_W, ALU_SUB, rm_reg(R_FUEL), 1);
	if (target == g->peel_xi) {
		assert(g->peel_at == UINT32_MAX);   /* one back edge: find_peel's loop */
		g->peel_at = emit_jcc(&g->e, CC_AE);
	} else if (g->slow_head != UINT32_MAX && target == g->slow_head_xi)
		emit_jcc_back(&g->e, CC_AE, g->slow_head);        /* not its guard */
	else if (g->range_lo != UINT32_MAX && target >= g->range_lo && target <= g->xi)
		emit_jcc_back(&g->e, CC_AE, g->xoff[target]);
	else
		emit_jcc_x(g, CC_AE, target);
	emit_jcc_refill(g, CC_ALWAYS, target, false);
}

/* Branch to xinsn xi + d when the flags say cc; backward ones go through the fuel check. */
static void emit_branch(struct cg *g, const struct xinsn *x, int cc, int back)
{
	uint32_t target = g->xi + (uint32_t)x->d;
	if (back && target == g->dl_head_xi) {
		/* the guard proved the fuel lasts: lea r13, [r13 - 1]; jcc head; and where it falls
		 * through, lea r13, [r13 + 1] (lea leaves the flags to the compare's next users),
		 * then the copies sunk to the way out.  With dl_rel, jcc head alone. */
		if (!g->dl_rel && !g->dl_pre)
			emit_op(&g->e, OP_W, 0x8d, R_FUEL, rm_mem(R_FUEL, -1));
		emit_jcc_back(&g->e, cc, g->xoff[target]);
		g->dl_back_end = (uint32_t)g->e.len;
		if (cc != CC_ALWAYS) {
			if (g->dl_rel)
				emit_fuel_back(g);
			else if (!g->dl_pre)
				emit_op(&g->e, OP_W, 0x8d, R_FUEL, rm_mem(R_FUEL, 1));
			gen_sunk(g, g->xi, SINK_OUT);
		}
		return;
	}
	if (!back && g->dl_head_xi != UINT32_MAX &&
	    ((g->dl_rel && target > g->dl_back) || (g->sink && has_sunk(g, g->xi, SINK_TAKEN)))) {
		/* to a stub that puts the fuel back and makes the copies first (gen_dloop_fast) */
		g->sink_at[g->n_sink_at++] = (struct sinkstub){ emit_jcc(&g->e, cc), g->xi, target };
		return;
	}
	if (!back) {
		emit_jcc_x(g, cc, target);
		return;
	}
	uint32_t skip = cc == CC_ALWAYS ? 0 : emit_skip(g, cc ^ 1);
	emit_fuel_jmp(g, target);
	if (cc != CC_ALWAYS)
		emit_land(g, skip);
}

/* A conditional branch on b cc c (or imm): the compare, unless the flags hold it already
 * (cmp_end); they still do after the branch, where it falls through. */
static void emit_jcc_cmp(struct cg *g, const struct xinsn *x, enum cc cc, int32_t c,
                         int64_t imm, int back)
{
	struct flagcmp want = { x->b, c, c < 0 ? imm : 0 };
	bool have = g->cmp_end == g->e.len && same_cmp(&g->cmp, &want);
	if (!have && c < 0 && imm == 0 && (cc == CC_E || cc == CC_NE) &&
	    g->zf_end == g->e.len && g->zf_slot == x->b) {
		emit_branch(g, x, cc, back);               /* ZF of the ALU op that computed b */
		return;
	}
	if (!have)
		emit_cmp_slots(g, x->b, c, imm, c < 0);    /* test b, b for 0: cmp's flags */
	g->cmp = want;
	g->cmp_end = (uint32_t)g->e.len;
	emit_branch(g, x, cc, back);
	g->cmp = want;                                 /* what falls through still has them */
	g->cmp_end = (uint32_t)g->e.len;
}

static void gen_jcc(struct cg *g, const struct xinsn *x, enum cc cc, int ri, int back)
{
	emit_jcc_cmp(g, x, cc, ri ? -1 : x->c, ri ? x->imm : 0, back);
}

#define CC_EQ  CC_E
#define CC_LTS CC_L
#define CC_LTU CC_B
#define CC_LES CC_LE
#define CC_LEU CC_BE
#define CC_GTS CC_G
#define CC_GTU CC_A
#define CC_GES CC_GE
#define CC_GEU CC_AE

/* ---- memory ----
 * Region r's entry in the table at r12: base at [r12 + 16 r], length at [r12 + 16 r + 8];
 * for the function's hot region, registers. */
static struct rm region_len(const struct cg *g, unsigned r)
{
	return (int)r == g->hot_region && g->hot_len >= 0 ? rm_reg(g->hot_len)
	                                                  : rm_mem(R_TAB, (int32_t)(16 * r + 8));
}
/* A register holding region r's base: its own, or rdx loaded from the table. */
static int region_base(struct cg *g, unsigned r)
{
	if ((int)r == g->hot_region)
		return g->hot_base;
	emit_mov_r_rm(&g->e, RDX, rm_mem(R_TAB, (int32_t)(16 * r)));
	return RDX;
}

/* Trap `kind` unless [off, off + w) lies inside a region of length `len` (memory operand):
 *   w == 1:  cmp off, len; jae trap
 *   else:    mov rcx, len; sub rcx, w; jb trap; cmp off, rcx; ja trap
 * which is the interpreter's off <= len && w <= len - off, without overflow.  Region r's
 * (r >= 0) wider accesses compare with its limit in the context instead, computed once per
 * run: cmp off, [r14 + lim]; jae trap, one fused compare and branch where there were two
 * (off >= lim is exactly off > len - w or len < w). */
static void emit_bounds(struct cg *g, int off, struct rm len, unsigned w, int kind, int r)
{
	struct emit *e = &g->e;
	if (g->fast) {                 /* a versioned loop's guard proved every access */
		assert(kind == ISA_TRAP_BOUNDS);
		return;
	}
	if (w == 1) {
		emit_alu_r_rm(e, ALU_CMP, off, len);
		emit_jcc_trap(g, CC_AE, kind);
		return;
	}
	if (r >= 0 && r != ISA_R_OUT && r < JIT_LIM_REGIONS) {
		unsigned k = w == 2 ? 0 : w == 4 ? 1 : 2;
		emit_alu_r_rm(e, ALU_CMP, off, rm_mem(R_CTX, (int32_t)(offsetof(struct jit_ctx, lim) +
		              sizeof(uint64_t) * (3 * (unsigned)r + k))));
		emit_jcc_trap(g, CC_AE, kind);
		return;
	}
	emit_mov_r_rm(e, RCX, len);
	emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RCX), (int32_t)w);
	emit_jcc_trap(g, CC_B, kind);
	emit_alu_r_rm(e, ALU_CMP, off, rm_reg(RCX));
	emit_jcc_trap(g, CC_A, kind);
}

/* The register holding slot s + disp (an offset): the slot's register when disp is 0. */
static int offset_reg(struct cg *g, int32_t s, int64_t disp)
{
	if (disp == 0 && g->reg_of[s] >= 0)
		return g->reg_of[s];
	struct rm ms = src_slot(g, s);
	if (disp != 0 && fits32(disp) && ms.reg >= 0) {
		emit_op(&g->e, OP_W, 0x8d, RAX, rm_mem(ms.reg, (int32_t)disp));   /* lea rax, [s + disp] */
		return RAX;
	}
	load_slot(g, RAX, s);
	if (disp == 0)
		return RAX;
	if (fits32(disp)) {
		emit_alu_rm_imm(&g->e, OP_W, ALU_ADD, rm_reg(RAX), (int32_t)disp);
	} else {
		emit_mov_imm(&g->e, RCX, (uint64_t)disp);
		emit_alu_r_rm(&g->e, ALU_ADD, RAX, rm_reg(RCX));
	}
	return RAX;
}

/* Whether x, the xinsn being compiled, is an access whose bounds check a peeled loop's
 * earlier iteration made already (gen_peel). */
static bool proven(const struct cg *g, const struct xinsn *x)
{
	return g->peel_skip && x == &g->xf->code[g->xi] && g->xi >= g->peel_lo &&
	       g->peel_skip[g->xi - g->peel_lo];
}

/* fp[a] = region c [fp[b] + imm], w bytes, zero- or sign-extended */
static void gen_load(struct cg *g, const struct xinsn *x, unsigned w, int is_signed)
{
	static const unsigned zx[] = { [1] = 0x0fb6, [2] = 0x0fb7, [4] = 0x8b, [8] = 0x8b };
	static const unsigned sx[] = { [1] = 0x0fbe, [2] = 0x0fbf, [4] = 0x63, [8] = 0x8b };
	struct emit *e = &g->e;
	int off = offset_reg(g, x->b, x->imm);
	if (!proven(g, x))
		emit_bounds(g, off, region_len(g, (unsigned)x->c), w, ISA_TRAP_BOUNDS, x->c);
	int base = region_base(g, (unsigned)x->c);
	int t = work_reg(g, x->a);
	/* movzx r32 / mov r32 zero-extend to 64 bits; movsx/movsxd/mov r64 need REX.W */
	unsigned flags = is_signed || w == 8 ? OP_W : 0;
	emit_op(e, flags, is_signed ? sx[w] : zx[w], t, rm_idx(base, off));
	store_slot(g, x->a, t);
}

/* mov [base + off], v with w bytes */
static void emit_store_w(struct emit *e, unsigned w, int base, int off, int v)
{
	struct rm m = rm_idx(base, off);
	switch (w) {
	case 1: emit_op(e, OP_BYTE, 0x88, v, m); break;
	case 2: emit_op(e, OP_66, 0x89, v, m); break;
	case 4: emit_op(e, 0, 0x89, v, m); break;
	default: emit_op(e, OP_W, 0x89, v, m); break;
	}
}

static void out_extend_helper(struct mref *R, uint64_t off, uint64_t n) { out_extend(R, off, n); }

/* region c [fp[a]] = low w bytes of fp[b]; the out region checks out_cap (trap output_full)
 * and grows the output, zero-filling any gap, like the interpreter's out_extend. */
static void gen_store(struct cg *g, const struct xinsn *x, unsigned w, int out)
{
	struct emit *e = &g->e;
	int off = offset_reg(g, x->a, 0);
	if (!out) {
		if (!proven(g, x))
			emit_bounds(g, off, region_len(g, (unsigned)x->c), w, ISA_TRAP_BOUNDS, x->c);
	} else {
		emit_bounds(g, off, rm_mem(R_CTX, offsetof(struct jit_ctx, out_cap)), w,
		            ISA_TRAP_OUTPUT_FULL, -1);
		/* lea rcx, [off + w]; cmp rcx, out.len; jbe done; call out_extend */
		emit_op(e, OP_W, 0x8d, RCX, rm_mem(off, (int32_t)w));
		emit_alu_r_rm(e, ALU_CMP, RCX, region_len(g, ISA_R_OUT));
		uint32_t done = emit_skip(g, CC_BE);
		spill_all(g);
		emit_mov_rr(e, RDI, R_TAB);
		emit_mov_r_rm(e, RSI, rm_mem(R_FP, 8 * x->a));
		emit_mov_imm(e, RDX, w);
		emit_call_abs(e, (const void *)out_extend_helper);
		reload_all(g);
		if (off == RAX)
			load_slot(g, RAX, x->a);
		emit_land(g, done);
	}
	int base = region_base(g, (unsigned)x->c);
	int v = g->reg_of[x->b] >= 0 ? g->reg_of[x->b] : RCX;
	load_slot(g, v, x->b);
	emit_store_w(e, w, base, off, v);
}

/* ld8u r [fp[b]]; compare with imm; branch (forward only, translate.c fuses no others) */
static void gen_ld8u_jcc(struct cg *g, const struct xinsn *x, enum cc cc)
{
	struct emit *e = &g->e;
	int off = offset_reg(g, x->b, 0);
	emit_bounds(g, off, region_len(g, (unsigned)x->c), 1, ISA_TRAP_BOUNDS, x->c);
	int base = region_base(g, (unsigned)x->c);
	emit_op(e, 0, 0x0fb6, RAX, rm_idx(base, off));      /* movzx eax, byte [base + off] */
	if (fits32(x->imm)) {
		emit_alu_rm_imm(e, OP_W, ALU_CMP, rm_reg(RAX), (int32_t)x->imm);
	} else {
		emit_mov_imm(e, RCX, (uint64_t)x->imm);
		emit_alu_r_rm(e, ALU_CMP, RAX, rm_reg(RCX));
	}
	emit_branch(g, x, cc, 0);
}

static void gen_rlen(struct cg *g, const struct xinsn *x, unsigned r)
{
	int t = work_reg(g, x->a);
	emit_mov_r_rm(&g->e, t, region_len(g, r));
	store_slot(g, x->a, t);
}

/* ---- C helpers: int helper(struct run *, uint64_t *v = &fp[a], c, b) -> 0 or a trap kind.
 * The operands are read from and the result written to the frame in memory, so every cached
 * slot is written back before and read again after. */
typedef int helper_fn(struct run *run, uint64_t *v, uint32_t c, uint32_t b);

static int h_cas(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_cas(run, v, c); }
static int h_fadd(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_fadd(run, v, c); }
static int h_copy(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_copy(run, v, c, b); }
static int h_fill(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_fill(run, v, c); }
static int h_cmp(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_cmp(run, v, c, b); }
static int h_findb(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_findb(run, v, c); }
static int h_finds(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_finds(run, v, c, b); }
static int h_findsi(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_findsi(run, v, c, b); }
static int h_findset(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_findset(run, v, c, b); }
static int h_output(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_output(run, v, c); }
static int h_outb(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_outb(run, v); }
static int h_outq(struct run *run, uint64_t *v, uint32_t c, uint32_t b) { return vm_op_outq(run, v); }
/* hooks: the same libffi path as the interpreter (hooks.c), hook index in c; the hook's
 * time is charged to run->fuel, which gen_helper_fuel keeps in step with r13 */
static int h_hcall(struct run *run, uint64_t *v, uint32_t c, uint32_t b)
{
	return vm_hook_call(run, run->prog->hooks[c], (int64_t *)v);
}

/* Call fn(run, &slot a, c, b); a non-zero result is the kind of trap.  With fuel, the fuel
 * counter goes to run->fuel before the call and comes back after it (hooks charge it). */
static void gen_helper_fuel(struct cg *g, helper_fn *fn, int32_t a, uint32_t c, uint32_t b,
                            bool fuel)
{
	struct emit *e = &g->e;
	spill_for_helper(g, a);
	emit_mov_r_rm(e, RDI, rm_mem(R_CTX, offsetof(struct jit_ctx, run)));
	if (fuel)
		emit_mov_rm_r(e, rm_mem(RDI, offsetof(struct run, fuel)), R_FUEL);
	emit_op(e, OP_W, 0x8d, RSI, rm_mem(R_FP, 8 * a));     /* lea rsi, [rbx + 8a] */
	emit_mov_imm(e, RDX, c);
	emit_mov_imm(e, RCX, b);
	emit_call_abs(e, (const void *)fn);
	if (fuel) {
		emit_mov_r_rm(e, RCX, rm_mem(R_CTX, offsetof(struct jit_ctx, run)));
		emit_mov_r_rm(e, R_FUEL, rm_mem(RCX, offsetof(struct run, fuel)));
	}
	emit_op(e, 0, 0x85, RAX, rm_reg(RAX));               /* test eax, eax */
	emit_jcc_trap(g, CC_NE, -1);                          /* the kind is in eax */
	reload_for_helper(g, a);
}

static void gen_helper(struct cg *g, helper_fn *fn, int32_t a, uint32_t c, uint32_t b)
{
	gen_helper_fuel(g, fn, a, c, b, false);
}

/* call: fuel, then depth and frame room (trap stack), exactly in the interpreter's order; the
 * callee's frame starts at fp + a, where the arguments are; its result comes back in rax.
 * The depth is not counted: every activation takes exactly 8 bytes of C stack (its return
 * address; calls out to C align rsp themselves, emit_call_abs), so rsp itself says how deep
 * the call is, and the check is one compare with rsp_limit (set by the trampoline).  A
 * counter in the context cost a read-modify-write before and after every call, one chain
 * through memory across all calls of the run (fib). */
static void gen_insn(struct cg *g, const struct xinsn *x);

/* A call; with in_rax its result stays in rax, slot a untouched (gen_fold).  With arg, the
 * xinsn before the call, which computes the callee's one argument (fold_kind 5), is compiled
 * after the checks and spills straight into the register the callee takes it in. */
static void gen_call(struct cg *g, const struct xinsn *x, bool in_rax, const struct xinsn *arg)
{
	struct emit *e = &g->e;
	uint32_t callee = (uint32_t)x->imm;
	const struct xfunc *cf = &g->prog->funcs[callee];
	emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(R_FUEL), 1);    /* sub r13, 1 */
	emit_jcc_refill(g, CC_B, 0, true);
	emit_alu_r_rm(e, ALU_CMP, RSP, rm_mem(R_CTX, offsetof(struct jit_ctx, rsp_limit)));
	emit_jcc_trap(g, CC_BE, ISA_TRAP_STACK);                /* rsp <= limit: depth max */
	if (!g->frames_fit) {
		emit_op(e, OP_W, 0x8d, RAX, rm_mem(R_FP, (int32_t)(8 * ((int64_t)x->a + cf->n_slots))));
		emit_alu_r_rm(e, ALU_CMP, RAX, rm_mem(R_CTX, offsetof(struct jit_ctx, slots_end)));
		emit_jcc_trap(g, CC_A, ISA_TRAP_STACK);             /* fp + a + n_slots > end */
	}
	/* The arguments the callee caches go straight into its registers: from the caller's
	 * register while no earlier move has overwritten it, else from the frame.  The callee
	 * never reads such an argument's frame slot before writing it (only the trampoline's
	 * outer entry loads them), and the caller's slots from a on are dead after the call but
	 * for the result, so an argument moved from a register is not written back (fib: one
	 * store a call). */
	const int8_t *ar = &g->arg_reg[g->arg_base[callee]];
	bool from_reg[UINT8_MAX + 1];
	unsigned clobbered = 0;
	for (unsigned k = 0; k < cf->n_args; k++) {
		int rs = g->reg_of[x->a + (int32_t)k];
		from_reg[k] = ar[k] >= 0 && ((rs >= 0 && !(clobbered >> rs & 1)) || arg);
		if (ar[k] >= 0)
			clobbered |= 1u << ar[k];
	}
	for (unsigned i = 0; i < g->n_cached; i++) {
		int32_t s = g->cached[i];
		if (s < x->a || s >= x->a + (int32_t)cf->n_args || !from_reg[s - x->a])
			emit_mov_rm_r(e, rm_mem(R_FP, 8 * s), g->reg_of[s]);
	}
	if (arg) {
		/* every slot is in the frame now: arg may compute in place in a register that
		 * holds another slot (fib: add rsi, -1 for fib(n - 1), n already stored) */
		int8_t r = g->reg_of[x->a];
		g->reg_of[x->a] = ar[0];
		gen_insn(g, arg);
		g->reg_of[x->a] = r;
	}
	for (unsigned k = 0; k < cf->n_args && !arg; k++) {
		int32_t s = x->a + (int32_t)k;
		if (from_reg[k])
			emit_mov_rr(e, ar[k], g->reg_of[s]);
		else if (ar[k] >= 0)
			emit_mov_r_rm(e, ar[k], rm_mem(R_FP, 8 * s));
	}
	emit_alu_rm_imm(e, OP_W, ALU_ADD, rm_reg(R_FP), 8 * x->a);
	emit1(e, 0xe8);                                          /* call rel32 */
	g->calls = grow(g, g->calls, &g->cap_calls, g->n_calls, sizeof *g->calls);
	if (!e->err)
		g->calls[g->n_calls++] = (struct callsite){ (uint32_t)e->len, callee };
	emit4(e, 0);
	emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(R_FP), 8 * x->a);
	reload_all_but(g, x->a);                                 /* slot a: the result, below */
	if (!in_rax)
		store_slot(g, x->a, RAX);
}

static void gen_trap(struct cg *g, const struct xinsn *x)
{
	emit_op(&g->e, 0, 0xc7, 0, rm_mem(R_CTX, offsetof(struct jit_ctx, trap_code)));
	emit4(&g->e, (uint32_t)x->imm);                          /* mov dword [code], imm */
	emit_jcc_trap(g, CC_ALWAYS, ISA_TRAP_USER);
}

/* ld8u t = r[b + imm]; eq/ne t = t, k (0 <= k <= 255), the byte scanning idiom: when the
 * loaded byte is dead after the compare, compare it in memory (cmp byte [base + off], k)
 * instead of loading it first.  Returns 1 when it emitted the pair. */
static int gen_ld8u_cmp(struct cg *g, const struct xinsn *ld, const struct xinsn *x)
{
	struct emit *e = &g->e;
	if (ld->op != X_LD8U || (x->op != X_EQ_RI && x->op != X_NE_RI) || x->b != ld->a ||
	    x->a != ld->a || x->imm < 0 || x->imm > 255)
		return 0;
	int off = offset_reg(g, ld->b, ld->imm);
	emit_bounds(g, off, region_len(g, (unsigned)ld->c), 1, ISA_TRAP_BOUNDS, ld->c);
	int base = region_base(g, (unsigned)ld->c);
	int t = work_reg(g, x->a);
	/* d is zeroed before the compare, so it must be neither the base nor the offset
	 * register (base may itself be a scratch register such as rdx) */
	const int cand[] = { t == RAX ? RDX : t, RDX, RCX, RAX };  /* off, base: 2 at most */
	int d = cand[0];
	for (size_t i = 1; i < sizeof cand / sizeof cand[0] && (d == off || d == base); i++)
		d = cand[i];
	emit_op(e, 0, 0x33, d, rm_reg(d));                   /* xor d32, d32 */
	emit_op(e, 0, 0x80, ALU_CMP, rm_idx(base, off));     /* cmp byte [base + off], k */
	emit1(e, (unsigned)x->imm);
	emit_op(e, OP_BYTE, 0x0f90 + (unsigned)(x->op == X_EQ_RI ? CC_E : CC_NE), 0, rm_reg(d));
	store_slot(g, x->a, d);
	return 1;
}

static void unsupported(struct cg *g, const struct xinsn *x)
{
	if (!g->unsupported)
		g->unsupported = xop_names[x->op];
}

/* One xinsn.  The switch has no default: with -Werror=switch a new xop without a template
 * fails the build, and translate.c's switch over enum op does the same for new opcodes. */
static void gen_insn(struct cg *g, const struct xinsn *x)
{
	switch ((enum xop)x->op) {
#define XBIN(n, e) \
	case X_##n##_RR: BIN_##n(g, x, 0); break; \
	case X_##n##_RI: BIN_##n(g, x, 1); break;
#define XUN(n, e) case X_##n: UN_##n(g, x); break;
#define XCC(n, e) \
	case X_J##n##_RR: gen_jcc(g, x, CC_##n, 0, 0); break; \
	case X_J##n##_RI: gen_jcc(g, x, CC_##n, 1, 0); break; \
	case X_J##n##_RRB: gen_jcc(g, x, CC_##n, 0, 1); break; \
	case X_J##n##_RIB: gen_jcc(g, x, CC_##n, 1, 1); break;
#define XLD(n, w, t) case X_##n: gen_load(g, x, w, (t)-1 < (t)1); break;
#define XST(n, w, t) \
	case X_##n: gen_store(g, x, w, 0); break; \
	case X_##n##_OUT: gen_store(g, x, w, 1); break;
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_MOV: gen_mov(g, x); break;
	case X_MOVI: gen_movi(g, x); break;
	case X_DIVS_RR: gen_div_rr(g, x, 1, 0); break;
	case X_DIVU_RR: gen_div_rr(g, x, 0, 0); break;
	case X_REMS_RR: gen_div_rr(g, x, 1, 1); break;
	case X_REMU_RR: gen_div_rr(g, x, 0, 1); break;
	case X_DIVS_RI: gen_div_ri(g, x, 1, 0); break;
	case X_DIVU_RI: gen_div_ri(g, x, 0, 0); break;
	case X_REMS_RI: gen_div_ri(g, x, 1, 1); break;
	case X_REMU_RI: gen_div_ri(g, x, 0, 1); break;
	case X_SELECT: gen_select(g, x); break;
	case X_XSWAP: gen_xswap(g, x); break;
	case X_XROT: gen_xrot(g, x); break;
	case X_JMP: emit_branch(g, x, CC_ALWAYS, 0); break;
	case X_JMPB: emit_branch(g, x, CC_ALWAYS, 1); break;
	case X_JZ: emit_jcc_cmp(g, x, CC_E, -1, 0, 0); break;
	case X_JZB: emit_jcc_cmp(g, x, CC_E, -1, 0, 1); break;
	case X_JNZ: emit_jcc_cmp(g, x, CC_NE, -1, 0, 0); break;
	case X_JNZB: emit_jcc_cmp(g, x, CC_NE, -1, 0, 1); break;
	case X_LD8U_JEQ_I: gen_ld8u_jcc(g, x, CC_E); break;
	case X_LD8U_JNE_I: gen_ld8u_jcc(g, x, CC_NE); break;
	case X_RLEN: gen_rlen(g, x, (unsigned)x->c); break;
	case X_RLEN_OUT: gen_rlen(g, x, ISA_R_OUT); break;
	case X_CAS: gen_helper(g, h_cas, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FADD: gen_helper(g, h_fadd, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_COPY: gen_helper(g, h_copy, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FILL: gen_helper(g, h_fill, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_CMP: gen_helper(g, h_cmp, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FINDB: gen_helper(g, h_findb, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FINDS: gen_helper(g, h_finds, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FINDSI: gen_helper(g, h_findsi, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_FINDSET: gen_helper(g, h_findset, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_OUTPUT: gen_helper(g, h_output, x->a, (uint32_t)x->c, (uint32_t)x->b); break;
	case X_OUTB: gen_helper(g, h_outb, x->a, 0, 0); break;
	case X_OUTQ: gen_helper(g, h_outq, x->a, 0, 0); break;
	case X_HCALL: gen_helper_fuel(g, h_hcall, x->a, (uint32_t)x->imm, 0, true); break;
	case X_CALL: gen_call(g, x, false, NULL); break;
	case X_TRAP: gen_trap(g, x); break;
	case X_RET: gen_ret(g, x, 0); break;
	case X_RETI: gen_ret(g, x, 1); break;
	case X_COUNT: break;
	/* Superinstructions are formed after the JIT has read the code (vm_thread_code); met
	 * here all the same, one is its first half: the second is still the next xinsn. */
#define XBIN(n, e) case X_LD8U_##n##_RR: case X_LD8U_##n##_RI:
#define XUN(n, e)
#define XCC(n, e) case X_ADDI_J##n##_RR: case X_ADDI_J##n##_RI: \
	case X_ADDI_J##n##_RRB: case X_ADDI_J##n##_RIB: \
	case X_MOV_J##n##_RR: case X_MOV_J##n##_RI: case X_MOV_J##n##_RRB: case X_MOV_J##n##_RIB:
#define XLD(n, w, t) case X_LDB_##n: case X_ADDR_##n:
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_ADDI_JMPB: case X_MOV_JZ: case X_MOV_JZB: case X_MOV_JNZ: case X_MOV_JNZB: {
		struct xinsn first = *x;
		first.op = vm_xop_unfused((enum xop)x->op);
		gen_insn(g, &first);
		break;
	}
	}
}

static bool dead_after(const struct cg *g, uint32_t i, int32_t s);

/* Is x a binary ALU xop of the XBIN list (not a comparison), and its immediate form? */
static bool is_alu(const struct xinsn *x, bool *ri)
{
	switch ((enum xop)x->op) {
	case X_ADD_RR: case X_SUB_RR: case X_AND_RR: case X_OR_RR: case X_XOR_RR:
	case X_MUL_RR: case X_SHL_RR: case X_SHRU_RR: case X_SHRS_RR:
		*ri = false;
		return true;
	case X_ADD_RI: case X_SUB_RI: case X_AND_RI: case X_OR_RI: case X_XOR_RI:
	case X_MUL_RI: case X_SHL_RI: case X_SHRU_RI: case X_SHRS_RI:
		*ri = true;
		return true;
	default:
		return false;
	}
}

/* Two xinsns x (number g->xi) and y, nothing branching between, where x's result t is read
 * by y alone and dead after it (compute_live): clang's BPF code goes through such
 * temporaries, which cost a mov or an instruction of their own.
 *   t = b op c; a = t op' k    ->  a = b op c; a = a op' k   (btree's mid = (lo + hi) >> 1)
 *   t = b << k; a = c + t      ->  lea a, [c + b * 2^k]      (btree's node + 4 * mid)
 *   t = call f; a = b op t     ->  call f; op a, rax         (fib's s += fib(n - 1))
 *   t = call f; a = t          ->  call f; mov a, rax
 *   t = b op c; ret t          ->  rax = b op c; ret         (fib's return n + s)
 *   t = b op k; call f(t)      ->  checks, spills; op f's register, b, k; call f
 *                                  (fib's fib(n - 1): no mov rsi, r8; kind 5)
 * Neither can trap; 0 when the pair does not fit.  Kind 5 is for a callee of one argument
 * and ALU templates that read their one source before writing (gen_alu); whether the callee
 * takes it in a register is not looked at here (choose_cached runs before any callee's
 * registers are known), gen_fold falls back when it does not. */
static int fold_kind(const struct cg *g, uint32_t i)
{
	const struct xinsn *x = &g->xf->code[i], *y = x + 1;
	bool xri, yri;
	if (i + 1 < g->xf->n_code && y->op == X_CALL && x->a == y->a && x->b != x->a &&
	    g->prog->funcs[(uint32_t)y->imm].n_args == 1 &&
	    (x->op == X_ADD_RI || x->op == X_SUB_RI || x->op == X_AND_RI || x->op == X_OR_RI ||
	     x->op == X_XOR_RI))
		return 5;
	if (i + 1 < g->xf->n_code && y->op == X_RET && y->b == x->a && x->b != x->a &&
	    (x->op == X_ADD_RI || x->op == X_SUB_RI || x->op == X_AND_RI || x->op == X_OR_RI ||
	     x->op == X_XOR_RI || ((x->op == X_ADD_RR || x->op == X_SUB_RR || x->op == X_AND_RR ||
	                            x->op == X_OR_RR || x->op == X_XOR_RR) && x->c != x->a)))
		return 4;
	if (i + 1 < g->xf->n_code && x->op == X_CALL && y->op == X_MOV && y->b == x->a &&
	    y->a != x->a && dead_after(g, i + 1, x->a))
		return 3;
	if (i + 1 >= g->xf->n_code || !is_alu(y, &yri) || !dead_after(g, i + 1, x->a))
		return 0;
	int32_t t = x->a;
	if (x->op == X_CALL)           /* a is where the callee's frame starts: not renamed */
		return !yri && y->a != t && y->b != y->c && (y->b == t || y->c == t) &&
		       (y->op == X_ADD_RR || y->op == X_SUB_RR || y->op == X_AND_RR ||
		        y->op == X_OR_RR || y->op == X_XOR_RR) ? 3 : 0;
	if (!is_alu(x, &xri))
		return 0;
	if (yri && y->b == t && y->a != t)
		return 1;
	if (x->op == X_SHL_RI && (x->imm & 63) >= 1 && (x->imm & 63) <= 3 && y->op == X_ADD_RR &&
	    (y->b == t) != (y->c == t) && x->b != t)
		return 2;
	return 0;
}

/* Returns how many xinsns after x it compiled with x (0: none, x is left to gen_insn); z_ok
 * when nothing branches to the xinsn after y either. */
static int gen_fold(struct cg *g, const struct xinsn *x, const struct xinsn *y, bool z_ok)
{
	int kind = fold_kind(g, g->xi);
	int32_t t = x->a;
	if (kind == 5) {
		if (g->arg_reg[g->arg_base[(uint32_t)y->imm]] < 0)
			return 0;
		g->xi++;                                     /* the call's traps */
		const struct xinsn *z = y + 1;
		if (z_ok && fold_kind(g, g->xi) == 3 && g->reg_of[z->a] >= 0) {
			gen_call(g, y, true, x);
			g->xi++;
			int8_t r = g->reg_of[t];
			g->reg_of[t] = RAX;
			gen_insn(g, z);
			g->reg_of[t] = r;
			g->mov_end = UINT32_MAX;
			return 2;
		}
		gen_call(g, y, false, x);
		return 1;
	}
	if (kind == 3 && g->reg_of[y->a] >= 0) {
		/* the result in rax for y, which computes in a's register (rax is its scratch
		 * register only for a slot in memory) */
		gen_call(g, x, true, NULL);
		g->xi++;
		int8_t r = g->reg_of[t];
		g->reg_of[t] = RAX;
		gen_insn(g, y);
		g->reg_of[t] = r;
		g->mov_end = UINT32_MAX;       /* a mov t = a next is no longer nothing to do */
		return 1;
	}
	if (kind == 4) {
		/* computed in rax, where ret wants it (t is neither operand: its old value is
		 * not in rax) */
		int8_t r = g->reg_of[t];
		g->reg_of[t] = RAX;
		gen_insn(g, x);
		g->xi++;
		gen_insn(g, y);
		g->reg_of[t] = r;
		return 1;
	}
	if (kind == 1) {
		struct xinsn x2 = *x, y2 = *y;
		x2.a = y->a;
		y2.b = y->a;
		gen_insn(g, &x2);
		g->xi++;
		gen_insn(g, &y2);
		return 1;
	}
	if (kind == 2) {
		int32_t c = y->b == t ? y->c : y->b;
		int d = work_reg(g, y->a);
		uint32_t start = (uint32_t)g->e.len;
		struct rm mb = src_slot(g, x->b);
		int rb = mb.reg;
		if (rb < 0) {
			emit_mov_r_rm(&g->e, RAX, mb);
			rb = RAX;
		}
		struct rm mc = src_slot(g, c);             /* after b's load: forwarding */
		int rc = mc.reg;
		if (rc < 0) {                              /* b may be forwarded in rcx */
			rc = rb == RCX ? RDX : RCX;
			emit_mov_r_rm(&g->e, rc, mc);
		}
		struct rm m = rm_idx(rc, rb);
		m.scale = (uint8_t)(x->imm & 63);
		emit_op(&g->e, OP_W, 0x8d, d, m);              /* lea d, [c + b * 2^k] */
		g->xi++;
		store_slot(g, y->a, d);
		keep_zf(g, start, y->a);
		return 1;
	}
	return 0;
}

/* ---- which slots live in registers ----
 * Each slot scores the instructions that use it, weighted by how deeply they sit in loops
 * (a backward branch from j to t puts t..j one loop deeper); the best N_CACHE_REGS win. */
static int branch_d(const struct xinsn *x, int32_t *d)
{
	switch ((enum xop)x->op) {
#define XCC(n, e) case X_J##n##_RR: case X_J##n##_RI: case X_J##n##_RRB: case X_J##n##_RIB:
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_JMP: case X_JMPB: case X_JZ: case X_JZB: case X_JNZ: case X_JNZB:
	case X_LD8U_JEQ_I: case X_LD8U_JNE_I:
		*d = x->d;
		return 1;
	default:
		return 0;
	}
}

/* The slots an xinsn reads or writes (at most 4). */
static unsigned slot_uses(const struct xinsn *x, int32_t *s)
{
	switch ((enum xop)x->op) {
#define XBIN(n, e) \
	case X_##n##_RR: s[0] = x->a; s[1] = x->b; s[2] = x->c; return 3; \
	case X_##n##_RI: s[0] = x->a; s[1] = x->b; return 2;
#define XUN(n, e) case X_##n: s[0] = x->a; s[1] = x->b; return 2;
#define XCC(n, e) \
	case X_J##n##_RR: case X_J##n##_RRB: s[0] = x->b; s[1] = x->c; return 2; \
	case X_J##n##_RI: case X_J##n##_RIB: s[0] = x->b; return 1;
#define XLD(n, w, t) case X_##n: s[0] = x->a; s[1] = x->b; return 2;
#define XST(n, w, t) case X_##n: case X_##n##_OUT: s[0] = x->a; s[1] = x->b; return 2;
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_MOV: case X_XSWAP: case X_DIVS_RR: case X_DIVU_RR: case X_REMS_RR: case X_REMU_RR:
		s[0] = x->a; s[1] = x->b; s[2] = x->c;
		return x->op == X_MOV || x->op == X_XSWAP ? 2 : 3;
	case X_DIVS_RI: case X_DIVU_RI: case X_REMS_RI: case X_REMU_RI:
		s[0] = x->a; s[1] = x->b;
		return 2;
	case X_MOVI: case X_RLEN: case X_RLEN_OUT:
		s[0] = x->a;
		return 1;
	case X_SELECT:
		s[0] = x->a; s[1] = x->b; s[2] = x->c; s[3] = (int32_t)x->imm;
		return 4;
	case X_XROT:
		s[0] = x->a; s[1] = x->a + 1; s[2] = x->a + 2;
		return 3;
	case X_JZ: case X_JZB: case X_JNZ: case X_JNZB: case X_LD8U_JEQ_I: case X_LD8U_JNE_I:
	case X_RET:
		s[0] = x->b;
		return 1;
	default:                       /* calls, helpers: their operands go through memory */
		return 0;
	}
}

/* Whether the first slot slot_uses lists is only written (the destination of an operation
 * that does not read it first). */
static bool first_only_written(const struct xinsn *x)
{
	switch ((enum xop)x->op) {
#define XBIN(n, e) case X_##n##_RR: case X_##n##_RI:
#define XUN(n, e) case X_##n:
#define XLD(n, w, t) case X_##n:
#define XCC(n, e)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_MOV: case X_MOVI: case X_RLEN: case X_RLEN_OUT:
	case X_DIVS_RR: case X_DIVU_RR: case X_REMS_RR: case X_REMU_RR:
	case X_DIVS_RI: case X_DIVU_RI: case X_REMS_RI: case X_REMU_RI:
		return true;
	default:
		return false;
	}
}

/* ---- which slots are dead ----
 * Backward liveness over the function's xinsns: live[i] holds the slots some path from
 * xinsn i on reads before writing them.  An xinsn slot_uses knows nothing of (calls,
 * helpers, hooks, trap, reti: their operands go through memory) reads every slot; a ret
 * or a trap ends the frame, which nothing reads afterwards (a trap reports no slot, a
 * caller takes the result in rax).  Only the destination of an operation that does not
 * read it first (first_only_written) is killed. */
#define LIVE_MAX_WORDS (1u << 20)      /* bitset words for one function, at most */

static int compute_live(struct cg *g)
{
	const struct xfunc *xf = g->xf;
	uint32_t n = xf->n_code, w = (xf->n_slots + 63) / 64;
	g->live = NULL;
	g->live_words = w;
	if (n == 0 || w == 0 || (uint64_t)(n + 1) * w > LIVE_MAX_WORDS)
		return 0;
	uint64_t *live = calloc((size_t)(n + 1) * w, sizeof *live);   /* live[n]: none */
	if (!live)
		return -VM_ENOMEM;
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t i = n; i-- > 0;) {
			const struct xinsn *x = &xf->code[i];
			uint64_t *in = live + (size_t)i * w;
			int32_t d = 0, s[4];
			bool br = branch_d(x, &d);
			bool fall = x->op != X_JMP && x->op != X_JMPB && x->op != X_RET &&
			            x->op != X_RETI && x->op != X_TRAP;
			unsigned ns = x->op == X_JMP || x->op == X_JMPB ? 0 : slot_uses(x, s);
			bool all = ns == 0 && x->op != X_JMP && x->op != X_JMPB;
			for (unsigned r = 0; r < ns; r++)
				all |= s[r] < 0 || (uint32_t)s[r] >= xf->n_slots;
			bool w0 = ns > 0 && first_only_written(x);
			for (uint32_t k = 0; k < w; k++) {
				uint64_t v = 0;
				if (fall)
					v |= live[(size_t)(i + 1) * w + k];
				if (br)
					v |= live[(size_t)(i + (uint32_t)d) * w + k];
				if (w0 && (uint32_t)s[0] / 64 == k)
					v &= ~(1ull << (s[0] % 64));
				for (unsigned r = w0 ? 1 : 0; r < ns; r++)
					if ((uint32_t)s[r] / 64 == k)
						v |= 1ull << (s[r] % 64);
				if (all)
					v = ~0ull;
				changed |= v != in[k];
				in[k] = v;
			}
		}
	}
	g->live = live;
	return 0;
}

/* Whether slot s is dead after xinsn i, which neither branches nor ends the function. */
static bool dead_after(const struct cg *g, uint32_t i, int32_t s)
{
	if (!g->live || i + 1 >= g->xf->n_code)
		return false;
	return !(g->live[(size_t)(i + 1) * g->live_words + (uint32_t)s / 64] >> (s % 64) & 1);
}

/* The region a memory xinsn addresses, or -1 (out never counts: its length moves). */
static int region_use(const struct xinsn *x)
{
	switch ((enum xop)x->op) {
#define XLD(n, w, t) case X_##n:
#define XST(n, w, t) case X_##n:
#define XBIN(n, e)
#define XUN(n, e)
#define XCC(n, e)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_LD8U_JEQ_I: case X_LD8U_JNE_I: case X_RLEN:
		return x->c == ISA_R_OUT ? -1 : x->c;
	default:
		return -1;
	}
}

/* Whether a memory xinsn's check reads its region's length: byte accesses and rlen do,
 * wider accesses compare with the per-run limit instead (emit_bounds) where there is one. */
static bool reads_len(const struct xinsn *x)
{
	if (x->c >= JIT_LIM_REGIONS)
		return true;
	switch ((enum xop)x->op) {
#define XLD(n, w, t) case X_##n: return w == 1;
#define XST(n, w, t) case X_##n: return w == 1;
#define XBIN(n, e)
#define XUN(n, e)
#define XCC(n, e)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	default:                       /* LD8U_J*, RLEN */
		return true;
	}
}

/* Loops longer than this (in xinsns) are not scanned for carried values (mark_carried), so
 * that the scans stay linear in the code's length whatever its branches. */
#define CARRIED_MAX_LOOP 512

/* carried[i]: bit k set when use k of xinsn i (as slot_uses lists them) reads a value that
 * an earlier iteration of a loop around it wrote: a slot the loop writes, read before the
 * loop body's first write of it (in code order).  Left in memory such a slot chains the
 * iterations through a store and a load: hprobe's hash lost its register to the operand
 * stack's temporaries, which many loops share but whose values live one xinsn, and each key
 * byte waited 4-5 cycles more than xor and imul.  stamp_w, stamp_r: n_slots zeros. */
static void mark_carried(const struct xfunc *xf, uint8_t *carried, uint32_t *stamp_w,
                         uint32_t *stamp_r)
{
	uint32_t id = 0;
	for (uint32_t j = 0; j < xf->n_code; j++) {
		int32_t d, s[4];
		if (!branch_d(&xf->code[j], &d) || d > 0 || d <= -CARRIED_MAX_LOOP)
			continue;
		id++;
		uint32_t t = j + (uint32_t)d;
		for (uint32_t k = t; k <= j; k++)
			if (slot_uses(&xf->code[k], s) > 0 && first_only_written(&xf->code[k]))
				stamp_w[s[0]] = id;
		for (uint32_t k = t; k <= j; k++) {
			unsigned n = slot_uses(&xf->code[k], s);
			bool w0 = first_only_written(&xf->code[k]);
			for (unsigned u = w0 ? 1 : 0; u < n; u++)
				if (stamp_w[s[u]] == id && stamp_r[s[u]] != id)
					carried[k] |= (uint8_t)(1u << u);
			if (n > 0 && w0)
				stamp_r[s[0]] = id;
		}
	}
}

static int choose_cached(struct cg *g)
{
	const struct xfunc *xf = g->xf;
	uint64_t rscore[ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS] = { 0 };
	bool len_read[ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS] = { 0 };
	size_t n_slots = xf->n_slots ? xf->n_slots : 1;
	int32_t *loop = calloc((size_t)xf->n_code + 1, sizeof *loop);
	uint64_t *score = calloc(n_slots, sizeof *score);
	uint8_t *carried = calloc((size_t)xf->n_code + 1, 1);
	uint32_t *stamp = calloc(2 * n_slots, sizeof *stamp);
	if (!loop || !score || !carried || !stamp) {
		free(loop);
		free(score);
		free(carried);
		free(stamp);
		return -VM_ENOMEM;
	}
	mark_carried(xf, carried, stamp, stamp + n_slots);
	free(stamp);
	for (uint32_t i = 0; i < xf->n_code; i++) {
		int32_t d;
		if (branch_d(&xf->code[i], &d)) {
			carried[i + d] |= 0x80;       /* a branch lands there: no fold across */
			if (d <= 0) {
				loop[i + d]++;
				loop[i + 1]--;
			}
		}
	}
	/* a temporary gen_fold leaves out scores nothing for its write and its one read
	 * (btree: 4 * mid gives way to the node region's base); the same every time, since
	 * calls rely on it (arg_registers) */
	if (compute_live(g) != 0) {
		free(loop);
		free(score);
		free(carried);
		return -VM_ENOMEM;
	}
	int32_t gone = -1;             /* the slot folded away between xinsns i - 1 and i */
	int32_t depth = 0;
	for (uint32_t i = 0; i < xf->n_code; i++) {
		int32_t s[4];
		depth += loop[i];
		uint64_t w = 1ull << (4 * (depth < 4 ? depth : 4));
		unsigned n = slot_uses(&xf->code[i], s);
		/* a read counts twice a write: a slot left in memory costs a store where it is
		 * written, but where it is read after a write a store-to-load round trip, which is
		 * what chains a loop's iterations (rsort: the key in its inner loop, only written
		 * there, gave way to a counter its outer loops read and write back each time);
		 * a read of a value carried around a loop counts twice more (mark_carried) */
		bool w0 = first_only_written(&xf->code[i]);
		int32_t fold_t = !(carried[i + 1] & 0x80) && fold_kind(g, i) ? xf->code[i].a : -1;
		for (unsigned k = 0; k < n; k++)
			if (s[k] != gone && (k != 0 || s[k] != fold_t))
				score[s[k]] += (k == 0 && w0 ? w : 2 * w) + (carried[i] >> k & 1 ? 2 * w : 0);
		gone = fold_t;
		int r = region_use(&xf->code[i]);
		if (r >= 0) {
			rscore[r] += 2 * w;           /* base and length are read */
			/* the length takes a register for checks in loops; one outside them (hprobe's
			 * rlen at the entry) reads the table, leaving the register to the hash */
			len_read[r] |= depth > 0 && reads_len(&xf->code[i]);
		}
	}
	int hot = -1;
	for (int r = 0; r < ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS; r++)
		if (rscore[r] && (hot < 0 || rscore[r] > rscore[hot]))
			hot = r;
	g->hot_region = -1;
	for (uint32_t s = 0; s < xf->n_slots; s++)
		g->reg_of[s] = -1;
	g->n_cached = 0;
	unsigned n_regs = 0;
	while (n_regs < N_CACHE_REGS) {
		uint32_t best = 0;
		for (uint32_t s = 1; s < xf->n_slots; s++)
			if (score[s] > score[best])
				best = s;
		uint64_t bs = xf->n_slots ? score[best] : 0;
		/* the hot region's base and length take two registers when they beat a slot; its
		 * base alone when no check reads its length (rsort: 8- and 4-byte accesses) */
		unsigned need = hot >= 0 && len_read[hot] ? 2 : 1;
		if (hot >= 0 && g->hot_region < 0 && n_regs + need <= N_CACHE_REGS &&
		    rscore[hot] >= bs) {
			g->hot_region = hot;
			g->hot_base = (int8_t)cache_regs[n_regs++];
			g->hot_len = need == 2 ? (int8_t)cache_regs[n_regs++] : -1;
			continue;
		}
		if (bs == 0)
			break;
		score[best] = 0;
		g->reg_of[best] = (int8_t)cache_regs[n_regs++];
		g->cached[g->n_cached++] = (int32_t)best;
	}
	free(g->live);
	g->live = NULL;
	free(loop);
	free(score);
	free(carried);
	return 0;
}

/* named[s] = whether any xinsn of xf names local s.  A local no xinsn names is never read,
 * so its zero need not be stored (pncc declares locals it never uses: fib's prologue zeroed
 * five on each call).  Helpers, calls and hooks take their operands at operand-stack homes,
 * never at a local; for the xinsns slot_uses does not describe, every field that could be a
 * local counts, which errs toward zeroing. */
static void mark_named_locals(const struct xfunc *xf, bool *named)
{
	for (uint32_t i = 0; i < xf->n_code; i++) {
		const struct xinsn *x = &xf->code[i];
		int32_t u[4] = { x->a, x->b, x->c, -1 };
		unsigned n = slot_uses(x, u);
		if (n == 0)
			n = 3;
		for (unsigned k = 0; k < n; k++)
			if (u[k] >= 0 && (uint32_t)u[k] < xf->n_locals)
				named[u[k]] = true;
	}
}

/* Clear named[s] for each local the function's first xinsns write before any reads it: every
 * path from the entry runs them first, so the prologue's zero would never be read (fib's
 * accumulator, zeroed and then set to 0 by its first xinsn, on every call).  They run from
 * xinsn 0 up to the first branch, return or trap, or an xinsn whose slots slot_uses does not
 * list; a branch landing among them comes after they ran. */
static void unname_written_first(const struct xfunc *xf, bool *named)
{
	uint8_t *state = calloc(xf->n_locals ? xf->n_locals : 1, 1);   /* 1 read, 2 written */
	if (!state)
		return;
	for (uint32_t i = 0; i < xf->n_code; i++) {
		const struct xinsn *x = &xf->code[i];
		int32_t s[4], d;
		unsigned n = slot_uses(x, s);
		if (n == 0)
			break;
		bool w0 = first_only_written(x);
		for (unsigned k = w0 ? 1 : 0; k < n; k++)    /* the reads come before the write */
			if (s[k] < xf->n_locals && !state[s[k]])
				state[s[k]] = 1;
		if (w0 && s[0] < xf->n_locals && !state[s[0]])
			state[s[0]] = 2;
		if (branch_d(x, &d) || x->op == X_RET)
			break;
	}
	for (int32_t s = 0; s < xf->n_locals; s++)
		if (state[s] == 2)
			named[s] = false;
	free(state);
}

/* Function entry: locals beyond the arguments start at zero (those some xinsn reads before writing); cached arguments and locals are
 * loaded. */
static void gen_outer_entry(struct cg *g)
{
	for (unsigned i = 0; i < g->n_cached; i++)
		if (g->cached[i] < g->xf->n_args)
			emit_mov_r_rm(&g->e, g->reg_of[g->cached[i]], rm_mem(R_FP, 8 * g->cached[i]));
}

static void gen_prologue(struct cg *g)
{
	struct emit *e = &g->e;
	const struct xfunc *xf = g->xf;
	gen_outer_entry(g);
	g->entry_in[g->fi] = (uint32_t)e->len;                     /* calls come in here */
	bool *named = calloc(xf->n_locals ? xf->n_locals : 1, sizeof *named);
	if (named) {
		mark_named_locals(xf, named);
		unname_written_first(xf, named);
	}
	for (int32_t s = xf->n_args; s < xf->n_locals; s++)
		if (g->reg_of[s] < 0 && (!named || named[s])) {
			emit_op(e, OP_W, 0xc7, 0, rm_mem(R_FP, 8 * s)); /* mov qword [rbx+8s], 0 */
			emit4(e, 0);
		}
	for (unsigned i = 0; i < g->n_cached; i++) {
		int32_t s = g->cached[i];
		if (s >= xf->n_args && s < xf->n_locals && (!named || named[s]))
			emit_mov_imm(e, g->reg_of[s], 0);
	}
	free(named);
	load_hot_region(g);
}

/* A fuel check found its chunk empty (r13 went below 0): the next chunk, one unit of it spent,
 * into ctx->fuel and 0; or, with ctx->fuel 0, the kind of trap that ends the run. */
static int jit_refill(struct jit_ctx *ctx)
{
	struct run *run = ctx->run;
	run->fuel = 0;
	int kind = vm_fuel_refill(run);
	ctx->fuel = kind ? 0 : run->fuel - 1;
	return kind;
}

/* Refill stubs after the function body, one per fuel check, taken once per chunk of fuel
 * (VM_FUEL_CHUNK), so the checks themselves stay a sub and a jcc.  The registers holding
 * cached slots are caller-saved or callee-saved; the caller-saved ones are pushed around the
 * call (emit_call_abs aligns rsp); rax, rcx and rdx are free between templates:
 *   push rsi, rdi, r8..r11; mov rdi, r14; call jit_refill; mov r13, [r14 + fuel];
 *   pop r11..r8, rdi, rsi; test eax, eax; jnz trap (kind in eax); jmp resume */
static void gen_refill_stubs(struct cg *g)
{
	static const uint8_t saved[] = { RSI, RDI, R8, R9, R10, R11 };
	struct emit *e = &g->e;
	for (uint32_t i = 0; i < g->n_refills && !e->err; i++) {
		const struct refillsite *r = &g->refills[i];
		patch_rel32(e, r->at, (uint32_t)e->len);
		for (size_t k = 0; k < sizeof saved; k++)
			emit_push(e, saved[k]);
		emit_mov_rr(e, RDI, R_CTX);
		emit_call_abs(e, (const void *)jit_refill);
		emit_mov_r_rm(e, R_FUEL, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel)));
		for (size_t k = sizeof saved; k-- > 0;)
			emit_pop(e, saved[k]);
		emit_op(e, 0, 0x85, RAX, rm_reg(RAX));           /* test eax, eax */
		g->xi = r->xi;
		emit_jcc_trap(g, CC_NE, -1);
		patch_rel32(e, emit_jcc(e, CC_ALWAYS), r->at_code ? r->resume : g->xoff[r->resume]);
	}
}

/* Trap stubs after the function body: mov edi, kind; mov esi, xi; mov edx, func; jmp to the
 * shared exit.  Sites of one xinsn and kind share a stub. */
static void gen_trap_stubs(struct cg *g)
{
	struct emit *e = &g->e;
	uint32_t last = 0;
	for (uint32_t i = 0; i < g->n_traps; i++) {
		const struct trapsite *t = &g->traps[i];
		if (i == 0 || t->xi != g->traps[i - 1].xi || t->kind != g->traps[i - 1].kind) {
			last = (uint32_t)e->len;
			if (t->kind < 0) {
				emit1(e, 0x89);
				emit_modrm(e, 3, RAX, RDI);            /* mov edi, eax */
			} else {
				emit1(e, 0xb8 + RDI);
				emit4(e, (uint32_t)t->kind);           /* mov edi, kind */
			}
			emit1(e, 0xb8 + RSI);
			emit4(e, t->xi);                           /* mov esi, xi */
			emit1(e, 0xb8 + RDX);
			emit4(e, g->fi);                           /* mov edx, func */
			patch_rel32(e, emit_jcc(e, CC_ALWAYS), g->common_trap);
		}
		patch_rel32(e, t->at, last);
	}
}

/* ---- versioned loops (struct vloop) ---- */

/* Whether a versioned loop may hold xinsn x, and the slot x writes (-1: none).  It may hold
 * what cannot trap but through a load's bounds, spends no fuel, calls nothing, writes at most
 * one slot: a trap there would find r13 not holding the fuel. */
static bool vloop_op(const struct xinsn *x, int32_t *written)
{
	*written = -1;
	switch ((enum xop)x->op) {
#define XBIN(n, e) case X_##n##_RR: case X_##n##_RI:
#define XUN(n, e) case X_##n:
#define XLD(n, w, t) case X_##n:
#define XCC(n, e)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_MOV: case X_MOVI: case X_RLEN: case X_RLEN_OUT: case X_SELECT:
	case X_DIVS_RI: case X_DIVU_RI: case X_REMS_RI: case X_REMU_RI:
		*written = x->a;
		return true;
#define XCC(n, e) case X_J##n##_RR: case X_J##n##_RI:
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_JMP: case X_JZ: case X_JNZ: case X_LD8U_JEQ_I: case X_LD8U_JNE_I:
		return true;                   /* forward: find_vloop checks where they go */
	default:
		return false;
	}
}

/* The width of a load and its displacement from the offset slot b; 0 for other xinsns. */
static unsigned load_width(const struct xinsn *x, int64_t *disp)
{
	*disp = x->imm;
	switch ((enum xop)x->op) {
#define XLD(n, w, t) case X_##n: return w;
#define XBIN(n, e)
#define XUN(n, e)
#define XCC(n, e)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_LD8U_JEQ_I: case X_LD8U_JNE_I:     /* imm is the byte compared with */
		*disp = 0;
		return 1;
	default:
		return 0;
	}
}

/* A back branch's condition as "loop while i < n": the slots i and n (or n_imm), signed or
 * not.  i != n loops as i < n once the guard has seen i < n at the head, i stepping by 1. */
static bool vloop_cond(const struct xinsn *x, struct vloop *v)
{
	v->n = -1;
	v->n_imm = x->imm;
	v->is_signed = x->op == X_JLTS_RRB || x->op == X_JLTS_RIB || x->op == X_JGTS_RRB;
	switch ((enum xop)x->op) {
	case X_JLTU_RRB: case X_JLTS_RRB: case X_JNE_RRB:
		v->i = x->b;
		v->n = x->c;
		return true;
	case X_JLTU_RIB: case X_JLTS_RIB: case X_JNE_RIB:
		v->i = x->b;
		return true;
	case X_JGTU_RRB: case X_JGTS_RRB:             /* n > i */
		v->i = x->c;
		v->n = x->b;
		return true;
	default:
		return false;
	}
}

/* Whether xinsns head..back, back a backward branch to head, form a loop gen_vloop compiles
 * twice (struct vloop); fills v.  into_sum[u]: the branches of the function that land on
 * xinsns 0..u, so that the ones landing inside from outside (which would skip the guard)
 * can be counted. */
static bool find_vloop(const struct cg *g, uint32_t head, uint32_t back, const uint32_t *into_sum,
                       struct vloop *v)
{
	const struct xinsn *code = g->xf->code;
	*v = (struct vloop){ .head = head, .back = back, .inc = UINT32_MAX };
	if (!vloop_cond(&code[back], v))
		return false;
	uint32_t inside = 0;           /* branches of the body, all landing in (head, back] */
	for (uint32_t k = head; k < back; k++) {
		int32_t w, d;
		if (!vloop_op(&code[k], &w))
			return false;
		if (branch_d(&code[k], &d)) {
			if (d <= 0 || k + (uint32_t)d > back)
				return false;      /* an inner loop, or a way out */
			inside++;
		}
		if (w >= 0 && w == v->i && v->inc == UINT32_MAX && code[k].op == X_ADD_RI &&
		    code[k].b == v->i && code[k].imm == 1)
			v->inc = k;
		else if (w >= 0 && (w == v->i || w == v->n))
			return false;
	}
	if (v->inc == UINT32_MAX || into_sum[back] - into_sum[head] != inside)
		return false;
	for (uint32_t k = head; k < back; k++) {
		int32_t d;
		int64_t disp;
		unsigned w = load_width(&code[k], &disp);
		if (branch_d(&code[k], &d) && k < v->inc && k + (uint32_t)d > v->inc)
			return false;          /* the step must be taken once per iteration */
		if (w == 0)
			continue;
		if (code[k].b != v->i || code[k].c == ISA_R_OUT || disp < 0 || disp > INT32_MAX / 2)
			return false;          /* not provable at the head */
		/* i runs up to n - 1 before the step, up to n after it */
		int64_t need = disp + (k > v->inc) + w - 1;
		unsigned r = 0;
		while (r < v->n_regions && v->region[r] != code[k].c)
			r++;
		if (r == VLOOP_MAX_REGIONS)
			return false;
		if (r == v->n_regions) {
			v->region[v->n_regions++] = code[k].c;
			v->need[r] = need;
		} else if (need > v->need[r]) {
			v->need[r] = need;
		}
	}
	return true;
}

static void gen_range(struct cg *g, uint32_t lo, uint32_t hi, const uint8_t *target);

/* A loop find_vloop accepted, compiled twice behind a guard at its head:
 *   guard: i < n, n >= 0 when signed, n + need <= len of each region read: else to slow;
 *          fuel_base = r13 + i; r13 = min(n, fuel_base + 1)
 *   fast:  the body without bounds checks; cmp i, r13; jb fast
 *          r13 = fuel_base - i + 1; the back branch as usual, to the guard (a refill stub
 *          resumes there too); jmp past the slow copy
 *   slow:  the body as usual, looping to its own head
 * In the fast copy the fuel left is fuel_base - i before the step, since every taken back
 * branch spends one unit and i has grown by one; r13 ends the fast loop where i reaches n or
 * where the next back branch would find the chunk empty, so fuel use, refills and the fuel
 * trap are exactly the slow copy's.  The guard's checks but i < n hold or fail for the whole
 * loop, so the slow copy never goes back to it. */
static void gen_vloop(struct cg *g, const struct vloop *v, const uint8_t *target)
{
	struct emit *e = &g->e;
	uint32_t fails[2 + 2 * VLOOP_MAX_REGIONS];
	unsigned n_fails = 0;
	g->xi = v->head;
	forget(g);
	uint32_t guard = (uint32_t)e->len;
	if (v->n >= 0)
		load_slot(g, RCX, v->n);
	else
		emit_mov_imm(e, RCX, (uint64_t)v->n_imm);
	emit_alu_rm_r(e, ALU_CMP, slot(g, v->i), RCX);             /* cmp i, rcx */
	fails[n_fails++] = emit_jcc(e, CC_AE);
	if (v->is_signed) {
		emit_op(e, OP_W, 0x85, RCX, rm_reg(RCX));              /* test rcx, rcx */
		fails[n_fails++] = emit_jcc(e, CC_S);
	}
	for (unsigned k = 0; k < v->n_regions; k++) {
		emit_mov_r_rm(e, RAX, region_len(g, (unsigned)v->region[k]));
		if (v->need[k]) {
			emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RAX), (int32_t)v->need[k]);
			fails[n_fails++] = emit_jcc(e, CC_B);
		}
		emit_alu_r_rm(e, ALU_CMP, RCX, rm_reg(RAX));           /* cmp rcx, rax */
		fails[n_fails++] = emit_jcc(e, CC_A);
	}
	load_slot(g, RAX, v->i);
	emit_alu_r_rm(e, ALU_ADD, RAX, rm_reg(R_FUEL));
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel_base)), RAX);
	emit_alu_rm_imm(e, OP_W, ALU_ADD, rm_reg(RAX), 1);
	emit_alu_r_rm(e, ALU_CMP, RAX, rm_reg(RCX));
	emit_op(e, OP_W, 0x0f40 + CC_A, RAX, rm_reg(RCX));         /* cmova rax, rcx */
	emit_mov_rr(e, R_FUEL, RAX);

	uint32_t n_jumps = g->n_jumps;
	g->fast = v;
	gen_range(g, v->head, v->back, target);
	g->xi = v->back;
	g->xoff[v->back] = (uint32_t)e->len;
	emit_alu_rm_r(e, ALU_CMP, slot(g, v->i), R_FUEL);          /* cmp i, r13 */
	emit_jcc_back(e, CC_B, g->xoff[v->head]);
	g->fast = NULL;
	for (uint32_t k = n_jumps; k < g->n_jumps; k++)            /* the fast copy's own */
		patch_rel32(e, g->jumps[k].at, g->xoff[g->jumps[k].target]);
	g->n_jumps = n_jumps;
	forget(g);
	emit_mov_r_rm(e, R_FUEL, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel_base)));
	emit_alu_r_rm(e, ALU_SUB, R_FUEL, slot(g, v->i));
	emit_alu_rm_imm(e, OP_W, ALU_ADD, rm_reg(R_FUEL), 1);
	gen_insn(g, &g->xf->code[v->back]);
	emit_jcc_x(g, CC_ALWAYS, v->back + 1);

	emit_align(e, JIT_ALIGN);
	for (unsigned k = 0; k < n_fails; k++)
		patch_rel32(e, fails[k], e->len);
	g->slow_head = (uint32_t)e->len;
	g->slow_head_xi = v->head;
	gen_range(g, v->head, v->back + 1, target);
	g->slow_head = UINT32_MAX;
	g->xoff[v->head] = guard;      /* where every way into the loop goes */
	forget(g);                     /* the fast copy's exit arrives after the loop too */
}

/* ---- peeled loops: bounds an earlier iteration checked ----
 * A check is redundant where the offset is a value that already passed the same check, or
 * that of a wider access to the same region (no region but out changes its length during a
 * run).  In a loop that is often so from the second iteration on: rsort's inner loop stores
 * at the offset its previous iteration loaded from (the slot copied in between), but on
 * the way in the offset comes from the outer loop, unchecked, and the join of the two
 * knows nothing.  So such a loop is compiled twice: its first iteration with every check,
 * whose back edge goes on to a second copy that leaves out the checks the facts at its
 * head prove; its back edge loops to itself.  Both spend fuel alike and trap at the same
 * xinsns; only checks that cannot fail are gone. */
#define PEEL_MAX_SLOTS 1024

/* What is known of a slot's value: it passed the bounds check of a w-byte access at offset
 * 0 to region r, so it passes that of any narrower access there (w 0: nothing). */
struct chk { int16_t r; uint8_t w; };

/* The access x makes at slot + 0 that a fact may prove or give: its offset slot, region
 * and width (0: none; out's and displaced accesses are left alone). */
static unsigned chk_access(const struct xinsn *x, int32_t *s)
{
	unsigned w = 0;
	switch ((enum xop)x->op) {
#define XLD(n, wd, t) case X_##n: w = wd; *s = x->b; break;
#define XST(n, wd, t) case X_##n: w = wd; *s = x->a; break;
#define XBIN(n, e)
#define XUN(n, e)
#define XCC(n, e)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	default:
		return 0;
	}
	return x->imm == 0 && x->c != ISA_R_OUT ? w : 0;
}

/* Whether a peeled loop may hold x (not as its back edge), and the slot x writes (-1:
 * none): operations that write at most their a, accesses, forward branches.  Nothing that
 * calls, writes several slots or ends the function. */
static bool peel_op(const struct xinsn *x, int32_t *written)
{
	if (vloop_op(x, written))
		return true;
	switch ((enum xop)x->op) {
	case X_DIVS_RR: case X_DIVU_RR: case X_REMS_RR: case X_REMU_RR:
		*written = x->a;
		return true;
#define XST(n, w, t) case X_##n: case X_##n##_OUT:
#define XBIN(n, e)
#define XUN(n, e)
#define XCC(n, e)
#define XLD(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
		*written = -1;
		return true;
	default:
		return false;
	}
}

static void chk_meet(struct chk *f, const struct chk *g, uint32_t n)
{
	for (uint32_t s = 0; s < n; s++)
		if (f[s].r != g[s].r || g[s].w < f[s].w)
			f[s] = f[s].r == g[s].r ? g[s] : (struct chk){ 0, 0 };
}

/* One pass over the loop head..back from the facts f at head, which it leaves as they are
 * at the back edge.  pend: (back - head + 1) * n scratch facts, seen: back - head + 1
 * flags.  With skip, marks the accesses the facts prove (skip[k - head] for xinsn k). */
static void peel_pass(const struct xinsn *code, uint32_t head, uint32_t back, uint32_t n,
                      struct chk *f, struct chk *pend, uint8_t *seen, uint8_t *skip)
{
	bool falls = true;
	memset(seen, 0, back - head + 1);
	for (uint32_t k = head; k <= back; k++) {
		const struct xinsn *x = &code[k];
		struct chk *p = pend + (size_t)(k - head) * n;
		if (k > head && seen[k - head]) {
			if (falls)
				chk_meet(f, p, n);
			else
				memcpy(f, p, n * sizeof *f);
		} else if (!falls) {
			memset(f, 0, n * sizeof *f);  /* reached by nothing: know nothing */
		}
		int32_t s, written, d;
		unsigned w = chk_access(x, &s);
		if (w) {
			if (skip && f[s].r == x->c && f[s].w >= w)
				skip[k - head] = 1;
			if (f[s].r != x->c || f[s].w < w)
				f[s] = (struct chk){ (int16_t)x->c, (uint8_t)w };
		}
		if (k < back && peel_op(x, &written) && written >= 0)
			f[written] = x->op == X_MOV ? f[x->b] : (struct chk){ 0, 0 };
		if (k < back && branch_d(x, &d) && k + (uint32_t)d <= back) {
			uint32_t t = k + (uint32_t)d - head;
			if (seen[t])
				chk_meet(pend + (size_t)t * n, f, n);
			else
				memcpy(pend + (size_t)t * n, f, n * sizeof *f);
			seen[t] = 1;
		}
		falls = x->op != X_JMP;
	}
}

/* Whether the loop head..back (back a backward branch to head, the only one in it; no way
 * in but head) may be peeled; *any: its second copy leaves out a check (else peeling is
 * worth it only as a dloop).  Fills skip (back - head + 1 flags, for xinsns head..back) and
 * head_facts (n_slots: the facts at the second copy's head, which it keeps). */
static bool find_peel(const struct cg *g, uint32_t head, uint32_t back, const uint32_t *into_sum,
                      uint8_t *skip, bool *any, struct chk *head_facts)
{
	const struct xinsn *code = g->xf->code;
	uint32_t n = g->xf->n_slots, len = back - head + 1, inside = 0;
	if (len > PEEL_MAX_LOOP || n == 0 || n > PEEL_MAX_SLOTS)
		return false;
	for (uint32_t k = head; k < back; k++) {
		int32_t w, d;
		if (!peel_op(&code[k], &w))
			return false;
		if (branch_d(&code[k], &d)) {
			if (d <= 0)
				return false;
			inside += k + (uint32_t)d <= back;
		}
	}
	if (into_sum[back] - into_sum[head] != inside)
		return false;              /* a branch from outside lands inside */
	struct chk *f = calloc(3 * (size_t)n + (size_t)len * n, sizeof *f);
	uint8_t *seen = malloc(len);
	bool ok = f && seen;
	*any = false;
	if (ok) {
		struct chk *h = f + n, *h2 = f + 2 * n, *pend = f + 3 * n;
		peel_pass(code, head, back, n, f, pend, seen, NULL);   /* from the first copy */
		memcpy(h, f, n * sizeof *f);
		for (;;) {                 /* the second copy's head: both back edges meet */
			memcpy(h2, h, n * sizeof *f);
			peel_pass(code, head, back, n, h2, pend, seen, NULL);
			chk_meet(h2, h, n);
			if (!memcmp(h2, h, n * sizeof *f))
				break;
			memcpy(h, h2, n * sizeof *f);
		}
		memcpy(head_facts, h, n * sizeof *f);
		memset(skip, 0, len);
		peel_pass(code, head, back, n, h, pend, seen, skip);
		for (uint32_t k = 0; k < len; k++)
			*any |= skip[k];
	}
	free(f);
	free(seen);
	return ok;
}

/* ---- counted-down peeled loops (struct dloop) ----
 * A peeled loop whose back edge is `jnz c`, c stepping down by one once in every iteration,
 * takes at most c - 1 back edges from its head (c != 0 there), however often it leaves
 * early: rsort's inner loop (j counts down, the compare of keys breaks out).  When the fuel
 * chunk in r13 holds c - 1 units, none of those back edges can find it empty, so a third
 * copy, the fast one, spends its fuel without a branch (gen_dloop_fast).  Loads whose offset
 * slot o steps down by d once per iteration are proven there too: from the head, the m-th
 * execution of such a load (m = 1..c, one per iteration at most) reads at o - (m - 1 +
 * after) * d, where after is 1 when the load comes after o's step; all of these lie in the
 * region when the lowest does not wrap below 0 and the highest passes the check.  So do the
 * accesses the peel's facts at the head prove, once those facts hold on the way in: they
 * then hold at every head (find_peel's fixed point).  The guard, at the head, where every
 * way in arrives, checks all that once:
 *   c - 1 <= r13 (unsigned: c = 0 fails);  each fact of a slot read before it is written
 *   (it passes its check);  for each such load, (c - 1 + after) * d <= o and
 *   o - after * d <= len - w
 * else the first and second copies run, as without it.  Fuel use is exact on every way out
 * of the fast copy (and inside it, where it can trap), so traps and refills elsewhere see
 * what they always did. */
#define DLOOP_MAX_LOADS 4
#define DLOOP_MAX_FACTS 4
#define DLOOP_MAX_STEP  (1 << 20)  /* d: (c - 1 + 1) * d stays far below 2^63 (c - 1 <= r13) */
_Static_assert((uint64_t)VM_FUEL_CHUNK * DLOOP_MAX_STEP < (1ull << 62), "guard products fit");
struct dloop {
	int32_t c;                     /* the counter slot */
	unsigned n_loads;
	struct dload { uint32_t k; int32_t o, d; uint8_t after, w; int16_t r; } ld[DLOOP_MAX_LOADS];
	uint32_t step;                 /* the xinsn c = c - 1 */
	bool pop;                      /* a bit-clearing loop instead (find_pop): c = c & (c - 1) */
	int32_t eq;                    /* ... and the slot equal to c at its head (-1: none) */
	unsigned n_facts;              /* the facts at the head that the guard checks */
	struct dfact { int32_t s; int16_t r; uint8_t w; } fact[DLOOP_MAX_FACTS];
	uint8_t sink[PEEL_MAX_LOOP];   /* per xinsn from head: enum sink (find_sinks) */
	uint32_t sink_j[PEEL_MAX_LOOP];
};

/* Whether xinsn step of the loop head..back runs in every iteration that reaches the back
 * edge: no forward branch before it lands after it inside the loop. */
static bool runs_once(const struct xinsn *code, uint32_t head, uint32_t back, uint32_t step)
{
	for (uint32_t k = head; k < step; k++) {
		int32_t d;
		if (branch_d(&code[k], &d) && k + (uint32_t)d > step && k + (uint32_t)d <= back)
			return false;
	}
	return true;
}

/* The one xinsn of head..back-1 that writes slot s, if it is s = s - d (0 < d <= max) run
 * once per iteration: its index, and d; else UINT32_MAX. */
static uint32_t down_step(const struct xinsn *code, uint32_t head, uint32_t back, int32_t s,
                          int64_t max, int32_t *d)
{
	uint32_t step = UINT32_MAX;
	for (uint32_t k = head; k < back; k++) {
		int32_t w;
		if (!peel_op(&code[k], &w) || w != s)
			continue;
		if (step != UINT32_MAX || code[k].op != X_ADD_RI || code[k].b != s ||
		    code[k].imm >= 0 || code[k].imm < -max)
			return UINT32_MAX;
		step = k;
	}
	if (step == UINT32_MAX || !runs_once(code, head, back, step))
		return UINT32_MAX;
	*d = (int32_t)-code[step].imm;
	return step;
}

/* ---- bit-clearing loops: a dloop counted by the set bits of c ----
 * A loop whose back edge is `jnz c` and whose body, straight code that cannot trap (no
 * branch, no access, no division by a slot), leaves c = h & (h - 1), h being c's value at
 * the head, clears one set bit of c per iteration (bitmap's `while (w) { ...; w &= w - 1;
 * }`): from its head it takes exactly popcount(h) - 1 back edges (h != 0), however the
 * body uses c.  clang's code computes it in a second slot e equal to c at the head (t = w;
 * then in the loop t -= 1; t &= w; w = t; jnz t), so e may stand for h as well: the guard
 * checks e == c, and the body must leave e equal to c again (both h & (h - 1)), so that it
 * holds at every head.  The guard (gen_dloop_guard) then takes all that fuel at once,
 * popcount(c) - 1 <= r13 (unsigned: c = 0 fails) and r13 -= it, and the fast copy spends
 * none (dl_pre): it has no way out but its back edge falling through, and nothing in it
 * traps or refills, so r13 is exact wherever anything reads it.
 * pop_body: the body, symbolically from c (and e) = h: TOP nothing known, H h, HDEC h - 1,
 * HCLR h & (h - 1); v: n scratch bytes. */
static bool pop_body(const struct xinsn *code, uint32_t head, uint32_t back, int32_t c,
                     int32_t e, uint8_t *v, uint32_t n)
{
	enum { TOP, H, HDEC, HCLR };
	memset(v, TOP, n);
	v[c] = H;
	if (e >= 0)
		v[e] = H;
	for (uint32_t k = head; k < back; k++) {
		const struct xinsn *x = &code[k];
		int32_t w;
		int64_t disp;
		if (!vloop_op(x, &w) || w < 0 || load_width(x, &disp))
			return false;      /* a branch, a load: not straight code that cannot trap */
		uint8_t r = TOP;
		if (x->op == X_MOV)
			r = v[x->b];
		else if ((x->op == X_ADD_RI && x->imm == -1) || (x->op == X_SUB_RI && x->imm == 1))
			r = v[x->b] == H ? HDEC : TOP;
		else if (x->op == X_AND_RR)
			r = (v[x->b] == H && v[x->c] == HDEC) || (v[x->b] == HDEC && v[x->c] == H) ?
			    HCLR : TOP;
		v[w] = r;
	}
	return v[c] == HCLR && (e < 0 || v[e] == HCLR);
}

/* Whether the loop head..back (its back edge jnz c) is a bit-clearing loop; *eq: the slot
 * e equal to c at the head that it needs (-1: none). */
static bool find_pop(const struct cg *g, uint32_t head, uint32_t back, int32_t *eq)
{
	const struct xinsn *code = g->xf->code;
	uint32_t n = g->xf->n_slots;
	int32_t c = code[back].b;
	*eq = -1;
	if (!__builtin_cpu_supports("popcnt"))
		return false;              /* the guard's popcnt */
	uint8_t *v = malloc(n);
	bool ok = v && pop_body(code, head, back, c, -1, v, n);
	for (uint32_t k = head; v && !ok && k < back; k++) {
		int32_t w;
		if (vloop_op(&code[k], &w) && w >= 0 && w != c)
			ok = pop_body(code, head, back, c, w, v, n);
		if (ok)
			*eq = w;
	}
	free(v);
	return ok;
}

/* ---- copies sunk out of a dloop's fast copy ----
 * A mov or movi to slot s whose value no iteration reads again is needed on one way out of
 * the loop only: rsort's inner loop sets j's exit value twice per step (clang's code: the
 * slot read after the loop is j before the compare that breaks out, 0 after the step), two
 * of its twelve instructions.  In the fast copy such a copy k is made where its value is
 * read, not in the loop: up to the next branch j nothing reads or writes s or changes k's
 * source and no branch lands, and where j goes on is s dead (read by nothing before it is
 * written).  Then, with T where j branches to and F where it falls through:
 *   j the back branch, s dead at T (the head): k after it, on the way out (SINK_OUT),
 *     or nowhere when dead at F too (SINK_DROP);
 *   j a branch out of the loop, s dead at F: k in a stub that the branch goes to and that
 *     jumps on to T (SINK_TAKEN), or nowhere when dead at T too.
 * Nothing that traps is moved, and a trap between k and j ends the run: no one sees s. */

/* Whether slot s is dead on the way into xinsn t: t does not use it and it is dead after
 * t.  Only for xinsns whose slot uses slot_uses knows completely. */
static bool dead_in(const struct cg *g, uint32_t t, int32_t s)
{
	int32_t u[4], w;
	if (t >= g->xf->n_code || !peel_op(&g->xf->code[t], &w))
		return false;
	unsigned n = slot_uses(&g->xf->code[t], u);
	for (unsigned m = 0; m < n; m++)
		if (u[m] == s)
			return false;
	return dead_after(g, t, s);
}

static void find_sinks(const struct cg *g, uint32_t head, uint32_t back, const uint8_t *target,
                       uint8_t *sink, uint32_t *sink_j)
{
	const struct xinsn *code = g->xf->code;
	memset(sink, SINK_NONE, PEEL_MAX_LOOP);
	if (!g->live)
		return;
	for (uint32_t k = head; k < back; k++) {
		const struct xinsn *x = &code[k];
		if ((x->op != X_MOV && x->op != X_MOVI) || (x->op == X_MOV && x->a == x->b))
			continue;
		uint32_t j;
		int32_t d = 0;
		bool ok = true;
		for (j = k + 1; ok && j <= back; j++) {
			int32_t u[4], w = -1;
			unsigned n = slot_uses(&code[j], u);
			ok = !target[j] && (j == back || peel_op(&code[j], &w)) &&
			     !(x->op == X_MOV && w == x->b);
			for (unsigned m = 0; m < n; m++)
				ok &= u[m] != x->a;
			if (branch_d(&code[j], &d))
				break;
		}
		if (!ok || j > back)
			continue;
		uint32_t t = j + (uint32_t)d;
		bool dead_t = dead_in(g, t, x->a), dead_f = dead_in(g, j + 1, x->a);
		enum sink kind = SINK_NONE;
		if (dead_t && dead_f)
			kind = SINK_DROP;
		else if (j == back && dead_t)
			kind = SINK_OUT;
		else if (j < back && t > back && dead_f)
			kind = SINK_TAKEN;
		sink[k - head] = (uint8_t)kind;
		sink_j[k - head] = j;
	}
}

static bool has_sunk(const struct cg *g, uint32_t j, enum sink kind)
{
	for (uint32_t k = g->peel_lo; k < j && k - g->peel_lo < PEEL_MAX_LOOP; k++)
		if (g->sink[k - g->peel_lo] == kind && g->sink_j[k - g->peel_lo] == j)
			return true;
	return false;
}

/* The copies sunk to branch j's way `kind`, in their order. */
static void gen_sunk(struct cg *g, uint32_t j, enum sink kind)
{
	uint32_t xi = g->xi;
	for (uint32_t k = g->peel_lo; k < j && k - g->peel_lo < PEEL_MAX_LOOP; k++)
		if (g->sink && g->sink[k - g->peel_lo] == kind && g->sink_j[k - g->peel_lo] == j) {
			g->xi = k;
			gen_insn(g, &g->xf->code[k]);
		}
	g->xi = xi;
}

/* Whether the loop head..back that find_peel accepted (skip: the accesses its second copy
 * proves) counts down (struct dloop); fills dl and fast, skip plus the loads the guard
 * proves. */
static bool find_dloop(const struct cg *g, uint32_t head, uint32_t back, const uint8_t *skip,
                       const struct chk *head_facts, const uint8_t *target, struct dloop *dl,
                       uint8_t *fast)
{
	const struct xinsn *code = g->xf->code;
	int32_t d;
	if (code[back].op != X_JNZB)
		return false;
	dl->pop = false;
	dl->eq = -1;
	if ((dl->step = down_step(code, head, back, code[back].b, 1, &d)) == UINT32_MAX) {
		if (!find_pop(g, head, back, &dl->eq))
			return false;
		dl->pop = true;    /* its loads, if any, are not proven (the count is not c) */
	}
	dl->c = code[back].b;
	dl->n_facts = 0;               /* those of slots read before they are written */
	for (int32_t s = 0; s < (int32_t)g->xf->n_slots; s++) {
		if (head_facts[s].w == 0 || dead_in(g, head, s))
			continue;
		if (dl->n_facts == DLOOP_MAX_FACTS)
			return false;
		dl->fact[dl->n_facts++] = (struct dfact){ s, head_facts[s].r, head_facts[s].w };
	}
	dl->n_loads = 0;
	memcpy(fast, skip, back - head + 1);
	for (uint32_t k = head; k < back && dl->n_loads < DLOOP_MAX_LOADS && !dl->pop; k++) {
		int32_t o;
		int64_t disp;
		unsigned w = load_width(&code[k], &disp);
		if (!w || skip[k - head] || code[k].op == X_LD8U_JEQ_I || code[k].op == X_LD8U_JNE_I ||
		    !chk_access(&code[k], &o))
			continue;          /* chk_access: offset 0, not out */
		uint32_t step = down_step(code, head, back, o, DLOOP_MAX_STEP, &d);
		if (step == UINT32_MAX)
			continue;
		dl->ld[dl->n_loads++] = (struct dload){ k, o, d, k > step, (uint8_t)w,
		                                        (int16_t)code[k].c };
		fast[k - head] = 1;
	}
	find_sinks(g, head, back, target, dl->sink, dl->sink_j);
	return true;
}

/* A guard's check that offset rax... (register off) passes the bounds check of a w-byte
 * access at region r (as emit_bounds), its failing branches into fails. */
static unsigned guard_bounds(struct cg *g, int off, unsigned r, unsigned w, uint32_t *fails)
{
	struct emit *e = &g->e;
	struct rm len = region_len(g, r);
	unsigned n = 0;
	if (w == 1) {
		emit_alu_r_rm(e, ALU_CMP, off, len);
		fails[n++] = emit_jcc(e, CC_AE);
	} else if (r < JIT_LIM_REGIONS) {
		unsigned k = w == 2 ? 0 : w == 4 ? 1 : 2;
		emit_alu_r_rm(e, ALU_CMP, off, rm_mem(R_CTX, (int32_t)(offsetof(struct jit_ctx, lim) +
		              sizeof(uint64_t) * (3 * r + k))));
		fails[n++] = emit_jcc(e, CC_AE);
	} else {
		emit_mov_r_rm(e, RCX, len);
		emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RCX), (int32_t)w);
		fails[n++] = emit_jcc(e, CC_B);
		emit_alu_r_rm(e, ALU_CMP, off, rm_reg(RCX));
		fails[n++] = emit_jcc(e, CC_A);
	}
	return n;
}

/* The peel's facts (each a slot proven below a region's limit), checked at a dloop's head:
 * the failing branches into fails; how many. */
static unsigned guard_facts(struct cg *g, const struct dloop *dl, uint32_t *fails)
{
	unsigned n = 0;
	for (unsigned i = 0; i < dl->n_facts; i++) {
		const struct dfact *f = &dl->fact[i];
		int off = g->reg_of[f->s];
		if (off < 0) {
			load_slot(g, RAX, f->s);
			off = RAX;
		}
		n += guard_bounds(g, off, (unsigned)f->r, f->w, fails + n);
	}
	return n;
}

/* The guard at a dloop's head, where every way into the loop arrives; its failing branches
 * into fails, to be patched to the first copy.  For rsort, 15 instructions once per inner
 * loop, where the first copy took 14 before the guard alone:
 *   lea rax, [c - 1]; cmp rax, r13; ja fail
 *   cmp s, [r14 + lim]; jae fail                        (each fact, as emit_bounds)
 *   imul rax, c, d; cmp rax, o; ja fail                 (each load; sub rax, d first when
 *   lea rax, [o - d]; cmp rax, [r14 + lim]; jae fail     before the step: no lea then) */
static unsigned gen_dloop_guard(struct cg *g, const struct dloop *dl, uint32_t *fails)
{
	struct emit *e = &g->e;
	unsigned n = 0;
	forget(g);
	if (dl->pop) {
		/* a bit-clearing loop: each fact as below; cmp e, c; jne fail;
		 * popcnt rax, c; sub rax, 1; cmp rax, r13; ja fail; sub r13, rax */
		n += guard_facts(g, dl, fails + n);
		if (dl->eq >= 0) {
			emit_cmp_slots(g, dl->eq, dl->c, 0, 0);
			fails[n++] = emit_jcc(e, CC_NE);
		}
		emit_op(e, OP_F3 | OP_W, 0x0fb8, RAX, slot(g, dl->c));
		emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RAX), 1);
		emit_alu_r_rm(e, ALU_CMP, RAX, rm_reg(R_FUEL));
		fails[n++] = emit_jcc(e, CC_A);
		emit_alu_r_rm(e, ALU_SUB, R_FUEL, rm_reg(RAX));
		return n;
	}
	struct rm c = src_slot(g, dl->c);
	if (c.reg >= 0) {
		emit_op(e, OP_W, 0x8d, RAX, rm_mem(c.reg, -1));     /* lea rax, [c - 1] */
	} else {
		load_slot(g, RAX, dl->c);
		emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RAX), 1);
	}
	emit_alu_r_rm(e, ALU_CMP, RAX, rm_reg(R_FUEL));             /* cmp c - 1, r13 */
	fails[n++] = emit_jcc(e, CC_A);
	n += guard_facts(g, dl, fails + n);
	for (unsigned i = 0; i < dl->n_loads; i++) {
		const struct dload *l = &dl->ld[i];
		emit_op(e, OP_W, 0x69, RAX, slot(g, dl->c));           /* imul rax, c, d */
		emit4(e, (uint32_t)l->d);
		if (!l->after)
			emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RAX), l->d);
		emit_alu_r_rm(e, ALU_CMP, RAX, slot(g, l->o));          /* the lowest: >= 0 */
		fails[n++] = emit_jcc(e, CC_A);
		struct rm o = src_slot(g, l->o);                        /* the highest */
		if (o.reg >= 0) {
			emit_op(e, OP_W, 0x8d, RAX, rm_mem(o.reg, l->after ? -l->d : 0));
		} else {
			load_slot(g, RAX, l->o);
			if (l->after)
				emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RAX), l->d);
		}
		n += guard_bounds(g, RAX, (unsigned)l->r, l->w, fails + n);
	}
	return n;
}

/* A dloop's fast copy (gen_peel): its back edge spends fuel unchecked (emit_branch), its
 * sunk copies go where they go (find_sinks), then jmp back + 1 and the stubs of the ways
 * out.  Where nothing in it can trap (rsort's: its load proven by the guard, its store by
 * the peel), it does not even spend fuel: on the way in r13 -= c, so that the step of c
 * spends it, and every way out adds c back (dl_rel, emit_fuel_back).  Where the loop, head to
 * back edge, would cross a 64-byte line but fits in one, it is compiled once to learn its
 * length, then again from the next line (the padding jumped over): rsort's inner loop, 42
 * bytes, took 17.2 ms across a line and 15.6 ms inside one, the same instructions (as
 * count_nl's did across a fetch boundary, emit_align_ahead).  So a copy is compiled up to
 * four times: a trap in it, or a branch with copies sunk to it that was not compiled as
 * emit_branch's (no stub for it), and it is compiled again without dl_rel or without
 * sinking, never wrong. */
static void gen_dloop_fast(struct cg *g, const struct dloop *dl, uint32_t head, uint32_t back,
                           const uint8_t *fast, const uint8_t *target, bool last)
{
	struct emit *e = &g->e;
	size_t len = e->len;
	uint32_t n_jumps = g->n_jumps, n_traps = g->n_traps, n_refills = g->n_refills;
	bool align = false, sinks = true, rel = !dl->pop;
	for (int pass = 0; pass < 4; pass++) {
		uint32_t over = UINT32_MAX;
		if (rel)
			emit_alu_r_rm(e, ALU_SUB, R_FUEL, slot(g, dl->c));   /* sub r13, c */
		if (align) {
			over = emit_jcc(e, CC_ALWAYS);
			emit_align(e, 64);
		}
		g->dl_head_xi = head;
		g->dl_back_end = UINT32_MAX;
		g->dl_rel = rel;
		g->dl_pre = dl->pop;
		g->dl_c = dl->c;
		g->dl_step = dl->step;
		g->dl_back = back;
		g->peel_skip = fast;
		g->sink = sinks ? dl->sink : NULL;
		g->sink_j = dl->sink_j;
		g->n_sink_at = 0;
		gen_range(g, head, back + 1, target);
		g->peel_skip = NULL;
		g->dl_head_xi = UINT32_MAX;
		if (over != UINT32_MAX)
			patch_rel32(e, over, g->xoff[head]);
		uint32_t h = g->xoff[head], end = g->dl_back_end;
		if (!last || g->n_sink_at)
			emit_jcc_x(g, CC_ALWAYS, back + 1);   /* last: back + 1 follows */
		unsigned n_stubs = 0;              /* the branches with a stub due */
		for (uint32_t j = head; j < back; j++) {
			int32_t d;
			n_stubs += (rel && branch_d(&g->xf->code[j], &d) && j + (uint32_t)d > back) ||
			           (g->sink && has_sunk(g, j, SINK_TAKEN));
		}
		bool stubs_ok = g->n_sink_at == n_stubs, traps_ok = !rel || g->n_traps == n_traps;
		for (uint32_t i = 0; i < g->n_sink_at && stubs_ok && traps_ok; i++) {
			const struct sinkstub *st = &g->sink_at[i];
			uint32_t xi = g->xi;
			patch_rel32(e, st->at, e->len);
			forget(g);
			g->xi = st->j;
			if (rel)
				emit_fuel_back(g);
			g->xi = xi;
			gen_sunk(g, st->j, SINK_TAKEN);
			emit_jcc_x(g, CC_ALWAYS, st->target);
		}
		g->sink = NULL;
		g->dl_rel = false;
		g->dl_pre = false;
		assert(!dl->pop || (g->n_traps == n_traps && g->n_refills == n_refills));
		if (e->err)
			return;
		bool fits = end == UINT32_MAX || end - h > 64 || (h & 63) + (end - h) <= 64;
		if (stubs_ok && traps_ok && (align || fits))
			return;
		if (!traps_ok)
			rel = false;
		else if (!stubs_ok)
			sinks = false;
		else
			align = true;      /* again, from the next line */
		e->len = len;
		g->n_jumps = n_jumps;
		g->n_traps = n_traps;
		g->n_refills = n_refills;
		forget(g);
	}
}

/* Patch the jumps of the copy just compiled (from jumps[from]) that go inside the loop
 * head..back to its own code; the exits wait for the end of the function. */
static void patch_own(struct cg *g, uint32_t from, uint32_t head, uint32_t back)
{
	uint32_t kept = from;
	for (uint32_t k = from; k < g->n_jumps; k++) {
		const struct jump *j = &g->jumps[k];
		if (j->target >= head && j->target <= back)
			patch_rel32(&g->e, j->at, g->xoff[j->target]);
		else
			g->jumps[kept++] = *j;
	}
	g->n_jumps = kept;
}

/* A loop find_peel accepted:
 *  [guard:  of a dloop, where every way in arrives: see struct dloop; failing, to first
 *   fast:   head..back without the checks fast marks, spending fuel unchecked or not at
 *           all (gen_dloop_fast); falling out: jmp back + 1]
 *   first:  head..back with every check; the back edge (its fuel check as ever) to second;
 *           falling out: jmp back + 1
 *   second: head..back without the checks skip marks; the back edge to its own head
 * Every way in, and a refill stub's resume, goes to the guard, else to the first copy. */
static void gen_peel(struct cg *g, uint32_t head, uint32_t back, const uint8_t *skip,
                     const struct dloop *dl, const uint8_t *fast, const uint8_t *target)
{
	struct emit *e = &g->e;
	/* every copy branches to the loop's exits: no compare is known to be in the flags there */
	for (uint32_t k = head; k <= back && g->in_n; k++) {
		int32_t d;
		if (branch_d(&g->xf->code[k], &d) && k + (uint32_t)d > back)
			g->in_n[k + (uint32_t)d] = UINT32_MAX;
	}
	if (g->in_n)
		g->in_n[back + 1] = UINT32_MAX;
	uint32_t n_jumps = g->n_jumps, fails[1 + 2 * (DLOOP_MAX_FACTS + DLOOP_MAX_LOADS) + 2 *
	                                       DLOOP_MAX_LOADS];
	uint32_t entry = (uint32_t)e->len;
	unsigned n_fails = 0;
	g->peel_lo = head;
	if (dl && dl->pop) {
		/* a bit-clearing loop: first, second, then the guard and the fast copy, which
		 * falls out into back + 1 (bitmap's inner loop is left once per word) */
		uint32_t in = emit_jcc(e, CC_ALWAYS);          /* what falls in: to the guard */
		g->peel_xi = head;
		g->peel_at = UINT32_MAX;
		gen_range(g, head, back + 1, target);
		g->peel_xi = UINT32_MAX;
		uint32_t first = g->xoff[head], at = g->peel_at;
		emit_jcc_x(g, CC_ALWAYS, back + 1);
		patch_own(g, n_jumps, head, back);
		g->peel_skip = skip;
		gen_range(g, head, back + 1, target);
		g->peel_skip = NULL;
		emit_jcc_x(g, CC_ALWAYS, back + 1);
		patch_own(g, n_jumps, head, back);
		if (at != UINT32_MAX)
			patch_rel32(e, at, g->xoff[head]);
		entry = (uint32_t)e->len;
		patch_rel32(e, in, entry);
		g->xi = head;
		n_fails = gen_dloop_guard(g, dl, fails);
		for (unsigned k = 0; k < n_fails; k++)
			patch_rel32(e, fails[k], first);
		gen_dloop_fast(g, dl, head, back, fast, target, true);
		patch_own(g, n_jumps, head, back);
		g->xoff[head] = entry;
		return;
	}
	if (dl) {
		g->xi = head;
		n_fails = gen_dloop_guard(g, dl, fails);
		gen_dloop_fast(g, dl, head, back, fast, target, false);
		patch_own(g, n_jumps, head, back);
	}
	g->peel_xi = head;
	g->peel_at = UINT32_MAX;
	gen_range(g, head, back + 1, target);
	g->peel_xi = UINT32_MAX;
	uint32_t first = g->xoff[head], at = g->peel_at;
	for (unsigned k = 0; k < n_fails; k++)
		patch_rel32(e, fails[k], first);
	emit_jcc_x(g, CC_ALWAYS, back + 1);
	patch_own(g, n_jumps, head, back);
	g->peel_skip = skip;
	gen_range(g, head, back + 1, target);
	g->peel_skip = NULL;
	patch_own(g, n_jumps, head, back);
	if (at != UINT32_MAX)
		patch_rel32(e, at, g->xoff[head]);
	g->xoff[head] = dl ? entry : first;
}

/* Whether xinsn i's code goes elsewhere in the copy being compiled (find_sinks). */
static bool sunk(const struct cg *g, uint32_t i)
{
	return g->sink && i >= g->peel_lo && i - g->peel_lo < PEEL_MAX_LOOP &&
	       g->sink[i - g->peel_lo] != SINK_NONE;
}

/* A conditional branch on a compare (the XCC family, jz, jnz): its condition, what it
 * compares (as struct flagcmp) and whether it goes backward; false for any other xinsn. */
static bool jcc_of(const struct xinsn *x, enum cc *cc, struct flagcmp *f, bool *back)
{
	*f = (struct flagcmp){ x->b, x->c, 0 };
	switch ((enum xop)x->op) {
#define XCC(n, e) \
	case X_J##n##_RR: *cc = CC_##n; *back = false; return true; \
	case X_J##n##_RRB: *cc = CC_##n; *back = true; return true; \
	case X_J##n##_RI: *cc = CC_##n; *back = false; *f = (struct flagcmp){ x->b, -1, x->imm }; \
		return true; \
	case X_J##n##_RIB: *cc = CC_##n; *back = true; *f = (struct flagcmp){ x->b, -1, x->imm }; \
		return true;
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	case X_JZ: case X_JZB: case X_JNZ: case X_JNZB:
		*cc = x->op == X_JZ || x->op == X_JZB ? CC_E : CC_NE;
		*back = x->op == X_JZB || x->op == X_JNZB;
		*f = (struct flagcmp){ x->b, -1, 0 };
		return true;
	default:
		return false;
	}
}

/* What may lie between a branch and the one find_thread threads it through: straight code
 * that cannot trap, calls nothing and writes one slot, none that the compare reads. */
static bool thread_op(const struct xinsn *x, const struct flagcmp *f)
{
	bool ri;
	return (x->op == X_MOV || x->op == X_MOVI || is_alu(x, &ri)) && x->a != f->b &&
	       x->a != f->c;
}

#define THREAD_MAX_SPAN 8          /* xinsns from a branch to the one it is threaded through */

/* Jump threading.  xinsn i, a forward conditional branch to t, the only branch there, and
 * xinsn b (t <= b < hi), a branch on the same compare with the same condition, with only
 * thread_op code between and no other label: where i is taken b is taken too, and where i
 * falls through b does not (nothing between changed what they compare).  clang's code for
 * btree's search step is such a pair: `if (key < q) goto L; hi = mid; L: mid += 1; if (key
 * < q) goto lo_path` (back to the loop test), and ARF's segments have some with b at t.
 * Only where it saves a taken jump on some path and adds none (gen_thread): b at t, or b
 * backward (whose not-taken path jumps over its fuel check anyway); a copy of t..b-1 before
 * a forward b would put a jump over it on i's fall-through path, which had none.  Returns
 * b, or UINT32_MAX when i is not such a branch. */
static uint32_t find_thread(const struct cg *g, uint32_t i, uint32_t hi, const uint8_t *target)
{
	const struct xinsn *code = g->xf->code;
	enum cc cc, cc_b;
	struct flagcmp f, f_b;
	bool back, back_b;
	if (!g->thread_ok || !jcc_of(&code[i], &cc, &f, &back) || back || code[i].d < 1)
		return UINT32_MAX;
	uint32_t t = i + (uint32_t)code[i].d;
	if (t >= hi || g->n_in[t] != 1)
		return UINT32_MAX;
	for (uint32_t k = i + 1; k < hi && k - i <= THREAD_MAX_SPAN; k++) {
		if (target[k] && k != t)
			return UINT32_MAX;
		if (k >= t && jcc_of(&code[k], &cc_b, &f_b, &back_b))
			return cc_b == cc && same_cmp(&f, &f_b) && (k == t || back_b) ? k : UINT32_MAX;
		if (!thread_op(&code[k], &f))
			return UINT32_MAX;
	}
	return UINT32_MAX;
}

/* Branch i threaded through b (find_thread): i's taken path is compiled here, as a copy of
 * t..b-1 and then b taken (its fuel check when it goes backward, at b's pc, as ever), and
 * i falls through to the code of i + 1.., where b is left out (gen_range, thr_b):
 *   cmp; j!cc over; <t..b-1>; sub r13, 1; jae b's target; jmp refill
 *   over: <i+1..b-1>; <b: nothing>
 * With b at t, i is compiled as b is, to b's target (jcc, or the above without a copy).
 * btree's search step: its lo path no longer takes a jump to t and another at b, and no
 * path tests the compare twice. */
static void gen_thread(struct cg *g, uint32_t i, uint32_t b)
{
	const struct xinsn *code = g->xf->code;
	enum cc cc, cc_b;
	struct flagcmp f, f_b;
	bool back, back_b;
	jcc_of(&code[i], &cc, &f, &back);
	jcc_of(&code[b], &cc_b, &f_b, &back_b);
	bool have = g->cmp_end == g->e.len && same_cmp(&g->cmp, &f);
	bool zf = !have && f.c < 0 && f.imm == 0 && (cc == CC_E || cc == CC_NE) &&
	          g->zf_end == g->e.len && g->zf_slot == f.b;    /* as emit_jcc_cmp */
	if (!have && !zf)
		emit_cmp_slots(g, f.b, f.c, f.imm, f.c < 0);
	if (b == i + (uint32_t)code[i].d) {
		if (!zf) {
			g->cmp = f;
			g->cmp_end = (uint32_t)g->e.len;
		}
		g->xi = b;                     /* a fuel check's pc is b's */
		emit_branch(g, &code[b], cc, back_b);
		g->xi = i;
		if (zf) {
			g->zf_end = (uint32_t)g->e.len;
		} else {
			g->cmp = f;            /* what falls through still has them */
			g->cmp_end = (uint32_t)g->e.len;
		}
		return;
	}
	uint32_t over = emit_skip(g, cc ^ 1);
	if (zf) {
		g->zf_end = (uint32_t)g->e.len;
	} else {
		g->cmp = f;
		g->cmp_end = (uint32_t)g->e.len;
	}
	for (uint32_t k = i + (uint32_t)code[i].d; k < b; k++) {
		g->xi = k;
		gen_insn(g, &code[k]);
	}
	g->xi = b;
	emit_branch(g, &code[b], CC_ALWAYS, back_b);
	g->xi = i;
	emit_land(g, over);
	if (zf) {
		g->zf_end = (uint32_t)g->e.len;
	} else {
		g->cmp = f;                    /* what falls through still has them */
		g->cmp_end = (uint32_t)g->e.len;
	}
}

/* On the fall-through path of a threaded branch (gen_range, thr_b), whether the slot xinsn k
 * (k < thr_b, a thread_op) writes is dead: read neither before it is written again nor
 * after b, which is not taken there.  btree's `mid += 1` is read only where the key was less
 * (the lo path, a copy of its own); where it was not, mid is set again first. */
static bool dead_on_fall(const struct cg *g, uint32_t k)
{
	int32_t s = g->xf->code[k].a, u[4];
	for (uint32_t j = k + 1; j < g->thr_b; j++) {
		const struct xinsn *y = &g->xf->code[j];
		unsigned n = slot_uses(y, u);          /* thread_ops: u[0] is only written */
		for (unsigned m = 1; m < n; m++)
			if (u[m] == s)
				return false;
		if (u[0] == s)
			return true;
	}
	return dead_after(g, g->thr_b, s);
}

/* Compile xinsns lo..hi-1.  target[i]: 1 a branch lands on xinsn i, 2 a backward one. */
static void gen_range(struct cg *g, uint32_t lo, uint32_t hi, const uint8_t *target)
{
	g->range_lo = lo;
	g->thr_t = g->thr_b = UINT32_MAX;
	for (uint32_t i = lo; i < hi && !g->unsupported; i++) {
		const struct xinsn *x = &g->xf->code[i];
		g->xi = i;
		if (target[i] & 2)
			emit_align(&g->e, JIT_ALIGN);
		bool fall = g->cmp_end == g->e.len;
		bool label = target[i] && i != g->thr_t;   /* thr_t: its one branch threaded */
		g->xoff[i] = (uint32_t)g->e.len;
		if (label)
			forget(g);                 /* a branch lands here: rax may hold anything */
		/* every branch here (forward, each counted once) and the code falling in left the
		 * same compare in the flags: they hold it still */
		if (label && target[i] == 1 && !g->fast && fall && g->in_n[i] == g->n_in[i] &&
		    same_cmp(&g->in_cmp[i], &g->cmp))
			g->cmp_end = (uint32_t)g->e.len;
		g->in_n[i] = 0;                /* a second copy of the code counts again */
		if (sunk(g, i))
			continue;              /* its code is elsewhere (find_sinks) */
		if (i == g->thr_b) {
			g->thr_b = UINT32_MAX;     /* only falling through gets here: not taken */
			continue;
		}
		if (g->thr_b != UINT32_MAX && dead_on_fall(g, i))
			continue;

		uint32_t b = find_thread(g, i, hi, target);
		if (b != UINT32_MAX) {
			gen_thread(g, i, b);
			g->thr_t = i + (uint32_t)x->d;
			g->thr_b = b;
			continue;
		}
		/* a pair, or three, compiled as one: nothing may branch between them, and b (thr_b)
		 * is not compiled at all */
		bool one = i + 1 < hi && (!target[i + 1] || i + 1 == g->thr_t) && i + 1 != g->thr_b &&
		           !sunk(g, i + 1);
		bool two = i + 2 < hi && (!target[i + 2] || i + 2 == g->thr_t) && i + 2 != g->thr_b &&
		           !sunk(g, i + 2);
		int n = 0;
		if (one && !(n = gen_ld8u_cmp(g, x, x + 1)))
			n = gen_fold(g, x, x + 1, two);
		if (n) {
			while (n-- > 0)
				g->xoff[++i] = (uint32_t)g->e.len;   /* listed after the pair */
			continue;
		}
		gen_insn(g, x);
	}
	g->range_lo = UINT32_MAX;
	g->thr_t = g->thr_b = UINT32_MAX;
}

static int compile_func(struct cg *g, struct jit_prog *j, uint32_t fi)
{
	g->fi = fi;
	g->xf = &g->prog->funcs[fi];
	g->n_jumps = g->n_traps = g->n_refills = 0;
	g->reg_of = malloc(g->xf->n_slots ? g->xf->n_slots : 1);
	g->xoff = malloc(((size_t)g->xf->n_code + 1) * sizeof *g->xoff);
	uint8_t *xop = malloc(g->xf->n_code ? g->xf->n_code : 1);
	j->xoff[fi] = g->xoff;
	j->xop[fi] = xop;
	if (!g->reg_of || !g->xoff || !xop || choose_cached(g) != 0) {
		free(g->reg_of);
		return -VM_ENOMEM;
	}
	for (uint32_t i = 0; i < g->xf->n_code; i++)
		xop[i] = (uint8_t)vm_xop_unfused((enum xop)g->xf->code[i].op);
	/* branch targets: a pair of xinsns is fused only when nothing jumps between them */
	uint32_t n_code = g->xf->n_code;
	uint8_t *target = calloc((size_t)n_code + 1, 1);
	/* into_sum[u]: branches landing on xinsns 0..u; next_back[i]: the first backward
	 * branch at or after xinsn i (n_code: none), for find_vloop */
	uint32_t *into_sum = calloc((size_t)n_code + 1, sizeof *into_sum);
	uint32_t *next_back = malloc(((size_t)n_code + 1) * sizeof *next_back);
	uint32_t *n_in = calloc((size_t)n_code + 1, sizeof *n_in);
	g->in_n = calloc((size_t)n_code + 1, sizeof *g->in_n);
	g->in_cmp = calloc((size_t)n_code + 1, sizeof *g->in_cmp);
	if (!target || !into_sum || !next_back || !n_in || !g->in_n || !g->in_cmp) {
		free(target);
		free(into_sum);
		free(next_back);
		free(n_in);
		free(g->in_n);
		free(g->in_cmp);
		g->in_n = NULL;
		g->in_cmp = NULL;
		free(g->reg_of);
		return -VM_ENOMEM;
	}
	g->n_in = n_in;
	next_back[n_code] = n_code;
	for (uint32_t i = n_code; i-- > 0;) {
		int32_t d;
		next_back[i] = next_back[i + 1];
		if (branch_d(&g->xf->code[i], &d)) {
			target[i + d] |= d <= 0 ? 2 : 1;     /* 2: a loop head */
			into_sum[i + d]++;
			n_in[i + d]++;
			if (d <= 0)
				next_back[i] = i;
		}
	}
	for (uint32_t i = 1; i <= n_code; i++)
		into_sum[i] += into_sum[i - 1];
	if (compute_live(g) != 0)      /* no folds then (choose_cached made its choice) */
		g->live = NULL;
	/* calls land at the inner entry, after the outer entry's loads of cached arguments:
	 * that is where the function is aligned (the trampoline's one call per run may land
	 * anywhere; fib's calls landed 3 bytes past a boundary) */
	size_t at = g->e.len;
	gen_outer_entry(g);
	size_t ahead = g->e.len - at;
	g->e.len = at;
	emit_align_ahead(&g->e, JIT_ALIGN, ahead);
	j->func_off[fi] = (uint32_t)g->e.len;
	forget(g);
	g->range_lo = UINT32_MAX;
	g->slow_head = UINT32_MAX;
	g->peel_xi = UINT32_MAX;
	g->peel_skip = NULL;
	g->dl_head_xi = UINT32_MAX;
	g->dl_rel = false;
	g->dl_pre = false;
	g->sink = NULL;
	gen_prologue(g);
	uint32_t done = 0;             /* xinsns compiled so far */
	uint8_t skip[PEEL_MAX_LOOP], fast[PEEL_MAX_LOOP];
	struct dloop dl;
	struct chk *facts = malloc((g->xf->n_slots ? g->xf->n_slots : 1) * sizeof *facts);
	if (!facts)
		g->e.err = -VM_ENOMEM;
	for (uint32_t h = 0; h < n_code && !g->unsupported && facts; h++) {
		struct vloop v;
		uint32_t b = next_back[h];
		int32_t d;
		if (!(target[h] & 2) || b == n_code || !branch_d(&g->xf->code[b], &d) ||
		    b + (uint32_t)d != h)
			continue;
		bool vl = find_vloop(g, h, b, into_sum, &v), any = false, dn = false;
		if (!vl && (!find_peel(g, h, b, into_sum, skip, &any, facts) ||
		            !((dn = find_dloop(g, h, b, skip, facts, target, &dl, fast)) || any)))
			continue;
		g->thread_ok = true;       /* straight code, not a loop's copies */
		gen_range(g, done, h, target);
		g->thread_ok = false;
		if (!g->unsupported) {
			if (vl)
				gen_vloop(g, &v, target);
			else
				gen_peel(g, h, b, skip, dn ? &dl : NULL, fast, target);
		}
		done = b + 1;
		h = b;                     /* the next head can be b + 1 */
	}
	g->thread_ok = true;
	gen_range(g, done, n_code, target);
	g->thread_ok = false;
	free(facts);
	free(target);
	free(into_sum);
	free(next_back);
	free(n_in);
	free(g->live);
	g->live = NULL;
	free(g->in_n);
	free(g->in_cmp);
	g->in_n = NULL;
	g->in_cmp = NULL;
	g->n_in = NULL;
	free(g->reg_of);
	if (g->unsupported)
		return 0;
	g->xoff[g->xf->n_code] = (uint32_t)g->e.len;
	for (uint32_t i = 0; i < g->n_jumps; i++)
		patch_rel32(&g->e, g->jumps[i].at, g->xoff[g->jumps[i].target]);
	gen_refill_stubs(g);
	gen_trap_stubs(g);
	j->func_end[fi] = (uint32_t)g->e.len;
	for (uint32_t i = 0; i <= g->xf->n_code; i++)
		g->xoff[i] -= j->func_off[fi];
	return 0;
}

/* Which register each function caches each of its arguments in (choose_cached, which
 * compile_func runs again with the same result), so that a call can pass them there. */
static int arg_registers(struct cg *g, uint32_t n)
{
	uint32_t total = 0;
	g->arg_base = malloc((n + 1) * sizeof *g->arg_base);
	g->entry_in = calloc(n + 1, sizeof *g->entry_in);
	if (!g->arg_base || !g->entry_in)
		return -VM_ENOMEM;
	for (uint32_t fi = 0; fi < n; fi++) {
		g->arg_base[fi] = total;
		total += g->prog->funcs[fi].n_args;
	}
	g->arg_reg = malloc(total ? total : 1);
	if (!g->arg_reg)
		return -VM_ENOMEM;
	for (uint32_t fi = 0; fi < n; fi++) {
		g->xf = &g->prog->funcs[fi];
		g->reg_of = malloc(g->xf->n_slots ? g->xf->n_slots : 1);
		if (!g->reg_of || choose_cached(g) != 0) {
			free(g->reg_of);
			return -VM_ENOMEM;
		}
		for (unsigned k = 0; k < g->xf->n_args; k++)
			g->arg_reg[g->arg_base[fi] + k] = g->reg_of[k];
		free(g->reg_of);
	}
	g->reg_of = NULL;
	return 0;
}

/* The trampoline and the shared trap exit, at the start of the mapping:
 *   enter(ctx, fp, func): save callee-saved registers, load the run state, call func;
 *   trap exit (edi kind, esi xinsn, edx function): record them, unwind to enter's frame. */
static void gen_trampoline(struct emit *e, uint32_t *common_trap)
{
	static const uint8_t saved[] = { RBX, RBP, R12, R13, R14, R15 };
	for (size_t i = 0; i < sizeof saved; i++)
		emit_push(e, saved[i]);
	emit_alu_rm_imm(e, OP_W, ALU_SUB, rm_reg(RSP), 8);   /* sub rsp, 8: 16-byte alignment */
	emit_mov_rr(e, R_CTX, RDI);
	emit_mov_rr(e, R_FP, RSI);
	emit_mov_r_rm(e, R_TAB, rm_mem(R_CTX, offsetof(struct jit_ctx, R)));
	emit_mov_r_rm(e, R_FUEL, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel)));
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, saved_rsp)), RSP);
	/* the entry function's calls see rsp = saved_rsp - 8 (its return address), each level
	 * deeper 8 less: at depth VM_MAX_CALL_DEPTH, saved_rsp - 8 (max + 1) */
	emit_op(e, OP_W, 0x8d, RAX, rm_mem(RSP, -8 * (VM_MAX_CALL_DEPTH + 1)));  /* lea rax */
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, rsp_limit)), RAX);
	emit_op(e, 0, 0xff, 2, rm_reg(RDX));                  /* call rdx */
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel)), R_FUEL);
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, result)), RAX);
	emit_mov_imm(e, RAX, 0);                              /* return 0 */
	uint32_t exit = (uint32_t)e->len;
	emit_alu_rm_imm(e, OP_W, ALU_ADD, rm_reg(RSP), 8);
	for (size_t i = sizeof saved; i-- > 0;)
		emit_pop(e, saved[i]);
	emit_ret(e);
	*common_trap = (uint32_t)e->len;
	emit_op(e, 0, 0x89, RDI, rm_mem(R_CTX, offsetof(struct jit_ctx, trap_kind)));
	emit_op(e, 0, 0x89, RSI, rm_mem(R_CTX, offsetof(struct jit_ctx, trap_xi)));
	emit_op(e, 0, 0x89, RDX, rm_mem(R_CTX, offsetof(struct jit_ctx, trap_func)));
	emit_mov_rm_r(e, rm_mem(R_CTX, offsetof(struct jit_ctx, fuel)), R_FUEL);
	emit_mov_r_rm(e, RSP, rm_mem(R_CTX, offsetof(struct jit_ctx, saved_rsp)));
	emit_mov_imm(e, RAX, 1);                              /* return 1 */
	patch_rel32(e, emit_jcc(e, CC_ALWAYS), exit);
}

void vm_jit_free(struct jit_prog *j)
{
	if (!j)
		return;
	if (j->mem)
		munmap(j->mem, j->mem_len);
	for (uint32_t fi = 0; fi < j->n_funcs; fi++) {
		free(j->xoff ? j->xoff[fi] : NULL);
		free(j->xop ? j->xop[fi] : NULL);
	}
	free(j->func_off);
	free(j->func_end);
	free(j->xoff);
	free(j->xop);
	free(j);
}

int vm_jit_compile(struct vm_prog *prog, char *err, size_t errlen)
{
	uint32_t n = prog->seg->n_funcs;
	struct jit_prog *j = calloc(1, sizeof *j);
	struct cg g = { .prog = prog };
	int rc = -VM_ENOMEM;
	if (!j || !(j->func_off = calloc(n + 1, sizeof *j->func_off)) ||
	    !(j->func_end = calloc(n + 1, sizeof *j->func_end)) ||
	    !(j->xoff = calloc(n + 1, sizeof *j->xoff)) || !(j->xop = calloc(n + 1, sizeof *j->xop)))
		goto fail;
	j->n_funcs = n;
	/* A call from depth d (at most VM_MAX_CALL_DEPTH - 1 once the depth check passed) needs
	 * its callee's frame to end at most a + n_slots past the caller's, whose frame is at
	 * most d frames' a past the entry's, each a <= its function's n_slots: so all of it lies
	 * within (VM_MAX_CALL_DEPTH + 1) * (the largest n_slots).  When that fits, the room
	 * check never fails, and both are the same trap at the same pc; fib saves 3
	 * instructions a call. */
	uint64_t max_slots = 0;
	for (uint32_t fi = 0; fi < n; fi++)
		if (prog->funcs[fi].n_slots > max_slots)
			max_slots = prog->funcs[fi].n_slots;
	g.frames_fit = (VM_MAX_CALL_DEPTH + 1) * max_slots <= VM_STACK_SLOTS;
	rc = arg_registers(&g, n);
	if (rc != 0)
		goto fail;
	rc = -VM_ENOMEM;
	gen_trampoline(&g.e, &g.common_trap);
	for (uint32_t fi = 0; fi < n && !g.e.err && !g.unsupported; fi++) {
		rc = compile_func(&g, j, fi);
		if (rc != 0)
			goto fail;
		if (g.unsupported) {
			snprintf(err, errlen, "not compiled: %s in function %s at pc %u", g.unsupported,
			         prog->seg->funcs[fi].name, prog->funcs[fi].pcs[g.xi]);
			rc = -VM_ENOJIT;
			goto out;
		}
	}
	for (uint32_t i = 0; i < g.n_calls; i++)
		patch_rel32(&g.e, g.calls[i].at, g.entry_in[g.calls[i].callee]);
	rc = g.e.err;
	if (rc != 0)
		goto fail;
	long page = sysconf(_SC_PAGESIZE);
	j->mem_len = (g.e.len + (size_t)page - 1) & ~((size_t)page - 1);
	void *mem = mmap(NULL, j->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		j->mem_len = 0;
		snprintf(err, errlen, "jit: mmap of %zu bytes failed", g.e.len);
		rc = -VM_ENOMEM;
		goto out;
	}
	j->mem = mem;
	memcpy(mem, g.e.buf, g.e.len);
	/* W^X: the code is never writable and executable at the same time. */
	if (mprotect(mem, j->mem_len, PROT_READ | PROT_EXEC) != 0) {
		snprintf(err, errlen, "jit: mprotect to read+execute failed");
		rc = -VM_ENOJIT;
		goto out;
	}
	prog->jit = j;
	j = NULL;
	rc = 0;
	goto out;
fail:
	if (rc == -VM_ENOJIT)
		snprintf(err, errlen, "jit: the machine code would exceed %u bytes", JIT_MAX_CODE);
	else
		snprintf(err, errlen, "jit: out of memory");
out:
	vm_jit_free(j);
	free(g.e.buf);
	free(g.jumps);
	free(g.traps);
	free(g.calls);
	free(g.refills);
	free(g.arg_reg);
	free(g.arg_base);
	free(g.entry_in);
	return rc;
}

int vm_jit_run(struct run *run, unsigned entry, const int64_t *argv, int64_t *result)
{
	const struct vm_prog *prog = run->prog;
	const struct jit_prog *j = prog->jit;
	const struct xfunc *fn = &prog->funcs[entry];
	uint64_t slots[VM_STACK_SLOTS];
	for (unsigned i = 0; i < fn->n_args; i++)
		slots[i] = (uint64_t)argv[i];
	struct jit_ctx ctx = {
		.run = run, .R = run->R, .fuel = run->fuel, .slots_end = slots + VM_STACK_SLOTS,
		.out_cap = run->out_cap,
	};
	for (uint32_t r = 0; r < prog->n_mrefs && r < JIT_LIM_REGIONS; r++)
		for (unsigned k = 0; k < 3; k++) {
			uint64_t len = run->R[r].len, w = 2u << k;
			ctx.lim[r][k] = len >= w ? len - w + 1 : 0;
		}
	jit_enter_fn *enter = (jit_enter_fn *)(void *)j->mem;
	int trapped = enter(&ctx, slots, j->mem + j->func_off[entry]);
	if (!trapped) {
		run->fuel = ctx.fuel;
		*result = ctx.result;
		return 0;
	}
	/* every way to a fuel trap (refill stub, hook) leaves r13 0: ctx.fuel is what is left */
	run->fuel = ctx.fuel;
	run->trap->kind = (int)ctx.trap_kind;
	run->trap->func = ctx.trap_func;
	run->trap->pc = prog->funcs[ctx.trap_func].pcs[ctx.trap_xi];
	if (ctx.trap_kind == ISA_TRAP_USER)
		run->trap->code = ctx.trap_code;
	return -VM_ETRAP;
}

int vm_jit_listing(const struct vm_prog *prog, unsigned fi, struct vm_jit_listing *out)
{
	const struct jit_prog *j = prog->jit;
	const struct xfunc *xf = &prog->funcs[fi];
	out->code = j->mem + j->func_off[fi];
	out->len = j->func_end[fi] - j->func_off[fi];
	out->body_len = j->xoff[fi][xf->n_code];
	out->n_marks = xf->n_code;
	out->marks = malloc((xf->n_code ? xf->n_code : 1) * sizeof *out->marks);
	if (!out->marks)
		return -VM_ENOMEM;
	for (uint32_t i = 0; i < xf->n_code; i++) {
		out->marks[i] = (struct vm_jit_mark){ j->xoff[fi][i], xf->pcs[i],
		                                      xop_names[j->xop[fi][i]] };
	}
	return 0;
}

#else   /* not x86-64 Linux: the documented fallback, every program runs on the interpreter */

struct jit_prog { int unused; };

int vm_jit_compile(struct vm_prog *prog, char *err, size_t errlen)
{
	(void)prog;
	(void)xop_names;
	snprintf(err, errlen, "jit: not available on this architecture");
	return -VM_ENOJIT;
}

int vm_jit_run(struct run *run, unsigned entry, const int64_t *argv, int64_t *result)
{
	(void)run; (void)entry; (void)argv; (void)result;
	return -VM_ENOJIT;
}

void vm_jit_free(struct jit_prog *jit) { (void)jit; }

int vm_jit_listing(const struct vm_prog *prog, unsigned fi, struct vm_jit_listing *out)
{
	(void)prog; (void)fi; (void)out;
	return -VM_ENOJIT;
}

#endif
