/* test_arf_ops.c: the ARF namespace operations (arf/ops.c through arf/arf_ops.c) against
 * an in-process arfd serving a fresh image: a tree built mkdir -p style, files and fifos, a
 * directory of 2000 entries (its slot table grows three times), path lookups, getattr,
 * readdir of everything back in batches (each name exactly once), unlink and rmdir, every
 * errno the operations document, ENOSPC on tiny images (inodes, then blocks), and a crash:
 * a forked arfd killed with SIGKILL while a mkdir loop runs, restarted (journal roll-back).
 * Then symlink (inline and in a block), readlink, link, rename (every flag, every errno,
 * replacing, moving directories, exchanging, growing the target's table) with table-driven
 * error cases, and the same kind of crash in the middle of each of them.  The walk (a whole
 * subtree depth first, in batches) against readdir done directory by directory, with every
 * batch limit, pruning, a tree deeper than one walk, and hostile frames.  Extended
 * attributes: every error rule as Linux's, a full block, hostile runs, fsck of a damaged
 * block, and crashes in the middle of each kind of set and removal.
 * After each phase arfd is stopped and arf_fsck must find the image clean.
 * Prints "N passed, N failed" last.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "server.h"
#include "arf_fork.h"

#include "arf_check.h"

static char segpath[512], data_segpath[512];   /* this build's ops.pno and data.pno */

/* ---- a served image and a client ---- */

struct conn {
	struct arfd *s;
	struct arc *a;
	struct arf_client *c;
};

static bool serve(struct conn *k, const char *img)
{
	static struct arfd_config cfg;
	char err[512];
	memset(&cfg, 0, sizeof cfg);
	cfg.listen[cfg.n_listen++] = "tcp:127.0.0.1:0";
	cfg.arf_image = img;
	k->s = arfd_start(&cfg, err, sizeof err);
	CHECK(k->s != NULL, "arfd --arf %s: %s", img, err);
	if (!k->s)
		return false;
	struct arc_opts o = { .timeout_ms = 20000 };
	k->a = arc_connect(arfd_endpoint(k->s, "tcp"), &o, err, sizeof err);
	CHECK(k->a != NULL, "connect: %s", err);
	k->c = k->a ? arf_client_open(k->a, segpath, err, sizeof err) : NULL;
	CHECK(k->c != NULL, "arf_client_open: %s", err);
	if (!k->c) {
		if (k->a)
			arc_close(k->a);
		arfd_stop(k->s, 1000);
		return false;
	}
	return true;
}

static void unserve(struct conn *k)
{
	arf_client_close(k->c);
	arc_close(k->a);
	arfd_stop(k->s, 5000);
}

/* mkdir -p of a relative path from the root; the last directory's inode, or -errno */
static int64_t mkdir_p(struct arf_client *c, const char *path)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", path);
	int64_t cur = ARF_INO_ROOT;
	for (char *save, *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		int64_t r = arf_mkdir(c, (uint64_t)cur, t, 0755, 1000, 1000);
		if (r == -EEXIST)
			r = arf_lookup(c, (uint64_t)cur, t);
		if (r < 0)
			return r;
		cur = r;
	}
	return cur;
}

/* every entry of d, in batches of batch; names in a malloc'd array */
static int list_dir(struct arf_client *c, uint64_t d, unsigned batch, struct arf_dirent **out)
{
	size_t cap = 64, n = 0;
	struct arf_dirent *all = malloc(cap * sizeof *all);
	struct arf_dirent *b = malloc(batch * sizeof *b);
	uint64_t cookie = 0;
	int rounds = 0;
	do {
		int r = arf_readdir(c, d, &cookie, b, batch);
		if (r < 0) {
			free(all);
			free(b);
			return r;
		}
		for (int i = 0; i < r; i++) {
			if (n == cap)
				all = realloc(all, (cap *= 2) * sizeof *all);
			all[n++] = b[i];
		}
	} while (cookie && ++rounds < 100000);
	free(b);
	*out = all;
	return (int)n;
}

/* ---- phases ---- */

static void test_tree(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;

	int64_t abc = mkdir_p(c, "a/b/c");
	CHECK(abc > 2, "mkdir -p a/b/c: %" PRId64, abc);
	int64_t a = arf_lookup(c, ARF_INO_ROOT, "a"), b = arf_lookup(c, ARF_INO_ROOT, "a/b");
	CHECK(a > 2 && b > 2 && a != b, "lookup a %" PRId64 ", a/b %" PRId64, a, b);
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/b/c") == abc, "lookup a/b/c");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "/a//b/./c/") == abc, "lookup with slashes and dots");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/b/c/../..") == a, "lookup with ..");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "..") == ARF_INO_ROOT, "root's .. is the root");
	CHECK(arf_lookup(c, (uint64_t)b, "c") == abc, "lookup from a/b");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "") == ARF_INO_ROOT, "empty path");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "lost+found") == ARF_INO_LOSTFOUND, "lost+found");

	int64_t f = arf_create(c, (uint64_t)abc, "file", 0640, 1001, 1002);
	CHECK(f > 2, "create a/b/c/file: %" PRId64, f);
	int64_t p = arf_mknod(c, (uint64_t)a, "pipe", ARF_S_IFIFO | 0600, 0, 0);
	CHECK(p > 2, "mknod a/pipe: %" PRId64, p);
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/b/c/file") == f, "lookup the file");

	struct arf_attr at;
	CHECK(arf_getattr(c, (uint64_t)f, &at) == 0 && at.mode == (ARF_S_IFREG | 0640) &&
	      at.nlink == 1 && at.uid == 1001 && at.gid == 1002 && at.size == 0 &&
	      at.nblocks == 0 && at.btime > 0 && at.mtime == at.btime && at.parent == 0,
	      "getattr file: mode %o nlink %u uid %u gid %u", at.mode, at.nlink, at.uid, at.gid);
	CHECK(arf_getattr(c, (uint64_t)a, &at) == 0 && at.mode == (ARF_S_IFDIR | 0755) &&
	      at.nlink == 3 && at.parent == ARF_INO_ROOT && at.size == 4096 && at.nblocks == 2,
	      "getattr a: mode %o nlink %u parent %" PRIu64 " size %" PRIu64 " nblocks %" PRIu64,
	      at.mode, at.nlink, at.parent, at.size, at.nblocks);
	CHECK(arf_getattr(c, (uint64_t)p, &at) == 0 && at.mode == (ARF_S_IFIFO | 0600),
	      "getattr pipe");
	CHECK(arf_getattr(c, ARF_INO_ROOT, &at) == 0 && at.nlink == 4, "root nlink %u (2 + a + "
	      "lost+found)", at.nlink);

	/* a directory of 2000 entries: the table grows 256 -> 512 -> 1024 -> 2048 -> 4096 */
	int64_t big = arf_mkdir(c, ARF_INO_ROOT, "big", 0700, 0, 0);
	CHECK(big > 2, "mkdir big");
	int bad = 0;
	for (int i = 0; i < 2000; i++) {
		char name[64];
		snprintf(name, sizeof name, "entry-%04d-%.*s", i, i % 40, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		int64_t r = (i % 3 == 0) ? arf_mkdir(c, (uint64_t)big, name, 0755, 0, 0)
		                         : arf_create(c, (uint64_t)big, name, 0644, 0, 0);
		if (r <= 0 && bad++ < 3)
			printf("  create big/%s: %" PRId64 " %s\n", name, r, arf_client_errmsg(c));
	}
	CHECK(bad == 0, "2000 entries: %d failed", bad);
	CHECK(arf_getattr(c, (uint64_t)big, &at) == 0 && at.nlink == 2 + 667, "big nlink %u",
	      at.nlink);
	bad = 0;
	for (int i = 0; i < 2000; i += 7) {
		char name[80];
		snprintf(name, sizeof name, "big/entry-%04d-%.*s", i, i % 40, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		int64_t r = arf_lookup(c, ARF_INO_ROOT, name);
		if (r <= 0 || arf_getattr(c, (uint64_t)r, &at) != 0 ||
		    (at.mode & ARF_S_IFMT) != (i % 3 == 0 ? ARF_S_IFDIR : ARF_S_IFREG))
			bad++;
	}
	CHECK(bad == 0, "lookups in big: %d wrong", bad);

	/* readdir back: every name exactly once, with its type */
	static unsigned char seen[2000];
	memset(seen, 0, sizeof seen);
	struct arf_dirent *ents = NULL;
	int n = list_dir(c, (uint64_t)big, 97, &ents);
	CHECK(n == 2000, "readdir big: %d entries", n);
	bad = 0;
	for (int i = 0; i < n; i++) {
		int idx;
		if (sscanf(ents[i].name, "entry-%4d-", &idx) != 1 || idx < 0 || idx >= 2000 ||
		    ents[i].type != (idx % 3 == 0 ? ARF_DT_DIR : ARF_DT_REG)) {
			bad++;
			continue;
		}
		seen[idx]++;
	}
	for (int i = 0; i < 2000; i++)
		bad += seen[i] != 1;
	CHECK(bad == 0, "readdir big: %d names wrong, missing or repeated", bad);
	/* resuming from a cookie in the middle gives the rest */
	if (n == 2000) {
		uint64_t cookie = ents[999].cookie;
		struct arf_dirent b1[5];
		int r = arf_readdir(c, (uint64_t)big, &cookie, b1, 5);
		CHECK(r == 5 && !strcmp(b1[0].name, ents[1000].name) && cookie == b1[4].cookie,
		      "readdir resume: %d", r);
	}
	free(ents);
	n = list_dir(c, ARF_INO_ROOT, 1, &ents);
	CHECK(n == 3, "readdir / one at a time: %d entries", n);
	free(ents);

	/* errors */
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = '\0';
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/nope") == -ENOENT, "ENOENT");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/pipe/x") == -ENOTDIR, "ENOTDIR in the middle");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/pipe/") == -ENOTDIR, "ENOTDIR trailing slash");
	CHECK(arf_lookup(c, (uint64_t)f, "x") == -ENOTDIR, "lookup from a file");
	CHECK(arf_lookup(c, 999999999, "x") == -EINVAL, "lookup from no inode");
	CHECK(arf_lookup(c, 0, "x") == -EINVAL, "lookup from inode 0");
	CHECK(arf_lookup(c, 3000, "x") == -ENOENT, "lookup from a free inode");
	CHECK(arf_lookup(c, ARF_INO_ROOT, longname) == -ENAMETOOLONG, "ENAMETOOLONG component");
	char *longpath = malloc(5000);
	memset(longpath, 'a', 4999);
	longpath[4999] = '\0';
	CHECK(arf_lookup(c, ARF_INO_ROOT, longpath) == -ENAMETOOLONG, "ENAMETOOLONG path");
	free(longpath);
	CHECK(arf_mkdir(c, ARF_INO_ROOT, "a", 0755, 0, 0) == -EEXIST, "mkdir EEXIST");
	CHECK(arf_create(c, (uint64_t)a, "pipe", 0644, 0, 0) == -EEXIST, "create EEXIST");
	CHECK(arf_mkdir(c, ARF_INO_ROOT, ".", 0755, 0, 0) == -EEXIST, "mkdir .");
	CHECK(arf_mkdir(c, ARF_INO_ROOT, "..", 0755, 0, 0) == -EEXIST, "mkdir ..");
	CHECK(arf_mkdir(c, ARF_INO_ROOT, "", 0755, 0, 0) == -ENOENT, "mkdir empty");
	CHECK(arf_mkdir(c, ARF_INO_ROOT, "x/y", 0755, 0, 0) == -EINVAL, "mkdir with /");
	CHECK(arf_mkdir(c, ARF_INO_ROOT, longname, 0755, 0, 0) == -ENAMETOOLONG, "mkdir long");
	CHECK(arf_mkdir(c, (uint64_t)f, "x", 0755, 0, 0) == -ENOTDIR, "mkdir in a file");
	CHECK(arf_mknod(c, ARF_INO_ROOT, "dir", ARF_S_IFDIR | 0600, 0, 0) == -EINVAL, "mknod dir");
	CHECK(arf_mknod(c, ARF_INO_ROOT, "badtype", 0170000 | 0600, 0, 0) == -EINVAL &&
	      arf_mknod(c, ARF_INO_ROOT, "notype", 0600, 0, 0) == -EINVAL, "mknod of no type");
	CHECK(arf_getattr(c, 0, &at) == -EINVAL && arf_getattr(c, 3000, &at) == -ENOENT,
	      "getattr errors");
	uint64_t ck = 12345;
	struct arf_dirent e1;
	CHECK(arf_readdir(c, ARF_INO_ROOT, &ck, &e1, 1) == -EINVAL, "readdir bad cookie");
	ck = 0;
	CHECK(arf_readdir(c, ARF_INO_ROOT, &ck, &e1, 0) == -EINVAL, "readdir max 0");
	CHECK(arf_readdir(c, (uint64_t)f, &ck, &e1, 1) == -ENOTDIR, "readdir of a file");
	unserve(&k);
	fsck_clean("after building the tree", img);
}

static void test_remove(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	int64_t a = arf_lookup(c, ARF_INO_ROOT, "a"), abc = arf_lookup(c, ARF_INO_ROOT, "a/b/c");
	int64_t big = arf_lookup(c, ARF_INO_ROOT, "big");
	CHECK(a > 0 && abc > 0 && big > 0, "lookups after restart");
	CHECK(arf_unlink(c, (uint64_t)a, "nope") == -ENOENT, "unlink ENOENT");
	CHECK(arf_unlink(c, ARF_INO_ROOT, "a") == -EISDIR, "unlink a dir: EISDIR");
	CHECK(arf_unlink(c, ARF_INO_ROOT, ".") == -EISDIR, "unlink .");
	CHECK(arf_rmdir(c, (uint64_t)a, "pipe") == -ENOTDIR, "rmdir a fifo: ENOTDIR");
	CHECK(arf_rmdir(c, ARF_INO_ROOT, "a") == -ENOTEMPTY, "rmdir a: ENOTEMPTY");
	CHECK(arf_rmdir(c, ARF_INO_ROOT, ".") == -EINVAL, "rmdir .");
	CHECK(arf_rmdir(c, ARF_INO_ROOT, "..") == -ENOTEMPTY, "rmdir ..");
	/* unlinkattr and rmdirattr (arf_remove_attr): the parent's attributes after the
	 * removal, as a getattr right after gives them; none with an error */
	struct arf_attr pa, pb;
	int64_t ra = arf_mkdir(c, (uint64_t)a, "rmattr", 0755, 0, 0);
	CHECK(ra > 0 && arf_create(c, (uint64_t)ra, "x", 0644, 0, 0) > 0 &&
	      arf_mkdir(c, (uint64_t)ra, "y", 0755, 0, 0) > 0, "remove_attr: fixture");
	int rx = arf_remove_attr(c, (uint64_t)ra, "x", false, &pa);
	CHECK(rx == 0 && arf_getattr(c, (uint64_t)ra, &pb) == 0 && pa.mode == pb.mode &&
	      pa.nlink == 3 && pb.nlink == 3 && pa.size == pb.size && pa.mtime == pb.mtime &&
	      pa.ctime == pb.ctime && pa.gen == pb.gen && pa.no_xattrs,
	      "unlinkattr: %d, nlink %u/%u mtime %" PRId64 "/%" PRId64, rx, pa.nlink, pb.nlink,
	      pa.mtime, pb.mtime);
	rx = arf_remove_attr(c, (uint64_t)ra, "y", true, &pa);
	CHECK(rx == 0 && arf_getattr(c, (uint64_t)ra, &pb) == 0 && pa.nlink == 2 &&
	      pb.nlink == 2 && pa.mtime == pb.mtime && (pa.mode & ARF_S_IFMT) == ARF_S_IFDIR,
	      "rmdirattr: %d, nlink %u/%u", rx, pa.nlink, pb.nlink);
	CHECK(arf_remove_attr(c, (uint64_t)ra, "y", true, &pa) == -ENOENT && pa.mode == 0,
	      "rmdirattr of a name gone: ENOENT, no attributes");
	CHECK(arf_remove_attr(c, (uint64_t)ra, "x", false, &pa) == -ENOENT && pa.mode == 0,
	      "unlinkattr of a name gone: ENOENT, no attributes");
	CHECK(arf_remove_attr(c, (uint64_t)a, "rmattr", false, &pa) == -EISDIR && pa.mode == 0,
	      "unlinkattr of a directory: EISDIR");
	CHECK(arf_remove_attr(c, (uint64_t)a, "rmattr", true, &pa) == 0 && pa.mode != 0,
	      "rmdirattr of rmattr");
	int64_t f = arf_lookup(c, (uint64_t)abc, "file");
	CHECK(arf_unlink(c, (uint64_t)abc, "file") == 0, "unlink a/b/c/file");
	struct arf_attr at;
	CHECK(arf_getattr(c, (uint64_t)f, &at) == -ENOENT, "unlinked inode is free");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "a/b/c/file") == -ENOENT, "gone");
	CHECK(arf_rmdir(c, ARF_INO_ROOT, "a/b/c") == -EINVAL, "rmdir takes one component");
	int64_t b = arf_lookup(c, ARF_INO_ROOT, "a/b");
	CHECK(arf_rmdir(c, (uint64_t)b, "c") == 0, "rmdir a/b/c");
	CHECK(arf_getattr(c, (uint64_t)b, &at) == 0 && at.nlink == 2, "a/b nlink %u", at.nlink);
	/* a name removed and made again reuses a tombstone */
	CHECK(arf_mkdir(c, (uint64_t)b, "c", 0755, 0, 0) > 0, "mkdir a/b/c again");

	/* empty big: every other entry, check the rest, then all */
	struct arf_dirent *ents = NULL;
	int n = list_dir(c, (uint64_t)big, 1024, &ents);
	CHECK(n == 2000, "big has %d", n);
	int bad = 0;
	for (int i = 0; i < n; i += 2) {
		int r = ents[i].type == ARF_DT_DIR ? arf_rmdir(c, (uint64_t)big, ents[i].name)
		                                   : arf_unlink(c, (uint64_t)big, ents[i].name);
		if (r != 0 && bad++ < 3)
			printf("  remove big/%s: %d %s\n", ents[i].name, r, arf_client_errmsg(c));
	}
	CHECK(bad == 0, "removing half of big: %d failed", bad);
	struct arf_dirent *rest = NULL;
	int m = list_dir(c, (uint64_t)big, 100, &rest);
	CHECK(m == 1000, "big has %d after removing half", m);
	bad = 0;
	for (int i = 0; i < m && i < 1000; i++)
		bad += strcmp(rest[i].name, ents[2 * i + 1].name) != 0;
	CHECK(bad == 0, "the other half remains in order: %d differ", bad);
	free(rest);
	for (int i = 1; i < n; i += 2) {
		int r = ents[i].type == ARF_DT_DIR ? arf_rmdir(c, (uint64_t)big, ents[i].name)
		                                   : arf_unlink(c, (uint64_t)big, ents[i].name);
		bad += r != 0;
	}
	CHECK(bad == 0, "removing the rest: %d failed", bad);
	free(ents);
	CHECK(arf_rmdir(c, ARF_INO_ROOT, "big") == 0, "rmdir big");
	CHECK(arf_getattr(c, ARF_INO_ROOT, &at) == 0 && at.nlink == 4, "root nlink %u", at.nlink);
	unserve(&k);
	fsck_clean("after removing", img);
}

