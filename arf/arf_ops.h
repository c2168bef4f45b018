/* arf_ops.h: the ARF namespace operations from a client: install arf/ops.c's segment in an
 * arfd serving an image (arfd --arf) and call its exports through libarc, one round trip
 * each.  docs/arf.md, "Operations", describes what each does and its errors.
 *
 * Results are >= 0 or a negative Linux errno.  A failure of the transport or of the run
 * itself (a trap) is -EIO, with the details in arf_client_errmsg.
 */
#ifndef ARF_OPS_H
#define ARF_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arc;
struct arf_client;

/* Load the operations' segment (seg_path; NULL: $ARF_OPS_SEG, else build/arfseg/ops.pno)
 * and install it in the server once (later runs send only its id).  NULL with a message. */
struct arf_client *arf_client_open(struct arc *a, const char *seg_path, char *err,
                                   size_t errlen);
void arf_client_close(struct arf_client *c);

/* Every state-changing call below (mkdir, mknod, create, symlink, link, unlink, rmdir,
 * rename, setxattr, removexattr and their *attr forms) sends a fresh idempotency key,
 * client << 32 | sequence number, as its export's last argument: a repeat of the request
 * (libarc's resend after reconnecting to a restarted arfd) is answered with the first run's
 * result instead of being run again (docs/arf.md, "Exactly once across a restart"); the
 * record holds a hash of the request, so a key sent with another request runs it.  A
 * caller that runs those exports itself (arc_exec_many) takes a key here, or passes 0
 * (no record).  Thread-safe. */
uint64_t arf_client_key(struct arf_client *c);
/* A random 32-bit client id (getrandom; the time and pid when that fails), never 0: the high
 * half of a client's keys (arf_client_open draws one; so does arf_data_open, whose keyed
 * appends number their own sequence). */
uint32_t arf_key_id(void);
const char *arf_client_errmsg(struct arf_client *c);

/* Resolve path ("a/b/c"; '/' runs separate components) from directory start (1 = root):
 * the inode number.  Symlinks are not followed (-ELOOP in the middle, returned at the end). */
int64_t arf_lookup(struct arf_client *c, uint64_t start, const char *path);

struct arf_attr {
	uint32_t mode, nlink, uid, gid;
	uint64_t size, nblocks;            /* nblocks: 4 KiB blocks */
	int64_t atime, mtime, ctime, btime; /* ns since the epoch */
	uint64_t gen, parent;
	uint64_t rdev;                      /* character and block devices: the device number */
	uint32_t layout[4];                 /* a cluster file's own layout record (docs/cluster.md,
	                                     * "A file's own stripe unit": unit, stripe count,
	                                     * first server, reserved), all 0 when it has none */
	bool no_xattrs;                     /* the inode had no xattr block when read (an
	                                     * ops.pno older than this field: false, unknown) */
};
int arf_getattr(struct arf_client *c, uint64_t ino, struct arf_attr *at);
/* arf_setlayout: give regular file ino a cluster layout record (unit, count, first, 0; read
 * back in arf_attr.layout): 0; -EBUSY when the file has a size or blocks, -EINVAL for
 * another type or a value out of range. */
int arf_setlayout(struct arf_client *c, uint64_t ino, uint32_t unit, uint32_t count,
                  uint32_t first);
/* getattr of n (1 .. ARF_GETATTRS_MAX) inodes in one round trip: 0 with err[i] 0 and at[i]
 * filled, or err[i] the errno of ino[i] (EINVAL, ENOENT); or -errno for the whole (-EIO
 * with arf_client_errmsg; an ops segment without the export fails so too). */
#define ARF_GETATTRS_MAX 256
int arf_getattrs(struct arf_client *c, const uint64_t *ino, unsigned n, struct arf_attr *at,
                 int *err);
/* The output of getattr and of the *attr forms: ARF_ATTR_BYTES at p into at. */
#define ARF_ATTR_BYTES (15 * 8)
void arf_attr_decode(const void *p, struct arf_attr *at);

/* The segment behind c (its bytes and id, arf_seg.h), for a caller that runs its exports
 * in a Cooperation of its own (arc_exec_many: arf/cluster.c). */
struct arf_seg;
const struct arf_seg *arf_client_seg(const struct arf_client *c);

/* A new entry name in directory dir: the new inode number. */
int64_t arf_mkdir(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                  uint32_t uid, uint32_t gid);
/* mode: S_IFREG, S_IFIFO or S_IFSOCK with the permission bits (a device needs its number:
 * arf_mknod_attr). */
