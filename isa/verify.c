/* verify.c: prove, once per function, what the interpreter then never checks at run time.
 *
 * For every instruction reachable from the function's start: it decodes, its branch target is
 * the first byte of an instruction of the same function, its local, region, function and hook
 * indices exist, it writes only regions the segment may write, the operand stack holds what it
 * pops and never exceeds the declared maximum, every path reaching it sees the same depth, and
 * no path runs off the end of the code.  Lives in isa/ because the assembler uses the same
 * analysis to compute each function's maximum stack depth.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"

struct vctx {
	const struct isa_seg *seg;
	uint32_t fi;
	char *err;
	size_t errlen;
};

static int vfail(struct vctx *v, uint32_t pc, int op, const char *fmt, ...)
{
	char detail[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	const struct isa_func *f = &v->seg->funcs[v->fi];
	if (v->err && v->errlen) {
		if (op >= 0)
			snprintf(v->err, v->errlen, "verify: function %s at pc %u (%s): %s", f->name, pc,
			         isa_op_info[op].name, detail);
		else
			snprintf(v->err, v->errlen, "verify: function %s at pc %u: %s", f->name, pc, detail);
		/* mnemonics are printed lower case */
		char *p = strstr(v->err, " (");
		for (p = p ? p + 2 : NULL; p && *p && *p != ')'; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
	}
	return -1;
}

/* Stack effect of one instruction: how many it pops and pushes. */
static void effect(const struct isa_seg *seg, const struct isa_insn *in, int *pop, int *push)
{
	const struct isa_op_info *oi = &isa_op_info[in->op];
	*pop = oi->pop;
	*push = oi->push;
	if (in->op == OP_CALL)
		*pop = seg->funcs[in->imm].n_args;
	else if (in->op == OP_HCALL)
		*pop = isa_sig_check(seg->hooks[in->imm].sig);
}

static int region_ok(struct vctx *v, uint32_t pc, int op, unsigned r, int write)
{
	unsigned n = ISA_R_FIRST_IMPORT + v->seg->n_regions;
	if (r >= n)
		return vfail(v, pc, op, "region %u does not exist (%u regions)", r, n);
	if (!write)
		return 0;
	if (r == ISA_R_ARGS || r == ISA_R_CONST)
		return vfail(v, pc, op, "region %s is read-only", r == ISA_R_ARGS ? "args" : "const");
	if (r >= ISA_R_FIRST_IMPORT && !(v->seg->regions[r - ISA_R_FIRST_IMPORT].access & ISA_ACC_WRITE))
		return vfail(v, pc, op, "region %s is imported read-only",
		             v->seg->regions[r - ISA_R_FIRST_IMPORT].name);
	return 0;
}

/* Static checks of one instruction, independent of the stack. */
static int check_insn(struct vctx *v, uint32_t pc, const struct isa_insn *in, const int16_t *depth)
{
	const struct isa_func *f = &v->seg->funcs[v->fi];
	const struct isa_op_info *oi = &isa_op_info[in->op];
	int op = in->op;
	switch ((enum isa_fmt)oi->fmt) {
	case ISA_FMT_U8:
	case ISA_FMT_U8I8:
		if (in->a >= f->n_locals)
			return vfail(v, pc, op, "local %u does not exist (%u locals)", in->a, f->n_locals);
		break;
	case ISA_FMT_FUNC:
		if ((uint64_t)in->imm >= v->seg->n_funcs)
			return vfail(v, pc, op, "function %lld does not exist (%u functions)",
			             (long long)in->imm, v->seg->n_funcs);
		break;
	case ISA_FMT_HOOK:
		if ((uint64_t)in->imm >= v->seg->n_hooks)
			return vfail(v, pc, op, "hook %lld does not exist (%u hooks)", (long long)in->imm,
			             v->seg->n_hooks);
		break;
	case ISA_FMT_R:
		if (region_ok(v, pc, op, in->a, (oi->flags & OPF_WRITE) != 0) != 0)
			return -1;
		if ((op == OP_CAS || op == OP_FADD) && in->a < ISA_R_FIRST_IMPORT)
			return vfail(v, pc, op, "atomics work on imported regions only");
		break;
	case ISA_FMT_RR:
		if (region_ok(v, pc, op, in->a, (oi->flags & OPF_WRITE) != 0) != 0 ||
		    region_ok(v, pc, op, in->b, 0) != 0)
			return -1;
		break;
	case ISA_FMT_REL32: {
		int64_t t = (int64_t)pc + in->imm;
		if (t < 0 || t >= (int64_t)f->code_len || depth[t] == -2)
			return vfail(v, pc, op, "branch target %lld is not an instruction", (long long)t);
		break;
	}
	case ISA_FMT_NONE: case ISA_FMT_I8: case ISA_FMT_I32: case ISA_FMT_I64: case ISA_FMT_U16:
	case ISA_FMT_COUNT:
		break;
	}
	return 0;
}

