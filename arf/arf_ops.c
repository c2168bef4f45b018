/* arf_ops.c: client calls of the ARF operations (arf/ops.c) through libarc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf_ops.h"
#include "arf_seg.h"
#include "isa.h"
#include "layout.h"

struct arf_client {
	struct arf_seg s;              /* ops.pno */
	uint32_t id;                   /* random, not 0: the high half of every key */
	uint32_t seq;                  /* the last sequence number handed out (atomic) */
	bool rm_attr;                  /* the segment exports unlinkattr and rmdirattr (an
	                                * older ops.pno does not: plain unlink and rmdir) */
	bool mk_attrs;                 /* it exports mkdirattrs, mknodattrs, symlinkattrs and
	                                * linkattrs (an older one: the *attr forms, no parent) */
};

/* A fresh key for one state-changing request: client << 32 | sequence number (docs/arf.md,
 * "Exactly once across a restart").  The request's bytes carry it, so libarc's resend
 * after a reconnect, and arf_seg_run's EAGAIN retries, repeat it unchanged. */
static int64_t key(struct arf_client *c)
{
	uint32_t n = __atomic_add_fetch(&c->seq, 1, __ATOMIC_RELAXED);
	return (int64_t)((uint64_t)c->id << 32 | n);
}

uint64_t arf_client_key(struct arf_client *c)
{
	return (uint64_t)key(c);
}

struct arf_client *arf_client_open(struct arc *a, const char *seg_path, char *err,
                                   size_t errlen)
{
	struct arf_client *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (arf_seg_open(&c->s, a, seg_path, "ARF_OPS_SEG", "build/arfseg/ops.pno", err,
	                 errlen) != 0) {
		free(c);
		return NULL;
	}
	c->id = arf_key_id();
	static const char *const rm[] = { "unlinkattr", "rmdirattr", NULL };
	static const char *const mk[] = { "mkdirattrs", "mknodattrs", "symlinkattrs", "linkattrs",
	                                  NULL };
	c->rm_attr = arf_seg_exports(&c->s, rm);
	c->mk_attrs = arf_seg_exports(&c->s, mk);
	return c;
}

uint32_t arf_key_id(void)
{
	uint32_t id = 0;
	while (id == 0) {
		/* an id unlike any other client's: a key must never match another's record */
		if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			id = (uint32_t)(ts.tv_nsec ^ ts.tv_sec * 2654435761u ^ (uint32_t)getpid() << 16);
		}
	}
	return id;
}

void arf_client_close(struct arf_client *c)
{
	if (!c)
		return;
	arf_seg_close(&c->s);
	free(c);
}

const char *arf_client_errmsg(struct arf_client *c)
{
	return c->s.msg;
}

static int64_t run(struct arf_client *c, struct arc_exec *x, const char *entry,
                   const int64_t *args, unsigned n, const void *bytes, size_t len)
{
	return arf_seg_run(&c->s, x, entry, args, n, bytes, len);
}

static int64_t simple(struct arf_client *c, const char *entry, const int64_t *args,
                      unsigned n, const char *bytes)
{
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, entry, args, n, bytes, bytes ? strlen(bytes) : 0);
	free(x.out);
	return v;
}

int64_t arf_lookup(struct arf_client *c, uint64_t start, const char *path)
{
	int64_t a[1] = { (int64_t)start };
	return simple(c, "lookup", a, 1, path);
}

static void attr_from(const uint8_t *p, struct arf_attr *at);

const struct arf_seg *arf_client_seg(const struct arf_client *c)
{
	return &c->s;
}

void arf_attr_decode(const void *p, struct arf_attr *at)
{
	attr_from(p, at);
}

