/* arf_seg.h: one ARF segment as a client runs it (libarf's own; arf_ops.c, arf_data.c and
 * the mount's statfs use it): loaded from a file, installed once, run by id, with the
 * client's answer to EAGAIN.
 *
 * The bytecode operations never wait long for an inode lock or a journal slot: after a
 * bounded spin they give up with -EAGAIN before changing anything (docs/arf.md, Crash
 * consistency), so that a lock left by a trapped run cannot hang the server's workers.  A
 * concurrent operation on the same inode (two writers of one file, a 1 MiB write holding it)
 * is the usual cause and is over in microseconds to milliseconds, so arf_seg_run runs the
 * operation again with a growing pause (20 us doubling to 5 ms), for up to five seconds,
 * before it reports EAGAIN.
 */
#ifndef ARF_SEG_H
#define ARF_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arc.h"

struct arf_seg {
	struct arc *a;
	void *bytes;
	size_t len;
	uint8_t id[AR_ID_LEN];         /* from the install: no hashing per run */
	char msg[1200];                /* the last failure's text */
};

/* Load path (NULL: $env, else build/arfseg/NAME given as fallback) and install it: 0, or -1
 * with a message in err. */
int arf_seg_open(struct arf_seg *s, struct arc *a, const char *path, const char *env,
                 const char *fallback, char *err, size_t errlen);
void arf_seg_close(struct arf_seg *s);

/* Whether the segment exports every name of the NULL-ended list (a newer entry an older
 * segment file lacks: the caller runs the older form). */
bool arf_seg_exports(const struct arf_seg *s, const char *const *names);

/* Run entry with integer args and argument bytes: the run's value, or -EIO with the reason
 * in s->msg (a transport failure or a trap).  The output stays in x->out (the caller frees
 * it). */
int64_t arf_seg_run(struct arf_seg *s, struct arc_exec *x, const char *entry,
                    const int64_t *args, unsigned n, const void *bytes, size_t len);

#endif
