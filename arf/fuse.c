/* fuse.c: `arf mount`, the FUSE client of ARF (libfuse3's low-level API).  Every request is
 * one or two runs of the operations' segment (arf/arf_ops.h), the data segment
 * (arf/arf_data.h) or the statfs segment (arf/statfs.c) in the arfd serving the image.  FUSE inode numbers
 * are ARF inode numbers (FUSE's root, 1, is ARF's root, 1); what the client keeps per inode
 * is its generation, its opens, and the queue of its writes in flight (write-behind:
 * a write is answered once queued, close and fsync wait for the queue and report its
 * errors; arf_data.h and docs/arf.md, "Writes").
 *
 * Consistency is close-to-open, as NFS gives: attributes and entries are cached for the
 * -o attr_timeout/entry_timeout seconds, and every open drops the file's cached pages, so
 * what another client wrote and closed is seen by the next open (docs/arf.md, "Mounting").
 * Permissions are checked by the kernel against the stored mode, uid and gid
 * (default_permissions is always on) and the POSIX ACLs, which it reads as xattrs (see
 * "POSIX ACLs" below for the part left to the mount: the mode, chmod, inheritance).  A mount made by root serves every user
 * (allow_other, as an NFS mount does); a user's own mount serves only that user, as FUSE
 * does by default.
 *
 * A cluster's metadata server (docs/cluster.md) is mounted the same way: the namespace and
 * the attributes are its image's, and fs->d sends a regular file's bytes to its stripes on
 * the data servers (arf_data_striped), under the same write queue and generation checks;
 * removing a file's last name removes its stripes (remove_stripes).
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf_cli.h"
#include "arf_cluster.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "arf_seg.h"
#include "layout.h"

int arf_cmd_mount(int argc, char **argv);
int arf_cmd_umount(int argc, char **argv);

struct arf_fs {
	struct arc *a;
	struct arf_client *c;
	struct arf_data *d;
	struct arf_seg statfs;         /* statfs.pno */
	double attr_timeout, entry_timeout;
	double outage;             /* -o outage=S: ride through a lost connection (libarc) */
	int foreground;
	int single_thread;             /* -s: one thread serves every request */
	int writeback;                 /* -o writeback: the kernel caches writes (see init) */
	bool acl;                      /* the kernel enforces POSIX ACLs (see init, and ACLs) */
	int noxattr;                   /* -o noxattr: no xattrs, no ACLs (see Extended attributes) */
	int sync_writes;               /* -o sync_writes: each write waits for arfd (no queue) */
	struct arf_cluster *cl;        /* a cluster's metadata server: its data servers (else
	                                * NULL); fs->d sends regular files' bytes there */
	struct fuse_session *se;
};

static struct arf_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A -EIO from the client has its reason in arf_client_errmsg: say it where it can be seen
 * (stderr is /dev/null once daemonized). */
static void reply_errno(fuse_req_t req, int64_t rc)
{
	struct arf_fs *fs = fs_of(req);
	if (rc == -EIO && fs->foreground)
		fprintf(stderr, "arf mount: %s\n", arf_client_errmsg(fs->c));
	fuse_reply_err(req, (int)-rc);
}

static void reply_data_errno(fuse_req_t req, int64_t rc)
{
	struct arf_fs *fs = fs_of(req);
	if (rc == -EIO && fs->foreground)
		fprintf(stderr, "arf mount: %s\n", arf_data_errmsg(fs->d));
	fuse_reply_err(req, (int)-rc);
}

static void to_stat(uint64_t ino, const struct arf_attr *at, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	st->st_mode = at->mode;
	st->st_nlink = at->nlink;
	st->st_uid = at->uid;
	st->st_gid = at->gid;
	st->st_rdev = (dev_t)at->rdev;
	st->st_size = (off_t)at->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)(at->nblocks * 8);
	st->st_atim.tv_sec = at->atime / 1000000000;
	st->st_atim.tv_nsec = at->atime % 1000000000;
	st->st_mtim.tv_sec = at->mtime / 1000000000;
	st->st_mtim.tv_nsec = at->mtime % 1000000000;
	st->st_ctim.tv_sec = at->ctime / 1000000000;
	st->st_ctim.tv_nsec = at->ctime % 1000000000;
}

/* ---- inodes known to have no xattrs ----
 * `ls -l` asks for each name's system.posix_acl_access and security.selinux (a directory's
 * system.posix_acl_default too), and the kernel caches none of it on a fresh mount: two to
 * three getxattr requests per name listed, each a run in arfd (~80 us on loopback), for
 * inodes that nearly all have no xattr at all: three quarters of the requests of bench/fs's
 * ls -lR row.  getattr's answer says whether the inode had an xattr block
 * (arf_attr.no_xattrs), so lookup, getattr and readdirplus remember the inodes that had
 * none for as long as the kernel keeps those attributes (attr_timeout), and getxattr and
 * listxattr of such an inode are answered here: the same staleness as the attributes
 * themselves, which another client may change meanwhile as well.  A fixed table indexed by
 * the inode number (a collision forgets the older entry, whose requests then go to arfd),
 * so memory stays bounded whatever the tree.  An xattr change made through this mount
 * forgets the inode and moves the epoch before its run and after it; a note is dropped when
 * the epoch moved since before the run that read it, so an answer read before the change
 * cannot outlive it. */
#define NOXA_SLOTS 8192            /* a power of two: 128 KiB */
static struct {
	pthread_mutex_t lock;
	uint64_t epoch;
	struct { uint64_t ino, until_ns; } slot[NOXA_SLOTS];
} noxa = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Taken before a run whose attributes will be noted. */
static uint64_t noxa_epoch(void)
{
	pthread_mutex_lock(&noxa.lock);
	uint64_t e = noxa.epoch;
	pthread_mutex_unlock(&noxa.lock);
	return e;
}

/* What at (read by a run that began at epoch) says of ino's xattrs. */
static void noxa_note(const struct arf_fs *fs, uint64_t ino, const struct arf_attr *at,
                      uint64_t epoch)
{
	if (!(fs->attr_timeout > 0) || fs->noxattr)
		return;
	uint64_t until = mono_ns() + (uint64_t)(fs->attr_timeout * 1e9);
	pthread_mutex_lock(&noxa.lock);
	__typeof__(noxa.slot[0]) *e = &noxa.slot[ino & (NOXA_SLOTS - 1)];
	if (epoch != noxa.epoch)
		;                          /* an xattr changed here since: the answer may be old */
	else if (at->no_xattrs)
		*e = (__typeof__(*e)){ ino, until };
	else if (e->ino == ino)
		e->ino = 0;
	pthread_mutex_unlock(&noxa.lock);
}

static bool noxa_known(uint64_t ino)
{
	uint64_t now = mono_ns();
	pthread_mutex_lock(&noxa.lock);
	const __typeof__(noxa.slot[0]) *e = &noxa.slot[ino & (NOXA_SLOTS - 1)];
	bool known = e->ino == ino && now < e->until_ns;
	pthread_mutex_unlock(&noxa.lock);
	return known;
}

/* Before and after this mount changes ino's xattrs. */
static void noxa_forget(uint64_t ino)
{
	pthread_mutex_lock(&noxa.lock);
	noxa.epoch++;
	if (noxa.slot[ino & (NOXA_SLOTS - 1)].ino == ino)
		noxa.slot[ino & (NOXA_SLOTS - 1)].ino = 0;
	pthread_mutex_unlock(&noxa.lock);
}

/* ---- a directory's attributes after a change in it here ----
 * The kernel drops a directory's attributes after every change in it, and its permission
 * check before the next change in the same directory asks for them again: rm -r sent a
 * GETATTR of the parent before each unlink (2176 of its 5182 runs on bench/fs's --quick
 * tree), untar one before each create (2013 of 13239).  unlinkattr and rmdirattr, and
 * mkdirattrs, mknodattrs, symlinkattrs and linkattrs, return the parent's attributes after
 * the change, and the next GETATTR of that directory is answered with them while nothing
 * else that may change it went through this mount.  Two kinds of handler move the counters
 * when they begin and when they end: one that may change any directory (unlink, rmdir,
 * rename, the creates) moves dira.mut (dira_begin, dira_end); one that changes only the
 * inode it names (setattr, setxattr, removexattr; release's removal of a hidden name: its
 * directory) moves that inode's counter in ino_mut (dira_touch), so that untar's utimens of
 * each file it wrote does not drop its directory.  The attributes are kept with the values
 * both counters will have once their own request ends, so any change begun or ended since
 * makes them stale (two inodes sharing a counter only miss).  Another client's change is
 * seen once attr_timeout has passed, as with the kernel's own cache (0: nothing kept).  One
 * slot: rm -r and untar change one directory after another. */
#define DIRA_INO_SLOTS 64
static struct {
	pthread_mutex_t lock;
	uint64_t mut;                  /* moved at the start and the end of every change */
	uint64_t ino_mut[DIRA_INO_SLOTS];  /* moved around a change of one inode (ino % slots) */
	uint64_t dir, valid_at, valid_ino, until_ns;  /* dir 0: empty; valid while mut ==
	                                * valid_at and ino_mut of dir == valid_ino */
	struct arf_attr at;
} dira = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* What a change of directory dir saw of the counters when it began. */
struct dira_tok {
	uint64_t mut, ino_mut;
};

static uint64_t *dira_ino_mut(uint64_t ino)
{
	return &dira.ino_mut[ino % DIRA_INO_SLOTS];
}

static struct dira_tok dira_begin(uint64_t dir)
{
	pthread_mutex_lock(&dira.lock);
	struct dira_tok t = { ++dira.mut, *dira_ino_mut(dir) };
	pthread_mutex_unlock(&dira.lock);
	return t;
}

static void dira_end(void)
{
	pthread_mutex_lock(&dira.lock);
	dira.mut++;
	pthread_mutex_unlock(&dira.lock);
}

/* Before and after a change of inode ino alone. */
static void dira_touch(uint64_t ino)
{
	pthread_mutex_lock(&dira.lock);
	(*dira_ino_mut(ino))++;
	pthread_mutex_unlock(&dira.lock);
}

/* The end of a change in dir that began with t: keep at (mode 0: nothing to keep) as dir's
 * attributes if no other change that may touch dir began or ended meanwhile, then end. */
static void dira_finish(const struct arf_fs *fs, struct dira_tok t, uint64_t dir,
                        const struct arf_attr *at)
{
	uint64_t until = mono_ns() + (uint64_t)(fs->attr_timeout * 1e9);
	pthread_mutex_lock(&dira.lock);
	if (at->mode && S_ISDIR(at->mode) && fs->attr_timeout > 0 && dira.mut == t.mut &&
	    *dira_ino_mut(dir) == t.ino_mut) {
		dira.dir = dir;
		dira.at = *at;
		dira.valid_at = t.mut + 1;
		dira.valid_ino = t.ino_mut;
		dira.until_ns = until;
	}
	dira.mut++;
	pthread_mutex_unlock(&dira.lock);
}

static bool dira_get(uint64_t ino, struct arf_attr *at)
{
	uint64_t now = mono_ns();
	pthread_mutex_lock(&dira.lock);
	bool hit = dira.dir == ino && dira.mut == dira.valid_at &&
	           *dira_ino_mut(ino) == dira.valid_ino && now < dira.until_ns;
	if (hit)
		*at = dira.at;
	pthread_mutex_unlock(&dira.lock);
	return hit;
}

