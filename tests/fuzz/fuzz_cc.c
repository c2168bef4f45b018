/* fuzz_cc.c: libFuzzer target for pncc (cc/): arbitrary bytes as a BPF object from clang.
 *
 * cc_compile must never crash, hang or grow without bound; it either refuses the bytes with
 * a message ("...: error: ...") or returns a segment, which must then decode and pass our
 * verifier (isa_verify).  Accepted segments that link against the fuzz vm also run.  Build and
 * run with `make fuzz`; seeds (clang's objects of the C examples and bench kernels with their
 * DWARF stripped) are in tests/fuzz/seeds/fuzz_cc.
 */
#include "cc.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *seg = NULL;
	size_t seg_len = 0;
	char *diags = NULL, *listing = NULL, err[256];
	/* every fourth input also makes a listing of the function most seeds have first */
	struct cc_opts opts = { .explain = size % 4 == 0 ? "lookup" : NULL };

	int n = cc_compile(data, size, "fuzz.o", &opts, &seg, &seg_len, &diags, &listing);
	if (n == 0) {
		struct isa_seg *s;
		if (isa_seg_decode(seg, seg_len, &s, err, sizeof err) != 0 ||
		    isa_verify(s, err, sizeof err) != 0) {
			fprintf(stderr, "pncc accepted an object whose segment fails: %s\n", err);
			abort();
		}
		isa_seg_free(s);
		struct vm_prog *prog;
		fuzz_reset_regions();
		if (vm_load(fuzz_vm(), seg, seg_len, &prog, err, sizeof err) == 0) {
			fuzz_run_exports(prog);
			vm_prog_free(prog);
		}
	} else if (!diags || !strstr(diags, "error: ")) {
		fprintf(stderr, "pncc refused an object without a message\n");
		abort();
	}
	free(seg);
	free(diags);
	free(listing);
	return 0;
}