/* getattr's 15 u64 at p into at (the last two: the layout record's four u32). */
static void attr_from(const uint8_t *p, struct arf_attr *at)
{
	uint64_t f[13];
	memcpy(f, p, sizeof f);
	*at = (struct arf_attr){
		.mode = (uint32_t)f[0], .nlink = (uint32_t)f[1], .uid = (uint32_t)f[2],
		.gid = (uint32_t)f[3], .size = f[4], .nblocks = f[5],
		.atime = (int64_t)f[6], .mtime = (int64_t)f[7], .ctime = (int64_t)f[8],
		.btime = (int64_t)f[9], .gen = f[10], .parent = f[11], .rdev = f[12],
		.no_xattrs = (f[0] >> ARF_GA_NOXATTR_BIT) & 1,
	};
	memcpy(at->layout, p + sizeof f, sizeof at->layout);   /* little-endian, as the host's */
}

#define ATTR_BYTES ARF_ATTR_BYTES
_Static_assert(ATTR_BYTES == 13 * 8 + ARF_L_SIZE, "getattr's fields, then the layout record");

/* Run an operation that answers as getattr does (getattr itself, and the *attr forms):
 * the value, with at filled when it is >= 0. */
static int64_t run_attr(struct arf_client *c, const char *entry, const int64_t *args,
                        unsigned n, const void *bytes, size_t len, struct arf_attr *at)
{
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, entry, args, n, bytes, len);
	if (v >= 0) {
		if (x.out_len != ATTR_BYTES) {
			snprintf(c->s.msg, sizeof c->s.msg, "%s: %llu bytes of output, not %d", entry,
			         (unsigned long long)x.out_len, ATTR_BYTES);
			v = -EIO;
		} else {
			attr_from(x.out, at);
		}
	}
	free(x.out);
	return v;
}

/* run_attr for the entries that make a name (mkdirattrs, ...): the new inode's attributes,
 * then dir's after the change (*dirat; mode 0 when the output has none: the directory went
 * meanwhile).  Any other length of output is the server's error: -EIO. */
static int64_t run_attrs(struct arf_client *c, const char *entry, const int64_t *args,
                         unsigned n, const void *bytes, size_t len, struct arf_attr *at,
                         struct arf_attr *dirat)
{
	struct arc_exec x = { 0 };
	dirat->mode = 0;
	int64_t v = run(c, &x, entry, args, n, bytes, len);
	if (v >= 0) {
		if (x.out_len != ATTR_BYTES && x.out_len != 2 * ATTR_BYTES) {
			snprintf(c->s.msg, sizeof c->s.msg, "%s: %llu bytes of output, not %d or %d",
			         entry, (unsigned long long)x.out_len, ATTR_BYTES, 2 * ATTR_BYTES);
			v = -EIO;
		} else {
			attr_from(x.out, at);
			if (x.out_len == 2 * ATTR_BYTES)
				attr_from(x.out + ATTR_BYTES, dirat);
		}
	}
	free(x.out);
	return v;
}

int arf_getattr(struct arf_client *c, uint64_t ino, struct arf_attr *at)
{
	int64_t a[1] = { (int64_t)ino };
	int64_t v = run_attr(c, "getattr", a, 1, NULL, 0, at);
	return v < 0 ? (int)v : 0;
}

int arf_setlayout(struct arf_client *c, uint64_t ino, uint32_t unit, uint32_t count,
                  uint32_t first)
{
	int64_t a[3] = { (int64_t)ino, unit, (int64_t)count << 32 | first };
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, "setlayout", a, 3, NULL, 0);
	free(x.out);
	return (int)v;
}

