/* fsck.c: check every invariant of an ARF image (docs/arf.md, "Invariants") and repair what
 * can be repaired.
 *
 * Passes: 0 the journal (roll back interrupted operations); 1 every inode in use (type,
 * extents, symlink bodies, directory blocks, records and slot tables), claiming each block
 * it owns in a block map computed here; 2 every directory entry (names an inode in use, of
 * its type; a directory has one entry); then slot tables are rebuilt where needed; 3
 * reachability from the root (orphans to lost+found, or freed when unlinked); 4 link counts
 * and parent fields; 5 the allocation bitmaps and free counters against the computed maps.
 * Before pass 1, the keyed results' table in block 0 (pass_once).
 * A repairing run is followed by a checking run, whose verdict decides between "repaired"
 * and "problems left".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arf_cluster.h"
#include "arf_int.h"

struct ent {
	uint64_t rec;                  /* byte offset of the record */
	uint32_t dir, child;           /* child 0: entry removed by the repair */
};

struct fsck {
	uint8_t *base;
	uint64_t len;
	struct arf_sb *sb;
	int fd;                        /* for skipping holes of the inode table; -1: none */
	const struct arf_fsck_opts *o;
	bool repair, maps_only, unclean;
	uint64_t data_blk, n_inodes;
	uint64_t *used;                /* blocks: metadata, tail bits, and what inodes own */
	uint64_t *iused;               /* inodes in use */
	uint64_t *reach;               /* inodes reached from the root */
	uint64_t *rebuild;             /* directories whose slot table must be rebuilt */
	uint32_t *refs;                /* entries naming each inode */
	uint32_t *subdirs;             /* subdirectory entries of each directory */
	uint32_t *parent_of;           /* directory holding each directory's entry */
	struct ent *ents;
	size_t n_ents, cap_ents;
	uint64_t max_gen;
	uint64_t problems, repaired, map_fixes;
	bool failed;                   /* out of memory */
	struct arf_fsck_result *res;
};

/* ---- reporting ---- */

static void emit(struct fsck *f, enum arf_fsck_line kind, const char *fmt, va_list ap)
{
	if (!f->o || !f->o->report)
		return;
	char line[1024];
	vsnprintf(line, sizeof line, fmt, ap);
	f->o->report(f->o->user, kind, line);
}

static void problem(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct fsck *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	f->problems++;
	emit(f, ARF_FSCK_PROBLEM, fmt, ap);
	va_end(ap);
}

static void note(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct fsck *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(f, ARF_FSCK_NOTE, fmt, ap);
	va_end(ap);
}

static void action(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void action(struct fsck *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(f, ARF_FSCK_ACTION, fmt, ap);
	va_end(ap);
}

/* Whether to repair the problem just reported; says what is done. */
static bool fix(struct fsck *f, const char *what)
{
	if (!f->repair)
		return false;
	f->repaired++;
	action(f, "  repaired: %s", what);
	return true;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & ARF_S_IFMT) {
	case ARF_S_IFREG: return "regular file";
	case ARF_S_IFDIR: return "directory";
	case ARF_S_IFLNK: return "symlink";
	case ARF_S_IFIFO: return "fifo";
	case ARF_S_IFCHR: return "character device";
	case ARF_S_IFBLK: return "block device";
	case ARF_S_IFSOCK: return "socket";
	default: return "inode of unknown type";
	}
}

/* A record's name, printable, for messages. */
static const char *rec_name(const struct arf_rec *r, char buf[ARF_NAME_MAX * 4 + 1])
{
	size_t n = 0;
	for (unsigned i = 0; i < r->name_len; i++) {
		unsigned char c = (unsigned char)r->name[i];
		if (c >= ' ' && c <= '~' && c != '\\')
			buf[n++] = (char)c;
		else
			n += (size_t)sprintf(buf + n, "\\x%02x", c);
	}
	buf[n] = '\0';
	return buf;
}

static struct arf_inode *ino(struct fsck *f, uint64_t i)
{
	return ino_at(f->base, f->sb, i);
}

/* ---- blocks ---- */

/* An offset that can be a block of the data area. */
static bool data_block_off(struct fsck *f, uint64_t off)
{
	return off % ARF_BLOCK_SIZE == 0 && off >= f->sb->data_off && off < f->len;
}

/* Claim blocks [b, b+n) for an owner; false (nothing claimed) when one is out of the data
 * area or already claimed, with the first such block in *bad. */
static bool claim(struct fsck *f, uint64_t b, uint64_t n, uint64_t *bad)
{
	if (b < f->data_blk || b >= f->sb->n_blocks || n > f->sb->n_blocks - b) {
		*bad = b;
		return false;
	}
	for (uint64_t i = b; i < b + n; i++)
		if (bit_get(f->used, i)) {
			*bad = i;
			return false;
		}
	for (uint64_t i = b; i < b + n; i++)
		bit_set(f->used, i);
	return true;
}

static void unclaim(struct fsck *f, uint64_t b, uint64_t n)
{
	for (uint64_t i = b; i < b + n; i++)
		bit_clr(f->used, i);
}

/* ---- pass 1: inodes ---- */

/* Check the extents of a file (or long symlink) of limit logical blocks, claiming their
 * blocks.  Bad extents are dropped when repairing (their blocks stay with whoever claimed
 * them first).  Returns the number of blocks now owned (data + extent blocks). */
static uint64_t check_extents(struct fsck *f, uint64_t i, struct arf_inode *d, uint64_t limit)
{
	uint32_t n = d->n_extents;
	struct arf_extent *keep = malloc(((size_t)n + 1) * sizeof *keep);
	/* an extent block holds 1..ARF_X_MAX extents (writes split full ones), so a chain
	 * has at most one block per extent */
	uint64_t *chain = malloc(((size_t)n + 2) * sizeof *chain);
	if (!keep || !chain) {
		free(keep);
		free(chain);
		f->failed = true;
		return d->nblocks;
	}
	size_t nk = 0, nc = 0;
	bool changed = false;
	uint64_t prev_end = 0, owned = 0, bad;
	uint64_t left = n, x = d->xblk, idx = 0;
	const struct arf_extent *src = d->u.ext;
	uint64_t in_src = n < ARF_I_INLINE_EXT ? n : ARF_I_INLINE_EXT;
	if (n <= ARF_I_INLINE_EXT && x) {
		problem(f, "inode %" PRIu64 ": has an extent block although its %" PRIu32 " extents "
		        "fit in the inode", i, n);
		changed = true;
	}
	while (left > 0) {
		if (in_src == 0) {
			/* the next extent block */
			if (!x) {
				problem(f, "inode %" PRIu64 ": records %" PRIu32 " extents, its extent "
				        "blocks hold only %" PRIu64, i, n, idx);
				changed = true;
				break;
			}
			if (!data_block_off(f, x)) {
				problem(f, "inode %" PRIu64 ": extent block at byte %" PRIu64 " is outside "
				        "the data area", i, x);
				changed = true;
				break;
			}
			if (!claim(f, x >> ARF_BLOCK_SHIFT, 1, &bad)) {
				problem(f, "inode %" PRIu64 ": extent block %" PRIu64 " is also used by "
				        "something else", i, x >> ARF_BLOCK_SHIFT);
				changed = true;
				break;
			}
			const struct arf_xblk *xb = (const struct arf_xblk *)(f->base + x);
			if (xb->magic != ARF_X_MAGIC_VALUE || xb->n == 0 || xb->n > ARF_X_MAX ||
			    xb->n > left) {
				problem(f, "inode %" PRIu64 ": extent block %" PRIu64 " is damaged (magic "
				        "0x%08" PRIx32 ", %" PRIu32 " extents)", i, x >> ARF_BLOCK_SHIFT,
				        xb->magic, xb->n);
				unclaim(f, x >> ARF_BLOCK_SHIFT, 1);
				changed = true;
				break;
			}
			chain[nc++] = x;
			owned++;
			src = xb->ext;
			in_src = xb->n;
			x = xb->next;
		}
		const struct arf_extent *e = src++;
		in_src--;
		left--;
		idx++;
		const char *why = NULL;
		if (e->len == 0)
			why = "is empty";
		else if ((uint64_t)e->lblk + e->len > ARF_MAX_FILE_BLOCKS)
			why = "ends past the largest file";
		else if (e->lblk < prev_end)
			why = "overlaps the extent before it or is out of order";
		else if ((uint64_t)e->lblk + e->len > limit)
			why = "maps blocks past the end of the file";
		else if (!claim(f, e->pblk, e->len, &bad))
			why = bad < f->data_blk || bad >= f->sb->n_blocks
			      ? "lies outside the data area" : "uses blocks that something else uses";
		if (why) {
			problem(f, "inode %" PRIu64 ": extent %" PRIu64 " (file blocks %" PRIu32 "+%" PRIu32
			        " at block %" PRIu64 ") %s", i, idx - 1, e->lblk, e->len, e->pblk, why);
			changed = true;
			continue;
		}
		prev_end = e->lblk + e->len;
		owned += e->len;
		keep[nk++] = *e;
	}
	if (!changed && n > ARF_I_INLINE_EXT && x) {
		problem(f, "inode %" PRIu64 ": its last extent block points on to another", i);
		changed = true;
	}
	if (changed && fix(f, "dropped the bad extents")) {
		/* kept extents fill the inline area, then the kept extent blocks in order */
		memset(d->u.ext, 0, sizeof d->u.ext);
		size_t k = 0;
		for (; k < nk && k < ARF_I_INLINE_EXT; k++)
			d->u.ext[k] = keep[k];
		size_t used_blocks = 0;
		d->xblk = 0;
		struct arf_xblk *prev = NULL;
		while (k < nk) {
			struct arf_xblk *xb = (struct arf_xblk *)(f->base + chain[used_blocks]);
			uint32_t m = nk - k > ARF_X_MAX ? ARF_X_MAX : (uint32_t)(nk - k);
			memmove(xb->ext, keep + k, m * sizeof *keep);
			xb->n = m;
			xb->magic = ARF_X_MAGIC_VALUE;
			xb->next = 0;
			if (prev)
				prev->next = chain[used_blocks];
			else
				d->xblk = chain[used_blocks];
			prev = xb;
			used_blocks++;
			k += m;
		}
		for (size_t c = used_blocks; c < nc; c++) {
			unclaim(f, chain[c] >> ARF_BLOCK_SHIFT, 1);
			owned--;
		}
		d->n_extents = (uint32_t)nk;
	}
	free(keep);
	free(chain);
	return owned;
}

