/* test_arf_opsdiff.c: ARF's namespace segment in C (arf/ops.c) against the assembly it is to
 * replace (arf/ops.pna), differentially, as test_arf_datadiff does for the data segment.
 * Both sides run in one process on the VM over private copies of one fresh image (mkfs, then
 * attach).  The C side loads both segments: an export already in ops.c runs there, one not
 * yet moved runs on the C side's copy of ops.pna, so random sequences can use every export
 * while the checks cover the ones done.  `now` is a counter (the same on both sides).  Every
 * operation runs on both with the same arguments and bytes, on the interpreter or the JIT
 * alternately, and must give the same result, trap kind (user trap code too), output bytes
 * and image bytes afterwards:
 *   - a table of hostile and edge calls (bad inode numbers, paths with dots, slashes, NUL
 *     bytes, names and paths too long, symlinks and files inside a path, readlink of every
 *     kind of inode);
 *   - directories of several blocks read in batches of every size (cookies handed back,
 *     and cookies next to them), whole walks in batches (frames handed back) over a chain
 *     deeper than walk's frames, hostile readdir and walk arguments;
 *   - mkdir/mknod: hostile names, setgid directories, hostile modes, a busy journal, locked
 *     and stale-locked directories, EMLINK, ENOSPC for blocks and for inodes;
 *   - unlink/rmdir: hostile names, every kind of inode freed (long symlink, grown
 *     directory, hard links), locked children, a busy journal;
 *   - symlink/link: name/target splits, the inline limit, hostile numbers, EPERM, EMLINK,
 *     locks, ENOSPC for target and directory blocks;
 *   - rename: every rule (replace, exchange, NOREPLACE, subtree checks, same inode, types,
 *     ENOTEMPTY), hostile flags and lengths, the rename lock and others, EMLINK, ENOSPC;
 *   - random sequences of every export over a growing tree (names from a small pool, so
 *     creates collide and lookups find), with hostile numbers now and then; arf_fsck must find
 *     the image clean afterwards;
 *   - a damaged image: directory tables, records, blocks, parents and symlinks overwritten
 *     with hostile values in both copies, then lookups, getattrs, readlinks, readdirs and
 *     walks on it.
 * Segment paths: $OPS_C_SEG and $OPS_ASM_SEG, else build/arfseg/ops.pno (what ARF installs)
 * and build/arfseg/ops_asm.pno (the reference); OPSDIFF_OPS=N random operations
 * (default 3000).  Prints per export how many runs compared C with asm, then "N passed, N
 * failed" last.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"

#include "arf.h"
#include "isa.h"
#include "vm.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

#define IMG_SIZE (16u << 20)
#define OUT_CAP (1u << 20)

/* ---- the exports of ops.pna, with their argument counts ---- */

#define OPS(X) \
	X(LOOKUP, lookup, 1) X(GETATTR, getattr, 1) X(MKDIR, mkdir, 4) X(MKNOD, mknod, 5) \
	X(READDIR, readdir, 3) X(UNLINK, unlink, 1) X(RMDIR, rmdir, 1) X(SYMLINK, symlink, 4) \
	X(READLINK, readlink, 1) X(LINK, link, 2) X(RENAME, rename, 4) \
	X(LOOKUPATTR, lookupattr, 1) X(MKDIRATTR, mkdirattr, 4) X(MKNODATTR, mknodattr, 5) \
	X(SYMLINKATTR, symlinkattr, 4) X(LINKATTR, linkattr, 2) X(READDIRPLUS, readdirplus, 3) \
	X(WALK, walk, 3)
#define ENUM(e, n, a) e,
enum dop { OPS(ENUM) N_OPS };
#define NAME(e, n, a) #n,
static const char *const op_name[] = { OPS(NAME) };
#define NARGS(e, n, a) a,
static const unsigned op_args[] = { OPS(NARGS) };

/* ---- one side: its VM, its copy of the image, its segments' entries ---- */

struct side {
	const char *name;
	struct vm *vm;
	struct vm_prog *prog[2];   /* [0] the segment compared, [1] the C side's ops.pna */
	int entry[N_OPS][2];       /* -1: not in that segment */
	uint8_t *img;
	uint8_t *out;
	int64_t clock;
};

static struct side sides[2];
static unsigned n_compared[N_OPS], n_run[N_OPS];

static int64_t h_now(struct vm_hook_ctx *ctx)
{
	struct side *s = vm_hook_user(ctx);
	return s->clock += 1000;
}

static int load(struct side *s, const char *path, struct vm_prog **prog)
{
	char err[512];
	void *seg = NULL;
	size_t seg_len = 0;
	if (isa_read_file(path, &seg, &seg_len) != 0) {
		CHECK(0, "%s: cannot read %s", s->name, path);
		return -1;
	}
	int rc = vm_load(s->vm, seg, seg_len, prog, err, sizeof err);
	free(seg);
	CHECK(rc == 0, "%s: vm_load %s: %s", s->name, path, err);
	return rc;
}

static int side_open(struct side *s, const char *name, const char *seg, const char *fallback,
                     const uint8_t *img)
{
	s->name = name;
	s->img = mmap(NULL, IMG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s->out = malloc(OUT_CAP);
	s->vm = vm_new();
	if (s->img == MAP_FAILED || !s->out || !s->vm) {
		CHECK(0, "%s: out of memory", name);
		return -1;
	}
	memcpy(s->img, img, IMG_SIZE);
	if (vm_bind_region(s->vm, "arf", s->img, IMG_SIZE, ISA_ACC_RW) ||
	    vm_bind_hook(s->vm, "now", (void *)h_now, ":l", s)) {
		CHECK(0, "%s: cannot set up the vm", name);
		return -1;
	}
	if (load(s, seg, &s->prog[0]) || (fallback && load(s, fallback, &s->prog[1])))
		return -1;
	for (int o = 0; o < N_OPS; o++) {
		for (int k = 0; k < 2; k++) {
			unsigned n = 0;
			int e = s->prog[k] ? vm_prog_entry(s->prog[k], op_name[o], &n) : -1;
			CHECK(e < 0 || n == op_args[o], "%s: %s takes %u arguments, not %u", name,
			      op_name[o], n, op_args[o]);
			s->entry[o][k] = e >= 0 && n == op_args[o] ? e : -1;
		}
	}
	return 0;
}

static void side_close(struct side *s)
{
	for (int k = 0; k < 2; k++)
		if (s->prog[k])
			vm_prog_free(s->prog[k]);
	if (s->vm)
		vm_free(s->vm);
	if (s->img && s->img != MAP_FAILED)
		munmap(s->img, IMG_SIZE);
	free(s->out);
}

/* ---- one operation on both sides ---- */

struct result {
	int rc;
	struct vm_result res;
};

static unsigned n_ops;
static int n_diffs;
static unsigned seen[N_OPS][130];      /* C side's answers: >0, 0, errnos, [128] traps */
static uint64_t last_out_len;          /* the C side's output of the last do_op: sides[0].out */

static void run_side(struct side *s, enum dop op, const int64_t *a, const void *bytes,
                     size_t len, int engine, struct result *r)
{
	int k = s->entry[op][0] >= 0 ? 0 : 1;
	int entry = s->entry[op][k];
	memset(&r->res, 0, sizeof r->res);
	if (entry < 0) {
		r->rc = -1000;
		return;
	}
	struct vm_run_opts o = { .args = bytes, .args_len = len, .out = s->out, .out_cap = OUT_CAP,
	                         .engine = engine };
	r->rc = vm_run(s->prog[k], (unsigned)entry, a, op_args[op], &o, &r->res);
}

/* Run op on both sides and compare everything; returns the C side's result (INT64_MIN for
 * a trap). */
static int64_t do_op(enum dop op, const int64_t *a, const void *bytes, size_t len)
{
	struct result r[2];
	int engine = n_ops % 2 ? VM_ENGINE_JIT : VM_ENGINE_INTERP;
	int first = n_ops++ / 2 % 2;
	for (int kk = 0; kk < 2; kk++)
		run_side(&sides[kk ^ first], op, a, bytes, len, engine, &r[kk ^ first]);
	n_run[op]++;
	if (sides[0].entry[op][0] >= 0)
		n_compared[op]++;
	char what[200];
	snprintf(what, sizeof what, "op %u %s(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	         ", ...) %zu bytes '%.*s' (%s)", n_ops, op_name[op], a[0], a[1], a[2], a[3], len,
	         (int)(len < 40 ? len : 40), bytes ? (const char *)bytes : "",
	         vm_engine_name(engine));
	const struct vm_result *c = &r[0].res, *s = &r[1].res;
	int same = r[0].rc == r[1].rc && c->trap.kind == s->trap.kind &&
	           (c->trap.kind != ISA_TRAP_USER || c->trap.code == s->trap.code) &&
	           (r[0].rc != 0 || c->value == s->value) && c->out_len == s->out_len &&
	           memcmp(sides[0].out, sides[1].out, c->out_len) == 0;
	CHECK(same, "%s: C rc %d value %" PRId64 " trap %s out %" PRIu64 "; asm rc %d value %" PRId64
	      " trap %s out %" PRIu64, what, r[0].rc, c->value, isa_trap_name(c->trap.kind),
	      c->out_len, r[1].rc, s->value, isa_trap_name(s->trap.kind), s->out_len);
	int img_same = memcmp(sides[0].img, sides[1].img, IMG_SIZE) == 0;
	if (!img_same) {
		size_t i = 0;
		while (sides[0].img[i] == sides[1].img[i])
			i++;
		CHECK(0, "%s: images differ first at byte %zu (block %zu +%zu): C %02x asm %02x", what,
		      i, i / ARF_BLOCK_SIZE, i % ARF_BLOCK_SIZE, sides[0].img[i], sides[1].img[i]);
		memcpy(sides[1].img, sides[0].img, IMG_SIZE);
	} else {
		passed++;
	}
	if (!same || !img_same)
		n_diffs++;
	int64_t v = r[0].rc == 0 ? c->value : INT64_MIN;
	last_out_len = c->out_len;
	seen[op][r[0].rc ? 128 : v > 0 ? 129 : v == 0 ? 0 : v >= -127 ? -v : 128]++;
	return v;
}

