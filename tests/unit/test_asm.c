/* test_asm.c: unit tests of the assembler, disassembler and builder (asm/).
 *
 * Table-driven: diagnostics (source -> exact first diagnostic line), round trips (assemble,
 * disassemble, assemble: identical bytes), builder equivalence (builder output equals the same
 * function assembled from text), plus a few encodings pinned byte for byte.  Prints one line
 * "N passed, N failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "isa.h"

static int n_pass, n_fail;

#define CHECK(cond, ...)                                                     \
	do {                                                                     \
		if (cond) {                                                          \
			n_pass++;                                                        \
		} else {                                                             \
			n_fail++;                                                        \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);            \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
		}                                                                    \
	} while (0)

/* Assemble text; returns the error count, the segment and the diagnostics (caller frees). */
static int assemble(const char *src, uint8_t **seg, size_t *len, char **diags)
{
	return asm_assemble(src, strlen(src), "t.pna", seg, len, diags);
}

/* ---- diagnostics: the first line of the output, exactly ---- */

static const struct {
	const char *src;
	const char *first;         /* expected first diagnostic line */
} diag_cases[] = {
	{ ".func f\n    pushh 1\n    ret\n.end\n",
	  "t.pna:2:5: error: unknown mnemonic 'pushh'" },
	{ ".func f\n    lget x\n    ret\n.end\n", "t.pna:2:10: error: unknown local 'x'" },
	{ ".func f\n    jmp nowhere\n.end\n", "t.pna:2:9: error: undefined label 'nowhere'" },
	{ ".func f\n    call g\n    ret\n.end\n", "t.pna:2:10: error: undefined function 'g'" },
	{ ".func f\n    hcall h\n    ret\n.end\n", "t.pna:2:11: error: undefined hook 'h'" },
	{ ".func f\n    push 0\n    ld8u mem\n    ret\n.end\n",
	  "t.pna:3:10: error: undefined region 'mem'" },
	{ ".func f\n    pushi8 128\n    ret\n.end\n",
	  "t.pna:2:12: error: immediate 128 out of range (-128..127)" },
	{ ".func f\n    pushi32 0x80000000\n    ret\n.end\n",
	  "t.pna:2:13: error: immediate 0x80000000 out of range (-2147483648..2147483647)" },
	{ ".func f\n    push 0x10000000000000000\n    ret\n.end\n",
	  "t.pna:2:10: error: integer literal does not fit in 64 bits" },
	{ ".func f\n    push 1\n    add\n    ret\n.end\n",
	  "t.pna:3:5: error: verify: function f at pc 2 (add): stack underflow (depth 1, needs 2)" },
	{ ".func f\n    push 1\n.end\n",
	  "t.pna:2:5: error: verify: function f at pc 0 (pushi8): execution falls off the end of "
	  "the function" },
	{ ".func f\n.end\n", "t.pna:1:1: error: function 'f' has no instructions" },
	{ ".func f\n    push 1\n    ret\n", "t.pna:3:1: error: missing .end for function 'f'" },
	{ "", "t.pna:1:1: error: no functions defined" },
	{ "    push 1\n", "t.pna:1:5: error: instruction outside a function" },
	{ ".fnuc f\n", "t.pna:1:1: error: unknown directive '.fnuc'" },
	{ ".region args ro\n",
	  "t.pna:1:9: error: 'args' is a built-in region and cannot be imported" },
	{ ".region m rx\n", "t.pna:1:11: error: expected 'ro' or 'rw', found 'rx'" },
	{ ".hook h \"lx:l\"\n", "t.pna:1:9: error: bad hook signature 'lx:l'" },
	{ ".const s \"a\\q\"\n", "t.pna:1:12: error: unknown escape sequence '\\q'" },
	{ ".const s \"abc\n", "t.pna:1:10: error: unterminated string" },
	{ ".const s bytes 256\n", "t.pna:1:16: error: value 256 out of range (-128..255)" },
	{ ".func f\n    push @nope\n    ret\n.end\n", "t.pna:2:11: error: unknown constant 'nope'" },
	{ ".func f\n    push 1/0\n    ret\n.end\n", "t.pna:2:11: error: division by zero" },
	{ ".func f\nx:\nx:\n    push 0\n    ret\n.end\n", "t.pna:3:1: error: label 'x' defined twice" },
	{ ".func f\n    ret\n.end\n",
	  "t.pna:2:5: error: verify: function f at pc 0 (ret): stack underflow (depth 0, needs 1)" },
	{ ".func f\n    push 0\n    ret\n.end\n.func f\n    push 0\n    ret\n.end\n",
	  "t.pna:5:7: error: function 'f' defined twice" },
	{ ".func f\n    push 0\n    ret\n.end\n.export g\n",
	  "t.pna:5:9: error: undefined function 'g'" },
	{ "\x01", "t.pna:1:1: error: unexpected character '\\x01'" },
	{ ".func f\n    push 0\n    push 0\n    st8 args\n    ret\n.end\n",
	  "t.pna:4:5: error: verify: function f at pc 4 (st8): region args is read-only" },
	{ ".func f\n    linc 0, 1\n    push 0\n    ret\n.end\n",
	  "t.pna:2:5: error: verify: function f at pc 0 (linc): local 0 does not exist (0 locals)" },
	{ ".func f a\n    linc a, 200\n    push 0\n    ret\n.end\n",
	  "t.pna:2:13: error: increment 200 out of range (-128..127)" },
	{ ".func f\n    trap 70000\n.end\n", "t.pna:2:10: error: code 70000 out of range (0..65535)" },
	{ ".func f\n    push 1 2\n    ret\n.end\n",
	  "t.pna:2:12: error: unexpected '2' at end of statement" },
	{ ".func f\n    push 0\n    ret\n.end\n.func g\n    call f\n    jnz f\n.end\n",
	  "t.pna:7:9: error: undefined label 'f'" },
};

