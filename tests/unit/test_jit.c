/* test_jit.c: checks specific to the x86-64 JIT (vm/jit_x86_64.c) and the engine selection.
 *
 * Each check assembles a small program, runs it under the interpreter and the JIT and compares
 * everything a run reports; some also pin the expected value or trap.  JIT-only properties
 * (W^X of the code mapping, the fallback reason, deep recursion on the native stack) are
 * checked directly; so are the run limits (fuel refilled in chunks, deadline, cancel flag,
 * hook time charged as fuel) on each engine.  Prints "N passed, N failed".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "asm.h"
#include "vm.h"

static unsigned passed, failed;

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		printf("FAIL %s\n", what);
	}
}

static uint8_t *assemble(const char *src, size_t *len)
{
	uint8_t *seg = NULL;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "test.pna", &seg, len, &diags) != 0) {
		printf("assembly failed:\n%s\n%s", diags ? diags : "", src);
		free(diags);
		return NULL;
	}
	free(diags);
	return seg;
}

static struct vm_prog *load(struct vm *vm, const char *src, char *err, size_t errlen, int *rc)
{
	size_t len;
	uint8_t *seg = assemble(src, &len);
	struct vm_prog *prog = NULL;
	*rc = seg ? vm_load(vm, seg, len, &prog, err, errlen) : -VM_EINVAL;
	free(seg);
	return prog;
}

struct outcome {
	int rc;
	struct vm_result res;
	uint8_t out[64];
};

static void run_on(const struct vm_prog *prog, int engine, const int64_t *argv, unsigned n_args,
                   uint64_t fuel, struct outcome *o)
{
	memset(o, 0, sizeof *o);
	struct vm_run_opts opts = { .out = o->out, .out_cap = sizeof o->out, .fuel = fuel,
	                            .engine = engine };
	o->rc = vm_run(prog, 0, argv, n_args, &opts, &o->res);
}

static int same(const struct outcome *a, const struct outcome *b)
{
	return a->rc == b->rc && a->res.out_len == b->res.out_len &&
	       a->res.fuel_used == b->res.fuel_used &&
	       !memcmp(a->out, b->out, a->res.out_len) &&
	       (a->rc != 0 || a->res.value == b->res.value) &&
	       (a->rc == 0 || (a->res.trap.kind == b->res.trap.kind &&
	                       a->res.trap.func == b->res.trap.func &&
	                       a->res.trap.pc == b->res.trap.pc &&
	                       a->res.trap.code == b->res.trap.code &&
	                       !strcmp(a->res.trap.msg, b->res.trap.msg)));
}

/* Run main of src on both engines; both must agree, and the JIT must have compiled it. */
static void both(const char *name, const char *src, const int64_t *argv, unsigned n_args,
                 uint64_t fuel, struct outcome *jit)
{
	char err[256], what[512];
	int rc;
	struct vm *vm = vm_new();
	struct vm_prog *prog = load(vm, src, err, sizeof err, &rc);
	snprintf(what, sizeof what, "%s: loads (%s)", name, rc ? err : "");
	check(rc == 0, what);
	if (rc == 0) {
		struct outcome in;
		snprintf(what, sizeof what, "%s: compiled by the JIT (%s)", name,
		         vm_prog_jit_error(prog) ? vm_prog_jit_error(prog) : "");
		check(vm_prog_jit_error(prog) == NULL, what);
		run_on(prog, VM_ENGINE_INTERP, argv, n_args, fuel, &in);
		run_on(prog, VM_ENGINE_JIT, argv, n_args, fuel, jit);
		snprintf(what, sizeof what, "%s: engines agree (interp rc %d value %" PRId64
		         ", jit rc %d value %" PRId64 ")", name, in.rc, in.res.value, jit->rc,
		         jit->res.value);
		check(same(&in, jit), what);
	}
	vm_prog_free(prog);
	vm_free(vm);
}

