/* local_sort.c: C that works on arrays on its own stack, which pncc puts in the run's frame
 * region (docs/cc.md, "Stack memory"): the argument bytes are copied into a local buffer,
 * a helper that takes the buffer's address works on it in place, and the result is output.
 * No region is imported: the scratch memory is the frames'.
 *
 * Entries:
 *     reverse()  outputs the argument bytes (at most 256) in reverse order; returns their count
 *     sort()     the argument bytes as little-endian u64 values (at most 32, a partial last
 *                word ignored), sorted ascending, output as 8 bytes each; returns their count
 */
#include <activerdma/ar.h>

#define MAX_BYTES 256
#define MAX_WORDS 32

static __attribute__((noinline)) void swap_bytes(unsigned char *a, unsigned char *b)
{
	unsigned char t = *a;
	*a = *b;
	*b = t;
}

static __attribute__((noinline)) void reverse_in_place(unsigned char *p, unsigned long n)
{
	for (unsigned long i = 0; i < n / 2; i++)
		swap_bytes(&p[i], &p[n - 1 - i]);
}

long reverse(void)
{
	unsigned char buf[MAX_BYTES];
	unsigned long n = (unsigned long)ar_len(AR_ARGS);

	if (n > MAX_BYTES)
		n = MAX_BYTES;
	for (unsigned long i = 0; i < n; i++)
		buf[i] = (unsigned char)ar_ld8u(AR_ARGS, i);
	reverse_in_place(buf, n);
	for (unsigned long i = 0; i < n; i++)
		ar_outb(buf[i]);
	return (long)n;
}

/* insertion sort: a[0..n) ascending */
static __attribute__((noinline)) void sort_words(unsigned long *a, unsigned long n)
{
	for (unsigned long i = 1; i < n; i++) {
		unsigned long v = a[i], j = i;
		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

long sort(void)
{
	unsigned long v[MAX_WORDS];
	unsigned long n = (unsigned long)ar_len(AR_ARGS) / 8;

	if (n > MAX_WORDS)
		n = MAX_WORDS;
	for (unsigned long i = 0; i < n; i++)
		v[i] = ar_ld64(AR_ARGS, 8 * i);
	sort_words(v, n);
	for (unsigned long i = 0; i < n; i++)
		ar_outq(v[i]);
	return (long)n;
}
