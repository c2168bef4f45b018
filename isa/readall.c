/* readall.c: read a whole stream or file into memory, for the command-line programs (pnasm,
 * pndis, pnrun, arc) that take segments, sources and argument bytes from files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "isa.h"

int isa_read_all(FILE *f, void **out, size_t *out_len)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		if (len == cap) {
			char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				int saverr = errno;
				free(buf);
				errno = saverr ? saverr : EIO;
				return -1;
			}
			break;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

int isa_read_file(const char *path, void **out, size_t *out_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	int rc = isa_read_all(f, out, out_len);
	int saverr = errno;
	fclose(f);
	errno = saverr;
	return rc;
}