static int64_t op5(enum dop op, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4,
                   const void *bytes, size_t len)
{
	int64_t a[5] = { a0, a1, a2, a3, a4 };
	return do_op(op, a, bytes, len);
}

static int64_t ops(enum dop op, int64_t a0, const char *s)
{
	return op5(op, a0, 0, 0, 0, 0, s, strlen(s));
}

/* ---- the image ---- */

static uint64_t n_inodes, itable;

static uint64_t ino_off(uint64_t ino)
{
	return itable + ino * ARF_INO_SIZE;
}

static void poke(uint64_t off, uint64_t v, unsigned size)
{
	for (int k = 0; k < 2; k++)
		memcpy(sides[k].img + off, &v, size);
}

static uint64_t peek(uint64_t off, unsigned size)
{
	uint64_t v = 0;
	memcpy(&v, sides[0].img + off, size);
	return v;
}

static uint8_t *make_image(const char *dir)
{
	char err[512], path[300];
	snprintf(path, sizeof path, "%s/fresh.img", dir);
	if (arf_mkfs(path, IMG_SIZE, 0, err, sizeof err) != 0) {
		CHECK(0, "mkfs: %s", err);
		return NULL;
	}
	uint8_t *img = malloc(IMG_SIZE);
	int fd = open(path, O_RDONLY);
	int ok = img && fd >= 0 && pread(fd, img, IMG_SIZE, 0) == (ssize_t)IMG_SIZE;
	if (fd >= 0)
		close(fd);
	unlink(path);
	struct arf_attach_info info;
	if (!ok || arf_attach(img, IMG_SIZE, &info, err, sizeof err) != 0) {
		CHECK(0, "attach: %s", ok ? err : "cannot read the image");
		free(img);
		return NULL;
	}
	return img;
}

static int n_report;
static void report(void *user, enum arf_fsck_line kind, const char *line)
{
	(void)user;
	if (kind == ARF_FSCK_PROBLEM && n_report++ < 5)
		printf("  fsck: %s\n", line);
}

static void fsck_side(const char *what)
{
	uint8_t *copy = malloc(IMG_SIZE);
	if (!copy)
		return;
	memcpy(copy, sides[0].img, IMG_SIZE);
	struct arf_fsck_opts o = { .report = report };
	struct arf_fsck_result r;
	n_report = 0;
	int rc = arf_fsck_mem(copy, IMG_SIZE, &o, false, &r);
	CHECK(rc == ARF_FSCK_CLEAN, "%s: fsck of the C side's image not clean (%d, %" PRIu64
	      " problems)", what, rc, r.problems);
	free(copy);
}

/* ---- phases ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static uint64_t below(uint64_t n) { return n ? next_rand() % n : 0; }

static int64_t d1, d2, f1, l_in, l_blk, p1;   /* made by test_table */

/* Hostile and edge calls, each row one operation. */
struct row {
	enum dop op;
	int64_t a[5];
	const char *s;             /* the args bytes (a string: its length) */
	int64_t want;              /* INT64_MIN: whatever they agree */
};

