/* test_segment.c: unit tests of the segment codec, the verifier, vm_load and SHA-256.
 *
 * Segments are built here byte by byte (struct bw) or as a struct isa_seg, never through the
 * assembler, so every malformed shape the decoder and the verifier must refuse can be written
 * down exactly.  Error messages are pinned verbatim: they are the interface a person reads.
 * Prints "N passed, N failed" last; exits 1 on any failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "vm.h"

static unsigned n_pass, n_fail;

#define CHECK(cond, ...)                                                                  \
	do {                                                                                  \
		if (cond) {                                                                       \
			n_pass++;                                                                     \
		} else {                                                                          \
			n_fail++;                                                                     \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
			printf(__VA_ARGS__);                                                          \
			printf("\n");                                                                 \
		}                                                                                 \
	} while (0)

#define CHECK_STR(got, want)                                                              \
	do {                                                                                  \
		const char *g_ = (got), *w_ = (want);                                             \
		CHECK(g_ && !strcmp(g_, w_), "\n    expected: %s\n    got:      %s", w_,            \
		      g_ ? g_ : "(null)");                                                        \
	} while (0)

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		perror("test_segment");
		exit(2);
	}
	return p;
}

/* ---- byte writer for hand-made segments ---- */
struct bw {
	uint8_t *p;
	size_t len, cap;
};

static void bw_bytes(struct bw *w, const void *b, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		w->p = realloc(w->p, cap);
		if (!w->p) {
			perror("test_segment");
			exit(2);
		}
		w->cap = cap;
	}
	memcpy(w->p + w->len, b, n);
	w->len += n;
}
static void bw8(struct bw *w, uint8_t v) { bw_bytes(w, &v, 1); }
static void bw16(struct bw *w, uint16_t v) { uint8_t b[2]; isa_put16(b, v); bw_bytes(w, b, 2); }
static void bw32(struct bw *w, uint32_t v) { uint8_t b[4]; isa_put32(b, v); bw_bytes(w, b, 4); }
static void bwstr(struct bw *w, const char *s) { bw8(w, (uint8_t)strlen(s)); bw_bytes(w, s, strlen(s)); }

/* A header whose total length is patched by bw_done. */
static void bw_header(struct bw *w)
{
	bw32(w, ISA_MAGIC);
	bw16(w, ISA_VERSION);
	bw16(w, 0);
	bw32(w, 0);
	bw32(w, 0);
}
static size_t bw_sec(struct bw *w, uint8_t kind)
{
	bw8(w, kind);
	bw8(w, 0);
	bw16(w, 0);
	bw32(w, 0);
	return w->len;
}
static void bw_sec_end(struct bw *w, size_t at) { isa_put32(w->p + at - 4, (uint32_t)(w->len - at)); }
static void bw_done(struct bw *w) { isa_put32(w->p + 8, (uint32_t)w->len); }

/* A FUNCS section with one function "main" (0 args, 0 locals) returning 0. */
static void bw_main(struct bw *w)
{
	size_t at = bw_sec(w, ISA_SEC_FUNCS);
	bw16(w, 1);
	bwstr(w, "main");
	bw8(w, 0);
	bw8(w, 0);
	bw16(w, 1);
	bw32(w, 3);
	bw8(w, OP_PUSHI8);
	bw8(w, 0);
	bw8(w, OP_RET);
	bw_sec_end(w, at);
}

/* Decode w's bytes, expecting failure with exactly msg (or success when msg is NULL). */
static void expect_decode(int line, struct bw *w, const char *msg)
{
	struct isa_seg *s = (void *)1;
	char err[256] = "";
	int rc = isa_seg_decode(w->p, w->len, &s, err, sizeof err);
	if (msg) {
		CHECK(rc == -1 && s == NULL, "line %d: decode accepted a bad segment (want '%s')", line,
		      msg);
		CHECK(!strcmp(err, msg), "line %d:\n    expected: %s\n    got:      %s", line, msg, err);
	} else {
		CHECK(rc == 0 && s != NULL, "line %d: decode failed: %s", line, err);
	}
	isa_seg_free(rc == 0 ? s : NULL);
	free(w->p);
	*w = (struct bw){ 0 };
}
#define EXPECT_DECODE(w, msg) expect_decode(__LINE__, (w), (msg))

/* ---- code emitter for verifier tests ---- */
struct code {
	uint8_t b[512];
	uint32_t n;
};

static uint32_t emit(struct code *c, enum op op, uint8_t a, uint8_t b, int64_t imm)
{
	if (c->n + ISA_MAX_INSN > sizeof c->b) {
		fprintf(stderr, "test_segment: code buffer full\n");
		exit(2);
	}
	struct isa_insn in = { .op = (uint8_t)op, .a = a, .b = b, .imm = imm };
	uint32_t pc = c->n;
	c->n += (uint32_t)isa_encode(c->b + c->n, &in);
	return pc;
}
#define OP0(c, op)        emit((c), OP_##op, 0, 0, 0)
#define OPI(c, op, imm)   emit((c), OP_##op, 0, 0, (imm))
#define OPA(c, op, a)     emit((c), OP_##op, (a), 0, 0)
#define OPAB(c, op, a, b) emit((c), OP_##op, (a), (b), 0)

/* A segment for verifier and vm_load tests: imports region "data" (ro, index 3) and "mem"
 * (rw, index 4), hook "h" ("ll:l"); function 0 "main" (n_args args, n_locals locals,
 * max_stack) runs the given code, function 1 "f" takes 2 arguments and returns their sum. */
static struct isa_region_import t_regions[] = { { "data", ISA_ACC_RO }, { "mem", ISA_ACC_RW } };
static struct isa_hook_import t_hooks[] = { { "h", "ll:l" } };
static uint8_t f_code[] = { OP_LGET, 0, OP_LGET, 1, OP_ADD, OP_RET };

static struct isa_seg make_seg(struct isa_func *funcs, const struct code *c, uint8_t n_args,
                               uint8_t n_locals, uint16_t max_stack)
{
	funcs[0] = (struct isa_func){ .name = "main", .n_args = n_args, .n_locals = n_locals,
	                              .max_stack = max_stack, .code_len = c->n,
	                              .code = (uint8_t *)c->b };
	funcs[1] = (struct isa_func){ .name = "f", .n_args = 2, .n_locals = 2, .max_stack = 2,
	                              .code_len = sizeof f_code, .code = f_code };
	return (struct isa_seg){ .n_regions = 2, .regions = t_regions, .n_hooks = 1,
	                         .hooks = t_hooks, .n_funcs = 2, .funcs = funcs };
}