/* ---- what the client remembers per inode ----
 * FUSE sends a bare inode number with each request; another client may have deleted the
 * file and had its number made again since this one opened it.  The data operations check
 * the generation the kernel knows (what the last entry reply for that number said) and
 * answer ESTALE when the inode is no longer that file.  An inode missing from the table
 * (forgotten, or never seen) is read and written unchecked, as before, never refused.
 *
 * The table also counts this client's opens of each inode, for unlink of an open file:
 * POSIX keeps its data until the last close.  Such an unlink renames the file to a hidden
 * name in its directory instead (".arf-hidden-INO", as NFS clients do), getattr reports one
 * link less, and the last release removes it. */
struct ino_slot {
	uint64_t ino, gen;             /* ino 0: empty */
	uint32_t opens;                /* open files of this client on it */
	uint64_t hidden_dir;           /* != 0: unlinked while open, now hidden in this dir */
	struct arf_wq *wq;             /* its writes in flight (made by the first write) */
	uint32_t wq_users;             /* handlers using wq now: freed when 0 and not open */
	int lost_err;                  /* a queued write's error no descriptor was told of when
	                                * the queue went (a mapping's pages written at munmap,
	                                * after the last close): the next open reports it */
	uint32_t flushing;             /* last-user flushes of a queue let go (wq_put) that have
	                                * not yet put their error in lost_err */
	uint32_t removed_mode;         /* != 0: its last name removed here (-o writeback; see
	                                * setattr): the file's mode then, until forget */
	bool no_caps;                  /* security.capability was absent when last asked, since
	                                * the last open (see caps_known_absent) */
	bool no_sid;                   /* no setuid, nor setgid with group execute, when last
	                                * read, since the last open or chmod here (drop_privs) */
};
static struct {
	pthread_mutex_t lock;
	struct ino_slot *slot;
	size_t cap, used;              /* cap a power of two; used <= cap / 2 */
	size_t open_files;             /* sum of opens: unlink looks only when some are */
	pthread_cond_t flushed;        /* a slot's flushing went down */
} inos = { .lock = PTHREAD_MUTEX_INITIALIZER, .flushed = PTHREAD_COND_INITIALIZER };

static size_t ino_home(uint64_t ino, size_t cap)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* (lock held) The slot of ino, or NULL; with make, a new zeroed one when missing (NULL only
 * when out of memory). */
static struct ino_slot *ino_find(uint64_t ino, bool make)
{
	if (make && 2 * (inos.used + 1) > inos.cap) {
		size_t cap = inos.cap ? 2 * inos.cap : 4096;
		struct ino_slot *ns = calloc(cap, sizeof *ns);
		if (!ns)
			return NULL;
		for (size_t i = 0; i < inos.cap; i++) {
			if (!inos.slot[i].ino)
				continue;
			size_t h = ino_home(inos.slot[i].ino, cap);
			while (ns[h].ino)
				h = (h + 1) & (cap - 1);
			ns[h] = inos.slot[i];
		}
		free(inos.slot);
		inos.slot = ns;
		inos.cap = cap;
	}
	if (!inos.cap)
		return NULL;
	size_t h = ino_home(ino, inos.cap);
	while (inos.slot[h].ino && inos.slot[h].ino != ino)
		h = (h + 1) & (inos.cap - 1);
	if (inos.slot[h].ino)
		return &inos.slot[h];
	if (!make)
		return NULL;
	inos.used++;
	inos.slot[h] = (struct ino_slot){ .ino = ino };
	return &inos.slot[h];
}

/* (lock held) Empty slot at h; the rest of its probe run is put back so lookups still
 * find it. */
static void ino_remove(struct ino_slot *e)
{
	size_t h = (size_t)(e - inos.slot);
	inos.slot[h].ino = 0;
	inos.used--;
	for (size_t i = (h + 1) & (inos.cap - 1); inos.slot[i].ino; i = (i + 1) & (inos.cap - 1)) {
		struct ino_slot moved = inos.slot[i];
		inos.slot[i].ino = 0;
		inos.used--;
		struct ino_slot *n = ino_find(moved.ino, true);
		if (n)
			*n = moved;
	}
}

/* Remember ino's generation; the end of this client's writes of it still queued (0: none). */
static uint64_t gen_put(uint64_t ino, uint64_t gen)
{
	uint64_t end = 0;
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, true);
	if (e) {
		if (e->gen != gen) {
			e->lost_err = 0;       /* another file's number now: not its error */
			e->no_caps = false;
			e->no_sid = false;
		}
		e->gen = gen;
		e->removed_mode = 0;       /* a live entry again (the number was reused) */
		if (e->wq)
			end = arf_wq_end(e->wq);
	}
	pthread_mutex_unlock(&inos.lock);
	return end;
}

/* One open file description of a regular file (its fi->fh): the generation the data
 * operations check (0: unknown, nothing checked) and the error sequence of the file's write
 * queue it has seen: each descriptor is told of a failed queued write once, at its next
 * close or fsync, as Linux tells each of a writeback error (arf_data.h, errseq).  Made by
 * open and create, freed by release. */
struct open_file {
	uint64_t gen;
	uint32_t err_seen;
	bool direct;                   /* opened direct_io (O_APPEND: see append_direct) */
	int lost_err;                  /* the inode's lost_err, to report at its close or fsync */
};

static struct open_file *open_of(const struct fuse_file_info *fi)
{
	return fi ? (struct open_file *)(uintptr_t)fi->fh : NULL;   /* 0 for directories */
}

static uint64_t fh_gen(const struct fuse_file_info *fi)
{
	const struct open_file *of = open_of(fi);
	return of ? of->gen : 0;
}

/* An open of ino, counted: of gets its generation (0: unknown) and the error sequence it
 * starts from. */
static void ino_open(uint64_t ino, struct open_file *of)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, true);
	of->gen = 0;
	of->err_seen = 0;
	of->direct = false;
	of->lost_err = 0;
	if (e) {
		e->opens++;
		inos.open_files++;
		e->no_caps = false;        /* each open asks the server again (another client) */
		e->no_sid = false;
		of->gen = e->gen;
		of->err_seen = arf_wq_errseq(e->wq);
		/* as Linux's errseq_sample: an error no one saw is the new descriptor's */
		of->lost_err = e->lost_err;
		e->lost_err = 0;
	}
	pthread_mutex_unlock(&inos.lock);
}

/* The last release of a hidden inode: the directory its hidden name is in (the caller
 * removes it), else 0. */
static uint64_t ino_release(uint64_t ino)
{
	uint64_t dir = 0;
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	if (e && e->opens) {
		inos.open_files--;
		if (--e->opens == 0 && e->hidden_dir) {
			dir = e->hidden_dir;
			e->hidden_dir = 0;
		}
	}
	pthread_mutex_unlock(&inos.lock);
	return dir;
}

static uint32_t ino_opens(uint64_t ino, uint64_t *hidden_dir)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	uint32_t n = e ? e->opens : 0;
	if (hidden_dir)
		*hidden_dir = e ? e->hidden_dir : 0;
	pthread_mutex_unlock(&inos.lock);
	return n;
}

static void ino_set_hidden(uint64_t ino, uint64_t dir)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	if (e)
		e->hidden_dir = dir;
	pthread_mutex_unlock(&inos.lock);
}

/* -o writeback: this client removed the last name of regular file ino (mode), which the
 * kernel still holds until forget (see setattr). */
static void ino_set_removed(uint64_t ino, uint32_t mode)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, true);
	if (e)
		e->removed_mode = mode;
	pthread_mutex_unlock(&inos.lock);
}

/* The mode ino had when this client removed its last name, or 0. */
static uint32_t ino_removed(uint64_t ino)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	uint32_t mode = e ? e->removed_mode : 0;
	pthread_mutex_unlock(&inos.lock);
	return mode;
}

/* The kernel dropped the inode (forget): nothing to remember unless it is still open. */
static void ino_forget(uint64_t ino)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	if (e && !e->opens && !e->hidden_dir && !e->wq && !e->flushing)
		ino_remove(e);
	pthread_mutex_unlock(&inos.lock);
}

/* What is known of ino's security.capability: ask (false) or answer ENODATA (true).  The
 * kernel asks for it before a write(2) to drop a file capability (file_remove_privs; on
 * FUSE that was before every write, 200 of 200, as FUSE drops the inode's S_NOSEC whenever
 * it refreshes the attributes), which would cost a run on arfd per write: so the
 * answer "absent" is kept from one ask until this client changes the name, the inode is
 * opened again or its number is reused.  Another client's setcap between an open and a
 * write here is not seen by that write (it keeps the capability the write should drop). */
static bool caps_known_absent(uint64_t ino)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	bool absent = e && e->no_caps;
	pthread_mutex_unlock(&inos.lock);
	return absent;
}

static void caps_set_absent(uint64_t ino, bool absent)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, absent);
	if (e)
		e->no_caps = absent;
	pthread_mutex_unlock(&inos.lock);
}

/* The same for the setuid and setgid bits a write by another user than root clears. */
static bool sid_known_clear(uint64_t ino)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	bool clear = e && e->no_sid;
	pthread_mutex_unlock(&inos.lock);
	return clear;
}

static void sid_set_clear(uint64_t ino, bool clear)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, clear);
	if (e)
		e->no_sid = clear;
	pthread_mutex_unlock(&inos.lock);
}

static bool is_caps(const char *name)
{
	return !strcmp(name, "security.capability");
}

/* The write queue of ino (arf_data.h, write-behind), counted as used until wq_put; make:
 * a new one when there is none (NULL: out of memory, or not open here).  The writes of an
 * open file go through it; everything else that must see them (read, getattr, setattr,
 * flush, fsync, release) drains it first. */
static struct arf_wq *wq_get(struct arf_fs *fs, uint64_t ino, bool make)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	struct arf_wq *q = e ? e->wq : NULL;
	if (!q && make && e && e->opens)
		q = e->wq = arf_wq_new(fs->d, ino);
	if (q)
		e->wq_users++;
	pthread_mutex_unlock(&inos.lock);
	return q;
}

/* Done with q; the last user after the last close frees it (flushing what is left).  An
 * error no descriptor was told of stays with the inode (lost_err) until the next open or
 * the kernel's forget, as Linux keeps a writeback error in the inode's mapping: the pages
 * of a mapping are written at munmap, after the file's last close.  The return: that
 * error, or 0. */
static int wq_put(uint64_t ino, struct arf_wq *q)
{
	pthread_mutex_lock(&inos.lock);
	struct ino_slot *e = ino_find(ino, false);
	bool last = false;
	if (e && e->wq == q && --e->wq_users == 0 && !e->opens) {
		e->wq = NULL;
		e->flushing++;             /* an fsync meanwhile waits for its error (wq_flush_fi) */
		last = true;
	}
	pthread_mutex_unlock(&inos.lock);
	if (!last)
		return 0;
	int rc = arf_wq_flush(q);
	arf_wq_free(q);
	pthread_mutex_lock(&inos.lock);
	e = ino_find(ino, rc < 0);         /* (flushing kept the slot: it is there) */
	if (e) {
		if (rc < 0)
			e->lost_err = rc;
		if (e->flushing)
			e->flushing--;
	}
	pthread_cond_broadcast(&inos.flushed);
	pthread_mutex_unlock(&inos.lock);
	return rc;
}

/* Wait until this client's queued writes of ino are applied (errors kept for the close). */
static void wq_drain(struct arf_fs *fs, uint64_t ino)
{
	struct arf_wq *q = wq_get(fs, ino, false);
	if (q) {
		arf_wq_drain(q);
		wq_put(ino, q);
	}
}

