/* ubpf_run.c: bench_vm's optional uBPF column: load a kernel compiled by clang -target bpf into
 * uBPF (https://github.com/iovisor/ubpf, built outside the repository) and run it with uBPF's
 * interpreter and its x86-64 JIT on one block holding every region.  Contract in ubpf_run.h.
 *
 * The block: in its first page the context of the ar.h under ubpf/ (arguments, region
 * addresses and lengths), then each region, page-aligned.  Each kernel's ar_ctx_ is relocated to the
 * block's start; ar_copy, ar_cmp and ar_findb are helpers 1-3, which check their ranges
 * against the block as uBPF's interpreter checks loads and stores (its JIT checks nothing).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ubpf.h"
#include "harness.h"
#include "ubpf_run.h"

#define UB_CTX_AREA    4096u
#define UB_PAGE        4096u
#define UB_MAX_REGIONS 16            /* AR_MAX_REGIONS_ */
#define UB_MAX_ARGS    4             /* AR_MAX_ARGS_ */
#define UB_H_COPY      1             /* AR_H_*_ */
#define UB_H_CMP       2
#define UB_H_FINDB     3

/* ar.h's struct ar_ubpf_ctx_, as the BPF code sees it. */
struct ub_ctx {
	uint64_t args[UB_MAX_ARGS];
	uint64_t base[UB_MAX_REGIONS];
	uint64_t len[UB_MAX_REGIONS];
};

/* ar.h's AR_RG_*: region i of this list is region 3 + i. */
static const char *const ub_region_names[] = {
	"data", "nodes", "varints", "htab", "hkeys", "hq", "bits", "bnodes", "bq", "recs", "sbuf",
};
#define UB_N_NAMES (sizeof ub_region_names / sizeof ub_region_names[0])
_Static_assert(3 + UB_N_NAMES <= UB_MAX_REGIONS, "too many regions");

struct ub {
	struct ubpf_vm *vm;
	ubpf_jit_fn jit;
	char *jit_err;               /* from ubpf_compile, freed with free() */
	int reloc_bad;               /* a data relocation other than ar_ctx_ */
};

/* The block; one bench_vm process runs one kernel at a time, so the helpers find it here. */
static uint8_t *blk;
static size_t blk_len;
static int helper_fault;
/* The last message uBPF printed through its error_printf. */
static char ub_msg[256];

static int in_block(uint64_t p, uint64_t n)
{
	uint64_t b = (uint64_t)(uintptr_t)blk;

	return p >= b && n <= blk_len && p - b <= blk_len - n;
}

static uint64_t h_copy(uint64_t dst, uint64_t src, uint64_t n, uint64_t p3, uint64_t p4)
{
	if (!in_block(dst, n) || !in_block(src, n)) {
		helper_fault = 1;
		return 0;
	}
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return 0;
}

static uint64_t h_cmp(uint64_t a, uint64_t b, uint64_t n, uint64_t p3, uint64_t p4)
{
	if (!in_block(a, n) || !in_block(b, n)) {
		helper_fault = 1;
		return 0;
	}
	int c = memcmp((const void *)(uintptr_t)a, (const void *)(uintptr_t)b, n);
	return (uint64_t)(int64_t)(c < 0 ? -1 : c > 0);
}

static uint64_t h_findb(uint64_t p, uint64_t n, uint64_t byte, uint64_t p3, uint64_t p4)
{
	if (!in_block(p, n)) {
		helper_fault = 1;
		return (uint64_t)-1;
	}
	const uint8_t *q = memchr((const void *)(uintptr_t)p, (int)(byte & 0xff), n);
	return q ? (uint64_t)(q - (const uint8_t *)(uintptr_t)p) : (uint64_t)-1;
}

static int capture_error(FILE *stream, const char *fmt, ...)
{
	va_list ap;
	int n;

	(void)stream;
	va_start(ap, fmt);
	n = vsnprintf(ub_msg, sizeof ub_msg, fmt, ap);
	va_end(ap);
	ub_msg[strcspn(ub_msg, "\n")] = 0;
	return n;
}

/* ar_ctx_, the one global of a kernel, is the block's first bytes. */
static uint64_t relocate(void *user, const uint8_t *data, uint64_t data_size, const char *sym,
                         uint64_t sym_off, uint64_t sym_size)
{
	struct ub *u = user;

	if (strcmp(sym, "ar_ctx_") != 0 || sym_off != 0 || sym_size != sizeof(struct ub_ctx)) {
		u->reloc_bad = 1;
		return 0;
	}
	return (uint64_t)(uintptr_t)blk;
}

