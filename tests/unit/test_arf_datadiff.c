/* test_arf_datadiff.c: the file data segment in C (arf/data.c) against the assembly it
 * replaced (arf/data.pna), differentially.  Both run in one process on the VM, each over its
 * own private copy of one fresh image (files, a directory, a long symlink, a fifo made by an
 * in-process arfd with ops.pno), with hooks that make a run deterministic: `now` is a counter,
 * `sync`/`writeback`/`pause` are logged (sync can be told to fail).  Every operation runs on
 * both with the same arguments and bytes, on the interpreter or the JIT alternately, and must
 * give the same result, trap kind (user trap code too), output bytes, hook calls and the same
 * image bytes afterwards:
 *   - a table of hostile and edge calls (bad inode numbers, huge offsets, wrong generations,
 *     unknown setattr bits, reads past 64 MiB, EISDIR/EINVAL/ENOENT, failing msync);
 *   - an extent-heavy phase (one-block hole fills from the end backwards: the chain's blocks
 *     fill and split) and truncates into the chain and the inline extents;
 *   - random writes/appends/writeafters/reads/truncates/setattrs/fsyncs over several files;
 *   - the same on a full image: ENOSPC, short writes, appends keeping a range they could
 *     not fill (arf_fsck must find the image clean after each of these phases);
 *   - a damaged image: extents and extent-block links of a file overwritten with hostile
 *     values in both copies, then random operations on it.
 * Then, not a check, the median time of a few operations repeated on each side (interpreter
 * and JIT; DATADIFF_TIME_REPS=N runs, default 300).
 * Segment paths: $DATA_C_SEG and $DATA_ASM_SEG, else build/arfseg/data.pno (what ARF
 * installs) and build/arfseg/data_asm.pno (the reference); DATADIFF_OPS=N runs N random operations (default 3000).
 * Prints "N passed, N failed" last.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"

#include "arc.h"
#include "arf.h"
#include "arf_ops.h"
#include "isa.h"
#include "server.h"
#include "vm.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

#define IMG_SIZE (16u << 20)
#define OUT_CAP ((64u << 20) + 64)
#define LOG_CAP 4096

/* ---- one side: a segment, its VM, its copy of the image, what its hooks saw ---- */

struct side {
	const char *name;
	struct vm *vm;
	struct vm_prog *prog;
	uint8_t *img;
	uint8_t *out;
	int64_t clock;             /* `now`: a counter, the same on both sides */
	int64_t sync_rc;           /* what `sync` answers */
	char log[LOG_CAP];         /* the run's hook calls */
	size_t log_len;
};

static struct side sides[2];

static void logf_(struct side *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct side *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s->log + s->log_len, LOG_CAP - s->log_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->log_len = s->log_len + (size_t)n < LOG_CAP ? s->log_len + (size_t)n : LOG_CAP - 1;
}

static int64_t h_now(struct vm_hook_ctx *ctx)
{
	struct side *s = vm_hook_user(ctx);
	return s->clock += 1000;
}

static int64_t h_sync(struct vm_hook_ctx *ctx, int64_t r, int64_t off, int64_t len)
{
	struct side *s = vm_hook_user(ctx);
	logf_(s, "sync %" PRId64 " %" PRId64 " %" PRId64 "\n", r, off, len);
	return s->sync_rc;
}

static int64_t h_pause(struct vm_hook_ctx *ctx, int64_t us)
{
	struct side *s = vm_hook_user(ctx);
	logf_(s, "pause %" PRId64 "\n", us);
	return 0;
}

static int64_t h_writeback(struct vm_hook_ctx *ctx, int64_t r, int64_t off, int64_t len)
{
	struct side *s = vm_hook_user(ctx);
	logf_(s, "writeback %" PRId64 " %" PRId64 " %" PRId64 "\n", r, off, len);
	return 0;
}

