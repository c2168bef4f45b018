/* bench_vm.c: the VM's speed against gcc -O2 and LuaJIT on eleven small kernels.
 *
 * Each kernel exists up to four times: bench/vm/<name>.pna, assembled at run time and run by
 * the VM (the newer kernels have none: their pnasm columns say '-'); bench/vm/<name>.c, the
 * same in C compiled by clang -target bpf and pncc (the Makefile puts <name>.pno in the --cc
 * directory), run by the VM beside it; a C function in native.c; and bench/vm/<name>.lua, run
 * by LuaJIT with its interpreter (-joff) and with its JIT through lua_run.lua, on the same
 * bytes written to files.  All run on the same deterministic data; a kernel whose result
 * differs from the native one aborts the run, so no number is ever printed for a wrong answer.
 * Times are the best of several runs (CLOCK_MONOTONIC), native and VM runs taking turns; the
 * LuaJIT runs come after them, all of one engine in one process.  Without a luajit that runs,
 * its columns say '-'.  Results go to stdout and to results/vm.csv and results/vm.txt (with
 * --quick to results/vm-quick.*.tmp instead, so smoke runs never overwrite measured numbers).
 *
 * Built with `make WASM3=dir` (wasm3's sources, built outside the repository), it has one more
 * engine: <name>.c compiled to wasm32 and run by wasm3 (wasm3_run.c), its times taken in the
 * same rounds as the VM's, and two more columns; without it, the output is as before.
 * Likewise `make UBPF=dir` (uBPF's sources, built outside the repository) adds uBPF's
 * interpreter and x86-64 JIT running <name>.c compiled by clang -target bpf (ubpf_run.c).
 *
 *   bench_vm [--quick] [--reps N] [--src DIR] [--cc DIR] [--results DIR] [--luajit CMD]
 *            [--data DIR] [--kernel NAME] [--wasm DIR] [--ubpf DIR]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "asm.h"
#include "native.h"
#include "vm.h"
#ifdef BENCH_WASM3
#include "wasm3_run.h"
#endif
#ifdef BENCH_UBPF
#include "ubpf_run.h"
#endif

#ifndef BENCH_SRCDIR
#define BENCH_SRCDIR "."
#endif
#ifndef BENCH_CCDIR
#define BENCH_CCDIR ""
#endif
#ifndef NATIVE_CFLAGS
#define NATIVE_CFLAGS "?"
#endif
#ifndef BENCH_WASMDIR
#define BENCH_WASMDIR ""
#endif
#ifndef WASM_CFLAGS
#define WASM_CFLAGS "?"
#endif
#ifndef BENCH_UBPFDIR
#define BENCH_UBPFDIR ""
#endif
#ifndef UBPF_CFLAGS
#define UBPF_CFLAGS "?"
#endif
#ifndef UBPF_COMMIT
#define UBPF_COMMIT "?"
#endif

#define NODE_LEN  16            /* chase.pna: u64 next, u64 value */
#define SEED      0x5eed5eed12345678ull

/* The engines a kernel runs on besides native code, selected per run (vm_run_opts.engine).
 * Where the JIT did not compile a kernel (another architecture), its column is "-". */
enum engine { ENG_INTERP, ENG_JIT, ENG_COUNT };
static const char *const engine_name[ENG_COUNT] = { "interp", "jit" };
static const int engine_sel[ENG_COUNT] = { VM_ENGINE_INTERP, VM_ENGINE_JIT };

/* LuaJIT's two engines: its interpreter (-joff) and its trace compiler (the default). */
enum lua_mode { LUA_INTERP, LUA_JIT, LUA_COUNT };
static const char *const lua_flag[LUA_COUNT] = { "-joff", "-jon" };

struct data {
	uint64_t isum_n;            /* iterations of isum */
	uint8_t *text;              /* region `data`: text-like bytes, about 1 in 64 is '\n' */
	size_t text_len;
	uint8_t *nodes;             /* region `nodes`: one list through every node, shuffled */
	size_t n_nodes;
	uint64_t head;              /* byte offset of the first node of that list */
	uint8_t *varints;           /* region `varints`: LEB128 varints, end to end */
	size_t varints_len;
	uint8_t *htab, *hkeys, *hq; /* regions of hprobe: table, key bytes, queries */
	size_t htab_len, hkeys_len, hq_len, n_queries;
	uint8_t *bits;              /* region `bits` of bitmap: u64 words, about 1 bit in 8 set */
	size_t bits_len;
	uint8_t *bnodes, *bq;       /* regions of btree: nodes of sorted u32 keys, u32 queries */
	size_t bnodes_len, bq_len;
	uint8_t *recs;              /* region `recs` of rsort: 8-byte records (u32 key, u32 value) */
	size_t recs_len;
	uint8_t sbuf[8 * SORT_RUN]; /* region `sbuf`: rsort's scratch run, written by the VM */
	uint64_t fib_n;             /* argument of fib */
};

struct kernel {
	const char *name;           /* entry point, and <name>.pna */
	uint64_t (*native)(const struct data *);
	uint64_t (*alt)(const struct data *);  /* second native baseline, or NULL */
	const char *alt_name;
	unsigned (*args)(const struct data *, int64_t *argv);   /* entry arguments -> count */
	void (*size)(const struct data *, char *buf, size_t len);
};

/* One kernel's measurements; a negative time means "not measured". */
struct row {
	char size[32];
	double native_ms, alt_ms, eng_ms[ENG_COUNT];
	double cc_ms[ENG_COUNT];    /* the kernel written in C, through pncc */
	double lua_ms[LUA_COUNT];   /* bench/vm/<name>.lua on LuaJIT */
	double wasm3_ms;            /* bench/vm/<name>.c as wasm32 on wasm3 (BENCH_WASM3) */
	double ubpf_ms[2];          /* <name>.c as BPF on uBPF's interpreter, JIT (BENCH_UBPF) */
	uint64_t result;
};

static volatile uint64_t sink; /* results pass through here so no run is dead code */

/* Whether this build has the wasm3 columns: the table and the CSV have them only then. */
#ifdef BENCH_WASM3
static const int have_wasm3 = 1;
#else
static const int have_wasm3 = 0;
#endif
/* Likewise the uBPF columns. */
#ifdef BENCH_UBPF
static const int have_ubpf = 1;
_Static_assert(UB_COUNT == 2, "struct row's ubpf_ms");
static const char *const ubpf_name[2] = { "uBPF interp", "uBPF jit" };
#else
static const int have_ubpf = 0;
#endif

/* ---- data, generated from a fixed seed so every run and every machine sees the same bytes */