static void hidden_name(uint64_t ino, char out[40])
{
	snprintf(out, 40, ".arf-hidden-%" PRIu64, ino);
}

static void fill_entry(struct arf_fs *fs, uint64_t ino, const struct arf_attr *at,
                       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = (fuse_ino_t)ino;
	e->generation = at->gen;
	uint64_t end = gen_put(ino, at->gen);
	to_stat(ino, at, &e->attr);
	if ((off_t)end > e->attr.st_size)
		e->attr.st_size = (off_t)end;   /* writes of ours not applied yet */
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
}

/* The answer of an operation that found or made an entry together with its attributes
 * (the *_attr calls: one run each): the entry, or the error. */
static void reply_entry(fuse_req_t req, int64_t ino, const struct arf_attr *at)
{
	if (ino < 0) {
		reply_errno(req, ino);
		return;
	}
	struct fuse_entry_param e;
	fill_entry(fs_of(req), (uint64_t)ino, at, &e);
	fuse_reply_entry(req, &e);
}

/* A cluster's description, /.arf-cluster (and /.arf-cluster.new while `arf cluster`
 * replaces it), names the data servers of every file: removed, renamed, linked or written
 * through a mount, it would cut every client off its data (the next mount: "not a
 * cluster").  `arf cluster init` and `move` make it with libarf, never through a mount, so
 * the mount refuses every change to it (EPERM) and leaves it readable. */
static bool desc_name(const struct arf_fs *fs, uint64_t parent, const char *name)
{
	size_t n = strlen(ARF_CLUSTER_FILE);
	return fs->cl && parent == FUSE_ROOT_ID && !strncmp(name, ARF_CLUSTER_FILE, n) &&
	       (!name[n] || !strcmp(name + n, ".new"));
}

static bool desc_ino(const struct arf_fs *fs, uint64_t ino)
{
	return fs->cl && arf_data_is_desc(fs->d, ino);
}

static void arf_lookup_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fs *fs = fs_of(req);
	struct arf_attr at;
	uint64_t ep = noxa_epoch();
	int64_t ino = arf_lookup_attr(fs->c, parent, name, &at);
	if (ino > 0)
		noxa_note(fs, (uint64_t)ino, &at, ep);
	if (ino > 0 && desc_name(fs, parent, name) && !strcmp(name, ARF_CLUSTER_FILE))
		arf_data_desc_seen(fs->d, (uint64_t)ino);   /* (a cluster move renamed a new one in) */
	reply_entry(req, ino, &at);
}

static void reply_attr(fuse_req_t req, fuse_ino_t ino, const struct arf_attr *at, uint64_t ep);

static void arf_getattr_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	struct arf_attr at;
	if (dira_get(ino, &at)) {      /* a directory, as an unlink here just left it */
		struct stat st;
		to_stat(ino, &at, &st);
		fuse_reply_attr(req, &st, fs->attr_timeout);
		return;
	}
	wq_drain(fs, ino);             /* the size and times our queued writes will give */
	uint64_t ep = noxa_epoch();
	int rc = arf_getattr(fs->c, ino, &at);
	if (rc < 0) {
		reply_errno(req, rc == -EINVAL ? -ENOENT : rc);
		return;
	}
	reply_attr(req, ino, &at, ep);
}

/* The attributes at of ino, read by a run that began at noxa epoch ep, as the answer. */
static void reply_attr(fuse_req_t req, fuse_ino_t ino, const struct arf_attr *at, uint64_t ep)
{
	struct arf_fs *fs = fs_of(req);
	noxa_note(fs, ino, at, ep);
	struct stat st;
	to_stat(ino, at, &st);
	uint64_t hidden;
	if (ino_opens(ino, &hidden) && hidden && st.st_nlink > 0)
		st.st_nlink--;             /* the hidden name is not a link the user made */
	fuse_reply_attr(req, &st, fs->attr_timeout);
}

/* ---- POSIX ACLs ----
 * With FUSE_CAP_POSIX_ACL the kernel checks access against the ACLs it reads through
 * getxattr and validates the ones it sets, and leaves the rest to the filesystem (libfuse's
 * fuse_common.h): the mode follows an access ACL (the group bits are the mask's), an ACL
 * equal to the mode is stored as none, a chmod changes the ACL's entries for owner, mask
 * (or group) and others, and a new inode takes its directory's default ACL (posix_acl_create)
 * or, when there is none, the umask, which the kernel then no longer applies
 * (FUSE_CAP_DONT_MASK).  The value is Linux's xattr form: u32 version 2, then per entry
 * u16 tag, u16 perm, u32 id, little-endian. */
#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
enum { ACL_VERSION = ARF_ACL_VERSION, ACL_HDR = ARF_ACL_HDR, ACL_ENTRY = ARF_ACL_ENTRY };
enum { ACL_USER_OBJ = ARF_ACL_USER_OBJ, ACL_GROUP_OBJ = ARF_ACL_GROUP_OBJ,
       ACL_MASK = ARF_ACL_MASK, ACL_OTHER = ARF_ACL_OTHER };
#define ACL_MAX ((ARF_XATTR_VALUE_MAX - ACL_HDR) / ACL_ENTRY)

struct acl {
	unsigned n;
	struct { uint16_t tag, perm; uint32_t id; } e[ACL_MAX];
};

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Decode len bytes into a: 0, or -EINVAL when they are not an ACL with exactly one owner,
 * group and other entry (an image's bytes are checked as a caller's are). */
static int acl_decode(const void *v, size_t len, struct acl *a)
{
	const uint8_t *p = v;
	if (len < ACL_HDR || (len - ACL_HDR) % ACL_ENTRY || le32_at(p) != ACL_VERSION ||
	    (len - ACL_HDR) / ACL_ENTRY > ACL_MAX)
		return -EINVAL;
	a->n = (unsigned)((len - ACL_HDR) / ACL_ENTRY);
	unsigned base = 0;
	for (unsigned i = 0; i < a->n; i++) {
		const uint8_t *q = p + ACL_HDR + i * ACL_ENTRY;
		a->e[i].tag = (uint16_t)(q[0] | q[1] << 8);
		a->e[i].perm = (uint16_t)(q[2] | q[3] << 8);
		a->e[i].id = le32_at(q + 4);
		if (a->e[i].perm & ~7u)
			return -EINVAL;
		if (a->e[i].tag == ACL_USER_OBJ || a->e[i].tag == ACL_GROUP_OBJ ||
		    a->e[i].tag == ACL_OTHER)
			base++;
	}
	return base == 3 ? 0 : -EINVAL;
}

static size_t acl_encode(const struct acl *a, uint8_t *p)
{
	p[0] = ACL_VERSION, p[1] = p[2] = p[3] = 0;
	for (unsigned i = 0; i < a->n; i++) {
		uint8_t *q = p + ACL_HDR + i * ACL_ENTRY;
		q[0] = (uint8_t)a->e[i].tag, q[1] = (uint8_t)(a->e[i].tag >> 8);
		q[2] = (uint8_t)a->e[i].perm, q[3] = (uint8_t)(a->e[i].perm >> 8);
		for (int b = 0; b < 4; b++)
			q[4 + b] = (uint8_t)(a->e[i].id >> (8 * b));
	}
	return ACL_HDR + (size_t)a->n * ACL_ENTRY;
}

/* The 0777 bits an access ACL gives (posix_acl_equiv_mode); *equiv: the ACL says no more
 * than those bits (no named entries, no mask), so it is stored as none. */
static unsigned acl_perm(const struct acl *a, bool *equiv)
{
	unsigned u = 0, g = 0, o = 0, m = 8;
	*equiv = true;
	for (unsigned i = 0; i < a->n; i++)
		switch (a->e[i].tag) {
		case ACL_USER_OBJ: u = a->e[i].perm; break;
		case ACL_GROUP_OBJ: g = a->e[i].perm; break;
		case ACL_OTHER: o = a->e[i].perm; break;
		case ACL_MASK: m = a->e[i].perm; *equiv = false; break;
		default: *equiv = false; break;
		}
	return u << 6 | (m != 8 ? m : g) << 3 | o;
}

/* chmod of an inode with access ACL a: owner, mask (group without one) and others take
 * mode's bits (posix_acl_chmod). */
static void acl_chmod(struct acl *a, unsigned mode)
{
	bool mask = false;
	for (unsigned i = 0; i < a->n; i++)
		mask |= a->e[i].tag == ACL_MASK;
	for (unsigned i = 0; i < a->n; i++) {
		uint16_t t = a->e[i].tag;
		if (t == ACL_USER_OBJ)
			a->e[i].perm = (mode >> 6) & 7;
		else if (t == ACL_MASK || (t == ACL_GROUP_OBJ && !mask))
			a->e[i].perm = (mode >> 3) & 7;
		else if (t == ACL_OTHER)
			a->e[i].perm = mode & 7;
	}
}

/* The access ACL a new inode gets from its directory's default ACL a (changed in place),
 * and its 0777 bits in *mode: each class is cut to what both allow (posix_acl_create_masq).
 * True when the result says more than the mode (it must be stored). */
static bool acl_create_masq(struct acl *a, unsigned *mode)
{
	bool not_equiv = false;
	int group = -1, mask = -1;
	for (unsigned i = 0; i < a->n; i++)
		switch (a->e[i].tag) {
		case ACL_USER_OBJ:
			a->e[i].perm &= (*mode >> 6) & 7;
			*mode &= (unsigned)a->e[i].perm << 6 | ~0700u;
			break;
		case ACL_OTHER:
			a->e[i].perm &= *mode & 7;
			*mode &= a->e[i].perm | ~0007u;
			break;
		case ACL_GROUP_OBJ: group = (int)i; break;
		case ACL_MASK: mask = (int)i; not_equiv = true; break;
		default: not_equiv = true; break;
		}
	int k = mask >= 0 ? mask : group;
	if (k >= 0) {
		a->e[k].perm &= (*mode >> 3) & 7;
		*mode &= (unsigned)a->e[k].perm << 3 | ~0070u;
	}
	return not_equiv;
}

/* What a new inode (not a symlink) in dir gets when the kernel enforces ACLs: its 0777
 * bits in *mode (umask applied when dir has no default ACL, ctx's), and in *acc / *def
 * the access ACL and default ACL to store (their lengths; 0: none).  0 or -errno. */
struct new_acl {
	size_t acc_len, def_len;
	uint8_t acc[ARF_XATTR_VALUE_MAX], def[ARF_XATTR_VALUE_MAX];
};

static int acl_for_new(struct arf_fs *fs, uint64_t dir, bool isdir, unsigned *mode,
                       mode_t umask, struct new_acl *na)
{
	na->acc_len = na->def_len = 0;
	/* a directory known to have no xattrs has no default ACL: no run (untar's creates) */
	int64_t v = noxa_known(dir) ? -ENODATA
	                            : arf_getxattr(fs->c, dir, ACL_DEFAULT, na->def, sizeof na->def);
	if (v == -ENODATA) {
		*mode &= ~(unsigned)umask;
		return 0;
	}
	if (v < 0)
		return (int)v;
	static __thread struct acl a;
	if (acl_decode(na->def, (size_t)v, &a) != 0)
		return -EIO;                   /* the image holds a damaged ACL */
	if (isdir)
		na->def_len = (size_t)v;
	if (acl_create_masq(&a, mode))
		na->acc_len = acl_encode(&a, na->acc);
	return 0;
}

