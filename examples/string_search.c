/* string_search.c: string_search.pna in C: find a fixed string in a text that lives in
 * server memory.  The needle is the run's argument bytes; the scan uses the finds/findb bulk
 * instructions, and only what matched is output.  Built with clang's BPF back end and pncc.
 *
 * Region `text` (read-only): any bytes, lines end with '\n'.
 *
 * Entries (as in string_search.pna):
 *     count()    number of occurrences, overlapping ones included; 0 for an empty needle
 *     offsets()  the same count; outputs each occurrence's offset as a little-endian u64
 *     lines()    outputs every line that contains the needle, with its '\n', like grep -F;
 *                returns the number of lines (an empty needle matches every line)
 */
#include <activerdma/ar.h>

#define REGIONS(X) X(text, ro)
AR_IMPORT_REGIONS(REGIONS);

static long search(int emit)
{
	long n = ar_len(text), nlen = ar_len(AR_ARGS), c = 0, pos = 0, m;

	if (nlen == 0)
		return 0;       /* an empty needle would match at every offset */
	while ((m = ar_finds(text, AR_ARGS, pos, n - pos, 0, nlen)) != -1) {
		c++;
		if (emit)
			ar_outq(m);
		pos = m + 1;
	}
	return c;
}

long count(void) { return search(0); }
long offsets(void) { return search(1); }

long lines(void)
{
	long n = ar_len(text), nlen = ar_len(AR_ARGS), c = 0, pos = 0;

	while (pos < n) {
		long m = ar_finds(text, AR_ARGS, pos, n - pos, 0, nlen);
		if (m == -1)
			break;
		long s = m, e;
		/* back to the start of the match's line; lines before pos are done */
		while (s > pos && ar_ld8u(text, s - 1) != '\n')
			s--;
		e = ar_findb(text, m, n - m, '\n');
		e = e == -1 ? n : e + 1;
		ar_output(text, s, e - s);
		c++;
		pos = e;
	}
	return c;
}
