/* vm.c: the VM's public API: bindings, loading (decode, link, verify, translate, JIT) and
 * runs on the engine the vm or the run asks for.
 *
 * Loading order matters for the messages a client sees: framing errors first (isa/segment.c),
 * then linking (a missing region or a hook with another signature names the import), then
 * verification and translation of each function.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm_int.h"

static const char *const err_msgs[] = {
#define ERR(name, value, msg) [value] = msg,
#include "err.def"
#undef ERR
};

const char *vm_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= VM_ECOUNT || !err_msgs[err])
		return "unknown error";
	return err_msgs[err];
}

struct vm *vm_new(void)
{
	return calloc(1, sizeof(struct vm));
}

static const char *const engine_names[VM_ENGINE_COUNT] = {
	[VM_ENGINE_AUTO] = "auto", [VM_ENGINE_INTERP] = "interp", [VM_ENGINE_JIT] = "jit",
};

const char *vm_engine_name(int engine)
{
	return engine >= 0 && engine < VM_ENGINE_COUNT ? engine_names[engine] : "?";
}

int vm_set_engine(struct vm *vm, int engine)
{
	if (engine < 0 || engine >= VM_ENGINE_COUNT)
		return -VM_EINVAL;
	vm->engine = engine;
	return 0;
}

void vm_free(struct vm *vm)
{
	if (!vm)
		return;
	for (uint32_t i = 0; i < vm->n_regions; i++)
		free(vm->regions[i].name);
	for (uint32_t i = 0; i < vm->n_hooks; i++) {
		free(vm->hooks[i]->name);
		free(vm->hooks[i]);
	}
	free(vm->regions);
	free(vm->hooks);
	free(vm);
}

static int reserved_region(const char *name)
{
	return !strcmp(name, "args") || !strcmp(name, "out") || !strcmp(name, "const") ||
	       !strcmp(name, VM_FRAME_REGION);
}

int vm_bind_region(struct vm *vm, const char *name, void *base, uint64_t len, unsigned access)
{
	if (!name || isa_name_check(name, strlen(name)) != 0 || reserved_region(name) ||
	    (access != ISA_ACC_RO && access != ISA_ACC_RW) || (!base && len))
		return -VM_EINVAL;
	/* Atomics need naturally aligned words: an rw region starts on an 8-byte boundary, so
	 * "offset % 8 == 0" is the whole rule and does not depend on where the host put it. */
	if (access == ISA_ACC_RW && ((uintptr_t)base & 7))
		return -VM_EINVAL;
	for (uint32_t i = 0; i < vm->n_regions; i++)
		if (!strcmp(vm->regions[i].name, name))
			return -VM_EEXISTS;
	struct region_bind *r = realloc(vm->regions, (vm->n_regions + 1) * sizeof *r);
	if (!r)
		return -VM_ENOMEM;
	vm->regions = r;
	char *copy = strdup(name);
	if (!copy)
		return -VM_ENOMEM;
	r[vm->n_regions++] = (struct region_bind){ .name = copy, .base = base, .len = len,
	                                           .access = access };
	return 0;
}

int vm_bind_remote_region(struct vm *vm, const char *name, uint64_t len, unsigned access,
                          const struct vm_remote_ops *ops, void *user)
{
	if (!ops || !ops->read || ((access & ISA_ACC_WRITE) && (!ops->write || !ops->atomic)))
		return -VM_EINVAL;
	/* bind with a placeholder base so the name and access checks are shared, then mark it */
	static _Alignas(8) uint8_t none[8];
	int rc = vm_bind_region(vm, name, none, 0, access);
	if (rc != 0)
		return rc;
	struct region_bind *b = &vm->regions[vm->n_regions - 1];
	b->base = NULL;
	b->len = len;
	b->remote = ops;
	b->remote_user = user;
	return 0;
}

int vm_bind_hook(struct vm *vm, const char *name, void *fn, const char *sig, void *user)
{
	char err[128];
	if (!name || isa_name_check(name, strlen(name)) != 0 || !fn)
		return -VM_EINVAL;
	if (!sig || isa_sig_check(sig) < 0)
		return -VM_EHOOKSIG;
	for (uint32_t i = 0; i < vm->n_hooks; i++)
		if (!strcmp(vm->hooks[i]->name, name))
			return -VM_EEXISTS;
	struct hook_bind **hs = realloc(vm->hooks, (vm->n_hooks + 1) * sizeof *hs);
	if (!hs)
		return -VM_ENOMEM;
	vm->hooks = hs;
	struct hook_bind *h = calloc(1, sizeof *h);
	if (!h || !(h->name = strdup(name))) {
		free(h);
		return -VM_ENOMEM;
	}
	snprintf(h->sig, sizeof h->sig, "%s", sig);
	h->fn = fn;
	h->user = user;
	int rc = vm_hook_prepare(h, err, sizeof err);
	if (rc != 0) {
		free(h->name);
		free(h);
		return rc;
	}
	hs[vm->n_hooks++] = h;
	return 0;
}