/* Later diagnostics that must appear somewhere in the output. */
static const struct {
	const char *src;
	const char *line;
} diag_contains[] = {
	{ ".func f\n    pushh 1\n    ret\n.end\n", "t.pna:2:5: note: did you mean 'push'?" },
	{ ".func fnv\n    push 0\n    ret\n.end\n.func g\n    call fvn\n    ret\n.end\n",
	  "t.pna:6:10: note: did you mean 'fnv'?" },
	{ ".func f\n    lgte 0\n    ret\n.end\n", "t.pna:2:5: note: did you mean 'lget'?" },
	/* several errors are reported per run, in source order */
	{ ".func f\n    pushh 1\n    lget y\n    ret\n.end\n", "t.pna:3:10: error: unknown local 'y'" },
	{ ".func f\n    jmp nowhere\n    foo\n.end\n", "t.pna:3:5: error: unknown mnemonic 'foo'" },
};

static void test_diagnostics(void)
{
	for (size_t i = 0; i < sizeof diag_cases / sizeof *diag_cases; i++) {
		uint8_t *seg;
		size_t len;
		char *diags;
		int n = assemble(diag_cases[i].src, &seg, &len, &diags);
		const char *d = diags ? diags : "";
		size_t fl = strcspn(d, "\n");
		CHECK(n > 0 && !seg, "diag case %zu: expected an error, got %d errors", i, n);
		CHECK(fl == strlen(diag_cases[i].first) && strncmp(d, diag_cases[i].first, fl) == 0,
		      "diag case %zu:\n  expected: %s\n  got:      %.*s", i, diag_cases[i].first,
		      (int)fl, d);
		free(seg);
		free(diags);
	}
	for (size_t i = 0; i < sizeof diag_contains / sizeof *diag_contains; i++) {
		uint8_t *seg;
		size_t len;
		char *diags;
		assemble(diag_contains[i].src, &seg, &len, &diags);
		CHECK(diags && strstr(diags, diag_contains[i].line),
		      "diag-contains case %zu: '%s' not in:\n%s", i, diag_contains[i].line,
		      diags ? diags : "(none)");
		free(seg);
		free(diags);
	}
}