static int64_t hook_h(struct vm_hook_ctx *ctx, int64_t a, int64_t b)
{
	(void)ctx;
	return a + b;
}

static uint8_t data_mem[64], rw_mem[64];

static struct vm *test_vm(void)
{
	struct vm *vm = vm_new();
	if (!vm || vm_bind_region(vm, "data", data_mem, sizeof data_mem, ISA_ACC_RO) != 0 ||
	    vm_bind_region(vm, "mem", rw_mem, sizeof rw_mem, ISA_ACC_RW) != 0 ||
	    vm_bind_hook(vm, "h", (void *)hook_h, "ll:l", NULL) != 0) {
		fprintf(stderr, "test_segment: cannot set up a vm\n");
		exit(2);
	}
	return vm;
}

/* Verify main of the test segment both with isa_verify_func and through encode + vm_load;
 * both must give msg exactly (NULL: both must accept). */
static void expect_verify(int line, const struct code *c, uint8_t n_args, uint8_t n_locals,
                          uint16_t max_stack, const char *msg)
{
	struct isa_func funcs[2];
	struct isa_seg s = make_seg(funcs, c, n_args, n_locals, max_stack);
	char err[256] = "";
	int rc = isa_verify_func(&s, 0, NULL, NULL, err, sizeof err);
	if (msg)
		CHECK(rc == -1 && !strcmp(err, msg),
		      "line %d: isa_verify_func\n    expected: %s\n    got:      %s", line, msg,
		      rc ? err : "(accepted)");
	else
		CHECK(rc == 0, "line %d: isa_verify_func rejected: %s", line, err);

	uint8_t *bytes;
	size_t len;
	if (isa_seg_encode(&s, &bytes, &len, err, sizeof err) != 0) {
		CHECK(0, "line %d: encode failed: %s", line, err);
		return;
	}
	struct vm *vm = test_vm();
	struct vm_prog *prog = NULL;
	err[0] = 0;
	rc = vm_load(vm, bytes, len, &prog, err, sizeof err);
	if (msg) {
		CHECK(rc == -VM_EVERIFY, "line %d: vm_load returned %d (%s), want -VM_EVERIFY", line,
		      rc, vm_strerror(rc));
		CHECK(!strcmp(err, msg), "line %d: vm_load\n    expected: %s\n    got:      %s", line,
		      msg, err);
	} else {
		CHECK(rc == 0, "line %d: vm_load failed: %s", line, err);
	}
	vm_prog_free(prog);
	vm_free(vm);
	free(bytes);
}
#define EXPECT_VERIFY(c, na, nl, ms, msg) expect_verify(__LINE__, (c), (na), (nl), (ms), (msg))

/* ---- tests ---- */

/* A segment using every section, to truncate, corrupt and round-trip. */
static int full_segment(uint8_t **bytes, size_t *len)
{
	static uint8_t consts[] = "hello, world\n";
	static struct isa_export exports[] = { { "main", 0 }, { "add", 1 } };
	static struct isa_line lines[] = { { 0, 0, 3 }, { 0, 2, 4 }, { 1, 0, 9 }, { 1, 4, 10 } };
	/* main(x) = h(f(x, 7), 1), with one spare local */
	struct code c = { .n = 0 };
	OPA(&c, LGET, 0);
	OPI(&c, PUSHI8, 7);
	OPI(&c, CALL, 1);
	OPI(&c, PUSHI8, 1);
	OPI(&c, HCALL, 0);
	OP0(&c, RET);
	struct isa_func funcs[2];
	struct isa_seg s = make_seg(funcs, &c, 1, 2, 2);
	s.n_exports = 2;
	s.exports = exports;
	s.consts = consts;
	s.const_len = sizeof consts - 1;
	s.source = "full.pna";
	s.n_lines = 4;
	s.lines = lines;
	char err[256];
	int rc = isa_seg_encode(&s, bytes, len, err, sizeof err);
	CHECK(rc == 0, "encode of the full segment: %s", err);
	return rc;
}

static void test_round_trip(void)
{
	uint8_t *b1, *b2;
	size_t l1, l2;
	if (full_segment(&b1, &l1) != 0)
		return;
	struct isa_seg *s;
	char err[256];
	int rc = isa_seg_decode(b1, l1, &s, err, sizeof err);
	CHECK(rc == 0, "decode of the full segment: %s", err);
	if (rc)
		goto out;
	CHECK(s->n_regions == 2 && !strcmp(s->regions[1].name, "mem") &&
	      s->regions[1].access == ISA_ACC_RW, "regions decoded wrong");
	CHECK(s->n_hooks == 1 && !strcmp(s->hooks[0].sig, "ll:l"), "hooks decoded wrong");
	CHECK(s->n_funcs == 2 && s->funcs[0].n_args == 1 && s->funcs[0].n_locals == 2 &&
	      s->funcs[1].code_len == sizeof f_code, "functions decoded wrong");
	CHECK(s->n_exports == 2 && s->exports[1].func == 1, "exports decoded wrong");
	CHECK(s->const_len == 13 && !memcmp(s->consts, "hello", 5), "constants decoded wrong");
	CHECK(s->source && !strcmp(s->source, "full.pna") && s->n_lines == 4, "lines decoded wrong");
	/* isa_seg_line: the entry with the largest pc <= the given one */
	CHECK(isa_seg_line(s, 0, 0) == 3 && isa_seg_line(s, 0, 1) == 3 && isa_seg_line(s, 0, 2) == 4 &&
	      isa_seg_line(s, 0, 9) == 4 && isa_seg_line(s, 1, 5) == 10 && isa_seg_line(s, 2, 0) == 0,
	      "isa_seg_line lookups wrong");
	CHECK(isa_verify(s, err, sizeof err) == 0, "full segment does not verify: %s", err);
	rc = isa_seg_encode(s, &b2, &l2, err, sizeof err);
	CHECK(rc == 0 && l2 == l1 && !memcmp(b1, b2, l1), "encode(decode(x)) != x");
	if (rc == 0)
		free(b2);
	isa_seg_free(s);

	/* and vm_load accepts it, with the id being the SHA-256 of the bytes */
	struct vm *vm = test_vm();
	struct vm_prog *prog = NULL;
	rc = vm_load(vm, b1, l1, &prog, err, sizeof err);
	CHECK(rc == 0, "vm_load of the full segment: %s", err);
	if (rc == 0) {
		uint8_t id[ISA_ID_LEN];
		isa_seg_id(b1, l1, id);
		CHECK(!memcmp(vm_prog_id(prog), id, ISA_ID_LEN), "vm_prog_id is not the SHA-256");
		unsigned n_args = 99;
		CHECK(vm_prog_entry(prog, "add", &n_args) == 1 && n_args == 2, "entry 'add' wrong");
		CHECK(vm_prog_entry(prog, "f", &n_args) == -VM_ENOENTRY, "unexported 'f' found");
		/* main(5) = h(f(5, 7), 1) = 13 */
		int64_t arg = 5;
		struct vm_run_opts opts = { 0 };
		struct vm_result res;
		rc = vm_run(prog, 0, &arg, 1, &opts, &res);
		CHECK(rc == 0 && res.value == 13, "main(5): rc %d value %" PRId64, rc, res.value);
		CHECK(vm_run(prog, 0, NULL, 0, &opts, &res) == -VM_EARGS, "wrong argc accepted");
	}
	vm_prog_free(prog);
	vm_free(vm);
out:
	free(b1);
}