/* Store what acl_for_new decided on the new inode: 0 or -errno (the inode stays, with the
 * mode that already leaves out what the ACL would have allowed). */
static int acl_store_new(struct arf_fs *fs, uint64_t ino, const struct new_acl *na)
{
	int rc = 0;
	if (!na->acc_len && !na->def_len)
		return 0;
	noxa_forget(ino);
	if (na->acc_len)
		rc = arf_setxattr(fs->c, ino, ACL_ACCESS, na->acc, na->acc_len, 0);
	if (rc == 0 && na->def_len)
		rc = arf_setxattr(fs->c, ino, ACL_DEFAULT, na->def, na->def_len, 0);
	noxa_forget(ino);
	return rc;
}

/* mk (mkdir, mknod, create) with the ACLs applied: the inode or -errno, its attributes in
 * at, the parent's after it in dirat (mode 0: not known). */
static int64_t make_with_acl(fuse_req_t req, uint64_t parent, const char *name, mode_t mode,
                             uint64_t rdev, struct arf_attr *at, struct arf_attr *dirat)
{
	struct arf_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	static __thread struct new_acl na;
	unsigned perm = mode & 0777;
	dirat->mode = 0;
	if (desc_name(fs, parent, name))
		return -EPERM;
	if (fs->acl) {
		int rc = acl_for_new(fs, parent, S_ISDIR(mode), &perm, ctx->umask, &na);
		if (rc < 0)
			return rc;
	}
	mode = (mode & ~(mode_t)0777) | perm;
	uint64_t ep = noxa_epoch();
	int64_t ino = S_ISDIR(mode)
	              ? arf_mkdir_attrs(fs->c, parent, name, mode & 07777, ctx->uid, ctx->gid, at,
	                                dirat)
	              : arf_mknod_attrs(fs->c, parent, name, mode & (S_IFMT | 07777), rdev, ctx->uid,
	                                ctx->gid, at, dirat);
	if (ino >= 0 && fs->acl) {
		int rc = acl_store_new(fs, (uint64_t)ino, &na);
		if (rc < 0)
			return rc;
	}
	if (ino > 0)                   /* (ACLs stored just now moved the epoch: not noted) */
		noxa_note(fs, (uint64_t)ino, at, ep);
	return ino;
}

static void arf_mkdir_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct dira_tok mine = dira_begin(parent);
	struct arf_attr at, dirat;
	int64_t ino = make_with_acl(req, parent, name, S_IFDIR | (mode & 07777), 0, &at, &dirat);
	dira_finish(fs_of(req), mine, parent, &dirat);
	reply_entry(req, ino, &at);
}

static void arf_mknod_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                         dev_t rdev)
{
	/* regular files, fifos, devices (with their number) and sockets; the kernel checked
	 * CAP_MKNOD for a device.  Opening a device node reaches this machine's device, so
	 * the mount is nodev unless -o dev says otherwise (libfuse's default). */
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) &&
	    !S_ISSOCK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct dira_tok mine = dira_begin(parent);
	struct arf_attr at, dirat;
	int64_t ino = make_with_acl(req, parent, name, mode & (S_IFMT | 07777),
	                            S_ISCHR(mode) || S_ISBLK(mode) ? (uint64_t)rdev : 0, &at, &dirat);
	dira_finish(fs_of(req), mine, parent, &dirat);
	reply_entry(req, ino, &at);
}

/* An O_APPEND descriptor bypasses this kernel's page cache (direct_io): its writes are
 * appends arfd places (see write), and the kernel would otherwise copy the bytes into its
 * cached pages at the offset it guessed from a size another client may have grown since.
 * Reads through it go to arfd too; a shared mmap of it is refused (ENODEV).  Under
 * -o writeback the kernel places appends itself, cached. */
static unsigned append_direct(const struct arf_fs *fs, const struct fuse_file_info *fi)
{
	return (fi->flags & O_APPEND) && !fs->writeback;
}

/* open(O_CREAT) of a new name: the file is made; the open itself needs no state (fh 0). */
static void arf_create_op(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                          struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	struct open_file *of = malloc(sizeof *of);   /* before the file exists: ENOMEM changes nothing */
	if (!of) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	struct dira_tok mine = dira_begin(parent);
	struct arf_attr at, dirat;
	int64_t ino = make_with_acl(req, parent, name, S_IFREG | (mode & 07777), 0, &at, &dirat);
	dira_finish(fs, mine, parent, &dirat);
	if (ino < 0) {
		free(of);
		/* The kernel looked the name up and found nothing, so it asked for a create; when
		 * another client made the name in between, open(O_CREAT) without O_EXCL must open
		 * that file, not fail with EEXIST.  The kernel cannot be handed an existing file
		 * here (it takes a created one as new: no permission check, no O_TRUNC, no
		 * following a symlink), but ESTALE makes it do the open again with every entry
		 * looked up afresh (do_filp_open's LOOKUP_REVAL pass), which finds the name and
		 * opens it as any existing file.  Once: a name removed and made again between
		 * the two passes shows as ESTALE. */
		if (ino == -EEXIST && !(fi->flags & O_EXCL))
			ino = -ESTALE;
		reply_errno(req, ino);
		return;
	}
	struct fuse_entry_param e;
	fill_entry(fs, (uint64_t)ino, &at, &e);
	ino_open((uint64_t)ino, of);
	of->gen = at.gen;            /* the data operations check it: ESTALE if reused */
	fi->fh = (uintptr_t)of;
	fi->direct_io = of->direct = append_direct(fs, fi);
	fuse_reply_create(req, &e, fi);
}

/* Under -o writeback, and on a cluster: what name in dir is before it is removed or
 * replaced (a lookup, one run more), so that a regular file whose last name goes can be
 * marked removed and its stripes removed; 0 when there is nothing to do (the caller passes
 * the result to mark_removed). */
static int64_t removable(struct arf_fs *fs, uint64_t dir, const char *name, struct arf_attr *at)
{
	if (!fs->writeback && !fs->cl)
		return 0;
	int64_t ino = arf_lookup_attr(fs->c, dir, name, at);
	return ino > 0 && S_ISREG(at->mode) && at->nlink == 1 ? ino : 0;
}

/* The last name of regular file ino went (its inode is freed): on a cluster its stripes
 * go now (docs/cluster.md: the inode first, its objects after); one that could not be
 * removed is a leak arf fsck --cluster --repair finds. */
static void remove_stripes(struct arf_fs *fs, uint64_t ino, uint64_t gen)
{
	if (!fs->cl)
		return;
	int rc = arf_data_remove(fs->d, ino, gen);
	if (rc < 0 && fs->foreground)
		fprintf(stderr, "arf mount: removing the stripes of inode %" PRIu64 ": %s\n", ino,
		        rc == -EIO ? arf_data_errmsg(fs->d) : strerror(-rc));
}

static void mark_removed(struct arf_fs *fs, int64_t ino, const struct arf_attr *at)
{
	if (ino <= 0)
		return;
	if (fs->writeback)
		ino_set_removed((uint64_t)ino, at->mode);
	remove_stripes(fs, (uint64_t)ino, at->gen);
}

/* An open file's last name is hidden rather than removed (see the inode table above). */
static void arf_unlink_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fs *fs = fs_of(req);
	struct dira_tok mine = dira_begin(parent);
	struct arf_attr none = { .mode = 0 };
	if (desc_name(fs, parent, name)) {
		dira_finish(fs, mine, parent, &none);
		fuse_reply_err(req, EPERM);
		return;
	}
	bool any_open;
	pthread_mutex_lock(&inos.lock);
	any_open = inos.open_files > 0;
	pthread_mutex_unlock(&inos.lock);
	struct arf_attr at;
	int64_t gone = 0;
	if (any_open) {
		int64_t ino = arf_lookup_attr(fs->c, parent, name, &at);
		uint64_t hidden;
		if (ino > 0 && S_ISREG(at.mode) && at.nlink == 1 &&
		    ino_opens((uint64_t)ino, &hidden) > 0 && !hidden) {
			char hname[40];
			hidden_name((uint64_t)ino, hname);
			int rc = arf_rename(fs->c, parent, name, parent, hname, 0);
			if (rc == 0)
				ino_set_hidden((uint64_t)ino, parent);
			dira_finish(fs, mine, parent, &none);
			reply_errno(req, rc);
			return;
		}
		if ((fs->writeback || fs->cl) && ino > 0 && S_ISREG(at.mode) && at.nlink == 1)
			gone = ino;
	} else {
		gone = removable(fs, parent, name, &at);
	}
	struct arf_attr dirat;
	int rc = arf_remove_attr(fs->c, parent, name, false, &dirat);
	if (rc == 0)
		mark_removed(fs, gone, &at);
	dira_finish(fs, mine, parent, &dirat);
	reply_errno(req, rc);
}

static void arf_rmdir_op(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fs *fs = fs_of(req);
	struct dira_tok mine = dira_begin(parent);
	struct arf_attr dirat;
	int rc = arf_remove_attr(fs->c, parent, name, true, &dirat);
	dira_finish(fs, mine, parent, &dirat);
	reply_errno(req, rc);
}

/* Directories keep no open state: an ARF cookie is a position that stays valid. */
static void arf_opendir_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void arf_releasedir_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

/* Directory offsets: 0 the start, 1 after ".", 2 after "..", then 2 + the ARF cookie after
 * each entry (a cookie is a byte offset of a record, never 0 after an entry).  readdirplus
 * (plus) gives each entry its attributes from the same run (readdirplus of ops.pno), so
 * `ls -l` costs one run per batch instead of one per entry; the kernel counts a lookup for
 * each such entry, which costs nothing here (forget has nothing to drop). */
static void read_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct arf_fs *fs = fs_of(req);
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	if (off < 2) {
		struct arf_attr at;
		int rc = arf_getattr(fs->c, ino, &at);
		if (rc < 0) {
			free(buf);
			reply_errno(req, rc == -EINVAL ? -ENOENT : rc);
			return;
		}
		/* "." and "..": the kernel takes no lookup for them; ino 0 in the entry */
		const char *names[2] = { ".", ".." };
		uint64_t inos[2] = { ino, at.parent ? at.parent : ino };
		for (int k = (int)off; k < 2; k++) {
			e.attr.st_ino = inos[k];
			e.attr.st_mode = S_IFDIR;
			size_t n = plus ? fuse_add_direntry_plus(req, buf + used, size - used, names[k], &e,
			                                         k + 1)
			                : fuse_add_direntry(req, buf + used, size - used, names[k], &e.attr,
			                                    k + 1);
			if (n > size - used)
				goto done;
			used += n;
		}
		off = 2;
	}
	uint64_t cookie = (uint64_t)off - 2;
	/* a batch about as large as the buffer holds (entries of ~32 bytes with short names;
	 * with attributes about 150) */
	unsigned max = (unsigned)(size / (plus ? 150 : 32) + 1);
	if (max > 1024)
		max = 1024;
	struct arf_dirent *ents = malloc(max * sizeof *ents);
	struct arf_attr *attrs = plus ? malloc(max * sizeof *attrs) : NULL;
	if (!ents || (plus && !attrs)) {
		free(ents);
		free(attrs);
		free(buf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (;;) {
		uint64_t next = cookie;
		uint64_t ep = noxa_epoch();
		int n = plus ? arf_readdirplus(fs->c, ino, &next, ents, attrs, max)
		             : arf_readdir(fs->c, ino, &next, ents, max);
		if (n < 0) {
			free(ents);
			free(attrs);
			if (used)   /* what was gathered is good; the error comes again next call */
				fuse_reply_buf(req, buf, used);
			else
				reply_errno(req, n);
			free(buf);
			return;
		}
		int k;
		for (k = 0; k < n; k++) {
			off_t eoff = (off_t)(ents[k].cookie + 2);
			size_t len;
			if (plus) {
				if (attrs[k].mode == 0)
					continue;      /* removed between the listing and its getattr */
				noxa_note(fs, ents[k].ino, &attrs[k], ep);
				fill_entry(fs, ents[k].ino, &attrs[k], &e);
				len = fuse_add_direntry_plus(req, buf + used, size - used, ents[k].name, &e,
				                             eoff);
			} else {
				e.attr.st_ino = ents[k].ino;
				e.attr.st_mode = (mode_t)ents[k].type << 12;   /* DT_* is S_IF* >> 12 */
				len = fuse_add_direntry(req, buf + used, size - used, ents[k].name, &e.attr,
				                        eoff);
			}
			if (len > size - used)
				break;
			used += len;
		}
		if (k < n || next == 0 || n == 0)
			break;
		cookie = next;
	}
	free(ents);
	free(attrs);
done:
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void arf_readdir_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, false);
}

