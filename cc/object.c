/* object.c: read a BPF ELF object from clang into struct obj (cc_int.h).
 *
 * libelf does the ELF framing (section headers, symbols, relocations, each checked against the
 * file's size); this file checks what the translator relies on: every symbol, relocation and
 * function lies inside its section, functions do not overlap, names are NUL-terminated.  BTF
 * (.BTF) gives each function's parameter count, and .BTF.ext its line records: the format is
 * the kernel's Documentation/bpf/btf.rst, read here with every offset checked.
 */
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_int.h"

#ifndef EM_BPF
#define EM_BPF 247
#endif
#define BTF_MAGIC      0xeb9f
#define BTF_KIND_FUNC  12
#define BTF_KIND_FUNC_PROTO 13

/* ---- diagnostics ---- */

const struct line *obj_line(const struct obj *o, uint32_t sec, uint32_t slot)
{
	if (sec >= o->n_secs)
		return NULL;
	const struct section *s = &o->secs[sec];
	const struct line *best = NULL;
	uint32_t lo = 0, hi = s->n_lines;
	while (lo < hi) {          /* the last record with slot <= the given one */
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->lines[mid].slot <= slot) {
			best = &s->lines[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return best;
}

static const struct func *func_at(const struct obj *o, uint32_t sec, uint32_t slot)
{
	for (uint32_t i = 0; i < o->n_funcs; i++)
		if (o->funcs[i].sec == sec && slot >= o->funcs[i].start && slot < o->funcs[i].end)
			return &o->funcs[i];
	return NULL;
}

int cc_error(struct diag *d, const struct obj *o, uint32_t sec, uint32_t slot,
             const char *fmt, ...)
{
	if (++d->n_errors > CC_MAX_ERRORS)
		return -1;
	const struct line *l = obj_line(o, sec, slot);
	const struct func *f = func_at(o, sec, slot);
	if (l && l->file && f && l->slot >= f->start)
		buf_printf(&d->text, "%s:%u: error: ", l->file, l->line);
	else if (f)
		buf_printf(&d->text, "%s: %s+%u: error: ", o->name, f->name, slot - f->start);
	else if (sec < o->n_secs)
		buf_printf(&d->text, "%s: %s+%u: error: ", o->name, o->secs[sec].name, slot);
	else
		buf_printf(&d->text, "%s: error: ", o->name);
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&d->text, fmt, ap);
	va_end(ap);
	buf_putc(&d->text, '\n');
	if (d->n_errors == CC_MAX_ERRORS)
		buf_printf(&d->text, "%s: note: more errors are not shown\n", o->name);
	return -1;
}

#define OBJ_ERR(...) cc_error(d, o, UINT32_MAX, 0, __VA_ARGS__)

/* ---- BTF ---- */

struct btf {
	const uint8_t *types, *strs;
	uint32_t types_len, strs_len;
	uint32_t n_types;          /* ids 1..n_types */
	uint32_t *type_off;        /* offset of each type in types (index id - 1) */
};

static const char *btf_str(const struct btf *b, uint32_t off)
{
	if (off >= b->strs_len || !memchr(b->strs + off, 0, b->strs_len - off))
		return NULL;
	return (const char *)b->strs + off;
}

/* Bytes that follow the 12-byte common part of a type of this kind with vlen entries; -1
 * for a kind this reader does not know. */
static int64_t btf_extra(unsigned kind, unsigned vlen)
{
	switch (kind) {
	case 1: case 14: case 17: return 4;                   /* INT, VAR, DECL_TAG */
	case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18:
		return 0;                                           /* PTR, FWD, qualifiers, FUNC, FLOAT, TYPE_TAG */
	case 3: return 12;                                      /* ARRAY */
	case 4: case 5: case 15: case 19: return 12ll * vlen;   /* STRUCT, UNION, DATASEC, ENUM64 */
	case 6: case 13: return 8ll * vlen;                     /* ENUM, FUNC_PROTO */
	default: return -1;
	}
}

static int btf_parse(struct btf *b, const uint8_t *p, size_t len, struct diag *d,
                     const struct obj *o)
{
	memset(b, 0, sizeof *b);
	if (len < 24 || isa_get16(p) != BTF_MAGIC)
		return OBJ_ERR(".BTF: bad header");
	uint32_t hdr = isa_get32(p + 4), t_off = isa_get32(p + 8), t_len = isa_get32(p + 12);
	uint32_t s_off = isa_get32(p + 16), s_len = isa_get32(p + 20);
	if (hdr < 24 || hdr > len || (uint64_t)t_off + t_len > len - hdr ||
	    (uint64_t)s_off + s_len > len - hdr)
		return OBJ_ERR(".BTF: type or string section outside the section");
	b->types = p + hdr + t_off;
	b->types_len = t_len;
	b->strs = p + hdr + s_off;
	b->strs_len = s_len;
	uint32_t cap = t_len / 12;
	b->type_off = malloc((cap ? cap : 1) * sizeof *b->type_off);
	if (!b->type_off)
		return OBJ_ERR("out of memory");
	for (uint64_t off = 0; off < t_len;) {
		if (t_len - off < 12 || b->n_types >= cap)
			return OBJ_ERR(".BTF: truncated type %u", b->n_types + 1);
		uint32_t info = isa_get32(b->types + off + 4);
		int64_t extra = btf_extra(info >> 24 & 0x1f, info & 0xffff);
		if (extra < 0)
			return OBJ_ERR(".BTF: type %u has unknown kind %u", b->n_types + 1, info >> 24 & 0x1f);
		if ((uint64_t)extra > t_len - off - 12)
			return OBJ_ERR(".BTF: truncated type %u", b->n_types + 1);
		b->type_off[b->n_types++] = (uint32_t)off;
		off += 12 + (uint64_t)extra;
	}
	return 0;
}

struct btf_func {
	const char *name;
	int n_params;
};

static int cmp_btf_func(const void *a, const void *b)
{
	return strcmp(((const struct btf_func *)a)->name, ((const struct btf_func *)b)->name);
}

/* Parameter count of FUNC type t; -1 when its prototype is missing. */
static int btf_params(const struct btf *b, const uint8_t *t)
{
	uint32_t proto = isa_get32(t + 8);
	if (proto == 0 || proto > b->n_types)
		return -1;
	const uint8_t *pt = b->types + b->type_off[proto - 1];
	uint32_t pinfo = isa_get32(pt + 4);
	if ((pinfo >> 24 & 0x1f) != BTF_KIND_FUNC_PROTO)
		return -1;
	unsigned vlen = pinfo & 0xffff;
	/* a trailing (0, 0) parameter is "...", not an argument */
	if (vlen > 0 && isa_get32(pt + 12 + 8 * (vlen - 1)) == 0 &&
	    isa_get32(pt + 12 + 8 * (vlen - 1) + 4) == 0)
		vlen--;
	return (int)vlen;
}

/* The FUNC types of b sorted by name, for btf_find (funcs freed by the caller). */
static int btf_funcs(const struct btf *b, struct btf_func **funcs, uint32_t *n)
{
	*n = 0;
	*funcs = malloc((b->n_types ? b->n_types : 1) * sizeof **funcs);
	if (!*funcs)
		return -1;
	for (uint32_t i = 0; i < b->n_types; i++) {
		const uint8_t *t = b->types + b->type_off[i];
		const char *name = btf_str(b, isa_get32(t));
		if ((isa_get32(t + 4) >> 24 & 0x1f) == BTF_KIND_FUNC && name)
			(*funcs)[(*n)++] = (struct btf_func){ name, btf_params(b, t) };
	}
	qsort(*funcs, *n, sizeof **funcs, cmp_btf_func);
	return 0;
}

static int btf_find(const struct btf_func *funcs, uint32_t n, const char *name)
{
	struct btf_func key = { name, 0 };
	const struct btf_func *f = bsearch(&key, funcs, n, sizeof key, cmp_btf_func);
	return f ? f->n_params : -1;
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Line records of .BTF.ext into the code sections they name. */
static int btf_ext_lines(struct obj *o, const struct btf *b, const uint8_t *p, size_t len,
                         struct diag *d)
{
	if (len < 24 || isa_get16(p) != BTF_MAGIC)
		return OBJ_ERR(".BTF.ext: bad header");
	uint32_t hdr = isa_get32(p + 4), l_off = isa_get32(p + 16), l_len = isa_get32(p + 20);
	if (hdr < 24 || hdr > len || (uint64_t)l_off + l_len > len - hdr)
		return OBJ_ERR(".BTF.ext: line info outside the section");
	if (l_len == 0)
		return 0;
	const uint8_t *q = p + hdr + l_off, *end = q + l_len;
	if (l_len < 4)
		return OBJ_ERR(".BTF.ext: truncated line info");
	uint32_t rec = isa_get32(q);
	if (rec < 16 || rec > 4096)
		return OBJ_ERR(".BTF.ext: line record size %u", rec);
	q += 4;
	while (q < end) {
		if (end - q < 8)
			return OBJ_ERR(".BTF.ext: truncated line info");
		const char *sname = btf_str(b, isa_get32(q));
		uint32_t n = isa_get32(q + 4);
		q += 8;
		if ((uint64_t)n * rec > (uint64_t)(end - q))
			return OBJ_ERR(".BTF.ext: %u line records run past the section", n);
		struct section *s = NULL;
		for (uint32_t i = 0; sname && i < o->n_secs; i++)
			if (o->secs[i].kind == SEC_CODE && strcmp(o->secs[i].name, sname) == 0)
				s = &o->secs[i];
		if (!s || s->lines) {
			q += (uint64_t)n * rec;        /* lines of a section we do not translate */
			continue;
		}
		s->lines = calloc(n ? n : 1, sizeof *s->lines);
		if (!s->lines)
			return OBJ_ERR("out of memory");
		for (uint32_t i = 0; i < n; i++, q += rec) {
			uint32_t insn_off = isa_get32(q), lc = isa_get32(q + 12);
			if (insn_off % 8 || insn_off / 8 >= s->size / 8)
				continue;          /* not an instruction of the section: ignored */
			struct line *l = &s->lines[s->n_lines++];
			l->slot = insn_off / 8;
			l->file = btf_str(b, isa_get32(q + 4));
			l->text = btf_str(b, isa_get32(q + 8));
			l->line = lc >> 10;
			l->col = lc & 0x3ff;
		}
		qsort(s->lines, s->n_lines, sizeof *s->lines, cmp_line);
	}
	return 0;
}

/* ---- ELF ---- */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static void elf_init(void) { elf_version(EV_CURRENT); }

static int cmp_reloc(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The NUL-separated list in an .ar.* section, copied with a final NUL. */
static int copy_list(char **dst, size_t *dst_len, const struct section *s)
{
	*dst = malloc(s->size + 1);
	if (!*dst)
		return -1;
	if (s->size)
		memcpy(*dst, s->data, s->size);
	(*dst)[s->size] = 0;
	*dst_len = s->size;
	return 0;
}

/* AR_EXPORT_ARGS: .ar.args lists "function:count" for exported functions that take more
 * arguments than their C parameters (read with ar_arg). */
static int apply_args(struct obj *o, struct diag *d)
{
	for (size_t p = 0; o->args && p < o->args_len; p += strlen(o->args + p) + 1) {
		char *e = o->args + p, *colon = strchr(e, ':'), *end;
		if (!*e)
			continue;        /* padding between the macro's strings */
		unsigned long n = colon ? strtoul(colon + 1, &end, 10) : 0;
		if (!colon || colon == e || end == colon + 1 || *end || n > 255)
			return OBJ_ERR(".ar.args: bad entry '%.60s' (AR_EXPORT_ARGS writes it)", e);
		struct func *f = NULL;
		for (uint32_t i = 0; i < o->n_funcs && !f; i++)
			if (strlen(o->funcs[i].name) == (size_t)(colon - e) &&
			    memcmp(o->funcs[i].name, e, (size_t)(colon - e)) == 0)
				f = &o->funcs[i];
		if (!f || !f->exported)
			return OBJ_ERR("AR_EXPORT_ARGS(%.*s, %lu): no exported function of that name",
			               (int)(colon - e), e, n);
		if (n < (unsigned long)f->n_params)
			return OBJ_ERR("AR_EXPORT_ARGS(%s, %lu): it has %d parameters", f->name, n,
			               f->n_params);
		f->n_args = (int)n;
	}
	return 0;
}

static int read_sections(struct obj *o, Elf *elf, size_t shstrndx, struct diag *d,
                         Elf_Data **symdata, size_t *symcount, size_t *symstr,
                         const uint8_t **btf, size_t *btf_len, const uint8_t **ext, size_t *ext_len)
{
	size_t n;
	if (elf_getshdrnum(elf, &n) != 0)
		return OBJ_ERR("not an ELF object: %s", elf_errmsg(-1));
	if (n > 65536)
		return OBJ_ERR("%zu sections", n);
	o->secs = calloc(n ? n : 1, sizeof *o->secs);
	if (!o->secs)
		return OBJ_ERR("out of memory");
	o->n_secs = (uint32_t)n;
	for (size_t i = 1; i < n; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		if (!scn || !gelf_getshdr(scn, &sh))
			return OBJ_ERR("section %zu: %s", i, elf_errmsg(-1));
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		struct section *s = &o->secs[i];
		s->name = strdup(name ? name : "?");
		if (!s->name)
			return OBJ_ERR("out of memory");
		s->align = sh.sh_addralign;
		s->size = sh.sh_size;
		Elf_Data *data = NULL;
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL) {
			data = elf_getdata(scn, NULL);
			if (!data || (data->d_size && !data->d_buf) || data->d_size != sh.sh_size)
				return OBJ_ERR("section %s: %s", s->name, elf_errmsg(-1));
			s->data = data->d_buf;
		}
		if (sh.sh_type == SHT_SYMTAB) {
			if (*symdata)
				return OBJ_ERR("two symbol tables");
			*symdata = data;
			*symcount = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			*symstr = sh.sh_link;
		} else if (strcmp(s->name, ".BTF") == 0) {
			if (*btf)
				return OBJ_ERR("two .BTF sections");
			*btf = s->data;
			*btf_len = s->size;
		} else if (strcmp(s->name, ".BTF.ext") == 0) {
			if (*ext)
				return OBJ_ERR("two .BTF.ext sections");
			*ext = s->data;
			*ext_len = s->size;
		}
		if ((strcmp(s->name, ".ar.regions") == 0 || strcmp(s->name, ".ar.hooks") == 0 ||
		     strcmp(s->name, ".ar.args") == 0) && sh.sh_type == SHT_PROGBITS)
			s->kind = SEC_AR;
		else if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
			s->kind = SEC_CODE;
		else if ((sh.sh_flags & SHF_ALLOC) && (sh.sh_flags & SHF_WRITE))
			s->kind = SEC_WRITABLE;
		else if ((sh.sh_flags & SHF_ALLOC) && sh.sh_type == SHT_PROGBITS)
			s->kind = SEC_RODATA;
		if (s->kind == SEC_CODE && (s->size % 8 || s->size / 8 > CC_MAX_SLOTS))
			return OBJ_ERR("section %s: %llu bytes is not a whole number of BPF instructions "
			               "(at most %u)", s->name, (unsigned long long)s->size, CC_MAX_SLOTS);
		if (s->kind == SEC_RODATA && s->size > ISA_MAX_CONST)
			return OBJ_ERR("section %s: %llu bytes of constants (at most %u)", s->name,
			               (unsigned long long)s->size, ISA_MAX_CONST);
		if (s->kind == SEC_AR && strcmp(s->name, ".ar.args") == 0) {
			if (o->args)
				return OBJ_ERR("two .ar.args sections");
			if (copy_list(&o->args, &o->args_len, s) != 0)
				return OBJ_ERR("out of memory");
		} else if (s->kind == SEC_AR) {
			int hooks = strcmp(s->name, ".ar.hooks") == 0;
			if (hooks ? o->hooks != NULL : o->regions != NULL)
				return OBJ_ERR("two %s sections", s->name);
			if (copy_list(hooks ? &o->hooks : &o->regions,
			              hooks ? &o->hooks_len : &o->regions_len, s) != 0)
				return OBJ_ERR("out of memory");
		}
	}
	return 0;
}

static int read_symbols(struct obj *o, Elf *elf, Elf_Data *symdata, size_t count, size_t strndx,
                        struct diag *d)
{
	if (!symdata)
		return OBJ_ERR("no symbol table");
	if (count > (1u << 20))
		return OBJ_ERR("%zu symbols", count);
	o->syms = calloc(count ? count : 1, sizeof *o->syms);
	if (!o->syms)
		return OBJ_ERR("out of memory");
	o->n_syms = (uint32_t)count;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(symdata, (int)i, &sym))
			return OBJ_ERR("symbol %zu: %s", i, elf_errmsg(-1));
		struct symbol *s = &o->syms[i];
		const char *name = elf_strptr(elf, strndx, sym.st_name);
		s->name = strdup(name ? name : "");
		if (!s->name)
			return OBJ_ERR("out of memory");
		s->sec = sym.st_shndx > 0 && sym.st_shndx < o->n_secs ? sym.st_shndx : UINT32_MAX;
		s->value = sym.st_value;
		s->size = sym.st_size;
		s->type = GELF_ST_TYPE(sym.st_info);
		s->bind = GELF_ST_BIND(sym.st_info);
	}
	return 0;
}

