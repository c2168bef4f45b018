/* arf_data.h: ARF file data from a client: install arf/data.pna's segment in an arfd serving
 * an image (arfd --arf) and call its exports (write, read, truncate, setattr, fsync) through libarc.
 * docs/arf.md, "File data", describes the operations and their errors.
 *
 * A separate handle from arf_ops.h's struct arf_client (each installs its own segment); both
 * may share one struct arc.  Results are >= 0 or a negative Linux errno; a failure of the
 * transport or of the run itself (a trap) is -EIO with the details in arf_data_errmsg.
 */
#ifndef ARF_DATA_H
#define ARF_DATA_H

#include <stddef.h>
#include <stdint.h>

struct arc;
struct arf_data;

/* Largest request: I/O is split into runs of at most this many bytes. */
#define ARF_DATA_CHUNK (4u << 20)

/* Load the data segment (seg_path; NULL: $ARF_DATA_SEG, else build/arfseg/data.pno) and
 * install it once.  NULL with a message. */
struct arf_data *arf_data_open(struct arc *a, const char *seg_path, char *err, size_t errlen);
void arf_data_close(struct arf_data *d);
const char *arf_data_errmsg(struct arf_data *d);

/* Write len bytes at off of regular file ino: the bytes written (len, or fewer when the
 * image filled up part way), or -errno (-ENOSPC when nothing fit, -EFBIG past 16 TiB,
 * -EISDIR, -EINVAL, -ENOENT). */
int64_t arf_write(struct arf_data *d, uint64_t ino, uint64_t off, const void *buf, size_t len);
/* Read up to len bytes at off: the count (short only at EOF), or -errno.  Holes are zeros. */
int64_t arf_read(struct arf_data *d, uint64_t ino, uint64_t off, void *buf, size_t len);
/* Set the size: shrinking frees the blocks past it, growing leaves a hole. */
int arf_truncate(struct arf_data *d, uint64_t ino, uint64_t size);

/* Make the inode durable with what its contents depend on (a file's data and extent blocks,
 * a directory's table and blocks, a symlink's target): 0 once the server's msync returned,
 * or -errno.  Any inode type. */
int arf_fsync(struct arf_data *d, uint64_t ino);

/* The same with the generation the caller saw when it opened the file (getattr's gen): a
 * file that was deleted and whose inode number was reused since, by this or another
 * client, is -ESTALE instead of someone else's file.  gen 0 checks nothing (the forms
 * above). */
int64_t arf_write_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                      const void *buf, size_t len);
int64_t arf_read_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, void *buf,
                     size_t len);
int arf_truncate_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t size);
int arf_fsync_gen(struct arf_data *d, uint64_t ino, uint64_t gen);

/* setattr's valid bits (the fields to change); ctime becomes now whenever any is set. */
enum {
	ARF_SET_MODE = 1,          /* permission bits 07777 (the type is kept) */
	ARF_SET_UID = 2,
	ARF_SET_GID = 4,
	ARF_SET_ATIME = 8,         /* to atime */
	ARF_SET_MTIME = 16,        /* to mtime */
	ARF_SET_ATIME_NOW = 32,    /* to the server's clock */
	ARF_SET_MTIME_NOW = 64,
};
struct arf_setattr {
	unsigned valid;
	uint32_t mode, uid, gid;
	int64_t atime, mtime;      /* ns since the epoch */
};
/* Any inode type. */
int arf_setattr(struct arf_data *d, uint64_t ino, const struct arf_setattr *sa);

#endif
