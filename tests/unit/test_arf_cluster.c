/* test_arf_cluster.c: the parts of arf/cluster.c that need no server: the cluster
 * description's parser (good texts, and hostile ones: every error message pinned) and
 * format (round trip; the version as the layout, flat or rotated), and the object lengths
 * of the stripe layout against a count made stripe by stripe; both layouts' placement
 * (table-driven: servers, object offsets and lengths for N = 1..3 and edge sizes); arfd's side of --member (arf/members.c): the list against a
 * description (every message pinned), and the description read from a mapped image, one
 * made by mkfs with a description put in by hand, then damaged (never a fault).  The data
 * path against real servers is tests/integration/arf_cluster.sh.
 * Prints "N passed, N failed" last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arf.h"
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
	bad_text("server tcp:h:1\n", "line 1: expected \"arf-cluster 1\" or \"arf-cluster 2\" first");
	/* the version is the layout: 1 flat, 2 rotated; no other */
	rc = parse("arf-cluster 2\nserver tcp:h:1\n", err, sizeof err);
	CHECK(rc == 0 && d.layout == ARF_LAYOUT_ROTATE, "version 2 rotates: %d %s", rc, err);
	rc = parse("arf-cluster 1\nserver tcp:h:1\n", err, sizeof err);
	CHECK(rc == 0 && d.layout == ARF_LAYOUT_FLAT, "version 1 is flat: %d %s", rc, err);
	bad_text("arf-cluster 3\nserver tcp:h:1\n",
	         "line 1: expected \"arf-cluster 1\" or \"arf-cluster 2\" first");
	bad_text("arf-cluster 20\nserver tcp:h:1\n",
	         "line 1: expected \"arf-cluster 1\" or \"arf-cluster 2\" first");
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
	a.layout = ARF_LAYOUT_ROTATE;
	len = arf_cluster_format(&a, text, sizeof text);
	rc = len > 0 ? arf_cluster_parse(text, (size_t)len, &d, err, sizeof err) : -1;
	CHECK(len > 0 && !strncmp(text, "arf-cluster 2\n", 14) && rc == 0 &&
	      d.layout == ARF_LAYOUT_ROTATE, "rotated round trip: %d %s", rc, text);
	a.layout = 0;

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

/* The layouts (arf_cluster.h), table-driven: for files of 0, 1, unit-1, unit, unit+1 and
 * many units of bytes on 1, 2 and 3 servers, in both layouts and for inode numbers of every
 * residue, each stripe's server and object offset counted by hand must be what
 * arf_cl_server, arf_cl_slot and arf_cl_obj_len give: every server's object exactly its
 * stripes' bytes, the first stripe where the layout says. */
