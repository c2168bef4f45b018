/* test_cc.c: unit tests of pncc (cc/): C compiled at test time with clang's BPF back end,
 * translated, verified, and run on the interpreter and the JIT.
 *
 *   - BPF instructions: every class pncc accepts, each pinned with inline assembly (register
 *     operands r1, r2, result r0) and checked against the BPF semantics written in C below,
 *     over edge values (32-bit wrap-around, signs, shifts by the width and beyond, division
 *     by zero: our trap) and random inputs;
 *   - C cases: calls, recursion, constants, stack variables, every family of ar.h intrinsics,
 *     hooks, traps that name the C line; stack memory (frame_*: stack addresses, the frame
 *     region), and runs on one thread that must not see each other's frame bytes;
 *   - refusals: each error of docs/cc.md with its message and the C line it names;
 *   - differential: the bench/vm kernels and the examples, in C through pncc and in pnasm,
 *     give the same results, output and trap kinds on both engines over random inputs;
 *   - hostile objects: truncated and bit-flipped objects (of a plain and a framed seed) are
 *     refused or, when accepted, pass the verifier.
 * Run from the top of the tree (make check); SRCDIR overrides.  Needs clang (scripts/deps.sh).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asm.h"
#include "cc.h"
#include "isa.h"
#include "vm.h"

static int n_pass, n_fail;
static const char *srcdir = ".";
static char tmpdir[64];

static void check(int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(int ok, const char *name, const char *fmt, ...)
{
	if (ok) {
		n_pass++;
		return;
	}
	n_fail++;
	printf("FAIL %s: ", name);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static uint64_t rng_state = 0x7e57cc;
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- compiling: C text -> BPF object (clang) -> segment (pncc) ---- */

/* Compile src with clang; returns the object (malloc'd) or NULL with clang's messages in
 * err.  extra: more clang flags. */
static void *clang_object(const char *src, const char *extra, size_t *len, char *err, size_t errlen)
{
	char c_path[128], o_path[128], log_path[128], cmd[1024];
	snprintf(c_path, sizeof c_path, "%s/case.c", tmpdir);
	snprintf(o_path, sizeof o_path, "%s/case.o", tmpdir);
	snprintf(log_path, sizeof log_path, "%s/clang.log", tmpdir);
	FILE *f = fopen(c_path, "w");
	if (!f || fputs(src, f) < 0 || fclose(f) != 0) {
		snprintf(err, errlen, "cannot write %s", c_path);
		return NULL;
	}
	remove(o_path);
	snprintf(cmd, sizeof cmd, "clang -O2 -g -target bpf -mcpu=v3 -Wall -I%s/cc -I%s/isa %s "
	         "-c %s -o %s >%s 2>&1", srcdir, srcdir, extra ? extra : "", c_path, o_path, log_path);
	int rc = system(cmd);
	void *obj = NULL;
	if (rc != 0 || isa_read_file(o_path, &obj, len) != 0) {
		void *log = NULL;
		size_t log_len = 0;
		isa_read_file(log_path, &log, &log_len);
		snprintf(err, errlen, "clang failed (%d): %.*s", rc, (int)(log_len > 400 ? 400 : log_len),
		         log ? (char *)log : "");
		free(log);
		return NULL;
	}
	return obj;
}

/* C text -> segment.  Returns the error count (-1: clang failed); diags and seg malloc'd. */
static int compile(const char *src, const char *extra, uint8_t **seg, size_t *seg_len,
                   char **diags, char *err, size_t errlen)
{
	size_t len;
	*seg = NULL;
	*diags = NULL;
	void *obj = clang_object(src, extra, &len, err, errlen);
	if (!obj)
		return -1;
	int n = cc_compile(obj, len, "case.o", NULL, seg, seg_len, diags, NULL);
	free(obj);
	return n;
}

/* ---- the host a test segment runs in ---- */

#define REGION_LEN 4096
static uint8_t table_mem[REGION_LEN];
static uint64_t heap_mem[REGION_LEN / 8];   /* 8-byte aligned for the atomics */

static int64_t hook_twice(struct vm_hook_ctx *ctx, int64_t a) { return 2 * a; }

static struct vm *new_vm(void)
{
	struct vm *vm = vm_new();
	for (size_t i = 0; i < REGION_LEN; i++)
		table_mem[i] = (uint8_t)(i * 7 + 1);
	memset(heap_mem, 0, sizeof heap_mem);
	if (!vm || vm_bind_region(vm, "table", table_mem, REGION_LEN, ISA_ACC_RO) ||
	    vm_bind_region(vm, "heap", heap_mem, REGION_LEN, ISA_ACC_RW) ||
	    vm_bind_hook(vm, "twice", (void *)hook_twice, "l:l", NULL)) {
		fprintf(stderr, "test_cc: cannot set up the vm\n");
		exit(1);
	}
	return vm;
}

struct outcome {
	int rc;                    /* vm_run's */
	int64_t value;
	int trap;
	uint32_t trap_code, trap_line;
	uint8_t out[4096];
	uint64_t out_len;
};

static void run(const struct vm_prog *prog, const char *entry, const int64_t *argv, unsigned n,
                int engine, const void *args, size_t args_len, struct outcome *o)
{
	unsigned n_args;
	struct vm_run_opts opts = { .args = args, .args_len = args_len, .out = o->out,
	                            .out_cap = sizeof o->out, .fuel = 1000000, .engine = engine };
	struct vm_result res;
	memset(o, 0, sizeof *o);
	int e = vm_prog_entry(prog, entry, &n_args);
	if (e < 0) {
		o->rc = e;
		return;
	}
	o->rc = vm_run(prog, (unsigned)e, argv, n, &opts, &res);
	o->value = res.value;
	o->trap = res.trap.kind;
	o->trap_code = res.trap.code;
	o->trap_line = res.trap.line;
	o->out_len = res.out_len;
}

/* ---- BPF instructions, one function each: "r0 = f(r1, r2)" in inline assembly ---- */

#define U32(x) ((uint64_t)(uint32_t)(x))
#define S32(x) ((int64_t)(int32_t)(x))
#define TRAP_DIV(b, v) ((b) ? (v) : (*trap = ISA_TRAP_DIV_ZERO, 0))
#define BSWAP16(x) ((uint64_t)__builtin_bswap16((uint16_t)(x)))
#define BSWAP32(x) ((uint64_t)__builtin_bswap32((uint32_t)(x)))
#define JMP(cond) "r0 = 1\n if " cond " goto +1\n r0 = 2"
#define IF(c) ((c) ? 1u : 2u)
/* "x = 1; if (cond) goto +1; x = 0" is the shape pncc turns into one comparison opcode */
#define SEL(cond) "r0 = 1\n if " cond " goto +1\n r0 = 0"
#define SELJA(cond) "r0 = 0\n if " cond " goto +2\n r0 = 1\n goto +0"
/* clang 14's BPF assembler has no syntax for some instructions its disassembler prints
 * (mod, jset): those are written as .quad code | regs << 8 | off << 16 | imm << 32 */