static uint64_t rng_state = SEED;

static uint64_t rng(void)      /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void *xmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p) {
		fprintf(stderr, "bench_vm: out of memory (%zu bytes)\n", len);
		exit(1);
	}
	return p;
}

static void make_text(struct data *d, size_t len)
{
	d->text = xmalloc(len);
	d->text_len = len;
	for (size_t i = 0; i < len; i += 8) {
		uint64_t r = rng();
		for (size_t j = i; j < i + 8 && j < len; j++, r >>= 8) {
			unsigned b = r & 0xff;
			d->text[j] = b < 4 ? '\n' : b < 40 ? ' ' : (uint8_t)('a' + b % 26);
		}
	}
}

/* One list through all n nodes in a random order (Fisher-Yates), so consecutive nodes are far
 * apart in memory and each step of the walk is a dependent, mostly uncached load. */
static void make_nodes(struct data *d, size_t n)
{
	uint32_t *perm = xmalloc(n * sizeof *perm);

	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rng() % (i + 1);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	d->nodes = xmalloc(n * NODE_LEN);
	d->n_nodes = n;
	for (size_t k = 0; k < n; k++) {
		uint8_t *node = d->nodes + (size_t)perm[k] * NODE_LEN;
		isa_put64(node, k + 1 < n ? (uint64_t)perm[k + 1] * NODE_LEN : CHASE_END);
		isa_put64(node + 8, rng());
	}
	d->head = n ? (uint64_t)perm[0] * NODE_LEN : CHASE_END;
	free(perm);
}

/* LEB128 varints filling len bytes, lengths as in typical wire data: half are one byte, a
 * quarter two, then three, five and nine or ten bytes (any 64-bit value); zero bytes (the
 * varint 0) pad the end so the last value ends exactly at len. */
static void make_varints(struct data *d, size_t len)
{
	static const unsigned bits[16] = { 7, 7, 7, 7, 7, 7, 7, 7, 14, 14, 14, 14, 21, 21, 35, 64 };
	size_t i = 0;

	d->varints = xmalloc(len);
	d->varints_len = len;
	while (i + 10 <= len) {
		uint64_t r = rng();
		unsigned nb = bits[r & 15];
		uint64_t v = rng();
		if (nb < 64)
			v &= (1ull << nb) - 1;
		do {
			d->varints[i++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
	}
	memset(d->varints + i, 0, len - i);
}

/* A key for hprobe: "user/", then 3 to 35 random lower-case letters and digits. */
static size_t make_key(uint8_t *k)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t len = 5 + 3 + rng() % 33;

	memcpy(k, "user/", 5);
	for (size_t i = 5; i < len; i++)
		k[i] = (uint8_t)alnum[rng() % 36];
	return len;
}

static uint64_t fnv1a_bytes(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* n_keys string keys in a table of 2 * n_keys slots (linear probing, FNV-1a), and 4 * n_keys
 * queries: half of them keys of the table, half new keys of the same shape. */
static void make_hprobe(struct data *d, size_t n_keys)
{
	size_t slots = 2 * n_keys, kl = 0, ql = 0;

	d->htab_len = slots * 16;
	d->htab = xmalloc(d->htab_len);
	memset(d->htab, 0, d->htab_len);
	d->hkeys = xmalloc(n_keys * 40);
	uint32_t *koffs = xmalloc(n_keys * sizeof *koffs);
	uint8_t *klens = xmalloc(n_keys);
	for (size_t i = 0; i < n_keys; i++) {
		size_t len = make_key(d->hkeys + kl);
		uint64_t slot = fnv1a_bytes(d->hkeys + kl, len) & (slots - 1);
		while (isa_get32(d->htab + slot * 16 + 4) != 0)
			slot = (slot + 1) & (slots - 1);
		isa_put32(d->htab + slot * 16, (uint32_t)kl);
		isa_put32(d->htab + slot * 16 + 4, (uint32_t)len);
		isa_put64(d->htab + slot * 16 + 8, rng());
		koffs[i] = (uint32_t)kl;
		klens[i] = (uint8_t)len;
		kl += len;
	}
	d->hkeys_len = kl;
	d->n_queries = 4 * n_keys;
	d->hq = xmalloc(d->n_queries * 41);
	for (size_t i = 0; i < d->n_queries; i++) {
		uint8_t *k = d->hq + ql + 1;
		size_t len;
		if (rng() & 1) {
			size_t which = rng() % n_keys;
			len = klens[which];
			memcpy(k, d->hkeys + koffs[which], len);
		} else {
			len = make_key(k);
		}
		d->hq[ql] = (uint8_t)len;
		ql += 1 + len;
	}
	d->hq_len = ql;
	free(koffs);
	free(klens);
}

/* Words with each bit set with probability 1/8 (the AND of three random words). */
static void make_bits(struct data *d, size_t n_words)
{
	d->bits_len = n_words * 8;
	d->bits = xmalloc(d->bits_len);
	for (size_t i = 0; i < n_words; i++)
		isa_put64(d->bits + 8 * i, rng() & rng() & rng());
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* n_nodes (a power of two) nodes of BT_KEYS sorted random u32 keys, and n_q random queries. */
static void make_btree(struct data *d, size_t n_nodes, size_t n_q)
{
	uint32_t keys[BT_KEYS];

	d->bnodes_len = n_nodes * 4 * BT_KEYS;
	d->bnodes = xmalloc(d->bnodes_len);
	for (size_t n = 0; n < n_nodes; n++) {
		for (size_t k = 0; k < BT_KEYS; k++)
			keys[k] = (uint32_t)rng();
		qsort(keys, BT_KEYS, sizeof keys[0], cmp_u32);
		for (size_t k = 0; k < BT_KEYS; k++)
			isa_put32(d->bnodes + (n * BT_KEYS + k) * 4, keys[k]);
	}
	d->bq_len = n_q * 4;
	d->bq = xmalloc(d->bq_len);
	for (size_t i = 0; i < n_q; i++)
		isa_put32(d->bq + 4 * i, (uint32_t)rng());
}

/* n_runs runs of SORT_RUN records: keys 0..999 (so equal keys occur and stability counts),
 * values the record's index. */
static void make_recs(struct data *d, size_t n_runs)
{
	size_t n = n_runs * SORT_RUN;

	d->recs_len = n * 8;
	d->recs = xmalloc(d->recs_len);
	for (size_t i = 0; i < n; i++) {
		isa_put32(d->recs + 8 * i, (uint32_t)(rng() % 1000));
		isa_put32(d->recs + 8 * i + 4, (uint32_t)i);
	}
}

/* ---- the kernels: native wrappers, entry arguments, size labels */

static uint64_t nat_isum(const struct data *d) { return native_isum(d->isum_n); }
static uint64_t nat_count_nl(const struct data *d) { return native_count_nl(d->text, d->text_len); }
static uint64_t nat_memchr(const struct data *d)
{
	return native_count_nl_memchr(d->text, d->text_len);
}
static uint64_t nat_fnv1a(const struct data *d) { return native_fnv1a(d->text, d->text_len); }
static uint64_t nat_chase(const struct data *d) { return native_chase(d->nodes, d->head); }
static uint64_t nat_hprobe(const struct data *d)
{
	return native_hprobe(d->htab, d->htab_len, d->hkeys, d->hq, d->hq_len);
}
static uint64_t nat_varint(const struct data *d)
{
	return native_varint(d->varints, d->varints_len);
}

static uint64_t nat_bitmap(const struct data *d) { return native_bitmap(d->bits, d->bits_len); }
static uint64_t nat_btree(const struct data *d)
{
	return native_btree(d->bnodes, d->bnodes_len, d->bq, d->bq_len);
}
static uint64_t nat_rsort(const struct data *d) { return native_rsort(d->recs, d->recs_len); }
static uint64_t nat_fib(const struct data *d) { return native_fib(d->fib_n); }

static unsigned args_none(const struct data *d, int64_t *argv) { return 0; }
static unsigned args_isum(const struct data *d, int64_t *argv)
{
	argv[0] = (int64_t)d->isum_n;
	return 1;
}
static unsigned args_chase(const struct data *d, int64_t *argv)
{
	argv[0] = (int64_t)d->head;
	return 1;
}

static unsigned args_fib(const struct data *d, int64_t *argv)
{
	argv[0] = (int64_t)d->fib_n;
	return 1;
}

static void size_isum(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64 " iters", d->isum_n);
}
static void size_text(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu KiB", d->text_len >> 10);
}
static void size_varints(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu KiB", d->varints_len >> 10);
}
static void size_hprobe(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu lookups", d->n_queries);
}
static void size_nodes(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu nodes", d->n_nodes);
}

static void size_bits(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu KiB", d->bits_len >> 10);
}
static void size_btree(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu searches", d->bq_len / 4);
}
static void size_recs(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "%zu records", d->recs_len / 8);
}
static void size_fib(const struct data *d, char *buf, size_t len)
{
	snprintf(buf, len, "fib(%" PRIu64 ")", d->fib_n);
}

static const struct kernel kernels[] = {
	{ "isum",           nat_isum,     NULL,       NULL,     args_isum,  size_isum },
	{ "count_nl",       nat_count_nl, NULL,       NULL,     args_none,  size_text },
	{ "fnv1a",          nat_fnv1a,    NULL,       NULL,     args_none,  size_text },
	{ "chase",          nat_chase,    NULL,       NULL,     args_chase,  size_nodes },
	{ "count_nl_findb", nat_count_nl, nat_memchr, "memchr", args_none,  size_text },
	{ "varint",         nat_varint,   NULL,       NULL,     args_none,  size_varints },
	{ "hprobe",         nat_hprobe,   NULL,       NULL,     args_none,  size_hprobe },
	{ "bitmap",         nat_bitmap,   NULL,       NULL,     args_none,  size_bits },
	{ "btree",          nat_btree,    NULL,       NULL,     args_none,  size_btree },
	{ "rsort",          nat_rsort,    NULL,       NULL,     args_none,  size_recs },
	{ "fib",            nat_fib,      NULL,       NULL,     args_fib,   size_fib },
};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])

