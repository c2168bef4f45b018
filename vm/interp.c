/* interp.c: the threaded interpreter over translated slot code (see translate.c, xops.def).
 *
 * Each handler ends by jumping straight to the next one (computed goto; a plain switch when
 * VM_SWITCH_DISPATCH is defined).  The verifier proved stack depths, indices and branch
 * targets, so handlers check only what depends on run-time values: memory bounds, division,
 * fuel (on backward branches and calls, which bounds every loop), the output limit and the
 * call depth.  A trap records (kind, function, bytecode pc) and returns; it never unwinds
 * across the API.
 */
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)


struct frame {
	const struct xinsn *ret;
	uint64_t *fp;
	const struct xfunc *fn;
};

#ifdef VM_SWITCH_DISPATCH
#define CASE(n)     case X_##n:
/* goto, not continue: inside NEXT's do-while a continue would only end that loop and fall
 * through into the next case */
#define DISPATCH()  goto dispatch
#define NEXT()      do { ip++; goto dispatch; } while (0)
#define JUMP(x)     do { ip = (x); goto dispatch; } while (0)
#else
#define CASE(n)     do_##n:
#define DISPATCH()  goto *ip->h
#define NEXT()      do { ip++; goto *ip->h; } while (0)
#define JUMP(x)     do { ip = (x); goto *ip->h; } while (0)
#endif

#define TRAP_AT(k)  do { trap_kind = (k); goto trap; } while (0)