static int read_relocs(struct obj *o, Elf *elf, struct diag *d)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return OBJ_ERR("%s", elf_errmsg(-1));
		if (sh.sh_type == SHT_RELA)
			return OBJ_ERR("RELA relocations (clang's BPF objects use REL)");
		if (sh.sh_type != SHT_REL || sh.sh_info >= o->n_secs || o->secs[sh.sh_info].kind != SEC_CODE)
			continue;
		struct section *s = &o->secs[sh.sh_info];
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		if (!data || s->relocs || n > s->size / 8)
			return OBJ_ERR("relocations of %s: bad section", s->name);
		s->relocs = calloc(n ? n : 1, sizeof *s->relocs);
		if (!s->relocs)
			return OBJ_ERR("out of memory");
		for (size_t i = 0; i < n; i++) {
			GElf_Rel rel;
			if (!gelf_getrel(data, (int)i, &rel))
				return OBJ_ERR("relocations of %s: %s", s->name, elf_errmsg(-1));
			uint64_t sym = GELF_R_SYM(rel.r_info);
			if (rel.r_offset % 8 || rel.r_offset / 8 >= s->size / 8 || sym >= o->n_syms)
				return OBJ_ERR("relocation %zu of %s: offset %llu or symbol %llu out of range",
				               i, s->name, (unsigned long long)rel.r_offset,
				               (unsigned long long)sym);
			s->relocs[s->n_relocs++] = (struct reloc){ (uint32_t)(rel.r_offset / 8), (uint32_t)sym };
		}
		qsort(s->relocs, s->n_relocs, sizeof *s->relocs, cmp_reloc);
		for (uint32_t i = 1; i < s->n_relocs; i++)
			if (s->relocs[i].slot == s->relocs[i - 1].slot)
				return OBJ_ERR("%s: two relocations of instruction %u", s->name, s->relocs[i].slot);
	}
	return 0;
}