int64_t arf_mknod(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                  uint32_t uid, uint32_t gid);
/* A regular file (mknod with S_IFREG). */
int64_t arf_create(struct arf_client *c, uint64_t dir, const char *name, uint32_t perm,
                   uint32_t uid, uint32_t gid);

struct arf_dirent {
	uint64_t ino;
	uint64_t cookie;                   /* pass it to continue after this entry */
	unsigned type;                     /* DT_* */
	unsigned name_len;
	char name[256];                    /* NUL-terminated */
};
/* Up to max (1..1024) entries of dir from *cookie (0: the start); *cookie becomes where the
 * next batch starts, 0 when the directory is done.  The count, or -errno.  "." and ".." are
 * not returned. */
int arf_readdir(struct arf_client *c, uint64_t dir, uint64_t *cookie, struct arf_dirent *ents,
                unsigned max);

/* As arf_readdir, and each entry's attributes (getattr's) in attrs[k]; an entry whose
 * inode was freed between the two has attrs[k].mode 0. */
int arf_readdirplus(struct arf_client *c, uint64_t dir, uint64_t *cookie,
                    struct arf_dirent *ents, struct arf_attr *attrs, unsigned max);

/* A depth-first walk of a whole subtree in the server, a batch of entries per round trip:
 * each directory's entries in readdir's order, a subdirectory's entries right after its
 * own (fts's order: grep -r's and find's).  The walk keeps its place in the frames, the
 * directories it is inside, outermost first. */
#define ARF_WALK_STACK 64
struct arf_walk {
	uint64_t frame[ARF_WALK_STACK][2];  /* { directory, cookie } */
	unsigned nf;                        /* frames left; 0: the walk is done */
};
struct arf_walk_entry {
	uint64_t ino;
	unsigned type;                 /* DT_* */
	unsigned depth;                /* of the directory it is in: 0 is the walk's start */
	int err;                       /* not 0: the directory at depth could not be walked
	                                * (this errno) and was left; no name */
	int deep;                      /* a directory too deep for this walk: walk it anew */
	unsigned name_len;
	char name[256];                /* NUL-terminated */
};
void arf_walk_begin(struct arf_walk *w, uint64_t dir);
/* The next batch, at most max (1..65536) entries or about soft bytes of them: the count
 * (0 only when w->nf is 0: done), or -errno.  The entries' depths are checked: each is at
 * most one more than the previous entry's when that was a directory, else at most its. */
int arf_walk_next(struct arf_client *c, struct arf_walk *w, struct arf_walk_entry *ents,
                  unsigned max, unsigned soft);
/* Leave the directory at depth (an excluded one) and what is under it: the walk goes on
 * after its entry in its parent. */
void arf_walk_prune(struct arf_walk *w, unsigned depth);

int arf_unlink(struct arf_client *c, uint64_t dir, const char *name);
int arf_rmdir(struct arf_client *c, uint64_t dir, const char *name);
/* unlink (is_dir false) or rmdir of name in dir, as those, and dir's attributes after it in
 * *dirat (mode 0 when not known: an error, dir gone meanwhile, or an ops.pno without
 * unlinkattr/rmdirattr, which then runs plain unlink/rmdir). */
int arf_remove_attr(struct arf_client *c, uint64_t dir, const char *name, bool is_dir,
                    struct arf_attr *dirat);

/* A symbolic link name in dir pointing at target (1..4095 bytes; empty: -ENOENT, longer:
 * -ENAMETOOLONG), mode S_IFLNK|0777: the new inode number. */
int64_t arf_symlink(struct arf_client *c, uint64_t dir, const char *name, const char *target,
                    uint32_t uid, uint32_t gid);
/* The target of symlink ino into buf, not NUL-terminated (as readlink(2)): the number of
 * bytes placed, at most len (a longer target is cut); -EINVAL when ino is not a symlink. */
int arf_readlink(struct arf_client *c, uint64_t ino, char *buf, size_t len);
/* A new name newname in newdir for the existing non-directory ino (nlink + 1): 0, -EPERM
 * for a directory, -EEXIST, -EMLINK, -ENOENT (ino free). */
int arf_link(struct arf_client *c, uint64_t ino, uint64_t newdir, const char *newname);

#define ARF_RENAME_NOREPLACE 1u     /* RENAME_NOREPLACE: -EEXIST when newname exists */
#define ARF_RENAME_EXCHANGE 2u      /* RENAME_EXCHANGE: swap the two names (both must exist) */
/* rename(2)/renameat2(2) of oldname in olddir to newname in newdir: flags 0 or one of the
 * above; Linux's errors (EINVAL into its own subtree, ENOTEMPTY, EISDIR, ENOTDIR, EEXIST,
 * EBUSY for "." and ".."); two names of one inode: 0, nothing done.  One atomic run. */
