/* test_arfd_rdma.c: arfd and libarc over rdma: (needs an RDMA device: tests/rdma/run.sh).
 *
 * An in-process arfd listens on rdma:HOST:0 with a rw and a ro region.  libarc's reads and
 * writes must go one-sided (the server counts no READ or WRITE request), give the same bytes
 * and the same errors as over tcp, and an EXEC and a local-placement run over rdma must see
 * what was written.  Prints "N passed, N failed".
 *   test_arfd_rdma HOST     the address of the RDMA netdev (not 127.0.0.1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "asm.h"
#include "server.h"

static int passed, failed;
#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static uint64_t stat_of(struct arc *a, const char *name)
{
	char *text;
	uint64_t v = UINT64_MAX;
	if (arc_stats(a, &text) != 0)
		return v;
	size_t n = strlen(name);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, name, n) && line[n] == ' ')
			v = strtoull(line + n + 1, NULL, 10);
	free(text);
	return v;
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : getenv("PN_TEST_HOST");
	if (!host) {
		printf("usage: test_arfd_rdma HOST\n0 passed, 1 failed\n");
		return 1;
	}
	static struct arfd_config cfg;
	char ep[128], err[512];
	snprintf(ep, sizeof ep, "rdma:%s:0", host);
	arfd_config_line(&cfg, "listen", ep, err, sizeof err);
	arfd_config_line(&cfg, "region", "mem=1M:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "ro=64K:ro", err, sizeof err);
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		printf("arfd_start: %s\n0 passed, 1 failed\n", err);
		return 1;
	}
	/* the client's own endpoint is libarc's default: the local address the server is
	 * reached from (127.0.0.1 would be no address rdma_cm can route a reply to, should the
	 * server need a new connection to answer; one CI run failed that way) */
	struct arc *a = arc_connect(arfd_endpoint(s, "rdma"), NULL, err, sizeof err);
	CHECK(a != NULL, "arc_connect %s: %s", arfd_endpoint(s, "rdma"), a ? "" : err);
	if (!a) {
		arfd_stop(s, 1000);
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	struct arc_region *list;
	unsigned n;
	int rc = arc_regions(a, &list, &n);
	CHECK(rc == 0 && n == 2 && list[0].handle_len == 24 && list[1].handle_len == 24,
	      "regions carry one-sided handles: %d %u", rc, n);
	if (rc == 0)
		free(list);

	/* one-sided writes and reads, 1 byte .. 256 KiB, at the region's end too */
	static uint8_t out[256 * 1024], in[256 * 1024];
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (uint8_t)(i * 31 + 7);
	static const uint32_t sizes[] = { 1, 7, 4096, 65536, 256 * 1024 };
	int same = 1;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t off = (1u << 20) - sizes[k];
		memset(in, 0, sizes[k]);
		if (arc_write(a, "mem", off, out, sizes[k]) != 0 || arc_read(a, "mem", off, in, sizes[k]) != 0 ||
		    memcmp(in, out, sizes[k]))
			same = 0;
	}
	CHECK(same, "one-sided write then read back: %s", arc_errmsg(a));
	CHECK(stat_of(a, "read.requests") == 0 && stat_of(a, "write.requests") == 0,
	      "the server saw no READ/WRITE request (%llu, %llu)",
	      (unsigned long long)stat_of(a, "read.requests"),
	      (unsigned long long)stat_of(a, "write.requests"));
	uint8_t b[16];
	rc = arc_read(a, "mem", (1u << 20) - 8, b, 16);
	CHECK(rc == -AR_EBOUNDS, "read past the end: %d %s", rc, arc_errmsg(a));
	rc = arc_write(a, "ro", 0, b, 8);
	CHECK(rc == -AR_EREADONLY, "write to a read-only region: %d %s", rc, arc_errmsg(a));
	rc = arc_read(a, "nosuch", 0, b, 8);
	CHECK(rc == -AR_ENOREGION, "unknown region (falls back to a request): %d %s", rc, arc_errmsg(a));

	/* a segment on the server sees the one-sided writes; local placement reads one-sided */
	const char *src = ".region mem rw\n.func main\n\tpush 1048568\n\tld64 mem\n\tret\n.end\n.export main\n";
	uint8_t *seg;
	size_t len;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "t.pna", &seg, &len, &diags) == 0) {
		uint64_t want;
		memcpy(&want, out + sizeof out - 8, 8);
		struct arc_exec x = { .seg = seg, .seg_len = len };
		rc = arc_exec(a, &x);
		CHECK(rc == 0 && (uint64_t)x.value == want, "exec over rdma: %d", rc);
		free(x.out);
		uint64_t reads0 = stat_of(a, "read.requests");   /* the 'nosuch' fallback made one */
		rc = arc_exec_local(a, &x);
		CHECK(rc == 0 && (uint64_t)x.value == want, "local placement over rdma: %d %s", rc, arc_errmsg(a));
		free(x.out);
		uint64_t reads = stat_of(a, "read.requests") - reads0;
		CHECK(reads == 0, "local placement read one-sided (%llu READ requests)", (unsigned long long)reads);
		free(seg);
	} else {
		CHECK(0, "assemble: %s", diags);
	}
	free(diags);
	arc_close(a);
	arfd_stop(s, 1000);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
