/* xfer.c: `arf import SRC_DIR ENDPOINT:/DEST` and `arf export ENDPOINT:/SRC DEST_DIR`: copy
 * a tree into or out of an ARF image served by arfd, without a mount, through the same
 * operations the mount uses (arf_ops.h, arf_data.h).
 *
 * Both run in two phases: a walk that makes the directories (in order: a parent before its
 * children) and lists the files with their sizes, then a pool of threads that copies the
 * files' bytes, several runs in flight on the one connection (libarc is thread-safe), largest
 * files first so the pool ends together.  Modes and modification times are kept; owners
 * when run as root.  On a terminal a progress line shows files, bytes and the rate.
 *
 * Errors are reported per path (as cp does) and make the exit status 1; the copy goes on
 * with the other files.  Exit status 2 is a usage error or no connection.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf_cli.h"
#include "arf_cluster.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "layout.h"

int arf_cmd_import(int argc, char **argv);
int arf_cmd_export(int argc, char **argv);

#define XFER_CHUNK (4u << 20)      /* bytes per run: arf_data's own limit */
#define XFER_MAX_THREADS 64

/* One file to copy: where it comes from, where it goes, how big it is. */
struct job {
	char *local;                   /* path on this machine */
	const char *name;              /* import: the name to create (in local), in dir */
	uint64_t dir;
	uint64_t ino;                  /* the ARF inode (export: the source; import: made by the job) */
	uint64_t size;
	uint64_t gen;                  /* export: the inode's generation (a cluster's stripes) */
	uint32_t layout[4];            /* export: its layout record (arf_attr.layout) */
	uint32_t mode, uid, gid;
	int64_t mtime, atime;          /* ns */
};

struct xfer {
	bool import;
	struct arc *a;
	struct arf_client *c;
	struct arf_data *d;
	struct arf_cluster *cl;        /* a cluster's data servers (docs/cluster.md); NULL: one server */
	uint32_t stripe_unit;          /* import --stripe-unit: each file's own; 0: the cluster's */
	const char *remote_root;       /* for messages: ENDPOINT:/PATH as given */
	bool keep_owner;
	unsigned threads;
	bool verbose;

	struct job *jobs;
	size_t n_jobs, cap_jobs;
	struct job *dirs;              /* their attributes are set when all files are in */
	size_t n_dirs_list, cap_dirs;
	atomic_size_t next_job;

	uint64_t total_bytes;
	atomic_uint_fast64_t done_bytes;
	atomic_size_t done_files;
	atomic_int errors;
	unsigned n_dirs;
	pthread_mutex_t msg_lock;
	bool progress;                 /* stderr is a terminal */
	atomic_bool finished;
};

static void say_error(struct xfer *x, const char *path, const char *what, int64_t err)
{
	pthread_mutex_lock(&x->msg_lock);
	if (x->progress)
		fputs("\r\033[K", stderr);   /* clear the progress line first */
	fprintf(stderr, "arf %s: %s: %s%s%s\n", x->import ? "import" : "export", path, what,
	        err ? ": " : "", err ? strerror((int)-err) : "");
	pthread_mutex_unlock(&x->msg_lock);
	atomic_fetch_add(&x->errors, 1);
}

static int push_job(struct job **v, size_t *n, size_t *cap, const struct job *j)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		struct job *nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = *j;
	return 0;
}

static int add_job(struct xfer *x, const struct job *j)
{
	if (push_job(&x->jobs, &x->n_jobs, &x->cap_jobs, j) != 0)
		return -1;
	x->total_bytes += j->size;
	return 0;
}

static int add_dir(struct xfer *x, const struct job *j)
{
	return push_job(&x->dirs, &x->n_dirs_list, &x->cap_dirs, j);
}

static struct stat stat_of(const struct job *j)
{
	struct stat st = { .st_mode = j->mode, .st_uid = j->uid, .st_gid = j->gid };
	st.st_mtim.tv_sec = j->mtime / 1000000000;
	st.st_mtim.tv_nsec = j->mtime % 1000000000;
	st.st_atim.tv_sec = j->atime / 1000000000;
	st.st_atim.tv_nsec = j->atime % 1000000000;
	return st;
}

