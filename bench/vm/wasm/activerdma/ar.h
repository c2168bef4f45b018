/* bench/vm/wasm/activerdma/ar.h: the kernels' ar.h for clang --target=wasm32, so the same
 * bench/vm/<name>.c runs under wasm3 (the optional wasm3 column, wasm3_run.c).
 *
 * Regions live in the module's linear memory: the harness grows the memory, copies each region
 * the module lists (ar_regions()) into it and tells the module where (ar_bind_()).  An access
 * is a plain load or store at base + off: wasm3 checks it against the linear memory, not
 * against the region, so the wasm build does less checking than the VM (which checks every
 * access against its region): the comparison is, if anything, in wasm3's favour.  Only the
 * intrinsics bench/vm's kernels use are here.  The Makefile makes long 64-bit as in BPF: it
 * defines long as long long below and rewrites the sources' `ul` literals as `ull`.
 */
#ifndef ACTIVERDMA_AR_H
#define ACTIVERDMA_AR_H

#if !defined(__wasm32__)
#error "bench/vm/wasm/activerdma/ar.h is for clang --target=wasm32"
#endif

typedef unsigned long long ar_u64_;
typedef long long ar_s64_;
typedef unsigned int ar_u32_;
typedef unsigned long long ar_u64u_ __attribute__((aligned(1)));
typedef unsigned int ar_u32u_ __attribute__((aligned(1)));
typedef unsigned short ar_u16u_ __attribute__((aligned(1)));

#define AR_MAX_REGIONS_ 16
static unsigned char *ar_base_[AR_MAX_REGIONS_];
static ar_u64_ ar_len_[AR_MAX_REGIONS_];

/* Called by the harness before the kernel: region r is at linear address addr, len bytes. */
void ar_bind_(ar_u32_ r, ar_u32_ addr, ar_u64_ len)
{
	if (r < AR_MAX_REGIONS_) {
		ar_base_[r] = (unsigned char *)addr;
		ar_len_[r] = len;
	}
}

/* Called by the harness: grow the linear memory by pages; the old size in pages, or -1. */
int ar_grow_(int pages)
{
	return (int)__builtin_wasm_memory_grow(0, (unsigned long)pages);
}

#define AR_ARGS  0
#define AR_OUT   1
#define AR_CONST 2

/* Region r gets number 3, 4, ... as in the VM; ar_regions() lists the names, NUL-separated. */
#define AR_REGION_ENUM_(name, access) name,
#define AR_REGION_STR_(name, access) #name "\0"
#define AR_IMPORT_REGIONS(LIST)                                                          \
	enum { ar_region_before_ = AR_CONST, LIST(AR_REGION_ENUM_) ar_region_end_ };         \
	static const char ar_regions_[] = LIST(AR_REGION_STR_);                             \
	const char *ar_regions(void) { return ar_regions_; }                                \
	enum { ar_regions_end_ = 0 }

#define AR_P_(r, off)       (ar_base_[r] + (ar_u32_)(off))
#define ar_ld8u(r, off)     (*(const unsigned char *)AR_P_(r, off))
#define ar_ld8s(r, off)     (*(const signed char *)AR_P_(r, off))
#define ar_ld16u(r, off)    (*(const ar_u16u_ *)AR_P_(r, off))
#define ar_ld32u(r, off)    (*(const ar_u32u_ *)AR_P_(r, off))
#define ar_ld32s(r, off)    ((int)*(const ar_u32u_ *)AR_P_(r, off))
#define ar_ld64(r, off)     (*(const ar_u64u_ *)AR_P_(r, off))
#define ar_st8(r, off, v)   ((void)(*(unsigned char *)AR_P_(r, off) = (unsigned char)(v)))
#define ar_st32(r, off, v)  ((void)(*(ar_u32u_ *)AR_P_(r, off) = (ar_u32_)(v)))
#define ar_st64(r, off, v)  ((void)(*(ar_u64u_ *)AR_P_(r, off) = (ar_u64_)(v)))
#define ar_len(r)           ((ar_s64_)ar_len_[r])
#define ar_copy(dr, sr, doff, soff, n) \
	((void)__builtin_memcpy(AR_P_(dr, doff), AR_P_(sr, soff), (ar_u32_)(n)))
#define ar_ctz(x)           ((ar_s64_)__builtin_ctzll(x))
#define ar_clz(x)           ((ar_s64_)__builtin_clzll(x))
#define ar_popcnt(x)        ((ar_s64_)__builtin_popcountll(x))

/* ar_cmp: <0, 0, >0 as memcmp; ar_findb: the offset of the first byte equal to b in
 * r[off, off + n), or -1. */
static inline int ar_cmp_(const unsigned char *a, const unsigned char *b, ar_u32_ n)
{
	for (ar_u32_ i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}
#define ar_cmp(r1, r2, off1, off2, n) ar_cmp_(AR_P_(r1, off1), AR_P_(r2, off2), (ar_u32_)(n))
static inline long long ar_findb_(const unsigned char *base, ar_u64_ off, ar_u64_ n, unsigned b)
{
	for (ar_u64_ i = off; i < off + n; i++)
		if (base[(ar_u32_)i] == (unsigned char)b)
			return (long long)i;
	return -1;
}
#define ar_findb(r, off, n, b) ar_findb_(ar_base_[r], (off), (n), (b))

/* long is 64-bit in the kernels (BPF's LP64): make it so here. */
#define long long long

#endif
