/* layout.h: the ARF on-image layout for C (mkfs, fsck, arfd, the FUSE client to come).
 *
 * The numbers come from layout.def, the one list the segments of arf/ (ops.c, data.c,
 * statfs.c, compiled for the VM) use as well.  The structs below overlay the mapped image
 * on this little-endian host; each field's offset is asserted equal to its layout.def name,
 * so the structs cannot drift from what the bytecode reads.  docs/arf.md is the prose.
 */
#ifndef ARF_LAYOUT_H
#define ARF_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ARF overlays little-endian structs on the image: a big-endian host needs converters"
#endif

/* Some values exceed int (hash constants, magics): GCC and clang then give the enum a 64-bit
 * type, which is what every user wants anyway. */
enum arf_layout {
#define ARF_C(name, value, doc) name = (value),
#include "layout.def"
#undef ARF_C
};

struct arf_sb {
	uint64_t magic;
	uint32_t version;
	uint32_t block_size;
	uint64_t n_blocks;
	uint64_t n_inodes;
	uint64_t journal_off, journal_len;
	uint64_t ibmap_off, ibmap_len;
	uint64_t bbmap_off, bbmap_len;
	uint64_t itable_off, itable_len;
	uint64_t data_off;
	int64_t mkfs_time;
	uint8_t uuid[16];
	uint64_t features;
	uint64_t once_off, once_n;
	uint8_t reserved[ARF_SB_GEOM_CHECK - ARF_SB_ONCE_N - 8];
	uint64_t geom_check;
	/* live part */
	uint64_t free_blocks;
	uint64_t free_inodes;
	uint64_t next_gen;
	uint64_t epoch;
	uint64_t clean;
	uint64_t balloc_hint;
	uint64_t ialloc_hint;
};

struct arf_extent {
	uint32_t lblk;
	uint32_t len;
	uint64_t pblk;
};

struct arf_inode {
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	uint64_t nblocks;
	int64_t atime, mtime, ctime, btime;
	uint64_t gen;
	uint64_t lock;
	uint64_t parent;
	uint32_t flags;
	uint32_t n_extents;
	uint64_t xblk;
	uint64_t rdev;
	union {
		struct arf_extent ext[ARF_I_INLINE_EXT];
		char target[ARF_I_BODY_LEN];       /* short symlink */
		struct {                           /* directory */
			uint64_t table, nslots, shift, nent, ntomb, head, tail;
		} dir;
	} u;
	uint64_t xattr;                            /* the xattr block's offset, 0 = none */
	uint8_t spare[ARF_INO_SIZE - ARF_I_SPARE];
};

struct arf_xattr_hdr {                         /* xattr block header; entries follow */
	uint32_t magic;
	uint32_t n;
	uint64_t used;
};

struct arf_xblk {                              /* extent block header */
	uint64_t next;
	uint32_t n;
	uint32_t magic;
	struct arf_extent ext[ARF_X_MAX];
};

struct arf_slot {
	uint64_t hash;
	uint64_t rec;
};

struct arf_dblk {                              /* directory block header */
	uint64_t next;
	uint64_t used;
	uint64_t live;
	uint64_t magic;
};

struct arf_rec {
	uint64_t ino;
	uint64_t hash;
	uint16_t len;
	uint8_t name_len;
	uint8_t type;
	char name[];
};

struct arf_jslot {
	uint64_t owner;
	uint64_t n_undo;
	uint64_t used;
	uint64_t reserved;
};

struct arf_once {
	uint64_t lock;
	uint64_t key;
	uint32_t result;
	uint32_t op;
	uint64_t gen;
};

struct arf_undo {
	uint64_t off;
	uint64_t len;
	uint8_t data[];
};

