/* conform.c: a fixed list of system-call scenarios run in a directory, one line per step, so
 * that two runs (tmpfs as the reference, an ARF mount) can be compared with diff.  Each
 * line names the call and its result (the value or "-1 ENAME"), and the stat fields that do
 * not depend on the filesystem's numbering: type, mode, nlink, size (not for directories:
 * their size is the filesystem's own), uid, gid.  Times are never printed as values but as
 * "changed" or "same" across one step (utimensat's explicit values are the exception: they
 * are what was set).
 *
 *   conform DIR       makes DIR/conform.d (it must not exist) and runs every scenario in a
 *                     subdirectory of its own; as root, the permission scenarios also run
 *                     child processes as other users (setresuid, supplementary groups), the
 *                     way setpriv does.
 *
 * tests/conform/conform.sh runs it on tmpfs and on an ARF mount and compares the outputs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <stdbool.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Users and groups of the permission scenarios: plain numbers, no /etc/passwd entries
 * needed.  OTHER_GID is a group no test user is in. */
enum { USER_A = 1000, USER_B = 1001, GROUP_A = 1000, GROUP_B = 1001, GROUP_SHARED = 3000,
       OTHER_GID = 4000 };

/* A pause long enough for the coarse clock tmpfs stamps times with (a jiffy, up to 10 ms)
 * to move on, so a time an operation sets differs from the one before it. */