/* Walk the section headers of a valid segment: offsets where a section ends. */
static size_t section_ends(const uint8_t *b, size_t len, size_t *ends, size_t max)
{
	size_t n = 0;
	for (size_t at = ISA_HEADER_LEN; at + 8 <= len && n < max;) {
		at += 8 + isa_get32(b + at + 4);
		ends[n++] = at;
	}
	return n;
}

static void test_truncation(void)
{
	uint8_t *b;
	size_t len;
	if (full_segment(&b, &len) != 0)
		return;
	size_t ends[16];
	size_t n_ends = section_ends(b, len, ends, 16);
	struct vm *vm = test_vm();
	unsigned bad = 0, bad_patched = 0, bad_load = 0;
	for (size_t n = 0; n < len; n++) {
		/* a copy of exactly n bytes, so a sanitizer sees any read past the prefix */
		uint8_t *p = xcalloc(n, 1);
		memcpy(p, b, n);
		struct isa_seg *s = (void *)1;
		char err[256] = "";
		if (isa_seg_decode(p, n, &s, err, sizeof err) != -1 || s != NULL || !err[0])
			bad++;
		struct vm_prog *prog = NULL;
		if (vm_load(vm, p, n, &prog, err, sizeof err) != -VM_EMALFORMED || prog)
			bad_load++;
		vm_prog_free(prog);
		/* With the header's length patched, the decoder gets past the length check and must
		 * find the cut inside the sections; a cut exactly at the end of a section at or after
		 * FUNCS leaves a shorter but valid segment. */
		if (n >= ISA_HEADER_LEN) {
			isa_put32(p + 8, (uint32_t)n);
			int valid = 0;
			for (size_t i = 0; i < n_ends; i++)
				if (ends[i] == n && i >= 2)  /* sections: regions, hooks, funcs, ... */
					valid = 1;
			int rc = isa_seg_decode(p, n, &s, err, sizeof err);
			if (valid ? rc != 0 : (rc != -1 || s != NULL)) {
				bad_patched++;
				printf("  prefix %zu (patched): rc %d %s\n", n, rc, rc ? err : "");
			}
			if (rc == 0)
				isa_seg_free(s);
		}
		free(p);
	}
	CHECK(bad == 0, "%u of %zu prefixes not rejected cleanly by isa_seg_decode", bad, len);
	CHECK(bad_patched == 0, "%u prefixes with patched length misjudged", bad_patched);
	CHECK(bad_load == 0, "%u of %zu prefixes not rejected with -VM_EMALFORMED by vm_load",
	      bad_load, len);
	vm_free(vm);
	free(b);

	/* exact messages at a few cuts */
	struct bw w = { 0 };
	bw_bytes(&w, "PNS", 3);
	EXPECT_DECODE(&w, "segment truncated: header needs 4 bytes, 3 left");
	bw_header(&w);
	bw8(&w, ISA_SEC_FUNCS);
	bw_done(&w);
	EXPECT_DECODE(&w, "segment truncated: section header needs 1 bytes, 0 left");
	bw_header(&w);
	size_t at = bw_sec(&w, ISA_SEC_FUNCS);
	bw16(&w, 1);
	bwstr(&w, "main");
	bw8(&w, 0);
	bw_sec_end(&w, at);
	bw_done(&w);
	/* fewer bytes than the smallest function record: refused before reading it */
	EXPECT_DECODE(&w, "functions: count 1 does not fit in the 6 bytes left");
	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_FUNCS);
	bw16(&w, 1);
	bwstr(&w, "a_long_name");
	bw8(&w, 0);
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "segment truncated: local count needs 1 bytes, 0 left");
	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_FUNCS);
	bw16(&w, 1);
	bwstr(&w, "main");
	bw8(&w, 0);
	bw8(&w, 0);
	bw16(&w, 1);
	bw32(&w, 3);
	bw8(&w, OP_PUSHI8);
	bw_sec_end(&w, at);
	bw_done(&w);
	/* code_len 3 with 1 byte: the count check comes before the copy */
	EXPECT_DECODE(&w, "segment truncated: function code needs 3 bytes, 1 left");
}