/* ---- round trips ---- */

static const char *const roundtrip_cases[] = {
	/* the header example, with every kind of declaration */
	"; comment\n"
	".region mem rw\n"
	".region table ro\n"
	".hook now \":l\"\n"
	".hook add2 ll:l\n"
	".const msg \"hi\\n\\t\\\\\\\"\\0\\x7f\"\n"
	".const tab u64 1, -2, 0xffffffffffffffff\n"
	".const b bytes 1, 0x2, 'a', '\\n', -1\n"
	".align 16\n"
	".const h u16 1 2 3\n"
	".const w u32 -1, 0x12345678\n"
	".const z zero 5\n"
	".func fnv p n\n"
	".local i h\n"
	"    push 0xcbf29ce484222325\n"
	"    lset h\n"
	"    push 0\n"
	"    lset i\n"
	"loop: lget i\n"
	"    lget n\n"
	"    jgeu done\n"
	"    lget h\n"
	"    lget p\n"
	"    lget i\n"
	"    add\n"
	"    ld8u mem\n"
	"    xor\n"
	"    push 0x100000001b3\n"
	"    mul\n"
	"    lset h\n"
	"    linc i, 1\n"
	"    jmp loop\n"
	"done:\n"
	"    lget h\n"
	"    push @msg\n"
	"    push #msg\n"
	"    output const\n"
	"    push @tab + 8 * 2\n"
	"    ld64 const\n"
	"    add\n"
	"    call helper\n"
	"    add\n"
	"    ret\n"
	".end\n"
	".func helper\n"
	"    hcall now\n"
	"    push 1\n"
	"    push 2\n"
	"    hcall add2\n"
	"    add\n"
	"    ret\n"
	".end\n"
	".export fnv\n"
	".export hash helper\n",

	/* no line table */
	".nolines\n"
	".func f a b\n"
	"    lget a\n"
	"    lget b\n"
	"    jltu less\n"
	"    push 1\n"
	"    ret\n"
	"less:\n"
	"    push -1\n"
	"    ret\n"
	".end\n"
	".export f\n",

	/* explicit line table, .locals, .stack, explicit push forms, every operand kind */
	".source \"gen.c\"\n"
	".region m rw\n"
	".func g\n"
	".locals 3\n"
	".stack 9\n"
	"    .line 100\n"
	"    pushi64 1\n"
	"    pushi32 2\n"
	"    add\n"
	"    .line 7\n"
	"    pushi8 3\n"
	"    pushi8 0\n"
	"    pushi8 0\n"
	"    pushi8 0\n"
	"    cas m\n"
	"    add\n"
	"    pushi8 0\n"
	"    pushi8 0\n"
	"    pushi8 4\n"
	"    copy m, const\n"
	"    linc 2, -128\n"
	"    lget 2\n"
	"    lget 0\n"
	"    .line 7\n"
	"    select\n"
	"    ret\n"
	".end\n"
	".func t\n"
	"    trap 65535\n"
	".end\n",

	/* quoted names, a region used before its declaration, forward calls */
	".func \"main.v2\" x\n"
	"    lget x\n"
	"    call \"h-1\"\n"
	"    pushi8 0\n"
	"    ld8u later\n"
	"    add\n"
	"    ret\n"
	".end\n"
	".func \"h-1\" y\n"
	"    lget y\n"
	"    ret\n"
	".end\n"
	".region later ro\n"
	".export \"run.me\" \"main.v2\"\n",

	/* numeric displacement, labels at the first and last instruction */
	".func loop\n"
	"top: push 1\n"
	"    jnz .+10\n"
	"    jmp top\n"
	"last: push 7\n"
	"    ret\n"
	".end\n",
};