static void test_enospc(void)
{
	char err[512];
	/* inodes: 64 in all (0, root, lost+found taken) */
	const char *img = path_of("tiny-inodes.img");
	CHECK(arf_mkfs(img, 4 << 20, 64, err, sizeof err) == 0, "mkfs: %s", err);
	struct conn k;
	if (serve(&k, img)) {
		int made = 0;
		int64_t r = 0;
		for (int i = 0; i < 100; i++) {
			char name[32];
			snprintf(name, sizeof name, "f%d", i);
			r = arf_create(k.c, ARF_INO_ROOT, name, 0644, 0, 0);
			if (r < 0)
				break;
			made++;
		}
		CHECK(r == -ENOSPC && made == 61, "inodes: %d made, then %" PRId64, made, r);
		CHECK(arf_unlink(k.c, ARF_INO_ROOT, "f7") == 0 &&
		      arf_create(k.c, ARF_INO_ROOT, "again", 0644, 0, 0) > 0 &&
		      arf_create(k.c, ARF_INO_ROOT, "more", 0644, 0, 0) == -ENOSPC, "freed inode reused");
		unserve(&k);
		fsck_clean("after inode ENOSPC", img);
	}
	/* blocks: each directory with an entry holds a table block and a directory block */
	img = path_of("tiny-blocks.img");
	CHECK(arf_mkfs(img, 4 << 20, 4096, err, sizeof err) == 0, "mkfs: %s", err);
	if (serve(&k, img)) {
		int64_t r = 0;
		int dirs = 0;
		for (int i = 0; i < 1000; i++) {
			char name[32];
			snprintf(name, sizeof name, "d%d", i);
			r = arf_mkdir(k.c, ARF_INO_ROOT, name, 0755, 0, 0);
			if (r < 0)
				break;
			dirs++;
			r = arf_mknod(k.c, (uint64_t)r, "p", ARF_S_IFIFO | 0644, 0, 0);
			if (r < 0)
				break;
		}
		CHECK(r == -ENOSPC && dirs > 100, "blocks: ENOSPC after %d directories: %" PRId64,
		      dirs, r);
		unserve(&k);
		fsck_clean("after block ENOSPC", img);
	}
}

/* ---- crashes ---- */

/* Journal slots of the image with committed undo records: operations the kill cut short. */
static int interrupted_ops(const char *img)
{
	struct arf_image m;
	char err[512];
	if (arf_image_open(img, ARF_OPEN_RO, &m, err, sizeof err) != 0)
		return -1;
	int n = 0;
	for (unsigned s = 0; s < ARF_J_SLOTS; s++) {
		const struct arf_jslot *j = (const struct arf_jslot *)(m.base + m.sb->journal_off +
		                                                         (uint64_t)s * ARF_J_SLOT_SIZE);
		n += j->n_undo > 0;
	}
	arf_image_close(&m, err, sizeof err);
	return n;
}

/* A crash at many points of one mkdir: the directory "crash" holds 256 entries, so the next
 * insert grows its table (512 -> 1024 slots).  The mkdir runs in a forked arfd with fuel F;
 * when F runs out the run stops right there, in the middle of the operation, with its journal
 * slot, locks and half its changes in the image: exactly what SIGKILL at that instruction
 * leaves.  Then the server is killed with SIGKILL.  fsck (which rolls back in its private
 * view) must find the image clean, and the next server's attach rolls back for real. */
static void test_crash(const char *img)
{
	char err[512];
	CHECK(arf_mkfs(img, 64 << 20, 16384, err, sizeof err) == 0, "mkfs: %s", err);
	struct conn k;
	int64_t d = -1;
	if (serve(&k, img)) {
		d = arf_mkdir(k.c, ARF_INO_ROOT, "crash", 0755, 0, 0);
		for (int i = 0; i < 256 && d > 0; i++) {
			char name[32];
			snprintf(name, sizeof name, "pre%03d", i);
			if (arf_mkdir(k.c, (uint64_t)d, name, 0755, 0, 0) <= 0)
				d = -1;
		}
		unserve(&k);
	}
	CHECK(d > 0, "crash setup");
	size_t seg_len = 0;
	FILE *f = fopen(segpath, "rb");
	static char seg[1 << 20];
	if (f) {
		seg_len = fread(seg, 1, sizeof seg, f);
		fclose(f);
	}
	int rounds = 0, cut = 0, done = 0;
	for (uint64_t fuel = 20; d > 0 && !done && fuel < 100000; fuel = fuel * 5 / 4 + 1) {
		char ep[256];
		pid_t pid = fork_server(img, ep);
		CHECK(pid > 0, "forked arfd did not start");
		if (pid <= 0)
			break;
		struct arc_opts o = { .timeout_ms = 3000 };
		struct arc *a = arc_connect(ep, &o, err, sizeof err);
		int64_t args[5] = { d, 0755, 0, 0, 0 };   /* key 0: unkeyed */
		struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = "mkdir", .args = args,
		                      .n_args = 5, .argbytes = "victim", .argbytes_len = 6,
		                      .fuel = fuel };
		int rc = a ? arc_exec(a, &x) : -1;
		free(x.out);
		if (rc == 0) {
			CHECK(x.value > 0, "mkdir victim with fuel %" PRIu64 ": %" PRId64, fuel, x.value);
			done = 1;
		} else {
			CHECK(x.trapped && x.trap.kind == 4, "fuel %" PRIu64 ": rc %d trap kind %u", fuel,
			      rc, x.trap.kind);
		}
		if (a)
			arc_close(a);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		int n = interrupted_ops(img);
		cut += n > 0;
		rounds++;
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_CLEAN, "SIGKILL after %" PRIu64 " fuel (journal: %d cut short): "
		      "fsck %d:\n%s", fuel, n, frc, report);
		/* every fourth round, a real restart: attach rolls back, the tree is as before */
		if (!done && rounds % 4 == 0 && serve(&k, img)) {
			CHECK(arf_lookup(k.c, (uint64_t)d, "victim") == -ENOENT,
			      "victim exists after roll-back (fuel %" PRIu64 ")", fuel);
			unserve(&k);
			fsck_clean("after a roll-back and a clean stop", img);
		}
	}
	printf("crash: %d kills, %d of them in the middle of the mkdir (journal in use)\n", rounds,
	       cut);
	CHECK(done && cut >= 5, "kills %d, mid-operation %d, completed %d", rounds, cut, done);
	if (serve(&k, img)) {
		struct arf_dirent *ents = NULL;
		int n = list_dir(k.c, (uint64_t)d, 1024, &ents);
		CHECK(n == 257, "after the crashes: crash has %d entries", n);
		free(ents);
		CHECK(arf_lookup(k.c, (uint64_t)d, "victim") > 0, "victim made by the last run");
		CHECK(arf_mkdir(k.c, (uint64_t)d, "after", 0755, 0, 0) > 0, "mkdir after restart");
		unserve(&k);
	}
	fsck_clean("after the crashes and a restart", img);
}

/* ---- symlink, readlink, link ---- */

static void test_links(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	char err[512];
	int64_t d = arf_mkdir(c, ARF_INO_ROOT, "links", 0755, 0, 0);
	CHECK(d > 2, "mkdir links: %" PRId64, d);

	/* symlinks: inline (<= 144 bytes), in a block (145 .. 4095) */
	static char t144[145], t145[146], t4095[4096], t4096[4097], buf[5000];
	memset(t144, 'i', 144);
	memset(t145, 'b', 145);
	memset(t4095, 'm', 4095);
	memset(t4096, 'x', 4096);
	const struct { const char *name, *target; } syms[] = {
		{ "short", "a/b/../c" }, { "one", "/" }, { "s144", t144 }, { "s145", t145 },
		{ "s4095", t4095 },
	};
	int64_t si[5];
	for (int i = 0; i < 5; i++) {
		si[i] = arf_symlink(c, (uint64_t)d, syms[i].name, syms[i].target, 7, 8);
		size_t tl = strlen(syms[i].target);
		struct arf_attr at;
		int g = si[i] > 0 ? arf_getattr(c, (uint64_t)si[i], &at) : -1;
		CHECK(si[i] > 2 && g == 0 && at.mode == (ARF_S_IFLNK | 0777) && at.size == tl &&
		      at.nlink == 1 && at.uid == 7 && at.gid == 8 &&
		      at.nblocks == (tl > ARF_I_BODY_LEN ? 1u : 0u),
		      "symlink %s: %" PRId64 ", mode %o size %" PRIu64 " nblocks %" PRIu64,
		      syms[i].name, si[i], at.mode, at.size, at.nblocks);
		int n = arf_readlink(c, (uint64_t)si[i], buf, sizeof buf);
		CHECK(n == (int)tl && !memcmp(buf, syms[i].target, tl), "readlink %s: %d",
		      syms[i].name, n);
		CHECK(arf_lookup(c, (uint64_t)d, syms[i].name) == si[i], "lookup %s", syms[i].name);
	}
	CHECK(arf_readlink(c, (uint64_t)si[4], buf, 10) == 10 && !memcmp(buf, t4095, 10),
	      "readlink into a short buffer is cut");
	CHECK(arf_lookup(c, ARF_INO_ROOT, "links/short/x") == -ELOOP, "a symlink inside a path");
	struct arf_dirent *ents = NULL;
	int n = list_dir(c, (uint64_t)d, 10, &ents);
	int lnk = 0;
	for (int i = 0; i < n; i++)
		lnk += ents[i].type == ARF_DT_LNK;
	CHECK(n == 5 && lnk == 5, "readdir: %d entries, %d symlinks", n, lnk);
	free(ents);

	/* table-driven errors */
	int64_t f = arf_create(c, (uint64_t)d, "file", 0644, 0, 0);
	int64_t sub = arf_mkdir(c, (uint64_t)d, "sub", 0755, 0, 0);
	CHECK(f > 0 && sub > 0, "create file, mkdir sub");
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = '\0';
	const struct { const char *what; uint64_t dir; const char *name, *target; int64_t want; }
	serr[] = {
		{ "empty target", (uint64_t)d, "e", "", -ENOENT },
		{ "target 4096", (uint64_t)d, "e", t4096, -ENAMETOOLONG },
		{ "exists", (uint64_t)d, "short", "x", -EEXIST },
		{ "exists (a file)", (uint64_t)d, "file", "x", -EEXIST },
		{ "name .", (uint64_t)d, ".", "x", -EEXIST },
		{ "name ..", (uint64_t)d, "..", "x", -EEXIST },
		{ "empty name", (uint64_t)d, "", "x", -ENOENT },
		{ "name with /", (uint64_t)d, "a/b", "x", -EINVAL },
		{ "long name", (uint64_t)d, longname, "x", -ENAMETOOLONG },
		{ "in a file", (uint64_t)f, "e", "x", -ENOTDIR },
		{ "in a free inode", 3000, "e", "x", -ENOENT },
		{ "in inode 0", 0, "e", "x", -EINVAL },
		{ "in no inode", 999999999, "e", "x", -EINVAL },
	};
	for (size_t i = 0; i < sizeof serr / sizeof serr[0]; i++) {
		int64_t r = arf_symlink(c, serr[i].dir, serr[i].name, serr[i].target, 0, 0);
		CHECK(r == serr[i].want, "symlink %s: %" PRId64 ", want %" PRId64, serr[i].what, r,
		      serr[i].want);
	}
	const struct { const char *what; uint64_t ino; int want; } rerr[] = {
		{ "a file", (uint64_t)f, -EINVAL }, { "a directory", (uint64_t)sub, -EINVAL },
		{ "a free inode", 3000, -ENOENT }, { "inode 0", 0, -EINVAL },
		{ "no inode", 999999999, -EINVAL },
	};
	for (size_t i = 0; i < sizeof rerr / sizeof rerr[0]; i++) {
		int r = arf_readlink(c, rerr[i].ino, buf, sizeof buf);
		CHECK(r == rerr[i].want, "readlink %s: %d, want %d", rerr[i].what, r, rerr[i].want);
	}

	/* hard links */
	CHECK(arf_link(c, (uint64_t)f, (uint64_t)d, "file2") == 0, "link file file2");
	CHECK(arf_link(c, (uint64_t)f, (uint64_t)sub, "file3") == 0, "link file sub/file3");
	CHECK(arf_link(c, (uint64_t)si[3], (uint64_t)sub, "sym") == 0, "link a symlink");
	struct arf_attr at;
	CHECK(arf_getattr(c, (uint64_t)f, &at) == 0 && at.nlink == 3, "file nlink %u", at.nlink);
	CHECK(arf_lookup(c, (uint64_t)d, "sub/file3") == f && arf_lookup(c, (uint64_t)d, "file2") == f,
	      "the links name the file");
	const struct { const char *what; uint64_t ino, dir; const char *name; int want; } lerr[] = {
		{ "a directory", (uint64_t)sub, (uint64_t)d, "x", -EPERM },
		{ "the root", ARF_INO_ROOT, (uint64_t)d, "x", -EPERM },
		{ "onto an existing name", (uint64_t)f, (uint64_t)d, "short", -EEXIST },
		{ "a directory onto an existing name", (uint64_t)sub, (uint64_t)d, "file", -EEXIST },
		{ "name .", (uint64_t)f, (uint64_t)d, ".", -EEXIST },
		{ "empty name", (uint64_t)f, (uint64_t)d, "", -ENOENT },
		{ "name with /", (uint64_t)f, (uint64_t)d, "a/b", -EINVAL },
		{ "long name", (uint64_t)f, (uint64_t)d, longname, -ENAMETOOLONG },
		{ "a free inode", 3000, (uint64_t)d, "x", -ENOENT },
		{ "inode 0", 0, (uint64_t)d, "x", -EINVAL },
		{ "into a file", (uint64_t)f, (uint64_t)f, "x", -ENOTDIR },
		{ "into a free inode", (uint64_t)f, 3000, "x", -ENOENT },
	};
	for (size_t i = 0; i < sizeof lerr / sizeof lerr[0]; i++) {
		int r = arf_link(c, lerr[i].ino, lerr[i].dir, lerr[i].name);
		CHECK(r == lerr[i].want, "link %s: %d, want %d", lerr[i].what, r, lerr[i].want);
	}
	/* unlink one name at a time: the inode lives while a name is left */
	CHECK(arf_unlink(c, (uint64_t)d, "file") == 0 && arf_getattr(c, (uint64_t)f, &at) == 0 &&
	      at.nlink == 2, "unlink one of three: nlink %u", at.nlink);
	CHECK(arf_unlink(c, (uint64_t)sub, "file3") == 0 && arf_getattr(c, (uint64_t)f, &at) == 0 &&
	      at.nlink == 1, "unlink two of three: nlink %u", at.nlink);
	/* long symlinks give their block back when the last name goes (fsck checks the maps) */
	CHECK(arf_unlink(c, (uint64_t)d, "s145") == 0 &&
	      arf_readlink(c, (uint64_t)si[3], buf, sizeof buf) == 145, "unlink one name of s145");
	CHECK(arf_unlink(c, (uint64_t)sub, "sym") == 0 &&
	      arf_getattr(c, (uint64_t)si[3], &at) == -ENOENT, "s145 freed");
	CHECK(arf_unlink(c, (uint64_t)d, "s4095") == 0 && arf_unlink(c, (uint64_t)d, "short") == 0,
	      "unlink symlinks");
	unserve(&k);
	fsck_clean("after symlinks and links", img);

	/* EMLINK: a link count at the top (set in the stopped image, then put back) */
	struct arf_image m;
	int64_t f2 = -1;
	if (serve(&k, img)) {
		f2 = arf_lookup(k.c, (uint64_t)d, "file2");
		unserve(&k);
	}
	CHECK(f2 > 0 && arf_image_open(img, ARF_OPEN_RW, &m, err, sizeof err) == 0, "open: %s", err);
	if (f2 > 0) {
		struct arf_inode *in = (struct arf_inode *)(m.base + m.sb->itable_off +
		                                            (uint64_t)f2 * ARF_INO_SIZE);
		in->nlink = UINT32_MAX;
		arf_image_close(&m, err, sizeof err);
		if (serve(&k, img)) {
			CHECK(arf_link(k.c, (uint64_t)f2, (uint64_t)d, "more") == -EMLINK, "EMLINK");
			unserve(&k);
		}
		if (arf_image_open(img, ARF_OPEN_RW, &m, err, sizeof err) == 0) {
			in = (struct arf_inode *)(m.base + m.sb->itable_off + (uint64_t)f2 * ARF_INO_SIZE);
			in->nlink = 1;
			arf_image_close(&m, err, sizeof err);
		}
	}
	fsck_clean("after EMLINK", img);
}