static void test_header(void)
{
	struct bw w = { 0 };
	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, NULL);  /* the minimal valid segment the others corrupt */

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	w.p[0] = 'X';
	EXPECT_DECODE(&w, "not a code segment (bad magic 0x47534e58)");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	isa_put16(w.p + 4, ISA_VERSION + 1);
	EXPECT_DECODE(&w, "segment version 2, this VM reads version 1");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	w.p[6] = 1;
	EXPECT_DECODE(&w, "segment header: reserved fields are not zero");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	w.p[15] = 0x80;
	EXPECT_DECODE(&w, "segment header: reserved fields are not zero");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	isa_put32(w.p + 8, (uint32_t)w.len + 1);
	EXPECT_DECODE(&w, "segment length 42 does not match its header (43)");

	bw_header(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "segment has no functions");

	/* an empty FUNCS section is no better */
	bw_header(&w);
	size_t at = bw_sec(&w, ISA_SEC_FUNCS);
	bw16(&w, 0);
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "segment has no functions");
}

static void test_sections(void)
{
	struct bw w = { 0 };
	size_t at;

	bw_header(&w);
	bw_sec_end(&w, bw_sec(&w, 7));
	bw_done(&w);
	EXPECT_DECODE(&w, "unknown section kind 7");

	bw_header(&w);
	bw_sec_end(&w, bw_sec(&w, 0));
	bw_done(&w);
	EXPECT_DECODE(&w, "unknown section kind 0");

	/* CONST before FUNCS */
	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_CONST);
	bw8(&w, 1);
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "section 3 out of order or repeated");

	/* FUNCS twice */
	bw_header(&w);
	bw_main(&w);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "section 3 out of order or repeated");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	w.p[ISA_HEADER_LEN + 1] = 1;
	EXPECT_DECODE(&w, "section 3: reserved header bytes are not zero");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	w.p[ISA_HEADER_LEN + 3] = 1;
	EXPECT_DECODE(&w, "section 3: reserved header bytes are not zero");

	bw_header(&w);
	bw_main(&w);
	bw_done(&w);
	isa_put32(w.p + ISA_HEADER_LEN + 4, 100);
	EXPECT_DECODE(&w, "section 3: length 100 exceeds the 18 bytes left");

	/* a section shorter than its contents cannot read into the next one */
	bw_header(&w);
	bw_main(&w);
	at = bw_sec(&w, ISA_SEC_CONST);
	bw8(&w, 1);
	bw_sec_end(&w, at);
	bw_done(&w);
	isa_put32(w.p + ISA_HEADER_LEN + 4, 12);
	EXPECT_DECODE(&w, "segment truncated: code length needs 4 bytes, 1 left");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_REGIONS);
	bw16(&w, 0);
	bw8(&w, 0);
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "section 1: 1 bytes of trailing garbage");
}

static void test_counts(void)
{
	struct bw w = { 0 };
	size_t at;

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_REGIONS);
	bw16(&w, 0xffff);
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "region imports: 65535, at most 253");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_REGIONS);
	bw16(&w, 200);
	bw8(&w, ISA_ACC_RO);
	bwstr(&w, "r");
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "region imports: count 200 does not fit in the 3 bytes left");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_HOOKS);
	bw16(&w, ISA_MAX_HOOKS + 1);
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "hook imports: 1025, at most 1024");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_HOOKS);
	bw16(&w, 1000);
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "hook imports: count 1000 does not fit in the 0 bytes left");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_FUNCS);
	bw16(&w, 0xffff);
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "functions: count 65535 does not fit in the 0 bytes left");

	bw_header(&w);
	bw_main(&w);
	at = bw_sec(&w, ISA_SEC_EXPORTS);
	bw16(&w, 0xffff);
	bw16(&w, 0);
	bwstr(&w, "main");
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "exports: count 65535 does not fit in the 7 bytes left");

	/* a u32 count: allocating before checking would ask for tens of gigabytes */
	bw_header(&w);
	bw_main(&w);
	at = bw_sec(&w, ISA_SEC_LINES);
	bwstr(&w, "x.pna");
	bw32(&w, 0xffffffff);
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "line table: count 4294967295 does not fit in the 0 bytes left");

	/* function fields */
	static const struct {
		uint8_t n_args, n_locals;
		uint16_t max_stack;
		uint32_t code_len;
		const char *msg;
	} fbad[] = {
		{ 3, 2, 1, 1, "function 0 (main): 3 arguments but only 2 locals" },
		{ 0, 0, ISA_MAX_STACK + 1, 1, "function 0 (main): maximum stack 1025, at most 1024" },
		{ 0, 0, 1, 0, "function 0 (main): code length 0, must be 1..16777216" },
		{ 0, 0, 1, ISA_MAX_CODE + 1, "function 0 (main): code length 16777217, must be 1..16777216" },
	};
	for (size_t i = 0; i < sizeof fbad / sizeof fbad[0]; i++) {
		bw_header(&w);
		at = bw_sec(&w, ISA_SEC_FUNCS);
		bw16(&w, 1);
		bwstr(&w, "main");
		bw8(&w, fbad[i].n_args);
		bw8(&w, fbad[i].n_locals);
		bw16(&w, fbad[i].max_stack);
		bw32(&w, fbad[i].code_len);
		bw8(&w, OP_RET);
		bw_sec_end(&w, at);
		bw_done(&w);
		EXPECT_DECODE(&w, fbad[i].msg);
	}

	/* constant data: any length up to the limit, including none */
	bw_header(&w);
	bw_main(&w);
	bw_sec_end(&w, bw_sec(&w, ISA_SEC_CONST));
	bw_done(&w);
	EXPECT_DECODE(&w, NULL);
}

