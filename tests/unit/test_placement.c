/* test_placement.c: the same segment run on the server (arc_exec) and here against the
 * server's memory (arc_exec_local) must give identical results: value, output, trap (kind,
 * function, pc, code), fuel used, and the same effects on rw regions.  An arfd runs in-process
 * on loopback tcp with a linked list, a hash table, a text and a scratch region; every case
 * restores the scratch region before each placement.  Prints "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "asm.h"
#include "server.h"
#include "vm.h"

static int passed, failed;
#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

#define MEM_LEN   (64 * 1024)
#define TABLE_BUCKETS 256
#define TEXT_LEN  (48 * 1024)
#define SCRATCH_LEN 4096

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = malloc(1 << 20);
	*len = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	return buf;
}

static uint8_t *assemble_file(const char *path, size_t *len)
{
	size_t n;
	uint8_t *src = read_file(path, &n), *seg = NULL;
	char *diags = NULL;
	if (!src || asm_assemble((char *)src, n, path, &seg, len, &diags) != 0) {
		printf("cannot assemble %s: %s\n", path, diags ? diags : "unreadable");
		seg = NULL;
	}
	free(src);
	free(diags);
	return seg;
}

static uint8_t *assemble_text(const char *src, size_t *len)
{
	uint8_t *seg = NULL;
	char *diags = NULL;
	if (asm_assemble(src, strlen(src), "case.pna", &seg, len, &diags) != 0) {
		printf("cannot assemble a case: %s\n%s", diags ? diags : "", src);
		seg = NULL;
	}
	free(diags);
	return seg;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static struct arc *a;
static uint8_t scratch0[SCRATCH_LEN];

/* Run x both ways from the same scratch contents; compare everything. */
static void both(const char *what, const uint8_t *seg, size_t len, const char *entry,
                 const int64_t *args, unsigned n_args, const char *argbytes)
{
	struct arc_exec x[2];
	int rc[2];
	uint8_t after[2][SCRATCH_LEN];
	for (int p = 0; p < 2; p++) {
		arc_write(a, "scratch", 0, scratch0, SCRATCH_LEN);
		x[p] = (struct arc_exec){ .seg = seg, .seg_len = len, .entry = entry, .args = args,
		                          .n_args = n_args, .argbytes = argbytes,
		                          .argbytes_len = argbytes ? strlen(argbytes) : 0,
		                          .out_max = 64 * 1024, .fuel = 2000000 };
		rc[p] = p == 0 ? arc_exec(a, &x[p]) : arc_exec_local(a, &x[p]);
		arc_read(a, "scratch", 0, after[p], SCRATCH_LEN);
	}
	const char *why = NULL;
	if (rc[0] != rc[1]) why = "return code";
	else if (rc[0] == 0 && x[0].value != x[1].value) why = "value";
	else if (x[0].trapped != x[1].trapped) why = "trapped";
	else if (x[0].trapped && (x[0].trap.kind != x[1].trap.kind || x[0].trap.func != x[1].trap.func ||
	                          x[0].trap.pc != x[1].trap.pc || x[0].trap.code != x[1].trap.code))
		why = "trap";
	else if ((rc[0] == 0 || rc[0] == -AR_ETRAP) && x[0].fuel_used != x[1].fuel_used) why = "fuel used";
	else if (x[0].out_len != x[1].out_len || (x[0].out_len && memcmp(x[0].out, x[1].out, x[0].out_len)))
		why = "output";
	else if (memcmp(after[0], after[1], SCRATCH_LEN)) why = "scratch region";
	CHECK(!why, "%s: %s differs: active rc %d value %lld out %llu '%s' / local rc %d value %lld out %llu '%s' (%s)",
	      what, why, rc[0], (long long)x[0].value, (unsigned long long)x[0].out_len,
	      x[0].trapped ? x[0].trap.text : "", rc[1], (long long)x[1].value,
	      (unsigned long long)x[1].out_len, x[1].trapped ? x[1].trap.text : "", arc_errmsg(a));
	free(x[0].out);
	free(x[1].out);
}