/* ---- rename ---- */

static int64_t look(struct arf_client *c, const char *path)
{
	return arf_lookup(c, ARF_INO_ROOT, path);
}

static uint32_t nlink_of(struct arf_client *c, int64_t ino)
{
	struct arf_attr at;
	return arf_getattr(c, (uint64_t)ino, &at) == 0 ? at.nlink : 0;
}

static void test_rename(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	char err[512];
	int64_t r = mkdir_p(c, "r");
	int64_t d1 = mkdir_p(c, "r/d1"), d2 = mkdir_p(c, "r/d2");
	int64_t sub = mkdir_p(c, "r/d1/sub"), deep = mkdir_p(c, "r/d1/sub/deep");
	int64_t empty = mkdir_p(c, "r/d2/empty"), full = mkdir_p(c, "r/d2/full");
	int64_t f1 = arf_create(c, (uint64_t)d1, "f1", 0644, 0, 0);
	int64_t f2 = arf_create(c, (uint64_t)d2, "f2", 0644, 0, 0);
	CHECK(arf_create(c, (uint64_t)full, "x", 0644, 0, 0) > 0 && f1 > 0 && f2 > 0 && deep > 0 &&
	      empty > 0 && arf_link(c, (uint64_t)f1, (uint64_t)d2, "f1link") == 0 && r > 0,
	      "rename fixture");
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = '\0';
	const unsigned NR = ARF_RENAME_NOREPLACE, EX = ARF_RENAME_EXCHANGE;
	const struct {
		const char *what;
		int64_t od;
		const char *on;
		int64_t nd;
		const char *nn;
		unsigned flags;
		int want;
	} cases[] = {
		{ "missing", d1, "nope", d2, "x", 0, -ENOENT },
		{ "file over directory", d1, "f1", d2, "empty", 0, -EISDIR },
		{ "directory over file", d1, "sub", d2, "f2", 0, -ENOTDIR },
		{ "directory over full directory", d1, "sub", d2, "full", 0, -ENOTEMPTY },
		{ "noreplace", d1, "f1", d2, "f2", NR, -EEXIST },
		{ "noreplace onto a directory", d1, "sub", d2, "empty", NR, -EEXIST },
		{ "exchange with nothing", d1, "f1", d2, "nope", EX, -ENOENT },
		{ "into itself", d1, "sub", sub, "x", 0, -EINVAL },
		{ "into its subtree", d1, "sub", deep, "x", 0, -EINVAL },
		{ "into its subtree, exchange", d1, "sub", deep, "x", EX, -ENOENT },
		{ "over its own ancestor", sub, "deep", r, "d1", 0, -ENOTEMPTY },
		{ "exchange with its ancestor", sub, "deep", r, "d1", EX, -EINVAL },
		{ "exchange into its subtree", r, "d1", deep, "x", EX, -ENOENT },
		{ "flags 3", d1, "f1", d2, "g", 3, -EINVAL },
		{ "flags 4", d1, "f1", d2, "g", 4, -EINVAL },
		{ "old .", d1, ".", d2, "g", 0, -EBUSY },
		{ "old ..", d1, "..", d2, "g", 0, -EBUSY },
		{ "new ..", d1, "f1", d2, "..", 0, -EBUSY },
		{ "new . noreplace", d1, "f1", d2, ".", NR, -EEXIST },
		{ "old empty", d1, "", d2, "g", 0, -ENOENT },
		{ "new empty", d1, "f1", d2, "", 0, -ENOENT },
		{ "new with /", d1, "f1", d2, "a/b", 0, -EINVAL },
		{ "new too long", d1, "f1", d2, longname, 0, -ENAMETOOLONG },
		{ "old too long", d1, longname, d2, "g", 0, -ENAMETOOLONG },
		{ "olddir a file", f1, "x", d2, "g", 0, -ENOTDIR },
		{ "newdir a file", d1, "f1", f2, "g", 0, -ENOTDIR },
		{ "olddir free", 3000, "x", d2, "g", 0, -ENOENT },
		{ "newdir 0", d1, "f1", 0, "g", 0, -EINVAL },
		{ "same name", d1, "f1", d1, "f1", 0, 0 },
		{ "same name noreplace", d1, "f1", d1, "f1", NR, -EEXIST },
		{ "same name exchange", d1, "f1", d1, "f1", EX, 0 },
		{ "two links of one file", d1, "f1", d2, "f1link", 0, 0 },
		{ "directory onto itself", r, "d1", r, "d1", 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = arf_rename(c, (uint64_t)cases[i].od, cases[i].on, (uint64_t)cases[i].nd,
		                    cases[i].nn, cases[i].flags);
		CHECK(rc == cases[i].want, "rename %s: %d, want %d (%s)", cases[i].what, rc,
		      cases[i].want, rc == -EIO ? arf_client_errmsg(c) : "");
	}
	/* nothing moved */
	CHECK(look(c, "r/d1/f1") == f1 && look(c, "r/d2/f1link") == f1 && look(c, "r/d2/f2") == f2 &&
	      look(c, "r/d1/sub/deep") == deep && look(c, "r/d2/empty") == empty &&
	      nlink_of(c, f1) == 2 && nlink_of(c, d1) == 3 && nlink_of(c, d2) == 4,
	      "the failed renames changed nothing");
	unserve(&k);
	fsck_clean("after the failed renames", img);
	if (!serve(&k, img))
		return;
	c = k.c;
	struct arf_data *dd = arf_data_open(k.a, data_segpath, err, sizeof err);
	CHECK(dd != NULL, "arf_data_open: %s", err);
	if (!dd) {
		unserve(&k);
		return;
	}
	struct arf_attr at, at2;

	/* a file in one directory, then to another */
	CHECK(arf_getattr(c, (uint64_t)f1, &at) == 0, "getattr f1");
	CHECK(arf_rename(c, (uint64_t)d1, "f1", (uint64_t)d1, "g1", 0) == 0 &&
	      look(c, "r/d1/f1") == -ENOENT && look(c, "r/d1/g1") == f1, "rename d1/f1 d1/g1");
	CHECK(arf_getattr(c, (uint64_t)f1, &at2) == 0 && at2.ctime >= at.ctime && at2.nlink == 2,
	      "ctime and nlink of the moved file");
	CHECK(arf_rename(c, (uint64_t)d1, "g1", (uint64_t)d2, "g1", NR) == 0 &&
	      look(c, "r/d1/g1") == -ENOENT && look(c, "r/d2/g1") == f1, "move d1/g1 d2/g1");
	/* file over file: the victim and its data blocks are freed (fsck checks the maps) */
	int64_t v = arf_create(c, (uint64_t)d1, "victim", 0644, 0, 0);
	static char data[50000];
	memset(data, 'v', sizeof data);
	CHECK(v > 0 && dd && arf_write(dd, (uint64_t)v, 0, data, sizeof data) == (int64_t)sizeof data,
	      "victim with data");
	CHECK(arf_rename(c, (uint64_t)d2, "f2", (uint64_t)d1, "victim", 0) == 0 &&
	      look(c, "r/d1/victim") == f2 && look(c, "r/d2/f2") == -ENOENT &&
	      arf_getattr(c, (uint64_t)v, &at) == -ENOENT, "file over a file with data");
	/* over a name of a file with two: it keeps one */
	int64_t t2 = arf_create(c, (uint64_t)d2, "t2", 0644, 0, 0);
	CHECK(t2 > 0 && arf_link(c, (uint64_t)t2, (uint64_t)d1, "t2b") == 0 &&
	      arf_rename(c, (uint64_t)d1, "victim", (uint64_t)d2, "t2", 0) == 0 &&
	      nlink_of(c, t2) == 1 && look(c, "r/d1/t2b") == t2 && look(c, "r/d2/t2") == f2,
	      "file over a file with two links");
	/* a long symlink over a file, a file over a long symlink (its block freed) */
	static char t300[301];
	memset(t300, 's', 300);
	int64_t ls = arf_symlink(c, (uint64_t)d1, "ls", t300, 0, 0);
	CHECK(ls > 0 && arf_rename(c, (uint64_t)d1, "t2b", (uint64_t)d1, "ls", 0) == 0 &&
	      arf_getattr(c, (uint64_t)ls, &at) == -ENOENT && look(c, "r/d1/ls") == t2,
	      "file over a long symlink");
	/* a directory to another directory: parent, "..", both link counts */
	uint32_t n1 = nlink_of(c, d1), n2 = nlink_of(c, d2);
	CHECK(arf_rename(c, (uint64_t)d1, "sub", (uint64_t)d2, "sub2", 0) == 0 &&
	      look(c, "r/d2/sub2/deep") == deep && look(c, "r/d2/sub2/..") == d2 &&
	      look(c, "r/d2/sub2/deep/../..") == d2 && nlink_of(c, d1) == n1 - 1 &&
	      nlink_of(c, d2) == n2 + 1 && arf_getattr(c, (uint64_t)sub, &at) == 0 &&
	      at.parent == (uint64_t)d2 && at.nlink == 3,
	      "move a directory: nlink %u -> %u, %u -> %u", n1, nlink_of(c, d1), n2, nlink_of(c, d2));
	/* a directory over an empty one, same directory, then across */
	n2 = nlink_of(c, d2);
	CHECK(arf_rename(c, (uint64_t)d2, "sub2", (uint64_t)d2, "empty", 0) == 0 &&
	      arf_getattr(c, (uint64_t)empty, &at) == -ENOENT && look(c, "r/d2/empty") == sub &&
	      nlink_of(c, d2) == n2 - 1, "directory over an empty directory");
	int64_t e2 = mkdir_p(c, "r/d1/e2");
	n1 = nlink_of(c, d1), n2 = nlink_of(c, d2);
	CHECK(e2 > 0 && arf_rename(c, (uint64_t)d2, "empty", (uint64_t)d1, "e2", 0) == 0 &&
	      arf_getattr(c, (uint64_t)e2, &at) == -ENOENT && look(c, "r/d1/e2/deep") == deep &&
	      nlink_of(c, d1) == n1 && nlink_of(c, d2) == n2 - 1 &&
	      arf_getattr(c, (uint64_t)sub, &at) == 0 && at.parent == (uint64_t)d1,
	      "directory over an empty directory elsewhere");
	/* exchange: a directory and a file across directories, then two files */
	n1 = nlink_of(c, d1), n2 = nlink_of(c, d2);
	CHECK(arf_rename(c, (uint64_t)d1, "e2", (uint64_t)d2, "g1", EX) == 0 &&
	      look(c, "r/d1/e2") == f1 && look(c, "r/d2/g1") == sub &&
	      look(c, "r/d2/g1/deep") == deep && nlink_of(c, d1) == n1 - 1 &&
	      nlink_of(c, d2) == n2 + 1 && arf_getattr(c, (uint64_t)sub, &at) == 0 &&
	      at.parent == (uint64_t)d2, "exchange a directory and a file");
	CHECK(arf_rename(c, (uint64_t)d1, "e2", (uint64_t)d1, "ls", EX) == 0 &&
	      look(c, "r/d1/e2") == t2 && look(c, "r/d1/ls") == f1, "exchange two files");
	CHECK(arf_rename(c, (uint64_t)d2, "g1", (uint64_t)d2, "full", EX) == 0 &&
	      look(c, "r/d2/full/deep") == deep && look(c, "r/d2/g1/x") > 0 &&
	      nlink_of(c, d2) == n2 + 1, "exchange two directories");
	struct arf_dirent *ents = NULL;
	int n = list_dir(c, (uint64_t)d2, 100, &ents);
	int types = 0;
	for (int i = 0; i < n; i++)
		types += (!strcmp(ents[i].name, "g1") || !strcmp(ents[i].name, "full")) &&
		         ents[i].type == ARF_DT_DIR;
	CHECK(types == 2, "readdir types after the exchanges");
	free(ents);

	/* renames that grow the target's table: 127 entries, then 200 names moved in and 200
	 * renamed in place (each an insert past the load limit now and then) */
	int64_t big = mkdir_p(c, "r/big"), src = mkdir_p(c, "r/src");
	int bad = 0;
	for (int i = 0; i < 127; i++) {
		char name[32];
		snprintf(name, sizeof name, "pre%d", i);
		bad += arf_create(c, (uint64_t)big, name, 0644, 0, 0) <= 0;
	}
	for (int i = 0; i < 200; i++) {
		char name[32];
		snprintf(name, sizeof name, "m%d", i);
		bad += (i % 2 ? arf_mkdir(c, (uint64_t)src, name, 0755, 0, 0)
		              : arf_create(c, (uint64_t)src, name, 0644, 0, 0)) <= 0;
	}
	for (int i = 0; i < 200; i++) {
		char name[32], nn[32];
		snprintf(name, sizeof name, "m%d", i);
		snprintf(nn, sizeof nn, "moved%d", i);
		int rc = arf_rename(c, (uint64_t)src, name, (uint64_t)big, nn, 0);
		if (rc != 0 && bad++ < 3)
			printf("  rename src/%s big/%s: %d %s\n", name, nn, rc, arf_client_errmsg(c));
	}
	/* then every name renamed in place: the tombstones push the table past its load */
	for (int i = 0; i < 327; i++) {
		char name[32], nn[64];
		snprintf(name, sizeof name, i < 127 ? "pre%d" : "moved%d", i < 127 ? i : i - 127);
		snprintf(nn, sizeof nn, "in-place-%s", name);
		bad += arf_rename(c, (uint64_t)big, name, (uint64_t)big, nn, 0) != 0;
	}
	CHECK(bad == 0, "renames into a growing directory: %d failed", bad);
	n = list_dir(c, (uint64_t)big, 1000, &ents);
	CHECK(n == 327 && nlink_of(c, big) == 102 && nlink_of(c, src) == 2,
	      "big has %d entries, nlink %u", n, nlink_of(c, big));
	free(ents);
	n = list_dir(c, (uint64_t)src, 1000, &ents);
	CHECK(n == 0, "src has %d entries", n);
	free(ents);
	arf_data_close(dd);
	unserve(&k);
	fsck_clean("after the renames", img);
}

/* ---- crashes in the middle of symlink, link and rename ---- */

/* ---- extended attributes ---- */

/* A run of entry with raw arguments and bytes, as a hostile client sends them (xraw_out:
 * and the run's output, at most max bytes, in out, its length in *out_len). */
static int64_t xraw_out(struct conn *k, const char *entry, const int64_t *args, unsigned n,
                        const void *bytes, size_t len, void *out, size_t max, size_t *out_len)
{
	static char seg[1 << 20];
	static size_t seg_len;
	if (!seg_len) {
		FILE *f = fopen(segpath, "rb");
		if (f) {
			seg_len = fread(seg, 1, sizeof seg, f);
			fclose(f);
		}
	}
	struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = entry, .args = args,
	                      .n_args = n, .argbytes = bytes, .argbytes_len = len };
	int rc = arc_exec(k->a, &x);
	*out_len = x.out_len < max ? x.out_len : max;
	if (*out_len)
		memcpy(out, x.out, *out_len);
	free(x.out);
	return rc == 0 ? x.value : -1000;
}

