/* hash_table.c: hash_table.pna in C: look a key up in a chained hash table that lives in
 * server memory.  Built with clang's BPF back end and pncc (docs/cc.md, `make examples`).
 *
 * Region `table` (read-only here), little-endian:
 *
 *     +0              u64 shift       64 - log2(n_buckets); n_buckets is a power of two >= 2
 *     +8              u64 bucket[n_buckets]   offset of the first node of each chain, 0 = empty
 *     +8+8*n_buckets  nodes, 24 bytes each: u64 next (0 ends the chain), u64 key, u64 value
 *
 * bucket(key) = (key * 0x9e3779b97f4a7c15 mod 2^64) >> shift (Fibonacci hashing).
 *
 * Entries:
 *     lookup(key)      value stored under key, or -1 when the key is absent
 *     chain(key)       length of the chain key hashes to
 */
#include <activerdma/ar.h>

#define REGIONS(X) X(table, ro)
AR_IMPORT_REGIONS(REGIONS);

#define NODE_NEXT  0
#define NODE_KEY   8
#define NODE_VALUE 16

/* offset of the first node of key's chain (0 if the bucket is empty) */
static unsigned long bucket(unsigned long key)
{
	unsigned long shift = ar_ld64(table, 0);
	return ar_ld64(table, 8 + 8 * ((key * 0x9e3779b97f4a7c15ul) >> shift));
}

long lookup(unsigned long key)
{
	for (unsigned long p = bucket(key); p; p = ar_ld64(table, p + NODE_NEXT))
		if (ar_ld64(table, p + NODE_KEY) == key)
			return (long)ar_ld64(table, p + NODE_VALUE);
	return -1;
}

long chain(unsigned long key)
{
	long n = 0;
	for (unsigned long p = bucket(key); p; p = ar_ld64(table, p + NODE_NEXT))
		n++;
	return n;
}