/* Give back the blocks an inode owns (its structure already checked) and free it. */
static void release_inode(struct fsck *f, uint64_t i)
{
	struct arf_inode *d = ino(f, i);
	if ((d->mode & ARF_S_IFMT) == ARF_S_IFDIR) {
		if (d->u.dir.table)
			unclaim(f, d->u.dir.table >> ARF_BLOCK_SHIFT,
			        d->u.dir.nslots * ARF_T_SIZE / ARF_BLOCK_SIZE);
		for (uint64_t b = d->u.dir.head; b; b = ((struct arf_dblk *)(f->base + b))->next)
			unclaim(f, b >> ARF_BLOCK_SHIFT, 1);
	} else if (!(d->flags & (ARF_IF_INLINE | ARF_IF_STRIPED))) {
		uint32_t n = d->n_extents;
		for (uint32_t k = 0; k < n && k < ARF_I_INLINE_EXT; k++)
			unclaim(f, d->u.ext[k].pblk, d->u.ext[k].len);
		for (uint64_t x = d->xblk; x; x = ((struct arf_xblk *)(f->base + x))->next) {
			const struct arf_xblk *xb = (const struct arf_xblk *)(f->base + x);
			for (uint32_t k = 0; k < xb->n; k++)
				unclaim(f, xb->ext[k].pblk, xb->ext[k].len);
			unclaim(f, x >> ARF_BLOCK_SHIFT, 1);
		}
	}
	if (d->xattr)                  /* checked and claimed by check_xattr */
		unclaim(f, d->xattr >> ARF_BLOCK_SHIFT, 1);
	memset(d, 0, sizeof *d);
	bit_clr(f->iused, i);
}

static bool name_ok(const struct arf_rec *r)
{
	if ((r->name_len == 1 && r->name[0] == '.') ||
	    (r->name_len == 2 && r->name[0] == '.' && r->name[1] == '.'))
		return false;
	return !memchr(r->name, '/', r->name_len) && !memchr(r->name, '\0', r->name_len);
}

static bool ent_push(struct fsck *f, uint64_t rec, uint64_t dir, uint64_t child)
{
	if (f->n_ents == f->cap_ents) {
		size_t cap = f->cap_ents ? 2 * f->cap_ents : 1024;
		struct ent *p = realloc(f->ents, cap * sizeof *p);
		if (!p) {
			f->failed = true;
			return false;
		}
		f->ents = p;
		f->cap_ents = cap;
	}
	f->ents[f->n_ents++] = (struct ent){ rec, (uint32_t)dir, (uint32_t)child };
	return true;
}

/* Kill a record: the directory no longer has that entry (its table is rebuilt later). */
static void kill_rec(struct fsck *f, uint64_t dir, uint64_t rec)
{
	struct arf_rec *r = (struct arf_rec *)(f->base + rec);
	struct arf_dblk *h = (struct arf_dblk *)(f->base + (rec & ~(uint64_t)(ARF_BLOCK_SIZE - 1)));
	if (r->ino && h->live)
		h->live--;
	r->ino = 0;
	bit_set(f->rebuild, dir);
}

static int cmp_rec(const void *a, const void *b)
{
	uint64_t x = ((const struct ent *)a)->rec, y = ((const struct ent *)b)->rec;
	return x < y ? -1 : x > y;
}

static struct arf_rec *rec_at(struct fsck *f, uint64_t off)
{
	return (struct arf_rec *)(f->base + off);
}

/* Two live entries of one directory with the same name. */
static int cmp_name(const void *a, const void *b, void *base)
{
	const struct arf_rec *x = (const struct arf_rec *)((uint8_t *)base + ((const struct ent *)a)->rec);
	const struct arf_rec *y = (const struct arf_rec *)((uint8_t *)base + ((const struct ent *)b)->rec);
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	int c = memcmp(x->name, y->name, x->name_len);
	if (c)
		return c;
	return ((const struct ent *)a)->rec < ((const struct ent *)b)->rec ? -1 : 1;
}

/* The slot table of directory i against its live records ents[e0..e1) (sorted by offset).
 * Returns false when the table must be rebuilt. */
