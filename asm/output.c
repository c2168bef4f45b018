/* output.c: where pnasm and pncc put the segment they made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"

/* IN's name with its extension (if any, after the last slash) replaced by ".pno". */
static char *default_output(const char *in)
{
	size_t n = strlen(in);
	const char *slash = strrchr(in, '/');
	const char *dot = strrchr(in, '.');
	if (dot && (!slash || dot > slash + 1))
		n = (size_t)(dot - in);
	char *out = malloc(n + 5);
	if (out) {
		memcpy(out, in, n);
		memcpy(out + n, ".pno", 5);
	}
	return out;
}

int asm_write_segment(const char *in, const char *out, const void *seg, size_t len, char *err,
                      size_t errlen)
{
	char *defout = out ? NULL : default_output(in);
	const char *name = out ? out : defout;
	int rc = -1;
	if (!name) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int to_stdout = strcmp(name, "-") == 0;
	FILE *o = to_stdout ? stdout : fopen(name, "wb");
	if (!o) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		goto out;
	}
	size_t w = fwrite(seg, 1, len, o);
	int werr = ferror(o);
	if ((to_stdout ? fflush(o) : fclose(o)) != 0 || w != len || werr) {
		snprintf(err, errlen, "%s: write failed", name);
		if (!to_stdout)
			remove(name);   /* no half-written segment left behind */
		goto out;
	}
	rc = 0;
out:
	free(defout);
	return rc;
}