static void test_names(void)
{
	static const char *const bad[] = { "", "a b", "tab\there", "del\x7f", "nl\n", "\xc3\xa9" };
	struct bw w = { 0 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		bw_header(&w);
		size_t at = bw_sec(&w, ISA_SEC_FUNCS);
		bw16(&w, 1);
		bwstr(&w, bad[i]);
		bw8(&w, 0);
		bw8(&w, 0);
		bw16(&w, 1);
		bw32(&w, 3);
		bw8(&w, OP_PUSHI8);
		bw8(&w, 0);
		bw8(&w, OP_RET);
		bw_sec_end(&w, at);
		bw_done(&w);
		EXPECT_DECODE(&w, "function 0: name must be 1-255 printable characters without spaces");
	}
	bw_header(&w);
	size_t at = bw_sec(&w, ISA_SEC_REGIONS);
	bw16(&w, 1);
	bw8(&w, ISA_ACC_RW);
	bwstr(&w, "my region");
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "region import 0: name must be 1-255 printable characters without spaces");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_REGIONS);
	bw16(&w, 1);
	bw8(&w, ISA_ACC_WRITE);
	bwstr(&w, "r");
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "region import 0: access 2 is neither ro (1) nor rw (3)");

	/* the longest name is fine, isa_name_check agrees */
	char longest[ISA_MAX_NAME + 2];
	memset(longest, 'n', sizeof longest);
	CHECK(isa_name_check(longest, ISA_MAX_NAME) == 0, "255-byte name refused");
	CHECK(isa_name_check(longest, ISA_MAX_NAME + 1) == -1, "256-byte name accepted");
	CHECK(isa_name_check("~!", 2) == 0 && isa_name_check("a b", 3) == -1 &&
	      isa_name_check("", 0) == -1, "isa_name_check");

	/* the encoder refuses bad names too */
	struct code c = { .n = 0 };
	OPI(&c, PUSHI8, 0);
	OP0(&c, RET);
	struct isa_func funcs[2];
	struct isa_seg s = make_seg(funcs, &c, 0, 0, 1);
	funcs[0].name = "bad name";
	uint8_t *out;
	size_t len;
	char err[256] = "";
	CHECK(isa_seg_encode(&s, &out, &len, err, sizeof err) == -1 && out == NULL,
	      "encoded a bad name");
	CHECK_STR(err, "function name 'bad name' must be 1-255 printable characters without spaces");
}

static void test_hooks_exports_lines(void)
{
	static const struct { const char *sig; int n; } sigs[] = {
		{ ":l", 0 }, { "ll:l", 2 }, { "iIlL:v", 4 }, { "llllllll:L", 8 }, { ":v", 0 },
		{ "lllllllll:l", -1 }, { "ll", -1 }, { "l:", -1 }, { "l:lv", -1 }, { "x:l", -1 },
		{ "l:x", -1 }, { "v:l", -1 }, { "", -1 }, { "l::l", -1 },
	};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		CHECK(isa_sig_check(sigs[i].sig) == sigs[i].n, "isa_sig_check(\"%s\") = %d, want %d",
		      sigs[i].sig, isa_sig_check(sigs[i].sig), sigs[i].n);

	struct bw w = { 0 };
	size_t at;
	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_HOOKS);
	bw16(&w, 1);
	bwstr(&w, "now");
	bwstr(&w, "l:lv");
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "hook import 0 (now): bad signature 'l:lv'");

	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_HOOKS);
	bw16(&w, 1);
	bwstr(&w, "now");
	bwstr(&w, "lllllllll:l");
	bw_sec_end(&w, at);
	bw_main(&w);
	bw_done(&w);
	EXPECT_DECODE(&w, "hook import 0 (now): bad signature 'lllllllll:l'");

	bw_header(&w);
	bw_main(&w);
	at = bw_sec(&w, ISA_SEC_EXPORTS);
	bw16(&w, 1);
	bw16(&w, 1);
	bwstr(&w, "main");
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "export 0 (main): function 1 does not exist (1 functions)");

	/* exports must follow FUNCS, so an export with no FUNCS before it names nothing */
	bw_header(&w);
	at = bw_sec(&w, ISA_SEC_EXPORTS);
	bw16(&w, 1);
	bw16(&w, 0);
	bwstr(&w, "main");
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "export 0 (main): function 0 does not exist (0 functions)");

	bw_header(&w);
	bw_main(&w);
	at = bw_sec(&w, ISA_SEC_EXPORTS);
	bw16(&w, 2);
	bw16(&w, 0);
	bwstr(&w, "main");
	bw16(&w, 0);
	bwstr(&w, "main");
	bw_sec_end(&w, at);
	bw_done(&w);
	EXPECT_DECODE(&w, "export 1: name 'main' exported twice");

	/* line tables */
	static const struct { uint16_t f1; uint32_t pc1; uint16_t f2; uint32_t pc2; const char *msg; }
	ltab[] = {
		{ 0, 0, 0, 2, NULL },
		{ 0, 2, 0, 0, "line table entry 1: not sorted by function and pc" },
		{ 0, 1, 0, 1, "line table entry 1: not sorted by function and pc" },
		{ 0, 0, 0, 3, "line table entry 1: function 0 pc 3 is outside the code" },
		{ 1, 0, 0, 0, "line table entry 0: function 1 pc 0 is outside the code" },
	};
	for (size_t i = 0; i < sizeof ltab / sizeof ltab[0]; i++) {
		bw_header(&w);
		bw_main(&w);
		at = bw_sec(&w, ISA_SEC_LINES);
		bwstr(&w, "x.pna");
		bw32(&w, 2);
		bw16(&w, ltab[i].f1);
		bw32(&w, ltab[i].pc1);
		bw32(&w, 1);
		bw16(&w, ltab[i].f2);
		bw32(&w, ltab[i].pc2);
		bw32(&w, 2);
		bw_sec_end(&w, at);
		bw_done(&w);
		EXPECT_DECODE(&w, ltab[i].msg);
	}
}