static void arf_readdirplus_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                               struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, true);
}

static void arf_statfs_op(fuse_req_t req, fuse_ino_t ino)
{
	struct arf_fs *fs = fs_of(req);
	struct arc_exec x = { 0 };
	int64_t rc = arf_seg_run(&fs->statfs, &x, "statfs", NULL, 0, NULL, 0);
	uint64_t f[6];
	if (rc < 0 || x.out_len != sizeof f) {
		if (fs->foreground)
			fprintf(stderr, "arf mount: %s\n", rc < 0 ? fs->statfs.msg : "statfs: short output");
		free(x.out);
		fuse_reply_err(req, EIO);
		return;
	}
	memcpy(f, x.out, sizeof f);
	free(x.out);
	if (fs->cl) {
		/* a cluster: the inodes are the metadata image's, the blocks the data servers' */
		char msg[512];
		if (arf_cluster_space(fs->cl, &f[1], &f[2], msg, sizeof msg) != 0) {
			if (fs->foreground)
				fprintf(stderr, "arf mount: statfs: %s\n", msg);
			fuse_reply_err(req, EIO);
			return;
		}
	}
	struct statvfs sv;
	memset(&sv, 0, sizeof sv);
	sv.f_bsize = sv.f_frsize = f[0];
	sv.f_blocks = f[1];
	sv.f_bfree = sv.f_bavail = f[2];
	sv.f_files = f[3];
	sv.f_ffree = sv.f_favail = f[4];
	sv.f_namemax = f[5];
	fuse_reply_statfs(req, &sv);
}

/* ---- files ---- */

/* The per-open state (fh) is a struct open_file: the generation the data operations check,
 * from the table above, and the write errors seen.  Close-to-open consistency with other clients: keep_cache 0 makes the
 * kernel drop the file's cached pages at each open, and the cached attributes are marked
 * stale (offset -1: attributes only), so a read that reaches the cached end of file asks
 * for the size again instead of stopping at a length another client has since changed. */
static void arf_open_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	if ((fi->flags & O_ACCMODE) != O_RDONLY && desc_ino(fs, ino)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (fs->attr_timeout > 0 && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	arf_data_opened(fs->d);        /* a cluster's reads ask for the size again */
	struct open_file *of = malloc(sizeof *of);
	if (!of) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ino_open(ino, of);
	fi->fh = (uintptr_t)of;
	fi->keep_cache = 0;
	fi->direct_io = of->direct = append_direct(fs, fi);
	fuse_reply_open(req, fi);
}

static void arf_release_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	/* What flush did not see (a mapping's pages, written at munmap after the close) is
	 * not reported here: the descriptors still open report it at their close or fsync,
	 * and after the last one the inode keeps it for the next open (wq_put). */
	struct arf_wq *q = wq_get(fs, ino, false);
	if (q)
		arf_wq_drain(q);
	free(open_of(fi));
	fi->fh = 0;
	uint64_t dir = ino_release(ino);
	int rc = q ? wq_put(ino, q) : 0;
	if (rc < 0 && fs->foreground)
		fprintf(stderr, "arf mount: writes of inode %" PRIu64 " after its last close: %s "
		        "(reported to its next open)\n", (uint64_t)ino, strerror(-rc));
	if (dir) {
		/* the last close of a file unlinked while open: now it goes (a change of dir) */
		char name[40];
		hidden_name(ino, name);
		struct arf_attr at;
		int64_t gone = fs->cl ? removable(fs, dir, name, &at) : 0;
		dira_touch(dir);
		int rc = arf_unlink(fs_of(req)->c, dir, name);
		dira_touch(dir);
		if (rc < 0 && fs_of(req)->foreground)
			fprintf(stderr, "arf mount: removing %s: %s\n", name, strerror(-rc));
		if (rc == 0 && gone == (int64_t)ino)
			remove_stripes(fs, ino, at.gen);
	}
	fuse_reply_err(req, 0);
}

/* Wait for the file's queued writes: 0, or an error of them this descriptor was not told
 * of yet (each open file description is told once: arf_data.h, errseq). */
static int wq_flush_fi(struct arf_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_wq *q = wq_get(fs, ino, false);
	struct open_file *of = open_of(fi);
	int rc = 0;
	if (q) {
		rc = of ? arf_wq_flush_seen(q, &of->err_seen) : arf_wq_flush(q);
		wq_put(ino, q);
	}
	if (rc == 0 && of && of->lost_err) {
		rc = of->lost_err;       /* from before this descriptor was opened */
		of->lost_err = 0;
	}
	if (rc == 0 && of) {
		/* ... or from while it was opening: the last release's flush (wq_put) keeps its
		 * error on the inode only once its writes are back, and an open between its
		 * letting go of the queue and that moment took the inode's lost_err still 0 (a
		 * mapping's pages written at munmap, then open and fsync: the error was lost, seen
		 * once in make check-asan).  Linux reports a writeback error to a descriptor open
		 * when it happened, so this one takes it. */
		pthread_mutex_lock(&inos.lock);
		struct ino_slot *e = ino_find(ino, false);
		/* ... and from a flush still going: the kernel sends a descriptor's RELEASE
		 * without waiting for it, so the release of the mapping's file (after munmap) can
		 * still be applying its writes when the next open's fsync comes, which answered
		 * ok and left the ENOSPC to the fsync after (make check-asan, once).  The flush is
		 * bounded by the data requests' timeouts; re-found by number, as slots move. */
		while (e && e->flushing) {
			pthread_cond_wait(&inos.flushed, &inos.lock);
			e = ino_find(ino, false);
		}
		if (e && e->lost_err) {
			rc = e->lost_err;
			e->lost_err = 0;
		}
		pthread_mutex_unlock(&inos.lock);
	}
	return rc;
}

/* close (each close of a descriptor): every write queued so far is applied by arfd before
 * the answer, which carries an error of those this descriptor was not told of (ENOSPC,
 * EIO, ...): close-to-open, and no write is lost silently. */
static void arf_flush_op(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = wq_flush_fi(fs_of(req), ino, fi);
	if (rc < 0)
		reply_data_errno(req, rc);
	else
		fuse_reply_err(req, 0);
}

static void arf_read_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	wq_drain(fs, ino);             /* our own writes first */
	int64_t n = arf_read_gen(fs->d, ino, fh_gen(fi), (uint64_t)off, buf, size);
	if (n < 0)
		reply_data_errno(req, n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* SEEK_DATA and SEEK_HOLE (the kernel answers the other kinds of lseek itself): from the
 * file's extents in arfd, after our own queued writes have landed there. */
static void arf_lseek_op(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                         struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	wq_drain(fs, ino);
	int64_t at = arf_seek_gen(fs->d, ino, fh_gen(fi), (uint64_t)off, whence);
	if (at < 0)
		reply_data_errno(req, at);
	else
		fuse_reply_lseek(req, (off_t)at);
}

/* fallocate.  Mode 0, and KEEP_SIZE inside the size: blocks for the range's holes (zeroed
 * by arfd), the size raised by mode 0; blocks past the size cannot be held (the extents of a
 * file lie below its size: File data).  PUNCH_HOLE (always with KEEP_SIZE, the kernel checks):
 * data.c's punch.  ZERO_RANGE: a punch, then blocks for the range as mode 0 gives them (with
 * KEEP_SIZE only below the size); between the two the range is a hole, which reads as the
 * zeros it will hold.  COLLAPSE_RANGE and INSERT_RANGE (tmpfs has neither) are EOPNOTSUPP.
 * Our queued writes of the file land first (as for SEEK_DATA): the size they make counts, and
 * a punch must not be undone by a write queued before it.  The kernel drops its cached pages
 * of a punched or zeroed range itself (fuse_file_fallocate); the mount caches no data. */
static void arf_fallocate_op(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                             struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	bool keep = (mode & FALLOC_FL_KEEP_SIZE) != 0;
	int kind = mode & ~FALLOC_FL_KEEP_SIZE;
	if (kind != 0 && kind != FALLOC_FL_PUNCH_HOLE && kind != FALLOC_FL_ZERO_RANGE) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (kind == FALLOC_FL_PUNCH_HOLE && !keep) {
		fuse_reply_err(req, EOPNOTSUPP);         /* as vfs_fallocate */
		return;
	}
	wq_drain(fs, ino);
	uint64_t gen = fh_gen(fi), o = (uint64_t)off, n = (uint64_t)len;
	int rc = 0;
	if (kind != 0)
		rc = arf_punch_gen(fs->d, ino, gen, o, n);
	if (rc == 0 && kind == FALLOC_FL_ZERO_RANGE && keep) {
		/* blocks only below the size: past it the range stays a hole (reads as zeros) */
		struct arf_attr at;
		rc = arf_getattr(fs->c, ino, &at);
		n = rc < 0 || o >= at.size ? 0 : at.size - o < n ? at.size - o : n;
	}
	if (rc == 0 && kind != FALLOC_FL_PUNCH_HOLE && n > 0)
		rc = arf_allocate_gen(fs->d, ino, gen, o, n, keep);
	if (rc < 0)
		reply_data_errno(req, rc);
	else
		fuse_reply_err(req, 0);
}

/* A write through a direct_io descriptor (O_APPEND, see Appends) does not pass the
 * kernel's file_remove_privs, which before other writes drops security.capability and, for
 * a writer without CAP_FSETID, setuid and setgid-with-group-execute (should_remove_suid: a
 * changed program must not keep its privileges).  Done here instead: a request carries the
 * writer's uid, not its capabilities, so uid 0 stands for CAP_FSETID (as for trusted.*).
 * One run for each while what it would find is not known (caps_known_absent, or an inode
 * known to have no xattrs at all: noxa_known). */
static int drop_privs(struct arf_fs *fs, uint64_t ino, uid_t writer)
{
	if (!fs->noxattr && !caps_known_absent(ino) && !noxa_known(ino)) {
		int64_t v = arf_getxattr(fs->c, ino, "security.capability", NULL, 0);
		if (v >= 0)
			v = arf_removexattr(fs->c, ino, "security.capability");
		if (v < 0 && v != -ENODATA)
			return (int)v;
		caps_set_absent(ino, true);
	}
	if (writer != 0 && !sid_known_clear(ino)) {
		struct arf_attr at;
		int rc = arf_getattr(fs->c, ino, &at);
		if (rc < 0)
			return rc;
		uint32_t kill = S_ISUID | (at.mode & S_IXGRP ? S_ISGID : 0);
		if (at.mode & kill) {
			struct arf_setattr sa = { .valid = ARF_SET_MODE, .mode = at.mode & 07777 & ~kill };
			rc = arf_setattr(fs->d, ino, &sa);
			if (rc < 0)
				return rc;
			if (fs->se)            /* the kernel's cached mode is the old one */
				fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
		}
		sid_set_clear(ino, true);
	}
	return 0;
}

/* Queued (write-behind, arf_data.h): the answer comes before arfd applied the bytes; a
 * failure shows at a later write, fsync or close of the file.  Without a queue (out of
 * memory) the write is applied before the answer, as before.
 *
 * A write through an O_APPEND descriptor (the write's own flags, so fcntl's O_APPEND
 * counts) is data.c's append: arfd puts the bytes at the size it finds, whatever this
 * kernel believes the size is (it computed off from its cached attributes, which another
 * client's appends leave behind); it waits for the writes queued before it and for arfd,
 * and its error is its own.  Not under -o writeback: there the kernel keeps the size and
 * writes cached pages at offsets of its own, long after the write (docs/arf.md). */
static void arf_write_op(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
                         off_t off, struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	bool append = (fi->flags & O_APPEND) && !fi->writepage && !fs->writeback && size > 0;
	const struct open_file *of = open_of(fi);
	if (append && of && of->direct) {
		int rc = drop_privs(fs, ino, fuse_req_ctx(req)->uid);
		if (rc < 0) {
			reply_errno(req, rc);
			return;
		}
	}
	struct arf_wq *q = fs->sync_writes ? NULL : wq_get(fs, ino, !append);
	uint64_t at = (uint64_t)off;
	int64_t n;
	if (append && q)
		n = arf_wq_append(q, fh_gen(fi), buf, size, &at);
	else if (append)
		n = arf_append_gen(fs->d, ino, fh_gen(fi), buf, size, &at);
	else if (q)
		n = arf_wq_write(q, fh_gen(fi), (uint64_t)off, buf, size);
	else
		n = arf_write_gen(fs->d, ino, fh_gen(fi), (uint64_t)off, buf, size);
	if (q)
		wq_put(ino, q);
	if (n < 0) {
		reply_data_errno(req, n);
		return;
	}
	/* Pages this kernel cached of the range the bytes went to (another descriptor's read
	 * of the old last block) are stale now.  A direct_io descriptor's write holds no page
	 * of the cache while it waits for the answer, so they are dropped before it: a read
	 * after the write returned sees the bytes.  A descriptor given O_APPEND by fcntl
	 * writes through the cache, holding the pages it copied into (at the offset the
	 * kernel guessed): those are dropped too, after the answer, or the kernel would wait
	 * for itself. */
	bool before = of && of->direct;
	if (append && n > 0 && fs->se && before)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, (off_t)at, (off_t)n);
	fuse_reply_write(req, (size_t)n);
	if (append && n > 0 && fs->se && !before) {
		fuse_lowlevel_notify_inval_inode(fs->se, ino, (off_t)at, (off_t)n);
		if (at != (uint64_t)off)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, off, (off_t)n);
	}
}

