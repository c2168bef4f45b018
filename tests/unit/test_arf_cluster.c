/* test_arf_cluster.c: the parts of arf/cluster.c that need no server: the cluster
 * description's parser (good texts, and hostile ones: every error message pinned) and
 * format (round trip), and the object lengths of the stripe layout against a count made
 * stripe by stripe.  The data path against real servers is tests/integration/arf_cluster.sh.
 * Prints "N passed, N failed" last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_cluster.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static struct arf_cluster_desc d;

/* parse text: 0 or -1, the message in err */
static int parse(const char *text, char *err, size_t errlen)
{
	err[0] = '\0';
	return arf_cluster_parse(text, strlen(text), &d, err, errlen);
}

static void bad_text(const char *text, const char *want)
{
	char err[256];
	int rc = parse(text, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, want), "parse '%s': %d '%s', want '%s'", text, rc, err,
	      want);
}

static void test_parse(void)
{
	char err[256];
	int rc = parse("arf-cluster 1\nunit 65536\nserver tcp:127.0.0.1:7001\n"
	               "# a comment\n\n  server   udp:10.0.0.2:9\n", err, sizeof err);
	CHECK(rc == 0 && d.n == 2 && d.unit == 65536 && !strcmp(d.server[0], "tcp:127.0.0.1:7001")
	      && !strcmp(d.server[1], "udp:10.0.0.2:9"), "good text: %d %s", rc, err);
	rc = parse("arf-cluster 1\nserver tcp:h:1", err, sizeof err);   /* no final newline */
	CHECK(rc == 0 && d.n == 1 && d.unit == ARF_STRIPE_DEFAULT, "default unit: %d %s", rc, err);

	bad_text("", "empty");
	bad_text("arf-cluster 1\n", "no server");
	bad_text("server tcp:h:1\n", "line 1: expected \"arf-cluster 1\" first");
	bad_text("arf-cluster 2\nserver tcp:h:1\n", "line 1: expected \"arf-cluster 1\" first");
	bad_text("arf-cluster 1\nunit 3000\nserver tcp:h:1\n",
	         "line 2: unit 3000: expected a multiple of 4096 from 4096 to 4194304");
	bad_text("arf-cluster 1\nunit 8388608\n",
	         "line 2: unit 8388608: expected a multiple of 4096 from 4096 to 4194304");
	bad_text("arf-cluster 1\nunit -4096\n",
	         "line 2: unit -4096: expected a multiple of 4096 from 4096 to 4194304");
	bad_text("arf-cluster 1\nunit 4096x\n",
	         "line 2: unit 4096x: expected a multiple of 4096 from 4096 to 4194304");
	bad_text("arf-cluster 1\nserver /etc/passwd\n",
	         "line 2: server /etc/passwd: expected tcp:HOST:PORT");
	bad_text("arf-cluster 1\nserver\n", "line 2: expected KEY VALUE");
	bad_text("arf-cluster 1\nserver tcp:h:1 tcp:h:2\n", "line 2: expected KEY VALUE");
	bad_text("arf-cluster 1\nowner root\n", "line 2: unknown key 'owner'");
	bad_text("arf-cluster 1\nserver tcp:h:1\nserver tcp:h:2\nserver tcp:h:1\n",
	         "line 4: server tcp:h:1: listed twice");

	/* a line longer than any the format has */
	char *t = malloc(1000);
	snprintf(t, 1000, "arf-cluster 1\nserver tcp:%0600d:1\n", 0);
	bad_text(t, "line 2: too long");
	/* an endpoint as long as a line allows, but longer than an endpoint may be */
	snprintf(t, 1000, "arf-cluster 1\nserver tcp:%0200d\n", 0);
	bad_text(t, "line 2: server: 204 bytes (at most 127)");
	free(t);

	/* more servers than a cluster has */
	size_t cap = 64 + (ARF_CLUSTER_MAX + 1) * 32;
	char *many = malloc(cap);
	size_t n = (size_t)snprintf(many, cap, "arf-cluster 1\n");
	for (int k = 0; k <= ARF_CLUSTER_MAX; k++)
		n += (size_t)snprintf(many + n, cap - n, "server tcp:h:%d\n", k + 1);
	char want[64];
	snprintf(want, sizeof want, "line %d: more than %d servers", ARF_CLUSTER_MAX + 2,
	         ARF_CLUSTER_MAX);
	bad_text(many, want);
	free(many);

	/* larger than the file may be, and NUL bytes inside (len counts them) */
	char *huge = calloc(1, ARF_CLUSTER_FILE_MAX + 2);
	rc = arf_cluster_parse(huge, ARF_CLUSTER_FILE_MAX + 1, &d, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "16385 bytes (at most 16384)"), "huge: %d '%s'", rc, err);
	static const char nul[] = "arf-cluster 1\nserver tcp:h:1\0garbage\n";
	rc = arf_cluster_parse(nul, sizeof nul - 1, &d, err, sizeof err);
	CHECK(rc == 0 && d.n == 1 && !strcmp(d.server[0], "tcp:h:1"), "NUL inside: %d '%s'", rc,
	      err);
	free(huge);
}

