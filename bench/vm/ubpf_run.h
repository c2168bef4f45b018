/* ubpf_run.h: bench_vm's optional uBPF column (built with `make UBPF=dir`, see Makefile).
 *
 * A kernel's bench/vm/<name>.c compiled by clang -target bpf against ubpf/activerdma/ar.h is
 * loaded into a uBPF VM of its own and run by uBPF's interpreter and by its x86-64 JIT, on one
 * block of memory shared by all kernels that holds every region.  uBPF is not part of the
 * repository: this file and ubpf_run.c only build when its sources are given.
 */
#ifndef BENCH_UBPF_RUN_H
#define BENCH_UBPF_RUN_H

#include <stddef.h>
#include <stdint.h>

struct ub;                       /* one kernel, loaded in a uBPF VM of its own */

struct ub_region {
	const char *name;
	const void *p;
	size_t len;
};

enum ub_engine { UB_INTERP, UB_JIT, UB_COUNT };

/* Copy the n regions into the block every kernel runs on, each at the place ar.h's AR_RG_*
 * numbers it; a region ar.h does not know is an error.  0, or -1 with the cause in err. */
int ub_init(const struct ub_region *rg, size_t n, char *err, size_t err_len);
/* Load the ELF object at path (entry ar_entry_) and compile it with uBPF's JIT.  NULL on
 * error, with the cause in err; a JIT that fails is not an error (ub_jit_error).  Freed by
 * ub_free. */
struct ub *ub_load(const char *path, char *err, size_t err_len);
/* Why the JIT did not compile the kernel, or NULL. */
const char *ub_jit_error(const struct ub *u);
/* Run the kernel once on engine e with n_args (at most 4) arguments: 0 and its result in *res,
 * or -1 (uBPF refused to run it, or a helper saw an access outside the block) with the cause
 * in err. */
int ub_call(struct ub *u, enum ub_engine e, const int64_t *argv, unsigned n_args, uint64_t *res,
            char *err, size_t err_len);
void ub_free(struct ub *u);
/* Release the block. */
void ub_fini(void);

#endif