static void tick(void)
{
	struct timespec ts = { 0, 25 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

static const char *err_name(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

/* Print "what = rc", or "what = -1 ENAME" when rc < 0 (errno saved by the caller's call). */
static long say(long rc, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (rc < 0)
		printf(" = -1 %s\n", err_name(saved));
	else
		printf(" = %ld\n", rc);
	errno = saved;
	return rc;
}

/* A descriptor result is printed as "fd", not its number. */
static int say_fd(int fd, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (fd < 0)
		printf(" = -1 %s\n", err_name(saved));
	else
		printf(" = fd\n");
	errno = saved;
	return fd;
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	}
	return "?";
}

static void print_stat(const char *path, const struct stat *st)
{
	printf("  %s: %s %04o nlink=%lu", path, type_name(st->st_mode),
	       (unsigned)(st->st_mode & 07777), (unsigned long)st->st_nlink);
	if (!S_ISDIR(st->st_mode))
		printf(" size=%lld", (long long)st->st_size);
	printf(" uid=%u gid=%u\n", (unsigned)st->st_uid, (unsigned)st->st_gid);
}

/* lstat of path, printed */
static void st(const char *path)
{
	struct stat s;
	if (lstat(path, &s) != 0)
		printf("  %s: lstat = -1 %s\n", path, err_name(errno));
	else
		print_stat(path, &s);
}

static void fst(const char *what, int fd)
{
	struct stat s;
	if (fstat(fd, &s) != 0)
		printf("  %s: fstat = -1 %s\n", what, err_name(errno));
	else
		print_stat(what, &s);
}

/* Times of path before a step, then which of them the step changed. */
struct times { struct timespec a, m, c; int ok; };

static struct times snap(const char *path)
{
	struct times t = { .ok = 0 };
	struct stat s;
	if (lstat(path, &s) == 0)
		t = (struct times){ s.st_atim, s.st_mtim, s.st_ctim, 1 };
	tick();
	return t;
}

static const char *moved(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec ? "same" : "changed";
}

/* which times changed; with_atime 0 leaves atime out (see the read scenario) */
static void changed(const char *path, const struct times *before, int with_atime)
{
	struct stat s;
	if (!before->ok || lstat(path, &s) != 0) {
		printf("  %s: times: not found\n", path);
		return;
	}
	printf("  %s:", path);
	if (with_atime)
		printf(" atime %s", moved(before->a, s.st_atim));
	printf(" mtime %s ctime %s\n", moved(before->m, s.st_mtim), moved(before->c, s.st_ctim));
}

/* A file punched: its size, the blocks it holds, and the runs of zero bytes in it. */
static void punch_show(int fd, const char *what)
{
	struct stat s;
	if (fstat(fd, &s) != 0) {
		printf("  %s: fstat = -1 %s\n", what, err_name(errno));
		return;
	}
	printf("  %s: size %lld blocks %lld zeros", what, (long long)s.st_size,
	       (long long)s.st_blocks);
	static char b[64 << 10];
	ssize_t n = s.st_size < (off_t)sizeof b ? s.st_size : (ssize_t)sizeof b;
	if (pread(fd, b, (size_t)n, 0) != n) {
		printf(" (pread: %s)\n", err_name(errno));
		return;
	}
	for (ssize_t i = 0; i < n;) {
		ssize_t j = i;
		while (j < n && b[j] == 0)
			j++;
		if (j > i)
			printf(" [%zd, %zd)", i, j);
		while (j < n && b[j] != 0)
			j++;
		i = j;
	}
	printf("\n");
}

static void make_file(const char *path, mode_t mode, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0) {
		printf("  setup: open %s: %s\n", path, err_name(errno));
		return;
	}
	if (data && write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		printf("  setup: write %s: %s\n", path, err_name(errno));
	if (close(fd) != 0)
		printf("  setup: close %s: %s\n", path, err_name(errno));
}

/* A file of exactly mode (the umask left out), for the scenarios' fixtures */
static void fixture(const char *path, mode_t mode, const char *data)
{
	make_file(path, mode, data);
	if (chmod(path, mode) != 0)
		printf("  setup: chmod %s: %s\n", path, err_name(errno));
}

static void cat(const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("  cat %s = -1 %s\n", path, err_name(errno));
		return;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		printf("  cat %s: read = -1 %s\n", path, err_name(errno));
		return;
	}
	buf[n] = '\0';
	printf("  cat %s = \"%s\"\n", path, buf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir, sorted, with their d_type */
/* The kernel sends FUSE's RELEASE after close(2) returns, so a mount removes the hidden name
 * of an unlinked file a moment later (longer under -o writeback and load): wait for it, at
 * most 3 s, so the listing compares what stays, not the timing.  tmpfs has none: no wait. */
static void settle_hidden(const char *dir)
{
	for (int tries = 0; tries < 300; tries++) {
		DIR *d = opendir(dir);
		if (!d)
			return;
		bool any = false;
		for (struct dirent *e; (e = readdir(d));)
			any |= !strncmp(e->d_name, ".arf-hidden-", 12);
		closedir(d);
		if (!any)
			return;
		usleep(10000);
	}
}

static void list(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		printf("  ls %s = -1 %s\n", dir, err_name(errno));
		return;
	}
	char *names[512];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 512) {
		char name[2 * NAME_MAX + 1], *o = name;
		for (const char *c = e->d_name; *c; c++) {   /* one line even for a newline */
			if (*c == '\n')
				*o++ = '\\', *o++ = 'n';
			else
				*o++ = *c;
		}
		*o = '\0';
		char *s;
		if (asprintf(&s, "%s(%s)", name,
		             e->d_type == DT_DIR ? "d" : e->d_type == DT_REG ? "f" :
		             e->d_type == DT_LNK ? "l" : e->d_type == DT_FIFO ? "p" :
		             e->d_type == DT_UNKNOWN ? "?" : "o") < 0)
			break;
		names[n++] = s;
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	printf("  ls %s:", dir);
	for (size_t i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

/* ---- scenarios: each runs in a fresh directory of its own (the current directory) ---- */

static void sc_open_flags(void)
{
	int fd = say_fd(open("f", O_WRONLY | O_CREAT | O_EXCL, 0666), "open(f, O_CREAT|O_EXCL, 0666)");
	if (fd >= 0) {
		say(write(fd, "0123456789", 10), "write 10");
		close(fd);
	}
	st("f");
	say_fd(open("f", O_WRONLY | O_CREAT | O_EXCL, 0600), "open(f, O_CREAT|O_EXCL) again");
	fd = say_fd(open("f", O_WRONLY | O_CREAT, 0600), "open(f, O_CREAT) existing, mode 0600");
	if (fd >= 0)
		close(fd);
	st("f");
	struct times t = snap("f");
	fd = say_fd(open("f", O_WRONLY | O_TRUNC), "open(f, O_TRUNC)");
	if (fd >= 0)
		close(fd);
	st("f");
	changed("f", &t, 0);
	t = snap("f");
	fd = say_fd(open("f", O_WRONLY | O_TRUNC), "open(f, O_TRUNC) of an empty file");
	if (fd >= 0)
		close(fd);
	changed("f", &t, 0);
	fd = say_fd(open("f", O_RDONLY | O_TRUNC), "open(f, O_RDONLY|O_TRUNC)");
	if (fd >= 0)
		close(fd);
	say_fd(open("f", O_RDONLY | O_DIRECTORY), "open(f, O_DIRECTORY)");
	say_fd(open("f/", O_RDONLY), "open(f/)");
	say_fd(open("f/x", O_RDONLY | O_CREAT, 0644), "open(f/x, O_CREAT)");
	say_fd(open("none/x", O_RDONLY | O_CREAT, 0644), "open(none/x, O_CREAT)");
	say_fd(open("none", O_RDONLY), "open(none)");
	say(mkdir("d", 0755), "mkdir(d)");
	say_fd(open("d", O_WRONLY), "open(d, O_WRONLY)");
	say_fd(open("d", O_RDWR), "open(d, O_RDWR)");
	say_fd(open("d", O_RDONLY | O_CREAT, 0644), "open(d, O_CREAT)");
	say_fd(open("d", O_RDONLY | O_CREAT | O_EXCL, 0644), "open(d, O_CREAT|O_EXCL)");
	fd = say_fd(open("d", O_RDONLY | O_DIRECTORY), "open(d, O_DIRECTORY)");
	if (fd >= 0)
		close(fd);
	say_fd(open("d/", O_RDONLY | O_CREAT, 0644), "open(d/, O_CREAT)");
	say(symlink("f", "l"), "symlink(f, l)");
	say_fd(open("l", O_RDONLY | O_NOFOLLOW), "open(l, O_NOFOLLOW)");
	fd = say_fd(open("l", O_PATH | O_NOFOLLOW), "open(l, O_PATH|O_NOFOLLOW)");
	if (fd >= 0) {
		fst("l by O_PATH", fd);
		close(fd);
	}
	fd = say_fd(open("l", O_RDONLY), "open(l) follows");
	if (fd >= 0) {
		fst("l's target", fd);
		close(fd);
	}
	say(symlink("target", "dangling"), "symlink(target, dangling)");
	say_fd(open("dangling", O_WRONLY | O_CREAT | O_EXCL, 0600), "open(dangling, O_CREAT|O_EXCL)");
	say_fd(open("dangling", O_WRONLY | O_CREAT | O_NOFOLLOW, 0600),
	       "open(dangling, O_CREAT|O_NOFOLLOW)");
	fd = say_fd(open("dangling", O_WRONLY | O_CREAT, 0600), "open(dangling, O_CREAT)");
	if (fd >= 0)
		close(fd);
	st("target");
	st("dangling");
	fd = say_fd(open("m", O_WRONLY | O_CREAT, 07777), "open(m, O_CREAT, 07777) umask 022");
	if (fd >= 0)
		close(fd);
	st("m");
	fd = say_fd(creat("c", 0640), "creat(c, 0640)");
	if (fd >= 0) {
		say(read(fd, (char[4]){ 0 }, 4), "read of a write-only descriptor");
		close(fd);
	}
	st("c");
	fd = say_fd(open("c", O_RDONLY), "open(c, O_RDONLY)");
	if (fd >= 0) {
		say(write(fd, "x", 1), "write of a read-only descriptor");
		close(fd);
	}
	list(".");
}

static void sc_link_counts(void)
{
	make_file("f", 0644, "data");
	st("f");
	struct times t = snap("f");
	struct times td = snap(".");
	say(link("f", "f2"), "link(f, f2)");
	st("f");
	changed("f", &t, 0);
	changed(".", &td, 0);
	say(link("f", "f2"), "link(f, f2) again");
	say(link("none", "f3"), "link(none, f3)");
	say(link("f", "none/f3"), "link(f, none/f3)");
	t = snap("f");
	say(unlink("f2"), "unlink(f2)");
	st("f");
	changed("f", &t, 0);
	st(".");
	say(mkdir("d", 0755), "mkdir(d)");
	st("d");
	st(".");
	say(mkdir("d/s", 0755), "mkdir(d/s)");
	say(mkdir("d/t", 0700), "mkdir(d/t)");
	st("d");
	make_file("d/file", 0644, NULL);
	st("d");
	say(link("d", "d2"), "link(d, d2)");
	say(rmdir("d/s"), "rmdir(d/s)");
	st("d");
	say(symlink("f", "sl"), "symlink(f, sl)");
	say(linkat(AT_FDCWD, "sl", AT_FDCWD, "sl2", 0), "linkat(sl, sl2) the symlink itself");
	st("sl");
	st("sl2");
	st("f");
	say(linkat(AT_FDCWD, "sl", AT_FDCWD, "sl3", AT_SYMLINK_FOLLOW),
	    "linkat(sl, sl3, AT_SYMLINK_FOLLOW)");
	st("sl3");
	st("f");
	char buf[64];
	ssize_t n = readlink("sl2", buf, sizeof buf);
	say(n, "readlink(sl2)");
	if (n > 0)
		printf("  -> %.*s\n", (int)n, buf);
	say(mkfifo("p", 0640), "mkfifo(p, 0640)");
	say(link("p", "p2"), "link(p, p2)");
	st("p");
	int fd = open("f", O_RDWR);
	if (fd >= 0) {
		say(unlink("f"), "unlink(f) while open");
		fst("open f", fd);
		say(unlink("sl3"), "unlink(sl3) its last name");
		fst("open f", fd);
		list(".");
		close(fd);
	}
	list(".");
	say(mkdir("h", 0755), "mkdir(h)");
	make_file("h/x", 0644, "x");
	fd = open("h/x", O_RDONLY);
	say(unlink("h/x"), "unlink(h/x) while open");
	say(rmdir("h"), "rmdir(h) its only file open");
	if (fd >= 0)
		close(fd);
	tick();
	rmdir("h");   /* when the one above failed: the last close removed the file */
	list(".");
}

/* what a descriptor still does once its file lost its last name: unlinked, or replaced by
 * a rename (an editor saving a file a reader has open) */
static void sc_open_unlinked(void)
{
	char buf[64];
	make_file("u", 0644, "unlinked data");
	int fd = open("u", O_RDWR);
	if (fd < 0)
		return;
	say(unlink("u"), "unlink(u) while open");
	ssize_t n = say(pread(fd, buf, sizeof buf, 0), "pread(u)");
	printf("  = \"%.*s\"\n", n > 0 ? (int)n : 0, buf);
	say(pwrite(fd, "UN", 2, 0), "pwrite(u, 2 bytes)");
	say(ftruncate(fd, 8), "ftruncate(u, 8)");
	say(fchmod(fd, 0600), "fchmod(u, 0600)");
	say(fsync(fd), "fsync(u)");
	fst("u", fd);
	n = say(pread(fd, buf, sizeof buf, 0), "pread(u)");
	printf("  = \"%.*s\"\n", n > 0 ? (int)n : 0, buf);
	say(close(fd), "close(u)");
	settle_hidden(".");
	list(".");

	make_file("old", 0644, "old version");
	make_file("new", 0644, "new version");
	fd = open("old", O_RDONLY);
	if (fd < 0)
		return;
	say(rename("none", "old"), "rename(none, old) while old is open");
	say(mkdir("dir", 0755), "mkdir(dir)");
	say(rename("dir", "old"), "rename(dir, old) while old is open");
	say(rmdir("dir"), "rmdir(dir)");
	cat("old");
	list(".");
	say(rename("new", "old"), "rename(new, old) while old is open");
	n = say(pread(fd, buf, sizeof buf, 0), "pread(the old file)");
	printf("  = \"%.*s\"\n", n > 0 ? (int)n : 0, buf);
	fst("the old file", fd);
	cat("old");
	say(close(fd), "close(the old file)");
	list(".");
	make_file("x", 0644, "x");
	make_file("y", 0644, "y");
	int fx = open("x", O_RDONLY), fy = open("y", O_RDONLY);
	say(renameat2(AT_FDCWD, "x", AT_FDCWD, "y", RENAME_EXCHANGE), "renameat2(x, y, EXCHANGE) both open");
	if (fx >= 0) {
		n = pread(fx, buf, sizeof buf, 0);
		printf("  x's descriptor reads \"%.*s\"\n", n > 0 ? (int)n : 0, buf);
		close(fx);
	}
	if (fy >= 0)
		close(fy);
	cat("x");
	list(".");
}

static void sc_rename(void)
{
	make_file("a", 0644, "A");
	make_file("b", 0600, "B");
	struct times t = snap("a");
	say(rename("a", "b"), "rename(a, b) over a file");
	st("a");
	st("b");
	cat("b");
	changed("b", &t, 0);
	say(rename("b", "b"), "rename(b, b)");
	st("b");
	say(link("b", "b2"), "link(b, b2)");
	say(rename("b", "b2"), "rename(b, b2) two links of one file");
	st("b");
	st("b2");
	say(rename("none", "x"), "rename(none, x)");
	say(mkdir("e", 0755), "mkdir(e)");
	say(mkdir("n", 0755), "mkdir(n)");
	make_file("n/in", 0644, NULL);
	say(rename("b", "e"), "rename(b, e) file over an empty dir");
	say(rename("e", "b"), "rename(e, b) dir over a file");
	say(rename("e", "n"), "rename(e, n) over a non-empty dir");
	say(mkdir("d", 0755), "mkdir(d)");
	say(mkdir("d/sub", 0755), "mkdir(d/sub)");
	say(rename("d", "d/sub/x"), "rename(d, d/sub/x) into itself");
	say(rename("d", "d/x"), "rename(d, d/x)");
	say(rename("d/sub/..", "y"), "rename(d/sub/.., y)");
	say(rename("d/.", "y"), "rename(d/., y)");
	st(".");
	struct times te = snap("e");
	say(rename("e", "d/sub"), "rename(e, d/sub) over an empty dir");
	st(".");
	st("d");
	st("d/sub");
	changed("d/sub", &te, 0);
	say(mkdir("m", 0755), "mkdir(m)");
	say(mkdir("m/c", 0755), "mkdir(m/c)");
	struct times tp = snap("d");
	say(rename("m/c", "d/c"), "rename(m/c, d/c) across directories");
	st("m");
	st("d");
	changed("d", &tp, 0);
	struct stat s1, s2;
	if (stat("d/c/..", &s1) == 0 && stat("d", &s2) == 0)
		printf("  d/c/.. is d: %s\n", s1.st_ino == s2.st_ino ? "yes" : "no");
	make_file("p", 0644, "P");
	make_file("q", 0644, "Q");
	say(renameat2(AT_FDCWD, "p", AT_FDCWD, "q", RENAME_NOREPLACE), "renameat2(p, q, NOREPLACE)");
	say(renameat2(AT_FDCWD, "p", AT_FDCWD, "r", RENAME_NOREPLACE),
	    "renameat2(p, r, NOREPLACE) new name");
	st("p");
	cat("r");
	say(renameat2(AT_FDCWD, "r", AT_FDCWD, "q", RENAME_EXCHANGE), "renameat2(r, q, EXCHANGE)");
	cat("r");
	cat("q");
	say(renameat2(AT_FDCWD, "r", AT_FDCWD, "d", RENAME_EXCHANGE),
	    "renameat2(r, d, EXCHANGE) file and dir");
	st("r");
	st("d");
	say(renameat2(AT_FDCWD, "r", AT_FDCWD, "none", RENAME_EXCHANGE),
	    "renameat2(r, none, EXCHANGE)");
	say(renameat2(AT_FDCWD, "r", AT_FDCWD, "q", RENAME_EXCHANGE | RENAME_NOREPLACE),
	    "renameat2(r, q, EXCHANGE|NOREPLACE)");
	say(renameat2(AT_FDCWD, "r", AT_FDCWD, "q", 1 << 7), "renameat2(r, q, unknown flag)");
	say(symlink("q", "sl"), "symlink(q, sl)");
	say(rename("sl", "sl2"), "rename(sl, sl2) a symlink");
	st("sl2");
	cat("sl2");
	list(".");
}

static void sc_names(void)
{
	char n255[256], n256[257];
	memset(n255, 'a', 255);
	n255[255] = '\0';
	memset(n256, 'b', 256);
	n256[256] = '\0';
	int fd = say_fd(open(n255, O_WRONLY | O_CREAT, 0644), "open(255 bytes, O_CREAT)");
	if (fd >= 0)
		close(fd);
	st(n255);
	say_fd(open(n256, O_WRONLY | O_CREAT, 0644), "open(256 bytes, O_CREAT)");
	struct stat s;
	say(stat(n256, &s), "stat(256 bytes)");
	say(mkdir(n256, 0755), "mkdir(256 bytes)");
	say(symlink("x", n256), "symlink(x, 256 bytes)");
	say(rename(n255, n256), "rename(255 bytes, 256 bytes)");
	say(unlink(n255), "unlink(255 bytes)");
	n255[0] = 'd';
	say(mkdir(n255, 0755), "mkdir(255 bytes)");
	say(rmdir(n255), "rmdir(255 bytes)");
	/* names the kernel passes through unchanged: spaces, a newline, UTF-8, a leading dash */
	const char *odd[] = { "a b", "new\nline", "\xc3\xa9t\xc3\xa9", "-dash", ".hidden", "..x" };
	for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
		fd = open(odd[i], O_WRONLY | O_CREAT, 0644);
		say_fd(fd, "open(odd name %zu, O_CREAT)", i);
		if (fd >= 0)
			close(fd);
	}
	say_fd(open("", O_RDONLY), "open(\"\")");
	/* a path of more than PATH_MAX bytes */
	char *longpath = malloc(PATH_MAX + 16);
	if (longpath) {
		size_t len = 0;
		while (len < PATH_MAX + 4) {
			memcpy(longpath + len, "x/", 2);
			len += 2;
		}
		longpath[len] = '\0';
		say(stat(longpath, &s), "stat(a path of %d bytes)", PATH_MAX + 4);
		free(longpath);
	}
	list(".");
}

static void sc_loops(void)
{
	say(symlink("b", "a"), "symlink(b, a)");
	say(symlink("a", "b"), "symlink(a, b)");
	say_fd(open("a", O_RDONLY), "open(a) a loop");
	struct stat s;
	say(stat("a", &s), "stat(a)");
	say(lstat("a", &s), "lstat(a)");
	say_fd(open("a", O_WRONLY | O_CREAT, 0644), "open(a, O_CREAT)");
	make_file("f", 0644, "end");
	/* a chain: the kernel follows at most 40 links */
	char from[16], to[16];
	for (int i = 0; i < 41; i++) {
		snprintf(from, sizeof from, "c%d", i);
		snprintf(to, sizeof to, i ? "c%d" : "f", i - 1);
		if (symlink(to, from) != 0)
			say(-1, "symlink(%s, %s)", to, from);
	}
	say(stat("c39", &s), "stat(c39) 40 links");
	say(stat("c40", &s), "stat(c40) 41 links");
	say(mkdir("d", 0755), "mkdir(d)");
	say(symlink("..", "d/up"), "symlink(.., d/up)");
	say(stat("d/up/d/up/d/up/f", &s), "stat(d/up/d/up/d/up/f)");
	say(symlink("f", "fl"), "symlink(f, fl)");
	say(stat("fl/", &s), "stat(fl/) a file through a link");
	say(symlink("d", "dl"), "symlink(d, dl)");
	say(stat("dl/", &s), "stat(dl/)");
	say(rmdir("dl"), "rmdir(dl)");
	say(unlink("dl/"), "unlink(dl/)");
}

static void sc_symlinks(void)
{
	static char target[4097];
	char buf[4200];
	/* 144 bytes is the longest target ARF keeps in the inode, 145 the shortest in a block */
	const int lens[] = { 1, 144, 145, 4095, 4096 };
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		memset(target, 't', (size_t)lens[i]);
		target[lens[i]] = '\0';
		char name[32];
		snprintf(name, sizeof name, "s%d", lens[i]);
		if (say(symlink(target, name), "symlink(%d bytes, %s)", lens[i], name) != 0)
			continue;
		st(name);
		ssize_t n = say(readlink(name, buf, sizeof buf), "readlink(%s)", name);
		printf("  same target: %s\n", n == lens[i] && !memcmp(buf, target, (size_t)n) ? "yes" : "no");
		say(readlink(name, buf, 10), "readlink(%s, 10-byte buffer)", name);
	}
	say(symlink("", "empty"), "symlink(\"\", empty)");
	make_file("f", 0644, NULL);
	say(symlink("x", "f"), "symlink(x, f) existing");
	say(readlink("f", buf, sizeof buf), "readlink(f) a file");
	say(readlink("none", buf, sizeof buf), "readlink(none)");
	struct times t = snap(".");
	say(symlink("/abs/path", "abs"), "symlink(/abs/path, abs)");
	changed(".", &t, 0);
	t = snap("abs");
	say(readlink("abs", buf, sizeof buf), "readlink(abs)");
	changed("abs", &t, 1);
	/* another filesystem: refused by the kernel before either sees it, nothing made */
	say(rename("f", "/proc/conform-exdev"), "rename(f, /proc/...)");
	say(link("f", "/proc/conform-exdev"), "link(f, /proc/...)");
	list(".");
}

static void sc_dirs(void)
{
	say(mkdir("d", 0755), "mkdir(d)");
	make_file("d/f", 0644, NULL);
	make_file("f", 0644, NULL);
	say(rmdir("d"), "rmdir(d) not empty");
	say(rmdir("f"), "rmdir(f)");
	say(unlink("d"), "unlink(d)");
	say(rmdir("none"), "rmdir(none)");
	say(rmdir("d/."), "rmdir(d/.)");
	say(rmdir("d/.."), "rmdir(d/..)");
	say(rmdir("f/x"), "rmdir(f/x)");
	say(mkdir("d", 0755), "mkdir(d) existing");
	say(mkdir("f", 0755), "mkdir(f) existing file");
	say(mkdir("f/x", 0755), "mkdir(f/x)");
	say(mkdir("none/x", 0755), "mkdir(none/x)");
	say(symlink("none", "dang"), "symlink(none, dang)");
	say(mkdir("dang", 0755), "mkdir(dang) a dangling symlink");
	say(mkdir("m", 07777), "mkdir(m, 07777) umask 022");
	st("m");
	struct times t = snap("d");
	say(unlink("d/f"), "unlink(d/f)");
	changed("d", &t, 0);
	say(rmdir("d"), "rmdir(d) now empty");
	st("d");
	say(mkdir("e", 0755), "mkdir(e)");
	int fd = open("e", O_RDONLY | O_DIRECTORY);
	say(rmdir("e"), "rmdir(e) while open");
	if (fd >= 0) {
		fst("open e", fd);
		say(openat(fd, "x", O_WRONLY | O_CREAT, 0644), "openat(removed e, x, O_CREAT)");
		close(fd);
	}
	say(mkdir("big", 0755), "mkdir(big)");
	char name[32];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "big/%03d", i);
		if (i % 10 == 0 ? mkdir(name, 0755) : (make_file(name, 0644, NULL), 0))
			say(-1, "mkdir(%s)", name);
	}
	st("big");
	int n_ent = 0, n_dir = 0;
	DIR *dir = opendir("big");
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		n_ent++;
		n_dir += e->d_type == DT_DIR;
	}
	if (dir)
		closedir(dir);
	printf("  big: %d entries, %d of them dirs\n", n_ent, n_dir);
	/* telldir in the middle, a second pass from there: the same names follow */
	dir = opendir("big");
	if (dir) {
		char first[64][NAME_MAX + 1], again[NAME_MAX + 1];
		long pos = -1;
		int k = 0, same_after = 0, n_after = 0;
		while (k < 64 && (e = readdir(dir))) {
			if (k == 20)
				pos = telldir(dir);
			snprintf(first[k++], sizeof first[0], "%s", e->d_name);
		}
		if (pos >= 0) {
			seekdir(dir, pos);
			for (int i = 21; i < k && (e = readdir(dir)); i++) {
				snprintf(again, sizeof again, "%s", e->d_name);
				n_after++;
				same_after += !strcmp(again, first[i]);
			}
		}
		printf("  seekdir(telldir after 21 entries): %d of %d entries as before\n",
		       same_after, n_after);
		rewinddir(dir);
		int n_rewound = 0;
		while ((e = readdir(dir)))
			n_rewound++;
		printf("  after rewinddir: %d entries\n", n_rewound);
		int fd2 = dirfd(dir);
		say(read(fd2, (char[8]){ 0 }, 8), "read(a directory)");
		closedir(dir);
	}
	struct statvfs sv;
	if (say(statvfs(".", &sv), "statvfs(.)") == 0)
		printf("  f_namemax %lu\n", (unsigned long)sv.f_namemax);
	list(".");
}