static int64_t xraw(struct conn *k, const char *entry, const int64_t *args, unsigned n,
                    const void *bytes, size_t len)
{
	size_t out_len;
	return xraw_out(k, entry, args, n, bytes, len, NULL, 0, &out_len);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names listxattr gives for ino, sorted and joined with ',' ("" for none). */
static const char *xnames(struct arf_client *c, int64_t ino)
{
	static char out[8192];
	char buf[ARF_XATTR_LIST_MAX], *v[ARF_XATTR_LIST_MAX / 2];
	int64_t n = arf_listxattr(c, (uint64_t)ino, buf, sizeof buf);
	if (n < 0) {
		snprintf(out, sizeof out, "error %" PRId64, n);
		return out;
	}
	size_t nv = 0;
	for (int64_t k = 0; k < n; k += (int64_t)strlen(buf + k) + 1)
		v[nv++] = buf + k;
	qsort(v, nv, sizeof *v, cmp_str);
	out[0] = '\0';
	for (size_t k = 0; k < nv; k++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", k ? "," : "", v[k]);
	return out;
}

static int64_t ctime_of(struct arf_client *c, int64_t ino)
{
	struct arf_attr at;
	return arf_getattr(c, (uint64_t)ino, &at) == 0 ? at.ctime : -1;
}

/* Every rule of setxattr, getxattr, listxattr and removexattr against what Linux's tmpfs
 * and ext4 answer (flags, ERANGE, ENODATA, E2BIG, ENOSPC of a full block, user.* on other
 * types EPERM, ctime), hostile raw calls, and the block given back by the last removal and
 * by unlink and rmdir (fsck's block map must agree after). */
/* Inode ino's layout record as getattr's answer carries it (arf_attr.layout): 1 when it has
 * one, 0 when not (all zeros), or getattr's -errno. */
static int layout_of(struct arf_client *c, int64_t ino, uint32_t rec[4])
{
	struct arf_attr at;
	int rc = arf_getattr(c, (uint64_t)ino, &at);
	if (rc < 0)
		return rc;
	memcpy(rec, at.layout, sizeof at.layout);
	return (rec[0] | rec[1] | rec[2] | rec[3]) != 0;
}

/* A cluster file's layout record (docs/cluster.md, "A file's own stripe unit"): setlayout's
 * every rule (table-driven), the record in getattr's answer and in the others that answer
 * as getattr does (getattrs, lookupattr, readdirplus), the record left alone by the data
 * path (a write to the metadata inode refused, truncate and unlink free nothing), fsck
 * clean. */
static void test_layout(const char *img)
{
	struct conn k;
	char err[512];
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	struct arf_data *dd = arf_data_open(k.a, data_segpath, err, sizeof err);
	CHECK(dd != NULL, "arf_data_open: %s", err);
	if (!dd) {
		unserve(&k);
		return;
	}
	int64_t d = mkdir_p(c, "lay"), f = arf_create(c, (uint64_t)d, "f", 0644, 0, 0);
	int64_t full = arf_create(c, (uint64_t)d, "full", 0644, 0, 0);
	int64_t sized = arf_create(c, (uint64_t)d, "sized", 0644, 0, 0);
	int64_t p = arf_mknod(c, (uint64_t)d, "p", ARF_S_IFIFO | 0644, 0, 0);
	CHECK(d > 0 && f > 0 && full > 0 && sized > 0 && p > 0 && dd &&
	      arf_write(dd, (uint64_t)full, 0, "x", 1) == 1 &&
	      arf_truncate(dd, (uint64_t)sized, 5000) == 0, "layout fixture");
	uint32_t rec[4];
	CHECK(layout_of(c, f, rec) == 0, "no record yet");
	static const struct {
		const char *what;
		int which;                     /* 0 f, 1 full, 2 sized, 3 fifo, 4 dir, 5 no inode */
		uint32_t unit, count, first;
		int want;
	} cases[] = {
		{ "unit 0", 0, 0, 3, 0, -EINVAL },
		{ "unit 1000", 0, 1000, 3, 0, -EINVAL },
		{ "unit 4095", 0, 4095, 3, 0, -EINVAL },
		{ "unit 6000", 0, 6000, 3, 0, -EINVAL },
		{ "unit 8M", 0, 8u << 20, 3, 0, -EINVAL },
		{ "unit 4M + 4K", 0, (4u << 20) + 4096, 3, 0, -EINVAL },
		{ "count 0", 0, 4096, 0, 0, -EINVAL },
		{ "count 65", 0, 4096, 65, 0, -EINVAL },
		{ "first = count", 0, 4096, 3, 3, -EINVAL },
		{ "a file with bytes", 1, 4096, 3, 0, -EBUSY },
		{ "a file with a size", 2, 4096, 3, 0, -EBUSY },
		{ "a fifo", 3, 4096, 3, 0, -EINVAL },
		{ "a directory", 4, 4096, 3, 0, -EINVAL },
		{ "no such inode", 5, 4096, 3, 0, -EINVAL },
		{ "4K", 0, 4096, 3, 2, 0 },
		{ "4M, again while empty", 0, 4u << 20, 64, 63, 0 },
		{ "64K", 0, 65536, 3, 1, 0 },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ino[] = { f, full, sized, p, d, 1ll << 40 };
		int rc = arf_setlayout(c, (uint64_t)ino[cases[i].which], cases[i].unit,
		                       cases[i].count, cases[i].first);
		CHECK(rc == cases[i].want, "setlayout, %s: %d, want %d", cases[i].what, rc,
		      cases[i].want);
	}
	CHECK(layout_of(c, f, rec) == 1 && rec[0] == 65536 && rec[1] == 3 &&
	      rec[2] == 1 && rec[3] == 0, "the record: %u %u %u %u", rec[0], rec[1], rec[2], rec[3]);
	/* the same record from every answer shaped as getattr's */
	uint64_t two[2] = { (uint64_t)full, (uint64_t)f };
	struct arf_attr at2[2], la, rp[8];
	struct arf_dirent ents[8];
	int e2[2];
	uint64_t cookie = 0;
	int n = arf_readdirplus(c, (uint64_t)d, &cookie, ents, rp, 8), seen = 0;
	for (int i = 0; i < n; i++)
		if (ents[i].ino == (uint64_t)f)
			seen += !memcmp(rp[i].layout, rec, sizeof rec);
		else
			seen += rp[i].layout[0] == 0 ? 0 : 100;
	CHECK(arf_getattrs(c, two, 2, at2, e2) == 0 && at2[0].layout[0] == 0 &&
	      !memcmp(at2[1].layout, rec, sizeof rec), "getattrs: the record of the second only");
	CHECK(arf_lookup_attr(c, 1, "lay/f", &la) == f && !memcmp(la.layout, rec, sizeof rec),
	      "lookupattr: the record");
	CHECK(n == 4 && seen == 1, "readdirplus: the record of f only (%d entries, %d)", n, seen);
	CHECK(layout_of(c, full, rec) == 0, "a refused file has none");
	CHECK(layout_of(c, 1ll << 40, rec) == -EINVAL, "getattr of no inode");
	/* the metadata inode of a striped file takes no bytes; its size is set as ever */
	CHECK(arf_write(dd, (uint64_t)f, 0, "abc", 3) == -EINVAL, "a write to it refused");
	CHECK(arf_truncate(dd, (uint64_t)f, 300000) == 0 && layout_of(c, f, rec) == 1 &&
	      rec[0] == 65536, "its size set, the record kept");
	CHECK(arf_setlayout(c, (uint64_t)f, 4096, 3, 0) == -EBUSY, "set once it has a size");
	arf_data_close(dd);
	unserve(&k);
	fsck_clean("files with layout records", img);
	if (!serve(&k, img))
		return;
	c = k.c;
	int64_t g = arf_create(c, (uint64_t)d, "g", 0644, 0, 0);
	CHECK(g > 0 && arf_setlayout(c, (uint64_t)g, 8192, 2, 1) == 0 &&
	      arf_unlink(c, (uint64_t)d, "f") == 0 && arf_unlink(c, (uint64_t)d, "g") == 0,
	      "unlink of files with records");
	int64_t h = arf_create(c, (uint64_t)d, "h", 0644, 0, 0);
	CHECK(h > 0 && layout_of(c, h, rec) == 0, "a new inode has no record");
	unserve(&k);
	fsck_clean("after the unlinks", img);
}

static void test_xattr(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	int64_t d = mkdir_p(c, "x"), f = arf_create(c, (uint64_t)d, "f", 0644, 0, 0);
	int64_t s = arf_symlink(c, (uint64_t)d, "s", "f", 0, 0);
	int64_t p = arf_mknod(c, (uint64_t)d, "p", ARF_S_IFIFO | 0644, 0, 0);
	struct arf_attr at;
	int64_t dev = arf_mknod_attr(c, (uint64_t)d, "dev", ARF_S_IFCHR | 0600, makedev(1, 3), 0, 0, &at);
	CHECK(d > 0 && f > 0 && s > 0 && p > 0 && dev > 0, "xattr fixture");
	char buf[8192];

	/* nothing yet */
	CHECK(arf_listxattr(c, (uint64_t)f, buf, sizeof buf) == 0, "empty list");
	CHECK(arf_listxattr(c, (uint64_t)f, NULL, 0) == 0, "empty list length");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.a", buf, sizeof buf) == -ENODATA, "get missing");
	CHECK(arf_removexattr(c, (uint64_t)f, "user.a") == -ENODATA, "remove missing");

	/* set, get by length and by value, ERANGE for a short buffer */
	int64_t t0 = ctime_of(c, f);
	struct timespec ms = { 0, 2000000 };
	nanosleep(&ms, NULL);
	CHECK(arf_setxattr(c, (uint64_t)f, "user.a", "hello", 5, 0) == 0, "set");
	CHECK(ctime_of(c, f) > t0, "set moves ctime");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.a", NULL, 0) == 5, "get length");
	memset(buf, 0, sizeof buf);
	CHECK(arf_getxattr(c, (uint64_t)f, "user.a", buf, 5) == 5 && !memcmp(buf, "hello", 5),
	      "get value: '%s'", buf);
	CHECK(arf_getxattr(c, (uint64_t)f, "user.a", buf, 4) == -ERANGE, "get: ERANGE");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.ab", buf, 9) == -ENODATA, "a longer name");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.", buf, 9) == -ENODATA, "a shorter name");

	/* flags */
	CHECK(arf_setxattr(c, (uint64_t)f, "user.a", "x", 1, ARF_XATTR_CREATE) == -EEXIST, "CREATE");
	CHECK(arf_setxattr(c, (uint64_t)f, "user.b", "x", 1, ARF_XATTR_REPLACE) == -ENODATA, "REPLACE");
	CHECK(arf_setxattr(c, (uint64_t)f, "user.a", "x", 1, 3) == -EEXIST, "both flags, present");
	CHECK(arf_setxattr(c, (uint64_t)f, "user.b", "x", 1, 3) == -ENODATA, "both flags, absent");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.b", buf, 9) == -ENODATA, "a failed set adds nothing");
	CHECK(arf_setxattr(c, (uint64_t)f, "user.a", "a longer value", 14, ARF_XATTR_REPLACE) == 0,
	      "REPLACE present");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.a", buf, sizeof buf) == 14 &&
	      !memcmp(buf, "a longer value", 14), "replaced value");
	CHECK(arf_setxattr(c, (uint64_t)f, "user.b", "", 0, ARF_XATTR_CREATE) == 0, "empty value");
	CHECK(arf_getxattr(c, (uint64_t)f, "user.b", buf, sizeof buf) == 0, "empty value back");
	CHECK(arf_setxattr(c, (uint64_t)f, "trusted.t", "1", 1, 0) == 0 &&
	      arf_setxattr(c, (uint64_t)f, "security.s", "2", 1, 0) == 0, "other namespaces");
	CHECK(!strcmp(xnames(c, f), "security.s,trusted.t,user.a,user.b"), "list: %s", xnames(c, f));
	int64_t n = arf_listxattr(c, (uint64_t)f, NULL, 0);
	CHECK(n == 35, "list length %" PRId64, n);
	CHECK(arf_listxattr(c, (uint64_t)f, buf, (size_t)n - 1) == -ERANGE, "list: ERANGE");

	/* names: 255 bytes fit, 256 and empty are ERANGE (Linux) */
	char name[300];
	memcpy(name, "user.", 5);
	memset(name + 5, 'n', 250);
	name[255] = '\0';
	CHECK(arf_setxattr(c, (uint64_t)d, name, "v", 1, 0) == 0, "255-byte name");
	CHECK(arf_getxattr(c, (uint64_t)d, name, buf, sizeof buf) == 1, "255-byte name back");
	name[255] = 'n', name[256] = '\0';
	CHECK(arf_setxattr(c, (uint64_t)d, name, "v", 1, 0) == -ERANGE, "256-byte name");
	CHECK(arf_getxattr(c, (uint64_t)d, name, buf, 1) == -ERANGE, "get 256-byte name");
	CHECK(arf_removexattr(c, (uint64_t)d, name) == -ERANGE, "remove 256-byte name");
	CHECK(arf_setxattr(c, (uint64_t)d, "", "v", 1, 0) == -ERANGE, "empty name");

	/* user.* only on files and directories; other namespaces on any type */
	CHECK(arf_setxattr(c, (uint64_t)s, "user.a", "v", 1, 0) == -EPERM, "user.* on a symlink");
	CHECK(arf_setxattr(c, (uint64_t)p, "user.a", "v", 1, 0) == -EPERM, "user.* on a fifo");
	CHECK(arf_setxattr(c, (uint64_t)dev, "user.a", "v", 1, 0) == -EPERM, "user.* on a device");
	CHECK(arf_removexattr(c, (uint64_t)s, "user.a") == -EPERM, "remove user.* on a symlink");
	CHECK(arf_setxattr(c, (uint64_t)s, "trusted.a", "v", 1, 0) == 0, "trusted.* on a symlink");
	CHECK(arf_setxattr(c, (uint64_t)p, "security.a", "v", 1, 0) == 0, "security.* on a fifo");

	/* sizes: over 64 KiB E2BIG; the largest value fits alone, one more byte does not */
	static char big[70000];
	memset(big, 'v', sizeof big);
	CHECK(arf_setxattr(c, (uint64_t)f, "user.big", big, 65537, 0) == -E2BIG, "E2BIG");
	int64_t g = arf_create(c, (uint64_t)d, "g", 0644, 0, 0);
	CHECK(arf_setxattr(c, (uint64_t)g, "u", big, ARF_XATTR_VALUE_MAX + 1, 0) == -ENOSPC,
	      "one byte over the block");
	CHECK(arf_setxattr(c, (uint64_t)g, "u", big, ARF_XATTR_VALUE_MAX, 0) == 0, "the largest value");
	CHECK(arf_getxattr(c, (uint64_t)g, "u", buf, sizeof buf) == ARF_XATTR_VALUE_MAX &&
	      !memcmp(buf, big, ARF_XATTR_VALUE_MAX), "the largest value back");
	CHECK(arf_setxattr(c, (uint64_t)g, "v", "", 0, 0) == -ENOSPC, "a full block");
	CHECK(arf_setxattr(c, (uint64_t)g, "u", big, 10, 0) == 0, "a smaller value in its place");
	CHECK(arf_setxattr(c, (uint64_t)g, "v", "", 0, 0) == 0, "room again");

	/* fill a block with small entries; each stays readable; removals make room */
	int64_t h = arf_create(c, (uint64_t)d, "h", 0644, 0, 0);
	int count = 0, rc = 0;
	while (count < 1000) {
		char nm[32], val[32];
		snprintf(nm, sizeof nm, "user.k%d", count);
		snprintf(val, sizeof val, "value-%d", count);
		if ((rc = arf_setxattr(c, (uint64_t)h, nm, val, strlen(val), 0)) != 0)
			break;
		count++;
	}
	CHECK(rc == -ENOSPC && count > 100, "filled after %d: %d", count, rc);
	int bad = 0;
	for (int i = 0; i < count; i++) {
		char nm[32], val[32];
		snprintf(nm, sizeof nm, "user.k%d", i);
		snprintf(val, sizeof val, "value-%d", i);
		int64_t l = arf_getxattr(c, (uint64_t)h, nm, buf, sizeof buf);
		bad += l != (int64_t)strlen(val) || memcmp(buf, val, strlen(val));
	}
	CHECK(bad == 0, "%d of %d entries wrong in a full block", bad, count);
	t0 = ctime_of(c, h);
	nanosleep(&ms, NULL);
	CHECK(arf_removexattr(c, (uint64_t)h, "user.k0") == 0, "remove the first");
	CHECK(ctime_of(c, h) > t0, "remove moves ctime");
	CHECK(arf_getxattr(c, (uint64_t)h, "user.k1", buf, sizeof buf) == 7 &&
	      !memcmp(buf, "value-1", 7), "the next one moved down intact");
	CHECK(arf_setxattr(c, (uint64_t)h, "user.new", "1", 1, 0) == 0, "room after a removal");
	n = arf_listxattr(c, (uint64_t)h, buf, sizeof buf);
	CHECK(n > 0 && n <= ARF_XATTR_LIST_MAX, "the list of a full block: %" PRId64, n);

	/* the last removal gives the block back; unlink and rmdir give theirs */
	CHECK(arf_removexattr(c, (uint64_t)g, "u") == 0 && arf_removexattr(c, (uint64_t)g, "v") == 0,
	      "remove both");
	CHECK(!strcmp(xnames(c, g), ""), "nothing left: %s", xnames(c, g));
	CHECK(arf_setxattr(c, (uint64_t)g, "user.again", "1", 1, 0) == 0, "a new block");
	CHECK(arf_unlink(c, (uint64_t)d, "h") == 0, "unlink with xattrs");
	CHECK(arf_getxattr(c, (uint64_t)h, "user.k1", buf, sizeof buf) == -ENOENT, "freed inode");
	CHECK(arf_setxattr(c, (uint64_t)h, "user.k1", "", 0, 0) == -ENOENT, "set on a freed inode");
	int64_t e = mkdir_p(c, "x/e");
	CHECK(arf_setxattr(c, (uint64_t)e, "user.d", "1", 1, 0) == 0 &&
	      arf_rmdir(c, (uint64_t)d, "e") == 0, "rmdir with xattrs");

	/* hostile: numbers, lengths, bytes, flags */
	CHECK(arf_getxattr(c, 0, "user.a", buf, 9) == -EINVAL, "inode 0");
	CHECK(arf_listxattr(c, 1ull << 40, buf, 9) == -EINVAL, "no such inode");
	int64_t r1[5] = { f, 7, 0, 0, 0 };
	CHECK(xraw(&k, "setxattr", r1, 5, "user.a", 6) == -EINVAL, "nlen past the bytes");
	int64_t r2[5] = { f, 6, 0, 0, 0 };
	CHECK(xraw(&k, "setxattr", r2, 5, "user\0a", 6) == -EINVAL, "NUL in the name");
	int64_t r3[5] = { f, 6, 4, 0, 0 };
	CHECK(xraw(&k, "setxattr", r3, 5, "user.a", 6) == -EINVAL, "unknown flags");
	int64_t r4[5] = { f, 0, 0, 0, 0 };
	CHECK(xraw(&k, "setxattr", r4, 5, "user.a", 6) == -ERANGE, "nlen 0");
	int64_t r5[3] = { f, 0, 0 };
	CHECK(xraw(&k, "getxattr", r5, 2, "user\0a", 6) == -EINVAL, "get: NUL in the name");
	CHECK(xraw(&k, "removexattr", r5, 3, big, 256) == -ERANGE, "remove: 256 bytes");
	int64_t r6[5] = { f, 255, 0, 0, 0 };
	CHECK(xraw(&k, "setxattr", r6, 5, big, 255 + ARF_XATTR_VALUE_MAX) == -ENOSPC,
	      "raw: a value over the block");
	int64_t r7[5] = { f, 6, 0, ARF_XATTR_SETMODE | 01000, 0 };
	CHECK(xraw(&k, "setxattr", r7, 5, "user.a", 6) == -EINVAL, "mode: bits past 0777");
	int64_t r8[3] = { f, 0x20000, 0 };
	CHECK(xraw(&k, "removexattr", r8, 3, "user.a", 6) == -EINVAL, "remove: unknown mode bits");
	/* the mode argument: the 0777 bits change with the xattr, the others stay */
	CHECK(arf_getattr(c, (uint64_t)f, &at) == 0, "getattr f");
	uint32_t type_bits = at.mode & ~0777u;
	CHECK(arf_setxattr_mode(c, (uint64_t)f, "user.m", "1", 1, 0, 0640) == 0 &&
	      arf_getattr(c, (uint64_t)f, &at) == 0 && at.mode == (type_bits | 0640),
	      "set with a mode: 0%o", at.mode);
	CHECK(arf_removexattr_mode(c, (uint64_t)f, "user.m", 0604) == 0 &&
	      arf_getattr(c, (uint64_t)f, &at) == 0 && at.mode == (type_bits | 0604),
	      "remove with a mode: 0%o", at.mode);
	CHECK(arf_removexattr_mode(c, (uint64_t)f, "user.m", 0777) == -ENODATA &&
	      arf_getattr(c, (uint64_t)f, &at) == 0 && at.mode == (type_bits | 0604),
	      "a failed removal changes no mode");
	unserve(&k);
	fsck_clean("xattr", img);

	/* fsck finds a damaged block and --repair drops it */
	struct arf_image m;
	char err[512];
	if (arf_image_open(img, ARF_OPEN_RW, &m, err, sizeof err) == 0) {
		struct arf_inode *fi = (struct arf_inode *)(m.base + m.sb->itable_off +
		                                            (uint64_t)f * ARF_INO_SIZE);
		m.base[fi->xattr + ARF_A_HDR + ARF_XE_NAME] = 0;    /* a NUL in the first name */
		arf_image_close(&m, err, sizeof err);
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_PROBLEMS && strstr(report, "a NUL byte in a name"),
		      "damaged xattr block: fsck %d:\n%s", frc, report);
		struct arf_fsck_opts o = { .report = collect, .repair = true };
		struct arf_fsck_result r;
		report_len = 0;
		frc = arf_fsck(img, &o, &r);
		CHECK(frc == ARF_FSCK_REPAIRED, "repair: %d:\n%s", frc, report);
		fsck_clean("xattr after repair", img);
	} else {
		CHECK(0, "open image: %s", err);
	}
	/* an ACL that is not one (no mask beside a named entry) */
	if (serve(&k, img)) {
		static const unsigned char bad_acl[] = { 2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
		                                         2, 0, 4, 0, 0xe8, 3, 0, 0, 4, 0, 4, 0, 0xff,
		                                         0xff, 0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff,
		                                         0xff, 0xff };
		CHECK(arf_setxattr(k.c, (uint64_t)g, "system.posix_acl_access", bad_acl,
		                   sizeof bad_acl, 0) == 0, "store a bad ACL");
		unserve(&k);
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_PROBLEMS && strstr(report, "a POSIX ACL that is not one"),
		      "bad ACL: fsck %d:\n%s", frc, report);
		struct arf_fsck_opts o = { .report = collect, .repair = true };
		struct arf_fsck_result r;
		report_len = 0;
		CHECK(arf_fsck(img, &o, &r) == ARF_FSCK_REPAIRED, "repair:\n%s", report);
		fsck_clean("bad ACL after repair", img);
	}
	/* a field aiming at metadata (the journal), and reserved bytes not zero */
	if (arf_image_open(img, ARF_OPEN_RW, &m, err, sizeof err) == 0) {
		struct arf_inode *gi = (struct arf_inode *)(m.base + m.sb->itable_off +
		                                            (uint64_t)g * ARF_INO_SIZE);
		gi->xattr = m.sb->journal_off;
		gi->spare[100] = 1;
		arf_image_close(&m, err, sizeof err);
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_PROBLEMS && strstr(report, "outside the data area") &&
		      strstr(report, "reserved bytes are not zero"), "xattr field and spare bytes: "
		      "fsck %d:\n%s", frc, report);
		struct arf_fsck_opts o = { .report = collect, .repair = true };
		struct arf_fsck_result r;
		report_len = 0;
		CHECK(arf_fsck(img, &o, &r) == ARF_FSCK_REPAIRED, "repair:\n%s", report);
		fsck_clean("xattr field after repair", img);
		/* the block g had is now owned by no one: the repair gave it back to the map */
		if (serve(&k, img)) {
			CHECK(!strcmp(xnames(k.c, g), ""), "g lost its xattrs: %s", xnames(k.c, g));
			CHECK(arf_setxattr(k.c, (uint64_t)g, "user.again", "2", 1, 0) == 0, "g again");
			unserve(&k);
			fsck_clean("after a new block for g", img);
		}
	} else {
		CHECK(0, "open image: %s", err);
	}
}

