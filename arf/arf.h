/* arf.h: libarf, the ARF filesystem's image layer: open and validate an image, create one
 * (mkfs), check and repair one (fsck), attach one to a server (journal roll-back, allocation
 * maps).  layout.h is the layout.
 *
 * Library code never prints: messages go to the caller's buffer or report callback.
 * Nothing here is thread-safe on one image; arfd attaches before it serves.
 */
#ifndef ARF_H
#define ARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* ---- superblock and geometry (image.c) ---- */

/* Check the superblock at base against an image of len bytes: magic, version, block size,
 * geometry check value, every area aligned, inside the image, in order and of the length its
 * counts imply.  0, or -1 with the first problem in err ("superblock: ..."). */
int arf_sb_check(const void *base, uint64_t len, char *err, size_t errlen);

/* Fill the geometry part of *sb for an image of size bytes (rounded down to whole blocks) and
 * n_inodes inodes (0: one per ARF_BYTES_PER_INODE), with features (ARF_FEAT_ONCE: the keyed
 * results' own table after the journal; 0: the layout of images made before it).  0, or -1
 * with a message. */
int arf_geometry(uint64_t size, uint64_t n_inodes, uint64_t features, struct arf_sb *sb,
                 char *err, size_t errlen);
uint64_t arf_geom_check(const struct arf_sb *sb);

/* An image mapped in memory. */
struct arf_image {
	uint8_t *base;
	uint64_t len;
	int fd;
	bool writable;             /* stores allowed */
	bool shared;               /* stores reach the file */
	struct arf_sb *sb;
};
enum arf_open_mode {
	ARF_OPEN_RO,               /* read-only */
	ARF_OPEN_PRIVATE,          /* writable copy-on-write: fsck's private view */
	ARF_OPEN_RW,               /* MAP_SHARED, writable */
};
/* Open and map path, then arf_sb_check it: a corrupt image is unmapped again and refused.
 * 0, or -1 with "PATH: ..." in err. */
int arf_image_open(const char *path, enum arf_open_mode mode, struct arf_image *img, char *err,
                   size_t errlen);
/* msync (shared writable images) and unmap.  0, or -1 with a message when msync failed. */
int arf_image_close(struct arf_image *img, char *err, size_t errlen);

/* ---- server side (attach.c) ---- */

/* Undo the operations the journal shows in progress (an arfd that died mid-operation):
 * restore each slot's saved bytes, newest first, and free the slot.  Returns the number of
 * operations rolled back, or -1 with a message when a slot is malformed (nothing is changed
 * then). */
int arf_journal_rollback(void *base, uint64_t len, char *err, size_t errlen);

struct arf_attach_info {
	bool was_clean;            /* detached cleanly last time */
	unsigned rolled_back;      /* interrupted operations undone */
	uint64_t map_fixes;        /* allocation-map bits and counters recomputed */
	uint64_t epoch;            /* the new epoch */
};
/* Make a mapped image ready to serve: check the superblock; after an unclean stop roll the
 * journal back and check the whole tree, recomputing the allocation maps and free counters
 * (derived state, see docs/arf.md), refusing an image whose tree has problems; then bump the
 * epoch (stale locks and journal owners die with it) and mark it attached (not clean).
 * 0, or -1 with a message naming the first problem. */
int arf_attach(void *base, uint64_t len, struct arf_attach_info *info, char *err, size_t errlen);
/* The server stopped with no operation running: mark the image clean. */
void arf_detach(void *base, uint64_t len);

/* ---- mkfs (mkfs.c) ---- */

/* Create (or overwrite) path as a sparse image of size bytes with n_inodes inodes (0: the
 * default): superblock, empty journal, bitmaps, a root directory holding lost+found.
 * 0, or -1 with a message. */
int arf_mkfs(const char *path, uint64_t size, uint64_t n_inodes, char *err, size_t errlen);
/* The same with the given features (arf_geometry); arf_mkfs makes ARF_FEAT_ONCE images.
 * (Features 0 makes the layout of older images, for the tests that they still work.) */
int arf_mkfs_features(const char *path, uint64_t size, uint64_t n_inodes, uint64_t features,
                      char *err, size_t errlen);

/* ---- fsck (fsck.c) ---- */

enum arf_fsck_status {         /* exit codes, as e2fsck's */
	ARF_FSCK_CLEAN = 0,
	ARF_FSCK_REPAIRED = 1,
	ARF_FSCK_PROBLEMS = 4,
	ARF_FSCK_ERROR = 8,        /* could not check: cannot open, superblock unusable */
};
enum arf_fsck_line {
	ARF_FSCK_PROBLEM,          /* "inode 12: link count 1, should be 2" */
	ARF_FSCK_ACTION,           /* "  repaired: corrected the link count" (after its problem) */
	ARF_FSCK_NOTE,             /* neither: journal roll-back, unclean stop, summaries */
};
struct arf_fsck_opts {
	bool repair;
	/* one line per problem, action or note; NULL: silent */
	void (*report)(void *user, enum arf_fsck_line kind, const char *line);
	void *user;
};
struct arf_fsck_result {
	uint64_t problems;         /* found */
	uint64_t repaired;         /* of those, fixed (with maps_only: map bits and counters) */
	uint64_t inodes_used, blocks_used;
};
/* Check (and with repair, fix) the image at path.  Without repair the image is mapped
 * copy-on-write, so the file is never written.  Returns an enum arf_fsck_status. */
int arf_fsck(const char *path, const struct arf_fsck_opts *o, struct arf_fsck_result *res);

/* The same on a mapped, writable image (arfd's attach uses it with maps_only: repair only
 * the allocation maps and counters, report tree problems). */
int arf_fsck_mem(void *base, uint64_t len, const struct arf_fsck_opts *o, bool maps_only,
                 struct arf_fsck_result *res);

#endif