int arf_rename(struct arf_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
               const char *newname, unsigned flags);

/* The operations that name an inode, answering with its attributes in the same run: one
 * round trip instead of two (the mount needs both for every entry it makes or finds).
 * Results as the plain forms (arf_link_attr: ino instead of 0); at is filled when >= 0. */
int64_t arf_lookup_attr(struct arf_client *c, uint64_t start, const char *path,
                        struct arf_attr *at);
int64_t arf_mkdir_attr(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                       uint32_t uid, uint32_t gid, struct arf_attr *at);
/* mode: S_IFREG, S_IFIFO, S_IFCHR, S_IFBLK or S_IFSOCK; rdev, a device's number (dev_t as
 * Linux makes it), is kept for devices only. */
int64_t arf_mknod_attr(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                       uint64_t rdev, uint32_t uid, uint32_t gid, struct arf_attr *at);
int64_t arf_symlink_attr(struct arf_client *c, uint64_t dir, const char *name,
                         const char *target, uint32_t uid, uint32_t gid, struct arf_attr *at);
int64_t arf_link_attr(struct arf_client *c, uint64_t ino, uint64_t newdir, const char *newname,
                      struct arf_attr *at);

/* The same, and the directory the name went into (dir, newdir) as it is after the change
 * in *dirat, from the same run (mkdirattrs, ...): the kernel asks for it again after every
 * entry made in it.  dirat->mode 0 when not known: an error, the directory gone meanwhile,
 * or an ops.pno without these entries (which then runs the *attr form).  A request resent
 * under its key (a reconnect) makes nothing twice and answers the directory as it is then. */
int64_t arf_mkdir_attrs(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                        uint32_t uid, uint32_t gid, struct arf_attr *at, struct arf_attr *dirat);
int64_t arf_mknod_attrs(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                        uint64_t rdev, uint32_t uid, uint32_t gid, struct arf_attr *at,
                        struct arf_attr *dirat);
int64_t arf_symlink_attrs(struct arf_client *c, uint64_t dir, const char *name,
                          const char *target, uint32_t uid, uint32_t gid, struct arf_attr *at,
                          struct arf_attr *dirat);
int64_t arf_link_attrs(struct arf_client *c, uint64_t ino, uint64_t newdir,
                       const char *newname, struct arf_attr *at, struct arf_attr *dirat);

/* Extended attributes of inode ino (any type), kept in one block per inode (docs/arf.md,
 * "Extended attributes").  name is the full name, prefix included ("user.x"), 1..255 bytes
 * (else -ERANGE, as Linux); which prefixes a caller may use is the caller's rule (the mount
 * leaves it to the kernel), except that user.* on a type other than a regular file or a
 * directory is -EPERM, as on Linux.  -ENOENT for a free inode, -EIO for a damaged block.
 *
 * arf_setxattr: flags 0, ARF_XATTR_CREATE (-EEXIST when name exists) or ARF_XATTR_REPLACE
 * (-ENODATA when it does not); -E2BIG for a value over 64 KiB (Linux's XATTR_SIZE_MAX),
 * -ENOSPC when the inode's names and values would not fit its block (a value of at most
 * ARF_XATTR_VALUE_MAX bytes fits alone) or no block is free.  ctime becomes now.
 * arf_getxattr: the value's length, and with size > 0 the value in buf; -ERANGE when it is
 * longer than size, -ENODATA when there is no such name.
 * arf_listxattr: the bytes of every name with a NUL after each (never more than
 * ARF_XATTR_LIST_MAX), and with size > 0 the names in buf; -ERANGE when they exceed size.
 * arf_removexattr: 0, -ENODATA; ctime becomes now. */
int arf_setxattr(struct arf_client *c, uint64_t ino, const char *name, const void *value,
                 size_t len, unsigned flags);
int64_t arf_getxattr(struct arf_client *c, uint64_t ino, const char *name, void *buf,
                     size_t size);
int64_t arf_listxattr(struct arf_client *c, uint64_t ino, char *buf, size_t size);
int arf_removexattr(struct arf_client *c, uint64_t ino, const char *name);
/* The same, and with perm >= 0 the inode's 0777 bits become perm in the same change (a
 * POSIX ACL and the mode it implies, which a crash must not part). */
int arf_setxattr_mode(struct arf_client *c, uint64_t ino, const char *name, const void *value,
                      size_t len, unsigned flags, int perm);
int arf_removexattr_mode(struct arf_client *c, uint64_t ino, const char *name, int perm);

#endif
