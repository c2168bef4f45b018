/* compress.c: zstd for the EXEC payloads that cross slow links (docs/protocol.md,
 * "Compression").  Level 1: on a link slow enough to want it, the link, not the compressor, is
 * what a transfer waits for; zstd also passes incompressible blocks through at memory speed,
 * so a failed try costs little.  Whether packing pays is this process's own measure: how
 * fast its packing went lately and how much it saved, against the link's rate. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

#include "ar_proto.h"

/* This process's packing lately (0: none yet): its speed, picoseconds a byte as the wall
 * clock saw them, the median of the last PACK_TIMES payloads (ar_zstd_time_in), and the size
 * it packed to, per mille of the input, a moving average over about 8 payloads */
static _Atomic uint64_t pack_ps_per_byte;
static _Atomic uint64_t pack_ratio_pm;
#define PACK_TIMES 8
static struct {
	pthread_mutex_t lock;
	uint64_t ps[PACK_TIMES];       /* a ring; 0: not yet */
	unsigned next;
} pack_times = { .lock = PTHREAD_MUTEX_INITIALIZER };
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

/* The median, not an average: a thread that loses its CPU in the middle of one payload
 * (a time slice on a loaded machine) takes 10 ms for 4 KiB, a hundred times its speed, and
 * one such in an average of 8 said "packing does not pay" for the next 15 s of a transfer
 * at 100 Mbit/s (one payload a second measures again).  A machine loaded for real makes
 * most payloads slow, and the median with them. */
/* Each thread's zstd contexts, made on its first use and freed when it ends: a context is
 * about a megabyte of tables, and making one for each 4 KiB payload took longer than the
 * packing (39 us against 17 for 4 KiB of headers) */
struct zstd_ctx { ZSTD_CCtx *pack; ZSTD_DCtx *unpack; };
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static bool ctx_key_ok;

static void ctx_free(void *p)
{
	struct zstd_ctx *z = p;
	ZSTD_freeCCtx(z->pack);
	ZSTD_freeDCtx(z->unpack);
	free(z);
}

static void ctx_key_make(void) { ctx_key_ok = pthread_key_create(&ctx_key, ctx_free) == 0; }

/* This thread's contexts, or NULL (no memory: the caller uses one for the call) */
static struct zstd_ctx *thread_ctx(void)
{
	pthread_once(&ctx_once, ctx_key_make);
	if (!ctx_key_ok)
		return NULL;
	struct zstd_ctx *z = pthread_getspecific(ctx_key);
	if (!z && (z = calloc(1, sizeof *z)) != NULL && pthread_setspecific(ctx_key, z) != 0) {
		free(z);
		z = NULL;
	}
	return z;
}

uint64_t ar_zstd_time_in(uint64_t ps)
{
	uint64_t v[PACK_TIMES];
	unsigned n = 0;
	pthread_mutex_lock(&pack_times.lock);
	pack_times.ps[pack_times.next] = ps ? ps : 1;
	pack_times.next = (pack_times.next + 1) % PACK_TIMES;
	for (unsigned i = 0; i < PACK_TIMES; i++)
		if (pack_times.ps[i])
			v[n++] = pack_times.ps[i];
	pthread_mutex_unlock(&pack_times.lock);
	for (unsigned i = 1; i < n; i++)       /* (eight values: insertion sort) */
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	atomic_store_explicit(&pack_ps_per_byte, v[n / 2], memory_order_relaxed);
	return v[n / 2];
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
	struct zstd_ctx *z = thread_ctx();
	if (z && !z->pack)
		z->pack = ZSTD_createCCtx();
	size_t k = z && z->pack ? ZSTD_compressCCtx(z->pack, dst, cap, src, n, 1) :
	           ZSTD_compress(dst, cap, src, n, 1);
	if (n >= AR_ZSTD_MIN) {
		ar_zstd_time_in((now_ns() - t0) * 1000 / n);
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
	struct zstd_ctx *z = thread_ctx();
	if (z && !z->unpack)
		z->unpack = ZSTD_createDCtx();
	size_t k = z && z->unpack ? ZSTD_decompressDCtx(z->unpack, dst, dst_len, src, n) :
	           ZSTD_decompress(dst, dst_len, src, n);
	return !ZSTD_isError(k) && k == dst_len ? 0 : -1;
}
