/* compress.c: zstd for the EXEC payloads that cross slow links (docs/protocol.md,
 * "Compression").  Level 1: on a link slow enough to want it, the link, not the compressor, is
 * what a transfer waits for; zstd also passes incompressible blocks through at memory speed,
 * so a failed try costs little. */
#include <stdlib.h>
#include <zstd.h>

#include "ar_proto.h"

int ar_zstd_pack(const void *src, size_t n, void **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t cap = ZSTD_compressBound(n);
	void *dst = malloc(cap ? cap : 1);
	if (!dst)
		return -1;
	size_t k = ZSTD_compress(dst, cap, src, n, 1);
	if (ZSTD_isError(k) || k >= n - n / 10) {
		free(dst);
		return 1;                  /* not a tenth smaller: not worth the other side's time */
	}
	*out = dst;
	*out_len = k;
	return 0;
}

int ar_zstd_unpack(const void *src, size_t n, void *dst, size_t dst_len)
{
	/* the frame's own size, when it states one, must be what the message said: a frame
	 * claiming more is refused before any work */
	unsigned long long claimed = ZSTD_getFrameContentSize(src, n);
	if (claimed == ZSTD_CONTENTSIZE_ERROR ||
	    (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != dst_len))
		return -1;
	size_t k = ZSTD_decompress(dst, dst_len, src, n);
	return !ZSTD_isError(k) && k == dst_len ? 0 : -1;
}