static void sc_times(void)
{
	make_file("f", 0644, "data");
	struct timespec set[2] = { { 1000000000, 123456789 }, { 1100000000, 987654321 } };
	say(utimensat(AT_FDCWD, "f", set, 0), "utimensat(f, 2001-09-09.123456789, 2004-11-09.987654321)");
	struct stat s;
	if (lstat("f", &s) == 0)
		printf("  f: atime %lld.%09ld mtime %lld.%09ld\n", (long long)s.st_atim.tv_sec,
		       s.st_atim.tv_nsec, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
	struct times t = snap("f");
	struct timespec omit_now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	say(utimensat(AT_FDCWD, "f", omit_now, 0), "utimensat(f, OMIT, NOW)");
	changed("f", &t, 1);
	t = snap("f");
	struct timespec now_omit[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	say(utimensat(AT_FDCWD, "f", now_omit, 0), "utimensat(f, NOW, OMIT)");
	changed("f", &t, 1);
	t = snap("f");
	struct timespec omit_omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	say(utimensat(AT_FDCWD, "f", omit_omit, 0), "utimensat(f, OMIT, OMIT)");
	changed("f", &t, 1);
	t = snap("f");
	say(utimensat(AT_FDCWD, "f", NULL, 0), "utimensat(f, NULL)");
	changed("f", &t, 1);
	struct timespec old[2] = { { -1, 0 }, { 0, 1 } };
	say(utimensat(AT_FDCWD, "f", old, 0), "utimensat(f, 1969-12-31T23:59:59, 1970-01-01.000000001)");
	if (lstat("f", &s) == 0)
		printf("  f: atime %lld.%09ld mtime %lld.%09ld\n", (long long)s.st_atim.tv_sec,
		       s.st_atim.tv_nsec, (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
	struct timespec bad[2] = { { 0, 1000000000 }, { 0, 0 } };
	say(utimensat(AT_FDCWD, "f", bad, 0), "utimensat(f, nsec 1e9)");
	say(symlink("f", "l"), "symlink(f, l)");
	say(utimensat(AT_FDCWD, "l", set, AT_SYMLINK_NOFOLLOW), "utimensat(l, AT_SYMLINK_NOFOLLOW)");
	if (lstat("l", &s) == 0)
		printf("  l: mtime %lld.%09ld\n", (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
	say(mkdir("d", 0755), "mkdir(d)");
	say(utimensat(AT_FDCWD, "d", set, 0), "utimensat(d)");
	if (lstat("d", &s) == 0)
		printf("  d: mtime %lld.%09ld\n", (long long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec);
	/* writes, reads and chmod: which times move */
	t = snap("f");
	int fd = open("f", O_WRONLY);
	if (fd >= 0) {
		say(write(fd, "abc", 3), "write(f, 3)");
		close(fd);
	}
	changed("f", &t, 0);
	t = snap("f");
	say(chmod("f", 0600), "chmod(f, 0600)");
	changed("f", &t, 0);
	t = snap("f");
	say(chown("f", (uid_t)-1, (gid_t)-1), "chown(f, -1, -1)");
	changed("f", &t, 0);
	/* relatime: a read updates atime when it is not after mtime (the utimensat above set it
	 * 1969, so it is before) */
	say(utimensat(AT_FDCWD, "f", old, 0), "utimensat(f, 1969, 1970)");
	t = snap("f");
	cat("f");
	changed("f", &t, 1);
	/* the dates 64-bit nanoseconds cannot hold */
	struct timespec far[2] = { { 10413792000LL, 0 }, { 10413792000LL, 0 } };   /* 2300-01-01 */
	say(utimensat(AT_FDCWD, "f", far, 0), "utimensat(f, 2300-01-01)");
	if (lstat("f", &s) == 0)
		printf("  f: atime %lld mtime %lld\n", (long long)s.st_atim.tv_sec,
		       (long long)s.st_mtim.tv_sec);
}

static void sc_truncate(void)
{
	make_file("f", 0644, "0123456789");
	struct times t = snap("f");
	say(truncate("f", 4), "truncate(f, 4)");
	st("f");
	changed("f", &t, 0);
	cat("f");
	t = snap("f");
	say(truncate("f", 4), "truncate(f, 4) same size");
	changed("f", &t, 0);
	say(truncate("f", 8192), "truncate(f, 8192)");
	st("f");
	char buf[8192];
	int fd = open("f", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = pread(fd, buf, sizeof buf, 0);
		size_t zeros = 0;
		for (ssize_t i = 4; i < n; i++)
			zeros += buf[i] == 0;
		printf("  pread 8192 = %zd, zeros after 4: %zu\n", n, zeros);
		say(ftruncate(fd, 0), "ftruncate(read-only descriptor, 0)");
		close(fd);
	}
	say(truncate("f", -1), "truncate(f, -1)");
	say(mkdir("d", 0755), "mkdir(d)");
	say(truncate("d", 0), "truncate(d, 0)");
	say(truncate("none", 0), "truncate(none, 0)");
	fd = open("f", O_RDWR);
	if (fd >= 0) {
		t = snap("f");
		say(ftruncate(fd, 1), "ftruncate(f, 1)");
		fst("f", fd);
		changed("f", &t, 0);
		say(ftruncate(fd, -1), "ftruncate(f, -1)");
		say(pwrite(fd, "Z", 1, 100000), "pwrite(f, 1 byte at 100000)");
		fst("f", fd);
		close(fd);
	}
	fd = open("f", O_WRONLY | O_APPEND);
	if (fd >= 0) {
		/* only the result: the file offset of an O_APPEND write is not checked here */
		say(write(fd, "end", 3), "write(O_APPEND, 3)");
		close(fd);
	}
	st("f");
	say(mkfifo("p", 0644), "mkfifo(p)");
	say(truncate("p", 0), "truncate(p, 0)");
	/* a sparse file: blocks held, where the data and the holes are */
	fd = open("sparse", O_RDWR | O_CREAT, 0644);
	if (fd >= 0) {
		say(pwrite(fd, "d", 1, 1 << 20), "pwrite(sparse, 1 byte at 1 MiB)");
		say(fsync(fd), "fsync(sparse)");   /* blocks a cache still holds count nowhere */
		struct stat s;
		if (fstat(fd, &s) == 0)
			printf("  sparse: size %lld blocks %lld\n", (long long)s.st_size,
			       (long long)s.st_blocks);
		say(lseek(fd, 0, SEEK_DATA), "lseek(sparse, 0, SEEK_DATA)");
		say(lseek(fd, 0, SEEK_HOLE), "lseek(sparse, 0, SEEK_HOLE)");
		say(lseek(fd, (1 << 20) + 1, SEEK_DATA), "lseek(sparse, past the end, SEEK_DATA)");
		say(fallocate(fd, 0, 0, 8192), "fallocate(sparse, 0, 8192)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 1 << 20, 1),
		    "fallocate(sparse, PUNCH_HOLE)");
		close(fd);
	}
	/* data, a hole, data, a hole to the size, written just now (not synced: what a write
	 * queue holds must count), then where SEEK_DATA and SEEK_HOLE land from each part */
	fd = open("sparse2", O_RDWR | O_CREAT, 0644);
	if (fd >= 0) {
		say(pwrite(fd, "a", 1, 10), "pwrite(sparse2, 1 byte at 10)");
		say(pwrite(fd, "b", 1, 3 << 20), "pwrite(sparse2, 1 byte at 3 MiB)");
		say(ftruncate(fd, 5 << 20), "ftruncate(sparse2, 5 MiB)");
		const off_t from[] = { 0, 10, 4096, 1 << 20, 3 << 20, (3 << 20) + 4096, (5 << 20) - 1,
		                       5 << 20 };
		for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
			char what[80];
			snprintf(what, sizeof what, "lseek(sparse2, %lld, SEEK_DATA)", (long long)from[i]);
			say(lseek(fd, from[i], SEEK_DATA), what);
			snprintf(what, sizeof what, "lseek(sparse2, %lld, SEEK_HOLE)", (long long)from[i]);
			say(lseek(fd, from[i], SEEK_HOLE), what);
		}
		/* fallocate: holes inside (blocks, no data), past the end (the size grows), and
		 * KEEP_SIZE inside and past the size */
		say(fallocate(fd, 0, 4096, 8192), "fallocate(sparse2, 4096, 8192)");
		say(lseek(fd, 4096, SEEK_DATA), "lseek(sparse2, 4096, SEEK_DATA)");
		say(lseek(fd, 4096, SEEK_HOLE), "lseek(sparse2, 4096, SEEK_HOLE)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 4096), "fallocate(sparse2, KEEP_SIZE, 1 MiB, 4096)");
		say(lseek(fd, 1 << 20, SEEK_DATA), "lseek(sparse2, 1 MiB, SEEK_DATA)");
		say(fallocate(fd, 0, (5 << 20) - 1, 4097), "fallocate(sparse2, 5 MiB - 1, 4097)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE, 6 << 20, 4096), "fallocate(sparse2, KEEP_SIZE, 6 MiB, 4096)");
		close(fd);
		st("sparse2");
		say(truncate("sparse2", 0), "truncate(sparse2, 0)");
	}
	/* PUNCH_HOLE: what reads as zeros afterwards, where SEEK_DATA/SEEK_HOLE land, the blocks
	 * held (st_blocks goes down only for whole blocks inside the range), the times; then the
	 * other modes */
	fd = open("punched", O_RDWR | O_CREAT, 0644);
	if (fd >= 0) {
		static char pb[10 * 4096 + 100];
		memset(pb, 'p', sizeof pb);
		say(pwrite(fd, pb, sizeof pb, 0), "pwrite(punched, 10 blocks and 100 bytes)");
		say(fsync(fd), "fsync(punched)");
		punch_show(fd, "punched");
		struct times t = snap("punched");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 8192 + 100, 3 * 4096),
		    "fallocate(punched, PUNCH_HOLE, 8292, 12288)");
		changed("punched", &t, 0);
		punch_show(fd, "punched");
		const off_t from[] = { 0, 8192, 12288, 16384, 20480 };
		for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
			say(lseek(fd, from[i], SEEK_DATA), "lseek(punched, %lld, SEEK_DATA)",
			    (long long)from[i]);
			say(lseek(fd, from[i], SEEK_HOLE), "lseek(punched, %lld, SEEK_HOLE)",
			    (long long)from[i]);
		}
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 12288, 4096),
		    "fallocate(punched, PUNCH_HOLE, in the hole)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 1 << 20, 4096),
		    "fallocate(punched, PUNCH_HOLE, past the end)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 4095, 2),
		    "fallocate(punched, PUNCH_HOLE, 4095, 2)");
		punch_show(fd, "punched");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, sizeof pb),
		    "fallocate(punched, PUNCH_HOLE, 0, the size)");
		punch_show(fd, "punched");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, 1 << 20),
		    "fallocate(punched, PUNCH_HOLE, 0, 1 MiB)");
		punch_show(fd, "punched");
		say(lseek(fd, 0, SEEK_DATA), "lseek(punched, 0, SEEK_DATA)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, 0),
		    "fallocate(punched, PUNCH_HOLE, 0, 0)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, -1),
		    "fallocate(punched, PUNCH_HOLE, 0, -1)");
		say(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096),
		    "fallocate(punched, PUNCH_HOLE without KEEP_SIZE)");
		say(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096), "fallocate(punched, COLLAPSE_RANGE)");
		say(fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 4096), "fallocate(punched, INSERT_RANGE)");
		/* written just now, not synced: what a write queue holds is punched too */
		memset(pb, 'q', 3 * 4096);
		say(pwrite(fd, pb, 3 * 4096, 0), "pwrite(punched, 3 blocks)");
		say(fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 100, 4096),
		    "fallocate(punched, PUNCH_HOLE, 100, 4096)");
		punch_show(fd, "punched");
		/* ZERO_RANGE (ext4 has it, tmpfs not): zeros with blocks, the size raised without
		 * KEEP_SIZE */
		memset(pb, 'z', 8192);
		say(pwrite(fd, pb, 8192, 16384), "pwrite(punched, 2 blocks at 16384)");
		say(fallocate(fd, FALLOC_FL_ZERO_RANGE, 16484, 40000), "fallocate(punched, ZERO_RANGE, 16484, 40000)");
		punch_show(fd, "punched");
		say(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 50000, 20000),
		    "fallocate(punched, ZERO_RANGE|KEEP_SIZE, 50000, 20000)");
		punch_show(fd, "punched");
		close(fd);
	}
	/* the largest file: ARF's is 16 TiB (2^32 blocks) */
	long long tib16 = 16LL << 40;
	say(truncate("f", tib16), "truncate(f, 16 TiB)");
	say(truncate("f", tib16 + 1), "truncate(f, 16 TiB + 1)");
	fd = open("f", O_WRONLY);
	if (fd >= 0) {
		say(pwrite(fd, "x", 1, tib16 - 1), "pwrite(f, 1 byte at 16 TiB - 1)");
		say(pwrite(fd, "x", 1, tib16), "pwrite(f, 1 byte at 16 TiB)");
		say(close(fd), "close(f)");
	}
	st("f");
}

