/* arf_data.c: client calls of the ARF data operations (arf/data.c) through libarc.  On a
 * cluster's metadata image (arf_data_striped) a regular file's bytes go to its stripes on
 * the data servers instead (arf/cluster.c), and only its size and times to the image. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf_cluster.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "arf_seg.h"

struct striped;

struct arf_data {
	struct arf_seg s;              /* data.pno */
	struct striped *st;            /* a cluster's metadata image: see arf_data_striped */
	uint32_t id;                   /* random, not 0: the high half of every append's key */
	uint32_t seq;                  /* the last sequence number handed out (atomic) */
	bool set_attr;                 /* the segment exports setattrattr (an older data.pno does
	                                * not: setattr, and the attributes unknown) */
};

struct arf_data *arf_data_open(struct arc *a, const char *seg_path, char *err, size_t errlen)
{
	struct arf_data *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (arf_seg_open(&d->s, a, seg_path, "ARF_DATA_SEG", "build/arfseg/data.pno", err,
	                 errlen) != 0) {
		free(d);
		return NULL;
	}
	d->id = arf_key_id();
	static const char *const sa[] = { "setattrattr", NULL };
	d->set_attr = arf_seg_exports(&d->s, sa);
	return d;
}

static void st_free(struct striped *st);

void arf_data_close(struct arf_data *d)
{
	if (!d)
		return;
	st_free(d->st);
	arf_seg_close(&d->s);
	free(d);
}

const char *arf_data_errmsg(struct arf_data *d)
{
	return d->s.msg;
}

static int64_t run(struct arf_data *d, struct arc_exec *x, const char *entry,
                   const int64_t *args, unsigned n, const void *bytes, size_t len)
{
	return arf_seg_run(&d->s, x, entry, args, n, bytes, len);
}

/* ---- a cluster's metadata image (arf_data_striped): regular files' bytes on the data
 * servers, through arf_cl_*; the sizes, times and generations stay in the metadata inode,
 * changed in docs/cluster.md's order (data before a size grows, the size shrunk before the
 * objects are cut, objects cut to the size before a size grows over bytes no one wrote). ---- */

#define ST_FILES 64                /* files whose objects are remembered (looked up once) */
#define ST_PASS INT64_MIN          /* not a striped file: the call goes to the metadata image */
#define ST_MAX_SIZE (1ull << 44)   /* 16 TiB, the largest size of an ARF file */

struct st_file {
	uint64_t ino;                  /* 0: free */
	uint64_t gen;                  /* f's */
	struct arf_cl_file *f;         /* NULL until first used; remade when gen changed */
	pthread_mutex_t lock;          /* one call of the file at a time (arf_cl_file's rule),
	                                * which also orders a size read with the size set after */
	unsigned users;                /* between st_get and st_put */
	uint64_t used;                 /* st.clock at the last st_get: the oldest free one goes */
	bool temp;                     /* not in the table (every slot busy): freed by st_put */
	/* the metadata inode's attributes as a read last asked for them (arf_data_read_cache):
	 * valid while rat_ok, younger than the cache's time and no open since (opens) */
	bool rat_ok;
	struct arf_attr rat;
	uint64_t rat_ns;               /* when asked (CLOCK_MONOTONIC) */
	uint64_t rat_opens;            /* st.opens before asking */
};

struct striped {
	struct arf_cluster *cl;
	struct arf_client *meta;
	_Atomic uint64_t desc_ino;     /* /.arf-cluster: its bytes are in the metadata image */
	pthread_mutex_t lock;          /* over the table */
	uint64_t clock;
	uint64_t read_cache_ns;        /* arf_data_read_cache's time; 0: reads always ask */
	_Atomic uint64_t opens;        /* arf_data_opened calls */
	struct st_file file[ST_FILES];
};

int arf_data_striped(struct arf_data *d, struct arf_cluster *cl, struct arf_client *meta)
{
	struct striped *st = calloc(1, sizeof *st);
	if (!st)
		return -ENOMEM;
	int64_t di = arf_lookup(meta, 1, ARF_CLUSTER_FILE);
	st->cl = cl;
	st->meta = meta;
	st->desc_ino = di > 0 ? (uint64_t)di : 0;
	pthread_mutex_init(&st->lock, NULL);
	for (unsigned i = 0; i < ST_FILES; i++)
		pthread_mutex_init(&st->file[i].lock, NULL);
	d->st = st;
	return 0;
}

bool arf_data_is_desc(const struct arf_data *d, uint64_t ino)
{
	return d->st && ino && ino == atomic_load_explicit(&d->st->desc_ino, memory_order_relaxed);
}

void arf_data_desc_seen(struct arf_data *d, uint64_t ino)
{
	if (d->st && ino)
		atomic_store_explicit(&d->st->desc_ino, ino, memory_order_relaxed);
}

void arf_data_read_cache(struct arf_data *d, double seconds)
{
	if (d->st)
		d->st->read_cache_ns = seconds > 0 && seconds < 3600 ? (uint64_t)(seconds * 1e9) : 0;
}