static bool check_table(struct fsck *f, uint64_t i, struct arf_inode *d, size_t e0, size_t e1)
{
	uint64_t nlive = e1 - e0, bad;
	uint64_t table = d->u.dir.table, ns = d->u.dir.nslots;
	if (!table) {
		if (ns || d->u.dir.shift || d->u.dir.ntomb || d->u.dir.nent || nlive) {
			problem(f, "directory %" PRIu64 ": has no slot table but %" PRIu64 " entries "
			        "(counter %" PRIu64 ", %" PRIu64 " slots)", i, nlive, d->u.dir.nent, ns);
			return false;
		}
		return true;
	}
	if (ns < ARF_D_MIN_SLOTS || (ns & (ns - 1)) || ns > f->len / ARF_T_SIZE ||
	    d->u.dir.shift != (uint64_t)(64 - __builtin_ctzll(ns)) || !data_block_off(f, table) ||
	    table + ns * ARF_T_SIZE > f->len) {
		problem(f, "directory %" PRIu64 ": slot table at byte %" PRIu64 " with %" PRIu64
		        " slots and shift %" PRIu64 " is malformed or outside the data area", i, table,
		        ns, d->u.dir.shift);
		d->u.dir.table = f->repair ? 0 : d->u.dir.table;   /* its blocks were never claimed */
		return false;
	}
	if (!claim(f, table >> ARF_BLOCK_SHIFT, ns * ARF_T_SIZE / ARF_BLOCK_SIZE, &bad)) {
		problem(f, "directory %" PRIu64 ": slot table (blocks %" PRIu64 "..%" PRIu64 ") uses "
		        "block %" PRIu64 ", which something else uses", i, table >> ARF_BLOCK_SHIFT,
		        ((table + ns * ARF_T_SIZE) >> ARF_BLOCK_SHIFT) - 1, bad);
		d->u.dir.table = f->repair ? 0 : d->u.dir.table;
		return false;
	}
	const struct arf_slot *t = (const struct arf_slot *)(f->base + table);
	uint8_t *seen = calloc(nlive + 1, 1);
	if (!seen) {
		f->failed = true;
		return true;
	}
	uint64_t empty = 0, tombs = 0, bad_slots = 0;
	char nb[ARF_NAME_MAX * 4 + 1];
	for (uint64_t s = 0; s < ns; s++) {
		if (t[s].rec == ARF_T_EMPTY) {
			empty++;
			continue;
		}
		if (t[s].rec == ARF_T_TOMB) {
			tombs++;
			continue;
		}
		struct ent key = { .rec = t[s].rec };
		struct ent *e = bsearch(&key, f->ents + e0, nlive, sizeof key, cmp_rec);
		const char *why = NULL;
		if (!e)
			why = "points at no live record of this directory";
		else if (seen[e - (f->ents + e0)]++)
			why = "points at a record another slot points at";
		else if (t[s].hash != rec_at(f, e->rec)->hash)
			why = "holds a hash that differs from its record's";
		else {
			/* lookups probe from the home slot to the first empty one */
			for (uint64_t j = arf_home_slot(t[s].hash, d->u.dir.shift); j != s; j = (j + 1) & (ns - 1))
				if (t[j].rec == ARF_T_EMPTY) {
					why = "lies past an empty slot on its probe path, so lookups miss it";
					break;
				}
		}
		if (why && bad_slots++ < 3)
			problem(f, "directory %" PRIu64 ": slot %" PRIu64 " (record at byte %" PRIu64
			        "%s%s%s) %s", i, s, t[s].rec, e ? ", '" : "",
			        e ? rec_name(rec_at(f, e->rec), nb) : "", e ? "'" : "", why);
		else if (why)
			f->problems++;
	}
	for (uint64_t k = 0; k < nlive; k++)
		if (!seen[k] && bad_slots++ < 3)
			problem(f, "directory %" PRIu64 ": entry '%s' (inode %" PRIu32 ") is missing from "
			        "the slot table", i, rec_name(rec_at(f, f->ents[e0 + k].rec), nb),
			        f->ents[e0 + k].child);
		else if (!seen[k])
			f->problems++;
	free(seen);
	if (bad_slots > 3)
		note(f, "directory %" PRIu64 ": %" PRIu64 " more slot problems", i, bad_slots - 3);
	bool ok = bad_slots == 0;
	if (empty == 0) {
		problem(f, "directory %" PRIu64 ": slot table has no empty slot, so a lookup of an "
		        "absent name would never end", i);
		ok = false;
	}
	if (d->u.dir.nent != nlive || d->u.dir.ntomb != tombs) {
		problem(f, "directory %" PRIu64 ": counts %" PRIu64 " entries and %" PRIu64
		        " tombstones, the table has %" PRIu64 " and %" PRIu64, i, d->u.dir.nent,
		        d->u.dir.ntomb, nlive, tombs);
		ok = false;
	}
	return ok;
}

static void check_dir(struct fsck *f, uint64_t i, struct arf_inode *d)
{
	char nb[ARF_NAME_MAX * 4 + 1];
	if (d->n_extents || d->xblk || d->flags || d->rdev) {
		problem(f, "directory %" PRIu64 ": has extents, flags or a device number", i);
		if (fix(f, "cleared them"))
			d->n_extents = 0, d->xblk = 0, d->flags = 0, d->rdev = 0;
	}
	size_t e0 = f->n_ents;
	uint64_t nblk = 0, last = 0, bad;
	uint64_t *link = &d->u.dir.head;
	for (uint64_t b = d->u.dir.head; b;) {
		const char *why = NULL;
		if (!data_block_off(f, b))
			why = "is outside the data area";
		else if (!claim(f, b >> ARF_BLOCK_SHIFT, 1, &bad))
			why = "is used by something else (or the chain loops)";
		else if (((struct arf_dblk *)(f->base + b))->magic != ARF_B_MAGIC_VALUE) {
			why = "has no directory block magic";
			unclaim(f, b >> ARF_BLOCK_SHIFT, 1);
		}
		if (why) {
			problem(f, "directory %" PRIu64 ": directory block at byte %" PRIu64 " %s", i, b, why);
			if (fix(f, "cut the chain of directory blocks there (entries beyond are lost; "
			        "their inodes go to lost+found)"))
				*link = 0;
			break;
		}
		struct arf_dblk *h = (struct arf_dblk *)(f->base + b);
		uint64_t used = h->used, live = 0, o = ARF_B_HDR;
		if (used < ARF_B_HDR || used > ARF_BLOCK_SIZE || used % 8) {
			problem(f, "directory %" PRIu64 ": block at byte %" PRIu64 " claims %" PRIu64
			        " bytes used", i, b, used);
			used = used > ARF_BLOCK_SIZE ? ARF_BLOCK_SIZE : used;
			if (fix(f, "kept the records that parse"))
				h->used = used < ARF_B_HDR ? ARF_B_HDR : used;
		}
		while (o < used) {
			struct arf_rec *r = (struct arf_rec *)(f->base + b + o);
			if (o + ARF_R_MIN > used || r->len < ARF_R_MIN || r->len > ARF_R_MAX || r->len % 8 ||
			    o + r->len > used || r->name_len == 0 || arf_rec_len(r->name_len) > r->len) {
				problem(f, "directory %" PRIu64 ": block at byte %" PRIu64 ": record at offset %"
				        PRIu64 " is malformed (length %u, name length %u)", i, b, o,
				        o + ARF_R_MIN <= used ? r->len : 0, o + ARF_R_MIN <= used ? r->name_len : 0);
				if (fix(f, "cut the block there (its inodes go to lost+found)"))
					h->used = o;
				break;
			}
			if (r->ino) {
				const char *why2 = NULL;
				if (!name_ok(r))
					why2 = "has an invalid name ('/', NUL, '.' or '..')";
				else if (r->ino >= f->n_inodes)
					why2 = "names an inode beyond the inode table";
				if (why2) {
					problem(f, "directory %" PRIu64 ": entry '%s' %s", i, rec_name(r, nb), why2);
					if (fix(f, "removed the entry"))
						kill_rec(f, i, b + o);
				} else {
					if (r->hash != arf_name_hash(r->name, r->name_len)) {
						problem(f, "directory %" PRIu64 ": entry '%s' has hash 0x%016" PRIx64
						        ", its name hashes to 0x%016" PRIx64, i, rec_name(r, nb),
						        r->hash, arf_name_hash(r->name, r->name_len));
						if (fix(f, "corrected the hash")) {
							r->hash = arf_name_hash(r->name, r->name_len);
							bit_set(f->rebuild, i);
						}
					}
					live++;
					ent_push(f, b + o, i, r->ino);
				}
			}
			o += r->len;
		}
		if (h->live != live) {
			problem(f, "directory %" PRIu64 ": block at byte %" PRIu64 " counts %" PRIu64
			        " live records, it holds %" PRIu64, i, b, h->live, live);
			if (fix(f, "corrected the count"))
				h->live = live;
		}
		nblk++;
		last = b;
		link = &h->next;
		b = h->next;
	}
	if (d->u.dir.tail != last) {
		problem(f, "directory %" PRIu64 ": tail block is byte %" PRIu64 ", the chain ends at %"
		        PRIu64, i, d->u.dir.tail, last);
		if (fix(f, "pointed the tail at the last block"))
			d->u.dir.tail = last;
	}
	if (d->size != nblk * ARF_BLOCK_SIZE) {
		problem(f, "directory %" PRIu64 ": size %" PRIu64 ", its %" PRIu64 " blocks make %"
		        PRIu64, i, d->size, nblk, nblk * ARF_BLOCK_SIZE);
		if (fix(f, "corrected the size"))
			d->size = nblk * ARF_BLOCK_SIZE;
	}
	/* duplicate names: sort by (hash, name), neighbours compare */
	size_t n = f->n_ents - e0;
	qsort_r(f->ents + e0, n, sizeof *f->ents, cmp_name, f->base);
	for (size_t k = 1; k < n; k++) {
		struct arf_rec *a = rec_at(f, f->ents[e0 + k - 1].rec), *b = rec_at(f, f->ents[e0 + k].rec);
		if (a->hash == b->hash && a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len)) {
			problem(f, "directory %" PRIu64 ": two entries named '%s' (inodes %" PRIu64 " and %"
			        PRIu64 ")", i, rec_name(b, nb), a->ino, b->ino);
			if (fix(f, "removed the second")) {
				kill_rec(f, i, f->ents[e0 + k].rec);
				f->ents[e0 + k].child = 0;
			}
		}
	}
	qsort(f->ents + e0, n, sizeof *f->ents, cmp_rec);
	if (!check_table(f, i, d, e0, f->n_ents)) {
		if (fix(f, "rebuilt the slot table from the records"))
			bit_set(f->rebuild, i);
		return;
	}
	uint64_t want = nblk + (d->u.dir.table ? d->u.dir.nslots * ARF_T_SIZE / ARF_BLOCK_SIZE : 0);
	if (d->nblocks != want) {
		problem(f, "directory %" PRIu64 ": block count %" PRIu64 ", it owns %" PRIu64, i,
		        d->nblocks, want);
		if (fix(f, "corrected the block count"))
			d->nblocks = want;
	}
}

