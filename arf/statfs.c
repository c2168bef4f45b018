/* statfs.c: statfs of an ARF image in one round trip, the smallest ARF operation (docs/arf.md).
 * A segment written in C: clang's BPF back end, then pncc (docs/cc.md); the Makefile installs
 * it as build/arfseg/statfs.pno.
 *
 * statfs() outputs six little-endian u64: block size, blocks, free blocks, inodes, free
 * inodes, longest name; it returns the image's epoch (bumped at each attach).  Traps with
 * code 1 when region arf is not an ARF image.
 */
#include <activerdma/ar.h>

#include "layout.h"

#define REGIONS(X) X(arf, ro)
AR_IMPORT_REGIONS(REGIONS);

long statfs(void)
{
	if (ar_ld64(arf, ARF_SB_MAGIC) != ARF_MAGIC_VALUE)
		ar_trap(1);
	ar_outq(ARF_BLOCK_SIZE);
	ar_outq(ar_ld64(arf, ARF_SB_N_BLOCKS));
	ar_outq(ar_ld64(arf, ARF_SB_FREE_BLOCKS));
	ar_outq(ar_ld64(arf, ARF_SB_N_INODES));
	ar_outq(ar_ld64(arf, ARF_SB_FREE_INODES));
	ar_outq(ARF_NAME_MAX);
	return (long)ar_ld64(arf, ARF_SB_EPOCH);
}