static void test_layouts(void)
{
	static const struct {
		int layout;
		unsigned n;
		uint64_t ino;
		unsigned first;                /* the server of stripe 0 */
	} cases[] = {
		{ ARF_LAYOUT_FLAT, 1, 7, 0 },   { ARF_LAYOUT_ROTATE, 1, 7, 0 },
		{ ARF_LAYOUT_FLAT, 2, 5, 0 },   { ARF_LAYOUT_ROTATE, 2, 5, 1 },
		{ ARF_LAYOUT_ROTATE, 2, 6, 0 }, { ARF_LAYOUT_FLAT, 3, 11, 0 },
		{ ARF_LAYOUT_ROTATE, 3, 11, 2 }, { ARF_LAYOUT_ROTATE, 3, 12, 0 },
		{ ARF_LAYOUT_ROTATE, 3, 13, 1 }, { 0, 3, 13, 0 },   /* not parsed: flat */
	};
	const uint32_t unit = 65536;
	int bad = 0;
	for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		unsigned n = cases[c].n, first = arf_cl_first(cases[c].layout, n, cases[c].ino);
		CHECK(first == cases[c].first, "case %u: first %u, want %u", c, first,
		      cases[c].first);
		uint64_t sizes[] = { 0, 1, unit - 1, unit, unit + 1, 7ull * unit + 3, 40ull * unit };
		for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			uint64_t size = sizes[i], want[3] = { 0 }, next[3] = { 0 };
			for (uint64_t off = 0; off < size; off += unit) {
				uint64_t s = off / unit, piece = size - off < unit ? size - off : unit;
				unsigned k = (unsigned)((s + first) % n);   /* by hand */
				if (arf_cl_server(first, n, s) != k && bad++ < 5)
					printf("FAIL case %u: stripe %llu on %u, want %u\n", c,
					       (unsigned long long)s, arf_cl_server(first, n, s), k);
				/* the object offset is (s / n) * unit: consecutive on its server */
				if (next[k] != s / n * unit && bad++ < 5)
					printf("FAIL case %u: stripe %llu at %llu of its object\n", c,
					       (unsigned long long)s, (unsigned long long)next[k]);
				next[k] += unit;
				want[k] += piece;
			}
			for (unsigned k = 0; k < n; k++) {
				unsigned j = arf_cl_slot(first, n, k);
				if (arf_cl_server(first, n, j) != k && bad++ < 5)
					printf("FAIL case %u: slot %u of server %u\n", c, j, k);
				uint64_t got = arf_cl_obj_len(size, unit, n, j);
				if (got != want[k] && bad++ < 5)
					printf("FAIL case %u: size %llu: server %u holds %llu, want %llu\n",
					       c, (unsigned long long)size, k, (unsigned long long)got,
					       (unsigned long long)want[k]);
			}
		}
	}
	CHECK(bad == 0, "layouts: %d wrong", bad);
	/* small files spread: 300 one-stripe files of consecutive inodes, 100 a server */
	unsigned per[3] = { 0 };
	for (uint64_t ino = 20; ino < 320; ino++)
		per[arf_cl_server(arf_cl_first(ARF_LAYOUT_ROTATE, 3, ino), 3, 0)]++;
	CHECK(per[0] == 100 && per[1] == 100 && per[2] == 100, "spread %u %u %u", per[0],
	      per[1], per[2]);
}

/* A file's own layout (arf_cl_layout, from the record getattr's answer carries): the units
 * accepted, the default (the cluster's, also for no record), every record this version
 * refuses with its message pinned, and
 * object lengths of files of several units against a count made stripe by stripe. */