void arf_data_opened(struct arf_data *d)
{
	if (d->st)
		atomic_fetch_add_explicit(&d->st->opens, 1, memory_order_seq_cst);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void st_free(struct striped *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < ST_FILES; i++) {
		arf_cl_file_close(st->file[i].f);
		pthread_mutex_destroy(&st->file[i].lock);
	}
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* The slot of ino, locked (NULL: out of memory). */
static struct st_file *st_get(struct striped *st, uint64_t ino)
{
	pthread_mutex_lock(&st->lock);
	struct st_file *sf = NULL, *victim = NULL;
	for (unsigned i = 0; i < ST_FILES && !sf; i++) {
		struct st_file *e = &st->file[i];
		if (e->ino == ino)
			sf = e;
		else if (!e->users && (!victim || !e->ino || (victim->ino && e->used < victim->used)))
			victim = e;
	}
	if (!sf && victim) {
		arf_cl_file_close(victim->f);  /* no user: no one holds it */
		victim->f = NULL;
		victim->ino = ino;
		victim->gen = 0;
		victim->rat_ok = false;
		sf = victim;
	}
	if (sf) {
		sf->users++;
		sf->used = ++st->clock;
	}
	pthread_mutex_unlock(&st->lock);
	if (!sf) {
		/* every slot in use by a call: one of its own for this call */
		sf = calloc(1, sizeof *sf);
		if (!sf)
			return NULL;
		sf->ino = ino;
		sf->temp = true;
		pthread_mutex_init(&sf->lock, NULL);
	}
	pthread_mutex_lock(&sf->lock);
	return sf;
}

static void st_put(struct striped *st, struct st_file *sf)
{
	pthread_mutex_unlock(&sf->lock);
	if (sf->temp) {
		arf_cl_file_close(sf->f);
		pthread_mutex_destroy(&sf->lock);
		free(sf);
		return;
	}
	pthread_mutex_lock(&st->lock);
	sf->users--;
	pthread_mutex_unlock(&st->lock);
}

/* A -EIO's reason into d's message. */
static int64_t st_err(struct arf_data *d, struct st_file *sf, int64_t rc)
{
	if (rc == -EIO && sf && sf->f)
		snprintf(d->s.msg, sizeof d->s.msg, "%s", arf_cl_errmsg(sf->f));
	return rc;
}

/* st_begin for a read of [off, off + len) when for_read: the size a read asked for before
 * serves while it holds (arf_data_read_cache), and what this call reads is kept for the
 * next; any other call makes the next read ask (it may change the size or times). */
static int64_t st_begin_read(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                             size_t len, struct st_file **sfp, struct arf_attr *at,
                             bool for_read)
{
	struct striped *st = d->st;
	if (ino == atomic_load_explicit(&st->desc_ino, memory_order_relaxed))
		return ST_PASS;
	struct st_file *sf = st_get(st, ino);
	if (!sf)
		return -ENOMEM;
	uint64_t opens = atomic_load_explicit(&st->opens, memory_order_seq_cst);
	uint64_t now = for_read && st->read_cache_ns ? mono_ns() : 0;
	if (now && sf->rat_ok && sf->f && sf->rat_opens == opens &&
	    now - sf->rat_ns < st->read_cache_ns && (!gen || sf->rat.gen == gen) &&
	    off < sf->rat.size && len <= sf->rat.size - off) {
		*at = sf->rat;             /* inside the size this client last read: no ask */
		*sfp = sf;
		return 0;
	}
	sf->rat_ok = false;
	int rc = arf_getattr(st->meta, ino, at);
	if (rc == -EIO)
		snprintf(d->s.msg, sizeof d->s.msg, "%s", arf_client_errmsg(st->meta));
	else if (rc < 0 && gen)
		rc = -ESTALE;                  /* the file is gone */
	else if (rc == 0 && gen && at->gen != gen)
		rc = -ESTALE;                  /* its number is another file's now */
	if (rc == 0 && !S_ISREG(at->mode)) {
		st_put(st, sf);
		return ST_PASS;
	}
	/* the file's layout, in the attributes just read: taken when it is first opened, and
	 * again while it is empty (its stripe unit may be set then, by this client or another:
	 * arf_cl_setstripe) */
	if (rc == 0 && (!sf->f || sf->gen != at->gen || at->size == 0)) {
		struct arf_cl_layout lay;
		char lerr[256];
		rc = arf_cl_layout(arf_cluster_desc_of(st->cl), ino, at->layout, &lay, lerr,
		                   sizeof lerr);
		if (rc == -EIO)
			snprintf(d->s.msg, sizeof d->s.msg, "%s", lerr);
		if (rc == 0 && (!sf->f || sf->gen != at->gen || arf_cl_file_unit(sf->f) != lay.unit)) {
			arf_cl_file_close(sf->f);
			sf->gen = at->gen;
			if (!(sf->f = arf_cl_file_open(st->cl, ino, at->gen, &lay)))
				rc = -ENOMEM;
		}
	}
	if (rc < 0) {
		st_put(st, sf);
		return rc;
	}
	if (now) {
		sf->rat = *at;
		sf->rat_ns = now;
		sf->rat_opens = opens;
		sf->rat_ok = true;
	}
	*sfp = sf;
	return 0;
}

/* Start a call on ino (gen as arf_write_gen's): the slot, locked, in *sfp and the metadata
 * inode's attributes in at; 0, ST_PASS (not a striped file: a directory, the description;
 * nothing held), or -errno (nothing held). */
static int64_t st_begin(struct arf_data *d, uint64_t ino, uint64_t gen, struct st_file **sfp,
                        struct arf_attr *at)
{
	return st_begin_read(d, ino, gen, 0, 0, sfp, at, false);
}

/* The metadata inode's size (and mtime, ctime) set, checked against gen. */
static int m_truncate(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t size)
{
	int64_t a[3] = { (int64_t)ino, (int64_t)size, (int64_t)gen };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "truncate", a, 3, NULL, 0);
	free(x.out);
	return (int)v;
}

/* An append to a striped file: the range taken first, at the end as the metadata server
 * finds it under the inode's lock (data.pno's extend, keyed as an append on one server is:
 * exactly once across a reconnect), then the bytes written there on the data servers: two
 * clients appending at once get ranges one after the other, never the same one.  The cost of
 * ordering without holding a lock across requests: readers may see the range as zeros until
 * its bytes land, and a writer that fails (or dies) after taking it leaves it so (a failed
 * write punches it, so no bytes the objects held past the old end show there either). */
