/* test_arf_image.c: ARF images: mkfs, the superblock check, fsck and its repairs, attach
 * (journal roll-back), a 200 GiB sparse image, and arfd serving an image as region "arf".
 *
 * A populated image is built with libarf's own C helpers (directories, files with inline and
 * overflow extents, hard links, short and long symlinks, a fifo, a directory of 1000
 * entries); fsck must find it clean.  Then each invariant is broken by writing bytes into a
 * copy, and fsck must name the problem (message pinned), repair it, and a second fsck must
 * find the image clean.  Prints "N passed, N failed" last.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf_int.h"
#include "server.h"

#include "arf_check.h"

/* ---- building a populated image with the library's helpers ---- */

struct img {
	struct arf_image m;
	uint64_t next_ino;
};

static uint8_t *B(struct img *g) { return g->m.base; }
static struct arf_sb *SB(struct img *g) { return g->m.sb; }
static uint64_t *bbmap(struct img *g) { return (uint64_t *)(B(g) + SB(g)->bbmap_off); }
static uint64_t *ibmap(struct img *g) { return (uint64_t *)(B(g) + SB(g)->ibmap_off); }
static struct arf_inode *I(struct img *g, uint64_t i) { return ino_at(B(g), SB(g), i); }

static bool img_open(struct img *g, const char *path)
{
	char err[512];
	if (arf_image_open(path, ARF_OPEN_RW, &g->m, err, sizeof err) != 0) {
		printf("open %s: %s\n", path, err);
		return false;
	}
	g->next_ino = 3;
	while (bit_get(ibmap(g), g->next_ino))
		g->next_ino++;
	return true;
}

/* Counters from the bitmaps, as every C path that allocates does at its end. */
static void recount(struct img *g)
{
	uint64_t used = 0;
	for (uint64_t b = 0; b < SB(g)->n_blocks; b++)
		used += bit_get(bbmap(g), b);
	SB(g)->free_blocks = SB(g)->n_blocks - used;
	used = 0;
	for (uint64_t i = 0; i < SB(g)->n_inodes; i++)
		used += bit_get(ibmap(g), i);
	SB(g)->free_inodes = SB(g)->n_inodes - used;
}

static void img_close(struct img *g)
{
	recount(g);
	char err[256];
	arf_image_close(&g->m, err, sizeof err);
}

static uint64_t new_inode(struct img *g, uint32_t mode, uint32_t nlink)
{
	uint64_t i = g->next_ino++;
	bit_set(ibmap(g), i);
	struct arf_inode *d = I(g, i);
	memset(d, 0, sizeof *d);
	d->mode = mode;
	d->nlink = nlink;
	d->gen = SB(g)->next_gen++;
	return i;
}

static uint64_t new_dir(struct img *g, uint64_t parent, const char *name)
{
	uint64_t i = new_inode(g, ARF_S_IFDIR | 0755, 2);
	I(g, i)->parent = parent;
	if (name) {
		arf_dir_add(B(g), SB(g), bbmap(g), parent, name, strlen(name), i, ARF_DT_DIR);
		I(g, parent)->nlink++;
	}
	return i;
}

static void link_to(struct img *g, uint64_t d, const char *name, uint64_t i)
{
	int rc = arf_dir_add(B(g), SB(g), bbmap(g), d, name, strlen(name), i, mode_dtype(I(g, i)->mode));
	if (rc != 0)
		printf("arf_dir_add %s: %s\n", name, strerror(-rc));
}

static uint64_t blocks(struct img *g, uint64_t n)
{
	int64_t b = arf_bits_claim(bbmap(g), SB(g)->n_blocks, SB(g)->data_off >> ARF_BLOCK_SHIFT, n);
	return b < 0 ? 0 : (uint64_t)b;
}

/* A file of n_ext extents of 2 blocks each, at every other 2 logical blocks (holes between),
 * the extents past the inline nine in extent blocks. */
static uint64_t new_file(struct img *g, uint64_t d, const char *name, unsigned n_ext)
{
	uint64_t i = new_inode(g, ARF_S_IFREG | 0644, 1);
	struct arf_inode *f = I(g, i);
	struct arf_xblk *xb = NULL;
	for (unsigned k = 0; k < n_ext; k++) {
		struct arf_extent e = { .lblk = 4 * k, .len = 2, .pblk = blocks(g, 2) };
		memset(B(g) + (e.pblk << ARF_BLOCK_SHIFT), 'a' + k % 26, 2 * ARF_BLOCK_SIZE);
		if (k < ARF_I_INLINE_EXT) {
			f->u.ext[k] = e;
		} else {
			if (!xb || xb->n == ARF_X_MAX) {
				uint64_t off = blocks(g, 1) << ARF_BLOCK_SHIFT;
				struct arf_xblk *nx = (struct arf_xblk *)(B(g) + off);
				memset(nx, 0, sizeof *nx);
				nx->magic = ARF_X_MAGIC_VALUE;
				if (xb)
					xb->next = off;
				else
					f->xblk = off;
				xb = nx;
				f->nblocks++;
			}
			xb->ext[xb->n++] = e;
		}
		f->nblocks += 2;
	}
	f->n_extents = n_ext;
	f->size = n_ext ? (uint64_t)(4 * (n_ext - 1) + 2) * ARF_BLOCK_SIZE - 100 : 0;
	if (d)
		link_to(g, d, name, i);
	return i;
}