/* X(name, BPF assembly, result for a = r1, b = r2 (uint64_t), setting *trap on a trap) */
#define INSNS(X) \
	X(mov64, "r0 = r1", a) \
	X(mov32, "w0 = w1", U32(a)) \
	X(movk64, "r0 = -5", (uint64_t)-5) \
	X(movk32, "w0 = -5", 0xfffffffbu) \
	X(add64, "r0 = r1\n r0 += r2", a + b) \
	X(add32, "w0 = w1\n w0 += w2", U32(a + b)) \
	X(addk32, "w0 = w1\n w0 += -1", U32(a - 1)) \
	X(addk64, "r0 = r1\n r0 += -1000", a - 1000) \
	X(addk64s, "r0 = r1\n r0 += 100", a + 100) \
	X(sub64, "r0 = r1\n r0 -= r2", a - b) \
	X(sub32, "w0 = w1\n w0 -= w2", U32(a - b)) \
	X(subk64, "r0 = r1\n r0 -= 3", a - 3) \
	X(mul64, "r0 = r1\n r0 *= r2", a * b) \
	X(mul32, "w0 = w1\n w0 *= w2", U32(a * b)) \
	X(mulk32, "w0 = w1\n w0 *= -7", U32(a * (uint64_t)-7)) \
	X(div64, "r0 = r1\n r0 /= r2", TRAP_DIV(b, a / (b ? b : 1))) \
	X(div32, "w0 = w1\n w0 /= w2", TRAP_DIV(U32(b), U32(a) / (U32(b) ? U32(b) : 1))) \
	X(divk64, "r0 = r1\n r0 /= 3", a / 3) \
	X(divk32, "w0 = w1\n w0 /= -3", U32(a) / 0xfffffffdu) \
	X(mod64, "r0 = r1\n .quad 0x209f /* r0 %%= r2: no mnemonic in clang 14 */", TRAP_DIV(b, a % (b ? b : 1))) \
	X(mod32, "w0 = w1\n .quad 0x209c /* w0 %%= w2 */", TRAP_DIV(U32(b), U32(a) % (U32(b) ? U32(b) : 1))) \
	X(modk32, "w0 = w1\n .quad 0x700000094 /* w0 %%= 7 */", U32(a) % 7) \
	X(or64, "r0 = r1\n r0 |= r2", a | b) \
	X(or32, "w0 = w1\n w0 |= w2", U32(a | b)) \
	X(and64, "r0 = r1\n r0 &= r2", a & b) \
	X(and32, "w0 = w1\n w0 &= w2", U32(a & b)) \
	X(andk64, "r0 = r1\n r0 &= -2", a & ~1ull) \
	X(xor64, "r0 = r1\n r0 ^= r2", a ^ b) \
	X(xor32, "w0 = w1\n w0 ^= w2", U32(a ^ b)) \
	X(lsh64, "r0 = r1\n r0 <<= r2", a << (b & 63)) \
	X(lsh32, "w0 = w1\n w0 <<= w2", U32(U32(a) << (b & 31))) \
	X(rsh64, "r0 = r1\n r0 >>= r2", a >> (b & 63)) \
	X(rsh32, "w0 = w1\n w0 >>= w2", U32(a) >> (b & 31)) \
	X(arsh64, "r0 = r1\n r0 s>>= r2", (uint64_t)((int64_t)a >> (b & 63))) \
	X(arsh32, "w0 = w1\n w0 s>>= w2", U32(S32(a) >> (b & 31))) \
	X(lshk64, "r0 = r1\n r0 <<= 70", a << 6) \
	X(rshk32, "w0 = w1\n w0 >>= 33", U32(a) >> 1) \
	X(arshk32, "w0 = w1\n w0 s>>= 31", U32(S32(a) >> 31)) \
	X(neg64, "r0 = r1\n r0 = -r0", -a) \
	X(neg32, "w0 = w1\n w0 = -w0", U32(-a)) \
	X(be16, "r0 = r1\n r0 = be16 r0", BSWAP16(a)) \
	X(be32, "r0 = r1\n r0 = be32 r0", BSWAP32(a)) \
	X(be64, "r0 = r1\n r0 = be64 r0", __builtin_bswap64(a)) \
	X(le16, "r0 = r1\n r0 = le16 r0", a & 0xffff) \
	X(le32, "r0 = r1\n r0 = le32 r0", U32(a)) \
	X(le64, "r0 = r1\n r0 = le64 r0", a) \
	X(ldimm64, "r0 = 0x123456789abcdef0 ll", 0x123456789abcdef0ull) \
	X(ja, "r0 = 1\n goto +1\n r0 = 2", 1) \
	X(jeq, JMP("r1 == r2"), IF(a == b)) \
	X(jne, JMP("r1 != r2"), IF(a != b)) \
	X(jgt, JMP("r1 > r2"), IF(a > b)) \
	X(jge, JMP("r1 >= r2"), IF(a >= b)) \
	X(jlt, JMP("r1 < r2"), IF(a < b)) \
	X(jle, JMP("r1 <= r2"), IF(a <= b)) \
	X(jsgt, JMP("r1 s> r2"), IF((int64_t)a > (int64_t)b)) \
	X(jsge, JMP("r1 s>= r2"), IF((int64_t)a >= (int64_t)b)) \
	X(jslt, JMP("r1 s< r2"), IF((int64_t)a < (int64_t)b)) \
	X(jsle, JMP("r1 s<= r2"), IF((int64_t)a <= (int64_t)b)) \
	X(jset, "r0 = 1\n .quad 0x1214d /* if r1 & r2 goto +1 */\n r0 = 2", IF((a & b) != 0)) \
	X(jeq32, JMP("w1 == w2"), IF(U32(a) == U32(b))) \
	X(jne32, JMP("w1 != w2"), IF(U32(a) != U32(b))) \
	X(jgt32, JMP("w1 > w2"), IF(U32(a) > U32(b))) \
	X(jge32, JMP("w1 >= w2"), IF(U32(a) >= U32(b))) \
	X(jlt32, JMP("w1 < w2"), IF(U32(a) < U32(b))) \
	X(jle32, JMP("w1 <= w2"), IF(U32(a) <= U32(b))) \
	X(jsgt32, JMP("w1 s> w2"), IF(S32(a) > S32(b))) \
	X(jsge32, JMP("w1 s>= w2"), IF(S32(a) >= S32(b))) \
	X(jslt32, JMP("w1 s< w2"), IF(S32(a) < S32(b))) \
	X(jsle32, JMP("w1 s<= w2"), IF(S32(a) <= S32(b))) \
	X(jset32, "r0 = 1\n .quad 0x1214e /* if w1 & w2 goto +1 */\n r0 = 2", IF((U32(a) & U32(b)) != 0)) \
	X(jeqk0, JMP("r1 == 0"), IF(a == 0)) \
	X(jnek0_32, JMP("w1 != 0"), IF(U32(a) != 0)) \
	X(jgtk, JMP("r1 > -5"), IF(a > (uint64_t)-5)) \
	X(jsgtk, JMP("r1 s> -5"), IF((int64_t)a > -5)) \
	X(jgtk32, JMP("w1 > -5"), IF(U32(a) > 0xfffffffbu)) \
	X(jsltk32, JMP("w1 s< -5"), IF(S32(a) < -5)) \
	X(jsetk32, "r0 = 1\n .quad 0x8000000000010146 /* if w1 & 0x80000000 goto +1 */\n r0 = 2", IF((a & 0x80000000u) != 0)) \
	X(sel_ltu, SEL("r1 < r2"), (uint64_t)(a < b)) \
	X(sel_sle, SEL("r1 s<= r2"), (uint64_t)((int64_t)a <= (int64_t)b)) \
	X(sel_sgt32, SEL("w1 s> w2"), (uint64_t)(S32(a) > S32(b))) \
	X(sel_ge32k, SEL("w1 >= -5"), (uint64_t)(U32(a) >= 0xfffffffbu)) \
	X(sel_eq0, SEL("r1 == 0"), (uint64_t)(a == 0)) \
	X(sel_ne0_32, SEL("w1 != 0"), (uint64_t)(U32(a) != 0)) \
	X(sel_set, "r0 = 1\n .quad 0x1214d /* if r1 & r2 goto +1 */\n r0 = 0", (uint64_t)((a & b) != 0)) \
	X(sel_ja_ne, SELJA("r1 != r2"), (uint64_t)(a == b)) \
	X(sel_ja_sge, SELJA("r1 s>= -1"), (uint64_t)((int64_t)a < -1)) \
	X(sub_swap, "r0 = r1\n r3 = r2\n r3 <<= 1\n r0 -= r3", a - (b << 1)) \
	X(rsh_swap, "r0 = r1\n r3 = r2\n r3 &= 63\n r0 >>= r3", a >> (b & 63)) \
	X(div_swap, "r0 = r1\n r3 = r2\n r3 |= 1\n r0 /= r3", a / (b | 1)) \
	X(arsh_swap, "r0 = r1\n r3 = r2\n r3 ^= 5\n r0 s>>= r3", (uint64_t)((int64_t)a >> ((b ^ 5) & 63))) \
	X(add_swap, "r0 = r1\n r3 = r2\n r3 *= 3\n r0 += r3", a + b * 3) \
	X(jsgt_mirror, "r0 = 1\n r3 = r2\n r3 += 1\n if r1 s> r3 goto +1\n r0 = 2", \
	  IF((int64_t)a > (int64_t)(b + 1))) \
	X(sel_mirror, "r3 = r2\n r3 += 1\n r0 = 1\n if r1 < r3 goto +1\n r0 = 0", (uint64_t)(a < b + 1)) \
	X(rem7, "r3 = r1\n r3 /= 7\n r3 *= 7\n r1 -= r3\n r0 = r1", a % 7) \
	X(rem_neg, "r3 = r1\n r3 /= -3\n r3 *= -3\n r1 -= r3\n r0 = r1", a % (uint64_t)-3) \
	X(rem_live, "r3 = r1\n r3 /= 7\n r3 *= 7\n r1 -= r3\n r0 = r1\n r0 += r3", a) \
	X(mul_self, "r0 = r1\n r0 += 1\n r0 *= r0", (a + 1) * (a + 1)) \
	X(goto_copy, "r0 = r1\n goto +2\n r0 += 7\n exit\n r0 += r2\n if r0 > 100 goto -4\n"  \
	  " r0 *= 3", a + b > 100 ? a + b + 7 : (a + b) * 3) \
	X(linc_keep, "r0 = r1\n r0 *= 3\n r2 += 1\n r0 += r2", a * 3 + b + 1) \
	/* clang's 32-to-64-bit extensions (<<= 32, then >>= 32 or s>>= 32): a mask, sext32, or \
	 * nothing when the known bits say the value fits */ \
	X(zext_pair, "r0 = r1\n r0 <<= 32\n r0 >>= 32", U32(a)) \
	X(sext_pair, "r0 = r1\n r0 <<= 32\n r0 s>>= 32", (uint64_t)S32(a)) \
	X(zext_known, "w0 = w1\n r0 <<= 32\n r0 >>= 32", U32(a)) \
	X(sext_known32, "w0 = w1\n r0 <<= 32\n r0 s>>= 32", (uint64_t)S32(a)) \
	X(sext_known31, "r0 = r1\n r0 &= 0x7fffffff\n r0 <<= 32\n r0 s>>= 32", a & 0x7fffffff) \
	X(zext_keep_src, "r3 = r1\n r3 <<= 32\n r3 >>= 32\n r0 = r3\n r0 += r1", U32(a) + a) \
	X(zext_known_src, "w3 = w1\n r3 <<= 32\n r3 >>= 32\n r0 = r3\n r0 += r1\n r0 += r3", \
	  2 * U32(a) + a) \
	X(ext_other_shift, "r0 = r1\n r0 <<= 32\n r0 >>= 31", U32(a) << 1) \
	/* moves into argument registers read by the call from their sources (call 0x4000000d is \
	 * the intrinsic of add, 0x4000000e of sub) */ \
	X(fwd_swap, "r3 = r1\n r1 = r2\n r2 = r3\n call 0x4000000d", b + a) \
	X(fwd_src_written, "r1 = r2\n r2 = 7\n call 0x4000000e", b - 7) \
	X(fwd_reg_read, "r2 = r1\n r1 = 100\n call 0x4000000e", 100 - a) \
	X(fwd_chain, "r1 = r2\n r2 = r1\n call 0x4000000e", 0) \
	X(fwd_k32, "r2 = r1\n w1 = -1\n call 0x4000000e", 0xffffffffull - a) \
	X(stack64_32, "*(u64 *)(r10 - 8) = r1\n *(u32 *)(r10 - 4) = r2\n r0 = *(u64 *)(r10 - 8)", \
	  U32(b) << 32 | U32(a)) \
	X(stack_ld16, "*(u64 *)(r10 - 16) = r1\n r0 = *(u16 *)(r10 - 14)", a >> 16 & 0xffff) \
	X(stack_ld8, "*(u64 *)(r10 - 24) = r1\n r0 = *(u8 *)(r10 - 17)", a >> 56) \
	X(stack_st8k, "*(u64 *)(r10 - 8) = r1\n .quad 0xfffffffffff90a72 /* *(u8 *)(r10 - 7) = -1 */\n r0 = *(u64 *)(r10 - 8)", \
	  a | 0xff00) \
	X(stack_st16, "*(u64 *)(r10 - 512) = r1\n *(u16 *)(r10 - 506) = r2\n r0 = *(u64 *)(r10 - 512)", \
	  (a & 0x0000ffffffffffffull) | (b & 0xffff) << 48) \
	X(unreached_read, "r0 = r1\n goto +1\n r0 = r5", a) \
	X(unreached_read2, "r0 = r1\n exit\n r0 = r3\n exit", a) \
	/* a mask of a shift count that only shifts read (plan_count_masks): nothing, or kept */ \
	X(cnt_mask64, "r3 = r2\n r3 &= 63\n r0 = r1\n r0 <<= r3", a << (b & 63)) \
	X(cnt_mask_read, "r3 = r2\n r3 &= 63\n r0 = r1\n r0 >>= r3\n r0 += r3", \
	  (a >> (b & 63)) + (b & 63)) \
	X(cnt_mask32, "w3 = w2\n w3 &= 63\n w0 = w1\n w0 <<= w3", (uint32_t)((uint32_t)a << (b & 31))) \
	X(cnt_mask31, "r3 = r2\n r3 &= 31\n r0 = r1\n r0 <<= r3", a << (b & 31)) \
	X(cnt_mask255, "r3 = r2\n r3 &= 255\n r0 = r1\n r0 s>>= r3", (uint64_t)((int64_t)a >> (b & 63))) \
	X(cnt_mask_self, "r3 = r2\n r3 &= 63\n r3 <<= r3\n r0 = r3", (b & 63) << (b & 63))

#define INSN_REF(name, text, expr) \
	static uint64_t ref_##name(uint64_t a, uint64_t b, int *trap) { return (expr); }