static void test_roundtrip(void)
{
	for (size_t i = 0; i < sizeof roundtrip_cases / sizeof *roundtrip_cases; i++) {
		uint8_t *a = NULL, *b = NULL;
		size_t alen = 0, blen = 0;
		char *diags = NULL, *text = NULL, *text2 = NULL, err[256];
		int n = assemble(roundtrip_cases[i], &a, &alen, &diags);
		CHECK(n == 0 && a, "roundtrip %zu: assembly failed:\n%s", i, diags ? diags : "");
		free(diags);
		diags = NULL;
		if (!a)
			continue;
		int r = asm_disassemble(a, alen, &text, err, sizeof err);
		CHECK(r == 0 && text, "roundtrip %zu: disassembly failed: %s", i, err);
		if (r == 0) {
			n = asm_assemble(text, strlen(text), "dis.pna", &b, &blen, &diags);
			CHECK(n == 0, "roundtrip %zu: re-assembly failed:\n%s\n%s", i, diags ? diags : "",
			      text);
			CHECK(b && alen == blen && memcmp(a, b, alen) == 0,
			      "roundtrip %zu: bytes differ (%zu vs %zu)\n%s", i, alen, blen, text);
			/* the disassembly of the copy is the same text but for the segment id line,
			 * which is the same because the bytes are */
			if (b && asm_disassemble(b, blen, &text2, err, sizeof err) == 0)
				CHECK(strcmp(text, text2) == 0, "roundtrip %zu: texts differ", i);
		}
		free(a);
		free(b);
		free(text);
		free(text2);
		free(diags);
	}
}

/* ---- exact encodings ---- */

static void test_encodings(void)
{
	static const struct {
		const char *insn;
		int len;
		uint8_t bytes[9];
	} cases[] = {
		{ "push 0", 2, { OP_PUSHI8, 0 } },
		{ "push -128", 2, { OP_PUSHI8, 0x80 } },
		{ "push 128", 5, { OP_PUSHI32, 0x80, 0, 0, 0 } },
		{ "push -129", 5, { OP_PUSHI32, 0x7f, 0xff, 0xff, 0xff } },
		{ "push 0x7fffffff", 5, { OP_PUSHI32, 0xff, 0xff, 0xff, 0x7f } },
		{ "push 0x80000000", 9, { OP_PUSHI64, 0, 0, 0, 0x80, 0, 0, 0, 0 } },
		{ "push 0xffffffffffffffff", 2, { OP_PUSHI8, 0xff } },
		{ "push -0x8000000000000000", 9, { OP_PUSHI64, 0, 0, 0, 0, 0, 0, 0, 0x80 } },
		{ "PUSH 'A'", 2, { OP_PUSHI8, 'A' } },
		{ "push 0b101 << 4 | 1", 2, { OP_PUSHI8, 0x51 } },
		{ "push ~0 & (3 * (2 + 1))", 2, { OP_PUSHI8, 9 } },
		{ "push @c + #c", 2, { OP_PUSHI8, 8 + 8 } },
		{ "pushi64 1", 9, { OP_PUSHI64, 1 } },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char src[256];
		snprintf(src, sizeof src,
		         ".nolines\n.const pad zero 7\n.const c u64 1\n.func f\n    %s\n    ret\n.end\n",
		         cases[i].insn);
		uint8_t *seg;
		size_t len;
		char *diags, err[256];
		int n = assemble(src, &seg, &len, &diags);
		CHECK(n == 0, "encoding '%s': %s", cases[i].insn, diags ? diags : "");
		struct isa_seg *s = NULL;
		if (seg && isa_seg_decode(seg, len, &s, err, sizeof err) == 0) {
			const struct isa_func *f = &s->funcs[0];
			CHECK(f->code_len == (uint32_t)cases[i].len + 1 &&
			      memcmp(f->code, cases[i].bytes, (size_t)cases[i].len) == 0 &&
			      f->code[cases[i].len] == OP_RET && f->max_stack == 1,
			      "encoding '%s': wrong bytes", cases[i].insn);
			CHECK(s->n_lines == 0, ".nolines: line table present");
		}
		isa_seg_free(s);
		free(seg);
		free(diags);
	}
}

