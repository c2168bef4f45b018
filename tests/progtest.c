/* progtest.c: the example programs of examples/ checked against C on the same data.
 *
 * Builds in C memory what each example expects in its region (a 10k-node linked list, a 100k-key
 * chained hash table, a text), binds it, assembles examples/<name>.pna, runs the entries for
 * many inputs, present and absent, and compares every answer with a C computation.  Also checks
 * the failure modes the examples document: a corrupt pointer traps 'bounds', a cycle runs out
 * of fuel, too much output traps 'output_full'.
 *
 *   progtest [EXAMPLES_DIR [PNO_DIR]]   (default: examples, as run from the top of the tree;
 *                                        PNO_DIR: also run the checks on the segments pncc
 *                                        made of examples/<name>.c, $(BUILD)/examples)
 *
 * Prints a line per failure and, last, "N passed, N failed"; exits 1 on any failure.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "isa.h"
#include "vm.h"

#define NODE_LEN      24        /* list and hash nodes: u64 next, u64 key, u64 value */
#define LIST_NODES    10000
#define HASH_KEYS     100000
#define HASH_BUCKETS  65536     /* a power of two; load factor about 1.5 */
#define HASH_MUL      0x9e3779b97f4a7c15ull   /* hash_table.pna's multiplier */
#define ABSENT_KEYS   20000
#define TEXT_LINES    6000

static const char *examples_dir = "examples";
static const char *pno_dir;     /* segments pncc made of examples/<name>.c, when given */
static int from_c;              /* load <pno_dir>/<name>.pno instead of assembling .pna */
static int n_pass, n_fail;

/* One check: a test passes or fails as a whole; detail says what went wrong first. */
static void check(int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		n_pass++;
		return;
	}
	n_fail++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "progtest: out of memory\n");
		exit(1);
	}
	return p;
}

/* splitmix64's finaliser: a bijection on u64, so distinct inputs give distinct keys (and
 * mix(0) == 0, which puts key 0 among the hash table's keys). */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_state = 20240601;
static uint64_t rng(void) { return mix(rng_state += 0x9e3779b97f4a7c15ull); }

