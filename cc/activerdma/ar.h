/* activerdma/ar.h: what a segment written in C includes.
 *
 * Compile with clang's BPF back end and translate with pncc (docs/cc.md):
 *
 *     clang -O2 -g -target bpf -mcpu=v3 -I/usr/local/include -c lookup.c -o lookup.o
 *     pncc -o lookup.pno lookup.o
 *
 * Regions and hooks the segment imports are declared with a list macro; their names become
 * C constants (region 3, 4, ... and hook 0, 1, ... in the order listed) and pncc reads the
 * list from the object's sections .ar.regions and .ar.hooks:
 *
 *     #define REGIONS(X) X(table, ro) X(log, rw)
 *     AR_IMPORT_REGIONS(REGIONS);
 *     #define HOOKS(X) X(now, ":l")
 *     AR_IMPORT_HOOKS(HOOKS);
 *
 * Every function that is not static is exported under its name; static functions are
 * internal.  A function takes up to 5 integer arguments and returns one integer.
 *
 * Memory is reached only through the intrinsics below (and through the function's own stack
 * variables and `static const` data): each is a call of a reserved BPF helper number that
 * pncc turns into the one opcode of the same name in docs/isa.md, its region operands as the
 * opcode's immediates.  Region operands must therefore be constants: AR_ARGS, AR_OUT,
 * AR_CONST or a name from AR_IMPORT_REGIONS.  Offsets are byte offsets into the region, and
 * every access is bounds-checked by the VM (a trap, not a crash).
 */
#ifndef ACTIVERDMA_AR_H
#define ACTIVERDMA_AR_H

#if !defined(__bpf__)
#error "activerdma/ar.h is for segment sources: compile them with clang -target bpf"
#endif

/* Our opcodes, numbered as in ops.def (installed beside this header). */
enum ar_op {
#define OP(name, fmt, pop, push, flags, syn) AR_OP_##name,
#include "ops.def"
#undef OP
	AR_OP_COUNT_
};

#define AR_CALL_TAG 0x40000000      /* cc.h: CC_CALL_TAG */
#define AR_ARGS  0                  /* the run's argument bytes, read-only */
#define AR_OUT   1                  /* the output buffer */
#define AR_CONST 2                  /* the segment's constant data: (long)&a_static_const */

/* ---- imports ---- */
#define AR_REGION_ENUM_(name, access) name,
#define AR_REGION_STR_(name, access) #name ":" #access "\0"
#define AR_IMPORT_REGIONS(LIST)                                                          \
	enum { ar_region_before_ = AR_CONST, LIST(AR_REGION_ENUM_) ar_region_end_ };         \
	static const char ar_regions_[] __attribute__((section(".ar.regions"), used)) =     \
		LIST(AR_REGION_STR_)
#define AR_HOOK_ENUM_(name, sig) name,
#define AR_HOOK_STR_(name, sig) #name ":" sig "\0"
#define AR_IMPORT_HOOKS(LIST)                                                            \
	enum { LIST(AR_HOOK_ENUM_) ar_hook_end_ };                                           \
	static const char ar_hooks_[] __attribute__((section(".ar.hooks"), used)) =         \
		LIST(AR_HOOK_STR_)

/* An exported function taking more arguments than BPF passes in registers (5): its C
 * prototype names the first ones, AR_EXPORT_ARGS(fn, n) makes the segment's export take n,
 * and ar_arg(k) (k a constant) reads argument k past the C parameters:
 *
 *     AR_EXPORT_ARGS(setattr, 7);
 *     long setattr(long ino, long valid, long mode, long uid, long gid)
 *     { long atime = ar_arg(5), mtime = ar_arg(6); ... }
 *
 * Only a client can call such a function (not other C functions of the segment). */
#define AR_EXPORT_ARGS(fn, n) \
	static const char ar_args_##fn##_[] __attribute__((section(".ar.args"), used)) = #fn ":" #n

/* ---- the call of one opcode: a BPF helper whose number names the opcode and its
 * immediates; type is the function pointer type (all values are 64-bit) */
