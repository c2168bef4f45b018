/* isum.c: isum.pna in C (pncc): sum over i in [0, n) of (i * i) % 7, unsigned, wrapping. */
#include <activerdma/ar.h>

unsigned long isum(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}
