/* nfs_tree.c: the NFS client side of bench/grep for -r: copies a directory tree from an NFS
 * server through libnfs (no kernel NFS client on the benchmark machine) into a local
 * directory (a tmpfs), where GNU grep -r then runs.  Regular files and directories only, as
 * grep -r reads them (symlinks below the top are skipped by grep -r too).
 *
 *   nfs_tree nfs://HOST/EXPORT/DIR?version=4 DEST_DIR      (built by run.sh: cc -O2 -lnfs)
 *
 * Exit status 0, or 1 with a message naming the call and the path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nfsc/libnfs.h>

#define CHUNK (1u << 20)

static struct nfs_context *nfs;
static char *buf;
static unsigned long n_files, n_bytes;

static int copy_file(const char *rpath, const char *lpath)
{
	struct nfsfh *fh;
	int fd, n, rc = 0;

	if (nfs_open(nfs, rpath, O_RDONLY, &fh) < 0) {
		fprintf(stderr, "nfs_tree: nfs_open %s: %s\n", rpath, nfs_get_error(nfs));
		return -1;
	}
	fd = open(lpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "nfs_tree: open %s: %s\n", lpath, strerror(errno));
		nfs_close(nfs, fh);
		return -1;
	}
	while ((n = nfs_read(nfs, fh, CHUNK, buf)) > 0) {
		if (write(fd, buf, n) != n) {
			fprintf(stderr, "nfs_tree: write %s: %s\n", lpath, strerror(errno));
			rc = -1;
			break;
		}
		n_bytes += n;
	}
	if (n < 0) {
		fprintf(stderr, "nfs_tree: nfs_read %s: %s\n", rpath, nfs_get_error(nfs));
		rc = -1;
	}
	close(fd);
	nfs_close(nfs, fh);
	n_files++;
	return rc;
}

static int copy_dir(const char *rpath, const char *lpath)
{
	struct nfsdir *dir;
	struct nfsdirent *e;
	char *r, *l;
	int rc = 0;

	if (mkdir(lpath, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "nfs_tree: mkdir %s: %s\n", lpath, strerror(errno));
		return -1;
	}
	if (nfs_opendir(nfs, rpath, &dir) < 0) {
		fprintf(stderr, "nfs_tree: nfs_opendir %s: %s\n", rpath, nfs_get_error(nfs));
		return -1;
	}
	while (rc == 0 && (e = nfs_readdir(nfs, dir)) != NULL) {
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		if (asprintf(&r, "%s/%s", rpath, e->name) < 0 || asprintf(&l, "%s/%s", lpath, e->name) < 0) {
			rc = -1;
			break;
		}
		if (S_ISDIR(e->mode))
			rc = copy_dir(r, l);
		else if (S_ISREG(e->mode))
			rc = copy_file(r, l);
		free(r);
		free(l);
	}
	nfs_closedir(nfs, dir);
	return rc;
}

int main(int argc, char **argv)
{
	struct nfs_url *url;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: nfs_tree nfs://HOST/EXPORT/DIR?version=4 DEST_DIR\n");
		return 2;
	}
	nfs = nfs_init_context();
	buf = malloc(CHUNK);
	if (!nfs || !buf) {
		fprintf(stderr, "nfs_tree: out of memory\n");
		return 1;
	}
	url = nfs_parse_url_full(nfs, argv[1]);
	if (!url) {
		fprintf(stderr, "nfs_tree: %s: %s\n", argv[1], nfs_get_error(nfs));
		return 1;
	}
	if (nfs_mount(nfs, url->server, url->path) < 0) {
		fprintf(stderr, "nfs_tree: nfs_mount %s:%s: %s\n", url->server, url->path, nfs_get_error(nfs));
		return 1;
	}
	/* the url's file part is the directory below the export */
	rc = copy_dir(url->file && *url->file ? url->file : "/", argv[2]);
	fprintf(stderr, "nfs_tree: %lu files, %lu bytes\n", n_files, n_bytes);
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	free(buf);
	return rc < 0;
}
