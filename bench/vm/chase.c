/* chase.c: chase.pna in C (pncc): walk the list in region `nodes` (16-byte nodes: u64 next,
 * all ones at the end; u64 value) from offset p and sum the values, wrapping. */
#include <activerdma/ar.h>

#define REGIONS(X) X(nodes, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long chase(unsigned long p)
{
	unsigned long s = 0;
	for (; p != ~0ul; p = ar_ld64(nodes, p))
		s += ar_ld64(nodes, p + 8);
	return s;
}