static void test_table(void)
{
	const int64_t any = INT64_MIN, R = ARF_INO_ROOT;
	char long_target[1000], name255[256], name256[257], path4095[4096], path4096[4097];
	memset(long_target, 't', sizeof long_target - 1);
	long_target[sizeof long_target - 1] = 0;
	memset(name255, 'n', 255);
	name255[255] = 0;
	memset(name256, 'n', 256);
	name256[256] = 0;
	for (int i = 0; i < 4096; i++)
		path4096[i] = i % 2 ? '/' : '.';
	path4096[4096] = 0;
	memcpy(path4095, path4096, 4095);
	path4095[4095] = 0;

	/* a small tree: /d1/d2, /d1/f1, /l (inline), /lb (a block), /p (fifo), /d1/n255 */
	d1 = ops(MKDIR, R, "d1");
	CHECK(d1 > 0, "mkdir d1: %" PRId64, d1);
	d2 = op5(MKDIR, d1, 0755, 1, 2, 0, "d2", 2);
	f1 = op5(MKNOD, d1, 0100644, 3, 4, 0, "f1", 2);
	p1 = op5(MKNOD, R, 010600, 0, 0, 0, "p", 1);
	char sl[300];
	int n = snprintf(sl, sizeof sl, "l%s", "d1/f1");
	l_in = op5(SYMLINK, R, 1, 0, 0, 0, sl, (size_t)n);
	char *lb = malloc(2 + sizeof long_target);
	if (!lb)
		return;
	n = snprintf(lb, 2 + sizeof long_target, "lb%s", long_target);
	l_blk = op5(SYMLINK, R, 2, 0, 0, 0, lb, (size_t)n);
	free(lb);
	int64_t n255 = op5(MKNOD, d1, 0100600, 0, 0, 0, name255, 255);
	CHECK(d2 > 0 && f1 > 0 && p1 > 0 && l_in > 0 && l_blk > 0 && n255 > 0,
	      "making the tree: %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
	      d2, f1, p1, l_in, l_blk, n255);

	const int64_t big = (int64_t)n_inodes;
	const struct row rows[] = {
		/* lookup */
		{ LOOKUP, { R }, "d1", d1 },
		{ LOOKUP, { R }, "d1/d2", d2 },
		{ LOOKUP, { R }, "/d1//d2/", d2 },
		{ LOOKUP, { R }, "d1/./d2/.", d2 },
		{ LOOKUP, { R }, "d1/d2/..", d1 },
		{ LOOKUP, { R }, "d1/d2/../../..", R },          /* the root's parent: itself */
		{ LOOKUP, { R }, "", R },
		{ LOOKUP, { R }, "/", R },
		{ LOOKUP, { R }, "////", R },
		{ LOOKUP, { R }, ".", R },
		{ LOOKUP, { d2 }, "..", d1 },
		{ LOOKUP, { d1 }, "f1", f1 },
		{ LOOKUP, { d1 }, "f1/", -ENOTDIR },             /* a trailing slash wants a directory */
		{ LOOKUP, { d1 }, "f1/x", -ENOTDIR },
		{ LOOKUP, { d1 }, "f1/.", -ENOTDIR },
		{ LOOKUP, { R }, "l", l_in },
		{ LOOKUP, { R }, "l/x", -ELOOP },
		{ LOOKUP, { R }, "lb/", -ELOOP },
		{ LOOKUP, { R }, "lb/..", -ELOOP },
		{ LOOKUP, { R }, "p/x", -ENOTDIR },
		{ LOOKUP, { R }, "nope", -ENOENT },
		{ LOOKUP, { R }, "d1/nope/x", -ENOENT },
		{ LOOKUP, { R }, "d", -ENOENT },
		{ LOOKUP, { R }, "d1x", -ENOENT },
		{ LOOKUP, { R }, "...", -ENOENT },
		{ LOOKUP, { d1 }, name255, n255 },
		{ LOOKUP, { d1 }, name256, -ENAMETOOLONG },
		{ LOOKUP, { R }, path4095, R },
		{ LOOKUP, { R }, path4096, -ENAMETOOLONG },
		{ LOOKUP, { 0 }, "d1", -EINVAL },
		{ LOOKUP, { -1 }, "d1", -EINVAL },
		{ LOOKUP, { INT64_MIN }, "d1", -EINVAL },
		{ LOOKUP, { big }, "", -EINVAL },
		{ LOOKUP, { big - 1 }, "", -ENOENT },              /* a free inode */
		{ LOOKUP, { f1 }, "", -ENOTDIR },
		{ LOOKUP, { l_in }, "x", -ENOTDIR },
		{ LOOKUP, { ARF_INO_LOSTFOUND }, "..", R },
		/* getattr */
		{ GETATTR, { R }, "", R },
		{ GETATTR, { d1 }, "", d1 },
		{ GETATTR, { f1 }, "", f1 },
		{ GETATTR, { l_blk }, "", l_blk },
		{ GETATTR, { p1 }, "", p1 },
		{ GETATTR, { 0 }, "", -EINVAL },
		{ GETATTR, { -1 }, "", -EINVAL },
		{ GETATTR, { big }, "", -EINVAL },
		{ GETATTR, { big - 1 }, "", -ENOENT },
		/* readlink */
		{ READLINK, { l_in }, "", 5 },
		{ READLINK, { l_blk }, "", (int64_t)strlen(long_target) },
		{ READLINK, { f1 }, "", -EINVAL },
		{ READLINK, { d1 }, "", -EINVAL },
		{ READLINK, { p1 }, "", -EINVAL },
		{ READLINK, { 0 }, "", -EINVAL },
		{ READLINK, { big }, "", -EINVAL },
		{ READLINK, { -7 }, "", -EINVAL },
		{ READLINK, { big - 1 }, "", -ENOENT },
		/* lookupattr */
		{ LOOKUPATTR, { R }, "d1/f1", f1 },
		{ LOOKUPATTR, { R }, "l", l_in },
		{ LOOKUPATTR, { R }, "nope", -ENOENT },
		{ LOOKUPATTR, { 0 }, "", -EINVAL },
		{ LOOKUPATTR, { R }, "l/", -ELOOP },
		{ LOOKUPATTR, { R }, "", R },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *w = &rows[i];
		int64_t v = ops(w->op, w->a[0], w->s);
		if (w->want != any)
			CHECK(v == w->want, "table row %zu: %s(%" PRId64 ", '%.20s') = %" PRId64 ", want %"
			      PRId64, i, op_name[w->op], w->a[0], w->s, v, w->want);
	}
	/* NUL and '/' inside a name looked up: a NUL is just a byte that matches no name */
	op5(LOOKUP, R, 0, 0, 0, 0, "d1\0f1", 5);
	op5(LOOKUP, d1, 0, 0, 0, 0, "f1\0", 3);
	op5(LOOKUPATTR, R, 0, 0, 0, 0, "\0", 1);
}

/* Names from a small pool (so creates collide and lookups find), now and then odd ones. */
static const char *const pool[] = { "a", "b", "c", "dd", "x.txt", "long-name-of-a-file",
                                    "Z", "q1", "q2", "q3", ".", "..", "...", "a b" };
#define N_POOL (sizeof pool / sizeof pool[0])

#define MAX_KNOWN 512
static int64_t known[MAX_KNOWN];   /* inode numbers seen (dirs among them) */
static unsigned n_known;

static void remember(int64_t ino)
{
	if (ino > 0)
		known[n_known < MAX_KNOWN ? n_known++ : below(MAX_KNOWN)] = ino;
}

static int64_t some_ino(void)
{
	if (below(25) == 0) {
		const int64_t odd[] = { 0, -1, INT64_MIN, (int64_t)n_inodes, (int64_t)n_inodes - 1,
		                        (int64_t)n_inodes + 1, (int64_t)next_rand() };
		return odd[below(sizeof odd / sizeof odd[0])];
	}
	return n_known && below(4) ? known[below(n_known)] : ARF_INO_ROOT;
}

/* A path of 0..4 components from the pool, slashes doubled or trailing now and then. */
static size_t some_path(char *p, size_t cap)
{
	size_t len = 0;
	unsigned n = (unsigned)below(5);
	if (below(8) == 0)
		p[len++] = '/';
	for (unsigned i = 0; i < n && len + 40 < cap; i++) {
		if (i)
			for (unsigned k = 0, m = below(6) ? 1 : 2; k < m; k++)
				p[len++] = '/';
		const char *c = pool[below(N_POOL)];
		memcpy(p + len, c, strlen(c));
		len += strlen(c);
	}
	if (below(10) == 0)
		p[len++] = '/';
	return len;
}

static void test_random(unsigned count)
{
	char b[1200];
	for (unsigned i = 0; i < count; i++) {
		int64_t dir = some_ino(), ino = some_ino();
		const char *nm = pool[below(N_POOL)];
		size_t nl = strlen(nm);
		int64_t v;
		switch (below(20)) {
		case 0: case 1: case 2: case 3: {
			size_t len = some_path(b, sizeof b);
			v = op5(below(3) ? LOOKUP : LOOKUPATTR, dir, 0, 0, 0, 0, b, len);
			remember(v);
			break;
		}
		case 4: case 5:
			op5(below(2) ? GETATTR : READLINK, ino, 0, 0, 0, 0, NULL, 0);
			break;
		case 6: case 7:
			remember(op5(below(2) ? MKDIR : MKDIRATTR, dir, (int64_t)below(07777),
			             (int64_t)below(3), (int64_t)below(3), 0, nm, nl));
			break;
		case 8: case 9: {
			static const int64_t types[] = { 0100000, 0010000, 0020000, 0060000, 0140000,
			                                 0040000, 0120000, 0 };
			remember(op5(below(2) ? MKNOD : MKNODATTR, dir,
			             types[below(sizeof types / sizeof types[0])] | (int64_t)below(07777),
			             1, 2, (int64_t)next_rand(), nm, nl));
			break;
		}
		case 10: {
			size_t tl = below(4) ? below(60) + 1 : below(1000) + 1;
			memcpy(b, nm, nl);
			for (size_t k = 0; k < tl; k++)
				b[nl + k] = (char)('a' + below(26));
			remember(op5(below(2) ? SYMLINK : SYMLINKATTR, dir, (int64_t)nl, 5, 6, 0, b, nl + tl));
			break;
		}
		case 11:
			op5(below(2) ? LINK : LINKATTR, ino, dir, 0, 0, 0, nm, nl);
			break;
		case 12: case 13:
			op5(below(2) ? UNLINK : RMDIR, dir, 0, 0, 0, 0, nm, nl);
			break;
		case 14: case 15: {
			const char *n2 = pool[below(N_POOL)];
			memcpy(b, nm, nl);
			memcpy(b + nl, n2, strlen(n2));
			op5(RENAME, dir, below(2) ? dir : some_ino(), (int64_t)nl, below(4) ? (int64_t)below(3) : (int64_t)below(8), 0, b,
			    nl + strlen(n2));
			break;
		}
		case 16: case 17:
			op5(below(2) ? READDIR : READDIRPLUS, dir, below(4) ? 0 : (int64_t)below(9000),
			    (int64_t)below(40), 0, 0, NULL, 0);
			break;
		default: {
			uint64_t fr[2] = { (uint64_t)dir, 0 };
			op5(WALK, 1, (int64_t)below(200), (int64_t)below(8000), 0, 0, fr, sizeof fr);
			break;
		}
		}
		if (n_diffs > 20) {
			printf("test_arf_opsdiff: more than 20 differences, stopping the random phase\n");
			break;
		}
	}
}

static int64_t g_ino;                 /* test_mk's setgid directory */
static int64_t big_ino;               /* test_dirs' directory of 400 entries */
static unsigned n_deep, n_err;        /* walk entries of those types seen */