/* Declarations and the default line table, checked through the decoded segment. */
static void test_layout(void)
{
	const char *src =
		".const s \"abc\"\n"            /* 0..2 */
		".const q u64 5\n"              /* aligned to 8 */
		".const t u16 1\n"              /* 16 */
		".align 8\n"
		".const e \"\"\n"               /* 24, empty */
		".region r1 ro\n"
		".region r2 rw\n"
		".func f a b\n"
		".local c\n"
		".local d, e\n"
		"    push @q\n"
		"\n"
		"    push @e\n"
		"    add\n"
		"    ret\n"
		".end\n";
	uint8_t *seg;
	size_t len;
	char *diags, err[256];
	int n = assemble(src, &seg, &len, &diags);
	CHECK(n == 0, "layout: %s", diags ? diags : "");
	struct isa_seg *s = NULL;
	if (seg && isa_seg_decode(seg, len, &s, err, sizeof err) == 0) {
		CHECK(s->const_len == 24, "layout: const_len %u", s->const_len);
		CHECK(s->consts[8] == 5 && s->consts[16] == 1, "layout: const bytes");
		CHECK(s->n_regions == 2 && s->regions[1].access == ISA_ACC_RW, "layout: regions");
		CHECK(s->funcs[0].n_args == 2 && s->funcs[0].n_locals == 5, "layout: locals %u/%u",
		      s->funcs[0].n_args, s->funcs[0].n_locals);
		CHECK(s->funcs[0].max_stack == 2, "layout: max_stack %u", s->funcs[0].max_stack);
		CHECK(s->funcs[0].code[1] == 8 && s->funcs[0].code[3] == 24, "layout: @ offsets");
		CHECK(s->source && strcmp(s->source, "t.pna") == 0, "layout: source");
		CHECK(s->n_lines == 4 && isa_seg_line(s, 0, 0) == 11 && isa_seg_line(s, 0, 2) == 13 &&
		      isa_seg_line(s, 0, 5) == 15, "layout: line table");
		CHECK(isa_verify(s, err, sizeof err) == 0, "layout: verify: %s", err);
	}
	isa_seg_free(s);
	free(seg);
	free(diags);
}

/* ---- builder ---- */

struct build_case {
	const char *name;
	int (*build)(struct asm_builder *b);
	const char *text;
};

static int build_loop(struct asm_builder *b)
{
	int mem = asm_region(b, "mem", ISA_ACC_RW);
	int now = asm_hook(b, "now", ":l");
	uint32_t msg = asm_const(b, "hi", 2, 1);
	int f = asm_func_begin(b, "sum", 1, 2);
	asm_label top = asm_label_new(b), done = asm_label_new(b);
	asm_push(b, 0);
	asm_local(b, OP_LSET, 1);
	asm_label_bind(b, top);
	asm_local(b, OP_LGET, 0);
	asm_jump(b, OP_JZ, done);
	asm_local(b, OP_LGET, 1);
	asm_local(b, OP_LGET, 0);
	asm_mem(b, OP_LD8U, (unsigned)mem);
	asm_op(b, OP_ADD);
	asm_local(b, OP_LSET, 1);
	asm_linc(b, 0, -1);
	asm_jump(b, OP_JMP, top);
	asm_label_bind(b, done);
	asm_push(b, msg);
	asm_push(b, 2);
	asm_mem(b, OP_OUTPUT, ISA_R_CONST);
	asm_local(b, OP_LGET, 1);
	asm_hcall(b, now);
	asm_op(b, OP_ADD);
	asm_push(b, 100000);
	asm_op(b, OP_ADD);
	asm_push(b, INT64_MIN);
	asm_op(b, OP_ADD);
	asm_op(b, OP_RET);
	asm_func_end(b);
	return asm_export(b, "sum", f);
}

