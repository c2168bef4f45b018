/* arf_put: copy a local directory tree into the root of an ARF served by arfd, for the
 * arf grep differential test (tests/integration/arf_grep.sh).
 *
 *   arf_put ENDPOINT LOCALDIR
 *
 * Files are written through the data API (arf/arf_data.h).  Names starting with "frag" are
 * written one 4 KiB block at a time, even blocks first and then odd ones, so that every block
 * is an extent of its own and lines straddle extents; names starting with "sparse" skip
 * their all-zero blocks (holes) and get their size from a truncate; others in one write.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arc.h"
#include "arf_data.h"
#include "arf_ops.h"
#include "isa.h"

static struct arf_client *c;
static struct arf_data *d;

static int put_file(uint64_t dir, const char *local, const char *name)
{
	void *buf;
	size_t len;
	if (isa_read_file(local, &buf, &len) != 0) {
		fprintf(stderr, "arf_put: %s: %s\n", local, strerror(errno));
		return -1;
	}
	int64_t ino = arf_create(c, dir, name, 0644, 0, 0);
	if (ino < 0) {
		fprintf(stderr, "arf_put: create %s: %s\n", name, strerror((int)-ino));
		free(buf);
		return -1;
	}
	const uint8_t *p = buf;
	int64_t r = 0;
	if (!strncmp(name, "frag", 4)) {
		for (int pass = 0; pass < 2 && r >= 0; pass++)
			for (size_t off = (size_t)pass * 4096; off < len && r >= 0; off += 8192) {
				size_t n = len - off < 4096 ? len - off : 4096;
				r = arf_write(d, (uint64_t)ino, off, p + off, n);
			}
	} else if (!strncmp(name, "sparse", 6)) {
		static const uint8_t zero[4096];
		for (size_t off = 0; off < len && r >= 0; off += 4096) {
			size_t n = len - off < 4096 ? len - off : 4096;
			if (memcmp(p + off, zero, n))
				r = arf_write(d, (uint64_t)ino, off, p + off, n);
		}
		if (r >= 0)
			r = arf_truncate(d, (uint64_t)ino, len);
	} else if (len) {
		r = arf_write(d, (uint64_t)ino, 0, p, len);
	}
	free(buf);
	if (r < 0) {
		fprintf(stderr, "arf_put: write %s: %s (%s)\n", name, strerror((int)-r),
		        arf_data_errmsg(d));
		return -1;
	}
	return 0;
}

static int put_dir(uint64_t dir, const char *local)
{
	DIR *dp = opendir(local);
	if (!dp) {
		fprintf(stderr, "arf_put: %s: %s\n", local, strerror(errno));
		return -1;
	}
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", local, e->d_name);
		struct stat sb;
		if (lstat(path, &sb) != 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			int64_t sub = arf_mkdir(c, dir, e->d_name, 0755, 0, 0);
			rc = sub < 0 ? -1 : put_dir((uint64_t)sub, path);
		} else if (S_ISREG(sb.st_mode)) {
			rc = put_file(dir, path, e->d_name);
		}
	}
	closedir(dp);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: arf_put ENDPOINT LOCALDIR\n");
		return 2;
	}
	char err[512];
	struct arc_opts o = { .secret = getenv("ARC_SECRET") };
	struct arc *a = arc_connect(argv[1], &o, err, sizeof err);
	if (!a || !(c = arf_client_open(a, NULL, err, sizeof err)) ||
	    !(d = arf_data_open(a, NULL, err, sizeof err))) {
		fprintf(stderr, "arf_put: %s\n", err);
		if (c)
			arf_client_close(c);
		if (a)
			arc_close(a);
		return 1;
	}
	int rc = put_dir(1, argv[2]);
	arf_data_close(d);
	arf_client_close(c);
	arc_close(a);
	return rc ? 1 : 0;
}