static uint64_t out64(uint64_t off)
{
	uint64_t v = 0;
	if (off + 8 <= last_out_len)
		memcpy(&v, sides[0].out + off, 8);
	return v;
}

/* readdir of dir in batches of max, each from the cookie the last one gave (and a few
 * cookies next to it, mostly no record boundary); readdirplus the same.  Returns entries. */
static int64_t list_dir(int64_t dir, int64_t max)
{
	int64_t total = 0;
	for (int plus = 0; plus < 2; plus++) {
		uint64_t cookie = 0;
		for (int batch = 0; batch < 2000; batch++) {
			int64_t v = op5(plus ? READDIRPLUS : READDIR, dir, (int64_t)cookie, max, 0, 0, NULL, 0);
			if (v < 0)
				break;
			total += plus ? 0 : v;
			cookie = out64(0);
			if (cookie == 0)
				break;
			if (batch % 5 == 0) {
				const int64_t near[] = { -1, 1, 8, -8, 4096, -4096, 24, 280 };
				op5(READDIR, dir, (int64_t)cookie + near[below(8)], max, 0, 0, NULL, 0);
			}
		}
	}
	return total;
}

/* A whole walk from frame { start, 0 }, each batch going on from the frames the last one
 * gave (a DEEP directory is walked anew, as the client does, up to a few). */
static int64_t walk_all(int64_t start, int64_t max, int64_t soft)
{
	uint64_t fr[2 * ARF_WALK_FRAMES] = { (uint64_t)start, 0 };
	uint64_t nf = 1;
	int64_t total = 0;
	for (int batch = 0; batch < 5000 && nf; batch++) {
		int64_t v = op5(WALK, (int64_t)nf, max, soft, 0, 0, fr, nf * 16);
		if (v < 0 || (v == 0 && nf == out64(0)))
			break;             /* no progress (soft below the header): the client's bug */
		total += v;
		for (uint64_t o = ARF_WALK_HDR; o + 11 <= last_out_len; o += 11 + sides[0].out[o + 10]) {
			n_deep += (sides[0].out[o + 8] & ARF_WALK_DEEP) && sides[0].out[o + 8] != ARF_WALK_ERR;
			n_err += sides[0].out[o + 8] == ARF_WALK_ERR;
		}
		nf = out64(0);
		if (nf > ARF_WALK_FRAMES)
			break;
		for (uint64_t k = 0; k < 2 * nf; k++)
			fr[k] = out64(8 + 8 * k);
	}
	return total;
}

/* Directories of many entries (several blocks, deleted records between), a chain deeper
 * than walk's frames, read in batches of every size; hostile readdir and walk arguments. */
static void test_dirs(void)
{
	char nm[32];
	int64_t big = big_ino = op5(MKDIR, ARF_INO_ROOT, 0755, 0, 0, 0, "big", 3);
	CHECK(big > 0, "mkdir big: %" PRId64, big);
	for (int i = 0; i < 400; i++) {
		int len = snprintf(nm, sizeof nm, "entry-%d%s", i, i % 3 ? "" : "-with-a-longer-name");
		op5(i % 7 ? MKNOD : MKDIR, big, i % 7 ? 0100644 : 0755, 0, 0, 0, nm, (size_t)len);
	}
	for (int i = 0; i < 400; i += 3) {
		int len = snprintf(nm, sizeof nm, "entry-%d%s", i, i % 3 ? "" : "-with-a-longer-name");
		op5(i % 7 ? UNLINK : RMDIR, big, 0, 0, 0, 0, nm, (size_t)len);
	}
	static const int64_t maxes[] = { 1, 2, 7, 64, 1024 };
	for (size_t i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
		int64_t n = list_dir(big, maxes[i]);
		CHECK(n == 400 - 134, "readdir of big in batches of %" PRId64 ": %" PRId64 " entries",
		      maxes[i], n);
	}
	int64_t d = ARF_INO_ROOT;
	for (int i = 0; i < ARF_WALK_FRAMES + 6 && d > 0; i++)
		d = op5(MKDIR, d, 0755, 0, 0, 0, i % 2 ? "deep" : "deeper", i % 2 ? 4 : 6);
	CHECK(d > 0, "the deep chain");
	const int64_t wmax[] = { 1, 3, 50, 100000, 100000, 100000 };
	const int64_t wsoft[] = { 100000, 2000, 1 << 20, 1, 2000, 100000 };
	for (int i = 0; i < 6; i++)
		walk_all(i % 2 ? d1 : ARF_INO_ROOT, wmax[i], wsoft[i]);
	walk_all(big, 1, 100000);
	/* hostile arguments */
	const int64_t odd[] = { 0, -1, INT64_MIN, 1025, (int64_t)n_inodes, (int64_t)n_inodes - 1, f1,
	                        l_in, p1 };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		op5(READDIR, odd[i], 0, 10, 0, 0, NULL, 0);
		op5(READDIR, big, odd[i], 10, 0, 0, NULL, 0);
		op5(READDIR, big, 0, odd[i], 0, 0, NULL, 0);
		op5(READDIRPLUS, odd[i], 0, 10, 0, 0, NULL, 0);
		op5(READDIRPLUS, big, 0, odd[i], 0, 0, NULL, 0);
		uint64_t fr[4] = { (uint64_t)odd[i], 0, (uint64_t)big, (uint64_t)odd[i] };
		op5(WALK, 1, 10, 1000, 0, 0, fr, 16);
		op5(WALK, 2, 10, 1000, 0, 0, fr, 32);
		op5(WALK, 1, odd[i], 1000, 0, 0, fr + 2, 16);
		op5(WALK, 1, 10, odd[i], 0, 0, fr + 2, 16);
		op5(WALK, odd[i], 10, 1000, 0, 0, fr, 32);
	}
	uint64_t fr[2 * (ARF_WALK_FRAMES + 1)];
	for (int i = 0; i < 2 * (ARF_WALK_FRAMES + 1); i++)
		fr[i] = i % 2 ? 0 : (uint64_t)big;
	op5(WALK, ARF_WALK_FRAMES, 100, 100000, 0, 0, fr, 16 * ARF_WALK_FRAMES);
	op5(WALK, ARF_WALK_FRAMES + 1, 100, 100000, 0, 0, fr, 16 * (ARF_WALK_FRAMES + 1));
	op5(WALK, 2, 100, 100000, 0, 0, fr, 31);
	op5(WALK, 2, 100, 100000, 0, 0, fr, 33);
	op5(WALK, 0, 100, 100000, 0, 0, fr, 0);
}

/* Hostile names, setgid directories, a busy journal, locked and stale-locked directories,
 * EMLINK, and ENOSPC at each allocation (inode, grown table, new block: the block bitmap
 * filled for a while, then given back). */
