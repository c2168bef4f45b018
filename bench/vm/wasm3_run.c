/* wasm3_run.c: bench_vm's optional wasm3 column: load a kernel compiled to wasm32 into wasm3
 * (https://github.com/wasm3/wasm3, built outside the repository), copy the regions it imports
 * into its linear memory and call it.  Contract in wasm3_run.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasm3.h"
#include "harness.h"
#include "wasm3_run.h"

#define W3_STACK_BYTES (1u << 20)        /* wasm3's value stack: fib(32) needs far less */
#define W3_PAGE        65536u

struct w3 {
	IM3Environment env;
	IM3Runtime rt;
	IM3Function fn;
	unsigned n_params;
	uint8_t *bytes;              /* the module's bytes: wasm3 keeps pointers into them */
};

const char w3_version[] = "wasm3 " M3_VERSION;

void w3_free(struct w3 *w)
{
	if (!w)
		return;
	if (w->rt)
		m3_FreeRuntime(w->rt);   /* frees the loaded module too */
	if (w->env)
		m3_FreeEnvironment(w->env);
	free(w->bytes);
	free(w);
}

/* Call a helper export of ar.h taking and returning i32. */
static M3Result call_i32(struct w3 *w, const char *name, int32_t *ret, unsigned n,
                         uint32_t a, uint32_t b, uint64_t c)
{
	IM3Function f;
	M3Result r = m3_FindFunction(&f, w->rt, name);

	if (r)
		return r;
	if (n == 1)
		r = m3_CallV(f, a);
	else if (n == 3)
		r = m3_CallV(f, a, b, c);
	else
		r = m3_CallV(f);
	if (!r && ret)
		r = m3_GetResultsV(f, ret);
	return r;
}

struct w3 *w3_load(const char *path, const char *fn, const struct w3_region *rg, size_t n,
                   char *err, size_t err_len)
{
	struct w3 *w = calloc(1, sizeof *w);
	IM3Module mod = NULL;
	M3Result r = NULL;
	size_t len = 0;
	const char *what = "";

	if (!w || !(w->bytes = slurp(path, &len))) {
		snprintf(err, err_len, "%s: cannot read", path);
		goto fail;
	}
	if (!(w->env = m3_NewEnvironment()) || !(w->rt = m3_NewRuntime(w->env, W3_STACK_BYTES,
	                                                                  NULL))) {
		snprintf(err, err_len, "%s: wasm3: out of memory", path);
		goto fail;
	}
	what = "m3_ParseModule";
	if ((r = m3_ParseModule(w->env, &mod, w->bytes, (uint32_t)len)))
		goto fail_m3;
	what = "m3_LoadModule";
	if ((r = m3_LoadModule(w->rt, mod))) {
		m3_FreeModule(mod);
		goto fail_m3;
	}
	what = fn;
	if ((r = m3_FindFunction(&w->fn, w->rt, fn)))
		goto fail_m3;
	w->n_params = m3_GetArgCount(w->fn);

	/* The regions it names: ar_regions() returns a list of NUL-terminated names ending
	 * with an empty one; a kernel that imports none has no such export. */
	IM3Function lf;
	int32_t list = 0;
	if (m3_FindFunction(&lf, w->rt, "ar_regions") == NULL) {
		what = "ar_regions";
		if ((r = call_i32(w, "ar_regions", &list, 0, 0, 0, 0)))
			goto fail_m3;
	}
	const size_t max_names = 13;
	size_t idx[13], n_names = 0, pages = 0;
	uint32_t mem_len;
	uint8_t *mem = m3_GetMemory(w->rt, &mem_len, 0);
	for (uint32_t p = (uint32_t)list; list && mem && p < mem_len && mem[p]; ) {
		const char *name = (const char *)mem + p;
		size_t k = 0;
		while (k < n && strcmp(rg[k].name, name) != 0)
			k++;
		if (k == n || n_names == max_names) {
			snprintf(err, err_len, "%s: region '%s' not bound", path, name);
			goto fail;
		}
		idx[n_names++] = k;
		pages += (rg[k].len + W3_PAGE - 1) / W3_PAGE;
		p += (uint32_t)strlen(name) + 1;
	}
	if (n_names) {
		int32_t old;
		what = "ar_grow_";
		if ((r = call_i32(w, "ar_grow_", &old, 1, (uint32_t)pages, 0, 0)))
			goto fail_m3;
		if (old < 0) {
			snprintf(err, err_len, "%s: cannot grow memory by %zu pages", path, pages);
			goto fail;
		}
		mem = m3_GetMemory(w->rt, &mem_len, 0);
		uint64_t at = (uint64_t)old * W3_PAGE;
		for (size_t i = 0; i < n_names; i++) {
			const struct w3_region *g = &rg[idx[i]];
			if (!mem || at + g->len > mem_len) {
				snprintf(err, err_len, "%s: memory too small for '%s'", path, g->name);
				goto fail;
			}
			memcpy(mem + at, g->p, g->len);
			what = "ar_bind_";
			if ((r = call_i32(w, "ar_bind_", NULL, 3, (uint32_t)(3 + i), (uint32_t)at,
			                  g->len)))
				goto fail_m3;
			at += (g->len + W3_PAGE - 1) / W3_PAGE * W3_PAGE;
		}
	}
	return w;

fail_m3:
	snprintf(err, err_len, "%s: %s: %s", path, what, r);
fail:
	w3_free(w);
	return NULL;
}

int w3_call(struct w3 *w, const int64_t *argv, unsigned n_args, uint64_t *res, char *err,
            size_t err_len)
{
	const void *ptrs[8];
	M3Result r;

	if (n_args != w->n_params || n_args > 8) {
		snprintf(err, err_len, "takes %u argument(s), not %u", w->n_params, n_args);
		return -1;
	}
	for (unsigned i = 0; i < n_args; i++)
		ptrs[i] = &argv[i];
	if ((r = m3_Call(w->fn, n_args, ptrs)) || (r = m3_GetResultsV(w->fn, res))) {
		M3ErrorInfo info;
		m3_GetErrorInfo(w->rt, &info);
		snprintf(err, err_len, "%s%s%s", r, info.message ? ": " : "",
		         info.message ? info.message : "");
		return -1;
	}
	return 0;
}
