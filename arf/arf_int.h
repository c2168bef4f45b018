/* arf_int.h: libarf's private helpers: bitmaps, inode addressing, and the C versions of the
 * directory operations mkfs and fsck --repair need (the served operations are bytecode).
 */
#ifndef ARF_INT_H
#define ARF_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "arf.h"

static inline bool bit_get(const uint64_t *w, uint64_t i)
{
	return (w[i >> 6] >> (i & 63)) & 1;
}
static inline void bit_set(uint64_t *w, uint64_t i)
{
	w[i >> 6] |= 1ull << (i & 63);
}
static inline void bit_clr(uint64_t *w, uint64_t i)
{
	w[i >> 6] &= ~(1ull << (i & 63));
}

static inline struct arf_inode *ino_at(uint8_t *base, const struct arf_sb *sb, uint64_t ino)
{
	return (struct arf_inode *)(base + sb->itable_off + (ino << ARF_INO_SHIFT));
}

static inline unsigned mode_dtype(uint32_t mode)
{
	switch (mode & ARF_S_IFMT) {
	case ARF_S_IFREG: return ARF_DT_REG;
	case ARF_S_IFDIR: return ARF_DT_DIR;
	case ARF_S_IFLNK: return ARF_DT_LNK;
	case ARF_S_IFIFO: return ARF_DT_FIFO;
	case ARF_S_IFCHR: return ARF_DT_CHR;
	case ARF_S_IFBLK: return ARF_DT_BLK;
	case ARF_S_IFSOCK: return ARF_DT_SOCK;
	default: return 0;
	}
}

/* Claim a run of count clear bits among n_bits, searching from bit `from` and wrapping;
 * sets them.  Returns the first bit, or -1 when there is no such run. */
int64_t arf_bits_claim(uint64_t *bits, uint64_t n_bits, uint64_t from, uint64_t count);

/* Add entry name -> child (of dtype) to directory dir, allocating blocks in bmap (the block
 * bitmap the caller keeps: the image's own in mkfs, fsck's computed one in repair): a slot
 * table (grown by rehashing into a fresh run when live + tombstones would pass half of it)
 * and directory blocks.  Keeps the dir's nent, ntomb, nblocks, size and block live counts.
 * 0, -EEXIST, -ENOSPC, -ENAMETOOLONG or -EINVAL. */
int arf_dir_add(uint8_t *base, struct arf_sb *sb, uint64_t *bmap, uint64_t dir,
                const char *name, size_t len, uint64_t child, unsigned dtype);

/* Rebuild dir's slot table from the live records of its blocks (the records are the truth,
 * the table only their index), into the old run when it is big enough, else a new one.
 * Recounts nent, ntomb (0) and each block's live count.  0 or -ENOSPC. */
int arf_dir_rebuild(uint8_t *base, struct arf_sb *sb, uint64_t *bmap, uint64_t dir);

/* The table size for n live entries: a power of two >= 2n, at least ARF_D_MIN_SLOTS, so a
 * grown table starts between a quarter and half full and grows again past half. */
uint64_t arf_dir_slots_for(uint64_t n);

#endif