static void expect_value(const char *name, const char *src, const int64_t *argv,
                         unsigned n_args, int64_t want)
{
	struct outcome o;
	char what[256];
	both(name, src, argv, n_args, 0, &o);
	snprintf(what, sizeof what, "%s: returns %" PRId64 " (got rc %d, %" PRId64 ")", name, want,
	         o.rc, o.res.value);
	check(o.rc == 0 && o.res.value == want, what);
}

/* ---- straight-line arithmetic ---- */
static void test_arith(void)
{
	int64_t args[2] = { 1000, 7 };
	expect_value("add/sub/mul", ".func main a b\n lget a\n lget b\n add\n lget a\n mul\n"
	             " lget b\n sub\n ret\n.end\n", args, 2, (1000 + 7) * 1000 - 7);
	expect_value("div/rem by constants", ".func main a b\n lget a\n push 7\n remu\n lget a\n"
	             " push 10\n divu\n add\n lget a\n push -3\n divs\n add\n ret\n.end\n",
	             args, 2, 1000 % 7 + 100 + 1000 / -3);
	int64_t big[2] = { INT64_MIN, -1 };
	struct outcome o;
	both("INT64_MIN / -1", ".func main a b\n lget a\n lget b\n divs\n ret\n.end\n", big, 2, 0, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_DIV_OVERFLOW && o.res.trap.pc == 4,
	      "INT64_MIN / -1 traps div_overflow at pc 4");
	expect_value("INT64_MIN % -1", ".func main a b\n lget a\n lget b\n rems\n ret\n.end\n",
	             big, 2, 0);
	int64_t z[2] = { 5, 0 };
	both("division by zero", ".func main a b\n lget a\n lget b\n divu\n ret\n.end\n", z, 2, 0, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_DIV_ZERO,
	      "division by zero traps div_zero");
}

/* ---- traps at the edges ---- */
static void expect_trap(const char *name, const char *src, const int64_t *argv, unsigned n_args,
                        uint64_t fuel, int kind, uint32_t pc)
{
	struct outcome o;
	char what[256];
	both(name, src, argv, n_args, fuel, &o);
	snprintf(what, sizeof what, "%s: traps %s at pc %u (got rc %d, %s at pc %u)", name,
	         isa_trap_name(kind), pc, o.rc, isa_trap_name(o.res.trap.kind), o.res.trap.pc);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == kind && o.res.trap.pc == pc, what);
}

static void test_bounds(void)
{
	/* const holds 16 bytes: the last byte, word and quad load; one more traps */
	const char *src = ".const k bytes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	                  ".func main o\n lget o\n ld8u const\n lget o\n push -1\n add\n"
	                  " ld16u const\n add\n lget o\n push -7\n add\n ld64 const\n add\n"
	                  " ret\n.end\n";
	int64_t last[1] = { 15 }, past[1] = { 16 }, huge[1] = { -1 };
	expect_value("last byte, word and quad of a region", src, last, 1,
	             16 + (15 | 16 << 8) + (int64_t)0x100f0e0d0c0b0a09ll);
	expect_trap("one past the last byte", src, past, 1, 0, ISA_TRAP_BOUNDS, 2);
	expect_trap("offset -1", src, huge, 1, 0, ISA_TRAP_BOUNDS, 2);
	/* folded displacement: o + 2^40 wraps nowhere near the region */
	expect_trap("displacement beyond the region", ".func main o\n lget o\n push 0x10000000000\n"
	            " add\n ld8u const\n ret\n.end\n", last, 1, 0, ISA_TRAP_BOUNDS, 12);
	/* stores to out: at the limit it traps output_full, below it grows with zeros */
	const char *outsrc = ".func main o\n lget o\n push 0x41\n st8 out\n rlen out\n ret\n.end\n";
	int64_t o63[1] = { 63 }, o64[1] = { 64 };
	expect_value("store at the last byte of out", outsrc, o63, 1, 64);
	expect_trap("store just past out", outsrc, o64, 1, 0, ISA_TRAP_OUTPUT_FULL, 4);
}