int vm_hook_blocks(struct vm *vm, const char *name)
{
	for (uint32_t i = 0; name && i < vm->n_hooks; i++)
		if (!strcmp(vm->hooks[i]->name, name)) {
			vm->hooks[i]->blocks = true;
			return 0;
		}
	return -VM_EINVAL;
}

static int link_imports(struct vm *vm, struct vm_prog *p, char *err, size_t errlen)
{
	const struct isa_seg *s = p->seg;
	p->n_mrefs = ISA_R_FIRST_IMPORT + s->n_regions;
	p->mrefs = calloc(p->n_mrefs, sizeof *p->mrefs);
	p->hooks = calloc(s->n_hooks ? s->n_hooks : 1, sizeof *p->hooks);
	if (!p->mrefs || !p->hooks) {
		snprintf(err, errlen, "out of memory");
		return -VM_ENOMEM;
	}
	for (uint32_t i = 0; i < s->n_regions; i++) {
		const struct isa_region_import *imp = &s->regions[i];
		if (!strcmp(imp->name, VM_FRAME_REGION)) {
			/* bound per run by vm_run (frame_buf); never a host's region */
			if (p->frame) {
				snprintf(err, errlen, "link: region '%s' is imported twice", imp->name);
				return -VM_ELINK;
			}
			p->frame = ISA_R_FIRST_IMPORT + i;
			continue;
		}
		const struct region_bind *b = NULL;
		for (uint32_t j = 0; j < vm->n_regions && !b; j++)
			if (!strcmp(vm->regions[j].name, imp->name))
				b = &vm->regions[j];
		if (!b) {
			snprintf(err, errlen, "link: region '%s' is not exported here", imp->name);
			return -VM_ELINK;
		}
		if ((imp->access & ISA_ACC_WRITE) && !(b->access & ISA_ACC_WRITE)) {
			snprintf(err, errlen, "link: region '%s' is exported read-only, the segment "
			         "imports it rw", imp->name);
			return -VM_ELINK;
		}
		if (b->remote) {
			/* length 0: every access misses the bounds check and takes remote.c's path */
			if (!p->remote && !(p->remote = calloc(p->n_mrefs, sizeof *p->remote))) {
				snprintf(err, errlen, "out of memory");
				return -VM_ENOMEM;
			}
			p->remote[ISA_R_FIRST_IMPORT + i] = (struct remote_ref){ b->name, b->len,
			                                                          b->remote, b->remote_user };
			p->mrefs[ISA_R_FIRST_IMPORT + i] = (struct mref){ NULL, 0 };
		} else {
			p->mrefs[ISA_R_FIRST_IMPORT + i] = (struct mref){ b->base, b->len };
		}
	}
	for (uint32_t i = 0; i < s->n_hooks; i++) {
		const struct isa_hook_import *imp = &s->hooks[i];
		const struct hook_bind *b = NULL;
		for (uint32_t j = 0; j < vm->n_hooks && !b; j++)
			if (!strcmp(vm->hooks[j]->name, imp->name))
				b = vm->hooks[j];
		if (!b) {
			snprintf(err, errlen, "link: hook '%s' is not provided here", imp->name);
			return -VM_ELINK;
		}
		if (strcmp(b->sig, imp->sig) != 0) {
			snprintf(err, errlen, "link: hook '%s' has signature '%s' here, the segment "
			         "expects '%s'", imp->name, b->sig, imp->sig);
			return -VM_ELINK;
		}
		p->hooks[i] = b;
	}
	return 0;
}

/* The frame region's length for p: a frame for each activation of the longest chain of
 * calls in the segment's call graph (any function may be an entry), or for the VM's call
 * depth limit when the graph has a cycle.  A run may write all of it, and vm_run zeroes it
 * after each run: a segment without recursion pays for the frames it can use, not for 257.
 * Iterative depth-first search (no recursion on the segment's structure); reads the
 * translated code (X_CALL), so after vm_translate and before threading. */
