/* arf_data.c: client calls of the ARF data operations (arf/data.pna) through libarc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc.h"
#include "arf_data.h"
#include "arf_seg.h"

struct arf_data {
	struct arf_seg s;              /* data.pno */
};

struct arf_data *arf_data_open(struct arc *a, const char *seg_path, char *err, size_t errlen)
{
	struct arf_data *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (arf_seg_open(&d->s, a, seg_path, "ARF_DATA_SEG", "build/arfseg/data.pno", err,
	                 errlen) != 0) {
		free(d);
		return NULL;
	}
	return d;
}

void arf_data_close(struct arf_data *d)
{
	if (!d)
		return;
	arf_seg_close(&d->s);
	free(d);
}

const char *arf_data_errmsg(struct arf_data *d)
{
	return d->s.msg;
}

static int64_t run(struct arf_data *d, struct arc_exec *x, const char *entry,
                   const int64_t *args, unsigned n, const void *bytes, size_t len)
{
	return arf_seg_run(&d->s, x, entry, args, n, bytes, len);
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
			snprintf(d->s.msg, sizeof d->s.msg, "write: %lld of %zu bytes", (long long)v, n);
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
			snprintf(d->s.msg, sizeof d->s.msg, "read: %lld bytes, %llu of output",
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
