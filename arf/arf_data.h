/* arf_data.h: ARF file data from a client: install arf/data.c's segment in an arfd serving
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
#include <stdbool.h>
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
/* Several ranges of regular file ino in one run (data.c's readv): ranges holds n pairs
 * (off, len), n <= ARF_READV_MAX and the lens summing to at most ARF_DATA_CHUNK; their bytes
 * go to buf one after the other.  The total count (short only at EOF: the ranges after a
 * short one are not read), or -errno (-EINVAL past the limits).  On a striped file, one
 * arf_read_gen per range. */
#define ARF_READV_MAX 1024
int64_t arf_readv(struct arf_data *d, uint64_t ino, const uint64_t *ranges, unsigned n,
                  void *buf);

/* Append len bytes (1..ARF_DATA_CHUNK; -EINVAL above: an append is one run) to regular file
 * ino at its end as arfd finds it, whatever size this client believes (O_APPEND from several
 * clients): the bytes written (len, or fewer when the image filled up) and, in *at when not
 * NULL, the offset they went to; or -errno as arf_write_gen.  When free space came in
 * pieces, the first run keeps the whole range for this append and the rest is written into
 * it, so no other append lands inside.  Each call sends a fresh key (this arf_data's random
 * id << 32 | a sequence number): a repeat of the request after a reconnect to a restarted
 * arfd is answered from the record the first run left in the image, never appended twice
 * (docs/arf.md, "Exactly once across a restart").  Striped files (a cluster) are not keyed. */
int64_t arf_append_gen(struct arf_data *d, uint64_t ino, uint64_t gen, const void *buf,
                       size_t len, uint64_t *at);
int arf_fsync_gen(struct arf_data *d, uint64_t ino, uint64_t gen);
/* lseek's SEEK_DATA or SEEK_HOLE from off, as Linux answers it: the offset, -ENXIO at or past
 * the end (and for SEEK_DATA with only holes after off), -EINVAL for another whence, or the
 * errors of a read.  What a write queue still holds is not seen: drain it first. */
int64_t arf_seek_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, int whence);
/* fallocate's mode 0: blocks (zeroed) for every hole of [off, off+len) and the size raised
 * to off+len when smaller; data already there is left alone.  keep_size (FALLOC_FL_KEEP_SIZE):
 * the size stays, and a range past it is -EOPNOTSUPP (a file's blocks lie below its size).
 * 0, or -errno as arf_write_gen (-ENOSPC: some holes may have their blocks already, as on
 * Linux); -EINVAL when len is 0 or past 2^62. */
int arf_allocate_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                     uint64_t len, bool keep_size);
/* fallocate's PUNCH_HOLE (with KEEP_SIZE): [off, off+len) reads as zeros, the whole blocks
 * inside it are given back (partial ones at the ends zeroed in place), the size stays; past
 * the size or past 16 TiB is fine.  Several runs for a range over many extents (one each).
 * 0, or -errno as arf_write_gen (-ENOSPC: splitting an extent needed an extent block; the
 * range may be punched in part); -EINVAL when len is 0, or off or len past 2^63. */
int arf_punch_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, uint64_t len);

/* ---- a cluster's metadata image (docs/cluster.md)
 *
 * From this call on, the calls above on a regular file of d's image (but /.arf-cluster) go
 * to its stripes on cl's data servers (arf_cl_*, one Cooperation a batch), and the metadata
 * inode keeps its size, times and generation, changed in the cluster's crash order: the
 * stripes written before the size grows, the size shrunk before the objects are cut, the
 * objects cut to the size before it grows over bytes that were not written (truncate up, a
 * write past the end), so no stale tail shows.  Each call first reads the inode with meta (a
 * client of the same image): its generation names the objects, its size bounds a read.
 * Calls on one file are serialized in this process; appends are at the size this process
 * finds (not atomic across clients, as they are on one server).  fallocate's allocate and
 * punch are -EOPNOTSUPP on a striped file; SEEK_DATA finds data everywhere below the size.
 * A write-behind queue (arf_wq_*) holds up to ARF_WQ_DEPTH_STRIPED full runs and applies them
 * together, all in flight on the data servers at once (arf_cl_write_start), as one striped
 * write under the file's lock (data first, then the size over the runs applied before any
 * that failed), on a thread of its own while the writer fills the next batch (one batch
 * at a time; a drain waits for it).  cl and meta must outlive d.
 * 0 or -ENOMEM. */
struct arf_cluster;
struct arf_client;
int arf_data_striped(struct arf_data *d, struct arf_cluster *cl, struct arf_client *meta);
/* Whether ino is the cluster description's inode: as arf_data_striped found it, or as a
 * lookup of its name found it since (arf_data_desc_seen: `arf cluster move` and `init`
 * replace the file by a rename, so its inode changes under a running client) */
bool arf_data_is_desc(const struct arf_data *d, uint64_t ino);
void arf_data_desc_seen(struct arf_data *d, uint64_t ino);
/* After the last name of regular file ino (generation gen) was removed, its inode freed:
 * its objects removed from the data servers (arf_cl_remove).  0 (also on one server, where
 * there is nothing to do), or -errno (-EIO with arf_data_errmsg): the objects left are
 * leaks that arf fsck --cluster --repair removes. */