static uint64_t new_symlink(struct img *g, uint64_t d, const char *name, const char *target)
{
	uint64_t i = new_inode(g, ARF_S_IFLNK | 0777, 1);
	struct arf_inode *s = I(g, i);
	size_t n = strlen(target);
	s->size = n;
	if (n <= ARF_I_BODY_LEN) {
		s->flags = ARF_IF_INLINE;
		memcpy(s->u.target, target, n);
	} else {
		uint64_t b = blocks(g, 1);
		memset(B(g) + (b << ARF_BLOCK_SHIFT), 0, ARF_BLOCK_SIZE);
		memcpy(B(g) + (b << ARF_BLOCK_SHIFT), target, n);
		s->u.ext[0] = (struct arf_extent){ 0, 1, b };
		s->n_extents = 1;
		s->nblocks = 1;
	}
	link_to(g, d, name, i);
	return i;
}

/* Inode numbers of the populated image (fixed by the order below). */
enum { A = 3, F = 4, BIG = 5, SHORT = 6, LONG = 7, FIFO = 8, MANY = 9 };

static bool populate(const char *path)
{
	char err[512];
	if (arf_mkfs(path, 8 << 20, 2048, err, sizeof err) != 0) {
		printf("mkfs: %s\n", err);
		return false;
	}
	struct img g;
	if (!img_open(&g, path))
		return false;
	uint64_t a = new_dir(&g, ARF_INO_ROOT, "a");
	uint64_t f = new_file(&g, a, "f", 3);
	uint64_t big = new_file(&g, ARF_INO_ROOT, "big", 300);   /* 9 inline + 2 extent blocks */
	uint64_t s = new_symlink(&g, ARF_INO_ROOT, "s", "a/f");
	char longt[1000];
	memset(longt, 'x', sizeof longt - 1);
	longt[sizeof longt - 1] = '\0';
	uint64_t l = new_symlink(&g, ARF_INO_ROOT, "l", longt);
	uint64_t p = new_inode(&g, ARF_S_IFIFO | 0600, 1);
	link_to(&g, ARF_INO_ROOT, "p", p);
	link_to(&g, a, "g", f);                                   /* a hard link */
	I(&g, f)->nlink = 2;
	uint64_t many = new_dir(&g, ARF_INO_ROOT, "many");
	for (int k = 0; k < 1000; k++) {
		char name[32];
		snprintf(name, sizeof name, "f%04d", k);
		uint64_t q = new_inode(&g, ARF_S_IFIFO | 0600, 1);
		link_to(&g, many, name, q);
	}
	bool ok = a == A && f == F && big == BIG && s == SHORT && l == LONG && p == FIFO &&
	          many == MANY && I(&g, MANY)->u.dir.nslots == 2048;
	if (!ok)
		printf("populate: unexpected inode numbers or table size\n");
	img_close(&g);
	return ok;
}

static bool copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool ok = in >= 0 && out >= 0;
	static char buf[1 << 16];
	for (ssize_t n; ok && (n = read(in, buf, sizeof buf)) > 0;)
		ok = write(out, buf, (size_t)n) == n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

/* The record of name in directory d (offset), by walking its blocks; 0 if absent. */
static uint64_t find_rec(struct img *g, uint64_t d, const char *name)
{
	for (uint64_t b = I(g, d)->u.dir.head; b; b = ((struct arf_dblk *)(B(g) + b))->next) {
		struct arf_dblk *h = (struct arf_dblk *)(B(g) + b);
		for (uint64_t o = ARF_B_HDR; o < h->used; o += ((struct arf_rec *)(B(g) + b + o))->len) {
			struct arf_rec *r = (struct arf_rec *)(B(g) + b + o);
			if (r->ino && r->name_len == strlen(name) && !memcmp(r->name, name, r->name_len))
				return b + o;
		}
	}
	return 0;
}

/* The slot of the record at rec in directory d. */
static struct arf_slot *find_slot(struct img *g, uint64_t d, uint64_t rec)
{
	struct arf_slot *t = (struct arf_slot *)(B(g) + I(g, d)->u.dir.table);
	for (uint64_t s = 0; s < I(g, d)->u.dir.nslots; s++)
		if (t[s].rec == rec)
			return &t[s];
	return NULL;
}

/* ---- corruptions: each breaks one invariant of a copy of the populated image ---- */

typedef void corrupt_fn(struct img *g);