static int side_open(struct side *s, const char *name, const char *seg_path, const char *img)
{
	char err[512];
	void *seg = NULL;
	size_t seg_len = 0;
	s->name = name;
	if (isa_read_file(seg_path, &seg, &seg_len) != 0) {
		CHECK(0, "%s: cannot read %s", name, seg_path);
		return -1;
	}
	int fd = open(img, O_RDONLY);
	s->img = fd < 0 ? MAP_FAILED : mmap(NULL, IMG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	s->out = malloc(OUT_CAP);
	s->vm = vm_new();
	if (s->img == MAP_FAILED || !s->out || !s->vm ||
	    vm_bind_region(s->vm, "arf", s->img, IMG_SIZE, ISA_ACC_RW) ||
	    vm_bind_hook(s->vm, "now", (void *)h_now, ":l", s) ||
	    vm_bind_hook(s->vm, "sync", (void *)h_sync, "lll:l", s) ||
	    vm_bind_hook(s->vm, "pause", (void *)h_pause, "l:l", s) ||
	    vm_bind_hook(s->vm, "writeback", (void *)h_writeback, "lll:l", s)) {
		free(seg);
		CHECK(0, "%s: cannot set up the vm", name);
		return -1;
	}
	int rc = vm_load(s->vm, seg, seg_len, &s->prog, err, sizeof err);
	free(seg);
	CHECK(rc == 0, "%s: vm_load %s: %s", name, seg_path, err);
	return rc;
}

static void side_close(struct side *s)
{
	if (s->prog)
		vm_prog_free(s->prog);
	if (s->vm)
		vm_free(s->vm);
	if (s->img && s->img != MAP_FAILED)
		munmap(s->img, IMG_SIZE);
	free(s->out);
}

/* ---- one operation on both sides ---- */

enum dop { W, A, WA, R, T, S, F };
static const char *const op_name[] = { "write", "append", "writeafter", "read", "truncate",
                                        "setattr", "fsync" };
static const unsigned op_args[] = { 3, 2, 4, 4, 3, 7, 2 };

struct result {
	int rc;
	struct vm_result res;
};

static unsigned n_ops;
/* what the operations answered, to show the phases reach what they aim at: per operation,
 * results > 0, = 0, and each errno up to 127 (128: traps) */
static unsigned seen[7][130];

static int n_diffs;                /* differences found (the first few are printed in full) */
static int64_t last_value;         /* the C side's result of the last do_op */
static uint64_t last_out[2];       /* and its first output words (append) */

static void run_side(struct side *s, enum dop op, const int64_t *a, const void *bytes,
                     size_t len, int engine, struct result *r)
{
	unsigned n = 0;
	s->log_len = 0;
	s->log[0] = 0;
	int entry = vm_prog_entry(s->prog, op_name[op], &n);
	if (entry < 0 || n != op_args[op]) {
		r->rc = -1000;
		return;
	}
	struct vm_run_opts o = { .args = bytes, .args_len = len, .out = s->out, .out_cap = OUT_CAP,
	                         .engine = engine };
	memset(&r->res, 0, sizeof r->res);
	r->rc = vm_run(s->prog, (unsigned)entry, a, n, &o, &r->res);
}

/* Run op on both sides and compare everything; returns the C side's result. */
static int64_t do_op(enum dop op, const int64_t *a, const void *bytes, size_t len)
{
	struct result r[2];
	int engine = n_ops % 2 ? VM_ENGINE_JIT : VM_ENGINE_INTERP;
	int first = n_ops++ / 2 % 2;   /* which side runs first (and meets cold caches) alternates */
	for (int kk = 0; kk < 2; kk++)
		run_side(&sides[kk ^ first], op, a, bytes, len, engine, &r[kk ^ first]);
	char what[200];
	snprintf(what, sizeof what, "op %u %s(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	         ", ...) %zu bytes (%s)", n_ops, op_name[op], a[0], a[1], op_args[op] > 2 ? a[2] : 0,
	         op_args[op] > 3 ? a[3] : 0, len, vm_engine_name(engine));
	const struct vm_result *c = &r[0].res, *s = &r[1].res;
	int same = r[0].rc == r[1].rc && c->trap.kind == s->trap.kind &&
	           (c->trap.kind != ISA_TRAP_USER || c->trap.code == s->trap.code) &&
	           (r[0].rc != 0 || c->value == s->value) && c->out_len == s->out_len &&
	           memcmp(sides[0].out, sides[1].out, c->out_len) == 0;
	CHECK(same, "%s: C rc %d value %" PRId64 " trap %s out %" PRIu64 "; asm rc %d value %" PRId64
	      " trap %s out %" PRIu64, what, r[0].rc, c->value, isa_trap_name(c->trap.kind), c->out_len,
	      r[1].rc, s->value, isa_trap_name(s->trap.kind), s->out_len);
	CHECK(strcmp(sides[0].log, sides[1].log) == 0, "%s: hook calls differ:\nC:\n%sasm:\n%s", what,
	      sides[0].log, sides[1].log);
	int img_same = memcmp(sides[0].img, sides[1].img, IMG_SIZE) == 0;
	if (!img_same) {
		size_t i = 0;
		while (sides[0].img[i] == sides[1].img[i])
			i++;
		CHECK(0, "%s: images differ first at byte %zu (block %zu +%zu): C %02x asm %02x", what, i,
		      i / ARF_BLOCK_SIZE, i % ARF_BLOCK_SIZE, sides[0].img[i], sides[1].img[i]);
		/* go on from the same bytes, so one difference is not reported at every later op */
		memcpy(sides[1].img, sides[0].img, IMG_SIZE);
	} else {
		passed++;
	}
	if (!same || !img_same)
		n_diffs++;
	last_value = r[0].rc == 0 ? c->value : INT64_MIN;
	seen[op][r[0].rc ? 128 : c->value > 0 ? 129 : c->value == 0 ? 0 : c->value >= -127 ? -c->value : 128]++;
	if (op == A && c->value > 0 && last_value >= 0 && c->out_len == 16 && (size_t)c->value < len)
		seen[op][1]++;      /* a short append (EPERM is never an answer: slot 1 counts these) */
	memset(last_out, 0, sizeof last_out);
	memcpy(last_out, sides[0].out, c->out_len < sizeof last_out ? c->out_len : sizeof last_out);
	return last_value;
}