static int read_funcs_of(struct obj *o, const struct btf_func *bf, uint32_t n_bf,
                         struct diag *d);

static int read_funcs(struct obj *o, const struct btf *b, struct diag *d)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < o->n_syms; i++)
		n += o->syms[i].type == STT_FUNC;
	struct btf_func *bf;
	uint32_t n_bf;
	o->funcs = calloc(n ? n : 1, sizeof *o->funcs);
	if (!o->funcs || btf_funcs(b, &bf, &n_bf) != 0)
		return OBJ_ERR("out of memory");
	int rc = read_funcs_of(o, bf, n_bf, d);
	free(bf);
	return rc;
}

static int read_funcs_of(struct obj *o, const struct btf_func *bf, uint32_t n_bf, struct diag *d)
{
	for (uint32_t i = 0; i < o->n_syms; i++) {
		const struct symbol *s = &o->syms[i];
		if (s->type != STT_FUNC)
			continue;
		if (s->sec == UINT32_MAX || o->secs[s->sec].kind != SEC_CODE)
			return OBJ_ERR("function %s is not defined in a code section", s->name);
		const struct section *sec = &o->secs[s->sec];
		if (s->value % 8 || s->size % 8 || s->size == 0 || s->value > sec->size ||
		    s->size > sec->size - s->value)
			return OBJ_ERR("function %s: bytes %llu..+%llu are not instructions of %s", s->name,
			               (unsigned long long)s->value, (unsigned long long)s->size, sec->name);
		struct func *f = &o->funcs[o->n_funcs++];
		f->name = s->name;
		f->sec = s->sec;
		f->start = (uint32_t)(s->value / 8);
		f->end = (uint32_t)((s->value + s->size) / 8);
		f->exported = s->bind == STB_GLOBAL;
		f->n_args = btf_find(bf, n_bf, s->name);
		if (f->n_args < 0)
			return OBJ_ERR("function %s has no BTF type (compile with -g)", s->name);
		if (f->n_args > 5)
			return OBJ_ERR("function %s has %d parameters (BPF passes at most 5)", s->name,
			               f->n_args);
		f->n_params = f->n_args;
	}
	if (apply_args(o, d) != 0)
		return -1;
	if (o->n_funcs == 0)
		return OBJ_ERR("no functions");
	if (o->n_funcs > ISA_MAX_FUNCS)
		return OBJ_ERR("%u functions (at most %u)", o->n_funcs, ISA_MAX_FUNCS);
	qsort(o->funcs, o->n_funcs, sizeof *o->funcs, cmp_func);
	for (uint32_t i = 0; i < o->n_funcs; i++) {
		o->funcs[i].index = (int)i;
		if (i && o->funcs[i].sec == o->funcs[i - 1].sec && o->funcs[i].start < o->funcs[i - 1].end)
			return OBJ_ERR("functions %s and %s overlap", o->funcs[i - 1].name, o->funcs[i].name);
	}
	return 0;
}

