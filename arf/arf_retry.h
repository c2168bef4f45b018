/* arf_retry.h: what a client does when an operation answers EAGAIN.
 *
 * The bytecode operations never wait long for an inode lock or a journal slot: after a
 * bounded spin they give up with -EAGAIN before changing anything (docs/arf.md, Crash
 * consistency), so that a lock left by a trapped run cannot hang the server's workers.  A
 * concurrent operation on the same inode (two writers of one file, a 1 MiB write holding it)
 * is the usual cause and is over in microseconds to milliseconds, so the client runs the
 * operation again with a growing pause, for up to five seconds, before it reports EAGAIN.
 */
#ifndef ARF_RETRY_H
#define ARF_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define ARF_RETRY_TOTAL_US (5u * 1000 * 1000)

/* Pause before attempt number *attempt + 1 (20 us doubling to 5 ms); false when the time
 * for retries is used up. */
static inline bool arf_retry_pause(unsigned *attempt, uint64_t *waited_us)
{
	uint64_t us = 20ull << (*attempt < 8 ? *attempt : 8);
	if (us > 5000)
		us = 5000;
	if (*waited_us + us > ARF_RETRY_TOTAL_US)
		return false;
	struct timespec ts = { 0, (long)(us * 1000) };
	nanosleep(&ts, NULL);
	*waited_us += us;
	(*attempt)++;
	return true;
}

#endif