INSNS(INSN_REF)
#define STR(x) #x
#define XSTR(x) STR(x)          /* JMP(...) expanded before it becomes text */
#define INSN_SRC(name, text, expr) "K(" #name ", " XSTR(text) ")\n"
#define INSN_ROW(name, text, expr) { #name, ref_##name },
static const struct {
	const char *name;
	uint64_t (*ref)(uint64_t a, uint64_t b, int *trap);
} insns[] = { INSNS(INSN_ROW) };

static const char insn_src[] =
	"#define K(name, text) long name(long a, long b) { register long x asm(\"r1\") = a;"
	" register long y asm(\"r2\") = b; register long r asm(\"r0\");"
	" asm volatile(text : \"=r\"(r) : \"r\"(x), \"r\"(y)); return r; }\n"
	INSNS(INSN_SRC);

static const uint64_t edges[] = {
	0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 70, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000,
	0x123456789abcdef0, 0x7fffffffffffffff, 0x8000000000000000, (uint64_t)-1, (uint64_t)-5,
};
#define N_EDGES (sizeof edges / sizeof edges[0])
#define N_RANDOM 200

static void test_insns(void)
{
	uint8_t *seg;
	size_t seg_len;
	char *diags, err[600];
	struct vm_prog *prog = NULL;
	struct vm *vm = new_vm();
	int n = compile(insn_src, NULL, &seg, &seg_len, &diags, err, sizeof err);
	check(n == 0, "insns: compile", "%d: %s%s", n, err, diags ? diags : "");
	if (n == 0) {
		int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
		check(rc == 0, "insns: load", "%s", err);
	}
	free(seg);
	free(diags);
	for (size_t k = 0; prog && k < sizeof insns / sizeof insns[0]; k++) {
		int bad = 0;
		for (size_t i = 0; i < N_EDGES * N_EDGES + N_RANDOM && !bad; i++) {
			uint64_t a = i < N_EDGES * N_EDGES ? edges[i / N_EDGES] : rng();
			uint64_t b = i < N_EDGES * N_EDGES ? edges[i % N_EDGES] : rng() >> (rng() & 63);
			int trap = 0;
			uint64_t want = insns[k].ref(a, b, &trap);
			int64_t argv[2] = { (int64_t)a, (int64_t)b };
			for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT && !bad; e++) {
				struct outcome o;
				run(prog, insns[k].name, argv, 2, e, NULL, 0, &o);
				if (trap ? o.trap != trap : (o.rc != 0 || (uint64_t)o.value != want)) {
					check(0, insns[k].name, "%s(%#" PRIx64 ", %#" PRIx64 ") on %s: got %#" PRIx64
					      " (rc %d, trap %s), want %#" PRIx64 " (trap %s)", insns[k].name, a, b,
					      vm_engine_name(e), (uint64_t)o.value, o.rc, isa_trap_name(o.trap),
					      want, isa_trap_name(trap));
					bad = 1;
				}
			}
		}
		if (!bad)
			check(1, insns[k].name, " ");
	}
	vm_prog_free(prog);
	vm_free(vm);
}

/* ---- C cases: prelude + source; the line of the marker slash-star-@-star-slash is the line
 * a trap or an error must name ---- */

static const char prelude[] =
	"#include <activerdma/ar.h>\n"
	"#define REGIONS(X) X(table, ro) X(heap, rw)\n"
	"AR_IMPORT_REGIONS(REGIONS);\n"
	"#define HOOKS(X) X(twice, \"l:l\")\n"
	"AR_IMPORT_HOOKS(HOOKS);\n"
	"#define NOINLINE __attribute__((noinline))\n";

struct ccase {
	const char *name, *src, *entry;
	unsigned n_args;
	int64_t args[7];
	const char *arg_bytes;     /* region args */
	int64_t want;
	int trap;                  /* expected trap kind; then want is the user trap code */
	const char *out;           /* expected output bytes (NUL-terminated text), or NULL */
	const char *error;         /* the object must be refused with this in the message */
	const char *extra;         /* more clang flags */
};

