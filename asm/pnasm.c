/* pnasm.c: command-line assembler, .pna text -> .pno code segment.
 *
 *     pnasm [-o out.pno] file.pna      ("-" reads stdin, -o - writes stdout; default
 *                                      output: file.pno)
 *
 * A thin main around asm_assemble (asm/parse.c): diagnostics go to stderr, exit 1 on error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: pnasm [-o out.pno] file.pna\n"
	           "  Assemble a .pna source file into a code segment.\n"
	           "  -o FILE   output file (default: the input name with .pno; required for stdin;\n"
	           "            \"-\" writes to stdout)\n"
	           "  -         read the source from stdin\n"
	           "  --help    show this help\n");
}

/* file.pna -> file.pno; other names get .pno appended. */
int main(int argc, char **argv)
{
	const char *in = NULL, *outname = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			outname = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "pnasm: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!in) {
			in = argv[i];
		} else {
			fprintf(stderr, "pnasm: more than one input file\n");
			return 2;
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	int from_stdin = strcmp(in, "-") == 0;
	if (from_stdin && !outname) {
		fprintf(stderr, "pnasm: reading stdin needs -o FILE\n");
		return 2;
	}

	int rc = 1;
	char *src = NULL, *diags = NULL;
	uint8_t *seg = NULL;
	size_t src_len, seg_len;
	FILE *f = from_stdin ? stdin : fopen(in, "rb");
	if (!f) {
		fprintf(stderr, "pnasm: %s: %s\n", in, strerror(errno));
		goto out;
	}
	int r = isa_read_all(f, (void **)&src, &src_len);
	int saverr = errno;
	if (!from_stdin)
		fclose(f);
	if (r != 0) {
		fprintf(stderr, "pnasm: %s: %s\n", in, strerror(saverr));
		goto out;
	}
	int n_err = asm_assemble(src, src_len, from_stdin ? "<stdin>" : in, &seg, &seg_len, &diags);
	if (diags)
		fputs(diags, stderr);
	if (n_err)
		goto out;
	char err[512];
	if (asm_write_segment(in, outname, seg, seg_len, err, sizeof err) != 0) {
		fprintf(stderr, "pnasm: %s\n", err);
		goto out;
	}
	rc = 0;
out:
	free(seg);
	free(diags);
	free(src);
	return rc;
}