/* ---- timing */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void mismatch(const char *kernel, const char *who, uint64_t got, uint64_t want)
{
	fprintf(stderr, "bench_vm: %s: %s returned %" PRIu64 " (0x%" PRIx64 "), native %" PRIu64
	        " (0x%" PRIx64 "): not reporting times for a wrong answer\n",
	        kernel, who, got, got, want, want);
	exit(1);
}

/* Keep the smaller of *best (negative: none yet) and t. */
static void keep_best(double *best, double t)
{
	if (*best < 0 || t < *best)
		*best = t;
}

/* Time one call of fn, which must return want. */
static double time_native(const char *kernel, const char *who, uint64_t (*fn)(const struct data *),
                          const struct data *d, uint64_t want)
{
	double t0 = now_ms();
	uint64_t v = fn(d);
	double t = now_ms() - t0;

	sink = v;
	if (v != want)
		mismatch(kernel, who, v, want);
	return t;
}

/* Time one run of the entry on engine e, which must return want; -1 when the engine does not
 * exist. */
static double time_vm(const char *kernel, enum engine e, const struct vm_prog *prog,
                      unsigned entry, const int64_t *argv, unsigned n_args, uint64_t want)
{
	/* Every kernel finishes long before UINT64_MAX / 2 backward jumps: fuel never stops it. */
	struct vm_run_opts opts = { .fuel = UINT64_MAX / 2, .engine = engine_sel[e] };
	struct vm_result res;

	if (e == ENG_JIT && vm_prog_jit_error(prog))
		return -1;      /* not compiled: leave the column empty rather than invent numbers */
	double t0 = now_ms();
	int rc = vm_run(prog, entry, argv, n_args, &opts, &res);
	double t = now_ms() - t0;
	if (rc != 0) {
		char buf[256];
		fprintf(stderr, "bench_vm: %s on %s: %s: %s\n", kernel, engine_name[e],
		        vm_strerror(rc), rc == -VM_ETRAP ?
		        vm_trap_str(prog, &res.trap, buf, sizeof buf) : "");
		exit(1);
	}
	sink = (uint64_t)res.value;
	if ((uint64_t)res.value != want)
		mismatch(kernel, engine_name[e], (uint64_t)res.value, want);
	return t;
}

/* The regions the kernels import: bound in the VM, written to files for LuaJIT,
 * copied into wasm3's memory and uBPF's block. */
struct region {
	const char *name;
	uint8_t *p;
	size_t len;
	int acc;
};

#ifdef BENCH_WASM3
/* Time one call of the kernel under wasm3, which must return want. */
static double time_wasm3(const char *kernel, struct w3 *w, const int64_t *argv, unsigned n_args,
                         uint64_t want)
{
	char err[512];
	uint64_t v = 0;
	double t0 = now_ms();
	int rc = w3_call(w, argv, n_args, &v, err, sizeof err);
	double t = now_ms() - t0;

	if (rc) {
		fprintf(stderr, "bench_vm: %s on wasm3: %s\n", kernel, err);
		exit(1);
	}
	sink = v;
	if (v != want)
		mismatch(kernel, "wasm3", v, want);
	return t;
}