static int64_t op7(enum dop op, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4,
                   int64_t a5, int64_t a6, const void *bytes, size_t len)
{
	int64_t a[7] = { a0, a1, a2, a3, a4, a5, a6 };
	return do_op(op, a, bytes, len);
}

/* ---- the image: made with arfd and ops.pno, then mapped privately by each side ---- */

static char dir[256], opsseg[512];
static uint64_t f_ino[4], d_ino, l_ino, p_ino, n_inodes;

static uint64_t gen_of(uint64_t ino)
{
	const uint8_t *img = sides[0].img;
	uint64_t itable, gen;
	memcpy(&itable, img + ARF_SB_ITABLE_OFF, 8);
	memcpy(&gen, img + itable + ino * ARF_INO_SIZE + ARF_I_GEN, 8);
	return gen;
}

static uint64_t size_of(uint64_t ino)
{
	const uint8_t *img = sides[0].img;
	uint64_t itable, size;
	memcpy(&itable, img + ARF_SB_ITABLE_OFF, 8);
	memcpy(&size, img + itable + ino * ARF_INO_SIZE + ARF_I_SIZE, 8);
	return size;
}

static int make_image(const char *img)
{
	char err[512];
	if (arf_mkfs(img, IMG_SIZE, 0, err, sizeof err) != 0) {
		CHECK(0, "mkfs: %s", err);
		return -1;
	}
	static struct arfd_config cfg;
	cfg.listen[cfg.n_listen++] = "tcp:127.0.0.1:0";
	cfg.arf_image = img;
	struct arfd *s = arfd_start(&cfg, err, sizeof err);
	if (!s) {
		CHECK(0, "arfd --arf %s: %s", img, err);
		return -1;
	}
	struct arc_opts o = { .timeout_ms = 60000 };
	struct arc *a = arc_connect(arfd_endpoint(s, "tcp"), &o, err, sizeof err);
	struct arf_client *c = a ? arf_client_open(a, opsseg, err, sizeof err) : NULL;
	int rc = -1;
	if (c) {
		char name[16];
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof name, "f%d", i);
			f_ino[i] = (uint64_t)arf_create(c, ARF_INO_ROOT, name, 0644, 0, 0);
		}
		d_ino = (uint64_t)arf_mkdir(c, ARF_INO_ROOT, "d", 0755, 0, 0);
		char target[300];
		memset(target, 't', sizeof target - 1);
		target[sizeof target - 1] = 0;
		l_ino = (uint64_t)arf_symlink(c, ARF_INO_ROOT, "l", target, 0, 0);
		p_ino = (uint64_t)arf_mknod(c, ARF_INO_ROOT, "p", S_IFIFO | 0644, 0, 0);
		/* a file made and removed: its inode is free, its generation old */
		int64_t gone = arf_create(c, ARF_INO_ROOT, "gone", 0644, 0, 0);
		rc = (int64_t)f_ino[3] > 0 && (int64_t)d_ino > 0 && (int64_t)l_ino > 0 &&
		     (int64_t)p_ino > 0 && gone > 0 && arf_unlink(c, ARF_INO_ROOT, "gone") == 0 ? 0 : -1;
		CHECK(rc == 0, "making the files: %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
		      f_ino[3], d_ino, l_ino, p_ino, gone);
		arf_client_close(c);
	} else {
		CHECK(0, "connect or ops segment: %s", err);
	}
	if (a)
		arc_close(a);
	arfd_stop(s, 5000);
	return rc;
}

/* ---- phases ---- */

static unsigned char *buf;         /* random bytes to write */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static uint64_t below(uint64_t n) { return n ? next_rand() % n : 0; }

#define MAXB ((int64_t)ARF_MAX_FILE_BLOCKS << ARF_BLOCK_SHIFT)

/* Overwrite a u32/u64 of both images at once. */
static void poke(uint64_t off, uint64_t v, unsigned size)
{
	for (int k = 0; k < 2; k++)
		memcpy(sides[k].img + off, &v, size);
}

/* Hostile and edge calls, each row one operation (args as the client passes them). */
struct row {
	enum dop op;
	int64_t a[7];
	size_t len;                /* bytes of args (write, append, writeafter) */
	int64_t want;              /* the result both must give (INT64_MIN: whatever they agree) */
};