#define AR_FN_(type, op, a, b) \
	((type)(void *)(long)(AR_CALL_TAG | AR_OP_##op | (a) << 8 | (b) << 16))
typedef unsigned long (*ar_fn0_)(void);
typedef unsigned long (*ar_fn1_)(unsigned long);
typedef unsigned long (*ar_fn2_)(unsigned long, unsigned long);
typedef unsigned long (*ar_fn3_)(unsigned long, unsigned long, unsigned long);
typedef unsigned long (*ar_fn4_)(unsigned long, unsigned long, unsigned long, unsigned long);
typedef unsigned long (*ar_fn5_)(unsigned long, unsigned long, unsigned long, unsigned long,
                                 unsigned long);

/* loads: ( off -- value ) */
#define ar_ld8u(r, off)  ((unsigned char)AR_FN_(ar_fn1_, LD8U, r, 0)(off))
#define ar_ld8s(r, off)  ((signed char)AR_FN_(ar_fn1_, LD8S, r, 0)(off))
#define ar_ld16u(r, off) ((unsigned short)AR_FN_(ar_fn1_, LD16U, r, 0)(off))
#define ar_ld16s(r, off) ((short)AR_FN_(ar_fn1_, LD16S, r, 0)(off))
#define ar_ld32u(r, off) ((unsigned int)AR_FN_(ar_fn1_, LD32U, r, 0)(off))
#define ar_ld32s(r, off) ((int)AR_FN_(ar_fn1_, LD32S, r, 0)(off))
#define ar_ld64(r, off)  ((unsigned long)AR_FN_(ar_fn1_, LD64, r, 0)(off))
/* stores: ( off value -- ) */
#define ar_st8(r, off, v)  ((void)AR_FN_(ar_fn2_, ST8, r, 0)(off, v))
#define ar_st16(r, off, v) ((void)AR_FN_(ar_fn2_, ST16, r, 0)(off, v))
#define ar_st32(r, off, v) ((void)AR_FN_(ar_fn2_, ST32, r, 0)(off, v))
#define ar_st64(r, off, v) ((void)AR_FN_(ar_fn2_, ST64, r, 0)(off, v))
/* length of a region (of out: bytes written so far) */
#define ar_len(r)          ((long)AR_FN_(ar_fn0_, RLEN, r, 0)())
/* atomics on 8-byte aligned words of an imported rw region; both return the old value */
#define ar_cas(r, off, expect, new) ((unsigned long)AR_FN_(ar_fn3_, CAS, r, 0)(off, expect, new))
#define ar_fadd(r, off, delta)      ((unsigned long)AR_FN_(ar_fn2_, FADD, r, 0)(off, delta))
/* bulk operations */
#define ar_copy(dr, sr, doff, soff, len) ((void)AR_FN_(ar_fn3_, COPY, dr, sr)(doff, soff, len))
#define ar_fill(r, off, len, byte)       ((void)AR_FN_(ar_fn3_, FILL, r, 0)(off, len, byte))
#define ar_cmp(r1, r2, off1, off2, len)  ((int)AR_FN_(ar_fn3_, CMP, r1, r2)(off1, off2, len))
#define ar_findb(r, off, len, byte)      ((long)AR_FN_(ar_fn3_, FINDB, r, 0)(off, len, byte))
#define ar_finds(r, nr, off, len, noff, nlen) \
	((long)AR_FN_(ar_fn4_, FINDS, r, nr)(off, len, noff, nlen))
#define ar_findsi(r, nr, off, len, noff, nlen) \
	((long)AR_FN_(ar_fn4_, FINDSI, r, nr)(off, len, noff, nlen))
/* output: append r[off..+len], one byte, or a u64 as 8 little-endian bytes */
#define ar_output(r, off, len) ((void)AR_FN_(ar_fn2_, OUTPUT, r, 0)(off, len))
#define ar_outb(v)             ((void)AR_FN_(ar_fn1_, OUTB, 0, 0)(v))
#define ar_outq(v)             ((void)AR_FN_(ar_fn1_, OUTQ, 0, 0)(v))
/* stop the run with trap kind 'user' and code (a constant, 0..65535) */
#define ar_trap(code)          ((void)AR_FN_(ar_fn0_, TRAP, (code) & 0xff, (code) >> 8 & 0xff)())
/* bit operations the ISA has as single opcodes */
#define ar_clz(x)     ((long)AR_FN_(ar_fn1_, CLZ, 0, 0)(x))
#define ar_ctz(x)     ((long)AR_FN_(ar_fn1_, CTZ, 0, 0)(x))
#define ar_popcnt(x)  ((long)AR_FN_(ar_fn1_, POPCNT, 0, 0)(x))
#define ar_rotl(x, n) ((unsigned long)AR_FN_(ar_fn2_, ROTL, 0, 0)(x, n))
#define ar_rotr(x, n) ((unsigned long)AR_FN_(ar_fn2_, ROTR, 0, 0)(x, n))
/* argument k of the running function (AR_EXPORT_ARGS): one lget */
#define ar_arg(k)     ((unsigned long)AR_FN_(ar_fn0_, LGET, (k) & 0xff, (k) >> 8 & 0xff)())
/* host hooks: hook h (a name from AR_IMPORT_HOOKS) with 0..5 arguments */
#define ar_hcall0(h)                ((long)AR_FN_(ar_fn0_, HCALL, (h) & 0xff, (h) >> 8)())
#define ar_hcall1(h, a)             ((long)AR_FN_(ar_fn1_, HCALL, (h) & 0xff, (h) >> 8)(a))
#define ar_hcall2(h, a, b)          ((long)AR_FN_(ar_fn2_, HCALL, (h) & 0xff, (h) >> 8)(a, b))
#define ar_hcall3(h, a, b, c)       ((long)AR_FN_(ar_fn3_, HCALL, (h) & 0xff, (h) >> 8)(a, b, c))
#define ar_hcall4(h, a, b, c, d)    ((long)AR_FN_(ar_fn4_, HCALL, (h) & 0xff, (h) >> 8)(a, b, c, d))
#define ar_hcall5(h, a, b, c, d, e) \
	((long)AR_FN_(ar_fn5_, HCALL, (h) & 0xff, (h) >> 8)(a, b, c, d, e))

#endif
