/* hooks.c: host hooks, C functions a host exports to bytecode, called through libffi.
 *
 * A hook's C signature is fixed by its ISA signature string: first a struct vm_hook_ctx *, then
 * one C argument per letter (i int32_t, I uint32_t, l int64_t, L uint64_t), returning the
 * result letter's type or void.  The cif is prepared once at bind time; a call converts the
 * 64-bit stack values to the declared widths and the result back (sign- or zero-extended).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vm_int.h"

static ffi_type *ffi_of(char c)
{
	switch (c) {
	case 'i': return &ffi_type_sint32;
	case 'I': return &ffi_type_uint32;
	case 'l': return &ffi_type_sint64;
	case 'L': return &ffi_type_uint64;
	default:  return &ffi_type_void;
	}
}

int vm_hook_prepare(struct hook_bind *h, char *err, size_t errlen)
{
	int n = isa_sig_check(h->sig);
	if (n < 0) {
		snprintf(err, errlen, "hook '%s': bad signature '%s'", h->name, h->sig);
		return -VM_EHOOKSIG;
	}
	h->n_args = (unsigned)n;
	h->arg_types[0] = &ffi_type_pointer;
	for (int i = 0; i < n; i++)
		h->arg_types[i + 1] = ffi_of(h->sig[i]);
	ffi_type *ret = ffi_of(h->sig[n + 1]);
	ffi_status st = ffi_prep_cif(&h->cif, FFI_DEFAULT_ABI, (unsigned)n + 1, ret, h->arg_types);
	if (st != FFI_OK) {
		snprintf(err, errlen, "hook '%s': ffi_prep_cif failed (%d)", h->name, (int)st);
		return -VM_EHOOKSIG;
	}
	return 0;
}

/* Arguments are in args[0..n); the result replaces args[0]. */
int vm_hook_call(struct run *run, const struct hook_bind *h, int64_t *args)
{
	struct vm_hook_ctx ctx = { .run = run, .hook = h };
	struct vm_hook_ctx *pctx = &ctx;
	union { int32_t i; uint32_t u; int64_t l; uint64_t L; } conv[ISA_MAX_HOOK_ARGS];
	void *values[ISA_MAX_HOOK_ARGS + 1];
	values[0] = &pctx;
	for (unsigned i = 0; i < h->n_args; i++) {
		switch (h->sig[i]) {
		case 'i': conv[i].i = (int32_t)args[i]; break;
		case 'I': conv[i].u = (uint32_t)args[i]; break;
		default:  conv[i].l = args[i]; break;
		}
		values[i + 1] = &conv[i];
	}
	/* libffi widens integral results narrower than a register to ffi_arg. */
	union { ffi_arg a; uint64_t L; } ret = { 0 };
	run->hook_failed = 0;
	/* the clock is read only for a run that pays for hook time or has a deadline */
	if (h->blocks && run->on_slow) {   /* the host would rather not wait for the look after */
		void (*fn)(void *) = run->on_slow;
		run->on_slow = NULL;
		fn(run->slow_arg);
	}
	bool timed = run->hook_ns_per_fuel || run->deadline_ns || run->cancel_at || run->on_slow;
	uint64_t t0 = timed ? vm_now_ns() : 0;
	ffi_call((ffi_cif *)&h->cif, FFI_FN(h->fn), &ret, values);
	if (run->hook_failed)
		return ISA_TRAP_HOOK;
	uint64_t t1 = timed ? vm_now_ns() : 0;
	if (run->hook_ns_per_fuel) {
		uint64_t cost = (t1 - t0) / run->hook_ns_per_fuel;
		if (cost <= run->fuel) {
			run->fuel -= cost;
		} else if (cost - run->fuel <= run->fuel_reserve) {
			run->fuel_reserve -= cost - run->fuel;
			run->fuel = 0;     /* the engine refills at its next spend */
		} else {
			run->fuel = run->fuel_reserve = 0;
			return ISA_TRAP_FUEL;
		}
	}
	vm_run_slow(run, t1);
	int kind = vm_run_limits(run, t1);
	if (kind)
		return kind;
	switch (h->sig[h->n_args + 1]) {
	case 'i': args[0] = (int32_t)ret.a; break;
	case 'I': args[0] = (uint32_t)ret.a; break;
	case 'v': args[0] = 0; break;
	default:  args[0] = (int64_t)ret.L; break;
	}
	return 0;
}

void *vm_hook_user(struct vm_hook_ctx *ctx) { return ctx->hook->user; }
void *vm_hook_run_user(struct vm_hook_ctx *ctx) { return ctx->run->user; }

void *vm_hook_mem(struct vm_hook_ctx *ctx, unsigned region, uint64_t off, uint64_t len, int write)
{
	const struct vm_prog *prog = ctx->run->prog;
	if (region >= prog->n_mrefs)
		return NULL;
	const struct mref *m = &ctx->run->R[region];
	if (off > m->len || len > m->len - off)
		return NULL;
	if (write) {
		if (region == ISA_R_ARGS || region == ISA_R_CONST)
			return NULL;
		if (region >= ISA_R_FIRST_IMPORT &&
		    !(prog->seg->regions[region - ISA_R_FIRST_IMPORT].access & ISA_ACC_WRITE))
			return NULL;
	}
	return m->base + off;
}

void vm_hook_fail(struct vm_hook_ctx *ctx, const char *fmt, ...)
{
	struct run *run = ctx->run;
	if (run->hook_failed)
		return;
	run->hook_failed = 1;
	int n = snprintf(run->trap->msg, sizeof run->trap->msg, "%s: ", ctx->hook->name);
	if (n < 0 || (size_t)n >= sizeof run->trap->msg)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(run->trap->msg + n, sizeof run->trap->msg - (size_t)n, fmt, ap);
	va_end(ap);
}