static void test_fuel(void)
{
	const char *loop = ".func main n\n.local i\nl:\n linc i, 1\n lget i\n lget n\n jltu l\n"
	                   " lget i\n ret\n.end\n";
	int64_t n[1] = { 10 };
	struct outcome o;
	/* 9 taken backward branches: fuel 9 is exactly enough, 8 is not */
	both("loop with exactly enough fuel", loop, n, 1, 9, &o);
	check(o.rc == 0 && o.res.value == 10 && o.res.fuel_used == 9, "fuel 9: returns, uses 9");
	both("loop one unit short", loop, n, 1, 8, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_FUEL && o.res.fuel_used == 8,
	      "fuel 8: traps fuel, all of it used");
	const char *self = ".func main\nl:\n jmp l\n.end\n";
	expect_trap("a jump to itself", self, NULL, 0, 1000, ISA_TRAP_FUEL, 0);
	/* calls cost fuel too */
	const char *calls = ".func main\n call f\n call f\n add\n ret\n.end\n"
	                    ".func f\n push 1\n ret\n.end\n";
	both("two calls, fuel 1", calls, NULL, 0, 1, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_FUEL && o.res.trap.pc == 3,
	      "the second call traps fuel at its pc");
}

static void test_calls(void)
{
	/* recursion to depth n: 256 nested calls are allowed, the 257th traps 'stack' */
	const char *rec = ".func main n\n lget n\n call f\n ret\n.end\n"
	                  ".func f n\n lget n\n jz z\n lget n\n push 1\n sub\n call f\n"
	                  " push 1\n add\n ret\nz:\n push 0\n ret\n.end\n";
	int64_t d255[1] = { 255 }, d256[1] = { 256 };
	expect_value("recursion 256 deep", rec, d255, 1, 255);
	expect_trap("recursion 257 deep", rec, d256, 1, 0, ISA_TRAP_STACK, 12);
	/* the JIT reads the depth off rsp: with fuel for exactly the 257 calls, the last one
	 * traps 'stack'; one unit less and it traps 'fuel' first (the interpreter's order) */
	struct outcome o;
	both("257 deep, fuel for every call", rec, d256, 1, 257, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_STACK && o.res.trap.pc == 12,
	      "257 deep with fuel 257: traps stack at pc 12");
	both("257 deep, fuel one short", rec, d256, 1, 256, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_FUEL && o.res.trap.pc == 12,
	      "257 deep with fuel 256: traps fuel at pc 12");
	/* locals no instruction names are not zeroed by the JIT's prologue: the locals that are
	 * named still start at 0 where an earlier call (g) left garbage in the same frame slots */
	expect_value("named locals start at 0 over an earlier frame",
	             ".func main\n call g\n call h\n add\n ret\n.end\n"
	             ".func g\n.locals 8\n push 11\n lset 1\n push 12\n lset 2\n push 13\n lset 3\n"
	             " push 14\n lset 4\n push 15\n lset 5\n push 16\n lset 6\n push 17\n lset 7\n"
	             " lget 7\n ret\n.end\n"
	             ".func h\n.locals 8\n lget 5\n lget 2\n add\n push 100\n add\n ret\n.end\n",
	             NULL, 0, 17 + 100);
	/* ... and with more named locals than the JIT has cache registers, so some are zeroed
	 * in memory while the unnamed local 12 is not */
	expect_value("named locals in memory start at 0 over an earlier frame",
	             ".func main\n call g\n call h\n add\n ret\n.end\n"
	             ".func g\n.locals 14\n push 11\n lset 1\n push 12\n lset 2\n push 13\n lset 3\n"
	             " push 14\n lset 4\n push 15\n lset 5\n push 16\n lset 6\n push 17\n lset 7\n"
	             " push 18\n lset 8\n push 19\n lset 9\n push 20\n lset 10\n push 21\n lset 11\n"
	             " push 22\n lset 12\n push 23\n lset 13\n lget 13\n ret\n.end\n"
	             ".func h\n.locals 14\n lget 1\n lget 2\n lget 3\n lget 4\n lget 5\n lget 6\n"
	             " lget 7\n lget 8\n lget 9\n lget 10\n lget 11\n lget 13\n add\n add\n add\n"
	             " add\n add\n add\n add\n add\n add\n add\n add\n ret\n.end\n",
	             NULL, 0, 23);
	/* frames that do not fit VM_STACK_SLOTS trap 'stack' at the call, whatever the depth */
	char big[4096];
	snprintf(big, sizeof big, ".func main n\n lget n\n call f\n ret\n.end\n"
	         ".func f n\n.locals 200\n lget n\n jz z\n lget n\n push 1\n sub\n call f\n"
	         " ret\nz:\n push 7\n ret\n.end\n");
	int64_t d50[1] = { 50 };
	expect_trap("frames beyond VM_STACK_SLOTS", big, d50, 1, 0, ISA_TRAP_STACK, 12);
	/* arguments and locals survive calls in cached registers */
	expect_value("locals across calls", ".func main a b\n.local c\n lget a\n lset c\n"
	             " lget a\n lget b\n call g\n lget c\n add\n lget b\n add\n ret\n.end\n"
	             ".func g x y\n.local z\n lget x\n lget y\n mul\n lset z\n lget z\n ret\n"
	             ".end\n", (int64_t[]){ 6, 7 }, 2, 6 * 7 + 6 + 7);
}