static void test_verify(void)
{
	struct code c;
	const char *m;

#define RESET() (c.n = 0)
	/* accepted: the simplest function, and unreachable but well-formed code after ret */
	RESET(); OPI(&c, PUSHI8, 1); OP0(&c, RET); OP0(&c, ADD); OP0(&c, NOP);
	EXPECT_VERIFY(&c, 0, 0, 1, NULL);

	/* unknown opcode, even when unreachable */
	RESET(); OPI(&c, PUSHI8, 0); OP0(&c, RET); c.b[c.n++] = OP_COUNT;
	char want[128];
	snprintf(want, sizeof want, "verify: function main at pc 3: unknown opcode 0x%02x", OP_COUNT);
	EXPECT_VERIFY(&c, 0, 0, 1, want);
	RESET(); c.b[c.n++] = 0xff;
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0: unknown opcode 0xff");

	/* an instruction cut by the end of the code */
	RESET(); OPI(&c, PUSHI8, 0); OP0(&c, RET); OPI(&c, PUSHI32, 0); c.n -= 2;
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 3 (pushi32): instruction runs past "
	              "the end of the code");

	/* locals */
	RESET(); OPA(&c, LGET, 2); OP0(&c, RET);
	EXPECT_VERIFY(&c, 1, 2, 1, "verify: function main at pc 0 (lget): local 2 does not exist "
	              "(2 locals)");
	RESET(); OPI(&c, PUSHI8, 0); OPA(&c, LSET, 0); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 2 (lset): local 0 does not exist "
	              "(0 locals)");
	RESET(); emit(&c, OP_LINC, 3, 0, -1); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 3, 1, "verify: function main at pc 0 (linc): local 3 does not exist "
	              "(3 locals)");
	RESET(); OPI(&c, PUSHI8, 0); OPA(&c, LTEE, 254); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 255, 1, NULL);  /* the last of 255 locals */

	/* functions and hooks */
	RESET(); OPI(&c, CALL, 2); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0 (call): function 2 does not exist "
	              "(2 functions)");
	RESET(); OPI(&c, HCALL, 1); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0 (hcall): hook 1 does not exist "
	              "(1 hooks)");
	/* a call pops the callee's argument count, an hcall the signature's */
	RESET(); OPI(&c, PUSHI8, 1); OPI(&c, CALL, 1); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 2 (call): stack underflow (depth 1, "
	              "needs 2)");
	RESET(); OPI(&c, PUSHI8, 1); OPI(&c, HCALL, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 2 (hcall): stack underflow (depth 1, "
	              "needs 2)");
	RESET(); OPI(&c, PUSHI8, 1); OPI(&c, PUSHI8, 2); OPI(&c, CALL, 1); OPI(&c, PUSHI8, 3);
	OPI(&c, HCALL, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, NULL);
	/* call of itself (recursion) is fine */
	RESET(); OPI(&c, CALL, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, NULL);

	/* regions: 0 args, 1 out, 2 const, 3 data (ro), 4 mem (rw) */
	RESET(); OPI(&c, PUSHI8, 0); OPA(&c, LD8U, 5); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 2 (ld8u): region 5 does not exist "
	              "(5 regions)");
	RESET(); OPA(&c, RLEN, 200); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0 (rlen): region 200 does not exist "
	              "(5 regions)");
	m = "verify: function main at pc 4 (st8): region args is read-only";
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPA(&c, ST8, ISA_R_ARGS);
	OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, m);
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPA(&c, ST64, ISA_R_CONST);
	OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 4 (st64): region const is read-only");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPA(&c, ST32, 3);
	OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 4 (st32): region data is imported "
	              "read-only");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPA(&c, ST16, 4); OPI(&c, PUSHI8, 0);
	OPI(&c, PUSHI8, 0); OPA(&c, ST16, ISA_R_OUT); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, NULL);  /* rw import and out are writable */
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPA(&c, FILL, 3);
	OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, "verify: function main at pc 6 (fill): region data is imported "
	              "read-only");
	/* atomics: imported rw regions only */
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 1); OPA(&c, FADD, ISA_R_OUT); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 4 (fadd): atomics work on imported "
	              "regions only");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 1); OPI(&c, PUSHI8, 2); OPA(&c, CAS, 3);
	OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, "verify: function main at pc 6 (cas): region data is imported "
	              "read-only");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 1); OPI(&c, PUSHI8, 2); OPA(&c, CAS, 4);
	OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, NULL);
	/* two-region forms: the first may be written, the second is only read */
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0);
	OPAB(&c, COPY, ISA_R_CONST, 4); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, "verify: function main at pc 6 (copy): region const is read-only");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0);
	OPAB(&c, COPY, 4, 9); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, "verify: function main at pc 6 (copy): region 9 does not exist "
	              "(5 regions)");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0);
	OPAB(&c, COPY, ISA_R_OUT, ISA_R_ARGS); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, NULL);
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0);
	OPAB(&c, CMP, ISA_R_ARGS, ISA_R_CONST); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, NULL);  /* cmp only reads */
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0);
	OPAB(&c, FINDS, 3, 5); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 4, "verify: function main at pc 8 (finds): region 5 does not exist "
	              "(5 regions)");

	/* branch targets: inside an instruction, before the start, past the end, self */
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, JZ, -1); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 2 (jz): branch target 1 is not an "
	              "instruction");
	RESET(); OPI(&c, JMP, -1); OPI(&c, PUSHI8, 0); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0 (jmp): branch target -1 is not an "
	              "instruction");
	RESET(); OPI(&c, PUSHI8, 0); OPI(&c, PUSHI8, 0); OPI(&c, JEQ, 8); OPI(&c, PUSHI8, 0);
	OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 4 (jeq): branch target 12 is not an "
	              "instruction");
	RESET(); OPI(&c, JMP, 0);
	EXPECT_VERIFY(&c, 0, 0, 0, NULL);  /* an endless loop verifies; fuel stops it */
	RESET(); OPI(&c, JMP, (int64_t)INT32_MIN);
	EXPECT_VERIFY(&c, 0, 0, 0, "verify: function main at pc 0 (jmp): branch target -2147483648 is "
	              "not an instruction");

	/* stack depth */
	RESET(); OPI(&c, PUSHI8, 1); OP0(&c, ADD); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 2 (add): stack underflow (depth 1, "
	              "needs 2)");
	RESET(); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 0 (ret): stack underflow (depth 0, "
	              "needs 1)");
	RESET(); OPI(&c, PUSHI8, 1); OPI(&c, PUSHI8, 1); OPI(&c, PUSHI8, 1); OP0(&c, ROT);
	OP0(&c, DROP); OP0(&c, DROP); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 3, NULL);
	RESET(); OPI(&c, PUSHI8, 1); OP0(&c, DUP); OP0(&c, DUP); OP0(&c, DROP); OP0(&c, DROP);
	OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 2, "verify: function main at pc 3 (dup): stack overflow (depth 3, "
	              "maximum 2)");
	RESET(); OPI(&c, PUSHI8, 1); OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, 0, "verify: function main at pc 0 (pushi8): stack overflow (depth 1, "
	              "maximum 0)");
	RESET(); OPI(&c, PUSHI8, 1); OP0(&c, DROP);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 2 (drop): execution falls off the end "
	              "of the function");
	/* a conditional branch at the very end falls through into nothing */
	RESET(); OPI(&c, PUSHI8, 1); OPI(&c, JNZ, -2);
	EXPECT_VERIFY(&c, 0, 0, 1, "verify: function main at pc 2 (jnz): execution falls off the end "
	              "of the function");
	/* two paths meet with different depths: the jz path brings 0, the fall-through 1 (the
	 * worklist visits the branch target first, so the fall-through reports) */
	RESET();
	OPA(&c, LGET, 0);          /* 0 */
	OPI(&c, JZ, 7);            /* 2 -> 9 */
	OPI(&c, PUSHI8, 5);        /* 7 */
	OPI(&c, PUSHI8, 6);        /* 9 */
	OP0(&c, RET);              /* 11 */
	EXPECT_VERIFY(&c, 1, 1, 2, "verify: function main at pc 9 (pushi8): stack depth 1 here from "
	              "pc 7, but 0 on another path");
	/* a loop that grows the stack on each trip */
	RESET();
	OPI(&c, PUSHI8, 1);        /* 0 */
	OPI(&c, JMP, -2);          /* 2 -> 0 */
	EXPECT_VERIFY(&c, 0, 0, 4, "verify: function main at pc 0 (pushi8): stack depth 1 here from "
	              "pc 2, but 0 on another path");
	/* arguments arrive in locals: the stack starts empty */
	RESET(); OPA(&c, LGET, 0); OPA(&c, LGET, 1); OP0(&c, SUB); OP0(&c, RET);
	EXPECT_VERIFY(&c, 2, 2, 2, NULL);
	/* the largest stack allowed */
	RESET();
	for (int i = 0; i < 100; i++)
		OP0(&c, NOP);
	OPI(&c, PUSHI8, 0);
	OP0(&c, RET);
	EXPECT_VERIFY(&c, 0, 0, ISA_MAX_STACK, NULL);