static int frame_len(struct vm_prog *p)
{
	uint32_t n = p->seg->n_funcs, n_edges = 0, top = 0;
	uint64_t frames = VM_MAX_CALL_DEPTH + 1;
	for (uint32_t f = 0; f < n; f++)
		for (uint32_t k = 0; k < p->funcs[f].n_code; k++)
			n_edges += p->funcs[f].code[k].op == X_CALL;
	uint32_t *first = calloc(n + 1, sizeof *first), *callee = malloc((n_edges + 1) * sizeof *callee);
	uint32_t *height = calloc(n, sizeof *height), *stack = malloc(n * sizeof *stack);
	uint32_t *next = calloc(n, sizeof *next);
	uint8_t *state = calloc(n, 1);      /* 0 unseen, 1 on the stack, 2 done */
	int rc = -1;
	if (!first || !callee || !height || !stack || !next || !state)
		goto out;
	for (uint32_t f = 0, e = 0; f < n; f++) {
		first[f] = e;
		for (uint32_t k = 0; k < p->funcs[f].n_code; k++)
			if (p->funcs[f].code[k].op == X_CALL)
				callee[e++] = (uint32_t)p->funcs[f].code[k].imm;
		first[f + 1] = e;
	}
	uint32_t deepest = 0;
	for (uint32_t root = 0; root < n; root++) {
		if (state[root])
			continue;
		stack[top++] = root;
		state[root] = 1;
		while (top) {
			uint32_t f = stack[top - 1];
			if (first[f] + next[f] < first[f + 1]) {
				uint32_t c = callee[first[f] + next[f]++];
				if (state[c] == 1)
					goto cycle;
				if (state[c] == 0) {
					state[c] = 1;
					stack[top++] = c;
				} else if (height[c] + 1 > height[f]) {
					height[f] = height[c] + 1;
				}
				continue;
			}
			state[f] = 2;
			top--;
			if (top && height[f] + 1 > height[stack[top - 1]])
				height[stack[top - 1]] = height[f] + 1;
			if (height[f] > deepest)
				deepest = height[f];
		}
	}
	if (deepest < VM_MAX_CALL_DEPTH)
		frames = (uint64_t)deepest + 1;
cycle:
	p->frame_len = VM_FRAME_FIRST + frames * VM_FRAME_SIZE;
	rc = 0;
out:
	free(first);
	free(callee);
	free(height);
	free(stack);
	free(next);
	free(state);
	return rc;
}

int vm_load(struct vm *vm, const void *seg, size_t len, struct vm_prog **out, char *err,
            size_t errlen)
{
	*out = NULL;
	struct vm_prog *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -VM_ENOMEM;
	}
	int rc;
	if (isa_seg_decode(seg, len, &p->seg, err, errlen) != 0) {
		rc = -VM_EMALFORMED;
		goto fail;
	}
	isa_seg_id(seg, len, p->id);
	rc = link_imports(vm, p, err, errlen);
	if (rc == 0)
		rc = vm_translate(p, err, errlen);
	if (rc == 0 && p->frame && frame_len(p) != 0) {
		snprintf(err, errlen, "out of memory");
		rc = -VM_ENOMEM;
	}
	if (rc != 0)
		goto fail;
	/* The JIT reads the translated code before threading turns its opcodes into addresses.
	 * AUTO falls back to the interpreter and keeps the reason; JIT makes it a load error. */
	p->engine = VM_ENGINE_INTERP;
	if (vm->engine == VM_ENGINE_INTERP) {
		snprintf(p->jit_err, sizeof p->jit_err, "not compiled: the vm's engine is interp");
	} else if (p->remote) {
		/* the JIT's traps end the run; a remote miss must resume it: interpreter only */
		snprintf(p->jit_err, sizeof p->jit_err,
		         "not compiled: it links remote regions, which run in the interpreter");
		if (vm->engine == VM_ENGINE_JIT) {
			snprintf(err, errlen, "%s", p->jit_err);
			rc = -VM_ENOJIT;
			goto fail;
		}
	} else {
		rc = vm_jit_compile(p, p->jit_err, sizeof p->jit_err);
		if (rc == 0) {
			p->engine = VM_ENGINE_JIT;
		} else if (vm->engine == VM_ENGINE_JIT) {
			snprintf(err, errlen, "%s", p->jit_err);
			goto fail;
		}
		rc = 0;
	}
	vm_thread_code(p);
	*out = p;
	return 0;
fail:
	vm_prog_free(p);
	return rc;
}

void vm_prog_free(struct vm_prog *p)
{
	if (!p)
		return;
	vm_jit_free(p->jit);
	if (p->funcs)
		for (uint32_t i = 0; i < p->seg->n_funcs; i++)
			vm_xfunc_free(&p->funcs[i]);
	free(p->funcs);
	free(p->remote);
	free(p->mrefs);
	free(p->hooks);
	isa_seg_free(p->seg);
	free(p);
}

