/* pnalayout.c: the layout numbers of layout.def for bytecode sources.
 *
 * pnasm has no named integer constants, and adding a directive to the assembler for one
 * application would be the tail wagging the dog; instead the .pna sources of arf/ use the
 * C names (ARF_I_SIZE, ARF_D_TABLE, ...) and the build substitutes their values, keeping
 * every line where it was so pnasm's diagnostics point at the right line of the source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf.h"

const struct arf_const arf_consts[] = {
#define ARF_C(name, value, doc) { #name, (uint64_t)(value), doc },
#include "layout.def"
#undef ARF_C
	{ NULL, 0, NULL },
};

const struct arf_const *arf_const_find(const char *name, size_t len)
{
	for (const struct arf_const *c = arf_consts; c->name; c++)
		if (strlen(c->name) == len && !memcmp(c->name, name, len))
			return c;
	return NULL;
}

/* A growing string; sticky failure. */
struct sbuf {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static int ident_start(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int ident_char(int c)
{
	return ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '$';
}

int arf_layout_subst(const char *src, size_t len, const char *file, char **out, char **diags)
{
	struct sbuf o = { 0 }, d = { 0 };
	unsigned line = 1, n_err = 0;
	size_t line_start = 0;
	put(&o, "", 0);
	for (size_t i = 0; i < len;) {
		char c = src[i];
		if (c == '\n') {
			put(&o, &c, 1);
			line++;
			line_start = ++i;
			continue;
		}
		if (c == ';') {            /* comment: to the end of the line, untouched */
			size_t j = i;
			while (j < len && src[j] != '\n')
				j++;
			put(&o, src + i, j - i);
			i = j;
			continue;
		}
		if (c == '"' || c == '\'') {   /* string or character literal, escapes included */
			size_t j = i + 1;
			while (j < len && src[j] != c && src[j] != '\n')
				j += src[j] == '\\' && j + 1 < len && src[j + 1] != '\n' ? 2 : 1;
			if (j < len && src[j] == c)
				j++;
			put(&o, src + i, j - i);
			i = j;
			continue;
		}
		if (ident_start((unsigned char)c) && (i == 0 || !ident_char((unsigned char)src[i - 1]))) {
			size_t j = i;
			while (j < len && ident_char((unsigned char)src[j]))
				j++;
			/* @NAME and #NAME name .const data, never layout numbers */
			int is_ref = i > 0 && (src[i - 1] == '@' || src[i - 1] == '#');
			if (!is_ref && j - i > 4 && !memcmp(src + i, "ARF_", 4)) {
				const struct arf_const *k = arf_const_find(src + i, j - i);
				if (!k) {
					char msg[512];
					int n = snprintf(msg, sizeof msg, "%s:%u:%zu: error: unknown layout "
					                 "constant '%.*s' (arf/layout.def lists them)\n", file, line,
					                 i - line_start + 1, (int)(j - i), src + i);
					put(&d, msg, (size_t)n);
					n_err++;
					put(&o, src + i, j - i);
				} else {
					char num[32];
					int n = k->value < 65536 ? snprintf(num, sizeof num, "%llu",
					                                    (unsigned long long)k->value)
					                         : snprintf(num, sizeof num, "0x%llx",
					                                    (unsigned long long)k->value);
					put(&o, num, (size_t)n);
					/* pad so the columns after it stay where the source has them */
					for (size_t p = (size_t)n; p < j - i; p++)
						put(&o, " ", 1);
				}
			} else {
				put(&o, src + i, j - i);
			}
			i = j;
			continue;
		}
		put(&o, &c, 1);
		i++;
	}
	if (o.failed || d.failed) {
		free(o.p);
		free(d.p);
		*out = NULL;
		*diags = strdup("out of memory\n");
		return -1;
	}
	if (n_err) {
		free(o.p);
		*out = NULL;
		*diags = d.p;
		return -1;
	}
	free(d.p);
	*out = o.p;
	*diags = NULL;
	return 0;
}
