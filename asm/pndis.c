/* pndis.c: command-line disassembler, .pno code segment -> .pna text on stdout.
 *
 *     pndis file.pno          assembly that pnasm turns back into the same bytes
 *     pndis --id file.pno     the segment id (SHA-256 of the bytes, hex)
 *
 * A thin main around asm_disassemble (asm/dis.c).  Options are parsed in one table-free loop
 * so a later --jit (show the native code) slots in beside --id.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: pndis [--id] file.pno\n"
	           "  Print a code segment as assembly that pnasm re-assembles to the same bytes.\n"
	           "  --id      print the segment id (SHA-256 of its bytes, hex) instead\n"
	           "  -         read the segment from stdin\n"
	           "  --help    show this help\n");
}

static int read_all(FILE *f, uint8_t **out, size_t *out_len)
{
	size_t len = 0, cap = 65536;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -1;
	for (;;) {
		if (len == cap) {
			uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				int saverr = errno;
				free(buf);
				errno = saverr ? saverr : EIO;
				return -1;
			}
			break;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

int main(int argc, char **argv)
{
	const char *in = NULL;
	int want_id = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--id") == 0) {
			want_id = 1;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "pndis: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!in) {
			in = argv[i];
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
	int r = read_all(f, &seg, &len);
	int saverr = errno;
	if (!from_stdin)
		fclose(f);
	if (r != 0) {
		fprintf(stderr, "pndis: %s: %s\n", in, strerror(saverr));
		return 1;
	}
	int rc = 1;
	char err[256], *text = NULL;
	if (want_id) {
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