/* The C file the line table points at: the file of the first function's first line (lines
 * of other files, such as inline functions of headers, are left out of the segment's table). */
static void pick_main_file(struct obj *o)
{
	for (uint32_t i = 0; i < o->n_funcs && !o->main_file; i++) {
		const struct line *l = obj_line(o, o->funcs[i].sec, o->funcs[i].start);
		if (l && l->slot >= o->funcs[i].start && l->file)
			o->main_file = l->file;
	}
}

int obj_read(struct obj *o, const void *buf, size_t len, const char *name, struct diag *d)
{
	memset(o, 0, sizeof *o);
	o->name = name;
	pthread_once(&elf_once, elf_init);
	/* libelf may write to the image it is given; it gets a copy */
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return OBJ_ERR("out of memory");
	if (len)
		memcpy(copy, buf, len);
	Elf *elf = elf_memory(copy, len);
	int rc = -1;
	struct btf b = { 0 };
	Elf_Data *symdata = NULL;
	size_t symcount = 0, symstr = 0, shstrndx, btf_len = 0, ext_len = 0;
	const uint8_t *btf = NULL, *ext = NULL;
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		OBJ_ERR("not an ELF object%s%s", elf ? ": " : "", elf ? elf_errmsg(-1) : "");
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_BPF || eh.e_type != ET_REL) {
		OBJ_ERR("not a little-endian BPF object file (clang -target bpf -c makes one)");
		goto out;
	}
	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		OBJ_ERR("no section names: %s", elf_errmsg(-1));
		goto out;
	}
	if (read_sections(o, elf, shstrndx, d, &symdata, &symcount, &symstr, &btf, &btf_len, &ext,
	                  &ext_len) != 0 ||
	    read_symbols(o, elf, symdata, symcount, symstr, d) != 0 || read_relocs(o, elf, d) != 0)
		goto out;
	if (!btf) {
		OBJ_ERR("no .BTF section: compile with -g");
		goto out;
	}
	/* lines and names point into .BTF: keep a copy that outlives libelf's image */
	o->btf = malloc(btf_len ? btf_len : 1);
	if (!o->btf) {
		OBJ_ERR("out of memory");
		goto out;
	}
	memcpy(o->btf, btf, btf_len);
	o->btf_len = btf_len;
	if (btf_parse(&b, o->btf, o->btf_len, d, o) != 0)
		goto out;
	if (ext && btf_ext_lines(o, &b, ext, ext_len, d) != 0)
		goto out;
	if (read_funcs(o, &b, d) != 0)
		goto out;
	pick_main_file(o);
	rc = 0;