/* each row names the fields up to the last it needs; the rest are zero */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct ccase ccases[] = {
	{ "calls5", "static NOINLINE long add5(long a, long b, long c, long d, long e)\n"
	  "{ return a + 2 * b + 3 * c + 4 * d + 5 * e; }\n"
	  "long f(long x) { return add5(x, x + 1, x + 2, x + 3, x + 4) + add5(1, 0, 0, 0, 0); }\n",
	  "f", 1, { 1 }, NULL, 56 },
	{ "recursion", "static NOINLINE long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
	  "long f(long n) { return fib(n); }\n", "f", 1, { 15 }, NULL, 610 },
	{ "rodata_table", "static const unsigned long t[64] = { 5, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8,"
	  " 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5, 0, 2, 8, 8, 4, 1, 9, 7, 1,"
	  " 6, 9, 3, 9, 9, 3, 7, 5, 1, 0, 5, 8, 2, 0, 9, 7, 4, 9, 4, 4, 5, 9, 2 };\n"
	  "long f(long i) { return t[i & 63] * 100 + t[(i + 1) & 63]; }\n", "f", 1, { 5 }, NULL, 902 },
	{ "rodata_string", "static const char msg[] = \"hello, world\\n\";\n"
	  "long f(void) { ar_output(AR_CONST, (long)msg, sizeof msg - 1); return msg[7]; }\n",
	  "f", 0, { 0 }, NULL, 'w', 0, "hello, world\n" },
	{ "rodata_deref_loop", "static const char msg[] = \"abcdefgh\";\n"
	  "long f(long n) { long s = 0; for (long i = 0; i < n && i < 8; i++) s = s * 3 + msg[i];"
	  " return s; }\n", "f", 1, { 8 }, NULL,
	  ((((((97 * 3 + 98) * 3 + 99) * 3 + 100) * 3 + 101) * 3 + 102) * 3 + 103) * 3 + 104 },
	{ "loads_stores", "long f(long off, long v) { ar_st64(heap, off, v); ar_st8(heap, off + 8, v);"
	  " ar_st16(heap, off + 10, v); ar_st32(heap, off + 12, v);\n"
	  " return ar_ld64(heap, off) + ar_ld8u(heap, off + 8) + ar_ld16s(heap, off + 10) +"
	  " ar_ld32u(heap, off + 12) + ar_ld8s(table, 18) + ar_ld16u(table, 0) + ar_ld32s(table, 0); }\n",
	  "f", 2, { 16, -2 }, NULL,
	  -2 + 0xfe - 2 + 0xfffffffell + (int8_t)(18 * 7 + 1) + (1 | 8 << 8) +
	  (int32_t)(1u | 8u << 8 | 15u << 16 | 22u << 24) },
	{ "atomics", "long f(void) { ar_st64(heap, 64, 5); long old = ar_cas(heap, 64, 5, 9);"
	  " long o2 = ar_fadd(heap, 64, 3); long o3 = ar_cas(heap, 64, 5, 1);\n"
	  " return old * 1000 + o2 * 100 + o3 * 10 + (ar_ld64(heap, 64) == 12); }\n",
	  "f", 0, { 0 }, NULL, 5000 + 900 + 120 + 1 },
	{ "bulk", "long f(void) { ar_fill(heap, 128, 16, 'x'); ar_copy(heap, table, 144, 0, 8);\n"
	  " return ar_cmp(heap, table, 144, 0, 8) * 10000 + ar_cmp(heap, table, 144, 1, 1) * 1000 +"
	  " ar_findb(heap, 100, 60, 'x'); }\n", "f", 0, { 0 }, NULL, -1000 + 128 },
	{ "finds_args", "long f(void) { return ar_finds(table, AR_ARGS, 0, ar_len(table), 0,"
	  " ar_len(AR_ARGS)) * 10 + ar_ld8u(AR_ARGS, 1) - 'f' + ar_len(AR_ARGS); }\n", "f", 0, { 0 },
	  "\x47\x4e\x55", 10 * 10 + 0x4e - 'f' + 3 },
	/* table[i] = 7i + 1 (mod 256): 'G' is at 10, 'g' at 234 */
	{ "findsi", "long f(void) { return ar_findsi(table, AR_ARGS, 0, 256, 0, 1) * 1000 +"
	  " ar_finds(table, AR_ARGS, 0, 256, 0, 1); }\n", "f", 0, { 0 }, "g", 10234 },
	{ "output", "long f(void) { ar_outb('A'); ar_outq(0x4847464544434241ul);"
	  " ar_output(table, 1, 2); return ar_len(AR_OUT); }\n", "f", 0, { 0 }, NULL, 11, 0,
	  "AABCDEFGH\x08\x0f" },
	{ "bits", "long f(unsigned long x) { return ar_clz(x) * 1000000 + ar_ctz(x) * 10000 + ar_popcnt(x) * 100"
	  " + (ar_rotl(x, 4) == ((x << 4) | (x >> 60))) * 10 +"
	  " (ar_rotr(x, 4) == ((x >> 4) | (x << 60))); }\n", "f", 1, { 0xf00 },
	  NULL, 52 * 1000000 + 8 * 10000 + 4 * 100 + 11 },
	{ "hook", "long f(long x) { return ar_hcall1(twice, x) + 1; }\n", "f", 1, { 21 }, NULL, 43 },
	/* AR_EXPORT_ARGS: more arguments than registers; ar_arg reads the ones past the C
	 * parameters, however many those are */
	{ "args7", "AR_EXPORT_ARGS(f, 7);\nlong f(long a, long b, long c, long d, long e)\n"
	  "{ return a + e + (long)ar_arg(5) * 100 + (long)ar_arg(6) * 1000 + ar_hcall1(twice, b); }\n",
	  "f", 7, { 1, 2, 3, 4, 5, 6, 7 }, NULL, 1 + 5 + 600 + 7000 + 4 },
	{ "args_past_1", "AR_EXPORT_ARGS(f, 4);\nlong f(long a) { return a * 10 + ar_arg(3) + "
	  "ar_arg(1) * 100; }\n", "f", 4, { 1, 2, 3, 4 }, NULL, 10 + 4 + 200 },
	{ "args_two", "AR_EXPORT_ARGS(f, 6);\nAR_EXPORT_ARGS(g, 2);\n"
	  "long g(void) { return ar_arg(0) - ar_arg(1); }\n"
	  "long f(long a, long b, long c, long d, long e) { return a + b + c + d + e + ar_arg(5); }\n",
	  "g", 2, { 50, 8 }, NULL, 42 },
	{ "user_trap", "long f(long x) { if (x > 3) ar_trap(300); /*@*/ return x; }\n",
	  "f", 1, { 4 }, NULL, 300, ISA_TRAP_USER },
	{ "div_zero_line", "unsigned long f(unsigned long a, unsigned long b)\n{\n"
	  "\treturn a / b; /*@*/\n}\n", "f", 2, { 1, 0 }, NULL, 0, ISA_TRAP_DIV_ZERO },
	{ "bounds_line", "long f(long off)\n{\n\tlong v = ar_ld64(table, off); /*@*/\n"
	  "\treturn v;\n}\n", "f", 1, { 4090 }, NULL, 0, ISA_TRAP_BOUNDS },
	{ "wrap32", "unsigned f(unsigned a, unsigned b) { return a * b + (a >> (b & 31)); }\n",
	  "f", 2, { 0xffffffff, 3 }, NULL, 0x1ffffffc },
	{ "signed_cmp", "long f(long a, long b) { return (a < b) * 2 + ((unsigned long)a <"
	  " (unsigned long)b) + ((int)a > (int)b) * 4; }\n", "f", 2, { -1, 1 }, NULL, 2 },
	{ "volatile_stack", "long f(long x) { volatile long a[4]; a[0] = x; a[1] = x + 1;"
	  " a[2] = x * 3; a[3] = a[0] + a[2]; return a[3] * a[1]; }\n", "f", 1, { 5 }, NULL, 120 },
	{ "stack_struct", "long f(long x) { volatile struct { signed char c; short s; int i; long l; } v;"
	  " v.c = x; v.s = x; v.i = x; v.l = x; return v.c + v.s + v.i + v.l; }\n",
	  "f", 1, { -3 }, NULL, -12 },
	{ "switch", "long f(long x) { switch (x) { case 1: return 10; case 2: return 20;"
	  " case 5: return 50; case 9: return 90; default: return -1; } }\n",
	  "f", 1, { 9 }, NULL, 90 },

	/* stack addresses: frames in the frame region (docs/cc.md, "Stack memory") */
	{ "frame_array_index", "long f(unsigned long k) { long a[16]; for (int i = 0; i < 16; i++)"
	  " a[i] = i * i; return a[k & 15] + a[(k + 1) & 15]; }\n", "f", 1, { 7 }, NULL, 49 + 64 },
	{ "frame_fill_callee", "static NOINLINE void fill(unsigned char *p, unsigned long n, long v)\n"
	  "{ for (unsigned long i = 0; i < n; i++) p[i] = (unsigned char)(v + i); }\n"
	  "long f(unsigned long n, long v) { unsigned char buf[64]; if (n > 64) n = 64;"
	  " fill(buf, n, v); long s = 0; for (unsigned long i = 0; i < n; i++) s += buf[i];"
	  " return s; }\n", "f", 2, { 10, 3 }, NULL, 75 },
	{ "frame_struct_ptr", "struct st { signed char c; short s; int i; long l; char name[13]; };\n"
	  "static NOINLINE void init(struct st *p, long x) { p->c = x; p->s = x * 3; p->i = x * 5;"
	  " p->l = x * 7; for (int i = 0; i < 13; i++) p->name[i] = 'a' + i; }\n"
	  "long f(long x) { struct st v; init(&v, x); return v.c + v.s + v.i + v.l + v.name[12]; }\n",
	  "f", 1, { -3 }, NULL, -3 - 9 - 15 - 21 + 'm' },
	{ "frame_nested", "static NOINLINE long h(long *up, long x) { long c[4]; for (int i = 0; i < 4;"
	  " i++) c[i] = up[i] + x; long s = 0; for (int i = 0; i < 4; i++) s += c[i] * (i + 1); return s; }\n"
	  "static NOINLINE long g(long *up, long x) { long b[4]; for (int i = 0; i < 4; i++)"
	  " b[i] = up[3 - i] * 10; return h(b, x) + b[0]; }\n"
	  "long f(long x) { long a[4] = { 1, 2, 3, 4 }; long r = g(a, x); return r * 100 + a[0] + a[3]; }\n",
	  "f", 1, { 1 }, NULL, ((41 + 31 * 2 + 21 * 3 + 11 * 4) + 40) * 100 + 5 },
	{ "frame_recursion", "static NOINLINE long r(long *up, long n) { long v[2]; v[0] = n; v[1] ="
	  " up ? up[0] : 0; if (n == 0) return v[1]; return r(v, n - 1) + v[0]; }\n"
	  "long f(long n) { return r(0, n); }\n", "f", 1, { 200 }, NULL, 200 * 201 / 2 + 1 },
	{ "frame_recursion_limit", "static NOINLINE long r(long *up, long n)\n{\n\tlong v[2];\n"
	  "\tv[0] = n;\n\tv[1] = up ? up[0] : 0;\n\tif (n == 0)\n\t\treturn v[1];\n"
	  "\treturn r(v, n - 1) + v[0]; /*@*/\n}\n"
	  "long f(long n) { return r(0, n); }\n", "f", 1, { 1000 }, NULL, 0, ISA_TRAP_STACK },
	{ "frame_widths", "struct w { unsigned char b; signed char sb; unsigned short h; short sh;"
	  " unsigned u; int s; unsigned long q; };\n"
	  "static NOINLINE void put(volatile struct w *p, long x) { p->b = x; p->sb = x; p->h = x;"
	  " p->sh = x; p->u = x; p->s = x; p->q = x; }\n"
	  "static NOINLINE long get(volatile struct w *p, int k) { switch (k) { case 0: return p->b;"
	  " case 1: return p->sb; case 2: return p->h; case 3: return p->sh; case 4: return p->u;"
	  " case 5: return p->s; default: return (long)p->q; } }\n"
	  "long f(long x) { volatile struct w v; put(&v, x); long s = 0; for (int k = 0; k < 7; k++)"
	  " s = s * 3 + get(&v, k); return s; }\n", "f", 1, { -2 }, NULL,
	  (((((0xfe * 3 - 2) * 3 + 0xfffe) * 3 - 2) * 3 + 0xfffffffell) * 3 - 2) * 3 - 2 },
	{ "frame_const_ptrs", "static NOINLINE long pick(const char *const *v, unsigned long i)"
	  " { return v[i % 3][1]; }\n"
	  "long f(unsigned long i) { const char *v[3] = { \"ab\", \"cde\", \"fg\" }; volatile unsigned long n = i;"
	  " const char *w[3]; for (int k = 0; k < 3; k++) w[k] = v[(k + n) % 3];"
	  " return pick(w, 0) * 10000 + pick(v, i) * 100 + pick(w, 2); }\n",
	  "f", 1, { 1 }, NULL, 'd' * 10000 + 'd' * 100 + 'b' },
	/* a pointer loaded through, stored through, then read again (its liveness) */
	{ "frame_pointer_reuse", "long f(unsigned long n) { long a[32]; unsigned long s = 0;\n"
	  " for (unsigned long i = 0; i < 32; i++) a[i] = i;\n"
	  " for (unsigned long k = 0; k < n; k++) { unsigned long j = k & 31; a[j] = a[j] + k;"
	  " s += a[(j * 7) & 31]; }\n return s; }\n", "f", 1, { 100 }, NULL, 6808 },
	/* without recursion the frame region holds the longest chain of calls: here 2 frames */
	{ "frame_len_fits", "static NOINLINE long g(long *p) { return p[0]; }\n"
	  "long f(long off) { long a = 1; return g(&a) + *(volatile long *)((1l << 30) + off); }\n",
	  "f", 1, { 8 + 2 * 512 - 8 }, NULL, 1 },
	{ "frame_len_bounds", "static NOINLINE long g(long *p) { return p[0]; }\n"
	  "long f(long off)\n{\n\tlong a = 1;\n"
	  "\treturn g(&a) + *(volatile long *)((1l << 30) + off); /*@*/\n}\n",
	  "f", 1, { 8 + 2 * 512 - 7 }, NULL, 0, ISA_TRAP_BOUNDS },
	{ "frame_wild", "static NOINLINE long g(long *p) { return p[1]; }\n"
	  "long f(long p)\n{\n\tlong a[2] = { p, p };\n\tlong v = *(volatile long *)p; /*@*/\n"
	  "\treturn v + g(a);\n}\n", "f", 1, { 1l << 40 }, NULL, 0, ISA_TRAP_BOUNDS },
	{ "frame_wild_store", "static NOINLINE void g(long *p) { p[0] = 1; }\n"
	  "long f(long p)\n{\n\tlong a[2];\n\tg(a);\n\t*(volatile long *)(p - 8) = a[0]; /*@*/\n"
	  "\treturn a[0];\n}\n", "f", 1, { 0 }, NULL, 0, ISA_TRAP_BOUNDS },

	/* refusals */
	{ "err_global", "long counter;\nlong f(void)\n{\n\treturn ++counter; /*@*/\n}\n", "f", 0,
	  { 0 }, NULL, 0, 0, NULL, "global variable 'counter' (.bss) may be written at run time" },
	{ "err_global_data", "long counter = 5;\nlong f(void)\n{\n\treturn counter; /*@*/\n}\n", "f",
	  0, { 0 }, NULL, 0, 0, NULL, "global variable 'counter' (.data)" },
	{ "err_deref", "long f(long p)\n{\n\treturn *(long *)p; /*@*/\n}\n", "f", 0, { 0 }, NULL,
	  0, 0, NULL, "pointer dereference" },
	{ "err_store", "long f(long p)\n{\n\t*(long *)p = 1; /*@*/\n\treturn 0;\n}\n", "f", 0,
	  { 0 }, NULL, 0, 0, NULL, "store through a pointer" },
	{ "err_store_const", "static const long t[2] = { 1, 2 };\n"
	  "static NOINLINE long g(volatile long *p) { return p[1]; }\n"
	  "long f(long x)\n{\n\tvolatile long a[2] = { x, x };\n\t*(volatile long *)&t[x & 1] = 5; /*@*/\n"
	  "\treturn g(a);\n}\n", "f", 1, { 0 }, NULL, 0, 0, NULL,
	  "store through a pointer into the constants" },
	{ "err_atomic_framed", "static NOINLINE long g(long *p) { return __sync_fetch_and_add(p, 1); /*@*/ }\n"
	  "long f(long x) { long a = x; return g(&a) + a; }\n", "f", 1, { 0 }, NULL, 0, 0, NULL,
	  "a BPF atomic operation" },
	{ "err_helper", "static long (*const h)(long) = (void *)5;\nlong f(long a)\n{\n"
	  "\treturn h(a); /*@*/\n}\n", "f", 0, { 0 }, NULL, 0, 0, NULL,
	  "call of BPF helper 5, which is not an ar.h intrinsic" },
	{ "err_atomic", "long f(long p)\n{\n\treturn __sync_fetch_and_add((long *)p, 1); /*@*/\n}\n",
	  "f", 0, { 0 }, NULL, 0, 0, NULL, "a BPF atomic operation" },
	{ "err_region", "long f(void)\n{\n\treturn ar_ld64(7, 0); /*@*/\n}\n", "f", 0, { 0 }, NULL,
	  0, 0, NULL, "ar_ld64: region 7 is not declared" },
	{ "err_readonly", "long f(void)\n{\n\tar_st64(table, 0, 1); /*@*/\n\treturn 0;\n}\n", "f",
	  0, { 0 }, NULL, 0, 0, NULL, "ar_st64 writes region 3, which is read-only" },
	{ "err_cas_const", "long f(void)\n{\n\treturn ar_cas(AR_OUT, 0, 1, 2); /*@*/\n}\n", "f",
	  0, { 0 }, NULL, 0, 0, NULL, "ar_cas works on imported rw regions only" },
	{ "err_not_intrinsic", "long f(void)\n{\n\treturn ((long (*)(void))(void *)(long)"
	  "(AR_CALL_TAG | AR_OP_JMP))(); /*@*/\n}\n", "f", 0, { 0 }, NULL, 0, 0, NULL,
	  "is not an intrinsic" },
	{ "err_hook", "long f(void)\n{\n\treturn ar_hcall0(3); /*@*/\n}\n", "f", 0, { 0 }, NULL,
	  0, 0, NULL, "hook 3 is not declared" },
	{ "err_arg_param", "long f(long a)\n{\n\treturn ar_arg(0); /*@*/\n}\n", "f", 1, { 0 },
	  NULL, 0, 0, NULL, "ar_arg(0): f takes only its 1 parameters (AR_EXPORT_ARGS declares more)" },
	{ "err_arg_range", "AR_EXPORT_ARGS(f, 6);\nlong f(long a)\n{\n\treturn ar_arg(6); /*@*/\n}\n",
	  "f", 6, { 0 }, NULL, 0, 0, NULL, "ar_arg(6): f's arguments past its parameters are 1 .. 5" },
	{ "err_arg_call", "AR_EXPORT_ARGS(g, 6);\nNOINLINE long g(long a) { return a + ar_arg(5); }\n"
	  "long f(long a)\n{\n\treturn g(a) + 1; /*@*/\n}\n", "f", 1, { 0 }, NULL, 0, 0, NULL,
	  "call of g, which takes 6 arguments (AR_EXPORT_ARGS): only a client can pass more than 5" },
	{ "err_arg_static", "AR_EXPORT_ARGS(g, 6);\nstatic NOINLINE long g(long a) { return a; }\n"
	  "long f(long a) { return g(a); }\n", "f", 1, { 0 }, NULL, 0, 0, NULL,
	  "AR_EXPORT_ARGS(g, 6): no exported function of that name" },
	{ "err_arg_fewer", "AR_EXPORT_ARGS(f, 1);\nlong f(long a, long b) { return a + b; }\n", "f",
	  2, { 0 }, NULL, 0, 0, NULL, "AR_EXPORT_ARGS(f, 1): it has 2 parameters" },
	{ "err_no_btf", "long f(long x) { return x; }\n", "f", 0, { 0 }, NULL, 0, 0, NULL,
	  "case.o: error: no .BTF section: compile with -g", "-g0" },
};
#pragma GCC diagnostic pop