/* The kernel's DIR/<name>.wasm loaded in wasm3 with the regions it names, or NULL when there
 * is none (its column says '-'). */
static struct w3 *load_wasm3(const char *dir, const char *name, const struct region *rg,
                             size_t n)
{
	char path[4096], err[512];
	struct w3_region w3rg[16];
	struct w3 *w;

	if (!*dir)
		return NULL;
	snprintf(path, sizeof path, "%s/%s.wasm", dir, name);
	if (access(path, F_OK) != 0)
		return NULL;
	for (size_t i = 0; i < n && i < 16; i++)
		w3rg[i] = (struct w3_region){ rg[i].name, rg[i].p, rg[i].len };
	if (!(w = w3_load(path, name, w3rg, n < 16 ? n : 16, err, sizeof err))) {
		fprintf(stderr, "bench_vm: %s\n", err);
		exit(1);
	}
	return w;
}
#endif

#ifdef BENCH_UBPF
/* Time one call of the kernel on uBPF's engine e, which must return want; -1 with the cause in
 * err when uBPF does not run it. */
static double time_ubpf(const char *kernel, struct ub *u, enum ub_engine e, const int64_t *argv,
                        unsigned n_args, uint64_t want, char *err, size_t err_len)
{
	uint64_t v = 0;
	double t0 = now_ms();
	int rc = ub_call(u, e, argv, n_args, &v, err, err_len);
	double t = now_ms() - t0;

	if (rc)
		return -1;
	sink = v;
	if (v != want)
		mismatch(kernel, ubpf_name[e], v, want);
	return t;
}

/* The kernel's DIR/<name>.o loaded in uBPF, or NULL when there is none (its columns say '-'). */
static struct ub *load_ubpf(const char *dir, const char *name)
{
	char path[4096], err[512];
	struct ub *u;

	if (!*dir)
		return NULL;
	snprintf(path, sizeof path, "%s/%s.o", dir, name);
	if (access(path, F_OK) != 0)
		return NULL;
	if (!(u = ub_load(path, err, sizeof err))) {
		fprintf(stderr, "bench_vm: %s\n", err);
		exit(1);
	}
	return u;
}
#endif

/* Run bench/vm/<name>.lua up to reps times in one LuaJIT process (lua_run.lua: it loads the
 * regions from datadir, times each call with CLOCK_MONOTONIC, prints "result ms" per run and
 * stops early once 2 s are spent); every result must be want.  The best time, or -1 when there
 * is no <name>.lua. */
static double time_lua(const char *kernel, enum lua_mode m, const char *luajit, const char *src,
                       const char *datadir, int reps, const int64_t *argv, unsigned n_args,
                       uint64_t want)
{
	char cmd[8192], path[4096], line[256];
	double best = -1;
	int n = 0, len;

	snprintf(path, sizeof path, "%s/%s.lua", src, kernel);
	if (access(path, F_OK) != 0)
		return -1;
	len = snprintf(cmd, sizeof cmd, "'%s' %s '%s/lua_run.lua' '%s' '%s' %s %d", luajit,
	               lua_flag[m], src, datadir, src, kernel, reps);
	for (unsigned i = 0; i < n_args && len < (int)sizeof cmd; i++)
		len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %" PRId64, argv[i]);
	if (len >= (int)sizeof cmd) {
		fprintf(stderr, "bench_vm: %s: luajit command too long\n", kernel);
		exit(1);
	}
	FILE *f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "bench_vm: %s: %s\n", cmd, strerror(errno));
		exit(1);
	}
	while (fgets(line, sizeof line, f)) {
		uint64_t v;
		double ms;
		if (sscanf(line, "%" SCNu64 " %lf", &v, &ms) != 2)
			continue;
		if (v != want)
			mismatch(kernel, m == LUA_INTERP ? "luajit -joff" : "luajit", v, want);
		keep_best(&best, ms);
		n++;
	}
	int st = pclose(f);
	if (st != 0 || n < 1 || n > reps) {
		fprintf(stderr, "bench_vm: %s: exit status %d after %d of %d runs\n", cmd, st, n, reps);
		exit(1);
	}
	return best;
}

/* Write each region to dir/<name>.bin. */
static void dump_regions(const char *dir, const struct region *rg, size_t n)
{
	char path[4096];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s.bin", dir, rg[i].name);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(rg[i].p, 1, rg[i].len, f) != rg[i].len || fclose(f) != 0) {
			fprintf(stderr, "bench_vm: %s: %s\n", path, strerror(errno));
			exit(1);
		}
	}
}

static void remove_regions(const char *dir, const struct region *rg, size_t n)
{
	char path[4096];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s.bin", dir, rg[i].name);
		unlink(path);
	}
	rmdir(dir);
}

/* ---- loading kernels */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		fprintf(stderr, "bench_vm: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			buf = realloc(buf, cap);
			if (!buf) {
				fprintf(stderr, "bench_vm: out of memory\n");
				exit(1);
			}
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "bench_vm: %s: read error\n", path);
		exit(1);
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The kernel's bench/vm/<name>.pna assembled and loaded, or NULL when there is none (a kernel
 * written only in C, whose pnasm columns stay empty). */
static struct vm_prog *load_kernel(struct vm *vm, const char *dir, const char *name)
{
	char path[4096], err[512], *diags = NULL;
	uint8_t *seg = NULL;
	size_t src_len, seg_len;
	struct vm_prog *prog;

	snprintf(path, sizeof path, "%s/%s.pna", dir, name);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return NULL;
	char *src = slurp(path, &src_len);
	int n_err = asm_assemble(src, src_len, path, &seg, &seg_len, &diags);
	if (diags)
		fputs(diags, stderr);
	if (n_err) {
		fprintf(stderr, "bench_vm: %s: %d assembly error(s)\n", path, n_err);
		exit(1);
	}
	int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
	if (rc) {
		fprintf(stderr, "bench_vm: %s: %s: %s\n", path, vm_strerror(rc), err);
		exit(1);
	}
	free(diags);
	free(seg);
	free(src);
	return prog;
}

/* The segment pncc made of bench/vm/<name>.c, or NULL when there is none in dir. */
static struct vm_prog *load_cc_kernel(struct vm *vm, const char *dir, const char *name)
{
	char path[4096], err[512];
	void *seg;
	size_t len;
	struct vm_prog *prog;