int arf_getattrs(struct arf_client *c, const uint64_t *ino, unsigned n, struct arf_attr *at,
                 int *err)
{
	if (n == 0 || n > ARF_GETATTRS_MAX)
		return -EINVAL;
	int64_t a[1] = { n };
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, "getattrs", a, 1, ino, n * sizeof *ino);
	if (v >= 0) {
		const uint8_t *p = x.out, *end = p + x.out_len;
		for (unsigned i = 0; i < n && v >= 0; i++) {
			int64_t r;
			if (end - p < 8) {
				v = -EIO;
				break;
			}
			memcpy(&r, p, 8);
			p += 8;
			err[i] = r < 0 ? (int)-r : 0;
			if (r >= 0) {
				if (end - p < ATTR_BYTES || (uint64_t)r != ino[i]) {
					v = -EIO;
					break;
				}
				attr_from(p, &at[i]);
				p += ATTR_BYTES;
			}
		}
		if (v >= 0 && p != end)
			v = -EIO;
		if (v == -EIO)
			snprintf(c->s.msg, sizeof c->s.msg, "getattrs: malformed output");
	}
	free(x.out);
	return v < 0 ? (int)v : 0;
}

int64_t arf_lookup_attr(struct arf_client *c, uint64_t start, const char *path,
                        struct arf_attr *at)
{
	int64_t a[1] = { (int64_t)start };
	return run_attr(c, "lookupattr", a, 1, path, strlen(path), at);
}

int64_t arf_mkdir_attr(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                       uint32_t uid, uint32_t gid, struct arf_attr *at)
{
	int64_t a[5] = { (int64_t)dir, mode, uid, gid, key(c) };
	return run_attr(c, "mkdirattr", a, 5, name, strlen(name), at);
}

int64_t arf_mknod_attr(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                       uint64_t rdev, uint32_t uid, uint32_t gid, struct arf_attr *at)
{
	int64_t a[6] = { (int64_t)dir, mode, uid, gid, (int64_t)rdev, key(c) };
	return run_attr(c, "mknodattr", a, 6, name, strlen(name), at);
}

int64_t arf_link_attr(struct arf_client *c, uint64_t ino, uint64_t newdir, const char *newname,
                      struct arf_attr *at)
{
	int64_t a[3] = { (int64_t)ino, (int64_t)newdir, key(c) };
	return run_attr(c, "linkattr", a, 3, newname, strlen(newname), at);
}

int64_t arf_mkdir_attrs(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                        uint32_t uid, uint32_t gid, struct arf_attr *at, struct arf_attr *dirat)
{
	dirat->mode = 0;
	if (!c->mk_attrs)
		return arf_mkdir_attr(c, dir, name, mode, uid, gid, at);
	int64_t a[5] = { (int64_t)dir, mode, uid, gid, key(c) };
	return run_attrs(c, "mkdirattrs", a, 5, name, strlen(name), at, dirat);
}

int64_t arf_mknod_attrs(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                        uint64_t rdev, uint32_t uid, uint32_t gid, struct arf_attr *at,
                        struct arf_attr *dirat)
{
	dirat->mode = 0;
	if (!c->mk_attrs)
		return arf_mknod_attr(c, dir, name, mode, rdev, uid, gid, at);
	int64_t a[6] = { (int64_t)dir, mode, uid, gid, (int64_t)rdev, key(c) };
	return run_attrs(c, "mknodattrs", a, 6, name, strlen(name), at, dirat);
}

int64_t arf_link_attrs(struct arf_client *c, uint64_t ino, uint64_t newdir,
                       const char *newname, struct arf_attr *at, struct arf_attr *dirat)
{
	dirat->mode = 0;
	if (!c->mk_attrs)
		return arf_link_attr(c, ino, newdir, newname, at);
	int64_t a[3] = { (int64_t)ino, (int64_t)newdir, key(c) };
	return run_attrs(c, "linkattrs", a, 3, newname, strlen(newname), at, dirat);
}

static int64_t make(struct arf_client *c, const char *entry, uint64_t dir, const char *name,
                    uint32_t mode, uint32_t uid, uint32_t gid)
{
	if (strcmp(entry, "mknod") == 0) {
		int64_t a[6] = { (int64_t)dir, mode, uid, gid, 0, key(c) };   /* rdev: none */
		return simple(c, entry, a, 6, name);
	}
	int64_t a[5] = { (int64_t)dir, mode, uid, gid, key(c) };
	return simple(c, entry, a, 5, name);
}