/* Line of the marker in prelude + src, 0 when there is none. */
static unsigned marker_line(const char *full)
{
	const char *m = strstr(full, "/*@*/");
	unsigned line = 1;
	if (!m)
		return 0;
	for (const char *p = full; p < m; p++)
		line += *p == '\n';
	return line;
}

static void test_ccases(void)
{
	for (size_t k = 0; k < sizeof ccases / sizeof ccases[0]; k++) {
		const struct ccase *c = &ccases[k];
		char full[4096], err[600];
		uint8_t *seg;
		size_t seg_len;
		char *diags;
		snprintf(full, sizeof full, "%s%s", prelude, c->src);
		unsigned line = marker_line(full);
		int n = compile(full, c->extra, &seg, &seg_len, &diags, err, sizeof err);
		if (n < 0) {
			check(0, c->name, "%s", err);
			continue;
		}
		if (c->error) {
			char where[64] = ": error: ";
			if (line)
				snprintf(where, sizeof where, "case.c:%u: error: ", line);
			check(n > 0 && diags && strstr(diags, c->error) && strstr(diags, where), c->name,
			      "want an error '%s%s', got %d: %s", where, c->error, n, diags ? diags : "");
			free(seg);
			free(diags);
			continue;
		}
		check(n == 0, c->name, "%d errors: %s", n, diags ? diags : "");
		free(diags);
		if (n)
			continue;
		struct vm *vm = new_vm();
		struct vm_prog *prog;
		int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
		free(seg);
		check(rc == 0, c->name, "vm_load: %s", err);
		if (rc) {
			vm_free(vm);
			continue;
		}
		for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++) {
			struct outcome o;
			memset(heap_mem, 0, sizeof heap_mem);
			run(prog, c->entry, c->args, c->n_args, e, c->arg_bytes,
			    c->arg_bytes ? strlen(c->arg_bytes) : 0, &o);
			const char *eng = vm_engine_name(e);
			if (c->trap) {
				check(o.trap == c->trap && (c->trap != ISA_TRAP_USER || o.trap_code == c->want) &&
				      o.trap_line == line, c->name, "%s: trap %s code %u line %u, want trap %s"
				      " line %u", eng, isa_trap_name(o.trap), o.trap_code, o.trap_line,
				      isa_trap_name(c->trap), line);
				continue;
			}
			check(o.rc == 0 && o.value == c->want, c->name, "%s: got %" PRId64 " (rc %d trap %s), "
			      "want %" PRId64, eng, o.value, o.rc, isa_trap_name(o.trap), c->want);
			if (c->out)
				check(o.out_len == strlen(c->out) && memcmp(o.out, c->out, o.out_len) == 0,
				      c->name, "%s: output %" PRIu64 " bytes '%.*s'", eng, o.out_len,
				      (int)o.out_len, (char *)o.out);
		}
		vm_prog_free(prog);
		vm_free(vm);
	}
}

/* ---- differential: the same kernels in C (pncc) and in pnasm ---- */

struct kernel {
	const char *dir, *file, *entry;
	int args;                  /* 0: none, 1: a count, 2: an offset, 3: offset + key, 4: key,
	                            * 5: needle in the args bytes */
};

static const struct kernel kernels[] = {
	{ "bench/vm", "isum", "isum", 1 },
	{ "bench/vm", "count_nl", "count_nl", 0 },
	{ "bench/vm", "count_nl_findb", "count_nl_findb", 0 },
	{ "bench/vm", "fnv1a", "fnv1a", 0 },
	{ "bench/vm", "chase", "chase", 2 },
	{ "examples", "linked_list", "find", 3 },
	{ "examples", "linked_list", "sum", 2 },
	{ "examples", "linked_list", "length", 2 },
	{ "examples", "hash_table", "lookup", 4 },
	{ "examples", "hash_table", "chain", 4 },
	{ "examples", "string_search", "count", 5 },
	{ "examples", "string_search", "offsets", 5 },
	{ "examples", "string_search", "lines", 5 },
};
#define DIFF_ROUNDS 60
#define DIFF_LEN    4096

static struct vm_prog *load_pair(struct vm *vm, const struct kernel *k, int c, char *err,
                                 size_t errlen)
{
	char path[512];
	void *src;
	size_t len, seg_len;
	uint8_t *seg = NULL;
	char *diags = NULL;
	struct vm_prog *prog = NULL;
	snprintf(path, sizeof path, "%s/%s/%s.%s", srcdir, k->dir, k->file, c ? "c" : "pna");
	if (isa_read_file(path, &src, &len) != 0) {
		snprintf(err, errlen, "cannot read %s", path);
		return NULL;
	}
	int n;
	if (c) {
		char *text = realloc(src, len + 1);
		if (!text) {
			free(src);
			return NULL;
		}
		text[len] = 0;
		n = compile(text, NULL, &seg, &seg_len, &diags, err, errlen);
		src = text;
	} else {
		n = asm_assemble(src, len, path, &seg, &seg_len, &diags);
	}
	if (n == 0 && vm_load(vm, seg, seg_len, &prog, err, errlen) != 0)
		prog = NULL;
	else if (n != 0)
		snprintf(err, errlen, "%s: %d errors: %.300s", path, n, diags ? diags : "");
	free(src);
	free(seg);
	free(diags);
	return prog;
}

static void test_differential(void)
{
	static uint8_t mem[DIFF_LEN] __attribute__((aligned(8)));
	for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
		const struct kernel *k = &kernels[ki];
		char err[600], name[96];
		struct vm *vm = vm_new();
		snprintf(name, sizeof name, "differential %s %s", k->file, k->entry);
		/* every name a kernel imports, bound to the same bytes */
		static const char *const names[] = { "data", "nodes", "mem", "table", "text" };
		for (size_t i = 0; i < 5; i++)
			vm_bind_region(vm, names[i], mem, DIFF_LEN, ISA_ACC_RO);
		struct vm_prog *pna = load_pair(vm, k, 0, err, sizeof err), *c = NULL;
		check(pna != NULL, name, "pnasm: %s", err);
		if (pna) {
			c = load_pair(vm, k, 1, err, sizeof err);
			check(c != NULL, name, "pncc: %s", err);
		}
		int bad = 0, compared = 0;
		for (int round = 0; c && round < DIFF_ROUNDS && !bad; round++) {
			/* words that are offsets into mem, ends of lists or noise */
			for (size_t i = 0; i < DIFF_LEN; i += 8) {
				uint64_t r = rng(), w;
				switch (r & 7) {
				case 0: case 1: w = 0; break;
				case 2: w = ~0ull; break;
				case 3: w = r; break;
				default: w = (r >> 8) % (DIFF_LEN / 8) * 8; break;
				}
				if (round % 3 == 0)   /* text: letters, blanks and newlines */
					for (int j = 0; j < 8; j++, r >>= 8)
						((uint8_t *)&w)[j] = (r & 0xff) < 20 ? '\n' : (r & 0xff) < 60 ? ' ' :
						                      (uint8_t)('a' + (r & 0xff) % 4);
				isa_put64(mem + i, w);
			}
			isa_put64(mem, 56 + rng() % 8);   /* hash_table's shift: 2..256 buckets */
			int64_t argv[2] = { 0, 0 };
			unsigned n_args = 0;
			uint8_t needle[4];
			size_t needle_len = 0;
			uint64_t off = rng() % (DIFF_LEN / 8) * 8;
			switch (k->args) {
			case 1: argv[0] = (int64_t)(rng() % 3000); n_args = 1; break;
			case 2: argv[0] = (int64_t)(rng() % 5 ? off : ~0ull); n_args = 1; break;
			case 3: argv[0] = (int64_t)off; argv[1] = (int64_t)isa_get64(mem + rng() % (DIFF_LEN / 8) * 8);
				n_args = 2; break;
			case 4: argv[0] = (int64_t)(rng() % 2 ? rng() : isa_get64(mem + off)); n_args = 1; break;
			case 5:
				needle_len = rng() % 4;
				memcpy(needle, mem + rng() % (DIFF_LEN - 4), needle_len);
				break;
			}
			for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT && !bad; e++) {
				static struct outcome a, b;
				run(pna, k->entry, argv, n_args, e, needle, needle_len, &a);
				run(c, k->entry, argv, n_args, e, needle, needle_len, &b);
				if (a.trap == ISA_TRAP_FUEL || b.trap == ISA_TRAP_FUEL)
					continue;  /* a cycle: fuel per iteration is not the same code's */
				compared++;
				if (a.rc != b.rc || a.value != b.value || a.trap != b.trap ||
				    a.out_len != b.out_len || memcmp(a.out, b.out, a.out_len) != 0) {
					check(0, name, "round %d on %s: pnasm %" PRId64 " trap %s out %" PRIu64
					      ", pncc %" PRId64 " trap %s out %" PRIu64, round, vm_engine_name(e),
					      a.value, isa_trap_name(a.trap), a.out_len, b.value,
					      isa_trap_name(b.trap), b.out_len);
					bad = 1;
				}
			}
		}
		if (c && !bad)
			check(compared > DIFF_ROUNDS / 2, name, "only %d runs compared (fuel)", compared);
		vm_prog_free(pna);
		vm_prog_free(c);
		vm_free(vm);
	}
}