static char *join(const char *a, const char *b)
{
	char *p;
	return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

/* ARF keeps signed 64-bit nanoseconds (1677 to 2262): a time outside is clamped to the
 * nearest it holds, as the mount does (arf/fuse.c ns_of), never wrapped into another date. */
static int64_t ts_ns(struct timespec t)
{
	__int128 ns = (__int128)t.tv_sec * 1000000000 + t.tv_nsec;
	return ns > INT64_MAX ? INT64_MAX : ns < INT64_MIN ? INT64_MIN : (int64_t)ns;
}

/* Times, mode (unless a symlink's: always 0777) and (as root) owner of an ARF inode from a
 * local stat. */
static int set_attrs_of(struct xfer *x, uint64_t ino, const struct stat *st, bool mode)
{
	struct arf_setattr sa = {
		.valid = (mode ? ARF_SET_MODE : 0) | ARF_SET_ATIME | ARF_SET_MTIME,
		.mode = st->st_mode & 07777,
		.atime = ts_ns(st->st_atim),
		.mtime = ts_ns(st->st_mtim),
	};
	if (x->keep_owner) {
		sa.valid |= ARF_SET_UID | ARF_SET_GID;
		sa.uid = st->st_uid;
		sa.gid = st->st_gid;
	}
	return arf_setattr(x->d, ino, &sa);
}

static int set_attrs(struct xfer *x, uint64_t ino, const struct stat *st)
{
	return set_attrs_of(x, ino, st, true);
}

/* The names ARF stores (docs/arf.md, Extended attributes): user.*, trusted.*, security.*
 * and the two POSIX ACLs (the bytes as the kernel gives them; the mode, copied too, already
 * agrees with the access ACL); any other system.* name is left behind, with a message. */
static bool xattr_kept(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) || !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

/* Copy the xattrs of local path (not following a symlink) to inode ino: 0, or -1 after a
 * message for each that could not be copied.  A source filesystem without xattrs has none. */
static int import_xattrs(struct xfer *x, uint64_t ino, const char *path)
{
	char names[ARF_XATTR_LIST_MAX * 2], value[ARF_XATTR_VALUE_MAX + 1];
	ssize_t n = llistxattr(path, names, sizeof names);
	if (n < 0) {
		if (errno == ENOTSUP || errno == ENOSYS)
			return 0;
		/* ERANGE: more names than one ARF block could hold anyway */
		say_error(x, path, "cannot list the extended attributes", -errno);
		return -1;
	}
	int rc = 0;
	for (ssize_t k = 0; k < n; k += (ssize_t)strlen(names + k) + 1) {
		const char *name = names + k;
		if (!xattr_kept(name)) {
			say_error(x, path, "extended attribute not copied (a namespace ARF does not keep)",
			          0);
			rc = -1;
			continue;
		}
		ssize_t len = lgetxattr(path, name, value, sizeof value);
		int64_t err = len < 0 ? -errno : len > ARF_XATTR_VALUE_MAX ? -ENOSPC
		              : arf_setxattr(x->c, ino, name, value, (size_t)len, 0);
		if (err < 0) {
			char what[300];
			snprintf(what, sizeof what, "cannot copy the extended attribute %.255s", name);
			say_error(x, path, what, err);
			rc = -1;
		}
	}
	return rc;
}

/* On a cluster the metadata image's root keeps the description (/.arf-cluster, and
 * /.arf-cluster.new while it is made): no import writes it, no export copies it. */
static bool reserved(const struct xfer *x, uint64_t dir, const char *name)
{
	return x->cl && dir == 1 && !strncmp(name, ARF_CLUSTER_FILE, strlen(ARF_CLUSTER_FILE));
}

/* A failure of the striped data path: -EIO with the data server's message. */
static void say_cl_error(struct xfer *x, const char *path, const char *what, int64_t err,
                         struct arf_cl_file *f)
{
	if (err != -EIO || !f) {
		say_error(x, path, what, err);
		return;
	}
	char m[1600];
	snprintf(m, sizeof m, "%s: %s", what, arf_cl_errmsg(f));
	say_error(x, path, m, 0);
}

/* ---- import ---- */

/* The directory name in dir: made, or the existing one (a merge, as cp -r into a tree). */
static int64_t import_mkdir(struct xfer *x, uint64_t dir, const char *name, const char *path)
{
	int64_t ino = arf_mkdir(x->c, dir, name, 0700, getuid(), getgid());
	if (ino == -EEXIST) {
		ino = arf_lookup(x->c, dir, name);
		struct arf_attr at;
		if (ino >= 0 && arf_getattr(x->c, (uint64_t)ino, &at) == 0 && !S_ISDIR(at.mode))
			ino = -ENOTDIR;
	}
	if (ino < 0)
		say_error(x, path, "cannot make the directory", ino);
	return ino;
}

/* A regular file name in dir, empty: made, or an existing one cut to 0. */
static int64_t import_create(struct xfer *x, uint64_t dir, const char *name, const char *path,
                             bool *existed)
{
	int64_t ino = arf_create(x->c, dir, name, 0600, getuid(), getgid());
	*existed = ino == -EEXIST;
	if (ino == -EEXIST) {
		ino = arf_lookup(x->c, dir, name);
		if (ino >= 0) {
			int rc = arf_truncate(x->d, (uint64_t)ino, 0);
			if (rc < 0)
				ino = rc;
		}
	}
	if (ino < 0)
		say_error(x, path, "cannot create", ino);
	return ino;
}

/* A symlink or fifo name in dir like the local one at path: its inode.  An existing
 * non-directory of that name is replaced (unlinked, made again). */
static int64_t import_special(struct xfer *x, uint64_t dir, const char *name, const char *path,
                              const struct stat *st)
{
	int64_t ino = -EEXIST;
	for (int attempt = 0; attempt < 2 && ino == -EEXIST; attempt++) {
		if (attempt && arf_unlink(x->c, dir, name) < 0)
			break;
		if (S_ISLNK(st->st_mode)) {
			char target[4097];
			ssize_t n = readlink(path, target, sizeof target - 1);
			if (n < 0) {
				ino = -errno;
				break;
			}
			target[n] = '\0';
			ino = arf_symlink(x->c, dir, name, target, getuid(), getgid());
		} else {
			/* a fifo, a device (with its number) or a socket */
			struct arf_attr at;
			bool dev = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode);
			ino = arf_mknod_attr(x->c, dir, name, st->st_mode & (S_IFMT | 07777),
			                     dev ? (uint64_t)st->st_rdev : 0, getuid(), getgid(), &at);
		}
	}
	if (ino < 0)
		say_error(x, path, S_ISLNK(st->st_mode) ? "cannot make the symbolic link"
		               : S_ISFIFO(st->st_mode) ? "cannot make the fifo"
		               : S_ISSOCK(st->st_mode) ? "cannot make the socket"
		               : "cannot make the device node", ino);
	return ino;
}