static void c_nlink_file(struct img *g) { I(g, F)->nlink = 5; }
static void c_nlink_dir(struct img *g) { I(g, A)->nlink = 7; }
static void c_ibmap(struct img *g) { bit_clr(ibmap(g), SHORT); }
static void c_bbmap(struct img *g) { bit_set(bbmap(g), SB(g)->n_blocks - 3); }
static void c_free_blocks(struct img *g) { SB(g)->free_blocks += 10; }
static void c_free_inodes(struct img *g) { SB(g)->free_inodes -= 1; }
static void c_ext_outside(struct img *g) { I(g, F)->u.ext[1].pblk = SB(g)->n_blocks + 5; }
static void c_ext_shared(struct img *g) { I(g, BIG)->u.ext[0].pblk = I(g, F)->u.ext[0].pblk; }
static void c_ext_past_eof(struct img *g) { I(g, F)->size = 1; }
static void c_ext_order(struct img *g) { I(g, BIG)->u.ext[3].lblk = 0; }
static void c_xblk_magic(struct img *g) { ((struct arf_xblk *)(B(g) + I(g, BIG)->xblk))->magic = 7; }
static void c_nblocks(struct img *g) { I(g, BIG)->nblocks += 1; }
static void c_slot_hash(struct img *g)
{
	find_slot(g, MANY, find_rec(g, MANY, "f0042"))->hash ^= 1;
}
static void c_slot_missing(struct img *g)
{
	find_slot(g, MANY, find_rec(g, MANY, "f0500"))->rec = ARF_T_EMPTY;
}
static void c_rec_hash(struct img *g)
{
	((struct arf_rec *)(B(g) + find_rec(g, ARF_INO_ROOT, "big")))->hash ^= 0x100;
}
static void c_rec_free_ino(struct img *g)
{
	((struct arf_rec *)(B(g) + find_rec(g, ARF_INO_ROOT, "p")))->ino = 1500;
}
static void c_rec_type(struct img *g)
{
	((struct arf_rec *)(B(g) + find_rec(g, ARF_INO_ROOT, "s")))->type = ARF_DT_REG;
}
static void c_rec_malformed(struct img *g)
{
	((struct arf_rec *)(B(g) + find_rec(g, MANY, "f0100")))->len = 3;
}
static void c_rec_name(struct img *g)
{
	struct arf_rec *r = (struct arf_rec *)(B(g) + find_rec(g, MANY, "f0007"));
	r->name[2] = '/';
	r->hash = arf_name_hash(r->name, r->name_len);
	find_slot(g, MANY, (uint64_t)((uint8_t *)r - B(g)))->hash = r->hash;
}
static void c_dup_name(struct img *g)
{
	uint64_t off = find_rec(g, MANY, "f0009");
	struct arf_rec *r = (struct arf_rec *)(B(g) + off);
	struct arf_slot *s = find_slot(g, MANY, off);
	memcpy(r->name, "f0008", 5);
	r->hash = arf_name_hash("f0008", 5);
	s->hash = r->hash;
}
static void c_orphan(struct img *g)
{
	new_inode(g, ARF_S_IFREG | 0644, 1);
	recount(g);
}
static void c_orphan_unlinked(struct img *g)
{
	uint64_t i = new_file(g, 0, NULL, 2);
	I(g, i)->nlink = 0;
	recount(g);
}
static void c_bad_mode(struct img *g) { I(g, FIFO)->mode = 0170600; }   /* no S_IF* type */
/* the fifo made a socket or a device (its entry's type then also wrong) */
static void c_socket_rdev(struct img *g) { I(g, FIFO)->mode = ARF_S_IFSOCK | 0600; I(g, FIFO)->rdev = 5; }
static void c_device_size(struct img *g) { I(g, FIFO)->mode = ARF_S_IFCHR | 0600; I(g, FIFO)->rdev = 0x103; I(g, FIFO)->size = 10; }
static void c_symlink_nul(struct img *g) { I(g, SHORT)->u.target[1] = '\0'; }
static void c_symlink_len0(struct img *g) { I(g, SHORT)->size = 0; }
static void c_symlink_len_big(struct img *g) { I(g, LONG)->size = 5000; }
static void c_symlink_inline_long(struct img *g) { I(g, SHORT)->size = 200; }
static void c_symlink_not_inline(struct img *g) { I(g, SHORT)->flags = 0; }
static void c_symlink_long_short(struct img *g) { I(g, LONG)->size = 100; }
static void c_symlink_two_blocks(struct img *g) { I(g, LONG)->u.ext[0].len = 2; }
static void c_symlink_outside(struct img *g) { I(g, LONG)->u.ext[0].pblk = 3; }
static void c_symlink_far(struct img *g) { I(g, LONG)->u.ext[0].pblk = 1ull << 40; }
static void c_symlink_block_nul(struct img *g)
{
	B(g)[(I(g, LONG)->u.ext[0].pblk << ARF_BLOCK_SHIFT) + 500] = '\0';
}
static void c_nlink_hard_low(struct img *g) { I(g, F)->nlink = 1; }
static void c_nlink_third_entry(struct img *g)
{
	link_to(g, ARF_INO_ROOT, "third", F);      /* a third entry, nlink still 2 */
	recount(g);
}
static void c_nlink_symlink(struct img *g)
{
	link_to(g, A, "s2", SHORT);                 /* a hard link to a symlink, nlink still 1 */
	recount(g);
}
static void c_table_nslots(struct img *g) { I(g, MANY)->u.dir.nslots = 1000; }
static void c_parent(struct img *g) { I(g, A)->parent = MANY; }
static void c_dir_size(struct img *g) { I(g, A)->size = 12345; }
static void c_dblk_live(struct img *g) { ((struct arf_dblk *)(B(g) + I(g, MANY)->u.dir.head))->live += 2; }
static void c_dir_tail(struct img *g) { I(g, MANY)->u.dir.tail = I(g, MANY)->u.dir.head; }
static void c_dir_nent(struct img *g) { I(g, MANY)->u.dir.nent = 999; }
static void c_loop(struct img *g)
{
	uint64_t x = new_dir(g, 0, NULL), y = new_dir(g, 0, NULL);
	link_to(g, x, "y", y);
	link_to(g, y, "x", x);
	I(g, x)->nlink = I(g, y)->nlink = 3;
	I(g, x)->parent = y;
	I(g, y)->parent = x;
	recount(g);
}
static void c_next_gen(struct img *g) { SB(g)->next_gen = 2; }
static void c_hints(struct img *g) { SB(g)->balloc_hint = 1ull << 40; }
static void c_inode0(struct img *g) { I(g, 0)->mode = ARF_S_IFREG; }
static void c_journal_bad(struct img *g)
{
	struct arf_jslot *j = (struct arf_jslot *)(B(g) + SB(g)->journal_off + 3 * ARF_J_SLOT_SIZE);
	j->owner = 1;
	j->n_undo = 100000;
}
static void c_lostfound_gone(struct img *g)
{
	/* lost+found removed, and an orphan that needs it */
	struct arf_rec *r = (struct arf_rec *)(B(g) + find_rec(g, ARF_INO_ROOT, "lost+found"));
	r->ino = 0;
	((struct arf_dblk *)(B(g) + I(g, ARF_INO_ROOT)->u.dir.head))->live--;
	find_slot(g, ARF_INO_ROOT, (uint64_t)((uint8_t *)r - B(g)))->rec = ARF_T_TOMB;
	I(g, ARF_INO_ROOT)->u.dir.nent--;
	I(g, ARF_INO_ROOT)->u.dir.ntomb++;
	I(g, ARF_INO_ROOT)->nlink--;
	memset(I(g, ARF_INO_LOSTFOUND), 0, ARF_INO_SIZE);
	bit_clr(ibmap(g), ARF_INO_LOSTFOUND);
	new_inode(g, ARF_S_IFIFO | 0644, 1);
	recount(g);
}