#define ARF_AT(type, field, name) _Static_assert(offsetof(type, field) == (name), #type "." #field)
ARF_AT(struct arf_sb, magic, ARF_SB_MAGIC);
ARF_AT(struct arf_sb, version, ARF_SB_VERSION);
ARF_AT(struct arf_sb, block_size, ARF_SB_BLOCK_SIZE);
ARF_AT(struct arf_sb, n_blocks, ARF_SB_N_BLOCKS);
ARF_AT(struct arf_sb, n_inodes, ARF_SB_N_INODES);
ARF_AT(struct arf_sb, journal_off, ARF_SB_JOURNAL_OFF);
ARF_AT(struct arf_sb, journal_len, ARF_SB_JOURNAL_LEN);
ARF_AT(struct arf_sb, ibmap_off, ARF_SB_IBMAP_OFF);
ARF_AT(struct arf_sb, ibmap_len, ARF_SB_IBMAP_LEN);
ARF_AT(struct arf_sb, bbmap_off, ARF_SB_BBMAP_OFF);
ARF_AT(struct arf_sb, bbmap_len, ARF_SB_BBMAP_LEN);
ARF_AT(struct arf_sb, itable_off, ARF_SB_ITABLE_OFF);
ARF_AT(struct arf_sb, itable_len, ARF_SB_ITABLE_LEN);
ARF_AT(struct arf_sb, data_off, ARF_SB_DATA_OFF);
ARF_AT(struct arf_sb, mkfs_time, ARF_SB_MKFS_TIME);
ARF_AT(struct arf_sb, uuid, ARF_SB_UUID);
ARF_AT(struct arf_sb, features, ARF_SB_FEATURES);
ARF_AT(struct arf_sb, once_off, ARF_SB_ONCE_OFF);
ARF_AT(struct arf_sb, once_n, ARF_SB_ONCE_N);
ARF_AT(struct arf_sb, geom_check, ARF_SB_GEOM_CHECK);
ARF_AT(struct arf_sb, free_blocks, ARF_SB_FREE_BLOCKS);
ARF_AT(struct arf_sb, free_inodes, ARF_SB_FREE_INODES);
ARF_AT(struct arf_sb, next_gen, ARF_SB_NEXT_GEN);
ARF_AT(struct arf_sb, epoch, ARF_SB_EPOCH);
ARF_AT(struct arf_sb, clean, ARF_SB_CLEAN);
ARF_AT(struct arf_sb, balloc_hint, ARF_SB_BALLOC_HINT);
ARF_AT(struct arf_sb, ialloc_hint, ARF_SB_IALLOC_HINT);
_Static_assert(sizeof(struct arf_sb) == ARF_SB_SIZE, "superblock size");
_Static_assert(ARF_SB_SIZE <= ARF_BLOCK_SIZE, "superblock fits block 0");