static void test_file_layout(void)
{
	static const struct { uint64_t unit; bool ok; } units[] = {
		{ 0, false }, { 1, false }, { 4095, false }, { 4096, true }, { 6000, false },
		{ 8192, true }, { 65536, true }, { 1u << 20, true }, { (4u << 20) - 4096, true },
		{ 4u << 20, true }, { (4u << 20) + 4096, false }, { 8u << 20, false },
		{ 1ull << 32, false },
	};
	for (unsigned i = 0; i < sizeof units / sizeof units[0]; i++)
		CHECK(arf_cl_unit_ok(units[i].unit) == units[i].ok, "unit %llu: %d",
		      (unsigned long long)units[i].unit, arf_cl_unit_ok(units[i].unit));

	struct arf_cluster_desc c = { .n = 3, .layout = ARF_LAYOUT_ROTATE, .unit = 65536 };
	struct arf_cl_layout l;
	arf_cl_layout_default(&c, 13, &l);
	CHECK(l.unit == 65536 && l.count == 3 && l.first == 1, "default rotated: %u %u %u",
	      l.unit, l.count, l.first);
	c.layout = ARF_LAYOUT_FLAT;
	arf_cl_layout_default(&c, 13, &l);
	CHECK(l.unit == 65536 && l.count == 3 && l.first == 0, "default flat: %u %u %u",
	      l.unit, l.count, l.first);

	static const struct { uint32_t rec[4]; const char *err; } recs[] = {
		{ { 0, 0, 0, 0 }, NULL },                    /* none: the cluster's */
		{ { 4096, 3, 0, 0 }, NULL },
		{ { 4u << 20, 3, 2, 0 }, NULL },
		{ { 0, 3, 0, 0 }, "layout record: unit 0: not a multiple of 4096 from 4096 to 4194304" },
		{ { 6000, 3, 0, 0 }, "layout record: unit 6000: not a multiple of 4096 from 4096 to 4194304" },
		{ { 8u << 20, 3, 0, 0 }, "layout record: unit 8388608: not a multiple of 4096 from 4096 to 4194304" },
		{ { 4096, 2, 0, 0 }, "layout record: stripe count 2: this version stripes a file over all 3 data servers" },
		{ { 4096, 4, 0, 0 }, "layout record: stripe count 4: this version stripes a file over all 3 data servers" },
		{ { 4096, 3, 3, 0 }, "layout record: first server 3 of 3" },
		{ { 4096, 3, 0, 7 }, "layout record: reserved field 7 (a later version's?)" },
	};
	for (unsigned i = 0; i < sizeof recs / sizeof recs[0]; i++) {
		char err[256] = "";
		const uint32_t *r = recs[i].rec;
		int rc = arf_cl_layout(&c, 13, r, &l, err, sizeof err);
		if (!recs[i].err)
			CHECK(rc == 0 && l.unit == (r[0] ? r[0] : 65536) && l.count == 3 &&
			      l.first == r[2], "record %u: %d '%s', %u %u %u", i, rc, err, l.unit,
			      l.count, l.first);
		else
			CHECK(rc == -EIO && !strcmp(err, recs[i].err), "record %u: %d '%s', want '%s'",
			      i, rc, err, recs[i].err);
	}

	/* every unit's object lengths, counted by hand, n 1..3 and sizes around the unit */
	static const uint32_t us[] = { 4096, 65536, 1u << 20, 4u << 20 };
	int bad = 0;
	for (unsigned u = 0; u < sizeof us / sizeof us[0]; u++) {
		uint64_t unit = us[u];
		uint64_t sizes[] = { 0, 1, unit - 1, unit, unit + 1, 2 * unit + 5, 7 * unit + 3 };
		for (unsigned n = 1; n <= 3; n++) {
			for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
				uint64_t want[3] = { 0 };
				for (uint64_t off = 0; off < sizes[i]; off += unit)
					want[off / unit % n] += sizes[i] - off < unit ? sizes[i] - off : unit;
				for (unsigned j = 0; j < n; j++)
					if (arf_cl_obj_len(sizes[i], (uint32_t)unit, n, j) != want[j] && bad++ < 5)
						printf("FAIL unit %llu n %u size %llu slot %u\n",
						       (unsigned long long)unit, n,
						       (unsigned long long)sizes[i], j);
			}
		}
	}
	CHECK(bad == 0, "object lengths of several units: %d wrong", bad);
}

/* arf_cluster_check_members: in order, and each way of being wrong, messages pinned */
static void test_members(void)
{
	struct arf_cluster_desc c = { .n = 3, .unit = 65536 };
	const char *eps[3] = { "tcp:h:1", "tcp:h:2", "tcp:h:3" };
	for (int k = 0; k < 3; k++)
		snprintf(c.server[k], sizeof c.server[k], "%s", eps[k]);
	char err[512];
	CHECK(arf_cluster_check_members(&c, eps, 3, err, sizeof err) == 0, "in order: %s", err);
	const char *swapped[3] = { "tcp:h:1", "tcp:h:3", "tcp:h:2" };
	int rc = arf_cluster_check_members(&c, swapped, 3, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "--member 1 is tcp:h:3 but the image's cluster "
	      "description names tcp:h:2 as data server 1 (list the data servers in the order "
	      "`arf cluster show` gives)"), "swapped: %d '%s'", rc, err);
	rc = arf_cluster_check_members(&c, eps, 2, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "2 --member given but the image's cluster description "
	      "names 3 data servers: data server 2 (tcp:h:3) has no --member"), "missing: %d '%s'",
	      rc, err);
	const char *more[4] = { "tcp:h:1", "tcp:h:2", "tcp:h:3", "tcp:h:4" };
	rc = arf_cluster_check_members(&c, more, 4, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "--member 3 is tcp:h:4 but the image's cluster "
	      "description names only 3 data servers"), "extra: %d '%s'", rc, err);
	/* the first mismatch wins over the count */
	const char *both[2] = { "tcp:h:2", "tcp:h:1" };
	rc = arf_cluster_check_members(&c, both, 2, err, sizeof err);
	CHECK(rc == -1 && !strncmp(err, "--member 0 is tcp:h:2 but", 25), "both: %d '%s'", rc, err);
	/* names compare as strings: another spelling of the same address is a mismatch */
	const char *alias[3] = { "tcp:localhost:1", "tcp:h:2", "tcp:h:3" };
	CHECK(arf_cluster_check_members(&c, alias, 3, err, sizeof err) == -1, "alias accepted");
}

