/* bench/vm/ubpf/activerdma/ar.h: the kernels' ar.h for clang -target bpf run by uBPF, so the
 * same bench/vm/<name>.c runs under uBPF (the optional uBPF column, ubpf_run.c).
 *
 * uBPF passes a program one block of memory (r1).  The harness copies every region into that
 * block and writes, at its start, the context below: the entry's arguments and each region's
 * address and length.  The context is a global in .data, which uBPF's loader relocates (through
 * the harness's data relocation callback) to the start of the block, so every access of a
 * kernel, the context included, lies in the block.  An access is a plain load or store at the
 * region's base + off: uBPF's interpreter checks it against the block, not against the region,
 * and its JIT checks nothing, so the uBPF build does less checking than the VM (which checks
 * every access against its region).
 *
 * Region numbers are fixed here for all kernels (AR_RG_*, the order of ubpf_run.c's list),
 * not per kernel as in the VM.  Loads and stores are naturally aligned (every access of
 * bench/vm's kernels is).  BPF has no instruction for ar_copy, ar_cmp and ar_findb: they are
 * uBPF external functions (helpers 1-3, host code, as the VM's copy/cmp/findb are); nor for
 * ctz, clz and popcount: those are the usual shift-and-mask sequences.  Only the intrinsics
 * bench/vm's kernels use are here.  The Makefile appends AR_UBPF_ENTRY(<name>) to each kernel.
 */
#ifndef ACTIVERDMA_AR_H
#define ACTIVERDMA_AR_H

#if !defined(__bpf__)
#error "bench/vm/ubpf/activerdma/ar.h is for clang -target bpf"
#endif

typedef unsigned long ar_u64_;
typedef unsigned int ar_u32_;
typedef unsigned short ar_u16_;

#define AR_MAX_REGIONS_ 16
#define AR_MAX_ARGS_    4

/* Written by the harness before each run; at the start of the block (ubpf_run.c). */
struct ar_ubpf_ctx_ {
	ar_u64_ args[AR_MAX_ARGS_];
	unsigned char *base[AR_MAX_REGIONS_];
	ar_u64_ len[AR_MAX_REGIONS_];
};
/* In .data (not .bss): uBPF relocates only references to a writable PROGBITS section. */
__attribute__((section(".data"))) struct ar_ubpf_ctx_ ar_ctx_;

#define AR_ARGS  0
#define AR_OUT   1
#define AR_CONST 2

/* The regions of bench_vm.c, numbered from 3 in the order of ubpf_run.c's ub_region_names. */
enum {
	AR_RG_data = 3, AR_RG_nodes, AR_RG_varints, AR_RG_htab, AR_RG_hkeys, AR_RG_hq, AR_RG_bits,
	AR_RG_bnodes, AR_RG_bq, AR_RG_recs, AR_RG_sbuf, AR_RG_END_
};
_Static_assert(AR_RG_END_ <= AR_MAX_REGIONS_, "too many regions");

#define AR_REGION_ENUM_(name, access) name = AR_RG_##name,
#define AR_IMPORT_REGIONS(LIST) \
	enum { LIST(AR_REGION_ENUM_) ar_region_end_ }

/* The helpers the harness registers (ubpf_register): numbers and signatures. */
#define AR_H_COPY_  1      /* (dst, src, n): memmove */
#define AR_H_CMP_   2      /* (a, b, n): <0, 0, >0 as memcmp */
#define AR_H_FINDB_ 3      /* (p, n, b): the index of the first byte b in p[0, n), or -1 */
static long (*const ar_h_copy_)(void *, const void *, ar_u64_) = (void *)AR_H_COPY_;
static long (*const ar_h_cmp_)(const void *, const void *, ar_u64_) = (void *)AR_H_CMP_;
static long (*const ar_h_findb_)(const void *, ar_u64_, ar_u64_) = (void *)AR_H_FINDB_;

#define AR_P_(r, off)       (ar_ctx_.base[r] + (ar_u64_)(off))
#define ar_ld8u(r, off)     (*(const unsigned char *)AR_P_(r, off))
#define ar_ld8s(r, off)     (*(const signed char *)AR_P_(r, off))
#define ar_ld16u(r, off)    (*(const ar_u16_ *)AR_P_(r, off))
#define ar_ld32u(r, off)    (*(const ar_u32_ *)AR_P_(r, off))
#define ar_ld32s(r, off)    ((int)*(const ar_u32_ *)AR_P_(r, off))
#define ar_ld64(r, off)     (*(const ar_u64_ *)AR_P_(r, off))
#define ar_st8(r, off, v)   ((void)(*(unsigned char *)AR_P_(r, off) = (unsigned char)(v)))
#define ar_st32(r, off, v)  ((void)(*(ar_u32_ *)AR_P_(r, off) = (ar_u32_)(v)))
#define ar_st64(r, off, v)  ((void)(*(ar_u64_ *)AR_P_(r, off) = (ar_u64_)(v)))
#define ar_len(r)           ((long)ar_ctx_.len[r])
#define ar_copy(dr, sr, doff, soff, n) \
	((void)ar_h_copy_(AR_P_(dr, doff), AR_P_(sr, soff), (ar_u64_)(n)))
#define ar_cmp(r1, r2, off1, off2, n) \
	((int)ar_h_cmp_(AR_P_(r1, off1), AR_P_(r2, off2), (ar_u64_)(n)))
/* ar_findb: the offset of the first byte equal to b in r[off, off + n), or -1. */
static inline long ar_findb_(const unsigned char *base, ar_u64_ off, ar_u64_ n, unsigned b)
{
	long i = ar_h_findb_(base + off, n, b & 0xff);
	return i < 0 ? -1 : (long)off + i;
}
#define ar_findb(r, off, n, b) ar_findb_(ar_ctx_.base[r], (ar_u64_)(off), (ar_u64_)(n), (b))

static inline long ar_popcnt_(ar_u64_ x)
{
	x = x - ((x >> 1) & 0x5555555555555555ul);
	x = (x & 0x3333333333333333ul) + ((x >> 2) & 0x3333333333333333ul);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0ful;
	return (long)((x * 0x0101010101010101ul) >> 56);
}
/* ctz(0) and clz(0) are 64, as the VM's. */
#define ar_popcnt(x)        ar_popcnt_((ar_u64_)(x))
#define ar_ctz(x)           ar_popcnt_(((ar_u64_)(x) & -(ar_u64_)(x)) - 1)
static inline long ar_clz_(ar_u64_ x)
{
	x |= x >> 1; x |= x >> 2; x |= x >> 4; x |= x >> 8; x |= x >> 16; x |= x >> 32;
	return 64 - ar_popcnt_(x);
}
#define ar_clz(x)           ar_clz_((ar_u64_)(x))

/* The program's entry, appended to each kernel by the Makefile: uBPF calls it with the block in
 * r1; it calls the kernel k (no argument or one) with the arguments of the context. */
#define AR_TAKES_NONE_(k)                                                          \
	(__builtin_types_compatible_p(__typeof__(&k), long (*)(void)) ||               \
	 __builtin_types_compatible_p(__typeof__(&k), unsigned long (*)(void)))
#define AR_UBPF_ENTRY(k)                                                           \
	unsigned long ar_entry_(void *mem)                                             \
	{                                                                              \
		return __builtin_choose_expr(AR_TAKES_NONE_(k),                            \
		                             ((unsigned long (*)(void))k)(),               \
		                             ((unsigned long (*)(unsigned long))k)(        \
		                                 ar_ctx_.args[0]));                        \
	}

#endif