/* Is v (len bytes) a POSIX ACL as Linux's xattr form writes it: version 2, entries of known
 * tags with permissions 0..7, one owner, group and other entry, at most one mask, and a
 * mask when there are named entries (posix_acl_valid's rules but the order)? */
static bool acl_ok(const uint8_t *v, unsigned len)
{
	if (len < ARF_ACL_HDR || (len - ARF_ACL_HDR) % ARF_ACL_ENTRY ||
	    (v[0] | v[1] << 8 | v[2] << 16 | (unsigned)v[3] << 24) != ARF_ACL_VERSION)
		return false;
	unsigned n[ARF_ACL_OTHER + 1] = { 0 };
	for (unsigned i = ARF_ACL_HDR; i < len; i += ARF_ACL_ENTRY) {
		unsigned tag = v[i] | v[i + 1] << 8, perm = v[i + 2] | v[i + 3] << 8;
		if (perm > 7 || (tag != ARF_ACL_USER_OBJ && tag != ARF_ACL_USER &&
		                 tag != ARF_ACL_GROUP_OBJ && tag != ARF_ACL_GROUP &&
		                 tag != ARF_ACL_MASK && tag != ARF_ACL_OTHER))
			return false;
		n[tag]++;
	}
	return n[ARF_ACL_USER_OBJ] == 1 && n[ARF_ACL_GROUP_OBJ] == 1 && n[ARF_ACL_OTHER] == 1 &&
	       n[ARF_ACL_MASK] <= 1 &&
	       (n[ARF_ACL_MASK] == 1 || (n[ARF_ACL_USER] == 0 && n[ARF_ACL_GROUP] == 0));
}

/* Why the entries of xattr block x are not ones the operations write (NULL: they are),
 * for an inode of type: each inside the used bytes with a name of 1..255 bytes and no NUL,
 * no name twice, user.* only on files and directories, the count as the header says,
 * and none at all (an empty block is given back by the removal that empties it). */
static const char *xattr_why(const uint8_t *x, uint32_t type)
{
	const struct arf_xattr_hdr *h = (const struct arf_xattr_hdr *)x;
	if (h->magic != ARF_A_MAGIC_VALUE)
		return "has no xattr block magic";
	if (h->used < ARF_A_HDR || h->used > ARF_BLOCK_SIZE)
		return "has a used length outside the block";
	uint64_t n = 0;
	for (uint64_t e = ARF_A_HDR, len; e < h->used; e += len, n++) {
		if (e + ARF_XE_NAME > h->used)
			return "has an entry across the used length";
		unsigned nl = x[e + ARF_XE_NAMELEN], vl;
		vl = (unsigned)x[e + ARF_XE_VLEN] | (unsigned)x[e + ARF_XE_VLEN + 1] << 8;
		len = (ARF_XE_NAME + nl + vl + 3u) & ~3u;
		if (nl == 0 || e + len > h->used)
			return "has an empty name or an entry across the used length";
		const uint8_t *name = x + e + ARF_XE_NAME;
		if (memchr(name, '\0', nl))
			return "has a NUL byte in a name";
		if (nl >= 5 && !memcmp(name, "user.", 5) && type != ARF_S_IFREG && type != ARF_S_IFDIR)
			return "has a user.* attribute on a type that cannot have one";
		if (nl >= 17 && !memcmp(name, "system.posix_acl_", 17) &&
		    !acl_ok(name + nl, vl))
			return "has a POSIX ACL that is not one";
		for (uint64_t o = ARF_A_HDR, ol; o < e; o += ol) {
			unsigned onl = x[o + ARF_XE_NAMELEN];
			unsigned ovl = (unsigned)x[o + ARF_XE_VLEN] | (unsigned)x[o + ARF_XE_VLEN + 1] << 8;
			ol = (ARF_XE_NAME + onl + ovl + 3u) & ~3u;
			if (onl == nl && !memcmp(x + o + ARF_XE_NAME, name, nl))
				return "has a name twice";
		}
	}
	if (n != h->n)
		return "has an entry count that does not match its entries";
	if (n == 0)
		return "is empty";
	return NULL;
}

/* Check inode i's spare bytes and its xattr block, claiming the block.  The repair of a
 * damaged block drops it whole (the inode loses its xattrs): there is no copy to trust
 * more than another, and a partly read block could keep half a value. */
static void check_xattr(struct fsck *f, uint64_t i, struct arf_inode *d)
{
	for (size_t k = 0; k < sizeof d->spare; k++)
		if (d->spare[k]) {
			problem(f, "inode %" PRIu64 " (%s): reserved bytes are not zero", i,
			        type_name(d->mode));
			if (fix(f, "zeroed them"))
				memset(d->spare, 0, sizeof d->spare);
			break;
		}
	if (!d->xattr)
		return;
	uint64_t bad;
	const char *why = NULL;
	if (!data_block_off(f, d->xattr))
		why = "outside the data area";
	else if (!claim(f, d->xattr >> ARF_BLOCK_SHIFT, 1, &bad))
		why = "owned by another inode too";
	else if ((why = xattr_why(f->base + d->xattr, d->mode & ARF_S_IFMT)) != NULL)
		unclaim(f, d->xattr >> ARF_BLOCK_SHIFT, 1);
	if (!why)
		return;
	problem(f, "inode %" PRIu64 " (%s): xattr block %" PRIu64 " %s", i, type_name(d->mode),
	        d->xattr >> ARF_BLOCK_SHIFT, why);
	if (fix(f, "dropped the xattr block (the inode loses its xattrs)"))
		d->xattr = 0;
}