static void sc_tmpfile(void)
{
	int fd = say_fd(open(".", O_TMPFILE | O_RDWR, 0600), "open(., O_TMPFILE|O_RDWR)");
	if (fd < 0)
		return;
	say(write(fd, "tmp", 3), "write 3");
	fst("tmpfile", fd);
	list(".");
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	say(linkat(AT_FDCWD, proc, AT_FDCWD, "named", AT_SYMLINK_FOLLOW), "linkat(tmpfile, named)");
	fst("tmpfile", fd);
	close(fd);
	cat("named");
	fd = say_fd(open(".", O_TMPFILE | O_RDWR | O_EXCL, 0600), "open(., O_TMPFILE|O_EXCL)");
	if (fd >= 0) {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		say(linkat(AT_FDCWD, proc, AT_FDCWD, "named2", AT_SYMLINK_FOLLOW),
		    "linkat(O_EXCL tmpfile, named2)");
		close(fd);
	}
	list(".");
}

static void as_user(uid_t uid, gid_t gid, int ngroups, const gid_t *groups, void (*fn)(void),
                    const char *what);

/* Another user and root's 0644 file f: reads allowed, writes EACCES, trusted.* hidden from
 * the list and refused (the kernel's rules: CAP_SYS_ADMIN) */
static void u_xattrs(void)
{
	char buf[1024];
	ssize_t n = say(getxattr("f", "user.a", buf, sizeof buf), "getxattr(f, user.a)");
	if (n >= 0)
		printf("  = \"%.*s\"\n", (int)n, buf);
	say(setxattr("f", "user.x", "x", 1, 0), "setxattr(f, user.x) not the owner");
	say(removexattr("f", "user.a"), "removexattr(f, user.a) not the owner");
	say(getxattr("f", "trusted.t", buf, sizeof buf), "getxattr(f, trusted.t)");
	say(setxattr("f", "trusted.x", "x", 1, 0), "setxattr(f, trusted.x)");
	n = say(listxattr("f", buf, sizeof buf), "listxattr(f)");
	if (n > 0) {
		char *names[16];
		int k = 0;
		for (char *p = buf; p < buf + n && k < 16; p += strlen(p) + 1)
			names[k++] = p;
		qsort(names, (size_t)k, sizeof *names, cmp_str);
		for (int i = 0; i < k; i++)
			printf("  %.40s\n", names[i]);
	}
}

