/* test_diff.c: differential test of the VM against the naive reference interpreter.
 *
 * A random program generator writes verified-by-construction assembly (expressions over
 * locals, constants and region loads near region ends; stack shuffles that stress the
 * translator's lazy stack; branches back and forth; calls with recursion; stores, atomics,
 * bulk operations and output), assembles it, and runs it on each engine of the VM (the
 * interpreter and, where it exists, the JIT) and in tests/ref_interp.c, from identical memory.
 * Result, trap (kind, function, pc, code), fuel used, output bytes and final region contents
 * must all agree, so the engines also agree with each other.  The generator also writes the
 * shapes the interpreter fuses into superinstructions (a scaled index and its load, a stepped
 * pointer read at once, a product divided by a constant, a bit test, a sum going straight
 * into another operation, a product closing a counted loop), with their edge values; the
 * test counts the forms the translator made (vm_prog_xops) and the runs that trapped inside
 * one, and fails when any is never made.
 *
 *   test_diff [N [SEED]]      N programs (default 3000) from SEED (default 1); DIFF_VERBOSE=1
 *                             prints every program (and the count of each form, as
 *                             DIFF_FORMS=1 does).  A failure prints the program and its seed.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "vm.h"
#include "../ref_interp.h"

#define MEM_LEN 64
#define RO_LEN  37

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

/* Growing text buffer for the generated program. */
struct text { char *s; size_t len, cap; };
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->s = realloc(t->s, t->cap);
		if (!t->s)
			abort();
	}
}

struct gen {
	struct text *t;
	unsigned fn, n_funcs, n_locals, n_labels, n_loops;
	unsigned fn_args[4];
};

static const int64_t interesting[] = {
	0, 1, 2, 3, 7, 8, -1, -2, 63, 64, 65, 127, 128, 255, 256, -128, 0x7fffffff,
	-0x80000000ll, 0x100000000ll, INT64_MAX, INT64_MIN, MEM_LEN - 8, MEM_LEN - 1, MEM_LEN,
	RO_LEN - 1, RO_LEN,
};

static void gen_expr(struct gen *g, int budget);

static void gen_const(struct gen *g)
{
	if (pick(3) == 0) {
		/* one call per statement: C leaves the order of evaluating arguments open, and the
		 * same seed must give the same program whatever the compiler */
		unsigned shift = pick(64);
		int64_t v = (int64_t)(rnd() >> shift);
		int64_t sign = pick(2) ? 1 : -1;
		put(g->t, "\tpush %" PRId64 "\n", v * sign);
	}
	else
		put(g->t, "\tpush %" PRId64 "\n",
		    interesting[pick(sizeof interesting / sizeof interesting[0])]);
}

/* An offset for a region of len bytes: mostly in bounds, often at the very end. */
static void gen_offset(struct gen *g, unsigned len, unsigned width, int budget)
{
	switch (pick(10)) {
	case 0: put(g->t, "\tpush %u\n", len - width); break;         /* last in-bounds word */
	case 1: put(g->t, "\tpush %u\n", len - width + 1 + pick(2)); break;  /* just past */
	case 2:
		gen_expr(g, budget - 1);
		put(g->t, "\tpush %u\n\tremu\n", len);                  /* any value, folded in */
		break;
	case 3: {
		unsigned l = pick(g->n_locals), d = pick(8);
		put(g->t, "\tlget %u\n\tpush 7\n\tand\n\tpush %u\n\tadd\n", l, d);
		break;
	}
	case 4:
		/* a loaded byte (+ a small constant) as the offset: the interpreter's LDB_
		 * superinstructions; mem's bytes are mostly small, ro's often past the end */
		put(g->t, "\tpush %u\n\tld8u %s\n", pick(pick(2) ? MEM_LEN : RO_LEN),
		    pick(2) ? "mem" : "ro");
		if (pick(2))
			put(g->t, "\tpush %u\n\tadd\n", pick(len));
		break;
	case 5: {
		/* the sum of two slots as the offset: ADDR_ */
		unsigned a = pick(g->n_locals), b = pick(g->n_locals);
		put(g->t, "\tlget %u\n\tpush 31\n\tand\n\tlget %u\n\tpush 15\n\tand\n\tadd\n", a, b);
		break;
	}
	case 6: {
		/* a scaled index, base + (i << k), then the load: SHLI_ADDR_.  The base a local
		 * (raw now and then: out of bounds), the index masked or raw, the shift count
		 * often 64 or more (only its low 6 bits count) */
		static const unsigned shifts[] = { 0, 1, 2, 3, 64, 65, 66, 67, 127, 191 };
		unsigned a = pick(g->n_locals), b = pick(g->n_locals);
		unsigned k = shifts[pick(sizeof shifts / sizeof shifts[0])];
		char base[64], idx[64];
		snprintf(base, sizeof base, pick(3) ? "\tlget %u\n\tpush 15\n\tand\n" : "\tlget %u\n", a);
		snprintf(idx, sizeof idx, pick(3) ? "\tlget %u\n\tpush 3\n\tand\n" : "\tlget %u\n", b);
		if (pick(2))
			put(g->t, "%s%s\tpush %u\n\tshl\n\tadd\n", base, idx, k);
		else
			put(g->t, "%s\tpush %u\n\tshl\n%s\tadd\n", idx, k, base);
		break;
	}
	case 7: {
		/* a pointer stepped by a constant and stored, then read at once (ltee): ADDI_.
		 * The pointer in bounds, or far below 0 so that the step wraps it back, or
		 * anything; a displacement now and then (folded into the load's) */
		unsigned p = pick(g->n_locals), c = pick(len + 2);
		switch (pick(3)) {
		case 0:
			put(g->t, "\tlget %u\n\tpush 15\n\tand\n\tpush %u\n\tadd\n", pick(g->n_locals), c / 2);
			break;
		case 1:
			put(g->t, "\tpush -%u\n\tpush %u\n\tadd\n", 1 + pick(16), 16 + c / 2);
			break;
		default:
			gen_expr(g, budget - 1);
			put(g->t, "\tpush %" PRId64 "\n\tadd\n",
			    interesting[pick(sizeof interesting / sizeof interesting[0])]);
			break;
		}
		put(g->t, "\tltee %u\n", p);
		if (pick(3) == 0)
			put(g->t, "\tpush %d\n\tadd\n", (int)pick(9) - 4);
		break;
	}
	default: put(g->t, "\tpush %u\n", pick(len)); break;
	}
}

