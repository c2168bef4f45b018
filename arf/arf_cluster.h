/* arf_cluster.h: ARF over several arfd servers (docs/cluster.md): a metadata server (an ARF
 * image as ever: the namespace, attributes, sizes) and N data servers (each an ordinary arfd
 * with its own ARF image) holding the files' bytes, striped round-robin in units.
 *
 * The cluster description is the file /.arf-cluster of the metadata image (text, below),
 * so a client that reaches the metadata server learns the rest.  No description: N = 0, a
 * one-server image, whose data stays in it (arf_data.h).
 *
 * Data path: a regular file's stripes are one object per data server, the regular file
 * /stripes/INO.GEN of that server's image (INO and GEN the metadata inode's number and
 * generation, decimal), made when the first byte goes there.  File byte o is in stripe
 * s = o / unit, on server (s + first) % N (first: 0, or INO % N in the rotated layout,
 * below), at o % unit + (s / N) * unit of its object; unit is the file's (the cluster's,
 * or its own: arf_cl_layout).  Each batch
 * writes or reads its pieces on all servers at once: one Cooperation (arc_exec_many).
 *
 * Results are >= 0 or a negative Linux errno; -EIO carries a message (arf_cl_errmsg) that
 * names the data server.
 */
#ifndef ARF_CLUSTER_H
#define ARF_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arc;
struct arc_opts;
struct arf_client;
struct arf_data;

#define ARF_CLUSTER_MAX 64                  /* data servers (ARC_MANY_MAX) */
#define ARF_CLUSTER_FILE ".arf-cluster"     /* in the metadata image's root */
#define ARF_CLUSTER_FILE_MAX 16384          /* its largest size */
#define ARF_CLUSTER_DIR "stripes"           /* in each data server's root */
#define ARF_STRIPE_DEFAULT (1u << 20)
#define ARF_STRIPE_MIN 4096u                /* a unit is a multiple of this */
#define ARF_STRIPE_MAX (4u << 20)           /* ARF_DATA_CHUNK: one run per piece */
#define ARF_CLUSTER_EP_MAX 128              /* an endpoint name's longest */
/* The commands' connection options for data servers: a request is answered within
 * ARF_CLUSTER_TIMEOUT_MS, and a server whose connection broke is waited for at most
 * ARF_CLUSTER_OUTAGE_MS (a restart), so a dead or hung data server is an error within
 * ten seconds, never a hang. */
#define ARF_CLUSTER_TIMEOUT_MS 8000
#define ARF_CLUSTER_OUTAGE_MS 5000

/* The description, as /.arf-cluster holds it:
 *
 *     arf-cluster 2
 *     unit 65536
 *     server tcp:10.0.0.2:7000
 *     server tcp:10.0.0.3:7000
 *
 * one "server" line per data server, in stripe order (in the flat layout server k holds
 * stripes k, k+N, ... of every file); the order never changes once files are stored.  The
 * version is the layout (ARF_LAYOUT_*): 1 flat, 2 rotated. */
/* The layout, the description's version: where a file's first stripe lives.  Flat (1, the
 * first clusters): stripe s on server s % N, so every file starts on server 0 and files
 * under a unit are all there.  Rotate (2, what arf cluster init makes): stripe s of inode
 * INO on server (s + INO % N) % N, so small files spread over the servers.  A file's
 * object offsets are the same in both ((s / N) * unit); the description never changes
 * once files are stored, so every file of a cluster has its layout. */
enum { ARF_LAYOUT_FLAT = 1, ARF_LAYOUT_ROTATE = 2 };

struct arf_cluster_desc {
	unsigned n;                             /* data servers; 0: a one-server image */
	int layout;                             /* ARF_LAYOUT_* (parse: from the version) */
	uint32_t unit;                          /* stripe unit in bytes */
	char server[ARF_CLUSTER_MAX][ARF_CLUSTER_EP_MAX];
};

/* Parse len bytes of a description: 0, or -1 with "line N: ..." in err. */
int arf_cluster_parse(const char *text, size_t len, struct arf_cluster_desc *d, char *err,
                      size_t errlen);
/* Its text into buf (NUL-terminated): the length, or -1 when cap is too small. */
int arf_cluster_format(const struct arf_cluster_desc *d, char *buf, size_t cap);

/* The metadata server's side (members.c, for arfd as arf_attach is): read the description
 * straight from a mapped image of len bytes: 0 (desc->n 0 when it has none), or -1 with a
 * message.  Every offset is bounds-checked; the root may be changing under it (arfd serves
 * while it looks), which can make it fail, never fault. */