/* What the tree shows: 0 exactly as before the operation, 1 exactly as after, -1 neither. */
typedef int state_fn(struct arf_client *c);

static int64_t cx[8];                  /* inode numbers the state functions compare with */
static uint64_t crash_fuel0 = 10;      /* the first fuel crash_op tries (short runs: lower) */
static int crash_cut_min = 5;          /* kills mid-operation crash_op must have seen */

/* Run entry (args, bytes) in forked arfds with fuel from 10 in steps of step up to 150, then
 * growing by a quarter, each killed with
 * SIGKILL after the run stopped (a fuel trap stops it right there, mid-operation, as a
 * kill at that instruction would); after every kill fsck must be clean, and a restarted
 * server (after every kill that cut the operation short, or every kill: every) must show
 * the tree exactly before or exactly after. */
static void crash_op(const char *what, const char *img, const char *entry, const int64_t *args,
                     unsigned n_args, const void *bytes, size_t len, state_fn *state,
                     unsigned step, bool every)
{
	static char seg[1 << 20];
	size_t seg_len = 0;
	FILE *f = fopen(segpath, "rb");
	if (f) {
		seg_len = fread(seg, 1, sizeof seg, f);
		fclose(f);
	}
	char err[512];
	int rounds = 0, cut = 0, done = 0;
	/* every point of short runs, then growing steps (a table growth rehashes 256 slots) */
	for (uint64_t fuel = crash_fuel0; !done && fuel < 200000;
	     fuel = fuel < 150 ? fuel + step : fuel * 5 / 4) {
		char ep[256];
		pid_t pid = fork_server(img, ep);
		CHECK(pid > 0, "%s: forked arfd did not start", what);
		if (pid <= 0)
			break;
		struct arc_opts o = { .timeout_ms = 3000 };
		struct arc *a = arc_connect(ep, &o, err, sizeof err);
		struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = entry, .args = args,
		                      .n_args = n_args, .argbytes = bytes, .argbytes_len = len,
		                      .fuel = fuel };
		int rc = a ? arc_exec(a, &x) : -1;
		free(x.out);
		/* a run stopped after its commit (giving blocks back, unlocking) has done the
		 * operation: the next one, run on the tree as after, fails (EEXIST, ENOENT), and
		 * the state check below must find the tree as after */
		if (rc != 0)
			CHECK(x.trapped && x.trap.kind == 4, "%s: fuel %" PRIu64 ": rc %d trap kind %u",
			      what, fuel, rc, x.trap.kind);
		if (a)
			arc_close(a);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		int n = interrupted_ops(img);
		cut += n > 0;
		rounds++;
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_CLEAN, "%s: SIGKILL after %" PRIu64 " fuel (journal: %d cut "
		      "short): fsck %d:\n%s", what, fuel, n, frc, report);
		/* a restart where the kill cut the operation, where it completed, and now and then
		 * (before the journal is in use nothing may have changed either) */
		struct conn k;
		if ((every || n > 0 || rc == 0 || rounds % 8 == 0) && serve(&k, img)) {
			int s = state(k.c);
			CHECK(s == 0 || s == 1, "%s: fuel %" PRIu64 ": the tree is neither before nor "
			      "after (%d)", what, fuel, s);
			CHECK(rc != 0 || s == 1, "%s: completed (%" PRId64 "), but the tree is not as "
			      "after", what, x.value);
			done = s == 1;
			unserve(&k);
			fsck_clean("after a restart", img);
		}
	}
	printf("crash %s: %d kills, %d of them mid-operation\n", what, rounds, cut);
	CHECK(done && cut >= crash_cut_min, "%s: kills %d, mid-operation %d, completed %d", what,
	      rounds, cut, done);
}

static int st_rename_dir(struct arf_client *c)
{
	int64_t a = look(c, "c/a/sub"), b = look(c, "c/b/empty");
	struct arf_attr at;
	if (a == cx[0] && b == cx[1] && nlink_of(c, cx[2]) == 3 && nlink_of(c, cx[3]) == 3)
		return 0;
	if (a == -ENOENT && b == cx[0] && arf_getattr(c, (uint64_t)cx[1], &at) == -ENOENT &&
	    look(c, "c/b/empty/x") > 0 && nlink_of(c, cx[2]) == 2 && nlink_of(c, cx[3]) == 3 &&
	    arf_getattr(c, (uint64_t)cx[0], &at) == 0 && at.parent == (uint64_t)cx[3])
		return 1;
	return -1;
}

static int st_rename_grow(struct arf_client *c)
{
	int64_t a = look(c, "c/src/f"), b = look(c, "c/full/f-new");
	struct arf_dirent *ents = NULL;
	int n = list_dir(c, (uint64_t)cx[5], 1000, &ents);
	free(ents);
	if (a == cx[4] && b == -ENOENT && n == 128)
		return 0;
	if (a == -ENOENT && b == cx[4] && n == 129)
		return 1;
	return -1;
}

static int st_exchange(struct arf_client *c)
{
	int64_t a = look(c, "c/a/x"), b = look(c, "c/b/y");
	uint32_t na = nlink_of(c, cx[2]), nb = nlink_of(c, cx[3]);
	if (a == cx[6] && b == cx[7])
		return na == 3 && nb == 3 ? 0 : -1;
	if (a == cx[7] && b == cx[6] && look(c, "c/b/y/..") == cx[3])
		return na == 2 && nb == 4 ? 1 : -1;
	return -1;
}

static char long_target[3000];

static int st_symlink(struct arf_client *c)
{
	int64_t s = look(c, "c/a/sym");
	static char buf[4096];
	if (s == -ENOENT)
		return 0;
	int n = s > 0 ? arf_readlink(c, (uint64_t)s, buf, sizeof buf) : -1;
	return n == (int)strlen(long_target) && !memcmp(buf, long_target, (size_t)n) ? 1 : -1;
}

static int st_link(struct arf_client *c)
{
	int64_t s = look(c, "c/full/hard");
	uint32_t n = nlink_of(c, cx[4]);
	if (s == -ENOENT && n == 1)
		return 0;
	return s == cx[4] && n == 2 ? 1 : -1;
}

static int64_t xf;                     /* the file of the xattr crashes */

/* The value of xattr name of xf is val ("" with -ENODATA expected: absent)? */
static bool xis(struct arf_client *c, const char *name, const char *val)
{
	char buf[64];
	int64_t n = arf_getxattr(c, (uint64_t)xf, name, buf, sizeof buf);
	if (!val)
		return n == -ENODATA;
	return n == (int64_t)strlen(val) && !memcmp(buf, val, (size_t)n);
}

static int st_xset_new(struct arf_client *c)
{
	if (!strcmp(xnames(c, xf), ""))
		return 0;
	return !strcmp(xnames(c, xf), "user.a") && xis(c, "user.a", "v1") ? 1 : -1;
}

static int st_xset_replace(struct arf_client *c)
{
	if (strcmp(xnames(c, xf), "user.a,user.b") || !xis(c, "user.b", "bb"))
		return -1;
	return xis(c, "user.a", "v1") ? 0 : xis(c, "user.a", "v2 longer") ? 1 : -1;
}

static int st_xremove(struct arf_client *c)
{
	if (!strcmp(xnames(c, xf), "user.a,user.b"))
		return xis(c, "user.a", "v2 longer") && xis(c, "user.b", "bb") ? 0 : -1;
	return !strcmp(xnames(c, xf), "user.b") && xis(c, "user.b", "bb") ? 1 : -1;
}

static int st_xremove_last(struct arf_client *c)
{
	if (!strcmp(xnames(c, xf), "user.b"))
		return xis(c, "user.b", "bb") ? 0 : -1;
	return !strcmp(xnames(c, xf), "") ? 1 : -1;
}

/* The xattr operations stopped at every point: a set that makes the block, a set that
 * replaces an entry among others, a removal that moves entries down, and the removal of
 * the last entry, which gives the block back. */
static void crash_xattr(const char *img)
{
	struct conn k;
	xf = -1;
	if (serve(&k, img)) {
		int64_t dd = mkdir_p(k.c, "c");
		xf = dd > 0 ? arf_create(k.c, (uint64_t)dd, "xf", 0644, 0, 0) : -1;
		unserve(&k);
	}
	CHECK(xf > 0, "xattr crash fixture");
	/* these runs spend 6 to 20 units in all, and their logged halves have 2 to 6 points
	 * (calls) where fuel can stop them: every one is tried */
	crash_fuel0 = 1;
	crash_cut_min = 2;
	int64_t a1[5] = { xf, 6, 0, 0, 0x7001ll << 32 | 1 };
	crash_op("setxattr new block", img, "setxattr", a1, 5, "user.av1", 8, st_xset_new, 1, false);
	if (serve(&k, img)) {
		CHECK(arf_setxattr(k.c, (uint64_t)xf, "user.b", "bb", 2, 0) == 0, "user.b");
		unserve(&k);
	}
	a1[4]++;
	crash_op("setxattr replace", img, "setxattr", a1, 5, "user.av2 longer", 15,
	         st_xset_replace, 1, false);
	int64_t a2[3] = { xf, 0, 0x7001ll << 32 | 3 };
	crash_op("removexattr", img, "removexattr", a2, 3, "user.a", 6, st_xremove, 1, false);
	a2[2]++;
	crash_op("removexattr last", img, "removexattr", a2, 3, "user.b", 6, st_xremove_last, 1,
	         false);
	crash_fuel0 = 10;
	crash_cut_min = 5;
}

static void test_crash_ops(const char *img)
{
	char err[512];
	CHECK(arf_mkfs(img, 16 << 20, 4096, err, sizeof err) == 0, "mkfs: %s", err);
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	cx[0] = mkdir_p(c, "c/a/sub");
	cx[1] = mkdir_p(c, "c/b/empty");
	cx[2] = look(c, "c/a");
	cx[3] = look(c, "c/b");
	int ok = arf_create(c, (uint64_t)cx[0], "x", 0644, 0, 0) > 0;
	cx[4] = mkdir_p(c, "c/src");
	cx[5] = mkdir_p(c, "c/full");
	for (int i = 0; i < 128; i++) {
		char name[32];
		snprintf(name, sizeof name, "e%d", i);
		ok &= arf_create(c, (uint64_t)cx[5], name, 0644, 0, 0) > 0;
	}
	int64_t srcdir = cx[4];
	cx[4] = arf_create(c, (uint64_t)srcdir, "f", 0644, 0, 0);
	unserve(&k);
	CHECK(ok && cx[0] > 0 && cx[1] > 0 && cx[4] > 0 && cx[5] > 0, "crash fixture");

	/* a directory over an empty directory elsewhere: replace, free, parent, link counts */
	int64_t a1[5] = { cx[2], cx[3], 3, 0, 0x7002ll << 32 | 1 };
	crash_op("rename dir over dir", img, "rename", a1, 5, "subempty", 8, st_rename_dir, 2, false);
	/* a file into a directory whose table must grow (128 entries in 256 slots) */
	int64_t a2[5] = { srcdir, cx[5], 1, 0, 0x7002ll << 32 | 2 };
	crash_op("rename growing", img, "rename", a2, 5, "ff-new", 6, st_rename_grow, 10, false);
	/* exchange of a directory and a file between two directories; run twice it undoes
	 * itself, so a run stopped after its commit must be noticed at once: a restart after
	 * every kill */
	if (serve(&k, img)) {
		cx[6] = mkdir_p(k.c, "c/a/x");
		cx[7] = arf_create(k.c, (uint64_t)cx[3], "y", 0644, 0, 0);
		unserve(&k);
	}
	int64_t a3[5] = { cx[2], cx[3], 1, ARF_RENAME_EXCHANGE, 0 };
	crash_op("rename exchange", img, "rename", a3, 5, "xy", 2, st_exchange, 2, true);
	/* a symlink with its target in a block, and a hard link into the grown directory */
	memset(long_target, 't', sizeof long_target - 1);
	static char sbytes[4000];
	memcpy(sbytes, "sym", 3);
	memcpy(sbytes + 3, long_target, strlen(long_target));
	int64_t a4[5] = { cx[2], 3, 0, 0, 0x7002ll << 32 | 4 };
	crash_op("symlink", img, "symlink", a4, 5, sbytes, 3 + strlen(long_target), st_symlink, 1, false);
	cx[4] = -1;
	if (serve(&k, img)) {
		cx[4] = look(k.c, "c/full/f-new");
		unserve(&k);
	}
	int64_t a5[3] = { cx[4], cx[5], 0x7002ll << 32 | 5 };
	crash_op("link", img, "link", a5, 3, "hard", 4, st_link, 1, false);
	crash_xattr(img);
}

static bool same_attr(const struct arf_attr *x, const struct arf_attr *y)
{
	return x->mode == y->mode && x->nlink == y->nlink && x->uid == y->uid &&
	       x->gid == y->gid && x->size == y->size && x->nblocks == y->nblocks &&
	       x->atime == y->atime && x->mtime == y->mtime && x->ctime == y->ctime &&
	       x->btime == y->btime && x->gen == y->gen && x->parent == y->parent;
}

/* The *_attr forms and readdirplus: the same results as the plain operation followed by
 * getattr, in one run; the errors of the plain forms. */