static int build_calls(struct asm_builder *b)
{
	asm_func_begin(b, "main", 0, 0);
	asm_push(b, 5);
	asm_call(b, 1); /* defined below */
	asm_op(b, OP_RET);
	asm_func_end(b);
	asm_func_begin(b, "twice", 1, 1);
	asm_line(b, 42);
	asm_local(b, OP_LGET, 0);
	asm_local(b, OP_LGET, 0);
	asm_op(b, OP_ADD);
	asm_line(b, 43);
	asm_op(b, OP_RET);
	asm_func_end(b);
	asm_mem2(b, OP_COPY, 1, 2); /* outside a function: sticky error, checked below */
	return 0;
}

static const struct build_case build_cases[] = {
	{ "loop", build_loop,
	  ".nolines\n"
	  ".region mem rw\n"
	  ".hook now \":l\"\n"
	  ".const msg \"hi\"\n"
	  ".func sum n\n"
	  ".local acc\n"
	  "    push 0\n"
	  "    lset acc\n"
	  "top:\n"
	  "    lget n\n"
	  "    jz done\n"
	  "    lget acc\n"
	  "    lget n\n"
	  "    ld8u mem\n"
	  "    add\n"
	  "    lset acc\n"
	  "    linc n, -1\n"
	  "    jmp top\n"
	  "done:\n"
	  "    push @msg\n"
	  "    push #msg\n"
	  "    output const\n"
	  "    lget acc\n"
	  "    hcall now\n"
	  "    add\n"
	  "    push 100000\n"
	  "    add\n"
	  "    push -0x8000000000000000\n"
	  "    add\n"
	  "    ret\n"
	  ".end\n"
	  ".export sum\n" },
};

static void test_builder(void)
{
	for (size_t i = 0; i < sizeof build_cases / sizeof *build_cases; i++) {
		struct asm_builder *b = asm_builder_new();
		uint8_t *x = NULL, *y = NULL;
		size_t xl = 0, yl = 0;
		char err[256] = "", *diags = NULL;
		build_cases[i].build(b);
		int r = asm_builder_finish(b, &x, &xl, err, sizeof err);
		CHECK(r == 0, "builder %s: %s", build_cases[i].name, err);
		int n = assemble(build_cases[i].text, &y, &yl, &diags);
		CHECK(n == 0, "builder %s: text: %s", build_cases[i].name, diags ? diags : "");
		CHECK(x && y && xl == yl && memcmp(x, y, xl) == 0, "builder %s: bytes differ",
		      build_cases[i].name);
		free(x);
		free(y);
		free(diags);
		asm_builder_free(b);
	}

	/* sticky error: the first one is reported, nothing is produced */
	struct asm_builder *b = asm_builder_new();
	uint8_t *seg = NULL;
	size_t len;
	char err[256] = "";
	build_calls(b);
	CHECK(asm_builder_finish(b, &seg, &len, err, sizeof err) != 0 && !seg,
	      "builder: error not sticky");
	CHECK(strcmp(err, "asm_mem2: no function is open") == 0, "builder: error '%s'", err);
	asm_builder_free(b);

	/* the same calls without the bad one: forward call, line table like .line */
	b = asm_builder_new();
	asm_func_begin(b, "main", 0, 0);
	asm_push(b, 5);
	asm_call(b, 1);
	asm_op(b, OP_RET);
	asm_func_end(b);
	asm_func_begin(b, "twice", 1, 1);
	asm_line(b, 42);
	asm_local(b, OP_LGET, 0);
	asm_local(b, OP_LGET, 0);
	asm_op(b, OP_ADD);
	asm_line(b, 43);
	asm_op(b, OP_RET);
	asm_func_end(b);
	int r = asm_builder_finish(b, &seg, &len, err, sizeof err);
	CHECK(r == 0, "builder calls: %s", err);
	uint8_t *y = NULL;
	size_t yl = 0;
	char *diags = NULL;
	assemble(".source \"\"\n"
	         ".func main\n    push 5\n    call twice\n    ret\n.end\n"
	         ".func twice x\n    .line 42\n    lget x\n    lget x\n    add\n"
	         "    .line 43\n    ret\n.end\n", &y, &yl, &diags);
	CHECK(seg && y && len == yl && memcmp(seg, y, len) == 0, "builder calls: bytes differ %s",
	      diags ? diags : "");
	free(y);
	free(diags);
	free(seg);
	asm_builder_free(b);

	/* verification errors come back from finish */
	b = asm_builder_new();
	asm_func_begin(b, "bad", 0, 0);
	asm_op(b, OP_ADD);
	asm_op(b, OP_RET);
	asm_func_end(b);
	seg = NULL;
	CHECK(asm_builder_finish(b, &seg, &len, err, sizeof err) != 0 &&
	      strstr(err, "stack underflow"), "builder: verify error '%s'", err);
	asm_builder_free(b);
}

