/* vm_int.h: private structures shared by the files of vm/ (never included outside vm/). */
#ifndef VM_INT_H
#define VM_INT_H

#include <ffi.h>
#include <pthread.h>
#include <stdbool.h>

#include "vm.h"

enum xop {
#define XBIN(n, e) X_##n##_RR, X_##n##_RI,
#define XUN(n, e) X_##n,
#define XCC(n, e) X_J##n##_RR, X_J##n##_RI, X_J##n##_RRB, X_J##n##_RIB,
#define XLD(n, w, t) X_##n,
#define XST(n, w, t) X_##n, X_##n##_OUT,
#define X(n) X_##n,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	/* Superinstructions (interpreter only): vm_thread_code fuses an adjacent pair into its
	 * first xinsn after the JIT has read the code; the second stays in place, unchanged, and
	 * the fused handler reads its fields and skips it (docs/interpreter.md). */
	/* ADD_RI, then a conditional branch: the step and test that close a counted loop */
#define XCC(n, e) X_ADDI_J##n##_RR, X_ADDI_J##n##_RI, X_ADDI_J##n##_RRB, X_ADDI_J##n##_RIB,
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XCC
	X_ADDI_JMPB,                       /* ADD_RI, then JMPB */
	/* LD8U, then a binary operation whose left operand is the loaded byte */
#define XCC(n, e)
#undef XBIN
#define XBIN(n, e) X_LD8U_##n##_RR, X_LD8U_##n##_RI,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	/* LD8U, then a load at the loaded byte + imm (a byte's entry in a table);
	 * ADD_RR, then a load at the sum + imm (an automaton's next state) */
#define XCC(n, e)
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t) X_LDB_##n, X_ADDR_##n,
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	/* MOV, then a conditional branch: pncc copies a register just before a loop's test */
#define XCC(n, e) X_MOV_J##n##_RR, X_MOV_J##n##_RI, X_MOV_J##n##_RRB, X_MOV_J##n##_RIB,
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
	X_MOV_JZ, X_MOV_JZB, X_MOV_JNZ, X_MOV_JNZB,
	X_COUNT
};
enum { X_FUSED_FIRST = X_ADDI_JEQ_RR };

/* More superinstructions, numbered on from X_COUNT.  The JIT never meets a fused op (they are
 * formed after it has read the code), so these stay out of enum xop, whose switches in the
 * JIT list every member. */
enum xop_more {
	X_MORE_BEFORE = X_COUNT - 1,       /* so that the first is X_COUNT */
	/* ADD_RI in place (x += imm), then a backward branch testing x: the step and test of a
	 * counted loop, x handed from the one to the other in a register */
#define XBIN(n, e)
#define XUN(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#define XCC(n, e) X_INC_J##n##_RRB, X_INC_J##n##_RIB,
#include "xops.def"
#undef XCC
	/* ADD_RR or MUL_RI, then an INC_J pair: the accumulation closing a loop body (a sum, a
	 * count, a multiplicative hash), its step and its test in one dispatch */
#define XCC(n, e) X_ADD_INC_J##n##_RRB, X_ADD_INC_J##n##_RIB, \
                  X_MULI_INC_J##n##_RRB, X_MULI_INC_J##n##_RIB,
#include "xops.def"
#undef XCC
	/* MUL_RR, then an INC_J pair: the same with the factor in a slot (C through pncc keeps
	 * fnv1a's prime in a register) */
#define XCC(n, e) X_MUL_INC_J##n##_RRB, X_MUL_INC_J##n##_RIB,
#include "xops.def"
#undef XCC
#define XCC(n, e)
	/* ADD_RI, then a load at the sum + imm (a field at an offset from a computed one, rsort's
	 * previous record); SHL_RI, then an ADDR_ pair (a scaled index: base + (i << k), then the
	 * load there, btree's binary search) */
#undef XLD
#define XLD(n, w, t) X_ADDI_##n,
#include "xops.def"
#undef XLD
#define XLD(n, w, t) X_SHLI_ADDR_##n,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	/* AND_RI, then JZ/JZB/JNZ/JNZB on the result: a bit test (varint's continuation bit) */
	X_ANDI_JZ, X_ANDI_JZB, X_ANDI_JNZ, X_ANDI_JNZB,
	/* ADD_RR, then ADD_RI, then a binary operation whose left operand is the sum (btree's
	 * midpoint (lo + hi) >> 1, bitmap's w & (w - 1)) */
#define XBIN(n, e) X_ADD_##n##_RR, X_ADD_##n##_RI,
#define XUN(n, e)
#define XCC(n, e)
#define XLD(n, w, t)
#define XST(n, w, t)
#define X(n)
#include "xops.def"
#undef XBIN
#define XBIN(n, e) X_ADDI_##n##_RR, X_ADDI_##n##_RI,
#include "xops.def"
#undef XBIN
#undef XUN
#undef XCC
#undef XLD
#undef XST
#undef X
	/* MUL_RR, then a division by a constant of the product (isum's (i * i) % 7) */
	X_MUL_DIVS_RI, X_MUL_DIVU_RI, X_MUL_REMS_RI, X_MUL_REMU_RI,
	X_ALL_COUNT
};