/* Every handler's name, for vm_interp_names (listings, tests) and the profile below. */
static const char *const xop_names[X_ALL_COUNT + 1] = {
	[X_ALL_COUNT] = "(start)",
#define XBIN(n, e) [X_##n##_RR] = #n "_RR", [X_##n##_RI] = #n "_RI", \
                   [X_LD8U_##n##_RR] = "LD8U_" #n "_RR", [X_LD8U_##n##_RI] = "LD8U_" #n "_RI", \
                   [X_ADD_##n##_RR] = "ADD_" #n "_RR", [X_ADD_##n##_RI] = "ADD_" #n "_RI", \
                   [X_ADDI_##n##_RR] = "ADDI_" #n "_RR", [X_ADDI_##n##_RI] = "ADDI_" #n "_RI",
#define XUN(n, e) [X_##n] = #n,
#define XCC(n, e) [X_J##n##_RR] = "J" #n "_RR", [X_J##n##_RI] = "J" #n "_RI", \
                  [X_J##n##_RRB] = "J" #n "_RRB", [X_J##n##_RIB] = "J" #n "_RIB", \
                  [X_ADDI_J##n##_RR] = "ADDI_J" #n "_RR", [X_ADDI_J##n##_RI] = "ADDI_J" #n "_RI", \
                  [X_ADDI_J##n##_RRB] = "ADDI_J" #n "_RRB", [X_ADDI_J##n##_RIB] = "ADDI_J" #n "_RIB", \
                  [X_MOV_J##n##_RR] = "MOV_J" #n "_RR", [X_MOV_J##n##_RI] = "MOV_J" #n "_RI", \
                  [X_MOV_J##n##_RRB] = "MOV_J" #n "_RRB", [X_MOV_J##n##_RIB] = "MOV_J" #n "_RIB", \
                  [X_INC_J##n##_RRB] = "INC_J" #n "_RRB", [X_INC_J##n##_RIB] = "INC_J" #n "_RIB", \
                  [X_ADD_INC_J##n##_RRB] = "ADD_INC_J" #n "_RRB", \
                  [X_ADD_INC_J##n##_RIB] = "ADD_INC_J" #n "_RIB", \
                  [X_MULI_INC_J##n##_RRB] = "MULI_INC_J" #n "_RRB", \
                  [X_MULI_INC_J##n##_RIB] = "MULI_INC_J" #n "_RIB", \
                  [X_MUL_INC_J##n##_RRB] = "MUL_INC_J" #n "_RRB", \
                  [X_MUL_INC_J##n##_RIB] = "MUL_INC_J" #n "_RIB",
#define XLD(n, w, t) [X_##n] = #n, [X_LDB_##n] = "LDB_" #n, [X_ADDR_##n] = "ADDR_" #n, \
                     [X_ADDI_##n] = "ADDI_" #n, [X_SHLI_ADDR_##n] = "SHLI_ADDR_" #n,
#define XST(n, w, t) [X_##n] = #n, [X_##n##_OUT] = #n "_OUT",
#define X(n) [X_##n] = #n,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	[X_ADDI_JMPB] = "ADDI_JMPB",
	[X_MOV_JZ] = "MOV_JZ", [X_MOV_JZB] = "MOV_JZB", [X_MOV_JNZ] = "MOV_JNZ",
	[X_MOV_JNZB] = "MOV_JNZB",
	[X_ANDI_JZ] = "ANDI_JZ", [X_ANDI_JZB] = "ANDI_JZB", [X_ANDI_JNZ] = "ANDI_JNZ",
	[X_ANDI_JNZB] = "ANDI_JNZB",
	[X_MUL_DIVS_RI] = "MUL_DIVS_RI", [X_MUL_DIVU_RI] = "MUL_DIVU_RI",
	[X_MUL_REMS_RI] = "MUL_REMS_RI", [X_MUL_REMU_RI] = "MUL_REMU_RI",
};

/* A debug build (-DVM_XOP_PROFILE, never a release build) counts how often each handler runs
 * right after each other one, and prints the most frequent pairs to stderr at exit (the first
 * VM_XOP_TOP, default 30): the measurement that chose the superinstructions
 * (docs/interpreter.md). */
#ifdef VM_XOP_PROFILE
#include <stdio.h>
static uint64_t prof_pairs[X_ALL_COUNT + 1][X_ALL_COUNT];  /* [X_ALL_COUNT]: a run's first */
static unsigned prof_prev = X_ALL_COUNT;
struct prof_row { uint64_t n; unsigned a, b; };
static int prof_cmp(const void *x, const void *y)
{
	const struct prof_row *p = x, *q = y;
	return p->n < q->n ? 1 : p->n > q->n ? -1 : 0;
}
__attribute__((destructor)) static void prof_dump(void)
{
	static struct prof_row rows[(X_ALL_COUNT + 1) * X_ALL_COUNT];
	size_t n = 0;
	uint64_t total = 0;
	for (unsigned a = 0; a <= X_ALL_COUNT; a++)
		for (unsigned b = 0; b < X_ALL_COUNT; b++)
			if (prof_pairs[a][b]) {
				rows[n++] = (struct prof_row){ prof_pairs[a][b], a, b };
				total += prof_pairs[a][b];
			}
	qsort(rows, n, sizeof *rows, prof_cmp);
	fprintf(stderr, "xop pairs: %llu dispatches\n", (unsigned long long)total);
	const char *top = getenv("VM_XOP_TOP");        /* how many pairs to print (30) */
	for (size_t i = 0; i < n && i < (top ? (size_t)atoi(top) : 30); i++)
		fprintf(stderr, "%12llu %5.1f%%  %s %s\n", (unsigned long long)rows[i].n,
		        100.0 * (double)rows[i].n / (double)total,
		        xop_names[rows[i].a] ? xop_names[rows[i].a] : "?",
		        xop_names[rows[i].b] ? xop_names[rows[i].b] : "?");
}
#undef CASE
#ifdef VM_SWITCH_DISPATCH
#define CASE(n)     case X_##n: prof_pairs[prof_prev][X_##n]++; prof_prev = X_##n;
#else
#define CASE(n)     do_##n: prof_pairs[prof_prev][X_##n]++; prof_prev = X_##n;
#endif
#endif

static const void *const *labels_out;

static int interp(struct run *run, unsigned entry, const int64_t *argv, int64_t *result)
{
#ifndef VM_SWITCH_DISPATCH
	static const void *const labels[X_ALL_COUNT] = {
#define XBIN(n, e) [X_##n##_RR] = &&do_##n##_RR, [X_##n##_RI] = &&do_##n##_RI,
#define XUN(n, e) [X_##n] = &&do_##n,
#define XCC(n, e) [X_J##n##_RR] = &&do_J##n##_RR, [X_J##n##_RI] = &&do_J##n##_RI, \
                  [X_J##n##_RRB] = &&do_J##n##_RRB, [X_J##n##_RIB] = &&do_J##n##_RIB,
#define XLD(n, w, t) [X_##n] = &&do_##n,
#define XST(n, w, t) [X_##n] = &&do_##n, [X_##n##_OUT] = &&do_##n##_OUT,
#define X(n) [X_##n] = &&do_##n,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
		/* superinstructions (vm_int.h) */
#define XBIN(n, e) [X_LD8U_##n##_RR] = &&do_LD8U_##n##_RR, [X_LD8U_##n##_RI] = &&do_LD8U_##n##_RI,
#define XUN(n, e)
#define XCC(n, e) [X_ADDI_J##n##_RR] = &&do_ADDI_J##n##_RR, [X_ADDI_J##n##_RI] = &&do_ADDI_J##n##_RI, \
                  [X_ADDI_J##n##_RRB] = &&do_ADDI_J##n##_RRB, [X_ADDI_J##n##_RIB] = &&do_ADDI_J##n##_RIB, \
                  [X_MOV_J##n##_RR] = &&do_MOV_J##n##_RR, [X_MOV_J##n##_RI] = &&do_MOV_J##n##_RI, \
                  [X_MOV_J##n##_RRB] = &&do_MOV_J##n##_RRB, [X_MOV_J##n##_RIB] = &&do_MOV_J##n##_RIB,
#define XLD(n, w, t) [X_LDB_##n] = &&do_LDB_##n, [X_ADDR_##n] = &&do_ADDR_##n,
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
		[X_ADDI_JMPB] = &&do_ADDI_JMPB,
		[X_MOV_JZ] = &&do_MOV_JZ, [X_MOV_JZB] = &&do_MOV_JZB, [X_MOV_JNZ] = &&do_MOV_JNZ,
		[X_MOV_JNZB] = &&do_MOV_JNZB,
#define XCC(n, e) [X_INC_J##n##_RRB] = &&do_INC_J##n##_RRB, [X_INC_J##n##_RIB] = &&do_INC_J##n##_RIB, \
	[X_ADD_INC_J##n##_RRB] = &&do_ADD_INC_J##n##_RRB, [X_ADD_INC_J##n##_RIB] = &&do_ADD_INC_J##n##_RIB, \
	[X_MULI_INC_J##n##_RRB] = &&do_MULI_INC_J##n##_RRB, [X_MULI_INC_J##n##_RIB] = &&do_MULI_INC_J##n##_RIB, \
	[X_MUL_INC_J##n##_RRB] = &&do_MUL_INC_J##n##_RRB, [X_MUL_INC_J##n##_RIB] = &&do_MUL_INC_J##n##_RIB,
#define XBIN(n, e) [X_ADD_##n##_RR] = &&do_ADD_##n##_RR, [X_ADD_##n##_RI] = &&do_ADD_##n##_RI, \
	[X_ADDI_##n##_RR] = &&do_ADDI_##n##_RR, [X_ADDI_##n##_RI] = &&do_ADDI_##n##_RI,
#define XUN(n, e)
#define XLD(n, w, t) [X_ADDI_##n] = &&do_ADDI_##n, [X_SHLI_ADDR_##n] = &&do_SHLI_ADDR_##n,
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
		[X_ANDI_JZ] = &&do_ANDI_JZ, [X_ANDI_JZB] = &&do_ANDI_JZB,
		[X_ANDI_JNZ] = &&do_ANDI_JNZ, [X_ANDI_JNZB] = &&do_ANDI_JNZB,
		[X_MUL_DIVS_RI] = &&do_MUL_DIVS_RI, [X_MUL_DIVU_RI] = &&do_MUL_DIVU_RI,
		[X_MUL_REMS_RI] = &&do_MUL_REMS_RI, [X_MUL_REMU_RI] = &&do_MUL_REMU_RI,
	};
	if (!run) {
		labels_out = labels;
		return 0;
	}
#else
	if (!run)
		return 0;
#endif
	const struct vm_prog *prog = run->prog;
#ifdef VM_XOP_PROFILE
	prof_prev = X_ALL_COUNT;
#endif
	struct mref *R = run->R;
	uint64_t fuel = run->fuel;
	uint64_t slots[VM_STACK_SLOTS];
	uint64_t *const slots_end = slots + VM_STACK_SLOTS;
	struct frame frames[VM_MAX_CALL_DEPTH];
	unsigned depth = 0;
	int trap_kind = ISA_TRAP_NONE;
	const struct xinsn *back_from0 = NULL, *back_to0 = NULL;   /* JUMP_BACK's cache */
	const struct xinsn *back_from1 = NULL, *back_to1 = NULL;

	const struct xfunc *fn = &prog->funcs[entry];
	uint64_t *fp = slots;
	const struct xinsn *ip = fn->code;
	for (unsigned i = 0; i < fn->n_args; i++)
		fp[i] = (uint64_t)argv[i];
	for (unsigned i = fn->n_args; i < fn->n_locals; i++)
		fp[i] = 0;

#ifdef VM_SWITCH_DISPATCH
dispatch:
	switch ((unsigned)ip->op) {        /* enum xop, or enum xop_more */
#else
	DISPATCH();
	{
#endif

#define XBIN(n, e) \
	CASE(n##_RR) { uint64_t x = fp[ip->b], y = fp[ip->c]; fp[ip->a] = (e); NEXT(); } \
	CASE(n##_RI) { uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; fp[ip->a] = (e); NEXT(); }
#define XUN(n, e) \
	CASE(n) { uint64_t x = fp[ip->b]; fp[ip->a] = (e); NEXT(); }
/* An empty chunk is refilled from the reserve (vm_fuel_refill, which also looks at the
 * deadline and cancel_at): the common path is the same test and decrement as ever. */
#define SPEND_FUEL() do { if (unlikely(fuel == 0)) { \
		run->fuel = 0; int k_ = vm_fuel_refill(run); if (k_) TRAP_AT(k_); fuel = run->fuel; } \
		fuel--; } while (0)
/* A taken backward branch finds its target through a small cache in registers, keyed by the
 * branch's own address.  ip + ip->d makes the next ip wait for a load from ip: in a loop, that
 * load's latency once per iteration bounded how fast any loop ran.  The compares with
 * back_from are branches the CPU predicts, so the next iteration's handlers start at once.
 * Two entries, so that a loop and the loop around it both stay (the newest first). */
#define JUMP_BACK() do { \
		if (likely(ip == back_from0)) JUMP(back_to0); \
		if (ip == back_from1) JUMP(back_to1); \
		back_from1 = back_from0; back_to1 = back_to0; \
		back_from0 = ip; back_to0 = ip + ip->d; JUMP(back_to0); } while (0)
#define XCC(n, e) \
	CASE(J##n##_RR) { uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(J##n##_RI) { uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(J##n##_RRB) { uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(J##n##_RIB) { uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
/* A load or store that misses the bounds check may be to a remote region (length 0 in R):
 * remote.c then does the access, or reports the trap the local access would have given. */
#define LOAD(w, t, dst) LOAD_AT(fp[ip->b], w, t, dst)
#define LOAD_AT(addr, w, t, dst) do { \
		uint64_t off = (addr) + (uint64_t)ip->imm; const struct mref *m = &R[ip->c]; \
		t v; \
		if (unlikely(!in_bounds(off, w, m->len))) { \
			if (!run->remote) TRAP_AT(ISA_TRAP_BOUNDS); \
			int k_ = vm_remote_load(run, (unsigned)ip->c, off, &v, w); \
			if (k_) TRAP_AT(k_); \
		} else { \
			memcpy(&v, m->base + off, w); \
		} \
		dst = (uint64_t)(int64_t)v; } while (0)
#define XLD(n, w, t) \
	CASE(n) { uint64_t v_; LOAD(w, t, v_); fp[ip->a] = v_; NEXT(); }
#define XST(n, w, t) \
	CASE(n) { uint64_t off = fp[ip->a]; const struct mref *m = &R[ip->c]; \
		t v = (t)fp[ip->b]; \
		if (unlikely(!in_bounds(off, w, m->len))) { \
			if (!run->remote) TRAP_AT(ISA_TRAP_BOUNDS); \
			int k_ = vm_remote_store(run, (unsigned)ip->c, off, &v, w); \
			if (k_) TRAP_AT(k_); \
			NEXT(); \
		} \
		memcpy(m->base + off, &v, w); NEXT(); } \
	CASE(n##_OUT) { uint64_t off = fp[ip->a]; \
		if (unlikely(!in_bounds(off, w, run->out_cap))) TRAP_AT(ISA_TRAP_OUTPUT_FULL); \
		out_extend(R, off, w); \
		t v = (t)fp[ip->b]; memcpy(R[ISA_R_OUT].base + off, &v, w); NEXT(); }
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X

	/* Superinstructions: the first half uses ip's fields, then ip moves to the second xinsn
	 * (so a trap there reports its pc) and NEXT skips it. */
#define XBIN(n, e) \
	CASE(LD8U_##n##_RR) { uint64_t x; LOAD(1, uint8_t, x); fp[ip->a] = x; ip++; \
		uint64_t y = fp[ip->c]; fp[ip->a] = (e); NEXT(); } \
	CASE(LD8U_##n##_RI) { uint64_t x; LOAD(1, uint8_t, x); fp[ip->a] = x; ip++; \
		uint64_t y = (uint64_t)ip->imm; fp[ip->a] = (e); NEXT(); }
#define XUN(n, e)
#define ADDI() do { fp[ip->a] = fp[ip->b] + (uint64_t)ip->imm; ip++; } while (0)
/* MOV's copy, then the branch (at its own pc, fuel and all) */
#define MOVX() do { fp[ip->a] = fp[ip->b]; ip++; } while (0)
#define XCC(n, e) \
	CASE(ADDI_J##n##_RR) { ADDI(); uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(ADDI_J##n##_RI) { ADDI(); uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(ADDI_J##n##_RRB) { ADDI(); uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(ADDI_J##n##_RIB) { ADDI(); uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MOV_J##n##_RR) { MOVX(); uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(MOV_J##n##_RI) { MOVX(); uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { JUMP(ip + ip->d); } NEXT(); } \
	CASE(MOV_J##n##_RRB) { MOVX(); uint64_t x = fp[ip->b], y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MOV_J##n##_RIB) { MOVX(); uint64_t x = fp[ip->b], y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
#define XLD(n, w, t) \
	CASE(LDB_##n) { uint64_t x; LOAD(1, uint8_t, x); fp[ip->a] = x; ip++; \
		uint64_t r; LOAD_AT(x, w, t, r); fp[ip->a] = r; NEXT(); } \
	CASE(ADDR_##n) { uint64_t x = fp[ip->b] + fp[ip->c]; fp[ip->a] = x; ip++; \
		uint64_t r; LOAD_AT(x, w, t, r); fp[ip->a] = r; NEXT(); }
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	CASE(ADDI_JMPB) { ADDI(); SPEND_FUEL(); JUMP_BACK(); }
	/* x = fp[a] + imm is already in a register when the branch tests it (fp[b] of the
	 * branch is fp[a]); its other operand is read after the store, which it may alias. */
#define INC() uint64_t x = fp[ip->a] + (uint64_t)ip->imm; fp[ip->a] = x; ip++
/* The triples: ADD_RR or MUL_RI (which cannot trap), then the INC_J pair as above. */
#define ADDX()  do { fp[ip->a] = fp[ip->b] + fp[ip->c]; ip++; } while (0)
#define MULIX() do { fp[ip->a] = fp[ip->b] * (uint64_t)ip->imm; ip++; } while (0)
#define MULX()  do { fp[ip->a] = fp[ip->b] * fp[ip->c]; ip++; } while (0)
#define XCC(n, e) \
	CASE(INC_J##n##_RRB) { INC(); uint64_t y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(INC_J##n##_RIB) { INC(); uint64_t y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(ADD_INC_J##n##_RRB) { ADDX(); INC(); uint64_t y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(ADD_INC_J##n##_RIB) { ADDX(); INC(); uint64_t y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MULI_INC_J##n##_RRB) { MULIX(); INC(); uint64_t y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MULI_INC_J##n##_RIB) { MULIX(); INC(); uint64_t y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MUL_INC_J##n##_RRB) { MULX(); INC(); uint64_t y = fp[ip->c]; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); } \
	CASE(MUL_INC_J##n##_RIB) { MULX(); INC(); uint64_t y = (uint64_t)ip->imm; \
		if (e) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
/* ADD_<op>, ADDI_<op>: the sum is stored, then the operation reads its right operand (which
 * may be the sum's slot) and takes the sum as its left one (the translator checks). */
#define XBIN(n, e) \
	CASE(ADD_##n##_RR) { uint64_t x = fp[ip->b] + fp[ip->c]; fp[ip->a] = x; ip++; \
		uint64_t y = fp[ip->c]; fp[ip->a] = (e); NEXT(); } \
	CASE(ADD_##n##_RI) { uint64_t x = fp[ip->b] + fp[ip->c]; fp[ip->a] = x; ip++; \
		uint64_t y = (uint64_t)ip->imm; fp[ip->a] = (e); NEXT(); } \
	CASE(ADDI_##n##_RR) { uint64_t x = fp[ip->b] + (uint64_t)ip->imm; fp[ip->a] = x; ip++; \
		uint64_t y = fp[ip->c]; fp[ip->a] = (e); NEXT(); } \
	CASE(ADDI_##n##_RI) { uint64_t x = fp[ip->b] + (uint64_t)ip->imm; fp[ip->a] = x; ip++; \
		uint64_t y = (uint64_t)ip->imm; fp[ip->a] = (e); NEXT(); }
#define XUN(n, e)
/* ADDI_: the load's address operand is the sum (the translator checks); SHLI_ADDR_: the shift
 * is stored first, then the ADDR_ pair reads its operands, which may be the shifted slot. */
#define XLD(n, w, t) \
	CASE(ADDI_##n) { uint64_t x = fp[ip->b] + (uint64_t)ip->imm; fp[ip->a] = x; ip++; \
		uint64_t r; LOAD_AT(x, w, t, r); fp[ip->a] = r; NEXT(); } \
	CASE(SHLI_ADDR_##n) { fp[ip->a] = fp[ip->b] << (ip->imm & 63); ip++; \
		uint64_t x = fp[ip->b] + fp[ip->c]; fp[ip->a] = x; ip++; \
		uint64_t r; LOAD_AT(x, w, t, r); fp[ip->a] = r; NEXT(); }
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
#undef INC
#undef ADDX
#undef MULIX
#undef MULX
#undef ADDI
	CASE(MOV_JZ)   { MOVX(); if (fp[ip->b] == 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(MOV_JNZ)  { MOVX(); if (fp[ip->b] != 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(MOV_JZB)  { MOVX(); if (fp[ip->b] == 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
	CASE(MOV_JNZB) { MOVX(); if (fp[ip->b] != 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
#undef MOVX
	/* AND_RI, then a test of its result (the branch's operand is the AND's destination) */
#define ANDIX() uint64_t x = fp[ip->b] & (uint64_t)ip->imm; fp[ip->a] = x; ip++
	CASE(ANDI_JZ)   { ANDIX(); if (x == 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(ANDI_JNZ)  { ANDIX(); if (x != 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(ANDI_JZB)  { ANDIX(); if (x == 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
	CASE(ANDI_JNZB) { ANDIX(); if (x != 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
#undef ANDIX

	CASE(MOV)  { fp[ip->a] = fp[ip->b]; NEXT(); }
	CASE(MOVI) { fp[ip->a] = (uint64_t)ip->imm; NEXT(); }

	CASE(DIVS_RR) {
		int64_t x = (int64_t)fp[ip->b], y = (int64_t)fp[ip->c];
		if (unlikely(y == 0)) TRAP_AT(ISA_TRAP_DIV_ZERO);
		if (unlikely(y == -1)) {
			if (x == INT64_MIN) TRAP_AT(ISA_TRAP_DIV_OVERFLOW);
			fp[ip->a] = 0 - (uint64_t)x;
			NEXT();
		}
		fp[ip->a] = (uint64_t)(x / y);
		NEXT();
	}
	CASE(REMS_RR) {
		int64_t x = (int64_t)fp[ip->b], y = (int64_t)fp[ip->c];
		if (unlikely(y == 0)) TRAP_AT(ISA_TRAP_DIV_ZERO);
		fp[ip->a] = y == -1 ? 0 : (uint64_t)(x % y);
		NEXT();
	}
	CASE(DIVU_RR) {
		uint64_t y = fp[ip->c];
		if (unlikely(y == 0)) TRAP_AT(ISA_TRAP_DIV_ZERO);
		fp[ip->a] = fp[ip->b] / y;
		NEXT();
	}
	CASE(REMU_RR) {
		uint64_t y = fp[ip->c];
		if (unlikely(y == 0)) TRAP_AT(ISA_TRAP_DIV_ZERO);
		fp[ip->a] = fp[ip->b] % y;
		NEXT();
	}
	/* The translator emits _RI only for divisors that cannot trap (not 0, not -1). */
	CASE(DIVS_RI) { fp[ip->a] = (uint64_t)((int64_t)fp[ip->b] / ip->imm); NEXT(); }
	CASE(REMS_RI) { fp[ip->a] = (uint64_t)((int64_t)fp[ip->b] % ip->imm); NEXT(); }
	CASE(DIVU_RI) { fp[ip->a] = fp[ip->b] / (uint64_t)ip->imm; NEXT(); }
	CASE(REMU_RI) { fp[ip->a] = fp[ip->b] % (uint64_t)ip->imm; NEXT(); }
	/* MUL_RR, then one of those four on the product (the division's b is the MUL's a) */
#define MULP() uint64_t x = fp[ip->b] * fp[ip->c]; fp[ip->a] = x; ip++
	CASE(MUL_DIVS_RI) { MULP(); fp[ip->a] = (uint64_t)((int64_t)x / ip->imm); NEXT(); }
	CASE(MUL_REMS_RI) { MULP(); fp[ip->a] = (uint64_t)((int64_t)x % ip->imm); NEXT(); }
	CASE(MUL_DIVU_RI) { MULP(); fp[ip->a] = x / (uint64_t)ip->imm; NEXT(); }
	CASE(MUL_REMU_RI) { MULP(); fp[ip->a] = x % (uint64_t)ip->imm; NEXT(); }
#undef MULP

	CASE(SELECT) { fp[ip->a] = fp[ip->c] ? fp[ip->imm] : fp[ip->b]; NEXT(); }
	CASE(XSWAP) { uint64_t v = fp[ip->a]; fp[ip->a] = fp[ip->b]; fp[ip->b] = v; NEXT(); }
	CASE(XROT) {
		uint64_t v = fp[ip->a];
		fp[ip->a] = fp[ip->a + 1]; fp[ip->a + 1] = fp[ip->a + 2]; fp[ip->a + 2] = v;
		NEXT();
	}

	CASE(JMP)  { JUMP(ip + ip->d); }
	CASE(JMPB) { SPEND_FUEL(); JUMP_BACK(); }
	CASE(JZ)   { if (fp[ip->b] == 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(JNZ)  { if (fp[ip->b] != 0) { JUMP(ip + ip->d); } NEXT(); }
	CASE(JZB)  { if (fp[ip->b] == 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
	CASE(JNZB) { if (fp[ip->b] != 0) { SPEND_FUEL(); JUMP_BACK(); } NEXT(); }
	CASE(LD8U_JEQ_I) {
		uint64_t off = fp[ip->b]; const struct mref *m = &R[ip->c];
		uint8_t byte;
		if (unlikely(off >= m->len)) {
			if (!run->remote) TRAP_AT(ISA_TRAP_BOUNDS);
			int k_ = vm_remote_load(run, (unsigned)ip->c, off, &byte, 1);
			if (k_) TRAP_AT(k_);
		} else {
			byte = m->base[off];
		}
		if (byte == (uint64_t)ip->imm) { JUMP(ip + ip->d); }
		NEXT();
	}
	CASE(LD8U_JNE_I) {
		uint64_t off = fp[ip->b]; const struct mref *m = &R[ip->c];
		uint8_t byte;
		if (unlikely(off >= m->len)) {
			if (!run->remote) TRAP_AT(ISA_TRAP_BOUNDS);
			int k_ = vm_remote_load(run, (unsigned)ip->c, off, &byte, 1);
			if (k_) TRAP_AT(k_);
		} else {
			byte = m->base[off];
		}
		if (byte != (uint64_t)ip->imm) { JUMP(ip + ip->d); }
		NEXT();
	}

	CASE(RLEN) {
		fp[ip->a] = R[ip->c].len;
		if (unlikely(run->remote != NULL) && run->remote[ip->c].ops)
			fp[ip->a] = run->remote[ip->c].len;
		NEXT();
	}
	CASE(RLEN_OUT) { fp[ip->a] = R[ISA_R_OUT].len; NEXT(); }

	/* Atomics, bulk operations and output: bodies shared with the JIT (ops_common.h).
	 * Operands in fp[a], fp[a+1], ...; regions in c (first) and b (second). */
/* With remote regions bound, an operation touching one redoes its checks and work in
 * remote.c (which gives the same traps as the local path, in the same order). */
#define OP_CALL(call) do { int k_ = (call); if (unlikely(k_)) TRAP_AT(k_); NEXT(); } while (0)
#define OP_CALL_R(xop, call) do { \
		int k_ = unlikely(run->remote != NULL) ? \
			vm_remote_op(run, xop, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b) : (call); \
		if (unlikely(k_)) { TRAP_AT(k_); } \
		NEXT(); \
	} while (0)
	CASE(CAS)    OP_CALL_R(X_CAS, vm_op_cas(run, &fp[ip->a], (unsigned)ip->c));
	CASE(FADD)   OP_CALL_R(X_FADD, vm_op_fadd(run, &fp[ip->a], (unsigned)ip->c));
	CASE(COPY)   OP_CALL_R(X_COPY, vm_op_copy(run, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b));
	CASE(FILL)   OP_CALL_R(X_FILL, vm_op_fill(run, &fp[ip->a], (unsigned)ip->c));
	CASE(CMP)    OP_CALL_R(X_CMP, vm_op_cmp(run, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b));
	CASE(FINDB)  OP_CALL_R(X_FINDB, vm_op_findb(run, &fp[ip->a], (unsigned)ip->c));
	CASE(FINDS)  OP_CALL_R(X_FINDS, vm_op_finds(run, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b));
	CASE(FINDSI) OP_CALL_R(X_FINDSI, vm_op_findsi(run, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b));
	CASE(FINDSET) OP_CALL_R(X_FINDSET, vm_op_findset(run, &fp[ip->a], (unsigned)ip->c, (unsigned)ip->b));
	CASE(OUTPUT) OP_CALL_R(X_OUTPUT, vm_op_output(run, &fp[ip->a], (unsigned)ip->c));
	CASE(OUTB)   OP_CALL(vm_op_outb(run, &fp[ip->a]));
	CASE(OUTQ)   OP_CALL(vm_op_outq(run, &fp[ip->a]));
#undef OP_CALL
#undef OP_CALL_R

	CASE(CALL) {
		SPEND_FUEL();
		const struct xfunc *callee = &prog->funcs[ip->imm];
		uint64_t *nfp = fp + ip->a;
		if (unlikely(depth == VM_MAX_CALL_DEPTH || callee->n_slots > (size_t)(slots_end - nfp)))
			TRAP_AT(ISA_TRAP_STACK);
		for (unsigned i = callee->n_args; i < callee->n_locals; i++)
			nfp[i] = 0;
		frames[depth++] = (struct frame){ ip, fp, fn };
		fp = nfp;
		fn = callee;
		JUMP(callee->code);
	}
	CASE(HCALL) {
		run->fuel = fuel;
		int k = vm_hook_call(run, prog->hooks[ip->imm], (int64_t *)&fp[ip->a]);
		fuel = run->fuel;              /* less what the hook's time cost */
		if (unlikely(k != 0))
			TRAP_AT(k);
		NEXT();
	}
	CASE(RET) {
		uint64_t v = fp[ip->b];
		if (depth == 0) {
			*result = (int64_t)v;
			goto done;
		}
		fp[0] = v;                     /* the callee's frame starts where the result goes */
		struct frame *f = &frames[--depth];
		fp = f->fp;
		fn = f->fn;
		JUMP(f->ret + 1);
	}
	CASE(RETI) {
		uint64_t v = (uint64_t)ip->imm;
		if (depth == 0) {
			*result = (int64_t)v;
			goto done;
		}
		fp[0] = v;
		struct frame *f = &frames[--depth];
		fp = f->fp;
		fn = f->fn;
		JUMP(f->ret + 1);
	}
	CASE(TRAP) {
		run->trap->code = (uint32_t)ip->imm;
		TRAP_AT(ISA_TRAP_USER);
	}
#ifdef VM_SWITCH_DISPATCH
	default: break;                /* (never: every xop has its case) */
	}
	goto dispatch;
#else
	}
#endif

trap:
	run->trap->kind = trap_kind;
	run->trap->func = (uint32_t)(fn - prog->funcs);
	run->trap->pc = fn->pcs[ip - fn->code];
	run->fuel = fuel;
	return -VM_ETRAP;
done:
	run->fuel = fuel;
	return 0;
}

const void *const *vm_interp_labels(void)
{
	interp(NULL, 0, NULL, NULL);
	return labels_out;
}

int vm_interp(struct run *run, unsigned entry, const int64_t *argv, int64_t *result)
{
	return interp(run, entry, argv, result);
}

struct label_op { uintptr_t h; unsigned op; };
static int label_cmp(const void *x, const void *y)
{
	const struct label_op *p = x, *q = y;
	return p->h < q->h ? -1 : p->h > q->h;
}

uint32_t vm_interp_names(const struct xfunc *f, const char **names, uint32_t cap)
{
	const void *const *labels = vm_interp_labels();
	struct label_op by_h[X_ALL_COUNT];
	if (labels) {                      /* threaded: the handler's address tells the xop */
		for (unsigned op = 0; op < X_ALL_COUNT; op++)
			by_h[op] = (struct label_op){ (uintptr_t)labels[op], op };
		qsort(by_h, X_ALL_COUNT, sizeof *by_h, label_cmp);
	}
	for (uint32_t i = 0; i < f->n_code && i < cap; i++) {
		uintptr_t op = f->code[i].op;
		if (labels) {
			struct label_op key = { (uintptr_t)f->code[i].h, 0 };
			const struct label_op *m = bsearch(&key, by_h, X_ALL_COUNT, sizeof *by_h, label_cmp);
			op = m ? m->op : X_ALL_COUNT;
		}
		names[i] = op < X_ALL_COUNT && xop_names[op] ? xop_names[op] : "?";
	}
	return f->n_code;
}
