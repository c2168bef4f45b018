/* linked_list.c: linked_list.pna in C: search and sum a singly linked list that lives in
 * server memory.  Built with clang's BPF back end and pncc (docs/cc.md).
 *
 * Region `mem` (read-only here), 24 bytes per node anywhere in it: u64 next (byte offset of
 * the next node; 0 ends the list), u64 key, u64 value.  Offset 0 is the null pointer.  A
 * corrupt next offset traps 'bounds', a cycle runs out of fuel; neither harms the host.
 *
 * Entries:
 *     find(head, key)  value of the first node whose key is `key`, or -1 when there is none
 *     sum(head)        sum of all values (wrapping), 0 for an empty list
 *     length(head)     number of nodes
 */
#include <activerdma/ar.h>

#define REGIONS(X) X(mem, ro)
AR_IMPORT_REGIONS(REGIONS);

long find(unsigned long head, unsigned long key)
{
	for (unsigned long p = head; p; p = ar_ld64(mem, p))
		if (ar_ld64(mem, p + 8) == key)
			return (long)ar_ld64(mem, p + 16);
	return -1;
}

unsigned long sum(unsigned long head)
{
	unsigned long s = 0;
	for (unsigned long p = head; p; p = ar_ld64(mem, p))
		s += ar_ld64(mem, p + 16);
	return s;
}

long length(unsigned long head)
{
	long n = 0;
	for (unsigned long p = head; p; p = ar_ld64(mem, p))
		n++;
	return n;
}