/* Walk the local directory path (ARF directory dir): make subdirectories, symlinks and fifos
 * now, list regular files as jobs (made by the pool).  Directory attributes are set when
 * every file is in, so a read-only directory can still be filled and its mtime stays. */
static void import_walk(struct xfer *x, const char *path, uint64_t dir, int depth)
{
	if (depth > 4096) {
		say_error(x, path, "too deep", 0);
		return;
	}
	DIR *d = opendir(path);
	if (!d) {
		say_error(x, path, "cannot open the directory", -errno);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = join(path, e->d_name);
		if (p && reserved(x, dir, e->d_name)) {
			say_error(x, p, "skipped: the name of the cluster description", 0);
			free(p);
			continue;
		}
		struct stat st;
		if (!p) {
			say_error(x, path, "out of memory", -ENOMEM);
			break;
		}
		if (lstat(p, &st) != 0) {
			say_error(x, p, "cannot stat", -errno);
			free(p);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int64_t sub = import_mkdir(x, dir, e->d_name, p);
			struct job j = { .local = p, .ino = (uint64_t)sub, .mode = st.st_mode,
			                 .uid = st.st_uid, .gid = st.st_gid,
			                 .mtime = ts_ns(st.st_mtim), .atime = ts_ns(st.st_atim) };
			if (sub >= 0 && add_dir(x, &j) == 0) {
				x->n_dirs++;
				import_walk(x, p, (uint64_t)sub, depth + 1);
			} else {
				free(p);
			}
		} else if (S_ISREG(st.st_mode)) {
			struct job j = { .local = p, .name = p + strlen(path) + 1, .dir = dir,
			                 .size = (uint64_t)st.st_size, .mode = st.st_mode,
			                 .uid = st.st_uid, .gid = st.st_gid,
			                 .mtime = ts_ns(st.st_mtim), .atime = ts_ns(st.st_atim) };
			if (add_job(x, &j) != 0)
				free(p);
		} else if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) ||
		           S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
			int64_t ino = import_special(x, dir, e->d_name, p, &st);
			if (ino >= 0) {
				int rc = set_attrs_of(x, (uint64_t)ino, &st, !S_ISLNK(st.st_mode));
				if (rc < 0)
					say_error(x, p, "cannot set the attributes", rc);
				else if (import_xattrs(x, (uint64_t)ino, p) == 0)
					atomic_fetch_add(&x->done_files, 1);
			}
			free(p);
		} else {
			say_error(x, p, "skipped: a file type ARF does not store", 0);
			free(p);
		}
	}
	closedir(d);
}

