/* count_nl.c: count_nl.pna in C (pncc): the '\n' bytes of region `data`, one byte a step. */
#include <activerdma/ar.h>

#define REGIONS(X) X(data, ro)
AR_IMPORT_REGIONS(REGIONS);

long count_nl(void)
{
	long n = ar_len(data), c = 0;
	for (long i = 0; i < n; i++)
		c += ar_ld8u(data, i) == '\n';
	return c;
}
