/* builder.c: the C builder API (asm.h), for programs that generate segments at run time.
 *
 * It records into the same struct seg_build as the text assembler and finishes the same way
 * (emit.c), so a function built here and the same function assembled from text are the same
 * bytes.  Errors are sticky: the first one is kept, every later call does nothing, and
 * asm_builder_finish reports it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "asm_int.h"

#define NO_FUNC UINT32_MAX

struct label {
	uint32_t func;             /* function it is bound in, NO_FUNC while unbound */
	uint32_t pc;
};

struct jump_fix {
	uint32_t insn_pc;
	asm_label target;
};

struct asm_builder {
	struct seg_build sb;
	int failed;
	char err[256];

	uint32_t cur;              /* open function or NO_FUNC */
	struct buf code;
	struct label *labels;
	uint32_t n_labels, cap_labels;
	struct jump_fix *fixes;    /* branches of the open function */
	uint32_t n_fixes, cap_fixes;
	int line_pending;
	uint32_t line;
};

static void fail(struct asm_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct asm_builder *b, const char *fmt, ...)
{
	if (b->failed)
		return;
	b->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof b->err, fmt, ap);
	va_end(ap);
}

struct asm_builder *asm_builder_new(void)
{
	struct asm_builder *b = calloc(1, sizeof *b);
	if (b)
		b->cur = NO_FUNC;
	return b;
}

void asm_builder_free(struct asm_builder *b)
{
	if (!b)
		return;
	sb_free(&b->sb);
	buf_free(&b->code);
	free(b->labels);
	free(b->fixes);
	free(b);
}

static int name_ok(struct asm_builder *b, const char *name, const char *what)
{
	if (name && isa_name_check(name, strlen(name)) == 0)
		return 1;
	fail(b, "%s name '%s' must be 1-%d printable characters without spaces", what,
	     name ? name : "(null)", ISA_MAX_NAME);
	return 0;
}

int asm_region(struct asm_builder *b, const char *name, unsigned access)
{
	if (b->failed || !name_ok(b, name, "region"))
		return -1;
	if (access != ISA_ACC_RO && access != ISA_ACC_RW) {
		fail(b, "asm_region %s: access must be ISA_ACC_RO or ISA_ACC_RW", name);
		return -1;
	}
	int r = sb_add_region(&b->sb, name, strlen(name), (uint8_t)access);
	if (r < 0)
		fail(b, "asm_region %s: too many regions (at most %d) or out of memory",
		     name, ISA_MAX_REGIONS);
	return r;
}

int asm_hook(struct asm_builder *b, const char *name, const char *sig)
{
	if (b->failed || !name_ok(b, name, "hook"))
		return -1;
	if (!sig || strlen(sig) > ISA_MAX_SIG || isa_sig_check(sig) < 0) {
		fail(b, "asm_hook %s: bad signature '%s'", name, sig ? sig : "(null)");
		return -1;
	}
	int h = sb_add_hook(&b->sb, name, strlen(name), sig, strlen(sig));
	if (h < 0)
		fail(b, "asm_hook %s: too many hooks (at most %d) or out of memory", name,
		     ISA_MAX_HOOKS);
	return h;
}

uint32_t asm_const(struct asm_builder *b, const void *data, size_t len, unsigned align)
{
	if (b->failed)
		return 0;
	if (align > 1 && (align & (align - 1))) {
		fail(b, "asm_const: alignment %u is not a power of two", align);
		return 0;
	}
	if (len && !data) {
		fail(b, "asm_const: no data");
		return 0;
	}
	int64_t off = sb_add_const(&b->sb, data, len, align);
	if (off < 0) {
		fail(b, "asm_const: constant data exceeds %u bytes", ISA_MAX_CONST);
		return 0;
	}
	return (uint32_t)off;
}

int asm_func_begin(struct asm_builder *b, const char *name, unsigned n_args, unsigned n_locals)
{
	if (b->failed || !name_ok(b, name, "function"))
		return -1;
	if (b->cur != NO_FUNC) {
		fail(b, "asm_func_begin %s: function %s is still open", name,
		     b->sb.s.funcs[b->cur].name);
		return -1;
	}
	if (n_locals < n_args || n_locals > ISA_MAX_LOCALS) {
		fail(b, "asm_func_begin %s: %u arguments and %u locals (need args <= locals <= %d)",
		     name, n_args, n_locals, ISA_MAX_LOCALS);
		return -1;
	}
	int fi = sb_add_func(&b->sb, name, strlen(name), n_args);
	if (fi < 0) {
		fail(b, "asm_func_begin %s: too many functions or out of memory", name);
		return -1;
	}
	b->sb.s.funcs[fi].n_locals = (uint8_t)n_locals;
	b->cur = (uint32_t)fi;
	b->n_fixes = 0;
	b->line_pending = 0;
	return fi;
}