static void test_table(void)
{
	uint64_t f = f_ino[0], g = gen_of(f);
	const int64_t any = INT64_MIN;
	const struct row rows[] = {
		{ W, { 0, 0, 0 }, 10, -EINVAL },                        /* inode 0: none */
		{ W, { (int64_t)n_inodes, 0, 0 }, 10, -EINVAL },        /* one past the table */
		{ W, { -1, 0, 0 }, 10, -EINVAL },
		{ W, { INT64_MIN, 0, 0 }, 10, -EINVAL },
		{ W, { (int64_t)d_ino, 0, 0 }, 10, -EISDIR },
		{ W, { (int64_t)l_ino, 0, 0 }, 10, -EINVAL },
		{ W, { (int64_t)p_ino, 0, 0 }, 10, -EINVAL },
		{ W, { ARF_INO_ROOT + 100, 0, 0 }, 10, -ENOENT },        /* a free inode */
		{ W, { (int64_t)f, 0, (int64_t)g + 1 }, 10, -ESTALE },
		{ W, { (int64_t)f, MAXB, 0 }, 1, -EFBIG },
		{ W, { (int64_t)f, MAXB - 1, 0 }, 2, -EFBIG },
		{ W, { (int64_t)f, -1, 0 }, 1, -EFBIG },
		{ W, { (int64_t)f, INT64_MIN, 0 }, 1, -EFBIG },
		{ W, { (int64_t)f, 0, (int64_t)g }, 0, 0 },             /* nothing to write */
		{ W, { (int64_t)f, 0, (int64_t)g }, 5000, 5000 },
		{ W, { (int64_t)f, MAXB - 1, 0 }, 1, 1 },                /* the last byte of 16 TiB */
		{ R, { (int64_t)f, MAXB - 4096, 4096, 0 }, 0, 4096 },
		{ R, { (int64_t)f, MAXB - 1, 100, 0 }, 0, 1 },
		{ R, { (int64_t)f, MAXB, 100, 0 }, 0, 0 },
		{ R, { (int64_t)f, -1, 100, 0 }, 0, 0 },
		{ R, { (int64_t)f, 4000, -1, 0 }, 0, -EINVAL },
		{ R, { (int64_t)f, 0, (64 << 20) + 1, 0 }, 0, -EINVAL },
		{ R, { (int64_t)f, 1000, 64 << 20, 0 }, 0, 64 << 20 },   /* mostly a hole */
		{ R, { (int64_t)f, 0, 10, (int64_t)g + 1 }, 0, -ESTALE },
		{ R, { (int64_t)d_ino, 0, 10, 0 }, 0, -EISDIR },
		{ R, { 0, 0, 10, 0 }, 0, -EINVAL },
		{ T, { (int64_t)f, MAXB + 1, 0 }, 0, -EFBIG },
		{ T, { (int64_t)f, -1, 0 }, 0, -EFBIG },
		{ T, { (int64_t)f, 3000, (int64_t)g + 7 }, 0, -ESTALE },
		{ T, { (int64_t)f, 3000, 0 }, 0, 0 },                    /* cuts the far block off */
		{ T, { (int64_t)f, MAXB, 0 }, 0, 0 },
		{ T, { (int64_t)f, 0, 0 }, 0, 0 },
		{ T, { (int64_t)p_ino, 0, 0 }, 0, -EINVAL },
		{ T, { ARF_INO_ROOT + 100, 0, 0 }, 0, -ENOENT },
		{ A, { (int64_t)f, (int64_t)g + 1 }, 10, -ESTALE },
		{ A, { (int64_t)d_ino, 0 }, 10, -EISDIR },
		{ A, { (int64_t)f, 0 }, 10, 10 },
		{ A, { (int64_t)f, (int64_t)g }, 9000, 9000 },
		{ WA, { (int64_t)f, 9010, 0, 9010 }, 100, 100 },        /* the size is there: no wait */
		{ WA, { (int64_t)f, 20000, 0, 1ll << 40 }, 100, 100 },   /* waits it out, then writes */
		{ WA, { 0, 0, 0, 0 }, 100, -EINVAL },
		{ S, { (int64_t)f, 128 }, 0, -EINVAL },
		{ S, { (int64_t)f, -1 }, 0, -EINVAL },
		{ S, { 0, 1 }, 0, -EINVAL },
		{ S, { -5, 1 }, 0, -EINVAL },
		{ S, { ARF_INO_ROOT + 100, 1 }, 0, -ENOENT },
		{ S, { (int64_t)f, 127, 0107777, 1000, 1001, 5, 6 }, 0, 0 },   /* the type stays */
		{ S, { (int64_t)f, 8 | 16, 0, 0, 0, -1, INT64_MIN }, 0, 0 },
		{ S, { (int64_t)d_ino, 1 | 2 | 4, 01777, 7, 8 }, 0, 0 },
		{ S, { (int64_t)p_ino, 32 | 64 }, 0, 0 },
		{ S, { (int64_t)l_ino, 8 | 32 | 16 | 64, 0, 0, 0, 1, 2 }, 0, 0 },
		{ F, { (int64_t)f, 0 }, 0, 0 },
		{ F, { (int64_t)f, (int64_t)g + 1 }, 0, -ESTALE },
		{ F, { (int64_t)d_ino, 0 }, 0, 0 },
		{ F, { ARF_INO_ROOT, 0 }, 0, 0 },
		{ F, { (int64_t)l_ino, 0 }, 0, 0 },
		{ F, { (int64_t)p_ino, 0 }, 0, 0 },
		{ F, { 0, 0 }, 0, -EINVAL },
		{ F, { (int64_t)n_inodes, 0 }, 0, -EINVAL },
		{ F, { ARF_INO_ROOT + 100, 0 }, 0, -ENOENT },
		{ W, { (int64_t)f_ino[1], 12345, 0 }, 70000, any },
		{ R, { (int64_t)f_ino[1], 0, 100000, 0 }, 0, 12345 + 70000 },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *w = &rows[i];
		int64_t v = do_op(w->op, w->a, buf, w->len);
		if (w->want != any)
			CHECK(v == w->want, "table row %zu: %s = %" PRId64 ", want %" PRId64, i,
			      op_name[w->op], v, w->want);
	}
	/* a lock held by a live run (this epoch's tag): write waits (pause), then EAGAIN, as do
	 * truncate and setattr after spinning; read takes no lock.  A tag of an older epoch is
	 * a dead server's: taken over.  All 64 journal slots busy: EAGAIN before any lock. */
	uint64_t itable, epoch, joff;
	memcpy(&itable, sides[0].img + ARF_SB_ITABLE_OFF, 8);
	memcpy(&epoch, sides[0].img + ARF_SB_EPOCH, 8);
	memcpy(&joff, sides[0].img + ARF_SB_JOURNAL_OFF, 8);
	uint64_t lock = itable + f_ino[1] * ARF_INO_SIZE + ARF_I_LOCK;
	poke(lock, epoch << 32 | 7, 8);
	CHECK(op7(W, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, buf, 10) == -EAGAIN, "write to a locked inode");
	CHECK(op7(T, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, NULL, 0) == -EAGAIN, "truncate of a locked inode");
	CHECK(op7(S, (int64_t)f_ino[1], 2, 0, 9, 0, 0, 0, NULL, 0) == -EAGAIN, "setattr of a locked inode");
	CHECK(op7(R, (int64_t)f_ino[1], 0, 10, 0, 0, 0, 0, NULL, 0) == 10, "read of a locked inode");
	poke(lock, (epoch - 1) << 32 | 7, 8);
	CHECK(op7(W, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, buf, 10) == 10, "write taking a stale lock over");
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, epoch << 32 | (k + 1), 8);
	CHECK(op7(W, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, buf, 10) == -EAGAIN, "write, no journal slot");
	CHECK(op7(A, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, buf, 10) == -EAGAIN, "append, no journal slot");
	CHECK(op7(T, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, NULL, 0) == -EAGAIN, "truncate, no journal slot");
	CHECK(op7(S, (int64_t)f_ino[1], 2, 0, 9, 0, 0, 0, NULL, 0) == -EAGAIN, "setattr, no journal slot");
	for (uint64_t k = 0; k < ARF_J_SLOTS; k++)
		poke(joff + k * ARF_J_SLOT_SIZE + ARF_J_OWNER, 0, 8);
	/* a failing msync: fsync passes its errno on, at the first range */
	for (int k = 0; k < 2; k++)
		sides[k].sync_rc = -EIO;
	CHECK(op7(F, (int64_t)f_ino[1], 0, 0, 0, 0, 0, 0, NULL, 0) == -EIO, "fsync with msync failing");
	CHECK(op7(F, (int64_t)d_ino, 0, 0, 0, 0, 0, 0, NULL, 0) == -EIO, "fsync of a directory");
	for (int k = 0; k < 2; k++)
		sides[k].sync_rc = 0;
}