static int64_t st_append(struct arf_data *d, uint64_t ino, struct st_file *sf,
                         const struct arf_attr *at, const void *buf, size_t len,
                         uint64_t *where)
{
	uint32_t n = __atomic_add_fetch(&d->seq, 1, __ATOMIC_RELAXED);
	int64_t a[4] = { (int64_t)ino, (int64_t)len, (int64_t)at->gen,
	                 (int64_t)((uint64_t)d->id << 32 | n) };
	struct arc_exec x = { 0 };
	int64_t rc = run(d, &x, "extend", a, 4, NULL, 0);
	uint64_t out[2] = { 0, 0 };    /* the range taken: start, end */
	if (rc >= 0 && x.out_len == sizeof out)
		memcpy(out, x.out, sizeof out);
	free(x.out);
	if (rc < 0)
		return rc;
	if ((uint64_t)rc != len || out[1] != out[0] + len || out[1] > ST_MAX_SIZE) {
		snprintf(d->s.msg, sizeof d->s.msg, "extend: %lld, range %llu..%llu for %zu bytes",
		         (long long)rc, (unsigned long long)out[0], (unsigned long long)out[1], len);
		return -EIO;
	}
	rc = arf_cl_write(sf->f, out[0], buf, len);
	if (rc < 0) {
		(void)arf_cl_punch(sf->f, out[0], len);   /* best effort: zeros, not stale bytes */
		return rc;
	}
	if (where)
		*where = out[0];
	return (int64_t)len;
}

/* A write (at the size found, for an append): data first, then the size when it grew (or
 * the times when it did not). */
static int64_t st_write(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                        const void *buf, size_t len, bool append, uint64_t *where)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	if (append) {
		rc = st_append(d, ino, sf, &at, buf, len, where);
		goto out;
	}
	if (off > ST_MAX_SIZE || len > ST_MAX_SIZE - off) {
		rc = -EFBIG;
		goto out;
	}
	if (len == 0)
		goto out;
	/* bytes between the size and off are a hole now: whatever an earlier crash or failed
	 * write left past the size must not show there */
	if (off > at.size && (rc = arf_cl_truncate(sf->f, at.size)) < 0)
		goto out;
	rc = arf_cl_write(sf->f, off, buf, len);
	if (rc < 0)
		goto out;
	if (off + len > at.size) {
		rc = m_truncate(d, ino, at.gen, off + len);
	} else {
		/* the times a write on one server sets (setattr's valid bits, arf_data.h) */
		int64_t a[7] = { (int64_t)ino, ARF_SET_MTIME_NOW, 0, 0, 0, 0, 0 };
		struct arc_exec x = { 0 };
		rc = run(d, &x, "setattr", a, 7, NULL, 0);
		free(x.out);
	}
	if (rc == 0) {
		rc = (int64_t)len;
		if (where)
			*where = off;
	}
out:
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

static int64_t st_read(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, void *buf,
                       size_t len)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin_read(d, ino, gen, off, len, &sf, &at, true);
	if (rc != 0)
		return rc;
	size_t n = off >= at.size ? 0 : at.size - off < len ? (size_t)(at.size - off) : len;
	/* with read-ahead: the mount's reader goes through a file in order, one request at a
	 * time, which alone would keep one data server busy after another */
	uint64_t token[3] = { (uint64_t)at.mtime, (uint64_t)at.ctime, at.size };
	rc = n ? arf_cl_read_ra(sf->f, off, buf, n, at.size, token) : 0;
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

/* Shrink: the size first, the objects after.  Grow: the objects cut to the old size (no
 * stale tail may show in the new hole), then the size. */
static int64_t st_truncate(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t size)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	if (size > ST_MAX_SIZE)
		rc = -EFBIG;
	else if (size < at.size && (rc = m_truncate(d, ino, at.gen, size)) == 0)
		rc = arf_cl_truncate(sf->f, size);
	else if (size >= at.size && (rc = arf_cl_truncate(sf->f, at.size)) == 0)
		rc = m_truncate(d, ino, at.gen, size);
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

/* The objects, then the metadata inode (its size never durable before the bytes). */
static int64_t st_fsync(struct arf_data *d, uint64_t ino, uint64_t gen)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	rc = arf_cl_fsync(sf->f);
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

/* SEEK_DATA and SEEK_HOLE: from the objects' extents (arf_cl_seek). */
static int64_t st_seek(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, int whence)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	rc = arf_cl_seek(sf->f, off, whence, at.size);
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

/* PUNCH_HOLE on a striped file: the objects' blocks of the range freed (bytes past the
 * size are a hole already), then mtime and ctime, as on one server. */
static int64_t st_punch(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                        uint64_t len)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	uint64_t n = off >= at.size ? 0 : at.size - off < len ? at.size - off : len;
	rc = arf_cl_punch(sf->f, off, n);
	if (rc == 0) {
		int64_t a[7] = { (int64_t)ino, ARF_SET_MTIME_NOW, 0, 0, 0, 0, 0 };
		struct arc_exec x = { 0 };
		rc = run(d, &x, "setattr", a, 7, NULL, 0);
		free(x.out);
	}
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

/* fallocate's mode 0 on a striped file: blocks for the range's holes on the objects; with
 * KEEP_SIZE only below the size (blocks past it cannot be held, as on one server), without
 * it the size raised to off+len after the objects (cut first to the old size, as a growing
 * truncate: no stale tail may show in the range), which sets mtime and ctime as ext4's
 * size-changing fallocate does. */
static int64_t st_allocate(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                           uint64_t len, bool keep_size)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, gen, &sf, &at);
	if (rc != 0)
		return rc;
	bool grows = !keep_size && off + len > at.size;
	if (off > ST_MAX_SIZE || len > ST_MAX_SIZE - off)
		rc = -EFBIG;
	else if (keep_size && off + len > at.size)
		rc = -EOPNOTSUPP;              /* past the size: as data.pno's allocate */
	else if (!grows || (rc = arf_cl_truncate(sf->f, at.size)) == 0)
		rc = arf_cl_allocate(sf->f, off, len);
	if (rc == 0 && grows)
		rc = m_truncate(d, ino, at.gen, off + len);
	rc = st_err(d, sf, rc);
	st_put(d->st, sf);
	return rc;
}

int arf_data_remove(struct arf_data *d, uint64_t ino, uint64_t gen)
{
	struct striped *st = d->st;
	if (!st || ino == atomic_load_explicit(&st->desc_ino, memory_order_relaxed))
		return 0;
	struct st_file *sf = st_get(st, ino);
	if (!sf)
		return -ENOMEM;
	struct arf_cl_file *f = sf->f && sf->gen == gen ? sf->f
	                        : arf_cl_file_open(st->cl, ino, gen, NULL);  /* removal: any layout */
	int rc = f ? arf_cl_remove(f) : -ENOMEM;
	if (rc == -EIO)
		snprintf(d->s.msg, sizeof d->s.msg, "%s", arf_cl_errmsg(f));
	if (f == sf->f)
		sf->f = NULL;                  /* its objects are gone: nothing to remember */
	arf_cl_file_close(f);
	st_put(st, sf);
	return rc;
}