/* ---- the frame region: no run sees another's frame bytes, on either engine; hosts cannot
 * bind the name ---- */

/* A hook that runs another framed segment on the same thread, inside the run that called it:
 * the nested run gets frame memory of its own. */
static const struct vm_prog *nested_prog;

static int64_t hook_nested(struct vm_hook_ctx *ctx, int64_t v)
{
	unsigned n;
	int e = vm_prog_entry(nested_prog, "put", &n);
	struct vm_run_opts opts = { .fuel = 100000 };
	struct vm_result res;
	if (e < 0 || vm_run(nested_prog, (unsigned)e, &v, 1, &opts, &res) != 0)
		return -1;
	return res.value;
}

static void test_frame_nested(const struct vm_prog *inner)
{
	static const char src[] =
		"#include <activerdma/ar.h>\n"
		"#define HOOKS(X) X(nested, \"l:l\")\n"
		"AR_IMPORT_HOOKS(HOOKS);\n"
		"static __attribute__((noinline)) void fill(volatile long *p, long v)\n"
		"{ for (int i = 0; i < 32; i++) p[i] = v + i; }\n"
		"long outer(long v) { volatile long a[32]; fill(a, v); long r = ar_hcall1(nested, v * 2);"
		" long s = 0; for (int i = 0; i < 32; i++) s += a[i] - v - i; return s * 1000000 + r; }\n";
	char err[600];
	uint8_t *seg;
	size_t seg_len;
	char *diags;
	int n = compile(src, NULL, &seg, &seg_len, &diags, err, sizeof err);
	check(n == 0, "frame nested run: compile", "%d: %s %s", n, err, diags ? diags : "");
	free(diags);
	if (n)
		return;
	struct vm *vm = vm_new();
	struct vm_prog *prog = NULL;
	nested_prog = inner;
	if (!vm || vm_bind_hook(vm, "nested", (void *)hook_nested, "l:l", NULL) != 0 ||
	    vm_load(vm, seg, seg_len, &prog, err, sizeof err) != 0) {
		check(0, "frame nested run: load", "%s", err);
	} else {
		for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++) {
			struct outcome o;
			int64_t v = 1000;
			run(prog, "outer", &v, 1, e, NULL, 0, &o);
			check(o.rc == 0 && o.value == 2000 + 5, "frame nested run: both runs keep their "
			      "frames", "%s: %" PRId64 " rc %d", vm_engine_name(e), o.value, o.rc);
		}
	}
	vm_prog_free(prog);
	vm_free(vm);
	free(seg);
}

static void test_frame_runs(void)
{
	static const char src[] =
		"#include <activerdma/ar.h>\n"
		"#define TAG (1l << 30)\n"
		"static __attribute__((noinline)) void fill(volatile long *p, long v)\n"
		"{ for (int i = 0; i < 32; i++) p[i] = v + i; }\n"
		"static __attribute__((noinline)) long scan(void)\n"
		"{ long s = 0; for (long o = 8; o < 8 + 257 * 512; o += 8) s |= *(volatile long *)(TAG + o);"
		" return s; }\n"
		"long put(long v) { volatile long a[32]; fill(a, v); return a[5]; }\n"
		"long put_scan(long v) { volatile long a[32]; fill(a, v); return scan(); }\n"
		"long peek(void) { volatile long b[32]; long s = 0; for (int i = 0; i < 32; i++)"
		" s |= b[i]; return s | scan(); }\n"
		/* recursion: the frame region has room for the whole call depth, all scanned */
		"static __attribute__((noinline)) long rec(long n) { return n > 1 ? rec(n - 1) + rec(n - 2) : n; }\n"
		"long deep(long n) { return rec(n); }\n";
	char err[600];
	uint8_t *seg;
	size_t seg_len;
	char *diags;
	int n = compile(src, NULL, &seg, &seg_len, &diags, err, sizeof err);
	check(n == 0, "frame runs: compile", "%d: %s %s", n, err, diags ? diags : "");
	free(diags);
	if (n)
		return;
	struct vm *vm = new_vm();
	check(vm_bind_region(vm, "ar.frame", heap_mem, 64, ISA_ACC_RW) == -VM_EINVAL,
	      "frame runs: a host cannot bind ar.frame", "bound");
	struct vm_prog *prog;
	int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
	free(seg);
	check(rc == 0 && !vm_prog_jit_error(prog), "frame runs: load", "%s", err);
	if (rc) {
		vm_free(vm);
		return;
	}
	int64_t secret = 0x5ec2e7;
	for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++) {
		struct outcome o;
		const char *eng = vm_engine_name(e);
		run(prog, "put_scan", &secret, 1, e, NULL, 0, &o);
		check(o.rc == 0 && o.value != 0, "frame runs: a run sees its own frames", "%s: %" PRId64
		      " rc %d", eng, o.value, o.rc);
		for (int k = 0; k < 2; k++) {
			run(prog, "put", &secret, 1, k ? VM_ENGINE_INTERP + VM_ENGINE_JIT - e : e, NULL, 0, &o);
			check(o.rc == 0 && o.value == secret + 5, "frame runs: put", "%s: %" PRId64, eng, o.value);
			run(prog, "peek", NULL, 0, e, NULL, 0, &o);
			check(o.rc == 0 && o.value == 0, "frame runs: the next run sees zeros", "%s: %" PRId64
			      " rc %d", eng, o.value, o.rc);
		}
	}
	test_frame_nested(prog);
	vm_prog_free(prog);
	vm_free(vm);
}

/* ---- hostile objects: a real object cut short or with bytes changed is refused with a
 * message, or accepted and then verified; never a crash (ASan in check-asan) ---- */

#define HOSTILE_ROUNDS 400

static const char framed_src[] =
	"#include <activerdma/ar.h>\n"
	"static const long t[4] = { 1, 2, 3, 4 };\n"
	"static __attribute__((noinline)) long g(long *p, const long *q, long n)\n"
	"{ long s = 0; for (long i = 0; i < n; i++) s += p[i] * q[i & 3]; return s; }\n"
	"long f(long n) { long a[8]; for (int i = 0; i < 8; i++) a[i] = n + i; return g(a, t, n & 7); }\n";

static void test_hostile_seed(const char *src, const char *seed_name);

static void test_hostile(void)
{
	test_hostile_seed(insn_src, "insns");
	test_hostile_seed(framed_src, "framed");
}

static void test_hostile_seed(const char *src, const char *seed_name)
{
	char err[600];
	size_t len;
	void *obj = clang_object(src, NULL, &len, err, sizeof err);
	check(obj != NULL, seed_name, "hostile: seed object: %s", err);
	if (!obj)
		return;
	uint8_t *buf = malloc(len);
	int accepted = 0, refused = 0, bad = 0;
	struct vm *vm = new_vm();
	for (int round = 0; round < HOSTILE_ROUNDS && !bad && buf; round++) {
		size_t n = len;
		memcpy(buf, obj, len);
		if (round % 4 == 0)
			n = rng() % len;
		int flips = 1 + (int)(rng() % 8);
		for (int i = 0; i < flips && n; i++)
			buf[rng() % n] ^= (uint8_t)(1u << (rng() % 8));
		uint8_t *seg;
		size_t seg_len;
		char *diags, *listing;
		struct cc_opts opts = { .explain = round % 2 ? "add64" : NULL };
		int ne = cc_compile(buf, n, "hostile.o", &opts, &seg, &seg_len, &diags, &listing);
		if (ne == 0) {
			struct vm_prog *prog;
			int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
			if (rc != 0) {
				check(0, "hostile: accepted object fails to load", "round %d: %s", round, err);
				bad = 1;
			} else {
				vm_prog_free(prog);
			}
			accepted++;
		} else {
			if (!diags || !strstr(diags, "error: ")) {
				check(0, "hostile: refusal without a message", "round %d", round);
				bad = 1;
			}
			refused++;
		}
		free(seg);
		free(diags);
		free(listing);
	}
	if (!bad)
		check(refused > 0, seed_name, "hostile objects: %d accepted, %d refused", accepted,
		      refused);
	vm_free(vm);
	free(buf);
	free(obj);
	if (src != insn_src)
		return;
	/* not ELF at all, and empty */
	uint8_t *seg;
	size_t seg_len;
	char *diags;
	int ne = cc_compile("hello", 5, "x.o", NULL, &seg, &seg_len, &diags, NULL);
	check(ne == 1 && diags && strstr(diags, "x.o: error: not an ELF object"), "not ELF", "%s",
	      diags ? diags : "");
	free(diags);
	ne = cc_compile("", 0, "x.o", NULL, &seg, &seg_len, &diags, NULL);
	check(ne == 1 && diags && strstr(diags, "x.o: error: "), "empty object", "%s",
	      diags ? diags : "");
	free(diags);
}

/* ---- random C programs: the same source through gcc on the host and through clang -target
 * bpf + pncc on both engines must compute the same (unsigned arithmetic only: no undefined
 * behaviour; division by x | 1; shifts by y & 63 or & 31) ---- */

#ifndef RANDOM_PROGRAMS
#define RANDOM_PROGRAMS 24      /* -DRANDOM_PROGRAMS=N for a longer hunt */
#endif
#define RANDOM_STMTS    10

struct sbuf { char p[8192]; size_t len; };

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, sizeof b->p - b->len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof b->p - b->len)
		b->len += (size_t)n;
}

/* An expression of depth at most depth over a, b, v0..v3 (u64) and w0, w1 (u32). */
/* every other program also works on a local array m[8], indexed by values and filled
 * through a pointer by a helper: stack memory (frames) */
static int gen_arrays;

static void gen_expr(struct sbuf *b, int depth)
{
	static const char *const leaves[] = { "a", "b", "v0", "v1", "v2", "v3", "w0", "w1" };
	static const char *const ops[] = { "+", "-", "*", "&", "|", "^" };
	unsigned r = (unsigned)(rng() % 16);
	if (depth == 0 || r < 4) {
		if (gen_arrays && r % 4 == 1)
			sb_add(b, "m[%s & 7]", leaves[rng() % 8]);
		else if (r % 4 == 0)
			sb_add(b, "%lluul", (unsigned long long)(rng() >> (rng() % 64)));
		else
			sb_add(b, "%s", leaves[rng() % 8]);
		return;
	}
	sb_add(b, "(");
	switch (r) {
	case 4: case 5: case 6: case 7: case 8:
		gen_expr(b, depth - 1);
		sb_add(b, " %s ", ops[rng() % 6]);
		gen_expr(b, depth - 1);
		break;
	case 9:
		sb_add(b, "(unsigned long)");
		gen_expr(b, depth - 1);
		sb_add(b, rng() % 2 ? " << (" : " >> (");
		gen_expr(b, depth - 1);
		sb_add(b, " & 63)");
		break;
	case 10:
		gen_expr(b, depth - 1);
		sb_add(b, rng() % 2 ? " / (" : " %% (");
		gen_expr(b, depth - 1);
		sb_add(b, " | 1)");
		break;
	case 11:
		sb_add(b, "(unsigned)");
		gen_expr(b, depth - 1);
		sb_add(b, rng() % 2 ? " >> (" : " * (unsigned)(");
		gen_expr(b, depth - 1);
		sb_add(b, " & 31)");
		break;
	case 12: {
		static const char *const cmp[] = { "<", "<=", ">", ">=", "==", "!=" };
		const char *cast = rng() % 3 == 0 ? "(long)" : rng() % 2 ? "(int)" : "";
		sb_add(b, "%s", cast);
		gen_expr(b, depth - 1);
		sb_add(b, " %s %s", cmp[rng() % 6], cast);
		gen_expr(b, depth - 1);
		break;
	}
	case 13:
		gen_expr(b, depth - 1);
		sb_add(b, " ? ");
		gen_expr(b, depth - 1);
		sb_add(b, " : ");
		gen_expr(b, depth - 1);
		break;
	default:
		sb_add(b, rng() % 2 ? "~" : "-");
		gen_expr(b, depth - 1);
		break;
	}
	sb_add(b, ")");
}