	if (!*dir)
		return NULL;
	snprintf(path, sizeof path, "%s/%s.pno", dir, name);
	if (isa_read_file(path, &seg, &len) != 0) {
		fprintf(stderr, "bench_vm: %s: %s (no pncc column)\n", path, strerror(errno));
		return NULL;
	}
	int rc = vm_load(vm, seg, len, &prog, err, sizeof err);
	free(seg);
	if (rc) {
		fprintf(stderr, "bench_vm: %s: %s: %s\n", path, vm_strerror(rc), err);
		exit(1);
	}
	return prog;
}

/* ---- reporting */

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && colon) {
			snprintf(buf, len, "%s", colon + 2);
			buf[strcspn(buf, "\n")] = 0;
			break;
		}
	}
	fclose(f);
}

static void fmt_ms(char *buf, size_t len, double ms)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f", ms);
}

static void fmt_ratio(char *buf, size_t len, double num, double den)
{
	if (num < 0 || den <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2fx", num / den);
}

/* The same table goes to the terminal and to results/vm.txt. */
static void print_table(FILE *f, const struct row *rows, const char *env)
{
	fputs(env, f);
	fprintf(f, "%-15s %-16s %10s %10s %9s %10s %9s %11s %10s %9s %10s %9s %10s %9s %10s %9s",
	        "kernel", "size", "native ms", "interp ms", "interp/n", "jit ms", "jit/n",
	        "interp/jit", "C interp", "C/pna", "C jit", "C/pna", "lj-joff ms", "lj-joff/n",
	        "luajit ms", "luajit/n");
	if (have_wasm3)
		fprintf(f, " %10s %9s %9s", "wasm3 ms", "wasm3/n", "Cint/n");
	if (have_ubpf) {
		if (!have_wasm3)
			fprintf(f, " %9s", "Cint/n");
		fprintf(f, " %9s %10s %9s %10s %9s", "Cjit/n", "ubpf-i ms", "ubpf-i/n", "ubpf-j ms",
		        "ubpf-j/n");
	}
	fprintf(f, "  %s\n", "other baseline");
	for (size_t k = 0; k < N_KERNELS; k++) {
		const struct row *r = &rows[k];
		char nat[32], in[32], in_r[32], jit[32], jit_r[32], in_jit[32], alt[128] = "";
		char cin[32], cin_r[32], cjit[32], cjit_r[32], lin[32], lin_r[32], ljit[32], ljit_r[32];
		fmt_ms(lin, sizeof lin, r->lua_ms[LUA_INTERP]);
		fmt_ratio(lin_r, sizeof lin_r, r->lua_ms[LUA_INTERP], r->native_ms);
		fmt_ms(ljit, sizeof ljit, r->lua_ms[LUA_JIT]);
		fmt_ratio(ljit_r, sizeof ljit_r, r->lua_ms[LUA_JIT], r->native_ms);
		fmt_ms(cin, sizeof cin, r->cc_ms[ENG_INTERP]);
		fmt_ratio(cin_r, sizeof cin_r, r->cc_ms[ENG_INTERP], r->eng_ms[ENG_INTERP]);
		fmt_ms(cjit, sizeof cjit, r->cc_ms[ENG_JIT]);
		fmt_ratio(cjit_r, sizeof cjit_r, r->cc_ms[ENG_JIT], r->eng_ms[ENG_JIT]);
		fmt_ms(nat, sizeof nat, r->native_ms);
		fmt_ms(in, sizeof in, r->eng_ms[ENG_INTERP]);
		fmt_ratio(in_r, sizeof in_r, r->eng_ms[ENG_INTERP], r->native_ms);
		fmt_ms(jit, sizeof jit, r->eng_ms[ENG_JIT]);
		fmt_ratio(jit_r, sizeof jit_r, r->eng_ms[ENG_JIT], r->native_ms);
		fmt_ratio(in_jit, sizeof in_jit, r->eng_ms[ENG_INTERP], r->eng_ms[ENG_JIT]);
		if (kernels[k].alt) {
			char ms[32], ratio[32], jratio[32];
			fmt_ms(ms, sizeof ms, r->alt_ms);
			fmt_ratio(ratio, sizeof ratio, r->eng_ms[ENG_INTERP], r->alt_ms);
			fmt_ratio(jratio, sizeof jratio, r->eng_ms[ENG_JIT], r->alt_ms);
			snprintf(alt, sizeof alt, "%s %s ms, interp/%s %s, jit/%s %s", kernels[k].alt_name,
			         ms, kernels[k].alt_name, ratio, kernels[k].alt_name, jratio);
		}
		fprintf(f, "%-15s %-16s %10s %10s %9s %10s %9s %11s %10s %9s %10s %9s %10s %9s %10s %9s",
		        kernels[k].name, r->size, nat, in, in_r, jit, jit_r, in_jit, cin, cin_r, cjit,
		        cjit_r, lin, lin_r, ljit, ljit_r);
		if (have_wasm3) {
			char w3[32], w3_r[32], cin_n[32];
			fmt_ms(w3, sizeof w3, r->wasm3_ms);
			fmt_ratio(w3_r, sizeof w3_r, r->wasm3_ms, r->native_ms);
			fmt_ratio(cin_n, sizeof cin_n, r->cc_ms[ENG_INTERP], r->native_ms);
			fprintf(f, " %10s %9s %9s", w3, w3_r, cin_n);
		}
		if (have_ubpf) {
			char cin_n[32], cjit_n[32], ui[32], ui_r[32], uj[32], uj_r[32];
			fmt_ratio(cin_n, sizeof cin_n, r->cc_ms[ENG_INTERP], r->native_ms);
			fmt_ratio(cjit_n, sizeof cjit_n, r->cc_ms[ENG_JIT], r->native_ms);
			fmt_ms(ui, sizeof ui, r->ubpf_ms[0]);
			fmt_ratio(ui_r, sizeof ui_r, r->ubpf_ms[0], r->native_ms);
			fmt_ms(uj, sizeof uj, r->ubpf_ms[1]);
			fmt_ratio(uj_r, sizeof uj_r, r->ubpf_ms[1], r->native_ms);
			if (!have_wasm3)
				fprintf(f, " %9s", cin_n);
			fprintf(f, " %9s %10s %9s %10s %9s", cjit_n, ui, ui_r, uj, uj_r);
		}
		fprintf(f, "  %s\n", alt);
	}
}

static void csv_ms(FILE *f, double ms)
{
	if (ms >= 0)
		fprintf(f, "%.3f", ms);
	fputc(',', f);
}

static void csv_ratio(FILE *f, double num, double den, int last)
{
	if (num >= 0 && den > 0)
		fprintf(f, "%.3f", num / den);
	fputc(last ? '\n' : ',', f);
}

static int write_csv(const char *path, const struct row *rows)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "kernel,size,native_ms,interp_ms,jit_ms,interp_over_native,jit_over_native,"
	        "alt_baseline,alt_ms,interp_over_alt,interp_over_jit,jit_over_alt,"
	        "cc_interp_ms,cc_jit_ms,cc_interp_over_interp,cc_jit_over_jit,"
	        "luajit_joff_ms,luajit_ms,luajit_joff_over_native,luajit_over_native%s%s%s\n",
	        have_wasm3 ? ",wasm3_ms,wasm3_over_native,cc_interp_over_native" : "",
	        have_ubpf && !have_wasm3 ? ",cc_interp_over_native" : "",
	        have_ubpf ? ",cc_jit_over_native,ubpf_interp_ms,ubpf_jit_ms,ubpf_interp_over_native,"
	                    "ubpf_jit_over_native" : "");
	for (size_t k = 0; k < N_KERNELS; k++) {
		const struct row *r = &rows[k];
		fprintf(f, "%s,%s,", kernels[k].name, r->size);
		csv_ms(f, r->native_ms);
		csv_ms(f, r->eng_ms[ENG_INTERP]);
		csv_ms(f, r->eng_ms[ENG_JIT]);
		csv_ratio(f, r->eng_ms[ENG_INTERP], r->native_ms, 0);
		csv_ratio(f, r->eng_ms[ENG_JIT], r->native_ms, 0);
		fprintf(f, "%s,", kernels[k].alt ? kernels[k].alt_name : "");
		csv_ms(f, kernels[k].alt ? r->alt_ms : -1);
		csv_ratio(f, r->eng_ms[ENG_INTERP], kernels[k].alt ? r->alt_ms : -1, 0);
		csv_ratio(f, r->eng_ms[ENG_INTERP], r->eng_ms[ENG_JIT], 0);
		csv_ratio(f, r->eng_ms[ENG_JIT], kernels[k].alt ? r->alt_ms : -1, 0);
		csv_ms(f, r->cc_ms[ENG_INTERP]);
		csv_ms(f, r->cc_ms[ENG_JIT]);
		csv_ratio(f, r->cc_ms[ENG_INTERP], r->eng_ms[ENG_INTERP], 0);
		csv_ratio(f, r->cc_ms[ENG_JIT], r->eng_ms[ENG_JIT], 0);
		csv_ms(f, r->lua_ms[LUA_INTERP]);
		csv_ms(f, r->lua_ms[LUA_JIT]);
		csv_ratio(f, r->lua_ms[LUA_INTERP], r->native_ms, 0);
		csv_ratio(f, r->lua_ms[LUA_JIT], r->native_ms, !have_wasm3 && !have_ubpf);
		if (have_wasm3) {
			csv_ms(f, r->wasm3_ms);
			csv_ratio(f, r->wasm3_ms, r->native_ms, 0);
			csv_ratio(f, r->cc_ms[ENG_INTERP], r->native_ms, !have_ubpf);
		}
		if (have_ubpf) {
			if (!have_wasm3)
				csv_ratio(f, r->cc_ms[ENG_INTERP], r->native_ms, 0);
			csv_ratio(f, r->cc_ms[ENG_JIT], r->native_ms, 0);
			csv_ms(f, r->ubpf_ms[0]);
			csv_ms(f, r->ubpf_ms[1]);
			csv_ratio(f, r->ubpf_ms[0], r->native_ms, 0);
			csv_ratio(f, r->ubpf_ms[1], r->native_ms, 1);
		}
	}
	return fclose(f);
}