/* A user's write into its own setuid and setgid (g+x) file clears both bits, through an
 * O_APPEND descriptor too (should_remove_suid: the writer has no CAP_FSETID) */
static void u_write_privs(void)
{
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "sid-append" : "sid-plain";
		make_file(name, 0755, NULL);
		say(chmod(name, 06775), k ? "chmod(sid-append, 06775)" : "chmod(sid-plain, 06775)");
		int fd = open(name, O_WRONLY | (k ? O_APPEND : 0));
		if (fd >= 0) {
			say(write(fd, "x", 1), k ? "write O_APPEND" : "write");
			close(fd);
		}
		st(name);
	}
}

static void sc_xattrs(void)
{
	make_file("f", 0644, NULL);
	char buf[256];
	say(setxattr("f", "user.a", "value", 5, 0), "setxattr(f, user.a, 5 bytes)");
	say(getxattr("f", "user.a", NULL, 0), "getxattr(f, user.a, size 0)");
	ssize_t n = say(getxattr("f", "user.a", buf, sizeof buf), "getxattr(f, user.a)");
	if (n >= 0)
		printf("  = \"%.*s\"\n", (int)n, buf);
	say(getxattr("f", "user.a", buf, 2), "getxattr(f, user.a, 2-byte buffer)");
	say(getxattr("f", "user.none", buf, sizeof buf), "getxattr(f, user.none)");
	say(setxattr("f", "user.a", "v2", 2, XATTR_CREATE), "setxattr(f, user.a, XATTR_CREATE)");
	say(setxattr("f", "user.b", "", 0, XATTR_REPLACE), "setxattr(f, user.b, XATTR_REPLACE)");
	say(setxattr("f", "user.b", "", 0, XATTR_CREATE), "setxattr(f, user.b, 0 bytes, XATTR_CREATE)");
	say(getxattr("f", "user.b", buf, sizeof buf), "getxattr(f, user.b)");
	say(setxattr("f", "user.a", "replaced", 8, XATTR_REPLACE), "setxattr(f, user.a, XATTR_REPLACE)");
	n = getxattr("f", "user.a", buf, sizeof buf);
	printf("  user.a = \"%.*s\"\n", n > 0 ? (int)n : 0, buf);
	n = say(listxattr("f", buf, sizeof buf), "listxattr(f)");
	if (n > 0) {
		/* names in the filesystem's order: sort them */
		char *names[16];
		int k = 0;
		for (char *p = buf; p < buf + n && k < 16; p += strlen(p) + 1)
			names[k++] = p;
		qsort(names, (size_t)k, sizeof *names, cmp_str);
		for (int i = 0; i < k; i++)
			printf("  %s\n", names[i]);
	}
	say(listxattr("f", buf, 1), "listxattr(f, 1-byte buffer)");
	say(removexattr("f", "user.b"), "removexattr(f, user.b)");
	say(removexattr("f", "user.b"), "removexattr(f, user.b) again");
	char longname[300];
	memcpy(longname, "user.", 5);
	memset(longname + 5, 'n', 251);
	longname[256] = '\0';
	say(setxattr("f", longname, "x", 1, 0), "setxattr(f, a 256-byte name)");
	longname[255] = '\0';
	say(setxattr("f", longname, "x", 1, 0), "setxattr(f, a 255-byte name)");
	static char big[65537];
	say(setxattr("f", "user.big", big, 65536, 0), "setxattr(f, user.big, 65536 bytes)");
	say(setxattr("f", "user.big", big, 65537, 0), "setxattr(f, user.big, 65537 bytes)");
	say(setxattr("f", "bogus.a", "x", 1, 0), "setxattr(f, bogus.a)");
	say(symlink("f", "l"), "symlink(f, l)");
	say(lsetxattr("l", "user.a", "x", 1, 0), "lsetxattr(l, user.a)");
	say(setxattr("f", "trusted.t", "x", 1, 0), "setxattr(f, trusted.t)");
	say(getxattr("f", "trusted.t", buf, sizeof buf), "getxattr(f, trusted.t)");
	/* a POSIX ACL (what setfacl -m u:1000:r writes): header, then user_obj, user 1000,
	 * group_obj, mask, other entries, little-endian */
	static const unsigned char acl[] = {
		2, 0, 0, 0,
		1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,      /* ACL_USER_OBJ rw- */
		2, 0, 4, 0, 0xe8, 0x03, 0, 0,            /* ACL_USER 1000 r-- */
		4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,      /* ACL_GROUP_OBJ r-- */
		0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,   /* ACL_MASK r-- */
		0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,   /* ACL_OTHER r-- */
	};
	say(setxattr("f", "system.posix_acl_access", acl, sizeof acl, 0),
	    "setxattr(f, system.posix_acl_access, u:1000:r)");
	say(getxattr("f", "system.posix_acl_access", NULL, 0), "getxattr(f, system.posix_acl_access)");
	st("f");
	int fd = open("f", O_RDONLY);
	if (fd >= 0) {
		say(fsetxattr(fd, "user.fd", "1", 1, 0), "fsetxattr(f, user.fd)");
		say(fgetxattr(fd, "user.fd", buf, sizeof buf), "fgetxattr(f, user.fd)");
		close(fd);
	}
	/* ctime moves on a set and a removal, mtime does not */
	struct times t = snap("f");
	say(setxattr("f", "user.t", "1", 1, 0), "setxattr(f, user.t)");
	changed("f", &t, 0);
	t = snap("f");
	say(removexattr("f", "user.t"), "removexattr(f, user.t)");
	changed("f", &t, 0);
	/* user.* only on files and directories; the others any type */
	say(mkfifo("p", 0644), "mkfifo(p)");
	say(setxattr("p", "user.a", "x", 1, 0), "setxattr(p, user.a)");
	say(getxattr("p", "user.a", buf, sizeof buf), "getxattr(p, user.a)");
	say(setxattr("p", "trusted.a", "x", 1, 0), "setxattr(p, trusted.a)");
	say(mkdir("d", 0755), "mkdir(d)");
	say(setxattr("d", "user.d", "dir", 3, 0), "setxattr(d, user.d)");
	say(getxattr("d", "user.d", buf, sizeof buf), "getxattr(d, user.d)");
	if (geteuid() == 0)
		as_user(USER_A, GROUP_A, 0, NULL, u_xattrs, "xattrs of root's files");
	if (geteuid() == 0) {
		say(chmod(".", 0777), "chmod(., 0777)");
		as_user(USER_A, GROUP_A, 0, NULL, u_write_privs, "a write clears setuid, setgid");
	}
	/* a write drops a file capability (what setcap cap_net_raw+ep writes), through an
	 * O_APPEND descriptor too */
	static const unsigned char cap[20] = { 0, 0, 0, 2, 0, 0x20 };
	make_file("c", 0755, NULL);
	for (int k = 0; k < 2; k++) {
		say(setxattr("c", "security.capability", cap, sizeof cap, 0),
		    "setxattr(c, security.capability)");
		int cfd = open("c", O_WRONLY | (k ? O_APPEND : 0));
		if (cfd >= 0) {
			say(write(cfd, "x", 1), k ? "write O_APPEND" : "write");
			close(cfd);
		}
		say(getxattr("c", "security.capability", buf, sizeof buf),
		    "getxattr(c, security.capability) after the write");
	}
	/* removing what holds xattrs */
	say(unlink("p"), "unlink(p)");
	say(rmdir("d"), "rmdir(d)");
}