/* One translated instruction: 32 bytes, handler address first. */
struct xinsn {
	union {
		const void *h;         /* computed-goto label (after threading) */
		uintptr_t op;          /* enum xop (before threading, and in switch builds) */
	};
	int32_t a, b, c, d;
	int64_t imm;
};
_Static_assert(sizeof(struct xinsn) == 32, "xinsn layout");

struct xfunc {
	struct xinsn *code;
	uint32_t *pcs;                 /* bytecode pc of each xinsn, for trap locations */
	uint32_t n_code;
	uint32_t n_slots;              /* locals + operand stack */
	uint8_t n_args, n_locals;
};

/* A region as a run sees it. */
struct mref {
	uint8_t *base;
	uint64_t len;
};

struct region_bind {
	char *name;
	uint8_t *base;
	uint64_t len;
	unsigned access;
	const struct vm_remote_ops *remote;  /* non-NULL: base is NULL, bytes via callbacks */
	void *remote_user;
};

/* A remote region as a linked program sees it (remote.c). */
struct remote_ref {
	const char *name;
	uint64_t len;                  /* the true length; the run's mref says 0 */
	const struct vm_remote_ops *ops;
	void *user;
};

struct hook_bind {
	char *name;
	char sig[ISA_MAX_SIG + 1];
	void *fn;
	void *user;
	bool blocks;                   /* vm_hook_blocks */
	unsigned n_args;
	ffi_cif cif;
	ffi_type *arg_types[ISA_MAX_HOOK_ARGS + 1];
};

struct vm {
	int engine;                    /* enum vm_engine for programs loaded from now on */
	struct region_bind *regions;
	uint32_t n_regions;
	struct hook_bind **hooks;      /* pointers: programs keep them, so they must not move */
	uint32_t n_hooks;
};

struct vm_prog {
	struct isa_seg *seg;
	uint8_t id[ISA_ID_LEN];
	uint32_t n_mrefs;              /* ISA_R_FIRST_IMPORT + imports */
	struct mref *mrefs;            /* imports linked; args/out/const slots filled per run */
	const struct hook_bind **hooks;
	struct remote_ref *remote;     /* per region index, NULL entries local; NULL if none */
	struct xfunc *funcs;
	uint32_t frame;                /* region index of the import VM_FRAME_REGION, or 0 */
	uint64_t frame_len;            /* its length: room for the deepest chain of calls */
	int engine;                    /* what vm_run uses for VM_ENGINE_AUTO: INTERP or JIT */
	struct jit_prog *jit;          /* machine code (jit_x86_64.c), NULL when not compiled */
	char jit_err[128];             /* why jit is NULL */
};

/* The state of one run; lives on vm_run's stack. */
/* find_str's choice of needle positions for the last needle searched (ops_common.h) */
struct find_rank { const uint8_t *nd; size_t nn, i1, i2, i3; };

