/* fuzz_jit.c: libFuzzer target comparing the JIT with the interpreter on fuzzed segments.
 *
 * Input: segment bytes.  Segments vm_load accepts (decoded, linked, verified, translated and
 * compiled) have every export run twice with zero arguments, small fuel and a small output
 * buffer: once on the interpreter and once on the JIT, each from freshly reset regions.  The
 * return code, value or trap (kind, function, pc, code, hook message), fuel used, output
 * bytes and final region contents must be identical; any difference aborts.  A verified
 * segment the JIT does not compile aborts too: the JIT covers every xop.
 * Build and run with `make fuzz`; seeds are in tests/fuzz/seeds/fuzz_jit.
 */
#include "fuzz_common.h"

struct outcome {
	int rc;
	struct vm_result res;
	uint8_t out[FUZZ_OUT_CAP];
	uint8_t regions[FUZZ_N_REGIONS][FUZZ_REGION_LEN];
};

static void run_on(const struct vm_prog *prog, unsigned fi, int engine, struct outcome *o)
{
	static const int64_t zeros[ISA_MAX_LOCALS];
	const struct isa_seg *seg = vm_prog_seg(prog);
	struct vm_run_opts opts = {
		.args = "fuzz", .args_len = 4, .out = o->out, .out_cap = sizeof o->out,
		.fuel = FUZZ_FUEL, .engine = engine,
	};
	fuzz_reset_regions();
	memset(o->out, 0, sizeof o->out);
	memset(&o->res, 0, sizeof o->res);
	o->rc = vm_run(prog, fi, zeros, seg->funcs[fi].n_args, &opts, &o->res);
	for (size_t i = 0; i < FUZZ_N_REGIONS; i++)
		memcpy(o->regions[i], fuzz_regions[i].buf, FUZZ_REGION_LEN);
}

static const char *differs(const struct outcome *a, const struct outcome *b)
{
	if (a->rc != b->rc)
		return "return code";
	if (a->rc == 0 && a->res.value != b->res.value)
		return "value";
	if (a->rc == -VM_ETRAP && (a->res.trap.kind != b->res.trap.kind ||
	                           a->res.trap.func != b->res.trap.func ||
	                           a->res.trap.pc != b->res.trap.pc ||
	                           a->res.trap.code != b->res.trap.code ||
	                           strcmp(a->res.trap.msg, b->res.trap.msg) != 0))
		return "trap";
	if (a->res.fuel_used != b->res.fuel_used)
		return "fuel used";
	if (a->res.out_len != b->res.out_len || memcmp(a->out, b->out, a->res.out_len) != 0)
		return "output";
	if (memcmp(a->regions, b->regions, sizeof a->regions) != 0)
		return "region contents";
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome in, jit;
	struct vm *vm = fuzz_vm();
	struct vm_prog *prog = NULL;
	char err[256];

	fuzz_reset_regions();
	if (vm_load(vm, data, size, &prog, err, sizeof err) != 0)
		return 0;              /* fuzz_segment checks the loader's errors */
	const char *why = vm_prog_jit_error(prog);
	if (why) {
		fprintf(stderr, "verified segment not compiled by the JIT: %s\n", why);
		abort();
	}
	const struct isa_seg *seg = vm_prog_seg(prog);
	for (uint32_t e = 0; e < seg->n_exports; e++) {
		unsigned fi = seg->exports[e].func;
		run_on(prog, fi, VM_ENGINE_INTERP, &in);
		run_on(prog, fi, VM_ENGINE_JIT, &jit);
		const char *what = differs(&in, &jit);
		if (what) {
			char a[300], b[300];
			fprintf(stderr, "export %s: %s differs\n"
			        "  interp: rc %d value %lld fuel %llu out %llu %s\n"
			        "  jit:    rc %d value %lld fuel %llu out %llu %s\n",
			        seg->exports[e].name, what, in.rc, (long long)in.res.value,
			        (unsigned long long)in.res.fuel_used, (unsigned long long)in.res.out_len,
			        in.rc ? vm_trap_str(prog, &in.res.trap, a, sizeof a) : "",
			        jit.rc, (long long)jit.res.value, (unsigned long long)jit.res.fuel_used,
			        (unsigned long long)jit.res.out_len,
			        jit.rc ? vm_trap_str(prog, &jit.res.trap, b, sizeof b) : "");
			abort();
		}
	}
	vm_prog_free(prog);
	return 0;
}