ARF_AT(struct arf_inode, mode, ARF_I_MODE);
ARF_AT(struct arf_inode, nlink, ARF_I_NLINK);
ARF_AT(struct arf_inode, uid, ARF_I_UID);
ARF_AT(struct arf_inode, gid, ARF_I_GID);
ARF_AT(struct arf_inode, size, ARF_I_SIZE);
ARF_AT(struct arf_inode, nblocks, ARF_I_NBLOCKS);
ARF_AT(struct arf_inode, atime, ARF_I_ATIME);
ARF_AT(struct arf_inode, mtime, ARF_I_MTIME);
ARF_AT(struct arf_inode, ctime, ARF_I_CTIME);
ARF_AT(struct arf_inode, btime, ARF_I_BTIME);
ARF_AT(struct arf_inode, gen, ARF_I_GEN);
ARF_AT(struct arf_inode, lock, ARF_I_LOCK);
ARF_AT(struct arf_inode, parent, ARF_I_PARENT);
ARF_AT(struct arf_inode, flags, ARF_I_FLAGS);
ARF_AT(struct arf_inode, n_extents, ARF_I_NEXTENTS);
ARF_AT(struct arf_inode, xblk, ARF_I_XBLK);
ARF_AT(struct arf_inode, rdev, ARF_I_RDEV);
ARF_AT(struct arf_inode, u.ext, ARF_I_BODY);
ARF_AT(struct arf_inode, u.target, ARF_I_BODY);
ARF_AT(struct arf_inode, u.dir.table, ARF_D_TABLE);
ARF_AT(struct arf_inode, u.dir.nslots, ARF_D_NSLOTS);
ARF_AT(struct arf_inode, u.dir.shift, ARF_D_SHIFT);
ARF_AT(struct arf_inode, u.dir.nent, ARF_D_NENT);
ARF_AT(struct arf_inode, u.dir.ntomb, ARF_D_NTOMB);
ARF_AT(struct arf_inode, u.dir.head, ARF_D_HEAD);
ARF_AT(struct arf_inode, u.dir.tail, ARF_D_TAIL);
_Static_assert(sizeof(struct arf_inode) == ARF_INO_SIZE, "inode size");
_Static_assert(1 << ARF_INO_SHIFT == ARF_INO_SIZE, "inode shift");
ARF_AT(struct arf_inode, xattr, ARF_I_XATTR);
ARF_AT(struct arf_inode, spare, ARF_I_SPARE);
_Static_assert(ARF_I_BODY + ARF_I_BODY_LEN == ARF_I_XATTR, "the xattr field follows the body");
ARF_AT(struct arf_xattr_hdr, magic, ARF_A_MAGIC);
ARF_AT(struct arf_xattr_hdr, n, ARF_A_N);
ARF_AT(struct arf_xattr_hdr, used, ARF_A_USED);
_Static_assert(sizeof(struct arf_xattr_hdr) == ARF_A_HDR, "xattr block header");
_Static_assert(ARF_XATTR_VALUE_MAX < 65536, "a value length fits the entry's u16");
_Static_assert(ARF_I_INLINE_EXT * ARF_E_SIZE == ARF_I_BODY_LEN, "inline extents fill the body");
_Static_assert(ARF_BLOCK_SIZE % ARF_INO_SIZE == 0, "inodes never straddle blocks");

ARF_AT(struct arf_extent, lblk, ARF_E_LBLK);
ARF_AT(struct arf_extent, len, ARF_E_LEN);
ARF_AT(struct arf_extent, pblk, ARF_E_PBLK);
_Static_assert(sizeof(struct arf_extent) == ARF_E_SIZE, "extent size");
ARF_AT(struct arf_xblk, next, ARF_X_NEXT);
ARF_AT(struct arf_xblk, n, ARF_X_N);
ARF_AT(struct arf_xblk, magic, ARF_X_MAGIC);
ARF_AT(struct arf_xblk, ext, ARF_X_EXT);
_Static_assert(sizeof(struct arf_xblk) == ARF_BLOCK_SIZE, "extent block is one block");

ARF_AT(struct arf_slot, hash, ARF_T_HASH);
ARF_AT(struct arf_slot, rec, ARF_T_REC);
_Static_assert(sizeof(struct arf_slot) == ARF_T_SIZE, "slot size");
_Static_assert(ARF_D_MIN_SLOTS * ARF_T_SIZE == ARF_BLOCK_SIZE, "smallest table is one block");
_Static_assert(1ull << (64 - ARF_D_MAX_SHIFT) == ARF_D_MIN_SLOTS, "largest shift");
ARF_AT(struct arf_dblk, next, ARF_B_NEXT);
ARF_AT(struct arf_dblk, used, ARF_B_USED);
ARF_AT(struct arf_dblk, live, ARF_B_LIVE);
ARF_AT(struct arf_dblk, magic, ARF_B_MAGIC);
_Static_assert(sizeof(struct arf_dblk) == ARF_B_HDR, "directory block header");
ARF_AT(struct arf_rec, ino, ARF_R_INO);
ARF_AT(struct arf_rec, hash, ARF_R_HASH);
ARF_AT(struct arf_rec, len, ARF_R_LEN);
ARF_AT(struct arf_rec, name_len, ARF_R_NAMELEN);
ARF_AT(struct arf_rec, type, ARF_R_TYPE);
ARF_AT(struct arf_rec, name, ARF_R_NAME);
_Static_assert(((ARF_R_NAME + 1 + 7) & ~7) == ARF_R_MIN, "shortest record");
_Static_assert(((ARF_R_NAME + ARF_NAME_MAX + 7) & ~7) == ARF_R_MAX, "longest record");

