/* btree.c: btree.pna in C (pncc): B-tree node search.  Region `bnodes` holds nodes of
 * BT_KEYS sorted u32 keys; query i of region `bq` (u32 keys) searches node i % number of
 * nodes (a power of two) by binary search; the sum of the lower-bound positions found. */
#include <activerdma/ar.h>

#define BT_KEYS 256             /* keys per node: 1 KiB nodes */

#define REGIONS(X) X(bnodes, ro) X(bq, ro)
AR_IMPORT_REGIONS(REGIONS);

unsigned long btree(void)
{
	unsigned long mask = (unsigned long)ar_len(bnodes) / (4 * BT_KEYS) - 1, s = 0;
	unsigned long n = (unsigned long)ar_len(bq) / 4;
	for (unsigned long i = 0; i < n; i++) {
		unsigned long q = ar_ld32u(bq, 4 * i), node = (i & mask) * (4 * BT_KEYS);
		unsigned long lo = 0, hi = BT_KEYS;
		while (lo < hi) {
			unsigned long mid = (lo + hi) >> 1;
			if (ar_ld32u(bnodes, node + 4 * mid) < q)
				lo = mid + 1;
			else
				hi = mid;
		}
		s += lo;
	}
	return s;
}