static void gen_program(struct sbuf *b)
{
	static const char *const lhs[] = { "v0", "v1", "v2", "v3", "w0", "w1" };
	b->len = 0;
	if (gen_arrays)
		sb_add(b, "static __attribute__((noinline)) void mix(unsigned long *p, unsigned long x)\n"
		       "{ p[x & 7] += x; p[(x >> 3) & 7] ^= x * 3; }\n");
	sb_add(b, "unsigned long f(unsigned long a, unsigned long b)\n{\n"
	       "\tunsigned long v0 = a, v1 = b, v2 = a ^ b, v3 = 0x9e3779b97f4a7c15ul;\n"
	       "\tunsigned w0 = (unsigned)a, w1 = (unsigned)(b >> 32);\n");
	if (gen_arrays)
		sb_add(b, "\tunsigned long m[8] = { a, b, a + b, a * 3, b ^ 5, 7, a >> 3, b << 2 };\n");
	for (int i = 0; i < RANDOM_STMTS; i++) {
		if (gen_arrays && rng() % 4 == 0) {
			int call = (int)(rng() % 2);
			if (call)
				sb_add(b, "\tmix(m, ");
			else
				sb_add(b, "\tm[%s & 7] = ", lhs[rng() % 6]);
			gen_expr(b, 2);
			sb_add(b, call ? ");\n" : ";\n");
		} else if (rng() % 5 == 0) {
			sb_add(b, "\tfor (unsigned long i = 0; i < (a & 7); i++)\n\t\t%s += ", lhs[rng() % 6]);
			gen_expr(b, 2);
			sb_add(b, " ^ i;\n");
		} else {
			sb_add(b, "\t%s %s= ", lhs[rng() % 6], rng() % 2 ? "" : "^");
			gen_expr(b, 3);
			sb_add(b, ";\n");
		}
	}
	sb_add(b, "\treturn v0 ^ v1 ^ v2 ^ v3 ^ w0 ^ ((unsigned long)w1 << 32)%s;\n}\n",
	       gen_arrays ? " ^ m[a & 7] ^ m[b & 7] ^ m[v0 & 7]" : "");
}

static const uint64_t random_inputs[][2] = {
	{ 0, 0 }, { 1, 2 }, { ~0ull, 1 }, { 0x80000000, 0xffffffff }, { 0x123456789abcdef0, 77 },
	{ 5, 0x8000000000000000 }, { 0xfffffffe, 31 }, { 1000003, 64 },
};
#define N_RANDOM_INPUTS (sizeof random_inputs / sizeof random_inputs[0])

/* Results of f on random_inputs, computed by the host's compiler; 0 or -1. */
static int host_results(const char *src, uint64_t *out)
{
	char c_path[128], bin[128], cmd[1024];
	snprintf(c_path, sizeof c_path, "%s/host.c", tmpdir);
	snprintf(bin, sizeof bin, "%s/host", tmpdir);
	FILE *f = fopen(c_path, "w");
	if (!f)
		return -1;
	fprintf(f, "#include <stdio.h>\n%s\nint main(void)\n{\n", src);
	for (size_t i = 0; i < N_RANDOM_INPUTS; i++)
		fprintf(f, "\tprintf(\"%%lu\\n\", f(%lluul, %lluul));\n",
		        (unsigned long long)random_inputs[i][0], (unsigned long long)random_inputs[i][1]);
	fprintf(f, "\treturn 0;\n}\n");
	if (fclose(f) != 0)
		return -1;
	snprintf(cmd, sizeof cmd, "cc -O1 -w -o %s %s && %s > %s.out", bin, c_path, bin, bin);
	if (system(cmd) != 0)
		return -1;
	snprintf(cmd, sizeof cmd, "%s.out", bin);
	f = fopen(cmd, "r");
	if (!f)
		return -1;
	size_t n = 0;
	unsigned long long v;
	while (n < N_RANDOM_INPUTS && fscanf(f, "%llu", &v) == 1)
		out[n++] = v;
	fclose(f);
	remove(cmd);
	remove(bin);
	remove(c_path);
	return n == N_RANDOM_INPUTS ? 0 : -1;
}

static void test_random_c(void)
{
	static struct sbuf src;
	int bad = 0, skipped = 0;
	for (int k = 0; k < RANDOM_PROGRAMS && !bad; k++) {
		uint64_t want[N_RANDOM_INPUTS];
		uint8_t *seg = NULL;
		size_t seg_len;
		char *diags = NULL, err[600];
		gen_arrays = k % 2;
		gen_program(&src);
		if (host_results(src.p, want) != 0) {
			check(0, "random C", "program %d: the host compiler failed:\n%s", k, src.p);
			return;
		}
		/* -w: clang's warnings about the generator's odd but defined expressions would push
		 * its error out of the part of the log err keeps */
		int n = compile(src.p, "-w", &seg, &seg_len, &diags, err, sizeof err);
		if (n < 0 && strstr(err, "is not supported")) {
			skipped++;     /* clang's BPF back end cannot compile it (e.g. __multi3) */
			continue;
		}
		struct vm *vm = vm_new();
		struct vm_prog *prog = NULL;
		if (n != 0 || vm_load(vm, seg, seg_len, &prog, err, sizeof err) != 0) {
			check(0, "random C", "program %d: %d errors: %s%s\n%s", k, n, err,
			      diags ? diags : "", src.p);
			bad = 1;
		}
		for (size_t i = 0; prog && i < N_RANDOM_INPUTS && !bad; i++)
			for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT && !bad; e++) {
				struct outcome o;
				int64_t argv[2] = { (int64_t)random_inputs[i][0], (int64_t)random_inputs[i][1] };
				run(prog, "f", argv, 2, e, NULL, 0, &o);
				if (o.rc != 0 || (uint64_t)o.value != want[i]) {
					check(0, "random C", "program %d, input %zu on %s: got %#" PRIx64 " (%s), "
					      "gcc %#" PRIx64 "\n%s", k, i, vm_engine_name(e), (uint64_t)o.value,
					      isa_trap_name(o.trap), want[i], src.p);
					bad = 1;
				}
			}
		vm_prog_free(prog);
		vm_free(vm);
		free(seg);
		free(diags);
	}
	printf("random C: %d programs, %d of them beyond clang's BPF back end\n", RANDOM_PROGRAMS,
	       skipped);
	if (!bad)
		check(skipped <= RANDOM_PROGRAMS / 2, "random C", "%d of %d programs clang could not "
		      "compile", skipped, RANDOM_PROGRAMS);
}

/* ---- an object without line information: errors name the function and instruction ---- */

static void test_no_lines(void)
{
	char err[600], cmd[512], path[128];
	size_t len;
	void *obj = clang_object("long f(long p)\n{\n\treturn *(long *)p;\n}\n", NULL, &len, err,
	                         sizeof err);
	free(obj);
	snprintf(path, sizeof path, "%s/case.o", tmpdir);
	snprintf(cmd, sizeof cmd, "llvm-objcopy --remove-section .BTF.ext %s", path);
	if (!obj || system(cmd) != 0 || isa_read_file(path, &obj, &len) != 0) {
		check(0, "no line info", "cannot make the object: %s", err);
		return;
	}
	uint8_t *seg = NULL;
	size_t seg_len;
	char *diags = NULL;
	int n = cc_compile(obj, len, "case.o", NULL, &seg, &seg_len, &diags, NULL);
	check(n == 1 && diags && strstr(diags, "case.o: f+0: error: pointer dereference"),
	      "no line info", "%d: %s", n, diags ? diags : "");
	free(seg);
	free(diags);
	free(obj);
}

/* ---- registers onto locals: copies that must disappear, and ones that must stay ---- */

/* The listing line of BPF instruction `insn` (its text followed by the padding). */
static const char *listing_line(const char *listing, const char *insn)
{
	for (const char *p = listing; (p = strstr(p, insn)); p++)
		if (p > listing && p[-1] == ' ' && p[strlen(insn)] == ' ' && p[strlen(insn) + 1] == ' ')
			return p;
	return NULL;
}

/* Whether the listing line of `insn` says the copy emitted nothing (its two ends share a local). */
static int on_line(const char *line, const char *what);

static int copy_removed(const char *line)
{
	return on_line(line, "share a local") || on_line(line, "(nothing: only shift counts");
}

/* Whether the listing line starting at line says `what`. */
static int on_line(const char *line, const char *what)
{
	const char *m = strstr(line, what), *end = strchr(line, '\n');
	return m && (!end || m < end);
}

/* Instructions in function `entry` of a segment. */
static unsigned count_insns(const uint8_t *seg, size_t seg_len, const char *entry)
{
	struct isa_seg *sg;
	char err[200];
	unsigned n = 0;
	if (isa_seg_decode(seg, seg_len, &sg, err, sizeof err) != 0)
		return 0;
	for (uint32_t f = 0; f < sg->n_funcs; f++) {
		if (strcmp(sg->funcs[f].name, entry) != 0)
			continue;
		struct isa_insn in;
		for (size_t pc = 0; pc < sg->funcs[f].code_len && isa_decode(sg->funcs[f].code,
		     sg->funcs[f].code_len, pc, &in) == 0; pc += in.len)
			n++;
	}
	isa_seg_free(sg);
	return n;
}

#define ASM2(name, text) "long " name "(long a, long b) { register long x asm(\"r1\") = a;" \
	" register long y asm(\"r2\") = b; register long r asm(\"r0\");" \
	" asm volatile(" #text " : \"=r\"(r) : \"r\"(x), \"r\"(y) : \"r3\", \"r4\"); return r; }\n"