/* Hole fills from the end backwards in a file of one-block extents: the chain grows, blocks
 * fill up and split; then truncates into the chain and the inline extents. */
static void test_extents(void)
{
	int64_t f = (int64_t)f_ino[2];
	const int n = 700;
	for (int i = n - 1; i >= 0; i--)
		op7(W, f, (int64_t)2 * i * ARF_BLOCK_SIZE + (i % 7), 0, 0, 0, 0, 0, buf + i, 100 + i % 300);
	for (int i = n - 1; i >= 0; i -= 3)
		op7(W, f, (int64_t)(2 * i + 1) * ARF_BLOCK_SIZE, 0, 0, 0, 0, 0, buf + 7 * i, ARF_BLOCK_SIZE);
	op7(F, f, 0, 0, 0, 0, 0, 0, NULL, 0);
	op7(R, f, 0, 8 << 20, 0, 0, 0, 0, NULL, 0);
	const int64_t cuts[] = { 2 * 600 * ARF_BLOCK_SIZE + 77, 2 * 400 * ARF_BLOCK_SIZE,
	                         2 * 300 * ARF_BLOCK_SIZE + 4095, 2 * 12 * ARF_BLOCK_SIZE + 1,
	                         3 * ARF_BLOCK_SIZE + 5, 0 };
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		op7(T, f, cuts[i], 0, 0, 0, 0, 0, NULL, 0);
		op7(R, f, 0, 8 << 20, 0, 0, 0, 0, NULL, 0);
	}
}