out:
	/* code and constants are read during translation, after libelf's image is gone: copy
	 * them; every other pointer into that image is dropped */
	for (uint32_t i = 0; i < o->n_secs; i++) {
		struct section *s = &o->secs[i];
		const uint8_t *src = s->data;
		s->data = NULL;
		if (rc != 0 || !src || (s->kind != SEC_CODE && s->kind != SEC_RODATA))
			continue;
		uint8_t *p = malloc(s->size ? s->size : 1);
		if (!p) {
			OBJ_ERR("out of memory");
			rc = -1;
			continue;
		}
		memcpy(p, src, s->size);
		s->data = p;
		s->owned = 1;
	}
	free(b.type_off);
	if (elf)
		elf_end(elf);
	free(copy);
	return rc;
}

void obj_free(struct obj *o)
{
	for (uint32_t i = 0; i < o->n_secs; i++) {
		struct section *s = &o->secs[i];
		free(s->name);
		free(s->relocs);
		free(s->lines);
		if (s->owned)
			free((void *)s->data);
	}
	for (uint32_t i = 0; i < o->n_syms; i++)
		free(o->syms[i].name);
	free(o->secs);
	free(o->syms);
	free(o->funcs);
	free(o->regions);
	free(o->hooks);
	free(o->args);
	free(o->btf);
	memset(o, 0, sizeof *o);
}