static void test_mk(void)
{
	static const struct { const char *s; size_t len; } names[] = {
		{ "", 0 }, { ".", 1 }, { "..", 2 }, { "a/b", 3 }, { "/", 1 }, { "a\0b", 3 }, { "\0", 1 },
		{ "...", 3 }, { " ", 1 }, { "\xff\xfe", 2 },
	};
	char n256[257];
	memset(n256, 'm', sizeof n256);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		op5(MKDIR, ARF_INO_ROOT, 0755, 0, 0, 0, names[i].s, names[i].len);
		op5(MKNOD, d1, 0100644, 0, 0, 0, names[i].s, names[i].len);
		op5(MKNODATTR, d1, 0020644, 0, 0, 77, names[i].s, names[i].len);
	}
	op5(MKNOD, ARF_INO_ROOT, 0100644, 0, 0, 0, n256, 255);
	op5(MKNOD, ARF_INO_ROOT, 0100644, 0, 0, 0, n256, 256);
	op5(MKDIR, ARF_INO_ROOT, 0755, 0, 0, 0, n256, 255);      /* EEXIST */
	/* setgid: the directory's group goes to new entries, and setgid to new directories */
	int64_t g = g_ino = op5(MKDIR, ARF_INO_ROOT, 02775, 10, 20, 0, "sgid", 4);
	CHECK(g > 0, "mkdir sgid: %" PRId64, g);
	op5(MKDIRATTR, g, 0755, 11, 21, 0, "sub", 3);
	op5(MKNODATTR, g, 0102755, 11, 21, 5, "f", 1);
	op5(MKNODATTR, g, 0060600, 11, 21, 0x12345678abcdll, "blk", 3);
	op5(MKNODATTR, g, 0140600, 11, 21, 99, "sock", 4);
	/* mode bits beyond the type and 07777, uids beyond 32 bits */
	op5(MKNODATTR, g, (int64_t)0xffff0000100644ll, -1, -2, 0, "wide", 4);
	op5(MKDIRATTR, g, -1, 1ll << 40, 3, 0, "wided", 5);
	op5(MKNOD, g, 0, 0, 0, 0, "zero", 4);
	op5(MKNOD, g, 0120777, 0, 0, 0, "lnk", 3);
	op5(MKNOD, g, 0040755, 0, 0, 0, "dir", 3);
	/* hostile directories */
	const int64_t odd[] = { 0, -1, (int64_t)n_inodes, (int64_t)n_inodes - 1, f1, l_in };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		op5(MKDIR, odd[i], 0755, 0, 0, 0, "x", 1);
		op5(MKNODATTR, odd[i], 0100644, 0, 0, 0, "x", 1);
	}
	uint64_t epoch = peek(ARF_SB_EPOCH, 8), joff = peek(ARF_SB_JOURNAL_OFF, 8);
	/* every journal slot busy: EAGAIN before any lock */
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, epoch << 32 | (k + 1), 8);
	CHECK(op5(MKDIR, ARF_INO_ROOT, 0755, 0, 0, 0, "busy", 4) == -EAGAIN, "mkdir, no journal slot");
	CHECK(op5(MKNOD, ARF_INO_ROOT, 0100644, 0, 0, 0, "busy", 4) == -EAGAIN, "mknod, no journal slot");
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, k == 5 ? (epoch - 1) << 32 | 6 : 0, 8);
	/* a directory locked by a live run: EAGAIN after spinning; a dead server's lock is
	 * taken over */
	uint64_t lock = ino_off((uint64_t)d1) + ARF_I_LOCK;
	poke(lock, epoch << 32 | 9, 8);
	CHECK(op5(MKNOD, d1, 0100644, 0, 0, 0, "locked", 6) == -EAGAIN, "mknod in a locked directory");
	poke(lock, (epoch - 1) << 32 | 9, 8);
	CHECK(op5(MKNOD, d1, 0100644, 0, 0, 0, "stale", 5) > 0, "mknod taking a stale lock over");
	poke(joff + 5 * ARF_J_SLOT_SIZE + ARF_J_OWNER, 0, 8);
	/* EMLINK: only for a new directory */
	uint64_t nl = peek(ino_off((uint64_t)d1) + ARF_I_NLINK, 4);
	poke(ino_off((uint64_t)d1) + ARF_I_NLINK, 0xfffffff0u, 4);
	CHECK(op5(MKDIR, d1, 0755, 0, 0, 0, "many", 4) == -EMLINK, "mkdir, EMLINK");
	poke(ino_off((uint64_t)d1) + ARF_I_NLINK, 0xffffffefu, 4);
	op5(MKDIR, d1, 0755, 0, 0, 0, "many", 4);
	op5(RMDIR, d1, 0, 0, 0, 0, "many", 4);
	poke(ino_off((uint64_t)d1) + ARF_I_NLINK, nl, 4);
	/* no free block: every insert that needs a table or a block is ENOSPC, the others go on */
	uint64_t bmap = peek(ARF_SB_BBMAP_OFF, 8), blen = peek(ARF_SB_BBMAP_LEN, 8);
	uint8_t *saved = malloc(blen);
	if (saved) {
		memcpy(saved, sides[0].img + bmap, blen);
		for (int k = 0; k < 2; k++)
			memset(sides[k].img + bmap, 0xff, blen);
		int64_t e = op5(MKDIR, ARF_INO_ROOT, 0755, 0, 0, 0, "nospc", 5);
		char nm[40];
		for (int i = 0; i < 300; i++) {
			int len = snprintf(nm, sizeof nm, "nospc-entry-number-%d", i);
			e = op5(i % 2 ? MKNOD : MKDIR, i % 3 ? (int64_t)ARF_INO_ROOT : g, 0100644, 0, 0, 0,
			        nm, (size_t)len);
		}
		CHECK(e == -ENOSPC, "mknod with no free block: %" PRId64, e);
		for (int k = 0; k < 2; k++)
			memcpy(sides[k].img + bmap, saved, blen);
		free(saved);
	}
	/* no free inode: the inode bitmap full but for a few bits, which mknod takes until
	 * ENOSPC; then the bitmap as it was, with what was taken */
	uint64_t imap = peek(ARF_SB_IBMAP_OFF, 8), ilen = peek(ARF_SB_IBMAP_LEN, 8);
	saved = malloc(ilen);
	if (saved) {
		memcpy(saved, sides[0].img + imap, ilen);
		uint64_t freebits[5], nfree = 0;
		for (uint64_t b = 1; b < n_inodes && nfree < 5; b += 7)
			if (!(saved[b / 8] >> (b % 8) & 1))
				freebits[nfree++] = b;
		for (int k = 0; k < 2; k++) {
			memset(sides[k].img + imap, 0xff, ilen);
			for (uint64_t i = 0; i < nfree; i++)
				sides[k].img[imap + freebits[i] / 8] &= (uint8_t)~(1u << freebits[i] % 8);
		}
		int64_t e = 1;
		char nm[40];
		for (int i = 0; i < 12; i++) {
			int len = snprintf(nm, sizeof nm, "ino-%d", i);
			e = op5(i % 2 ? MKNOD : MKDIRATTR, i % 3 ? (int64_t)ARF_INO_ROOT : g, 0100644, 0, 0, 0,
			        nm, (size_t)len);
		}
		CHECK(e == -ENOSPC, "mknod with no free inode: %" PRId64, e);
		for (uint64_t i = 0; i < nfree; i++)
			if (sides[0].img[imap + freebits[i] / 8] >> (freebits[i] % 8) & 1)
				saved[freebits[i] / 8] |= (uint8_t)(1u << freebits[i] % 8);
		for (int k = 0; k < 2; k++)
			memcpy(sides[k].img + imap, saved, ilen);
		free(saved);
	}
}

/* unlink and rmdir: hostile names, each kind of inode (a long symlink's block, a directory's
 * table and blocks, a file with a second link), non-empty directories, locked children, a
 * busy journal, an entry naming no inode. */