/* Speed, not a check: the same operation repeated on each side (alternately, so both meet
 * the same caches and the same neighbours on this shared machine), the median time of a
 * vm_run, per engine.  What pncc's translation costs against the hand-written segment. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void time_ops(unsigned reps)
{
	int64_t f = (int64_t)f_ino[1];
	struct { const char *what; enum dop op; int64_t a[7]; size_t len; } t[] = {
		{ "write 4 KiB in place", W, { f, 4096, 0 }, 4096 },
		{ "write 64 KiB in place", W, { f, 0, 0 }, 65536 },
		{ "append 512 B", A, { f, 0 }, 512 },
		{ "read 64 KiB", R, { f, 0, 65536, 0 }, 0 },
		{ "read 4 KiB", R, { f, 8192, 4096, 0 }, 0 },
		{ "truncate (same size)", T, { f, 0, 0 }, 0 },
		{ "setattr", S, { f, 1 | 2 | 8, 0644, 5, 0, 7, 0 }, 0 },
		{ "fsync", F, { f, 0 }, 0 },
	};
	double *ns = malloc(2 * (size_t)reps * sizeof *ns);
	if (!ns || !reps)
		return free(ns);
	printf("  vm_run, median us of %u runs each, C / asm:\n", reps);
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		printf("  %-22s", t[i].what);
		for (int e = VM_ENGINE_INTERP; e <= VM_ENGINE_JIT; e++) {
			if (t[i].op == T)
				t[i].a[1] = (int64_t)size_of((uint64_t)f);
			for (unsigned r = 0; r < 2 * reps; r++) {
				int k = (int)(r & 1) ^ (int)(r / 2 & 1);
				struct result res;
				struct timespec t0, t1;
				clock_gettime(CLOCK_MONOTONIC, &t0);
				run_side(&sides[k], t[i].op, t[i].a, buf, t[i].len, e, &res);
				clock_gettime(CLOCK_MONOTONIC, &t1);
				ns[k * reps + r / 2] = (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
				                       (double)(t1.tv_nsec - t0.tv_nsec);
			}
			qsort(ns, reps, sizeof *ns, cmp_double);
			qsort(ns + reps, reps, sizeof *ns, cmp_double);
			printf("  %s %6.2f / %6.2f", e == VM_ENGINE_JIT ? "jit" : "interp",
			       ns[reps / 2] / 1e3, ns[reps + reps / 2] / 1e3);
		}
		printf("\n");
	}
	free(ns);
	/* both sides ran the same runs: still the same bytes (times come from the counter) */
	CHECK(memcmp(sides[0].img, sides[1].img, IMG_SIZE) == 0, "images differ after the timing");
}