int64_t arf_write(struct arf_data *d, uint64_t ino, uint64_t off, const void *buf, size_t len)
{
	return arf_write_gen(d, ino, 0, off, buf, len);
}

int64_t arf_write_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                      const void *buf, size_t len)
{
	if (d->st) {
		int64_t v = st_write(d, ino, gen, off, buf, len, false, NULL);
		if (v != ST_PASS)
			return v;
	}
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < ARF_DATA_CHUNK ? len - done : ARF_DATA_CHUNK;
		int64_t a[3] = { (int64_t)ino, (int64_t)(off + done), (int64_t)gen };
		struct arc_exec x = { 0 };
		int64_t v = run(d, &x, "write", a, 3, p + done, n);
		free(x.out);
		if (v < 0)
			return done && v == -ENOSPC ? (int64_t)done : v;
		if (v == 0 || (uint64_t)v > n) {
			/* a run always places at least one byte or fails; anything else is not ours */
			snprintf(d->s.msg, sizeof d->s.msg, "write: %lld of %zu bytes", (long long)v, n);
			return -EIO;
		}
		done += (size_t)v;   /* short: the run filled one hole; send the rest again */
	}
	return (int64_t)done;
}

int64_t arf_append_gen(struct arf_data *d, uint64_t ino, uint64_t gen, const void *buf,
                       size_t len, uint64_t *at)
{
	if (len == 0 || len > ARF_DATA_CHUNK) {
		snprintf(d->s.msg, sizeof d->s.msg, "append: %zu bytes (1..%u in one run)", len,
		         ARF_DATA_CHUNK);
		return -EINVAL;
	}
	if (d->st) {
		int64_t v = st_write(d, ino, gen, 0, buf, len, true, at);
		if (v != ST_PASS)
			return v;
	}
	/* a fresh key for this append (docs/arf.md, "Exactly once across a restart"): libarc's
	 * resend after a reconnect and arf_seg_run's EAGAIN retries repeat it unchanged, so an
	 * append a killed arfd committed is answered from its record, not appended twice */
	uint32_t n = __atomic_add_fetch(&d->seq, 1, __ATOMIC_RELAXED);
	int64_t a[3] = { (int64_t)ino, (int64_t)gen, (int64_t)((uint64_t)d->id << 32 | n) };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "append", a, 3, buf, len);
	uint64_t out[2] = { 0, 0 };    /* where the bytes went; the end of a kept range */
	if (v >= 0 && x.out_len != sizeof out) {
		snprintf(d->s.msg, sizeof d->s.msg, "append: %llu bytes of output",
		         (unsigned long long)x.out_len);
		v = -EIO;
	} else if (v >= 0) {
		memcpy(out, x.out, sizeof out);
	}
	free(x.out);
	if (v < 0)
		return v;
	if (v == 0 || (uint64_t)v > len) {
		snprintf(d->s.msg, sizeof d->s.msg, "append: %lld of %zu bytes", (long long)v, len);
		return -EIO;
	}
	if (at)
		*at = out[0];
	/* short: the rest goes into the range the run kept for it (out[1], its end), never
	 * past a size another append may have grown since */
	if ((uint64_t)v < len && out[1] == out[0] + len) {
		int64_t w = arf_write_gen(d, ino, gen, out[0] + (uint64_t)v, (const char *)buf + v,
		                          len - (size_t)v);
		if (w > 0)
			v += w;
	}
	return v;
}

int64_t arf_read(struct arf_data *d, uint64_t ino, uint64_t off, void *buf, size_t len)
{
	return arf_read_gen(d, ino, 0, off, buf, len);
}

int64_t arf_read_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, void *buf,
                     size_t len)
{
	if (d->st) {
		int64_t v = st_read(d, ino, gen, off, buf, len);
		if (v != ST_PASS)
			return v;
	}
	char *p = buf;
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < ARF_DATA_CHUNK ? len - done : ARF_DATA_CHUNK;
		int64_t a[4] = { (int64_t)ino, (int64_t)(off + done), (int64_t)n, (int64_t)gen };
		struct arc_exec x = { .out_max = n };
		int64_t v = run(d, &x, "read", a, 4, NULL, 0);
		if (v >= 0 && ((uint64_t)v > n || x.out_len != (uint64_t)v)) {
			snprintf(d->s.msg, sizeof d->s.msg, "read: %lld bytes, %llu of output",
			         (long long)v, (unsigned long long)x.out_len);
			v = -EIO;
		}
		if (v > 0)
			memcpy(p + done, x.out, (size_t)v);
		free(x.out);
		if (v < 0)
			return v;
		done += (size_t)v;
		if ((size_t)v < n)
			break;           /* EOF */
	}
	return (int64_t)done;
}

int64_t arf_readv(struct arf_data *d, uint64_t ino, const uint64_t *ranges, unsigned n,
                  void *buf)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++) {
		if (ranges[2 * i + 1] > ARF_DATA_CHUNK - sum)
			return -EINVAL;
		sum += ranges[2 * i + 1];
	}
	if (n > ARF_READV_MAX)
		return -EINVAL;
	if (d->st || n == 1) {
		/* a striped file's ranges are on the data servers; one range is a read */
		uint64_t done = 0;
		for (unsigned i = 0; i < n; i++) {
			int64_t v = arf_read_gen(d, ino, 0, ranges[2 * i], (char *)buf + done,
			                         (size_t)ranges[2 * i + 1]);
			if (v < 0)
				return v;
			done += (uint64_t)v;
			if ((uint64_t)v < ranges[2 * i + 1])
				break;
		}
		return (int64_t)done;
	}
	int64_t a[3] = { (int64_t)ino, (int64_t)n, 0 };
	struct arc_exec x = { .out_max = sum };
	int64_t v = run(d, &x, "readv", a, 3, ranges, 16 * (size_t)n);
	if (v >= 0 && ((uint64_t)v > sum || x.out_len != (uint64_t)v)) {
		snprintf(d->s.msg, sizeof d->s.msg, "readv: %lld bytes, %llu of output",
		         (long long)v, (unsigned long long)x.out_len);
		v = -EIO;
	}
	if (v > 0)
		memcpy(buf, x.out, (size_t)v);
	free(x.out);
	return v;
}

