/* pncc.c: BPF object from clang -> code segment.
 *
 *     clang -O2 -g -target bpf -mcpu=v3 -c prog.c -o prog.o
 *     pncc [-o out.pno] [--explain FUNC] prog.o
 *
 * A thin main around cc_compile (cc/translate.c): diagnostics go to stderr, the --explain
 * listing to stdout, exit 1 on error.  docs/cc.md is the guide.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "cc.h"
#include "isa.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: pncc [-o out.pno] [--explain FUNC] file.o\n"
	           "  Translate a BPF object (clang -O2 -g -target bpf -c file.c) into a code segment.\n"
	           "  -o FILE         output file (default: the input name with .pno; \"-\": stdout)\n"
	           "  --explain FUNC  print FUNC's C lines, BPF instructions and our assembly side\n"
	           "                  by side (the segment is written only with -o)\n"
	           "  --help          show this help\n");
}

int main(int argc, char **argv)
{
	const char *in = NULL, *outname = NULL;
	struct cc_opts opts = { 0 };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			outname = argv[++i];
		} else if (strcmp(argv[i], "--explain") == 0 && i + 1 < argc) {
			opts.explain = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "pncc: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!in) {
			in = argv[i];
		} else {
			fprintf(stderr, "pncc: more than one input file\n");
			return 2;
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}

	int rc = 1;
	void *obj = NULL;
	char *diags = NULL, *listing = NULL;
	uint8_t *seg = NULL;
	size_t obj_len, seg_len;
	if (isa_read_file(in, &obj, &obj_len) != 0) {
		fprintf(stderr, "pncc: %s: %s\n", in, strerror(errno));
		goto out;
	}
	int n_err = cc_compile(obj, obj_len, in, &opts, &seg, &seg_len, &diags, &listing);
	if (listing)
		fputs(listing, stdout);
	if (diags)
		fputs(diags, stderr);
	if (n_err) {
		fprintf(stderr, "pncc: %d error%s\n", n_err, n_err == 1 ? "" : "s");
		goto out;
	}
	if (opts.explain && !outname) {
		rc = 0;
		goto out;
	}
	char err[512];
	if (asm_write_segment(in, outname, seg, seg_len, err, sizeof err) != 0) {
		fprintf(stderr, "pncc: %s\n", err);
		goto out;
	}
	rc = 0;
out:
	free(seg);
	free(diags);
	free(listing);
	free(obj);
	return rc;
}
