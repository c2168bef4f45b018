/* bitmap.c: bitmap.pna in C (pncc): the sum of the indexes of the set bits of region `bits`
 * (u64 words, bit k of word i is index 64 * i + k), one ctz per set bit. */
#include <activerdma/ar.h>

#define REGIONS(X) X(bits, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long bitmap(void)
{
	unsigned long n = ar_len(bits), s = 0;
	for (unsigned long off = 0; off < n; off += 8) {
		unsigned long w = ar_ld64(bits, off);
		while (w) {
			s += off * 8 + ar_ctz(w);
			w &= w - 1;
		}
	}
	return s;
}