static int import_file(struct xfer *x, struct job *j, char *buf)
{
	bool existed;
	int64_t ino = import_create(x, j->dir, j->name, j->local, &existed);
	if (ino < 0)
		return -1;
	j->ino = (uint64_t)ino;
	struct arf_cl_file *f = NULL;
	if (x->cl) {
		/* a cluster: the bytes go to the stripes of (ino, gen); an existing file's are cut
		 * to 0 first (its size already is), so no stale byte shows through a hole */
		struct arf_attr at;
		struct arf_cl_layout lay;
		char lerr[256];
		const struct arf_cluster_desc *desc = arf_cluster_desc_of(x->cl);
		int r = arf_getattr(x->c, j->ino, &at);
		if (r == 0 && arf_cl_layout(desc, j->ino, at.layout, &lay, lerr, sizeof lerr) < 0) {
			say_error(x, j->local, lerr, 0);
			return -1;
		}
		if (r == 0 && !(f = arf_cl_file_open(x->cl, j->ino, at.gen, &lay)))
			r = -ENOMEM;
		if (r == 0 && existed)
			r = arf_cl_truncate(f, 0);       /* with the unit its bytes were written in */
		if (r == 0 && x->stripe_unit && x->stripe_unit != lay.unit) {
			/* the size is 0 now (made, or cut): the file takes its own unit, in the
			 * record arf_cl_setstripe sets (the cluster's first server) */
			r = arf_cl_setstripe(x->c, desc, j->ino, x->stripe_unit);
			if (r == 0) {
				arf_cl_layout_default(desc, j->ino, &lay);
				lay.unit = x->stripe_unit;
				arf_cl_file_close(f);
				if (!(f = arf_cl_file_open(x->cl, j->ino, at.gen, &lay)))
					r = -ENOMEM;
			}
		}
		if (r < 0) {
			say_cl_error(x, j->local, "cannot prepare the stripes", r, f);
			arf_cl_file_close(f);
			return -1;
		}
	}
	int fd = open(j->local, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say_error(x, j->local, "cannot open", -errno);
		arf_cl_file_close(f);
		return -1;
	}
	/* only the data: holes (SEEK_HOLE) stay holes, the size is set at the end */
	uint64_t off = 0;
	int rc = 0;
	while (off < j->size) {
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;                   /* a hole up to the end */
		if (data < 0)
			data = (off_t)off;       /* no SEEK_DATA here: copy everything */
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || hole <= data)
			hole = (off_t)j->size;
		if ((uint64_t)data > off)
			atomic_fetch_add(&x->done_bytes, (uint64_t)data - off);
		off = (uint64_t)data;
		while (off < (uint64_t)hole) {
			size_t want = (uint64_t)hole - off < XFER_CHUNK ? (size_t)((uint64_t)hole - off)
			                                                 : XFER_CHUNK;
			ssize_t n = pread(fd, buf, want, (off_t)off);
			if (n < 0) {
				say_error(x, j->local, "read error", -errno);
				rc = -1;
				break;
			}
			if (n == 0)
				break;               /* cut meanwhile */
			int64_t w = f ? arf_cl_write(f, off, buf, (size_t)n)
			              : arf_write(x->d, j->ino, off, buf, (size_t)n);
			if (w != n) {
				say_cl_error(x, j->local, "write into ARF failed", w < 0 ? w : -ENOSPC, f);
				rc = -1;
				break;
			}
			off += (uint64_t)n;
			atomic_fetch_add(&x->done_bytes, (uint64_t)n);
		}
		if (rc || off < (uint64_t)hole)
			break;
	}
	/* a cluster's metadata inode holds no bytes: its size is set once the stripes hold
	 * them (data first, docs/cluster.md), as a hole */
	if (rc == 0 && (off < j->size || f)) {
		atomic_fetch_add(&x->done_bytes, j->size - off);
		int tr = arf_truncate(x->d, j->ino, j->size);
		if (tr < 0) {
			say_error(x, j->local, "cannot set the size", tr);
			rc = -1;
		}
	}
	close(fd);
	arf_cl_file_close(f);
	struct stat st = stat_of(j);
	int sr = set_attrs(x, j->ino, &st);
	if (sr < 0 && rc == 0) {
		say_error(x, j->local, "cannot set the attributes", sr);
		rc = -1;
	}
	if (import_xattrs(x, j->ino, j->local) != 0)
		rc = -1;
	return rc;
}

/* ---- export ---- */

/* Copy the xattrs of inode ino to local path (not following a symlink): 0, or -1 after a
 * message for each that could not be set here (trusted.* needs root, security.* what the
 * local security module allows, a filesystem without xattrs none). */
static int export_xattrs(struct xfer *x, const char *path, uint64_t ino)
{
	char names[ARF_XATTR_LIST_MAX], value[ARF_XATTR_VALUE_MAX];
	int64_t n = arf_listxattr(x->c, ino, names, sizeof names);
	if (n < 0) {
		say_error(x, path, "cannot list the extended attributes", n);
		return -1;
	}
	int rc = 0;
	for (int64_t k = 0; k < n; k += (int64_t)strnlen(names + k, (size_t)(n - k)) + 1) {
		const char *name = names + k;
		int64_t len = arf_getxattr(x->c, ino, name, value, sizeof value);
		if (len >= 0 && lsetxattr(path, name, value, (size_t)len, 0) != 0)
			len = -errno;
		if (len < 0) {
			char what[300];
			snprintf(what, sizeof what, "cannot copy the extended attribute %.255s", name);
			say_error(x, path, what, len);
			rc = -1;
		}
	}
	return rc;
}

/* Give local path the xattrs of inode ino (first: a read-only mode would refuse them to an
 * owner who is not root), then its owner, mode and times. */