void asm_func_end(struct asm_builder *b)
{
	if (b->failed)
		return;
	if (b->cur == NO_FUNC)
		return fail(b, "asm_func_end: no function is open");
	struct isa_func *f = &b->sb.s.funcs[b->cur];
	for (uint32_t i = 0; i < b->n_fixes; i++) {
		struct jump_fix *x = &b->fixes[i];
		struct label *l = &b->labels[x->target];
		if (l->func != b->cur)
			return fail(b, "%s: branch at pc %u to label %u, which is not bound in this "
			            "function", f->name, x->insn_pc, x->target);
		isa_put32(b->code.p + x->insn_pc + 1, (uint32_t)((int64_t)l->pc - x->insn_pc));
	}
	if (b->code.oom)
		return fail(b, "%s: out of memory", f->name);
	f->code = b->code.p;
	f->code_len = (uint32_t)b->code.len;
	b->code = (struct buf){ 0 };
	b->cur = NO_FUNC;
}

int asm_export(struct asm_builder *b, const char *name, int func)
{
	if (b->failed || !name_ok(b, name, "export"))
		return -1;
	if (func < 0 || func > UINT16_MAX) {
		fail(b, "asm_export %s: bad function index %d", name, func);
		return -1;
	}
	for (uint32_t i = 0; i < b->sb.s.n_exports; i++)
		if (strcmp(b->sb.s.exports[i].name, name) == 0) {
			fail(b, "asm_export %s: exported twice", name);
			return -1;
		}
	if (sb_add_export(&b->sb, name, strlen(name), (uint16_t)func) != 0) {
		fail(b, "asm_export %s: too many exports or out of memory", name);
		return -1;
	}
	return 0;
}

asm_label asm_label_new(struct asm_builder *b)
{
	if (b->failed)
		return 0;
	if (vec_reserve((void **)&b->labels, &b->cap_labels, b->n_labels + 1, sizeof *b->labels)) {
		fail(b, "asm_label_new: out of memory");
		return 0;
	}
	b->labels[b->n_labels] = (struct label){ .func = NO_FUNC };
	return b->n_labels++;
}

static int in_func(struct asm_builder *b, const char *what)
{
	if (b->failed)
		return 0;
	if (b->cur == NO_FUNC) {
		fail(b, "%s: no function is open", what);
		return 0;
	}
	return 1;
}

void asm_label_bind(struct asm_builder *b, asm_label l)
{
	if (!in_func(b, "asm_label_bind"))
		return;
	if (l >= b->n_labels)
		return fail(b, "asm_label_bind: label %u was not made by asm_label_new", l);
	if (b->labels[l].func != NO_FUNC)
		return fail(b, "asm_label_bind: label %u bound twice", l);
	b->labels[l] = (struct label){ .func = b->cur, .pc = (uint32_t)b->code.len };
}

/* Every instruction goes through here: the line table entry, the size limit, the bytes. */
static void emit(struct asm_builder *b, const char *what, enum op op, unsigned x, unsigned y,
                 int64_t imm)
{
	if (!in_func(b, what))
		return;
	if (b->code.len + ISA_MAX_INSN > ISA_MAX_CODE)
		return fail(b, "%s: function %s exceeds %u bytes of code", what,
		            b->sb.s.funcs[b->cur].name, ISA_MAX_CODE);
	if (b->line_pending) {
		b->line_pending = 0;
		if (sb_add_line(&b->sb, (uint16_t)b->cur, (uint32_t)b->code.len, b->line) != 0)
			return fail(b, "%s: out of memory", what);
	}
	emit_insn(&b->code, op, x, y, imm);
}

static int fmt_is(struct asm_builder *b, const char *what, enum op op, enum isa_fmt fmt)
{
	if (b->failed)
		return 0;
	if ((unsigned)op >= OP_COUNT || isa_op_info[op].fmt != fmt) {
		fail(b, "%s: opcode %d does not take %s operands", what, (int)op,
		     isa_fmt_name[fmt]);
		return 0;
	}
	return 1;
}

void asm_op(struct asm_builder *b, enum op op)
{
	if (fmt_is(b, "asm_op", op, ISA_FMT_NONE))
		emit(b, "asm_op", op, 0, 0, 0);
}