static void test_attr_forms(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	struct arf_attr at, g;
	int64_t d = arf_mkdir_attr(c, ARF_INO_ROOT, "attrs", 0750, 7, 8, &at);
	CHECK(d > 2 && arf_getattr(c, (uint64_t)d, &g) == 0 && same_attr(&at, &g) &&
	      at.mode == (ARF_S_IFDIR | 0750) && at.uid == 7 && at.gid == 8,
	      "mkdir_attr: %" PRId64 " mode %o", d, at.mode);
	int64_t f = arf_mknod_attr(c, (uint64_t)d, "f", ARF_S_IFREG | 0604, 0, 1, 2, &at);
	CHECK(f > 2 && arf_getattr(c, (uint64_t)f, &g) == 0 && same_attr(&at, &g) &&
	      at.mode == (ARF_S_IFREG | 0604), "mknod_attr: %" PRId64, f);
	int64_t s = arf_symlink_attr(c, (uint64_t)d, "s", "f", 3, 4, &at);
	CHECK(s > 2 && arf_getattr(c, (uint64_t)s, &g) == 0 && same_attr(&at, &g) &&
	      at.mode == (ARF_S_IFLNK | 0777) && at.size == 1, "symlink_attr: %" PRId64, s);
	CHECK(arf_link_attr(c, (uint64_t)f, (uint64_t)d, "f2", &at) == f && at.nlink == 2 &&
	      arf_getattr(c, (uint64_t)f, &g) == 0 && same_attr(&at, &g), "link_attr: nlink %u",
	      at.nlink);
	CHECK(arf_lookup_attr(c, ARF_INO_ROOT, "attrs/f2", &at) == f && same_attr(&at, &g),
	      "lookup_attr of a path");
	/* errors as the plain forms */
	CHECK(arf_lookup_attr(c, ARF_INO_ROOT, "attrs/none", &at) == -ENOENT, "lookup_attr ENOENT");
	CHECK(arf_lookup_attr(c, ARF_INO_ROOT, "attrs/f/x", &at) == -ENOTDIR, "lookup_attr ENOTDIR");
	CHECK(arf_mkdir_attr(c, (uint64_t)d, "f", 0700, 0, 0, &at) == -EEXIST, "mkdir_attr EEXIST");
	CHECK(arf_mknod_attr(c, (uint64_t)f, "x", ARF_S_IFREG | 0600, 0, 0, 0, &at) == -ENOTDIR,
	      "mknod_attr in a file");
	CHECK(arf_symlink_attr(c, (uint64_t)d, "s", "t", 0, 0, &at) == -EEXIST, "symlink_attr EEXIST");

	/* mkdirattrs, mknodattrs, symlinkattrs, linkattrs (arf_*_attrs): the new inode's
	 * attributes as the *attr form's, and the directory's after the change, as a getattr
	 * right after gives them: a new subdirectory's link counted, mtime and ctime moved to
	 * the change's, a first block counted in its size; none with an error */
	struct arf_attr pa, b0;
	int64_t pd = arf_mkdir(c, ARF_INO_ROOT, "pattrs", 0755, 0, 0);
	CHECK(pd > 2 && arf_getattr(c, (uint64_t)pd, &b0) == 0, "attrs: the directory before");
	int64_t sd = arf_mkdir_attrs(c, (uint64_t)pd, "sd", 0755, 5, 6, &at, &pa);
	CHECK(sd > 2 && arf_getattr(c, (uint64_t)sd, &g) == 0 && same_attr(&at, &g) &&
	      at.mode == (ARF_S_IFDIR | 0755) && at.uid == 5,
	      "mkdir_attrs: %" PRId64 " mode %o", sd, at.mode);
	CHECK(arf_getattr(c, (uint64_t)pd, &g) == 0 && same_attr(&pa, &g) &&
	      pa.nlink == b0.nlink + 1 && pa.mtime >= b0.mtime && pa.mtime == pa.ctime &&
	      pa.mtime == at.btime && pa.size == b0.size + ARF_BLOCK_SIZE && pa.no_xattrs,
	      "mkdir_attrs: the parent's nlink %u (before %u), mtime %" PRId64 " (new inode's "
	      "%" PRId64 ")", pa.nlink, b0.nlink, pa.mtime, at.btime);
	int64_t f3 = arf_mknod_attrs(c, (uint64_t)pd, "f3", ARF_S_IFREG | 0600, 0, 0, 0, &at, &pa);
	CHECK(f3 > 2 && arf_getattr(c, (uint64_t)f3, &g) == 0 && same_attr(&at, &g) &&
	      arf_getattr(c, (uint64_t)pd, &g) == 0 && same_attr(&pa, &g) &&
	      pa.nlink == b0.nlink + 1 && pa.mtime == at.btime && pa.ctime == at.btime,
	      "mknod_attrs: %" PRId64 ", the parent's nlink %u mtime %" PRId64, f3, pa.nlink,
	      pa.mtime);
	int64_t s3 = arf_symlink_attrs(c, (uint64_t)pd, "s3", "f3", 0, 0, &at, &pa);
	CHECK(s3 > 2 && at.mode == (ARF_S_IFLNK | 0777) && arf_getattr(c, (uint64_t)pd, &g) == 0 &&
	      same_attr(&pa, &g) && pa.mtime == at.btime && pa.nlink == b0.nlink + 1,
	      "symlink_attrs: %" PRId64 ", the parent's mtime %" PRId64, s3, pa.mtime);
	CHECK(arf_link_attrs(c, (uint64_t)f3, (uint64_t)sd, "f3link", &at, &pa) == f3 &&
	      at.nlink == 2 && arf_getattr(c, (uint64_t)sd, &g) == 0 && same_attr(&pa, &g) &&
	      pa.nlink == 2 && pa.mtime == at.ctime,
	      "link_attrs: nlink %u, the new parent's mtime %" PRId64 " (the file's ctime %" PRId64
	      ")", at.nlink, pa.mtime, at.ctime);
	/* a directory grown past its first block: its size in the answer */
	char nm[64];
	int bad = 0;
	for (int i = 0; i < 300 && !bad; i++) {
		snprintf(nm, sizeof nm, "a-rather-long-name-to-fill-a-directory-block-%03d", i);
		bad = arf_mknod_attrs(c, (uint64_t)sd, nm, ARF_S_IFREG | 0600, 0, 0, 0, &at, &pa) <= 0 ||
		      arf_getattr(c, (uint64_t)sd, &g) != 0 || !same_attr(&pa, &g);
	}
	CHECK(!bad && pa.size > 4096, "mknod_attrs of 300 names: the parent's size %" PRIu64
	      " as getattr's", pa.size);
	CHECK(arf_mkdir_attrs(c, (uint64_t)pd, "f3", 0700, 0, 0, &at, &pa) == -EEXIST && pa.mode == 0,
	      "mkdir_attrs EEXIST: no parent");
	CHECK(arf_mknod_attrs(c, (uint64_t)f3, "x", ARF_S_IFREG | 0600, 0, 0, 0, &at, &pa) ==
	      -ENOTDIR && pa.mode == 0, "mknod_attrs in a file: no parent");
	CHECK(arf_symlink_attrs(c, (uint64_t)pd, "s3", "t", 0, 0, &at, &pa) == -EEXIST &&
	      pa.mode == 0, "symlink_attrs EEXIST: no parent");
	CHECK(arf_link_attrs(c, (uint64_t)sd, (uint64_t)pd, "dl", &at, &pa) == -EPERM && pa.mode == 0,
	      "link_attrs of a directory: EPERM, no parent");

	/* devices keep their number, sockets and fifos none (whatever rdev says); their
	 * entries carry their type; link, rename and unlink treat them as any file */
	int64_t dv = arf_mkdir(c, ARF_INO_ROOT, "devs", 0755, 0, 0);
	struct { const char *name; uint32_t mode; uint64_t rdev, want; unsigned dt; } nodes[] = {
		{ "null", ARF_S_IFCHR | 0666, makedev(1, 3), makedev(1, 3), ARF_DT_CHR },
		{ "sda1", ARF_S_IFBLK | 0660, makedev(8, 1), makedev(8, 1), ARF_DT_BLK },
		{ "big", ARF_S_IFCHR | 0600, makedev(4095, 1048575), makedev(4095, 1048575), ARF_DT_CHR },
		{ "sock", ARF_S_IFSOCK | 0755, 5, 0, ARF_DT_SOCK },
		{ "fifo", ARF_S_IFIFO | 0644, 7, 0, ARF_DT_FIFO },
	};
	for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		int64_t n = arf_mknod_attr(c, (uint64_t)dv, nodes[i].name, nodes[i].mode, nodes[i].rdev,
		                           10, 20, &at);
		CHECK(n > 2 && at.mode == nodes[i].mode && at.rdev == nodes[i].want && at.size == 0 &&
		      at.uid == 10 && arf_getattr(c, (uint64_t)n, &g) == 0 && same_attr(&at, &g) &&
		      g.rdev == nodes[i].want, "mknod %s: %" PRId64 " mode %o rdev %" PRIx64, nodes[i].name,
		      n, at.mode, at.rdev);
	}
	struct arf_dirent de[8];
	uint64_t dck = 0;
	int nde = arf_readdir(c, (uint64_t)dv, &dck, de, 8);
	int types_ok = 0;
	for (int i = 0; i < nde; i++)
		for (size_t j = 0; j < sizeof nodes / sizeof nodes[0]; j++)
			types_ok += !strcmp(de[i].name, nodes[j].name) && de[i].type == nodes[j].dt;
	CHECK(nde == 5 && types_ok == 5, "device entries' types: %d entries, %d right", nde, types_ok);
	int64_t nul = arf_lookup(c, (uint64_t)dv, "null");
	CHECK(arf_link_attr(c, (uint64_t)nul, (uint64_t)dv, "null2", &at) == nul && at.nlink == 2 &&
	      at.rdev == makedev(1, 3), "link of a device");
	CHECK(arf_rename(c, (uint64_t)dv, "sda1", ARF_INO_ROOT, "sda1", 0) == 0 &&
	      arf_lookup_attr(c, ARF_INO_ROOT, "sda1", &at) > 2 && at.rdev == makedev(8, 1),
	      "rename of a device");
	CHECK(arf_unlink(c, ARF_INO_ROOT, "sda1") == 0 && arf_unlink(c, (uint64_t)dv, "null") == 0 &&
	      arf_unlink(c, (uint64_t)dv, "null2") == 0 && arf_unlink(c, (uint64_t)dv, "sock") == 0 &&
	      arf_getattr(c, (uint64_t)nul, &at) == -ENOENT, "unlink of devices and a socket");
	CHECK(arf_link_attr(c, (uint64_t)d, ARF_INO_ROOT, "dirlink", &at) == -EPERM,
	      "link_attr of a directory");

	/* readdirplus over 300 entries in batches of 7: every entry once, attributes equal to
	 * getattr's */
	for (int i = 0; i < 300; i++) {
		char name[32];
		snprintf(name, sizeof name, "e%03d", i);
		int64_t e = i % 3 ? arf_create(c, (uint64_t)d, name, 0600 + (unsigned)(i % 8), 0, 0)
		                  : arf_mkdir(c, (uint64_t)d, name, 0700, 0, 0);
		CHECK(e > 2, "make %s: %" PRId64, name, e);
	}
	struct arf_dirent ents[7];
	struct arf_attr attrs[7];
	uint64_t cookie = 0;
	unsigned seen = 0, good = 0, batches = 0;
	do {
		int n = arf_readdirplus(c, (uint64_t)d, &cookie, ents, attrs, 7);
		CHECK(n >= 0, "readdirplus: %d", n);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			seen++;
			good += arf_getattr(c, ents[i].ino, &g) == 0 && same_attr(&attrs[i], &g) &&
			        (attrs[i].mode >> 12) == ents[i].type;
		}
		batches++;
	} while (cookie != 0 && batches < 1000);
	CHECK(seen == 303 && good == 303, "readdirplus: %u entries, %u with their attributes "
	      "(want 303: f, f2, s and 300)", seen, good);
	CHECK(arf_readdirplus(c, (uint64_t)f, &cookie, ents, attrs, 7) == -ENOTDIR,
	      "readdirplus of a file");
	unserve(&k);
	fsck_clean("after the attribute forms", img);
}

/* ---- walk: the server's depth-first walk against readdir done directory by directory ---- */

struct paths {
	char **p;
	size_t n, cap;
};

static void paths_add(struct paths *ps, const char *prefix, const char *name, unsigned type)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 256;
		ps->p = realloc(ps->p, ps->cap * sizeof *ps->p);
	}
	size_t len = strlen(prefix) + strlen(name) + 8;
	ps->p[ps->n] = malloc(len);
	snprintf(ps->p[ps->n++], len, "%s/%s %u", prefix, name, type);
}

static void paths_free(struct paths *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->p[i]);
	free(ps->p);
	memset(ps, 0, sizeof *ps);
}

/* What fts would visit under d: readdir's order, each directory's subtree after its entry;
 * skip: a directory name whose subtree is left out (listed itself, as --exclude-dir) */
static void ref_walk(struct arf_client *c, uint64_t d, const char *prefix, const char *skip,
                     struct paths *ps)
{
	struct arf_dirent *e;
	int n = list_dir(c, d, 1024, &e);
	CHECK(n >= 0, "readdir %s: %d", prefix, n);
	for (int i = 0; i < n; i++) {
		paths_add(ps, prefix, e[i].name, e[i].type);
		if (e[i].type == ARF_DT_DIR && !(skip && !strcmp(e[i].name, skip))) {
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", prefix, e[i].name);
			ref_walk(c, e[i].ino, sub, skip, ps);
		}
	}
	if (n >= 0)
		free(e);
}

/* The same through arf_walk_next in batches of max entries / soft bytes; a deep directory
 * is walked anew (recursion), as a client does; *batches counts the round trips. */
static void server_walk(struct arf_client *c, uint64_t d, const char *prefix, const char *skip,
                        unsigned max, unsigned soft, struct paths *ps, unsigned *batches)
{
	static struct arf_walk_entry ents[8192];
	char *path[ARF_WALK_STACK + 1] = { strdup(prefix) };
	struct arf_walk w;
	arf_walk_begin(&w, d);
	unsigned skipping = 0;         /* not 0: leave entries deeper than skipping - 1 */
	while (w.nf && *batches < 100000) {
		int n = arf_walk_next(c, &w, ents, max < 8192 ? max : 8192, soft);
		(*batches)++;
		CHECK(n > 0, "walk %s: %d (%s)", prefix, n, arf_client_errmsg(c));
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			struct arf_walk_entry *e = &ents[i];
			if (skipping && e->depth >= skipping)
				continue;
			skipping = 0;
			if (e->err) {
				paths_add(ps, path[e->depth], "ERROR", (unsigned)e->err);
				continue;
			}
			paths_add(ps, path[e->depth], e->name, e->type);
			if (e->type != ARF_DT_DIR)
				continue;
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", path[e->depth], e->name);
			if (skip && !strcmp(e->name, skip)) {
				skipping = e->depth + 1;
			} else if (e->deep) {
				server_walk(c, e->ino, sub, skip, max, soft, ps, batches);
			} else {
				free(path[e->depth + 1]);
				path[e->depth + 1] = strdup(sub);
			}
		}
		if (skipping)
			arf_walk_prune(&w, skipping);
	}
	for (int i = 0; i <= ARF_WALK_STACK; i++)
		free(path[i]);
}

static int same_paths(const struct paths *a, const struct paths *b, const char *what)
{
	size_t i = 0;
	while (i < a->n && i < b->n && !strcmp(a->p[i], b->p[i]))
		i++;
	if (i == a->n && i == b->n)
		return 1;
	printf("%s: %zu and %zu entries, first difference at %zu: %s | %s\n", what, a->n, b->n,
	       i, i < a->n ? a->p[i] : "(end)", i < b->n ? b->p[i] : "(end)");
	return 0;
}

/* In a setgid directory a new inode takes the directory's group, not the one passed, and a
 * new directory is setgid too; elsewhere the group passed is kept. */
static void test_setgid_dir(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	struct arf_attr at;
	int64_t sg = arf_mkdir_attr(c, ARF_INO_ROOT, "sgid", 02775, 0, 4000, &at);
	CHECK(sg > 2 && at.mode == (ARF_S_IFDIR | 02775) && at.gid == 4000, "mkdir sgid: mode %o",
	      at.mode);
	int64_t f = arf_mknod_attr(c, (uint64_t)sg, "f", ARF_S_IFREG | 0644, 0, 1000, 1000, &at);
	CHECK(f > 2 && at.mode == (ARF_S_IFREG | 0644) && at.uid == 1000 && at.gid == 4000,
	      "file in a setgid dir: mode %o uid %u gid %u", at.mode, at.uid, at.gid);
	int64_t p = arf_mknod_attr(c, (uint64_t)sg, "p", ARF_S_IFIFO | 0600, 0, 1000, 1000, &at);
	CHECK(p > 2 && at.mode == (ARF_S_IFIFO | 0600) && at.gid == 4000, "fifo: mode %o gid %u",
	      at.mode, at.gid);
	int64_t s = arf_symlink_attr(c, (uint64_t)sg, "s", "f", 1000, 1000, &at);
	CHECK(s > 2 && at.mode == (ARF_S_IFLNK | 0777) && at.gid == 4000, "symlink: mode %o gid %u",
	      at.mode, at.gid);
	int64_t d = arf_mkdir_attr(c, (uint64_t)sg, "d", 0700, 1000, 1000, &at);
	CHECK(d > 2 && at.mode == (ARF_S_IFDIR | 02700) && at.uid == 1000 && at.gid == 4000,
	      "dir in a setgid dir: mode %o gid %u", at.mode, at.gid);
	int64_t dd = arf_mkdir_attr(c, (uint64_t)d, "dd", 0755, 1000, 1000, &at);
	CHECK(dd > 2 && at.mode == (ARF_S_IFDIR | 02755) && at.gid == 4000,
	      "its subdirectory inherits: mode %o gid %u", at.mode, at.gid);
	int64_t plain = arf_mkdir_attr(c, ARF_INO_ROOT, "nosgid", 0755, 0, 5000, &at);
	int64_t pf = plain > 2 ? arf_mknod_attr(c, (uint64_t)plain, "f", ARF_S_IFREG | 0644, 0, 1000,
	                                        1000, &at) : -1;
	CHECK(pf > 2 && at.gid == 1000, "file in a plain dir keeps its gid: %u", at.gid);
	int64_t pd = plain > 2 ? arf_mkdir_attr(c, (uint64_t)plain, "d", 0755, 1000, 1000, &at) : -1;
	CHECK(pd > 2 && at.mode == (ARF_S_IFDIR | 0755) && at.gid == 1000,
	      "dir in a plain dir: mode %o gid %u", at.mode, at.gid);
	unserve(&k);
	fsck_clean("after the setgid directories", img);
}