static const struct corruption {
	const char *name;
	corrupt_fn *fn;
	const char *want;              /* in the report of the checking run */
	int want_rc;                   /* of the checking run: 4, or 0 for notes only */
} corruptions[] = {
	{ "file link count", c_nlink_file, "inode 4 (regular file): link count 5, should be 2", 4 },
	{ "dir link count", c_nlink_dir, "inode 3 (directory): link count 7, should be 2", 4 },
	{ "inode bitmap", c_ibmap, "inode bitmap: 1 inodes in use are marked free (first: 6)", 4 },
	{ "block bitmap", c_bbmap, "block bitmap: 1 free blocks are marked in use (first: 2045)", 4 },
	{ "free blocks", c_free_blocks, "superblock: free blocks counter is", 4 },
	{ "free inodes", c_free_inodes, "superblock: free inodes counter is", 4 },
	{ "extent outside", c_ext_outside, "inode 4: extent 1 (file blocks 4+2 at block 2053) lies outside the data area", 4 },
	{ "extent shared", c_ext_shared, "inode 5: extent 0 (file blocks 0+2 at block", 4 },
	{ "extent past eof", c_ext_past_eof, "inode 4: extent 1 (file blocks 4+2 at", 4 },
	{ "extent order", c_ext_order, "overlaps the extent before it or is out of order", 4 },
	{ "extent block", c_xblk_magic, "inode 5: extent block", 4 },
	{ "block count", c_nblocks, "inode 5 (regular file): block count 603, it owns 602", 4 },
	{ "slot hash", c_slot_hash, "holds a hash that differs from its record's", 4 },
	{ "slot missing", c_slot_missing, "directory 9: entry 'f0500' (inode 510) is missing from the slot table", 4 },
	{ "record hash", c_rec_hash, "directory 1: entry 'big' has hash", 4 },
	{ "entry to free inode", c_rec_free_ino, "directory 1: entry 'p' names inode 1500, which is not in use", 4 },
	{ "entry type", c_rec_type, "directory 1: entry 's' has type 8, inode 6 is a symlink", 4 },
	{ "record malformed", c_rec_malformed, "is malformed (length 3,", 4 },
	{ "record name", c_rec_name, "directory 9: entry 'f0/07' has an invalid name", 4 },
	{ "duplicate name", c_dup_name, "directory 9: two entries named 'f0008'", 4 },
	{ "orphan", c_orphan, "(regular file): in no directory", 4 },
	{ "orphan unlinked", c_orphan_unlinked, "(regular file): link count 0 and in no directory", 4 },
	{ "bad mode", c_bad_mode, "inode 8: mode 0170600 is no file type ARF knows", 4 },
	{ "socket with a device number", c_socket_rdev, "inode 8 (socket): has a size, extents, flags or a device number", 4 },
	{ "device with a size", c_device_size, "inode 8 (character device): has a size, extents or flags", 4 },
	{ "symlink nul", c_symlink_nul, "inode 6 (symlink): has a NUL byte in its target", 4 },
	{ "symlink length 0", c_symlink_len0, "inode 6 (symlink): has a target length outside 1..4095", 4 },
	{ "symlink length 5000", c_symlink_len_big, "inode 7 (symlink): has a target length outside 1..4095", 4 },
	{ "symlink inline too long", c_symlink_inline_long, "inode 6 (symlink): is marked inline but is too long", 4 },
	{ "symlink not inline", c_symlink_not_inline, "inode 6 (symlink): is short enough to be inline but is not", 4 },
	{ "symlink block too short", c_symlink_long_short, "inode 7 (symlink): is short enough to be inline but is not", 4 },
	{ "symlink two blocks", c_symlink_two_blocks, "inode 7 (symlink): should have its target in exactly one block", 4 },
	{ "symlink block outside", c_symlink_outside, "inode 7: extent 0 (file blocks 0+1 at block 3) lies outside the data area", 4 },
	{ "symlink block past the image", c_symlink_far, "inode 7: extent 0 (file blocks 0+1 at block 1099511627776) lies outside the data area", 4 },
	{ "symlink block nul", c_symlink_block_nul, "inode 7 (symlink): has a NUL byte in its target", 4 },
	{ "hard link count low", c_nlink_hard_low, "inode 4 (regular file): link count 1, should be 2", 4 },
	{ "hard link uncounted", c_nlink_third_entry, "inode 4 (regular file): link count 2, should be 3", 4 },
	{ "symlink link uncounted", c_nlink_symlink, "inode 6 (symlink): link count 1, should be 2", 4 },
	{ "table geometry", c_table_nslots, "directory 9: slot table at byte", 4 },
	{ "parent", c_parent, "directory 3: parent field says 9, its entry is in directory 1", 4 },
	{ "dir size", c_dir_size, "directory 3: size 12345, its 1 blocks make 4096", 4 },
	{ "block live count", c_dblk_live, "live records, it holds", 4 },
	{ "dir tail", c_dir_tail, "directory 9: tail block is byte", 4 },
	{ "dir entry count", c_dir_nent, "directory 9: counts 999 entries", 4 },
	{ "directory loop", c_loop, "not reachable from the root (its entry is in a loop of directories)", 4 },
	{ "next generation", c_next_gen, "superblock: next generation 2 is not above the largest in use", 4 },
	{ "hints", c_hints, "superblock: allocation hints", 4 },
	{ "inode 0", c_inode0, "inode 0: reserved", 4 },
	{ "journal malformed", c_journal_bad, "journal slot 3 claims 100000 undo records", 4 },
	{ "lost+found gone", c_lostfound_gone, "in no directory", 4 },
};