#undef RESET

	/* depth and max_depth outputs */
	c.n = 0;
	OPI(&c, PUSHI8, 1);        /* 0: depth 0 */
	OPI(&c, PUSHI8, 2);        /* 2: depth 1 */
	OP0(&c, ADD);              /* 4: depth 2 */
	OP0(&c, RET);              /* 5: depth 1 */
	OP0(&c, NOP);              /* 6: unreachable */
	struct isa_func funcs[2];
	struct isa_seg s = make_seg(funcs, &c, 0, 0, 2);
	int16_t depth[7];
	unsigned max = 99;
	char err[256];
	CHECK(isa_verify_func(&s, 0, depth, &max, err, sizeof err) == 0, "depth test: %s", err);
	static const int16_t want_depth[7] = { 0, -2, 1, -2, 2, 1, -1 };
	CHECK(!memcmp(depth, want_depth, sizeof depth), "depth[] = %d %d %d %d %d %d %d", depth[0],
	      depth[1], depth[2], depth[3], depth[4], depth[5], depth[6]);
	CHECK(max == 2, "max_depth %u, want 2", max);
	/* isa_verify names the first bad function; f is fine, so break main */
	s.funcs[0].max_stack = 1;
	CHECK(isa_verify(&s, err, sizeof err) == -1, "isa_verify accepted max_stack 1");
	CHECK_STR(err, "verify: function main at pc 2 (pushi8): stack overflow (depth 2, maximum 1)");
	/* a short err buffer truncates instead of overflowing */
	char tiny[8];
	memset(tiny, 'x', sizeof tiny);
	CHECK(isa_verify(&s, tiny, 4) == -1 && !strcmp(tiny, "ver") && tiny[4] == 'x',
	      "isa_verify wrote past errlen");
}

/* Link errors name the import; the exact wording belongs to vm/ so only the code and the name
 * are pinned here. */
static void expect_link(int line, struct isa_seg *s, const char *name)
{
	uint8_t *bytes;
	size_t len;
	char err[256] = "";
	if (isa_seg_encode(s, &bytes, &len, err, sizeof err) != 0) {
		CHECK(0, "line %d: encode: %s", line, err);
		return;
	}
	struct vm *vm = test_vm();
	struct vm_prog *prog = NULL;
	int rc = vm_load(vm, bytes, len, &prog, err, sizeof err);
	CHECK(rc == -VM_ELINK && prog == NULL, "line %d: vm_load returned %d, want -VM_ELINK", line,
	      rc);
	CHECK(strstr(err, name) != NULL, "line %d: link error '%s' does not name '%s'", line, err,
	      name);
	vm_prog_free(prog);
	vm_free(vm);
	free(bytes);
}

static void test_link(void)
{
	struct code c = { .n = 0 };
	OPI(&c, PUSHI8, 0);
	OP0(&c, RET);
	struct isa_func funcs[2];
	struct isa_seg s = make_seg(funcs, &c, 0, 0, 1);
	struct isa_region_import r_missing[] = { { "nosuch", ISA_ACC_RO } };
	struct isa_region_import r_rw_on_ro[] = { { "data", ISA_ACC_RW } };
	struct isa_region_import r_ro_on_rw[] = { { "mem", ISA_ACC_RO } };
	struct isa_hook_import h_missing[] = { { "nohook", ":l" } };
	struct isa_hook_import h_badsig[] = { { "h", "l:l" } };

	s.regions = r_missing;
	s.n_regions = 1;
	expect_link(__LINE__, &s, "nosuch");
	s.regions = r_rw_on_ro;
	expect_link(__LINE__, &s, "data");
	s.regions = t_regions;
	s.n_regions = 2;
	s.hooks = h_missing;
	expect_link(__LINE__, &s, "nohook");
	s.hooks = h_badsig;
	expect_link(__LINE__, &s, "h");

	/* importing an rw region read-only is allowed */
	s.hooks = t_hooks;
	s.regions = r_ro_on_rw;
	s.n_regions = 1;
	uint8_t *bytes;
	size_t len;
	char err[256] = "";
	if (isa_seg_encode(&s, &bytes, &len, err, sizeof err) == 0) {
		struct vm *vm = test_vm();
		struct vm_prog *prog = NULL;
		CHECK(vm_load(vm, bytes, len, &prog, err, sizeof err) == 0, "ro import of rw: %s", err);
		vm_prog_free(prog);
		vm_free(vm);
		free(bytes);
	}
}

/* Every opcode encodes and decodes to itself, its mnemonic looks it up, and every cut of it
 * is refused by isa_decode. */
