/* casetest.c: the table-driven text case runner (`casetest [--list] DIR|FILE...`).
 *
 * Each *.case file under the given directories is one case: an assembly program, its inputs and
 * what must come out (result, output, trap, error message, region contents).  Every case that
 * assembles is also disassembled and reassembled, which must give the same bytes, and is run
 * twice on every engine, each time with a fresh vm and fresh region memory, so that state
 * leaking between runs or engines disagreeing shows up as a failure.
 *
 * Case file format: lines before the first section are blank or '#' comments; a section starts
 * with a line "-- NAME [value]" and runs up to the next one.  A section's value is the rest of
 * its header line or, when that is empty, its body with trailing whitespace removed.
 *
 *   -- asm                       source (required); diagnostics count lines of the case file
 *   -- entry NAME                function to run: an export, else a function name (main)
 *   -- args 1 -2 0x10            integer arguments
 *   -- argbytes "a\0b"           the args region, C escapes, optional quotes
 *   -- region NAME SIZE ro|rw [init]   zero-filled memory bound by name (init: C escapes)
 *   -- fuel N                    fuel budget (default: the vm's)
 *   -- outcap N                  output limit (default 4096)
 *   -- result N                  the entry must return N
 *   -- output "bytes"            the output must be exactly these bytes (C escapes)
 *   -- trap KIND FUNC PC [CODE]  the run must stop with this trap (kind lower case)
 *   -- error                     asm_assemble's diagnostics or vm_load's message, exactly
 *   -- region-after NAME "bytes" the region must start with these bytes after the run
 *
 * With --all-ops, one more check fails unless every opcode of ops.def appears in some case
 * that assembled, so a new opcode cannot land without a case.  --list prints the case files.
 * Prints one block per failing case and, last, "N passed, N failed"; exits 1 on any failure.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "asm.h"
#include "isa.h"
#include "vm.h"

#define DEFAULT_OUTCAP 4096
#define MAX_CASE_BYTES (1u << 20)  /* a case is a small text file; refuse anything huge */
#define MAX_REGION     (64u << 20) /* region sizes a case may ask for */
#define SHOW_BYTES     160         /* bytes shown when printing a mismatch */
#define RUNS_PER_ENGINE 2          /* the second run, on a fresh vm, catches leaked state */
#define OUT_POISON     0xa5        /* fills the output buffer so an unfilled gap shows */

/* ---- engines ----
 * Every case runs on every engine and must give the expected results on each, which makes the
 * runner differential once a JIT exists: add a row whose new_vm selects it. */
struct engine {
	const char *name;
	struct vm *(*new_vm)(void);
};
static struct vm *new_vm_engine(int engine)
{
	struct vm *vm = vm_new();
	if (vm && vm_set_engine(vm, engine) != 0) {
		vm_free(vm);
		return NULL;
	}
	return vm;
}
static struct vm *new_vm_interp(void) { return new_vm_engine(VM_ENGINE_INTERP); }
/* VM_ENGINE_JIT: a segment the JIT cannot compile fails vm_load, so no case passes quietly on
 * the interpreter.  Where there is no JIT (not x86-64 Linux) the row is skipped. */
static struct vm *new_vm_jit(void) { return new_vm_engine(VM_ENGINE_JIT); }
static const struct engine engines[] = {
	{ "interp", new_vm_interp },
#if defined(__x86_64__) && defined(__linux__)
	{ "jit", new_vm_jit },
#endif
};
#define N_ENGINES (sizeof engines / sizeof engines[0])