static void test_corruptions(const char *base)
{
	for (size_t k = 0; k < sizeof corruptions / sizeof corruptions[0]; k++) {
		const struct corruption *c = &corruptions[k];
		const char *p = path_of("corrupt.img");
		if (!copy_file(base, p)) {
			CHECK(0, "%s: copy", c->name);
			continue;
		}
		struct img g;
		if (!img_open(&g, p)) {
			CHECK(0, "%s: open", c->name);
			continue;
		}
		c->fn(&g);
		char err[256];
		arf_image_close(&g.m, err, sizeof err);
		int rc = fsck(p, false);
		CHECK(rc == c->want_rc, "%s: fsck exit %d, want %d; report:\n%s", c->name, rc, c->want_rc, report);
		CHECK(strstr(report, c->want), "%s: '%s' not in the report:\n%s", c->name, c->want, report);
		rc = fsck(p, true);
		CHECK(rc == ARF_FSCK_REPAIRED, "%s: fsck --repair exit %d, want 1; report:\n%s", c->name, rc, report);
		CHECK(strstr(report, "  repaired: "), "%s: no repair reported:\n%s", c->name, report);
		rc = fsck(p, false);
		CHECK(rc == ARF_FSCK_CLEAN, "%s: fsck after repair exit %d, want 0; report:\n%s", c->name, rc, report);
	}
}

/* What the repairs did, beyond a clean verdict. */
static void test_repair_results(const char *base)
{
	const char *p = path_of("orphan.img");
	copy_file(base, p);
	struct img g;
	img_open(&g, p);
	c_orphan(&g);
	uint64_t orphan = g.next_ino - 1;
	char err[256];
	arf_image_close(&g.m, err, sizeof err);
	fsck(p, true);
	img_open(&g, p);
	char name[32];
	snprintf(name, sizeof name, "#%" PRIu64, orphan);
	uint64_t rec = find_rec(&g, ARF_INO_LOSTFOUND, name);
	CHECK(rec && ((struct arf_rec *)(B(&g) + rec))->ino == orphan, "orphan not in lost+found as %s", name);
	arf_image_close(&g.m, err, sizeof err);

	/* the lost record's inodes went to lost+found; a made-again lost+found holds the orphan */
	p = path_of("lf.img");
	copy_file(base, p);
	img_open(&g, p);
	c_lostfound_gone(&g);
	orphan = g.next_ino - 1;
	arf_image_close(&g.m, err, sizeof err);
	fsck(p, true);
	CHECK(strstr(report, "made a new lost+found"), "lost+found not remade:\n%s", report);
	img_open(&g, p);
	snprintf(name, sizeof name, "#%" PRIu64, orphan);
	CHECK(find_rec(&g, ARF_INO_ROOT, "lost+found") && find_rec(&g, ARF_INO_LOSTFOUND, name),
	      "new lost+found or %s missing", name);
	arf_image_close(&g.m, err, sizeof err);

	/* fsck without --repair writes nothing */
	p = path_of("ro.img");
	copy_file(base, p);
	img_open(&g, p);
	c_nlink_file(&g);
	arf_image_close(&g.m, err, sizeof err);
	fsck(p, false);
	fsck(p, false);
	CHECK(strstr(report, "link count 5"), "a checking run changed the image:\n%s", report);
}