struct run {
	const struct vm_prog *prog;
	struct mref *R;                /* region table, indexed like the bytecode */
	uint64_t out_cap;
	uint64_t fuel;                 /* left in the current chunk (the engine's counter) */
	uint64_t fuel_reserve;         /* left beyond it: the run's fuel is fuel + fuel_reserve */
	uint64_t deadline_ns;          /* vm_run_opts */
	const _Atomic uint64_t *cancel_at;
	uint64_t hook_ns_per_fuel;
	void (*on_slow)(void *);   /* vm_run_opts'; NULL once called */
	void *slow_arg;
	uint64_t slow_at_ns;
	void *user;
	struct vm_trap *trap;
	int hook_failed;
	const struct remote_ref *remote;   /* prog->remote */
	struct remote_cache *cache;        /* per run, allocated on the first remote miss */
	struct find_rank find_rank;        /* finds: the last needle's ranking */
};

struct vm_hook_ctx {
	struct run *run;
	const struct hook_bind *hook;
};

/* translate.c */
int vm_translate(struct vm_prog *prog, char *err, size_t errlen);
void vm_xfunc_free(struct xfunc *f);

/* interp.c: with run == NULL returns the handler table (for threading), else runs. */
const void *const *vm_interp_labels(void);
int vm_interp(struct run *run, unsigned entry, const int64_t *argv, int64_t *result);
/* interp.c: the names of f's handlers as vm_prog_xops gives them; returns f->n_code. */
uint32_t vm_interp_names(const struct xfunc *f, const char **names, uint32_t cap);

/* translate.c: after the JIT (which reads the xop numbers), opcodes become handler addresses */
void vm_thread_code(struct vm_prog *prog);
/* translate.c: the xop a superinstruction's first half is (itself for an unfused xop). */
enum xop vm_xop_unfused(enum xop op);

/* jit_x86_64.c: compile every function of a translated program into prog->jit; on failure
 * returns -VM_ENOJIT or -VM_ENOMEM with the reason in err.  vm_jit_run has vm_interp's
 * contract.  vm_jit_free releases the code (munmap). */
int vm_jit_compile(struct vm_prog *prog, char *err, size_t errlen);
int vm_jit_run(struct run *run, unsigned entry, const int64_t *argv, int64_t *result);
void vm_jit_free(struct jit_prog *jit);
int vm_jit_listing(const struct vm_prog *prog, unsigned fi, struct vm_jit_listing *out);

/* remote.c: the slow paths taken when an access to a remote region (mref.len 0) misses the
 * bounds check.  Each returns 0 or a trap kind, exactly as the local operation would. */
int vm_remote_load(struct run *run, unsigned r, uint64_t off, void *dst, unsigned width);
int vm_remote_store(struct run *run, unsigned r, uint64_t off, const void *src, unsigned width);
int vm_remote_op(struct run *run, int xop, uint64_t *v, unsigned r1, unsigned r2);
void vm_remote_cache_free(struct run *run);

/* hooks.c */
int vm_hook_prepare(struct hook_bind *h, char *err, size_t errlen);
/* Call hook h (arguments in args[0..n), the result replaces args[0]) and charge its time
 * (hook_ns_per_fuel) to run->fuel, then run->fuel_reserve.  0, or the trap kind that ends
 * the run: hook (it failed), fuel (its time could not be paid), time, cancelled.  Engines
 * store their fuel counter into run->fuel before and take it back after. */
int vm_hook_call(struct run *run, const struct hook_bind *h, int64_t *args);

/* vm.c: the run's chunk of fuel (run->fuel) is used up.  When fuel_reserve has more, looks at
 * the deadline and cancel_at, then moves the next chunk into run->fuel: 0.  Otherwise
 * the trap kind that ends the run: fuel (none left), time, cancelled.  Both engines call it
 * where their counter would go below 0, so fuel use and fuel traps are as with one counter. */
int vm_fuel_refill(struct run *run);
/* The deadline and cancel_at alone: 0, ISA_TRAP_TIME or ISA_TRAP_CANCELLED.  now_ns is
 * CLOCK_MONOTONIC, or 0 to read the clock only when either is set. */
int vm_run_limits(const struct run *run, uint64_t now_ns);
/* Call run->on_slow if now_ns is past slow_at_ns (once). */
void vm_run_slow(struct run *run, uint64_t now_ns);
uint64_t vm_now_ns(void);

#endif