static int write_text(const char *path, const struct row *rows, const char *env)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	print_table(f, rows, env);
	return fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_vm [--quick] [--reps N] [--src DIR] [--cc DIR] [--results DIR]\n"
	        "                [--luajit CMD] [--data DIR] [--kernel NAME] [--wasm DIR] [--ubpf DIR]\n"
	        "  --quick        small sizes, for a smoke test (writes results/*.tmp)\n"
	        "  --reps N       runs per measurement, the best is kept (default 5)\n"
	        "  --src DIR      where the kernels' .pna files are (default %s)\n"
	        "  --cc DIR       where pncc's segments of the kernels' .c files are (default %s;\n"
	        "                 '' for no C columns)\n"
	        "  --results DIR  where vm.csv and vm.txt go (default SRC/results; '' for none)\n"
	        "  --luajit CMD   LuaJIT for the <name>.lua columns (default luajit; '' for none;\n"
	        "                 when it does not run, those columns say '-')\n"
	        "  --data DIR     write the regions there as <region>.bin and keep them (default:\n"
	        "                 a temporary directory, removed at the end)\n"
	        "  --kernel NAME  measure that kernel only (the others' rows say '-')\n"
	        "  --wasm DIR     where the kernels' <name>.wasm are, for the wasm3 column (default\n"
	        "                 %s; only in a build with WASM3=dir)\n"
	        "  --ubpf DIR     where the kernels' BPF <name>.o are, for the uBPF columns (default\n"
	        "                 %s; only in a build with UBPF=dir)\n",
	        BENCH_SRCDIR, BENCH_CCDIR, *BENCH_WASMDIR ? BENCH_WASMDIR : "none",
	        *BENCH_UBPFDIR ? BENCH_UBPFDIR : "none");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *src = BENCH_SRCDIR, *results = NULL, *ccdir = BENCH_CCDIR, *luajit = "luajit";
	const char *datadir = NULL, *only = NULL, *wasmdir = BENCH_WASMDIR, *ubpfdir = BENCH_UBPFDIR;
	char tmpdir[] = "/tmp/bench_vm.XXXXXX";
	int quick = 0, reps = 5;
	struct data d = { 0 };
	struct row rows[N_KERNELS];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--src") == 0 && i + 1 < argc)
			src = argv[++i];
		else if (strcmp(argv[i], "--cc") == 0 && i + 1 < argc)
			ccdir = argv[++i];
		else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc)
			results = argv[++i];
		else if (strcmp(argv[i], "--luajit") == 0 && i + 1 < argc)
			luajit = argv[++i];
		else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			datadir = argv[++i];
		else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--wasm") == 0 && i + 1 < argc)
			wasmdir = argv[++i];
		else if (strcmp(argv[i], "--ubpf") == 0 && i + 1 < argc)
			ubpfdir = argv[++i];
		else
			usage();
	}
	if (reps < 1)
		usage();
	for (size_t k = 0; only && k < N_KERNELS && strcmp(only, kernels[k].name) != 0; k++)
		if (k + 1 == N_KERNELS) {
			fprintf(stderr, "bench_vm: no kernel '%s'\n", only);
			usage();
		}

	/* Full sizes make each native kernel run for tens to hundreds of milliseconds, well above
	 * timer resolution; --quick divides them by 64 and only shows the harness works. */
	d.isum_n = quick ? 1u << 20 : 100000000u;
	make_text(&d, quick ? 1u << 20 : 64u << 20);
	make_nodes(&d, quick ? 1u << 14 : 1u << 20);
	make_varints(&d, quick ? 1u << 18 : 16u << 20);
	make_hprobe(&d, quick ? 1u << 10 : 1u << 16);
	make_bits(&d, quick ? 1u << 14 : 1u << 20);
	make_btree(&d, quick ? 64 : 1024, quick ? 1u << 15 : 1u << 21);
	make_recs(&d, quick ? 1u << 8 : 1u << 14);
	d.fib_n = quick ? 22 : 32;

	const struct region regions[] = {
		{ "data", d.text, d.text_len, ISA_ACC_RO },
		{ "nodes", d.nodes, d.n_nodes * NODE_LEN, ISA_ACC_RO },
		{ "varints", d.varints, d.varints_len, ISA_ACC_RO },
		{ "htab", d.htab, d.htab_len, ISA_ACC_RO },
		{ "hkeys", d.hkeys, d.hkeys_len, ISA_ACC_RO },
		{ "hq", d.hq, d.hq_len, ISA_ACC_RO },
		{ "bits", d.bits, d.bits_len, ISA_ACC_RO },
		{ "bnodes", d.bnodes, d.bnodes_len, ISA_ACC_RO },
		{ "bq", d.bq, d.bq_len, ISA_ACC_RO },
		{ "recs", d.recs, d.recs_len, ISA_ACC_RO },
		{ "sbuf", d.sbuf, sizeof d.sbuf, ISA_ACC_RW },
	};
	const size_t n_regions = sizeof regions / sizeof regions[0];
	struct vm *vm = vm_new();
	for (size_t i = 0; vm && i < n_regions; i++)
		if (vm_bind_region(vm, regions[i].name, regions[i].p, regions[i].len, regions[i].acc)) {
			vm_free(vm);
			vm = NULL;
		}
	if (!vm) {
		fprintf(stderr, "bench_vm: cannot set up the vm\n");
		return 1;
	}

	/* LuaJIT reads the same bytes from files; without a LuaJIT that runs, its columns are '-'. */
	char luajit_note[512];
	if (*luajit) {
		char cmd[4096];
		snprintf(cmd, sizeof cmd, "'%s' -v >/dev/null 2>&1", luajit);
		if (system(cmd) != 0)
			luajit = "";
	}
	if (*luajit) {
		FILE *v = NULL;
		char cmd[4096], ver[128] = "?";
		snprintf(cmd, sizeof cmd, "'%s' -v 2>&1", luajit);
		if ((v = popen(cmd, "r")) && fgets(ver, sizeof ver, v)) {
			char *cut = strstr(ver, " --");        /* "LuaJIT 2.1.0 -- Copyright ..." */
			ver[cut ? (size_t)(cut - ver) : strcspn(ver, "\n")] = 0;
		}
		if (v)
			pclose(v);
		snprintf(luajit_note, sizeof luajit_note, "# luajit: %.100s, -joff and default, best of "
		         "%d runs (fewer past 2 s) in one process after the VM's rounds\n", ver, reps);
		if (!datadir) {
			if (!mkdtemp(tmpdir)) {
				fprintf(stderr, "bench_vm: mkdtemp %s: %s\n", tmpdir, strerror(errno));
				return 1;
			}
		}
		dump_regions(datadir ? datadir : tmpdir, regions, n_regions);
	} else {
		snprintf(luajit_note, sizeof luajit_note,
		         "# luajit: none (not found, or --luajit ''), its columns are '-'\n");
		if (datadir)
			dump_regions(datadir, regions, n_regions);
	}

	char wasm3_note[512] = "";