int arf_image_cluster_desc(const void *base, uint64_t len, struct arf_cluster_desc *desc,
                           char *err, size_t errlen);
/* Which description the mapped image holds now: its file's inode number and generation,
 * which every new description changes (arf cluster move renames a new file over the old
 * one); { 0, 0 } when there is none or the root cannot be read at this moment.  Cheap (a
 * name lookup), so a metadata arfd can ask at every forward whether its check of --member
 * still stands. */
struct arf_cluster_stamp { uint64_t ino, gen; };
struct arf_cluster_stamp arf_image_cluster_stamp(const void *base, uint64_t len);
/* arfd's --member list (n endpoints, members 0, 1, ...) against desc: 0 when member k is
 * the description's data server k for every k and the counts agree; else -1 with a message
 * naming the first mismatch ("--member 2 is X but the image's cluster description names Y
 * as data server 2"), a data server without a member or a member beyond the last one.
 * Endpoints compare as strings: --member must name each server as the description does. */
int arf_cluster_check_members(const struct arf_cluster_desc *desc, const char *const *members,
                              unsigned n, char *err, size_t errlen);

/* Read the description from the metadata image behind c and d: 0 (d->n 0 when the image
 * has none), or -errno with a message in err. */
int arf_cluster_read(struct arf_client *c, struct arf_data *d, struct arf_cluster_desc *desc,
                     char *err, size_t errlen);

/* Make a cluster: every data server gets /stripes (made, or an empty one kept), then the
 * description is written into the metadata image and made durable (the commit point).
 * Refused (-EEXIST) when the metadata image has a description already, (-ENOTEMPTY) when its
 * root holds anything but lost+found: files stored before have their bytes in the metadata
 * image, which a cluster would not read.  o: the data servers' connection options. */
int arf_cluster_make(struct arc *meta, struct arf_client *c, struct arf_data *d,
                     const struct arf_cluster_desc *desc, const struct arc_opts *o,
                     const char *ops_seg, const char *data_seg, char *err, size_t errlen);

/* Data server `from` of the cluster (as the description spells it) is now served at `to`
 * (its image moved there: docs/cluster.md, "Moving a data server"): the description's line
 * is replaced, committed as arf_cluster_make commits (a temporary file renamed over it).
 * Refused: `from` not a data server (-ENOENT), `to` one already (-EEXIST), `to` without
 * /stripes, or serving the metadata image or another data server's (-EINVAL), `from` still
 * serving its image as itself (-EBUSY) or moved elsewhere (-EINVAL).  0, or -errno with a
 * message. */
int arf_cluster_move(struct arc *meta, struct arf_client *c, struct arf_data *d,
                     const char *from, const char *to, const struct arc_opts *o,
                     const char *ops_seg, const char *data_seg, char *err, size_t errlen);

/* The data servers of desc (n >= 1), connected through meta's endpoint (arc_connect_also)
 * with options o (their timeouts and outage limit: how long a dead one takes to be an
 * error).  NULL with a message.  Thread-safe once open. */
struct arf_cluster;
struct arf_cluster *arf_cluster_open(struct arc *meta, const struct arf_cluster_desc *desc,
                                     const struct arc_opts *o, const char *ops_seg,
                                     const char *data_seg, char *err, size_t errlen);
/* Before meta is closed. */
void arf_cluster_close(struct arf_cluster *cl);
/* The description cl was opened with. */
const struct arf_cluster_desc *arf_cluster_desc_of(const struct arf_cluster *cl);
/* A data server that failed to answer is down for the rest of the handle's life (a command
 * over many files waits for it once); with retry_ms > 0 (a mount, which lives long), it is
 * asked again by the first call retry_ms after it went down, so a restarted server is found
 * again.  Set before the handle is used. */
void arf_cluster_retry(struct arf_cluster *cl, int retry_ms);

/* A file's layout (docs/cluster.md, "A file's own stripe unit").  A regular file of a
 * cluster whose metadata inode has ARF_IF_STRIPED keeps a layout record in its body
 * (layout.def's ARF_L_*: u32 unit, u32 stripe count, u32 first server, u32 reserved 0), set
 * while the file is empty (arf_cl_setstripe); every other file has the cluster's layout
 * (arf_cl_layout_default: the description's unit, all its servers, its rule for the first).
 * Every client that places a file's bytes takes them from arf_cl_layout, once per file, out
 * of the file's attributes: getattr's answer carries the record (arf_attr.layout), so it
 * costs no request of its own. */