int arf_data_remove(struct arf_data *d, uint64_t ino, uint64_t gen);
/* Close-to-open reads on a cluster (the mount's; docs/cluster.md, "Reads and the size"):
 * a read wholly inside the size this client last read for the file, less than seconds
 * ago and with no open since (arf_data_opened), uses that size instead of asking the
 * metadata server again; a read that reaches the size, and every other call, asks.
 * 0 (the default) asks for every read, as one server's read does in its own run. */
void arf_data_read_cache(struct arf_data *d, double seconds);
/* A descriptor was opened: every read after it asks for the size again. */
void arf_data_opened(struct arf_data *d);

/* ---- write-behind: pipelined writes of one file (the mount's; docs/arf.md, "Writes")
 *
 * arf_wq_write copies the bytes and returns without waiting for arfd: writes that continue
 * one another are gathered into runs of up to ARF_WQ_RUN bytes, and up to ARF_WQ_DEPTH runs
 * are in flight at once (asynchronous EXECs of data.pno's write on the connection), so a
 * sequential writer keeps the link busy instead of waiting a round trip per request, as
 * NFS's unstable writes and sshfs's queued requests do.  What a run answers is collected
 * when the queue needs room or is flushed: a failure (ENOSPC when the image filled up,
 * ESTALE, EIO, ...) is kept, and the queue's later writes fail with it at once until a
 * flush reported it.  Who is told: as Linux reports writeback errors (errseq_t), each open
 * file description once.  Errors are counted per queue (per inode); a descriptor samples
 * the count when it opens (arf_wq_errseq) and arf_wq_flush_seen returns the error when the
 * count moved since the descriptor last saw it.  arf_wq_flush, for a queue with one user,
 * returns it once to whoever flushes first.  So an error shows at a later write or at the
 * flush (close, fsync), never silently: flush returns only once every byte queued before it
 * is applied by arfd or has failed.
 *
 * Order: runs are applied in the order they were queued, except that two runs of
 * disjoint bytes may be applied the other way round (the result is the same); a write that
 * overlaps a run in flight first waits for it.  A run that met a locked inode (EAGAIN) or
 * filled only one hole (a short count) is finished synchronously, as arf_write_gen does.
 *
 * Memory: at most ARF_WQ_RUN * (ARF_WQ_DEPTH + 1) bytes a queue, and all queues of the
 * process together ARF_WQ_BUDGET; a write beyond the budget is sent and waited for (as
 * arf_write_gen), so no queue ever waits for another's replies.
 *
 * Thread-safe: calls on one queue are serialized by its lock (a flush waits, holding it,
 * for the replies).  Not durable: fsync is arf_wq_flush then arf_fsync_gen. */
#define ARF_WQ_RUN (2u << 20)
#define ARF_WQ_DEPTH 3
/* A striped file's queue (a cluster): a run of ARF_WQ_RUN bytes reaches one to three data
 * servers (1 MiB units), so this many full runs are held and applied together, all in
 * flight at once, to keep every server of a cluster busy */
#define ARF_WQ_DEPTH_STRIPED 8
#define ARF_WQ_BUDGET (64u << 20)

struct arf_wq;
/* A queue for the writes of inode ino: NULL when out of memory. */
struct arf_wq *arf_wq_new(struct arf_data *d, uint64_t ino);
/* Flush (the error, if any, is lost: flush first to see it) and free. */
void arf_wq_free(struct arf_wq *q);
/* Queue len bytes at off (gen as arf_write_gen's): len, or the error kept from an earlier
 * write (nothing is queued then). */
int64_t arf_wq_write(struct arf_wq *q, uint64_t gen, uint64_t off, const void *buf,
                     size_t len);
/* An append (arf_append_gen) in order with the queue: the writes queued before it are
 * applied first, then it runs and is waited for; its result is its own (bytes or -errno),
 * or the error kept from an earlier write (nothing is appended then).  *at as
 * arf_append_gen's. */
int64_t arf_wq_append(struct arf_wq *q, uint64_t gen, const void *buf, size_t len,
                      uint64_t *at);
/* Wait until everything queued is applied: 0, or the error no flush has reported yet (the
 * first of those since the last report), now reported. */
int arf_wq_flush(struct arf_wq *q);
/* The error sequence a descriptor opened now starts from (q NULL: 0, as a new queue's):
 * the count of the queue's errors, less one when the last was not reported yet, so that the
 * new descriptor reports it too.  Lock-free: may be called under the caller's own locks. */
uint32_t arf_wq_errseq(struct arf_wq *q);
/* As arf_wq_flush, for one descriptor whose last seen sequence is *seen: 0 when no error
 * came since, else the latest error kept (and *seen moves to it, and it counts as
 * reported). */
int arf_wq_flush_seen(struct arf_wq *q, uint32_t *seen);
/* The same, but the error is kept for the next flush (before a read or getattr of the
 * file: what was written must be there, and the error is the close's to report). */
void arf_wq_drain(struct arf_wq *q);
/* The end of the furthest byte queued and not yet applied, 0 when none: a size the server
 * will have once the queue drains (attributes read meanwhile are patched with it). */
uint64_t arf_wq_end(struct arf_wq *q);

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
struct arf_attr;                   /* arf_ops.h */
/* The same, and ino's attributes after it from the same run (setattrattr) in *at: mode 0
 * when not known (an error, or a data.pno without setattrattr, which then runs setattr). */
int arf_setattr_attr(struct arf_data *d, uint64_t ino, const struct arf_setattr *sa,
                     struct arf_attr *at);

#endif