static const char *const binops[] = {
	"add", "sub", "mul", "and", "or", "xor", "shl", "shru", "shrs", "rotl", "rotr", "eq", "ne",
	"lts", "ltu", "les", "leu", "gts", "gtu", "ges", "geu", "divs", "divu", "rems", "remu",
};
static const char *const unops[] = {
	"neg", "not", "clz", "ctz", "popcnt", "sext8", "sext16", "sext32", "eqz",
};
static const char *const loads[] = { "ld8u", "ld8s", "ld16u", "ld16s", "ld32u", "ld32s", "ld64" };
static const unsigned load_w[] = { 1, 1, 2, 2, 4, 4, 8 };
static const char *const jccs[] = {
	"jeq", "jne", "jlts", "jltu", "jles", "jleu", "jgts", "jgtu", "jges", "jgeu",
};

static void gen_binop(struct gen *g)
{
	unsigned i = pick(sizeof binops / sizeof binops[0]);
	put(g->t, "\t%s\n", binops[i]);
}

/* A value in a slot, not a constant (an instruction that reads it has no _RI form): a local,
 * a local just set to an edge value (push c; ltee l), or any expression. */
static void gen_operand(struct gen *g, int budget)
{
	switch (pick(4)) {
	case 0: case 1: put(g->t, "\tlget %u\n", pick(g->n_locals)); break;
	case 2:
		put(g->t, "\tpush %" PRId64 "\n\tltee %u\n",
		    interesting[pick(sizeof interesting / sizeof interesting[0])], pick(g->n_locals));
		break;
	default: gen_expr(g, budget - 1); break;
	}
}

/* A product divided by a constant: MUL_<div>_RI.  Divisors that cannot trap, and now and
 * then 0 or -1 (the division stays a DIVx_RR, with its traps, next to the multiply). */
static void gen_mul_div(struct gen *g, int budget)
{
	static const int64_t divisors[] = {
		3, 7, 10, -2, -3, -7, 2, 16, 0x100000001ll, INT64_MAX, INT64_MIN, INT64_MIN + 1,
		0, -1,
	};
	static const char *const divops[] = { "divs", "divu", "rems", "remu" };
	gen_operand(g, budget);
	gen_operand(g, budget);
	put(g->t, "\tmul\n\tpush %" PRId64 "\n\t%s\n",
	    divisors[pick(sizeof divisors / sizeof divisors[0])], divops[pick(4)]);
}

/* A sum (of two slots, or a slot and a constant) that is at once the left operand of an
 * XBIN whose right one is a local or a constant (often a shift count of 64 or more), or
 * the right operand of a commutative one: ADD_<op>, ADDI_<op>. */
static void gen_add_op(struct gen *g, int budget)
{
	unsigned op = pick(21);        /* binops[] up to geu: the XBIN ones */
	int left = pick(4) != 0;
	char right[64];
	if (pick(2))
		snprintf(right, sizeof right, "\tlget %u\n", pick(g->n_locals));
	else
		snprintf(right, sizeof right, "\tpush %" PRId64 "\n",
		         interesting[pick(sizeof interesting / sizeof interesting[0])]);
	if (!left)
		put(g->t, "%s", right);
	gen_operand(g, budget);
	if (pick(2))
		gen_operand(g, budget);
	else
		gen_const(g);
	put(g->t, "\tadd\n");
	if (left)
		put(g->t, "%s", right);
	put(g->t, "\t%s\n", binops[op]);
}

/* Emit code that pushes exactly one value. */
static void gen_expr(struct gen *g, int budget)
{
	unsigned choice = budget <= 0 ? pick(3) : pick(18);
	switch (choice) {
	case 16: gen_mul_div(g, budget); break;
	case 17: gen_add_op(g, budget); break;
	case 0: gen_const(g); break;
	case 1: put(g->t, "\tlget %u\n", pick(g->n_locals)); break;
	case 2: put(g->t, "\trlen %s\n", (const char *[]){ "mem", "ro", "args", "out", "const" }[pick(5)]); break;
	case 3: gen_expr(g, budget - 1); put(g->t, "\t%s\n", unops[pick(sizeof unops / sizeof unops[0])]); break;
	case 4: case 5:
		gen_expr(g, budget - 1); gen_expr(g, budget - 1); gen_binop(g); break;
	case 6: {
		unsigned l = pick(7);
		const char *r = (const char *[]){ "mem", "ro", "const", "args" }[pick(4)];
		unsigned len = !strcmp(r, "mem") ? MEM_LEN : !strcmp(r, "ro") ? RO_LEN :
		               !strcmp(r, "const") ? 16 : 12;
		gen_offset(g, len, load_w[l], budget);
		put(g->t, "\t%s %s\n", loads[l], r);
		break;
	}
	case 7:
		gen_expr(g, budget - 1); gen_expr(g, budget - 1); gen_expr(g, budget - 1);
		put(g->t, "\tselect\n");
		break;
	case 8: gen_expr(g, budget - 1); gen_expr(g, budget - 1); put(g->t, "\tswap\n"); gen_binop(g); break;
	case 9:
		gen_expr(g, budget - 1); gen_expr(g, budget - 1); put(g->t, "\tover\n");
		gen_binop(g); gen_binop(g);
		break;
	case 10:
		gen_expr(g, budget - 1); gen_expr(g, budget - 1); gen_expr(g, budget - 1);
		put(g->t, "\trot\n"); gen_binop(g); gen_binop(g);
		break;
	case 11: gen_expr(g, budget - 1); put(g->t, "\tdup\n"); gen_binop(g); break;
	case 12: gen_expr(g, budget - 1); put(g->t, "\tltee %u\n", pick(g->n_locals)); break;
	case 13:
		if (g->n_funcs > 1) {
			unsigned f = 1 + pick(g->n_funcs - 1);
			if (g->fn_args[f] == 1 && pick(2)) {
				/* a local and a constant, as in fib(n - 1): the JIT computes the one
				 * argument after the call's checks, in the callee's register */
				static const char *const ops[] = { "add", "sub", "and", "or", "xor" };
				put(g->t, "\tlget %u\n", pick(g->n_locals));
				gen_const(g);
				put(g->t, "\t%s\n", ops[pick(5)]);
			} else {
				for (unsigned i = 0; i < g->fn_args[f]; i++)
					gen_expr(g, budget - 2);
			}
			put(g->t, "\tcall f%u\n", f);
		} else {
			gen_const(g);
		}
		break;
	case 14:
		switch (pick(4)) {
		case 0:
			gen_offset(g, RO_LEN, 4, budget); put(g->t, "\tpush %u\n", pick(8)); gen_expr(g, 0);
			put(g->t, "\tfindb ro\n");
			break;
		case 1:
		{
			unsigned a = pick(MEM_LEN), b = pick(MEM_LEN / 2), c = pick(RO_LEN), d = pick(4);
			unsigned kind = pick(3);
			/* findset: one 32-byte set (c <= 5 fits in ro), none, or a length that is no
			 * whole number of sets or runs past ro: traps */
			if (kind == 2)
				d = pick(4) ? 32 * pick(2) : pick(70);
			put(g->t, "\tpush %u\n\tpush %u\n\tpush %u\n\tpush %u\n\t%s mem, ro\n",
			    a, b, c, d, kind == 0 ? "finds" : kind == 1 ? "findsi" : "findset");
		}
			break;
		case 2:
		{
			unsigned a = pick(MEM_LEN), b = pick(16), c = pick(10);
			put(g->t, "\tpush %u\n\tpush %u\n\tpush %u\n\tcmp mem, const\n", a, b, c);
		}
			break;
		default:
			gen_offset(g, MEM_LEN, 8, budget);
			gen_expr(g, 0);
			if (pick(2)) { gen_expr(g, 0); put(g->t, "\tcas mem\n"); }
			else put(g->t, "\tfadd mem\n");
			break;
		}
		break;
	default:
		/* swap with lazy and slot entries mixed, then a shuffle that keeps one value */
		gen_const(g); gen_expr(g, budget - 1); put(g->t, "\tswap\n\tdrop\n");
		break;
	}
}

