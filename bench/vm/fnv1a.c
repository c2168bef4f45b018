/* fnv1a.c: fnv1a.pna in C (pncc): 64-bit FNV-1a hash of region `data`. */
#include <activerdma/ar.h>

#define REGIONS(X) X(data, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long fnv1a(void)
{
	unsigned long h = 0xcbf29ce484222325ul, n = ar_len(data);
	for (unsigned long i = 0; i < n; i++)
		h = (h ^ ar_ld8u(data, i)) * 0x100000001b3ul;
	return h;
}