static int export_attrs(struct xfer *x, const char *path, uint64_t ino,
                        const struct arf_attr *at, bool link)
{
	int xr = export_xattrs(x, path, ino);
	struct timespec ts[2] = {
		{ .tv_sec = at->atime / 1000000000, .tv_nsec = at->atime % 1000000000 },
		{ .tv_sec = at->mtime / 1000000000, .tv_nsec = at->mtime % 1000000000 },
	};
	int rc = 0;
	if (x->keep_owner && lchown(path, at->uid, at->gid) != 0)
		rc = -errno;
	if (!link && chmod(path, at->mode & 07777) != 0)
		rc = -errno;
	if (utimensat(AT_FDCWD, path, ts, link ? AT_SYMLINK_NOFOLLOW : 0) != 0)
		rc = -errno;
	if (rc < 0)
		say_error(x, path, "cannot set the attributes", rc);
	return rc < 0 ? rc : xr;
}

static void export_walk(struct xfer *x, uint64_t dir, const char *path, int depth)
{
	if (depth > 4096) {
		say_error(x, path, "too deep", 0);
		return;
	}
	enum { BATCH = 256 };
	struct arf_dirent *ents = malloc(BATCH * sizeof *ents);
	if (!ents) {
		say_error(x, path, "out of memory", -ENOMEM);
		return;
	}
	uint64_t cookie = 0;
	do {
		int n = arf_readdir(x->c, dir, &cookie, ents, BATCH);
		if (n < 0) {
			say_error(x, path, "cannot read the directory", n);
			break;
		}
		for (int i = 0; i < n; i++) {
			if (reserved(x, dir, ents[i].name))
				continue;
			char *p = join(path, ents[i].name);
			struct arf_attr at;
			if (!p)
				continue;
			int rc = arf_getattr(x->c, ents[i].ino, &at);
			if (rc < 0) {
				say_error(x, p, "cannot get the attributes", rc);
				free(p);
				continue;
			}
			if (S_ISDIR(at.mode)) {
				struct job j = { .local = p, .ino = ents[i].ino, .mode = at.mode,
				                 .uid = at.uid, .gid = at.gid, .mtime = at.mtime,
				                 .atime = at.atime };
				if (mkdir(p, 0700) != 0 && errno != EEXIST) {
					say_error(x, p, "cannot make the directory", -errno);
					free(p);
				} else if (add_dir(x, &j) == 0) {
					x->n_dirs++;
					export_walk(x, ents[i].ino, p, depth + 1);
				} else {
					free(p);
				}
			} else if (S_ISREG(at.mode)) {
				struct job j = { .local = p, .ino = ents[i].ino, .size = at.size,
				                 .gen = at.gen, .mode = at.mode, .uid = at.uid, .gid = at.gid,
				                 .mtime = at.mtime, .atime = at.atime };
				memcpy(j.layout, at.layout, sizeof j.layout);
				if (add_job(x, &j) != 0)
					free(p);
			} else if (S_ISLNK(at.mode)) {
				char target[4097];
				int len = arf_readlink(x->c, ents[i].ino, target, sizeof target - 1);
				if (len < 0) {
					say_error(x, p, "cannot read the symbolic link", len);
				} else {
					target[len] = '\0';
					unlink(p);
					if (symlink(target, p) != 0)
						say_error(x, p, "cannot make the symbolic link", -errno);
					else if (export_attrs(x, p, ents[i].ino, &at, true) == 0)
						atomic_fetch_add(&x->done_files, 1);
				}
				free(p);
			} else if (S_ISFIFO(at.mode)) {
				if (mkfifo(p, at.mode & 07777) != 0 && errno != EEXIST)
					say_error(x, p, "cannot make the fifo", -errno);
				else if (export_attrs(x, p, ents[i].ino, &at, false) == 0)
					atomic_fetch_add(&x->done_files, 1);
				free(p);
			} else if (S_ISCHR(at.mode) || S_ISBLK(at.mode) || S_ISSOCK(at.mode)) {
				/* a device needs CAP_MKNOD here: EPERM for others, per path */
				unlink(p);
				if (mknod(p, at.mode & (S_IFMT | 07777), (dev_t)at.rdev) != 0)
					say_error(x, p, S_ISSOCK(at.mode) ? "cannot make the socket"
					                                  : "cannot make the device node", -errno);
				else if (export_attrs(x, p, ents[i].ino, &at, false) == 0)
					atomic_fetch_add(&x->done_files, 1);
				free(p);
			} else {
				free(p);
			}
		}
	} while (cookie != 0);
	free(ents);
}