/* A counted loop, the shape the JIT compiles twice (a guarded copy without bounds checks
 * or fuel counter, and the usual one): i from near a region's end or anywhere, loads at
 * i + d, the step before, between or after them, looping while i < n, n > i or i != n (now
 * and then i <= n, i == n or n >= i), with
 * n often where the last load is just in bounds or just past, and fuel running out inside. */
static void gen_counted_loop(struct gen *g)
{
	static const char *const conds[] = {
		"jltu", "jlts", "jne", "jleu", "jles", "jeq", "jgtu", "jgts", "jgeu", "jges",
	};
	const unsigned n_interesting = sizeof interesting / sizeof interesting[0];
	unsigned i = pick(g->n_locals), n = pick(g->n_locals), lab = g->n_loops++;
	unsigned cond = pick(pick(2) ? 3 : 10), n_loads = 1 + pick(3), step_at = pick(n_loads + 1);
	int n_is_local = pick(2);
	int64_t start = pick(4) == 0 ? interesting[pick(n_interesting)]
	                             : (int64_t)pick(MEM_LEN + 2) - (int64_t)pick(2);
	int64_t bound = pick(4) == 0 ? interesting[pick(n_interesting)]
	                : (int64_t)(pick(2) ? MEM_LEN : RO_LEN) - (int64_t)pick(10);
	put(g->t, "\tpush %" PRId64 "\n\tlset %u\n", start, i);
	if (n_is_local)
		put(g->t, "\tpush %" PRId64 "\n\tlset %u\n", bound, n);
	put(g->t, "C%u_%u:\n", g->fn, lab);
	for (unsigned k = 0; k <= n_loads; k++) {
		if (k == step_at)
			put(g->t, "\tlinc %u, 1\n", i);
		if (k == n_loads)
			break;
		unsigned ld = pick(sizeof loads / sizeof loads[0]), x = pick(g->n_locals);
		put(g->t, "\tlget %u\n", i);
		if (pick(2))
			put(g->t, "\tpush %u\n\tadd\n", pick(9));
		/* the loaded value summed, mixed in or multiplied (MUL_INC_J when the step and
		 * the test follow) */
		put(g->t, "\t%s %s\n\tlget %u\n\t%s\n\tlset %u\n", loads[ld], pick(2) ? "mem" : "ro",
		    x, (const char *[]){ "add", "xor", "mul" }[pick(3)], x);
	}
	char n_push[48];
	if (n_is_local)
		snprintf(n_push, sizeof n_push, "\tlget %u\n", n);
	else
		snprintf(n_push, sizeof n_push, "\tpush %" PRId64 "\n", bound);
	if (cond >= 6)                 /* n > i, n >= i */
		put(g->t, "%s\tlget %u\n", n_push, i);
	else
		put(g->t, "\tlget %u\n%s", i, n_push);
	put(g->t, "\t%s C%u_%u\n", conds[cond], g->fn, lab);
}

/* A loop that walks a pointer p and stores at q, where p was in the previous iteration (q =
 * p copied at the end), as rsort's insertion does: the JIT's second copy of such a loop
 * leaves out the store's check where the previous iteration's load at p made it (gen_peel).
 * The load and the store of any widths (a narrower load proves nothing for a wider store),
 * the load now and then from another region, at p + 1, or skipped on one path; the store
 * now and then a load from a region shorter than mem; q stepped after the copy now and
 * then; p from near mem's end, running past it or below 0; n counting down to 0, so that the
 * JIT compiles a fast copy without fuel checks behind a guard (struct dloop), and now and then
 * stepped on one path only, so that it must not; now and then a local r set to n before the
 * way out and to a constant after it, whose copies the fast copy sinks out of the loop. */
static void gen_walk_loop(struct gen *g)
{
	static const char *const ld[] = { "ld8u", "ld16u", "ld32u", "ld64" };
	static const char *const st[] = { "st8", "st16", "st32", "st64" };
	static const int steps[] = { -8, -4, -1, 1, 2, 8 };
	unsigned p = pick(g->n_locals), q = pick(g->n_locals), v = pick(g->n_locals);
	unsigned n = pick(g->n_locals), f = pick(g->n_locals), r = pick(g->n_locals);
	unsigned lab = g->n_loops++;
	unsigned wl = pick(4), ws = pick(4);
	int step = steps[pick(sizeof steps / sizeof steps[0])];
	int skip_load = pick(4) == 0;
	put(g->t, "\tpush %u\n\tlset %u\n", MEM_LEN - pick(24), p);
	put(g->t, "\tlget %u\n\tlset %u\n", p, q);
	put(g->t, "\tpush %u\n\tlset %u\n", pick(4) ? 1 + pick(40) : 1000000, n);
	put(g->t, "W%u_%u:\n\tlinc %u, %d\n", g->fn, lab, p, step);
	if (skip_load)
		put(g->t, "\tlget %u\n\tjz W%u_%u_a\n", f, g->fn, lab);
	put(g->t, "\tlget %u\n", p);
	if (pick(8) == 0)
		put(g->t, "\tpush 1\n\tadd\n");
	put(g->t, "\t%s %s\n\tlset %u\n", ld[wl], pick(6) ? "mem" : "ro", v);
	if (skip_load)
		put(g->t, "W%u_%u_a:\n", g->fn, lab);
	if (pick(3) == 0)              /* an exit value, as rsort's j (find_sinks) */
		put(g->t, "\tlget %u\n\tlset %u\n", n, r);
	if (pick(3) == 0)              /* a way out in the middle, as rsort's key compare */
		put(g->t, "\tlget %u\n\tpush %u\n\tjltu W%u_%u_x\n", v, pick(64), g->fn, lab);
	if (pick(4))
		put(g->t, "\tlget %u\n\tlget %u\n\t%s mem\n", q, v, st[ws]);
	else                           /* a load at q from a smaller region: not proven */
		put(g->t, "\tlget %u\n\t%s %s\n\tlget %u\n\tadd\n\tlset %u\n", q, ld[ws],
		    pick(2) ? "ro" : "const", v, v);
	put(g->t, "\tlget %u\n\tlset %u\n", p, q);
	if (pick(3) == 0)
		put(g->t, "\tpush %u\n\tlset %u\n", pick(100), r);
	if (pick(8) == 0)
		put(g->t, "\tlinc %u, 1\n", q);
	if (pick(8) == 0)              /* n's step where v is even only: no dloop (gen_peel) */
		put(g->t, "\tlget %u\n\tpush 1\n\tand\n\tjnz W%u_%u_n\n\tlinc %u, -1\nW%u_%u_n:\n", v,
		    g->fn, lab, n, g->fn, lab);
	else
		put(g->t, "\tlinc %u, -1\n", n);
	put(g->t, "\tlget %u\n\tjnz W%u_%u\nW%u_%u_x:\n", n, g->fn, lab, g->fn, lab);
}