void asm_push(struct asm_builder *b, int64_t value)
{
	emit(b, "asm_push", push_op_for(value), 0, 0, value);
}

void asm_local(struct asm_builder *b, enum op op, unsigned local)
{
	if (!fmt_is(b, "asm_local", op, ISA_FMT_U8))
		return;
	if (local >= ISA_MAX_LOCALS)
		return fail(b, "asm_local: local %u out of range", local);
	emit(b, "asm_local", op, local, 0, 0);
}

void asm_linc(struct asm_builder *b, unsigned local, int delta)
{
	if (local >= ISA_MAX_LOCALS || delta < INT8_MIN || delta > INT8_MAX)
		return fail(b, "asm_linc: local %u, delta %d out of range", local, delta);
	emit(b, "asm_linc", OP_LINC, local, 0, delta);
}

void asm_mem(struct asm_builder *b, enum op op, unsigned region)
{
	if (!fmt_is(b, "asm_mem", op, ISA_FMT_R))
		return;
	if (region > UINT8_MAX)
		return fail(b, "asm_mem: region %u out of range", region);
	emit(b, "asm_mem", op, region, 0, 0);
}

void asm_mem2(struct asm_builder *b, enum op op, unsigned r1, unsigned r2)
{
	if (!fmt_is(b, "asm_mem2", op, ISA_FMT_RR))
		return;
	if (r1 > UINT8_MAX || r2 > UINT8_MAX)
		return fail(b, "asm_mem2: region %u or %u out of range", r1, r2);
	emit(b, "asm_mem2", op, r1, r2, 0);
}

void asm_jump(struct asm_builder *b, enum op op, asm_label target)
{
	if (!fmt_is(b, "asm_jump", op, ISA_FMT_REL32) || !in_func(b, "asm_jump"))
		return;
	if (target >= b->n_labels)
		return fail(b, "asm_jump: label %u was not made by asm_label_new", target);
	if (vec_reserve((void **)&b->fixes, &b->cap_fixes, b->n_fixes + 1, sizeof *b->fixes))
		return fail(b, "asm_jump: out of memory");
	uint32_t pc = (uint32_t)b->code.len;
	emit(b, "asm_jump", op, 0, 0, 0);
	if (!b->failed)
		b->fixes[b->n_fixes++] = (struct jump_fix){ .insn_pc = pc, .target = target };
}

void asm_call(struct asm_builder *b, int func)
{
	if (func < 0 || func > UINT16_MAX)
		return fail(b, "asm_call: bad function index %d", func);
	emit(b, "asm_call", OP_CALL, 0, 0, func);
}

void asm_hcall(struct asm_builder *b, int hook)
{
	if (hook < 0 || hook > UINT16_MAX)
		return fail(b, "asm_hcall: bad hook index %d", hook);
	emit(b, "asm_hcall", OP_HCALL, 0, 0, hook);
}

void asm_trap(struct asm_builder *b, unsigned code)
{
	if (code > UINT16_MAX)
		return fail(b, "asm_trap: code %u out of range", code);
	emit(b, "asm_trap", OP_TRAP, 0, 0, code);
}

void asm_line(struct asm_builder *b, uint32_t line)
{
	if (!in_func(b, "asm_line"))
		return;
	b->line_pending = 1;
	b->line = line;
}

void asm_source(struct asm_builder *b, const char *name)
{
	if (!b->failed && sb_set_source(&b->sb, name, strlen(name)) != 0)
		fail(b, "asm_source: bad source name or out of memory");
}

int asm_builder_finish(struct asm_builder *b, uint8_t **seg, size_t *seg_len, char *err,
                       size_t errlen)
{
	*seg = NULL;
	*seg_len = 0;
	if (!b)
		return snprintf(err, errlen, "no builder"), -1;
	if (!b->failed && b->cur != NO_FUNC)
		fail(b, "asm_builder_finish: function %s is still open", b->sb.s.funcs[b->cur].name);
	if (!b->failed && b->sb.s.n_funcs == 0)
		fail(b, "asm_builder_finish: no functions");
	for (uint32_t fi = 0; fi < b->sb.s.n_funcs && !b->failed; fi++) {
		uint32_t pc;
		char verr[256];
		if (sb_finish_func(&b->sb, fi, verr, sizeof verr, &pc) != 0)
			fail(b, "%s", verr);
	}
	if (!b->failed && isa_seg_encode(&b->sb.s, seg, seg_len, b->err, sizeof b->err) != 0)
		b->failed = 1;
	if (b->failed) {
		snprintf(err, errlen, "%s", b->err);
		return -1;
	}
	return 0;
}
