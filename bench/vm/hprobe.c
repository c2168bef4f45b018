/* hprobe.c: hprobe.pna in C (pncc): look up the string keys of region `hq` (a length byte, then
 * the key) in the open-addressing table `htab` (16-byte slots: u32 key offset in `hkeys`, u32
 * key length, 0 for empty; u64 value); the sum of the values found + the number of misses. */
#include <activerdma/ar.h>

#define REGIONS(X) X(htab, ro) X(hkeys, ro) X(hq, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long hprobe(void)
{
	unsigned long mask = ((unsigned long)ar_len(htab) >> 4) - 1, s = 0, q = 0;
	unsigned long n = ar_len(hq);
	while (q < n) {
		unsigned long len = ar_ld8u(hq, q++), h = 0xcbf29ce484222325ul;
		for (unsigned long j = q; j < q + len; j++)
			h = (h ^ ar_ld8u(hq, j)) * 0x100000001b3ul;
		for (unsigned long slot = h & mask;; slot = (slot + 1) & mask) {
			unsigned long e = slot << 4, klen = ar_ld32u(htab, e + 4);
			if (klen == 0) {
				s++;
				break;
			}
			if (klen == len && ar_cmp(hkeys, hq, ar_ld32u(htab, e), q, len) == 0) {
				s += ar_ld64(htab, e + 8);
				break;
			}
		}
		q += len;
	}
	return s;
}