/* ---- the superblock check: truncated and garbage images ---- */

static void expect_refused(const char *what, const char *p, const char *want)
{
	struct arf_image m;
	char err[512] = "";
	int rc = arf_image_open(p, ARF_OPEN_RO, &m, err, sizeof err);
	CHECK(rc != 0 && strstr(err, want), "%s: open gave %d '%s', want '%s'", what, rc, err, want);
	if (rc == 0)
		arf_image_close(&m, err, sizeof err);
	rc = fsck(p, true);
	CHECK(rc == ARF_FSCK_ERROR && strstr(report, want), "%s: fsck gave %d:\n%s", what, rc, report);
}

static void poke_sb(const char *p, size_t off, const void *v, size_t n, bool fix_check)
{
	int fd = open(p, O_RDWR);
	struct arf_sb sb;
	if (fd < 0 || pread(fd, &sb, sizeof sb, 0) != (ssize_t)sizeof sb) {
		printf("poke_sb %s: %s\n", p, strerror(errno));
		return;
	}
	memcpy((uint8_t *)&sb + off, v, n);
	if (fix_check)
		sb.geom_check = arf_geom_check(&sb);
	if (pwrite(fd, &sb, sizeof sb, 0) != (ssize_t)sizeof sb)
		printf("poke_sb: %s\n", strerror(errno));
	close(fd);
}

static void test_superblock(const char *base)
{
	const char *p = path_of("sb.img");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	expect_refused("empty file", p, "superblock: image of 0 bytes is shorter than one block");

	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	static uint8_t junk[1 << 20];
	srand(7);
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)rand();
	CHECK(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk, "write junk");
	close(fd);
	expect_refused("garbage", p, "superblock: bad magic");

	copy_file(base, p);
	CHECK(truncate(p, 4 << 20) == 0, "truncate");
	expect_refused("truncated", p, "should be 8388608 bytes (2048 blocks) but the file has 4194304 bytes: truncated");

	copy_file(base, p);
	CHECK(truncate(p, 9 << 20) == 0, "extend");
	expect_refused("grown", p, "grown behind the filesystem's back");

	copy_file(base, p);
	uint32_t v = 3;
	poke_sb(p, ARF_SB_VERSION, &v, 4, true);
	expect_refused("version", p, "superblock: layout version 3, this program knows version 2");

	/* a version-1 image (256-byte inodes) is refused with what to do about it */
	copy_file(base, p);
	v = 1;
	poke_sb(p, ARF_SB_VERSION, &v, 4, true);
	expect_refused("version 1", p, "superblock: layout version 1 (256-byte inodes, before "
	               "xattrs), this program knows version 2: copy the files out");

	copy_file(base, p);
	uint64_t off = 0;
	memcpy(&off, (uint8_t[8]){ 0 }, 8);
	struct arf_sb sb;
	fd = open(p, O_RDONLY);
	CHECK(pread(fd, &sb, sizeof sb, 0) == (ssize_t)sizeof sb, "read sb");
	close(fd);
	off = sb.itable_off + ARF_BLOCK_SIZE;
	poke_sb(p, ARF_SB_ITABLE_OFF, &off, 8, false);
	expect_refused("damaged", p, "does not match its contents");
	poke_sb(p, ARF_SB_ITABLE_OFF, &off, 8, true);
	expect_refused("inconsistent geometry", p, "superblock: inode table offset is");

	/* the keyed results' table: a feature bit this program does not know, the feature
	 * cleared under a table (or set without one), and a table that moved */
	static const struct { const char *what; size_t field; uint64_t v; const char *msg; } feats[] = {
		{ "unknown feature", ARF_SB_FEATURES, ARF_FEAT_ONCE | 4, "unknown feature bits 0x4" },
		{ "feature cleared", ARF_SB_FEATURES, 0, "superblock: inode bitmap offset is" },
		{ "table moved", ARF_SB_ONCE_OFF, 2 * ARF_BLOCK_SIZE, "keyed results offset is" },
		{ "table resized", ARF_SB_ONCE_N, 5, "keyed results entries is 5" },
	};
	for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++) {
		copy_file(base, p);
		poke_sb(p, feats[i].field, &feats[i].v, 8, true);
		expect_refused(feats[i].what, p, feats[i].msg);
	}

	copy_file(base, p);
	uint64_t inodes = 1ull << 40;
	poke_sb(p, ARF_SB_N_INODES, &inodes, 8, true);
	expect_refused("too many inodes", p, "inodes: must be 64 to");

	const char *missing = path_of("no-such.img");
	expect_refused("missing", missing, "No such file or directory");

	char err[256];
	CHECK(arf_mkfs(path_of("tiny.img"), 1 << 20, 0, err, sizeof err) != 0 &&
	      strstr(err, "must be 4194304 bytes (4 MiB) to"), "tiny mkfs: %s", err);
	CHECK(arf_mkfs(path_of("crowded.img"), 4 << 20, 100000, err, sizeof err) != 0 &&
	      strstr(err, "too small for 100000 inodes"), "crowded mkfs: %s", err);
}