struct arf_cl_layout {
	uint32_t unit;                      /* stripe unit in bytes */
	uint32_t count;                     /* data servers the file spans (today: all, n) */
	uint32_t first;                     /* the server of stripe 0 */
};
void arf_cl_layout_default(const struct arf_cluster_desc *desc, uint64_t ino,
                           struct arf_cl_layout *lay);
/* Inode ino's layout from rec, its layout record as its attributes carry it (arf_getattr's
 * and the like: arf_attr.layout; all 0: none, the cluster's): 0, or -EIO with a message in
 * err for a record this version cannot use (a unit out of range, a stripe count other than
 * desc->n, a first server out of range, a reserved field set). */
int arf_cl_layout(const struct arf_cluster_desc *desc, uint64_t ino, const uint32_t rec[4],
                  struct arf_cl_layout *lay, char *err, size_t errlen);
/* unit a multiple of ARF_STRIPE_MIN from ARF_STRIPE_MIN to ARF_STRIPE_MAX. */
bool arf_cl_unit_ok(uint64_t unit);
/* Give empty regular file ino of the cluster the stripe unit unit (its record: unit, all
 * desc->n servers, the cluster's first server for ino): 0; -EINVAL for a bad unit or not a
 * regular file, -EBUSY once the file has bytes (a size other than 0), -ENOTSUP on a
 * one-server image (desc->n 0), -EIO (arf_client_errmsg) and the like. */
int arf_cl_setstripe(struct arf_client *meta, const struct arf_cluster_desc *desc,
                     uint64_t ino, uint64_t unit);

/* One file's stripes: the objects found or made so far.  One thread at a time. */
struct arf_cl_file;
/* For metadata inode ino of generation gen with layout lay (arf_cl_layout's; NULL: the
 * cluster's, arf_cl_layout_default): NULL when out of memory. */
struct arf_cl_file *arf_cl_file_open(struct arf_cluster *cl, uint64_t ino, uint64_t gen,
                                     const struct arf_cl_layout *lay);
/* Its stripe unit. */
uint32_t arf_cl_file_unit(const struct arf_cl_file *f);
void arf_cl_file_close(struct arf_cl_file *f);
const char *arf_cl_errmsg(struct arf_cl_file *f);
/* The data server (its index in the description) holding the file's stripe s. */
unsigned arf_cl_file_server(const struct arf_cl_file *f, uint64_t s);

/* Write len bytes at file offset off into the stripes (the objects are made as needed):
 * len, or -errno (-ENOSPC a data server's image is full, -EIO with a message).  The
 * metadata inode's size is the caller's to set afterwards (docs/cluster.md: data first). */
int64_t arf_cl_write(struct arf_cl_file *f, uint64_t off, const void *buf, size_t len);
/* Read len bytes at off (the caller keeps off + len within the file's size): len, bytes no
 * stripe holds (holes, a missing object) as zeros; or -errno. */
int64_t arf_cl_read(struct arf_cl_file *f, uint64_t off, void *buf, size_t len);

/* A write in flight on the data servers (the mount's write-behind keeps several, so every
 * server has work at once): arf_cl_write_start gathers len bytes (1 .. ARF_DATA_CHUNK) at off
 * into one run per server they reach, makes the objects that are missing (waited for, once
 * per object) and sends the runs without waiting (arc_exec_start on each server's
 * connection); 0 with *op, or -errno (nothing in flight then).  The caller's buf may be
 * reused at once (the runs hold their own copy); f is not used by op afterwards, so the
 * file's other calls may go on while it is in flight.  arf_cl_op_wait takes every run's
 * reply (finishing a run that placed part of its bytes or met its object locked, as
 * arf_cl_write does) and frees op: len, or the first -errno (its message, for -EIO, into
 * msg).  Every op started must be waited for, once.  The size is the caller's to set after
 * the wait (data first). */
struct arf_cl_op;
int arf_cl_write_start(struct arf_cl_file *f, uint64_t off, const void *buf, size_t len,
                       struct arf_cl_op **op);
int64_t arf_cl_op_wait(struct arf_cl_op *op, char *msg, size_t msglen);

/* arf_cl_read with read-ahead, for a reader that goes through a file in order (the mount):
 * after a read that continues the last one, once no more than half of the window is left
 * ahead of the reader, the stripes up to a window ahead (4 * N units, at least 4 MiB, at
 * most 32 stripes, up to size, the file's size) are asked for, each from its server, and
 * not waited for: later reads take them, waiting only for the ones not answered yet, so
 * every data server always has requests queued.  At most 16 read-ahead requests a data
 * server are in flight in all files; what is in flight is waited for when the reader gets
 * there, reads elsewhere or finds another version, and at arf_cl_file_close.  token: the
 * file's version as the caller found it (the metadata inode's mtime, ctime and size); what
 * was read ahead under another token is dropped, so a write, a truncate or another
 * client's close is never hidden by old bytes.  len, or -errno (-EIO with arf_cl_errmsg;
 * a read-ahead request's error is the reader's when it gets there).  A read elsewhere drops
 * the read-ahead and starts no more. */