int ub_init(const struct ub_region *rg, size_t n, char *err, size_t err_len)
{
	size_t len = UB_CTX_AREA, at = UB_CTX_AREA;
	int slot[UB_MAX_REGIONS];

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < UB_N_NAMES && strcmp(ub_region_names[k], rg[i].name) != 0)
			k++;
		if (k == UB_N_NAMES) {
			snprintf(err, err_len, "region '%s' unknown to uBPF's ar.h", rg[i].name);
			return -1;
		}
		slot[i] = 3 + (int)k;
		len += (rg[i].len + UB_PAGE - 1) / UB_PAGE * UB_PAGE;
	}
	blk = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (blk == MAP_FAILED) {
		blk = NULL;
		snprintf(err, err_len, "mmap %zu bytes for uBPF's block failed", len);
		return -1;
	}
	blk_len = len;
	struct ub_ctx *c = (struct ub_ctx *)blk;
	for (size_t i = 0; i < n; i++) {
		memcpy(blk + at, rg[i].p, rg[i].len);
		c->base[slot[i]] = (uint64_t)(uintptr_t)(blk + at);
		c->len[slot[i]] = rg[i].len;
		at += (rg[i].len + UB_PAGE - 1) / UB_PAGE * UB_PAGE;
	}
	return 0;
}

void ub_fini(void)
{
	if (blk)
		munmap(blk, blk_len);
	blk = NULL;
	blk_len = 0;
}

void ub_free(struct ub *u)
{
	if (!u)
		return;
	if (u->vm)
		ubpf_destroy(u->vm);
	free(u->jit_err);
	free(u);
}

struct ub *ub_load(const char *path, char *err, size_t err_len)
{
	struct ub *u = calloc(1, sizeof *u);
	uint8_t *elf = NULL;
	size_t len = 0;
	char *msg = NULL;

	if (!blk) {
		snprintf(err, err_len, "%s: ub_init first", path);
		goto fail;
	}
	if (!u || !(elf = slurp(path, &len))) {
		snprintf(err, err_len, "%s: cannot read", path);
		goto fail;
	}
	if (!(u->vm = ubpf_create())) {
		snprintf(err, err_len, "%s: ubpf_create failed", path);
		goto fail;
	}
	ubpf_set_error_print(u->vm, capture_error);
	if (ubpf_register(u->vm, UB_H_COPY, "ar_copy", h_copy) ||
	    ubpf_register(u->vm, UB_H_CMP, "ar_cmp", h_cmp) ||
	    ubpf_register(u->vm, UB_H_FINDB, "ar_findb", h_findb) ||
	    ubpf_register_data_relocation(u->vm, u, relocate)) {
		snprintf(err, err_len, "%s: ubpf_register failed", path);
		goto fail;
	}
	if (ubpf_load_elf_ex(u->vm, elf, len, "ar_entry_", &msg) < 0) {
		snprintf(err, err_len, "%s: ubpf_load_elf: %s", path, msg ? msg : "?");
		goto fail;
	}
	if (u->reloc_bad) {
		snprintf(err, err_len, "%s: a global other than ar_ctx_", path);
		goto fail;
	}
	u->jit = ubpf_compile(u->vm, &u->jit_err);
	if (!u->jit && !u->jit_err)
		u->jit_err = strdup("ubpf_compile failed");
	free(msg);
	free(elf);
	return u;

fail:
	free(msg);
	free(elf);
	ub_free(u);
	return NULL;
}

const char *ub_jit_error(const struct ub *u)
{
	return u->jit ? NULL : u->jit_err;
}

int ub_call(struct ub *u, enum ub_engine e, const int64_t *argv, unsigned n_args, uint64_t *res,
            char *err, size_t err_len)
{
	struct ub_ctx *c = (struct ub_ctx *)blk;

	if (n_args > UB_MAX_ARGS) {
		snprintf(err, err_len, "%u arguments, at most %u", n_args, UB_MAX_ARGS);
		return -1;
	}
	for (unsigned i = 0; i < n_args; i++)
		c->args[i] = (uint64_t)argv[i];
	helper_fault = 0;
	if (e == UB_JIT) {
		if (!u->jit) {
			snprintf(err, err_len, "not compiled: %s", u->jit_err);
			return -1;
		}
		*res = u->jit(blk, blk_len);
	} else {
		ub_msg[0] = 0;
		if (ubpf_exec(u->vm, blk, blk_len, res) < 0) {
			snprintf(err, err_len, "ubpf_exec: %s", *ub_msg ? ub_msg : "failed");
			return -1;
		}
	}
	if (helper_fault) {
		snprintf(err, err_len, "a helper's range is outside the block");
		return -1;
	}
	return 0;
}