/* ---- POSIX ACLs (xattr form: u32 version 2, then u16 tag, u16 perm, u32 id) ---- */

static size_t acl_bytes(unsigned char *p, const unsigned (*ents)[3], int n)
{
	p[0] = 2, p[1] = p[2] = p[3] = 0;
	for (int i = 0; i < n; i++) {
		unsigned char *q = p + 4 + 8 * i;
		q[0] = (unsigned char)ents[i][0], q[1] = (unsigned char)(ents[i][0] >> 8);
		q[2] = (unsigned char)ents[i][1], q[3] = 0;
		for (int b = 0; b < 4; b++)
			q[4 + b] = (unsigned char)(ents[i][2] >> (8 * b));
	}
	return 4 + 8 * (size_t)n;
}

/* an ACL as "tag:id:perm,..." (ids of the owner entries as -1) */
static void show_acl(const char *path, const char *name)
{
	unsigned char v[512];
	ssize_t n = getxattr(path, name, v, sizeof v);
	if (n < 0) {
		printf("  %s %s: %s\n", path, name + 17, err_name(errno));
		return;
	}
	printf("  %s %s:", path, name + 17);
	for (ssize_t i = 4; i + 8 <= n; i += 8)
		printf(" %x:%d:%o", (unsigned)(v[i] | v[i + 1] << 8), (int)(v[i + 4] | v[i + 5] << 8 |
		       v[i + 6] << 16 | (unsigned)v[i + 7] << 24), (unsigned)v[i + 2]);
	printf("\n");
}

#define NOID 0xffffffffu
static void u_acl_read(void)
{
	char buf[16];
	int fd = say_fd(open("secret", O_RDONLY), "open(secret) named in its ACL");
	if (fd >= 0) {
		say(read(fd, buf, sizeof buf), "read(secret)");
		close(fd);
	}
	say_fd(open("secret", O_WRONLY), "open(secret, O_WRONLY) (the ACL says r)");
	say_fd(open("masked", O_RDONLY), "open(masked) after chmod 0604");
}