static void shuffle(uint32_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rng() % i;
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* ---- loading and running examples */

static struct vm_prog *load_example(struct vm *vm, const char *name)
{
	char path[1024], err[512], *diags = NULL;
	uint8_t *seg = NULL;
	size_t seg_len = 0;
	struct vm_prog *prog = NULL;
	FILE *f;

	if (from_c) {
		void *bytes;
		snprintf(path, sizeof path, "%s/%s.pno", pno_dir, name);
		if (isa_read_file(path, &bytes, &seg_len) != 0) {
			check(0, name, "cannot read %s (made by make from examples/%s.c)", path, name);
			return NULL;
		}
		int rc = vm_load(vm, bytes, seg_len, &prog, err, sizeof err);
		check(rc == 0, name, "vm_load %s: %s: %s", path, vm_strerror(rc), err);
		free(bytes);
		return rc ? NULL : prog;
	}
	snprintf(path, sizeof path, "%s/%s.pna", examples_dir, name);
	f = fopen(path, "rb");
	if (!f) {
		check(0, name, "cannot open %s (run from the top of the tree or pass the dir)", path);
		return NULL;
	}
	static char src[1 << 16];
	size_t len = fread(src, 1, sizeof src, f);
	fclose(f);
	if (len == sizeof src) {
		check(0, name, "%s: larger than the %zu bytes progtest reads", path, sizeof src);
		return NULL;
	}
	int n_err = asm_assemble(src, len, path, &seg, &seg_len, &diags);
	check(n_err == 0, name, "%d assembly errors:\n%s", n_err, diags ? diags : "");
	free(diags);
	if (n_err)
		return NULL;
	int rc = vm_load(vm, seg, seg_len, &prog, err, sizeof err);
	check(rc == 0, name, "vm_load: %s: %s", vm_strerror(rc), err);
	free(seg);
	return rc ? NULL : prog;
}

struct run {
	const struct vm_prog *prog;
	const char *entry;
	struct vm_run_opts opts;
	struct vm_result res;
	char why[320];              /* how the last run went wrong, for messages */
};

/* Run r->entry with the given arguments.  Returns 0 when it returned a value (res.value),
 * -1 otherwise with r->why set (a trap leaves r->res.trap for the caller to inspect). */
static int run(struct run *r, unsigned n_args, ...)
{
	int64_t argv[8];
	unsigned entry_args;
	va_list ap;

	va_start(ap, n_args);
	for (unsigned i = 0; i < n_args; i++)
		argv[i] = va_arg(ap, int64_t);
	va_end(ap);
	memset(&r->res, 0, sizeof r->res);
	r->why[0] = 0;
	int entry = vm_prog_entry(r->prog, r->entry, &entry_args);
	if (entry < 0) {
		snprintf(r->why, sizeof r->why, "no entry '%s'", r->entry);
		return -1;
	}
	int rc = vm_run(r->prog, (unsigned)entry, argv, n_args, &r->opts, &r->res);
	if (rc == -VM_ETRAP) {
		char buf[256];
		snprintf(r->why, sizeof r->why, "%s", vm_trap_str(r->prog, &r->res.trap, buf,
		                                                   sizeof buf));
		return -1;
	}
	if (rc) {
		snprintf(r->why, sizeof r->why, "vm_run: %s", vm_strerror(rc));
		return -1;
	}
	return 0;
}

/* ---- linked_list.pna */

struct list {
	uint8_t *mem;
	size_t len;
	uint64_t head;
	uint64_t keys[LIST_NODES], values[LIST_NODES];  /* in list order */
};

/* Nodes at shuffled slots 1..n (slot 0 is the reserved null), linked in order 0..n-1. */
static void build_list(struct list *l)
{
	uint32_t *slot = xcalloc(LIST_NODES, sizeof *slot);

	for (uint32_t i = 0; i < LIST_NODES; i++)
		slot[i] = i + 1;
	shuffle(slot, LIST_NODES);
	l->len = (LIST_NODES + 1) * NODE_LEN;
	l->mem = xcalloc(1, l->len);
	for (size_t k = 0; k < LIST_NODES; k++) {
		l->keys[k] = mix(k + 1);
		l->values[k] = rng() >> 1;     /* never -1, the "absent" answer */
	}
	/* One duplicate key: find must return the value of its first node. */
	l->keys[LIST_NODES - 1] = l->keys[LIST_NODES / 2];
	for (size_t k = 0; k < LIST_NODES; k++) {
		uint8_t *node = l->mem + (size_t)slot[k] * NODE_LEN;
		isa_put64(node, k + 1 < LIST_NODES ? (uint64_t)slot[k + 1] * NODE_LEN : 0);
		isa_put64(node + 8, l->keys[k]);
		isa_put64(node + 16, l->values[k]);
	}
	l->head = (uint64_t)slot[0] * NODE_LEN;
	free(slot);
}

static void test_linked_list(void)
{
	static struct list l;
	struct vm *vm = vm_new();
	struct run r = { 0 };
	int rc;  /* runs happen before check(): argument evaluation order is unspecified */
	uint64_t sum = 0;
	int bad = 0;

	build_list(&l);
	if (!vm || vm_bind_region(vm, "mem", l.mem, l.len, ISA_ACC_RO)) {
		check(0, "linked_list", "cannot bind region mem");
		goto out;
	}
	r.prog = load_example(vm, "linked_list");
	if (!r.prog)
		goto out;

	r.entry = "find";
	for (size_t k = 0; k < LIST_NODES && !bad; k++) {
		uint64_t want = k == LIST_NODES - 1 ? l.values[LIST_NODES / 2] : l.values[k];
		if (run(&r, 2, (int64_t)l.head, (int64_t)l.keys[k]) || (uint64_t)r.res.value != want) {
			check(0, "linked_list find present", "node %zu key %#" PRIx64 ": got %" PRId64
			      " want %" PRIu64 " %s", k, l.keys[k], r.res.value, want, r.why);
			bad = 1;
		}
	}
	if (!bad)
		check(1, "linked_list find present", " ");
	bad = 0;
	for (uint64_t i = 0; i < ABSENT_KEYS / 10 && !bad; i++) {
		uint64_t key = mix(LIST_NODES + 1 + i);   /* mix is a bijection: never a list key */
		if (run(&r, 2, (int64_t)l.head, (int64_t)key) || r.res.value != -1) {
			check(0, "linked_list find absent", "key %#" PRIx64 ": got %" PRId64 " %s", key,
			      r.res.value, r.why);
			bad = 1;
		}
	}
	if (!bad)
		check(1, "linked_list find absent", " ");
	rc = run(&r, 2, (int64_t)0, (int64_t)l.keys[0]);
	check(rc == 0 && r.res.value == -1,
	      "linked_list find empty", "got %" PRId64 " %s", r.res.value, r.why);

	for (size_t k = 0; k < LIST_NODES; k++)
		sum += l.values[k];
	r.entry = "sum";
	rc = run(&r, 1, (int64_t)l.head);
	check(rc == 0 && (uint64_t)r.res.value == sum, "linked_list sum",
	      "got %" PRId64 " want %" PRIu64 " %s", r.res.value, sum, r.why);
	rc = run(&r, 1, (int64_t)0);
	check(rc == 0 && r.res.value == 0, "linked_list sum empty",
	      "got %" PRId64 " %s", r.res.value, r.why);
	r.entry = "length";
	rc = run(&r, 1, (int64_t)l.head);
	check(rc == 0 && r.res.value == LIST_NODES, "linked_list length",
	      "got %" PRId64 " %s", r.res.value, r.why);

	/* Failure modes the example documents: neither may do more than stop the run. */
	uint8_t *node = l.mem + l.head;
	uint64_t saved = isa_get64(node);
	isa_put64(node, l.len);                 /* next just past the end of the region */
	r.entry = "sum";
	rc = run(&r, 1, (int64_t)l.head);
	check(rc < 0 && r.res.trap.kind == ISA_TRAP_BOUNDS,
	      "linked_list corrupt next traps bounds", "got %" PRId64 ", %s", r.res.value,
	      r.why[0] ? r.why : "no trap");
	isa_put64(node, l.head);                /* a cycle of one node */
	r.opts.fuel = 5000;
	rc = run(&r, 1, (int64_t)l.head);
	check(rc < 0 && r.res.trap.kind == ISA_TRAP_FUEL,
	      "linked_list cycle runs out of fuel", "got %" PRId64 ", %s", r.res.value,
	      r.why[0] ? r.why : "no trap");
	isa_put64(node, saved);
	r.opts.fuel = 0;
	rc = run(&r, 1, (int64_t)l.head);
	check(rc == 0 && (uint64_t)r.res.value == sum,
	      "linked_list sum after repair", "got %" PRId64 " %s", r.res.value, r.why);
	vm_prog_free((struct vm_prog *)r.prog);
out:
	vm_free(vm);
	free(l.mem);
}

/* ---- hash_table.pna */

struct table {
	uint8_t *mem;
	size_t len;
	unsigned shift;
	uint64_t keys[HASH_KEYS], values[HASH_KEYS];
	uint32_t chain[HASH_BUCKETS];
};

static uint64_t hash_bucket(const struct table *t, uint64_t key)
{
	return (key * HASH_MUL) >> t->shift;
}

/* Buckets after the shift word; nodes after the buckets, each pushed on its chain's head. */
static void build_table(struct table *t)
{
	size_t node_off = 8 + 8 * (size_t)HASH_BUCKETS;

	memset(t->chain, 0, sizeof t->chain);   /* built again for the examples in C */
	t->shift = 64 - __builtin_ctz(HASH_BUCKETS);
	t->len = node_off + (size_t)HASH_KEYS * NODE_LEN;
	t->mem = xcalloc(1, t->len);
	isa_put64(t->mem, t->shift);
	for (size_t i = 0; i < HASH_KEYS; i++) {
		uint64_t b = hash_bucket(t, mix(i));
		uint8_t *node = t->mem + node_off + i * NODE_LEN;
		t->keys[i] = mix(i);            /* includes mix(0) == 0: key 0 is looked up too */
		t->values[i] = rng() >> 1;
		isa_put64(node, isa_get64(t->mem + 8 + 8 * b));
		isa_put64(node + 8, t->keys[i]);
		isa_put64(node + 16, t->values[i]);
		isa_put64(t->mem + 8 + 8 * b, node_off + i * NODE_LEN);
		t->chain[b]++;
	}
}

static void test_hash_table(void)
{
	static struct table t;
	struct vm *vm = vm_new();
	struct run r = { 0 };
	int rc;  /* runs happen before check(): argument evaluation order is unspecified */
	int bad = 0;

	build_table(&t);
	if (!vm || vm_bind_region(vm, "table", t.mem, t.len, ISA_ACC_RO)) {
		check(0, "hash_table", "cannot bind region table");
		goto out;
	}
	r.prog = load_example(vm, "hash_table");
	if (!r.prog)
		goto out;

	r.entry = "lookup";
	for (size_t i = 0; i < HASH_KEYS && !bad; i++)
		if (run(&r, 1, (int64_t)t.keys[i]) || (uint64_t)r.res.value != t.values[i]) {
			check(0, "hash_table lookup present", "key %#" PRIx64 ": got %" PRId64
			      " want %" PRIu64 " %s", t.keys[i], r.res.value, t.values[i], r.why);
			bad = 1;
		}
	if (!bad)
		check(1, "hash_table lookup present", " ");
	bad = 0;
	for (uint64_t i = 0; i < ABSENT_KEYS && !bad; i++) {
		uint64_t key = mix(HASH_KEYS + i);
		if (run(&r, 1, (int64_t)key) || r.res.value != -1) {
			check(0, "hash_table lookup absent", "key %#" PRIx64 ": got %" PRId64 " %s", key,
			      r.res.value, r.why);
			bad = 1;
		}
	}
	if (!bad)
		check(1, "hash_table lookup absent", " ");
	rc = run(&r, 1, (int64_t)-1);
	check(rc == 0 && r.res.value == -1, "hash_table lookup all-ones key",
	      "got %" PRId64 " %s", r.res.value, r.why);

	r.entry = "chain";
	bad = 0;
	for (size_t i = 0; i < HASH_KEYS && !bad; i += 7) {
		uint64_t want = t.chain[hash_bucket(&t, t.keys[i])];
		if (run(&r, 1, (int64_t)t.keys[i]) || (uint64_t)r.res.value != want) {
			check(0, "hash_table chain", "key %#" PRIx64 ": got %" PRId64 " want %" PRIu64
			      " %s", t.keys[i], r.res.value, want, r.why);
			bad = 1;
		}
	}
	if (!bad)
		check(1, "hash_table chain", " ");
	vm_prog_free((struct vm_prog *)r.prog);
out:
	vm_free(vm);
	free(t.mem);
}

/* ---- string_search.pna */

static char *make_text(size_t *len)
{
	static const char *const words[] = {
		"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
		"kappa", "lambda", "mu", "aaa", "banana", "needle", "hay", "stack", "x",
	};
	const size_t n_words = sizeof words / sizeof words[0];
	size_t cap = TEXT_LINES * 100 + 64, n = 0;
	char *s = xcalloc(1, cap);

	n += (size_t)sprintf(s + n, "needle at the very start\n");
	for (int line = 0; line < TEXT_LINES; line++) {
		int n_w = (int)(rng() % 12);    /* some lines are empty */
		for (int w = 0; w < n_w; w++)
			n += (size_t)sprintf(s + n, "%s%s", w ? " " : "", words[rng() % n_words]);
		s[n++] = '\n';
	}
	/* The last line has no '\n' and ends with a match: the last byte of the region. */
	n += (size_t)sprintf(s + n, "last line ends in needle");
	*len = n;
	return s;
}

/* C reference: offsets of every occurrence, overlapping ones included, as u64 LE bytes. */
static size_t ref_offsets(const char *text, size_t len, const char *needle, uint8_t *out)
{
	size_t nlen = strlen(needle), count = 0;

	if (!nlen)
		return 0;
	for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), needle, nlen)); p++)
		isa_put64(out + 8 * count++, (uint64_t)(p - text));
	return count;
}