/* A counter from the server's STATS. */
static uint64_t stat_of(const char *name)
{
	char *text;
	uint64_t v = 0;
	if (arc_stats(a, &text) != 0)
		return 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		size_t n = strlen(name);
		if (!strncmp(line, name, n) && line[n] == ' ')
			v = strtoull(line + n + 1, NULL, 10);
	}
	free(text);
	return v;
}

/* Cases written for this test: stores, atomics, bulk operations and traps on remote regions. */
static const char *const cases[] = {
	/* stores and loads of every width around the end of a rw region, then one past */
	".region scratch rw\n.func main\n"
	"\tpush 4090\n\tpush 0x1122334455667788\n\tst32 scratch\n\tpush 4088\n\tpush -1\n\tst64 scratch\n"
	"\tpush 4094\n\tld16s scratch\n\tpush 4089\n\tld32u scratch\n\tadd\n\tpush 4096\n\tld8u scratch\n"
	"\tadd\n\tret\n.end\n.export main\n",
	/* atomics: fadd, a failing and a succeeding cas, an unaligned one */
	".region scratch rw\n.func main\n.local t\n"
	"\tpush 16\n\tpush 5\n\tfadd scratch\n\tlset t\n\tpush 16\n\tpush 9\n\tpush 1\n\tcas scratch\n"
	"\tlget t\n\tadd\n\tlset t\n\tpush 16\n\tpush 5\n\tpush 7\n\tcas scratch\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 16\n\tld64 scratch\n\tlget t\n\tadd\n\tlset t\n\tpush 20\n\tpush 1\n\tfadd scratch\n\tret\n"
	".end\n.export main\n",
	/* bulk: fill, copy text -> scratch, findb/finds/cmp across regions, output */
	".region scratch rw\n.region text ro\n.const nl \"lazy dog\"\n.func main\n"
	"\tpush 100\n\tpush 300\n\tpush 'x'\n\tfill scratch\n"
	"\tpush 200\n\tpush 1000\n\tpush 150\n\tcopy scratch, text\n"
	"\tpush 0\n\tpush 4096\n\tpush 10\n\tfindb scratch\n"
	"\tpush 0\n\tpush 40000\n\tpush @nl\n\tpush #nl\n\tfinds text, const\n\tadd\n"
	"\tpush 200\n\tpush 1000\n\tpush 150\n\tcmp scratch, text\n\tadd\n"
	"\tpush 1000\n\tpush 64\n\toutput text\n"
	"\tpush 150\n\tpush 80\n\toutput scratch\n\tret\n.end\n.export main\n",
	/* a bulk read past the end of a remote region traps exactly as on the server */
	".region text ro\n.func main\n\tpush 49000\n\tpush 200\n\tpush 10\n\tfindb text\n\tret\n.end\n"
	".export main\n",
	/* a copy that would run past the end of the rw scratch region */
	".region scratch rw\n.region text ro\n.func main\n\tpush 4000\n\tpush 0\n\tpush 97\n"
	"\tcopy scratch, text\n\tpush 1\n\tret\n.end\n.export main\n",
	/* findb, finds, findsi and findset over long remote ranges, searched window by window: a
	 * byte and a needle in the third MiB, needles across window seams (also in other case, and
	 * as byte sets: seamset, 11 sets of {x, X}), a needle absent, and a byte near the end of an
	 * 80 MiB range (longer than one fetch may be) */
	".region big rw\n.const seam \"SEAM-NEEDLE\"\n.const seami \"seam-Needle\"\n.const small \"small-Seam\"\n.const third \"third-mib\"\n.const none \"absent!\"\n"
	".const seamset bytes 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x8, 0x0, 0x0, 0x0, "
		"0x8, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x2, 0x0, 0x0, 0x0, 0x2, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x40, 0x0, 0x0, "
		"0x0, 0x40, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x20, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x10, 0x0, 0x0, 0x0, 0x10, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x10, 0x0, 0x0, 0x0, 0x10, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x20, 0x0, 0x0, 0x0, 0x20, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, "
		"0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0\n"
	".func main\n.local t\n"
	"\tpush 0\n\tpush 3145728\n\tpush 'Q'\n\tfindb big\n\tlset t\n"
	"\tpush 0\n\tpush 3145728\n\tpush @seam\n\tpush #seam\n\tfinds big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 0\n\tpush 3145728\n\tpush @seami\n\tpush #seami\n\tfindsi big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 0\n\tpush 3145728\n\tpush @small\n\tpush #small\n\tfindsi big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 0\n\tpush 3145728\n\tpush @seamset\n\tpush #seamset\n\tfindset big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 5\n\tpush 3145000\n\tpush @third\n\tpush #third\n\tfinds big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 0\n\tpush 3145728\n\tpush @none\n\tpush #none\n\tfinds big, const\n\tlget t\n\tadd\n\tlset t\n"
	"\tpush 0\n\tpush 83886080\n\tpush 'Z'\n\tfindb big\n\tlget t\n\tadd\n\tret\n.end\n.export main\n",
	/* fuel: a loop over remote loads runs out at the same place */
	".region text ro\n.func main\n.local i s\nloop:\n\tlget i\n\tld8u text\n\tlget s\n\tadd\n\tlset s\n"
	"\tlinc i, 1\n\tjmp loop\n.end\n.export main\n",
};