/* ---- hooks: through libffi, as the interpreter calls them ---- */
static int64_t h_sub(struct vm_hook_ctx *c, int64_t a, int64_t b) { (void)c; return a - b; }
static int32_t h_neg32(struct vm_hook_ctx *c, int32_t a) { (void)c; return -a; }
static int64_t h_fail(struct vm_hook_ctx *c, int64_t a)
{
	if (a)
		vm_hook_fail(c, "asked to fail with %lld", (long long)a);
	return 9;
}

static void test_hooks(void)
{
	const char *src = ".hook sub ll:l\n.hook neg32 i:i\n.hook fail l:l\n"
	                  ".func main a\n.local k\n push 100\n lset k\n lget a\n push 3\n"
	                  " hcall sub\n hcall neg32\n lget a\n hcall fail\n add\n lget k\n add\n"
	                  " ret\n.end\n";
	for (int engine = VM_ENGINE_INTERP; engine <= VM_ENGINE_JIT; engine++) {
		char err[256];
		int rc;
		struct vm *vm = vm_new();
		vm_bind_hook(vm, "sub", (void *)h_sub, "ll:l", NULL);
		vm_bind_hook(vm, "neg32", (void *)h_neg32, "i:i", NULL);
		vm_bind_hook(vm, "fail", (void *)h_fail, "l:l", NULL);
		struct vm_prog *prog = load(vm, src, err, sizeof err, &rc);
		check(rc == 0, "hooks: loads");
		if (rc)
			goto next;
		struct outcome o;
		run_on(prog, engine, (int64_t[]){ 0 }, 1, 0, &o);
		check(o.rc == 0 && o.res.value == 3 + 9 + 100, engine == VM_ENGINE_JIT ?
		      "hooks: jit result" : "hooks: interp result");
		run_on(prog, engine, (int64_t[]){ 5 }, 1, 0, &o);
		check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_HOOK && o.res.trap.pc == 16 &&
		      !strcmp(o.res.trap.msg, "fail: asked to fail with 5"),
		      engine == VM_ENGINE_JIT ? "hooks: jit failure" : "hooks: interp failure");
		vm_prog_free(prog);
next:
		vm_free(vm);
	}
}

