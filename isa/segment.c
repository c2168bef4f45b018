/* segment.c: code segment bytes <-> struct isa_seg.
 *
 * The decoder is the first thing that touches bytes from the network: every read goes through
 * a bounds-checked cursor, every count is checked against the bytes that remain before anything
 * is allocated, and the first error stops decoding with a message that names the field.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"

/* ---- reading ---- */

struct rd {
	const uint8_t *p, *end;
	char *err;
	size_t errlen;
	int failed;
};

static void rd_fail(struct rd *r, const char *fmt, ...)
{
	if (r->failed)
		return;
	r->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	if (r->err && r->errlen)
		vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

static size_t rd_left(const struct rd *r) { return (size_t)(r->end - r->p); }

static const uint8_t *rd_take(struct rd *r, size_t n, const char *what)
{
	if (r->failed)
		return NULL;
	if (n > rd_left(r)) {
		rd_fail(r, "segment truncated: %s needs %zu bytes, %zu left", what, n, rd_left(r));
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

static uint8_t rd_u8(struct rd *r, const char *what)
{
	const uint8_t *p = rd_take(r, 1, what);
	return p ? p[0] : 0;
}
static uint16_t rd_u16(struct rd *r, const char *what)
{
	const uint8_t *p = rd_take(r, 2, what);
	return p ? isa_get16(p) : 0;
}
static uint32_t rd_u32(struct rd *r, const char *what)
{
	const uint8_t *p = rd_take(r, 4, what);
	return p ? isa_get32(p) : 0;
}

int isa_name_check(const char *name, size_t len)
{
	if (len == 0 || len > ISA_MAX_NAME)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return -1;
	return 0;
}

int isa_sig_check(const char *sig)
{
	const char *colon = strchr(sig, ':');
	if (!colon || colon - sig > ISA_MAX_HOOK_ARGS)
		return -1;
	for (const char *p = sig; p < colon; p++)
		if (!strchr("iIlL", *p))
			return -1;
	if (!colon[1] || colon[2] || !strchr("iIlLv", colon[1]))
		return -1;
	return (int)(colon - sig);
}

/* A length-prefixed (u8) string, copied and NUL-terminated. */
static char *rd_str(struct rd *r, const char *what)
{
	uint8_t n = rd_u8(r, what);
	const uint8_t *p = rd_take(r, n, what);
	if (!p)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s) {
		rd_fail(r, "out of memory");
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static char *rd_name(struct rd *r, const char *what, uint32_t i)
{
	char *s = rd_str(r, what);
	if (s && isa_name_check(s, strlen(s)) != 0) {
		rd_fail(r, "%s %u: name must be 1-%d printable characters without spaces", what, i,
		        ISA_MAX_NAME);
	}
	return s;
}

/* Allocate n elements after checking that n records of at least min_rec bytes fit in what is
 * left, so a forged count cannot make us allocate more than the input justifies. */
static void *rd_array(struct rd *r, uint32_t n, size_t elem, size_t min_rec, const char *what)
{
	if (r->failed || n == 0)
		return NULL;
	if ((uint64_t)n * min_rec > rd_left(r)) {
		rd_fail(r, "%s: count %u does not fit in the %zu bytes left", what, n, rd_left(r));
		return NULL;
	}
	void *a = calloc(n, elem);
	if (!a)
		rd_fail(r, "out of memory");
	return a;
}

static void sec_regions(struct rd *r, struct isa_seg *s)
{
	uint32_t n = rd_u16(r, "region count");
	if (n > ISA_MAX_REGIONS)
		return rd_fail(r, "region imports: %u, at most %d", n, ISA_MAX_REGIONS);
	s->regions = rd_array(r, n, sizeof *s->regions, 2, "region imports");
	if (!s->regions)
		return;
	s->n_regions = n;
	for (uint32_t i = 0; i < n && !r->failed; i++) {
		uint8_t acc = rd_u8(r, "region access");
		if (!r->failed && acc != ISA_ACC_RO && acc != ISA_ACC_RW)
			return rd_fail(r, "region import %u: access %u is neither ro (1) nor rw (3)", i, acc);
		s->regions[i].access = acc;
		s->regions[i].name = rd_name(r, "region import", i);
	}
}

static void sec_hooks(struct rd *r, struct isa_seg *s)
{
	uint32_t n = rd_u16(r, "hook count");
	if (n > ISA_MAX_HOOKS)
		return rd_fail(r, "hook imports: %u, at most %d", n, ISA_MAX_HOOKS);
	s->hooks = rd_array(r, n, sizeof *s->hooks, 4, "hook imports");
	if (!s->hooks)
		return;
	s->n_hooks = n;
	for (uint32_t i = 0; i < n && !r->failed; i++) {
		s->hooks[i].name = rd_name(r, "hook import", i);
		s->hooks[i].sig = rd_str(r, "hook signature");
		if (s->hooks[i].sig && isa_sig_check(s->hooks[i].sig) < 0)
			return rd_fail(r, "hook import %u (%s): bad signature '%s'", i,
			               s->hooks[i].name ? s->hooks[i].name : "?", s->hooks[i].sig);
	}
}

static void sec_funcs(struct rd *r, struct isa_seg *s)
{
	uint32_t n = rd_u16(r, "function count");
	s->funcs = rd_array(r, n, sizeof *s->funcs, 10, "functions");
	if (!s->funcs)
		return;
	s->n_funcs = n;
	for (uint32_t i = 0; i < n && !r->failed; i++) {
		struct isa_func *f = &s->funcs[i];
		f->name = rd_name(r, "function", i);
		f->n_args = rd_u8(r, "argument count");
		f->n_locals = rd_u8(r, "local count");
		f->max_stack = rd_u16(r, "maximum stack");
		f->code_len = rd_u32(r, "code length");
		if (r->failed)
			return;
		if (f->n_args > f->n_locals)
			return rd_fail(r, "function %u (%s): %u arguments but only %u locals", i, f->name,
			               f->n_args, f->n_locals);
		if (f->max_stack > ISA_MAX_STACK)
			return rd_fail(r, "function %u (%s): maximum stack %u, at most %d", i, f->name,
			               f->max_stack, ISA_MAX_STACK);
		if (f->code_len == 0 || f->code_len > ISA_MAX_CODE)
			return rd_fail(r, "function %u (%s): code length %u, must be 1..%u", i, f->name,
			               f->code_len, ISA_MAX_CODE);
		const uint8_t *code = rd_take(r, f->code_len, "function code");
		if (!code)
			return;
		f->code = malloc(f->code_len);
		if (!f->code)
			return rd_fail(r, "out of memory");
		memcpy(f->code, code, f->code_len);
	}
}

static void sec_exports(struct rd *r, struct isa_seg *s)
{
	uint32_t n = rd_u16(r, "export count");
	s->exports = rd_array(r, n, sizeof *s->exports, 4, "exports");
	if (!s->exports)
		return;
	s->n_exports = n;
	for (uint32_t i = 0; i < n && !r->failed; i++) {
		s->exports[i].func = rd_u16(r, "export function");
		s->exports[i].name = rd_name(r, "export", i);
		if (!r->failed && s->exports[i].func >= s->n_funcs)
			return rd_fail(r, "export %u (%s): function %u does not exist (%u functions)", i,
			               s->exports[i].name, s->exports[i].func, s->n_funcs);
		for (uint32_t j = 0; j < i && !r->failed; j++)
			if (strcmp(s->exports[j].name, s->exports[i].name) == 0)
				return rd_fail(r, "export %u: name '%s' exported twice", i, s->exports[i].name);
	}
}

static void sec_const(struct rd *r, struct isa_seg *s)
{
	size_t n = rd_left(r);
	if (n > ISA_MAX_CONST)
		return rd_fail(r, "constant data: %zu bytes, at most %u", n, ISA_MAX_CONST);
	const uint8_t *p = rd_take(r, n, "constant data");
	if (!p || n == 0)
		return;
	s->consts = malloc(n);
	if (!s->consts)
		return rd_fail(r, "out of memory");
	memcpy(s->consts, p, n);
	s->const_len = (uint32_t)n;
}

static void sec_lines(struct rd *r, struct isa_seg *s)
{
	s->source = rd_str(r, "line table source");
	uint32_t n = rd_u32(r, "line count");
	s->lines = rd_array(r, n, sizeof *s->lines, 10, "line table");
	if (!s->lines)
		return;
	s->n_lines = n;
	for (uint32_t i = 0; i < n && !r->failed; i++) {
		struct isa_line *l = &s->lines[i];
		l->func = rd_u16(r, "line function");
		l->pc = rd_u32(r, "line pc");
		l->line = rd_u32(r, "line number");
		if (r->failed)
			return;
		if (l->func >= s->n_funcs || l->pc >= s->funcs[l->func].code_len)
			return rd_fail(r, "line table entry %u: function %u pc %u is outside the code", i,
			               l->func, l->pc);
		if (i && (l->func < l[-1].func || (l->func == l[-1].func && l->pc <= l[-1].pc)))
			return rd_fail(r, "line table entry %u: not sorted by function and pc", i);
	}
}

int isa_seg_decode(const void *buf, size_t len, struct isa_seg **out, char *err, size_t errlen)
{
	struct rd r = { .p = buf, .end = (const uint8_t *)buf + len, .err = err, .errlen = errlen };
	struct isa_seg *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint32_t magic = rd_u32(&r, "header");
	uint16_t version = rd_u16(&r, "header");
	uint16_t flags = rd_u16(&r, "header");
	uint32_t total = rd_u32(&r, "header");
	uint32_t zero = rd_u32(&r, "header");
	if (!r.failed && magic != ISA_MAGIC)
		rd_fail(&r, "not a code segment (bad magic 0x%08x)", magic);
	if (!r.failed && version != ISA_VERSION)
		rd_fail(&r, "segment version %u, this VM reads version %d", version, ISA_VERSION);
	if (!r.failed && (flags || zero))
		rd_fail(&r, "segment header: reserved fields are not zero");
	if (!r.failed && total != len)
		rd_fail(&r, "segment length %zu does not match its header (%u)", len, total);

	int last = 0;
	while (!r.failed && rd_left(&r) > 0) {
		uint8_t kind = rd_u8(&r, "section header");
		uint8_t pad = rd_u8(&r, "section header");
		uint16_t pad2 = rd_u16(&r, "section header");
		uint32_t slen = rd_u32(&r, "section header");
		if (r.failed)
			break;
		if (kind < ISA_SEC_REGIONS || kind > ISA_SEC_LAST) {
			rd_fail(&r, "unknown section kind %u", kind);
			break;
		}
		if (kind <= last) {
			rd_fail(&r, "section %u out of order or repeated", kind);
			break;
		}
		if (pad || pad2) {
			rd_fail(&r, "section %u: reserved header bytes are not zero", kind);
			break;
		}
		if (slen > rd_left(&r)) {
			rd_fail(&r, "section %u: length %u exceeds the %zu bytes left", kind, slen,
			        rd_left(&r));
			break;
		}
		last = kind;
		/* Each section is read through its own cursor so it can neither under- nor overrun. */
		struct rd sr = { .p = r.p, .end = r.p + slen, .err = err, .errlen = errlen };
		r.p += slen;
		switch ((enum isa_section)kind) {
		case ISA_SEC_REGIONS: sec_regions(&sr, s); break;
		case ISA_SEC_HOOKS:   sec_hooks(&sr, s); break;
		case ISA_SEC_FUNCS:   sec_funcs(&sr, s); break;
		case ISA_SEC_EXPORTS: sec_exports(&sr, s); break;
		case ISA_SEC_CONST:   sec_const(&sr, s); break;
		case ISA_SEC_LINES:   sec_lines(&sr, s); break;
		}
		if (!sr.failed && rd_left(&sr))
			rd_fail(&sr, "section %u: %zu bytes of trailing garbage", kind, rd_left(&sr));
		r.failed = sr.failed;
	}
	if (!r.failed && s->n_funcs == 0)
		rd_fail(&r, "segment has no functions");
	if (r.failed) {
		isa_seg_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

void isa_seg_free(struct isa_seg *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n_regions; i++)
		free(s->regions[i].name);
	for (uint32_t i = 0; i < s->n_hooks; i++) {
		free(s->hooks[i].name);
		free(s->hooks[i].sig);
	}
	for (uint32_t i = 0; i < s->n_funcs; i++) {
		free(s->funcs[i].name);
		free(s->funcs[i].code);
	}
	for (uint32_t i = 0; i < s->n_exports; i++)
		free(s->exports[i].name);
	free(s->regions);
	free(s->hooks);
	free(s->funcs);
	free(s->exports);
	free(s->consts);
	free(s->source);
	free(s->lines);
	free(s);
}

uint32_t isa_seg_line(const struct isa_seg *s, uint32_t func, uint32_t pc)
{
	uint32_t line = 0;
	for (uint32_t i = 0; i < s->n_lines; i++) {
		if (s->lines[i].func == func && s->lines[i].pc <= pc)
			line = s->lines[i].line;
		else if (s->lines[i].func > func)
			break;
	}
	return line;
}

/* ---- writing ---- */

struct wr {
	uint8_t *buf;
	size_t len, cap;
	int failed;
	char *err;
	size_t errlen;
};

static void wr_fail(struct wr *w, const char *fmt, ...)
{
	if (w->failed)
		return;
	w->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	if (w->err && w->errlen)
		vsnprintf(w->err, w->errlen, fmt, ap);
	va_end(ap);
}

static uint8_t *wr_grow(struct wr *w, size_t n)
{
	if (w->failed)
		return NULL;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *b = realloc(w->buf, cap);
		if (!b) {
			wr_fail(w, "out of memory");
			return NULL;
		}
		w->buf = b;
		w->cap = cap;
	}
	uint8_t *p = w->buf + w->len;
	w->len += n;
	return p;
}

static void wr_u8(struct wr *w, uint8_t v) { uint8_t *p = wr_grow(w, 1); if (p) *p = v; }
static void wr_u16(struct wr *w, uint16_t v) { uint8_t *p = wr_grow(w, 2); if (p) isa_put16(p, v); }
static void wr_u32(struct wr *w, uint32_t v) { uint8_t *p = wr_grow(w, 4); if (p) isa_put32(p, v); }
static void wr_bytes(struct wr *w, const void *b, size_t n)
{
	uint8_t *p = wr_grow(w, n);
	if (p && n)
		memcpy(p, b, n);
}
static void wr_str(struct wr *w, const char *s, const char *what)
{
	size_t n = s ? strlen(s) : 0;
	if (n > ISA_MAX_NAME)
		return wr_fail(w, "%s '%.20s...' is longer than %d bytes", what, s, ISA_MAX_NAME);
	wr_u8(w, (uint8_t)n);
	wr_bytes(w, s, n);
}
static void wr_name(struct wr *w, const char *s, const char *what)
{
	if (!s || isa_name_check(s, strlen(s)) != 0)
		return wr_fail(w, "%s name '%s' must be 1-%d printable characters without spaces", what,
		               s ? s : "", ISA_MAX_NAME);
	wr_str(w, s, what);
}

static size_t sec_begin(struct wr *w, int kind)
{
	wr_u8(w, (uint8_t)kind);
	wr_u8(w, 0);
	wr_u16(w, 0);
	wr_u32(w, 0);
	return w->len;
}

static void sec_end(struct wr *w, size_t start)
{
	if (!w->failed)
		isa_put32(w->buf + start - 4, (uint32_t)(w->len - start));
}

int isa_seg_encode(const struct isa_seg *s, uint8_t **out, size_t *out_len, char *err,
                   size_t errlen)
{
	struct wr w = { .err = err, .errlen = errlen };
	*out = NULL;
	*out_len = 0;
	if (s->n_funcs == 0 || s->n_funcs > ISA_MAX_FUNCS)
		wr_fail(&w, "a segment needs 1..%d functions, not %u", ISA_MAX_FUNCS, s->n_funcs);
	if (s->n_regions > ISA_MAX_REGIONS)
		wr_fail(&w, "%u region imports, at most %d", s->n_regions, ISA_MAX_REGIONS);
	if (s->n_hooks > ISA_MAX_HOOKS)
		wr_fail(&w, "%u hook imports, at most %d", s->n_hooks, ISA_MAX_HOOKS);
	if (s->n_exports > ISA_MAX_EXPORTS)
		wr_fail(&w, "%u exports, at most %d", s->n_exports, ISA_MAX_EXPORTS);
	if (s->const_len > ISA_MAX_CONST)
		wr_fail(&w, "%u bytes of constant data, at most %u", s->const_len, ISA_MAX_CONST);

	wr_u32(&w, ISA_MAGIC);
	wr_u16(&w, ISA_VERSION);
	wr_u16(&w, 0);
	wr_u32(&w, 0); /* total length, patched below */
	wr_u32(&w, 0);

	size_t at;
	if (s->n_regions) {
		at = sec_begin(&w, ISA_SEC_REGIONS);
		wr_u16(&w, (uint16_t)s->n_regions);
		for (uint32_t i = 0; i < s->n_regions; i++) {
			if (s->regions[i].access != ISA_ACC_RO && s->regions[i].access != ISA_ACC_RW)
				wr_fail(&w, "region '%s': access must be ro or rw", s->regions[i].name);
			wr_u8(&w, s->regions[i].access);
			wr_name(&w, s->regions[i].name, "region");
		}
		sec_end(&w, at);
	}
	if (s->n_hooks) {
		at = sec_begin(&w, ISA_SEC_HOOKS);
		wr_u16(&w, (uint16_t)s->n_hooks);
		for (uint32_t i = 0; i < s->n_hooks; i++) {
			wr_name(&w, s->hooks[i].name, "hook");
			if (!s->hooks[i].sig || isa_sig_check(s->hooks[i].sig) < 0)
				wr_fail(&w, "hook '%s': bad signature '%s'", s->hooks[i].name,
				        s->hooks[i].sig ? s->hooks[i].sig : "");
			wr_str(&w, s->hooks[i].sig, "hook signature");
		}
		sec_end(&w, at);
	}
	at = sec_begin(&w, ISA_SEC_FUNCS);
	wr_u16(&w, (uint16_t)s->n_funcs);
	for (uint32_t i = 0; i < s->n_funcs && !w.failed; i++) {
		const struct isa_func *f = &s->funcs[i];
		if (f->n_args > f->n_locals)
			wr_fail(&w, "function '%s': more arguments than locals", f->name);
		if (f->max_stack > ISA_MAX_STACK)
			wr_fail(&w, "function '%s': maximum stack %u, at most %d", f->name, f->max_stack,
			        ISA_MAX_STACK);
		if (f->code_len == 0 || f->code_len > ISA_MAX_CODE)
			wr_fail(&w, "function '%s': code length %u, must be 1..%u", f->name, f->code_len,
			        ISA_MAX_CODE);
		wr_name(&w, f->name, "function");
		wr_u8(&w, f->n_args);
		wr_u8(&w, f->n_locals);
		wr_u16(&w, f->max_stack);
		wr_u32(&w, f->code_len);
		wr_bytes(&w, f->code, f->code_len);
	}
	sec_end(&w, at);
	if (s->n_exports) {
		at = sec_begin(&w, ISA_SEC_EXPORTS);
		wr_u16(&w, (uint16_t)s->n_exports);
		for (uint32_t i = 0; i < s->n_exports; i++) {
			if (s->exports[i].func >= s->n_funcs)
				wr_fail(&w, "export '%s': no function %u", s->exports[i].name, s->exports[i].func);
			wr_u16(&w, s->exports[i].func);
			wr_name(&w, s->exports[i].name, "export");
		}
		sec_end(&w, at);
	}
	if (s->const_len) {
		at = sec_begin(&w, ISA_SEC_CONST);
		wr_bytes(&w, s->consts, s->const_len);
		sec_end(&w, at);
	}
	if (s->n_lines) {
		at = sec_begin(&w, ISA_SEC_LINES);
		wr_str(&w, s->source, "source name");
		wr_u32(&w, s->n_lines);
		for (uint32_t i = 0; i < s->n_lines; i++) {
			wr_u16(&w, s->lines[i].func);
			wr_u32(&w, s->lines[i].pc);
			wr_u32(&w, s->lines[i].line);
		}
		sec_end(&w, at);
	}
	if (!w.failed && w.len > UINT32_MAX)
		wr_fail(&w, "segment larger than 4 GiB");
	if (w.failed) {
		free(w.buf);
		return -1;
	}
	isa_put32(w.buf + 8, (uint32_t)w.len);
	*out = w.buf;
	*out_len = w.len;
	return 0;
}