static void test_format(void)
{
	struct arf_cluster_desc a = { .n = 3, .unit = 1u << 20 };
	for (unsigned k = 0; k < a.n; k++)
		snprintf(a.server[k], sizeof a.server[k], "tcp:10.0.0.%u:7000", k + 2);
	char text[ARF_CLUSTER_FILE_MAX], err[256];
	int len = arf_cluster_format(&a, text, sizeof text);
	CHECK(len > 0 && !strcmp(text, "arf-cluster 1\nunit 1048576\nserver tcp:10.0.0.2:7000\n"
	                         "server tcp:10.0.0.3:7000\nserver tcp:10.0.0.4:7000\n"),
	      "format: %d '%s'", len, text);
	int rc = arf_cluster_parse(text, (size_t)len, &d, err, sizeof err);
	CHECK(rc == 0 && d.n == a.n && d.unit == a.unit && !strcmp(d.server[2], a.server[2]),
	      "round trip: %d %s", rc, err);
	CHECK(arf_cluster_format(&a, text, 20) == -1, "format into too small a buffer");

	/* the largest description fits the file */
	struct arf_cluster_desc *b = calloc(1, sizeof *b);
	b->n = ARF_CLUSTER_MAX;
	b->unit = ARF_STRIPE_MAX;
	for (unsigned k = 0; k < b->n; k++) {
		memset(b->server[k], 'x', ARF_CLUSTER_EP_MAX - 1);
		/* "tcp:h:" and the number in two digits, then x's: 127 bytes, all different */
		memcpy(b->server[k], "tcp:h:", 6);
		b->server[k][6] = (char)('0' + k / 10);
		b->server[k][7] = (char)('0' + k % 10);
	}
	len = arf_cluster_format(b, text, sizeof text);
	CHECK(len > 0 && len <= ARF_CLUSTER_FILE_MAX, "largest description: %d bytes", len);
	rc = len > 0 ? arf_cluster_parse(text, (size_t)len, &d, err, sizeof err) : -1;
	CHECK(rc == 0 && d.n == ARF_CLUSTER_MAX, "largest description parses: %d %s", rc, err);
	free(b);
}

/* arf_cl_obj_len against the bytes counted stripe by stripe */
static void test_obj_len(void)
{
	static const uint32_t units[] = { 4096, 65536 };
	int bad = 0;
	for (unsigned u = 0; u < 2; u++)
		for (unsigned n = 1; n <= 5; n++) {
			uint32_t unit = units[u];
			uint64_t sizes[] = { 0, 1, unit - 1, unit, unit + 1, (uint64_t)n * unit - 1,
			                     (uint64_t)n * unit, (uint64_t)n * unit + 1,
			                     7ull * n * unit + 3 * unit + 17, 5ull * 1024 * 1024 + 12345 };
			for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
				uint64_t size = sizes[i], want[8] = { 0 }, sum = 0;
				for (uint64_t off = 0; off < size; off += unit) {
					uint64_t s = off / unit, piece = size - off < unit ? size - off : unit;
					want[s % n] += piece;
				}
				for (unsigned k = 0; k < n; k++) {
					uint64_t got = arf_cl_obj_len(size, unit, n, k);
					sum += got;
					if (got != want[k] && bad++ < 5)
						printf("FAIL obj_len(%llu, %u, %u, %u) = %llu, want %llu\n",
						       (unsigned long long)size, unit, n, k,
						       (unsigned long long)got, (unsigned long long)want[k]);
				}
				if (sum != size && bad++ < 5)
					printf("FAIL obj_len sums to %llu for %llu\n", (unsigned long long)sum,
					       (unsigned long long)size);
			}
		}
	CHECK(bad == 0, "object lengths: %d wrong", bad);
	/* the case arf_cluster.sh checks on real servers */
	CHECK(arf_cl_obj_len(5 * 1024 * 1024 + 12345, 65536, 3, 2) == 26 * 65536 + 12345,
	      "5 MiB + 12345 on server 2");
}

int main(void)
{
	test_parse();
	test_format();
	test_obj_len();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
