/* image.c: ARF image geometry, the superblock check, and mapping an image file.
 *
 * The geometry is a pure function of (image size, inode count): arf_sb_check recomputes it
 * and compares every offset and length, so no length read from an image is trusted before
 * it matches what the counts imply.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf.h"

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

uint64_t arf_geom_check(const struct arf_sb *sb)
{
	return arf_name_hash(sb, ARF_SB_GEOM_LEN);   /* FNV-1a 64, as names */
}

int arf_geometry(uint64_t size, uint64_t n_inodes, uint64_t features, struct arf_sb *sb,
                 char *err, size_t errlen)
{
	if (features & ~(uint64_t)ARF_FEAT_ONCE) {
		snprintf(err, errlen, "unknown feature bits 0x%" PRIx64,
		         features & ~(uint64_t)ARF_FEAT_ONCE);
		return -1;
	}
	uint64_t n_blocks = size >> ARF_BLOCK_SHIFT;
	if (n_blocks < ARF_MIN_BLOCKS || n_blocks > ARF_MAX_BLOCKS) {
		snprintf(err, errlen, "image size %" PRIu64 " bytes: must be %llu bytes (4 MiB) to "
		         "%llu bytes (16 TiB)", size, (unsigned long long)ARF_MIN_BLOCKS * ARF_BLOCK_SIZE,
		         (unsigned long long)ARF_MAX_BLOCKS * ARF_BLOCK_SIZE);
		return -1;
	}
	if (n_inodes == 0) {
		n_inodes = (n_blocks << ARF_BLOCK_SHIFT) / ARF_BYTES_PER_INODE;
		if (n_inodes < ARF_MIN_INODES)
			n_inodes = ARF_MIN_INODES;
		if (n_inodes > ARF_MAX_INODES)
			n_inodes = ARF_MAX_INODES;
	}
	if (n_inodes < ARF_MIN_INODES || n_inodes > ARF_MAX_INODES) {
		snprintf(err, errlen, "%" PRIu64 " inodes: must be %llu to %llu", n_inodes,
		         (unsigned long long)ARF_MIN_INODES, (unsigned long long)ARF_MAX_INODES);
		return -1;
	}
	memset(sb, 0, ARF_SB_GEOM_LEN);
	sb->magic = ARF_MAGIC_VALUE;
	sb->version = ARF_VERSION;
	sb->block_size = ARF_BLOCK_SIZE;
	sb->n_blocks = n_blocks;
	sb->n_inodes = n_inodes;
	sb->features = features;
	sb->journal_off = ARF_BLOCK_SIZE;
	sb->journal_len = (uint64_t)ARF_J_SLOTS * ARF_J_SLOT_SIZE;
	sb->ibmap_off = sb->journal_off + sb->journal_len;
	if (features & ARF_FEAT_ONCE) {
		/* the keyed results: a repeat is recognised until its entry is reused, so the table
		 * grows with what the image can hold (block 0's 112 entries were shared by every
		 * client: a busy image reused them within a second) */
		uint64_t n = n_blocks / ARF_O_BLOCKS_PER;
		sb->once_n = n < ARF_O_MIN ? ARF_O_MIN : n > ARF_O_MAX ? ARF_O_MAX : n;
		sb->once_off = sb->ibmap_off;
		sb->ibmap_off += round_up(sb->once_n * ARF_O_SIZE, ARF_BLOCK_SIZE);
	}
	sb->ibmap_len = round_up((n_inodes + 7) / 8, ARF_BLOCK_SIZE);
	sb->bbmap_off = sb->ibmap_off + sb->ibmap_len;
	sb->bbmap_len = round_up((n_blocks + 7) / 8, ARF_BLOCK_SIZE);
	sb->itable_off = sb->bbmap_off + sb->bbmap_len;
	sb->itable_len = round_up(n_inodes * ARF_INO_SIZE, ARF_BLOCK_SIZE);
	sb->data_off = sb->itable_off + sb->itable_len;
	/* room for the root directory and lost+found (a table and a block each) and then some */
	if ((sb->data_off >> ARF_BLOCK_SHIFT) + 16 > n_blocks) {
		snprintf(err, errlen, "image of %" PRIu64 " bytes is too small for %" PRIu64 " inodes "
		         "(metadata alone takes %" PRIu64 " bytes)", size, n_inodes, sb->data_off);
		return -1;
	}
	return 0;
}