int isa_verify_func(const struct isa_seg *seg, uint32_t fi, int16_t *depth_out,
                    unsigned *max_depth, char *err, size_t errlen)
{
	struct vctx v = { .seg = seg, .fi = fi, .err = err, .errlen = errlen };
	const struct isa_func *f = &seg->funcs[fi];
	uint32_t n = f->code_len;
	/* depth[pc]: -2 not an instruction start, -1 instruction not (yet) reached, else the stack
	 * depth before it. */
	int16_t *depth = depth_out ? depth_out : malloc(n * sizeof *depth);
	uint32_t *work = malloc(n * sizeof *work);
	int rc = -1;
	if (!depth || !work) {
		snprintf(err, errlen, "verify: out of memory");
		goto out;
	}
	for (uint32_t pc = 0; pc < n; pc++)
		depth[pc] = -2;
	struct isa_insn in;
	for (uint32_t pc = 0; pc < n; pc += in.len) {
		if (isa_decode(f->code, n, pc, &in) != 0) {
			if (f->code[pc] >= OP_COUNT)
				vfail(&v, pc, -1, "unknown opcode 0x%02x", f->code[pc]);
			else
				vfail(&v, pc, f->code[pc], "instruction runs past the end of the code");
			goto out;
		}
		depth[pc] = -1;
	}
	for (uint32_t pc = 0; pc < n; pc += in.len) {
		isa_decode(f->code, n, pc, &in);
		if (check_insn(&v, pc, &in, depth) != 0)
			goto out;
	}

	/* Abstract interpretation over stack depths with a worklist of instruction starts. */
	unsigned max = 0;
	uint32_t n_work = 0;
	depth[0] = 0;
	work[n_work++] = 0;
	while (n_work) {
		uint32_t pc = work[--n_work];
		isa_decode(f->code, n, pc, &in);
		const struct isa_op_info *oi = &isa_op_info[in.op];
		int d = depth[pc], pop, push;
		effect(seg, &in, &pop, &push);
		if (d < pop) {
			vfail(&v, pc, in.op, "stack underflow (depth %d, needs %d)", d, pop);
			goto out;
		}
		int nd = d - pop + push;
		if (nd > f->max_stack) {
			vfail(&v, pc, in.op, "stack overflow (depth %d, maximum %u)", nd, f->max_stack);
			goto out;
		}
		if ((unsigned)nd > max)
			max = (unsigned)nd;
		/* successors: the fall-through and the branch target */
		uint32_t succ[2];
		int n_succ = 0;
		if (!(oi->flags & (OPF_JUMP | OPF_END))) {
			if (pc + in.len >= n) {
				vfail(&v, pc, in.op, "execution falls off the end of the function");
				goto out;
			}
			succ[n_succ++] = pc + in.len;
		}
		if (oi->flags & (OPF_JUMP | OPF_BRANCH))
			succ[n_succ++] = (uint32_t)((int64_t)pc + in.imm);
		for (int i = 0; i < n_succ; i++) {
			uint32_t s = succ[i];
			if (depth[s] == -1) {
				depth[s] = (int16_t)nd;
				work[n_work++] = s;
			} else if (depth[s] != nd) {
				vfail(&v, s, f->code[s],
				      "stack depth %d here from pc %u, but %d on another path", nd, pc,
				      depth[s]);
				goto out;
			}
		}
	}
	if (max_depth)
		*max_depth = max;
	rc = 0;
out:
	if (depth != depth_out)
		free(depth);
	free(work);
	return rc;
}

int isa_verify(const struct isa_seg *seg, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < seg->n_funcs; i++)
		if (isa_verify_func(seg, i, NULL, NULL, err, errlen) != 0)
			return -1;
	return 0;
}