ARF_AT(struct arf_jslot, owner, ARF_J_OWNER);
ARF_AT(struct arf_jslot, n_undo, ARF_J_N_UNDO);
ARF_AT(struct arf_jslot, used, ARF_J_USED);
_Static_assert(sizeof(struct arf_jslot) == ARF_J_HDR, "journal slot header");
ARF_AT(struct arf_undo, off, ARF_U_OFF);
ARF_AT(struct arf_undo, len, ARF_U_LEN);
ARF_AT(struct arf_undo, data, ARF_U_DATA);
ARF_AT(struct arf_once, lock, ARF_O_LOCK);
ARF_AT(struct arf_once, key, ARF_O_KEY);
ARF_AT(struct arf_once, result, ARF_O_RESULT);
ARF_AT(struct arf_once, op, ARF_O_OP);
ARF_AT(struct arf_once, gen, ARF_O_GEN);
_Static_assert(sizeof(struct arf_once) == ARF_O_SIZE, "keyed result entry");
_Static_assert(ARF_O_RESULT % 8 == 0 && ARF_O_OP == ARF_O_RESULT + 4,
               "a keyed result and its op hash are one word (loaded and stored at once)");
_Static_assert(ARF_O_OFF >= ARF_SB_SIZE && ARF_O_OFF + ARF_O_N * ARF_O_SIZE <= ARF_BLOCK_SIZE &&
               ARF_O_OFF % 8 == 0, "the keyed results lie in block 0 after the superblock");
_Static_assert(ARF_J_SLOT_SIZE % ARF_BLOCK_SIZE == 0, "journal slots are whole blocks");
#undef ARF_AT

_Static_assert(ARF_SB_FREE_BLOCKS % 8 == 0 && ARF_SB_FREE_INODES % 8 == 0 &&
               ARF_SB_NEXT_GEN % 8 == 0 && ARF_SB_EPOCH % 8 == 0 && ARF_I_LOCK % 8 == 0 &&
               ARF_J_OWNER % 8 == 0 && ARF_B_LIVE % 8 == 0 && ARF_D_NENT % 8 == 0 &&
               ARF_T_REC % 8 == 0, "words updated with cas/fadd are 8-byte aligned");
_Static_assert(ARF_WALK_HDR == 8 + 16 * ARF_WALK_FRAMES && ARF_WALK_FRAMES < 256,
               "walk header: a count and the frames; depths fit a byte");

/* FNV-1a 64 of a name: the hash of directory entries (bytecode computes the same). */
/* The keyed results' table of an image: its byte offset and entries (an image made before
 * ARF_FEAT_ONCE: the ARF_O_N entries in block 0). */
static inline uint64_t arf_once_off(const struct arf_sb *sb)
{
	return sb->once_n ? sb->once_off : ARF_O_OFF;
}
static inline uint64_t arf_once_n(const struct arf_sb *sb)
{
	return sb->once_n ? sb->once_n : ARF_O_N;
}

/* Byte offset of the keyed-result entry of key (client << 32 | sequence number): a client's
 * consecutive sequence numbers take consecutive entries (arf/once.h computes the same). */
static inline uint64_t arf_once_entry(const struct arf_sb *sb, uint64_t key)
{
	return arf_once_off(sb) + ((key >> 32) * ARF_O_MIX + (key & 0xffffffffu)) % arf_once_n(sb) *
	       ARF_O_SIZE;
}

static inline uint64_t arf_name_hash(const void *name, size_t len)
{
	const uint8_t *p = name;
	uint64_t h = ARF_FNV_OFFSET;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * ARF_FNV_PRIME;
	return h;
}

/* The slot where a probe for hash starts, in a table of 2^(64 - shift) slots. */
static inline uint64_t arf_home_slot(uint64_t hash, uint64_t shift)
{
	return (hash * (uint64_t)ARF_HASH_MUL) >> shift;
}

/* Record length for a name of len bytes. */
static inline unsigned arf_rec_len(unsigned name_len)
{
	return (ARF_R_NAME + name_len + 7u) & ~7u;
}

#endif