int64_t arf_cl_read_ra(struct arf_cl_file *f, uint64_t off, void *buf, size_t len,
                       uint64_t size, const uint64_t token[3]);

/* Delegation (docs/cluster.md, "Delegation"): read [off, off+len) of regular file ino
 * through the metadata server alone, without connecting to the data servers: each stripe
 * piece is one EXEC of deleg.pno's route on meta (route: deleg.pno there, installed or by
 * id), which forwards it to the data server holding it, and that server answers here
 * directly (three messages a piece).  stripe, stripe_len: stripe.pno's bytes, sent by id
 * first and whole when a data server lacks it.  lay: the file's (arf_cl_layout; route
 * itself takes a record's unit and first server from the inode).  The bytes read (short
 * at the end of the file), or -errno with a message in msg. */
struct arf_seg;
int64_t arf_cl_read_delegated(struct arc *meta, struct arf_seg *route, const void *stripe,
                              size_t stripe_len, const struct arf_cluster_desc *desc,
                              const struct arf_cl_layout *lay, uint64_t ino, uint64_t off,
                              void *buf, size_t len, char *msg, size_t msglen);
/* Cut every object to what a file of size bytes keeps on its server (bytes past it would
 * come back as stale data if the file grew again): 0 or -errno. */
int arf_cl_truncate(struct arf_cl_file *f, uint64_t size);
/* fallocate's pieces on a striped file's objects, every data server at once: punch (the
 * range's blocks freed: reads give zeros; an object's size stays) and allocate (blocks for
 * the range's holes, zeroed; an object's size raised to the end of its share of the range,
 * the caller clipping the range to what the file's size allows).  The metadata inode is the
 * caller's.  0 or -errno (message in arf_cl_errmsg). */
int arf_cl_punch(struct arf_cl_file *f, uint64_t off, uint64_t len);
int arf_cl_allocate(struct arf_cl_file *f, uint64_t off, uint64_t len);
/* lseek's SEEK_DATA or SEEK_HOLE on a striped file of size bytes, from its objects' extents
 * (every server asked at once, each from the first byte at or after off that it holds):
 * the first data or hole byte at or after off (the end is a hole), or -ENXIO when off is at
 * or past the size, or for SEEK_DATA when only holes follow; -errno as the others. */
int64_t arf_cl_seek(struct arf_cl_file *f, uint64_t off, int whence, uint64_t size);
/* The data servers' blocks and free blocks, summed (a cluster's statfs: the file data is
 * theirs), every server asked at once: 0, or -EIO with a message in msg (a server down). */
int arf_cluster_space(struct arf_cluster *cl, uint64_t *blocks, uint64_t *free_blocks,
                      char *msg, size_t msglen);
/* Make every object durable (data.pno's fsync on each server holding one, one
 * Cooperation): 0 or -errno.  The metadata inode is the caller's to fsync afterwards, so
 * that a size never becomes durable before the bytes it covers. */
int arf_cl_fsync(struct arf_cl_file *f);
/* Remove the file's objects (unlink of /stripes/INO.GEN on every server that may hold one,
 * one Cooperation), once the metadata inode is gone (docs/cluster.md: the inode first).
 * 0, or the first -errno (the other servers' objects are removed all the same); what is
 * left is a leaked object that arf fsck --cluster --repair removes. */
int arf_cl_remove(struct arf_cl_file *f);

/* For a caller that runs exports of its own on a file's objects (arf grep runs its scan on
 * each data server over that server's stripes): obj[k] (k < n) the object's inode on
 * server k, 0 when it has none (its bytes are zeros), looked up in one Cooperation on the
 * servers that hold some of the file's first n_stripes stripes (the others: 0, not asked).
 * 0 or -errno (-EIO with a message naming the server). */
struct arc_exec;
int arf_cl_objects(struct arf_cl_file *f, uint64_t n_stripes, uint64_t *obj);
/* Run xs[i] on data server who[i] for i < m (m <= n, each server at most once) in one
 * Cooperation (arc_exec_many).  rcs[i] as arc_exec's; returns 0, or -EIO for the first
 * failed run with a message naming the server and `what` (arf_cl_errmsg).  A server that did
 * not answer in time is down for this handle from then on, as for reads. */