int main(void)
{
	static struct arfd_config cfg;
	char err[512];
	arfd_config_line(&cfg, "listen", "tcp:127.0.0.1:0", err, sizeof err);
	arfd_config_line(&cfg, "region", "mem=64K:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "table=64K:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "text=48K:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "scratch=4K:rw", err, sizeof err);
	arfd_config_line(&cfg, "region", "big=80M:rw", err, sizeof err);
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		printf("arfd_start: %s\n0 passed, 1 failed\n", err);
		return 1;
	}
	a = arc_connect(arfd_endpoint(s, "tcp"), NULL, err, sizeof err);
	if (!a) {
		printf("arc_connect: %s\n0 passed, 1 failed\n", err);
		arfd_stop(s, 1000);
		return 1;
	}
	/* the data: a list of 500 nodes in shuffled order, a table of 1000 keys, a text */
	static uint8_t mem[MEM_LEN], table[64 * 1024], text[TEXT_LEN];
	uint64_t x = 12345;
	unsigned order[500];
	for (unsigned i = 0; i < 500; i++)
		order[i] = i;
	for (unsigned i = 499; i > 0; i--) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		unsigned j = (unsigned)((x >> 33) % (i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < 500; i++) {
		uint64_t at = 24 + 24 * (uint64_t)order[i];
		uint64_t next = i + 1 < 500 ? 24 + 24 * (uint64_t)order[i + 1] : 0;
		put64(mem + at, next);
		put64(mem + at + 8, 1000 + i);
		put64(mem + at + 16, (uint64_t)i * i);
	}
	uint64_t head = 24 + 24 * (uint64_t)order[0];
	put64(table, 64 - 8);                                 /* 256 buckets */
	uint64_t node = 8 + 8 * TABLE_BUCKETS;
	for (uint64_t k = 0; k < 1000; k++, node += 24) {
		uint64_t b = (k * 7 * 0x9e3779b97f4a7c15ull) >> 56;
		put64(table + node, 0);
		memcpy(table + node, table + 8 + 8 * b, 8);       /* next = old head of the chain */
		put64(table + node + 8, k * 7);
		put64(table + node + 16, k + 1);
		put64(table + 8 + 8 * b, node);
	}
	static const char *const words[] = { "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog" };
	size_t tl = 0;
	for (unsigned line = 1; tl + 64 < TEXT_LEN; line++) {
		tl += (size_t)snprintf((char *)text + tl, TEXT_LEN - tl, "%u:", line);
		for (int k = 0; k < 4; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			tl += (size_t)snprintf((char *)text + tl, TEXT_LEN - tl, " %s", words[(x >> 40) % 8]);
		}
		text[tl++] = '\n';
	}
	memset(text + tl, '\n', TEXT_LEN - tl);
	for (unsigned i = 0; i < SCRATCH_LEN; i++)
		scratch0[i] = (uint8_t)(i * 13);
	/* big: zeros with a few marks (see the findb/finds case) */
	static const struct { uint64_t off; const char *s; } marks[] = {
		/* across the seams of the windows of a search from 0 (remote.c: 2 KiB, then each
		 * twice as large up to 1 MiB): the first at 2048, the last growing one at 1046528 */
		{ 2048 - 3, "SMALL-SEAM" }, { 1046528 - 5, "SEAM-NEEDLE" }, { 2500000, "Q" },
		{ 2800000, "third-mib" },
		{ 83886080 - 100, "Z" },
	};
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
		CHECK(arc_write(a, "big", marks[i].off, marks[i].s, (uint32_t)strlen(marks[i].s)) == 0,
		      "mark big: %s", arc_errmsg(a));
	CHECK(arc_write(a, "mem", 0, mem, sizeof mem) == 0 && arc_write(a, "table", 0, table, sizeof table) == 0 &&
	      arc_write(a, "text", 0, text, sizeof text) == 0, "loading the regions: %s", arc_errmsg(a));

	size_t len;
	uint8_t *seg = assemble_file("examples/linked_list.pna", &len);
	if (seg) {
		int64_t args[2] = { (int64_t)head, 1000 + 377 };
		both("linked_list find (present)", seg, len, "find", args, 2, NULL);
		args[1] = 5;
		both("linked_list find (absent)", seg, len, "find", args, 2, NULL);
		both("linked_list sum", seg, len, "sum", args, 1, NULL);
		/* local placement really reads the nodes remotely: the server sees one READ per
		 * VM_REMOTE_BLOCK of the 500 * 24 bytes of nodes (the read cache takes the rest) */
		uint64_t r0 = stat_of("read.requests"), e0 = stat_of("exec.requests");
		struct arc_exec e = { .seg = seg, .seg_len = len, .entry = "sum", .args = args, .n_args = 1 };
		int rc = arc_exec_local(a, &e);
		free(e.out);
		uint64_t r1 = stat_of("read.requests"), e1 = stat_of("exec.requests");
		CHECK(rc == 0 && r1 - r0 >= 500 * 24 / VM_REMOTE_BLOCK && e1 == e0, "local sum: rc %d, %llu READs, %llu EXECs",
		      rc, (unsigned long long)(r1 - r0), (unsigned long long)(e1 - e0));
		args[0] = 8;                                  /* not a node: a corrupt pointer */
		both("linked_list sum from a bad head", seg, len, "sum", args, 1, NULL);
		free(seg);
	}
	seg = assemble_file("examples/hash_table.pna", &len);
	if (seg) {
		for (int64_t k = 0; k < 40; k += 3) {
			int64_t args[1] = { k * 7 + (k % 2) };    /* half present, half absent */
			both("hash_table lookup", seg, len, "lookup", args, 1, NULL);
		}
		free(seg);
	}
	seg = assemble_file("examples/string_search.pna", &len);
	if (seg) {
		both("string_search lines", seg, len, "lines", NULL, 0, "the lazy dog");
		both("string_search count", seg, len, "count", NULL, 0, "fox");
		both("string_search offsets", seg, len, "offsets", NULL, 0, "over the");
		free(seg);
	}
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		seg = assemble_text(cases[i], &len);
		CHECK(seg != NULL, "case %zu assembles", i);
		if (seg) {
			char what[32];
			snprintf(what, sizeof what, "case %zu", i);
			both(what, seg, len, NULL, NULL, 0, NULL);
			free(seg);
		}
	}
	/* hooks are the server's: a segment importing one does not load here, and says why */
	seg = assemble_text(".hook now \":l\"\n.func main\n\thcall now\n\tret\n.end\n.export main\n", &len);
	if (seg) {
		struct arc_exec e = { .seg = seg, .seg_len = len };
		int rc = arc_exec_local(a, &e);
		CHECK(rc == -AR_ELOAD && strstr(arc_errmsg(a), "hook 'now'"), "local run of a hook user: %d %s", rc, arc_errmsg(a));
		free(e.out);
		rc = arc_exec(a, &e);
		CHECK(rc == 0 && e.value > 0, "the same on the server: %d", rc);
		free(e.out);
		free(seg);
	}
	arc_close(a);
	arfd_stop(s, 1000);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