/* C reference for lines(), as string_search.pna defines it: every line in which an occurrence
 * starts, once, with its '\n' if it has one.  For a needle without '\n' these are exactly the
 * lines containing it (grep -F); an empty needle occurs at every line start. */
static size_t ref_lines(const char *text, size_t len, const char *needle, char *out,
                        size_t *out_len)
{
	size_t nlen = strlen(needle), count = 0, o = 0;
	const char *m = memmem(text, len, needle, nlen);

	for (size_t s = 0; s < len && m;) {
		const char *nl = memchr(text + s, '\n', len - s);
		size_t e = nl ? (size_t)(nl - text) + 1 : len;
		if ((size_t)(m - text) < s)
			m = memmem(text + s, len - s, needle, nlen);
		if (m && (size_t)(m - text) < e) {
			memcpy(out + o, text + s, e - s);
			o += e - s;
			count++;
		}
		s = e;
	}
	*out_len = o;
	return count;
}

static void test_string_search(void)
{
	static const char *const needles[] = {
		"needle", "alpha", "aa", "a", "x", "eta", "banana\nneedle", "at the very start\n",
		"not there", "kappa lambda", "",
	};
	size_t len;
	char *text = make_text(&len);
	struct vm *vm = vm_new();
	struct run r = { 0 };
	int rc;  /* runs happen before check(): argument evaluation order is unspecified */
	size_t cap = len * 8 + 8;           /* enough for an offset per byte */
	uint8_t *out = xcalloc(1, cap), *want = xcalloc(1, cap);

	if (!vm || vm_bind_region(vm, "text", text, len, ISA_ACC_RO)) {
		check(0, "string_search", "cannot bind region text");
		goto out;
	}
	r.prog = load_example(vm, "string_search");
	if (!r.prog)
		goto out;
	r.opts.out = out;
	r.opts.out_cap = cap;

	for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) {
		const char *nd = needles[i];
		char name[96];
		size_t count = ref_offsets(text, len, nd, want), want_len;

		r.opts.args = nd;
		r.opts.args_len = strlen(nd);
		snprintf(name, sizeof name, "string_search needle %zu (%zu bytes)", i, strlen(nd));

		r.entry = "count";
		rc = run(&r, 0);
		check(rc == 0 && (uint64_t)r.res.value == count && r.res.out_len == 0, name,
		      "count: got %" PRId64 " want %zu %s", r.res.value, count, r.why);
		r.entry = "offsets";
		rc = run(&r, 0);
		check(rc == 0 && (uint64_t)r.res.value == count &&
		      r.res.out_len == 8 * count && memcmp(out, want, 8 * count) == 0, name,
		      "offsets: got %" PRId64 " (%" PRIu64 " bytes) want %zu %s", r.res.value,
		      r.res.out_len, count, r.why);
		count = ref_lines(text, len, nd, (char *)want, &want_len);
		r.entry = "lines";
		rc = run(&r, 0);
		check(rc == 0 && (uint64_t)r.res.value == count &&
		      r.res.out_len == want_len && memcmp(out, want, want_len) == 0, name,
		      "lines: got %" PRId64 " (%" PRIu64 " bytes) want %zu (%zu bytes) %s",
		      r.res.value, r.res.out_len, count, want_len, r.why);
	}

	/* Output beyond the caller's limit stops the run; what fit stays valid. */
	r.opts.args = "a";
	r.opts.args_len = 1;
	r.opts.out_cap = 80;
	r.entry = "offsets";
	ref_offsets(text, len, "a", want);
	rc = run(&r, 0);
	check(rc < 0 && r.res.trap.kind == ISA_TRAP_OUTPUT_FULL && r.res.out_len <= 80 &&
	      memcmp(out, want, r.res.out_len) == 0, "string_search output_full",
	      "got %" PRId64 " (%" PRIu64 " bytes), %s", r.res.value, r.res.out_len,
	      r.why[0] ? r.why : "no trap");
	vm_prog_free((struct vm_prog *)r.prog);