/* ---- attach: journal roll-back and allocation maps after an unclean stop ---- */

static void test_attach(const char *base)
{
	const char *p = path_of("attach.img");
	copy_file(base, p);
	struct img g;
	img_open(&g, p);
	/* an operation died half way: it saved inode 4's link count (2), then wrote 3, and it
	 * had claimed a block it never used */
	struct arf_jslot *j = (struct arf_jslot *)(B(&g) + SB(&g)->journal_off + 5 * ARF_J_SLOT_SIZE);
	struct arf_undo *u = (struct arf_undo *)((uint8_t *)j + ARF_J_HDR);
	u->off = SB(&g)->itable_off + F * ARF_INO_SIZE + ARF_I_NLINK;
	u->len = 4;
	memcpy(u->data, &I(&g, F)->nlink, 4);
	j->owner = (1ull << 32) | 6;
	j->used = ARF_U_DATA + 8;
	j->n_undo = 1;
	I(&g, F)->nlink = 3;
	bit_set(bbmap(&g), SB(&g)->n_blocks - 10);
	SB(&g)->free_blocks--;
	SB(&g)->clean = 0;
	char err[512];
	arf_image_close(&g.m, err, sizeof err);

	int rc = fsck(p, false);
	CHECK(rc == ARF_FSCK_CLEAN, "unclean image: fsck %d:\n%s", rc, report);
	CHECK(strstr(report, "journal: rolled back 1 interrupted operations") &&
	      strstr(report, "not detached cleanly") && strstr(report, "recomputed"),
	      "unclean image notes:\n%s", report);

	img_open(&g, p);
	CHECK(I(&g, F)->nlink == 3 && j, "checking run wrote the image");
	struct arf_attach_info ai;
	rc = arf_attach(g.m.base, g.m.len, &ai, err, sizeof err);
	CHECK(rc == 0, "attach: %s", err);
	CHECK(ai.rolled_back == 1 && !ai.was_clean && ai.map_fixes == 2 && ai.epoch == 1,
	      "attach info: rolled back %u, clean %d, map fixes %" PRIu64 ", epoch %" PRIu64,
	      ai.rolled_back, ai.was_clean, ai.map_fixes, ai.epoch);
	CHECK(I(&g, F)->nlink == 2 && SB(&g)->clean == 0, "after attach: nlink %u clean %" PRIu64,
	      I(&g, F)->nlink, SB(&g)->clean);
	arf_detach(g.m.base, g.m.len);
	CHECK(SB(&g)->clean == 1, "detach left clean %" PRIu64, SB(&g)->clean);
	arf_image_close(&g.m, err, sizeof err);
	rc = fsck(p, false);
	CHECK(rc == ARF_FSCK_CLEAN && !strstr(report, "note:"), "after attach/detach: %d\n%s", rc, report);

	/* an unclean image whose tree is broken is refused, naming the first problem */
	copy_file(base, p);
	img_open(&g, p);
	I(&g, F)->nlink = 9;
	SB(&g)->clean = 0;
	rc = arf_attach(g.m.base, g.m.len, &ai, err, sizeof err);
	CHECK(rc != 0 && strstr(err, "the image has 1 problems (first: inode 4 (regular file): "
	      "link count 9, should be 2): run arf fsck --repair"), "broken unclean attach: %s", err);
	arf_image_close(&g.m, err, sizeof err);
}

/* ---- a 200 GiB sparse image ---- */

static void test_large(void)
{
	const char *p = path_of("large.img");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char err[512];
	int rc = arf_mkfs(p, 200ull << 30, 0, err, sizeof err);
	CHECK(rc == 0, "mkfs 200G: %s", err);
	rc = fsck(p, false);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(rc == ARF_FSCK_CLEAN, "fsck 200G: %d\n%s", rc, report);
	struct stat st;
	stat(p, &st);
	CHECK(st.st_size == 200ll << 30 && st.st_blocks * 512 < 4 << 20,
	      "200G image: size %lld, %lld bytes on disk", (long long)st.st_size,
	      (long long)st.st_blocks * 512);
	CHECK(s < 20, "mkfs + fsck of 200G took %.1f s", s);
	struct arf_image m;
	if (arf_image_open(p, ARF_OPEN_RO, &m, err, sizeof err) == 0) {
		CHECK(m.sb->n_inodes >= 10000000, "200G: only %" PRIu64 " inodes", m.sb->n_inodes);
		arf_image_close(&m, err, sizeof err);
	}
	unlink(p);
}

/* ---- arfd --arf ---- */

