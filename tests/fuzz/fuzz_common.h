/* fuzz_common.h: the host both fuzz targets run segments against.
 *
 * One vm for the whole fuzzing process, with the regions the examples and benchmarks import
 * (so seeds taken from them load and run) and a few hooks of different signatures, one of
 * which fails.  The rw regions are reset before each input so that a run depends only on its
 * input, which libFuzzer needs to reproduce a crash.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

#define FUZZ_REGION_LEN 4096
#define FUZZ_FUEL       10000   /* bounds every run: loops and recursion stop here */
#define FUZZ_OUT_CAP    256

/* Aligned because the VM checks atomics' alignment on the host address, base + offset. */
struct fuzz_region { const char *name; unsigned access; _Alignas(64) uint8_t buf[FUZZ_REGION_LEN]; };

static struct fuzz_region fuzz_regions[] = {
	{ "mem",   ISA_ACC_RW, { 0 } },
	{ "table", ISA_ACC_RO, { 0 } },
	{ "text",  ISA_ACC_RO, { 0 } },
	{ "data",  ISA_ACC_RO, { 0 } },
	{ "nodes", ISA_ACC_RO, { 0 } },
	{ "rw",    ISA_ACC_RW, { 0 } },
};
#define FUZZ_N_REGIONS (sizeof fuzz_regions / sizeof fuzz_regions[0])

static int64_t hook_add(struct vm_hook_ctx *ctx, int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int32_t hook_neg32(struct vm_hook_ctx *ctx, int32_t a)
{
	return (int32_t)(0u - (uint32_t)a);
}

/* Fails for odd arguments: exercises the hook trap path. */
static uint64_t hook_check(struct vm_hook_ctx *ctx, uint64_t a)
{
	if (a & 1)
		vm_hook_fail(ctx, "odd argument %llu", (unsigned long long)a);
	return a / 2;
}

/* Reads a u64 of region 3 (the first import) through the bounds-checked view. */
static int64_t hook_peek(struct vm_hook_ctx *ctx, int64_t off)
{
	const uint8_t *p = vm_hook_mem(ctx, ISA_R_FIRST_IMPORT, (uint64_t)off, 8, 0);

	if (!p) {
		vm_hook_fail(ctx, "peek out of bounds");
		return 0;
	}
	return (int64_t)isa_get64(p);
}

static void hook_nothing(struct vm_hook_ctx *ctx) { }

static struct vm *fuzz_vm(void)
{
	static struct vm *vm;

	if (vm)
		return vm;
	vm = vm_new();
	if (!vm)
		abort();
	for (size_t i = 0; i < FUZZ_N_REGIONS; i++)
		if (vm_bind_region(vm, fuzz_regions[i].name, fuzz_regions[i].buf, FUZZ_REGION_LEN,
		                   fuzz_regions[i].access))
			abort();
	if (vm_bind_hook(vm, "add", (void *)hook_add, "ll:l", NULL) ||
	    vm_bind_hook(vm, "neg32", (void *)hook_neg32, "i:i", NULL) ||
	    vm_bind_hook(vm, "check", (void *)hook_check, "L:L", NULL) ||
	    vm_bind_hook(vm, "peek", (void *)hook_peek, "l:l", NULL) ||
	    vm_bind_hook(vm, "nothing", (void *)hook_nothing, ":v", NULL))
		abort();
	return vm;
}

/* Deterministic contents: bytes with some newlines, so text scans find something. */
static void fuzz_reset_regions(void)
{
	for (size_t i = 0; i < FUZZ_N_REGIONS; i++)
		for (size_t j = 0; j < FUZZ_REGION_LEN; j++)
			fuzz_regions[i].buf[j] = j % 37 == 36 ? '\n' : (uint8_t)(j * 7 + i);
}

/* Run every export of prog with zero arguments, small fuel and a small output buffer.  What
 * a run returns does not matter; it must not crash, and what it reports must be sane. */
static void fuzz_run_exports(const struct vm_prog *prog)
{
	static const int64_t zeros[ISA_MAX_LOCALS];
	const struct isa_seg *seg = vm_prog_seg(prog);
	uint8_t out[FUZZ_OUT_CAP];

	for (uint32_t e = 0; e < seg->n_exports; e++) {
		unsigned fi = seg->exports[e].func;
		unsigned n_args = seg->funcs[fi].n_args;
		struct vm_run_opts opts = {
			.args = "fuzz", .args_len = 4, .out = out, .out_cap = sizeof out,
			.fuel = FUZZ_FUEL,
		};
		struct vm_result res;
		int rc = vm_run(prog, fi, zeros, n_args, &opts, &res);
		if (rc != 0 && rc != -VM_ETRAP) {
			fprintf(stderr, "vm_run of export %u: unexpected %s\n", e, vm_strerror(rc));
			abort();
		}
		if (res.out_len > sizeof out) {
			fprintf(stderr, "vm_run: out_len %llu beyond out_cap %zu\n",
			        (unsigned long long)res.out_len, sizeof out);
			abort();
		}
		if (rc == -VM_ETRAP && (res.trap.kind <= ISA_TRAP_NONE ||
		                        res.trap.kind >= ISA_TRAP_COUNT)) {
			fprintf(stderr, "vm_run: trap with kind %d\n", res.trap.kind);
			abort();
		}
		if (rc == 0 && res.trap.kind != ISA_TRAP_NONE) {
			fprintf(stderr, "vm_run: returned but trap kind %d\n", res.trap.kind);
			abort();
		}
	}
}

#endif