/* ---- hooks every vm offers, so cases can test hcall and the 'hook' trap ---- */
static int64_t h_add(struct vm_hook_ctx *c, int64_t a, int64_t b)
{
	(void)c;
	return (int64_t)((uint64_t)a + (uint64_t)b);
}
static int64_t h_sum8(struct vm_hook_ctx *c, int64_t a, int64_t b, int64_t d, int64_t e,
                      int64_t f, int64_t g, int64_t h, int64_t i)
{
	(void)c;
	/* weighted, so arguments passed in the wrong order give a different sum */
	return a + 2 * b + 3 * d + 4 * e + 5 * f + 6 * g + 7 * h + 8 * i;
}
static int32_t h_neg32(struct vm_hook_ctx *c, int32_t x)
{
	(void)c;
	return (int32_t)(0u - (uint32_t)x);
}
static uint32_t h_inc32u(struct vm_hook_ctx *c, uint32_t x)
{
	(void)c;
	return x + 1;
}
static void h_void(struct vm_hook_ctx *c, int64_t x)
{
	(void)c;
	(void)x;
}
static int64_t h_fail(struct vm_hook_ctx *c)
{
	vm_hook_fail(c, "t_fail: asked to fail");
	return 0;
}
/* t_peek(region, off): the byte at region[off] through vm_hook_mem; fails when out of bounds. */
static int64_t h_peek(struct vm_hook_ctx *c, int64_t region, int64_t off)
{
	const uint8_t *p = vm_hook_mem(c, (unsigned)region, (uint64_t)off, 1, 0);
	if (!p) {
		vm_hook_fail(c, "t_peek: region %" PRId64 " offset %" PRId64 " out of bounds", region,
		             off);
		return 0;
	}
	return *p;
}

static const struct {
	const char *name, *sig;
	void *fn;
} hooks[] = {
	{ "t_add", "ll:l", (void *)h_add },
	{ "t_sum8", "llllllll:l", (void *)h_sum8 },
	{ "t_neg32", "i:i", (void *)h_neg32 },
	{ "t_inc32u", "I:I", (void *)h_inc32u },
	{ "t_void", "l:v", (void *)h_void },
	{ "t_fail", ":l", (void *)h_fail },
	{ "t_peek", "ll:l", (void *)h_peek },
};

/* opcodes found in the segments of the cases run so far (--all-ops) */
static unsigned char op_seen[OP_COUNT];

/* ---- growable byte buffer ---- */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			perror("casetest");
			exit(2);
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;  /* always NUL-terminated, so text buffers can be used as strings */
}

static void buf_addc(struct buf *b, uint8_t c) { buf_add(b, &c, 1); }

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		perror("casetest");
		exit(2);
	}
	return p;
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* ---- one case ---- */
struct region_spec {
	char *name;
	uint64_t size;
	unsigned access;
	struct buf init;
};

struct region_after {
	char *name;
	struct buf bytes;
};

struct tcase {
	const char *path;
	char *text;                /* the file, NUL-terminated */
	const char *asm_src;       /* points into text */
	size_t asm_len;
	unsigned asm_line;         /* line of the case file holding the first line of asm_src */
	char *entry;
	int64_t *args;
	unsigned n_args;
	int has_argbytes;
	struct buf argbytes;
	struct region_spec *regions;
	unsigned n_regions;
	uint64_t fuel, outcap;
	int has_result;
	int64_t result;
	int has_output;
	struct buf output;
	int has_trap, has_trap_code;
	char *trap_kind, *trap_func;
	uint32_t trap_pc, trap_code;
	char *error;
	struct region_after *after;
	unsigned n_after;
};

static void case_free(struct tcase *c)
{
	free(c->text);
	free(c->entry);
	free(c->args);
	free(c->argbytes.p);
	for (unsigned i = 0; i < c->n_regions; i++) {
		free(c->regions[i].name);
		free(c->regions[i].init.p);
	}
	free(c->regions);
	free(c->output.p);
	free(c->trap_kind);
	free(c->trap_func);
	free(c->error);
	for (unsigned i = 0; i < c->n_after; i++) {
		free(c->after[i].name);
		free(c->after[i].bytes.p);
	}
	free(c->after);
}

/* ---- reporting: the first complaint about a case prints its header line ---- */
struct report {
	const char *path;
	const char *where;         /* "", or the engine and run */
	int failed;
};