int arf_cl_exec(struct arf_cl_file *f, const unsigned *who, struct arc_exec *const *xs,
                int *rcs, unsigned m, const char *what);

/* arf grep's edges (docs/cluster.md, "arf grep on a cluster"): for stripe s0 <= s <
 * n_stripes of f (e[s0..n_stripes) set; -m reads them a few stripes at a time), a file of
 * size bytes, e[s].head the bytes up to and with its first terminator ('\n', or NUL when
 * nul: grep -z) (searched in the stripe's first lim bytes; none for stripe 0, whose window
 * starts at the file's start) and e[s].tail the bytes after its last terminator (searched
 * in its last lim bytes), malloc'd
 * (NULL when empty; the caller frees both).  e[s].found is 0 when either has no terminator
 * there, a byte searched is in a hole, or the stripe's server has no object (zeros: the
 * caller gathers the file).  Every server in one Cooperation a batch (data.pno's edges, up
 * to ARF_CL_EDGES_BATCH stripes a server), so a file of any number of stripes costs one
 * round trip per batch, not two a stripe.  lim at most ARF_CL_EDGE_MAX.  0, or -errno (-EIO
 * with a message naming the server, arf_cl_errmsg). */
#define ARF_CL_EDGE_MAX (64u << 10)
#define ARF_CL_EDGES_BATCH 1024u
struct arf_cl_edge {
	uint8_t *head, *tail;
	uint32_t head_len, tail_len;
	int found;
};
int arf_cl_edges(struct arf_cl_file *f, uint64_t size, uint64_t s0, uint64_t n_stripes,
                 uint32_t lim, int nul, struct arf_cl_edge *e);

/* arf grep's context lines (docs/cluster.md, "Context and -m"): n ranges (off, len) of
 * f, ascending and disjoint, each within the file, their bytes to buf one after the other
 * (ARF_CL_READV_MAX bytes at most in all).  Each range's stripe pieces go to their servers:
 * a server's pieces in one run of data.pno's readv (up to ARF_READV_MAX pieces and
 * ARF_DATA_CHUNK bytes), every server in one Cooperation a round, so ranges over many
 * stripes cost a round trip, not one each.  Bytes no object holds are zeros, as in
 * arf_cl_read.  The total, or -errno (-EINVAL: not ascending or too long; -EIO with
 * arf_cl_errmsg). */
#define ARF_CL_READV_MAX (64u << 20)
int64_t arf_cl_readv(struct arf_cl_file *f, const uint64_t *ranges, unsigned n, void *buf);

/* fsck across the cluster, online: every object in every data server's /stripes must name
 * a regular file of the metadata image by inode number and generation, and hold no more
 * than that file keeps on its server (arf_cl_obj_len of its size).  Anything else is a
 * problem: a leaked object (its file is gone, or the number was reused: another
 * generation), a stale tail (bytes past the file's share: a crash between the stripes and
 * the size, or a shrink not finished), a name that is no object's.  With repair, leaked
 * objects are removed and stale tails cut.  Run it while no client writes to the cluster:
 * a file being written has stripes ahead of its size.  report(user, kind, line) gets one
 * line per problem, action and note (kinds as arf_fsck's).  Returns an enum arf_fsck_status
 * (ARF_FSCK_ERROR when a server could not be read: that line says why); *objects counts
 * the objects seen, *problems and *repaired as arf_fsck's. */
struct arf_cluster_fsck {
	bool repair;
	void (*report)(void *user, int kind, const char *line);
	void *user;
	uint64_t objects, problems, repaired;
};
int arf_cluster_fsck(struct arf_cluster *cl, struct arf_client *meta,
                     struct arf_cluster_fsck *fk);

/* The bytes of a file of size bytes that the server at slot j of n holds (its object's
 * length): slot j holds stripes j, j + n, ... (arf_cl_slot gives a server's slot). */
uint64_t arf_cl_obj_len(uint64_t size, uint32_t unit, unsigned n, unsigned j);
/* The server of inode ino's stripe 0: 0 in the flat layout, ino % n when rotated. */
unsigned arf_cl_first(int layout, unsigned n, uint64_t ino);
/* The server holding stripe s of a file whose first is first: (s + first) % n. */
unsigned arf_cl_server(unsigned first, unsigned n, uint64_t s);
/* Server k's slot in that file: the j whose stripes j, j + n, ... it holds. */
unsigned arf_cl_slot(unsigned first, unsigned n, unsigned k);

#endif