#define IMG_SIZE (4u << 20)
#define DESC_INO 7                          /* a free inode of a new image */

/* Put /.arf-cluster holding text into a new image by hand: a slot in the root's table, a
 * record and the text in the last two blocks, and inode DESC_INO. */
static void put_desc(uint8_t *base, const char *text)
{
	const struct arf_sb *sb = (const void *)base;
	struct arf_inode *root = (void *)(base + sb->itable_off + (ARF_INO_ROOT << ARF_INO_SHIFT));
	uint64_t rec_off = IMG_SIZE - 2 * ARF_BLOCK_SIZE, text_blk = IMG_SIZE / ARF_BLOCK_SIZE - 1;
	const char *name = ARF_CLUSTER_FILE;
	uint64_t h = arf_name_hash(name, strlen(name)), mask = root->u.dir.nslots - 1;
	uint64_t i = ((h * (uint64_t)ARF_HASH_MUL) >> (root->u.dir.shift & 63)) & mask;
	struct arf_slot *t = (void *)(base + root->u.dir.table);
	while (t[i].rec != ARF_T_EMPTY)
		i = (i + 1) & mask;
	t[i] = (struct arf_slot){ .hash = h, .rec = rec_off };
	struct arf_rec *r = (void *)(base + rec_off);
	r->ino = DESC_INO;
	r->hash = h;
	r->name_len = (uint8_t)strlen(name);
	r->len = ARF_R_MAX;
	r->type = ARF_DT_REG;
	memcpy(r->name, name, strlen(name));
	struct arf_inode *f = (void *)(base + sb->itable_off + (DESC_INO << ARF_INO_SHIFT));
	f->mode = ARF_S_IFREG | 0444;
	f->size = strlen(text);
	f->n_extents = 1;
	f->u.ext[0] = (struct arf_extent){ .lblk = 0, .len = 1, .pblk = text_blk };
	memcpy(base + text_blk * ARF_BLOCK_SIZE, text, strlen(text));
}