/* Straight code between the tests of gen_twice_test: movs, constants, arithmetic, into a
 * slot other than a and b, but for one time in eight (a look-alike: a compared slot changes
 * between the tests, so the second must be made again). */
static void gen_between(struct gen *g, unsigned a, unsigned b)
{
	static const char *const ops[] = { "add", "sub", "xor", "mul", "shl" };
	for (unsigned n = pick(3); n-- > 0;) {
		unsigned y = pick(g->n_locals);
		if (pick(8) && (y == a || y == b))
			continue;
		switch (pick(4)) {
		case 0: put(g->t, "\tlget %u\n\tlset %u\n", pick(g->n_locals), y); break;
		case 1: put(g->t, "\tlinc %u, %d\n", y, (int)pick(5) - 2); break;
		case 2:
			put(g->t, "\tpush %" PRId64 "\n\tlset %u\n",
			    interesting[pick(sizeof interesting / sizeof interesting[0])], y);
			break;
		default:
			put(g->t, "\tlget %u\n\tlget %u\n\t%s\n\tlset %u\n", pick(g->n_locals),
			    pick(g->n_locals), ops[pick(sizeof ops / sizeof ops[0])], y);
			break;
		}
	}
}

/* A compare tested twice, the first test's target the second's block, only straight code
 * between: clang's code for btree's search step, which the JIT threads (find_thread).  Now
 * and then a look-alike: a compared slot written between, another condition or operand in
 * the second test, a second branch to the join, a way into the code between the tests. */
static void gen_twice_test(struct gen *g)
{
	unsigned a = pick(g->n_locals), b = pick(g->n_locals), lab = g->n_loops++;
	unsigned cc = pick(12), cc2 = pick(6) ? cc : pick(12);     /* 10, 11: jz, jnz */
	int imm = pick(3) == 0, other = pick(8) == 0;
	int64_t k = interesting[pick(sizeof interesting / sizeof interesting[0])];
	unsigned mid = pick(16);        /* 0, 1: a way into the middle, before or after the join */
	if (mid < 2)
		put(g->t, "\tlget %u\n\tjnz M%u_%u\n", pick(g->n_locals), g->fn, lab);
	for (int t = 0; t < 2; t++) {
		unsigned c = t ? cc2 : cc;
		if (t && other)
			b = pick(g->n_locals);
		put(g->t, "\tlget %u\n", a);
		if (c < 10 && imm)
			put(g->t, "\tpush %" PRId64 "\n", k);
		else if (c < 10)
			put(g->t, "\tlget %u\n", b);
		const char *j = c < 10 ? jccs[c] : c == 10 ? "jz" : "jnz";
		if (t == 0) {
			put(g->t, "\t%s D%u_%u\n", j, g->fn, lab);
			if (mid == 0)
				put(g->t, "M%u_%u:\n", g->fn, lab);
			gen_between(g, a, b);
			if (pick(8) == 0)              /* a second way to the join */
				put(g->t, "\tlget %u\n\tjnz D%u_%u\n", pick(g->n_locals), g->fn, lab);
			gen_between(g, a, b);
			put(g->t, "D%u_%u:\n", g->fn, lab);
			gen_between(g, a, b);
			if (mid == 1)
				put(g->t, "M%u_%u:\n", g->fn, lab);
		} else if (pick(4) == 0) {             /* just past itself */
			put(g->t, "\t%s E%u_%u\nE%u_%u:\n", j, g->fn, lab, g->fn, lab);
		} else {                               /* forward or back: fuel then */
			put(g->t, "\t%s L%u_%u\n", j, g->fn, pick(g->n_labels));
		}
	}
}