int64_t arf_mkdir(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                  uint32_t uid, uint32_t gid)
{
	return make(c, "mkdir", dir, name, mode, uid, gid);
}

int64_t arf_mknod(struct arf_client *c, uint64_t dir, const char *name, uint32_t mode,
                  uint32_t uid, uint32_t gid)
{
	return make(c, "mknod", dir, name, mode, uid, gid);
}

int64_t arf_create(struct arf_client *c, uint64_t dir, const char *name, uint32_t perm,
                   uint32_t uid, uint32_t gid)
{
	return make(c, "mknod", dir, name, ARF_S_IFREG | (perm & 07777), uid, gid);
}

/* readdir and readdirplus: the same entries; plus: then ATTR_BYTES per entry into attrs. */
static int read_dir(struct arf_client *c, const char *entry, uint64_t dir, uint64_t *cookie,
                    struct arf_dirent *ents, struct arf_attr *attrs, unsigned max)
{
	int64_t a[3] = { (int64_t)dir, (int64_t)*cookie, max };
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, entry, a, 3, NULL, 0);
	if (v < 0)
		goto out;
	/* the reply is the server's: parse it as carefully as any input */
	const uint8_t *p = x.out, *end = p + x.out_len;
	if (x.out_len < 8 || (uint64_t)v > max)
		goto bad;
	memcpy(cookie, p, 8);
	p += 8;
	for (int64_t k = 0; k < v; k++) {
		struct arf_dirent *e = &ents[k];
		if (end - p < 18)
			goto bad;
		memcpy(&e->ino, p, 8);
		memcpy(&e->cookie, p + 8, 8);
		e->type = p[16];
		e->name_len = p[17];
		p += 18;
		if ((size_t)(end - p) < e->name_len)
			goto bad;
		memcpy(e->name, p, e->name_len);
		e->name[e->name_len] = '\0';
		p += e->name_len;
	}
	if (attrs) {
		if ((uint64_t)(end - p) != (uint64_t)v * ATTR_BYTES)
			goto bad;
		for (int64_t k = 0; k < v; k++, p += ATTR_BYTES)
			attr_from(p, &attrs[k]);
	}
	if (p != end)
		goto bad;
out:
	free(x.out);
	return (int)v;
bad:
	snprintf(c->s.msg, sizeof c->s.msg, "%s: malformed reply (%llu bytes, %lld entries)", entry,
	         (unsigned long long)x.out_len, (long long)v);
	free(x.out);
	return -EIO;
}

int arf_readdir(struct arf_client *c, uint64_t dir, uint64_t *cookie, struct arf_dirent *ents,
                unsigned max)
{
	return read_dir(c, "readdir", dir, cookie, ents, NULL, max);
}

int arf_readdirplus(struct arf_client *c, uint64_t dir, uint64_t *cookie,
                    struct arf_dirent *ents, struct arf_attr *attrs, unsigned max)
{
	return read_dir(c, "readdirplus", dir, cookie, ents, attrs, max);
}

_Static_assert(ARF_WALK_STACK == ARF_WALK_FRAMES, "ops.c's walk and arf_walk agree");

void arf_walk_begin(struct arf_walk *w, uint64_t dir)
{
	w->frame[0][0] = dir;
	w->frame[0][1] = 0;
	w->nf = 1;
}