/* ---- run limits: fuel in chunks, deadline, cancel flag, hook time charged as fuel ---- */
static int64_t h_nap_us(struct vm_hook_ctx *c, int64_t us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep(&ts, NULL);
	return us;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct slow_count {
	unsigned calls;
};

static void count_slow(void *arg)
{
	struct slow_count *sc = arg;
	sc->calls++;
}

static void test_limits(void)
{
	/* a loop over several chunks of fuel, with locals the JIT keeps in registers and a call
	 * per round: the refill stubs must keep every register and the fuel count exact */
	const char *loop = ".func main n\n.local i s t\nl:\n lget s\n lget i\n add\n lset s\n"
	                   " lget t\n lget i\n call f\n add\n lset t\n linc i, 1\n lget i\n lget n\n"
	                   " jltu l\n lget s\n lget t\n xor\n ret\n.end\n"
	                   ".func f x\n lget x\n push 3\n mul\n ret\n.end\n";
	int64_t n[1] = { 3 * VM_FUEL_CHUNK + 1234 };
	uint64_t s = 0, t = 0;
	for (uint64_t i = 0; i < (uint64_t)n[0]; i++)
		s += i, t += 3 * i;
	/* n calls and n - 1 taken back edges */
	uint64_t need = 2 * (uint64_t)n[0] - 1;
	struct outcome o;
	both("loop over chunks, exact fuel", loop, n, 1, need, &o);
	check(o.rc == 0 && o.res.value == (int64_t)(s ^ t) && o.res.fuel_used == need,
	      "loop over chunks: value and fuel as with one counter");
	both("loop over chunks, one unit short", loop, n, 1, need - 1, &o);
	check(o.rc == -VM_ETRAP && o.res.trap.kind == ISA_TRAP_FUEL && o.res.fuel_used == need - 1,
	      "loop over chunks: one unit short traps fuel, all used");

	const char *self = ".func main\nl:\n jmp l\n.end\n";
	const char *naps = ".hook nap l:l\n.func main us\nl:\n lget us\n hcall nap\n drop\n jmp l\n.end\n";
	for (int engine = VM_ENGINE_INTERP; engine <= VM_ENGINE_JIT; engine++) {
		const char *en = engine == VM_ENGINE_JIT ? "jit" : "interp";
		char err[256], what[256];
		int rc, rc2;
		struct vm *vm = vm_new();
		vm_bind_hook(vm, "nap", (void *)h_nap_us, "l:l", NULL);
		struct vm_prog *endless = load(vm, self, err, sizeof err, &rc);
		struct vm_prog *napper = load(vm, naps, err, sizeof err, &rc2);
		check(rc == 0 && rc2 == 0, "limits: load");
		if (rc || rc2)
			goto next;
		struct vm_result res;
		/* cancel_at already past: the first look, after one chunk, stops it */
		_Atomic uint64_t cancel_at = 1;
		struct vm_run_opts o1 = { .fuel = UINT64_MAX, .engine = engine,
		                          .cancel_at = &cancel_at };
		rc = vm_run(endless, 0, NULL, 0, &o1, &res);
		snprintf(what, sizeof what, "limits %s: cancelled after one chunk (rc %d kind %d, "
		         "fuel %" PRIu64 ")", en, rc, res.trap.kind, res.fuel_used);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_CANCELLED &&
		      res.fuel_used == VM_FUEL_CHUNK, what);
		/* cancel_at set by the host while the run goes on: 50 ms later */
		uint64_t t0 = mono_ns();
		atomic_store(&cancel_at, t0 + 50000000);
		rc = vm_run(endless, 0, NULL, 0, &o1, &res);
		uint64_t dt = mono_ns() - t0;
		snprintf(what, sizeof what, "limits %s: cancelled at 50 ms (rc %d kind %d after %.1f ms)",
		         en, rc, res.trap.kind, dt / 1e6);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_CANCELLED && dt >= 50000000 &&
		      dt < 2000000000, what);
		/* a deadline 50 ms away stops an endless loop with 2^64 fuel */
		t0 = mono_ns();
		struct vm_run_opts o2 = { .fuel = UINT64_MAX, .engine = engine,
		                          .deadline_ns = t0 + 50000000 };
		rc = vm_run(endless, 0, NULL, 0, &o2, &res);
		dt = mono_ns() - t0;
		snprintf(what, sizeof what, "limits %s: deadline of 50 ms (rc %d kind %d after %.1f ms)",
		         en, rc, res.trap.kind, dt / 1e6);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_TIME && dt >= 50000000 &&
		      dt < 2000000000, what);
		vm_trap_str(endless, &res.trap, err, sizeof err);
		check(!strcmp(err, "trap time (wall-clock limit reached) in main at pc 0, line 3"), err);
		/* the deadline is looked at after each hook: naps of 1 ms, stopped at about 30 ms */
		int64_t us[1] = { 1000 };
		t0 = mono_ns();
		struct vm_run_opts o3 = { .fuel = UINT64_MAX, .engine = engine,
		                          .deadline_ns = t0 + 30000000 };
		rc = vm_run(napper, 0, us, 1, &o3, &res);
		dt = mono_ns() - t0;
		snprintf(what, sizeof what, "limits %s: naps stopped by the deadline (rc %d kind %d "
		         "pc %u after %.1f ms)", en, rc, res.trap.kind, res.trap.pc, dt / 1e6);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_TIME && res.trap.pc == 2 &&
		      dt < 2000000000, what);
		/* hook time as fuel: 1 unit per us, 2 ms naps cost about 2000 each */
		us[0] = 2000;
		struct vm_run_opts o4 = { .fuel = 5000, .engine = engine, .hook_ns_per_fuel = 1000 };
		rc = vm_run(napper, 0, us, 1, &o4, &res);
		snprintf(what, sizeof what, "limits %s: naps paid with fuel (rc %d kind %d fuel %"
		         PRIu64 ")", en, rc, res.trap.kind, res.fuel_used);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_FUEL && res.trap.pc == 2 &&
		      res.fuel_used == 5000, what);
		/* without a price the same run goes on until its fuel of back edges is spent */
		struct vm_run_opts o5 = { .fuel = 3, .engine = engine };
		us[0] = 10;
		rc = vm_run(napper, 0, us, 1, &o5, &res);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_FUEL && res.trap.pc == 6 &&
		      res.fuel_used == 3, "limits: hooks cost nothing when hook_ns_per_fuel is 0");
		/* on_slow: called once, on the first look past slow_at_ns, and the run goes on */
		struct slow_count sc = { 0 };
		t0 = mono_ns();
		struct vm_run_opts o6 = { .fuel = 1000000, .engine = engine, .on_slow = count_slow,
		                          .slow_arg = &sc, .slow_at_ns = t0 };
		rc = vm_run(endless, 0, NULL, 0, &o6, &res);
		snprintf(what, sizeof what, "limits %s: on_slow once, at the first look (%u calls; "
		         "rc %d kind %d)", en, sc.calls, rc, res.trap.kind);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_FUEL && sc.calls == 1 &&
		      res.fuel_used == 1000000, what);
		/* not yet slow: never called */
		sc.calls = 0;
		o6.slow_at_ns = t0 + 3600ull * 1000000000u;
		rc = vm_run(endless, 0, NULL, 0, &o6, &res);
		check(rc == -VM_ETRAP && res.trap.kind == ISA_TRAP_FUEL && sc.calls == 0,
		      "limits: on_slow not called before slow_at_ns");
		/* after a hook: a 2 ms nap past slow_at_ns calls it at once (within one nap) */
		sc.calls = 0;
		us[0] = 2000;
		struct vm_run_opts o7 = { .fuel = 3, .engine = engine, .on_slow = count_slow,
		                          .slow_arg = &sc, .slow_at_ns = mono_ns() + 1000000 };
		rc = vm_run(napper, 0, us, 1, &o7, &res);
		check(sc.calls == 1, "limits: on_slow looked at after each hook");
		/* a hook that may block: on_slow before its first call, however early */
		check(vm_hook_blocks(vm, "nap") == 0 && vm_hook_blocks(vm, "nope") == -VM_EINVAL,
		      "vm_hook_blocks");
		sc.calls = 0;
		o7.slow_at_ns = mono_ns() + 3600ull * 1000000000u;
		rc = vm_run(napper, 0, us, 1, &o7, &res);
		check(sc.calls == 1, "limits: on_slow before a blocking hook");
