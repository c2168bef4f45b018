/* test_jit.c: checks specific to the x86-64 JIT (vm/jit_x86_64.c) and the engine selection.
 *
 * Each check assembles a small program, runs it under the interpreter and the JIT and compares
 * everything a run reports; some also pin the expected value or trap.  JIT-only properties
 * (W^X of the code mapping, the fallback reason, deep recursion on the native stack) are
 * checked directly.  Prints "N passed, N failed".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	test_engines();
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}