const struct isa_seg *vm_prog_seg(const struct vm_prog *p) { return p->seg; }
const uint8_t *vm_prog_id(const struct vm_prog *p) { return p->id; }
const char *vm_prog_jit_error(const struct vm_prog *p) { return p->jit ? NULL : p->jit_err; }

int vm_prog_jit_listing(const struct vm_prog *p, unsigned fi, struct vm_jit_listing *out)
{
	memset(out, 0, sizeof *out);
	if (!p->jit)
		return -VM_ENOJIT;
	if (fi >= p->seg->n_funcs)
		return -VM_EINVAL;
	return vm_jit_listing(p, fi, out);
}

int vm_prog_xops(const struct vm_prog *p, unsigned fi, const char **names, uint32_t *pcs,
                 uint32_t cap)
{
	if (fi >= p->seg->n_funcs)
		return -VM_EINVAL;
	const struct xfunc *f = &p->funcs[fi];
	for (uint32_t i = 0; pcs && i < f->n_code && i < cap; i++)
		pcs[i] = f->pcs[i];
	return (int)vm_interp_names(f, names, names ? cap : 0);
}

int vm_prog_entry(const struct vm_prog *p, const char *name, unsigned *n_args)
{
	for (uint32_t i = 0; i < p->seg->n_exports; i++) {
		if (!strcmp(p->seg->exports[i].name, name)) {
			unsigned f = p->seg->exports[i].func;
			if (n_args)
				*n_args = p->seg->funcs[f].n_args;
			return (int)f;
		}
	}
	return -VM_ENOENTRY;
}

/* The frame region's memory (VM_FRAME_REGION): one buffer per thread, allocated by the
 * thread's first run that needs it, freed when the thread ends.  A run nested in another
 * on the same thread (a hook that runs a segment) gets a buffer of its own. */
static pthread_key_t frame_key;
static pthread_once_t frame_once = PTHREAD_ONCE_INIT;
static __thread uint8_t *frame_mine;   /* this thread's buffer (also held by frame_key) */
static __thread int frame_busy;        /* a run of this thread is using frame_mine */

static void frame_key_init(void)
{
	(void)pthread_key_create(&frame_key, free);
}

/* An all-zero buffer of VM_FRAME_BYTES, 8-byte aligned (atomics), or NULL. */
static uint8_t *frame_take(void)
{
	if (frame_busy)
		return calloc(1, VM_FRAME_BYTES);
	if (!frame_mine) {
		(void)pthread_once(&frame_once, frame_key_init);
		if (!(frame_mine = calloc(1, VM_FRAME_BYTES)))
			return NULL;
		(void)pthread_setspecific(frame_key, frame_mine);
	}
	frame_busy = 1;
	return frame_mine;
}

/* Zero what the run may have written (any byte of its len: a segment addresses all of it)
 * and give the buffer back. */
static void frame_give(uint8_t *buf, uint64_t len)
{
	if (buf != frame_mine) {
		free(buf);
		return;
	}
	memset(buf, 0, len);
	frame_busy = 0;
}