int arf_truncate(struct arf_data *d, uint64_t ino, uint64_t size)
{
	return arf_truncate_gen(d, ino, 0, size);
}

int arf_truncate_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t size)
{
	if (d->st) {
		int64_t v = st_truncate(d, ino, gen, size);
		if (v != ST_PASS)
			return (int)v;
	}
	int64_t a[3] = { (int64_t)ino, (int64_t)size, (int64_t)gen };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "truncate", a, 3, NULL, 0);
	free(x.out);
	return (int)v;
}

int arf_setattr(struct arf_data *d, uint64_t ino, const struct arf_setattr *sa)
{
	int64_t a[7] = { (int64_t)ino, sa->valid, sa->mode, sa->uid, sa->gid, sa->atime, sa->mtime };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "setattr", a, 7, NULL, 0);
	free(x.out);
	return (int)v;
}

int arf_setattr_attr(struct arf_data *d, uint64_t ino, const struct arf_setattr *sa,
                     struct arf_attr *at)
{
	at->mode = 0;
	if (!d->set_attr)
		return arf_setattr(d, ino, sa);
	int64_t a[7] = { (int64_t)ino, sa->valid, sa->mode, sa->uid, sa->gid, sa->atime, sa->mtime };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "setattrattr", a, 7, NULL, 0);
	if (v == 0 && x.out_len == ARF_ATTR_BYTES)
		arf_attr_decode(x.out, at);
	free(x.out);
	return (int)v;
}

int arf_fsync(struct arf_data *d, uint64_t ino)
{
	return arf_fsync_gen(d, ino, 0);
}

int arf_fsync_gen(struct arf_data *d, uint64_t ino, uint64_t gen)
{
	if (d->st) {
		int64_t v = st_fsync(d, ino, gen);
		if (v < 0 && v != ST_PASS)
			return (int)v;
	}
	int64_t a[2] = { (int64_t)ino, (int64_t)gen };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "fsync", a, 2, NULL, 0);
	free(x.out);
	return (int)v;
}

int64_t arf_seek_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, int whence)
{
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (d->st) {
		int64_t v = st_seek(d, ino, gen, off, whence);
		if (v != ST_PASS)
			return v;
	}
	int64_t a[4] = { (int64_t)ino, (int64_t)off, whence == SEEK_DATA ? 3 : 4, (int64_t)gen };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "seek", a, 4, NULL, 0);
	free(x.out);
	return v;
}

int arf_allocate_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                     uint64_t len, bool keep_size)
{
	if (len == 0 || len >> 62 || off >> 62)
		return -EINVAL;
	if (d->st) {
		int64_t v = st_allocate(d, ino, gen, off, len, keep_size);
		if (v != ST_PASS)
			return (int)v;
	}
	/* one hole per run (as write): again from where the last run stopped */
	for (uint64_t done = 0; done < len;) {
		/* the length's top bit asks for KEEP_SIZE (checked by arfd under the lock) */
		int64_t a[4] = { (int64_t)ino, (int64_t)(off + done),
		                 (int64_t)((len - done) | (uint64_t)keep_size << 63), (int64_t)gen };
		struct arc_exec x = { 0 };
		int64_t v = run(d, &x, "allocate", a, 4, NULL, 0);
		free(x.out);
		if (v < 0)
			return (int)v;
		if (v == 0 || (uint64_t)v > len - done) {
			snprintf(d->s.msg, sizeof d->s.msg, "allocate: %lld bytes of %llu",
			         (long long)v, (unsigned long long)(len - done));
			return -EIO;
		}
		done += (uint64_t)v;
	}
	return 0;
}

int arf_punch_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, uint64_t len)
{
	if (len == 0 || len >> 63 || off >> 63)
		return -EINVAL;
	if (d->st) {
		int64_t v = st_punch(d, ino, gen, off, len);
		if (v != ST_PASS)
			return (int)v;
	}
	/* one extent changed per run: again from where the last run stopped */
	for (uint64_t done = 0; done < len;) {
		int64_t a[4] = { (int64_t)ino, (int64_t)(off + done), (int64_t)(len - done),
		                 (int64_t)gen };
		struct arc_exec x = { 0 };
		int64_t v = run(d, &x, "punch", a, 4, NULL, 0);
		free(x.out);
		if (v < 0)
			return (int)v;
		if (v == 0 || (uint64_t)v > len - done) {
			snprintf(d->s.msg, sizeof d->s.msg, "punch: %lld bytes of %llu",
			         (long long)v, (unsigned long long)(len - done));
			return -EIO;
		}
		done += (uint64_t)v;
	}
	return 0;
}

/* ---- write-behind (arf_data.h): a queue per file of runs in flight ---- */

struct wrun {
	struct wrun *next;
	uint64_t gen, off;
	size_t len;
	char *buf;                     /* ARF_WQ_RUN bytes, owned */
	int64_t args[4];               /* the EXEC's; must live until its reply (a resend) */
	struct arc_exec x;
	struct arc_pending *p;         /* NULL: not started (the filling run) */
	unsigned tries;                /* sent again after EAGAIN */
	uint64_t after;                /* != 0: continues a run in flight (writeafter) */
};