/* A whole file (a segment) in malloc'd memory, or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static uint8_t buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	uint8_t *p = n && n < sizeof buf ? malloc(n) : NULL;
	if (p)
		memcpy(p, buf, n);
	*len = n;
	return p;
}

static struct arfd *serve(const char *image, char *err, size_t errlen)
{
	static struct arfd_config c;
	memset(&c, 0, sizeof c);
	c.listen[c.n_listen++] = "tcp:127.0.0.1:0";
	c.arf_image = image;
	return arfd_start(&c, err, errlen);
}

static void test_arfd(const char *base)
{
	arfd_log_setup(ARFD_LOG_ERROR, false);
	char err[1024];
	const char *bad = path_of("bad.img");
	copy_file(base, bad);
	uint64_t magic = 0x1234;
	poke_sb(bad, ARF_SB_MAGIC, &magic, 8, false);
	struct arfd *s = serve(bad, err, sizeof err);
	CHECK(!s && strstr(err, "refused: superblock: bad magic 0x0000000000001234"),
	      "corrupt image served or wrong message: %s", err);
	if (s)
		arfd_stop(s, 1000);

	const char *p = path_of("served.img");
	copy_file(base, p);
	s = serve(p, err, sizeof err);
	CHECK(s != NULL, "arfd --arf: %s", err);
	if (!s)
		return;
	struct arc_opts o = { .timeout_ms = 10000 };
	struct arc *a = arc_connect(arfd_endpoint(s, "tcp"), &o, err, sizeof err);
	CHECK(a != NULL, "connect: %s", err);
	struct arf_sb sb;
	int rc = a ? arc_read(a, "arf", 0, &sb, sizeof sb) : -1;
	CHECK(rc == 0 && sb.magic == ARF_MAGIC_VALUE && sb.n_blocks == 2048 && sb.epoch == 1 &&
	      sb.clean == 0, "read of the superblock: rc %d magic %" PRIx64 " epoch %" PRIu64, rc,
	      sb.magic, sb.epoch);

	/* statfs.pno (arf/statfs.c through clang and pncc), run on the server */
	char segpath[600];
	const char *build = getenv("BUILD");
	snprintf(segpath, sizeof segpath, "%s/arfseg/statfs.pno", build && *build ? build : "build");
	size_t seg_len = 0;
	uint8_t *seg = read_file(segpath, &seg_len);
	CHECK(seg != NULL, "%s not found (tests run from the top directory)", segpath);
	if (seg && a) {
		struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = "statfs" };
		rc = arc_exec(a, &x);
		uint64_t v[6] = { 0 };
		if (x.out_len == sizeof v)
			memcpy(v, x.out, sizeof v);
		CHECK(rc == 0 && x.value == 1 && v[0] == ARF_BLOCK_SIZE && v[1] == sb.n_blocks &&
		      v[2] == sb.free_blocks && v[3] == sb.n_inodes && v[4] == sb.free_inodes &&
		      v[5] == ARF_NAME_MAX, "statfs: rc %d value %" PRId64 " out %" PRIu64 " bytes", rc,
		      x.value, x.out_len);
		free(x.out);
	}
	free(seg);
	arc_close(a);
	arfd_stop(s, 1000);
	struct arf_image m;
	if (arf_image_open(p, ARF_OPEN_RO, &m, err, sizeof err) == 0) {
		CHECK(m.sb->clean == 1 && m.sb->epoch == 1, "after arfd stop: clean %" PRIu64 " epoch %"
		      PRIu64, m.sb->clean, m.sb->epoch);
		arf_image_close(&m, err, sizeof err);
	}
	rc = fsck(p, false);
	CHECK(rc == ARF_FSCK_CLEAN, "fsck after serving: %d\n%s", rc, report);

	/* --arf and --region arf cannot both name region arf */
	static struct arfd_config c;
	memset(&c, 0, sizeof c);
	c.listen[c.n_listen++] = "tcp:127.0.0.1:0";
	arfd_config_line(&c, "region", "arf=4096", err, sizeof err);
	CHECK(arfd_config_line(&c, "arf", p, err, sizeof err) == 0 && !strcmp(c.arf_image, p),
	      "config line 'arf IMAGE': %s", err);
	s = arfd_start(&c, err, sizeof err);
	CHECK(!s && strstr(err, "region 'arf' is also given by --region"), "two arf regions: %s", err);
	if (s)
		arfd_stop(s, 1000);
	free((void *)c.arf_image);     /* the config keeps its strings for the process's life */
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_arf_image.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	char fresh[512], base[512];
	snprintf(fresh, sizeof fresh, "%s", path_of("fresh.img"));
	snprintf(base, sizeof base, "%s", path_of("base.img"));
	char err[512];
	CHECK(arf_mkfs(fresh, 64 << 20, 0, err, sizeof err) == 0, "mkfs: %s", err);
	int rc = fsck(fresh, false);
	CHECK(rc == ARF_FSCK_CLEAN && report_len == 0, "fresh image: fsck %d:\n%s", rc, report);

	CHECK(populate(base), "populate");
	rc = fsck(base, false);
	CHECK(rc == ARF_FSCK_CLEAN && report_len == 0, "populated image: fsck %d:\n%s", rc, report);

	test_superblock(base);
	test_corruptions(base);
	test_repair_results(base);
	test_attach(base);
	test_arfd(base);
	test_large();

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