static void test_walk(const char *img)
{
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	/* a tree: a chain 70 directories deep (deeper than one walk's 64 frames) with a file
	 * and a fifo at each level, a directory of 600 entries with every third removed,
	 * empty directories, symlinks, and the earlier phases' leftovers */
	int64_t top = arf_mkdir(c, ARF_INO_ROOT, "walk", 0755, 0, 0);
	CHECK(top > 2, "mkdir walk: %" PRId64, top);
	int64_t cur = top;
	for (int i = 0; i < 70 && cur > 0; i++) {
		char name[32];
		snprintf(name, sizeof name, "f%d", i);
		CHECK(arf_create(c, (uint64_t)cur, name, 0644, 0, 0) > 2, "create %s", name);
		snprintf(name, sizeof name, "p%d", i);
		CHECK(arf_mknod(c, (uint64_t)cur, name, ARF_S_IFIFO | 0644, 0, 0) > 2, "mkfifo %s", name);
		if (i % 10 == 0)
			CHECK(arf_mkdir(c, (uint64_t)cur, "empty", 0755, 0, 0) > 2, "mkdir empty");
		snprintf(name, sizeof name, "d%d", i);
		cur = arf_mkdir(c, (uint64_t)cur, name, 0755, 0, 0);
		CHECK(cur > 2, "mkdir %s: %" PRId64, name, cur);
	}
	int64_t wide = arf_mkdir(c, (uint64_t)top, "wide", 0755, 0, 0);
	CHECK(wide > 2, "mkdir wide");
	for (int i = 0; i < 600; i++) {
		char name[300];
		/* names of every length up to 255: records of every size */
		int len = snprintf(name, sizeof name, "w%d-", i);
		while (len < 1 + i % 255)
			name[len++] = 'x';
		name[len] = '\0';
		int64_t r = i % 50 == 0 ? arf_mkdir(c, (uint64_t)wide, name, 0755, 0, 0)
		                        : arf_create(c, (uint64_t)wide, name, 0644, 0, 0);
		CHECK(r > 2, "create wide %d: %" PRId64, i, r);
		if (i % 50 == 0 && r > 2)
			CHECK(arf_create(c, (uint64_t)r, "inner", 0644, 0, 0) > 2, "inner %d", i);
	}
	for (int i = 1; i < 600; i += 3) {
		if (i % 50 == 0)
			continue;          /* a directory */
		char name[300];
		int len = snprintf(name, sizeof name, "w%d-", i);
		while (len < 1 + i % 255)
			name[len++] = 'x';
		name[len] = '\0';
		CHECK(arf_unlink(c, (uint64_t)wide, name) == 0, "unlink wide %d", i);
	}
	CHECK(arf_symlink(c, (uint64_t)top, "ln", "wide", 0, 0) > 2, "symlink");

	struct paths want = { 0 }, got = { 0 };
	ref_walk(c, ARF_INO_ROOT, "", NULL, &want);
	CHECK(want.n > 600, "reference walk: %zu entries", want.n);
	/* batch limits by count and by bytes, down to one entry per round trip */
	static const struct { unsigned max, soft; } lim[] = {
		{ 65536, 1 << 20 }, { 1, 1 << 20 }, { 2, 1 << 20 }, { 7, 1 << 20 }, { 100, 1 << 20 },
		{ 65536, ARF_WALK_HDR + 512 }, { 65536, ARF_WALK_HDR + 3000 },
	};
	for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
		unsigned batches = 0;
		server_walk(c, ARF_INO_ROOT, "", NULL, lim[i].max, lim[i].soft, &got, &batches);
		char what[64];
		snprintf(what, sizeof what, "walk max %u soft %u", lim[i].max, lim[i].soft);
		CHECK(same_paths(&want, &got, what), "%s: not readdir's depth-first order", what);
		if (lim[i].max == 65536 && lim[i].soft == 1u << 20)
			CHECK(batches == 3, "%s: %u round trips (want 3: two walks anew past depth 64)",
			      what, batches);
		paths_free(&got);
	}
	paths_free(&want);
	/* pruning an entered directory (--exclude-dir): its entry stays, its subtree goes,
	 * whether the batch ends inside it or not */
	ref_walk(c, ARF_INO_ROOT, "", "d3", &want);
	for (unsigned max = 1; max <= 9; max += 4) {
		unsigned batches = 0;
		server_walk(c, ARF_INO_ROOT, "", "d3", max, 1 << 20, &got, &batches);
		CHECK(same_paths(&want, &got, "pruned walk"), "pruned walk, max %u", max);
		paths_free(&got);
	}
	paths_free(&want);

	/* hostile frames: a file as a directory, a cookie inside a record, no frames */
	struct arf_walk w;
	struct arf_walk_entry e[4];
	int64_t f = arf_lookup(c, (uint64_t)top, "f0");
	arf_walk_begin(&w, (uint64_t)f);
	int n = arf_walk_next(c, &w, e, 4, 4096);
	CHECK(n == 1 && e[0].err == ENOTDIR && e[0].depth == 0 && w.nf == 0,
	      "walk of a file: %d entries, err %d", n, n > 0 ? e[0].err : 0);
	arf_walk_begin(&w, (uint64_t)wide);
	w.frame[0][1] = 12345;
	n = arf_walk_next(c, &w, e, 4, 4096);
	CHECK(n == 1 && e[0].err == EINVAL && w.nf == 0, "walk from a bad cookie: %d", n);
	arf_walk_begin(&w, 0);
	n = arf_walk_next(c, &w, e, 4, 4096);
	CHECK(n == 1 && e[0].err == EINVAL && w.nf == 0, "walk of inode 0: %d", n);
	w.nf = 0;
	CHECK(arf_walk_next(c, &w, e, 4, 4096) == 0, "walk done: 0 entries");
	w.nf = ARF_WALK_STACK + 1;
	CHECK(arf_walk_next(c, &w, e, 4, 4096) == -EINVAL, "walk of too many frames");
	/* random frames (any inode, cookies near and inside the directories' blocks): each
	 * run gives entries or errors, never a trap, and arfd stays up */
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int odd = 0;
	for (int i = 0; i < 500; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		w.nf = 1 + (unsigned)(seed >> 58);
		for (unsigned j = 0; j < w.nf; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			w.frame[j][0] = (seed >> 33) % 64;
			w.frame[j][1] = seed & 1 ? 0 : (seed >> 20) % (64 << 20);
		}
		n = arf_walk_next(c, &w, e, 4, 4096);
		odd += n < 0;
	}
	CHECK(odd == 0, "random frames: %d runs failed (%s)", odd, arf_client_errmsg(c));
	CHECK(arf_getattr(c, ARF_INO_ROOT, &(struct arf_attr){ 0 }) == 0, "arfd alive after them");
	unserve(&k);
	fsck_clean("after the walks", img);
}

/* ---- keyed operations: exactly once across a restart ---- */

/* Argument placeholders of the cases below, filled in at run time */
#define ODIR (-1)                      /* the test's directory */
#define OFILE (-2)                     /* a file in it */
#define OKEY (-3)                      /* the case's key */

/* Each state-changing export run with a key, then the same request again (a resend after
 * a restart: the first result, nothing done again), then under another key (done again, as
 * today: the error the first run's effect causes). */
