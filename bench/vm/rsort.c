/* rsort.c: rsort.pna in C (pncc): sort small records.  Region `recs` holds 8-byte records
 * (u32 key, u32 value); each run of SORT_RUN records is copied to the scratch region `sbuf`
 * and insertion-sorted there by key (stable); the checksum s = (s * 31 + value) mod 2^32 over
 * every sorted run in turn. */
#include <activerdma/ar.h>

#define SORT_RUN 64             /* records per sorted run */

#define REGIONS(X) X(recs, ro) X(sbuf, rw)
AR_IMPORT_REGIONS(REGIONS);

unsigned long rsort(void)
{
	unsigned long n = ar_len(recs), s = 0;
	for (unsigned long base = 0; base < n; base += 8 * SORT_RUN) {
		ar_copy(sbuf, recs, 0, base, 8 * SORT_RUN);
		for (unsigned long i = 1; i < SORT_RUN; i++) {
			unsigned long rec = ar_ld64(sbuf, 8 * i), key = rec & 0xffffffff, j = i;
			for (; j > 0; j--) {
				unsigned long prev = ar_ld64(sbuf, 8 * (j - 1));
				if ((prev & 0xffffffff) <= key)
					break;
				ar_st64(sbuf, 8 * j, prev);
			}
			ar_st64(sbuf, 8 * j, rec);
		}
		for (unsigned long i = 0; i < SORT_RUN; i++)
			s = (s * 31 + ar_ld32u(sbuf, 8 * i + 4)) & 0xffffffff;
	}
	return s;
}