static void gen_stmt(struct gen *g, int budget)
{
	unsigned l = pick(g->n_labels);
	switch (pick(17)) {
	case 16: gen_twice_test(g); break;
	case 13: gen_counted_loop(g); break;
	case 15: gen_walk_loop(g); break;
	case 0: case 1: gen_expr(g, budget); put(g->t, "\tlset %u\n", pick(g->n_locals)); break;
	case 2: gen_expr(g, budget); put(g->t, "\tdrop\n"); break;
	case 3: gen_expr(g, budget); put(g->t, pick(2) ? "\toutb\n" : "\toutq\n"); break;
	case 4: {
		static const char *const st[] = { "st8", "st16", "st32", "st64" };
		static const unsigned w[] = { 1, 2, 4, 8 };
		unsigned i = pick(4);
		int out = pick(3) == 0;
		gen_offset(g, out ? 40 : MEM_LEN, w[i], budget);
		gen_expr(g, budget - 1);
		put(g->t, "\t%s %s\n", st[i], out ? "out" : "mem");
		break;
	}
	case 5: {
		unsigned x = pick(g->n_locals);
		int d = (int)pick(9) - 4;
		/* half the time the end of a counted loop, what the interpreter fuses: an
		 * accumulation (a sum, or a product by a constant), the step, and a test of the
		 * stepped local (INC_J, ADD_INC_J, MULI_INC_J) */
		int loop_end = pick(2);
		if (loop_end && pick(4)) {
			unsigned s = pick(g->n_locals);
			switch (pick(5)) {
			case 0:
				put(g->t, "\tlget %u\n", s);
				gen_expr(g, budget - 1);
				put(g->t, "\tadd\n\tlset %u\n", s);
				break;
			case 1:
				gen_expr(g, budget - 1);
				put(g->t, "\tpush %d\n\tmul\n\tlset %u\n", (int)pick(1000) - 500, s);
				break;
			default:    /* a product of two slots: MUL_INC_J (fnv1a's hash through pncc) */
				put(g->t, "\tlget %u\n", s);
				gen_operand(g, budget - 1);
				put(g->t, "\tmul\n\tlset %u\n", s);
				break;
			}
		}
		put(g->t, "\tlinc %u, %d\n", x, d);
		if (loop_end) {
			put(g->t, "\tlget %u\n", x);
			/* the bound a local or a constant half the time, so nothing comes between
			 * the step and the branch */
			switch (pick(4)) {
			case 0: put(g->t, "\tlget %u\n", pick(g->n_locals)); break;
			case 1: gen_const(g); break;
			default: gen_expr(g, budget - 1); break;
			}
			put(g->t, "\t%s L%u_%u\n", jccs[pick(10)], g->fn, l);
		}
		break;
	}
	case 6: case 7:
		gen_expr(g, budget - 1); gen_expr(g, budget - 1);
		put(g->t, "\t%s L%u_%u\n", jccs[pick(10)], g->fn, l);
		break;
	case 8:
		gen_expr(g, budget - 1);
		if (pick(2)) {
			/* a bit test: ANDI_J (the result kept in a local half the time) */
			static const int64_t masks[] = { 1, 2, 0x80, 0xff, 7, 0, -1, INT64_MIN, 0x100000000ll };
			put(g->t, "\tpush %" PRId64 "\n\tand\n", masks[pick(sizeof masks / sizeof masks[0])]);
			if (pick(2))
				put(g->t, "\tltee %u\n", pick(g->n_locals));
		}
		put(g->t, "\t%s L%u_%u\n", pick(2) ? "jz" : "jnz", g->fn, l);
		break;
	case 9:
		switch (pick(3)) {
		case 0: {
			unsigned a = pick(MEM_LEN), b = pick(RO_LEN), c = pick(20);
			put(g->t, "\tpush %u\n\tpush %u\n\tpush %u\n\tcopy mem, ro\n", a, b, c);
			break;
		}
		case 1: {
			unsigned a = pick(48), b = pick(12);
			put(g->t, "\tpush %u\n\tpush %u\n", a, b);
			gen_expr(g, 0);
			put(g->t, "\tfill %s\n", pick(2) ? "mem" : "out");
			break;
		}
		default: {
			unsigned a = pick(RO_LEN), b = pick(12);
			put(g->t, "\tpush %u\n\tpush %u\n\toutput ro\n", a, b);
			break;
		}
		}
		break;
	case 10: if (pick(4) == 0) { gen_expr(g, budget); put(g->t, "\tret\n"); } break;
	case 11: if (pick(20) == 0) put(g->t, "\ttrap %u\n", pick(100)); break;
	case 12: if (pick(3) == 0) put(g->t, "\tjmp L%u_%u\n", g->fn, l); break;
	default: put(g->t, "L%u_%u:\n", g->fn, pick(g->n_labels)); break;
	}
}

static void gen_program(struct text *t)
{
	struct gen g = { .t = t, .n_funcs = 1 + pick(3) };
	put(t, ".region mem rw\n.region ro ro\n.const k bytes");
	for (int i = 0; i < 16; i++)
		put(t, "%s %u", i ? "," : "", pick(256));
	put(t, "\n");
	for (unsigned f = 0; f < g.n_funcs; f++)
		g.fn_args[f] = f ? 1 + pick(2) : 0;
	for (unsigned f = 0; f < g.n_funcs; f++) {
		g.fn = f;
		/* one function in four has more locals than the JIT has cache registers, so
		 * slots also live in memory (store-to-load forwarding, zeroing in the prologue) */
		g.n_locals = g.fn_args[f] + 1 + (pick(4) ? pick(4) : 8 + pick(6));
		g.n_labels = 1 + pick(4);
		put(t, ".func %s", f ? "" : "main");
		if (f)
			put(t, "f%u", f);
		for (unsigned a = 0; a < g.fn_args[f]; a++)
			put(t, " a%u", a);
		put(t, "\n.locals %u\n", g.n_locals);
		/* Every label is defined once, at a statement boundary (stack depth 0). */
		unsigned n_stmts = 3 + pick(f ? 8 : 20);
		unsigned *label_at = calloc(g.n_labels, sizeof *label_at);
		for (unsigned i = 0; i < g.n_labels; i++)
			label_at[i] = pick(n_stmts + 1);
		for (unsigned s = 0; s <= n_stmts; s++) {
			for (unsigned i = 0; i < g.n_labels; i++)
				if (label_at[i] == s)
					put(t, "L%u_%u:\n", f, i);
			if (s < n_stmts) {
				/* a free label definition statement would duplicate labels: avoid it */
				size_t before = t->len;
				gen_stmt(&g, 3);
				if (t->len > before && t->s[before] == 'L') {
					t->len = before;
					t->s[before] = '\0';
				}
			}
		}
		free(label_at);
		gen_expr(&g, 2);
		put(t, "\tret\n.end\n");
	}
	put(t, ".export main\n");
}

/* The engines every program runs on; the JIT only where it exists. */
static const int engines[] = {
	VM_ENGINE_INTERP,
#if defined(__x86_64__) && defined(__linux__)
	VM_ENGINE_JIT,
#endif
};
#define N_ENGINES ((int)(sizeof engines / sizeof engines[0]))

/* The remote variant: the same regions bound with vm_bind_remote_region, the callbacks
 * serving them from local buffers, so "local placement" must give the very same results. */
struct fake_remote { uint8_t *mem, *ro; unsigned calls; };

static uint8_t *fake_base(struct fake_remote *f, const char *region)
{
	return !strcmp(region, "mem") ? f->mem : f->ro;
}

static int fake_read(void *user, const char *region, uint64_t off, void *dst, uint64_t len,
                     char *err, size_t errlen)
{
	struct fake_remote *f = user;
	f->calls++;
	memcpy(dst, fake_base(f, region) + off, len);
	return 0;
}

static int fake_write(void *user, const char *region, uint64_t off, const void *src,
                      uint64_t len, char *err, size_t errlen)
{
	struct fake_remote *f = user;
	f->calls++;
	memcpy(fake_base(f, region) + off, src, len);
	return 0;
}

static int fake_atomic(void *user, const char *region, int op, uint64_t off, uint64_t a,
                       uint64_t b, uint64_t *old, char *err, size_t errlen)
{
	struct fake_remote *f = user;
	f->calls++;
	uint64_t w;
	memcpy(&w, fake_base(f, region) + off, 8);
	*old = w;
	if (op == OP_CAS) {
		if (w == a)
			memcpy(fake_base(f, region) + off, &b, 8);
	} else {
		w += a;
		memcpy(fake_base(f, region) + off, &w, 8);
	}
	return 0;
}

static const struct vm_remote_ops fake_ops = { fake_read, fake_write, fake_atomic };

