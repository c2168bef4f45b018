/* genlayout: the build step that gives bytecode sources the layout numbers.
 *
 *   genlayout -o OUT.pna IN.pna    IN with every ARF_* name replaced by its value (lines kept)
 *   genlayout --list               every name, value and meaning of arf/layout.def
 *
 * The Makefile runs it on each .pna source of arf/ before pnasm (see arf_layout_subst in arf.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *p = malloc(cap);
	for (size_t k; p && (k = fread(p + n, 1, cap - n, f)) > 0;) {
		n += k;
		if (n == cap) {
			char *q = realloc(p, cap *= 2);
			if (!q) {
				free(p);
				p = NULL;
			}
			p = q;
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(p);
		return NULL;
	}
	*len = n;
	return p;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (const struct arf_const *c = arf_consts; c->name; c++)
			printf("%-22s %20llu  0x%-16llx %s\n", c->name, (unsigned long long)c->value,
			       (unsigned long long)c->value, c->doc);
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "-o")) {
		fprintf(stderr, "usage: genlayout -o OUT.pna IN.pna | genlayout --list\n");
		return 2;
	}
	size_t len;
	char *src = slurp(argv[3], &len);
	if (!src) {
		fprintf(stderr, "genlayout: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	char *out, *diags;
	int rc = arf_layout_subst(src, len, argv[3], &out, &diags);
	free(src);
	if (rc != 0) {
		fputs(diags, stderr);
		free(diags);
		return 1;
	}
	FILE *f = fopen(argv[2], "w");
	if (!f || fputs(out, f) == EOF || fclose(f) != 0) {
		fprintf(stderr, "genlayout: %s: %s\n", argv[2], strerror(errno));
		free(out);
		return 1;
	}
	free(out);
	return 0;
}