static void arf_fsync_op(fuse_req_t req, fuse_ino_t ino, int datasync,
                         struct fuse_file_info *fi)
{
	/* the queued writes are applied, then made durable */
	int rc = wq_flush_fi(fs_of(req), ino, fi);
	if (rc == 0)
		rc = arf_fsync_gen(fs_of(req)->d, ino, fh_gen(fi));
	if (rc < 0)
		reply_data_errno(req, rc);
	else
		fuse_reply_err(req, 0);
}

/* A time set by utimensat as ARF keeps it, in signed 64-bit nanoseconds (1677 to 2262): one
 * outside that range is clamped to the nearest it can hold, as Linux clamps a time to the
 * range of a local filesystem (timestamp_truncate), never wrapped into another date. */
static int64_t ns_of(const struct timespec *ts)
{
	__int128 ns = (__int128)ts->tv_sec * 1000000000 + ts->tv_nsec;
	return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : (int64_t)ns;
}

/* chmod, chown, truncate, utimens: the size first (shrinking frees blocks, growing leaves a
 * hole), then the other fields in one run; the reply carries the attributes read after. */
static void arf_setattr_op(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                           struct fuse_file_info *fi)
{
	struct arf_fs *fs = fs_of(req);
	int rc = 0;
	if (desc_ino(fs, ino) && (to_set & ~(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* -o writeback: when this client removed a regular file's last name (unlink, or a
	 * rename over it), the kernel sends the file's new ctime and mtime right after
	 * (fuse_unlink -> fuse_update_ctime -> fuse_flush_time_update).  The inode is free on
	 * the server, so that would be ENOENT, which the kernel keeps as a writeback error of
	 * the whole mount: the next syncfs of any process returned it.  Nothing is left to
	 * change: answered as done (the kernel does not use these attributes).  No path
	 * reaches the file any more, and an open one was hidden instead, unless a rename
	 * replaced it: that one is gone on the server either way. */
	uint32_t rm_mode = ino_removed(ino);
	if (rm_mode && !(to_set & ~(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	                            FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
	                            FUSE_SET_ATTR_CTIME))) {
		struct stat st = { .st_ino = ino, .st_mode = rm_mode, .st_nlink = 0,
		                   .st_atim = attr->st_atim, .st_mtim = attr->st_mtim,
		                   .st_ctim = attr->st_ctim };
		fuse_reply_attr(req, &st, 0);
		return;
	}
	wq_drain(fs, ino);             /* in order with our writes (truncate, utimes after them) */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = arf_truncate_gen(fs->d, ino, fh_gen(fi), (uint64_t)attr->st_size);
		if (rc < 0) {
			reply_data_errno(req, rc);
			return;
		}
	}
	struct arf_setattr sa = { 0 };
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= ARF_SET_MODE;
		sa.mode = attr->st_mode & 07777;
		sid_set_clear(ino, false);     /* may set them again: the next append looks */
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= ARF_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= ARF_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= ARF_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= ARF_SET_ATIME;
		sa.atime = ns_of(&attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= ARF_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= ARF_SET_MTIME;
		sa.mtime = ns_of(&attr->st_mtim);
	}
	/* a setattr with no field but the size still changes ctime, as chown(f, -1, -1) does
	 * on a local filesystem (the kernel sends it with nothing to set: without the
	 * writeback cache it leaves ctime to the filesystem); setattr's run always sets it */
	struct arf_attr at = { .mode = 0 };  /* ino's after the change, when setattr gives them */
	uint64_t ep = noxa_epoch();
	if (sa.valid || !(to_set & FUSE_SET_ATTR_SIZE)) {
		rc = arf_setattr_attr(fs->d, ino, &sa, &at);
		if (rc < 0) {
			reply_data_errno(req, rc);
			return;
		}
	}
	if (fs->acl && (to_set & FUSE_SET_ATTR_MODE) && !(at.mode && at.no_xattrs)) {
		/* posix_acl_chmod: the access ACL's owner, mask and other entries follow.  A
		 * second run: a crash between leaves the ACL as before the chmod.  None when
		 * setattr's own answer says the inode has no xattrs (untar's chmod of each
		 * directory it made: no getxattr, no getattr after) */
		static __thread uint8_t v[ARF_XATTR_VALUE_MAX];
		static __thread struct acl a;
		int64_t n = arf_getxattr(fs->c, ino, ACL_ACCESS, v, sizeof v);
		if (n > 0 && acl_decode(v, (size_t)n, &a) == 0) {
			acl_chmod(&a, sa.mode);
			n = arf_setxattr(fs->c, ino, ACL_ACCESS, v, acl_encode(&a, v), 0);
		}
		if (n < 0 && n != -ENODATA) {
			reply_errno(req, n);
			return;
		}
		at.mode = 0;               /* the ACL's change came after them */
	}
	if (at.mode)                   /* from setattr's own run (setattrattr): no getattr */
		reply_attr(req, ino, &at, ep);
	else
		arf_getattr_op(req, ino, fi);
}

/* ---- symlinks, hard links, rename ---- */

static void arf_symlink_op(fuse_req_t req, const char *target, fuse_ino_t parent,
                           const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct arf_attr at, dirat;
	if (desc_name(fs_of(req), parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	struct dira_tok mine = dira_begin(parent);
	int64_t ino = arf_symlink_attrs(fs_of(req)->c, parent, name, target, ctx->uid, ctx->gid,
	                                &at, &dirat);
	dira_finish(fs_of(req), mine, parent, &dirat);
	reply_entry(req, ino, &at);
}

static void arf_readlink_op(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4097];   /* targets are 1..4095 bytes */
	int n = arf_readlink(fs_of(req)->c, ino, buf, sizeof buf - 1);
	if (n < 0) {
		reply_errno(req, n);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void arf_link_op(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                        const char *newname)
{
	struct arf_attr at, dirat;
	if (desc_ino(fs_of(req), ino) || desc_name(fs_of(req), newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	struct dira_tok mine = dira_begin(newparent);
	int64_t rc = arf_link_attrs(fs_of(req)->c, ino, newparent, newname, &at, &dirat);
	dira_finish(fs_of(req), mine, newparent, &dirat);
	reply_entry(req, rc, &at);
}

/* A rename over a regular file this client has open takes the file's last name, but the
 * open descriptors must go on reading and writing it (an editor saves over a file a reader
 * has open): the file is hidden first, as unlink does, and the last release removes it
 * (NFS clients do the same, nfs_sillyrename).  The inode hidden, or 0: none needed, or
 * hiding failed, and then the rename goes on as asked (it must not fail for the mount's
 * own bookkeeping).  Costs a lookup only while some file is open here. */
static int64_t hide_target(struct arf_fs *fs, fuse_ino_t parent, const char *name,
                           fuse_ino_t newparent, const char *newname)
{
	pthread_mutex_lock(&inos.lock);
	bool any_open = inos.open_files > 0;
	pthread_mutex_unlock(&inos.lock);
	if (!any_open || (parent == newparent && !strcmp(name, newname)))
		return 0;              /* rename to itself changes nothing */
	struct arf_attr at;
	int64_t ino = arf_lookup_attr(fs->c, newparent, newname, &at);
	uint64_t hidden;
	/* nlink 1: the source is another file (one link cannot be two names) */
	if (ino <= 0 || !S_ISREG(at.mode) || at.nlink != 1 ||
	    ino_opens((uint64_t)ino, &hidden) == 0 || hidden)
		return 0;
	char hname[40];
	hidden_name((uint64_t)ino, hname);
	if (arf_rename(fs->c, newparent, newname, newparent, hname, 0) < 0)
		return 0;
	ino_set_hidden((uint64_t)ino, newparent);
	return ino;
}

/* flags: RENAME_NOREPLACE and RENAME_EXCHANGE; RENAME_WHITEOUT (overlayfs) is EINVAL, as
 * on filesystems without whiteouts. */
static void arf_rename_op(fuse_req_t req, fuse_ino_t parent, const char *name,
                          fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	if (flags & ~(ARF_RENAME_NOREPLACE | ARF_RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct arf_fs *fs = fs_of(req);
	if (desc_name(fs, parent, name) || desc_name(fs, newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* an open file the rename replaces: hidden first */
	int64_t hid = flags ? 0 : hide_target(fs, parent, name, newparent, newname);
	struct arf_attr at;              /* a file the rename replaces loses its last name */
	int64_t gone = flags & ARF_RENAME_EXCHANGE || hid ? 0
	               : removable(fs, newparent, newname, &at);
	int rc = arf_rename(fs->c, parent, name, newparent, newname, flags);
	if (rc == 0) {
		mark_removed(fs, gone, &at);
	} else if (hid) {
		/* the rename failed (no source, a directory over the file, ...): the hidden file
		 * gets its name back, unless another client took the name meanwhile (then it goes
		 * at the last close, as if that client had replaced it) */
		char hname[40];
		hidden_name((uint64_t)hid, hname);
		if (arf_rename(fs->c, newparent, hname, newparent, newname, ARF_RENAME_NOREPLACE) == 0)
			ino_set_hidden((uint64_t)hid, 0);
	}
	reply_errno(req, rc);
}

/* ---- extended attributes ----
 * The kernel checks the namespace rights before a request comes here (trusted.* needs
 * CAP_SYS_ADMIN, user.* the file's read or write permission under default_permissions,
 * user.* only on files and directories); FUSE hands over every other prefix too, which
 * ext4 refuses, so the mount does.  POSIX ACLs (system.posix_acl_*) are stored as
 * xattrs when the kernel enforces them (see ACLs above), else refused. */

static bool xattr_prefix_ok(fuse_req_t req, const char *name)
{
	if (!strcmp(name, ACL_ACCESS) || !strcmp(name, ACL_DEFAULT))
		return fs_of(req)->acl;
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9);
}

/* Refused before anything is asked, with the reply sent: true under -o noxattr (ENOSYS: the
 * kernel asks no more, fc->no_*xattr) and for a name outside the namespaces served. */
static bool xattr_refused(fuse_req_t req, const char *name)
{
	if (fs_of(req)->noxattr)
		fuse_reply_err(req, ENOSYS);
	else if (!xattr_prefix_ok(req, name))
		fuse_reply_err(req, EOPNOTSUPP);
	else
		return false;
	return true;
}

/* ---- a cluster file's stripe unit (docs/cluster.md, "A file's own stripe unit") ----
 * user.arf.stripe_unit is not stored as an xattr: setting it gives an empty regular file its
 * own unit (the layout record in its metadata inode, arf_cl_setstripe), getting it reads the
 * unit the file's bytes are striped in (its record's, or the cluster's).  Its value is the
 * unit in bytes, decimal (a K or M suffix is taken too).  Refused: ENOTSUP on a one-server
 * image, EINVAL for a value that is not a multiple of 4 KiB from 4 KiB to 4 MiB or for
 * another type, EBUSY once the file has bytes (this client's queued writes are applied
 * first; with -o writeback, bytes the kernel still caches are not seen). */
#define STRIPE_XATTR "user.arf.stripe_unit"

/* Regular file ino's attributes into at: 0, other for another type, or getattr's -errno. */
static int stripe_file(struct arf_fs *fs, fuse_ino_t ino, struct arf_attr *at, int other)
{
	int rc = arf_getattr(fs->c, ino, at);
	return rc == 0 && !S_ISREG(at->mode) ? other : rc;
}

static int stripe_xattr_set(struct arf_fs *fs, fuse_ino_t ino, const char *value, size_t size)
{
	if (!fs->cl)
		return -ENOTSUP;
	char v[32];
	uint64_t unit;
	if (size == 0 || size >= sizeof v)
		return -EINVAL;
	memcpy(v, value, size);
	v[size] = '\0';
	if (v[size - 1] == '\n')
		v[size - 1] = '\0';
	if (arf_parse_size(v, &unit) != 0 || !arf_cl_unit_ok(unit))
		return -EINVAL;
	wq_drain(fs, ino);             /* our queued writes count as bytes */
	struct arf_attr at;
	int rc = stripe_file(fs, ino, &at, -EINVAL);
	if (rc < 0)
		return rc;
	if (at.size)
		return -EBUSY;
	return arf_cl_setstripe(fs->c, arf_cluster_desc_of(fs->cl), ino, unit);
}

/* Its value into buf (size 0: only its length): the length, or -errno. */
static int64_t stripe_xattr_get(struct arf_fs *fs, fuse_ino_t ino, char *buf, size_t size)
{
	if (!fs->cl)
		return -ENODATA;
	struct arf_attr at;
	int rc = stripe_file(fs, ino, &at, -ENODATA);
	if (rc < 0)
		return rc;
	struct arf_cl_layout lay;
	char lerr[256];
	rc = arf_cl_layout(arf_cluster_desc_of(fs->cl), ino, at.layout, &lay, lerr, sizeof lerr);
	if (rc < 0)
		return rc;
	char v[16];
	int n = snprintf(v, sizeof v, "%" PRIu32, lay.unit);
	if (size && (size_t)n > size)
		return -ERANGE;
	if (size)
		memcpy(buf, v, (size_t)n);
	return n;
}

static void arf_setxattr_op(fuse_req_t req, fuse_ino_t ino, const char *name,
                            const char *value, size_t size, int flags)
{
	if (xattr_refused(req, name))
		return;
	if (!strcmp(name, STRIPE_XATTR)) {
		reply_errno(req, stripe_xattr_set(fs_of(req), ino, value, size));
		return;
	}
	if (is_caps(name))
		caps_set_absent(ino, false);
	noxa_forget(ino);
	int rc;
	if (!strcmp(name, ACL_ACCESS) || !strcmp(name, ACL_DEFAULT)) {
		/* the kernel validated it; an access ACL sets the mode in the same run, and one
		 * the mode says all of is stored as none */
		static __thread struct acl a;
		bool equiv = false;
		if (acl_decode(value, size, &a) != 0) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		if (!strcmp(name, ACL_DEFAULT)) {
			rc = arf_setxattr(fs_of(req)->c, ino, name, value, size, (unsigned)flags);
		} else {
			unsigned perm = acl_perm(&a, &equiv);
			rc = equiv ? arf_removexattr_mode(fs_of(req)->c, ino, name, (int)perm)
			           : arf_setxattr_mode(fs_of(req)->c, ino, name, value, size,
			                               (unsigned)flags, (int)perm);
			if (equiv && rc == -ENODATA) {
				/* no ACL to drop: only the mode changes (a chmod keeping 07000) */
				struct arf_attr at;
				rc = arf_getattr(fs_of(req)->c, ino, &at);
				struct arf_setattr sa = { .valid = ARF_SET_MODE,
				                          .mode = (at.mode & 07000) | perm };
				if (rc == 0)
					rc = arf_setattr(fs_of(req)->d, ino, &sa);
			}
		}
	} else {
		rc = arf_setxattr(fs_of(req)->c, ino, name, value, size, (unsigned)flags);
	}
	noxa_forget(ino);
	reply_errno(req, rc == -EINVAL ? -ENOENT : rc);     /* 0: fuse_reply_err(req, 0) */
}

static void arf_getxattr_op(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (xattr_refused(req, name))
		return;
	if ((is_caps(name) && caps_known_absent(ino)) ||
	    (strcmp(name, STRIPE_XATTR) && noxa_known(ino))) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	/* a larger buffer than any value changes nothing: ask for at most what can exist */
	char buf[ARF_XATTR_VALUE_MAX];
	size_t max = size < sizeof buf ? size : sizeof buf;
	int64_t v;
	if (!strcmp(name, STRIPE_XATTR)) {
		v = stripe_xattr_get(fs_of(req), ino, buf, max);
	} else {
		v = arf_getxattr(fs_of(req)->c, ino, name, buf, max);
		if (v == -ENODATA && is_caps(name))
			caps_set_absent(ino, true);
	}
	if (v < 0)
		reply_errno(req, v == -EINVAL ? -ENOENT : v);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)v);
	else
		fuse_reply_buf(req, buf, (size_t)v);
}

/* The names, without trusted.* for a caller other than root: ext4 and tmpfs list those only
 * to CAP_SYS_ADMIN, which a FUSE request does not carry (uid 0 stands for it). */
static void arf_listxattr_op(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (fs_of(req)->noxattr) {
		fuse_reply_err(req, ENOSYS);   /* the kernel asks no more (fc->no_*xattr) */
		return;
	}
	if (noxa_known(ino)) {
		if (size == 0)
			fuse_reply_xattr(req, 0);
		else
			fuse_reply_buf(req, NULL, 0);
		return;
	}
	char buf[ARF_XATTR_LIST_MAX];
	int64_t v = arf_listxattr(fs_of(req)->c, ino, buf, sizeof buf);
	if (v < 0) {
		reply_errno(req, v == -EINVAL ? -ENOENT : v);
		return;
	}
	size_t n = 0;
	bool admin = fuse_req_ctx(req)->uid == 0;
	for (size_t k = 0; k < (size_t)v;) {
		size_t l = strnlen(buf + k, (size_t)v - k) + 1;
		if (admin || strncmp(buf + k, "trusted.", 8)) {
			memmove(buf + n, buf + k, l);
			n += l;
		}
		k += l;
	}
	if (size == 0)
		fuse_reply_xattr(req, n);
	else if (n > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, n);
}

static void arf_removexattr_op(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (xattr_refused(req, name))
		return;
	if (is_caps(name))
		caps_set_absent(ino, false);
	int rc = arf_removexattr(fs_of(req)->c, ino, name);
	reply_errno(req, rc == -EINVAL ? -ENOENT : rc);
}

static void arf_init_op(void *userdata, struct fuse_conn_info *conn)
{
	/* 1 MiB requests (libfuse asks the kernel for max_pages to match); readahead as large */
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	/* O_TRUNC arrives as a setattr of the size, which the handler above does */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	/* -o writeback: the kernel keeps written pages and sends them in the background, several
	 * requests at once (a sequential writer no longer waits one round trip per request);
	 * close and fsync still send everything first, so close-to-open holds */
	struct arf_fs *fs = userdata;
	/* POSIX ACLs, enforced by the kernel (see ACLs); it leaves the umask to us then */
	if (!fs->noxattr && (conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		fs->acl = true;
	}
	if (fs->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

/* The kernel sends forget when it drops an inode (nlookup reaching 0 in the kernel's
 * count, which is all it ever forgets in one go but at unmount). */
static void arf_forget_op(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	ino_forget(ino);
	fuse_reply_none(req);
}

static void arf_forget_multi_op(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		ino_forget(forgets[i].ino);
	fuse_reply_none(req);
}

/* The handlers that may change a directory's attributes without keeping them (see "a
 * directory's attributes after a change in it" above): rename may change any directory,
 * between dira_begin and dira_end; setattr, setxattr and removexattr change the inode they
 * name, between two dira_touch.  (unlink, rmdir and the creates keep the parent's attributes
 * they return, release moves its hidden name's directory itself.) */
static void setattr_w(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                      struct fuse_file_info *fi)
{
	dira_touch(ino);
	arf_setattr_op(req, ino, attr, to_set, fi);
	dira_touch(ino);
}

static void rename_w(fuse_req_t req, fuse_ino_t parent, const char *name,
                     fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	dira_begin(parent);
	arf_rename_op(req, parent, name, newparent, newname, flags);
	dira_end();
}

static void setxattr_w(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                       size_t size, int flags)
{
	dira_touch(ino);
	arf_setxattr_op(req, ino, name, value, size, flags);
	dira_touch(ino);
}

static void removexattr_w(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	dira_touch(ino);
	arf_removexattr_op(req, ino, name);
	dira_touch(ino);
}

static const struct fuse_lowlevel_ops arf_ll_ops = {
	.init = arf_init_op,
	.open = arf_open_op,
	.release = arf_release_op,
	.flush = arf_flush_op,
	.read = arf_read_op,
	.lseek = arf_lseek_op,
	.fallocate = arf_fallocate_op,
	.write = arf_write_op,
	.fsync = arf_fsync_op,
	.fsyncdir = arf_fsync_op,
	.setattr = setattr_w,
	.symlink = arf_symlink_op,
	.readlink = arf_readlink_op,
	.link = arf_link_op,
	.rename = rename_w,
	.lookup = arf_lookup_op,
	.forget = arf_forget_op,
	.forget_multi = arf_forget_multi_op,
	.getattr = arf_getattr_op,
	.mkdir = arf_mkdir_op,
	.mknod = arf_mknod_op,
	.create = arf_create_op,
	.unlink = arf_unlink_op,
	.rmdir = arf_rmdir_op,
	.opendir = arf_opendir_op,
	.readdir = arf_readdir_op,
	.readdirplus = arf_readdirplus_op,
	.releasedir = arf_releasedir_op,
	.statfs = arf_statfs_op,
	.setxattr = setxattr_w,
	.getxattr = arf_getxattr_op,
	.listxattr = arf_listxattr_op,
	.removexattr = removexattr_w,
};

/* A data server that failed to answer is asked again after this (it may have been restarted);
 * meanwhile the files with bytes on it fail at once (EIO) instead of each waiting. */
#define CLUSTER_RETRY_MS 10000

/* Connect, install the operations and check the image with a statfs run: 0, or -1 with a
 * message. */
static int fs_connect(struct arf_fs *fs, const char *endpoint, const char *ops_seg,
                      const char *data_seg, const char *statfs_seg, char *err, size_t errlen)
{
	struct arc_opts ao = { .secret = getenv("ARC_SECRET"),
	                       .outage_ms = fs->outage > 0 ? (int)(fs->outage * 1000) : -1 };
	fs->a = arc_connect(endpoint, &ao, err, errlen);
	if (!fs->a)
		return -1;
	fs->c = arf_client_open(fs->a, ops_seg, err, errlen);
	if (!fs->c)
		goto fail;
	fs->d = arf_data_open(fs->a, data_seg, err, errlen);
	if (!fs->d)
		goto fail;
	if (arf_seg_open(&fs->statfs, fs->a, statfs_seg, NULL, "build/arfseg/statfs.pno", err,
	                 errlen) != 0)
		goto fail;
	struct arc_exec x = { 0 };
	int64_t rc = arf_seg_run(&fs->statfs, &x, "statfs", NULL, 0, NULL, 0);
	free(x.out);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %.900s", endpoint,
		         x.trapped ? "statfs: region arf is not an ARF image" : fs->statfs.msg);
		goto fail;
	}
	/* a cluster's metadata server: its regular files' bytes are on the data servers, which
	 * fs->d reaches from now on (arf_data_striped); a dead one is an error within about ten
	 * seconds (their timeout and outage limit), never a hang */
	struct arf_cluster_desc *desc = malloc(sizeof *desc);
	char cerr[1000];
	if (!desc || arf_cluster_read(fs->c, fs->d, desc, cerr, sizeof cerr) < 0) {
		snprintf(err, errlen, "%s: %s", endpoint, desc ? cerr : "out of memory");
		free(desc);
		goto fail;
	}
	if (desc->n) {
		struct arc_opts dao = { .secret = getenv("ARC_SECRET"),
		                        .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
		                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
		fs->cl = arf_cluster_open(fs->a, desc, &dao, ops_seg, data_seg, cerr, sizeof cerr);
		if (fs->cl)
			arf_cluster_retry(fs->cl, CLUSTER_RETRY_MS);
		if (!fs->cl || arf_data_striped(fs->d, fs->cl, fs->c) != 0) {
			snprintf(err, errlen, "%s: %s", endpoint, fs->cl ? "out of memory" : cerr);
			free(desc);
			goto fail;
		}
		/* close-to-open reads: the size a read asked for serves the reads inside it until
		 * the next open, as the kernel's attributes serve it (docs/cluster.md) */
		arf_data_read_cache(fs->d, fs->attr_timeout);
	}
	free(desc);
	return 0;
fail:
	arf_seg_close(&fs->statfs);
	arf_data_close(fs->d);
	fs->d = NULL;
	arf_cluster_close(fs->cl);
	fs->cl = NULL;
	arf_client_close(fs->c);
	fs->c = NULL;
	arc_close(fs->a);
	fs->a = NULL;
	return -1;
}

static void fs_disconnect(struct arf_fs *fs)
{
	arf_seg_close(&fs->statfs);
	arf_data_close(fs->d);
	fs->d = NULL;
	arf_cluster_close(fs->cl);     /* before the connection whose endpoint it shares */
	fs->cl = NULL;
	arf_client_close(fs->c);
	fs->c = NULL;
	if (fs->a)
		arc_close(fs->a);
	fs->a = NULL;
}

static int parse_timeout(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0) || v > 1e9)
		return -1;
	*out = v;
	return 0;
}

int arf_cmd_mount(int argc, char **argv)
{

	const char *endpoint = NULL, *mountpoint = NULL;
	struct arf_fs fs = { .attr_timeout = 1.0, .entry_timeout = 1.0, .outage = 60 };
	char *fuse_opts = NULL;     /* -o options for libfuse, comma-separated */
	size_t fo_len = 0;
	bool others_given = false;  /* -o allow_other or allow_root */
	int rc = 1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-f")) {
			fs.foreground = 1;
		} else if (!strcmp(argv[i], "-s")) {
			fs.single_thread = 1;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			char *list = strdup(argv[++i]), *save = NULL;
			for (char *o = strtok_r(list, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
				if (!strncmp(o, "attr_timeout=", 13)) {
					if (parse_timeout(o + 13, &fs.attr_timeout) != 0)
						goto bad_opt;
				} else if (!strncmp(o, "entry_timeout=", 14)) {
					if (parse_timeout(o + 14, &fs.entry_timeout) != 0)
						goto bad_opt;
				} else if (!strncmp(o, "outage=", 7)) {
					if (parse_timeout(o + 7, &fs.outage) != 0 || fs.outage > 86400)
						goto bad_opt;
				} else if (!strcmp(o, "writeback")) {
					fs.writeback = 1;
				} else if (!strcmp(o, "sync_writes")) {
					fs.sync_writes = 1;
				} else if (!strcmp(o, "noxattr")) {
					fs.noxattr = 1;
				} else {
					if (!strcmp(o, "allow_other") || !strcmp(o, "allow_root"))
						others_given = true;
					size_t l = strlen(o);
					char *nf = realloc(fuse_opts, fo_len + l + 2);
					if (!nf)
						goto bad_opt;
					fuse_opts = nf;
					if (fo_len)
						fuse_opts[fo_len++] = ',';
					memcpy(fuse_opts + fo_len, o, l + 1);
					fo_len += l;
				}
				continue;
bad_opt:
				fprintf(stderr, "arf mount: -o %s: expected a number of seconds\n", o);
				free(list);
				free(fuse_opts);
				return 2;
			}
			free(list);
		} else if (argv[i][0] != '-' && !endpoint) {
			endpoint = argv[i];
		} else if (argv[i][0] != '-' && !mountpoint) {
			mountpoint = argv[i];
		} else {
			fprintf(stderr, "arf mount: %s: unexpected argument (see arf --help)\n", argv[i]);
			free(fuse_opts);
			return 2;
		}
	}
	if (!endpoint || !mountpoint) {
		fprintf(stderr, "arf mount: needs ENDPOINT and MOUNTPOINT (see arf --help)\n");
		free(fuse_opts);
		return 2;
	}

	char err[1200];
	char *ops_seg = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	char *statfs_seg = arf_seg_path("ARF_STATFS_SEG", "statfs.pno");
	char *data_seg = arf_seg_path("ARF_DATA_SEG", "data.pno");
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	/* a first connection checks the server and the image while errors can still be told;
	 * the connection's threads would not survive daemonizing, so the one that serves is
	 * made afterwards */
	if (fs_connect(&fs, endpoint, ops_seg, data_seg, statfs_seg, err, sizeof err) != 0) {
		fprintf(stderr, "arf mount: %s\n", err);
		goto out;
	}
	if (!fs.foreground)
		fs_disconnect(&fs);

	/* Mounted by root (from fstab, a unit, or by hand), the filesystem is for every user of
	 * the machine, as an NFS mount is: allow_other lets them in and default_permissions has
	 * the kernel check each access against the stored mode, uid and gid.  A user's own
	 * mount (through fusermount3) stays that user's, FUSE's default; allow_other there
	 * needs user_allow_other in /etc/fuse.conf.  -o allow_root keeps a root mount to root
	 * (libfuse refuses the other users itself). */
	char *fsname;
	if (asprintf(&fsname, "subtype=arf,fsname=arf:%s,default_permissions%s%s%s", endpoint,
	             geteuid() == 0 && !others_given ? ",allow_other" : "",
	             fuse_opts ? "," : "",
	             fuse_opts ? fuse_opts : "") < 0)
		goto out;
	int arg_ok = fuse_opt_add_arg(&args, "arf") == 0 && fuse_opt_add_arg(&args, "-o") == 0 &&
	             fuse_opt_add_arg(&args, fsname) == 0;
	free(fsname);
	if (!arg_ok)
		goto out;
	se = fuse_session_new(&args, &arf_ll_ops, sizeof arf_ll_ops, &fs);
	if (!se)
		goto out;   /* libfuse said why (an unknown -o option, say) */
	fs.se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, mountpoint) != 0)
		goto out;
	if (!fs.foreground) {
		if (fuse_daemonize(0) != 0) {
			fuse_session_unmount(se);
			goto out;
		}
		if (fs_connect(&fs, endpoint, ops_seg, data_seg, statfs_seg, err, sizeof err) != 0) {
			fuse_session_unmount(se);
			goto out;
		}
	}
	/* 0 when unmounted, a signal number after SIGTERM/SIGINT/SIGHUP, -errno on failure */
	if (fs.single_thread) {
		rc = fuse_session_loop(se) < 0 ? 1 : 0;
	} else {
		/* requests in parallel (readahead, several processes): libarc is thread-safe and
		 * the client keeps no state of its own */
		struct fuse_loop_config lc = { .clone_fd = 0, .max_idle_threads = 16 };
		rc = fuse_session_loop_mt(se, &lc) < 0 ? 1 : 0;
	}
	fuse_session_unmount(se);
out:
	if (se) {
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	fuse_opt_free_args(&args);
	fs_disconnect(&fs);
	free(ops_seg);
	free(statfs_seg);
	free(data_seg);
	free(fuse_opts);
	return rc;
}

int arf_cmd_umount(int argc, char **argv)
{
	if (argc != 1 || argv[0][0] == '-') {
		fprintf(stderr, "arf umount: needs MOUNTPOINT (see arf --help)\n");
		return 2;
	}
	execlp("fusermount3", "fusermount3", "-u", "--", argv[0], (char *)NULL);
	fprintf(stderr, "arf umount: fusermount3: %s\n", strerror(errno));
	return 1;
}