struct arf_wq {
	struct arf_data *d;
	uint64_t ino;
	pthread_mutex_t lock;
	struct wrun *fill;             /* being gathered, not sent yet */
	struct wrun *head, *tail;      /* in flight, oldest first */
	unsigned n_flight;
	struct wrun *spare;            /* a run's buffer kept for the next one */
	int64_t err;                   /* the error of eseq */
	uint32_t eseq;                 /* errors so far << 1 | 1 once err was reported (errseq) */
	uint64_t sent_end;             /* where the last run sent ends */
	uint64_t end;                  /* furthest end queued (arf_wq_end); 0 when empty */
	/* a striped file (a cluster): full runs held, then applied together (st_flush) by a
	 * thread of their own while the writer fills the next batch */
	struct wrun *held[ARF_WQ_DEPTH_STRIPED];
	unsigned n_held;
	struct wrun *job[ARF_WQ_DEPTH_STRIPED];   /* the batch being applied */
	unsigned n_job;
	bool job_on;                   /* job_thread runs it (joined by st_join) */
	pthread_t job_thread;
	int64_t job_rc;
};

/* bytes in all queues' runs (filling or in flight) of the process: ARF_WQ_BUDGET */
static size_t wq_bytes;

struct arf_wq *arf_wq_new(struct arf_data *d, uint64_t ino)
{
	struct arf_wq *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->d = d;
	q->ino = ino;
	pthread_mutex_init(&q->lock, NULL);
	return q;
}

static void run_free(struct arf_wq *q, struct wrun *r)
{
	free(r->x.out);
	r->x.out = NULL;
	r->p = NULL;
	__atomic_fetch_sub(&wq_bytes, ARF_WQ_RUN, __ATOMIC_RELAXED);
	if (!q->spare) {
		q->spare = r;
		return;
	}
	free(r->buf);
	free(r);
}

/* A run for bytes at off, or NULL when the budget is spent or memory is out (the caller
 * writes synchronously). */
