/* compress.c: zstd for the EXEC payloads that cross slow links (docs/protocol.md,
 * "Compression").  Level 1: on a link slow enough to want it, the link, not the compressor, is
 * what a transfer waits for; zstd also passes incompressible blocks through at memory speed,
 * so a failed try costs little.  Whether packing pays is this process's own measure: how
 * fast its packing went lately and how much it saved, against the link's rate. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

#include "ar_proto.h"

/* This process's packing lately (moving averages over about 8 payloads; 0: none yet) */
static _Atomic uint64_t pack_ps_per_byte;     /* picoseconds a byte, as the wall clock saw */
static _Atomic uint64_t pack_ratio_pm;        /* packed size per mille of the input */
static _Atomic uint64_t last_probe_ns;
#define PROBE_NS 1000000000ull    /* a payload packed this often when it does not pay */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void average_in(_Atomic uint64_t *avg, uint64_t v)
{
	uint64_t a = atomic_load_explicit(avg, memory_order_relaxed);
	atomic_store_explicit(avg, a ? a - a / 8 + v / 8 : v, memory_order_relaxed);
}

int ar_zstd_pack(const void *src, size_t n, void **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t cap = ZSTD_compressBound(n);
	void *dst = malloc(cap ? cap : 1);
	if (!dst)
		return -1;
	uint64_t t0 = now_ns();
	size_t k = ZSTD_compress(dst, cap, src, n, 1);
	if (n >= AR_ZSTD_MIN) {
		average_in(&pack_ps_per_byte, (now_ns() - t0) * 1000 / n);
		average_in(&pack_ratio_pm, ZSTD_isError(k) || k >= n ? 1000 : (uint64_t)k * 1000 / n);
	}
	if (ZSTD_isError(k) || k >= n - n / 10) {
		free(dst);
		return 1;                  /* not a tenth smaller: not worth the other side's time */
	}
	*out = dst;
	*out_len = k;
	return 0;
}

bool ar_zstd_pays_at(uint64_t ps_per_byte, uint64_t ratio_pm, uint64_t rate)
{
	if (rate == 0 || rate >= AR_ZSTD_BELOW)
		return false;
	if (ps_per_byte == 0 || ratio_pm == 0)
		return true;               /* nothing measured yet: try */
	if (ratio_pm >= 1000)
		return false;
	/* a byte costs 1e12 / rate ps on the link; packed, ratio of it, plus packing it and
	 * unpacking it at the other end (zstd unpacks about three times as fast as it packs) */
	double link_ps = 1e12 / (double)rate;
	return (double)ps_per_byte * 4 / 3 < link_ps * (double)(1000 - ratio_pm) / 1000;
}

bool ar_zstd_pays(uint64_t rate)
{
	if (ar_zstd_pays_at(atomic_load_explicit(&pack_ps_per_byte, memory_order_relaxed),
	                    atomic_load_explicit(&pack_ratio_pm, memory_order_relaxed), rate))
		return true;
	if (rate == 0 || rate >= AR_ZSTD_BELOW)
		return false;
	/* now and then one goes packed anyway, to measure again (the machine got quieter, the
	 * data more compressible) */
	uint64_t now = now_ns(), last = atomic_load(&last_probe_ns);
	return now - last >= PROBE_NS && atomic_compare_exchange_strong(&last_probe_ns, &last, now);
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