out:
	vm_free(vm);
	free(out);
	free(want);
	free(text);
}

/* ---- local_sort.c (C only: its arrays live on the stack, in the frame region) */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_local_sort(void)
{
	struct vm *vm = vm_new();
	struct run r = { 0 };
	uint8_t in[300], out[300], want[300];
	int rc;

	r.prog = vm ? load_example(vm, "local_sort") : NULL;
	if (!r.prog)
		goto out;
	r.opts.out = out;
	r.opts.out_cap = sizeof out;
	for (int round = 0; round < 200; round++) {
		size_t n = round < 3 ? (size_t)round : rng() % sizeof in;
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(round % 2 ? 'a' + rng() % 4 : rng());
		r.opts.args = in;
		r.opts.args_len = n;
		size_t nr = n < 256 ? n : 256, nw = n / 8 < 32 ? n / 8 : 32;
		for (size_t i = 0; i < nr; i++)
			want[i] = in[nr - 1 - i];
		r.entry = "reverse";
		rc = run(&r, 0);
		check(rc == 0 && (size_t)r.res.value == nr && r.res.out_len == nr &&
		      memcmp(out, want, nr) == 0, "local_sort reverse", "round %d: %zu bytes, got %"
		      PRId64 " (%" PRIu64 " bytes) %s", round, n, r.res.value, r.res.out_len, r.why);
		memcpy(want, in, 8 * nw);
		if (round % 3 == 0)
			for (size_t i = 0; i < nw; i++)      /* many equal keys */
				memset(want + 8 * i, (int)(rng() % 3), 8);
		memcpy(in, want, 8 * nw);
		qsort(want, nw, 8, cmp_u64);
		r.entry = "sort";
		rc = run(&r, 0);
		check(rc == 0 && (size_t)r.res.value == nw && r.res.out_len == 8 * nw &&
		      memcmp(out, want, 8 * nw) == 0, "local_sort sort", "round %d: %zu words, got %"
		      PRId64 " (%" PRIu64 " bytes) %s", round, nw, r.res.value, r.res.out_len, r.why);
	}
	vm_prog_free((struct vm_prog *)r.prog);
out:
	vm_free(vm);
}

int main(int argc, char **argv)
{
	if (argc > 3 || (argc >= 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: progtest [EXAMPLES_DIR [PNO_DIR]]\n");
		return 2;
	}
	if (argc >= 2)
		examples_dir = argv[1];
	if (argc == 3)
		pno_dir = argv[2];
	test_linked_list();
	test_hash_table();
	test_string_search();
	if (pno_dir) {
		/* the same checks on the same data, through the examples written in C */
		printf("examples in C (pncc segments from %s)\n", pno_dir);
		from_c = 1;
		rng_state = 20240601;
		test_linked_list();
		test_hash_table();
		test_string_search();
		test_local_sort();
	}
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