next:
		vm_prog_free(endless);
		vm_prog_free(napper);
		vm_free(vm);
	}
}

/* ---- W^X: the code mapping is read+execute, never writable ---- */
static void test_wx(void)
{
	char err[256], line[512];
	int rc;
	struct vm *vm = vm_new();
	struct vm_prog *prog = load(vm, ".func main\n push 1\n ret\n.end\n", err, sizeof err, &rc);
	struct vm_jit_listing l;
	if (rc || vm_prog_jit_listing(prog, 0, &l) != 0) {
		check(0, "W^X: compiled and listed");
		goto out;
	}
	uintptr_t code = (uintptr_t)l.code;
	free(l.marks);
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0, wx = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (code >= lo && code < hi)
			found = !strcmp(perms, "r-xp") ? 1 : -1;
		if (perms[1] == 'w' && perms[2] == 'x')
			wx = 1;
	}
	if (f)
		fclose(f);
	check(found == 1, "W^X: the code mapping is r-xp");
	check(!wx, "W^X: no mapping of the process is writable and executable");
out:
	vm_prog_free(prog);
	vm_free(vm);
}

/* ---- engine selection and the fallback ---- */
static void test_engines(void)
{
	char err[256];
	int rc;
	const char *src = ".func main\n push 2\n push 3\n add\n ret\n.end\n";
	struct vm *vm = vm_new();
	check(vm_set_engine(vm, 7) == -VM_EINVAL, "vm_set_engine refuses an unknown engine");
	check(!strcmp(vm_engine_name(VM_ENGINE_JIT), "jit"), "vm_engine_name");

	vm_set_engine(vm, VM_ENGINE_INTERP);
	struct vm_prog *prog = load(vm, src, err, sizeof err, &rc);
	check(rc == 0 && vm_prog_jit_error(prog) &&
	      !strcmp(vm_prog_jit_error(prog), "not compiled: the vm's engine is interp"),
	      "engine interp: not compiled, and says why");
	struct outcome o;
	run_on(prog, VM_ENGINE_JIT, NULL, 0, 0, &o);
	check(o.rc == -VM_ENOJIT, "asking a program the JIT did not compile for the JIT: ENOJIT");
	run_on(prog, VM_ENGINE_AUTO, NULL, 0, 0, &o);
	check(o.rc == 0 && o.res.value == 5, "engine interp: runs on the interpreter");
	vm_prog_free(prog);

	vm_set_engine(vm, VM_ENGINE_AUTO);
	prog = load(vm, src, err, sizeof err, &rc);
	check(rc == 0 && vm_prog_jit_error(prog) == NULL, "engine auto: compiled");
	run_on(prog, VM_ENGINE_AUTO, NULL, 0, 0, &o);
	check(o.rc == 0 && o.res.value == 5, "engine auto: runs");
	vm_prog_free(prog);
	vm_free(vm);
}

int main(void)
{
	test_arith();
	test_bounds();
	test_fuel();
	test_calls();
	test_hooks();
	test_limits();
	test_wx();
	test_engines();
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}