static void check_inode(struct fsck *f, uint64_t i)
{
	struct arf_inode *d = ino(f, i);
	if (!d->mode)
		return;
	uint32_t type = d->mode & ARF_S_IFMT;
	if (!mode_dtype(d->mode)) {
		problem(f, "inode %" PRIu64 ": mode 0%" PRIo32 " is no file type ARF knows", i, d->mode);
		if (fix(f, "freed the inode (entries naming it are removed)"))
			memset(d, 0, sizeof *d);
		return;
	}
	bit_set(f->iused, i);
	check_xattr(f, i, d);
	if (d->gen > f->max_gen)
		f->max_gen = d->gen;
	if (type != ARF_S_IFDIR && d->parent) {
		problem(f, "inode %" PRIu64 " (%s): has a parent field", i, type_name(d->mode));
		if (fix(f, "cleared it"))
			d->parent = 0;
	}
	uint64_t owned = 0;
	switch (type) {
	case ARF_S_IFDIR:
		check_dir(f, i, d);
		return;
	case ARF_S_IFIFO:
	case ARF_S_IFSOCK:
		if (d->size || d->n_extents || d->xblk || d->flags || d->rdev) {
			problem(f, "inode %" PRIu64 " (%s): has a size, extents, flags or a device number",
			        i, type_name(d->mode));
			if (fix(f, "cleared them"))
				d->size = 0, d->n_extents = 0, d->xblk = 0, d->flags = 0, d->rdev = 0;
		}
		break;
	case ARF_S_IFCHR:
	case ARF_S_IFBLK:              /* rdev is its device number, any value */
		if (d->size || d->n_extents || d->xblk || d->flags) {
			problem(f, "inode %" PRIu64 " (%s): has a size, extents or flags", i,
			        type_name(d->mode));
			if (fix(f, "cleared them"))
				d->size = 0, d->n_extents = 0, d->xblk = 0, d->flags = 0;
		}
		break;
	case ARF_S_IFREG:
		if (d->flags == ARF_IF_STRIPED && !d->rdev) {
			/* a cluster file: the body is its layout record, it owns no blocks here
			 * (docs/cluster.md, "A file's own stripe unit") */
			uint32_t rec[4];
			memcpy(rec, (const uint8_t *)&d->u, sizeof rec);
			if (rec[0] < ARF_L_UNIT_MIN || rec[0] > ARF_L_UNIT_MAX || rec[0] % ARF_L_UNIT_MIN ||
			    rec[1] == 0 || rec[1] > ARF_L_COUNT_MAX || rec[2] >= rec[1] || rec[3])
				problem(f, "inode %" PRIu64 " (regular file): a layout record out of range "
				        "(unit %" PRIu32 ", stripe count %" PRIu32 ", first server %" PRIu32
				        ", reserved %" PRIu32 "); not repaired", i, rec[0], rec[1], rec[2],
				        rec[3]);
			if (d->n_extents || d->xblk)
				problem(f, "inode %" PRIu64 " (regular file): a layout record and extents; "
				        "not repaired", i);
			break;
		}
		if (d->flags || d->rdev) {
			problem(f, "inode %" PRIu64 " (regular file): has flags 0x%" PRIx32 " or a device "
			        "number", i, d->flags);
			if (fix(f, "cleared them"))
				d->flags = 0, d->rdev = 0;
		}
		if (d->size > (uint64_t)ARF_MAX_FILE_BLOCKS * ARF_BLOCK_SIZE) {
			problem(f, "inode %" PRIu64 " (regular file): size %" PRIu64 " is past the largest "
			        "file", i, d->size);
			if (fix(f, "cut the size to the largest file"))
				d->size = (uint64_t)ARF_MAX_FILE_BLOCKS * ARF_BLOCK_SIZE;
		}
		owned = check_extents(f, i, d, (d->size + ARF_BLOCK_SIZE - 1) >> ARF_BLOCK_SHIFT);
		break;
	case ARF_S_IFLNK: {
		const char *why = NULL;
		bool claimed = false;
		if (d->size == 0 || d->size > ARF_SYMLINK_MAX)
			why = "has a target length outside 1..4095";
		else if (d->flags & ~(uint32_t)ARF_IF_INLINE || d->rdev)
			why = "has unknown flags or a device number";
		else if (d->flags & ARF_IF_INLINE) {
			if (d->size > ARF_I_BODY_LEN || d->n_extents || d->xblk)
				why = "is marked inline but is too long for the inode or has extents";
			else if (memchr(d->u.target, '\0', d->size))
				why = "has a NUL byte in its target";
		} else if (d->size <= ARF_I_BODY_LEN) {
			why = "is short enough to be inline but is not";
		} else {
			owned = check_extents(f, i, d, 1);
			claimed = true;
			if (d->n_extents != 1 || d->u.ext[0].lblk != 0 || d->u.ext[0].len != 1)
				why = "should have its target in exactly one block";
			else if (d->u.ext[0].pblk >= f->len >> ARF_BLOCK_SHIFT ||
			         !data_block_off(f, d->u.ext[0].pblk << ARF_BLOCK_SHIFT))
				why = "has its target block outside the data area";   /* not read */
			else if (memchr(f->base + (d->u.ext[0].pblk << ARF_BLOCK_SHIFT), '\0', d->size))
				why = "has a NUL byte in its target";
		}
		if (why) {
			problem(f, "inode %" PRIu64 " (symlink): %s", i, why);
			if (fix(f, "freed the symlink (its entries are removed)")) {
				if (claimed) {
					release_inode(f, i);   /* extents were checked (and cut) above */
				} else {
					if (d->xattr)
						unclaim(f, d->xattr >> ARF_BLOCK_SHIFT, 1);
					memset(d, 0, sizeof *d);
				}
				bit_clr(f->iused, i);
			}
			return;
		}
		break;
	}
	}
	if (d->nblocks != owned) {
		problem(f, "inode %" PRIu64 " (%s): block count %" PRIu64 ", it owns %" PRIu64, i,
		        type_name(d->mode), d->nblocks, owned);
		if (fix(f, "corrected the block count"))
			d->nblocks = owned;
	}
}

static void pass_inodes(struct fsck *f)
{
	const struct arf_inode *zero = ino(f, 0);
	if (zero->mode) {
		problem(f, "inode 0: reserved (0 means 'no inode') but in use");
		if (fix(f, "cleared it"))
			memset(ino(f, 0), 0, ARF_INO_SIZE);
	}
	uint64_t start = f->sb->itable_off, end = start + f->n_inodes * ARF_INO_SIZE;
	uint64_t pos = start + ARF_INO_SIZE;
	while (pos < end && !f->failed) {
		uint64_t stop = end;
		if (f->fd >= 0) {
			/* holes of the table read as zeros, i.e. free inodes: skip them */
			off_t dpos = lseek(f->fd, (off_t)pos, SEEK_DATA);
			if (dpos < 0 && errno == ENXIO)
				break;
			if (dpos >= 0) {
				if ((uint64_t)dpos >= end)
					break;
				if ((uint64_t)dpos > pos)
					pos = (uint64_t)dpos & ~(uint64_t)(ARF_INO_SIZE - 1);
				off_t hpos = lseek(f->fd, dpos, SEEK_HOLE);
				if (hpos > 0) {
					uint64_t h = ((uint64_t)hpos + ARF_INO_SIZE - 1) & ~(uint64_t)(ARF_INO_SIZE - 1);
					stop = h < end ? h : end;
				}
			}
		}
		for (; pos < stop; pos += ARF_INO_SIZE)
			check_inode(f, (pos - start) >> ARF_INO_SHIFT);
	}
}

/* ---- pass 2: entries ---- */