static void sc_acls(void)
{
	static unsigned char v[256];
	/* an access ACL: the mode's group bits become the mask; a named user may read */
	make_file("secret", 0600, "secret");
	const unsigned named[][3] = { { 1, 6, NOID }, { 2, 4, 1000 }, { 4, 0, NOID },
	                              { 0x10, 4, NOID }, { 0x20, 0, NOID } };
	say(setxattr("secret", "system.posix_acl_access", v, acl_bytes(v, named, 5), 0),
	    "setxattr(secret, u::rw,u:1000:r,g::-,m::r,o::-)");
	st("secret");
	show_acl("secret", "system.posix_acl_access");
	/* chmod changes the owner, mask and other entries */
	make_file("masked", 0644, "masked");
	const unsigned rw[][3] = { { 1, 6, NOID }, { 2, 6, 1000 }, { 4, 4, NOID },
	                           { 0x10, 6, NOID }, { 0x20, 4, NOID } };
	say(setxattr("masked", "system.posix_acl_access", v, acl_bytes(v, rw, 5), 0),
	    "setxattr(masked, u:1000:rw,m::rw)");
	say(chmod("masked", 0604), "chmod(masked, 0604)");
	st("masked");
	show_acl("masked", "system.posix_acl_access");
	if (geteuid() == 0)
		as_user(USER_A, GROUP_A, 0, NULL, u_acl_read, "reads through ACL entries");
	/* an ACL the mode says all of is stored as none: the mode changes */
	make_file("plain", 0644, NULL);
	const unsigned base[][3] = { { 1, 7, NOID }, { 4, 5, NOID }, { 0x20, 1, NOID } };
	say(setxattr("plain", "system.posix_acl_access", v, acl_bytes(v, base, 3), 0),
	    "setxattr(plain, u::rwx,g::r-x,o::--x)");
	st("plain");
	show_acl("plain", "system.posix_acl_access");
	say(removexattr("secret", "system.posix_acl_access"), "removexattr(secret, access ACL)");
	st("secret");
	/* a default ACL: what is made inside takes it, the umask does not count */
	say(mkdir("inherit", 0755), "mkdir(inherit)");
	const unsigned def[][3] = { { 1, 7, NOID }, { 2, 6, 1000 }, { 4, 5, NOID },
	                            { 0x10, 7, NOID }, { 0x20, 0, NOID } };
	say(setxattr("inherit", "system.posix_acl_default", v, acl_bytes(v, def, 5), 0),
	    "setxattr(inherit, default u::rwx,u:1000:rw,g::r-x,m::rwx,o::-)");
	say(setxattr("secret", "system.posix_acl_default", v, acl_bytes(v, def, 5), 0),
	    "setxattr(secret, default ACL) on a file");
	mode_t old = umask(077);
	make_file("inherit/f", 0666, NULL);
	say(mkdir("inherit/d", 0777), "mkdir(inherit/d, 0777) umask 077");
	say(mkfifo("inherit/p", 0640), "mkfifo(inherit/p, 0640)");
	say(symlink("f", "inherit/l"), "symlink(inherit/l)");
	umask(old);
	st("inherit/f");
	show_acl("inherit/f", "system.posix_acl_access");
	show_acl("inherit/f", "system.posix_acl_default");
	st("inherit/d");
	show_acl("inherit/d", "system.posix_acl_access");
	show_acl("inherit/d", "system.posix_acl_default");
	st("inherit/p");
	show_acl("inherit/p", "system.posix_acl_access");
	/* without a default ACL the umask counts */
	old = umask(027);
	make_file("nodef", 0666, NULL);
	umask(old);
	st("nodef");
	say(removexattr("inherit", "system.posix_acl_default"), "removexattr(inherit, default ACL)");
	old = umask(077);
	make_file("inherit/g", 0666, NULL);
	umask(old);
	st("inherit/g");
}

static void sc_modes(void)
{
	make_file("f", 0644, "data");
	struct times t = snap("f");
	say(chmod("f", 04755), "chmod(f, 04755)");
	st("f");
	changed("f", &t, 0);
	say(chmod("f", 07777), "chmod(f, 07777)");
	st("f");
	say(chmod("f", 0170777), "chmod(f, 0170777) type bits");
	st("f");
	say(chown("f", USER_A, GROUP_A), "chown(f, 1000, 1000) clears setuid, setgid (g+x)");
	st("f");
	say(chmod("f", 02755), "chmod(f, 02755)");
	say(chown("f", (uid_t)-1, GROUP_B), "chown(f, -1, 1001)");
	st("f");
	say(chmod("f", 02745), "chmod(f, 02745) setgid without g+x");
	say(chown("f", USER_B, (gid_t)-1), "chown(f, 1001, -1)");
	st("f");
	say(chmod("f", 04755), "chmod(f, 04755)");
	int fd = open("f", O_WRONLY);
	if (fd >= 0) {
		say(write(fd, "x", 1), "write by root");
		close(fd);
	}
	st("f");
	say(mkdir("d", 0755), "mkdir(d)");
	say(chmod("d", 03755), "chmod(d, 03755)");
	say(chown("d", USER_A, GROUP_A), "chown(d, 1000, 1000) a dir keeps its bits");
	st("d");
	say(symlink("f", "l"), "symlink(f, l)");
	say(lchown("l", USER_A, GROUP_A), "lchown(l, 1000, 1000)");
	st("l");
	st("f");
	say(fchmodat(AT_FDCWD, "l", 0600, AT_SYMLINK_NOFOLLOW), "fchmodat(l, AT_SYMLINK_NOFOLLOW)");
	say(chown("f", (uid_t)4294967294u, (gid_t)4294967294u), "chown(f, 4294967294, 4294967294)");
	st("f");
	say(mkfifo("p", 0600), "mkfifo(p)");
	say(chmod("p", 0666), "chmod(p, 0666)");
	st("p");
	/* a setgid directory gives its group to what is made in it, and setgid to subdirs */
	say(mkdir("sg", 0755), "mkdir(sg)");
	say(chown("sg", 0, OTHER_GID), "chown(sg, 0, 4000)");
	say(chmod("sg", 02775), "chmod(sg, 02775)");
	make_file("sg/f", 0644, NULL);
	st("sg/f");
	say(mkdir("sg/d", 0755), "mkdir(sg/d)");
	st("sg/d");
	say(mkdir("sg/d/e", 0700), "mkdir(sg/d/e)");
	st("sg/d/e");
	say(symlink("x", "sg/l"), "symlink(x, sg/l)");
	st("sg/l");
	say(mkfifo("sg/p", 0640), "mkfifo(sg/p)");
	st("sg/p");
	fd = open("sg/g", O_WRONLY | O_CREAT, 02755);
	say_fd(fd, "open(sg/g, O_CREAT, 02755) by root");
	if (fd >= 0)
		close(fd);
	st("sg/g");
	say(rename("f", "sg/moved"), "rename(f, sg/moved) keeps its group");
	st("sg/moved");
}

/* ---- as other users ---- */

/* Run fn in a child process as uid, gid and the supplementary groups (ngroups of them),
 * umask 022; its output goes before the parent's next line.  Only as root. */
