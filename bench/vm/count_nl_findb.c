/* count_nl_findb.c: count_nl_findb.pna in C (pncc): the '\n' bytes of region `data`, found
 * with the findb bulk instruction. */
#include <activerdma/ar.h>

#define REGIONS(X) X(data, ro)
AR_IMPORT_REGIONS(REGIONS);

long count_nl_findb(void)
{
	long n = ar_len(data), c = 0, p;
	for (long i = 0; i < n && (p = ar_findb(data, i, n - i, '\n')) != -1; i = p + 1)
		c++;
	return c;
}
