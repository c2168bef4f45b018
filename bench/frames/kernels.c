/* kernels.c: the cost of C stack memory (docs/cc.md, "Stack memory"): pairs of kernels, one
 * with frames in the frame region, one without.  Built with clang -target bpf and pncc;
 * frames.c runs them.
 *   tiny_*   one run of one call: the frame's prologue, epilogue and end-of-run zeroing
 *   arr_*    the same loop over 32 words in a local array and in region heap
 *   calls_*  n calls of a callee with and without a frame
 */
#include <activerdma/ar.h>

#define REGIONS(X) X(heap, rw)
AR_IMPORT_REGIONS(REGIONS);

#define NOINLINE __attribute__((noinline))

static NOINLINE long g(long *p) { return p[0] + 1; }
static NOINLINE long h(long x) { return x + 1; }

long tiny_framed(long x)
{
	long a = x;
	return g(&a);
}

long tiny_plain(long x) { return h(x); }

long arr_frame(unsigned long n)
{
	long a[32];
	unsigned long s = 0;
	for (unsigned long i = 0; i < 32; i++)
		a[i] = i;
	for (unsigned long k = 0; k < n; k++) {
		unsigned long j = k & 31;
		a[j] = a[j] + k;
		s += a[(j * 7) & 31];
	}
	return s;
}

long arr_region(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < 32; i++)
		ar_st64(heap, 8 * i, i);
	for (unsigned long k = 0; k < n; k++) {
		unsigned long j = k & 31;
		ar_st64(heap, 8 * j, ar_ld64(heap, 8 * j) + k);
		s += ar_ld64(heap, 8 * ((j * 7) & 31));
	}
	return s;
}

static NOINLINE long fr(long x)
{
	volatile long a[2];
	a[0] = x;
	a[1] = x;
	return a[0] + a[1];
}

static NOINLINE long pl(long x) { return x + x; }

long calls_framed(unsigned long n)
{
	long s = 0;
	for (unsigned long k = 0; k < n; k++)
		s += fr(k);
	return s;
}

long calls_plain(unsigned long n)
{
	long s = 0;
	for (unsigned long k = 0; k < n; k++)
		s += pl(k);
	return s;
}