static const struct once_case {
	const char *entry;
	unsigned n;
	int64_t args[6];
	const char *bytes;
	size_t nbytes;
	int first;                     /* 1: an inode number, 0: exactly 0, 2: the file's ino */
	int other;                     /* the same under another key: -errno */
} once_cases[] = {
	{ "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "m", 1, 1, -EEXIST },
	{ "mknod", 6, { ODIR, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "n", 1, 1, -EEXIST },
	{ "mkdirattr", 5, { ODIR, 0755, 0, 0, OKEY }, "ma", 2, 1, -EEXIST },
	{ "mknodattr", 6, { ODIR, ARF_S_IFIFO | 0644, 0, 0, 0, OKEY }, "na", 2, 1, -EEXIST },
	{ "symlink", 5, { ODIR, 1, 0, 0, OKEY }, "starget", 7, 1, -EEXIST },
	{ "symlinkattr", 5, { ODIR, 2, 0, 0, OKEY }, "sat", 3, 1, -EEXIST },
	{ "link", 3, { OFILE, ODIR, OKEY }, "l", 1, 0, -EEXIST },
	{ "linkattr", 3, { OFILE, ODIR, OKEY }, "la", 2, 2, -EEXIST },
	{ "unlink", 2, { ODIR, OKEY }, "gone", 4, 0, -ENOENT },
	{ "rmdir", 2, { ODIR, OKEY }, "sub", 3, 0, -ENOENT },
	{ "rename", 5, { ODIR, ODIR, 3, 0, OKEY }, "renren2", 7, 0, -ENOENT },
	{ "rename", 5, { ODIR, ODIR, 4, ARF_RENAME_NOREPLACE, OKEY }, "ren2ren3", 8, 0, -ENOENT },
	{ "setxattr", 5, { OFILE, 6, ARF_XATTR_CREATE, 0, OKEY }, "user.kv", 7, 0, -EEXIST },
	{ "removexattr", 3, { OFILE, 0, OKEY }, "user.k", 6, 0, -ENODATA },
	{ "unlinkattr", 2, { ODIR, OKEY }, "gone2", 5, 0, -ENOENT },
	{ "rmdirattr", 2, { ODIR, OKEY }, "sub3", 4, 0, -ENOENT },
	{ "mkdirattrs", 5, { ODIR, 0755, 0, 0, OKEY }, "mas", 3, 1, -EEXIST },
	{ "mknodattrs", 6, { ODIR, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "nas", 3, 1, -EEXIST },
	{ "symlinkattrs", 5, { ODIR, 3, 0, 0, OKEY }, "sasf0", 5, 1, -EEXIST },
	{ "linkattrs", 3, { OFILE, ODIR, OKEY }, "las", 3, 2, -EEXIST },
};

/* The case's run; its output in out (out_len: its bytes, at most sizeof out) */
static uint8_t once_out[2 * ARF_ATTR_BYTES];
static size_t once_out_len;

static int64_t once_run(struct conn *k, const struct once_case *oc, int64_t d, int64_t f,
                        uint64_t key)
{
	int64_t a[6];
	for (unsigned i = 0; i < oc->n; i++)
		a[i] = oc->args[i] == ODIR ? d : oc->args[i] == OFILE ? f :
		       oc->args[i] == OKEY ? (int64_t)key : oc->args[i];
	return xraw_out(k, oc->entry, a, oc->n, oc->bytes, oc->nbytes, once_out, sizeof once_out,
	                &once_out_len);
}

/* A key used twice for different requests (docs/arf.md, "A key used twice"): a client that
 * restarted its numbering under the same id, two clients with one id, a buggy one.  The
 * record binds the key to its request (op hash), so the second request is never answered
 * with the first's result: it runs as a new one.  Each case runs first under key K, then
 * second under K: what second gives (want2) and the path it must have made or removed. */
#define ODIR2 (-4)                     /* another directory */

struct oreq {
	const char *entry;
	unsigned n;
	int64_t args[6];
	const char *bytes;
	size_t nbytes;
};

enum { R_NEW = 1, R_ZERO = 2, R_SAME = 3 };   /* want2 besides a -errno */

static const struct reuse_case {
	const char *what;
	struct oreq first, second;
	int want2;                     /* R_NEW: an inode other than first's; R_ZERO: 0; R_SAME:
	                                  first's result (the same change); else -errno */
	const char *path;              /* a path under "reuse" (NULL: none) that must exist */
	int exists;                    /* (1) or be gone (0) after second */
	int again1;                    /* first again under K after a second that succeeded:
	                                  its entry was taken, it runs again: -errno */
} reuse_cases[] = {
	{ "mkdir, another name",
	  { "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "ra", 2 },
	  { "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "rb", 2 }, R_NEW, "rb", 1, -EEXIST },
	{ "mknod, another directory",
	  { "mknod", 6, { ODIR, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "rc", 2 },
	  { "mknod", 6, { ODIR2, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "rc", 2 }, R_NEW, "sub2/rc", 1,
	  -EEXIST },
	{ "mkdir, then mknod of the name",
	  { "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "rd", 2 },
	  { "mknod", 6, { ODIR, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "rd", 2 }, -EEXIST, "rd", 1, 0 },
	{ "mkdir, another mode",
	  { "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "re", 2 },
	  { "mkdir", 5, { ODIR, 0700, 0, 0, OKEY }, "re", 2 }, -EEXIST, "re", 1, 0 },
	{ "mknod, another type",
	  { "mknod", 6, { ODIR, ARF_S_IFREG | 0644, 0, 0, 0, OKEY }, "rf", 2 },
	  { "mknod", 6, { ODIR, ARF_S_IFIFO | 0644, 0, 0, 0, OKEY }, "rf", 2 }, -EEXIST, "rf", 1, 0 },
	{ "mkdir, then mkdirattr of the same: one change",
	  { "mkdir", 5, { ODIR, 0755, 0, 0, OKEY }, "rg", 2 },
	  { "mkdirattr", 5, { ODIR, 0755, 0, 0, OKEY }, "rg", 2 }, R_SAME, "rg", 1, 0 },
	{ "unlink, another name",
	  { "unlink", 2, { ODIR, OKEY }, "u1", 2 },
	  { "unlink", 2, { ODIR, OKEY }, "u2", 2 }, R_ZERO, "u2", 0, -ENOENT },
	{ "unlink, then rmdir of the name",
	  { "unlink", 2, { ODIR, OKEY }, "u3", 2 },
	  { "rmdir", 2, { ODIR, OKEY }, "u3", 2 }, -ENOENT, "u3", 0, 0 },
	{ "rmdir, another directory",
	  { "rmdir", 2, { ODIR, OKEY }, "d1", 2 },
	  { "rmdir", 2, { ODIR2, OKEY }, "d1", 2 }, R_ZERO, "sub2/d1", 0, -ENOENT },
	{ "rename, other names",
	  { "rename", 5, { ODIR, ODIR, 2, 0, OKEY }, "m1n1", 4 },
	  { "rename", 5, { ODIR, ODIR, 2, 0, OKEY }, "m2n2", 4 }, R_ZERO, "n2", 1, -ENOENT },
	{ "rename, another target directory",
	  { "rename", 5, { ODIR, ODIR, 2, 0, OKEY }, "m3n3", 4 },
	  { "rename", 5, { ODIR, ODIR2, 2, 0, OKEY }, "m4n4", 4 }, R_ZERO, "sub2/n4", 1, -ENOENT },
	{ "rename, other flags",
	  { "rename", 5, { ODIR, ODIR, 2, 0, OKEY }, "m5n5", 4 },
	  { "rename", 5, { ODIR, ODIR, 2, ARF_RENAME_NOREPLACE, OKEY }, "m5n5", 4 }, -ENOENT, "n5",
	  1, 0 },
	{ "link, another name",
	  { "link", 3, { OFILE, ODIR, OKEY }, "l1", 2 },
	  { "link", 3, { OFILE, ODIR, OKEY }, "l2", 2 }, R_ZERO, "l2", 1, -EEXIST },
	{ "link, another directory",
	  { "link", 3, { OFILE, ODIR, OKEY }, "l3", 2 },
	  { "link", 3, { OFILE, ODIR2, OKEY }, "l3", 2 }, R_ZERO, "sub2/l3", 1, -EEXIST },
	{ "symlink, another target",
	  { "symlink", 5, { ODIR, 2, 0, 0, OKEY }, "s1t1", 4 },
	  { "symlink", 5, { ODIR, 2, 0, 0, OKEY }, "s1t2", 4 }, -EEXIST, "s1", 1, 0 },
	{ "symlink, another name",
	  { "symlink", 5, { ODIR, 2, 0, 0, OKEY }, "s2t1", 4 },
	  { "symlink", 5, { ODIR, 2, 0, 0, OKEY }, "s3t1", 4 }, R_NEW, "s3", 1, -EEXIST },
	{ "setxattr, another name",
	  { "setxattr", 5, { OFILE, 6, ARF_XATTR_CREATE, 0, OKEY }, "user.a1", 7 },
	  { "setxattr", 5, { OFILE, 6, ARF_XATTR_CREATE, 0, OKEY }, "user.b1", 7 }, R_ZERO, NULL, 0,
	  -EEXIST },
	{ "setxattr, another value",
	  { "setxattr", 5, { OFILE, 6, ARF_XATTR_CREATE, 0, OKEY }, "user.c1", 7 },
	  { "setxattr", 5, { OFILE, 6, ARF_XATTR_CREATE, 0, OKEY }, "user.c2", 7 }, -EEXIST, NULL,
	  0, 0 },
	{ "removexattr, another name",
	  { "removexattr", 3, { OFILE, 0, OKEY }, "user.x", 6 },
	  { "removexattr", 3, { OFILE, 0, OKEY }, "user.y", 6 }, R_ZERO, NULL, 0, -ENODATA },
};

static int64_t oreq_run(struct conn *k, const struct oreq *q, int64_t d, int64_t d2, int64_t f,
                        uint64_t key)
{
	int64_t a[6];
	for (unsigned i = 0; i < q->n; i++)
		a[i] = q->args[i] == ODIR ? d : q->args[i] == ODIR2 ? d2 : q->args[i] == OFILE ? f :
		       q->args[i] == OKEY ? (int64_t)key : q->args[i];
	return xraw(k, q->entry, a, q->n, q->bytes, q->nbytes);
}

/* The reuse cases, each under its own key; the tree is checked after each. */
static void once_reuse(struct conn *k, uint64_t base)
{
	struct arf_client *c = k->c;
	int64_t d = mkdir_p(c, "reuse"), d2 = mkdir_p(c, "reuse/sub2");
	int64_t f = d > 0 ? arf_create(c, (uint64_t)d, "f", 0644, 0, 0) : -1;
	bool ok = d > 0 && d2 > 0 && f > 0;
	static const char *const files[] = { "u1", "u2", "u3", "m1", "m2", "m3", "m4", "m5" };
	for (unsigned i = 0; ok && i < sizeof files / sizeof files[0]; i++)
		ok = arf_create(c, (uint64_t)d, files[i], 0644, 0, 0) > 0;
	ok = ok && arf_mkdir(c, (uint64_t)d, "d1", 0755, 0, 0) > 0 &&
	     arf_mkdir(c, (uint64_t)d2, "d1", 0755, 0, 0) > 0;
	int64_t xa[5] = { f, 6, 0, 0, 0 };
	ok = ok && xraw(k, "setxattr", xa, 5, "user.x1", 7) == 0 &&
	     xraw(k, "setxattr", xa, 5, "user.y2", 7) == 0;
	CHECK(ok, "reuse: fixture");
	if (!ok)
		return;
	for (unsigned i = 0; i < sizeof reuse_cases / sizeof reuse_cases[0]; i++) {
		const struct reuse_case *rc = &reuse_cases[i];
		uint64_t key = base + i;
		uint32_t fl = nlink_of(c, f);
		int64_t r1 = oreq_run(k, &rc->first, d, d2, f, key);
		CHECK(r1 >= 0, "reuse %s: the first request gave %" PRId64, rc->what, r1);
		/* a true repeat of the first: answered from the record */
		CHECK(oreq_run(k, &rc->first, d, d2, f, key) == r1, "reuse %s: the first repeated",
		      rc->what);
		int64_t r2 = oreq_run(k, &rc->second, d, d2, f, key);
		bool good = rc->want2 == R_NEW ? r2 > 2 && r2 != r1 :
		            rc->want2 == R_ZERO ? r2 == 0 :
		            rc->want2 == R_SAME ? r2 == (r1 == 0 ? f : r1) : r2 == rc->want2;
		CHECK(good, "reuse %s: the second request under the first's key gave %" PRId64
		      " (the first gave %" PRId64 ")", rc->what, r2, r1);
		if (rc->path) {
			char p[64];
			snprintf(p, sizeof p, "reuse/%s", rc->path);
			int64_t l = look(c, p);
			CHECK(rc->exists ? l > 0 : l == -ENOENT, "reuse %s: %s %s (%" PRId64 ")", rc->what,
			      p, rc->exists ? "missing" : "still there", l);
		}
		if (strcmp(rc->second.entry, "link") == 0)
			CHECK(nlink_of(c, f) == fl + 2, "reuse %s: nlink %u, not %u (two links made)",
			      rc->what, nlink_of(c, f), fl + 2);
		bool set = strcmp(rc->second.entry, "setxattr") == 0;
		if (rc->want2 == R_ZERO && (set || strcmp(rc->second.entry, "removexattr") == 0)) {
			/* the second's name (6 bytes): there after a set, gone after a remove */
			int64_t ga[2] = { f, 0 };
			int64_t g = xraw(k, "getxattr", ga, 2, rc->second.bytes, 6);
			CHECK(set ? g >= 0 : g == -ENODATA, "reuse %s: getxattr %.6s: %" PRId64, rc->what,
			      rc->second.bytes, g);
		}
		if (rc->want2 == R_NEW || rc->want2 == R_ZERO) {
			/* the second is recorded now: its repeat answers it; the first's record is
			 * gone, so the first runs again (as before keys) */
			CHECK(oreq_run(k, &rc->second, d, d2, f, key) == r2,
			      "reuse %s: the second repeated", rc->what);
			int64_t r3 = oreq_run(k, &rc->first, d, d2, f, key);
			CHECK(r3 == rc->again1, "reuse %s: the first again gave %" PRId64 ", not %d",
			      rc->what, r3, rc->again1);
		} else {
			/* the second failed (or was the same change): the first's record stands */
			CHECK(oreq_run(k, &rc->first, d, d2, f, key) == r1,
			      "reuse %s: the first repeated after the second", rc->what);
		}
	}
}

static unsigned dir_count(struct arf_client *c, int64_t d)
{
	struct arf_dirent ents[256];
	uint64_t cookie = 0;
	unsigned n = 0;
	for (int b = 0; b < 100; b++) {
		int r = arf_readdir(c, (uint64_t)d, &cookie, ents, 256);
		if (r < 0)
			return 0;
		n += (unsigned)r;
		if (cookie == 0)
			break;
	}
	return n;
}

/* The superblock of image img as the file holds it (zeros when it cannot be read). */
static struct arf_sb sb_of(const char *img)
{
	struct arf_sb sb = { 0 };
	int fd = open(img, O_RDONLY);
	if (fd < 0 || pread(fd, &sb, sizeof sb, 0) != (ssize_t)sizeof sb)
		memset(&sb, 0, sizeof sb);
	if (fd >= 0)
		close(fd);
	return sb;
}

/* Keyed operations, on an image of features (ARF_FEAT_ONCE: the table of its own; 0: block
 * 0's, as images made before it have). */
static void test_once(const char *img, uint64_t features)
{
	char err[512];
	CHECK(arf_mkfs_features(img, 16 << 20, 4096, features, err, sizeof err) == 0, "mkfs: %s", err);
	struct arf_sb sb = sb_of(img);
	const uint64_t on = arf_once_n(&sb);
	CHECK(features ? on == ARF_O_MIN && sb.once_off >= sb.journal_off + sb.journal_len &&
	                 sb.once_off + on * ARF_O_SIZE <= sb.ibmap_off :
	                 on == ARF_O_N && sb.once_off == 0,
	      "features %#" PRIx64 ": %" PRIu64 " entries at %" PRIu64, features, on, arf_once_off(&sb));
	struct conn k;
	if (!serve(&k, img))
		return;
	struct arf_client *c = k.c;
	int64_t d = mkdir_p(c, "once");
	int64_t f = arf_create(c, (uint64_t)d, "f0", 0644, 0, 0);
	CHECK(d > 0 && f > 0 && arf_create(c, (uint64_t)d, "gone", 0644, 0, 0) > 0 &&
	      arf_mkdir(c, (uint64_t)d, "sub", 0755, 0, 0) > 0 &&
	      arf_create(c, (uint64_t)d, "ren", 0644, 0, 0) > 0 &&
	      arf_create(c, (uint64_t)d, "gone2", 0644, 0, 0) > 0 &&
	      arf_mkdir(c, (uint64_t)d, "sub3", 0755, 0, 0) > 0, "keyed: fixture");
	const uint64_t base = 0x0ace0001ull << 32 | 100;
	int64_t first[sizeof once_cases / sizeof once_cases[0]];
	for (unsigned i = 0; i < sizeof once_cases / sizeof once_cases[0]; i++) {
		const struct once_case *oc = &once_cases[i];
		int64_t r1 = once_run(&k, oc, d, f, base + i);
		first[i] = r1;
		CHECK(oc->first == 1 ? r1 > 2 : oc->first == 2 ? r1 == f : r1 == 0,
		      "keyed %s %.*s: %" PRId64, oc->entry, (int)oc->nbytes, oc->bytes, r1);
		uint8_t out1[sizeof once_out];
		size_t len1 = once_out_len;
		memcpy(out1, once_out, len1);
		int64_t r2 = once_run(&k, oc, d, f, base + i);
		CHECK(r2 == r1, "keyed %s %.*s again: %" PRId64 ", the first gave %" PRId64, oc->entry,
		      (int)oc->nbytes, oc->bytes, r2, r1);
		/* the forms that answer the parent too: both inodes, the same bytes again */
		size_t el = strlen(oc->entry);
		if (el > 5 && !strcmp(oc->entry + el - 5, "attrs"))
			CHECK(len1 == 2 * ARF_ATTR_BYTES && once_out_len == len1 &&
			      !memcmp(out1, once_out, len1), "keyed %s again: %zu bytes of output, the "
			      "first %zu, %s", oc->entry, once_out_len, len1,
			      memcmp(out1, once_out, len1) ? "not the same" : "the same");
		int64_t r3 = once_run(&k, oc, d, f, base + 1000 + i);
		CHECK(r3 == oc->other, "%s %.*s under another key: %" PRId64 ", not %d", oc->entry,
		      (int)oc->nbytes, oc->bytes, r3, oc->other);
	}
	/* the image changed once: f0 m n ma na s sa l la ren3 mas nas sas las (gone, sub, ren,
	 * ren2, gone2, sub3 gone) */
	CHECK(dir_count(c, d) == 14, "keyed: %u entries, not 14", dir_count(c, d));
	CHECK(nlink_of(c, d) == 5, "keyed: the directory's nlink %u, not 5", nlink_of(c, d));
	CHECK(nlink_of(c, f) == 4, "keyed: f0's nlink %u, not 4 (links made once)", nlink_of(c, f));
	CHECK(look(c, "once/ren3") > 0 && look(c, "once/ren") == -ENOENT, "keyed: renames");

	/* key 0: no record, as before */
	int64_t z[5] = { d, 0755, 0, 0, 0 };
	CHECK(xraw(&k, "mkdir", z, 5, "z", 1) > 0 && xraw(&k, "mkdir", z, 5, "z", 1) == -EEXIST,
	      "unkeyed mkdir twice: EEXIST");
	/* a failed keyed operation records nothing: its repeat runs again */
	int64_t fa[5] = { d, 0755, 0, 0, (int64_t)(base + 500) };
	CHECK(xraw(&k, "mkdir", fa, 5, "z", 1) == -EEXIST && xraw(&k, "rmdir", (int64_t[]){ d, 0 },
	      2, "z", 1) == 0 && xraw(&k, "mkdir", fa, 5, "z", 1) > 0, "failed keyed op not recorded");
	/* an *attr form whose inode was removed since: ENOENT, not another inode's attributes */
	int64_t ga[5] = { d, 0755, 0, 0, (int64_t)(base + 600) };
	int64_t g1 = xraw(&k, "mkdirattr", ga, 5, "g", 1);
	/* (unkeyed: a keyed call of the client, under its random id, could take one of the
	 * entries checked after the restart below) */
	CHECK(g1 > 0 && xraw(&k, "rmdir", (int64_t[]){ d, 0 }, 2, "g", 1) == 0 &&
	      xraw(&k, "mkdirattr", ga, 5, "g", 1) == -ENOENT && look(c, "once/g") == -ENOENT,
	      "keyed mkdirattr repeated after its directory was removed: %" PRId64, g1);

	unserve(&k);
	fsck_clean("keyed operations", img);

	/* across a restart: the records are in the image */
	if (!serve(&k, img))
		return;
	c = k.c;
	for (unsigned i = 0; i < 3; i++) {
		int64_t r = once_run(&k, &once_cases[i], d, f, base + i);
		CHECK(r == first[i], "keyed %s after a restart: %" PRId64 ", the first gave %" PRId64,
		      once_cases[i].entry, r, first[i]);
	}
	int64_t ru = once_run(&k, &once_cases[8], d, f, base + 8);
	CHECK(ru == 0, "keyed unlink after a restart: %" PRId64, ru);

	/* one key, two requests: the second runs (after the checks above: the fixture's keyed
	 * calls under the client's random id may take any entry) */
	once_reuse(&k, base + 20);

	/* (after the records above are checked: one client's keys, one per entry, take every entry) */
	/* wrap-around: a client's (entries + 1) consecutive keys; the first's entry is taken by
	 * the last, so its repeat runs again (EEXIST), the second's is still recorded */
	int64_t w = mkdir_p(c, "wrap");
	const uint64_t wk = 0x0b0b0002ull << 32 | 1;
	int64_t *wino = calloc(on + 1, sizeof *wino);
	bool wok = w > 0 && wino;
	for (unsigned i = 0; wok && i <= on; i++) {
		char name[16];
		snprintf(name, sizeof name, "w%u", i);
		int64_t a[6] = { w, ARF_S_IFREG | 0644, 0, 0, 0, (int64_t)(wk + i) };
		wino[i] = xraw(&k, "mknod", a, 6, name, strlen(name));
		wok &= wino[i] > 0;
	}
	CHECK(wok, "wrap: %" PRIu64 " creates", on + 1);
	if (!wok) {
		free(wino);
		unserve(&k);
		return;
	}
	CHECK(arf_once_entry(&sb, wk) == arf_once_entry(&sb, wk + on) &&
	      arf_once_entry(&sb, wk) != arf_once_entry(&sb, wk + 1), "wrap: entries of consecutive keys");
	int64_t a0[6] = { w, ARF_S_IFREG | 0644, 0, 0, 0, (int64_t)wk };
	CHECK(xraw(&k, "mknod", a0, 6, "w0", 2) == -EEXIST, "wrap: the evicted key runs again");
	int64_t a1[6] = { w, ARF_S_IFREG | 0644, 0, 0, 0, (int64_t)(wk + 1) };
	CHECK(xraw(&k, "mknod", a1, 6, "w1", 2) == wino[1], "wrap: key 2 of %" PRIu64 " still recorded",
	      on + 1);
	int64_t al[6] = { w, ARF_S_IFREG | 0644, 0, 0, 0, (int64_t)(wk + on) };
	char ln[16];
	snprintf(ln, sizeof ln, "w%" PRIu64, on);
	CHECK(xraw(&k, "mknod", al, 6, ln, strlen(ln)) == wino[on], "wrap: the last key");
	unserve(&k);
	fsck_clean("keyed operations after a restart", img);

	/* fsck knows the table: a key in the wrong entry, a result past the inodes, a stray
	 * lock word, each found and emptied by --repair */
	int fd = open(img, O_RDWR);
	CHECK(fd >= 0, "open %s", img);
	if (fd < 0) {
		free(wino);
		return;
	}
	uint64_t e0 = arf_once_entry(&sb, wk);     /* holds key wk + on */
	struct arf_once bad[] = {
		{ .key = wk + 1, .result = 5 },
		{ .key = wk + on, .result = 0xfffffff0u },
		{ .lock = 77ull << 32 | 9999 },
		{ .op = 0x1234 },
	};
	for (unsigned b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		struct arf_once keep;
		CHECK(pread(fd, &keep, sizeof keep, (off_t)e0) == sizeof keep &&
		      pwrite(fd, &bad[b], sizeof bad[b], (off_t)e0) == sizeof bad[b], "poke");
		int frc = fsck(img, false);
		CHECK(frc == ARF_FSCK_PROBLEMS && strstr(report, "keyed result"),
		      "fsck of a bad keyed entry %u: %d\n%s", b, frc, report);
		struct arf_fsck_opts o = { .repair = true };
		struct arf_fsck_result r;
		CHECK(arf_fsck(img, &o, &r) == ARF_FSCK_REPAIRED, "fsck --repair of keyed entry %u", b);
		fsck_clean("after repairing a keyed entry", img);
		CHECK(pwrite(fd, &keep, sizeof keep, (off_t)e0) == sizeof keep, "unpoke");
	}
	fsck_clean("keyed entries restored", img);
	/* an entry of an image from before op hashes (op 0): fsck takes it; it answers no
	 * request, so its key's repeat runs again (EEXIST, as before keys) */
	struct arf_once old;
	CHECK(pread(fd, &old, sizeof old, (off_t)e0) == sizeof old && old.key == wk + on &&
	      old.op != 0 && old.result == (uint32_t)wino[on], "the last key's entry");
	old.op = 0;
	CHECK(pwrite(fd, &old, sizeof old, (off_t)e0) == sizeof old, "poke op 0");
	close(fd);
	fsck_clean("an entry without an op hash", img);
	if (!serve(&k, img)) {
		free(wino);
		return;
	}
	CHECK(xraw(&k, "mknod", al, 6, ln, strlen(ln)) == -EEXIST,
	      "an entry without an op hash: its key runs again");
	unserve(&k);
	free(wino);
	fsck_clean("after the entry without an op hash", img);
}

int main(void)
{
	arfd_log_setup(ARFD_LOG_ERROR, false);
	signal(SIGPIPE, SIG_IGN);
	const char *b = getenv("BUILD");
	snprintf(segpath, sizeof segpath, "%s/arfseg/ops.pno", b && *b ? b : "build");
	snprintf(data_segpath, sizeof data_segpath, "%s/arfseg/data.pno", b && *b ? b : "build");
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_arf_ops.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		printf("mkdtemp: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	char img[512], err[512];
	snprintf(img, sizeof img, "%s", path_of("ops.img"));
	CHECK(arf_mkfs(img, 64 << 20, 0, err, sizeof err) == 0, "mkfs: %s", err);
	test_tree(img);
	test_remove(img);
	test_links(img);
	test_rename(img);
	test_attr_forms(img);
	test_setgid_dir(img);
	test_walk(img);
	test_xattr(img);
	test_layout(img);
	test_once(path_of("once.img"), ARF_FEAT_ONCE);
	test_once(path_of("once-old.img"), 0);
	test_enospc();
	test_crash(path_of("crash.img"));
	test_crash_ops(path_of("crash-ops.img"));
	if (!failed) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("could not remove %s\n", dir);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
