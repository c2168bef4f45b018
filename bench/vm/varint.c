/* varint.c: varint.pna in C (pncc): the sum of the LEB128 varints filling region `varints`. */
#include <activerdma/ar.h>

#define REGIONS(X) X(varints, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long varint(void)
{
	unsigned long s = 0, i = 0, n = ar_len(varints);
	while (i < n) {
		unsigned long v = 0, sh = 0, b;
		do {
			b = ar_ld8u(varints, i++);
			v |= (b & 0x7f) << (sh & 63);
			sh += 7;
		} while (b & 0x80);
		s += v;
	}
	return s;
}
