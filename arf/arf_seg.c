/* arf_seg.c: an ARF segment as a client runs it (arf_seg.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_seg.h"
#include "isa.h"

#define RETRY_TOTAL_US (5u * 1000 * 1000)

static void *read_whole(const char *path, size_t *len)
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

int arf_seg_open(struct arf_seg *s, struct arc *a, const char *path, const char *env,
                 const char *fallback, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (!path && env)
		path = getenv(env);
	if (!path)
		path = fallback;
	s->a = a;
	errno = 0;
	s->bytes = read_whole(path, &s->len);
	if (!s->bytes) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOMEM));
		return -1;
	}
	int rc = arc_install(a, s->bytes, s->len, s->id);
	if (rc == -AR_EDENIED) {
		/* a client without the admin secret (arfd --admin-secret) runs the segment
		 * inline: arc_exec sends it by id and, when the server does not hold it, whole */
		isa_seg_id(s->bytes, s->len, s->id);
		rc = 0;
	}
	if (rc != 0) {
		snprintf(err, errlen, "installing %s: %s", path, arc_errmsg(a));
		arf_seg_close(s);
		return -1;
	}
	return 0;
}

void arf_seg_close(struct arf_seg *s)
{
	free(s->bytes);
	s->bytes = NULL;
}

/* Pause before attempt *attempt + 1; false when the time for retries is used up. */
static int retry_pause(unsigned *attempt, uint64_t *waited_us)
{
	uint64_t us = 20ull << (*attempt < 8 ? *attempt : 8);
	if (us > 5000)
		us = 5000;
	if (*waited_us + us > RETRY_TOTAL_US)
		return 0;
	struct timespec ts = { 0, (long)(us * 1000) };
	nanosleep(&ts, NULL);
	*waited_us += us;
	(*attempt)++;
	return 1;
}

/* (a segment that does not decode: no) */
bool arf_seg_exports(const struct arf_seg *s, const char *const *names)
{
	struct isa_seg *seg;
	char err[160];
	if (isa_seg_decode(s->bytes, s->len, &seg, err, sizeof err) != 0)
		return false;
	bool all = true;
	for (const char *const *n = names; *n && all; n++) {
		bool found = false;
		for (uint32_t i = 0; i < seg->n_exports && !found; i++)
			found = !strcmp(seg->exports[i].name, *n);
		all = found;
	}
	isa_seg_free(seg);
	return all;
}

int64_t arf_seg_run(struct arf_seg *s, struct arc_exec *x, const char *entry,
                    const int64_t *args, unsigned n, const void *bytes, size_t len)
{
	x->seg = s->bytes;
	x->seg_len = s->len;
	x->seg_id = s->id;
	x->entry = entry;
	x->args = args;
	x->n_args = n;
	x->argbytes = bytes;
	x->argbytes_len = len;
	int rc;
	unsigned attempt = 0;
	uint64_t waited = 0;
	/* EAGAIN: the inode was locked or the journal full; nothing changed (see the header) */
	while ((rc = arc_exec(s->a, x)) == 0 && x->value == -EAGAIN &&
	       retry_pause(&attempt, &waited)) {
		free(x->out);
		x->out = NULL;
	}
	if (rc != 0) {
		snprintf(s->msg, sizeof s->msg, "%s: %s", entry,
		         x->trapped ? x->trap.text : arc_errmsg(s->a));
		return -EIO;
	}
	return x->value;
}
