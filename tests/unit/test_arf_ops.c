/* test_arf_ops.c: the ARF namespace operations (arf/ops.pna through arf/arf_ops.c) against
 * an in-process arfd serving a fresh image: a tree built mkdir -p style, files and fifos, a
 * directory of 2000 entries (its slot table grows three times), path lookups, getattr,
 * readdir of everything back in batches (each name exactly once), unlink and rmdir, every
 * errno the operations document, ENOSPC on tiny images (inodes, then blocks), and a crash:
 * a forked arfd killed with SIGKILL while a mkdir loop runs, restarted (journal roll-back).
 * After each phase arfd is stopped and arf_fsck must find the image clean.
 * Prints "N passed, N failed" last.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arc.h"
#include "arf.h"
#include "arf_ops.h"
#include "server.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) passed++; \
	else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
} while (0)

static char dir[256];
static char segpath[512];

static const char *path_of(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

static char report[1 << 16];
static size_t report_len;

static void collect(void *user, enum arf_fsck_line kind, const char *line)
{
	int n = snprintf(report + report_len, sizeof report - report_len, "%s%s\n",
	                 kind == ARF_FSCK_NOTE ? "note: " : "", line);
	if (n > 0 && (size_t)n < sizeof report - report_len)
		report_len += (size_t)n;
}

static int fsck(const char *path)
{
	report_len = 0;
	report[0] = '\0';
	struct arf_fsck_opts o = { .report = collect };
	struct arf_fsck_result r;
	return arf_fsck(path, &o, &r);
}

static void fsck_clean(const char *what, const char *img)
{
	int rc = fsck(img);
	CHECK(rc == ARF_FSCK_CLEAN, "%s: fsck exit %d:\n%s", what, rc, report);
}

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
	CHECK(arf_mknod(c, ARF_INO_ROOT, "sock", 0140000 | 0600, 0, 0) == -EINVAL, "mknod socket");
	CHECK(arf_mknod(c, ARF_INO_ROOT, "dir", ARF_S_IFDIR | 0600, 0, 0) == -EINVAL, "mknod dir");
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

/* A forked arfd serving img; its endpoint in ep.  The child's pid, or -1. */
static pid_t fork_server(const char *img, char ep[256])
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		static struct arfd_config cfg;
		char err[512], e[256] = "";
		cfg.listen[cfg.n_listen++] = "tcp:127.0.0.1:0";
		cfg.arf_image = img;
		struct arfd *s = arfd_start(&cfg, err, sizeof err);
		if (s)
			snprintf(e, sizeof e, "%s", arfd_endpoint(s, "tcp"));
		if (write(pfd[1], e, sizeof e) != (ssize_t)sizeof e)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], ep, 256);
	close(pfd[0]);
	if (got != 256 || !ep[0]) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
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
		int64_t args[4] = { d, 0755, 0, 0 };
		struct arc_exec x = { .seg = seg, .seg_len = seg_len, .entry = "mkdir", .args = args,
		                      .n_args = 4, .argbytes = "victim", .argbytes_len = 6,
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
		int frc = fsck(img);
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

int main(void)
{
	arfd_log_setup(ARFD_LOG_ERROR, false);
	signal(SIGPIPE, SIG_IGN);
	const char *b = getenv("BUILD");
	snprintf(segpath, sizeof segpath, "%s/arfseg/ops.pno", b && *b ? b : "build");
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
	test_enospc();
	test_crash(path_of("crash.img"));
	if (!failed) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("could not remove %s\n", dir);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