/* arf_image_cluster_desc on a mapped image */
static void test_image_desc(void)
{
	char path[] = "/tmp/test_arf_cluster.XXXXXX", err[512];
	int fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	close(fd);
	int rc = arf_mkfs(path, IMG_SIZE, 0, err, sizeof err);
	CHECK(rc == 0, "mkfs: %s", err);
	fd = open(path, O_RDWR);
	uint8_t *base = rc == 0 && fd >= 0 ? mmap(NULL, IMG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE,
	                                          fd, 0) : MAP_FAILED;
	unlink(path);
	if (fd >= 0)
		close(fd);
	CHECK(base != MAP_FAILED, "mmap");
	if (base == MAP_FAILED)
		return;
	static struct arf_cluster_desc c;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == 0 && c.n == 0, "a new image: %d n %u %s", rc, c.n, err);
	struct arf_cluster_stamp st = arf_image_cluster_stamp(base, IMG_SIZE);
	CHECK(st.ino == 0 && st.gen == 0, "stamp of a new image: %llu %llu",
	      (unsigned long long)st.ino, (unsigned long long)st.gen);
	st = arf_image_cluster_stamp(base, sizeof(struct arf_sb) - 1);
	CHECK(st.ino == 0 && st.gen == 0, "stamp of a short mapping");

	put_desc(base, "arf-cluster 1\nunit 65536\nserver tcp:h:1\nserver tcp:h:2\n");
	/* the stamp names the description's file: its number, and its generation, which a new
	 * file of that number (a description renamed over the old one) changes */
	{
		const struct arf_sb *sb0 = (const void *)base;
		struct arf_inode *f0 = (void *)(base + sb0->itable_off + (DESC_INO << ARF_INO_SHIFT));
		f0->gen = 41;
		st = arf_image_cluster_stamp(base, IMG_SIZE);
		CHECK(st.ino == DESC_INO && st.gen == 41, "stamp: %llu %llu",
		      (unsigned long long)st.ino, (unsigned long long)st.gen);
		f0->gen = 42;
		struct arf_cluster_stamp st2 = arf_image_cluster_stamp(base, IMG_SIZE);
		CHECK(st2.ino == DESC_INO && st2.gen == 42, "stamp after a new generation");
	}
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == 0 && c.n == 2 && c.unit == 65536 && !strcmp(c.server[1], "tcp:h:2"),
	      "the description: %d n %u %s", rc, c.n, err);
	const char *eps[2] = { "tcp:h:1", "tcp:h:2" };
	CHECK(rc == 0 && arf_cluster_check_members(&c, eps, 2, err, sizeof err) == 0,
	      "its members: %s", err);

	const struct arf_sb *sb = (const void *)base;
	struct arf_inode *f = (void *)(base + sb->itable_off + (DESC_INO << ARF_INO_SHIFT));
	struct arf_inode *root = (void *)(base + sb->itable_off + (ARF_INO_ROOT << ARF_INO_SHIFT));
	struct arf_inode fsave = *f, rsave = *root;
	f->u.ext[0].pblk = IMG_SIZE / ARF_BLOCK_SIZE;          /* just past the end */
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "/.arf-cluster: an extent outside the image"),
	      "extent past the end: %d '%s'", rc, err);
	f->u.ext[0].pblk = UINT64_MAX;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1, "extent at 2^64 blocks: %d '%s'", rc, err);
	*f = fsave;
	f->size = ARF_CLUSTER_FILE_MAX + 1;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "/.arf-cluster: not a cluster description (too large)"),
	      "too large: %d '%s'", rc, err);
	*f = fsave;
	f->mode = ARF_S_IFDIR | 0755;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "/.arf-cluster: not a cluster description (not a regular "
	      "file)"), "a directory: %d '%s'", rc, err);
	*f = fsave;
	f->n_extents = ARF_I_INLINE_EXT + 1;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1, "extents beyond the inline ones: %d '%s'", rc, err);
	*f = fsave;
	f->u.ext[0].lblk = 1;                                 /* a hole where the text was */
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1 && c.n == 0, "a hole: %d n %u '%s'", rc, c.n, err);
	*f = fsave;
	root->u.dir.table = IMG_SIZE;                         /* the root's table past the end */
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1, "root table past the end: %d '%s'", rc, err);
	root->u.dir.nslots = 3;                               /* not a power of two */
	root->u.dir.table = rsave.u.dir.table;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1, "3 slots: %d '%s'", rc, err);
	*root = rsave;
	/* every slot's record pointing anywhere, the name's hash in each: an answer or -1,
	 * within bounds (ASan: make check-asan) */
	struct arf_slot *t = (void *)(base + root->u.dir.table);
	uint64_t h = arf_name_hash(ARF_CLUSTER_FILE, strlen(ARF_CLUSTER_FILE));
	int faults = 0;
	for (uint64_t off = IMG_SIZE - ARF_R_MAX - 8; off < IMG_SIZE + 8; off++) {
		for (uint64_t i = 0; i < root->u.dir.nslots; i++)
			t[i] = (struct arf_slot){ .hash = h, .rec = off };
		rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
		faults += rc != -1 && rc != 0;
		st = arf_image_cluster_stamp(base, IMG_SIZE);   /* in bounds too (ASan) */
		faults += st.ino >= sb->n_inodes;
	}
	CHECK(faults == 0, "records near the end: %d odd results", faults);
	root->u.dir.table = 0;                                /* an empty root: no description */
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == 0 && c.n == 0, "empty root: %d '%s'", rc, err);
	root->mode = 0;
	rc = arf_image_cluster_desc(base, IMG_SIZE, &c, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "no root directory"), "no root: %d '%s'", rc, err);
	rc = arf_image_cluster_desc(base, 100, &c, err, sizeof err);
	CHECK(rc == -1 && !strcmp(err, "not an ARF image"), "100 bytes: %d '%s'", rc, err);
	munmap(base, IMG_SIZE);
}

int main(void)
{
	test_parse();
	test_format();
	test_obj_len();
	test_layouts();
	test_file_layout();
	test_members();
	test_image_desc();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
