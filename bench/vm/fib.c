/* fib.c: fib.pna in C (pncc): the doubly recursive Fibonacci function, a call-heavy kernel. */
#include <activerdma/ar.h>

unsigned long fib(unsigned long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