/* Random operations over the files (and now and then anything else). */
static void test_random(unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		uint64_t pick = below(100);
		int64_t ino = (int64_t)f_ino[below(4)];
		if (below(40) == 0) {
			const int64_t odd[] = { 0, (int64_t)d_ino, (int64_t)l_ino, (int64_t)p_ino,
			                        (int64_t)n_inodes, -1, ARF_INO_ROOT + 100 };
			ino = odd[below(sizeof odd / sizeof odd[0])];
		}
		int64_t gen = 0;
		if (ino > 0 && (uint64_t)ino < n_inodes && below(10) == 0)
			gen = (int64_t)gen_of((uint64_t)ino) + (int64_t)below(2);
		/* offsets: mostly the first 2 MiB (block-aligned one time in three), some far */
		int64_t off = (int64_t)below(2u << 20);
		if (below(3) == 0)
			off &= ~(int64_t)(ARF_BLOCK_SIZE - 1);
		if (below(50) == 0)
			off = below(2) ? MAXB - (int64_t)below(10000) : (int64_t)next_rand();
		size_t len = below(4) == 0 ? (size_t)below(200000) : (size_t)below(9000);
		size_t from = (size_t)below(256);
		if (pick < 35)
			op7(W, ino, off, gen, 0, 0, 0, 0, buf + from, len);
		else if (pick < 45)
			op7(A, ino, gen, 0, 0, 0, 0, 0, buf + from, len ? len : 1);
		else if (pick < 50)
			op7(WA, ino, off, gen, below(4) ? off : (int64_t)(3u << 20), 0, 0, 0, buf + from, len);
		else if (pick < 72)
			op7(R, ino, off, below(20) ? (int64_t)below(300000) : (int64_t)below(70u << 20), gen, 0,
			    0, 0, NULL, 0);
		else if (pick < 85)
			op7(T, ino, below(10) ? (int64_t)below(3u << 20) : off, gen, 0, 0, 0, 0, NULL, 0);
		else if (pick < 93)
			op7(S, ino, (int64_t)below(140), (int64_t)next_rand(), (int64_t)next_rand(),
			    (int64_t)next_rand(), (int64_t)next_rand(), (int64_t)next_rand(), NULL, 0);
		else
			op7(F, ino, gen, 0, 0, 0, 0, 0, NULL, 0);
		if (n_diffs > 20) {
			printf("test_arf_datadiff: more than 20 differences, stopping the random phase\n");
			break;
		}
	}
}

/* A full image: one file takes every free block (writes until ENOSPC), then random writes
 * and appends meet ENOSPC, short counts and appends that keep a range they could not fill,
 * with truncates giving blocks back in between. */
static void test_full(void)
{
	int64_t f = (int64_t)f_ino[0];
	for (int64_t off = 0; off < (int64_t)IMG_SIZE * 2;) {
		int64_t v = op7(W, f, off, 0, 0, 0, 0, 0, buf, 200000);
		if (v <= 0)
			break;
		off += v;
	}
	for (int i = 0; i < 400; i++) {
		int64_t ino = (int64_t)f_ino[below(4)];
		int64_t off = (int64_t)below(8u << 20);
		size_t len = (size_t)below(30000) + 1;
		switch (below(8)) {
		case 0: case 1: op7(W, ino, off, 0, 0, 0, 0, 0, buf + below(256), len); break;
		case 2: case 3: op7(A, ino, 0, 0, 0, 0, 0, 0, buf + below(256), len); break;
		case 4: op7(WA, ino, off, 0, off, 0, 0, 0, buf, len); break;
		case 5: op7(R, ino, off, (int64_t)len * 10, 0, 0, 0, 0, NULL, 0); break;
		case 6: if (below(8) == 0)     /* a little room now and then */
				op7(T, ino, (int64_t)below(4u << 20), 0, 0, 0, 0, 0, NULL, 0);
			break;
		default: op7(W, ino, off & ~(int64_t)(ARF_BLOCK_SIZE - 1), 0, 0, 0, 0, 0, buf, len); break;
		}
	}
}

/* A damaged file: extents naming metadata, empty ones, extent-block links into the
 * superblock or off the image, counts out of range; random operations on it after each. */
static void test_damaged(void)
{
	uint64_t itable, nblocks;
	memcpy(&itable, sides[0].img + ARF_SB_ITABLE_OFF, 8);
	memcpy(&nblocks, sides[0].img + ARF_SB_N_BLOCKS, 8);
	int64_t f = (int64_t)f_ino[3];
	uint64_t c = itable + (uint64_t)f * ARF_INO_SIZE;
	/* give it extents and a chain first */
	op7(T, f, 0, 0, 0, 0, 0, 0, NULL, 0);
	for (int i = 40; i >= 0; i--)
		op7(W, f, (int64_t)2 * i * ARF_BLOCK_SIZE, 0, 0, 0, 0, 0, buf + i, 3000);
	uint64_t xblk;
	memcpy(&xblk, sides[0].img + c + ARF_I_XBLK, 8);
	CHECK(xblk != 0, "the damaged file has an extent block");
	struct { uint64_t off; uint64_t v; unsigned size; } pokes[] = {
		{ c + ARF_I_BODY + 2 * ARF_E_SIZE + ARF_E_PBLK, 1, 8 },            /* into metadata */
		{ c + ARF_I_BODY + 3 * ARF_E_SIZE + ARF_E_LEN, 0, 4 },             /* empty */
		{ c + ARF_I_BODY + 4 * ARF_E_SIZE + ARF_E_PBLK, nblocks - 1, 8 },  /* runs off the end */
		{ c + ARF_I_BODY + 5 * ARF_E_SIZE + ARF_E_PBLK, UINT64_MAX - 1, 8 },  /* wraps */
		{ c + ARF_I_BODY + 6 * ARF_E_SIZE + ARF_E_LEN, 0xffffffff, 4 },
		{ xblk + ARF_X_EXT + ARF_E_PBLK, 3, 8 },
		{ xblk + ARF_X_N, 300, 4 },                                        /* too many */
		{ xblk + ARF_X_N, 0, 4 },                                          /* none */
		{ xblk + ARF_X_NEXT, 4096 + 8, 8 },                                /* unaligned */
		{ c + ARF_I_XBLK, 0, 8 },                                          /* a lost chain */
		{ c + ARF_I_XBLK, nblocks * ARF_BLOCK_SIZE, 8 },                   /* off the image */
		{ c + ARF_I_NEXTENTS, 0xffffffff, 4 },
		{ c + ARF_I_SIZE, UINT64_MAX, 8 },
		{ c + ARF_I_MODE, 0, 4 },                                          /* freed meanwhile */
	};
	for (size_t p = 0; p < sizeof pokes / sizeof pokes[0]; p++) {
		poke(pokes[p].off, pokes[p].v, pokes[p].size);
		for (int i = 0; i < 12; i++) {
			int64_t off = (int64_t)below(90) * ARF_BLOCK_SIZE + (int64_t)below(5000);
			switch (below(6)) {
			case 0: op7(W, f, off, 0, 0, 0, 0, 0, buf, (size_t)below(20000) + 1); break;
			case 1: op7(A, f, 0, 0, 0, 0, 0, 0, buf, (size_t)below(9000) + 1); break;
			case 2: op7(R, f, off, (int64_t)below(400000), 0, 0, 0, 0, NULL, 0); break;
			case 3: op7(T, f, (int64_t)below(90 * ARF_BLOCK_SIZE), 0, 0, 0, 0, 0, NULL, 0); break;
			case 4: op7(F, f, 0, 0, 0, 0, 0, 0, NULL, 0); break;
			default: op7(S, f, 127, 0644, 1, 2, 3, 4, NULL, 0); break;
			}
		}
	}
}