/* ---- hostile input: must not crash or leak; outcome is an error ---- */

static void test_hostile(void)
{
	static const char *const cases[] = {
		"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((",
		".func f\n push ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\n",
		".func f\n push -----------------------------------------------------------------1\n",
		".const x zero 99999999999\n",
		".func f\n push 0xffffffffffffffff * 0xffffffffffffffff\n ret\n.end\n",
		".func f\n push 1 << 64\n",
		"\"\\x", "'", "'\\", "''", "\"", ".func \"\"\n", ".hook h \"\"\n",
		".func f\n jmp .+\n", ".func f\n jmp .\n", ".export\n", ".export \"a b\"\n",
		".func f a a\n", ".locals 999\n", ".func f\n .locals 1\n .local a b\n push 0\n ret\n.end\n",
		".line 5\n", ".func f\n .line -1\n", ".align 3\n", ".align 0\n",
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		uint8_t *seg;
		size_t len;
		char *diags;
		int n = assemble(cases[i], &seg, &len, &diags);
		CHECK(n > 0 && !seg && diags, "hostile %zu: expected errors", i);
		free(seg);
		free(diags);
	}
	/* NUL bytes and a very long line */
	size_t big = 200000;
	char *s = malloc(big);
	if (s) {
		memset(s, 'a', big);
		s[100] = '\0';
		uint8_t *seg;
		size_t len;
		char *diags;
		int n = asm_assemble(s, big, "big.pna", &seg, &len, &diags);
		CHECK(n > 0 && !seg, "long line: expected errors");
		free(seg);
		free(diags);
		/* many lines with errors: capped */
		for (size_t i = 0; i < big; i++)
			s[i] = i % 4 == 3 ? '\n' : 'x';
		n = asm_assemble(s, big, "many.pna", &seg, &len, &diags);
		CHECK(n > 0 && n <= 100 && diags && strstr(diags, "too many errors"),
		      "many errors: %d", n);
		free(seg);
		free(diags);
		free(s);
	}
	/* garbage segments are refused by the disassembler */
	char *text = NULL, err[256];
	static const uint8_t junk[] = { 'P', 'N', 'S', 'G', 1, 0, 0, 0, 3 };
	CHECK(asm_disassemble(junk, sizeof junk, &text, err, sizeof err) != 0 && !text,
	      "disassembling junk");
}

int main(void)
{
	test_diagnostics();
	test_roundtrip();
	test_encodings();
	test_layout();
	test_builder();
	test_hostile();
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