static void test_rm(void)
{
	const int64_t R = ARF_INO_ROOT;
	char n256[257];
	memset(n256, 'r', sizeof n256);
	static const struct { const char *s; size_t len; } names[] = {
		{ "", 0 }, { ".", 1 }, { "..", 2 }, { "a/b", 3 }, { "/", 1 }, { "a\0b", 3 }, { "nope", 4 },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		op5(UNLINK, R, 0, 0, 0, 0, names[i].s, names[i].len);
		op5(RMDIR, R, 0, 0, 0, 0, names[i].s, names[i].len);
	}
	op5(UNLINK, R, 0, 0, 0, 0, n256, 255);
	op5(UNLINK, R, 0, 0, 0, 0, n256, 256);
	const int64_t odd[] = { 0, -1, (int64_t)n_inodes, (int64_t)n_inodes - 1, f1, l_in };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		op5(UNLINK, odd[i], 0, 0, 0, 0, "x", 1);
		op5(RMDIR, odd[i], 0, 0, 0, 0, "x", 1);
	}
	int64_t t = op5(MKDIR, R, 0755, 0, 0, 0, "rmt", 3);
	CHECK(t > 0, "mkdir rmt: %" PRId64, t);
	int64_t sub = op5(MKDIR, t, 0755, 0, 0, 0, "sub", 3);
	int64_t f = op5(MKNOD, t, 0100644, 0, 0, 0, "f", 1);
	op5(LINK, f, t, 0, 0, 0, "f2", 2);
	op5(MKNOD, sub, 0010644, 0, 0, 0, "fifo", 4);
	char lt[600];
	memset(lt, 'z', sizeof lt);
	memcpy(lt, "long", 4);
	op5(SYMLINK, t, 4, 0, 0, 0, lt, sizeof lt);
	op5(SYMLINK, t, 5, 0, 0, 0, "shortx", 6);
	CHECK(op5(RMDIR, R, 0, 0, 0, 0, "rmt", 3) == -ENOTEMPTY, "rmdir of a non-empty directory");
	CHECK(op5(UNLINK, R, 0, 0, 0, 0, "rmt", 3) == -EISDIR, "unlink of a directory");
	CHECK(op5(RMDIR, t, 0, 0, 0, 0, "f", 1) == -ENOTDIR, "rmdir of a file");
	/* locked: the child, then the directory; a busy journal */
	uint64_t epoch = peek(ARF_SB_EPOCH, 8), joff = peek(ARF_SB_JOURNAL_OFF, 8);
	poke(ino_off((uint64_t)f) + ARF_I_LOCK, epoch << 32 | 3, 8);
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "f", 1) == -EAGAIN, "unlink of a locked file");
	poke(ino_off((uint64_t)f) + ARF_I_LOCK, 0, 8);
	poke(ino_off((uint64_t)t) + ARF_I_LOCK, epoch << 32 | 3, 8);
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "f", 1) == -EAGAIN, "unlink in a locked directory");
	poke(ino_off((uint64_t)t) + ARF_I_LOCK, 0, 8);
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, epoch << 32 | (k + 1), 8);
	CHECK(op5(RMDIR, t, 0, 0, 0, 0, "sub", 3) == -EAGAIN, "rmdir, no journal slot");
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, 0, 8);
	/* then everything goes, a link at a time */
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "f", 1) == 0, "unlink f (a second link stays)");
	CHECK(op5(GETATTR, f, 0, 0, 0, 0, NULL, 0) == f, "f lives on through f2");
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "f2", 2) == 0, "unlink f2");
	CHECK(op5(GETATTR, f, 0, 0, 0, 0, NULL, 0) == -ENOENT, "f is free");
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "long", 4) == 0, "unlink of a long symlink");
	CHECK(op5(UNLINK, t, 0, 0, 0, 0, "short", 5) == 0, "unlink of a short symlink");
	CHECK(op5(UNLINK, sub, 0, 0, 0, 0, "fifo", 4) == 0, "unlink of a fifo");
	CHECK(op5(RMDIR, t, 0, 0, 0, 0, "sub", 3) == 0, "rmdir sub");
	CHECK(op5(RMDIR, R, 0, 0, 0, 0, "rmt", 3) == 0, "rmdir rmt");
	/* the big directory of test_dirs, emptied and removed: its grown table and blocks */
	char nm[40];
	for (int i = 0; i < 400; i++) {
		int len = snprintf(nm, sizeof nm, "entry-%d%s", i, i % 3 ? "" : "-with-a-longer-name");
		op5(i % 2 ? UNLINK : RMDIR, big_ino, 0, 0, 0, 0, nm, (size_t)len);
		op5(i % 2 ? RMDIR : UNLINK, big_ino, 0, 0, 0, 0, nm, (size_t)len);
	}
	CHECK(op5(RMDIR, R, 0, 0, 0, 0, "big", 3) == 0, "rmdir big");
}

/* symlink and link: name/target splits, the inline limit, hostile numbers, EPERM, EMLINK,
 * locks, ENOSPC for the target block and for a new directory block. */
static void test_links(void)
{
	const int64_t R = ARF_INO_ROOT;
	char b[5000];
	memset(b, 'y', sizeof b);
	memcpy(b, "s1", 2);
	const struct { int64_t nlen; size_t len; } splits[] = {
		{ 2, 2 }, { 3, 2 }, { -1, 10 }, { 0, 10 }, { 2, 2 + 144 }, { 2, 2 + 145 },
		{ 2, 2 + 4095 }, { 2, 2 + 4096 }, { 256, 300 }, { 255, 300 }, { 1, 3 },
	};
	for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
		b[1] = (char)('a' + i);
		op5(i % 2 ? SYMLINK : SYMLINKATTR, R, splits[i].nlen, 1, 2, 0, b, splits[i].len);
		op5(READLINK, op5(LOOKUP, R, 0, 0, 0, 0, b, 2), 0, 0, 0, 0, NULL, 0);
	}
	op5(SYMLINK, R, 1, 0, 0, 0, ".target", 7);
	op5(SYMLINK, R, 2, 0, 0, 0, "..target", 8);
	op5(SYMLINK, R, 3, 0, 0, 0, "a/btarget", 9);
	op5(SYMLINK, R, 2, 0, 0, 0, "ntar\0et", 8);
	op5(SYMLINK, R, 2, 0, 0, 0, "n\0target", 9);
	op5(SYMLINK, l_in, 2, 0, 0, 0, "nntarget", 8);
	op5(SYMLINK, 0, 2, 0, 0, 0, "nntarget", 8);
	op5(SYMLINK, (int64_t)n_inodes - 1, 2, 0, 0, 0, "nntarget", 8);
	op5(SYMLINKATTR, g_ino, 2, 7, 8, 0, "sgtarget", 8);           /* setgid directory */
	/* link */
	int64_t f = op5(MKNOD, R, 0100644, 0, 0, 0, "lf", 2);
	const struct { int64_t ino, dir; const char *name; } links[] = {
		{ f, R, "lf2" }, { f, R, "lf" }, { f, d1, "lf3" }, { f, R, "" }, { f, R, "." },
		{ f, R, ".." }, { f, R, "a/b" }, { d1, R, "dl" }, { 0, R, "x" }, { -1, R, "x" },
		{ (int64_t)n_inodes, R, "x" }, { (int64_t)n_inodes - 1, R, "x" }, { f, f, "x" },
		{ f, 0, "x" }, { l_in, d2, "ll" }, { p1, d2, "pl" }, { R, d2, "root" },
	};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		op5(i % 2 ? LINK : LINKATTR, links[i].ino, links[i].dir, 0, 0, 0, links[i].name,
		    strlen(links[i].name));
	uint64_t nl = peek(ino_off((uint64_t)f) + ARF_I_NLINK, 4);
	poke(ino_off((uint64_t)f) + ARF_I_NLINK, 0xffffffffu, 4);
	CHECK(op5(LINK, f, R, 0, 0, 0, "many", 4) == -EMLINK, "link, EMLINK");
	poke(ino_off((uint64_t)f) + ARF_I_NLINK, 0xfffffffeu, 4);
	op5(LINKATTR, f, R, 0, 0, 0, "many", 4);
	op5(UNLINK, R, 0, 0, 0, 0, "many", 4);
	poke(ino_off((uint64_t)f) + ARF_I_NLINK, nl, 4);
	uint64_t epoch = peek(ARF_SB_EPOCH, 8);
	poke(ino_off((uint64_t)f) + ARF_I_LOCK, epoch << 32 | 4, 8);
	CHECK(op5(LINK, f, R, 0, 0, 0, "locked", 6) == -EAGAIN, "link of a locked inode");
	poke(ino_off((uint64_t)f) + ARF_I_LOCK, 0, 8);
	/* no free block: long targets and inserts needing a block fail, inline ones go on */
	uint64_t bmap = peek(ARF_SB_BBMAP_OFF, 8), blen = peek(ARF_SB_BBMAP_LEN, 8);
	uint8_t *saved = malloc(blen);
	if (saved) {
		memcpy(saved, sides[0].img + bmap, blen);
		for (int k = 0; k < 2; k++)
			memset(sides[k].img + bmap, 0xff, blen);
		char nm[300];
		for (int i = 0; i < 200; i++) {
			int len = snprintf(nm, sizeof nm, "nospc-link-%d", i);
			if (i % 2)
				op5(LINK, f, i % 3 ? R : g_ino, 0, 0, 0, nm, (size_t)len);
			else {
				memcpy(b, nm, (size_t)len);
				op5(SYMLINK, i % 3 ? R : g_ino, len, 0, 0, 0, b, (size_t)len + (i % 4 ? 10 : 200));
			}
		}
		for (int k = 0; k < 2; k++)
			memcpy(sides[k].img + bmap, saved, blen);
		free(saved);
	}
}

static int64_t ren(int64_t from, const char *o, int64_t to, const char *n, int64_t flags)
{
	char b[600];
	size_t ol = strlen(o), nl = strlen(n);
	memcpy(b, o, ol);
	memcpy(b + ol, n, nl);
	return op5(RENAME, from, to, (int64_t)ol, flags, 0, b, ol + nl);
}

/* rename: every rule of its comment, across directories and within one, hostile flags and
 * lengths, locks (inode 0's word too), EMLINK, ENOSPC for a new name. */
