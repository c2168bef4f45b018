/* members.c: a metadata arfd's --member list against its image's cluster description
 * (docs/cluster.md, "Delegation"), for server/server.c as arf_attach is: the description
 * read straight from the mapped image (no segment, no client), then compared server by
 * server.  forward(k) sends to member k, and deleg.c's route picks k as the description
 * numbers the data servers, so a list in another order reads another server's object
 * (which objread finds missing: zeros); this is what makes that an error instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf.h"
#include "arf_cluster.h"

/* The bytes at off .. off+n of the image, or NULL when they are not all inside it. */
static const uint8_t *at(const uint8_t *base, uint64_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off ? base + off : NULL;
}

/* The inode ino, or NULL when ino is not an inode number of this image. */
static const struct arf_inode *inode(const uint8_t *base, uint64_t len, uint64_t ino)
{
	const struct arf_sb *sb = (const void *)base;
	if (ino == 0 || ino >= sb->n_inodes || ino > (UINT64_MAX - sb->itable_off) >> ARF_INO_SHIFT)
		return NULL;
	return (const void *)at(base, len, sb->itable_off + (ino << ARF_INO_SHIFT), ARF_INO_SIZE);
}

/* Inode number of the live entry NAME of directory d: 0 when there is none, -1 when the
 * directory's table is not where it says (every offset is checked: another run may be
 * changing the root while this reads it, and a torn view must fail, not fault). */
static int64_t dir_find(const uint8_t *base, uint64_t len, const struct arf_inode *d,
                        const char *name)
{
	size_t nlen = strlen(name);
	uint64_t t = d->u.dir.table, nslots = d->u.dir.nslots, shift = d->u.dir.shift & 63;
	if (t == 0)
		return 0;
	if (t % ARF_BLOCK_SIZE || nslots == 0 || (nslots & (nslots - 1)) ||
	    nslots > len / ARF_T_SIZE || !at(base, len, t, nslots * ARF_T_SIZE))
		return -1;
	uint64_t h = arf_name_hash(name, nlen), mask = nslots - 1;
	uint64_t i = ((h * (uint64_t)ARF_HASH_MUL) >> shift) & mask;
	for (uint64_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
		const struct arf_slot *s = (const void *)(base + t + i * ARF_T_SIZE);
		if (s->rec == ARF_T_EMPTY)
			return 0;
		if (s->rec == ARF_T_TOMB || s->hash != h)
			continue;
		/* records are 8-byte aligned (their lengths are multiples of 8) */
		const struct arf_rec *r = s->rec % 8 ? NULL :
		                          (const void *)at(base, len, s->rec, ARF_R_MAX);
		if (!r)
			return -1;
		if (r->name_len == nlen && !memcmp(r->name, name, nlen))
			return r->ino == 0 ? 0 : (int64_t)(r->ino & INT64_MAX);
	}
	return 0;
}

int arf_image_cluster_desc(const void *basev, uint64_t len, struct arf_cluster_desc *desc,
                           char *err, size_t errlen)
{
	const uint8_t *base = basev;
	memset(desc, 0, sizeof *desc);
	if (len < sizeof(struct arf_sb)) {
		snprintf(err, errlen, "not an ARF image");
		return -1;
	}
	const struct arf_inode *root = inode(base, len, ARF_INO_ROOT);
	if (!root || (root->mode & ARF_S_IFMT) != ARF_S_IFDIR) {
		snprintf(err, errlen, "no root directory");
		return -1;
	}
	int64_t ino = dir_find(base, len, root, ARF_CLUSTER_FILE);
	if (ino == 0)
		return 0;                          /* a one-server image */
	const struct arf_inode *f = ino < 0 ? NULL : inode(base, len, (uint64_t)ino);
	if (!f) {
		snprintf(err, errlen, "/%s: the root directory is inconsistent (being changed?)",
		         ARF_CLUSTER_FILE);
		return -1;
	}
	if ((f->mode & ARF_S_IFMT) != ARF_S_IFREG || f->size > ARF_CLUSTER_FILE_MAX) {
		snprintf(err, errlen, "/%s: not a cluster description (%s)", ARF_CLUSTER_FILE,
		         (f->mode & ARF_S_IFMT) == ARF_S_IFREG ? "too large" : "not a regular file");
		return -1;
	}
	/* at most 16 KiB: four blocks, so its extents are the inline ones (more would be in
	 * extent blocks: refused, the description is written in one piece) */
	if (f->n_extents > ARF_I_INLINE_EXT) {
		snprintf(err, errlen, "/%s: %u extents", ARF_CLUSTER_FILE, f->n_extents);
		return -1;
	}
	char *text = calloc(1, ARF_CLUSTER_FILE_MAX);   /* holes read as zeros */
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t e = 0; e < f->n_extents; e++) {
		const struct arf_extent *x = &f->u.ext[e];
		uint64_t lo = (uint64_t)x->lblk << ARF_BLOCK_SHIFT;
		uint64_t hi = lo + ((uint64_t)x->len << ARF_BLOCK_SHIFT);
		if (lo >= f->size)
			continue;
		if (hi > f->size)
			hi = f->size;
		const uint8_t *p = x->pblk > (UINT64_MAX >> ARF_BLOCK_SHIFT) ? NULL :
		                   at(base, len, x->pblk << ARF_BLOCK_SHIFT, hi - lo);
		if (!p) {
			snprintf(err, errlen, "/%s: an extent outside the image", ARF_CLUSTER_FILE);
			free(text);
			return -1;
		}
		memcpy(text + lo, p, hi - lo);
	}
	char perr[256];
	int rc = arf_cluster_parse(text, f->size, desc, perr, sizeof perr);
	free(text);
	if (rc != 0) {
		snprintf(err, errlen, "/%s: %s", ARF_CLUSTER_FILE, perr);
		memset(desc, 0, sizeof *desc);
		return -1;
	}
	return 0;
}

struct arf_cluster_stamp arf_image_cluster_stamp(const void *basev, uint64_t len)
{
	const uint8_t *base = basev;
	if (len < sizeof(struct arf_sb))
		return (struct arf_cluster_stamp){ 0, 0 };
	const struct arf_inode *root = inode(base, len, ARF_INO_ROOT);
	int64_t ino = root && (root->mode & ARF_S_IFMT) == ARF_S_IFDIR ?
	              dir_find(base, len, root, ARF_CLUSTER_FILE) : -1;
	const struct arf_inode *f = ino > 0 ? inode(base, len, (uint64_t)ino) : NULL;
	return f ? (struct arf_cluster_stamp){ (uint64_t)ino, f->gen } :
	           (struct arf_cluster_stamp){ 0, 0 };
}

int arf_cluster_check_members(const struct arf_cluster_desc *desc, const char *const *members,
                              unsigned n, char *err, size_t errlen)
{
	unsigned both = n < desc->n ? n : desc->n;
	for (unsigned k = 0; k < both; k++)
		if (strcmp(members[k], desc->server[k])) {
			snprintf(err, errlen, "--member %u is %s but the image's cluster description "
			         "names %s as data server %u (list the data servers in the order "
			         "`arf cluster show` gives)", k, members[k], desc->server[k], k);
			return -1;
		}
	if (n < desc->n) {
		snprintf(err, errlen, "%u --member given but the image's cluster description names "
		         "%u data servers: data server %u (%s) has no --member", n, desc->n, n,
		         desc->server[n]);
		return -1;
	}
	if (n > desc->n) {
		snprintf(err, errlen, "--member %u is %s but the image's cluster description names "
		         "only %u data servers", desc->n, members[desc->n], desc->n);
		return -1;
	}
	return 0;
}
