/* harness.h: what the optional engines' harnesses (wasm3_run.c, ubpf_run.c) share. */
#ifndef BENCH_VM_HARNESS_H
#define BENCH_VM_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The whole of the file at path, malloc'd, its length in *len; NULL when it cannot be read
 * or is empty. */
static inline uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

#endif