static void test_rename(void)
{
	const int64_t R = ARF_INO_ROOT;
	int64_t A = op5(MKDIR, R, 0755, 0, 0, 0, "ra", 2), B = op5(MKDIR, R, 0755, 0, 0, 0, "rb", 2);
	int64_t A1 = op5(MKDIR, A, 0755, 0, 0, 0, "a1", 2), A2 = op5(MKDIR, A1, 0755, 0, 0, 0, "a2", 2);
	op5(MKNOD, A, 0100644, 0, 0, 0, "f", 1);
	op5(MKNOD, A, 0100644, 0, 0, 0, "g", 1);
	op5(MKNOD, B, 0010644, 0, 0, 0, "p", 1);
	op5(MKDIR, B, 0755, 0, 0, 0, "e", 1);
	op5(MKDIR, B, 0755, 0, 0, 0, "ne", 2);
	op5(MKNOD, op5(LOOKUP, B, 0, 0, 0, 0, "ne", 2), 0100644, 0, 0, 0, "x", 1);
	op5(LINK, op5(LOOKUP, A, 0, 0, 0, 0, "f", 1), B, 0, 0, 0, "fl", 2);
	CHECK(A > 0 && B > 0 && A1 > 0 && A2 > 0, "the rename tree");
	/* arguments */
	const int64_t fl[] = { 3, 4, -1, 8, INT64_MIN };
	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++)
		ren(A, "f", A, "h", fl[i]);
	op5(RENAME, A, A, 2, 0, 0, "f", 1);                   /* olen past args */
	op5(RENAME, A, A, -1, 0, 0, "f", 1);
	op5(RENAME, A, A, 0, 0, 0, "f", 1);                   /* empty old name */
	op5(RENAME, A, A, 1, 0, 0, "f", 1);                   /* empty new name */
	const char *const dots[] = { ".", "..", "a/b", "" };
	for (int fl2 = 0; fl2 < 3; fl2++)
		for (size_t i = 0; i < 4; i++) {
			ren(A, dots[i], A, "z", fl2);
			ren(A, "f", A, dots[i], fl2);
		}
	const int64_t odd[] = { 0, -1, (int64_t)n_inodes, (int64_t)n_inodes - 1, f1 };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		ren(odd[i], "f", A, "z", 0);
		ren(A, "f", odd[i], "z", 0);
	}
	/* the rules */
	ren(A, "nope", B, "z", 0);                           /* ENOENT */
	ren(A, "f", B, "fl", 0);                             /* two names of one inode: 0 */
	ren(A, "f", A, "f", 0);
	ren(A, "f", B, "p", 1);                              /* NOREPLACE: EEXIST */
	ren(A, "f", B, "zz", 2);                             /* EXCHANGE without target: ENOENT */
	ren(R, "ra", A2, "in", 0);                           /* into its own subtree: EINVAL */
	ren(A1, "a2", R, "ra", 0);                           /* target above the source */
	ren(A1, "a2", R, "ra", 2);
	ren(A, "f", B, "e", 0);                              /* file over directory: EISDIR */
	ren(B, "e", A, "g", 0);                              /* directory over file: ENOTDIR */
	ren(A, "a1", B, "ne", 0);                            /* over a non-empty one: ENOTEMPTY */
	ren(A, "g", B, "p", 0);                              /* a file replaces a fifo (freed) */
	ren(A, "f", B, "fl", 0);                             /* same inode: nothing */
	ren(B, "fl", A, "f2", 0);                            /* a hard link moves */
	ren(A, "f2", A, "g2", 0);
	ren(A, "a1", B, "e", 0);                             /* a directory replaces an empty one */
	ren(B, "e", A, "back", 0);
	ren(A, "back", B, "p", 2);                           /* exchange directory and file */
	ren(B, "p", A, "f", 2);
	ren(B, "ne", R, "ra", 2);                            /* exchange making a cycle? */
	ren(A, "back", B, "ne", 2);
	for (int i = 0; i < 40; i++) {                       /* in one directory: rehash, tombstones */
		char o[20], n[20];
		snprintf(o, sizeof o, "m%d", i);
		snprintf(n, sizeof n, "m%d", i + 1);
		if (i == 0)
			op5(MKNOD, A, 0100644, 0, 0, 0, o, strlen(o));
		ren(A, o, i % 3 ? A : B, n, 0);
		ren(i % 3 ? A : B, n, A, n, 0);
	}
	/* EMLINK: a directory arriving where nlink is at the limit, or an exchange */
	uint64_t nl = peek(ino_off((uint64_t)B) + ARF_I_NLINK, 4);
	poke(ino_off((uint64_t)B) + ARF_I_NLINK, 0xfffffff0u, 4);
	int64_t md = op5(MKDIR, A, 0755, 0, 0, 0, "md", 2);
	CHECK(ren(A, "md", B, "md", 0) == -EMLINK, "rename, EMLINK");
	ren(A, "md", B, "ne", 0);
	ren(B, "fl", A, "md", 2);
	poke(ino_off((uint64_t)B) + ARF_I_NLINK, nl, 4);
	(void)md;
	/* locks: inode 0's word (renames across directories), a directory, an entry */
	uint64_t epoch = peek(ARF_SB_EPOCH, 8);
	poke(itable + ARF_I_LOCK, epoch << 32 | 5, 8);
	CHECK(ren(A, "g2", B, "q", 0) == -EAGAIN, "rename across directories, rename lock held");
	ren(A, "g2", A, "q", 0);                             /* within one: no rename lock */
	poke(itable + ARF_I_LOCK, 0, 8);
	poke(ino_off((uint64_t)B) + ARF_I_LOCK, epoch << 32 | 5, 8);
	ren(A, "q", B, "q", 0);
	poke(ino_off((uint64_t)B) + ARF_I_LOCK, 0, 8);
	/* no free block: a new name needing a table or block fails, a replace goes on */
	uint64_t bmap = peek(ARF_SB_BBMAP_OFF, 8), blen = peek(ARF_SB_BBMAP_LEN, 8);
	uint8_t *saved = malloc(blen);
	if (saved) {
		memcpy(saved, sides[0].img + bmap, blen);
		for (int k = 0; k < 2; k++)
			memset(sides[k].img + bmap, 0xff, blen);
		int64_t E = op5(MKDIR, R, 0755, 0, 0, 0, "rnospc", 6);
		(void)E;
		char n[200];
		int64_t v = 0;
		for (int i = 0; i < 120 && v != -ENOSPC; i++) {
			int len = snprintf(n, sizeof n, "%0180d", i);
			char b[300];
			b[0] = 'q';
			memcpy(b + 1, n, (size_t)len);
			v = op5(RENAME, A, B, 1, 0, 0, b, 1 + (size_t)len);
			memcpy(b, n, (size_t)len);
			b[len] = 'q';
			op5(RENAME, B, A, len, 0, 0, b, 1 + (size_t)len);
		}
		CHECK(v == -ENOSPC, "rename to a new name with no free block: %" PRId64, v);
		for (int k = 0; k < 2; k++)
			memcpy(sides[k].img + bmap, saved, blen);
		free(saved);
	}
}