static void fail(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct report *r, const char *fmt, ...)
{
	if (!r->failed)
		printf("FAIL %s%s\n", r->path, r->where);
	r->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	printf("  ");
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* Print bytes as a C string literal, cut after SHOW_BYTES. */
static void show_bytes(const char *label, const uint8_t *p, size_t n)
{
	printf("  %-9s \"", label);
	for (size_t i = 0; i < n && i < SHOW_BYTES; i++) {
		uint8_t c = p[i];
		switch (c) {
		case '\n': printf("\\n"); break;
		case '\t': printf("\\t"); break;
		case '\r': printf("\\r"); break;
		case '\\': printf("\\\\"); break;
		case '"': printf("\\\""); break;
		default:
			/* \x escapes are greedy in C; octal keeps the output re-readable */
			if (c < ' ' || c > '~')
				printf("\\%03o", c);
			else
				putchar(c);
		}
	}
	printf("\"%s (%zu bytes)\n", n > SHOW_BYTES ? "..." : "", n);
}

static void show_text(const char *label, const char *s)
{
	printf("  %s\n", label);
	for (const char *line = s; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		printf("    | %.*s\n", (int)n, line);
		line += n + (nl != NULL);
	}
}

/* ---- parsing values ---- */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

/* Decimal or 0x hex, optionally negative; anything from INT64_MIN to UINT64_MAX (taken as its
 * two's complement bit pattern), and 'c' character literals. */
static int parse_i64(const char *s, int64_t *v)
{
	uint64_t u;
	if (s[0] == '\'' && s[1] && s[1] != '\\' && s[2] == '\'' && !s[3]) {
		*v = (unsigned char)s[1];
		return 0;
	}
	if (s[0] == '-') {
		if (parse_u64(s + 1, &u) != 0 || u > (uint64_t)INT64_MAX + 1)
			return -1;
		*v = (int64_t)(0 - u);
		return 0;
	}
	if (parse_u64(s, &u) != 0)
		return -1;
	*v = (int64_t)u;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode a C-escaped string, optionally in double quotes, into out.  Returns 0, or -1 with a
 * reason in *why. */
static int unescape(const char *s, struct buf *out, const char **why)
{
	size_t n = strlen(s);
	if (n && s[0] == '"') {
		/* the first unescaped quote after the opening one must end the value */
		size_t i = 1;
		while (i < n && s[i] != '"')
			i += s[i] == '\\' ? 2 : 1;
		if (i != n - 1) {
			*why = i < n ? "text after the closing quote" : "unterminated quoted string";
			return -1;
		}
		s++;
		n -= 2;
	}
	buf_add(out, "", 0);  /* an empty value still gets a buffer */
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			buf_addc(out, (uint8_t)s[i]);
			continue;
		}
		if (++i == n) {
			*why = "backslash at the end of a string";
			return -1;
		}
		char c = s[i];
		switch (c) {
		case 'n': buf_addc(out, '\n'); break;
		case 't': buf_addc(out, '\t'); break;
		case 'r': buf_addc(out, '\r'); break;
		case 'a': buf_addc(out, '\a'); break;
		case 'b': buf_addc(out, '\b'); break;
		case 'f': buf_addc(out, '\f'); break;
		case 'v': buf_addc(out, '\v'); break;
		case 'e': buf_addc(out, 27); break;
		case '\\': case '"': case '\'': case '?': buf_addc(out, (uint8_t)c); break;
		case 'x': {
			int v = 0, d = 0;
			while (d < 2 && i + 1 < n && hexval(s[i + 1]) >= 0)
				v = v * 16 + hexval(s[++i]), d++;
			if (!d) {
				*why = "\\x without hex digits";
				return -1;
			}
			buf_addc(out, (uint8_t)v);
			break;
		}
		default:
			if (c >= '0' && c <= '7') {
				int v = c - '0', d = 1;
				while (d < 3 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7')
					v = v * 8 + (s[++i] - '0'), d++;
				if (v > 255) {
					*why = "octal escape above \\377";
					return -1;
				}
				buf_addc(out, (uint8_t)v);
				break;
			}
			*why = "unknown escape";
			return -1;
		}
	}
	return 0;
}

/* Split off the next space-separated token of *s (modified in place); NULL at the end. */
static char *token(char **s)
{
	char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	char *t = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	if (*p)
		*p++ = 0;
	*s = p;
	return t;
}

static void rstrip(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
}

static int read_file(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	struct buf b = { 0 };
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		buf_add(&b, chunk, n);
		if (b.len > MAX_CASE_BYTES) {
			fclose(f);
			free(b.p);
			errno = EFBIG;
			return -1;
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(b.p);
		errno = EIO;
		return -1;
	}
	buf_add(&b, "", 0);
	*text = (char *)b.p;
	*len = b.len;
	return 0;
}

/* Parse one section.  name and rest point into the header line, body into the text (both
 * NUL-terminated copies the caller owns).  Returns 0 or -1 after reporting. */
static int section(struct tcase *c, struct report *r, unsigned line, char *name, char *rest,
                   char *body)
{
	/* single-value sections: the header's rest, else the body */
	char *val = *rest ? rest : body;
	const char *why = NULL;
	rstrip(val);
	if (!strcmp(name, "entry")) {
		if (c->entry)
			goto dup;
		char *t = token(&val);
		if (!t || token(&val))
			goto bad;
		c->entry = strdup(t);
		return 0;
	}
	if (!strcmp(name, "args")) {
		if (c->args)
			goto dup;
		c->args = xmalloc(sizeof *c->args * (strlen(val) / 2 + 1));
		for (char *t; (t = token(&val));)
			if (parse_i64(t, &c->args[c->n_args++]) != 0) {
				why = "not an integer";
				goto bad;
			}
		return 0;
	}
	if (!strcmp(name, "argbytes")) {
		if (c->has_argbytes)
			goto dup;
		c->has_argbytes = 1;
		if (unescape(val, &c->argbytes, &why) != 0)
			goto bad;
		return 0;
	}
	if (!strcmp(name, "region")) {
		struct region_spec rs = { 0 };
		char *nm = token(&val), *sz = token(&val), *acc = token(&val);
		while (*val == ' ' || *val == '\t')
			val++;
		if (!nm || !sz || !acc || parse_u64(sz, &rs.size) != 0 || rs.size > MAX_REGION)
			goto bad;
		if (!strcmp(acc, "ro"))
			rs.access = ISA_ACC_RO;
		else if (!strcmp(acc, "rw"))
			rs.access = ISA_ACC_RW;
		else
			goto bad;
		if (unescape(val, &rs.init, &why) != 0 || rs.init.len > rs.size) {
			free(rs.init.p);
			if (!why)
				why = "init string longer than the region";
			goto bad;
		}
		void *p = realloc(c->regions, sizeof *c->regions * (c->n_regions + 1));
		if (!p) {
			perror("casetest");
			exit(2);
		}
		c->regions = p;
		rs.name = strdup(nm);
		c->regions[c->n_regions++] = rs;
		return 0;
	}
	if (!strcmp(name, "fuel") || !strcmp(name, "outcap")) {
		uint64_t v;
		if (parse_u64(val, &v) != 0 || (name[0] == 'o' && v > MAX_REGION))
			goto bad;
		*(name[0] == 'f' ? &c->fuel : &c->outcap) = v;
		return 0;
	}
	if (!strcmp(name, "result")) {
		if (c->has_result)
			goto dup;
		c->has_result = 1;
		if (parse_i64(val, &c->result) != 0)
			goto bad;
		return 0;
	}
	if (!strcmp(name, "output")) {
		if (c->has_output)
			goto dup;
		c->has_output = 1;
		if (unescape(val, &c->output, &why) != 0)
			goto bad;
		return 0;
	}
	if (!strcmp(name, "trap")) {
		if (c->has_trap)
			goto dup;
		c->has_trap = 1;
		char *k = token(&val), *f = token(&val), *pc = token(&val), *code = token(&val);
		uint64_t v;
		if (!k || !f || !pc || token(&val) || parse_u64(pc, &v) != 0 || v > UINT32_MAX)
			goto bad;
		c->trap_kind = strdup(k);
		c->trap_func = strdup(f);
		c->trap_pc = (uint32_t)v;
		if (code) {
			if (parse_u64(code, &v) != 0 || v > UINT32_MAX)
				goto bad;
			c->has_trap_code = 1;
			c->trap_code = (uint32_t)v;
		}
		return 0;
	}
	if (!strcmp(name, "error")) {
		if (c->error)
			goto dup;
		c->error = strdup(val);
		return 0;
	}
	if (!strcmp(name, "region-after")) {
		char *nm = token(&val);
		while (*val == ' ' || *val == '\t')
			val++;
		struct region_after ra = { 0 };
		if (!nm || unescape(val, &ra.bytes, &why) != 0) {
			free(ra.bytes.p);
			goto bad;
		}
		void *p = realloc(c->after, sizeof *c->after * (c->n_after + 1));
		if (!p) {
			perror("casetest");
			exit(2);
		}
		c->after = p;
		ra.name = strdup(nm);
		c->after[c->n_after++] = ra;
		return 0;
	}
	fail(r, "line %u: unknown section '-- %s'", line, name);
	return -1;
dup:
	fail(r, "line %u: section '-- %s' given twice", line, name);
	return -1;
bad:
	fail(r, "line %u: bad value for '-- %s'%s%s", line, name, why ? ": " : "", why ? why : "");
	return -1;
}

static int parse_case(struct tcase *c, struct report *r)
{
	size_t len;
	c->outcap = DEFAULT_OUTCAP;
	if (read_file(c->path, &c->text, &len) != 0) {
		fail(r, "cannot read: %s", strerror(errno));
		return -1;
	}
	if (strlen(c->text) != len) {
		fail(r, "NUL byte in the case file");
		return -1;
	}
	/* Walk the lines; a section header is a line starting with "-- ". */
	char *p = c->text;
	unsigned line = 1;
	char *hdr = NULL;          /* current section's header line (copy) */
	unsigned hdr_line = 0;
	char *body = NULL;         /* start of the current section's body in text */
	int rc = 0;
	for (;;) {
		char *nl = strchr(p, '\n');
		int end = *p == 0;
		int is_hdr = !end && !strncmp(p, "-- ", 3);
		if ((end || is_hdr) && hdr) {
			/* finish the previous section */
			char *b = xstrndup(body, (size_t)(p - body));
			char *rest = hdr, *name = token(&rest);
			if (!strcmp(name, "asm")) {
				if (!c->asm_src) {
					c->asm_src = body;
					c->asm_len = (size_t)(p - body);
					c->asm_line = hdr_line + 1;
				} else {
					fail(r, "line %u: section '-- asm' given twice", hdr_line);
					rc = -1;
				}
			} else if (section(c, r, hdr_line, name, rest, b) != 0) {
				rc = -1;
			}
			free(b);
			free(hdr);
			hdr = NULL;
		}
		if (end || rc)
			break;
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (is_hdr) {
			hdr = xstrndup(p + 3, n - 3);
			rstrip(hdr);
			hdr_line = line;
			if (!*hdr) {
				fail(r, "line %u: section header without a name", line);
				rc = -1;
			}
			body = p + n + (nl != NULL);
		} else if (!hdr_line) {
			size_t i = 0;
			while (i < n && isspace((unsigned char)p[i]))
				i++;
			if (i < n && p[i] != '#') {
				fail(r, "line %u: text before the first '-- section' (comments start with #)",
				     line);
				rc = -1;
			}
		}
		p += n + (nl != NULL);
		line++;
	}
	free(hdr);
	if (rc)
		return -1;
	if (!c->asm_src) {
		fail(r, "no '-- asm' section");
		return -1;
	}
	int n_expect = c->has_result + c->has_trap + (c->error != NULL);
	if (n_expect != 1) {
		fail(r, "needs exactly one of '-- result', '-- trap', '-- error' (has %d)", n_expect);
		return -1;
	}
	if (c->error && (c->has_output || c->n_after)) {
		fail(r, "'-- error' cannot be combined with '-- output' or '-- region-after'");
		return -1;
	}
	for (unsigned i = 0; i < c->n_after; i++) {
		unsigned j = 0;
		while (j < c->n_regions && strcmp(c->regions[j].name, c->after[i].name))
			j++;
		if (j == c->n_regions) {
			fail(r, "'-- region-after %s': no such '-- region'", c->after[i].name);
			return -1;
		}
		if (c->after[i].bytes.len > c->regions[j].size) {
			fail(r, "'-- region-after %s': longer than the region", c->after[i].name);
			return -1;
		}
	}
	return 0;
}

/* ---- running ---- */

/* Assemble the case's source.  The source is preceded by blank lines so that diagnostics and
 * the line table count lines of the case file itself: an editor jumps straight to them. */
static int assemble(const struct tcase *c, const char *file, uint8_t **seg, size_t *seg_len,
                    char **diags)
{
	struct buf src = { 0 };
	for (unsigned i = 1; i < c->asm_line; i++)
		buf_addc(&src, '\n');
	buf_add(&src, c->asm_src, c->asm_len);
	int n = asm_assemble((const char *)src.p, src.len, file, seg, seg_len, diags);
	free(src.p);
	return n;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* assemble -> disassemble -> assemble must reproduce the bytes exactly. */
static void round_trip(const struct tcase *c, struct report *r, const uint8_t *seg,
                       size_t seg_len)
{
	char *text = NULL, *diags = NULL, err[512];
	uint8_t *seg2 = NULL;
	size_t len2 = 0;
	if (asm_disassemble(seg, seg_len, &text, err, sizeof err) != 0) {
		fail(r, "round trip: asm_disassemble failed: %s", err);
		return;
	}
	int n = asm_assemble(text, strlen(text), base_name(c->path), &seg2, &len2, &diags);
	if (n != 0) {
		fail(r, "round trip: the disassembly does not assemble (%d errors)", n);
		show_text("diagnostics:", diags ? diags : "");
		show_text("disassembly:", text);
	} else if (len2 != seg_len || memcmp(seg, seg2, seg_len) != 0) {
		size_t i = 0;
		while (i < seg_len && i < len2 && seg[i] == seg2[i])
			i++;
		fail(r, "round trip: reassembled segment differs at byte %zu (%zu bytes, then %zu)", i,
		     seg_len, len2);
		show_text("disassembly:", text);
	}
	free(text);
	free(diags);
	free(seg2);
}

/* Compare an error message with the expected text, ignoring trailing whitespace. */
static void check_error(const struct tcase *c, struct report *r, const char *what,
                        const char *msg)
{
	char *got = strdup(msg ? msg : "");
	rstrip(got);
	if (strcmp(got, c->error) != 0) {
		fail(r, "%s message differs", what);
		show_text("expected:", c->error);
		show_text("got:", got);
	}
	free(got);
}

static int find_entry(const struct vm_prog *prog, const char *name, unsigned *fi)
{
	unsigned n_args;
	int e = vm_prog_entry(prog, name, &n_args);
	if (e >= 0) {
		*fi = (unsigned)e;
		return 0;
	}
	/* vm_run takes any function index, so cases need not export what they run */
	const struct isa_seg *s = vm_prog_seg(prog);
	for (uint32_t i = 0; i < s->n_funcs; i++)
		if (!strcmp(s->funcs[i].name, name)) {
			*fi = i;
			return 0;
		}
	return -1;
}

static void lower_copy(char *dst, size_t n, const char *src)
{
	size_t i = 0;
	for (; i + 1 < n && src[i]; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = 0;
}

/* One run on a fresh vm: bind, load, run, compare. */
static void run_once(const struct tcase *c, struct report *r, const struct engine *eng,
                     const uint8_t *seg, size_t seg_len)
{
	char err[1024];
	struct vm_prog *prog = NULL;
	uint8_t **mem = calloc(c->n_regions + 1, sizeof *mem);
	uint8_t *out = xmalloc(c->outcap);
	struct vm *vm = eng->new_vm();
	if (!vm || !mem) {
		fail(r, "%s: cannot create a vm", eng->name);
		goto done;
	}
	for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
		int e = vm_bind_hook(vm, hooks[i].name, hooks[i].fn, hooks[i].sig, NULL);
		if (e != 0) {
			fail(r, "vm_bind_hook(%s, \"%s\"): %s", hooks[i].name, hooks[i].sig,
			     vm_strerror(e));
			goto done;
		}
	}
	for (unsigned i = 0; i < c->n_regions; i++) {
		const struct region_spec *rs = &c->regions[i];
		/* exactly the size asked for, so a sanitizer catches any access past the end */
		mem[i] = calloc(1, rs->size ? rs->size : 1);
		if (!mem[i]) {
			fail(r, "out of memory for region %s", rs->name);
			goto done;
		}
		memcpy(mem[i], rs->init.p, rs->init.len);
		int e = vm_bind_region(vm, rs->name, mem[i], rs->size, rs->access);
		if (e != 0) {
			fail(r, "vm_bind_region(%s): %s", rs->name, vm_strerror(e));
			goto done;
		}
	}
	int e = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
	if (e != 0) {
		if (c->error)
			check_error(c, r, "vm_load", err);
		else
			fail(r, "vm_load failed (%s): %s", vm_strerror(e), err);
		goto done;
	}
	if (c->error) {
		fail(r, "expected an error, but the segment assembled and loaded");
		show_text("expected:", c->error);
		goto done;
	}
	unsigned fi;
	const char *entry = c->entry ? c->entry : "main";
	if (find_entry(prog, entry, &fi) != 0) {
		fail(r, "no function or export named '%s'", entry);
		goto done;
	}
	memset(out, OUT_POISON, c->outcap);
	struct vm_run_opts opts = {
		.args = c->argbytes.p, .args_len = c->argbytes.len,
		.out = out, .out_cap = c->outcap, .fuel = c->fuel,
	};
	struct vm_result res;
	memset(&res, 0x5a, sizeof res);  /* whatever vm_run leaves unset must not look right */
	e = vm_run(prog, fi, c->args, c->n_args, &opts, &res);
	if (e != 0 && e != -VM_ETRAP) {
		fail(r, "vm_run: %s", vm_strerror(e));
		goto done;
	}
	const struct isa_seg *s = vm_prog_seg(prog);
	if (e == -VM_ETRAP && res.trap.kind == ISA_TRAP_NONE) {
		fail(r, "vm_run returned -VM_ETRAP with trap kind none");
		goto done;
	}
	if (e == 0 && res.trap.kind != ISA_TRAP_NONE) {
		fail(r, "vm_run returned 0 with trap kind %s", isa_trap_name(res.trap.kind));
		goto done;
	}
	if (c->has_trap) {
		if (e == 0) {
			fail(r, "expected trap %s in %s at pc %u, but the run returned %" PRId64
			     " (0x%" PRIx64 ")", c->trap_kind, c->trap_func, c->trap_pc, res.value,
			     (uint64_t)res.value);
		} else {
			char kind[32], buf[512];
			lower_copy(kind, sizeof kind, isa_trap_name(res.trap.kind));
			const char *fname = res.trap.func < s->n_funcs ? s->funcs[res.trap.func].name : "?";
			if (strcmp(kind, c->trap_kind) || strcmp(fname, c->trap_func) ||
			    res.trap.pc != c->trap_pc || (c->has_trap_code && res.trap.code != c->trap_code)) {
				fail(r, "trap differs");
				printf("  expected: %s %s %u", c->trap_kind, c->trap_func, c->trap_pc);
				if (c->has_trap_code)
					printf(" %u", c->trap_code);
				printf("\n  got:      %s %s %u", kind, fname, res.trap.pc);
				if (c->has_trap_code)
					printf(" %u", res.trap.code);
				printf("   (%s)\n", vm_trap_str(prog, &res.trap, buf, sizeof buf));
			}
		}
	} else if (e != 0) {
		char buf[512];
		fail(r, "expected result %" PRId64 ", got %s", c->result,
		     vm_trap_str(prog, &res.trap, buf, sizeof buf));
	} else if (res.value != c->result) {
		fail(r, "result differs");
		printf("  expected: %" PRId64 " (0x%" PRIx64 ")\n", c->result, (uint64_t)c->result);
		printf("  got:      %" PRId64 " (0x%" PRIx64 ")\n", res.value, (uint64_t)res.value);
	}
	if (res.out_len > c->outcap) {
		fail(r, "out_len %" PRIu64 " exceeds the output limit %" PRIu64, res.out_len,
		     c->outcap);
	} else if (c->has_output && (res.out_len != c->output.len ||
	                             memcmp(out, c->output.p, c->output.len) != 0)) {
		size_t i = 0;
		while (i < res.out_len && i < c->output.len && out[i] == c->output.p[i])
			i++;
		fail(r, "output differs at byte %zu", i);
		show_bytes("expected:", c->output.p, c->output.len);
		show_bytes("got:", out, res.out_len);
	}
	for (unsigned i = 0; i < c->n_after; i++) {
		const struct region_after *ra = &c->after[i];
		unsigned j = 0;
		while (strcmp(c->regions[j].name, ra->name))
			j++;
		if (memcmp(mem[j], ra->bytes.p, ra->bytes.len) != 0) {
			size_t k = 0;
			while (mem[j][k] == ra->bytes.p[k])
				k++;
			fail(r, "region %s differs at byte %zu after the run", ra->name, k);
			show_bytes("expected:", ra->bytes.p, ra->bytes.len);
			show_bytes("got:", mem[j], ra->bytes.len);
		}
	}
done:
	vm_prog_free(prog);
	if (vm)
		vm_free(vm);
	for (unsigned i = 0; mem && i < c->n_regions; i++)
		free(mem[i]);
	free(mem);
	free(out);
}

/* Mark the opcodes of every function of seg in op_seen. */
static void note_ops(const uint8_t *seg, size_t seg_len)
{
	struct isa_seg *s;
	char err[256];
	if (isa_seg_decode(seg, seg_len, &s, err, sizeof err) != 0)
		return;  /* vm_load reports it */
	for (uint32_t f = 0; f < s->n_funcs; f++) {
		struct isa_insn in;
		for (uint32_t pc = 0; pc < s->funcs[f].code_len; pc += in.len) {
			if (isa_decode(s->funcs[f].code, s->funcs[f].code_len, pc, &in) != 0)
				break;
			op_seen[in.op] = 1;
		}
	}
	isa_seg_free(s);
}

/* Returns 1 when the case passed. */
static int run_case(const char *path)
{
	struct tcase c = { .path = path };
	struct report r = { .path = path, .where = "" };
	uint8_t *seg = NULL;
	size_t seg_len = 0;
	char *diags = NULL;
	if (parse_case(&c, &r) != 0)
		goto done;
	int n_err = assemble(&c, base_name(path), &seg, &seg_len, &diags);
	if (n_err != 0) {
		if (c.error)
			check_error(&c, &r, "asm_assemble", diags);
		else {
			fail(&r, "asm_assemble: %d errors", n_err);
			show_text("diagnostics:", diags ? diags : "");
		}
		goto done;
	}
	note_ops(seg, seg_len);
	round_trip(&c, &r, seg, seg_len);
	for (size_t e = 0; e < N_ENGINES && !r.failed; e++)
		for (int run = 1; run <= RUNS_PER_ENGINE && !r.failed; run++) {
			char where[64];
			snprintf(where, sizeof where, " [%s, run %d]", engines[e].name, run);
			r.where = where;
			run_once(&c, &r, &engines[e], seg, seg_len);
			r.where = "";
		}
done:
	free(seg);
	free(diags);
	case_free(&c);
	return !r.failed;
}

/* ---- finding cases ---- */
struct list {
	char **v;
	size_t n, cap;
};

static void list_add(struct list *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		char **v = realloc(l->v, l->cap * sizeof *v);
		if (!v) {
			perror("casetest");
			exit(2);
		}
		l->v = v;
	}
	l->v[l->n++] = s;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

/* Collect *.case files under dir, depth first in name order, so runs are reproducible. */
static int collect(const char *path, struct list *l, int top)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "casetest: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (top || has_suffix(path, ".case"))
			list_add(l, strdup(path));
		return 0;
	}
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "casetest: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		if (nm[0] != '.' && rc == 0) {
			size_t len = strlen(path) + strlen(nm) + 2;
			char *sub = xmalloc(len);
			snprintf(sub, len, "%s/%s", path, nm);
			rc = collect(sub, l, 0);
			free(sub);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

int main(int argc, char **argv)
{
	struct list cases = { 0 };
	int list_only = 0, all_ops = 0, n_paths = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list")) {
			list_only = 1;
		} else if (!strcmp(argv[i], "--all-ops")) {
			all_ops = 1;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: casetest [--list] [--all-ops] DIR|FILE...\n");
			return 2;
		} else {
			n_paths++;
			if (collect(argv[i], &cases, 1) != 0)
				return 2;
		}
	}
	if (!n_paths) {
		fprintf(stderr, "usage: casetest [--list] [--all-ops] DIR|FILE...\n");
		return 2;
	}
	unsigned passed = 0, failed = 0;
	for (size_t i = 0; i < cases.n; i++) {
		if (list_only)
			printf("%s\n", cases.v[i]);
		else if (run_case(cases.v[i]))
			passed++;
		else
			failed++;
		fflush(stdout);
		free(cases.v[i]);
	}
	free(cases.v);
	if (list_only)
		return 0;
	if (all_ops) {
		int missing = 0;
		for (int op = 0; op < OP_COUNT; op++)
			if (!op_seen[op]) {
				if (!missing++)
					printf("FAIL --all-ops: opcodes no case assembles:");
				printf(" %s", isa_op_info[op].name);
			}
		if (missing) {
			printf("\n");
			failed++;
		} else {
			passed++;
		}
	}
	/* an empty directory is a mistake, not a success */
	if (cases.n == 0) {
		printf("no cases found\n");
		failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed != 0;
}