int arf_walk_next(struct arf_client *c, struct arf_walk *w, struct arf_walk_entry *ents,
                  unsigned max, unsigned soft)
{
	if (w->nf == 0)
		return 0;
	if (w->nf > ARF_WALK_FRAMES || max < 1 || max > 65536 || soft < ARF_WALK_HDR + 512)
		return -EINVAL;
	int64_t a[3] = { w->nf, max, soft };
	struct arc_exec x = { .out_max = (uint64_t)soft + ARF_WALK_HDR + 11 + ARF_NAME_MAX };
	int64_t v = run(c, &x, "walk", a, 3, w->frame, (size_t)w->nf * sizeof w->frame[0]);
	if (v < 0)
		goto out;
	/* the reply is the server's: parse it as carefully as any input */
	const uint8_t *p = x.out, *end = p + x.out_len;
	uint64_t left;
	if (x.out_len < ARF_WALK_HDR || (uint64_t)v > max)
		goto bad;
	memcpy(&left, p, 8);
	if (left > ARF_WALK_FRAMES)
		goto bad;
	unsigned cur = w->nf - 1;      /* the deepest depth the next entry may have */
	p += ARF_WALK_HDR;
	for (int64_t k = 0; k < v; k++) {
		struct arf_walk_entry *e = &ents[k];
		if (end - p < 11)
			goto bad;
		memcpy(&e->ino, p, 8);
		unsigned type = p[8];
		e->depth = p[9];
		e->name_len = p[10];
		p += 11;
		if (e->depth > cur || (size_t)(end - p) < e->name_len)
			goto bad;
		memcpy(e->name, p, e->name_len);
		e->name[e->name_len] = '\0';
		p += e->name_len;
		e->err = 0;
		e->deep = 0;
		e->type = type;
		cur = e->depth;
		if (type == ARF_WALK_ERR) {
			if (e->name_len != 0 || e->ino == 0 || e->ino > 4095)
				goto bad;
			e->err = (int)e->ino;
			e->type = 0;
			continue;
		}
		if (e->name_len == 0)
			goto bad;
		if (type == (ARF_DT_DIR | ARF_WALK_DEEP)) {
			if (k != v - 1 || left == 0)
				goto bad;          /* a deep directory ends its batch */
			e->deep = 1;
			e->type = ARF_DT_DIR;
		} else if (type == ARF_DT_DIR && cur + 1 < ARF_WALK_FRAMES) {
			cur++;
		}
	}
	if (p != end || left > (uint64_t)cur + 1 || (v == 0 && left != 0))
		goto bad;
	memcpy(w->frame, x.out + 8, (size_t)left * sizeof w->frame[0]);
	w->nf = (unsigned)left;
out:
	free(x.out);
	return (int)v;
bad:
	snprintf(c->s.msg, sizeof c->s.msg, "walk: malformed reply (%llu bytes, %lld entries)",
	         (unsigned long long)x.out_len, (long long)v);
	free(x.out);
	return -EIO;
}

void arf_walk_prune(struct arf_walk *w, unsigned depth)
{
	if (depth >= 1 && w->nf > depth)
		w->nf = depth;
}

int arf_unlink(struct arf_client *c, uint64_t dir, const char *name)
{
	int64_t a[2] = { (int64_t)dir, key(c) };
	return (int)simple(c, "unlink", a, 2, name);
}

int arf_rmdir(struct arf_client *c, uint64_t dir, const char *name)
{
	int64_t a[2] = { (int64_t)dir, key(c) };
	return (int)simple(c, "rmdir", a, 2, name);
}

int arf_remove_attr(struct arf_client *c, uint64_t dir, const char *name, bool is_dir,
                    struct arf_attr *dirat)
{
	dirat->mode = 0;
	if (!c->rm_attr)
		return is_dir ? arf_rmdir(c, dir, name) : arf_unlink(c, dir, name);
	int64_t a[2] = { (int64_t)dir, key(c) };
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, is_dir ? "rmdirattr" : "unlinkattr", a, 2, name, strlen(name));
	if (v >= 0 && x.out_len == ATTR_BYTES)
		attr_from(x.out, dirat);
	free(x.out);
	return (int)v;
}

