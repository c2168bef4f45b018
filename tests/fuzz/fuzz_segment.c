/* fuzz_segment.c: libFuzzer target for the segment loader, linker, verifier and interpreter.
 *
 * Input: segment bytes, untrusted, as a client would send them.  If vm_load accepts them,
 * every export runs with zero arguments under small fuel and output limits.  Nothing may
 * crash, read or write outside the bound regions (ASan), or report a nonsensical result.
 * Build and run with `make fuzz`; seeds are in tests/fuzz/seeds/fuzz_segment.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm *vm = fuzz_vm();
	struct vm_prog *prog = NULL;
	char err[256];

	fuzz_reset_regions();
	int rc = vm_load(vm, data, size, &prog, err, sizeof err);
	if (rc == 0) {
		fuzz_run_exports(prog);
		vm_prog_free(prog);
	} else if (rc != -VM_EMALFORMED && rc != -VM_ELINK && rc != -VM_EVERIFY &&
	           rc != -VM_ETOOBIG) {
		fprintf(stderr, "vm_load: unexpected %s: %s\n", vm_strerror(rc), err);
		abort();
	} else if (!memchr(err, 0, sizeof err) || !err[0]) {
		fprintf(stderr, "vm_load: %s without a message\n", vm_strerror(rc));
		abort();
	}
	return 0;
}