static void test_opcodes(void)
{
	unsigned bad = 0;
	for (int op = 0; op < OP_COUNT; op++) {
		const struct isa_op_info *oi = &isa_op_info[op];
		struct isa_insn in = { .op = (uint8_t)op, .a = 0x81, .b = 0x42, .imm = -3 }, out;
		switch ((enum isa_fmt)oi->fmt) {
		case ISA_FMT_NONE: in.a = in.b = 0; in.imm = 0; break;
		case ISA_FMT_I8: case ISA_FMT_I32: case ISA_FMT_REL32: in.a = in.b = 0; break;
		case ISA_FMT_I64: in.a = in.b = 0; in.imm = INT64_MIN + 5; break;
		case ISA_FMT_U8: case ISA_FMT_R: in.b = 0; in.imm = 0; break;
		case ISA_FMT_U8I8: in.b = 0; break;
		case ISA_FMT_RR: in.imm = 0; break;
		case ISA_FMT_U16: case ISA_FMT_FUNC: case ISA_FMT_HOOK: in.a = in.b = 0; in.imm = 0xfffe;
			break;
		case ISA_FMT_COUNT: break;
		}
		uint8_t buf[ISA_MAX_INSN + 1];
		size_t n = isa_encode(buf, &in);
		if (n != 1u + isa_fmt_len[oi->fmt] || n > ISA_MAX_INSN ||
		    isa_decode(buf, n, 0, &out) != 0 || out.op != in.op || out.len != n ||
		    out.a != in.a || out.b != in.b || out.imm != in.imm) {
			bad++;
			printf("  opcode %s does not round-trip\n", oi->name);
		}
		for (size_t cut = 0; cut < n; cut++)
			if (isa_decode(buf, cut, 0, &out) != -1) {
				bad++;
				printf("  opcode %s decoded from %zu of %zu bytes\n", oi->name, cut, n);
			}
		char lower[32];
		size_t len = strlen(oi->name);
		for (size_t i = 0; i <= len && i < sizeof lower; i++)
			lower[i] = (char)(oi->name[i] >= 'A' && oi->name[i] <= 'Z' ? oi->name[i] + 32
			                                                           : oi->name[i]);
		if (isa_op_lookup(lower, len) != op || isa_op_lookup(oi->name, len) != op) {
			bad++;
			printf("  isa_op_lookup(%s) failed\n", lower);
		}
		if (!oi->synopsis || oi->synopsis[0] != '(') {
			bad++;
			printf("  opcode %s: synopsis does not start with a stack picture\n", oi->name);
		}
	}
	CHECK(bad == 0, "%u opcode table problems", bad);
	CHECK(isa_op_lookup("pushh", 5) == -1 && isa_op_lookup("add", 2) == -1,
	      "isa_op_lookup matched a non-mnemonic");
	uint8_t unk = OP_COUNT;
	struct isa_insn in;
	CHECK(isa_decode(&unk, 1, 0, &in) == -1, "unknown opcode decoded");
	CHECK(!strcmp(isa_trap_name(ISA_TRAP_DIV_ZERO), "DIV_ZERO") && !strcmp(isa_trap_name(-1), "?")
	      && !strcmp(isa_trap_name(ISA_TRAP_COUNT), "?"), "isa_trap_name");
}

static void test_sha256(void)
{
	static const struct { const char *msg; size_t repeat; const char *hex; } v[] = {
		{ "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
		/* padding edges: the length field fits in the last block or needs one more */
		{ "a", 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ "a", 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ "a", 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ "a", 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ "a", 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
	};
	/* both ways: the SHA instructions where the CPU has them, and the portable rounds */
	for (size_t j = 0; j < 2 * (sizeof v / sizeof v[0]); j++) {
		size_t i = j % (sizeof v / sizeof v[0]);
		isa_sha256_portable = j >= sizeof v / sizeof v[0];
		size_t n = strlen(v[i].msg), len = n * v[i].repeat;
		char *buf = xcalloc(len, 1);
		for (size_t k = 0; k < v[i].repeat; k++)
			memcpy(buf + k * n, v[i].msg, n);
		uint8_t id[ISA_ID_LEN];
		char hex[2 * ISA_ID_LEN + 1];
		isa_sha256(buf, len, id);
		isa_id_hex(id, hex);
		CHECK(!strcmp(hex, v[i].hex), "sha256 of %zu bytes ('%.8s'...)\n    expected: %s\n"
		      "    got:      %s (%s)", len, v[i].msg, v[i].hex, hex,
		      isa_sha256_portable ? "portable" : "SHA instructions if any");
		free(buf);
	}
	isa_sha256_portable = 0;
}

/* vm_bind_region: names, access and the alignment rw regions need for atomics. */
static void test_bind(void)
{
	static _Alignas(8) uint8_t buf[64];
	struct vm *vm = vm_new();
	CHECK(vm_bind_region(vm, "a", buf, sizeof buf, ISA_ACC_RW) == 0, "aligned rw region refused");
	CHECK(vm_bind_region(vm, "b", buf + 1, 8, ISA_ACC_RW) == -VM_EINVAL, "misaligned rw region accepted");
	CHECK(vm_bind_region(vm, "c", buf + 1, 8, ISA_ACC_RO) == 0, "misaligned ro region refused");
	CHECK(vm_bind_region(vm, "a", buf, 8, ISA_ACC_RO) == -VM_EEXISTS, "duplicate name accepted");
	CHECK(vm_bind_region(vm, "out", buf, 8, ISA_ACC_RO) == -VM_EINVAL, "reserved name accepted");
	CHECK(vm_bind_region(vm, "d", buf, 8, 2) == -VM_EINVAL, "write-only access accepted");
	CHECK(vm_bind_region(vm, "e", NULL, 8, ISA_ACC_RO) == -VM_EINVAL, "NULL base accepted");
	vm_free(vm);
}

int main(void)
{
	test_bind();
	test_opcodes();
	test_header();
	test_sections();
	test_counts();
	test_names();
	test_hooks_exports_lines();
	test_round_trip();
	test_truncation();
	test_verify();
	test_link();
	test_sha256();
	printf("%u passed, %u failed\n", n_pass, n_fail);
	return n_fail != 0;
}
