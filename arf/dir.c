/* dir.c: directory building in C, for mkfs (root holding lost+found) and fsck --repair
 * (rebuilt slot tables, orphans added to lost+found).  These run with the image offline, so
 * they ignore locks and the journal; the served operations are bytecode following the same
 * layout rules (docs/arf.md, "Directories").
 */
#include <errno.h>
#include <string.h>

#include "arf_int.h"

static int64_t claim_in(uint64_t *bits, uint64_t lo, uint64_t hi, uint64_t count)
{
	uint64_t run = 0, start = lo;
	for (uint64_t i = lo; i < hi;) {
		if ((i & 63) == 0 && i + 64 <= hi && bits[i >> 6] == ~0ull) {
			run = 0;               /* a full word: 64 blocks in use at once */
			i += 64;
			continue;
		}
		if (bit_get(bits, i)) {
			run = 0;
			i++;
			continue;
		}
		if (run == 0)
			start = i;
		if (++run == count) {
			for (uint64_t j = start; j < start + count; j++)
				bit_set(bits, j);
			return (int64_t)start;
		}
		i++;
	}
	return -1;
}

int64_t arf_bits_claim(uint64_t *bits, uint64_t n_bits, uint64_t from, uint64_t count)
{
	if (count == 0 || count > n_bits)
		return -1;
	if (from >= n_bits)
		from = 0;
	int64_t r = claim_in(bits, from, n_bits, count);
	return r >= 0 ? r : claim_in(bits, 0, from, count);
}

uint64_t arf_dir_slots_for(uint64_t n)
{
	uint64_t s = ARF_D_MIN_SLOTS;
	while (s < 2 * n)
		s <<= 1;
	return s;
}