#ifdef BENCH_WASM3
	snprintf(wasm3_note, sizeof wasm3_note, "# wasm3: %s (built outside the repository), "
	         "<name>.c by clang %s\n", w3_version, WASM_CFLAGS);
#endif
	char ubpf_note[512] = "";
#ifdef BENCH_UBPF
	snprintf(ubpf_note, sizeof ubpf_note, "# ubpf: commit %s (built outside the repository), "
	         "<name>.c by clang %s; interpreter with its bounds checks, JIT without\n",
	         UBPF_COMMIT, UBPF_CFLAGS);
	if (*ubpfdir) {
		struct ub_region urg[16];
		char err[512];
		for (size_t i = 0; i < n_regions && i < 16; i++)
			urg[i] = (struct ub_region){ regions[i].name, regions[i].p, regions[i].len };
		if (ub_init(urg, n_regions < 16 ? n_regions : 16, err, sizeof err)) {
			fprintf(stderr, "bench_vm: uBPF: %s\n", err);
			return 1;
		}
	}
#else
	(void)ubpfdir;
#endif
	char cpu[256], env[2048];
	time_t t = time(NULL);
	struct tm tm;
	char date[64];
	cpu_model(cpu, sizeof cpu);
	strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&t, &tm));
	snprintf(env, sizeof env,
	         "# bench_vm%s%s%s, best of %d, %s\n# cpu: %s\n# native: gcc %s, %s\n"
	         "# jit: vm/jit_x86_64.c, bounds checks and fuel in place (fuel never runs out)\n%s%s%s",
	         quick ? " --quick (smoke test sizes)" : "", only ? " --kernel " : "", only ? only : "",
	         reps, date, cpu, native_compiler,
	         NATIVE_CFLAGS, luajit_note, wasm3_note, ubpf_note);

	for (size_t k = 0; k < N_KERNELS; k++) {
		const struct kernel *kn = &kernels[k];
		struct row *r = &rows[k];
		int64_t args[4];
		unsigned n_args = kn->args(&d, args), entry_args;

		kn->size(&d, r->size, sizeof r->size);
		r->native_ms = r->alt_ms = r->wasm3_ms = r->ubpf_ms[0] = r->ubpf_ms[1] = -1;
		for (int e = 0; e < ENG_COUNT; e++)
			r->eng_ms[e] = r->cc_ms[e] = -1;
		for (int m = 0; m < LUA_COUNT; m++)
			r->lua_ms[m] = -1;
		if (only && strcmp(only, kn->name) != 0)
			continue;
		/* The native result is the reference every other run is checked against. */
		r->result = kn->native(&d);
		struct vm_prog *prog = load_kernel(vm, src, kn->name);
		struct vm_prog *cc = load_cc_kernel(vm, ccdir, kn->name);
		unsigned cc_args = n_args;
		entry_args = n_args;
		int entry = prog ? vm_prog_entry(prog, kn->name, &entry_args) : 0;
		int cc_entry = cc ? vm_prog_entry(cc, kn->name, &cc_args) : 0;
#ifdef BENCH_WASM3
		struct w3 *w3 = load_wasm3(wasmdir, kn->name, regions, n_regions);
#else
		(void)wasmdir;
#endif
#ifdef BENCH_UBPF
		struct ub *ub = load_ubpf(ubpfdir, kn->name);
		int ub_off[UB_COUNT] = { !ub, !ub || ub_jit_error(ub) };
		if (ub && ub_jit_error(ub))
			fprintf(stderr, "%s: no uBPF jit column: %s\n", kn->name, ub_jit_error(ub));
#endif
		if (entry < 0 || cc_entry < 0 || entry_args != n_args || cc_args != n_args) {
			fprintf(stderr, "bench_vm: %s: needs an export '%s' taking %u argument(s)\n",
			        kn->name, kn->name, n_args);
			return 1;
		}
		/* Rounds of one run each, rather than all native runs then all VM runs: the memory
		 * bound kernels (chase) drift by 2x over seconds on a shared machine, and
		 * interleaving exposes every contender to the same drift. */
		for (int rep = 0; rep < reps; rep++) {
			keep_best(&r->native_ms, time_native(kn->name, "native", kn->native, &d,
			                                     r->result));
			if (kn->alt)
				keep_best(&r->alt_ms, time_native(kn->name, kn->alt_name, kn->alt, &d,
				                                  r->result));
			for (int e = 0; e < ENG_COUNT; e++) {
				double ms = prog ? time_vm(kn->name, e, prog, (unsigned)entry, args, n_args,
				                           r->result) : -1;
				if (ms >= 0)
					keep_best(&r->eng_ms[e], ms);
				ms = cc ? time_vm(kn->name, e, cc, (unsigned)cc_entry, args, n_args, r->result)
				        : -1;
				if (ms >= 0)
					keep_best(&r->cc_ms[e], ms);
			}
#ifdef BENCH_WASM3
			if (w3)
				keep_best(&r->wasm3_ms, time_wasm3(kn->name, w3, args, n_args, r->result));
#endif
#ifdef BENCH_UBPF
			/* A kernel uBPF refuses on its first run (fib: the interpreter's call depth)
			 * gets no figure; a later refusal is an error. */
			for (int e = 0; e < UB_COUNT; e++) {
				char err[512];
				double ms = ub_off[e] ? -1 : time_ubpf(kn->name, ub, (enum ub_engine)e, args,
				                                       n_args, r->result, err, sizeof err);
				if (ms >= 0) {
					keep_best(&r->ubpf_ms[e], ms);
				} else if (!ub_off[e] && rep == 0) {
					fprintf(stderr, "%s: no %s column: %s\n", kn->name, ubpf_name[e], err);
					ub_off[e] = 1;
				} else if (!ub_off[e]) {
					fprintf(stderr, "bench_vm: %s on %s: %s\n", kn->name, ubpf_name[e], err);
					exit(1);
				}
			}
#endif
		}
		for (int m = 0; m < LUA_COUNT; m++)
			r->lua_ms[m] = *luajit ? time_lua(kn->name, (enum lua_mode)m, luajit, src,
			                                  datadir ? datadir : tmpdir, reps, args, n_args,
			                                  r->result) : -1;
		if (prog && vm_prog_jit_error(prog))
			fprintf(stderr, "%s: no JIT column: %s\n", kn->name, vm_prog_jit_error(prog));
		vm_prog_free(cc);
		vm_prog_free(prog);
#ifdef BENCH_WASM3
		w3_free(w3);
#endif
#ifdef BENCH_UBPF
		ub_free(ub);
#endif
		fprintf(stderr, "%s: result %" PRIu64 ", native %.2f ms, interp %.2f ms, jit %.2f ms, "
		        "C (pncc) interp %.2f ms, jit %.2f ms, luajit -joff %.2f ms, luajit %.2f ms%s",
		        kn->name, r->result, r->native_ms, r->eng_ms[ENG_INTERP], r->eng_ms[ENG_JIT],
		        r->cc_ms[ENG_INTERP], r->cc_ms[ENG_JIT], r->lua_ms[LUA_INTERP], r->lua_ms[LUA_JIT],
		        have_wasm3 || have_ubpf ? "" : "\n");
		if (have_wasm3)
			fprintf(stderr, ", wasm3 %.2f ms%s", r->wasm3_ms, have_ubpf ? "" : "\n");
		if (have_ubpf)
			fprintf(stderr, ", uBPF interp %.2f ms, jit %.2f ms\n", r->ubpf_ms[0],
			        r->ubpf_ms[1]);
	}

	print_table(stdout, rows, env);

	if (!results) {
		static char def[4096];
		snprintf(def, sizeof def, "%s/results", src);
		results = def;
	}
	if (*results) {
		char csv[4096], txt[4096];
		int n1 = snprintf(csv, sizeof csv, "%s/%s", results,
		                  quick ? "vm-quick.csv.tmp" : "vm.csv");
		int n2 = snprintf(txt, sizeof txt, "%s/%s", results,
		                  quick ? "vm-quick.txt.tmp" : "vm.txt");
		if (n1 >= (int)sizeof csv || n2 >= (int)sizeof txt) {
			fprintf(stderr, "bench_vm: results path too long\n");
			return 1;
		}
		if (write_csv(csv, rows) || write_text(txt, rows, env)) {
			fprintf(stderr, "bench_vm: writing %s: %s\n", results, strerror(errno));
			return 1;
		}
		printf("results: %s, %s\n", csv, txt);
	}

	if (*luajit && !datadir)
		remove_regions(tmpdir, regions, n_regions);
	vm_free(vm);
#ifdef BENCH_UBPF
	ub_fini();
#endif
	free(d.bits);
	free(d.bnodes);
	free(d.bq);
	free(d.recs);
	free(d.text);
	free(d.nodes);
	free(d.varints);
	free(d.htab);
	free(d.hkeys);
	free(d.hq);
	return 0;
}
