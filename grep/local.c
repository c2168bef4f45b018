/* local.c: running a compiled grep segment here, over bytes in memory: pngrep's files and
 * standard input, and the stripes that arf grep scans on the client (a cluster file's
 * windows).  The server runs the same segment through arfd; this is the in-process twin. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include "grep.h"
#include "vm.h"

int grep_run_local(struct grep *g, int engine, const uint8_t *data, size_t len,
                   struct grep_out *out, int64_t *value, size_t *out_len, char *err,
                   size_t errlen)
{
	static const uint8_t empty[1];
	size_t seg_len;
	const uint8_t *seg = grep_segment(g, &seg_len);
	struct vm *vm = vm_new();
	struct vm_prog *p = NULL;
	err[0] = '\0';
	if (!vm || vm_set_engine(vm, engine) != 0 ||
	    vm_bind_region(vm, "data", (void *)(len ? data : empty), len, ISA_ACC_RO) != 0 ||
	    vm_load(vm, seg, seg_len, &p, err, errlen) != 0) {
		if (!vm || !err[0])
			snprintf(err, errlen, "memory exhausted");
		vm_free(vm);
		return -1;
	}
	uint64_t cap = GREP_OUT_CAP(len);
	if (cap > out->cap) {
		if (out->buf)
			munmap(out->buf, out->cap);
		/* reserved, not committed: only what the run writes is touched */
		out->buf = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (out->buf == MAP_FAILED) {
			out->buf = NULL;
			out->cap = 0;
			vm_prog_free(p);
			vm_free(vm);
			return -2;
		}
		out->cap = cap;
	}
	struct vm_run_opts ro = { .out = out->buf, .out_cap = cap, .fuel = 2 * GREP_FUEL(len) };
	struct vm_result res;
	unsigned n_args;
	int entry = vm_prog_entry(p, "grep", &n_args);
	int rc = entry < 0 ? entry : vm_run(p, (unsigned)entry, NULL, 0, &ro, &res);
	if (rc == -VM_ETRAP) {
		vm_trap_str(p, &res.trap, err, errlen);
	} else if (rc != 0) {
		snprintf(err, errlen, "%s", vm_strerror(rc));
	} else {
		*value = res.value;
		*out_len = res.out_len;
	}
	vm_prog_free(p);
	vm_free(vm);
	return rc != 0 ? -1 : 0;
}

void grep_out_free(struct grep_out *out)
{
	if (out->buf)
		munmap(out->buf, out->cap);
	out->buf = NULL;
	out->cap = 0;
}
