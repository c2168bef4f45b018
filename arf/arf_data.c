/* arf_data.c: client calls of the ARF data operations (arf/data.pna) through libarc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "arf_data.h"
#include "arf_retry.h"

struct arf_data {
	struct arc *a;
	void *seg;
	size_t seg_len;
	uint8_t id[AR_ID_LEN];         /* the segment's, from the install: no hashing per run */
	char msg[1200];
};

/* (the same small reader as arf_ops.c's, which is static there) */
static void *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

struct arf_data *arf_data_open(struct arc *a, const char *seg_path, char *err, size_t errlen)
{
	if (!seg_path)
		seg_path = getenv("ARF_DATA_SEG");
	if (!seg_path)
		seg_path = "build/arfseg/data.pno";
	struct arf_data *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->a = a;
	errno = 0;
	d->seg = load(seg_path, &d->seg_len);
	if (!d->seg) {
		snprintf(err, errlen, "%s: %s", seg_path, strerror(errno ? errno : ENOMEM));
		free(d);
		return NULL;
	}
	if (arc_install(a, d->seg, d->seg_len, d->id) != 0) {
		snprintf(err, errlen, "installing %s: %s", seg_path, arc_errmsg(a));
		arf_data_close(d);
		return NULL;
	}
	return d;
}

void arf_data_close(struct arf_data *d)
{
	if (!d)
		return;
	free(d->seg);
	free(d);
}

const char *arf_data_errmsg(struct arf_data *d)
{
	return d->msg;
}

/* Run entry; the value, or -EIO (message kept).  The output stays in x->out (caller frees). */
static int64_t run(struct arf_data *d, struct arc_exec *x, const char *entry,
                   const int64_t *args, unsigned n, const void *bytes, size_t len)
{
	x->seg = d->seg;
	x->seg_len = d->seg_len;
	x->seg_id = d->id;
	x->entry = entry;
	x->args = args;
	x->n_args = n;
	x->argbytes = bytes;
	x->argbytes_len = len;
	int rc;
	unsigned attempt = 0;
	uint64_t waited = 0;
	/* EAGAIN: the inode was locked or the journal full; nothing changed (arf_retry.h) */
	while ((rc = arc_exec(d->a, x)) == 0 && x->value == -EAGAIN &&
	       arf_retry_pause(&attempt, &waited)) {
		free(x->out);
		x->out = NULL;
	}
	if (rc != 0) {
		if (x->trapped)
			snprintf(d->msg, sizeof d->msg, "%s: %s", entry, x->trap.text);
		else
			snprintf(d->msg, sizeof d->msg, "%s: %s", entry, arc_errmsg(d->a));
		return -EIO;
	}
	return x->value;
}

int64_t arf_write(struct arf_data *d, uint64_t ino, uint64_t off, const void *buf, size_t len)
{
	return arf_write_gen(d, ino, 0, off, buf, len);
}

int64_t arf_write_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off,
                      const void *buf, size_t len)
{
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
			snprintf(d->msg, sizeof d->msg, "write: %lld of %zu bytes", (long long)v, n);
			return -EIO;
		}
		done += (size_t)v;   /* short: the run filled one hole; send the rest again */
	}
	return (int64_t)done;
}

int64_t arf_read(struct arf_data *d, uint64_t ino, uint64_t off, void *buf, size_t len)
{
	return arf_read_gen(d, ino, 0, off, buf, len);
}

int64_t arf_read_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t off, void *buf,
                     size_t len)
{
	char *p = buf;
	size_t done = 0;
	while (done < len) {
		size_t n = len - done < ARF_DATA_CHUNK ? len - done : ARF_DATA_CHUNK;
		int64_t a[4] = { (int64_t)ino, (int64_t)(off + done), (int64_t)n, (int64_t)gen };
		struct arc_exec x = { .out_max = n };
		int64_t v = run(d, &x, "read", a, 4, NULL, 0);
		if (v >= 0 && ((uint64_t)v > n || x.out_len != (uint64_t)v)) {
			snprintf(d->msg, sizeof d->msg, "read: %lld bytes, %llu of output",
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

int arf_truncate(struct arf_data *d, uint64_t ino, uint64_t size)
{
	return arf_truncate_gen(d, ino, 0, size);
}

int arf_truncate_gen(struct arf_data *d, uint64_t ino, uint64_t gen, uint64_t size)
{
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

int arf_fsync(struct arf_data *d, uint64_t ino)
{
	return arf_fsync_gen(d, ino, 0);
}

int arf_fsync_gen(struct arf_data *d, uint64_t ino, uint64_t gen)
{
	int64_t a[2] = { (int64_t)ino, (int64_t)gen };
	struct arc_exec x = { 0 };
	int64_t v = run(d, &x, "fsync", a, 2, NULL, 0);
	free(x.out);
	return (int)v;
}