static int cmp_dir(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static void pass_entries(struct fsck *f)
{
	char nb[ARF_NAME_MAX * 4 + 1];
	qsort(f->ents, f->n_ents, sizeof *f->ents, cmp_dir);
	for (size_t k = 0; k < f->n_ents; k++) {
		struct ent *e = &f->ents[k];
		if (!e->child)
			continue;
		struct arf_rec *r = rec_at(f, e->rec);
		/* a directory freed by pass 1's repair: its entries are gone */
		if (!bit_get(f->iused, e->dir)) {
			e->child = 0;
			continue;
		}
		const char *why = NULL;
		if (!bit_get(f->iused, e->child))
			why = "which is not in use";
		else if (e->child == ARF_INO_ROOT)
			why = "the root directory";
		else if (mode_dtype(ino(f, e->child)->mode) == ARF_DT_DIR && f->parent_of[e->child])
			why = "a directory that already has an entry elsewhere";
		if (why) {
			problem(f, "directory %" PRIu32 ": entry '%s' names inode %" PRIu32 ", %s", e->dir,
			        rec_name(r, nb), e->child, why);
			if (fix(f, "removed the entry"))
				kill_rec(f, e->dir, e->rec);
			e->child = 0;
			continue;
		}
		const struct arf_inode *c = ino(f, e->child);
		if (r->type != mode_dtype(c->mode)) {
			problem(f, "directory %" PRIu32 ": entry '%s' has type %u, inode %" PRIu32 " is a %s",
			        e->dir, rec_name(r, nb), r->type, e->child, type_name(c->mode));
			if (fix(f, "corrected the type"))
				r->type = (uint8_t)mode_dtype(c->mode);
		}
		if ((c->mode & ARF_S_IFMT) == ARF_S_IFDIR) {
			f->parent_of[e->child] = e->dir;
			f->subdirs[e->dir]++;
		}
		f->refs[e->child]++;
	}
}

static void rebuild_tables(struct fsck *f)
{
	for (uint64_t i = 0; i < f->n_inodes && !f->failed; i++) {
		if (!bit_get(f->rebuild, i) || !bit_get(f->iused, i))
			continue;
		if (arf_dir_rebuild(f->base, f->sb, f->used, i) != 0) {
			problem(f, "directory %" PRIu64 ": no room to rebuild its slot table", i);
			continue;
		}
	}
}

/* ---- pass 3: reachability ---- */

/* Mark everything reachable from inode start (a directory or not). */
static void mark_from(struct fsck *f, uint64_t start)
{
	uint32_t *stack = malloc(64 * sizeof *stack);
	size_t n = 0, cap = 64;
	if (!stack) {
		f->failed = true;
		return;
	}
	bit_set(f->reach, start);
	stack[n++] = (uint32_t)start;
	while (n) {
		uint32_t d = stack[--n];
		struct ent key = { .rec = 0, .dir = d };
		/* first entry of d: lower bound on (dir, rec) */
		size_t lo = 0, hi = f->n_ents;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_dir(&f->ents[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < f->n_ents && f->ents[k].dir == d; k++) {
			uint32_t c = f->ents[k].child;
			if (!c || bit_get(f->reach, c))
				continue;
			bit_set(f->reach, c);
			if ((ino(f, c)->mode & ARF_S_IFMT) != ARF_S_IFDIR)
				continue;
			if (n == cap) {
				uint32_t *p = realloc(stack, 2 * cap * sizeof *p);
				if (!p) {
					f->failed = true;
					break;
				}
				stack = p;
				cap *= 2;
			}
			stack[n++] = c;
		}
	}
	free(stack);
}

/* lost+found, made again when it is gone; false when orphans cannot be reconnected. */
static bool lost_found(struct fsck *f)
{
	struct arf_inode *lf = ino(f, ARF_INO_LOSTFOUND);
	if (bit_get(f->iused, ARF_INO_LOSTFOUND) && (lf->mode & ARF_S_IFMT) == ARF_S_IFDIR &&
	    bit_get(f->reach, ARF_INO_LOSTFOUND))
		return true;
	if (bit_get(f->iused, ARF_INO_LOSTFOUND))
		return false;              /* inode 2 is something else: do not guess */
	memset(lf, 0, sizeof *lf);
	lf->mode = ARF_S_IFDIR | 0700;
	lf->nlink = 2;
	lf->parent = ARF_INO_ROOT;
	lf->gen = f->sb->next_gen++;
	bit_set(f->iused, ARF_INO_LOSTFOUND);
	if (arf_dir_add(f->base, f->sb, f->used, ARF_INO_ROOT, "lost+found", 10,
	                ARF_INO_LOSTFOUND, ARF_DT_DIR) != 0) {
		memset(lf, 0, sizeof *lf);
		bit_clr(f->iused, ARF_INO_LOSTFOUND);
		return false;
	}
	action(f, "  repaired: made a new lost+found (inode 2)");
	f->parent_of[ARF_INO_LOSTFOUND] = ARF_INO_ROOT;
	f->subdirs[ARF_INO_ROOT]++;
	f->refs[ARF_INO_LOSTFOUND]++;
	bit_set(f->reach, ARF_INO_LOSTFOUND);
	return true;
}

/* Put inode c into lost+found as "#c". */
static bool reconnect(struct fsck *f, uint64_t c)
{
	if (!lost_found(f))
		return false;
	char name[32];
	int len = snprintf(name, sizeof name, "#%" PRIu64, c);
	unsigned dt = mode_dtype(ino(f, c)->mode);
	if (arf_dir_add(f->base, f->sb, f->used, ARF_INO_LOSTFOUND, name, (size_t)len, c, dt) != 0)
		return false;
	/* the new record counts like the ones pass 2 saw (the ents array is not re-sorted:
	 * marking below starts from c itself) */
	f->refs[c]++;
	if (dt == ARF_DT_DIR) {
		f->parent_of[c] = ARF_INO_LOSTFOUND;
		f->subdirs[ARF_INO_LOSTFOUND]++;
	}
	return true;
}

static void pass_reach(struct fsck *f)
{
	const struct arf_inode *root = ino(f, ARF_INO_ROOT);
	if (!bit_get(f->iused, ARF_INO_ROOT) || (root->mode & ARF_S_IFMT) != ARF_S_IFDIR) {
		problem(f, "inode 1 (the root) is not a directory in use: nothing is reachable");
		return;
	}
	mark_from(f, ARF_INO_ROOT);
	/* first the inodes no entry names, then what only loops of directories reach */
	for (int round = 0; round < 2 && !f->failed; round++) {
		for (uint64_t i = 1; i < f->n_inodes && !f->failed; i++) {
			if (!bit_get(f->iused, i) || bit_get(f->reach, i))
				continue;
			struct arf_inode *d = ino(f, i);
			bool is_dir = (d->mode & ARF_S_IFMT) == ARF_S_IFDIR;
			if (round == 0 && (f->refs[i] || (is_dir && f->parent_of[i])))
				continue;
			if (round == 0 && !is_dir && d->nlink == 0) {
				problem(f, "inode %" PRIu64 " (%s): link count 0 and in no directory (deleted "
				        "while open when the server stopped)", i, type_name(d->mode));
				if (fix(f, "freed it"))
					release_inode(f, i);
				continue;
			}
			if (round == 0)
				problem(f, "inode %" PRIu64 " (%s): in no directory", i, type_name(d->mode));
			else
				problem(f, "directory %" PRIu64 ": not reachable from the root (its entry is "
				        "in a loop of directories)", i);
			if (f->repair) {
				if (round == 1) {
					/* leave the loop: drop the entry that names it */
					for (size_t k = 0; k < f->n_ents; k++)
						if (f->ents[k].child == i) {
							kill_rec(f, f->ents[k].dir, f->ents[k].rec);
							f->subdirs[f->ents[k].dir]--;
							f->refs[i]--;
							f->ents[k].child = 0;
						}
					f->parent_of[i] = 0;
				}
				char what[64];
				snprintf(what, sizeof what, "moved to lost+found as #%" PRIu64, i);
				if (reconnect(f, i))
					fix(f, what);
				else
					action(f, "  not repaired: lost+found is missing, not a directory, or full");
			}
			mark_from(f, i);       /* what hangs below it is not reported again */
		}
	}
	if (f->repair)
		rebuild_tables(f);         /* for records killed in round 1 */
}

/* ---- pass 4: link counts, parents, generations ---- */

static void pass_links(struct fsck *f)
{
	for (uint64_t i = 1; i < f->n_inodes; i++) {
		if (!bit_get(f->iused, i))
			continue;
		struct arf_inode *d = ino(f, i);
		bool is_dir = (d->mode & ARF_S_IFMT) == ARF_S_IFDIR;
		uint64_t want = is_dir ? 2 + (uint64_t)f->subdirs[i] : f->refs[i];
		if (want > UINT32_MAX)
			want = UINT32_MAX;
		if (d->nlink != want) {
			problem(f, "inode %" PRIu64 " (%s): link count %" PRIu32 ", should be %" PRIu64, i,
			        type_name(d->mode), d->nlink, want);
			if (fix(f, "corrected the link count"))
				d->nlink = (uint32_t)want;
		}
		if (is_dir) {
			uint64_t p = i == ARF_INO_ROOT ? ARF_INO_ROOT : f->parent_of[i];
			if (p && d->parent != p) {
				problem(f, "directory %" PRIu64 ": parent field says %" PRIu64 ", its entry is "
				        "in directory %" PRIu64, i, d->parent, p);
				if (fix(f, "corrected the parent"))
					d->parent = p;
			}
		}
	}
	if (f->sb->next_gen <= f->max_gen) {
		problem(f, "superblock: next generation %" PRIu64 " is not above the largest in use (%"
		        PRIu64 ")", f->sb->next_gen, f->max_gen);
		if (fix(f, "raised it"))
			f->sb->next_gen = f->max_gen + 1;
	}
}

/* ---- pass 5: allocation maps and counters ---- */

/* Compare one bitmap with the computed one; write it when allowed. */
static void compare_map(struct fsck *f, const char *what, const char *unit, uint64_t *disk,
                        const uint64_t *want, uint64_t n_words)
{
	uint64_t marked_free = 0, marked_used = 0, first_free = 0, first_used = 0;
	for (uint64_t w = 0; w < n_words; w++) {
		if (disk[w] == want[w])
			continue;
		uint64_t a = want[w] & ~disk[w], b = disk[w] & ~want[w];
		if (a && !marked_free++)
			first_free = w * 64 + (uint64_t)__builtin_ctzll(a);
		if (b && !marked_used++)
			first_used = w * 64 + (uint64_t)__builtin_ctzll(b);
		marked_free += a ? (uint64_t)__builtin_popcountll(a) - 1 : 0;
		marked_used += b ? (uint64_t)__builtin_popcountll(b) - 1 : 0;
	}
	if (!marked_free && !marked_used)
		return;
	char msg[512];
	int n = snprintf(msg, sizeof msg, "%s:", what);
	if (marked_free)
		n += snprintf(msg + n, sizeof msg - (size_t)n, " %" PRIu64 " %s in use are marked free "
		              "(first: %" PRIu64 ")%s", marked_free, unit, first_free,
		              marked_used ? ";" : "");
	if (marked_used)
		snprintf(msg + n, sizeof msg - (size_t)n, " %" PRIu64 " free %s are marked in use "
		         "(first: %" PRIu64 ")", marked_used, unit, first_used);
	if (f->unclean || f->maps_only) {
		/* after an unclean stop the maps are derived state: recomputed, not a problem */
		note(f, "%s (recomputed: the image was not detached cleanly)", msg);
		f->map_fixes += marked_free + marked_used;
		if (f->repair || f->maps_only)
			memcpy(disk, want, n_words * 8);
		return;
	}
	problem(f, "%s", msg);
	if (fix(f, "rewrote the bitmap from the tree"))
		memcpy(disk, want, n_words * 8);
}

static uint64_t count_set(const uint64_t *w, uint64_t n_bits)
{
	uint64_t c = 0;
	for (uint64_t i = 0; i < n_bits / 64; i++)
		c += (uint64_t)__builtin_popcountll(w[i]);
	for (uint64_t i = n_bits / 64 * 64; i < n_bits; i++)
		c += bit_get(w, i);
	return c;
}

static void counter(struct fsck *f, const char *what, uint64_t *have, uint64_t want)
{
	if (*have == want)
		return;
	char msg[256];
	snprintf(msg, sizeof msg, "superblock: %s counter is %" PRIu64 ", the bitmap says %" PRIu64,
	         what, *have, want);
	if (f->unclean || f->maps_only) {
		note(f, "%s (recomputed)", msg);
		f->map_fixes++;
		if (f->repair || f->maps_only)
			*have = want;
		return;
	}
	problem(f, "%s", msg);
	if (fix(f, "corrected the counter"))
		*have = want;
}

static void pass_maps(struct fsck *f)
{
	struct arf_sb *sb = f->sb;
	compare_map(f, "inode bitmap", "inodes", (uint64_t *)(f->base + sb->ibmap_off), f->iused,
	            sb->ibmap_len / 8);
	compare_map(f, "block bitmap", "blocks", (uint64_t *)(f->base + sb->bbmap_off), f->used,
	            sb->bbmap_len / 8);
	counter(f, "free inodes", &sb->free_inodes, sb->n_inodes - count_set(f->iused, sb->n_inodes));
	counter(f, "free blocks", &sb->free_blocks, sb->n_blocks - count_set(f->used, sb->n_blocks));
	if (sb->balloc_hint >= sb->bbmap_len / 8 || sb->ialloc_hint >= sb->ibmap_len / 8) {
		problem(f, "superblock: allocation hints %" PRIu64 "/%" PRIu64 " point past the bitmaps",
		        sb->balloc_hint, sb->ialloc_hint);
		if (fix(f, "reset them"))
			sb->balloc_hint = sb->ialloc_hint = 0;
	}
	if (sb->clean > 1) {
		problem(f, "superblock: clean flag is %" PRIu64 ", not 0 or 1", sb->clean);
		if (fix(f, "set it to 0"))
			sb->clean = 0;
	}
}

/* ---- driver ---- */

static void *zalloc_bits(uint64_t n_bits)
{
	return calloc((n_bits + 63) / 64 + 1, 8);
}

/* The keyed results in block 0 (docs/arf.md, "Exactly once across a restart"): each entry
 * empty (all zero but perhaps its lock word) or holding a key whose entry it is, and either
 * a result that is 0 or an inode number with a generation already handed out, or an
 * append's record (ARF_O_APPEND in gen): 1 or more bytes written at an offset (gen's low
 * bits, ARF_O_RESERVE beside them) that they do not take past 16 TiB; a lock word 0 or an
 * operation's tag.  Any op hash goes with a key (0: recorded before op hashes, matched by
 * no request, harmless).  A bad entry is emptied: the request it recorded, if repeated,
 * runs again (as before keys). */
static void pass_once(struct fsck *f)
{
	struct arf_sb *sb = f->sb;
	const uint64_t max_bytes = (uint64_t)ARF_MAX_FILE_BLOCKS << ARF_BLOCK_SHIFT;
	for (uint64_t k = 0; k < arf_once_n(sb); k++) {
		uint64_t off = arf_once_off(sb) + k * ARF_O_SIZE;
		struct arf_once *e = (struct arf_once *)(f->base + off);
		const char *bad = NULL;
		uint64_t slot = e->lock & 0xffffffffu;
		if (e->lock != 0 && (slot == 0 || slot > ARF_J_SLOTS || e->lock >> 32 > sb->epoch))
			bad = "a lock word that is no operation's tag";
		else if (e->key == 0 && (e->result != 0 || e->op != 0 || e->gen != 0))
			bad = "a result without a key";
		else if (e->key != 0 && arf_once_entry(sb, e->key) != off)
			bad = "a key that belongs to another entry";
		else if (e->gen & ARF_O_APPEND) {
			uint64_t at = e->gen & ~(uint64_t)(ARF_O_APPEND | ARF_O_RESERVE);
			if (e->result == 0 || at > max_bytes - e->result)
				bad = "an append's record whose bytes lie past 16 TiB (or are none)";
		} else if (e->result >= sb->n_inodes)
			bad = "a result that is neither 0 nor an inode number";
		else if (e->gen >= sb->next_gen && e->gen != 0)
			bad = "a generation not handed out yet";
		if (!bad)
			continue;
		problem(f, "keyed result %" PRIu64 " (key %#" PRIx64 ", op %#" PRIx32 ", result %" PRIu32
		        "): %s", k, e->key, e->op, e->result, bad);
		if (fix(f, "emptied it"))
			memset(e, 0, sizeof *e);
	}
}

/* A cluster's metadata image (docs/cluster.md): its regular files' bytes are objects on the
 * data servers, so no regular file but the description owns blocks here.  One that does was
 * written by a client that did not know the image is a cluster's (its bytes are not the ones
 * the cluster serves, and nothing would ever free them).  Reported, not repaired: which copy
 * is the file's is the owner's to say. */
static void pass_cluster(struct fsck *f)
{
	struct arf_cluster_stamp st = arf_image_cluster_stamp(f->base, f->len);
	if (!st.ino)
		return;
	for (uint64_t i = 1; i < f->n_inodes; i++) {
		const struct arf_inode *d = ino(f, i);
		if (i == st.ino || !bit_get(f->iused, i) || (d->mode & ARF_S_IFMT) != ARF_S_IFREG)
			continue;
		if (d->n_extents || d->xblk || d->nblocks)
			problem(f, "inode %" PRIu64 " (regular file): owns %" PRIu64 " blocks in a "
			        "cluster's metadata image, where a file's bytes are objects on the data "
			        "servers (written by a client that did not know the cluster); not repaired",
			        i, d->nblocks);
	}
}

static int run(struct fsck *f)
{
	struct arf_sb *sb = f->sb;
	f->n_inodes = sb->n_inodes;
	f->data_blk = sb->data_off >> ARF_BLOCK_SHIFT;
	f->used = zalloc_bits(sb->bbmap_len * 8);
	f->iused = zalloc_bits(sb->ibmap_len * 8);
	f->reach = zalloc_bits(sb->n_inodes);
	f->rebuild = zalloc_bits(sb->n_inodes);
	f->refs = calloc(sb->n_inodes, sizeof *f->refs);
	f->subdirs = calloc(sb->n_inodes, sizeof *f->subdirs);
	f->parent_of = calloc(sb->n_inodes, sizeof *f->parent_of);
	if (!f->used || !f->iused || !f->reach || !f->rebuild || !f->refs || !f->subdirs ||
	    !f->parent_of) {
		f->failed = true;
		goto out;
	}
	/* metadata blocks, inode 0 and the bits past the end are "in use" by definition */
	for (uint64_t b = 0; b < f->data_blk; b++)
		bit_set(f->used, b);
	for (uint64_t b = sb->n_blocks; b < sb->bbmap_len * 8; b++)
		bit_set(f->used, b);
	bit_set(f->iused, 0);
	for (uint64_t i = sb->n_inodes; i < sb->ibmap_len * 8; i++)
		bit_set(f->iused, i);

	pass_once(f);
	pass_inodes(f);
	if (!f->failed)
		pass_entries(f);
	if (!f->failed && f->repair)
		rebuild_tables(f);
	if (!f->failed)
		pass_reach(f);
	if (!f->failed)
		pass_links(f);
	if (!f->failed)
		pass_maps(f);
	if (!f->failed)
		pass_cluster(f);
out:
	if (f->res) {
		f->res->problems += f->problems;
		f->res->repaired += f->repaired;
	}
	free(f->used);
	free(f->iused);
	free(f->reach);
	free(f->rebuild);
	free(f->refs);
	free(f->subdirs);
	free(f->parent_of);
	free(f->ents);
	if (f->failed) {
		note(f, "out of memory");
		return ARF_FSCK_ERROR;
	}
	if (!f->problems)
		return ARF_FSCK_CLEAN;
	return f->repair && f->repaired == f->problems ? ARF_FSCK_REPAIRED : ARF_FSCK_PROBLEMS;
}

/* Journal slots in use: an interrupted operation, or a malformed slot. */
static int journal(struct fsck *f, bool may_write)
{
	char err[256];
	int n = 0;
	for (unsigned k = 0; k < ARF_J_SLOTS; k++) {
		const struct arf_jslot *j = (const struct arf_jslot *)(f->base + f->sb->journal_off +
		                                                        (uint64_t)k * ARF_J_SLOT_SIZE);
		n += j->owner || j->n_undo || j->used;
	}
	if (!n)
		return 0;
	if (!may_write) {
		note(f, "journal: %d slots hold interrupted operations (not rolled back: read-only)", n);
		return 0;
	}
	int rc = arf_journal_rollback(f->base, f->len, err, sizeof err);
	if (rc < 0) {
		problem(f, "%s", err);
		if (fix(f, "emptied the journal without rolling back (the interrupted operations "
		        "stay half done; the checks below find what they left)"))
			memset(f->base + f->sb->journal_off, 0, f->sb->journal_len);
		f->unclean = true;
		return -1;
	}
	note(f, "journal: rolled back %d interrupted operations", rc);
	f->unclean = true;
	return 0;
}

static int fsck_image(void *base, uint64_t len, int fd, const struct arf_fsck_opts *o,
                      bool repair, bool maps_only, struct arf_fsck_result *res)
{
	char err[512];
	struct fsck f = { .base = base, .len = len, .sb = base, .fd = fd, .o = o,
	                  .repair = repair, .maps_only = maps_only, .res = res };
	if (arf_sb_check(base, len, err, sizeof err) != 0) {
		problem(&f, "%s", err);
		return ARF_FSCK_ERROR;
	}
	f.unclean = f.sb->clean != 1;
	if (f.unclean)
		note(&f, "the image was not detached cleanly (arfd running, or stopped without "
		     "detaching): allocation maps are recomputed");
	journal(&f, true);
	if (f.unclean)
		f.fd = -1;                 /* rolled-back bytes may sit where the file has holes */
	int rc = run(&f);
	if (rc != ARF_FSCK_ERROR && repair && f.unclean && !f.problems)
		f.sb->clean = 1;
	if (maps_only && res)
		res->repaired += f.map_fixes;
	return rc;
}

int arf_fsck_mem(void *base, uint64_t len, const struct arf_fsck_opts *o, bool maps_only,
                 struct arf_fsck_result *res)
{
	struct arf_fsck_result r0 = { 0 };
	return fsck_image(base, len, -1, o, o && o->repair, maps_only, res ? res : &r0);
}

int arf_fsck(const char *path, const struct arf_fsck_opts *o, struct arf_fsck_result *res)
{
	struct arf_fsck_result r0 = { 0 };
	if (!res)
		res = &r0;
	memset(res, 0, sizeof *res);
	bool repair = o && o->repair;
	struct arf_image img;
	char err[1024];
	if (arf_image_open(path, repair ? ARF_OPEN_RW : ARF_OPEN_PRIVATE, &img, err, sizeof err) != 0) {
		if (o && o->report)
			o->report(o->user, ARF_FSCK_PROBLEM, err);
		return ARF_FSCK_ERROR;
	}
	int rc = fsck_image(img.base, img.len, img.fd, o, repair, false, res);
	if (rc != ARF_FSCK_CLEAN && rc != ARF_FSCK_ERROR && repair) {
		/* the verdict comes from a fresh check of the repaired image */
		struct arf_fsck_result again = { 0 };
		struct arf_fsck_opts quiet = { .repair = false };
		int rc2 = fsck_image(img.base, img.len, img.fd, &quiet, false, false, &again);
		if (rc2 == ARF_FSCK_CLEAN) {
			rc = ARF_FSCK_REPAIRED;
		} else {
			rc = ARF_FSCK_PROBLEMS;
			if (o->report) {
				snprintf(err, sizeof err, "after repair, %" PRIu64 " problems are left:",
				         again.problems);
				o->report(o->user, ARF_FSCK_NOTE, err);
				struct arf_fsck_opts loud = { .repair = false, .report = o->report, .user = o->user };
				struct arf_fsck_result third = { 0 };
				fsck_image(img.base, img.len, img.fd, &loud, false, false, &third);
			}
		}
	}
	/* the final state, as the (possibly recomputed) counters say */
	res->blocks_used = img.sb->n_blocks - img.sb->free_blocks;
	res->inodes_used = img.sb->n_inodes - img.sb->free_inodes;
	if (arf_image_close(&img, err, sizeof err) != 0) {
		if (o && o->report)
			o->report(o->user, ARF_FSCK_PROBLEM, err);
		return ARF_FSCK_ERROR;
	}
	return rc;
}
