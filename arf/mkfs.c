/* mkfs.c: create an ARF image: a sparse file whose only written blocks are the superblock,
 * the set parts of the bitmaps, the first inode-table block and the root's two directory
 * blocks; everything else is a hole that reads as zeros, which the layout defines as free
 * (inode mode 0, bitmap bit 0, journal slot owner 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf_int.h"

/* Set the bits past the last real inode or block, so no allocator can hand them out. */
static void set_tail(uint64_t *bits, uint64_t n_real, uint64_t map_len)
{
	for (uint64_t i = n_real; i < map_len * 8; i++) {
		if ((i & 63) == 0 && i + 64 <= map_len * 8) {
			bits[i >> 6] = ~0ull;
			i += 63;
			continue;
		}
		bit_set(bits, i);
	}
}

static uint64_t count_clear(const uint64_t *bits, uint64_t n)
{
	uint64_t used = 0;
	for (uint64_t w = 0; w < n / 64; w++)
		used += (uint64_t)__builtin_popcountll(bits[w]);
	for (uint64_t i = n / 64 * 64; i < n; i++)
		used += bit_get(bits, i);
	return n - used;
}

static void fill_uuid(uint8_t uuid[16])
{
	int fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || read(fd, uuid, 16) != 16) {
		/* no randomness: time and pid still tell images apart */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20), b = (uint64_t)getpid();
		memcpy(uuid, &a, 8);
		memcpy(uuid + 8, &b, 8);
	}
	if (fd >= 0)
		close(fd);
}

static void init_dir(struct arf_inode *d, uint32_t perm, uint64_t parent, uint64_t gen,
                     int64_t now)
{
	memset(d, 0, sizeof *d);
	d->mode = ARF_S_IFDIR | perm;
	d->nlink = 2;
	d->uid = (uint32_t)getuid();
	d->gid = (uint32_t)getgid();
	d->atime = d->mtime = d->ctime = d->btime = now;
	d->gen = gen;
	d->parent = parent;
}

int arf_mkfs(const char *path, uint64_t size, uint64_t n_inodes, char *err, size_t errlen)
{
	return arf_mkfs_features(path, size, n_inodes, ARF_FEAT_ONCE, err, errlen);
}

int arf_mkfs_features(const char *path, uint64_t size, uint64_t n_inodes, uint64_t features,
                      char *err, size_t errlen)
{
	struct arf_sb g;
	if (arf_geometry(size, n_inodes, features, &g, err, errlen) != 0)
		return -1;
	size = g.n_blocks << ARF_BLOCK_SHIFT;
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file (images are files)", path);
		goto fail_fd;
	}
	/* truncating to 0 first drops every old block: the new image is all holes */
	if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)size) != 0) {
		snprintf(err, errlen, "%s: cannot make it %" PRIu64 " bytes: %s", path, size,
		         strerror(errno));
		goto fail_fd;
	}
	uint8_t *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		snprintf(err, errlen, "%s: mmap of %" PRIu64 " bytes: %s", path, size, strerror(errno));
		goto fail_fd;
	}
	struct arf_sb *sb = (struct arf_sb *)base;
	memcpy(sb, &g, ARF_SB_GEOM_LEN);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	sb->mkfs_time = now;
	fill_uuid(sb->uuid);
	sb->geom_check = arf_geom_check(sb);
	sb->clean = 1;

	uint64_t *ibmap = (uint64_t *)(base + sb->ibmap_off);
	uint64_t *bbmap = (uint64_t *)(base + sb->bbmap_off);
	bit_set(ibmap, ARF_INO_NONE);      /* inode 0 is never used: 0 means "no inode" */
	bit_set(ibmap, ARF_INO_ROOT);
	bit_set(ibmap, ARF_INO_LOSTFOUND);
	set_tail(ibmap, sb->n_inodes, sb->ibmap_len);
	for (uint64_t b = 0; b < sb->data_off >> ARF_BLOCK_SHIFT; b++) {
		if ((b & 63) == 0 && b + 64 <= sb->data_off >> ARF_BLOCK_SHIFT) {
			bbmap[b >> 6] = ~0ull;
			b += 63;
			continue;
		}
		bit_set(bbmap, b);
	}
	set_tail(bbmap, sb->n_blocks, sb->bbmap_len);

	sb->next_gen = 1;
	struct arf_inode *root = ino_at(base, sb, ARF_INO_ROOT);
	init_dir(root, 0755, ARF_INO_ROOT, sb->next_gen++, now);
	struct arf_inode *lf = ino_at(base, sb, ARF_INO_LOSTFOUND);
	init_dir(lf, 0700, ARF_INO_ROOT, sb->next_gen++, now);
	int rc = arf_dir_add(base, sb, bbmap, ARF_INO_ROOT, "lost+found", 10, ARF_INO_LOSTFOUND,
	                     ARF_DT_DIR);
	if (rc != 0) {
		snprintf(err, errlen, "%s: adding lost+found: %s", path, strerror(-rc));
		munmap(base, size);
		goto fail_fd;
	}
	root->nlink++;                     /* lost+found's ".." */

	sb->free_inodes = count_clear(ibmap, sb->n_inodes);
	sb->free_blocks = count_clear(bbmap, sb->n_blocks);
	int saverr = 0;
	if (msync(base, size, MS_SYNC) != 0)
		saverr = errno;
	munmap(base, size);
	if (!saverr && fsync(fd) != 0)
		saverr = errno;
	if (saverr) {
		snprintf(err, errlen, "%s: writing the image: %s", path, strerror(saverr));
		goto fail_fd;
	}
	close(fd);
	return 0;
fail_fd:
	if (fd >= 0)
		close(fd);
	return -1;
}