static void fsck_side(const char *what)
{
	char img[300];
	snprintf(img, sizeof img, "%s/check.img", dir);
	int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0 && write(fd, sides[0].img, IMG_SIZE) == (ssize_t)IMG_SIZE;
	if (fd >= 0)
		close(fd);
	struct arf_fsck_opts o = { 0 };
	struct arf_fsck_result r;
	CHECK(ok && arf_fsck(img, &o, &r) == ARF_FSCK_CLEAN, "%s: fsck of the C side's image not clean",
	      what);
	unlink(img);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	arfd_log_setup(ARFD_LOG_ERROR, false);
	signal(SIGPIPE, SIG_IGN);
	const char *b = getenv("BUILD"), *e;
	b = b && *b ? b : "build";
	char cseg[512], aseg[512];
	snprintf(opsseg, sizeof opsseg, "%s/arfseg/ops.pno", b);
	snprintf(cseg, sizeof cseg, "%s/arfseg/data.pno", b);
	snprintf(aseg, sizeof aseg, "%s/arfseg/data_asm.pno", b);
	if ((e = getenv("DATA_C_SEG")) && *e)
		snprintf(cseg, sizeof cseg, "%s", e);
	if ((e = getenv("DATA_ASM_SEG")) && *e)
		snprintf(aseg, sizeof aseg, "%s", e);
	unsigned count = (e = getenv("DATADIFF_OPS")) && *e ? (unsigned)strtoul(e, NULL, 10) : 3000;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_arf_datadiff.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	char img[300];
	snprintf(img, sizeof img, "%s/fresh.img", dir);
	buf = malloc(256 + 300000);
	for (size_t i = 0; buf && i < 256 + 300000; i++)
		buf[i] = (unsigned char)(next_rand() >> 24);
	if (buf && make_image(img) == 0 && side_open(&sides[0], "C", cseg, img) == 0 &&
	    side_open(&sides[1], "asm", aseg, img) == 0) {
		memcpy(&n_inodes, sides[0].img + ARF_SB_N_INODES, 8);
		test_table();
		time_ops((e = getenv("DATADIFF_TIME_REPS")) && *e ? (unsigned)strtoul(e, NULL, 10) : 300);
		test_extents();
		fsck_side("after the table and the extents");
		test_random(count);
		fsck_side("after the random operations");
		test_full();
		fsck_side("after the full image");
		test_damaged();
		printf("test_arf_datadiff: %u operations on both segments, %d differing\n", n_ops, n_diffs);
		for (int o = 0; o < 7; o++) {
			printf("  %-10s >0: %u, 0: %u", op_name[o], seen[o][129], seen[o][0]);
			for (int v = 1; v < 128; v++)
				if (seen[o][v])
					printf(", %s: %u", v == 1 ? "short" : strerrorname_np(v), seen[o][v]);
			printf(seen[o][128] ? ", traps: %u\n" : "\n", seen[o][128]);
		}

	}
	side_close(&sides[0]);
	side_close(&sides[1]);
	free(buf);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