static struct wrun *run_new(struct arf_wq *q, uint64_t gen, uint64_t off)
{
	if (__atomic_add_fetch(&wq_bytes, ARF_WQ_RUN, __ATOMIC_RELAXED) > ARF_WQ_BUDGET) {
		__atomic_fetch_sub(&wq_bytes, ARF_WQ_RUN, __ATOMIC_RELAXED);
		return NULL;
	}
	struct wrun *r = q->spare;
	q->spare = NULL;
	if (!r) {
		r = calloc(1, sizeof *r);
		if (r)
			r->buf = malloc(ARF_WQ_RUN);
		if (!r || !r->buf) {
			if (r)
				free(r);
			__atomic_fetch_sub(&wq_bytes, ARF_WQ_RUN, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	r->next = NULL;
	r->gen = gen;
	r->off = off;
	r->len = 0;
	return r;
}

/* Whether an error is kept and no flush reported it yet. */
static bool unreported(const struct arf_wq *q)
{
	return q->eseq && !(q->eseq & 1);
}

/* A failed run: a new error in the sequence, unless the last one is not reported yet (then
 * that first one stays, as it explains the others). */
static void keep_err(struct arf_wq *q, int64_t rc)
{
	if (rc >= 0 || unreported(q))
		return;
	q->err = rc;
	__atomic_store_n(&q->eseq, ((q->eseq >> 1) + 1) << 1, __ATOMIC_RELEASE);
}

static int start(struct arf_wq *q, struct wrun *r)
{
	r->args[0] = (int64_t)q->ino;
	r->args[1] = (int64_t)r->off;
	r->args[2] = (int64_t)r->gen;
	r->args[3] = (int64_t)r->after;
	struct arf_seg *s = &q->d->s;
	r->x = (struct arc_exec){ .seg = s->bytes, .seg_len = s->len, .seg_id = s->id,
	                          .entry = r->after ? "writeafter" : "write", .args = r->args,
	                          .n_args = r->after ? 4 : 3,
	                          .argbytes = r->buf, .argbytes_len = r->len };
	if (arc_exec_start(s->a, &r->x, &r->p) != 0)
		return -1;
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->n_flight++;
	return 0;
}

/* Wait for the oldest run in flight and take its answer.  One that met its inode locked
 * (EAGAIN: nothing changed; usually the run before it still copying) goes to the back of
 * the queue again, twice at most; after that, and for a run that placed only part of its
 * bytes, the rest is written here synchronously (arf_write_gen retries EAGAIN with a
 * back-off for five seconds and sends the rest of a short run). */
static void reap(struct arf_wq *q)
{
	struct wrun *r = q->head;
	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->n_flight--;
	int rc = arc_exec_wait(q->d->s.a, r->p);
	int64_t v = rc == 0 ? r->x.value : -EIO, e = 0;
	if (rc == 0 && v == -EAGAIN && r->tries < 2) {
		r->tries++;
		r->after = 0;          /* now behind the runs it came before */
		free(r->x.out);
		r->x.out = NULL;
		if (start(q, r) == 0)
			return;
	}
	if (rc != 0) {
		snprintf(q->d->s.msg, sizeof q->d->s.msg, "write: %s",
		         r->x.trapped ? r->x.trap.text : arc_errmsg(q->d->s.a));
		e = -EIO;
	} else if (v == -EAGAIN || (v > 0 && (uint64_t)v < r->len)) {
		/* the rest (all of it after EAGAIN: nothing changed then) */
		size_t done = v > 0 ? (size_t)v : 0;
		int64_t w = arf_write_gen(q->d, q->ino, r->gen, r->off + done, r->buf + done,
		                          r->len - done);
		e = w < 0 ? w : (uint64_t)w < r->len - done ? -ENOSPC : 0;
	} else if (v < 0) {
		e = v;
	} else if ((uint64_t)v != r->len) {
		/* a run places at least one byte or fails; anything else is not ours */
		snprintf(q->d->s.msg, sizeof q->d->s.msg, "write: %lld of %zu bytes", (long long)v,
		         r->len);
		e = -EIO;
	}
	keep_err(q, e);
	run_free(q, r);
}

/* ---- a striped file's runs (arf_data_striped): a queue holds up to ARF_WQ_DEPTH_STRIPED
 * full runs and applies them together, all in flight on the data servers at once
 * (arf_cl_write_start), where one run at a time would keep one or two servers busy.  The
 * batch is one striped write as st_write does it, under the file's lock (so a truncate or
 * another write of the file comes wholly before or after it): the inode read, the objects
 * cut before a run that starts past the file's bytes, the data, then the size raised over
 * the runs applied before any that failed. */

/* A batch of runs in flight (st_write_runs): ops[waited..started) not answered yet. */
struct st_batch {
	struct wrun *const *runs;
	struct arf_cl_op *ops[ARF_WQ_DEPTH_STRIPED];
	unsigned started, waited;
	uint64_t ok_end;               /* the end of what was applied before any failure */
	bool wrote, failed;
	int64_t rc;                    /* the first error */
	char msg[1200];                /* its message, for -EIO (arf_seg's msg) */
};

/* Every run in flight answered, in the order sent: those before the first failure are
 * the prefix the size may cover. */
static void st_batch_wait(struct st_batch *b)
{
	for (; b->waited < b->started; b->waited++) {
		char msg[sizeof b->msg];
		int64_t v = arf_cl_op_wait(b->ops[b->waited], msg, sizeof msg);
		if (v < 0 && !b->failed) {
			b->failed = true;
			if (b->rc == 0) {
				b->rc = v;
				snprintf(b->msg, sizeof b->msg, "%s", msg);
			}
		} else if (v >= 0 && !b->failed) {
			const struct wrun *r = b->runs[b->waited];
			b->wrote = true;
			if (r->off + r->len > b->ok_end)
				b->ok_end = r->off + r->len;
		}
	}
}

/* Apply runs[0..n) (one generation, none overlapping another): 0 or the first -errno. */
static int64_t st_write_runs(struct arf_data *d, uint64_t ino, struct wrun *const *runs,
                             unsigned n)
{
	struct st_file *sf;
	struct arf_attr at;
	int64_t rc = st_begin(d, ino, runs[0]->gen, &sf, &at);
	if (rc == ST_PASS) {
		/* not a striped file after all: the plain way, one run after another */
		for (unsigned i = 0; i < n; i++) {
			int64_t v = arf_write_gen(d, ino, runs[i]->gen, runs[i]->off, runs[i]->buf,
			                          runs[i]->len);
			if (v < 0 || (uint64_t)v < runs[i]->len)
				return v < 0 ? v : -ENOSPC;
		}
		return 0;
	}
	if (rc != 0)
		return rc;
	struct st_batch *b = calloc(1, sizeof *b);
	if (!b) {
		st_put(d->st, sf);
		return -ENOMEM;
	}
	b->runs = runs;
	uint64_t size = at.size;       /* the metadata size, as raised so far */
	uint64_t sent_hi = at.size;    /* a run past it has a hole before it */
	for (unsigned i = 0; i < n && b->rc == 0; i++) {
		const struct wrun *r = runs[i];
		if (r->off > ST_MAX_SIZE || r->len > ST_MAX_SIZE - r->off) {
			b->rc = -EFBIG;
			break;
		}
		if (r->off > sent_hi) {
			/* a hole before r: what is in flight landed, the size raised over it, then
			 * whatever an earlier crash or failed write left past the size cut, so that
			 * no stale byte shows in the hole */
			st_batch_wait(b);
			if (b->rc != 0)
				break;
			if (b->ok_end > size) {
				if ((b->rc = m_truncate(d, ino, at.gen, b->ok_end)) != 0)
					break;
				size = b->ok_end;
			}
			if ((b->rc = arf_cl_truncate(sf->f, size)) < 0) {
				snprintf(b->msg, sizeof b->msg, "%s", arf_cl_errmsg(sf->f));
				break;
			}
			sent_hi = size;
		}
		int e = arf_cl_write_start(sf->f, r->off, r->buf, r->len, &b->ops[b->started]);
		if (e < 0) {
			b->rc = e;
			snprintf(b->msg, sizeof b->msg, "%s", arf_cl_errmsg(sf->f));
			break;
		}
		b->started++;
		if (r->off + r->len > sent_hi)
			sent_hi = r->off + r->len;
	}
	st_batch_wait(b);              /* every op is waited for, whatever happened above */
	/* data first, then the size (or the times a write within the size sets) */
	int64_t mrc = 0;
	if (b->wrote && b->ok_end > size) {
		mrc = m_truncate(d, ino, at.gen, b->ok_end);
	} else if (b->wrote) {
		int64_t a[7] = { (int64_t)ino, ARF_SET_MTIME_NOW, 0, 0, 0, 0, 0 };
		struct arc_exec x = { 0 };
		mrc = run(d, &x, "setattr", a, 7, NULL, 0);
		free(x.out);
	}
	rc = b->rc < 0 ? b->rc : mrc < 0 ? mrc : 0;
	if (b->rc == -EIO)
		snprintf(d->s.msg, sizeof d->s.msg, "%.1199s", b->msg);
	free(b);
	st_put(d->st, sf);
	return rc;
}

/* The batch in q->job applied: its error kept, its buffers freed. */
static void st_job_done(struct arf_wq *q)
{
	keep_err(q, q->job_rc < 0 ? q->job_rc : 0);
	for (unsigned i = 0; i < q->n_job; i++)
		run_free(q, q->job[i]);
	q->n_job = 0;
}

static void *st_job(void *arg)
{
	struct arf_wq *q = arg;
	q->job_rc = st_write_runs(q->d, q->ino, q->job, q->n_job);
	return NULL;
}

/* (lock held) The batch being applied, if any, finished. */
static void st_join(struct arf_wq *q)
{
	if (!q->job_on)
		return;
	pthread_join(q->job_thread, NULL);
	q->job_on = false;
	st_job_done(q);
}

/* (lock held) The held runs applied, after the batch before them: with wait, here and now;
 * else by a thread of their own, so that the writer fills the next batch (copying its
 * bytes) while this one is on the wire.  One batch at a time, so batches land in order;
 * the file's lock (st_write_runs) orders each with the file's other calls. */
static void st_flush(struct arf_wq *q, bool wait)
{
	st_join(q);
	if (!q->n_held)
		return;
	memcpy(q->job, q->held, q->n_held * sizeof q->held[0]);
	q->n_job = q->n_held;
	q->n_held = 0;
	if (!wait && pthread_create(&q->job_thread, NULL, st_job, q) == 0) {
		q->job_on = true;
		return;
	}
	q->job_rc = st_write_runs(q->d, q->ino, q->job, q->n_job);
	st_job_done(q);
}

/* Hold full run r; the held ones go first when r overlaps one of them (their order is the
 * writes' order, and runs in flight together land in any order) or is of another
 * generation, and all of them once ARF_WQ_DEPTH_STRIPED are held. */
static void st_hold(struct arf_wq *q, struct wrun *r)
{
	for (unsigned i = 0; i < q->n_held; i++) {
		const struct wrun *h = q->held[i];
		if (h->gen != r->gen || (r->off < h->off + h->len && h->off < r->off + r->len)) {
			st_flush(q, false);
			break;
		}
	}
	q->held[q->n_held++] = r;
	if (q->n_held == ARF_WQ_DEPTH_STRIPED)
		st_flush(q, false);
}

/* Send the filling run (waiting for the oldest when the queue's depth is in flight). */
static void submit(struct arf_wq *q)
{
	struct wrun *r = q->fill;
	if (!r)
		return;
	q->fill = NULL;
	if (q->d->st) {
		st_hold(q, r);
		return;
	}
	while (q->n_flight >= ARF_WQ_DEPTH)
		reap(q);
	r->tries = 0;
	/* continuing a run still in flight: land after it (data.c's writeafter) */
	r->after = q->head && r->off == q->sent_end && r->off ? r->off : 0;
	q->sent_end = r->off + r->len;
	if (start(q, r) != 0) {
		/* not sent: write it the plain way */
		int64_t v = arf_write_gen(q->d, q->ino, r->gen, r->off, r->buf, r->len);
		keep_err(q, v < 0 ? v : (uint64_t)v < r->len ? -ENOSPC : 0);
		run_free(q, r);
	}
}

/* (lock held) Everything sent and answered. */
static void drain(struct arf_wq *q)
{
	submit(q);
	st_flush(q, true);
	while (q->head)
		reap(q);
	__atomic_store_n(&q->end, 0, __ATOMIC_RELAXED);
}

/* Wait until no run in flight writes any byte of off .. off+len. */
static void wait_overlaps(struct arf_wq *q, uint64_t off, size_t len)
{
	for (;;) {
		const struct wrun *r = q->head;
		while (r && !(off < r->off + r->len && r->off < off + len))
			r = r->next;
		if (!r)
			return;
		reap(q);
	}
}

int64_t arf_wq_write(struct arf_wq *q, uint64_t gen, uint64_t off, const void *buf,
                     size_t len)
{
	pthread_mutex_lock(&q->lock);
	int64_t rc = unreported(q) ? q->err : 0;
	if (rc)
		goto out;
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		uint64_t o = off + done;
		size_t n = len - done;
		struct wrun *f = q->fill;
		if (f && (f->gen != gen || f->off + f->len != o || f->len == ARF_WQ_RUN))
			submit(q);
		/* bytes a run in flight (or the one just sent) also writes: that one first */
		wait_overlaps(q, o, n);
		if (!q->fill && !(q->fill = run_new(q, gen, o))) {
			/* over the budget (or out of memory): this write the plain way */
			drain(q);
			int64_t v = unreported(q) ? q->err
			                          : arf_write_gen(q->d, q->ino, gen, o, p + done, n);
			if (v < 0) {
				rc = done ? (int64_t)done : v;
				goto out;
			}
			done += (size_t)v;
			if ((size_t)v < n) {
				rc = (int64_t)done;   /* short: the image filled up part way */
				goto out;
			}
			continue;
		}
		f = q->fill;
		if (n > ARF_WQ_RUN - f->len)
			n = ARF_WQ_RUN - f->len;
		memcpy(f->buf + f->len, p + done, n);
		f->len += n;
		done += n;
		if (o + n > q->end)
			__atomic_store_n(&q->end, o + n, __ATOMIC_RELAXED);
		if (f->len == ARF_WQ_RUN)
			submit(q);
	}
	rc = (int64_t)len;
out:
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int64_t arf_wq_append(struct arf_wq *q, uint64_t gen, const void *buf, size_t len,
                      uint64_t *at)
{
	pthread_mutex_lock(&q->lock);
	int64_t rc = unreported(q) ? q->err : 0;
	if (rc == 0) {
		/* where an append lands is known only when it ran: everything before it first,
		 * and it holds the queue until it is done */
		drain(q);
		rc = unreported(q) ? q->err : arf_append_gen(q->d, q->ino, gen, buf, len, at);
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int arf_wq_flush(struct arf_wq *q)
{
	pthread_mutex_lock(&q->lock);
	drain(q);
	int64_t rc = 0;
	if (unreported(q)) {
		rc = q->err;
		__atomic_store_n(&q->eseq, q->eseq | 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&q->lock);
	return (int)rc;
}

uint32_t arf_wq_errseq(struct arf_wq *q)
{
	if (!q)
		return 0;
	uint32_t e = __atomic_load_n(&q->eseq, __ATOMIC_ACQUIRE);
	/* an error no one was told of yet is the new descriptor's to report (as Linux's
	 * errseq_sample): it samples the one before */
	return (e >> 1) - (e && !(e & 1));
}

int arf_wq_flush_seen(struct arf_wq *q, uint32_t *seen)
{
	pthread_mutex_lock(&q->lock);
	drain(q);
	int64_t rc = 0;
	if (q->eseq >> 1 != *seen) {
		rc = q->err;
		*seen = q->eseq >> 1;
		__atomic_store_n(&q->eseq, q->eseq | 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&q->lock);
	return (int)rc;
}

void arf_wq_drain(struct arf_wq *q)
{
	pthread_mutex_lock(&q->lock);
	drain(q);
	pthread_mutex_unlock(&q->lock);
}

uint64_t arf_wq_end(struct arf_wq *q)
{
	return __atomic_load_n(&q->end, __ATOMIC_RELAXED);
}

void arf_wq_free(struct arf_wq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	drain(q);
	pthread_mutex_unlock(&q->lock);
	if (q->spare) {
		free(q->spare->buf);
		free(q->spare);
	}
	pthread_mutex_destroy(&q->lock);
	free(q);
}
