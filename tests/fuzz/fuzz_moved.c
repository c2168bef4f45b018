/* fuzz_moved.c: libFuzzer target for ar_moved_target, the check a client makes of the
 * endpoint a MOVED reply names before it connects there (docs/arf.md, "Moving an image").
 * The input is the reply's message, as ar_rep_parse hands it over (cut at AR_MAX_MSG bytes
 * and at a NUL).  Whatever it accepts must be a plain endpoint: a scheme of ours, a host of
 * letters, digits, '.', '-', '_', a port 1..65535 without a leading zero, at most
 * AR_MAX_ENDPOINT bytes; anything else aborts.  Build and run with `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ar_proto.h"

static int host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[AR_MAX_MSG + 1];
	size_t n = size < AR_MAX_MSG ? size : AR_MAX_MSG;
	memcpy(msg, data, n);
	msg[n] = '\0';
	char why[64];
	if (ar_moved_target(msg, why, sizeof why) != 0)
		return 0;
	size_t len = strlen(msg);
	const char *colon1 = strchr(msg, ':'), *colon2 = strrchr(msg, ':');
	if (len > AR_MAX_ENDPOINT || !colon1 || colon1 == colon2)
		abort();
	size_t sl = (size_t)(colon1 - msg);
	if (!((sl == 3 && (!strncmp(msg, "tcp", 3) || !strncmp(msg, "tls", 3) ||
	                   !strncmp(msg, "udp", 3))) || (sl == 4 && !strncmp(msg, "rdma", 4))))
		abort();
	if (colon2 == colon1 + 1)
		abort();                   /* no host */
	for (const char *q = colon1 + 1; q < colon2; q++)
		if (!host_char(*q))
			abort();
	const char *port = colon2 + 1;
	if (!*port || *port == '0' || strlen(port) > 5)
		abort();
	long v = 0;
	for (const char *q = port; *q; q++) {
		if (*q < '0' || *q > '9')
			abort();
		v = v * 10 + (*q - '0');
	}
	if (v < 1 || v > 65535)
		abort();
	return 0;
}