/* Damage in both copies, then read-only calls through it (and random ones after). */
static void test_damaged(void)
{
	/* a file with no link count: unlink leaves it with 2^32 - 1 (and no name) */
	int64_t x = op5(MKNOD, ARF_INO_ROOT, 0100644, 0, 0, 0, "nolink", 6);
	poke(ino_off((uint64_t)x) + ARF_I_NLINK, 0, 4);
	op5(UNLINK, ARF_INO_ROOT, 0, 0, 0, 0, "nolink", 6);
	op5(GETATTR, x, 0, 0, 0, 0, NULL, 0);
	uint64_t r = ino_off(ARF_INO_ROOT), dd1 = ino_off((uint64_t)d1);
	uint64_t tab = peek(dd1 + ARF_D_TABLE, 8), nslots = peek(dd1 + ARF_D_NSLOTS, 8);
	/* the slot of f1 in d1's table, and its record */
	uint64_t slot = 0;
	for (uint64_t i = 0; tab && i < nslots; i++) {
		uint64_t rec = peek(tab + i * ARF_T_SIZE + ARF_T_REC, 8);
		if (rec > ARF_T_TOMB && peek(rec + ARF_R_INO, 8) == (uint64_t)f1)
			slot = tab + i * ARF_T_SIZE;
	}
	CHECK(slot != 0, "d1's table holds f1");
	uint64_t rec = slot ? peek(slot + ARF_T_REC, 8) : 0;
	uint64_t blk = peek(dd1 + ARF_D_HEAD, 8);
	struct { uint64_t off; uint64_t v; unsigned size; } pokes[] = {
		{ rec + ARF_R_INO, n_inodes, 8 },                   /* an entry naming no inode */
		{ rec + ARF_R_INO, 0, 8 },                          /* a dead record */
		{ rec + ARF_R_INO, (uint64_t)f1, 8 },
		{ rec + ARF_R_NAMELEN, 0, 1 },
		{ slot + ARF_T_REC, ARF_T_TOMB, 8 },                /* a tombstone */
		{ slot + ARF_T_REC, IMG_SIZE + 4096, 8 },           /* a record off the image */
		{ slot + ARF_T_REC, rec, 8 },
		{ dd1 + ARF_D_SHIFT, 200, 8 },                      /* a shift over 63 */
		{ dd1 + ARF_D_SHIFT, 0, 8 },
		{ dd1 + ARF_D_NSLOTS, 3, 8 },                       /* not a power of two */
		{ dd1 + ARF_D_NSLOTS, 0, 8 },                       /* mask ~0 */
		{ dd1 + ARF_D_TABLE, IMG_SIZE - 8, 8 },             /* a table off the end */
		{ dd1 + ARF_D_TABLE, 0, 8 },                        /* no table */
		{ dd1 + ARF_I_PARENT, n_inodes + 3, 8 },            /* ".." out of range */
		{ dd1 + ARF_I_PARENT, (uint64_t)f1, 8 },            /* ".." a file */
		{ r + ARF_I_MODE, 0100644, 4 },                     /* the root a file */
		{ r + ARF_I_MODE, 0, 4 },                           /* the root free */
		{ r + ARF_I_MODE, 040755, 4 },
		{ ino_off((uint64_t)l_in) + ARF_I_SIZE, 0, 8 },
		{ ino_off((uint64_t)l_in) + ARF_I_SIZE, 145, 8 },   /* inline, over the body */
		{ ino_off((uint64_t)l_in) + ARF_I_SIZE, 4096, 8 },
		{ ino_off((uint64_t)l_blk) + ARF_I_NEXTENTS, 2, 4 },
		{ ino_off((uint64_t)l_blk) + ARF_I_NEXTENTS, 1, 4 },
		{ ino_off((uint64_t)l_blk) + ARF_I_BODY + ARF_E_PBLK, 1, 8 },   /* metadata */
		{ ino_off((uint64_t)l_blk) + ARF_I_BODY + ARF_E_PBLK, UINT64_MAX, 8 },
		{ ino_off((uint64_t)l_blk) + ARF_I_SIZE, 5000, 8 },
		{ ino_off((uint64_t)f1) + ARF_I_MODE, 0120777, 4 }, /* a file turned symlink */
		{ rec + ARF_R_LEN, 7, 2 },                          /* records too short */
		{ rec + ARF_R_LEN, 0, 2 },
		{ rec + ARF_R_LEN, 4000, 2 },                       /* past the block's use */
		{ rec + ARF_R_LEN, 0xffff, 2 },
		{ rec + ARF_R_TYPE, ARF_DT_DIR, 1 },                /* a file listed as a directory */
		{ blk + ARF_B_USED, 4096 * 3, 8 },                  /* more used than a block */
		{ blk + ARF_B_USED, 0, 8 },
		{ blk + ARF_B_NEXT, IMG_SIZE + 4096, 8 },           /* a chain off the image */
		{ blk + ARF_B_NEXT, blk, 8 },                       /* a chain that loops */
		{ dd1 + ARF_D_HEAD, IMG_SIZE - 16, 8 },
		{ dd1 + ARF_D_HEAD, 0, 8 },
	};
	static const char *const paths[] = { "d1/f1", "d1/f1/", "d1/f1/x", "d1/..", "d1/../d1/f1",
	                                     "d1/d2", "l", "lb", "", "d1/zz" };
	for (size_t p = 0; p < sizeof pokes / sizeof pokes[0]; p++) {
		if (pokes[p].off < 4096)
			continue;              /* a slot or record not found: nothing to damage */
		poke(pokes[p].off, pokes[p].v, pokes[p].size);
		op5(UNLINK, d1, 0, 0, 0, 0, "f1", 2);
		op5(RMDIR, d1, 0, 0, 0, 0, "d2", 2);
		op5(MKNOD, d1, 0100644, 0, 0, 0, "new", 3);
		for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
			ops(k % 2 ? LOOKUPATTR : LOOKUP, ARF_INO_ROOT, paths[k]);
		const int64_t inos[] = { ARF_INO_ROOT, d1, d2, f1, l_in, l_blk };
		for (size_t k = 0; k < sizeof inos / sizeof inos[0]; k++) {
			op5(GETATTR, inos[k], 0, 0, 0, 0, NULL, 0);
			op5(READLINK, inos[k], 0, 0, 0, 0, NULL, 0);
		}
		for (int64_t max = 2; max <= 1024; max *= 32) {
			op5(READDIR, d1, 0, max, 0, 0, NULL, 0);
			op5(READDIRPLUS, d1, 0, max, 0, 0, NULL, 0);
			op5(READDIR, d1, (int64_t)(blk + ARF_B_HDR), max, 0, 0, NULL, 0);
			op5(READDIR, d1, (int64_t)(rec + 24), max, 0, 0, NULL, 0);
			walk_all(ARF_INO_ROOT, max * 32, 100000);
		}
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *b = getenv("BUILD"), *e;
	b = b && *b ? b : "build";
	char cseg[512], aseg[512];
	snprintf(cseg, sizeof cseg, "%s/arfseg/ops.pno", b);
	snprintf(aseg, sizeof aseg, "%s/arfseg/ops_asm.pno", b);
	if ((e = getenv("OPS_C_SEG")) && *e)
		snprintf(cseg, sizeof cseg, "%s", e);
	if ((e = getenv("OPS_ASM_SEG")) && *e)
		snprintf(aseg, sizeof aseg, "%s", e);
	unsigned count = (e = getenv("OPSDIFF_OPS")) && *e ? (unsigned)strtoul(e, NULL, 10) : 3000;
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	snprintf(dir, sizeof dir, "%s/test_arf_opsdiff.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	uint8_t *img = make_image(dir);
	rmdir(dir);
	if (img && side_open(&sides[0], "C", cseg, aseg, img) == 0 &&
	    side_open(&sides[1], "asm", aseg, NULL, img) == 0) {
		n_inodes = peek(ARF_SB_N_INODES, 8);
		itable = peek(ARF_SB_ITABLE_OFF, 8);
		unsigned n_c = 0;
		for (int o = 0; o < N_OPS; o++)
			n_c += sides[0].entry[o][0] >= 0;
		CHECK(n_c > 0, "the C segment exports none of ops.pna's");
		test_table();
		fsck_side("after the table");
		test_dirs();
		fsck_side("after the directories");

		test_random(count);
		fsck_side("after the random operations");
		test_mk();
		fsck_side("after mkdir and mknod");
		test_rm();
		fsck_side("after unlink and rmdir");
		test_links();
		fsck_side("after symlink and link");
		test_rename();
		fsck_side("after rename");
		test_damaged();
		printf("test_arf_opsdiff: %u operations on both sides, %d differing; %u of %d exports in C\n",
		       n_ops, n_diffs, n_c, N_OPS);
		for (int o = 0; o < N_OPS; o++) {
			printf("  %-12s %s %5u runs, >0: %u, 0: %u", op_name[o],
			       sides[0].entry[o][0] >= 0 ? "C vs asm" : "asm only", n_run[o], seen[o][129],
			       seen[o][0]);
			for (int v = 1; v < 128; v++)
				if (seen[o][v])
					printf(", %s: %u", strerrorname_np(v), seen[o][v]);
			printf(seen[o][128] ? ", traps: %u\n" : "\n", seen[o][128]);
		}
		printf("  walk entries: %u deep, %u errors\n", n_deep, n_err);
	}
	side_close(&sides[0]);
	side_close(&sides[1]);
	free(img);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