/* Run entry with args and the bytes a then b (the two names, or a name and a target). */
static int64_t two(struct arf_client *c, const char *entry, const int64_t *args, unsigned n,
                   const char *a, size_t alen, const char *b, size_t blen)
{
	char *buf = malloc(alen + blen + 1);
	if (!buf) {
		snprintf(c->s.msg, sizeof c->s.msg, "%s: out of memory", entry);
		return -ENOMEM;
	}
	memcpy(buf, a, alen);
	memcpy(buf + alen, b, blen);
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, entry, args, n, buf, alen + blen);
	free(x.out);
	free(buf);
	return v;
}

int64_t arf_symlink(struct arf_client *c, uint64_t dir, const char *name, const char *target,
                    uint32_t uid, uint32_t gid)
{
	size_t nlen = strlen(name), tlen = strlen(target);
	if (tlen > ARF_SYMLINK_MAX)        /* the segment says so too; spare the bytes */
		return -ENAMETOOLONG;
	int64_t a[5] = { (int64_t)dir, (int64_t)nlen, uid, gid, key(c) };
	return two(c, "symlink", a, 5, name, nlen, target, tlen);
}

int64_t arf_symlink_attr(struct arf_client *c, uint64_t dir, const char *name,
                         const char *target, uint32_t uid, uint32_t gid, struct arf_attr *at)
{
	size_t nlen = strlen(name), tlen = strlen(target);
	if (tlen > ARF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	char *buf = malloc(nlen + tlen + 1);
	if (!buf) {
		snprintf(c->s.msg, sizeof c->s.msg, "symlinkattr: out of memory");
		return -ENOMEM;
	}
	memcpy(buf, name, nlen);
	memcpy(buf + nlen, target, tlen);
	int64_t a[5] = { (int64_t)dir, (int64_t)nlen, uid, gid, key(c) };
	int64_t v = run_attr(c, "symlinkattr", a, 5, buf, nlen + tlen, at);
	free(buf);
	return v;
}

int64_t arf_symlink_attrs(struct arf_client *c, uint64_t dir, const char *name,
                          const char *target, uint32_t uid, uint32_t gid, struct arf_attr *at,
                          struct arf_attr *dirat)
{
	dirat->mode = 0;
	if (!c->mk_attrs)
		return arf_symlink_attr(c, dir, name, target, uid, gid, at);
	size_t nlen = strlen(name), tlen = strlen(target);
	if (tlen > ARF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	char *buf = malloc(nlen + tlen + 1);
	if (!buf) {
		snprintf(c->s.msg, sizeof c->s.msg, "symlinkattrs: out of memory");
		return -ENOMEM;
	}
	memcpy(buf, name, nlen);
	memcpy(buf + nlen, target, tlen);
	int64_t a[5] = { (int64_t)dir, (int64_t)nlen, uid, gid, key(c) };
	int64_t v = run_attrs(c, "symlinkattrs", a, 5, buf, nlen + tlen, at, dirat);
	free(buf);
	return v;
}

int arf_readlink(struct arf_client *c, uint64_t ino, char *buf, size_t len)
{
	int64_t a[1] = { (int64_t)ino };
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, "readlink", a, 1, NULL, 0);
	if (v >= 0) {
		if ((uint64_t)v != x.out_len || v > ARF_SYMLINK_MAX) {
			snprintf(c->s.msg, sizeof c->s.msg, "readlink: %llu bytes of output for a target "
			         "of %lld", (unsigned long long)x.out_len, (long long)v);
			v = -EIO;
		} else {
			if ((size_t)v > len)
				v = (int64_t)len;
			memcpy(buf, x.out, (size_t)v);
		}
	}
	free(x.out);
	return (int)v;
}

int arf_link(struct arf_client *c, uint64_t ino, uint64_t newdir, const char *newname)
{
	int64_t a[3] = { (int64_t)ino, (int64_t)newdir, key(c) };
	return (int)simple(c, "link", a, 3, newname);
}

int arf_rename(struct arf_client *c, uint64_t olddir, const char *oldname, uint64_t newdir,
               const char *newname, unsigned flags)
{
	size_t olen = strlen(oldname);
	int64_t a[5] = { (int64_t)olddir, (int64_t)newdir, (int64_t)olen, flags, key(c) };
	return (int)two(c, "rename", a, 5, oldname, olen, newname, strlen(newname));
}

/* ---- extended attributes ---- */

/* Linux's limits of a name, checked here as the VFS does before a request leaves. */
static int xattr_name_ok(const char *name, size_t *nlen)
{
	*nlen = strlen(name);
	return *nlen != 0 && *nlen <= ARF_XATTR_NAME_MAX;
}

#define XATTR_SIZE_LIMIT 65536     /* Linux's XATTR_SIZE_MAX: larger values are E2BIG */

int arf_setxattr(struct arf_client *c, uint64_t ino, const char *name, const void *value,
                 size_t len, unsigned flags)
{
	return arf_setxattr_mode(c, ino, name, value, len, flags, -1);
}

int arf_setxattr_mode(struct arf_client *c, uint64_t ino, const char *name, const void *value,
                      size_t len, unsigned flags, int perm)
{
	size_t nlen;
	if (!xattr_name_ok(name, &nlen))
		return -ERANGE;
	if (len > XATTR_SIZE_LIMIT)
		return -E2BIG;
	if (len > ARF_XATTR_VALUE_MAX)     /* the segment says so too; spare the bytes */
		return -ENOSPC;
	int64_t a[5] = { (int64_t)ino, (int64_t)nlen, flags,
	                 perm < 0 ? 0 : ARF_XATTR_SETMODE | (perm & 0777), key(c) };
	return (int)two(c, "setxattr", a, 5, name, nlen, (const char *)value, len);
}

/* Run a read export (getxattr, listxattr) whose output must be exactly its result's bytes
 * when size > 0, and copy them into buf. */
static int64_t xread(struct arf_client *c, const char *entry, const int64_t *a, unsigned n,
                     const char *bytes, size_t blen, void *buf, size_t size, size_t max)
{
	struct arc_exec x = { 0 };
	int64_t v = run(c, &x, entry, a, n, bytes, blen);
	if (v >= 0) {
		size_t want = size ? (size_t)v : 0;
		if ((uint64_t)v > max || x.out_len != want || (size && (size_t)v > size)) {
			snprintf(c->s.msg, sizeof c->s.msg, "%s: %llu bytes of output for a result of "
			         "%lld", entry, (unsigned long long)x.out_len, (long long)v);
			v = -EIO;
		} else if (want) {
			memcpy(buf, x.out, want);
		}
	}
	free(x.out);
	return v;
}

int64_t arf_getxattr(struct arf_client *c, uint64_t ino, const char *name, void *buf,
                     size_t size)
{
	size_t nlen;
	if (!xattr_name_ok(name, &nlen))
		return -ERANGE;
	int64_t a[2] = { (int64_t)ino, (int64_t)size };
	return xread(c, "getxattr", a, 2, name, nlen, buf, size, ARF_XATTR_VALUE_MAX);
}

int64_t arf_listxattr(struct arf_client *c, uint64_t ino, char *buf, size_t size)
{
	int64_t a[2] = { (int64_t)ino, (int64_t)size };
	return xread(c, "listxattr", a, 2, NULL, 0, buf, size, ARF_XATTR_LIST_MAX);
}

int arf_removexattr(struct arf_client *c, uint64_t ino, const char *name)
{
	return arf_removexattr_mode(c, ino, name, -1);
}

int arf_removexattr_mode(struct arf_client *c, uint64_t ino, const char *name, int perm)
{
	size_t nlen;
	if (!xattr_name_ok(name, &nlen))
		return -ERANGE;
	int64_t a[3] = { (int64_t)ino, perm < 0 ? 0 : ARF_XATTR_SETMODE | (perm & 0777), key(c) };
	return (int)simple(c, "removexattr", a, 3, name);
}