static int export_file(struct xfer *x, struct job *j, char *buf)
{
	int fd = open(j->local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		say_error(x, j->local, "cannot create", -errno);
		return -1;
	}
	uint64_t off = 0;
	int rc = 0;
	struct arf_cl_file *f = NULL;
	if (x->cl) {
		struct arf_cl_layout lay;
		char lerr[256];
		int r = arf_cl_layout(arf_cluster_desc_of(x->cl), j->ino, j->layout, &lay, lerr,
		                      sizeof lerr);
		if (r < 0) {
			say_error(x, j->local, lerr, 0);
			rc = -1;
		} else if (!(f = arf_cl_file_open(x->cl, j->ino, j->gen, &lay))) {
			say_error(x, j->local, "out of memory", -ENOMEM);
			rc = -1;
		}
	}
	while (rc == 0 && off < j->size) {
		uint64_t want = j->size - off < XFER_CHUNK ? j->size - off : XFER_CHUNK;
		int64_t n = f ? arf_cl_read(f, off, buf, (size_t)want)
		              : arf_read(x->d, j->ino, off, buf, (size_t)want);
		if (n < 0) {
			say_cl_error(x, j->local, "read from ARF failed", n, f);
			rc = -1;
			break;
		}
		if (n == 0)
			break;           /* cut by someone meanwhile: what is there is copied */
		/* holes stay holes: a block of zeros is skipped, the size set at the end */
		for (int64_t k = 0; k < n;) {
			int64_t piece = n - k < 4096 ? n - k : 4096;
			bool zero = true;
			for (int64_t b = 0; b < piece && zero; b++)
				zero = buf[k + b] == 0;
			if (!zero && pwrite(fd, buf + k, (size_t)piece, (off_t)(off + (uint64_t)k)) != piece) {
				say_error(x, j->local, "write error", -errno);
				rc = -1;
				break;
			}
			k += piece;
		}
		if (rc)
			break;
		off += (uint64_t)n;
		atomic_fetch_add(&x->done_bytes, (uint64_t)n);
	}
	arf_cl_file_close(f);
	if (rc == 0 && ftruncate(fd, (off_t)off) != 0) {
		say_error(x, j->local, "cannot set the size", -errno);
		rc = -1;
	}
	if (close(fd) != 0 && rc == 0) {
		say_error(x, j->local, "write error", -errno);
		rc = -1;
	}
	struct arf_attr at = { .mode = j->mode, .uid = j->uid, .gid = j->gid, .atime = j->atime,
	                       .mtime = j->mtime };
	if (rc == 0 && export_attrs(x, j->local, j->ino, &at, false) != 0)
		rc = -1;
	return rc;
}

/* ---- the pool and the progress line ---- */

static void *worker(void *arg)
{
	struct xfer *x = arg;
	char *buf = malloc(XFER_CHUNK);
	if (!buf) {
		say_error(x, "(worker)", "out of memory", -ENOMEM);
		return NULL;
	}
	for (;;) {
		size_t i = atomic_fetch_add(&x->next_job, 1);
		if (i >= x->n_jobs)
			break;
		struct job *j = &x->jobs[i];
		if ((x->import ? import_file(x, j, buf) : export_file(x, j, buf)) == 0)
			atomic_fetch_add(&x->done_files, 1);
	}
	free(buf);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void human(char *out, size_t len, double bytes)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;
	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

static void progress_line(struct xfer *x, double t0, bool last)
{
	char done[32], total[32], rate[32];
	double el = now_s() - t0;
	uint64_t b = atomic_load(&x->done_bytes);
	human(done, sizeof done, (double)b);
	human(total, sizeof total, (double)x->total_bytes);
	human(rate, sizeof rate, el > 0 ? b / el : 0);
	unsigned pct = x->total_bytes ? (unsigned)(100.0 * b / x->total_bytes) : 100;
	pthread_mutex_lock(&x->msg_lock);
	fprintf(stderr, "\r\033[K%3u%%  %zu/%zu files  %s / %s  %s/s", pct,
	        atomic_load(&x->done_files), x->n_jobs, done, total, rate);
	if (last)
		fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&x->msg_lock);
}

struct ticker {
	struct xfer *x;
	double t0;
};