int arf_sb_check(const void *base, uint64_t len, char *err, size_t errlen)
{
	if (len < ARF_BLOCK_SIZE) {
		snprintf(err, errlen, "superblock: image of %" PRIu64 " bytes is shorter than one "
		         "block (%d bytes): truncated, or not an ARF image", len, (int)ARF_BLOCK_SIZE);
		return -1;
	}
	const struct arf_sb *sb = base;
	if (sb->magic != ARF_MAGIC_VALUE) {
		snprintf(err, errlen, "superblock: bad magic 0x%016" PRIx64 " (want 0x%016llx "
		         "\"ARFIMAG1\"): not an ARF image", sb->magic,
		         (unsigned long long)ARF_MAGIC_VALUE);
		return -1;
	}
	if (sb->version == 1) {
		/* version 1 had 256-byte inodes with no room for an xattr block: its inode table
		 * cannot be read as version 2's, so it is refused, not half served */
		snprintf(err, errlen, "superblock: layout version 1 (256-byte inodes, before "
		         "xattrs), this program knows version %d: copy the files out with an older "
		         "arf (arf export) and into a new image (arf mkfs, arf import)",
		         (int)ARF_VERSION);
		return -1;
	}
	if (sb->version != ARF_VERSION) {
		snprintf(err, errlen, "superblock: layout version %" PRIu32 ", this program knows "
		         "version %d", sb->version, (int)ARF_VERSION);
		return -1;
	}
	uint64_t want = arf_geom_check(sb);
	if (sb->geom_check != want) {
		snprintf(err, errlen, "superblock: geometry check value 0x%016" PRIx64 " does not "
		         "match its contents (0x%016" PRIx64 "): the superblock is damaged",
		         sb->geom_check, want);
		return -1;
	}
	if (sb->block_size != ARF_BLOCK_SIZE) {
		snprintf(err, errlen, "superblock: block size %" PRIu32 ", want %d", sb->block_size,
		         (int)ARF_BLOCK_SIZE);
		return -1;
	}
	if (sb->n_blocks < ARF_MIN_BLOCKS || sb->n_blocks > ARF_MAX_BLOCKS) {
		snprintf(err, errlen, "superblock: %" PRIu64 " blocks is outside %llu..%llu",
		         sb->n_blocks, (unsigned long long)ARF_MIN_BLOCKS,
		         (unsigned long long)ARF_MAX_BLOCKS);
		return -1;
	}
	uint64_t size = sb->n_blocks << ARF_BLOCK_SHIFT;
	if (len != size) {
		snprintf(err, errlen, "superblock: the image should be %" PRIu64 " bytes (%" PRIu64
		         " blocks) but the file has %" PRIu64 " bytes: %s", size, sb->n_blocks, len,
		         len < size ? "truncated" : "grown behind the filesystem's back");
		return -1;
	}
	struct arf_sb g;
	char gerr[256];
	if (arf_geometry(size, sb->n_inodes, sb->features, &g, gerr, sizeof gerr) != 0) {
		snprintf(err, errlen, "superblock: %s", gerr);
		return -1;
	}
	static const struct { const char *what; size_t off; } fields[] = {
		{ "journal offset", ARF_SB_JOURNAL_OFF }, { "journal length", ARF_SB_JOURNAL_LEN },
		{ "inode bitmap offset", ARF_SB_IBMAP_OFF }, { "inode bitmap length", ARF_SB_IBMAP_LEN },
		{ "block bitmap offset", ARF_SB_BBMAP_OFF }, { "block bitmap length", ARF_SB_BBMAP_LEN },
		{ "inode table offset", ARF_SB_ITABLE_OFF }, { "inode table length", ARF_SB_ITABLE_LEN },
		{ "data offset", ARF_SB_DATA_OFF }, { "keyed results offset", ARF_SB_ONCE_OFF },
		{ "keyed results entries", ARF_SB_ONCE_N },
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		uint64_t have, expect;
		memcpy(&have, (const uint8_t *)sb + fields[i].off, 8);
		memcpy(&expect, (const uint8_t *)&g + fields[i].off, 8);
		if (have != expect) {
			snprintf(err, errlen, "superblock: %s is %" PRIu64 ", but %" PRIu64 " blocks and "
			         "%" PRIu64 " inodes put it at %" PRIu64, fields[i].what, have,
			         sb->n_blocks, sb->n_inodes, expect);
			return -1;
		}
	}
	return 0;
}

int arf_image_open(const char *path, enum arf_open_mode mode, struct arf_image *img, char *err,
                   size_t errlen)
{
	memset(img, 0, sizeof *img);
	img->fd = -1;
	int fd = open(path, mode == ARF_OPEN_RW ? O_RDWR : O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	uint64_t len = (uint64_t)st.st_size;
	if (len < ARF_BLOCK_SIZE) {
		char e2[256];
		arf_sb_check("", len, e2, sizeof e2);
		snprintf(err, errlen, "%s: %s", path, e2);
		close(fd);
		return -1;
	}
	int prot = PROT_READ | (mode != ARF_OPEN_RO ? PROT_WRITE : 0);
	/* MAP_NORESERVE: a private view of a 200 GiB image must not be charged as 200 GiB */
	int flags = mode == ARF_OPEN_RW ? MAP_SHARED : MAP_PRIVATE | MAP_NORESERVE;
	void *p = mmap(NULL, len, prot, flags, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "%s: mmap of %" PRIu64 " bytes: %s", path, len, strerror(errno));
		close(fd);
		return -1;
	}
	char e2[512];
	if (arf_sb_check(p, len, e2, sizeof e2) != 0) {
		snprintf(err, errlen, "%s: %s", path, e2);
		munmap(p, len);
		close(fd);
		return -1;
	}
	img->base = p;
	img->len = len;
	img->fd = fd;
	img->writable = mode != ARF_OPEN_RO;
	img->shared = mode == ARF_OPEN_RW;
	img->sb = p;
	return 0;
}

int arf_image_close(struct arf_image *img, char *err, size_t errlen)
{
	int rc = 0;
	if (img->base) {
		if (img->shared && msync(img->base, img->len, MS_SYNC) != 0) {
			snprintf(err, errlen, "msync: %s", strerror(errno));
			rc = -1;
		}
		munmap(img->base, img->len);
	}
	if (img->fd >= 0)
		close(img->fd);
	memset(img, 0, sizeof *img);
	img->fd = -1;
	return rc;
}