static unsigned log2u(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

/* Put (hash, rec) into the first empty or tombstone slot of its probe sequence; true when
 * that was a tombstone (one fewer of them). */
static bool table_put(uint8_t *base, uint64_t table, uint64_t nslots, uint64_t shift,
                      uint64_t hash, uint64_t rec)
{
	struct arf_slot *t = (struct arf_slot *)(base + table);
	uint64_t i = arf_home_slot(hash, shift);
	while (t[i].rec > ARF_T_TOMB)
		i = (i + 1) & (nslots - 1);
	bool tomb = t[i].rec == ARF_T_TOMB;
	t[i].hash = hash;
	t[i].rec = rec;
	return tomb;
}

/* A fresh zeroed table of nslots slots; 0 when the image is full. */
static uint64_t table_new(uint8_t *base, struct arf_sb *sb, uint64_t *bmap, uint64_t nslots)
{
	uint64_t nblk = nslots * ARF_T_SIZE / ARF_BLOCK_SIZE;
	int64_t b = arf_bits_claim(bmap, sb->n_blocks, sb->data_off >> ARF_BLOCK_SHIFT, nblk);
	if (b < 0)
		return 0;
	uint64_t off = (uint64_t)b << ARF_BLOCK_SHIFT;
	memset(base + off, 0, nblk * ARF_BLOCK_SIZE);
	return off;
}

static void table_free(struct arf_sb *sb, uint64_t *bmap, uint64_t table, uint64_t nslots)
{
	uint64_t b = table >> ARF_BLOCK_SHIFT, nblk = nslots * ARF_T_SIZE / ARF_BLOCK_SIZE;
	for (uint64_t i = 0; i < nblk; i++)
		bit_clr(bmap, b + i);
}

static bool name_ok(const char *name, size_t len)
{
	if (len == 0 || (len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return false;
	return !memchr(name, '/', len) && !memchr(name, '\0', len);
}

int arf_dir_add(uint8_t *base, struct arf_sb *sb, uint64_t *bmap, uint64_t dir,
                const char *name, size_t len, uint64_t child, unsigned dtype)
{
	if (len > ARF_NAME_MAX)
		return -ENAMETOOLONG;
	if (!name_ok(name, len))
		return -EINVAL;
	struct arf_inode *d = ino_at(base, sb, dir);
	uint64_t h = arf_name_hash(name, len);
	if (d->u.dir.table) {
		struct arf_slot *t = (struct arf_slot *)(base + d->u.dir.table);
		for (uint64_t i = arf_home_slot(h, d->u.dir.shift); t[i].rec != ARF_T_EMPTY;
		     i = (i + 1) & (d->u.dir.nslots - 1)) {
			if (t[i].rec == ARF_T_TOMB || t[i].hash != h)
				continue;
			const struct arf_rec *r = (const struct arf_rec *)(base + t[i].rec);
			if (r->name_len == len && !memcmp(r->name, name, len))
				return -EEXIST;
		}
	}
	/* grow (rehash into a fresh run) before the insert would pass half the table */
	if (!d->u.dir.table || (d->u.dir.nent + d->u.dir.ntomb + 1) * 2 > d->u.dir.nslots) {
		uint64_t ns = arf_dir_slots_for(d->u.dir.nent + 1);
		uint64_t nt = table_new(base, sb, bmap, ns);
		if (!nt)
			return -ENOSPC;
		uint64_t shift = 64 - log2u(ns);
		if (d->u.dir.table) {
			const struct arf_slot *o = (const struct arf_slot *)(base + d->u.dir.table);
			for (uint64_t i = 0; i < d->u.dir.nslots; i++)
				if (o[i].rec > ARF_T_TOMB)
					table_put(base, nt, ns, shift, o[i].hash, o[i].rec);
			table_free(sb, bmap, d->u.dir.table, d->u.dir.nslots);
			d->nblocks -= d->u.dir.nslots * ARF_T_SIZE / ARF_BLOCK_SIZE;
		}
		d->u.dir.table = nt;
		d->u.dir.nslots = ns;
		d->u.dir.shift = shift;
		d->u.dir.ntomb = 0;
		d->nblocks += ns * ARF_T_SIZE / ARF_BLOCK_SIZE;
	}
	unsigned rl = arf_rec_len((unsigned)len);
	struct arf_dblk *tail = d->u.dir.tail ? (struct arf_dblk *)(base + d->u.dir.tail) : NULL;
	if (!tail || tail->used + rl > ARF_BLOCK_SIZE) {
		int64_t b = arf_bits_claim(bmap, sb->n_blocks, sb->data_off >> ARF_BLOCK_SHIFT, 1);
		if (b < 0)
			return -ENOSPC;
		uint64_t off = (uint64_t)b << ARF_BLOCK_SHIFT;
		struct arf_dblk *nb = (struct arf_dblk *)(base + off);
		memset(nb, 0, ARF_BLOCK_SIZE);
		nb->used = ARF_B_HDR;
		nb->magic = ARF_B_MAGIC_VALUE;
		if (tail)
			tail->next = off;
		else
			d->u.dir.head = off;
		d->u.dir.tail = off;
		d->nblocks++;
		d->size += ARF_BLOCK_SIZE;
		tail = nb;
	}
	uint64_t roff = d->u.dir.tail + tail->used;
	struct arf_rec *r = (struct arf_rec *)(base + roff);
	memset(r, 0, rl);
	r->ino = child;
	r->hash = h;
	r->len = (uint16_t)rl;
	r->name_len = (uint8_t)len;
	r->type = (uint8_t)dtype;
	memcpy(r->name, name, len);
	tail->used += rl;
	tail->live++;
	if (table_put(base, d->u.dir.table, d->u.dir.nslots, d->u.dir.shift, h, roff))
		d->u.dir.ntomb--;
	d->u.dir.nent++;
	return 0;
}

int arf_dir_rebuild(uint8_t *base, struct arf_sb *sb, uint64_t *bmap, uint64_t dir)
{
	struct arf_inode *d = ino_at(base, sb, dir);
	uint64_t live = 0, nblk = 0, last = 0;
	for (uint64_t b = d->u.dir.head; b; b = ((struct arf_dblk *)(base + b))->next) {
		struct arf_dblk *h = (struct arf_dblk *)(base + b);
		last = b;
		h->live = 0;
		for (uint64_t o = ARF_B_HDR; o < h->used; o += ((struct arf_rec *)(base + b + o))->len)
			if (((struct arf_rec *)(base + b + o))->ino) {
				h->live++;
				live++;
			}
		nblk++;
	}
	uint64_t ns = arf_dir_slots_for(live);
	if (d->u.dir.table && d->u.dir.nslots >= ns) {
		ns = d->u.dir.nslots;
		memset(base + d->u.dir.table, 0, ns * ARF_T_SIZE);
	} else {
		uint64_t nt = table_new(base, sb, bmap, ns);
		if (!nt)
			return -ENOSPC;
		if (d->u.dir.table)
			table_free(sb, bmap, d->u.dir.table, d->u.dir.nslots);
		d->u.dir.table = nt;
	}
	d->u.dir.nslots = ns;
	d->u.dir.shift = 64 - log2u(ns);
	for (uint64_t b = d->u.dir.head; b; b = ((struct arf_dblk *)(base + b))->next) {
		struct arf_dblk *h = (struct arf_dblk *)(base + b);
		for (uint64_t o = ARF_B_HDR; o < h->used; o += ((struct arf_rec *)(base + b + o))->len) {
			const struct arf_rec *r = (const struct arf_rec *)(base + b + o);
			if (r->ino)
				table_put(base, d->u.dir.table, ns, d->u.dir.shift, r->hash, b + o);
		}
	}
	d->u.dir.tail = last;
	d->u.dir.nent = live;
	d->u.dir.ntomb = 0;
	d->nblocks = nblk + ns * ARF_T_SIZE / ARF_BLOCK_SIZE;
	d->size = nblk * ARF_BLOCK_SIZE;
	return 0;
}