static const struct {
	const char *name, *src, *insn;   /* insn: the copy whose fate is checked */
	int removed;                     /* 1: it must become nothing; 0: it must stay */
	int64_t a, b, want;
} coal_cases[] = {
	/* the copy's source is written while the copy is live, and that write is a value of the
	 * same web (both paths meet at the add): two values, two locals */
	{ "coal_src_redefined", ASM2("f", "r3 = r1\n if r2 == 0 goto +1\n r1 += 5\n r0 = r3\n"
	                             " r0 += r1"), "r3 = r1", 0, 10, 1, 25 },
	/* the same written on one path only: the new value gets a local of its own, so the copy
	 * may share its source's */
	{ "coal_src_new_value", ASM2("f", "r3 = r1\n r1 += 5\n r0 = r3\n r0 += r1"),
	  "r3 = r1", 1, 10, 0, 25 },
	/* the copy is written while its source is live: the copy itself may share the source's
	 * local (it is read once, before its new value is made), the new value may not */
	{ "coal_dst_redefined", ASM2("f", "r3 = r1\n r3 *= 3\n r0 = r1\n r0 += r3"),
	  "r3 = r1", 1, 10, 0, 40 },
	/* both live after the copy, neither written: one value, one local */
	{ "coal_both_read", ASM2("f", "r3 = r1\n r0 = r3\n r0 *= r1\n r0 += r3"),
	  "r3 = r1", 1, 7, 0, 56 },
	/* in a loop: the copy's source is stepped while the copy is still to be added */
	{ "coal_loop_interfere", ASM2("f", "r0 = 0\n r3 = r1\n r4 = r1\n r4 += 5\n"
	                              " r4 = r3\n r3 += 1\n r0 += r4\n if r3 < r2 goto -4"),
	  "r4 = r3", 0, 3, 6, 3 + 4 + 5 },
	/* a loop's result moved back each iteration (clang's "r3 = r0"): one local */
	{ "coal_loop_carried", ASM2("f", "r0 = 0\n r3 = 0\n r0 = r3\n r0 += r1\n r1 += -1\n"
	                            " r3 = r0\n if r1 != 0 goto -5"),
	  "r3 = r0", 1, 10, 0, 55 },
	/* across a call: the call clobbers r1, but nothing reads that, so the parameter's copy
	 * in r6 may share r1's local (the callee has locals of its own) */
	{ "coal_call_param", "static NOINLINE long g(long x) { return x * 3; }\n"
	  "long f(long a, long b) { long c = g(b); return a * 1000 + c; }\n",
	  "r6 = r1", 1, 4, 5, 4015 },
	/* a call's result saved in r7 while the next call writes r0: that r0 is a new value
	 * (its own web), so the copy may share the first result's local */
	{ "coal_call_result", "static NOINLINE long g(long x) { return x * 3; }\n"
	  "long f(long a, long b) { long x = g(a); long y = g(b); return x * 1000 + y; }\n",
	  "r7 = r0", 1, 4, 5, 12015 },
	/* in a loop, a call's result copied while the next iteration's call writes the same
	 * web of r0 */
	{ "coal_call_loop", "static NOINLINE long g(long x) { return x * 3 + 1; }\n"
	  "long f(long n, long b) { long x = b, prev = 0;\n"
	  " for (long i = 0; i < n; i++) { prev = x; x = g(x); }\n return prev * 1000 + x; }\n",
	  NULL, 0, 3, 2, (2 * 9 + 4) * 1000 + (2 * 27 + 13) },
	/* a shift count's mask that only the shift reads is nothing, and so becomes the copy
	 * before it (varint's "v |= b << (sh & 63)"); one that something else reads stays */
	{ "cnt_mask_gone", ASM2("f", "r3 = r2\n r3 &= 63\n r0 = r1\n r0 <<= r3\n r2 += 1\n"
	                        " r0 += r2"), "r3 &= 63", 1, 5, 67, (5 << 3) + 68 },
	{ "cnt_mask_copy", ASM2("f", "r3 = r2\n r3 &= 63\n r0 = r1\n r0 <<= r3\n r2 += 1\n"
	                        " r0 += r2"), "r3 = r2", 1, 5, 67, (5 << 3) + 68 },
	{ "cnt_mask_kept", ASM2("f", "r3 = r2\n r3 &= 63\n r0 = r1\n r0 <<= r3\n r0 += r3"),
	  "r3 &= 63", 0, 5, 67, (5 << 3) + 3 },
	/* a swap in a loop (iterative Fibonacci): copies whose ends interfere */
	{ "coal_swap", "long f(long n, long b) { long x = 0, y = 1;\n"
	  " for (long i = 0; i < n; i++) { long t = x + y; x = y; y = t; }\n return x + b; }\n",
	  NULL, 0, 50, 1, 12586269025 + 1 },
};

static void test_coalesce(void)
{
	for (size_t k = 0; k < sizeof coal_cases / sizeof coal_cases[0]; k++) {
		const typeof(coal_cases[0]) *c = &coal_cases[k];
		char full[4096], err[600];
		size_t len, seg_len;
		uint8_t *seg = NULL;
		char *diags = NULL, *listing = NULL;
		snprintf(full, sizeof full, "%s%s", prelude, c->src);
		void *obj = clang_object(full, NULL, &len, err, sizeof err);
		struct cc_opts opts = { .explain = "f" };
		int ne = obj ? cc_compile(obj, len, "case.o", &opts, &seg, &seg_len, &diags, &listing) : -1;
		free(obj);
		check(ne == 0, c->name, "%s", diags ? diags : err);
		if (ne == 0 && c->insn) {
			const char *l = listing_line(listing, c->insn);
			check(l && copy_removed(l) == c->removed, c->name, "'%s' should %s:\n%s", c->insn,
			      c->removed ? "share a local" : "stay a copy", listing);
		}
		struct vm *vm = new_vm();
		struct vm_prog *prog = NULL;
		if (ne == 0 && vm_load(vm, seg, seg_len, &prog, err, sizeof err) == 0) {
			int64_t argv[2] = { c->a, c->b };
			for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++) {
				struct outcome o;
				run(prog, "f", argv, 2, e, NULL, 0, &o);
				check(o.rc == 0 && o.value == c->want, c->name, "%s: got %" PRId64 ", want %"
				      PRId64 "\n%s", vm_engine_name(e), o.value, c->want, listing);
			}
			vm_prog_free(prog);
		} else if (ne == 0) {
			check(0, c->name, "vm_load: %s", err);
		}
		vm_free(vm);
		free(seg);
		free(diags);
		free(listing);
	}

	/* the kernels: every register copy of clang's disappears (but the first move of x % K,
	 * part of one remu), and the C function is about as long as the hand-written one (before
	 * copies were coalesced: isum 23 instructions, count_nl 34, fnv1a 26, chase 26) */
	static const struct { const char *file; unsigned slack; } ks[] = {
		{ "isum", 2 }, { "count_nl", 14 }, { "fnv1a", 5 }, { "chase", 2 },
	};
	for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
		char path[512], err[600], name[64];
		size_t len, seg_len, pna_len, pna_seg_len;
		uint8_t *seg = NULL, *pna_seg = NULL;
		char *diags = NULL, *listing = NULL, *pna = NULL;
		void *src = NULL;
		snprintf(name, sizeof name, "coal_%s", ks[k].file);
		snprintf(path, sizeof path, "%s/bench/vm/%s.c", srcdir, ks[k].file);
		if (isa_read_file(path, &src, &len) != 0) {
			check(0, name, "cannot read %s", path);
			continue;
		}
		char *text = realloc(src, len + 1);
		if (!text) {
			free(src);
			check(0, name, "out of memory");
			continue;
		}
		text[len] = 0;
		void *obj = clang_object(text, NULL, &len, err, sizeof err);
		free(text);
		struct cc_opts opts = { .explain = ks[k].file };
		int ne = obj ? cc_compile(obj, len, "case.o", &opts, &seg, &seg_len, &diags, &listing) : -1;
		free(obj);
		check(ne == 0 && listing, name, "%s", diags ? diags : err);
		for (const char *p = listing; ne == 0 && p && *p;
		     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
			unsigned slot, d, s2;
			int at = 0;
			/* "  12  r3 = r0      ...": a register copy, not "r3 = r0 ll" or a load */
			if (sscanf(p, " %u r%u = r%u%n", &slot, &d, &s2, &at) == 3 && p[at] == ' ' &&
			    p[at + 1] == ' ')
				check(copy_removed(p) || on_line(p, "(read by the call") ||
				      (strchr(p, '\n') && on_line(strchr(p, '\n') + 1, "(in the remainder above)")),
				      name, "a copy stays: %.80s", p);
		}
		snprintf(path, sizeof path, "%s/bench/vm/%s.pna", srcdir, ks[k].file);
		char *pna_diags = NULL;
		if (isa_read_file(path, (void **)&pna, &pna_len) == 0 &&
		    asm_assemble(pna, pna_len, path, &pna_seg, &pna_seg_len, &pna_diags) == 0 && ne == 0) {
			unsigned nc = count_insns(seg, seg_len, ks[k].file),
			         np = count_insns(pna_seg, pna_seg_len, ks[k].file);
			check(nc && np && nc <= np + ks[k].slack, name, "%u instructions in C, %u in pnasm",
			      nc, np);
			if (getenv("TEST_CC_VERBOSE"))
				printf("%s: %u instructions from C, %u from pnasm\n", ks[k].file, nc, np);
		}
		free(pna);
		free(pna_diags);
		free(pna_seg);
		free(seg);
		free(diags);
		free(listing);
	}
}

/* ---- --explain: the C line, the BPF instruction and our assembly on one listing ---- */

static void test_explain(void)
{
	char err[600];
	size_t len;
	void *obj = clang_object(insn_src, NULL, &len, err, sizeof err);
	uint8_t *seg = NULL;
	size_t seg_len;
	char *diags = NULL, *listing = NULL;
	struct cc_opts opts = { .explain = "add32" };
	int ne = obj ? cc_compile(obj, len, "case.o", &opts, &seg, &seg_len, &diags, &listing) : -1;
	check(ne == 0 && listing && strstr(listing, "function add32 (2 arguments)") &&
	      strstr(listing, "w0 += w2") && strstr(listing, "(r0 on the stack); lget r2; add; push 4294967295; "
	                                            "and\n") && strstr(listing, "exit                               (r0 on the stack); ret"),
	      "explain add32", "%s", listing ? listing : diags ? diags : err);
	free(seg);
	free(diags);
	free(listing);
	opts.explain = "nosuch";
	diags = listing = NULL;
	ne = obj ? cc_compile(obj, len, "case.o", &opts, &seg, &seg_len, &diags, &listing) : -1;
	check(ne == 1 && diags && strstr(diags, "--explain: no function named 'nosuch'"),
	      "explain unknown", "%s", diags ? diags : "");
	free(diags);
	free(listing);
	free(obj);
}

int main(void)
{
	const char *s = getenv("SRCDIR"), *tmp = getenv("TMPDIR");
	if (s)
		srcdir = s;
	snprintf(tmpdir, sizeof tmpdir, "%s/test_cc.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("test_cc: mkdtemp");
		return 1;
	}
	test_insns();
	test_ccases();
	test_differential();
	test_frame_runs();
	test_hostile();
	test_explain();
	test_coalesce();
	test_no_lines();
	test_random_c();
	static const char *const files[] = { "case.c", "case.o", "clang.log" };
	for (size_t i = 0; i < 3; i++) {
		char p[128];
		snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
		remove(p);
	}
	rmdir(tmpdir);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