static void as_user(uid_t uid, gid_t gid, int ngroups, const gid_t *groups, void (*fn)(void),
                    const char *what)
{
	printf(" as uid %u gid %u groups", (unsigned)uid, (unsigned)gid);
	for (int i = 0; i < ngroups; i++)
		printf(" %u", (unsigned)groups[i]);
	printf(": %s\n", what);
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		printf("  fork: %s\n", err_name(errno));
		return;
	}
	if (p == 0) {
		if (setgroups((size_t)ngroups, groups) != 0 || setresgid(gid, gid, gid) != 0 ||
		    setresuid(uid, uid, uid) != 0) {
			printf("  dropping privileges: %s\n", err_name(errno));
			fflush(stdout);
			_exit(1);
		}
		fn();
		fflush(stdout);
		_exit(0);
	}
	int status;
	while (waitpid(p, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		printf("  child ended badly (status %#x)\n", (unsigned)status);
}

static void u_owner(void)
{
	make_file("pub/mine", 0666, "mine");
	st("pub/mine");
	say(mkdir("pub/dir", 0777), "mkdir(pub/dir, 0777)");
	st("pub/dir");
	say(symlink("mine", "pub/link"), "symlink(mine, pub/link)");
	st("pub/link");
	say(mkfifo("pub/fifo", 0666), "mkfifo(pub/fifo, 0666)");
	st("pub/fifo");
	make_file("sg/ufile", 0664, NULL);
	st("sg/ufile");
	say(mkdir("sg/udir", 0775), "mkdir(sg/udir)");
	st("sg/udir");
	int fd = open("sg/usgid", O_WRONLY | O_CREAT, 02775);
	say_fd(fd, "open(sg/usgid, O_CREAT, 02775) not in the group");
	if (fd >= 0)
		close(fd);
	st("sg/usgid");
	say(mkdir("sg/udir/deeper", 0755), "mkdir(sg/udir/deeper)");
	st("sg/udir/deeper");
}

static void u_access(void)
{
	cat("secret");
	cat("public");
	say_fd(open("public", O_WRONLY), "open(public, O_WRONLY)");
	say_fd(open("public", O_RDONLY | O_TRUNC), "open(public, O_RDONLY|O_TRUNC)");
	say(truncate("public", 0), "truncate(public, 0)");
	say(access("public", R_OK), "access(public, R_OK)");
	say(access("public", W_OK), "access(public, W_OK)");
	say(access("public", X_OK), "access(public, X_OK)");
	say(access("script", X_OK), "access(script, X_OK)");
	cat("noexec/inside");
	struct stat s;
	say(stat("noexec/inside", &s), "stat(noexec/inside)");
	list("noexec");
	list("noread");
	say(stat("noread/inside", &s), "stat(noread/inside)");
	cat("noread/inside");
	say_fd(open("nowrite/new", O_WRONLY | O_CREAT, 0644), "open(nowrite/new, O_CREAT)");
	say(unlink("nowrite/inside"), "unlink(nowrite/inside)");
	say(rename("nowrite/inside", "pub/x"), "rename(nowrite/inside, pub/x)");
	say(mkdir("nowrite/d", 0755), "mkdir(nowrite/d)");
	say(chmod("public", 0666), "chmod(public) not the owner");
	say(chown("public", USER_A, (gid_t)-1), "chown(public, self) not the owner");
	struct timespec set[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	say(utimensat(AT_FDCWD, "public", set, 0), "utimensat(public, times) not the owner");
	say(utimensat(AT_FDCWD, "public", NULL, 0), "utimensat(public, NULL) not writable");
	say(utimensat(AT_FDCWD, "shared", NULL, 0), "utimensat(shared, NULL) writable by all");
	say(utimensat(AT_FDCWD, "shared", set, 0), "utimensat(shared, times) writable by all");
	say(link("secret", "pub/hard"), "link(secret, pub/hard) protected_hardlinks");
	say_fd(open("public", O_RDONLY | O_NOATIME), "open(public, O_NOATIME) not the owner");
	say(setxattr("public", "user.x", "1", 1, 0), "setxattr(public, user.x) not writable");
}

static void u_group(void)
{
	cat("grp/file");
	int fd = open("grp/file", O_WRONLY);
	say_fd(fd, "open(grp/file, O_WRONLY)");
	if (fd >= 0) {
		say(write(fd, "w", 1), "write 1");
		close(fd);
	}
	make_file("grp/new", 0644, NULL);
	st("grp/new");
	st("grp/file");
}

static void u_sticky_a(void)
{
	make_file("tmp/a", 0644, "a");
	make_file("tmp/a2", 0644, "a2");
	say(mkdir("tmp/ad", 0755), "mkdir(tmp/ad)");
}

static void u_sticky_b(void)
{
	say(unlink("tmp/a"), "unlink(tmp/a) of another user");
	say(rename("tmp/a", "tmp/b"), "rename(tmp/a, tmp/b) of another user");
	say(rmdir("tmp/ad"), "rmdir(tmp/ad) of another user");
	make_file("tmp/b", 0666, "b");
	say(rename("tmp/b", "tmp/a2"), "rename(tmp/b, tmp/a2) over another user's");
	int fd = open("tmp/a", O_WRONLY | O_CREAT, 0644);
	say_fd(fd, "open(tmp/a, O_CREAT) another user's 0644 file");
	if (fd >= 0)
		close(fd);
	say(unlink("tmp/b"), "unlink(tmp/b) own");
	list("tmp");
}

static void u_sticky_a_again(void)
{
	say(unlink("tmp/a"), "unlink(tmp/a) own");
	say(rename("tmp/a2", "tmp/a3"), "rename(tmp/a2, tmp/a3) own");
	list("tmp");
}

static void u_chown(void)
{
	make_file("pub/c", 04755, "c");
	say(chmod("pub/c", 04755), "chmod(pub/c, 04755)");
	st("pub/c");
	say(chown("pub/c", USER_B, (gid_t)-1), "chown(pub/c, 1001, -1) give away");
	say(chown("pub/c", USER_A, (gid_t)-1), "chown(pub/c, 1000, -1) to self");
	st("pub/c");
	say(chmod("pub/c", 04755), "chmod(pub/c, 04755)");
	say(chown("pub/c", (uid_t)-1, GROUP_SHARED), "chown(pub/c, -1, 3000) a group of mine");
	st("pub/c");
	say(chown("pub/c", (uid_t)-1, OTHER_GID), "chown(pub/c, -1, 4000) not a group of mine");
	st("pub/c");
	say(chmod("pub/c", 02755), "chmod(pub/c, 02755) group 3000 is mine");
	st("pub/c");
	say(chmod("theirs", 02755), "chmod(theirs, 02755) group 4000 not mine");
	st("theirs");
	say(chmod("theirs", 0644), "chmod(theirs, 0644)");
	st("theirs");
	say(mkdir("pub/cd", 0755), "mkdir(pub/cd)");
	say(chmod("pub/cd", 02755), "chmod(pub/cd, 02755)");
	say(chown("pub/cd", (uid_t)-1, GROUP_SHARED), "chown(pub/cd, -1, 3000)");
	st("pub/cd");
}

/* a group member writes into a setgid, group-executable file of another user: setgid goes */
static void u_write_sgid(void)
{
	int fd = open("sgfile", O_WRONLY);
	say_fd(fd, "open(sgfile, O_WRONLY)");
	if (fd >= 0) {
		say(write(fd, "w", 1), "write 1");
		close(fd);
	}
	st("sgfile");
	fd = open("sufile", O_WRONLY);
	say_fd(fd, "open(sufile, O_WRONLY)");
	if (fd >= 0) {
		say(ftruncate(fd, 0), "ftruncate(sufile, 0)");
		close(fd);
	}
	st("sufile");
}

static void sc_users(void)
{
	if (geteuid() != 0) {
		printf("not root: the scenarios as other users are left out\n");
		return;
	}
	const gid_t only_a[] = { GROUP_A }, a_shared[] = { GROUP_A, GROUP_SHARED };
	say(mkdir("pub", 0777), "mkdir(pub, 0777)");
	say(chmod("pub", 0777), "chmod(pub, 0777)");
	say(mkdir("sg", 0777), "mkdir(sg)");
	say(chown("sg", 0, OTHER_GID), "chown(sg, 0, 4000)");
	say(chmod("sg", 02777), "chmod(sg, 02777)");
	as_user(USER_A, GROUP_A, 1, only_a, u_owner, "ownership of what a user makes");

	fixture("secret", 0600, "secret");
	fixture("public", 0644, "public");
	fixture("shared", 0666, "shared");
	fixture("script", 0755, "#!/bin/sh\n");
	say(mkdir("noexec", 0755), "mkdir(noexec)");
	fixture("noexec/inside", 0644, "in");
	say(chmod("noexec", 0754), "chmod(noexec, 0754)");
	say(mkdir("noread", 0755), "mkdir(noread)");
	fixture("noread/inside", 0644, "in");
	say(chmod("noread", 0711), "chmod(noread, 0711)");
	say(mkdir("nowrite", 0755), "mkdir(nowrite)");
	fixture("nowrite/inside", 0666, "in");
	as_user(USER_A, GROUP_A, 1, only_a, u_access, "modes");

	say(mkdir("grp", 0770), "mkdir(grp, 0770)");
	say(chown("grp", 0, GROUP_SHARED), "chown(grp, 0, 3000)");
	say(chmod("grp", 0770), "chmod(grp, 0770)");
	fixture("grp/file", 0660, "group data");
	say(chown("grp/file", 0, GROUP_SHARED), "chown(grp/file, 0, 3000)");
	as_user(USER_A, GROUP_A, 1, only_a, u_group, "not in group 3000");
	as_user(USER_A, GROUP_A, 2, a_shared, u_group, "group 3000 as a supplementary group");
	as_user(USER_B, GROUP_SHARED, 0, NULL, u_group, "group 3000 as the primary group");

	say(mkdir("tmp", 0777), "mkdir(tmp)");
	say(chmod("tmp", 01777), "chmod(tmp, 01777)");
	const gid_t only_b[] = { GROUP_B };
	as_user(USER_A, GROUP_A, 1, only_a, u_sticky_a, "sticky: files of user a");
	as_user(USER_B, GROUP_B, 1, only_b, u_sticky_b, "sticky: user b");
	as_user(USER_A, GROUP_A, 1, only_a, u_sticky_a_again, "sticky: user a");
	make_file("tmp/rootfile", 0644, NULL);
	say(unlink("tmp/rootfile"), "unlink(tmp/rootfile) by root");
	st("tmp");

	fixture("theirs", 0644, NULL);
	say(chown("theirs", USER_A, OTHER_GID), "chown(theirs, 1000, 4000)");
	as_user(USER_A, GROUP_A, 2, a_shared, u_chown, "chown and chmod rules");

	fixture("sgfile", 0664, "s");
	say(chown("sgfile", USER_B, GROUP_SHARED), "chown(sgfile, 1001, 3000)");
	say(chmod("sgfile", 02774), "chmod(sgfile, 02774)");
	fixture("sufile", 0666, "s");
	say(chown("sufile", USER_B, GROUP_SHARED), "chown(sufile, 1001, 3000)");
	say(chmod("sufile", 04766), "chmod(sufile, 04766)");
	st("sgfile");
	st("sufile");
	as_user(USER_A, GROUP_A, 2, a_shared, u_write_sgid, "write and truncate clear setuid, setgid");
}

static const struct scenario {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "open_flags", sc_open_flags },
	{ "link_counts", sc_link_counts },
	{ "open_unlinked", sc_open_unlinked },
	{ "rename", sc_rename },
	{ "names", sc_names },
	{ "loops", sc_loops },
	{ "symlinks", sc_symlinks },
	{ "dirs", sc_dirs },
	{ "times", sc_times },
	{ "truncate", sc_truncate },
	{ "tmpfile", sc_tmpfile },
	{ "xattrs", sc_xattrs },
	{ "acls", sc_acls },
	{ "modes", sc_modes },
	{ "users", sc_users },
};

int main(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: conform DIR   (makes DIR/conform.d and runs the scenarios there)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(022);
	if (chdir(argv[1]) != 0 || mkdir("conform.d", 0755) != 0 || chmod("conform.d", 0755) != 0 ||
	    chdir("conform.d") != 0) {
		fprintf(stderr, "conform: %s/conform.d: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++) {
		printf("== %s\n", scenarios[i].name);
		if (mkdir(scenarios[i].name, 0755) != 0 || chdir(scenarios[i].name) != 0) {
			printf("  mkdir %s: %s\n", scenarios[i].name, err_name(errno));
			continue;
		}
		scenarios[i].run();
		if (chdir("..") != 0) {
			fprintf(stderr, "conform: chdir ..: %s\n", strerror(errno));
			return 1;
		}
	}
	return 0;
}