int vm_run(const struct vm_prog *prog, unsigned entry, const int64_t *argv, unsigned n_args,
           const struct vm_run_opts *opts, struct vm_result *res)
{
	static const struct vm_run_opts no_opts;
	if (!opts)
		opts = &no_opts;
	memset(res, 0, sizeof *res);
	if (entry >= prog->seg->n_funcs || (opts->out_cap && !opts->out) ||
	    (opts->args_len && !opts->args))
		return -VM_EINVAL;
	if (n_args != prog->funcs[entry].n_args || (n_args && !argv))
		return -VM_EARGS;

	/* The region table of this run: imports as linked, plus args, out and const. */
	struct mref R[ISA_R_FIRST_IMPORT + ISA_MAX_REGIONS];
	memcpy(R, prog->mrefs, prog->n_mrefs * sizeof *R);
	R[ISA_R_ARGS] = (struct mref){ (uint8_t *)(uintptr_t)opts->args, opts->args_len };
	R[ISA_R_OUT] = (struct mref){ opts->out, 0 };
	R[ISA_R_CONST] = (struct mref){ prog->seg->consts, prog->seg->const_len };

	int engine = opts->engine == VM_ENGINE_AUTO ? prog->engine : opts->engine;
	if (engine < 0 || engine >= VM_ENGINE_COUNT)
		return -VM_EINVAL;
	if (engine == VM_ENGINE_JIT && !prog->jit)
		return -VM_ENOJIT;

	uint8_t *frame_buf = NULL;
	if (prog->frame) {
		if (!(frame_buf = frame_take()))
			return -VM_ENOMEM;
		uint64_t first = VM_FRAME_FIRST;
		memcpy(frame_buf, &first, sizeof first);
		R[prog->frame] = (struct mref){ frame_buf, prog->frame_len };
	}

	uint64_t fuel = opts->fuel ? opts->fuel : VM_DEFAULT_FUEL;
	uint64_t max_chunk = opts->on_slow ? VM_SLOW_CHUNK : VM_FUEL_CHUNK;
	uint64_t chunk = fuel < max_chunk ? fuel : max_chunk;
	struct run run = { .prog = prog, .R = R, .out_cap = opts->out_cap, .fuel = chunk,
	                   .fuel_reserve = fuel - chunk, .deadline_ns = opts->deadline_ns,
	                   .cancel_at = opts->cancel_at, .hook_ns_per_fuel = opts->hook_ns_per_fuel,
	                   .on_slow = opts->on_slow, .slow_arg = opts->slow_arg,
	                   .slow_at_ns = opts->slow_at_ns,
	                   .user = opts->user, .trap = &res->trap, .remote = prog->remote };
	/* the entry's own frame must fit, whichever engine runs it (both rely on this) */
	int rc;
	if (prog->funcs[entry].n_slots > VM_STACK_SLOTS) {
		res->trap = (struct vm_trap){ .kind = ISA_TRAP_STACK, .func = entry, .pc = 0 };
		rc = -VM_ETRAP;
	} else {
		rc = engine == VM_ENGINE_JIT ? vm_jit_run(&run, entry, argv, &res->value)
		                             : vm_interp(&run, entry, argv, &res->value);
	}
	vm_remote_cache_free(&run);
	if (frame_buf)
		frame_give(frame_buf, prog->frame_len);
	res->out_len = R[ISA_R_OUT].len;
	res->fuel_used = fuel - run.fuel - run.fuel_reserve;
	if (rc == -VM_ETRAP)
		res->trap.line = isa_seg_line(prog->seg, res->trap.func, res->trap.pc);
	return rc;
}

uint64_t vm_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int vm_run_limits(const struct run *run, uint64_t now_ns)
{
	uint64_t cancel_at = run->cancel_at ? atomic_load_explicit(run->cancel_at,
	                                                           memory_order_relaxed) : 0;
	if (!cancel_at && !run->deadline_ns)
		return 0;
	if (!now_ns)
		now_ns = vm_now_ns();
	if (cancel_at && now_ns >= cancel_at)
		return ISA_TRAP_CANCELLED;
	if (run->deadline_ns && now_ns >= run->deadline_ns)
		return ISA_TRAP_TIME;
	return 0;
}

void vm_run_slow(struct run *run, uint64_t now_ns)
{
	if (run->on_slow && now_ns >= run->slow_at_ns) {
		void (*fn)(void *) = run->on_slow;
		run->on_slow = NULL;
		fn(run->slow_arg);
	}
}

int vm_fuel_refill(struct run *run)
{
	if (run->fuel_reserve == 0)
		return ISA_TRAP_FUEL;
	uint64_t now = 0;
	if (run->on_slow) {
		now = vm_now_ns();
		vm_run_slow(run, now);
	}
	int kind = vm_run_limits(run, now);
	if (kind)
		return kind;
	uint64_t max_chunk = run->on_slow ? VM_SLOW_CHUNK : VM_FUEL_CHUNK;
	uint64_t n = run->fuel_reserve < max_chunk ? run->fuel_reserve : max_chunk;
	run->fuel_reserve -= n;
	run->fuel = n;
	return 0;
}

char *vm_trap_str(const struct vm_prog *prog, const struct vm_trap *t, char *buf, size_t len)
{
	const char *fname = prog && t->func < prog->seg->n_funcs ? prog->seg->funcs[t->func].name : "?";
	int n = snprintf(buf, len, "trap %s (%s", isa_trap_name(t->kind), isa_trap_desc(t->kind));
	if (t->kind == ISA_TRAP_USER && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %u", t->code);
	if (t->msg[0] && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ": %s", t->msg);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ") in %s at pc %u", fname, t->pc);
	if (t->line && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", line %u", t->line);
	/* trap names are printed lower case, as the assembler and docs spell them */
	for (char *p = buf + 5; *p && *p != ' '; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return buf;
}