/* findsi (sets 0) or findset (sets 1) over longer haystacks than the random programs reach:
 * the SSE2 blocks, the tail, the fallbacks (Rabin-Karp, shift-and: haystacks of "aA" only make
 * every position a candidate), on every engine and through remote regions, against a naive
 * search (with tolower; with the sets' bits).  Returns failures. */
#define HAY_MAX 6000
static int in_set(const uint8_t *set, uint8_t c) { return set[c / 8] >> (c % 8) & 1; }
static unsigned find_stress(unsigned n, unsigned *passed, int sets)
{
	static const char prog_si[] =
		".region mem ro\n.region ro ro\n"
		".func main off n noff nn\n\tlget off\n\tlget n\n\tlget noff\n\tlget nn\n"
		"\tfindsi mem, ro\n\tret\n.end\n.export main\n";
	static const char prog_set[] =
		".region mem ro\n.region ro ro\n"
		".func main off n noff nn\n\tlget off\n\tlget n\n\tlget noff\n\tlget nn\n"
		"\tfindset mem, ro\n\tret\n.end\n.export main\n";
	const char *prog_src = sets ? prog_set : prog_si;
	/* findset: also UTF-8 Greek and Cyrillic bytes, as grep's case-folded letters give */
	static const char *const alpha_si[] = { "aA", "aAbB", "abAB xX@`[{\n", NULL };
	static const char *const alpha_set[] = { "aA", "\xce\xcf\xa3\x83\x82 ", "abAB xX@`[{\n",
		"\xd0\xd1\xbf\x9f\x80\xa0\xb8\x98 \n", NULL };
	const char *const *alpha = sets ? alpha_set : alpha_si;
	unsigned n_alpha = sets ? 5 : 4;
	static uint8_t hay[HAY_MAX], nd[64 * 32];
	uint8_t *seg;
	size_t seg_len;
	char *diags = NULL, err[300];
	unsigned failed = 0;
	if (asm_assemble(prog_src, strlen(prog_src), "find.pna", &seg, &seg_len, &diags) != 0) {
		printf("FAIL find_stress: %s\n", diags);
		free(diags);
		return 1;
	}
	free(diags);
	struct vm *vms[N_ENGINES + 1];
	struct vm_prog *progs[N_ENGINES + 1];
	struct fake_remote fake = { hay, nd, 0 };
	for (int e = 0; e <= N_ENGINES; e++) {
		vms[e] = vm_new();
		if (e < N_ENGINES) {
			vm_set_engine(vms[e], engines[e]);
			vm_bind_region(vms[e], "mem", hay, HAY_MAX, ISA_ACC_RO);
			vm_bind_region(vms[e], "ro", nd, sizeof nd, ISA_ACC_RO);
		} else {
			vm_bind_remote_region(vms[e], "mem", HAY_MAX, ISA_ACC_RO, &fake_ops, &fake);
			vm_bind_remote_region(vms[e], "ro", sizeof nd, ISA_ACC_RO, &fake_ops, &fake);
		}
		if (vm_load(vms[e], seg, seg_len, &progs[e], err, sizeof err) != 0) {
			printf("FAIL find_stress: vm_load: %s\n", err);
			return 1;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		rng_state = 0x5eed0000u + i;
		const char *a = alpha[pick(n_alpha)];
		size_t na = a ? strlen(a) : 0;
		uint64_t len = 1 + pick(HAY_MAX);
		for (uint64_t j = 0; j < HAY_MAX; j++)
			hay[j] = a ? (uint8_t)a[pick((unsigned)na)] : (uint8_t)rnd();
		uint64_t nn = 1 + pick(pick(2) ? 60 : 6);
		if (nn > len)
			nn = len;
		if (sets) {
			/* each set: a haystack byte (of a piece, half the time) with 0-4 more from
			 * the alphabet or anywhere, now and then a big or an empty set */
			uint64_t at = pick(2) ? pick((unsigned)(len - nn + 1)) : UINT64_MAX;
			memset(nd, 0, sizeof nd);
			for (uint64_t j = 0; j < nn; j++) {
				uint8_t *set = nd + 32 * j;
				unsigned extra = pick(5), kind = pick(50);
				if (at != UINT64_MAX)
					set[hay[at + j] / 8] |= (uint8_t)(1u << (hay[at + j] % 8));
				for (unsigned e = 0; e < extra; e++) {
					uint8_t c = a && pick(4) ? (uint8_t)a[pick((unsigned)na)] : (uint8_t)rnd();
					set[c / 8] |= (uint8_t)(1u << (c % 8));
				}
				if (kind == 0)
					memset(set, 0xff, 32);
				else if (kind == 1 && at == UINT64_MAX)
					memset(set, 0, 32);
			}
		} else if (pick(2)) {               /* a piece of the haystack, letters flipped */
			uint64_t at = pick((unsigned)(len - nn + 1));
			for (uint64_t j = 0; j < nn; j++) {
				uint8_t c = hay[at + j];
				nd[j] = pick(2) && ((c | 32) >= 'a' && (c | 32) <= 'z') ? c ^ 32 : c;
			}
		} else {
			for (uint64_t j = 0; j < nn; j++)
				nd[j] = a ? (uint8_t)a[pick((unsigned)na)] : (uint8_t)rnd();
		}
		uint64_t off = pick((unsigned)len), cnt = pick((unsigned)(len - off + 1));
		uint64_t want = UINT64_MAX;
		for (uint64_t c = off; nn <= cnt && c <= off + cnt - nn && want == UINT64_MAX; c++) {
			uint64_t j = 0;
			while (j < nn && (sets ? in_set(nd + 32 * j, hay[c + j])
			                       : tolower(hay[c + j]) == tolower(nd[j])))
				j++;
			if (j == nn)
				want = c;
		}
		int64_t args[4] = { (int64_t)off, (int64_t)cnt, 0, (int64_t)(sets ? 32 * nn : nn) };
		for (int e = 0; e <= N_ENGINES; e++) {
			struct vm_run_opts o = { .fuel = 100 };
			struct vm_result r;
			int rc = vm_run(progs[e], 0, args, 4, &o, &r);
			if (rc != 0 || (uint64_t)r.value != want) {
				printf("FAIL %s_stress case %u on %s: off %" PRIu64 " len %" PRIu64
				       " nlen %" PRIu64 ": rc %d, %" PRId64 " instead of %" PRId64 "\n",
				       sets ? "findset" : "findsi", i,
				       e < N_ENGINES ? vm_engine_name(engines[e]) : "remote", off, cnt, nn, rc,
				       r.value, (int64_t)want);
				failed++;
				break;
			}
		}
	}
	*passed += n - failed;
	for (int e = 0; e <= N_ENGINES; e++) {
		vm_prog_free(progs[e]);
		vm_free(vms[e]);
	}
	free(seg);
	return failed;
}

/* The superinstructions the generator is meant to reach (docs/interpreter.md), and how many
 * times the translator made each over a run, counted from vm_prog_xops on the interpreter's
 * code.  With enough programs (and fusion on) a form never made fails the run: the generator
 * no longer covers it. */
#define MAX_FORMS 160
static char form_name[MAX_FORMS][24];
static unsigned form_count[MAX_FORMS], n_forms;

static void add_form(const char *prefix, const char *middle, const char *suffix)
{
	char up[16];
	size_t i;
	for (i = 0; middle[i] && i + 1 < sizeof up; i++)
		up[i] = (char)toupper((unsigned char)middle[i]);
	up[i] = '\0';
	if (n_forms < MAX_FORMS)
		snprintf(form_name[n_forms++], sizeof form_name[0], "%s%s%s", prefix, up, suffix);
}

static void init_forms(void)
{
	static const char *const bins[] = {
		"add", "sub", "mul", "and", "or", "xor", "shl", "shru", "shrs", "rotl", "rotr", "eq",
		"ne", "lts", "ltu", "les", "leu", "gts", "gtu", "ges", "geu",
	};
	static const char *const ldx[] = { "ld8u", "ld8s", "ld16u", "ld16s", "ld32u", "ld32s", "ld64" };
	static const char *const ccs[] = { "eq", "ne", "lts", "ltu", "les", "leu", "gts", "gtu", "ges", "geu" };
	static const char *const divs[] = { "divs", "divu", "rems", "remu" };
	for (unsigned i = 0; i < 7; i++)
		add_form("SHLI_ADDR_", ldx[i], "");
	for (unsigned i = 0; i < 7; i++)
		add_form("ADDI_", ldx[i], "");
	for (unsigned i = 0; i < 4; i++)
		add_form("MUL_", divs[i], "_RI");
	add_form("ANDI_", "jz", "");
	add_form("ANDI_", "jzb", "");
	add_form("ANDI_", "jnz", "");
	add_form("ANDI_", "jnzb", "");
	for (unsigned i = 0; i < 10; i++) {
		add_form("MUL_INC_J", ccs[i], "_RRB");
		add_form("MUL_INC_J", ccs[i], "_RIB");
	}
	for (unsigned i = 0; i < 21; i++) {
		add_form("ADD_", bins[i], "_RR");
		add_form("ADD_", bins[i], "_RI");
	}
	for (unsigned i = 0; i < 21; i++) {
		add_form("ADDI_", bins[i], "_RR");
		add_form("ADDI_", bins[i], "_RI");
	}
}

/* Where the forms of the current program end: a trap there (fuel at a fused branch, bounds
 * at a fused load) is a trap in a superinstruction's second or third part. */
struct form_end { unsigned func, pc, form; };
static struct form_end ends[512];
static unsigned n_ends;

/* The edge cases the runs must reach inside a superinstruction: fuel running out at the
 * fused backward branch, a bounds error at the fused load. */
enum { EDGE_FUEL_MUL_INC, EDGE_FUEL_ANDI, EDGE_BOUNDS_SHLI, EDGE_BOUNDS_ADDI, N_EDGES };
static const char *const edge_name[N_EDGES] = {
	"fuel at MUL_INC_J", "fuel at ANDI_J", "bounds at SHLI_ADDR_", "bounds at ADDI_<ld>",
};
static unsigned edge_count[N_EDGES];

/* Count the forms in prog's interpreter code and note where each ends. */
static void count_forms(const struct vm_prog *prog)
{
	static const char *names[4096];
	static uint32_t pcs[4096];
	n_ends = 0;
	for (unsigned fi = 0; fi < vm_prog_seg(prog)->n_funcs; fi++) {
		int n = vm_prog_xops(prog, fi, names, pcs, 4096);
		for (int i = 0; i < n && i < 4096; i++) {
			const char *x = names[i];
			if (strncmp(x, "SHLI_", 5) && strncmp(x, "ADD", 3) && strncmp(x, "MUL_", 4) &&
			    strncmp(x, "ANDI_", 5))
				continue;
			for (unsigned f = 0; f < n_forms; f++)
				if (!strcmp(x, form_name[f])) {
					int last = i + (strstr(x, "_INC_J") || !strncmp(x, "SHLI_", 5) ? 2 : 1);
					form_count[f]++;
					if (last < n && n_ends < sizeof ends / sizeof ends[0])
						ends[n_ends++] = (struct form_end){ fi, pcs[last], f };
					break;
				}
		}
	}
}

/* The run ended in trap t (the same on every engine): count it if it is one of the edges. */
static void count_edge(const struct vm_trap *t)
{
	for (unsigned e = 0; e < n_ends; e++) {
		if (ends[e].func != t->func || ends[e].pc != t->pc)
			continue;
		const char *x = form_name[ends[e].form];
		if (t->kind == ISA_TRAP_FUEL && !strncmp(x, "MUL_INC_J", 9))
			edge_count[EDGE_FUEL_MUL_INC]++;
		else if (t->kind == ISA_TRAP_FUEL && !strncmp(x, "ANDI_J", 6))
			edge_count[EDGE_FUEL_ANDI]++;
		else if (t->kind == ISA_TRAP_BOUNDS && !strncmp(x, "SHLI_ADDR_", 10))
			edge_count[EDGE_BOUNDS_SHLI]++;
		else if (t->kind == ISA_TRAP_BOUNDS && !strncmp(x, "ADDI_LD", 7))
			edge_count[EDGE_BOUNDS_ADDI]++;
		return;
	}
}

/* Print the counts (all of them with verbose, else those at 0); returns the forms at 0. */
static unsigned report_forms(int verbose)
{
	unsigned missing = 0, total = 0;
	for (unsigned f = 0; f < n_forms; f++) {
		total += form_count[f];
		missing += form_count[f] == 0;
		if (verbose || form_count[f] == 0)
			printf("  %-18s %u\n", form_name[f], form_count[f]);
	}
	printf("test_diff: %u of %u superinstruction forms made (%u in all); runs ending", n_forms - missing,
	       n_forms, total);
	for (unsigned e = 0; e < N_EDGES; e++) {
		printf("%s %s %u", e ? "," : "", edge_name[e], edge_count[e]);
		missing += edge_count[e] == 0;
	}
	printf("\n");
	return missing;
}

static int same_trap(const struct vm_trap *a, const struct vm_trap *b)
{
	return a->kind == b->kind && a->func == b->func && a->pc == b->pc &&
	       (a->kind != ISA_TRAP_USER || a->code == b->code);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 3000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	int verbose = getenv("DIFF_VERBOSE") != NULL;
	unsigned passed = 0, failed = 0, traps = 0;
	static uint8_t mem0[MEM_LEN], ro0[RO_LEN];
	_Alignas(8) static uint8_t mem_vm[MEM_LEN], mem_ref[MEM_LEN];
	static uint8_t ro_vm[RO_LEN], ro_ref[RO_LEN], out_vm[64], out_ref[64];
	static const char argbytes[12] = "args\0bytes\n";

	init_forms();
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = seed * 1000003u + i;
		rng_state = s ? s : 1;
		for (int j = 0; j < 10; j++)
			rnd();
		struct text t = { 0 };
		gen_program(&t);
		/* every 4th program gets text-like bytes, so that finds and findsi match often */
		static const char text[] = "aAbB@`[{ \n";
		int texty = i % 4 == 3;
		for (unsigned j = 0; j < MEM_LEN; j++)
			mem0[j] = texty ? (uint8_t)text[pick(sizeof text - 1)] : (uint8_t)rnd();
		for (unsigned j = 0; j < RO_LEN; j++)
			ro0[j] = texty ? (uint8_t)text[pick(sizeof text - 1)] : (uint8_t)rnd();
		if (verbose)
			printf("---- program %u (seed %" PRIu64 ")\n%s", i, s, t.s);

		uint8_t *seg;
		size_t seg_len;
		char *diags = NULL;
		if (asm_assemble(t.s, t.len, "gen.pna", &seg, &seg_len, &diags) != 0) {
			printf("FAIL %u: generated program does not assemble:\n%s\n%s", i, diags, t.s);
			free(diags);
			free(t.s);
			failed++;
			continue;
		}
		free(diags);
		memcpy(mem_ref, mem0, MEM_LEN);
		memcpy(ro_vm, ro0, RO_LEN); memcpy(ro_ref, ro0, RO_LEN);
		struct vm *vm = vm_new();
		if (N_ENGINES > 1)
			vm_set_engine(vm, VM_ENGINE_JIT);   /* a program the JIT cannot compile fails */
		vm_bind_region(vm, "mem", mem_vm, MEM_LEN, ISA_ACC_RW);
		vm_bind_region(vm, "ro", ro_vm, RO_LEN, ISA_ACC_RO);
		struct fake_remote fake = { mem_vm, ro_vm, 0 };
		struct vm *vm_r = vm_new();
		vm_bind_remote_region(vm_r, "mem", MEM_LEN, ISA_ACC_RW, &fake_ops, &fake);
		vm_bind_remote_region(vm_r, "ro", RO_LEN, ISA_ACC_RO, &fake_ops, &fake);
		struct vm_prog *prog = NULL, *prog_r = NULL;
		char err[300];
		if (vm_load(vm, seg, seg_len, &prog, err, sizeof err) != 0 ||
		    vm_load(vm_r, seg, seg_len, &prog_r, err, sizeof err) != 0) {
			printf("FAIL %u: vm_load: %s\n%s", i, err, t.s);
			failed++;
			goto next;
		}
		count_forms(prog);
		/* fuel for 500 backward branches and calls, or now and then for a few: it runs out
		 * at more places (in a loop's first iterations, at a fused branch) */
		uint64_t fuel = pick(4) ? 500 : 1 + pick(40);
		struct vm_run_opts o_ref = { .args = argbytes, .args_len = sizeof argbytes,
		                             .out = out_ref, .out_cap = 40, .fuel = fuel };
		memset(out_ref, 0xee, sizeof out_ref);
		struct vm_result r_ref;
		struct ref_region regs[2] = { { mem_ref, MEM_LEN }, { ro_ref, RO_LEN } };
		int rc_ref = ref_run(vm_prog_seg(prog), regs, 0, NULL, &o_ref, &r_ref);
		int ok = 1;
		for (int e = 0; e <= N_ENGINES; e++) {      /* the last round: remote regions */
			struct vm_run_opts o_vm = o_ref;
			o_vm.out = out_vm;
			o_vm.engine = e < N_ENGINES ? engines[e] : VM_ENGINE_INTERP;
			memset(out_vm, 0xee, sizeof out_vm);
			memcpy(mem_vm, mem0, MEM_LEN);
			struct vm_result r_vm;
			int rc_vm = vm_run(e < N_ENGINES ? prog : prog_r, 0, NULL, 0, &o_vm, &r_vm);
			const char *why = NULL;
			if (rc_vm != rc_ref) why = "return code";
			else if (rc_vm == 0 && r_vm.value != r_ref.value) why = "result value";
			else if (rc_vm != 0 && !same_trap(&r_vm.trap, &r_ref.trap)) why = "trap";
			else if (r_vm.fuel_used != r_ref.fuel_used) why = "fuel used";
			else if (r_vm.out_len != r_ref.out_len || memcmp(out_vm, out_ref, r_vm.out_len)) why = "output";
			else if (memcmp(mem_vm, mem_ref, MEM_LEN)) why = "region contents";
			if (why) {
				char a[300], b[300];
				printf("FAIL program %u (seed %" PRIu64 "): %s differs on engine %s\n"
				       "  vm:  rc %d value %" PRId64 " fuel %" PRIu64 " out %" PRIu64 " %s\n"
				       "  ref: rc %d value %" PRId64 " fuel %" PRIu64 " out %" PRIu64 " %s\n%s",
				       i, s, why, e < N_ENGINES ? vm_engine_name(engines[e]) : "interp (remote regions)",
				       rc_vm, r_vm.value,
				       r_vm.fuel_used, r_vm.out_len,
				       rc_vm ? vm_trap_str(prog, &r_vm.trap, a, sizeof a) : "",
				       rc_ref, r_ref.value, r_ref.fuel_used, r_ref.out_len,
				       rc_ref ? vm_trap_str(prog, &r_ref.trap, b, sizeof b) : "", t.s);
				ok = 0;
				break;
			}
		}
		if (ok) {
			passed++;
			traps += rc_ref != 0;
			if (rc_ref != 0)
				count_edge(&r_ref.trap);
		} else {
			failed++;
		}
next:
		vm_prog_free(prog);
		vm_prog_free(prog_r);
		vm_free(vm);
		vm_free(vm_r);
		free(seg);
		free(t.s);
	}
	failed += find_stress(2000, &passed, 0);
	failed += find_stress(3000, &passed, 1);
	printf("test_diff: %u programs from seed %" PRIu64 ", %u ended in a trap\n", n, seed, traps);
	unsigned missing = report_forms(verbose || getenv("DIFF_FORMS") != NULL);
	if (missing && n >= 1000 && !getenv("VM_NO_FUSE")) {
		printf("FAIL: %u superinstruction form%s or edge%s never made\n", missing,
		       missing > 1 ? "s" : "", missing > 1 ? "s" : "");
		failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}
