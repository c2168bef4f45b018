/* fuzz_asm.c: libFuzzer target for the assembler and disassembler.
 *
 * Input: assembly text.  If it assembles, the disassembly must assemble back to the very same
 * bytes (the round trip asm.h promises; the process aborts otherwise), and the segment then
 * goes through vm_load and runs every export under small fuel, as in fuzz_segment.c.
 * Seeds are in tests/fuzz/seeds/fuzz_asm.
 */
#include "asm.h"
#include "fuzz_common.h"

static void dump(const char *what, const uint8_t *p, size_t len)
{
	fprintf(stderr, "%s (%zu bytes):", what, len);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, "%s%02x", i % 32 ? " " : "\n  ", p[i]);
	fputc('\n', stderr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *seg = NULL, *seg2 = NULL;
	size_t seg_len = 0, seg2_len = 0;
	char *diags = NULL, *diags2 = NULL, *text = NULL, err[256];
	struct vm_prog *prog = NULL;

	int n_err = asm_assemble((const char *)data, size, "fuzz.pna", &seg, &seg_len, &diags);
	if (n_err < 0 || (n_err > 0) != (seg == NULL) || (n_err > 0 && !diags)) {
		fprintf(stderr, "asm_assemble: %d errors, segment %p, diagnostics %p\n", n_err,
		        (void *)seg, (void *)diags);
		abort();
	}
	free(diags);
	if (n_err)
		return 0;

	if (asm_disassemble(seg, seg_len, &text, err, sizeof err)) {
		fprintf(stderr, "asm_disassemble failed on assembler output: %s\n", err);
		dump("segment", seg, seg_len);
		abort();
	}
	n_err = asm_assemble(text, strlen(text), "fuzz.pna", &seg2, &seg2_len, &diags2);
	if (n_err || seg2_len != seg_len || memcmp(seg, seg2, seg_len) != 0) {
		fprintf(stderr, "round trip differs: %d errors\n%s\n-- disassembly:\n%s\n", n_err,
		        diags2 ? diags2 : "", text);
		dump("first assembly", seg, seg_len);
		if (seg2)
			dump("second assembly", seg2, seg2_len);
		abort();
	}
	free(diags2);
	free(seg2);
	free(text);

	fuzz_reset_regions();
	if (vm_load(fuzz_vm(), seg, seg_len, &prog, err, sizeof err) == 0) {
		fuzz_run_exports(prog);
		vm_prog_free(prog);
	}
	free(seg);
	return 0;
}
