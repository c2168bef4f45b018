/* wasm3_run.h: bench_vm's optional wasm3 column (built with `make WASM3=dir`, see Makefile).
 *
 * A kernel's bench/vm/<name>.c compiled to wasm32 (wasm/activerdma/ar.h) is loaded into a wasm3
 * runtime of its own, with the regions it lists copied into its linear memory, and called like
 * the VM's entry.  wasm3 is not part of the repository: this file and wasm3_run.c only build
 * when its sources are given.
 */
#ifndef BENCH_WASM3_RUN_H
#define BENCH_WASM3_RUN_H

#include <stddef.h>
#include <stdint.h>

struct w3;                       /* one kernel's module, loaded in its own runtime */

struct w3_region {
	const char *name;
	const void *p;
	size_t len;
};

/* Load the module at path and find its export fn; every region the module names (ar_regions())
 * must be among the n given, and is copied into the module's memory.  NULL on error, with the
 * cause in err. Freed by w3_free. */
struct w3 *w3_load(const char *path, const char *fn, const struct w3_region *rg, size_t n,
                   char *err, size_t err_len);
/* Call fn with n_args i64 arguments; 0 and its i64 result in *res, or -1 (a trap) with the
 * cause in err. */
int w3_call(struct w3 *w, const int64_t *argv, unsigned n_args, uint64_t *res, char *err,
            size_t err_len);
void w3_free(struct w3 *w);

extern const char w3_version[];  /* "wasm3 M.m.r" */

#endif
