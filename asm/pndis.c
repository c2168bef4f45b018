/* pndis.c: command-line disassembler, .pno code segment -> .pna text on stdout.
 *
 *     pndis file.pno          assembly that pnasm turns back into the same bytes
 *     pndis --id file.pno     the segment id (SHA-256 of the bytes, hex)
 *     pndis --jit [--bin OUT] file.pno [FUNC]
 *                             the x86-64 machine code the JIT makes of each function (or of
 *                             FUNC), as hex bytes under one marker per translated instruction
 *                             with its bytecode pc; --bin also writes the raw bytes to OUT for
 *                             objdump -D -b binary -mi386:x86-64 OUT
 *
 * A thin main around asm_disassemble (asm/dis.c) and, for --jit, vm_load and
 * vm_prog_jit_listing (vm/): the segment's imports are bound to empty regions and to hooks
 * that are never called, which is all the JIT needs to compile it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "vm.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: pndis [--id] file.pno\n"
	           "       pndis --jit [--bin OUT] file.pno [FUNC]\n"
	           "  Print a code segment as assembly that pnasm re-assembles to the same bytes.\n"
	           "  --id      print the segment id (SHA-256 of its bytes, hex) instead\n"
	           "  --jit     print the x86-64 code the JIT makes of each function (or FUNC)\n"
	           "  --bin OUT with --jit: also write the raw machine code to OUT (objdump -D -b\n"
	           "            binary -mi386:x86-64 OUT disassembles it)\n"
	           "  -         read the segment from stdin\n"
	           "  --help    show this help\n");
}

static void never_called(void) { abort(); }

/* Load seg with stand-ins for its imports and print the JIT's code of function `func` (all
 * when NULL); with bin, also write the bytes there.  Returns 0, or 1 after a message. */
static int show_jit(const uint8_t *seg, size_t len, const char *func, const char *bin)
{
	char err[512];
	struct isa_seg *s;
	if (isa_seg_decode(seg, len, &s, err, sizeof err) != 0) {
		fprintf(stderr, "pndis: %s\n", err);
		return 1;
	}
	struct vm *vm = vm_new();
	struct vm_prog *prog = NULL;
	FILE *out = NULL;
	int rc = 1, found = 0;
	if (!vm)
		goto done;
	vm_set_engine(vm, VM_ENGINE_JIT);
	for (uint32_t i = 0; i < s->n_regions; i++)
		vm_bind_region(vm, s->regions[i].name, NULL, 0, s->regions[i].access);
	for (uint32_t i = 0; i < s->n_hooks; i++)
		vm_bind_hook(vm, s->hooks[i].name, (void *)never_called, s->hooks[i].sig, NULL);
	if (vm_load(vm, seg, len, &prog, err, sizeof err) != 0) {
		fprintf(stderr, "pndis: %s\n", err);
		goto done;
	}
	if (bin && !(out = fopen(bin, "wb"))) {
		fprintf(stderr, "pndis: %s: %s\n", bin, strerror(errno));
		goto done;
	}
	size_t base = 0;                           /* offset of this function in the .bin */
	for (uint32_t fi = 0; fi < s->n_funcs; fi++) {
		if (func && strcmp(func, s->funcs[fi].name) != 0)
			continue;
		found = 1;
		struct vm_jit_listing l;
		int e = vm_prog_jit_listing(prog, fi, &l);
		if (e != 0) {
			fprintf(stderr, "pndis: %s: %s\n", s->funcs[fi].name, vm_strerror(e));
			goto done;
		}
		printf("; function %s (%u): %zu bytes of x86-64%s\n", s->funcs[fi].name, fi, l.len,
		       out ? ", offsets in the .bin file" : "");
		/* sections: the prologue, one per translated instruction, the trap stubs */
		for (uint32_t m = 0; m <= l.n_marks + 1; m++) {
			size_t from = m == 0 ? 0 : m <= l.n_marks ? l.marks[m - 1].off : l.body_len;
			size_t to = m < l.n_marks ? l.marks[m].off : m == l.n_marks ? l.body_len : l.len;
			if (m == 0)
				printf(";   prologue\n");
			else if (m <= l.n_marks)
				printf(";   x%u %s (pc %u)\n", m - 1, l.marks[m - 1].name, l.marks[m - 1].pc);
			else if (to > from)
				printf(";   trap stubs\n");
			for (size_t i = from; i < to; i += 16) {
				printf("%8zx:", base + i);
				for (size_t k = i; k < to && k < i + 16; k++)
					printf(" %02x", l.code[k]);
				printf("\n");
			}
		}
		if (out && fwrite(l.code, 1, l.len, out) != l.len) {
			fprintf(stderr, "pndis: %s: write error\n", bin);
			free(l.marks);
			goto done;
		}
		base += out ? l.len : 0;
		free(l.marks);
	}
	if (!found) {
		fprintf(stderr, "pndis: no function named '%s'\n", func);
		goto done;
	}
	if (out) {
		if (fclose(out) != 0) {
			out = NULL;
			fprintf(stderr, "pndis: %s: %s\n", bin, strerror(errno));
			goto done;
		}
		out = NULL;
		printf("; objdump -D -b binary -mi386:x86-64 %s\n", bin);
	}
	rc = 0;
done:
	if (out)
		fclose(out);
	vm_prog_free(prog);
	vm_free(vm);
	isa_seg_free(s);
	return rc;
}

int main(int argc, char **argv)
{
	const char *in = NULL, *func = NULL, *bin = NULL;
	int want_id = 0, want_jit = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--id") == 0) {
			want_id = 1;
		} else if (strcmp(argv[i], "--jit") == 0) {
			want_jit = 1;
		} else if (strcmp(argv[i], "--bin") == 0 && i + 1 < argc) {
			bin = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "pndis: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!in) {
			in = argv[i];
		} else if (want_jit && !func) {
			func = argv[i];
		} else {
			fprintf(stderr, "pndis: more than one input file\n");
			return 2;
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	int from_stdin = strcmp(in, "-") == 0;
	FILE *f = from_stdin ? stdin : fopen(in, "rb");
	if (!f) {
		fprintf(stderr, "pndis: %s: %s\n", in, strerror(errno));
		return 1;
	}
	uint8_t *seg;
	size_t len;
	int r = isa_read_all(f, (void **)&seg, &len);
	int saverr = errno;
	if (!from_stdin)
		fclose(f);
	if (r != 0) {
		fprintf(stderr, "pndis: %s: %s\n", in, strerror(saverr));
		return 1;
	}
	int rc = 1;
	char err[256], *text = NULL;
	if (want_jit) {
		rc = show_jit(seg, len, func, bin);
	} else if (want_id) {
		uint8_t id[ISA_ID_LEN];
		char hex[2 * ISA_ID_LEN + 1];
		isa_seg_id(seg, len, id);
		isa_id_hex(id, hex);
		printf("%s\n", hex);
		rc = 0;
	} else if (asm_disassemble(seg, len, &text, err, sizeof err) != 0) {
		fprintf(stderr, "pndis: %s: %s\n", in, err);
	} else {
		fputs(text, stdout);
		rc = 0;
	}
	if (fflush(stdout) != 0)
		rc = 1;
	free(text);
	free(seg);
	return rc;
}