static void *tick(void *arg)
{
	struct ticker *t = arg;
	while (!atomic_load(&t->x->finished)) {
		progress_line(t->x, t->t0, false);
		struct timespec ts = { 0, 200 * 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int by_size_desc(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

/* ---- the commands ---- */

static void usage_xfer(FILE *f, bool import)
{
	if (import)
		fprintf(f, "usage: arf import [-j THREADS] [-v] [--no-progress] [--stripe-unit SIZE] "
		        "SRC_DIR ENDPOINT:/DEST\n"
		        "  copy the contents of SRC_DIR into directory DEST of the ARF image served at\n"
		        "  ENDPOINT (made, with its parents, if missing; existing files are replaced,\n"
		        "  directories merged).  Modes and times are kept, owners when run as root.\n"
		        "  --stripe-unit SIZE  on a cluster, each file's own stripe unit (a multiple\n"
		        "              of 4K up to 4M); refused on a one-server image\n");
	else
		fprintf(f, "usage: arf export [-j THREADS] [-v] [--no-progress] ENDPOINT:/SRC DEST_DIR\n"
		        "  copy the contents of directory SRC of the ARF image served at ENDPOINT into\n"
		        "  DEST_DIR (made if missing).  Modes and times are kept, owners when run as\n"
		        "  root; holes stay holes.\n");
	fprintf(f, "  -j THREADS  files copied at once (default 8, at most %d)\n", XFER_MAX_THREADS);
}

/* Resolve (and for import make, as mkdir -p) path from the root: the directory's inode. */
static int64_t remote_dir(struct xfer *x, const char *path, bool make)
{
	uint64_t dir = 1;
	char *copy = strdup(path), *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int64_t ino = arf_lookup(x->c, dir, c);
		if (ino == -ENOENT && make)
			ino = arf_mkdir(x->c, dir, c, 0755, getuid(), getgid());
		if (ino < 0) {
			free(copy);
			return ino;
		}
		dir = (uint64_t)ino;
	}
	free(copy);
	struct arf_attr at;
	int rc = arf_getattr(x->c, dir, &at);
	if (rc < 0)
		return rc;
	return S_ISDIR(at.mode) ? (int64_t)dir : -ENOTDIR;
}

static int run_xfer(bool import, int argc, char **argv)
{
	struct xfer x = { .import = import, .threads = 8, .keep_owner = geteuid() == 0 };
	const char *args[2];
	int n_args = 0;
	bool no_progress = false;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-j") && i + 1 < argc) {
			char *end;
			long t = strtol(argv[++i], &end, 10);
			if (*end || t < 1 || t > XFER_MAX_THREADS) {
				fprintf(stderr, "arf %s: -j %s: expected 1 to %d\n", import ? "import" : "export",
				        argv[i], XFER_MAX_THREADS);
				return 2;
			}
			x.threads = (unsigned)t;
		} else if (import && !strcmp(argv[i], "--stripe-unit") && i + 1 < argc) {
			uint64_t u;
			if (arf_parse_size(argv[++i], &u) != 0 || !arf_cl_unit_ok(u)) {
				fprintf(stderr, "arf import: --stripe-unit %s: expected a multiple of 4K "
				        "from 4K to 4M\n", argv[i]);
				return 2;
			}
			x.stripe_unit = (uint32_t)u;
		} else if (!strcmp(argv[i], "-v")) {
			x.verbose = true;
		} else if (!strcmp(argv[i], "--no-progress")) {
			no_progress = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage_xfer(stdout, import);
			return 0;
		} else if (n_args < 2 && (argv[i][0] != '-' || !argv[i][1])) {
			args[n_args++] = argv[i];
		} else {
			usage_xfer(stderr, import);
			return 2;
		}
	}
	if (n_args != 2) {
		usage_xfer(stderr, import);
		return 2;
	}
	const char *local = import ? args[0] : args[1];
	const char *remote = import ? args[1] : args[0];
	char *endpoint = NULL;
	const char *rpath;
	if (arf_split_remote(remote, &endpoint, &rpath) != 0) {
		fprintf(stderr, "arf %s: %s: expected ENDPOINT:/PATH (tcp:HOST:PORT:/dir)\n",
		        import ? "import" : "export", remote);
		return 2;
	}
	x.remote_root = remote;
	x.progress = !no_progress && isatty(STDERR_FILENO);
	pthread_mutex_init(&x.msg_lock, NULL);

	char err[1200];
	int rc = 2;
	char *ops_seg = arf_seg_path("ARF_OPS_SEG", "ops.pno");
	char *data_seg = arf_seg_path("ARF_DATA_SEG", "data.pno");
	struct arc_opts ao = { .secret = getenv("ARC_SECRET"), .timeout_ms = 120000 };
	x.a = arc_connect(endpoint, &ao, err, sizeof err);
	if (x.a)
		x.c = arf_client_open(x.a, ops_seg, err, sizeof err);
	if (x.c)
		x.d = arf_data_open(x.a, data_seg, err, sizeof err);
	if (!x.d) {
		fprintf(stderr, "arf %s: %s: %s\n", import ? "import" : "export", endpoint, err);
		goto out;
	}
	/* a cluster's metadata server names its data servers; a dead one is an error within
	 * about ten seconds (timeout and outage limit), not a wait */
	struct arf_cluster_desc *desc = malloc(sizeof *desc);
	if (!desc || arf_cluster_read(x.c, x.d, desc, err, sizeof err) < 0) {
		fprintf(stderr, "arf %s: %s: %s\n", import ? "import" : "export", endpoint,
		        desc ? err : "out of memory");
		free(desc);
		goto out;
	}
	if (x.stripe_unit && !desc->n) {
		fprintf(stderr, "arf import: %s: --stripe-unit: not a cluster (a one-server image "
		        "keeps its files' bytes itself)\n", endpoint);
		free(desc);
		goto out;
	}
	if (desc->n) {
		struct arc_opts dao = { .secret = getenv("ARC_SECRET"),
		                        .timeout_ms = ARF_CLUSTER_TIMEOUT_MS,
		                        .outage_ms = ARF_CLUSTER_OUTAGE_MS };
		x.cl = arf_cluster_open(x.a, desc, &dao, ops_seg, data_seg, err, sizeof err);
		if (!x.cl) {
			fprintf(stderr, "arf %s: %s\n", import ? "import" : "export", err);
			free(desc);
			goto out;
		}
	}
	free(desc);

	double t0 = now_s();
	struct stat st;
	if (import) {
		int stat_rc = stat(local, &st);
		if (stat_rc != 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "arf import: %s: %s\n", local,
			        stat_rc != 0 ? strerror(errno) : "not a directory");
			goto out;
		}
		int64_t dest = remote_dir(&x, rpath, true);
		if (dest < 0) {
			fprintf(stderr, "arf import: %s: %s\n", remote,
			        dest == -EIO ? arf_client_errmsg(x.c) : strerror((int)-dest));
			goto out;
		}
		struct job root = { .local = strdup(local), .ino = (uint64_t)dest, .mode = st.st_mode,
		                    .uid = st.st_uid, .gid = st.st_gid, .mtime = ts_ns(st.st_mtim),
		                    .atime = ts_ns(st.st_atim) };
		if (root.local && add_dir(&x, &root) != 0)
			free(root.local);
		import_walk(&x, local, (uint64_t)dest, 0);
	} else {
		int64_t src = remote_dir(&x, rpath, false);
		if (src < 0) {
			fprintf(stderr, "arf export: %s: %s\n", remote,
			        src == -EIO ? arf_client_errmsg(x.c) : strerror((int)-src));
			goto out;
		}
		if (mkdir(local, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "arf export: %s: %s\n", local, strerror(errno));
			goto out;
		}
		struct arf_attr at;
		int arc_rc = arf_getattr(x.c, (uint64_t)src, &at);
		if (arc_rc == 0) {
			struct job root = { .local = strdup(local), .ino = (uint64_t)src, .mode = at.mode,
			                    .uid = at.uid, .gid = at.gid, .mtime = at.mtime,
			                    .atime = at.atime };
			if (root.local && add_dir(&x, &root) != 0)
				free(root.local);
		}
		export_walk(&x, (uint64_t)src, local, 0);
	}

	if (x.n_jobs)                  /* an empty tree has no job array (qsort's is nonnull) */
		qsort(x.jobs, x.n_jobs, sizeof *x.jobs, by_size_desc);
	pthread_t tid[XFER_MAX_THREADS], ticker_tid;
	struct ticker tk = { &x, t0 };
	bool ticking = x.progress && pthread_create(&ticker_tid, NULL, tick, &tk) == 0;
	unsigned started = 0;
	for (; started < x.threads && started < x.n_jobs; started++)
		if (pthread_create(&tid[started], NULL, worker, &x) != 0)
			break;
	if (started == 0 && x.n_jobs)
		worker(&x);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	for (size_t i = x.n_dirs_list; i-- > 0;) {
		struct job *j = &x.dirs[i];
		if (import) {
			struct stat dst = stat_of(j);
			int sr = set_attrs(&x, j->ino, &dst);
			if (sr < 0)
				say_error(&x, j->local, "cannot set the attributes", sr);
			import_xattrs(&x, j->ino, j->local);
		} else {
			struct arf_attr at = { .mode = j->mode, .uid = j->uid, .gid = j->gid,
			                       .atime = j->atime, .mtime = j->mtime };
			export_attrs(&x, j->local, j->ino, &at, false);
		}
	}
	atomic_store(&x.finished, true);
	if (ticking) {
		pthread_join(ticker_tid, NULL);
		progress_line(&x, t0, true);
	}
	double el = now_s() - t0;
	if (x.verbose || x.progress) {
		char total[32], rate[32];
		human(total, sizeof total, (double)atomic_load(&x.done_bytes));
		human(rate, sizeof rate, el > 0 ? atomic_load(&x.done_bytes) / el : 0);
		fprintf(stderr, "arf %s: %zu files, %u directories, %s in %.2f s (%s/s), %d errors\n",
		        import ? "import" : "export", atomic_load(&x.done_files), x.n_dirs, total, el,
		        rate, atomic_load(&x.errors));
	}
	rc = atomic_load(&x.errors) ? 1 : 0;
out:
	for (size_t i = 0; i < x.n_jobs; i++)
		free(x.jobs[i].local);
	free(x.jobs);
	for (size_t i = 0; i < x.n_dirs_list; i++)
		free(x.dirs[i].local);
	free(x.dirs);
	arf_cluster_close(x.cl);
	arf_data_close(x.d);
	arf_client_close(x.c);
	if (x.a)
		arc_close(x.a);
	pthread_mutex_destroy(&x.msg_lock);
	free(endpoint);
	free(ops_seg);
	free(data_seg);
	return rc;
}

int arf_cmd_import(int argc, char **argv)
{
	return run_xfer(true, argc, argv);
}

int arf_cmd_export(int argc, char **argv)
{
	return run_xfer(false, argc, argv);
}
